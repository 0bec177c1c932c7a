/* topology.c - one cycle's topology (sched/topology.h): each gang's ask read from its pending
 * pods' annotations (formats/topoobj.h), the levels it is read against (its ResourceFlavor's
 * Topology, the one Topology, the flag), the NVIDIA ComputeDomains its pods' claims name
 * (formats/cdomain.h: an implicit required clique level), and core/topo.h's domains built for
 * the cycle. The cycle input (sched/cyclein.c) builds it and asks it which nodes a pod of a
 * domain may take; the cycle output (sched/cycleout.c) words its waits. */
#include "topology.h"

#include "../base/error.h"
#include "../formats/cdomain.h"
#include "../formats/topoobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRC_FLAG (-1)
#define SRC_NONE (-2)
#define SRC_CD   (-3) /* the implicit levels of a ComputeDomain: nvidia.com/gpu.clique */

struct gang {
    int8_t mode;  /* enum gs_topo_mode, GS_TOPO_ANY: asks nothing */
    int8_t level; /* in the cycle's levels */
    int src;      /* the Topology (index into po->topos), SRC_FLAG, SRC_NONE */
    char key[GS_TOPOOBJ_KEY_MAX + 1];
    char who[GS_TOPOOBJ_NAME_MAX + 24]; /* "Topology t", "--topology-levels", "ComputeDomain u" */
    char why[480];                      /* non-empty: the gang waits (blocked) */
    const char *cat;                    /* the category of why ("topology", "dra") */
    struct gs_topo_levels lv;           /* its levels */
    int cd;                             /* the ComputeDomain of its pods (index in t->cd), -1 */
};

/* A ComputeDomain some pod's claims name. */
struct cdom {
    char id[GS_CDOMAIN_ID_MAX];
    int32_t clique; /* its bound pods' clique (a domain of t->dom[cd slot]), -1: none yet */
    int32_t other;  /* a second clique its bound pods are in (they are split), -1 */
};

/* A pending pod's word from its claims. */
struct cpod {
    int32_t cd;                        /* its domain, -1 */
    char why[GS_CDOMAIN_ID_MAX + 300]; /* non-empty: it waits (a claim's config is bad) */
};

struct gs__topology {
    int ngangs;
    struct gang *g;
    int nsrc;            /* po->ntopos + 2 */
    struct gs_topo *dom; /* per Topology, then the flag's, then the clique's: the domains */
    bool *built;         /* dom[k] built (a gang reads its ask against it) */
    const struct gs_cluster *c;
    /* ComputeDomains: the domains named, and per snapshot pod its domain (NULL: none named) */
    int ncd;
    struct cdom *cd;
    int npods;
    struct cpod *pod;
};

/* The domains' slot of a gang's levels source. */
static int slot_of(const struct gs__topology *t, int src)
{
    return src == SRC_FLAG ? t->nsrc - 2 : src == SRC_CD ? t->nsrc - 1 : src;
}

static const char *mode_word(int mode)
{
    return mode == GS_TOPO_REQUIRED ? "required" : "preferred";
}

