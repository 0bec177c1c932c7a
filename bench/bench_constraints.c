/* bench_constraints - engine placement with Kubernetes placement constraints: 10,000 pods in
 * Deployment-like groups onto 5,000 nodes x 8 GPUs (H100 shares, A100 MIG, L40S shares) in 4
 * zones, one core. Two runs of the same pods in the same order: plain (gs_engine_place, no
 * constraints) and constrained, where 30 % of the pods belong to groups whose replicas carry
 * required anti-affinity on kubernetes.io/hostname or a zone spread constraint (maxSkew 1,
 * DoNotSchedule) and every pod goes through gs_engine_place_k, each prepared with
 * gs_kprep_compute and counted with gs_kstate_add_pod after its bind, as the scheduler does.
 * A third run sends every pod through the constrained path with no constraints (the cost of the
 * machinery alone). Each figure is the best of 5 rounds of the three, timed in this thread's CPU
 * time (one core's throughput, whatever else the machine runs; wall-clock figures beside); the
 * placements are checked (replicas on distinct nodes, zone skew within 1). Prints one JSON line;
 * argv: [nodes pods [constrained_pct]]. */
#include "cluster_fixture.h"
#include "base/error.h"
#include "base/rng.h"
#include "core/constraints.h"
#include "core/engine.h"
#include "formats/podspec.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZONES 4
#define RUNS  5

/* this thread's CPU time: the figure is one core's throughput, whatever else the machine runs */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* wall-clock time, reported beside it */
static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

enum kind { PLAIN = 0, ANTI, SPREAD };

struct workload {
    int npods;
    struct gs_request *req;
    int *group;       /* per pod */
    enum kind *gkind; /* per group */
    int ngroups;
    struct gs_kpod *kp;   /* per pod, with its group's constraints */
    struct gs_kpod *bare; /* per pod, labels only */
    int nconstrained;
};

/* A Deployment's pod as the API server serves it */
static void read_pod(struct gs_kpod *p, int group, int replica, enum kind k)
{
    char app[32], name[64];
    snprintf(app, sizeof(app), "deploy-%d", group);
    snprintf(name, sizeof(name), "%s-%d", app, replica);
    json_t *aff = NULL;
    if (k == ANTI)
        aff = json_pack("{s:{s:[{s:{s:{s:s}}, s:s}]}}", "podAntiAffinity",
                        "requiredDuringSchedulingIgnoredDuringExecution", "labelSelector",
                        "matchLabels", "app", app, "topologyKey", GS_KHOSTNAME_KEY);
    json_t *spec = json_pack("{s:[{s:s}]}", "containers", "name", "main");
    if (aff)
        json_object_set_new(spec, "affinity", aff);
    if (k == SPREAD)
        json_object_set_new(spec, "topologySpreadConstraints",
                            json_pack("[{s:i, s:s, s:s, s:{s:{s:s}}}]", "maxSkew", 1, "topologyKey",
                                      FIXTURE_ZONE_KEY, "whenUnsatisfiable", "DoNotSchedule",
                                      "labelSelector", "matchLabels", "app", app));
    json_t *pod =
        json_pack("{s:{s:s, s:s, s:{s:s, s:s}}, s:o}", "metadata", "name", name, "namespace",
                  "default", "labels", "app", app, "pod-template-hash", "5d8f7c9b6", "spec", spec);
    struct gs_error err;
    gs_error_init(&err);
    gs_kpod_init(p);
    if (!pod || gs_podspec_read(pod, p, &err)) {
        fprintf(stderr, "bench_constraints: pod %s: %s\n", name, err.msg);
        exit(1);
    }
    json_decref(pod);
}

/* Deployments of 2..16 replicas, shapes drawn as bench_engine draws pods (Zipf over the
 * templates); constrained groups are drawn until pct % of the pods are theirs, half
 * anti-affinity, half spread. Replicas of a group arrive one after another, as a ReplicaSet
 * creates them. */
