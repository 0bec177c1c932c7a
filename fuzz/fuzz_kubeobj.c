/* Fuzz target: Kubernetes object readers (Pod and Node JSON as the API server sends them,
 * including the gpusched.io/devices annotation and resource quantities), and the
 * Node-to-cluster builder of the scheduler's cache with a pod bound to the node: no Node
 * object may crash it or write past the node's GPUs. */
#include "base/error.h"
#include "formats/kubeobj.h"
#include "sched/cache.h"

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
    bool pod = gs_kube_pod_read(o, &p, &err) == 0;
    gs_error_init(&err);
    if (gs_kube_node_read(o, &n, &err) == 0) {
        (void)gs_kube_label(&n, "nvidia.com/gpu.product");
        if (pod)
            (void)gs_kube_tolerates(&p, &n);
        struct gs_cluster c;
        gs_cluster_init(&c);
        char note[256];
        int id = gs_cache_add_node(&c, &n, NULL, note, sizeof(note));
        if (id >= 0 && pod)
            (void)gs_cache_add_pod(&c, id, &p, NULL);
        gs_cluster_release(&c);
        gs_kube_node_release(&n);
    }
    json_decref(o);
    return 0;
}
