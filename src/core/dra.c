/* dra.c - DRA device allocation (see dra.h): the state of taken devices and consumed counters,
 * and a bounded backtracking search over one claim's requests, alternatives and devices,
 * with candidates ordered fragmentation-aware (pack onto GPUs in use, then keep the most
 * future placements of a counter set, as core/frag.c weighs what a node can still host).
 * formats/draobj.c builds worlds and claims from the API's objects; sched/claims.c runs this for
 * the pods it schedules. */
#include "dra.h"

#include "../base/error.h"
#include "gpulink.h"

#include <stdlib.h>
#include <string.h>

const struct gs_dra_attr *gs_dra_attr_find(const struct gs_dra_device *d, const char *domain,
                                           size_t dlen, const char *name, size_t nlen,
                                           bool capacity)
{
    if (dlen + 1 + nlen >= GS_DRA_QNAME_MAX)
        return NULL;
    for (int k = 0; k < d->nattrs; k++) {
        const struct gs_dra_attr *a = &d->attrs[k];
        /* the name's last part first: it differs soonest among one domain's attributes */
        if (a->capacity != capacity || a->name[dlen] != '/' || a->name[dlen + 1 + nlen] != '\0' ||
            memcmp(a->name + dlen + 1, name, nlen) != 0 || memcmp(a->name, domain, dlen) != 0)
            continue;
        return a;
    }
    return NULL;
}

static const struct gs_dra_attr *attr_q(const struct gs_dra_device *d, const char *qname)
{
    for (int k = 0; k < d->nattrs; k++)
        if (!d->attrs[k].capacity && strcmp(d->attrs[k].name, qname) == 0)
            return &d->attrs[k];
    return NULL;
}

const char *gs_dra_attr_str(const struct gs_dra_device *d, const char *qname)
{
    const struct gs_dra_attr *a = attr_q(d, qname);
    return a && (a->v.type == GS_DRA_STRING || a->v.type == GS_DRA_VERSION) ? a->v.s : NULL;
}

bool gs_dra_tolerates(const struct gs_dra_toleration *t, const struct gs_dra_taint *x)
{
    if (t->effect != GS_DRA_EFFECT_ANY && t->effect != x->effect)
        return false;
    if (t->key[0] && strcmp(t->key, x->key) != 0)
        return false;
    switch (t->op) {
    case GS_DRA_TOL_EQUAL:
        return strcmp(t->value, x->value) == 0;
    case GS_DRA_TOL_EXISTS:
        return true;
    default:
        return false;
    }
}

bool gs_dra_tolerated(const struct gs_dra_device *d, const struct gs_dra_toleration *tol, int ntol)
{
    for (int k = 0; k < d->ntaints; k++) {
        const struct gs_dra_taint *x = &d->taints[k];
        if (x->effect != GS_DRA_EFFECT_NOSCHEDULE && x->effect != GS_DRA_EFFECT_NOEXECUTE)
            continue;
        bool ok = false;
        for (int t = 0; t < ntol && !ok; t++)
            ok = gs_dra_tolerates(&tol[t], x);
        if (!ok)
            return false;
    }
    return true;
}

int gs_dra_find(const struct gs_dra_world *w, const char *driver, const char *pool,
                const char *name)
{
    for (int i = 0; i < w->ndev; i++)
        if (strcmp(w->dev[i].name, name) == 0 && strcmp(w->dev[i].pool, pool) == 0 &&
            strcmp(w->dev[i].driver, driver) == 0)
            return i;
    return -1;
}

/* The GPU a device is part of: its parentUUID, else its uuid (any domain), else NULL. */
static const char *gpu_key(const struct gs_dra_device *d)
{
    const char *uuid = NULL;
    for (int k = 0; k < d->nattrs; k++) {
        const struct gs_dra_attr *a = &d->attrs[k];
        if (a->capacity || a->v.type != GS_DRA_STRING)
            continue;
        const char *slash = strrchr(a->name, '/');
        const char *n = slash ? slash + 1 : a->name;
        if (strcmp(n, "parentUUID") == 0)
            return a->v.s;
        if (strcmp(n, "uuid") == 0)
            uuid = a->v.s;
    }
    return uuid;
}

