/* binder.c - the scheduler's write lanes (sched/binder.h): bounded job queues drained by the
 * bind workers and the background writer over kube/client.c. The scheduling cycle
 * (sched/driver.c) queues binds and writes; a failed bind gives the pod back to the store
 * (sched/store.c) in backoff. */
#include "binder.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/log.h"
#include "metrics.h"
#include "sched_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void jobq_close(struct gs_jobq *q)
{
    pthread_mutex_lock(&q->mu);
    q->closing = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void jobq_release(struct gs_jobq *q)
{
    for (int k = 0; k < q->n; k++)
        json_decref(q->v[(q->head + k) % q->cap].body);
    free(q->v);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

void gs__binder_write_later(struct gs_sched *s, const char *method, const char *path,
                            const char *ctype, json_t *body)
{
    struct gs_job j;
    memset(&j, 0, sizeof(j));
    j.kind = GS_JOB_WRITE;
    snprintf(j.method, sizeof(j.method), "%s", method);
    snprintf(j.path, sizeof(j.path), "%s", path);
    snprintf(j.ctype, sizeof(j.ctype), "%s", ctype ? ctype : "");
    j.body = body;
    if (!jobq_push(&s->bd.bgq, &j)) {
        GS_WARN("scheduler", "background queue full: dropping %s %s", method, path);
        json_decref(body);
    }
}

void gs__binder_emit_event(struct gs_sched *s, const struct gs_kube_pod *p, const char *type,
                           const char *reason, const char *action, const char *note)
{
    char path[256];
    snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", p->ns);
    gs__binder_write_later(s, "POST", path, NULL,
                           gs_kube_event(p, type, reason, action, note, s->o.identity));
}

static void *bg_worker(void *arg)
{
    struct gs_sched *s = arg;
    struct gs_job j;
    while (jobq_pop(&s->bd.bgq, &j)) {
        struct gs_error err;
        gs_error_init(&err);
        if (gs_kube_request_lane2(s->kc, j.method, j.path, j.ctype[0] ? j.ctype : NULL, j.body,
                                  NULL, NULL, &err))
            GS_WARN("scheduler", "%s", err.msg);
        json_decref(j.body);
    }
    return NULL;
}

void gs__binder_set_backoff(struct gs_sched *s, struct gs_store_pod *e)
{
    double b = e->backoff ? e->backoff * 2 : 1;
    if (b > s->o.max_backoff_s)
        b = s->o.max_backoff_s;
    e->backoff = b;
    e->next_try = gs_clock_mono() + b;
}

/* A bind that failed: give the pod's devices back and retry later. */
static void give_back(struct gs_sched *s, const struct gs_job *j)
{
    pthread_mutex_lock(&s->st.mu);
    int i = gs__store_find_pod(&s->st, j->pod.ns, j->pod.name);
    if (i >= 0 && s->st.pods[i].assumed && strcmp(s->st.pods[i].p.uid, j->pod.uid) == 0) {
        s->st.pods[i].assumed = false;
        s->st.pods[i].p.node[0] = '\0';
        s->st.pods[i].p.devices[0] = '\0';
        gs__binder_set_backoff(s, &s->st.pods[i]);
        s->st.gen++;
        pthread_cond_broadcast(&s->st.cv);
    }
    pthread_mutex_unlock(&s->st.mu);
}

static void *bind_worker(void *arg)
{
    struct gs_sched *s = arg;
    struct gs_job j;
    while (jobq_pop(&s->bd.bindq, &j)) {
        struct gs_error err;
        gs_error_init(&err);
        long status = 0;
        /* the pod's ResourceClaims: allocated and reserved for it before it is bound */
        size_t wi;
        json_t *w;
        int rc = 0;
        json_array_foreach(j.body, wi, w)
        {
            rc = gs_kube_request(s->kc, "PATCH", json_string_value(json_object_get(w, "path")),
                                 "application/merge-patch+json", json_object_get(w, "body"), NULL,
                                 &status, &err);
            if (rc) {
                gs_error_prefix(&err, "writing the status of its ResourceClaim");
                break;
            }
        }
        if (rc) {
            GS_WARN("scheduler", "bind %s/%s: %s", j.pod.ns, j.pod.name, err.msg);
            json_array_foreach(j.body, wi, w)
            {
                const char *uid = json_string_value(json_object_get(
                    json_object_get(json_object_get(w, "body"), "metadata"), "uid"));
                if (s->claims && uid)
                    gs_claims_forget(s->claims, uid);
            }
            json_decref(j.body);
            gs__metrics_record_latency(s, gs_clock_mono() - j.t0, 2);
            give_back(s, &j);
            continue;
        }
        json_decref(j.body);
        json_t *b = gs_kube_binding(&j.pod, j.node);
        if (j.devices[0])
            json_object_set_new(json_object_get(b, "metadata"), "annotations",
                                json_pack("{s:s}", GS_DEVICES_ANNOTATION, j.devices));
        rc = gs_kube_request(s->kc, "POST", j.path, NULL, b, NULL, &status, &err);
        json_decref(b);
        if (rc == 0) {
            gs__metrics_record_latency(s, gs_clock_mono() - j.t0, 0);
            char note[700];
            snprintf(note, sizeof(note), "Successfully assigned %s/%s to %s%s%s", j.pod.ns,
                     j.pod.name, j.node, j.devices[0] ? " with " : "", j.devices);
            gs__binder_emit_event(s, &j.pod, "Normal", "Scheduled", "Binding", note);
            GS_INFO("scheduler", "%s/%s -> %s %s", j.pod.ns, j.pod.name, j.node, j.devices);
            gs__journal_add(&s->journal, "bind",
                            json_pack("{s:s, s:s, s:s, s:s}", "namespace", j.pod.ns, "pod",
                                      j.pod.name, "node", j.node, "devices", j.devices));
            continue;
        }
        gs__metrics_record_latency(s, gs_clock_mono() - j.t0, 2);
        if (status == 409 || status == 404) {
            /* already assigned (the watch will tell) or gone */
            GS_INFO("scheduler", "bind %s/%s: %s", j.pod.ns, j.pod.name, err.msg);
            continue;
        }
        GS_WARN("scheduler", "bind %s/%s: %s", j.pod.ns, j.pod.name, err.msg);
        give_back(s, &j);
    }
    return NULL;
}

void gs__binder_backoff_pod(struct gs_sched *s, const struct gs_kube_pod *p, double retry_s)
{
    pthread_mutex_lock(&s->st.mu);
    int i = gs__store_find_pod(&s->st, p->ns, p->name);
    if (i >= 0) {
        if (retry_s > 0)
            s->st.pods[i].next_try = gs_clock_mono() + retry_s;
        else
            gs__binder_set_backoff(s, &s->st.pods[i]);
    }
    pthread_mutex_unlock(&s->st.mu);
}

void gs__binder_start(struct gs_sched *s)
{
    jobq_init(&s->bd.bindq, GS_BINDER_QUEUE);
    jobq_init(&s->bd.bgq, GS_BINDER_QUEUE);
    for (int k = 0; k < GS_BIND_WORKERS; k++)
        pthread_create(&s->bd.t_bind[k], NULL, bind_worker, s);
    pthread_create(&s->bd.t_bg, NULL, bg_worker, s);
}

void gs__binder_stop(struct gs_sched *s)
{
    jobq_close(&s->bd.bindq);
    for (int k = 0; k < GS_BIND_WORKERS; k++)
        pthread_join(s->bd.t_bind[k], NULL);
    jobq_close(&s->bd.bgq);
    pthread_join(s->bd.t_bg, NULL);
    jobq_release(&s->bd.bindq);
    jobq_release(&s->bd.bgq);
}

bool gs__binder_bind(struct gs_sched *s, const struct gs_job *j)
{
    return jobq_push(&s->bd.bindq, j);
}
