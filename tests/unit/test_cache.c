/* test_cache.c - Node objects as the API server serves them on a GPU Operator cluster (dozens
 * of NFD and GFD labels, MIG layouts, models the catalog lacks, allocatable that disagrees
 * with the labels) through the reader (formats/kubeobj) and the cache (sched/cache) into the
 * engine's cluster; and the label set they are kept in (core/labels). */
#include "base/error.h"
#include "core/labels.h"
#include "fixtures.h"
#include "formats/inventory.h"
#include "formats/kubeobj.h"
#include "formats/migparted.h"
#include "sched/cache.h"
#include "sim/scenario.h"

#include <criterion/criterion.h>
#include <stdlib.h>

static json_t *node_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/nodes/%s", GS_SOURCE_DIR, name);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    cr_assert_not_null(o, "%s: %s", path, je.text);
    return o;
}

static void read_node(const char *file, struct gs_kube_node *kn)
{
    json_t *o = node_file(file);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, kn, &err), 0, "%s: %s", file, err.msg);
    json_decref(o);
}

Test(labels, every_label_of_a_gpu_operator_node_is_kept)
{
    struct gs_kube_node kn;
    read_node("a100-whole.json", &kn);
    cr_expect_eq(kn.labels.n, 95, "labels kept: %u", kn.labels.n);
    /* sorted after some 80 beta.kubernetes.io / feature.node.kubernetes.io labels */
    cr_expect_str_eq(gs_kube_label(&kn, "nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB");
    cr_expect_str_eq(gs_kube_label(&kn, "topology.kubernetes.io/zone"), "eu-west-1a");
    cr_expect_str_eq(gs_kube_label(&kn, "feature.node.kubernetes.io/cpu-cpuid.AVX512VNNI"), "true");
    cr_expect_null(gs_kube_label(&kn, "nvidia.com/gpu.product2"));
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "";
    int id = gs_cache_add_node(&c, &kn, NULL, note, sizeof(note));
    cr_assert_geq(id, 0);
    cr_expect_str_empty(note, "note: %s", note);
    cr_expect_eq(c.nodes[id].ngpus, 8);
    cr_expect_eq(c.nodes[id].model, gs_catalog_find("A100-80GB"));
    cr_expect_eq(c.nodes[id].labels.n, 95);
    cr_expect_str_eq(gs_node_label(&c.nodes[id], "kubernetes.io/hostname"), "gpu-a100-01");
    /* a copy of the cluster owns its own labels */
    struct gs_cluster d;
    gs_cluster_init(&d);
    cr_assert_eq(gs_cluster_copy(&d, &c), 0);
    gs_cluster_release(&c);
    cr_expect_str_eq(gs_node_label(&d.nodes[0], "nvidia.com/gpu.family"), "ampere");
    gs_cluster_release(&d);
    gs_kube_node_release(&kn);
}

Test(labels, long_keys_and_values_are_kept_or_refused_never_cut)
{
    char key[400], val[300];
    memset(key, 'k', sizeof(key));
    memset(val, 'v', sizeof(val));
    /* 253-byte prefix, '/', 63-byte name: the longest key Kubernetes accepts */
    key[253] = '/';
    key[GS_LABELS_KEY_MAX] = '\0';
    val[63] = '\0';
    struct gs_labels l;
    gs_labels_init(&l);
    cr_assert_eq(gs_labels_set(&l, key, val), 0);
    cr_expect_str_eq(gs_labels_get(&l, key), val);
    key[GS_LABELS_KEY_MAX] = 'k';
    key[GS_LABELS_KEY_MAX + 1] = '\0';
    cr_expect_eq(gs_labels_set(&l, key, "x"), GS_EINVAL);
    cr_expect_eq(gs_labels_set(&l, "", "x"), GS_EINVAL);
    cr_expect_eq(l.n, 1, "a refused label leaves the set as it was");
    gs_labels_release(&l);

    json_t *o = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", "n1", "labels", key, "x");
    struct gs_kube_node kn;
    struct gs_error err;
    gs_error_init(&err);
    cr_expect_eq(gs_kube_node_read(o, &kn, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "metadata.labels.") != NULL, "%s", err.msg);
    json_decref(o);
}

Test(labels, build_sorts_and_the_last_duplicate_wins)
{
    struct gs_label_ref kv[] = {{"zone", "a"}, {"app", "x"}, {"zone", "b"}, {"m", ""}};
    struct gs_labels l;
    gs_labels_init(&l);
    cr_assert_eq(gs_labels_build(&l, kv, 4), 0);
    cr_expect_eq(l.n, 3);
    cr_expect_str_eq(gs_labels_key(&l, 0), "app");
    cr_expect_str_eq(gs_labels_key(&l, 1), "m");
    cr_expect_str_eq(gs_labels_key(&l, 2), "zone");
    cr_expect_str_eq(gs_labels_get(&l, "zone"), "b");
    cr_expect_str_eq(gs_labels_get(&l, "m"), "");
    cr_expect_eq(gs_labels_set(&l, "app", "y"), 0);
    cr_expect_str_eq(gs_labels_get(&l, "app"), "y");
    cr_expect_eq(l.n, 3);
    struct gs_labels m;
    gs_labels_init(&m);
    cr_assert_eq(gs_labels_copy(&m, &l), 0);
    cr_expect(gs_labels_equal(&m, &l));
    cr_expect_eq(gs_labels_set(&m, "new", "1"), 0);
    cr_expect(!gs_labels_equal(&m, &l));
    gs_labels_release(&l);
    gs_labels_release(&m);
}

/* A node whose allocatable disagrees with its labels (1 GPU counted, MIG devices of 3 GPUs
 * advertised) added when the cluster's GPU array is exactly full: the MIG layout must not be
 * written past the node's GPUs (old code: a heap overflow, found by ASan). */
Test(cache, allocatable_disagreeing_with_labels_cannot_write_past_the_node)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    int a100 = gs_catalog_find("A100-80GB");
    for (int i = 0; i < 32; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        cr_assert_geq(gs_cluster_add_node(&c, name, a100, 8, 64000, 1 << 20, GS_GPU_WHOLE, 0, NULL),
                      0);
    }
    cr_assert_eq(c.ngpus, c.cap_gpus, "the GPU array is full (%d of %d)", c.ngpus, c.cap_gpus);
    struct gs_kube_node kn;
    read_node("mig-mismatch.json", &kn);
    char note[256] = "";
    int id = gs_cache_add_node(&c, &kn, NULL, note, sizeof(note));
    cr_assert_geq(id, 0);
    cr_expect_eq(c.nodes[id].ngpus, 0);
    cr_expect_eq(c.ngpus, 256);
    cr_expect(strstr(note, "nvidia.com/gpu.count") != NULL, "note: %s", note);
    /* the node is kept for its CPU and memory */
    cr_expect_gt(c.nodes[id].cpu_cap, 0);
    gs_cluster_release(&c);
    gs_kube_node_release(&kn);
}

