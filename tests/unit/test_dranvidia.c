/* DRA on ResourceSlices shaped as NVIDIA's DRA driver (gpu.nvidia.com) publishes them
 * (tests/data/dra/nvidia: whole H100s, an A100 with static MIG instances and memorySliceN
 * capacities, two partitionable A100s whose MIG placements consume a counter set of
 * multiprocessors, engines, memory and memory-slice-N), with NVIDIA's DeviceClasses: the
 * readers keep every attribute with its type, counters keep overlapping placements apart (the
 * memory slices and the engines' counters), device taints (the driver's gpu.nvidia.com/xid,
 * DeviceTaintRules') keep devices from requests that do not tolerate them, as
 * k8s.io/dynamic-resource-allocation's allocator decides, and the readers refuse malformed
 * taints and tolerations naming the field. */
#include "base/error.h"
#include "core/dra.h"
#include "formats/dracycle.h"
#include "formats/draobj.h"
#include "formats/drataint.h"
#include "core/tenant.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define MAXS 8
#define NV   "gpu.nvidia.com"

static struct gs_draobj_slice slices[MAXS];
static const struct gs_draobj_slice *sp[MAXS];
static int nslices;
static struct gs_draobj_world world;
static struct gs_draobj_class classes[2];

static const char *const nodes[] = {"nv-h100-0", "nv-a100-mig-0", "nv-a100-dyn-0"};
enum { H100, STATIC, DYN };

static int32_t node_id(void *ctx, const char *node)
{
    (void)ctx;
    for (int i = 0; i < 3; i++)
        if (strcmp(node, nodes[i]) == 0)
            return i;
    return -1;
}

static json_t *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/dra/nvidia/%s", GS_SOURCE_DIR, name);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    cr_assert(o, "%s: %s", path, je.text);
    return o;
}

static void read_slices(const char *file)
{
    json_t *l = load(file);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(l, "items"), i, s)
    {
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_lt(nslices, MAXS);
        cr_assert_eq(gs_draobj_slice_read(s, &slices[nslices], &err), 0, "%s", err.msg);
        sp[nslices] = &slices[nslices];
        nslices++;
    }
    json_decref(l);
}

static void setup(void)
{
    nslices = 0;
    read_slices("slices-h100.json");
    read_slices("slices-a100-static-mig.json");
    read_slices("slices-a100-dynamic-mig.json");
    cr_assert_eq(gs_draobj_world_build(sp, nslices, node_id, NULL, &world), 0);
    json_t *l = load("deviceclasses.json");
    for (int k = 0; k < 2; k++) {
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_eq(
            gs_draobj_class_read(json_array_get(json_object_get(l, "items"), k), &classes[k], &err),
            0, "%s", err.msg);
    }
    json_decref(l);
}

static void teardown(void)
{
    for (int k = 0; k < nslices; k++)
        gs_draobj_slice_release(&slices[k]);
    for (int k = 0; k < 2; k++)
        gs_draobj_class_release(&classes[k]);
    gs_draobj_world_release(&world);
}

static void claim_of(const char *devices, struct gs_draobj_claim *c)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ai\",\"name\":\"c\",\"uid\":\"u-c\"},"
             "\"spec\":{\"devices\":%s}}",
             devices);
    json_t *o = json_of(buf);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_claim_read(o, c, &err), 0, "%s", err.msg);
    json_decref(o);
}

/* Allocate a claim on node; its devices joined with ',' into out; returns the rc. */
static int alloc(struct gs_dra_state *st, const char *devices, int node, char *out, size_t n)
{
    static struct gs_draobj_claim c;
    struct gs_draobj_prep p;
    struct gs_dra_result r;
    struct gs_error err;
    gs_error_init(&err);
    claim_of(devices, &c);
    cr_assert_eq(gs_draobj_prepare(&c, classes, 2, &world.w, &p, &err), 0, "%s", err.msg);
    int rc = gs_dra_allocate(st, &p.c, node, 1, &r);
    out[0] = '\0';
    for (int k = 0; rc == 0 && k < r.n; k++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", k ? "," : "",
                 world.w.dev[r.dev[k]].name);
    gs_draobj_prep_release(&p);
    gs_draobj_claim_release(&c);
    return rc;
}

