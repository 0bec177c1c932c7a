/* hpa.c - the HPA controller's replica arithmetic (see hpa.h), step for step as
 * pkg/controller/podautoscaler computes it: the replica calculator's plain-metric path
 * (calcPlainMetricReplicas), computeReplicasForMetrics' choice over metrics, and
 * normalizeDesiredReplicasWithBehaviors (stabilizeRecommendationWithBehaviors, then
 * convertDesiredReplicasWithBehaviorRate), with storeScaleEvent's bookkeeping. The simulator's
 * services (sim/service.c) call it every 15 simulated seconds. */
#include "hpa.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void gs_hpa_rules_default_up(struct gs_hpa_rules *r)
{
    memset(r, 0, sizeof(*r));
    r->window_s = 0;
    r->select = GS_HPA_SELECT_MAX;
    r->tolerance = GS_HPA_TOLERANCE;
    r->npolicies = 2;
    r->policy[0] = (struct gs_hpa_policy){GS_HPA_POLICY_PODS, 4, 15};
    r->policy[1] = (struct gs_hpa_policy){GS_HPA_POLICY_PERCENT, 100, 15};
}

void gs_hpa_rules_default_down(struct gs_hpa_rules *r)
{
    memset(r, 0, sizeof(*r));
    r->window_s = 300;
    r->select = GS_HPA_SELECT_MAX;
    r->tolerance = GS_HPA_TOLERANCE;
    r->npolicies = 1;
    r->policy[0] = (struct gs_hpa_policy){GS_HPA_POLICY_PERCENT, 100, 15};
}

void gs_hpa_spec_article(struct gs_hpa_spec *s)
{
    memset(s, 0, sizeof(*s));
    s->min_replicas = 2;
    s->max_replicas = 20;
    s->nmetrics = 2;
    snprintf(s->metric[0].name, sizeof(s->metric[0].name), "gpu_utilization");
    s->metric[0].target = 70;
    snprintf(s->metric[1].name, sizeof(s->metric[1].name), "request_latency_ms");
    s->metric[1].target = 200;
    gs_hpa_rules_default_up(&s->up);
    s->up.window_s = 60;
    s->up.npolicies = 1;
    s->up.policy[0] = (struct gs_hpa_policy){GS_HPA_POLICY_PERCENT, 50, 120};
    gs_hpa_rules_default_down(&s->down);
    s->down.window_s = 300;
    s->down.policy[0] = (struct gs_hpa_policy){GS_HPA_POLICY_PERCENT, 25, 300};
}

void gs_hpa_state_init(struct gs_hpa_state *st)
{
    memset(st, 0, sizeof(*st));
}

static int32_t clamp_i32(double v)
{
    if (!(v < (double)(INT32_MAX / 2)))
        return INT32_MAX / 2;
    if (v < 0)
        return 0;
    return (int32_t)v;
}

static bool within(const struct gs_hpa_spec *s, double ratio)
{
    return 1.0 - s->down.tolerance <= ratio && ratio <= 1.0 + s->up.tolerance;
}

int32_t gs_hpa_metric_replicas(const struct gs_hpa_spec *s, int32_t current, double target,
                               const struct gs_hpa_obs *o)
{
    if (o->nready <= 0 || !(target > 0))
        return -1; /* "did not receive metrics for targeted pods" */
    double ratio = o->sum / o->nready / target;
    bool up_unready = o->nunready > 0 && ratio > 1.0;
    if (!up_unready && o->nmissing == 0) {
        if (within(s, ratio))
            return current;
        return clamp_i32(ceil(ratio * o->nready));
    }
    /* pods without a value: on a scale-down a missing pod uses exactly the target, on a
     * scale-up missing and pending pods use nothing; at a ratio of exactly 1 the missing
     * pods are left out (the ratio stays 1: no change) */
    double sum = o->sum;
    int32_t n = o->nready;
    if (o->nmissing > 0 && ratio != 1.0)
        n += o->nmissing;
    if (o->nmissing > 0 && ratio < 1.0)
        sum += target * o->nmissing;
    if (up_unready)
        n += o->nunready;
    double nr = sum / n / target;
    if (within(s, nr) || (ratio < 1.0 && nr > 1.0) || (ratio > 1.0 && nr < 1.0))
        return current; /* too small a change, or the unready pods would turn it around */
    int32_t r = clamp_i32(ceil(nr * n));
    if ((nr < 1.0 && r > current) || (nr > 1.0 && r < current))
        return current;
    return r;
}

