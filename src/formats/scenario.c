/* scenario.c - reader for simulator scenario files; sim/scenario.c runs what it returns and
 * the embedded default scenario (sim/default_scenario.c) goes through this same parser. */
#include "scenario.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../core/quantity.h"
#include "openb.h"
#include "yaml.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gs_class_kind_name(enum gs_class_kind k)
{
    static const char *n[] = {"online-inference", "batch-inference", "training", "development"};
    return n[k];
}

int gs_parse_duration(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return GS_EINVAL;
    double mul = 1;
    if (*end == '\0' || strcmp(end, "s") == 0)
        mul = 1;
    else if (strcmp(end, "ms") == 0)
        mul = 0.001;
    else if (strcmp(end, "m") == 0)
        mul = 60;
    else if (strcmp(end, "h") == 0)
        mul = 3600;
    else if (strcmp(end, "d") == 0)
        mul = 86400;
    else
        return GS_EINVAL;
    if (v * mul > 1e9)
        return GS_EINVAL;
    *out = v * mul;
    return 0;
}

struct ctx {
    struct gs_yaml y;
    struct gs_error *err;
};

static int get_duration(struct ctx *c, struct fy_node *v, const char *path, double *out)
{
    char b[32];
    if (gs_yaml_str(&c->y, v, path, b, sizeof(b), c->err) || gs_parse_duration(b, out))
        return gs_yaml_fail(&c->y, v, path, c->err,
                            "expected a duration such as 90s, 10m, 2h or 1d");
    return 0;
}

static int get_quantity(struct ctx *c, struct fy_node *v, const char *path, int64_t mul_div,
                        bool milli, int64_t *out)
{
    char b[GS_QUANTITY_MAX_LEN + 1];
    struct gs_quantity q;
    if (gs_yaml_str(&c->y, v, path, b, sizeof(b), c->err) ||
        gs_quantity_parse(b, strlen(b), &q, NULL) || q.nanos < 0)
        return gs_yaml_fail(&c->y, v, path, c->err,
                            "expected a non-negative Kubernetes quantity such as 8, 500m, 64Gi");
    if (milli)
        *out = gs_quantity_milli(&q);
    else
        *out = gs_quantity_value(&q) / mul_div;
    return 0;
}

typedef int (*field_fn)(struct ctx *c, struct fy_node *v, const char *path, void *obj);

struct field {
    const char *key;
    field_fn fn;
    bool required;
};

static int walk(struct ctx *c, struct fy_node *n, const char *path, const struct field *fields,
                size_t nf, void *obj)
{
    if (!gs_yaml_is_map(n))
        return gs_yaml_fail(&c->y, n, path, c->err, "expected a mapping");
    bool seen[32] = {false};
    void *it = NULL;
    struct fy_node_pair *p;
    char key[64], sub[256];
    while ((p = fy_node_mapping_iterate(n, &it))) {
        if (gs_yaml_key(p, key, sizeof(key)))
            return gs_yaml_fail(&c->y, fy_node_pair_key(p), path, c->err, "expected a string key");
        snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", key);
        size_t i;
        for (i = 0; i < nf; i++)
            if (strcmp(fields[i].key, key) == 0)
                break;
        if (i == nf) {
            char list[512];
            size_t o = 0;
            for (size_t k = 0; k < nf && o < sizeof(list); k++)
                o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", k ? ", " : "",
                                      fields[k].key);
            return gs_yaml_fail(&c->y, fy_node_pair_key(p), sub, c->err,
                                "unexpected field (expected one of: %s)", list);
        }
        seen[i] = true;
        if (fields[i].fn(c, fy_node_pair_value(p), sub, obj))
            return GS_EINVAL;
    }
    for (size_t i = 0; i < nf; i++)
        if (fields[i].required && !seen[i])
            return gs_yaml_fail(&c->y, n, path, c->err, "missing required field '%s'",
                                fields[i].key);
    return 0;
}

