/* cycle.c - one scheduling cycle over a snapshot, returning decisions (see cycle.h). */
#include "cycle.h"

#include "../base/error.h"
#include "gang.h"

#include <stdlib.h>
#include <string.h>

#define MEMO_SLOTS 512

struct cyc {
    const struct gs_cycle_in *in;
    struct gs_cycle_out *out;
    uint8_t *busy; /* per GPU: being re-carved (the input's, and this cycle's) */
    struct gs_recarve_demand dem;
    /* requests that found nothing in this cycle (unconstrained pods): signature, reasons */
    uint64_t memo[MEMO_SLOTS];
    int16_t memo_r[MEMO_SLOTS];
    struct gs_reasons memo_reasons[MEMO_SLOTS / 2];
    int32_t memo_cand[MEMO_SLOTS / 2];
    int nmemo;
    int cur_pod;      /* for the allows hook wrapper */
    uint8_t *allowed; /* in->topo: per node, the small pod's domain (gs_topo_small_domain) */
};

int gs_cycle_engine_nodes(int nnodes)
{
    return nnodes > 64 ? nnodes * 2 : 128;
}

void gs_cycle_out_init(struct gs_cycle_out *o)
{
    memset(o, 0, sizeof(*o));
}

void gs_cycle_out_release(struct gs_cycle_out *o)
{
    free(o->d);
    memset(o, 0, sizeof(*o));
}

static const char *const kind_names[GS_CYC_KINDS] = {"BIND", "EVICT", "NOMINATE", "REPARTITION",
                                                     "WAIT"};
static const char *const why_names[GS_WHY_COUNT] = {"fit",        "quota",       "borrow",
                                                    "gang-short", "gang",        "preempting",
                                                    "recarving",  "constraints", "topology"};

const char *gs_cyc_kind_name(int kind)
{
    return kind >= 0 && kind < GS_CYC_KINDS ? kind_names[kind] : "?";
}

const char *gs_cyc_why_name(int why)
{
    return why >= 0 && why < GS_WHY_COUNT ? why_names[why] : "?";
}

static struct gs_cyc_decision *emit(struct cyc *cy, int kind, int pod)
{
    struct gs_cycle_out *o = cy->out;
    if (o->n == o->cap) {
        int cap = o->cap ? o->cap * 2 : 64;
        void *v = realloc(o->d, sizeof(*o->d) * (size_t)cap);
        if (!v)
            return NULL;
        o->d = v;
        o->cap = cap;
    }
    struct gs_cyc_decision *d = &o->d[o->n++];
    memset(d, 0, sizeof(*d));
    d->kind = (uint8_t)kind;
    d->pod = pod;
    d->victim = d->node = d->gpu = d->failed = -1;
    o->count[kind]++;
    return d;
}

static int wait_pod(struct cyc *cy, int pod, int why, const struct gs_reasons *r, int cand)
{
    struct gs_cyc_decision *d = emit(cy, GS_CYC_WAIT, pod);
    if (!d)
        return GS_ENOMEM;
    d->why = (uint8_t)why;
    d->candidates = cand;
    if (r)
        d->r = *r;
    return 0;
}

/* What a pending pod accounts for: its request and its claimed devices. */
static void pod_demand(const struct gs_cycle_in *in, const struct gs_cyc_pod *p, struct gs_qvec *d)
{
    gs_tenants_demand(in->t, &p->req, d);
    for (int x = 0; x < GS_QR_COUNT; x++)
        d->v[x] += p->claimed.v[x];
}

static void charge(struct cyc *cy, const struct gs_cyc_pod *p, int sign)
{
    if (!cy->in->t)
        return;
    struct gs_qvec d;
    pod_demand(cy->in, p, &d);
    gs_tenants_charge(cy->in->t, p->queue, p->ns, &d, sign);
}

static bool on_busy(const struct cyc *cy, const struct gs_alloc *a)
{
    for (int k = 0; k < a->ndev; k++)
        if (cy->busy[a->gpu[k]])
            return true;
    return false;
}

