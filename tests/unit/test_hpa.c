/* The HPA's arithmetic (core/hpa.h) against cases worked out by hand from the Kubernetes HPA
 * controller's algorithm: the replica calculator (tolerance, pending and missing pods), the
 * highest proposal over metrics, minReplicas/maxReplicas, the stabilization windows and the
 * rate policies, with the article's gpu-hpa.yaml (2..20 replicas, gpu_utilization 70 and
 * request_latency_ms 200; up: 60 s window, +50 % per 120 s; down: 300 s window, -25 % per
 * 300 s). */
#include "core/hpa.h"

#include <criterion/criterion.h>
#include <string.h>

static struct gs_hpa_obs ready(int n, double avg)
{
    struct gs_hpa_obs o = {.sum = avg * n, .nready = n};
    return o;
}

/* One sync of the article's HPA with every replica ready, reporting these averages. */
static int32_t sync_avg(const struct gs_hpa_spec *s, struct gs_hpa_state *st, double t,
                        int32_t current, double util, double latency_ms, struct gs_hpa_decision *d)
{
    struct gs_hpa_obs o[2] = {ready(current, util), ready(current, latency_ms)};
    return gs_hpa_sync(s, st, t, current, o, d);
}

struct calc_case {
    const char *name;
    int32_t current;
    double target;
    struct gs_hpa_obs obs;
    int32_t want;
};

Test(hpa, replica_calculator_cases)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    const struct calc_case cases[] = {
        /* 4 pods at 105 against 70: ratio 1.5, ceil(1.5 * 4) */
        {"above target", 4, 70, {420, 4, 0, 0}, 6},
        /* ratio 75/70 = 1.071: within the 10 % tolerance */
        {"within tolerance above", 4, 70, {300, 4, 0, 0}, 4},
        /* ratio 64/70 = 0.914: within */
        {"within tolerance below", 4, 70, {256, 4, 0, 0}, 4},
        /* ratio 78/70 = 1.114: outside, ceil(4.457) */
        {"just past tolerance", 4, 70, {312, 4, 0, 0}, 5},
        /* ratio 35/70 = 0.5: ceil(2) */
        {"below target", 4, 70, {140, 4, 0, 0}, 2},
        /* 4 ready at 105 (ratio 1.5 > 1) and 2 pending counted as 0: 420 / 6 / 70 = 1.0,
         * within the tolerance: no change */
        {"pending pods damp a scale-up", 6, 70, {420, 4, 2, 0}, 6},
        /* 4 ready at 140, 2 pending at 0: 560 / 6 / 70 = 1.333, ceil(8) */
        {"pending pods count as 0", 6, 70, {560, 4, 2, 0}, 8},
        /* scaling down (ratio 28/70 = 0.4), 2 running pods without a value count as the
         * target: (112 + 140) / 6 / 70 = 0.6, ceil(3.6) */
        {"missing pods count as the target going down", 6, 70, {112, 4, 0, 2}, 4},
        /* scaling up (ratio 2), 2 missing pods count as 0: 560 / 6 / 70 = 1.333 -> 8 */
        {"missing pods count as 0 going up", 6, 70, {560, 4, 0, 2}, 8},
        /* pending pods only matter going up: ratio 0.5 with 2 pending, 4 ready -> ceil(2) */
        {"pending pods ignored going down", 6, 70, {140, 4, 2, 0}, 2},
        /* ratio 1.2 with 4 missing at 0: 336 / 8 / 70 = 0.6 turns the direction around */
        {"missing pods that turn the direction keep current", 8, 70, {336, 4, 0, 4}, 8},
        {"no pod reports a value", 3, 70, {0, 0, 3, 0}, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int32_t got = gs_hpa_metric_replicas(&s, cases[i].current, cases[i].target, &cases[i].obs);
        cr_expect_eq(got, cases[i].want, "%s: got %d, want %d", cases[i].name, got, cases[i].want);
    }
}

