/* The openb offline figures checked against the true optimum, found by brute force: on random
 * small instances (1 or 2 nodes, up to 8 pods) drawn from every node and pod shape the shipped
 * traces have, at every arrival, the proven lower bound (gs_openb_unalloc_bound, the
 * Lagrangian and the share bound as `sim openb --policy offline` combines them) never exceeds
 * what the optimum leaves unallocated, and the optimum never leaves more than the offline
 * packer's candidates (the decreasing-size packer; gpusched's and fgd's online placements
 * repaired with hindsight), which place with the engine's own filter and bind. The optimum is
 * computed here from the rules alone (CPU, memory, GPU model, whole GPUs, shares packed into
 * GPUs), without the engine: a disagreement is a bug in one of the two. Reads the shapes from
 * ../shared/data/openb; without it, from shapes written here (the node list's, and pods like
 * the traces'). */
#include "base/error.h"
#include "base/rng.h"
#include "core/frag.h"
#include "sim/openb.h"
#include "sim/openbopt.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INSTANCES 12000
#define MAX_PODS  8

struct bnode {
    int model, gpus;
    int64_t cpu, mem;
};

struct shapes {
    struct bnode node[64];
    int nnodes;
    struct gs_request *pod; /* every pod of the traces, for frequency-weighted draws */
    int npods;
    struct gs_request *uniq; /* distinct pod shapes, for uniform draws */
    int nuniq;
};

static bool same_req(const struct gs_request *a, const struct gs_request *b)
{
    return a->cpu_milli == b->cpu_milli && a->mem_mib == b->mem_mib && a->kind == b->kind &&
           a->gpus == b->gpus && a->milli == b->milli && a->model_mask == b->model_mask;
}

static void add_node_shape(struct shapes *s, int model, int gpus, int64_t cpu, int64_t mem)
{
    for (int i = 0; i < s->nnodes; i++)
        if (s->node[i].model == model && s->node[i].gpus == gpus && s->node[i].cpu == cpu &&
            s->node[i].mem == mem)
            return;
    if (s->nnodes < 64)
        s->node[s->nnodes++] = (struct bnode){model, gpus, cpu, mem};
}

static void add_pod(struct shapes *s, const struct gs_request *r)
{
    s->pod = realloc(s->pod, sizeof(*s->pod) * (size_t)(s->npods + 1));
    cr_assert_not_null(s->pod);
    s->pod[s->npods++] = *r;
}

static void add_shape(struct shapes *s, const struct gs_request *r)
{
    for (int k = 0; k < s->nuniq; k++)
        if (same_req(&s->uniq[k], r))
            return;
    s->uniq = realloc(s->uniq, sizeof(*s->uniq) * (size_t)(s->nuniq + 1));
    cr_assert_not_null(s->uniq);
    s->uniq[s->nuniq++] = *r;
}

/* Every shipped trace's shapes; false when the traces are absent. */
static bool load_traces(struct shapes *s)
{
    char dir[512], path[1024];
    snprintf(dir, sizeof(dir), "%s/data/openb", GS_SHARED_DIR);
    snprintf(path, sizeof(path), "%s/openb_node_list_gpu_node.csv", dir);
    struct gs_error err;
    gs_error_init(&err);
    struct gs_openb_node *nodes = NULL;
    int nn = gs_openb_load_nodes(path, &nodes, &err);
    DIR *d = opendir(dir);
    if (nn <= 0 || !d) {
        free(nodes);
        if (d)
            closedir(d);
        return false;
    }
    for (int i = 0; i < nn; i++)
        add_node_shape(s, nodes[i].model, nodes[i].gpus, nodes[i].cpu_milli, nodes[i].mem_mib);
    free(nodes);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "openb_pod_list_", 15) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct gs_openb_pod *pods = NULL;
        int np = gs_openb_load_pods(path, &pods, &err);
        cr_assert_geq(np, 0, "%s", err.msg);
        /* one pod in 7 for draws by frequency over all traces; every distinct shape */
        for (int i = 0; i < np; i++) {
            if (i % 7 == 0)
                add_pod(s, &pods[i].req);
            add_shape(s, &pods[i].req);
        }
        free(pods);
    }
    closedir(d);
    return s->npods > 0;
}

/* Without the traces: the node list's shapes (shared/data/openb/README.md) and pods like the
 * traces' (CPU-only, shares of the default trace's sizes, 1-8 whole GPUs, some naming models). */
