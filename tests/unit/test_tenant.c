/* Tenants: quotas and fair shares, admission (owed, borrowing, denied), reclaim that keeps
 * the victim queue at its deserved share, victim choice (MIG slots, whole GPUs, gangs, PDBs,
 * minimum run time, fewest GPU-hours) and all-or-nothing gangs. */
#include "base/error.h"
#include "core/engine.h"
#include "core/gang.h"
#include "core/preempt.h"
#include "core/tenant.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <string.h>

static void set(struct gs_tenants *t, struct gs_qvec *v, const char *res, const char *q)
{
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_tenants_set(t, v, res, q, &err), 0, "%s", err.msg);
}

static int queue(struct gs_tenants *t, const char *name, const char *parent, int weight)
{
    struct gs_error err;
    gs_error_init(&err);
    int q = gs_tenants_add_queue(t, name, parent, weight, 0, &err);
    cr_assert_geq(q, 0, "%s", err.msg);
    return q;
}

Test(tenant, deserved_first_then_idle_capacity_by_weight)
{
    struct gs_tenants t;
    gs_tenants_init(&t);
    int a = queue(&t, "team-a", NULL, 1), b = queue(&t, "team-b", NULL, 3);
    set(&t, &t.q[a].deserved, "gpusched.io/gpu-units", "4");
    set(&t, &t.q[b].deserved, "gpusched.io/gpu-units", "4");
    t.cap.v[GS_QR_UNITS] = 16000;
    t.q[a].demand.v[GS_QR_UNITS] = 100000;
    t.q[b].demand.v[GS_QR_UNITS] = 100000;
    gs_tenants_fair(&t);
    /* 8 left after deserved; weights 1:3 */
    cr_assert_eq(t.q[a].fair_units, 6000);
    cr_assert_eq(t.q[b].fair_units, 10000);
    /* a queue that wants less than its deserved share lends the rest */
    t.q[a].demand.v[GS_QR_UNITS] = 1000;
    gs_tenants_fair(&t);
    cr_assert_eq(t.q[a].fair_units, 1000);
    cr_assert_eq(t.q[b].fair_units, 15000);
    /* a limit caps the share */
    set(&t, &t.q[b].limit, "gpusched.io/gpu-units", "9");
    gs_tenants_fair(&t);
    cr_assert_eq(t.q[b].fair_units, 9000);
    gs_tenants_release(&t);
}

Test(tenant, children_split_their_parents_share)
{
    struct gs_tenants t;
    gs_tenants_init(&t);
    int org = queue(&t, "org", NULL, 1), other = queue(&t, "other", NULL, 1);
    int x = queue(&t, "org-x", "org", 1), y = queue(&t, "org-y", "org", 1);
    set(&t, &t.q[org].deserved, "gpusched.io/gpu-units", "8");
    set(&t, &t.q[other].deserved, "gpusched.io/gpu-units", "8");
    set(&t, &t.q[x].deserved, "gpusched.io/gpu-units", "2");
    set(&t, &t.q[y].deserved, "gpusched.io/gpu-units", "2");
    t.cap.v[GS_QR_UNITS] = 16000;
    t.q[x].demand.v[GS_QR_UNITS] = 20000;
    t.q[y].demand.v[GS_QR_UNITS] = 1000;
    gs_tenants_fair(&t);
    /* other wants nothing: org gets the whole cluster (its children's demand is its own) */
    cr_assert_eq(t.q[org].fair_units, 16000);
    cr_assert_eq(t.q[y].fair_units, 1000);
    cr_assert_eq(t.q[x].fair_units, 15000);
    cr_assert_eq(t.q[other].fair_units, 0);
    gs_tenants_release(&t);
}

