/* workload.c - small helpers over pod requests shared by the engine, the simulator and
 * the Kubernetes adapters. */
#include "workload.h"

#include "../base/hash.h"

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

/* Signature of everything in a request that filters or scores read. */
uint64_t gs_request_sig(const struct gs_request *r)
{
    uint64_t h = gs_hash_combine(0x6a09e667f3bcc908ULL, (uint64_t)r->cpu_milli);
    h = gs_hash_combine(h, (uint64_t)r->mem_mib);
    h = gs_hash_combine(h, (uint64_t)r->kind | (uint64_t)r->gpus << 8 |
                               (uint64_t)(uint16_t)r->milli << 16 | (uint64_t)r->model_mask << 32);
    h = gs_hash_combine(h, (uint64_t)(uint32_t)r->gpu_mem_mib | (uint64_t)r->nsel << 32);
    for (const char *p = r->mig; *p && p < r->mig + sizeof(r->mig); p++)
        h = gs_hash_combine(h, (uint64_t)(unsigned char)*p);
    for (int i = 0; i < r->nsel && i < GS_MAX_SELECTOR; i++) {
        for (const char *p = r->sel[i].key; *p && p < r->sel[i].key + GS_LABEL_KEY_MAX; p++)
            h = gs_hash_combine(h, (uint64_t)(unsigned char)*p);
        h = gs_hash_combine(h, '=');
        for (const char *p = r->sel[i].val; *p && p < r->sel[i].val + GS_LABEL_VAL_MAX; p++)
            h = gs_hash_combine(h, (uint64_t)(unsigned char)*p);
    }
    return h | 1; /* 0 marks an empty cache way */
}
