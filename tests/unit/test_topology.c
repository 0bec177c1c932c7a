/* Topology: domains from node labels (empty values, missing keys), gangs placed in the
 * tightest domain that holds them, required against preferred, all or nothing, the reason
 * when no domain holds a gang, Kueue's BestFit beside ours, and small work kept off free
 * domains. */
#include "base/error.h"
#include "core/cycle.h"
#include "core/gang.h"
#include "core/topo.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <string.h>

#define BLOCK    "cloud.google.com/gce-topology-block"
#define SUBBLOCK "cloud.google.com/gce-topology-subblock"
#define HOST     "kubernetes.io/hostname"
#define CLIQUE   "nvidia.com/gpu.clique"

struct world {
    struct gs_cluster c;
    struct gs_topo t;
    struct gs_topo_levels lv;
    struct gs_engine *e;
};

/* blocks b0..b(nb-1), each ns subblocks of nn nodes of 8 H100 */
static void world_init(struct world *w, int nb, int ns, int nn, enum gs_topo_algo algo)
{
    memset(w, 0, sizeof(*w));
    gs_cluster_init(&w->c);
    int h100 = gs_catalog_find("H100-80GB");
    cr_assert_geq(h100, 0);
    for (int b = 0; b < nb; b++)
        for (int s = 0; s < ns; s++)
            for (int n = 0; n < nn; n++) {
                char name[64], bv[16], sv[16];
                snprintf(name, sizeof(name), "node-b%d-s%d-%d", b, s, n);
                snprintf(bv, sizeof(bv), "b%d", b);
                snprintf(sv, sizeof(sv), "s%d", s); /* the same value in every block */
                int id = gs_cluster_add_node(&w->c, name, h100, 8, 64000, 512 * 1024, GS_GPU_WHOLE,
                                             0, NULL);
                cr_assert_geq(id, 0);
                cr_assert_eq(gs_node_set_label(&w->c.nodes[id], BLOCK, bv), 0);
                cr_assert_eq(gs_node_set_label(&w->c.nodes[id], SUBBLOCK, sv), 0);
                cr_assert_eq(gs_node_set_label(&w->c.nodes[id], HOST, name), 0);
            }
    cr_assert_eq(gs_topo_levels_add(&w->lv, BLOCK), 0);
    cr_assert_eq(gs_topo_levels_add(&w->lv, SUBBLOCK), 0);
    cr_assert_eq(gs_topo_levels_add(&w->lv, HOST), 0);
    gs_topo_init(&w->t);
    cr_assert_eq(gs_topo_build(&w->t, &w->lv, algo, &w->c), 0);
    w->e = gs_engine_new(gs_policy_find("gpusched"), NULL, gs_cycle_engine_nodes(w->c.nnodes), 1);
    cr_assert(w->e);
}

static void world_release(struct world *w)
{
    gs_engine_free(w->e);
    gs_topo_release(&w->t);
    gs_cluster_release(&w->c);
}

static int free_gpus(const struct gs_cluster *c)
{
    int k = 0;
    for (int i = 0; i < c->ngpus; i++)
        k += c->gpus[i].milli_free == GS_MILLI;
    return k;
}

/* take g whole GPUs on node */
static void occupy(struct world *w, int node, int g)
{
    struct gs_request r = gpu_req(g);
    struct gs_alloc a;
    memset(&a, 0, sizeof(a));
    a.node = node;
    a.kind = GS_REQ_GPU;
    a.milli = GS_MILLI;
    const struct gs_node *n = &w->c.nodes[node];
    for (int i = 0; i < n->ngpus && a.ndev < g; i++)
        if (w->c.gpus[n->gpu0 + i].milli_free == GS_MILLI)
            a.gpu[a.ndev++] = n->gpu0 + i;
    cr_assert_eq(a.ndev, g);
    cr_assert_eq(gs_cluster_bind(&w->c, &r, &a), 0);
}

/* place a gang of n pods of g GPUs each */
static int place(struct world *w, int mode, int level, int n, int g, struct gs_decision *d,
                 struct gs_topo_result *res)
{
    static struct gs_request r[64];
    const struct gs_request *rp[64];
    cr_assert_leq(n, 64);
    for (int i = 0; i < n; i++) {
        r[i] = gpu_req(g);
        rp[i] = &r[i];
    }
    struct gs_topo_ask ask = {.mode = (int8_t)mode, .level = (int8_t)level};
    int failed = -1;
    struct gs_reasons why;
    return gs_topo_gang_place(&w->t, w->e, &w->c, &ask, rp, n, d, &failed, &why, res);
}

