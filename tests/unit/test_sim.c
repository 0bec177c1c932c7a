/* The scenario simulator: deterministic for a seed, sane accounting, strategies behave as
 * their sharing modes say, and the embedded default (the article's setting) runs. */
#include "base/error.h"
#include "sim/report.h"
#include "sim/scenario.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static struct gs_scenario *parse(const char *text)
{
    struct gs_scenario *sc = calloc(1, sizeof(*sc));
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_scenario_parse("t", text, strlen(text), sc, &err), 0, "%s", err.msg);
    return sc;
}

Test(sim, default_scenario_runs_seven_strategies)
{
    struct gs_scenario *sc = parse(gs_default_scenario_yaml);
    struct gs_sim_result *r = calloc(GS_SIM_STRATEGIES, sizeof(*r));
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_sim_run_all(sc, 2, r, &err), 0, "%s", err.msg);
    const char *names[] = {"exclusive",    "time-slicing", "mps", "static-mig",
                           "mig-priority", "dynamic-mig",  "all"};
    for (int i = 0; i < GS_SIM_STRATEGIES; i++) {
        cr_assert_str_eq(r[i].strategy->name, names[i]);
        cr_assert_eq(r[i].gpus, 72);
        cr_assert(r[i].alloc_share > 0 && r[i].alloc_share <= 1.0 + 1e-9, "%s alloc %f", names[i],
                  r[i].alloc_share);
        cr_assert(r[i].used_share > 0 && r[i].used_share <= r[i].alloc_share + 1e-9,
                  "%s: used %f above allocated %f", names[i], r[i].used_share, r[i].alloc_share);
        cr_assert_gt(r[i].jobs_completed, 100);
        cr_log_info("%s: alloc %.1f%% used %.1f%% online p99 %.0fs miss %.1f%% $/useful %.2f",
                    names[i], 100 * r[i].alloc_share, 100 * r[i].used_share, r[i].online_p99_wait,
                    r[i].online_sla_miss_pct, r[i].cost_per_useful_hour);
    }
    /* exclusive GPUs: every allocated GPU is a whole GPU, so used/allocated is the workloads'
     * own busy share (the article's 30-40 %) */
    cr_assert_lt(r[0].used_share / r[0].alloc_share, 0.5);
    /* time-slicing without memory isolation OOM-kills pods; the engine's memory-aware
     * sharing ("all") does not */
    cr_assert_gt(r[1].oom_kills, 0);
    cr_assert_eq(r[6].oom_kills, 0);
    /* priority puts online inference first */
    cr_assert_leq(r[4].online_p99_wait, r[3].online_p99_wait);
    cr_assert_lt(r[6].online_sla_miss_pct, r[0].online_sla_miss_pct);
    /* all together: more useful work per dollar than exclusive */
    cr_assert_lt(r[6].cost_per_useful_hour, r[0].cost_per_useful_hour);
    /* the article's last stage, dynamic MIG + priority: at least 85 % of the GPUs allocated
     * with online inference's p99 wait under 30 s, above static MIG and MIG + priority */
    cr_assert_geq(r[5].alloc_share, 0.85, "dynamic-mig allocates %.1f%%", 100 * r[5].alloc_share);
    cr_assert_lt(r[5].online_p99_wait, 30.0, "dynamic-mig online p99 %.1fs", r[5].online_p99_wait);
    cr_assert_gt(r[5].alloc_share, r[3].alloc_share);
    cr_assert_gt(r[5].alloc_share, r[4].alloc_share);
    cr_assert_gt(r[5].recarves, 0);
    cr_assert_eq(r[4].recarves, 0, "MIG + priority keeps its layouts");
    struct gs_buf b;
    gs_buf_init(&b, 0);
    cr_assert_eq(gs_report_table(sc, r, GS_SIM_STRATEGIES, &b), 0);
    for (int i = 0; i < GS_SIM_STRATEGIES; i++)
        cr_assert(strstr(b.data, r[i].strategy->label) != NULL);
    gs_buf_reset(&b);
    cr_assert_eq(gs_report_html(sc, r, GS_SIM_STRATEGIES, &b), 0);
    cr_assert(strstr(b.data, "<svg") != NULL && strstr(b.data, "</html>") != NULL);
    cr_assert_null(strstr(b.data, "http://"), "the report must not load anything");
    cr_assert_null(strstr(b.data, "https://"), "the report must not load anything");
    gs_buf_release(&b);
    free(r);
    gs_scenario_release(sc);
    free(sc);
}