#define REQ(cls, extra)                                                                            \
    "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"" cls "\"" extra "}}]}"
#define SEL(e) ",\"selectors\":[{\"cel\":{\"expression\":\"" e "\"}}]"
#define ATTR   "device.attributes['gpu.nvidia.com']"
#define MIG(p) REQ("mig.nvidia.com", SEL(ATTR ".profile == '" p "'"))

static const struct gs_dra_device *dev(int node, const char *name)
{
    int d = gs_dra_find(&world.w, NV, nodes[node], name);
    cr_assert_geq(d, 0, "%s/%s", nodes[node], name);
    return &world.w.dev[d];
}

Test(dranvidia, attributes_capacities_and_counters_as_the_driver_writes_them, .init = setup,
     .fini = teardown)
{
    cr_expect_eq(world.w.ndev, 8 + 4 + 2 * 26, "devices: %d", world.w.ndev);
    cr_expect_eq(world.w.nsets, 2, "counter sets: %d", world.w.nsets);
    const struct gs_dra_device *g = dev(H100, "gpu-3");
    const struct gs_dra_attr *a = gs_dra_attr_find(g, NV, strlen(NV), "driverVersion", 13, false);
    cr_assert(a);
    cr_expect_eq(a->v.type, GS_DRA_VERSION);
    cr_expect_str_eq(a->v.s, "570.133.20");
    a = gs_dra_attr_find(g, NV, strlen(NV), "cudaComputeCapability", 21, false);
    cr_assert(a);
    cr_expect_eq(a->v.type, GS_DRA_VERSION);
    cr_expect_str_eq(a->v.s, "9.0.0");
    a = gs_dra_attr_find(g, NV, strlen(NV), "minor", 5, false);
    cr_assert(a);
    cr_expect_eq(a->v.type, GS_DRA_INT);
    cr_expect_eq(a->v.i, 3);
    cr_expect_str_eq(gs_dra_attr_str(g, "resource.kubernetes.io/pcieRoot"), "pci0000:10");
    cr_expect_str_eq(gs_dra_attr_str(g, NV "/productName"), "NVIDIA H100 80GB HBM3");
    /* the static 3g.40gb instance: memorySlice0..3 capacities */
    const struct gs_dra_device *m = dev(STATIC, "gpu-0-mig-3g40gb-9-0");
    cr_expect_str_eq(gs_dra_attr_str(m, NV "/profile"), "3g.40gb");
    for (int s = 0; s < 8; s++) {
        char name[16];
        snprintf(name, sizeof(name), "memorySlice%d", s);
        cr_expect_eq(gs_dra_attr_find(m, NV, strlen(NV), name, strlen(name), true) != NULL, s < 4,
                     "%s", name);
    }
    cr_expect_eq(m->nconsume, 0);
    /* a dynamic placement consumes its engines, memory and memory slices of its GPU's set */
    const struct gs_dra_device *p = dev(DYN, "gpu-1-mig-2g20gb-14-4");
    cr_assert_eq(p->nconsume, 1);
    const struct gs_dra_counterset *cs = &world.w.sets[p->consume[0].set];
    cr_expect_str_eq(cs->name, "gpu-1-counter-set");
    cr_expect_eq(cs->n, 7 + 8);
    int slices_used = 0;
    for (int k = 0; k < p->consume[0].n; k++) {
        const char *cn = cs->counter[p->consume[0].counter[k]];
        if (strncmp(cn, "memory-slice-", 13) == 0) {
            slices_used++;
            cr_expect(strcmp(cn, "memory-slice-4") == 0 || strcmp(cn, "memory-slice-5") == 0, "%s",
                      cn);
        }
        if (strcmp(cn, "multiprocessors") == 0)
            cr_expect_eq(p->consume[0].milli[k], 28000);
    }
    cr_expect_eq(slices_used, 2);
    cr_expect_eq(dev(DYN, "gpu-0")->consume[0].n, 15, "the whole GPU consumes every counter");
}

