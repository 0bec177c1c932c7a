/* Fuzz target: the DRA object readers (DeviceClass with its extendedResourceName, ResourceSlice
 * with its devices' taints, ResourceClaim with its requests' tolerations and owner,
 * DeviceTaintRule JSON). The input is read as each kind, or, when it is a list [class, slice,
 * claim], [class, slice, claim, rule] or [class, slice, claim, rule, pod], its items as those; a
 * slice becomes a world (the rule applied to it), and with a claim and a class the claim is
 * prepared (CEL compiled and evaluated, taints tolerated or not), allocated on the slice's node
 * and its status patch written; a pod's extended resources the class backs become the claim
 * kube-scheduler would make for it, and the pod status naming it. */
#include "base/error.h"
#include "formats/draext.h"
#include "formats/draobj.h"

#include <stdint.h>
#include <stdlib.h>

static int32_t node_id(void *ctx, const char *node)
{
    (void)ctx;
    return node[0] ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!o)
        return 0;
    struct gs_error err;
    gs_error_init(&err);
    static struct gs_draobj_class cl;
    static struct gs_draobj_slice sl;
    static struct gs_draobj_claim c;
    static struct gs_drataint_rule rule;
    bool list = json_is_array(o) && json_array_size(o) >= 3 && json_array_size(o) <= 5;
    const json_t *ocl = list ? json_array_get(o, 0) : o, *osl = list ? json_array_get(o, 1) : o,
                 *oc = list ? json_array_get(o, 2) : o, *orl = list ? json_array_get(o, 3) : o;
    bool have_rule = gs_drataint_rule_read(orl, &rule, &err) == 0;
    bool have_cl = gs_draobj_class_read(ocl, &cl, &err) == 0;
    bool have_c = gs_draobj_claim_read(oc, &c, &err) == 0;
    if (gs_draobj_slice_read(osl, &sl, &err) == 0) {
        const struct gs_draobj_slice *sp = &sl;
        struct gs_draobj_world w;
        if (gs_draobj_world_build(&sp, 1, node_id, NULL, &w) == 0) {
            if (have_rule)
                gs_draobj_world_taint(&w, &rule, 1);
            struct gs_draobj_prep p;
            if (have_c && have_cl && gs_draobj_prepare(&c, &cl, 1, &w.w, &p, &err) == 0) {
                struct gs_dra_state st;
                struct gs_dra_result r;
                if (gs_dra_state_init(&st, &w.w) == 0) {
                    bool ok = gs_dra_allocate(&st, &p.c, 0, 1, &r) == 0;
                    json_decref(
                        gs_draobj_status_patch(&c, &p.c, ok ? &r : NULL, &w.w, "n", "pod", "uid"));
                    gs_dra_state_release(&st);
                }
                gs_draobj_prep_release(&p);
            }
            gs_draobj_world_release(&w);
        }
        gs_draobj_slice_release(&sl);
    }
    static struct gs_kube_pod pod;
    if (have_cl && gs_kube_pod_read(list ? json_array_get(o, 4) : o, &pod, &err) == 0) {
        static struct gs_draext x;
        if (gs_draext_build(&pod, &cl, 1, &x, &err) == 0 && x.nres > 0) {
            json_decref(gs_draext_claim_json(&x, pod.name, pod.uid));
            json_decref(gs_draext_pod_status(&x));
        }
        gs_draext_release(&x);
    }
    if (have_c)
        gs_draobj_claim_release(&c);
    if (have_cl)
        gs_draobj_class_release(&cl);
    json_decref(o);
    return 0;
}
