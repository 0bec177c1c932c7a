/* scheduler.c - the `gpusched scheduler` daemon (sched/scheduler.h): the wiring of its
 * components, each owning its state and lock: the store of Nodes and Pods (sched/store.c), the
 * tenancy objects (sched/tenancy.c) and the DRA kinds (sched/claims.c), all fed by
 * kube/cache.c; the counters and pending report (sched/metrics.c) and the journal
 * (sched/journal.c); the binder's write lanes (sched/binder.c); the scheduling cycle
 * (sched/driver.c); the HTTP endpoints (sched/endpoints.c) and, in extender mode,
 * kube-scheduler's extender verbs (sched/extender.c). Here are only the threads that tie them:
 * the main loop runs a cycle when the store changes, a policy thread takes new tenancy lists,
 * and a Lease (kube/lease.c) elects the leader. Explain runs one dry cycle over lists made
 * once. */
#include "scheduler.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "../base/log.h"
#include "../kube/lease.h"
#include "binder.h"
#include "claims.h"
#include "driver.h"
#include "endpoints.h"
#include "extender.h"
#include "journal.h"
#include "metrics.h"
#include "store.h"
#include "tenancy.h"
#include "volbind.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The daemon: its components and the flags that stop it. */
struct daemon {
    struct gs_kube_client *kc;
    struct gs_scheduler_opts o;
    volatile int quit;  /* set when the main loop ends: stops the helper threads */
    volatile int fatal; /* lost the lease, or a helper thread could not go on */
    volatile int leader;
    struct gs_store *store;
    struct gs_policy_feed *policy;
    struct gs_claims *claims;
    struct gs_metrics *metrics;
    struct gs_journal journal;
    struct gs_binder *binder;
    struct gs_extender *extender;
    struct gs_driver *driver;
    struct gs_volassume *vols;
};

/* The leader flag changed: the main loop looks at it now. */
static void leader_changed(void *store)
{
    gs__store_changed(store);
}

/* kube/lease.c's loop; losing the lease is fatal to the daemon. */
static void *leader_main(void *arg)
{
    struct daemon *s = arg;
    struct gs_lease_opts lo = {.ns = s->o.lease_namespace,
                               .name = s->o.lease_name,
                               .identity = s->o.identity,
                               .duration_s = s->o.lease_duration_s,
                               .renew_deadline_s = s->o.renew_deadline_s,
                               .retry_period_s = s->o.retry_period_s,
                               .changed = leader_changed,
                               .user = s->store};
    if (gs_lease_run(s->kc, &lo, &s->leader, &s->quit) != 0) {
        gs_flag_set(&s->fatal, 1);
        gs__store_changed(s->store);
    }
    return NULL;
}

/* New tenancy lists (and DRA lists) give waiting pods another look. */
static void *policy_main(void *arg)
{
    struct daemon *s = arg;
    double backoff = 1;
    uint64_t claims_gen = 0;
    while (!gs_flag_get(&s->quit) && !gs_flag_get(&s->fatal)) {
        /* DRA objects changed: pods with claims get another look now */
        uint64_t cg = s->claims ? gs_claims_gen(s->claims) : 0;
        if (cg != claims_gen) {
            claims_gen = cg;
            gs__store_kick(s->store, true);
        }
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_policy_feed_refresh(s->policy, &err);
        gs__metrics_set_policy_lists(s->metrics, gs_policy_feed_lists(s->policy));
        if (rc < 0) {
            GS_WARN("tenancy", "listing queues, quotas, pod groups and PDBs: %s; retrying in %.0fs",
                    err.msg, backoff);
            gs_clock_sleep(backoff);
            backoff = backoff * 2 > 30 ? 30 : backoff * 2;
            continue;
        }
        backoff = 1;
        if (rc == 0) {
            gs_clock_sleep(0.05); /* nothing changed: the watches say when */
            continue;
        }
        gs__store_kick(s->store, false); /* quota or groups changed */
    }
    return NULL;
}

