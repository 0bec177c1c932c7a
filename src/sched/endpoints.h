/* endpoints.h - the scheduler daemon's HTTP endpoints, one handler for kube/httpd.c:
 *   GET /healthz        200 "ok", or 500 once the daemon hit a fatal error (lost its lease);
 *   GET /readyz         200 once the Node and Pod informers and the DRA feed have listed
 *                       (the first cycle waits for the same), else 503;
 *   GET /debug/pending  the last cycle's verdict per pending pod (JSON; [] before the first);
 *   GET /metrics        Prometheus text (sched/metrics.h);
 *   GET /ui             the dashboard: one self-contained HTML page (inline CSS and script,
 *                       no external asset) that reads /ui/state every 2 s and draws it;
 *   GET /ui/state       the dashboard's JSON document (sched/uistate.h), built from one
 *                       snapshot of the store and the tenancy objects, each copied under
 *                       its lock:
 *     {version: 1, generation (the store's change counter), time (Unix s), scheduler, mode
 *      (scheduler|extender), leader, synced (informers listed), dynamic_mig,
 *      nodes: [{name, model ("" without GPUs), ready (true|false|null: no condition),
 *               cordoned, layout_guessed (GPU indexes unknown), problem (why gpusched
 *               cannot model it; absent when it can),
 *               gpus: [{index (physical, as gpusched.io/devices names it), model, mode
 *                       (whole|fraction|mig|timeslice|mps), healthy, recarving (a re-carve
 *                       is pending: laid out as asked), memory_mib, allocated (0..1),
 *                       mig:   slices: [{profile, start, size (memory slices), holder
 *                              ("ns/name" or null), held (used by no pod: not advertised
 *                              yet)}], memory_slices (the GPU's);
 *                       other: holders: [{pod "ns/name", share ("1", "0.5", "replica")}],
 *                              replicas and replicas_used (timeslice, mps)}]}],
 *      queues: [{name, parent, weight, priority, borrowing (used > deserved somewhere),
 *                resources: [{resource, unit, deserved, used, borrowed (used beyond
 *                             deserved), limit (null: none)}]}]  (as tenancy counts them),
 *      pending: [{namespace, pod, queue, priority, reason, message, nominated}]  (our pods
 *                without a node, in arrival order, with /debug/pending's verdict; reason ""
 *                before a cycle looked at the pod),
 *      events: [{seq, time, kind: bind {namespace, pod, node, devices}
 *                                | preempt {namespace, pod, node, priority, victims
 *                                           ["ns/name"], gpu_hours, recarving}
 *                                | recarve {node, gpu, from, to, generation}}]  (the last
 *               64, oldest first; layouts as "whole" or "3g.40gb@0,1g.10gb@4")}
 *   POST /filter, /prioritize, /bind  kube-scheduler's extender verbs (sched/extender.h), in
 *                       extender mode only.
 * Other methods get 405 (on /ui and /ui/state in extender mode too: the dashboard is read
 * only), other paths 404. Thread-safe: the server calls it from many threads
 * at once; it reads through the components' APIs, each taking its own lock. */
#ifndef GS_SCHED_ENDPOINTS_H
#define GS_SCHED_ENDPOINTS_H

#include "../kube/httpd.h"
#include "uistate.h"

struct gs_extender;
struct gs_claims;

/* What the endpoints answer from (none owned; all outlive the server). */
struct gs_endpoints {
    const volatile int *fatal;    /* base/flag.h: the daemon hit a fatal error */
    struct gs_extender *extender; /* extender mode: answers POST; else NULL */
    struct gs_uistate_src ui;     /* its store, metrics... serve the other endpoints too */
    struct gs_claims *claims;     /* its DRA feed (ready once listed), or NULL */
};

/* A gs_httpd_fn; cls is a struct gs_endpoints. */
int gs__endpoints_handle(void *cls, const struct gs_httpd_request *req, struct gs_httpd_reply *rep);

#endif
