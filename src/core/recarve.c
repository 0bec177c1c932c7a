/* recarve.c - choosing a GPU and a new MIG layout for a request (see recarve.h). */
#include "recarve.h"

#include "../base/error.h"
#include "mig.h"
#include "tenant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYOUTS 512

static int demand_index(const struct gs_recarve_demand *d, const char *name)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->name[i], name) == 0)
            return i;
    return -1;
}

void gs_recarve_demand_add(struct gs_recarve_demand *d, const struct gs_request *r, int sign)
{
    if (r->kind == GS_REQ_GPU && r->milli == GS_MILLI) {
        int64_t w = (int64_t)d->whole + sign * (int64_t)r->gpus;
        d->whole = w > 0 ? (uint32_t)w : 0;
        return;
    }
    if (r->kind != GS_REQ_MIG)
        return;
    int i = demand_index(d, r->mig);
    if (i < 0) {
        if (sign < 0 || d->n >= GS_RECARVE_PROFILES)
            return;
        i = d->n++;
        snprintf(d->name[i], sizeof(d->name[i]), "%s", r->mig);
        d->count[i] = 0;
    }
    if (sign > 0)
        d->count[i]++;
    else if (d->count[i] > 0)
        d->count[i]--;
}

static uint32_t demand_of(const struct gs_recarve_demand *d, const char *name)
{
    int i = demand_index(d, name);
    return i < 0 ? 0 : d->count[i];
}

/* What the free instances (counts per profile index) are worth to the pending demand. */
static double value_of(int model, const uint8_t *free, const struct gs_recarve_demand *d)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    double v = 0;
    for (int p = 0; p < m->nprofiles; p++) {
        uint32_t want = demand_of(d, m->profiles[p].name);
        uint32_t n = free[p] < want ? free[p] : want;
        v += n * gs_mig_profile_units(&m->profiles[p]);
    }
    return v;
}

/* A running pod that may be evicted for the preemptor to re-carve: lower priority in the
 * preemptor's queue (or either without one), past the minimum run time, not taken. */
static bool victim_ok(const struct gs_recarve_opts *o, int r)
{
    const struct gs_preempt_ctx *x = o->pctx;
    const struct gs_running *v = &x->run[r];
    if (v->node < 0 || (x->taken && x->taken[r]))
        return false;
    if (x->now_s - v->start_s < x->min_runtime_s)
        return false;
    bool same = !x->tenants || v->queue == o->pr->queue || v->queue < 0 || o->pr->queue < 0;
    if (same)
        return v->priority < o->pr->priority;
    return o->pr->owed; /* reclaim: the victim queue's share is checked per candidate */
}

/* Reclaim keeps every other queue the victims come from at or above its deserved share. */
static bool reclaim_ok(const struct gs_recarve_opts *o, const int32_t *vic, int nv)
{
    const struct gs_preempt_ctx *x = o->pctx;
    if (!x->tenants || o->pr->queue < 0)
        return true;
    for (int i = 0; i < nv; i++) {
        int q = x->run[vic[i]].queue;
        bool seen = q < 0 || q == o->pr->queue;
        for (int j = 0; j < i && !seen; j++)
            seen = x->run[vic[j]].queue == q;
        if (seen)
            continue;
        struct gs_qvec sum;
        gs_qvec_zero(&sum);
        for (int j = i; j < nv; j++)
            if (x->run[vic[j]].queue == q)
                for (int d = 0; d < GS_QR_COUNT; d++)
                    sum.v[d] += x->run[vic[j]].demand.v[d];
        if (!gs_tenants_reclaimable(x->tenants, q, o->pr->queue, &sum))
            return false;
    }
    return true;
}

/* A victim whole: r and, when it is a gang member, every running member, each a valid
 * victim; added to vic (no duplicates) with their budget use. Returns false when any member
 * is not a valid victim, a budget would be exceeded or the list is full. */
