/* binder.c - the scheduler's write lanes (sched/binder.h): bounded job queues drained by the
 * bind workers and the background writer over kube/client.c. The cycle output
 * (sched/cycleout.c) queues binds and writes; a failed bind gives the pod back to the store
 * (sched/store.c) in backoff. */
#include "binder.h"

#include "../base/buf.h"
#include "../base/clock.h"
#include "../base/error.h"
#include "../base/log.h"
#include "claims.h"
#include "events.h"
#include "journal.h"
#include "metrics.h"
#include "store.h"
#include "volbind.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* how long a chained claim write waits for the watch to show the write before it */
#define SETTLE_S 1.0

struct gs_jobq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct gs_job *v;
    int head, n, cap;
    bool closing;
};

/* A bind whose volumes are written, waiting for its claims to be bound (the waiter's). */
struct volwait {
    struct gs_job j;
    double until, next, pause; /* monotonic s */
    size_t k;                  /* the first claim of the job's "wait" not seen bound */
};

struct gs_binder {
    struct gs_binder_deps d;
    struct gs_jobq bindq, volq, bgq, evq;
    pthread_t t_bind[GS_BIND_WORKERS], t_vol[GS_VOL_WORKERS], t_bg, t_ev, t_wait;
    int binding;              /* binds a worker holds (atomic) */
    struct gs_events *events; /* the Events written lately, as series */
    /* the binds waiting for their claims, under wmu; wcv wakes the waiter (a new one, stop) */
    pthread_mutex_t wmu;
    pthread_cond_t wcv;
    struct volwait *w;
    int nw, capw;
    bool wstop;
    int warmed; /* connections gs__binder_warm opened (the daemon's main thread only) */
};

