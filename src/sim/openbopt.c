/* openbopt.c - the offline packer and the Lagrangian bound of openbopt.h. sim/openb.c runs
 * them as the pseudo-policy "offline" on the arrivals the online policies see; feasibility
 * is core/fit.c's filter (gs_engine_fits) and binding its gs_cluster_bind, so the packer
 * obeys the same rules as every policy. */
#include "openbopt.h"

#include "../base/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int whole_free(const struct gs_cluster *c, const struct gs_node *n)
{
    int w = 0;
    for (int k = 0; k < n->ngpus; k++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + k];
        w += g->healthy && g->milli_free == GS_MILLI;
    }
    return w;
}

static int64_t share_free(const struct gs_cluster *c, const struct gs_node *n)
{
    int64_t s = 0;
    for (int k = 0; k < n->ngpus; k++)
        s += c->gpus[n->gpu0 + k].healthy ? c->gpus[n->gpu0 + k].milli_free : 0;
    return s;
}

/* The devices the pod fills best on node i, if it fits there, and their score (lower is
 * better): fewest whole GPUs left free, then least share left on the GPU, then least CPU (a
 * CPU-only pod: least idle GPU share stranded). */
static bool node_choice(const struct gs_cluster *c, int i, const struct gs_request *r,
                        struct gs_alloc *a, double *score)
{
    if (!gs_engine_fits(c, i, r, NULL))
        return false;
    const struct gs_node *n = &c->nodes[i];
    double cpu_left = n->cpu_cap > 0 ? (double)(n->cpu_free - r->cpu_milli) / n->cpu_cap : 0;
    a->node = i;
    a->kind = r->kind;
    a->ndev = 0;
    if (r->kind == GS_REQ_GPU) {
        *score = (whole_free(c, n) - r->gpus) * 4.0 + cpu_left;
        a->milli = GS_MILLI;
        for (int k = 0; k < n->ngpus && a->ndev < r->gpus; k++) {
            const struct gs_gpu *g = &c->gpus[n->gpu0 + k];
            if (g->healthy && g->milli_free == GS_MILLI) {
                a->gpu[a->ndev] = n->gpu0 + k;
                a->slot[a->ndev++] = -1;
            }
        }
        return true;
    }
    if (r->kind == GS_REQ_FRACTION) {
        *score = INFINITY;
        a->milli = r->milli;
        for (int k = 0; k < n->ngpus; k++) {
            const struct gs_gpu *g = &c->gpus[n->gpu0 + k];
            if (!g->healthy || g->mode != GS_GPU_FRACTION || g->milli_free < r->milli)
                continue;
            double s = (double)(g->milli_free - r->milli) + cpu_left;
            if (s < *score) {
                *score = s;
                a->ndev = 1;
                a->gpu[0] = n->gpu0 + k;
                a->slot[0] = -1;
            }
        }
        return a->ndev == 1;
    }
    *score = (double)share_free(c, n) / GS_MILLI + cpu_left;
    a->milli = 0;
    return true;
}

/* The node and devices the pod fills best; false when none fits. */
static bool choose(const struct gs_cluster *c, const struct gs_request *r, struct gs_alloc *a)
{
    double best = INFINITY, s;
    struct gs_alloc t;
    memset(&t, 0, sizeof(t));
    for (int i = 0; i < c->nnodes; i++)
        if (node_choice(c, i, r, &t, &s) && s < best) {
            best = s;
            *a = t;
        }
    return best < INFINITY;
}

int gs_openb_pack_one(struct gs_cluster *c, const struct gs_request *req)
{
    struct gs_alloc a;
    memset(&a, 0, sizeof(a));
    if (!choose(c, req, &a))
        return GS_ENOFIT;
    return gs_cluster_bind(c, req, &a) ? GS_ENOFIT : 0;
}

struct keyed {
    const struct gs_request *r;
    int32_t pos;
};

static int size_class(const struct gs_request *r)
{
    return r->kind == GS_REQ_GPU ? 0 : r->kind == GS_REQ_FRACTION ? 1 : 2;
}