static bool add_victim(const struct gs_recarve_opts *o, int r, int32_t *vic, int *nv,
                       int32_t *pdb_use)
{
    const struct gs_preempt_ctx *x = o->pctx;
    int g = x->run[r].gang;
    for (int k = 0; k < x->nrun; k++) {
        if (k != r && (g < 0 || x->run[k].gang != g || x->run[k].node < 0))
            continue;
        bool have = false;
        for (int j = 0; j < *nv && !have; j++)
            have = vic[j] == k;
        if (have)
            continue;
        if (!victim_ok(o, k) || *nv >= GS_PREEMPT_MAX_VICTIMS)
            return false;
        int b = x->run[k].pdb;
        if (b >= 0 && b < x->npdb) {
            if (pdb_use[b] + 1 > x->pdb_allowed[b])
                return false;
            pdb_use[b]++;
        }
        vic[(*nv)++] = k;
    }
    return true;
}

/* The running pod holding instance `slot` of GPU gi (-1: none known). */
static int holder(const struct gs_preempt_ctx *x, int gi, int slot)
{
    for (int k = 0; x && k < x->nrun; k++) {
        const struct gs_running *v = &x->run[k];
        if (v->node < 0 || v->alloc.kind != GS_REQ_MIG)
            continue;
        for (int d = 0; d < v->alloc.ndev; d++)
            if (v->alloc.gpu[d] == gi && v->alloc.slot[d] == slot)
                return k;
    }
    return -1;
}

static bool gpu_touchable(const struct gs_cluster *c, int gi, const struct gs_recarve_opts *o)
{
    const struct gs_gpu *g = &c->gpus[gi];
    if (!g->healthy || (o->busy && o->busy[gi]) || (o->fixed && o->fixed[gi]))
        return false;
    if (o->changed_s && o->changed_s[gi] > 0 && o->now_s - o->changed_s[gi] < o->hold_s)
        return false;
    return true;
}

/* Is this candidate better than the best so far? */
static bool better(const struct gs_recarve *a, const struct gs_recarve *b, bool have)
{
    if (!have)
        return true;
    if ((a->nvictims > 0) != (b->nvictims > 0))
        return a->nvictims == 0;
    if (a->gpu_hours != b->gpu_hours)
        return a->gpu_hours < b->gpu_hours;
    bool am = a->g[0].mode_change, bm = b->g[0].mode_change;
    if (am != bm)
        return !am;
    if (a->gain != b->gain)
        return a->gain > b->gain;
    int ac = a->g[0].ndestroy + a->g[0].ncreate, bc = b->g[0].ndestroy + b->g[0].ncreate;
    if (ac != bc)
        return ac < bc;
    return a->g[0].gpu < b->g[0].gpu;
}

/* The node may take the request apart from its devices. */
static bool node_ok(const struct gs_cluster *c, int node, const struct gs_request *req,
                    const struct gs_recarve_opts *o)
{
    const struct gs_node *n = &c->nodes[node];
    if (n->unschedulable || n->ngpus == 0 || n->cpu_free < req->cpu_milli ||
        n->mem_free < req->mem_mib || n->pods_used >= n->pods_cap)
        return false;
    if (req->model_mask && (n->model < 0 || !(req->model_mask & (1u << n->model))))
        return false;
    for (int k = 0; k < req->nsel; k++) {
        const char *v = gs_node_label(n, req->sel[k].key);
        if (!v || strcmp(v, req->sel[k].val) != 0)
            return false;
    }
    return !o->allows || o->allows(o->ctx, node);
}