struct keyed {
    const char *key;
    int32_t node, dev;
};

static int cmp_keyed(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->dev > b->dev) - (a->dev < b->dev);
}

/* Dense GPU ids: devices of one node with the same key share one. */
static int index_gpus(struct gs_dra_state *s)
{
    const struct gs_dra_world *w = s->w;
    struct keyed *k = malloc(sizeof(*k) * ((size_t)w->ndev + 1));
    if (!k)
        return GS_ENOMEM;
    int n = 0;
    for (int i = 0; i < w->ndev; i++) {
        s->gpu[i] = -1;
        const char *key = gpu_key(&w->dev[i]);
        if (key)
            k[n++] = (struct keyed){key, w->dev[i].node, i};
    }
    qsort(k, (size_t)n, sizeof(*k), cmp_keyed);
    int id = -1;
    for (int j = 0; j < n; j++) {
        if (j == 0 || k[j].node != k[j - 1].node || strcmp(k[j].key, k[j - 1].key) != 0)
            id++;
        s->gpu[k[j].dev] = id;
    }
    free(k);
    s->gpu_taken = calloc((size_t)id + 2, sizeof(*s->gpu_taken));
    return s->gpu_taken ? 0 : GS_ENOMEM;
}

/* Whether device d consumes from set before its consumption c. */
static bool consumes_before(const struct gs_dra_device *d, int c, int32_t set)
{
    for (int a = 0; a < c; a++)
        if (d->consume[a].set == set)
            return true;
    return false;
}

/* The devices of each counter set, once each, in world order. */
static int index_sets(struct gs_dra_state *s)
{
    const struct gs_dra_world *w = s->w;
    s->set_off = calloc((size_t)w->nsets + 2, sizeof(*s->set_off));
    if (!s->set_off)
        return GS_ENOMEM;
    size_t total = 0;
    for (int i = 0; i < w->ndev; i++)
        for (int c = 0; c < w->dev[i].nconsume; c++) {
            int32_t set = w->dev[i].consume[c].set;
            if (set >= 0 && set < w->nsets && !consumes_before(&w->dev[i], c, set)) {
                s->set_off[set + 1]++;
                total++;
            }
        }
    for (int k = 0; k < w->nsets; k++)
        s->set_off[k + 1] += s->set_off[k];
    s->set_devs = malloc(sizeof(*s->set_devs) * (total + 1));
    int32_t *fill = calloc((size_t)w->nsets + 1, sizeof(*fill));
    if (!s->set_devs || !fill) {
        free(fill);
        return GS_ENOMEM;
    }
    for (int i = 0; i < w->ndev; i++)
        for (int c = 0; c < w->dev[i].nconsume; c++) {
            int32_t set = w->dev[i].consume[c].set;
            if (set >= 0 && set < w->nsets && !consumes_before(&w->dev[i], c, set))
                s->set_devs[s->set_off[set] + fill[set]++] = i;
        }
    free(fill);
    return 0;
}

static int cmp_name3(const struct gs_dra_device *a, const char *driver, const char *pool,
                     const char *name)
{
    int c = strcmp(a->name, name);
    if (!c)
        c = strcmp(a->pool, pool);
    return c ? c : strcmp(a->driver, driver);
}

struct named {
    const struct gs_dra_device *d;
    int32_t dev;
};

static int cmp_named(const void *pa, const void *pb)
{
    const struct named *a = pa, *b = pb;
    int c = cmp_name3(a->d, b->d->driver, b->d->pool, b->d->name);
    return c ? c : (a->dev > b->dev) - (a->dev < b->dev);
}

/* The devices by (name, pool, driver), then index. */
static int index_names(struct gs_dra_state *s)
{
    const struct gs_dra_world *w = s->w;
    struct named *v = malloc(sizeof(*v) * ((size_t)w->ndev + 1));
    if (!v)
        return GS_ENOMEM;
    for (int i = 0; i < w->ndev; i++)
        v[i] = (struct named){&w->dev[i], i};
    qsort(v, (size_t)w->ndev, sizeof(*v), cmp_named);
    for (int i = 0; i < w->ndev; i++)
        s->byname[i] = v[i].dev;
    free(v);
    return 0;
}

