/* binder.h - the scheduler's writers: GS_BIND_WORKERS threads that POST the Bindings the
 * scheduling cycle decided (with the chosen devices in the gpusched.io/devices annotation),
 * and one background thread for every other write (Events, status patches, deletes of
 * preemption victims) on the client's second lane, so that a flood of Events never delays
 * a bind. Each lane is a bounded queue: a write that does not fit is dropped with a warning.
 *
 * A bind job may carry the status writes of the pod's ResourceClaims (body: [{path, body}],
 * sched/claims.c): they are PATCHed first, in order, and when one fails the pod is not bound
 * (its devices go back, it backs off, the claims' assumed allocations are forgotten).
 * A bind that succeeds records its latency and posts a Scheduled Event; one the API server
 * refuses because the pod is bound already or gone (409, 404) is left to the watch; any other
 * failure gives the pod's devices back in the store and puts the pod in backoff.
 *
 * Thread-safety: gs__binder_bind, gs__binder_write_later, gs__binder_emit_event and the
 * backoff functions may be called from any thread between gs__binder_start and
 * gs__binder_stop; start and stop from the daemon's main thread (a daemon that never starts
 * the binder, as explain's, must write nothing). Ownership: a queued job owns its
 * body; the pod in a bind job is a copy without a reference to its constraints. */
#ifndef GS_SCHED_BINDER_H
#define GS_SCHED_BINDER_H

#include "../formats/kubeobj.h"
#include "store.h"

#include <jansson.h>
#include <pthread.h>

#include <stdbool.h>

#define GS_BIND_WORKERS 16
#define GS_BINDER_QUEUE 65536 /* jobs per lane */

struct gs_sched;

enum gs_job_kind { GS_JOB_BIND = 0, GS_JOB_WRITE };

struct gs_job {
    enum gs_job_kind kind;
    char method[8];
    char path[640];
    char ctype[64];
    json_t *body;           /* GS_JOB_WRITE: the request's; GS_JOB_BIND: claim writes or NULL */
    struct gs_kube_pod pod; /* GS_JOB_BIND */
    char node[GS_KNAME_MAX];
    char devices[256];
    double t0;
};

struct gs_jobq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct gs_job *v;
    int head, n, cap;
    bool closing;
};

/* The two lanes and their threads, inside struct gs_sched; only binder.c touches them. */
struct gs_binder {
    struct gs_jobq bindq, bgq;
    pthread_t t_bind[GS_BIND_WORKERS], t_bg;
};

/* Start the bind workers and the background writer of s->bd. */
void gs__binder_start(struct gs_sched *s);
/* Let the queued binds and writes finish, then stop and join the threads and free the
 * queues. */
void gs__binder_stop(struct gs_sched *s);

/* Queue a bind job (GS_JOB_BIND: pod, node, devices, path, t0). Returns false when the queue
 * is full or closing (the caller undoes what it assumed). */
bool gs__binder_bind(struct gs_sched *s, const struct gs_job *j);
/* Queue a write for the background lane (Events, status patches); takes body. */
void gs__binder_write_later(struct gs_sched *s, const char *method, const char *path,
                            const char *ctype, json_t *body);
/* Queue an events.k8s.io/v1 Event regarding pod p, reported by the scheduler's identity. */
void gs__binder_emit_event(struct gs_sched *s, const struct gs_kube_pod *p, const char *type,
                           const char *reason, const char *action, const char *note);

/* Put a pod in backoff: doubles its backoff, from 1 s to the scheduler's --max-backoff.
 * Called with the store locked. */
void gs__binder_set_backoff(struct gs_sched *s, struct gs_store_pod *e);
/* Lock the store and put pod p in backoff: retry_s seconds if positive, else the doubled
 * backoff of gs__binder_set_backoff. A pod no longer in the store is ignored. */
void gs__binder_backoff_pod(struct gs_sched *s, const struct gs_kube_pod *p, double retry_s);

#endif
