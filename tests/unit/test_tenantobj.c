/* Tenancy objects as the API server serves them: GPUQueue, the article's ResourceQuota,
 * PodGroup and PodDisruptionBudget readers, their errors, selector matching and the PDB's
 * allowed disruptions. */
#include "base/error.h"
#include "formats/tenantobj.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <string.h>

Test(tenantobj, gpuqueue_with_parent_quota_and_namespaces)
{
    json_t *o = json_of("{\"metadata\":{\"name\":\"team-a\"},\"spec\":{\"parent\":\"org\","
                        "\"deserved\":{\"nvidia.com/gpu\":8,\"nvidia.com/mig-3g.40gb\":\"4\"},"
                        "\"limit\":{\"nvidia.com/gpu\":\"16\"},\"overQuotaWeight\":3,"
                        "\"priority\":5,\"namespaces\":[\"team-a\",\"team-a-dev\"]}}");
    struct gs_kube_queue q;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_queue_read(o, &q, &err), 0, "%s", err.msg);
    cr_assert_str_eq(q.name, "team-a");
    cr_assert_str_eq(q.parent, "org");
    cr_assert_eq(q.ndeserved, 2);
    cr_assert_str_eq(q.deserved[0].qty, "8");
    cr_assert_str_eq(q.deserved[1].name, "nvidia.com/mig-3g.40gb");
    cr_assert_eq(q.nlimit, 1);
    cr_assert_eq(q.weight, 3);
    cr_assert_eq(q.priority, 5);
    cr_assert_eq(q.nns, 2);
    cr_assert_str_eq(q.ns[1], "team-a-dev");
    json_decref(o);
}

Test(tenantobj, bad_objects_name_the_field)
{
    const char *cases[][2] = {
        {"{\"spec\":{}}", "metadata.name is required"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"overQuotaWeight\":0}}",
         "spec.overQuotaWeight: expected an integer"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"deserved\":[1]}}", "spec.deserved"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"deserved\":{\"nvidia.com/gpu\":true}}}",
         "spec.deserved.nvidia.com/gpu: expected a quantity"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"parent\":\"q\"}}", "its own parent"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"namespaces\":\"x\"}}", "spec.namespaces"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = json_of(cases[i][0]);
        struct gs_kube_queue q;
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_eq(gs_kube_queue_read(o, &q, &err), GS_EINVAL, "case %zu accepted", i);
        cr_assert(strstr(err.msg, cases[i][1]), "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i][1]);
        json_decref(o);
    }
}

Test(tenantobj, the_articles_resource_quota)
{
    /* gpu-quota-team-b as the API server returns it */
    json_t *o = json_of("{\"metadata\":{\"name\":\"gpu-quota-team-b\",\"namespace\":\"team-b\"},"
                        "\"spec\":{\"hard\":{\"requests.nvidia.com/gpu\":\"4\","
                        "\"limits.nvidia.com/gpu\":\"4\",\"requests.nvidia.com/mig-3g.40gb\":\"2\","
                        "\"limits.nvidia.com/mig-3g.40gb\":\"2\",\"count/pods\":\"100\"}}}");
    struct gs_kube_rquota q;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_rquota_read(o, &q, &err), 0, "%s", err.msg);
    cr_assert_str_eq(q.ns, "team-b");
    cr_assert_eq(q.nhard, 5);
    json_decref(o);
}

Test(tenantobj, podgroup_and_pdb)
{
    json_t *o = json_of("{\"metadata\":{\"name\":\"train\",\"namespace\":\"ml\","
                        "\"creationTimestamp\":\"2026-11-29T10:00:00Z\"},"
                        "\"spec\":{\"minMember\":4,\"scheduleTimeoutSeconds\":60}}");
    struct gs_kube_podgroup g;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_podgroup_read(o, &g, &err), 0, "%s", err.msg);
    cr_assert_eq(g.min_member, 4);
    cr_assert_eq(g.timeout_s, 60);
    cr_assert_float_eq(g.created_s, 1795946400.0, 1e-6);
    json_decref(o);
    o = json_of("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":0}}");
    cr_assert_eq(gs_kube_podgroup_read(o, &g, &err), GS_EINVAL);
    json_decref(o);

    o = json_of("{\"metadata\":{\"name\":\"inf\",\"namespace\":\"ai\"},\"spec\":{"
                "\"minAvailable\":\"50%\",\"selector\":{\"matchLabels\":{\"app\":\"llm\"},"
                "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\","
                "\"values\":[\"dev\"]}]}}}");
    struct gs_kube_pdb b;
    cr_assert_eq(gs_kube_pdb_read(o, &b, &err), 0, "%s", err.msg);
    cr_assert(b.min_pct);
    struct gs_kube_pod p;
    memset(&p, 0, sizeof(p));
    snprintf(p.ns, sizeof(p.ns), "ai");
    p.nlabels = 1;
    snprintf(p.labels[0].key, sizeof(p.labels[0].key), "app");
    snprintf(p.labels[0].val, sizeof(p.labels[0].val), "llm");
    cr_assert(gs_kube_pdb_matches(&b, &p));
    p.nlabels = 2;
    snprintf(p.labels[1].key, sizeof(p.labels[1].key), "tier");
    snprintf(p.labels[1].val, sizeof(p.labels[1].val), "dev");
    cr_assert_not(gs_kube_pdb_matches(&b, &p), "NotIn dev");
    snprintf(p.ns, sizeof(p.ns), "other");
    p.nlabels = 1;
    cr_assert_not(gs_kube_pdb_matches(&b, &p), "other namespace");
    /* 50% of 4 pods must stay: 4 healthy allow 2, 3 healthy allow 1 */
    cr_assert_eq(gs_kube_pdb_allowed(&b, 4, 4), 2);
    cr_assert_eq(gs_kube_pdb_allowed(&b, 3, 4), 1);
    cr_assert_eq(gs_kube_pdb_allowed(&b, 1, 4), 0);
    json_decref(o);
    o = json_of("{\"metadata\":{\"name\":\"x\",\"namespace\":\"ai\"},\"spec\":{"
                "\"maxUnavailable\":1}}");
    cr_assert_eq(gs_kube_pdb_read(o, &b, &err), 0);
    cr_assert_eq(gs_kube_pdb_allowed(&b, 3, 3), 1);
    cr_assert_eq(gs_kube_pdb_allowed(&b, 2, 3), 0);
    json_decref(o);
    o = json_of("{\"metadata\":{\"name\":\"x\",\"namespace\":\"ai\"},\"spec\":{"
                "\"minAvailable\":\"lots\"}}");
    cr_assert_eq(gs_kube_pdb_read(o, &b, &err), GS_EINVAL);
    cr_assert(strstr(err.msg, "spec.minAvailable"), "%s", err.msg);
    json_decref(o);
    o = json_of("{\"metadata\":{\"name\":\"x\",\"namespace\":\"ai\"},\"spec\":{\"selector\":{"
                "\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Near\"}]}}}");
    cr_assert_eq(gs_kube_pdb_read(o, &b, &err), GS_EINVAL);
    cr_assert(strstr(err.msg, "operator: 'Near'"), "%s", err.msg);
    json_decref(o);
}