Test(cache, a_node_with_more_taints_than_kept_is_known_but_gets_no_pods)
{
    json_t *o = node_file("a100-whole.json");
    json_t *taints = json_object_get(json_object_get(o, "spec"), "taints");
    for (int i = 0; i < GS_MAX_TAINTS + 5; i++) {
        char k[32];
        snprintf(k, sizeof(k), "example.com/t%d", i);
        json_array_append_new(taints, json_pack("{s:s, s:s}", "key", k, "effect", "NoSchedule"));
    }
    struct gs_kube_node kn;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, &kn, &err), 0, "%s", err.msg);
    cr_expect(strstr(kn.refused, "spec.taints") != NULL, "refused: '%s'", kn.refused);
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "";
    int id = gs_cache_add_node(&c, &kn, NULL, note, sizeof(note));
    cr_assert_geq(id, 0);
    cr_expect(c.nodes[id].unschedulable);
    cr_expect(strstr(note, "spec.taints") != NULL, "note: %s", note);
    gs_cluster_release(&c);
    gs_kube_node_release(&kn);
    json_decref(o);
}

Test(cache, every_fixture_node_reads_and_builds)
{
    const char *files[] = {"a100-whole.json", "a100-mixed.json", "a100-all-1g.json",
                           "unknown-model.json", "mig-mismatch.json"};
    struct gs_cluster c;
    gs_cluster_init(&c);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        struct gs_kube_node kn;
        read_node(files[i], &kn);
        cr_expect_geq(gs_cache_add_node(&c, &kn, NULL, NULL, 0), 0, "%s", files[i]);
        gs_kube_node_release(&kn);
    }
    cr_expect_eq(c.nnodes, 5);
    gs_cluster_release(&c);
}

/* The article's mixed node as its agent publishes it: GPU0 2x3g.40gb, GPU1 7x1g.10gb, GPUs 2
 * and 3 whole. */
