/* grpcserver.c - the kubelet plugins' one gRPC server (see grpcserver.h): the completion
 * queue and its thread, the calls as small state machines, server streams, serving again
 * and registering again after a kubelet restart.
 *
 * Tags on the queue: a struct call for the call's main state (NEW: it arrived; READ: its
 * request is read; DONE: its answer and status are sent), &call->sending for a stream's
 * message, &call->closed for a stream's close, the server itself for its shutdown. One request
 * for a new call is kept outstanding. The registrar asks the server thread to serve again
 * (reserve) and waits for it under mu; everything else is the server thread's. */
#include "grpcserver.h"

#include "../base/flag.h"
#include "../base/log.h"
#include "grpcunary.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
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
#define MAX_SOCKETS 4

enum state { S_NEW = 0, S_READ, S_DONE, S_STREAM };

struct call {
    enum state st;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
    grpc_byte_buffer *in, *out;
    const struct gs_grpc_service *svc; /* with m: the method called (NULL: unknown) */
    const struct gs_grpc_method *m;
    int cancelled;
    bool sending, closed; /* a stream's message in flight; its client gone */
    uint64_t sent_version;
    int refs; /* outstanding batches on a stream */
};

struct gs_grpcd {
    struct gs_grpcd_opts o; /* sockets and services point into sock[] and the caller's table */
    char sock[MAX_SOCKETS][420];
    const char *sockp[MAX_SOCKETS];
    char tag[128], kubelet[420];
    pthread_t thread, reg_thread;
    bool registrar;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool reserve; /* under mu: the registrar asks the server thread to serve again */
    volatile int stop;
    grpc_server *server;
    grpc_completion_queue *cq;
    bool requested; /* a request for a new call is outstanding */
    struct call *streams[MAX_STREAMS];
    ino_t kubelet_ino;
};

/* ---------- for the services' answers ---------- */

int gs_grpc_invalid(char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return GRPC_STATUS_INVALID_ARGUMENT;
}

int gs_grpc_status(char *why, size_t why_size, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return code;
}

int gs_grpc_no_memory(char *why, size_t why_size)
{
    snprintf(why, why_size, "out of memory");
    return GRPC_STATUS_RESOURCE_EXHAUSTED;
}

int gs_grpc_pack(const ProtobufCMessage *m, uint8_t **out, size_t *len, char *why, size_t why_size)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return gs_grpc_no_memory(why, why_size);
    protobuf_c_message_pack(m, b);
    *out = b;
    *len = n;
    return GRPC_STATUS_OK;
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

/* ---------- calls ---------- */

static void start_batch(struct gs_grpcd *d, struct call *c, grpc_op *ops, size_t n, void *tag)
{
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, tag, NULL);
    if (e != GRPC_CALL_OK)
        GS_WARN(d->o.log, "%s: start batch: error %d", d->tag, (int)e);
}

/* Keep one request for a new call outstanding; out of memory, the server thread tries again
 * on its next round. */
static void new_call(struct gs_grpcd *d)
{
    struct call *c = calloc(1, sizeof(*c));
    d->requested = c != NULL;
    if (!c)
        return;
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    grpc_server_request_call(d->server, &c->call, &c->details, &c->md, d->cq, d->cq, c);
}

static void free_call(struct call *c)
{
    grpc_byte_buffer *bufs[2] = {c->in, c->out};
    for (int k = 0; k < 2; k++)
        if (bufs[k])
            grpc_byte_buffer_destroy(bufs[k]);
    if (c->call)
        grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    free(c);
}

/* The method called, among every service's. */
static void find_method(struct gs_grpcd *d, struct call *c)
{
    for (int s = 0; s < d->o.nservices; s++)
        for (int m = 0; m < d->o.services[s].nmethods; m++)
            if (grpc_slice_str_cmp(c->details.method, d->o.services[s].methods[m].path) == 0) {
                c->svc = &d->o.services[s];
                c->m = &c->svc->methods[m];
            }
}

