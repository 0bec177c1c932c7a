/* Pod JSON to placement constraints (formats/podspec): what a Deployment's pod asks is read
 * whole, and invalid or unsupported input is refused with the field path. */
#include "base/error.h"
#include "formats/podspec.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int read_sq(const char *squoted, struct gs_kpod *p, struct gs_error *err)
{
    char *j = strdup(squoted);
    for (char *q = j; *q; q++)
        if (*q == '\'')
            *q = '"';
    json_error_t je;
    json_t *o = json_loads(j, 0, &je);
    cr_assert_not_null(o, "bad test JSON: %s: %s", je.text, j);
    gs_error_init(err);
    gs_kpod_init(p);
    int rc = gs_podspec_read(o, p, err);
    json_decref(o);
    free(j);
    return rc;
}

/* An inference Deployment's pod as the API server serves it. */
static const char *deployment_pod =
    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'llm-7f9c-abcde','namespace':'serving',"
    "'labels':{'app':'llm','pod-template-hash':'7f9c','app.kubernetes.io/part-of':'inference'},"
    "'ownerReferences':[{'kind':'ReplicaSet','name':'llm-7f9c'}]},"
    "'spec':{'schedulerName':'gpusched','nodeSelector':{'nvidia.com/gpu.product':'NVIDIA-H100-"
    "80GB-HBM3'},"
    "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"
    "'nodeSelectorTerms':[{'matchExpressions':[{'key':'nvidia.com/gpu.count','operator':'Gt',"
    "'values':['3']},{'key':'pool','operator':'In','values':['b','a','b']}],"
    "'matchFields':[{'key':'metadata.name','operator':'NotIn','values':['bad-node']}]}]},"
    "'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':40,'preference':{"
    "'matchExpressions':[{'key':'spot','operator':'DoesNotExist'}]}}]},"
    "'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'labelSelector':{"
    "'matchLabels':{'app':'llm'}},'matchLabelKeys':['pod-template-hash'],"
    "'topologyKey':'kubernetes.io/hostname'}],"
    "'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':100,'podAffinityTerm':{"
    "'labelSelector':{'matchExpressions':[{'key':'app','operator':'In','values':['llm']}]},"
    "'namespaces':['serving','other','serving'],'topologyKey':'topology.kubernetes.io/zone'}}]},"
    "'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':10,"
    "'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'cache'}},'namespaceSelector':{},"
    "'topologyKey':'topology.kubernetes.io/zone'}}]}},"
    "'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'topology.kubernetes.io/zone',"
    "'whenUnsatisfiable':'DoNotSchedule','minDomains':3,'labelSelector':{'matchLabels':{'app':"
    "'llm'}},'matchLabelKeys':['pod-template-hash'],'nodeTaintsPolicy':'Honor'},"
    "{'maxSkew':2,'topologyKey':'kubernetes.io/hostname','whenUnsatisfiable':'ScheduleAnyway',"
    "'labelSelector':{'matchLabels':{'app':'llm'}},'nodeAffinityPolicy':'Ignore'}],"
    "'initContainers':[{'name':'init','image':'x'},{'name':'proxy','restartPolicy':'Always',"
    "'ports':[{'containerPort':15001,'hostPort':15001,'protocol':'TCP'}]}],"
    "'containers':[{'name':'server','image':'vllm','ports':[{'containerPort':8000},"
    "{'containerPort':9400,'hostPort':9400,'hostIP':'10.1.2.3','protocol':'UDP'}],"
    "'resources':{'limits':{'nvidia.com/gpu':'4'}}}]},'status':{'phase':'Pending'}}";