/* The first pending pod of each gang agrees with every other: g->mode and g->key, or g->why. */
static void read_asks(struct gs__topology *t, const struct gs_snapshot *sn,
                      const struct gs_tenancy *ty, const char *scheduler_name, int *first)
{
    for (int i = 0, np = gs__snapshot_npods(sn); i < np; i++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, i);
        int k = gs_tenancy_pod_gang(ty, i);
        if (k < 0 || k >= t->ngangs || p->node[0] || p->terminating ||
            strcmp(p->scheduler, scheduler_name) != 0)
            continue;
        struct gang *g = &t->g[k];
        if (g->why[0])
            continue;
        const struct gs_kube_topoask *a = &p->topo;
        if (a->error[0]) {
            snprintf(g->why, sizeof(g->why), "topology: pod %s: %s", p->name, a->error);
            continue;
        }
        if (first[k] < 0) {
            first[k] = i;
            g->mode = a->mode;
            snprintf(g->key, sizeof(g->key), "%s", a->level);
            continue;
        }
        if (g->mode != a->mode || strcmp(g->key, a->level) != 0) {
            const struct gs_kube_pod *f = gs__snapshot_pod(sn, first[k]);
            char fa[GS_TOPOOBJ_KEY_MAX + 24], pa[GS_TOPOOBJ_KEY_MAX + 24];
            snprintf(fa, sizeof(fa), g->mode ? "%s '%.120s'" : "no level", mode_word(g->mode),
                     g->key);
            snprintf(pa, sizeof(pa), a->mode ? "%s '%.120s'" : "no level", mode_word(a->mode),
                     a->level);
            snprintf(g->why, sizeof(g->why),
                     "topology: the gang's pods disagree: %s asks %s, %s asks %s; every "
                     "member must carry the same kueue.x-k8s.io/podset-*-topology annotation",
                     f->name, fa, p->name, pa);
        }
    }
}

