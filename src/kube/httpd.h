/* httpd.h - the HTTP server of gpusched's daemons (libmicrohttpd): the scheduler's and the
 * extender's endpoints and the agent's /healthz and /metrics all go through it.
 *
 * Invariants, whatever the clients do:
 * - each connection has its own thread, so a client that sends slowly, or a handler that
 *   waits (an extender bind on a slow API server), never holds up another connection:
 *   /healthz answers while other clients dribble;
 * - at most max_conns connections at once, at most max_conns_per_ip from one address (a
 *   client that opens many cannot take every slot); further ones are closed on accept;
 * - a connection that sends or takes nothing for timeout_s seconds is closed;
 * - a request body over max_body bytes is answered 413 with the limit in the message: at
 *   once when its Content-Length says so (the body is never read), else as soon as it passes
 *   the bound; request headers are bounded by libmicrohttpd (32 KiB);
 * - allocation failures answer 503 "out of memory" (from a reply made at start) and never
 *   crash.
 * The handler sees one whole request and fills a reply. Handlers run on many threads at once
 * and must be thread-safe. */
#ifndef GS_KUBE_HTTPD_H
#define GS_KUBE_HTTPD_H

#include "../base/buf.h"

#include <jansson.h>

#include <stddef.h>

#define GS_HTTPD_MAX_CONNS        256
#define GS_HTTPD_MAX_CONNS_PER_IP 64
#define GS_HTTPD_TIMEOUT_S        10
#define GS_HTTPD_MAX_BODY         ((size_t)1 << 20)

struct gs_error;
struct gs_httpd;

struct gs_httpd_opts {
    const char *name;     /* in log lines: "agent", "scheduler" */
    const char *bind;     /* IPv4 address to listen on; NULL: all */
    int port;             /* 0: any free port (see gs_httpd_port) */
    int max_conns;        /* <= 0: GS_HTTPD_MAX_CONNS */
    int max_conns_per_ip; /* <= 0: GS_HTTPD_MAX_CONNS_PER_IP */
    int timeout_s;        /* idle read/write timeout; <= 0: GS_HTTPD_TIMEOUT_S */
    size_t max_body;      /* 0: GS_HTTPD_MAX_BODY */
};

struct gs_httpd_request {
    const char *method;
    const char *url;  /* the path, without the query string */
    const char *body; /* NUL-terminated; "" without a body */
    size_t len;
};

struct gs_httpd_reply {
    unsigned status;  /* 200 unless the handler sets it */
    const char *type; /* Content-Type, a string that outlives the reply; "text/plain" */
    struct gs_buf body;
};

/* Answer one request into rep. Returns 0, or a negative GS_E* code: GS_ENOMEM answers 503
 * "out of memory", any other 500; rep is then discarded. */
typedef int (*gs_httpd_fn)(void *user, const struct gs_httpd_request *req,
                           struct gs_httpd_reply *rep);

/* Set rep's status, type (kept as a pointer) and body (a copy of text). Returns 0 or
 * GS_ENOMEM. */
int gs_httpd_reply(struct gs_httpd_reply *rep, unsigned status, const char *type, const char *text);

/* Set rep's status, type application/json and body (v as json_dumps writes it with flags:
 * JSON_COMPACT, JSON_INDENT(n)...). Returns 0, or GS_ENOMEM (also for a NULL v: a value that
 * could not be built). */
int gs_httpd_reply_json(struct gs_httpd_reply *rep, unsigned status, const json_t *v, size_t flags);

/* Listen and serve until gs_httpd_stop. fn(user, ...) answers each request. Returns 0 and
 * *out, or GS_EINVAL (a bind that is not an IPv4 address), GS_EIO (the port cannot be bound),
 * GS_ENOMEM, with err saying which. */
int gs_httpd_start(const struct gs_httpd_opts *opts, gs_httpd_fn fn, void *user,
                   struct gs_httpd **out, struct gs_error *err);

/* The port the server listens on. */
int gs_httpd_port(const struct gs_httpd *h);

/* Close the listener and every connection, wait for running handlers, free h. NULL is a
 * no-op. */
void gs_httpd_stop(struct gs_httpd *h);

#endif