Test(podspec, a_deployment_pod_is_read_whole)
{
    struct gs_kpod p;
    struct gs_error err;
    cr_assert_eq(read_sq(deployment_pod, &p, &err), 0, "%s", err.msg);
    cr_expect_str_eq(p.ns, "serving");
    cr_expect_str_eq(p.name, "llm-7f9c-abcde");
    cr_expect_null(p.node_name);
    cr_expect(!p.terminating);
    cr_expect_eq(p.labels.n, 3);
    cr_expect_str_eq(gs_labels_get(&p.labels, "pod-template-hash"), "7f9c");
    cr_assert_eq(p.nnode_selector, 1);
    cr_expect_str_eq(p.node_selector[0].key, "nvidia.com/gpu.product");
    /* node affinity */
    cr_assert(p.has_required);
    cr_assert_eq(p.nrequired, 1);
    cr_assert_eq(p.required[0].nexprs, 2);
    cr_expect_eq(p.required[0].exprs[0].op, GS_KOP_GT);
    cr_expect_eq(p.required[0].exprs[0].num, 3);
    cr_assert_eq(p.required[0].exprs[1].nvals, 2, "values sorted and unique");
    cr_expect_str_eq(p.required[0].exprs[1].vals[0], "a");
    cr_assert_eq(p.required[0].nfields, 1);
    cr_expect_eq(p.required[0].fields[0].op, GS_KOP_NOTIN);
    cr_assert_eq(p.npreferred, 1);
    cr_expect_eq(p.preferred[0].weight, 40);
    /* pod (anti-)affinity */
    cr_assert_eq(p.nanti, 1);
    cr_expect_eq(p.anti[0].sel.nreqs, 2, "matchLabelKeys merged: %u", p.anti[0].sel.nreqs);
    cr_expect_str_eq(p.anti[0].sel.reqs[1].key, "pod-template-hash");
    cr_assert_eq(p.anti[0].nns, 1);
    cr_expect_str_eq(p.anti[0].ns[0], "serving", "own namespace by default");
    cr_expect(p.anti[0].ns_sel.nothing);
    cr_assert_eq(p.npanti, 1);
    cr_expect_eq(p.panti[0].weight, 100);
    cr_expect_eq(p.panti[0].nns, 2);
    cr_assert_eq(p.npaff, 1);
    cr_expect(!p.paff[0].ns_sel.nothing);
    cr_expect_eq(p.paff[0].ns_sel.nreqs, 0, "{} selects every namespace");
    cr_expect_eq(p.paff[0].nns, 0);
    cr_expect_eq(p.naff, 0);
    /* spread */
    cr_assert_eq(p.nspread, 2);
    cr_expect(p.spread[0].do_not_schedule);
    cr_expect_eq(p.spread[0].min_domains, 3);
    cr_expect(p.spread[0].affinity_honor);
    cr_expect(p.spread[0].taints_honor);
    cr_expect_eq(p.spread[0].sel.nreqs, 2);
    cr_expect(!p.spread[1].do_not_schedule);
    cr_expect(!p.spread[1].affinity_honor);
    cr_expect(!p.spread[1].taints_honor);
    cr_expect_eq(p.spread[1].max_skew, 2);
    /* ports: the sidecar's and the container's host ports only */
    cr_assert_eq(p.nports, 2);
    cr_expect_eq(p.ports[0].port, 15001);
    cr_expect_str_eq(p.ports[0].ip, "0.0.0.0");
    cr_expect_eq(p.ports[1].proto, GS_KPROTO_UDP);
    cr_expect_str_eq(p.ports[1].ip, "10.1.2.3");
    gs_kpod_release(&p);
}

Test(podspec, reading_again_replaces_the_old_content_and_merges_are_idempotent)
{
    struct gs_kpod p;
    struct gs_error err;
    cr_assert_eq(read_sq(deployment_pod, &p, &err), 0, "%s", err.msg);
    /* the API server has already merged matchLabelKeys: not added twice */
    const char *merged =
        "{'metadata':{'name':'a','labels':{'app':'x','h':'1'},'deletionTimestamp':'2026-01-01T00:"
        "00:00Z'},'spec':{'nodeName':'n1','topologySpreadConstraints':[{'maxSkew':1,"
        "'topologyKey':'z','whenUnsatisfiable':'DoNotSchedule','labelSelector':{"
        "'matchLabels':{'app':'x'},'matchExpressions':[{'key':'h','operator':'In','values':['1']}"
        "]},'matchLabelKeys':['h','absent']}]}}";
    char *j = strdup(merged);
    for (char *q = j; *q; q++)
        if (*q == '\'')
            *q = '"';
    json_t *o = json_loads(j, 0, NULL);
    cr_assert_not_null(o);
    cr_assert_eq(gs_podspec_read(o, &p, &err), 0, "%s", err.msg);
    cr_expect_str_eq(p.ns, "default");
    cr_expect_str_eq(p.node_name, "n1");
    cr_expect(p.terminating);
    cr_assert_eq(p.nspread, 1);
    cr_expect_eq(p.spread[0].sel.nreqs, 2);
    cr_expect_eq(p.nanti, 0);
    cr_expect_eq(p.nports, 0);
    json_decref(o);
    free(j);
    gs_kpod_release(&p);
}

