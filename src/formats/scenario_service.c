/* scenario_service.c - the tenancy and services part of a scenario file (scenario.h):
 * tenants (quota, limit, weight) and the service block of an online-inference class (its
 * replicas, load, latency and HorizontalPodAutoscaler), read by the table-driven walk of
 * scenario.c (scenario_internal.h). */
#include "scenario_internal.h"

#include "../base/error.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- services: an online-inference class run as a Deployment under an HPA ---- */
#define SVC(o) ((struct gs_sc_service *)(o))
static int get_count(struct gs__sc_ctx *c, struct fy_node *v, const char *p, int64_t lo, int64_t hi,
                     int32_t *out)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, lo, hi, &n, c->err))
        return GS_EINVAL;
    *out = (int32_t)n;
    return 0;
}
static int get_span(struct gs__sc_ctx *c, struct fy_node *v, const char *p, double lo, double hi,
                    double *out)
{
    if (gs__sc_duration(c, v, p, out))
        return GS_EINVAL;
    if (*out < lo || *out > hi)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a duration between %gs and %gs", lo, hi);
    return 0;
}
static int sv_replicas(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 0, GS_SC_MAX_REPLICAS, &SVC(o)->replicas);
}
static int sv_fixed(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, GS_SC_MAX_REPLICAS, &SVC(o)->fixed_replicas);
}
static int sv_autoscale(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_bool(&c->y, v, p, &SVC(o)->autoscale, c->err);
}
static int sv_capacity(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (gs_yaml_double(&c->y, v, p, 0, 1e6, &SVC(o)->capacity, c->err))
        return GS_EINVAL;
    if (SVC(o)->capacity <= 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected requests per second above 0");
    return 0;
}
static int sv_startup(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0, 3600, &SVC(o)->startup_s);
}
static int lat_base(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0.001, 3600, &SVC(o)->latency_s);
}
static int lat_max(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0.001, 3600, &SVC(o)->latency_max_s);
}
static int lat_sla(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0.001, 3600, &SVC(o)->latency_sla_s);
}
static const struct gs__sc_field latency_fields[] = {
    {"base", lat_base, true}, {"max", lat_max, false}, {"sla", lat_sla, false}};
static int sv_latency(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    if (gs__sc_walk(c, v, p, latency_fields, GS__SC_NFIELDS(latency_fields), o))
        return GS_EINVAL;
    if (SVC(o)->latency_sla_s > SVC(o)->latency_max_s || SVC(o)->latency_s >= SVC(o)->latency_max_s)
        return gs_yaml_fail(&c->y, v, p, c->err,
                            "expected base < max and sla <= max (max: the request timeout, 30s "
                            "unless given; sla: 1s unless given)");
    return 0;
}
static int ld_rate(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1e7, &SVC(o)->rate, c->err);
}
static int di_amplitude(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1, &SVC(o)->amplitude, c->err);
}
static int di_peak(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0, 365 * 86400.0, &SVC(o)->peak_s);
}
static int di_period(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 60, 365 * 86400.0, &SVC(o)->period_s);
}
static const struct gs__sc_field diurnal_fields[] = {
    {"amplitude", di_amplitude, true}, {"peak", di_peak, false}, {"period", di_period, false}};
static int ld_diurnal(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, diurnal_fields, GS__SC_NFIELDS(diurnal_fields), o);
}
static int ld_noise(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 2, &SVC(o)->noise, c->err);
}
#define BURST(o) ((struct gs_sc_burst *)(o))
static int bu_at(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 0, 365 * 86400.0, &BURST(o)->at_s);
}
static int bu_duration(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 1, 86400, &BURST(o)->duration_s);
}
static int bu_factor(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 100, &BURST(o)->factor, c->err);
}
static const struct gs__sc_field burst_fields[] = {
    {"at", bu_at, true}, {"duration", bu_duration, true}, {"factor", bu_factor, true}};
static int ld_bursts(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
        if (gs__sc_walk(c, e, sub, burst_fields, GS__SC_NFIELDS(burst_fields),
                        &s->burst[s->nbursts]))
            return GS_EINVAL;
        s->nbursts++;
    }
    return 0;
}
static int rb_per_day(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 1000, &SVC(o)->random.per_day, c->err);
}
static int rb_duration(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_span(c, v, p, 1, 86400, &SVC(o)->random.duration_s);
}
static int rb_factor(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_double(&c->y, v, p, 0, 100, &SVC(o)->random.factor, c->err);
}
static const struct gs__sc_field random_fields[] = {
    {"per_day", rb_per_day, true}, {"duration", rb_duration, true}, {"factor", rb_factor, true}};
static int ld_random(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, random_fields, GS__SC_NFIELDS(random_fields), o);
}
static const struct gs__sc_field load_fields[] = {
    {"rate", ld_rate, true},      {"diurnal", ld_diurnal, false},      {"noise", ld_noise, false},
    {"bursts", ld_bursts, false}, {"random_bursts", ld_random, false},
};
static int sv_load(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, load_fields, GS__SC_NFIELDS(load_fields), o);
}