/* ---- node groups ---- */
#define GROUP(o) ((struct gs_sc_group *)(o))
static int g_name(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, GROUP(o)->name, GS_NAME_MAX, c->err);
}
static int g_gpu(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[64];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    int m = gs_catalog_find(b);
    if (m < 0)
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "unknown GPU model '%s' (e.g. A100-80GB, H100-80GB, H200-141GB, "
                            "L40S-48GB, RTX4090-24GB, T4)",
                            b);
    GROUP(o)->model = m;
    return 0;
}
static int g_nodes(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 1, 10000, &n, c->err))
        return GS_EINVAL;
    GROUP(o)->nodes = (int)n;
    return 0;
}
static int g_gpus(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 0, GS_MAX_GPUS_NODE, &n, c->err))
        return GS_EINVAL;
    GROUP(o)->gpus = (int)n;
    return 0;
}
static int g_cpu(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_quantity(c, v, p, 1, true, &GROUP(o)->cpu_milli);
}
static int g_mem(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_quantity(c, v, p, 1 << 20, false, &GROUP(o)->mem_mib);
}
static int g_migcfg(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, GROUP(o)->mig_config, sizeof(GROUP(o)->mig_config), c->err);
}
static int g_miglayout(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_group *g = GROUP(o);
    if (!gs_yaml_is_map(v))
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a map of profile to count");
    if (g->model < 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "set 'gpu' before 'mig_layout'");
    memset(&g->layout, 0, sizeof(g->layout));
    void *it = NULL;
    struct fy_node_pair *pr;
    char k[32];
    while ((pr = fy_node_mapping_iterate(v, &it))) {
        gs_yaml_key(pr, k, sizeof(k));
        int pi = gs_catalog_find_profile(g->model, k);
        if (pi < 0) {
            char list[256];
            gs_catalog_profile_list(g->model, list, sizeof(list));
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err,
                                "'%s' is not a MIG profile of %s (%s)", k,
                                gs_catalog_get(g->model)->name, list);
        }
        int64_t n;
        if (gs_yaml_int(&c->y, fy_node_pair_value(pr), p, 0, 7, &n, c->err))
            return GS_EINVAL;
        g->layout.count[pi] = (uint8_t)n;
    }
    struct gs_error e2;
    gs_error_init(&e2);
    if (gs_mig_place(g->model, &g->layout, NULL, &e2))
        return gs_yaml_fail(&c->y, v, p, c->err, "%s", e2.msg);
    g->has_layout = true;
    return 0;
}
static int g_sharing(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[32];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "none") == 0)
        GROUP(o)->sharing = GS_SHARE_NONE;
    else if (strcmp(b, "timeslicing") == 0 || strcmp(b, "time-slicing") == 0)
        GROUP(o)->sharing = GS_SHARE_TIMESLICING;
    else if (strcmp(b, "mps") == 0)
        GROUP(o)->sharing = GS_SHARE_MPS;
    else if (strcmp(b, "fraction") == 0)
        GROUP(o)->sharing = GS_SHARE_FRACTION;
    else
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "'%s': expected none, timeslicing, mps or fraction", b);
    return 0;
}
static int g_replicas(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 2, 48, &n, c->err))
        return GS_EINVAL;
    GROUP(o)->replicas = (int)n;
    return 0;
}
static int g_labels(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_group *g = GROUP(o);
    if (!gs_yaml_is_map(v))
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a map of label to value");
    void *it = NULL;
    struct fy_node_pair *pr;
    while ((pr = fy_node_mapping_iterate(v, &it))) {
        if (g->nlabels >= 8)
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err, "more than 8 labels");
        struct gs_label *l = &g->labels[g->nlabels];
        if (gs_yaml_key(pr, l->key, sizeof(l->key)) ||
            gs_yaml_str(&c->y, fy_node_pair_value(pr), p, l->val, sizeof(l->val), c->err))
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err,
                                "labels are strings of at most 63 characters");
        g->nlabels++;
    }
    return 0;
}
static const struct field group_fields[] = {
    {"name", g_name, true},          {"gpu", g_gpu, false},
    {"nodes", g_nodes, true},        {"gpus", g_gpus, false},
    {"cpu", g_cpu, false},           {"memory", g_mem, false},
    {"mig_config", g_migcfg, false}, {"mig_layout", g_miglayout, false},
    {"sharing", g_sharing, false},   {"replicas", g_replicas, false},
    {"labels", g_labels, false},
};

/* ---- classes ---- */
#define CLS(o) ((struct gs_sc_class *)(o))
static __thread struct gs_scenario *tl_sc; /* parse-time only: tenant lookup */

