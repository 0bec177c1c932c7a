/* cyclein.h - a scheduling cycle's input: the snapshot of the store (sched/snapshot.h) and the
 * tenancy objects turned into core/cycle.h's struct gs_cycle_in: the tenancy (queues, gangs,
 * running pods, PDBs), the pending pods of ours that may be placed (those whose objects say
 * they cannot go anywhere are set aside as waits, with why; a pod with scheduling gates is
 * never given to the cycle, so it is neither placed, nominated, a reason to preempt, a holder
 * of quota or DRA devices, nor a member its gang can count), the Kubernetes constraints, the
 * DRA claims (sched/claims.h; stale reservations released first) and the cycle's hooks: taints,
 * constraints, bound volumes, resources the engine counts roughly, DRA claims.
 *
 * The cycle's output (sched/cycleout.c) reads the same struct: which pod is which, why a pod
 * waits, what the hooks refused. A struct gs__cycle belongs to the thread that runs the
 * cycle; it reads the store, the tenancy feed and the DRA feed through their APIs (each takes
 * its own lock) and changes nothing but a pod's adopted nomination (gs__store_adopt). */
#ifndef GS_SCHED_CYCLEIN_H
#define GS_SCHED_CYCLEIN_H

#include "../core/cycle.h"
#include "claims.h"
#include "snapshot.h"
#include "tenancy.h"
#include "topology.h"
#include "volbind.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>

struct gs_store;
struct gs__cycleout;
struct gs__hooks;

/* What every cycle reads from (none owned). */
struct gs__cycle_deps {
    struct gs_store *store;
    struct gs_policy_feed *policy;
    struct gs_claims *claims; /* NULL: no DRA feed */
    const char *scheduler_name;
    bool dry; /* explain: decide, record why, change nothing */
    bool dynamic_mig;
    double recarve_hold_s, min_runtime_s;
    const struct gs_topo_levels *topo_flag; /* --topology-levels (NULL: none) */
    struct gs_volassume *vols; /* volumes chosen for binds in flight (NULL: none kept) */
};

/* A pending pod that waits before the cycle runs: its verdict. */
struct gs__wait {
    int pod; /* in the snapshot */
    int queue;
    const char *category;
    bool gated; /* spec.schedulingGates: reported only (no Event, condition or backoff) */
    char msg[1400];
};

struct gs__cycle {
    const struct gs__cycle_deps *d;
    struct gs__cycleout *out; /* the output's (opaque here) */
    struct gs_snapshot *sn;
    struct gs_cluster *c; /* the snapshot's */
    struct gs_policy_objs po;
    struct gs_tenancy ty;
    json_t *report;       /* the verdicts of this cycle, in order */
    json_t *stale_writes; /* claim releases to write (sequences: sched/binder.h), or NULL */
    double now_wall, t0;  /* wall clock at the start; monotonic, for latencies */
    int8_t *leaving;      /* per node: a pod there is terminating (NULL: none known) */
    /* Kubernetes placement constraints: the placed pods (borrowed from the snapshot) and one
     * pod's precomputation; NULL without memory */
    struct gs_kstate *ks;
    struct gs_kprep *kp;
    struct gs_claims_cycle dra_state;
    struct gs_claims_cycle *dra; /* &dra_state, or NULL without a feed */
    struct gs_volbind *vb;       /* the pods' volumes (NULL until prepared) */
    /* the pods given to the cycle: idx[k] is cycle pod k's index in the snapshot */
    struct gs_cyc_pod *cpods;
    int *idx;
    int ncp, waiting; /* waiting: pending pods of ours */
    struct gs_cyc_gang *gangs;
    int *gang_gated; /* per gang: members held back by spec.schedulingGates */
    const char **run_ns;
    uint8_t *fixed;
    struct gs__wait *waits;
    int nwaits, capwaits;
    struct gs__hooks *h;
    struct gs__topology *topo; /* gangs' topology asks and the domains (sched/topology.h) */
    struct gs_cycle_in in;
};

/* Take the snapshot and the tenancy objects (cy zeroed first). Returns 0 or GS_ENOMEM (cy is
 * then released). */
int gs__cycle_take(struct gs__cycle *cy, const struct gs__cycle_deps *d);
/* Build cy->in from what gs__cycle_take took (and what the output marked on the snapshot
 * since: re-carves in flight). Returns 0 or GS_ENOMEM. */
int gs__cycle_prepare(struct gs__cycle *cy);
/* Run core/cycle.h on the engine engine(ctx, nodes) gives for the cluster (NULL: no memory),
 * then settle the hooks (the counts below are final then). Returns 0 or GS_ENOMEM. */
int gs__cycle_run(struct gs__cycle *cy, struct gs_engine *(*engine)(void *ctx, int nodes),
                  void *ctx, struct gs_cycle_out *out);
void gs__cycle_release(struct gs__cycle *cy);

/* A pending pod's claims resolved (sched/volbind.h: gs_volbind_pod): 0, or 1 with why when the
 * pod must wait everywhere. */
int gs__cycle_pod_volumes(const struct gs__cycle *cy, const struct gs_kube_pod *p,
                          struct gs_volpod *vp, char *why, size_t n);
/* kube-scheduler's volume filters for the pod on node: GS_VOLR_OK or why not. */
int gs__cycle_volumes_fit(const struct gs__cycle *cy, const struct gs_volpod *vp, int node);
/* For cycle pod k: the nodes refused for its volumes, by why (GS_VOLR_COUNT counts, [0]
 * unused); whether a node was refused for its DRA claims. */
const int *gs__cycle_vol_refused(const struct gs__cycle *cy, int k);
bool gs__cycle_dra_refused(const struct gs__cycle *cy, int k);
/* Cycle pod k's nodes refused for its NVIDIA ComputeDomain (sched/topology.h): [0] without a
 * clique label, [1] in another clique than its domain's pods. */
const int *gs__cycle_cd_refused(const struct gs__cycle *cy, int k);

#endif
