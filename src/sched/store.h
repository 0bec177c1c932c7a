/* store.h - the scheduler's feed of Nodes and non-terminal Pods: two kube/cache.h caches (one
 * per kind, list + watch), each pod with what only the scheduler knows of it (arrival order,
 * backoff, a bind not yet seen by the watch, a nomination), the pods it evicted until the
 * watch shows them gone, Events about nodes whose GPUs became unusable (or usable again),
 * and a change counter that wakes the scheduling loop.
 *
 * Invariants: at most one node per name and one pod per namespace/name; the generation
 * (gs__store_gen) grows on every change a scheduling cycle should look at.
 *
 * Thread-safety: every function is thread-safe (the nodes and the pods each have their
 * cache's lock; the generation its own); none may be called from a callback of another.
 * Ownership: the store owns its records (each pod holds a reference to its constraints);
 * gs__store_copy hands out copies. */
#ifndef GS_SCHED_STORE_H
#define GS_SCHED_STORE_H

#include "../formats/kubeobj.h"
#include "../kube/client.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>

struct gs_error;
struct gs_migparted;
struct gs_store;

/* A pod as the store holds it. Its fields are this module's and the snapshot's, which holds
 * the copies (sched/snapshot.c); every other module reads them through sched/snapshot.h. */
struct gs_store_pod {
    struct gs_kube_pod p;
    uint64_t seq;    /* arrival order in the store */
    double next_try; /* monotonic seconds */
    double backoff;
    bool assumed;                 /* bound by us, the watch has not shown it yet */
    char nominated[GS_KNAME_MAX]; /* node its victims are leaving, while they terminate */
    double nominated_at;
    bool adopted; /* its status.nominatedNodeName was taken over once (after a restart) */
};

enum gs_store_feed {
    GS_STORE_WATCH = 0, /* informers on threads of their own */
    GS_STORE_LIST,      /* one list of each kind now (explain) */
    GS_STORE_DETACHED,  /* no API server: fed by gs__store_load (tests) */
};

/* A store fed as how says; mp (not owned, may be NULL) lays out nodes without an inventory;
 * a pod's backoff doubles from 1 s to max_backoff_s. Returns 0 and *out, or the error of a
 * list (GS_STORE_LIST) or GS_ENOMEM, GS_EIO (no thread). */
int gs__store_new(struct gs_kube_client *kc, enum gs_store_feed how, const struct gs_migparted *mp,
                  double max_backoff_s, struct gs_store **out, struct gs_error *err);
/* Stop the informers and free everything. NULL is a no-op. */
void gs__store_free(struct gs_store *st);

/* ---------- the change counter ---------- */

uint64_t gs__store_gen(struct gs_store *st);
/* Something a cycle should look at changed (or the daemon must look at its flags): the
 * generation grows and waiters wake. */
void gs__store_changed(struct gs_store *st);
/* Wait up to timeout_s for the generation to differ from seen; returns it. */
uint64_t gs__store_wait(struct gs_store *st, uint64_t seen, double timeout_s);
/* Whether both kinds, or the pods, have been listed. */
bool gs__store_synced(struct gs_store *st);
bool gs__store_pods_synced(struct gs_store *st);

/* ---------- reading ---------- */

/* Copies of every node (*nodes, *nn: each to be released with gs_kube_node_release) and every
 * pod (*pods, *np: each holding a reference to its constraints), in the store's order, in
 * arrays of *ncap and *pcap entries (the arrays a gs__store_recycle handed back, when large
 * enough). Returns 0 or GS_ENOMEM (nothing handed out). */
int gs__store_copy(struct gs_store *st, struct gs_kube_node **nodes, int *nn, int *ncap,
                   struct gs_store_pod **pods, int *np, int *pcap);
/* The arrays of a copy, their records released, handed back (either may be NULL): the next
 * copy reuses them, so that a cycle on a large cluster does not fault in hundreds of
 * megabytes of fresh pages each time. The store keeps one of each (the larger); the other
 * is freed. */
