/* Kubernetes placement semantics (core/constraints): each case is a small cluster, the pods
 * already placed and an incoming pod, all as Kubernetes JSON (single quotes for readability),
 * and the nodes kube-scheduler v1.37 would accept, or the scores it would give. */
#include "base/error.h"
#include "core/constraints.h"
#include "formats/podspec.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 32

struct world {
    struct gs_cluster c;
    struct gs_kstate *s;
    struct gs_kprep *prep;
    struct gs_kpod pods[MAXP];
    int handles[MAXP];
    int npods;
    struct gs_kpod in;
};

/* "name k=v k=v": every node also gets kubernetes.io/hostname=name */
static void add_nodes(struct world *w, const char *const *specs)
{
    for (int i = 0; specs[i]; i++) {
        char buf[512];
        snprintf(buf, sizeof(buf), "%s", specs[i]);
        char *save = NULL, *tok = strtok_r(buf, " ", &save);
        int id = gs_cluster_add_node(&w->c, tok, -1, 0, 64000, 256000, GS_GPU_WHOLE, 0, NULL);
        cr_assert_geq(id, 0);
        cr_assert_eq(gs_node_set_label(&w->c.nodes[id], GS_KHOSTNAME_KEY, tok), 0);
        while ((tok = strtok_r(NULL, " ", &save))) {
            char *eq = strchr(tok, '=');
            cr_assert_not_null(eq, "bad node spec '%s'", specs[i]);
            *eq = '\0';
            cr_assert_eq(gs_node_set_label(&w->c.nodes[id], tok, eq + 1), 0);
        }
    }
}

static void read_pod(const char *squoted, struct gs_kpod *p)
{
    char *j = strdup(squoted);
    for (char *q = j; *q; q++)
        if (*q == '\'')
            *q = '"';
    json_error_t je;
    json_t *o = json_loads(j, 0, &je);
    cr_assert_not_null(o, "bad test JSON: %s: %s", je.text, j);
    struct gs_error err;
    gs_error_init(&err);
    gs_kpod_init(p);
    int rc = gs_podspec_read(o, p, &err);
    cr_assert_eq(rc, 0, "podspec: %s", err.msg);
    json_decref(o);
    free(j);
}

static int node_id(const struct world *w, const char *name)
{
    for (int i = 0; i < w->c.nnodes; i++)
        if (strcmp(w->c.nodes[i].name, name) == 0)
            return i;
    cr_assert_fail("no node '%s'", name);
    return -1;
}

struct placed {
    const char *pod; /* JSON */
    const char *node;
};

static void world_init(struct world *w, const char *const *nodes, const struct placed *pl)
{
    memset(w, 0, sizeof(*w));
    gs_cluster_init(&w->c);
    add_nodes(w, nodes);
    cr_assert_eq(gs_kstate_new(&w->c, &w->s), 0);
    cr_assert_eq(gs_kprep_new(&w->prep), 0);
    for (int i = 0; pl && pl[i].pod; i++) {
        cr_assert_lt(w->npods, MAXP);
        read_pod(pl[i].pod, &w->pods[w->npods]);
        int h = gs_kstate_add_pod(w->s, &w->c, &w->pods[w->npods], node_id(w, pl[i].node));
        cr_assert_geq(h, 0);
        w->handles[w->npods++] = h;
    }
    gs_kpod_init(&w->in);
}

static void world_release(struct world *w)
{
    gs_kprep_free(w->prep);
    gs_kstate_free(w->s);
    for (int i = 0; i < w->npods; i++)
        gs_kpod_release(&w->pods[i]);
    gs_kpod_release(&w->in);
    gs_cluster_release(&w->c);
}

static bool no_taint_tolerated(void *ctx, int node)
{
    const struct world *w = ctx;
    return gs_node_label(&w->c.nodes[node], "tainted") == NULL;
}

/* The nodes the pod fits, "n1,n3" ("-" for none), and the reason of the first refused one. */
static void fits(struct world *w, const char *pod, char *out, size_t n, char *why, size_t wn)
{
    gs_kpod_release(&w->in);
    read_pod(pod, &w->in);
    cr_assert_eq(gs_kprep_compute(w->prep, w->s, &w->c, &w->in, no_taint_tolerated, w), 0);
    out[0] = '\0';
    why[0] = '\0';
    size_t len = 0;
    for (int i = 0; i < w->c.nnodes; i++) {
        char r[128];
        if (gs_kstate_filter(w->prep, w->s, &w->c, i, r, sizeof(r)))
            len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", w->c.nodes[i].name);
        else if (!why[0])
            snprintf(why, wn, "%s", r);
    }
    if (!out[0])
        snprintf(out, n, "-");
}

