/* scenario.c - the discrete-event simulator behind `gpusched sim` and `make run`. It builds a
 * cluster per strategy from the scenario's node groups (MIG layouts from the mig-parted
 * config, time-slicing and MPS replicas), places pods with the engine, and runs them at the
 * speed their GPU share allows (processor sharing on time-sliced and MPS GPUs, compute
 * slices on MIG instances). Strategies with priority also run tenancy: each tenant is a queue
 * whose quota is its deserved share (idle capacity beyond it is borrowed), pods of higher
 * priority preempt lower ones in their queue, owed queues reclaim from borrowers
 * (core/preempt.c picks the victims), and gangs start all at once or not at all. Services
 * (sim/service.h) are Deployments of replicas that serve a request load, scaled by the HPA's
 * own arithmetic (core/hpa.c) every 15 simulated seconds. */
#include "scenario.h"

#include "../base/buf.h"
#include "../base/clock.h"
#include "../base/error.h"
#include "../base/rng.h"
#include "../core/cycle.h"
#include "../core/engine.h"
#include "../core/tenant.h"
#include "../formats/decision.h"
#include "../formats/migparted.h"
#include "service.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct gs_strategy strategies[GS_SIM_STRATEGIES] = {
    {"exclusive", "Exclusive (1 pod = 1 GPU)", false, GS_SM_NONE, false, false, false, 0, 0},
    {"time-slicing", "Time-slicing", false, GS_SM_TIMESLICING, false, false, false, 25, 20},
    {"mps", "MPS", false, GS_SM_MPS, false, false, false, 0, 0},
    {"static-mig", "Static MIG", true, GS_SM_NONE, false, false, false, 35, 30},
    {"mig-priority", "MIG + priority", true, GS_SM_NONE, true, false, false, 0, 0},
    {"dynamic-mig", "Dynamic MIG + priority", true, GS_SM_NONE, true, false, true, 0, 0},
    {"all", "All together", true, GS_SM_GROUP, true, true, false, 50, 50},
};

const struct gs_strategy *gs_strategy_get(int i)
{
    return i >= 0 && i < GS_SIM_STRATEGIES ? &strategies[i] : NULL;
}

const struct gs_strategy *gs_strategy_find(const char *name)
{
    for (int i = 0; i < GS_SIM_STRATEGIES; i++)
        if (strcmp(strategies[i].name, name) == 0)
            return &strategies[i];
    return NULL;
}

/* ---------- event heap (ordered by time, then sequence: deterministic) ---------- */

enum ev_type { EV_ARRIVAL = 0, EV_COMPLETE, EV_RETRY, EV_SAMPLE, EV_RECONF, EV_SERVICE };

struct event {
    double t;
    uint64_t seq;
    int type;
    int id; /* class for arrivals, pod otherwise, sample index */
    uint32_t version;
};

struct heap {
    struct event *v;
    int n, cap;
};

static bool ev_less(const struct event *a, const struct event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(struct heap *h, struct event e)
{
    if (h->n == h->cap) {
        void *v = gs_grow(h->v, &h->cap, sizeof(*h->v), 1024);
        if (!v)
            return GS_ENOMEM;
        h->v = v;
    }
    int i = h->n++;
    h->v[i] = e;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!ev_less(&h->v[i], &h->v[p]))
            break;
        struct event t = h->v[i];
        h->v[i] = h->v[p];
        h->v[p] = t;
        i = p;
    }
    return 0;
}

static struct event heap_pop(struct heap *h)
{
    struct event top = h->v[0];
    h->v[0] = h->v[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && ev_less(&h->v[l], &h->v[m]))
            m = l;
        if (r < h->n && ev_less(&h->v[r], &h->v[m]))
            m = r;
        if (m == i)
            break;
        struct event t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
    return top;
}

/* ---------- simulation state ---------- */

enum pod_state { P_PENDING = 0, P_RUNNING, P_DONE, P_BACKOFF, P_HELD };

struct pod {
    int cls;
    double first_arrival, start;
    double work_left, rate, last;
    double rate_sum_dt, run_dt; /* for the mean speed */
    double util;                /* busy fraction of a whole GPU it wants, per GPU */
    double busy;                /* of that, what it uses now (1; a replica: its load) */
    int32_t gpu_mem;            /* MiB it really needs (OOM check on time-slicing) */
    struct gs_request req;
    struct gs_alloc alloc;
    uint32_t version;
    uint8_t state;
    bool started, measured, oom;
    int32_t gang;      /* -1, or the gang (job) id */
    double work_total; /* a preempted pod starts over */
    double run_start;  /* start of the current run */
    int32_t ord;       /* its number within its class: it is named CLASS-ORD */
    int32_t svc;       /* the service it is a replica of, -1 none */
    double end;        /* when a replica was deleted */
};

/* A service's Deployment and its autoscaler (see sim/service.h). */
struct svc_rt {
    int cls;
    bool autoscale; /* the HPA runs (not in a fixed run) */
    struct gs_hpa_state hpa;
    int *pods; /* live replicas (not deleted) */
    int npods, cap;
    /* the measured window */
    double requests, missed, unit_s, used_s, cost, replica_s, span_s, rate;
    int replicas_max, scale_ups, scale_downs;
    bool created; /* replicas created since the last tick: a pass is due */
    struct gs_svc_mix mix;
};

struct gpu_rt {
    int npods;
    int cap;
    int *pods;
    double load; /* sum of util of pods on this GPU (replicas) */
    int64_t mem; /* sum of real GPU memory of pods on this GPU (replicas) */
};