static int c_name(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, CLS(o)->name, GS_NAME_MAX, c->err);
}
static int c_tenant(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[GS_NAME_MAX];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    for (int i = 0; i < tl_sc->ntenants; i++)
        if (strcmp(tl_sc->tenants[i].name, b) == 0) {
            CLS(o)->tenant = i;
            return 0;
        }
    return gs_yaml_fail(&c->y, v, p, c->err, "unknown tenant '%s' (declare it under tenants)", b);
}
static int c_kind(struct ctx *c, struct fy_node *v, const char *p, void *o)
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
static int c_priority(struct ctx *c, struct fy_node *v, const char *p, void *o)
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
static int a_process(struct ctx *c, struct fy_node *v, const char *p, void *o)
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
static int a_per_hour(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1e6, &CLS(o)->per_hour, c->err);
}
static int a_interval(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_duration(c, v, p, &CLS(o)->interval_s);
}
static int a_start(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_duration(c, v, p, &CLS(o)->start_s);
}
static int a_stop(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_duration(c, v, p, &CLS(o)->stop_s);
}
static const struct field arrival_fields[] = {
    {"process", a_process, true}, {"per_hour", a_per_hour, false}, {"interval", a_interval, false},
    {"start", a_start, false},    {"stop", a_stop, false},
};
static int c_arrival(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (walk(c, v, p, arrival_fields, sizeof(arrival_fields) / sizeof(arrival_fields[0]), o))
        return GS_EINVAL;
    if (CLS(o)->arrival == GS_ARRIVAL_POISSON && CLS(o)->per_hour <= 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "poisson arrivals need per_hour > 0");
    if (CLS(o)->arrival == GS_ARRIVAL_FIXED && CLS(o)->interval_s < 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "fixed arrivals need interval >= 0");
    return 0;
}
static int d_dist(struct ctx *c, struct fy_node *v, const char *p, void *o)
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
static int d_mean(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_duration(c, v, p, &CLS(o)->mean_s);
}
static int d_median(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_duration(c, v, p, &CLS(o)->median_s);
}
static int d_sigma(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 5, &CLS(o)->sigma, c->err);
}
static const struct field duration_fields[] = {
    {"dist", d_dist, true},
    {"mean", d_mean, false},
    {"median", d_median, false},
    {"sigma", d_sigma, false},
};
static int c_duration(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (walk(c, v, p, duration_fields, sizeof(duration_fields) / sizeof(duration_fields[0]), o))
        return GS_EINVAL;
    struct gs_sc_class *k = CLS(o);
    if (k->dist == GS_DIST_LOGNORMAL ? k->median_s <= 0 : k->mean_s <= 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "%s durations need %s > 0",
                            k->dist == GS_DIST_LOGNORMAL ? "lognormal" : "fixed/exponential",
                            k->dist == GS_DIST_LOGNORMAL ? "median" : "mean");
    return 0;
}
static int r_gpus(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 0, GS_MAX_GPUS_NODE, &n, c->err))
        return GS_EINVAL;
    CLS(o)->gpus = (int)n;
    return 0;
}
static int r_cpu(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_quantity(c, v, p, 1, true, &CLS(o)->cpu_milli);
}
static int r_mem(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_quantity(c, v, p, 1 << 20, false, &CLS(o)->mem_mib);
}
static int r_gmem(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t m = 0;
    if (get_quantity(c, v, p, 1 << 20, false, &m))
        return GS_EINVAL;
    if (m > 1 << 22)
        return gs_yaml_fail(&c->y, v, p, c->err, "more than 4Ti of GPU memory");
    CLS(o)->gpu_mem_mib = (int32_t)m;
    return 0;
}
static int r_mig(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    char *dst = CLS(o)->mig;
    if (gs_yaml_str(&c->y, v, p, dst, sizeof(CLS(o)->mig), c->err))
        return GS_EINVAL;
    for (int m = 0; m < gs_catalog_count(); m++)
        if (gs_catalog_find_profile(m, dst) >= 0)
            return 0;
    return gs_yaml_fail(&c->y, v, p, c->err,
                        "'%s' is not a MIG profile of any known GPU (e.g. 1g.10gb, 3g.40gb)", dst);
}
static int r_share(struct ctx *c, struct fy_node *v, const char *p, void *o)
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
static const struct field request_fields[] = {
    {"gpus", r_gpus, false},       {"cpu", r_cpu, false}, {"memory", r_mem, false},
    {"gpu_memory", r_gmem, false}, {"mig", r_mig, false}, {"share", r_share, false},
};
static int c_request(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, request_fields, sizeof(request_fields) / sizeof(request_fields[0]), o);
}
static int c_util(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0.001, 1.0, &CLS(o)->util, c->err);
}
static int c_max(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 1, 10000000, &n, c->err))
        return GS_EINVAL;
    CLS(o)->max_jobs = (int)n;
    return 0;
}
static int c_gang(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 1, 64, &n, c->err))
        return GS_EINVAL;
    CLS(o)->gang = (int)n;
    return 0;
}
/* ---- services: an online-inference class run as a Deployment under an HPA ---- */
#define SVC(o) ((struct gs_sc_service *)(o))
static int get_count(struct ctx *c, struct fy_node *v, const char *p, int64_t lo, int64_t hi,
                     int32_t *out)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, lo, hi, &n, c->err))
        return GS_EINVAL;
    *out = (int32_t)n;
    return 0;
}
static int get_span(struct ctx *c, struct fy_node *v, const char *p, double lo, double hi,
                    double *out)
{
    if (get_duration(c, v, p, out))
        return GS_EINVAL;
    if (*out < lo || *out > hi)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a duration between %gs and %gs", lo, hi);
    return 0;
}
static int sv_replicas(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 0, GS_SC_MAX_REPLICAS, &SVC(o)->replicas);
}
static int sv_fixed(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, GS_SC_MAX_REPLICAS, &SVC(o)->fixed_replicas);
}
static int sv_autoscale(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_bool(&c->y, v, p, &SVC(o)->autoscale, c->err);
}
static int sv_capacity(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (gs_yaml_double(&c->y, v, p, 0, 1e6, &SVC(o)->capacity, c->err))
        return GS_EINVAL;
    if (SVC(o)->capacity <= 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected requests per second above 0");
    return 0;
}
static int sv_startup(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0, 3600, &SVC(o)->startup_s);
}
static int lat_base(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0.001, 3600, &SVC(o)->latency_s);
}
static int lat_max(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0.001, 3600, &SVC(o)->latency_max_s);
}
static int lat_sla(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0.001, 3600, &SVC(o)->latency_sla_s);
}
static const struct field latency_fields[] = {
    {"base", lat_base, true}, {"max", lat_max, false}, {"sla", lat_sla, false}};
