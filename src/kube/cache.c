/* cache.c - one kind's informer-fed cache (kube/cache.h): the informer's callbacks
 * (kube/informer.c) stage a list's decoded records, then publish them (GS_KCACHE_LISTS) or
 * merge them into the records kept by key (GS_KCACHE_EVENTS, indexed by base/hash.h's
 * string map), and apply watch events to the records of their keys. */
#include "cache.h"

#include "../base/buf.h"
#include "../base/clock.h"
#include "../base/error.h"
#include "../base/hash.h"
#include "../base/log.h"
#include "informer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gs_kcache {
    const struct gs_kcache_kind *kind;
    void *user;
    void (*changed)(void *user);
    struct gs_informer *inf;
    struct gs_kcache_items *staged; /* the informer's thread only */
    pthread_mutex_t mu;
    /* under mu: */
    struct kwaiter *waiters; /* the threads in gs_kcache_wait_until */
    struct gs_kcache_items *cur;
    struct gs_strmap index; /* EVENTS: key -> index in cur */
    uint64_t gen;
    bool synced, absent;
};

/* A thread in gs_kcache_wait_until, on its own stack: woken by a change to its key's record
 * (any change when it names none) and by every list, not by the others' (a bind worker waits
 * for its claim's write while thousands of other claims change). */
struct kwaiter {
    const char *key; /* NULL: any */
    pthread_cond_t cv;
    struct kwaiter *next;
};

static void *rec_at(const struct gs_kcache_items *l, int i)
{
    return (char *)l->items + l->kind->size * (size_t)i;
}

static struct gs_kcache_items *items_new(const struct gs_kcache_kind *kind)
{
    struct gs_kcache_items *l = calloc(1, sizeof(*l));
    if (l) {
        l->kind = kind;
        l->refs = 1;
    }
    return l;
}

static void items_free(struct gs_kcache_items *l)
{
    if (!l)
        return;
    for (int i = 0; l->kind->release && i < l->n; i++)
        l->kind->release(rec_at(l, i));
    free(l->items);
    free(l);
}

void gs_kcache_items_put(struct gs_kcache_items *l)
{
    if (l && __atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL) == 0)
        items_free(l);
}

/* A slot at the end of l (zeroed), or NULL without memory. */
static void *items_push(struct gs_kcache_items *l)
{
    if (l->n == l->cap) {
        void *v = gs_grow(l->items, &l->cap, l->kind->size, 16);
        if (!v)
            return NULL;
        l->items = v;
    }
    void *r = rec_at(l, l->n++);
    memset(r, 0, l->kind->size);
    return r;
}

static uint32_t key_of(const struct gs_kcache *c, const void *rec, char *key)
{
    key[0] = '\0';
    c->kind->key(rec, key, GS_KCACHE_KEY_MAX);
    return (uint32_t)strlen(key);
}

/* Called with mu held, after a change to the record of key (NULL: to any, or a whole list):
 * the generation moves on and the waiters it concerns wake. */
static void bump_key(struct gs_kcache *c, const char *key)
{
    c->gen++;
    for (struct kwaiter *w = c->waiters; w; w = w->next)
        if (!key || !w->key || strcmp(key, w->key) == 0)
            pthread_cond_signal(&w->cv);
}

static void bump(struct gs_kcache *c)
{
    bump_key(c, NULL);
}

static void notify(struct gs_kcache *c)
{
    if (c->changed)
        c->changed(c->user);
}

/* ---------- EVENTS: records by key ---------- */

/* Store rec (the cache takes it) under its key in cur. Called with mu held. */
static int upsert(struct gs_kcache *c, void *rec, bool merge)
{
    char key[GS_KCACHE_KEY_MAX];
    uint32_t len = key_of(c, rec, key);
    int32_t i = gs_strmap_get(&c->index, key, len);
    void *old = i >= 0 ? rec_at(c->cur, i) : NULL;
    if (merge && c->kind->merge)
        c->kind->merge(c->user, rec, old, false);
    if (old) {
        if (c->kind->release)
            c->kind->release(old);
        memcpy(old, rec, c->kind->size);
        return 0;
    }
    void *slot = items_push(c->cur);
    if (!slot || gs_strmap_put(&c->index, key, len, c->cur->n - 1)) {
        if (slot)
            c->cur->n--;
        if (c->kind->release)
            c->kind->release(rec);
        return GS_ENOMEM;
    }
    memcpy(slot, rec, c->kind->size);
    return 0;
}

