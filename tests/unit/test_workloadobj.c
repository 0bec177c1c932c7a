/* Gangs as Kubernetes v1.37 defines them: the Workload API's PodGroup reader (as the Job
 * controller makes it, and its errors with field paths), the PodGroupInitiallyScheduled
 * condition's rules and patch, a pod's spec.schedulingGroup, and the scheduler's mapping of
 * pods to gangs from both sources (the Workload API and the PodGroup CRD). */
#include "base/error.h"
#include "core/cluster.h"
#include "formats/kubeobj.h"
#include "formats/workloadobj.h"
#include "sched/tenancy.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <string.h>

/* A PodGroup as kube-controller-manager v1.37.2's Job controller creates it for a Job with
 * spec.scheduling.schedulingPolicy.gang {} and parallelism 3 (job_scheduling_manager.go). */
#define JOB_PODGROUP                                                                               \
    "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","                         \
    "\"metadata\":{\"name\":\"train-2742811290-train-pgt-0-3196408046\",\"namespace\":\"ml\","     \
    "\"generation\":1,\"creationTimestamp\":\"2026-11-29T10:00:00Z\","                             \
    "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"train\","       \
    "\"uid\":\"u1\",\"controller\":true},{\"apiVersion\":\"scheduling.k8s.io/v1beta1\","           \
    "\"kind\":\"Workload\",\"name\":\"train-2742811290\",\"uid\":\"u2\"}]},"                       \
    "\"spec\":{\"workloadRef\":{\"workloadName\":\"train-2742811290\","                            \
    "\"templateName\":\"train-pgt-0\"},\"schedulingPolicy\":{\"gang\":{\"minCount\":3}},"          \
    "\"disruptionMode\":{\"single\":{}},\"priority\":0}}"

static int read_wpg(const char *text, struct gs_kube_podgroup *g, struct gs_error *err)
{
    json_t *o = json_of(text);
    gs_error_init(err);
    int rc = gs_kube_wpodgroup_read(o, g, err);
    json_decref(o);
    return rc;
}

Test(workloadobj, the_job_controllers_podgroup)
{
    struct gs_kube_podgroup g;
    struct gs_error err;
    cr_assert_eq(read_wpg(JOB_PODGROUP, &g, &err), 0, "%s", err.msg);
    cr_assert_eq(g.api, GS_PG_WORKLOAD);
    cr_assert_str_eq(g.ns, "ml");
    cr_assert_str_eq(g.name, "train-2742811290-train-pgt-0-3196408046");
    cr_assert_eq(g.min_member, 3);
    cr_assert(!g.basic);
    cr_assert(!g.disrupt_all);
    cr_assert_eq(g.priority, 0);
    cr_assert_eq(g.generation, 1);
    cr_assert_eq(g.timeout_s, 0);
    cr_assert_str_eq(g.workload, "train-2742811290");
    cr_assert_str_empty(g.unsupported);
    cr_assert_eq(g.cond, GS_PGC_NONE);
    cr_assert_float_eq(g.created_s, 1795946400.0, 1e-6);
}

Test(workloadobj, basic_policy_priority_disruption_all_and_the_condition)
{
    struct gs_kube_podgroup g;
    struct gs_error err;
    cr_assert_eq(read_wpg("{\"metadata\":{\"name\":\"b\",\"namespace\":\"ml\",\"generation\":4},"
                          "\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"priority\":1000,"
                          "\"disruptionMode\":{\"all\":{}}},\"status\":{\"conditions\":["
                          "{\"type\":\"Other\",\"status\":\"True\"},"
                          "{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\","
                          "\"reason\":\"Scheduled\",\"message\":\"\","
                          "\"lastTransitionTime\":\"2026-11-29T10:00:05Z\"}]}}",
                          &g, &err),
                 0, "%s", err.msg);
    cr_assert(g.basic);
    cr_assert_eq(g.min_member, 1);
    cr_assert_eq(g.priority, 1000);
    cr_assert(g.disrupt_all);
    cr_assert_eq(g.generation, 4);
    cr_assert_eq(g.cond, GS_PGC_TRUE);
    cr_assert_str_eq(g.cond_reason, "Scheduled");
    cr_assert_str_eq(g.cond_since, "2026-11-29T10:00:05Z");
}

