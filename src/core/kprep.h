/* kprep.h - the per-pod precomputation of kube-scheduler's filters and scores (upstream's
 * PreFilter/PreScore state) against the placed pods (kstate.h), and the filters and scores
 * it serves. constraints.h has the semantics.
 *
 * struct gs_kprep: counts per topology value for the incoming pod's terms and spread
 * constraints, the placed terms that match it. Computed once per pod (gs_kprep_compute), after
 * which gs_kprep_filter is O(terms + constraints) per node with no allocation, and
 * gs_kprep_score scores the feasible nodes in one pass. A prep is valid until the state
 * changes; reuse one prep for every pod (its buffers are kept). One prep per thread. */
#ifndef GS_KPREP_H
#define GS_KPREP_H

#include "cluster.h"
#include "kpod.h"
#include "kstate.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_KMAX_SCORE 100
/* kube-scheduler's default plugin weights for the three scores */
#define GS_KWEIGHT_NODE_AFFINITY 2
#define GS_KWEIGHT_INTER_POD     2
#define GS_KWEIGHT_SPREAD        2

/* Why a filter refused a node; the text is kube-scheduler's reason. */
enum gs_kverdict {
    GS_KFIT = 0,
    GS_KNO_NODE_NAME,     /* "node(s) didn't match the requested node name" */
    GS_KNO_NODE_AFFINITY, /* "node(s) didn't match Pod's node affinity/selector" */
    GS_KNO_PORTS,         /* "node(s) didn't have free ports for the requested pod ports" */
    GS_KNO_SPREAD_LABEL,  /* "...topology spread constraints (missing required label)" */
    GS_KNO_SPREAD,        /* "node(s) didn't match pod topology spread constraints" */
    GS_KNO_AFFINITY,      /* "node(s) didn't match pod affinity rules" */
    GS_KNO_ANTI_AFFINITY, /* "node(s) didn't match pod anti-affinity rules" */
    GS_KNO_EXISTING_ANTI  /* "node(s) didn't satisfy existing pods anti-affinity rules" */
};
const char *gs_kverdict_reason(enum gs_kverdict v);
/* True when retrying later cannot help while the node stays as it is (upstream's
 * UnschedulableAndUnresolvable: node name, node affinity, missing spread label, affinity):
 * preemption on that node is pointless. */
bool gs_kverdict_unresolvable(enum gs_kverdict v);

struct gs_kprep;

/* Whether the pod tolerates a node's NoSchedule/NoExecute taints: only asked for spread
 * constraints with nodeTaintsPolicy Honor. NULL: every node is tolerated. */
typedef bool (*gs_ktolerates_fn)(void *ctx, int node);

int gs_kprep_new(struct gs_kprep **out);
void gs_kprep_free(struct gs_kprep *p);
/* Precompute for pod p (borrowed until the next compute) against the state; a topology key
 * the state has not seen is interned into it (so the state is written: not concurrently
 * with another compute or an update). Returns 0 or
 * GS_ENOMEM (the prep then refuses every node). O(nodes) for pods with DoNotSchedule spread
 * constraints, O(placed pods matching its terms) otherwise, O(distinct placed terms) for the
 * placed pods' anti-affinity. */
int gs_kprep_compute(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c,
                     const struct gs_kpod *pod, gs_ktolerates_fn tol, void *tol_ctx);
/* True when the pod asks nothing of this module that could refuse a node (no node name,
 * selector, required affinity, host ports, DoNotSchedule spread, pod (anti-)affinity, and no
 * placed pod's anti-affinity matches it): the engine may skip gs_kprep_filter. */
bool gs_kprep_trivial(const struct gs_kprep *p);
/* Filter one node: GS_KFIT or why not, in upstream plugin order (NodeName, NodeAffinity,
 * NodePorts, PodTopologySpread, InterPodAffinity). Thread-safe for a shared state and prep
 * (reads only). */
enum gs_kverdict gs_kprep_filter(const struct gs_kprep *p, const struct gs_kstate *s,
                                 const struct gs_cluster *c, int node);
/* Same, with the reason's text written to why (may be NULL). Returns true when it fits. */
bool gs_kstate_filter(const struct gs_kprep *p, const struct gs_kstate *s,
                      const struct gs_cluster *c, int node, char *why, size_t n);

/* Normalised scores of one feasible node, each 0..100. */
struct gs_kscore {
    int64_t node_affinity, inter_pod, spread;
};
/* Weighted sum with kube-scheduler's default weights. */
int64_t gs_kscore_total(const struct gs_kscore *s);
/* Score the feasible nodes (the ones that passed every filter, as upstream scores only
 * those) for the prepared pod: out[i] for nodes[i]. Normalisation is over these nodes.
 * Same tolerations callback as for gs_kprep_compute (spread, nodeTaintsPolicy Honor).
 * May intern topology keys into the state, as compute does. Returns 0 or GS_ENOMEM. */
int gs_kprep_score(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c,
                   const int32_t *nodes, int32_t n, struct gs_kscore *out, gs_ktolerates_fn tol,
                   void *tol_ctx);

#endif
