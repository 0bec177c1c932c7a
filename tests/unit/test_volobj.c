/* The storage objects as the API server serves them (formats/volobj.h): a claim's class (and
 * the legacy annotation), access modes, volume mode, request, selector and selected-node; a
 * volume's capacity, claimRef, CSI source, zone labels and phase; StorageClasses with
 * allowedTopologies, CSIDrivers, CSIStorageCapacities and CSINodes; label selectors. Every
 * reader's bad input is refused with the object and the field path, and a claim, volume or class
 * refused past its name keeps its identity and why. The matchers: volume zones (GA and beta
 * labels, "__" sets), allowedTopologies, a capacity's nodeTopology (absent: no node; empty: every
 * node). */
#include "base/error.h"
#include "formats/kubeobj.h"
#include "formats/labelsel.h"
#include "formats/volobj.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static void node_of(const char *name, const char *labels, struct gs_kube_node *n)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{%s}},\"status\":{\"allocatable\":"
             "{\"cpu\":\"8\",\"memory\":\"16Gi\",\"pods\":\"110\"}}}",
             name, labels);
    json_t *o = json_of(text);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, n, &err), 0, "%s", err.msg);
    json_decref(o);
}

/* Each reader behind one signature, for the tables below. */
typedef int (*reader_fn)(const json_t *obj, void *out, struct gs_error *err);
static int rd_pvc(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_pvc_read(o, out, e);
}
static int rd_pv(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_pv_read(o, out, e);
}
static int rd_sc(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_sc_read(o, out, e);
}
static int rd_csid(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_csidriver_read(o, out, e);
}
static int rd_csic(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_csicap_read(o, out, e);
}
static int rd_csin(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_csinode_read(o, out, e);
}

/* Read text with fn into out (large enough for any of the kinds); 0 or the error. */
static int read_as(reader_fn fn, const char *text, void *out, struct gs_error *err)
{
    json_t *o = json_of(text);
    gs_error_init(err);
    int rc = fn(o, out, err);
    json_decref(o);
    return rc;
}

static union {
    struct gs_kube_pvc c;
    struct gs_kube_pv v;
    struct gs_kube_sc s;
    struct gs_kube_csidriver d;
    struct gs_kube_csicap k;
    struct gs_kube_csinode n;
} obj;

/* ---------- PersistentVolumeClaim ---------- */

Test(volobj, claim_of_a_wait_for_first_consumer_class)
{
    struct gs_error err;
    cr_assert_eq(
        read_as(
            rd_pvc,
            "{\"metadata\":{\"name\":\"data\",\"namespace\":\"ml\",\"uid\":\"u-1\","
            "\"resourceVersion\":\"42\",\"annotations\":{\"volume.kubernetes.io/"
            "selected-node\":\"gpu-a100-01\"}},\"spec\":{\"accessModes\":[\"ReadWriteOnce\","
            "\"ReadWriteOncePod\"],\"storageClassName\":\"local-nvme\",\"volumeMode\":\"Block\","
            "\"resources\":{\"requests\":{\"storage\":\"1536Mi\"}},\"selector\":{"
            "\"matchLabels\":{\"tier\":\"fast\"},\"matchExpressions\":[{\"key\":\"rack\","
            "\"operator\":\"NotIn\",\"values\":[\"r1\",\"r2\"]}]}},\"status\":{\"phase\":"
            "\"Pending\"}}",
            &obj, &err),
        0, "%s", err.msg);
    const struct gs_kube_pvc *c = &obj.c;
    cr_assert_str_eq(c->uid, "u-1");
    cr_assert_str_eq(c->rv, "42");
    cr_assert(c->has_class);
    cr_assert_str_eq(c->cls, "local-nvme");
    cr_assert_eq(c->access, GS_ACCESS_RWO | GS_ACCESS_RWOP, "access %u", c->access);
    cr_assert(c->block);
    cr_assert_eq(c->request, 1536LL << 20, "request %lld", (long long)c->request);
    cr_assert_str_eq(c->selected_node, "gpu-a100-01");
    cr_assert_eq(c->nsel, 2);
    cr_assert_eq(c->sel[0].op, GS_SEL_IN);
    cr_assert_str_eq(c->sel[1].key, "rack");
    cr_assert_eq(c->sel[1].op, GS_SEL_NOTIN);
    cr_assert_eq(c->sel[1].nval, 2);
    cr_assert_not(c->bound);
    cr_assert_eq(c->refused[0], '\0');
    char modes[96];
    gs_access_str(c->access, modes, sizeof(modes));
    cr_assert_str_eq(modes, "ReadWriteOnce,ReadWriteOncePod");
}