/* decreasing size: whole GPUs by count, shares by milli, then CPU-only; heavier CPU first */
static int cmp_size(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    int ca = size_class(a->r), cb = size_class(b->r);
    if (ca != cb)
        return ca - cb;
    int64_t ga = (int64_t)a->r->gpus * a->r->milli, gb = (int64_t)b->r->gpus * b->r->milli;
    if (ga != gb)
        return ga > gb ? -1 : 1;
    if (a->r->cpu_milli != b->r->cpu_milli)
        return a->r->cpu_milli > b->r->cpu_milli ? -1 : 1;
    if (a->r->mem_mib != b->r->mem_mib)
        return a->r->mem_mib > b->r->mem_mib ? -1 : 1;
    return a->pos - b->pos;
}

int64_t gs_openb_pack(struct gs_cluster *c, const struct gs_request *reqs, const int32_t *idx,
                      int n, uint8_t *placed)
{
    struct keyed *k = malloc(sizeof(*k) * (size_t)(n > 0 ? n : 1));
    if (!k)
        return GS_ENOMEM;
    for (int i = 0; i < n; i++)
        k[i] = (struct keyed){&reqs[idx[i]], i};
    qsort(k, (size_t)n, sizeof(*k), cmp_size);
    int64_t milli = 0;
    for (int i = 0; i < n; i++) {
        bool ok = gs_openb_pack_one(c, k[i].r) == 0;
        if (ok)
            milli += gs_request_total_milli(k[i].r);
        if (placed)
            placed[k[i].pos] = ok;
    }
    free(k);
    return milli;
}

/* ---------- repair: one move or one eviction per pod left out ---------- */

struct keyedpos {
    int64_t milli;
    int32_t pos;
};

static int cmp_milli_desc(const void *pa, const void *pb)
{
    const struct keyedpos *a = pa, *b = pb;
    if (a->milli != b->milli)
        return a->milli > b->milli ? -1 : 1;
    return a->pos - b->pos;
}

/* Try to place u on node i by taking q (placed there) off; q goes where it fills best, or
 * stays out when it is smaller than u. Returns the milli gained (0: nothing changed). */
static int64_t try_swap(struct gs_cluster *c, const struct gs_request *ru, struct gs_alloc *au,
                        const struct gs_request *rq, struct gs_alloc *aq, bool *q_out)
{
    int i = aq->node;
    struct gs_alloc old = *aq, na, qa;
    double s;
    if (gs_cluster_unbind(c, rq, &old))
        return 0;
    if (node_choice(c, i, ru, &na, &s) && gs_cluster_bind(c, ru, &na) == 0) {
        int64_t mu = gs_request_total_milli(ru), mq = gs_request_total_milli(rq);
        if (choose(c, rq, &qa) && gs_cluster_bind(c, rq, &qa) == 0) {
            *au = na;
            *aq = qa;
            *q_out = false;
            return mu;
        }
        if (mq < mu) {
            *au = na;
            *q_out = true;
            return mu - mq;
        }
        gs_cluster_unbind(c, ru, &na);
    }
    gs_cluster_bind(c, rq, &old);
    return 0;
}

