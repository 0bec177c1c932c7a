/* events.h - Events aggregated as kube-scheduler's recorder aggregates them (client-go
 * tools/events, its event broadcaster): one events.k8s.io/v1 Event per kind of occurrence, and
 * each repeat of it an EventSeries on that same Event (series.count, 2 at the first repeat, and
 * series.lastObservedTime) patched onto it rather than a new Event. A series not observed for
 * GS_EVENTS_FINISH_S (client-go's 6 minutes) is finished: its next occurrence starts a new Event.
 *
 * The kind of an occurrence (client-go's isomorphic key): the object it regards (kind,
 * namespace, name, UID), its type, reason, action and note, and the reporting controller and
 * instance. client-go keys on the regarding object's resourceVersion instead of the note;
 * kube-scheduler's status write changes that version whenever its message changes, so its
 * Events part where the note changes, as here (the API server keeps an Event's note immutable).
 *
 * Memory is bounded: at most max entries (the one observed longest ago gives way, its next
 * occurrence starting a new Event); finished entries are dropped, and so are those regarding
 * pods no longer pending (gs__events_forget, gs__events_retain). An entry holds a 64-bit hash
 * of its key, not the key (two kinds sharing a hash would share a series: improbable at this
 * size), the Event's name and first time.
 *
 * Ownership: struct gs_events owns its entries, under its own lock; every function is
 * thread-safe and takes only that lock. No I/O: the caller writes what gs__events_observe says
 * (sched/binder.c, on its background lane). */
#ifndef GS_SCHED_EVENTS_H
#define GS_SCHED_EVENTS_H

#include <jansson.h>

#define GS_EVENTS_FINISH_S 360.0 /* a series unobserved this long is finished */
#define GS_EVENTS_MAX      16384 /* entries a scheduler keeps */

/* What to write for one occurrence. */
enum gs_events_write {
    GS_EVENTS_CREATE = 0, /* POST the Event as it is: a new series' first */
    GS_EVENTS_SERIES,     /* PATCH gs__events_series_patch onto the Event it names; POST it whole
                           * if the API server no longer has it (404), as client-go does */
};

struct gs_events;

/* At most max entries (<= 0: GS_EVENTS_MAX). NULL without memory. */
struct gs_events *gs__events_new(int max);
/* NULL is a no-op. */
void gs__events_free(struct gs_events *e);

/* One occurrence, observed at now (Unix seconds): ev (borrowed, changed in place) an
 * events.k8s.io/v1 Event as formats/kubeobj.h writes it (metadata.name, eventTime, regarding,
 * type, reason, action, note, reportingController, reportingInstance). A first occurrence is
 * left as it is and GS_EVENTS_CREATE returned; a repeat gets the series' metadata.name and
 * eventTime and series {count, lastObservedTime} and GS_EVENTS_SERIES is returned. Also finishes
 * the series unobserved for GS_EVENTS_FINISH_S. Returns GS_EVENTS_CREATE when an Event lacks
 * what the key needs or memory runs out (the Event is then written alone). */
enum gs_events_write gs__events_observe(struct gs_events *e, json_t *ev, double now);
/* The strategic-merge patch of a repeat: {"series": {count, lastObservedTime}} (new
 * reference; NULL without memory or series). */
json_t *gs__events_series_patch(const json_t *ev);

/* Drop the entries regarding the pod with this UID (it was bound, or is gone). */
void gs__events_forget(struct gs_events *e, const char *uid);
/* Keep, of the entries regarding pods, those regarding one of uids[0..n) (the pods still
 * pending); entries regarding other kinds are left to finish. Returns 0 or GS_ENOMEM (nothing
 * dropped). */
int gs__events_retain(struct gs_events *e, const char *const *uids, int n);
/* The entries held. */
int gs__events_count(struct gs_events *e);

#endif
