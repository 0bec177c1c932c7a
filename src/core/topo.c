/* topo.c - topology domains and topology-aware gang placement (see topo.h).
 *
 * Domains are interned per level by (parent domain, label value) in a string map; nodes and
 * children are then grouped by domain with a counting sort. A gang's placement counts each
 * node's room for its largest pod, sums it per domain, picks candidate domains (the tightest
 * for gpusched, Kueue's BestFit for kueue), gives each node of the chosen domain a quota by
 * a greedy descent (most room first, best fit last), and lets the engine (engine.h) place the
 * members on those nodes, binding each as gang.c does. */
#include "topo.h"

#include "../base/error.h"
#include "../base/hash.h"
#include "gang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs_topo_levels_add(struct gs_topo_levels *lv, const char *key)
{
    size_t len = key ? strlen(key) : 0;
    if (len == 0 || len > GS_LABELS_KEY_MAX || lv->n >= GS_TOPO_LEVELS_MAX ||
        gs_topo_levels_find(lv, key) >= 0)
        return GS_EINVAL;
    memcpy(lv->key[lv->n], key, len + 1);
    lv->n++;
    return 0;
}

int gs_topo_levels_find(const struct gs_topo_levels *lv, const char *key)
{
    for (int i = 0; key && i < lv->n; i++)
        if (strcmp(lv->key[i], key) == 0)
            return i;
    return -1;
}

void gs_topo_init(struct gs_topo *t)
{
    memset(t, 0, sizeof(*t));
}

/* The arrays; the levels, algorithm and shapes stay. */
static void free_arrays(struct gs_topo *t)
{
    free(t->node_dom);
    free(t->doms);
    free(t->members);
    free(t->children);
    for (int i = 0; i < GS_TOPO_ROOM_SLOTS; i++) {
        free(t->rooms[i].room);
        free(t->rooms[i].ver);
        free(t->rooms[i].droom);
    }
    memset(t->rooms, 0, sizeof(t->rooms));
    free(t->quota);
    free(t->list);
    free(t->nfree);
    free(t->nfree_ver);
    free(t->dfree);
    free(t->dgpus);
    t->node_dom = t->members = t->children = NULL;
    t->doms = NULL;
    t->room = t->droom = t->quota = t->list = t->nfree = t->dfree = t->dgpus = NULL;
    t->nfree_ver = NULL;
    t->nnodes = t->ndomains = 0;
    memset(t->level_first, 0, sizeof(t->level_first));
}

void gs_topo_release(struct gs_topo *t)
{
    free_arrays(t);
    gs_topo_init(t);
}

/* Intern the domains of one level: node_dom[.., l] from the parent's and the label value. */
static int intern_level(struct gs_topo *t, const struct gs_cluster *c, int l)
{
    struct gs_strmap m;
    gs_strmap_init(&m);
    int L = t->lv.n, rc = 0;
    char kb[GS_LABELS_VAL_MAX + 8];
    for (int i = 0; i < c->nnodes && !rc; i++) {
        int32_t parent = l > 0 ? t->node_dom[(size_t)i * L + l - 1] : -1;
        const char *v = gs_node_label(&c->nodes[i], t->lv.key[l]);
        t->node_dom[(size_t)i * L + l] = -1;
        if ((l > 0 && parent < 0) || !v || !*v)
            continue;
        size_t vl = strlen(v);
        if (vl > GS_LABELS_VAL_MAX)
            continue;
        memcpy(kb, &parent, sizeof(parent));
        memcpy(kb + sizeof(parent), v, vl);
        uint32_t kl = (uint32_t)(sizeof(parent) + vl);
        int32_t d = gs_strmap_get(&m, kb, kl);
        if (d < 0) {
            d = t->ndomains;
            struct gs_topo_domain *nd = realloc(t->doms, sizeof(*nd) * ((size_t)d + 1));
            if (!nd || gs_strmap_put(&m, kb, kl, d)) {
                if (nd)
                    t->doms = nd;
                rc = GS_ENOMEM;
                break;
            }
            t->doms = nd;
            memset(&nd[d], 0, sizeof(nd[d]));
            nd[d].level = l;
            nd[d].parent = parent;
            t->ndomains++;
        }
        t->doms[d].nnodes++;
        t->node_dom[(size_t)i * L + l] = d;
    }
    gs_strmap_release(&m);
    return rc;
}

