/* The simulator's services (sim/service.h): the request load over time (diurnal curve, bursts,
 * seeded noise and random bursts), the M/M/1-like replica (latency base/(1 - rho), its
 * exponential tail cut at the timeout, the metrics it reports), the count sized for the peak,
 * latency quantiles over a run; and services in the simulation: only scheduled, ready
 * replicas serve, the autoscaler against a fixed count on one load. */
#include "base/buf.h"
#include "base/error.h"
#include "sim/scenario.h"
#include "sim/service.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct gs_sc_service svc(double rate)
{
    struct gs_sc_service s;
    memset(&s, 0, sizeof(s));
    s.on = true;
    s.autoscale = true;
    s.capacity = 2;
    s.latency_s = 0.05;
    s.latency_max_s = 30;
    s.latency_sla_s = 1;
    s.rate = rate;
    s.period_s = 86400;
    gs_hpa_spec_article(&s.hpa);
    return s;
}

Test(service, diurnal_curve_peaks_where_asked_and_keeps_its_mean)
{
    struct gs_sc_service s = svc(10);
    s.amplitude = 0.5;
    s.peak_s = 15 * 3600;
    cr_assert_float_eq(gs_svc_rate(&s, 42, 0, 15 * 3600), 15.0, 1e-9);
    cr_assert_float_eq(gs_svc_rate(&s, 42, 0, 3 * 3600), 5.0, 1e-9);
    cr_assert_float_eq(gs_svc_rate(&s, 42, 0, 9 * 3600), 10.0, 1e-9);
    double sum = 0;
    for (int m = 0; m < 1440; m++)
        sum += gs_svc_rate(&s, 42, 0, 60.0 * m);
    cr_assert_float_eq(sum / 1440, 10.0, 1e-6);
}

Test(service, bursts_multiply_while_they_last)
{
    struct gs_sc_service s = svc(6);
    s.nbursts = 2;
    s.burst[0] = (struct gs_sc_burst){2 * 3600, 1200, 3};
    s.burst[1] = (struct gs_sc_burst){2 * 3600 + 600, 600, 2}; /* overlaps the second half */
    cr_assert_float_eq(gs_svc_rate(&s, 1, 0, 2 * 3600 - 1), 6.0, 1e-9);
    cr_assert_float_eq(gs_svc_rate(&s, 1, 0, 2 * 3600), 18.0, 1e-9);
    cr_assert_float_eq(gs_svc_rate(&s, 1, 0, 2 * 3600 + 900), 36.0, 1e-9);
    cr_assert_float_eq(gs_svc_rate(&s, 1, 0, 2 * 3600 + 1200), 6.0, 1e-9, "the end is out");
}

Test(service, noise_is_seeded_per_bucket_with_mean_one)
{
    struct gs_sc_service s = svc(10);
    s.noise = 0.2;
    double a = gs_svc_rate(&s, 42, 0, 1000), b = gs_svc_rate(&s, 42, 0, 1000);
    cr_assert_eq(a, b, "the same seed, the same load");
    cr_assert_eq(gs_svc_rate(&s, 42, 0, 900), gs_svc_rate(&s, 42, 0, 1199),
                 "one factor per 5-minute bucket");
    cr_assert_neq(gs_svc_rate(&s, 42, 0, 1000), gs_svc_rate(&s, 7, 0, 1000));
    cr_assert_neq(gs_svc_rate(&s, 42, 0, 1000), gs_svc_rate(&s, 42, 1, 1000),
                  "each service its own draws");
    double sum = 0;
    int n = 20000;
    for (int i = 0; i < n; i++)
        sum += gs_svc_rate(&s, 42, 0, 300.0 * i);
    cr_assert_float_eq(sum / n, 10.0, 0.1, "mean %.3f", sum / n);
}

