/* Fuzz target: the gpusched.io/devices annotation codec (formats/devices.h). What the reader
 * accepts, the writer writes and the reader takes back unchanged; anything else aborts. */
#include "formats/devices.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_devices d, back;
    if (gs_devices_parse((const char *)data, size, &d) != 0)
        return 0;
    char text[GS_DEVICES_TEXT_MAX];
    int n = gs_devices_format(&d, text, sizeof(text));
    if (n < 0 || (size_t)n != strlen(text) || gs_devices_parse(text, (size_t)n, &back) != 0 ||
        memcmp(&d, &back, sizeof(d)) != 0)
        abort();
    return 0;
}
