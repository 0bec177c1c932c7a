/* informer.c - list, then watch, one kind of object (kube/informer.h) over kube/client.c: the
 * caches of kube/cache.c (the scheduler's Nodes, Pods, DRA and tenancy kinds) each run one. The
 * loop keeps the resourceVersion the watch goes on from and decides when to list again; what the
 * objects mean stays with the callbacks. */
#include "informer.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "../base/log.h"
#include "../base/rng.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gs_informer {
    struct gs_kube_client *kc;
    struct gs_informer_opts o;
    struct gs_informer_ops ops;
    void *user;
    pthread_t t;
    pthread_mutex_t mu; /* with cv: wakes a backoff when stopped */
    pthread_cond_t cv;
    volatile int stop;
    uint64_t lists; /* atomic */
    int synced;     /* atomic */
    char rv[64];    /* where the watch goes on from (the loop's thread only) */
    struct gs_rng rng;
};

double gs_informer_backoff(double *backoff, double max_s, double u)
{
    double d = *backoff + u * *backoff / 2;
    *backoff = fmin(*backoff * 2, max_s);
    return d;
}

/* Sleep s seconds, or until stopped. */
static void nap(struct gs_informer *inf, double s)
{
    struct timespec ts = gs_clock_mono_deadline(s);
    pthread_mutex_lock(&inf->mu);
    int rc = 0;
    while (!gs_flag_get(&inf->stop) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&inf->cv, &inf->mu, &ts);
    pthread_mutex_unlock(&inf->mu);
}

struct list_ctx {
    const struct gs_informer_ops *ops;
    void *user;
    int n;
};

static int on_item(const json_t *item, void *user)
{
    struct list_ctx *lc = user;
    if (!item) {
        /* the list starts over (an expired continue token): drop what it staged */
        lc->n = 0;
        if (lc->ops->list_begin)
            lc->ops->list_begin(lc->user);
        return 0;
    }
    lc->n++;
    return lc->ops->list_item(item, lc->user);
}

/* One list through the callbacks; rv receives its resourceVersion ("" when absent). */
static int list_once(struct gs_kube_client *kc, const struct gs_informer_opts *o,
                     const struct gs_informer_ops *ops, void *user, char *rv, size_t rv_size,
                     bool *absent, int *n, struct gs_error *err)
{
    struct list_ctx lc = {ops, user, 0};
    struct gs_error e;
    gs_error_init(&e);
    char nrv[64] = "";
    *absent = false;
    if (ops->list_begin)
        ops->list_begin(user);
    int rc = o->lane2 ? gs_kube_list_lane2(kc, o->path, on_item, &lc, nrv, sizeof(nrv), &e)
                      : gs_kube_list(kc, o->path, on_item, &lc, nrv, sizeof(nrv), &e);
    if (rc == GS_ENOTFOUND && o->absent_retry_s > 0)
        *absent = true;
    else if (rc && rc != GS_ENOMEM && ops->list_failed && ops->list_failed(rc, &e, user) == 0)
        *absent = true;
    else if (rc)
        return gs_error_set(err, rc, "%s", e.msg);
    if (*absent) {
        lc.n = 0;
        nrv[0] = '\0';
        if (ops->list_begin)
            ops->list_begin(user); /* drop what a list cut short staged */
    }
    rc = ops->list_end(nrv, lc.n, *absent, user);
    if (rc)
        return gs_error_set(err, rc, "LIST %s: %s", o->path, gs_error_name(rc));
    snprintf(rv, rv_size, "%s", nrv);
    *n = lc.n;
    return 0;
}

static void defaults(struct gs_informer_opts *o)
{
    if (o->backoff_max_s <= 0)
        o->backoff_max_s = 30;
    if (o->watch_timeout_s <= 0)
        o->watch_timeout_s = 60;
}

int gs_informer_list(struct gs_kube_client *kc, const struct gs_informer_opts *o,
                     const struct gs_informer_ops *ops, void *user, struct gs_error *err)
{
    char rv[64];
    bool absent;
    int n;
    return list_once(kc, o, ops, user, rv, sizeof(rv), &absent, &n, err);
}

static int on_event(const char *type, const json_t *obj, void *user)
{
    struct gs_informer *inf = user;
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (strcmp(type, "ERROR") == 0) {
        /* 410 Gone: the version is older than the server keeps; a list gives a fresh one */
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        GS_INFO("informer", "watch %s: error %lld: %s; listing again", inf->o.what, (long long)code,
                json_string_value(json_object_get(obj, "message")));
        return GS_INFORMER_RELIST;
    }
    if (strcmp(type, "BOOKMARK") != 0 && inf->ops.event &&
        inf->ops.event(type, obj, inf->user) != 0)
        return GS_INFORMER_RELIST;
    if (rv)
        snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
    return 0;
}

