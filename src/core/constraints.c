/* constraints.c - kube-scheduler's placement semantics (node name, node affinity, host ports,
 * pod topology spread, inter-pod affinity) over the engine's nodes (core/cluster) and the
 * pods formats/podspec reads. The state groups placed pods into classes of identical
 * (namespace, labels, terminating) with per-node counts, and deduplicates placed pods'
 * affinity terms with counts per topology value, so the per-pod precomputation looks at the
 * classes and distinct terms instead of every pod, and a filter call is a few array reads.
 * Topology keys are interned once per state: each node's value of the key as a dense id. */
#include "constraints.h"

#include "../base/arena.h"
#include "../base/buf.h"
#include "../base/error.h"
#include "../base/hash.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void gs_kpod_init(struct gs_kpod *p)
{
    memset(p, 0, sizeof(*p));
    gs_labels_init(&p->labels);
}

void gs_kpod_release(struct gs_kpod *p)
{
    gs_arena_release(&p->arena);
    gs_labels_release(&p->labels);
    memset(p, 0, sizeof(*p));
}

void *gs_kpod_alloc(struct gs_kpod *p, size_t n)
{
    return gs_arena_alloc(&p->arena, n);
}

char *gs_kpod_strdup(struct gs_kpod *p, const char *s)
{
    return gs_arena_strdup(&p->arena, s);
}

/* ---- matching ---- */

bool gs_kreq_parse_num(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    const char *d = s + (*s == '+' || *s == '-');
    if (!*d)
        return false;
    for (const char *q = d; *q; q++)
        if (*q < '0' || *q > '9')
            return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static bool has_val(const struct gs_kreq *r, const char *v)
{
    for (uint32_t i = 0; i < r->nvals; i++)
        if (strcmp(r->vals[i], v) == 0)
            return true;
    return false;
}

bool gs_kop_matches(enum gs_kop op, bool in, int64_t num, const char *v)
{
    int64_t x;
    switch (op) {
    case GS_KOP_IN:
        return v && in;
    case GS_KOP_NOTIN:
        return !v || !in;
    case GS_KOP_EXISTS:
        return v != NULL;
    case GS_KOP_DOESNOTEXIST:
        return v == NULL;
    case GS_KOP_GT:
        return v && gs_kreq_parse_num(v, &x) && x > num;
    case GS_KOP_LT:
        return v && gs_kreq_parse_num(v, &x) && x < num;
    }
    return false;
}

/* One requirement against a label's value (NULL: the label is absent). */
static bool req_matches(const struct gs_kreq *r, const char *v)
{
    bool in = (r->op == GS_KOP_IN || r->op == GS_KOP_NOTIN) && v && has_val(r, v);
    return gs_kop_matches((enum gs_kop)r->op, in, r->num, v);
}

bool gs_ksel_matches(const struct gs_ksel *s, const struct gs_labels *l)
{
    if (s->nothing)
        return false;
    for (uint32_t i = 0; i < s->nreqs; i++)
        if (!req_matches(&s->reqs[i], gs_labels_get(l, s->reqs[i].key)))
            return false;
    return true;
}

bool gs_knode_term_matches(const struct gs_knode_term *t, const struct gs_node *n)
{
    if (t->nexprs == 0 && t->nfields == 0)
        return false;
    for (uint32_t i = 0; i < t->nexprs; i++)
        if (!req_matches(&t->exprs[i], gs_labels_get(&n->labels, t->exprs[i].key)))
            return false;
    for (uint32_t i = 0; i < t->nfields; i++) {
        const char *v = strcmp(t->fields[i].key, "metadata.name") == 0 ? n->name : NULL;
        if (!req_matches(&t->fields[i], v))
            return false;
    }
    return true;
}

bool gs_kpod_node_matches(const struct gs_kpod *p, const struct gs_node *n)
{
    for (uint32_t i = 0; i < p->nnode_selector; i++) {
        const char *v = gs_labels_get(&n->labels, p->node_selector[i].key);
        if (!v || strcmp(v, p->node_selector[i].val) != 0)
            return false;
    }
    if (!p->has_required)
        return true;
    for (uint32_t i = 0; i < p->nrequired; i++)
        if (gs_knode_term_matches(&p->required[i], n))
            return true;
    return false;
}

static bool ns_matches(const struct gs_kaff_term *t, const char *ns)
{
    for (uint32_t i = 0; i < t->nns; i++)
        if (strcmp(t->ns[i], ns) == 0)
            return true;
    if (t->ns_sel.nothing)
        return false;
    /* the namespace's labels as far as they are known: kubernetes.io/metadata.name */
    for (uint32_t i = 0; i < t->ns_sel.nreqs; i++) {
        const struct gs_kreq *r = &t->ns_sel.reqs[i];
        if (!req_matches(r, strcmp(r->key, GS_KNS_NAME_KEY) == 0 ? ns : NULL))
            return false;
    }
    return true;
}

bool gs_kaff_term_matches(const struct gs_kaff_term *t, const struct gs_kpod *target)
{
    return ns_matches(t, target->ns ? target->ns : "") && gs_ksel_matches(&t->sel, &target->labels);
}

static bool matches_all(const struct gs_kaff_term *t, uint32_t n, const struct gs_kpod *target)
{
    for (uint32_t i = 0; i < n; i++)
        if (!gs_kaff_term_matches(&t[i], target))
            return false;
    return true;
}

/* ---- small hash maps ---- */

/* node id -> count; entries that fall to 0 stay until the next rehash */
struct nmap {
    int32_t *key, *cnt;
    uint32_t cap, used;
};

/* The next node of m holding pods, from slot *i on (start at 0): its index and pod count;
 * false past the last. */
static inline bool nmap_next(const struct nmap *m, uint32_t *i, int32_t *node, int32_t *cnt)
{
    for (; *i < m->cap; (*i)++) {
        if (m->key[*i] >= 0 && m->cnt[*i] > 0) {
            *node = m->key[*i];
            *cnt = m->cnt[*i];
            (*i)++;
            return true;
        }
    }
    return false;
}

static void nmap_release(struct nmap *m)
{
    free(m->key);
    free(m->cnt);
    memset(m, 0, sizeof(*m));
}

static int nmap_add(struct nmap *m, int32_t node, int32_t d)
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

/* ---- the state ---- */

struct tkey {
    char *name;
    int32_t *val; /* per node: value id, -1 when the node lacks the key */
    int32_t nvals;
    bool hostname;
};

struct pclass {
    bool live;
    bool terminating;
    char *sig; /* the map key */
    uint32_t siglen;
    int32_t ns;   /* namespace id */
    int32_t npos; /* position in the namespace's list */
    const char *nsname;
    struct gs_labels labels;
    int32_t npods;
    struct nmap nodes;
};

struct nsent {
    char *name;
    int32_t *cls;
    int ncls, cap;
};

enum xkind { X_REQ_ANTI = 0, X_REQ_AFF, X_PREF_AFF, X_PREF_ANTI, X_KINDS };

struct xterm {
    bool live;
    uint8_t kind;
    int32_t weight; /* signed: the score multiplier folded in */
    int32_t key;
    int32_t pos; /* position in the kind's list */
    char *sig;
    uint32_t siglen;
    struct gs_kaff_term t; /* deep copy in arena */
    struct gs_arena arena;
    int32_t *cnt; /* per value id of key */
    int32_t nz;   /* values with cnt > 0 */
    int32_t refs;
};

struct portent {
    const char *ip;
    int32_t port;
    uint8_t proto;
    int32_t refs;
};

struct nports {
    struct portent *e;
    int n, cap;
};

struct placed {
    const struct gs_kpod *pod;
    int32_t node; /* -1: free slot */
    int32_t cls;
    int32_t nx;
    int32_t *x;
};

struct gs_kstate {
    int32_t nnodes;
    uint32_t stamp; /* tells this state from any other (preps cache per state) */
    struct tkey *keys;
    int nkeys, capkeys;
    struct gs_strmap keymap;
    struct pclass *cls;
    int ncls, capcls;
    int32_t *freecls;
    int nfreecls, capfreecls;
    struct gs_strmap clsmap;
    struct nsent *ns;
    int nns, capns;
    struct gs_strmap nsmap;
    struct xterm *x;
    int nx, capx;
    int32_t *freex;
    int nfreex, capfreex;
    struct gs_strmap xmap;
    int32_t *xlist[X_KINDS];
    int nxlist[X_KINDS], capxlist[X_KINDS];
    struct nports *ports; /* per node */
    struct placed *pods;
    int npodslots, cappods, npods;
    int32_t *freepods;
    int nfreepods, capfreepods;
    struct gs_buf sig;
};

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
    s->ports = calloc(c->nnodes ? (size_t)c->nnodes : 1, sizeof(struct nports));
    if (!s->ports) {
        free(s);
        return GS_ENOMEM;
    }
    gs_buf_init(&s->sig, 0);
    *out = s;
    return 0;
}