/* The pod takes devices a: bound now, or held while a GPU is re-carved (or victims leave). */
static int take(struct cyc *cy, int pod, const struct gs_alloc *a, bool hold, int why)
{
    const struct gs_cycle_in *in = cy->in;
    const struct gs_cyc_pod *p = &in->pods[pod];
    if (gs_cluster_bind(in->c, &p->req, a))
        return GS_EINTERNAL;
    bool busy = on_busy(cy, a);
    struct gs_cyc_decision *d = emit(cy, hold || busy ? GS_CYC_NOMINATE : GS_CYC_BIND, pod);
    if (!d)
        return GS_ENOMEM;
    d->node = a->node;
    d->alloc = *a;
    if (d->kind == GS_CYC_NOMINATE)
        d->why = (uint8_t)(busy ? GS_WHY_RECARVING : why);
    charge(cy, p, +1);
    gs_recarve_demand_add(&cy->dem, &p->req, -1);
    if (in->h.placed)
        in->h.placed(in->h.ctx, pod, a->node);
    return 0;
}

/* Evict running pod v for pod: gone from the cluster and its queue for the rest of the cycle. */
static int evict(struct cyc *cy, int v, int pod)
{
    const struct gs_cycle_in *in = cy->in;
    struct gs_running *r = &in->run[v];
    if (r->node < 0)
        return 0;
    struct gs_cyc_decision *d = emit(cy, GS_CYC_EVICT, pod);
    if (!d)
        return GS_ENOMEM;
    d->victim = v;
    d->node = r->node;
    d->gpu_hours = gs_running_gpu_hours(r, in->now_s);
    if (r->node < in->c->nnodes)
        gs_cluster_unbind(in->c, &r->req, &r->alloc);
    if (in->t)
        gs_tenants_charge(in->t, r->queue, in->run_ns ? in->run_ns[v] : NULL, &r->demand, -1);
    r->node = -1;
    r->gang = -1;
    if (in->h.give)
        in->h.give(in->h.ctx, v, true);
    return 0;
}

static struct gs_preempt_ctx preempt_ctx(const struct cyc *cy)
{
    const struct gs_cycle_in *in = cy->in;
    return (struct gs_preempt_ctx){.run = in->run,
                                   .nrun = in->nrun,
                                   .ngangs = in->ngangs,
                                   .pdb_allowed = in->pdb_allowed,
                                   .npdb = in->npdb,
                                   .tenants = in->t,
                                   .now_s = in->now_s,
                                   .min_runtime_s = in->o.min_runtime_s};
}

/* The nodes mask marked: each with the stamp it had and the one mask gave it, and the pod
 * slots it had when mask capped them (-1: marked unschedulable). */
struct masked {
    int n;
    struct {
        int32_t node;
        uint32_t was, now;
        int32_t cap;
    } v[];
};

/* Nodes the pod may not take apart from devices are marked unschedulable (for preemption
 * and gangs, which know no constraints) until unmask. For a gang of n members (n > 0) whose
 * first member's driver devices (h.copies: DRA claims) a node holds fewer than n times, the
 * node's pod slots are capped to that many more, so that the engine and the topology count
 * no more members there than their claims can have. */
static struct masked *mask(struct cyc *cy, int pod, int n)
{
    const struct gs_cycle_in *in = cy->in;
    if (!in->h.allows)
        return NULL;
    struct gs_cluster *c = in->c;
    struct masked *m = malloc(sizeof(*m) + sizeof(m->v[0]) * ((size_t)c->nnodes + 1));
    if (m)
        m->n = 0;
    for (int i = 0; m && i < c->nnodes; i++) {
        struct gs_node *nd = &c->nodes[i];
        if (nd->unschedulable)
            continue;
        int32_t k = -1;
        if (in->h.allows(in->h.ctx, pod, i)) {
            if (n <= 0 || !in->h.copies || (k = in->h.copies(in->h.ctx, pod, i, n)) >= n ||
                nd->pods_cap - nd->pods_used <= k)
                continue;
        }
        m->v[m->n].node = i;
        m->v[m->n].was = nd->version;
        m->v[m->n].cap = k >= 0 ? nd->pods_cap : -1;
        if (k >= 0)
            nd->pods_cap = nd->pods_used + k;
        else
            nd->unschedulable = true;
        gs_node_touch(nd);
        m->v[m->n++].now = nd->version;
    }
    return m;
}

/* The marked nodes as they were: a node nothing else changed meanwhile gets its old stamp
 * back, since it names that very state again, so that what the engine memoised of it still
 * holds (a pod that waits for the one node its volume or affinity allows would otherwise have
 * every node scored again for every shape); a node changed meanwhile gets a fresh one. */