Test(tenantobj, pod_labels_start_time_and_preemption_policy)
{
    json_t *o = json_of("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u\","
                        "\"labels\":{\"gpusched.io/queue\":\"team-a\","
                        "\"scheduling.x-k8s.io/pod-group\":\"g\"}},"
                        "\"spec\":{\"preemptionPolicy\":\"Never\",\"containers\":[]},"
                        "\"status\":{\"startTime\":\"2026-11-29T10:00:01.5+01:00\"}}");
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, &p, &err), 0, "%s", err.msg);
    cr_assert_str_eq(gs_kube_pod_label(&p, GS_QUEUE_LABEL), "team-a");
    cr_assert_str_eq(gs_kube_pod_label(&p, GS_POD_GROUP_LABEL), "g");
    cr_assert(p.preempt_never);
    cr_assert_float_eq(p.start_s, 1795946400.0 - 3600 + 1.5, 1e-6);
    double t;
    cr_assert_eq(gs_kube_parse_time("2026-13-01T00:00:00Z", &t), GS_EINVAL);
    cr_assert_eq(gs_kube_parse_time("2026-11-29T10:00:00", &t), GS_EINVAL);
    json_decref(o);
}

Test(tenantobj, the_articles_migmanager_maps_workloads_to_mig_types)
{
    json_t *o =
        json_of("{\"metadata\":{\"name\":\"mig-manager\"},\"spec\":{\"config\":"
                "\"nvidia-mig-config\",\"gpuClientsConfig\":{\"version\":\"v1\",\"gpuClients\":["
                "{\"namespace\":\"ai-inference\",\"podSelector\":{\"matchLabels\":{\"workload\":"
                "\"llm-inference\"}},\"migDevice\":\"3g.40gb\"},"
                "{\"namespace\":\"ai-inference\",\"podSelector\":{\"matchLabels\":{\"workload\":"
                "\"light-inference\"}},\"migDevice\":\"1g.10gb\"}]}}}");
    struct gs_kube_migmgr m;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_migmgr_read(o, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.nclients, 2);
    cr_assert_str_eq(m.clients[1].mig, "1g.10gb");
    json_decref(o);
    o = json_of("{\"metadata\":{\"name\":\"m\"},\"spec\":{\"gpuClientsConfig\":{\"gpuClients\":["
                "{\"namespace\":\"x\",\"migDevice\":\"big\"}]}}}");
    cr_assert_eq(gs_kube_migmgr_read(o, &m, &err), GS_EINVAL);
    cr_assert(strstr(err.msg, "gpuClients[0].migDevice"), "%s", err.msg);
    json_decref(o);
}
