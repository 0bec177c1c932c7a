/* build.c - a scenario under a sharing strategy (sim/build.h): the cluster of its node groups,
 * its tenants and the requests of its classes. */
#include "build.h"

#include "../base/error.h"
#include "../core/catalog.h"
#include "../core/kpod.h"
#include "../core/mig.h"
#include "../formats/dracycle.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs_simbuild_migparted(const struct gs_scenario *sc, struct gs_migparted **mp,
                          struct gs_error *err)
{
    const char *text = sc->mig_yaml ? sc->mig_yaml : gs_article_mig_config_yaml;
    const char *name = sc->mig_yaml ? sc->mig_yaml_name : "article nvidia-mig-config";
    return gs_migparted_parse(name, text, strlen(text), mp, err);
}

int gs_simbuild_group_config(const struct gs_scenario *sc, const struct gs_migparted *mp, int g,
                             const struct gs_mp_config **cfg, struct gs_error *err)
{
    const struct gs_sc_group *grp = &sc->groups[g];
    *cfg = NULL;
    if (!grp->mig_config[0])
        return 0;
    *cfg = gs_migparted_find(mp, grp->mig_config);
    if (!*cfg)
        return gs_error_set(err, GS_EINVAL,
                            "node group '%s': mig_config '%s' is not in the mig-parted config",
                            grp->name, grp->mig_config);
    return 0;
}

int gs_simbuild_gpu_mig(const struct gs_scenario *sc, const struct gs_mp_config *cfg, int g, int k,
                        bool *on, struct gs_mig_layout *layout, struct gs_error *err)
{
    const struct gs_sc_group *grp = &sc->groups[g];
    *on = grp->has_layout;
    *layout = grp->layout;
    if (!cfg)
        return 0;
    int m = gs_migparted_resolve(cfg, k, grp->model, on, layout, err);
    if (m < 0)
        return gs_error_prefix(err, "node group '%s'", grp->name);
    if (m == 0)
        *on = false; /* no entry for this GPU: MIG stays off */
    return 0;
}

static enum gs_gpu_mode group_share_mode(const struct gs_strategy *st, const struct gs_sc_group *g,
                                         int *replicas)
{
    if (g->sharing == GS_SHARE_FRACTION)
        return GS_GPU_FRACTION; /* milli-GPU shares (gpusched's own), in every strategy */
    if (g->sharing == GS_SHARE_NONE || st->share == GS_SM_NONE)
        return GS_GPU_WHOLE;
    enum gs_group_sharing mode = g->sharing;
    if (st->share == GS_SM_TIMESLICING)
        mode = GS_SHARE_TIMESLICING;
    else if (st->share == GS_SM_MPS)
        mode = GS_SHARE_MPS;
    if (mode == GS_SHARE_TIMESLICING) {
        *replicas = g->sharing == GS_SHARE_TIMESLICING && g->replicas ? g->replicas : 4;
        return GS_GPU_TIMESLICE;
    }
    *replicas = g->sharing == GS_SHARE_MPS && g->replicas ? g->replicas : 2;
    return GS_GPU_MPS;
}

/* Node n of group g: MIG on the GPUs its config or layout says, placed as the agent would. */
static int carve_node(const struct gs_scenario *sc, int g, const struct gs_mp_config *cfg,
                      struct gs_cluster *c, struct gs_node *n, struct gs_error *err)
{
    const struct gs_sc_group *grp = &sc->groups[g];
    gs_node_set_label(n, "nvidia.com/mig.config", cfg ? cfg->name : "inline");
    for (int k = 0; k < grp->gpus; k++) {
        struct gs_gpu *gpu = &c->gpus[n->gpu0 + k];
        bool enabled;
        struct gs_mig_layout layout;
        int rc = gs_simbuild_gpu_mig(sc, cfg, g, k, &enabled, &layout, err);
        if (rc)
            return rc;
        if (!enabled)
            continue;
        struct gs_mig_placement pl;
        if ((rc = gs_mig_place(grp->model, &layout, &pl, err)))
            return rc;
        gpu->mode = GS_GPU_MIG;
        gpu->mig = pl;
        gpu->replicas = 0;
        gs_node_touch(n);
    }
    return 0;
}

