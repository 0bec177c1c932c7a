/* dra.c - DRA device allocation (see dra.h): the state of taken devices and consumed counters,
 * and a bounded backtracking search over one claim's requests, alternatives and devices,
 * with candidates ordered fragmentation-aware (pack onto GPUs in use, then keep the most
 * future placements of a counter set, as core/frag.c weighs what a node can still host).
 * formats/draobj.c builds worlds and claims from the API's objects; sched/claims.c runs this for
 * the pods it schedules. */
#include "dra.h"

#include "../base/error.h"

#include <stdlib.h>
#include <string.h>

const struct gs_dra_attr *gs_dra_attr_find(const struct gs_dra_device *d, const char *domain,
                                           size_t dlen, const char *name, size_t nlen,
                                           bool capacity)
{
    for (int k = 0; k < d->nattrs; k++) {
        const struct gs_dra_attr *a = &d->attrs[k];
        if (a->capacity != capacity)
            continue;
        size_t n = strlen(a->name);
        if (n == dlen + 1 + nlen && memcmp(a->name, domain, dlen) == 0 && a->name[dlen] == '/' &&
            memcmp(a->name + dlen + 1, name, nlen) == 0)
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

int gs_dra_state_init(struct gs_dra_state *s, const struct gs_dra_world *w)
{
    memset(s, 0, sizeof(*s));
    s->w = w;
    s->owner = malloc(sizeof(*s->owner) * ((size_t)w->ndev + 1));
    s->used = calloc((size_t)w->nsets * GS_DRA_MAX_COUNTERS + 1, sizeof(*s->used));
    if (!s->owner || !s->used) {
        gs_dra_state_release(s);
        return GS_ENOMEM;
    }
    for (int i = 0; i < w->ndev; i++)
        s->owner[i] = -1;
    return 0;
}

void gs_dra_state_release(struct gs_dra_state *s)
{
    free(s->owner);
    free(s->used);
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
}

void gs_dra_give(struct gs_dra_state *s, int dev)
{
    if (s->owner[dev] < 0)
        return;
    s->owner[dev] = -1;
    consume(s, dev, -1);
}

/* ---------- fragmentation-aware order ---------- */

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

/* Whether the GPU of device dev is in use already: a counter of a set it consumes from is
 * consumed, or another taken device belongs to the same GPU. */
static bool partly_used(const struct gs_dra_state *s, int dev)
{
    const struct gs_dra_device *d = &s->w->dev[dev];
    for (int c = 0; c < d->nconsume; c++)
        for (int k = 0; k < GS_DRA_MAX_COUNTERS; k++)
            if (s->used[d->consume[c].set * GS_DRA_MAX_COUNTERS + k] > 0)
                return true;
    const char *key = gpu_key(d);
    if (!key)
        return false;
    for (int i = 0; i < s->w->ndev; i++) {
        if (i == dev || s->owner[i] < 0 || s->w->dev[i].node != d->node)
            continue;
        const char *o = gpu_key(&s->w->dev[i]);
        if (o && strcmp(o, key) == 0)
            return true;
    }
    return false;
}

/* Devices sharing a counter set with dev that would still fit once dev is taken. */
static double fits_after(const struct gs_dra_state *s, int dev)
{
    const struct gs_dra_device *d = &s->w->dev[dev];
    if (d->nconsume == 0)
        return 0;
    double n = 0;
    for (int i = 0; i < s->w->ndev; i++) {
        const struct gs_dra_device *o = &s->w->dev[i];
        if (i == dev || s->owner[i] >= 0 || o->nconsume == 0)
            continue;
        bool shares = false;
        for (int a = 0; a < o->nconsume && !shares; a++)
            for (int b = 0; b < d->nconsume; b++)
                shares |= o->consume[a].set == d->consume[b].set;
        if (shares && consume_fits(s, o, d))
            n += s->weight ? s->weight[i] : 1;
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

static bool try_sub(struct search *x, int r, int sub)
{
    const struct gs_dra_sub *sb = &x->claim->req[r].sub[sub];
    struct cand *cands = malloc(sizeof(*cands) * ((size_t)sb->ncand + 1));
    if (!cands)
        return false;
    int n = 0;
    bool all_free = true;
    for (int i = 0; i < sb->ncand; i++) {
        int dev = sb->cand[i];
        if (dev < 0 || dev >= x->s->w->ndev || !on_node(x, dev))
            continue;
        if (!gs_dra_fits(x->s, dev)) {
            all_free = false;
            continue;
        }
        cands[n++] = (struct cand){dev, partly_used(x->s, dev), x->s->w->dev[dev].nconsume == 0,
                                   fits_after(x->s, dev)};
    }
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
        ok = choose(x, r, sub, cands, n, 0, sb->count);
    }
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

const char *gs_dra_result_request(const struct gs_dra_claim *claim, const struct gs_dra_result *r,
                                  int k)
{
    return claim->req[r->req[k]].sub[r->sub[k]].name;
}