static void make_workload(struct workload *w, int npods, int pct)
{
    struct gs_request tmpl[FIXTURE_TEMPLATES];
    fixture_templates(tmpl, FIXTURE_TEMPLATES, 7);
    memset(w, 0, sizeof(*w));
    w->npods = npods;
    w->req = calloc((size_t)npods, sizeof(*w->req));
    w->group = calloc((size_t)npods, sizeof(*w->group));
    w->gkind = calloc((size_t)npods, sizeof(*w->gkind));
    w->kp = calloc((size_t)npods, sizeof(*w->kp));
    w->bare = calloc((size_t)npods, sizeof(*w->bare));
    if (!w->req || !w->group || !w->gkind || !w->kp || !w->bare) {
        fprintf(stderr, "bench_constraints: out of memory\n");
        exit(1);
    }
    struct gs_rng rng;
    gs_rng_init(&rng, 42);
    int i = 0, constrained = 0;
    while (i < npods) {
        int t = fixture_draw(&rng);
        int replicas = 2 + (int)gs_rng_below(&rng, 15);
        int g = w->ngroups++;
        enum kind k = PLAIN;
        if ((int64_t)constrained * 100 < (int64_t)pct * i)
            k = gs_rng_below(&rng, 2) ? ANTI : SPREAD;
        w->gkind[g] = k;
        for (int r = 0; r < replicas && i < npods; r++, i++) {
            w->req[i] = tmpl[t];
            w->group[i] = g;
            read_pod(&w->kp[i], g, r, k);
            read_pod(&w->bare[i], g, r, PLAIN);
            if (k != PLAIN)
                constrained++;
        }
    }
    w->nconstrained = constrained;
}

struct run {
    double pods_per_s, wall_pods_per_s;
    int placed;
    int violations;
};

/* Replicas of an anti-affinity group on one node, and zone skew over 1 in spread groups */
static int violations(const struct workload *w, const struct gs_cluster *c, const int *node)
{
    int bad = 0;
    int *zone = calloc((size_t)w->ngroups * ZONES, sizeof(int));
    int *last = malloc(sizeof(int) * (size_t)c->nnodes);
    if (!zone || !last)
        exit(1);
    for (int n = 0; n < c->nnodes; n++)
        last[n] = -1;
    for (int i = 0; i < w->npods; i++) {
        int g = w->group[i], n = node[i];
        if (n < 0)
            continue;
        if (w->gkind[g] == ANTI) {
            if (last[n] == g)
                bad++;
            last[n] = g; /* a group's replicas are consecutive */
        }
        if (w->gkind[g] == SPREAD)
            zone[g * ZONES + gs_node_label(&c->nodes[n], FIXTURE_ZONE_KEY)[5] - 'a']++;
    }
    for (int g = 0; g < w->ngroups; g++) {
        if (w->gkind[g] != SPREAD)
            continue;
        int lo = zone[g * ZONES], hi = lo;
        for (int z = 1; z < ZONES; z++) {
            lo = zone[g * ZONES + z] < lo ? zone[g * ZONES + z] : lo;
            hi = zone[g * ZONES + z] > hi ? zone[g * ZONES + z] : hi;
        }
        bad += hi - lo > 1;
    }
    free(zone);
    free(last);
    return bad;
}

static bool tolerates_all(void *ctx, int node)
{
    (void)ctx;
    (void)node;
    return true;
}

/* One run: k_pods NULL places with gs_engine_place; otherwise every pod is prepared and
 * placed with gs_engine_place_k and counted in the state after its bind. */