/* getReplicasChangePerPeriod: the changes strictly younger than the period */
static int32_t change_within(const struct gs_hpa_stamp *e, int n, double now, int32_t period_s)
{
    int32_t sum = 0;
    for (int i = 0; i < n; i++)
        if (e[i].t > now - period_s)
            sum += e[i].v;
    return sum;
}

static int32_t up_limit(const struct gs_hpa_state *st, const struct gs_hpa_rules *r, double now,
                        int32_t current)
{
    if (r->select == GS_HPA_SELECT_DISABLED)
        return current;
    bool take_min = r->select == GS_HPA_SELECT_MIN;
    int32_t result = take_min ? INT32_MAX : INT32_MIN;
    for (int i = 0; i < r->npolicies; i++) {
        const struct gs_hpa_policy *p = &r->policy[i];
        int32_t start = current - change_within(st->up, st->nup, now, p->period_s) +
                        change_within(st->down, st->ndown, now, p->period_s);
        int32_t proposed = p->type == GS_HPA_POLICY_PODS
                               ? start + p->value
                               : clamp_i32(ceil((double)start * (1.0 + p->value / 100.0)));
        result = take_min ? (proposed < result ? proposed : result)
                          : (proposed > result ? proposed : result);
    }
    return result;
}

static int32_t down_limit(const struct gs_hpa_state *st, const struct gs_hpa_rules *r, double now,
                          int32_t current)
{
    if (r->select == GS_HPA_SELECT_DISABLED)
        return current;
    bool least_change = r->select == GS_HPA_SELECT_MIN; /* the smallest change: the highest */
    int32_t result = least_change ? INT32_MIN : INT32_MAX;
    for (int i = 0; i < r->npolicies; i++) {
        const struct gs_hpa_policy *p = &r->policy[i];
        int32_t start = current - change_within(st->up, st->nup, now, p->period_s) +
                        change_within(st->down, st->ndown, now, p->period_s);
        int32_t proposed = p->type == GS_HPA_POLICY_PODS
                               ? start - p->value
                               : (int32_t)((double)start * (1.0 - p->value / 100.0));
        result = least_change ? (proposed > result ? proposed : result)
                              : (proposed < result ? proposed : result);
    }
    return result;
}

/* Put a stamp where the controller would: over the last reusable entry (index found), else
 * at the end, else (the array full) over the oldest. */
static void put(struct gs_hpa_stamp *e, int *n, int found, double t, int32_t v)
{
    struct gs_hpa_stamp s = {t, v, false};
    if (found >= 0) {
        e[found] = s;
        return;
    }
    if (*n < GS_HPA_HISTORY) {
        e[(*n)++] = s;
        return;
    }
    int old = 0;
    for (int i = 1; i < *n; i++)
        if (e[i].t < e[old].t)
            old = i;
    e[old] = s;
}

static int32_t longest_period(const struct gs_hpa_rules *r)
{
    int32_t l = 0;
    for (int i = 0; i < r->npolicies; i++)
        if (r->policy[i].period_s > l)
            l = r->policy[i].period_s;
    return l;
}

/* storeScaleEvent: events older than the direction's longest period are marked outdated and
 * the last of them is reused. */
