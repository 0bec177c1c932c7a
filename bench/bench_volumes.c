/* bench_volumes - the live scheduler's cycle with volumes: 10,000 pending pods onto 5,000
 * nodes x 8 GPUs in 4 zones (bench/cluster_fixture.h's node and pod shapes, as Node and Pod
 * objects), through the scheduler's own path: a detached store (sched/store.h), the cycle's
 * snapshot, input and hooks (sched/cyclein.h: gs__cycle_take, gs__cycle_prepare, gs__cycle_run,
 * which call sched/volbind.h for every pod and node as the daemon does), then the binder's
 * volume writes of every placed pod (gs_volbind_writes). Two runs of the same pods in the same
 * order: plain (no volumes, no storage objects) and with 30 % of the pods using a
 * PersistentVolumeClaim, a mix as a real cluster holds them:
 *
 *   bound   a third: claims bound to volumes, half zonal (a CSI volume with zone affinity and
 *           zone labels), half local (node affinity to one host)
 *   local   a third: WaitForFirstConsumer claims of a local class (no provisioner), matched on
 *           each node to the local volumes there (one or two per node on 3 nodes in 5, 375Gi to
 *           3Ti): the smallest that fits is chosen
 *   csi     a third: WaitForFirstConsumer claims of a CSI class whose allowedTopologies name 3
 *           zones of 4, whose CSIDriver asks for capacity tracking (a CSIStorageCapacity per
 *           zone) and whose CSINodes allow 25 volumes a node; provisioned on the chosen node
 *
 * beside 4,000 volumes bound to other workloads' claims. Every storage object is read from
 * the JSON the API server serves (formats/volobj.h), and each cycle copies them as the
 * daemon's cycle copies its feed's objects. The live scheduler reads GPUs as whole, MIG,
 * time-sliced or MPS; the fixture's shares (milli-GPU) are set on the snapshot's cluster after
 * it is built, so both runs place the fixture's pods on its nodes. The placements are checked
 * (each pod's volumes reachable from its node, no volume given twice, no provisioning outside
 * the class's zones, no node over its CSI limit). Each figure is the best of RUNS cycles,
 * timed in this thread's CPU time (wall-clock beside). Prints one JSON line; argv: [nodes pods
 * [volume_pct]]. */