static void unmask(struct cyc *cy, struct masked *m)
{
    struct gs_cluster *c = cy->in->c;
    for (int k = 0; m && k < m->n; k++) {
        struct gs_node *n = &c->nodes[m->v[k].node];
        if (m->v[k].cap >= 0)
            n->pods_cap = m->v[k].cap;
        else
            n->unschedulable = false;
        if (n->version == m->v[k].now)
            n->version = m->v[k].was;
        else
            gs_node_touch(n);
    }
    free(m);
}

static bool memo_find(const struct cyc *cy, uint64_t key, int *slot)
{
    for (uint32_t i = (uint32_t)key % MEMO_SLOTS, n = 0; cy->memo[i] && n < MEMO_SLOTS;
         i = (i + 1) % MEMO_SLOTS, n++)
        if (cy->memo[i] == key) {
            *slot = cy->memo_r[i];
            return true;
        }
    return false;
}

static void memo_add(struct cyc *cy, uint64_t key, const struct gs_reasons *r, int cand)
{
    if (cy->nmemo >= MEMO_SLOTS / 2)
        return; /* full enough: later requests are simply tried */
    uint32_t i = (uint32_t)key % MEMO_SLOTS;
    while (cy->memo[i])
        i = (i + 1) % MEMO_SLOTS;
    cy->memo[i] = key;
    cy->memo_r[i] = (int16_t)cy->nmemo;
    cy->memo_reasons[cy->nmemo] = *r;
    cy->memo_cand[cy->nmemo] = cand;
    cy->nmemo++;
}

static bool allows_node(void *ctx, int node)
{
    struct cyc *cy = ctx;
    return cy->in->h.allows(cy->in->h.ctx, cy->cur_pod, node);
}

/* The driver's devices (gs_cyc_hooks give, fits) for preemption, for pod cy->cur_pod. */
static void extra_give(void *ctx, int32_t run, bool gone)
{
    struct cyc *cy = ctx;
    cy->in->h.give(cy->in->h.ctx, run, gone);
}

static bool extra_fits(void *ctx, int32_t node)
{
    struct cyc *cy = ctx;
    return cy->in->h.fits(cy->in->h.ctx, cy->cur_pod, node);
}

/* Re-carve a GPU for pod (victims: may evict lower-priority pods in the way). Returns 1 when
 * the pod holds its device on the new layout, 0 when no change helps, < 0 on error. */