static void store_event(struct gs_hpa_state *st, const struct gs_hpa_spec *s, double now,
                        int32_t from, int32_t to)
{
    bool up = to > from;
    struct gs_hpa_stamp *e = up ? st->up : st->down;
    int *n = up ? &st->nup : &st->ndown;
    double cutoff = now - longest_period(up ? &s->up : &s->down);
    int found = -1;
    for (int i = 0; i < *n; i++) {
        if (e[i].t < cutoff)
            e[i].outdated = true;
        if (e[i].outdated)
            found = i;
    }
    put(e, n, found, now, up ? to - from : from - to);
}

int32_t gs_hpa_sync(const struct gs_hpa_spec *s, struct gs_hpa_state *st, double now,
                    int32_t current, const struct gs_hpa_obs *obs, struct gs_hpa_decision *d)
{
    struct gs_hpa_decision dd = {current, -1, current, -1, "DesiredWithinRange"};
    int32_t minr = s->min_replicas > 0 ? s->min_replicas : 1;
    int32_t desired = current;
    if (current == 0 && minr != 0) {
        dd.reason = "ScalingDisabled";
        goto out;
    }
    if (current > s->max_replicas) {
        desired = s->max_replicas;
        dd.reason = "TooManyReplicas";
    } else if (current < minr) {
        desired = minr;
        dd.reason = "TooFewReplicas";
    } else {
        /* computeReplicasForMetrics */
        int32_t proposal = 0;
        int invalid = 0;
        for (int m = 0; m < s->nmetrics; m++) {
            int32_t r = gs_hpa_metric_replicas(s, current, s->metric[m].target, &obs[m]);
            if (r < 0) {
                invalid++;
            } else if (dd.metric < 0 || r > proposal) {
                proposal = r; /* the first valid one, then the highest */
                dd.metric = m;
            }
        }
        if (s->nmetrics == 0 || invalid >= s->nmetrics || (invalid > 0 && proposal < current)) {
            dd.metric = -1;
            dd.reason = "FailedGetPodsMetric";
            goto out;
        }
        dd.proposal = proposal;
        /* stabilizeRecommendationWithBehaviors */
        double up_cut = now - s->up.window_s, down_cut = now - s->down.window_s;
        int32_t upr = proposal, downr = proposal;
        int found = -1;
        for (int i = 0; i < st->nrec; i++) {
            const struct gs_hpa_stamp *r = &st->rec[i];
            if (r->t > up_cut && r->v < upr)
                upr = r->v;
            if (r->t > down_cut && r->v > downr)
                downr = r->v;
            if (r->t < up_cut && r->t < down_cut)
                found = i;
        }
        int32_t stab = current;
        if (stab < upr)
            stab = upr;
        if (stab > downr)
            stab = downr;
        put(st->rec, &st->nrec, found, now, proposal);
        dd.stabilized = stab;
        if (stab != proposal)
            dd.reason = proposal >= current ? "ScaleUpStabilized" : "ScaleDownStabilized";
        /* convertDesiredReplicasWithBehaviorRate */
        desired = stab;
        if (stab > current) {
            int32_t lim = up_limit(st, &s->up, now, current);
            if (lim < current)
                lim = current;
            int32_t most = s->max_replicas;
            const char *why = "TooManyReplicas";
            if (most > lim) {
                most = lim;
                why = "ScaleUpLimit";
            }
            if (stab > most) {
                desired = most;
                dd.reason = why;
            }
        } else if (stab < current) {
            int32_t lim = down_limit(st, &s->down, now, current);
            if (lim > current)
                lim = current;
            int32_t least = minr;
            const char *why = "TooFewReplicas";
            if (least < lim) {
                least = lim;
                why = "ScaleDownLimit";
            }
            if (stab < least) {
                desired = least;
                dd.reason = why;
            }
        }
    }
    if (desired != current)
        store_event(st, s, now, current, desired);
out:
    dd.desired = desired;
    if (d)
        *d = dd;
    return desired;
}
