/* test_cache.c - Node objects as the API server serves them on a GPU Operator cluster (dozens
 * of NFD and GFD labels, MIG layouts, models the catalog lacks, allocatable that disagrees
 * with the labels) through the reader (formats/kubeobj) and the cache (sched/cache) into the
 * engine's cluster; and the label set they are kept in (core/labels). */
#include "base/error.h"
#include "core/labels.h"
#include "fixtures.h"
#include "formats/kubeobj.h"
#include "sched/cache.h"

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
    int id = gs_cache_add_node(&c, &kn, note, sizeof(note));
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
    int id = gs_cache_add_node(&c, &kn, note, sizeof(note));
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
    int id = gs_cache_add_node(&c, &kn, note, sizeof(note));
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
        cr_expect_geq(gs_cache_add_node(&c, &kn, NULL, 0), 0, "%s", files[i]);
        gs_kube_node_release(&kn);
    }
    cr_expect_eq(c.nnodes, 5);
    gs_cluster_release(&c);
}