Test(hpa, the_highest_metric_wins_and_tolerance_holds)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    struct gs_hpa_state st;
    struct gs_hpa_decision d;
    /* utilization 75 (1.07) and latency 210 ms (1.05): both within the tolerance */
    gs_hpa_state_init(&st);
    cr_assert_eq(sync_avg(&s, &st, 0, 4, 75, 210, &d), 4);
    cr_assert_eq(d.proposal, 4);
    /* utilization 35 (0.5 -> 2) but latency 400 ms (2.0 -> 8): the proposal is 8, set by
     * the latency; the first sync has no history, so only the rate policy (+50 %) limits */
    gs_hpa_state_init(&st);
    cr_assert_eq(sync_avg(&s, &st, 0, 4, 35, 400, &d), 6);
    cr_assert_eq(d.proposal, 8);
    cr_assert_eq(d.metric, 1, "request_latency_ms set it, got %d", d.metric);
    cr_assert_str_eq(d.reason, "ScaleUpLimit");
    /* utilization 50 (0.714 -> ceil(2.86) = 3) and latency 100 (0.5 -> 2): 3, one down */
    gs_hpa_state_init(&st);
    cr_assert_eq(sync_avg(&s, &st, 0, 4, 50, 100, &d), 3);
    cr_assert_eq(d.proposal, 3);
}

Test(hpa, min_and_max_replicas)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    struct gs_hpa_state st;
    struct gs_hpa_decision d;
    /* outside the bounds the bound is taken at once, whatever the metrics */
    gs_hpa_state_init(&st);
    cr_assert_eq(sync_avg(&s, &st, 0, 25, 700, 2000, &d), 20);
    cr_assert_str_eq(d.reason, "TooManyReplicas");
    gs_hpa_state_init(&st);
    cr_assert_eq(sync_avg(&s, &st, 0, 1, 1, 1, &d), 2);
    cr_assert_str_eq(d.reason, "TooFewReplicas");
    /* 16 replicas at 175 (2.5 -> 40): +50 % would allow 24, maxReplicas allows 20 */
    gs_hpa_state_init(&st);
    cr_assert_eq(sync_avg(&s, &st, 0, 16, 175, 200, &d), 20);
    cr_assert_eq(d.proposal, 40);
    cr_assert_str_eq(d.reason, "TooManyReplicas");
    /* 3 replicas nearly idle (0.1 -> 1): -25 % allows trunc(2.25) = 2, minReplicas 2 */
    gs_hpa_state_init(&st);
    cr_assert_eq(sync_avg(&s, &st, 0, 3, 7, 20, &d), 2);
    cr_assert_eq(d.proposal, 1);
    cr_assert_str_eq(d.reason, "TooFewReplicas");
}

struct step {
    double t;
    double util, latency_ms; /* averages the replicas report */
    int32_t want;            /* replicas after this sync */
};

/* Sync every 15 s from `from` to `to`, each sync reporting one step's averages at the count
 * the previous sync left, and check the count. */
static int32_t run(const struct gs_hpa_spec *s, struct gs_hpa_state *st, int32_t current,
                   const struct step *steps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct gs_hpa_decision d;
        current = sync_avg(s, st, steps[i].t, current, steps[i].util, steps[i].latency_ms, &d);
        cr_assert_eq(current, steps[i].want, "t=%.0f: %d replicas (%s, proposal %d), want %d",
                     steps[i].t, current, d.reason, d.proposal, steps[i].want);
    }
    return current;
}

Test(hpa, scale_up_waits_out_its_window_and_adds_at_most_half_per_120s)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    struct gs_hpa_state st;
    gs_hpa_state_init(&st);
    /* on target at 4 replicas until t=45; from t=60 utilization 210 (3x: proposal 12). The
     * scale-up window (60 s) takes the lowest proposal strictly younger than 60 s: the 4 of
     * t=45 holds until t=105, where +50 % of 4 gives 6. */
    const struct step rise[] = {
        {0, 70, 200, 4},   {15, 70, 200, 4},  {30, 70, 200, 4},  {45, 70, 200, 4},
        {60, 210, 200, 4}, {75, 210, 200, 4}, {90, 210, 200, 4}, {105, 210, 200, 6},
    };
    int32_t n = run(&s, &st, 4, rise, sizeof(rise) / sizeof(rise[0]));
    /* 6 replicas at 140 (2x: still 12). The +2 of t=105 counts until it is 120 s old: the
     * period starts at 4 replicas, the limit stays 6; at t=225 the period starts at 6 and
     * allows 9; at t=345 it starts at 9, allowing 14, and the proposal 12 is reached. */
    struct step hold[17];
    size_t k = 0;
    for (double t = 120; t <= 210; t += 15)
        hold[k++] = (struct step){t, 140, 200, 6};
    hold[k++] = (struct step){225, 140, 200, 9};
    n = run(&s, &st, n, hold, k);
    k = 0;
    for (double t = 240; t <= 330; t += 15)
        hold[k++] = (struct step){t, 91, 200, 9}; /* 1.3 -> ceil(11.7) = 12 */
    hold[k++] = (struct step){345, 91, 200, 12};
    run(&s, &st, n, hold, k);
}