#define POD(labels, spec)                                                                          \
    "{'metadata':{'name':'p','namespace':'default','labels':{" labels "}},'spec':{" spec "}}"
#define PODNS(ns, labels, spec)                                                                    \
    "{'metadata':{'name':'p','namespace':'" ns "','labels':{" labels "}},'spec':{" spec "}}"
#define ANTI(sel, key)                                                                             \
    "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"           \
    "'labelSelector':{'matchLabels':{" sel "}},'topologyKey':'" key "'}]}}"
#define AFF(sel, key)                                                                              \
    "'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"               \
    "'labelSelector':{'matchLabels':{" sel "}},'topologyKey':'" key "'}]}}"
#define REQ(expr)                                                                                  \
    "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"               \
    "'nodeSelectorTerms':[" expr "]}}}"
#define SPREAD(skew, key, when, sel, extra)                                                        \
    "'topologySpreadConstraints':[{'maxSkew':" #skew ",'topologyKey':'" key                        \
    "','whenUnsatisfiable':'" when "','labelSelector':{'matchLabels':{" sel "}}" extra "}]"
#define ZONE "topology.kubernetes.io/zone"
#define HOST "kubernetes.io/hostname"

struct fcase {
    const char *name;
    const char *nodes[8];
    struct placed placed[8];
    const char *pod;
    const char *want;     /* nodes that fit */
    const char *want_why; /* reason of the first refused node ("" when all fit) */
};

static void run_fcases(const struct fcase *cs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct world w;
        world_init(&w, cs[i].nodes, cs[i].placed);
        char got[256], why[256];
        fits(&w, cs[i].pod, got, sizeof(got), why, sizeof(why));
        cr_expect_str_eq(got, cs[i].want, "%s: fits %s, want %s", cs[i].name, got, cs[i].want);
        cr_expect_str_eq(why, cs[i].want_why, "%s: reason '%s', want '%s'", cs[i].name, why,
                         cs[i].want_why);
        world_release(&w);
    }
}

#define NA "node(s) didn't match Pod's node affinity/selector"

static const struct fcase node_affinity_cases[] = {
    {"node_selector_needs_every_label",
     {"n1 gpu=h100 pool=a", "n2 gpu=h100", "n3 gpu=a100 pool=a"},
     {{0}},
     POD("", "'nodeSelector':{'gpu':'h100','pool':'a'}"),
     "n1",
     NA},
    {"required_terms_are_ored_and_expressions_anded",
     {"n1 gpu=h100 zone=a", "n2 gpu=h100 zone=b", "n3 gpu=a100 zone=b"},
     {{0}},
     POD("", REQ("{'matchExpressions':[{'key':'gpu','operator':'In','values':['h100']},"
                 "{'key':'zone','operator':'In','values':['a']}]},"
                 "{'matchExpressions':[{'key':'gpu','operator':'In','values':['a100']}]}")),
     "n1,n3",
     NA},
    {"not_in_accepts_nodes_without_the_label",
     {"n1 gpu=h100", "n2", "n3 gpu=a100"},
     {{0}},
     POD("", REQ("{'matchExpressions':[{'key':'gpu','operator':'NotIn','values':['h100']}]}")),
     "n2,n3",
     NA},
    {"exists_and_does_not_exist",
     {"n1 gpu=h100 spot=true", "n2 gpu=h100", "n3"},
     {{0}},
     POD("", REQ("{'matchExpressions':[{'key':'gpu','operator':'Exists'},"
                 "{'key':'spot','operator':'DoesNotExist'}]}")),
     "n2",
     NA},
    {"gt_and_lt_compare_numeric_labels_and_refuse_non_numbers",
     {"n1 gpus=8", "n2 gpus=4", "n3 gpus=eight", "n4 gpus=16", "n5"},
     {{0}},
     POD("", REQ("{'matchExpressions':[{'key':'gpus','operator':'Gt','values':['4']},"
                 "{'key':'gpus','operator':'Lt','values':['16']}]}")),
     "n1",
     NA},
    {"match_fields_metadata_name",
     {"n1", "n2", "n3"},
     {{0}},
     POD("", REQ("{'matchFields':[{'key':'metadata.name','operator':'In','values':['n2']}]}")),
     "n2",
     NA},
    {"an_empty_term_matches_no_node", {"n1", "n2"}, {{0}}, POD("", REQ("{}")), "-", NA},
    {"node_selector_and_affinity_must_both_hold",
     {"n1 pool=a zone=x", "n2 pool=a zone=y", "n3 pool=b zone=x"},
     {{0}},
     POD("", "'nodeSelector':{'pool':'a'}," REQ(
                 "{'matchExpressions':[{'key':'zone','operator':'In','values':['x']}]}")),
     "n1",
     NA},
    {"node_name_pins_the_pod",
     {"n1", "n2"},
     {{0}},
     POD("", "'nodeName':'n2'"),
     "n2",
     "node(s) didn't match the requested node name"},
};

