/* test_gates.c - scheduling gates (spec.schedulingGates, as Kueue sets them on every pod it has
 * not admitted) without a cluster: the reader (formats/kubeobj) keeps their count and names
 * within a bound; the store (sched/store) never counts a gated pod as work due and makes it due
 * at once when an update shows its last gate gone, whatever its backoff; a dry scheduling cycle
 * (sched/driver, as explain runs it) over a detached store reports a gated pod as "gated" with
 * kube-scheduler's words and its gates, never places it, and places it once ungated. */
#include "base/error.h"
#include "fixtures.h"
#include "formats/kubeobj.h"
#include "sched/driver.h"
#include "sched/metrics.h"
#include "sched/store.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* A Job-shaped pod of gpusched asking gpus whole GPUs, with the gates named (NULL ends). */
static json_t *pod_json(const char *name, int gpus, const char *const *gates)
{
    char n[8];
    snprintf(n, sizeof(n), "%d", gpus);
    json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:s, s:[{s:s, s:s, "
                          "s:{s:{s:s, s:s, s:s}}}]}, s:{s:s}}",
                          "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace",
                          "ml", "uid", name, "labels", "batch.kubernetes.io/job-name", "train",
                          "job-name", "train", "spec", "schedulerName", "gpusched", "restartPolicy",
                          "Never", "containers", "name", "main", "image",
                          "registry.example/train:1", "resources", "limits", "nvidia.com/gpu", n,
                          "cpu", "4", "memory", "16Gi", "status", "phase", "Pending");
    cr_assert_not_null(o);
    json_object_set_new(json_object_get(o, "spec"), "tolerations",
                        json_pack("[{s:s, s:s, s:s}]", "key", "nvidia.com/gpu", "operator",
                                  "Exists", "effect", "NoSchedule"));
    if (gates) {
        json_t *a = json_array();
        for (int k = 0; gates[k]; k++)
            json_array_append_new(a, json_pack("{s:s}", "name", gates[k]));
        json_object_set_new(json_object_get(o, "spec"), "schedulingGates", a);
    }
    return o;
}

static struct gs_kube_pod read_pod(const char *name, int gpus, const char *const *gates)
{
    json_t *o = pod_json(name, gpus, gates);
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_kube_pod_read_constraints(o, &p), 0, "%s", p.k_error);
    json_decref(o);
    return p;
}

Test(gates, the_reader_keeps_the_count_and_the_names)
{
    static const char *const none[] = {NULL}, *const one[] = {"kueue.x-k8s.io/admission", NULL},
                             *const two[] = {"example.com/a", "example.com/b", NULL};
    const struct {
        const char *const *gates;
        int n;
        const char *text;
    } cases[] = {
        {NULL, 0, ""},
        {none, 0, ""},
        {one, 1, "kueue.x-k8s.io/admission"},
        {two, 2, "example.com/a example.com/b"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct gs_kube_pod p = read_pod("p", 1, cases[c].gates);
        cr_expect_eq(p.ngates, cases[c].n, "case %zu: %d gates, want %d", c, p.ngates, cases[c].n);
        cr_expect_str_eq(p.gates, cases[c].text, "case %zu", c);
        gs_kube_pod_release(&p);
    }
}

Test(gates, a_long_list_is_cut_with_dots_and_still_counted)
{
    char names[40][64];
    const char *gates[41];
    for (int k = 0; k < 40; k++) {
        snprintf(names[k], sizeof(names[k]), "gates.example.com/gate-number-%02d", k);
        gates[k] = names[k];
    }
    gates[40] = NULL;
    struct gs_kube_pod p = read_pod("p", 1, gates);
    cr_expect_eq(p.ngates, 40);
    size_t len = strlen(p.gates);
    cr_expect(len < sizeof(p.gates), "%zu bytes", len);
    cr_expect(len > 3 && strcmp(p.gates + len - 4, " ...") == 0, "ends: '%s'", p.gates);
    cr_expect(strncmp(p.gates, "gates.example.com/gate-number-00 ", 33) == 0, "%s", p.gates);
    gs_kube_pod_release(&p);
}

/* ---------- the store and a dry cycle ---------- */

static struct gs_store *st;
static struct gs_metrics *metrics;
static volatile int leader = 1;

static void setup(void)
{
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs__store_new(NULL, GS_STORE_DETACHED, NULL, 60, &st, &err), 0, "%s", err.msg);
    metrics = gs__metrics_new(&leader);
    cr_assert_not_null(metrics);
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/nodes/a100-whole.json", GS_SOURCE_DIR);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    cr_assert_not_null(o, "%s: %s", path, je.text);
    struct gs_kube_node n;
    cr_assert_eq(gs_kube_node_read(o, &n, &err), 0, "%s", err.msg);
    json_decref(o);
    cr_assert_eq(gs__store_load(st, &n, 1, NULL, 0), 0);
}

static void teardown(void)
{
    gs__metrics_free(metrics);
    gs__store_free(st);
}

