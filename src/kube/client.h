/* client.h - a Kubernetes API client over HTTPS (HTTP/1.1, libcurl) speaking JSON (jansson).
 *
 * Requests carry the config's credentials (client certificate, bearer token re-read from
 * its file at most once a minute) and verify TLS against the config's CA. A token bucket
 * (qps, burst) paces requests, as client-go does; watches are not paced. Errors carry the
 * HTTP status and the API's Status message: "POST /api/v1/.../binding: 409 Conflict: pod x is
 * already assigned to node y". A client is a heap object shared by threads: every call
 * uses its own curl handle and the limiter has a lock. */
#ifndef GS_KUBE_CLIENT_H
#define GS_KUBE_CLIENT_H

#include "config.h"

#include <jansson.h>
#include <stdbool.h>

struct gs_kube_client;
struct gs_error;

struct gs_kube_client_opts {
    double qps;       /* <= 0: 50 */
    int burst;        /* <= 0: 100 */
    double timeout_s; /* per request; <= 0: 30 */
};

/* Takes ownership of cfg's buffers (cfg is cleared). */
int gs_kube_client_new(struct gs_kube_config *cfg, const struct gs_kube_client_opts *opts,
                       struct gs_kube_client **out, struct gs_error *err);
void gs_kube_client_free(struct gs_kube_client *c);
const struct gs_kube_config *gs_kube_client_config(const struct gs_kube_client *c);

/* One request. body may be NULL. On 2xx returns 0 and *out (may be NULL) holds the parsed
 * reply. Otherwise returns GS_ENOTFOUND (404), GS_EINVAL (other 4xx), GS_EIO (5xx, network,
 * TLS) and *status holds the HTTP status (0 without a reply). */
int gs_kube_request(struct gs_kube_client *c, const char *method, const char *path,
                    const char *content_type, const json_t *body, json_t **out, long *status,
                    struct gs_error *err);

/* Same, paced by a second token bucket of the same rate (a separate lane, as client-go gives
 * kube-scheduler's event recorder its own client): background work such as Events does not
 * slow down bindings. */
int gs_kube_request_lane2(struct gs_kube_client *c, const char *method, const char *path,
                          const char *content_type, const json_t *body, json_t **out, long *status,
                          struct gs_error *err);

typedef int (*gs_kube_item_fn)(const json_t *item, void *user);
/* LIST with pagination (limit 500, continue tokens). Calls fn for every item; a non-zero
 * return from fn stops and is returned. rv receives the list's resourceVersion. A 410 on a
 * continue token restarts the list once from the beginning: fn is first called with a NULL
 * item, meaning "drop every item given so far" (they come again). */
int gs_kube_list(struct gs_kube_client *c, const char *path, gs_kube_item_fn fn, void *user,
                 char *rv, size_t rv_size, struct gs_error *err);
/* Same, paced on the second lane (periodic background lists do not slow down bindings). */
int gs_kube_list_lane2(struct gs_kube_client *c, const char *path, gs_kube_item_fn fn, void *user,
                       char *rv, size_t rv_size, struct gs_error *err);

typedef int (*gs_kube_event_fn)(const char *type, const json_t *object, void *user);
/* WATCH from resource version rv (allowWatchBookmarks) for at most timeout_s seconds. Calls fn
 * per event (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR); fn returning non-zero ends the
 * watch early. stop, when non-NULL and set, ends it too. Returns 0 when the watch ended,
 * GS_EIO on transport errors, or fn's value. */
int gs_kube_watch(struct gs_kube_client *c, const char *path, const char *rv, int timeout_s,
                  gs_kube_event_fn fn, void *user, volatile int *stop, struct gs_error *err);

#endif
