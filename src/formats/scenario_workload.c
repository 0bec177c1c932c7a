/* scenario_workload.c - the workload part of a scenario file (scenario.h): classes of pods
 * (arrival, duration, request) and openb traces, read by the table-driven walk of scenario.c
 * (scenario_internal.h). A class that runs as a service reads its service block through
 * scenario_service.c. */
#include "scenario_internal.h"

#include "../base/error.h"
#include "../core/catalog.h"
#include "../core/kpod.h"
#include "migparted.h"
#include "openb.h"

#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- classes ---- */

static int c_name(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, CLS(o)->name, GS_NAME_MAX, c->err);
}
static int c_tenant(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[GS_NAME_MAX];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    for (int i = 0; i < c->sc->ntenants; i++)
        if (strcmp(c->sc->tenants[i].name, b) == 0) {
            CLS(o)->tenant = i;
            return 0;
        }
    return gs_yaml_fail(&c->y, v, p, c->err, "unknown tenant '%s' (declare it under tenants)", b);
}
static int c_kind(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[32];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    for (int k = 0; k <= GS_KIND_DEV; k++)
        if (strcmp(b, gs_class_kind_name((enum gs_class_kind)k)) == 0) {
            CLS(o)->kind = (enum gs_class_kind)k;
            return 0;
        }
    return gs_yaml_fail(&c->y, v, p, c->err,
                        "'%s': expected online-inference, batch-inference, training or "
                        "development",
                        b);
}
static int c_priority(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    char b[32];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    /* the article's PriorityClasses by name, or a number */
    if (strcmp(b, "gpu-critical") == 0)
        n = 1000000;
    else if (strcmp(b, "gpu-high") == 0)
        n = 900000;
    else if (strcmp(b, "gpu-low") == 0)
        n = 100000;
    else if (gs_yaml_int(&c->y, v, p, -2147483647, 1000000000, &n, c->err))
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "expected a number or gpu-critical, gpu-high, gpu-low");
    CLS(o)->priority = (int32_t)n;
    return 0;
}
static int a_process(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[16];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "poisson") == 0)
        CLS(o)->arrival = GS_ARRIVAL_POISSON;
    else if (strcmp(b, "fixed") == 0)
        CLS(o)->arrival = GS_ARRIVAL_FIXED;
    else
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': expected poisson or fixed", b);
    return 0;
}
static int a_per_hour(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1e6, &CLS(o)->per_hour, c->err);
}
static int a_interval(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_duration(c, v, p, &CLS(o)->interval_s);
}
static int a_start(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_duration(c, v, p, &CLS(o)->start_s);
}
static int a_stop(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_duration(c, v, p, &CLS(o)->stop_s);
}
static const struct gs__sc_field arrival_fields[] = {
    {"process", a_process, true}, {"per_hour", a_per_hour, false}, {"interval", a_interval, false},
    {"start", a_start, false},    {"stop", a_stop, false},
};
static int c_arrival(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (gs__sc_walk(c, v, p, arrival_fields, GS__SC_NFIELDS(arrival_fields), o))
        return GS_EINVAL;
    if (CLS(o)->arrival == GS_ARRIVAL_POISSON && CLS(o)->per_hour <= 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "poisson arrivals need per_hour > 0");
    if (CLS(o)->arrival == GS_ARRIVAL_FIXED && CLS(o)->interval_s < 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "fixed arrivals need interval >= 0");
    return 0;
}
static int d_dist(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[16];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "fixed") == 0)
        CLS(o)->dist = GS_DIST_FIXED;
    else if (strcmp(b, "exponential") == 0)
        CLS(o)->dist = GS_DIST_EXP;
    else if (strcmp(b, "lognormal") == 0)
        CLS(o)->dist = GS_DIST_LOGNORMAL;
    else
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': expected fixed, exponential or lognormal",
                            b);
    return 0;
}
static int d_mean(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_duration(c, v, p, &CLS(o)->mean_s);
}
static int d_median(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_duration(c, v, p, &CLS(o)->median_s);
}
static int d_sigma(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 5, &CLS(o)->sigma, c->err);
}
static const struct gs__sc_field duration_fields[] = {
    {"dist", d_dist, true},
    {"mean", d_mean, false},
    {"median", d_median, false},
    {"sigma", d_sigma, false},
};
static int c_duration(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (gs__sc_walk(c, v, p, duration_fields, GS__SC_NFIELDS(duration_fields), o))
        return GS_EINVAL;
    struct gs_sc_class *k = CLS(o);
    if (k->dist == GS_DIST_LOGNORMAL ? k->median_s <= 0 : k->mean_s <= 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "%s durations need %s > 0",
                            k->dist == GS_DIST_LOGNORMAL ? "lognormal" : "fixed/exponential",
                            k->dist == GS_DIST_LOGNORMAL ? "median" : "mean");
    return 0;
}
static int r_gpus(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 0, GS_MAX_GPUS_NODE, &n, c->err))
        return GS_EINVAL;
    CLS(o)->gpus = (int)n;
    return 0;
}
static int r_cpu(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_quantity(c, v, p, 1, true, &CLS(o)->cpu_milli);
}
static int r_mem(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_quantity(c, v, p, 1 << 20, false, &CLS(o)->mem_mib);
}
static int r_gmem(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t m = 0;
    if (gs__sc_quantity(c, v, p, 1 << 20, false, &m))
        return GS_EINVAL;
    if (m > 1 << 22)
        return gs_yaml_fail(&c->y, v, p, c->err, "more than 4Ti of GPU memory");
    CLS(o)->gpu_mem_mib = (int32_t)m;
    return 0;
}
static int r_mig(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char *dst = CLS(o)->mig;
    if (gs_yaml_str(&c->y, v, p, dst, sizeof(CLS(o)->mig), c->err))
        return GS_EINVAL;
    /* a name of the MIG form that no node group's GPU has is refused once the node groups
     * are known, with their profiles and the closest one (scenario.c) */
    if (gs_mig_profile_syntax_ok(dst))
        return 0;
    for (int m = 0; m < gs_catalog_count(); m++)
        if (gs_catalog_find_profile(m, dst) >= 0)
            return 0;
    return gs_yaml_fail(&c->y, v, p, c->err,
                        "'%s' is not a MIG profile of any known GPU (e.g. 1g.10gb, 3g.40gb)", dst);
}
static int r_share(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[16];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "true") == 0)
        CLS(o)->share = 3;
    else if (strcmp(b, "false") == 0)
        CLS(o)->share = 0;
    else if (strcmp(b, "timeslicing") == 0 || strcmp(b, "time-slicing") == 0)
        CLS(o)->share = 1;
    else if (strcmp(b, "mps") == 0)
        CLS(o)->share = 2;
    else
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': expected true, false, timeslicing or mps",
                            b);
    return 0;
}
static int cl_class(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_claim *cl = &CLS(o)->claim;
    return gs_yaml_str(&c->y, v, p, cl->device_class, sizeof(cl->device_class), c->err);
}
static int cl_selector(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_claim *cl = &CLS(o)->claim;
    return gs_yaml_str(&c->y, v, p, cl->selector, sizeof(cl->selector), c->err);
}
static int cl_count(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 1, 8, &n, c->err))
        return GS_EINVAL;
    CLS(o)->claim.count = (int)n;
    return 0;
}
static const struct gs__sc_field claim_fields[] = {
    {"device_class", cl_class, true},
    {"selector", cl_selector, false},
    {"count", cl_count, false},
};
static int r_claim(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    CLS(o)->claim.count = 1;
    return gs__sc_walk(c, v, p, claim_fields, GS__SC_NFIELDS(claim_fields), o);
}
static const struct gs__sc_field request_fields[] = {
    {"gpus", r_gpus, false},       {"cpu", r_cpu, false}, {"memory", r_mem, false},
    {"gpu_memory", r_gmem, false}, {"mig", r_mig, false}, {"share", r_share, false},
    {"claim", r_claim, false},
};
static int c_request(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (gs__sc_walk(c, v, p, request_fields, GS__SC_NFIELDS(request_fields), o))
        return GS_EINVAL;
    const struct gs_sc_class *k = CLS(o);
    if (k->claim.count > 0 && (k->gpus > 0 || k->mig[0] || k->share || k->gpu_mem_mib))
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "a claim is the pod's devices: drop gpus, mig, share and gpu_memory");
    return 0;
}
static int c_util(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0.001, 1.0, &CLS(o)->util, c->err);
}
static int c_max(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 1, 10000000, &n, c->err))
        return GS_EINVAL;
    CLS(o)->max_jobs = (int)n;
    return 0;
}
static int c_gang(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 1, 64, &n, c->err))
        return GS_EINVAL;
    CLS(o)->gang = (int)n;
    return 0;
}
/* A value of nvidia.com/gpu.product written as a catalog name (H100-80GB) becomes the product
 * label the simulator's nodes carry, as the engine's selector filter resolves it. */