#include "base/error.h"
#include "base/rng.h"
#include "cluster_fixture.h"
#include "core/cycle.h"
#include "formats/inventory.h"
#include "formats/kubeobj.h"
#include "formats/volobj.h"
#include "sched/cyclein.h"
#include "sched/store.h"
#include "sched/tenancy.h"
#include "sched/volbind.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZONES     4
#define RUNS      3
#define OTHER_PVS 4000
#define CSI_LIMIT 25
#define CSI_NAME  "ebs.csi.aws.com"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const struct gs_error *err)
{
    fprintf(stderr, "bench_volumes: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
    exit(1);
}

/* ---------- nodes ---------- */

enum ntype { H100 = 0, A100, L40S };

static enum ntype node_type(int i)
{
    return i % 4 == 2 ? A100 : i % 4 == 3 ? L40S : H100;
}

static void zone_of(int i, char *z, size_t n)
{
    snprintf(z, n, "zone-%c", 'a' + (i / 25) % ZONES); /* as fixture_build deals them */
}

/* Node i as the API server serves it: labelled as a cloud node with the GPU Operator, its
 * devices in gpusched's inventory annotation (the A100s carved 3g.40gb + 4 x 1g.10gb). */
static void read_node(int i, struct gs_kube_node *out)
{
    static const char *const models[] = {"H100-80GB", "A100-80GB", "L40S-48GB"};
    static const char *const products[] = {"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB",
                                           "NVIDIA-L40S"};
    static const char *const cpu[] = {"192", "128", "64"}, *const mem[] = {"2Ti", "1Ti", "512Gi"};
    enum ntype t = node_type(i);
    int model = gs_catalog_find(models[t]);
    char name[32], zone[16], uuid[96];
    snprintf(name, sizeof(name), "node-%05d", i);
    zone_of(i, zone, sizeof(zone));
    static struct gs_inventory inv;
    memset(&inv, 0, sizeof(inv));
    inv.version = GS_INVENTORY_VERSION;
    inv.ngpus = 8;
    struct gs_mig_placement pl;
    if (t == A100) {
        struct gs_mig_layout l;
        memset(&l, 0, sizeof(l));
        l.count[gs_catalog_find_profile(model, "3g.40gb")] = 1;
        l.count[gs_catalog_find_profile(model, "1g.10gb")] = 4;
        if (gs_mig_place(model, &l, &pl, NULL))
            die("placing the A100 layout", NULL);
    }
    for (int g = 0; g < 8; g++) {
        struct gs_inv_gpu *ig = &inv.gpus[g];
        ig->index = g;
        snprintf(uuid, sizeof(uuid), "GPU-%s-%d", name, g);
        snprintf(ig->uuid, sizeof(ig->uuid), "%s", uuid);
        snprintf(ig->model, sizeof(ig->model), "%s", gs_catalog_get(model)->name);
        ig->mem_mib = gs_catalog_get(model)->mem_mib;
        ig->healthy = true;
        ig->replicas = 1;
        ig->mode = t == A100 ? GS_GPU_MIG : GS_GPU_WHOLE;
        for (int s = 0; t == A100 && s < pl.n; s++) {
            snprintf(ig->inst[s].profile, sizeof(ig->inst[s].profile), "%s",
                     gs_catalog_get(model)->profiles[pl.inst[s].profile].name);
            ig->inst[s].start = pl.inst[s].start;
            ig->ninst++;
        }
    }
    char *text = gs_inventory_write(&inv);
    json_t *alloc = json_pack("{s:s, s:s, s:s, s:s}", "cpu", cpu[t], "memory", mem[t], "pods",
                              "110", "ephemeral-storage", "3Ti");
    if (t == A100) {
        json_object_set_new(alloc, "nvidia.com/mig-3g.40gb", json_string("8"));
        json_object_set_new(alloc, "nvidia.com/mig-1g.10gb", json_string("32"));
    } else {
        json_object_set_new(alloc, "nvidia.com/gpu", json_string("8"));
    }
    json_t *o = json_pack(
        "{s:{s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:{s:s}}, s:{s:o, s:o}}",
        "metadata", "name", name, "labels", "kubernetes.io/hostname", name, "kubernetes.io/os",
        "linux", "kubernetes.io/arch", "amd64", "node.kubernetes.io/instance-type",
        t == A100 ? "p4de.24xlarge" : "p5.48xlarge", "topology.kubernetes.io/region", "us-east-1",
        FIXTURE_ZONE_KEY, zone, "nvidia.com/gpu.product", products[t], "nvidia.com/gpu.count", "8",
        "nvidia.com/gpu.present", "true", "annotations", GS_INVENTORY_ANNOTATION, text ? text : "",
        "status", "allocatable", alloc, "capacity", json_deep_copy(alloc));
    free(text);
    struct gs_error err;
    gs_error_init(&err);
    if (!o || gs_kube_node_read(o, out, &err))
        die(name, &err);
    json_decref(o);
}

/* ---------- pods ---------- */

/* Pod i of shape r as a Job creates it; claim (NULL: none) in spec.volumes. */
static void read_pod(int i, const struct gs_request *r, const char *claim, struct gs_kube_pod *out)
{
    char name[32], cpu[32], mem[32], v[16];
    snprintf(name, sizeof(name), "job-%05d", i);
    snprintf(cpu, sizeof(cpu), "%lldm", (long long)r->cpu_milli);
    snprintf(mem, sizeof(mem), "%lldMi", (long long)r->mem_mib);
    json_t *res = json_pack("{s:s, s:s}", "cpu", cpu, "memory", mem);
    if (r->kind == GS_REQ_GPU) {
        snprintf(v, sizeof(v), "%d", r->gpus);
        json_object_set_new(res, "nvidia.com/gpu", json_string(v));
    } else if (r->kind == GS_REQ_FRACTION) {
        snprintf(v, sizeof(v), "%d", r->milli);
        json_object_set_new(res, "gpusched.io/gpu-milli", json_string(v));
    } else if (r->kind == GS_REQ_MIG) {
        char key[64];
        snprintf(key, sizeof(key), "nvidia.com/mig-%s", r->mig);
        json_object_set_new(res, key, json_string("1"));
    }
    json_t *ctr = json_pack("{s:s, s:s, s:{s:o, s:o}}", "name", "main", "image",
                            "nvcr.io/nvidia/pytorch:24.05-py3", "resources", "requests", res,
                            "limits", json_deep_copy(res));
    json_t *spec = json_pack("{s:s, s:s, s:[o]}", "schedulerName", "gpusched", "restartPolicy",
                             "Never", "containers", ctr);
    if (claim) {
        json_object_set_new(json_array_get(json_object_get(spec, "containers"), 0), "volumeMounts",
                            json_pack("[{s:s, s:s}]", "name", "data", "mountPath", "/data"));
        json_object_set_new(spec, "volumes",
                            json_pack("[{s:s, s:{s:s}}]", "name", "data", "persistentVolumeClaim",
                                      "claimName", claim));
    }
    char uid[48];
    snprintf(uid, sizeof(uid), "6f1c2a4e-0000-4000-8000-%012d", i);
    json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{s:s}}, s:o, s:{s:s}}", "apiVersion",
                          "v1", "kind", "Pod", "metadata", "name", name, "namespace", "ml", "uid",
                          uid, "creationTimestamp", "2025-06-01T12:00:00Z", "labels", "job-name",
                          name, "spec", spec, "status", "phase", "Pending");
    struct gs_error err;
    gs_error_init(&err);
    if (!o || gs_kube_pod_read(o, out, &err))
        die(name, &err);
    gs_kube_pod_read_constraints(o, out);
    json_decref(o);
}