Test(topology, levels_refuse_empty_duplicate_and_too_many_keys)
{
    struct gs_topo_levels lv;
    memset(&lv, 0, sizeof(lv));
    cr_assert_eq(gs_topo_levels_add(&lv, ""), GS_EINVAL);
    cr_assert_eq(gs_topo_levels_add(&lv, BLOCK), 0);
    cr_assert_eq(gs_topo_levels_add(&lv, BLOCK), GS_EINVAL);
    for (int i = 1; i < GS_TOPO_LEVELS_MAX; i++) {
        char k[32];
        snprintf(k, sizeof(k), "example.com/level-%d", i);
        cr_assert_eq(gs_topo_levels_add(&lv, k), 0);
    }
    cr_assert_eq(gs_topo_levels_add(&lv, "example.com/one-too-many"), GS_EINVAL);
    cr_assert_eq(lv.n, GS_TOPO_LEVELS_MAX);
    cr_assert_eq(gs_topo_levels_find(&lv, BLOCK), 0);
    cr_assert_eq(gs_topo_levels_find(&lv, CLIQUE), -1);
}

Test(topology, domains_are_named_by_every_level_above)
{
    struct world w;
    world_init(&w, 2, 2, 2, GS_TOPO_GPUSCHED);
    /* 2 blocks, 4 subblocks (s0 of b0 is not s0 of b1), 8 hosts */
    cr_assert_eq(w.t.level_first[1] - w.t.level_first[0], 2);
    cr_assert_eq(w.t.level_first[2] - w.t.level_first[1], 4);
    cr_assert_eq(w.t.level_first[3] - w.t.level_first[2], 8);
    cr_assert_neq(gs_topo_node_domain(&w.t, 0, 1), gs_topo_node_domain(&w.t, 4, 1));
    cr_assert_eq(gs_topo_node_domain(&w.t, 0, 1), gs_topo_node_domain(&w.t, 1, 1));
    cr_assert_str_eq(gs_topo_domain_value(&w.t, &w.c, gs_topo_node_domain(&w.t, 4, 0)), "b1");
    world_release(&w);
}

Test(topology, a_label_with_an_empty_value_is_no_domain)
{
    struct world w;
    world_init(&w, 1, 2, 2, GS_TOPO_GPUSCHED);
    cr_assert_eq(gs_node_set_label(&w.c.nodes[0], BLOCK, ""), 0);
    cr_assert_eq(gs_topo_build(&w.t, &w.lv, GS_TOPO_GPUSCHED, &w.c), 0);
    cr_assert_eq(gs_topo_node_domain(&w.t, 0, 0), -1);
    cr_assert_eq(gs_topo_node_domain(&w.t, 0, 1), -1, "no subblock under no block");
    cr_assert_eq(gs_topo_node_domain(&w.t, 0, 2), -1);
    cr_assert_geq(gs_topo_node_domain(&w.t, 1, 0), 0);
    /* a gang of the whole block's GPUs no longer fits it: node 0 is outside */
    struct gs_decision d[32];
    struct gs_topo_result res;
    cr_assert_eq(place(&w, GS_TOPO_REQUIRED, 0, 32, 1, d, &res), GS_ENOFIT);
    cr_assert_eq(res.room, 24, "room %d", res.room);
    cr_assert_eq(place(&w, GS_TOPO_REQUIRED, 0, 24, 1, d, &res), 0);
    for (int i = 0; i < 24; i++)
        cr_assert_neq(d[i].alloc.node, 0);
    world_release(&w);
}

