/* deviceplugin.c - the kubelet device plugin over gRPC core (see deviceplugin.h).
 *
 * Each plugin thread owns a completion queue and the server. Calls are driven as small state
 * machines tagged by their context: a new call arrives (NEW), its request is read (READ), the
 * answer is sent with the status (DONE). A ListAndWatch call stays open: its first list is
 * sent, later lists are sent when the device version moves (one message in flight at a
 * time), and its close is watched (CLOSED). Registration is a blocking client call on its own
 * queue. */
#include "deviceplugin.h"

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
    struct call *streams[MAX_STREAMS];
    ino_t kubelet_ino;
};

enum method { M_OPTIONS = 0, M_LIST, M_PREFERRED, M_ALLOCATE, M_PRESTART, M_UNKNOWN };

static const char *const paths[] = {
    "/v1beta1.DevicePlugin/GetDevicePluginOptions", "/v1beta1.DevicePlugin/ListAndWatch",
    "/v1beta1.DevicePlugin/GetPreferredAllocation", "/v1beta1.DevicePlugin/Allocate",
    "/v1beta1.DevicePlugin/PreStartContainer"};

/* ---------- byte buffers ---------- */

static grpc_byte_buffer *pack(const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    grpc_slice s = grpc_slice_malloc(n);
    protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer *b = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return b;
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

/* ---------- answers ---------- */

static grpc_byte_buffer *list_message(struct gs_dp_plugin *p, uint64_t *version)
{
    pthread_mutex_lock(&p->mu);
    int n = p->ndevs;
    V1beta1__Device *d = calloc((size_t)(n ? n : 1), sizeof(*d));
    V1beta1__Device **dp = calloc((size_t)(n ? n : 1), sizeof(*dp));
    for (int i = 0; i < n; i++) {
        v1beta1__device__init(&d[i]);
        d[i].id = p->devs[i].id;
        d[i].health = p->devs[i].healthy ? "Healthy" : "Unhealthy";
        dp[i] = &d[i];
    }
    V1beta1__ListAndWatchResponse r = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    r.n_devices = (size_t)n;
    r.devices = dp;
    grpc_byte_buffer *b = pack(&r.base);
    *version = p->version;
    pthread_mutex_unlock(&p->mu);
    free(d);
    free(dp);
    return b;
}

static const struct gs_dp_device *find_dev(struct gs_dp_plugin *p, const char *id)
{
    for (int i = 0; i < p->ndevs; i++)
        if (strcmp(p->devs[i].id, id) == 0)
            return &p->devs[i];
    return NULL;
}

static grpc_byte_buffer *allocate(struct gs_dp_plugin *p, grpc_slice in, grpc_status_code *code,
                                  char *err, size_t errn)
{
    V1beta1__AllocateRequest *req =
        v1beta1__allocate_request__unpack(NULL, GRPC_SLICE_LENGTH(in), GRPC_SLICE_START_PTR(in));
    if (!req) {
        *code = GRPC_STATUS_INVALID_ARGUMENT;
        snprintf(err, errn, "AllocateRequest does not decode");
        return NULL;
    }
    size_t nc = req->n_container_requests;
    V1beta1__ContainerAllocateResponse *cr = calloc(nc ? nc : 1, sizeof(*cr));
    V1beta1__ContainerAllocateResponse **crp = calloc(nc ? nc : 1, sizeof(*crp));
    V1beta1__ContainerAllocateResponse__EnvsEntry(*env)[4] = calloc(nc ? nc : 1, sizeof(*env));
    V1beta1__ContainerAllocateResponse__EnvsEntry *(*envp)[4] = calloc(nc ? nc : 1, sizeof(*envp));
    V1beta1__Mount *mount = calloc(nc ? nc : 1, sizeof(*mount));
    V1beta1__Mount **mountp = calloc(nc ? nc : 1, sizeof(*mountp));
    char(*vis)[2048] = calloc(nc ? nc : 1, sizeof(*vis));
    char(*lim)[1024] = calloc(nc ? nc : 1, sizeof(*lim));
    char pct[16];
    grpc_byte_buffer *out = NULL;
    pthread_mutex_lock(&p->mu);
    for (size_t c = 0; c < nc; c++) {
        const V1beta1__ContainerAllocateRequest *q = req->container_requests[c];
        v1beta1__container_allocate_response__init(&cr[c]);
        crp[c] = &cr[c];
        size_t off = 0, loff = 0;
        vis[c][0] = lim[c][0] = '\0';
        for (size_t k = 0; k < q->n_devices_ids; k++) {
            const struct gs_dp_device *d = find_dev(p, q->devices_ids[k]);
            if (!d) {
                *code = GRPC_STATUS_INVALID_ARGUMENT;
                snprintf(err, errn, "%s: unknown device '%s'", p->resource, q->devices_ids[k]);
                goto done;
            }
            if (!strstr(vis[c], d->uuid) && off < sizeof(vis[c]))
                off += (size_t)snprintf(vis[c] + off, sizeof(vis[c]) - off, "%s%s", off ? "," : "",
                                        d->uuid);
            if (p->mps.on && !strstr(lim[c], d->uuid) && loff < sizeof(lim[c]))
                loff += (size_t)snprintf(
                    lim[c] + loff, sizeof(lim[c]) - loff, "%s%s=%lluM", loff ? "," : "", d->uuid,
                    (unsigned long long)(p->mps.mem_mib /
                                         (uint64_t)(p->mps.replicas > 0 ? p->mps.replicas : 1)));
        }
        int ne = 0;
        v1beta1__container_allocate_response__envs_entry__init(&env[c][ne]);
        env[c][ne].key = "NVIDIA_VISIBLE_DEVICES";
        env[c][ne].value = vis[c];
        envp[c][ne] = &env[c][ne];
        ne++;
        if (p->mps.on) {
            snprintf(pct, sizeof(pct), "%d", 100 / (p->mps.replicas > 0 ? p->mps.replicas : 1));
            const char *kv[3][2] = {{"CUDA_MPS_PIPE_DIRECTORY", p->mps.pipe_dir},
                                    {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct},
                                    {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", lim[c]}};
            for (int k = 0; k < 3; k++, ne++) {
                v1beta1__container_allocate_response__envs_entry__init(&env[c][ne]);
                env[c][ne].key = (char *)kv[k][0];
                env[c][ne].value = (char *)kv[k][1];
                envp[c][ne] = &env[c][ne];
            }
            v1beta1__mount__init(&mount[c]);
            mount[c].container_path = p->mps.pipe_dir;
            mount[c].host_path = p->mps.pipe_dir;
            mountp[c] = &mount[c];
            cr[c].n_mounts = 1;
            cr[c].mounts = &mountp[c];
        }
        cr[c].n_envs = (size_t)ne;
        cr[c].envs = envp[c];
    }
    V1beta1__AllocateResponse r = V1BETA1__ALLOCATE_RESPONSE__INIT;
    r.n_container_responses = nc;
    r.container_responses = crp;
    out = pack(&r.base);
    *code = GRPC_STATUS_OK;
done:
    pthread_mutex_unlock(&p->mu);
    free(cr);
    free(crp);
    free(env);
    free(envp);
    free(mount);
    free(mountp);
    free(vis);
    free(lim);
    v1beta1__allocate_request__free_unpacked(req, NULL);
    return out;
}

static grpc_byte_buffer *preferred(struct gs_dp_plugin *p, grpc_slice in, grpc_status_code *code,
                                   char *err, size_t errn)
{
    V1beta1__PreferredAllocationRequest *req = v1beta1__preferred_allocation_request__unpack(
        NULL, GRPC_SLICE_LENGTH(in), GRPC_SLICE_START_PTR(in));
    if (!req) {
        *code = GRPC_STATUS_INVALID_ARGUMENT;
        snprintf(err, errn, "PreferredAllocationRequest does not decode");
        return NULL;
    }
    size_t nc = req->n_container_requests;
    V1beta1__ContainerPreferredAllocationResponse *cr = calloc(nc ? nc : 1, sizeof(*cr));
    V1beta1__ContainerPreferredAllocationResponse **crp = calloc(nc ? nc : 1, sizeof(*crp));
    char **ids = calloc((size_t)GS_DP_MAX_DEVS * (nc ? nc : 1), sizeof(char *));
    char(*picked)[96] = calloc(GS_DP_MAX_DEVS, 96);
    for (size_t c = 0; c < nc; c++) {
        const V1beta1__ContainerPreferredAllocationRequest *q = req->container_requests[c];
        v1beta1__container_preferred_allocation_response__init(&cr[c]);
        crp[c] = &cr[c];
        char **out = ids + (size_t)GS_DP_MAX_DEVS * c;
        int n = 0, want = q->allocation_size;
        for (size_t k = 0; k < q->n_must_include_deviceids && n < want; k++)
            out[n++] = q->must_include_deviceids[k];
        /* the scheduler's choice for a pod waiting here, when it is available */
        int np = p->pick ? p->pick(p->pick_user, p->resource, want, picked, GS_DP_MAX_DEVS) : 0;
        for (int k = 0; k < np && n < want; k++)
            for (size_t a = 0; a < q->n_available_deviceids; a++)
                if (strcmp(q->available_deviceids[a], picked[k]) == 0) {
                    bool dup = false;
                    for (int j = 0; j < n; j++)
                        dup |= strcmp(out[j], picked[k]) == 0;
                    if (!dup)
                        out[n++] = q->available_deviceids[a];
                }
        /* else pack: devices of the GPU that offers the most, in order, before the next GPU */
        size_t na = q->n_available_deviceids;
        int *gpu = calloc(na ? na : 1, sizeof(int)), *left = calloc(GS_DP_MAX_DEVS, sizeof(int));
        bool *taken = calloc(na ? na : 1, sizeof(bool));
        pthread_mutex_lock(&p->mu);
        for (size_t a = 0; gpu && left && taken && a < na; a++) {
            const struct gs_dp_device *d = find_dev(p, q->available_deviceids[a]);
            gpu[a] = d && d->gpu >= 0 && d->gpu < GS_DP_MAX_DEVS ? d->gpu : 0;
            for (int j = 0; j < n; j++)
                taken[a] |= strcmp(out[j], q->available_deviceids[a]) == 0;
            left[gpu[a]]++;
        }
        pthread_mutex_unlock(&p->mu);
        while (gpu && left && taken && n < want) {
            int best = -1;
            for (size_t a = 0; a < na; a++)
                if (!taken[a] && (best < 0 || left[gpu[a]] > left[gpu[best]]))
                    best = (int)a;
            if (best < 0)
                break;
            taken[best] = true;
            out[n++] = q->available_deviceids[best];
        }
        free(gpu);
        free(left);
        free(taken);
        cr[c].n_deviceids = (size_t)n;
        cr[c].deviceids = out;
    }
    V1beta1__PreferredAllocationResponse r = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
    r.n_container_responses = nc;
    r.container_responses = crp;
    grpc_byte_buffer *b = pack(&r.base);
    *code = GRPC_STATUS_OK;
    free(cr);
    free(crp);
    free(ids);
    free(picked);
    v1beta1__preferred_allocation_request__free_unpacked(req, NULL);
    return b;
}

/* ---------- the server ---------- */

static void start_batch(struct call *c, grpc_op *ops, size_t n)
{
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, c, NULL);
    if (e != GRPC_CALL_OK)
        GS_WARN("deviceplugin", "start batch: error %d", (int)e);
}

static struct call *new_call(struct gs_dp_plugin *p)
{
    struct call *c = calloc(1, sizeof(*c));
    c->st = S_NEW;
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    grpc_server_request_call(p->server, &c->call, &c->details, &c->md, p->cq, p->cq, c);
    return c;
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
    c->out = list_message(p, &c->sent_version);
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
        c->method = M_UNKNOWN;
        for (int m = 0; m < M_UNKNOWN; m++)
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
        grpc_slice in = flatten(c->in);
        grpc_status_code code = GRPC_STATUS_OK;
        char err[256] = "";
        grpc_byte_buffer *out = NULL;
        switch (c->method) {
        case M_OPTIONS: {
            V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
            o.get_preferred_allocation_available = 1;
            out = pack(&o.base);
            break;
        }
        case M_LIST: {
            int slot = -1;
            for (int s = 0; s < MAX_STREAMS && slot < 0; s++)
                if (!p->streams[s])
                    slot = s;
            if (slot < 0) {
                code = GRPC_STATUS_RESOURCE_EXHAUSTED;
                snprintf(err, sizeof(err), "too many ListAndWatch streams");
                break;
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
            grpc_slice_unref(in);
            return;
        }
        case M_ALLOCATE:
            out = allocate(p, in, &code, err, sizeof(err));
            break;
        case M_PREFERRED:
            out = preferred(p, in, &code, err, sizeof(err));
            break;
        case M_PRESTART: {
            V1beta1__PreStartContainerResponse r = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
            out = pack(&r.base);
            break;
        }
        default:
            code = GRPC_STATUS_UNIMPLEMENTED;
            snprintf(err, sizeof(err), "unknown method");
        }
        grpc_slice_unref(in);
        if (code != GRPC_STATUS_OK)
            GS_WARN("deviceplugin", "%s: %s", p->resource, err);
        finish(c, out, code, err);
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
    while (!p->stop) {
        grpc_event ev = grpc_completion_queue_next(
            p->cq,
            gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(100, GPR_TIMESPAN)),
            NULL);
        if (ev.type == GRPC_OP_COMPLETE)
            on_event(p, ev.tag, ev.success);
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
    while (!p->stop) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
        ino_t k = inode(p->kubelet);
        bool gone = inode(p->sock_path) == 0;
        if (!k || p->stop || (registered && !gone && k == p->kubelet_ino))
            continue;
        GS_INFO("deviceplugin", "%s: kubelet %s; serving and registering again", p->resource,
                gone ? "removed our socket" : "restarted");
        pthread_mutex_lock(&p->mu);
        p->reserve = true;
        while (p->reserve && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
        if (p->stop)
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

struct gs_dp_plugin *gs_dp_start(const char *dir, const char *resource, const char *socket,
                                 const struct gs_dp_device *devs, int n,
                                 const struct gs_dp_mps *mps, gs_dp_pick_fn pick, void *pick_user,
                                 char *why, unsigned why_size)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, grpc_init);
    struct gs_dp_plugin *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    snprintf(p->resource, sizeof(p->resource), "%s", resource);
    snprintf(p->socket, sizeof(p->socket), "%s", socket);
    snprintf(p->sock_path, sizeof(p->sock_path), "%s/%s", dir, socket);
    snprintf(p->kubelet, sizeof(p->kubelet), "%s/kubelet.sock", dir);
    pthread_mutex_init(&p->mu, NULL);
    p->ndevs = n < GS_DP_MAX_DEVS ? n : GS_DP_MAX_DEVS;
    memcpy(p->devs, devs, sizeof(devs[0]) * (size_t)p->ndevs);
    p->version = 1;
    if (mps)
        p->mps = *mps;
    p->pick = pick;
    p->pick_user = pick_user;
    pthread_cond_init(&p->cv, NULL);
    if (serve(p, why, why_size)) {
        free(p);
        return NULL;
    }
    pthread_create(&p->thread, NULL, run, p);
    if (do_register(p, why, why_size)) {
        p->stop = 1;
        pthread_join(p->thread, NULL);
        free(p);
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
    int m = n < GS_DP_MAX_DEVS ? n : GS_DP_MAX_DEVS;
    if (!devs)
        m = 0;
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
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->reg_thread, NULL);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}
