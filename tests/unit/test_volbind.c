/* A cycle's volumes (sched/volbind.h) on a small cluster in a detached store: the smallest
 * volume that fits is chosen, a volume pre-bound to the claim first; a placement reserves its
 * volume for the rest of the cycle; a claim whose provisioning chose a node fits that node
 * alone; ReadWriteOncePod; a node's CSI attach limit; CSIStorageCapacity and allowedTopologies
 * for provisioning; a bound volume's zone and node affinity; claims, volumes and classes
 * gpusched cannot read hold their pods with why; the binder's writes. Then a property: on
 * random volumes and claims, the volume each claim gets on each node is the one upstream's
 * FindMatchingVolume (every volume looked at) picks. */
#include "base/error.h"
#include "base/rng.h"
#include "formats/kubeobj.h"
#include "formats/volobj.h"
#include "sched/snapshot.h"
#include "sched/store.h"
#include "sched/tenancy.h"
#include "sched/volbind.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 16
#define MAXP 48
#define MAXO 200

/* ---------- the fixture ---------- */

static struct gs_kube_node nodes[MAXN];
static struct gs_kube_pod pods[MAXP];
static int nnodes, npods;
static struct gs_kube_pvc pvcs[MAXO];
static struct gs_kube_pv pvs[MAXO];
static struct gs_kube_sc classes[8];
static struct gs_kube_csidriver drivers[4];
static struct gs_kube_csicap caps[8];
static struct gs_kube_csinode csinodes[MAXN];
static struct gs_storage st;
static struct gs_store *store;
static struct gs_snapshot *sn;
static struct gs_volbind *vb;

static void setup(void)
{
    memset(&st, 0, sizeof(st));
    st.pvcs = pvcs;
    st.pvs = pvs;
    st.classes = classes;
    st.csidrivers = drivers;
    st.csicaps = caps;
    st.csinodes = csinodes;
    nnodes = npods = 0;
    store = NULL;
    sn = NULL;
    vb = NULL;
}

static void teardown(void)
{
    gs_volbind_free(vb);
    gs__snapshot_free(sn);
    gs__store_free(store);
}

TestSuite(volbind, .init = setup, .fini = teardown);

/* Node name in zone (a or b), labelled as a cloud node is. */
static void node(const char *name, const char *zone)
{
    char text[512];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/hostname\":\"%s\","
             "\"topology.kubernetes.io/zone\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":"
             "\"32\",\"memory\":\"128Gi\",\"pods\":\"110\"}}}",
             name, name, zone);
    json_t *o = json_of(text);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, &nodes[nnodes++], &err), 0, "%s", err.msg);
    json_decref(o);
}

/* Pod name in ml using claims (comma-separated), on node ("": pending). */
static void pod(const char *name, const char *claims, const char *on)
{
    cr_assert_lt(npods, MAXP);
    char vols[512] = "", text[1024];
    int k = 0;
    for (const char *c = claims; *c;) {
        const char *end = strchr(c, ',');
        int len = end ? (int)(end - c) : (int)strlen(c);
        snprintf(vols + strlen(vols), sizeof(vols) - strlen(vols),
                 "%s{\"name\":\"v%d\",\"persistentVolumeClaim\":{\"claimName\":\"%.*s\"}}",
                 k ? "," : "", k, len, c);
        k++;
        c += len + (end ? 1 : 0);
    }
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"uid-%s\"},\"spec\":{"
             "\"schedulerName\":\"gpusched\",\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\","
             "\"image\":\"i\"}],\"volumes\":[%s]},\"status\":{\"phase\":\"%s\"}}",
             name, name, on, vols, on[0] ? "Running" : "Pending");
    json_t *o = json_of(text);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, &pods[npods++], &err), 0, "%s", err.msg);
    json_decref(o);
}

/* A storage object from its JSON, into the array of its kind; refused ones are kept, as the
 * scheduler's feed keeps them. */
