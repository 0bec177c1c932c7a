/* Fuzz target: kubeconfig reader (contexts, clusters, users, base64 PEM data). */
#include "base/error.h"
#include "kube/config.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_kube_config c;
    struct gs_error err;
    gs_error_init(&err);
    if (gs_kube_config_parse("fuzz", (const char *)data, size, "/nonexistent", NULL, &c, &err) == 0)
        gs_kube_config_release(&c);
    return 0;
}
