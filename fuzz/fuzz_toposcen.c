/* Fuzz target: the topology simulator's scenario reader. */
#include "formats/toposcen.h"
#include "sim/toposim.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_toposcen s = gs_toposim_default;
    gs_toposcen_parse("fuzz", (const char *)data, size, &s, NULL);
    return 0;
}