static void obj(const char *text)
{
    json_t *o = json_of(text);
    const char *kind = json_string_value(json_object_get(o, "kind"));
    cr_assert_not_null(kind, "%s", text);
    struct gs_error err;
    gs_error_init(&err);
    int rc = 0;
    if (strcmp(kind, "PersistentVolumeClaim") == 0) {
        rc = gs_kube_pvc_read(o, &pvcs[st.npvcs], &err);
        rc = rc && pvcs[st.npvcs].refused[0] ? 0 : rc;
        st.npvcs++;
    } else if (strcmp(kind, "PersistentVolume") == 0) {
        rc = gs_kube_pv_read(o, &pvs[st.npvs], &err);
        rc = rc && pvs[st.npvs].refused[0] ? 0 : rc;
        st.npvs++;
    } else if (strcmp(kind, "StorageClass") == 0) {
        rc = gs_kube_sc_read(o, &classes[st.nclasses], &err);
        rc = rc && classes[st.nclasses].refused[0] ? 0 : rc;
        st.nclasses++;
    } else if (strcmp(kind, "CSIDriver") == 0) {
        rc = gs_kube_csidriver_read(o, &drivers[st.ncsidrivers++], &err);
    } else if (strcmp(kind, "CSIStorageCapacity") == 0) {
        rc = gs_kube_csicap_read(o, &caps[st.ncsicaps++], &err);
    } else if (strcmp(kind, "CSINode") == 0) {
        rc = gs_kube_csinode_read(o, &csinodes[st.ncsinodes++], &err);
    }
    cr_assert_eq(rc, 0, "%s: %s", text, err.msg);
    json_decref(o);
}

static char buf[2048];

/* claim NAME CLASS SIZE [ACCESS] [EXTRA metadata fields] */
static void claim(const char *name, const char *cls, const char *size, const char *access,
                  const char *extra)
{
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
             "\"ml\",\"uid\":\"cuid-%s\",\"resourceVersion\":\"5\"%s},\"spec\":{\"accessModes\":"
             "[\"%s\"],\"storageClassName\":\"%s\",\"resources\":{\"requests\":{\"storage\":"
             "\"%s\"}}},\"status\":{\"phase\":\"Pending\"}}",
             name, name, extra ? extra : "", access ? access : "ReadWriteOnce", cls, size);
    obj(buf);
}

/* A claim bound to volume. */
static void bound_claim(const char *name, const char *volume, const char *access)
{
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
             "\"ml\"},\"spec\":{\"accessModes\":[\"%s\"],\"storageClassName\":\"\","
             "\"volumeName\":\"%s\"},\"status\":{\"phase\":\"Bound\"}}",
             name, access ? access : "ReadWriteOnce", volume);
    obj(buf);
}

/* A local volume of class cls on host; prebound: a claim named in its claimRef (or NULL). */
static void local_pv(const char *name, const char *cls, const char *size, const char *host,
                     const char *prebound)
{
    char ref[160] = "";
    if (prebound)
        snprintf(ref, sizeof(ref), ",\"claimRef\":{\"namespace\":\"ml\",\"name\":\"%s\"}",
                 prebound);
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"%s\",\"resourceVersion\":"
             "\"9\"},\"spec\":{\"capacity\":{\"storage\":\"%s\"},\"accessModes\":["
             "\"ReadWriteOnce\"],\"storageClassName\":\"%s\",\"local\":{\"path\":\"/mnt\"},"
             "\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
             "\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}"
             "%s},\"status\":{\"phase\":\"Available\"}}",
             name, size, cls, host, ref);
    obj(buf);
}