Test(service, random_bursts_come_per_day_from_the_seed)
{
    struct gs_sc_service s = svc(1);
    s.random.per_day = 3;
    s.random.duration_s = 900;
    s.random.factor = 2;
    int in = 0, n = 0, differ = 0;
    for (double t = 0; t < 200 * 86400.0; t += 60, n++) {
        double r = gs_svc_rate(&s, 42, 0, t);
        cr_assert(r == 1.0 || r == 2.0 || r == 4.0, "t=%.0f: %f", t, r);
        in += r > 1;
        differ += r != gs_svc_rate(&s, 43, 0, t);
    }
    /* 3 bursts of 15 minutes a day: about 3.1 % of the time */
    double share = (double)in / n;
    cr_assert(share > 0.025 && share < 0.038, "bursting %.2f%% of the time", 100 * share);
    cr_assert_gt(differ, 0, "another seed, other bursts");
}

Test(service, a_replica_is_an_mm1_like_queue)
{
    struct gs_sc_service s = svc(0);
    struct gs_svc_replica r;
    /* 1.4 requests/s on a replica serving 2: rho 0.7, mean latency 50 ms / 0.3 */
    gs_svc_replica(&s, 1.4, 1.0, &r);
    cr_assert_float_eq(r.rho, 0.7, 1e-12);
    cr_assert_float_eq(r.mean_s, 0.05 / 0.3, 1e-12);
    cr_assert_float_eq(r.miss, exp(-1.0 / (0.05 / 0.3)), 1e-12); /* e^-6: 0.25 % */
    cr_assert_float_eq(r.latency_ms, 1000 * 0.05 / 0.3, 1e-6);
    cr_assert_float_eq(r.util_pct, 70, 1e-9);
    /* at half speed (a shared GPU) the same load is rho 1.4: unbounded, every request times
     * out, the replica reports the timeout and 100 % */
    gs_svc_replica(&s, 1.4, 0.5, &r);
    cr_assert(isinf(r.mean_s));
    cr_assert_eq(r.miss, 1.0);
    cr_assert_float_eq(r.latency_ms, 30000, 1e-9);
    cr_assert_float_eq(r.util_pct, 100, 1e-9);
    /* near the timeout the reported mean is cut: L (1 - e^(-max/L)) */
    gs_svc_replica(&s, 1.999, 1.0, &r);
    double L = 0.05 / (1 - 1.999 / 2);
    cr_assert_float_eq(r.latency_ms, 1000 * L * (1 - exp(-30 / L)), 1e-6);
    cr_assert_lt(r.latency_ms, 30000);
}

Test(service, the_fixed_count_is_sized_for_the_diurnal_peak)
{
    /* 6 requests/s: 70 % utilization needs 6 / 1.4 = 4.3 replicas, 200 ms needs rho <= 0.75
     * (50 ms / 0.25), 4 replicas: 5 */
    struct gs_sc_service s = svc(6);
    cr_assert_eq(gs_svc_peak_replicas(&s), 5);
    /* 12 +- 50 %: the peak of 18 needs 12.9: 13 */
    s.rate = 12;
    s.amplitude = 0.5;
    cr_assert_eq(gs_svc_peak_replicas(&s), 13);
    /* a latency target of 100 ms binds first: rho <= 0.5, 18 / 1 = 18 */
    s.hpa.metric[1].target = 100;
    cr_assert_eq(gs_svc_peak_replicas(&s), 18);
    s.fixed_replicas = 7;
    cr_assert_eq(gs_svc_peak_replicas(&s), 7, "the scenario's own count");
}

Test(service, latency_quantiles_over_a_run)
{
    struct gs_svc_mix m;
    gs_svc_mix_init(&m, 30);
    cr_assert_eq(gs_svc_mix_quantile(&m, 0.99), 0, "no requests");
    cr_assert_eq(gs_svc_mix_add(&m, 100, 0.1), 0);
    cr_assert_eq(gs_svc_mix_add(&m, 100, 0.1), 0);
    cr_assert_eq(m.n, 1, "one mean, one component");
    cr_assert_float_eq(gs_svc_mix_quantile(&m, 0.99), 0.1 * log(100), 1e-9);
    cr_assert_float_eq(gs_svc_mix_quantile(&m, 0.5), 0.1 * log(2), 1e-9);
    /* 2 % of the requests timed out: the p99 is the timeout, the p50 moves up a little */
    cr_assert_eq(gs_svc_mix_add(&m, 200.0 * 2 / 98, INFINITY), 0);
    cr_assert_eq(gs_svc_mix_quantile(&m, 0.99), 30);
    cr_assert_float_eq(gs_svc_mix_quantile(&m, 0.5), -0.1 * log(1 - 0.5 / 0.98), 1e-9);
    gs_svc_mix_release(&m);
}

