/* kstate.c - the placed pods' index for kube-scheduler's constraints (kstate.h): placed pods
 * grouped into classes of identical (namespace, labels, terminating) with per-node counts,
 * and their affinity terms deduplicated with counts per topology value, so the per-pod
 * precomputation (kprep.c) looks at the classes and distinct terms instead of every pod.
 * Topology keys are interned once per state: each node's value of the key as a dense id. The
 * structs are in kstate_internal.h, host ports in kports.c. */
#include "kstate_internal.h"

#include "../base/arena.h"
#include "../base/buf.h"
#include "../base/error.h"
#include "../base/hash.h"

#include <stdlib.h>
#include <string.h>

static void knodes_release(struct gs__knodes *m)
{
    free(m->key);
    free(m->cnt);
    memset(m, 0, sizeof(*m));
}

static int knodes_add(struct gs__knodes *m, int32_t node, int32_t d)
{
    if ((m->used + 1) * 2 > m->cap) {
        uint32_t live = 0;
        for (uint32_t i = 0; i < m->cap; i++)
            live += m->key[i] >= 0 && m->cnt[i] > 0;
        uint32_t cap = 8;
        while (cap < (live + 1) * 4)
            cap *= 2;
        int32_t *k = malloc(cap * sizeof(int32_t)), *c = malloc(cap * sizeof(int32_t));
        if (!k || !c) {
            free(k);
            free(c);
            return GS_ENOMEM;
        }
        for (uint32_t i = 0; i < cap; i++)
            k[i] = -1;
        uint32_t used = 0;
        for (uint32_t i = 0; i < m->cap; i++) {
            if (m->key[i] < 0 || m->cnt[i] <= 0)
                continue;
            uint32_t j = ((uint32_t)m->key[i] * 2654435761u) & (cap - 1);
            while (k[j] >= 0)
                j = (j + 1) & (cap - 1);
            k[j] = m->key[i];
            c[j] = m->cnt[i];
            used++;
        }
        free(m->key);
        free(m->cnt);
        m->key = k;
        m->cnt = c;
        m->cap = cap;
        m->used = used;
    }
    uint32_t j = ((uint32_t)node * 2654435761u) & (m->cap - 1);
    while (m->key[j] >= 0 && m->key[j] != node)
        j = (j + 1) & (m->cap - 1);
    if (m->key[j] < 0) {
        m->key[j] = node;
        m->cnt[j] = 0;
        m->used++;
    }
    m->cnt[j] += d;
    return 0;
}

static int push_i32(int32_t **v, int *n, int *cap, int32_t x)
{
    if (*n == *cap) {
        int32_t *g = gs_grow(*v, cap, sizeof(int32_t), 8);
        if (!g)
            return GS_ENOMEM;
        *v = g;
    }
    (*v)[(*n)++] = x;
    return 0;
}

int gs_kstate_new(const struct gs_cluster *c, struct gs_kstate **out)
{
    struct gs_kstate *s = calloc(1, sizeof(*s));
    if (!s)
        return GS_ENOMEM;
    s->nnodes = c->nnodes;
    s->stamp = gs__cluster_stamp();
    if (!s->stamp)
        s->stamp = gs__cluster_stamp();
    s->ports = calloc(c->nnodes ? (size_t)c->nnodes : 1, sizeof(struct gs__kports));
    if (!s->ports) {
        free(s);
        return GS_ENOMEM;
    }
    gs_buf_init(&s->sig, 0);
    *out = s;
    return 0;
}

static void class_free(struct gs__kclass *k)
{
    free(k->sig);
    gs_labels_release(&k->labels);
    knodes_release(&k->nodes);
    memset(k, 0, sizeof(*k));
}

static void xterm_free(struct gs__kterm *x)
{
    free(x->sig);
    free(x->cnt);
    gs_arena_release(&x->arena);
    memset(x, 0, sizeof(*x));
}

