/* Fuzz target: Kubernetes object readers (Pod and Node JSON as the API server sends them,
 * including the gpusched.io/devices annotation and resource quantities). */
#include "base/error.h"
#include "formats/kubeobj.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!o)
        return 0;
    struct gs_error err;
    gs_error_init(&err);
    static struct gs_kube_pod p;
    static struct gs_kube_node n;
    if (gs_kube_pod_read(o, &p, &err) == 0)
        (void)gs_kube_tolerates(&p, &n);
    gs_error_init(&err);
    if (gs_kube_node_read(o, &n, &err) == 0)
        (void)gs_kube_label(&n, "nvidia.com/gpu.product");
    json_decref(o);
    return 0;
}