Test(volobj, claim_class_from_the_field_then_the_legacy_annotation)
{
    struct {
        const char *text, *cls;
        bool has;
    } cases[] = {
        {"{\"metadata\":{\"name\":\"d\",\"namespace\":\"ml\"},\"spec\":{}}", "", false},
        /* "" names no class: static binding only */
        {"{\"metadata\":{\"name\":\"d\",\"namespace\":\"ml\"},\"spec\":{\"storageClassName\":\"\"}"
         "}",
         "", true},
        {"{\"metadata\":{\"name\":\"d\",\"namespace\":\"ml\",\"annotations\":{\"volume.beta."
         "kubernetes.io/storage-class\":\"old\"}},\"spec\":{}}",
         "old", true},
        {"{\"metadata\":{\"name\":\"d\",\"namespace\":\"ml\",\"annotations\":{\"volume.beta."
         "kubernetes.io/storage-class\":\"old\"}},\"spec\":{\"storageClassName\":\"new\"}}",
         "new", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gs_error err;
        cr_assert_eq(read_as(rd_pvc, cases[i].text, &obj, &err), 0, "case %zu: %s", i, err.msg);
        cr_assert_str_eq(obj.c.cls, cases[i].cls, "case %zu", i);
        cr_assert_eq(obj.c.has_class, cases[i].has, "case %zu", i);
    }
}

Test(volobj, deleting_claim_is_marked)
{
    struct gs_error err;
    cr_assert_eq(read_as(rd_pvc,
                         "{\"metadata\":{\"name\":\"d\",\"namespace\":\"ml\",\"deletionTimestamp\":"
                         "\"2025-06-01T12:00:00Z\"},\"spec\":{}}",
                         &obj, &err),
                 0, "%s", err.msg);
    cr_assert(obj.c.deleting);
}

/* Bad input, reader by reader: the object and the field path in the message; refused: whether
 * its identity was read (the scheduler keeps it, refused, with the message less its name). */
struct bad {
    reader_fn fn;
    const char *text, *want;
    bool refused;
};

static void check_bad(const struct bad *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct gs_error err;
        memset(&obj, 0, sizeof(obj));
        cr_assert_neq(read_as(cases[i].fn, cases[i].text, &obj, &err), 0, "case %zu accepted: %s",
                      i, cases[i].text);
        cr_assert(strstr(err.msg, cases[i].want), "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i].want);
        const char *refused = cases[i].fn == rd_pvc  ? obj.c.refused
                              : cases[i].fn == rd_pv ? obj.v.refused
                              : cases[i].fn == rd_sc ? obj.s.refused
                                                     : "";
        if (cases[i].refused) {
            /* the message less its "Kind name: " */
            const char *rest = strstr(err.msg, ": ");
            cr_assert(rest && strcmp(rest + 2, refused) == 0, "case %zu: refused '%s' of '%s'", i,
                      refused, err.msg);
        } else {
            cr_assert_eq(refused[0], '\0', "case %zu: refused '%s'", i, refused);
        }
    }
}

#define CLAIM(spec) "{\"metadata\":{\"name\":\"d\",\"namespace\":\"ml\"},\"spec\":" spec "}"

Test(volobj, bad_claims_name_the_field)
{
    static const struct bad cases[] = {
        {rd_pvc, "{\"metadata\":{\"namespace\":\"ml\"}}", "metadata.name is required", false},
        {rd_pvc, "{\"metadata\":{\"name\":\"d\"}}",
         "PersistentVolumeClaim d: metadata.namespace is required", false},
        {rd_pvc, CLAIM("{\"accessModes\":\"ReadWriteOnce\"}"), "spec.accessModes: expected a list",
         true},
        {rd_pvc, CLAIM("{\"accessModes\":[\"ReadWriteOnce\",\"ReadWriteSometimes\"]}"),
         "spec.accessModes[1]: expected ReadWriteOnce", true},
        {rd_pvc, CLAIM("{\"volumeMode\":\"Raw\"}"), "spec.volumeMode: 'Raw'", true},
        {rd_pvc, CLAIM("{\"resources\":{\"requests\":{\"storage\":\"ten gigs\"}}}"),
         "spec.resources.requests.storage: 'ten gigs'", true},
        {rd_pvc, CLAIM("{\"resources\":{\"requests\":{\"storage\":\"-1Gi\"}}}"),
         "spec.resources.requests.storage: '-1Gi'", true},
        {rd_pvc, CLAIM("{\"resources\":{\"requests\":{\"storage\":[]}}}"),
         "spec.resources.requests.storage: expected a quantity", true},
        {rd_pvc, CLAIM("{\"storageClassName\":7}"), "spec.storageClassName: expected a string",
         true},
        {rd_pvc, CLAIM("{\"selector\":[]}"), "spec.selector: expected a label selector", true},
        /* the API server takes these; gpusched keeps at most 4 values and 8 requirements */
        {rd_pvc,
         CLAIM("{\"selector\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\","
               "\"values\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}]}}"),
         "spec.selector.matchExpressions[0].values: expected at most 4", true},
        {rd_pvc,
         CLAIM("{\"selector\":{\"matchLabels\":{\"a\":\"1\",\"b\":\"1\",\"c\":\"1\",\"d\":\"1\","
               "\"e\":\"1\",\"f\":\"1\",\"g\":\"1\",\"h\":\"1\",\"i\":\"1\"}}}"),
         "spec.selector.matchLabels.i: more than 8 requirements", true},
        {rd_pvc,
         CLAIM("{\"selector\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Near\"}]}}"),
         "spec.selector.matchExpressions[0].operator: 'Near'", true},
        {rd_pvc,
         CLAIM("{\"selector\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\","
               "\"values\":[\"a\"]}]}}"),
         "spec.selector.matchExpressions[0].values: expected none for Exists", true},
        {rd_pvc, CLAIM("{\"selector\":{\"matchExpressions\":[{\"operator\":\"Exists\"}]}}"),
         "spec.selector.matchExpressions[0].key: expected a label key", true},
        {rd_pvc,
         "{\"metadata\":{\"name\":\"d\",\"namespace\":\"ml\",\"annotations\":{\"volume."
         "kubernetes.io/selected-node\":5}},\"spec\":{}}",
         "metadata.annotations[volume.kubernetes.io/selected-node]: expected a string", true},
    };
    check_bad(cases, sizeof(cases) / sizeof(cases[0]));
}

/* ---------- PersistentVolume ---------- */

Test(volobj, csi_volume_with_zone_labels_and_claim_ref)
{
    struct gs_error err;
    cr_assert_eq(
        read_as(rd_pv,
                "{\"metadata\":{\"name\":\"pvc-7f3a\",\"uid\":\"u-9\",\"resourceVersion\":\"77\","
                "\"labels\":{\"app\":\"db\",\"topology.kubernetes.io/region\":\"us-east-1\","
                "\"topology.kubernetes.io/zone\":\"us-east-1a\"}},\"spec\":{\"capacity\":{"
                "\"storage\":\"100Gi\"},\"accessModes\":[\"ReadWriteOnce\"],\"storageClassName\":"
                "\"gp3\",\"csi\":{\"driver\":\"ebs.csi.aws.com\",\"volumeHandle\":"
                "\"vol-0abc\",\"fsType\":\"ext4\"},\"claimRef\":{\"kind\":"
                "\"PersistentVolumeClaim\",\"namespace\":\"ml\",\"name\":\"data\",\"uid\":"
                "\"u-1\"},\"persistentVolumeReclaimPolicy\":\"Delete\"},\"status\":{\"phase\":"
                "\"Bound\"}}",
                &obj, &err),
        0, "%s", err.msg);
    const struct gs_kube_pv *pv = &obj.v;
    cr_assert_eq(pv->capacity, 100LL << 30);
    cr_assert_eq(pv->phase, GS_PV_BOUND);
    cr_assert_str_eq(pv->claim_ns, "ml");
    cr_assert_str_eq(pv->claim_name, "data");
    cr_assert_str_eq(pv->claim_uid, "u-1");
    cr_assert_str_eq(pv->csi_driver, "ebs.csi.aws.com");
    cr_assert_str_eq(pv->csi_handle, "vol-0abc");
    cr_assert_eq(pv->nlabels, 3);
    /* the zone and region labels first */
    cr_assert(strstr(pv->labels[0].key, "topology.kubernetes.io/"), "%s", pv->labels[0].key);
    cr_assert(strstr(pv->labels[1].key, "topology.kubernetes.io/"), "%s", pv->labels[1].key);
    cr_assert_str_eq(gs_kube_pv_label(pv, "app"), "db");
    cr_assert_null(gs_kube_pv_label(pv, "tier"));
    cr_assert_not(pv->labels_partial);
}

Test(volobj, volume_phases_and_many_labels)
{
    static const char *const phases[] = {"Pending", "Available", "Bound", "Released", "Failed"};
    for (int i = 0; i < 5; i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"pv\"},\"spec\":{},\"status\":{\"phase\":\"%s\"}}",
                 phases[i]);
        struct gs_error err;
        cr_assert_eq(read_as(rd_pv, text, &obj, &err), 0, "%s", err.msg);
        cr_assert_eq(obj.v.phase, i, "%s: %d", phases[i], obj.v.phase);
    }
    /* more labels than are kept: the zone one still is, the volume is marked partial */
    char text[2048] = "{\"metadata\":{\"name\":\"pv\",\"labels\":{";
    for (int i = 0; i < GS_PV_MAX_LABELS + 2; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "\"l%02d\":\"v\",", i);
    snprintf(text + strlen(text), sizeof(text) - strlen(text),
             "\"topology.kubernetes.io/zone\":\"b\"}},\"spec\":{}}");
    struct gs_error err;
    cr_assert_eq(read_as(rd_pv, text, &obj, &err), 0, "%s", err.msg);
    cr_assert(obj.v.labels_partial);
    cr_assert_eq(obj.v.nlabels, GS_PV_MAX_LABELS);
    cr_assert_str_eq(gs_kube_pv_label(&obj.v, "topology.kubernetes.io/zone"), "b");
}

