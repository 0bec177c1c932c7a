/* engine.h - placement: the node search over filters and policy scores, and its decisions.
 *
 * The engine takes a cluster and one request and returns a decision as data: bind the pod
 * to a node with these devices (evict and repartition decisions share the type; this
 * version produces binds). Its filters, device choice and binding are fit.h's; its policies
 * are rows of one table {name, score} (policy.h); the best-scoring node wins; ties go to the node
 * with the lowest rank in a seeded random order (a consistent tie-break packs). An engine owns
 * scratch memory sized to the cluster and, for the fragmentation-aware policies, a memo: one engine
 * per thread. gs_engine_place_k adds a pod's Kubernetes constraints and taints (core/constraints)
 * as further filters and scores after the engine's own, which stay memoised. */
#ifndef GS_ENGINE_H
#define GS_ENGINE_H

#include "../base/rng.h"
#include "cluster.h"
#include "constraints.h"
#include "fit.h"
#include "frag.h"
#include "policy.h"
#include "workload.h"

#include <stdbool.h>
#include <stdint.h>

enum gs_decision_kind { GS_DECIDE_BIND = 0, GS_DECIDE_EVICT, GS_DECIDE_REPARTITION };

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

/* Engine for a cluster of up to max_nodes nodes. typical may be NULL (fragmentation then
 * counts every idle GPU as usable). Returns NULL on allocation failure. */
struct gs_engine *gs_engine_new(const struct gs_policy *policy, const struct gs_typical *typical,
                                int max_nodes, uint64_t seed);
void gs_engine_free(struct gs_engine *e);
struct gs_rng *gs_engine_rng(struct gs_engine *e);

/* Choose a node and devices. Returns 0 and fills d (kind BIND), or GS_ENOFIT with reasons. */
int gs_engine_place(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                    int32_t pod, struct gs_decision *d, struct gs_reasons *r);

/* A pod's Kubernetes placement constraints and taints, for gs_engine_place_k. Borrowed for the
 * call. ks and kp are both set or both NULL (NULL: no constraints, taints only); kp must be
 * the result of a successful gs_kprep_compute for this pod against ks with the same tol, and
 * ks unchanged since (gs_kstate_add_pod after each bind, then compute again for the next
 * pod). tol: whether the pod tolerates a node's NoSchedule/NoExecute taints (NULL: every
 * node); nodes it refuses are out (kube-scheduler's TaintToleration filter), and it is the
 * callback spreading uses for nodeTaintsPolicy Honor. selector_in_req: the pod's only node
 * constraint is spec.nodeSelector and the caller copied it into req->sel, so the engine's
 * selector filter (which also resolves nvidia.com/gpu.product names through the catalog)
 * answers for it; a GS_KNO_NODE_AFFINITY verdict is then not a refusal (the node's later
 * constraint filters are not consulted either: the prep stops at its first verdict). */
struct gs_kplace {
    struct gs_kstate *ks;
    struct gs_kprep *kp;
    gs_ktolerates_fn tol;
    void *tol_ctx;
    /* further resources the caller fits (NULL: none), asked after taints: nodes it refuses are
     * out and counted in r->fit; unlike tol, spreading never asks it */
    gs_ktolerates_fn fit;
    void *fit_ctx;
    bool selector_in_req;
};

/* Weight of the policy's score, normalised to 0..GS_KMAX_SCORE over the feasible nodes, beside
 * the Kubernetes scores (gs_kscore_total: node affinity, inter-pod affinity, spreading, each
 * 0..100 at weight 2). As kube-scheduler weighs NodeResourcesFit (1) against its default
 * plugins (2 each): a pod's preferred terms outweigh GPU packing when they tell nodes apart. */
#define GS_ENGINE_KWEIGHT_POLICY 1

/* gs_engine_place for a pod with Kubernetes placement constraints (k NULL: exactly
 * gs_engine_place). Filters: the engine's own (memoised per request shape and node version),
 * then taints (k->tol), then the constraints (gs_kprep_filter; never memoised, since the
 * verdict depends on other pods). Scores, over the nodes that pass every filter:
 *   GS_ENGINE_KWEIGHT_POLICY * policy score normalised to 0..100 + gs_kscore_total
 * with ties broken by the policy's own score, then by the engine's node order. When the
 * Kubernetes scores are equal on every feasible node (a pod with no preferred terms, no
 * ScheduleAnyway spreading, and no placed pod's term that matches it) the choice is
 * gs_engine_place's: the policy decides alone, with its full resolution; a pod whose taints
 * and constraints refuse no node is then placed exactly as gs_engine_place places it (same
 * node, same devices). Every node is considered (no sampling: upstream's
 * percentageOfNodesToScore is not applied). When the Kubernetes scores are all zero, taints and
 * constraints are asked of the nodes in the policy's order (its best, the next 32, then every
 * node) until one passes: the result is that of filtering them all, at a fraction of the cost.
 * r (may be NULL) gets one count per node. When no node fits, each node is counted under the
 * first filter that refuses it in kube-scheduler's order: node unschedulable, node name,
 * taints, node affinity (the engine's model and selector checks count here too), host ports,
 * the engine's resource and device fit, then spreading and inter-pod (anti-)affinity; taint
 * and constraint refusals go to r->taint and r->kverdict[] and are added to r->other. When a
 * node is chosen, r->count[] holds the engine's refusals and r->taint and r->kverdict[] only
 * those of the nodes asked.
 * Returns 0 and fills d, GS_ENOFIT, GS_EINVAL (cluster larger than the engine, or only one of
 * ks and kp) or GS_ENOMEM (scratch or scoring memory). Not thread-safe for one engine; the
 * state and prep are read, except that scoring may intern a topology key into ks (as
 * gs_kprep_score does). */
int gs_engine_place_k(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                      int32_t pod, const struct gs_kplace *k, struct gs_decision *d,
                      struct gs_reasons *r);

/* gs_engine_place among the n given nodes only (the engine's filters and the policy's score,
 * memoised as there; ties to the engine's node order): for a caller that already chose where
 * a pod must go (core/topo.c's domains). Returns 0 and fills d, GS_ENOFIT, GS_EINVAL (cluster
 * larger than the engine) or GS_EINTERNAL. */
int gs_engine_place_among(struct gs_engine *e, const struct gs_cluster *c,
                          const struct gs_request *req, int32_t pod, const int32_t *nodes, int n,
                          struct gs_decision *d);

/* The policy's score of one node that fits (higher is better) and the devices it would take.
 * The caller checks gs_engine_fits first. */
int64_t gs_engine_score(struct gs_engine *e, const struct gs_cluster *c, int node,
                        const struct gs_request *req, struct gs_alloc *choice);

#endif
