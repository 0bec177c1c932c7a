/* podmetric.c - which per-pod metrics a pod has for the device it holds (see podmetric.h): one
 * row per metric, the GPM rule the agent's backends follow (agent/gpu_fake.c asks it; NVML
 * answers for itself on a real node), and the simulator's HPA (sim/deploy.c) and scenario
 * check (sim/service.c) read it. */
#include "podmetric.h"

#include "catalog.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    enum gs_podmetric_source source;
} metrics[GS_PODMETRIC_COUNT] = {
    [GS_PODMETRIC_GPU_UTILIZATION] = {"gpu_utilization", GS_PODMETRIC_AGENT},
    [GS_PODMETRIC_REQUEST_LATENCY_MS] = {"request_latency_ms", GS_PODMETRIC_SERVER},
};

int gs_podmetric_find(const char *name)
{
    for (int m = 0; m < GS_PODMETRIC_COUNT; m++)
        if (strcmp(metrics[m].name, name) == 0)
            return m;
    return -1;
}

const char *gs_podmetric_name(int metric)
{
    return metric >= 0 && metric < GS_PODMETRIC_COUNT ? metrics[metric].name : NULL;
}

enum gs_podmetric_source gs_podmetric_source(int metric)
{
    return metric >= 0 && metric < GS_PODMETRIC_COUNT ? metrics[metric].source : GS_PODMETRIC_AGENT;
}

/* GPM is Hopper and newer; of the MIG-capable models, the Ampere ones (A100, A30) lack it. */
bool gs_podmetric_gpm(int model)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || model == gs_catalog_other() || m->nprofiles == 0)
        return false;
    return strncmp(m->name, "A100", 4) != 0 && strncmp(m->name, "A30", 3) != 0;
}

bool gs_podmetric_has(int metric, int model, enum gs_pod_device dev)
{
    if (metric < 0 || metric >= GS_PODMETRIC_COUNT)
        return false;
    if (metrics[metric].source == GS_PODMETRIC_SERVER)
        return true;
    /* the agent: a MIG instance's utilization needs GPM; a whole GPU's comes from NVML, a
     * shared one's from its processes' samples (offered outside MIG mode) */
    if (metric == GS_PODMETRIC_GPU_UTILIZATION && dev == GS_PODDEV_MIG)
        return gs_podmetric_gpm(model);
    return true;
}

const char *gs_podmetric_why_missing(int metric, int model, enum gs_pod_device dev, char *buf,
                                     unsigned n)
{
    if (n == 0)
        return buf;
    buf[0] = 0;
    if (gs_podmetric_has(metric, model, dev))
        return buf;
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (metric == GS_PODMETRIC_GPU_UTILIZATION && dev == GS_PODDEV_MIG)
        snprintf(buf, n,
                 "MIG instances of %s measure no utilization: no GPM, which is Hopper and "
                 "newer",
                 m ? m->name : "this GPU");
    else
        snprintf(buf, n, "no pod reports %s",
                 gs_podmetric_name(metric) ? metrics[metric].name : "this metric");
    return buf;
}
