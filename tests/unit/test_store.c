/* test_store.c - how the scheduler's store (sched/store) reads pods: a pod whose request cannot
 * be read (gpusched.io/gpu-milli of 1000 or more, a negative count, two kinds of GPU device) is
 * kept, unreadable, with why (the field and what it accepts), instead of being dropped; a dry
 * scheduling cycle (sched/driver, as explain runs it) over a detached store reports it as
 * "request" with that reason, never places it, and places the pods beside it as before. */
#include "base/error.h"
#include "formats/kubeobj.h"
#include "sched/driver.h"
#include "sched/metrics.h"
#include "sched/store.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* A pod of gpusched in namespace ml whose container's limits are key: value. */
static json_t *pod_json(const char *name, const char *key, const char *value)
{
    json_t *o =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s, "
                  "s:s, s:s}}}]}, s:{s:s}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "ml",
                  "uid", name, "spec", "schedulerName", "gpusched", "containers", "name", "main",
                  "image", "registry.example/serve:1", "resources", "limits", key, value, "cpu",
                  "1", "memory", "1Gi", "status", "phase", "Pending");
    cr_assert_not_null(o);
    json_object_set_new(json_object_get(o, "spec"), "tolerations",
                        json_pack("[{s:s, s:s, s:s}]", "key", "nvidia.com/gpu", "operator",
                                  "Exists", "effect", "NoSchedule"));
    return o;
}

static int read_pod(const char *name, const char *key, const char *value, struct gs_kube_pod *p,
                    struct gs_error *err)
{
    json_t *o = pod_json(name, key, value);
    int rc = gs__store_read_pod(o, p, err);
    json_decref(o);
    return rc;
}

Test(store_read, a_share_out_of_range_is_kept_unreadable_with_the_field_and_the_range)
{
    const struct {
        const char *key, *value, *want;
    } cases[] = {
        {"gpusched.io/gpu-milli", "1000",
         "resources.limits.gpusched.io/gpu-milli: 1000; a share is 1 to 999 thousandths"},
        {"gpusched.io/gpu-milli", "1500", "gpusched.io/gpu-milli: 1500; a share is 1 to 999"},
        {"gpusched.io/gpu-milli", "-5", "limits.gpusched.io/gpu-milli: must be a non-negative"},
        {"gpusched.io/gpu-milli", "2500m", "limits.gpusched.io/gpu-milli: must be a non-negative"},
        {"nvidia.com/gpu", "17", "nvidia.com/gpu: 17 GPUs, at most 16 per pod"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct gs_kube_pod p;
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_eq(read_pod("serve", cases[k].key, cases[k].value, &p, &err), 0,
                     "case %zu: dropped: %s", k, err.msg);
        cr_expect(p.unreadable, "case %zu: readable", k);
        cr_expect(strstr(p.refused, cases[k].want) != NULL, "case %zu: '%s' lacks '%s'", k,
                  p.refused, cases[k].want);
        cr_expect(strncmp(p.refused, "pod ", 4) != 0, "case %zu: '%s' names the pod", k, p.refused);
        cr_expect_eq(p.req.kind, GS_REQ_NONE, "case %zu", k);
        cr_expect_str_eq(p.name, "serve");
        gs_kube_pod_release(&p);
    }
}

Test(store_read, a_readable_share_and_a_pod_without_a_name)
{
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(read_pod("serve", "gpusched.io/gpu-milli", "999", &p, &err), 0, "%s", err.msg);
    cr_expect_not(p.unreadable);
    cr_expect_str_empty(p.refused);
    cr_expect_eq(p.req.kind, GS_REQ_FRACTION);
    cr_expect_eq(p.req.milli, 999);
    gs_kube_pod_release(&p);
    json_t *o = pod_json("x", "gpusched.io/gpu-milli", "1500");
    json_object_del(json_object_get(o, "metadata"), "name");
    gs_error_init(&err);
    cr_expect_eq(gs__store_read_pod(o, &p, &err), GS_EINVAL, "no name: nothing to tell");
    cr_expect(strstr(err.msg, "metadata.name") != NULL, "%s", err.msg);
    json_decref(o);
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

static void put(const char *name, const char *key, const char *value)
{
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(read_pod(name, key, value, &p, &err), 0, "%s", err.msg);
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

TestSuite(store_cycle, .init = setup, .fini = teardown);

Test(store_cycle, an_unreadable_pod_is_told_why_and_holds_nothing_back)
{
    put("too-big", "gpusched.io/gpu-milli", "1500");
    put("whole", "nvidia.com/gpu", "1");
    cr_expect(gs__store_work_due(st, "gpusched"), "the unreadable pod is work: it is told why");
    json_t *r = verdict("too-big");
    cr_assert_not_null(r, "the unreadable pod is in the pending report");
    cr_expect_str_eq(field(r, "reason"), "request");
    cr_expect_str_eq(field(r, "message"),
                     "request: resources.limits.gpusched.io/gpu-milli: 1500; a share is 1 to 999 "
                     "thousandths of one GPU (ask nvidia.com/gpu for whole GPUs)");
    json_decref(r);
    r = verdict("whole");
    cr_assert_not_null(r);
    cr_expect_str_eq(field(r, "reason"), "fits", "the other pod is placed: %s",
                     field(r, "message"));
    json_decref(r);
    /* the user fixes the pod (a new one under the same name): it is read and placed */
    put("too-big", "nvidia.com/gpu", "1");
    r = verdict("too-big");
    cr_assert_not_null(r);
    cr_expect_str_eq(field(r, "reason"), "fits", "%s", field(r, "message"));
    json_decref(r);
}
