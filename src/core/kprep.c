/* kprep.c - the per-pod precomputation (kprep.h) against the placed pods' index (kstate.c,
 * read through kstate_internal.h), and kube-scheduler's filters and scores that read it:
 * NodeName, NodeAffinity, NodePorts (kports.c), PodTopologySpread and InterPodAffinity. The
 * predicates on single terms are kpod.c's. */
#include "kprep.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../base/hash.h"
#include "kports.h"
#include "kstate_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            const struct gs__kclass *k = &s->cls[ci];
            if (!k->live || !gs_kaff_ns_matches(t, k->nsname) ||
                !gs_ksel_matches(&t->sel, &k->labels))
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
        const struct gs__kns *e = &s->ns[nid];
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

static bool pod_matches_class_all(const struct gs_kaff_term *t, uint32_t n,
                                  const struct gs__kclass *k)
{
    for (uint32_t i = 0; i < n; i++)
        if (!gs_kaff_ns_matches(&t[i], k->nsname) || !gs_ksel_matches(&t[i].sel, &k->labels))
            return false;
    return true;
}

static bool matches_all(const struct gs_kaff_term *t, uint32_t n, const struct gs_kpod *target)
{
    for (uint32_t i = 0; i < n; i++)
        if (!gs_kaff_term_matches(&t[i], target))
            return false;
    return true;
}