static void builtin_shapes(struct shapes *s, struct gs_rng *rng)
{
    static const struct {
        const char *model;
        int gpus, cores, gib;
    } nd[] = {{"G2", 8, 96, 384},      {"T4", 2, 104, 512},     {"T4", 4, 96, 384},
              {"P100", 2, 16, 120},    {"P100", 2, 64, 256},    {"P100", 1, 8, 60},
              {"P100", 2, 8, 60},      {"G3", 8, 128, 768},     {"V100M16", 4, 32, 128},
              {"V100M16", 1, 8, 32},   {"V100M16", 8, 64, 256}, {"V100M16", 8, 82, 336},
              {"V100M32", 8, 96, 768}, {"V100M32", 4, 48, 368}, {"A10", 1, 128, 1024}};
    for (size_t i = 0; i < sizeof(nd) / sizeof(nd[0]); i++)
        add_node_shape(s, gs_catalog_find(nd[i].model), nd[i].gpus, nd[i].cores * 1000LL,
                       nd[i].gib * 1024LL);
    static const int shares[] = {50,  110, 160, 220, 230, 320, 370,
                                 460, 470, 480, 550, 590, 650, 810};
    static const char *specs[] = {"T4", "G2", "P100", "V100M16", "V100M32", "G3"};
    for (int i = 0; i < 4000; i++) {
        struct gs_request r = {.cpu_milli = 1000 * (1 + (int64_t)gs_rng_below(rng, 32)),
                               .mem_mib = 1024 * (1 + (int64_t)gs_rng_below(rng, 64))};
        int k = (int)gs_rng_below(rng, 10);
        if (k >= 2 && k < 6) {
            r.kind = GS_REQ_FRACTION;
            r.gpus = 1;
            r.milli = (int16_t)shares[gs_rng_below(rng, sizeof(shares) / sizeof(shares[0]))];
        } else if (k >= 6) {
            r.kind = GS_REQ_GPU;
            r.gpus = (uint8_t)(k == 9 ? 1 << gs_rng_below(rng, 4) : 1);
            r.milli = GS_MILLI;
        }
        if (r.kind != GS_REQ_NONE && gs_rng_below(rng, 4) == 0)
            r.model_mask = 1u << gs_catalog_find(specs[gs_rng_below(rng, 6)]);
        add_pod(s, &r);
        add_shape(s, &r);
    }
}

/* ---------- the optimum, by brute force ---------- */

/* Can shares[0..n) (largest first) go into GPUs with loads load[0..bins), 1000 milli each?
 * Depth first, each share into a GPU of a load not tried before for it. */
static bool pack_shares(const int *shares, int n, int *load, int bins)
{
    if (n == 0)
        return true;
    for (int b = 0; b < bins; b++) {
        bool seen = false;
        for (int q = 0; q < b && !seen; q++)
            seen = load[q] == load[b];
        if (seen || load[b] + shares[0] > GS_MILLI)
            continue;
        load[b] += shares[0];
        bool ok = pack_shares(shares + 1, n - 1, load, bins);
        load[b] -= shares[0];
        if (ok)
            return true;
    }
    return false;
}

/* Do the pods of set (bits over pod[0..np)) fit together on an empty node nd? */
static bool set_fits(const struct bnode *nd, const struct gs_request *pod, int np, unsigned set)
{
    int64_t cpu = 0, mem = 0;
    int whole = 0, shares[MAX_PODS], ns = 0;
    for (int i = 0; i < np; i++) {
        if (!(set & (1u << i)))
            continue;
        const struct gs_request *r = &pod[i];
        cpu += r->cpu_milli;
        mem += r->mem_mib;
        if (r->kind == GS_REQ_NONE)
            continue;
        if (nd->model < 0 || (r->model_mask && !(r->model_mask & (1u << nd->model))))
            return false;
        if (r->kind == GS_REQ_GPU)
            whole += r->gpus;
        else
            shares[ns++] = r->milli;
    }
    if (cpu > nd->cpu || mem > nd->mem || whole > nd->gpus)
        return false;
    for (int a = 1; a < ns; a++) /* largest first */
        for (int b = a; b > 0 && shares[b] > shares[b - 1]; b--) {
            int t = shares[b];
            shares[b] = shares[b - 1];
            shares[b - 1] = t;
        }
    int load[8] = {0};
    return pack_shares(shares, ns, load, nd->gpus - whole);
}

