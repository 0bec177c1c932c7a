/* Preemption for DRA claims: core/preempt.c's victim choice with the caller's devices
 * (gs_preempt_extra) on a world built from the agent's ResourceSlices (formats/draslice.c read
 * back by formats/draobj.c), as sched/driver.c wires it: running pods hold MIG placements of
 * partitionable A100s or whole H100s through their claims; a pending pod's claim is allocated
 * with core/dra.c once the victims' devices are given back. And the status patch that
 * releases a claim whose pods are gone. */
#include "base/error.h"
#include "core/catalog.h"
#include "core/dra.h"
#include "core/preempt.h"
#include "formats/draobj.h"
#include "formats/draslice.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define MAXS 32
#define MAXR 16

static struct gs_draobj_slice slices[MAXS];
static const struct gs_draobj_slice *sp[MAXS];
static int nslices;
static struct gs_draobj_world world;
static struct gs_draobj_class classes[2];

/* node 0 "dyn": two partitionable A100-80GB; node 1 "whole": two H100-80GB without MIG */
static int32_t node_id(void *ctx, const char *node)
{
    (void)ctx;
    return strcmp(node, "dyn") == 0 ? 0 : strcmp(node, "whole") == 0 ? 1 : -1;
}

static void add_node(const char *name, const char *model, bool dynamic, int ngpus)
{
    static struct gs_draslice_node n;
    memset(&n, 0, sizeof(n));
    n.node = name;
    n.generation = 1;
    n.dynamic_mig = dynamic;
    n.ngpus = ngpus;
    for (int g = 0; g < ngpus; g++) {
        n.gpus[g].index = g;
        snprintf(n.gpus[g].uuid, sizeof(n.gpus[g].uuid), "GPU-%s-%d", name, g);
        n.gpus[g].model = gs_catalog_find(model);
        cr_assert_geq(n.gpus[g].model, 0, "%s", model);
        n.gpus[g].mem_mib = 81920;
        n.gpus[g].healthy = true;
    }
    struct gs_error err;
    gs_error_init(&err);
    json_t *a = gs_draslice_build(&n, &err);
    cr_assert(a, "%s", err.msg);
    size_t i;
    json_t *s;
    json_array_foreach(a, i, s)
    {
        cr_assert_lt(nslices, MAXS);
        cr_assert_eq(gs_draobj_slice_read(s, &slices[nslices], &err), 0, "%s", err.msg);
        sp[nslices] = &slices[nslices];
        nslices++;
    }
    json_decref(a);
}

/* The running pods: each holds one device (by name) on its node through its claim. */
struct world {
    struct gs_cluster c;
    struct gs_engine *e;
    struct gs_dra_state st;
    struct gs_running run[MAXR];
    int dev[MAXR];
    int nrun;
    int gives; /* give calls, to check the search restores what it tries */
    struct gs_draobj_claim claim;
    struct gs_draobj_prep prep;
};

static struct world w;

static void setup(void)
{
    nslices = 0;
    add_node("dyn", "A100-80GB", true, 2);
    add_node("whole", "H100-80GB", false, 2);
    cr_assert_eq(gs_draobj_world_build(sp, nslices, node_id, NULL, &world), 0);
    const char *cls[2] = {
        "{\"metadata\":{\"name\":\"gpu.gpusched.io\"},\"spec\":{\"selectors\":[{\"cel\":{"
        "\"expression\":\"device.driver == 'gpu.gpusched.io' && "
        "device.attributes['gpu.gpusched.io'].type == 'gpu'\"}}]}}",
        "{\"metadata\":{\"name\":\"mig.gpusched.io\"},\"spec\":{\"selectors\":[{\"cel\":{"
        "\"expression\":\"device.driver == 'gpu.gpusched.io' && "
        "device.attributes['gpu.gpusched.io'].type == 'mig'\"}}]}}"};
    for (int k = 0; k < 2; k++) {
        json_t *o = json_of(cls[k]);
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_eq(gs_draobj_class_read(o, &classes[k], &err), 0, "%s", err.msg);
        json_decref(o);
    }
    memset(&w, 0, sizeof(w));
    gs_cluster_init(&w.c);
    cr_assert_geq(gs_cluster_add_node(&w.c, "dyn", -1, 0, 64000, 1 << 20, GS_GPU_WHOLE, 0, NULL),
                  0);
    cr_assert_geq(gs_cluster_add_node(&w.c, "whole", -1, 0, 64000, 1 << 20, GS_GPU_WHOLE, 0, NULL),
                  0);
    w.e = gs_engine_new(gs_policy_find("gpusched"), NULL, 64, 1);
    cr_assert(w.e);
    cr_assert_eq(gs_dra_state_init(&w.st, &world.w), 0);
}