/* The last part of a method's path ("ListAndWatch"), for logs. */
static const char *short_name(const struct gs_grpc_method *m)
{
    const char *s = strrchr(m->path, '/');
    return s ? s + 1 : m->path;
}

/* Answer a unary call (or an unknown method) and close it. */
static void answer(struct gs_grpcd *d, struct call *c)
{
    grpc_slice in = flatten(c->in);
    char why[512] = "unknown method";
    uint8_t *ans = NULL;
    size_t len = 0;
    int code = GRPC_STATUS_UNIMPLEMENTED;
    if (c->m) {
        why[0] = '\0';
        code = c->svc->answer(c->svc->user, c->m->call, GRPC_SLICE_START_PTR(in),
                              GRPC_SLICE_LENGTH(in), &ans, &len, why, sizeof(why));
    }
    grpc_slice_unref(in);
    if (code != GRPC_STATUS_OK)
        GS_WARN(d->o.log, "%s: %s: %s", d->tag, c->m ? short_name(c->m) : "call", why);
    grpc_op ops[3];
    memset(ops, 0, sizeof(ops));
    size_t n = 0;
    if (code == GRPC_STATUS_OK) {
        c->out = wrap(ans, len);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->out;
    }
    grpc_slice details = grpc_slice_from_copied_string(code == GRPC_STATUS_OK ? "" : why);
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)code;
    ops[n++].data.send_status_from_server.status_details = &details;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    c->st = S_DONE;
    start_batch(d, c, ops, n, c);
    grpc_slice_unref(details);
    for (int s = 0; s < d->o.nservices; s++)
        if (d->o.services[s].answered && (!c->m || c->svc == &d->o.services[s]))
            d->o.services[s].answered(d->o.services[s].user);
}

/* Send a stream its answer as it is now (one message in flight at a time). */
static void stream_send(struct gs_grpcd *d, struct call *c)
{
    if (c->sending || c->closed)
        return;
    if (c->out) {
        grpc_byte_buffer_destroy(c->out);
        c->out = NULL;
    }
    uint8_t *b = NULL;
    size_t len = 0;
    char why[64];
    /* the version first: a change in between only sends the list again */
    uint64_t version = c->svc->version ? c->svc->version(c->svc->user) : 0;
    if (c->svc->answer(c->svc->user, c->m->call, NULL, 0, &b, &len, why, sizeof(why)) !=
        GRPC_STATUS_OK)
        return; /* out of memory: the next round sends it */
    c->out = wrap(b, len);
    c->sent_version = version;
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = c->out;
    c->sending = true;
    c->refs++;
    if (grpc_call_start_batch(c->call, &op, 1, &c->sending, NULL) != GRPC_CALL_OK) {
        c->sending = false;
        c->refs--;
    }
}

/* A streaming call whose request is read: keep it open, send it its first answer. */
static void stream_open(struct gs_grpcd *d, struct call *c)
{
    int slot = -1;
    for (int s = 0; s < MAX_STREAMS && slot < 0; s++)
        if (!d->streams[s])
            slot = s;
    if (slot < 0) {
        char why[128];
        snprintf(why, sizeof(why), "too many %s streams", short_name(c->m));
        GS_WARN(d->o.log, "%s: %s", d->tag, why);
        grpc_op ops[2];
        memset(ops, 0, sizeof(ops));
        grpc_slice details = grpc_slice_from_copied_string(why);
        ops[0].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        ops[0].data.send_status_from_server.status = GRPC_STATUS_RESOURCE_EXHAUSTED;
        ops[0].data.send_status_from_server.status_details = &details;
        ops[1].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        ops[1].data.recv_close_on_server.cancelled = &c->cancelled;
        c->st = S_DONE;
        start_batch(d, c, ops, 2, c);
        grpc_slice_unref(details);
        return;
    }
    d->streams[slot] = c;
    c->st = S_STREAM;
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &c->cancelled;
    c->refs++;
    grpc_call_start_batch(c->call, &op, 1, &c->closed, NULL);
    GS_INFO(d->o.log, "%s: %s opened", d->tag, short_name(c->m));
    stream_send(d, c);
}

