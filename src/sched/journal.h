/* journal.h - the scheduler daemon's recent events for its dashboard (/ui/state): a bounded
 * ring of the last GS_JOURNAL_MAX binds, preemptions and re-carvings, each with a sequence
 * number that grows by one per event, the wall-clock time, and its own fields (JSON).
 *
 * Invariants: at most GS_JOURNAL_MAX entries; the oldest gives way; seq never repeats.
 * Thread-safety: every function takes the journal's own lock (the binder's threads and the
 * cycle add, the HTTP threads read); callers may hold other daemon locks (it takes none). */
#ifndef GS_SCHED_JOURNAL_H
#define GS_SCHED_JOURNAL_H

#include <jansson.h>
#include <pthread.h>

#include <stdint.h>

#define GS_JOURNAL_MAX 64

struct gs_journal {
    pthread_mutex_t mu;
    json_t *ring[GS_JOURNAL_MAX]; /* ring[(seq - 1) % MAX] for the last entries */
    uint64_t seq;                 /* entries ever added */
};

void gs__journal_init(struct gs_journal *j);
void gs__journal_release(struct gs_journal *j);

/* Add an event: fields (taken, a JSON object) gains "seq", "time" (Unix seconds) and
 * "kind" (bind, preempt, recarve). A NULL fields (its allocation failed) is dropped. */
void gs__journal_add(struct gs_journal *j, const char *kind, json_t *fields);

/* The entries, oldest first (a new array of copies: the caller may use it without the
 * lock), or NULL without memory. */
json_t *gs__journal_json(struct gs_journal *j);

#endif
