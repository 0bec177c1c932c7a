/* agent/deviceplugin: the kubelet's calls answered without gRPC (gs__dp_answer), from packed
 * protobuf requests as the kubelet sends them — preferred allocations pack and honour the
 * scheduler's choice for the pod being admitted, Allocate names each GPU once, MPS replicas and
 * fractions are clients of their GPU's live daemon with the limits of their share (never a
 * dead pipe), and every malformed request (too many IDs, an ID twice, sizes out of range,
 * unknown devices, too many containers, bytes that do not decode, a fraction of a whole GPU or
 * more) gets INVALID_ARGUMENT with its reason instead of running past an array. */
#include "agent/deviceplugin.h"

#include "deviceplugin.pb-c.h"

#include <criterion/criterion.h>
#include <grpc/status.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL 400

static char pool_buf[POOL][32];
static char *pool[POOL]; /* "GPU-<g>::<r>": replica r of GPU g, 8 replicas a GPU */

static void fill_pool(void)
{
    for (int i = 0; i < POOL; i++) {
        snprintf(pool_buf[i], sizeof(pool_buf[i]), "GPU-%d::%d", i / 8, i % 8);
        pool[i] = pool_buf[i];
    }
}

/* A plugin advertising the first n pool IDs (n <= GS_DP_MAX_DEVS). */
typedef int (*pick_fn)(void *user, const char *resource, int size, char uuids[][96], int cap);

static struct gs_dp_plugin *plugin(int n, pick_fn pick)
{
    fill_pool();
    struct gs_dp_device d[GS_DP_MAX_DEVS];
    memset(d, 0, sizeof(d));
    for (int i = 0; i < n; i++) {
        snprintf(d[i].id, sizeof(d[i].id), "%s", pool[i]);
        snprintf(d[i].uuid, sizeof(d[i].uuid), "GPU-%d", i / 8);
        d[i].healthy = i != 1;
        d[i].gpu = i / 8;
    }
    struct gs_dp_hooks h = {.pick = pick};
    struct gs_dp_plugin *p = gs__dp_new("nvidia.com/gpu", d, n, &h);
    cr_assert_not_null(p);
    return p;
}

static int call(struct gs_dp_plugin *p, enum gs_dp_call k, const ProtobufCMessage *m, uint8_t **out,
                size_t *out_len, char *why, size_t why_size)
{
    size_t len = m ? protobuf_c_message_get_packed_size(m) : 0;
    uint8_t *b = malloc(len ? len : 1);
    cr_assert_not_null(b);
    if (m)
        protobuf_c_message_pack(m, b);
    int code = gs__dp_answer(p, k, b, len, out, out_len, why, why_size);
    free(b);
    if (code != GRPC_STATUS_OK)
        cr_expect_null(*out);
    return code;
}

/* One GetPreferredAllocation call with ncont copies of one container request. */
static int preferred(struct gs_dp_plugin *p, char **avail, size_t na, char **must, size_t nm,
                     int32_t size, size_t ncont, V1beta1__PreferredAllocationResponse **resp,
                     char *why, size_t why_size)
{
    V1beta1__ContainerPreferredAllocationRequest q =
        V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
    q.n_available_deviceids = na;
    q.available_deviceids = avail;
    q.n_must_include_deviceids = nm;
    q.must_include_deviceids = must;
    q.allocation_size = size;
    V1beta1__ContainerPreferredAllocationRequest *qs[80];
    cr_assert_leq(ncont, 80);
    for (size_t c = 0; c < ncont; c++)
        qs[c] = &q;
    V1beta1__PreferredAllocationRequest r = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
    r.n_container_requests = ncont;
    r.container_requests = qs;
    uint8_t *out = NULL;
    size_t n = 0;
    int code = call(p, GS_DP_PREFERRED, &r.base, &out, &n, why, why_size);
    *resp = NULL;
    if (code == GRPC_STATUS_OK) {
        *resp = v1beta1__preferred_allocation_response__unpack(NULL, n, out);
        cr_assert_not_null(*resp);
    }
    free(out);
    return code;
}

