/* cycle.h - one scheduling cycle, the same code for the scheduler daemon and the simulator.
 *
 * The cycle takes a snapshot (the cluster with every running pod bound on it, the running
 * pods as victim candidates, the tenants with their usage charged), the pending pods and
 * gangs, and returns decisions as data, in the order they are to be applied:
 *   BIND         bind a pod to a node with these devices
 *   EVICT        evict a running pod (in->run[victim]) for a pending pod
 *   NOMINATE     hold devices on a node for a pod while its victims leave or its GPU is
 *                re-carved; it binds in a later cycle once they are free (the driver keeps
 *                the nomination and passes it back in gs_cyc_pod.nominated)
 *   REPARTITION  give a GPU a new MIG layout (or switch its mode) for a pending pod
 *   WAIT         a pod stays pending, and why (category, reasons per node)
 *
 * Order and rules, one for both drivers:
 *   - Pods nominated earlier go first, to their nominated node, whether or not they are due:
 *     nothing else may take what was freed for them. A device on a GPU being re-carved is
 *     held (NOMINATE again) until the change is done, then bound.
 *   - The other due pods in queue order: priority (higher first), within deserved share
 *     before borrowing, the queue's priority, the queue's weighted dominant share (lower
 *     first), arrival (seq).
 *   - Admission: a pod over its queue's limit or its namespace's hard cap waits (quota); its
 *     demand is its request's plus what it claims (gs_cyc_pod.claimed).
 *   - Placement with the engine (gs_engine_place_k with the driver's constraints). A request
 *     identical to one that found no node in this cycle is not tried again (pods without
 *     constraints only).
 *   - When it does not fit: with dynamic MIG, a re-carve that destroys nothing in use
 *     (core/recarve); else preemption (core/preempt: victims by priority and reclaim, whole
 *     gangs, budgets, minimum run time, fewest GPU-hours lost), not for a pod whose
 *     nomination is still live nor one that never preempts; else, with dynamic MIG, a
 *     re-carve that evicts lower-priority pods from the instances in its way.
 *   - A gang (its pending members, at most GS_CYCLE_GANG_MAX) is placed whole or not at all
 *     when at least its minMember pods exist (running ones count), else it waits; when it
 *     does not fit, its members preempt together (gs_gang_preempt). Gangs do not re-carve.
 * The cluster and the tenants are changed as the decisions say (binds, holds, evictions,
 * new layouts): after the call they describe the cluster once the decisions are applied.
 * Deterministic for equal inputs. Not thread-safe for one engine. */
#ifndef GS_CYCLE_H
#define GS_CYCLE_H

#include "constraints.h"
#include "engine.h"
#include "preempt.h"
#include "recarve.h"
#include "tenant.h"
#include "topo.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_CYCLE_GANG_MAX 256

enum gs_cyc_kind {
    GS_CYC_BIND = 0,
    GS_CYC_EVICT,
    GS_CYC_NOMINATE,
    GS_CYC_REPARTITION,
    GS_CYC_WAIT,
    GS_CYC_KINDS
};

/* Why a pod waits. */
enum gs_cyc_why {
    GS_WHY_FIT = 0,     /* no node fits (reasons in r) */
    GS_WHY_QUOTA,       /* over a queue limit or a namespace cap */
    GS_WHY_BORROW,      /* beyond its deserved share and no idle capacity fits */
    GS_WHY_GANG_SHORT,  /* fewer than minMember pods exist */
    GS_WHY_GANG,        /* a member does not fit (failed, r) */
    GS_WHY_PREEMPTING,  /* its victims are leaving */
    GS_WHY_RECARVING,   /* a GPU is being re-carved for it */
    GS_WHY_CONSTRAINTS, /* the driver's constraints could not be prepared */
    GS_WHY_TOPOLOGY,    /* a gang's required topology level: no domain holds it (topo_room) */
    GS_WHY_COUNT
};

struct gs_cyc_pod {
    struct gs_request req;
    int32_t priority;
    int32_t queue;        /* tenant queue, GS_QUEUE_NONE */
    int32_t gang;         /* 0..ngangs-1, or -1 */
    const char *ns;       /* for namespace caps (may be NULL) */
    uint64_t seq;         /* arrival order */
    int32_t nominated;    /* node nominated in an earlier cycle, or -1 */
    bool nomination_live; /* its victims or re-carve are still pending: no new preemption */
    bool preempt_never;   /* preemptionPolicy: Never */
    bool due;             /* out of backoff: tried in this cycle (nominated pods always are) */
    /* what it holds outside req, charged to its queue with req: devices of its DRA claims
     * (sched/claims.c); zero for none */
    struct gs_qvec claimed;
};

struct gs_cyc_gang {
    int32_t min_member;
    int32_t running;         /* members already bound */
    struct gs_topo_ask topo; /* the level it asks (in->topo's), zero: none */
    /* the domains its level indexes when not in->topo's (a gang of another Topology); NULL:
     * in->topo */
    struct gs_topo *domains;
};

/* The driver's per-pod Kubernetes constraints (all may be NULL: none). prepare fills k for
 * pod (taints, affinity, spread, ports, further resources) and returns 0, or a negative
 * value when the pod cannot be placed for a reason the driver words (WAIT CONSTRAINTS);
 * allows (between prepare and the next prepare) says whether a node may take the pod apart
 * from its devices, for preemption and re-carving; placed tells the driver a pod took a
 * node (BIND or NOMINATE) so its constraint state follows. */