/* The nodes of group g. */
static int build_group(const struct gs_scenario *sc, const struct gs_strategy *st, int gi,
                       const struct gs_migparted *mp, struct gs_cluster *c, struct gs_error *err)
{
    const struct gs_sc_group *g = &sc->groups[gi];
    int replicas = 0, gpus = g->dra ? 0 : g->gpus;
    enum gs_gpu_mode mode = gpus ? group_share_mode(st, g, &replicas) : GS_GPU_WHOLE;
    const struct gs_mp_config *cfg = NULL;
    bool use_mig = st->mig && gpus && (g->has_layout || g->mig_config[0]);
    int rc = use_mig ? gs_simbuild_group_config(sc, mp, gi, &cfg, err) : 0;
    for (int ni = 0; ni < g->nodes && !rc; ni++) {
        char name[GS_NAME_MAX];
        snprintf(name, sizeof(name), "%s-%d", g->name, ni);
        int id = gs_cluster_add_node(c, name, gpus ? g->model : -1, gpus, g->cpu_milli, g->mem_mib,
                                     mode, replicas, NULL);
        if (id < 0)
            return gs_error_set(err, id, "node group '%s': cannot build node", g->name);
        struct gs_node *n = &c->nodes[id];
        for (int l = 0; l < g->nlabels; l++)
            gs_node_set_label(n, g->labels[l].key, g->labels[l].val);
        if (gpus) {
            gs_node_set_label(n, "nvidia.com/gpu.product", gs_catalog_get(g->model)->product);
            gs_node_set_label(n, "nvidia.com/gpu.sharing-strategy",
                              mode == GS_GPU_TIMESLICE  ? "time-slicing"
                              : mode == GS_GPU_MPS      ? "mps"
                              : mode == GS_GPU_FRACTION ? "fraction"
                                                        : "none");
        }
        for (int k = 0; k < sc->nclasses; k++) {
            const struct gs_sc_class *cls = &sc->classes[k];
            char key[GS_LABEL_KEY_MAX];
            snprintf(key, sizeof(key), GS_SIMBUILD_CLASS_LABEL "%d", k);
            if ((cls->nnode_sel || cls->nterms) && gs_simbuild_class_admits(cls, n) &&
                gs_node_set_label(n, key, "true"))
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        if (use_mig)
            rc = carve_node(sc, gi, cfg, c, n, err);
    }
    /* the group's last `unhealthy` GPUs, from its last node back */
    for (int k = 0; gpus && k < g->unhealthy && k < c->ngpus && !rc; k++) {
        c->gpus[c->ngpus - 1 - k].healthy = 0;
        for (int ni = c->nnodes - 1; ni >= 0; ni--)
            if (c->nodes[ni].gpu0 <= c->ngpus - 1 - k) {
                gs_node_touch(&c->nodes[ni]);
                break;
            }
    }
    return rc;
}

int gs_simbuild_cluster(const struct gs_scenario *sc, const struct gs_strategy *st,
                        struct gs_cluster *c, struct gs_error *err)
{
    struct gs_migparted *mp = NULL;
    int rc = 0;
    if (st->mig && (rc = gs_simbuild_migparted(sc, &mp, err)))
        return rc;
    gs_cluster_init(c);
    for (int gi = 0; gi < sc->ngroups && !rc; gi++)
        rc = build_group(sc, st, gi, mp, c, err);
    gs_migparted_free(mp);
    return rc;
}

void gs_simbuild_share_ok(const struct gs_scenario *sc, const struct gs_cluster *c,
                          uint8_t share_ok[GS_SC_MAX_CLASSES])
{
    for (int k = 0; k < sc->nclasses; k++) {
        for (int g = 0; g < c->ngpus; g++) {
            const struct gs_gpu *gpu = &c->gpus[g];
            const struct gs_gpu_model *m = gs_catalog_get(gpu->model);
            int32_t need = sc->classes[k].gpu_mem_mib;
            if (gpu->mode == GS_GPU_TIMESLICE && (int64_t)m->mem_mib >= need)
                share_ok[k] |= 1;
            if (gpu->mode == GS_GPU_MPS && (int64_t)m->mem_mib / gpu->replicas >= need)
                share_ok[k] |= 2;
        }
    }
}

int gs_simbuild_tenants(const struct gs_scenario *sc, const struct gs_cluster *c, bool queues,
                        struct gs_tenants *t, struct gs_error *err)
{
    for (int i = 0; queues && i < sc->ntenants; i++) {
        const struct gs_sc_tenant *tn = &sc->tenants[i];
        int q = gs_tenants_add_queue(t, tn->name, NULL, tn->weight > 0 ? tn->weight : 1, 0, err);
        if (q < 0)
            return q;
        char qty[32];
        int rc;
        for (int k = 0; k < tn->nquota; k++) {
            snprintf(qty, sizeof(qty), "%lld", (long long)tn->quota_value[k]);
            if ((rc = gs_tenants_set(t, &t->q[q].deserved, tn->quota_name[k], qty, err)))
                return rc;
        }
        for (int k = 0; k < tn->nlimit; k++) {
            snprintf(qty, sizeof(qty), "%lld", (long long)tn->limit_value[k]);
            if ((rc = gs_tenants_set(t, &t->q[q].limit, tn->limit_name[k], qty, err)))
                return rc;
        }
    }
    struct gs_cluster_totals tot;
    gs_cluster_totals(c, &tot);
    t->cap.v[GS_QR_UNITS] = (int64_t)(tot.units_cap * 1000);
    for (int n = 0; n < c->nnodes; n++) {
        t->cap.v[GS_QR_CPU] += c->nodes[n].cpu_cap;
        t->cap.v[GS_QR_MEM] += c->nodes[n].mem_cap;
    }
    return 0;
}

bool gs_simbuild_class_admits(const struct gs_sc_class *k, const struct gs_node *n)
{
    if (!k->nnode_sel && !k->nterms)
        return true;
    struct gs_label_ref sel[GS_SC_MAX_NODESEL];
    struct gs_kreq req[GS_SC_MAX_TERMS][GS_SC_MAX_EXPRS];
    const char *vals[GS_SC_MAX_TERMS][GS_SC_MAX_EXPRS][GS_SC_MAX_VALS];
    struct gs_knode_term terms[GS_SC_MAX_TERMS];
    struct gs_kpod p;
    memset(&p, 0, sizeof(p));
    for (int i = 0; i < k->nnode_sel; i++)
        sel[i] = (struct gs_label_ref){k->node_sel[i].key, k->node_sel[i].val};
    p.nnode_selector = (uint32_t)k->nnode_sel;
    p.node_selector = sel;
    for (int t = 0; t < k->nterms; t++) {
        memset(&terms[t], 0, sizeof(terms[t]));
        for (int e = 0; e < k->term[t].nexprs; e++) {
            const struct gs_sc_expr *x = &k->term[t].expr[e];
            struct gs_kreq *q = &req[t][e];
            memset(q, 0, sizeof(*q));
            q->op = x->op;
            q->key = x->key;
            q->nvals = x->nvals;
            for (int v = 0; v < x->nvals; v++)
                vals[t][e][v] = x->vals[v];
            q->vals = vals[t][e];
            if (x->op == GS_KOP_GT || x->op == GS_KOP_LT)
                gs_kreq_parse_num(x->vals[0], &q->num);
        }
        terms[t].nexprs = (uint32_t)k->term[t].nexprs;
        terms[t].exprs = req[t];
    }
    p.has_required = k->nterms > 0;
    p.nrequired = (uint32_t)k->nterms;
    p.required = terms;
    return gs_kpod_node_matches(&p, n);
}

bool gs_simbuild_group_admits(const struct gs_scenario *sc, int k, int g)
{
    const struct gs_sc_group *grp = &sc->groups[g];
    struct gs_node n;
    memset(&n, 0, sizeof(n));
    gs_labels_init(&n.labels);
    for (int l = 0; l < grp->nlabels; l++)
        gs_labels_set(&n.labels, grp->labels[l].key, grp->labels[l].val);
    if (grp->gpus && grp->model >= 0)
        gs_labels_set(&n.labels, "nvidia.com/gpu.product", gs_catalog_get(grp->model)->product);
    bool ok = gs_simbuild_class_admits(&sc->classes[k], &n);
    gs_labels_release(&n.labels);
    return ok;
}

/* Class k's own node constraint, as the label the nodes that satisfy it carry. */
static void class_selector(const struct gs_scenario *sc, int ki, struct gs_request *r)
{
    const struct gs_sc_class *k = &sc->classes[ki];
    if ((!k->nnode_sel && !k->nterms) || r->nsel >= GS_MAX_SELECTOR)
        return;
    struct gs_label *l = &r->sel[r->nsel++];
    snprintf(l->key, sizeof(l->key), GS_SIMBUILD_CLASS_LABEL "%d", ki);
    snprintf(l->val, sizeof(l->val), "true");
}

static void request_shape(const struct gs_scenario *sc, const struct gs_strategy *st,
                          const uint8_t *share_ok, int ki, struct gs_request *r, bool *shared);

void gs_simbuild_request(const struct gs_scenario *sc, const struct gs_strategy *st,
                         const uint8_t *share_ok, int ki, struct gs_request *r, bool *shared)
{
    request_shape(sc, st, share_ok, ki, r, shared);
    class_selector(sc, ki, r);
}

static void request_shape(const struct gs_scenario *sc, const struct gs_strategy *st,
                          const uint8_t *share_ok, int ki, struct gs_request *r, bool *shared)
{
    const struct gs_sc_class *k = &sc->classes[ki];
    memset(r, 0, sizeof(*r));
    r->cpu_milli = k->cpu_milli;
    r->mem_mib = k->mem_mib;
    *shared = false;
    if (st->mig && k->mig[0]) {
        r->kind = GS_REQ_MIG;
        r->gpus = 1;
        snprintf(r->mig, sizeof(r->mig), "%s", k->mig);
        return;
    }
    int gpus = k->gpus;
    if (gpus == 0 && k->mig[0])
        gpus = 1; /* a MIG-sized workload asks one GPU when MIG is off */
    if (gpus == 0) {
        r->kind = GS_REQ_NONE;
        return;
    }
    r->kind = GS_REQ_GPU;
    r->gpus = (uint8_t)gpus;
    r->milli = GS_MILLI;
    r->gpu_mem_mib = k->gpu_mem_mib; /* whole GPUs: the model must be large enough */
    if (st->share == GS_SM_NONE)
        return;
    /* which replicas this class may take under the strategy */
    uint8_t modes = st->share == GS_SM_TIMESLICING ? 1 : st->share == GS_SM_MPS ? 2 : 3;
    uint8_t ok = k->share & modes & share_ok[ki];
    r->nsel = 1;
    snprintf(r->sel[0].key, sizeof(r->sel[0].key), "nvidia.com/gpu.sharing-strategy");
    if (!ok) {
        /* dedicated GPUs, as an operator pins training to unshared nodes */
        snprintf(r->sel[0].val, sizeof(r->sel[0].val), "none");
        return;
    }
    *shared = true;
    if (ok == 3)
        r->nsel = 0;
    else
        snprintf(r->sel[0].val, sizeof(r->sel[0].val), "%s", ok == 1 ? "time-slicing" : "mps");
    if ((ok & 1) && !st->mem_aware)
        r->gpu_mem_mib = 0; /* the stock device plugin knows no GPU memory */
}

/* ---------- DRA ---------- */

/* The slices of node ni of dra group g, as `agent run --dra` publishes them. */
static int group_node_slices(const struct gs_sc_group *g, int ni, struct gs_simbuild_dra *d,
                             struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(g->model);
    struct gs_draslice_node *dn = calloc(1, sizeof(*dn));
    if (!dn)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    char name[GS_NAME_MAX + 16];
    snprintf(name, sizeof(name), "%s-%d", g->name, ni);
    dn->node = name;
    dn->generation = 1;
    dn->dynamic_mig = g->dra == GS_SC_DRA_DYNAMIC;
    dn->ngpus = g->gpus;
    for (int k = 0; k < g->gpus; k++) {
        struct gs_draslice_gpu *x = &dn->gpus[k];
        x->index = k;
        snprintf(x->uuid, sizeof(x->uuid), "GPU-sim-%s-%d", name, k);
        x->model = g->model;
        x->mem_mib = (uint64_t)m->mem_mib;
        x->mig_enabled = dn->dynamic_mig;
        x->healthy = true;
    }
    int rc = gs_dracycle_node_slices(dn, &d->slices, &d->nslices, &d->cap_slices, err);
    free(dn);
    return rc;
}

/* Class k's pods' claim: one request "gpu" of count devices of its class and selector. */
static int class_claim(const struct gs_sc_class *k, int idx, struct gs_draobj_claim *out,
                       struct gs_error *err)
{
    char uid[32];
    snprintf(uid, sizeof(uid), "uid-%d", idx);
    json_t *ex = json_pack("{s:s, s:s, s:i}", "deviceClassName", k->claim.device_class,
                           "allocationMode", "ExactCount", "count", k->claim.count);
    if (ex && k->claim.selector[0])
        json_object_set_new(ex, "selectors",
                            json_pack("[{s:{s:s}}]", "cel", "expression", k->claim.selector));
    json_t *o = ex ? json_pack("{s:{s:s, s:s, s:s}, s:{s:{s:[{s:s, s:o}]}}}", "metadata",
                               "namespace", "sim", "name", k->name, "uid", uid, "spec", "devices",
                               "requests", "name", "gpu", "exactly", ex)
                   : NULL;
    int rc = o ? gs_draobj_claim_read(o, out, err) : gs_error_set(err, GS_ENOMEM, "out of memory");
    json_decref(o);
    return rc;
}

/* err's message prefixed with what it is about. */
static int named(struct gs_error *err, int rc, const char *what, const char *name)
{
    char msg[sizeof(err->msg)];
    snprintf(msg, sizeof(msg), "%s", err->msg);
    return gs_error_set(err, rc, "%s '%s': %s", what, name, msg);
}

int gs_simbuild_dra(const struct gs_scenario *sc, struct gs_simbuild_dra *d, struct gs_error *err)
{
    memset(d, 0, sizeof(*d));
    for (int k = 0; k < GS_SC_MAX_CLASSES; k++)
        d->claim_of[k] = -1;
    int rc = 0;
    for (int gi = 0; gi < sc->ngroups && !rc; gi++)
        for (int ni = 0; sc->groups[gi].dra && ni < sc->groups[gi].nodes && !rc; ni++)
            if ((rc = group_node_slices(&sc->groups[gi], ni, d, err)))
                rc = named(err, rc, "node group", sc->groups[gi].name);
    for (int k = 0; k < sc->nclasses && !rc; k++) {
        if (sc->classes[k].claim.count == 0)
            continue;
        if ((rc = class_claim(&sc->classes[k], k, &d->claims[d->nclaims], err)))
            return named(err, rc, "class", sc->classes[k].name);
        d->claim_of[k] = d->nclaims++;
    }
    if (!rc && (d->nslices > 0 || d->nclaims > 0)) {
        rc = gs_dracycle_default_classes(d->classes, err);
        d->has_classes = rc == 0;
    }
    return rc;
}

void gs_simbuild_dra_release(struct gs_simbuild_dra *d)
{
    for (int k = 0; k < d->nclaims; k++)
        gs_draobj_claim_release(&d->claims[k]);
    if (d->has_classes)
        for (int c = 0; c < 2; c++)
            gs_draobj_class_release(&d->classes[c]);
    for (int i = 0; i < d->nslices; i++)
        gs_draobj_slice_release(&d->slices[i]);
    free(d->slices);
    memset(d, 0, sizeof(*d));
}
