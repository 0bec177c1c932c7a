/* events.c - Events aggregated into series (sched/events.h), as client-go's event broadcaster
 * does for kube-scheduler: a table of the series open, by the hash of their key (base/hash.h's
 * map), each with its Event's name, first time, count and last observation. The binder
 * (sched/binder.c) observes every Event the scheduler emits here and writes what comes back on
 * its background lane; the cycle output (sched/cycleout.c) tells which pods are still pending. */
#include "events.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../base/hash.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SWEEP_S 30.0 /* finished series are looked for at most this often */

struct entry {
    uint64_t key;
    uint64_t uid; /* the regarding Pod's UID hashed; 0: it regards something else */
    double last;  /* last observed, Unix s */
    int32_t count;
    char name[256]; /* the Event's metadata.name */
    char first[40]; /* its eventTime */
};

struct gs_events {
    pthread_mutex_t mu;
    /* under mu: */
    struct entry *v;
    int n, cap, max;
    struct gs_strmap by_key; /* 8 bytes of key -> index in v */
    double swept;
};

struct gs_events *gs__events_new(int max)
{
    struct gs_events *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    pthread_mutex_init(&e->mu, NULL);
    gs_strmap_init(&e->by_key);
    e->max = max > 0 ? max : GS_EVENTS_MAX;
    return e;
}