static void class_free(struct pclass *k)
{
    free(k->sig);
    gs_labels_release(&k->labels);
    nmap_release(&k->nodes);
    memset(k, 0, sizeof(*k));
}

static void xterm_free(struct xterm *x)
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
    for (int k = 0; k < X_KINDS; k++)
        free(s->xlist[k]);
    for (int i = 0; i < s->nnodes; i++)
        free(s->ports[i].e);
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

/* The id of a topology key, interning it (every node's value) on first use. */
static int intern_key(struct gs_kstate *s, const struct gs_cluster *c, const char *name)
{
    int32_t id = gs_strmap_get(&s->keymap, name, (uint32_t)strlen(name));
    if (id >= 0)
        return id;
    if (s->nkeys == s->capkeys) {
        struct tkey *g = gs_grow(s->keys, &s->capkeys, sizeof(struct tkey), 4);
        if (!g)
            return GS_ENOMEM;
        s->keys = g;
    }
    struct tkey k = {0};
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

static inline int32_t node_val(const struct gs_kstate *s, int key, int node)
{
    return s->keys[key].val[node];
}

/* signatures: length-prefixed fields, so no two different inputs share one */
static void sig_str(struct gs_buf *b, const char *str)
{
    uint32_t l = (uint32_t)strlen(str);
    gs_buf_append(b, &l, sizeof(l));
    gs_buf_append(b, str, l);
}

static void sig_u32(struct gs_buf *b, uint32_t v)
{
    gs_buf_append(b, &v, sizeof(v));
}

static void sig_sel(struct gs_buf *b, const struct gs_ksel *s)
{
    sig_u32(b, s->nothing);
    sig_u32(b, s->nreqs);
    for (uint32_t i = 0; i < s->nreqs; i++) {
        const struct gs_kreq *r = &s->reqs[i];
        sig_u32(b, r->op);
        sig_str(b, r->key);
        sig_u32(b, r->nvals);
        for (uint32_t j = 0; j < r->nvals; j++)
            sig_str(b, r->vals[j]);
        gs_buf_append(b, &r->num, sizeof(r->num));
    }
}

static int ns_id(struct gs_kstate *s, const char *ns)
{
    int32_t id = gs_strmap_get(&s->nsmap, ns, (uint32_t)strlen(ns));
    if (id >= 0)
        return id;
    if (s->nns == s->capns) {
        struct nsent *g = gs_grow(s->ns, &s->capns, sizeof(struct nsent), 8);
        if (!g)
            return GS_ENOMEM;
        s->ns = g;
    }
    struct nsent e = {0};
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
    sig_str(&s->sig, ns);
    sig_u32(&s->sig, p->terminating);
    sig_u32(&s->sig, p->labels.n);
    for (uint32_t i = 0; i < p->labels.n; i++) {
        sig_str(&s->sig, gs_labels_key(&p->labels, i));
        sig_str(&s->sig, gs_labels_val(&p->labels, i));
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
    id = slot_take(&arr, &s->ncls, &s->capcls, sizeof(struct pclass), s->freecls, &s->nfreecls);
    s->cls = arr;
    if (id < 0)
        return id;
    struct pclass *k = &s->cls[id];
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
    struct pclass *k = &s->cls[id];
    struct nsent *e = &s->ns[k->ns];
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
    int key = intern_key(s, c, t->topology_key);
    if (key < 0)
        return key;
    gs_buf_reset(&s->sig);
    sig_u32(&s->sig, (uint32_t)kind);
    sig_u32(&s->sig, (uint32_t)weight);
    sig_str(&s->sig, t->topology_key);
    sig_u32(&s->sig, t->nns);
    for (uint32_t i = 0; i < t->nns; i++)
        sig_str(&s->sig, t->ns[i]);
    sig_sel(&s->sig, &t->ns_sel);
    sig_sel(&s->sig, &t->sel);
    if (!s->sig.data)
        return GS_ENOMEM;
    uint32_t len = (uint32_t)s->sig.len;
    int32_t id = gs_strmap_get(&s->xmap, s->sig.data, len);
    if (id >= 0)
        return id;
    void *arr = s->x;
    id = slot_take(&arr, &s->nx, &s->capx, sizeof(struct xterm), s->freex, &s->nfreex);
    s->x = arr;
    if (id < 0)
        return id;
    struct xterm *x = &s->x[id];
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
    struct xterm *x = &s->x[id];
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
    struct xterm *x = &s->x[id];
    x->refs += d;
    int32_t v = node_val(s, x->key, node);
    if (v >= 0) {
        int32_t before = x->cnt[v];
        x->cnt[v] += d;
        x->nz += (before <= 0 && x->cnt[v] > 0) - (before > 0 && x->cnt[v] <= 0);
    }
    if (x->refs <= 0)
        xterm_drop(s, id);
}

static int ports_add(struct nports *np, const struct gs_kport *p, int d)
{
    for (int i = 0; i < np->n; i++) {
        struct portent *e = &np->e[i];
        if (e->port == p->port && e->proto == p->proto && strcmp(e->ip, p->ip) == 0) {
            e->refs += d;
            if (e->refs <= 0)
                np->e[i] = np->e[--np->n];
            return 0;
        }
    }
    if (d <= 0)
        return 0;
    if (np->n == np->cap) {
        struct portent *g = gs_grow(np->e, &np->cap, sizeof(struct portent), 4);
        if (!g)
            return GS_ENOMEM;
        np->e = g;
    }
    np->e[np->n++] = (struct portent){p->ip, p->port, p->proto, d};
    return 0;
}

/* upstream HostPortInfo.CheckConflict: 0.0.0.0 conflicts with any address on the same
 * protocol and port, any other address with itself and 0.0.0.0 */
static bool port_conflicts(const struct nports *np, const struct gs_kport *p)
{
    bool wild = strcmp(p->ip, "0.0.0.0") == 0;
    for (int i = 0; i < np->n; i++) {
        const struct portent *e = &np->e[i];
        if (e->port != p->port || e->proto != p->proto)
            continue;
        if (wild || strcmp(e->ip, "0.0.0.0") == 0 || strcmp(e->ip, p->ip) == 0)
            return true;
    }
    return false;
}

static void pod_uncount(struct gs_kstate *s, struct placed *pl, int nx, int nports)
{
    for (int i = nx - 1; i >= 0; i--)
        xterm_count(s, pl->x[i], pl->node, -1);
    for (int i = 0; i < nports; i++)
        ports_add(&s->ports[pl->node], &pl->pod->ports[i], -1);
    if (pl->cls >= 0) {
        struct pclass *k = &s->cls[pl->cls];
        nmap_add(&k->nodes, pl->node, -1);
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
            struct placed *g = gs_grow(s->pods, &s->cappods, sizeof(struct placed), 64);
            if (!g)
                return GS_ENOMEM;
            s->pods = g;
        }
        h = s->npodslots++;
        memset(&s->pods[h], 0, sizeof(s->pods[h]));
    }
    struct placed *pl = &s->pods[h];
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
    if (nmap_add(&s->cls[cls].nodes, node, 1)) {
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
    } groups[] = {{p->anti, p->nanti, X_REQ_ANTI, 1},
                  {p->aff, p->naff, X_REQ_AFF, 1},
                  {p->paff, p->npaff, X_PREF_AFF, 1},
                  {p->panti, p->npanti, X_PREF_ANTI, -1}};
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        for (uint32_t i = 0; i < groups[g].n; i++) {
            const struct gs_kaff_term *t = &groups[g].t[i];
            int32_t w = groups[g].kind == X_REQ_ANTI  ? 0
                        : groups[g].kind == X_REQ_AFF ? GS_KHARD_AFFINITY_WEIGHT
                                                      : groups[g].sign * t->weight;
            int id = xterm_of(s, c, groups[g].kind, w, t);
            if (id < 0)
                goto fail;
            pl->x[pl->nx++] = id;
            xterm_count(s, id, node, 1);
        }
    }
    for (; nports < (int)p->nports; nports++)
        if (ports_add(&s->ports[node], &p->ports[nports], 1))
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
    struct placed *pl = &s->pods[h];
    pod_uncount(s, pl, pl->nx, (int)pl->pod->nports);
    free(pl->x);
    memset(pl, 0, sizeof(*pl));
    pl->node = -1;
    s->npods--;
    /* a free list that cannot grow leaks the slot, nothing else */
    push_i32(&s->freepods, &s->nfreepods, &s->capfreepods, h);
    return 0;
}