static struct run run_once(const struct workload *w, const struct gs_typical *typ, int nodes,
                           const struct gs_kpod *k_pods)
{
    struct gs_cluster c;
    fixture_build(&c, nodes, ZONES);
    struct gs_engine *e = gs_engine_new(gs_policy_find("gpusched"), typ, c.nnodes, 42);
    struct gs_kstate *ks = NULL;
    struct gs_kprep *kp = NULL;
    int *node = malloc(sizeof(int) * (size_t)w->npods);
    if (!e || !node || (k_pods && (gs_kstate_new(&c, &ks) || gs_kprep_new(&kp)))) {
        fprintf(stderr, "bench_constraints: out of memory\n");
        exit(1);
    }
    struct run out = {0};
    double t0 = now(), w0 = wall();
    for (int i = 0; i < w->npods; i++) {
        struct gs_decision d;
        int rc;
        node[i] = -1;
        if (k_pods) {
            struct gs_kplace k = {.ks = ks, .kp = kp, .tol = tolerates_all};
            rc = gs_kprep_compute(kp, ks, &c, &k_pods[i], tolerates_all, NULL);
            if (rc == 0)
                rc = gs_engine_place_k(e, &c, &w->req[i], i, &k, &d, NULL);
            if (rc == 0)
                rc = gs_cluster_bind(&c, &w->req[i], &d.alloc);
            if (rc == 0 && gs_kstate_add_pod(ks, &c, &k_pods[i], d.alloc.node) < 0)
                rc = GS_ENOMEM;
        } else {
            rc = gs_engine_place(e, &c, &w->req[i], i, &d, NULL);
            if (rc == 0)
                rc = gs_cluster_bind(&c, &w->req[i], &d.alloc);
        }
        if (rc == 0) {
            out.placed++;
            node[i] = d.alloc.node;
        }
    }
    out.pods_per_s = w->npods / (now() - t0);
    out.wall_pods_per_s = w->npods / (wall() - w0);
    out.violations = violations(w, &c, node);
    free(node);
    gs_kprep_free(kp);
    gs_kstate_free(ks);
    gs_engine_free(e);
    gs_cluster_release(&c);
    return out;
}

/* The best of RUNS rounds, each running the three in turn, so that whatever else the machine
 * does weighs on all three alike (the ratio is the figure that matters). */
static void best_of(const struct workload *w, const struct gs_typical *typ, int nodes,
                    struct run *plain, struct run *bare, struct run *cons)
{
    memset(plain, 0, sizeof(*plain));
    memset(bare, 0, sizeof(*bare));
    memset(cons, 0, sizeof(*cons));
    for (int r = 0; r < RUNS; r++) {
        struct run x[3] = {run_once(w, typ, nodes, NULL), run_once(w, typ, nodes, w->bare),
                           run_once(w, typ, nodes, w->kp)};
        struct run *best[3] = {plain, bare, cons};
        for (int k = 0; k < 3; k++)
            if (x[k].pods_per_s > best[k]->pods_per_s)
                *best[k] = x[k];
    }
}

int main(int argc, char **argv)
{
    int nodes = 5000, pods = 10000, pct = 30;
    if (argc > 2) {
        nodes = (int)strtol(argv[1], NULL, 10);
        pods = (int)strtol(argv[2], NULL, 10);
    }
    if (argc > 3)
        pct = (int)strtol(argv[3], NULL, 10);
    if (nodes < 1 || pods < 1 || pct < 0 || pct > 100) {
        fprintf(stderr, "usage: bench_constraints [nodes pods [constrained_pct]]\n");
        return 2;
    }
    struct workload w;
    make_workload(&w, pods, pct);
    struct gs_typical typ;
    gs_typical_build(w.req, pods, 95, &typ);

    struct run plain, bare, cons;
    best_of(&w, &typ, nodes, &plain, &bare, &cons);
    printf("{\"bench\":\"engine_place_constraints\",\"nodes\":%d,\"pods\":%d,\"zones\":%d,"
           "\"policy\":\"gpusched\",\"constrained_pods\":%d,\"constrained_pct\":%.1f,"
           "\"pods_per_s\":%.0f,\"placed\":%d,\"violations\":%d,"
           "\"baseline\":\"plain\",\"baseline_pods_per_s\":%.0f,\"baseline_placed\":%d,"
           "\"ratio\":%.2f,\"unconstrained_k_pods_per_s\":%.0f,\"unconstrained_k_placed\":%d,"
           "\"runs\":%d,\"clock\":\"thread_cputime\",\"wall_pods_per_s\":%.0f,"
           "\"baseline_wall_pods_per_s\":%.0f}\n",
           nodes, pods, ZONES, w.nconstrained, 100.0 * w.nconstrained / pods, cons.pods_per_s,
           cons.placed, cons.violations, plain.pods_per_s, plain.placed,
           plain.pods_per_s / cons.pods_per_s, bare.pods_per_s, bare.placed, RUNS,
           cons.wall_pods_per_s, plain.wall_pods_per_s);
    for (int i = 0; i < pods; i++) {
        gs_kpod_release(&w.kp[i]);
        gs_kpod_release(&w.bare[i]);
    }
    free(w.kp);
    free(w.bare);
    free(w.req);
    free(w.group);
    free(w.gkind);
    return 0;
}
