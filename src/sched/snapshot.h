/* snapshot.h - one consistent copy of the store for a scheduling cycle or an extender call:
 * the Nodes and Pods copied under the store's lock, the engine's cluster rebuilt from them
 * (sched/cache.c: nodes, then the bound pods on their devices), a node name index, and what
 * the bound pods use of the resources the engine counts only roughly (memory to the byte) or
 * not at all (ephemeral-storage, hugepages, extended resources other than GPUs).
 *
 * A snapshot belongs to one thread: nothing in it is locked, and nothing in it changes the
 * store. It owns its copies (each pod holds a reference to its constraints) and its cluster;
 * gs__snapshot_release frees them all. */
#ifndef GS_SCHED_SNAPSHOT_H
#define GS_SCHED_SNAPSHOT_H

#include "../core/engine.h"
#include "../formats/kubeobj.h"
#include "store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_policy_objs;

struct gs_snapshot {
    struct gs_cluster c;
    struct gs_kube_node *nodes;
    int nn;
    struct gs_store_pod *pods;
    int np;
    bool tainted;
    struct gs_alloc *alloc; /* per pod: what a bound pod holds */
    int8_t *placed;
    int *hidx; /* node name hash: open addressing, -1 empty */
    unsigned hcap;
    /* per node, what its pods ask of what the engine counts only roughly or not at all:
     * memory to the byte, and each of the node's other resources (its res[] order) */
    int64_t *mem_used;
    int64_t (*res_used)[GS_MAX_NODE_RES];
    /* dynamic MIG: per GPU, being re-carved (a node's gpusched.io/mig-desired newer than its
     * inventory: the GPU is laid out as asked) and when this daemon last changed it; per
     * node, whether any of its GPUs is being re-carved */
    uint8_t *busy;
    double *changed_s;
    uint8_t *node_busy;
};

/* Copy the store (sched/store.h: gs__store_copy) and rebuild the engine's cluster from the copy:
 * nodes, then bound pods. po (may be NULL): the tenancy objects whose MigManagers' gpuClients turn
 * a pod's whole GPU into a MIG device. Returns 0, or GS_ENOMEM with sn released. */
int gs__snapshot_take(struct gs_store *st, struct gs_snapshot *sn, const struct gs_policy_objs *po);
/* The node's pending desired layout (its annotation's, when newer than its inventory), or
 * an empty one (generation 0). */
void gs__snapshot_pending_desired(const struct gs_snapshot *sn, int node,
                                  struct gs_mig_desired *out);
/* Free what sn holds and zero it. */
void gs__snapshot_release(struct gs_snapshot *sn);
/* The index of the node so named, or -1. */
int gs__snapshot_find_node(const struct gs_snapshot *sn, const char *name);
/* Account pod p on node: what it asks of the resources gs__snapshot_resources_fit checks. */
void gs__snapshot_count_resources(struct gs_snapshot *sn, int node, const struct gs_kube_pod *p);
/* Whether the node has room, to the byte, for what the engine counts roughly (memory) or not
 * at all (ephemeral-storage, hugepages, extended resources other than GPUs): kube-scheduler's
 * NodeResourcesFit for them. Names the first resource short in why (may be NULL). */
bool gs__snapshot_resources_fit(const struct gs_snapshot *sn, int node, const struct gs_kube_pod *p,
                                char *why, size_t n);

#endif
