/* gpu.c - what gpu.h offers besides a backend's own calls: closing any backend, and the
 * catalog lookups both backends (and their users) make on what a backend reports. */
#include "gpu.h"

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

void gs_gpu_close(struct gs_gpu_backend *b)
{
    if (b)
        b->ops->close(b);
}