/* Group nodes by domain (members) and domains by parent (children). */
static void group(struct gs_topo *t)
{
    int L = t->lv.n;
    int32_t pos = 0;
    for (int d = 0; d < t->ndomains; d++) {
        t->doms[d].first = pos;
        pos += t->doms[d].nnodes;
        t->doms[d].nnodes = 0;
    }
    for (int i = 0; i < t->nnodes; i++)
        for (int l = 0; l < L; l++) {
            int32_t d = t->node_dom[(size_t)i * L + l];
            if (d >= 0)
                t->members[t->doms[d].first + t->doms[d].nnodes++] = i;
        }
    for (int d = 0; d < t->ndomains; d++)
        if (t->doms[d].parent >= 0)
            t->doms[t->doms[d].parent].nchildren++;
    pos = 0;
    for (int d = 0; d < t->ndomains; d++) {
        t->doms[d].child_first = pos;
        pos += t->doms[d].nchildren;
        t->doms[d].nchildren = 0;
    }
    for (int d = 0; d < t->ndomains; d++) {
        int32_t p = t->doms[d].parent;
        if (p >= 0)
            t->children[t->doms[p].child_first + t->doms[p].nchildren++] = d;
    }
}

int gs_topo_build(struct gs_topo *t, const struct gs_topo_levels *lv, enum gs_topo_algo algo,
                  const struct gs_cluster *c)
{
    free_arrays(t);
    t->lv = *lv;
    t->algo = algo;
    t->nnodes = c->nnodes;
    size_t nn = (size_t)c->nnodes + 1, L = (size_t)(lv->n > 0 ? lv->n : 1);
    t->node_dom = malloc(sizeof(int32_t) * nn * L);
    t->quota = calloc(nn, sizeof(int32_t));
    t->nfree = malloc(sizeof(int32_t) * nn);
    t->nfree_ver = calloc(nn, sizeof(uint32_t));
    t->list = malloc(sizeof(int32_t) * nn);
    int rc = t->node_dom && t->quota && t->nfree && t->nfree_ver && t->list ? 0 : GS_ENOMEM;
    for (int s = 0; !rc && s < GS_TOPO_ROOM_SLOTS; s++) {
        t->rooms[s].room = malloc(sizeof(int32_t) * nn);
        t->rooms[s].ver = calloc(nn, sizeof(uint32_t));
        if (!t->rooms[s].room || !t->rooms[s].ver)
            rc = GS_ENOMEM;
    }
    for (int l = 0; !rc && l < lv->n; l++) {
        t->level_first[l] = t->ndomains;
        rc = intern_level(t, c, l);
    }
    for (int l = lv->n; !rc && l <= GS_TOPO_LEVELS_MAX; l++)
        t->level_first[l] = t->ndomains;
    if (!rc) {
        size_t nd = (size_t)t->ndomains + 1;
        t->members = malloc(sizeof(int32_t) * nn * L);
        t->children = malloc(sizeof(int32_t) * nd);
        t->dfree = calloc(nd, sizeof(int32_t));
        t->dgpus = calloc(nd, sizeof(int32_t));
        if (!t->members || !t->children || !t->dfree || !t->dgpus)
            rc = GS_ENOMEM;
        for (int s = 0; !rc && s < GS_TOPO_ROOM_SLOTS; s++)
            if (!(t->rooms[s].droom = calloc(nd, sizeof(int32_t))))
                rc = GS_ENOMEM;
    }
    if (rc) {
        free_arrays(t);
        t->lv.n = 0;
        return rc;
    }
    group(t);
    for (int i = 0; i < c->nnodes; i++) {
        t->nfree[i] = -1;
        for (int s = 0; s < GS_TOPO_ROOM_SLOTS; s++)
            t->rooms[s].room[i] = -1;
        for (int l = 0; l < lv->n; l++) {
            int32_t d = t->node_dom[(size_t)i * lv->n + l];
            if (d >= 0)
                t->dgpus[d] += c->nodes[i].ngpus;
        }
    }
    return 0;
}

