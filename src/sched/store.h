/* store.h - the scheduler's store: the Nodes and the non-terminal Pods the informers keep
 * current, each pod with what only the scheduler knows of it (arrival order, backoff, a bind
 * not yet seen by the watch, a nomination).
 *
 * Invariants: at most one node per name and one pod per namespace/name; gen grows on every
 * change a scheduling cycle should look at, and cv is broadcast with it.
 *
 * Thread-safety: the struct is shared by the informers, the binder, the extender and the
 * scheduling cycle; every read and write of its fields holds mu (the functions below expect
 * the caller to hold it; gs__store_init and gs__store_release expect no other user).
 *
 * Ownership: the store owns its nodes, its pods (each gs_kube_pod holds a reference to its
 * constraints) and node_events. */
#ifndef GS_SCHED_STORE_H
#define GS_SCHED_STORE_H

#include "../formats/kubeobj.h"

#include <jansson.h>
#include <pthread.h>

#include <stdbool.h>
#include <stdint.h>

struct gs_migparted;

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

#define GS_STORE_GONE 1024

struct gs_store {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen, seq;
    struct gs_kube_node *nodes;
    int nnodes, cap_nodes;
    struct gs_store_pod *pods;
    int npods, cap_pods;
    bool nodes_synced, pods_synced;
    /* the UIDs of the last GS_STORE_GONE pods the watch saw deleted (or turn terminal), for
     * the claims reserved for them (sched/claims.h: gs_claims_release_stale) */
    char gone[GS_STORE_GONE][64];
    int ngone, gone_next;
    const struct gs_migparted *mp; /* the scheduler's --mig-config, or NULL */
    /* Events regarding nodes that changed how gpusched sees them, for the next cycle to post
     * (the informer holds the lock; writes go through the background queue) */
    json_t *node_events;
};

/* An empty store; mp (not owned, may be NULL) lays out nodes without an inventory. */
void gs__store_init(struct gs_store *st, const struct gs_migparted *mp);
/* Free what the store holds and its lock. */
void gs__store_release(struct gs_store *st);

/* The index of the node or pod so named, or -1. */
int gs__store_find_node(const struct gs_store *s, const char *name);
int gs__store_find_pod(const struct gs_store *s, const char *ns, const char *name);

/* Insert or replace the node of that name; takes what n owns (n is left empty). A change in
 * how gpusched sees the node's GPUs queues an Event in node_events (and a log line). Returns
 * 0 or GS_ENOMEM. */
int gs__store_upsert_node(struct gs_store *s, struct gs_kube_node *n);
/* Insert or replace the pod of that namespace/name; takes p's reference to its constraints
 * (p->k is left NULL). The same pod (same UID) keeps its order, backoff and nomination, and a
 * bind of ours the update does not show yet; a new pod under an old name starts afresh.
 * Returns 0 or GS_ENOMEM. */
int gs__store_upsert_pod(struct gs_store *s, struct gs_kube_pod *p);

/* Remove the node or pod so named, if there (a pod's UID is remembered as gone). */
void gs__store_delete_node(struct gs_store *s, const char *name);
void gs__store_delete_pod(struct gs_store *s, const char *ns, const char *name);
/* Whether the pod with this UID was seen deleted lately. */
bool gs__store_pod_gone(const struct gs_store *s, const char *uid);
/* Replace every node with the n in v (a complete list); takes what each owns (each is left
 * empty). Every node is reported as new (gs__store_upsert_node). Returns 0 or the first
 * error (the others are still stored). */
int gs__store_replace_nodes(struct gs_store *s, struct gs_kube_node *v, int n);
/* Replace every pod with the n in v (a complete list); takes each one's reference to its
 * constraints. A pod that stays (same UID) keeps its order and backoff. Returns 0 or the
 * first error (the others are still stored). */
int gs__store_replace_pods(struct gs_store *s, struct gs_kube_pod *v, int n);

#endif
