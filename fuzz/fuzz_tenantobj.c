/* Fuzz target: the tenancy object readers (GPUQueue, ResourceQuota, PodGroup,
 * PodDisruptionBudget, MigManager, PersistentVolumeClaim, PersistentVolume JSON), selector
 * matching and a volume's node affinity on a node read from the same input. */
#include "base/error.h"
#include "formats/tenantobj.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!o)
        return 0;
    struct gs_error err;
    gs_error_init(&err);
    static struct gs_kube_queue q;
    static struct gs_kube_rquota r;
    static struct gs_kube_podgroup g;
    static struct gs_kube_pdb b;
    static struct gs_kube_pod p;
    static struct gs_kube_migmgr m;
    static struct gs_kube_pvc c;
    static struct gs_kube_pv v;
    static struct gs_kube_node n;
    (void)gs_kube_queue_read(o, &q, &err);
    (void)gs_kube_rquota_read(o, &r, &err);
    (void)gs_kube_podgroup_read(o, &g, &err);
    if (gs_kube_migmgr_read(o, &m, &err) == 0 && m.nclients > 0 &&
        gs_kube_pod_read(o, &p, &err) == 0)
        (void)gs_kube_selector_matches(m.clients[0].sel, m.clients[0].nsel, &p);
    if (gs_kube_pdb_read(o, &b, &err) == 0 && gs_kube_pod_read(o, &p, &err) == 0) {
        (void)gs_kube_pdb_matches(&b, &p);
        (void)gs_kube_pdb_allowed(&b, 3, 5);
    }
    (void)gs_kube_pvc_read(o, &c, &err);
    if (gs_kube_pv_read(o, &v, &err) == 0 && gs_kube_node_read(o, &n, &err) == 0) {
        (void)gs_kube_pv_node_matches(&v, &n);
        gs_kube_node_release(&n);
    }
    json_decref(o);
    return 0;
}