static int sv_latency(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (walk(c, v, p, latency_fields, sizeof(latency_fields) / sizeof(latency_fields[0]), o))
        return GS_EINVAL;
    if (SVC(o)->latency_sla_s > SVC(o)->latency_max_s || SVC(o)->latency_s >= SVC(o)->latency_max_s)
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "expected base < max and sla <= max (max: the request timeout, 30s "
                            "unless given; sla: 1s unless given)");
    return 0;
}
static int ld_rate(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1e7, &SVC(o)->rate, c->err);
}
static int di_amplitude(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1, &SVC(o)->amplitude, c->err);
}
static int di_peak(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0, 365 * 86400.0, &SVC(o)->peak_s);
}
static int di_period(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 60, 365 * 86400.0, &SVC(o)->period_s);
}
static const struct field diurnal_fields[] = {
    {"amplitude", di_amplitude, true}, {"peak", di_peak, false}, {"period", di_period, false}};
static int ld_diurnal(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, diurnal_fields, sizeof(diurnal_fields) / sizeof(diurnal_fields[0]), o);
}
static int ld_noise(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 2, &SVC(o)->noise, c->err);
}
#define BURST(o) ((struct gs_sc_burst *)(o))
static int bu_at(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0, 365 * 86400.0, &BURST(o)->at_s);
}
static int bu_duration(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 1, 86400, &BURST(o)->duration_s);
}
static int bu_factor(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 100, &BURST(o)->factor, c->err);
}
static const struct field burst_fields[] = {
    {"at", bu_at, true}, {"duration", bu_duration, true}, {"factor", bu_factor, true}};
static int ld_bursts(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_service *s = SVC(o);
    if (!gs_yaml_is_seq(v))
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a list of {at, duration, factor}");
    void *it = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(v, &it))) {
        char sub[160];
        snprintf(sub, sizeof(sub), "%s[%d]", p, s->nbursts);
        if (s->nbursts >= GS_SC_MAX_BURSTS)
            return gs_yaml_fail(&c->y, e, sub, c->err, "more than %d bursts", GS_SC_MAX_BURSTS);
        if (walk(c, e, sub, burst_fields, sizeof(burst_fields) / sizeof(burst_fields[0]),
                 &s->burst[s->nbursts]))
            return GS_EINVAL;
        s->nbursts++;
    }
    return 0;
}
static int rb_per_day(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1000, &SVC(o)->random.per_day, c->err);
}
static int rb_duration(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 1, 86400, &SVC(o)->random.duration_s);
}
static int rb_factor(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 100, &SVC(o)->random.factor, c->err);
}
static const struct field random_fields[] = {
    {"per_day", rb_per_day, true}, {"duration", rb_duration, true}, {"factor", rb_factor, true}};
static int ld_random(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, random_fields, sizeof(random_fields) / sizeof(random_fields[0]), o);
}
static const struct field load_fields[] = {
    {"rate", ld_rate, true},      {"diurnal", ld_diurnal, false},      {"noise", ld_noise, false},
    {"bursts", ld_bursts, false}, {"random_bursts", ld_random, false},
};
static int sv_load(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, load_fields, sizeof(load_fields) / sizeof(load_fields[0]), o);
}

/* hpa: the fields of an autoscaling/v2 HorizontalPodAutoscaler's spec, over the article's */
#define HPA(o)   ((struct gs_hpa_spec *)(o))
#define RULES(o) ((struct gs_hpa_rules *)(o))
static int hp_min(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, GS_SC_MAX_REPLICAS, &HPA(o)->min_replicas);
}
static int hp_max(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, GS_SC_MAX_REPLICAS, &HPA(o)->max_replicas);
}
/* one entry of spec.metrics: {type: Pods, pods: {metric: {name}, target: {type: AverageValue,
 * averageValue}}} */
struct metric_in {
    struct gs_hpa_metric *m;
    bool pods;
};
static int mn_name(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_hpa_metric *m = ((struct metric_in *)o)->m;
    if (gs_yaml_str(&c->y, v, p, m->name, sizeof(m->name), c->err))
        return GS_EINVAL;
    if (strcmp(m->name, "gpu_utilization") != 0 && strcmp(m->name, "request_latency_ms") != 0)
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "'%s': a service's pods report gpu_utilization (percent) and "
                            "request_latency_ms",
                            m->name);
    return 0;
}
static const struct field metric_id_fields[] = {{"name", mn_name, true}};
static int mp_metric(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, metric_id_fields, 1, o);
}
static int mt_type(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[32];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "AverageValue") != 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': Pods metrics take AverageValue targets", b);
    return 0;
}
static int mt_value(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t milli = 0;
    if (get_quantity(c, v, p, 1, true, &milli))
        return GS_EINVAL;
    if (milli <= 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a target above 0");
    ((struct metric_in *)o)->m->target = (double)milli / 1000.0;
    return 0;
}
static const struct field target_fields[] = {{"type", mt_type, true},
                                             {"averageValue", mt_value, true}};
static int mp_target(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, target_fields, sizeof(target_fields) / sizeof(target_fields[0]), o);
}
static const struct field pods_fields[] = {{"metric", mp_metric, true},
                                           {"target", mp_target, true}};
