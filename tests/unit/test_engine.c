/* Engine: filters and their reasons, device choice per GPU mode, decisions applied without
 * over-allocation, and the fragmentation measure on hand-checked cases. */
#include "base/error.h"
#include "base/rng.h"
#include "core/engine.h"
#include "core/frag.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <string.h>

static int model(const char *n)
{
    return gs_catalog_find(n);
}

static struct gs_mig_layout layout(int m, const char *p, int n)
{
    struct gs_mig_layout l;
    memset(&l, 0, sizeof(l));
    l.count[gs_catalog_find_profile(m, p)] = (uint8_t)n;
    return l;
}

Test(engine, policy_table_has_the_paper_baselines_and_ours)
{
    const char *names[] = {"gpusched",   "fgd",     "bestfit", "packing",
                           "clustering", "dotprod", "random"};
    cr_assert_eq(gs_policy_count(), 7);
    for (size_t i = 0; i < 7; i++)
        cr_assert_not_null(gs_policy_find(names[i]), "%s", names[i]);
    cr_assert_str_eq(gs_policy_get(0)->name, "gpusched", "gpusched is the default row");
    cr_assert_null(gs_policy_find("magic"));
}

Test(engine, unschedulable_reasons_count_nodes_per_reason)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    int a100 = model("A100-80GB"), l40s = model("L40S-48GB");
    struct gs_mig_layout l = layout(a100, "1g.10gb", 7);
    for (int i = 0; i < 3; i++) {
        int id = gs_cluster_add_node(&c, "mig", a100, 1, 8000, 8192, GS_GPU_MIG, 0, &l);
        gs_node_set_label(&c.nodes[id], "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    }
    for (int i = 0; i < 2; i++) {
        int id = gs_cluster_add_node(&c, "l40s", l40s, 4, 8000, 8192, GS_GPU_WHOLE, 0, NULL);
        gs_node_set_label(&c.nodes[id], "nvidia.com/gpu.product", "L40S");
    }
    struct gs_request r = mig_req("3g.40gb");
    r.nsel = 1;
    snprintf(r.sel[0].key, sizeof(r.sel[0].key), "nvidia.com/gpu.product");
    snprintf(r.sel[0].val, sizeof(r.sel[0].val), "A100-SXM4-80GB");
    struct gs_engine *e = gs_engine_new(gs_policy_find("gpusched"), NULL, c.nnodes, 1);
    struct gs_decision d;
    struct gs_reasons why;
    memset(&why, 0, sizeof(why));
    cr_assert_eq(gs_engine_place(e, &c, &r, 0, &d, &why), GS_ENOFIT);
    char s[256];
    gs_reasons_str(&why, &r, s, sizeof(s));
    cr_assert_str_eq(s, "0/5 nodes fit: 3 no free nvidia.com/mig-3g.40gb slot, 2 node selector "
                        "mismatch");
    gs_engine_free(e);
    gs_cluster_release(&c);
}

Test(engine, mig_slots_are_exact_and_never_double_allocated)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    int a100 = model("A100-80GB");
    struct gs_mig_layout l = layout(a100, "3g.40gb", 2);
    gs_cluster_add_node(&c, "n0", a100, 2, 64000, 65536, GS_GPU_MIG, 0, &l);
    struct gs_engine *e = gs_engine_new(NULL, NULL, c.nnodes, 1);
    struct gs_request r = mig_req("3g.40gb");
    struct gs_decision d;
    bool seen[2][2] = {{false}};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(gs_engine_place(e, &c, &r, i, &d, NULL), 0, "slot %d", i);
        cr_assert_eq(d.alloc.ndev, 1);
        int g = d.alloc.gpu[0], s = d.alloc.slot[0];
        cr_assert(!seen[g][s], "slot %d/%d given twice", g, s);
        seen[g][s] = true;
        cr_assert_eq(gs_cluster_bind(&c, &r, &d.alloc), 0);
        cr_assert_eq(gs_cluster_bind(&c, &r, &d.alloc), GS_EINVAL, "second bind must fail");
    }
    cr_assert_eq(gs_engine_place(e, &c, &r, 9, &d, NULL), GS_ENOFIT);
    /* the first two slots went to the same GPU: MIG slots pack */
    cr_assert(seen[0][0] && seen[0][1] && seen[1][0] && seen[1][1]);
    gs_engine_free(e);
    gs_cluster_release(&c);
}

