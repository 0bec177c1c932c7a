/* clusterscen.c - a live cluster as a scenario (formats/clusterscen.h). */
#include "clusterscen.h"

#include "../base/error.h"
#include "../core/catalog.h"
#include "../core/kpod.h"
#include "../core/mig.h"
#include "inventory.h"
#include "kubeobj.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODE_GROUPS GS_SC_MAX_GROUPS
#define MAX_CLASSES     GS_SC_MAX_CLASSES
#define MAX_SEEN        256 /* class candidates before the largest are kept */

#define MAX_SEL_KEYS 8 /* node labels kept per group (a scenario group's labels) */
#define CONS_MAX     1024

struct ngroup {
    char key[768 + MAX_SEL_KEYS * 2 * GS_LABEL_KEY_MAX];
    char name[48];
    int model, gpus;
    int64_t cpu_milli, mem_mib;
    int sharing; /* 0 none, 1 time-slicing, 2 mps */
    int replicas;
    bool mig[GS_MAX_GPUS_NODE];
    struct gs_mig_layout layout[GS_MAX_GPUS_NODE];
    int nodes;
    struct gs_buf names;
    int nlabels; /* its nodes' values of the labels pods select on */
    struct gs_label labels[MAX_SEL_KEYS];
};

struct pclass {
    char key[512 + CONS_MAX];
    char cons[CONS_MAX]; /* node_selector / node_affinity lines, "" none */
    char name[56];
    char ns[64];
    int kind; /* enum gs_class_kind */
    bool service;
    int gpus;
    char mig[GS_MIG_NAME_MAX];
    int64_t cpu_milli, mem_mib;
    int32_t priority;
    uint8_t share;
    int created, current;
    double util_sum;
    int util_n;
    double *dur; /* finished pods' run times */
    int ndur, capdur;
    double age_sum; /* running pods' ages */
    int nage;
    double gpu_weight; /* GPUs it holds or asks, for keeping the largest */
};