int gs_dra_state_init(struct gs_dra_state *s, const struct gs_dra_world *w)
{
    memset(s, 0, sizeof(*s));
    s->w = w;
    s->owner = malloc(sizeof(*s->owner) * ((size_t)w->ndev + 1));
    s->used = calloc((size_t)w->nsets * GS_DRA_MAX_COUNTERS + 1, sizeof(*s->used));
    s->gpu = malloc(sizeof(*s->gpu) * ((size_t)w->ndev + 1));
    s->byname = malloc(sizeof(*s->byname) * ((size_t)w->ndev + 1));
    if (!s->owner || !s->used || !s->gpu || !s->byname || index_gpus(s) || index_sets(s) ||
        index_names(s)) {
        gs_dra_state_release(s);
        return GS_ENOMEM;
    }
    for (int i = 0; i < w->ndev; i++)
        s->owner[i] = -1;
    return 0;
}

int gs_dra_state_find(const struct gs_dra_state *s, const char *driver, const char *pool,
                      const char *name)
{
    int lo = 0, hi = s->w->ndev; /* the first not below the key */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cmp_name3(&s->w->dev[s->byname[mid]], driver, pool, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->w->ndev && cmp_name3(&s->w->dev[s->byname[lo]], driver, pool, name) == 0)
        return s->byname[lo];
    return -1;
}

void gs_dra_state_release(struct gs_dra_state *s)
{
    free(s->owner);
    free(s->used);
    free(s->gpu);
    free(s->gpu_taken);
    free(s->set_off);
    free(s->set_devs);
    free(s->byname);
    memset(s, 0, sizeof(*s));
}

static bool consume_fits(const struct gs_dra_state *s, const struct gs_dra_device *d,
                         const struct gs_dra_device *also)
{
    for (int c = 0; c < d->nconsume; c++) {
        const struct gs_dra_consume *x = &d->consume[c];
        const struct gs_dra_counterset *set = &s->w->sets[x->set];
        for (int k = 0; k < x->n; k++) {
            int64_t have = s->used[x->set * GS_DRA_MAX_COUNTERS + x->counter[k]] + x->milli[k];
            for (int a = 0; also && a < also->nconsume; a++)
                for (int b = 0; also->consume[a].set == x->set && b < also->consume[a].n; b++)
                    if (also->consume[a].counter[b] == x->counter[k])
                        have += also->consume[a].milli[b];
            if (have > set->milli[x->counter[k]])
                return false;
        }
    }
    return true;
}

bool gs_dra_fits(const struct gs_dra_state *s, int dev)
{
    return s->owner[dev] < 0 && consume_fits(s, &s->w->dev[dev], NULL);
}

static void consume(struct gs_dra_state *s, int dev, int sign)
{
    const struct gs_dra_device *d = &s->w->dev[dev];
    for (int c = 0; c < d->nconsume; c++)
        for (int k = 0; k < d->consume[c].n; k++)
            s->used[d->consume[c].set * GS_DRA_MAX_COUNTERS + d->consume[c].counter[k]] +=
                sign * d->consume[c].milli[k];
}

void gs_dra_take(struct gs_dra_state *s, int dev, int32_t owner)
{
    if (s->owner[dev] >= 0)
        return;
    s->owner[dev] = owner < 0 ? 0 : owner;
    consume(s, dev, +1);
    if (s->gpu[dev] >= 0)
        s->gpu_taken[s->gpu[dev]]++;
}

void gs_dra_give(struct gs_dra_state *s, int dev)
{
    if (s->owner[dev] < 0)
        return;
    s->owner[dev] = -1;
    consume(s, dev, -1);
    if (s->gpu[dev] >= 0)
        s->gpu_taken[s->gpu[dev]]--;
}

/* ---------- fragmentation-aware order ---------- */

/* Whether the GPU of device dev is in use already: a counter of a set it consumes from is
 * consumed, or another taken device belongs to the same GPU. */
