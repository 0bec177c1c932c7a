/* fit.h - what a node can take: the engine's filters (schedulability, GPU model, node
 * selector, CPU, memory, pod slots, and the device fit: whole GPUs, a milli share on one GPU,
 * a free MIG slot of the profile, time-slicing/MPS replicas), the devices a request takes on a
 * node, and applying them to the cluster (bind / unbind). The placement search (engine.c) and
 * the policies' scores (policy.c) build on these; the functions read the cluster only, except
 * bind and unbind, and are thread-safe for a cluster no one writes. */
#ifndef GS_FIT_H
#define GS_FIT_H

#include "../base/rng.h"
#include "cluster.h"
#include "constraints.h"
#include "workload.h"

#include <stdbool.h>
#include <stdint.h>

/* Devices chosen on one node. For MIG, slot[i] is the instance index on gpu[i]. For
 * time-slicing/MPS, each entry is one replica of gpu[i]. */
struct gs_alloc {
    int32_t node;
    uint8_t kind; /* enum gs_req_kind */
    uint8_t ndev;
    int16_t milli; /* per device for whole/fraction */
    int32_t gpu[GS_MAX_GPUS_NODE];
    int8_t slot[GS_MAX_GPUS_NODE];
};

/* Why nodes were filtered out; counts per reason for one request. */
enum gs_reason {
    GS_R_UNSCHEDULABLE = 0,
    GS_R_CPU,
    GS_R_MEMORY,
    GS_R_PODS,
    GS_R_MODEL,
    GS_R_SELECTOR,
    GS_R_GPU_COUNT,
    GS_R_GPU_SHARE,
    GS_R_MIG_SLOT,
    GS_R_REPLICA,
    GS_R_COUNT
};

/* Verdicts of core/constraints, GS_KFIT (unused) included: kverdict[v] for enum gs_kverdict v */
#define GS_KVERDICT_COUNT (GS_KNO_EXISTING_ANTI + 1)

struct gs_reasons {
    int32_t count[GS_R_COUNT];
    int32_t nodes;
    int32_t other; /* refused for reasons the caller words itself: gs_engine_place_k adds its
                      taint and kverdict counts here */
    int32_t taint; /* gs_engine_place_k: a taint the pod does not tolerate */
    int32_t fit;   /* gs_engine_place_k: the caller's resource fit (gs_kplace.fit) refused it */
    int32_t kverdict[GS_KVERDICT_COUNT]; /* gs_engine_place_k: refused by the pod's Kubernetes
                                            constraints, per enum gs_kverdict (word them with
                                            gs_kverdict_reason) */
};

/* "0/120 nodes fit: 80 no free nvidia.com/mig-3g.40gb slot, 40 node selector mismatch"; the
 * nodes counted in other (taints, Kubernetes constraints) are left for the caller to word. */
void gs_reasons_str(const struct gs_reasons *r, const struct gs_request *req, char *out,
                    unsigned size);

/* Whether node n's labels match req's node selector (gpu.product values through the catalog). */
bool gs_engine_selects(const struct gs_node *n, const struct gs_request *req);

/* Filter one node; returns true when it fits, else records the reason (r may be NULL). */
bool gs_engine_fits(const struct gs_cluster *c, int node, const struct gs_request *req,
                    struct gs_reasons *r);

/* Apply / undo an allocation on the cluster. Returns 0 or GS_EINVAL when the devices are
 * not free (nothing is changed then). */
int gs_cluster_bind(struct gs_cluster *c, const struct gs_request *req, const struct gs_alloc *a);
int gs_cluster_unbind(struct gs_cluster *c, const struct gs_request *req, const struct gs_alloc *a);

/* The naive first-fit baseline: first node in order that fits, first devices. */
int gs_engine_first_fit(const struct gs_cluster *c, const struct gs_request *req,
                        struct gs_alloc *a);

/* ---- for the engine's own modules (engine.c, policy.c) ---- */

static inline bool gs__gpu_usable(const struct gs_gpu *g)
{
    return g->healthy;
}

/* The engine's first refusal of node for req (an enum gs_reason), -1 when it fits. */
int gs__fit_reason(const struct gs_cluster *c, int node, const struct gs_request *req);
/* The node's usable whole or fractional GPUs with nothing allocated (the caller checks the
 * request's GPU memory against the model). */
int gs__fit_count_whole(const struct gs_cluster *c, const struct gs_node *n);

enum gs__fit_sel {
    GS__FIT_BEST,  /* a fraction on the fullest GPU that holds it */
    GS__FIT_RANDOM /* a fraction on a GPU drawn from rng among those that hold it */
};
/* The devices req takes on node into a (a->ndev 0 when none fit): whole GPUs first fit, else
 * replicas spread over the GPUs; a fraction by sel; a MIG slot on the GPU with the most
 * instances in use. rng is used by GS__FIT_RANDOM only. */
void gs__fit_choose(struct gs_rng *rng, const struct gs_cluster *c, int node,
                    const struct gs_request *req, enum gs__fit_sel sel, struct gs_alloc *a);

#endif