static int try_recarve(struct cyc *cy, int pod, bool victims, bool modes, bool owed)
{
    const struct gs_cycle_in *in = cy->in;
    const struct gs_cyc_pod *p = &in->pods[pod];
    struct gs_cluster *c = in->c;
    if (p->req.kind != GS_REQ_MIG && !(p->req.kind == GS_REQ_GPU && p->req.milli == GS_MILLI))
        return 0;
    struct gs_preempt_ctx pctx = preempt_ctx(cy);
    struct gs_preemptor pr = {&p->req, p->queue, p->priority, owed};
    cy->cur_pod = pod;
    struct gs_recarve_opts o = {.busy = cy->busy,
                                .changed_s = in->changed_s,
                                .fixed = in->fixed,
                                .now_s = in->now_s,
                                .hold_s = in->o.hold_s,
                                .no_mode_change = !modes,
                                .allows = in->h.allows ? allows_node : NULL,
                                .ctx = cy,
                                .pctx = victims ? &pctx : NULL,
                                .pr = victims ? &pr : NULL};
    struct gs_recarve rv;
    gs_recarve_demand_add(&cy->dem, &p->req, -1);
    int rc = gs_recarve_find(c, &p->req, &cy->dem, &o, &rv);
    gs_recarve_demand_add(&cy->dem, &p->req, +1);
    if (rc == GS_ENOFIT || rc == GS_EINVAL)
        return 0;
    if (rc)
        return rc;
    /* try it on the cluster: victims out, layouts in; undone when the pod would not fit */
    struct gs_gpu saved[GS_MAX_GPUS_NODE];
    int8_t remap[GS_MAX_GPUS_NODE][GS_MIG_COMPUTE_MAX];
    for (int k = 0; k < rv.nvictims; k++)
        gs_cluster_unbind(c, &in->run[rv.victims[k]].req, &in->run[rv.victims[k]].alloc);
    int applied = 0;
    bool ok = true;
    for (; applied < rv.ngpus && ok; applied++) {
        saved[applied] = c->gpus[rv.g[applied].gpu];
        ok = gs_recarve_apply(c, &rv.g[applied], remap[applied]) == 0;
    }
    if (!ok)
        applied--;
    struct gs_alloc a;
    memset(&a, 0, sizeof(a));
    if (ok && !gs_engine_fits(c, rv.node, &p->req, NULL))
        ok = false;
    if (ok && p->req.kind == GS_REQ_MIG) {
        /* the device on the re-carved GPU */
        const struct gs_gpu *g = &c->gpus[rv.g[0].gpu];
        int want = gs_catalog_find_profile(g->model, p->req.mig), slot = -1;
        for (int i = 0; i < g->mig.n && slot < 0; i++)
            if (g->mig.inst[i].profile == want && !(g->mig_used & (1u << i)))
                slot = i;
        ok = slot >= 0;
        a.node = rv.node;
        a.kind = GS_REQ_MIG;
        a.ndev = 1;
        a.gpu[0] = rv.g[0].gpu;
        a.slot[0] = (int8_t)slot;
    } else if (ok) {
        gs_engine_score(in->e, c, rv.node, &p->req, &a);
        a.node = rv.node;
    }
    if (!ok) {
        for (int k = applied - 1; k >= 0; k--)
            c->gpus[rv.g[k].gpu] = saved[k];
        gs_node_touch(&c->nodes[rv.node]);
        for (int k = 0; k < rv.nvictims; k++)
            gs_cluster_bind(c, &in->run[rv.victims[k]].req, &in->run[rv.victims[k]].alloc);
        return 0;
    }
    /* the victims' devices are already free: rebind, then evict as decisions */
    for (int k = 0; k < rv.nvictims; k++) {
        struct gs_running *r = &in->run[rv.victims[k]];
        struct gs_cyc_decision *d = emit(cy, GS_CYC_EVICT, pod);
        if (!d)
            return GS_ENOMEM;
        d->victim = rv.victims[k];
        d->node = r->node;
        d->gpu_hours = gs_running_gpu_hours(r, in->now_s);
        if (in->t)
            gs_tenants_charge(in->t, r->queue, in->run_ns ? in->run_ns[rv.victims[k]] : NULL,
                              &r->demand, -1);
        r->node = -1;
        r->gang = -1;
        if (in->h.give)
            in->h.give(in->h.ctx, rv.victims[k], true);
    }
    if (rv.nvictims)
        cy->out->preemptions++;
    /* instances in use may have moved within their GPU: the running pods follow */
    for (int v = 0; v < in->nrun; v++) {
        struct gs_running *r = &in->run[v];
        for (int k = 0; r->node == rv.node && r->alloc.kind == GS_REQ_MIG && k < rv.ngpus; k++)
            for (int x = 0; x < r->alloc.ndev; x++)
                if (r->alloc.gpu[x] == rv.g[k].gpu && r->alloc.slot[x] >= 0)
                    r->alloc.slot[x] = remap[k][r->alloc.slot[x]];
    }
    for (int k = 0; k < rv.ngpus; k++) {
        struct gs_cyc_decision *d = emit(cy, GS_CYC_REPARTITION, pod);
        if (!d)
            return GS_ENOMEM;
        d->node = rv.node;
        d->gpu = rv.g[k].gpu;
        d->mode = rv.g[k].mode;
        d->mode_change = rv.g[k].mode_change;
        d->layout = rv.g[k].mode == GS_GPU_MIG ? c->gpus[rv.g[k].gpu].mig : rv.g[k].pl;
        gs_mig_placement_sort(&d->layout);
        d->ndestroy = rv.g[k].ndestroy;
        d->ncreate = rv.g[k].ncreate;
        memcpy(d->remap, remap[k], sizeof(d->remap));
        cy->busy[rv.g[k].gpu] = 1;
    }
    rc = take(cy, pod, &a, true, GS_WHY_RECARVING);
    return rc ? rc : 1;
}

/* Preempt for pod: 1 when its victims are chosen and it holds their devices, 0 when no
 * victim set helps (*cand: valid victims seen), < 0 on error. */