/* ---- per-pod precomputation ---- */

/* counts per value id of one topology key */
struct kcnt {
    int key;
    int32_t *cnt;
    int32_t cap;
    int32_t nz;
};

struct kspread {
    const struct gs_kspread *c;
    int key;
    bool self;
    int32_t *cnt; /* per value: matching pods, -1 when the value is not an eligible domain */
    int32_t cap;
    int32_t ndomains;
    int32_t min;
};

#define GS_KELIG_CACHE 16

struct elig {
    uint32_t stamp; /* the state's; 0: empty slot */
    int32_t nnodes;
    char *sig;
    size_t siglen;
    uint8_t *bits;
};

struct gs_kprep {
    const struct gs_kpod *pod;
    bool oom;
    bool trivial;
    int32_t nnodes;
    /* nodes where the pod's node selector and required affinity hold: NULL when not
     * computed (or every node); bitmaps cached per (state, selector) across pods */
    const uint8_t *eligible;
    struct elig cache[GS_KELIG_CACHE];
    int next_cache;
    struct gs_buf esig;
    /* inter-pod affinity */
    int *aff_k, *anti_k; /* per term: index in aff / anti */
    int cap_aff_k, cap_anti_k;
    struct kcnt *aff, *anti;
    int naff, nanti, cap_aff, cap_anti;
    bool aff_any;  /* some (key, value) has a count: upstream len(affinityCounts) > 0 */
    bool aff_self; /* the pod matches all its own required affinity terms */
    int32_t *xanti;
    int nxanti, cap_xanti;
    /* topology spread, DoNotSchedule */
    struct kspread *spread;
    int nspread, cap_spread;
    /* scoring scratch */
    int32_t *xscore;
    int nxscore, cap_xscore;
    struct kcnt *ts; /* inter-pod topology scores (int32 would overflow: int64 below) */
    int64_t **tsv;
    int nts, cap_ts, cap_tsv;
    int32_t *tmp;
    int32_t cap_tmp;
    int32_t *cls; /* scratch: matching classes */
    int cap_cls;
    int64_t *raw;
    int32_t cap_raw;
};