Test(topology, a_gang_goes_to_the_tightest_domain)
{
    struct world w;
    world_init(&w, 2, 2, 2, GS_TOPO_GPUSCHED);
    occupy(&w, 2, 4); /* node-b0-s1-0: 4 free */
    occupy(&w, 5, 2); /* node-b1-s0-1: 6 free */
    struct gs_decision d[16];
    struct gs_topo_result res;
    /* 4 pods of 1 GPU asking for a block: one node holds them, the one with 4 free */
    cr_assert_eq(place(&w, GS_TOPO_REQUIRED, 0, 4, 1, d, &res), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(d[i].alloc.node, 2, "pod %d on node %d", i, d[i].alloc.node);
    cr_assert_eq(res.level, 2);
    cr_assert_eq(res.nodes, 1);
    /* 12 pods asking for a subblock: 6 + 8 in b1-s0 is the least room that holds them */
    cr_assert_eq(place(&w, GS_TOPO_REQUIRED, 1, 12, 1, d, &res), 0);
    cr_assert_eq(res.level, 1);
    cr_assert(gs_topo_within(&w.t, d, 12, 1));
    cr_assert_eq(gs_topo_node_domain(&w.t, d[0].alloc.node, 1), gs_topo_node_domain(&w.t, 4, 1));
    cr_assert_eq(res.nodes, 2, "as few nodes as possible: %d", res.nodes);
    world_release(&w);
}

Test(topology, pods_stay_on_as_few_nodes_as_possible)
{
    struct world w;
    world_init(&w, 1, 1, 4, GS_TOPO_GPUSCHED);
    occupy(&w, 0, 7);
    occupy(&w, 1, 5);
    occupy(&w, 2, 1);
    /* 10 pods: 8 on the empty node, 2 on the node with 3 free? no: 7 + 3 = the two fullest
     * that hold them; as Kueue: most room first (8), the rest by best fit (3) */
    struct gs_decision d[16];
    struct gs_topo_result res;
    cr_assert_eq(place(&w, GS_TOPO_REQUIRED, 0, 10, 1, d, &res), 0);
    cr_assert_eq(res.nodes, 2, "%d nodes", res.nodes);
    int on[4] = {0};
    for (int i = 0; i < 10; i++)
        on[d[i].alloc.node]++;
    cr_assert_eq(on[3], 8);
    cr_assert_eq(on[1], 2);
    world_release(&w);
}

Test(topology, required_waits_when_no_domain_holds_the_gang_and_holds_nothing)
{
    struct world w;
    world_init(&w, 2, 2, 2, GS_TOPO_GPUSCHED);
    occupy(&w, 0, 1);
    int before = free_gpus(&w.c);
    struct gs_decision d[64];
    struct gs_topo_result res;
    /* 33 GPUs in one block: a block has 32 */
    cr_assert_eq(place(&w, GS_TOPO_REQUIRED, 0, 33, 1, d, &res), GS_ENOFIT);
    cr_assert_eq(free_gpus(&w.c), before, "all or nothing");
    cr_assert_eq(res.room, 32);
    cr_assert(strstr(res.why, BLOCK), "%s", res.why);
    cr_assert(strstr(res.why, "room for 32"), "%s", res.why);
    world_release(&w);
}

Test(topology, preferred_walks_up_then_goes_anywhere)
{
    struct world w;
    world_init(&w, 2, 2, 2, GS_TOPO_GPUSCHED);
    struct gs_decision d[64];
    struct gs_topo_result res;
    /* 24 GPUs preferring a subblock (16): one block holds them */
    cr_assert_eq(place(&w, GS_TOPO_PREFERRED, 1, 24, 1, d, &res), 0);
    cr_assert_eq(res.level, 0);
    cr_assert(gs_topo_within(&w.t, d, 24, 0));
    /* 40 more preferring a block: no block holds them (8 + 32 free): anywhere */
    cr_assert_eq(place(&w, GS_TOPO_PREFERRED, 0, 40, 1, d, &res), 0);
    cr_assert_eq(res.level, -1);
    cr_assert_eq(free_gpus(&w.c), 0);
    world_release(&w);
}

Test(topology, a_level_no_node_has)
{
    struct world w;
    world_init(&w, 1, 1, 2, GS_TOPO_GPUSCHED);
    cr_assert_eq(gs_topo_levels_add(&w.lv, CLIQUE), 0);
    cr_assert_eq(gs_topo_build(&w.t, &w.lv, GS_TOPO_GPUSCHED, &w.c), 0);
    struct gs_decision d[8];
    struct gs_topo_result res;
    cr_assert_eq(place(&w, GS_TOPO_REQUIRED, 3, 2, 1, d, &res), GS_ENOFIT);
    cr_assert(strstr(res.why, "no node has a value for topology level 'nvidia.com/gpu.clique'"),
              "%s", res.why);
    cr_assert_eq(free_gpus(&w.c), 16);
    cr_assert_eq(place(&w, GS_TOPO_PREFERRED, 3, 2, 1, d, &res), 0);
    /* a level the topology lacks (-1) */
    cr_assert_eq(place(&w, GS_TOPO_REQUIRED, -1, 2, 1, d, &res), GS_ENOFIT);
    cr_assert_eq(place(&w, GS_TOPO_PREFERRED, -1, 2, 1, d, &res), 0);
    world_release(&w);
}

Test(topology, no_ask_places_as_gang_place_does)
{
    struct world a, b;
    world_init(&a, 2, 2, 2, GS_TOPO_GPUSCHED);
    world_init(&b, 2, 2, 2, GS_TOPO_GPUSCHED);
    struct gs_request r[12];
    const struct gs_request *rp[12];
    for (int i = 0; i < 12; i++) {
        r[i] = gpu_req(1 + i % 2);
        rp[i] = &r[i];
    }
    struct gs_decision da[12], db[12];
    int f;
    cr_assert_eq(gs_gang_place(a.e, &a.c, rp, 12, da, &f, NULL), 0);
    struct gs_topo_ask ask = {GS_TOPO_ANY, 0};
    cr_assert_eq(gs_topo_gang_place(&b.t, b.e, &b.c, &ask, rp, 12, db, &f, NULL, NULL), 0);
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(da[i].alloc.node, db[i].alloc.node);
        cr_assert_eq(memcmp(da[i].alloc.gpu, db[i].alloc.gpu, sizeof(da[i].alloc.gpu)), 0);
    }
    world_release(&a);
    world_release(&b);
}