static int allocate(struct gs_dp_plugin *p, char **ids, size_t n, size_t ncont,
                    V1beta1__AllocateResponse **resp, char *why, size_t why_size)
{
    V1beta1__ContainerAllocateRequest q = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
    q.n_devices_ids = n;
    q.devices_ids = ids;
    V1beta1__ContainerAllocateRequest *qs[80];
    cr_assert_leq(ncont, 80);
    for (size_t c = 0; c < ncont; c++)
        qs[c] = &q;
    V1beta1__AllocateRequest r = V1BETA1__ALLOCATE_REQUEST__INIT;
    r.n_container_requests = ncont;
    r.container_requests = qs;
    uint8_t *out = NULL;
    size_t len = 0;
    int code = call(p, GS_DP_ALLOCATE, &r.base, &out, &len, why, why_size);
    *resp = NULL;
    if (code == GRPC_STATUS_OK) {
        *resp = v1beta1__allocate_response__unpack(NULL, len, out);
        cr_assert_not_null(*resp);
    }
    free(out);
    return code;
}

static const char *env(const V1beta1__ContainerAllocateResponse *c, const char *key)
{
    for (size_t i = 0; i < c->n_envs; i++)
        if (strcmp(c->envs[i]->key, key) == 0)
            return c->envs[i]->value;
    return NULL;
}

Test(deviceplugin, replicas_are_packed_onto_the_gpu_that_offers_the_most)
{
    struct gs_dp_plugin *p = plugin(32, NULL);
    /* GPU 0 offers 2 replicas, GPU 1 offers 3: both go on GPU 1 */
    char *avail[] = {pool[0], pool[1], pool[8], pool[9], pool[10]};
    V1beta1__PreferredAllocationResponse *r;
    char why[256];
    cr_assert_eq(preferred(p, avail, 5, NULL, 0, 2, 1, &r, why, sizeof(why)), GRPC_STATUS_OK, "%s",
                 why);
    cr_assert_eq(r->n_container_responses, 1);
    cr_assert_eq(r->container_responses[0]->n_deviceids, 2);
    cr_expect_str_eq(r->container_responses[0]->deviceids[0], pool[8]);
    cr_expect_str_eq(r->container_responses[0]->deviceids[1], pool[9]);
    v1beta1__preferred_allocation_response__free_unpacked(r, NULL);
    gs__dp_free(p);
}

/* the scheduler recorded GPU 3 for the pod being admitted */
static int pick_gpu3(void *user, const char *resource, int size, char uuids[][96], int cap)
{
    (void)user;
    (void)resource;
    (void)size;
    cr_assert_geq(cap, 1);
    snprintf(uuids[0], 96, "GPU-3");
    return 1;
}

Test(deviceplugin, must_include_first_then_the_schedulers_choice)
{
    struct gs_dp_plugin *p = plugin(32, pick_gpu3);
    char *avail[] = {pool[0], pool[8], pool[9], pool[10], pool[29]};
    char *must[] = {pool[0]};
    V1beta1__PreferredAllocationResponse *r;
    char why[256];
    cr_assert_eq(preferred(p, avail, 5, must, 1, 3, 1, &r, why, sizeof(why)), GRPC_STATUS_OK, "%s",
                 why);
    const V1beta1__ContainerPreferredAllocationResponse *c = r->container_responses[0];
    cr_assert_eq(c->n_deviceids, 3);
    cr_expect_str_eq(c->deviceids[0], pool[0]);
    cr_expect_str_eq(c->deviceids[1], "GPU-3::5");
    cr_expect_str_eq(c->deviceids[2], pool[8]);
    v1beta1__preferred_allocation_response__free_unpacked(r, NULL);
    gs__dp_free(p);
}

Test(deviceplugin, unknown_available_devices_are_never_preferred)
{
    struct gs_dp_plugin *p = plugin(8, NULL);
    char *avail[] = {pool[100], pool[2], pool[101]};
    V1beta1__PreferredAllocationResponse *r;
    char why[256];
    cr_assert_eq(preferred(p, avail, 3, NULL, 0, 3, 1, &r, why, sizeof(why)), GRPC_STATUS_OK, "%s",
                 why);
    const V1beta1__ContainerPreferredAllocationResponse *c = r->container_responses[0];
    cr_assert_eq(c->n_deviceids, 1, "the answer holds %zu IDs, want 1", c->n_deviceids);
    cr_expect_str_eq(c->deviceids[0], pool[2]);
    v1beta1__preferred_allocation_response__free_unpacked(r, NULL);
    gs__dp_free(p);
}