#define VOLUME(spec) "{\"metadata\":{\"name\":\"pv\"},\"spec\":" spec "}"

Test(volobj, bad_volumes_name_the_field)
{
    static const struct bad cases[] = {
        {rd_pv, "{\"spec\":{}}", "PersistentVolume: metadata.name is required", false},
        {rd_pv, VOLUME("{\"capacity\":{\"storage\":\"lots\"}}"),
         "PersistentVolume pv: spec.capacity.storage: 'lots'", true},
        {rd_pv, VOLUME("{\"claimRef\":[]}"), "spec.claimRef: expected an object", true},
        {rd_pv, VOLUME("{\"claimRef\":{\"name\":1}}"), "spec.claimRef.name: expected a string",
         true},
        {rd_pv, VOLUME("{\"csi\":{\"driver\":false}}"), "spec.csi.driver: expected a string", true},
        {rd_pv, VOLUME("{\"accessModes\":[\"Sometimes\"]}"), "spec.accessModes[0]", true},
        {rd_pv, VOLUME("{\"volumeMode\":\"Tape\"}"), "spec.volumeMode: 'Tape'", true},
        {rd_pv, "{\"metadata\":{\"name\":\"pv\",\"labels\":[]},\"spec\":{}}",
         "metadata.labels: expected an object", true},
        {rd_pv,
         "{\"metadata\":{\"name\":\"pv\",\"labels\":{\"topology.kubernetes.io/zone\":7}},"
         "\"spec\":{}}",
         "metadata.labels.topology.kubernetes.io/zone", true},
        /* the API server takes nine hostnames; gpusched keeps eight */
        {rd_pv,
         VOLUME("{\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
                "\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"1\",\"2\","
                "\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\"]}]}]}}}"),
         "nodeSelectorTerms[0].matchExpressions[0].values: 9 values, at most 8", true},
    };
    check_bad(cases, sizeof(cases) / sizeof(cases[0]));
}