/* A stream's message sent or its close seen: true when tag was one of a stream's. */
static bool stream_event(struct gs_grpcd *d, void *tag, bool ok)
{
    for (int s = 0; s < MAX_STREAMS; s++) {
        struct call *c = d->streams[s];
        if (!c || (tag != &c->sending && tag != &c->closed))
            continue;
        if (tag == &c->sending) {
            c->sending = false;
            c->closed |= !ok;
        } else {
            c->closed = true;
        }
        c->refs--;
        if (c->closed && c->refs == 0) {
            GS_INFO(d->o.log, "%s: %s closed", d->tag, short_name(c->m));
            free_call(c);
            d->streams[s] = NULL;
        }
        return true;
    }
    return false;
}

static void on_event(struct gs_grpcd *d, void *tag, bool ok)
{
    if (stream_event(d, tag, ok))
        return;
    struct call *c = tag;
    if (!ok || c->st == S_DONE) { /* a call ended, or the server shuts down */
        free_call(c);
        return;
    }
    if (c->st == S_NEW) {
        new_call(d); /* keep one request outstanding */
        find_method(d, c);
        grpc_op ops[2];
        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_RECV_MESSAGE;
        ops[1].data.recv_message.recv_message = &c->in;
        c->st = S_READ;
        start_batch(d, c, ops, 2, c);
        return;
    }
    if (c->st == S_READ) {
        if (c->m && c->m->stream)
            stream_open(d, c);
        else
            answer(d, c);
    }
}

/* ---------- serving ---------- */

static void drain_destroy(grpc_completion_queue *cq)
{
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
}

static void unlink_sockets(struct gs_grpcd *d)
{
    for (int k = 0; k < d->o.nsockets; k++)
        unlink(d->sock[k]);
}

static int serve(struct gs_grpcd *d, char *why, unsigned why_size)
{
    unlink_sockets(d);
    d->cq = grpc_completion_queue_create_for_next(NULL);
    d->server = grpc_server_create(NULL, NULL);
    grpc_server_register_completion_queue(d->server, d->cq, NULL);
    for (int k = 0; k < d->o.nsockets; k++) {
        char addr[440];
        snprintf(addr, sizeof(addr), "unix:%s", d->sock[k]);
        grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
        int port = grpc_server_add_http2_port(d->server, addr, creds);
        grpc_server_credentials_release(creds);
        if (!port) {
            snprintf(why, why_size, "cannot serve on %s", d->sock[k]);
            grpc_server_destroy(d->server);
            drain_destroy(d->cq);
            d->server = NULL;
            d->cq = NULL;
            return -1;
        }
    }
    grpc_server_start(d->server);
    new_call(d);
    return 0;
}

static void unserve(struct gs_grpcd *d)
{
    if (!d->server)
        return;
    grpc_server_shutdown_and_notify(d->server, d->cq, d);
    grpc_server_cancel_all_calls(d->server);
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(
            d->cq,
            gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(5, GPR_TIMESPAN)),
            NULL);
        if (ev.type != GRPC_OP_COMPLETE || ev.tag == d)
            break;
        on_event(d, ev.tag, false);
    }
    grpc_server_destroy(d->server);
    d->server = NULL;
    d->requested = false;
    for (int s = 0; s < MAX_STREAMS; s++)
        if (d->streams[s]) {
            free_call(d->streams[s]);
            d->streams[s] = NULL;
        }
    drain_destroy(d->cq);
    d->cq = NULL;
    unlink_sockets(d);
}

/* The server thread: polls the queue, sends streams what changed, and serves again when the
 * registrar asks (after a kubelet restart). */