static const char *MIXED_INVENTORY =
    "{\"v\":1,\"gpus\":["
    "{\"i\":0,\"uuid\":\"GPU-0a\",\"model\":\"A100-80GB\",\"mem\":81920,"
    "\"mig\":[\"3g.40gb@0\",\"3g.40gb@4\"]},"
    "{\"i\":1,\"uuid\":\"GPU-1b\",\"model\":\"A100-80GB\",\"mem\":81920,\"mig\":[\"1g.10gb@0\","
    "\"1g.10gb@1\",\"1g.10gb@2\",\"1g.10gb@3\",\"1g.10gb@4\",\"1g.10gb@5\",\"1g.10gb@6\"]},"
    "{\"i\":2,\"uuid\":\"GPU-2c\",\"model\":\"A100-80GB\",\"mem\":81920},"
    "{\"i\":3,\"uuid\":\"GPU-3d\",\"model\":\"A100-80GB\",\"mem\":81920}]}";

/* The mixed node's Node object, with the inventory annotation when given. */
static int mixed_node(struct gs_cluster *c, const char *inventory, const struct gs_migparted *mp,
                      char *note, size_t n)
{
    json_t *o = node_file("a100-mixed.json");
    if (inventory)
        json_object_set_new(json_object_get(json_object_get(o, "metadata"), "annotations"),
                            GS_INVENTORY_ANNOTATION, json_string(inventory));
    struct gs_kube_node kn;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, &kn, &err), 0, "%s", err.msg);
    json_decref(o);
    int id = gs_cache_add_node(c, &kn, mp, note, n);
    gs_kube_node_release(&kn);
    return id;
}

/* Place one request with first fit and return the devices annotation gpusched would write. */
static void place(struct gs_cluster *c, struct gs_request r, char *out, unsigned size)
{
    struct gs_alloc a;
    cr_assert_eq(gs_engine_first_fit(c, &r, &a), 0, "no fit");
    gs_kube_devices_str(c, &a, out, size);
    cr_assert_eq(gs_cluster_bind(c, &r, &a), 0);
}

Test(cache, the_inventory_gives_physical_gpus_and_exact_placements)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "", dev[128];
    int id = mixed_node(&c, MIXED_INVENTORY, NULL, note, sizeof(note));
    cr_assert_geq(id, 0);
    cr_expect_str_empty(note, "%s", note);
    const struct gs_node *n = &c.nodes[id];
    cr_assert_eq(n->ngpus, 4);
    cr_expect(!n->layout_guessed);
    cr_expect_eq(c.gpus[n->gpu0 + 0].mode, GS_GPU_MIG);
    cr_expect_eq(c.gpus[n->gpu0 + 0].mig.n, 2);
    cr_expect_eq(c.gpus[n->gpu0 + 1].mode, GS_GPU_MIG);
    cr_expect_eq(c.gpus[n->gpu0 + 1].mig.n, 7);
    cr_expect_eq(c.gpus[n->gpu0 + 2].mode, GS_GPU_WHOLE);
    place(&c, mig_req("3g.40gb"), dev, sizeof(dev));
    cr_expect_str_eq(dev, "mig=0:3g.40gb@0", "3g.40gb instances are on physical GPU 0");
    place(&c, mig_req("3g.40gb"), dev, sizeof(dev));
    cr_expect_str_eq(dev, "mig=0:3g.40gb@4");
    place(&c, mig_req("1g.10gb"), dev, sizeof(dev));
    cr_expect(strncmp(dev, "mig=1:1g.10gb@", 14) == 0, "1g.10gb on physical GPU 1: %s", dev);
    place(&c, gpu_req(1), dev, sizeof(dev));
    cr_expect(strcmp(dev, "gpu=2") == 0 || strcmp(dev, "gpu=3") == 0, "whole GPU: %s", dev);
    gs_cluster_release(&c);
}

/* The mixed node with GPUs 2 and 3 served as fractions (inventory version 3). */
static const char FRACTIONS_INVENTORY[] =
    "{\"v\":3,\"gpus\":["
    "{\"i\":0,\"uuid\":\"GPU-0a\",\"model\":\"A100-80GB\",\"mem\":81920,"
    "\"mig\":[\"3g.40gb@0\",\"3g.40gb@4\"]},"
    "{\"i\":1,\"uuid\":\"GPU-1b\",\"model\":\"A100-80GB\",\"mem\":81920,\"mig\":[\"1g.10gb@0\","
    "\"1g.10gb@1\",\"1g.10gb@2\",\"1g.10gb@3\",\"1g.10gb@4\",\"1g.10gb@5\",\"1g.10gb@6\"]},"
    "{\"i\":2,\"uuid\":\"GPU-2c\",\"model\":\"A100-80GB\",\"mem\":81920,\"sharing\":"
    "\"fractions\"},"
    "{\"i\":3,\"uuid\":\"GPU-3d\",\"model\":\"A100-80GB\",\"mem\":81920,\"sharing\":"
    "\"fractions\"}]}";

