/* scenario.c - reader for simulator scenario files; sim/scenario.c runs what it returns and
 * the embedded default scenario (sim/default_scenario.c) goes through this same parser. This
 * file holds the top level, the table-driven walk every part reads its keys with, and the
 * shared value readers; the parts are scenario_cluster.c (node groups), scenario_workload.c
 * (classes, traces) and scenario_service.c (tenants, services). */
#include "scenario_internal.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../core/quantity.h"
#include "yaml.h"

#include <errno.h>
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

int gs__sc_duration(struct gs__sc_ctx *c, struct fy_node *v, const char *path, double *out)
{
    char b[32];
    if (gs_yaml_str(&c->y, v, path, b, sizeof(b), c->err) || gs_parse_duration(b, out))
        return gs_yaml_fail(&c->y, v, path, c->err,
                            "expected a duration such as 90s, 10m, 2h or 1d");
    return 0;
}

int gs__sc_quantity(struct gs__sc_ctx *c, struct fy_node *v, const char *path, int64_t mul_div,
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

int gs__sc_walk(struct gs__sc_ctx *c, struct fy_node *n, const char *path,
                const struct gs__sc_field *fields, size_t nf, void *obj)
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

/* ---- top level ---- */
static int s_name(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, SC(o)->name, GS_NAME_MAX, c->err);
}
static int s_seed(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 0, INT64_MAX, &n, c->err))
        return GS_EINVAL;
    SC(o)->seed = (uint64_t)n;
    return 0;
}
static int s_duration(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (gs__sc_duration(c, v, p, &SC(o)->duration_s))
        return GS_EINVAL;
    if (SC(o)->duration_s <= 0 || SC(o)->duration_s > 365 * 86400.0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a duration between 1s and 365d");
    return 0;
}
static int s_minrun(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_duration(c, v, p, &SC(o)->min_runtime_s);
}
static int s_warmup(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_duration(c, v, p, &SC(o)->warmup_s);
}
static int sla_wait(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_duration(c, v, p, &SC(o)->sla_wait_s);
}
static int sla_speed(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1, &SC(o)->sla_min_speed, c->err);
}
static const struct gs__sc_field sla_fields[] = {
    {"online_wait", sla_wait, false},
    {"online_min_speed", sla_speed, false},
};
static int s_sla(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, sla_fields, GS__SC_NFIELDS(sla_fields), o);
}
static int rc_get(struct gs__sc_ctx *c, struct fy_node *v, const char *p, double *out)
{
    if (gs__sc_duration(c, v, p, out))
        return GS_EINVAL;
    if (*out < 0 || *out > 3600)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a duration between 0s and 1h");
    return 0;
}
static int rc_destroy(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_destroy_s);
}
static int rc_create(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_create_s);
}
static int rc_mode(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_mode_s);
}
static int rc_notice(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_notice_s);
}
static int rc_hold(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return rc_get(c, v, p, &SC(o)->reconf_hold_s);
}
static const struct gs__sc_field reconf_fields[] = {
    {"destroy", rc_destroy, false}, {"create", rc_create, false}, {"mode_change", rc_mode, false},
    {"notice", rc_notice, false},   {"hold", rc_hold, false},
};
static int s_reconf(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, reconf_fields, GS__SC_NFIELDS(reconf_fields), o);
}
static int s_prices(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
static int s_migcfg(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
/* A list of objects read by gs__sc_walk, each with a required name (char[GS_NAME_MAX] at name_off)
 * that no other entry of the list may share: classes, node groups and tenants are referred
 * to, reported and turned into node names by it. */
int gs__sc_list(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *base, size_t stride,
                size_t name_off, int *count, int max, const struct gs__sc_field *f, size_t nf,
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
        if (gs__sc_walk(c, e, sub, f, nf, obj))
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
static int s_tenants_done(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return 0; /* read before the other fields, so classes can name tenants in any order */
}
static const struct gs__sc_field top_fields[] = {
    {"name", s_name, false},
    {"seed", s_seed, false},
    {"duration", s_duration, true},
    {"warmup", s_warmup, false},
    {"min_runtime", s_minrun, false},
    {"sla", s_sla, false},
    {"prices", s_prices, false},
    {"mig_configs", s_migcfg, false},
    {"node_groups", gs__sc_groups, true},
    {"tenants", s_tenants_done, false},
    {"classes", gs__sc_classes, false},
    {"trace", gs__sc_trace, false},
    {"reconfig", s_reconf, false},
};

/* A class that asks a MIG profile no node group's GPU has cannot be served by any MIG
 * strategy: refuse it at its line, with the profiles the groups' GPUs do offer and the closest
 * (the article's H200 "7 x 20 GB" is 1g.20gb, which H200 calls 1g.18gb). */
static int check_mig_offered(struct gs__sc_ctx *c, struct fy_node *root)
{
    const struct gs_scenario *sc = c->sc;
    for (int i = 0; i < sc->nclasses; i++) {
        const char *mig = sc->classes[i].mig;
        if (!mig[0])
            continue;
        int mig_model = -1, first = -1;
        bool offered = false;
        for (int g = 0; g < sc->ngroups && !offered; g++) {
            int m = sc->groups[g].model;
            offered = gs_catalog_find_profile(m, mig) >= 0;
            if (first < 0)
                first = m;
            if (mig_model < 0 && gs_catalog_mig_capable(m))
                mig_model = m;
        }
        for (int m = 0; sc->ngroups == 0 && !offered && m < gs_catalog_count(); m++)
            offered = gs_catalog_find_profile(m, mig) >= 0; /* no groups: any GPU's profile */
        if (offered)
            continue;
        char path[64], ypath[64], why[768];
        snprintf(path, sizeof(path), "classes[%d].request.mig", i);
        snprintf(ypath, sizeof(ypath), "/classes/%d/request/mig", i);
        struct fy_node *n = fy_node_by_path(root, ypath, (size_t)-1, FYNWF_DONT_FOLLOW);
        if (mig_model >= 0)
            gs_catalog_profile_unknown(mig_model, mig, why, sizeof(why));
        else if (first >= 0)
            gs_catalog_mig_refusal(first, why, sizeof(why));
        else
            snprintf(why, sizeof(why), "no known GPU has it, e.g. 1g.10gb, 3g.40gb");
        return gs_yaml_fail(&c->y, n ? n : root, path, c->err,
                            "'%s': no node group offers it, so no MIG strategy can serve the "
                            "class (%s)",
                            mig, why);
    }
    return 0;
}

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
    struct gs__sc_ctx c = {.err = err, .sc = sc};
    int rc = gs_yaml_load(&c.y, name, data, len, err);
    if (rc)
        return rc;
    /* tenants must be known before classes name them: walk tenants first */
    struct fy_node *root = gs_yaml_root(&c.y);
    rc = GS_EINVAL;
    if (!gs_yaml_is_map(root)) {
        gs_yaml_fail(&c.y, root, "(top)", err, "expected a mapping with node_groups and classes");
        goto out;
    }
    struct fy_node *tn = fy_node_mapping_lookup_by_string(root, "tenants", (size_t)-1);
    if (tn && gs__sc_tenants(&c, tn, "tenants", sc))
        goto out;
    if (gs__sc_walk(&c, root, "", top_fields, GS__SC_NFIELDS(top_fields), sc))
        goto out;
    if (sc->nclasses == 0 && sc->ntrace == 0) {
        gs_yaml_fail(&c.y, root, "classes", err, "a scenario needs classes or a trace");
        goto out;
    }
    if (sc->warmup_s >= sc->duration_s) {
        gs_yaml_fail(&c.y, root, "warmup", err, "must be shorter than duration");
        goto out;
    }
    if (check_mig_offered(&c, root))
        goto out;
    for (int i = 0; i < sc->nclasses; i++) {
        struct gs_sc_class *k = &sc->classes[i];
        if (k->gpus == 0 && !k->mig[0])
            k->gpus = 0; /* CPU-only class */
    }
    rc = 0;
out:
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