Test(volobj, volume_zones_as_volume_zone_judges_them)
{
    struct {
        const char *pv_labels, *node_labels;
        bool fits;
    } cases[] = {
        {"", "\"topology.kubernetes.io/zone\":\"a\"", true},
        {"\"topology.kubernetes.io/zone\":\"a\"", "\"topology.kubernetes.io/zone\":\"a\"", true},
        {"\"topology.kubernetes.io/zone\":\"a\"", "\"topology.kubernetes.io/zone\":\"b\"", false},
        {"\"topology.kubernetes.io/zone\":\"a\"", "", false},
        /* a regional volume: several zones joined by "__" */
        {"\"topology.kubernetes.io/zone\":\"a__c\"", "\"topology.kubernetes.io/zone\":\"c\"", true},
        {"\"topology.kubernetes.io/zone\":\"a__c\"", "\"topology.kubernetes.io/zone\":\"b\"",
         false},
        /* the beta label on one side, the GA one on the other */
        {"\"failure-domain.beta.kubernetes.io/zone\":\"a\"",
         "\"topology.kubernetes.io/zone\":\"a\"", true},
        {"\"topology.kubernetes.io/zone\":\"a\"",
         "\"failure-domain.beta.kubernetes.io/zone\":\"a\"", true},
        {"\"topology.kubernetes.io/region\":\"eu\",\"topology.kubernetes.io/zone\":\"a\"",
         "\"topology.kubernetes.io/region\":\"us\",\"topology.kubernetes.io/zone\":\"a\"", false},
        /* other labels do not count */
        {"\"rack\":\"r1\"", "\"rack\":\"r2\"", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"pv\",\"labels\":{%s}},\"spec\":{}}",
                 cases[i].pv_labels);
        struct gs_error err;
        cr_assert_eq(read_as(rd_pv, text, &obj, &err), 0, "case %zu: %s", i, err.msg);
        struct gs_kube_node n;
        node_of("n", cases[i].node_labels, &n);
        cr_assert_eq(gs_kube_pv_zone_matches(&obj.v, &n), cases[i].fits, "case %zu", i);
        gs_kube_node_release(&n);
    }
}