static int prep_interpod(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c)
{
    const struct gs_kpod *pod = p->pod;
    /* placed pods' required anti-affinity terms that match the pod */
    for (int i = 0; i < s->nxlist[GS__KX_REQ_ANTI]; i++) {
        int32_t id = s->xlist[GS__KX_REQ_ANTI][i];
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
            int key = gs__kstate_key(s, c, pod->aff[i].topology_key);
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
            const struct gs__kclass *k = &s->cls[p->cls[ci]];
            if (!pod_matches_class_all(pod->aff, pod->naff, k))
                continue;
            int32_t n, cnt;
            for (uint32_t e = 0; gs__knodes_next(&k->nodes, &e, &n, &cnt);) {
                for (uint32_t i = 0; i < pod->naff; i++) {
                    struct kcnt *kc = &p->aff[p->aff_k[i]];
                    int32_t v = gs__kstate_val(s, kc->key, n);
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
            int key = gs__kstate_key(s, c, t->topology_key);
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
                const struct gs__kclass *k = &s->cls[p->cls[ci]];
                int32_t n, cnt;
                for (uint32_t e = 0; gs__knodes_next(&k->nodes, &e, &n, &cnt);) {
                    int32_t v = gs__kstate_val(s, key, n);
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
    gs__ksig_u32(b, pod->nnode_selector);
    for (uint32_t i = 0; i < pod->nnode_selector; i++) {
        gs__ksig_str(b, pod->node_selector[i].key);
        gs__ksig_str(b, pod->node_selector[i].val);
    }
    gs__ksig_u32(b, pod->has_required);
    gs__ksig_u32(b, pod->nrequired);
    for (uint32_t i = 0; i < pod->nrequired; i++) {
        struct gs_ksel e = {false, pod->required[i].nexprs, pod->required[i].exprs};
        struct gs_ksel f = {false, pod->required[i].nfields, pod->required[i].fields};
        gs__ksig_sel(b, &e);
        gs__ksig_sel(b, &f);
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
        int key = gs__kstate_key(s, c, sc->topology_key);
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
            all = gs__kstate_val(s, p->spread[i].key, nd) >= 0;
        if (!all)
            continue;
        for (int i = 0; i < p->nspread; i++) {
            struct kspread *ks = &p->spread[i];
            if (!node_included(p, have_elig, ks->c, nd, tol, tol_ctx))
                continue;
            int32_t v = gs__kstate_val(s, ks->key, nd);
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
        const struct gs__kns *e = &s->ns[nid];
        for (int ci = 0; ci < e->ncls; ci++) {
            const struct gs__kclass *k = &s->cls[e->cls[ci]];
            if (k->terminating || !gs_ksel_matches(&ks->c->sel, &k->labels))
                continue;
            int32_t nd, cnt;
            for (uint32_t j = 0; gs__knodes_next(&k->nodes, &j, &nd, &cnt);) {
                int32_t v = gs__kstate_val(s, ks->key, nd);
                if (v < 0 || ks->cnt[v] < 0)
                    continue;
                /* the node itself must be eligible: every key, inclusion policy */
                bool all = true;
                for (int q = 0; q < p->nspread && all; q++)
                    all = gs__kstate_val(s, p->spread[q].key, nd) >= 0;
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
        int32_t v = gs__kstate_val(s, kc->key, node);
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
        int32_t v = gs__kstate_val(s, kc->key, node);
        if (v >= 0 && kc->cnt[v] > 0)
            return false;
    }
    return true;
}

static bool satisfy_existing_anti(const struct gs_kprep *p, const struct gs_kstate *s, int node)
{
    for (int i = 0; i < p->nxanti; i++) {
        const struct gs__kterm *x = &s->x[p->xanti[i]];
        int32_t v = gs__kstate_val(s, x->key, node);
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
        if (gs__kports_conflict(&s->ports[node], &pod->ports[i]))
            return GS_KNO_PORTS;
    for (int i = 0; i < p->nspread; i++) {
        const struct kspread *ks = &p->spread[i];
        int32_t v = gs__kstate_val(s, ks->key, node);
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
            int key = gs__kstate_key(s, c, t->topology_key);
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
                const struct gs__kclass *k = &s->cls[p->cls[ci]];
                int32_t nd, cnt;
                for (uint32_t e = 0; gs__knodes_next(&k->nodes, &e, &nd, &cnt);) {
                    if (c->nodes[nd].labels.n == 0)
                        continue; /* upstream skips a node without labels */
                    int32_t v = gs__kstate_val(s, key, nd);
                    if (v >= 0) {
                        ts[v] += w * cnt;
                        touched = true;
                    }
                }
            }
        }
    }
    /* placed pods' required affinity (hard weight) and preferred terms against the pod */
    static const int kinds[3] = {GS__KX_REQ_AFF, GS__KX_PREF_AFF, GS__KX_PREF_ANTI};
    for (int q = 0; q < 3; q++) {
        int kind = kinds[q];
        for (int i = 0; i < s->nxlist[kind]; i++) {
            const struct gs__kterm *x = &s->x[s->xlist[kind][i]];
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
            int32_t v = gs__kstate_val(s, p->ts[k].key, nodes[i]);
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
        int key = gs__kstate_key(s, c, pod->spread[i].topology_key);
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
            if (gs__kstate_val(s, keys[q], nodes[i]) < 0) {
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
                int32_t v = gs__kstate_val(s, keys[q], nodes[i]);
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
            const struct gs__kns *e = &s->ns[nid];
            for (int ci = 0; ci < e->ncls; ci++) {
                const struct gs__kclass *k = &s->cls[e->cls[ci]];
                if (k->terminating || !gs_ksel_matches(&sc->sel, &k->labels))
                    continue;
                int32_t nd, m;
                for (uint32_t j = 0; gs__knodes_next(&k->nodes, &j, &nd, &m);) {
                    if (host) {
                        cnt[nd] += m; /* counted on the node itself in Score */
                        continue;
                    }
                    bool all = true;
                    for (int q2 = 0; q2 < nc && all; q2++)
                        all = gs__kstate_val(s, keys[q2], nd) >= 0;
                    if (!all || !node_included(p, have_elig, sc, nd, tol, tol_ctx))
                        continue;
                    int32_t v = gs__kstate_val(s, keys[q], nd);
                    if (cnt[v] >= 0)
                        cnt[v] += m;
                }
            }
        }
        for (int32_t i = 0; i < n; i++) {
            if (p->raw[i] < 0)
                continue;
            int64_t m = host ? cnt[nodes[i]] : cnt[gs__kstate_val(s, keys[q], nodes[i])];
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