static void daemon_free(struct daemon *s)
{
    gs__driver_free(s->driver);
    gs__extender_free(s->extender);
    gs_claims_free(s->claims);
    gs_policy_feed_free(s->policy);
    gs__metrics_free(s->metrics);
    gs__journal_release(&s->journal);
    gs__store_free(s->store);
    gs_volassume_free(s->vols);
    gs_kube_client_free(s->kc);
    free(s);
}

/* A daemon's state with its feeds (how: watched or listed once); takes the client (freed on
 * failure too). */
static struct daemon *daemon_new(struct gs_kube_client *client, const struct gs_scheduler_opts *o,
                                 enum gs_store_feed how, struct gs_error *err)
{
    struct daemon *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_kube_client_free(client);
        gs_error_set(err, GS_ENOMEM, "out of memory");
        return NULL;
    }
    s->kc = client;
    s->o = *o;
    if (!s->o.max_backoff_s)
        s->o.max_backoff_s = 60;
    gs__journal_init(&s->journal);
    bool watch = how == GS_STORE_WATCH;
    s->leader = !watch || !s->o.leader_elect;
    int rc = (s->metrics = gs__metrics_new(&s->leader)) && (s->vols = gs_volassume_new())
                 ? 0
                 : GS_ENOMEM;
    if (!rc)
        rc = gs__store_new(client, how, o->mig_config, s->o.max_backoff_s, &s->store, err);
    if (!rc && !(s->policy = gs_policy_feed_new(client, watch, 30, err)))
        rc = err->code ? err->code : GS_ENOMEM;
    if (!rc && (!watch || !s->o.extender) &&
        !(s->claims = gs_claims_new(client, watch, watch ? 30 : 0, err)))
        rc = err->code ? err->code : GS_ENOMEM;
    if (rc) {
        if (rc == GS_ENOMEM && !err->code)
            gs_error_set(err, rc, "out of memory");
        daemon_free(s);
        return NULL;
    }
    return s;
}

static struct gs_driver *driver_new(struct daemon *s, bool dry)
{
    struct gs_driver_deps d = {
        .store = s->store,
        .policy = s->policy,
        .claims = s->claims,
        .binder = s->binder,
        .metrics = s->metrics,
        .journal = &s->journal,
        .scheduler_name = s->o.scheduler_name,
        .policy_name = s->o.policy,
        .dry = dry,
        .dynamic_mig = s->o.dynamic_mig,
        .recarve_hold_s = s->o.recarve_hold_s,
        .min_runtime_s = s->o.min_runtime_s,
        .topo_flag = s->o.topology_levels,
        .vols = s->vols,
        .volume_bind_timeout_s = s->o.volume_bind_timeout_s > 0 ? s->o.volume_bind_timeout_s : 600};
    return gs__driver_new(&d);
}

/* The main loop: a cycle when the store changed and a pod of ours is due (the gauges refresh
 * each second), while this replica leads. Whatever its state, it sleeps until the store's
 * generation moves (the informers' syncs, the tenancy feed's first lists and the leader flag
 * move it too) or a second has passed. Returns 0 when stopped, or the error that ended it. */
static int run_loop(struct daemon *s, volatile int *stop, struct gs_error *err)
{
    uint64_t seen = (uint64_t)-1;
    double last_cycle = 0;
    while (!gs_flag_get(stop) && !gs_flag_get(&s->fatal)) {
        seen = gs__store_wait(s->store, seen, 1.0);
        /* every feed listed first, as kube-scheduler waits for its caches: a pod judged on
         * ResourceSlices not read yet would be told it cannot be placed */
        bool ready = gs__store_synced(s->store) && gs_policy_feed_ready(s->policy) &&
                     (!s->claims || gs_claims_synced(s->claims));
        if (!ready || !gs_flag_get(&s->leader) || s->o.extender)
            continue;
        /* watch events for pods we just bound need no cycle */
        int due = gs__store_due_count(s->store, s->o.scheduler_name, GS_BIND_WORKERS);
        if (!due && gs_clock_mono() - last_cycle < 1.0)
            continue;
        /* as many connections as the pods due can use open while the cycle decides (a core
         * was idle through it; the handshakes held back a burst's first binds) */
        gs__binder_warm(s->binder, due);
        last_cycle = gs_clock_mono();
        int rc = gs__driver_cycle(s->driver);
        if (rc)
            return gs_error_set(err, rc, "scheduling cycle: %s", gs_error_name(rc));
    }
    if (gs_flag_get(&s->fatal))
        return gs_error_set(err, GS_EIO, "lost the leader lease");
    return 0;
}