static void classes_local_and_csi(void)
{
    obj("{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"local\"},\"provisioner\":"
        "\"kubernetes.io/no-provisioner\",\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    obj("{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"csi\"},\"provisioner\":"
        "\"csi.example.com\",\"volumeBindingMode\":\"WaitForFirstConsumer\","
        "\"allowedTopologies\":[{\"matchLabelExpressions\":[{\"key\":"
        "\"topology.kubernetes.io/zone\",\"values\":[\"b\"]}]}]}");
    obj("{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"imm\"},\"provisioner\":"
        "\"csi.example.com\"}");
}

/* The store, the snapshot and the cycle's volumes over what the test added. */
static void start(struct gs_volassume *assume)
{
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs__store_new(NULL, GS_STORE_DETACHED, NULL, 60, &store, &err), 0, "%s", err.msg);
    cr_assert_eq(gs__store_load(store, nodes, nnodes, pods, npods), 0);
    cr_assert_eq(gs__snapshot_new(store, NULL, &sn), 0);
    vb = gs_volbind_new(&st, sn, assume);
    cr_assert_not_null(vb);
}

static int node_at(const char *name)
{
    int i = gs__snapshot_find_node(sn, name);
    cr_assert_geq(i, 0, "%s", name);
    return i;
}

static int pod_at(const char *name)
{
    for (int i = 0; i < gs__snapshot_npods(sn); i++)
        if (strcmp(gs__snapshot_pod(sn, i)->name, name) == 0)
            return i;
    cr_assert_fail("no pod %s", name);
    return -1;
}

/* Resolve pod name: 0 (vp filled) or 1 with why. */
static int resolve(const char *name, struct gs_volpod *vp, char *why, size_t n)
{
    why[0] = '\0';
    return gs_volbind_pod(vb, gs__snapshot_pod(sn, pod_at(name)), vp, why, n);
}

/* Place pod name on node and return its writes' text (a new string, "" without any). */
static char *place(const char *name, const char *on)
{
    struct gs_volpod vp;
    char why[300];
    cr_assert_eq(resolve(name, &vp, why, sizeof(why)), 0, "%s: %s", name, why);
    cr_assert_eq(gs_volbind_node(vb, &vp, node_at(on)), GS_VOLR_OK, "%s on %s", name, on);
    cr_assert_eq(gs_volbind_place(vb, pod_at(name), &vp, node_at(on)), 0);
    json_t *w = gs_volbind_writes(vb, pod_at(name), 30);
    char *text = w ? json_dumps(w, JSON_SORT_KEYS | JSON_COMPACT) : strdup("");
    json_decref(w);
    return text;
}

static int fit(const char *name, const char *on)
{
    struct gs_volpod vp;
    char why[300];
    cr_assert_eq(resolve(name, &vp, why, sizeof(why)), 0, "%s: %s", name, why);
    return gs_volbind_node(vb, &vp, node_at(on));
}

/* ---------- delayed binding ---------- */

Test(volbind, the_smallest_volume_that_fits_is_chosen)
{
    node("n0", "a");
    node("n1", "a");
    classes_local_and_csi();
    local_pv("big", "local", "100Gi", "n0", NULL);
    local_pv("mid", "local", "50Gi", "n0", NULL);
    local_pv("small", "local", "10Gi", "n0", NULL);
    local_pv("tiny", "local", "1Gi", "n0", NULL);
    local_pv("other", "local", "20Gi", "n1", NULL);
    claim("c5", "local", "5Gi", NULL, NULL);
    claim("c60", "local", "60Gi", NULL, NULL);
    claim("c500", "local", "500Gi", NULL, NULL);
    pod("p5", "c5", "");
    pod("p60", "c60", "");
    pod("p500", "c500", "");
    start(NULL);
    cr_assert_eq(fit("p500", "n0"), GS_VOLR_BIND, "no volume fits, the class cannot provision");
    char *w = place("p5", "n0");
    cr_assert(strstr(w, "\"path\":\"/api/v1/persistentvolumes/small\""), "%s", w);
    cr_assert(strstr(w, "\"claimRef\":{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\","
                        "\"name\":\"c5\",\"namespace\":\"ml\",\"resourceVersion\":\"5\","
                        "\"uid\":\"cuid-c5\"}"),
              "%s", w);
    cr_assert(strstr(w, "\"resourceVersion\":\"9\""), "guarded by the volume's version: %s", w);
    cr_assert(strstr(w, "\"wait\":[{\"name\":\"c5\",\"namespace\":\"ml\",\"volume\":\"small\"}]"),
              "the claim to wait for, and the volume it waits to be bound to: %s", w);
    free(w);
    w = place("p60", "n0");
    cr_assert(strstr(w, "persistentvolumes/big"), "%s", w);
    free(w);
}