static struct gs_scenario *parse(const char *text)
{
    struct gs_scenario *sc = calloc(1, sizeof(*sc));
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_scenario_parse("t", text, strlen(text), sc, &err), 0, "%s", err.msg);
    return sc;
}

/* One H100 carved all-3g.40gb: two slices, room for two replicas. */
static const char *one_gpu = "duration: 3h\nwarmup: 1h\n"
                             "node_groups:\n  - {name: h, gpu: H100-80GB, nodes: 1, gpus: 1, "
                             "mig_layout: {\"3g.40gb\": 2}}\n"
                             "classes:\n  - name: pool\n    kind: online-inference\n"
                             "    request: {gpus: 1, mig: 3g.40gb, cpu: 1, memory: 1Gi}\n"
                             "    util: 0.35\n"
                             "    service:\n      capacity: 2\n      latency: {base: 50ms}\n"
                             "      load: {rate: %s}\n%s";

Test(service, only_scheduled_ready_replicas_serve)
{
    char text[1024];
    /* 6 requests/s need 5 replicas; 2 fit. The 2 that run are overloaded (rho 1.5) and time
     * out every request; the HPA (pending replicas count as 0 going up, but the 2 report the
     * timeout) climbs to its maximum, and 18 replicas wait for a slot to the end */
    snprintf(text, sizeof(text), one_gpu, "6", "");
    struct gs_scenario *sc = parse(text);
    struct gs_sim_result r;
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("static-mig"), &r, NULL), 0);
    cr_assert_eq(r.nsvc, 1);
    cr_assert_float_eq(r.svc[0].sla_miss_pct, 100, 1e-9);
    cr_assert_eq(r.svc[0].replicas_max, 20);
    cr_assert_float_eq(r.svc[0].latency_p99, 30, 1e-9);
    /* what the 2 running replicas hold: 2 slices of 0.5 GPU for the 2 measured hours */
    cr_assert_float_eq(r.svc[0].gpu_hours, 2.0, 1e-6, "%f", r.svc[0].gpu_hours);
    cr_assert_float_eq(r.svc[0].requests, 6.0 * 7200, 1e-6);
    /* at 1.4 requests/s the 2 replicas serve at rho 0.35: the HPA scales to its minimum and
     * the requests over 1 s are e^-(1 / (50 ms / 0.65)) of them */
    gs_scenario_release(sc);
    free(sc);
    snprintf(text, sizeof(text), one_gpu, "1.4", "      replicas: 2\n");
    sc = parse(text);
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("static-mig"), &r, NULL), 0);
    cr_assert_eq(r.svc[0].replicas_max, 2);
    cr_assert_eq(r.svc[0].scale_ups + r.svc[0].scale_downs, 0);
    cr_assert_float_eq(r.svc[0].sla_miss_pct, 100 * exp(-0.65 / 0.05), 1e-9);
    /* busy: each replica uses 0.35 of a GPU at capacity, here at rho 0.35, of 0.5 held */
    cr_assert_float_eq(r.svc[0].used_gpu_hours / r.svc[0].gpu_hours, 0.35 * 0.35 / 0.5, 1e-6);
    gs_scenario_release(sc);
    free(sc);
}

