/* scenario.c - the discrete-event simulator behind `gpusched sim` and `make run`: one run of a
 * scenario under a strategy (sim/scenario.h). It owns the simulated world and its clock: the
 * cluster sim/build.c builds for the strategy, the pods, which it places with the scheduling
 * cycle (core/cycle.c) and runs at the speed their GPU share allows (processor sharing on
 * time-sliced and MPS GPUs, compute slices on MIG instances), the queue, and the event loop
 * (sim/evheap.h) that ends in the run's results. Strategies with priority also run tenancy:
 * each tenant is a queue whose quota is its deserved share (idle capacity beyond it is
 * borrowed), pods of higher priority preempt lower ones in their queue, owed queues reclaim
 * from borrowers (core/preempt.c picks the victims), and gangs start all at once or not at
 * all. Services are sim/deploy.c's (it shares struct sim through sim/run.h); the strategy
 * table and the runs of every strategy are sim/strategy.c's. */
#include "../base/buf.h"
#include "../base/clock.h"
#include "../base/error.h"
#include "../formats/decision.h"
#include "../formats/dracycle.h"
#include "build.h"
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push(struct sim *s, double t, int type, int id, uint32_t version)
{
    return gs_evheap_push(&s->h, t, type, id, version);
}

static double sample_duration(struct sim *s, const struct gs_sc_class *k)
{
    switch (k->dist) {
    case GS_DIST_FIXED:
        return k->mean_s;
    case GS_DIST_EXP:
        return gs_rng_exp(&s->rng, k->mean_s);
    default:
        return gs_rng_lognormal(&s->rng, k->median_s, k->sigma);
    }
}

static double device_rate(const struct sim *s, const struct pod *p, int k)
{
    const struct gs_gpu *g = &s->c.gpus[p->alloc.gpu[k]];
    const struct gpu_rt *rt = &s->grt[p->alloc.gpu[k]];
    double u = p->util > 0 ? p->util : 1;
    switch (g->mode) {
    case GS_GPU_MIG: {
        const struct gs_mig_profile *pr =
            &gs_catalog_get(g->model)->profiles[g->mig.inst[p->alloc.slot[k]].profile];
        double f = gs_mig_profile_compute_share(pr); /* of the model's own grid */
        return f >= u ? 1.0 : f / u;
    }
    case GS_GPU_TIMESLICE: {
        if (rt->npods <= 1)
            return 1.0;
        double cap = 0.9; /* context switches between time slices cost throughput */
        return rt->load <= cap ? 1.0 : cap / rt->load;
    }
    case GS_GPU_MPS: {
        double r = rt->load <= 1.0 ? 1.0 : 1.0 / rt->load;
        double limit = 1.0 / (g->replicas ? g->replicas : 1); /* active thread percentage */
        double capr = limit >= u ? 1.0 : limit / u;
        return r < capr ? r : capr;
    }
    case GS_GPU_FRACTION: {
        double f = p->alloc.milli / (double)GS_MILLI;
        return f >= u ? 1.0 : f / u;
    }
    default:
        return 1.0;
    }
}

double gs__sim_pod_used(const struct pod *p)
{
    if (p->req.kind == GS_REQ_NONE)
        return 0;
    double per = p->util * p->rate * p->busy;
    return per * (p->alloc.ndev ? p->alloc.ndev : 1);
}

static void settle(struct sim *s, struct pod *p)
{
    double dt = s->now - p->last;
    if (dt > 0) {
        p->work_left -= p->rate * dt;
        if (p->work_left < 0)
            p->work_left = 0;
        if (p->measured) {
            p->rate_sum_dt += p->rate * dt;
            p->run_dt += dt;
        }
    }
    p->last = s->now;
}

/* Recompute the rate of a running pod; reschedule its completion when it changed. */
static int update_rate(struct sim *s, int pi)
{
    struct pod *p = &s->pods[pi];
    if (p->state != P_RUNNING)
        return 0;
    double r = 1.0;
    for (int k = 0; k < p->alloc.ndev; k++) {
        double d = device_rate(s, p, k);
        if (d < r)
            r = d;
    }
    if (r == p->rate && p->version)
        return 0;
    settle(s, p);
    s->used_units -= gs__sim_pod_used(p);
    p->rate = r;
    s->used_units += gs__sim_pod_used(p);
    p->version++;
    return push(s, s->now + p->work_left / (r > 1e-9 ? r : 1e-9), EV_COMPLETE, pi, p->version);
}

static int rt_add(struct gpu_rt *rt, int pi)
{
    if (GS__SIM_ROOM(rt->pods, rt->npods, rt->cap, 8))
        return GS_ENOMEM;
    rt->pods[rt->npods++] = pi;
    return 0;
}

static void rt_remove(struct gpu_rt *rt, int pi)
{
    for (int i = 0; i < rt->npods; i++)
        if (rt->pods[i] == pi) {
            rt->pods[i] = rt->pods[--rt->npods];
            return;
        }
}

/* Pod pi no longer loads the time-sliced and MPS GPUs it holds. */
static void leave_gpus(struct sim *s, int pi)
{
    const struct pod *p = &s->pods[pi];
    for (int k = 0; k < p->alloc.ndev; k++) {
        int g = p->alloc.gpu[k];
        if (gs__sim_replica_gpu(&s->c.gpus[g])) {
            rt_remove(&s->grt[g], pi);
            s->grt[g].load -= p->util * p->busy;
            s->grt[g].mem -= p->gpu_mem;
        }
    }
}