static const char *label_of(const json_t *obj, const char *field, const char *key)
{
    json_t *m = json_object_get(json_object_get(obj, "metadata"), field);
    json_t *v = json_object_get(m, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void sanitize(const char *in, char *out, size_t size)
{
    size_t w = 0;
    for (; *in && w + 1 < size; in++) {
        char c = (char)tolower((unsigned char)*in);
        out[w++] = isalnum((unsigned char)c) || c == '-' || c == '.' ? c : '-';
    }
    out[w] = 0;
    while (w > 0 && (out[w - 1] == '-' || out[w - 1] == '.'))
        out[--w] = 0;
    if (!w)
        snprintf(out, size, "x");
}

/* A label's non-negative count (GFD writes them as decimal strings); 0 when absent or bad. */
static int count_label(const char *s)
{
    if (!s)
        return 0;
    char *end;
    long v = strtol(s, &end, 10);
    return end != s && !*end && v > 0 && v < 1000 ? (int)v : 0;
}

static int profile_of_resource(int model, const char *res)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    for (int p = 0; m && p < m->nprofiles; p++) {
        char name[64];
        gs_mig_resource_name(&m->profiles[p], name, sizeof(name));
        if (strcmp(name, res) == 0)
            return p;
    }
    return -1;
}

/* The node's setup; returns 0, 1 when it has no GPUs, 2 when its model is unknown. */
/* The GPUs of node n as the scheduler reads them (sched/cache.h, in live): count and MIG
 * layouts, when live has the node with GPUs. Returns true when it did. */
static bool from_live(const struct gs_cluster *live, const struct gs_kube_node *n, struct ngroup *g)
{
    for (int i = 0; live && i < live->nnodes; i++) {
        const struct gs_node *ln = &live->nodes[i];
        if (strcmp(ln->name, n->name) != 0 || ln->ngpus <= 0 || ln->model != g->model)
            continue;
        g->gpus = ln->ngpus < GS_MAX_GPUS_NODE ? ln->ngpus : GS_MAX_GPUS_NODE;
        for (int k = 0; k < g->gpus; k++) {
            const struct gs_gpu *x = &live->gpus[ln->gpu0 + k];
            g->mig[k] = x->mode == GS_GPU_MIG && x->mig.n > 0;
            for (int s = 0; g->mig[k] && s < x->mig.n; s++)
                if (g->layout[k].count[x->mig.inst[s].profile] < 255)
                    g->layout[k].count[x->mig.inst[s].profile]++;
        }
        return true;
    }
    return false;
}

static int node_setup(const struct gs_kube_node *n, const struct gs_cluster *live, struct ngroup *g)
{
    memset(g, 0, sizeof(*g));
    const char *product = gs_kube_label(n, "nvidia.com/gpu.product");
    const char *count = gs_kube_label(n, "nvidia.com/gpu.count");
    if (!product && n->gpus == 0 && n->next == 0 && !n->inv)
        return 1;
    g->model = product ? gs_catalog_find(product) : -1;
    if (g->model < 0)
        return 2;
    const char *strat = gs_kube_label(n, "nvidia.com/gpu.sharing-strategy");
    const char *reps = gs_kube_label(n, "nvidia.com/gpu.replicas");
    g->sharing = strat && strcmp(strat, "time-slicing") == 0 ? 1
                 : strat && strcmp(strat, "mps") == 0        ? 2
                                                             : 0;
    g->replicas = g->sharing && reps ? count_label(reps) : 0;
    if (g->sharing && g->replicas < 2)
        g->replicas = g->sharing == 1 ? 4 : 2;
    int64_t whole = g->sharing ? n->gpus / g->replicas : n->gpus;
    g->gpus = count ? count_label(count) : n->inv ? n->inv->ngpus : 0;
    g->cpu_milli = n->cpu_milli;
    g->mem_mib = n->mem_mib;
    if (from_live(live, n, g)) {
        /* the scheduler's own reading: inventory, mig.config with the mig-parted config, counts */
    } else if (n->inv) {
        if (g->gpus < n->inv->ngpus)
            g->gpus = n->inv->ngpus;
        for (int i = 0; i < n->inv->ngpus && i < GS_MAX_GPUS_NODE; i++) {
            const struct gs_inv_gpu *ig = &n->inv->gpus[i];
            if (ig->mode != GS_GPU_MIG || ig->index < 0 || ig->index >= GS_MAX_GPUS_NODE)
                continue;
            for (int s = 0; s < ig->ninst; s++) {
                int p = gs_catalog_find_profile(g->model, ig->inst[s].profile);
                if (p >= 0 && g->layout[ig->index].count[p] < 255)
                    g->layout[ig->index].count[p]++;
            }
            g->mig[ig->index] = gs_mig_layout_size(&g->layout[ig->index]) > 0;
        }
    } else if (n->next > 0) {
        uint32_t want[GS_MIG_MAX_PROFILES] = {0};
        for (int e = 0; e < n->next; e++) {
            int p = profile_of_resource(g->model, n->ext[e].name);
            if (p >= 0 && n->ext[e].count > 0)
                want[p] += (uint32_t)(n->ext[e].count > 1000 ? 1000 : n->ext[e].count);
        }
        struct gs_mig_layout pl[GS_MAX_GPUS_NODE];
        struct gs_error e;
        gs_error_init(&e);
        int need = gs_mig_plan(g->model, want, pl, GS_MAX_GPUS_NODE, &e);
        if (need > 0) {
            if (!g->gpus)
                g->gpus = (int)whole + need;
            for (int i = 0; i < need && i < GS_MAX_GPUS_NODE; i++) {
                g->mig[i] = true;
                g->layout[i] = pl[i];
            }
        }
    }
    if (!g->gpus)
        g->gpus = (int)whole;
    if (g->gpus > GS_MAX_GPUS_NODE)
        g->gpus = GS_MAX_GPUS_NODE;
    if (g->gpus <= 0)
        return 1;
    size_t w = (size_t)snprintf(g->key, sizeof(g->key), "%d|%d|%d|%d", g->model, g->gpus,
                                g->sharing, g->replicas);
    for (int i = 0; i < g->gpus && w < sizeof(g->key); i++) {
        char l[128] = "whole";
        if (g->mig[i])
            gs_mig_layout_str(g->model, &g->layout[i], l, sizeof(l));
        w += (size_t)snprintf(g->key + w, sizeof(g->key) - w, "|%s", l);
    }
    return 0;
}

static int class_kind(const char *s)
{
    if (!s)
        return -1;
    if (strcmp(s, "online-inference") == 0)
        return GS_KIND_ONLINE;
    if (strcmp(s, "batch-inference") == 0)
        return GS_KIND_BATCH;
    if (strcmp(s, "training") == 0)
        return GS_KIND_TRAINING;
    if (strcmp(s, "development") == 0)
        return GS_KIND_DEV;
    return -1;
}

/* The pod's workload: owner kind and name (a ReplicaSet's Deployment). */
static void owner_of(const json_t *pod, char *kind, size_t ks, char *name, size_t ns)
{
    json_t *refs = json_object_get(json_object_get(pod, "metadata"), "ownerReferences");
    json_t *pick = NULL;
    size_t i;
    json_t *r;
    json_array_foreach(refs, i, r)
    {
        if (!pick || json_is_true(json_object_get(r, "controller")))
            pick = r;
    }
    const char *k = pick ? json_string_value(json_object_get(pick, "kind")) : NULL;
    const char *n = pick ? json_string_value(json_object_get(pick, "name")) : NULL;
    if (!k || !n) {
        snprintf(kind, ks, "Pod");
        snprintf(name, ns, "pods");
        return;
    }
    snprintf(kind, ks, "%s", k);
    snprintf(name, ns, "%s", n);
    if (strcmp(k, "Job") == 0) {
        /* Jobs of one workload differ by a suffix (a CronJob's schedule time, an index, a
         * generated hash): "ft-17" and "ft-18" are one class */
        char *dash;
        while ((dash = strrchr(name, '-')) && dash != name && dash[1]) {
            bool gen = true;
            for (const char *c = dash + 1; *c; c++)
                gen &= isdigit((unsigned char)*c) != 0;
            if (!gen && strlen(dash + 1) == 5) /* generateName's five characters */
                gen = true;
            if (!gen)
                break;
            *dash = 0;
        }
        return;
    }
    if (strcmp(k, "ReplicaSet") == 0) {
        char *dash = strrchr(name, '-');
        if (dash && dash != name)
            *dash = 0; /* pod-template-hash */
        snprintf(kind, ks, "Deployment");
    }
}

static double finished_at(const json_t *pod)
{
    json_t *cs = json_object_get(json_object_get(pod, "status"), "containerStatuses");
    double last = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cs, i, c)
    {
        json_t *t = json_object_get(json_object_get(c, "state"), "terminated");
        const char *f = json_string_value(json_object_get(t, "finishedAt"));
        double v;
        if (f && gs_kube_parse_time(f, &v) == 0 && v > last)
            last = v;
    }
    return last;
}