Test(volbind, a_placement_reserves_its_volume_for_the_rest_of_the_cycle)
{
    node("n0", "a");
    classes_local_and_csi();
    local_pv("only", "local", "10Gi", "n0", NULL);
    claim("c1", "local", "5Gi", NULL, NULL);
    claim("c2", "local", "5Gi", NULL, NULL);
    pod("p1", "c1", "");
    pod("p2", "c2", "");
    start(NULL);
    cr_assert_eq(fit("p2", "n0"), GS_VOLR_OK);
    free(place("p1", "n0"));
    cr_assert_eq(fit("p2", "n0"), GS_VOLR_BIND, "the one volume went to c1");
}

Test(volbind, volumes_in_flight_stay_taken_in_the_next_cycle)
{
    node("n0", "a");
    classes_local_and_csi();
    local_pv("only", "local", "10Gi", "n0", NULL);
    claim("c1", "local", "5Gi", NULL, NULL);
    claim("c2", "local", "5Gi", NULL, NULL);
    pod("p1", "c1", "");
    pod("p2", "c2", "");
    struct gs_volassume *a = gs_volassume_new();
    cr_assert_not_null(a);
    start(a);
    free(place("p1", "n0"));
    /* the next cycle: the objects do not show the bind yet */
    gs_volbind_free(vb);
    vb = gs_volbind_new(&st, sn, a);
    cr_assert_eq(fit("p2", "n0"), GS_VOLR_BIND, "still assumed for c1");
    /* the bind failed: forgotten */
    gs_volassume_drop(a, "ml", "c1");
    gs_volbind_free(vb);
    vb = gs_volbind_new(&st, sn, a);
    cr_assert_eq(fit("p2", "n0"), GS_VOLR_OK);
    gs_volbind_free(vb);
    vb = NULL;
    gs_volassume_free(a);
}

Test(volbind, a_volume_pre_bound_to_the_claim_comes_first)
{
    node("n0", "a");
    classes_local_and_csi();
    local_pv("small", "local", "10Gi", "n0", NULL);
    local_pv("reserved", "local", "500Gi", "n0", "c1");
    local_pv("theirs", "local", "6Gi", "n0", "someone-else");
    claim("c1", "local", "5Gi", NULL, NULL);
    claim("c2", "local", "5Gi", NULL, NULL);
    pod("p1", "c1", "");
    pod("p2", "c2", "");
    start(NULL);
    char *w = place("p1", "n0");
    cr_assert(strstr(w, "persistentvolumes/reserved"), "%s", w);
    free(w);
    w = place("p2", "n0");
    cr_assert(strstr(w, "persistentvolumes/small"), "a volume claimed by another is not: %s", w);
    free(w);
}