Test(constraints, node_affinity_and_selector)
{
    run_fcases(node_affinity_cases, sizeof(node_affinity_cases) / sizeof(node_affinity_cases[0]));
}

#define PORTS       "node(s) didn't have free ports for the requested pod ports"
#define CPORT(spec) "'containers':[{'name':'c','ports':[" spec "]}]"

static const struct fcase port_cases[] = {
    {"same_host_port_and_protocol_conflict",
     {"n1", "n2"},
     {{POD("", CPORT("{'containerPort':80,'hostPort':8080}")), "n1"}, {0}},
     POD("", CPORT("{'containerPort':80,'hostPort':8080,'protocol':'TCP'}")),
     "n2",
     PORTS},
    {"other_protocol_does_not_conflict",
     {"n1"},
     {{POD("", CPORT("{'containerPort':80,'hostPort':8080}")), "n1"}, {0}},
     POD("", CPORT("{'containerPort':80,'hostPort':8080,'protocol':'UDP'}")),
     "n1",
     ""},
    {"distinct_host_ips_do_not_conflict",
     {"n1"},
     {{POD("", CPORT("{'containerPort':80,'hostPort':8080,'hostIP':'10.0.0.1'}")), "n1"}, {0}},
     POD("", CPORT("{'containerPort':80,'hostPort':8080,'hostIP':'10.0.0.2'}")),
     "n1",
     ""},
    {"wildcard_request_conflicts_with_a_specific_ip_in_use",
     {"n1", "n2"},
     {{POD("", CPORT("{'containerPort':80,'hostPort':8080,'hostIP':'10.0.0.1'}")), "n1"}, {0}},
     POD("", CPORT("{'containerPort':80,'hostPort':8080}")),
     "n2",
     PORTS},
    {"specific_ip_request_conflicts_with_wildcard_in_use",
     {"n1", "n2"},
     {{POD("", CPORT("{'containerPort':80,'hostPort':8080,'hostIP':'0.0.0.0'}")), "n1"}, {0}},
     POD("", CPORT("{'containerPort':80,'hostPort':8080,'hostIP':'10.0.0.2'}")),
     "n2",
     PORTS},
    {"sidecar_init_container_ports_count",
     {"n1", "n2"},
     {{POD("", "'initContainers':[{'name':'s','restartPolicy':'Always','ports':[{"
               "'containerPort':9,'hostPort':9100}]}]," CPORT("")),
       "n1"},
      {0}},
     POD("", CPORT("{'containerPort':9,'hostPort':9100}")),
     "n2",
     PORTS},
    {"plain_init_container_ports_do_not_count",
     {"n1"},
     {{POD("",
           "'initContainers':[{'name':'s','ports':[{'containerPort':9,'hostPort':9100}]}]," CPORT(
               "")),
       "n1"},
      {0}},
     POD("", CPORT("{'containerPort':9,'hostPort':9100}")),
     "n1",
     ""},
    {"container_port_without_host_port_is_free",
     {"n1"},
     {{POD("", CPORT("{'containerPort':8080}")), "n1"}, {0}},
     POD("", CPORT("{'containerPort':8080}")),
     "n1",
     ""},
};

Test(constraints, node_ports)
{
    run_fcases(port_cases, sizeof(port_cases) / sizeof(port_cases[0]));
}

#define ANTI_R  "node(s) didn't match pod anti-affinity rules"
#define AFF_R   "node(s) didn't match pod affinity rules"
#define EXIST_R "node(s) didn't satisfy existing pods anti-affinity rules"
#define ZNODES                                                                                     \
    {                                                                                              \
        "n1 " ZONE "=a", "n2 " ZONE "=a", "n3 " ZONE "=b", "n4"                                    \
    }

