/* bench_cycle - the scheduling cycle (core/cycle.c), which the daemon and the simulator both
 * run, on 10,000 pending pods and 5,000 nodes x 8 GPUs (bench/cluster_fixture.h): one cycle
 * without and one with dynamic MIG, against the bare engine loop over the same pods in the
 * same run (what the cycle adds: ordering, admission, the failed-shape memo, decisions as
 * data, and re-carving). A second pair: 1,000 nodes of A100s carved all-1g.10gb and 2,000
 * pods asking 3g.40gb: how long choosing re-carves takes. Prints JSON lines. */
#include "cluster_fixture.h"
#include "core/cycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One cycle over reqs on c; returns seconds, *binds and *recarves from its decisions. */
static double run_cycle(struct gs_cluster *c, const struct gs_request *reqs, int n, bool recarve,
                        int *binds, int *recarves)
{
    struct gs_cyc_pod *pods = calloc((size_t)n, sizeof(*pods));
    for (int i = 0; i < n; i++) {
        pods[i].req = reqs[i];
        pods[i].queue = GS_QUEUE_NONE;
        pods[i].gang = -1;
        pods[i].seq = (uint64_t)i;
        pods[i].nominated = -1;
        pods[i].due = true;
    }
    struct gs_engine *e =
        gs_engine_new(gs_policy_find("gpusched"), NULL, gs_cycle_engine_nodes(c->nnodes), 42);
    struct gs_cycle_in in = {.c = c,
                             .e = e,
                             .pods = pods,
                             .npods = n,
                             .now_s = 1000,
                             .o = {.recarve = recarve, .hold_s = 600}};
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    double t0 = now();
    if (gs_cycle_run(&in, &out)) {
        fprintf(stderr, "bench_cycle: the cycle failed\n");
        exit(1);
    }
    double dt = now() - t0;
    *binds = out.count[GS_CYC_BIND] + out.count[GS_CYC_NOMINATE];
    *recarves = out.count[GS_CYC_REPARTITION];
    gs_cycle_out_release(&out);
    gs_engine_free(e);
    free(pods);
    return dt;
}

/* The bare engine loop: place and bind each pod in turn. */
static double run_engine(struct gs_cluster *c, const struct gs_request *reqs, int n, int *placed)
{
    struct gs_engine *e =
        gs_engine_new(gs_policy_find("gpusched"), NULL, gs_cycle_engine_nodes(c->nnodes), 42);
    *placed = 0;
    double t0 = now();
    for (int i = 0; i < n; i++) {
        struct gs_decision d;
        if (gs_engine_place(e, c, &reqs[i], i, &d, NULL) == 0 &&
            gs_cluster_bind(c, &reqs[i], &d.alloc) == 0)
            (*placed)++;
    }
    double dt = now() - t0;
    gs_engine_free(e);
    return dt;
}

int main(int argc, char **argv)
{
    int nodes = 5000, pods = 10000;
    if (argc > 2) {
        nodes = (int)strtol(argv[1], NULL, 10);
        pods = (int)strtol(argv[2], NULL, 10);
    }
    struct gs_request tmpl[FIXTURE_TEMPLATES];
    fixture_templates(tmpl, FIXTURE_TEMPLATES, 7);
    struct gs_request *reqs = calloc((size_t)pods, sizeof(*reqs));
    struct gs_rng rng;
    gs_rng_init(&rng, 42);
    for (int i = 0; i < pods; i++)
        reqs[i] = tmpl[fixture_draw(&rng)];
    struct gs_cluster c;
    int placed, b0, r0, b1, r1;
    fixture_build(&c, nodes, 0);
    double te = run_engine(&c, reqs, pods, &placed);
    gs_cluster_release(&c);
    fixture_build(&c, nodes, 0);
    double t0 = run_cycle(&c, reqs, pods, false, &b0, &r0);
    gs_cluster_release(&c);
    fixture_build(&c, nodes, 0);
    double t1 = run_cycle(&c, reqs, pods, true, &b1, &r1);
    gs_cluster_release(&c);
    printf("{\"bench\":\"cycle\",\"nodes\":%d,\"pods\":%d,\"pods_per_s\":%.0f,\"placed\":%d,"
           "\"dynamic_mig_pods_per_s\":%.0f,\"dynamic_mig_placed\":%d,\"recarves\":%d,"
           "\"baseline\":\"engine_loop\",\"baseline_pods_per_s\":%.0f,\"baseline_placed\":%d}\n",
           nodes, pods, pods / t0, b0, pods / t1, b1, r1, pods / te, placed);
    free(reqs);

    /* re-carving at scale: A100s carved all-1g.10gb, pods asking 3g.40gb */
    int a100 = gs_catalog_find("A100-80GB");
    struct gs_mig_layout l1g;
    memset(&l1g, 0, sizeof(l1g));
    l1g.count[gs_catalog_find_profile(a100, "1g.10gb")] = 7;
    int rn = nodes / 5, rp = pods / 5;
    struct gs_request *r3 = calloc((size_t)rp, sizeof(*r3));
    for (int i = 0; i < rp; i++) {
        r3[i].kind = GS_REQ_MIG;
        r3[i].gpus = 1;
        r3[i].cpu_milli = 4000;
        r3[i].mem_mib = 32768;
        snprintf(r3[i].mig, sizeof(r3[i].mig), "3g.40gb");
    }
    gs_cluster_init(&c);
    for (int i = 0; i < rn; i++) {
        char name[32];
        snprintf(name, sizeof(name), "a100-%05d", i);
        gs_cluster_add_node(&c, name, a100, 8, 128000, 1 << 20, GS_GPU_MIG, 0, &l1g);
    }
    double ts = run_cycle(&c, r3, rp, false, &b0, &r0);
    gs_cluster_release(&c);
    gs_cluster_init(&c);
    for (int i = 0; i < rn; i++) {
        char name[32];
        snprintf(name, sizeof(name), "a100-%05d", i);
        gs_cluster_add_node(&c, name, a100, 8, 128000, 1 << 20, GS_GPU_MIG, 0, &l1g);
    }
    double td = run_cycle(&c, r3, rp, true, &b1, &r1);
    gs_cluster_release(&c);
    printf("{\"bench\":\"cycle_recarve\",\"nodes\":%d,\"pods\":%d,\"wall_s\":%.3f,"
           "\"placed\":%d,\"recarves\":%d,\"ms_per_recarve\":%.3f,\"baseline\":\"static_layout\","
           "\"baseline_wall_s\":%.3f,\"baseline_placed\":%d}\n",
           rn, rp, td, b1, r1, r1 ? 1000 * td / r1 : 0.0, ts, b0);
    free(r3);
    return 0;
}