/* Remove the record of rec's key, if any. Called with mu held. */
static void remove_key(struct gs_kcache *c, const void *rec)
{
    char key[GS_KCACHE_KEY_MAX];
    uint32_t len = key_of(c, rec, key);
    int32_t i = gs_strmap_get(&c->index, key, len);
    if (i < 0)
        return;
    void *r = rec_at(c->cur, i);
    if (c->kind->removed)
        c->kind->removed(c->user, r);
    if (c->kind->release)
        c->kind->release(r);
    gs_strmap_del(&c->index, key, len);
    int last = --c->cur->n;
    if (i == last)
        return;
    memcpy(r, rec_at(c->cur, last), c->kind->size);
    len = key_of(c, r, key);
    gs_strmap_del(&c->index, key, len);
    gs_strmap_put(&c->index, key, len, i); /* a tombstone's room: cannot fail */
}

/* A complete list (the cache takes every record of l) replaces the records: each merged with
 * the one its key had. Called with mu held. Returns 0 or GS_ENOMEM (the rest are released). */
static int replace_locked(struct gs_kcache *c, struct gs_kcache_items *l)
{
    struct gs_kcache_items *old = c->cur;
    struct gs_strmap oldx = c->index;
    int rc = 0;
    c->cur = items_new(c->kind);
    gs_strmap_init(&c->index);
    if (!c->cur) {
        c->cur = old;
        c->index = oldx;
        items_free(l);
        return GS_ENOMEM;
    }
    char key[GS_KCACHE_KEY_MAX];
    for (int i = 0; i < l->n; i++) {
        void *rec = rec_at(l, i);
        if (rc) {
            if (c->kind->release)
                c->kind->release(rec);
            continue;
        }
        uint32_t len = key_of(c, rec, key);
        int32_t o = gs_strmap_get(&oldx, key, len);
        if (c->kind->merge)
            c->kind->merge(c->user, rec, o >= 0 ? rec_at(old, o) : NULL, true);
        rc = upsert(c, rec, false);
    }
    l->n = 0;
    items_free(l);
    items_free(old);
    gs_strmap_release(&oldx);
    return rc;
}

/* ---------- the informer's callbacks ---------- */

static void on_list_begin(void *user)
{
    struct gs_kcache *c = user;
    items_free(c->staged);
    c->staged = items_new(c->kind);
}

static void bad_object(struct gs_kcache *c, const struct gs_error *err)
{
    if (c->kind->bad)
        c->kind->bad(c->user, err);
    else
        GS_WARN("informer", "%s", err->msg);
}

static int on_list_item(const json_t *obj, void *user)
{
    struct gs_kcache *c = user;
    void *rec = c->staged ? items_push(c->staged) : NULL;
    if (!rec)
        return GS_ENOMEM;
    struct gs_error err;
    gs_error_init(&err);
    int rc = c->kind->decode(obj, rec, &err);
    if (rc == 0)
        return 0;
    c->staged->n--;
    if (rc == GS_ENOMEM)
        return rc;
    bad_object(c, &err);
    return 0;
}

static int on_list_end(const char *rv, int n, bool absent, void *user)
{
    struct gs_kcache *c = user;
    struct gs_kcache_items *l = c->staged;
    c->staged = NULL;
    if (!l && !(l = items_new(c->kind)))
        return GS_ENOMEM;
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    if (c->kind->mode == GS_KCACHE_LISTS) {
        gs_kcache_items_put(c->cur);
        c->cur = l;
    } else {
        rc = replace_locked(c, l);
    }
    c->synced = true;
    c->absent = absent;
    bump(c);
    pthread_mutex_unlock(&c->mu);
    notify(c);
    return rc;
}

static int on_list_failed(int rc, const struct gs_error *err, void *user)
{
    struct gs_kcache *c = user;
    return c->kind->failed ? c->kind->failed(c->user, rc, err) : rc;
}