void gs__events_free(struct gs_events *e)
{
    if (!e)
        return;
    gs_strmap_release(&e->by_key);
    free(e->v);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* FNV-1a over the fields, each closed by a value no byte takes, so that ("ab", "c") and
 * ("a", "bc") differ. */
static uint64_t fold(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = gs_hash_step(h, (unsigned char)*s);
    return gs_hash_step(h, 0x100);
}

/* A pod's UID hashed, never 0 (0 stands for "not a Pod"). */
static uint64_t uid_hash(const char *uid)
{
    uint64_t h = gs_hash_str(uid);
    return h ? h : 1;
}

/* The key of an Event and its regarding Pod's UID hashed (0: not a Pod); false when it lacks a
 * reason or a regarding object's name. */
static bool event_key(const json_t *ev, uint64_t *key, uint64_t *uid)
{
    const json_t *reg = json_object_get(ev, "regarding");
    if (!str(ev, "reason")[0] || !str(reg, "name")[0])
        return false;
    static const char *const top[] = {
        "type", "reason", "action", "note", "reportingController", "reportingInstance"};
    static const char *const of[] = {"kind", "namespace", "name", "uid"};
    uint64_t h = GS_HASH_FNV_OFFSET;
    for (size_t k = 0; k < sizeof(top) / sizeof(top[0]); k++)
        h = fold(h, str(ev, top[k]));
    for (size_t k = 0; k < sizeof(of) / sizeof(of[0]); k++)
        h = fold(h, str(reg, of[k]));
    *key = h;
    bool pod = strcmp(str(reg, "kind"), "Pod") == 0 && str(reg, "uid")[0];
    *uid = pod ? uid_hash(str(reg, "uid")) : 0;
    return true;
}

/* Remove entry i (mu held). */
static void drop(struct gs_events *e, int i)
{
    gs_strmap_del(&e->by_key, &e->v[i].key, sizeof(e->v[i].key));
    e->n--;
    if (i == e->n)
        return;
    e->v[i] = e->v[e->n];
    gs_strmap_del(&e->by_key, &e->v[i].key, sizeof(e->v[i].key));
    if (gs_strmap_put(&e->by_key, &e->v[i].key, sizeof(e->v[i].key), i))
        drop(e, i); /* no memory to index the moved entry: it goes too */
}

/* Drop the series unobserved for GS_EVENTS_FINISH_S (mu held). */
static void sweep(struct gs_events *e, double now)
{
    e->swept = now;
    for (int i = e->n - 1; i >= 0; i--)
        if (i < e->n && now - e->v[i].last > GS_EVENTS_FINISH_S)
            drop(e, i);
}

/* A MicroTime (RFC 3339, microseconds, UTC) of Unix seconds t. */
static void micro_time(double t, char *out, size_t n)
{
    double whole = floor(t);
    time_t secs = (time_t)whole;
    long usec = (long)((t - whole) * 1e6);
    if (usec > 999999)
        usec = 999999;
    struct tm tm;
    gmtime_r(&secs, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%s.%06ldZ", base, usec);
}

/* A new entry for ev (mu held): 0, or GS_ENOMEM (nothing kept). */
static int add(struct gs_events *e, const json_t *ev, uint64_t key, uint64_t uid, double now)
{
    if (e->n >= e->max) {
        int oldest = 0;
        for (int i = 1; i < e->n; i++)
            if (e->v[i].last < e->v[oldest].last)
                oldest = i;
        drop(e, oldest);
    }
    if (e->n == e->cap) {
        void *v = gs_grow(e->v, &e->cap, sizeof(*e->v), 64);
        if (!v)
            return GS_ENOMEM;
        e->v = v;
    }
    struct entry *x = &e->v[e->n];
    memset(x, 0, sizeof(*x));
    x->key = key;
    x->uid = uid;
    x->last = now;
    x->count = 1;
    snprintf(x->name, sizeof(x->name), "%s", str(json_object_get(ev, "metadata"), "name"));
    snprintf(x->first, sizeof(x->first), "%s", str(ev, "eventTime"));
    if (gs_strmap_put(&e->by_key, &x->key, sizeof(x->key), e->n))
        return GS_ENOMEM;
    e->n++;
    return 0;
}

enum gs_events_write gs__events_observe(struct gs_events *e, json_t *ev, double now)
{
    uint64_t key, uid;
    if (!event_key(ev, &key, &uid))
        return GS_EVENTS_CREATE;
    pthread_mutex_lock(&e->mu);
    if (now - e->swept >= SWEEP_S || now < e->swept)
        sweep(e, now);
    int32_t i = gs_strmap_get(&e->by_key, &key, sizeof(key));
    if (i >= 0 && now - e->v[i].last > GS_EVENTS_FINISH_S) {
        drop(e, i); /* finished since the last sweep */
        i = -1;
    }
    if (i < 0) {
        (void)add(e, ev, key, uid, now);
        pthread_mutex_unlock(&e->mu);
        return GS_EVENTS_CREATE;
    }
    struct entry *x = &e->v[i];
    x->count++;
    x->last = now;
    char name[sizeof(x->name)], first[sizeof(x->first)], last[40];
    memcpy(name, x->name, sizeof(name));
    memcpy(first, x->first, sizeof(first));
    int32_t count = x->count;
    pthread_mutex_unlock(&e->mu);
    micro_time(now, last, sizeof(last));
    json_t *md = json_object_get(ev, "metadata");
    if (json_is_object(md))
        json_object_set_new(md, "name", json_string(name));
    json_object_set_new(ev, "eventTime", json_string(first));
    json_object_set_new(ev, "series",
                        json_pack("{s:i, s:s}", "count", (int)count, "lastObservedTime", last));
    return GS_EVENTS_SERIES;
}

json_t *gs__events_series_patch(const json_t *ev)
{
    const json_t *s = json_object_get(ev, "series");
    return s ? json_pack("{s:O}", "series", s) : NULL;
}

void gs__events_forget(struct gs_events *e, const char *uid)
{
    uint64_t h = uid_hash(uid);
    pthread_mutex_lock(&e->mu);
    for (int i = e->n - 1; i >= 0; i--)
        if (i < e->n && e->v[i].uid == h)
            drop(e, i);
    pthread_mutex_unlock(&e->mu);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int gs__events_retain(struct gs_events *e, const char *const *uids, int n)
{
    pthread_mutex_lock(&e->mu);
    bool any = false;
    for (int i = 0; i < e->n && !any; i++)
        any = e->v[i].uid != 0;
    pthread_mutex_unlock(&e->mu);
    if (!any)
        return 0; /* the usual case: nothing regards a pod */
    uint64_t *h = malloc(sizeof(*h) * ((size_t)n + 1));
    if (!h)
        return GS_ENOMEM;
    for (int k = 0; k < n; k++)
        h[k] = uid_hash(uids[k]);
    qsort(h, (size_t)n, sizeof(*h), cmp_u64);
    pthread_mutex_lock(&e->mu);
    for (int i = e->n - 1; i >= 0; i--)
        if (i < e->n && e->v[i].uid && !bsearch(&e->v[i].uid, h, (size_t)n, sizeof(*h), cmp_u64))
            drop(e, i);
    pthread_mutex_unlock(&e->mu);
    free(h);
    return 0;
}

int gs__events_count(struct gs_events *e)
{
    pthread_mutex_lock(&e->mu);
    int n = e->n;
    pthread_mutex_unlock(&e->mu);
    return n;
}
