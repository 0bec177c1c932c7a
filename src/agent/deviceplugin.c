/* deviceplugin.c - the kubelet device plugin (see deviceplugin.h): the answers of the
 * DevicePlugin service, served by the agent's one gRPC server (grpcserver.c), which also
 * registers the plugin with the kubelet and registers it again after a kubelet restart.
 *
 * The answers know nothing of gRPC: gs__dp_answer takes the request's bytes and gives the
 * answer's, so tests call it directly. Every request is checked before anything is sized from
 * it: ID lists are bounded by what a plugin can advertise and hold each ID once, an allocation
 * size lies between 1 and the available devices, must-include devices are among them; the
 * output arrays are then sized from the checked request. The device list and its version are
 * under the plugin's lock (gs_dp_update from the agent's loop, answers from the server's
 * thread); the hooks are fixed at the start and called without it. */
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
    struct gs_dp_hooks hooks;
    struct gs_grpc_service svc; /* the server's table points here */
    struct gs_grpcd *server;
};

/* ---------- answers: request bytes in, answer bytes out, no gRPC ---------- */

/* The IDs the device list stands for (a GPU's thousandths are GS_DP_MILLI of them). Called
 * with p->mu held. */
static size_t id_count(const struct gs_dp_plugin *p)
{
    size_t n = 0;
    for (int i = 0; i < p->ndevs; i++)
        n += p->devs[i].milli ? GS_DP_MILLI : 1;
    return n;
}

static int answer_list(struct gs_dp_plugin *p, uint8_t **out, size_t *len, char *why,
                       size_t why_size)
{
    pthread_mutex_lock(&p->mu);
    size_t n = id_count(p), at = 0; /* at most GS_DP_MAX_IDS: gs_dp_update keeps it so */
    V1beta1__Device *d = calloc(n ? n : 1, sizeof(*d));
    V1beta1__Device **dp = calloc(n ? n : 1, sizeof(*dp));
    char(*ids)[112] = calloc(n ? n : 1, sizeof(*ids));
    int code = !d || !dp || !ids ? gs_grpc_no_memory(why, why_size) : GRPC_STATUS_OK;
    for (int i = 0; i < p->ndevs && code == GRPC_STATUS_OK; i++) {
        const struct gs_dp_device *x = &p->devs[i];
        for (int k = 0; k < (x->milli ? GS_DP_MILLI : 1); k++, at++) {
            v1beta1__device__init(&d[at]);
            if (x->milli)
                snprintf(ids[at], sizeof(ids[at]), "%s::m%d", x->id, k);
            else
                snprintf(ids[at], sizeof(ids[at]), "%s", x->id);
            d[at].id = ids[at];
            d[at].health = x->healthy ? "Healthy" : "Unhealthy";
            dp[at] = &d[at];
        }
    }
    if (code == GRPC_STATUS_OK) {
        V1beta1__ListAndWatchResponse r = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
        r.n_devices = n;
        r.devices = dp;
        code = gs_grpc_pack(&r.base, out, len, why, why_size);
    }
    pthread_mutex_unlock(&p->mu);
    free(d);
    free(dp);
    free(ids);
    return code;
}

/* The device entry behind an advertised ID: an entry's own ID, or "<id>::m<k>" (k < 1000) of
 * a GPU's thousandths. Called with p->mu held. */
