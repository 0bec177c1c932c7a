/* Which per-pod metrics a pod has for the device it holds (core/podmetric.h), as the node
 * agent's exporter gives them: a MIG slice's utilization only with GPM (Hopper and newer), a
 * whole GPU's and a shared one's always, the server's latency everywhere. */
#include "core/catalog.h"
#include "core/podmetric.h"

#include <criterion/criterion.h>
#include <string.h>

static int model(const char *name)
{
    int m = gs_catalog_find(name);
    cr_assert_geq(m, 0, "catalog model '%s'", name);
    return m;
}

Test(podmetric, names_round_trip)
{
    cr_assert_eq(gs_podmetric_find("gpu_utilization"), GS_PODMETRIC_GPU_UTILIZATION);
    cr_assert_eq(gs_podmetric_find("request_latency_ms"), GS_PODMETRIC_REQUEST_LATENCY_MS);
    cr_assert_eq(gs_podmetric_find("queue_depth"), -1);
    cr_assert_str_eq(gs_podmetric_name(GS_PODMETRIC_GPU_UTILIZATION), "gpu_utilization");
    cr_assert_null(gs_podmetric_name(GS_PODMETRIC_COUNT));
    cr_assert_eq(gs_podmetric_source(GS_PODMETRIC_GPU_UTILIZATION), GS_PODMETRIC_AGENT);
    cr_assert_eq(gs_podmetric_source(GS_PODMETRIC_REQUEST_LATENCY_MS), GS_PODMETRIC_SERVER);
}

Test(podmetric, gpm_is_hopper_and_newer)
{
    cr_assert_not(gs_podmetric_gpm(model("A100-80GB")));
    cr_assert_not(gs_podmetric_gpm(model("A100-40GB")));
    cr_assert_not(gs_podmetric_gpm(model("A30-24GB")));
    cr_assert(gs_podmetric_gpm(model("H100-80GB")));
    cr_assert(gs_podmetric_gpm(model("H200-141GB")));
    cr_assert(gs_podmetric_gpm(model("B200-180GB")));
    cr_assert_not(gs_podmetric_gpm(gs_catalog_other()), "a model the catalog lacks");
}

Test(podmetric, utilization_by_device)
{
    const int u = GS_PODMETRIC_GPU_UTILIZATION, l = GS_PODMETRIC_REQUEST_LATENCY_MS;
    int a100 = model("A100-80GB"), a30 = model("A30-24GB"), h100 = model("H100-80GB");
    int l40s = model("L40S-48GB");
    const struct {
        int metric, model;
        enum gs_pod_device dev;
        bool has;
    } cases[] = {
        {u, a100, GS_PODDEV_WHOLE, true},     {u, a100, GS_PODDEV_MIG, false},
        {u, a30, GS_PODDEV_MIG, false},       {u, h100, GS_PODDEV_MIG, true},
        {u, l40s, GS_PODDEV_TIMESLICE, true}, {u, a100, GS_PODDEV_MPS, true},
        {u, a100, GS_PODDEV_FRACTION, true},  {l, a100, GS_PODDEV_MIG, true},
        {l, l40s, GS_PODDEV_TIMESLICE, true}, {-1, a100, GS_PODDEV_WHOLE, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(gs_podmetric_has(cases[i].metric, cases[i].model, cases[i].dev), cases[i].has,
                     "case %zu: metric %d model %d device %d: want %d", i, cases[i].metric,
                     cases[i].model, (int)cases[i].dev, cases[i].has);
    char why[200];
    gs_podmetric_why_missing(u, a100, GS_PODDEV_MIG, why, sizeof(why));
    cr_assert(strstr(why, "A100-80GB") && strstr(why, "GPM"), "%s", why);
    gs_podmetric_why_missing(u, h100, GS_PODDEV_MIG, why, sizeof(why));
    cr_assert_str_eq(why, "");
}