static int on_event(const char *type, const json_t *obj, void *user)
{
    struct gs_kcache *c = user;
    if (c->kind->mode == GS_KCACHE_LISTS)
        return GS_INFORMER_RELIST; /* the owner reads whole lists */
    void *rec = calloc(1, c->kind->size);
    if (!rec)
        return GS_INFORMER_RELIST;
    struct gs_error err;
    gs_error_init(&err);
    int rc = c->kind->decode(obj, rec, &err);
    char key[GS_KCACHE_KEY_MAX];
    if (rc == 0)
        key_of(c, rec, key);
    pthread_mutex_lock(&c->mu);
    if (rc == 0 && strcmp(type, "DELETED") == 0) {
        remove_key(c, rec);
        if (c->kind->release)
            c->kind->release(rec);
    } else if (rc == 0) {
        upsert(c, rec, true);
    }
    bump_key(c, rc == 0 ? key : NULL);
    pthread_mutex_unlock(&c->mu);
    if (rc)
        bad_object(c, &err);
    free(rec);
    notify(c);
    return 0;
}

static const struct gs_informer_ops cache_ops = {
    .list_begin = on_list_begin,
    .list_item = on_list_item,
    .list_end = on_list_end,
    .list_failed = on_list_failed,
    .event = on_event,
};

/* ---------- the API ---------- */

static struct gs_kcache *cache_new(const struct gs_kcache_kind *kind, void *user,
                                   void (*changed)(void *user))
{
    struct gs_kcache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->kind = kind;
    c->user = user;
    c->changed = changed;
    gs_strmap_init(&c->index);
    pthread_mutex_init(&c->mu, NULL);
    if (kind->mode == GS_KCACHE_EVENTS && !(c->cur = items_new(kind))) {
        gs_kcache_free(c);
        return NULL;
    }
    return c;
}

static struct gs_informer_opts informer_opts(const struct gs_kcache_kind *kind)
{
    return (struct gs_informer_opts){.path = kind->path,
                                     .what = kind->what,
                                     .lane2 = kind->lane2,
                                     .resync_s = kind->resync_s,
                                     .absent_retry_s = kind->absent_retry_s};
}