int32_t gs_topo_node_domain(const struct gs_topo *t, int node, int level)
{
    if (node < 0 || node >= t->nnodes || level < 0 || level >= t->lv.n)
        return -1;
    return t->node_dom[(size_t)node * t->lv.n + level];
}

const char *gs_topo_domain_value(const struct gs_topo *t, const struct gs_cluster *c, int32_t d)
{
    if (d < 0 || d >= t->ndomains || t->doms[d].nnodes == 0)
        return "";
    const char *v =
        gs_node_label(&c->nodes[t->members[t->doms[d].first]], t->lv.key[t->doms[d].level]);
    return v ? v : "";
}

/* ---- room: how many pods of req a node, a domain can take ---- */

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int32_t node_room(const struct gs_cluster *c, int node, const struct gs_request *req,
                         int32_t cap)
{
    if (!gs_engine_fits(c, node, req, NULL))
        return 0;
    const struct gs_node *nd = &c->nodes[node];
    int64_t k = min64(cap, nd->pods_cap - nd->pods_used);
    if (req->cpu_milli > 0)
        k = min64(k, nd->cpu_free / req->cpu_milli);
    if (req->mem_mib > 0)
        k = min64(k, nd->mem_free / req->mem_mib);
    int64_t dev = 0;
    for (int i = 0; i < nd->ngpus && req->kind != GS_REQ_NONE; i++) {
        const struct gs_gpu *g = &c->gpus[nd->gpu0 + i];
        if (!gs__gpu_usable(g))
            continue;
        if (req->kind == GS_REQ_GPU && g->milli_free == GS_MILLI &&
            (g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION))
            dev++;
        else if (req->kind == GS_REQ_GPU && (g->mode == GS_GPU_TIMESLICE || g->mode == GS_GPU_MPS))
            dev += g->replicas - g->replicas_used;
        else if (req->kind == GS_REQ_FRACTION && g->mode == GS_GPU_FRACTION && req->milli > 0)
            dev += g->milli_free / req->milli;
    }
    if (req->kind == GS_REQ_GPU)
        k = min64(k, req->gpus > 0 ? dev / req->gpus : k);
    else if (req->kind == GS_REQ_FRACTION)
        k = min64(k, dev);
    else if (req->kind == GS_REQ_MIG)
        k = min64(k, 1);
    return k < 0 ? 0 : (int32_t)k;
}

/* The member whose request is largest (GPUs, then CPU, then memory). */
static const struct gs_request *largest(const struct gs_request *const *reqs, int n)
{
    const struct gs_request *b = reqs[0];
    for (int i = 1; i < n; i++) {
        const struct gs_request *r = reqs[i];
        int64_t gr = gs_request_total_milli(r), gb = gs_request_total_milli(b);
        if (gr > gb || (gr == gb && (r->cpu_milli > b->cpu_milli ||
                                     (r->cpu_milli == b->cpu_milli && r->mem_mib > b->mem_mib))))
            b = r;
    }
    return b;
}

/* Add delta to the domains of node i. */
static void add_up(const struct gs_topo *t, int32_t *per_dom, int i, int32_t delta)
{
    int L = t->lv.n;
    for (int l = 0; delta && l < L; l++) {
        int32_t d = t->node_dom[(size_t)i * L + l];
        if (d < 0)
            break;
        per_dom[d] += delta;
    }
}

/* t->room per node and t->droom per domain for req: the shape's slot, counted again on the
 * nodes whose version changed since. */
