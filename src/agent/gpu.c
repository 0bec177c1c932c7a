/* gpu.c - what gpu.h offers besides a backend's own calls: closing any backend, the catalog
 * lookups both backends (and their users) make on what a backend reports, and the links
 * between the GPUs a backend reports (core/gpulink.h). */
#include "gpu.h"

#include <string.h>

int gs_gpu_profile_index(int model, uint32_t profile_id)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    for (int p = 0; m && p < m->nprofiles; p++)
        if (m->profiles[p].id == profile_id)
            return p;
    return -1;
}

const char *gs_gpu_profile_name(int model, uint32_t profile_id)
{
    int p = gs_gpu_profile_index(model, profile_id);
    return p >= 0 ? gs_catalog_get(model)->profiles[p].name : NULL;
}

/* NVIDIA's published compute capabilities (developer.nvidia.com/cuda-gpus), by catalog name
 * prefix: the fake backend's, as NVML reports the real one. */
static const struct {
    const char *prefix;
    int cc;
} capabilities[] = {
    {"P100", 60}, {"V100", 70},  {"T4", 75},      {"A100", 80},  {"A30", 80},
    {"A10", 86},  {"L40S", 89},  {"RTX4090", 89}, {"H100", 90},  {"H200", 90},
    {"H20", 90},  {"GH200", 90}, {"B200", 100},   {"B300", 103}, {"RTXPRO6000", 120},
};

int gs_gpu_compute_capability(int model)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m)
        return 0;
    int best = 0;
    size_t best_len = 0;
    for (size_t k = 0; k < sizeof(capabilities) / sizeof(capabilities[0]); k++) {
        size_t n = strlen(capabilities[k].prefix);
        if (n > best_len && strncmp(m->name, capabilities[k].prefix, n) == 0) {
            best = capabilities[k].cc;
            best_len = n;
        }
    }
    return best;
}

void gs_gpu_close(struct gs_gpu_backend *b)
{
    if (b)
        b->ops->close(b);
}

void gs_gpu_links(const struct gs_gpu_info *info, int n, struct gs_gpu_link out[GS_LINK_MAX_GPUS])
{
    memset(out, 0, sizeof(struct gs_gpu_link) * GS_LINK_MAX_GPUS);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            const struct gs_gpu_info *x = &info[a], *y = &info[b];
            if (a == b || x->index < 0 || x->index >= GS_LINK_MAX_GPUS || y->index < 0 ||
                y->index >= GS_LINK_MAX_GPUS)
                continue;
            uint8_t nx = x->nvlink[y->index], ny = y->nvlink[x->index];
            out[x->index].nvlink[y->index] = nx < ny ? nx : ny;
            out[x->index].pcie[y->index] = (uint8_t)gs_link_pcie_level(
                x->pci_path, x->numa_ok ? x->numa : -1, y->pci_path, y->numa_ok ? y->numa : -1);
        }
}