static const struct fcase interpod_cases[] = {
    {"anti_affinity_per_host_avoids_nodes_with_a_match",
     ZNODES,
     {{POD("'app':'web'", ""), "n1"}, {0}},
     POD("'app':'web'", ANTI("'app':'web'", HOST)),
     "n2,n3,n4",
     ANTI_R},
    {"anti_affinity_per_zone_avoids_the_whole_zone_and_ignores_unlabelled_nodes",
     ZNODES,
     {{POD("'app':'web'", ""), "n1"}, {0}},
     POD("'app':'web'", ANTI("'app':'web'", ZONE)),
     "n3,n4",
     ANTI_R},
    {"existing_pods_anti_affinity_is_symmetric",
     ZNODES,
     {{POD("'app':'db'", ANTI("'app':'web'", ZONE)), "n3"}, {0}},
     POD("'app':'web'", ""),
     "n1,n2,n4",
     EXIST_R},
    {"existing_anti_affinity_of_another_namespace_applies_only_to_its_namespace",
     ZNODES,
     {{PODNS("other", "'app':'db'", ANTI("'app':'web'", ZONE)), "n3"}, {0}},
     POD("'app':'web'", ""),
     "n1,n2,n3,n4",
     ""},
    {"affinity_goes_where_a_matching_pod_runs",
     ZNODES,
     {{POD("'app':'db'", ""), "n3"}, {0}},
     POD("'app':'web'", AFF("'app':'db'", ZONE)),
     "n3",
     AFF_R},
    {"first_pod_with_affinity_to_itself_may_go_to_any_node_with_the_key",
     ZNODES,
     {{0}},
     POD("'app':'web'", AFF("'app':'web'", ZONE)),
     "n1,n2,n3",
     AFF_R},
    {"affinity_to_absent_pods_not_matching_itself_fits_nowhere",
     ZNODES,
     {{0}},
     POD("'app':'web'", AFF("'app':'db'", ZONE)),
     "-",
     AFF_R},
    {"self_affinity_exception_ends_when_a_matching_pod_exists",
     ZNODES,
     {{POD("'app':'web'", ""), "n3"}, {0}},
     POD("'app':'web'", AFF("'app':'web'", ZONE)),
     "n3",
     AFF_R},
    {"affinity_ignores_pods_of_other_namespaces_by_default",
     ZNODES,
     {{PODNS("other", "'app':'db'", ""), "n3"}, {0}},
     POD("'app':'web'", AFF("'app':'db'", ZONE)),
     "-",
     AFF_R},
    {"affinity_namespaces_list",
     ZNODES,
     {{PODNS("other", "'app':'db'", ""), "n3"}, {0}},
     POD("'app':'web'",
         "'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"
         "'labelSelector':{'matchLabels':{'app':'db'}},'namespaces':['other'],'topologyKey':'" ZONE
         "'}]}}"),
     "n3",
     AFF_R},
    {"empty_namespace_selector_means_every_namespace",
     ZNODES,
     {{PODNS("other", "'app':'db'", ""), "n1"}, {0}},
     POD("'app':'web'",
         "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"
         "'labelSelector':{'matchLabels':{'app':'db'}},'namespaceSelector':{},'topologyKey':'" ZONE
         "'}]}}"),
     "n3,n4",
     ANTI_R},
    {"namespace_selector_on_metadata_name",
     ZNODES,
     {{PODNS("team-a", "'app':'db'", ""), "n1"}, {PODNS("team-b", "'app':'db'", ""), "n3"}, {0}},
     POD("'app':'web'",
         "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"
         "'labelSelector':{'matchLabels':{'app':'db'}},'namespaceSelector':{'matchLabels':{"
         "'kubernetes.io/metadata.name':'team-b'}},'topologyKey':'" ZONE "'}]}}"),
     "n1,n2,n4",
     ANTI_R},
    {"a_term_without_label_selector_matches_no_pod",
     ZNODES,
     {{POD("'app':'web'", ""), "n1"}, {0}},
     POD("'app':'web'",
         "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"
         "'topologyKey':'" HOST "'}]}}"),
     "n1,n2,n3,n4",
     ""},
    {"an_empty_label_selector_matches_every_pod",
     ZNODES,
     {{POD("'app':'x'", ""), "n1"}, {0}},
     POD("'app':'web'",
         "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"
         "'labelSelector':{},'topologyKey':'" HOST "'}]}}"),
     "n2,n3,n4",
     ANTI_R},
    {"terminating_pods_still_count_for_anti_affinity",
     ZNODES,
     {{"{'metadata':{'name':'old','namespace':'default','deletionTimestamp':'2026-01-01T00:00:"
       "00Z','labels':{'app':'web'}},'spec':{}}",
       "n3"},
      {0}},
     POD("'app':'web'", ANTI("'app':'web'", ZONE)),
     "n1,n2,n4",
     ANTI_R},
    {"affinity_terms_must_all_match_the_same_pod",
     {"n1 " ZONE "=a", "n2 " ZONE "=b"},
     {{POD("'app':'db'", ""), "n1"}, {POD("'tier':'cache'", ""), "n1"}, {0}},
     POD("'app':'web'",
         "'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
         "{'labelSelector':{'matchLabels':{'app':'db'}},'topologyKey':'" ZONE "'},"
         "{'labelSelector':{'matchLabels':{'tier':'cache'}},'topologyKey':'" ZONE "'}]}}"),
     "-",
     AFF_R},
    {"mismatch_label_keys_exclude_the_pods_own_tenant",
     ZNODES,
     {{POD("'app':'web','tenant':'t1'", ""), "n1"},
      {POD("'app':'web','tenant':'t2'", ""), "n3"},
      {0}},
     POD("'app':'web','tenant':'t1'",
         "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"
         "'labelSelector':{'matchLabels':{'app':'web'}},'mismatchLabelKeys':['tenant'],"
         "'topologyKey':'" ZONE "'}]}}"),
     "n1,n2,n4",
     ANTI_R},
};