Test(engine, replicas_spread_and_respect_mps_memory)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    int l40s = model("L40S-48GB");
    gs_cluster_add_node(&c, "ts", l40s, 2, 64000, 65536, GS_GPU_TIMESLICE, 4, NULL);
    gs_cluster_add_node(&c, "mps", l40s, 1, 64000, 65536, GS_GPU_MPS, 2, NULL);
    struct gs_engine *e = gs_engine_new(gs_policy_find("bestfit"), NULL, c.nnodes, 1);
    struct gs_request r = gpu_req(1);
    r.gpu_mem_mib = 30 * 1024; /* more than 45 GiB / 2: never on the MPS node */
    struct gs_decision d;
    int per_gpu[3] = {0};
    for (int i = 0; i < 8; i++) {
        int rc = gs_engine_place(e, &c, &r, i, &d, NULL);
        if (rc)
            break;
        cr_assert_neq(d.alloc.node, 1, "30 GiB does not fit an MPS replica of an L40S");
        per_gpu[d.alloc.gpu[0]]++;
        cr_assert_eq(gs_cluster_bind(&c, &r, &d.alloc), 0);
    }
    /* time-slicing without isolation: a declared 30 GiB pod leaves room for no second one */
    cr_assert_eq(per_gpu[0], 1);
    cr_assert_eq(per_gpu[1], 1);
    struct gs_request small = gpu_req(1);
    small.gpu_mem_mib = 8 * 1024;
    cr_assert_eq(gs_engine_place(e, &c, &small, 10, &d, NULL), 0);
    gs_engine_free(e);
    gs_cluster_release(&c);
}

Test(engine, random_placements_never_over_allocate)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    int a100 = model("A100-80GB"), t4 = model("T4");
    struct gs_mig_layout l = layout(a100, "1g.10gb", 7);
    for (int i = 0; i < 6; i++) {
        gs_cluster_add_node(&c, "f", t4, 4, 32000, 65536, GS_GPU_FRACTION, 0, NULL);
        gs_cluster_add_node(&c, "m", a100, 2, 32000, 65536, GS_GPU_MIG, 0, &l);
        gs_cluster_add_node(&c, "t", t4, 2, 32000, 65536, GS_GPU_TIMESLICE, 3, NULL);
    }
    struct gs_rng rng;
    gs_rng_init(&rng, 7);
    for (int pol = 0; pol < gs_policy_count(); pol++) {
        struct gs_cluster w;
        gs_cluster_init(&w);
        gs_cluster_copy(&w, &c);
        struct gs_engine *e = gs_engine_new(gs_policy_get(pol), NULL, w.nnodes, 3);
        for (int i = 0; i < 400; i++) {
            struct gs_request r = random_req(&rng);
            struct gs_decision d;
            if (gs_engine_place(e, &w, &r, i, &d, NULL) == 0)
                cr_assert_eq(gs_cluster_bind(&w, &r, &d.alloc), 0, "%s: engine chose busy devices",
                             gs_policy_get(pol)->name);
        }
        for (int g = 0; g < w.ngpus; g++) {
            const struct gs_gpu *gpu = &w.gpus[g];
            cr_assert(gpu->milli_free >= 0 && gpu->milli_free <= GS_MILLI);
            cr_assert(gpu->replicas_used <= gpu->replicas || gpu->mode != GS_GPU_TIMESLICE);
        }
        for (int n = 0; n < w.nnodes; n++)
            cr_assert(w.nodes[n].cpu_free >= 0 && w.nodes[n].mem_free >= 0);
        gs_engine_free(e);
        gs_cluster_release(&w);
    }
    gs_cluster_release(&c);
}

Test(engine, unbind_restores_the_node_exactly)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    gs_cluster_add_node(&c, "n", model("T4"), 4, 32000, 65536, GS_GPU_FRACTION, 0, NULL);
    struct gs_cluster before;
    gs_cluster_init(&before);
    gs_cluster_copy(&before, &c);
    struct gs_engine *e = gs_engine_new(gs_policy_find("fgd"), NULL, 1, 1);
    struct gs_request r = gpu_req(3);
    struct gs_decision d;
    cr_assert_eq(gs_engine_place(e, &c, &r, 0, &d, NULL), 0);
    cr_assert_eq(gs_cluster_bind(&c, &r, &d.alloc), 0);
    cr_assert_eq(gs_cluster_unbind(&c, &r, &d.alloc), 0);
    cr_assert_eq(memcmp(c.gpus, before.gpus, sizeof(struct gs_gpu) * 4), 0);
    cr_assert_eq(c.nodes[0].cpu_free, before.nodes[0].cpu_free);
    cr_assert_eq(gs_cluster_unbind(&c, &r, &d.alloc), GS_EINVAL, "double release must fail");
    gs_engine_free(e);
    gs_cluster_release(&c);
    gs_cluster_release(&before);
}

