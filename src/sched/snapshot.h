/* snapshot.h - one consistent copy of the store for a scheduling cycle or an extender call:
 * the Nodes and Pods copied under the store's lock, the engine's cluster rebuilt from them
 * (sched/cache.c: nodes, then the bound pods on their devices), a node name index, and what
 * the bound pods use of the resources the engine counts only roughly (memory to the byte) or
 * not at all (ephemeral-storage, hugepages, extended resources other than GPUs).
 *
 * A snapshot belongs to one thread: nothing in it is locked, and nothing in it changes the
 * store. It owns its copies (each pod holds a reference to its constraints) and its cluster;
 * gs__snapshot_free frees them all. The struct is opaque: the cycle input (sched/cyclein.c),
 * the cycle output (sched/cycleout.c), the extender and the dashboard read it through the
 * functions below; only this module and the store (sched/store.h) touch a gs_store_pod's
 * fields. */
#ifndef GS_SCHED_SNAPSHOT_H
#define GS_SCHED_SNAPSHOT_H

#include "../core/engine.h"
#include "../formats/kubeobj.h"
#include "store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_policy_objs;
struct gs_tenancy;

/* Opaque: its fields are snapshot.c's. */
struct gs_snapshot;

/* Copy the store (sched/store.h: gs__store_copy) and rebuild the engine's cluster from the copy:
 * nodes, then bound pods. po (may be NULL): the tenancy objects whose MigManagers' gpuClients turn
 * a pod's whole GPU into a MIG device. Returns 0 and *out, or GS_ENOMEM (*out NULL). */
int gs__snapshot_new(struct gs_store *st, const struct gs_policy_objs *po,
                     struct gs_snapshot **out);
/* Free what sn holds and sn. NULL is a no-op. */
void gs__snapshot_free(struct gs_snapshot *sn);

/* ---------- the cluster and its nodes ---------- */

/* The engine's cluster: node i of the snapshot is node i of the cluster. The caller may place
 * pods in it (a cycle's decisions); it lives as long as sn. */
struct gs_cluster *gs__snapshot_cluster(struct gs_snapshot *sn);
int gs__snapshot_nnodes(const struct gs_snapshot *sn);
/* Node i (0 <= i < gs__snapshot_nnodes), as copied from the store. */
const struct gs_kube_node *gs__snapshot_node(const struct gs_snapshot *sn, int i);
/* The index of the node so named, or -1. */
int gs__snapshot_find_node(const struct gs_snapshot *sn, const char *name);
/* Whether any node has a taint or is cordoned (else no pod needs its tolerations checked). */
bool gs__snapshot_tainted(const struct gs_snapshot *sn);
/* The node's pending desired layout (its annotation's, when newer than its inventory), or
 * an empty one (generation 0). */
void gs__snapshot_pending_desired(const struct gs_snapshot *sn, int node,
                                  struct gs_mig_desired *out);

/* ---------- re-carves in flight ---------- */

/* Per GPU of the cluster: being re-carved (laid out as asked), and when this daemon last changed
 * its layout (0: not lately); arrays of the cluster's ngpus, for core/cycle.h's input. */
const uint8_t *gs__snapshot_gpus_busy(const struct gs_snapshot *sn);
const double *gs__snapshot_gpus_changed(const struct gs_snapshot *sn);
/* Whether a GPU of the node is being re-carved. */
bool gs__snapshot_node_busy(const struct gs_snapshot *sn, int node);
/* This daemon changed GPU gpu (its index on the node) of node at at_wall (Unix s); busy: the
 * Node does not show the change yet (the GPU is being re-carved). */
void gs__snapshot_note_recarve(struct gs_snapshot *sn, int node, int gpu, double at_wall,
                               bool busy);

/* ---------- the pods ---------- */

int gs__snapshot_npods(const struct gs_snapshot *sn);
/* Pod i (0 <= i < gs__snapshot_npods), as copied from the store (its request mapped as po's
 * MigManagers say). */
const struct gs_kube_pod *gs__snapshot_pod(const struct gs_snapshot *sn, int i);
/* What the store knows of pod i: its arrival order; the node it is nominated to ("" none) and
 * since when (monotonic s); whether it is due (not in backoff) at t (monotonic s). */
uint64_t gs__snapshot_pod_seq(const struct gs_snapshot *sn, int i);
const char *gs__snapshot_pod_nominated(const struct gs_snapshot *sn, int i);
double gs__snapshot_pod_nominated_at(const struct gs_snapshot *sn, int i);
bool gs__snapshot_pod_due(const struct gs_snapshot *sn, int i, double t);
/* Pending pod i carries a nomination written before a restart (status.nominatedNodeName) that
 * the store has neither nominated nor adopted: take it over in this copy, as if made at t, and
 * return true (the caller tells the store: gs__store_adopt). Else false. */
bool gs__snapshot_pod_adopt(struct gs_snapshot *sn, int i, double t);
/* Pod i is bound and the cluster holds it (*a: its devices there). */
bool gs__snapshot_pod_placed(const struct gs_snapshot *sn, int i, const struct gs_alloc **a);
/* The pods the store evicted (gs__store_is_evicted) that the copy still shows count as
 * terminating. */
void gs__snapshot_mark_evicted(struct gs_snapshot *sn, struct gs_store *st);
/* The cycle's tenancy (sched/tenancy.h: gs_tenancy_build) over the snapshot's pods and cluster:
 * pod i of the tenancy is pod i of the snapshot. Returns 0 or GS_ENOMEM. */
int gs__snapshot_tenancy(const struct gs_snapshot *sn, const struct gs_policy_objs *po,
                         struct gs_tenancy *ty);

/* ---------- resources the engine does not count exactly ---------- */

/* Account pod p on node: what it asks of the resources gs__snapshot_resources_fit checks. */
void gs__snapshot_count_resources(struct gs_snapshot *sn, int node, const struct gs_kube_pod *p);
/* Whether the node has room, to the byte, for what the engine counts roughly (memory) or not
 * at all (ephemeral-storage, hugepages, extended resources other than GPUs): kube-scheduler's
 * NodeResourcesFit for them. dra_res: p->res[r] (bit r) that DRA serves on a node without them
 * (formats/draext.h), as NodeResourcesFit leaves them to DynamicResources there. Names the first
 * resource short in why (may be NULL). */
bool gs__snapshot_resources_fit(const struct gs_snapshot *sn, int node, const struct gs_kube_pod *p,
                                uint32_t dra_res, char *why, size_t n);

#endif