void gs_kstate_free(struct gs_kstate *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nkeys; i++) {
        free(s->keys[i].name);
        free(s->keys[i].val);
    }
    free(s->keys);
    gs_strmap_release(&s->keymap);
    for (int i = 0; i < s->ncls; i++)
        class_free(&s->cls[i]);
    free(s->cls);
    free(s->freecls);
    gs_strmap_release(&s->clsmap);
    for (int i = 0; i < s->nns; i++) {
        free(s->ns[i].name);
        free(s->ns[i].cls);
    }
    free(s->ns);
    gs_strmap_release(&s->nsmap);
    for (int i = 0; i < s->nx; i++)
        xterm_free(&s->x[i]);
    free(s->x);
    free(s->freex);
    gs_strmap_release(&s->xmap);
    for (int k = 0; k < GS__KX_KINDS; k++)
        free(s->xlist[k]);
    for (int i = 0; i < s->nnodes; i++)
        gs__kports_release(&s->ports[i]);
    free(s->ports);
    for (int i = 0; i < s->npodslots; i++)
        free(s->pods[i].x);
    free(s->pods);
    free(s->freepods);
    gs_buf_release(&s->sig);
    free(s);
}

int gs_kstate_npods(const struct gs_kstate *s)
{
    return s->npods;
}

int gs__kstate_key(struct gs_kstate *s, const struct gs_cluster *c, const char *name)
{
    int32_t id = gs_strmap_get(&s->keymap, name, (uint32_t)strlen(name));
    if (id >= 0)
        return id;
    if (s->nkeys == s->capkeys) {
        struct gs__ktopo *g = gs_grow(s->keys, &s->capkeys, sizeof(struct gs__ktopo), 4);
        if (!g)
            return GS_ENOMEM;
        s->keys = g;
    }
    struct gs__ktopo k = {0};
    k.name = malloc(strlen(name) + 1);
    k.val = malloc((s->nnodes ? (size_t)s->nnodes : 1) * sizeof(int32_t));
    struct gs_strmap vals = {0};
    int ret = GS_ENOMEM;
    if (!k.name || !k.val)
        goto out;
    memcpy(k.name, name, strlen(name) + 1);
    k.hostname = strcmp(name, GS_KHOSTNAME_KEY) == 0;
    for (int32_t n = 0; n < s->nnodes; n++) {
        const char *v = n < c->nnodes ? gs_labels_get(&c->nodes[n].labels, name) : NULL;
        if (!v) {
            k.val[n] = -1;
            continue;
        }
        int32_t vid = gs_strmap_get(&vals, v, (uint32_t)strlen(v));
        if (vid < 0) {
            vid = k.nvals;
            if (gs_strmap_put(&vals, v, (uint32_t)strlen(v), vid))
                goto out;
            k.nvals++;
        }
        k.val[n] = vid;
    }
    if (gs_strmap_put(&s->keymap, name, (uint32_t)strlen(name), s->nkeys))
        goto out;
    s->keys[s->nkeys] = k;
    ret = s->nkeys++;
out:
    gs_strmap_release(&vals);
    if (ret < 0) {
        free(k.name);
        free(k.val);
    }
    return ret;
}

void gs__ksig_str(struct gs_buf *b, const char *str)
{
    uint32_t l = (uint32_t)strlen(str);
    gs_buf_append(b, &l, sizeof(l));
    gs_buf_append(b, str, l);
}

void gs__ksig_u32(struct gs_buf *b, uint32_t v)
{
    gs_buf_append(b, &v, sizeof(v));
}

void gs__ksig_sel(struct gs_buf *b, const struct gs_ksel *s)
{
    gs__ksig_u32(b, s->nothing);
    gs__ksig_u32(b, s->nreqs);
    for (uint32_t i = 0; i < s->nreqs; i++) {
        const struct gs_kreq *r = &s->reqs[i];
        gs__ksig_u32(b, r->op);
        gs__ksig_str(b, r->key);
        gs__ksig_u32(b, r->nvals);
        for (uint32_t j = 0; j < r->nvals; j++)
            gs__ksig_str(b, r->vals[j]);
        gs_buf_append(b, &r->num, sizeof(r->num));
    }
}

static int ns_id(struct gs_kstate *s, const char *ns)
{
    int32_t id = gs_strmap_get(&s->nsmap, ns, (uint32_t)strlen(ns));
    if (id >= 0)
        return id;
    if (s->nns == s->capns) {
        struct gs__kns *g = gs_grow(s->ns, &s->capns, sizeof(struct gs__kns), 8);
        if (!g)
            return GS_ENOMEM;
        s->ns = g;
    }
    struct gs__kns e = {0};
    e.name = malloc(strlen(ns) + 1);
    if (!e.name)
        return GS_ENOMEM;
    memcpy(e.name, ns, strlen(ns) + 1);
    if (gs_strmap_put(&s->nsmap, ns, (uint32_t)strlen(ns), s->nns)) {
        free(e.name);
        return GS_ENOMEM;
    }
    s->ns[s->nns] = e;
    return s->nns++;
}