/* ---------- StorageClass ---------- */

Test(volobj, default_class_of_a_managed_cloud)
{
    struct gs_error err;
    cr_assert_eq(
        read_as(rd_sc,
                "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{"
                "\"name\":\"standard-rwo\",\"annotations\":{\"storageclass.kubernetes.io/"
                "is-default-class\":\"true\"}},\"provisioner\":\"pd.csi.storage.gke.io\","
                "\"parameters\":{\"type\":\"pd-balanced\"},\"reclaimPolicy\":\"Delete\","
                "\"allowVolumeExpansion\":true,\"volumeBindingMode\":\"WaitForFirstConsumer\","
                "\"allowedTopologies\":[{\"matchLabelExpressions\":[{\"key\":"
                "\"topology.gke.io/zone\",\"values\":[\"us-central1-a\",\"us-central1-b\"]}]}]}",
                &obj, &err),
        0, "%s", err.msg);
    const struct gs_kube_sc *sc = &obj.s;
    cr_assert_str_eq(sc->provisioner, "pd.csi.storage.gke.io");
    cr_assert_eq(sc->mode, GS_BIND_WAIT_FOR_FIRST_CONSUMER);
    cr_assert_eq(sc->nterms, 1);
    cr_assert_eq(sc->terms[0].nreqs, 1);
    cr_assert_eq(sc->terms[0].reqs[0].nval, 2);
    struct {
        const char *labels;
        bool allowed;
    } nodes[] = {
        {"\"topology.gke.io/zone\":\"us-central1-b\"", true},
        {"\"topology.gke.io/zone\":\"us-central1-f\"", false},
        {"\"topology.kubernetes.io/zone\":\"us-central1-a\"", false},
    };
    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
        struct gs_kube_node n;
        node_of("n", nodes[i].labels, &n);
        cr_assert_eq(gs_kube_sc_node_allowed(sc, &n), nodes[i].allowed, "node %zu", i);
        gs_kube_node_release(&n);
    }
}

Test(volobj, class_without_topologies_allows_every_node_and_binds_at_once)
{
    struct gs_error err;
    cr_assert_eq(read_as(rd_sc,
                         "{\"metadata\":{\"name\":\"gp2\"},\"provisioner\":\"kubernetes.io/"
                         "aws-ebs\"}",
                         &obj, &err),
                 0, "%s", err.msg);
    cr_assert_eq(obj.s.mode, GS_BIND_IMMEDIATE);
    struct gs_kube_node n;
    node_of("n", "", &n);
    cr_assert(gs_kube_sc_node_allowed(&obj.s, &n));
    gs_kube_node_release(&n);
    /* terms are ORed, requirements in a term ANDed */
    cr_assert_eq(read_as(rd_sc,
                         "{\"metadata\":{\"name\":\"c\"},\"provisioner\":\"p\","
                         "\"allowedTopologies\":[{\"matchLabelExpressions\":[{\"key\":\"z\","
                         "\"values\":[\"a\"]},{\"key\":\"r\",\"values\":[\"x\"]}]},{"
                         "\"matchLabelExpressions\":[{\"key\":\"z\",\"values\":[\"b\"]}]}]}",
                         &obj, &err),
                 0, "%s", err.msg);
    const char *labels[] = {"\"z\":\"a\",\"r\":\"x\"", "\"z\":\"a\",\"r\":\"y\"", "\"z\":\"b\""};
    const bool allowed[] = {true, false, true};
    for (int i = 0; i < 3; i++) {
        node_of("n", labels[i], &n);
        cr_assert_eq(gs_kube_sc_node_allowed(&obj.s, &n), allowed[i], "node %d", i);
        gs_kube_node_release(&n);
    }
}