/* Re-rate everything sharing the pod's GPUs. */
static int rerate_neighbours(struct sim *s, int pi)
{
    struct pod *p = &s->pods[pi];
    for (int k = 0; k < p->alloc.ndev; k++) {
        int g = p->alloc.gpu[k];
        if (!gs__sim_replica_gpu(&s->c.gpus[g]))
            continue;
        for (int j = 0; j < s->grt[g].npods; j++) {
            int rc = update_rate(s, s->grt[g].pods[j]);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static bool queue_before(const struct sim *s, int a, int b)
{
    const struct pod *pa = &s->pods[a], *pb = &s->pods[b];
    if (s->st->priority) {
        int n = s->sc->nclasses;
        int32_t qa = pa->cls >= 0 && pa->cls < n ? s->sc->classes[pa->cls].priority : 0;
        int32_t qb = pb->cls >= 0 && pb->cls < n ? s->sc->classes[pb->cls].priority : 0;
        if (qa != qb)
            return qa > qb;
    }
    if (pa->first_arrival != pb->first_arrival)
        return pa->first_arrival < pb->first_arrival;
    return a < b;
}

static int enqueue(struct sim *s, int pi)
{
    if (GS__SIM_ROOM(s->queue, s->nqueue, s->cap_queue, 256))
        return GS_ENOMEM;
    int i = s->nqueue++;
    while (i > 0 && queue_before(s, pi, s->queue[i - 1])) {
        s->queue[i] = s->queue[i - 1];
        i--;
    }
    s->queue[i] = pi;
    s->pods[pi].state = P_PENDING;
    return 0;
}

static int pod_queue(const struct sim *s, const struct pod *p)
{
    if (!s->tenancy || p->cls < 0 || p->cls >= s->sc->nclasses)
        return GS_QUEUE_NONE;
    return s->sc->classes[p->cls].tenant;
}

static int32_t pod_prio(const struct sim *s, const struct pod *p)
{
    return p->cls >= 0 && p->cls < s->sc->nclasses ? s->sc->classes[p->cls].priority : 0;
}

static void charge(struct sim *s, int pi, int sign)
{
    s->run_dirty = true;
    if (!s->tenancy)
        return;
    struct gs_qvec d;
    gs_tenants_demand(&s->t, &s->pods[pi].req, &d);
    gs_tenants_charge(&s->t, pod_queue(s, &s->pods[pi]), NULL, &d, sign);
}

/* Start pod pi on devices a. bound: the cycle already bound it on the cluster and charged
 * its queue. */
static int start_pod(struct sim *s, int pi, const struct gs_alloc *a, bool bound)
{
    struct pod *p = &s->pods[pi];
    int rc = 0;
    bool was_dirty = s->run_dirty;
    if (!bound && gs_cluster_bind(&s->c, &p->req, a))
        return gs_error_set(NULL, GS_EINTERNAL, "bind");
    p->alloc = *a;
    if (!bound)
        charge(s, pi, +1);
    s->run_dirty = true;
    p->run_start = s->now;
    if (p->svc >= 0)
        p->busy = 0; /* a replica starting up serves nothing yet */
    for (int k = 0; k < p->alloc.ndev; k++) {
        int g = p->alloc.gpu[k];
        if (gs__sim_replica_gpu(&s->c.gpus[g])) {
            if ((rc = rt_add(&s->grt[g], pi)))
                return rc;
            s->grt[g].load += p->util * p->busy;
            s->grt[g].mem += p->gpu_mem;
        }
    }
    /* time-slicing does not isolate memory: a GPU holding more than it has OOMs the pod */
    bool oom = false;
    for (int k = 0; k < p->alloc.ndev; k++) {
        const struct gs_gpu *g = &s->c.gpus[p->alloc.gpu[k]];
        if (g->mode == GS_GPU_TIMESLICE &&
            s->grt[p->alloc.gpu[k]].mem > (int64_t)gs_catalog_get(g->model)->mem_mib)
            oom = true;
    }
    if (!p->started) {
        p->started = true;
        p->start = s->now;
    }
    p->state = P_RUNNING;
    p->last = s->now;
    p->rate = 0;
    p->version = 0;
    if (oom) {
        p->oom = true;
        leave_gpus(s, pi);
        gs_cluster_unbind(&s->c, &p->req, &p->alloc);
        charge(s, pi, -1);
        s->run_dirty = was_dirty; /* it never ran: the running pods are as they were */
        p->state = P_BACKOFF;
        p->started = false;
        return push(s, s->now + 60.0, EV_RETRY, pi, 0);
    }
    if ((rc = update_rate(s, pi)))
        return rc;
    return rerate_neighbours(s, pi);
}

static int evict_pod(struct sim *s, int pi);
static int build_run(struct sim *s);

/* What victim choice sees: the running pods (build_run first) and the tenants. */
static int cyc_add_pod(struct sim *s, int pi, int n)
{
    if (GS__SIM_ROOM(s->cyc, n, s->cap_cyc, 256))
        return GS_ENOMEM;
    const struct pod *p = &s->pods[pi];
    struct gs_cyc_pod *c = &s->cyc[n];
    memset(c, 0, sizeof(*c));
    c->req = p->req;
    c->priority = s->st->priority ? pod_prio(s, p) : 0;
    c->queue = pod_queue(s, p);
    c->gang = p->gang;
    c->seq = (uint64_t)n;
    c->nominated = -1;
    c->due = true;
    return 0;
}

/* A pod's name in decision lines: its class's name and its number in the class. */
void gs__sim_pod_name(const struct sim *s, int pi, char *out, size_t n)
{
    const struct pod *p = &s->pods[pi];
    const char *cls =
        p->cls >= 0 && p->cls < s->sc->nclasses ? s->sc->classes[p->cls].name : "trace";
    snprintf(out, n, "%s-%d", cls, (int)p->ord);
}

/* A pod nominated onto a GPU being re-carved waits for it; it starts when the change is done. */
static bool alloc_busy(const struct sim *s, const struct gs_alloc *a)
{
    for (int k = 0; k < a->ndev; k++)
        if (s->busy[a->gpu[k]])
            return true;
    return false;
}

/* ---------- DRA claims ---------- */

/* The dra groups' slices and the claim classes' claims (gs_simbuild_dra), the scheduler's
 * claim cycle kept across passes (the devices bound pods hold stay taken in it), each claim
 * prepared once, and per pod the devices its claim holds. */
struct gs__simdra {
    struct gs_simbuild_dra b;
    struct gs_dracycle dc;
    bool dc_open;
    struct gs_draobj_prep prep[GS_SC_MAX_CLASSES];
    bool prepped[GS_SC_MAX_CLASSES];
    struct gs_dra_result *res; /* per pod */
    int cap_res;
};

static int32_t dra_node_id(void *ctx, const char *node)
{
    const struct sim *s = ctx;
    for (int n = 0; n < s->c.nnodes; n++)
        if (strcmp(s->c.nodes[n].name, node) == 0)
            return n;
    return -1;
}

static void dra_close(struct sim *s)
{
    struct gs__simdra *d = s->dra;
    if (!d)
        return;
    for (int k = 0; k < GS_SC_MAX_CLASSES; k++)
        if (d->prepped[k])
            gs_draobj_prep_release(&d->prep[k]);
    if (d->dc_open)
        gs_dracycle_release(&d->dc);
    gs_simbuild_dra_release(&d->b);
    free(d->res);
    free(d);
    s->dra = NULL;
}

/* The claim cycle of a scenario with dra groups or claims (none without). */
static int dra_open(struct sim *s, struct gs_error *err)
{
    struct gs__simdra *d = calloc(1, sizeof(*d));
    if (!d)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    int rc = gs_simbuild_dra(s->sc, &d->b, err);
    if (rc || (d->b.nslices == 0 && d->b.nclaims == 0)) {
        gs_simbuild_dra_release(&d->b);
        free(d);
        return rc;
    }
    s->dra = d;
    if (gs_dracycle_init(&d->dc, d->b.classes, 2, d->b.slices, d->b.nslices, d->b.claims,
                         d->b.nclaims, false, 0, dra_node_id, s))
        return gs_error_set(err, GS_ENOMEM, "cannot build the DRA world of the dra groups");
    d->dc_open = true;
    for (int k = 0; k < s->sc->nclasses && !rc; k++) {
        int c = d->b.claim_of[k];
        if (c < 0)
            continue;
        if ((rc =
                 gs_draobj_prepare(&d->b.claims[c], d->b.classes, 2, &d->dc.w.w, &d->prep[k], err)))
            return rc;
        d->prepped[k] = true;
    }
    return 0;
}

/* The pass's pods' claims (idx: the cycle's pods) borrowed by the claim cycle, its hooks
 * into in. */
static int dra_pass(struct sim *s, const int *idx, int n, struct gs_dracycle_hooks *h,
                    struct gs_cycle_in *in)
{
    struct gs__simdra *d = s->dra;
    int rc = gs_dracycle_next(&d->dc, n);
    for (int q = 0; q < n && !rc; q++) {
        int k = s->pods[idx[q]].cls;
        if (k >= 0 && k < s->sc->nclasses && d->b.claim_of[k] >= 0)
            rc = gs_dracycle_pod_borrow(&d->dc, q, d->b.claim_of[k], &d->prep[k]);
    }
    gs_dracycle_hooks_init(h, &d->dc, NULL, &in->h);
    return rc;
}

/* Cycle pod q (pod pi) was bound or nominated: the devices its claim got (if placed) are its
 * own. */
static int dra_bound(struct sim *s, int q, int pi)
{
    struct gs__simdra *d = s->dra;
    if (!d || !d->dc.pods[q] || !d->dc.pods[q]->placed)
        return 0;
    if (pi >= d->cap_res) {
        int cap = d->cap_res;
        while (cap <= pi)
            cap = cap ? 2 * cap : 256;
        struct gs_dra_result *v = realloc(d->res, sizeof(*v) * (size_t)cap);
        if (!v)
            return GS_ENOMEM;
        memset(v + d->cap_res, 0, sizeof(*v) * (size_t)(cap - d->cap_res));
        d->res = v;
        d->cap_res = cap;
    }
    d->res[pi] = d->dc.pods[q]->res[0];
    return 0;
}

/* Pod pi leaves: the devices of its claim are free again. */
static void dra_leave(struct sim *s, int pi)
{
    struct gs__simdra *d = s->dra;
    if (!d || pi >= d->cap_res)
        return;
    for (int j = 0; j < d->res[pi].n; j++)
        gs_dra_give(&d->dc.st, d->res[pi].dev[j]);
    d->res[pi].n = 0;
}

/* One cycle of core/cycle.c over the queue; its decisions applied to the simulated world:
 * victims leave at once (no grace period), so a pod nominated for its victims starts now; a
 * re-carve takes the time the scenario's reconfig costs say, and the pods nominated onto it
 * start when it is done. */
static int schedule_pass(struct sim *s)
{
    int rc = build_run(s);
    if (rc)
        return rc;
    int n = 0;
    for (int i = 0; i < s->nqueue && !rc; i++)
        if (s->pods[s->queue[i]].state == P_PENDING)
            rc = cyc_add_pod(s, s->queue[i], n++);
    if (rc || n == 0)
        return rc;
    int *idx = malloc(sizeof(int) * (size_t)n);
    struct gs_cyc_gang *gangs = calloc((size_t)s->ngangs + 1, sizeof(*gangs));
    if (!idx || !gangs) {
        free(idx);
        free(gangs);
        return GS_ENOMEM;
    }
    for (int i = 0, k = 0; i < s->nqueue; i++)
        if (s->pods[s->queue[i]].state == P_PENDING)
            idx[k++] = s->queue[i];
    for (int i = 0; i < n; i++) {
        const struct pod *p = &s->pods[idx[i]];
        if (p->gang >= 0 && p->cls >= 0 && p->cls < s->sc->nclasses)
            gangs[p->gang].min_member = s->sc->classes[p->cls].gang;
    }
    struct gs_cycle_in in = {.c = &s->c,
                             .e = s->e,
                             .t = s->tenancy ? &s->t : NULL,
                             .pods = s->cyc,
                             .npods = n,
                             .gangs = gangs,
                             .ngangs = s->ngangs,
                             .run = s->run,
                             .nrun = s->nrun,
                             .busy = s->busy,
                             .changed_s = s->changed_s,
                             .now_s = s->now,
                             .o = {.preempt = s->tenancy,
                                   .recarve = s->st->recarve,
                                   .hold_s = s->sc->reconf_hold_s,
                                   .min_runtime_s = s->sc->min_runtime_s}};
    struct gs_dracycle_hooks dh;
    if (s->dra)
        rc = dra_pass(s, idx, n, &dh, &in);
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    if (!rc)
        rc = gs_cycle_run(&in, &out);
    s->preemptions += out.preemptions;
    for (int k = 0; s->trace && k < out.n; k++) {
        const struct gs_cyc_decision *d = &out.d[k];
        char pod[GS_NAME_MAX + 16], victim[GS_NAME_MAX + 16], line[600];
        gs__sim_pod_name(s, idx[d->pod], pod, sizeof(pod));
        if (d->kind == GS_CYC_EVICT)
            gs__sim_pod_name(s, s->run_pod[d->victim], victim, sizeof(victim));
        gs_decision_line(&s->c, d, pod, d->kind == GS_CYC_EVICT ? victim : NULL, line,
                         sizeof(line));
        s->trace(s->trace_ctx, s->now, line);
    }
    /* the cycle changed the cluster and the tenants; the pods follow */
    int *victims = NULL, nv = 0;
    if (!rc && out.count[GS_CYC_EVICT] > 0 &&
        !(victims = malloc(sizeof(int) * (size_t)out.count[GS_CYC_EVICT])))
        rc = GS_ENOMEM;
    for (int k = 0; k < out.n && !rc; k++) {
        const struct gs_cyc_decision *d = &out.d[k];
        switch (d->kind) {
        case GS_CYC_WAIT:
            s->pods[idx[d->pod]].why = d->why;
            break;
        case GS_CYC_EVICT: {
            int vp = s->run_pod[d->victim];
            if (s->pods[vp].state == P_RUNNING && !(rc = evict_pod(s, vp)))
                victims[nv++] = vp;
            break;
        }
        case GS_CYC_REPARTITION: {
            /* instances in use may have moved within the GPU */
            for (int pi = 0; pi < s->npods; pi++) {
                struct pod *p = &s->pods[pi];
                if ((p->state != P_RUNNING && p->state != P_HELD) || p->req.kind != GS_REQ_MIG)
                    continue;
                for (int x = 0; x < p->alloc.ndev; x++)
                    if (p->alloc.gpu[x] == d->gpu && p->alloc.slot[x] >= 0)
                        p->alloc.slot[x] = d->remap[p->alloc.slot[x]];
            }
            struct gs_recarve_gpu g = {.gpu = d->gpu,
                                       .mode = d->mode,
                                       .mode_change = d->mode_change,
                                       .ndestroy = d->ndestroy,
                                       .ncreate = d->ncreate};
            double t = s->sc->reconf_notice_s + gs_recarve_seconds(&g, s->sc->reconf_destroy_s,
                                                                   s->sc->reconf_create_s,
                                                                   s->sc->reconf_mode_s);
            s->busy[d->gpu] = 1;
            s->changed_s[d->gpu] = s->now;
            s->recarves++;
            rc = push(s, s->now + t, EV_RECONF, d->gpu, 0);
            break;
        }
        case GS_CYC_BIND:
        case GS_CYC_NOMINATE: {
            int pi = idx[d->pod];
            struct pod *p = &s->pods[pi];
            p->alloc = d->alloc;
            if ((rc = dra_bound(s, d->pod, pi)))
                break;
            if (d->kind == GS_CYC_NOMINATE && alloc_busy(s, &d->alloc)) {
                p->state = P_HELD; /* the devices are held in the cluster */
                break;
            }
            rc = start_pod(s, pi, &d->alloc, true);
            break;
        }
        default:
            break;
        }
    }
    /* drop what started or is held; requeue the victims */
    int w = 0;
    for (int i = 0; i < s->nqueue; i++)
        if (s->pods[s->queue[i]].state == P_PENDING)
            s->queue[w++] = s->queue[i];
    s->nqueue = w;
    for (int k = 0; k < nv && !rc; k++)
        rc = enqueue(s, victims[k]);
    free(victims);
    gs_cycle_out_release(&out);
    free(idx);
    free(gangs);
    return rc;
}

/* A re-carve is done: the GPU is free again and the pods held on it start. */
static int reconf_done(struct sim *s, int gpu)
{
    s->busy[gpu] = 0;
    int rc = 0;
    for (int pi = 0; pi < s->npods && !rc; pi++) {
        struct pod *p = &s->pods[pi];
        if (p->state == P_HELD && !alloc_busy(s, &p->alloc))
            rc = start_pod(s, pi, &p->alloc, true);
    }
    return rc;
}

/* A pod leaves its devices. unbind: release them on the cluster and its queue (false: the
 * cycle already did, for a victim). */
static int finish_pod(struct sim *s, int pi, bool unbind)
{
    struct pod *p = &s->pods[pi];
    settle(s, p);
    s->used_units -= gs__sim_pod_used(p);
    p->state = P_DONE;
    leave_gpus(s, pi);
    dra_leave(s, pi);
    s->run_dirty = true;
    if (unbind) {
        if (gs_cluster_unbind(&s->c, &p->req, &p->alloc))
            return GS_EINTERNAL;
        charge(s, pi, -1);
    }
    return rerate_neighbours(s, pi);
}

/* A preempted pod loses its work and waits again (the caller requeues it). */
static int evict_pod(struct sim *s, int pi)
{
    struct pod *p = &s->pods[pi];
    double units = gs_request_units(&p->req, -1);
    int rc = finish_pod(s, pi, false);
    if (rc)
        return rc;
    s->lost_gpu_hours += (s->now - p->run_start) / 3600.0 * units;
    s->victims++;
    p->work_left = p->work_total;
    p->state = P_BACKOFF; /* not pending until requeued after the pass */
    p->version++;
    return 0;
}

static int build_run(struct sim *s)
{
    if (!s->run_dirty)
        return 0;
    s->nrun = 0;
    for (int pi = 0; pi < s->npods; pi++) {
        const struct pod *p = &s->pods[pi];
        if (p->state != P_RUNNING)
            continue;
        int cap = s->cap_run; /* run and run_pod grow together */
        if (GS__SIM_ROOM(s->run, s->nrun, cap, 256) ||
            GS__SIM_ROOM(s->run_pod, s->nrun, s->cap_run, 256))
            return GS_ENOMEM;
        struct gs_running *r = &s->run[s->nrun];
        memset(r, 0, sizeof(*r));
        r->node = p->alloc.node;
        r->req = p->req;
        r->alloc = p->alloc;
        r->queue = pod_queue(s, p);
        r->priority = pod_prio(s, p);
        r->start_s = p->run_start;
        r->gang = p->gang;
        r->pdb = -1;
        gs_tenants_demand(&s->t, &p->req, &r->demand);
        s->run_pod[s->nrun++] = pi;
    }
    s->run_dirty = false;
    return 0;
}

int gs__sim_new_pod(struct sim *s, int cls, double util, int32_t gmem, const struct gs_request *r,
                    double work, int32_t gang)
{
    if (GS__SIM_ROOM(s->pods, s->npods, s->cap_pods, 1024))
        return GS_ENOMEM;
    int pi = s->npods++;
    struct pod *p = &s->pods[pi];
    memset(p, 0, sizeof(*p));
    p->cls = cls;
    p->first_arrival = s->now;
    p->work_left = work;
    p->work_total = work;
    p->gang = gang;
    p->util = util;
    p->busy = 1.0;
    p->svc = -1;
    p->gpu_mem = gmem;
    p->req = *r;
    p->measured = s->now >= s->sc->warmup_s;
    p->ord = cls >= 0 && cls < GS_SC_MAX_CLASSES ? s->class_pods[cls]++ : 0;
    return enqueue(s, pi);
}

int gs__sim_set_busy(struct sim *s, int pi, double busy)
{
    struct pod *p = &s->pods[pi];
    if (p->state != P_RUNNING || p->busy == busy)
        return 0;
    settle(s, p);
    s->used_units -= gs__sim_pod_used(p);
    bool shared = false;
    for (int k = 0; k < p->alloc.ndev; k++) {
        int g = p->alloc.gpu[k];
        if (gs__sim_replica_gpu(&s->c.gpus[g])) {
            s->grt[g].load += p->util * (busy - p->busy);
            shared = true;
        }
    }
    p->busy = busy;
    s->used_units += gs__sim_pod_used(p);
    return shared ? rerate_neighbours(s, pi) : 0;
}

int gs__sim_delete_pod(struct sim *s, int pi)
{
    struct pod *p = &s->pods[pi];
    int rc = 0;
    p->end = s->now;
    switch (p->state) {
    case P_PENDING: {
        int w = 0;
        for (int i = 0; i < s->nqueue; i++)
            if (s->queue[i] != pi)
                s->queue[w++] = s->queue[i];
        s->nqueue = w;
        p->state = P_DONE;
        break;
    }
    case P_HELD:
        if (gs_cluster_unbind(&s->c, &p->req, &p->alloc))
            return GS_EINTERNAL;
        charge(s, pi, -1);
        p->state = P_DONE;
        break;
    case P_RUNNING:
        rc = finish_pod(s, pi, true);
        break;
    default:
        p->state = P_DONE; /* backing off: its retry finds it gone */
        break;
    }
    p->version++;
    return rc;
}

double gs__sim_pod_units(const struct sim *s, const struct pod *p, double *cost_h)
{
    double u = 0;
    *cost_h = 0;
    for (int k = 0; k < p->alloc.ndev; k++) {
        const struct gs_gpu *g = &s->c.gpus[p->alloc.gpu[k]];
        double x = gs__sim_replica_gpu(g)      ? 1.0 / (g->replicas ? g->replicas : 1)
                   : p->req.kind == GS_REQ_MIG ? gs_request_units(&p->req, g->model)
                                               : p->req.milli / 1000.0;
        u += x;
        *cost_h += x * s->sc->price[g->model];
    }
    return u;
}

static double alloc_now(const struct gs_cluster *c)
{
    double u = 0;
    for (int i = 0; i < c->ngpus; i++)
        u += gs_gpu_alloc_units(&c->gpus[i]);
    return u;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, int n, double q)
{
    if (n == 0)
        return 0;
    double idx = q * (n - 1);
    int lo = (int)floor(idx), hi = (int)ceil(idx);
    return v[lo] + (v[hi] - v[lo]) * (idx - lo);
}

/* ---------- the run ---------- */

/* The first arrival of each class and of each trace pod, the samples, the services. */
static int first_events(struct sim *s, struct gs_error *err)
{
    const struct gs_scenario *sc = s->sc;
    int rc = 0;
    for (int k = 0; k < sc->nclasses && !rc; k++) {
        const struct gs_sc_class *c = &sc->classes[k];
        if (c->service.on)
            continue; /* replicas, not arrivals (gs__deploy_start) */
        double t =
            c->start_s +
            (c->arrival == GS_ARRIVAL_POISSON ? gs_rng_exp(&s->rng, 3600.0 / c->per_hour) : 0);
        rc = push(s, t, EV_ARRIVAL, k, 0);
    }
    for (int i = 0; i < sc->ntrace && !rc; i++)
        rc = push(s, sc->trace[i].arrival_s, EV_ARRIVAL, GS_SC_MAX_CLASSES + i, 0);
    for (int i = 0; i < GS_SIM_SAMPLES && !rc; i++)
        rc = push(s, sc->duration_s * (i + 1) / GS_SIM_SAMPLES, EV_SAMPLE, i, 0);
    if (!rc)
        rc = gs__deploy_start(s);
    return rc ? gs_error_set(err, rc, "out of memory") : 0;
}

/* The world of one run: the cluster under the strategy, the tenants, the engine, the first
 * events. On error the caller still closes it (sim_close). */
static int sim_open(struct sim *s, const struct gs_scenario *sc, const struct gs_strategy *st,
                    const struct gs_sim_opts *o, struct gs_error *err)
{
    memset(s, 0, sizeof(*s));
    gs_evheap_init(&s->h);
    gs_tenants_init(&s->t);
    s->trace = o->trace;
    s->trace_ctx = o->trace_ctx;
    s->svc.fixed = o->fixed_services;
    s->sc = sc;
    s->st = st;
    gs_rng_init(&s->rng, sc->seed);
    int rc = gs_simbuild_cluster(sc, st, &s->c, err);
    if (rc)
        return rc;
    /* a class may share only GPUs that exist under this strategy and can hold its memory;
     * otherwise it gets dedicated GPUs */
    gs_simbuild_share_ok(sc, &s->c, s->share_ok);
    s->tenancy = st->priority && sc->ntenants > 0;
    if ((rc = gs_simbuild_tenants(sc, &s->c, s->tenancy, &s->t, err)))
        return rc;
    s->run_dirty = true;
    s->grt = calloc((size_t)(s->c.ngpus ? s->c.ngpus : 1), sizeof(*s->grt));
    s->busy = calloc((size_t)s->c.ngpus + 1, 1);
    s->changed_s = calloc((size_t)s->c.ngpus + 1, sizeof(double));
    s->e = gs_engine_new(gs_policy_find("gpusched"), NULL, gs_cycle_engine_nodes(s->c.nnodes),
                         sc->seed);
    if (!s->grt || !s->e || !s->busy || !s->changed_s)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    if ((rc = dra_open(s, err)))
        return rc;
    return first_events(s, err);
}

static void sim_close(struct sim *s)
{
    dra_close(s);
    gs_engine_free(s->e);
    for (int i = 0; s->grt && i < s->c.ngpus; i++)
        free(s->grt[i].pods);
    free(s->grt);
    free(s->pods);
    free(s->queue);
    gs_evheap_release(&s->h);
    free(s->run);
    free(s->run_pod);
    free(s->cyc);
    free(s->busy);
    free(s->changed_s);
    gs__deploy_release(&s->svc);
    gs_tenants_release(&s->t);
    gs_cluster_release(&s->c);
}

/* Pod i of the scenario's trace arrives; trace pods form one class (index 0) in the
 * statistics. */
static int trace_arrival(struct sim *s, int i)
{
    const struct gs_sc_trace_pod *tp = &s->sc->trace[i];
    struct gs_request r = {.cpu_milli = tp->cpu_milli, .mem_mib = tp->mem_mib};
    if (tp->gpus == 0) {
        r.kind = GS_REQ_NONE;
    } else if (tp->milli < GS_MILLI) {
        r.kind = GS_REQ_FRACTION;
        r.gpus = 1;
        r.milli = tp->milli;
    } else {
        r.kind = GS_REQ_GPU;
        r.gpus = (uint8_t)tp->gpus;
        r.milli = GS_MILLI;
    }
    return gs__sim_new_pod(s, 0, tp->milli / 1000.0, 0, &r, tp->duration_s, -1);
}

/* A job of class k arrives (a gang: all its pods), and the class's next arrival is due. */
static int class_arrival(struct sim *s, int k)
{
    const struct gs_sc_class *c = &s->sc->classes[k];
    /* a burst (fixed arrivals at interval 0s): every job of the class now, in one event, one
     * after another */
    bool burst = c->arrival == GS_ARRIVAL_FIXED && c->interval_s <= 0;
    int rc = 0;
    for (int j = 0; j < (burst ? c->max_jobs : 1) && !rc; j++) {
        if (c->max_jobs && s->class_jobs[k] >= c->max_jobs)
            break;
        struct gs_request r;
        bool shared;
        gs_simbuild_request(s->sc, s->st, s->share_ok, k, &r, &shared);
        s->class_jobs[k]++;
        double work = sample_duration(s, c);
        int32_t gang = c->gang > 1 ? s->ngangs++ : -1;
        for (int m = 0; m < (c->gang > 1 ? c->gang : 1) && !rc; m++)
            rc = gs__sim_new_pod(s, k, c->util, c->gpu_mem_mib, &r, work, gang);
    }
    double next = c->arrival == GS_ARRIVAL_POISSON
                      ? s->now + gs_rng_exp(&s->rng, 3600.0 / c->per_hour)
                      : s->now + c->interval_s;
    if (!rc && (c->stop_s <= 0 || next < c->stop_s) && !burst)
        rc = push(s, next, EV_ARRIVAL, k, 0);
    return rc;
}

/* Sample i of the run's time series. */
static void sample(struct sim *s, struct gs_sim_result *out, int i)
{
    out->t[i] = s->now;
    out->alloc_ts[i] = s->c.ngpus ? s->alloc_units / s->c.ngpus : 0;
    out->used_ts[i] = s->c.ngpus ? s->used_units / s->c.ngpus : 0;
    out->pending_ts[i] = s->nqueue;
    gs__deploy_sample(s, out, i);
    /* each team's allocated share of the GPUs, a replica counting 1/replicas */
    for (int pi = 0; s->tenancy && s->c.ngpus && pi < s->npods; pi++) {
        const struct pod *p = &s->pods[pi];
        int q = pod_queue(s, p);
        if (p->state != P_RUNNING || q < 0 || q >= GS_SC_MAX_TENANTS)
            continue;
        double cost_h;
        out->team_ts[q][i] += gs__sim_pod_units(s, p, &cost_h) / s->c.ngpus;
    }
}

/* One event; *sched: a scheduling pass is due. */
static int on_event(struct sim *s, const struct gs_event *ev, struct gs_sim_result *out,
                    bool *sched)
{
    int rc = 0;
    switch (ev->type) {
    case EV_ARRIVAL:
        rc = ev->id >= GS_SC_MAX_CLASSES ? trace_arrival(s, ev->id - GS_SC_MAX_CLASSES)
                                         : class_arrival(s, ev->id);
        *sched = true;
        break;
    case EV_COMPLETE: {
        struct pod *p = &s->pods[ev->id];
        if (p->state != P_RUNNING || p->version != ev->version)
            break; /* stale: its rate changed since */
        rc = finish_pod(s, ev->id, true);
        *sched = true;
        break;
    }
    case EV_RETRY:
        if (s->pods[ev->id].state != P_BACKOFF)
            break; /* a replica deleted meanwhile */
        rc = enqueue(s, ev->id);
        *sched = true;
        break;
    case EV_SERVICE:
        rc = gs__deploy_tick(s, ev->id, sched);
        if (!rc && s->now + GS_HPA_SYNC_S <= s->sc->duration_s)
            rc = push(s, s->now + GS_HPA_SYNC_S, EV_SERVICE, ev->id, 0);
        break;
    case EV_RECONF:
        rc = reconf_done(s, ev->id);
        *sched = true;
        break;
    case EV_SAMPLE:
        sample(s, out, ev->id);
        break;
    }
    return rc;
}

/* Allocated, used and idle (by cause) GPU units over [from, to], from the warm-up on. */
static void integrate(struct sim *s, double from, double to)
{
    double a = fmax(from, s->sc->warmup_s), b = fmax(to, s->sc->warmup_s);
    if (b > a) {
        s->int_alloc += s->alloc_units * (b - a);
        s->int_used += s->used_units * (b - a);
        s->int_t += b - a;
        for (int k = 0; k < GS_IDLE_CAUSES; k++)
            s->int_idle[k] += s->idle_units[k] * (b - a);
    }
}

/* The free units by cause now (sim/idle.h), from the waiting pods' shapes: their requests,
 * held by quota (the last cycle's WAIT QUOTA) or not. */
static void idle_now(struct sim *s)
{
    struct gs_idle_want w[GS_IDLE_MAX_WANTS];
    uint64_t sig[GS_IDLE_MAX_WANTS];
    int nw = 0;
    for (int i = 0; i < s->nqueue && nw < GS_IDLE_MAX_WANTS; i++) {
        const struct pod *p = &s->pods[s->queue[i]];
        bool quota = p->why == GS_WHY_QUOTA;
        uint64_t h = gs_request_sig(&p->req) ^ (uint64_t)quota;
        int k = 0;
        while (k < nw && sig[k] != h)
            k++;
        if (p->state != P_PENDING || k < nw)
            continue;
        sig[nw] = h;
        w[nw].req = p->req;
        w[nw++].quota = quota;
    }
    gs_idle_split(&s->c, s->busy, s->st->recarve, w, nw, s->idle_units);
}

/* Events in time order up to the scenario's end; *last_t: the last one's time. */
static int run_loop(struct sim *s, struct gs_sim_result *out, double *last_t)
{
    bool pending_pass = false;
    int rc, nqueue = 0;
    idle_now(s);
    while (gs_evheap_len(&s->h) > 0) {
        struct gs_event ev = gs_evheap_pop(&s->h);
        if (ev.t > s->sc->duration_s)
            break;
        integrate(s, *last_t, ev.t);
        *last_t = ev.t;
        s->now = ev.t;
        bool sched = pending_pass;
        if ((rc = on_event(s, &ev, out, &sched)))
            return rc;
        /* batch events at the same instant before scheduling (a sample at the same instant
         * as an arrival must not swallow the pass) */
        pending_pass = sched;
        const struct gs_event *next = gs_evheap_peek(&s->h);
        bool passed = sched && (!next || next->t > s->now);
        if (passed) {
            pending_pass = false;
            if ((rc = schedule_pass(s)))
                return rc;
        }
        double alloc = alloc_now(&s->c);
        if (passed || alloc != s->alloc_units || s->nqueue != nqueue)
            idle_now(s); /* the free capacity or what waits changed */
        s->alloc_units = alloc;
        nqueue = s->nqueue;
    }
    return 0;
}

/* Per class: waits (p50/p95/p99/mean), starts, completions, OOM kills, SLA misses; and the
 * online classes' p99 wait and SLA miss share. waits and online: room for every pod. */
static void class_results(struct sim *s, struct gs_sim_result *out, double *waits, double *online)
{
    const struct gs_scenario *sc = s->sc;
    double end = sc->duration_s;
    int non = 0, online_n = 0, online_miss = 0;
    for (int k = 0; k < out->nclasses; k++) {
        struct gs_class_stats *cs = &out->cls[k];
        int n = 0;
        double sum = 0;
        const struct gs_sc_class *c = sc->nclasses ? &sc->classes[k] : NULL;
        for (int i = 0; i < s->npods; i++) {
            struct pod *p = &s->pods[i];
            if (p->cls != k || !p->measured)
                continue;
            cs->arrived++;
            if (p->oom)
                cs->oom_kills++;
            /* a replica deleted before it started waited until then */
            bool deleted = p->state == P_DONE && !p->started;
            double w = p->started ? p->start - p->first_arrival
                                  : (deleted ? p->end : end) - p->first_arrival;
            if (p->started)
                cs->started++;
            else if (!deleted)
                cs->waiting_at_end++;
            if (p->state == P_DONE)
                cs->completed++;
            waits[n++] = w;
            sum += w;
            if (c && c->kind == GS_KIND_ONLINE) {
                if (p->state == P_RUNNING)
                    settle(s, p);
                double speed = p->run_dt > 0 ? p->rate_sum_dt / p->run_dt : 1.0;
                bool miss = w > sc->sla_wait_s || p->oom || speed < sc->sla_min_speed;
                online_n++;
                online_miss += miss;
                cs->sla_miss += miss;
                online[non++] = w;
            }
        }
        qsort(waits, (size_t)n, sizeof(double), cmp_double);
        cs->wait_p50 = pct(waits, n, 0.50);
        cs->wait_p95 = pct(waits, n, 0.95);
        cs->wait_p99 = pct(waits, n, 0.99);
        cs->wait_mean = n ? sum / n : 0;
        out->oom_kills += cs->oom_kills;
        out->jobs_completed += cs->completed;
    }
    qsort(online, (size_t)non, sizeof(double), cmp_double);
    out->online_p99_wait = pct(online, non, 0.99);
    out->online_sla_miss_pct = online_n ? 100.0 * online_miss / online_n : 0;
}

/* The run's figures, the world brought to the scenario's end. */
static int sim_results(struct sim *s, struct gs_sim_result *out, double last_t,
                       struct gs_error *err)
{
    const struct gs_scenario *sc = s->sc;
    double end = sc->duration_s;
    integrate(s, last_t, end);
    s->now = end;
    out->sim_seconds = end;
    out->gpus = s->c.ngpus;
    double cap_time = s->int_t > 0 ? s->int_t : 1;
    out->alloc_share = s->c.ngpus ? s->int_alloc / (s->c.ngpus * cap_time) : 0;
    out->used_share = s->c.ngpus ? s->int_used / (s->c.ngpus * cap_time) : 0;
    double price_h = 0;
    for (int i = 0; i < s->c.ngpus; i++)
        price_h += sc->price[s->c.gpus[i].model];
    out->gpu_hours = s->c.ngpus * cap_time / 3600.0;
    out->cost = price_h * cap_time / 3600.0;
    out->useful_gpu_hours = s->int_used / 3600.0;
    out->idle_gpu_hours = (s->c.ngpus * cap_time - s->int_alloc) / 3600.0;
    for (int k = 0; k < GS_IDLE_CAUSES; k++)
        out->idle_by_cause[k] = s->int_idle[k] / 3600.0;
    out->cost_per_useful_hour = out->useful_gpu_hours > 0 ? out->cost / out->useful_gpu_hours : 0;
    out->nclasses = sc->nclasses > 0 ? sc->nclasses : 1;
    double *waits = malloc(sizeof(double) * (size_t)(s->npods ? s->npods : 1));
    double *online = malloc(sizeof(double) * (size_t)(s->npods ? s->npods : 1));
    if (!waits || !online) {
        free(waits);
        free(online);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    class_results(s, out, waits, online);
    free(waits);
    free(online);
    out->preemptions = s->preemptions;
    out->victims = s->victims;
    out->lost_gpu_hours = s->lost_gpu_hours;
    out->recarves = s->recarves;
    gs__deploy_results(s, out);
    out->nteams = s->tenancy ? s->t.nq : 0;
    for (int q = 0; q < out->nteams && q < GS_SC_MAX_TENANTS; q++) {
        double sum = 0;
        for (int i = 0; i < GS_SIM_SAMPLES; i++)
            sum += out->team_ts[q][i];
        out->team_mean[q] = sum / GS_SIM_SAMPLES;
    }
    return 0;
}

int gs_sim_run(const struct gs_scenario *sc, const struct gs_strategy *st,
               struct gs_sim_result *out, struct gs_error *err)
{
    struct gs_sim_opts o = {0};
    return gs_sim_run_opts(sc, st, &o, out, err);
}

int gs_sim_run_traced(const struct gs_scenario *sc, const struct gs_strategy *st,
                      gs_sim_trace_fn trace, void *ctx, struct gs_sim_result *out,
                      struct gs_error *err)
{
    struct gs_sim_opts o = {.trace = trace, .trace_ctx = ctx};
    return gs_sim_run_opts(sc, st, &o, out, err);
}

int gs_sim_run_opts(const struct gs_scenario *sc, const struct gs_strategy *st,
                    const struct gs_sim_opts *o, struct gs_sim_result *out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    out->strategy = st;
    out->seed = sc->seed;
    double t0 = gs_clock_mono(); /* the run's own duration, not simulated time */
    struct sim s;
    double last_t = 0;
    int rc = sim_open(&s, sc, st, o, err);
    if (!rc)
        rc = run_loop(&s, out, &last_t);
    if (!rc)
        rc = sim_results(&s, out, last_t, err);
    out->wall_seconds = gs_clock_mono() - t0;
    sim_close(&s);
    return rc;
}
