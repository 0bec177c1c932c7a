/* engine.h - placement: filters, the policy table and decisions.
 *
 * The engine takes a cluster and one request and returns a decision as data: bind the pod
 * to a node with these devices (evict and repartition decisions share the type; this
 * version produces binds). Filters check CPU, memory, pod slots, schedulability, GPU model,
 * node selector and the device fit (whole GPUs, a milli share on one GPU, a free MIG slot
 * of the profile, time-slicing/MPS replicas). Policies are rows of one table {name, score};
 * the best-scoring node wins; ties go to the node with the lowest rank in a seeded random
 * order (a consistent tie-break packs). An engine owns scratch memory sized to the cluster and, for
 * the fragmentation-aware policies, a memo: one engine per thread. */
#ifndef GS_ENGINE_H
#define GS_ENGINE_H

#include "../base/rng.h"
#include "cluster.h"
#include "frag.h"
#include "workload.h"

#include <stdbool.h>
#include <stdint.h>

enum gs_decision_kind { GS_DECIDE_BIND = 0, GS_DECIDE_EVICT, GS_DECIDE_REPARTITION };

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

#define GS_MAX_VICTIMS 16

struct gs_decision {
    enum gs_decision_kind kind;
    int32_t pod;
    struct gs_alloc alloc; /* BIND */
    int32_t nvictims;      /* EVICT: pods to evict for `pod` */
    int32_t victims[GS_MAX_VICTIMS];
    int32_t gpu; /* REPARTITION: GPU and its new layout */
    struct gs_mig_layout layout;
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

struct gs_reasons {
    int32_t count[GS_R_COUNT];
    int32_t nodes;
    int32_t other; /* refused for reasons the caller words itself (Kubernetes constraints) */
};

/* "0/120 nodes fit: 80 no free nvidia.com/mig-3g.40gb slot, 40 node selector mismatch" */
void gs_reasons_str(const struct gs_reasons *r, const struct gs_request *req, char *out,
                    unsigned size);

struct gs_engine;

typedef int64_t (*gs_score_fn)(struct gs_engine *e, const struct gs_cluster *c, int node,
                               const struct gs_request *req, struct gs_alloc *choice);

struct gs_policy {
    const char *name;
    const char *help;
    gs_score_fn score;
    bool normalize; /* min-max normalise scores over feasible nodes before choosing */
};

int gs_policy_count(void);
const struct gs_policy *gs_policy_get(int i);
/* Policy by name, or NULL. */
const struct gs_policy *gs_policy_find(const char *name);

/* Engine for a cluster of up to max_nodes nodes. typical may be NULL (fragmentation then
 * counts every idle GPU as usable). Returns NULL on allocation failure. */
struct gs_engine *gs_engine_new(const struct gs_policy *policy, const struct gs_typical *typical,
                                int max_nodes, uint64_t seed);
void gs_engine_free(struct gs_engine *e);
struct gs_rng *gs_engine_rng(struct gs_engine *e);

/* Filter one node; returns true when it fits, else records the reason (r may be NULL). */
bool gs_engine_fits(const struct gs_cluster *c, int node, const struct gs_request *req,
                    struct gs_reasons *r);
/* Choose a node and devices. Returns 0 and fills d (kind BIND), or GS_ENOFIT with reasons. */
int gs_engine_place(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                    int32_t pod, struct gs_decision *d, struct gs_reasons *r);

/* The policy's score of one node that fits (higher is better) and the devices it would take.
 * The caller checks gs_engine_fits first. */
int64_t gs_engine_score(struct gs_engine *e, const struct gs_cluster *c, int node,
                        const struct gs_request *req, struct gs_alloc *choice);

/* Apply / undo an allocation on the cluster. Returns 0 or GS_EINVAL when the devices are
 * not free (nothing is changed then). */
int gs_cluster_bind(struct gs_cluster *c, const struct gs_request *req, const struct gs_alloc *a);
int gs_cluster_unbind(struct gs_cluster *c, const struct gs_request *req, const struct gs_alloc *a);

/* The naive first-fit baseline: first node in order that fits, first devices. */
int gs_engine_first_fit(const struct gs_cluster *c, const struct gs_request *req,
                        struct gs_alloc *a);

#endif