int64_t gs_openb_repair(struct gs_cluster *c, const struct gs_request *reqs, const int32_t *idx,
                        int n, struct gs_alloc *alloc, uint8_t *placed, int tries)
{
    int64_t gain = 0;
    int nn = c->nnodes;
    int32_t *head = malloc(sizeof(*head) * (size_t)(nn ? nn : 1));
    int32_t *nxt = malloc(sizeof(*nxt) * (size_t)(n ? n : 1));
    struct keyedpos *out = malloc(sizeof(*out) * (size_t)(n ? n : 1));
    int nout = 0;
    if (!head || !nxt || !out) {
        gain = GS_ENOMEM;
        goto done;
    }
    for (int i = 0; i < nn; i++)
        head[i] = -1;
    for (int k = 0; k < n; k++) {
        int64_t m = gs_request_total_milli(&reqs[idx[k]]);
        if (placed[k]) {
            nxt[k] = head[alloc[k].node];
            head[alloc[k].node] = k;
        } else if (m > 0) {
            out[nout++] = (struct keyedpos){m, k};
        }
    }
    qsort(out, (size_t)nout, sizeof(*out), cmp_milli_desc);
    for (int o = 0; o < nout; o++) {
        int u = out[o].pos;
        const struct gs_request *ru = &reqs[idx[u]];
        int left = tries;
        for (int i = 0; i < nn && left > 0 && !placed[u]; i++) {
            const struct gs_node *nd = &c->nodes[i];
            if (nd->ngpus == 0 || (ru->model_mask && !(ru->model_mask & (1u << nd->model))))
                continue;
            int prev = -1;
            for (int q = head[i]; q >= 0 && left > 0; prev = q, q = nxt[q]) {
                const struct gs_request *rq = &reqs[idx[q]];
                /* could u fit with q gone? (cheap necessary conditions first) */
                if (nd->cpu_free + rq->cpu_milli < ru->cpu_milli ||
                    nd->mem_free + rq->mem_mib < ru->mem_mib ||
                    share_free(c, nd) + gs_request_total_milli(rq) < gs_request_total_milli(ru))
                    continue;
                left--;
                bool q_out = false;
                int64_t g = try_swap(c, ru, &alloc[u], rq, &alloc[q], &q_out);
                if (!g)
                    continue;
                gain += g;
                placed[u] = 1;
                /* unlink q from i; u joins i; q joins its new node unless it is out */
                if (prev < 0)
                    head[i] = nxt[q];
                else
                    nxt[prev] = nxt[q];
                nxt[u] = head[i];
                head[i] = u;
                if (q_out) {
                    placed[q] = 0;
                } else {
                    nxt[q] = head[alloc[q].node];
                    head[alloc[q].node] = q;
                }
                break;
            }
        }
    }
done:
    free(head);
    free(nxt);
    free(out);
    return gain;
}

/* ---------- the Lagrangian bound ---------- */

#define DIMS 3 /* GPU milli, CPU, memory */

struct ntype {
    int model, gpus;
    int64_t cpu, mem;
    double cap[DIMS]; /* scaled */
};

struct shape {
    const struct gs_request *r;
    double cnt, v, req[DIMS]; /* scaled */
};

