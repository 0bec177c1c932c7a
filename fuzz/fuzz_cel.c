/* Fuzz target: CEL device selectors (formats/cel.h). The first byte picks a device (a whole GPU
 * and a MIG placement of gpusched's driver, an NVIDIA GPU with version attributes, one without
 * attributes, one with a version that is not semantic versioning); the rest is the expression,
 * which must compile or be refused with a message and a reason, and run to 1, 0 or an error
 * with a message, within the cost bound, the same by gs_cel_run and gs_cel_eval. */
#include "base/error.h"
#include "formats/cel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void attr(struct gs_dra_device *d, const char *name, int type, const char *s, int64_t i)
{
    struct gs_dra_attr *a = &d->attrs[d->nattrs++];
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", name);
    a->v.type = (uint8_t)type;
    a->v.i = i;
    a->v.b = i != 0;
    if (type == GS_DRA_QUANTITY) {
        a->capacity = true;
        (void)gs_quantity_parse(s, strlen(s), &a->v.q, NULL);
    } else if (s) {
        snprintf(a->v.s, sizeof(a->v.s), "%s", s);
    }
}

static void device(struct gs_dra_device *d, int kind)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->driver, sizeof(d->driver), kind == 2 ? "gpu.nvidia.com" : "gpu.gpusched.io");
    switch (kind) {
    case 0:
        attr(d, "gpu.gpusched.io/type", GS_DRA_STRING, "gpu", 0);
        attr(d, "gpu.gpusched.io/index", GS_DRA_INT, NULL, 3);
        attr(d, "gpu.gpusched.io/memory", GS_DRA_QUANTITY, "80Gi", 0);
        break;
    case 1:
        attr(d, "gpu.gpusched.io/type", GS_DRA_STRING, "mig", 0);
        attr(d, "gpu.gpusched.io/profile", GS_DRA_STRING, "3g.40gb", 0);
        attr(d, "gpu.gpusched.io/dynamic", GS_DRA_BOOL, NULL, 1);
        attr(d, "gpu.gpusched.io/driverVersion", GS_DRA_VERSION, "1.2.3", 0);
        d->multi_alloc = true;
        break;
    case 2:
        attr(d, "gpu.nvidia.com/productName", GS_DRA_STRING, "NVIDIA A100-SXM4-80GB", 0);
        attr(d, "gpu.nvidia.com/cudaComputeCapability", GS_DRA_VERSION, "8.0.0", 0);
        attr(d, "gpu.nvidia.com/driverVersion", GS_DRA_VERSION, "550.54.15-rc.1+b", 0);
        attr(d, "resource.kubernetes.io/pcieRoot", GS_DRA_STRING, "pci0000:00", 0);
        attr(d, "gpu.nvidia.com/memory", GS_DRA_QUANTITY, "81559Mi", 0);
        attr(d, "gpu.nvidia.com/memorySlice3", GS_DRA_QUANTITY, "1", 0);
        break;
    case 4:
        attr(d, "gpu.gpusched.io/driverVersion", GS_DRA_VERSION, "1.2", 0);
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gs_cel p;
    static struct gs_dra_device d;
    if (size < 1)
        return 0;
    device(&d, data[0] % 5);
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_cel_compile((const char *)data + 1, size - 1, &p, &err);
    if (rc) {
        if (rc != GS_EINVAL || !err.msg[0] || p.refusal == GS_CEL_OK)
            abort(); /* bad input gets a message and a reason */
        if (gs_cel_eval(&p, &d) != 0)
            abort();
        return 0;
    }
    if (p.refusal != GS_CEL_OK || p.max_cost > GS_CEL_MAX_COST)
        abort();
    gs_error_init(&err);
    rc = gs_cel_run(&p, &d, &err);
    if (rc != 0 && rc != 1 && (rc >= 0 || !err.msg[0]))
        abort();
    if (gs_cel_eval(&p, &d) != (rc == 1))
        abort();
    return 0;
}
