/* deviceplugin.c - the kubelet device plugin (see deviceplugin.h): the answers of the
 * DevicePlugin service, served by the agent's one gRPC server (grpcserver.c), which also
 * registers the plugin with the kubelet and registers it again after a kubelet restart.
 *
 * The answers know nothing of gRPC: gs__dp_answer takes the request's bytes and gives the
 * answer's, so tests call it directly. Every request is checked before anything is sized from
 * it: ID lists are bounded by what a plugin can advertise and hold each ID once, an allocation
 * size lies between 1 and the available devices, must-include devices are among them; the
 * output arrays are then sized from the checked request. The device list, its version and the
 * MPS settings are under the plugin's lock (gs_dp_update from the agent's loop, answers from
 * the server's thread). */
#include "deviceplugin.h"

#include "../base/buf.h"
#include "../base/log.h"
#include "deviceplugin.pb-c.h"
#include "grpcserver.h"
#include "grpcunary.h"

#include <grpc/status.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_dp_plugin {
    char resource[128], socket[128], sock_path[400], kubelet[400];
    pthread_mutex_t mu;
    struct gs_dp_device devs[GS_DP_MAX_DEVS];
    int ndevs;
    uint64_t version;
    struct gs_dp_mps mps;
    gs_dp_pick_fn pick;
    void *pick_user;
    struct gs_grpc_service svc; /* the server's table points here */
    struct gs_grpcd *server;
};

/* ---------- answers: request bytes in, answer bytes out, no gRPC ---------- */

static int answer_list(struct gs_dp_plugin *p, uint8_t **out, size_t *len, char *why,
                       size_t why_size)
{
    V1beta1__Device d[GS_DP_MAX_DEVS];
    V1beta1__Device *dp[GS_DP_MAX_DEVS];
    pthread_mutex_lock(&p->mu);
    int n = p->ndevs; /* at most GS_DP_MAX_DEVS: gs_dp_update keeps it so */
    for (int i = 0; i < n; i++) {
        v1beta1__device__init(&d[i]);
        d[i].id = p->devs[i].id;
        d[i].health = p->devs[i].healthy ? "Healthy" : "Unhealthy";
        dp[i] = &d[i];
    }
    V1beta1__ListAndWatchResponse r = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    r.n_devices = (size_t)n;
    r.devices = dp;
    int code = gs_grpc_pack(&r.base, out, len, why, why_size);
    pthread_mutex_unlock(&p->mu);
    return code;
}

static const struct gs_dp_device *find_dev(struct gs_dp_plugin *p, const char *id)
{
    for (int i = 0; i < p->ndevs; i++)
        if (strcmp(p->devs[i].id, id) == 0)
            return &p->devs[i];
    return NULL;
}

/* Index of id among ids[0..n), or -1. */
static int index_of(char *const *ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0)
            return (int)i;
    return -1;
}

/* A list of device IDs from a request: at most GS_DP_MAX_DEVS (a plugin advertises no more),
 * each once. */
static int check_ids(size_t c, const char *what, char *const *ids, size_t n, char *why,
                     size_t why_size)
{
    if (n > GS_DP_MAX_DEVS)
        return gs_grpc_invalid(
            why, why_size, "container %zu: %zu %s device IDs, and a plugin advertises at most %d",
            c, n, what, GS_DP_MAX_DEVS);
    for (size_t i = 0; i < n; i++)
        if (index_of(ids, i, ids[i]) >= 0)
            return gs_grpc_invalid(why, why_size,
                                   "container %zu: %s device ID '%.100s' appears twice", c, what,
                                   ids[i]);
    return GRPC_STATUS_OK;
}

static int check_containers(size_t n, char *why, size_t why_size)
{
    if (n > GS_DP_MAX_CONTAINERS)
        return gs_grpc_invalid(why, why_size, "%zu container requests: at most %d in one call", n,
                               GS_DP_MAX_CONTAINERS);
    return GRPC_STATUS_OK;
}