static double time_field(const json_t *obj, const char *section, const char *field)
{
    const char *s = json_string_value(json_object_get(json_object_get(obj, section), field));
    double v;
    return s && gs_kube_parse_time(s, &v) == 0 ? v : 0;
}

static int add_dur(struct pclass *c, double d)
{
    if (c->ndur == c->capdur) {
        int nc = c->capdur ? 2 * c->capdur : 16;
        double *v = realloc(c->dur, sizeof(*v) * (size_t)nc);
        if (!v)
            return GS_ENOMEM;
        c->dur = v;
        c->capdur = nc;
    }
    c->dur[c->ndur++] = d;
    return 0;
}

static int cmp_weight(const void *a, const void *b)
{
    const struct pclass *x = a, *y = b;
    return x->gpu_weight < y->gpu_weight ? 1 : x->gpu_weight > y->gpu_weight ? -1 : 0;
}

/* A duration within what a scenario takes (1 s to 365 days). */
static void fmt_s(double s, char *out, size_t size)
{
    if (!(s >= 1))
        s = 1;
    if (s > 365 * 86400.0)
        s = 365 * 86400.0;
    snprintf(out, size, "%.0fs", s);
}

static const char *kind_name(int k)
{
    return gs_class_kind_name((enum gs_class_kind)k);
}

/* What gs_cluster_scenario gathers before writing: node groups, pod classes, and notes on
 * what was left out. */
struct live {
    struct ngroup *grp;
    int ng;
    struct pclass *cls;
    int nc;
    size_t nn;
    char (*nname)[GS_KNAME_MAX]; /* node name -> group, for the pods' sharing */
    int *ngi;
    struct gs_buf notes;
    int skipped_models, dropped, gpu_pods;
    const struct gs_cluster *live; /* the scheduler's reading of the nodes, or NULL */
    int nselkey; /* node labels the GPU pods' constraints read (nodes are grouped by them) */
    char selkey[MAX_SEL_KEYS][GS_LABEL_KEY_MAX];
};

/* ---- node constraints: pods' nodeSelector and required node affinity ---- */

/* A label key or value a scenario can hold as it is (quoted). */
static bool plain_label(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n >= max)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("-._/", *s))
            return false;
    return true;
}

static const json_t *required_terms(const json_t *pod)
{
    const json_t *a = json_object_get(json_object_get(pod, "spec"), "affinity");
    const json_t *r = json_object_get(json_object_get(a, "nodeAffinity"),
                                      "requiredDuringSchedulingIgnoredDuringExecution");
    return json_object_get(r, "nodeSelectorTerms");
}

/* Key k read by a GPU pod's constraints, kept for grouping nodes. The GPU product and sharing
 * are already in a group's shape (the simulator sets both labels). */
static void add_selkey(struct live *lc, const char *k)
{
    if (!k || strcmp(k, "nvidia.com/gpu.product") == 0 ||
        strcmp(k, "nvidia.com/gpu.sharing-strategy") == 0 || !plain_label(k, GS_LABEL_KEY_MAX))
        return;
    for (int i = 0; i < lc->nselkey; i++)
        if (strcmp(lc->selkey[i], k) == 0)
            return;
    if (lc->nselkey == MAX_SEL_KEYS) {
        gs_buf_printf(&lc->notes, "# node label %s not kept: pods select on more than %d\n", k,
                      MAX_SEL_KEYS);
        return;
    }
    snprintf(lc->selkey[lc->nselkey++], GS_LABEL_KEY_MAX, "%s", k);
}

static bool gpu_pod(const json_t *obj, struct gs_kube_pod *p)
{
    struct gs_error e;
    gs_error_init(&e);
    if (gs_kube_pod_read(obj, p, &e))
        return false;
    return (p->req.kind == GS_REQ_GPU && p->req.gpus > 0) || p->req.kind == GS_REQ_MIG;
}

/* The node labels the GPU pods' nodeSelectors and required node affinity read. */
static void collect_selkeys(struct live *lc, const json_t *pods)
{
    size_t i, j, t;
    const json_t *obj, *term, *x;
    json_array_foreach(pods, i, obj)
    {
        struct gs_kube_pod p;
        if (!gpu_pod(obj, &p))
            continue;
        const char *k;
        const json_t *v;
        json_object_foreach(json_object_get(json_object_get(obj, "spec"), "nodeSelector"), k, v)
            add_selkey(lc, k);
        json_array_foreach(required_terms(obj), t, term)
            json_array_foreach(json_object_get(term, "matchExpressions"), j, x)
                add_selkey(lc, json_string_value(json_object_get(x, "key")));
    }
}

