/* agent/pods: which pod the kubelet admits. The device plugin API names no pod, so the tracker
 * takes, of the pods bound here whose recorded devices (gpusched.io/devices) ask what the
 * kubelet asks, the first bound (PodScheduled's time, then creation, then the list) not given
 * devices yet; the devices Allocate then gives are noted against it, and the next admission
 * resolves to the next pod. Pods from a pods file, GPUs from the fake backend. */
#include "agent/gpu.h"
#include "agent/pods.h"
#include "agent/sampler.h"
#include "base/error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char gpus_path[96], pods_path[96];
static struct gs_gpu_backend *b;
static struct gs_sampler *s;
static struct gs_pods *p;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* Two H100s: GPU 0 whole, GPU 1 in two 3g.40gb instances. */
static void setup(void)
{
    snprintf(gpus_path, sizeof(gpus_path), "/tmp/gs-test-pods-%d.gpus.json", (int)getpid());
    snprintf(pods_path, sizeof(pods_path), "/tmp/gs-test-pods-%d.pods.json", (int)getpid());
    write_file(gpus_path, "{\"gpus\": [{\"model\": \"H100-80GB\", \"uuid\": \"GPU-zero\"},"
                          " {\"model\": \"H100-80GB\", \"uuid\": \"GPU-one\", \"mig\": true,"
                          "  \"instances\": [{\"profile\": \"3g.40gb\", \"start\": 0},"
                          "                 {\"profile\": \"3g.40gb\", \"start\": 4}]}]}");
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_gpu_open_fake(gpus_path, &b, &err), 0, "%s", err.msg);
    struct gs_sampler_opts so = {0};
    s = gs_sampler_new(b, &so);
    gs_sampler_round(s, 0);
    struct gs_pods_opts po = {.pods_file = pods_path};
    p = gs_pods_new(&po, s, NULL);
    cr_assert(s && p);
}

static void teardown(void)
{
    gs_pods_free(p);
    gs_sampler_free(s);
    gs_gpu_close(b);
    unlink(gpus_path);
    unlink(pods_path);
}

/* A pod of the pods file: name, devices, when it was bound and created. */
static void pods(const char *items)
{
    char text[4096];
    snprintf(text, sizeof(text), "{\"items\": [%s]}", items);
    write_file(pods_path, text);
}

#define POD(name, devices, bound, created)                                                         \
    "{\"metadata\": {\"name\": \"" name "\", \"namespace\": \"ml\", \"uid\": \"uid-" name          \
    "\", \"creationTimestamp\": \"" created "\"}, \"status\": {\"phase\": \"Pending\", "           \
    "\"conditions\": [{\"type\": \"PodScheduled\", \"status\": \"True\", "                         \
    "\"lastTransitionTime\": \"" bound "\"}]}, \"devices\": \"" devices "\"}"

Test(pods, the_first_bound_pod_is_admitted_first_then_the_next, .init = setup, .fini = teardown)
{
    /* b was created first, but a was bound first */
    pods(POD("b", "mig=1:3g.40gb@0", "2026-01-01T10:00:05Z", "2026-01-01T09:00:00Z") "," POD(
        "a", "mig=1:3g.40gb@4", "2026-01-01T10:00:01Z", "2026-01-01T09:30:00Z"));
    char u[16][96];
    cr_assert_eq(gs_pods_pick(p, "nvidia.com/mig-3g.40gb", 1, u, 16), 1);
    cr_expect_str_eq(u[0], "MIG-one-gi2", "the first bound pod's slot (start 4)");
    gs_pods_allocated(p, "nvidia.com/mig-3g.40gb", 1, u, 1);
    cr_assert_eq(gs_pods_pick(p, "nvidia.com/mig-3g.40gb", 1, u, 16), 1);
    cr_expect_str_eq(u[0], "MIG-one-gi1", "then the next pod's (start 0)");
    gs_pods_allocated(p, "nvidia.com/mig-3g.40gb", 1, u, 1);
    cr_expect_eq(gs_pods_pick(p, "nvidia.com/mig-3g.40gb", 1, u, 16), 0, "a pod given twice");
}