static int check_preferred(const V1beta1__ContainerPreferredAllocationRequest *q, size_t c,
                           char *why, size_t why_size)
{
    size_t na = q->n_available_deviceids, nm = q->n_must_include_deviceids;
    int code = check_ids(c, "available", q->available_deviceids, na, why, why_size);
    if (code == GRPC_STATUS_OK)
        code = check_ids(c, "must-include", q->must_include_deviceids, nm, why, why_size);
    if (code != GRPC_STATUS_OK)
        return code;
    if (q->allocation_size < 1 || (size_t)q->allocation_size > na)
        return gs_grpc_invalid(
            why, why_size,
            "container %zu: allocation size %d: expected 1 to %zu (the available "
            "devices)",
            c, (int)q->allocation_size, na);
    if (nm > (size_t)q->allocation_size)
        return gs_grpc_invalid(why, why_size,
                               "container %zu: %zu must-include devices for an allocation of %d", c,
                               nm, (int)q->allocation_size);
    for (size_t k = 0; k < nm; k++)
        if (index_of(q->available_deviceids, na, q->must_include_deviceids[k]) < 0)
            return gs_grpc_invalid(why, why_size,
                                   "container %zu: must-include device '%.100s' is not available",
                                   c, q->must_include_deviceids[k]);
    return GRPC_STATUS_OK;
}

/* The preferred devices of one checked container request, into out (room for
 * allocation_size): the must-include ones, then the scheduler's choice for a pod waiting
 * here, then the rest packed onto the GPU that offers the most, in order, before the next GPU.
 * IDs this plugin does not advertise are never preferred (the kubelet fills in). Returns how
 * many. */
static size_t prefer(struct gs_dp_plugin *p, const V1beta1__ContainerPreferredAllocationRequest *q,
                     char **out)
{
    size_t want = (size_t)q->allocation_size, na = q->n_available_deviceids, n = 0;
    char *const *av = q->available_deviceids;
    bool taken[GS_DP_MAX_DEVS] = {false};
    int gpu[GS_DP_MAX_DEVS], left[GS_DP_MAX_DEVS] = {0};
    for (size_t k = 0; k < q->n_must_include_deviceids && n < want; k++) {
        int a = index_of(av, na, q->must_include_deviceids[k]);
        if (a >= 0 && !taken[a]) {
            taken[a] = true;
            out[n++] = av[a];
        }
    }
    /* outside p->mu: the agent's pick takes the agent's lock, which the agent holds around
     * gs_dp_update */
    char picked[GS_DP_MAX_DEVS][96];
    int np = p->pick ? p->pick(p->pick_user, p->resource, (int)want, picked, GS_DP_MAX_DEVS) : 0;
    if (np > GS_DP_MAX_DEVS)
        np = GS_DP_MAX_DEVS;
    pthread_mutex_lock(&p->mu);
    for (size_t a = 0; a < na; a++) {
        const struct gs_dp_device *d = find_dev(p, av[a]);
        gpu[a] = d && d->gpu >= 0 && d->gpu < GS_DP_MAX_DEVS ? d->gpu : -1;
        if (gpu[a] >= 0)
            left[gpu[a]]++;
    }
    pthread_mutex_unlock(&p->mu);
    for (int k = 0; k < np && n < want; k++) {
        picked[k][sizeof(picked[k]) - 1] = '\0';
        int a = index_of(av, na, picked[k]);
        if (a >= 0 && !taken[a] && gpu[a] >= 0) {
            taken[a] = true;
            out[n++] = av[a];
        }
    }
    while (n < want) {
        int best = -1;
        for (size_t a = 0; a < na; a++)
            if (!taken[a] && gpu[a] >= 0 && (best < 0 || left[gpu[a]] > left[gpu[best]]))
                best = (int)a;
        if (best < 0)
            break;
        taken[best] = true;
        out[n++] = av[best];
    }
    return n;
}

/* n container responses of size bytes each and their pointers (*ptrs), both for the caller to
 * free; NULL when out of memory. */
static void *room(size_t n, size_t size, void *ptrs)
{
    void *slots = calloc(n ? n : 1, size), *p = calloc(n ? n : 1, sizeof(void *));
    memcpy(ptrs, &p, sizeof(p));
    if (!slots)
        return NULL; /* p is freed with the caller's pointers */
    if (!p)
        free(slots);
    return p ? slots : NULL;
}