Test(tenant, admission_owed_borrow_and_denied_with_reasons)
{
    struct gs_tenants t;
    gs_tenants_init(&t);
    int a = queue(&t, "team-a", NULL, 1);
    set(&t, &t.q[a].deserved, "nvidia.com/gpu", "2");
    set(&t, &t.q[a].limit, "nvidia.com/gpu", "4");
    set(&t, &t.q[a].deserved, "nvidia.com/mig-3g.40gb", "1");
    int ns = gs_tenants_add_nsquota(&t, "team-a", "gpu-quota-team-a");
    cr_assert_geq(ns, 0);
    set(&t, &t.ns[ns].hard, "requests.nvidia.com/mig-3g.40gb", "2");
    struct gs_request r1 = gpu_req(1), r3 = gpu_req(3), m = mig_req("3g.40gb");
    struct gs_qvec d1, d3, dm;
    gs_tenants_demand(&t, &r1, &d1);
    gs_tenants_demand(&t, &r3, &d3);
    gs_tenants_demand(&t, &m, &dm);
    cr_assert_eq(d1.v[GS_QR_GPU], 1);
    cr_assert_eq(d1.v[GS_QR_UNITS], 1000);
    char why[256];
    cr_assert_eq(gs_tenants_admit(&t, a, "team-a", &d1, why, sizeof(why)), GS_ADMIT_OWED);
    gs_tenants_charge(&t, a, "team-a", &d1, +1);
    cr_assert_eq(gs_tenants_admit(&t, a, "team-a", &d3, why, sizeof(why)), GS_ADMIT_BORROW);
    cr_assert(strstr(why, "deserved 2"), "%s", why);
    gs_tenants_charge(&t, a, "team-a", &d3, +1);
    cr_assert_eq(gs_tenants_admit(&t, a, "team-a", &d1, why, sizeof(why)), GS_ADMIT_DENY);
    cr_assert_str_eq(why, "queue team-a: nvidia.com/gpu used 4 + requested 1 > limit 4");
    /* MIG: deserved 1 per profile, hard cap 2 from the ResourceQuota */
    cr_assert_eq(gs_tenants_admit(&t, a, "team-a", &dm, why, sizeof(why)), GS_ADMIT_OWED);
    gs_tenants_charge(&t, a, "team-a", &dm, +1);
    cr_assert_eq(gs_tenants_admit(&t, a, "team-a", &dm, why, sizeof(why)), GS_ADMIT_BORROW);
    gs_tenants_charge(&t, a, "team-a", &dm, +1);
    cr_assert_eq(gs_tenants_admit(&t, a, "team-a", &dm, why, sizeof(why)), GS_ADMIT_DENY);
    cr_assert_str_eq(why, "ResourceQuota team-a/gpu-quota-team-a: nvidia.com/mig-3g.40gb used 2 "
                          "+ requested 1 > hard 2");
    /* releasing gives it back */
    gs_tenants_charge(&t, a, "team-a", &dm, -1);
    cr_assert_eq(gs_tenants_admit(&t, a, "team-a", &dm, NULL, 0), GS_ADMIT_BORROW);
    /* other namespaces are not capped by team-a's ResourceQuota */
    cr_assert_eq(gs_tenants_admit(&t, GS_QUEUE_NONE, "team-b", &dm, NULL, 0), GS_ADMIT_OWED);
    gs_tenants_release(&t);
}

Test(tenant, bad_quota_values_are_refused_with_the_resource_named)
{
    struct gs_tenants t;
    gs_tenants_init(&t);
    struct gs_qvec v;
    gs_qvec_zero(&v);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_tenants_set(&t, &v, "nvidia.com/gpu", "1.5", &err), GS_EINVAL);
    cr_assert(strstr(err.msg, "nvidia.com/gpu"), "%s", err.msg);
    cr_assert_eq(gs_tenants_set(&t, &v, "nvidia.com/gpu", "-2", &err), GS_EINVAL);
    cr_assert_eq(gs_tenants_set(&t, &v, "memory", "12xyz", &err), GS_EINVAL);
    cr_assert_eq(gs_tenants_set(&t, &v, "example.com/foo", "1", &err), GS_ENOTFOUND);
    cr_assert_eq(gs_tenants_set(&t, &v, "memory", "64Gi", &err), 0);
    cr_assert_eq(v.v[GS_QR_MEM], 65536);
    cr_assert_eq(gs_tenants_set(&t, &v, "cpu", "500m", &err), 0);
    cr_assert_eq(v.v[GS_QR_CPU], 500);
    gs_error_init(&err);
    cr_assert_lt(gs_tenants_add_queue(&t, "x", "nope", 1, 0, &err), 0);
    cr_assert(strstr(err.msg, "parent 'nope'"), "%s", err.msg);
    gs_tenants_release(&t);
}