/* Candidates for a MIG request on one GPU; the best is kept in *best. */
static void mig_candidates(const struct gs_cluster *c, int node, int gi,
                           const struct gs_request *req, const struct gs_recarve_demand *d,
                           const struct gs_recarve_opts *o, const struct gs_mig_layout *layouts,
                           int nl, struct gs_recarve *best, bool *have)
{
    const struct gs_gpu *g = &c->gpus[gi];
    const struct gs_gpu_model *m = gs_catalog_get(g->model);
    int want = gs_catalog_find_profile(g->model, req->mig);
    if (want < 0 || !m->nprofiles)
        return;
    if (req->gpu_mem_mib && (int64_t)m->profiles[want].mem_mib < req->gpu_mem_mib)
        return;
    bool mig = g->mode == GS_GPU_MIG;
    if (!mig && o->no_mode_change)
        return;
    if (!mig && (g->mode != GS_GPU_WHOLE || g->milli_free != GS_MILLI))
        return; /* a shared or partly used GPU does not change mode */
    /* what must stay: instances in use whose holders may not be evicted; what may stay:
     * those whose holders may (kept when the layout allows, most GPU-hours first) and the free
     * ones (kept when the layout allows: fewer instances to destroy and create) */
    struct gs_recarve cand;
    memset(&cand, 0, sizeof(cand));
    cand.node = node;
    struct gs_mig_placement must = {0};
    struct gs_mig_layout must_l = {0};
    uint8_t free_before[GS_MIG_MAX_PROFILES] = {0};
    int opt[GS_MIG_COMPUTE_MAX], nopt = 0, holder_of[GS_MIG_COMPUTE_MAX];
    double cost[GS_MIG_COMPUTE_MAX];
    for (int i = 0; mig && i < g->mig.n; i++) {
        const struct gs_mig_instance *in = &g->mig.inst[i];
        holder_of[i] = -1;
        cost[i] = 0;
        if (!(g->mig_used & (1u << i))) {
            free_before[in->profile]++;
            continue;
        }
        int h = o->pctx && o->pctx->npdb <= 64 ? holder(o->pctx, gi, i) : -1;
        if (h >= 0 && victim_ok(o, h)) {
            holder_of[i] = h;
            cost[i] = gs_running_gpu_hours(&o->pctx->run[h], o->now_s);
            opt[nopt++] = i;
            continue;
        }
        must.inst[must.n++] = *in;
        must_l.count[in->profile]++;
    }
    /* victims' instances by cost, highest first (kept first), then the free ones */
    for (int a = 1; a < nopt; a++)
        for (int b = a; b > 0 && cost[opt[b - 1]] < cost[opt[b]]; b--) {
            int t = opt[b];
            opt[b] = opt[b - 1];
            opt[b - 1] = t;
        }
    for (int i = 0; mig && i < g->mig.n; i++)
        if (!(g->mig_used & (1u << i)))
            opt[nopt++] = i;
    double before = mig ? value_of(g->model, free_before, d) : (d->whole > 0 ? 1.0 : 0.0);
    for (int li = 0; li < nl; li++) {
        const struct gs_mig_layout *L = &layouts[li];
        if (L->count[want] < must_l.count[want] + 1)
            continue;
        bool ok = true;
        for (int p = 0; p < m->nprofiles && ok; p++)
            ok = L->count[p] >= must_l.count[p];
        struct gs_mig_placement kept = must, add;
        struct gs_mig_layout kept_l = must_l, rest;
        if (!ok)
            continue;
        bool kept_used[GS_MIG_COMPUTE_MAX] = {false};
        for (int k = 0; k < nopt; k++) {
            const struct gs_mig_instance *in = &g->mig.inst[opt[k]];
            int room =
                L->count[in->profile] - kept_l.count[in->profile] - (in->profile == want ? 1 : 0);
            if (room <= 0)
                continue;
            struct gs_mig_placement k2 = kept;
            k2.inst[k2.n++] = *in;
            rest = *L;
            for (int p = 0; p < m->nprofiles; p++)
                rest.count[p] =
                    (uint8_t)(L->count[p] - kept_l.count[p] - (p == in->profile ? 1 : 0));
            if (gs_mig_place_around(g->model, &rest, &k2, &add, NULL))
                continue;
            kept = k2;
            kept_l.count[in->profile]++;
            kept_used[opt[k]] = true;
        }
        rest = *L;
        for (int p = 0; p < m->nprofiles; p++)
            rest.count[p] = (uint8_t)(L->count[p] - kept_l.count[p]);
        if (gs_mig_place_around(g->model, &rest, &kept, &add, NULL))
            continue;
        /* the victims: holders of the instances this layout destroys, gangs whole */
        struct gs_recarve c2 = cand;
        int32_t pdb_use[64] = {0};
        bool vok = true;
        for (int i = 0; mig && i < g->mig.n && vok; i++) {
            if (holder_of[i] < 0 || kept_used[i])
                continue;
            int nv0 = c2.nvictims;
            vok = add_victim(o, holder_of[i], c2.victims, &c2.nvictims, pdb_use);
            for (int k = nv0; vok && k < c2.nvictims; k++)
                c2.gpu_hours += gs_running_gpu_hours(&o->pctx->run[c2.victims[k]], o->now_s);
        }
        if (!vok || (c2.nvictims && !reclaim_ok(o, c2.victims, c2.nvictims)))
            continue;
        struct gs_recarve_gpu *x = &c2.g[0];
        c2.ngpus = 1;
        x->gpu = gi;
        x->mode = GS_GPU_MIG;
        x->mode_change = !mig;
        x->pl = kept;
        for (int k = 0; k < add.n; k++)
            x->pl.inst[x->pl.n++] = add.inst[k];
        /* instances created and destroyed: by profile and start */
        int same = 0;
        for (int a = 0; mig && a < g->mig.n; a++)
            for (int b = 0; b < x->pl.n; b++)
                if (g->mig.inst[a].profile == x->pl.inst[b].profile &&
                    g->mig.inst[a].start == x->pl.inst[b].start) {
                    same++;
                    break;
                }
        x->ndestroy = (uint8_t)((mig ? g->mig.n : 0) - same);
        x->ncreate = (uint8_t)(x->pl.n - same);
        if (x->ndestroy == 0 && x->ncreate == 0 && c2.nvictims == 0)
            continue; /* nothing would change: the slot would be there already */
        uint8_t free_after[GS_MIG_MAX_PROFILES] = {0};
        /* free afterwards: the layout less the instances still in use and the pod's */
        struct gs_mig_layout used_l = must_l;
        for (int i = 0; mig && i < g->mig.n; i++)
            if (holder_of[i] >= 0 && kept_used[i])
                used_l.count[g->mig.inst[i].profile]++;
        for (int p = 0; p < m->nprofiles; p++)
            free_after[p] = (uint8_t)(L->count[p] - used_l.count[p]);
        free_after[want]--;
        c2.gain = value_of(g->model, free_after, d) - before;
        if (better(&c2, best, *have)) {
            *best = c2;
            *have = true;
        }
    }
}