/* Whether every nodeLabel of flavor f is in pod p's nodeSelector. */
static bool flavor_matches(const struct gs_kube_flavor *f, const struct gs_kube_pod *p)
{
    if (f->nlabels == 0 || !f->topology[0])
        return false;
    for (int l = 0; l < f->nlabels; l++) {
        bool found = false;
        for (int s = 0; s < p->req.nsel && !found; s++)
            found = strcmp(p->req.sel[s].key, f->key[l]) == 0 &&
                    strcmp(p->req.sel[s].val, f->val[l]) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* The levels gang g reads its ask against (g->src, g->lv, g->who), or g->why. */
static void resolve_levels(struct gang *g, const struct gs_policy_objs *po,
                           const struct gs_topo_levels *flag, const struct gs_kube_pod *p)
{
    const struct gs_kube_topology *topos;
    const struct gs_kube_flavor *flavors;
    int ntopos = gs_policy_topologies(po, &topos), nflavors = gs_policy_flavors(po, &flavors);
    g->src = SRC_NONE;
    for (int f = 0; f < nflavors && g->src == SRC_NONE; f++) {
        const struct gs_kube_flavor *fl = &flavors[f];
        if (!flavor_matches(fl, p))
            continue;
        for (int k = 0; k < ntopos && g->src == SRC_NONE; k++)
            if (strcmp(topos[k].name, fl->topology) == 0)
                g->src = k;
        if (g->src == SRC_NONE) {
            snprintf(g->why, sizeof(g->why),
                     "topology: ResourceFlavor %s names Topology %s, which does not exist",
                     fl->name, fl->topology);
            return;
        }
    }
    if (g->src == SRC_NONE && ntopos == 1)
        g->src = 0;
    if (g->src == SRC_NONE && flag && flag->n > 0)
        g->src = SRC_FLAG;
    if (g->src == SRC_NONE) {
        if (ntopos > 1)
            snprintf(g->why, sizeof(g->why),
                     "topology: the gang asks level '%.200s', and %d Topologies exist but no "
                     "ResourceFlavor in its nodeSelector names one (nor is --topology-levels set)",
                     g->key, ntopos);
        else
            snprintf(g->why, sizeof(g->why),
                     "topology: the gang asks level '%.200s', but no topology levels are known "
                     "(no kueue.x-k8s.io Topology, no --topology-levels)",
                     g->key);
        return;
    }
    if (g->src == SRC_FLAG) {
        g->lv = *flag;
        snprintf(g->who, sizeof(g->who), "--topology-levels");
        return;
    }
    struct gs_error err;
    gs_error_init(&err);
    snprintf(g->who, sizeof(g->who), "Topology %s", topos[g->src].name);
    if (gs_kube_topology_levels(&topos[g->src], &g->lv, &err))
        snprintf(g->why, sizeof(g->why), "topology: %s", err.msg);
}

/* "a, b, c" */
static void levels_text(const struct gs_topo_levels *lv, char *s, size_t n)
{
    s[0] = '\0';
    for (int l = 0; l < lv->n; l++)
        snprintf(s + strlen(s), n - strlen(s), "%s%.200s", l ? ", " : "", lv->key[l]);
}

/* Each asking gang's level in its own levels; the domains of each levels used, built once. */
static int place_levels(struct gs__topology *t, const struct gs_cluster *c)
{
    for (int k = 0; k < t->ngangs; k++) {
        struct gang *g = &t->g[k];
        if (g->mode == GS_TOPO_ANY || g->why[0])
            continue;
        int own = gs_topo_levels_find(&g->lv, g->key);
        if (own < 0) {
            char lv[1200];
            levels_text(&g->lv, lv, sizeof(lv));
            snprintf(g->why, sizeof(g->why),
                     "topology: the gang asks level '%.200s' (%s), which %s does not have "
                     "(levels: %.200s)",
                     g->key, mode_word(g->mode), g->who, lv);
            continue;
        }
        g->level = (int8_t)own;
        int slot = slot_of(t, g->src);
        if (!t->built[slot]) {
            if (gs_topo_build(&t->dom[slot], &g->lv, GS_TOPO_GPUSCHED, c))
                return GS_ENOMEM;
            t->built[slot] = true;
        }
    }
    return 0;
}

/* ---- NVIDIA ComputeDomains (formats/cdomain.h) ---- */

/* The domain pod p's claims name: 1 with *id, 0 none, -1 with why (a claim's config is bad, or
 * two claims name two domains). */
static int claims_domain(struct gs_claims_cycle *dra, const struct gs_kube_pod *p, const char **id,
                         char *why, size_t n)
{
    *id = NULL;
    for (int k = 0; dra && k < p->ndra; k++) {
        const struct gs_draobj_claim *cl =
            p->dra[k][0] ? gs_claims_cycle_claim(dra, p->ns, p->dra[k]) : NULL;
        if (!cl)
            continue;
        if (cl->cd_why[0]) {
            snprintf(why, n, "computedomain: pod %s: %s", p->name, cl->cd_why);
            return -1;
        }
        if (!cl->cd_domain[0])
            continue;
        if (*id && strcmp(*id, cl->cd_domain) != 0) {
            snprintf(why, n,
                     "computedomain: pod %s: its claims name two ComputeDomains, %s and %s "
                     "(resourceclaim %s/%s)",
                     p->name, *id, cl->cd_domain, p->ns, cl->name);
            return -1;
        }
        *id = cl->cd_domain;
    }
    return *id ? 1 : 0;
}

/* The index of domain id in t->cd, added when new; -1 without memory. */
static int intern_domain(struct gs__topology *t, struct gs_strmap *m, const char *id)
{
    uint32_t len = (uint32_t)strlen(id);
    int32_t k = gs_strmap_get(m, id, len);
    if (k >= 0)
        return k;
    struct cdom *v = realloc(t->cd, sizeof(*v) * ((size_t)t->ncd + 1));
    if (!v)
        return -1;
    t->cd = v;
    if (gs_strmap_put(m, id, len, t->ncd))
        return -1;
    struct cdom *d = &t->cd[t->ncd];
    snprintf(d->id, sizeof(d->id), "%s", id);
    d->clique = d->other = -1;
    return t->ncd++;
}

/* The clique (a domain of the clique slot) of node, -1 for none. */
static int32_t node_clique(const struct gs__topology *t, int node)
{
    int slot = t->nsrc - 1;
    return t->built[slot] ? gs_topo_node_domain(&t->dom[slot], node, 0) : -1;
}

/* Each pod's domain (pending pods of ours: a bad config is their why; members of a gang give it
 * theirs), the cliques' domains built when any domain is named, and each domain's clique from
 * its bound pods. Returns 0 or GS_ENOMEM. */
static int read_domains(struct gs__topology *t, const struct gs_snapshot *sn,
                        const struct gs_tenancy *ty, const struct gs_cluster *c,
                        struct gs_claims_cycle *dra, const char *scheduler_name)
{
    int np = gs__snapshot_npods(sn);
    if (!dra || np == 0)
        return 0;
    struct gs_strmap m;
    gs_strmap_init(&m);
    int rc = 0;
    for (int i = 0; i < np && !rc; i++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, i);
        if (p->ndra == 0 || p->terminating)
            continue;
        bool pending = !p->node[0] && strcmp(p->scheduler, scheduler_name) == 0;
        if (!pending && !p->node[0])
            continue;
        const char *id;
        char why[sizeof(t->pod[0].why)];
        int r = claims_domain(dra, p, &id, why, sizeof(why));
        if (r == 0 || (r < 0 && !pending))
            continue;
        if (!t->pod && !(t->pod = calloc((size_t)np, sizeof(*t->pod)))) {
            rc = GS_ENOMEM;
            break;
        }
        if (!t->npods)
            for (int k = 0; k < np; k++)
                t->pod[k].cd = -1;
        t->npods = np;
        struct cpod *cp = &t->pod[i];
        if (r < 0) {
            snprintf(cp->why, sizeof(cp->why), "%s", why);
        } else if ((cp->cd = intern_domain(t, &m, id)) < 0) {
            rc = GS_ENOMEM;
            break;
        }
        int k = pending ? gs_tenancy_pod_gang(ty, i) : -1;
        if (k < 0 || k >= t->ngangs || t->g[k].why[0])
            continue;
        struct gang *g = &t->g[k];
        if (cp->why[0]) {
            snprintf(g->why, sizeof(g->why), "%s", cp->why);
            g->cat = "dra";
        } else if (g->cd < 0) {
            g->cd = cp->cd;
        } else if (g->cd != cp->cd) {
            snprintf(g->why, sizeof(g->why),
                     "computedomain: the gang's pods are in two ComputeDomains, %s and %s (pod "
                     "%s); a gang is placed in one NVLink clique",
                     t->cd[g->cd].id, t->cd[cp->cd].id, p->name);
        }
    }
    gs_strmap_release(&m);
    if (rc || t->ncd == 0)
        return rc;
    int slot = t->nsrc - 1;
    struct gs_topo_levels lv = {0};
    gs_topo_levels_add(&lv, GS_CDOMAIN_CLIQUE);
    if (gs_topo_build(&t->dom[slot], &lv, GS_TOPO_GPUSCHED, c))
        return GS_ENOMEM;
    t->built[slot] = true;
    /* the cliques the domains' bound pods are in */
    for (int i = 0; i < np; i++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, i);
        if (i >= t->npods || t->pod[i].cd < 0 || !p->node[0])
            continue;
        struct cdom *d = &t->cd[t->pod[i].cd];
        int32_t q = node_clique(t, gs__snapshot_find_node(sn, p->node));
        if (q < 0)
            continue; /* (bound where no clique is: it holds none) */
        if (d->clique < 0)
            d->clique = q;
        else if (q != d->clique && d->other < 0)
            d->other = q;
    }
    return 0;
}