Test(tenant, reclaim_never_takes_a_queue_below_deserved)
{
    struct gs_tenants t;
    gs_tenants_init(&t);
    int a = queue(&t, "team-a", NULL, 1), b = queue(&t, "team-b", NULL, 1);
    set(&t, &t.q[a].deserved, "nvidia.com/gpu", "4");
    set(&t, &t.q[b].deserved, "nvidia.com/gpu", "4");
    struct gs_request r2 = gpu_req(2);
    struct gs_qvec d2;
    gs_tenants_demand(&t, &r2, &d2);
    for (int i = 0; i < 3; i++)
        gs_tenants_charge(&t, b, NULL, &d2, +1); /* b holds 6 */
    cr_assert(gs_tenants_reclaimable(&t, b, a, &d2), "6 - 2 >= 4");
    struct gs_qvec d4 = d2;
    for (int i = 0; i < GS_QR_COUNT; i++)
        d4.v[i] *= 2;
    cr_assert_not(gs_tenants_reclaimable(&t, b, a, &d4), "6 - 4 < 4");
    gs_tenants_release(&t);
}

/* ---------- victims ---------- */

struct world {
    struct gs_cluster c;
    struct gs_engine *e;
    struct gs_running run[64];
    int nrun;
};

static void world_init(struct world *w)
{
    gs_cluster_init(&w->c);
    w->e = gs_engine_new(gs_policy_find("gpusched"), NULL, 64, 1);
    w->nrun = 0;
}

static void world_free(struct world *w)
{
    gs_engine_free(w->e);
    gs_cluster_release(&w->c);
}

/* Run a pod on a given node (first free devices there); returns its index. */
static int run_on(struct world *w, int node, struct gs_request r, int prio, double start,
                  int queue_id, int gang, int pdb)
{
    struct gs_running *x = &w->run[w->nrun];
    memset(x, 0, sizeof(*x));
    /* first fit restricted to the node: mark the others unschedulable */
    for (int i = 0; i < w->c.nnodes; i++)
        w->c.nodes[i].unschedulable = i != node;
    cr_assert_eq(gs_engine_first_fit(&w->c, &r, &x->alloc), 0, "pod fits node %d", node);
    for (int i = 0; i < w->c.nnodes; i++) {
        w->c.nodes[i].unschedulable = false;
        gs_node_touch(&w->c.nodes[i]);
    }
    cr_assert_eq(gs_cluster_bind(&w->c, &r, &x->alloc), 0);
    x->node = node;
    x->req = r;
    x->priority = prio;
    x->start_s = start;
    x->queue = queue_id;
    x->gang = gang;
    x->pdb = pdb;
    x->demand.v[GS_QR_UNITS] = (int64_t)(gs_request_units(&r, -1) * 1000 + 0.5);
    x->demand.v[GS_QR_GPU] = r.kind == GS_REQ_GPU ? r.gpus : 0;
    return w->nrun++;
}

static struct gs_preempt_ctx ctx_of(struct world *w, double now)
{
    struct gs_preempt_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.run = w->run;
    ctx.nrun = w->nrun;
    ctx.now_s = now;
    return ctx;
}

static bool has_victim(const struct gs_preempt_plan *p, int r)
{
    for (int i = 0; i < p->nvictims; i++)
        if (p->victims[i] == r)
            return true;
    return false;
}

Test(preempt, mig_victim_frees_a_valid_slot_of_the_profile_and_loses_least)
{
    struct world w;
    world_init(&w);
    int a100 = gs_catalog_find("A100-80GB");
    struct gs_mig_layout l;
    memset(&l, 0, sizeof(l));
    l.count[gs_catalog_find_profile(a100, "3g.40gb")] = 2;
    gs_cluster_add_node(&w.c, "a", a100, 1, 64000, 1 << 20, GS_GPU_MIG, 0, &l);
    int old = run_on(&w, 0, mig_req("3g.40gb"), 100, 0, -1, -1, -1);
    int young = run_on(&w, 0, mig_req("3g.40gb"), 100, 3000, -1, -1, -1);
    struct gs_request want = mig_req("3g.40gb");
    struct gs_preempt_ctx ctx = ctx_of(&w, 3600);
    struct gs_preemptor p = {&want, -1, 1000, false};
    struct gs_preempt_plan plan;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), 0);
    cr_assert_eq(plan.nvictims, 1);
    cr_assert(has_victim(&plan, young), "the younger pod loses fewer GPU-hours");
    cr_assert_not(has_victim(&plan, old));
    cr_assert_eq(plan.alloc.slot[0], w.run[young].alloc.slot[0], "its slot is the one freed");
    /* a profile the layout has no slot for is not helped by any eviction */
    struct gs_request big = mig_req("7g.80gb");
    p.req = &big;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), GS_ENOFIT);
    /* equal priority is never preempted */
    p.req = &want;
    p.priority = 100;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), GS_ENOFIT);
    /* the cluster is as it was */
    cr_assert_eq(w.c.gpus[0].mig_used, 3);
    world_free(&w);
}