int gs_kcache_start(struct gs_kube_client *kc, const struct gs_kcache_kind *kind, void *user,
                    void (*changed)(void *user), struct gs_kcache **out, struct gs_error *err)
{
    *out = NULL;
    struct gs_kcache *c = cache_new(kind, user, changed);
    if (!c)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    struct gs_informer_opts o = informer_opts(kind);
    int rc = kc ? gs_informer_start(kc, &o, &cache_ops, c, &c->inf, err) : 0;
    if (rc) {
        gs_kcache_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int gs_kcache_list_once(struct gs_kube_client *kc, const struct gs_kcache_kind *kind, void *user,
                        struct gs_kcache **out, struct gs_error *err)
{
    *out = NULL;
    struct gs_kcache *c = cache_new(kind, user, NULL);
    if (!c)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    struct gs_informer_opts o = informer_opts(kind);
    int rc = gs_informer_list(kc, &o, &cache_ops, c, err);
    if (rc) {
        gs_kcache_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void gs_kcache_free(struct gs_kcache *c)
{
    if (!c)
        return;
    gs_informer_stop(c->inf);
    items_free(c->staged);
    if (c->kind->mode == GS_KCACHE_LISTS)
        gs_kcache_items_put(c->cur);
    else
        items_free(c->cur);
    gs_strmap_release(&c->index);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

uint64_t gs_kcache_gen(struct gs_kcache *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t g = c->gen;
    pthread_mutex_unlock(&c->mu);
    return g;
}

bool gs_kcache_synced(struct gs_kcache *c)
{
    pthread_mutex_lock(&c->mu);
    bool s = c->synced;
    pthread_mutex_unlock(&c->mu);
    return s;
}

bool gs_kcache_absent(struct gs_kcache *c)
{
    pthread_mutex_lock(&c->mu);
    bool a = c->absent;
    pthread_mutex_unlock(&c->mu);
    return a;
}

uint64_t gs_kcache_lists(struct gs_kcache *c)
{
    return c->inf ? gs_informer_lists(c->inf) : 0;
}

void gs_kcache_lock(struct gs_kcache *c)
{
    pthread_mutex_lock(&c->mu);
}

void gs_kcache_unlock(struct gs_kcache *c)
{
    pthread_mutex_unlock(&c->mu);
}

bool gs_kcache_wait_until(struct gs_kcache *c, const char *key,
                          bool (*done)(struct gs_kcache *c, void *arg), void *arg, double timeout_s)
{
    struct timespec until = gs_clock_mono_deadline(timeout_s);
    struct kwaiter me = {.key = key};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* gs_clock_mono_deadline's */
    pthread_cond_init(&me.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_lock(&c->mu);
    bool ok = done(c, arg);
    if (!ok) {
        me.next = c->waiters;
        c->waiters = &me;
        while (!ok && pthread_cond_timedwait(&me.cv, &c->mu, &until) == 0)
            ok = done(c, arg);
        struct kwaiter **at = &c->waiters;
        while (*at != &me)
            at = &(*at)->next;
        *at = me.next;
    }
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&me.cv);
    return ok;
}

int gs_kcache_count(struct gs_kcache *c)
{
    return c->cur ? c->cur->n : 0;
}

void *gs_kcache_at(struct gs_kcache *c, int i)
{
    return rec_at(c->cur, i);
}

void *gs_kcache_find(struct gs_kcache *c, const char *key)
{
    int32_t i = gs_strmap_get(&c->index, key, (uint32_t)strlen(key));
    return i >= 0 ? rec_at(c->cur, i) : NULL;
}

int gs_kcache_put(struct gs_kcache *c, void *rec)
{
    char key[GS_KCACHE_KEY_MAX];
    key_of(c, rec, key);
    pthread_mutex_lock(&c->mu);
    int rc = upsert(c, rec, true);
    bump_key(c, key);
    pthread_mutex_unlock(&c->mu);
    notify(c);
    return rc;
}

int gs_kcache_replace(struct gs_kcache *c, void *v, int n)
{
    struct gs_kcache_items *l = items_new(c->kind);
    if (l && n > 0 && !(l->items = malloc(c->kind->size * (size_t)n))) {
        free(l);
        l = NULL;
    }
    if (!l) {
        for (int i = 0; c->kind->release && i < n; i++)
            c->kind->release((char *)v + c->kind->size * (size_t)i);
        return GS_ENOMEM;
    }
    if (n > 0)
        memcpy(l->items, v, c->kind->size * (size_t)n);
    l->n = l->cap = n;
    pthread_mutex_lock(&c->mu);
    int rc = replace_locked(c, l);
    c->synced = true;
    bump(c);
    pthread_mutex_unlock(&c->mu);
    notify(c);
    return rc;
}

struct gs_kcache_items *gs_kcache_items_get(struct gs_kcache *c)
{
    pthread_mutex_lock(&c->mu);
    struct gs_kcache_items *l = c->kind->mode == GS_KCACHE_LISTS ? c->cur : NULL;
    if (l)
        __atomic_add_fetch(&l->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&c->mu);
    return l;
}

int gs_kcache_open(struct gs_kube_client *kc, struct gs_kcache_kind *kinds, int n, bool watch,
                   double resync_s, struct gs_kcache **out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out) * (size_t)n);
    for (int k = 0; k < n; k++) {
        kinds[k].resync_s = watch ? resync_s : 0;
        int rc = watch ? gs_kcache_start(kc, &kinds[k], &kinds[k], NULL, &out[k], err)
                       : gs_kcache_list_once(kc, &kinds[k], &kinds[k], &out[k], err);
        if (rc) {
            gs_kcache_close(out, k);
            memset(out, 0, sizeof(*out) * (size_t)n);
            return rc;
        }
    }
    return 0;
}

void gs_kcache_close(struct gs_kcache **c, int n)
{
    for (int k = 0; k < n; k++)
        gs_kcache_free(c[k]);
}

uint64_t gs_kcache_gen_sum(struct gs_kcache **c, int n)
{
    uint64_t g = 0;
    for (int k = 0; k < n; k++)
        g += gs_kcache_gen(c[k]);
    return g;
}