Test(workloadobj, placement_gpusched_does_not_model_is_recorded)
{
    const char *cases[][2] = {
        {"\"schedulingConstraints\":{\"topology\":[{\"key\":\"topology.kubernetes.io/zone\"}]}",
         "spec.schedulingConstraints.topology"},
        {"\"resourceClaims\":[{\"name\":\"c\",\"resourceClaimName\":\"x\"}]",
         "spec.resourceClaims"},
        {"\"parentCompositePodGroupName\":\"top\"", "spec.parentCompositePodGroupName"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[600];
        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\"},\"spec\":{"
                 "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},%s}}",
                 cases[i][0]);
        struct gs_kube_podgroup g;
        struct gs_error err;
        cr_assert_eq(read_wpg(text, &g, &err), 0, "case %zu: %s", i, err.msg);
        cr_assert(strstr(g.unsupported, cases[i][1]), "case %zu: '%s' lacks '%s'", i, g.unsupported,
                  cases[i][1]);
    }
    /* empty lists constrain nothing */
    struct gs_kube_podgroup g;
    struct gs_error err;
    cr_assert_eq(read_wpg("{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\"},\"spec\":{"
                          "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},"
                          "\"schedulingConstraints\":{\"topology\":[]},\"resourceClaims\":[]}}",
                          &g, &err),
                 0, "%s", err.msg);
    cr_assert_str_empty(g.unsupported);
}

Test(workloadobj, bad_podgroups_name_the_field)
{
    char long_name[300];
    memset(long_name, 'a', 260);
    long_name[260] = '\0';
    char long_obj[600];
    snprintf(long_obj, sizeof(long_obj),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},\"spec\":{"
             "\"schedulingPolicy\":{\"basic\":{}}}}",
             long_name);
#define MD "{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\"}"
    const char *cases[][2] = {
        {"[]", "expected a JSON object"},
        {"{\"spec\":{}}", "metadata.name is required"},
        {long_obj, "metadata.name: longer than 253"},
        {"{\"metadata\":{\"name\":\"g\"},\"spec\":{}}", "PodGroup g: metadata.namespace"},
        {MD "}", "PodGroup ml/g: spec is required"},
        {MD ",\"spec\":[]}", "spec: expected an object"},
        {MD ",\"spec\":{}}", "spec.schedulingPolicy is required"},
        {MD ",\"spec\":{\"schedulingPolicy\":{}}}", "exactly one of gang and basic"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":2},\"basic\":{}}}}",
         "exactly one of gang and basic"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"gang\":{}}}}",
         "spec.schedulingPolicy.gang.minCount is required"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":0}}}}",
         "spec.schedulingPolicy.gang.minCount: expected an integer in 1..100000"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":\"3\"}}}}",
         "spec.schedulingPolicy.gang.minCount"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"gang\":7}}}",
         "spec.schedulingPolicy.gang: expected"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"priority\":3000000000}}",
         "spec.priority"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"disruptionMode\":{\"all\":{},"
            "\"single\":{}}}}",
         "spec.disruptionMode"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"workloadRef\":{}}}",
         "spec.workloadRef.workloadName is required"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"resourceClaims\":{}}}",
         "spec.resourceClaims: expected a list"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},"
            "\"schedulingConstraints\":{\"topology\":\"zone\"}}}",
         "spec.schedulingConstraints.topology: expected a list"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}}},\"status\":{\"conditions\":{}}}",
         "status.conditions: expected a list"},
        {MD ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}}},\"status\":{\"conditions\":[1]}}",
         "status.conditions[0]: expected an object"},
        {"{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\",\"generation\":-1},\"spec\":{}}",
         "metadata.generation"},
    };