Test(volobj, bad_classes_name_the_field)
{
    static const struct bad cases[] = {
        {rd_sc, "{\"provisioner\":\"p\"}", "StorageClass: metadata.name is required", false},
        {rd_sc, "{\"metadata\":{\"name\":\"c\"}}", "StorageClass c: provisioner is required", true},
        {rd_sc,
         "{\"metadata\":{\"name\":\"c\"},\"provisioner\":\"p\",\"volumeBindingMode\":\"Lazy\"}",
         "volumeBindingMode: 'Lazy'", true},
        {rd_sc, "{\"metadata\":{\"name\":\"c\"},\"provisioner\":\"p\",\"allowedTopologies\":{}}",
         "allowedTopologies: expected a list", true},
        {rd_sc,
         "{\"metadata\":{\"name\":\"c\"},\"provisioner\":\"p\",\"allowedTopologies\":[{},{},{},{},"
         "{}]}",
         "allowedTopologies: 5 terms, at most 4", true},
        {rd_sc, "{\"metadata\":{\"name\":\"c\"},\"provisioner\":\"p\",\"allowedTopologies\":[{}]}",
         "allowedTopologies[0].matchLabelExpressions: expected a list", true},
        {rd_sc,
         "{\"metadata\":{\"name\":\"c\"},\"provisioner\":\"p\",\"allowedTopologies\":[{"
         "\"matchLabelExpressions\":[{\"key\":\"z\",\"values\":[]}]}]}",
         "allowedTopologies[0].matchLabelExpressions[0]: expected a key and 1..8 values", true},
        {rd_sc,
         "{\"metadata\":{\"name\":\"c\"},\"provisioner\":\"p\",\"allowedTopologies\":[{"
         "\"matchLabelExpressions\":[{\"key\":\"z\",\"values\":[3]}]}]}",
         "allowedTopologies[0].matchLabelExpressions[0].values[0]: expected a label value", true},
    };
    check_bad(cases, sizeof(cases) / sizeof(cases[0]));
}

/* ---------- CSIDriver, CSIStorageCapacity, CSINode ---------- */

Test(volobj, csi_driver_asks_for_capacity_tracking)
{
    struct gs_error err;
    cr_assert_eq(read_as(rd_csid,
                         "{\"metadata\":{\"name\":\"ebs.csi.aws.com\"},\"spec\":{"
                         "\"attachRequired\":true,\"storageCapacity\":true}}",
                         &obj, &err),
                 0, "%s", err.msg);
    cr_assert(obj.d.capacity);
    cr_assert_eq(read_as(rd_csid, "{\"metadata\":{\"name\":\"d\"},\"spec\":{}}", &obj, &err), 0);
    cr_assert_not(obj.d.capacity);
}