/* Whether the domain's bound pods are in two cliques: why in msg. */
static bool domain_split(const struct gs__topology *t, const struct cdom *d, char *msg, size_t n)
{
    if (d->other < 0)
        return false;
    const struct gs_topo *ct = &t->dom[t->nsrc - 1];
    snprintf(msg, n,
             "computedomain: ComputeDomain %s: its running pods are in NVLink cliques '%.80s' "
             "and '%.80s' already (label %s); its pods must share one",
             d->id, gs_topo_domain_value(ct, t->c, d->clique),
             gs_topo_domain_value(ct, t->c, d->other), GS_CDOMAIN_CLIQUE);
    return true;
}

/* A gang whose pods are in a ComputeDomain asks level nvidia.com/gpu.clique, required: of its
 * own levels when it asks one of them already at a coarser level (or preferred), else of the
 * implicit levels [nvidia.com/gpu.clique]. */
static void domain_asks(struct gs__topology *t)
{
    for (int k = 0; k < t->ngangs; k++) {
        struct gang *g = &t->g[k];
        if (g->cd < 0 || g->why[0])
            continue;
        const struct cdom *d = &t->cd[g->cd];
        if (domain_split(t, d, g->why, sizeof(g->why)))
            continue;
        if (g->mode == GS_TOPO_ANY) {
            g->mode = GS_TOPO_REQUIRED;
            g->src = SRC_CD;
            memset(&g->lv, 0, sizeof(g->lv));
            gs_topo_levels_add(&g->lv, GS_CDOMAIN_CLIQUE);
            snprintf(g->key, sizeof(g->key), "%s", GS_CDOMAIN_CLIQUE);
            snprintf(g->who, sizeof(g->who), "ComputeDomain %s", d->id);
            continue;
        }
        int ci = gs_topo_levels_find(&g->lv, GS_CDOMAIN_CLIQUE);
        int own = gs_topo_levels_find(&g->lv, g->key);
        if (ci < 0) {
            snprintf(g->why, sizeof(g->why),
                     "computedomain: the gang's pods are in ComputeDomain %s, which needs one "
                     "NVLink clique (level %s), but the gang asks level '%.120s' of %s, which "
                     "has no such level",
                     d->id, GS_CDOMAIN_CLIQUE, g->key, g->who);
            continue;
        }
        if (g->mode != GS_TOPO_REQUIRED || own < ci) {
            g->mode = GS_TOPO_REQUIRED;
            snprintf(g->key, sizeof(g->key), "%s", GS_CDOMAIN_CLIQUE);
        }
    }
}