static void product_value(const char *key, char *val, size_t size)
{
    int m = strcmp(key, "nvidia.com/gpu.product") == 0 ? gs_catalog_find(val) : -1;
    if (m >= 0)
        snprintf(val, size, "%s", gs_catalog_get(m)->product);
}
static int c_node_sel(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_class *k = CLS(o);
    if (!gs_yaml_is_map(v))
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a map of label to value");
    void *it = NULL;
    struct fy_node_pair *pr;
    while ((pr = fy_node_mapping_iterate(v, &it))) {
        if (k->nnode_sel >= GS_SC_MAX_NODESEL)
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err, "more than %d labels",
                                GS_SC_MAX_NODESEL);
        struct gs_label *l = &k->node_sel[k->nnode_sel];
        if (gs_yaml_key(pr, l->key, sizeof(l->key)) || !l->key[0] ||
            gs_yaml_str(&c->y, fy_node_pair_value(pr), p, l->val, sizeof(l->val), c->err))
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err,
                                "labels are strings of at most 63 characters");
        product_value(l->key, l->val, sizeof(l->val));
        k->nnode_sel++;
    }
    return 0;
}

/* one requirement of a node selector term: {key, operator, values} */
static int ex_key(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_expr *e = o;
    if (gs_yaml_str(&c->y, v, p, e->key, sizeof(e->key), c->err))
        return GS_EINVAL;
    return e->key[0] ? 0 : gs_yaml_fail(&c->y, v, p, c->err, "must not be empty");
}
static int ex_op(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    char b[16];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(b, ops[i]) == 0) {
            ((struct gs_sc_expr *)o)->op = (uint8_t)i;
            return 0;
        }
    return gs_yaml_fail(&c->y, v, p, c->err,
                        "'%s': expected In, NotIn, Exists, DoesNotExist, Gt or Lt", b);
}
static int ex_values(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_expr *e = o;
    if (!gs_yaml_is_seq(v))
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a list of values");
    void *it = NULL;
    struct fy_node *x;
    while ((x = fy_node_sequence_iterate(v, &it))) {
        if (e->nvals >= GS_SC_MAX_VALS)
            return gs_yaml_fail(&c->y, x, p, c->err, "more than %d values", GS_SC_MAX_VALS);
        if (gs_yaml_str(&c->y, x, p, e->vals[e->nvals], GS_LABEL_VAL_MAX, c->err))
            return GS_EINVAL;
        e->nvals++;
    }
    return 0;
}
static const struct gs__sc_field expr_fields[] = {
    {"key", ex_key, true}, {"operator", ex_op, true}, {"values", ex_values, false}};