struct bad {
    const char *name;
    const char *spec; /* the pod's spec */
    const char *want; /* in the error message */
};

#define NAREQ(t)                                                                                   \
    "{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"              \
    "'nodeSelectorTerms':[" t "]}}}}"
#define ANTI(t)                                                                                    \
    "{'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[" t "]}}}"
#define TSC(t) "{'topologySpreadConstraints':[" t "]}"

static const struct bad bads[] = {
    {"in_with_empty_values",
     NAREQ("{'matchExpressions':[{'key':'a','operator':'In','values':[]}]}"),
     "nodeSelectorTerms[0].matchExpressions[0].values: must be specified when operator is In"},
    {"not_in_without_values", NAREQ("{'matchExpressions':[{'key':'a','operator':'NotIn'}]}"),
     "values: must be specified"},
    {"exists_with_values",
     NAREQ("{'matchExpressions':[{'key':'a','operator':'Exists','values':['x']}]}"),
     "may not be specified when operator is Exists"},
    {"gt_with_two_values",
     NAREQ("{'matchExpressions':[{'key':'a','operator':'Gt','values':['1','2']}]}"),
     "single element"},
    {"lt_not_a_number",
     NAREQ("{'matchExpressions':[{'key':'a','operator':'Lt','values':['ten']}]}"),
     "values[0]: 'ten' is not an integer"},
    {"unknown_operator", NAREQ("{'matchExpressions':[{'key':'a','operator':'Like'}]}"),
     "operator: 'Like' is not a valid operator"},
    {"match_fields_other_than_name",
     NAREQ("{'matchFields':[{'key':'metadata.uid','operator':'In','values':['x']}]}"),
     "matchFields[0].key: 'metadata.uid' is not a supported field selector"},
    {"match_fields_two_values",
     NAREQ("{'matchFields':[{'key':'metadata.name','operator':'In','values':['a','b']}]}"),
     "one element"},
    {"no_node_selector_terms",
     "{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"
     "'nodeSelectorTerms':[]}}}}",
     "must have at least one node selector term"},
    {"preferred_weight_zero",
     "{'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{"
     "'weight':0,'preference':{}}]}}}",
     "preferredDuringSchedulingIgnoredDuringExecution[0].weight: 0 is out of range 1..100"},
    {"label_selector_gt",
     ANTI("{'labelSelector':{'matchExpressions':[{'key':'a','operator':'Gt',"
          "'values':['1']}]},'topologyKey':'h'}"),
     "operator: 'Gt' is not a valid operator"},
    {"anti_affinity_without_topology_key", ANTI("{'labelSelector':{}}"),
     "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: can not be "
     "empty"},
    {"namespace_selector_on_other_labels",
     ANTI("{'labelSelector':{},'namespaceSelector':{'matchLabels':{'team':'a'}},"
          "'topologyKey':'h'}"),
     "selecting namespaces by label 'team' is not supported"},
    {"match_label_keys_without_selector", ANTI("{'matchLabelKeys':['app'],'topologyKey':'h'}"),
     "labelSelector is required with matchLabelKeys"},
    {"spread_zero_skew", TSC("{'maxSkew':0,'topologyKey':'z','whenUnsatisfiable':'DoNotSchedule'}"),
     "topologySpreadConstraints[0].maxSkew: 0 is out of range"},
    {"spread_bad_when", TSC("{'maxSkew':1,'topologyKey':'z','whenUnsatisfiable':'Sometimes'}"),
     "'Sometimes' is not DoNotSchedule or ScheduleAnyway"},
    {"spread_min_domains_with_schedule_anyway",
     TSC("{'maxSkew':1,'topologyKey':'z','whenUnsatisfiable':'ScheduleAnyway','minDomains':2}"),
     "can only use minDomains with whenUnsatisfiable DoNotSchedule"},
    {"spread_bad_policy",
     TSC("{'maxSkew':1,'topologyKey':'z','whenUnsatisfiable':'DoNotSchedule',"
         "'nodeAffinityPolicy':'Maybe'}"),
     "nodeAffinityPolicy: 'Maybe' is not Honor or Ignore"},
    {"spread_without_key", TSC("{'maxSkew':1,'whenUnsatisfiable':'DoNotSchedule'}"),
     "topologyKey: can not be empty"},
    {"host_port_out_of_range",
     "{'containers':[{'name':'c','ports':[{'containerPort':1,'hostPort':70000}]}]}",
     "spec.containers[0].ports[0].hostPort: 70000 is out of range"},
    {"bad_protocol",
     "{'containers':[{'name':'c','ports':[{'containerPort':1,'hostPort':7,'protocol':'ICMP'}]}]}",
     "protocol: 'ICMP' is not TCP, UDP or SCTP"},
    {"host_ip_too_long",
     "{'containers':[{'name':'c','ports':[{'containerPort':1,'hostPort':7,'hostIP':'"
     "1234567890123456789012345678901234567890123456789'}]}]}",
     "hostIP: longer than"},
    {"node_selector_not_a_string", "{'nodeSelector':{'a':1}}",
     "spec.nodeSelector.a: expected a string"},
    {"affinity_wrong_type", "{'affinity':[]}", "spec.affinity: expected an object"},
    {"too_many_values",
     NAREQ("{'matchExpressions':[{'key':'a','operator':'In','values':['1','2','3','4','5','6',"
           "'7','8','9','10','11','12','13','14','15','16','17','18','19','20','21','22','23',"
           "'24','25','26','27','28','29','30','31','32','33','34','35','36','37','38','39','40',"
           "'41','42','43','44','45','46','47','48','49','50','51','52','53','54','55','56','57',"
           "'58','59','60','61','62','63','64','65','66','67','68','69','70','71','72','73','74',"
           "'75','76','77','78','79','80','81','82','83','84','85','86','87','88','89','90','91',"
           "'92','93','94','95','96','97','98','99','100','101','102','103','104','105','106',"
           "'107','108','109','110','111','112','113','114','115','116','117','118','119','120',"
           "'121','122','123','124','125','126','127','128','129','130','131','132','133','134',"
           "'135','136','137','138','139','140','141','142','143','144','145','146','147','148',"
           "'149','150','151','152','153','154','155','156','157','158','159','160','161','162',"
           "'163','164','165','166','167','168','169','170','171','172','173','174','175','176',"
           "'177','178','179','180','181','182','183','184','185','186','187','188','189','190',"
           "'191','192','193','194','195','196','197','198','199','200','201','202','203','204',"
           "'205','206','207','208','209','210','211','212','213','214','215','216','217','218',"
           "'219','220','221','222','223','224','225','226','227','228','229','230','231','232',"
           "'233','234','235','236','237','238','239','240','241','242','243','244','245','246',"
           "'247','248','249','250','251','252','253','254','255','256','257']}]}"),
     "more than 256 values"},
};

