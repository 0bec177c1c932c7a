/* workload.c - small helpers over pod requests shared by the engine, the simulator and
 * the Kubernetes adapters. */
#include "workload.h"

double gs_request_units(const struct gs_request *r, int model)
{
    switch (r->kind) {
    case GS_REQ_GPU:
        return r->gpus;
    case GS_REQ_FRACTION:
        return r->milli / (double)GS_MILLI;
    case GS_REQ_MIG: {
        double best = 0;
        for (int m = 0; m < gs_catalog_count(); m++) {
            if (model >= 0 && m != model)
                continue;
            int p = gs_catalog_find_profile(m, r->mig);
            if (p < 0)
                continue;
            double u = gs_mig_profile_units(&gs_catalog_get(m)->profiles[p]);
            if (best == 0 || u < best)
                best = u;
        }
        return best;
    }
    default:
        return 0;
    }
}

int64_t gs_request_total_milli(const struct gs_request *r)
{
    if (r->kind == GS_REQ_GPU || r->kind == GS_REQ_FRACTION)
        return (int64_t)r->gpus * r->milli;
    return 0;
}

int gs_request_affinity(const struct gs_request *r)
{
    if (r->kind == GS_REQ_FRACTION)
        return 0;
    if (r->kind != GS_REQ_GPU)
        return -1;
    switch (r->gpus) {
    case 1:
        return 1;
    case 2:
        return 2;
    case 4:
        return 3;
    case 8:
        return 4;
    default:
        return 5;
    }
}