/* Malformed GetPreferredAllocation requests: ncont containers, each with the available IDs
 * pool[0..navail) (the last one a copy of the first when dup_avail), must-include
 * pool[must_from..+nmust) (the last a copy of the first when dup_must), and size. */
static const struct {
    const char *name;
    int navail, nmust, must_from;
    bool dup_avail, dup_must;
    int32_t size;
    int ncont;
    const char *why;
} bad_preferred[] = {
    {"an allocation of more than the available", 3, 200, 0, false, false, 200, 1,
     "allocation size 200: expected 1 to 3"},
    {"a huge size", 150, 0, 0, false, false, INT32_MAX, 1, "allocation size 2147483647"},
    {"an allocation larger than the available devices", 3, 0, 0, false, false, 1000, 1,
     "allocation size 1000: expected 1 to 3"},
    {"an allocation of nothing", 3, 0, 0, false, false, 0, 1, "allocation size 0"},
    {"a negative allocation", 3, 0, 0, false, false, -5, 1, "allocation size -5"},
    {"more must-include devices than the allocation", 4, 3, 0, false, false, 2, 1,
     "3 must-include devices for an allocation of 2"},
    {"a must-include device that is not available", 4, 1, 10, false, false, 2, 1,
     "must-include device 'GPU-1::2' is not available"},
    {"an available ID twice", 4, 0, 0, true, false, 2, 1,
     "available device ID 'GPU-0::0' appears twice"},
    {"a must-include ID twice", 4, 2, 0, false, true, 2, 1,
     "must-include device ID 'GPU-0::0' appears twice"},
    {"too many containers", 2, 0, 0, false, false, 1, 65, "65 container requests"},
};

Test(deviceplugin, malformed_preferred_allocations_are_refused_with_the_reason)
{
    struct gs_dp_plugin *p = plugin(GS_DP_MAX_DEVS, NULL);
    for (size_t t = 0; t < sizeof(bad_preferred) / sizeof(bad_preferred[0]); t++) {
        char *avail[POOL], *must[POOL];
        memcpy(avail, pool, sizeof(avail));
        memcpy(must, pool + bad_preferred[t].must_from,
               sizeof(char *) * (size_t)bad_preferred[t].nmust);
        if (bad_preferred[t].dup_avail)
            avail[bad_preferred[t].navail - 1] = avail[0];
        if (bad_preferred[t].dup_must)
            must[bad_preferred[t].nmust - 1] = must[0];
        V1beta1__PreferredAllocationResponse *r;
        char why[256] = "";
        int code = preferred(p, avail, (size_t)bad_preferred[t].navail, must,
                             (size_t)bad_preferred[t].nmust, bad_preferred[t].size,
                             (size_t)bad_preferred[t].ncont, &r, why, sizeof(why));
        cr_expect_eq(code, GRPC_STATUS_INVALID_ARGUMENT, "%s: status %d, want %d (%s)",
                     bad_preferred[t].name, code, GRPC_STATUS_INVALID_ARGUMENT, why);
        cr_expect(strstr(why, bad_preferred[t].why) != NULL, "%s: '%s' does not say '%s'",
                  bad_preferred[t].name, why, bad_preferred[t].why);
        if (r)
            v1beta1__preferred_allocation_response__free_unpacked(r, NULL);
    }
    gs__dp_free(p);
}

