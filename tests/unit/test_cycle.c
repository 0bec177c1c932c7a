/* The scheduling cycle (core/cycle.c) and re-carving (core/recarve.c) without an API server:
 * queue order, holds on GPUs being re-carved, nominations first, gangs short of minMember, a
 * gang spread as its members' driver devices (DRA claims) fit per node;
 * re-carves that keep instances in use, respect busy GPUs and the hold time, change mode only
 * on idle GPUs, and evict only the lower-priority pods in the way; new layouts keep the
 * indexes of instances in use (or say where they moved). */
#include "base/error.h"
#include "core/cycle.h"

#include <criterion/criterion.h>
#include <string.h>

static int a100(void)
{
    return gs_catalog_find("A100-80GB");
}

static int prof(const char *p)
{
    return gs_catalog_find_profile(a100(), p);
}

/* n A100 nodes of g GPUs, every GPU carved n1g x 1g.10gb (0: whole GPUs). */
static void build(struct gs_cluster *c, int nodes, int g, int n1g)
{
    gs_cluster_init(c);
    struct gs_mig_layout l;
    memset(&l, 0, sizeof(l));
    l.count[prof("1g.10gb")] = (uint8_t)n1g;
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%d", i);
        cr_assert_geq(gs_cluster_add_node(c, name, a100(), g, 64000, 1 << 20,
                                          n1g ? GS_GPU_MIG : GS_GPU_WHOLE, 0, n1g ? &l : NULL),
                      0);
    }
}

static struct gs_request mig_req(const char *p)
{
    struct gs_request r;
    memset(&r, 0, sizeof(r));
    r.kind = GS_REQ_MIG;
    r.gpus = 1;
    r.cpu_milli = 1000;
    r.mem_mib = 1024;
    snprintf(r.mig, sizeof(r.mig), "%s", p);
    return r;
}

static struct gs_request whole_req(int n)
{
    struct gs_request r;
    memset(&r, 0, sizeof(r));
    r.kind = GS_REQ_GPU;
    r.gpus = (uint8_t)n;
    r.milli = GS_MILLI;
    r.cpu_milli = 1000;
    r.mem_mib = 1024;
    return r;
}

/* Bind a 1g.10gb pod on instance slot of GPU gpu and describe it as running. */
static void run_on(struct gs_cluster *c, int gpu, int slot, int32_t prio, struct gs_running *r)
{
    memset(r, 0, sizeof(*r));
    r->req = mig_req("1g.10gb");
    r->alloc.node = 0;
    for (int n = 0; n < c->nnodes; n++)
        if (gpu >= c->nodes[n].gpu0 && gpu < c->nodes[n].gpu0 + c->nodes[n].ngpus)
            r->alloc.node = n;
    r->node = r->alloc.node;
    r->alloc.kind = GS_REQ_MIG;
    r->alloc.ndev = 1;
    r->alloc.gpu[0] = gpu;
    r->alloc.slot[0] = (int8_t)slot;
    r->queue = GS_QUEUE_NONE;
    r->priority = prio;
    r->gang = -1;
    r->pdb = -1;
    r->start_s = 0;
    cr_assert_eq(gs_cluster_bind(c, &r->req, &r->alloc), 0);
}

static struct gs_cyc_pod pending(struct gs_request r, int32_t prio, uint64_t seq)
{
    struct gs_cyc_pod p;
    memset(&p, 0, sizeof(p));
    p.req = r;
    p.priority = prio;
    p.queue = GS_QUEUE_NONE;
    p.gang = -1;
    p.seq = seq;
    p.nominated = -1;
    p.due = true;
    return p;
}

static bool has_inst(const struct gs_mig_placement *pl, int profile, int start)
{
    for (int i = 0; i < pl->n; i++)
        if (pl->inst[i].profile == profile && pl->inst[i].start == start)
            return true;
    return false;
}

