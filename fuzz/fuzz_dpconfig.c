/* Fuzz target: NVIDIA device-plugin config reader. */
#include "formats/dpconfig.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_dpconfig c;
    gs_dpconfig_parse("fuzz", (const char *)data, size, &c, NULL);
    return 0;
}