static int answer_preferred(struct gs_dp_plugin *p, const uint8_t *in, size_t len, uint8_t **out,
                            size_t *out_len, char *why, size_t why_size)
{
    V1beta1__PreferredAllocationRequest *req =
        v1beta1__preferred_allocation_request__unpack(NULL, len, in);
    if (!req)
        return gs_grpc_invalid(why, why_size, "PreferredAllocationRequest does not decode");
    size_t nc = req->n_container_requests, total = 0;
    int code = check_containers(nc, why, why_size);
    for (size_t c = 0; c < nc && code == GRPC_STATUS_OK; c++) {
        code = check_preferred(req->container_requests[c], c, why, why_size);
        if (code == GRPC_STATUS_OK)
            total += (size_t)req->container_requests[c]->allocation_size;
    }
    V1beta1__ContainerPreferredAllocationResponse *cr = NULL, **crp = NULL;
    char **ids = NULL;
    if (code != GRPC_STATUS_OK)
        goto out;
    /* every array is sized by the checked request */
    if (!(cr = room(nc, sizeof(*cr), &crp)) || !(ids = calloc(total ? total : 1, sizeof(*ids)))) {
        code = gs_grpc_no_memory(why, why_size);
        goto out;
    }
    for (size_t c = 0, at = 0; c < nc; c++) {
        const V1beta1__ContainerPreferredAllocationRequest *q = req->container_requests[c];
        v1beta1__container_preferred_allocation_response__init(&cr[c]);
        crp[c] = &cr[c];
        cr[c].deviceids = ids + at;
        cr[c].n_deviceids = prefer(p, q, ids + at);
        at += (size_t)q->allocation_size;
    }
    V1beta1__PreferredAllocationResponse r = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
    r.n_container_responses = nc;
    r.container_responses = crp;
    code = gs_grpc_pack(&r.base, out, out_len, why, why_size);
out:
    free(cr);
    free(crp);
    free(ids);
    v1beta1__preferred_allocation_request__free_unpacked(req, NULL);
    return code;
}

/* One container's answer: NVIDIA_VISIBLE_DEVICES, and for MPS the pipe directory, the thread
 * share, the per-GPU memory limit and the pipe mount. */
struct container_env {
    struct gs_buf vis, lim;
    V1beta1__ContainerAllocateResponse__EnvsEntry env[4];
    V1beta1__ContainerAllocateResponse__EnvsEntry *envp[4];
    V1beta1__Mount mount;
    V1beta1__Mount *mountp;
};

/* The GPU or MIG UUIDs behind one checked container request, each once, comma-separated.
 * Called with p->mu held. */
static int allocate_one(struct gs_dp_plugin *p, const V1beta1__ContainerAllocateRequest *q,
                        size_t c, struct container_env *e, char *why, size_t why_size)
{
    const struct gs_dp_device *seen[GS_DP_MAX_DEVS];
    size_t nseen = 0;
    int rc = 0;
    uint64_t mib = p->mps.mem_mib / (uint64_t)(p->mps.replicas > 0 ? p->mps.replicas : 1);
    for (size_t k = 0; k < q->n_devices_ids; k++) {
        const struct gs_dp_device *d = find_dev(p, q->devices_ids[k]);
        if (!d)
            return gs_grpc_invalid(why, why_size, "%s: container %zu: unknown device '%.100s'",
                                   p->resource, c, q->devices_ids[k]);
        bool dup = false;
        for (size_t j = 0; j < nseen && !dup; j++)
            dup = strcmp(seen[j]->uuid, d->uuid) == 0;
        if (dup)
            continue; /* replicas of one GPU name it once */
        seen[nseen++] = d;
        rc |= gs_buf_printf(&e->vis, "%s%s", e->vis.len ? "," : "", d->uuid);
        if (p->mps.on)
            rc |= gs_buf_printf(&e->lim, "%s%s=%lluM", e->lim.len ? "," : "", d->uuid,
                                (unsigned long long)mib);
    }
    return rc ? gs_grpc_no_memory(why, why_size) : GRPC_STATUS_OK;
}