/* Node n's values of the selected labels into its group's shape (key and labels). */
static void node_labels(const struct live *lc, const struct gs_kube_node *n, struct ngroup *g)
{
    for (int i = 0; i < lc->nselkey; i++) {
        const char *v = gs_kube_label(n, lc->selkey[i]);
        if (!v || !plain_label(v, GS_LABEL_VAL_MAX))
            continue;
        struct gs_label *l = &g->labels[g->nlabels++];
        snprintf(l->key, sizeof(l->key), "%s", lc->selkey[i]);
        snprintf(l->val, sizeof(l->val), "%s", v);
        size_t o = strlen(g->key);
        snprintf(g->key + o, sizeof(g->key) - o, "|%s=%s", lc->selkey[i], v);
    }
}

/* One matchExpressions entry as scenario YAML. Returns 0 or 1 (cannot be written). */
static int write_expr(const json_t *x, struct gs_buf *o)
{
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    const char *key = json_string_value(json_object_get(x, "key"));
    const char *op = json_string_value(json_object_get(x, "operator"));
    const json_t *vals = json_object_get(x, "values");
    size_t known = 0;
    while (op && known < 6 && strcmp(ops[known], op) != 0)
        known++;
    size_t nv = json_array_size(vals);
    if (!key || !op || !plain_label(key, GS_LABEL_KEY_MAX) || known == 6 || nv > GS_SC_MAX_VALS)
        return 1;
    /* the values each operator takes, as the API server (and the scenario reader) validate a
     * node selector requirement */
    int64_t num;
    if ((known < 2 && nv == 0) || (known >= 2 && known < 4 && nv) ||
        (known >= 4 && (nv != 1 || !json_is_string(json_array_get(vals, 0)) ||
                        !gs_kreq_parse_num(json_string_value(json_array_get(vals, 0)), &num))))
        return 1;
    int e = gs_buf_printf(o, "{key: \"%s\", operator: %s", key, op);
    if (json_array_size(vals))
        e |= gs_buf_puts(o, ", values: [");
    size_t i;
    const json_t *v;
    json_array_foreach(vals, i, v)
    {
        const char *s = json_string_value(v);
        if (!s || !plain_label(s, GS_LABEL_VAL_MAX))
            return 1;
        e |= gs_buf_printf(o, "%s\"%s\"", i ? ", " : "", s);
    }
    if (json_array_size(vals))
        e |= gs_buf_puts(o, "]");
    return e || gs_buf_puts(o, "}") ? 1 : 0;
}

/* Pod obj's nodeSelector and required node affinity as a class's scenario lines into out
 * ("" when it has neither). Returns 0, or 1 when they cannot be written as a scenario holds
 * them (out is then ""). */
static int pod_constraints(const json_t *obj, char *out, size_t size)
{
    struct gs_buf o;
    gs_buf_init(&o, 0);
    int bad = 0;
    const json_t *sel = json_object_get(json_object_get(obj, "spec"), "nodeSelector");
    if (json_object_size(sel) > GS_SC_MAX_NODESEL)
        bad = 1;
    const char *k;
    const json_t *v;
    int n = 0;
    json_object_foreach((json_t *)sel, k, v)
    {
        const char *s = json_string_value(v);
        if (!s || !plain_label(k, GS_LABEL_KEY_MAX) || !plain_label(s, GS_LABEL_VAL_MAX))
            bad = 1;
        else
            bad |= gs_buf_printf(&o, "%s\"%s\": \"%s\"", n++ ? ", " : "    node_selector: {", k,
                                 s) != 0;
    }
    if (n)
        bad |= gs_buf_puts(&o, "}\n") != 0;
    const json_t *terms = required_terms(obj);
    if (json_array_size(terms) > GS_SC_MAX_TERMS)
        bad = 1;
    if (json_array_size(terms))
        bad |= gs_buf_puts(&o, "    node_affinity:\n") != 0;
    size_t t, j;
    const json_t *term, *x;
    json_array_foreach(terms, t, term)
    {
        const json_t *ex = json_object_get(term, "matchExpressions");
        if (json_array_size(json_object_get(term, "matchFields")) || !json_array_size(ex) ||
            json_array_size(ex) > GS_SC_MAX_EXPRS) {
            bad = 1;
            break;
        }
        bad |= gs_buf_puts(&o, "      - matchExpressions: [") != 0;
        json_array_foreach(ex, j, x)
        {
            bad |= j && gs_buf_puts(&o, ", ");
            bad |= write_expr(x, &o);
        }
        bad |= gs_buf_puts(&o, "]\n") != 0;
    }
    bad |= o.len >= size;
    snprintf(out, size, "%s", bad || !o.data ? "" : o.data);
    gs_buf_release(&o);
    return bad;
}

/* Count node n into its group, a new one when its shape is new: the group's index, or -1
 * when left out (noted). *oom is set when the node's name could not be recorded. */