Test(frag, measure_matches_hand_computation)
{
    /* two shapes: 50% a 1-GPU whole pod with 4 CPUs, 50% a 500-milli pod with 2 CPUs */
    struct gs_request reqs[4];
    memset(reqs, 0, sizeof(reqs));
    for (int i = 0; i < 2; i++) {
        reqs[i].kind = GS_REQ_GPU;
        reqs[i].gpus = 1;
        reqs[i].milli = 1000;
        reqs[i].cpu_milli = 4000;
        reqs[2 + i].kind = GS_REQ_FRACTION;
        reqs[2 + i].gpus = 1;
        reqs[2 + i].milli = 500;
        reqs[2 + i].cpu_milli = 2000;
    }
    struct gs_typical t;
    cr_assert_eq(gs_typical_build(reqs, 4, 95, &t), 2);
    int16_t fr[2] = {1000, 300};
    /* whole shape: fits (one free GPU): fragment = 300; share shape: fits: fragment = 300 */
    cr_assert_float_eq(gs_frag_state(&t, GS_FRAG_FGD, 0, 8000, fr, 2), 300, 1e-9);
    /* not enough CPU for either: every idle milli is fragment */
    cr_assert_float_eq(gs_frag_state(&t, GS_FRAG_FGD, 0, 1000, fr, 2), 1300, 1e-9);
    int16_t fr2[2] = {600, 300};
    /* whole shape cannot fit: 900; share shape fits on 600: fragment 300 -> 0.5*900+0.5*300 */
    cr_assert_float_eq(gs_frag_state(&t, GS_FRAG_FGD, 0, 8000, fr2, 2), 600, 1e-9);
    struct gs_frag_memo *m = gs_frag_memo_new(GS_FRAG_FGD);
    int16_t swapped[2] = {300, 600};
    cr_assert_float_eq(gs_frag_memo_get(m, &t, 0, 8000, swapped, 2), 600, 1e-9);
    cr_assert_float_eq(gs_frag_memo_get(m, &t, 0, 8000, fr2, 2), 600, 1e-9);
    gs_frag_memo_free(m);
}

/* A shape that names another GPU model: FGD counts all the node's idle GPU against it,
 * hostable mode leaves it out (the node is no supply of it); shapes the node hosts count
 * alike in both modes, and both memos give their mode's value. */
Test(frag, hostable_mode_leaves_out_shapes_naming_another_model)
{
    struct gs_request reqs[4] = {0};
    for (int i = 0; i < 4; i++) {
        reqs[i].kind = GS_REQ_GPU;
        reqs[i].gpus = 1;
        reqs[i].milli = 1000;
        reqs[i].cpu_milli = 4000;
    }
    reqs[2].model_mask = reqs[3].model_mask = 1u << 1; /* half the pods name model 1 */
    struct gs_typical t;
    cr_assert_eq(gs_typical_build(reqs, 4, 95, &t), 2);
    int16_t fr[2] = {1000, 300};
    /* on model 0: the unconstrained shape strands 300 (weight 0.5); the model-1 shape cannot
     * run here at all: FGD adds 0.5 x 1300, hostable mode nothing */
    cr_assert_float_eq(gs_frag_state(&t, GS_FRAG_FGD, 0, 8000, fr, 2), 150 + 650, 1e-9);
    cr_assert_float_eq(gs_frag_state(&t, GS_FRAG_HOSTABLE, 0, 8000, fr, 2), 150, 1e-9);
    /* on model 1 both shapes run: the modes agree */
    cr_assert_float_eq(gs_frag_state(&t, GS_FRAG_FGD, 1, 8000, fr, 2), 300, 1e-9);
    cr_assert_float_eq(gs_frag_state(&t, GS_FRAG_HOSTABLE, 1, 8000, fr, 2), 300, 1e-9);
    struct gs_frag_memo *f = gs_frag_memo_new(GS_FRAG_FGD), *h = gs_frag_memo_new(GS_FRAG_HOSTABLE);
    cr_assert_float_eq(gs_frag_memo_get(f, &t, 0, 8000, fr, 2), 800, 1e-9);
    cr_assert_float_eq(gs_frag_memo_get(h, &t, 0, 8000, fr, 2), 150, 1e-9);
    gs_frag_memo_free(f);
    gs_frag_memo_free(h);
}

