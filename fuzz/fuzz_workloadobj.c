/* Fuzz target: the Workload API's PodGroup reader (scheduling.k8s.io/v1beta1 JSON), the
 * PodGroupInitiallyScheduled condition's rules and patch on what it read, and a pod's
 * spec.schedulingGroup read from the same input. */
#include "base/error.h"
#include "formats/kubeobj.h"
#include "formats/workloadobj.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!o)
        return 0;
    struct gs_error err;
    gs_error_init(&err);
    static struct gs_kube_podgroup g;
    static struct gs_kube_pod p;
    if (gs_kube_wpodgroup_read(o, &g, &err) == 0) {
        for (int scheduled = 0; scheduled < 2; scheduled++)
            if (gs_kube_wpodgroup_condition_changes(&g, scheduled, "Unschedulable", g.name))
                json_decref(gs_kube_wpodgroup_condition_patch(&g, scheduled, "Unschedulable",
                                                              g.name, "2026-01-01T00:00:00Z"));
    }
    (void)gs_kube_pod_read(o, &p, &err);
    json_decref(o);
    return 0;
}