/* A whole-GPU request of k GPUs on one node: free whole GPUs first, then idle MIG GPUs
 * switched to whole mode, those worth least to the pending demand first. */
static void whole_candidate(const struct gs_cluster *c, int node, const struct gs_request *req,
                            const struct gs_recarve_demand *d, const struct gs_recarve_opts *o,
                            struct gs_recarve *best, bool *have)
{
    const struct gs_node *n = &c->nodes[node];
    if (o->no_mode_change)
        return;
    if (req->gpu_mem_mib) {
        for (int i = 0; i < n->ngpus; i++)
            if (c->gpus[n->gpu0 + i].mem_mib < req->gpu_mem_mib)
                return;
    }
    int free_whole = 0, nidle = 0, idle[GS_MAX_GPUS_NODE];
    double worth[GS_MAX_GPUS_NODE];
    for (int i = 0; i < n->ngpus; i++) {
        int gi = n->gpu0 + i;
        const struct gs_gpu *g = &c->gpus[gi];
        if (!g->healthy || (o->busy && o->busy[gi]))
            continue;
        if ((g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION) && g->milli_free == GS_MILLI)
            free_whole++;
        else if (o->fixed && o->fixed[gi])
            continue;
        else if (g->mode == GS_GPU_MIG && g->mig_used == 0 && gpu_touchable(c, gi, o)) {
            uint8_t fr[GS_MIG_MAX_PROFILES] = {0};
            for (int k = 0; k < g->mig.n; k++)
                fr[g->mig.inst[k].profile]++;
            worth[nidle] = value_of(g->model, fr, d);
            idle[nidle++] = gi;
        }
    }
    int need = req->gpus - free_whole;
    if (need <= 0 || need > nidle)
        return;
    /* the least valuable idle MIG GPUs (selection by worth, then id) */
    struct gs_recarve c2;
    memset(&c2, 0, sizeof(c2));
    c2.node = node;
    bool used[GS_MAX_GPUS_NODE] = {false};
    double lost = 0;
    for (int k = 0; k < need; k++) {
        int b = -1;
        for (int j = 0; j < nidle; j++)
            if (!used[j] && (b < 0 || worth[j] < worth[b]))
                b = j;
        used[b] = true;
        lost += worth[b];
        struct gs_recarve_gpu *x = &c2.g[c2.ngpus++];
        x->gpu = idle[b];
        x->mode = GS_GPU_WHOLE;
        x->mode_change = true;
        x->ndestroy = c->gpus[idle[b]].mig.n;
    }
    c2.gain = (d->whole > 0 ? 1.0 : 0.0) * (need > (int)d->whole ? (int)d->whole : need) - lost;
    if (better(&c2, best, *have)) {
        *best = c2;
        *have = true;
    }
}