/* The most milli-GPU any placement of the first k pods places, for every k in 1..np, into
 * best[k]. */
static void optimum(const struct bnode *node, int nn, const struct gs_request *pod, int np,
                    int64_t *best)
{
    unsigned full = 1u << np;
    static bool fits[2][1 << MAX_PODS];
    static int64_t val[1 << MAX_PODS], best1[1 << MAX_PODS];
    for (unsigned m = 0; m < full; m++) {
        val[m] = 0;
        for (int i = 0; i < np; i++)
            if (m & (1u << i))
                val[m] += gs_request_total_milli(&pod[i]);
        for (int j = 0; j < 2; j++)
            fits[j][m] = j < nn && set_fits(&node[j], pod, np, m);
    }
    /* best1[m]: the most the second node places out of m */
    for (unsigned m = 0; m < full; m++) {
        best1[m] = fits[1][m] ? val[m] : 0;
        for (int i = 0; i < np; i++)
            if ((m & (1u << i)) && best1[m & ~(1u << i)] > best1[m])
                best1[m] = best1[m & ~(1u << i)];
    }
    for (int k = 1; k <= np; k++) {
        unsigned all = (1u << k) - 1;
        best[k] = 0;
        for (unsigned a = all;; a = (a - 1) & all) { /* every subset of the first k */
            if (fits[0][a] && val[a] + best1[all & ~a] > best[k])
                best[k] = val[a] + best1[all & ~a];
            if (a == 0)
                break;
        }
    }
}

/* ---------- the figures under test ---------- */

static void build(struct gs_cluster *c, const struct bnode *node, int nn)
{
    gs_cluster_init(c);
    for (int j = 0; j < nn; j++)
        cr_assert_geq(gs_cluster_add_node(c, j ? "n1" : "n0", node[j].model, node[j].gpus,
                                          node[j].cpu, node[j].mem, GS_GPU_FRACTION, 0, NULL),
                      0);
}

/* The milli an online policy places on the first k pods, then the repair with all k known. */
static int64_t online_repaired(struct gs_engine *e, const struct bnode *node, int nn,
                               const struct gs_request *pod, const int32_t *idx, int k)
{
    struct gs_cluster c;
    build(&c, node, nn);
    struct gs_alloc alloc[MAX_PODS];
    uint8_t placed[MAX_PODS] = {0};
    memset(alloc, 0, sizeof(alloc));
    int64_t used = 0;
    for (int i = 0; i < k; i++) {
        struct gs_decision d;
        if (gs_engine_place(e, &c, &pod[i], i, &d, NULL) == 0 &&
            gs_cluster_bind(&c, &pod[i], &d.alloc) == 0) {
            alloc[i] = d.alloc;
            placed[i] = 1;
            used += gs_request_total_milli(&pod[i]);
        }
    }
    int64_t g = gs_openb_repair(&c, pod, idx, k, alloc, placed, 16);
    cr_assert_geq(g, 0);
    gs_cluster_release(&c);
    return used + g;
}