Test(topology, kueue_best_fit_takes_the_block_with_least_room_ours_the_tightest)
{
    /* b0: s0 has 8 + 8 free, s1 is full: 16 free. b1: s0 and s1 have 10 each: 20 free.
     * A gang of 16 asking for a block: Kueue's BestFit takes b0 (the least room that holds
     * it), and inside it s0; we take the tightest domain, b0's s0, the same. */
    struct world k, g;
    world_init(&k, 2, 2, 2, GS_TOPO_KUEUE);
    world_init(&g, 2, 2, 2, GS_TOPO_GPUSCHED);
    struct world *ws[2] = {&k, &g};
    for (int i = 0; i < 2; i++) {
        occupy(ws[i], 2, 8);
        occupy(ws[i], 3, 8);
        occupy(ws[i], 4, 3);
        occupy(ws[i], 5, 3);
        occupy(ws[i], 6, 3);
        occupy(ws[i], 7, 3);
    }
    struct gs_decision d[16];
    struct gs_topo_result res;
    cr_assert_eq(place(&k, GS_TOPO_REQUIRED, 0, 16, 1, d, &res), 0);
    cr_assert_eq(gs_topo_node_domain(&k.t, d[0].alloc.node, 0), gs_topo_node_domain(&k.t, 0, 0));
    cr_assert_eq(place(&g, GS_TOPO_REQUIRED, 0, 16, 1, d, &res), 0);
    cr_assert_eq(gs_topo_node_domain(&g.t, d[0].alloc.node, 0), gs_topo_node_domain(&g.t, 0, 0));
    cr_assert_eq(res.level, 1, "inside one subblock: level %d", res.level);
    world_release(&k);
    world_release(&g);

    /* where they differ: b0 has 12 free over two subblocks (6 + 6), b1 has 14 with 10 in one
     * subblock. 10 pods asking for a block: Kueue takes b0 (12 < 14) and spans its two
     * subblocks; we take b1's subblock that holds all 10. */
    world_init(&k, 2, 2, 2, GS_TOPO_KUEUE);
    world_init(&g, 2, 2, 2, GS_TOPO_GPUSCHED);
    for (int i = 0; i < 2; i++) {
        occupy(ws[i], 0, 5);
        occupy(ws[i], 1, 5);
        occupy(ws[i], 2, 5);
        occupy(ws[i], 3, 5); /* b0: 3+3 | 3+3 */
        occupy(ws[i], 4, 3);
        occupy(ws[i], 5, 3); /* b1 s0: 5+5 */
        occupy(ws[i], 6, 4);
        occupy(ws[i], 7, 8); /* b1 s1: 4 */
    }
    cr_assert_eq(place(&k, GS_TOPO_REQUIRED, 0, 10, 1, d, &res), 0);
    cr_assert_eq(gs_topo_node_domain(&k.t, d[0].alloc.node, 0), gs_topo_node_domain(&k.t, 0, 0));
    cr_assert_not(gs_topo_within(&k.t, d, 10, 1), "Kueue's BestFit spans b0's subblocks");
    cr_assert_eq(place(&g, GS_TOPO_REQUIRED, 0, 10, 1, d, &res), 0);
    cr_assert(gs_topo_within(&g.t, d, 10, 1), "ours stays in one subblock");
    cr_assert_eq(gs_topo_node_domain(&g.t, d[0].alloc.node, 1), gs_topo_node_domain(&g.t, 4, 1));
    world_release(&k);
    world_release(&g);
}

