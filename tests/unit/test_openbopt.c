/* The openb offline bound (sim/openbopt) on hand-made instances whose optimum is known: the
 * packer reaches it where arrival order does not, the repair finds the move, each bound is
 * valid (never below the optimum's placed milli, never above its unallocated share) and tight
 * where the argument says it is; and the variant generator (sim/openbvar) hits its shares,
 * is deterministic and refuses bad terms. */
#include "base/error.h"
#include "sim/openbopt.h"
#include "sim/openbvar.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static void node(struct gs_cluster *c, const char *model, int gpus, int64_t cpu, int64_t mem)
{
    int rc = gs_cluster_add_node(c, model ? "n" : "cpu", model ? gs_catalog_find(model) : -1, gpus,
                                 cpu, mem, GS_GPU_FRACTION, 0, NULL);
    cr_assert_geq(rc, 0);
}

static struct gs_request share(int milli, int64_t cpu)
{
    return (struct gs_request){
        .cpu_milli = cpu, .mem_mib = 1, .kind = GS_REQ_FRACTION, .gpus = 1, .milli = milli};
}

static struct gs_request whole(int gpus, int64_t cpu)
{
    return (struct gs_request){
        .cpu_milli = cpu, .mem_mib = 1, .kind = GS_REQ_GPU, .gpus = gpus, .milli = 1000};
}

static const int32_t idx[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};

Test(openbopt, packer_packs_shares_that_arrival_order_strands)
{
    /* two GPUs; 400, 400, 600, 600: first fit in arrival order puts 400+400 on one GPU and
     * loses a 600; decreasing size packs all four (optimum 2000) */
    struct gs_cluster c;
    gs_cluster_init(&c);
    node(&c, "T4", 2, 8000, 1000);
    struct gs_request r[4] = {share(400, 1), share(400, 1), share(600, 1), share(600, 1)};
    uint8_t placed[4];
    cr_assert_eq(gs_openb_pack(&c, r, idx, 4, placed), 2000);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(placed[i], 1, "pod %d left out", i);
    double ub;
    cr_assert_eq(gs_openb_bound(&c, r, idx, 4, 50, &ub), 0);
    cr_assert(ub >= 2000 - 1e-6 && ub <= 2000 + 1e-6, "bound %f, optimum 2000", ub);
    gs_cluster_release(&c);
}

Test(openbopt, lagrangian_bound_sees_cpu)
{
    /* a 2-GPU node with 16 cores; two 1-GPU pods of 12 cores: only one fits (optimum 1000).
     * The LP lets 16/12 of a pod in: the bound is at most 1333.4 and never below 1000 */
    struct gs_cluster c;
    gs_cluster_init(&c);
    node(&c, "P100", 2, 16000, 1000);
    struct gs_request r[2] = {whole(1, 12000), whole(1, 12000)};
    double ub;
    cr_assert_eq(gs_openb_bound(&c, r, idx, 2, 300, &ub), 0);
    cr_assert(ub >= 1000 - 1e-6 && ub <= 1333.4, "bound %f, optimum 1000, LP 1333.3", ub);
    cr_assert_eq(gs_openb_pack(&c, r, idx, 2, NULL), 1000);
    gs_cluster_release(&c);
}

Test(openbopt, bound_drops_pods_no_node_hosts)
{
    /* an 8-GPU pod on 4-GPU nodes, a pod naming a model the cluster lacks, a pod with more
     * CPU than any node: nothing can be placed */
    struct gs_cluster c;
    gs_cluster_init(&c);
    node(&c, "T4", 4, 96000, 1000);
    struct gs_request r[3] = {whole(8, 1), whole(1, 1), whole(1, 200000)};
    r[1].model_mask = 1u << gs_catalog_find("V100M16");
    double ub;
    cr_assert_eq(gs_openb_bound(&c, r, idx, 3, 0, &ub), 0);
    cr_assert(ub <= 1e-6, "bound %f, optimum 0", ub);
    cr_assert_eq(gs_openb_pack(&c, r, idx, 3, NULL), 0);
    gs_cluster_release(&c);
}

Test(openbopt, share_bound_counts_rooms_of_big_shares)
{
    /* 4 GPUs, pods 810 x4 and 1000 x1 (arrived 4240 > 4000): each 810 leaves a room of 190
     * no other pod fits. The optimum leaves one 810 out and gives its GPU to the whole pod:
     * 3430 placed, 570 unallocated; the bound (rooms 760 against shares left out) is exact */
    struct gs_request r[5] = {share(810, 1), share(810, 1), share(810, 1), share(810, 1),
                              whole(1, 1)};
    double lb = gs_openb_bound_share(r, idx, 5, 4000);
    cr_assert_float_eq(lb, 570.0, 1e-6, "share bound %f, optimum 570", lb);
    /* a 190 pod fills one room: the bound drops by at least 190's worth */
    struct gs_request r2[6] = {share(810, 1), share(810, 1), share(810, 1),
                               share(810, 1), whole(1, 1),   share(190, 1)};
    double lb2 = gs_openb_bound_share(r2, idx, 6, 4000);
    cr_assert(lb2 < lb && lb2 >= 0, "share bound with a filler %f, without %f", lb2, lb);
    /* shares of at most 500 pair up: no bound beyond the volume */
    struct gs_request r3[2] = {share(500, 1), share(500, 1)};
    cr_assert_float_eq(gs_openb_bound_share(r3, idx, 2, 1000), 0.0, 1e-9);
}

