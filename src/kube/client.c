/* client.c - libcurl transport for the Kubernetes API: requests with credentials and TLS,
 * paginated lists, streaming watches. sched/ builds its informers on top of it. */
#include "client.h"

#include "../base/clock.h"
#include "../base/flag.h"
#include "../base/buf.h"
#include "../base/error.h"
#include "../base/log.h"

#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gs_kube_client {
    struct gs_kube_config cfg;
    struct gs_kube_client_opts opts;
    pthread_mutex_t mu;
    double tokens, last_refill;
    double tokens2, last_refill2; /* the second lane */
    double token_read_at;
    char token[4096];
    /* idle curl handles: each keeps its TLS connection to the API server alive, so requests
     * after the first skip the handshake */
    pthread_mutex_t pool_mu;
    int npool;
    CURL *pool[128]; /* idle handles kept: at least one per bind worker (sched/binder.h) */
    /* every handle's TLS sessions: a connection opened after the first resumes the session
     * (no certificate signed by the API server, none verified here) */
    CURLSH *share;
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *user)
{
    (void)h;
    (void)a;
    pthread_mutex_lock(&((struct gs_kube_client *)user)->share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *user)
{
    (void)h;
    pthread_mutex_unlock(&((struct gs_kube_client *)user)->share_mu[d]);
}

int gs_kube_client_new(struct gs_kube_config *cfg, const struct gs_kube_client_opts *opts,
                       struct gs_kube_client **out, struct gs_error *err)
{
    pthread_once(&curl_once, curl_init);
    struct gs_kube_client *c = calloc(1, sizeof(*c));
    if (!c)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    c->cfg = *cfg;
    memset(cfg, 0, sizeof(*cfg));
    c->opts.qps = opts && opts->qps > 0 ? opts->qps : 50;
    c->opts.burst = opts && opts->burst > 0 ? opts->burst : 100;
    c->opts.timeout_s = opts && opts->timeout_s > 0 ? opts->timeout_s : 30;
    c->tokens = c->tokens2 = c->opts.burst;
    c->last_refill = c->last_refill2 = gs_clock_mono();
    c->token_read_at = -1e9;
    snprintf(c->token, sizeof(c->token), "%s", c->cfg.token);
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->pool_mu, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_mu[i], NULL);
    /* without the share each handle keeps its own sessions: requests still work */
    if ((c->share = curl_share_init())) {
        curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
        curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    }
    *out = c;
    return 0;
}

void gs_kube_client_free(struct gs_kube_client *c)
{
    if (!c)
        return;
    gs_kube_config_release(&c->cfg);
    for (int i = 0; i < c->npool; i++)
        curl_easy_cleanup(c->pool[i]);
    if (c->share)
        curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->share_mu[i]);
    pthread_mutex_destroy(&c->pool_mu);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const struct gs_kube_config *gs_kube_client_config(const struct gs_kube_client *c)
{
    return &c->cfg;
}