static bool partly_used(const struct gs_dra_state *s, int dev)
{
    const struct gs_dra_device *d = &s->w->dev[dev];
    for (int c = 0; c < d->nconsume; c++)
        for (int k = 0; k < GS_DRA_MAX_COUNTERS; k++)
            if (s->used[d->consume[c].set * GS_DRA_MAX_COUNTERS + k] > 0)
                return true;
    return s->gpu[dev] >= 0 && s->gpu_taken[s->gpu[dev]] > 0;
}

/* Devices sharing a counter set with dev that would still fit once dev is taken. */
static double fits_after(const struct gs_dra_state *s, int dev)
{
    const struct gs_dra_device *d = &s->w->dev[dev];
    double n = 0;
    for (int c = 0; c < d->nconsume; c++) {
        int32_t set = d->consume[c].set;
        if (consumes_before(d, c, set))
            continue;
        for (int j = s->set_off[set]; j < s->set_off[set + 1]; j++) {
            int i = s->set_devs[j];
            const struct gs_dra_device *o = &s->w->dev[i];
            bool counted = false; /* through an earlier set of dev's */
            for (int a = 0; a < o->nconsume && !counted; a++)
                counted = o->consume[a].set != set && consumes_before(d, c, o->consume[a].set);
            if (i == dev || counted || s->owner[i] >= 0)
                continue;
            if (consume_fits(s, o, d))
                n += s->weight ? s->weight[i] : 1;
        }
    }
    return n;
}

struct cand {
    int32_t dev;
    bool packed;
    bool fixed;   /* consumes no counters: a device made already (a static MIG instance, a GPU
                   * that is not partitionable), whose taking forecloses nothing else */
    double after; /* weight of the other devices of its GPU still allocatable after it */
};

static int cmp_cand(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    if (a->packed != b->packed)
        return a->packed ? -1 : 1;
    if (a->fixed != b->fixed)
        return a->fixed ? -1 : 1;
    if (a->after != b->after)
        return a->after > b->after ? -1 : 1;
    return (a->dev > b->dev) - (a->dev < b->dev);
}

/* ---------- the best-linked devices of a multi-device request ---------- */

/* The link attributes a driver may publish on a GPU device (gpusched's agent does). */
#define LINK_INDEX  "gpu.gpusched.io/index"
#define LINK_PEERS  "gpu.gpusched.io/nvlinkPeers" /* int: bit j, an NVLink to GPU index j */
#define LINK_COUNT  "gpu.gpusched.io/nvlinks"     /* int: NVLink links to each peer */
#define LINK_NUMA   "gpu.gpusched.io/numaNode"
#define LINK_SWITCH "gpu.gpusched.io/pcieSwitch"
#define LINK_ROOT   "resource.kubernetes.io/pcieRoot"

static bool attr_int(const struct gs_dra_device *d, const char *qname, int64_t *out)
{
    const struct gs_dra_attr *a = attr_q(d, qname);
    if (!a || a->v.type != GS_DRA_INT)
        return false;
    *out = a->v.i;
    return true;
}

/* The link between devices a and b (core/gpulink.h) from their attributes: NVLink where each
 * names the other's index among its peers, the PCIe level from a shared switch, root complex or
 * NUMA node. Devices of different pools share no link. */