static int group_add(struct live *lc, const struct gs_kube_node *n, const struct ngroup *g,
                     bool *oom)
{
    int k = 0;
    while (k < lc->ng && strcmp(lc->grp[k].key, g->key) != 0)
        k++;
    if (k == lc->ng) {
        if (lc->ng == MAX_NODE_GROUPS) {
            gs_buf_printf(&lc->notes, "# node %s left out: more than %d node groups\n", n->name,
                          MAX_NODE_GROUPS);
            return -1;
        }
        struct ngroup *grp = lc->grp;
        int ng = lc->ng;
        grp[ng] = *g;
        gs_buf_init(&grp[ng].names, 0);
        char base[40];
        sanitize(gs_catalog_get(g->model)->name, base, sizeof(base));
        int same = 0;
        for (int j = 0; j < ng; j++)
            same += strncmp(grp[j].name, base, strlen(base)) == 0;
        if (same)
            snprintf(grp[ng].name, sizeof(grp[ng].name), "%s-%d", base, same + 1);
        else
            snprintf(grp[ng].name, sizeof(grp[ng].name), "%s", base);
        lc->ng++;
    } else {
        if (g->cpu_milli < lc->grp[k].cpu_milli)
            lc->grp[k].cpu_milli = g->cpu_milli;
        if (g->mem_mib < lc->grp[k].mem_mib)
            lc->grp[k].mem_mib = g->mem_mib;
    }
    lc->grp[k].nodes++;
    char safe[GS_KNAME_MAX]; /* names go into YAML comments and a shell script */
    sanitize(n->name, safe, sizeof(safe));
    if (gs_buf_printf(&lc->grp[k].names, "%s%s", lc->grp[k].names.len ? " " : "", safe))
        *oom = true;
    return k;
}

/* The nodes into groups (lc->ngi[i]: node i's group, -1 when left out). Returns 0 or an error
 * in err. */
static int read_nodes(struct live *lc, const json_t *nodes, struct gs_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < lc->nn && !rc; i++) {
        struct gs_kube_node n;
        struct gs_error e;
        gs_error_init(&e);
        lc->ngi[i] = -1;
        if (gs_kube_node_read(json_array_get(nodes, i), &n, &e)) {
            gs_buf_printf(&lc->notes, "# node left out: %s\n", e.msg);
            continue;
        }
        snprintf(lc->nname[i], sizeof(lc->nname[i]), "%s", n.name);
        struct ngroup g;
        int s = node_setup(&n, lc->live, &g);
        if (!s)
            node_labels(lc, &n, &g);
        if (s == 2) {
            const char *p = gs_kube_label(&n, "nvidia.com/gpu.product");
            gs_buf_printf(&lc->notes,
                          "# node %s left out: GPU model '%s' is not in gpusched's catalog\n",
                          n.name, p ? p : "(no nvidia.com/gpu.product label)");
            lc->skipped_models++;
        }
        if (s) {
            gs_kube_node_release(&n);
            continue;
        }
        bool oom = false;
        int k = group_add(lc, &n, &g, &oom);
        if (oom)
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        if (k >= 0)
            lc->ngi[i] = k;
        gs_kube_node_release(&n);
    }
    if (!rc && lc->ng == 0)
        rc = gs_error_set(err, GS_EINVAL,
                          "no GPU node of a known model in the cluster (%d left out for their "
                          "model): nothing to advise on",
                          lc->skipped_models);
    return rc;
}

/* A new class for pod p (its key, owner and shape), or NULL when MAX_SEEN are taken. */
static struct pclass *class_new(struct live *lc, const json_t *obj, const struct gs_kube_pod *p,
                                const char *key, const char *okind, const char *oname, bool service)
{
    if (lc->nc == MAX_SEEN)
        return NULL;
    struct pclass *cls = lc->cls;
    struct pclass *c = &cls[lc->nc++];
    int nc = lc->nc;
    snprintf(c->key, sizeof(c->key), "%s", key);
    sanitize(p->ns, c->ns, sizeof(c->ns)); /* a DNS label from a real API server */
    char nm[200];
    snprintf(nm, sizeof(nm), "%s-%s", p->ns, oname);
    sanitize(nm, c->name, 48);
    for (int j = 0, dup = 1; j < nc - 1; j++)
        if (strcmp(cls[j].name, c->name) == 0) {
            char b[56];
            snprintf(b, sizeof(b), "%.44s-%d", c->name, ++dup);
            snprintf(c->name, sizeof(c->name), "%s", b);
            j = -1;
        }
    int kk = class_kind(label_of(obj, "labels", "gpusched.io/workload-kind"));
    c->kind = kk >= 0                     ? kk
              : service                   ? GS_KIND_ONLINE
              : strcmp(okind, "Job") == 0 ? GS_KIND_TRAINING
                                          : GS_KIND_DEV;
    c->service = service;
    c->gpus = p->req.kind == GS_REQ_MIG ? 1 : p->req.gpus;
    if (p->req.kind == GS_REQ_MIG)
        snprintf(c->mig, sizeof(c->mig), "%s", p->req.mig);
    c->cpu_milli = p->req.cpu_milli;
    c->mem_mib = p->req.mem_mib;
    c->priority = p->priority;
    const char *cons = strrchr(key, '|'); /* the key ends in the constraints ('|' in none) */
    snprintf(c->cons, sizeof(c->cons), "%s", cons ? cons + 1 : "");
    return c;
}

/* One GPU pod counted into its class c: priority, arrivals, utilisation, sharing, run times.
 * Returns 0 or GS_ENOMEM. */