/* Token bucket: wait until a token is free. */
static void pace_lane(struct gs_kube_client *c, double *tokens, double *last)
{
    for (;;) {
        pthread_mutex_lock(&c->mu);
        double t = gs_clock_mono();
        *tokens = fmin(c->opts.burst, *tokens + (t - *last) * c->opts.qps);
        *last = t;
        if (*tokens >= 1) {
            *tokens -= 1;
            pthread_mutex_unlock(&c->mu);
            return;
        }
        double wait = (1 - *tokens) / c->opts.qps;
        pthread_mutex_unlock(&c->mu);
        struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static void bearer(struct gs_kube_client *c, char *out, size_t n)
{
    pthread_mutex_lock(&c->mu);
    if (c->cfg.token_file[0] && gs_clock_mono() - c->token_read_at > 60) {
        FILE *f = fopen(c->cfg.token_file, "r");
        if (f) {
            size_t l = fread(c->token, 1, sizeof(c->token) - 1, f);
            c->token[l] = '\0';
            while (l && (c->token[l - 1] == '\n' || c->token[l - 1] == '\r'))
                c->token[--l] = '\0';
            fclose(f);
            c->token_read_at = gs_clock_mono();
        }
    }
    snprintf(out, n, "%s", c->token);
    pthread_mutex_unlock(&c->mu);
}

/* Back to the pool with its options cleared and its connection kept. */
static void handle_release(struct gs_kube_client *c, CURL *h)
{
    curl_easy_reset(h);
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool < (int)(sizeof(c->pool) / sizeof(c->pool[0]))) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (h)
        curl_easy_cleanup(h);
}

static CURL *handle(struct gs_kube_client *c, const char *method, const char *url,
                    struct curl_slist **hdrs, const char *content_type)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool > 0)
        h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->pool_mu);
    if (!h && (h = curl_easy_init()) && c->share)
        curl_easy_setopt(h, CURLOPT_SHARE, c->share); /* kept by curl_easy_reset */
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "gpusched/0.1");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    /* HTTP/1.1: every handle keeps a connection of its own, so HTTP/2 would never share one
     * between requests, and its framing is work on both ends (the API server's HTTP/2 loops
     * were several percent of its CPU in the DRA bench, nghttp2 about 3 % of gpusched's) */
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    if (c->cfg.insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->cfg.ca_pem) {
        struct curl_blob b = {c->cfg.ca_pem, c->cfg.ca_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    }
    if (c->cfg.cert_pem && c->cfg.key_pem) {
        struct curl_blob cb = {c->cfg.cert_pem, c->cfg.cert_len, CURL_BLOB_COPY};
        struct curl_blob kb = {c->cfg.key_pem, c->cfg.key_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    *hdrs = curl_slist_append(*hdrs, "Accept: application/json");
    char tok[4200];
    bearer(c, tok, sizeof(tok));
    if (tok[0]) {
        char auth[4300];
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
        *hdrs = curl_slist_append(*hdrs, auth);
    }
    if (content_type) {
        char ct[160];
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        *hdrs = curl_slist_append(*hdrs, ct);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
    return h;
}

static size_t collect(char *p, size_t sz, size_t n, void *user)
{
    struct gs_buf *b = user;
    return gs_buf_append(b, p, sz * n) == 0 ? sz * n : 0;
}

static const char *status_text(long s)
{
    switch (s) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "";
    }
}

static int request(struct gs_kube_client *c, int lane, const char *method, const char *path,
                   const char *content_type, const json_t *body, json_t **out, long *status,
                   struct gs_error *err);

int gs_kube_request(struct gs_kube_client *c, const char *method, const char *path,
                    const char *content_type, const json_t *body, json_t **out, long *status,
                    struct gs_error *err)
{
    return request(c, 1, method, path, content_type, body, out, status, err);
}

int gs_kube_request_lane2(struct gs_kube_client *c, const char *method, const char *path,
                          const char *content_type, const json_t *body, json_t **out, long *status,
                          struct gs_error *err)
{
    return request(c, 2, method, path, content_type, body, out, status, err);
}

static int request(struct gs_kube_client *c, int lane, const char *method, const char *path,
                   const char *content_type, const json_t *body, json_t **out, long *status,
                   struct gs_error *err)
{
    if (out)
        *out = NULL;
    if (status)
        *status = 0;
    char url[4096];
    snprintf(url, sizeof(url), "%s%s", c->cfg.server, path);
    char *payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !payload)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    if (lane == 2)
        pace_lane(c, &c->tokens2, &c->last_refill2);
    else
        pace_lane(c, &c->tokens, &c->last_refill);
    struct curl_slist *hdrs = NULL;
    CURL *h = handle(c, method, url, &hdrs,
                     body ? (content_type ? content_type : "application/json") : NULL);
    if (!h) {
        free(payload);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    struct gs_buf reply;
    gs_buf_init(&reply, (size_t)256 << 20);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(c->opts.timeout_s * 1000));
    if (payload) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
    }
    CURLcode cc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    handle_release(c, h);
    curl_slist_free_all(hdrs);
    free(payload);
    int rc = 0;
    if (status)
        *status = code;
    if (cc != CURLE_OK) {
        rc = gs_error_set(err, GS_EIO, "%s %s: %s (%s)", method, path, curl_easy_strerror(cc),
                          c->cfg.server);
        goto out;
    }
    bool failed = code < 200 || code >= 300;
    /* the answer read only when the caller takes it or it says why the request failed (a
     * write's answer is the whole object: most callers drop it) */
    json_t *j = reply.len && (out || failed) ? json_loadb(reply.data, reply.len, 0, NULL) : NULL;
    if (failed) {
        const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
        rc = gs_error_set(err,
                          code == 404   ? GS_ENOTFOUND
                          : code >= 500 ? GS_EIO
                                        : GS_EINVAL,
                          "%s %s: %ld %s: %s", method, path, code, status_text(code),
                          msg ? msg : (reply.data ? reply.data : "no message"));
        json_decref(j);
        goto out;
    }
    if (out)
        *out = j;
    else
        json_decref(j);
out:
    gs_buf_release(&reply);
    return rc;
}

