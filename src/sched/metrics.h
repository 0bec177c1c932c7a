/* metrics.h - what the scheduler daemon counts about itself, and the Prometheus text page
 * /metrics serves: scheduling attempts by result, a histogram of the time to place and bind
 * a pod, pending pods, GPUs allocatable and allocated per model (accounting units), the
 * leader flag, preemptions, their victims and the GPU-hours lost, and lists of tenancy
 * objects. The counters live in struct gs_sched (sched/sched_internal.h) under its mmu.
 *
 * Thread-safety: every function locks s->mmu itself; call them from any thread, never with
 * mmu held. */
#ifndef GS_SCHED_METRICS_H
#define GS_SCHED_METRICS_H

#define GS_METRICS_BUCKETS 9 /* histogram buckets of gpusched_scheduling_duration_seconds */

struct gs_buf;
struct gs_cluster;
struct gs_sched;

/* Count one attempt that took dt seconds; result 0 scheduled, 1 unschedulable, 2 error. */
void gs__metrics_record_latency(struct gs_sched *s, double dt, int result);
/* Set the pending pods gauge and the GPUs allocatable and allocated per model from c. */
void gs__metrics_update_gauges(struct gs_sched *s, const struct gs_cluster *c, int pending);
/* Append the Prometheus text exposition (formats/promtext.h, Content-Type
 * GS_PROMTEXT_CONTENT_TYPE) of every metric to b. Returns 0, or GS_ENOMEM when an append
 * failed (b then holds a page cut short, which is no answer). */
int gs__metrics_write(struct gs_sched *s, struct gs_buf *b);

#endif
