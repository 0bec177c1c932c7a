/* kstate.h - what the placed pods add up to on a cluster's nodes, for the constraints of the
 * next pod (constraints.h has the semantics).
 *
 * struct gs_kstate: pods grouped by (namespace, labels, terminating) with per-node counts, the
 * placed pods' affinity terms deduplicated with counts per topology value, host ports per
 * node, and every topology key in use interned to dense value ids per node. Updated
 * incrementally (gs_kstate_add_pod / gs_kstate_remove_pod). It borrows each added pod: the
 * gs_kpod must stay alive and unchanged until it is removed or the state released. Node labels
 * are read when a key is first used: after a node's labels change or nodes are added, rebuild
 * the state (gs_kstate_free + new + add every pod again).
 *
 * Not thread-safe while being updated; any number of threads may read one state with their
 * own preps (kprep.h). */
#ifndef GS_KSTATE_H
#define GS_KSTATE_H

#include "cluster.h"
#include "kpod.h"

/* InterPodAffinityArgs.hardPodAffinityWeight default: a placed pod's required affinity scores
 * the pods it matches at this weight */
#define GS_KHARD_AFFINITY_WEIGHT 1

struct gs_kstate;

/* A state for the cluster's nodes (node ids 0..c->nnodes-1), no pods. Returns 0 or
 * GS_ENOMEM. */
int gs_kstate_new(const struct gs_cluster *c, struct gs_kstate **out);
void gs_kstate_free(struct gs_kstate *s);
/* Count a placed pod on node (borrowed, see above). Returns a handle (>= 0) for
 * gs_kstate_remove_pod, GS_EINVAL (bad node id) or GS_ENOMEM (state unchanged). */
int gs_kstate_add_pod(struct gs_kstate *s, const struct gs_cluster *c, const struct gs_kpod *p,
                      int node);
/* Forget a placed pod by handle. Returns 0 or GS_ENOTFOUND. */
int gs_kstate_remove_pod(struct gs_kstate *s, int handle);
/* Placed pods counted. */
int gs_kstate_npods(const struct gs_kstate *s);

#endif