int gs__topology_new(const struct gs_policy_objs *po, const struct gs_topo_levels *flag,
                     const struct gs_snapshot *sn, const struct gs_tenancy *ty,
                     const struct gs_cluster *c, struct gs_claims_cycle *dra,
                     const char *scheduler_name, struct gs__topology **out)
{
    *out = NULL;
    struct gs__topology *t = calloc(1, sizeof(*t));
    const struct gs_kube_topology *topos;
    int ngangs = gs_policy_group_count(po);
    int *first = malloc(sizeof(int) * ((size_t)ngangs + 1));
    if (t) {
        /* the Topologies, then the flag, then the ComputeDomains' clique */
        t->nsrc = gs_policy_topologies(po, &topos) + 2;
        t->dom = calloc((size_t)t->nsrc, sizeof(*t->dom));
        t->built = calloc((size_t)t->nsrc, sizeof(*t->built));
        for (int k = 0; t->dom && k < t->nsrc; k++)
            gs_topo_init(&t->dom[k]);
    }
    if (!t || !first || !t->dom || !t->built ||
        !(t->g = calloc((size_t)ngangs + 1, sizeof(*t->g)))) {
        free(first);
        gs__topology_free(t);
        return GS_ENOMEM;
    }
    t->ngangs = ngangs;
    t->c = c;
    for (int k = 0; k < ngangs; k++) {
        first[k] = -1;
        t->g[k].cd = -1;
        t->g[k].cat = "topology";
    }
    read_asks(t, sn, ty, scheduler_name, first);
    for (int k = 0; k < ngangs; k++)
        if (t->g[k].mode != GS_TOPO_ANY && !t->g[k].why[0])
            resolve_levels(&t->g[k], po, flag, gs__snapshot_pod(sn, first[k]));
    free(first);
    if (read_domains(t, sn, ty, c, dra, scheduler_name)) {
        gs__topology_free(t);
        return GS_ENOMEM;
    }
    domain_asks(t);
    if (place_levels(t, c)) {
        gs__topology_free(t);
        return GS_ENOMEM;
    }
    *out = t;
    return 0;
}