static void compute_room(struct gs_topo *t, const struct gs_cluster *c,
                         const struct gs_request *req)
{
    uint64_t sig = gs_request_sig(req);
    struct gs_topo_rooms *r = NULL;
    for (int s = 0; s < GS_TOPO_ROOM_SLOTS && !r; s++)
        if (t->rooms[s].sig == sig)
            r = &t->rooms[s];
    if (!r) {
        r = &t->rooms[0];
        for (int s = 1; s < GS_TOPO_ROOM_SLOTS; s++)
            if (t->rooms[s].used < r->used)
                r = &t->rooms[s];
        r->sig = sig;
        for (int i = 0; i < t->nnodes; i++)
            r->room[i] = -1;
        memset(r->droom, 0, sizeof(int32_t) * (size_t)t->ndomains);
    }
    r->used = ++t->rooms_clock;
    for (int i = 0; i < t->nnodes; i++) {
        const struct gs_node *n = &c->nodes[i];
        if (r->room[i] >= 0 && r->ver[i] == n->version)
            continue;
        int32_t k = node_room(c, i, req, INT32_MAX / 2);
        add_up(t, r->droom, i, k - (r->room[i] > 0 ? r->room[i] : 0));
        r->room[i] = k;
        r->ver[i] = n->version;
    }
    t->room = r->room;
    t->droom = r->droom;
}

int32_t gs_topo_max_room(struct gs_topo *t, const struct gs_cluster *c,
                         const struct gs_request *req, int level)
{
    if (level < 0 || level >= t->lv.n || t->nnodes != c->nnodes)
        return 0;
    compute_room(t, c, req);
    int32_t best = 0;
    for (int d = t->level_first[level]; d < t->level_first[level + 1]; d++)
        if (t->droom[d] > best)
            best = t->droom[d];
    return best;
}

/* ---- the descent: quotas on the nodes of a domain ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ids sorted by room descending, ties by id: keys (INT32_MAX - room) << 32 | id */
static int64_t *by_room_desc(const int32_t *ids, int n, const int32_t *room)
{
    int64_t *k = malloc(sizeof(*k) * ((size_t)n + 1));
    if (!k)
        return NULL;
    for (int i = 0; i < n; i++)
        k[i] = ((int64_t)(INT32_MAX - room[ids[i]]) << 32) | (uint32_t)ids[i];
    qsort(k, (size_t)n, sizeof(*k), cmp_i64);
    return k;
}

static int32_t key_id(int64_t k)
{
    return (int32_t)(k & 0xffffffff);
}

/* Kueue's findBestFitDomainBy over sorted[from..n): the first with the least room >= need */
static int best_fit(const int64_t *sorted, int from, int n, const int32_t *room, int32_t need)
{
    int b = from;
    for (int i = from; i < n; i++) {
        int32_t r = room[key_id(sorted[i])];
        if (r >= need && r < room[key_id(sorted[b])])
            b = i;
    }
    return b;
}

/* Give need pods to the n domains ids (leaf: nodes): most room first, the one that completes
 * it by best fit, each domain's share given on to its children in turn. Returns 0, or
 * GS_ENOMEM. */
static int spread(struct gs_topo *t, const int32_t *ids, int n, bool leaf, int32_t need)
{
    const int32_t *room = leaf ? t->room : t->droom;
    int64_t *s = by_room_desc(ids, n, room);
    if (!s)
        return GS_ENOMEM;
    int rc = 0;
    for (int i = 0; i < n && need > 0 && !rc; i++) {
        int32_t id = key_id(s[i]);
        if (room[id] <= 0)
            break;
        if (room[id] >= need) {
            int b = best_fit(s, i, n, room, need);
            id = key_id(s[b]);
            s[b] = s[i];
        }
        int32_t take = room[id] < need ? room[id] : need;
        if (leaf) {
            t->quota[id] += take;
        } else {
            const struct gs_topo_domain *D = &t->doms[id];
            if (D->nchildren == 0)
                rc = spread(t, &t->members[D->first], D->nnodes, true, take);
            else
                rc = spread(t, &t->children[D->child_first], D->nchildren, false, take);
        }
        need -= take;
    }
    free(s);
    return rc;
}

