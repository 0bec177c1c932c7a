/* recarve.h - dynamic MIG: choose a GPU and a new layout for a request that no free slot
 * offers, and apply a new layout to a GPU of the cluster.
 *
 * gs_recarve_find looks, over the nodes the caller allows, for GPUs whose layout can change
 * so that the request fits:
 *   - a MIG request: a MIG GPU re-carved around its instances in use (kept at their
 *     placements with their indexes, never destroyed), or an idle whole GPU of a
 *     MIG-capable model switched to MIG mode;
 *   - a whole-GPU request of k GPUs: k GPUs of one node that are free whole GPUs or idle
 *     MIG GPUs switched to whole mode.
 * A mode change needs the GPU idle (NVML resets it), so only idle GPUs change mode. With
 * victims allowed (o->pctx), instances held by running pods that may be preempted for the
 * preemptor (lower priority in its queue or no queue, past the minimum run time, a gang
 * only whole, within every PodDisruptionBudget) count as free; those pods are the plan's
 * victims. Among candidates the choice is, in order: no victims, else the fewest GPU-hours
 * lost; the largest gain in future fits (the free instances, weighted by accounting units,
 * that the pending demand can use: after the change minus before); no mode change; the
 * fewest instances destroyed and created; the lowest GPU id. New layouts are maximal (no
 * instance could be added). A GPU reconfiguring (o->busy) or changed within o->hold_s is
 * not touched: layouts do not flap. Pure: the cluster is read only. */
#ifndef GS_RECARVE_H
#define GS_RECARVE_H

#include "cluster.h"
#include "preempt.h"
#include "workload.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_RECARVE_PROFILES 32

/* What free instances are worth: MIG instances by profile name, and whole GPUs, that are
 * pending or likely to be asked for (the cycle counts the pending pods and those running:
 * what runs now is the best guess of what arrives next). */
struct gs_recarve_demand {
    int n;
    char name[GS_RECARVE_PROFILES][GS_MIG_NAME_MAX];
    uint32_t count[GS_RECARVE_PROFILES];
    uint32_t whole;
};

/* Add (sign +1) or remove (-1) one request's devices. */
void gs_recarve_demand_add(struct gs_recarve_demand *d, const struct gs_request *r, int sign);

/* One GPU's change: its mode afterwards and, in MIG mode, its complete new layout. */
struct gs_recarve_gpu {
    int32_t gpu;
    uint8_t mode; /* GS_GPU_MIG or GS_GPU_WHOLE */
    bool mode_change;
    uint8_t ndestroy, ncreate;
    struct gs_mig_placement pl; /* MIG: every instance afterwards */
};

struct gs_recarve {
    int32_t node;
    int32_t ngpus;
    struct gs_recarve_gpu g[GS_MAX_GPUS_NODE];
    int32_t nvictims;
    int32_t victims[GS_PREEMPT_MAX_VICTIMS]; /* indexes into o->pctx->run */
    double gpu_hours;                        /* lost with the victims */
    double gain;                             /* future fits won (units) */
};

struct gs_recarve_opts {
    const uint8_t *busy;     /* per GPU: being reconfigured (NULL: none) */
    const uint8_t *fixed;    /* per GPU: its layout may not change (NULL: none) */
    const double *changed_s; /* per GPU: when its layout last changed (NULL: never) */
    double now_s, hold_s;
    bool no_mode_change; /* only GPUs that keep their mode */
    /* whether a node may take the pod apart from its devices (taints, constraints, other
     * resources); NULL: every node */
    bool (*allows)(void *ctx, int node);
    void *ctx;
    /* victims: the running pods and the preemptor (NULL: no victims) */
    const struct gs_preempt_ctx *pctx;
    const struct gs_preemptor *pr;
};

/* The best change for req (kind MIG or whole GPUs) given the pending demand d (which need
 * not include req). Returns 0 and fills out, GS_ENOFIT when no change helps, GS_EINVAL for
 * a request of another kind, GS_ENOMEM. */
int gs_recarve_find(const struct gs_cluster *c, const struct gs_request *req,
                    const struct gs_recarve_demand *d, const struct gs_recarve_opts *o,
                    struct gs_recarve *out);

/* Apply one GPU's change to the cluster. Instances in use must be in the new layout (same
 * profile and start) unless the GPU changes mode (then none may be in use); they keep their
 * indexes where possible, and remap[i] (may be NULL) gets each old instance's new index (-1:
 * destroyed) for the caller's allocations. Returns 0, or GS_EINVAL with nothing changed. */
int gs_recarve_apply(struct gs_cluster *c, const struct gs_recarve_gpu *g,
                     int8_t remap[GS_MIG_COMPUTE_MAX]);

/* Seconds a change takes given per-step costs (instance destroyed, created, mode change). */
double gs_recarve_seconds(const struct gs_recarve_gpu *g, double destroy_s, double create_s,
                          double mode_s);

#endif