/* ---------- storage objects ---------- */

struct objs {
    struct gs_kube_pvc *pvcs;
    struct gs_kube_pv *pvs;
    int npvcs, npvs, cap_pvcs, cap_pvs;
    struct gs_policy_objs po;
};

static void add_pvc(struct objs *o, json_t *j)
{
    if (o->npvcs == o->cap_pvcs) {
        o->cap_pvcs = o->cap_pvcs ? o->cap_pvcs * 2 : 1024;
        o->pvcs = realloc(o->pvcs, sizeof(*o->pvcs) * (size_t)o->cap_pvcs);
    }
    struct gs_error err;
    gs_error_init(&err);
    if (!o->pvcs || !j || gs_kube_pvc_read(j, &o->pvcs[o->npvcs++], &err))
        die("a PersistentVolumeClaim", &err);
    json_decref(j);
}

static void add_pv(struct objs *o, json_t *j)
{
    if (o->npvs == o->cap_pvs) {
        o->cap_pvs = o->cap_pvs ? o->cap_pvs * 2 : 1024;
        o->pvs = realloc(o->pvs, sizeof(*o->pvs) * (size_t)o->cap_pvs);
    }
    struct gs_error err;
    gs_error_init(&err);
    if (!o->pvs || !j || gs_kube_pv_read(j, &o->pvs[o->npvs++], &err))
        die("a PersistentVolume", &err);
    json_decref(j);
}

/* A claim: class cls, size Gi, bound to volume (NULL: pending). */
static json_t *pvc_json(const char *ns, const char *name, const char *cls, int gi,
                        const char *volume)
{
    char size[16], uid[48];
    snprintf(size, sizeof(size), "%dGi", gi);
    snprintf(uid, sizeof(uid), "pvc-%s-%s", ns, name);
    json_t *spec = json_pack("{s:[s], s:s, s:s, s:{s:{s:s}}}", "accessModes", "ReadWriteOnce",
                             "storageClassName", cls, "volumeMode", "Filesystem", "resources",
                             "requests", "storage", size);
    if (volume)
        json_object_set_new(spec, "volumeName", json_string(volume));
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:o, s:{s:s}}", "apiVersion", "v1", "kind",
                     "PersistentVolumeClaim", "metadata", "name", name, "namespace", ns, "uid", uid,
                     "resourceVersion", "1000", "spec", spec, "status", "phase",
                     volume ? "Bound" : "Pending");
}