Test(service, autoscaled_and_fixed_runs_serve_one_load)
{
    struct gs_scenario *sc = parse(gs_default_scenario_yaml);
    struct gs_sim_result a, f;
    struct gs_sim_opts fixed = {.fixed_services = true};
    const struct gs_strategy *st = gs_strategy_find("all");
    cr_assert_eq(gs_sim_run(sc, st, &a, NULL), 0);
    cr_assert_eq(gs_sim_run_opts(sc, st, &fixed, &f, NULL), 0);
    cr_assert_eq(a.nsvc, 1);
    cr_assert_eq(a.svc[0].cls, 0, "llm-70b-awq runs as the service");
    cr_assert_float_eq(a.svc[0].requests, f.svc[0].requests, 1e-6, "one load");
    cr_assert_eq(f.svc[0].scale_ups + f.svc[0].scale_downs, 0);
    cr_assert_float_eq(f.svc[0].replicas_mean, f.svc[0].fixed_replicas, 1e-9);
    cr_assert_gt(a.svc[0].scale_ups, 10);
    cr_assert_lt(a.svc[0].gpu_hours, f.svc[0].gpu_hours, "elastic: fewer GPU-hours");
    cr_assert_lt(a.svc[0].cost, f.svc[0].cost);
    cr_assert_gt(a.svc[0].used_gpu_hours / a.svc[0].gpu_hours,
                 f.svc[0].used_gpu_hours / f.svc[0].gpu_hours, "elastic: busier GPUs");
    cr_assert_leq(a.svc[0].replicas_max, 20, "the article's maxReplicas");
    cr_log_info("HPA %.1f replicas, %.0f GPU-h, %.2f%% over SLA; fixed %d, %.0f GPU-h, %.2f%%",
                a.svc[0].replicas_mean, a.svc[0].gpu_hours, a.svc[0].sla_miss_pct,
                (int)f.svc[0].fixed_replicas, f.svc[0].gpu_hours, f.svc[0].sla_miss_pct);
    gs_scenario_release(sc);
    free(sc);
}

/* One GPU carved into seven 1g.10gb slices, 4 replicas at a low load (each replica well
 * under both targets): the HPA wants 2. %s: the model; %s: the HPA's metrics. */
static const char *seven_slices =
    "duration: 3h\nwarmup: 1h\n"
    "node_groups:\n  - {name: g, gpu: %s, nodes: 1, gpus: 1, mig_layout: {\"1g.10gb\": 7}}\n"
    "classes:\n  - name: pool\n    kind: online-inference\n"
    "    request: {gpus: 1, mig: 1g.10gb, cpu: 1, memory: 1Gi}\n    util: 0.35\n"
    "    service:\n      replicas: 4\n      capacity: 2\n      latency: {base: 50ms}\n"
    "      load: {rate: 0.8}\n      hpa:\n        metrics:\n%s";
#define UTIL_METRIC                                                                                \
    "          - {type: Pods, pods: {metric: {name: gpu_utilization}, target: {type: "             \
    "AverageValue, averageValue: \"70\"}}}\n"
#define LATENCY_METRIC                                                                             \
    "          - {type: Pods, pods: {metric: {name: request_latency_ms}, target: {type: "          \
    "AverageValue, averageValue: \"200\"}}}\n"

static struct gs_svc_stats run_slices(const char *gpu, const char *metrics)
{
    char text[2048];
    snprintf(text, sizeof(text), seven_slices, gpu, metrics);
    struct gs_scenario *sc = parse(text);
    struct gs_sim_result r;
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("static-mig"), &r, NULL), 0);
    cr_assert_eq(r.nsvc, 1);
    gs_scenario_release(sc);
    free(sc);
    return r.svc[0];
}

/* The HPA reads what each replica's device gives: an H100 slice reports its utilization
 * (GPM), an A100 slice none, so on A100 slices gpu_utilization is missing for every replica:
 * alone it never scales, beside request_latency_ms it blocks every scale-down. */
Test(service, the_hpa_reads_only_what_the_device_gives)
{
    struct gs_svc_stats h = run_slices("H100-80GB", UTIL_METRIC);
    cr_assert_gt(h.scale_downs, 0, "H100 slices: utilization read, scaled down");
    cr_assert_float_eq(h.replicas_mean, 2, 1e-9, "%f", h.replicas_mean);
    struct gs_svc_stats a = run_slices("A100-80GB", UTIL_METRIC);
    cr_assert_eq(a.scale_downs + a.scale_ups, 0, "A100 slices: no utilization, no scaling");
    cr_assert_float_eq(a.replicas_mean, 4, 1e-9, "%f", a.replicas_mean);
    struct gs_svc_stats both = run_slices("A100-80GB", UTIL_METRIC LATENCY_METRIC);
    cr_assert_eq(both.scale_downs, 0, "an invalid metric blocks the scale-down");
    cr_assert_float_eq(both.replicas_mean, 4, 1e-9);
    struct gs_svc_stats lat = run_slices("A100-80GB", LATENCY_METRIC);
    cr_assert_gt(lat.scale_downs, 0, "the server's latency is there on any slice");
    cr_assert_float_eq(lat.replicas_mean, 2, 1e-9);
}