/* A slot for a new class or term in *arr (n used, cap allocated, elements of size bytes): the
 * last freed one in freel[0..*nfree), else a zeroed one at the end, the array grown (*arr then
 * moves); its index, or GS_ENOMEM with nothing changed. */
static int slot_take(void **arr, int *n, int *cap, size_t size, const int32_t *freel, int *nfree)
{
    if (*nfree)
        return freel[--*nfree];
    if (*n == *cap) {
        void *g = gs_grow(*arr, cap, size, 16);
        if (!g)
            return GS_ENOMEM;
        *arr = g;
    }
    memset((char *)*arr + (size_t)*n * size, 0, size);
    return (*n)++;
}

/* The class of a pod, created when new. */
static int class_of(struct gs_kstate *s, const struct gs_kpod *p)
{
    const char *ns = p->ns ? p->ns : "";
    gs_buf_reset(&s->sig);
    gs__ksig_str(&s->sig, ns);
    gs__ksig_u32(&s->sig, p->terminating);
    gs__ksig_u32(&s->sig, p->labels.n);
    for (uint32_t i = 0; i < p->labels.n; i++) {
        gs__ksig_str(&s->sig, gs_labels_key(&p->labels, i));
        gs__ksig_str(&s->sig, gs_labels_val(&p->labels, i));
    }
    if (!s->sig.data)
        return GS_ENOMEM;
    uint32_t len = (uint32_t)s->sig.len;
    int32_t id = gs_strmap_get(&s->clsmap, s->sig.data, len);
    if (id >= 0)
        return id;
    int nid = ns_id(s, ns);
    if (nid < 0)
        return nid;
    void *arr = s->cls;
    id = slot_take(&arr, &s->ncls, &s->capcls, sizeof(struct gs__kclass), s->freecls, &s->nfreecls);
    s->cls = arr;
    if (id < 0)
        return id;
    struct gs__kclass *k = &s->cls[id];
    k->sig = malloc(len);
    if (!k->sig || gs_labels_copy(&k->labels, &p->labels) ||
        push_i32(&s->ns[nid].cls, &s->ns[nid].ncls, &s->ns[nid].cap, id)) {
        class_free(k);
        goto fail;
    }
    if (gs_strmap_put(&s->clsmap, s->sig.data, len, id)) {
        s->ns[nid].ncls--;
        class_free(k);
        goto fail;
    }
    memcpy(k->sig, s->sig.data, len);
    k->siglen = len;
    k->live = true;
    k->terminating = p->terminating;
    k->ns = nid;
    k->npos = s->ns[nid].ncls - 1;
    k->nsname = s->ns[nid].name;
    return id;
fail:
    push_i32(&s->freecls, &s->nfreecls, &s->capfreecls, id);
    return GS_ENOMEM;
}

static void class_drop(struct gs_kstate *s, int id)
{
    struct gs__kclass *k = &s->cls[id];
    struct gs__kns *e = &s->ns[k->ns];
    int32_t last = e->cls[--e->ncls];
    if (last != id) {
        e->cls[k->npos] = last;
        s->cls[last].npos = k->npos;
    }
    gs_strmap_del(&s->clsmap, k->sig, k->siglen);
    class_free(k);
    push_i32(&s->freecls, &s->nfreecls, &s->capfreecls, id);
}

static int copy_sel(struct gs_arena *a, struct gs_ksel *d, const struct gs_ksel *src)
{
    d->nothing = src->nothing;
    d->nreqs = src->nreqs;
    d->reqs = gs_arena_alloc(a, src->nreqs * sizeof(struct gs_kreq));
    if (!d->reqs)
        return GS_ENOMEM;
    for (uint32_t i = 0; i < src->nreqs; i++) {
        struct gs_kreq *r = &d->reqs[i];
        *r = src->reqs[i];
        r->key = gs_arena_strdup(a, src->reqs[i].key);
        r->vals = gs_arena_alloc(a, r->nvals * sizeof(char *));
        if (!r->key || !r->vals)
            return GS_ENOMEM;
        for (uint32_t j = 0; j < r->nvals; j++)
            if (!(r->vals[j] = gs_arena_strdup(a, src->reqs[i].vals[j])))
                return GS_ENOMEM;
    }
    return 0;
}

