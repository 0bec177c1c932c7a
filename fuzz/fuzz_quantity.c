/* Fuzz target: Kubernetes quantity parser and printer (round trip must hold). */
#include "core/quantity.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_quantity q, r;
    if (gs_quantity_parse((const char *)data, size, &q, NULL) != 0)
        return 0;
    char out[GS_QUANTITY_MAX_LEN];
    gs_quantity_format(&q, out, sizeof(out));
    if (gs_quantity_parse(out, strlen(out), &r, NULL) != 0 || r.nanos != q.nanos)
        abort(); /* the canonical form must parse back to the same value */
    (void)gs_quantity_value(&q);
    (void)gs_quantity_milli(&q);
    return 0;
}