Test(topology, small_work_goes_to_a_domain_in_use)
{
    struct world w;
    world_init(&w, 2, 2, 2, GS_TOPO_GPUSCHED);
    w.t.nshapes = 1;
    w.t.shapes[0] = (struct gs_topo_shape){.gpus = 16, .level = 1, .freq = 1};
    occupy(&w, 6, 1); /* b1 s1 in use */
    struct gs_request r = gpu_req(1);
    int32_t d = gs_topo_small_domain(&w.t, &w.c, &r);
    int n = 0;
    const int32_t *nodes = gs_topo_domain_nodes(&w.t, d, &n);
    cr_assert_eq(n, 2, "the subblock's two nodes: %d", n);
    cr_assert_eq(d, gs_topo_node_domain(&w.t, 6, 1));
    cr_assert(nodes[0] == 6 || nodes[1] == 6);
    /* off without shapes, and for CPU-only pods */
    struct gs_request cpu = {.cpu_milli = 100, .kind = GS_REQ_NONE};
    cr_assert_eq(gs_topo_small_domain(&w.t, &w.c, &cpu), -1);
    w.t.nshapes = 0;
    cr_assert_eq(gs_topo_small_domain(&w.t, &w.c, &r), -1);
    world_release(&w);
}

Test(topology, small_work_keeps_off_the_block_a_waiting_gang_needs)
{
    /* b0 of 4 nodes (node 5 moved there from b1), b1 of 2: only b0 holds 4 x 8 GPUs, and a
     * GPU in use on node 0 keeps the gang waiting for it */
    struct world w;
    world_init(&w, 2, 1, 3, GS_TOPO_GPUSCHED);
    cr_assert_eq(gs_node_set_label(&w.c.nodes[5], BLOCK, "b0"), 0);
    cr_assert_eq(gs_topo_build(&w.t, &w.lv, GS_TOPO_GPUSCHED, &w.c), 0);
    occupy(&w, 0, 1);
    w.t.nshapes = 1;
    w.t.shapes[0] = (struct gs_topo_shape){.gpus = 32, .level = 0, .freq = 1};
    struct gs_request r = gpu_req(1);
    int32_t in_use = gs_topo_node_domain(&w.t, 0, 1), other = gs_topo_node_domain(&w.t, 3, 1);
    /* as a share of arrivals: no block holds 32 free GPUs, so none is broken; the one in use */
    int32_t d = gs_topo_small_domain(&w.t, &w.c, &r);
    cr_assert_eq(d, in_use, "an arrival shape: the block in use (%d), got %d", in_use, d);
    /* a waiting gang: b0 is the block it waits for */
    w.t.shapes[0].waiting = true;
    d = gs_topo_small_domain(&w.t, &w.c, &r);
    cr_assert_eq(d, other, "a waiting gang's block is kept: b1 (%d), got %d", other, d);
    /* b1 full: b0 is the only room left */
    occupy(&w, 3, 8);
    occupy(&w, 4, 8);
    d = gs_topo_small_domain(&w.t, &w.c, &r);
    cr_assert_eq(d, in_use, "no other room: b0 (%d), got %d", in_use, d);
    world_release(&w);
}