static struct gs_request frac_req(int milli)
{
    struct gs_request r;
    memset(&r, 0, sizeof(r));
    r.kind = GS_REQ_FRACTION;
    r.gpus = 1;
    r.milli = (int16_t)milli;
    r.cpu_milli = 100;
    return r;
}

Test(cache, gpus_the_agent_serves_as_fractions_take_fraction_pods)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "", dev[128];
    int id = mixed_node(&c, FRACTIONS_INVENTORY, NULL, note, sizeof(note));
    cr_assert_geq(id, 0);
    cr_expect_str_empty(note, "%s", note);
    const struct gs_node *n = &c.nodes[id];
    cr_assert_eq(n->ngpus, 4);
    cr_expect_eq(c.gpus[n->gpu0 + 2].mode, GS_GPU_FRACTION);
    cr_expect_eq(c.gpus[n->gpu0 + 3].mode, GS_GPU_FRACTION);
    cr_expect(c.gpus[n->gpu0 + 2].healthy && c.gpus[n->gpu0 + 3].healthy);
    place(&c, frac_req(600), dev, sizeof(dev));
    cr_expect(strcmp(dev, "milli=2:600") == 0 || strcmp(dev, "milli=3:600") == 0, "%s", dev);
    place(&c, frac_req(600), dev, sizeof(dev));
    cr_expect(strcmp(dev, "milli=2:600") == 0 || strcmp(dev, "milli=3:600") == 0, "%s", dev);
    place(&c, frac_req(400), dev, sizeof(dev));
    cr_expect(strcmp(dev, "milli=2:400") == 0 || strcmp(dev, "milli=3:400") == 0, "%s", dev);
    place(&c, frac_req(400), dev, sizeof(dev));
    struct gs_request r = frac_req(1);
    struct gs_alloc a;
    cr_expect_neq(gs_engine_first_fit(&c, &r, &a), 0, "both GPUs are full");
    gs_cluster_release(&c);
}

Test(cache, whole_gpus_the_agent_does_not_serve_as_fractions_take_no_fraction_pods)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "", dev[128];
    int id = mixed_node(&c, MIXED_INVENTORY, NULL, note, sizeof(note));
    cr_assert_geq(id, 0);
    struct gs_request r = frac_req(500);
    struct gs_alloc a;
    cr_expect_neq(gs_engine_first_fit(&c, &r, &a), 0, "no GPU serves gpusched.io/gpu-milli");
    /* a fractions GPU still takes a whole-GPU pod (it advertises nvidia.com/gpu too) */
    gs_cluster_release(&c);
    gs_cluster_init(&c);
    cr_assert_geq(mixed_node(&c, FRACTIONS_INVENTORY, NULL, note, sizeof(note)), 0);
    place(&c, gpu_req(1), dev, sizeof(dev));
    cr_expect(strcmp(dev, "gpu=2") == 0 || strcmp(dev, "gpu=3") == 0, "whole GPU: %s", dev);
    gs_cluster_release(&c);
}

Test(cache, nvidia_mig_config_gives_physical_gpus_without_an_agent)
{
    struct gs_migparted *mp = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_migparted_parse("mig.yaml", gs_article_mig_config_yaml,
                                    strlen(gs_article_mig_config_yaml), &mp, &err),
                 0, "%s", err.msg);
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "", dev[128];
    int id = mixed_node(&c, NULL, mp, note, sizeof(note));
    cr_assert_geq(id, 0);
    const struct gs_node *n = &c.nodes[id];
    cr_assert_eq(n->ngpus, 4);
    cr_expect(!n->layout_guessed);
    cr_expect_eq(c.gpus[n->gpu0 + 0].mode, GS_GPU_MIG);
    cr_expect_eq(c.gpus[n->gpu0 + 3].mode, GS_GPU_WHOLE);
    place(&c, mig_req("3g.40gb"), dev, sizeof(dev));
    cr_expect(strncmp(dev, "mig=0:3g.40gb@", 14) == 0, "%s", dev);
    place(&c, gpu_req(2), dev, sizeof(dev));
    cr_expect_str_eq(dev, "gpu=2,3");
    gs_cluster_release(&c);
    gs_migparted_free(mp);
}

