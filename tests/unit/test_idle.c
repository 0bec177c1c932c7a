/* Where idle GPU goes (sim/idle.h): each cause on a cluster built to show it, and the causes
 * summing to the free units. */
#include "core/catalog.h"
#include "core/cluster.h"
#include "core/fit.h"
#include "sim/idle.h"

#include <criterion/criterion.h>
#include <string.h>

/* Two nodes of 2 whole H100s each; gpu 0 of each node holds a pod (2 of 4 GPUs free). */
static void split_cluster(struct gs_cluster *c)
{
    gs_cluster_init(c);
    int m = gs_catalog_find("H100-80GB");
    cr_assert_geq(m, 0);
    for (int i = 0; i < 2; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        int id = gs_cluster_add_node(c, name, m, 2, 64000, 512 * 1024, GS_GPU_WHOLE, 0, NULL);
        cr_assert_geq(id, 0);
        c->gpus[c->nodes[id].gpu0].milli_free = 0;
    }
}

static struct gs_idle_want gpus(int n, bool quota)
{
    struct gs_idle_want w;
    memset(&w, 0, sizeof(w));
    w.req.kind = GS_REQ_GPU;
    w.req.gpus = (uint8_t)n;
    w.req.milli = GS_MILLI;
    w.quota = quota;
    return w;
}

static double sum(const double *v)
{
    double s = 0;
    for (int k = 0; k < GS_IDLE_CAUSES; k++)
        s += v[k];
    return s;
}

struct idle_case {
    const char *name;
    int ngpus_want; /* 0: nothing waits */
    bool quota;
    int cause; /* where the 2 free GPUs go */
};

static const struct idle_case cases[] = {
    {"nothing waits: no demand", 0, false, GS_IDLE_NO_DEMAND},
    {"a 2-GPU pod, 2 GPUs free on two nodes: fragmentation", 2, false, GS_IDLE_FRAGMENTATION},
    {"a 1-GPU pod held by its queue's limit: quota", 1, true, GS_IDLE_QUOTA},
    {"a 4-GPU pod, 2 GPUs free: too little", 4, false, GS_IDLE_TOO_LITTLE},
};

Test(idle, each_cause_on_a_cluster_that_shows_it)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct idle_case *tc = &cases[i];
        struct gs_cluster c;
        split_cluster(&c);
        struct gs_idle_want w = gpus(tc->ngpus_want, tc->quota);
        double out[GS_IDLE_CAUSES];
        gs_idle_split(&c, NULL, false, &w, tc->ngpus_want ? 1 : 0, out);
        cr_assert_float_eq(out[tc->cause], 2.0, 1e-9, "%s: %s %g, want 2", tc->name,
                           gs_idle_cause_name(tc->cause), out[tc->cause]);
        cr_assert_float_eq(sum(out), 2.0, 1e-9, "%s: sum %g", tc->name, sum(out));
        gs_cluster_release(&c);
    }
}

Test(idle, recarving_and_unhealthy_gpus_count_apart)
{
    struct gs_cluster c;
    split_cluster(&c);
    uint8_t busy[4] = {0, 1, 0, 0}; /* n0's free GPU is being re-carved */
    c.gpus[3].healthy = 0;          /* n1's free GPU is down */
    struct gs_idle_want w = gpus(1, false);
    double out[GS_IDLE_CAUSES];
    gs_idle_split(&c, busy, true, &w, 1, out);
    cr_assert_float_eq(out[GS_IDLE_RECARVING], 1.0, 1e-9, "recarving %g", out[GS_IDLE_RECARVING]);
    cr_assert_float_eq(out[GS_IDLE_UNHEALTHY], 1.0, 1e-9, "unhealthy %g", out[GS_IDLE_UNHEALTHY]);
    /* the 1-GPU pod can use neither, so nothing is counted as fragmentation */
    cr_assert_float_eq(sum(out), 2.0, 1e-9);
    gs_cluster_release(&c);
}

Test(idle, a_pod_for_another_model_is_no_demand_here)
{
    struct gs_cluster c;
    split_cluster(&c);
    struct gs_idle_want w = gpus(1, false);
    w.req.model_mask = 1u << gs_catalog_find("A100-80GB");
    double out[GS_IDLE_CAUSES];
    gs_idle_split(&c, NULL, false, &w, 1, out);
    cr_assert_float_eq(out[GS_IDLE_NO_DEMAND], 2.0, 1e-9, "no demand %g", out[GS_IDLE_NO_DEMAND]);
    gs_cluster_release(&c);
}