static void jobq_init(struct gs_jobq *q, int cap)
{
    memset(q, 0, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->v = calloc((size_t)cap, sizeof(*q->v));
    q->cap = q->v ? cap : 0;
}

/* Returns false when full (the caller drops or handles the job). */
static bool jobq_push(struct gs_jobq *q, const struct gs_job *j)
{
    pthread_mutex_lock(&q->mu);
    bool ok = q->n < q->cap && !q->closing;
    if (ok) {
        q->v[(q->head + q->n) % q->cap] = *j;
        q->n++;
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return ok;
}

static bool jobq_pop(struct gs_jobq *q, struct gs_job *j)
{
    pthread_mutex_lock(&q->mu);
    while (q->n == 0 && !q->closing)
        pthread_cond_wait(&q->cv, &q->mu);
    bool ok = q->n > 0;
    if (ok) {
        *j = q->v[q->head];
        q->head = (q->head + 1) % q->cap;
        q->n--;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return ok;
}

static int jobq_len(struct gs_jobq *q)
{
    pthread_mutex_lock(&q->mu);
    int n = q->n;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static void jobq_close(struct gs_jobq *q)
{
    pthread_mutex_lock(&q->mu);
    q->closing = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void jobq_release(struct gs_jobq *q)
{
    for (int k = 0; k < q->n; k++) {
        json_decref(q->v[(q->head + k) % q->cap].body);
        json_decref(q->v[(q->head + k) % q->cap].vol);
    }
    free(q->v);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

void gs__binder_write_later(struct gs_binder *s, const char *method, const char *path,
                            const char *ctype, json_t *body)
{
    struct gs_job j;
    memset(&j, 0, sizeof(j));
    j.kind = GS_JOB_WRITE;
    snprintf(j.method, sizeof(j.method), "%s", method);
    snprintf(j.path, sizeof(j.path), "%s", path);
    snprintf(j.ctype, sizeof(j.ctype), "%s", ctype ? ctype : "");
    j.body = body;
    if (!jobq_push(&s->bgq, &j)) {
        GS_WARN("scheduler", "background queue full: dropping %s %s", method, path);
        json_decref(body);
    }
}

void gs__binder_writes_later(struct gs_binder *s, json_t *writes)
{
    struct gs_job j;
    memset(&j, 0, sizeof(j));
    j.kind = GS_JOB_WRITES;
    j.body = writes;
    if (!jobq_push(&s->bgq, &j)) {
        GS_WARN("scheduler", "background queue full: dropping %zu writes", json_array_size(writes));
        json_decref(writes);
    }
}

void gs__binder_post_event(struct gs_binder *s, json_t *ev)
{
    if (!ev)
        return;
    struct gs_job j;
    memset(&j, 0, sizeof(j));
    const char *ns =
        json_string_value(json_object_get(json_object_get(ev, "metadata"), "namespace"));
    snprintf(j.path, sizeof(j.path), "/apis/events.k8s.io/v1/namespaces/%s/events",
             ns ? ns : "default");
    /* a new Event is POSTed; a repeat's series is patched onto it (created whole if gone) */
    bool create = gs__events_observe(s->events, ev, gs_clock_wall()) == GS_EVENTS_CREATE;
    j.kind = create ? GS_JOB_WRITE : GS_JOB_EVENT_SERIES;
    j.body = ev;
    j.t0 = gs_clock_mono();
    if (!jobq_push(&s->evq, &j)) {
        GS_WARN("scheduler", "Event queue full: dropping %s",
                create ? "an Event" : "a repeat of an Event");
        json_decref(ev);
    }
}

void gs__binder_emit_event(struct gs_binder *s, const struct gs_kube_pod *p, const char *type,
                           const char *reason, const char *action, const char *note)
{
    gs__binder_post_event(s, gs_kube_event(p, type, reason, action, note, s->d.identity));
}

void gs__binder_events_retain(struct gs_binder *s, const char *const *uids, int n)
{
    if (gs__events_retain(s->events, uids, n))
        GS_WARN("scheduler", "out of memory: Events of bound or deleted pods kept a while longer");
}

/* A repeat's series: PATCHed onto its Event; a 404 (the Event expired, or its first write was
 * lost) creates it whole, series and all, as client-go does. */
static void write_series(struct gs_binder *s, const struct gs_job *j, struct gs_error *err)
{
    char path[sizeof(j->path) + 300];
    const char *name =
        json_string_value(json_object_get(json_object_get(j->body, "metadata"), "name"));
    snprintf(path, sizeof(path), "%s/%s", j->path, name ? name : "");
    json_t *patch = gs__events_series_patch(j->body);
    long status = 0;
    int rc = patch ? gs_kube_request_lane2(s->d.kc, "PATCH", path,
                                           "application/strategic-merge-patch+json", patch, NULL,
                                           &status, err)
                   : GS_ENOMEM;
    json_decref(patch);
    if (rc && status == 404) {
        gs_error_init(err);
        rc = gs_kube_request_lane2(s->d.kc, "POST", j->path, NULL, j->body, NULL, NULL, err);
    }
    if (rc)
        GS_WARN("scheduler", "Event %s: %s", path, err->msg);
}

static int run_writes(struct gs_binder *s, const json_t *writes, bool lane2, struct gs_error *err);

/* Whether a bind is queued or held by a worker. */
static bool binds_busy(struct gs_binder *s)
{
    return __atomic_load_n(&s->binding, __ATOMIC_ACQUIRE) > 0 || jobq_len(&s->bindq) > 0;
}

/* The Events' writer: each waits while binds are queued or in flight, up to
 * GS_EVENT_YIELD_S after it was queued, then goes on the second lane. */
static void *ev_worker(void *arg)
{
    struct gs_binder *s = arg;
    struct gs_job j;
    while (jobq_pop(&s->evq, &j)) {
        while (gs_clock_mono() - j.t0 < GS_EVENT_YIELD_S && binds_busy(s)) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        struct gs_error err;
        gs_error_init(&err);
        if (j.kind == GS_JOB_EVENT_SERIES)
            write_series(s, &j, &err);
        else if (gs_kube_request_lane2(s->d.kc, "POST", j.path, NULL, j.body, NULL, NULL, &err))
            GS_WARN("scheduler", "%s", err.msg);
        json_decref(j.body);
    }
    return NULL;
}

static void *bg_worker(void *arg)
{
    struct gs_binder *s = arg;
    struct gs_job j;
    while (jobq_pop(&s->bgq, &j)) {
        struct gs_error err;
        gs_error_init(&err);
        if (j.kind == GS_JOB_WRITES) {
            if (run_writes(s, j.body, true, &err))
                GS_WARN("scheduler", "%s", err.msg);
        } else if (gs_kube_request_lane2(s->d.kc, j.method, j.path, j.ctype[0] ? j.ctype : NULL,
                                         j.body, NULL, NULL, &err))
            GS_WARN("scheduler", "%s", err.msg);
        json_decref(j.body);
    }
    return NULL;
}

/* A bind that cannot go on: its devices back in the store, the pod in backoff. */
static void bind_failed(struct gs_binder *s, const struct gs_job *j)
{
    gs__metrics_record_latency(s->d.metrics, gs_clock_mono() - j->t0, 2);
    gs__store_give_back(s->d.store, j->pod.ns, j->pod.name, j->pod.uid);
}

/* A sequence of writes (sched/binder.h), in order, on the first lane or (lane2) the second.
 * Returns 0, or non-zero with err saying which failed. */
static int run_writes(struct gs_binder *s, const json_t *writes, bool lane2, struct gs_error *err)
{
    size_t wi;
    json_t *w;
    char rv[64] = "";
    json_array_foreach(writes, wi, w)
    {
        const char *method = json_string_value(json_object_get(w, "method"));
        const char *ctype = json_string_value(json_object_get(w, "ctype"));
        bool post = method && strcmp(method, "POST") == 0;
        json_t *body = json_object_get(w, "body");
        json_t *md = json_object_get(body, "metadata");
        if (json_is_true(json_object_get(w, "chain")) && rv[0] && json_is_object(md)) {
            json_object_set_new(md, "resourceVersion", json_string(rv));
            /* settle: [ns, name] of a claim whose watch is to show the last write first (the
             * API server's cache then holds it: no stale read retried against etcd); a
             * watch that lags past the bound only costs the API server that retry */
            json_t *at = json_object_get(w, "settle");
            if (s->d.claims && json_array_size(at) == 2)
                gs_claims_wait_rv(s->d.claims, json_string_value(json_array_get(at, 0)),
                                  json_string_value(json_array_get(at, 1)), rv, SETTLE_S);
        }
        /* the answer parsed only when the next write takes its resourceVersion */
        bool keep = json_is_true(json_object_get(json_array_get(writes, wi + 1), "chain"));
        json_t *resp = NULL;
        long status = 0;
        int rc = (lane2 ? gs_kube_request_lane2 : gs_kube_request)(
            s->d.kc, method ? method : "PATCH", json_string_value(json_object_get(w, "path")),
            ctype  ? ctype
            : post ? NULL
                   : "application/merge-patch+json",
            body, keep ? &resp : NULL, &status, err);
        const char *got = json_string_value(
            json_object_get(json_object_get(resp, "metadata"), "resourceVersion"));
        snprintf(rv, sizeof(rv), "%s", rc == 0 && got ? got : "");
        json_decref(resp);
        if (rc && post && status == 409) {
            gs_error_init(err);
            rc = 0;
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* The pod's ResourceClaims: protected, allocated and reserved for it before it is bound.
 * Returns 0, or non-zero with the claims' assumed allocations forgotten. Takes j->body. */
static int write_claims(struct gs_binder *s, struct gs_job *j)
{
    struct gs_error err;
    gs_error_init(&err);
    int rc = run_writes(s, j->body, false, &err);
    if (rc) {
        gs_error_prefix(&err, "writing its ResourceClaims");
        GS_WARN("scheduler", "bind %s/%s: %s", j->pod.ns, j->pod.name, err.msg);
        size_t wi;
        json_t *w;
        json_array_foreach(j->body, wi, w)
        {
            const char *uid = json_string_value(
                json_object_get(json_object_get(json_object_get(w, "body"), "metadata"), "uid"));
            if (s->d.claims && uid)
                gs_claims_forget(s->d.claims, uid);
        }
    }
    json_decref(j->body);
    j->body = NULL;
    return rc;
}

/* After a 409 on its Binding: whether the pod is on a node now (or gone). Any other conflict
 * (the API server refuses a Binding for a pod that gained a scheduling gate, say) gives the
 * pod back, else it would stay assumed with no watch event to undo it. */
static bool pod_assigned(struct gs_binder *s, const struct gs_job *j)
{
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", j->pod.ns, j->pod.name);
    json_t *o = NULL;
    struct gs_error err;
    gs_error_init(&err);
    long status = 0;
    if (gs_kube_request(s->d.kc, "GET", path, NULL, NULL, &o, &status, &err))
        return status == 404;
    const json_t *spec = json_object_get(o, "spec");
    const char *node = json_string_value(json_object_get(spec, "nodeName"));
    const char *uid = json_string_value(json_object_get(json_object_get(o, "metadata"), "uid"));
    bool assigned = (node && node[0]) || (uid && strcmp(uid, j->pod.uid) != 0);
    json_decref(o);
    return assigned;
}

/* The job's pod as the object writers take it: its name, namespace and UID, nothing else. */
static void job_pod(const struct gs_job *j, struct gs_kube_pod *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->ns, sizeof(p->ns), "%s", j->pod.ns);
    snprintf(p->name, sizeof(p->name), "%s", j->pod.name);
    snprintf(p->uid, sizeof(p->uid), "%s", j->pod.uid);
}

static void bind_one(struct gs_binder *s, struct gs_job *j)
{
    struct gs_error err;
    gs_error_init(&err);
    long status = 0;
    if (write_claims(s, j)) {
        bind_failed(s, j);
        return;
    }
    struct gs_kube_pod pod;
    job_pod(j, &pod);
    json_t *b = gs_kube_binding(&pod, j->node);
    if (j->devices[0])
        json_object_set_new(json_object_get(b, "metadata"), "annotations",
                            json_pack("{s:s}", GS_DEVICES_ANNOTATION, j->devices));
    int rc = gs_kube_request(s->d.kc, "POST", j->path, NULL, b, NULL, &status, &err);
    json_decref(b);
    if (rc == 0) {
        gs__metrics_record_latency(s->d.metrics, gs_clock_mono() - j->t0, 0);
        gs__events_forget(s->events, j->pod.uid); /* its FailedScheduling series end */
        char note[700];
        snprintf(note, sizeof(note), "Successfully assigned %s/%s to %s%s%s", j->pod.ns,
                 j->pod.name, j->node, j->devices[0] ? " with " : "", j->devices);
        gs__binder_emit_event(s, &pod, "Normal", "Scheduled", "Binding", note);
        GS_INFO("scheduler", "%s/%s -> %s %s", j->pod.ns, j->pod.name, j->node, j->devices);
        gs__journal_add(s->d.journal, "bind",
                        json_pack("{s:s, s:s, s:s, s:s}", "namespace", j->pod.ns, "pod",
                                  j->pod.name, "node", j->node, "devices", j->devices));
        return;
    }
    if (status == 404 || (status == 409 && pod_assigned(s, j))) {
        /* gone, or assigned already (the watch will tell) */
        gs__metrics_record_latency(s->d.metrics, gs_clock_mono() - j->t0, 2);
        GS_INFO("scheduler", "bind %s/%s: %s", j->pod.ns, j->pod.name, err.msg);
        return;
    }
    GS_WARN("scheduler", "bind %s/%s: %s", j->pod.ns, j->pod.name, err.msg);
    bind_failed(s, j);
}

/* A connection opened for the binds to come: its answer and failure do not matter. */
static void warm_one(struct gs_binder *s)
{
    struct gs_error err;
    gs_error_init(&err);
    if (gs_kube_request(s->d.kc, "GET", "/version", NULL, NULL, NULL, NULL, &err))
        GS_DEBUG("scheduler", "opening a connection: %s", err.msg);
}

static void *bind_worker(void *arg)
{
    struct gs_binder *s = arg;
    struct gs_job j;
    while (jobq_pop(&s->bindq, &j)) {
        if (j.kind == GS_JOB_WARM) {
            warm_one(s);
            continue;
        }
        __atomic_add_fetch(&s->binding, 1, __ATOMIC_ACQ_REL);
        bind_one(s, &j);
        __atomic_sub_fetch(&s->binding, 1, __ATOMIC_ACQ_REL);
    }
    return NULL;
}

void gs__binder_warm(struct gs_binder *s, int n)
{
    if (!s)
        return;
    struct gs_job j;
    memset(&j, 0, sizeof(j));
    j.kind = GS_JOB_WARM;
    while (s->warmed < n && s->warmed < GS_BIND_WORKERS && jobq_push(&s->bindq, &j))
        s->warmed++;
}

/* Whether claim ns/name is bound (status.phase Bound); 0 no, 1 yes, -1 gone or unreadable. */
static int claim_bound(struct gs_binder *s, const char *ns, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/persistentvolumeclaims/%s", ns, name);
    json_t *o = NULL;
    struct gs_error err;
    gs_error_init(&err);
    long status = 0;
    if (gs_kube_request(s->d.kc, "GET", path, NULL, NULL, &o, &status, &err))
        return status == 404 ? -1 : 0;
    const char *phase = json_string_value(json_object_get(json_object_get(o, "status"), "phase"));
    int bound = phase && strcmp(phase, "Bound") == 0;
    json_decref(o);
    return bound;
}

static void forget_volumes(struct gs_binder *s, const json_t *wait)
{
    size_t i;
    const json_t *c;
    json_array_foreach(wait, i, c)
        gs_volassume_drop(s->d.vols, json_string_value(json_object_get(c, "namespace")),
                          json_string_value(json_object_get(c, "name")));
}

/* kube-scheduler's VolumeBinding PreBind, first half: write the volumes' claimRefs and the
 * provisioned claims' selected-node. Returns 0, or non-zero with why. */
static int write_volumes(struct gs_binder *s, const json_t *vol, char *why, size_t n)
{
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(vol, "writes"), i, w)
    {
        struct gs_error err;
        gs_error_init(&err);
        const char *path = json_string_value(json_object_get(w, "path"));
        if (gs_kube_request(s->d.kc, "PATCH", path, "application/merge-patch+json",
                            json_object_get(w, "body"), NULL, NULL, &err)) {
            snprintf(why, n, "binding volumes: %s", err.msg);
            return 1;
        }
    }
    return 0;
}

/* Why claim w (an entry of a job's "wait") is still not bound at the timeout: who was to bind
 * it (sched/volbind.h: gs_volbind_writes says). */
static void timeout_why(const json_t *w, double timeout, char *why, size_t n)
{
    const char *name = json_string_value(json_object_get(w, "name"));
    const char *cls = json_string_value(json_object_get(w, "class"));
    const char *prov = json_string_value(json_object_get(w, "provisioner"));
    const char *pv = json_string_value(json_object_get(w, "volume"));
    int o = snprintf(why, n,
                     "binding volumes: timed out after %.0f s waiting for persistentvolumeclaim "
                     "\"%s\" to be bound",
                     timeout, name ? name : "");
    size_t at = o < 0 ? 0 : (size_t)o < n ? (size_t)o : n - 1;
    if (pv)
        snprintf(why + at, n - at,
                 ": the volume controller has not bound it to "
                 "persistentvolume \"%s\"",
                 pv);
    else if (cls && prov)
        snprintf(why + at, n - at,
                 ": storageclass \"%s\" provisions it with \"%s\", which has not created its "
                 "volume%s%s%s",
                 cls, prov, json_is_false(json_object_get(w, "driver")) ? " (no CSIDriver \"" : "",
                 json_is_false(json_object_get(w, "driver")) ? prov : "",
                 json_is_false(json_object_get(w, "driver")) ? "\" is registered)" : "");
}

/* The job's volumes failed: why in an Event, the assumed volumes forgotten, the pod back in
 * backoff. Takes the job's body and volume work. */
static void volumes_failed(struct gs_binder *s, struct gs_job *j, const char *why)
{
    GS_WARN("scheduler", "bind %s/%s: %s", j->pod.ns, j->pod.name, why);
    struct gs_kube_pod pod;
    job_pod(j, &pod);
    gs__binder_emit_event(s, &pod, "Warning", "FailedScheduling", "Scheduling", why);
    forget_volumes(s, json_object_get(j->vol, "wait"));
    json_decref(j->body);
    json_decref(j->vol);
    bind_failed(s, j);
}

/* The job's claims are bound: its Binding, on a bind worker (here when their queue is full).
 * Takes the job. */
static void volumes_done(struct gs_binder *s, struct gs_job *j)
{
    json_decref(j->vol);
    j->vol = NULL;
    if (!jobq_push(&s->bindq, j))
        bind_one(s, j);
}

/* A bind to the waiter's list. False without memory. */
static bool wait_add(struct gs_binder *s, const struct volwait *x)
{
    pthread_mutex_lock(&s->wmu);
    if (s->nw == s->capw) {
        void *v = gs_grow(s->w, &s->capw, sizeof(*s->w), 16);
        if (v)
            s->w = v;
    }
    bool added = s->nw < s->capw;
    if (added) {
        s->w[s->nw++] = *x;
        pthread_cond_signal(&s->wcv);
    }
    pthread_mutex_unlock(&s->wmu);
    return added;
}

static void *vol_worker(void *arg)
{
    struct gs_binder *s = arg;
    struct gs_job j;
    while (jobq_pop(&s->volq, &j)) {
        char why[600];
        if (write_volumes(s, j.vol, why, sizeof(why))) {
            volumes_failed(s, &j, why);
            continue;
        }
        if (json_array_size(json_object_get(j.vol, "wait")) == 0) {
            volumes_done(s, &j);
            continue;
        }
        /* the waiter watches its claims, so that no worker waits with it */
        double timeout = json_number_value(json_object_get(j.vol, "timeout")),
               now = gs_clock_mono();
        struct volwait x = {j, now + (timeout > 0 ? timeout : 600), now, 0.05, 0};
        if (!wait_add(s, &x))
            volumes_failed(s, &j, "binding volumes: out of memory");
    }
    return NULL;
}

/* Look at one waiting bind's claims: 1 all bound (*why empty) or failed (why), 0 not yet. */
static int check_claims(struct gs_binder *s, struct volwait *x, char *why, size_t n)
{
    const json_t *wait = json_object_get(x->j.vol, "wait");
    why[0] = '\0';
    for (; x->k < json_array_size(wait); x->k++) {
        const json_t *w = json_array_get(wait, x->k);
        const char *name = json_string_value(json_object_get(w, "name"));
        int b = claim_bound(s, json_string_value(json_object_get(w, "namespace")), name);
        if (b < 0) {
            snprintf(why, n, "binding volumes: persistentvolumeclaim \"%s\" not found", name);
            return 1;
        }
        if (b == 0) {
            if (gs_clock_mono() < x->until)
                return 0;
            timeout_why(w, json_number_value(json_object_get(x->j.vol, "timeout")), why, n);
            return 1;
        }
    }
    return 1;
}

/* The second half of PreBind for every bind whose volumes are written: each waits (its claims
 * polled, every 50 ms at first, every second at most) until its claims are bound, then binds;
 * or its timeout passes. One thread for all, so that a bind whose provisioner never comes
 * holds back no other. */
static void *vol_waiter(void *arg)
{
    struct gs_binder *s = arg;
    pthread_mutex_lock(&s->wmu);
    while (!s->wstop) {
        double now = gs_clock_mono(), next = now + 1;
        int due = -1;
        for (int i = 0; i < s->nw && due < 0; i++) {
            if (s->w[i].next <= now)
                due = i;
            else if (s->w[i].next < next)
                next = s->w[i].next;
        }
        if (due < 0) {
            struct timespec ts = {(time_t)next, (long)((next - (double)(time_t)next) * 1e9)};
            pthread_cond_timedwait(&s->wcv, &s->wmu, &ts);
            continue;
        }
        struct volwait x = s->w[due];
        s->w[due] = s->w[--s->nw];
        pthread_mutex_unlock(&s->wmu);
        char why[600];
        int done = check_claims(s, &x, why, sizeof(why));
        if (done && why[0])
            volumes_failed(s, &x.j, why);
        else if (done)
            volumes_done(s, &x.j);
        if (done) {
            pthread_mutex_lock(&s->wmu);
            continue;
        }
        x.next = gs_clock_mono() + x.pause;
        x.pause = x.pause < 1 ? x.pause * 2 : 1;
        if (!wait_add(s, &x))
            volumes_failed(s, &x.j, "binding volumes: out of memory");
        pthread_mutex_lock(&s->wmu);
    }
    pthread_mutex_unlock(&s->wmu);
    return NULL;
}

struct gs_binder *gs__binder_start(const struct gs_binder_deps *d)
{
    struct gs_binder *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->d = *d;
    if (!(s->events = gs__events_new(0))) {
        free(s);
        return NULL;
    }
    jobq_init(&s->bindq, GS_BINDER_QUEUE);
    jobq_init(&s->volq, GS_BINDER_QUEUE);
    jobq_init(&s->bgq, GS_BINDER_QUEUE);
    jobq_init(&s->evq, GS_BINDER_QUEUE);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* gs_clock_mono's */
    pthread_mutex_init(&s->wmu, NULL);
    pthread_cond_init(&s->wcv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_create(&s->t_wait, NULL, vol_waiter, s);
    for (int k = 0; k < GS_BIND_WORKERS; k++)
        pthread_create(&s->t_bind[k], NULL, bind_worker, s);
    for (int k = 0; k < GS_VOL_WORKERS; k++)
        pthread_create(&s->t_vol[k], NULL, vol_worker, s);
    pthread_create(&s->t_bg, NULL, bg_worker, s);
    pthread_create(&s->t_ev, NULL, ev_worker, s);
    return s;
}

void gs__binder_stop(struct gs_binder *s)
{
    if (!s)
        return;
    jobq_close(&s->volq);
    for (int k = 0; k < GS_VOL_WORKERS; k++)
        pthread_join(s->t_vol[k], NULL);
    pthread_mutex_lock(&s->wmu);
    s->wstop = true;
    pthread_cond_signal(&s->wcv);
    pthread_mutex_unlock(&s->wmu);
    pthread_join(s->t_wait, NULL);
    for (int i = 0; i < s->nw; i++) {
        json_decref(s->w[i].j.body);
        json_decref(s->w[i].j.vol);
    }
    free(s->w);
    pthread_mutex_destroy(&s->wmu);
    pthread_cond_destroy(&s->wcv);
    jobq_close(&s->bindq);
    for (int k = 0; k < GS_BIND_WORKERS; k++)
        pthread_join(s->t_bind[k], NULL);
    jobq_close(&s->bgq);
    pthread_join(s->t_bg, NULL);
    jobq_close(&s->evq);
    pthread_join(s->t_ev, NULL);
    jobq_release(&s->bindq);
    jobq_release(&s->volq);
    jobq_release(&s->bgq);
    jobq_release(&s->evq);
    gs__events_free(s->events);
    free(s);
}

bool gs__binder_bind(struct gs_binder *s, const struct gs_job *j)
{
    return jobq_push(j->vol ? &s->volq : &s->bindq, j);
}