static int try_preempt(struct cyc *cy, int pod, bool owed, int *cand)
{
    const struct gs_cycle_in *in = cy->in;
    const struct gs_cyc_pod *p = &in->pods[pod];
    struct masked *m = mask(cy, pod, 0);
    struct gs_preempt_ctx ctx = preempt_ctx(cy);
    struct gs_preempt_extra extra = {extra_give, extra_fits, cy};
    if (in->h.give && in->h.fits) {
        cy->cur_pod = pod;
        ctx.extra = &extra;
    }
    struct gs_preemptor pr = {&p->req, p->queue, p->priority, owed};
    struct gs_preempt_plan plan;
    memset(&plan, 0, sizeof(plan));
    int rc = gs_preempt_plan(in->e, in->c, &ctx, &pr, &plan);
    unmask(cy, m);
    *cand = plan.candidates;
    if (rc == GS_ENOFIT)
        return 0;
    if (rc)
        return rc;
    for (int k = 0; k < plan.nvictims; k++)
        if ((rc = evict(cy, plan.victims[k], pod)))
            return rc;
    cy->out->preemptions++;
    rc = take(cy, pod, &plan.alloc, true, GS_WHY_PREEMPTING);
    return rc ? rc : 1;
}

struct small_fit {
    gs_ktolerates_fn fit;
    void *ctx;
    const uint8_t *allowed;
};

static bool small_fit(void *ctx, int node)
{
    const struct small_fit *s = ctx;
    return s->allowed[node] && (!s->fit || s->fit(s->ctx, node));
}

/* A pod outside a topology gang, in the domain in->topo's small work steering gives it: 0
 * placed, GS_ENOFIT (or 1: no steering) to place it as usual, GS_ENOMEM. */
static int place_small(struct cyc *cy, int pod, const struct gs_kplace *kpl, bool constrained,
                       struct gs_decision *dec, struct gs_reasons *r)
{
    const struct gs_cycle_in *in = cy->in;
    const struct gs_cyc_pod *p = &in->pods[pod];
    if (!in->topo || in->topo->nshapes == 0 ||
        (p->gang >= 0 && p->gang < in->ngangs && in->gangs[p->gang].topo.mode != GS_TOPO_ANY))
        return 1;
    int32_t dom = gs_topo_small_domain(in->topo, in->c, &p->req);
    int n = 0;
    const int32_t *nodes = gs_topo_domain_nodes(in->topo, dom, &n);
    if (n == 0)
        return 1;
    int rc;
    if (!constrained) {
        rc = gs_engine_place_among(in->e, in->c, &p->req, pod, nodes, n, dec);
    } else {
        /* taints and constraints too: the engine with the domain as a further fit */
        if (!cy->allowed && !(cy->allowed = malloc((size_t)in->c->nnodes + 1)))
            return GS_ENOMEM;
        memset(cy->allowed, 0, (size_t)in->c->nnodes);
        for (int i = 0; i < n; i++)
            cy->allowed[nodes[i]] = 1;
        struct gs_kplace k = *kpl;
        struct small_fit sf = {.fit = k.fit, .ctx = k.fit_ctx, .allowed = cy->allowed};
        k.fit = small_fit;
        k.fit_ctx = &sf;
        rc = gs_engine_place_k(in->e, in->c, &p->req, pod, &k, dec, NULL);
    }
    if (rc == GS_ENOFIT)
        memset(r, 0, sizeof(*r));
    return rc;
}