/* A volume of size Gi: a local one on host (the local class), or a zonal CSI one in zone
 * (host NULL); claimed by ns/claim when claim is not NULL. */
static json_t *pv_json(const char *name, int gi, const char *host, const char *zone, const char *ns,
                       const char *claim)
{
    char size[16];
    snprintf(size, sizeof(size), "%dGi", gi);
    json_t *term = json_pack("{s:[{s:s, s:s, s:[s]}]}", "matchExpressions", "key",
                             host ? GS_KHOSTNAME_KEY : FIXTURE_ZONE_KEY, "operator", "In", "values",
                             host ? host : zone);
    json_t *spec = json_pack("{s:{s:s}, s:[s], s:s, s:s, s:s, s:{s:{s:[o]}}}", "capacity",
                             "storage", size, "accessModes", "ReadWriteOnce",
                             "persistentVolumeReclaimPolicy", host ? "Retain" : "Delete",
                             "storageClassName", host ? "local-nvme" : "gp3", "volumeMode",
                             "Filesystem", "nodeAffinity", "required", "nodeSelectorTerms", term);
    if (host) {
        json_object_set_new(spec, "local", json_pack("{s:s}", "path", "/mnt/disks/nvme0"));
    } else {
        char handle[64];
        snprintf(handle, sizeof(handle), "vol-0%s", name + 3);
        json_object_set_new(spec, "csi",
                            json_pack("{s:s, s:s, s:{s:s}}", "driver", CSI_NAME, "volumeHandle",
                                      handle, "fsType", "ext4"));
    }
    if (claim)
        json_object_set_new(spec, "claimRef",
                            json_pack("{s:s, s:s, s:s, s:s}", "kind", "PersistentVolumeClaim",
                                      "namespace", ns, "name", claim, "apiVersion", "v1"));
    json_t *md = json_pack("{s:s, s:s}", "name", name, "resourceVersion", "900");
    if (!host)
        json_object_set_new(md, "labels",
                            json_pack("{s:s, s:s}", FIXTURE_ZONE_KEY, zone,
                                      "topology.kubernetes.io/region", "us-east-1"));
    return json_pack("{s:s, s:s, s:o, s:o, s:{s:s}}", "apiVersion", "v1", "kind",
                     "PersistentVolume", "metadata", md, "spec", spec, "status", "phase",
                     claim ? "Bound" : "Available");
}

/* The classes, the CSI driver, its capacity per zone and every node's CSINode. */
static void cluster_storage(struct gs_storage *st, int nodes)
{
    const char *const objs[] = {
        "{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"local-nvme\"},"
        "\"provisioner\":\"kubernetes.io/no-provisioner\","
        "\"volumeBindingMode\":\"WaitForFirstConsumer\"}",
        "{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"gp3\",\"annotations\":"
        "{\"storageclass.kubernetes.io/is-default-class\":\"true\"}},\"provisioner\":"
        "\"" CSI_NAME "\",\"parameters\":{\"type\":\"gp3\"},\"reclaimPolicy\":\"Delete\","
        "\"allowVolumeExpansion\":true,\"volumeBindingMode\":\"WaitForFirstConsumer\","
        "\"allowedTopologies\":[{\"matchLabelExpressions\":[{\"key\":"
        "\"topology.kubernetes.io/zone\",\"values\":[\"zone-a\",\"zone-b\",\"zone-c\"]}]}]}",
    };
    struct gs_error err;
    gs_error_init(&err);
    st->nclasses = 2;
    st->classes = calloc(2, sizeof(*st->classes));
    st->ncsidrivers = 1;
    st->csidrivers = calloc(1, sizeof(*st->csidrivers));
    st->ncsicaps = ZONES;
    st->csicaps = calloc(ZONES, sizeof(*st->csicaps));
    st->ncsinodes = nodes;
    st->csinodes = calloc((size_t)nodes, sizeof(*st->csinodes));
    if (!st->classes || !st->csidrivers || !st->csicaps || !st->csinodes)
        die("out of memory", NULL);
    for (int i = 0; i < 2; i++) {
        json_t *j = json_loads(objs[i], 0, NULL);
        if (!j || gs_kube_sc_read(j, &st->classes[i], &err))
            die("a StorageClass", &err);
        json_decref(j);
    }
    json_t *j = json_pack("{s:s, s:{s:s}, s:{s:b, s:b, s:[s]}}", "kind", "CSIDriver", "metadata",
                          "name", CSI_NAME, "spec", "attachRequired", 1, "storageCapacity", 1,
                          "volumeLifecycleModes", "Persistent");
    if (!j || gs_kube_csidriver_read(j, &st->csidrivers[0], &err))
        die("the CSIDriver", &err);
    json_decref(j);
    for (int z = 0; z < ZONES; z++) {
        char name[32], zone[16];
        snprintf(name, sizeof(name), "csisc-gp3-%c", 'a' + z);
        snprintf(zone, sizeof(zone), "zone-%c", 'a' + z);
        j = json_pack("{s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:{s:{s:s}}}", "kind",
                      "CSIStorageCapacity", "metadata", "name", name, "namespace", "kube-system",
                      "storageClassName", "gp3", "capacity", "200Ti", "maximumVolumeSize", "16Ti",
                      "nodeTopology", "matchLabels", FIXTURE_ZONE_KEY, zone);
        if (!j || gs_kube_csicap_read(j, &st->csicaps[z], &err))
            die("a CSIStorageCapacity", &err);
        json_decref(j);
    }
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof(name), "node-%05d", i);
        j = json_pack("{s:s, s:{s:s}, s:{s:[{s:s, s:s, s:{s:i}, s:[s]}]}}", "kind", "CSINode",
                      "metadata", "name", name, "spec", "drivers", "name", CSI_NAME, "nodeID", name,
                      "allocatable", "count", CSI_LIMIT, "topologyKeys", FIXTURE_ZONE_KEY);
        if (!j || gs_kube_csinode_read(j, &st->csinodes[i], &err))
            die("a CSINode", &err);
        json_decref(j);
    }
}

