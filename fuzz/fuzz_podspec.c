/* Fuzz target: the Pod placement-constraints reader (formats/podspec) and the constraint
 * engine behind it (core/constraints): any Pod JSON either is refused with an error or is
 * placed, filtered and scored on a small labelled cluster, and removed again, without a
 * crash, a leak or an out-of-bounds access. */
#include "base/error.h"
#include "core/constraints.h"
#include "formats/podspec.h"

#include <stdint.h>

static bool odd_nodes_tolerated(void *ctx, int node)
{
    (void)ctx;
    return node % 2 == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!o)
        return 0;
    struct gs_error err;
    gs_error_init(&err);
    struct gs_kpod p;
    gs_kpod_init(&p);
    if (gs_podspec_read(o, &p, &err) != 0) {
        json_decref(o);
        return 0;
    }
    struct gs_cluster c;
    gs_cluster_init(&c);
    static const char *const zones[] = {"a", "a", "b", "c"};
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "n%d", i);
        int id = gs_cluster_add_node(&c, name, -1, 0, 1000, 1000, GS_GPU_WHOLE, 0, NULL);
        if (id < 0)
            continue;
        gs_node_set_label(&c.nodes[id], GS_KHOSTNAME_KEY, name);
        if (i < 3)
            gs_node_set_label(&c.nodes[id], "topology.kubernetes.io/zone", zones[i]);
        gs_node_set_label(&c.nodes[id], "gpus", i == 1 ? "8" : "x");
    }
    struct gs_kstate *s = NULL;
    struct gs_kprep *prep = NULL;
    if (gs_kstate_new(&c, &s) == 0 && gs_kprep_new(&prep) == 0) {
        int h0 = gs_kstate_add_pod(s, &c, &p, 0);
        int h1 = gs_kstate_add_pod(s, &c, &p, 2);
        if (gs_kprep_compute(prep, s, &c, &p, odd_nodes_tolerated, NULL) == 0) {
            int32_t fit[4];
            int n = 0;
            for (int i = 0; i < c.nnodes; i++) {
                char why[128];
                if (gs_kstate_filter(prep, s, &c, i, why, sizeof(why)))
                    fit[n++] = i;
            }
            struct gs_kscore sc[4];
            if (gs_kprep_score(prep, s, &c, fit, n, sc, odd_nodes_tolerated, NULL) == 0)
                for (int i = 0; i < n; i++)
                    (void)gs_kscore_total(&sc[i]);
        }
        if (h0 >= 0)
            gs_kstate_remove_pod(s, h0);
        if (h1 >= 0)
            gs_kstate_remove_pod(s, h1);
    }
    gs_kprep_free(prep);
    gs_kstate_free(s);
    gs_cluster_release(&c);
    gs_kpod_release(&p);
    json_decref(o);
    return 0;
}
