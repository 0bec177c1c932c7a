/* Fuzz target: the CEL subset of DRA selectors (formats/cel.h). The first byte picks a device
 * (a whole GPU, a MIG placement, one without attributes); the rest is the expression, which
 * must compile or be refused with a message, and evaluate to 0 or 1 on the device. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gs_cel p;
    static struct gs_dra_device d;
    if (size < 1)
        return 0;
    memset(&d, 0, sizeof(d));
    snprintf(d.driver, sizeof(d.driver), "gpu.gpusched.io");
    switch (data[0] % 3) {
    case 0:
        attr(&d, "gpu.gpusched.io/type", GS_DRA_STRING, "gpu", 0);
        attr(&d, "gpu.gpusched.io/index", GS_DRA_INT, NULL, 3);
        attr(&d, "gpu.gpusched.io/memory", GS_DRA_QUANTITY, "80Gi", 0);
        break;
    case 1:
        attr(&d, "gpu.gpusched.io/type", GS_DRA_STRING, "mig", 0);
        attr(&d, "gpu.gpusched.io/profile", GS_DRA_STRING, "3g.40gb", 0);
        attr(&d, "gpu.gpusched.io/dynamic", GS_DRA_BOOL, NULL, 1);
        attr(&d, "gpu.gpusched.io/driverVersion", GS_DRA_VERSION, "1.2.3", 0);
        break;
    default:
        break;
    }
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_cel_compile((const char *)data + 1, size - 1, &p, &err);
    if (rc) {
        if (rc != GS_EINVAL || !err.msg[0])
            abort(); /* bad input gets a message */
        return 0;
    }
    int v = gs_cel_eval(&p, &d);
    if (v != 0 && v != 1)
        abort();
    return 0;
}
