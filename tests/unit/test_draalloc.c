/* gpusched's DRA allocation: the agent's ResourceSlices (formats/draslice.c) read back by
 * formats/draobj.c into a world, DeviceClasses and ResourceClaims as the API serves them, and
 * core/dra.c's choices: whole GPUs, MIG profiles, partitionable placements held apart by
 * counters, count with matchAttribute, firstAvailable, All, packing, taints, selectors outside
 * the CEL subset, and the status patch written back. */
#include "base/error.h"
#include "core/catalog.h"
#include "core/dra.h"
#include "formats/draobj.h"
#include "formats/draslice.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define MAXS 32

static struct gs_draobj_slice slices[MAXS];
static const struct gs_draobj_slice *sp[MAXS];
static int nslices;
static struct gs_draobj_world world;
static struct gs_draobj_class classes[2];

static int32_t node_id(void *ctx, const char *node)
{
    (void)ctx;
    return strcmp(node, "dyn") == 0 ? 0 : strcmp(node, "whole") == 0 ? 1 : -1;
}

/* node "dyn": two partitionable A100-80GB; node "whole": two H100-80GB without MIG and a third
 * one unhealthy */
static void add_node(const char *name, const char *model, bool dynamic, int ngpus, int bad)
{
    static struct gs_draslice_node n;
    memset(&n, 0, sizeof(n));
    n.node = name;
    n.generation = 1;
    n.dynamic_mig = dynamic;
    n.ngpus = ngpus;
    for (int g = 0; g < ngpus; g++) {
        n.gpus[g].index = g;
        snprintf(n.gpus[g].uuid, sizeof(n.gpus[g].uuid), "GPU-%s-%d", name, g);
        n.gpus[g].model = gs_catalog_find(model);
        cr_assert_geq(n.gpus[g].model, 0, "%s", model);
        n.gpus[g].mem_mib = 81920;
        n.gpus[g].healthy = g != bad;
    }
    struct gs_error err;
    gs_error_init(&err);
    json_t *a = gs_draslice_build(&n, &err);
    cr_assert(a, "%s", err.msg);
    size_t i;
    json_t *s;
    json_array_foreach(a, i, s)
    {
        cr_assert_lt(nslices, MAXS);
        cr_assert_eq(gs_draobj_slice_read(s, &slices[nslices], &err), 0, "%s", err.msg);
        sp[nslices] = &slices[nslices];
        nslices++;
    }
    json_decref(a);
}

static void setup(void)
{
    nslices = 0;
    add_node("dyn", "A100-80GB", true, 2, -1);
    add_node("whole", "H100-80GB", false, 3, 2);
    cr_assert_eq(gs_draobj_world_build(sp, nslices, node_id, NULL, &world), 0);
    const char *cls[2] = {
        "{\"metadata\":{\"name\":\"gpu.gpusched.io\"},\"spec\":{\"selectors\":[{\"cel\":{"
        "\"expression\":\"device.driver == 'gpu.gpusched.io' && "
        "device.attributes['gpu.gpusched.io'].type == 'gpu'\"}}]}}",
        "{\"metadata\":{\"name\":\"mig.gpusched.io\"},\"spec\":{\"selectors\":[{\"cel\":{"
        "\"expression\":\"device.driver == 'gpu.gpusched.io' && "
        "device.attributes['gpu.gpusched.io'].type == 'mig'\"}}]}}"};
    for (int k = 0; k < 2; k++) {
        json_t *o = json_of(cls[k]);
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_eq(gs_draobj_class_read(o, &classes[k], &err), 0, "%s", err.msg);
        json_decref(o);
    }
}

static void teardown(void)
{
    for (int k = 0; k < nslices; k++)
        gs_draobj_slice_release(&slices[k]);
    for (int k = 0; k < 2; k++)
        gs_draobj_class_release(&classes[k]);
    gs_draobj_world_release(&world);
}