static int term_exprs(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_term *t = o;
    if (!gs_yaml_is_seq(v) || fy_node_sequence_item_count(v) == 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a list of at least one requirement");
    void *it = NULL;
    struct fy_node *x;
    while ((x = fy_node_sequence_iterate(v, &it))) {
        char sub[256];
        snprintf(sub, sizeof(sub), "%s[%d]", p, t->nexprs);
        if (t->nexprs >= GS_SC_MAX_EXPRS)
            return gs_yaml_fail(&c->y, x, sub, c->err, "more than %d requirements",
                                GS_SC_MAX_EXPRS);
        struct gs_sc_expr *e = &t->expr[t->nexprs];
        memset(e, 0, sizeof(*e));
        if (gs__sc_walk(c, x, sub, expr_fields, GS__SC_NFIELDS(expr_fields), e))
            return GS_EINVAL;
        /* as the API server validates a node selector requirement */
        int64_t num;
        bool in = e->op == GS_KOP_IN || e->op == GS_KOP_NOTIN;
        bool cmp = e->op == GS_KOP_GT || e->op == GS_KOP_LT;
        if (in && e->nvals == 0)
            return gs_yaml_fail(&c->y, x, sub, c->err, "In and NotIn need values");
        if (!in && !cmp && e->nvals)
            return gs_yaml_fail(&c->y, x, sub, c->err, "Exists and DoesNotExist take no values");
        if (cmp && (e->nvals != 1 || !gs_kreq_parse_num(e->vals[0], &num)))
            return gs_yaml_fail(&c->y, x, sub, c->err, "Gt and Lt take one integer value");
        for (int i = 0; i < e->nvals; i++)
            product_value(e->key, e->vals[i], sizeof(e->vals[i]));
        t->nexprs++;
    }
    return 0;
}
static const struct gs__sc_field term_fields[] = {{"matchExpressions", term_exprs, true}};
static int c_node_aff(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_class *k = CLS(o);
    if (!gs_yaml_is_seq(v) || fy_node_sequence_item_count(v) == 0)
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "expected a list of at least one node selector term");
    void *it = NULL;
    struct fy_node *x;
    while ((x = fy_node_sequence_iterate(v, &it))) {
        char sub[200];
        snprintf(sub, sizeof(sub), "%s[%d]", p, k->nterms);
        if (k->nterms >= GS_SC_MAX_TERMS)
            return gs_yaml_fail(&c->y, x, sub, c->err, "more than %d terms", GS_SC_MAX_TERMS);
        memset(&k->term[k->nterms], 0, sizeof(k->term[0]));
        if (gs__sc_walk(c, x, sub, term_fields, GS__SC_NFIELDS(term_fields), &k->term[k->nterms]))
            return GS_EINVAL;
        k->nterms++;
    }
    return 0;
}
/* arrival and duration are required of classes that are not services (s_classes checks) */
static const struct gs__sc_field class_fields[] = {
    {"gang", c_gang, false},
    {"name", c_name, true},
    {"tenant", c_tenant, false},
    {"kind", c_kind, true},
    {"priority", c_priority, false},
    {"arrival", c_arrival, false},
    {"duration", c_duration, false},
    {"request", c_request, true},
    {"util", c_util, false},
    {"max_jobs", c_max, false},
    {"service", gs__sc_service, false},
    {"node_selector", c_node_sel, false},
    {"node_affinity", c_node_aff, false},
};