/* The id of a placed term (kind, weight, term), created when new. */
static int xterm_of(struct gs_kstate *s, const struct gs_cluster *c, int kind, int32_t weight,
                    const struct gs_kaff_term *t)
{
    int key = gs__kstate_key(s, c, t->topology_key);
    if (key < 0)
        return key;
    gs_buf_reset(&s->sig);
    gs__ksig_u32(&s->sig, (uint32_t)kind);
    gs__ksig_u32(&s->sig, (uint32_t)weight);
    gs__ksig_str(&s->sig, t->topology_key);
    gs__ksig_u32(&s->sig, t->nns);
    for (uint32_t i = 0; i < t->nns; i++)
        gs__ksig_str(&s->sig, t->ns[i]);
    gs__ksig_sel(&s->sig, &t->ns_sel);
    gs__ksig_sel(&s->sig, &t->sel);
    if (!s->sig.data)
        return GS_ENOMEM;
    uint32_t len = (uint32_t)s->sig.len;
    int32_t id = gs_strmap_get(&s->xmap, s->sig.data, len);
    if (id >= 0)
        return id;
    void *arr = s->x;
    id = slot_take(&arr, &s->nx, &s->capx, sizeof(struct gs__kterm), s->freex, &s->nfreex);
    s->x = arr;
    if (id < 0)
        return id;
    struct gs__kterm *x = &s->x[id];
    x->kind = (uint8_t)kind;
    x->weight = weight;
    x->key = key;
    x->sig = malloc(len);
    x->cnt = calloc(s->keys[key].nvals ? (size_t)s->keys[key].nvals : 1, sizeof(int32_t));
    bool ok = x->sig && x->cnt;
    if (ok) {
        memcpy(x->sig, s->sig.data, len);
        x->siglen = len;
        x->t = *t;
        x->t.weight = t->weight;
        x->t.topology_key = gs_arena_strdup(&x->arena, t->topology_key);
        x->t.ns = gs_arena_alloc(&x->arena, t->nns * sizeof(char *));
        ok = x->t.topology_key && x->t.ns && !copy_sel(&x->arena, &x->t.sel, &t->sel) &&
             !copy_sel(&x->arena, &x->t.ns_sel, &t->ns_sel);
        for (uint32_t i = 0; ok && i < t->nns; i++)
            ok = (x->t.ns[i] = gs_arena_strdup(&x->arena, t->ns[i])) != NULL;
    }
    if (ok)
        ok = !push_i32(&s->xlist[kind], &s->nxlist[kind], &s->capxlist[kind], id);
    if (ok && gs_strmap_put(&s->xmap, x->sig, len, id)) {
        s->nxlist[kind]--;
        ok = false;
    }
    if (!ok) {
        xterm_free(x);
        push_i32(&s->freex, &s->nfreex, &s->capfreex, id);
        return GS_ENOMEM;
    }
    x->live = true;
    x->pos = s->nxlist[kind] - 1;
    return id;
}

static void xterm_drop(struct gs_kstate *s, int id)
{
    struct gs__kterm *x = &s->x[id];
    int kind = x->kind;
    int32_t last = s->xlist[kind][--s->nxlist[kind]];
    if (last != id) {
        s->xlist[kind][x->pos] = last;
        s->x[last].pos = x->pos;
    }
    gs_strmap_del(&s->xmap, x->sig, x->siglen);
    xterm_free(x);
    push_i32(&s->freex, &s->nfreex, &s->capfreex, id);
}

static void xterm_count(struct gs_kstate *s, int id, int node, int d)
{
    struct gs__kterm *x = &s->x[id];
    x->refs += d;
    int32_t v = gs__kstate_val(s, x->key, node);
    if (v >= 0) {
        int32_t before = x->cnt[v];
        x->cnt[v] += d;
        x->nz += (before <= 0 && x->cnt[v] > 0) - (before > 0 && x->cnt[v] <= 0);
    }
    if (x->refs <= 0)
        xterm_drop(s, id);
}