static void put(const char *name, int gpus, const char *const *gates)
{
    struct gs_kube_pod p = read_pod(name, gpus, gates);
    cr_assert_eq(gs__store_upsert_pod(st, &p), 0);
}

/* One dry cycle; the verdict on ml/name from the pending report (NULL: none), new reference. */
static json_t *verdict(const char *name)
{
    struct gs_driver_deps d = {.store = st,
                               .metrics = metrics,
                               .scheduler_name = "gpusched",
                               .policy_name = "gpusched",
                               .dry = true};
    struct gs_driver *dr = gs__driver_new(&d);
    cr_assert_not_null(dr);
    cr_assert_eq(gs__driver_cycle(dr), 0);
    gs__driver_free(dr);
    json_t *rep = gs__metrics_report(metrics), *found = NULL;
    size_t i;
    json_t *r;
    json_array_foreach(rep, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "pod")), name) == 0)
            found = json_incref(r);
    }
    json_decref(rep);
    return found;
}

static const char *field(const json_t *r, const char *key)
{
    return json_string_value(json_object_get(r, key));
}

TestSuite(gates_store, .init = setup, .fini = teardown);

Test(gates_store, a_gated_pod_is_never_due_and_is_due_at_once_when_ungated)
{
    static const char *const gate[] = {"kueue.x-k8s.io/admission", NULL};
    put("train-0", 1, gate);
    cr_expect_not(gs__store_work_due(st, "gpusched"), "a gated pod is no work");
    /* backed off for a long time (a bind the API server refused, say) */
    gs__store_backoff(st, "ml", "train-0", 3600);
    cr_expect_not(gs__store_work_due(st, "gpusched"));
    put("train-0", 1, NULL); /* the same pod (same UID), its gate removed */
    cr_expect(gs__store_work_due(st, "gpusched"), "ungated: due in the next cycle");
}

Test(gates_store, the_due_count_leaves_out_the_gated_and_stops_at_its_bound)
{
    static const char *const gate[] = {"kueue.x-k8s.io/admission", NULL};
    put("train-0", 1, NULL);
    put("train-1", 1, gate);
    put("train-2", 1, NULL);
    put("train-3", 1, NULL);
    cr_expect_eq(gs__store_due_count(st, "gpusched", 96), 3, "the gated one is not due");
    cr_expect_eq(gs__store_due_count(st, "gpusched", 2), 2, "counted up to the bound");
    cr_expect_eq(gs__store_due_count(st, "default-scheduler", 96), 0, "another scheduler's");
}

Test(gates_store, an_update_that_keeps_a_gate_changes_nothing)
{
    static const char *const two[] = {"example.com/a", "example.com/b", NULL};
    static const char *const one[] = {"example.com/b", NULL};
    put("train-0", 1, two);
    put("train-0", 1, one);
    cr_expect_not(gs__store_work_due(st, "gpusched"), "one gate left: still gated");
    put("train-0", 1, NULL);
    cr_expect(gs__store_work_due(st, "gpusched"));
}

Test(gates_store, a_cycle_reports_the_gates_and_places_the_pod_once_they_are_gone)
{
    static const char *const two[] = {"example.com/a", "example.com/b", NULL};
    static const char *const one[] = {"example.com/b", NULL};
    put("train-0", 1, two);
    put("plain", 1, NULL); /* not gated: fits beside it */
    json_t *r = verdict("train-0");
    cr_assert_not_null(r, "a gated pod is in the pending report");
    cr_expect_str_eq(field(r, "reason"), "gated");
    cr_expect_str_eq(field(r, "message"),
                     "waiting for scheduling gates: [example.com/a example.com/b]");
    json_decref(r);
    r = verdict("plain");
    cr_assert_not_null(r);
    cr_expect_str_eq(field(r, "reason"), "fits", "the other pod is placed: %s",
                     field(r, "message"));
    json_decref(r);
    put("train-0", 1, one);
    r = verdict("train-0");
    cr_expect_str_eq(field(r, "message"), "waiting for scheduling gates: [example.com/b]");
    json_decref(r);
    put("train-0", 1, NULL);
    r = verdict("train-0");
    cr_assert_not_null(r);
    cr_expect_str_eq(field(r, "reason"), "fits", "ungated: %s", field(r, "message"));
    json_decref(r);
}

Test(gates_store, a_gated_pod_takes_nothing_another_pod_needs)
{
    /* the node has 8 GPUs: a gated 8-GPU pod arrived first, a 4-GPU pod after it */
    static const char *const gate[] = {"kueue.x-k8s.io/admission", NULL};
    put("big", 8, gate);
    put("small", 4, NULL);
    json_t *r = verdict("small");
    cr_assert_not_null(r);
    cr_expect_str_eq(field(r, "reason"), "fits", "%s", field(r, "message"));
    json_decref(r);
    r = verdict("big");
    cr_expect_str_eq(field(r, "reason"), "gated");
    json_decref(r);
}
