/* httpd.c - the daemons' HTTP server over libmicrohttpd (see httpd.h): the bounds on
 * connections, time and bodies live here once, so sched/endpoints.c (scheduler and extender
 * endpoints) and agent/exporter.c (/healthz, /metrics, /status) only answer whole requests.
 *
 * libmicrohttpd runs a listening thread and one thread per connection (poll, so descriptors
 * past FD_SETSIZE are fine) and enforces the connection limits and the idle timeout itself.
 * The access callback gathers the body into a bounded buffer per request, freed when the
 * request completes, and calls the handler once the request is whole. Replies for the error
 * paths (413, 500, 503) are made at start, so answering them allocates nothing. */
#include "httpd.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/log.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* past this much discarded body (in units of max_body) a client that keeps sending is cut */
#define DISCARD_FACTOR 16
/* libmicrohttpd's own complaints (refused connections, timeouts) are logged at most this
 * often; the rest at debug level, counted */
#define LOG_EVERY_S 10.0

struct gs_httpd {
    char name[32];
    struct MHD_Daemon *d;
    gs_httpd_fn fn;
    void *user;
    size_t max_body;
    struct MHD_Response *too_large, *no_memory, *internal;
    pthread_mutex_t log_mu;
    double log_at;
    unsigned long log_quiet;
};

/* One request's state, from its headers to its completion. */
struct request {
    struct gs_buf body;
    uint64_t seen; /* body bytes received, kept or not */
    bool over;     /* the body passed max_body: answer 413 */
};

int gs_httpd_reply(struct gs_httpd_reply *rep, unsigned status, const char *type, const char *text)
{
    rep->status = status;
    rep->type = type;
    gs_buf_reset(&rep->body);
    return gs_buf_puts(&rep->body, text) ? GS_ENOMEM : 0;
}

int gs_httpd_reply_json(struct gs_httpd_reply *rep, unsigned status, const json_t *v, size_t flags)
{
    rep->status = status;
    rep->type = "application/json";
    gs_buf_reset(&rep->body);
    char *text = v ? json_dumps(v, flags) : NULL;
    if (!text)
        return GS_ENOMEM;
    int rc = gs_buf_puts(&rep->body, text) ? GS_ENOMEM : 0;
    free(text);
    return rc;
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
    struct gs_httpd *h = cls;
    char msg[256];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
        msg[--n] = '\0';
    pthread_mutex_lock(&h->log_mu);
    double now = gs_clock_mono();
    bool quiet = h->log_at > 0 && now - h->log_at < LOG_EVERY_S;
    unsigned long more = h->log_quiet;
    if (quiet) {
        h->log_quiet++;
    } else {
        h->log_at = now;
        h->log_quiet = 0;
    }
    pthread_mutex_unlock(&h->log_mu);
    if (quiet)
        GS_DEBUG("httpd", "%s: %s", h->name, msg);
    else if (more)
        GS_WARN("httpd", "%s: %s (and %lu more such messages in the last %.0fs)", h->name, msg,
                more, LOG_EVERY_S);
    else
        GS_WARN("httpd", "%s: %s", h->name, msg);
}

/* A declared Content-Length over max (or not a number we can read: libmicrohttpd refuses
 * those before we see them). */
static bool declared_too_long(const char *v, size_t max)
{
    uint64_t n = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        if (n > (UINT64_MAX - 9) / 10)
            return true;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    return n > max;
}

