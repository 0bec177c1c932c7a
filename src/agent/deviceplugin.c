/* deviceplugin.c - the kubelet device plugin over gRPC core (see deviceplugin.h).
 *
 * Each plugin thread owns a completion queue and the server. Calls are driven as small state
 * machines tagged by their context: a new call arrives (NEW), its request is read (READ), the
 * answer is sent with the status (DONE). A ListAndWatch call stays open: its first list is
 * sent, later lists are sent when the device version moves (one message in flight at a
 * time), and its close is watched (CLOSED). Registration is a blocking client call on its own
 * queue.
 *
 * The answers themselves know nothing of gRPC: gs__dp_answer takes the request's bytes and
 * gives the answer's, so tests call it directly. Every request is checked before anything is
 * sized from it: ID lists are bounded by what a plugin can advertise and hold each ID once,
 * an allocation size lies between 1 and the available devices, must-include devices are
 * among them; the output arrays are then sized from the checked request. */
#include "deviceplugin.h"

#include "../base/flag.h"
#include "../base/buf.h"
#include "../base/log.h"
#include "deviceplugin.pb-c.h"
#include "grpcunary.h"

#include <errno.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_STREAMS 8

enum state { S_NEW = 0, S_READ, S_DONE, S_STREAM_SENT, S_STREAM_CLOSED };

struct call {
    enum state st;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
    grpc_byte_buffer *in, *out;
    int method;
    int cancelled;
    bool sending, closed;
    uint64_t sent_version;
    int refs; /* outstanding batches on a stream */
};

struct gs_dp_plugin {
    char resource[128], socket[128], sock_path[400], kubelet[400];
    pthread_t thread, reg_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool reserve; /* the registrar asks the server thread to serve again */
    struct gs_dp_device devs[GS_DP_MAX_DEVS];
    int ndevs;
    uint64_t version;
    struct gs_dp_mps mps;
    gs_dp_pick_fn pick;
    void *pick_user;
    volatile int stop;
    grpc_server *server;
    grpc_completion_queue *cq;
    bool requested; /* a request for a new call is outstanding */
    struct call *streams[MAX_STREAMS];
    ino_t kubelet_ino;
};

/* indexed by enum gs_dp_call */
static const char *const paths[] = {
    "/v1beta1.DevicePlugin/GetDevicePluginOptions", "/v1beta1.DevicePlugin/ListAndWatch",
    "/v1beta1.DevicePlugin/GetPreferredAllocation", "/v1beta1.DevicePlugin/Allocate",
    "/v1beta1.DevicePlugin/PreStartContainer"};
#define NCALLS ((int)(sizeof(paths) / sizeof(paths[0])))

/* ---------- answers: request bytes in, answer bytes out, no gRPC ---------- */

static int invalid(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int invalid(char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return GRPC_STATUS_INVALID_ARGUMENT;
}

static int no_memory(char *why, size_t why_size)
{
    snprintf(why, why_size, "out of memory");
    return GRPC_STATUS_RESOURCE_EXHAUSTED;
}

static int pack_to(const ProtobufCMessage *m, uint8_t **out, size_t *len, char *why,
                   size_t why_size)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return no_memory(why, why_size);
    protobuf_c_message_pack(m, b);
    *out = b;
    *len = n;
    return GRPC_STATUS_OK;
}

static int answer_list(struct gs_dp_plugin *p, uint8_t **out, size_t *len, uint64_t *version,
                       char *why, size_t why_size)
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
    int code = pack_to(&r.base, out, len, why, why_size);
    if (version)
        *version = p->version;
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
        return invalid(why, why_size,
                       "container %zu: %zu %s device IDs, and a plugin advertises at most %d", c, n,
                       what, GS_DP_MAX_DEVS);
    for (size_t i = 0; i < n; i++)
        if (index_of(ids, i, ids[i]) >= 0)
            return invalid(why, why_size, "container %zu: %s device ID '%.100s' appears twice", c,
                           what, ids[i]);
    return GRPC_STATUS_OK;
}