/* Give need pods to the nodes of domain d (spread over its children). */
static int descend(struct gs_topo *t, int32_t d, int32_t need)
{
    return spread(t, &d, 1, false, need);
}

/* ---- candidates ---- */

struct cand {
    int32_t dom[GS_TOPO_TRIES];
    int n;
};

struct dkey {
    int32_t room, proom, d;
};

static int cmp_dkey(const void *a, const void *b)
{
    const struct dkey *x = a, *y = b;
    if (x->room != y->room)
        return x->room < y->room ? -1 : 1;
    if (x->proom != y->proom)
        return x->proom < y->proom ? -1 : 1;
    return (x->d > y->d) - (x->d < y->d);
}

/* gpusched: from the finest level up to `top`, the domains that hold need, best fit first
 * (least room, then the parent's least room, then id). */
static int cands_gpusched(struct gs_topo *t, int top, int32_t need, struct cand *out)
{
    out->n = 0;
    for (int l = t->lv.n - 1; l >= top && out->n < GS_TOPO_TRIES; l--) {
        int lo = t->level_first[l], hi = t->level_first[l + 1], m = 0;
        struct dkey *k = malloc(sizeof(*k) * ((size_t)(hi - lo) + 1));
        if (!k)
            return GS_ENOMEM;
        for (int d = lo; d < hi; d++) {
            int32_t p = t->doms[d].parent;
            if (t->droom[d] >= need)
                k[m++] = (struct dkey){t->droom[d], p >= 0 ? t->droom[p] : 0, d};
        }
        qsort(k, (size_t)m, sizeof(*k), cmp_dkey);
        for (int i = 0; i < m && out->n < GS_TOPO_TRIES; i++)
            out->dom[out->n++] = k[i].d;
        free(k);
    }
    return 0;
}

/* Kueue: at one level, domains by most room first (ties: id, the order of their values'
 * first appearance); when the first holds need, the first with the least room that does. */
static int cands_kueue(struct gs_topo *t, int l, int32_t need, struct cand *out)
{
    out->n = 0;
    int lo = t->level_first[l], hi = t->level_first[l + 1], n = hi - lo;
    if (n <= 0)
        return 0;
    int32_t *ids = malloc(sizeof(*ids) * (size_t)n);
    if (!ids)
        return GS_ENOMEM;
    for (int i = 0; i < n; i++)
        ids[i] = lo + i;
    int64_t *s = by_room_desc(ids, n, t->droom);
    free(ids);
    if (!s)
        return GS_ENOMEM;
    if (t->droom[key_id(s[0])] >= need) {
        int b = best_fit(s, 0, n, t->droom, need);
        out->dom[out->n++] = key_id(s[b]);
    }
    free(s);
    return 0;
}

/* ---- placing the members on a plan ---- */

static void clear_quota(struct gs_topo *t, int32_t d)
{
    for (int i = 0; i < t->doms[d].nnodes; i++)
        t->quota[t->members[t->doms[d].first + i]] = 0;
}

/* Place every member inside domain dom: on the nodes the descent gave a quota first, then on
 * any node of it. Returns 0 with the members bound, or GS_ENOFIT with nothing bound. */
static int place_in(struct gs_topo *t, struct gs_engine *e, struct gs_cluster *c, int32_t dom,
                    const struct gs_request *const *reqs, int n, struct gs_decision *d, int *failed,
                    struct gs_reasons *why)
{
    int rc = descend(t, dom, n);
    const struct gs_topo_domain *D = &t->doms[dom];
    const int32_t *all = &t->members[D->first];
    int i;
    for (i = 0; i < n && !rc; i++) {
        int nl = 0;
        for (int j = 0; j < D->nnodes; j++)
            if (t->quota[all[j]] > 0)
                t->list[nl++] = all[j];
        rc = gs_engine_place_among(e, c, reqs[i], i, t->list, nl, &d[i]);
        if (rc == GS_ENOFIT)
            rc = gs_engine_place_among(e, c, reqs[i], i, all, D->nnodes, &d[i]);
        if (rc == 0)
            rc = gs_cluster_bind(c, reqs[i], &d[i].alloc);
        if (rc)
            break;
        if (t->quota[d[i].alloc.node] > 0)
            t->quota[d[i].alloc.node]--;
    }
    clear_quota(t, dom);
    if (i == n && !rc)
        return 0;
    if (failed)
        *failed = i < n ? i : 0;
    if (why && i < n) {
        /* the engine's reasons for the member, over the domain's nodes */
        memset(why, 0, sizeof(*why));
        for (int j = 0; j < D->nnodes; j++)
            (void)gs_engine_fits(c, all[j], reqs[i], why);
        why->nodes = D->nnodes;
    }
    while (--i >= 0)
        gs_cluster_unbind(c, reqs[i], &d[i].alloc);
    return rc == GS_ENOMEM ? rc : GS_ENOFIT;
}