Test(dranvidia, whole_gpus_by_product_and_the_tainted_one_left_out, .init = setup, .fini = teardown)
{
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[512];
    const char *h100 = REQ("gpu.nvidia.com", SEL(ATTR ".productName == 'NVIDIA H100 80GB HBM3'"));
    for (int k = 0; k < 7; k++)
        cr_expect_eq(alloc(&st, h100, H100, got, sizeof(got)), 0, "H100 %d", k);
    /* gpu-7 carries gpu.nvidia.com/xid=79 NoSchedule: no eighth */
    cr_expect_eq(alloc(&st, h100, H100, got, sizeof(got)), GS_ENOFIT, "%s", got);
    /* a toleration of the key (Exists) allocates it */
    const char *tol = REQ("gpu.nvidia.com", ",\"tolerations\":[{\"key\":\"gpu.nvidia.com/xid\","
                                            "\"operator\":\"Exists\"}]");
    cr_expect_eq(alloc(&st, tol, H100, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "gpu-7");
    gs_dra_state_release(&st);
}

/* tolerations (JSON) -> whether they let a request take gpu-7 (xid=79 NoSchedule) */
static const struct {
    const char *tol;
    bool takes;
} tolerations[] = {
    {"[]", false},
    {"[{\"key\":\"gpu.nvidia.com/xid\",\"operator\":\"Exists\"}]", true},
    {"[{\"key\":\"gpu.nvidia.com/xid\",\"value\":\"79\"}]", true},
    {"[{\"key\":\"gpu.nvidia.com/xid\",\"operator\":\"Equal\",\"value\":\"48\"}]", false},
    {"[{\"key\":\"gpu.nvidia.com/xid\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]", true},
    {"[{\"key\":\"gpu.nvidia.com/xid\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}]", false},
    {"[{\"operator\":\"Exists\"}]", true},
    {"[{\"key\":\"gpu.nvidia.com/gpu-lost\",\"operator\":\"Exists\"}]", false},
    {"[{\"key\":\"gpu.nvidia.com/xid\",\"operator\":\"Gt\",\"value\":\"1\"}]", false},
    {"[{\"key\":\"other\",\"operator\":\"Exists\"},{\"key\":\"gpu.nvidia.com/xid\","
     "\"operator\":\"Exists\",\"tolerationSeconds\":300}]",
     true},
};

Test(dranvidia, tolerations_as_tolerates_taint_decides, .init = setup, .fini = teardown)
{
    for (size_t t = 0; t < sizeof(tolerations) / sizeof(tolerations[0]); t++) {
        char req[1024], got[256];
        snprintf(req, sizeof(req),
                 "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia."
                 "com\",\"selectors\":[{\"cel\":{\"expression\":\"" ATTR ".index == 7\"}}],"
                 "\"tolerations\":%s}}]}",
                 tolerations[t].tol);
        struct gs_dra_state st;
        cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
        int rc = alloc(&st, req, H100, got, sizeof(got));
        cr_expect_eq(rc == 0, tolerations[t].takes, "%s: rc %d (%s)", tolerations[t].tol, rc, got);
        gs_dra_state_release(&st);
    }
}

Test(dranvidia, first_available_alternatives_tolerate_each_their_own, .init = setup,
     .fini = teardown)
{
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[256];
    const char *fa =
        "{\"requests\":[{\"name\":\"acc\",\"firstAvailable\":[{\"name\":\"bad\","
        "\"deviceClassName\":\"gpu.nvidia.com\",\"selectors\":[{\"cel\":{\"expression\":\"" ATTR
        ".index == 7\"}}]},{\"name\":\"bad-ok\",\"deviceClassName\":\"gpu.nvidia.com\","
        "\"selectors\":[{\"cel\":{\"expression\":\"" ATTR ".index == 7\"}}],\"tolerations\":"
        "[{\"operator\":\"Exists\"}]}]}]}";
    static struct gs_draobj_claim c;
    claim_of(fa, &c);
    struct gs_draobj_prep p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_prepare(&c, classes, 2, &world.w, &p, &err), 0, "%s", err.msg);
    cr_expect_eq(p.c.req[0].sub[0].ncand, 0);
    cr_expect_eq(p.c.req[0].sub[0].ntainted, 1, "the tainted device is counted apart");
    cr_expect_eq(p.c.req[0].sub[1].ncand, 1);
    struct gs_dra_result r;
    cr_assert_eq(gs_dra_allocate(&st, &p.c, H100, 1, &r), 0);
    cr_expect_str_eq(gs_dra_result_request(&p.c, &r, 0), "acc/bad-ok");
    gs_draobj_prep_release(&p);
    gs_draobj_claim_release(&c);
    (void)got;
    gs_dra_state_release(&st);
}