static int check(const char *text, const char *strategy, struct gs_buf *warn, struct gs_error *err)
{
    struct gs_scenario *sc = parse(text);
    const struct gs_strategy *st[GS_SIM_STRATEGIES];
    int n = strategy ? 1 : GS_SIM_STRATEGIES;
    for (int k = 0; k < n; k++)
        st[k] = strategy ? gs_strategy_find(strategy) : gs_strategy_get(k);
    int rc = gs_svc_check_metrics(sc, st, n, warn, err);
    gs_scenario_release(sc);
    free(sc);
    return rc;
}

/* A scenario whose HPA reads a metric its replicas' devices cannot give says so: a warning
 * naming the class, the metric and the node groups when some replicas (or some strategies)
 * lack it, an error when under every strategy run none has it. */
Test(service, a_metric_the_devices_cannot_give_is_reported)
{
    char text[2048];
    struct gs_buf warn;
    struct gs_error err;
    gs_buf_init(&warn, 0);
    gs_error_init(&err);
    snprintf(text, sizeof(text), seven_slices, "H100-80GB", UTIL_METRIC LATENCY_METRIC);
    cr_assert_eq(check(text, NULL, &warn, &err), 0);
    cr_assert_eq(warn.len, 0, "H100 slices give both: %s", warn.data);
    snprintf(text, sizeof(text), seven_slices, "A100-80GB", LATENCY_METRIC);
    cr_assert_eq(check(text, "static-mig", &warn, &err), 0);
    cr_assert_eq(warn.len, 0, "latency is the server's: %s", warn.data);
    /* all strategies: whole A100s (exclusive, time-slicing, MPS) give it, slices do not */
    snprintf(text, sizeof(text), seven_slices, "A100-80GB", UTIL_METRIC LATENCY_METRIC);
    cr_assert_eq(check(text, NULL, &warn, &err), 0);
    cr_assert(strstr(warn.data, "'pool'") && strstr(warn.data, "gpu_utilization") &&
                  strstr(warn.data, "'g' (A100-80GB)") && strstr(warn.data, "static-mig") &&
                  !strstr(warn.data, "exclusive,") && strstr(warn.data, "GPM"),
              "%s", warn.data);
    cr_assert(strstr(warn.data, "no scale-down"), "%s", warn.data);
    gs_buf_reset(&warn);
    /* only MIG strategies run: no replica could ever report it */
    cr_assert_eq(check(text, "static-mig", &warn, &err), GS_EINVAL);
    cr_assert(strstr(err.msg, "'pool'") && strstr(err.msg, "gpu_utilization") &&
                  strstr(err.msg, "none of its replicas"),
              "%s", err.msg);
    /* two groups: the pool's slices on the A100 lack it, on the H100 not */
    const char *mixed =
        "duration: 3h\nwarmup: 1h\n"
        "node_groups:\n  - {name: a, gpu: A100-80GB, nodes: 1, gpus: 1, mig_layout: "
        "{\"1g.10gb\": 7}}\n  - {name: h, gpu: H100-80GB, nodes: 1, gpus: 1, mig_layout: "
        "{\"1g.10gb\": 7}}\n"
        "classes:\n  - name: pool\n    kind: online-inference\n"
        "    request: {gpus: 1, mig: 1g.10gb, cpu: 1, memory: 1Gi}\n    util: 0.35\n"
        "    service:\n      capacity: 2\n      latency: {base: 50ms}\n"
        "      load: {rate: 0.8}\n";
    cr_assert_eq(check(mixed, "static-mig", &warn, &err), 0, "%s", err.msg);
    cr_assert(strstr(warn.data, "'a' (A100-80GB)") && !strstr(warn.data, "'h'") &&
                  !strstr(warn.data, "no scale-down"),
              "%s", warn.data);
    gs_buf_release(&warn);
    /* the default scenario reads what its devices give */
    gs_buf_init(&warn, 0);
    cr_assert_eq(check(gs_default_scenario_yaml, NULL, &warn, &err), 0);
    cr_assert_eq(warn.len, 0, "%s", warn.data);
    gs_buf_release(&warn);
}