/* What a GPU offers a re-carve depends only on this (compared bytewise: zeroed first). */
#define SEEN_MAX 64
struct gpu_state {
    int16_t model;
    uint8_t mode, mig_used;
    int16_t milli_free;
    struct gs_mig_placement mig;
};

static void gpu_state_of(const struct gs_gpu *g, struct gpu_state *st)
{
    memset(st, 0, sizeof(*st));
    st->model = g->model;
    st->mode = g->mode;
    st->mig_used = g->mig_used;
    st->milli_free = g->milli_free;
    st->mig.n = g->mig.n;
    for (int i = 0; i < g->mig.n; i++)
        st->mig.inst[i] = g->mig.inst[i];
}

int gs_recarve_find(const struct gs_cluster *c, const struct gs_request *req,
                    const struct gs_recarve_demand *d, const struct gs_recarve_opts *o,
                    struct gs_recarve *out)
{
    memset(out, 0, sizeof(*out));
    bool whole = req->kind == GS_REQ_GPU && req->milli == GS_MILLI && req->gpus > 0;
    if (req->kind != GS_REQ_MIG && !whole)
        return GS_EINVAL;
    struct gs_mig_layout *layouts = NULL;
    int layouts_model = -1, nl = 0;
    struct gpu_state seen[SEEN_MAX];
    int nseen = 0;
    bool have = false;
    for (int node = 0; node < c->nnodes; node++) {
        if (!node_ok(c, node, req, o))
            continue;
        const struct gs_node *n = &c->nodes[node];
        if (whole) {
            whole_candidate(c, node, req, d, o, out, &have);
            continue;
        }
        for (int i = 0; i < n->ngpus; i++) {
            int gi = n->gpu0 + i;
            const struct gs_gpu *g = &c->gpus[gi];
            if (!gs_catalog_mig_capable(g->model) || !gpu_touchable(c, gi, o))
                continue;
            if (g->model != layouts_model) {
                if (!layouts)
                    layouts = malloc(sizeof(*layouts) * MAX_LAYOUTS);
                if (!layouts)
                    return GS_ENOMEM;
                nl = gs_mig_enumerate_maximal(g->model, layouts, MAX_LAYOUTS);
                if (nl > MAX_LAYOUTS)
                    nl = MAX_LAYOUTS;
                layouts_model = g->model;
            }
            /* a GPU in the same state as one already weighed (model, mode, instances, which
             * are in use) offers the same candidates, and the earlier GPU wins ties: skip it,
             * unless victims make its holders matter */
            struct gpu_state st;
            gpu_state_of(g, &st);
            bool holders = o->pctx && g->mig_used;
            int k = 0;
            for (; !holders && k < nseen && memcmp(&seen[k], &st, sizeof(st)) != 0; k++)
                ;
            if (!holders && k < nseen)
                continue;
            if (!holders && nseen < SEEN_MAX)
                seen[nseen++] = st;
            mig_candidates(c, node, gi, req, d, o, layouts, nl, out, &have);
        }
    }
    free(layouts);
    return have ? 0 : GS_ENOFIT;
}

