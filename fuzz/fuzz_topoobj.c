/* Fuzz target: Kueue's Topology and ResourceFlavor readers (kueue.x-k8s.io JSON), a pod's
 * topology annotations read from the same input's metadata.annotations, the levels a Topology
 * gives core/topo.h, and the --topology-levels flag's text. */
#include "base/error.h"
#include "formats/topoobj.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[1024];
    size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    struct gs_error err;
    gs_error_init(&err);
    struct gs_topo_levels lv;
    (void)gs_topo_levels_parse(text, &lv, &err);
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!o)
        return 0;
    static struct gs_kube_topology t;
    static struct gs_kube_flavor f;
    struct gs_kube_topoask a;
    if (gs_kube_topology_read(o, &t, &err) == 0)
        (void)gs_kube_topology_levels(&t, &lv, &err);
    (void)gs_kube_flavor_read(o, &f, &err);
    gs_kube_topoask_read(json_object_get(json_object_get(o, "metadata"), "annotations"), &a);
    json_decref(o);
    return 0;
}
