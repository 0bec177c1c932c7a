/* driver.h - the live scheduler's scheduling cycle: from a snapshot of the store and the
 * tenancy objects (the cycle input, sched/cyclein.h), place the pending pods of ours in order
 * (priority, owed before borrowed, queue priority, dominant share, arrival), gangs whole, with
 * Kubernetes constraints, taints and bound volumes, DRA claims; preempt, re-carve and
 * nominate when a pod does not fit (core/cycle.h); apply the decisions (the cycle output,
 * sched/cycleout.h): binds, Events and status patches on the binder, the verdict on each
 * pending pod in the pending report (/debug/pending, explain).
 *
 * Ownership: the driver owns the engine it reuses across cycles and the cycle output (with its
 * recarve notes). Thread-safety: one cycle at a time, on the daemon's main thread (or
 * explain's); the components it reads and writes take their own locks. A dry driver
 * (explain) decides and reports but writes nothing. */
#ifndef GS_SCHED_DRIVER_H
#define GS_SCHED_DRIVER_H

#include <jansson.h>

#include <stdbool.h>

struct gs_binder;
struct gs_claims;
struct gs_driver;
struct gs_journal;
struct gs_metrics;
struct gs_policy_feed;
struct gs_store;
struct gs_topo_levels;
struct gs_volassume;

/* What the cycles read and write (none owned; all outlive the driver). */
struct gs_driver_deps {
    struct gs_store *store;
    struct gs_policy_feed *policy;
    struct gs_claims *claims;   /* NULL: no DRA feed */
    struct gs_binder *binder;   /* NULL when dry */
    struct gs_metrics *metrics; /* the pending report goes there */
    struct gs_journal *journal;
    const char *scheduler_name, *policy_name;
    bool dry;
    bool dynamic_mig;
    double recarve_hold_s, min_runtime_s;
    const struct gs_topo_levels *topo_flag; /* --topology-levels (NULL: none) */
    struct gs_volassume *vols;              /* sched/volbind.h (NULL: none kept) */
    double volume_bind_timeout_s;
};

/* NULL without memory. */
struct gs_driver *gs__driver_new(const struct gs_driver_deps *d);
void gs__driver_free(struct gs_driver *dr);
/* Run one cycle. Returns 0 or GS_ENOMEM. */
int gs__driver_cycle(struct gs_driver *dr);
/* Dry: the last cycle's decisions as formats/decision.h lines (new reference; NULL before a
 * cycle). */
json_t *gs__driver_decision_lines(struct gs_driver *dr);

#endif
