/* scenario_hpa.c - the parts of an autoscaling/v2 HorizontalPodAutoscaler that a service's
 * `hpa:` takes besides the spec fields scenario_service.c maps onto the simulator's HPA: the
 * object around the spec (apiVersion, kind, metadata, spec, status), spec.scaleTargetRef, and
 * the metric sources other than Pods (Resource, ContainerResource, Object, External), read
 * and checked as the API server validates them (scenario_internal.h). So the article's
 * gpu-hpa.yaml goes in as it is. */
#include "scenario_internal.h"

#include "../base/error.h"

#include <stdio.h>
#include <string.h>

/* A string field that must be present and not empty (out may be NULL). */
static int nonempty(struct gs__sc_ctx *c, struct fy_node *v, const char *p, char *out, size_t n)
{
    char b[256];
    if (gs_yaml_str(&c->y, v, p, out ? out : b, out ? n : sizeof(b), c->err))
        return GS_EINVAL;
    if (!(out ? out : b)[0])
        return gs_yaml_fail(&c->y, v, p, c->err, "must not be empty");
    return 0;
}
static int any_str(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    (void)o;
    return nonempty(c, v, p, NULL, 0);
}
static int any_map(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    (void)o;
    return gs_yaml_is_map(v) ? 0 : gs_yaml_fail(&c->y, v, p, c->err, "expected a mapping");
}

/* ---- the object: apiVersion, kind, metadata, spec, status ---- */
struct hpa_obj {
    gs__sc_field_fn spec;
    void *spec_obj;
};
static int ob_api(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[64];
    (void)o;
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "autoscaling/v2") != 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': expected autoscaling/v2", b);
    return 0;
}
static int ob_kind(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[64];
    (void)o;
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "HorizontalPodAutoscaler") != 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': expected HorizontalPodAutoscaler", b);
    return 0;
}
static int ob_spec(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct hpa_obj *h = o;
    return h->spec(c, v, p, h->spec_obj);
}
/* metadata and status are the API server's and the controller's: any mapping */
static const struct gs__sc_field obj_fields[] = {
    {"apiVersion", ob_api, true}, {"kind", ob_kind, true},    {"metadata", any_map, false},
    {"spec", ob_spec, true},      {"status", any_map, false},
};

bool gs__sc_hpa_is_object(struct fy_node *v)
{
    return gs_yaml_is_map(v) && (fy_node_mapping_lookup_by_string(v, "spec", -1) ||
                                 fy_node_mapping_lookup_by_string(v, "apiVersion", -1) ||
                                 fy_node_mapping_lookup_by_string(v, "kind", -1));
}

int gs__sc_hpa_object(struct gs__sc_ctx *c, struct fy_node *v, const char *p, gs__sc_field_fn spec,
                      void *o)
{
    struct hpa_obj h = {spec, o};
    return gs__sc_walk(c, v, p, obj_fields, GS__SC_NFIELDS(obj_fields), &h);
}

/* ---- spec.scaleTargetRef: {apiVersion, kind, name}; the service it sits under ---- */
static const struct gs__sc_field ref_fields[] = {
    {"apiVersion", any_str, false}, {"kind", any_str, true}, {"name", any_str, true}};
int gs__sc_hpa_target(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    (void)o;
    return gs__sc_walk(c, v, p, ref_fields, GS__SC_NFIELDS(ref_fields), NULL);
}

/* ---- the other metric sources ---- */
/* target: {type: Utilization | Value | AverageValue, and the value its type names} */
struct target_in {
    char type[32];
    bool util, value, avg;
};
static int tg_type(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct target_in *t = o;
    if (gs_yaml_str(&c->y, v, p, t->type, sizeof(t->type), c->err))
        return GS_EINVAL;
    if (strcmp(t->type, "Utilization") != 0 && strcmp(t->type, "Value") != 0 &&
        strcmp(t->type, "AverageValue") != 0)
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "'%s': expected Utilization, Value or AverageValue", t->type);
    return 0;
}
static int tg_util(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    ((struct target_in *)o)->util = true;
    return gs_yaml_int(&c->y, v, p, 1, INT32_MAX, &n, c->err);
}
static int tg_qty(struct gs__sc_ctx *c, struct fy_node *v, const char *p, int64_t *out)
{
    if (gs__sc_quantity(c, v, p, 1, true, out))
        return GS_EINVAL;
    return *out > 0 ? 0 : gs_yaml_fail(&c->y, v, p, c->err, "must be positive");
}
static int tg_value(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t q;
    ((struct target_in *)o)->value = true;
    return tg_qty(c, v, p, &q);
}
static int tg_avg(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t q;
    ((struct target_in *)o)->avg = true;
    return tg_qty(c, v, p, &q);
}
static const struct gs__sc_field target_fields[] = {{"type", tg_type, true},
                                                    {"averageUtilization", tg_util, false},
                                                    {"value", tg_value, false},
                                                    {"averageValue", tg_avg, false}};