Test(deviceplugin, allocate_names_each_gpu_once_and_every_one)
{
    /* 128 replicas of 16 GPUs with long (MIG-like) UUIDs: the list is never cut short */
    fill_pool();
    struct gs_dp_device d[GS_DP_MAX_DEVS];
    memset(d, 0, sizeof(d));
    for (int i = 0; i < GS_DP_MAX_DEVS; i++) {
        snprintf(d[i].id, sizeof(d[i].id), "%s", pool[i]);
        snprintf(d[i].uuid, sizeof(d[i].uuid), "MIG-%08d-aaaa-bbbb-cccc-%012d-%d", i, i, i % 3);
        d[i].healthy = true;
        d[i].gpu = i / 8;
    }
    struct gs_dp_plugin *p = gs__dp_new("nvidia.com/gpu", d, GS_DP_MAX_DEVS, NULL);
    cr_assert_not_null(p);
    V1beta1__AllocateResponse *r;
    char why[256];
    cr_assert_eq(allocate(p, pool, GS_DP_MAX_DEVS, 1, &r, why, sizeof(why)), GRPC_STATUS_OK, "%s",
                 why);
    const char *vis = env(r->container_responses[0], "NVIDIA_VISIBLE_DEVICES");
    cr_assert_not_null(vis);
    for (int i = 0; i < GS_DP_MAX_DEVS; i++)
        cr_expect(strstr(vis, d[i].uuid) != NULL, "%s is missing from a list of %zu bytes",
                  d[i].uuid, strlen(vis));
    v1beta1__allocate_response__free_unpacked(r, NULL);
    gs__dp_free(p);

    /* replicas of one GPU: the GPU once, and a UUID that is a prefix of another is no match */
    memset(d, 0, sizeof(d));
    const char *uuids[] = {"GPU-1", "GPU-1", "GPU-10"};
    for (int i = 0; i < 3; i++) {
        snprintf(d[i].id, sizeof(d[i].id), "%s", pool[i]);
        snprintf(d[i].uuid, sizeof(d[i].uuid), "%s", uuids[i]);
    }
    p = gs__dp_new("nvidia.com/gpu", d, 3, NULL);
    char *ids[] = {pool[2], pool[0], pool[1]};
    cr_assert_eq(allocate(p, ids, 3, 1, &r, why, sizeof(why)), GRPC_STATUS_OK, "%s", why);
    cr_expect_str_eq(env(r->container_responses[0], "NVIDIA_VISIBLE_DEVICES"), "GPU-10,GPU-1");
    v1beta1__allocate_response__free_unpacked(r, NULL);
    gs__dp_free(p);
}

Test(deviceplugin, malformed_allocations_are_refused_with_the_reason)
{
    struct gs_dp_plugin *p = plugin(16, NULL);
    V1beta1__AllocateResponse *r;
    char why[256];
    char *unknown[] = {pool[0], pool[300]};
    cr_expect_eq(allocate(p, unknown, 2, 1, &r, why, sizeof(why)), GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(why, "unknown device 'GPU-37::4'") != NULL, "%s", why);
    char *twice[] = {pool[3], pool[4], pool[3]};
    cr_expect_eq(allocate(p, twice, 3, 1, &r, why, sizeof(why)), GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(why, "'GPU-0::3' appears twice") != NULL, "%s", why);
    static char big_buf[GS_DP_MAX_IDS + 1][24];
    static char *big[GS_DP_MAX_IDS + 1];
    for (int i = 0; i <= GS_DP_MAX_IDS; i++) {
        snprintf(big_buf[i], sizeof(big_buf[i]), "GPU-0::m%d", i);
        big[i] = big_buf[i];
    }
    cr_expect_eq(allocate(p, big, GS_DP_MAX_IDS + 1, 1, &r, why, sizeof(why)),
                 GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(why, "16129 requested device IDs") != NULL, "%s", why);
    cr_expect_eq(allocate(p, pool, 0, 1, &r, why, sizeof(why)), GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(why, "no device IDs") != NULL, "%s", why);
    cr_expect_eq(allocate(p, pool, 1, 65, &r, why, sizeof(why)), GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(why, "65 container requests") != NULL, "%s", why);
    gs__dp_free(p);
}

