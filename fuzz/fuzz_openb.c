/* Fuzz target: openb node and pod CSV readers. */
#include "formats/openb.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_openb_pod *pods = NULL;
    struct gs_openb_node *nodes = NULL;
    if (gs_openb_parse_pods("fuzz", (const char *)data, size, &pods, NULL) >= 0)
        free(pods);
    if (gs_openb_parse_nodes("fuzz", (const char *)data, size, &nodes, NULL) >= 0)
        free(nodes);
    return 0;
}
