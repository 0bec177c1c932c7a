/* bench_topo - topology-aware gangs in the scheduling cycle (core/cycle.c with core/topo.c):
 * 5,000 nodes x 8 GPUs (bench/cluster_fixture.h) labelled with blocks of 256 nodes,
 * subblocks of 32 and hostnames; 10,000 pending pods: gangs of 8 one-GPU pods and of 4
 * two-GPU pods, half required in a subblock, half preferring a block, beside small pods drawn
 * from the fixture's templates. One cycle with the topology (its build included), against
 * the same pods as plain pods (no gangs, no topology) and as topology-blind gangs, in the same
 * run. Prints one JSON line. */
#include "cluster_fixture.h"
#include "core/cycle.h"
#include "core/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK_KEY    "cloud.google.com/gce-topology-block"
#define SUBBLOCK_KEY "cloud.google.com/gce-topology-subblock"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void label(struct gs_cluster *c)
{
    for (int i = 0; i < c->nnodes; i++) {
        char b[32], s[32];
        snprintf(b, sizeof(b), "block-%d", i / 256);
        snprintf(s, sizeof(s), "sub-%d", (i / 32) % 8);
        if (gs_node_set_label(&c->nodes[i], BLOCK_KEY, b) ||
            gs_node_set_label(&c->nodes[i], SUBBLOCK_KEY, s) ||
            gs_node_set_label(&c->nodes[i], GS_KHOSTNAME_KEY, c->nodes[i].name)) {
            fprintf(stderr, "bench_topo: labelling failed\n");
            exit(1);
        }
    }
}

enum mode { PLAIN = 0, BLIND, TOPO };

/* One cycle; returns seconds and *binds. */
static double run(int nodes, const struct gs_cyc_pod *src, int n, const struct gs_cyc_gang *gangs,
                  int ngangs, enum mode m, int *binds)
{
    struct gs_cluster c;
    fixture_build(&c, nodes, 0);
    label(&c);
    struct gs_cyc_pod *pods = malloc(sizeof(*pods) * (size_t)n);
    memcpy(pods, src, sizeof(*pods) * (size_t)n);
    if (m == PLAIN)
        for (int i = 0; i < n; i++)
            pods[i].gang = -1;
    struct gs_engine *e =
        gs_engine_new(gs_policy_find("gpusched"), NULL, gs_cycle_engine_nodes(c.nnodes), 42);
    struct gs_topo_levels lv;
    memset(&lv, 0, sizeof(lv));
    gs_topo_levels_add(&lv, BLOCK_KEY);
    gs_topo_levels_add(&lv, SUBBLOCK_KEY);
    gs_topo_levels_add(&lv, GS_KHOSTNAME_KEY);
    struct gs_topo t;
    gs_topo_init(&t);
    t.nshapes = 2;
    t.shapes[0] = (struct gs_topo_shape){.gpus = 8, .level = 1, .freq = 0.5};
    t.shapes[1] = (struct gs_topo_shape){.gpus = 8, .level = 0, .freq = 0.5};
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    double t0 = now();
    if (m == TOPO && gs_topo_build(&t, &lv, GS_TOPO_GPUSCHED, &c)) {
        fprintf(stderr, "bench_topo: building the topology failed\n");
        exit(1);
    }
    struct gs_cycle_in in = {.c = &c,
                             .e = e,
                             .pods = pods,
                             .npods = n,
                             .gangs = m == PLAIN ? NULL : gangs,
                             .ngangs = m == PLAIN ? 0 : ngangs,
                             .now_s = 1000,
                             .topo = m == TOPO ? &t : NULL};
    if (gs_cycle_run(&in, &out)) {
        fprintf(stderr, "bench_topo: the cycle failed\n");
        exit(1);
    }
    double dt = now() - t0;
    *binds = out.count[GS_CYC_BIND];
    gs_cycle_out_release(&out);
    gs_topo_release(&t);
    gs_engine_free(e);
    gs_cluster_release(&c);
    free(pods);
    return dt;
}

int main(int argc, char **argv)
{
    int nodes = 5000, npods = 10000;
    if (argc > 2) {
        nodes = (int)strtol(argv[1], NULL, 10);
        npods = (int)strtol(argv[2], NULL, 10);
    }
    struct gs_request tmpl[FIXTURE_TEMPLATES];
    fixture_templates(tmpl, FIXTURE_TEMPLATES, 7);
    struct gs_cyc_pod *pods = calloc((size_t)npods, sizeof(*pods));
    struct gs_cyc_gang *gangs = calloc((size_t)npods / 4 + 1, sizeof(*gangs));
    struct gs_rng rng;
    gs_rng_init(&rng, 42);
    int n = 0, ng = 0, gang_pods = 0;
    while (n < npods) {
        uint64_t k = gs_rng_below(&rng, 10);
        int members = k < 1 ? 8 : k < 2 ? 4 : 1;
        if (n + members > npods)
            members = 1;
        for (int i = 0; i < members; i++, n++) {
            struct gs_cyc_pod *p = &pods[n];
            p->queue = GS_QUEUE_NONE;
            p->gang = members > 1 ? ng : -1;
            p->seq = (uint64_t)n;
            p->nominated = -1;
            p->due = true;
            if (members == 1) {
                p->req = tmpl[fixture_draw(&rng)];
                continue;
            }
            p->req.kind = GS_REQ_GPU;
            p->req.gpus = (uint8_t)(8 / members);
            p->req.milli = GS_MILLI;
            p->req.cpu_milli = 4000;
            p->req.mem_mib = 16384;
        }
        if (members > 1) {
            gangs[ng] = (struct gs_cyc_gang){
                .min_member = members,
                .topo = {ng % 2 ? GS_TOPO_PREFERRED : GS_TOPO_REQUIRED, (int8_t)(ng % 2 ? 0 : 1)}};
            ng++;
            gang_pods += members;
        }
    }
    int bp, bb, bt;
    double tp = run(nodes, pods, n, gangs, ng, PLAIN, &bp);
    double tb = run(nodes, pods, n, gangs, ng, BLIND, &bb);
    double tt = run(nodes, pods, n, gangs, ng, TOPO, &bt);
    printf("{\"bench\":\"topology_gangs\",\"nodes\":%d,\"pods\":%d,\"gangs\":%d,\"gang_pods\":%d,"
           "\"pods_per_s\":%.0f,\"placed\":%d,\"blind_gangs_pods_per_s\":%.0f,\"blind_placed\":%d,"
           "\"baseline\":\"plain_pods\",\"baseline_pods_per_s\":%.0f,\"baseline_placed\":%d,"
           "\"slowdown\":%.2f,\"within_3x\":%s}\n",
           nodes, n, ng, gang_pods, n / tt, bt, n / tb, bb, n / tp, bp, tt / tp,
           tt <= 3 * tp ? "true" : "false");
    free(pods);
    free(gangs);
    return 0;
}
