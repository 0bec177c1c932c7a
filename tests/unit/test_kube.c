/* Kubernetes formats: kubeconfig and in-cluster config, Pod and Node readers, and the write
 * payloads (binding, events, status, delete options, node patches) — good input reads, bad
 * input is refused with the field that was wrong. */
#include "base/error.h"
#include "formats/kubeobj.h"
#include "kube/config.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kubeconfig = "apiVersion: v1\n"
                                "kind: Config\n"
                                "current-context: a\n"
                                "clusters:\n"
                                "- name: c1\n"
                                "  cluster:\n"
                                "    server: https://10.0.0.1:6443\n"
                                "    certificate-authority-data: aGVsbG8=\n"
                                "users:\n"
                                "- name: u1\n"
                                "  user: {token: s3cret}\n"
                                "contexts:\n"
                                "- name: a\n"
                                "  context: {cluster: c1, user: u1, namespace: team-a}\n"
                                "- name: b\n"
                                "  context: {cluster: nowhere, user: u1}\n";

Test(kubeconfig, current_context_with_token_and_ca_data)
{
    struct gs_kube_config c;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_config_parse("kc", kubeconfig, strlen(kubeconfig), "/", NULL, &c, &err), 0,
                 "%s", err.msg);
    cr_expect_str_eq(c.server, "https://10.0.0.1:6443");
    cr_expect_str_eq(c.token, "s3cret");
    cr_expect_str_eq(c.ns, "team-a");
    cr_assert_not_null(c.ca_pem);
    cr_expect_str_eq(c.ca_pem, "hello");
    cr_expect(!c.insecure, "TLS is verified unless the kubeconfig says otherwise");
    gs_kube_config_release(&c);
}

Test(kubeconfig, a_context_whose_cluster_is_missing_names_it)
{
    struct gs_kube_config c;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_neq(gs_kube_config_parse("kc", kubeconfig, strlen(kubeconfig), "/", "b", &c, &err),
                  0);
    cr_expect(strstr(err.msg, "nowhere") != NULL, "%s", err.msg);
    gs_error_init(&err);
    cr_assert_neq(gs_kube_config_parse("kc", kubeconfig, strlen(kubeconfig), "/", "zz", &c, &err),
                  0);
    cr_expect(strstr(err.msg, "'zz' not found") != NULL, "%s", err.msg);
}

Test(kubeconfig, not_yaml_or_not_a_mapping_is_refused)
{
    struct gs_kube_config c;
    struct gs_error err;
    const char *bad[] = {"[1, 2", "- a\n- b\n", "apiVersion: v1\nkind: Config\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gs_error_init(&err);
        cr_expect_neq(gs_kube_config_parse("kc", bad[i], strlen(bad[i]), "/", NULL, &c, &err), 0,
                      "%s", bad[i]);
        cr_expect(strstr(err.msg, "kubeconfig") != NULL, "%s", err.msg);
    }
}

Test(kubeconfig, in_cluster_reads_the_service_account)
{
    char root[] = "/tmp/gs-incluster-XXXXXX";
    cr_assert_not_null(mkdtemp(root));
    char dir[256], p[300];
    snprintf(dir, sizeof(dir), "%s/var/run/secrets/kubernetes.io/serviceaccount", root);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
    cr_assert_eq(system(cmd), 0);
    const char *files[][2] = {{"ca.crt", "CA"}, {"token", "tok"}, {"namespace", "gpu-ops"}};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i][0]);
        FILE *f = fopen(p, "w");
        cr_assert_not_null(f);
        fputs(files[i][1], f);
        fclose(f);
    }
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    struct gs_kube_config c;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_config_in_cluster(root, &c, &err), 0, "%s", err.msg);
    cr_expect_str_eq(c.server, "https://[fd00::1]:443");
    cr_expect_str_eq(c.ns, "gpu-ops");
    cr_expect(strstr(c.token_file, "serviceaccount/token") != NULL);
    cr_expect_str_eq(c.ca_pem, "CA");
    gs_kube_config_release(&c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    gs_error_init(&err);
    cr_expect_neq(gs_kube_config_in_cluster(root, &c, &err), 0);
    cr_expect(strstr(err.msg, "KUBERNETES_SERVICE_HOST") != NULL, "%s", err.msg);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    cr_expect_eq(system(cmd), 0);
}

Test(kubeconfig, base64_decodes_with_whitespace_and_without_padding)
{
    char *out = NULL;
    cr_assert_eq(gs_base64_decode("aGVs\nbG8", 8, &out), 5);
    cr_expect_str_eq(out, "hello");
    free(out);
    cr_expect_lt(gs_base64_decode("a*b", 3, &out), 0);
}