Test(volobj, capacity_reaches_the_nodes_its_topology_selects)
{
    struct gs_error err;
    cr_assert_eq(
        read_as(
            rd_csic,
            "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"CSIStorageCapacity\",\"metadata\":"
            "{\"name\":\"csisc-7x2kq\",\"namespace\":\"kube-system\"},\"storageClassName\":"
            "\"topolvm-provisioner\",\"capacity\":\"1800Gi\",\"maximumVolumeSize\":\"900Gi\","
            "\"nodeTopology\":{\"matchLabels\":{\"topology.topolvm.io/node\":\"gpu-01\"}}}",
            &obj, &err),
        0, "%s", err.msg);
    struct gs_kube_csicap cap = obj.k;
    cr_assert_str_eq(cap.cls, "topolvm-provisioner");
    cr_assert_eq(cap.capacity, 1800LL << 30);
    cr_assert_eq(cap.max_size, 900LL << 30);
    struct gs_kube_node a, b;
    node_of("gpu-01", "\"topology.topolvm.io/node\":\"gpu-01\"", &a);
    node_of("gpu-02", "\"topology.topolvm.io/node\":\"gpu-02\"", &b);
    cr_assert(gs_kube_csicap_node_matches(&cap, &a));
    cr_assert_not(gs_kube_csicap_node_matches(&cap, &b));
    /* no nodeTopology: no node; an empty one: every node; no sizes reported: -1 */
    cr_assert_eq(read_as(rd_csic,
                         "{\"metadata\":{\"name\":\"c\",\"namespace\":\"kube-system\"},"
                         "\"storageClassName\":\"s\"}",
                         &obj, &err),
                 0, "%s", err.msg);
    cr_assert_not(gs_kube_csicap_node_matches(&obj.k, &a));
    cr_assert_eq(obj.k.capacity, -1);
    cr_assert_eq(obj.k.max_size, -1);
    cr_assert_eq(read_as(rd_csic,
                         "{\"metadata\":{\"name\":\"c\",\"namespace\":\"kube-system\"},"
                         "\"storageClassName\":\"s\",\"nodeTopology\":{}}",
                         &obj, &err),
                 0, "%s", err.msg);
    cr_assert(gs_kube_csicap_node_matches(&obj.k, &a));
    cr_assert(gs_kube_csicap_node_matches(&obj.k, &b));
    gs_kube_node_release(&a);
    gs_kube_node_release(&b);
}

Test(volobj, csinode_limits_per_driver)
{
    struct gs_error err;
    cr_assert_eq(read_as(rd_csin,
                         "{\"metadata\":{\"name\":\"gpu-01\"},\"spec\":{\"drivers\":[{\"name\":"
                         "\"ebs.csi.aws.com\",\"nodeID\":\"i-0abc\",\"allocatable\":{\"count\":"
                         "25},\"topologyKeys\":[\"topology.ebs.csi.aws.com/zone\"]},{\"name\":"
                         "\"efs.csi.aws.com\",\"nodeID\":\"i-0abc\"}]}}",
                         &obj, &err),
                 0, "%s", err.msg);
    cr_assert_eq(obj.n.ndrivers, 2);
    cr_assert_str_eq(obj.n.drivers[0].name, "ebs.csi.aws.com");
    cr_assert_eq(obj.n.drivers[0].count, 25);
    cr_assert_eq(obj.n.drivers[1].count, -1, "no allocatable: no limit");
}

Test(volobj, bad_csi_objects_name_the_field)
{
    static const struct bad cases[] = {
        {rd_csid, "{\"spec\":{}}", "CSIDriver: metadata.name is required", false},
        {rd_csid, "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"storageCapacity\":\"yes\"}}",
         "CSIDriver d: spec.storageCapacity: expected a boolean", false},
        {rd_csic, "{\"metadata\":{\"name\":\"c\"},\"storageClassName\":\"s\"}",
         "CSIStorageCapacity c: metadata.namespace is required", false},
        {rd_csic, "{\"metadata\":{\"name\":\"c\",\"namespace\":\"k\"}}",
         "CSIStorageCapacity c: storageClassName is required", false},
        {rd_csic,
         "{\"metadata\":{\"name\":\"c\",\"namespace\":\"k\"},\"storageClassName\":\"s\","
         "\"capacity\":\"huge\"}",
         "CSIStorageCapacity c: capacity: 'huge'", false},
        {rd_csic,
         "{\"metadata\":{\"name\":\"c\",\"namespace\":\"k\"},\"storageClassName\":\"s\","
         "\"maximumVolumeSize\":true}",
         "maximumVolumeSize: expected a quantity", false},
        {rd_csic,
         "{\"metadata\":{\"name\":\"c\",\"namespace\":\"k\"},\"storageClassName\":\"s\","
         "\"nodeTopology\":{\"matchExpressions\":{}}}",
         "nodeTopology: expected matchLabels an object", false},
        {rd_csin, "{\"spec\":{}}", "CSINode: metadata.name is required", false},
        {rd_csin, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"drivers\":{}}}",
         "CSINode n: spec.drivers: expected a list", false},
        {rd_csin, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"drivers\":[{}]}}",
         "CSINode n: spec.drivers[0].name is required", false},
        {rd_csin,
         "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"drivers\":[{\"name\":\"d\",\"allocatable\":"
         "{\"count\":-1}}]}}",
         "spec.drivers[0].allocatable.count: expected a non-negative integer", false},
        {rd_csin,
         "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"drivers\":[{\"name\":\"a\"},{\"name\":\"b\"},"
         "{\"name\":\"c\"},{\"name\":\"d\"},{\"name\":\"e\"},{\"name\":\"f\"},{\"name\":\"g\"},"
         "{\"name\":\"h\"},{\"name\":\"i\"}]}}",
         "spec.drivers: 9 drivers, at most 8", false},
    };
    check_bad(cases, sizeof(cases) / sizeof(cases[0]));
}

