/* topology.c - one cycle's topology (sched/topology.h): each gang's ask read from its pending
 * pods' annotations (formats/topoobj.h), the levels it is read against (its ResourceFlavor's
 * Topology, the one Topology, the flag), and core/topo.h's domains built for the cycle. The
 * cycle input (sched/cyclein.c) builds it; the cycle output (sched/cycleout.c) words its waits. */
#include "topology.h"

#include "../base/error.h"
#include "../formats/topoobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRC_FLAG (-1)
#define SRC_NONE (-2)

struct gang {
    int8_t mode;  /* enum gs_topo_mode, GS_TOPO_ANY: asks nothing */
    int8_t level; /* in the cycle's levels */
    int src;      /* the Topology (index into po->topos), SRC_FLAG, SRC_NONE */
    char key[GS_TOPOOBJ_KEY_MAX + 1];
    char who[GS_TOPOOBJ_NAME_MAX + 24]; /* "Topology t" or "--topology-levels" */
    char why[480];                      /* non-empty: the gang waits (blocked) */
    struct gs_topo_levels lv;           /* its levels */
};

struct gs__topology {
    int ngangs;
    struct gang *g;
    int nsrc;            /* po->ntopos + 1 */
    struct gs_topo *dom; /* per Topology, then the flag's: the domains */
    bool *built;         /* dom[k] built (a gang reads its ask against it) */
};

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
        int slot = g->src == SRC_FLAG ? t->nsrc - 1 : g->src;
        if (!t->built[slot]) {
            if (gs_topo_build(&t->dom[slot], &g->lv, GS_TOPO_GPUSCHED, c))
                return GS_ENOMEM;
            t->built[slot] = true;
        }
    }
    return 0;
}

int gs__topology_new(const struct gs_policy_objs *po, const struct gs_topo_levels *flag,
                     const struct gs_snapshot *sn, const struct gs_tenancy *ty,
                     const struct gs_cluster *c, const char *scheduler_name,
                     struct gs__topology **out)
{
    *out = NULL;
    struct gs__topology *t = calloc(1, sizeof(*t));
    const struct gs_kube_topology *topos;
    int ngangs = gs_policy_group_count(po);
    int *first = malloc(sizeof(int) * ((size_t)ngangs + 1));
    if (t) {
        t->nsrc = gs_policy_topologies(po, &topos) + 1; /* the Topologies, then the flag */
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
    for (int k = 0; k < ngangs; k++)
        first[k] = -1;
    read_asks(t, sn, ty, scheduler_name, first);
    for (int k = 0; k < ngangs; k++)
        if (t->g[k].mode != GS_TOPO_ANY && !t->g[k].why[0])
            resolve_levels(&t->g[k], po, flag, gs__snapshot_pod(sn, first[k]));
    free(first);
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
    free(t);
}

struct gs_topo *gs__topology_domains(struct gs__topology *t, int g)
{
    if (!t || g < 0 || g >= t->ngangs || t->g[g].why[0] || t->g[g].mode == GS_TOPO_ANY)
        return NULL;
    int slot = t->g[g].src == SRC_FLAG ? t->nsrc - 1 : t->g[g].src;
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
    return "topology";
}

void gs__topology_level_words(const struct gs__topology *t, int g, char *msg, size_t n)
{
    if (!t || g < 0 || g >= t->ngangs) {
        snprintf(msg, n, "its level");
        return;
    }
    snprintf(msg, n, "level '%.200s' of %s", t->g[g].key, t->g[g].who);
}