static void teardown(void)
{
    gs_draobj_prep_release(&w.prep);
    gs_draobj_claim_release(&w.claim);
    gs_dra_state_release(&w.st);
    gs_engine_free(w.e);
    gs_cluster_release(&w.c);
    for (int k = 0; k < nslices; k++)
        gs_draobj_slice_release(&slices[k]);
    for (int k = 0; k < 2; k++)
        gs_draobj_class_release(&classes[k]);
    gs_draobj_world_release(&world);
}

/* A running pod on node holding device (its claim's allocation), started at start. */
static int run_on(int node, const char *device, int prio, double start)
{
    int d = gs_dra_find(&world.w, "gpu.gpusched.io", node == 0 ? "dyn" : "whole", device);
    cr_assert_geq(d, 0, "device %s", device);
    cr_assert(gs_dra_fits(&w.st, d), "device %s is free", device);
    gs_dra_take(&w.st, d, w.nrun);
    struct gs_running *x = &w.run[w.nrun];
    memset(x, 0, sizeof(*x));
    x->node = node;
    x->alloc.node = node;
    x->priority = prio;
    x->start_s = start;
    x->queue = -1;
    x->gang = -1;
    x->pdb = -1;
    const char *prof = gs_dra_attr_str(&world.w.dev[d], "gpu.gpusched.io/profile");
    /* the GPU-equivalents its claim counts for: a 3g.40gb of an A100 is 4/8 */
    x->demand.v[GS_QR_UNITS] = prof ? 1000 * (prof[0] - '0') / 7 : 1000;
    cr_assert_eq(gs_cluster_bind(&w.c, &x->req, &x->alloc), 0);
    w.dev[w.nrun] = d;
    return w.nrun++;
}

static void give(void *ctx, int32_t run, bool gone)
{
    (void)ctx;
    w.gives++;
    if (gone)
        gs_dra_give(&w.st, w.dev[run]);
    else
        gs_dra_take(&w.st, w.dev[run], run);
}

static bool fits(void *ctx, int32_t node)
{
    (void)ctx;
    struct gs_dra_result r;
    if (gs_dra_allocate(&w.st, &w.prep.c, node, 99, &r))
        return false;
    for (int k = 0; k < r.n; k++)
        gs_dra_give(&w.st, r.dev[k]);
    return true;
}

/* The pending pod's claim (spec.devices JSON). */
static void want(const char *devices)
{
    gs_draobj_prep_release(&w.prep);
    gs_draobj_claim_release(&w.claim);
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ai\",\"name\":\"crit\",\"uid\":\"u-crit\","
             "\"resourceVersion\":\"7\"},\"spec\":{\"devices\":%s}}",
             devices);
    json_t *o = json_of(buf);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_claim_read(o, &w.claim, &err), 0, "%s", err.msg);
    json_decref(o);
    cr_assert_eq(gs_draobj_prepare(&w.claim, classes, 2, &world.w, &w.prep, &err), 0, "%s",
                 err.msg);
}

#define MIG(p)                                                                                     \
    "{\"requests\":[{\"name\":\"mig\",\"exactly\":{\"deviceClassName\":\"mig.gpusched.io\","       \
    "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.gpusched.io'].profile == "   \
    "'" p "'\"}}]}}]}"
#define GPU                                                                                        \
    "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.gpusched.io\"}}]}"