Test(preempt, whole_gpus_on_one_node_and_the_fewest_gpu_hours)
{
    struct world w;
    world_init(&w);
    int a100 = gs_catalog_find("A100-80GB");
    gs_cluster_add_node(&w.c, "n0", a100, 4, 64000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    gs_cluster_add_node(&w.c, "n1", a100, 4, 64000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    /* n0: one 4-GPU job that ran 1 h (4 GPU-h); n1: four 1-GPU jobs of 0.5 h (0.5 GPU-h each)
     * then a 2-GPU request is cheapest by taking two of n1's jobs (1 GPU-h) */
    int big = run_on(&w, 0, gpu_req(4), 100, 0, -1, -1, -1);
    int s[4];
    for (int i = 0; i < 4; i++)
        s[i] = run_on(&w, 1, gpu_req(1), 100, 1800 + i * 60, -1, -1, -1);
    struct gs_request want = gpu_req(2);
    struct gs_preempt_ctx ctx = ctx_of(&w, 3600);
    struct gs_preemptor p = {&want, -1, 1000, false};
    struct gs_preempt_plan plan;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), 0);
    cr_assert_eq(plan.node, 1);
    cr_assert_eq(plan.nvictims, 2);
    cr_assert(has_victim(&plan, s[2]) && has_victim(&plan, s[3]), "the two youngest");
    cr_assert_not(has_victim(&plan, big));
    cr_assert_float_eq(plan.gpu_hours, (1800.0 - 120 + 1800.0 - 180) / 3600, 1e-9);
    /* a minimum run time protects the young jobs: only the big one is left */
    ctx.min_runtime_s = 1900;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), 0);
    cr_assert_eq(plan.node, 0);
    cr_assert_eq(plan.nvictims, 1);
    cr_assert(has_victim(&plan, big));
    cr_assert_eq(plan.alloc.ndev, 2);
    world_free(&w);
}

Test(preempt, gangs_go_whole_or_not_at_all_and_budgets_hold)
{
    struct world w;
    world_init(&w);
    int a100 = gs_catalog_find("A100-80GB");
    for (int i = 0; i < 3; i++)
        gs_cluster_add_node(&w.c,
                            i == 0   ? "n0"
                            : i == 1 ? "n1"
                                     : "n2",
                            a100, 2, 64000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    /* gang 0: one pod on n0 and one on n1 (young: cheap per pod, but two pods) */
    int g0 = run_on(&w, 0, gpu_req(2), 100, 3500, -1, 0, -1);
    int g1 = run_on(&w, 1, gpu_req(2), 100, 3500, -1, 0, -1);
    /* n2: a lone pod that ran longer */
    int lone = run_on(&w, 2, gpu_req(2), 100, 3000, -1, -1, 0);
    struct gs_request want = gpu_req(2);
    struct gs_preempt_ctx ctx = ctx_of(&w, 3600);
    ctx.ngangs = 1;
    int32_t allowed[1] = {1};
    ctx.pdb_allowed = allowed;
    ctx.npdb = 1;
    struct gs_preemptor p = {&want, -1, 1000, false};
    struct gs_preempt_plan plan;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), 0);
    /* gang: 2 x 100 s x 2 GPUs = 400 GPU-s; lone: 600 s x 2 = 1200 GPU-s */
    cr_assert_eq(plan.nvictims, 2, "the whole gang goes");
    cr_assert(has_victim(&plan, g0) && has_victim(&plan, g1));
    /* make the gang expensive: now the lone pod is cheaper, unless its budget forbids */
    w.run[g0].start_s = w.run[g1].start_s = 0;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), 0);
    cr_assert_eq(plan.nvictims, 1);
    cr_assert(has_victim(&plan, lone));
    allowed[0] = 0;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), 0);
    cr_assert_eq(plan.nvictims, 2, "the PDB protects the lone pod");
    /* a gang member that may not be preempted protects the whole gang */
    w.run[g1].priority = 5000;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), GS_ENOFIT);
    world_free(&w);
}