int gs_recarve_apply(struct gs_cluster *c, const struct gs_recarve_gpu *x,
                     int8_t remap[GS_MIG_COMPUTE_MAX])
{
    if (x->gpu < 0 || x->gpu >= c->ngpus)
        return GS_EINVAL;
    struct gs_gpu *g = &c->gpus[x->gpu];
    int8_t map[GS_MIG_COMPUTE_MAX];
    memset(map, -1, sizeof(map));
    if (x->mode == GS_GPU_WHOLE) {
        if (g->mode == GS_GPU_MIG ? g->mig_used != 0 : g->milli_free != GS_MILLI)
            return GS_EINVAL;
        g->mode = GS_GPU_WHOLE;
        g->mig.n = 0;
        g->mig_used = 0;
        g->milli_free = GS_MILLI;
    } else {
        if (!gs_mig_placement_valid(g->model, &x->pl))
            return GS_EINVAL;
        bool was_mig = g->mode == GS_GPU_MIG;
        if (!was_mig && (g->mode != GS_GPU_WHOLE || g->milli_free != GS_MILLI))
            return GS_EINVAL;
        /* kept instances keep their index; the new ones fill the other positions */
        struct gs_mig_placement np = {0};
        bool placed[GS_MIG_COMPUTE_MAX] = {false};
        uint8_t used = 0;
        np.n = x->pl.n;
        for (int i = 0; was_mig && i < g->mig.n; i++) {
            int j = -1;
            for (int k = 0; k < x->pl.n && j < 0; k++)
                if (!placed[k] && x->pl.inst[k].profile == g->mig.inst[i].profile &&
                    x->pl.inst[k].start == g->mig.inst[i].start)
                    j = k;
            if (j < 0) {
                if (g->mig_used & (1u << i))
                    return GS_EINVAL; /* an instance in use would be destroyed */
                continue;
            }
            placed[j] = true;
            map[i] = (int8_t)j; /* provisional: the new index is resolved below */
        }
        /* positions: a kept instance i stays at index i when i < np.n */
        int8_t pos_of[GS_MIG_COMPUTE_MAX]; /* x->pl index -> new index */
        memset(pos_of, -1, sizeof(pos_of));
        bool taken[GS_MIG_COMPUTE_MAX] = {false};
        for (int i = 0; was_mig && i < g->mig.n; i++)
            if (map[i] >= 0 && i < np.n) {
                pos_of[map[i]] = (int8_t)i;
                taken[i] = true;
            }
        /* kept instances beyond the new count move (only unused ones could be that far
         * when the layout shrinks; used ones move too, and the remap tells the caller) */
        for (int k = 0, next = 0; k < x->pl.n; k++) {
            if (pos_of[k] >= 0)
                continue;
            while (taken[next])
                next++;
            pos_of[k] = (int8_t)next;
            taken[next] = true;
        }
        for (int k = 0; k < x->pl.n; k++)
            np.inst[pos_of[k]] = x->pl.inst[k];
        for (int i = 0; was_mig && i < g->mig.n; i++) {
            if (map[i] < 0)
                continue;
            int ni = pos_of[map[i]];
            if (g->mig_used & (1u << i))
                used |= (uint8_t)(1u << ni);
            map[i] = (int8_t)ni;
        }
        g->mode = GS_GPU_MIG;
        g->mig = np;
        g->mig_used = used;
        g->milli_free = GS_MILLI;
    }
    if (remap)
        memcpy(remap, map, sizeof(map));
    for (int n = 0; n < c->nnodes; n++) {
        struct gs_node *nd = &c->nodes[n];
        if (x->gpu >= nd->gpu0 && x->gpu < nd->gpu0 + nd->ngpus) {
            gs_node_touch(nd);
            break;
        }
    }
    return 0;
}

double gs_recarve_seconds(const struct gs_recarve_gpu *g, double destroy_s, double create_s,
                          double mode_s)
{
    return g->ndestroy * destroy_s + g->ncreate * create_s + (g->mode_change ? mode_s : 0);
}