Test(cache, counts_alone_never_name_a_physical_gpu)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "", dev[128];
    int id = mixed_node(&c, NULL, NULL, note, sizeof(note));
    cr_assert_geq(id, 0);
    cr_expect_str_empty(note, "%s", note);
    cr_expect(c.nodes[id].layout_guessed);
    cr_expect_eq(c.nodes[id].ngpus, 4);
    place(&c, mig_req("3g.40gb"), dev, sizeof(dev));
    cr_expect_str_empty(dev, "no index is written for a guessed layout: %s", dev);
    place(&c, gpu_req(1), dev, sizeof(dev));
    cr_expect_str_empty(dev, "%s", dev);
    gs_cluster_release(&c);
}

Test(cache, the_inventory_holds_back_what_the_kubelet_does_not_advertise)
{
    json_t *o = node_file("a100-mixed.json");
    json_t *alloc = json_object_get(json_object_get(o, "status"), "allocatable");
    json_object_set_new(alloc, "nvidia.com/mig-1g.10gb", json_string("5"));
    json_object_set_new(alloc, "nvidia.com/gpu", json_string("1"));
    json_object_set_new(json_object_get(json_object_get(o, "metadata"), "annotations"),
                        GS_INVENTORY_ANNOTATION, json_string(MIXED_INVENTORY));
    struct gs_kube_node kn;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, &kn, &err), 0, "%s", err.msg);
    struct gs_cluster c;
    gs_cluster_init(&c);
    int id = gs_cache_add_node(&c, &kn, NULL, NULL, 0);
    cr_assert_geq(id, 0);
    const struct gs_node *n = &c.nodes[id];
    int free1g = 0, healthy_whole = 0;
    for (int s = 0; s < c.gpus[n->gpu0 + 1].mig.n; s++)
        free1g += !(c.gpus[n->gpu0 + 1].mig_used & (1u << s));
    for (int k = 2; k < 4; k++)
        healthy_whole += c.gpus[n->gpu0 + k].healthy;
    cr_expect_eq(free1g, 5, "1g.10gb instances offered: %d", free1g);
    cr_expect_eq(healthy_whole, 1, "whole GPUs offered: %d", healthy_whole);
    gs_cluster_release(&c);
    gs_kube_node_release(&kn);
    json_decref(o);
}

Test(inventory, writes_and_reads_back)
{
    struct gs_inventory inv;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_inventory_read(MIXED_INVENTORY, strlen(MIXED_INVENTORY), &inv, &err), 0, "%s",
                 err.msg);
    cr_expect_eq(inv.ngpus, 4);
    inv.gpus[3].mode = GS_GPU_TIMESLICE;
    inv.gpus[3].replicas = 4;
    inv.gpus[2].healthy = false;
    snprintf(inv.gpus[2].health, sizeof(inv.gpus[2].health), "xid 79");
    char *text = gs_inventory_write(&inv);
    cr_assert_not_null(text);
    struct gs_inventory back;
    cr_assert_eq(gs_inventory_read(text, strlen(text), &back, &err), 0, "%s: %s", text, err.msg);
    cr_expect_eq(back.gpus[3].mode, GS_GPU_TIMESLICE);
    cr_expect_eq(back.gpus[3].replicas, 4);
    cr_expect(!back.gpus[2].healthy);
    cr_expect_str_eq(back.gpus[2].health, "xid 79");
    cr_expect_eq(back.gpus[1].ninst, 7);
    cr_expect_str_eq(back.gpus[0].inst[1].profile, "3g.40gb");
    cr_expect_eq(back.gpus[0].inst[1].start, 4);
    cr_expect_eq(back.version, 1, "no links, no fractions: version 1 (%s)", text);
    free(text);
    /* fractions: version 3, read back as fractions; the others as they were */
    inv.gpus[2].healthy = true;
    inv.gpus[2].mode = GS_GPU_FRACTION;
    text = gs_inventory_write(&inv);
    cr_assert_not_null(text);
    cr_expect(strncmp(text, "{\"v\":3,", 7) == 0, "%s", text);
    cr_expect(strstr(text, "\"sharing\":\"fractions\"}") != NULL, "%s", text);
    cr_assert_eq(gs_inventory_read(text, strlen(text), &back, &err), 0, "%s: %s", text, err.msg);
    cr_expect_eq(back.gpus[2].mode, GS_GPU_FRACTION);
    cr_expect_eq(back.gpus[2].replicas, 1);
    cr_expect_eq(back.gpus[3].mode, GS_GPU_TIMESLICE);
    cr_expect_eq(back.gpus[3].replicas, 4);
    free(text);
}