int gs_kprep_new(struct gs_kprep **out)
{
    *out = calloc(1, sizeof(struct gs_kprep));
    if (!*out)
        return GS_ENOMEM;
    gs_buf_init(&(*out)->esig, 0);
    return 0;
}

void gs_kprep_free(struct gs_kprep *p)
{
    if (!p)
        return;
    for (int i = 0; i < GS_KELIG_CACHE; i++) {
        free(p->cache[i].sig);
        free(p->cache[i].bits);
    }
    gs_buf_release(&p->esig);
    free(p->aff_k);
    free(p->anti_k);
    for (int i = 0; i < p->cap_aff; i++)
        free(p->aff[i].cnt);
    for (int i = 0; i < p->cap_anti; i++)
        free(p->anti[i].cnt);
    free(p->aff);
    free(p->anti);
    free(p->xanti);
    for (int i = 0; i < p->cap_spread; i++)
        free(p->spread[i].cnt);
    free(p->spread);
    free(p->xscore);
    for (int i = 0; i < p->cap_tsv; i++)
        free(p->tsv[i]);
    free(p->tsv);
    free(p->ts);
    free(p->tmp);
    free(p->cls);
    free(p->raw);
    free(p);
}

/* a zeroed array of at least n int32 in *v */
static int zero_i32(int32_t **v, int32_t *cap, int32_t n)
{
    if (n < 1)
        n = 1;
    if (*cap < n) {
        int32_t *g = realloc(*v, (size_t)n * sizeof(int32_t));
        if (!g)
            return GS_ENOMEM;
        *v = g;
        *cap = n;
    }
    memset(*v, 0, (size_t)n * sizeof(int32_t));
    return 0;
}