Test(openbprop, bound_below_optimum_below_offline_packer_at_every_arrival, .timeout = 600)
{
    struct shapes s;
    memset(&s, 0, sizeof(s));
    struct gs_rng rng;
    gs_rng_init(&rng, 22);
    bool traces = load_traces(&s);
    if (!traces)
        builtin_shapes(&s, &rng);
    cr_log_info("shapes: %d node shapes, %d pod shapes (%s)", s.nnodes, s.nuniq,
                traces ? "the shipped traces" : "built in: no traces");
    struct gs_typical *typ = malloc(sizeof(*typ));
    cr_assert_not_null(typ);
    gs_typical_build(s.pod, s.npods, 95, typ);
    struct gs_engine *eng[2] = {gs_engine_new(gs_policy_find("gpusched"), typ, 2, 1),
                                gs_engine_new(gs_policy_find("fgd"), typ, 2, 1)};
    cr_assert(eng[0] && eng[1]);
    static const int32_t idx[MAX_PODS] = {0, 1, 2, 3, 4, 5, 6, 7};
    long arrivals = 0, tight_share = 0, packer_short = 0;
    for (int it = 0; it < INSTANCES; it++) {
        struct bnode node[2];
        struct gs_request pod[MAX_PODS];
        int nn = 1 + (int)gs_rng_below(&rng, 2), np = 1 + (int)gs_rng_below(&rng, MAX_PODS);
        for (int j = 0; j < nn; j++)
            node[j] = s.node[gs_rng_below(&rng, (uint64_t)s.nnodes)];
        for (int i = 0; i < np; i++)
            pod[i] = gs_rng_below(&rng, 2) ? s.pod[gs_rng_below(&rng, (uint64_t)s.npods)]
                                           : s.uniq[gs_rng_below(&rng, (uint64_t)s.nuniq)];
        int64_t opt[MAX_PODS + 1];
        optimum(node, nn, pod, np, opt);
        struct gs_cluster c;
        build(&c, node, nn);
        int64_t cap = (int64_t)c.ngpus * GS_MILLI;
        double ub_all;
        cr_assert_eq(gs_openb_bound(&c, pod, idx, np, 200, &ub_all), 0);
        int64_t arrived = 0;
        for (int k = 1; k <= np; k++, arrivals++) {
            arrived += gs_request_total_milli(&pod[k - 1]);
            double ub;
            cr_assert_eq(gs_openb_bound(&c, pod, idx, k, 200, &ub), 0);
            double lb = gs_openb_unalloc_bound(&c, pod, idx, k, ub);
            double lb_all = gs_openb_unalloc_bound(&c, pod, idx, k, ub_all);
            double opt_un = (double)(cap - opt[k]);
            cr_assert(lb <= opt_un + 1e-6 && lb_all <= opt_un + 1e-6,
                      "instance %d, arrival %d: lower bound %.1f (with all pods' Lagrangian "
                      "%.1f) above the optimum's unallocated %.1f milli",
                      it, k, lb, lb_all, opt_un);
            double most = ub < (double)arrived ? ub : (double)arrived;
            tight_share += lb > (double)cap - (most < (double)cap ? most : (double)cap) + 1e-6;
            /* the packer's candidates: each feasible, so never above the optimum */
            struct gs_cluster p;
            build(&p, node, nn);
            int64_t best = gs_openb_pack(&p, pod, idx, k, NULL);
            gs_cluster_release(&p);
            for (int w = 0; w < 2; w++) {
                int64_t u = online_repaired(eng[w], node, nn, pod, idx, k);
                best = u > best ? u : best;
            }
            cr_assert(best <= opt[k],
                      "instance %d, arrival %d: the packer places %lld milli, "
                      "more than the optimum %lld",
                      it, k, (long long)best, (long long)opt[k]);
            packer_short += best < opt[k];
        }
        gs_cluster_release(&c);
    }
    cr_log_info("%d instances, %ld arrivals: the share bound decided %ld, the packer short of "
                "the optimum on %ld",
                INSTANCES, arrivals, tight_share, packer_short);
    gs_engine_free(eng[0]);
    gs_engine_free(eng[1]);
    free(typ);
    free(s.pod);
    free(s.uniq);
}

Test(openbprop, share_bound_zero_where_big_pods_left_out_leave_no_room)
{
    /* the instance of issue 22: 30 nodes of 8 GPUs, 30 pods of 8 GPUs and two shares of 600
     * and 450 milli. Arrived is 1050 milli over capacity: the optimum leaves both shares out
     * (or places them and leaves out a whole pod) and idles nothing; the share bound, leaving
     * out the 600 pod, must not keep its room's 400 milli */
    struct gs_request r[32];
    int32_t ix[32];
    for (int i = 0; i < 30; i++)
        r[i] = (struct gs_request){
            .cpu_milli = 8000, .mem_mib = 1, .kind = GS_REQ_GPU, .gpus = 8, .milli = GS_MILLI};
    r[30] = (struct gs_request){
        .cpu_milli = 1, .mem_mib = 1, .kind = GS_REQ_FRACTION, .gpus = 1, .milli = 600};
    r[31] = (struct gs_request){
        .cpu_milli = 1, .mem_mib = 1, .kind = GS_REQ_FRACTION, .gpus = 1, .milli = 450};
    for (int i = 0; i < 32; i++)
        ix[i] = i;
    double lb = gs_openb_bound_share(r, ix, 32, 240000);
    cr_assert_float_eq(lb, 0.0, 1e-9, "share bound %.1f milli, optimum 0", lb);
    /* with one GPU more demand than fits: still no room is forced to idle */
    cr_assert_float_eq(gs_openb_bound_share(r, ix, 31, 240000), 0.0, 1e-9);
}
