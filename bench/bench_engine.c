/* bench_engine - engine placement throughput: 10,000 mixed pods (whole, multi-GPU, MIG
 * profiles, milli-GPU fractions, CPU-only) onto 5,000 nodes x 8 GPUs on one core, against
 * the naive first-fit in the same run. Prints one JSON line. */
#include "base/rng.h"
#include "core/engine.h"

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

static void build(struct gs_cluster *c, int nodes)
{
    int a100 = gs_catalog_find("A100-80GB"), h100 = gs_catalog_find("H100-80GB"),
        l40s = gs_catalog_find("L40S-48GB");
    struct gs_mig_layout mixed;
    memset(&mixed, 0, sizeof(mixed));
    mixed.count[gs_catalog_find_profile(a100, "3g.40gb")] = 1;
    mixed.count[gs_catalog_find_profile(a100, "1g.10gb")] = 4;
    gs_cluster_init(c);
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof(name), "node-%05d", i);
        switch (i % 4) {
        case 0:
        case 1:
            gs_cluster_add_node(c, name, h100, 8, 192000, 2 << 20, GS_GPU_FRACTION, 0, NULL);
            break;
        case 2:
            gs_cluster_add_node(c, name, a100, 8, 128000, 1 << 20, GS_GPU_MIG, 0, &mixed);
            break;
        default:
            gs_cluster_add_node(c, name, l40s, 8, 64000, 512 << 10, GS_GPU_FRACTION, 0, NULL);
        }
    }
}

/* Pods come from 40 templates (Deployments and Jobs share their pod spec), drawn with
 * skewed frequencies, as in the openb trace where 35 shapes cover 95 % of pods. */
#define TEMPLATES 40
static void make_templates(struct gs_request *r, int n, uint64_t seed)
{
    struct gs_rng rng;
    gs_rng_init(&rng, seed);
    static const int16_t shares[] = {250, 300, 460, 500, 810};
    for (int i = 0; i < n; i++) {
        memset(&r[i], 0, sizeof(r[i]));
        r[i].cpu_milli = 1000 * (1 + (int64_t)gs_rng_below(&rng, 16));
        r[i].mem_mib = 1024 * (1 + (int64_t)gs_rng_below(&rng, 64));
        uint64_t k = gs_rng_below(&rng, 100);
        if (k < 35) {
            r[i].kind = GS_REQ_GPU;
            r[i].gpus = 1;
            r[i].milli = 1000;
        } else if (k < 45) {
            static const uint8_t multi[] = {2, 4, 8};
            r[i].kind = GS_REQ_GPU;
            r[i].gpus = multi[gs_rng_below(&rng, 3)];
            r[i].milli = 1000;
        } else if (k < 70) {
            r[i].kind = GS_REQ_FRACTION;
            r[i].gpus = 1;
            r[i].milli = shares[gs_rng_below(&rng, 5)];
        } else if (k < 90) {
            r[i].kind = GS_REQ_MIG;
            r[i].gpus = 1;
            snprintf(r[i].mig, sizeof(r[i].mig), "%s", k < 80 ? "1g.10gb" : "3g.40gb");
        } else {
            r[i].kind = GS_REQ_NONE;
        }
    }
}

int main(int argc, char **argv)
{
    int nodes = 5000, pods = 10000;
    struct gs_request tmpl[TEMPLATES];
    make_templates(tmpl, TEMPLATES, 7);
    if (argc > 2) {
        nodes = (int)strtol(argv[1], NULL, 10);
        pods = (int)strtol(argv[2], NULL, 10);
    }
    struct gs_request *reqs = calloc((size_t)pods, sizeof(*reqs));
    struct gs_rng rng;
    gs_rng_init(&rng, 42);
    for (int i = 0; i < pods; i++) {
        /* Zipf-like: template k with weight 1/(k+1) */
        double u = gs_rng_double(&rng) * 4.27854, acc = 0; /* H(40) */
        int k = 0;
        while (k < TEMPLATES - 1 && (acc += 1.0 / (k + 1)) < u)
            k++;
        reqs[i] = tmpl[k];
    }
    struct gs_typical typ;
    gs_typical_build(reqs, pods, 95, &typ);

    struct gs_cluster c;
    build(&c, nodes);
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

    build(&c, nodes);
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