static void pod_uncount(struct gs_kstate *s, struct gs__kplaced *pl, int nx, int nports)
{
    for (int i = nx - 1; i >= 0; i--)
        xterm_count(s, pl->x[i], pl->node, -1);
    for (int i = 0; i < nports; i++)
        gs__kports_add(&s->ports[pl->node], &pl->pod->ports[i], -1);
    if (pl->cls >= 0) {
        struct gs__kclass *k = &s->cls[pl->cls];
        knodes_add(&k->nodes, pl->node, -1);
        if (--k->npods == 0)
            class_drop(s, pl->cls);
    }
}

int gs_kstate_add_pod(struct gs_kstate *s, const struct gs_cluster *c, const struct gs_kpod *p,
                      int node)
{
    if (node < 0 || node >= s->nnodes)
        return GS_EINVAL;
    int h;
    if (s->nfreepods) {
        h = s->freepods[--s->nfreepods];
    } else {
        if (s->npodslots == s->cappods) {
            struct gs__kplaced *g = gs_grow(s->pods, &s->cappods, sizeof(struct gs__kplaced), 64);
            if (!g)
                return GS_ENOMEM;
            s->pods = g;
        }
        h = s->npodslots++;
        memset(&s->pods[h], 0, sizeof(s->pods[h]));
    }
    struct gs__kplaced *pl = &s->pods[h];
    uint32_t nterms = p->nanti + p->naff + p->npaff + p->npanti;
    pl->pod = p;
    pl->node = node;
    pl->cls = -1;
    pl->nx = 0;
    free(pl->x);
    pl->x = nterms ? malloc(nterms * sizeof(int32_t)) : NULL;
    int nports = 0;
    if (nterms && !pl->x)
        goto fail;
    int cls = class_of(s, p);
    if (cls < 0)
        goto fail;
    if (knodes_add(&s->cls[cls].nodes, node, 1)) {
        if (s->cls[cls].npods == 0)
            class_drop(s, cls);
        goto fail;
    }
    s->cls[cls].npods++;
    pl->cls = cls;
    struct {
        const struct gs_kaff_term *t;
        uint32_t n;
        int kind, sign;
    } groups[] = {{p->anti, p->nanti, GS__KX_REQ_ANTI, 1},
                  {p->aff, p->naff, GS__KX_REQ_AFF, 1},
                  {p->paff, p->npaff, GS__KX_PREF_AFF, 1},
                  {p->panti, p->npanti, GS__KX_PREF_ANTI, -1}};
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        for (uint32_t i = 0; i < groups[g].n; i++) {
            const struct gs_kaff_term *t = &groups[g].t[i];
            int32_t w = groups[g].kind == GS__KX_REQ_ANTI  ? 0
                        : groups[g].kind == GS__KX_REQ_AFF ? GS_KHARD_AFFINITY_WEIGHT
                                                           : groups[g].sign * t->weight;
            int id = xterm_of(s, c, groups[g].kind, w, t);
            if (id < 0)
                goto fail;
            pl->x[pl->nx++] = id;
            xterm_count(s, id, node, 1);
        }
    }
    for (; nports < (int)p->nports; nports++)
        if (gs__kports_add(&s->ports[node], &p->ports[nports], 1))
            goto fail;
    s->npods++;
    return h;
fail:
    pod_uncount(s, pl, pl->nx, nports);
    free(pl->x);
    memset(pl, 0, sizeof(*pl));
    pl->node = -1;
    push_i32(&s->freepods, &s->nfreepods, &s->capfreepods, h);
    return GS_ENOMEM;
}

int gs_kstate_remove_pod(struct gs_kstate *s, int h)
{
    if (h < 0 || h >= s->npodslots || !s->pods[h].pod)
        return GS_ENOTFOUND;
    struct gs__kplaced *pl = &s->pods[h];
    pod_uncount(s, pl, pl->nx, (int)pl->pod->nports);
    free(pl->x);
    memset(pl, 0, sizeof(*pl));
    pl->node = -1;
    s->npods--;
    /* a free list that cannot grow leaks the slot, nothing else */
    push_i32(&s->freepods, &s->nfreepods, &s->capfreepods, h);
    return 0;
}