Test(deviceplugin, bytes_that_do_not_decode_are_refused)
{
    struct gs_dp_plugin *p = plugin(8, NULL);
    const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
    uint8_t *out = NULL;
    size_t n = 0;
    char why[256];
    cr_expect_eq(gs__dp_answer(p, GS_DP_PREFERRED, junk, sizeof(junk), &out, &n, why, sizeof(why)),
                 GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(why, "does not decode") != NULL, "%s", why);
    cr_expect_eq(gs__dp_answer(p, GS_DP_ALLOCATE, junk, sizeof(junk), &out, &n, why, sizeof(why)),
                 GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect_null(out);
    gs__dp_free(p);
}

Test(deviceplugin, list_and_options_answer_the_devices)
{
    struct gs_dp_plugin *p = plugin(4, NULL);
    uint8_t *out = NULL;
    size_t n = 0;
    char why[256];
    cr_assert_eq(call(p, GS_DP_LIST, NULL, &out, &n, why, sizeof(why)), GRPC_STATUS_OK);
    V1beta1__ListAndWatchResponse *l = v1beta1__list_and_watch_response__unpack(NULL, n, out);
    free(out);
    cr_assert_not_null(l);
    cr_assert_eq(l->n_devices, 4);
    cr_expect_str_eq(l->devices[1]->id, pool[1]);
    cr_expect_str_eq(l->devices[1]->health, "Unhealthy");
    cr_expect_str_eq(l->devices[2]->health, "Healthy");
    v1beta1__list_and_watch_response__free_unpacked(l, NULL);
    cr_assert_eq(call(p, GS_DP_OPTIONS, NULL, &out, &n, why, sizeof(why)), GRPC_STATUS_OK);
    V1beta1__DevicePluginOptions *o = v1beta1__device_plugin_options__unpack(NULL, n, out);
    free(out);
    cr_assert_not_null(o);
    cr_expect(o->get_preferred_allocation_available);
    v1beta1__device_plugin_options__free_unpacked(o, NULL);
    gs__dp_free(p);
}

/* Valid requests with bytes flipped at random (seeded): every answer is an answer or a
 * refusal, never a crash (ASan watches the arrays). */
Test(deviceplugin, mangled_requests_get_an_answer_or_a_refusal)
{
    struct gs_dp_plugin *p = plugin(64, pick_gpu3);
    V1beta1__ContainerPreferredAllocationRequest q =
        V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
    q.n_available_deviceids = 40;
    q.available_deviceids = pool;
    q.n_must_include_deviceids = 2;
    q.must_include_deviceids = pool + 5;
    q.allocation_size = 6;
    V1beta1__ContainerPreferredAllocationRequest *qs[] = {&q, &q};
    V1beta1__PreferredAllocationRequest r = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
    r.n_container_requests = 2;
    r.container_requests = qs;
    size_t len = protobuf_c_message_get_packed_size(&r.base);
    uint8_t *good = malloc(len), *bad = malloc(len);
    cr_assert(good && bad);
    protobuf_c_message_pack(&r.base, good);
    uint64_t seed = 42;
    int answered = 0, refused = 0;
    for (int k = 0; k < 3000; k++) {
        memcpy(bad, good, len);
        for (int f = 0; f < 1 + k % 4; f++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            bad[(seed >> 33) % len] = (uint8_t)(seed >> 17);
        }
        for (int call_kind = GS_DP_PREFERRED; call_kind <= GS_DP_ALLOCATE; call_kind++) {
            uint8_t *out = NULL;
            size_t n = 0;
            char why[256];
            int code =
                gs__dp_answer(p, (enum gs_dp_call)call_kind, bad, len, &out, &n, why, sizeof(why));
            cr_assert(code == GRPC_STATUS_OK || code == GRPC_STATUS_INVALID_ARGUMENT,
                      "seed step %d: status %d (%s)", k, code, why);
            if (code == GRPC_STATUS_OK)
                answered++;
            else
                refused++;
            free(out);
        }
    }
    cr_expect_gt(answered, 0);
    cr_expect_gt(refused, 0);
    free(good);
    free(bad);
    gs__dp_free(p);
}

/* ---- MPS clients: replicas and fractions ---- */

static int live_calls;
/* GPU 1's daemon runs; GPU 0's does not */
static int live_gpu1(void *user, int gpu, char *pipe, char *shm, size_t size)
{
    (void)user;
    live_calls++;
    if (gpu != 1)
        return -1;
    snprintf(pipe, size, "/run/nvidia/mps/GPU-1/pipe");
    snprintf(shm, size, "/run/nvidia/mps/shm");
    return 0;
}

static char given[4][96];
static int ngiven, given_size;
static void note_allocated(void *user, const char *resource, int size, char uuids[][96], int n)
{
    (void)user;
    (void)resource;
    given_size = size;
    ngiven = n;
    for (int k = 0; k < n && k < 4; k++)
        snprintf(given[k], sizeof(given[k]), "%s", uuids[k]);
}

/* GPU 0 and GPU 1 (80 GiB each) as gpusched.io/gpu-milli: 1000 IDs each */
static struct gs_dp_plugin *fractions(int (*pick)(void *, const char *, int, char[][96], int))
{
    struct gs_dp_device d[2];
    memset(d, 0, sizeof(d));
    for (int i = 0; i < 2; i++) {
        snprintf(d[i].id, sizeof(d[i].id), "GPU-%d", i);
        snprintf(d[i].uuid, sizeof(d[i].uuid), "GPU-%d", i);
        d[i].healthy = true;
        d[i].milli = true;
        d[i].gpu = i;
        d[i].mem_mib = 81920;
    }
    struct gs_dp_hooks h = {.sharing = GS_DP_FRACTION,
                            .pick = pick,
                            .allocated = note_allocated,
                            .mps_live = live_gpu1};
    struct gs_dp_plugin *p = gs__dp_new("gpusched.io/gpu-milli", d, 2, &h);
    cr_assert_not_null(p);
    return p;
}

static char milli_buf[2][1000][24];
static char *milli_ids[2][1000];
static void fill_milli(void)
{
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < 1000; k++) {
            snprintf(milli_buf[g][k], sizeof(milli_buf[g][k]), "GPU-%d::m%d", g, k);
            milli_ids[g][k] = milli_buf[g][k];
        }
}