static void init_class(void *o)
{
    memset(o, 0, sizeof(struct gs_sc_class));
    CLS(o)->tenant = -1;
    CLS(o)->util = 0.5;
    CLS(o)->cpu_milli = 4000;
    CLS(o)->mem_mib = 16 * 1024;
}
int gs__sc_classes(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (gs__sc_list(c, v, p, SC(o)->classes, sizeof(struct gs_sc_class),
                    offsetof(struct gs_sc_class, name), &SC(o)->nclasses, GS_SC_MAX_CLASSES,
                    class_fields, GS__SC_NFIELDS(class_fields), init_class))
        return GS_EINVAL;
    /* a class is a stream of pods (arrival, duration) or a service (its replicas neither
     * arrive nor finish: the load drives them) */
    int nsvc = 0;
    for (int k = 0; k < SC(o)->nclasses; k++) {
        const struct gs_sc_class *cl = &SC(o)->classes[k];
        struct fy_node *e = fy_node_sequence_get_by_index(v, k);
        char sub[128];
        snprintf(sub, sizeof(sub), "%s[%d]", p, k);
        static const char *const stream_keys[] = {"arrival", "duration", "max_jobs", "gang"};
        for (int x = 0; x < 4; x++) {
            struct fy_node_pair *kv =
                fy_node_mapping_lookup_pair_by_string(e, stream_keys[x], (size_t)-1);
            if (!cl->service.on && !kv && x < 2)
                return gs_yaml_fail(&c->y, e, sub, c->err, "missing required field '%s'",
                                    stream_keys[x]);
            if (cl->service.on && kv) {
                char ksub[160];
                snprintf(ksub, sizeof(ksub), "%s.%s", sub, stream_keys[x]);
                return gs_yaml_fail(&c->y, fy_node_pair_key(kv), ksub, c->err,
                                    "a service's replicas neither arrive nor finish (its load "
                                    "and autoscaler drive them): drop '%s'",
                                    stream_keys[x]);
            }
        }
        if (!cl->service.on)
            continue;
        if (cl->kind != GS_KIND_ONLINE)
            return gs_yaml_fail(&c->y, e, sub, c->err,
                                "class '%s': only online-inference classes run as services",
                                cl->name);
        if (++nsvc > GS_SC_MAX_SERVICES)
            return gs_yaml_fail(&c->y, e, sub, c->err, "more than %d services", GS_SC_MAX_SERVICES);
    }
    /* fixed arrivals at interval 0s are a burst of max_jobs pods at once */
    for (int k = 0; k < SC(o)->nclasses; k++) {
        const struct gs_sc_class *cl = &SC(o)->classes[k];
        if (cl->arrival == GS_ARRIVAL_FIXED && cl->interval_s <= 0 && cl->max_jobs <= 0)
            return gs_yaml_fail(&c->y, fy_node_sequence_get_by_index(v, k), p, c->err,
                                "class '%s': fixed arrivals at interval 0s (a burst) need max_jobs",
                                cl->name);
    }
    return 0;
}