static int me_type(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[32];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "Pods") != 0)
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "'%s': the simulator's HPA reads Pods metrics (AverageValue)", b);
    return 0;
}
static int me_pods(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    ((struct metric_in *)o)->pods = true;
    return walk(c, v, p, pods_fields, sizeof(pods_fields) / sizeof(pods_fields[0]), o);
}
static const struct field metric_fields[] = {{"type", me_type, true}, {"pods", me_pods, true}};
static int hp_metrics(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_hpa_spec *h = HPA(o);
    if (!gs_yaml_is_seq(v) || fy_node_sequence_item_count(v) == 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a list of at least one metric");
    h->nmetrics = 0;
    void *it = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(v, &it))) {
        char sub[200];
        snprintf(sub, sizeof(sub), "%s[%d]", p, h->nmetrics);
        if (h->nmetrics >= GS_HPA_MAX_METRICS)
            return gs_yaml_fail(&c->y, e, sub, c->err, "more than %d metrics", GS_HPA_MAX_METRICS);
        struct metric_in in = {&h->metric[h->nmetrics], false};
        memset(in.m, 0, sizeof(*in.m));
        if (walk(c, e, sub, metric_fields, sizeof(metric_fields) / sizeof(metric_fields[0]), &in))
            return GS_EINVAL;
        for (int k = 0; k < h->nmetrics; k++)
            if (strcmp(h->metric[k].name, in.m->name) == 0)
                return gs_yaml_fail(&c->y, e, sub, c->err, "metric '%s' is already %s[%d]",
                                    in.m->name, p, k);
        h->nmetrics++;
    }
    return 0;
}
static int ru_window(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 0, 3600, &RULES(o)->window_s);
}
static int ru_select(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[16];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "Max") == 0)
        RULES(o)->select = GS_HPA_SELECT_MAX;
    else if (strcmp(b, "Min") == 0)
        RULES(o)->select = GS_HPA_SELECT_MIN;
    else if (strcmp(b, "Disabled") == 0)
        RULES(o)->select = GS_HPA_SELECT_DISABLED;
    else
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': expected Max, Min or Disabled", b);
    return 0;
}
static int ru_tolerance(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t milli = 0;
    if (get_quantity(c, v, p, 1, true, &milli))
        return GS_EINVAL;
    if (milli > 10000)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a tolerance such as 0.1");
    RULES(o)->tolerance = (double)milli / 1000.0;
    return 0;
}
#define POL(o) ((struct gs_hpa_policy *)(o))
static int po_type(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[16];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "Pods") == 0)
        POL(o)->type = GS_HPA_POLICY_PODS;
    else if (strcmp(b, "Percent") == 0)
        POL(o)->type = GS_HPA_POLICY_PERCENT;
    else
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': expected Pods or Percent", b);
    return 0;
}
static int po_value(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, 100000, &POL(o)->value);
}
static int po_period(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, 1800, &POL(o)->period_s);
}
static const struct field policy_fields[] = {
    {"type", po_type, true}, {"value", po_value, true}, {"periodSeconds", po_period, true}};
static int ru_policies(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_hpa_rules *r = RULES(o);
    if (!gs_yaml_is_seq(v) || fy_node_sequence_item_count(v) == 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "must specify at least one policy");
    r->npolicies = 0;
    void *it = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(v, &it))) {
        char sub[200];
        snprintf(sub, sizeof(sub), "%s[%d]", p, r->npolicies);
        if (r->npolicies >= GS_HPA_MAX_POLICIES)
            return gs_yaml_fail(&c->y, e, sub, c->err, "more than %d policies",
                                GS_HPA_MAX_POLICIES);
        if (walk(c, e, sub, policy_fields, sizeof(policy_fields) / sizeof(policy_fields[0]),
                 &r->policy[r->npolicies]))
            return GS_EINVAL;
        r->npolicies++;
    }
    return 0;
}
static const struct field rules_fields[] = {
    {"stabilizationWindowSeconds", ru_window, false},
    {"selectPolicy", ru_select, false},
    {"policies", ru_policies, false},
    {"tolerance", ru_tolerance, false},
};
static int be_up(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, rules_fields, sizeof(rules_fields) / sizeof(rules_fields[0]), &HPA(o)->up);
}
static int be_down(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, rules_fields, sizeof(rules_fields) / sizeof(rules_fields[0]),
                &HPA(o)->down);
}
static const struct field behavior_fields[] = {{"scaleUp", be_up, false},
                                               {"scaleDown", be_down, false}};
static int hp_behavior(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, behavior_fields, sizeof(behavior_fields) / sizeof(behavior_fields[0]), o);
}
static const struct field hpa_fields[] = {
    {"minReplicas", hp_min, false},
    {"maxReplicas", hp_max, false},
    {"metrics", hp_metrics, false},
    {"behavior", hp_behavior, false},
};
static int sv_hpa(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_hpa_spec *h = &SVC(o)->hpa;
    if (walk(c, v, p, hpa_fields, sizeof(hpa_fields) / sizeof(hpa_fields[0]), h))
        return GS_EINVAL;
    if (h->min_replicas > h->max_replicas)
        return gs_yaml_fail(&c->y, v, p, c->err, "minReplicas %d is above maxReplicas %d",
                            (int)h->min_replicas, (int)h->max_replicas);
    return 0;
}
static const struct field service_fields[] = {
    {"replicas", sv_replicas, false},
    {"fixed_replicas", sv_fixed, false},
    {"autoscale", sv_autoscale, false},
    {"capacity", sv_capacity, true},
    {"latency", sv_latency, true},
    {"startup", sv_startup, false},
    {"load", sv_load, true},
    {"hpa", sv_hpa, false},
};
static int c_service(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_service *s = &CLS(o)->service;
    s->on = true;
    s->replicas = -1;
    s->autoscale = true;
    s->latency_max_s = 30;
    s->latency_sla_s = 1;
    s->period_s = 86400;
    gs_hpa_spec_article(&s->hpa);
    if (walk(c, v, p, service_fields, sizeof(service_fields) / sizeof(service_fields[0]), s))
        return GS_EINVAL;
    if (s->peak_s > s->period_s)
        return gs_yaml_fail(&c->y, v, p, c->err, "load.diurnal.peak is past its period");
    if (s->replicas < 0)
        s->replicas = s->hpa.min_replicas;
    return 0;
}

