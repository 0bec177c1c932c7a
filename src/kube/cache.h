/* cache.h - one kind of Kubernetes object kept current for a daemon: an informer
 * (kube/informer.h) lists and watches the kind, a per-kind table of callbacks decodes each
 * object into a typed record, and the cache keeps the records by key (the key callback's
 * "namespace/name" or "name"), with a generation counter, a synced flag, its own lock, and
 * a call to its owner after every change. The scheduler keeps its Nodes and Pods, its DRA
 * kinds and its tenancy kinds in caches of this one kind (sched/store.c, sched/claims.c,
 * sched/tenancy.c).
 *
 * Two ways to follow a kind (struct gs_kcache_kind.mode):
 *   GS_KCACHE_EVENTS  each watch event is applied to the record of its key (ADDED and
 *                     MODIFIED replace or add it, DELETED removes it) and a complete list
 *                     replaces every record. Records are read under the cache's lock
 *                     (gs_kcache_lock, gs_kcache_count, gs_kcache_at, gs_kcache_find): the
 *                     owner may change the fields it keeps beside the object's there.
 *   GS_KCACHE_LISTS   any watch event lists the kind again; each complete list is published
 *                     as an immutable, counted array of records (struct gs_kcache_items)
 *                     that readers hold without copying or locking, as long as they like.
 *
 * Invariants: at most one record per key (EVENTS); the generation grows by one per complete
 * list and per applied event; a record is released (kind.release) exactly once.
 *
 * Threads: gs_kcache_start runs the informer on its own thread; decode, bad and failed run
 * there without the lock, merge and removed with it held, changed after it is released.
 * Every other function is thread-safe, except gs_kcache_at and gs_kcache_find, which need the
 * lock (gs_kcache_lock). gs_kcache_free expects no other user. */
#ifndef GS_KUBE_CACHE_H
#define GS_KUBE_CACHE_H

#include "client.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_error;
struct gs_kcache;

enum gs_kcache_mode { GS_KCACHE_EVENTS = 0, GS_KCACHE_LISTS };

#define GS_KCACHE_KEY_MAX 320

/* What one kind is and how its records are made. Must outlive the cache. */
struct gs_kcache_kind {
    const char *path, *what; /* list and watch path (may carry a query); plural for logs */
    size_t size;             /* bytes of one record */
    enum gs_kcache_mode mode;
    bool lane2;            /* list and watch on the client's second lane */
    double resync_s;       /* > 0: list again at least this often */
    double absent_retry_s; /* > 0: a 404 means the API is absent: list again after this */
    /* Decode obj into rec (size bytes, zeroed). Returns 0; GS_ENOMEM fails the list; any
     * other code skips the object (bad is told why). */
    int (*decode)(const json_t *obj, void *rec, struct gs_error *err);
    /* Free what a record holds. NULL: plain data. */
    void (*release)(void *rec);
    /* The record's key, at most GS_KCACHE_KEY_MAX bytes with its NUL. */
    void (*key)(const void *rec, char *out, size_t n);
    /* An object that did not decode. NULL: a warning with err's message. */
    void (*bad)(void *user, const struct gs_error *err);
    /* A list failed with rc: return 0 to take the kind as absent (no records, listed again
     * after absent_retry_s, or 1 s), or rc to retry it after a backoff. NULL: rc. */
    int (*failed)(void *user, int rc, const struct gs_error *err);
    /* EVENTS: rec (decoded, owned by the cache from now on) is about to take the place of old,
     * the record its key had (NULL: none). listed: rec comes from a complete list, and old
     * from the records that list replaces. May change rec (what the owner keeps beside the
     * object); must not keep pointers into old. May be NULL. */
    void (*merge)(void *user, void *rec, const void *old, bool listed);
    /* EVENTS: rec is about to be removed (a DELETED event). May be NULL. */
    void (*removed)(void *user, const void *rec);
};

/* A kind's decode (release) callback made from a typed reader int fn(const json_t *, T *,
 * struct gs_error *) (a typed void fn(T *)). */
#define GS_KCACHE_DECODER(name, fn)                                                                \
    static int name(const json_t *obj, void *rec, struct gs_error *err)                            \
    {                                                                                              \
        return fn(obj, rec, err);                                                                  \
    }