struct sim {
    const struct gs_scenario *sc;
    const struct gs_strategy *st;
    struct gs_cluster c;
    struct gs_engine *e;
    struct gs_rng rng;
    struct heap h;
    uint64_t seq;
    struct pod *pods;
    int npods, cap_pods;
    int *queue;
    int nqueue, cap_queue;
    struct gpu_rt *grt;
    double now;
    double alloc_units, used_units; /* current */
    double int_alloc, int_used, int_t;
    int class_jobs[GS_SC_MAX_CLASSES];
    /* tenancy (strategies with priority) */
    bool tenancy;
    struct gs_tenants t;
    int ngangs, cap_gangs;
    uint32_t *gang_pass; /* per gang: the pass that last tried it */
    uint32_t pass;
    struct gs_running *run;
    int32_t *run_pod;
    int nrun, cap_run;
    bool run_dirty;
    int preemptions, victims;
    double lost_gpu_hours;
    uint8_t share_ok[GS_SC_MAX_CLASSES]; /* sharing modes that exist here and fit the class */
    /* the cycle's input, and dynamic MIG */
    struct gs_cyc_pod *cyc;
    int cap_cyc;
    int class_pods[GS_SC_MAX_CLASSES];
    gs_sim_trace_fn trace; /* each cycle's decisions as lines (NULL: none) */
    void *trace_ctx;
    uint8_t *busy;     /* per GPU: being re-carved */
    double *changed_s; /* per GPU: last re-carve */
    int recarves;
    /* services */
    bool fixed_services;
    int nsvc;
    struct svc_rt *svc;
};

static int push(struct sim *s, double t, int type, int id, uint32_t version)
{
    struct event e = {.t = t, .seq = s->seq++, .type = type, .id = id, .version = version};
    return heap_push(&s->h, e);
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

/* ---------- cluster per strategy ---------- */

static enum gs_gpu_mode group_share_mode(const struct gs_strategy *st, const struct gs_sc_group *g,
                                         int *replicas)
{
    if (g->sharing == GS_SHARE_FRACTION)
        return GS_GPU_FRACTION; /* milli-GPU shares (gpusched's own), in every strategy */
    if (g->sharing == GS_SHARE_NONE || st->share == GS_SM_NONE)
        return GS_GPU_WHOLE;
    enum gs_group_sharing mode = g->sharing;
    if (st->share == GS_SM_TIMESLICING)
        mode = GS_SHARE_TIMESLICING;
    else if (st->share == GS_SM_MPS)
        mode = GS_SHARE_MPS;
    if (mode == GS_SHARE_TIMESLICING) {
        *replicas = g->sharing == GS_SHARE_TIMESLICING && g->replicas ? g->replicas : 4;
        return GS_GPU_TIMESLICE;
    }
    *replicas = g->sharing == GS_SHARE_MPS && g->replicas ? g->replicas : 2;
    return GS_GPU_MPS;
}

static int build_cluster(struct sim *s, struct gs_error *err)
{
    const struct gs_scenario *sc = s->sc;
    struct gs_migparted *mp = NULL;
    int rc = 0;
    if (s->st->mig) {
        const char *text = sc->mig_yaml ? sc->mig_yaml : gs_article_mig_config_yaml;
        const char *name = sc->mig_yaml ? sc->mig_yaml_name : "article nvidia-mig-config";
        rc = gs_migparted_parse(name, text, strlen(text), &mp, err);
        if (rc)
            return rc;
    }
    gs_cluster_init(&s->c);
    for (int gi = 0; gi < sc->ngroups && !rc; gi++) {
        const struct gs_sc_group *g = &sc->groups[gi];
        int replicas = 0;
        enum gs_gpu_mode mode = g->gpus ? group_share_mode(s->st, g, &replicas) : GS_GPU_WHOLE;
        const struct gs_mp_config *cfg = NULL;
        bool use_mig = s->st->mig && g->gpus && (g->has_layout || g->mig_config[0]);
        if (use_mig && g->mig_config[0]) {
            cfg = gs_migparted_find(mp, g->mig_config);
            if (!cfg) {
                rc = gs_error_set(err, GS_EINVAL,
                                  "node group '%s': mig_config '%s' is not in the mig-parted "
                                  "config",
                                  g->name, g->mig_config);
                break;
            }
        }
        for (int ni = 0; ni < g->nodes && !rc; ni++) {
            char name[GS_NAME_MAX];
            snprintf(name, sizeof(name), "%s-%d", g->name, ni);
            int id = gs_cluster_add_node(&s->c, name, g->gpus ? g->model : -1, g->gpus,
                                         g->cpu_milli, g->mem_mib, mode, replicas, NULL);
            if (id < 0) {
                rc = gs_error_set(err, id, "node group '%s': cannot build node", g->name);
                break;
            }
            struct gs_node *n = &s->c.nodes[id];
            for (int l = 0; l < g->nlabels; l++)
                gs_node_set_label(n, g->labels[l].key, g->labels[l].val);
            if (g->gpus) {
                gs_node_set_label(n, "nvidia.com/gpu.product", gs_catalog_get(g->model)->product);
                gs_node_set_label(n, "nvidia.com/gpu.sharing-strategy",
                                  mode == GS_GPU_TIMESLICE  ? "time-slicing"
                                  : mode == GS_GPU_MPS      ? "mps"
                                  : mode == GS_GPU_FRACTION ? "fraction"
                                                            : "none");
            }
            if (!use_mig)
                continue;
            gs_node_set_label(n, "nvidia.com/mig.config", cfg ? cfg->name : "inline");
            for (int k = 0; k < g->gpus; k++) {
                struct gs_gpu *gpu = &s->c.gpus[n->gpu0 + k];
                bool enabled = g->has_layout;
                struct gs_mig_layout layout = g->layout;
                if (cfg) {
                    int m = gs_migparted_resolve(cfg, k, g->model, &enabled, &layout, err);
                    if (m < 0) {
                        rc = gs_error_prefix(err, "node group '%s'", g->name);
                        break;
                    }
                    if (m == 0)
                        enabled = false; /* no entry for this GPU: MIG stays off */
                }
                if (!enabled)
                    continue;
                struct gs_mig_placement pl;
                rc = gs_mig_place(g->model, &layout, &pl, err);
                if (rc)
                    break;
                gpu->mode = GS_GPU_MIG;
                gpu->mig = pl;
                gpu->replicas = 0;
                gs_node_touch(n);
            }
        }
    }
    gs_migparted_free(mp);
    return rc;
}

/* ---------- requests per strategy ---------- */

static void make_request(const struct sim *s, const struct gs_sc_class *k, struct gs_request *r,
                         bool *shared)
{
    memset(r, 0, sizeof(*r));
    r->cpu_milli = k->cpu_milli;
    r->mem_mib = k->mem_mib;
    *shared = false;
    if (s->st->mig && k->mig[0]) {
        r->kind = GS_REQ_MIG;
        r->gpus = 1;
        snprintf(r->mig, sizeof(r->mig), "%s", k->mig);
        return;
    }
    int gpus = k->gpus;
    if (gpus == 0 && k->mig[0])
        gpus = 1; /* a MIG-sized workload asks one GPU when MIG is off */
    if (gpus == 0) {
        r->kind = GS_REQ_NONE;
        return;
    }
    r->kind = GS_REQ_GPU;
    r->gpus = (uint8_t)gpus;
    r->milli = GS_MILLI;
    r->gpu_mem_mib = k->gpu_mem_mib; /* whole GPUs: the model must be large enough */
    if (s->st->share == GS_SM_NONE)
        return;
    /* which replicas this class may take under the strategy */
    uint8_t modes = s->st->share == GS_SM_TIMESLICING ? 1 : s->st->share == GS_SM_MPS ? 2 : 3;
    uint8_t ok = k->share & modes & s->share_ok[k - s->sc->classes];
    r->nsel = 1;
    snprintf(r->sel[0].key, sizeof(r->sel[0].key), "nvidia.com/gpu.sharing-strategy");
    if (!ok) {
        /* dedicated GPUs, as an operator pins training to unshared nodes */
        snprintf(r->sel[0].val, sizeof(r->sel[0].val), "none");
        return;
    }
    *shared = true;
    if (ok == 3)
        r->nsel = 0;
    else
        snprintf(r->sel[0].val, sizeof(r->sel[0].val), "%s", ok == 1 ? "time-slicing" : "mps");
    if ((ok & 1) && !s->st->mem_aware)
        r->gpu_mem_mib = 0; /* the stock device plugin knows no GPU memory */
}

/* ---------- speed of a running pod ---------- */

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

static double pod_used(const struct pod *p)
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
    s->used_units -= pod_used(p);
    p->rate = r;
    s->used_units += pod_used(p);
    p->version++;
    return push(s, s->now + p->work_left / (r > 1e-9 ? r : 1e-9), EV_COMPLETE, pi, p->version);
}