/* A target of a source that takes AverageValue and one more type: allowed is "Utilization or
 * AverageValue" or "Value or AverageValue". */
static int target(struct gs__sc_ctx *c, struct fy_node *v, const char *p, const char *allowed)
{
    struct target_in t = {0};
    if (gs__sc_walk(c, v, p, target_fields, GS__SC_NFIELDS(target_fields), &t))
        return GS_EINVAL;
    bool ok = strcmp(t.type, "AverageValue") == 0 ||
              strcmp(t.type,
                     strcmp(allowed, "Value or AverageValue") == 0 ? "Value" : "Utilization") == 0;
    if (!ok)
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': this metric source takes %s targets",
                            t.type, allowed);
    bool set = strcmp(t.type, "Utilization") == 0 ? t.util
               : strcmp(t.type, "Value") == 0     ? t.value
                                                  : t.avg;
    if (!set || (int)t.util + (int)t.value + (int)t.avg != 1)
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "a %s target sets exactly its own value (averageUtilization, value "
                            "or averageValue)",
                            t.type);
    return 0;
}
static int target_resource(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    (void)o;
    return target(c, v, p, "Utilization or AverageValue");
}
static int target_object(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    (void)o;
    return target(c, v, p, "Value or AverageValue");
}
/* metric: {name, selector} */
static const struct gs__sc_field metric_id_fields[] = {{"name", any_str, true},
                                                       {"selector", any_map, false}};
static int metric_id(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, metric_id_fields, GS__SC_NFIELDS(metric_id_fields), o);
}
static const struct gs__sc_field resource_fields[] = {{"name", any_str, true},
                                                      {"target", target_resource, true}};
static const struct gs__sc_field container_fields[] = {
    {"name", any_str, true}, {"container", any_str, true}, {"target", target_resource, true}};
static const struct gs__sc_field described_fields[] = {
    {"apiVersion", any_str, false}, {"kind", any_str, true}, {"name", any_str, true}};
static int described(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, described_fields, GS__SC_NFIELDS(described_fields), o);
}
static const struct gs__sc_field object_fields[] = {{"describedObject", described, true},
                                                    {"metric", metric_id, true},
                                                    {"target", target_object, true}};
static const struct gs__sc_field external_fields[] = {{"metric", metric_id, true},
                                                      {"target", target_object, true}};

static const struct {
    const char *type, *member;
    const struct gs__sc_field *fields;
    size_t nf;
} sources[] = {
    {"Resource", "resource", resource_fields, GS__SC_NFIELDS(resource_fields)},
    {"ContainerResource", "containerResource", container_fields, GS__SC_NFIELDS(container_fields)},
    {"Object", "object", object_fields, GS__SC_NFIELDS(object_fields)},
    {"External", "external", external_fields, GS__SC_NFIELDS(external_fields)},
};

int gs__sc_hpa_source(struct gs__sc_ctx *c, struct fy_node *entry, const char *p, const char *type,
                      struct gs_hpa_metric *out)
{
    for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
        if (strcmp(sources[i].type, type) != 0)
            continue;
        struct fy_node *m = fy_node_mapping_lookup_by_string(entry, sources[i].member, -1);
        char sub[256];
        snprintf(sub, sizeof(sub), "%s.%s", p, sources[i].member);
        if (!m)
            return gs_yaml_fail(&c->y, entry, p, c->err, "a metric of type %s needs '%s'", type,
                                sources[i].member);
        if (gs__sc_walk(c, m, sub, sources[i].fields, sources[i].nf, NULL))
            return GS_EINVAL;
        /* the metric's name: resource name, else metric.name (the walk checked both) */
        struct fy_node *id = fy_node_mapping_lookup_by_string(m, "metric", -1);
        struct fy_node *nm = fy_node_mapping_lookup_by_string(id ? id : m, "name", -1);
        char name[GS_HPA_METRIC_MAX - 20];
        if (gs_yaml_str(&c->y, nm, sub, name, sizeof(name), c->err))
            return GS_EINVAL;
        memset(out, 0, sizeof(*out));
        snprintf(out->name, sizeof(out->name), "%s %s", type, name);
        return 0;
    }
    return gs_yaml_fail(&c->y, entry, p, c->err,
                        "'%s': expected Pods, Resource, ContainerResource, Object or External",
                        type);
}
