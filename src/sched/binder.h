/* binder.h - the scheduler's writers: GS_BIND_WORKERS threads that POST the Bindings the
 * scheduling cycle decided (with the chosen devices in the gpusched.io/devices annotation),
 * one background thread for every other write (status patches, deletes of preemption
 * victims) and one for Events, both on the client's second lane, so that a flood of Events
 * never delays a bind. Events also give way to binds: each waits while binds are queued or in
 * flight, up to GS_EVENT_YIELD_S after it was queued (through a burst of binds the API
 * server's work goes to them first, and its Events follow). Each queue is bounded: a write
 * that does not fit is dropped with a warning.
 *
 * A bind job with volume work (sched/volbind.h: gs_volbind_writes) goes to GS_VOL_WORKERS
 * threads of its own: they PATCH the chosen volumes' claimRef and the provisioned claims'
 * selected-node and hand the job to one waiter thread, which polls the claims of every such
 * bind until each is bound, up to the job's timeout, and then queues its Binding; a write that
 * fails or a timeout posts a FailedScheduling Event naming the claim (and who was to bind it:
 * the volume chosen, or the class and its provisioner, and whether a CSIDriver of that name is
 * registered), forgets the assumed volumes and gives the pod back in backoff. No bind waits
 * behind another's volumes, however many never come.
 *
 * A bind job may carry the writes of the pod's ResourceClaims (body: [{path, body}] merge
 * patches, or {method: POST, path, body} for a claim to create, sched/claims.c): they are
 * written first, in order (a create that finds the claim there, 409, goes on), and when one
 * fails the pod is not bound
 * (its devices go back in the store, it backs off, the claims' assumed allocations are forgotten).
 * Events go through sched/events.h: a repeat of an Event written lately becomes its series
 * (series.count and lastObservedTime patched onto it), as kube-scheduler's recorder writes them.
 *
 * A bind that succeeds records its latency and posts a Scheduled Event; one the API server
 * refuses because the pod is bound already or gone (409, 404) is left to the watch; any other
 * failure gives the pod's devices back in the store and puts the pod in backoff.
 *
 * Thread-safety: gs__binder_bind, gs__binder_write_later, gs__binder_emit_event and the
 * backoff functions may be called from any thread between gs__binder_start and
 * gs__binder_stop; start and stop from the daemon's main thread (a daemon that never starts
 * the binder, as explain's, writes nothing). Ownership: the binder owns its queues and
 * threads (struct gs_binder, each queue under its own lock); a queued job owns its body; the
 * pod in a bind job is a copy without a reference to its constraints. */
#ifndef GS_SCHED_BINDER_H
#define GS_SCHED_BINDER_H

#include "../formats/kubeobj.h"
#include "../kube/client.h"

#include <jansson.h>

#include <stdbool.h>

/* Binds in flight: a pod with claims is two writes in a row (kube-scheduler binds each pod in a
 * goroutine of its own); the client keeps an idle connection for each (kube/client.c) */
#define GS_BIND_WORKERS  96
#define GS_VOL_WORKERS   8     /* binds that wait for their volumes first */
#define GS_BINDER_QUEUE  65536 /* jobs per queue */
#define GS_EVENT_YIELD_S 5.0   /* how long an Event waits at most for the binds to be done */

struct gs_binder;
struct gs_claims;
struct gs_journal;
struct gs_metrics;
struct gs_store;
struct gs_volassume;

enum gs_job_kind { GS_JOB_BIND = 0, GS_JOB_WRITE, GS_JOB_EVENT_SERIES, GS_JOB_WRITES, GS_JOB_WARM };

/* A sequence of writes (GS_JOB_BIND's claim writes, GS_JOB_WRITES): a JSON array of
 * {path, body, method?, ctype?, chain?} done in order, stopping at the first that fails.
 * method: PATCH (the default; ctype defaults to a merge patch) or POST (a 409, the object
 * there already, counts as done); chain: true puts the resourceVersion the previous write's
 * answer gave into this body's metadata (the precondition it would have had, after the write
 * before it moved the object on); settle: [namespace, name] of a ResourceClaim whose watch is
 * to show that resourceVersion before this write goes (gs_claims_wait_rv, up to 1 s). */

struct gs_job {
    enum gs_job_kind kind;
    char method[8];
    char path[640];
    char ctype[64];
    json_t *body; /* GS_JOB_WRITE: the request's; GS_JOB_BIND: claim writes or NULL;
                   * GS_JOB_EVENT_SERIES: the Event with its series (path: its collection);
                   * GS_JOB_WRITES: the sequence */
    json_t *vol;  /* GS_JOB_BIND: the volume work (sched/volbind.h) or NULL */
    /* GS_JOB_BIND: the pod, by what a Binding and an Event name (the whole gs_kube_pod is
     * 14 KB: queued by value, 10,000 binds held that much each and the Events queued behind
     * them as much again) */
    struct {
        char ns[64];
        char name[GS_KNAME_MAX];
        char uid[64];
    } pod;
    char node[GS_KNAME_MAX];
    char devices[256];
    double t0;
};

/* What the binder writes with and to (none owned; all outlive it): the client, the store a
 * failed bind gives its pod back to, the DRA feed whose assumed allocations a failed bind
 * forgets (NULL: none), the counters and journal a bind records into, and the identity that
 * reports its Events. */
struct gs_binder_deps {
    struct gs_kube_client *kc;
    struct gs_store *store;
    struct gs_claims *claims;
    struct gs_metrics *metrics;
    struct gs_journal *journal;
    struct gs_volassume *vols; /* forgotten when a bind's volumes fail (NULL: none) */
    const char *identity;
};

/* Start the bind workers and the background writer. NULL without memory. */
struct gs_binder *gs__binder_start(const struct gs_binder_deps *d);
/* Let the queued binds and writes finish, then stop and join the threads and free b. NULL is a
 * no-op. */
void gs__binder_stop(struct gs_binder *b);

/* Open n of the bind workers' connections to the API server now (at most GS_BIND_WORKERS in
 * all, those opened by earlier calls counted), one GET /version each, ahead of the binds queued
 * after: the main loop calls it with the pods due before a cycle decides, so that the TLS
 * handshakes of a burst's first binds are out of its way. */
void gs__binder_warm(struct gs_binder *b, int n);
/* Queue a bind job (GS_JOB_BIND: pod, node, devices, path, t0). Returns false when the queue
 * is full or closing (the caller undoes what it assumed). */
bool gs__binder_bind(struct gs_binder *b, const struct gs_job *j);
/* Queue a write for the background lane (status patches, deletes); takes body. */
void gs__binder_write_later(struct gs_binder *b, const char *method, const char *path,
                            const char *ctype, json_t *body);
/* Queue a sequence of writes (GS_JOB_WRITES) for the background lane; takes writes. */
void gs__binder_writes_later(struct gs_binder *b, json_t *writes);
/* Queue an events.k8s.io/v1 Event regarding pod p, reported by the scheduler's identity: a new
 * Event, or a repeat of one written lately (same pod, type, reason, action and note) as its
 * series (sched/events.h). */
void gs__binder_emit_event(struct gs_binder *b, const struct gs_kube_pod *p, const char *type,
                           const char *reason, const char *action, const char *note);
/* The same for an Event built already (taken; NULL is a no-op), in its own namespace. */
void gs__binder_post_event(struct gs_binder *b, json_t *ev);
/* The pods still pending (their UIDs): the series of Events regarding other pods are dropped
 * (those of a pod bound by the binder are dropped when it is bound). */
void gs__binder_events_retain(struct gs_binder *b, const char *const *uids, int n);

#endif