Test(inventory, bad_annotations_are_refused_with_the_field)
{
    struct {
        const char *text, *want;
    } cases[] = {
        {"{\"v\":4,\"gpus\":[]}", "v: expected version 1 to 3"},
        {"{\"v\":2,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"A100-80GB\",\"mem\":1,"
         "\"sharing\":\"fractions\"}]}",
         "gpus[0]: sharing \"fractions\" needs version 3"},
        {"{\"v\":3,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"A100-80GB\",\"mem\":1,"
         "\"sharing\":\"fractions\",\"replicas\":2}]}",
         "gpus[0].sharing: \"fractions\" takes no replicas"},
        {"{\"v\":3,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"A100-80GB\",\"mem\":1,"
         "\"sharing\":\"fractions\",\"mig\":[]}]}",
         "not also shared"},
        {"{\"v\":1,\"gpus\":[],\"x\":1}", "x: unknown field"},
        {"{\"v\":1,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"A100-80GB\",\"mem\":1},"
         "{\"i\":0,\"uuid\":\"b\",\"model\":\"A100-80GB\",\"mem\":1}]}",
         "gpus[1].i: GPU index given twice"},
        {"{\"v\":1,\"gpus\":[{\"i\":16,\"uuid\":\"a\",\"model\":\"A100-80GB\",\"mem\":1}]}",
         "gpus[0].i"},
        {"{\"v\":1,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"A100-80GB\",\"mem\":1,"
         "\"mig\":[\"3g.40gb\"]}]}",
         "gpus[0].mig[0]"},
        {"{\"v\":1,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"A100-80GB\",\"mem\":1,"
         "\"mig\":[],\"replicas\":2,\"sharing\":\"mps\"}]}",
         "not also shared"},
        {"{\"v\":1,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"A100-80GB\",\"mem\":1,"
         "\"sharing\":\"both\",\"replicas\":2}]}",
         "gpus[0].sharing"},
        {"{\"v\":1,\"gpus\":[{\"i\":0,\"model\":\"A100-80GB\",\"mem\":1}]}",
         "gpus[0].uuid: required"},
        {"[1]", "expected an object"},
        {"{\"v\":1,", "column"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct gs_inventory inv;
        struct gs_error err;
        gs_error_init(&err);
        cr_expect_eq(gs_inventory_read(cases[k].text, strlen(cases[k].text), &inv, &err), GS_EINVAL,
                     "case %zu accepted", k);
        cr_expect(strstr(err.msg, cases[k].want) != NULL, "case %zu: '%s' lacks '%s'", k, err.msg,
                  cases[k].want);
    }
    /* over the size bound */
    size_t big = GS_INVENTORY_MAX_BYTES + 10;
    char *text = malloc(big + 1);
    memset(text, ' ', big);
    text[big] = '\0';
    struct gs_inventory inv;
    cr_expect_eq(gs_inventory_read(text, big, &inv, NULL), GS_EINVAL);
    free(text);
}

Test(cache, an_inventory_that_cannot_be_used_offers_no_gpus_and_says_why)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "";
    /* overlapping instances: 3g.40gb at 0 and 4g.40gb at 0 */
    const char *bad = "{\"v\":1,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"A100-80GB\","
                      "\"mem\":81920,\"mig\":[\"3g.40gb@0\",\"4g.40gb@0\"]}]}";
    int id = mixed_node(&c, bad, NULL, note, sizeof(note));
    cr_assert_geq(id, 0);
    cr_expect_eq(c.nodes[id].ngpus, 0);
    cr_expect(strstr(note, "overlap") != NULL, "%s", note);
    id = mixed_node(&c, "{\"v\":9}", NULL, note, sizeof(note));
    cr_expect_eq(c.nodes[id].ngpus, 0);
    cr_expect(strstr(note, "gpusched.io/inventory") != NULL, "%s", note);
    gs_cluster_release(&c);
}