/* ---------- the workload ---------- */

enum vkind { V_NONE = 0, V_BOUND_ZONE, V_BOUND_HOST, V_LOCAL, V_CSI };

struct workload {
    int npods, nnodes;
    struct gs_request *req;
    uint8_t *vkind; /* per pod */
    int nvol;
    struct objs o;
};

/* A node of the type pod shape r can use, drawn from rng. */
static int node_for(const struct gs_request *r, int nodes, struct gs_rng *rng)
{
    for (;;) {
        int i = (int)gs_rng_below(rng, (uint64_t)nodes);
        enum ntype t = node_type(i);
        if (r->kind == GS_REQ_NONE || (r->kind == GS_REQ_MIG) == (t == A100))
            return i;
    }
}

static void make_workload(struct workload *w, int nodes, int npods, int pct)
{
    struct gs_request tmpl[FIXTURE_TEMPLATES];
    fixture_templates(tmpl, FIXTURE_TEMPLATES, 7);
    memset(w, 0, sizeof(*w));
    w->npods = npods;
    w->nnodes = nodes;
    w->req = calloc((size_t)npods, sizeof(*w->req));
    w->vkind = calloc((size_t)npods, 1);
    if (!w->req || !w->vkind)
        die("out of memory", NULL);
    struct gs_rng rng;
    gs_rng_init(&rng, 42);
    static const int local_gi[] = {375, 750, 1500, 3000}, claim_gi[] = {100, 200, 350, 700, 1200};
    char name[64], host[32], zone[16];
    for (int i = 0; i < npods; i++) {
        w->req[i] = tmpl[fixture_draw(&rng)];
        if ((int64_t)w->nvol * 100 >= (int64_t)pct * (i + 1))
            continue;
        w->nvol++;
        int k = (int)gs_rng_below(&rng, 6);
        w->vkind[i] = k == 0 ? V_BOUND_ZONE : k == 1 ? V_BOUND_HOST : k < 4 ? V_LOCAL : V_CSI;
        snprintf(name, sizeof(name), "data-job-%05d", i);
        if (w->vkind[i] == V_BOUND_ZONE || w->vkind[i] == V_BOUND_HOST) {
            int n = node_for(&w->req[i], nodes, &rng);
            snprintf(host, sizeof(host), "node-%05d", n);
            zone_of(n, zone, sizeof(zone));
            char pv[48];
            snprintf(pv, sizeof(pv), "pv-bound-%05d", i);
            bool h = w->vkind[i] == V_BOUND_HOST;
            add_pv(&w->o, pv_json(pv, 500, h ? host : NULL, zone, "ml", name));
            add_pvc(&w->o, pvc_json("ml", name, h ? "local-nvme" : "gp3", 500, pv));
        } else {
            add_pvc(&w->o, pvc_json("ml", name, w->vkind[i] == V_LOCAL ? "local-nvme" : "gp3",
                                    claim_gi[gs_rng_below(&rng, 5)], NULL));
        }
    }
    /* local disks: one on 3 nodes in 5, a second on 1 in 5 */
    for (int n = 0; n < nodes; n++) {
        snprintf(host, sizeof(host), "node-%05d", n);
        for (int d = 0; d < (n % 5 == 0 ? 2 : n % 5 < 3 ? 1 : 0); d++) {
            snprintf(name, sizeof(name), "local-pv-%05d-%d", n, d);
            add_pv(&w->o, pv_json(name, local_gi[gs_rng_below(&rng, 4)], host, NULL, NULL, NULL));
        }
    }
    /* other workloads' volumes and claims, bound */
    for (int v = 0; v < OTHER_PVS; v++) {
        char pv[48], claim[48];
        snprintf(pv, sizeof(pv), "pvc-%08x-run", (unsigned)v * 2654435761u);
        snprintf(claim, sizeof(claim), "state-svc-%05d", v);
        int n = (int)gs_rng_below(&rng, (uint64_t)nodes);
        zone_of(n, zone, sizeof(zone));
        add_pv(&w->o, pv_json(pv, 20 + (int)gs_rng_below(&rng, 480), NULL, zone, "prod", claim));
        add_pvc(&w->o, pvc_json("prod", claim, "gp3", 20, pv));
    }
    struct gs_storage *st = &w->o.po.st;
    st->pvcs = w->o.pvcs;
    st->npvcs = w->o.npvcs;
    st->pvs = w->o.pvs;
    st->npvs = w->o.npvs;
    cluster_storage(st, nodes);
}