/* A claim from its spec.devices JSON. */
static void claim_of(const char *name, const char *devices, struct gs_draobj_claim *c)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ai\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"resourceVersion\":\"7\"},\"spec\":{\"devices\":%s}}",
             name, name, devices);
    json_t *o = json_of(buf);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_claim_read(o, c, &err), 0, "%s: %s", name, err.msg);
    json_decref(o);
}

/* Allocate a claim on node; the devices' names joined with ',' into out; returns the rc. */
static int alloc(struct gs_dra_state *st, const char *devices, int node, char *out, size_t n)
{
    static struct gs_draobj_claim c;
    struct gs_draobj_prep p;
    struct gs_dra_result r;
    struct gs_error err;
    gs_error_init(&err);
    claim_of("c", devices, &c);
    cr_assert_eq(gs_draobj_prepare(&c, classes, 2, &world.w, &p, &err), 0, "%s", err.msg);
    int rc = gs_dra_allocate(st, &p.c, node, 1, &r);
    out[0] = '\0';
    for (int k = 0; rc == 0 && k < r.n; k++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s=%s", k ? "," : "",
                 gs_dra_result_request(&p.c, &r, k), world.w.dev[r.dev[k]].name);
    gs_draobj_prep_release(&p);
    gs_draobj_claim_release(&c);
    return rc;
}

#define GPU                                                                                        \
    "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.gpusched.io\"}}]}"
#define MIG(p)                                                                                     \
    "{\"requests\":[{\"name\":\"mig\",\"exactly\":{\"deviceClassName\":\"mig.gpusched.io\","       \
    "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.gpusched.io'].profile == "   \
    "'" p "'\"}}]}}]}"

Test(draalloc, world_from_the_agents_slices, .init = setup, .fini = teardown)
{
    /* A100: 1 whole + 19 placements (7x1g.10gb, 4x1g.10gb+me? per catalog) per GPU */
    int whole = 0, part = 0, tainted = 0;
    for (int d = 0; d < world.w.ndev; d++) {
        const char *t = gs_dra_attr_str(&world.w.dev[d], "gpu.gpusched.io/type");
        cr_assert(t, "%s has no type", world.w.dev[d].name);
        whole += strcmp(t, "gpu") == 0;
        part += world.w.dev[d].nconsume > 0 && strcmp(t, "mig") == 0;
        tainted += world.w.dev[d].tainted;
    }
    cr_expect_eq(whole, 5, "whole GPUs: %d", whole);
    cr_expect_gt(part, 20, "placements: %d", part);
    cr_expect_eq(tainted, 1, "the unhealthy H100 is tainted: %d", tainted);
    cr_expect_eq(world.w.nsets, 2, "counter sets: %d", world.w.nsets);
}

Test(draalloc, counters_keep_placements_and_the_whole_gpu_apart, .init = setup, .fini = teardown)
{
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[512];
    cr_assert_eq(alloc(&st, GPU, 0, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "gpu=gpu-0");
    /* gpu-0 is taken whole: its placements do not fit, the 3g.40gb goes to gpu-1 */
    cr_assert_eq(alloc(&st, MIG("3g.40gb"), 0, got, sizeof(got)), 0);
    cr_expect(strncmp(got, "mig=gpu-1-part-3g-40gb-", 23) == 0, "%s", got);
    cr_assert_eq(alloc(&st, MIG("3g.40gb"), 0, got, sizeof(got)), 0);
    cr_expect(strncmp(got, "mig=gpu-1-part-3g-40gb-", 23) == 0, "%s", got);
    /* two 3g.40gb fill gpu-1's memory slices: a third does not fit, nor does a whole GPU */
    cr_expect_eq(alloc(&st, MIG("3g.40gb"), 0, got, sizeof(got)), GS_ENOFIT, "%s", got);
    cr_expect_eq(alloc(&st, GPU, 0, got, sizeof(got)), GS_ENOFIT, "%s", got);
    /* the compute slice left has no memory slice left: no 1g.10gb either */
    cr_expect_eq(alloc(&st, MIG("1g.10gb"), 0, got, sizeof(got)), GS_ENOFIT, "%s", got);
    gs_dra_state_release(&st);
}

Test(draalloc, small_placements_pack_onto_a_used_gpu, .init = setup, .fini = teardown)
{
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[512], first[512];
    cr_assert_eq(alloc(&st, MIG("1g.10gb"), 0, first, sizeof(first)), 0);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(alloc(&st, MIG("1g.10gb"), 0, got, sizeof(got)), 0);
        cr_expect(strncmp(got, first, 9) == 0, "packed on the same GPU: %s then %s", first, got);
    }
    /* the other GPU stays whole */
    cr_expect_eq(alloc(&st, GPU, 0, got, sizeof(got)), 0);
    cr_expect(strncmp(got + 4, first + 4, 5) != 0, "whole GPU %s beside %s", got, first);
    gs_dra_state_release(&st);
}

