/* endpoints.h - the scheduler daemon's HTTP endpoints, one handler for kube/httpd.c:
 *   GET /healthz        200 "ok", or 500 once the daemon hit a fatal error (lost its lease);
 *   GET /readyz         200 once the Node and Pod informers have listed, else 503;
 *   GET /debug/pending  the last cycle's verdict per pending pod (JSON; [] before the first);
 *   GET /metrics        Prometheus text (sched/metrics.h);
 *   POST /filter, /prioritize, /bind  kube-scheduler's extender verbs (sched/extender.h), in
 *                       extender mode only.
 * Other methods get 405, other paths 404. Thread-safe: the server calls it from many threads
 * at once; it takes the daemon's locks as it reads. */
#ifndef GS_SCHED_ENDPOINTS_H
#define GS_SCHED_ENDPOINTS_H

#include "../kube/httpd.h"

/* A gs_httpd_fn; cls is the daemon's struct gs_sched. */
int gs__endpoints_handle(void *cls, const struct gs_httpd_request *req, struct gs_httpd_reply *rep);

#endif