static const struct gs_dp_device *find_dev(struct gs_dp_plugin *p, const char *id)
{
    for (int i = 0; i < p->ndevs; i++)
        if (!p->devs[i].milli && strcmp(p->devs[i].id, id) == 0)
            return &p->devs[i];
    const char *m = strstr(id, "::m");
    if (!m)
        return NULL;
    char *end = NULL;
    long k = strtol(m + 3, &end, 10);
    if (m[3] < '0' || m[3] > '9' || *end || k < 0 || k >= GS_DP_MILLI || (m[3] == '0' && m[4]))
        return NULL;
    size_t plen = (size_t)(m - id);
    for (int i = 0; i < p->ndevs; i++)
        if (p->devs[i].milli && strlen(p->devs[i].id) == plen &&
            strncmp(p->devs[i].id, id, plen) == 0)
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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A list of device IDs from a request: at most GS_DP_MAX_IDS (a plugin advertises no more),
 * each once (found by sorting a copy: lists run to thousands of IDs). */
static int check_ids(size_t c, const char *what, char *const *ids, size_t n, char *why,
                     size_t why_size)
{
    if (n > GS_DP_MAX_IDS)
        return gs_grpc_invalid(
            why, why_size, "container %zu: %zu %s device IDs, and a plugin advertises at most %d",
            c, n, what, GS_DP_MAX_IDS);
    if (n < 2)
        return GRPC_STATUS_OK;
    char **sorted = malloc(n * sizeof(*sorted));
    if (!sorted)
        return gs_grpc_no_memory(why, why_size);
    memcpy(sorted, ids, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), cmp_str);
    int code = GRPC_STATUS_OK;
    for (size_t i = 1; i < n && code == GRPC_STATUS_OK; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            code =
                gs_grpc_invalid(why, why_size, "container %zu: %s device ID '%.100s' appears twice",
                                c, what, sorted[i]);
    free(sorted);
    return code;
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

/* What prefer knows of each available ID: its device's UUID (NULL: not advertised here) and
 * GPU, and whether it is taken. */
struct avail {
    const char *uuid;
    int gpu;
    bool taken;
    bool whole; /* a whole GPU: its ID is its GPU UUID */
};

/* The rest of a request for whole GPUs, where the GPUs' links are known: the best-linked set
 * with the ones taken so far (core/gpulink.h). False when it does not apply (a device that is
 * not a whole GPU, links not known): the caller packs. */
static bool prefer_linked(const struct gs_dp_plugin *p, char *const *av, struct avail *x, size_t na,
                          size_t want, char **out, size_t *n)
{
    bool known = false;
    for (int g = 0; g < GS_LINK_MAX_GPUS; g++)
        known = known || gs_link_known(&p->hooks.links[g]);
    uint32_t free = 0, must = 0;
    for (size_t a = 0; a < na && known; a++) {
        if (x[a].gpu < 0)
            continue;
        if (!x[a].whole || x[a].gpu >= GS_LINK_MAX_GPUS)
            return false;
        free |= 1u << x[a].gpu;
        must |= x[a].taken ? 1u << x[a].gpu : 0;
    }
    int set[GS_LINK_MAX_GPUS];
    if (!known ||
        gs_link_choose(p->hooks.links, GS_LINK_MAX_GPUS, free, must, (int)want, set) != (int)want)
        return false;
    for (size_t k = 0; k < want; k++)
        for (size_t a = 0; a < na && *n < want; a++)
            if (x[a].gpu == set[k] && !x[a].taken) {
                x[a].taken = true;
                out[(*n)++] = av[a];
            }
    return true;
}

/* The preferred devices of one checked container request, into out (room for
 * allocation_size): the must-include ones, then the devices the scheduler recorded for the pod
 * being admitted (one ID of each device it names, or as many of a GPU's thousandths as
 * asked), then the rest packed onto the GPU that offers the most, in order, before the next
 * GPU. IDs this plugin does not advertise are never preferred (the kubelet fills in). Returns
 * how many, or -1 when out of memory. */
static long prefer(struct gs_dp_plugin *p, const V1beta1__ContainerPreferredAllocationRequest *q,
                   char **out)
{
    size_t want = (size_t)q->allocation_size, na = q->n_available_deviceids, n = 0;
    char *const *av = q->available_deviceids;
    struct avail *x = calloc(na ? na : 1, sizeof(*x));
    char(*picked)[96] = malloc(GS_DP_MAX_DEVS * sizeof(*picked));
    if (!x || !picked) {
        free(x);
        free(picked);
        return -1;
    }
    int left[GS_DP_MAX_DEVS] = {0};
    /* outside p->mu: the agent's pick takes the agent's locks */
    int np = p->hooks.pick
                 ? p->hooks.pick(p->hooks.user, p->resource, (int)want, picked, GS_DP_MAX_DEVS)
                 : 0;
    np = np < 0 ? 0 : np > GS_DP_MAX_DEVS ? GS_DP_MAX_DEVS : np;
    pthread_mutex_lock(&p->mu);
    for (size_t a = 0; a < na; a++) {
        const struct gs_dp_device *d = find_dev(p, av[a]);
        x[a].gpu = d && d->gpu >= 0 && d->gpu < GS_DP_MAX_DEVS ? d->gpu : -1;
        x[a].uuid = x[a].gpu >= 0 ? d->uuid : NULL; /* stable: the list is not freed */
        x[a].whole = x[a].gpu >= 0 && !d->milli && strcmp(d->id, d->uuid) == 0 &&
                     strncmp(d->uuid, "GPU-", 4) == 0;
        if (x[a].gpu >= 0)
            left[x[a].gpu]++;
    }
    for (size_t k = 0; k < q->n_must_include_deviceids && n < want; k++) {
        int a = index_of(av, na, q->must_include_deviceids[k]);
        if (a >= 0 && !x[a].taken) {
            x[a].taken = true;
            out[n++] = av[a];
        }
    }
    for (int k = 0; k < np && n < want; k++) {
        picked[k][sizeof(picked[k]) - 1] = '\0';
        for (size_t a = 0; a < na && n < want; a++) {
            if (x[a].taken || !x[a].uuid || strcmp(x[a].uuid, picked[k]) != 0)
                continue;
            x[a].taken = true;
            out[n++] = av[a];
            if (p->hooks.sharing != GS_DP_FRACTION)
                break; /* one ID of each device named */
        }
    }
    pthread_mutex_unlock(&p->mu);
    if (n < want && p->hooks.sharing == GS_DP_PLAIN)
        prefer_linked(p, av, x, na, want, out, &n);
    while (n < want) {
        long best = -1;
        for (size_t a = 0; a < na; a++)
            if (!x[a].taken && x[a].gpu >= 0 && (best < 0 || left[x[a].gpu] > left[x[best].gpu]))
                best = (long)a;
        if (best < 0)
            break;
        x[best].taken = true;
        out[n++] = av[best];
    }
    free(x);
    free(picked);
    return (long)n;
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
        long got = prefer(p, q, ids + at);
        if (got < 0) {
            code = gs_grpc_no_memory(why, why_size);
            goto out;
        }
        cr[c].n_deviceids = (size_t)got;
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

/* One container's answer: NVIDIA_VISIBLE_DEVICES, and for an MPS client the pipe folder, the
 * thread share, the pinned memory limit and the mounts of the pipe and shared memory. */
#define ENVS 4
struct container_env {
    struct gs_buf vis;
    char uuids[GS_DP_MAX_DEVS][96]; /* the devices given, each once */
    int nuuids, ids;                /* how many devices, and IDs asked */
    int gpu;                        /* an MPS client's GPU */
    uint64_t mem_mib;               /* its GPU's memory */
    char pipe[256], shm[256], pct[16], lim[64];
    V1beta1__ContainerAllocateResponse__EnvsEntry env[ENVS];
    V1beta1__ContainerAllocateResponse__EnvsEntry *envp[ENVS];
    V1beta1__Mount mount[2];
    V1beta1__Mount *mountp[2];
};

/* The GPU or MIG UUIDs behind one checked container request, each once, comma-separated.
 * Called with p->mu held. */
static int allocate_one(struct gs_dp_plugin *p, const V1beta1__ContainerAllocateRequest *q,
                        size_t c, struct container_env *e, char *why, size_t why_size)
{
    int rc = 0;
    e->ids = (int)q->n_devices_ids;
    for (size_t k = 0; k < q->n_devices_ids; k++) {
        const struct gs_dp_device *d = find_dev(p, q->devices_ids[k]);
        if (!d)
            return gs_grpc_invalid(why, why_size, "%s: container %zu: unknown device '%.100s'",
                                   p->resource, c, q->devices_ids[k]);
        bool dup = false;
        for (int j = 0; j < e->nuuids && !dup; j++)
            dup = strcmp(e->uuids[j], d->uuid) == 0;
        if (dup)
            continue; /* replicas or thousandths of one GPU name it once */
        if (e->nuuids >= GS_DP_MAX_DEVS)
            return gs_grpc_invalid(why, why_size, "%s: container %zu: more than %d devices",
                                   p->resource, c, GS_DP_MAX_DEVS);
        snprintf(e->uuids[e->nuuids++], sizeof(e->uuids[0]), "%s", d->uuid);
        e->gpu = d->gpu;
        e->mem_mib = d->mem_mib;
        rc |= gs_buf_printf(&e->vis, "%s%s", e->vis.len ? "," : "", d->uuid);
    }
    return rc ? gs_grpc_no_memory(why, why_size) : GRPC_STATUS_OK;
}

/* An MPS client's share of its GPU (its replicas out of the GPU's, or its thousandths): the
 * checks, then the daemon's folders and the limits into e. Called without p->mu (the hook
 * takes the agent's locks). */
static int mps_client(struct gs_dp_plugin *p, size_t c, struct container_env *e, char *why,
                      size_t why_size)
{
    const struct gs_dp_hooks *h = &p->hooks;
    bool frac = h->sharing == GS_DP_FRACTION;
    if (frac && e->ids >= GS_DP_MILLI)
        return gs_grpc_invalid(why, why_size,
                               "%s: container %zu: %d thousandths; a fraction is 1..%d of one GPU "
                               "(ask nvidia.com/gpu for whole GPUs)",
                               p->resource, c, e->ids, GS_DP_MILLI - 1);
    if (e->nuuids > 1)
        return gs_grpc_invalid(why, why_size,
                               "%s: container %zu: %s of %d GPUs; an MPS client is the client of "
                               "one GPU's daemon (ask for %s)",
                               p->resource, c, frac ? "thousandths" : "replicas", e->nuuids,
                               frac ? "a share of one GPU" : "one replica");
    if (!h->mps_live || h->mps_live(h->user, e->gpu, e->pipe, e->shm, sizeof(e->pipe)))
        return gs_grpc_status(why, why_size, GRPC_STATUS_FAILED_PRECONDITION,
                              "%s: container %zu: GPU %d (%s): its MPS control daemon is not "
                              "running; a container is never given a dead pipe",
                              p->resource, c, e->gpu, e->uuids[0]);
    int replicas = h->replicas > 0 ? h->replicas : 1;
    double share = frac ? (double)e->ids / GS_DP_MILLI : (double)e->ids / replicas;
    if (share > 1)
        share = 1;
    int pct = (int)(share * 100);
    snprintf(e->pct, sizeof(e->pct), "%d", pct < 1 ? 1 : pct);
    /* by index (the one GPU the container sees is 0): NVIDIA's device plugin found limits set
     * by UUID not applied */
    snprintf(e->lim, sizeof(e->lim), "0=%lluM", (unsigned long long)((double)e->mem_mib * share));
    return GRPC_STATUS_OK;
}

/* Container c's response from its checked devices e. */
static void respond(struct gs_dp_plugin *p, struct container_env *e,
                    V1beta1__ContainerAllocateResponse *cr)
{
    bool mps = p->hooks.sharing != GS_DP_PLAIN;
    const char *kv[ENVS][2] = {{"NVIDIA_VISIBLE_DEVICES", e->vis.data ? e->vis.data : ""},
                               {"CUDA_MPS_PIPE_DIRECTORY", e->pipe},
                               {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", e->pct},
                               {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", e->lim}};
    int ne = mps ? ENVS : 1;
    for (int k = 0; k < ne; k++) {
        v1beta1__container_allocate_response__envs_entry__init(&e->env[k]);
        e->env[k].key = (char *)kv[k][0];
        e->env[k].value = (char *)kv[k][1];
        e->envp[k] = &e->env[k];
    }
    cr->n_envs = (size_t)ne;
    cr->envs = e->envp;
    if (!mps)
        return;
    /* the pipe where the daemon made it; its shared memory as the clients' /dev/shm */
    const char *mounts[2][2] = {{e->pipe, e->pipe}, {e->shm, "/dev/shm"}};
    int nm = e->shm[0] ? 2 : 1;
    for (int k = 0; k < nm; k++) {
        v1beta1__mount__init(&e->mount[k]);
        e->mount[k].host_path = (char *)mounts[k][0];
        e->mount[k].container_path = (char *)mounts[k][1];
        e->mountp[k] = &e->mount[k];
    }
    cr->n_mounts = (size_t)nm;
    cr->mounts = e->mountp;
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
    for (size_t c = 0; c < nc; c++)
        gs_buf_init(&e[c].vis, 0);
    pthread_mutex_lock(&p->mu);
    for (size_t c = 0; c < nc && code == GRPC_STATUS_OK; c++)
        code = allocate_one(p, req->container_requests[c], c, &e[c], why, why_size);
    pthread_mutex_unlock(&p->mu);
    for (size_t c = 0; c < nc && code == GRPC_STATUS_OK && p->hooks.sharing != GS_DP_PLAIN; c++)
        code = mps_client(p, c, &e[c], why, why_size);
    if (code != GRPC_STATUS_OK)
        goto out;
    for (size_t c = 0; c < nc; c++) {
        v1beta1__container_allocate_response__init(&cr[c]);
        crp[c] = &cr[c];
        respond(p, &e[c], &cr[c]);
    }
    V1beta1__AllocateResponse r = V1BETA1__ALLOCATE_RESPONSE__INIT;
    r.n_container_responses = nc;
    r.container_responses = crp;
    code = gs_grpc_pack(&r.base, out, out_len, why, why_size);
    for (size_t c = 0; c < nc && code == GRPC_STATUS_OK && p->hooks.allocated; c++)
        p->hooks.allocated(p->hooks.user, p->resource, e[c].ids, e[c].uuids, e[c].nuuids);
out:
    for (size_t c = 0; e && c < nc; c++)
        gs_buf_release(&e[c].vis);
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

/* How many of devs[0..n) a plugin holds: GS_DP_MAX_DEVS entries, GS_DP_MAX_IDS IDs. */
static int fits(const struct gs_dp_device *devs, int n)
{
    int m = 0;
    size_t ids = 0;
    for (; devs && m < n && m < GS_DP_MAX_DEVS; m++) {
        ids += devs[m].milli ? GS_DP_MILLI : 1;
        if (ids > GS_DP_MAX_IDS)
            break;
    }
    return m;
}

struct gs_dp_plugin *gs__dp_new(const char *resource, const struct gs_dp_device *devs, int n,
                                const struct gs_dp_hooks *hooks)
{
    struct gs_dp_plugin *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    snprintf(p->resource, sizeof(p->resource), "%s", resource);
    pthread_mutex_init(&p->mu, NULL);
    p->ndevs = fits(devs, n);
    if (p->ndevs)
        memcpy(p->devs, devs, sizeof(devs[0]) * (size_t)p->ndevs);
    p->version = 1;
    if (hooks)
        p->hooks = *hooks;
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
                                 const struct gs_dp_hooks *hooks, char *why, unsigned why_size)
{
    struct gs_dp_plugin *p = gs__dp_new(resource, devs, n, hooks);
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
    GS_INFO("deviceplugin", "%s: %zu devices on %s, registered", resource, id_count(p),
            p->sock_path);
    return p;
}

void gs_dp_update(struct gs_dp_plugin *p, const struct gs_dp_device *devs, int n)
{
    pthread_mutex_lock(&p->mu);
    int m = fits(devs, n);
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