static int class_count(struct live *lc, struct pclass *c, const json_t *obj,
                       const struct gs_kube_pod *p, bool live, bool recent, double now_s)
{
    if (p->priority > c->priority)
        c->priority = p->priority;
    if (recent)
        c->created++;
    if (live)
        c->current++;
    c->gpu_weight += gs_request_units(&p->req, -1);
    const char *u = label_of(obj, "annotations", "gpusched.io/gpu-utilization");
    if (u) {
        char *end;
        double v = strtod(u, &end);
        if (end != u && !*end && v >= 0 && v <= 1) {
            c->util_sum += v;
            c->util_n++;
        }
    }
    for (size_t j = 0; p->node[0] && j < lc->nn; j++)
        if (strcmp(lc->nname[j], p->node) == 0 && lc->ngi[j] >= 0 && !c->mig[0]) {
            int s = lc->grp[lc->ngi[j]].sharing;
            c->share |= (uint8_t)(s == 1 ? 1 : s == 2 ? 2 : 0);
        }
    double started = time_field(obj, "status", "startTime");
    double fin = finished_at(obj);
    if (!live && started > 0 && fin > started) {
        if (add_dur(c, fin - started))
            return GS_ENOMEM;
    } else if (live && started > 0 && now_s > started) {
        c->age_sum += now_s - started;
        c->nage++;
    }
    return 0;
}

/* The GPU pods that run, wait or were created in the window, into classes by namespace,
 * owner and shape. Returns 0 or an error in err. */