int gs_scheduler_run(struct gs_kube_client *client, const struct gs_scheduler_opts *opts,
                     volatile int *stop, struct gs_error *err)
{
    struct daemon *s = daemon_new(client, opts, GS_STORE_WATCH, err);
    if (!s)
        return err->code;
    int rc = 0;
    struct gs_binder_deps bd = {.kc = s->kc,
                                .store = s->store,
                                .claims = s->claims,
                                .metrics = s->metrics,
                                .journal = &s->journal,
                                .vols = s->vols,
                                .identity = s->o.identity};
    if (!(s->binder = gs__binder_start(&bd)) || !(s->driver = driver_new(s, false)) ||
        (s->o.extender &&
         !(s->extender = gs__extender_new(s->kc, s->store, s->metrics, s->o.policy))))
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    struct gs_endpoints ep = {.fatal = &s->fatal,
                              .extender = s->extender,
                              .ui = {.store = s->store,
                                     .policy = s->policy,
                                     .metrics = s->metrics,
                                     .journal = &s->journal,
                                     .scheduler_name = s->o.scheduler_name,
                                     .extender = s->o.extender,
                                     .dynamic_mig = s->o.dynamic_mig,
                                     .leader = &s->leader},
                              .claims = s->claims};
    struct gs_httpd *http = NULL;
    if (!rc && s->o.http_port > 0) {
        struct gs_httpd_opts ho = {.name = s->o.extender ? "extender" : "scheduler",
                                   .bind = s->o.http_bind,
                                   .port = s->o.http_port};
        if ((rc = gs_httpd_start(&ho, gs__endpoints_handle, &ep, &http, err)))
            gs_error_prefix(err, "HTTP server (--http-port, --http-bind)");
    }
    pthread_t t_leader, t_policy;
    bool policy = !rc && pthread_create(&t_policy, NULL, policy_main, s) == 0;
    bool leader = !rc && s->o.leader_elect && pthread_create(&t_leader, NULL, leader_main, s) == 0;
    if (!rc && (!policy || (s->o.leader_elect && !leader)))
        rc = gs_error_set(err, GS_EIO, "cannot start a thread");
    if (!rc)
        rc = run_loop(s, stop, err);
    gs_flag_set(&s->quit, 1); /* stop the helper threads too */
    if (policy)
        pthread_join(t_policy, NULL);
    if (leader)
        pthread_join(t_leader, NULL);
    gs_httpd_stop(http);
    /* let queued binds and writes finish, then stop the workers */
    gs__binder_stop(s->binder);
    daemon_free(s);
    return rc;
}

int gs_scheduler_explain(struct gs_kube_client *client, const struct gs_scheduler_opts *opts,
                         json_t **out, struct gs_error *err)
{
    *out = NULL;
    struct daemon *s = daemon_new(client, opts, GS_STORE_LIST, err);
    if (!s)
        return err->code;
    int rc = (s->driver = driver_new(s, true)) ? 0 : GS_ENOMEM;
    if (!rc)
        rc = gs__driver_cycle(s->driver);
    if (rc)
        gs_error_set(err, rc, "scheduling cycle: %s", gs_error_name(rc));
    if (!rc && opts->explain_decisions) {
        *out = gs__driver_decision_lines(s->driver);
        if (!*out)
            *out = json_array();
    } else if (!rc) {
        *out = gs__metrics_report(s->metrics);
    }
    daemon_free(s);
    return rc;
}