static int schedule_pod(struct cyc *cy, int pod)
{
    const struct gs_cycle_in *in = cy->in;
    const struct gs_cyc_pod *p = &in->pods[pod];
    enum gs_admit adm = GS_ADMIT_OWED;
    if (in->t) {
        struct gs_qvec d;
        pod_demand(in, p, &d);
        adm = gs_tenants_admit(in->t, p->queue, p->ns, &d, NULL, 0);
        if (adm == GS_ADMIT_DENY)
            return wait_pod(cy, pod, GS_WHY_QUOTA, NULL, 0);
    }
    struct gs_kplace kpl;
    memset(&kpl, 0, sizeof(kpl));
    if (in->h.prepare && in->h.prepare(in->h.ctx, pod, &kpl) < 0)
        return wait_pod(cy, pod, GS_WHY_CONSTRAINTS, NULL, 0);
    bool constrained = kpl.ks || kpl.tol || kpl.fit;
    bool owed = adm == GS_ADMIT_OWED;
    uint64_t key = gs_request_sig(&p->req) ^ ((uint64_t)(uint32_t)p->priority << 20) ^
                   ((uint64_t)(uint32_t)p->queue << 52) ^ (owed ? 0 : 1) ^
                   (p->preempt_never ? 2 : 0);
    if (!key)
        key = 1;
    int slot;
    if (!constrained && !p->nomination_live && memo_find(cy, key, &slot))
        return wait_pod(cy, pod, owed ? GS_WHY_FIT : GS_WHY_BORROW, &cy->memo_reasons[slot],
                        cy->memo_cand[slot]);
    struct gs_decision dec;
    struct gs_reasons r;
    memset(&r, 0, sizeof(r));
    int rc = place_small(cy, pod, &kpl, constrained, &dec, &r);
    if (rc == GS_ENOFIT || rc > 0)
        rc = gs_engine_place_k(in->e, in->c, &p->req, pod, constrained ? &kpl : NULL, &dec, &r);
    if (rc == 0)
        return take(cy, pod, &dec.alloc, false, 0);
    if (rc != GS_ENOFIT)
        return rc;
    if (p->nomination_live)
        return wait_pod(cy, pod, GS_WHY_PREEMPTING, &r, 0);
    /* a re-carve that keeps the GPU's mode takes seconds: first; then preemption, and a
     * re-carve that evicts lower-priority pods from the instances in its way; a mode change
     * (a GPU reset, tens of seconds) only when neither helps */
    bool rec = in->o.recarve, may_preempt = in->o.preempt && !p->preempt_never;
    int cand = 0;
    if (rec && (rc = try_recarve(cy, pod, false, false, owed)) != 0)
        return rc < 0 ? rc : 0;
    if (may_preempt && (rc = try_preempt(cy, pod, owed, &cand)) != 0)
        return rc < 0 ? rc : 0;
    if (rec && may_preempt && (rc = try_recarve(cy, pod, true, false, owed)) != 0)
        return rc < 0 ? rc : 0;
    if (rec && (rc = try_recarve(cy, pod, false, true, owed)) != 0)
        return rc < 0 ? rc : 0;
    if (rec && may_preempt && (rc = try_recarve(cy, pod, true, true, owed)) != 0)
        return rc < 0 ? rc : 0;
    if (!constrained)
        memo_add(cy, key, &r, cand);
    return wait_pod(cy, pod, owed ? GS_WHY_FIT : GS_WHY_BORROW, &r, cand);
}

/* A gang's victims: each member that needs them evicts its own; every member holds its
 * devices. Returns 1 when done, 0 when no victim set helps, < 0 on error. */
static int preempt_gang(struct cyc *cy, const int *members, const struct gs_request *const *reqs,
                        int nm, bool owed)
{
    const struct gs_cycle_in *in = cy->in;
    const struct gs_cyc_pod *p0 = &in->pods[members[0]];
    struct gs_preempt_plan *plans = calloc((size_t)nm, sizeof(*plans));
    if (!plans)
        return GS_ENOMEM;
    struct gs_preempt_ctx ctx = preempt_ctx(cy);
    struct gs_preemptor pr = {NULL, p0->queue, p0->priority, owed};
    int rc = gs_gang_preempt(in->e, in->c, in->t, &ctx, &pr, reqs, nm, plans);
    if (rc) {
        free(plans);
        return rc == GS_ENOFIT ? 0 : rc;
    }
    for (int k = 0; !rc && k < nm; k++)
        for (int v = 0; !rc && v < plans[k].nvictims; v++)
            rc = evict(cy, plans[k].victims[v], members[k]);
    for (int k = 0; !rc && k < nm; k++)
        rc = take(cy, members[k], &plans[k].alloc, true, GS_WHY_PREEMPTING);
    cy->out->preemptions++;
    free(plans);
    return rc ? rc : 1;
}

/* The devices a nominated pod would take on its nominated node now, if it fits there. */
static bool nominated_alloc(struct cyc *cy, int pod, struct gs_alloc *a)
{
    const struct gs_cycle_in *in = cy->in;
    const struct gs_cyc_pod *p = &in->pods[pod];
    int node = p->nominated;
    if (node < 0 || node >= in->c->nnodes || !gs_engine_fits(in->c, node, &p->req, NULL))
        return false;
    if (in->h.fits && !in->h.fits(in->h.ctx, pod, node))
        return false; /* the driver's devices (claims of victims still leaving) */
    gs_engine_score(in->e, in->c, node, &p->req, a);
    a->node = node;
    return true;
}