static int read_pods(struct live *lc, const json_t *pods, double now_s, double window_s,
                     struct gs_error *err)
{
    int rc = 0;
    size_t np = json_array_size(pods);
    for (size_t i = 0; i < np && !rc; i++) {
        const json_t *obj = json_array_get(pods, i);
        struct gs_kube_pod p;
        struct gs_error e;
        gs_error_init(&e);
        if (gs_kube_pod_read(obj, &p, &e))
            continue;
        bool gpu = (p.req.kind == GS_REQ_GPU && p.req.gpus > 0) || p.req.kind == GS_REQ_MIG;
        if (!gpu)
            continue;
        double created = time_field(obj, "metadata", "creationTimestamp");
        bool live =
            strcmp(p.phase, "Pending") == 0 || strcmp(p.phase, "Running") == 0 || !p.phase[0];
        bool recent = created > 0 && created >= now_s - window_s;
        if (!live && !recent)
            continue;
        lc->gpu_pods++;
        char okind[32], oname[GS_KNAME_MAX];
        owner_of(obj, okind, sizeof(okind), oname, sizeof(oname));
        bool service = strcmp(okind, "Deployment") == 0 || strcmp(okind, "StatefulSet") == 0;
        char cons[CONS_MAX], key[512 + CONS_MAX];
        if (pod_constraints(obj, cons, sizeof(cons)))
            gs_buf_printf(&lc->notes,
                          "# pod %s/%s: its nodeSelector or required node affinity is left out "
                          "(beyond what a scenario class holds: at most %d labels, %d terms of %d "
                          "expressions of %d values, no matchFields)\n",
                          p.ns, p.name, GS_SC_MAX_NODESEL, GS_SC_MAX_TERMS, GS_SC_MAX_EXPRS,
                          GS_SC_MAX_VALS);
        snprintf(key, sizeof(key), "%s|%s|%s|%d|%s|%lld|%lld|%s", p.ns, okind, oname,
                 p.req.kind == GS_REQ_MIG ? 1 : p.req.gpus,
                 p.req.kind == GS_REQ_MIG ? p.req.mig : "", (long long)p.req.cpu_milli,
                 (long long)p.req.mem_mib, cons);
        int k = 0;
        while (k < lc->nc && strcmp(lc->cls[k].key, key) != 0)
            k++;
        struct pclass *c =
            k < lc->nc ? &lc->cls[k] : class_new(lc, obj, &p, key, okind, oname, service);
        if (!c) {
            lc->dropped++;
            continue;
        }
        if (class_count(lc, c, obj, &p, live, recent, now_s))
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    if (!rc && lc->gpu_pods == 0)
        rc = gs_error_set(err, GS_EINVAL,
                          "no pod in the cluster asks for GPUs (running, pending, or created in "
                          "the last %.0fs): no workload to simulate",
                          window_s);
    return rc;
}

/* The scenario's head: what it was made from, the notes, the run settings and the MIG
 * layouts of the groups that have MIG GPUs. Returns nonzero when y ran out of memory. */
static int write_head(struct gs_buf *y, const struct live *lc, double window_s)
{
    const struct ngroup *grp = lc->grp;
    int ng = lc->ng;
    char dur[32];
    fmt_s(window_s, dur, sizeof(dur));
    int e = gs_buf_printf(y,
                          "# gpusched advise cluster: the live cluster as a scenario: %d node "
                          "group%s, %d GPU pods over the last %.0fs\n",
                          ng, ng == 1 ? "" : "s", lc->gpu_pods, window_s);
    e |= gs_buf_puts(y, lc->notes.data ? lc->notes.data : "");
    e |= gs_buf_printf(y,
                       "name: live-cluster\nseed: 42\nduration: %s\n"
                       "# no warm-up: the pods that run or wait now are there from the start,\n"
                       "# and their waits count\n"
                       "warmup: 0s\n"
                       "sla: {online_wait: 30s, online_min_speed: 0.8}\n",
                       dur);
    bool any_mig = false;
    for (int g = 0; g < ng; g++)
        for (int i = 0; i < grp[g].gpus; i++)
            any_mig |= grp[g].mig[i];
    if (!any_mig)
        return e;
    e |= gs_buf_puts(y, "mig_configs:\n  version: v1\n  mig-configs:\n");
    for (int g = 0; g < ng; g++) {
        bool m = false;
        for (int i = 0; i < grp[g].gpus; i++)
            m |= grp[g].mig[i];
        if (!m)
            continue;
        const struct gs_gpu_model *mod = gs_catalog_get(grp[g].model);
        e |= gs_buf_printf(y, "    live-%s:\n", grp[g].name);
        for (int i = 0; i < grp[g].gpus; i++) {
            e |= gs_buf_printf(y, "      - devices: [%d]\n        mig-enabled: %s\n", i,
                               grp[g].mig[i] ? "true" : "false");
            if (!grp[g].mig[i])
                continue;
            e |= gs_buf_puts(y, "        mig-devices:\n");
            for (int p = 0; p < mod->nprofiles; p++)
                if (grp[g].layout[i].count[p])
                    e |= gs_buf_printf(y, "          \"%s\": %u\n", mod->profiles[p].name,
                                       grp[g].layout[i].count[p]);
        }
    }
    return e;
}

/* The node groups, one line each with their nodes' names in a comment. */
static int write_groups(struct gs_buf *y, const struct live *lc)
{
    int e = gs_buf_puts(y, "node_groups:\n");
    for (int g = 0; g < lc->ng; g++) {
        const struct ngroup *x = &lc->grp[g];
        bool m = false;
        for (int i = 0; i < x->gpus; i++)
            m |= x->mig[i];
        e |= gs_buf_printf(
            y, "  - {name: %s, gpu: %s, nodes: %d, gpus: %d, cpu: %lldm, memory: %lldMi", x->name,
            gs_catalog_get(x->model)->name, x->nodes, x->gpus,
            (long long)(x->cpu_milli > 0 ? x->cpu_milli : 1000),
            (long long)(x->mem_mib > 0 ? x->mem_mib : 1024));
        if (m)
            e |= gs_buf_printf(y, ", mig_config: live-%s", x->name);
        if (x->sharing)
            e |= gs_buf_printf(y, ", sharing: %s, replicas: %d",
                               x->sharing == 1 ? "timeslicing" : "mps", x->replicas);
        for (int l = 0; l < x->nlabels; l++)
            e |= gs_buf_printf(y, "%s\"%s\": \"%s\"", l ? ", " : ", labels: {", x->labels[l].key,
                               x->labels[l].val);
        e |= gs_buf_printf(y, "%s}   # %s\n", x->nlabels ? "}" : "",
                           x->names.data ? x->names.data : "");
    }
    return e;
}

/* A class's arrivals and run times: replicas that run through the window, or Poisson
 * arrivals at the rate seen with the run times seen (lognormal when they vary). */
static int write_arrivals(struct gs_buf *y, const struct pclass *c, double window_s)
{
    int e = 0;
    char d1[32], d2[32];
    if (c->service || c->created == 0) {
        /* replicas that run through the window (or pods all older than it) */
        int n = c->current > 0 ? c->current : c->created;
        double life = c->service || !c->nage ? 2 * window_s : c->age_sum / c->nage;
        fmt_s(life, d1, sizeof(d1));
        return gs_buf_printf(y,
                             "    arrival: {process: fixed, interval: 0s}\n    max_jobs: %d\n"
                             "    duration: {dist: fixed, mean: %s}\n",
                             n > 0 ? n : 1, d1);
    }
    e |= gs_buf_printf(y, "    arrival: {process: poisson, per_hour: %.4g}\n",
                       c->created / (window_s / 3600));
    if (c->ndur >= 2) {
        double sl = 0, sl2 = 0;
        for (int i = 0; i < c->ndur; i++) {
            double l = log(c->dur[i] > 1 ? c->dur[i] : 1);
            sl += l;
            sl2 += l * l;
        }
        double mu = sl / c->ndur, var = sl2 / c->ndur - mu * mu;
        double sigma = var > 0 ? sqrt(var) : 0;
        if (sigma < 0.05) {
            fmt_s(exp(mu), d1, sizeof(d1));
            e |= gs_buf_printf(y, "    duration: {dist: fixed, mean: %s}\n", d1);
        } else {
            fmt_s(exp(mu), d1, sizeof(d1));
            e |= gs_buf_printf(y, "    duration: {dist: lognormal, median: %s, sigma: %.3f}\n", d1,
                               sigma > 2 ? 2 : sigma);
        }
    } else {
        double d = c->ndur == 1 ? c->dur[0] : c->nage ? c->age_sum / c->nage : 3600;
        fmt_s(d, d2, sizeof(d2));
        e |= gs_buf_printf(y, "    duration: {dist: fixed, mean: %s}\n", d2);
    }
    return e;
}

/* One class (tenant named when there are several tenants). */
static int write_class(struct gs_buf *y, const struct pclass *c, int nt, double window_s)
{
    int e = gs_buf_printf(y, "  - name: %s\n", c->name);
    if (nt > 1)
        e |= gs_buf_printf(y, "    tenant: %s\n", c->ns);
    e |= gs_buf_printf(y, "    kind: %s\n    priority: %d\n", kind_name(c->kind), c->priority);
    e |= write_arrivals(y, c, window_s);
    e |= gs_buf_printf(y, "    request: {gpus: %d, cpu: %lldm, memory: %lldMi", c->gpus,
                       (long long)c->cpu_milli, (long long)c->mem_mib);
    if (c->mig[0])
        e |= gs_buf_printf(y, ", mig: %s", c->mig);
    if (c->share)
        e |= gs_buf_printf(y, ", share: %s",
                           c->share == 3   ? "true"
                           : c->share == 1 ? "timeslicing"
                                           : "mps");
    static const double util_default[] = {0.3, 0.5, 0.8, 0.1};
    double util = c->util_n ? c->util_sum / c->util_n : util_default[c->kind & 3];
    if (!c->util_n && c->mig[0]) {
        /* a slice's pod is busy within its slice: the default is at most the slice's share
         * of the GPU (of the first model that has the profile) */
        for (int m = 0; m < gs_catalog_count(); m++) {
            int pi = gs_catalog_find_profile(m, c->mig);
            if (pi < 0)
                continue;
            double f = gs_mig_profile_compute_share(&gs_catalog_get(m)->profiles[pi]);
            if (util > f)
                util = f;
            break;
        }
    }
    e |= gs_buf_printf(y, "}\n    util: %.3g\n", util < 0.01 ? 0.01 : util);
    return e | gs_buf_puts(y, c->cons);
}

int gs_cluster_scenario(const json_t *nodes, const json_t *pods, double now_s, double window_s,
                        struct gs_buf *y, char **node_names, struct gs_error *err)
{
    return gs_cluster_scenario_live(nodes, pods, NULL, now_s, window_s, y, node_names, err);
}

int gs_cluster_scenario_live(const json_t *nodes, const json_t *pods, const struct gs_cluster *live,
                             double now_s, double window_s, struct gs_buf *y, char **node_names,
                             struct gs_error *err)
{
    struct live lc = {.live = live};
    lc.grp = calloc(MAX_NODE_GROUPS, sizeof(*lc.grp));
    lc.cls = calloc(MAX_SEEN, sizeof(*lc.cls));
    lc.nn = json_array_size(nodes);
    lc.nname = calloc(lc.nn ? lc.nn : 1, sizeof(*lc.nname));
    lc.ngi = calloc(lc.nn ? lc.nn : 1, sizeof(int));
    int rc = 0;
    gs_buf_init(&lc.notes, 0);
    if (!lc.grp || !lc.cls || !lc.nname || !lc.ngi) {
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        goto out;
    }
    collect_selkeys(&lc, pods);
    rc = read_nodes(&lc, nodes, err);
    if (!rc)
        rc = read_pods(&lc, pods, now_s, window_s, err);
    if (rc)
        goto out;
    qsort(lc.cls, (size_t)lc.nc, sizeof(*lc.cls), cmp_weight);
    if (lc.nc > MAX_CLASSES) {
        for (int k = MAX_CLASSES; k < lc.nc; k++)
            gs_buf_printf(&lc.notes, "# workload left out (only the %d largest are kept): %s\n",
                          MAX_CLASSES, lc.cls[k].name);
        lc.dropped += lc.nc - MAX_CLASSES;
    }
    int keep = lc.nc < MAX_CLASSES ? lc.nc : MAX_CLASSES;
    /* a workload asking a MIG profile no node group's GPU has cannot run here (the scenario
     * reader refuses such a class): left out, and noted */
    bool out_cls[MAX_CLASSES] = {0};
    for (int k = 0; k < keep; k++) {
        bool offered = !lc.cls[k].mig[0];
        for (int g = 0; !offered && g < lc.ng; g++)
            offered = gs_catalog_find_profile(lc.grp[g].model, lc.cls[k].mig) >= 0;
        if (offered)
            continue;
        out_cls[k] = true;
        lc.dropped++;
        gs_buf_printf(&lc.notes,
                      "# workload left out: %s asks nvidia.com/mig-%s, which no node's GPU has\n",
                      lc.cls[k].name, lc.cls[k].mig);
    }
    /* namespaces as tenants */
    char tenants[GS_SC_MAX_TENANTS][64];
    int nt = 0;
    for (int k = 0; k < keep; k++) {
        if (out_cls[k])
            continue;
        int t = 0;
        while (t < nt && strcmp(tenants[t], lc.cls[k].ns) != 0)
            t++;
        if (t == nt && nt < GS_SC_MAX_TENANTS)
            snprintf(tenants[nt++], sizeof(tenants[0]), "%s", lc.cls[k].ns);
    }
    int e = write_head(y, &lc, window_s);
    e |= write_groups(y, &lc);
    if (nt > 1) {
        e |= gs_buf_puts(y, "tenants:\n");
        for (int t = 0; t < nt; t++)
            e |= gs_buf_printf(y, "  - {name: %s, namespace: %s}\n", tenants[t], tenants[t]);
    }
    e |= gs_buf_puts(y, "classes:\n");
    for (int k = 0; k < keep; k++)
        if (!out_cls[k])
            e |= write_class(y, &lc.cls[k], nt, window_s);
    if (e)
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    for (int g = 0; !rc && node_names && g < lc.ng; g++) {
        node_names[g] = strdup(lc.grp[g].names.data ? lc.grp[g].names.data : "");
        if (!node_names[g])
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    }
out:
    for (int g = 0; lc.grp && g < lc.ng; g++)
        gs_buf_release(&lc.grp[g].names);
    for (int k = 0; lc.cls && k < lc.nc; k++)
        free(lc.cls[k].dur);
    gs_buf_release(&lc.notes);
    free(lc.grp);
    free(lc.cls);
    free(lc.nname);
    free(lc.ngi);
    return rc;
}