static void *run(void *arg)
{
    struct gs_grpcd *d = arg;
    char why[512];
    while (!gs_flag_get(&d->stop)) {
        grpc_event ev = grpc_completion_queue_next(
            d->cq,
            gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(100, GPR_TIMESPAN)),
            NULL);
        if (ev.type == GRPC_OP_COMPLETE)
            on_event(d, ev.tag, ev.success);
        if (d->server && !d->requested)
            new_call(d);
        for (int s = 0; s < MAX_STREAMS; s++) {
            struct call *c = d->streams[s];
            if (c && c->svc->version && c->sent_version != c->svc->version(c->svc->user))
                stream_send(d, c);
        }
        pthread_mutex_lock(&d->mu);
        bool reserve = d->reserve;
        pthread_mutex_unlock(&d->mu);
        if (reserve) {
            unserve(d);
            if (serve(d, why, sizeof(why)))
                GS_WARN(d->o.log, "%s", why);
            pthread_mutex_lock(&d->mu);
            d->reserve = false;
            pthread_cond_broadcast(&d->cv);
            pthread_mutex_unlock(&d->mu);
        }
    }
    unserve(d);
    return NULL;
}

/* ---------- registration ---------- */

static ino_t inode(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* The registrar: a kubelet restart removes our socket and makes a new kubelet.sock; then
 * serve again and register again. A failed registration is retried every second. */
static void *registrar(void *arg)
{
    struct gs_grpcd *d = arg;
    char why[512];
    bool registered = true;
    while (!gs_flag_get(&d->stop)) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
        ino_t k = inode(d->kubelet);
        bool gone = inode(d->sock[0]) == 0;
        if (!k || gs_flag_get(&d->stop) || (registered && !gone && k == d->kubelet_ino))
            continue;
        GS_INFO(d->o.log, "%s: kubelet %s; serving and registering again", d->tag,
                gone ? "removed our socket" : "restarted");
        pthread_mutex_lock(&d->mu);
        d->reserve = true;
        while (d->reserve && !gs_flag_get(&d->stop))
            pthread_cond_wait(&d->cv, &d->mu);
        pthread_mutex_unlock(&d->mu);
        if (gs_flag_get(&d->stop))
            break;
        if (d->o.register_fn(d->o.register_user, why, sizeof(why))) {
            GS_WARN(d->o.log, "%s", why);
            registered = false;
            continue;
        }
        registered = true;
        d->kubelet_ino = k;
    }
    return NULL;
}

/* ---------- lifecycle ---------- */

static void free_server(struct gs_grpcd *d)
{
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d);
}

struct gs_grpcd *gs_grpcd_start(const struct gs_grpcd_opts *o, char *why, unsigned why_size)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, grpc_init);
    if (o->nsockets < 1 || o->nsockets > MAX_SOCKETS) {
        snprintf(why, why_size, "%s: %d sockets, expected 1 to %d", o->tag, o->nsockets,
                 MAX_SOCKETS);
        return NULL;
    }
    struct gs_grpcd *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    d->o = *o;
    snprintf(d->tag, sizeof(d->tag), "%s", o->tag);
    d->o.tag = d->tag;
    for (int k = 0; k < o->nsockets; k++) {
        snprintf(d->sock[k], sizeof(d->sock[k]), "%s", o->sockets[k]);
        d->sockp[k] = d->sock[k];
    }
    d->o.sockets = d->sockp;
    snprintf(d->kubelet, sizeof(d->kubelet), "%s", o->kubelet ? o->kubelet : "");
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (serve(d, why, why_size)) {
        free_server(d);
        return NULL;
    }
    pthread_create(&d->thread, NULL, run, d);
    if (!o->register_fn)
        return d;
    if (o->register_fn(o->register_user, why, why_size)) {
        gs_flag_set(&d->stop, 1);
        pthread_join(d->thread, NULL);
        free_server(d);
        return NULL;
    }
    d->kubelet_ino = inode(d->kubelet);
    d->registrar = true;
    pthread_create(&d->reg_thread, NULL, registrar, d);
    return d;
}

void gs_grpcd_stop(struct gs_grpcd *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    gs_flag_set(&d->stop, 1);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    if (d->registrar)
        pthread_join(d->reg_thread, NULL);
    pthread_join(d->thread, NULL);
    free_server(d);
}