static int answer_allocate(struct gs_dp_plugin *p, const uint8_t *in, size_t len, uint8_t **out,
                           size_t *out_len, char *why, size_t why_size)
{
    V1beta1__AllocateRequest *req = v1beta1__allocate_request__unpack(NULL, len, in);
    if (!req)
        return gs_grpc_invalid(why, why_size, "AllocateRequest does not decode");
    size_t nc = req->n_container_requests;
    int code = check_containers(nc, why, why_size);
    for (size_t c = 0; c < nc && code == GRPC_STATUS_OK; c++) {
        const V1beta1__ContainerAllocateRequest *q = req->container_requests[c];
        code = check_ids(c, "requested", q->devices_ids, q->n_devices_ids, why, why_size);
        if (code == GRPC_STATUS_OK && q->n_devices_ids == 0)
            code = gs_grpc_invalid(why, why_size, "container %zu: no device IDs", c);
    }
    V1beta1__ContainerAllocateResponse *cr = NULL, **crp = NULL;
    struct container_env *e = NULL;
    if (code != GRPC_STATUS_OK)
        goto out;
    if (!(cr = room(nc, sizeof(*cr), &crp)) || !(e = calloc(nc ? nc : 1, sizeof(*e)))) {
        code = gs_grpc_no_memory(why, why_size);
        goto out;
    }
    for (size_t c = 0; c < nc; c++) {
        gs_buf_init(&e[c].vis, 0);
        gs_buf_init(&e[c].lim, 0);
    }
    pthread_mutex_lock(&p->mu);
    for (size_t c = 0; c < nc && code == GRPC_STATUS_OK; c++)
        code = allocate_one(p, req->container_requests[c], c, &e[c], why, why_size);
    pthread_mutex_unlock(&p->mu);
    if (code != GRPC_STATUS_OK)
        goto out;
    char pct[16];
    snprintf(pct, sizeof(pct), "%d", 100 / (p->mps.replicas > 0 ? p->mps.replicas : 1));
    for (size_t c = 0; c < nc; c++) {
        v1beta1__container_allocate_response__init(&cr[c]);
        crp[c] = &cr[c];
        const char *kv[4][2] = {
            {"NVIDIA_VISIBLE_DEVICES", e[c].vis.data ? e[c].vis.data : ""},
            {"CUDA_MPS_PIPE_DIRECTORY", p->mps.pipe_dir},
            {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct},
            {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", e[c].lim.data ? e[c].lim.data : ""}};
        int ne = p->mps.on ? 4 : 1;
        for (int k = 0; k < ne; k++) {
            v1beta1__container_allocate_response__envs_entry__init(&e[c].env[k]);
            e[c].env[k].key = (char *)kv[k][0];
            e[c].env[k].value = (char *)kv[k][1];
            e[c].envp[k] = &e[c].env[k];
        }
        cr[c].n_envs = (size_t)ne;
        cr[c].envs = e[c].envp;
        if (p->mps.on) {
            v1beta1__mount__init(&e[c].mount);
            e[c].mount.container_path = p->mps.pipe_dir;
            e[c].mount.host_path = p->mps.pipe_dir;
            e[c].mountp = &e[c].mount;
            cr[c].n_mounts = 1;
            cr[c].mounts = &e[c].mountp;
        }
    }
    V1beta1__AllocateResponse r = V1BETA1__ALLOCATE_RESPONSE__INIT;
    r.n_container_responses = nc;
    r.container_responses = crp;
    code = gs_grpc_pack(&r.base, out, out_len, why, why_size);
out:
    for (size_t c = 0; e && c < nc; c++) {
        gs_buf_release(&e[c].vis);
        gs_buf_release(&e[c].lim);
    }
    free(e);
    free(cr);
    free(crp);
    v1beta1__allocate_request__free_unpacked(req, NULL);
    return code;
}

int gs__dp_answer(struct gs_dp_plugin *p, enum gs_dp_call call, const uint8_t *in, size_t len,
                  uint8_t **out, size_t *out_len, char *why, size_t why_size)
{
    *out = NULL;
    *out_len = 0;
    if (why_size)
        why[0] = '\0';
    switch (call) {
    case GS_DP_OPTIONS: {
        V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        o.get_preferred_allocation_available = 1;
        return gs_grpc_pack(&o.base, out, out_len, why, why_size);
    }
    case GS_DP_LIST:
        return answer_list(p, out, out_len, why, why_size);
    case GS_DP_PREFERRED:
        return answer_preferred(p, in, len, out, out_len, why, why_size);
    case GS_DP_ALLOCATE:
        return answer_allocate(p, in, len, out, out_len, why, why_size);
    case GS_DP_PRESTART: {
        V1beta1__PreStartContainerResponse r = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
        return gs_grpc_pack(&r.base, out, out_len, why, why_size);
    }
    }
    snprintf(why, why_size, "unknown method");
    return GRPC_STATUS_UNIMPLEMENTED;
}

/* ---------- serving ---------- */

static const struct gs_grpc_method methods[] = {
    {"/v1beta1.DevicePlugin/GetDevicePluginOptions", GS_DP_OPTIONS, false},
    {"/v1beta1.DevicePlugin/ListAndWatch", GS_DP_LIST, true},
    {"/v1beta1.DevicePlugin/GetPreferredAllocation", GS_DP_PREFERRED, false},
    {"/v1beta1.DevicePlugin/Allocate", GS_DP_ALLOCATE, false},
    {"/v1beta1.DevicePlugin/PreStartContainer", GS_DP_PRESTART, false},
};

static int serve_answer(void *user, int call, const uint8_t *in, size_t len, uint8_t **out,
                        size_t *out_len, char *why, size_t why_size)
{
    return gs__dp_answer(user, (enum gs_dp_call)call, in, len, out, out_len, why, why_size);
}

static uint64_t serve_version(void *user)
{
    struct gs_dp_plugin *p = user;
    pthread_mutex_lock(&p->mu);
    uint64_t v = p->version;
    pthread_mutex_unlock(&p->mu);
    return v;
}

/* Registration/Register on kubelet.sock. */
static int do_register(void *user, char *why, unsigned why_size)
{
    struct gs_dp_plugin *p = user;
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    o.get_preferred_allocation_available = 1;
    V1beta1__RegisterRequest r = V1BETA1__REGISTER_REQUEST__INIT;
    r.version = "v1beta1";
    r.endpoint = p->socket;
    r.resource_name = p->resource;
    r.options = &o;
    size_t n = v1beta1__register_request__get_packed_size(&r), got = 0;
    uint8_t *req = malloc(n ? n : 1), *ans = NULL;
    if (!req) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    v1beta1__register_request__pack(&r, req);
    int rc = gs_grpc_unary(p->kubelet, "/v1beta1.Registration/Register", req, n, 10, &ans, &got,
                           why, why_size);
    free(req);
    free(ans);
    return rc;
}

struct gs_dp_plugin *gs__dp_new(const char *resource, const struct gs_dp_device *devs, int n,
                                const struct gs_dp_mps *mps, gs_dp_pick_fn pick, void *pick_user)
{
    struct gs_dp_plugin *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    snprintf(p->resource, sizeof(p->resource), "%s", resource);
    pthread_mutex_init(&p->mu, NULL);
    p->ndevs = !devs || n < 0 ? 0 : n < GS_DP_MAX_DEVS ? n : GS_DP_MAX_DEVS;
    if (p->ndevs)
        memcpy(p->devs, devs, sizeof(devs[0]) * (size_t)p->ndevs);
    p->version = 1;
    if (mps)
        p->mps = *mps;
    p->pick = pick;
    p->pick_user = pick_user;
    return p;
}

void gs__dp_free(struct gs_dp_plugin *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->mu);
    free(p);
}

struct gs_dp_plugin *gs_dp_start(const char *dir, const char *resource, const char *socket,
                                 const struct gs_dp_device *devs, int n,
                                 const struct gs_dp_mps *mps, gs_dp_pick_fn pick, void *pick_user,
                                 char *why, unsigned why_size)
{
    struct gs_dp_plugin *p = gs__dp_new(resource, devs, n, mps, pick, pick_user);
    if (!p) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    snprintf(p->socket, sizeof(p->socket), "%s", socket);
    snprintf(p->sock_path, sizeof(p->sock_path), "%s/%s", dir, socket);
    snprintf(p->kubelet, sizeof(p->kubelet), "%s/kubelet.sock", dir);
    p->svc = (struct gs_grpc_service){.methods = methods,
                                      .nmethods = (int)(sizeof(methods) / sizeof(methods[0])),
                                      .answer = serve_answer,
                                      .version = serve_version,
                                      .user = p};
    const char *sock = p->sock_path;
    struct gs_grpcd_opts o = {.tag = p->resource,
                              .log = "deviceplugin",
                              .sockets = &sock,
                              .nsockets = 1,
                              .services = &p->svc,
                              .nservices = 1,
                              .register_fn = do_register,
                              .register_user = p,
                              .kubelet = p->kubelet};
    if (!(p->server = gs_grpcd_start(&o, why, why_size))) {
        gs__dp_free(p);
        return NULL;
    }
    GS_INFO("deviceplugin", "%s: %d devices on %s, registered", resource, p->ndevs, p->sock_path);
    return p;
}

void gs_dp_update(struct gs_dp_plugin *p, const struct gs_dp_device *devs, int n)
{
    pthread_mutex_lock(&p->mu);
    int m = !devs || n < 0 ? 0 : n < GS_DP_MAX_DEVS ? n : GS_DP_MAX_DEVS;
    bool same =
        m == p->ndevs && (m == 0 || memcmp(p->devs, devs, sizeof(devs[0]) * (size_t)m) == 0);
    if (!same) {
        if (m > 0)
            memcpy(p->devs, devs, sizeof(devs[0]) * (size_t)m);
        p->ndevs = m;
        p->version++;
    }
    pthread_mutex_unlock(&p->mu);
}

void gs_dp_stop(struct gs_dp_plugin *p)
{
    if (!p)
        return;
    gs_grpcd_stop(p->server);
    gs__dp_free(p);
}