Test(draalloc, placement_keeps_the_most_future_fits, .init = setup, .fini = teardown)
{
    /* a 1g.10gb at slice 6 leaves both 3g.40gb placements (0 and 4) free; at 0 it blocks
     * one */
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[512];
    cr_assert_eq(alloc(&st, MIG("1g.10gb"), 0, got, sizeof(got)), 0);
    cr_expect(strcmp(got, "mig=gpu-0-part-1g-10gb-6") == 0, "%s", got);
    cr_assert_eq(alloc(&st, MIG("4g.40gb"), 0, got, sizeof(got)), 0);
    cr_expect(strcmp(got, "mig=gpu-0-part-4g-40gb-0") == 0, "%s", got);
    gs_dra_state_release(&st);
}

/* The state's weights steer the choice: room is kept for the devices the demand asks. */
Test(draalloc, weights_keep_room_for_the_demand, .init = setup, .fini = teardown)
{
    double *w = calloc((size_t)world.w.ndev + 1, sizeof(double));
    cr_assert(w);
    struct gs_dra_state st;
    char got[512];
    /* demand for 4g.40gb (start 0 only): a 2g.20gb goes to start 4 */
    for (int d = 0; d < world.w.ndev; d++)
        w[d] = strstr(world.w.dev[d].name, "-part-4g-40gb-") ? 1 : 0;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    st.weight = w;
    cr_assert_eq(alloc(&st, MIG("2g.20gb"), 0, got, sizeof(got)), 0);
    cr_expect(strcmp(got, "mig=gpu-0-part-2g-20gb-4") == 0, "%s", got);
    gs_dra_state_release(&st);
    /* demand for the 3g.40gb at start 4 alone: the 2g.20gb keeps off slices 4-7 */
    for (int d = 0; d < world.w.ndev; d++)
        w[d] = strcmp(world.w.dev[d].name, "gpu-0-part-3g-40gb-4") == 0 ? 1 : 0;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    st.weight = w;
    cr_assert_eq(alloc(&st, MIG("2g.20gb"), 0, got, sizeof(got)), 0);
    cr_expect(strcmp(got, "mig=gpu-0-part-2g-20gb-0") == 0 ||
                  strcmp(got, "mig=gpu-0-part-2g-20gb-2") == 0,
              "%s", got);
    gs_dra_state_release(&st);
    free(w);
}