void gs__store_recycle(struct gs_store *st, struct gs_kube_node *nodes, int ncap,
                       struct gs_store_pod *pods, int pcap);
const struct gs_migparted *gs__store_migparted(const struct gs_store *st);
/* Whether a pending pod of scheduler is due (not in backoff, not gated by
 * spec.schedulingGates). */
bool gs__store_work_due(struct gs_store *st, const char *scheduler);
/* How many are, counted up to most. */
int gs__store_due_count(struct gs_store *st, const char *scheduler, int most);
/* Events regarding nodes that changed how gpusched sees them since the last call (a JSON
 * array, new reference, or NULL: none), for the next cycle to post. */
json_t *gs__store_take_node_events(struct gs_store *st);
/* Whether the pod with this UID was seen deleted lately, or evicted by us lately. */
bool gs__store_pod_gone(struct gs_store *st, const char *uid);

/* ---------- what the scheduler knows of its pods ---------- */

/* Assume pod ns/name (UID uid) bound to node with devices until the watch shows it: only a
 * pod still without a node. mark: remember the bind as ours (a later view without the node is
 * older than it) and drop its nomination. Returns whether it was assumed. */
bool gs__store_assume(struct gs_store *st, const char *ns, const char *name, const char *uid,
                      const char *node, const char *devices, bool mark);
/* Undo gs__store_assume (mark true): the pod has no node again. */
void gs__store_unassume(struct gs_store *st, const char *ns, const char *name);
/* A bind that failed: the assumed pod (same UID) has no node again and backs off. */
void gs__store_give_back(struct gs_store *st, const char *ns, const char *name, const char *uid);
/* Put the pod in backoff: retry_s seconds if positive, else its doubled backoff. */
void gs__store_backoff(struct gs_store *st, const char *ns, const char *name, double retry_s);
/* Nominate node for the pod: returns whether it was nominated there already; the nomination
 * time is refreshed when it is new or refresh is set; the pod is retried in 0.25 s. */
bool gs__store_nominate(struct gs_store *st, const char *ns, const char *name, const char *node,
                        bool refresh);
/* A nomination read back from status.nominatedNodeName (after a restart): taken over once,
 * as if made at t. */
void gs__store_adopt(struct gs_store *st, const char *ns, const char *name, const char *node,
                     double t);
/* Pending pods get another look now (only those with DRA claims when dra_only). */
void gs__store_kick(struct gs_store *st, bool dra_only);
/* Remember a pod we evicted (its UID) until the watch shows it gone, 120 s at most. */
void gs__store_evicted(struct gs_store *st, const char *uid);
/* Forget evictions older than 120 s; whether uid is one of the others. */
void gs__store_evicted_prune(struct gs_store *st);
bool gs__store_is_evicted(struct gs_store *st, const char *uid);

/* ---------- feeding by hand (GS_STORE_DETACHED) ---------- */

/* Insert or replace a node or a pod (the store takes what it holds), as a watch event would;
 * or replace every node and pod with complete lists (the store is then synced). Returns 0 or
 * GS_ENOMEM. */
int gs__store_upsert_node(struct gs_store *st, struct gs_kube_node *n);
int gs__store_upsert_pod(struct gs_store *st, struct gs_kube_pod *p);
/* A pod object as the store reads it from the API server: gs_kube_pod_read with its
 * constraints; a pod with a name and a spec whose request cannot be read is kept all the same,
 * unreadable (kubeobj.h), asking no GPU, with why in its refused field (the cycle tells the pod
 * so and never places it). Returns 0, or GS_EINVAL (no name or spec; err says why) or
 * GS_ENOMEM; out is then released. Thread-safe. */
int gs__store_read_pod(const json_t *obj, struct gs_kube_pod *out, struct gs_error *err);
int gs__store_load(struct gs_store *st, struct gs_kube_node *nodes, int nn,
                   struct gs_kube_pod *pods, int np);

#endif