static int count_nodes(const struct gs_decision *d, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = d[j].alloc.node == d[i].alloc.node;
        k += !seen;
    }
    return k;
}

/* A preferred gang no domain holds: over as few top-level domains as possible (most room
 * first, the last by best fit), and as few of their children and nodes, as Kueue spreads it.
 * Returns 0 with the members bound, or GS_ENOFIT with nothing bound. */
static int place_spread(struct gs_topo *t, struct gs_engine *e, struct gs_cluster *c,
                        const struct gs_request *const *reqs, int n, struct gs_decision *d,
                        int *failed, struct gs_reasons *why)
{
    int lo = t->level_first[0], nt = t->level_first[1] - lo;
    int32_t *top = malloc(sizeof(int32_t) * ((size_t)nt + 1));
    if (!top)
        return GS_ENOMEM;
    for (int i = 0; i < nt; i++)
        top[i] = lo + i;
    int rc = spread(t, top, nt, false, n);
    free(top);
    int i;
    for (i = 0; i < n && !rc; i++) {
        int nl = 0;
        for (int j = 0; j < t->nnodes; j++)
            if (t->quota[j] > 0)
                t->list[nl++] = j;
        rc = gs_engine_place_among(e, c, reqs[i], i, t->list, nl, &d[i]);
        if (rc == 0)
            rc = gs_cluster_bind(c, reqs[i], &d[i].alloc);
        if (rc)
            break;
        t->quota[d[i].alloc.node]--;
    }
    memset(t->quota, 0, sizeof(int32_t) * (size_t)t->nnodes);
    if (i == n && !rc)
        return 0;
    if (failed)
        *failed = i < n ? i : 0;
    while (--i >= 0)
        gs_cluster_unbind(c, reqs[i], &d[i].alloc);
    return rc == GS_ENOMEM ? rc : GS_ENOFIT;
}

static void fail_reason(struct gs_topo *t, const struct gs_topo_ask *ask, int n,
                        struct gs_topo_result *res)
{
    int l = ask->level;
    if (l < 0 || l >= t->lv.n) {
        snprintf(res->why, sizeof(res->why), "the topology has no such level");
        return;
    }
    int32_t best = 0;
    for (int d = t->level_first[l]; d < t->level_first[l + 1]; d++)
        best = t->droom[d] > best ? t->droom[d] : best;
    res->room = best;
    if (t->level_first[l] == t->level_first[l + 1])
        snprintf(res->why, sizeof(res->why), "no node has a value for topology level '%.120s'",
                 t->lv.key[l]);
    else
        snprintf(res->why, sizeof(res->why),
                 "no domain of topology level '%.120s' holds the gang's %d pods: the largest "
                 "has room for %d",
                 t->lv.key[l], n, (int)best);
}

