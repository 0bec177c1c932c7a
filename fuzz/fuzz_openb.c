/* Fuzz target: openb node and pod CSV readers; a pod list that parses is written back
 * (gs_openb_write_pods) and must parse again to the same requests; the input as a variant
 * spec (sim/openbvar) is parsed and, when valid, applied to those pods. */
#include "base/buf.h"
#include "formats/openb.h"
#include "sim/openbvar.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_openb_pod *pods = NULL, *again = NULL;
    struct gs_openb_node *nodes = NULL;
    int np = gs_openb_parse_pods("fuzz", (const char *)data, size, &pods, NULL);
    if (np >= 0) {
        struct gs_buf b;
        gs_buf_init(&b, 0);
        if (gs_openb_write_pods(pods, np, &b) == 0) {
            int n2 = gs_openb_parse_pods("again", b.data ? b.data : "", b.len, &again, NULL);
            if (n2 != np)
                abort();
            for (int i = 0; i < np; i++)
                if (memcmp(&pods[i].req, &again[i].req, sizeof(pods[i].req)) != 0)
                    abort();
            free(again);
        }
        gs_buf_release(&b);
    }
    char spec[300];
    size_t l = size < sizeof(spec) - 1 ? size : sizeof(spec) - 1;
    memcpy(spec, data, l);
    spec[l] = '\0';
    struct gs_openbvar v[GS_OPENBVAR_MAX];
    int nv = gs_openbvar_parse(spec, v, NULL);
    if (nv > 0 && np > 0 && np < 1000) {
        struct gs_openb_pod *out = NULL;
        if (gs_openbvar_apply(v, nv, NULL, 0, pods, np, 1, &out, NULL) >= 0)
            free(out);
    }
    free(pods);
    if (gs_openb_parse_nodes("fuzz", (const char *)data, size, &nodes, NULL) >= 0)
        free(nodes);
    return 0;
}
