/* uistate.h - the scheduler daemon's dashboard: the JSON document GET /ui/state serves (its
 * fields are listed in sched/endpoints.h) and the page GET /ui serves, which draws it.
 *
 * The document is built from one snapshot of the store (sched/snapshot.h: nodes and pods
 * copied under the store's lock, the engine's cluster rebuilt from them), the tenancy objects
 * copied under their lock with the queues' usage computed as a scheduling cycle computes it
 * (sched/tenancy.h), the last cycle's verdicts (sched/metrics.h) and the journal
 * (sched/journal.h). It writes nothing.
 *
 * Thread-safety: gs__uistate_build may run on many threads at once, beside the scheduling
 * cycle; it takes each lock only while it copies. */
#ifndef GS_SCHED_UISTATE_H
#define GS_SCHED_UISTATE_H

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>

#define GS_UISTATE_VERSION 1

struct gs_journal;
struct gs_metrics;
struct gs_policy_feed;
struct gs_store;

/* What the document is built from (none owned). */
struct gs_uistate_src {
    struct gs_store *store;
    struct gs_policy_feed *policy; /* NULL: no queues */
    struct gs_metrics *metrics;    /* the last cycle's verdicts */
    struct gs_journal *journal;
    const char *scheduler_name;
    bool extender, dynamic_mig;
    const volatile int *leader; /* base/flag.h */
};

/* Build the document (a new reference in *out). Returns 0 or GS_ENOMEM. */
int gs__uistate_build(const struct gs_uistate_src *s, json_t **out);

/* The dashboard page: one self-contained HTML document (inline CSS and script, no external
 * asset), generated at build time from src/sched/ui/index.html (scripts/embed.cmake). */
extern const char gs__ui_page[];
extern const size_t gs__ui_page_len;

#endif
