/* scenario_cluster.c - the cluster part of a scenario file (scenario.h): node groups, read
 * by the table-driven walk of scenario.c (scenario_internal.h) into struct gs_sc_group; the
 * simulator turns each group into nodes. */
#include "scenario_internal.h"

#include "../base/error.h"
#include "../core/catalog.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- node groups ---- */
#define GROUP(o) ((struct gs_sc_group *)(o))
static int g_name(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, GROUP(o)->name, GS_NAME_MAX, c->err);
}
static int g_gpu(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
static int g_nodes(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 1, 10000, &n, c->err))
        return GS_EINVAL;
    GROUP(o)->nodes = (int)n;
    return 0;
}
static int g_gpus(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 0, GS_MAX_GPUS_NODE, &n, c->err))
        return GS_EINVAL;
    GROUP(o)->gpus = (int)n;
    return 0;
}
static int g_cpu(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_quantity(c, v, p, 1, true, &GROUP(o)->cpu_milli);
}
static int g_mem(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_quantity(c, v, p, 1 << 20, false, &GROUP(o)->mem_mib);
}
static int g_migcfg(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, GROUP(o)->mig_config, sizeof(GROUP(o)->mig_config), c->err);
}
static int g_miglayout(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
            char why[768];
            gs_catalog_profile_unknown(g->model, k, why, sizeof(why));
            return gs_yaml_fail(&c->y, fy_node_pair_key(pr), p, c->err, "%s", why);
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
static int g_sharing(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
static int g_replicas(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 2, 48, &n, c->err))
        return GS_EINVAL;
    GROUP(o)->replicas = (int)n;
    return 0;
}
static int g_unhealthy(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 0, 10000 * 16, &n, c->err))
        return GS_EINVAL;
    GROUP(o)->unhealthy = (int)n;
    return 0;
}
static int g_labels(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
static int g_dra(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[32];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "whole") == 0)
        GROUP(o)->dra = GS_SC_DRA_WHOLE;
    else if (strcmp(b, "dynamic-mig") == 0)
        GROUP(o)->dra = GS_SC_DRA_DYNAMIC;
    else
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': expected whole or dynamic-mig", b);
    return 0;
}
static const struct gs__sc_field group_fields[] = {
    {"name", g_name, true},
    {"gpu", g_gpu, false},
    {"nodes", g_nodes, true},
    {"gpus", g_gpus, false},
    {"cpu", g_cpu, false},
    {"memory", g_mem, false},
    {"mig_config", g_migcfg, false},
    {"mig_layout", g_miglayout, false},
    {"sharing", g_sharing, false},
    {"replicas", g_replicas, false},
    {"labels", g_labels, false},
    {"dra", g_dra, false},
    {"unhealthy", g_unhealthy, false},
};

static void init_group(void *o)
{
    memset(o, 0, sizeof(struct gs_sc_group));
    GROUP(o)->model = -1;
    GROUP(o)->gpus = 8;
    GROUP(o)->cpu_milli = 96000;
    GROUP(o)->mem_mib = 512 * 1024;
    GROUP(o)->replicas = 0;
}
int gs__sc_groups(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (gs__sc_list(c, v, p, SC(o)->groups, sizeof(struct gs_sc_group),
                    offsetof(struct gs_sc_group, name), &SC(o)->ngroups, GS_SC_MAX_GROUPS,
                    group_fields, GS__SC_NFIELDS(group_fields), init_group))
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
        if (g->unhealthy > g->nodes * g->gpus)
            return gs_yaml_fail(&c->y, e, sub, c->err, "unhealthy: %d is more than the %d GPUs",
                                g->unhealthy, g->nodes * g->gpus);
        if (g->dra && (g->gpus == 0 || g->gpus > 16))
            return gs_yaml_fail(&c->y, e, sub, c->err, "a dra group needs 1 to 16 'gpus'");
        if (g->dra && (g->mig_config[0] || g->has_layout || g->sharing || g->replicas))
            return gs_yaml_fail(&c->y, e, sub, c->err,
                                "a dra group's GPUs are DRA devices: drop mig_config, "
                                "mig_layout, sharing and replicas");
        if (g->dra == GS_SC_DRA_DYNAMIC && !gs_catalog_mig_capable(g->model))
            return gs_yaml_fail(&c->y, e, sub, c->err, "dra dynamic-mig: %s does not support MIG",
                                gs_catalog_get(g->model)->name);
        if ((g->mig_config[0] || g->has_layout) && !gs_catalog_mig_capable(g->model))
            return gs_yaml_fail(&c->y, e, sub, c->err, "%s does not support MIG",
                                gs_catalog_get(g->model) ? gs_catalog_get(g->model)->name : "?");
        i++;
    }
    return 0;
}
