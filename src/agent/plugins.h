/* plugins.h - the node agent's kubelet plugins, as the GPU sampler's view shapes them:
 *   - with dp_dir, a device plugin per resource (deviceplugin.h): whole GPUs or their
 *     time-slicing/MPS replicas as nvidia.com/gpu, MIG instances as nvidia.com/mig-<profile>
 *     (migStrategy mixed) or nvidia.com/gpu (single), with fractions each whole GPU that is
 *     not otherwise shared as 1000 gpusched.io/gpu-milli; Unhealthy while their GPU is; a
 *     resource that disappears (a MIG change) is left with no devices; which pod the kubelet
 *     admits, and what the scheduler recorded for it, comes from the pod tracker (pods.h);
 *   - for MPS replicas and fractions, each such GPU's MPS control daemon (mps.h): its devices
 *     are Unhealthy while it does not run; MPS on a GPU older than Volta is refused at the
 *     start;
 *   - with dra, the DRA driver gpu.gpusched.io (dra.h): ResourceSlices published with the
 *     GPUs' health every update, and the devices prepared claims hold.
 * Both are served by the one gRPC server (grpcserver.h), on threads of their own. This
 * component owns the plugins and the driver; the agent's loop (one thread) calls it. */
#ifndef GS_AGENT_PLUGINS_H
#define GS_AGENT_PLUGINS_H

#include "../formats/dpconfig.h"
#include "gpu.h"

#include <stdbool.h>

struct gs_plugins_opts {
    const char *dp_dir;           /* NULL: no device plugin */
    const struct gs_dpconfig *dp; /* sharing, MIG strategy; may be NULL */
    int replicas;                 /* of each whole GPU */
    bool dra;
    const char *node;
    const char *dra_plugins_dir, *dra_registry_dir, *cdi_dir; /* NULL: dra.h's defaults */
    bool dra_dynamic_mig;
    bool fractions;          /* gpusched.io/gpu-milli on whole GPUs, each with its MPS daemon */
    const char *mps_control; /* NULL: nvidia-cuda-mps-control */
    const char *mps_root;    /* NULL: the device-plugin config's mpsRoot, else mps.h's */
    double mps_timeout_s;    /* <= 0: mps.h's default */
};

struct gs_plugins;
struct gs_sampler;
struct gs_pods;
struct gs_kube_client;
struct gs_error;

/* The plugins over the sampler s and the pods (may be NULL); with o->dra the driver starts at
 * once on backend b (shared with its thread: gpulock.h) and kc. 0 and *out, GS_EINVAL when MPS
 * (replicas or fractions) is asked of a GPU older than Volta (the message names it), or the
 * driver's error (prefixed "DRA driver (--dra)"), GS_ENOMEM. */
int gs_plugins_start(const struct gs_plugins_opts *o, struct gs_sampler *s, struct gs_pods *pods,
                     struct gs_gpu_backend *b, struct gs_kube_client *kc, struct gs_plugins **out,
                     struct gs_error *err);
/* The device plugins' devices and the driver's slices as the GPUs are now. */
void gs_plugins_update(struct gs_plugins *p);
/* Start, check and restart the MPS control daemons; their devices' health follows at once.
 * Returns how many run. The loop's thread. */
int gs_plugins_mps_round(struct gs_plugins *p);
/* The UUIDs of devices DRA claims hold (a claim, not a pod, holds them); how many. */
int gs_plugins_in_use(struct gs_plugins *p, char (*uuid)[96], int cap);
/* Stop serving and free. NULL is nothing. */
void gs_plugins_stop(struct gs_plugins *p);

#endif