/* ---------- one cycle ---------- */

struct run {
    double pods_per_s, wall_pods_per_s, s;
    int placed, vol_placed, violations, writes;
};

/* The fixture's shares: the H100 and L40S GPUs the snapshot built whole take milli-GPU shares
 * (GS_GPU_FRACTION), as bench/cluster_fixture.h builds them. */
static void as_fixture(struct gs_cluster *c)
{
    for (int n = 0; n < c->nnodes; n++) {
        struct gs_node *nd = &c->nodes[n];
        for (int g = nd->gpu0; g < nd->gpu0 + nd->ngpus; g++)
            if (c->gpus[g].mode == GS_GPU_WHOLE)
                c->gpus[g].mode = GS_GPU_FRACTION;
        gs_node_touch(nd);
    }
}

static struct gs_engine *engine_for(void *ctx, int nodes)
{
    struct gs_engine **e = ctx;
    if (!*e)
        *e = gs_engine_new(gs_policy_find("gpusched"), NULL, gs_cycle_engine_nodes(nodes), 42);
    return *e;
}

/* Whether placed pod i's volume work on node (NULL: none) keeps the rules: a bound claim's
 * volume reachable from the node, a chosen local volume on it and given once, a provisioning
 * on the node, in a zone of the class, within the node's CSI limit. Counts the writes. */