Test(dranvidia, static_mig_instances_by_profile, .init = setup, .fini = teardown)
{
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[256];
    cr_expect_eq(alloc(&st, MIG("2g.20gb"), STATIC, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "gpu-0-mig-2g20gb-14-4");
    cr_expect_eq(alloc(&st, MIG("2g.20gb"), STATIC, got, sizeof(got)), GS_ENOFIT, "%s", got);
    /* capacity: a MIG device with at least 40 GiB and its memory slice 0 */
    const char *big = REQ("mig.nvidia.com",
                          SEL("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('39Gi'))"
                              " >= 0"));
    cr_expect_eq(alloc(&st, big, STATIC, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "gpu-0-mig-3g40gb-9-0");
    cr_expect_eq(alloc(&st, REQ("gpu.nvidia.com", ""), STATIC, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "gpu-1", "the GPU out of MIG mode is whole");
    gs_dra_state_release(&st);
}

Test(dranvidia, counters_keep_overlapping_placements_apart, .init = setup, .fini = teardown)
{
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[512];
    /* two 3g.40gb fill a GPU's eight memory slices: a 1g.10gb goes to the other GPU */
    char first[64];
    cr_expect_eq(alloc(&st, MIG("3g.40gb"), DYN, first, sizeof(first)), 0);
    cr_expect_eq(alloc(&st, MIG("3g.40gb"), DYN, got, sizeof(got)), 0);
    cr_expect_eq(strncmp(first, "gpu-0-mig-3g40gb-9-", 19), 0, "%s", first);
    cr_expect_eq(strncmp(got, "gpu-0-mig-3g40gb-9-", 19), 0, "packed onto the GPU in use: %s", got);
    cr_expect_str_neq(first, got);
    cr_expect_eq(alloc(&st, MIG("1g.10gb"), DYN, got, sizeof(got)), 0);
    cr_expect_eq(strncmp(got, "gpu-1-", 6), 0, "%s", got);
    /* neither whole GPU is free now, nor a 7g.80gb */
    cr_expect_eq(alloc(&st, REQ("gpu.nvidia.com", ""), DYN, got, sizeof(got)), GS_ENOFIT, "%s",
                 got);
    cr_expect_eq(alloc(&st, MIG("7g.80gb"), DYN, got, sizeof(got)), GS_ENOFIT, "%s", got);
    gs_dra_state_release(&st);
    /* 4g.40gb has one placement (0): two fit only on two GPUs, three never */
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    const char *two = "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"mig."
                      "nvidia.com\",\"count\":2,\"selectors\":[{\"cel\":{\"expression\":\"" ATTR
                      ".profile == '4g.40gb'\"}}]}}]}";
    cr_expect_eq(alloc(&st, two, DYN, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "gpu-0-mig-4g40gb-5-0,gpu-1-mig-4g40gb-5-0");
    cr_expect_eq(alloc(&st, MIG("4g.40gb"), DYN, got, sizeof(got)), GS_ENOFIT, "%s", got);
    /* beside a 4g.40gb at 0, a 3g.40gb at 4 fits: 56 + 42 multiprocessors of 98 */
    cr_expect_eq(alloc(&st, MIG("3g.40gb"), DYN, got, sizeof(got)), 0);
    cr_expect_eq(strcmp(got + strlen(got) - 12, "3g40gb-9-4") == 0 ||
                     strstr(got, "3g40gb-9-4") != NULL,
                 1, "%s", got);
    gs_dra_state_release(&st);
    /* a counter other than memory: each GPU has one JPEG and one OFA engine, so two
     * 1g.10gb+me never share a GPU (their memory slices would allow it) */
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    const char *me_pair =
        "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\","
        "\"count\":2,\"selectors\":[{\"cel\":{\"expression\":\"" ATTR
        ".profile == '1g.10gb+me'\"}}]}}],\"constraints\":[{\"requests\":[\"r\"],"
        "\"matchAttribute\":\"gpu.nvidia.com/parentUUID\"}]}";
    cr_expect_eq(alloc(&st, me_pair, DYN, got, sizeof(got)), GS_ENOFIT, "%s", got);
    const char *me_apart =
        "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\","
        "\"count\":2,\"selectors\":[{\"cel\":{\"expression\":\"" ATTR
        ".profile == '1g.10gb+me'\"}}]}}],\"constraints\":[{\"requests\":[\"r\"],"
        "\"distinctAttribute\":\"gpu.nvidia.com/parentUUID\"}]}";
    cr_expect_eq(alloc(&st, me_apart, DYN, got, sizeof(got)), 0, "%s", got);
    gs_dra_state_release(&st);
}

Test(dranvidia, every_set_of_placements_allocated_stays_within_the_counters, .init = setup,
     .fini = teardown)
{
    /* profiles allocated in turn until none fits: the sums of what the taken devices consume
     * never exceed a counter of their set (so no two share a memory slice) */
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    const char *order[] = {"2g.20gb", "1g.10gb+me", "3g.40gb", "1g.20gb", "1g.10gb"};
    char got[256], req[512];
    int taken = 0;
    for (int k = 0; k < 5; k++) {
        snprintf(req, sizeof(req), MIG("%s"), order[k]);
        for (int n = 0; n < 20 && alloc(&st, req, DYN, got, sizeof(got)) == 0; n++)
            taken++;
    }
    /* per GPU three 2g.20gb (84 multiprocessors) and one 1g.10gb+me (14): slices 6 and 7 stay
     * free, no multiprocessor is left for them */
    cr_expect_eq(taken, 8, "placements taken: %d", taken);
    for (int set = 0; set < world.w.nsets; set++) {
        const struct gs_dra_counterset *cs = &world.w.sets[set];
        for (int c = 0; c < cs->n; c++) {
            int64_t sum = 0;
            for (int d = 0; d < world.w.ndev; d++) {
                if (st.owner[d] < 0)
                    continue;
                const struct gs_dra_device *x = &world.w.dev[d];
                for (int u = 0; u < x->nconsume; u++)
                    for (int j = 0; x->consume[u].set == set && j < x->consume[u].n; j++)
                        sum += x->consume[u].counter[j] == c ? x->consume[u].milli[j] : 0;
            }
            cr_expect_leq(sum, cs->milli[c], "%s/%s: %lld of %lld", cs->name, cs->counter[c],
                          (long long)sum, (long long)cs->milli[c]);
            if (strcmp(cs->counter[c], "multiprocessors") == 0)
                cr_expect_eq(sum, 98000, "%s: every multiprocessor ends taken", cs->name);
        }
    }
    gs_dra_state_release(&st);
}

static void pod_of(const char *text, struct gs_kube_pod *p)
{
    json_t *o = json_of(text);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, p, &err), 0, "%s", err.msg);
    json_decref(o);
}

/* ---------- DeviceTaintRules ---------- */

static void rule_of(const char *spec, struct gs_drataint_rule *r)
{
    char buf[2048];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"r\"},\"spec\":%s}", spec);
    json_t *o = json_of(buf);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_drataint_rule_read(o, r, &err), 0, "%s", err.msg);
    json_decref(o);
}