Test(preempt, reclaim_across_queues_only_from_borrowers)
{
    struct world w;
    world_init(&w);
    struct gs_tenants t;
    gs_tenants_init(&t);
    int a = queue(&t, "team-a", NULL, 1), b = queue(&t, "team-b", NULL, 1);
    set(&t, &t.q[a].deserved, "nvidia.com/gpu", "4");
    set(&t, &t.q[b].deserved, "nvidia.com/gpu", "4");
    int a100 = gs_catalog_find("A100-80GB");
    gs_cluster_add_node(&w.c, "n0", a100, 8, 64000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    /* team-b borrowed the whole node: 8 x 1 GPU at priority 1000 */
    for (int i = 0; i < 8; i++) {
        int r = run_on(&w, 0, gpu_req(1), 1000, 100 * i, b, -1, -1);
        gs_tenants_charge(&t, b, NULL, &w.run[r].demand, +1);
    }
    struct gs_request want = gpu_req(4);
    struct gs_qvec d;
    gs_tenants_demand(&t, &want, &d);
    cr_assert_eq(gs_tenants_admit(&t, a, NULL, &d, NULL, 0), GS_ADMIT_OWED);
    struct gs_preempt_ctx ctx = ctx_of(&w, 3600);
    ctx.tenants = &t;
    /* team-a is owed 4: it reclaims 4 of b's pods (the youngest), lower priority or not */
    struct gs_preemptor p = {&want, a, 10, true};
    struct gs_preempt_plan plan;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), 0);
    cr_assert_eq(plan.nvictims, 4);
    for (int i = 4; i < 8; i++)
        cr_assert(has_victim(&plan, i), "victim %d", i);
    /* 5 GPUs would take b below its 4 deserved: not allowed */
    struct gs_request five = gpu_req(5);
    p.req = &five;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), GS_ENOFIT);
    /* a borrowing preemptor may not reclaim */
    p.req = &want;
    p.owed = false;
    cr_assert_eq(gs_preempt_plan(w.e, &w.c, &ctx, &p, &plan), GS_ENOFIT);
    gs_tenants_release(&t);
    world_free(&w);
}