Test(kubeobj, a_mig_pod_reads_with_its_devices_and_selector)
{
    json_t *o = json_of("{\"metadata\":{\"name\":\"llm\",\"namespace\":\"ai\",\"uid\":\"u1\","
                        "\"annotations\":{\"gpusched.io/devices\":\"mig=0:3g.40gb@4\"}},"
                        "\"spec\":{\"schedulerName\":\"gpusched\",\"nodeSelector\":"
                        "{\"nvidia.com/gpu.product\":\"H100-SXM5-80GB\"},\"containers\":[{\"name\":"
                        "\"c\",\"resources\":{\"limits\":{\"nvidia.com/mig-3g.40gb\":\"1\","
                        "\"cpu\":\"500m\",\"memory\":\"1Gi\"}}}]}}");
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, &p, &err), 0, "%s", err.msg);
    cr_expect_eq(p.req.kind, GS_REQ_MIG);
    cr_expect_str_eq(p.req.mig, "3g.40gb");
    cr_expect_eq(p.req.cpu_milli, 500);
    cr_expect_eq(p.req.mem_mib, 1024);
    cr_expect_eq(p.req.nsel, 1);
    cr_expect_str_eq(p.devices, "mig=0:3g.40gb@4");
    cr_expect_str_eq(p.scheduler, "gpusched");
    json_decref(o);
}

Test(kubeobj, a_bad_gpu_quantity_names_the_field)
{
    json_t *o =
        json_of("{\"metadata\":{\"name\":\"x\",\"namespace\":\"n\"},\"spec\":{\"containers\":"
                "[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"lots\"}}}]}}");
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_neq(gs_kube_pod_read(o, &p, &err), 0);
    cr_expect(strstr(err.msg, "n/x") != NULL && strstr(err.msg, "nvidia.com/gpu") != NULL, "%s",
              err.msg);
    json_decref(o);
}

Test(kubeobj, a_node_reads_allocatable_labels_and_taints)
{
    json_t *o =
        json_of("{\"metadata\":{\"name\":\"a100-0\",\"labels\":{\"nvidia.com/gpu.product\":"
                "\"A100-SXM4-80GB\",\"nvidia.com/mig.config\":\"mixed\"}},\"spec\":{\"taints\":"
                "[{\"key\":\"nvidia.com/gpu\",\"effect\":\"NoSchedule\"}]},\"status\":{"
                "\"allocatable\":{\"cpu\":\"128\",\"memory\":\"1Ti\",\"pods\":\"110\","
                "\"nvidia.com/gpu\":\"6\",\"nvidia.com/mig-3g.40gb\":\"1\"}}}");
    struct gs_kube_node n;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, &n, &err), 0, "%s", err.msg);
    cr_expect_eq(n.gpus, 6);
    cr_expect_eq(n.cpu_milli, 128000);
    cr_expect_eq(n.next, 1);
    cr_expect_str_eq(n.ext[0].name, "nvidia.com/mig-3g.40gb");
    cr_expect_str_eq(gs_kube_label(&n, "nvidia.com/mig.config"), "mixed");
    cr_expect_eq(n.ntaints, 1);
    struct gs_kube_pod p;
    memset(&p, 0, sizeof(p));
    cr_expect(!gs_kube_tolerates(&p, &n), "an untolerated NoSchedule taint keeps pods off");
    p.ntol = 1;
    snprintf(p.tol[0].key, sizeof(p.tol[0].key), "nvidia.com/gpu");
    snprintf(p.tol[0].op, sizeof(p.tol[0].op), "Exists");
    cr_expect(gs_kube_tolerates(&p, &n));
    gs_kube_node_release(&n);
    json_decref(o);
}

Test(kubeobj, write_payloads_match_the_api)
{
    struct gs_kube_pod p;
    memset(&p, 0, sizeof(p));
    snprintf(p.ns, sizeof(p.ns), "ai");
    snprintf(p.name, sizeof(p.name), "llm");
    snprintf(p.uid, sizeof(p.uid), "u1");
    json_t *b = gs_kube_binding(&p, "n1");
    cr_expect_str_eq(json_string_value(json_object_get(b, "kind")), "Binding");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(b, "target"), "name")),
                     "n1");
    json_decref(b);
    json_t *d = gs_kube_delete_options("u1", 0);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(d, "preconditions"), "uid")),
                     "u1");
    cr_expect_eq(json_integer_value(json_object_get(d, "gracePeriodSeconds")), 0);
    json_decref(d);
    json_t *np = gs_kube_nominated_patch("n2", "preempting");
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(np, "status"), "nominatedNodeName")),
        "n2");
    json_decref(np);
    json_t *cord = gs_kube_node_patch("gpusched.io/health", NULL, 1);
    json_t *labels = json_object_get(json_object_get(cord, "metadata"), "labels");
    cr_expect(json_is_null(json_object_get(labels, "gpusched.io/health")),
              "a NULL value removes the label in a merge patch");
    cr_expect(json_is_true(json_object_get(json_object_get(cord, "spec"), "unschedulable")));
    json_decref(cord);
    json_t *only = gs_kube_node_patch(NULL, NULL, -1);
    cr_expect_eq(json_object_size(only), 0);
    json_decref(only);
    json_t *ev = gs_kube_event(&p, "Warning", "FailedScheduling", "Scheduling",
                               "0/3 nodes fit: 3 node selector mismatch", "gpusched-0");
    cr_expect_str_eq(json_string_value(json_object_get(ev, "apiVersion")), "events.k8s.io/v1");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(ev, "regarding"), "uid")),
                     "u1");
    json_decref(ev);
}
