/* podmetric.h - the per-pod metrics an HPA may read for gpusched's pods, and which of them a
 * pod has, given the device it holds.
 *
 * Two sources: the node agent (agent/exporter.c) measures a pod's GPU use from its device,
 * and the pod's own server reports its request latency. What the agent measures depends on
 * the device (agent/exporter.c pod_value, agent/gpu.h):
 *   - a whole GPU: its utilization and memory (NVML);
 *   - a MIG instance: its memory always, its utilization only where the GPU offers GPM
 *     (Hopper and newer); A100 and A30 have none, and the agent then leaves the series out;
 *   - a time-sliced replica, an MPS client or a fraction: the sum of the pod's processes' SM
 *     samples and memory, each process matched by PID to the pod (0 with no process).
 * A metric a pod does not have is missing for it, as the Kubernetes HPA treats a pod the
 * metrics API returns nothing for (core/hpa.h). request_latency_ms is the server's on every
 * device, once the pod is ready to serve.
 *
 * Pure and thread-safe: static tables, no state. */
#ifndef GS_PODMETRIC_H
#define GS_PODMETRIC_H

#include <stdbool.h>

/* What a pod holds, as the agent tells its pods' devices apart. */
enum gs_pod_device {
    GS_PODDEV_WHOLE = 0, /* one or more whole GPUs */
    GS_PODDEV_MIG,       /* a MIG instance */
    GS_PODDEV_TIMESLICE, /* a time-slicing replica */
    GS_PODDEV_MPS,       /* an MPS client's replica */
    GS_PODDEV_FRACTION,  /* a milli-GPU share */
};

enum gs_podmetric_source {
    GS_PODMETRIC_AGENT = 0, /* the node agent's /metrics, per pod */
    GS_PODMETRIC_SERVER,    /* the pod's own server */
};

/* The metrics gpusched's tools know, in this order. */
enum gs_podmetric {
    GS_PODMETRIC_GPU_UTILIZATION = 0, /* percent */
    GS_PODMETRIC_REQUEST_LATENCY_MS,
    GS_PODMETRIC_COUNT
};

/* The metric called name, or -1 for a name gpusched does not know. */
int gs_podmetric_find(const char *name);
/* The metric's name ("gpu_utilization"), or NULL out of range. */
const char *gs_podmetric_name(int metric);
enum gs_podmetric_source gs_podmetric_source(int metric);

/* Whether the GPU model (a catalog id) offers GPM, which measures a MIG instance's
 * utilization: Hopper and newer; false for the Ampere MIG GPUs (A100, A30) and for a model
 * the catalog lacks. */
bool gs_podmetric_gpm(int model);

/* Whether a pod holding dev on a GPU of the model has the metric (a value of its own on the
 * agent's /metrics, or from its server). */
bool gs_podmetric_has(int metric, int model, enum gs_pod_device dev);

/* Why a pod holding dev on the model lacks the metric, for messages ("MIG instances of
 * A100-80GB measure no utilization: no GPM, which is Hopper and newer"); "" when it has it. */
const char *gs_podmetric_why_missing(int metric, int model, enum gs_pod_device dev, char *buf,
                                     unsigned n);

#endif