static int check_containers(size_t n, char *why, size_t why_size)
{
    if (n > GS_DP_MAX_CONTAINERS)
        return invalid(why, why_size, "%zu container requests: at most %d in one call", n,
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
        return invalid(why, why_size,
                       "container %zu: allocation size %d: expected 1 to %zu (the available "
                       "devices)",
                       c, (int)q->allocation_size, na);
    if (nm > (size_t)q->allocation_size)
        return invalid(why, why_size,
                       "container %zu: %zu must-include devices for an allocation of %d", c, nm,
                       (int)q->allocation_size);
    for (size_t k = 0; k < nm; k++)
        if (index_of(q->available_deviceids, na, q->must_include_deviceids[k]) < 0)
            return invalid(why, why_size,
                           "container %zu: must-include device '%.100s' is not available", c,
                           q->must_include_deviceids[k]);
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

static int answer_preferred(struct gs_dp_plugin *p, const uint8_t *in, size_t len, uint8_t **out,
                            size_t *out_len, char *why, size_t why_size)
{
    V1beta1__PreferredAllocationRequest *req =
        v1beta1__preferred_allocation_request__unpack(NULL, len, in);
    if (!req)
        return invalid(why, why_size, "PreferredAllocationRequest does not decode");
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
    cr = calloc(nc ? nc : 1, sizeof(*cr));
    crp = calloc(nc ? nc : 1, sizeof(*crp));
    ids = calloc(total ? total : 1, sizeof(*ids));
    if (!cr || !crp || !ids) {
        code = no_memory(why, why_size);
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
    code = pack_to(&r.base, out, out_len, why, why_size);
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
            return invalid(why, why_size, "%s: container %zu: unknown device '%.100s'", p->resource,
                           c, q->devices_ids[k]);
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
    return rc ? no_memory(why, why_size) : GRPC_STATUS_OK;
}

static int answer_allocate(struct gs_dp_plugin *p, const uint8_t *in, size_t len, uint8_t **out,
                           size_t *out_len, char *why, size_t why_size)
{
    V1beta1__AllocateRequest *req = v1beta1__allocate_request__unpack(NULL, len, in);
    if (!req)
        return invalid(why, why_size, "AllocateRequest does not decode");
    size_t nc = req->n_container_requests;
    int code = check_containers(nc, why, why_size);
    for (size_t c = 0; c < nc && code == GRPC_STATUS_OK; c++) {
        const V1beta1__ContainerAllocateRequest *q = req->container_requests[c];
        code = check_ids(c, "requested", q->devices_ids, q->n_devices_ids, why, why_size);
        if (code == GRPC_STATUS_OK && q->n_devices_ids == 0)
            code = invalid(why, why_size, "container %zu: no device IDs", c);
    }
    V1beta1__ContainerAllocateResponse *cr = NULL, **crp = NULL;
    struct container_env *e = NULL;
    if (code != GRPC_STATUS_OK)
        goto out;
    cr = calloc(nc ? nc : 1, sizeof(*cr));
    crp = calloc(nc ? nc : 1, sizeof(*crp));
    e = calloc(nc ? nc : 1, sizeof(*e));
    if (!cr || !crp || !e) {
        code = no_memory(why, why_size);
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
    code = pack_to(&r.base, out, out_len, why, why_size);
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
        return pack_to(&o.base, out, out_len, why, why_size);
    }
    case GS_DP_LIST:
        return answer_list(p, out, out_len, NULL, why, why_size);
    case GS_DP_PREFERRED:
        return answer_preferred(p, in, len, out, out_len, why, why_size);
    case GS_DP_ALLOCATE:
        return answer_allocate(p, in, len, out, out_len, why, why_size);
    case GS_DP_PRESTART: {
        V1beta1__PreStartContainerResponse r = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
        return pack_to(&r.base, out, out_len, why, why_size);
    }
    }
    snprintf(why, why_size, "unknown method");
    return GRPC_STATUS_UNIMPLEMENTED;
}

/* ---------- byte buffers ---------- */

/* A byte buffer that takes b (malloc'd, len bytes). */
static grpc_byte_buffer *wrap(uint8_t *b, size_t len)
{
    grpc_slice s = len ? grpc_slice_new(b, len, free) : grpc_empty_slice();
    if (!len)
        free(b);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return bb;
}

/* The whole message as one slice (caller unrefs). */
static grpc_slice flatten(grpc_byte_buffer *b)
{
    grpc_byte_buffer_reader r;
    if (!b || !grpc_byte_buffer_reader_init(&r, b))
        return grpc_empty_slice();
    grpc_slice s = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    return s;
}

/* ---------- the server ---------- */

static void start_batch(struct call *c, grpc_op *ops, size_t n)
{
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, c, NULL);
    if (e != GRPC_CALL_OK)
        GS_WARN("deviceplugin", "start batch: error %d", (int)e);
}

/* Keep one request for a new call outstanding; out of memory, the server thread tries
 * again on its next round. */
static void new_call(struct gs_dp_plugin *p)
{
    struct call *c = calloc(1, sizeof(*c));
    p->requested = c != NULL;
    if (!c)
        return;
    c->st = S_NEW;
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    grpc_server_request_call(p->server, &c->call, &c->details, &c->md, p->cq, p->cq, c);
}

static void free_call(struct call *c)
{
    if (c->call)
        grpc_call_unref(c->call);
    if (c->in)
        grpc_byte_buffer_destroy(c->in);
    if (c->out)
        grpc_byte_buffer_destroy(c->out);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    free(c);
}

static void finish(struct call *c, grpc_byte_buffer *out, grpc_status_code code, const char *msg)
{
    grpc_op ops[3];
    memset(ops, 0, sizeof(ops));
    size_t n = 0;
    c->out = out;
    if (out) {
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = out;
    }
    grpc_slice details = grpc_slice_from_copied_string(msg ? msg : "");
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = code;
    ops[n++].data.send_status_from_server.status_details = &details;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    c->st = S_DONE;
    start_batch(c, ops, n);
    grpc_slice_unref(details);
}

static void stream_send(struct gs_dp_plugin *p, struct call *c)
{
    if (c->sending || c->closed)
        return;
    if (c->out) {
        grpc_byte_buffer_destroy(c->out);
        c->out = NULL;
    }
    uint8_t *b = NULL;
    size_t len = 0;
    uint64_t version = 0;
    char why[64];
    if (answer_list(p, &b, &len, &version, why, sizeof(why)) != GRPC_STATUS_OK)
        return; /* out of memory: the next round sends it */
    c->out = wrap(b, len);
    c->sent_version = version;
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = c->out;
    c->sending = true;
    c->refs++;
    c->st = S_STREAM_SENT;
    grpc_call_error e = grpc_call_start_batch(c->call, &op, 1, &c->sending, NULL);
    if (e != GRPC_CALL_OK) {
        c->sending = false;
        c->refs--;
    }
}

/* Tags: a struct call for the call's main state, &call->sending for a stream's message,
 * &call->closed for a stream's close, the plugin itself for shutdown. */
static void on_event(struct gs_dp_plugin *p, void *tag, bool ok)
{
    for (int s = 0; s < MAX_STREAMS; s++) {
        struct call *c = p->streams[s];
        if (!c)
            continue;
        if (tag == &c->sending) {
            c->sending = false;
            c->refs--;
            if (!ok)
                c->closed = true;
            goto reap;
        }
        if (tag == &c->closed) {
            c->closed = true;
            c->refs--;
            goto reap;
        }
        continue;
    reap:
        if (c->closed && c->refs == 0) {
            GS_INFO("deviceplugin", "%s: ListAndWatch closed", p->resource);
            free_call(c);
            p->streams[s] = NULL;
        }
        return;
    }
    struct call *c = tag;
    switch (c->st) {
    case S_NEW: {
        if (!ok) { /* server shutting down */
            free_call(c);
            return;
        }
        new_call(p); /* keep one request outstanding */
        c->method = -1;
        for (int m = 0; m < NCALLS; m++)
            if (grpc_slice_str_cmp(c->details.method, paths[m]) == 0)
                c->method = m;
        grpc_op ops[2];
        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_RECV_MESSAGE;
        ops[1].data.recv_message.recv_message = &c->in;
        c->st = S_READ;
        start_batch(c, ops, 2);
        return;
    }
    case S_READ: {
        if (!ok) {
            free_call(c);
            return;
        }
        if (c->method == GS_DP_LIST) {
            int slot = -1;
            for (int s = 0; s < MAX_STREAMS && slot < 0; s++)
                if (!p->streams[s])
                    slot = s;
            if (slot < 0) {
                GS_WARN("deviceplugin", "%s: too many ListAndWatch streams", p->resource);
                finish(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "too many ListAndWatch streams");
                return;
            }
            p->streams[slot] = c;
            c->st = S_STREAM_CLOSED;
            grpc_op op;
            memset(&op, 0, sizeof(op));
            op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
            op.data.recv_close_on_server.cancelled = &c->cancelled;
            c->refs++;
            grpc_call_start_batch(c->call, &op, 1, &c->closed, NULL);
            GS_INFO("deviceplugin", "%s: ListAndWatch opened", p->resource);
            stream_send(p, c);
            return;
        }
        grpc_slice in = flatten(c->in);
        char err[256] = "";
        uint8_t *ans = NULL;
        size_t len = 0;
        int code = GRPC_STATUS_UNIMPLEMENTED;
        if (c->method >= 0)
            code = gs__dp_answer(p, (enum gs_dp_call)c->method, GRPC_SLICE_START_PTR(in),
                                 GRPC_SLICE_LENGTH(in), &ans, &len, err, sizeof(err));
        else
            snprintf(err, sizeof(err), "unknown method");
        grpc_slice_unref(in);
        if (code != GRPC_STATUS_OK)
            GS_WARN("deviceplugin", "%s: %s", p->resource, err);
        finish(c, code == GRPC_STATUS_OK ? wrap(ans, len) : NULL, (grpc_status_code)code, err);
        return;
    }
    case S_DONE:
        free_call(c);
        return;
    default:
        return;
    }
}

static int serve(struct gs_dp_plugin *p, char *why, unsigned why_size)
{
    unlink(p->sock_path);
    p->cq = grpc_completion_queue_create_for_next(NULL);
    p->server = grpc_server_create(NULL, NULL);
    grpc_server_register_completion_queue(p->server, p->cq, NULL);
    char addr[420];
    snprintf(addr, sizeof(addr), "unix:%s", p->sock_path);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(p->server, addr, creds);
    grpc_server_credentials_release(creds);
    if (!port) {
        snprintf(why, why_size, "cannot serve on %s", p->sock_path);
        grpc_server_destroy(p->server);
        grpc_completion_queue_shutdown(p->cq);
        grpc_completion_queue_destroy(p->cq);
        p->server = NULL;
        return -1;
    }
    grpc_server_start(p->server);
    new_call(p);
    return 0;
}

static void unserve(struct gs_dp_plugin *p)
{
    if (!p->server)
        return;
    grpc_server_shutdown_and_notify(p->server, p->cq, p);
    grpc_server_cancel_all_calls(p->server);
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(
            p->cq,
            gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(5, GPR_TIMESPAN)),
            NULL);
        if (ev.type != GRPC_OP_COMPLETE || ev.tag == p)
            break;
        on_event(p, ev.tag, false);
    }
    grpc_server_destroy(p->server);
    p->server = NULL;
    p->requested = false;
    for (int s = 0; s < MAX_STREAMS; s++)
        if (p->streams[s]) {
            free_call(p->streams[s]);
            p->streams[s] = NULL;
        }
    grpc_completion_queue_shutdown(p->cq);
    while (grpc_completion_queue_next(p->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(p->cq);
    p->cq = NULL;
    unlink(p->sock_path);
}

/* Registration/Register on kubelet.sock. */
static int do_register(struct gs_dp_plugin *p, char *why, unsigned why_size)
{
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

static ino_t inode(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* The server thread: polls the queue, sends new device lists, and serves again when the
 * registrar asks (after a kubelet restart). The kubelet answers Register only after it has
 * called back GetDevicePluginOptions, so registration runs on another thread. */
static void *run(void *arg)
{
    struct gs_dp_plugin *p = arg;
    char why[512];
    while (!gs_flag_get(&p->stop)) {
        grpc_event ev = grpc_completion_queue_next(
            p->cq,
            gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(100, GPR_TIMESPAN)),
            NULL);
        if (ev.type == GRPC_OP_COMPLETE)
            on_event(p, ev.tag, ev.success);
        if (p->server && !p->requested)
            new_call(p);
        pthread_mutex_lock(&p->mu);
        uint64_t v = p->version;
        bool reserve = p->reserve;
        pthread_mutex_unlock(&p->mu);
        for (int s = 0; s < MAX_STREAMS; s++)
            if (p->streams[s] && p->streams[s]->sent_version != v)
                stream_send(p, p->streams[s]);
        if (reserve) {
            unserve(p);
            if (serve(p, why, sizeof(why)))
                GS_WARN("deviceplugin", "%s", why);
            pthread_mutex_lock(&p->mu);
            p->reserve = false;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
    unserve(p);
    return NULL;
}

/* The registrar: a kubelet restart removes our socket and makes a new kubelet.sock; then
 * serve again and register again. A failed registration is retried every second. */
static void *registrar(void *arg)
{
    struct gs_dp_plugin *p = arg;
    char why[512];
    bool registered = true;
    while (!gs_flag_get(&p->stop)) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
        ino_t k = inode(p->kubelet);
        bool gone = inode(p->sock_path) == 0;
        if (!k || gs_flag_get(&p->stop) || (registered && !gone && k == p->kubelet_ino))
            continue;
        GS_INFO("deviceplugin", "%s: kubelet %s; serving and registering again", p->resource,
                gone ? "removed our socket" : "restarted");
        pthread_mutex_lock(&p->mu);
        p->reserve = true;
        while (p->reserve && !gs_flag_get(&p->stop))
            pthread_cond_wait(&p->cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
        if (gs_flag_get(&p->stop))
            break;
        if (do_register(p, why, sizeof(why))) {
            GS_WARN("deviceplugin", "%s", why);
            registered = false;
            continue;
        }
        registered = true;
        p->kubelet_ino = k;
    }
    return NULL;
}

struct gs_dp_plugin *gs__dp_new(const char *resource, const struct gs_dp_device *devs, int n,
                                const struct gs_dp_mps *mps, gs_dp_pick_fn pick, void *pick_user)
{
    struct gs_dp_plugin *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    snprintf(p->resource, sizeof(p->resource), "%s", resource);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
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
    pthread_cond_destroy(&p->cv);
    free(p);
}

struct gs_dp_plugin *gs_dp_start(const char *dir, const char *resource, const char *socket,
                                 const struct gs_dp_device *devs, int n,
                                 const struct gs_dp_mps *mps, gs_dp_pick_fn pick, void *pick_user,
                                 char *why, unsigned why_size)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, grpc_init);
    struct gs_dp_plugin *p = gs__dp_new(resource, devs, n, mps, pick, pick_user);
    if (!p) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    snprintf(p->socket, sizeof(p->socket), "%s", socket);
    snprintf(p->sock_path, sizeof(p->sock_path), "%s/%s", dir, socket);
    snprintf(p->kubelet, sizeof(p->kubelet), "%s/kubelet.sock", dir);
    if (serve(p, why, why_size)) {
        gs__dp_free(p);
        return NULL;
    }
    pthread_create(&p->thread, NULL, run, p);
    if (do_register(p, why, why_size)) {
        gs_flag_set(&p->stop, 1);
        pthread_join(p->thread, NULL);
        gs__dp_free(p);
        return NULL;
    }
    p->kubelet_ino = inode(p->kubelet);
    GS_INFO("deviceplugin", "%s: %d devices on %s, registered", resource, p->ndevs, p->sock_path);
    pthread_create(&p->reg_thread, NULL, registrar, p);
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
    pthread_mutex_lock(&p->mu);
    gs_flag_set(&p->stop, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->reg_thread, NULL);
    pthread_join(p->thread, NULL);
    gs__dp_free(p);
}
