/* Topology as the ecosystem writes it: Kueue's Topology and ResourceFlavor readers (both
 * versions, errors with field paths), a pod's podset-*-topology annotations, a Topology's
 * levels for core/topo.h, and the --topology-levels flag's text. */
#include "base/error.h"
#include "formats/kubeobj.h"
#include "formats/topoobj.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <string.h>

#define GKE_TOPOLOGY                                                                               \
    "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Topology\",\"metadata\":{\"name\":"     \
    "\"gke\"},\"spec\":{\"levels\":[{\"nodeLabel\":\"cloud.google.com/gce-topology-block\"},"      \
    "{\"nodeLabel\":\"cloud.google.com/gce-topology-subblock\"},"                                  \
    "{\"nodeLabel\":\"kubernetes.io/hostname\"}]}}"

static int read_topo(const char *text, struct gs_kube_topology *t, struct gs_error *err)
{
    json_t *o = json_of(text);
    gs_error_init(err);
    int rc = gs_kube_topology_read(o, t, err);
    json_decref(o);
    return rc;
}

Test(topoobj, a_gke_topology_gives_its_levels_broadest_first)
{
    static struct gs_kube_topology t;
    struct gs_error err;
    cr_assert_eq(read_topo(GKE_TOPOLOGY, &t, &err), 0, "%s", err.msg);
    cr_assert_str_eq(t.name, "gke");
    cr_assert_eq(t.nlevels, 3, "%d", t.nlevels);
    struct gs_topo_levels lv;
    cr_assert_eq(gs_kube_topology_levels(&t, &lv, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_topo_levels_find(&lv, "cloud.google.com/gce-topology-subblock"), 1);
    cr_assert_eq(gs_topo_levels_find(&lv, "kubernetes.io/hostname"), 2);
}

Test(topoobj, bad_levels_name_the_field)
{
    static struct gs_kube_topology t;
    struct gs_error err;
    cr_assert_neq(read_topo("{\"metadata\":{\"name\":\"t\"},\"spec\":{\"levels\":[{\"nodeLabel\":"
                            "\"a\"},{\"nodeLabel\":\"\"}]}}",
                            &t, &err),
                  0);
    cr_assert(strstr(err.msg, "Topology t: spec.levels[1].nodeLabel is empty"), "%s", err.msg);
    cr_assert_neq(read_topo("{\"metadata\":{\"name\":\"t\"},\"spec\":{\"levels\":[{\"nodeLabel\":"
                            "\"kubernetes.io/hostname\"},{\"nodeLabel\":\"b\"}]}}",
                            &t, &err),
                  0);
    cr_assert(strstr(err.msg, "lowest level"), "%s", err.msg);
    cr_assert_neq(read_topo("{\"metadata\":{\"name\":\"t\"},\"spec\":{\"levels\":[{\"nodeLabel\":"
                            "\"a\"},{\"nodeLabel\":\"a\"}]}}",
                            &t, &err),
                  0);
    cr_assert(strstr(err.msg, "spec.levels[1].nodeLabel: 'a' is also level 0"), "%s", err.msg);
    cr_assert_neq(read_topo("{\"metadata\":{\"name\":\"t\"},\"spec\":{}}", &t, &err), 0);
    cr_assert(strstr(err.msg, "spec.levels"), "%s", err.msg);
}

Test(topoobj, a_flavor_names_its_topology_and_node_labels)
{
    static struct gs_kube_flavor f;
    struct gs_error err;
    gs_error_init(&err);
    json_t *o = json_of("{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"ResourceFlavor\","
                        "\"metadata\":{\"name\":\"gb200\"},\"spec\":{\"nodeLabels\":{"
                        "\"nvidia.com/gpu.product\":\"NVIDIA-GB200\"},\"topologyName\":\"nvl\"}}");
    cr_assert_eq(gs_kube_flavor_read(o, &f, &err), 0, "%s", err.msg);
    json_decref(o);
    cr_assert_str_eq(f.topology, "nvl");
    cr_assert_eq(f.nlabels, 1);
    cr_assert_str_eq(f.key[0], "nvidia.com/gpu.product");
    cr_assert_str_eq(f.val[0], "NVIDIA-GB200");
}

static void ask(const char *annotations, struct gs_kube_topoask *a)
{
    json_t *o = json_of(annotations);
    gs_kube_topoask_read(o, a);
    json_decref(o);
}

Test(topoobj, a_pods_annotations_ask_a_level)
{
    struct gs_kube_topoask a;
    ask("{\"kueue.x-k8s.io/podset-required-topology\":\"nvidia.com/gpu.clique\"}", &a);
    cr_assert_eq(a.mode, GS_TOPO_REQUIRED);
    cr_assert_str_eq(a.level, "nvidia.com/gpu.clique");
    cr_assert_str_empty(a.error);
    ask("{\"kueue.x-k8s.io/podset-preferred-topology\":\"cloud.google.com/gce-topology-block\"}",
        &a);
    cr_assert_eq(a.mode, GS_TOPO_PREFERRED);
    ask("{\"kueue.x-k8s.io/podset-unconstrained-topology\":\"true\"}", &a);
    cr_assert_eq(a.mode, GS_TOPO_ANY);
    cr_assert(a.unconstrained);
    ask("{\"kueue.x-k8s.io/podset-required-topology\":\"a\","
        "\"kueue.x-k8s.io/podset-preferred-topology\":\"b\"}",
        &a);
    cr_assert(strstr(a.error, "at most one"), "%s", a.error);
    ask("{\"kueue.x-k8s.io/podset-required-topology\":\"\"}", &a);
    cr_assert(strstr(a.error, "is empty"), "%s", a.error);
    ask("{}", &a);
    cr_assert_eq(a.mode, GS_TOPO_ANY);
    cr_assert_str_empty(a.error);
}

Test(topoobj, the_flag_gives_levels_and_refuses_bad_ones)
{
    struct gs_topo_levels lv;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(
        gs_topo_levels_parse("topology.k8s.aws/network-node-layer-1,"
                             "topology.k8s.aws/network-node-layer-2,kubernetes.io/hostname",
                             &lv, &err),
        0, "%s", err.msg);
    cr_assert_eq(lv.n, 3);
    cr_assert_neq(gs_topo_levels_parse("a,,b", &lv, &err), 0);
    cr_assert(strstr(err.msg, "level 2 '' is empty"), "%s", err.msg);
    cr_assert_neq(gs_topo_levels_parse("a,a", &lv, &err), 0);
    cr_assert(strstr(err.msg, "twice"), "%s", err.msg);
    cr_assert_neq(gs_topo_levels_parse("a,b,c,d,e,f,g,h,i", &lv, &err), 0);
    cr_assert(strstr(err.msg, "more than 8"), "%s", err.msg);
}
