/* preempt.h - choosing victims for a pod that does not fit: priority preemption within a
 * queue, reclaim across queues, whole gangs, PodDisruptionBudgets, a minimum run time.
 *
 * A running pod may be a victim of a preemptor when it has run at least min_runtime_s and
 *   - it is in the preemptor's queue (or either has no queue) and has strictly lower
 *     priority (preemption), or
 *   - it is in another queue, the preemptor is owed its share (GS_ADMIT_OWED) and evicting
 *     it keeps the victim's queue at or above its deserved share (reclaim).
 * A gang member is evicted with its whole gang or not at all (every member must be a valid
 * victim). A set of victims is valid when, once they are gone, the preemptor fits the node
 * (a free MIG slot of its profile, whole GPUs, a milli share on one GPU, CPU, memory) and no
 * PodDisruptionBudget loses more pods than it allows. Among valid sets, the one that loses
 * the fewest GPU-hours (run time x GPU-equivalents), then the fewest pods, wins; each node's
 * candidates are searched exhaustively up to GS_PREEMPT_EXACT groups, greedily and then
 * pruned beyond. The cluster is changed during the search and restored before returning. */
#ifndef GS_PREEMPT_H
#define GS_PREEMPT_H

#include "engine.h"
#include "tenant.h"

#define GS_PREEMPT_MAX_VICTIMS 64
#define GS_PREEMPT_EXACT       10

struct gs_running {
    int32_t node;
    struct gs_request req;
    struct gs_alloc alloc;
    int32_t queue; /* GS_QUEUE_NONE when not queued */
    int32_t priority;
    double start_s;
    int32_t gang; /* 0..ngangs-1, or -1 */
    int32_t pdb;  /* 0..npdb-1, or -1 */
    struct gs_qvec demand;
};

/* What core does not model and the caller does (a driver's DRA devices), for one preemptor:
 * give(ctx, run, true) gives running pod run's further resources back (it is a victim being
 * tried), give(ctx, run, false) takes them again; fits(ctx, node) says whether the
 * preemptor's further needs fit node as things stand. A set of victims is valid only when
 * fits says so too. */
struct gs_preempt_extra {
    void (*give)(void *ctx, int32_t run, bool gone);
    bool (*fits)(void *ctx, int32_t node);
    void *ctx;
};

struct gs_preempt_ctx {
    const struct gs_running *run;
    int32_t nrun;
    int32_t ngangs;
    const int32_t *pdb_allowed; /* disruptions each budget still allows */
    int32_t npdb;
    const struct gs_tenants *tenants; /* NULL: priorities only */
    double now_s, min_runtime_s;
    const uint8_t *taken; /* per running pod: already chosen as a victim (NULL: none) */
    const struct gs_preempt_extra *extra; /* NULL: devices core models only */
};

struct gs_preemptor {
    const struct gs_request *req;
    int32_t queue, priority;
    bool owed; /* within its deserved share: may reclaim */
};

struct gs_preempt_plan {
    int32_t node;
    struct gs_alloc alloc; /* the preemptor's devices once the victims are gone */
    int32_t nvictims;
    int32_t victims[GS_PREEMPT_MAX_VICTIMS]; /* indexes into ctx->run */
    double gpu_hours;                        /* lost */
    int32_t candidates;                      /* running pods that were valid victims */
};

/* Find the cheapest valid victim set over all nodes. Returns 0 and fills out, GS_ENOFIT
 * when no set works, GS_ENOMEM. */
int gs_preempt_plan(struct gs_engine *e, struct gs_cluster *c, const struct gs_preempt_ctx *ctx,
                    const struct gs_preemptor *p, struct gs_preempt_plan *out);

/* Victims for a whole gang of n members (reqs[i]; queue, priority and owed from p, whose req
 * is ignored). Members that fit as things stand are placed first; each of the others then
 * gets the cheapest valid victim set (gs_preempt_plan) among the pods not chosen yet, with
 * the victims chosen so far gone (on every node, a victim gang whole), their budgets spent
 * and their share released from t (the same object as ctx->tenants, or NULL), and the
 * members placed so far in place. plans[i] is member i's node and devices and the victims
 * chosen for it (none when it fit). All or nothing: GS_ENOFIT when any member finds no
 * place. ctx->extra is not used. The cluster and t are as they were on return. */
int gs_gang_preempt(struct gs_engine *e, struct gs_cluster *c, struct gs_tenants *t,
                    const struct gs_preempt_ctx *ctx, const struct gs_preemptor *p,
                    const struct gs_request *const *reqs, int n, struct gs_preempt_plan *plans);

/* GPU-hours a running pod has used so far (the loss if it is evicted now). */
double gs_running_gpu_hours(const struct gs_running *r, double now_s);

#endif