static void *informer_main(void *arg)
{
    struct gs_informer *inf = arg;
    const struct gs_informer_opts *o = &inf->o;
    double backoff = 1, listed_at = 0;
    /* an absent API is listed again after absent_retry_s, doubling up to 8 times that while it
     * stays absent: a CRD installed later is seen within seconds, and a cluster without it is
     * not listed every second for ever */
    double absent_base = o->absent_retry_s > 0 ? o->absent_retry_s : 1, absent_nap = absent_base;
    bool relist = true, loud = true; /* loud: a first list, or one after a lost watch */
    while (!gs_flag_get(&inf->stop)) {
        struct gs_error err;
        gs_error_init(&err);
        if (relist) {
            bool absent;
            int n = 0;
            int rc = list_once(inf->kc, o, &inf->ops, inf->user, inf->rv, sizeof(inf->rv), &absent,
                               &n, &err);
            if (rc || !absent) /* a probe of an absent API lists no objects */
                __atomic_add_fetch(&inf->lists, 1, __ATOMIC_RELAXED);
            if (rc) {
                double d =
                    gs_informer_backoff(&backoff, o->backoff_max_s, gs_rng_double(&inf->rng));
                GS_WARN("informer", "list %s: %s; retrying in %.1fs", o->what, err.msg, d);
                nap(inf, d);
                continue;
            }
            __atomic_store_n(&inf->synced, 1, __ATOMIC_RELAXED);
            listed_at = gs_clock_mono();
            if (absent) {
                GS_DEBUG("informer", "%s: not served (no such API); listing again in %.0fs",
                         o->what, absent_nap);
                nap(inf, absent_nap);
                absent_nap = absent_nap * 2 < absent_base * 8 ? absent_nap * 2 : absent_base * 8;
                continue;
            }
            absent_nap = absent_base;
            GS_LOG(loud ? GS_LOG_INFO : GS_LOG_DEBUG, "informer",
                   "listed %d %s at resourceVersion %s", n, o->what, inf->rv);
            relist = false;
            loud = false;
        }
        int timeout = o->watch_timeout_s;
        if (o->resync_s > 0) {
            double left = o->resync_s - (gs_clock_mono() - listed_at);
            if (left <= 0) {
                relist = true;
                continue;
            }
            if (left < timeout)
                timeout = (int)ceil(left);
        }
        int rc = gs_kube_watch(inf->kc, o->path, inf->rv, timeout, on_event, inf, &inf->stop, &err);
        if (rc == GS_INFORMER_RELIST || rc == GS_ENOTFOUND) {
            relist = true;
        } else if (rc && !gs_flag_get(&inf->stop)) {
            double d = gs_informer_backoff(&backoff, o->backoff_max_s, gs_rng_double(&inf->rng));
            GS_WARN("informer", "%s; listing %s again in %.1fs", err.msg, o->what, d);
            nap(inf, d);
            relist = true;
            loud = true;
        } else {
            backoff = 1;
        }
    }
    return NULL;
}

int gs_informer_start(struct gs_kube_client *kc, const struct gs_informer_opts *o,
                      const struct gs_informer_ops *ops, void *user, struct gs_informer **out,
                      struct gs_error *err)
{
    *out = NULL;
    struct gs_informer *inf = calloc(1, sizeof(*inf));
    if (!inf)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    inf->kc = kc;
    inf->o = *o;
    defaults(&inf->o);
    inf->ops = *ops;
    inf->user = user;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    gs_rng_init(&inf->rng, (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)inf);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&inf->mu, NULL);
    pthread_cond_init(&inf->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&inf->t, NULL, informer_main, inf) != 0) {
        pthread_mutex_destroy(&inf->mu);
        pthread_cond_destroy(&inf->cv);
        free(inf);
        return gs_error_set(err, GS_EIO, "informer for %s: cannot start a thread", o->what);
    }
    *out = inf;
    return 0;
}

void gs_informer_stop(struct gs_informer *inf)
{
    if (!inf)
        return;
    pthread_mutex_lock(&inf->mu);
    gs_flag_set(&inf->stop, 1);
    pthread_cond_broadcast(&inf->cv);
    pthread_mutex_unlock(&inf->mu);
    pthread_join(inf->t, NULL);
    pthread_mutex_destroy(&inf->mu);
    pthread_cond_destroy(&inf->cv);
    free(inf);
}

uint64_t gs_informer_lists(const struct gs_informer *inf)
{
    return __atomic_load_n(&inf->lists, __ATOMIC_RELAXED);
}

bool gs_informer_synced(const struct gs_informer *inf)
{
    return __atomic_load_n(&inf->synced, __ATOMIC_RELAXED) != 0;
}