static int plan_for(int prio, struct gs_preempt_plan *plan, const int32_t *pdb_allowed, int npdb)
{
    struct gs_preempt_extra x = {give, fits, NULL};
    struct gs_preempt_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.run = w.run;
    ctx.nrun = w.nrun;
    ctx.now_s = 3600;
    ctx.pdb_allowed = pdb_allowed;
    ctx.npdb = npdb;
    ctx.extra = &x;
    struct gs_request none;
    memset(&none, 0, sizeof(none));
    struct gs_preemptor p = {&none, -1, prio, false};
    uint8_t before[4096];
    int64_t ub[4096];
    size_t nd = (size_t)world.w.ndev, nu = (size_t)world.w.nsets * GS_DRA_MAX_COUNTERS;
    cr_assert_leq(nd, sizeof(before));
    cr_assert_leq(nu, 4096);
    for (size_t k = 0; k < nd; k++)
        before[k] = (uint8_t)(w.st.owner[k] + 1);
    memcpy(ub, w.st.used, sizeof(int64_t) * nu);
    int rc = gs_preempt_plan(w.e, &w.c, &ctx, &p, plan);
    /* the state is as it was */
    for (size_t k = 0; k < nd; k++)
        cr_assert_eq(before[k], (uint8_t)(w.st.owner[k] + 1), "device %zu restored", k);
    cr_assert_eq(memcmp(ub, w.st.used, sizeof(int64_t) * nu), 0, "counters restored");
    return rc;
}

static bool has_victim(const struct gs_preempt_plan *p, int r)
{
    for (int i = 0; i < p->nvictims; i++)
        if (p->victims[i] == r)
            return true;
    return false;
}

/* Both A100s of node dyn full of 3g.40gb placements (ages a, b on GPU 0; c, d on GPU 1), and
 * the youngest pods of all on node whole's H100s. */
static void fill(double a, double b, double c, double d)
{
    run_on(0, "gpu-0-part-3g-40gb-0", 100, a);
    run_on(0, "gpu-0-part-3g-40gb-4", 100, b);
    run_on(0, "gpu-1-part-3g-40gb-0", 100, c);
    run_on(0, "gpu-1-part-3g-40gb-4", 100, d);
    run_on(1, "gpu-0", 100, 3500);
    run_on(1, "gpu-1", 100, 3550);
}

Test(drapreempt, the_youngest_victim_whose_placement_frees_the_claim, .init = setup,
     .fini = teardown)
{
    fill(0, 1000, 2000, 3000);
    want(MIG("3g.40gb"));
    struct gs_dra_result r;
    cr_assert_eq(gs_dra_allocate(&w.st, &w.prep.c, 0, 99, &r), GS_ENOFIT, "dyn is full");
    struct gs_preempt_plan plan;
    cr_assert_eq(plan_for(1000, &plan, NULL, 0), 0);
    cr_expect_eq(plan.node, 0, "node dyn");
    cr_expect_eq(plan.nvictims, 1, "one victim: %d", plan.nvictims);
    cr_expect(has_victim(&plan, 3), "the youngest 3g.40gb holder (gpu-1 @4)");
    /* the H100 pods are younger but free nothing a 3g.40gb claim can use */
    cr_expect(!has_victim(&plan, 4) && !has_victim(&plan, 5));
    /* with the victim's device given back, the claim takes its placement */
    gs_dra_give(&w.st, w.dev[3]);
    cr_assert_eq(gs_dra_allocate(&w.st, &w.prep.c, 0, 99, &r), 0);
    cr_expect_str_eq(world.w.dev[r.dev[0]].name, "gpu-1-part-3g-40gb-4");
    printf("3g.40gb claim: victim run[%d] (started %.0f s), device %s\n", plan.victims[0],
           w.run[plan.victims[0]].start_s, world.w.dev[r.dev[0]].name);
}