Test(recarve, keeps_instances_in_use_and_prefers_the_gpu_that_changes_least)
{
    struct gs_cluster c;
    build(&c, 1, 2, 7);
    struct gs_running r[2];
    run_on(&c, 0, 0, 1, &r[0]); /* GPU 0: 1g.10gb@0 and @1 in use */
    run_on(&c, 0, 1, 1, &r[1]);
    struct gs_request q = mig_req("3g.40gb");
    struct gs_recarve_demand d;
    memset(&d, 0, sizeof(d));
    struct gs_recarve_opts o = {.now_s = 100, .hold_s = 600};
    struct gs_recarve rv;
    cr_assert_eq(gs_recarve_find(&c, &q, &d, &o, &rv), 0);
    cr_assert_eq(rv.ngpus, 1);
    cr_assert_eq(rv.nvictims, 0);
    const struct gs_recarve_gpu *x = &rv.g[0];
    cr_assert_eq(x->mode, GS_GPU_MIG);
    cr_assert_not(x->mode_change);
    cr_assert(has_inst(&x->pl, prof("3g.40gb"), 4), "a 3g.40gb instance at its only free start");
    if (x->gpu == 0) {
        cr_assert(has_inst(&x->pl, prof("1g.10gb"), 0) && has_inst(&x->pl, prof("1g.10gb"), 1),
                  "the instances in use stay");
    }
    /* the free 1g.10gb instances below the new one stay too: only @4..@6 go */
    cr_assert_eq(x->ndestroy, 3, "destroys %d", x->ndestroy);
    cr_assert_eq(x->ncreate, 1);
    /* applied: kept instances keep their index, the used bits follow */
    int8_t remap[GS_MIG_COMPUTE_MAX];
    struct gs_gpu before = c.gpus[x->gpu];
    cr_assert_eq(gs_recarve_apply(&c, x, remap), 0);
    for (int i = 0; i < before.mig.n; i++) {
        if (remap[i] < 0)
            continue;
        cr_assert_eq(c.gpus[x->gpu].mig.inst[remap[i]].start, before.mig.inst[i].start);
        cr_assert_eq(!!(c.gpus[x->gpu].mig_used & (1u << remap[i])),
                     !!(before.mig_used & (1u << i)));
    }
    cr_assert(gs_engine_fits(&c, 0, &q, NULL), "the pod fits once re-carved");
    gs_cluster_release(&c);
}

Test(recarve, a_layout_that_destroys_an_instance_in_use_is_refused)
{
    struct gs_cluster c;
    build(&c, 1, 1, 7);
    struct gs_running r;
    run_on(&c, 0, 5, 1, &r); /* 1g.10gb@5 in use */
    struct gs_recarve_gpu x = {.gpu = 0, .mode = GS_GPU_MIG};
    x.pl.n = 1;
    x.pl.inst[0].profile = (uint8_t)prof("7g.80gb");
    x.pl.inst[0].start = 0;
    struct gs_gpu before = c.gpus[0];
    cr_assert_eq(gs_recarve_apply(&c, &x, NULL), GS_EINVAL);
    cr_assert_eq(memcmp(&before, &c.gpus[0], sizeof(before)), 0, "nothing changed");
    x.mode = GS_GPU_WHOLE;
    cr_assert_eq(gs_recarve_apply(&c, &x, NULL), GS_EINVAL, "no mode change on a GPU in use");
    gs_cluster_release(&c);
}

Test(recarve, busy_and_recent_gpus_are_left_alone_and_modes_change_only_when_idle)
{
    struct gs_cluster c;
    build(&c, 1, 2, 7);
    struct gs_request q = mig_req("3g.40gb");
    struct gs_recarve_demand d;
    memset(&d, 0, sizeof(d));
    uint8_t busy[2] = {1, 0};
    double changed[2] = {0, 50};
    struct gs_recarve_opts o = {.busy = busy, .changed_s = changed, .now_s = 100, .hold_s = 600};
    struct gs_recarve rv;
    cr_assert_eq(gs_recarve_find(&c, &q, &d, &o, &rv), GS_ENOFIT,
                 "GPU 0 is being re-carved, GPU 1 changed 50 s ago (hold 600 s)");
    o.hold_s = 30;
    cr_assert_eq(gs_recarve_find(&c, &q, &d, &o, &rv), 0);
    cr_assert_eq(rv.g[0].gpu, 1);
    gs_cluster_release(&c);

    /* whole GPUs: an idle one may switch to MIG mode, one in use may not */
    build(&c, 1, 2, 0);
    struct gs_request w = whole_req(1);
    struct gs_alloc a = {.node = 0, .kind = GS_REQ_GPU, .ndev = 1, .milli = GS_MILLI};
    a.gpu[0] = 0;
    cr_assert_eq(gs_cluster_bind(&c, &w, &a), 0);
    struct gs_recarve_opts o2 = {.now_s = 100, .hold_s = 600};
    cr_assert_eq(gs_recarve_find(&c, &q, &d, &o2, &rv), 0);
    cr_assert_eq(rv.g[0].gpu, 1);
    cr_assert(rv.g[0].mode_change);
    o2.no_mode_change = true;
    cr_assert_eq(gs_recarve_find(&c, &q, &d, &o2, &rv), GS_ENOFIT);
    gs_cluster_release(&c);

    /* and back: a whole-GPU request on idle MIG GPUs */
    build(&c, 1, 4, 7);
    struct gs_request w2 = whole_req(2);
    struct gs_recarve_opts o3 = {.now_s = 100, .hold_s = 600};
    cr_assert_eq(gs_recarve_find(&c, &w2, &d, &o3, &rv), 0);
    cr_assert_eq(rv.ngpus, 2);
    cr_assert(rv.g[0].mode == GS_GPU_WHOLE && rv.g[1].mode == GS_GPU_WHOLE);
    gs_cluster_release(&c);
}