static enum MHD_Result queue_text(struct MHD_Connection *c, unsigned status, const char *type,
                                  struct gs_buf *body, struct gs_httpd *h)
{
    struct MHD_Response *r;
    if (body->len > 0) {
        r = MHD_create_response_from_buffer_with_free_callback(body->len, body->data, free);
        if (r)
            body->data = NULL; /* the response owns it now */
    } else {
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    gs_buf_release(body);
    if (!r)
        return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, h->no_memory);
    if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES) {
        MHD_destroy_response(r);
        return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, h->no_memory);
    }
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **ctx)
{
    struct gs_httpd *h = cls;
    struct request *q = *ctx;
    (void)version;
    if (!q) {
        /* headers are in: refuse a body said to be too large before reading any of it */
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && declared_too_long(cl, h->max_body))
            return MHD_queue_response(c, MHD_HTTP_CONTENT_TOO_LARGE, h->too_large);
        q = calloc(1, sizeof(*q));
        if (!q)
            return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, h->no_memory);
        gs_buf_init(&q->body, h->max_body + 1);
        *ctx = q;
        return MHD_YES;
    }
    if (*size) {
        q->seen += *size;
        if (!q->over) {
            int rc = gs_buf_append(&q->body, data, *size);
            if (rc) {
                /* past the bound (or out of memory): keep nothing more, answer at the end */
                q->over = rc == GS_ENOSPC;
                gs_buf_release(&q->body);
                if (!q->over) {
                    *size = 0;
                    return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, h->no_memory);
                }
            }
        }
        *size = 0;
        /* a client that goes on sending long past the bound is cut off */
        if (q->over && q->seen > (uint64_t)h->max_body * DISCARD_FACTOR)
            return MHD_NO;
        return MHD_YES;
    }
    if (q->over)
        return MHD_queue_response(c, MHD_HTTP_CONTENT_TOO_LARGE, h->too_large);
    struct gs_httpd_request req = {
        .method = method,
        .url = url,
        .body = q->body.data ? q->body.data : "",
        .len = q->body.len,
    };
    struct gs_httpd_reply rep = {.status = MHD_HTTP_OK, .type = "text/plain"};
    gs_buf_init(&rep.body, 0);
    int rc = h->fn(h->user, &req, &rep);
    if (rc) {
        gs_buf_release(&rep.body);
        if (rc == GS_ENOMEM)
            return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, h->no_memory);
        return MHD_queue_response(c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->internal);
    }
    return queue_text(c, rep.status, rep.type ? rep.type : "text/plain", &rep.body, h);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode toe)
{
    struct request *q = *ctx;
    (void)cls;
    (void)c;
    (void)toe;
    if (q) {
        gs_buf_release(&q->body);
        free(q);
        *ctx = NULL;
    }
}

/* A reply made once and queued on any connection (libmicrohttpd counts its references). */
static struct MHD_Response *fixed(const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (r && MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain") != MHD_YES) {
        MHD_destroy_response(r);
        r = NULL;
    }
    return r;
}

static void release(struct gs_httpd *h)
{
    if (h->too_large)
        MHD_destroy_response(h->too_large);
    if (h->no_memory)
        MHD_destroy_response(h->no_memory);
    if (h->internal)
        MHD_destroy_response(h->internal);
    pthread_mutex_destroy(&h->log_mu);
    free(h);
}

int gs_httpd_start(const struct gs_httpd_opts *o, gs_httpd_fn fn, void *user, struct gs_httpd **out,
                   struct gs_error *err)
{
    *out = NULL;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)o->port);
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    if (o->port < 0 || o->port > 65535)
        return gs_error_set(err, GS_EINVAL, "port %d: expected 0 to 65535", o->port);
    if (o->bind && inet_pton(AF_INET, o->bind, &addr.sin_addr) != 1)
        return gs_error_set(err, GS_EINVAL, "bind address '%s': expected an IPv4 address", o->bind);
    struct gs_httpd *h = calloc(1, sizeof(*h));
    if (!h)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    pthread_mutex_init(&h->log_mu, NULL);
    snprintf(h->name, sizeof(h->name), "%s", o->name ? o->name : "http");
    h->fn = fn;
    h->user = user;
    h->max_body = o->max_body ? o->max_body : GS_HTTPD_MAX_BODY;
    unsigned conns = (unsigned)(o->max_conns > 0 ? o->max_conns : GS_HTTPD_MAX_CONNS);
    unsigned per_ip =
        (unsigned)(o->max_conns_per_ip > 0 ? o->max_conns_per_ip : GS_HTTPD_MAX_CONNS_PER_IP);
    unsigned timeout = (unsigned)(o->timeout_s > 0 ? o->timeout_s : GS_HTTPD_TIMEOUT_S);
    char msg[160];
    snprintf(msg, sizeof(msg), "request body over the limit of %zu bytes\n", h->max_body);
    h->too_large = fixed(msg);
    h->no_memory = fixed("out of memory\n");
    h->internal = fixed("internal error\n");
    if (!h->too_large || !h->no_memory || !h->internal) {
        release(h);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    h->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO |
            MHD_USE_ERROR_LOG,
        (uint16_t)o->port, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_log, h,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT, conns,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
    if (!h->d) {
        int port = o->port;
        release(h);
        return gs_error_set(err, GS_EIO, "cannot serve HTTP on %s:%d", o->bind ? o->bind : "*",
                            port);
    }
    GS_DEBUG("httpd",
             "%s: port %d, %u connections (%u per address), idle timeout %us, "
             "bodies up to %zu bytes",
             h->name, gs_httpd_port(h), conns, per_ip, timeout, h->max_body);
    *out = h;
    return 0;
}

int gs_httpd_port(const struct gs_httpd *h)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? (int)i->port : -1;
}

void gs_httpd_stop(struct gs_httpd *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    release(h);
}