void gs__topology_free(struct gs__topology *t)
{
    if (!t)
        return;
    for (int k = 0; t->dom && k < t->nsrc; k++)
        gs_topo_release(&t->dom[k]);
    free(t->dom);
    free(t->built);
    free(t->g);
    free(t->cd);
    free(t->pod);
    free(t);
}

struct gs_topo *gs__topology_domains(struct gs__topology *t, int g)
{
    if (!t || g < 0 || g >= t->ngangs || t->g[g].why[0] || t->g[g].mode == GS_TOPO_ANY)
        return NULL;
    int slot = slot_of(t, t->g[g].src);
    return slot >= 0 && t->built[slot] ? &t->dom[slot] : NULL;
}

struct gs_topo_ask gs__topology_ask(const struct gs__topology *t, int g)
{
    struct gs_topo_ask a = {0};
    if (gs__topology_domains((struct gs__topology *)t, g)) {
        a.mode = t->g[g].mode;
        a.level = t->g[g].level;
    }
    return a;
}

const char *gs__topology_blocked(const struct gs__topology *t, int g, char *msg, size_t n)
{
    if (!t || g < 0 || g >= t->ngangs || !t->g[g].why[0])
        return NULL;
    snprintf(msg, n, "%s", t->g[g].why);
    return t->g[g].cat;
}

void gs__topology_level_words(const struct gs__topology *t, int g, char *msg, size_t n)
{
    if (!t || g < 0 || g >= t->ngangs) {
        snprintf(msg, n, "its level");
        return;
    }
    snprintf(msg, n, "level '%.200s' of %s", t->g[g].key, t->g[g].who);
    const struct cdom *d = t->g[g].cd >= 0 ? &t->cd[t->g[g].cd] : NULL;
    if (d && d->clique >= 0)
        snprintf(msg + strlen(msg), n - strlen(msg),
                 " (ComputeDomain %s: its running pods are in clique '%.80s')", d->id,
                 gs_topo_domain_value(&t->dom[t->nsrc - 1], t->c, d->clique));
}

const char *gs__topology_pod_blocked(const struct gs__topology *t, int i, char *msg, size_t n)
{
    if (!t || i < 0 || i >= t->npods)
        return NULL;
    const struct cpod *cp = &t->pod[i];
    if (cp->why[0]) {
        snprintf(msg, n, "%s", cp->why);
        return "dra";
    }
    if (cp->cd >= 0 && domain_split(t, &t->cd[cp->cd], msg, n))
        return "topology";
    return NULL;
}

int gs__topology_pod_node(const struct gs__topology *t, int i, int node)
{
    if (!t || i < 0 || i >= t->npods || t->pod[i].cd < 0)
        return GS_CD_NODE_OK;
    int32_t q = node_clique(t, node);
    if (q < 0)
        return GS_CD_NODE_NO_CLIQUE;
    int32_t want = t->cd[t->pod[i].cd].clique;
    return want < 0 || want == q ? GS_CD_NODE_OK : GS_CD_NODE_OTHER_CLIQUE;
}

void gs__topology_pod_placed(struct gs__topology *t, int i, int node)
{
    if (!t || i < 0 || i >= t->npods || t->pod[i].cd < 0)
        return;
    struct cdom *d = &t->cd[t->pod[i].cd];
    if (d->clique < 0)
        d->clique = node_clique(t, node);
}

bool gs__topology_pod_domain(const struct gs__topology *t, int i, char *msg, size_t n)
{
    if (!t || i < 0 || i >= t->npods || t->pod[i].cd < 0)
        return false;
    const struct cdom *d = &t->cd[t->pod[i].cd];
    if (d->clique >= 0)
        snprintf(msg, n, "ComputeDomain %s (its pods are in NVLink clique '%.80s')", d->id,
                 gs_topo_domain_value(&t->dom[t->nsrc - 1], t->c, d->clique));
    else
        snprintf(msg, n, "ComputeDomain %s", d->id);
    return true;
}