static int cmp_shape(const void *pa, const void *pb)
{
    const struct gs_request *a = *(const struct gs_request *const *)pa;
    const struct gs_request *b = *(const struct gs_request *const *)pb;
    int64_t x[5] = {a->kind, a->gpus, a->milli, a->cpu_milli, a->mem_mib};
    int64_t y[5] = {b->kind, b->gpus, b->milli, b->cpu_milli, b->mem_mib};
    for (int i = 0; i < 5; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return a->model_mask < b->model_mask ? -1 : a->model_mask > b->model_mask;
}

static bool same_shape(const struct gs_request *a, const struct gs_request *b)
{
    return cmp_shape(&a, &b) == 0;
}

static bool type_fits(const struct ntype *t, const struct gs_request *r)
{
    if (t->gpus < r->gpus || t->model < 0 || r->cpu_milli > t->cpu || r->mem_mib > t->mem)
        return false;
    return !r->model_mask || (r->model_mask & (1u << t->model));
}

int gs_openb_bound(const struct gs_cluster *c, const struct gs_request *reqs, const int32_t *idx,
                   int n, int iters, double *ub)
{
    int rc = GS_ENOMEM;
    struct ntype *ty = calloc((size_t)(c->nnodes ? c->nnodes : 1), sizeof(*ty));
    const struct gs_request **rs = malloc(sizeof(*rs) * (size_t)(n ? n : 1));
    struct shape *sh = calloc((size_t)(n ? n : 1), sizeof(*sh));
    uint8_t *fit = NULL;
    double *lam = NULL, *g = NULL;
    int *arg = NULL;
    if (!ty || !rs || !sh)
        goto out;
    /* node types with their capacities (unscaled for now) */
    int nt = 0;
    double tot[DIMS] = {0};
    for (int i = 0; i < c->nnodes; i++) {
        const struct gs_node *nd = &c->nodes[i];
        if (nd->ngpus == 0 || nd->model < 0)
            continue; /* holds no GPU pod: no part in the GPU milli placed */
        int t = 0;
        while (t < nt && !(ty[t].model == nd->model && ty[t].gpus == nd->ngpus &&
                           ty[t].cpu == nd->cpu_cap && ty[t].mem == nd->mem_cap))
            t++;
        if (t == nt)
            ty[nt++] = (struct ntype){nd->model, nd->ngpus, nd->cpu_cap, nd->mem_cap, {0}};
        double add[DIMS] = {(double)nd->ngpus * GS_MILLI, (double)nd->cpu_cap, (double)nd->mem_cap};
        for (int d = 0; d < DIMS; d++) {
            ty[t].cap[d] += add[d];
            tot[d] += add[d];
        }
    }
    double scale[DIMS];
    for (int d = 0; d < DIMS; d++)
        scale[d] = tot[d] > 0 ? tot[0] / tot[d] : 0;
    for (int t = 0; t < nt; t++)
        for (int d = 0; d < DIMS; d++)
            ty[t].cap[d] *= scale[d];
    /* GPU pods grouped by shape; a pod no type can host adds nothing */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (reqs[idx[i]].kind == GS_REQ_GPU || reqs[idx[i]].kind == GS_REQ_FRACTION)
            rs[m++] = &reqs[idx[i]];
    qsort(rs, (size_t)m, sizeof(*rs), cmp_shape);
    int ns = 0;
    double fits_total = 0;
    for (int i = 0; i < m; i++) {
        if (ns && same_shape(sh[ns - 1].r, rs[i])) {
            sh[ns - 1].cnt += 1;
            continue;
        }
        sh[ns] = (struct shape){.r = rs[i], .cnt = 1};
        sh[ns].v = (double)gs_request_total_milli(rs[i]);
        double q[DIMS] = {sh[ns].v, (double)rs[i]->cpu_milli, (double)rs[i]->mem_mib};
        for (int d = 0; d < DIMS; d++)
            sh[ns].req[d] = q[d] * scale[d];
        ns++;
    }
    fit = calloc((size_t)(ns ? ns : 1) * (size_t)(nt ? nt : 1), 1);
    lam = calloc((size_t)(nt ? nt : 1) * DIMS, sizeof(*lam));
    g = calloc((size_t)(nt ? nt : 1) * DIMS, sizeof(*g));
    arg = malloc(sizeof(*arg) * (size_t)(ns ? ns : 1));
    if (!fit || !lam || !g || !arg)
        goto out;
    for (int s = 0; s < ns; s++) {
        bool any = false;
        for (int t = 0; t < nt; t++) {
            fit[(size_t)s * nt + t] = type_fits(&ty[t], sh[s].r);
            any |= fit[(size_t)s * nt + t];
        }
        if (any)
            fits_total += sh[s].cnt * sh[s].v;
    }
    /* L(lambda), from lambda = GPU price 1 (L = the GPU capacity) down the subgradient */
    for (int t = 0; t < nt; t++)
        lam[t * DIMS] = 1.0;
    double best = INFINITY, theta = 1.0;
    int stale = 0;
    for (int it = 0; it <= iters; it++) {
        double L = 0;
        for (int t = 0; t < nt; t++)
            for (int d = 0; d < DIMS; d++) {
                L += lam[t * DIMS + d] * ty[t].cap[d];
                g[t * DIMS + d] = ty[t].cap[d];
            }
        for (int s = 0; s < ns; s++) {
            double bv = 0;
            arg[s] = -1;
            for (int t = 0; t < nt; t++) {
                if (!fit[(size_t)s * nt + t])
                    continue;
                double gain = sh[s].v;
                for (int d = 0; d < DIMS; d++)
                    gain -= lam[t * DIMS + d] * sh[s].req[d];
                if (gain > bv) {
                    bv = gain;
                    arg[s] = t;
                }
            }
            L += sh[s].cnt * bv;
            if (arg[s] >= 0)
                for (int d = 0; d < DIMS; d++)
                    g[arg[s] * DIMS + d] -= sh[s].cnt * sh[s].req[d];
        }
        if (L < best - 1e-9) {
            best = L;
            stale = 0;
        } else if (++stale >= 5) {
            theta /= 2;
            stale = 0;
        }
        double gg = 0;
        for (int i = 0; i < nt * DIMS; i++)
            gg += g[i] * g[i];
        if (it == iters || gg <= 0 || theta < 1e-4)
            break;
        /* Polyak step towards half the best bound seen (overshooting costs nothing: the
         * smallest L is kept, and theta halves when L stops falling) */
        double step = theta * (L - 0.5 * best) / gg;
        for (int i = 0; i < nt * DIMS; i++) {
            lam[i] -= step * g[i];
            if (lam[i] < 0)
                lam[i] = 0;
        }
    }
    *ub = best < fits_total ? best : fits_total;
    rc = 0;
out:
    free(ty);
    free(rs);
    free(sh);
    free(fit);
    free(lam);
    free(g);
    free(arg);
    return rc;
}

/* ---------- the share bound ---------- */

double gs_openb_bound_share(const struct gs_request *reqs, const int32_t *idx, int n,
                            int64_t cap_milli)
{
    /* big[m]: pods of share m > 500; small[m]: milli of pods of share m <= 500 */
    static const int H = GS_MILLI + 1;
    double big[GS_MILLI + 1] = {0}, small[GS_MILLI + 1] = {0};
    double arrived = 0;
    for (int k = 0; k < n; k++) {
        const struct gs_request *r = &reqs[idx[k]];
        arrived += (double)gs_request_total_milli(r);
        if (r->kind != GS_REQ_FRACTION || r->milli <= 0 || r->milli >= GS_MILLI)
            continue;
        if (r->milli > GS_MILLI / 2)
            big[r->milli] += 1;
        else
            small[r->milli] += r->milli;
    }
    double D = (double)cap_milli - arrived, best = D;
    double V = 0, R = 0;
    for (int th = 0; th < GS_MILLI / 2; th++) {
        /* rooms of at most th: bigs of share >= 1000 - th; pods that fit them: share <= th */
        V += small[th];
        R += big[GS_MILLI - th] * th;
        if (big[GS_MILLI - th] == 0)
            continue;
        double f1 = R - V, f2 = D;
        if (f1 <= f2)
            continue;
        /* leaving a big out lowers f1 by its room and raises f2 by its share: the gap closes
         * by 1000 per pod left out; the cheapest are the smallest shares */
        double need = (f1 - f2) / GS_MILLI, val = f2, rooms = 0;
        for (int m = GS_MILLI - th; m < H && need > 0; m++) {
            double x = big[m] < need ? big[m] : need;
            val += x * m;
            rooms += x * (GS_MILLI - m);
            need -= x;
        }
        if (need > 0) {
            /* every one left out and the rooms' bound still the larger: what is left of it
             * (nothing but -V: no room is left to idle) */
            double left = f1 - rooms;
            val = left > val ? left : val;
        }
        if (val > best)
            best = val;
    }
    return best > 0 ? best : 0;
}

double gs_openb_unalloc_bound(const struct gs_cluster *c, const struct gs_request *reqs,
                              const int32_t *idx, int n, double ub)
{
    int64_t cap = 0;
    for (int i = 0; i < c->nnodes; i++)
        cap += (int64_t)c->nodes[i].ngpus * GS_MILLI;
    double arrived = 0;
    for (int k = 0; k < n; k++)
        arrived += (double)gs_request_total_milli(&reqs[idx[k]]);
    double most = ub < arrived ? ub : arrived;
    double shr = (double)cap - gs_openb_bound_share(reqs, idx, n, cap);
    if (shr < most)
        most = shr;
    double lb = (double)cap - most;
    return lb > 0 ? lb : 0;
}