static void pair_link(const struct gs_dra_device *a, const struct gs_dra_device *b, uint8_t *nv,
                      uint8_t *pcie)
{
    int64_t ia, ib, pa, pb, na = 1, nb = 1, ua, ub;
    *nv = 0;
    *pcie = GS_PCIE_UNKNOWN;
    if (a->node != b->node || strcmp(a->pool, b->pool) != 0 || strcmp(a->driver, b->driver) != 0)
        return;
    if (attr_int(a, LINK_INDEX, &ia) && attr_int(b, LINK_INDEX, &ib) && ia >= 0 && ia < 64 &&
        ib >= 0 && ib < 64 && attr_int(a, LINK_PEERS, &pa) && attr_int(b, LINK_PEERS, &pb) &&
        (pa >> ib & 1) && (pb >> ia & 1)) {
        attr_int(a, LINK_COUNT, &na);
        attr_int(b, LINK_COUNT, &nb);
        int64_t m = na < nb ? na : nb;
        *nv = (uint8_t)(m < 1 ? 1 : m > 255 ? 255 : m);
    }
    const char *sa = gs_dra_attr_str(a, LINK_SWITCH), *sb = gs_dra_attr_str(b, LINK_SWITCH);
    const char *ra = gs_dra_attr_str(a, LINK_ROOT), *rb = gs_dra_attr_str(b, LINK_ROOT);
    if (sa && sb && strcmp(sa, sb) == 0)
        *pcie = GS_PCIE_SINGLE_SWITCH;
    else if (ra && rb && strcmp(ra, rb) == 0)
        *pcie = GS_PCIE_HOST_BRIDGE;
    else if (attr_int(a, LINK_NUMA, &ua) && attr_int(b, LINK_NUMA, &ub))
        *pcie = ua == ub ? GS_PCIE_SAME_CPU : GS_PCIE_CROSS_CPU;
}

/* For a request of count > 1 devices among n candidates (at most GS_LINK_MAX_GPUS) whose links
 * are known: the best-linked set of count first, the others after, each part in its order.
 * Candidates without link attributes keep their order. */
static void link_order(const struct gs_dra_state *s, struct cand *cands, int n, int count)
{
    if (count < 2 || n <= count || n > GS_LINK_MAX_GPUS)
        return;
    struct gs_gpu_link links[GS_LINK_MAX_GPUS];
    memset(links, 0, sizeof(links));
    bool known = false;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j) {
                pair_link(&s->w->dev[cands[i].dev], &s->w->dev[cands[j].dev], &links[i].nvlink[j],
                          &links[i].pcie[j]);
                known = known || links[i].nvlink[j] || links[i].pcie[j];
            }
    int pick[GS_LINK_MAX_GPUS];
    if (!known || gs_link_choose(links, n, (1u << n) - 1, 0, count, pick) != count)
        return;
    struct cand sorted[GS_LINK_MAX_GPUS];
    bool chosen[GS_LINK_MAX_GPUS] = {false};
    int k = 0;
    for (int c = 0; c < count; c++)
        chosen[pick[c]] = true;
    for (int i = 0; i < n; i++)
        if (chosen[i])
            sorted[k++] = cands[i];
    for (int i = 0; i < n; i++)
        if (!chosen[i])
            sorted[k++] = cands[i];
    memcpy(cands, sorted, sizeof(*cands) * (size_t)n);
}

/* ---------- the search ---------- */

struct search {
    struct gs_dra_state *s;
    const struct gs_dra_claim *claim;
    int32_t node, owner;
    long steps;
    struct gs_dra_result *out; /* the picks so far */
};

static const struct gs_dra_attr *cons_attr(const struct gs_dra_device *d, const char *qname)
{
    return attr_q(d, qname);
}

static bool same_value(const struct gs_dra_value *a, const struct gs_dra_value *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case GS_DRA_INT:
        return a->i == b->i;
    case GS_DRA_BOOL:
        return a->b == b->b;
    case GS_DRA_QUANTITY:
        return a->q.nanos == b->q.nanos;
    default:
        return strcmp(a->s, b->s) == 0;
    }
}

/* Whether device dev, for request r, keeps every constraint with the picks so far. */
static bool constraints_ok(const struct search *x, int r, int dev)
{
    const struct gs_dra_claim *cl = x->claim;
    const struct gs_dra_device *d = &x->s->w->dev[dev];
    for (int c = 0; c < cl->ncons; c++) {
        const struct gs_dra_constraint *k = &cl->cons[c];
        if (k->reqs && !(k->reqs & (1u << r)))
            continue;
        const struct gs_dra_attr *a = cons_attr(d, k->attr);
        if (!a)
            return false;
        for (int i = 0; i < x->out->n; i++) {
            int pr = x->out->req[i];
            if (k->reqs && !(k->reqs & (1u << pr)))
                continue;
            const struct gs_dra_attr *b = cons_attr(&x->s->w->dev[x->out->dev[i]], k->attr);
            bool eq = b && same_value(&a->v, &b->v);
            if (k->distinct ? eq : !eq)
                return false;
        }
    }
    return true;
}