static int check_pod(const struct workload *w, const struct gs_kube_node *node, int i,
                     const json_t *vol, int *csi, uint8_t *given, int *nwrites)
{
    int bad = 0;
    const struct gs_kube_pvc *c = NULL;
    char name[64];
    snprintf(name, sizeof(name), "data-job-%05d", i);
    for (int k = 0; k < w->o.npvcs && !c; k++)
        if (strcmp(w->o.pvcs[k].name, name) == 0 && strcmp(w->o.pvcs[k].ns, "ml") == 0)
            c = &w->o.pvcs[k];
    int n = (int)strtol(node->name + 5, NULL, 10);
    if (!c)
        return 1;
    for (int v = 0; c->bound && v < w->o.npvs; v++)
        if (strcmp(w->o.pvs[v].name, c->volume) == 0)
            bad += !gs_kube_pv_node_matches(&w->o.pvs[v], node) ||
                   !gs_kube_pv_zone_matches(&w->o.pvs[v], node);
    if (c->bound && strcmp(c->cls, "gp3") == 0)
        bad += ++csi[n] > CSI_LIMIT;
    size_t j;
    const json_t *x;
    json_array_foreach(json_object_get(vol, "writes"), j, x)
    {
        const char *path = json_string_value(json_object_get(x, "path"));
        (*nwrites)++;
        if (strstr(path, "/persistentvolumes/")) {
            int v = 0;
            while (v < w->o.npvs && strcmp(w->o.pvs[v].name, strrchr(path, '/') + 1) != 0)
                v++;
            bad += v == w->o.npvs || given[v]++ || !gs_kube_pv_node_matches(&w->o.pvs[v], node) ||
                   w->o.pvs[v].capacity < c->request;
        } else {
            const json_t *ann = json_object_get(
                json_object_get(json_object_get(x, "body"), "metadata"), "annotations");
            const char *sel = json_string_value(json_object_get(ann, GS_ANN_SELECTED_NODE));
            bad += !sel || strcmp(sel, node->name) != 0 || (n / 25) % ZONES == 3;
            bad += ++csi[n] > CSI_LIMIT;
        }
    }
    return bad;
}

struct placed {
    int snap, i; /* the pod's snapshot index, its index in the workload */
    int node;
    json_t *vol;
};

/* One cycle over the pods of st (the workload's storage objects when volumes), then the
 * binder's volume writes of every placed pod; the placements checked after the clock stops. */
static struct run run_once(struct gs_store *st, const struct workload *w, bool volumes)
{
    struct gs__cycle_deps d = {.store = st, .scheduler_name = "gpusched", .dry = true};
    struct gs__cycle cy;
    struct gs_cycle_out out;
    struct gs_engine *e = NULL;
    struct run r = {0};
    int *csi = calloc((size_t)w->nnodes, sizeof(int));
    uint8_t *given = calloc((size_t)w->o.npvs + 1, 1);
    struct placed *pl = calloc((size_t)w->npods, sizeof(*pl));
    int npl = 0;
    if (!csi || !given || !pl)
        die("out of memory", NULL);
    double t0 = now(), w0 = wall();
    if (gs__cycle_take(&cy, &d))
        die("taking the snapshot", NULL);
    /* the daemon's cycle copies its feed's objects (gs_policy_feed_copy) */
    if (volumes && gs_policy_objs_copy(&cy.po, &w->o.po))
        die("copying the storage objects", NULL);
    as_fixture(cy.c);
    gs_cycle_out_init(&out);
    if (gs__cycle_prepare(&cy) || gs__cycle_run(&cy, engine_for, &e, &out))
        die("the cycle failed", NULL);
    for (int k = 0; k < out.n; k++) {
        const struct gs_cyc_decision *x = &out.d[k];
        if (x->kind != GS_CYC_BIND)
            continue;
        r.placed++;
        int pod = cy.idx[x->pod];
        const struct gs_kube_pod *p = gs__snapshot_pod(cy.sn, pod);
        if (p->nclaims == 0)
            continue;
        pl[npl++] = (struct placed){pod, (int)strtol(p->name + 4, NULL, 10), x->alloc.node,
                                    gs_volbind_writes(cy.vb, pod, 600)};
    }
    r.s = now() - t0;
    r.pods_per_s = w->npods / r.s;
    r.wall_pods_per_s = w->npods / (wall() - w0);
    r.vol_placed = npl;
    for (int k = 0; k < npl; k++) {
        r.violations += check_pod(w, gs__snapshot_node(cy.sn, pl[k].node), pl[k].i, pl[k].vol, csi,
                                  given, &r.writes);
        json_decref(pl[k].vol);
    }
    gs_cycle_out_release(&out);
    gs__cycle_release(&cy);
    gs_engine_free(e);
    free(pl);
    free(csi);
    free(given);
    return r;
}

