/* informer.h - list and watch one kind of Kubernetes object, as client-go's reflector does:
 * list (paginated), then watch from the list's resourceVersion, moving that version on with
 * every event and bookmark; list again when the watch says the version is gone (an ERROR
 * event, 410 Gone) or the user asks for it, when the watch is lost (after a backoff), and
 * every resync_s when set. A list that fails is retried after a backoff that doubles from
 * 1 s to backoff_max_s, with jitter (up to half the delay again) so that replicas do not
 * retry in step. The backoff starts again from 1 s once a watch ends normally.
 *
 * What the objects mean is the user's: an informer hands each listed object to
 * ops->list_item, then ops->list_end (the user swaps its state for what it staged), and each
 * watch event to ops->event. Objects are borrowed for the call only.
 *
 * Threads: gs_informer_start runs the loop on a thread of its own, and every callback runs on
 * that thread (one informer's callbacks never run concurrently; different informers' do).
 * gs_informer_stop may be called from any other thread; it interrupts a backoff or a watch
 * (within about a second) but not a list in progress. gs_informer_list runs one list on the
 * caller's thread. */
#ifndef GS_KUBE_INFORMER_H
#define GS_KUBE_INFORMER_H

#include "client.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>

struct gs_error;
struct gs_informer;

/* An event callback's answer: end the watch and list again. */
#define GS_INFORMER_RELIST 7001

struct gs_informer_ops {
    /* A list starts: drop what an earlier list that failed may have staged. May be NULL. */
    void (*list_begin)(void *user);
    /* One listed object. Returns 0 (also for an object the user skips), or a negative code
     * that fails the list (GS_ENOMEM). */
    int (*list_item)(const json_t *obj, void *user);
    /* The list is complete at resourceVersion rv (n objects were handed to list_item);
     * absent: the kind's API is not there (see absent_retry_s) and there are no objects.
     * Returns 0, or a negative code that fails the list. */
    int (*list_end)(const char *rv, int n, bool absent, void *user);
    /* A list failed with rc (err says why, with the path). Returns 0 to take the kind as
     * absent (an empty list, listed again after absent_retry_s, or 1 s), or rc to retry it
     * after the backoff. May be NULL (rc). Not called for GS_ENOMEM. */
    int (*list_failed)(int rc, const struct gs_error *err, void *user);
    /* One watch event: type ADDED, MODIFIED or DELETED, and the object. Returns 0, or
     * GS_INFORMER_RELIST to end the watch and list again. May be NULL. */
    int (*event)(const char *type, const json_t *obj, void *user);
};

struct gs_informer_opts {
    const char *path;      /* list and watch path, may carry a query ("?fieldSelector=...") */
    const char *what;      /* plural for log lines: "nodes", "GPUQueues" */
    bool lane2;            /* list on the client's second lane (background work) */
    double resync_s;       /* > 0: list again at least this often; 0: only when needed */
    double absent_retry_s; /* > 0: a 404 on the list means the kind's API is absent (a CRD
                            * not installed yet): the list ends empty and absent, no watch,
                            * and the kind is listed again after this long, doubling while it
                            * stays absent up to 8 times this; 0: a 404 is an
                            * error like any other */
    double backoff_max_s;  /* <= 0: 30 */
    int watch_timeout_s;   /* the server ends each watch after this long; <= 0: 60 */
};

/* Start the loop on a thread of its own; o->path and o->what must outlive the informer, ops
 * and user until gs_informer_stop. Returns 0 and *out, or GS_ENOMEM or GS_EIO (no thread). */
int gs_informer_start(struct gs_kube_client *kc, const struct gs_informer_opts *o,
                      const struct gs_informer_ops *ops, void *user, struct gs_informer **out,
                      struct gs_error *err);
/* Stop the loop, join its thread and free inf. NULL is a no-op. */
void gs_informer_stop(struct gs_informer *inf);
/* Lists made so far (failed ones included; not the probes of an absent API). Thread-safe. */
uint64_t gs_informer_lists(const struct gs_informer *inf);
/* Whether a list has completed (absent counts). Thread-safe. */
bool gs_informer_synced(const struct gs_informer *inf);

/* One list on the caller's thread, with the same callbacks (list_begin, list_item, list_end;
 * list_failed and absent_retry_s decide what counts as absent). Returns 0 or the list's
 * error, with err saying why. */
int gs_informer_list(struct gs_kube_client *kc, const struct gs_informer_opts *o,
                     const struct gs_informer_ops *ops, void *user, struct gs_error *err);

/* The next delay of a backoff: *backoff seconds plus jitter u * *backoff / 2 (u in [0, 1));
 * *backoff then doubles, up to max_s. */
double gs_informer_backoff(double *backoff, double max_s, double u);

#endif