Test(cache, a_model_the_catalog_lacks_gets_whole_gpus_with_its_labelled_memory)
{
    struct gs_kube_node kn;
    read_node("unknown-model.json", &kn);
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "", dev[64];
    int id = gs_cache_add_node(&c, &kn, NULL, note, sizeof(note));
    cr_assert_geq(id, 0);
    cr_expect_str_empty(note, "%s", note);
    const struct gs_node *n = &c.nodes[id];
    cr_assert_eq(n->ngpus, 8);
    cr_expect_eq(n->model, gs_catalog_other());
    cr_expect_str_eq(gs_catalog_get(n->model)->name, "other");
    cr_expect_eq(c.gpus[n->gpu0].mem_mib, 147456);
    struct gs_request big = gpu_req(4);
    big.gpu_mem_mib = 140000;
    place(&c, big, dev, sizeof(dev));
    cr_expect_str_eq(dev, "gpu=0,1,2,3");
    struct gs_request huge = gpu_req(1);
    huge.gpu_mem_mib = 200000;
    struct gs_alloc a;
    cr_expect_eq(gs_engine_first_fit(&c, &huge, &a), GS_ENOFIT, "more memory than it has");
    gs_cluster_release(&c);
    gs_kube_node_release(&kn);
    /* time-slicing replicas on it */
    json_t *o = node_file("unknown-model.json");
    json_t *l = json_object_get(json_object_get(o, "metadata"), "labels");
    json_object_set_new(l, "nvidia.com/gpu.replicas", json_string("4"));
    json_object_set_new(l, "nvidia.com/gpu.sharing-strategy", json_string("time-slicing"));
    json_object_set_new(json_object_get(json_object_get(o, "status"), "allocatable"),
                        "nvidia.com/gpu", json_string("32"));
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, &kn, &err), 0, "%s", err.msg);
    gs_cluster_init(&c);
    id = gs_cache_add_node(&c, &kn, NULL, note, sizeof(note));
    cr_expect_eq(c.nodes[id].ngpus, 8);
    cr_expect_eq(c.gpus[c.nodes[id].gpu0].mode, GS_GPU_TIMESLICE);
    cr_expect_eq(c.gpus[c.nodes[id].gpu0].replicas, 4);
    gs_cluster_release(&c);
    gs_kube_node_release(&kn);
    /* MIG devices need the catalog's geometry */
    json_object_set_new(json_object_get(json_object_get(o, "status"), "allocatable"),
                        "nvidia.com/mig-1g.18gb", json_string("7"));
    cr_assert_eq(gs_kube_node_read(o, &kn, &err), 0, "%s", err.msg);
    gs_cluster_init(&c);
    id = gs_cache_add_node(&c, &kn, NULL, note, sizeof(note));
    cr_expect_eq(c.nodes[id].ngpus, 0);
    cr_expect(strstr(note, "geometry") != NULL, "%s", note);
    gs_cluster_release(&c);
    gs_kube_node_release(&kn);
    json_decref(o);
}

/* Pods with more than the fixed-size fields hold: read, never dropped or cut silently. */
Test(kubeobj, big_selectors_and_tolerations_are_kept_or_refused_with_the_field)
{
    json_t *sel = json_object(), *tols = json_array();
    for (int i = 0; i < 6; i++) {
        char k[64];
        snprintf(k, sizeof(k), "example.com/key-%d", i);
        json_object_set_new(sel, k, json_string("v"));
    }
    json_object_set_new(sel,
                        "feature.node.kubernetes.io/a-label-key-much-longer-than-sixty-four-"
                        "bytes",
                        json_string("true"));
    for (int i = 0; i < 40; i++)
        json_array_append_new(tols, json_pack("{s:s, s:s}", "key", "k", "operator", "Exists"));
    json_t *o =
        json_pack("{s:{s:s, s:s}, s:{s:o, s:[{s:s}]}}", "metadata", "name", "p", "namespace", "ai",
                  "spec", "nodeSelector", sel, "containers", "name", "c");
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, &p, &err), 0, "%s", err.msg);
    cr_expect_eq(p.req.nsel, GS_MAX_SELECTOR);
    cr_expect(p.sel_partial);
    cr_expect_str_empty(p.refused);
    cr_assert_eq(gs_kube_pod_read_constraints(o, &p), 0, "%s", p.k_error);
    cr_expect_eq(p.k->kp.nnode_selector, 7, "the constraints keep the whole selector");
    gs_kube_pod_release(&p);
    json_object_set_new(json_object_get(o, "spec"), "tolerations", tols);
    cr_assert_eq(gs_kube_pod_read(o, &p, &err), 0, "%s", err.msg);
    cr_expect(strstr(p.refused, "spec.tolerations: 40 tolerations") != NULL, "%s", p.refused);
    json_decref(o);
}

/* Requests as kube-scheduler sums them: sidecars (init containers with restartPolicy Always)
 * run beside the containers and the later init containers; overhead counts on top. */
Test(kubeobj, sidecars_and_overhead_count_as_kube_scheduler_counts_them)
{
    json_t *o = json_of(
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ai\"},\"spec\":{"
        "\"overhead\":{\"cpu\":\"250m\",\"memory\":\"120Mi\"},"
        "\"initContainers\":["
        "{\"name\":\"proxy\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{"
        "\"cpu\":\"1\",\"memory\":\"1Gi\"}}},"
        "{\"name\":\"warm\",\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":\"1Gi\"}}}],"
        "\"containers\":[{\"name\":\"main\",\"resources\":{\"requests\":{\"cpu\":\"2\","
        "\"memory\":\"4Gi\"}}}]}}");
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, &p, &err), 0, "%s", err.msg);
    /* cpu: max(2 + 1 sidecar, 4 init + 1 sidecar) + 0.25 = 5.25; memory: max(4 + 1, 1 + 1) Gi
     * + 120 Mi */
    cr_expect_eq(p.req.cpu_milli, 5250);
    cr_expect_eq(p.req.mem_mib, 5 * 1024 + 120);
    json_decref(o);
}

