/* cycleout.h - a scheduling cycle's output: what core/cycle.h decided, applied. Binds are
 * assumed in the store and queued on the binder (with the pods' DRA claim writes), victims are
 * evicted, nominations written, re-carves written to the Node's gpusched.io/mig-desired and
 * remembered until the watch shows them (the recarve notes), and every pending pod looked at
 * gets a verdict: an Event, the PodScheduled condition and a backoff when it waits, a line in
 * the pending report (sched/metrics.h) always. The journal records binds' preemptions and
 * re-carves; the metrics count preemptions and pending pods.
 *
 * A dry output (explain) decides and reports but writes nothing and changes no store state.
 *
 * Ownership: struct gs__cycleout owns the recarve notes and the last dry cycle's decision
 * lines. Threads: the thread that runs the cycles only. */
#ifndef GS_SCHED_CYCLEOUT_H
#define GS_SCHED_CYCLEOUT_H

#include <jansson.h>

#include <stdbool.h>

struct gs__cycle;
struct gs__cycleout;
struct gs_binder;
struct gs_claims;
struct gs_cycle_out;
struct gs_journal;
struct gs_metrics;
struct gs_snapshot;
struct gs_store;

/* What the output writes to (none owned; binder NULL when dry). */
struct gs__cycleout_deps {
    struct gs_store *store;
    struct gs_binder *binder;
    struct gs_metrics *metrics;
    struct gs_journal *journal;
    struct gs_claims *claims; /* NULL: no DRA feed */
    bool dry;
    double recarve_hold_s;
    double volume_bind_timeout_s; /* a bind's wait for its claims (sched/volbind.h) */
};

/* NULL without memory. */
struct gs__cycleout *gs__cycleout_new(const struct gs__cycleout_deps *d);
void gs__cycleout_free(struct gs__cycleout *o);

/* The recarve notes on a cycle's fresh snapshot (gs__cycle_take): a GPU changed lately keeps its
 * change time (hysteresis); one whose change the Node does not show yet is busy. Old notes are
 * dropped. */
void gs__cycleout_mark(struct gs__cycleout *o, struct gs__cycle *cy);
/* Post the Events the store queued about nodes (taken; NULL: none). */
void gs__cycleout_node_events(struct gs__cycleout *o, json_t *events);
/* Apply one cycle: cy's waits and stale claim writes, then out's decisions, then the gauges and
 * the pending report. Returns 0 or GS_ENOMEM. */
int gs__cycleout_apply(struct gs__cycleout *o, struct gs__cycle *cy,
                       const struct gs_cycle_out *out);
/* Dry: the last cycle's decisions as formats/decision.h lines (a new reference; NULL before
 * one). */
json_t *gs__cycleout_decision_lines(struct gs__cycleout *o);

#endif