Test(recarve, victims_are_only_the_lower_priority_holders_in_the_way)
{
    struct gs_cluster c;
    build(&c, 1, 1, 7);
    struct gs_running r[7];
    for (int i = 0; i < 7; i++)
        run_on(&c, 0, i, i == 2 ? 500 : 10, &r[i]); /* @2 is held at priority 500 */
    struct gs_request q = mig_req("3g.40gb");
    struct gs_recarve_demand d;
    memset(&d, 0, sizeof(d));
    struct gs_preempt_ctx px = {.run = r, .nrun = 7, .now_s = 1000};
    struct gs_preemptor pr = {&q, GS_QUEUE_NONE, 100, false};
    struct gs_recarve_opts o = {.now_s = 1000, .hold_s = 600, .pctx = &px, .pr = &pr};
    struct gs_recarve rv;
    cr_assert_eq(gs_recarve_find(&c, &q, &d, &o, &rv), 0);
    /* 3g.40gb goes at 0 or 4; @2's holder outranks the preemptor, so it goes at 4, and only
     * the holders of @4, @5, @6 are evicted */
    cr_assert(has_inst(&rv.g[0].pl, prof("3g.40gb"), 4));
    cr_assert_eq(rv.nvictims, 3, "%d victims", rv.nvictims);
    for (int k = 0; k < rv.nvictims; k++)
        cr_assert(rv.victims[k] >= 4, "victim %d is not in the way", rv.victims[k]);
    /* no victim may be younger than the minimum run time */
    px.min_runtime_s = 5000;
    cr_assert_eq(gs_recarve_find(&c, &q, &d, &o, &rv), GS_ENOFIT);
    gs_cluster_release(&c);
}

Test(cycle, orders_by_priority_holds_on_gpus_being_recarved_and_binds_nominations_first)
{
    struct gs_cluster c;
    build(&c, 1, 2, 7);
    struct gs_engine *e = gs_engine_new(gs_policy_find("gpusched"), NULL, 128, 42);
    /* 3 pods: a low-priority 1g.10gb, a critical 3g.40gb, a high 3g.40gb (arrival order) */
    struct gs_cyc_pod pods[3] = {pending(mig_req("1g.10gb"), 1, 0),
                                 pending(mig_req("3g.40gb"), 1000, 1),
                                 pending(mig_req("3g.40gb"), 900, 2)};
    struct gs_cycle_in in = {.c = &c,
                             .e = e,
                             .pods = pods,
                             .npods = 3,
                             .now_s = 100,
                             .o = {.recarve = true, .hold_s = 600}};
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    cr_assert_eq(gs_cycle_run(&in, &out), 0);
    /* the critical pod first: a re-carve and a hold; the high one takes the second 3g slot
     * of that layout (held too: the GPU is being re-carved); the 1g.10gb binds */
    cr_assert_eq(out.d[0].kind, GS_CYC_REPARTITION);
    cr_assert_eq(out.d[0].pod, 1);
    cr_assert_eq(out.d[1].kind, GS_CYC_NOMINATE);
    cr_assert_eq(out.d[1].pod, 1);
    cr_assert_eq(out.d[1].why, GS_WHY_RECARVING);
    int gpu = out.d[0].gpu;
    cr_assert_eq(out.count[GS_CYC_BIND], 1);
    for (int k = 0; k < out.n; k++) {
        if (out.d[k].pod == 2) {
            cr_assert_eq(out.d[k].kind, GS_CYC_NOMINATE, "the high pod is held");
            cr_assert_eq(out.d[k].alloc.gpu[0], gpu, "on the same re-carved GPU");
        }
        if (out.d[k].pod == 0)
            cr_assert_eq(out.d[k].kind, GS_CYC_BIND);
    }
    gs_cycle_out_release(&out);
    gs_cluster_release(&c);

    /* the next cycle, the change done (the GPU as asked, not busy): the nominated pods bind
     * on their node first, even out of their backoff */
    build(&c, 1, 2, 7);
    struct gs_recarve_gpu x = {.gpu = gpu, .mode = GS_GPU_MIG};
    x.pl.n = 2;
    x.pl.inst[0] = (struct gs_mig_instance){(uint8_t)prof("3g.40gb"), 0};
    x.pl.inst[1] = (struct gs_mig_instance){(uint8_t)prof("3g.40gb"), 4};
    cr_assert_eq(gs_recarve_apply(&c, &x, NULL), 0);
    struct gs_cyc_pod again[2] = {pending(mig_req("3g.40gb"), 1000, 1),
                                  pending(mig_req("3g.40gb"), 900, 2)};
    again[0].nominated = again[1].nominated = 0;
    again[0].due = again[1].due = false;
    in.pods = again;
    in.npods = 2;
    gs_cycle_out_init(&out);
    cr_assert_eq(gs_cycle_run(&in, &out), 0);
    cr_assert_eq(out.n, 2);
    cr_assert(out.d[0].kind == GS_CYC_BIND && out.d[1].kind == GS_CYC_BIND);
    cr_assert_eq(out.d[0].alloc.gpu[0], gpu);
    cr_assert_eq(out.count[GS_CYC_REPARTITION], 0, "no second carve");
    gs_cycle_out_release(&out);
    gs_cluster_release(&c);
    gs_engine_free(e);
}

