/* exporter.h - the node agent's exporter: /metrics (the article's metric names with its
 * gpu-monitor-config's labels, per GPU, MIG instance and pod; DCGM names as an option),
 * /healthz and /status (per GPU: health, MIG mode and instances with their UUIDs), rendered
 * from copies of the GPU sampler's view (sampler.h), the pod tracker's pods (pods.h) and the
 * node reconciler's cordon (reconciler.h).
 *
 * A pod's utilization and memory used are its own: a pod holding a whole GPU reads the GPU's;
 * a pod on a MIG instance reads the instance's (no utilization series where the backend does
 * not measure it: A100, A30); pods sharing a GPU (time-slicing, MPS, fractions) read the sum of
 * their processes', whose PIDs the backend reports and the cgroup under proc_root names the
 * pod of (procpod.h, matched to the pods listed by UID).
 *
 * A GPU not measured yet (or whose last reading failed) has no series at all: never a 0 or a
 * healthy 1 before it is read. gpusched_agent_device_corrections_total counts the
 * gpusched.io/devices annotations the pod tracker corrected (pods.h).
 *
 * The exporter owns its scrape counter (under its lock) and nothing else; it is called on the
 * HTTP server's threads (kube/httpd.h) and is thread-safe. */
#ifndef GS_AGENT_EXPORTER_H
#define GS_AGENT_EXPORTER_H

#include "../formats/monitorcfg.h"
#include "../kube/httpd.h"

#include <stdbool.h>

struct gs_exporter_opts {
    const char *node;                    /* the hostname label; NULL: "" */
    const struct gs_monitor_config *mon; /* metrics shown (none listed: all) and extra labels */
    bool dcgm_names;
    int replicas; /* of each whole GPU: its pods share it when > 1 */
};

struct gs_exporter;
struct gs_sampler;
struct gs_pods;
struct gs_reconciler;
struct gs_buf;
struct gs_error;

/* An exporter of s, pods (may be NULL: no pods) and r (may be NULL: no cordon gauge). The
 * opts' mon must outlive it. NULL when out of memory. */
struct gs_exporter *gs_exporter_new(const struct gs_exporter_opts *o, struct gs_sampler *s,
                                    struct gs_pods *pods, struct gs_reconciler *r);
void gs_exporter_free(struct gs_exporter *e);
/* The /metrics page appended to out: 0, GS_ENOMEM, or the Prometheus writer's error. */
int gs_exporter_render(struct gs_exporter *e, struct gs_buf *out);
/* The HTTP handler (cls: the exporter) for kube/httpd.h. */
int gs_exporter_http(void *cls, const struct gs_httpd_request *req, struct gs_httpd_reply *rep);
/* Read the article's gpu-monitor-config (gpu-metrics.json, or the ConfigMap carrying it:
 * metrics by the article's or DCGM's names, scrape_interval, labels) into *out. 0, or GS_EINVAL
 * with file:line and the field (*out untouched). */
int gs_exporter_monitor_config(const char *path, struct gs_monitor_config *out,
                               struct gs_error *err);

#endif
