/* Fuzz target: the storage object readers (PersistentVolumeClaim, PersistentVolume,
 * StorageClass, CSIDriver, CSIStorageCapacity, CSINode JSON) and label selectors, then the
 * matchers on a node read from the same input (a volume's node affinity and zones, a class's
 * allowedTopologies, a capacity's nodeTopology, a selector on the node's and the volume's
 * labels). A refused object keeps its identity and why, NUL-terminated. */
#include "base/error.h"
#include "formats/kubeobj.h"
#include "formats/labelsel.h"
#include "formats/volobj.h"

#include <stdint.h>
#include <string.h>

static const char *node_label(const void *n, const char *key)
{
    return gs_kube_label(n, key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!o)
        return 0;
    struct gs_error err;
    gs_error_init(&err);
    static struct gs_kube_pvc c;
    static struct gs_kube_pv v;
    static struct gs_kube_sc sc;
    static struct gs_kube_csidriver d;
    static struct gs_kube_csicap cap;
    static struct gs_kube_csinode cn;
    static struct gs_kube_node n;
    static struct gs_sel_req sel[GS_VOL_MAX_SEL];
    int pvc_ok = gs_kube_pvc_read(o, &c, &err) == 0;
    int pv_ok = gs_kube_pv_read(o, &v, &err) == 0;
    int sc_ok = gs_kube_sc_read(o, &sc, &err) == 0;
    int cap_ok = gs_kube_csicap_read(o, &cap, &err) == 0;
    (void)gs_kube_csidriver_read(o, &d, &err);
    (void)gs_kube_csinode_read(o, &cn, &err);
    if (strlen(c.refused) >= sizeof(c.refused) || strlen(v.refused) >= sizeof(v.refused) ||
        strlen(sc.refused) >= sizeof(sc.refused))
        __builtin_trap();
    char modes[96];
    gs_access_str(c.access | v.access, modes, sizeof(modes));
    int nsel = 0;
    const json_t *s = json_object_get(o, "selector");
    int sel_ok =
        gs_labelsel_read(s ? s : o, sel, GS_VOL_MAX_SEL, &nsel, "Fuzz f", "selector", &err) == 0;
    if (gs_kube_node_read(o, &n, &err) == 0) {
        if (pv_ok) {
            (void)gs_kube_pv_node_matches(&v, &n);
            (void)gs_kube_pv_zone_matches(&v, &n);
        }
        if (sc_ok)
            (void)gs_kube_sc_node_allowed(&sc, &n);
        if (cap_ok)
            (void)gs_kube_csicap_node_matches(&cap, &n);
        if (sel_ok)
            (void)gs_labelsel_matches(sel, nsel, node_label, &n);
        if (pvc_ok)
            (void)gs_labelsel_matches(c.sel, c.nsel, node_label, &n);
        gs_kube_node_release(&n);
    }
    if (sel_ok && pv_ok)
        (void)gs_labelsel_matches(sel, nsel, gs_kube_pv_label, &v);
    json_decref(o);
    return 0;
}