Test(kubeobj, a_cordoned_node_takes_only_pods_that_tolerate_the_cordon)
{
    json_t *o = node_file("a100-whole.json");
    json_object_set_new(json_object_get(o, "spec"), "unschedulable", json_true());
    struct gs_kube_node kn;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, &kn, &err), 0, "%s", err.msg);
    struct gs_kube_pod p;
    memset(&p, 0, sizeof(p));
    p.ntol = 1;
    snprintf(p.tol[0].key, sizeof(p.tol[0].key), "nvidia.com/gpu");
    snprintf(p.tol[0].op, sizeof(p.tol[0].op), "Exists");
    cr_expect(!gs_kube_tolerates(&p, &kn), "a GPU pod stays off a cordoned node");
    p.ntol = 2;
    snprintf(p.tol[1].key, sizeof(p.tol[1].key), "node.kubernetes.io/unschedulable");
    snprintf(p.tol[1].op, sizeof(p.tol[1].op), "Exists");
    snprintf(p.tol[1].effect, sizeof(p.tol[1].effect), "NoSchedule");
    cr_expect(gs_kube_tolerates(&p, &kn), "a pod tolerating the cordon may go there");
    struct gs_cluster c;
    gs_cluster_init(&c);
    int id = gs_cache_add_node(&c, &kn, NULL, NULL, 0);
    cr_expect(!c.nodes[id].unschedulable, "the cordon is the pods' tolerations' business");
    gs_cluster_release(&c);
    gs_kube_node_release(&kn);
    json_decref(o);
}

/* The agent's links (inventory version 2): 8 GPUs in NVLink pairs over two NUMA nodes, a PCIe
 * switch per pair. A multi-GPU pod gets whole pairs; without the links, the lowest indexes. */
Test(cache, the_inventory_links_give_multi_gpu_pods_whole_nvlink_pairs)
{
    char inv[4096];
    size_t off = (size_t)snprintf(inv, sizeof(inv), "{\"v\":2,\"gpus\":[");
    for (int i = 0; i < 8; i++)
        off += (size_t)snprintf(
            inv + off, sizeof(inv) - off,
            "%s{\"i\":%d,\"uuid\":\"GPU-%d\",\"model\":\"H100-80GB\",\"mem\":81559,\"numa\":%d,"
            "\"pci\":\"pci0000:%02x/0000:00:0%d.0/0000:1%d:00.0/0000:2%d:0%d.0/0000:3%d:00.0\","
            "\"nvlink\":{\"%d\":4}}",
            i ? "," : "", i, i, i / 4, i / 4 * 0x80, i / 2 + 1, i / 2, i / 2, i % 2, i, i ^ 1);
    snprintf(inv + off, sizeof(inv) - off, "]}");
    json_t *o = node_file("unknown-model.json");
    json_object_set_new(json_object_get(json_object_get(o, "metadata"), "annotations"),
                        GS_INVENTORY_ANNOTATION, json_string(inv));
    struct gs_kube_node kn;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, &kn, &err), 0, "%s", err.msg);
    json_decref(o);
    struct gs_cluster c;
    gs_cluster_init(&c);
    char note[256] = "", dev[64];
    int id = gs_cache_add_node(&c, &kn, NULL, note, sizeof(note));
    gs_kube_node_release(&kn);
    cr_assert_geq(id, 0);
    cr_expect_str_empty(note, "%s", note);
    cr_assert_eq(c.nodes[id].ngpus, 8);
    cr_expect_eq(c.gpus[c.nodes[id].gpu0 + 6].link.nvlink[7], 4);
    place(&c, gpu_req(1), dev, sizeof(dev));
    cr_expect_str_eq(dev, "gpu=0");
    place(&c, gpu_req(2), dev, sizeof(dev));
    cr_expect_str_eq(dev, "gpu=2,3", "a whole pair beside GPU 0");
    place(&c, gpu_req(4), dev, sizeof(dev));
    cr_expect_str_eq(dev, "gpu=4,5,6,7", "two whole pairs, not GPU 1 and three others");
    place(&c, gpu_req(1), dev, sizeof(dev));
    cr_expect_str_eq(dev, "gpu=1");
    gs_cluster_release(&c);
}