/* n pending members of gang g, 1 GPU each */
static void gang_pods(struct gs_cyc_pod *p, int from, int n, int g)
{
    for (int i = from; i < from + n; i++) {
        memset(&p[i], 0, sizeof(p[i]));
        p[i].req = gpu_req(1);
        p[i].queue = GS_QUEUE_NONE;
        p[i].gang = g;
        p[i].seq = (uint64_t)i;
        p[i].nominated = -1;
        p[i].due = true;
    }
}

Test(topology, the_cycle_binds_a_gang_in_its_domain_or_says_which_level_it_waits_for)
{
    struct world w;
    world_init(&w, 2, 2, 2, GS_TOPO_GPUSCHED);
    /* gang 0: 24 pods required in one block; gang 1: 40 pods required in one block (never
     * fits, a block has 32); a pod outside gangs */
    struct gs_cyc_pod pods[65];
    gang_pods(pods, 0, 24, 0);
    gang_pods(pods, 24, 40, 1);
    gang_pods(pods, 64, 1, -1);
    pods[64].seq = 0; /* after gang 0 (pod 0 comes first), before gang 1 */
    struct gs_cyc_gang gangs[2] = {{.min_member = 24, .topo = {GS_TOPO_REQUIRED, 0}},
                                   {.min_member = 40, .topo = {GS_TOPO_REQUIRED, 0}}};
    struct gs_cycle_in in = {.c = &w.c,
                             .e = w.e,
                             .pods = pods,
                             .npods = 65,
                             .gangs = gangs,
                             .ngangs = 2,
                             .now_s = 1,
                             .topo = &w.t};
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    cr_assert_eq(gs_cycle_run(&in, &out), 0);
    struct gs_decision d[24];
    int nb = 0, nw = 0;
    for (int k = 0; k < out.n; k++) {
        const struct gs_cyc_decision *x = &out.d[k];
        if (x->pod < 24) {
            cr_assert_eq(x->kind, GS_CYC_BIND);
            d[nb++].alloc = x->alloc;
        } else if (x->pod < 64) {
            cr_assert_eq(x->kind, GS_CYC_WAIT);
            cr_assert_eq(x->why, GS_WHY_TOPOLOGY);
            cr_assert_eq(x->topo_room, 31, "room %d", x->topo_room);
            nw++;
        } else {
            cr_assert_eq(x->kind, GS_CYC_BIND);
        }
    }
    cr_assert_eq(nb, 24);
    cr_assert_eq(nw, 40);
    cr_assert(gs_topo_within(&w.t, d, 24, 0));
    cr_assert_str_eq(gs_cyc_why_name(GS_WHY_TOPOLOGY), "topology");
    gs_cycle_out_release(&out);
    world_release(&w);
}

Test(topology, a_clique_label_on_a_node_without_gpus_holds_nothing_back)
{
    struct world w;
    world_init(&w, 1, 1, 2, GS_TOPO_GPUSCHED);
    int cpu = gs_cluster_add_node(&w.c, "cpu-0", -1, 0, 64000, 256 * 1024, GS_GPU_WHOLE, 0, NULL);
    cr_assert_geq(cpu, 0);
    cr_assert_eq(gs_node_set_label(&w.c.nodes[cpu], CLIQUE, "clique-a"), 0);
    struct gs_topo_levels lv;
    memset(&lv, 0, sizeof(lv));
    cr_assert_eq(gs_topo_levels_add(&lv, CLIQUE), 0);
    cr_assert_eq(gs_topo_build(&w.t, &lv, GS_TOPO_GPUSCHED, &w.c), 0);
    gs_engine_free(w.e);
    w.e = gs_engine_new(gs_policy_find("gpusched"), NULL, gs_cycle_engine_nodes(w.c.nnodes), 1);
    struct gs_decision d[4];
    struct gs_topo_result res;
    cr_assert_eq(place(&w, GS_TOPO_REQUIRED, 0, 2, 1, d, &res), GS_ENOFIT);
    cr_assert_eq(res.room, 0);
    cr_assert(strstr(res.why, "room for 0"), "%s", res.why);
    cr_assert_eq(free_gpus(&w.c), 16, "nothing held");
    /* the same gang preferring the clique, and any pod, still go to the GPU nodes */
    cr_assert_eq(place(&w, GS_TOPO_PREFERRED, 0, 2, 1, d, &res), 0);
    cr_assert_neq(d[0].alloc.node, cpu);
    world_release(&w);
}