Test(hpa, scale_down_is_held_for_the_300s_window_then_25_percent_per_300s)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    struct gs_hpa_state st;
    gs_hpa_state_init(&st);
    struct step steps[100];
    size_t k = 0;
    for (double t = 0; t <= 285; t += 15)
        steps[k++] = (struct step){t, 70, 200, 12};
    /* from t=300 both metrics at 0.3 of target (proposal 4): the highest proposal strictly
     * younger than 300 s is 12 until the one of t=285 ages out at t=585 */
    for (double t = 300; t <= 570; t += 15)
        steps[k++] = (struct step){t, 21, 60, 12};
    steps[k++] = (struct step){585, 21, 60, 9}; /* trunc(12 * 0.75) */
    int32_t n = run(&s, &st, 12, steps, k);
    /* the -3 of t=585 counts for 300 s: the period starts at 12 again, the limit stays 9 */
    k = 0;
    for (double t = 600; t <= 870; t += 15)
        steps[k++] = (struct step){t, 28, 80, 9}; /* 0.4 of target: ceil(3.6) = 4 */
    steps[k++] = (struct step){885, 28, 80, 6};   /* trunc(9 * 0.75) */
    n = run(&s, &st, n, steps, k);
    k = 0;
    for (double t = 900; t <= 1170; t += 15)
        steps[k++] = (struct step){t, 42, 120, 6}; /* 0.6: ceil(3.6) = 4 */
    steps[k++] = (struct step){1185, 42, 120, 4};  /* trunc(4.5) = 4 = the proposal */
    run(&s, &st, n, steps, k);
}

Test(hpa, a_short_dip_does_not_scale_down)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    struct gs_hpa_state st;
    gs_hpa_state_init(&st);
    struct step steps[80];
    size_t k = 0;
    for (double t = 0; t <= 285; t += 15)
        steps[k++] = (struct step){t, 70, 200, 10};
    for (double t = 300; t <= 420; t += 15) /* two minutes at a third of the load */
        steps[k++] = (struct step){t, 23, 60, 10};
    for (double t = 435; t <= 900; t += 15)
        steps[k++] = (struct step){t, 70, 200, 10};
    run(&s, &st, 10, steps, k);
}

Test(hpa, select_policy_max_min_and_disabled)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    s.up.window_s = 0;
    s.up.npolicies = 2;
    s.up.policy[0] = (struct gs_hpa_policy){GS_HPA_POLICY_PODS, 4, 60};
    s.up.policy[1] = (struct gs_hpa_policy){GS_HPA_POLICY_PERCENT, 100, 60};
    /* 2 replicas at 350 (5x: proposal 10): Pods allows 2 + 4 = 6, Percent 2 * 2 = 4 */
    int32_t want[] = {6, 4, 2};
    enum gs_hpa_select sel[] = {GS_HPA_SELECT_MAX, GS_HPA_SELECT_MIN, GS_HPA_SELECT_DISABLED};
    for (int i = 0; i < 3; i++) {
        s.up.select = sel[i];
        struct gs_hpa_state st;
        gs_hpa_state_init(&st);
        struct gs_hpa_decision d;
        int32_t got = sync_avg(&s, &st, 0, 2, 350, 200, &d);
        cr_assert_eq(got, want[i], "selectPolicy %d: %d, want %d", i, got, want[i]);
    }
    /* Kubernetes' default scale-up (no window, +4 pods or +100 % per 15 s, the higher): 2
     * replicas far over target become 6, then 12 fifteen seconds later */
    gs_hpa_rules_default_up(&s.up);
    struct gs_hpa_state st;
    gs_hpa_state_init(&st);
    cr_assert_eq(sync_avg(&s, &st, 0, 2, 700, 200, NULL), 6);
    cr_assert_eq(sync_avg(&s, &st, 15, 6, 700, 200, NULL), 12);
}