Test(dranvidia, device_taint_rules_add_taints_as_the_driver_would, .init = setup, .fini = teardown)
{
    struct gs_drataint_rule rules[4];
    /* one device by driver, pool and name; no selector: no device; a pool's every device with
     * an informational effect; another driver: nothing here */
    rule_of("{\"deviceSelector\":{\"driver\":\"gpu.nvidia.com\",\"pool\":\"nv-h100-0\","
            "\"device\":\"gpu-0\"},\"taint\":{\"key\":\"example.com/maintenance\","
            "\"value\":\"planned\",\"effect\":\"NoExecute\"}}",
            &rules[0]);
    rule_of("{\"taint\":{\"key\":\"example.com/all\",\"effect\":\"NoSchedule\"}}", &rules[1]);
    rule_of("{\"deviceSelector\":{\"pool\":\"nv-h100-0\"},\"taint\":{\"key\":\"example.com/note\","
            "\"effect\":\"None\"}}",
            &rules[2]);
    rule_of("{\"deviceSelector\":{\"driver\":\"other.example.com\"},\"taint\":{\"key\":"
            "\"example.com/other\",\"effect\":\"NoSchedule\"}}",
            &rules[3]);
    cr_expect_not(rules[1].selector);
    cr_assert_eq(gs_draobj_world_taint(&world, rules, 4), 0);
    const struct gs_dra_device *g0 = dev(H100, "gpu-0"), *g7 = dev(H100, "gpu-7"),
                               *g1 = dev(H100, "gpu-1");
    cr_expect(g0->tainted);
    cr_expect_eq(g0->ntaints, 2, "the rule's NoExecute and the informational one");
    cr_expect_not(g1->tainted, "an effect None informs only");
    cr_expect_eq(g1->ntaints, 1);
    cr_expect_eq(g7->ntaints, 2, "the driver's xid first, then the rule's");
    cr_expect_str_eq(g7->taints[0].key, "gpu.nvidia.com/xid");
    cr_expect_eq(dev(STATIC, "gpu-1")->ntaints, 0);
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[256];
    const char *idx0 = REQ("gpu.nvidia.com", SEL(ATTR ".index == 0"));
    cr_expect_eq(alloc(&st, idx0, H100, got, sizeof(got)), GS_ENOFIT, "%s", got);
    const char *tol = REQ("gpu.nvidia.com", SEL(ATTR ".index == 0") ",\"tolerations\":[{\"key\":"
                                                                    "\"example.com/maintenance\","
                                                                    "\"value\":\"planned\","
                                                                    "\"effect\":\"NoExecute\"}]");
    cr_expect_eq(alloc(&st, tol, H100, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "gpu-0");
    gs_dra_state_release(&st);
}

Test(dranvidia, why_a_claim_waits_names_the_tainted_devices, .init = setup, .fini = teardown)
{
    static struct gs_draobj_claim c[1];
    claim_of(REQ("gpu.nvidia.com", SEL(ATTR ".index == 7")), &c[0]);
    struct gs_dracycle cy;
    cr_assert_eq(gs_dracycle_init(&cy, classes, 2, slices, nslices, c, 1, false, 1, node_id, NULL),
                 0);
    static struct gs_tenants t;
    gs_tenants_init(&t);
    char why[512] = "";
    static struct gs_kube_pod pod;
    pod_of("{\"metadata\":{\"namespace\":\"ai\",\"name\":\"p\",\"uid\":\"pu\"},\"spec\":{"
           "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"c\"}],"
           "\"containers\":[{\"name\":\"c\"}]}}",
           &pod);
    struct gs_qvec q;
    cr_assert_eq(gs_dracycle_pod_prepare(&cy, 0, &pod, &t, &q, why, sizeof(why)), 0, "%s", why);
    cr_expect_not(gs_dracycle_pod_fits(&cy, 0, H100));
    gs_dracycle_pod_why(&cy, 0, why, sizeof(why));
    cr_expect(strstr(why, "wants 1 of 0 matching device(s), 0 free (1 more with a taint it does "
                          "not tolerate)") != NULL,
              "%s", why);
    gs_dracycle_release(&cy);
    gs_draobj_claim_release(&c[0]);
}

/* ---------- malformed input ---------- */

static const struct {
    const char *devices; /* a slice's spec.devices */
    const char *want;
} bad_slices[] = {
    {"[{\"name\":\"d\",\"taints\":{\"key\":\"k\"}}]", "spec.devices[0].taints: expected a list"},
    {"[{\"name\":\"d\",\"taints\":[{\"effect\":\"NoSchedule\"}]}]",
     "spec.devices[0].taints[0].key is required"},
    {"[{\"name\":\"d\",\"taints\":[{\"key\":\"k\",\"effect\":7}]}]",
     "spec.devices[0].taints[0].effect: expected a string"},
    {"[{\"name\":\"d\",\"taints\":[{\"key\":\"k\",\"value\":\"%0100d\"}]}]",
     "spec.devices[0].taints[0].value: longer than 63"},
    {"[{\"name\":\"d\",\"taints\":[1]}]", "spec.devices[0].taints[0]: expected an object"},
};

static const struct {
    const char *tol; /* a request's tolerations */
    const char *want;
} bad_tolerations[] = {
    {"{\"key\":\"k\"}", "spec.devices.requests[0].exactly.tolerations: expected a list"},
    {"[{\"key\":7}]", "spec.devices.requests[0].exactly.tolerations[0].key: expected a string"},
    {"[{\"key\":\"k\",\"tolerationSeconds\":\"5\"}]",
     "spec.devices.requests[0].exactly.tolerations[0].tolerationSeconds: expected an integer"},
    {"[\"k\"]", "spec.devices.requests[0].exactly.tolerations[0]: expected an object"},
};

Test(dranvidia, malformed_taints_and_tolerations_are_refused_naming_the_field)
{
    for (size_t k = 0; k < sizeof(bad_slices) / sizeof(bad_slices[0]); k++) {
        char devs[512], buf[1024];
        snprintf(devs, sizeof(devs), bad_slices[k].devices, 0);
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
                 "\"nodeName\":\"n\",\"pool\":{\"name\":\"n\",\"generation\":1},\"devices\":%s}}",
                 devs);
        json_t *o = json_of(buf);
        struct gs_draobj_slice s;
        struct gs_error err;
        gs_error_init(&err);
        cr_expect_eq(gs_draobj_slice_read(o, &s, &err), GS_EINVAL, "%s", buf);
        cr_expect(strstr(err.msg, bad_slices[k].want) != NULL, "%s: %s", bad_slices[k].want,
                  err.msg);
        json_decref(o);
    }
    char many[2048] = "[";
    for (int k = 0; k < 17; k++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s{\"key\":\"k%d\"}",
                 k ? "," : "", k);
    snprintf(many + strlen(many), sizeof(many) - strlen(many), "]");
    for (size_t k = 0; k <= sizeof(bad_tolerations) / sizeof(bad_tolerations[0]); k++) {
        const char *tol = k < sizeof(bad_tolerations) / sizeof(bad_tolerations[0])
                              ? bad_tolerations[k].tol
                              : many;
        const char *want = k < sizeof(bad_tolerations) / sizeof(bad_tolerations[0])
                               ? bad_tolerations[k].want
                               : "tolerations: expected a list of at most 16";
        char buf[3072];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"ai\",\"name\":\"c\"},\"spec\":{\"devices\":{"
                 "\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"x\","
                 "\"tolerations\":%s}}]}}}",
                 tol);
        json_t *o = json_of(buf);
        struct gs_draobj_claim c;
        struct gs_error err;
        gs_error_init(&err);
        cr_expect_eq(gs_draobj_claim_read(o, &c, &err), GS_EINVAL, "%s", buf);
        cr_expect(strstr(err.msg, want) != NULL, "%s: %s", want, err.msg);
        json_decref(o);
    }
    /* a DeviceTaintRule without a taint key */
    json_t *o = json_of("{\"metadata\":{\"name\":\"r\"},\"spec\":{\"deviceSelector\":{},"
                        "\"taint\":{\"effect\":\"NoSchedule\"}}}");
    struct gs_drataint_rule r;
    struct gs_error err;
    gs_error_init(&err);
    cr_expect_eq(gs_drataint_rule_read(o, &r, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "devicetaintrule r: spec.taint.key is required") != NULL, "%s",
              err.msg);
    json_decref(o);
}

