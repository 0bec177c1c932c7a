/* openbopt.h - how far the openb experiment's online policies are from the best possible:
 * an offline packer (achievable) and a Lagrangian bound (proven) on the same arrivals.
 *
 * Offline packing (achievable). Candidates, each a feasible placement made with the
 * engine's own filter (gs_engine_fits: CPU, memory, GPU model, whole GPUs free, a GPU with
 * the share free) and gs_cluster_bind; sim/openb.c keeps the best one per seed.
 *  - The decreasing-size packer (gs_openb_pack): whole-GPU pods by GPU count, then sharing
 *    pods by milli-GPU, then CPU-only pods, heaviest CPU first; each to the feasible node it
 *    fills best (fewest whole GPUs left free, then least share left on the GPU, then least
 *    CPU left).
 *  - An online placement (gpusched's, and fgd's) improved with hindsight
 *    (gs_openb_repair): each pod left out,
 *    largest first, is placed by moving one placed pod elsewhere, or by leaving out a
 *    smaller one.
 * The milli-GPU placed is achievable, so 100 % minus it is an upper bound on what the
 * optimum leaves unallocated. (On openb, decreasing size packs worse than arrival order:
 * whole-GPU pods first take the CPU that sharing pods need later.)
 *
 * Proven bound. Group the nodes into types t (model, GPUs, CPU, memory; n_t nodes) and let
 * R_t = n_t x (GPU milli, CPU, memory) be a type's capacity. Any placement of pods p (value
 * v_p = its milli-GPU, request r_p) is a 0/1 solution x_pt of the LP
 *     max sum v_p x_pt   s.t. sum_t x_pt <= 1,  sum_p r_p x_pt <= R_t,  x_pt = 0 where p
 *                        does not fit an empty node of type t,
 * so for every lambda_t >= 0 (one price per type and resource), by weak duality,
 *     placed milli <= L(lambda) = sum_t lambda_t.R_t + sum_p max(0, max_t (v_p - lambda_t.r_p)).
 * Every L(lambda) is a valid upper bound whatever lambda is; a subgradient descent only
 * looks for a small one and the smallest seen is kept. It is also at most the arrived demand.
 * This bound ignores integrality within a node (a GPU's share, whole pods per node): it
 * proves what CPU, memory, GPU models and GPU counts alone forbid. The share bound below
 * adds the integrality of GPU shares; sim/openb.c reports the stronger of the two.
 *
 * Pure functions of their inputs; thread-safe. */
#ifndef GS_SIM_OPENBOPT_H
#define GS_SIM_OPENBOPT_H

#include "../core/engine.h"

#include <stdint.h>

/* Place reqs[idx[0..n)] on c (built from the trace's nodes, nothing bound yet, or partly
 * filled) in the packer's order. placed (may be NULL) gets 1 per placed position of idx.
 * Returns the milli-GPU placed (>= 0) or GS_ENOMEM. */
int64_t gs_openb_pack(struct gs_cluster *c, const struct gs_request *reqs, const int32_t *idx,
                      int n, uint8_t *placed);

/* One pod placed where it fills best (the packer's rule), as an arrival after the offline
 * pass. Returns 0 or GS_ENOFIT. */
int gs_openb_pack_one(struct gs_cluster *c, const struct gs_request *req);

/* Local search on a placement of reqs[idx[0..n)] held in c: alloc[k] is where position k is
 * bound when placed[k]. For each pod left out, largest first, try to place it on a node by
 * taking one placed pod q off that node: q is placed again where it fills best, or, when
 * no node takes it and it is smaller, left out. At most tries such attempts per pod. Every
 * step keeps the placement feasible (bind and unbind are the engine's) and never lowers the
 * milli placed. Updates c, alloc and placed; returns the milli gained or GS_ENOMEM. */
int64_t gs_openb_repair(struct gs_cluster *c, const struct gs_request *reqs, const int32_t *idx,
                        int n, struct gs_alloc *alloc, uint8_t *placed, int tries);

/* Upper bound on the milli-GPU any placement of reqs[idx[0..n)] onto the cluster's empty
 * nodes can allocate (the Lagrangian bound above, at most the pods' total milli); iters
 * subgradient steps (0: the bound at lambda = GPU price 1, others 0). Returns the bound in
 * *ub and 0, or GS_ENOMEM. */
int gs_openb_bound(const struct gs_cluster *c, const struct gs_request *reqs, const int32_t *idx,
                   int n, int iters, double *ub);

/* Share bound: a lower bound on the milli-GPU left unallocated (capacity cap_milli) by any
 * placement of reqs[idx[0..n)]. Two pods of more than 500 milli never share a GPU, so each
 * such pod placed leaves a room of 1000 - m on its GPU that only pods of at most that share
 * can use. For a threshold th, with R the rooms of the placed big pods whose room is <= th
 * and V the milli of all pods of share <= th, the idle share is at least R - V; a big pod
 * left out adds its share to the unplaced demand instead. So for every set X of big pods
 * left out, unallocated >= max(R - rooms(X) - V, cap - arrived + shares(X)); the minimum over
 * fractional X (the smallest shares out first) is a valid bound for each th, and the largest
 * over th is returned (at least cap - arrived, and at least 0). Pure; thread-safe. */
double gs_openb_bound_share(const struct gs_request *reqs, const int32_t *idx, int n,
                            int64_t cap_milli);

/* The proven lower bound on the milli-GPU any placement of reqs[idx[0..n)] leaves unallocated
 * on the cluster's empty nodes (capacity: its GPUs): capacity minus the least of the pods'
 * milli, ub (gs_openb_bound's on these pods, or on more of them: placing fewer pods never
 * places more) and what the share bound leaves; at least 0. Pure; thread-safe. */
double gs_openb_unalloc_bound(const struct gs_cluster *c, const struct gs_request *reqs,
                              const int32_t *idx, int n, double ub);

#endif
