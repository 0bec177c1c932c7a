/* kube/cache: a detached cache fed by gs_kcache_put from another thread, as an informer feeds
 * it — a record replaces the one of its key, the generation moves on per change, and
 * gs_kcache_wait_until wakes on the change that makes its condition hold (the binder's wait
 * for the watch to show its own write), returns at once when it holds already, and gives up
 * after its bound when no change makes it hold; a wait on one record's key is not woken by
 * changes to the others. */
#include "base/error.h"
#include "kube/cache.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rec {
    char name[32];
    long rv;
};

static void rec_key(const void *r, char *out, size_t n)
{
    snprintf(out, n, "%s", ((const struct rec *)r)->name);
}

static const struct gs_kcache_kind kind = {.path = "/test",
                                           .what = "records",
                                           .size = sizeof(struct rec),
                                           .mode = GS_KCACHE_EVENTS,
                                           .key = rec_key};

static struct gs_kcache *open_cache(void)
{
    struct gs_kcache *c = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kcache_start(NULL, &kind, NULL, NULL, &c, &err), 0, "%s", err.msg);
    return c;
}

static void put(struct gs_kcache *c, const char *name, long rv)
{
    struct rec r = {.rv = rv};
    snprintf(r.name, sizeof(r.name), "%s", name);
    cr_assert_eq(gs_kcache_put(c, &r), 0);
}

struct want {
    const char *name;
    long rv;
    int calls;
};

static bool reached(struct gs_kcache *c, void *arg)
{
    struct want *w = arg;
    w->calls++;
    const struct rec *r = gs_kcache_find(c, w->name);
    return r && r->rv >= w->rv;
}

struct feeder {
    struct gs_kcache *c;
    struct want *w; /* read under the cache's lock: the feeder waits for the waiter's first look */
    int others;     /* changes to claim-b between the first two of claim-a */
};

static void pause_ms(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

static void *feed(void *arg)
{
    struct feeder *f = arg;
    /* wait until the waiter has looked once (and found nothing), then move the record on in
     * three steps (claim-b's changes between them): only the last satisfies it */
    for (;;) {
        gs_kcache_lock(f->c);
        int calls = f->w->calls;
        gs_kcache_unlock(f->c);
        if (calls > 0)
            break;
        pause_ms();
    }
    put(f->c, "claim-a", 5);
    for (int k = 0; k < (f->others ? f->others : 1); k++) {
        put(f->c, "claim-b", 9 + k);
        if (f->others)
            pause_ms(); /* room for a waiter woken by each to look */
    }
    put(f->c, "claim-a", 7);
    return NULL;
}

Test(kcache, put_replaces_by_key_and_moves_the_generation)
{
    struct gs_kcache *c = open_cache();
    uint64_t g0 = gs_kcache_gen(c);
    put(c, "claim-a", 1);
    put(c, "claim-a", 2);
    put(c, "claim-b", 1);
    cr_assert_eq(gs_kcache_gen(c), g0 + 3);
    gs_kcache_lock(c);
    cr_assert_eq(gs_kcache_count(c), 2);
    const struct rec *r = gs_kcache_find(c, "claim-a");
    cr_assert(r && r->rv == 2);
    gs_kcache_unlock(c);
    gs_kcache_free(c);
}

/* A wait on key (NULL: any) for claim-a at 7 while the feeder moves it on (others: claim-b's
 * changes between); returns the cache once the wait has held, with claim-a at 7. */
static struct gs_kcache *fed_wait(const char *key, int others, struct want *w)
{
    struct gs_kcache *c = open_cache();
    put(c, "claim-a", 3);
    *w = (struct want){"claim-a", 7, 0};
    struct feeder f = {c, w, others};
    pthread_t t;
    pthread_create(&t, NULL, feed, &f);
    /* a bound far beyond any machine's delay: the feeder's last change ends the wait */
    cr_assert(gs_kcache_wait_until(c, key, reached, w, 600));
    pthread_join(t, NULL);
    gs_kcache_lock(c);
    const struct rec *r = gs_kcache_find(c, "claim-a");
    cr_assert(r && r->rv == 7, "the wait returned before the change it waited for");
    gs_kcache_unlock(c);
    return c;
}

Test(kcache, wait_until_wakes_on_the_change_that_makes_it_hold)
{
    struct want w;
    struct gs_kcache *c = fed_wait(NULL, 0, &w); /* any change wakes a wait naming no key */
    cr_assert_geq(w.calls, 2, "the condition was looked at on the first look and after changes");
    gs_kcache_free(c);
}

Test(kcache, a_wait_on_a_key_sleeps_through_the_other_records_changes)
{
    struct want w;
    struct gs_kcache *c = fed_wait("claim-a", 50, &w);
    cr_assert_geq(gs_kcache_gen(c), 53, "the 52 changes and the first");
    /* the first look, claim-a's two changes; claim-b's 50 woke it for none (one spurious
     * wake-up of a condition variable allowed) */
    cr_assert_leq(w.calls, 4, "looked %d times: woken by other records' changes", w.calls);
    gs_kcache_free(c);
}

Test(kcache, wait_until_returns_at_once_when_it_holds)
{
    struct gs_kcache *c = open_cache();
    put(c, "claim-a", 8);
    struct want w = {"claim-a", 7, 0};
    cr_assert(gs_kcache_wait_until(c, "claim-a", reached, &w, 600));
    cr_assert_eq(w.calls, 1);
    gs_kcache_free(c);
}

Test(kcache, wait_until_gives_up_after_its_bound)
{
    struct gs_kcache *c = open_cache();
    put(c, "claim-a", 3);
    struct want w = {"claim-a", 7, 0};
    cr_assert_not(gs_kcache_wait_until(c, "claim-a", reached, &w, 0.02));
    struct want gone = {"claim-z", 1, 0};
    cr_assert_not(gs_kcache_wait_until(c, "claim-z", reached, &gone, 0));
    gs_kcache_free(c);
}