/* hpa: the fields of an autoscaling/v2 HorizontalPodAutoscaler's spec, over the article's;
 * the object around it, scaleTargetRef and the other metric sources are scenario_hpa.c's */
#define HPA(o)   ((struct gs_hpa_spec *)(o))
#define RULES(o) ((struct gs_hpa_rules *)(o))
static int hp_min(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, GS_SC_MAX_REPLICAS, &HPA(o)->min_replicas);
}
static int hp_max(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, GS_SC_MAX_REPLICAS, &HPA(o)->max_replicas);
}
/* one entry of spec.metrics: {type: Pods, pods: {metric: {name}, target: {type: AverageValue,
 * averageValue}}} */
struct metric_in {
    struct gs_hpa_metric *m;
    bool pods;
    char type[32]; /* Pods, or a source scenario_hpa.c checks */
};
static int mn_name(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
static int mn_selector(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    (void)o;
    return gs_yaml_is_map(v) ? 0 : gs_yaml_fail(&c->y, v, p, c->err, "expected a label selector");
}
static const struct gs__sc_field metric_id_fields[] = {{"name", mn_name, true},
                                                       {"selector", mn_selector, false}};
static int mp_metric(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, metric_id_fields, GS__SC_NFIELDS(metric_id_fields), o);
}
static int mt_type(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    char b[32];
    if (gs_yaml_str(&c->y, v, p, b, sizeof(b), c->err))
        return GS_EINVAL;
    if (strcmp(b, "AverageValue") != 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "'%s': Pods metrics take AverageValue targets", b);
    return 0;
}
static int mt_value(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t milli = 0;
    if (gs__sc_quantity(c, v, p, 1, true, &milli))
        return GS_EINVAL;
    if (milli <= 0)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a target above 0");
    ((struct metric_in *)o)->m->target = (double)milli / 1000.0;
    return 0;
}
static const struct gs__sc_field target_fields[] = {{"type", mt_type, true},
                                                    {"averageValue", mt_value, true}};
static int mp_target(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, target_fields, GS__SC_NFIELDS(target_fields), o);
}
static const struct gs__sc_field pods_fields[] = {{"metric", mp_metric, true},
                                                  {"target", mp_target, true}};
/* type first: the source it names is read after the entry (scenario_hpa.c for all but Pods) */
static int me_type(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct metric_in *in = o;
    return gs_yaml_str(&c->y, v, p, in->type, sizeof(in->type), c->err);
}
static int me_pods(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    ((struct metric_in *)o)->pods = true;
    return gs__sc_walk(c, v, p, pods_fields, GS__SC_NFIELDS(pods_fields), o);
}
static int me_other(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    (void)o;
    return gs_yaml_is_map(v) ? 0 : gs_yaml_fail(&c->y, v, p, c->err, "expected a mapping");
}
static const struct gs__sc_field metric_fields[] = {
    {"type", me_type, true},       {"pods", me_pods, false},
    {"resource", me_other, false}, {"containerResource", me_other, false},
    {"object", me_other, false},   {"external", me_other, false},
};
static int hp_metrics(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
        struct metric_in in = {&h->metric[h->nmetrics], false, ""};
        memset(in.m, 0, sizeof(*in.m));
        if (gs__sc_walk(c, e, sub, metric_fields, GS__SC_NFIELDS(metric_fields), &in))
            return GS_EINVAL;
        if (strcmp(in.type, "Pods") != 0) {
            if (gs__sc_hpa_source(c, e, sub, in.type, in.m))
                return GS_EINVAL;
            h->nmetrics++;
            continue;
        }
        if (!in.pods)
            return gs_yaml_fail(&c->y, e, sub, c->err, "a Pods metric needs 'pods'");
        for (int k = 0; k < h->nmetrics; k++)
            if (strcmp(h->metric[k].name, in.m->name) == 0)
                return gs_yaml_fail(&c->y, e, sub, c->err, "metric '%s' is already %s[%d]",
                                    in.m->name, p, k);
        h->nmetrics++;
    }
    return 0;
}
static int ru_window(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 0, 3600, &RULES(o)->window_s);
}
static int ru_select(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
static int ru_tolerance(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t milli = 0;
    if (gs__sc_quantity(c, v, p, 1, true, &milli))
        return GS_EINVAL;
    if (milli > 10000)
        return gs_yaml_fail(&c->y, v, p, c->err, "expected a tolerance such as 0.1");
    RULES(o)->tolerance = (double)milli / 1000.0;
    return 0;
}
#define POL(o) ((struct gs_hpa_policy *)(o))
static int po_type(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
static int po_value(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, 100000, &POL(o)->value);
}
static int po_period(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return get_count(c, v, p, 1, 1800, &POL(o)->period_s);
}
static const struct gs__sc_field policy_fields[] = {
    {"type", po_type, true}, {"value", po_value, true}, {"periodSeconds", po_period, true}};
static int ru_policies(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
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
        if (gs__sc_walk(c, e, sub, policy_fields, GS__SC_NFIELDS(policy_fields),
                        &r->policy[r->npolicies]))
            return GS_EINVAL;
        r->npolicies++;
    }
    return 0;
}
static const struct gs__sc_field rules_fields[] = {
    {"stabilizationWindowSeconds", ru_window, false},
    {"selectPolicy", ru_select, false},
    {"policies", ru_policies, false},
    {"tolerance", ru_tolerance, false},
};
static int be_up(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, rules_fields, GS__SC_NFIELDS(rules_fields), &HPA(o)->up);
}
static int be_down(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, rules_fields, GS__SC_NFIELDS(rules_fields), &HPA(o)->down);
}
static const struct gs__sc_field behavior_fields[] = {{"scaleUp", be_up, false},
                                                      {"scaleDown", be_down, false}};