static int try_cands(struct gs_topo *t, struct gs_engine *e, struct gs_cluster *c,
                     const struct cand *cd, const struct gs_request *const *reqs, int n,
                     struct gs_decision *d, int *failed, struct gs_reasons *why,
                     struct gs_topo_result *res)
{
    for (int i = 0; i < cd->n; i++) {
        int rc = place_in(t, e, c, cd->dom[i], reqs, n, d, failed, why);
        if (rc == 0) {
            res->level = t->doms[cd->dom[i]].level;
            res->domain = cd->dom[i];
            /* the tightest domain actually holding them */
            for (int l = t->lv.n - 1; l > res->level; l--)
                if (gs_topo_within(t, d, n, l)) {
                    res->level = l;
                    res->domain = gs_topo_node_domain(t, d[0].alloc.node, l);
                    break;
                }
            res->nodes = count_nodes(d, n);
            return 0;
        }
        if (rc != GS_ENOFIT)
            return rc;
    }
    return GS_ENOFIT;
}

int gs_topo_gang_place(struct gs_topo *t, struct gs_engine *e, struct gs_cluster *c,
                       const struct gs_topo_ask *ask, const struct gs_request *const *reqs, int n,
                       struct gs_decision *d, int *failed, struct gs_reasons *why,
                       struct gs_topo_result *res)
{
    struct gs_topo_result local;
    if (!res)
        res = &local;
    memset(res, 0, sizeof(*res));
    res->level = res->domain = -1;
    bool any = !t || t->lv.n == 0 || !ask || ask->mode == GS_TOPO_ANY || n <= 0;
    bool valid = !any && ask->level >= 0 && ask->level < t->lv.n && t->nnodes == c->nnodes;
    if (any || (!valid && ask->mode == GS_TOPO_PREFERRED)) {
        int rc = gs_gang_place(e, c, reqs, n, d, failed, why);
        if (rc == 0) {
            res->nodes = count_nodes(d, n);
            if (t && t->lv.n > 0 && t->nnodes == c->nnodes)
                for (int l = t->lv.n - 1; l >= 0 && res->level < 0; l--)
                    if (gs_topo_within(t, d, n, l)) {
                        res->level = l;
                        res->domain = gs_topo_node_domain(t, d[0].alloc.node, l);
                    }
        }
        return rc;
    }
    if (failed)
        *failed = 0;
    if (why)
        memset(why, 0, sizeof(*why));
    if (!valid) {
        snprintf(res->why, sizeof(res->why), "%s",
                 t->nnodes != c->nnodes ? "the topology was built for another cluster"
                                        : "the topology has no such level");
        return GS_ENOFIT;
    }
    compute_room(t, c, largest(reqs, n));
    bool req = ask->mode == GS_TOPO_REQUIRED;
    int rc = GS_ENOFIT;
    if (t->algo == GS_TOPO_KUEUE) {
        for (int l = ask->level; l >= (req ? ask->level : 0) && rc == GS_ENOFIT; l--) {
            struct cand cd;
            if ((rc = cands_kueue(t, l, n, &cd)) == 0)
                rc = cd.n ? try_cands(t, e, c, &cd, reqs, n, d, failed, why, res) : GS_ENOFIT;
        }
    } else {
        struct cand cd;
        if ((rc = cands_gpusched(t, req ? ask->level : 0, n, &cd)) == 0)
            rc = cd.n ? try_cands(t, e, c, &cd, reqs, n, d, failed, why, res) : GS_ENOFIT;
    }
    if (rc == GS_ENOFIT && !req)
        rc = place_spread(t, e, c, reqs, n, d, failed, why);
    if (rc == GS_ENOFIT && !req) {
        rc = gs_gang_place(e, c, reqs, n, d, failed, why);
        if (rc == 0)
            res->nodes = count_nodes(d, n);
        return rc;
    }
    if (rc == GS_ENOFIT)
        fail_reason(t, ask, n, res);
    return rc;
}

bool gs_topo_within(const struct gs_topo *t, const struct gs_decision *d, int n, int level)
{
    if (n <= 0 || level < 0 || level >= t->lv.n)
        return false;
    int32_t d0 = gs_topo_node_domain(t, d[0].alloc.node, level);
    if (d0 < 0)
        return false;
    for (int i = 1; i < n; i++)
        if (gs_topo_node_domain(t, d[i].alloc.node, level) != d0)
            return false;
    return true;
}