#undef MD
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gs_kube_podgroup g;
        struct gs_error err;
        cr_assert_eq(read_wpg(cases[i][0], &g, &err), GS_EINVAL, "case %zu accepted", i);
        cr_assert(strstr(err.msg, cases[i][1]), "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i][1]);
    }
    /* more conditions than a PodGroup has */
    char many[2000] = "{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\"},\"spec\":{"
                      "\"schedulingPolicy\":{\"basic\":{}}},\"status\":{\"conditions\":[";
    for (int i = 0; i <= GS_WPG_MAX_CONDITIONS; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s{\"type\":\"T%d\"}",
                 i ? "," : "", i);
    snprintf(many + strlen(many), sizeof(many) - strlen(many), "]}}");
    struct gs_kube_podgroup g;
    struct gs_error err;
    cr_assert_eq(read_wpg(many, &g, &err), GS_EINVAL);
    cr_assert(strstr(err.msg, "status.conditions: more than"), "%s", err.msg);
}

Test(workloadobj, the_condition_changes_as_kube_scheduler_changes_it)
{
    struct gs_kube_podgroup g;
    struct gs_error err;
    cr_assert_eq(read_wpg(JOB_PODGROUP, &g, &err), 0, "%s", err.msg);
    /* none yet: either is news */
    cr_assert(gs_kube_wpodgroup_condition_changes(&g, false, "Unschedulable", "no room"));
    cr_assert(gs_kube_wpodgroup_condition_changes(&g, true, "Scheduled", ""));
    json_t *p = gs_kube_wpodgroup_condition_patch(&g, false, "Unschedulable", "no room",
                                                  "2026-11-29T10:01:00.000000Z");
    json_t *c = json_array_get(json_object_get(json_object_get(p, "status"), "conditions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "type")), GS_WPG_CONDITION);
    cr_assert_str_eq(json_string_value(json_object_get(c, "status")), "False");
    cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), "Unschedulable");
    cr_assert_str_eq(json_string_value(json_object_get(c, "message")), "no room");
    cr_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")),
                     "2026-11-29T10:01:00.000000Z");
    cr_assert_eq(json_integer_value(json_object_get(c, "observedGeneration")), 1);
    json_decref(p);

    /* False with that message: the same again is no change, another message is */
    cr_assert_eq(read_wpg("{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\",\"generation\":2},"
                          "\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}},"
                          "\"status\":{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\","
                          "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":"
                          "\"no room\",\"lastTransitionTime\":\"2026-11-29T10:01:00Z\"}]}}",
                          &g, &err),
                 0, "%s", err.msg);
    cr_assert(!gs_kube_wpodgroup_condition_changes(&g, false, "Unschedulable", "no room"));
    cr_assert(gs_kube_wpodgroup_condition_changes(&g, false, "Unschedulable", "other"));
    cr_assert(gs_kube_wpodgroup_condition_changes(&g, false, "SchedulerError", "no room"));
    /* still False: the transition time stays */
    p = gs_kube_wpodgroup_condition_patch(&g, false, "Unschedulable", "other", "later");
    c = json_array_get(json_object_get(json_object_get(p, "status"), "conditions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")),
                     "2026-11-29T10:01:00Z");
    cr_assert_eq(json_integer_value(json_object_get(c, "observedGeneration")), 2);
    json_decref(p);
    /* to True: a transition */
    cr_assert(gs_kube_wpodgroup_condition_changes(&g, true, "Scheduled", ""));
    p = gs_kube_wpodgroup_condition_patch(&g, true, "Scheduled", "", "later");
    c = json_array_get(json_object_get(json_object_get(p, "status"), "conditions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "status")), "True");
    cr_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")), "later");
    json_decref(p);

    /* True is for good: never back to False */
    g.cond = GS_PGC_TRUE;
    snprintf(g.cond_reason, sizeof(g.cond_reason), "Scheduled");
    cr_assert(!gs_kube_wpodgroup_condition_changes(&g, false, "Unschedulable", "evicted"));
    cr_assert(!gs_kube_wpodgroup_condition_changes(&g, false, "SchedulerError", "x"));
}

Test(workloadobj, a_pods_scheduling_group)
{
    json_t *o = json_of("{\"metadata\":{\"name\":\"train-0-abcde\",\"namespace\":\"ml\"},"
                        "\"spec\":{\"schedulingGroup\":{\"podGroupName\":\"train-pg\"},"
                        "\"containers\":[{\"name\":\"c\"}]}}");
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, &p, &err), 0, "%s", err.msg);
    cr_assert_str_eq(p.group, "train-pg");
    cr_assert_str_empty(p.refused);
    json_decref(o);

    char long_name[300];
    memset(long_name, 'g', 260);
    long_name[260] = '\0';
    char long_sg[400];
    snprintf(long_sg, sizeof(long_sg), "{\"podGroupName\":\"%s\"}", long_name);
    const char *cases[][2] = {
        {"\"x\"", "spec.schedulingGroup: expected an object"},
        {"{}", "spec.schedulingGroup: no podGroupName"},
        {"{\"podGroupName\":5}", "spec.schedulingGroup.podGroupName: expected a name"},
        {"{\"podGroupName\":\"\"}", "spec.schedulingGroup.podGroupName: expected a name"},
        {long_sg, "spec.schedulingGroup.podGroupName: longer than 253"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[800];
        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},"
                 "\"spec\":{\"schedulingGroup\":%s,\"containers\":[{\"name\":\"c\"}]}}",
                 cases[i][0]);
        o = json_of(text);
        /* the pod is read (it counts where it runs) but refused a place, saying why */
        cr_assert_eq(gs_kube_pod_read(o, &p, &err), 0, "case %zu: %s", i, err.msg);
        cr_assert_str_empty(p.group, "case %zu", i);
        cr_assert(strstr(p.refused, cases[i][1]), "case %zu: '%s' lacks '%s'", i, p.refused,
                  cases[i][1]);
        json_decref(o);
    }
}