/* arrival and duration are required of classes that are not services (s_classes checks) */
static const struct field class_fields[] = {
    {"gang", c_gang, false},         {"name", c_name, true},          {"tenant", c_tenant, false},
    {"kind", c_kind, true},          {"priority", c_priority, false}, {"arrival", c_arrival, false},
    {"duration", c_duration, false}, {"request", c_request, true},    {"util", c_util, false},
    {"max_jobs", c_max, false},      {"service", c_service, false},
};

/* ---- tenants ---- */
#define TEN(o) ((struct gs_sc_tenant *)(o))
static int t_name(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, TEN(o)->name, GS_NAME_MAX, c->err);
}
static int t_ns(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, TEN(o)->ns, GS_NAME_MAX, c->err);
}
static int res_map(struct ctx *c, struct fy_node *v, const char *p, int *n, char (*names)[64],
                   int64_t *values)
{
    if (!gs_yaml_is_map(v))
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a map of resource name to count");
    void *it = NULL;
    struct fy_node_pair *pr;
    while ((pr = fy_node_mapping_iterate(v, &it))) {
        if (*n >= GS_SC_MAX_QUOTA)
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err, "more than %d entries",
                                GS_SC_MAX_QUOTA);
        if (gs_yaml_key(pr, names[*n], 64))
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err, "expected a name");
        const char *k = names[*n];
        if (strcmp(k, "nvidia.com/gpu") != 0 && strncmp(k, "nvidia.com/mig-", 15) != 0 &&
            strcmp(k, "gpusched.io/gpu-units") != 0)
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err,
                                "'%s': expected nvidia.com/gpu, nvidia.com/mig-<profile> or "
                                "gpusched.io/gpu-units",
                                k);
        if (get_quantity(c, fy_node_pair_value(pr), p, 1, false, &values[*n]))
            return GS_EINVAL;
        (*n)++;
    }
    return 0;
}
static int t_quota(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return res_map(c, v, p, &TEN(o)->nquota, TEN(o)->quota_name, TEN(o)->quota_value);
}
static int t_limit(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return res_map(c, v, p, &TEN(o)->nlimit, TEN(o)->limit_name, TEN(o)->limit_value);
}
static int t_weight(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 1, 1000, &n, c->err))
        return GS_EINVAL;
    TEN(o)->weight = (int)n;
    return 0;
}
static const struct field tenant_fields[] = {
    {"name", t_name, true},    {"namespace", t_ns, false},  {"quota", t_quota, false},
    {"limit", t_limit, false}, {"weight", t_weight, false},
};