/* ---------- label selectors ---------- */

static const char *kv_label(const void *labels, const char *key)
{
    /* labels: "k=v,k=v" */
    static char val[64];
    const char *s = labels;
    size_t kl = strlen(key);
    while (*s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len > kl && strncmp(s, key, kl) == 0 && s[kl] == '=') {
            snprintf(val, sizeof(val), "%.*s", (int)(len - kl - 1), s + kl + 1);
            return val;
        }
        s += len + (end ? 1 : 0);
    }
    return NULL;
}

Test(volobj, label_selector_requirements_are_anded)
{
    json_t *o = json_of("{\"matchLabels\":{\"app\":\"db\"},\"matchExpressions\":[{\"key\":"
                        "\"tier\",\"operator\":\"In\",\"values\":[\"gold\",\"silver\"]},{\"key\":"
                        "\"rack\",\"operator\":\"NotIn\",\"values\":[\"r9\"]},{\"key\":\"ssd\","
                        "\"operator\":\"Exists\"},{\"key\":\"retired\",\"operator\":"
                        "\"DoesNotExist\"}]}");
    struct gs_sel_req sel[8];
    int n;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_labelsel_read(o, sel, 8, &n, "Thing t", "spec.selector", &err), 0, "%s",
                 err.msg);
    json_decref(o);
    cr_assert_eq(n, 5);
    struct {
        const char *labels;
        bool match;
    } cases[] = {
        {"app=db,tier=gold,ssd=1", true},
        {"app=db,tier=silver,rack=r1,ssd=1", true},
        {"app=db,tier=bronze,ssd=1", false},
        {"app=web,tier=gold,ssd=1", false},
        {"app=db,tier=gold,rack=r9,ssd=1", false},
        {"app=db,tier=gold", false},
        {"app=db,tier=gold,ssd=1,retired=yes", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_assert_eq(gs_labelsel_matches(sel, n, kv_label, cases[i].labels), cases[i].match,
                     "case %zu: %s", i, cases[i].labels);
    /* absent or null: empty, every object matches */
    cr_assert_eq(gs_labelsel_read(NULL, sel, 8, &n, "Thing t", "spec.selector", &err), 0);
    cr_assert_eq(n, 0);
    cr_assert(gs_labelsel_matches(sel, 0, kv_label, ""));
}

Test(volobj, label_selector_bounds_name_the_field)
{
    const char *cases[][2] = {
        {"{\"matchLabels\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}}",
         "Thing t: spec.sel.matchLabels.c: more than 2 requirements"},
        {"{\"matchLabels\":{\"a\":1}}",
         "Thing t: spec.sel.matchLabels.a: expected at most 4 string"},
        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":\"x\"}]}",
         "spec.sel.matchExpressions[0].values: expected a list"},
        {"{\"matchExpressions\":[7]}", "spec.sel.matchExpressions[0]: expected an object"},
        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"NotIn\"}]}",
         "spec.sel.matchExpressions[0].values: expected values for NotIn"},
        {"\"app=db\"", "Thing t: spec.sel: expected a label selector"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = json_loads(cases[i][0], JSON_DECODE_ANY, NULL);
        cr_assert_not_null(o, "case %zu", i);
        struct gs_sel_req sel[2];
        int n;
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_neq(gs_labelsel_read(o, sel, 2, &n, "Thing t", "spec.sel", &err), 0,
                      "case %zu accepted", i);
        cr_assert(strstr(err.msg, cases[i][1]), "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i][1]);
        json_decref(o);
    }
    /* a key longer than a label key may be */
    char text[256];
    snprintf(text, sizeof(text), "{\"matchLabels\":{\"%0*d\":\"v\"}}", GS_LABEL_KEY_MAX, 0);
    json_t *o = json_of(text);
    struct gs_sel_req sel[2];
    int n;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_neq(gs_labelsel_read(o, sel, 2, &n, "Thing t", "spec.sel", &err), 0);
    cr_assert(strstr(err.msg, "expected a label key of 1.."), "%s", err.msg);
    json_decref(o);
}