/* A pod of namespace ml with a label and a scheduling group (either may be NULL). */
static void mkpod(struct gs_kube_pod *p, const char *name, const char *label, const char *group,
                  int prio, const char *node)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->ns, sizeof(p->ns), "ml");
    snprintf(p->name, sizeof(p->name), "%s", name);
    if (label) {
        snprintf(p->labels[0].key, sizeof(p->labels[0].key), GS_POD_GROUP_LABEL);
        snprintf(p->labels[0].val, sizeof(p->labels[0].val), "%s", label);
        p->nlabels = 1;
    }
    if (group)
        snprintf(p->group, sizeof(p->group), "%s", group);
    p->priority = prio;
    if (node)
        snprintf(p->node, sizeof(p->node), "%s", node);
    snprintf(p->phase, sizeof(p->phase), node ? "Running" : "Pending");
}

Test(workloadobj, pods_map_to_gangs_from_both_sources)
{
    struct gs_kube_podgroup groups[4];
    struct gs_error err;
    gs_error_init(&err);
    json_t *o = json_of("{\"metadata\":{\"name\":\"crd\",\"namespace\":\"ml\"},"
                        "\"spec\":{\"minMember\":2}}");
    cr_assert_eq(gs_kube_podgroup_read(o, &groups[0], &err), 0, "%s", err.msg);
    json_decref(o);
    cr_assert_eq(read_wpg("{\"metadata\":{\"name\":\"gang\",\"namespace\":\"ml\"},\"spec\":{"
                          "\"schedulingPolicy\":{\"gang\":{\"minCount\":3}},\"priority\":5}}",
                          &groups[1], &err),
                 0, "%s", err.msg);
    cr_assert_eq(read_wpg("{\"metadata\":{\"name\":\"basic\",\"namespace\":\"ml\"},\"spec\":{"
                          "\"schedulingPolicy\":{\"basic\":{}}}}",
                          &groups[2], &err),
                 0, "%s", err.msg);
    cr_assert_eq(read_wpg("{\"metadata\":{\"name\":\"whole\",\"namespace\":\"ml\"},\"spec\":{"
                          "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}},"
                          "\"disruptionMode\":{\"all\":{}}}}",
                          &groups[3], &err),
                 0, "%s", err.msg);
    struct gs_policy_objs po;
    memset(&po, 0, sizeof(po));
    po.groups = groups;
    po.ngroups = 4;

    struct gs_kube_pod pods[9];
    mkpod(&pods[0], "crd-0", "crd", NULL, 0, NULL);
    mkpod(&pods[1], "gang-0", NULL, "gang", 5, NULL);
    mkpod(&pods[2], "basic-0", NULL, "basic", 0, NULL);
    mkpod(&pods[3], "both-0", "crd", "gang", 5, NULL); /* spec.schedulingGroup wins */
    mkpod(&pods[4], "lost-0", NULL, "missing", 0, NULL);
    mkpod(&pods[5], "label-0", "gang", NULL, 0, NULL); /* the label names CRD groups only */
    mkpod(&pods[6], "run-gang", NULL, "gang", 5, "n0");
    mkpod(&pods[7], "run-whole", NULL, "whole", 0, "n0");
    mkpod(&pods[8], "run-crd", "crd", NULL, 0, "n0");
    struct gs_alloc alloc[9];
    int8_t placed[9] = {0, 0, 0, 0, 0, 0, 1, 1, 1};
    memset(alloc, 0, sizeof(alloc));
    struct gs_cluster c;
    gs_cluster_init(&c);
    struct gs_tenancy ty;
    cr_assert_eq(gs_tenancy_build(&ty, &po, &c, pods, sizeof(pods[0]), 9, alloc, placed), 0);
    const int want[9] = {0, 1, -1, 1, -1, -1, 1, 3, 0};
    for (int i = 0; i < 9; i++)
        cr_assert_eq(gs_tenancy_pod_gang(&ty, i), want[i], "pod %s: gang %d, want %d", pods[i].name,
                     gs_tenancy_pod_gang(&ty, i), want[i]);
    /* running members: a Workload API gang's alone unless disruptionMode all; the CRD's whole */
    cr_assert_eq(ty.nrun, 3);
    for (int v = 0; v < ty.nrun; v++) {
        int i = gs_tenancy_run_pod(&ty, v);
        int gang = i == 6 ? -1 : i == 7 ? 3 : 0;
        cr_assert_eq(ty.run[v].gang, gang, "running %s: gang %d, want %d", pods[i].name,
                     ty.run[v].gang, gang);
    }
    gs_tenancy_release(&ty);
    gs_cluster_release(&c);

    char msg[400];
    cr_assert_eq(gs_policy_group_refusal(&po, &pods[0], msg, sizeof(msg)), 0);
    cr_assert_eq(gs_policy_group_refusal(&po, &pods[1], msg, sizeof(msg)), 0);
    cr_assert_eq(gs_policy_group_refusal(&po, &pods[4], msg, sizeof(msg)), 1);
    cr_assert(strstr(msg, "PodGroup ml/missing (spec.schedulingGroup.podGroupName) does not "
                          "exist"),
              "%s", msg);
    /* a member whose priority is not the group's: kube-scheduler's words */
    pods[1].priority = 7;
    cr_assert_eq(gs_policy_group_refusal(&po, &pods[1], msg, sizeof(msg)), 2);
    cr_assert(strstr(msg, "should have the same priority as the pod group's priority, got 7 "
                          "and 5"),
              "%s", msg);
    snprintf(groups[1].unsupported, sizeof(groups[1].unsupported), "spec.resourceClaims");
    pods[1].priority = 5;
    cr_assert_eq(gs_policy_group_refusal(&po, &pods[1], msg, sizeof(msg)), 2);
    cr_assert(strstr(msg, "sets spec.resourceClaims, which gpusched does not model"), "%s", msg);
    cr_assert_eq(gs_policy_find_group(&po, GS_PG_CRD, "ml", "gang"), -1);
    cr_assert_eq(gs_policy_find_group(&po, GS_PG_WORKLOAD, "ml", "gang"), 1);
    cr_assert_eq(gs_policy_find_group(&po, GS_PG_WORKLOAD, "other", "gang"), -1);
}

Test(workloadobj, the_crd_keeps_its_name_bound)
{
    char text[400];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"%0*d\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":2}}",
             GS_NAME_MAX, 0);
    json_t *o = json_of(text);
    struct gs_kube_podgroup g;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_podgroup_read(o, &g, &err), GS_EINVAL);
    cr_assert(strstr(err.msg, "metadata.name: longer than 63"), "%s", err.msg);
    cr_assert_eq(g.api, GS_PG_CRD);
    json_decref(o);
}