Test(volbind, a_node_chosen_for_provisioning_is_the_only_one)
{
    node("n0", "b");
    node("n1", "b");
    classes_local_and_csi();
    claim("c1", "csi", "5Gi", NULL,
          ",\"annotations\":{\"volume.kubernetes.io/selected-node\":\"n1\"}");
    claim("c2", "csi", "5Gi", NULL,
          ",\"annotations\":{\"volume.kubernetes.io/selected-node\":\"gone\"}");
    pod("p1", "c1", "");
    pod("p2", "c2", "");
    start(NULL);
    cr_assert_eq(fit("p1", "n0"), GS_VOLR_BIND);
    cr_assert_eq(fit("p1", "n1"), GS_VOLR_OK);
    cr_assert_eq(fit("p2", "n0"), GS_VOLR_BIND, "a node the cycle does not hold: none fits");
    cr_assert_eq(fit("p2", "n1"), GS_VOLR_BIND);
    char *w = place("p1", "n1");
    cr_assert(
        strstr(w, "\"writes\":[]") &&
            strstr(w, "\"wait\":[{\"class\":\"csi\",\"driver\":false,\"name\":\"c1\","
                      "\"namespace\":\"ml\",\"provisioner\":\"csi.example.com\"}]"),
        "nothing to write; the claim to wait for, its class and provisioner (no CSIDriver): %s", w);
    free(w);
}

Test(volbind, provisioning_follows_topologies_and_capacity)
{
    node("na", "a");
    node("nb", "b");
    node("nb2", "b");
    classes_local_and_csi();
    obj("{\"kind\":\"CSIDriver\",\"metadata\":{\"name\":\"csi.example.com\"},\"spec\":{"
        "\"storageCapacity\":true}}");
    /* 20Gi where nb is, 100Gi (but volumes of 8Gi at most) where nb2 is */
    obj("{\"kind\":\"CSIStorageCapacity\",\"metadata\":{\"name\":\"c1\",\"namespace\":\"k\"},"
        "\"storageClassName\":\"csi\",\"capacity\":\"20Gi\",\"nodeTopology\":{\"matchLabels\":{"
        "\"kubernetes.io/hostname\":\"nb\"}}}");
    obj("{\"kind\":\"CSIStorageCapacity\",\"metadata\":{\"name\":\"c2\",\"namespace\":\"k\"},"
        "\"storageClassName\":\"csi\",\"capacity\":\"100Gi\",\"maximumVolumeSize\":\"8Gi\","
        "\"nodeTopology\":{\"matchLabels\":{\"kubernetes.io/hostname\":\"nb2\"}}}");
    claim("c10", "csi", "10Gi", NULL, NULL);
    claim("c30", "csi", "30Gi", NULL, NULL);
    pod("p10", "c10", "");
    pod("p30", "c30", "");
    start(NULL);
    cr_assert_eq(fit("p10", "na"), GS_VOLR_BIND, "zone a is not in allowedTopologies");
    cr_assert_eq(fit("p10", "nb"), GS_VOLR_OK);
    cr_assert_eq(fit("p10", "nb2"), GS_VOLR_SPACE, "maximumVolumeSize 8Gi");
    cr_assert_eq(fit("p30", "nb"), GS_VOLR_SPACE);
    char *w = place("p10", "nb");
    cr_assert(strstr(w, "\"driver\":true"), "a CSIDriver is registered: %s", w);
    cr_assert(strstr(w, "\"path\":\"/api/v1/namespaces/ml/persistentvolumeclaims/c10\"") &&
                  strstr(w, "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/"
                            "selected-node\":\"nb\"}}}"),
              "%s", w);
    free(w);
}

Test(volbind, csi_attach_limits_count_volumes_in_use_once)
{
    node("n0", "b");
    node("n1", "b");
    classes_local_and_csi();
    obj("{\"kind\":\"CSINode\",\"metadata\":{\"name\":\"n0\"},\"spec\":{\"drivers\":[{\"name\":"
        "\"csi.example.com\",\"nodeID\":\"n0\",\"allocatable\":{\"count\":1}}]}}");
    obj("{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"used\"},\"spec\":{\"capacity\":"
        "{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteMany\"],\"csi\":{\"driver\":"
        "\"csi.example.com\",\"volumeHandle\":\"h\"},\"claimRef\":{\"namespace\":\"ml\","
        "\"name\":\"shared\"}},\"status\":{\"phase\":\"Bound\"}}");
    bound_claim("shared", "used", "ReadWriteMany");
    claim("fresh", "csi", "1Gi", NULL, NULL);
    pod("running", "shared", "n0");
    pod("same", "shared", "");
    pod("new", "fresh", "");
    start(NULL);
    cr_assert_eq(fit("new", "n0"), GS_VOLR_LIMIT, "n0's one CSI volume is in use");
    cr_assert_eq(fit("new", "n1"), GS_VOLR_OK, "no CSINode: no limit");
    cr_assert_eq(fit("same", "n0"), GS_VOLR_OK, "a volume in use there already counts once");
}