int gs_topo_shared_levels(const struct gs_topo *t, const int32_t *nodes, int n)
{
    int l = 0;
    for (; n > 0 && l < t->lv.n; l++) {
        int32_t d0 = gs_topo_node_domain(t, nodes[0], l);
        bool same = d0 >= 0;
        for (int i = 1; i < n && same; i++)
            same = gs_topo_node_domain(t, nodes[i], l) == d0;
        if (!same)
            break;
    }
    return l;
}

/* ---- small work ---- */

/* GPUs a small pod takes from a domain's free ones */
static int32_t small_gpus(const struct gs_request *req)
{
    if (req->kind == GS_REQ_GPU && req->milli >= GS_MILLI)
        return req->gpus;
    return req->kind == GS_REQ_NONE ? 0 : 1;
}

/* The growth of level l's domain d's fragmentation for the gang shapes of level l when the
 * pod takes g of its free GPUs (x1000, by the shapes' frequency). A waiting gang's shape
 * counts the domains big enough for it: one it cannot have now is the one it waits for. */
static int64_t frag_growth(const struct gs_topo *t, int32_t d, int l, int32_t g)
{
    double f = 0;
    int32_t fr = t->dfree[d];
    for (int s = 0; s < t->nshapes; s++) {
        const struct gs_topo_shape *sh = &t->shapes[s];
        if (sh->level != l)
            continue;
        if ((sh->waiting ? t->dgpus[d] : fr) >= sh->gpus && fr - g < sh->gpus)
            f += sh->freq * (fr - g);
    }
    return (int64_t)(f * 1000);
}

int32_t gs_topo_small_domain(struct gs_topo *t, const struct gs_cluster *c,
                             const struct gs_request *req)
{
    int L = t->lv.n;
    int32_t g = small_gpus(req);
    if (t->nshapes == 0 || L == 0 || g == 0 || t->nnodes != c->nnodes)
        return -1;
    /* the last level when it names single nodes (the hostname) is the engine's choice */
    int last = L;
    if (t->level_first[L] - t->level_first[L - 1] == t->nnodes)
        last = L - 1;
    if (last == 0)
        return -1;
    for (int i = 0; i < t->nnodes; i++) {
        const struct gs_node *n = &c->nodes[i];
        if (t->nfree[i] >= 0 && t->nfree_ver[i] == n->version)
            continue;
        int32_t k = n->unschedulable ? 0 : gs__fit_count_whole(c, n);
        add_up(t, t->dfree, i, k - (t->nfree[i] > 0 ? t->nfree[i] : 0));
        t->nfree[i] = k;
        t->nfree_ver[i] = n->version;
    }
    /* a whole-GPU pod needs g free GPUs in the domain; a share, a slice or a replica any GPU
     * (the engine finds out; the caller places it anywhere when the domain refuses it) */
    bool whole = req->kind == GS_REQ_GPU && req->milli >= GS_MILLI;
    int32_t parent = -1;
    for (int l = 0; l < last; l++) {
        int32_t best = -1;
        int64_t bk[3] = {0, 0, 0};
        for (int d = t->level_first[l]; d < t->level_first[l + 1]; d++) {
            if (t->doms[d].parent != parent || (whole ? t->dfree[d] < g : t->dgpus[d] == 0))
                continue;
            int64_t k[3] = {frag_growth(t, d, l, g), t->dfree[d] == t->dgpus[d], t->dfree[d]};
            if (best < 0 || k[0] < bk[0] || (k[0] == bk[0] && k[1] < bk[1]) ||
                (k[0] == bk[0] && k[1] == bk[1] && k[2] < bk[2])) {
                best = d;
                memcpy(bk, k, sizeof(bk));
            }
        }
        if (best < 0)
            break;
        parent = best;
    }
    return parent;
}

const int32_t *gs_topo_domain_nodes(const struct gs_topo *t, int32_t d, int *n)
{
    if (d < 0 || d >= t->ndomains) {
        *n = 0;
        return NULL;
    }
    *n = t->doms[d].nnodes;
    return &t->members[t->doms[d].first];
}
