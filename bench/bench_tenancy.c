/* bench_tenancy - the engine with tenancy on the 5,000-node case: 10,000 pods from 50 queues
 * (deserved shares, weights), 3 priorities and 10 % of pods in gangs of 4, each pod admitted
 * against its queue, placed (gangs all at once) and charged, against plain placement of the
 * same pods in the same run; then, with the cluster full of running pods, the time of one
 * preemption decision (victims that fit the preemptor and lose the fewest GPU-hours),
 * against a naive baseline (first node where evicting its lowest-priority pods makes room);
 * and the decision for a whole gang of 4 x 8 GPUs (gs_gang_preempt), against four separate
 * single-pod decisions for the same members (which may pick the same victims twice).
 * Prints JSON lines. */
#include "base/rng.h"
#include "core/engine.h"
#include "core/gang.h"
#include "core/preempt.h"
#include "core/tenant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NODES     5000
#define PODS      10000
#define QUEUES    50
#define GANG      4
#define DECISIONS 300

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void build(struct gs_cluster *c)
{
    int a100 = gs_catalog_find("A100-80GB"), h100 = gs_catalog_find("H100-80GB");
    struct gs_mig_layout mixed;
    memset(&mixed, 0, sizeof(mixed));
    mixed.count[gs_catalog_find_profile(a100, "3g.40gb")] = 1;
    mixed.count[gs_catalog_find_profile(a100, "1g.10gb")] = 4;
    gs_cluster_init(c);
    for (int i = 0; i < NODES; i++) {
        char name[32];
        snprintf(name, sizeof(name), "node-%05d", i);
        if (i % 4 == 3)
            gs_cluster_add_node(c, name, a100, 8, 128000, 1 << 20, GS_GPU_MIG, 0, &mixed);
        else
            gs_cluster_add_node(c, name, h100, 8, 192000, 2 << 20, GS_GPU_FRACTION, 0, NULL);
    }
}

struct pod {
    struct gs_request req;
    int queue, prio, gang; /* gang: id of the first member, or -1 */
};

/* Pod shapes come from 40 templates drawn with skewed frequencies (Deployments and Jobs
 * share their pod spec, as in bench_engine); queue, priority and gang membership vary per
 * pod. Gang members ask 8 whole GPUs each. */
#define TEMPLATES 40
static void make_pods(struct pod *p, int n, uint64_t seed)
{
    static const int32_t prios[3] = {1000000, 900000, 100000};
    static const int16_t shares[] = {250, 500, 810};
    struct gs_rng rng;
    gs_rng_init(&rng, seed);
    struct gs_request tmpl[TEMPLATES];
    for (int i = 0; i < TEMPLATES; i++) {
        struct gs_request *r = &tmpl[i];
        memset(r, 0, sizeof(*r));
        r->cpu_milli = 1000 * (1 + (int64_t)gs_rng_below(&rng, 8));
        r->mem_mib = 1024 * (1 + (int64_t)gs_rng_below(&rng, 32));
        uint64_t k = gs_rng_below(&rng, 100);
        if (i == 0 || k < 45) {
            static const uint8_t g[] = {8, 1, 2, 4};
            r->kind = GS_REQ_GPU;
            r->gpus = i == 0 ? 8 : g[gs_rng_below(&rng, 4)];
            r->milli = 1000;
        } else if (k < 70) {
            r->kind = GS_REQ_FRACTION;
            r->gpus = 1;
            r->milli = shares[gs_rng_below(&rng, 3)];
        } else {
            r->kind = GS_REQ_MIG;
            r->gpus = 1;
            snprintf(r->mig, sizeof(r->mig), "%s", k < 85 ? "1g.10gb" : "3g.40gb");
        }
    }
    for (int i = 0; i < n;) {
        bool gang = gs_rng_below(&rng, 100) < 10 && i + GANG <= n;
        /* Zipf-like over templates 1..39: template k with weight 1/k; gangs use template 0 */
        double u = gs_rng_double(&rng) * 4.25354, acc = 0; /* H(39) */
        int k = 1;
        while (k < TEMPLATES - 1 && (acc += 1.0 / k) < u)
            k++;
        const struct gs_request *r = &tmpl[gang ? 0 : k];
        int q = (int)gs_rng_below(&rng, QUEUES), pr = prios[gs_rng_below(&rng, 3)];
        int m = gang ? GANG : 1;
        for (int j = 0; j < m; j++, i++) {
            p[i].req = *r;
            p[i].queue = q;
            p[i].prio = pr;
            p[i].gang = gang ? i - j : -1;
        }
    }
}