/* ---- top level ---- */
#define SC(o) ((struct gs_scenario *)(o))
static int s_name(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, SC(o)->name, GS_NAME_MAX, c->err);
}
static int s_seed(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 0, INT64_MAX, &n, c->err))
        return GS_EINVAL;
    SC(o)->seed = (uint64_t)n;
    return 0;
}
static int s_duration(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (get_duration(c, v, p, &SC(o)->duration_s))
        return GS_EINVAL;
    if (SC(o)->duration_s <= 0 || SC(o)->duration_s > 365 * 86400.0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a duration between 1s and 365d");
    return 0;
}
static int s_minrun(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_duration(c, v, p, &SC(o)->min_runtime_s);
}
static int s_warmup(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_duration(c, v, p, &SC(o)->warmup_s);
}
static int sla_wait(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_duration(c, v, p, &SC(o)->sla_wait_s);
}
static int sla_speed(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1, &SC(o)->sla_min_speed, c->err);
}
static const struct field sla_fields[] = {
    {"online_wait", sla_wait, false},
    {"online_min_speed", sla_speed, false},
};
static int s_sla(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, sla_fields, sizeof(sla_fields) / sizeof(sla_fields[0]), o);
}
static int rc_get(struct ctx *c, struct fy_node *v, const char *p, double *out)
{
    if (get_duration(c, v, p, out))
        return GS_EINVAL;
    if (*out < 0 || *out > 3600)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a duration between 0s and 1h");
    return 0;
}
static int rc_destroy(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_destroy_s);
}
static int rc_create(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_create_s);
}
static int rc_mode(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_mode_s);
}
static int rc_notice(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_notice_s);
}
static int rc_hold(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_hold_s);
}
static const struct field reconf_fields[] = {
    {"destroy", rc_destroy, false}, {"create", rc_create, false}, {"mode_change", rc_mode, false},
    {"notice", rc_notice, false},   {"hold", rc_hold, false},
};
static int s_reconf(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return walk(c, v, p, reconf_fields, sizeof(reconf_fields) / sizeof(reconf_fields[0]), o);
}
static int s_prices(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (!gs_yaml_is_map(v))
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a map of GPU model to $/hour");
    void *it = NULL;
    struct fy_node_pair *pr;
    char k[64];
    while ((pr = fy_node_mapping_iterate(v, &it))) {
        gs_yaml_key(pr, k, sizeof(k));
        int m = gs_catalog_find(k);
        if (m < 0)
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err, "unknown GPU model '%s'",
                                k);
        if (gs_yaml_double(&c->y, fy_node_pair_value(pr), p, 0, 1000, &SC(o)->price[m], c->err))
            return GS_EINVAL;
    }
    return 0;
}
static int s_migcfg(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    /* keep the text: formats/migparted.c parses and checks it */
    char *text = fy_emit_node_to_string(v, FYECF_MODE_BLOCK | FYECF_NO_ENDING_NEWLINE);
    if (!text)
        return gs_yaml_fail(&c->y, v, p, c->err, "cannot read the mig-parted document");
    free(SC(o)->mig_yaml);
    SC(o)->mig_yaml = text;
    SC(o)->mig_yaml_len = strlen(text);
    snprintf(SC(o)->mig_yaml_name, sizeof(SC(o)->mig_yaml_name), "%s:%d:mig_configs", c->y.name,
             gs_yaml_line(v));
    return 0;
}
/* A list of objects read by walk, each with a required name (char[GS_NAME_MAX] at name_off)
 * that no other entry of the list may share: classes, node groups and tenants are referred
 * to, reported and turned into node names by it. */
static int list_of(struct ctx *c, struct fy_node *v, const char *p, void *base, size_t stride,
                   size_t name_off, int *count, int max, const struct field *f, size_t nf,
                   void (*init)(void *))
{
    if (!gs_yaml_is_seq(v))
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a list");
    void *it = NULL;
    struct fy_node *e;
    struct fy_node *names[64];
    while ((e = fy_node_sequence_iterate(v, &it))) {
        char sub[128];
        snprintf(sub, sizeof(sub), "%s[%d]", p, *count);
        if (*count >= max || *count >= 64)
            return gs_yaml_fail(&c->y, e, sub, c->err, "more than %d entries", max);
        char *obj = (char *)base + stride * (size_t)*count;
        init(obj);
        if (walk(c, e, sub, f, nf, obj))
            return GS_EINVAL;
        const char *name = obj + name_off;
        names[*count] = fy_node_mapping_lookup_by_string(e, "name", (size_t)-1);
        for (int k = 0; k < *count; k++) {
            if (strcmp((char *)base + stride * (size_t)k + name_off, name) != 0)
                continue;
            char nsub[160];
            snprintf(nsub, sizeof(nsub), "%s.name", sub);
            int line = gs_yaml_line(names[k]);
            return gs_yaml_fail(&c->y, names[*count], nsub, c->err,
                                "'%s' is already the name of %s[%d] (line %d)", name, p, k,
                                line > 0 ? line + c->y.line_offset : 0);
        }
        (*count)++;
    }
    return 0;
}
static void init_group(void *o)
{
    memset(o, 0, sizeof(struct gs_sc_group));
    GROUP(o)->model = -1;
    GROUP(o)->gpus = 8;
    GROUP(o)->cpu_milli = 96000;
    GROUP(o)->mem_mib = 512 * 1024;
    GROUP(o)->replicas = 0;
}
static void init_class(void *o)
{
    memset(o, 0, sizeof(struct gs_sc_class));
    CLS(o)->tenant = -1;
    CLS(o)->util = 0.5;
    CLS(o)->cpu_milli = 4000;
    CLS(o)->mem_mib = 16 * 1024;
}
static void init_tenant(void *o)
{
    memset(o, 0, sizeof(struct gs_sc_tenant));
}
static int s_groups(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (list_of(c, v, p, SC(o)->groups, sizeof(struct gs_sc_group),
                offsetof(struct gs_sc_group, name), &SC(o)->ngroups, GS_SC_MAX_GROUPS, group_fields,
                sizeof(group_fields) / sizeof(group_fields[0]), init_group))
        return GS_EINVAL;
    /* cross-field checks */
    void *it = NULL;
    struct fy_node *e;
    int i = 0;
    while ((e = fy_node_sequence_iterate(v, &it))) {
        struct gs_sc_group *g = &SC(o)->groups[i];
        char sub[128];
        snprintf(sub, sizeof(sub), "%s[%d]", p, i);
        if (g->gpus > 0 && g->model < 0)
            return gs_yaml_fail(&c->y, e, sub, c->err, "a group with GPUs needs 'gpu'");
        if ((g->mig_config[0] || g->has_layout) && !gs_catalog_mig_capable(g->model))
            return gs_yaml_fail(&c->y, e, sub, c->err, "%s does not support MIG",
                                gs_catalog_get(g->model) ? gs_catalog_get(g->model)->name : "?");
        i++;
    }
    return 0;
}
static int s_tenants(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return list_of(c, v, p, SC(o)->tenants, sizeof(struct gs_sc_tenant),
                   offsetof(struct gs_sc_tenant, name), &SC(o)->ntenants, GS_SC_MAX_TENANTS,
                   tenant_fields, sizeof(tenant_fields) / sizeof(tenant_fields[0]), init_tenant);
}
static int s_classes(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (list_of(c, v, p, SC(o)->classes, sizeof(struct gs_sc_class),
                offsetof(struct gs_sc_class, name), &SC(o)->nclasses, GS_SC_MAX_CLASSES,
                class_fields, sizeof(class_fields) / sizeof(class_fields[0]), init_class))
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
static int tr_file(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, ((struct trace_opts *)o)->file, 512, c->err);
}
static int tr_format(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[16];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err) || strcmp(b, "openb") != 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected openb");
    return 0;
}
static int tr_scale(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 1e-9, 1e9, &((struct trace_opts *)o)->scale, c->err);
}
static const struct field trace_fields[] = {
    {"file", tr_file, true}, {"format", tr_format, false}, {"time_scale", tr_scale, false}};
