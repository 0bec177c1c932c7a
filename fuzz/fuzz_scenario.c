/* Fuzz target: simulator scenario reader. */
#include "formats/scenario.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_scenario *sc = calloc(1, sizeof(*sc));
    if (!sc)
        return 0;
    if (gs_scenario_parse("fuzz", (const char *)data, size, sc, NULL) == 0)
        gs_scenario_release(sc);
    free(sc);
    return 0;
}