Test(constraints, inter_pod_affinity)
{
    run_fcases(interpod_cases, sizeof(interpod_cases) / sizeof(interpod_cases[0]));
}

#define SPREAD_R "node(s) didn't match pod topology spread constraints"
#define WEB      POD("'app':'web'", "")

static const struct fcase spread_cases[] = {
    {"max_skew_one_goes_to_the_emptiest_zone",
     {"n1 " ZONE "=a", "n2 " ZONE "=b", "n3 " ZONE "=c"},
     {{WEB, "n1"}, {WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'", SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", "")),
     "n3",
     SPREAD_R},
    {"max_skew_two_allows_one_more",
     {"n1 " ZONE "=a", "n2 " ZONE "=b", "n3 " ZONE "=c"},
     {{WEB, "n1"}, {WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'", SPREAD(2, ZONE, "DoNotSchedule", "'app':'web'", "")),
     "n2,n3",
     SPREAD_R},
    {"a_node_without_the_key_is_refused",
     {"n1 " ZONE "=a", "n2"},
     {{0}},
     POD("'app':'web'", SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", "")),
     "n1",
     SPREAD_R " (missing required label)"},
    {"min_domains_above_the_domain_count_makes_the_minimum_zero",
     {"n1 " ZONE "=a", "n2 " ZONE "=b"},
     {{WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'", SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", ",'minDomains':3")),
     "-",
     SPREAD_R},
    {"min_domains_met_keeps_the_real_minimum",
     {"n1 " ZONE "=a", "n2 " ZONE "=b"},
     {{WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'", SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", ",'minDomains':2")),
     "n1,n2",
     ""},
    {"node_affinity_policy_honor_leaves_out_domains_the_pod_cannot_use",
     {"n1 " ZONE "=a pool=x", "n2 " ZONE "=b pool=x", "n3 " ZONE "=c pool=y"},
     {{WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'",
         "'nodeSelector':{'pool':'x'}," SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", "")),
     "n1,n2",
     NA},
    {"node_affinity_policy_ignore_counts_every_domain",
     {"n1 " ZONE "=a pool=x", "n2 " ZONE "=b pool=x", "n3 " ZONE "=c pool=y"},
     {{WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'",
         "'nodeSelector':{'pool':'x'}," SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'",
                                               ",'nodeAffinityPolicy':'Ignore'")),
     "-",
     SPREAD_R},
    {"node_taints_policy_honor_leaves_out_untolerated_nodes",
     {"n1 " ZONE "=a", "n2 " ZONE "=b", "n3 " ZONE "=c tainted=yes"},
     {{WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'",
         SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", ",'nodeTaintsPolicy':'Honor'")),
     "n1,n2,n3", /* n3 is no domain: 0 + 1 - 1; the taint itself is TaintToleration's */
     ""},
    {"node_taints_policy_ignore_counts_untolerated_nodes",
     {"n1 " ZONE "=a", "n2 " ZONE "=b", "n3 " ZONE "=c tainted=yes"},
     {{WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'", SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", "")),
     "n3",
     SPREAD_R},
    {"a_pod_outside_its_selector_adds_nothing_to_the_skew",
     {"n1 " ZONE "=a", "n2 " ZONE "=b"},
     {{WEB, "n1"}, {0}},
     POD("'app':'batch'", SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", "")),
     "n1,n2",
     ""},
    {"other_namespaces_and_terminating_pods_are_not_counted",
     {"n1 " ZONE "=a", "n2 " ZONE "=b"},
     {{PODNS("other", "'app':'web'", ""), "n1"},
      {"{'metadata':{'name':'old','namespace':'default','deletionTimestamp':'2026-01-01T00:00:"
       "00Z','labels':{'app':'web'}},'spec':{}}",
       "n1"},
      {0}},
     POD("'app':'web'", SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", "")),
     "n1,n2",
     ""},
    {"match_label_keys_count_only_the_same_revision",
     {"n1 " ZONE "=a", "n2 " ZONE "=b"},
     {{POD("'app':'web','pod-template-hash':'old'", ""), "n1"},
      {POD("'app':'web','pod-template-hash':'old'", ""), "n1"},
      {0}},
     POD("'app':'web','pod-template-hash':'new'",
         SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'",
                ",'matchLabelKeys':['pod-template-hash']")),
     "n1,n2",
     ""},
    {"schedule_anyway_never_refuses",
     {"n1 " ZONE "=a", "n2"},
     {{WEB, "n1"}, {WEB, "n1"}, {0}},
     POD("'app':'web'", SPREAD(1, ZONE, "ScheduleAnyway", "'app':'web'", "")),
     "n1,n2",
     ""},
    {"hostname_spread_with_anti_affinity_style_skew",
     {"n1", "n2", "n3"},
     {{WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'", SPREAD(1, HOST, "DoNotSchedule", "'app':'web'", "")),
     "n3",
     SPREAD_R},
};

Test(constraints, topology_spread)
{
    run_fcases(spread_cases, sizeof(spread_cases) / sizeof(spread_cases[0]));
}

/* ---- scores ---- */

struct scase {
    const char *name;
    const char *nodes[8];
    struct placed placed[8];
    const char *pod;
    int64_t node_affinity[8], inter_pod[8], spread[8]; /* per node, all nodes feasible */
};

static void run_scases(const struct scase *cs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct world w;
        world_init(&w, cs[i].nodes, cs[i].placed);
        gs_kpod_release(&w.in);
        read_pod(cs[i].pod, &w.in);
        cr_assert_eq(gs_kprep_compute(w.prep, w.s, &w.c, &w.in, NULL, NULL), 0);
        int32_t nodes[8];
        struct gs_kscore sc[8];
        for (int k = 0; k < w.c.nnodes; k++)
            nodes[k] = k;
        cr_assert_eq(gs_kprep_score(w.prep, w.s, &w.c, nodes, w.c.nnodes, sc, NULL, NULL), 0);
        for (int k = 0; k < w.c.nnodes; k++) {
            cr_expect_eq(sc[k].node_affinity, cs[i].node_affinity[k],
                         "%s: node %d node affinity %lld, want %lld", cs[i].name, k,
                         (long long)sc[k].node_affinity, (long long)cs[i].node_affinity[k]);
            cr_expect_eq(sc[k].inter_pod, cs[i].inter_pod[k],
                         "%s: node %d inter-pod %lld, want %lld", cs[i].name, k,
                         (long long)sc[k].inter_pod, (long long)cs[i].inter_pod[k]);
            cr_expect_eq(sc[k].spread, cs[i].spread[k], "%s: node %d spread %lld, want %lld",
                         cs[i].name, k, (long long)sc[k].spread, (long long)cs[i].spread[k]);
        }
        world_release(&w);
    }
}

#define PREF_NODE(w, expr) "{'weight':" #w ",'preference':{'matchExpressions':[" expr "]}}"
#define PAFF(kind, w, sel, key)                                                                    \
    "'affinity':{'" kind "':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':" #w     \
    ",'podAffinityTerm':{'labelSelector':{'matchLabels':{" sel "}},'topologyKey':'" key "'}}]}}"

static const struct scase score_cases[] = {
    {"preferred_node_affinity_sums_weights_and_scales_to_the_best",
     {"n1 " ZONE "=a gpu=h100", "n2 " ZONE "=b gpu=h100", "n3 " ZONE "=a"},
     {{0}},
     POD("", "'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':"
             "[" PREF_NODE(20, "{'key':'" ZONE "','operator':'In','values':['a']}") "," PREF_NODE(
                 60, "{'key':'gpu','operator':'Exists'}") "]}}"),
     {100, 75, 25},
     {0, 0, 0},
     {0, 0, 0}},
    {"preferred_pod_affinity_favours_the_zone_of_matching_pods",
     {"n1 " ZONE "=a", "n2 " ZONE "=a", "n3 " ZONE "=b"},
     {{POD("'app':'db'", ""), "n1"}, {0}},
     POD("'app':'web'", PAFF("podAffinity", 50, "'app':'db'", ZONE)),
     {0, 0, 0},
     {100, 100, 0},
     {0, 0, 0}},
    {"preferred_anti_affinity_disfavours_the_zone",
     {"n1 " ZONE "=a", "n2 " ZONE "=b", "n3 " ZONE "=b"},
     {{POD("'app':'web'", ""), "n1"},
      {POD("'app':'web'", ""), "n2"},
      {POD("'app':'web'", ""), "n1"},
      {0}},
     POD("'app':'web'", PAFF("podAntiAffinity", 10, "'app':'web'", ZONE)),
     {0, 0, 0},
     {0, 100, 100},
     {0, 0, 0}},
    {"existing_pods_preferred_terms_attract_the_incoming_pod",
     {"n1 " ZONE "=a", "n2 " ZONE "=b"},
     {{POD("'app':'cache'", PAFF("podAffinity", 30, "'app':'web'", ZONE)), "n2"}, {0}},
     POD("'app':'web'", ""),
     {0, 0},
     {0, 100},
     {0, 0}},
    {"existing_pods_required_affinity_attracts_with_the_hard_weight",
     {"n1 " ZONE "=a", "n2 " ZONE "=b"},
     {{POD("'app':'cache'", AFF("'app':'web'", ZONE)), "n1"}, {0}},
     POD("'app':'web'", ""),
     {0, 0},
     {100, 0},
     {0, 0}},
    {"no_inter_pod_terms_leave_scores_at_zero",
     {"n1 " ZONE "=a", "n2 " ZONE "=b"},
     {{POD("'app':'cache'", ""), "n1"}, {0}},
     POD("'app':'web'", ""),
     {0, 0},
     {0, 0},
     {0, 0}},
    {"schedule_anyway_spread_by_zone",
     {"n1 " ZONE "=a", "n2 " ZONE "=b", "n3 " ZONE "=c"},
     {{WEB, "n1"}, {WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'", SPREAD(1, ZONE, "ScheduleAnyway", "'app':'web'", "")),
     {0, 0, 0},
     {0, 0, 0},
     /* weight ln(3+2): raw 3, 2, 0 -> 100*(3+0-s)/3 */
     {0, 33, 100}},
    {"schedule_anyway_spread_by_host_and_nodes_without_the_key_score_zero",
     {"n1 " ZONE "=a", "n2 " ZONE "=a", "n3"},
     {{WEB, "n1"}, {WEB, "n1"}, {0}},
     POD("'app':'web'", SPREAD(2, ZONE, "ScheduleAnyway", "'app':'web'", "")),
     {0, 0, 0},
     {0, 0, 0},
     /* n3 lacks the zone: ignored. n1, n2 share zone a: same score (max skew 2 adds 1) */
     {100, 100, 0}},
    {"schedule_anyway_by_hostname_counts_each_node",
     {"n1", "n2", "n3"},
     {{WEB, "n1"}, {WEB, "n1"}, {WEB, "n2"}, {0}},
     POD("'app':'web'", SPREAD(1, HOST, "ScheduleAnyway", "'app':'web'", "")),
     {0, 0, 0},
     {0, 0, 0},
     /* weight ln(3+2)=1.609: raw round(3.22)=3, round(1.61)=2, 0 */
     {0, 33, 100}},
};

Test(constraints, scores)
{
    run_scases(score_cases, sizeof(score_cases) / sizeof(score_cases[0]));
}

/* ---- the state: incremental updates ---- */

Test(constraints, removing_a_pod_undoes_its_counts)
{
    static const char *const nodes[] = {"n1 " ZONE "=a", "n2 " ZONE "=b", NULL};
    struct world w;
    world_init(&w, nodes, NULL);
    struct gs_kpod a, b;
    read_pod(POD("'app':'db'", ANTI("'app':'web'", ZONE)), &a);
    read_pod(POD("'app':'web'", CPORT("{'containerPort':1,'hostPort':80}")), &b);
    int ha = gs_kstate_add_pod(w.s, &w.c, &a, 0);
    int hb = gs_kstate_add_pod(w.s, &w.c, &b, 1);
    cr_assert_geq(ha, 0);
    cr_assert_geq(hb, 0);
    cr_assert_eq(gs_kstate_npods(w.s), 2);
    char got[64], why[128];
    fits(&w, POD("'app':'web'", CPORT("{'containerPort':1,'hostPort':80}")), got, sizeof(got), why,
         sizeof(why));
    cr_expect_str_eq(got, "-");
    cr_assert_eq(gs_kstate_remove_pod(w.s, ha), 0);
    fits(&w, POD("'app':'web'", CPORT("{'containerPort':1,'hostPort':80}")), got, sizeof(got), why,
         sizeof(why));
    cr_expect_str_eq(got, "n1");
    cr_assert_eq(gs_kstate_remove_pod(w.s, hb), 0);
    fits(&w, POD("'app':'web'", CPORT("{'containerPort':1,'hostPort':80}")), got, sizeof(got), why,
         sizeof(why));
    cr_expect_str_eq(got, "n1,n2");
    cr_expect_eq(gs_kstate_remove_pod(w.s, hb), GS_ENOTFOUND);
    cr_expect_eq(gs_kstate_npods(w.s), 0);
    /* a handle is reused, and the state counts again from scratch */
    cr_assert_geq(gs_kstate_add_pod(w.s, &w.c, &a, 1), 0);
    fits(&w, POD("'app':'web'", ""), got, sizeof(got), why, sizeof(why));
    cr_expect_str_eq(got, "n1");
    cr_expect_str_eq(why, EXIST_R);
    cr_expect_eq(gs_kstate_add_pod(w.s, &w.c, &a, 7), GS_EINVAL);
    world_release(&w);
    gs_kpod_release(&a);
    gs_kpod_release(&b);
}

Test(constraints, a_pod_asking_nothing_is_trivial)
{
    static const char *const nodes[] = {"n1", NULL};
    struct world w;
    world_init(&w, nodes, NULL);
    read_pod(POD("'app':'web'", ""), &w.in);
    cr_assert_eq(gs_kprep_compute(w.prep, w.s, &w.c, &w.in, NULL, NULL), 0);
    cr_expect(gs_kprep_trivial(w.prep));
    cr_expect_eq(gs_kprep_filter(w.prep, w.s, &w.c, 0), GS_KFIT);
    cr_expect(gs_kverdict_unresolvable(GS_KNO_NODE_AFFINITY));
    cr_expect(!gs_kverdict_unresolvable(GS_KNO_ANTI_AFFINITY));
    world_release(&w);
}

/* A replica set of 300 pods with anti-affinity per host and spread per zone, placed one by
 * one on 100 nodes: each placement is checked against a brute-force count. */
Test(constraints, many_replicas_spread_evenly)
{
    struct world w;
    memset(&w, 0, sizeof(w));
    gs_cluster_init(&w.c);
    for (int i = 0; i < 100; i++) {
        char name[16], zone[8];
        snprintf(name, sizeof(name), "n%d", i);
        snprintf(zone, sizeof(zone), "z%d", i % 4);
        int id = gs_cluster_add_node(&w.c, name, -1, 0, 1000, 1000, GS_GPU_WHOLE, 0, NULL);
        gs_node_set_label(&w.c.nodes[id], GS_KHOSTNAME_KEY, name);
        gs_node_set_label(&w.c.nodes[id], ZONE, zone);
    }
    cr_assert_eq(gs_kstate_new(&w.c, &w.s), 0);
    cr_assert_eq(gs_kprep_new(&w.prep), 0);
    struct gs_kpod tmpl;
    read_pod(POD("'app':'web'",
                 ANTI("'app':'web'", HOST) "," SPREAD(1, ZONE, "DoNotSchedule", "'app':'web'", "")),
             &tmpl);
    int zone_count[4] = {0};
    int placed = 0;
    for (int k = 0; k < 300; k++) {
        cr_assert_eq(gs_kprep_compute(w.prep, w.s, &w.c, &tmpl, NULL, NULL), 0);
        int pick = -1;
        for (int i = 0; i < w.c.nnodes && pick < 0; i++)
            if (gs_kprep_filter(w.prep, w.s, &w.c, i) == GS_KFIT)
                pick = i;
        if (pick < 0)
            break;
        cr_assert_geq(gs_kstate_add_pod(w.s, &w.c, &tmpl, pick), 0);
        zone_count[pick % 4]++;
        placed++;
        int mn = zone_count[0], mx = zone_count[0];
        for (int z = 1; z < 4; z++) {
            mn = zone_count[z] < mn ? zone_count[z] : mn;
            mx = zone_count[z] > mx ? zone_count[z] : mx;
        }
        cr_assert_leq(mx - mn, 1, "skew %d after %d pods", mx - mn, placed);
    }
    cr_expect_eq(placed, 100, "one per node: placed %d", placed);
    gs_kprep_free(w.prep);
    gs_kstate_free(w.s);
    gs_kpod_release(&tmpl);
    gs_cluster_release(&w.c);
}