struct trace_opts {
    char file[512];
    double scale;
};
static int tr_file(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, ((struct trace_opts *)o)->file, 512, c->err);
}
static int tr_format(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[16];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err) || strcmp(b, "openb") != 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected openb");
    return 0;
}
static int tr_scale(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 1e-9, 1e9, &((struct trace_opts *)o)->scale, c->err);
}
static const struct gs__sc_field trace_fields[] = {
    {"file", tr_file, true}, {"format", tr_format, false}, {"time_scale", tr_scale, false}};
int gs__sc_trace(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct trace_opts t = {.scale = 1.0};
    if (gs__sc_walk(c, v, p, trace_fields, GS__SC_NFIELDS(trace_fields), &t))
        return GS_EINVAL;
    char path[1024];
    if (t.file[0] == '/') {
        snprintf(path, sizeof(path), "%s", t.file);
    } else {
        char dir[512];
        snprintf(dir, sizeof(dir), "%s", c->y.name);
        snprintf(path, sizeof(path), "%s/%s", dirname(dir), t.file);
    }
    struct gs_openb_pod *pods = NULL;
    struct gs_error e2;
    gs_error_init(&e2);
    int n = gs_openb_load_pods(path, &pods, &e2);
    if (n < 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "%s", e2.msg);
    struct gs_sc_trace_pod *tp = calloc((size_t)(n ? n : 1), sizeof(*tp));
    if (!tp) {
        free(pods);
        return gs_error_set(c->err, GS_ENOMEM, "out of memory");
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (pods[i].creation < 0)
            continue;
        struct gs_sc_trace_pod *q = &tp[k++];
        q->arrival_s = (double)pods[i].creation * t.scale;
        double end =
            pods[i].deletion >= 0 ? (double)pods[i].deletion : (double)pods[i].creation + 3600;
        q->duration_s = (end - (double)pods[i].creation) * t.scale;
        if (q->duration_s < 1)
            q->duration_s = 1;
        q->cpu_milli = pods[i].req.cpu_milli;
        q->mem_mib = pods[i].req.mem_mib;
        q->gpus = pods[i].req.gpus;
        q->milli = pods[i].req.milli;
    }
    free(pods);
    free(SC(o)->trace);
    SC(o)->trace = tp;
    SC(o)->ntrace = k;
    return 0;
}
