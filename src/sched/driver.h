/* driver.h - the live scheduler's scheduling cycle: from a snapshot of the store and the
 * tenancy objects, place the pending pods of ours in order (priority, owed before borrowed,
 * queue priority, dominant share, arrival), gangs whole, with Kubernetes constraints, taints
 * and bound volumes; preempt and nominate when a pod does not fit; queue the binds, Events and
 * status patches on the binder; say why each pending pod waits (/debug/pending, explain).
 *
 * Thread-safety: one cycle at a time, on the daemon's main thread (or explain's); it locks the
 * store, the metrics and the tenancy objects as it reads and writes them. In a dry daemon
 * (s->dry, explain) it decides and reports but writes nothing. */
#ifndef GS_SCHED_DRIVER_H
#define GS_SCHED_DRIVER_H

struct gs_engine;
struct gs_sched;

/* Run one cycle. *engine (sized for *engine_nodes nodes) is reused across cycles and replaced
 * when the cluster outgrows it; the caller frees it. The verdicts replace s->pending_report.
 * Returns 0 or GS_ENOMEM. */
int gs__driver_cycle(struct gs_sched *s, struct gs_engine **engine, int *engine_nodes);

#endif