Test(cycle, a_gang_short_of_min_member_waits_whole_and_static_layouts_stay)
{
    struct gs_cluster c;
    build(&c, 2, 8, 0);
    struct gs_engine *e = gs_engine_new(gs_policy_find("gpusched"), NULL, 128, 42);
    struct gs_cyc_pod pods[3] = {pending(whole_req(8), 0, 0), pending(whole_req(8), 0, 1),
                                 pending(mig_req("3g.40gb"), 0, 2)};
    pods[0].gang = pods[1].gang = 0;
    struct gs_cyc_gang g = {.min_member = 3};
    struct gs_cycle_in in = {
        .c = &c, .e = e, .pods = pods, .npods = 3, .gangs = &g, .ngangs = 1, .now_s = 100};
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    cr_assert_eq(gs_cycle_run(&in, &out), 0);
    int short_waits = 0;
    for (int k = 0; k < out.n; k++)
        short_waits += out.d[k].kind == GS_CYC_WAIT && out.d[k].why == GS_WHY_GANG_SHORT;
    cr_assert_eq(short_waits, 2, "both members wait for the third");
    cr_assert_eq(out.count[GS_CYC_REPARTITION], 0, "no dynamic MIG: the layout stays");
    cr_assert_eq(out.count[GS_CYC_BIND], 0, "a 3g.40gb pod has no slot on whole GPUs");
    gs_cycle_out_release(&out);
    /* with a running member the gang is complete and binds whole */
    g.running = 1;
    gs_cycle_out_init(&out);
    cr_assert_eq(gs_cycle_run(&in, &out), 0);
    cr_assert_eq(out.count[GS_CYC_BIND], 2);
    gs_cycle_out_release(&out);
    gs_cluster_release(&c);
    gs_engine_free(e);
}

/* The driver's devices of a gang's members (DRA claims), one member's worth per node. */
static bool allow_all(void *ctx, int pod, int node)
{
    (void)ctx, (void)pod, (void)node;
    return true;
}

static int one_copy(void *ctx, int pod, int node, int max)
{
    (void)pod, (void)node;
    ++*(int *)ctx;
    return max < 1 ? max : 1;
}

Test(cycle, a_gang_puts_no_more_members_on_a_node_than_its_driver_devices_fit)
{
    struct gs_cluster c;
    build(&c, 4, 8, 0);
    struct gs_engine *e = gs_engine_new(gs_policy_find("gpusched"), NULL, 128, 42);
    struct gs_request none;
    memset(&none, 0, sizeof(none));
    none.kind = GS_REQ_NONE; /* its GPUs are claims the engine does not count */
    none.cpu_milli = 1000;
    none.mem_mib = 1024;
    struct gs_cyc_pod pods[3] = {pending(none, 0, 0), pending(none, 0, 1), pending(none, 0, 2)};
    for (int i = 0; i < 3; i++)
        pods[i].gang = 0;
    struct gs_cyc_gang g = {.min_member = 3};
    int asked = 0;
    struct gs_cycle_in in = {.c = &c,
                             .e = e,
                             .pods = pods,
                             .npods = 3,
                             .gangs = &g,
                             .ngangs = 1,
                             .now_s = 100,
                             .h = {.allows = allow_all, .copies = one_copy, .ctx = &asked}};
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    cr_assert_eq(gs_cycle_run(&in, &out), 0);
    cr_assert_eq(out.count[GS_CYC_BIND], 3, "%d binds", out.count[GS_CYC_BIND]);
    int nodes[3], n = 0;
    for (int k = 0; k < out.n; k++)
        if (out.d[k].kind == GS_CYC_BIND)
            nodes[n++] = out.d[k].node;
    cr_assert(nodes[0] != nodes[1] && nodes[1] != nodes[2] && nodes[0] != nodes[2],
              "members share a node: %d %d %d", nodes[0], nodes[1], nodes[2]);
    cr_assert_eq(asked, 4, "each node asked once (%d)", asked);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(c.nodes[i].pods_cap, 1 << 20, "node %d's pod slots are given back", i);
    gs_cycle_out_release(&out);
    gs_cluster_release(&c);
    gs_engine_free(e);
}