Test(volbind, read_write_once_pod_claims_have_one_pod)
{
    node("n0", "a");
    classes_local_and_csi();
    obj("{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"v\"},\"spec\":{\"capacity\":{"
        "\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOncePod\"],\"storageClassName\":"
        "\"local\"},\"status\":{\"phase\":\"Available\"}}");
    claim("solo", "local", "1Gi", "ReadWriteOncePod", NULL);
    pod("first", "solo", "");
    pod("second", "solo", "");
    start(NULL);
    free(place("first", "n0"));
    struct gs_volpod vp;
    char why[300];
    cr_assert_eq(resolve("second", &vp, why, sizeof(why)), 1);
    cr_assert(strstr(why, "ReadWriteOncePod access mode"), "%s", why);
}

Test(volbind, a_bound_volume_holds_its_pod_to_its_node_and_zone)
{
    node("na", "a");
    node("nb", "b");
    classes_local_and_csi();
    obj("{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"zonal\",\"labels\":{"
        "\"topology.kubernetes.io/zone\":\"b\"}},\"spec\":{\"capacity\":{\"storage\":\"1Gi\"},"
        "\"accessModes\":[\"ReadWriteOnce\"],\"claimRef\":{\"namespace\":\"ml\",\"name\":\"cz\"}},"
        "\"status\":{\"phase\":\"Bound\"}}");
    local_pv("pinned", "local", "1Gi", "na", "ch");
    bound_claim("cz", "zonal", NULL);
    bound_claim("ch", "pinned", NULL);
    bound_claim("lost", "nowhere", NULL);
    pod("pz", "cz", "");
    pod("ph", "ch", "");
    pod("pl", "lost", "");
    start(NULL);
    cr_assert_eq(fit("pz", "na"), GS_VOLR_ZONE);
    cr_assert_eq(fit("pz", "nb"), GS_VOLR_OK);
    cr_assert_eq(fit("ph", "na"), GS_VOLR_OK);
    cr_assert_eq(fit("ph", "nb"), GS_VOLR_AFFINITY);
    struct gs_volpod vp;
    char why[300];
    cr_assert_eq(resolve("pl", &vp, why, sizeof(why)), 1);
    cr_assert(strstr(why, "bound to non-existent pv"), "%s", why);
    cr_assert_str_eq(gs_volbind_reason(GS_VOLR_ZONE), "node(s) had no available volume zone");
}