Test(gang, all_members_or_none)
{
    struct world w;
    world_init(&w);
    int h100 = gs_catalog_find("H100-80GB");
    for (int i = 0; i < 3; i++)
        gs_cluster_add_node(&w.c,
                            i == 0   ? "n0"
                            : i == 1 ? "n1"
                                     : "n2",
                            h100, 8, 128000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    struct gs_request r = gpu_req(8);
    const struct gs_request *reqs[4] = {&r, &r, &r, &r};
    struct gs_decision d[4];
    struct gs_reasons why;
    int failed = -1;
    cr_assert_eq(gs_gang_place(w.e, &w.c, reqs, 4, d, &failed, &why), GS_ENOFIT);
    cr_assert_eq(failed, 3);
    struct gs_cluster_totals tot;
    gs_cluster_totals(&w.c, &tot);
    cr_assert_float_eq(tot.units_alloc, 0, 1e-9, "a gang that cannot fit holds nothing");
    gs_cluster_add_node(&w.c, "n3", h100, 8, 128000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    cr_assert_eq(gs_gang_place(w.e, &w.c, reqs, 4, d, &failed, &why), 0);
    gs_cluster_totals(&w.c, &tot);
    cr_assert_float_eq(tot.units_alloc, 32, 1e-9);
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            cr_assert_neq(d[i].alloc.node, d[j].alloc.node);
    world_free(&w);
}

static int victims_of(const struct gs_preempt_plan *plans, int n, int *out)
{
    int nv = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < plans[i].nvictims; k++)
            out[nv++] = plans[i].victims[k];
    return nv;
}

Test(preempt, a_gang_gets_victims_for_every_member_or_none)
{
    struct world w;
    world_init(&w);
    int h100 = gs_catalog_find("H100-80GB");
    const char *names[] = {"n0", "n1", "n2", "n3"};
    for (int i = 0; i < 3; i++)
        gs_cluster_add_node(&w.c, names[i], h100, 8, 128000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    /* n0, n1: low-priority training (n1's younger); n2: a pod nobody may preempt */
    int old = run_on(&w, 0, gpu_req(8), 100, 0, -1, -1, 0);
    int young = run_on(&w, 1, gpu_req(8), 100, 1800, -1, -1, 0);
    run_on(&w, 2, gpu_req(8), 5000, 0, -1, -1, -1);
    struct gs_preempt_ctx ctx = ctx_of(&w, 3600);
    int32_t allowed[1] = {2};
    ctx.pdb_allowed = allowed;
    ctx.npdb = 1;
    struct gs_request r = gpu_req(8);
    const struct gs_request *reqs[3] = {&r, &r, &r};
    struct gs_preemptor p = {NULL, -1, 1000, false};
    struct gs_preempt_plan plans[3];
    int v[8];
    struct gs_cluster_totals tot;
    cr_assert_eq(gs_gang_preempt(w.e, &w.c, NULL, &ctx, &p, reqs, 2, plans), 0);
    cr_assert_eq(victims_of(plans, 2, v), 2, "one victim per member, never the same twice");
    cr_assert(v[0] != v[1] && (v[0] == old || v[0] == young) && (v[1] == old || v[1] == young));
    cr_assert_neq(plans[0].node, plans[1].node);
    gs_cluster_totals(&w.c, &tot);
    cr_assert_float_eq(tot.units_alloc, 24, 1e-9, "the cluster is as it was");
    /* a third member would need n2's pod: the gang gets nothing */
    cr_assert_eq(gs_gang_preempt(w.e, &w.c, NULL, &ctx, &p, reqs, 3, plans), GS_ENOFIT);
    gs_cluster_totals(&w.c, &tot);
    cr_assert_float_eq(tot.units_alloc, 24, 1e-9);
    /* a free node is used first: then only the youngest victim goes */
    gs_cluster_add_node(&w.c, names[3], h100, 8, 128000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    cr_assert_eq(gs_gang_preempt(w.e, &w.c, NULL, &ctx, &p, reqs, 2, plans), 0);
    cr_assert_eq(victims_of(plans, 2, v), 1);
    cr_assert_eq(v[0], young);
    /* the budget is spent across members: one disruption allowed, two needed */
    allowed[0] = 1;
    cr_assert_eq(gs_gang_preempt(w.e, &w.c, NULL, &ctx, &p, reqs, 3, plans), GS_ENOFIT);
    allowed[0] = 2;
    cr_assert_eq(gs_gang_preempt(w.e, &w.c, NULL, &ctx, &p, reqs, 3, plans), 0);
    cr_assert_eq(victims_of(plans, 3, v), 2);
    gs_cluster_totals(&w.c, &tot);
    cr_assert_float_eq(tot.units_alloc, 24, 1e-9);
    world_free(&w);
}

Test(preempt, a_gang_reclaims_only_down_to_the_lenders_deserved_share)
{
    struct world w;
    world_init(&w);
    struct gs_tenants t;
    gs_tenants_init(&t);
    int a = queue(&t, "team-a", NULL, 1), b = queue(&t, "team-b", NULL, 1);
    set(&t, &t.q[a].deserved, "nvidia.com/gpu", "16");
    set(&t, &t.q[b].deserved, "nvidia.com/gpu", "8");
    int h100 = gs_catalog_find("H100-80GB");
    gs_cluster_add_node(&w.c, "n0", h100, 8, 128000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    gs_cluster_add_node(&w.c, "n1", h100, 8, 128000, 1 << 20, GS_GPU_WHOLE, 0, NULL);
    /* team-b borrowed both nodes at a high priority */
    for (int n = 0; n < 2; n++) {
        int x = run_on(&w, n, gpu_req(8), 5000, 600 * n, b, -1, -1);
        gs_tenants_charge(&t, b, NULL, &w.run[x].demand, +1);
    }
    struct gs_preempt_ctx ctx = ctx_of(&w, 3600);
    ctx.tenants = &t;
    struct gs_request r = gpu_req(8);
    const struct gs_request *reqs[2] = {&r, &r};
    struct gs_preemptor p = {NULL, a, 10, true};
    struct gs_preempt_plan plans[2];
    int v[4];
    /* one 8-GPU member: b keeps its deserved 8 */
    cr_assert_eq(gs_gang_preempt(w.e, &w.c, &t, &ctx, &p, reqs, 1, plans), 0);
    cr_assert_eq(victims_of(plans, 1, v), 1);
    cr_assert_eq(v[0], 1, "the younger of b's pods");
    /* two members would take b to 0: each alone is reclaimable, together they are not */
    cr_assert_eq(gs_gang_preempt(w.e, &w.c, &t, &ctx, &p, reqs, 2, plans), GS_ENOFIT);
    cr_assert_eq(t.q[b].used.v[GS_QR_GPU], 16, "b's usage is as it was");
    gs_tenants_release(&t);
    world_free(&w);
}