Test(draalloc, count_with_match_attribute_and_taints, .init = setup, .fini = teardown)
{
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[512];
    const char *two = "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{\"deviceClassName\":"
                      "\"gpu.gpusched.io\",\"count\":2}}],\"constraints\":[{\"requests\":["
                      "\"gpus\"],\"matchAttribute\":\"gpu.gpusched.io/productName\"}]}";
    cr_assert_eq(alloc(&st, two, 1, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "gpus=gpu-0,gpus=gpu-1");
    /* the third H100 is unhealthy (tainted): nothing left */
    cr_expect_eq(alloc(&st, GPU, 1, got, sizeof(got)), GS_ENOFIT, "%s", got);
    gs_dra_state_release(&st);
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    /* two requests whose devices must share productName: an H100 and an A100 never do */
    const char *mixed = "{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":"
                        "\"gpu.gpusched.io\"}},{\"name\":\"b\",\"exactly\":{\"deviceClassName\":"
                        "\"gpu.gpusched.io\",\"selectors\":[{\"cel\":{\"expression\":"
                        "\"device.attributes['gpu.gpusched.io'].productName != 'H100-80GB'\"}}]}}"
                        "],\"constraints\":[{\"matchAttribute\":\"gpu.gpusched.io/productName\"}]}";
    cr_expect_eq(alloc(&st, mixed, 1, got, sizeof(got)), GS_ENOFIT, "%s", got);
    cr_expect_eq(alloc(&st, mixed, 0, got, sizeof(got)), 0, "%s", got);
    cr_expect_str_eq(got, "a=gpu-0,b=gpu-1");
    gs_dra_state_release(&st);
}

Test(draalloc, first_available_and_all, .init = setup, .fini = teardown)
{
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    char got[512];
    const char *fa =
        "{\"requests\":[{\"name\":\"acc\",\"firstAvailable\":[{\"name\":\"big\","
        "\"deviceClassName\":\"gpu.gpusched.io\",\"count\":3},{\"name\":\"small\","
        "\"deviceClassName\":\"mig.gpusched.io\",\"selectors\":[{\"cel\":{\"expression\":"
        "\"device.attributes['gpu.gpusched.io'].profile == '2g.20gb'\"}}]}]}]}";
    cr_assert_eq(alloc(&st, fa, 0, got, sizeof(got)), 0);
    cr_expect(strncmp(got, "acc/small=gpu-", 14) == 0, "%s", got);
    /* All: every whole GPU of the node that matches must be free; gpu-x is used by the 2g */
    const char *all = "{\"requests\":[{\"name\":\"all\",\"exactly\":{\"deviceClassName\":"
                      "\"gpu.gpusched.io\",\"allocationMode\":\"All\"}}]}";
    cr_expect_eq(alloc(&st, all, 0, got, sizeof(got)), GS_ENOFIT, "%s", got);
    gs_dra_state_release(&st);
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    cr_expect_eq(alloc(&st, all, 0, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "all=gpu-0,all=gpu-1");
    gs_dra_state_release(&st);
}

Test(draalloc, unsupported_selectors_and_missing_classes_are_named, .init = setup, .fini = teardown)
{
    static struct gs_draobj_claim c;
    struct gs_draobj_prep p;
    struct gs_error err;
    gs_error_init(&err);
    claim_of(
        "bad",
        "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.gpusched.io\","
        "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.gpusched.io']"
        ".productName.find('A100') == 'A100'\"}}]}}]}",
        &c);
    cr_expect_eq(gs_draobj_prepare(&c, classes, 2, &world.w, &p, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "resourceclaim ai/bad: request gpu: its selector "
                              "\"device.attributes['gpu.gpusched.io'].productName.find('A100') == "
                              "'A100'\": unsupported CEL: function 'find' at position 49") != NULL,
              "%s", err.msg);
    gs_draobj_claim_release(&c);
    claim_of("nocls",
             "{\"requests\":[{\"name\":\"x\",\"exactly\":{\"deviceClassName\":\"nope\"}}]}", &c);
    cr_expect_eq(gs_draobj_prepare(&c, classes, 2, &world.w, &p, &err), GS_ENOTFOUND);
    cr_expect(strstr(err.msg, "deviceclass \"nope\" not found") != NULL, "%s", err.msg);
}

Test(draalloc, claims_read_and_bad_claims_refused)
{
    json_t *o = json_of(
        "{\"metadata\":{\"namespace\":\"ai\",\"name\":\"c1\",\"uid\":\"u1\",\"resourceVersion\":"
        "\"9\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
        "\"deviceClassName\":\"gpu.gpusched.io\",\"allocationMode\":\"ExactCount\",\"count\":1}}]}}"
        ","
        "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":"
        "\"gpu.gpusched.io\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]},\"nodeSelector\":{"
        "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
        "\"values\":[\"n1\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\","
        "\"uid\":\"pu\"}]}}");
    static struct gs_draobj_claim c;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_claim_read(o, &c, &err), 0, "%s", err.msg);
    json_decref(o);
    cr_expect(c.allocated);
    cr_expect_str_eq(c.node, "n1");
    cr_expect_eq(c.nresults, 1);
    cr_expect_str_eq(c.results[0].device, "gpu-0");
    cr_expect_eq(c.nreserved, 1);
    cr_expect_str_eq(c.reserved[0].uid, "pu");
    gs_draobj_claim_release(&c);
    const char *bad[][2] = {
        {"{\"requests\":[]}", "spec.devices.requests: expected a list of 1 to 8"},
        {"{\"requests\":[{\"name\":\"x\"}]}", "exactly one of exactly and firstAvailable"},
        {"{\"requests\":[{\"name\":\"x\",\"exactly\":{\"deviceClassName\":\"c\",\"count\":0}}]}",
         "requests[0].exactly.count: expected an integer in 1..32"},
        {"{\"requests\":[{\"name\":\"x\",\"exactly\":{\"deviceClassName\":\"c\","
         "\"allocationMode\":\"Some\"}}]}",
         "allocationMode: \"Some\""},
        {"{\"requests\":[{\"name\":\"x\",\"exactly\":{\"deviceClassName\":\"c\"}}],"
         "\"constraints\":[{\"requests\":[\"y\"],\"matchAttribute\":\"d/a\"}]}",
         "constraints[0].requests[0]: no request \"y\""},
        {"{\"requests\":[{\"name\":\"x\",\"exactly\":{\"deviceClassName\":\"c\"}}],"
         "\"constraints\":[{\"matchAttribute\":\"bare\"}]}",
         "expected a fully qualified attribute name"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        char buf[1024];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"ai\",\"name\":\"b\"},\"spec\":{\"devices\":%s}}",
                 bad[k][0]);
        o = json_of(buf);
        gs_error_init(&err);
        cr_expect_eq(gs_draobj_claim_read(o, &c, &err), GS_EINVAL, "%s", bad[k][0]);
        cr_expect(strstr(err.msg, bad[k][1]) != NULL, "got '%s', want '%s'", err.msg, bad[k][1]);
        cr_expect(strstr(err.msg, "resourceclaim ai/b: ") == err.msg, "%s", err.msg);
        json_decref(o);
    }
}

Test(draalloc, status_patch_as_kube_scheduler_writes_it, .init = setup, .fini = teardown)
{
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &world.w), 0);
    static struct gs_draobj_claim c;
    claim_of("w", GPU, &c);
    struct gs_draobj_prep p;
    struct gs_dra_result r;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_prepare(&c, classes, 2, &world.w, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_dra_allocate(&st, &p.c, 1, 1, &r), 0);
    json_t *patch = gs_draobj_status_patch(&c, &p.c, &r, &world.w, "whole", "pod-a", "uid-a");
    char *s = json_dumps(patch, JSON_SORT_KEYS | JSON_COMPACT);
    cr_expect_str_eq(
        s, "{\"metadata\":{\"resourceVersion\":\"7\",\"uid\":\"u-w\"},\"status\":{\"allocation\":{"
           "\"devices\":{\"results\":[{\"device\":\"gpu-0\",\"driver\":\"gpu.gpusched.io\","
           "\"pool\":\"whole\",\"request\":\"gpu\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{"
           "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":["
           "\"whole\"]}]}]}},\"reservedFor\":[{\"name\":\"pod-a\",\"resource\":\"pods\",\"uid\":"
           "\"uid-a\"}]}}");
    free(s);
    json_decref(patch);
    gs_draobj_prep_release(&p);
    gs_draobj_claim_release(&c);
    gs_dra_state_release(&st);
}