static int hp_behavior(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, behavior_fields, GS__SC_NFIELDS(behavior_fields), o);
}
static const struct gs__sc_field hpa_fields[] = {
    {"scaleTargetRef", gs__sc_hpa_target, false},
    {"minReplicas", hp_min, false},
    {"maxReplicas", hp_max, false},
    {"metrics", hp_metrics, false},
    {"behavior", hp_behavior, false},
};
static int hpa_spec(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_walk(c, v, p, hpa_fields, GS__SC_NFIELDS(hpa_fields), o);
}
/* hpa: the spec's fields, or the whole HorizontalPodAutoscaler object (the article's
 * gpu-hpa.yaml as it is) */
static int sv_hpa(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_hpa_spec *h = &SVC(o)->hpa;
    if (gs__sc_hpa_is_object(v) ? gs__sc_hpa_object(c, v, p, hpa_spec, h) : hpa_spec(c, v, p, h))
        return GS_EINVAL;
    if (h->min_replicas > h->max_replicas)
        return gs_yaml_fail(&c->y, v, p, c->err, "minReplicas %d is above maxReplicas %d",
                            (int)h->min_replicas, (int)h->max_replicas);
    return 0;
}
static const struct gs__sc_field service_fields[] = {
    {"replicas", sv_replicas, false},
    {"fixed_replicas", sv_fixed, false},
    {"autoscale", sv_autoscale, false},
    {"capacity", sv_capacity, true},
    {"latency", sv_latency, true},
    {"startup", sv_startup, false},
    {"load", sv_load, true},
    {"hpa", sv_hpa, false},
};
int gs__sc_service(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    struct gs_sc_service *s = &CLS(o)->service;
    s->on = true;
    s->replicas = -1;
    s->autoscale = true;
    s->latency_max_s = 30;
    s->latency_sla_s = 1;
    s->period_s = 86400;
    gs_hpa_spec_article(&s->hpa);
    if (gs__sc_walk(c, v, p, service_fields, GS__SC_NFIELDS(service_fields), s))
        return GS_EINVAL;
    if (s->peak_s > s->period_s)
        return gs_yaml_fail(&c->y, v, p, c->err, "load.diurnal.peak is past its period");
    if (s->replicas < 0)
        s->replicas = s->hpa.min_replicas;
    return 0;
}

/* ---- tenants ---- */
#define TEN(o) ((struct gs_sc_tenant *)(o))
static int t_name(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, TEN(o)->name, GS_NAME_MAX, c->err);
}
static int t_ns(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs_yaml_str(&c->y, v, p, TEN(o)->ns, GS_NAME_MAX, c->err);
}
static int res_map(struct gs__sc_ctx *c, struct fy_node *v, const char *p, int *n,
                   char (*names)[64], int64_t *values)
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
        if (gs__sc_quantity(c, fy_node_pair_value(pr), p, 1, false, &values[*n]))
            return GS_EINVAL;
        (*n)++;
    }
    return 0;
}
static int t_quota(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return res_map(c, v, p, &TEN(o)->nquota, TEN(o)->quota_name, TEN(o)->quota_value);
}
static int t_limit(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return res_map(c, v, p, &TEN(o)->nlimit, TEN(o)->limit_name, TEN(o)->limit_value);
}
static int t_weight(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    int64_t n;
    if (gs_yaml_int(&c->y, v, p, 1, 1000, &n, c->err))
        return GS_EINVAL;
    TEN(o)->weight = (int)n;
    return 0;
}
static const struct gs__sc_field tenant_fields[] = {
    {"name", t_name, true},    {"namespace", t_ns, false},  {"quota", t_quota, false},
    {"limit", t_limit, false}, {"weight", t_weight, false},
};

static void init_tenant(void *o)
{
    memset(o, 0, sizeof(struct gs_sc_tenant));
}
int gs__sc_tenants(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o)
{
    return gs__sc_list(c, v, p, SC(o)->tenants, sizeof(struct gs_sc_tenant),
                       offsetof(struct gs_sc_tenant, name), &SC(o)->ntenants, GS_SC_MAX_TENANTS,
                       tenant_fields, GS__SC_NFIELDS(tenant_fields), init_tenant);
}