Test(openbopt, repair_moves_a_pod_to_make_room)
{
    /* two 1-GPU nodes; a 300 share sits alone on node 0, node 1 holds a 500; a 1-GPU pod
     * arrives: it fits once the 300 moves next to the 500 */
    struct gs_cluster c;
    gs_cluster_init(&c);
    node(&c, "T4", 1, 8000, 1000);
    node(&c, "T4", 1, 8000, 1000);
    struct gs_request r[3] = {share(300, 1), share(500, 1), whole(1, 1)};
    struct gs_alloc a[3];
    memset(a, 0, sizeof(a));
    uint8_t placed[3] = {1, 1, 0};
    a[0] = (struct gs_alloc){.node = 0, .kind = GS_REQ_FRACTION, .ndev = 1, .milli = 300};
    a[0].gpu[0] = c.nodes[0].gpu0;
    a[1] = (struct gs_alloc){.node = 1, .kind = GS_REQ_FRACTION, .ndev = 1, .milli = 500};
    a[1].gpu[0] = c.nodes[1].gpu0;
    cr_assert_eq(gs_cluster_bind(&c, &r[0], &a[0]), 0);
    cr_assert_eq(gs_cluster_bind(&c, &r[1], &a[1]), 0);
    cr_assert_eq(gs_openb_repair(&c, r, idx, 3, a, placed, 8), 1000);
    cr_assert(placed[0] && placed[1] && placed[2]);
    cr_assert_eq(a[2].node, 0);
    cr_assert_eq(a[0].node, 1);
    gs_cluster_release(&c);
}

static struct gs_openb_pod *pods_fixture(int *n)
{
    /* 100 pods: 20 CPU-only, 50 one-GPU, 20 sharing (500), 10 two-GPU */
    struct gs_openb_pod *p = calloc(100, sizeof(*p));
    for (int i = 0; i < 100; i++) {
        snprintf(p[i].name, sizeof(p[i].name), "pod-%d", i);
        p[i].req = i < 20   ? (struct gs_request){.cpu_milli = 1000, .mem_mib = 1}
                   : i < 70 ? whole(1, 1000)
                   : i < 90 ? share(500, 1000)
                            : whole(2, 1000);
        p[i].creation = p[i].deletion = p[i].scheduled = -1;
    }
    *n = 100;
    return p;
}

Test(openbvar, shares_reached_and_deterministic)
{
    int n;
    struct gs_openb_pod *p = pods_fixture(&n);
    struct gs_openb_node nd = {.name = "n", .cpu_milli = 96000, .mem_mib = 1 << 20, .gpus = 8};
    nd.model = gs_catalog_find("V100M32");
    const char *specs[] = {"gpushare=50", "multigpu=40", "cpu=50", "gpuspec=25", "gpushare=0"};
    for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
        struct gs_error err;
        gs_error_init(&err);
        struct gs_openbvar v[GS_OPENBVAR_MAX];
        int nv = gs_openbvar_parse(specs[k], v, &err);
        cr_assert_eq(nv, 1, "%s: %s", specs[k], err.msg);
        struct gs_openb_pod *a, *b;
        int na = gs_openbvar_apply(v, nv, &nd, 1, p, n, 7, &a, &err);
        int nb = gs_openbvar_apply(v, nv, &nd, 1, p, n, 7, &b, &err);
        cr_assert_gt(na, 0, "%s: %s", specs[k], err.msg);
        cr_assert_eq(na, nb);
        cr_assert_eq(memcmp(a, b, sizeof(*a) * (size_t)na), 0, "%s: not deterministic", specs[k]);
        struct gs_openbvar_shares s;
        gs_openbvar_shares(a, na, &s);
        double got = v[0].kind == GS_OPENBVAR_GPUSHARE   ? s.gpushare
                     : v[0].kind == GS_OPENBVAR_MULTIGPU ? s.multigpu
                     : v[0].kind == GS_OPENBVAR_CPU      ? s.cpu
                                                         : s.gpuspec;
        cr_assert(got >= v[0].pct - 2.5 && got <= v[0].pct + 2.5, "%s: share %.2f", specs[k], got);
        free(a);
        free(b);
    }
    free(p);
}