Test(drapreempt, a_whole_gpu_evicts_both_placements_of_the_cheaper_gpu, .init = setup,
     .fini = teardown)
{
    /* the 7g.80gb needs a GPU's every memory slice: GPU 0 (ages 0, 3000) loses more
     * GPU-hours than GPU 1 (2000, 2500) */
    fill(0, 3000, 2000, 2500);
    want(MIG("7g.80gb"));
    struct gs_preempt_plan plan;
    cr_assert_eq(plan_for(1000, &plan, NULL, 0), 0);
    cr_expect_eq(plan.node, 0);
    cr_expect_eq(plan.nvictims, 2, "two victims: %d", plan.nvictims);
    cr_expect(has_victim(&plan, 2) && has_victim(&plan, 3), "both pods of gpu-1");
    /* a whole H100: node whole, its younger GPU's pod */
    want("{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.gpusched.io\","
         "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.gpusched.io']."
         "productName == 'H100-80GB'\"}}]}}]}");
    cr_assert_eq(plan_for(1000, &plan, NULL, 0), 0);
    cr_expect_eq(plan.node, 1);
    cr_expect_eq(plan.nvictims, 1);
    cr_expect(has_victim(&plan, 5), "the younger H100 pod");
}

Test(drapreempt, equal_priority_budgets_and_hopeless_claims_evict_nobody, .init = setup,
     .fini = teardown)
{
    fill(0, 1000, 2000, 3000);
    want(MIG("3g.40gb"));
    struct gs_preempt_plan plan;
    /* equal priority is never a victim */
    cr_expect_eq(plan_for(100, &plan, NULL, 0), GS_ENOFIT);
    /* a budget that allows no disruption protects the youngest: the next youngest goes */
    int32_t allowed[1] = {0};
    w.run[3].pdb = 0;
    cr_assert_eq(plan_for(1000, &plan, allowed, 1), 0);
    cr_expect_eq(plan.nvictims, 1);
    cr_expect(has_victim(&plan, 2), "gpu-1 @0 (started 2000) instead: %d", plan.victims[0]);
    w.run[3].pdb = -1;
    /* three whole GPUs on one node exist nowhere: nobody is evicted */
    want("{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.gpusched.io\","
         "\"count\":3}}]}");
    cr_expect_eq(plan_for(1000, &plan, NULL, 0), GS_ENOFIT);
    cr_expect_gt(w.gives, 0, "the search tried victims");
}

Test(drapreempt, release_patch_keeps_live_pods_and_clears_the_allocation, .init = setup,
     .fini = teardown)
{
    json_t *o = json_of(
        "{\"metadata\":{\"namespace\":\"ai\",\"name\":\"c\",\"uid\":\"u-c\","
        "\"resourceVersion\":\"42\"},\"spec\":{\"devices\":" GPU "},\"status\":{\"allocation\":"
        "{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.gpusched.io\","
        "\"pool\":\"whole\",\"device\":\"gpu-0\"}]}},\"reservedFor\":[{\"resource\":\"pods\","
        "\"name\":\"a\",\"uid\":\"ua\"},{\"resource\":\"pods\",\"name\":\"b\",\"uid\":\"ub\"}]}}");
    struct gs_draobj_claim c;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_claim_read(o, &c, &err), 0, "%s", err.msg);
    json_decref(o);
    cr_assert(c.allocated);
    cr_assert_eq(c.nreserved, 2);
    bool keep[2] = {false, true};
    json_t *p = gs_draobj_release_patch(&c, keep);
    char *s = json_dumps(p, JSON_SORT_KEYS | JSON_COMPACT);
    cr_expect_str_eq(s, "{\"metadata\":{\"resourceVersion\":\"42\",\"uid\":\"u-c\"},\"status\":{"
                        "\"reservedFor\":[{\"name\":\"b\",\"resource\":\"pods\",\"uid\":\"ub\"}"
                        "]}}");
    free(s);
    json_decref(p);
    keep[1] = false;
    p = gs_draobj_release_patch(&c, keep);
    s = json_dumps(p, JSON_SORT_KEYS | JSON_COMPACT);
    cr_expect_str_eq(s, "{\"metadata\":{\"resourceVersion\":\"42\",\"uid\":\"u-c\"},\"status\":{"
                        "\"allocation\":null,\"reservedFor\":null}}");
    printf("release patch: %s\n", s);
    free(s);
    json_decref(p);
    gs_draobj_claim_release(&c);
}