Test(pods, a_batch_bound_in_one_second_is_admitted_in_creation_order, .init = setup,
     .fini = teardown)
{
    pods(POD("late", "mig=1:3g.40gb@0", "2026-01-01T10:00:00Z", "2026-01-01T09:00:09Z") "," POD(
        "early", "mig=1:3g.40gb@4", "2026-01-01T10:00:00Z", "2026-01-01T09:00:01Z"));
    char u[16][96];
    cr_assert_eq(gs_pods_pick(p, "nvidia.com/mig-3g.40gb", 1, u, 16), 1);
    cr_expect_str_eq(u[0], "MIG-one-gi2");
}

Test(pods, only_pods_asking_what_the_kubelet_asks_are_candidates, .init = setup, .fini = teardown)
{
    pods(POD("mig", "mig=1:3g.40gb@4", "2026-01-01T10:00:01Z", "2026-01-01T09:00:00Z") "," POD(
        "frac", "milli=0:250", "2026-01-01T10:00:02Z",
        "2026-01-01T09:00:00Z") "," POD("whole", "gpu=0", "2026-01-01T10:00:03Z",
                                        "2026-01-01T09:00:00Z"));
    char u[16][96];
    cr_assert_eq(gs_pods_pick(p, "gpusched.io/gpu-milli", 250, u, 16), 1);
    cr_expect_str_eq(u[0], "GPU-zero");
    cr_expect_eq(gs_pods_pick(p, "gpusched.io/gpu-milli", 300, u, 16), 0, "another share");
    cr_expect_eq(gs_pods_pick(p, "nvidia.com/mig-1g.10gb", 1, u, 16), 0, "another profile");
    cr_expect_eq(gs_pods_pick(p, "nvidia.com/gpu", 2, u, 16), 0, "another count");
}

/* A pod as the API gives it: its container's limits say what it asks. */
#define API_POD(name, devices, bound, res)                                                         \
    "{\"metadata\": {\"name\": \"" name "\", \"namespace\": \"ml\", \"uid\": \"u-" name            \
    "\", \"annotations\": {\"gpusched.io/devices\": \"" devices "\"}}, "                           \
    "\"spec\": {\"containers\": [{\"name\": \"c\", \"resources\": {\"limits\": {\"" res            \
    "\": \"1\"}}}]}, \"status\": {\"phase\": \"Pending\", \"conditions\": [{\"type\": "            \
    "\"PodScheduled\", \"lastTransitionTime\": \"" bound "\"}]}}"

Test(pods, a_pods_limits_say_which_resource_it_asks, .init = setup, .fini = teardown)
{
    /* migStrategy single would offer the slot as nvidia.com/gpu; this MIG pod asks mig-3g */
    pods(API_POD("m", "mig=1:3g.40gb@4", "2026-01-01T10:00:01Z",
                 "nvidia.com/mig-3g.40gb") "," API_POD("w", "gpu=0", "2026-01-01T10:00:02Z",
                                                       "nvidia.com/gpu"));
    char u[16][96];
    cr_assert_eq(gs_pods_pick(p, "nvidia.com/gpu", 1, u, 16), 1);
    cr_expect_str_eq(u[0], "GPU-zero", "the whole GPU, not the MIG pod's slot");
    cr_assert_eq(gs_pods_pick(p, "nvidia.com/mig-3g.40gb", 1, u, 16), 1);
    cr_expect_str_eq(u[0], "MIG-one-gi2");
}

Test(pods, the_kubelet_giving_other_devices_still_moves_on, .init = setup, .fini = teardown)
{
    pods(POD("x", "mig=1:3g.40gb@0", "2026-01-01T10:00:01Z", "2026-01-01T09:00:00Z") "," POD(
        "y", "mig=1:3g.40gb@4", "2026-01-01T10:00:02Z", "2026-01-01T09:00:00Z"));
    /* the kubelet gave y's slot: noted against y (whose devices they are), x still waits */
    char u[16][96] = {"MIG-one-gi2"};
    gs_pods_allocated(p, "nvidia.com/mig-3g.40gb", 1, u, 1);
    cr_assert_eq(gs_pods_pick(p, "nvidia.com/mig-3g.40gb", 1, u, 16), 1);
    cr_expect_str_eq(u[0], "MIG-one-gi1");
}