static bool is_replica_gpu(const struct gs_gpu *g)
{
    return g->mode == GS_GPU_TIMESLICE || g->mode == GS_GPU_MPS;
}

static int rt_add(struct gpu_rt *rt, int pi)
{
    if (rt->npods == rt->cap) {
        void *v = gs_grow(rt->pods, &rt->cap, sizeof(int), 8);
        if (!v)
            return GS_ENOMEM;
        rt->pods = v;
    }
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

/* Re-rate everything sharing the pod's GPUs. */
static int rerate_neighbours(struct sim *s, int pi)
{
    struct pod *p = &s->pods[pi];
    for (int k = 0; k < p->alloc.ndev; k++) {
        int g = p->alloc.gpu[k];
        if (!is_replica_gpu(&s->c.gpus[g]))
            continue;
        for (int j = 0; j < s->grt[g].npods; j++) {
            int rc = update_rate(s, s->grt[g].pods[j]);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* ---------- queue ---------- */

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
    if (s->nqueue == s->cap_queue) {
        void *v = gs_grow(s->queue, &s->cap_queue, sizeof(int), 256);
        if (!v)
            return GS_ENOMEM;
        s->queue = v;
    }
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
        if (is_replica_gpu(&s->c.gpus[g])) {
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
        for (int k = 0; k < p->alloc.ndev; k++) {
            int g = p->alloc.gpu[k];
            if (is_replica_gpu(&s->c.gpus[g])) {
                rt_remove(&s->grt[g], pi);
                s->grt[g].load -= p->util * p->busy;
                s->grt[g].mem -= p->gpu_mem;
            }
        }
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
    if (n == s->cap_cyc) {
        void *v = gs_grow(s->cyc, &s->cap_cyc, sizeof(*s->cyc), 256);
        if (!v)
            return GS_ENOMEM;
        s->cyc = v;
    }
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
static void pod_name(const struct sim *s, int pi, char *out, size_t n)
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
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    rc = gs_cycle_run(&in, &out);
    s->preemptions += out.preemptions;
    for (int k = 0; s->trace && k < out.n; k++) {
        const struct gs_cyc_decision *d = &out.d[k];
        char pod[GS_NAME_MAX + 16], victim[GS_NAME_MAX + 16], line[600];
        pod_name(s, idx[d->pod], pod, sizeof(pod));
        if (d->kind == GS_CYC_EVICT)
            pod_name(s, s->run_pod[d->victim], victim, sizeof(victim));
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
    s->used_units -= pod_used(p);
    p->state = P_DONE;
    for (int k = 0; k < p->alloc.ndev; k++) {
        int g = p->alloc.gpu[k];
        if (is_replica_gpu(&s->c.gpus[g])) {
            rt_remove(&s->grt[g], pi);
            s->grt[g].load -= p->util * p->busy;
            s->grt[g].mem -= p->gpu_mem;
        }
    }
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
        if (s->nrun == s->cap_run) {
            int cap = s->cap_run;
            void *v = gs_grow(s->run, &cap, sizeof(*s->run), 256);
            if (!v)
                return GS_ENOMEM;
            s->run = v;
            v = gs_grow(s->run_pod, &s->cap_run, sizeof(*s->run_pod), 256);
            if (!v)
                return GS_ENOMEM;
            s->run_pod = v;
        }
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

static int new_pod(struct sim *s, int cls, double util, int32_t gmem, const struct gs_request *r,
                   double work, int32_t gang)
{
    if (s->npods == s->cap_pods) {
        void *v = gs_grow(s->pods, &s->cap_pods, sizeof(*s->pods), 1024);
        if (!v)
            return GS_ENOMEM;
        s->pods = v;
    }
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

/* ---------- services: Deployments of replicas under an HPA (sim/service.h) ---------- */

#define SVC_WORK_S 1e15 /* a replica never finishes its work: it is deleted */

/* A running pod's busy share of what it wants (a replica: its load) changes. */
static int set_busy(struct sim *s, int pi, double busy)
{
    struct pod *p = &s->pods[pi];
    if (p->state != P_RUNNING || p->busy == busy)
        return 0;
    settle(s, p);
    s->used_units -= pod_used(p);
    bool shared = false;
    for (int k = 0; k < p->alloc.ndev; k++) {
        int g = p->alloc.gpu[k];
        if (is_replica_gpu(&s->c.gpus[g])) {
            s->grt[g].load += p->util * (busy - p->busy);
            shared = true;
        }
    }
    p->busy = busy;
    s->used_units += pod_used(p);
    return shared ? rerate_neighbours(s, pi) : 0;
}

static int svc_add_replica(struct sim *s, int k)
{
    struct svc_rt *v = &s->svc[k];
    const struct gs_sc_class *c = &s->sc->classes[v->cls];
    if (v->npods == v->cap) {
        void *g = gs_grow(v->pods, &v->cap, sizeof(int), 32);
        if (!g)
            return GS_ENOMEM;
        v->pods = g;
    }
    struct gs_request r;
    bool shared;
    make_request(s, c, &r, &shared);
    int rc = new_pod(s, v->cls, c->util, c->gpu_mem_mib, &r, SVC_WORK_S, -1);
    if (rc)
        return rc;
    s->pods[s->npods - 1].svc = k;
    v->pods[v->npods++] = s->npods - 1;
    v->created = true;
    return 0;
}

static bool svc_ready(const struct sim *s, const struct pod *p)
{
    return p->state == P_RUNNING &&
           s->now >= p->run_start + s->sc->classes[p->cls].service.startup_s;
}

/* The order a ReplicaSet deletes pods in (controller.ActivePodsWithRanks): not scheduled
 * first, then not ready, then the most recently ready; among equals the newest. */
static bool svc_delete_before(const struct sim *s, int a, int b)
{
    const struct pod *pa = &s->pods[a], *pb = &s->pods[b];
    int ta = pa->state != P_RUNNING ? 0 : svc_ready(s, pa) ? 2 : 1;
    int tb = pb->state != P_RUNNING ? 0 : svc_ready(s, pb) ? 2 : 1;
    if (ta != tb)
        return ta < tb;
    if (ta == 2 && pa->run_start != pb->run_start)
        return pa->run_start > pb->run_start;
    return a > b;
}

/* Delete one replica: a pending one leaves the queue, one held on a GPU being re-carved gives
 * its devices back, a running one finishes. */
static int svc_delete(struct sim *s, int pi)
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

static int svc_scale(struct sim *s, int k, int32_t want, const struct gs_hpa_decision *d)
{
    struct svc_rt *v = &s->svc[k];
    int from = v->npods, rc = 0;
    char line[600];
    size_t o = (size_t)snprintf(line, sizeof(line), "SCALE %s %d -> %d %s proposal=%d rate=%.2f",
                                s->sc->classes[v->cls].name, from, (int)want, d->reason,
                                (int)d->proposal, v->rate);
    while (v->npods < want && !rc)
        rc = svc_add_replica(s, k);
    int removed = 0;
    while (v->npods > want && !rc) {
        int best = 0;
        for (int j = 1; j < v->npods; j++)
            if (svc_delete_before(s, v->pods[j], v->pods[best]))
                best = j;
        int pi = v->pods[best];
        v->pods[best] = v->pods[--v->npods];
        if (s->trace && o < sizeof(line)) {
            char name[GS_NAME_MAX + 16];
            pod_name(s, pi, name, sizeof(name));
            o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s",
                                  removed ? "," : " deleted=", name);
        }
        removed++;
        rc = svc_delete(s, pi);
    }
    if (want > from)
        v->scale_ups++;
    else
        v->scale_downs++;
    if (s->trace)
        s->trace(s->trace_ctx, s->now, line);
    return rc;
}

/* GPUs a replica holds: a MIG slice its units, a time-slicing or MPS replica its share. */
static double held_units(const struct sim *s, const struct pod *p, double *cost_h)
{
    double u = 0;
    *cost_h = 0;
    for (int k = 0; k < p->alloc.ndev; k++) {
        const struct gs_gpu *g = &s->c.gpus[p->alloc.gpu[k]];
        double x = is_replica_gpu(g)           ? 1.0 / (g->replicas ? g->replicas : 1)
                   : p->req.kind == GS_REQ_MIG ? gs_request_units(&p->req, g->model)
                                               : p->req.milli / 1000.0;
        u += x;
        *cost_h += x * s->sc->price[g->model];
    }
    return u;
}

/* Every 15 s: the requests of the next 15 s against the ready replicas (each replica's busy
 * share follows its load), then the HPA's sync. */
static int svc_tick(struct sim *s, int k, bool *sched)
{
    struct svc_rt *v = &s->svc[k];
    const struct gs_sc_service *sv = &s->sc->classes[v->cls].service;
    double span = fmin(GS_HPA_SYNC_S, s->sc->duration_s - s->now);
    bool measured = s->now >= s->sc->warmup_s && span > 0;
    double lam = gs_svc_rate(sv, s->sc->seed, k, s->now + GS_HPA_SYNC_S / 2);
    v->rate = lam;
    if (v->created) /* the replicas created at the start */
        *sched = true;
    v->created = false;
    int nready = 0, nstarting = 0, npending = 0, rc = 0;
    double units = 0, cost_h = 0;
    for (int j = 0; j < v->npods; j++) {
        const struct pod *p = &s->pods[v->pods[j]];
        if (p->state == P_RUNNING || p->state == P_HELD) {
            double c;
            units += held_units(s, p, &c);
            cost_h += c;
        }
        if (svc_ready(s, p))
            nready++;
        else if (p->state == P_RUNNING)
            nstarting++;
        else
            npending++;
    }
    struct gs_hpa_obs obs[GS_HPA_MAX_METRICS];
    memset(obs, 0, sizeof(obs));
    for (int j = 0; j < v->npods && !rc; j++) {
        int pi = v->pods[j];
        struct pod *p = &s->pods[pi];
        if (!svc_ready(s, p)) {
            rc = set_busy(s, pi, 0);
            continue;
        }
        struct gs_svc_replica r;
        double share = lam / nready;
        gs_svc_replica(sv, share, p->rate, &r);
        rc = set_busy(s, pi, r.rho < 1.0 ? r.rho : 1.0);
        if (measured)
            v->used_s += pod_used(p) * span;
        for (int m = 0; m < sv->hpa.nmetrics; m++)
            obs[m].sum +=
                strcmp(sv->hpa.metric[m].name, "gpu_utilization") == 0 ? r.util_pct : r.latency_ms;
        if (measured) {
            v->requests += share * span;
            v->missed += share * span * r.miss;
            if (!rc)
                rc = gs_svc_mix_add(&v->mix, share * span, r.mean_s);
        }
    }
    if (measured) {
        if (nready == 0) { /* nobody serves: every request times out */
            v->requests += lam * span;
            v->missed += lam * span;
            if (!rc)
                rc = gs_svc_mix_add(&v->mix, lam * span, INFINITY);
        }
        v->unit_s += units * span;
        v->cost += cost_h * span / 3600.0;
        v->replica_s += v->npods * span;
        v->span_s += span;
        if (v->npods > v->replicas_max)
            v->replicas_max = v->npods;
    }
    if (rc || !v->autoscale)
        return rc;
    for (int m = 0; m < sv->hpa.nmetrics; m++) {
        obs[m].nready = nready;
        obs[m].nunready = npending;
        obs[m].nmissing = nstarting;
    }
    struct gs_hpa_decision d;
    int32_t want = gs_hpa_sync(&sv->hpa, &v->hpa, s->now, v->npods, obs, &d);
    if (want == v->npods)
        return 0;
    *sched = true;
    rc = svc_scale(s, k, want, &d);
    v->created = false;
    return rc;
}

static int svc_start(struct sim *s)
{
    for (int k = 0; k < s->sc->nclasses; k++)
        s->nsvc += s->sc->classes[k].service.on;
    if (s->nsvc == 0)
        return 0;
    s->svc = calloc((size_t)s->nsvc, sizeof(*s->svc));
    if (!s->svc)
        return GS_ENOMEM;
    int rc = 0;
    for (int c = 0, k = 0; c < s->sc->nclasses && !rc; c++) {
        const struct gs_sc_service *sv = &s->sc->classes[c].service;
        if (!sv->on)
            continue;
        struct svc_rt *v = &s->svc[k];
        v->cls = c;
        v->autoscale = sv->autoscale && !s->fixed_services;
        gs_hpa_state_init(&v->hpa);
        gs_svc_mix_init(&v->mix, sv->latency_max_s);
        int32_t n = s->fixed_services && sv->autoscale ? gs_svc_peak_replicas(sv) : sv->replicas;
        for (int32_t i = 0; i < n && !rc; i++)
            rc = svc_add_replica(s, k);
        if (!rc)
            rc = push(s, 0, EV_SERVICE, k, 0);
        k++;
    }
    return rc;
}

static void svc_sample(struct sim *s, struct gs_sim_result *out, int i)
{
    for (int k = 0; k < s->nsvc; k++) {
        const struct svc_rt *v = &s->svc[k];
        int ready = 0;
        for (int j = 0; j < v->npods; j++)
            ready += svc_ready(s, &s->pods[v->pods[j]]);
        out->svc[k].replicas_ts[i] = (float)v->npods;
        out->svc[k].ready_ts[i] = (float)ready;
        out->svc[k].rate_ts[i] = (float)v->rate;
    }
}

static void svc_results(struct sim *s, struct gs_sim_result *out)
{
    out->fixed_services = s->fixed_services;
    out->nsvc = s->nsvc;
    for (int k = 0; k < s->nsvc; k++) {
        const struct svc_rt *v = &s->svc[k];
        const struct gs_sc_service *sv = &s->sc->classes[v->cls].service;
        struct gs_svc_stats *o = &out->svc[k];
        o->cls = v->cls;
        o->fixed_replicas = sv->autoscale ? gs_svc_peak_replicas(sv) : sv->replicas;
        o->requests = v->requests;
        o->sla_miss_pct = v->requests > 0 ? 100.0 * v->missed / v->requests : 0;
        o->latency_p50 = gs_svc_mix_quantile(&v->mix, 0.50);
        o->latency_p99 = gs_svc_mix_quantile(&v->mix, 0.99);
        o->gpu_hours = v->unit_s / 3600.0;
        o->used_gpu_hours = v->used_s / 3600.0;
        o->cost = v->cost;
        o->replicas_mean = v->span_s > 0 ? v->replica_s / v->span_s : 0;
        o->replicas_max = v->replicas_max;
        o->scale_ups = v->scale_ups;
        o->scale_downs = v->scale_downs;
    }
}

static void svc_free(struct sim *s)
{
    for (int k = 0; k < s->nsvc && s->svc; k++) {
        free(s->svc[k].pods);
        gs_svc_mix_release(&s->svc[k].mix);
    }
    free(s->svc);
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
    struct sim s;
    memset(&s, 0, sizeof(s));
    s.trace = o->trace;
    s.trace_ctx = o->trace_ctx;
    s.fixed_services = o->fixed_services;
    memset(out, 0, sizeof(*out));
    s.sc = sc;
    s.st = st;
    out->strategy = st;
    out->seed = sc->seed;
    double t0 = gs_clock_mono(); /* the run's own duration, not simulated time */
    gs_rng_init(&s.rng, sc->seed);
    int rc = build_cluster(&s, err);
    if (rc)
        goto out;
    /* a class may share only GPUs that exist under this strategy and can hold its memory;
     * otherwise it gets dedicated GPUs */
    for (int k = 0; k < sc->nclasses; k++) {
        for (int g = 0; g < s.c.ngpus; g++) {
            const struct gs_gpu *gpu = &s.c.gpus[g];
            const struct gs_gpu_model *m = gs_catalog_get(gpu->model);
            int32_t need = sc->classes[k].gpu_mem_mib;
            if (gpu->mode == GS_GPU_TIMESLICE && (int64_t)m->mem_mib >= need)
                s.share_ok[k] |= 1;
            if (gpu->mode == GS_GPU_MPS && (int64_t)m->mem_mib / gpu->replicas >= need)
                s.share_ok[k] |= 2;
        }
    }
    gs_tenants_init(&s.t);
    s.tenancy = st->priority && sc->ntenants > 0;
    for (int i = 0; s.tenancy && i < sc->ntenants; i++) {
        const struct gs_sc_tenant *tn = &sc->tenants[i];
        int q = gs_tenants_add_queue(&s.t, tn->name, NULL, tn->weight > 0 ? tn->weight : 1, 0, err);
        if (q < 0) {
            rc = q;
            goto out;
        }
        char qty[32];
        for (int k = 0; k < tn->nquota; k++) {
            snprintf(qty, sizeof(qty), "%lld", (long long)tn->quota_value[k]);
            if ((rc = gs_tenants_set(&s.t, &s.t.q[q].deserved, tn->quota_name[k], qty, err)))
                goto out;
        }
        for (int k = 0; k < tn->nlimit; k++) {
            snprintf(qty, sizeof(qty), "%lld", (long long)tn->limit_value[k]);
            if ((rc = gs_tenants_set(&s.t, &s.t.q[q].limit, tn->limit_name[k], qty, err)))
                goto out;
        }
    }
    {
        struct gs_cluster_totals tot;
        gs_cluster_totals(&s.c, &tot);
        s.t.cap.v[GS_QR_UNITS] = (int64_t)(tot.units_cap * 1000);
        for (int n = 0; n < s.c.nnodes; n++) {
            s.t.cap.v[GS_QR_CPU] += s.c.nodes[n].cpu_cap;
            s.t.cap.v[GS_QR_MEM] += s.c.nodes[n].mem_cap;
        }
    }
    s.run_dirty = true;
    s.grt = calloc((size_t)(s.c.ngpus ? s.c.ngpus : 1), sizeof(*s.grt));
    s.busy = calloc((size_t)s.c.ngpus + 1, 1);
    s.changed_s = calloc((size_t)s.c.ngpus + 1, sizeof(double));
    s.e = gs_engine_new(gs_policy_find("gpusched"), NULL, gs_cycle_engine_nodes(s.c.nnodes),
                        sc->seed);
    if (!s.grt || !s.e || !s.busy || !s.changed_s) {
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        goto out;
    }
    /* first arrivals, samples */
    for (int k = 0; k < sc->nclasses; k++) {
        const struct gs_sc_class *c = &sc->classes[k];
        if (c->service.on)
            continue; /* replicas, not arrivals (svc_start) */
        double t =
            c->start_s +
            (c->arrival == GS_ARRIVAL_POISSON ? gs_rng_exp(&s.rng, 3600.0 / c->per_hour) : 0);
        if ((rc = push(&s, t, EV_ARRIVAL, k, 0)))
            goto out;
    }
    for (int i = 0; i < sc->ntrace; i++)
        if ((rc = push(&s, sc->trace[i].arrival_s, EV_ARRIVAL, GS_SC_MAX_CLASSES + i, 0)))
            goto out;
    for (int i = 0; i < GS_SIM_SAMPLES; i++)
        if ((rc = push(&s, sc->duration_s * (i + 1) / GS_SIM_SAMPLES, EV_SAMPLE, i, 0)))
            goto out;
    if ((rc = svc_start(&s))) {
        gs_error_set(err, rc, "out of memory");
        goto out;
    }
    double last_t = 0;
    bool pending_pass = false;
    while (s.h.n > 0) {
        struct event ev = heap_pop(&s.h);
        if (ev.t > sc->duration_s)
            break;
        /* integrate the measured window */
        double a = fmax(last_t, sc->warmup_s), b = fmax(ev.t, sc->warmup_s);
        if (b > a) {
            s.int_alloc += s.alloc_units * (b - a);
            s.int_used += s.used_units * (b - a);
            s.int_t += b - a;
        }
        last_t = ev.t;
        s.now = ev.t;
        bool sched = pending_pass;
        switch (ev.type) {
        case EV_ARRIVAL:
            if (ev.id >= GS_SC_MAX_CLASSES) {
                const struct gs_sc_trace_pod *tp = &sc->trace[ev.id - GS_SC_MAX_CLASSES];
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
                /* trace pods form one class (index 0) in the statistics */
                rc = new_pod(&s, 0, tp->milli / 1000.0, 0, &r, tp->duration_s, -1);
            } else {
                const struct gs_sc_class *c = &sc->classes[ev.id];
                /* a burst (fixed arrivals at interval 0s): every job of the class now, in one
                 * event, one after another */
                bool burst = c->arrival == GS_ARRIVAL_FIXED && c->interval_s <= 0;
                for (int j = 0; j < (burst ? c->max_jobs : 1) && !rc; j++) {
                    if (c->max_jobs && s.class_jobs[ev.id] >= c->max_jobs)
                        break;
                    struct gs_request r;
                    bool shared;
                    make_request(&s, c, &r, &shared);
                    s.class_jobs[ev.id]++;
                    double work = sample_duration(&s, c);
                    int32_t gang = -1;
                    if (c->gang > 1) {
                        if (s.ngangs == s.cap_gangs) {
                            void *v = gs_grow(s.gang_pass, &s.cap_gangs, sizeof(uint32_t), 64);
                            if (!v) {
                                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
                                goto out;
                            }
                            s.gang_pass = v;
                        }
                        s.gang_pass[s.ngangs] = 0;
                        gang = s.ngangs++;
                    }
                    for (int m = 0; m < (c->gang > 1 ? c->gang : 1) && !rc; m++)
                        rc = new_pod(&s, ev.id, c->util, c->gpu_mem_mib, &r, work, gang);
                }
                double next = c->arrival == GS_ARRIVAL_POISSON
                                  ? ev.t + gs_rng_exp(&s.rng, 3600.0 / c->per_hour)
                                  : ev.t + c->interval_s;
                if (!rc && (c->stop_s <= 0 || next < c->stop_s) && !burst)
                    rc = push(&s, next, EV_ARRIVAL, ev.id, 0);
            }
            sched = true;
            break;
        case EV_COMPLETE: {
            struct pod *p = &s.pods[ev.id];
            if (p->state != P_RUNNING || p->version != ev.version)
                break; /* stale: its rate changed since */
            rc = finish_pod(&s, ev.id, true);
            sched = true;
            break;
        }
        case EV_RETRY:
            if (s.pods[ev.id].state != P_BACKOFF)
                break; /* a replica deleted meanwhile */
            rc = enqueue(&s, ev.id);
            sched = true;
            break;
        case EV_SERVICE:
            rc = svc_tick(&s, ev.id, &sched);
            if (!rc && s.now + GS_HPA_SYNC_S <= sc->duration_s)
                rc = push(&s, s.now + GS_HPA_SYNC_S, EV_SERVICE, ev.id, 0);
            break;
        case EV_RECONF:
            rc = reconf_done(&s, ev.id);
            sched = true;
            break;
        case EV_SAMPLE:
            out->t[ev.id] = ev.t;
            out->alloc_ts[ev.id] = s.c.ngpus ? s.alloc_units / s.c.ngpus : 0;
            out->used_ts[ev.id] = s.c.ngpus ? s.used_units / s.c.ngpus : 0;
            out->pending_ts[ev.id] = s.nqueue;
            svc_sample(&s, out, ev.id);
            /* each team's allocated share of the GPUs, a replica counting 1/replicas */
            for (int pi = 0; s.tenancy && s.c.ngpus && pi < s.npods; pi++) {
                const struct pod *p = &s.pods[pi];
                int q = pod_queue(&s, p);
                if (p->state != P_RUNNING || q < 0 || q >= GS_SC_MAX_TENANTS)
                    continue;
                double u = 0;
                for (int k = 0; k < p->alloc.ndev; k++) {
                    const struct gs_gpu *g = &s.c.gpus[p->alloc.gpu[k]];
                    if (is_replica_gpu(g))
                        u += 1.0 / (g->replicas ? g->replicas : 1);
                    else if (p->req.kind == GS_REQ_MIG)
                        u += gs_request_units(&p->req, g->model);
                    else
                        u += p->req.milli / 1000.0;
                }
                out->team_ts[q][ev.id] += u / s.c.ngpus;
            }
            break;
        }
        if (rc)
            goto out;
        /* batch events at the same instant before scheduling (a sample at the same instant
         * as an arrival must not swallow the pass) */
        pending_pass = sched;
        if (sched && (s.h.n == 0 || s.h.v[0].t > s.now)) {
            pending_pass = false;
            if ((rc = schedule_pass(&s)))
                goto out;
        }
        s.alloc_units = alloc_now(&s.c);
    }
    {
        double end = sc->duration_s;
        if (end > last_t) {
            double a = fmax(last_t, sc->warmup_s);
            if (end > a) {
                s.int_alloc += s.alloc_units * (end - a);
                s.int_used += s.used_units * (end - a);
                s.int_t += end - a;
            }
        }
        s.now = end;
        /* results */
        out->sim_seconds = end;
        out->gpus = s.c.ngpus;
        double cap_time = s.int_t > 0 ? s.int_t : 1;
        out->alloc_share = s.c.ngpus ? s.int_alloc / (s.c.ngpus * cap_time) : 0;
        out->used_share = s.c.ngpus ? s.int_used / (s.c.ngpus * cap_time) : 0;
        double price_h = 0;
        for (int i = 0; i < s.c.ngpus; i++)
            price_h += sc->price[s.c.gpus[i].model];
        out->gpu_hours = s.c.ngpus * cap_time / 3600.0;
        out->cost = price_h * cap_time / 3600.0;
        out->useful_gpu_hours = s.int_used / 3600.0;
        out->cost_per_useful_hour =
            out->useful_gpu_hours > 0 ? out->cost / out->useful_gpu_hours : 0;
        out->nclasses = sc->nclasses > 0 ? sc->nclasses : 1;
        double *waits = malloc(sizeof(double) * (size_t)(s.npods ? s.npods : 1));
        double *online = malloc(sizeof(double) * (size_t)(s.npods ? s.npods : 1));
        if (!waits || !online) {
            free(waits);
            free(online);
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
            goto out;
        }
        int non = 0, online_n = 0, online_miss = 0;
        for (int k = 0; k < out->nclasses; k++) {
            struct gs_class_stats *cs = &out->cls[k];
            int n = 0;
            double sum = 0;
            const struct gs_sc_class *c = sc->nclasses ? &sc->classes[k] : NULL;
            for (int i = 0; i < s.npods; i++) {
                struct pod *p = &s.pods[i];
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
                        settle(&s, p);
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
        out->preemptions = s.preemptions;
        out->victims = s.victims;
        out->lost_gpu_hours = s.lost_gpu_hours;
        out->recarves = s.recarves;
        svc_results(&s, out);
        out->nteams = s.tenancy ? s.t.nq : 0;
        for (int q = 0; q < out->nteams && q < GS_SC_MAX_TENANTS; q++) {
            double sum = 0;
            for (int i = 0; i < GS_SIM_SAMPLES; i++)
                sum += out->team_ts[q][i];
            out->team_mean[q] = sum / GS_SIM_SAMPLES;
        }
        free(waits);
        free(online);
    }
out:
    out->wall_seconds = gs_clock_mono() - t0;
    gs_engine_free(s.e);
    for (int i = 0; s.grt && i < s.c.ngpus; i++)
        free(s.grt[i].pods);
    free(s.grt);
    free(s.pods);
    free(s.queue);
    free(s.h.v);
    free(s.run);
    free(s.run_pod);
    free(s.gang_pass);
    free(s.cyc);
    free(s.busy);
    free(s.changed_s);
    svc_free(&s);
    gs_tenants_release(&s.t);
    gs_cluster_release(&s.c);
    return rc;
}

/* Job i is strategy i; with an autoscaled service, job 2i is strategy i and job 2i + 1 the same
 * with fixed replica counts (one after the other: a slow strategy's two runs overlap). */
#define RUN_JOBS (2 * GS_SIM_STRATEGIES)

struct run_job {
    const struct gs_scenario *sc;
    int next, njobs;
    pthread_mutex_t mu;
    struct gs_sim_result *out, *fixed;
    int rc[RUN_JOBS];
    struct gs_error err[RUN_JOBS];
};

static void *run_worker(void *arg)
{
    struct run_job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int i = j->next < j->njobs ? j->next++ : -1;
        pthread_mutex_unlock(&j->mu);
        if (i < 0)
            return NULL;
        gs_error_init(&j->err[i]);
        bool pairs = j->njobs == RUN_JOBS;
        struct gs_sim_opts o = {.fixed_services = pairs && i % 2};
        int si = pairs ? i / 2 : i;
        j->rc[i] = gs_sim_run_opts(j->sc, &strategies[si], &o,
                                   o.fixed_services ? &j->fixed[si] : &j->out[si], &j->err[i]);
    }
}

static int train_class(const struct gs_scenario *sc)
{
    for (int k = 0; k < sc->nclasses; k++)
        if (sc->classes[k].kind == GS_KIND_TRAINING)
            return k;
    return -1;
}

static void keep_fixed(const struct gs_scenario *sc, const struct gs_sim_result *r,
                       struct gs_sim_fixed *f)
{
    int tk = train_class(sc);
    f->ran = true;
    f->alloc_share = r->alloc_share;
    f->used_share = r->used_share;
    f->gpu_hours = r->gpu_hours;
    f->cost = r->cost;
    f->useful_gpu_hours = r->useful_gpu_hours;
    f->cost_per_useful_hour = r->cost_per_useful_hour;
    f->online_p99_wait = r->online_p99_wait;
    f->online_sla_miss_pct = r->online_sla_miss_pct;
    f->train_p50_wait = tk >= 0 ? r->cls[tk].wait_p50 : 0;
    f->jobs_completed = r->jobs_completed;
    memcpy(f->svc, r->svc, sizeof(f->svc));
}

int gs_sim_run_all(const struct gs_scenario *sc, int threads, struct gs_sim_result *out,
                   struct gs_error *err)
{
    struct run_job *jp = calloc(1, sizeof(*jp));
    bool compare = false;
    for (int k = 0; k < sc->nclasses; k++)
        compare |= sc->classes[k].service.on && sc->classes[k].service.autoscale;
    struct gs_sim_result *fixed = compare ? calloc(GS_SIM_STRATEGIES, sizeof(*fixed)) : NULL;
    if (!jp || (compare && !fixed)) {
        free(jp);
        free(fixed);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    struct run_job *j_ = jp;
#define j (*j_)
    j.sc = sc;
    j.out = out;
    j.fixed = fixed;
    j.njobs = compare ? RUN_JOBS : GS_SIM_STRATEGIES;
    pthread_mutex_init(&j.mu, NULL);
    int nt = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1)
        nt = 1;
    if (nt > j.njobs)
        nt = j.njobs;
    pthread_t th[RUN_JOBS];
    int started = 0;
    for (int t = 0; t < nt; t++)
        if (pthread_create(&th[t], NULL, run_worker, &j) == 0)
            started++;
    if (!started)
        run_worker(&j);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&j.mu);
    int rc = 0;
    for (int i = 0; i < j.njobs && !rc; i++)
        if (j.rc[i]) {
            if (err)
                *err = j.err[i];
            rc = j.rc[i];
            bool pairs = j.njobs == RUN_JOBS;
            gs_error_prefix(err, "strategy '%s'%s", strategies[pairs ? i / 2 : i].name,
                            pairs && i % 2 ? " (fixed replicas)" : "");
        }
    for (int i = 0; compare && !rc && i < GS_SIM_STRATEGIES; i++)
        keep_fixed(sc, &fixed[i], &out[i].fixed);
#undef j
    free(jp);
    free(fixed);
    return rc;
}
