/* preempt.c - victim choice (see preempt.h). */
#include "preempt.h"

#include "../base/error.h"

#include <stdlib.h>
#include <string.h>

double gs_running_gpu_hours(const struct gs_running *r, double now_s)
{
    double run = now_s - r->start_s;
    if (run < 0)
        run = 0;
    return run / 3600.0 * (double)r->demand.v[GS_QR_UNITS] / 1000.0;
}

struct node_lb {
    int32_t node;
    double lb;
};

static int cmp_lb(const void *a, const void *b)
{
    const struct node_lb *x = a, *y = b;
    if (x->lb != y->lb)
        return x->lb < y->lb ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* A victim group: one pod, or a whole gang. */
struct group {
    int32_t first, count;   /* members in the group member list */
    int32_t local0, nlocal; /* members on the node being searched, in the local list */
    double cost;
    int32_t pods;
};

struct search {
    const struct gs_preempt_ctx *ctx;
    const struct gs_preemptor *p;
    struct gs_cluster *c;
    int32_t *by_node, *node_start; /* CSR of running pods by node */
    int32_t *by_gang, *gang_start; /* CSR by gang */
    int8_t *elig;                  /* per running pod: -1 unknown, 0 no, 1 yes */
    int8_t *gang_elig;             /* per gang */
    struct group *g;
    int32_t *members; /* group members (running indexes) */
    int32_t *local;   /* members on the node */
    int32_t *order;
    int32_t *pdb_use;
    struct node_lb *node_lb;
    double *mask_cost; /* 2^GS_PREEMPT_EXACT */
    int32_t *mask_pods;
    int32_t ng, nmem, nlocal;
    /* best so far over all nodes */
    bool have;
    double best_cost;
    int32_t best_pods;
};

static bool pod_eligible(const struct search *s, int r)
{
    const struct gs_preempt_ctx *ctx = s->ctx;
    const struct gs_running *v = &ctx->run[r];
    if (ctx->taken && ctx->taken[r])
        return false;
    if (ctx->now_s - v->start_s < ctx->min_runtime_s)
        return false;
    bool same = !ctx->tenants || v->queue == s->p->queue || v->queue < 0 || s->p->queue < 0;
    if (same)
        return v->priority < s->p->priority;
    return s->p->owed; /* reclaim; the victim queue's share is checked per set */
}

static bool eligible(struct search *s, int r)
{
    const struct gs_running *v = &s->ctx->run[r];
    if (v->gang < 0 || v->gang >= s->ctx->ngangs) {
        if (s->elig[r] < 0)
            s->elig[r] = pod_eligible(s, r);
        return s->elig[r];
    }
    if (s->gang_elig[v->gang] < 0) {
        bool ok = true;
        for (int k = s->gang_start[v->gang]; ok && k < s->gang_start[v->gang + 1]; k++)
            ok = pod_eligible(s, s->by_gang[k]);
        s->gang_elig[v->gang] = ok;
    }
    return s->gang_elig[v->gang];
}

/* Budgets and deserved shares for the groups in mask (bit i: order[i]). */
static bool set_valid(struct search *s, uint32_t mask, const int32_t *grp, int n)
{
    const struct gs_preempt_ctx *ctx = s->ctx;
    if (ctx->npdb > 0) {
        memset(s->pdb_use, 0, sizeof(*s->pdb_use) * (size_t)ctx->npdb);
        for (int i = 0; i < n; i++) {
            if (!(mask >> i & 1))
                continue;
            const struct group *G = &s->g[grp[i]];
            for (int k = 0; k < G->count; k++) {
                int pdb = ctx->run[s->members[G->first + k]].pdb;
                if (pdb >= 0 && pdb < ctx->npdb && ++s->pdb_use[pdb] > ctx->pdb_allowed[pdb])
                    return false;
            }
        }
    }
    if (!ctx->tenants || s->p->queue < 0)
        return true;
    /* reclaim: the sum taken from each other queue keeps it at or above deserved */
    for (int i = 0; i < n; i++) {
        if (!(mask >> i & 1))
            continue;
        const struct group *G = &s->g[grp[i]];
        int q = ctx->run[s->members[G->first]].queue;
        if (q < 0 || q == s->p->queue)
            continue;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = (mask >> j & 1) && ctx->run[s->members[s->g[grp[j]].first]].queue == q;
        if (seen)
            continue;
        struct gs_qvec sum;
        gs_qvec_zero(&sum);
        for (int j = i; j < n; j++) {
            if (!(mask >> j & 1))
                continue;
            const struct group *H = &s->g[grp[j]];
            if (ctx->run[s->members[H->first]].queue != q)
                continue;
            for (int k = 0; k < H->count; k++)
                for (int d = 0; d < GS_QR_COUNT; d++)
                    sum.v[d] += ctx->run[s->members[H->first + k]].demand.v[d];
        }
        if (!gs_tenants_reclaimable(ctx->tenants, q, s->p->queue, &sum))
            return false;
    }
    return true;
}

static void set_bound(struct search *s, const struct group *G, int sign)
{
    const struct gs_preempt_extra *x = s->ctx->extra;
    for (int k = 0; k < G->nlocal; k++) {
        int r = s->local[G->local0 + k];
        const struct gs_running *v = &s->ctx->run[r];
        if (sign > 0)
            gs_cluster_bind(s->c, &v->req, &v->alloc);
        else
            gs_cluster_unbind(s->c, &v->req, &v->alloc);
        if (x && x->give)
            x->give(x->ctx, r, sign < 0);
    }
}

/* Whether the preemptor fits node n as the cluster (and the caller's further resources)
 * stand. */
static bool fits_node(const struct search *s, int n)
{
    const struct gs_preempt_extra *x = s->ctx->extra;
    return gs_engine_fits(s->c, n, s->p->req, NULL) && (!x || !x->fits || x->fits(x->ctx, n));
}

static bool cheaper(double cost, int pods, double bcost, int bpods)
{
    if (cost < bcost - 1e-9)
        return true;
    return cost <= bcost + 1e-9 && pods < bpods;
}

/* Groups in ascending cost, then pods (insertion sort: at most GS_PREEMPT_MAX_VICTIMS). */
static void sort_groups(int32_t *ord, int n, const struct group *g)
{
    for (int i = 1; i < n; i++) {
        int32_t x = ord[i];
        int j = i - 1;
        while (j >= 0 && cheaper(g[x].cost, g[x].pods, g[ord[j]].cost, g[ord[j]].pods)) {
            ord[j + 1] = ord[j];
            j--;
        }
        ord[j + 1] = x;
    }
}

/* Groups with a member on node n; returns how many (s->g, members, local filled). */
static int node_groups(struct search *s, int n)
{
    const struct gs_preempt_ctx *ctx = s->ctx;
    s->ng = s->nmem = s->nlocal = 0;
    for (int k = s->node_start[n]; k < s->node_start[n + 1]; k++) {
        int r = s->by_node[k];
        if (!eligible(s, r))
            continue;
        const struct gs_running *v = &ctx->run[r];
        if (v->gang >= 0 && v->gang < ctx->ngangs) {
            /* one group per gang: skip members after the first on this node */
            bool dup = false;
            for (int j = 0; j < s->ng && !dup; j++)
                dup = ctx->run[s->members[s->g[j].first]].gang == v->gang;
            if (dup)
                continue;
        }
        if (s->ng >= GS_PREEMPT_MAX_VICTIMS)
            break;
        if (v->gang >= 0 && v->gang < ctx->ngangs &&
            s->gang_start[v->gang + 1] - s->gang_start[v->gang] > GS_PREEMPT_MAX_VICTIMS)
            continue; /* a gang too large to report as one eviction */
        struct group *G = &s->g[s->ng];
        memset(G, 0, sizeof(*G));
        G->first = s->nmem;
        G->local0 = s->nlocal;
        if (v->gang >= 0 && v->gang < ctx->ngangs) {
            for (int j = s->gang_start[v->gang]; j < s->gang_start[v->gang + 1]; j++) {
                int m = s->by_gang[j];
                s->members[s->nmem++] = m;
                if (ctx->run[m].node == n)
                    s->local[s->nlocal++] = m;
            }
        } else {
            s->members[s->nmem++] = r;
            s->local[s->nlocal++] = r;
        }
        G->count = s->nmem - G->first;
        G->nlocal = s->nlocal - G->local0;
        G->pods = G->count;
        for (int k2 = 0; k2 < G->count; k2++)
            G->cost += gs_running_gpu_hours(&ctx->run[s->members[G->first + k2]], ctx->now_s);
        s->ng++;
    }
    return s->ng;
}

/* Search one node: the cheapest valid set of its groups, if cheaper than the best so far.
 * On entry everything is bound; on exit too. Returns the mask over order[] or 0. */
static uint32_t search_node(struct search *s, int n, double *cost_out, int *pods_out)
{
    int ng = s->ng;
    int32_t *ord = s->order;
    for (int i = 0; i < ng; i++)
        ord[i] = i;
    sort_groups(ord, ng, s->g);
    if (s->have && !cheaper(s->g[ord[0]].cost, s->g[ord[0]].pods, s->best_cost, s->best_pods))
        return 0; /* even its cheapest group costs more than the best plan so far */
    /* can evicting every candidate make room at all? */
    for (int i = 0; i < ng; i++)
        set_bound(s, &s->g[ord[i]], -1);
    bool room = fits_node(s, n);
    if (!room) {
        for (int i = 0; i < ng; i++)
            set_bound(s, &s->g[ord[i]], +1);
        return 0;
    }
    uint32_t best = 0;
    double bcost = s->have ? s->best_cost : 1e300;
    int bpods = s->have ? s->best_pods : 1 << 30;
    if (ng <= GS_PREEMPT_EXACT) {
        /* exhaustive: from "all evicted", test each mask cheaper than the best */
        for (int i = 0; i < ng; i++)
            set_bound(s, &s->g[ord[i]], +1);
        uint32_t cur = 0; /* evicted groups now */
        double *mc = s->mask_cost;
        int32_t *mp = s->mask_pods;
        mc[0] = 0;
        mp[0] = 0;
        for (uint32_t m = 1; m < (1u << ng); m++) {
            int low = __builtin_ctz(m);
            mc[m] = mc[m & (m - 1)] + s->g[ord[low]].cost;
            mp[m] = mp[m & (m - 1)] + s->g[ord[low]].pods;
            double cost = mc[m];
            int pods = mp[m];
            if (!cheaper(cost, pods, bcost, bpods))
                continue;
            if (!set_valid(s, m, ord, ng))
                continue;
            for (int i = 0; i < ng; i++) {
                bool want = m >> i & 1, is = cur >> i & 1;
                if (want != is)
                    set_bound(s, &s->g[ord[i]], want ? -1 : +1);
            }
            cur = m;
            if (fits_node(s, n)) {
                best = m;
                bcost = cost;
                bpods = pods;
            }
        }
        for (int i = 0; i < ng; i++)
            if (cur >> i & 1)
                set_bound(s, &s->g[ord[i]], +1);
    } else {
        /* greedy in cost order, then drop what is not needed, most expensive first */
        for (int i = 0; i < ng; i++)
            set_bound(s, &s->g[ord[i]], +1);
        uint32_t m = 0;
        int i;
        for (i = 0; i < ng && i < 32; i++) {
            set_bound(s, &s->g[ord[i]], -1);
            m |= 1u << i;
            if (fits_node(s, n))
                break;
        }
        if (i < ng && i < 32) {
            for (int j = i; j >= 0; j--) {
                set_bound(s, &s->g[ord[j]], +1);
                if (fits_node(s, n))
                    m &= ~(1u << j);
                else
                    set_bound(s, &s->g[ord[j]], -1);
            }
            double cost = 0;
            int pods = 0;
            for (int j = 0; j < ng && j < 32; j++)
                if (m >> j & 1) {
                    cost += s->g[ord[j]].cost;
                    pods += s->g[ord[j]].pods;
                }
            if (cheaper(cost, pods, bcost, bpods) && set_valid(s, m, ord, ng < 32 ? ng : 32)) {
                best = m;
                bcost = cost;
                bpods = pods;
            }
        }
        for (int j = 0; j < ng && j < 32; j++)
            if (m >> j & 1)
                set_bound(s, &s->g[ord[j]], +1);
    }
    *cost_out = bcost;
    *pods_out = bpods;
    return best;
}

static int32_t *csr(const struct gs_running *run, int nrun, int nkeys, bool by_gang,
                    int32_t **start_out)
{
    int32_t *start = calloc((size_t)nkeys + 2, sizeof(*start));
    int32_t *idx = malloc(sizeof(*idx) * (size_t)(nrun > 0 ? nrun : 1));
    if (!start || !idx) {
        free(start);
        free(idx);
        return NULL;
    }
    for (int r = 0; r < nrun; r++) {
        int k = by_gang ? run[r].gang : run[r].node;
        if (k >= 0 && k < nkeys)
            start[k + 1]++;
    }
    for (int k = 0; k < nkeys; k++)
        start[k + 1] += start[k];
    int32_t *pos = malloc(sizeof(*pos) * (size_t)(nkeys > 0 ? nkeys : 1));
    if (!pos) {
        free(start);
        free(idx);
        return NULL;
    }
    memcpy(pos, start, sizeof(*pos) * (size_t)nkeys);
    for (int r = 0; r < nrun; r++) {
        int k = by_gang ? run[r].gang : run[r].node;
        if (k >= 0 && k < nkeys)
            idx[pos[k]++] = r;
    }
    free(pos);
    *start_out = start;
    return idx;
}

int gs_preempt_plan(struct gs_engine *e, struct gs_cluster *c, const struct gs_preempt_ctx *ctx,
                    const struct gs_preemptor *p, struct gs_preempt_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->node = -1;
    struct search s;
    memset(&s, 0, sizeof(s));
    s.ctx = ctx;
    s.p = p;
    s.c = c;
    int nrun = ctx->nrun, rc = GS_ENOFIT;
    size_t an = nrun > 0 ? (size_t)nrun : 1;
    s.by_node = csr(ctx->run, nrun, c->nnodes, false, &s.node_start);
    s.by_gang = csr(ctx->run, nrun, ctx->ngangs, true, &s.gang_start);
    s.elig = malloc(an);
    s.gang_elig = malloc((size_t)ctx->ngangs + 1);
    s.g = malloc(sizeof(*s.g) * GS_PREEMPT_MAX_VICTIMS);
    s.members = malloc(sizeof(*s.members) * (an + GS_PREEMPT_MAX_VICTIMS));
    s.local = malloc(sizeof(*s.local) * (an + GS_PREEMPT_MAX_VICTIMS));
    s.order = malloc(sizeof(*s.order) * GS_PREEMPT_MAX_VICTIMS);
    s.pdb_use = malloc(sizeof(*s.pdb_use) * (size_t)(ctx->npdb + 1));
    s.mask_cost = malloc(sizeof(*s.mask_cost) << GS_PREEMPT_EXACT);
    s.node_lb = malloc(sizeof(*s.node_lb) * (size_t)(c->nnodes + 1));
    s.mask_pods = malloc(sizeof(*s.mask_pods) << GS_PREEMPT_EXACT);
    if (!s.mask_cost || !s.mask_pods || !s.node_lb || !s.by_node || !s.by_gang || !s.elig ||
        !s.gang_elig || !s.g || !s.members || !s.local || !s.order || !s.pdb_use) {
        rc = GS_ENOMEM;
        goto done;
    }
    memset(s.elig, 0xff, an);
    memset(s.gang_elig, 0xff, (size_t)ctx->ngangs + 1);
    for (int r = 0; r < nrun; r++)
        out->candidates += eligible(&s, r);
    if (out->candidates == 0)
        goto done;
    /* nodes by the cost of their cheapest valid victim (a lower bound of any plan there):
     * once a plan costs no more than the next node's bound, no later node can beat it */
    int nn = 0;
    for (int n = 0; n < c->nnodes; n++) {
        double lb = -1;
        for (int k = s.node_start[n]; k < s.node_start[n + 1]; k++) {
            int r = s.by_node[k];
            if (!eligible(&s, r))
                continue;
            const struct gs_running *v = &ctx->run[r];
            double cost = 0;
            if (v->gang >= 0 && v->gang < ctx->ngangs)
                for (int j = s.gang_start[v->gang]; j < s.gang_start[v->gang + 1]; j++)
                    cost += gs_running_gpu_hours(&ctx->run[s.by_gang[j]], ctx->now_s);
            else
                cost = gs_running_gpu_hours(v, ctx->now_s);
            if (lb < 0 || cost < lb)
                lb = cost;
        }
        if (lb >= 0) {
            s.node_lb[nn].node = n;
            s.node_lb[nn++].lb = lb;
        }
    }
    qsort(s.node_lb, (size_t)nn, sizeof(*s.node_lb), cmp_lb);
    for (int ni = 0; ni < nn; ni++) {
        int n = s.node_lb[ni].node;
        if (s.have && !cheaper(s.node_lb[ni].lb, 1, s.best_cost, s.best_pods))
            break;
        if (node_groups(&s, n) == 0)
            continue;
        double cost;
        int pods;
        uint32_t m = search_node(&s, n, &cost, &pods);
        if (!m)
            continue;
        s.have = true;
        s.best_cost = cost;
        s.best_pods = pods;
        out->node = n;
        out->gpu_hours = cost;
        out->nvictims = 0;
        for (int i = 0; i < s.ng && i < 32; i++) {
            if (!(m >> i & 1))
                continue;
            const struct group *G = &s.g[s.order[i]];
            for (int k = 0; k < G->count && out->nvictims < GS_PREEMPT_MAX_VICTIMS; k++)
                out->victims[out->nvictims++] = s.members[G->first + k];
        }
    }
    if (out->node >= 0) {
        /* the preemptor's devices with the victims gone */
        for (int i = 0; i < out->nvictims; i++) {
            const struct gs_running *v = &ctx->run[out->victims[i]];
            if (v->node == out->node)
                gs_cluster_unbind(c, &v->req, &v->alloc);
        }
        gs_engine_score(e, c, out->node, p->req, &out->alloc);
        out->alloc.node = out->node;
        for (int i = 0; i < out->nvictims; i++) {
            const struct gs_running *v = &ctx->run[out->victims[i]];
            if (v->node == out->node)
                gs_cluster_bind(c, &v->req, &v->alloc);
        }
        rc = 0;
    }
done:
    free(s.by_node);
    free(s.node_start);
    free(s.by_gang);
    free(s.gang_start);
    free(s.elig);
    free(s.gang_elig);
    free(s.g);
    free(s.members);
    free(s.local);
    free(s.order);
    free(s.pdb_use);
    free(s.mask_cost);
    free(s.node_lb);
    free(s.mask_pods);
    return rc;
}

int gs_gang_preempt(struct gs_engine *e, struct gs_cluster *c, struct gs_tenants *t,
                    const struct gs_preempt_ctx *ctx, const struct gs_preemptor *p,
                    const struct gs_request *const *reqs, int n, struct gs_preempt_plan *plans)
{
    int nrun = ctx->nrun, rc = 0;
    size_t an = nrun > 0 ? (size_t)nrun : 1;
    uint8_t *gone = calloc(an, 1); /* 1: taken before (ctx->taken), 2: chosen here */
    bool *placed = calloc((size_t)(n > 0 ? n : 1), 1);
    int32_t *allowed = malloc(sizeof(*allowed) * (size_t)(ctx->npdb + 1));
    if (!gone || !placed || !allowed) {
        rc = GS_ENOMEM;
        goto done;
    }
    if (ctx->npdb > 0)
        memcpy(allowed, ctx->pdb_allowed, sizeof(*allowed) * (size_t)ctx->npdb);
    if (ctx->taken)
        memcpy(gone, ctx->taken, (size_t)nrun);
    memset(plans, 0, sizeof(*plans) * (size_t)(n > 0 ? n : 0));
    /* first every member that fits as things stand (a shape that did not fit is not tried
     * again: the members placed since only took room) */
    uint64_t nofit[8];
    int nnofit = 0;
    for (int i = 0; i < n; i++) {
        plans[i].node = -1;
        uint64_t sig = gs_request_sig(reqs[i]);
        bool known = false;
        for (int k = 0; k < nnofit && !known; k++)
            known = nofit[k] == sig;
        struct gs_decision d;
        if (known)
            continue;
        if (gs_engine_place(e, c, reqs[i], i, &d, NULL) != 0) {
            if (nnofit < 8)
                nofit[nnofit++] = sig;
            continue;
        }
        if ((rc = gs_cluster_bind(c, reqs[i], &d.alloc)))
            goto done;
        plans[i].node = d.alloc.node;
        plans[i].alloc = d.alloc;
        placed[i] = true;
    }
    /* then victims for the rest, one member after another, never a pod chosen before */
    struct gs_preempt_ctx c2 = *ctx;
    c2.extra = NULL; /* members' further resources are not modelled */
    c2.pdb_allowed = allowed;
    c2.taken = gone;
    for (int i = 0; i < n; i++) {
        if (placed[i])
            continue;
        struct gs_preemptor p2 = *p;
        p2.req = reqs[i];
        if ((rc = gs_preempt_plan(e, c, &c2, &p2, &plans[i])))
            goto done;
        for (int k = 0; k < plans[i].nvictims; k++) {
            int r = plans[i].victims[k];
            const struct gs_running *v = &ctx->run[r];
            gone[r] = 2;
            if (v->node >= 0 && v->node < c->nnodes)
                gs_cluster_unbind(c, &v->req, &v->alloc);
            if (t)
                gs_tenants_charge(t, v->queue, NULL, &v->demand, -1);
            if (v->pdb >= 0 && v->pdb < ctx->npdb)
                allowed[v->pdb]--;
        }
        if ((rc = gs_cluster_bind(c, reqs[i], &plans[i].alloc)))
            goto done;
        placed[i] = true;
    }
done:
    /* as it was: members out, victims back */
    for (int i = 0; placed && i < n; i++)
        if (placed[i])
            gs_cluster_unbind(c, reqs[i], &plans[i].alloc);
    for (int r = 0; gone && r < nrun; r++) {
        if (gone[r] != 2)
            continue;
        const struct gs_running *v = &ctx->run[r];
        if (v->node >= 0 && v->node < c->nnodes)
            gs_cluster_bind(c, &v->req, &v->alloc);
        if (t)
            gs_tenants_charge(t, v->queue, NULL, &v->demand, +1);
    }
    free(gone);
    free(placed);
    free(allowed);
    return rc;
}