Test(deviceplugin, a_gpus_thousandths_are_listed_as_1000_ids)
{
    struct gs_dp_plugin *p = fractions(NULL);
    uint8_t *out = NULL;
    size_t n = 0;
    char why[256];
    cr_assert_eq(call(p, GS_DP_LIST, NULL, &out, &n, why, sizeof(why)), GRPC_STATUS_OK);
    V1beta1__ListAndWatchResponse *l = v1beta1__list_and_watch_response__unpack(NULL, n, out);
    free(out);
    cr_assert_not_null(l);
    cr_assert_eq(l->n_devices, 2000, "%zu IDs listed, want 2000", l->n_devices);
    cr_expect_str_eq(l->devices[0]->id, "GPU-0::m0");
    cr_expect_str_eq(l->devices[1999]->id, "GPU-1::m999");
    v1beta1__list_and_watch_response__free_unpacked(l, NULL);
    gs__dp_free(p);
}

Test(deviceplugin, a_fraction_is_an_mps_client_with_the_limits_of_its_share)
{
    struct gs_dp_plugin *p = fractions(NULL);
    fill_milli();
    V1beta1__AllocateResponse *r;
    char why[256];
    ngiven = 0;
    cr_assert_eq(allocate(p, milli_ids[1], 250, 1, &r, why, sizeof(why)), GRPC_STATUS_OK, "%s",
                 why);
    const V1beta1__ContainerAllocateResponse *c = r->container_responses[0];
    cr_expect_str_eq(env(c, "NVIDIA_VISIBLE_DEVICES"), "GPU-1");
    cr_expect_str_eq(env(c, "CUDA_MPS_PIPE_DIRECTORY"), "/run/nvidia/mps/GPU-1/pipe");
    cr_expect_str_eq(env(c, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
    /* a quarter of 80 GiB, by device index (the container's one GPU is 0) */
    cr_expect_str_eq(env(c, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=20480M");
    cr_assert_eq(c->n_mounts, 2);
    cr_expect_str_eq(c->mounts[0]->host_path, "/run/nvidia/mps/GPU-1/pipe");
    cr_expect_str_eq(c->mounts[0]->container_path, "/run/nvidia/mps/GPU-1/pipe");
    cr_expect_str_eq(c->mounts[1]->host_path, "/run/nvidia/mps/shm");
    cr_expect_str_eq(c->mounts[1]->container_path, "/dev/shm");
    v1beta1__allocate_response__free_unpacked(r, NULL);
    cr_expect_eq(ngiven, 1);
    cr_expect_eq(given_size, 250);
    cr_expect_str_eq(given[0], "GPU-1");
    gs__dp_free(p);
}

Test(deviceplugin, no_container_is_given_a_dead_pipe)
{
    struct gs_dp_plugin *p = fractions(NULL);
    fill_milli();
    V1beta1__AllocateResponse *r;
    char why[256];
    ngiven = 0;
    cr_expect_eq(allocate(p, milli_ids[0], 100, 1, &r, why, sizeof(why)),
                 GRPC_STATUS_FAILED_PRECONDITION);
    cr_expect(strstr(why, "GPU 0 (GPU-0): its MPS control daemon is not running") != NULL, "%s",
              why);
    cr_expect_eq(ngiven, 0, "a refused allocation was noted as given");
    gs__dp_free(p);
}

Test(deviceplugin, a_fraction_of_a_whole_gpu_or_of_two_gpus_is_refused)
{
    struct gs_dp_plugin *p = fractions(NULL);
    fill_milli();
    V1beta1__AllocateResponse *r;
    char why[256];
    cr_expect_eq(allocate(p, milli_ids[1], 1000, 1, &r, why, sizeof(why)),
                 GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(why, "1000 thousandths; a fraction is 1..999 of one GPU") != NULL, "%s", why);
    char *two[] = {milli_ids[0][0], milli_ids[1][0]};
    cr_expect_eq(allocate(p, two, 2, 1, &r, why, sizeof(why)), GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(why, "thousandths of 2 GPUs") != NULL, "%s", why);
    char *bad[] = {"GPU-1::m1000", "GPU-1::m01", "GPU-1::m-1", "GPU-1::m"};
    for (int k = 0; k < 4; k++) {
        cr_expect_eq(allocate(p, bad + k, 1, 1, &r, why, sizeof(why)), GRPC_STATUS_INVALID_ARGUMENT,
                     "%s", bad[k]);
        cr_expect(strstr(why, "unknown device") != NULL, "%s: %s", bad[k], why);
    }
    gs__dp_free(p);
}

static int pick_gpu1(void *user, const char *resource, int size, char uuids[][96], int cap)
{
    (void)user;
    cr_expect_str_eq(resource, "gpusched.io/gpu-milli");
    cr_expect_eq(size, 300);
    snprintf(uuids[0], 96, "GPU-1");
    return cap > 0;
}

Test(deviceplugin, the_pod_being_admitted_gets_the_gpu_the_scheduler_recorded)
{
    struct gs_dp_plugin *p = fractions(pick_gpu1);
    fill_milli();
    /* GPU 0 offers more thousandths, but the scheduler placed the pod on GPU 1 */
    static char *avail[1800];
    for (int k = 0; k < 1000; k++)
        avail[k] = milli_ids[0][k];
    for (int k = 0; k < 800; k++)
        avail[1000 + k] = milli_ids[1][200 + k];
    V1beta1__PreferredAllocationResponse *r;
    char why[256];
    cr_assert_eq(preferred(p, avail, 1800, NULL, 0, 300, 1, &r, why, sizeof(why)), GRPC_STATUS_OK,
                 "%s", why);
    const V1beta1__ContainerPreferredAllocationResponse *c = r->container_responses[0];
    cr_assert_eq(c->n_deviceids, 300);
    for (size_t k = 0; k < c->n_deviceids; k++)
        cr_expect(strncmp(c->deviceids[k], "GPU-1::m", 8) == 0, "%s is not GPU 1's",
                  c->deviceids[k]);
    v1beta1__preferred_allocation_response__free_unpacked(r, NULL);
    gs__dp_free(p);
}

Test(deviceplugin, mps_replicas_are_clients_of_one_gpus_daemon)
{
    struct gs_dp_device d[4];
    memset(d, 0, sizeof(d));
    for (int i = 0; i < 4; i++) {
        snprintf(d[i].id, sizeof(d[i].id), "GPU-%d::%d", i / 2, i % 2);
        snprintf(d[i].uuid, sizeof(d[i].uuid), "GPU-%d", i / 2);
        d[i].healthy = true;
        d[i].gpu = i / 2;
        d[i].mem_mib = 16384;
    }
    struct gs_dp_hooks h = {.sharing = GS_DP_MPS, .replicas = 4, .mps_live = live_gpu1};
    struct gs_dp_plugin *p = gs__dp_new("nvidia.com/gpu", d, 4, &h);
    V1beta1__AllocateResponse *r;
    char why[256];
    char *one[] = {d[2].id};
    cr_assert_eq(allocate(p, one, 1, 1, &r, why, sizeof(why)), GRPC_STATUS_OK, "%s", why);
    const V1beta1__ContainerAllocateResponse *c = r->container_responses[0];
    cr_expect_str_eq(env(c, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
    cr_expect_str_eq(env(c, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=4096M");
    cr_expect_str_eq(env(c, "CUDA_MPS_PIPE_DIRECTORY"), "/run/nvidia/mps/GPU-1/pipe");
    v1beta1__allocate_response__free_unpacked(r, NULL);
    char *two[] = {d[0].id, d[2].id};
    cr_expect_eq(allocate(p, two, 2, 1, &r, why, sizeof(why)), GRPC_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(why, "replicas of 2 GPUs") != NULL, "%s", why);
    char *dead[] = {d[0].id};
    cr_expect_eq(allocate(p, dead, 1, 1, &r, why, sizeof(why)), GRPC_STATUS_FAILED_PRECONDITION);
    gs__dp_free(p);
}