static int schedule_gang(struct cyc *cy, int g)
{
    const struct gs_cycle_in *in = cy->in;
    int members[GS_CYCLE_GANG_MAX], nm = 0;
    bool nominated = false;
    for (int i = 0; i < in->npods && nm < GS_CYCLE_GANG_MAX; i++)
        if (in->pods[i].gang == g) {
            members[nm++] = i;
            nominated |= in->pods[i].nomination_live;
        }
    if (nm == 0)
        return 0;
    const struct gs_cyc_pod *p0 = &in->pods[members[0]];
    int rc = 0;
    if (nm + in->gangs[g].running < in->gangs[g].min_member) {
        for (int k = 0; k < nm && !rc; k++)
            rc = wait_pod(cy, members[k], GS_WHY_GANG_SHORT, NULL, 0);
        return rc;
    }
    const struct gs_request *reqs[GS_CYCLE_GANG_MAX];
    struct gs_qvec sum, d;
    gs_qvec_zero(&sum);
    for (int k = 0; k < nm; k++) {
        reqs[k] = &in->pods[members[k]].req;
        if (in->t) {
            pod_demand(in, &in->pods[members[k]], &d);
            for (int x = 0; x < GS_QR_COUNT; x++)
                sum.v[x] += d.v[x];
        }
    }
    enum gs_admit adm = GS_ADMIT_OWED;
    if (in->t &&
        (adm = gs_tenants_admit(in->t, p0->queue, p0->ns, &sum, NULL, 0)) == GS_ADMIT_DENY) {
        for (int k = 0; k < nm && !rc; k++)
            rc = wait_pod(cy, members[k], GS_WHY_QUOTA, NULL, 0);
        return rc;
    }
    /* the first member's taints and constraints stand for the gang's */
    struct gs_kplace kpl;
    memset(&kpl, 0, sizeof(kpl));
    if (in->h.prepare && in->h.prepare(in->h.ctx, members[0], &kpl) < 0) {
        for (int k = 0; k < nm && !rc; k++)
            rc = wait_pod(cy, members[k], GS_WHY_CONSTRAINTS, NULL, 0);
        return rc;
    }
    struct gs_decision *dec = calloc((size_t)nm, sizeof(*dec));
    if (!dec)
        return GS_ENOMEM;
    struct gs_reasons r;
    memset(&r, 0, sizeof(r));
    int failed = 0;
    struct masked *m = mask(cy, members[0], nm);
    const struct gs_topo_ask *ask = &in->gangs[g].topo;
    struct gs_topo *tp = in->gangs[g].domains ? in->gangs[g].domains : in->topo;
    bool topo = tp && ask->mode != GS_TOPO_ANY;
    struct gs_topo_result tr;
    memset(&tr, 0, sizeof(tr));
    if ((topo ? gs_topo_gang_place(tp, in->e, in->c, ask, reqs, nm, dec, &failed, &r, &tr)
              : gs_gang_place(in->e, in->c, reqs, nm, dec, &failed, &r)) == 0) {
        unmask(cy, m);
        for (int k = 0; k < nm; k++)
            gs_cluster_unbind(in->c, reqs[k], &dec[k].alloc);
        for (int k = 0; k < nm && !rc; k++)
            rc = take(cy, members[k], &dec[k].alloc, false, 0);
        free(dec);
        return rc;
    }
    free(dec);
    if (topo && tr.why[0]) {
        unmask(cy, m);
        for (int k = 0; k < nm && !rc; k++) {
            rc = wait_pod(cy, members[k], GS_WHY_TOPOLOGY, NULL, 0);
            if (!rc)
                cy->out->d[cy->out->n - 1].topo_room = tr.room;
        }
        return rc;
    }
    if (!topo && !nominated && in->o.preempt && !p0->preempt_never &&
        (rc = preempt_gang(cy, members, reqs, nm, adm == GS_ADMIT_OWED)) != 0) {
        unmask(cy, m);
        return rc < 0 ? rc : 0;
    }
    unmask(cy, m);
    if (nominated) {
        /* victims still leaving: what is free on each nominated node waits for its member */
        for (int k = 0; k < nm && !rc; k++) {
            struct gs_alloc a;
            if (nominated_alloc(cy, members[k], &a))
                rc = take(cy, members[k], &a, true, GS_WHY_PREEMPTING);
            else
                rc = wait_pod(cy, members[k], GS_WHY_PREEMPTING, &r, 0);
        }
        return rc;
    }
    for (int k = 0; k < nm && !rc; k++) {
        rc = wait_pod(cy, members[k], GS_WHY_GANG, &r, 0);
        if (!rc)
            cy->out->d[cy->out->n - 1].failed = members[failed];
    }
    return rc;
}