/* A detached store holding the nodes and the workload's pods, with or without their claims. */
static struct gs_store *store_of(const struct workload *w, bool volumes)
{
    struct gs_store *st;
    struct gs_error err;
    gs_error_init(&err);
    if (gs__store_new(NULL, GS_STORE_DETACHED, NULL, 60, &st, &err))
        die("the store", &err);
    struct gs_kube_node *nodes = calloc((size_t)w->nnodes, sizeof(*nodes));
    struct gs_kube_pod *pods = calloc((size_t)w->npods, sizeof(*pods));
    if (!nodes || !pods)
        die("out of memory", NULL);
    for (int i = 0; i < w->nnodes; i++)
        read_node(i, &nodes[i]);
    for (int i = 0; i < w->npods; i++) {
        char claim[64];
        snprintf(claim, sizeof(claim), "data-job-%05d", i);
        read_pod(i, &w->req[i], volumes && w->vkind[i] ? claim : NULL, &pods[i]);
    }
    if (gs__store_load(st, nodes, w->nnodes, pods, w->npods))
        die("loading the store", NULL);
    free(nodes);
    free(pods);
    return st;
}

static void keep_best(struct run *best, const struct run *r)
{
    if (r->pods_per_s > best->pods_per_s)
        *best = *r;
}

int main(int argc, char **argv)
{
    int nodes = 5000, pods = 10000, pct = 30;
    if (argc > 2) {
        nodes = (int)strtol(argv[1], NULL, 10);
        pods = (int)strtol(argv[2], NULL, 10);
    }
    if (argc > 3)
        pct = (int)strtol(argv[3], NULL, 10);
    if (nodes < 25 || nodes > 99999 || pods < 1 || pods > 99999 || pct < 0 || pct > 100) {
        fprintf(stderr, "usage: bench_volumes [nodes pods [volume_pct]] (25..99999 nodes)\n");
        return 2;
    }
    struct workload w;
    make_workload(&w, nodes, pods, pct);
    struct gs_store *plain = store_of(&w, false), *vols = store_of(&w, true);
    struct run p = {0}, v = {0};
    for (int k = 0; k < RUNS; k++) {
        /* in turn, so that whatever else the machine does weighs on both alike */
        struct run a = run_once(plain, &w, false), b = run_once(vols, &w, true);
        keep_best(&p, &a);
        keep_best(&v, &b);
    }
    int kinds[5] = {0};
    for (int i = 0; i < pods; i++)
        kinds[w.vkind[i]]++;
    printf("{\"bench\":\"cycle_volumes\",\"nodes\":%d,\"pods\":%d,\"zones\":%d,"
           "\"volume_pods\":%d,\"volume_pct\":%.1f,\"bound_zonal\":%d,\"bound_local\":%d,"
           "\"wait_for_first_consumer_local\":%d,\"provisioned_csi\":%d,\"pvs\":%d,\"pvcs\":%d,"
           "\"pods_per_s\":%.0f,\"placed\":%d,\"volume_pods_placed\":%d,\"volume_writes\":%d,"
           "\"violations\":%d,\"baseline\":\"plain\",\"baseline_pods_per_s\":%.0f,"
           "\"baseline_placed\":%d,\"ratio\":%.2f,\"runs\":%d,\"clock\":\"thread_cputime\","
           "\"cycle_s\":%.3f,\"baseline_cycle_s\":%.3f,\"wall_pods_per_s\":%.0f,"
           "\"baseline_wall_pods_per_s\":%.0f}\n",
           nodes, pods, ZONES, w.nvol, 100.0 * w.nvol / pods, kinds[V_BOUND_ZONE],
           kinds[V_BOUND_HOST], kinds[V_LOCAL], kinds[V_CSI], w.o.npvs, w.o.npvcs, v.pods_per_s,
           v.placed, v.vol_placed, v.writes, v.violations, p.pods_per_s, p.placed,
           p.pods_per_s / v.pods_per_s, RUNS, v.s, p.s, v.wall_pods_per_s, p.wall_pods_per_s);
    gs__store_free(plain);
    gs__store_free(vols);
    gs_policy_objs_release(&w.o.po);
    free(w.req);
    free(w.vkind);
    return 0;
}