/* The share of the typical GPU demand naming each model: a shape naming a set counts for its
 * models by their GPUs; unconstrained shapes for none. */
Test(frag, model_share_splits_demand_naming_models_by_their_gpus)
{
    int t4 = model("T4"), g2 = model("G2");
    struct gs_request reqs[4] = {gpu_req(1), gpu_req(1), gpu_req(1), gpu_req(1)};
    reqs[2].model_mask = 1u << t4; /* a quarter name T4 */
    reqs[3].kind = GS_REQ_FRACTION;
    reqs[3].milli = 500;
    reqs[3].model_mask = 1u << t4 | 1u << g2; /* a quarter, of 500 milli, name T4 or G2 */
    struct gs_typical t;
    cr_assert_eq(gs_typical_build(reqs, 4, 100, &t), 3);
    double gpus[32] = {0}, share[32];
    gpus[t4] = 2;
    gpus[g2] = 8;
    cr_assert(gs_typical_model_share(&t, gpus, share));
    /* demand 0.5 x 1000 + 0.25 x 1000 + 0.25 x 500 = 875; T4: 250 + 125 x 2/10 */
    cr_assert_float_eq(share[t4], 275.0 / 875, 1e-9, "T4 share %f", share[t4]);
    cr_assert_float_eq(share[g2], 100.0 / 875, 1e-9, "G2 share %f", share[g2]);
    cr_assert_float_eq(share[model("P100")], 0, 1e-12);
    reqs[2].model_mask = reqs[3].model_mask = 0;
    cr_assert_eq(gs_typical_build(reqs, 4, 100, &t), 2);
    cr_assert_not(gs_typical_model_share(&t, gpus, share), "no shape names a model");
}

/* Half the pods name T4, which has a third of the GPUs: gpusched puts the pods that can run
 * anywhere on G2 while T4 is pressed, and the T4 pods arriving after them all fit. FGD's
 * measure over hostable shapes alone sees no difference between the nodes (every GPU is
 * whole either way) and leaves the choice to node order. */
Test(engine, gpusched_keeps_a_pressed_model_for_the_pods_that_name_it)
{
    int t4 = model("T4"), g2 = model("G2");
    struct gs_request any = gpu_req(1), named = gpu_req(1);
    named.model_mask = 1u << t4;
    struct gs_request reqs[2] = {any, named};
    struct gs_typical t;
    cr_assert_eq(gs_typical_build(reqs, 2, 100, &t), 2);
    for (uint64_t seed = 1; seed <= 8; seed++) { /* node orders */
        struct gs_cluster c;
        gs_cluster_init(&c);
        cr_assert_geq(
            gs_cluster_add_node(&c, "t4-a", t4, 2, 104000, 1 << 20, GS_GPU_FRACTION, 0, NULL), 0);
        cr_assert_geq(
            gs_cluster_add_node(&c, "t4-b", t4, 2, 104000, 1 << 20, GS_GPU_FRACTION, 0, NULL), 0);
        cr_assert_geq(
            gs_cluster_add_node(&c, "g2", g2, 8, 96000, 1 << 20, GS_GPU_FRACTION, 0, NULL), 0);
        struct gs_engine *e = gs_engine_new(gs_policy_find("gpusched"), &t, 3, seed);
        cr_assert_not_null(e);
        for (int i = 0; i < 8; i++) {
            const struct gs_request *r = i < 4 ? &any : &named;
            struct gs_decision d;
            cr_assert_eq(gs_engine_place(e, &c, r, i, &d, NULL), 0, "seed %llu: pod %d left out",
                         (unsigned long long)seed, i);
            cr_assert_eq(gs_cluster_bind(&c, r, &d.alloc), 0);
            if (i < 4)
                cr_assert_eq(c.nodes[d.alloc.node].model, g2,
                             "seed %llu: pod %d, which can run anywhere, took a T4",
                             (unsigned long long)seed, i);
        }
        gs_engine_free(e);
        gs_cluster_release(&c);
    }
}