static int grow_to(void **v, int *cap, size_t elem, int n)
{
    if (*cap >= n)
        return 0;
    int c = *cap ? *cap : 4;
    while (c < n)
        c *= 2;
    void *g = realloc(*v, (size_t)c * elem);
    if (!g)
        return GS_ENOMEM;
    memset((char *)g + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *v = g;
    *cap = c;
    return 0;
}

/* The kcnt of key in list (added, zeroed, when new). Returns its index or GS_ENOMEM. */
static int kcnt_for(struct kcnt **list, int *n, int *cap, const struct gs_kstate *s, int key)
{
    for (int i = 0; i < *n; i++)
        if ((*list)[i].key == key)
            return i;
    if (grow_to((void **)list, cap, sizeof(struct kcnt), *n + 1))
        return GS_ENOMEM;
    struct kcnt *k = &(*list)[*n];
    if (zero_i32(&k->cnt, &k->cap, s->keys[key].nvals))
        return GS_ENOMEM;
    k->key = key;
    k->nz = 0;
    return (*n)++;
}

static void kcnt_add(struct kcnt *k, int32_t v, int32_t d)
{
    int32_t before = k->cnt[v];
    k->cnt[v] += d;
    k->nz += (before <= 0 && k->cnt[v] > 0) - (before > 0 && k->cnt[v] <= 0);
}

/* The live classes a term matches (namespace and labels) into p->cls: the namespaces it
 * lists, or every class when it has a namespace selector. Returns the count or GS_ENOMEM. */
static int term_classes(struct gs_kprep *p, const struct gs_kstate *s, const struct gs_kaff_term *t)
{
    int n = 0;
    if (!t->ns_sel.nothing) {
        for (int ci = 0; ci < s->ncls; ci++) {
            const struct pclass *k = &s->cls[ci];
            if (!k->live || !ns_matches(t, k->nsname) || !gs_ksel_matches(&t->sel, &k->labels))
                continue;
            if (grow_to((void **)&p->cls, &p->cap_cls, sizeof(int32_t), n + 1))
                return GS_ENOMEM;
            p->cls[n++] = ci;
        }
        return n;
    }
    for (uint32_t i = 0; i < t->nns; i++) {
        int32_t nid = gs_strmap_get(&s->nsmap, t->ns[i], (uint32_t)strlen(t->ns[i]));
        if (nid < 0)
            continue;
        const struct nsent *e = &s->ns[nid];
        for (int ci = 0; ci < e->ncls; ci++) {
            if (!gs_ksel_matches(&t->sel, &s->cls[e->cls[ci]].labels))
                continue;
            if (grow_to((void **)&p->cls, &p->cap_cls, sizeof(int32_t), n + 1))
                return GS_ENOMEM;
            p->cls[n++] = e->cls[ci];
        }
    }
    return n;
}

static bool pod_matches_class_all(const struct gs_kaff_term *t, uint32_t n, const struct pclass *k)
{
    for (uint32_t i = 0; i < n; i++)
        if (!ns_matches(&t[i], k->nsname) || !gs_ksel_matches(&t[i].sel, &k->labels))
            return false;
    return true;
}

static int prep_interpod(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c)
{
    const struct gs_kpod *pod = p->pod;
    /* placed pods' required anti-affinity terms that match the pod */
    for (int i = 0; i < s->nxlist[X_REQ_ANTI]; i++) {
        int32_t id = s->xlist[X_REQ_ANTI][i];
        if (s->x[id].nz > 0 && gs_kaff_term_matches(&s->x[id].t, pod)) {
            if (grow_to((void **)&p->xanti, &p->cap_xanti, sizeof(int32_t), p->nxanti + 1))
                return GS_ENOMEM;
            p->xanti[p->nxanti++] = id;
        }
    }
    /* the pod's required affinity: placed pods matching all its terms */
    if (pod->naff) {
        if (grow_to((void **)&p->aff_k, &p->cap_aff_k, sizeof(int), (int)pod->naff))
            return GS_ENOMEM;
        for (uint32_t i = 0; i < pod->naff; i++) {
            int key = intern_key(s, c, pod->aff[i].topology_key);
            if (key < 0)
                return key;
            int k = kcnt_for(&p->aff, &p->naff, &p->cap_aff, s, key);
            if (k < 0)
                return k;
            p->aff_k[i] = k;
        }
        /* candidates: the classes of the first term; each must match every term */
        int ncls = term_classes(p, s, &pod->aff[0]);
        if (ncls < 0)
            return ncls;
        for (int ci = 0; ci < ncls; ci++) {
            const struct pclass *k = &s->cls[p->cls[ci]];
            if (!pod_matches_class_all(pod->aff, pod->naff, k))
                continue;
            int32_t n, cnt;
            for (uint32_t e = 0; nmap_next(&k->nodes, &e, &n, &cnt);) {
                for (uint32_t i = 0; i < pod->naff; i++) {
                    struct kcnt *kc = &p->aff[p->aff_k[i]];
                    int32_t v = node_val(s, kc->key, n);
                    if (v >= 0)
                        kcnt_add(kc, v, cnt);
                }
            }
        }
        for (int i = 0; i < p->naff; i++)
            p->aff_any |= p->aff[i].nz > 0;
        p->aff_self = matches_all(pod->aff, pod->naff, pod);
    }
    /* the pod's required anti-affinity: placed pods matching any term */
    if (pod->nanti) {
        if (grow_to((void **)&p->anti_k, &p->cap_anti_k, sizeof(int), (int)pod->nanti))
            return GS_ENOMEM;
        for (uint32_t i = 0; i < pod->nanti; i++) {
            const struct gs_kaff_term *t = &pod->anti[i];
            int key = intern_key(s, c, t->topology_key);
            if (key < 0)
                return key;
            int ki = kcnt_for(&p->anti, &p->nanti, &p->cap_anti, s, key);
            if (ki < 0)
                return ki;
            p->anti_k[i] = ki;
            struct kcnt *kc = &p->anti[ki];
            int ncls = term_classes(p, s, t);
            if (ncls < 0)
                return ncls;
            for (int ci = 0; ci < ncls; ci++) {
                const struct pclass *k = &s->cls[p->cls[ci]];
                int32_t n, cnt;
                for (uint32_t e = 0; nmap_next(&k->nodes, &e, &n, &cnt);) {
                    int32_t v = node_val(s, key, n);
                    if (v >= 0)
                        kcnt_add(kc, v, cnt);
                }
            }
        }
    }
    return 0;
}

/* Nodes where the pod's nodeSelector and required node affinity hold, as p->eligible: from
 * the cache when a pod with the same selector and affinity was prepared on this state (the
 * replicas of a Deployment), else computed over every node. Returns 1, 0 (no selector:
 * every node) or GS_ENOMEM. */
static int prep_eligible(struct gs_kprep *p, const struct gs_kstate *s, const struct gs_cluster *c)
{
    const struct gs_kpod *pod = p->pod;
    p->eligible = NULL;
    if (!pod->nnode_selector && !pod->has_required)
        return 0;
    struct gs_buf *b = &p->esig;
    gs_buf_reset(b);
    sig_u32(b, pod->nnode_selector);
    for (uint32_t i = 0; i < pod->nnode_selector; i++) {
        sig_str(b, pod->node_selector[i].key);
        sig_str(b, pod->node_selector[i].val);
    }
    sig_u32(b, pod->has_required);
    sig_u32(b, pod->nrequired);
    for (uint32_t i = 0; i < pod->nrequired; i++) {
        struct gs_ksel e = {false, pod->required[i].nexprs, pod->required[i].exprs};
        struct gs_ksel f = {false, pod->required[i].nfields, pod->required[i].fields};
        sig_sel(b, &e);
        sig_sel(b, &f);
    }
    if (!b->data)
        return GS_ENOMEM;
    for (int i = 0; i < GS_KELIG_CACHE; i++) {
        struct elig *e = &p->cache[i];
        if (e->stamp == s->stamp && e->nnodes == s->nnodes && e->siglen == b->len &&
            memcmp(e->sig, b->data, b->len) == 0) {
            p->eligible = e->bits;
            return 1;
        }
    }
    struct elig *e = &p->cache[p->next_cache];
    p->next_cache = (p->next_cache + 1) % GS_KELIG_CACHE;
    free(e->sig);
    free(e->bits);
    memset(e, 0, sizeof(*e));
    e->sig = malloc(b->len);
    e->bits = malloc(s->nnodes ? (size_t)s->nnodes : 1);
    if (!e->sig || !e->bits) {
        free(e->sig);
        free(e->bits);
        memset(e, 0, sizeof(*e));
        return GS_ENOMEM;
    }
    memcpy(e->sig, b->data, b->len);
    e->siglen = b->len;
    for (int32_t n = 0; n < s->nnodes; n++)
        e->bits[n] = n < c->nnodes && gs_kpod_node_matches(pod, &c->nodes[n]);
    e->stamp = s->stamp;
    e->nnodes = s->nnodes;
    p->eligible = e->bits;
    return 1;
}

/* Does the node count for constraint sc (upstream matchNodeInclusionPolicies)? */
static bool node_included(const struct gs_kprep *p, bool have_elig, const struct gs_kspread *sc,
                          int n, gs_ktolerates_fn tol, void *tol_ctx)
{
    if (sc->affinity_honor && have_elig && !p->eligible[n])
        return false;
    if (sc->taints_honor && tol && !tol(tol_ctx, n))
        return false;
    return true;
}

static bool spread_counts(const struct gs_ksel *sel)
{
    return !sel->nothing && sel->nreqs > 0; /* upstream: an empty selector counts nothing */
}

static int prep_spread(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c,
                       bool have_elig, gs_ktolerates_fn tol, void *tol_ctx)
{
    const struct gs_kpod *pod = p->pod;
    int n = 0;
    for (uint32_t i = 0; i < pod->nspread; i++)
        n += pod->spread[i].do_not_schedule;
    if (!n)
        return 0;
    if (grow_to((void **)&p->spread, &p->cap_spread, sizeof(struct kspread), n))
        return GS_ENOMEM;
    for (uint32_t i = 0; i < pod->nspread; i++) {
        const struct gs_kspread *sc = &pod->spread[i];
        if (!sc->do_not_schedule)
            continue;
        int key = intern_key(s, c, sc->topology_key);
        if (key < 0)
            return key;
        struct kspread *ks = &p->spread[p->nspread];
        if (zero_i32(&ks->cnt, &ks->cap, s->keys[key].nvals))
            return GS_ENOMEM;
        ks->c = sc;
        ks->key = key;
        ks->self = gs_ksel_matches(&sc->sel, &pod->labels);
        ks->ndomains = 0;
        ks->min = INT32_MAX;
        p->nspread++;
        for (int32_t v = 0; v < s->keys[key].nvals; v++)
            ks->cnt[v] = -1;
    }
    /* eligible domains: nodes with every constraint's key, by each inclusion policy */
    for (int32_t nd = 0; nd < s->nnodes; nd++) {
        bool all = true;
        for (int i = 0; i < p->nspread && all; i++)
            all = node_val(s, p->spread[i].key, nd) >= 0;
        if (!all)
            continue;
        for (int i = 0; i < p->nspread; i++) {
            struct kspread *ks = &p->spread[i];
            if (!node_included(p, have_elig, ks->c, nd, tol, tol_ctx))
                continue;
            int32_t v = node_val(s, ks->key, nd);
            if (ks->cnt[v] < 0) {
                ks->cnt[v] = 0;
                ks->ndomains++;
            }
        }
    }
    /* matching pods (same namespace, not terminating) on eligible nodes */
    int32_t nid =
        gs_strmap_get(&s->nsmap, pod->ns ? pod->ns : "", (uint32_t)strlen(pod->ns ? pod->ns : ""));
    for (int i = 0; i < p->nspread && nid >= 0; i++) {
        struct kspread *ks = &p->spread[i];
        if (!spread_counts(&ks->c->sel))
            continue;
        const struct nsent *e = &s->ns[nid];
        for (int ci = 0; ci < e->ncls; ci++) {
            const struct pclass *k = &s->cls[e->cls[ci]];
            if (k->terminating || !gs_ksel_matches(&ks->c->sel, &k->labels))
                continue;
            int32_t nd, cnt;
            for (uint32_t j = 0; nmap_next(&k->nodes, &j, &nd, &cnt);) {
                int32_t v = node_val(s, ks->key, nd);
                if (v < 0 || ks->cnt[v] < 0)
                    continue;
                /* the node itself must be eligible: every key, inclusion policy */
                bool all = true;
                for (int q = 0; q < p->nspread && all; q++)
                    all = node_val(s, p->spread[q].key, nd) >= 0;
                if (all && node_included(p, have_elig, ks->c, nd, tol, tol_ctx))
                    ks->cnt[v] += cnt;
            }
        }
    }
    for (int i = 0; i < p->nspread; i++) {
        struct kspread *ks = &p->spread[i];
        for (int32_t v = 0; v < s->keys[ks->key].nvals; v++)
            if (ks->cnt[v] >= 0 && ks->cnt[v] < ks->min)
                ks->min = ks->cnt[v];
    }
    return 0;
}

int gs_kprep_compute(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c,
                     const struct gs_kpod *pod, gs_ktolerates_fn tol, void *tol_ctx)
{
    p->pod = pod;
    p->oom = true;
    p->nnodes = s->nnodes;
    p->naff = p->nanti = p->nxanti = p->nspread = 0;
    p->aff_any = p->aff_self = false;
    int ret = GS_ENOMEM;
    /* the eligible nodes: for spreading, and for the node affinity filter unless the pod names
     * nodes by field (a DaemonSet's pods: a different selector each, never cached) */
    int elig = 0;
    bool need_elig = pod->nspread > 0;
    bool by_field = false;
    for (uint32_t i = 0; i < pod->nrequired; i++)
        by_field |= pod->required[i].nfields > 0;
    p->eligible = NULL;
    if ((need_elig || !by_field) && (elig = prep_eligible(p, s, c)) < 0)
        goto out;
    if (prep_interpod(p, s, c) || prep_spread(p, s, c, elig > 0, tol, tol_ctx))
        goto out;
    p->trivial = !pod->node_name && !pod->nnode_selector && !pod->has_required && !pod->nports &&
                 !p->nspread && !pod->naff && !pod->nanti && !p->nxanti;
    p->oom = false;
    ret = 0;
out:
    if (ret)
        p->trivial = false;
    return ret;
}

bool gs_kprep_trivial(const struct gs_kprep *p)
{
    return p->trivial;
}

static const char *const reasons[] = {
    [GS_KFIT] = "",
    [GS_KNO_NODE_NAME] = "node(s) didn't match the requested node name",
    [GS_KNO_NODE_AFFINITY] = "node(s) didn't match Pod's node affinity/selector",
    [GS_KNO_PORTS] = "node(s) didn't have free ports for the requested pod ports",
    [GS_KNO_SPREAD_LABEL] =
        "node(s) didn't match pod topology spread constraints (missing required label)",
    [GS_KNO_SPREAD] = "node(s) didn't match pod topology spread constraints",
    [GS_KNO_AFFINITY] = "node(s) didn't match pod affinity rules",
    [GS_KNO_ANTI_AFFINITY] = "node(s) didn't match pod anti-affinity rules",
    [GS_KNO_EXISTING_ANTI] = "node(s) didn't satisfy existing pods anti-affinity rules",
};

const char *gs_kverdict_reason(enum gs_kverdict v)
{
    if ((unsigned)v >= sizeof(reasons) / sizeof(reasons[0]))
        return "unknown";
    return reasons[v];
}

bool gs_kverdict_unresolvable(enum gs_kverdict v)
{
    return v == GS_KNO_NODE_NAME || v == GS_KNO_NODE_AFFINITY || v == GS_KNO_SPREAD_LABEL ||
           v == GS_KNO_AFFINITY;
}

static bool satisfy_affinity(const struct gs_kprep *p, const struct gs_kstate *s, int node)
{
    const struct gs_kpod *pod = p->pod;
    bool exist = true;
    for (uint32_t i = 0; i < pod->naff; i++) {
        const struct kcnt *kc = &p->aff[p->aff_k[i]];
        int32_t v = node_val(s, kc->key, node);
        if (v < 0)
            return false; /* every topology key must be on the node */
        if (kc->cnt[v] <= 0)
            exist = false;
    }
    if (exist)
        return true;
    /* the first of a series of pods with affinity to themselves */
    return !p->aff_any && p->aff_self;
}

static bool satisfy_anti(const struct gs_kprep *p, const struct gs_kstate *s, int node)
{
    const struct gs_kpod *pod = p->pod;
    for (uint32_t i = 0; i < pod->nanti; i++) {
        const struct kcnt *kc = &p->anti[p->anti_k[i]];
        if (!kc->nz)
            continue;
        int32_t v = node_val(s, kc->key, node);
        if (v >= 0 && kc->cnt[v] > 0)
            return false;
    }
    return true;
}

static bool satisfy_existing_anti(const struct gs_kprep *p, const struct gs_kstate *s, int node)
{
    for (int i = 0; i < p->nxanti; i++) {
        const struct xterm *x = &s->x[p->xanti[i]];
        int32_t v = node_val(s, x->key, node);
        if (v >= 0 && x->cnt[v] > 0)
            return false;
    }
    return true;
}

enum gs_kverdict gs_kprep_filter(const struct gs_kprep *p, const struct gs_kstate *s,
                                 const struct gs_cluster *c, int node)
{
    const struct gs_kpod *pod = p->pod;
    if (p->oom || node < 0 || node >= s->nnodes || node >= c->nnodes)
        return GS_KNO_NODE_NAME;
    if (p->trivial)
        return GS_KFIT;
    const struct gs_node *nd = &c->nodes[node];
    if (pod->node_name && strcmp(pod->node_name, nd->name) != 0)
        return GS_KNO_NODE_NAME;
    if (p->eligible ? !p->eligible[node] : !gs_kpod_node_matches(pod, nd))
        return GS_KNO_NODE_AFFINITY;
    for (uint32_t i = 0; i < pod->nports; i++)
        if (port_conflicts(&s->ports[node], &pod->ports[i]))
            return GS_KNO_PORTS;
    for (int i = 0; i < p->nspread; i++) {
        const struct kspread *ks = &p->spread[i];
        int32_t v = node_val(s, ks->key, node);
        if (v < 0)
            return GS_KNO_SPREAD_LABEL;
        int32_t min = ks->ndomains < ks->c->min_domains ? 0 : ks->min;
        int64_t match = ks->cnt[v] > 0 ? ks->cnt[v] : 0;
        if (match + ks->self - (int64_t)min > ks->c->max_skew)
            return GS_KNO_SPREAD;
    }
    if (!satisfy_affinity(p, s, node))
        return GS_KNO_AFFINITY;
    if (!satisfy_anti(p, s, node))
        return GS_KNO_ANTI_AFFINITY;
    if (!satisfy_existing_anti(p, s, node))
        return GS_KNO_EXISTING_ANTI;
    return GS_KFIT;
}

bool gs_kstate_filter(const struct gs_kprep *p, const struct gs_kstate *s,
                      const struct gs_cluster *c, int node, char *why, size_t n)
{
    enum gs_kverdict v = gs_kprep_filter(p, s, c, node);
    if (why && n)
        snprintf(why, n, "%s", gs_kverdict_reason(v));
    return v == GS_KFIT;
}

/* ---- scores ---- */

int64_t gs_kscore_total(const struct gs_kscore *s)
{
    return GS_KWEIGHT_NODE_AFFINITY * s->node_affinity + GS_KWEIGHT_INTER_POD * s->inter_pod +
           GS_KWEIGHT_SPREAD * s->spread;
}

/* upstream helper.DefaultNormalizeScore(MaxNodeScore, reverse false) */
static void normalize_max(int64_t *raw, int32_t n)
{
    int64_t max = 0;
    for (int32_t i = 0; i < n; i++)
        if (raw[i] > max)
            max = raw[i];
    if (max == 0)
        return;
    for (int32_t i = 0; i < n; i++)
        raw[i] = GS_KMAX_SCORE * raw[i] / max;
}

static int score_node_affinity(struct gs_kprep *p, const struct gs_cluster *c, const int32_t *nodes,
                               int32_t n, struct gs_kscore *out)
{
    const struct gs_kpod *pod = p->pod;
    if (!pod->npreferred)
        return 0; /* upstream skips the plugin: every score 0 */
    for (int32_t i = 0; i < n; i++) {
        int64_t sum = 0;
        for (uint32_t t = 0; t < pod->npreferred; t++)
            if (pod->preferred[t].weight != 0 &&
                gs_knode_term_matches(&pod->preferred[t].term, &c->nodes[nodes[i]]))
                sum += pod->preferred[t].weight;
        p->raw[i] = sum;
    }
    normalize_max(p->raw, n);
    for (int32_t i = 0; i < n; i++)
        out[i].node_affinity = p->raw[i];
    return 0;
}

/* the int64 score array of key in the prep's topology scores (zeroed when new) */
static int64_t *ts_for(struct gs_kprep *p, const struct gs_kstate *s, int key)
{
    for (int i = 0; i < p->nts; i++)
        if (p->ts[i].key == key)
            return p->tsv[i];
    if (grow_to((void **)&p->ts, &p->cap_ts, sizeof(struct kcnt), p->nts + 1) ||
        grow_to((void **)&p->tsv, &p->cap_tsv, sizeof(int64_t *), p->nts + 1))
        return NULL;
    int32_t nv = s->keys[key].nvals ? s->keys[key].nvals : 1;
    int64_t *v = realloc(p->tsv[p->nts], (size_t)nv * sizeof(int64_t));
    if (!v)
        return NULL;
    memset(v, 0, (size_t)nv * sizeof(int64_t));
    p->tsv[p->nts] = v;
    p->ts[p->nts].key = key;
    p->nts++;
    return v;
}

static int score_inter_pod(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c,
                           const int32_t *nodes, int32_t n, struct gs_kscore *out)
{
    const struct gs_kpod *pod = p->pod;
    bool touched = false;
    p->nts = 0;
    /* the pod's preferred terms against placed pods */
    const struct gs_kaff_term *lists[2] = {pod->paff, pod->panti};
    uint32_t counts[2] = {pod->npaff, pod->npanti};
    for (int l = 0; l < 2; l++) {
        for (uint32_t i = 0; i < counts[l]; i++) {
            const struct gs_kaff_term *t = &lists[l][i];
            if (t->weight == 0)
                continue;
            int key = intern_key(s, c, t->topology_key);
            if (key < 0)
                return key;
            int64_t *ts = ts_for(p, s, key);
            if (!ts)
                return GS_ENOMEM;
            int64_t w = l == 0 ? t->weight : -(int64_t)t->weight;
            int ncls = term_classes(p, s, t);
            if (ncls < 0)
                return ncls;
            for (int ci = 0; ci < ncls; ci++) {
                const struct pclass *k = &s->cls[p->cls[ci]];
                int32_t nd, cnt;
                for (uint32_t e = 0; nmap_next(&k->nodes, &e, &nd, &cnt);) {
                    if (c->nodes[nd].labels.n == 0)
                        continue; /* upstream skips a node without labels */
                    int32_t v = node_val(s, key, nd);
                    if (v >= 0) {
                        ts[v] += w * cnt;
                        touched = true;
                    }
                }
            }
        }
    }
    /* placed pods' required affinity (hard weight) and preferred terms against the pod */
    static const int kinds[3] = {X_REQ_AFF, X_PREF_AFF, X_PREF_ANTI};
    for (int q = 0; q < 3; q++) {
        int kind = kinds[q];
        for (int i = 0; i < s->nxlist[kind]; i++) {
            const struct xterm *x = &s->x[s->xlist[kind][i]];
            if (x->nz == 0 || x->weight == 0 || !gs_kaff_term_matches(&x->t, pod))
                continue;
            int64_t *ts = ts_for(p, s, x->key);
            if (!ts)
                return GS_ENOMEM;
            for (int32_t v = 0; v < s->keys[x->key].nvals; v++)
                ts[v] += (int64_t)x->weight * x->cnt[v];
            touched = true;
        }
    }
    if (!touched)
        return 0; /* no term matched on a labelled node: every score stays 0 */
    for (int32_t i = 0; i < n; i++) {
        int64_t sum = 0;
        for (int k = 0; k < p->nts; k++) {
            int32_t v = node_val(s, p->ts[k].key, nodes[i]);
            if (v >= 0)
                sum += p->tsv[k][v];
        }
        p->raw[i] = sum;
    }
    if (n > 0) {
        int64_t min = INT64_MAX, max = INT64_MIN;
        for (int32_t i = 0; i < n; i++) {
            if (p->raw[i] > max)
                max = p->raw[i];
            if (p->raw[i] < min)
                min = p->raw[i];
        }
        int64_t diff = max - min;
        for (int32_t i = 0; i < n; i++)
            p->raw[i] =
                diff > 0
                    ? (int64_t)((double)GS_KMAX_SCORE * ((double)(p->raw[i] - min) / (double)diff))
                    : 0;
    }
    for (int32_t i = 0; i < n; i++)
        out[i].inter_pod = p->raw[i];
    return 0;
}

static int score_spread(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c,
                        const int32_t *nodes, int32_t n, struct gs_kscore *out,
                        gs_ktolerates_fn tol, void *tol_ctx)
{
    const struct gs_kpod *pod = p->pod;
    int keys[64];
    const struct gs_kspread *cs[64];
    int nc = 0;
    for (uint32_t i = 0; i < pod->nspread && nc < 64; i++) {
        if (pod->spread[i].do_not_schedule)
            continue;
        int key = intern_key(s, c, pod->spread[i].topology_key);
        if (key < 0)
            return key;
        cs[nc] = &pod->spread[i];
        keys[nc++] = key;
    }
    for (int32_t i = 0; i < n; i++)
        out[i].spread = 0;
    if (!nc)
        return 0;
    int r = prep_eligible(p, s, c);
    if (r < 0)
        return r;
    bool have_elig = r > 0;
    /* ignored nodes: feasible nodes lacking a constraint's key (raw -1 marks them) */
    int32_t ignored = 0;
    for (int32_t i = 0; i < n; i++) {
        p->raw[i] = 0;
        for (int q = 0; q < nc; q++)
            if (node_val(s, keys[q], nodes[i]) < 0) {
                p->raw[i] = -1;
                ignored++;
                break;
            }
    }
    double score_w[64];
    /* per constraint: counts per value (or per node for the hostname key) */
    int32_t nid =
        gs_strmap_get(&s->nsmap, pod->ns ? pod->ns : "", (uint32_t)strlen(pod->ns ? pod->ns : ""));
    double *acc = calloc((size_t)(n ? n : 1), sizeof(double));
    if (!acc)
        return GS_ENOMEM;
    int ret = GS_ENOMEM;
    for (int q = 0; q < nc; q++) {
        const struct gs_kspread *sc = cs[q];
        bool host = s->keys[keys[q]].hostname;
        int32_t size = 0;
        int32_t len = host ? s->nnodes : s->keys[keys[q]].nvals;
        if (zero_i32(&p->tmp, &p->cap_tmp, len))
            goto out;
        int32_t *cnt = p->tmp;
        if (!host) {
            /* domains of the non-ignored feasible nodes; -1 marks the others */
            for (int32_t v = 0; v < len; v++)
                cnt[v] = -1;
            for (int32_t i = 0; i < n; i++) {
                if (p->raw[i] < 0)
                    continue;
                int32_t v = node_val(s, keys[q], nodes[i]);
                if (cnt[v] < 0) {
                    cnt[v] = 0;
                    size++;
                }
            }
        } else {
            size = n - ignored;
        }
        score_w[q] = log((double)size + 2);
        if (nid >= 0 && spread_counts(&sc->sel)) {
            const struct nsent *e = &s->ns[nid];
            for (int ci = 0; ci < e->ncls; ci++) {
                const struct pclass *k = &s->cls[e->cls[ci]];
                if (k->terminating || !gs_ksel_matches(&sc->sel, &k->labels))
                    continue;
                int32_t nd, m;
                for (uint32_t j = 0; nmap_next(&k->nodes, &j, &nd, &m);) {
                    if (host) {
                        cnt[nd] += m; /* counted on the node itself in Score */
                        continue;
                    }
                    bool all = true;
                    for (int q2 = 0; q2 < nc && all; q2++)
                        all = node_val(s, keys[q2], nd) >= 0;
                    if (!all || !node_included(p, have_elig, sc, nd, tol, tol_ctx))
                        continue;
                    int32_t v = node_val(s, keys[q], nd);
                    if (cnt[v] >= 0)
                        cnt[v] += m;
                }
            }
        }
        for (int32_t i = 0; i < n; i++) {
            if (p->raw[i] < 0)
                continue;
            int64_t m = host ? cnt[nodes[i]] : cnt[node_val(s, keys[q], nodes[i])];
            if (m < 0)
                m = 0;
            acc[i] += (double)m * score_w[q] + (double)(sc->max_skew - 1);
        }
    }
    int64_t min = INT64_MAX, max = 0;
    for (int32_t i = 0; i < n; i++) {
        if (p->raw[i] < 0)
            continue;
        p->raw[i] = (int64_t)llround(acc[i]);
        if (p->raw[i] < min)
            min = p->raw[i];
        if (p->raw[i] > max)
            max = p->raw[i];
    }
    for (int32_t i = 0; i < n; i++) {
        if (p->raw[i] < 0)
            out[i].spread = 0;
        else if (max == 0)
            out[i].spread = GS_KMAX_SCORE;
        else
            out[i].spread = GS_KMAX_SCORE * (max + min - p->raw[i]) / max;
    }
    ret = 0;
out:
    free(acc);
    return ret;
}

int gs_kprep_score(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c,
                   const int32_t *nodes, int32_t n, struct gs_kscore *out, gs_ktolerates_fn tol,
                   void *tol_ctx)
{
    if (p->oom)
        return GS_ENOMEM;
    if (n <= 0)
        return 0;
    if (p->cap_raw < n) {
        int64_t *g = realloc(p->raw, (size_t)n * sizeof(int64_t));
        if (!g)
            return GS_ENOMEM;
        p->raw = g;
        p->cap_raw = n;
    }
    memset(out, 0, (size_t)n * sizeof(*out));
    int r = score_node_affinity(p, c, nodes, n, out);
    if (!r)
        r = score_inter_pod(p, s, c, nodes, n, out);
    if (!r)
        r = score_spread(p, s, c, nodes, n, out, tol, tol_ctx);
    return r;
}