static int list_lane(struct gs_kube_client *c, int lane, const char *path, gs_kube_item_fn fn,
                     void *user, char *rv, size_t rv_size, struct gs_error *err)
{
    char cont[2048] = "";
    bool restarted = false;
    for (;;) {
        char p[4096];
        const char *sep = strchr(path, '?') ? "&" : "?";
        if (cont[0]) {
            char *esc = curl_easy_escape(NULL, cont, 0);
            snprintf(p, sizeof(p), "%s%slimit=500&continue=%s", path, sep, esc ? esc : "");
            curl_free(esc);
        } else {
            snprintf(p, sizeof(p), "%s%slimit=500", path, sep);
        }
        json_t *page = NULL;
        long status = 0;
        int rc = request(c, lane, "GET", p, NULL, NULL, &page, &status, err);
        if (rc) {
            if (status == 410 && cont[0] && !restarted) {
                /* the continue token expired: list again from the start, after telling fn
                 * to drop what the first pages gave it */
                restarted = true;
                cont[0] = '\0';
                int frc = fn(NULL, user);
                if (frc)
                    return frc;
                continue;
            }
            return rc;
        }
        const json_t *md = json_object_get(page, "metadata");
        const char *r = json_string_value(json_object_get(md, "resourceVersion"));
        if (rv && r)
            snprintf(rv, rv_size, "%s", r);
        size_t i;
        const json_t *item;
        json_array_foreach(json_object_get(page, "items"), i, item)
        {
            int frc = fn(item, user);
            if (frc) {
                json_decref(page);
                return frc;
            }
        }
        const char *next = json_string_value(json_object_get(md, "continue"));
        snprintf(cont, sizeof(cont), "%s", next ? next : "");
        json_decref(page);
        if (!cont[0])
            return 0;
    }
}

int gs_kube_list(struct gs_kube_client *c, const char *path, gs_kube_item_fn fn, void *user,
                 char *rv, size_t rv_size, struct gs_error *err)
{
    return list_lane(c, 1, path, fn, user, rv, rv_size, err);
}

int gs_kube_list_lane2(struct gs_kube_client *c, const char *path, gs_kube_item_fn fn, void *user,
                       char *rv, size_t rv_size, struct gs_error *err)
{
    return list_lane(c, 2, path, fn, user, rv, rv_size, err);
}

struct watch_state {
    struct gs_buf line;
    gs_kube_event_fn fn;
    void *user;
    int result;
    volatile int *stop;
};

static size_t on_stream(char *p, size_t sz, size_t n, void *user)
{
    struct watch_state *w = user;
    size_t total = sz * n;
    for (size_t i = 0; i < total; i++) {
        if (p[i] != '\n') {
            if (gs_buf_append(&w->line, &p[i], 1)) {
                w->result = GS_ENOMEM;
                return 0;
            }
            continue;
        }
        if (w->line.len == 0)
            continue;
        json_t *ev = json_loadb(w->line.data, w->line.len, 0, NULL);
        gs_buf_reset(&w->line);
        if (!ev)
            continue;
        const char *type = json_string_value(json_object_get(ev, "type"));
        int rc = w->fn(type ? type : "", json_object_get(ev, "object"), w->user);
        json_decref(ev);
        if (rc) {
            w->result = rc;
            return 0; /* stop the transfer */
        }
    }
    if (w->stop && gs_flag_get(w->stop))
        return 0;
    return total;
}

static int progress(void *user, curl_off_t a, curl_off_t b, curl_off_t c2, curl_off_t d)
{
    struct watch_state *w = user;
    (void)a;
    (void)b;
    (void)c2;
    (void)d;
    return w->stop && gs_flag_get(w->stop) ? 1 : 0;
}

int gs_kube_watch(struct gs_kube_client *c, const char *path, const char *rv, int timeout_s,
                  gs_kube_event_fn fn, void *user, volatile int *stop, struct gs_error *err)
{
    char url[4096];
    const char *sep = strchr(path, '?') ? "&" : "?";
    snprintf(url, sizeof(url), "%s%s%swatch=1&allowWatchBookmarks=true&timeoutSeconds=%d%s%s",
             c->cfg.server, path, sep, timeout_s, rv && rv[0] ? "&resourceVersion=" : "",
             rv && rv[0] ? rv : "");
    struct curl_slist *hdrs = NULL;
    CURL *h = handle(c, "GET", url, &hdrs, NULL);
    if (!h)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    struct watch_state w = {.fn = fn, .user = user, .stop = stop};
    gs_buf_init(&w.line, (size_t)64 << 20);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_stream);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)timeout_s + 15);
    CURLcode cc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    int rc = 0;
    if (w.result) {
        rc = w.result;
    } else if (stop && gs_flag_get(stop)) {
        rc = 0;
    } else if (code && (code < 200 || code >= 300)) {
        rc = gs_error_set(err, code == 410 ? GS_ENOTFOUND : GS_EIO, "WATCH %s: %ld %s", path, code,
                          status_text(code));
    } else if (cc != CURLE_OK && cc != CURLE_OPERATION_TIMEDOUT) {
        rc = gs_error_set(err, GS_EIO, "WATCH %s: %s", path, curl_easy_strerror(cc));
    }
    gs_buf_release(&w.line);
    return rc;
}