Test(hpa, no_metrics_no_change_and_an_invalid_metric_blocks_only_scale_down)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    struct gs_hpa_state st;
    gs_hpa_state_init(&st);
    struct gs_hpa_decision d;
    /* every replica pending: no pod reports a value */
    struct gs_hpa_obs none[2] = {{0, 0, 5, 0}, {0, 0, 5, 0}};
    cr_assert_eq(gs_hpa_sync(&s, &st, 0, 5, none, &d), 5);
    cr_assert_str_eq(d.reason, "FailedGetPodsMetric");
    cr_assert_eq(st.nrec, 0, "nothing is recorded");
    /* utilization valid and low (0.5), latency invalid: no scale-down */
    struct gs_hpa_obs low[2] = {ready(4, 35), {0, 0, 0, 4}};
    cr_assert_eq(gs_hpa_sync(&s, &st, 15, 4, low, &d), 4);
    /* utilization valid and high (1.5 -> 6), latency invalid: the scale-up goes ahead */
    struct gs_hpa_obs high[2] = {ready(4, 105), {0, 0, 0, 4}};
    cr_assert_eq(gs_hpa_sync(&s, &st, 30, 4, high, &d), 6);
}

Test(hpa, history_stays_bounded)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    struct gs_hpa_state st;
    gs_hpa_state_init(&st);
    int32_t n = 2;
    /* a day of syncs alternating between load and idle: the controller reuses outdated
     * entries, so the lists hold about one window's or period's worth */
    for (int i = 0; i < 5760; i++) {
        bool busy = (i / 40) % 2 == 0;
        n = sync_avg(&s, &st, 15.0 * i, n, busy ? 140 : 20, busy ? 400 : 60, NULL);
        cr_assert(n >= 2 && n <= 20);
    }
    cr_assert_leq(st.nrec, 22, "recommendations: %d", st.nrec);
    cr_assert_leq(st.nup, 12, "scale-up events: %d", st.nup);
    cr_assert_leq(st.ndown, 22, "scale-down events: %d", st.ndown);
}

/* Cases of the Kubernetes HPA controller's own tests (pkg/controller/podautoscaler,
 * replica_calculator_test.go, v1.37), replayed on the replica calculator: the Pods metric
 * cases as they are (values in units of the metric, milli-units divided by 1000), and the
 * resource cases whose arithmetic is the Pods metric's (equal requests; a missing pod falls
 * back to max(100 %, target) of its request, which is the target when the target is 100 %;
 * failed and deleted pods are not counted). A pod without a value is missing for its metric
 * (its device gives none, core/podmetric.h); a pending pod is unready. */
struct upstream_case {
    const char *name;
    int32_t current;
    double target, up_tolerance; /* 0: the default 0.1 */
    double value[8];
    int nvalues, nmissing, nunready;
    int32_t want;
};