struct gs_cyc_hooks {
    int (*prepare)(void *ctx, int pod, struct gs_kplace *k);
    bool (*allows)(void *ctx, int pod, int node);
    void (*placed)(void *ctx, int pod, int node);
    /* devices the driver allocates itself (DRA claims), for preemption (both NULL: none):
     * give(ctx, run, true) gives in->run[run]'s devices back, give(ctx, run, false) takes
     * them again (core/preempt.h, gs_preempt_extra); fits(ctx, pod, node) says whether pod's
     * devices can be had on node as things stand. The cycle gives an evicted pod's devices
     * back for good (every eviction); a victim set found by preemption is valid only when
     * fits says so too (gangs: devices of the cluster only), and a nominated pod takes its
     * node only when fits says so. allows should leave them out for pods preemption is to
     * weigh them for (a node allows refuses is never searched). */
    void (*give)(void *ctx, int run, bool gone);
    bool (*fits)(void *ctx, int pod, int node);
    void *ctx;
    /* for gangs (NULL: none): how many times, up to max, pod's driver devices (its DRA
     * claims, as its gang's members from one template have them) can be had on node as
     * things stand; a gang puts no more members on a node than its first member's count
     * there, so that members whose devices the engine does not count still spread */
    int (*copies)(void *ctx, int pod, int node, int max);
};

struct gs_cyc_opts {
    bool preempt;  /* priority preemption and reclaim */
    bool recarve;  /* dynamic MIG */
    double hold_s; /* a GPU re-carved is not changed again for this long (hysteresis) */
    double min_runtime_s;
};

struct gs_cycle_in {
    struct gs_cluster *c;
    struct gs_engine *e;
    struct gs_tenants *t; /* NULL: no tenancy */
    const struct gs_cyc_pod *pods;
    int32_t npods;
    const struct gs_cyc_gang *gangs;
    int32_t ngangs;
    struct gs_running *run; /* running pods (victim candidates); evicted ones get node -1 */
    int32_t nrun;
    const char *const *run_ns; /* per running pod: namespace (NULL: none) */
    const int32_t *pdb_allowed;
    int32_t npdb;
    const uint8_t *busy;     /* per GPU: being re-carved (NULL: none) */
    const uint8_t *fixed;    /* per GPU: never re-carved, e.g. no agent applies layouts there
                                (NULL: none) */
    const double *changed_s; /* per GPU: when its layout last changed (NULL: never) */
    double now_s;
    struct gs_cyc_opts o;
    struct gs_cyc_hooks h;
    /* the cluster's topology domains (gs_topo_build for c), NULL: none, every decision as
     * without. Gangs that ask a level are placed by gs_topo_gang_place (no preemption for
     * them); with shapes set, pods outside such gangs are steered by gs_topo_small_domain
     * (placed anywhere when its domain refuses them). */
    struct gs_topo *topo;
};

struct gs_cyc_decision {
    uint8_t kind; /* enum gs_cyc_kind */
    uint8_t why;  /* WAIT: enum gs_cyc_why */
    uint8_t mode; /* REPARTITION: GS_GPU_MIG or GS_GPU_WHOLE */
    bool mode_change;
    int32_t pod;                      /* the pending pod the decision is for (every kind) */
    int32_t victim;                   /* EVICT: index into in->run */
    int32_t node;                     /* BIND, NOMINATE, REPARTITION */
    int32_t gpu;                      /* REPARTITION */
    struct gs_mig_placement layout;   /* REPARTITION: every instance afterwards, by start */
    uint8_t ndestroy, ncreate;        /* REPARTITION */
    int8_t remap[GS_MIG_COMPUTE_MAX]; /* REPARTITION: old instance index -> new (-1: gone);
                                         allocations on the GPU follow it */
    struct gs_alloc alloc;            /* BIND, NOMINATE */
    double gpu_hours;                 /* EVICT: lost with this victim */
    int32_t failed;                   /* WAIT GANG: the member that did not fit */
    int32_t candidates;               /* WAIT FIT: valid victims preemption saw */
    int32_t topo_room;                /* WAIT TOPOLOGY: the most pods one domain of the level
                                         asked could take (the level: the gang's ask) */
    struct gs_reasons r;              /* WAIT FIT, GANG */
};

struct gs_cycle_out {
    struct gs_cyc_decision *d;
    int32_t n, cap;
    int32_t count[GS_CYC_KINDS];
    int32_t preemptions; /* victim sets chosen (a gang's counts once) */
};

/* Engine capacity for a cluster of nnodes nodes: the daemon and the simulator size their
 * engines alike (room to grow), since the engine's tie-break order depends on its size. */
int gs_cycle_engine_nodes(int nnodes);

void gs_cycle_out_init(struct gs_cycle_out *o);
void gs_cycle_out_release(struct gs_cycle_out *o);

/* Run one cycle. Returns 0 (out holds the decisions, appended), or GS_ENOMEM / GS_EINTERNAL
 * (out then holds the decisions so far; the cluster matches them). */
int gs_cycle_run(const struct gs_cycle_in *in, struct gs_cycle_out *out);

/* "BIND ai/x -> node-3 mig=0:3g.40gb@4" style line for logs and the comparison test:
 * kind, pod, node, GPU and devices (names come from the caller). */
const char *gs_cyc_kind_name(int kind);
const char *gs_cyc_why_name(int why);

#endif