Test(volbind, claims_that_wait_everywhere_say_why)
{
    node("n0", "a");
    classes_local_and_csi();
    claim("imm", "imm", "1Gi", NULL, NULL);
    claim("nocls", "missing", "1Gi", NULL, NULL);
    /* the API server takes five values; gpusched keeps four */
    obj("{\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"odd\",\"namespace\":\"ml\"},"
        "\"spec\":{\"storageClassName\":\"local\",\"selector\":{\"matchExpressions\":[{\"key\":"
        "\"tier\",\"operator\":\"In\",\"values\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}]}}}");
    obj("{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"wide\"},\"provisioner\":\"p\","
        "\"volumeBindingMode\":\"WaitForFirstConsumer\",\"allowedTopologies\":[{},{},{},{},{}]}");
    claim("cwide", "wide", "1Gi", NULL, NULL);
    claim("deleting", "local", "1Gi", NULL, ",\"deletionTimestamp\":\"2025-06-01T12:00:00Z\"");
    pod("p1", "imm", "");
    pod("p2", "nocls", "");
    pod("p3", "odd", "");
    pod("p4", "cwide", "");
    pod("p5", "deleting", "");
    pod("p6", "absent", "");
    start(NULL);
    struct {
        const char *pod, *why;
    } cases[] = {
        {"p1", "pod has unbound immediate PersistentVolumeClaims (\"imm\")"},
        {"p2", "persistentvolumeclaim \"nocls\": storageclass.storage.k8s.io \"missing\" not "
               "found"},
        {"p3", "gpusched cannot read persistentvolumeclaim \"odd\": spec.selector."
               "matchExpressions[0].values: expected at most 4"},
        {"p4", "persistentvolumeclaim \"cwide\": gpusched cannot read storageclass.storage.k8s.io "
               "\"wide\": allowedTopologies: 5 terms, at most 4"},
        {"p5", "persistentvolumeclaim \"deleting\" is being deleted"},
        {"p6", "persistentvolumeclaim \"absent\" not found"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gs_volpod vp;
        char why[300];
        cr_assert_eq(resolve(cases[i].pod, &vp, why, sizeof(why)), 1, "%s", cases[i].pod);
        cr_assert(strstr(why, cases[i].why), "%s: '%s' lacks '%s'", cases[i].pod, why,
                  cases[i].why);
    }
}

Test(volbind, a_claim_bound_to_a_volume_gpusched_cannot_read_waits_saying_so)
{
    node("n0", "a");
    obj("{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"wide\"},\"spec\":{\"capacity\":"
        "{\"storage\":\"1Gi\"},\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{"
        "\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\","
        "\"values\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\"]}]}]}}}}");
    bound_claim("c", "wide", NULL);
    pod("p", "c", "");
    start(NULL);
    struct gs_volpod vp;
    char why[300];
    cr_assert_eq(resolve("p", &vp, why, sizeof(why)), 1);
    cr_assert(strstr(why, "persistentvolumeclaim \"c\" is bound to persistentvolume \"wide\", "
                          "which gpusched cannot read: spec.nodeAffinity"),
              "%s", why);
}

/* ---------- the index against upstream's scan ---------- */

/* upstream's FindMatchingVolume on every volume: pre-bound first, else the smallest available
 * volume of the class that fits (capacity, access modes, node affinity), the first among
 * equals; taken: volumes given already. */
static int reference_match(const struct gs_kube_pvc *c, const struct gs_kube_node *n,
                           const int8_t *taken)
{
    int best = -1;
    for (int v = 0; v < st.npvs; v++) {
        const struct gs_kube_pv *pv = &pvs[v];
        bool pre = pv->claim_name[0] && strcmp(pv->claim_name, c->name) == 0 &&
                   strcmp(pv->claim_ns, c->ns) == 0;
        if (pv->deleting || (pv->claim_name[0] && !pre) || taken[v] ||
            !gs_kube_pv_node_matches(pv, n))
            continue;
        if (pre)
            return v;
        if (pv->phase != GS_PV_AVAILABLE || strcmp(pv->cls, c->cls) != 0 ||
            (pv->access & c->access) != c->access || pv->capacity < c->request)
            continue;
        if (best < 0 || pv->capacity < pvs[best].capacity)
            best = v;
    }
    return best;
}

Test(volbind, every_claim_gets_the_volume_upstream_would_pick)
{
    struct gs_rng rng;
    gs_rng_init(&rng, 20);
    static const char *const zones[] = {"a", "b"};
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof(name), "n%d", i);
        node(name, zones[i % 2]);
    }
    classes_local_and_csi();
    obj("{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"shared\"},\"provisioner\":"
        "\"kubernetes.io/no-provisioner\",\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    static const char *const sizes[] = {"1Gi", "5Gi", "10Gi", "50Gi"};
    for (int v = 0; v < 120; v++) {
        char name[16], host[8], ref[96] = "";
        snprintf(name, sizeof(name), "v%03d", v);
        snprintf(host, sizeof(host), "n%d", (int)gs_rng_below(&rng, 6));
        int shape = (int)gs_rng_below(&rng, 4);
        if (gs_rng_below(&rng, 10) == 0)
            snprintf(ref, sizeof(ref), ",\"claimRef\":{\"namespace\":\"ml\",\"name\":\"c%02d\"}",
                     (int)gs_rng_below(&rng, 40));
        const char *aff = shape == 0 ? ""
                          : shape == 1
                              ? ",\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{"
                                "\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\","
                                "\"operator\":\"In\",\"values\":[\"a\"]}]}]}}"
                              : NULL;
        char hostaff[256];
        snprintf(hostaff, sizeof(hostaff),
                 ",\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
                 "\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}",
                 host);
        snprintf(buf, sizeof(buf),
                 "{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
                 "\"capacity\":{\"storage\":\"%s\"},\"accessModes\":[\"%s\"],"
                 "\"storageClassName\":\"%s\"%s%s},\"status\":{\"phase\":\"%s\"}}",
                 name, sizes[gs_rng_below(&rng, 4)],
                 gs_rng_below(&rng, 5) ? "ReadWriteOnce" : "ReadOnlyMany",
                 gs_rng_below(&rng, 2) ? "local" : "shared", aff ? aff : hostaff, ref,
                 gs_rng_below(&rng, 8) ? "Available" : "Released");
        obj(buf);
    }
    for (int c = 0; c < 40; c++) {
        char name[8];
        snprintf(name, sizeof(name), "c%02d", c);
        claim(name, gs_rng_below(&rng, 2) ? "local" : "shared", sizes[gs_rng_below(&rng, 4)], NULL,
              NULL);
    }
    /* one pod per claim, placed in turn on a random node that fits */
    for (int c = 0; c < 40; c++) {
        char name[8], cl[8];
        snprintf(name, sizeof(name), "p%02d", c);
        snprintf(cl, sizeof(cl), "c%02d", c);
        pod(name, cl, "");
    }
    start(NULL);
    int8_t taken[MAXO] = {0};
    int matched = 0;
    for (int c = 0; c < 40; c++) {
        char name[8];
        snprintf(name, sizeof(name), "p%02d", c);
        struct gs_volpod vp;
        char why[300];
        cr_assert_eq(resolve(name, &vp, why, sizeof(why)), 0, "%s: %s", name, why);
        const struct gs_kube_pvc *cl = &pvcs[vp.pvc[0]];
        int on = -1, want = -1;
        for (int n = 0; n < nnodes; n++) {
            int ref = reference_match(cl, gs__snapshot_node(sn, n), taken);
            int got = gs_volbind_node(vb, &vp, n);
            cr_assert_eq(got == GS_VOLR_OK, ref >= 0, "%s on n%d: %d, upstream's volume %d", name,
                         n, got, ref);
            if (ref >= 0 && (on < 0 || gs_rng_below(&rng, 2))) {
                on = n;
                want = ref;
            }
        }
        if (on < 0)
            continue;
        cr_assert_eq(gs_volbind_place(vb, pod_at(name), &vp, on), 0);
        json_t *w = gs_volbind_writes(vb, pod_at(name), 30);
        const char *path = json_string_value(
            json_object_get(json_array_get(json_object_get(w, "writes"), 0), "path"));
        cr_assert_not_null(path, "%s", name);
        cr_assert_str_eq(strrchr(path, '/') + 1, pvs[want].name, "%s on n%d", name, on);
        json_decref(w);
        taken[want] = 1;
        matched++;
    }
    cr_assert_geq(matched, 20, "only %d claims matched: the fixture tests little", matched);
}