struct qitem {
    int32_t pod, prio, qprio;
    int borrow;
    double drf;
    uint64_t seq;
};

static int cmp_qitem(const void *a, const void *b)
{
    const struct qitem *x = a, *y = b;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    if (x->borrow != y->borrow)
        return x->borrow - y->borrow;
    if (x->qprio != y->qprio)
        return x->qprio > y->qprio ? -1 : 1;
    if (x->drf != y->drf)
        return x->drf < y->drf ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (x->pod > y->pod) - (x->pod < y->pod);
}

int gs_cycle_run(const struct gs_cycle_in *in, struct gs_cycle_out *out)
{
    struct cyc *cy = calloc(1, sizeof(*cy));
    if (!cy)
        return GS_ENOMEM;
    cy->in = in;
    cy->out = out;
    size_t np = in->npods > 0 ? (size_t)in->npods : 1;
    cy->busy = calloc((size_t)in->c->ngpus + 1, 1);
    uint8_t *done = calloc(np, 1), *gang_done = calloc((size_t)in->ngangs + 1, 1);
    struct qitem *q = malloc(sizeof(*q) * np);
    int rc = 0;
    if (!cy->busy || !done || !gang_done || !q) {
        rc = GS_ENOMEM;
        goto out;
    }
    if (in->busy)
        memcpy(cy->busy, in->busy, (size_t)in->c->ngpus);
    /* what re-carving weighs free instances by: the pending demand, and what runs now (the
     * best guess of what will be asked again soon) */
    for (int i = 0; i < in->npods; i++)
        if (in->pods[i].nominated < 0)
            gs_recarve_demand_add(&cy->dem, &in->pods[i].req, +1);
    for (int v = 0; v < in->nrun; v++)
        if (in->run[v].node >= 0)
            gs_recarve_demand_add(&cy->dem, &in->run[v].req, +1);
    /* pods nominated earlier: to their node, due or not */
    for (int i = 0; i < in->npods && !rc; i++) {
        const struct gs_cyc_pod *p = &in->pods[i];
        if (p->nominated < 0)
            continue;
        if (p->gang >= 0 && p->gang < in->ngangs) {
            if (!gang_done[p->gang]) {
                gang_done[p->gang] = 1;
                rc = schedule_gang(cy, p->gang);
            }
            continue;
        }
        struct gs_alloc a;
        if (!nominated_alloc(cy, i, &a))
            continue;
        rc = take(cy, i, &a, false, 0);
        done[i] = 1;
    }
    /* the others in queue order */
    int nq = 0;
    for (int i = 0; i < in->npods && !rc; i++) {
        const struct gs_cyc_pod *p = &in->pods[i];
        if (done[i] || !p->due || (p->gang >= 0 && p->gang < in->ngangs && gang_done[p->gang]))
            continue;
        struct qitem *it = &q[nq++];
        it->pod = i;
        it->prio = p->priority;
        it->seq = p->seq;
        it->borrow = 0;
        it->qprio = 0;
        it->drf = 0;
        if (in->t) {
            struct gs_qvec d;
            pod_demand(in, p, &d);
            it->borrow = gs_tenants_admit(in->t, p->queue, p->ns, &d, NULL, 0) != GS_ADMIT_OWED;
            it->drf = gs_tenants_drf(in->t, p->queue);
            it->qprio = p->queue >= 0 && p->queue < in->t->nq ? in->t->q[p->queue].priority : 0;
        }
    }
    qsort(q, (size_t)nq, sizeof(*q), cmp_qitem);
    for (int k = 0; k < nq && !rc; k++) {
        int i = q[k].pod;
        const struct gs_cyc_pod *p = &in->pods[i];
        if (p->gang >= 0 && p->gang < in->ngangs) {
            if (!gang_done[p->gang]) {
                gang_done[p->gang] = 1;
                rc = schedule_gang(cy, p->gang);
            }
            continue;
        }
        rc = schedule_pod(cy, i);
    }
out:
    free(q);
    free(done);
    free(gang_done);
    free(cy->allowed);
    free(cy->busy);
    free(cy);
    return rc;
}