Test(podspec, invalid_input_is_refused_with_the_field_path)
{
    for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
        char doc[8192];
        snprintf(doc, sizeof(doc), "{'metadata':{'name':'p','namespace':'ns'},'spec':%s}",
                 bads[i].spec);
        struct gs_kpod p;
        struct gs_error err;
        int rc = read_sq(doc, &p, &err);
        cr_expect_eq(rc, GS_EINVAL, "%s: rc %d, want GS_EINVAL", bads[i].name, rc);
        cr_expect(strstr(err.msg, bads[i].want) != NULL, "%s: error '%s' lacks '%s'", bads[i].name,
                  err.msg, bads[i].want);
        cr_expect(strstr(err.msg, "pod ns/p: ") == err.msg, "%s: error '%s' names no pod",
                  bads[i].name, err.msg);
        cr_expect_null(p.arena.head, "%s: a refused pod holds nothing", bads[i].name);
        gs_kpod_release(&p);
    }
}

Test(podspec, a_nul_byte_in_a_string_is_refused)
{
    json_t *o = json_pack("{s:{s:s,s:{s:s%}}}", "metadata", "name", "p", "labels", "app", "a\0b",
                          (size_t)3);
    cr_assert_not_null(o);
    struct gs_kpod p;
    gs_kpod_init(&p);
    struct gs_error err;
    gs_error_init(&err);
    cr_expect_eq(gs_podspec_read(o, &p, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "metadata.labels.app: contains a NUL byte") != NULL, "%s", err.msg);
    json_decref(o);
    gs_kpod_release(&p);
}

Test(podspec, not_an_object_is_refused)
{
    json_t *o = json_array();
    struct gs_kpod p;
    gs_kpod_init(&p);
    struct gs_error err;
    gs_error_init(&err);
    cr_expect_eq(gs_podspec_read(o, &p, &err), GS_EINVAL);
    cr_expect_str_eq(err.msg, "pod: expected a JSON object");
    json_decref(o);
    gs_kpod_release(&p);
}