/* ---------- claims alike are evaluated once a cycle ---------- */

static void expect_same(const struct gs_dra_sub *a, const struct gs_dra_sub *b, const char *what)
{
    cr_expect_eq(a->ncand, b->ncand, "%s: %d candidates against %d", what, a->ncand, b->ncand);
    cr_expect_eq(a->ntainted, b->ntainted, "%s", what);
    for (int i = 0; i < a->ncand && i < b->ncand; i++) {
        cr_expect_eq(a->cand[i], b->cand[i], "%s: candidate %d", what, i);
        cr_expect_eq(a->bynode != NULL, b->bynode != NULL, "%s", what);
        if (a->bynode && b->bynode)
            cr_expect_eq(a->bynode[i], b->bynode[i], "%s: by node %d", what, i);
    }
}

Test(dranvidia, the_selector_cache_gives_what_each_claim_would_get, .init = setup, .fini = teardown)
{
    const char *specs[] = {
        REQ("gpu.nvidia.com", SEL(ATTR ".productName == 'NVIDIA H100 80GB HBM3'")),
        REQ("gpu.nvidia.com", SEL(ATTR ".productName == 'NVIDIA H100 80GB HBM3'")),
        /* the same selector, tolerating the xid taint: one more candidate */
        REQ("gpu.nvidia.com",
            SEL(ATTR ".productName == 'NVIDIA H100 80GB HBM3'") ",\"tolerations\":[{\"operator\":"
                                                                "\"Exists\"}]"),
        MIG("3g.40gb"),
        MIG("3g.40gb"),
    };
    struct gs_draobj_selcache cache;
    gs_draobj_selcache_init(&cache);
    int ncand[5];
    for (int k = 0; k < 5; k++) {
        static struct gs_draobj_claim c;
        claim_of(specs[k], &c);
        struct gs_draobj_prep a, b;
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_eq(gs_draobj_prepare(&c, classes, 2, &world.w, &a, &err), 0, "%s", err.msg);
        cr_assert_eq(gs_draobj_prepare_cached(&c, classes, 2, &world.w, &cache, &b, &err), 0, "%s",
                     err.msg);
        expect_same(&a.c.req[0].sub[0], &b.c.req[0].sub[0], specs[k]);
        ncand[k] = b.c.req[0].sub[0].ncand;
        gs_draobj_prep_release(&a);
        gs_draobj_prep_release(&b);
        gs_draobj_claim_release(&c);
    }
    cr_expect_eq(cache.n, 3, "three alternatives apart: %d", cache.n);
    cr_expect_eq(ncand[0], 7);
    cr_expect_eq(ncand[2], 8, "tolerated, the tainted H100 is a candidate");
    cr_expect_eq(ncand[3], 5, "the static one and two placements on each partitionable GPU");
    gs_draobj_selcache_release(&cache);
}