Test(sim, same_seed_same_result_other_seed_other_arrivals)
{
    struct gs_scenario *sc = parse(gs_default_scenario_yaml);
    struct gs_sim_result a, b, c;
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("all"), &a, NULL), 0);
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("all"), &b, NULL), 0);
    cr_assert_float_eq(a.used_share, b.used_share, 0);
    cr_assert_float_eq(a.online_p99_wait, b.online_p99_wait, 0);
    cr_assert_eq(a.jobs_completed, b.jobs_completed);
    sc->seed = 7;
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("all"), &c, NULL), 0);
    cr_assert_neq(a.cls[0].arrived, c.cls[0].arrived);
    gs_scenario_release(sc);
    free(sc);
}

Test(sim, mig_slices_serve_inference_that_whole_gpus_queue)
{
    /* 2 A100s; 4 inference pods that fit 3g.40gb: exclusive runs 2, MIG runs 4 */
    const char *t = "duration: 2h\nwarmup: 0s\n"
                    "node_groups:\n  - {name: a, gpu: A100-80GB, nodes: 1, gpus: 2, "
                    "mig_layout: {\"3g.40gb\": 2}}\n"
                    "classes:\n  - name: llm\n    kind: online-inference\n"
                    "    arrival: {process: fixed, interval: 1s}\n"
                    "    duration: {dist: fixed, mean: 10h}\n"
                    "    request: {gpus: 1, mig: 3g.40gb, cpu: 1, memory: 1Gi}\n"
                    "    util: 0.3\n    max_jobs: 4\n";
    struct gs_scenario *sc = parse(t);
    struct gs_sim_result ex, mig;
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("exclusive"), &ex, NULL), 0);
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("static-mig"), &mig, NULL), 0);
    cr_assert_eq(ex.cls[0].started, 2);
    cr_assert_eq(ex.cls[0].waiting_at_end, 2);
    cr_assert_eq(mig.cls[0].started, 4);
    cr_assert_gt(mig.used_share, ex.used_share * 1.9);
    gs_scenario_release(sc);
    free(sc);
}

Test(sim, time_slicing_slows_co_runners_and_mps_caps_each_client)
{
    /* one L40S, two pods each wanting 80 % of it for 1 h of work */
    const char *t = "duration: 5h\nwarmup: 0s\n"
                    "node_groups:\n  - {name: l, gpu: L40S-48GB, nodes: 1, gpus: 1, "
                    "sharing: timeslicing, replicas: 2}\n"
                    "classes:\n  - name: job\n    kind: training\n"
                    "    arrival: {process: fixed, interval: 1s}\n"
                    "    duration: {dist: fixed, mean: 1h}\n"
                    "    request: {gpus: 1, cpu: 1, memory: 1Gi, gpu_memory: 10Gi, share: true}\n"
                    "    util: 0.8\n    max_jobs: 2\n";
    struct gs_scenario *sc = parse(t);
    struct gs_sim_result ts, ex;
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("time-slicing"), &ts, NULL), 0);
    cr_assert_eq(gs_sim_run(sc, gs_strategy_find("exclusive"), &ex, NULL), 0);
    /* both start at once on replicas; together they ask 160 % of the GPU, so each runs at
     * 0.9/1.6 and the GPU is busy at most 90 % */
    cr_assert_eq(ts.cls[0].started, 2);
    cr_assert_float_eq(ts.cls[0].wait_p99, 0, 2.0);
    cr_assert_eq(ex.cls[0].waiting_at_end, 0);
    cr_assert_gt(ex.cls[0].wait_p99, 3500, "exclusive: the second job waits for the first");
    gs_scenario_release(sc);
    free(sc);
}
