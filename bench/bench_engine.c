/* bench_engine - engine placement throughput: 10,000 mixed pods (whole, multi-GPU, MIG
 * profiles, milli-GPU fractions, CPU-only) onto 5,000 nodes x 8 GPUs on one core, against
 * the naive first-fit in the same run. Prints one JSON line. */
#include "cluster_fixture.h"

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

int main(int argc, char **argv)
{
    int nodes = 5000, pods = 10000;
    struct gs_request tmpl[FIXTURE_TEMPLATES];
    fixture_templates(tmpl, FIXTURE_TEMPLATES, 7);
    if (argc > 2) {
        nodes = (int)strtol(argv[1], NULL, 10);
        pods = (int)strtol(argv[2], NULL, 10);
    }
    struct gs_request *reqs = calloc((size_t)pods, sizeof(*reqs));
    struct gs_rng rng;
    gs_rng_init(&rng, 42);
    for (int i = 0; i < pods; i++) {
        reqs[i] = tmpl[fixture_draw(&rng)];
    }
    struct gs_typical typ;
    gs_typical_build(reqs, pods, 95, &typ);

    struct gs_cluster c;
    fixture_build(&c, nodes, 0);
    struct gs_engine *e = gs_engine_new(gs_policy_find("gpusched"), &typ, c.nnodes, 42);
    int placed = 0;
    double t0 = now();
    for (int i = 0; i < pods; i++) {
        struct gs_decision d;
        if (gs_engine_place(e, &c, &reqs[i], i, &d, NULL) == 0 &&
            gs_cluster_bind(&c, &reqs[i], &d.alloc) == 0)
            placed++;
    }
    double dt = now() - t0;
    gs_engine_free(e);
    gs_cluster_release(&c);

    fixture_build(&c, nodes, 0);
    int placed_ff = 0;
    t0 = now();
    for (int i = 0; i < pods; i++) {
        struct gs_alloc a;
        if (gs_engine_first_fit(&c, &reqs[i], &a) == 0 && gs_cluster_bind(&c, &reqs[i], &a) == 0)
            placed_ff++;
    }
    double dt_ff = now() - t0;
    gs_cluster_release(&c);
    printf("{\"bench\":\"engine_place\",\"nodes\":%d,\"pods\":%d,\"policy\":\"gpusched\","
           "\"pods_per_s\":%.0f,\"placed\":%d,\"baseline\":\"first_fit\","
           "\"baseline_pods_per_s\":%.0f,\"baseline_placed\":%d}\n",
           nodes, pods, pods / dt, placed, pods / dt_ff, placed_ff);
    free(reqs);
    return 0;
}