static int s_trace(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct trace_opts t = {.scale = 1.0};
    if (walk(c, v, p, trace_fields, sizeof(trace_fields) / sizeof(trace_fields[0]), &t))
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
static int s_tenants_done(struct ctx *c, struct fy_node *v, const char *p, void *o)
{
    return 0; /* read before the other fields, so classes can name tenants in any order */
}
static const struct field top_fields[] = {
    {"name", s_name, false},          {"seed", s_seed, false},
    {"duration", s_duration, true},   {"warmup", s_warmup, false},
    {"min_runtime", s_minrun, false}, {"sla", s_sla, false},
    {"prices", s_prices, false},      {"mig_configs", s_migcfg, false},
    {"node_groups", s_groups, true},  {"tenants", s_tenants_done, false},
    {"classes", s_classes, false},    {"trace", s_trace, false},
    {"reconfig", s_reconf, false},
};

int gs_scenario_parse(const char *name, const char *data, size_t len, struct gs_scenario *sc,
                      struct gs_error *err)
{
    memset(sc, 0, sizeof(*sc));
    snprintf(sc->name, sizeof(sc->name), "scenario");
    sc->seed = 42;
    sc->sla_wait_s = 30;
    sc->sla_min_speed = 0.8;
    sc->reconf_destroy_s = GS_RECONF_DESTROY_S;
    sc->reconf_create_s = GS_RECONF_CREATE_S;
    sc->reconf_mode_s = GS_RECONF_MODE_S;
    sc->reconf_notice_s = GS_RECONF_NOTICE_S;
    sc->reconf_hold_s = GS_RECONF_HOLD_S;
    for (int m = 0; m < gs_catalog_count(); m++)
        sc->price[m] = gs_catalog_get(m)->price_per_hour;
    struct ctx c = {.err = err};
    int rc = gs_yaml_load(&c.y, name, data, len, err);
    if (rc)
        return rc;
    tl_sc = sc;
    /* tenants must be known before classes name them: walk tenants first */
    struct fy_node *root = gs_yaml_root(&c.y);
    rc = GS_EINVAL;
    if (!gs_yaml_is_map(root)) {
        gs_yaml_fail(&c.y, root, "(top)", err, "expected a mapping with node_groups and classes");
        goto out;
    }
    struct fy_node *tn = fy_node_mapping_lookup_by_string(root, "tenants", (size_t)-1);
    if (tn && s_tenants(&c, tn, "tenants", sc))
        goto out;
    if (walk(&c, root, "", top_fields, sizeof(top_fields) / sizeof(top_fields[0]), sc))
        goto out;
    if (sc->nclasses == 0 && sc->ntrace == 0) {
        gs_yaml_fail(&c.y, root, "classes", err, "a scenario needs classes or a trace");
        goto out;
    }
    if (sc->warmup_s >= sc->duration_s) {
        gs_yaml_fail(&c.y, root, "warmup", err, "must be shorter than duration");
        goto out;
    }
    for (int i = 0; i < sc->nclasses; i++) {
        struct gs_sc_class *k = &sc->classes[i];
        if (k->gpus == 0 && !k->mig[0])
            k->gpus = 0; /* CPU-only class */
    }
    rc = 0;
out:
    tl_sc = NULL;
    gs_yaml_release(&c.y);
    if (rc)
        gs_scenario_release(sc);
    return rc;
}

int gs_scenario_load(const char *path, struct gs_scenario *sc, struct gs_error *err)
{
    memset(sc, 0, sizeof(*sc));
    struct gs_buf b;
    gs_buf_init(&b, GS_YAML_MAX + 1);
    int rc = gs_buf_read_file(&b, path, GS_YAML_MAX, err);
    if (rc == 0)
        rc = gs_scenario_parse(path, b.data, b.len, sc, err);
    gs_buf_release(&b);
    return rc;
}

void gs_scenario_release(struct gs_scenario *sc)
{
    free(sc->mig_yaml);
    free(sc->trace);
    sc->mig_yaml = NULL;
    sc->trace = NULL;
    sc->ntrace = 0;
}