static void tenants(struct gs_tenants *t, const struct gs_cluster *c)
{
    gs_tenants_init(t);
    struct gs_cluster_totals tot;
    gs_cluster_totals(c, &tot);
    t->cap.v[GS_QR_UNITS] = (int64_t)(tot.units_cap * 1000);
    for (int q = 0; q < QUEUES; q++) {
        char name[32];
        snprintf(name, sizeof(name), "team-%02d", q);
        int i = gs_tenants_add_queue(t, name, NULL, 1 + q % 3, 0, NULL);
        t->q[i].deserved.v[GS_QR_UNITS] = t->cap.v[GS_QR_UNITS] / QUEUES;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    struct pod *pods = calloc(PODS, sizeof(*pods));
    make_pods(pods, PODS, 11);
    /* 1. throughput with tenancy */
    struct gs_cluster c;
    build(&c);
    struct gs_tenants t;
    tenants(&t, &c);
    struct gs_engine *e = gs_engine_new(gs_policy_find("gpusched"), NULL, c.nnodes, 42);
    int placed = 0, denied = 0;
    double t0 = now();
    for (int i = 0; i < PODS;) {
        struct pod *p = &pods[i];
        int m = p->gang >= 0 ? GANG : 1;
        struct gs_qvec d, sum;
        gs_qvec_zero(&sum);
        for (int j = 0; j < m; j++) {
            gs_tenants_demand(&t, &pods[i + j].req, &d);
            for (int x = 0; x < GS_QR_COUNT; x++)
                sum.v[x] += d.v[x];
        }
        if (gs_tenants_admit(&t, p->queue, NULL, &sum, NULL, 0) == GS_ADMIT_DENY) {
            denied += m;
            i += m;
            continue;
        }
        if (m > 1) {
            const struct gs_request *reqs[GANG];
            struct gs_decision dec[GANG];
            for (int j = 0; j < m; j++)
                reqs[j] = &pods[i + j].req;
            if (gs_gang_place(e, &c, reqs, m, dec, NULL, NULL) == 0) {
                placed += m;
                gs_tenants_charge(&t, p->queue, NULL, &sum, +1);
            }
        } else {
            struct gs_decision dec;
            if (gs_engine_place(e, &c, &p->req, i, &dec, NULL) == 0 &&
                gs_cluster_bind(&c, &p->req, &dec.alloc) == 0) {
                placed++;
                gs_tenants_charge(&t, p->queue, NULL, &sum, +1);
            }
        }
        i += m;
    }
    double dt = now() - t0;
    gs_engine_free(e);
    gs_cluster_release(&c);
    gs_tenants_release(&t);
    /* baseline: the same pods, plain placement, no queues or gangs */
    build(&c);
    e = gs_engine_new(gs_policy_find("gpusched"), NULL, c.nnodes, 42);
    int placed_b = 0;
    t0 = now();
    for (int i = 0; i < PODS; i++) {
        struct gs_decision dec;
        if (gs_engine_place(e, &c, &pods[i].req, i, &dec, NULL) == 0 &&
            gs_cluster_bind(&c, &pods[i].req, &dec.alloc) == 0)
            placed_b++;
    }
    double dt_b = now() - t0;
    printf("{\"bench\":\"engine_tenancy\",\"nodes\":%d,\"pods\":%d,\"queues\":%d,"
           "\"priorities\":3,\"gang_share\":0.1,\"pods_per_s\":%.0f,\"placed\":%d,\"denied\":%d,"
           "\"goal_pods_per_s\":10000,\"baseline\":\"engine_place_without_tenancy\","
           "\"baseline_pods_per_s\":%.0f,\"baseline_placed\":%d}\n",
           NODES, PODS, QUEUES, PODS / dt, placed, denied, PODS / dt_b, placed_b);
    fflush(stdout);

    /* 2. preemption decisions on a full cluster: fill it with low-priority pods */
    struct gs_rng rng;
    gs_rng_init(&rng, 5);
    int cap = 200000, nrun = 0;
    struct gs_running *run = calloc((size_t)cap, sizeof(*run));
    gs_engine_free(e);
    gs_cluster_release(&c);
    build(&c);
    tenants(&t, &c);
    e = gs_engine_new(gs_policy_find("gpusched"), NULL, c.nnodes, 42);
    for (int round = 0; nrun < cap; round++) {
        struct pod *p = &pods[round % PODS];
        struct gs_decision dec;
        if (gs_engine_place(e, &c, &p->req, round, &dec, NULL) ||
            gs_cluster_bind(&c, &p->req, &dec.alloc)) {
            if (round > 3 * PODS && round % PODS == 0)
                break; /* three passes over the shapes found no more room */
            continue;
        }
        struct gs_running *r = &run[nrun++];
        r->node = dec.alloc.node;
        r->req = p->req;
        r->alloc = dec.alloc;
        r->queue = p->queue;
        r->priority = p->prio == 1000000 ? 100000 : p->prio; /* mostly low and high */
        r->start_s = (double)gs_rng_below(&rng, 36000);
        r->gang = -1;
        r->pdb = -1;
        gs_tenants_demand(&t, &r->req, &r->demand);
        gs_tenants_charge(&t, r->queue, NULL, &r->demand, +1);
    }
    struct gs_cluster_totals tot;
    gs_cluster_totals(&c, &tot);
    double *ms = calloc(DECISIONS, sizeof(double)), *ms_b = calloc(DECISIONS, sizeof(double));
    int found = 0, found_b = 0;
    double lost = 0, lost_b = 0;
    for (int k = 0; k < DECISIONS; k++) {
        struct pod *p = &pods[gs_rng_below(&rng, PODS)];
        struct gs_preempt_ctx ctx = {.run = run, .nrun = nrun, .tenants = &t, .now_s = 36000};
        struct gs_qvec d;
        gs_tenants_demand(&t, &p->req, &d);
        struct gs_preemptor pr = {&p->req, p->queue, 1000000,
                                  gs_tenants_admit(&t, p->queue, NULL, &d, NULL, 0) ==
                                      GS_ADMIT_OWED};
        struct gs_preempt_plan plan;
        double a = now();
        int rc = gs_preempt_plan(e, &c, &ctx, &pr, &plan);
        ms[k] = (now() - a) * 1000;
        if (rc == 0) {
            found++;
            lost += plan.gpu_hours;
        }
        /* baseline: first node where evicting its lower-priority pods of the same queue,
         * lowest priority first, makes room */
        a = now();
        for (int n = 0; n < c.nnodes; n++) {
            double hours = 0;
            int ev[64], nev = 0;
            for (int r = 0; r < nrun && nev < 64; r++) {
                if (run[r].node != n || run[r].queue != p->queue || run[r].priority >= 1000000)
                    continue;
                gs_cluster_unbind(&c, &run[r].req, &run[r].alloc);
                ev[nev++] = r;
                hours += gs_running_gpu_hours(&run[r], 36000);
                if (gs_engine_fits(&c, n, &p->req, NULL))
                    break;
            }
            bool ok = gs_engine_fits(&c, n, &p->req, NULL);
            for (int j = 0; j < nev; j++)
                gs_cluster_bind(&c, &run[ev[j]].req, &run[ev[j]].alloc);
            if (ok) {
                found_b++;
                lost_b += hours;
                break;
            }
        }
        ms_b[k] = (now() - a) * 1000;
    }
    qsort(ms, DECISIONS, sizeof(double), cmp_double);
    qsort(ms_b, DECISIONS, sizeof(double), cmp_double);
    printf("{\"bench\":\"preempt_decision\",\"nodes\":%d,\"running\":%d,\"allocated_gpus\":%.0f,"
           "\"decisions\":%d,\"found\":%d,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,"
           "\"mean_gpu_hours_lost\":%.3f,\"goal_p99_ms\":10,\"baseline\":\"first_node_lowest_"
           "priority_scan\",\"baseline_found\":%d,\"baseline_p99_ms\":%.3f,"
           "\"baseline_mean_gpu_hours_lost\":%.3f}\n",
           NODES, nrun, tot.units_alloc, DECISIONS, found, ms[DECISIONS / 2],
           ms[DECISIONS * 99 / 100], ms[DECISIONS - 1], found ? lost / found : 0, found_b,
           ms_b[DECISIONS * 99 / 100], found_b ? lost_b / found_b : 0);
    /* 3. gang decisions: 4 members of 8 GPUs each (a pod shape of the mix with 8 GPUs) */
    int g8 = -1;
    for (int i = 0; i < PODS && g8 < 0; i++)
        if (pods[i].req.kind == GS_REQ_GPU && pods[i].req.gpus == 8)
            g8 = i;
    int gfound = 0, gvict = 0;
    double glost = 0;
    for (int k = 0; g8 >= 0 && k < DECISIONS; k++) {
        struct pod *p = &pods[g8];
        int queue = (int)gs_rng_below(&rng, QUEUES);
        struct gs_preempt_ctx ctx = {.run = run, .nrun = nrun, .tenants = &t, .now_s = 36000};
        struct gs_qvec d;
        gs_tenants_demand(&t, &p->req, &d);
        for (int x = 0; x < GS_QR_COUNT; x++)
            d.v[x] *= GANG;
        struct gs_preemptor pr = {NULL, queue, 1000000,
                                  gs_tenants_admit(&t, queue, NULL, &d, NULL, 0) == GS_ADMIT_OWED};
        const struct gs_request *reqs[GANG];
        for (int m = 0; m < GANG; m++)
            reqs[m] = &p->req;
        struct gs_preempt_plan plans[GANG];
        double a = now();
        int rc = gs_gang_preempt(e, &c, &t, &ctx, &pr, reqs, GANG, plans);
        ms[k] = (now() - a) * 1000;
        if (rc == 0) {
            gfound++;
            for (int m = 0; m < GANG; m++) {
                glost += plans[m].gpu_hours;
                gvict += plans[m].nvictims;
            }
        }
        a = now();
        for (int m = 0; m < GANG; m++) {
            struct gs_preemptor one = pr;
            one.req = &p->req;
            gs_preempt_plan(e, &c, &ctx, &one, &plans[m]);
        }
        ms_b[k] = (now() - a) * 1000;
    }
    qsort(ms, DECISIONS, sizeof(double), cmp_double);
    qsort(ms_b, DECISIONS, sizeof(double), cmp_double);
    printf("{\"bench\":\"gang_preempt_decision\",\"nodes\":%d,\"running\":%d,\"members\":%d,"
           "\"gpus_per_member\":8,\"decisions\":%d,\"found\":%d,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"mean_victims\":%.2f,\"mean_gpu_hours_lost\":%.3f,"
           "\"baseline\":\"four_single_pod_decisions\",\"baseline_p50_ms\":%.3f,"
           "\"baseline_p99_ms\":%.3f}\n",
           NODES, nrun, GANG, g8 >= 0 ? DECISIONS : 0, gfound, ms[DECISIONS / 2],
           ms[DECISIONS * 99 / 100], gfound ? (double)gvict / gfound : 0,
           gfound ? glost / gfound : 0, ms_b[DECISIONS / 2], ms_b[DECISIONS * 99 / 100]);
    free(ms);
    free(ms_b);
    free(run);
    free(pods);
    gs_engine_free(e);
    gs_cluster_release(&c);
    gs_tenants_release(&t);
    return 0;
}