#define GS_KCACHE_RELEASER(name, fn)                                                               \
    static void name(void *rec)                                                                    \
    {                                                                                              \
        fn(rec);                                                                                   \
    }

/* A published list (GS_KCACHE_LISTS): n records of the kind's size, in the list's order. */
struct gs_kcache_items {
    int n;
    void *items;
    /* the cache's own: */
    long refs;
    int cap;
    const struct gs_kcache_kind *kind;
};

/* Start following the kind: an informer on a thread of its own (kc NULL: a detached cache
 * that only gs_kcache_put and gs_kcache_replace feed, for tests). changed(user) is called
 * after every change (may be NULL). Returns 0 and *out, or GS_ENOMEM or GS_EIO. */
int gs_kcache_start(struct gs_kube_client *kc, const struct gs_kcache_kind *kind, void *user,
                    void (*changed)(void *user), struct gs_kcache **out, struct gs_error *err);
/* List the kind once on the caller's thread into a new cache (no watch). Returns 0 and *out,
 * or the list's error (a failure the kind's failed callback forgives leaves it absent). */
int gs_kcache_list_once(struct gs_kube_client *kc, const struct gs_kcache_kind *kind, void *user,
                        struct gs_kcache **out, struct gs_error *err);
/* Stop the informer, release every record and free c. NULL is a no-op. */
void gs_kcache_free(struct gs_kcache *c);

/* Several kinds at once (a component's feed): kinds[0..n) (the caller's copies, which must
 * outlive the caches) get resync_s with watch, 0 without, and cache k, with user &kinds[k],
 * is started (watch; no changed callback) or listed once into out[k]. Returns 0, or the first
 * error with every cache already opened freed (out zeroed). */
int gs_kcache_open(struct gs_kube_client *kc, struct gs_kcache_kind *kinds, int n, bool watch,
                   double resync_s, struct gs_kcache **out, struct gs_error *err);
/* Free c[0..n) (NULL entries are skipped). */
void gs_kcache_close(struct gs_kcache **c, int n);
/* The sum of the generations of c[0..n): it changes when any of them changes. */
uint64_t gs_kcache_gen_sum(struct gs_kcache **c, int n);

/* The generation (complete lists and applied events so far). */
uint64_t gs_kcache_gen(struct gs_kcache *c);
/* Whether a list has completed, and whether the last one found the kind absent. */
bool gs_kcache_synced(struct gs_kcache *c);
bool gs_kcache_absent(struct gs_kcache *c);
/* Lists made so far by its informer (failed ones included, not probes of an absent API); 0
 * without one. */
uint64_t gs_kcache_lists(struct gs_kcache *c);

/* EVENTS: hold and drop the lock; the record count, the i-th record (0 <= i < count; the
 * order is the last list's, with additions appended and a removal moving the last record
 * into its place) and the record of a key (NULL: none). The last three need the lock. */
void gs_kcache_lock(struct gs_kcache *c);
void gs_kcache_unlock(struct gs_kcache *c);
int gs_kcache_count(struct gs_kcache *c);
void *gs_kcache_at(struct gs_kcache *c, int i);
void *gs_kcache_find(struct gs_kcache *c, const char *key);
/* Wait, up to timeout_s seconds, until done(c, arg) holds; done runs with the lock held (it may
 * use gs_kcache_count, _at, _find), once now and again after every change to the record of key
 * and every list (key NULL: after every change). Changes to other records wake no waiter. Returns
 * whether it held. */
bool gs_kcache_wait_until(struct gs_kcache *c, const char *key,
                          bool (*done)(struct gs_kcache *c, void *arg), void *arg,
                          double timeout_s);
/* EVENTS, without the lock: apply rec as an ADDED event (the cache takes what rec holds),
 * or v[0..n) as a complete list (likewise each; the cache is then synced). Returns 0 or
 * GS_ENOMEM (the records not stored are released). */
int gs_kcache_put(struct gs_kcache *c, void *rec);
int gs_kcache_replace(struct gs_kcache *c, void *v, int n);

/* LISTS: a reference to the last complete list (NULL before one), and its release. */
struct gs_kcache_items *gs_kcache_items_get(struct gs_kcache *c);
void gs_kcache_items_put(struct gs_kcache_items *l);

#endif