Test(hpa, upstream_replica_calculator_cases)
{
    const struct upstream_case cases[] = {
        /* TestReplicaCalcPodMetric */
        {"scale up", 3, 15, 0, {20, 10, 30}, 3, 0, 0, 4},
        {"scale up: unready hot-CPU pod scales less", 3, 15, 0, {50, 10, 30}, 3, 0, 0, 6},
        {"scale up: unready hot-CPU pods avoid scale-down", 3, 15, 0, {50, 15, 30}, 3, 0, 0, 7},
        {"scale down", 5, 20, 0, {12, 12, 12, 12, 12}, 5, 0, 0, 3},
        {"within default tolerance", 3, 20, 0, {20, 21, 21}, 3, 0, 0, 3},
        {"outside configurable 1% tolerance", 3, 20, 0.01, {20, 21, 21}, 3, 0, 0, 4},
        {"no change: missing metrics", 5, 20, 0, {20, 19, 21}, 3, 2, 0, 5},
        {"rolling update with maxSurge: extra pod missing metric", 2, 17, 0, {10, 10}, 2, 1, 0, 2},
        /* TestReplicaCalcResourceMissingMetrics, target 100 % */
        {"some pods missing metrics scales down", 4, 100, 0, {40, 9.5}, 2, 2, 0, 3},
        {"no change: metric equal to target", 2, 100, 0, {100}, 1, 1, 0, 2},
        {"no change: metric above target", 2, 100, 0, {190}, 1, 1, 0, 2},
        {"no change: metric below target", 2, 100, 0, {60}, 1, 1, 0, 2},
        /* TestReplicaCalcResourceScale */
        {"scale up: failed pods ignored", 2, 30, 0, {50, 70}, 2, 0, 0, 4},
        {"scale up: pods being deleted are ignored", 2, 30, 0, {50, 70}, 2, 0, 0, 4},
        {"scale down: exclude unscheduled pods", 5, 50, 0, {10}, 1, 0, 4, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct upstream_case *c = &cases[i];
        struct gs_hpa_spec s;
        gs_hpa_spec_article(&s);
        s.up.tolerance = s.down.tolerance = GS_HPA_TOLERANCE;
        if (c->up_tolerance > 0)
            s.up.tolerance = c->up_tolerance;
        struct gs_hpa_obs o = {0, c->nvalues, c->nunready, c->nmissing};
        for (int k = 0; k < c->nvalues; k++)
            o.sum += c->value[k];
        int32_t got = gs_hpa_metric_replicas(&s, c->current, c->target, &o);
        cr_expect_eq(got, c->want, "%s: got %d, want %d", c->name, got, c->want);
    }
}

/* A metric no pod's device gives (gpu_utilization of A100 MIG slices) is invalid every sync:
 * alone it never scales; beside a valid one it lets that one scale up, never down (the
 * controller's computeReplicasForMetrics); one metric missing for some pods only is computed
 * from the others, the missing ones counted as 0 going up and as the target going down. */
Test(hpa, a_metric_no_device_gives)
{
    struct gs_hpa_spec s;
    gs_hpa_spec_article(&s);
    struct gs_hpa_state st;
    struct gs_hpa_decision d;
    struct gs_hpa_obs none = {0, 0, 0, 4}; /* 4 running replicas, no value */
    gs_hpa_state_init(&st);
    s.nmetrics = 1;
    cr_assert_eq(gs_hpa_sync(&s, &st, 0, 4, &none, &d), 4);
    cr_assert_str_eq(d.reason, "FailedGetPodsMetric");
    s.nmetrics = 2;
    struct gs_hpa_obs low[2] = {none, {4 * 60, 4, 0, 0}}; /* latency 60 ms of 200 */
    for (int t = 0; t <= 900; t += 15)
        cr_assert_eq(gs_hpa_sync(&s, &st, t, 4, low, &d), 4, "no scale-down at %d s", t);
    struct gs_hpa_obs high[2] = {none, {4 * 400, 4, 0, 0}}; /* 400 ms: ratio 2 */
    gs_hpa_state_init(&st);
    int32_t r = 4;
    for (int t = 0; t <= 90; t += 15)
        r = gs_hpa_sync(&s, &st, t, r, high, &d);
    cr_assert_eq(r, 6, "scaled up by latency (+50 %% per 120 s), got %d", r);
    /* 2 of 4 on slices without the metric: going up they count as 0 */
    struct gs_hpa_obs half = {2 * 140, 2, 0, 2}; /* 140 against 70: ratio 2, 280 / 4 -> 1 */
    cr_assert_eq(gs_hpa_metric_replicas(&s, 4, 70, &half), 4, "damped to no change");
    half.sum = 2 * 210; /* ratio 3; with the 2 at 0: 1.5 -> 6 */
    cr_assert_eq(gs_hpa_metric_replicas(&s, 4, 70, &half), 6);
    half.sum = 2 * 14; /* ratio 0.2; with the 2 at the target: (28 + 140) / 4 / 70 = 0.6 */
    cr_assert_eq(gs_hpa_metric_replicas(&s, 4, 70, &half), 3);
}
