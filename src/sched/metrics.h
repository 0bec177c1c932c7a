/* metrics.h - what the scheduler daemon counts about itself, and the Prometheus text page
 * /metrics serves: scheduling attempts by result, a histogram of the time to place and bind
 * a pod, scheduling cycles, pending pods (and by the reason of the last verdict on each), GPUs
 * allocatable and allocated per model (accounting units), the leader flag, preemptions, their
 * victims and the GPU-hours lost, and lists of tenancy objects. It also keeps the last cycle's
 * verdict per pending pod (the pending report /debug/pending serves).
 *
 * Ownership: struct gs_metrics owns its counters and the report, under its own lock.
 * Thread-safety: every function is thread-safe and takes only that lock. */
#ifndef GS_SCHED_METRICS_H
#define GS_SCHED_METRICS_H

#include "../kube/httpd.h"

#include <jansson.h>

#include <stdint.h>

#define GS_METRICS_BUCKETS 9 /* histogram buckets of gpusched_scheduling_duration_seconds */
#define GS_REPORT_KEY_MAX  (64 + 256 + 8) /* "namespace/name" */

struct gs_buf;
struct gs_cluster;
struct gs_metrics;

/* New counters, all zero; leader (read without a lock, base/flag.h) says whether this replica
 * holds the lease. NULL without memory. */
struct gs_metrics *gs__metrics_new(const volatile int *leader);
void gs__metrics_free(struct gs_metrics *m);

/* Count one attempt that took dt seconds; result 0 scheduled, 1 unschedulable, 2 error. */
void gs__metrics_record_latency(struct gs_metrics *m, double dt, int result);
/* Count one scheduling cycle. */
void gs__metrics_count_cycle(struct gs_metrics *m);
/* Set the pending pods gauge and the GPUs allocatable and allocated per model from c. */
void gs__metrics_update_gauges(struct gs_metrics *m, const struct gs_cluster *c, int pending);
/* Count one preemption: its victims and the GPU-hours they lose. */
void gs__metrics_count_preemption(struct gs_metrics *m, int victims, double gpu_hours);
/* Set the count of tenancy lists. */
void gs__metrics_set_policy_lists(struct gs_metrics *m, uint64_t n);

/* The pending report: [{namespace, pod, queue, priority, reason, message}]. Publish a cycle's
 * (taken): the pods it did not look at (in backoff) keep their last verdict, those of
 * pending[0..n) ("namespace/name", in order) that the last report had. */
void gs__metrics_publish_report(struct gs_metrics *m, json_t *report, const char *const *pending,
                                int npending);
/* Replace the report (taken) as it is. */
void gs__metrics_set_report(struct gs_metrics *m, json_t *report);
/* A copy of the report ([] before the first; NULL without memory). */
json_t *gs__metrics_report(struct gs_metrics *m);
/* Answer GET /debug/pending: the report, indented ([] before the first). */
int gs__metrics_reply_pending(struct gs_metrics *m, struct gs_httpd_reply *rep);

/* Append the Prometheus text exposition (formats/promtext.h, Content-Type
 * GS_PROMTEXT_CONTENT_TYPE) of every metric to b. Returns 0, or GS_ENOMEM when an append
 * failed (b then holds a page cut short, which is no answer). */
int gs__metrics_write(struct gs_metrics *m, struct gs_buf *b);

#endif