Test(openbvar, bad_terms_refused)
{
    const char *bad[] = {"",        "gpushare",    "gpushare=",   "gpushare=101", "cpu=100",
                         "magic=5", "gpushare=5,", "gpushare=-1", "multigpu=x"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        struct gs_error err;
        gs_error_init(&err);
        struct gs_openbvar v[GS_OPENBVAR_MAX];
        cr_assert_eq(gs_openbvar_parse(bad[k], v, &err), GS_EINVAL, "'%s' accepted", bad[k]);
        cr_assert_neq(err.msg[0], '\0');
    }
    /* a share the trace cannot reach: no sharing pod to draw from */
    struct gs_openb_pod p = {.name = "p", .req = {.kind = GS_REQ_GPU, .gpus = 1, .milli = 1000}};
    struct gs_openbvar v = {GS_OPENBVAR_GPUSHARE, 50};
    struct gs_openb_pod *out = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_openbvar_apply(&v, 1, NULL, 0, &p, 1, 1, &out, &err), GS_EINVAL);
    cr_assert(strstr(err.msg, "gpushare=50"), "%s", err.msg);
    cr_assert_null(out);
}

/* Constrained pods' models among nodes: how many name T4 alone, G2 alone, and in all. */
static void count_models(const struct gs_openb_pod *p, int n, int *t4, int *g2, int *named)
{
    uint32_t mt4 = 1u << gs_catalog_find("T4"), mg2 = 1u << gs_catalog_find("G2");
    *t4 = *g2 = *named = 0;
    for (int i = 0; i < n; i++) {
        uint32_t m = p[i].req.model_mask;
        *named += m != 0;
        *t4 += m == mt4;
        *g2 += m == mg2;
    }
}

Test(openbvar, gpuspec_kinds_name_models_by_fleet_by_published_mix_or_by_seeded_popularity)
{
    /* a G2 node (8 GPUs) and a T4 node (2 GPUs), both hosting every pod of the fixture: by
     * fleet, T4 gets a fifth of the named pods; by FGD's published mix, T4 alone is named
     * by most (497 of the 684 per mille of sets that name T4 or G2) */
    int n;
    struct gs_openb_pod *p = pods_fixture(&n);
    struct gs_openb_node nd[2] = {
        {.name = "g2", .cpu_milli = 96000, .mem_mib = 1 << 20, .gpus = 8},
        {.name = "t4", .cpu_milli = 96000, .mem_mib = 1 << 20, .gpus = 2},
    };
    nd[0].model = gs_catalog_find("G2");
    nd[1].model = gs_catalog_find("T4");
    struct gs_error err;
    gs_error_init(&err);
    struct gs_openbvar v[GS_OPENBVAR_MAX];
    struct gs_openb_pod *a;
    int t4, g2, named;
    cr_assert_eq(gs_openbvar_parse("gpuspec=50", v, &err), 1, "%s", err.msg);
    int na = gs_openbvar_apply(v, 1, nd, 2, p, n, 7, &a, &err);
    cr_assert_gt(na, 0, "%s", err.msg);
    count_models(a, na, &t4, &g2, &named);
    cr_assert_eq(named, 40);
    cr_assert(t4 < named / 2 && g2 > named / 2, "by fleet: T4 %d, G2 %d of %d", t4, g2, named);
    free(a);
    cr_assert_eq(gs_openbvar_parse("gpuspecmix=50", v, &err), 1, "%s", err.msg);
    na = gs_openbvar_apply(v, 1, nd, 2, p, n, 7, &a, &err);
    cr_assert_gt(na, 0, "%s", err.msg);
    count_models(a, na, &t4, &g2, &named);
    cr_assert_eq(named, 40);
    cr_assert(t4 > named / 2 && 2 * g2 < t4, "published mix: T4 %d, G2 %d of %d", t4, g2, named);
    free(a);
    /* seeded popularity: each seed makes another model the popular one; a seed is
     * deterministic */
    cr_assert_eq(gs_openbvar_parse("gpuspecskew=50", v, &err), 1, "%s", err.msg);
    int t4_most = 0, g2_most = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        struct gs_openb_pod *b;
        na = gs_openbvar_apply(v, 1, nd, 2, p, n, seed, &a, &err);
        cr_assert_eq(gs_openbvar_apply(v, 1, nd, 2, p, n, seed, &b, &err), na);
        cr_assert_eq(memcmp(a, b, sizeof(*a) * (size_t)na), 0, "seed %llu: not deterministic",
                     (unsigned long long)seed);
        count_models(a, na, &t4, &g2, &named);
        cr_assert_eq(named, 40);
        t4_most += t4 > g2;
        g2_most += g2 > t4;
        free(a);
        free(b);
    }
    cr_assert(t4_most > 0 && g2_most > 0, "popular model: T4 on %d seeds, G2 on %d", t4_most,
              g2_most);
    free(p);
}