static bool on_node(const struct search *x, int dev)
{
    int32_t n = x->s->w->dev[dev].node;
    return n == x->node || n < 0;
}

static void push(struct search *x, int r, int sub, int dev)
{
    int k = x->out->n++;
    x->out->dev[k] = dev;
    x->out->req[k] = (int16_t)r;
    x->out->sub[k] = (int8_t)sub;
    gs_dra_take(x->s, dev, x->owner);
}

static void pop(struct search *x)
{
    int k = --x->out->n;
    gs_dra_give(x->s, x->out->dev[k]);
}

static bool solve(struct search *x, int r);

/* Choose need more devices for request r, alternative sub, from cands[from..n). */
static bool choose(struct search *x, int r, int sub, const struct cand *cands, int n, int from,
                   int need)
{
    if (need == 0)
        return solve(x, r + 1);
    for (int i = from; i <= n - need; i++) {
        if (++x->steps > GS_DRA_MAX_STEPS)
            return false;
        int dev = cands[i].dev;
        if (!gs_dra_fits(x->s, dev) || !constraints_ok(x, r, dev))
            continue;
        push(x, r, sub, dev);
        if (choose(x, r, sub, cands, n, i + 1, need - 1))
            return true;
        pop(x);
    }
    return false;
}

/* The first index of bynode[lo..hi) whose device is on node n or after it. */
static int lower_node(const struct gs_dra_world *w, const int32_t *bynode, int lo, int hi,
                      int32_t n)
{
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (w->dev[bynode[mid]].node < n)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Candidate dev of the search's node, if it fits now, appended to cands. */
static void add_cand(struct search *x, int dev, struct cand *cands, int *n, bool *all_free)
{
    if (!gs_dra_fits(x->s, dev)) {
        *all_free = false;
        return;
    }
    cands[(*n)++] = (struct cand){dev, partly_used(x->s, dev), x->s->w->dev[dev].nconsume == 0,
                                  fits_after(x->s, dev)};
}

/* Where alternative sb's devices of every node (-1) and of the search's node lie in its bynode:
 * span[0..2) and span[2..4). Returns how many there are (without bynode: every candidate). */
static int node_span(const struct search *x, const struct gs_dra_sub *sb, int span[4])
{
    const struct gs_dra_world *w = x->s->w;
    if (!sb->bynode)
        return sb->ncand;
    span[0] = lower_node(w, sb->bynode, 0, sb->ncand, -1);
    span[1] = lower_node(w, sb->bynode, span[0], sb->ncand, 0);
    span[2] = x->node >= 0 ? lower_node(w, sb->bynode, span[1], sb->ncand, x->node) : span[1];
    span[3] = x->node >= 0 ? lower_node(w, sb->bynode, span[2], sb->ncand, x->node + 1) : span[1];
    return span[1] - span[0] + span[3] - span[2];
}

/* The candidates of alternative sb on the search's node (and of every node) that fit now, in
 * world order; all_free: none of them is taken or out of counters. */
static int node_cands(struct search *x, const struct gs_dra_sub *sb, const int span[4],
                      struct cand *cands, bool *all_free)
{
    const struct gs_dra_world *w = x->s->w;
    int n = 0;
    *all_free = true;
    if (!sb->bynode) {
        for (int i = 0; i < sb->ncand; i++) {
            int dev = sb->cand[i];
            if (dev >= 0 && dev < w->ndev && on_node(x, dev))
                add_cand(x, dev, cands, &n, all_free);
        }
        return n;
    }
    int a = span[0], ae = span[1], b = span[2], be = span[3]; /* two runs merged */
    while (a < ae || b < be) {
        int dev = b >= be || (a < ae && sb->bynode[a] < sb->bynode[b]) ? sb->bynode[a++]
                                                                       : sb->bynode[b++];
        add_cand(x, dev, cands, &n, all_free);
    }
    return n;
}

static bool try_sub(struct search *x, int r, int sub)
{
    const struct gs_dra_sub *sb = &x->claim->req[r].sub[sub];
    int span[4];
    int cap = node_span(x, sb, span);
    struct cand stack[64];
    struct cand *cands = cap <= 64 ? stack : malloc(sizeof(*cands) * ((size_t)cap + 1));
    if (!cands)
        return false;
    bool all_free;
    int n = node_cands(x, sb, span, cands, &all_free);
    bool ok = false;
    if (sb->mode == GS_DRA_ALL) {
        /* every matching device of the node, none taken, and together within the counters */
        int pushed = 0;
        ok = all_free && n > 0;
        for (int i = 0; ok && i < n; i++) {
            if (!gs_dra_fits(x->s, cands[i].dev) || !constraints_ok(x, r, cands[i].dev)) {
                ok = false;
                break;
            }
            push(x, r, sub, cands[i].dev);
            pushed++;
        }
        ok = ok && solve(x, r + 1);
        if (!ok)
            while (pushed-- > 0)
                pop(x);
    } else if (sb->count >= 1 && sb->count <= GS_DRA_MAX_COUNT && n >= sb->count) {
        qsort(cands, (size_t)n, sizeof(*cands), cmp_cand);
        link_order(x->s, cands, n, sb->count);
        ok = choose(x, r, sub, cands, n, 0, sb->count);
    }
    if (cands != stack)
        free(cands);
    return ok;
}

static bool solve(struct search *x, int r)
{
    if (r >= x->claim->nreq)
        return true;
    const struct gs_dra_req *rq = &x->claim->req[r];
    for (int sub = 0; sub < rq->nsub; sub++) {
        if (x->steps > GS_DRA_MAX_STEPS)
            return false;
        if (try_sub(x, r, sub))
            return true;
    }
    return false;
}

int gs_dra_allocate(struct gs_dra_state *s, const struct gs_dra_claim *claim, int32_t node,
                    int32_t owner, struct gs_dra_result *out)
{
    memset(out, 0, sizeof(*out));
    struct search x = {.s = s, .claim = claim, .node = node, .owner = owner, .out = out};
    if (claim->nreq > GS_DRA_MAX_REQ || claim->nreq == 0)
        return GS_ENOFIT;
    if (solve(&x, 0))
        return 0;
    while (out->n > 0)
        pop(&x);
    return GS_ENOFIT;
}

struct node_dev {
    int32_t node, dev;
};

static int cmp_node_dev(const void *pa, const void *pb)
{
    const struct node_dev *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return (a->dev > b->dev) - (a->dev < b->dev);
}

void gs_dra_sub_index(struct gs_dra_sub *sb, const struct gs_dra_world *w, int32_t *store)
{
    sb->bynode = NULL;
    for (int i = 0; i < sb->ncand; i++)
        if (sb->cand[i] < 0 || sb->cand[i] >= w->ndev)
            return; /* left to the scan, which checks each */
    struct node_dev *v = malloc(sizeof(*v) * ((size_t)sb->ncand + 1));
    if (!v)
        return;
    for (int i = 0; i < sb->ncand; i++)
        v[i] = (struct node_dev){w->dev[sb->cand[i]].node, sb->cand[i]};
    qsort(v, (size_t)sb->ncand, sizeof(*v), cmp_node_dev);
    for (int i = 0; i < sb->ncand; i++)
        store[i] = v[i].dev;
    free(v);
    sb->bynode = store;
}

void gs_dra_claim_index(struct gs_dra_claim *c, const struct gs_dra_world *w, int32_t *store)
{
    for (int r = 0; r < c->nreq; r++)
        for (int k = 0; k < c->req[r].nsub; k++) {
            gs_dra_sub_index(&c->req[r].sub[k], w, store);
            store += c->req[r].sub[k].ncand;
        }
}

const char *gs_dra_result_request(const struct gs_dra_claim *claim, const struct gs_dra_result *r,
                                  int k)
{
    return claim->req[r->req[k]].sub[r->sub[k]].name;
}
