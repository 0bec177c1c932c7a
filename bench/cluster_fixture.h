/* cluster_fixture.h - the cluster and pod shapes bench_engine and bench_constraints share, so
 * their figures speak of the same work: nodes x 8 GPUs (half H100 in shares, a quarter A100
 * with a fixed MIG layout, a quarter L40S in shares) and 40 pod templates drawn Zipf-like.
 * Header-only (static functions); the name keeps it out of CMake's bench_*.c glob. */
#ifndef GS_BENCH_CLUSTER_FIXTURE_H
#define GS_BENCH_CLUSTER_FIXTURE_H

#include "base/rng.h"
#include "core/constraints.h"
#include "core/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURE_TEMPLATES 40
#define FIXTURE_ZONE_KEY  "topology.kubernetes.io/zone"

/* nodes nodes named node-NNNNN into c (initialised here). zones > 0: each node labelled as a
 * real one is, with hostname, zone (blocks of 25 nodes dealt round the zones, so every zone
 * holds every model) and GPU product; a failure there exits. */
static inline void fixture_build(struct gs_cluster *c, int nodes, int zones)
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
        int id;
        const char *product;
        switch (i % 4) {
        case 0:
        case 1:
            id = gs_cluster_add_node(c, name, h100, 8, 192000, 2 << 20, GS_GPU_FRACTION, 0, NULL);
            product = "NVIDIA-H100-80GB-HBM3";
            break;
        case 2:
            id = gs_cluster_add_node(c, name, a100, 8, 128000, 1 << 20, GS_GPU_MIG, 0, &mixed);
            product = "NVIDIA-A100-SXM4-80GB";
            break;
        default:
            id = gs_cluster_add_node(c, name, l40s, 8, 64000, 512 << 10, GS_GPU_FRACTION, 0, NULL);
            product = "NVIDIA-L40S";
        }
        if (zones <= 0)
            continue;
        char zone[32];
        snprintf(zone, sizeof(zone), "zone-%c", 'a' + (i / 25) % zones);
        if (id < 0 || gs_node_set_label(&c->nodes[id], GS_KHOSTNAME_KEY, name) ||
            gs_node_set_label(&c->nodes[id], FIXTURE_ZONE_KEY, zone) ||
            gs_node_set_label(&c->nodes[id], "nvidia.com/gpu.product", product)) {
            fprintf(stderr, "cluster_fixture: building node %s failed\n", name);
            exit(1);
        }
    }
}

/* n pod templates (Deployments and Jobs share their pod spec): whole GPUs, multi-GPU, shares,
 * MIG profiles and CPU-only, from seed. */
static inline void fixture_templates(struct gs_request *r, int n, uint64_t seed)
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

/* A template index, Zipf-like: template k with weight 1/(k+1), as in the openb trace where 35
 * shapes cover 95 % of pods. */
static inline int fixture_draw(struct gs_rng *rng)
{
    double u = gs_rng_double(rng) * 4.27854, acc = 0; /* H(40) */
    int k = 0;
    while (k < FIXTURE_TEMPLATES - 1 && (acc += 1.0 / (k + 1)) < u)
        k++;
    return k;
}

#endif
