/* scheduler.c - the `gpusched scheduler` daemon (sched/scheduler.h): its state
 * (sched/sched_internal.h) and threads. Two informers (kube/informer.c) keep the store
 * (sched/store.c) of Nodes and Pods; a policy thread keeps the tenancy objects
 * (sched/tenancy.c); a Lease (kube/lease.c) elects the leader; the main loop runs a
 * scheduling cycle (sched/driver.c) when the store changes, whose binds and writes the binder
 * threads (sched/binder.c) send; the HTTP endpoints (sched/endpoints.c) serve health, metrics
 * and, in extender mode, kube-scheduler's extender verbs (sched/extender.c). Explain runs one
 * dry cycle over lists made once. */
#include "scheduler.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/buf.h"
#include "../base/flag.h"
#include "../base/log.h"
#include "../kube/informer.h"
#include "../kube/lease.h"
#include "binder.h"
#include "driver.h"
#include "endpoints.h"
#include "sched_internal.h"
#include "store.h"
#include "tenancy.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------- informers: Nodes and Pods into the store ---------- */

enum kind { K_NODES, K_PODS };

/* One kind's informer (kube/informer.h) and what its list stages until the list is
 * complete. */
struct feed {
    struct gs_sched *s;
    enum kind kind;
    struct gs_kube_node *lnodes;
    int nl, capl;
    struct gs_kube_pod *lpods;
    int npl, cappl;
};

#define NODES_PATH "/api/v1/nodes"
#define PODS_PATH                                                                                  \
    "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"

static const struct gs_informer_opts nodes_opts = {.path = NODES_PATH, .what = "nodes"};
static const struct gs_informer_opts pods_opts = {.path = PODS_PATH, .what = "pods"};

static void drop_staged(struct feed *in)
{
    for (int i = 0; i < in->nl; i++)
        gs_kube_node_release(&in->lnodes[i]);
    for (int i = 0; i < in->npl; i++)
        gs_kube_pod_release(&in->lpods[i]);
    in->nl = in->npl = 0;
}

static void feed_release(struct feed *in)
{
    drop_staged(in);
    free(in->lnodes);
    free(in->lpods);
}

static void on_list_begin(void *user)
{
    drop_staged(user);
}

static int on_list_item(const json_t *item, void *user)
{
    struct feed *in = user;
    struct gs_error err;
    gs_error_init(&err);
    if (in->kind == K_NODES) {
        struct gs_kube_node n;
        if (gs_kube_node_read(item, &n, &err)) {
            GS_WARN("informer", "%s", err.msg);
            return 0;
        }
        if (in->nl == in->capl) {
            void *v = gs_grow(in->lnodes, &in->capl, sizeof(n), 256);
            if (!v) {
                gs_kube_node_release(&n);
                return GS_ENOMEM;
            }
            in->lnodes = v;
        }
        in->lnodes[in->nl++] = n;
    } else {
        struct gs_kube_pod p;
        if (gs_kube_pod_read(item, &p, &err)) {
            GS_WARN("informer", "%s", err.msg);
            return 0;
        }
        gs_kube_pod_read_constraints(item, &p);
        if (in->npl == in->cappl) {
            void *v = gs_grow(in->lpods, &in->cappl, sizeof(p), 256);
            if (!v) {
                gs_kube_pod_release(&p);
                return GS_ENOMEM;
            }
            in->lpods = v;
        }
        in->lpods[in->npl++] = p;
    }
    return 0;
}

/* A complete list replaces the store's nodes or pods (pods that stay keep their backoff). */
static int on_list_end(const char *rv, int n, bool absent, void *user)
{
    struct feed *in = user;
    struct gs_store *st = &in->s->st;
    int rc;
    pthread_mutex_lock(&st->mu);
    if (in->kind == K_NODES) {
        rc = gs__store_replace_nodes(st, in->lnodes, in->nl);
        st->nodes_synced = true;
    } else {
        rc = gs__store_replace_pods(st, in->lpods, in->npl);
        st->pods_synced = true;
    }
    st->gen++;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    drop_staged(in);
    return rc;
}

static int on_event(const char *type, const json_t *obj, void *user)
{
    struct feed *in = user;
    struct gs_store *st = &in->s->st;
    struct gs_error err;
    gs_error_init(&err);
    pthread_mutex_lock(&st->mu);
    if (in->kind == K_NODES) {
        struct gs_kube_node n;
        if (gs_kube_node_read(obj, &n, &err) == 0) {
            if (strcmp(type, "DELETED") == 0)
                gs__store_delete_node(st, n.name);
            else
                gs__store_upsert_node(st, &n);
            gs_kube_node_release(&n);
        } else {
            GS_WARN("informer", "%s", err.msg);
        }
    } else {
        struct gs_kube_pod p;
        if (gs_kube_pod_read(obj, &p, &err) == 0) {
            if (strcmp(type, "DELETED") == 0) {
                gs__store_delete_pod(st, p.ns, p.name);
            } else {
                gs_kube_pod_read_constraints(obj, &p);
                gs__store_upsert_pod(st, &p);
                gs_kube_pod_release(&p);
            }
        } else {
            GS_WARN("informer", "%s", err.msg);
        }
    }
    st->gen++;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    return 0;
}

static const struct gs_informer_ops feed_ops = {
    .list_begin = on_list_begin,
    .list_item = on_list_item,
    .list_end = on_list_end,
    .event = on_event,
};

/* ---------- leader election ---------- */

/* kube/lease.c's loop; losing the lease is fatal to the daemon. */
static void *leader_main(void *arg)
{
    struct gs_sched *s = arg;
    struct gs_lease_opts lo = {.ns = s->o.lease_namespace,
                               .name = s->o.lease_name,
                               .identity = s->o.identity,
                               .duration_s = s->o.lease_duration_s,
                               .renew_deadline_s = s->o.renew_deadline_s,
                               .retry_period_s = s->o.retry_period_s};
    if (gs_lease_run(s->kc, &lo, &s->leader, &s->quit) != 0) {
        s->fatal = 1;
        pthread_mutex_lock(&s->st.mu);
        pthread_cond_broadcast(&s->st.cv);
        pthread_mutex_unlock(&s->st.mu);
    }
    return NULL;
}

/* Whether a pending pod of ours is due (not in backoff): a cycle without one only refreshes
 * the gauges. Called with the store locked. */
static bool work_due(const struct gs_sched *s)
{
    double t = gs_clock_mono();
    for (int i = 0; i < s->st.npods; i++) {
        const struct gs_store_pod *e = &s->st.pods[i];
        if (!e->p.node[0] && !e->p.terminating && e->next_try <= t &&
            strcmp(e->p.scheduler, s->o.scheduler_name) == 0)
            return true;
    }
    return false;
}

/* ---------- tenancy objects ---------- */

static void *policy_main(void *arg)
{
    struct gs_sched *s = arg;
    double backoff = 1;
    struct gs_policy_feed *feed = gs_policy_feed_new(s->kc, 30);
    if (!feed) {
        s->fatal = true;
        return NULL;
    }
    uint64_t claims_gen = 0;
    while (!gs_flag_get(&s->quit) && !s->fatal) {
        /* DRA objects changed: pods with claims get another look now */
        uint64_t cg = s->claims ? gs_claims_gen(s->claims) : 0;
        if (cg != claims_gen) {
            claims_gen = cg;
            pthread_mutex_lock(&s->st.mu);
            for (int i = 0; i < s->st.npods; i++)
                if (!s->st.pods[i].p.node[0] && s->st.pods[i].p.ndra > 0)
                    s->st.pods[i].next_try = 0;
            s->st.gen++;
            pthread_cond_broadcast(&s->st.cv);
            pthread_mutex_unlock(&s->st.mu);
        }
        struct gs_policy_objs po;
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_policy_feed_sync(feed, &po, &err);
        pthread_mutex_lock(&s->mmu);
        s->policy_lists = gs_policy_feed_lists(feed);
        pthread_mutex_unlock(&s->mmu);
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
        pthread_mutex_lock(&s->pmu);
        bool changed = !s->po_synced || !gs_policy_objs_equal(&po, &s->po);
        if (changed) {
            gs_policy_objs_release(&s->po);
            s->po = po;
            s->po_synced = true;
        } else {
            gs_policy_objs_release(&po);
        }
        pthread_mutex_unlock(&s->pmu);
        if (changed) {
            pthread_mutex_lock(&s->st.mu);
            /* quota or groups changed: waiting pods get another look now */
            for (int i = 0; i < s->st.npods; i++)
                if (!s->st.pods[i].p.node[0])
                    s->st.pods[i].next_try = 0;
            s->st.gen++;
            pthread_cond_broadcast(&s->st.cv);
            pthread_mutex_unlock(&s->st.mu);
        }
    }
    gs_policy_feed_free(feed);
    return NULL;
}

/* A daemon's state with its locks; takes the client (freed on failure too). */
static struct gs_sched *sched_new(struct gs_kube_client *client,
                                  const struct gs_scheduler_opts *opts, volatile int *stop)
{
    struct gs_sched *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_kube_client_free(client);
        return NULL;
    }
    s->kc = client;
    s->o = *opts;
    gs__store_init(&s->st, opts->mig_config);
    s->stop = stop;
    if (!s->o.max_backoff_s)
        s->o.max_backoff_s = 60;
    pthread_mutex_init(&s->mmu, NULL);
    pthread_mutex_init(&s->emu, NULL);
    pthread_mutex_init(&s->pmu, NULL);
    gs__journal_init(&s->journal);
    return s;
}

static void sched_free(struct gs_sched *s)
{
    gs_claims_free(s->claims);
    gs_policy_objs_release(&s->po);
    json_decref(s->pending_report);
    json_decref(s->decision_lines);
    gs__journal_release(&s->journal);
    gs__store_release(&s->st);
    gs_kube_client_free(s->kc);
    pthread_mutex_destroy(&s->mmu);
    pthread_mutex_destroy(&s->emu);
    pthread_mutex_destroy(&s->pmu);
    free(s);
}

int gs_scheduler_run(struct gs_kube_client *client, const struct gs_scheduler_opts *opts,
                     volatile int *stop, struct gs_error *err)
{
    struct gs_sched *s = sched_new(client, opts, stop);
    if (!s)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    s->leader = !s->o.leader_elect;
    struct gs_httpd *http = NULL;
    if (s->o.http_port > 0) {
        struct gs_httpd_opts ho = {.name = s->o.extender ? "extender" : "scheduler",
                                   .bind = s->o.http_bind,
                                   .port = s->o.http_port};
        int rc = gs_httpd_start(&ho, gs__endpoints_handle, s, &http, err);
        if (rc) {
            sched_free(s);
            return gs_error_prefix(err, "HTTP server (--http-port, --http-bind)");
        }
    }
    gs__binder_start(s);
    struct feed nodes = {.s = s, .kind = K_NODES}, pods = {.s = s, .kind = K_PODS};
    struct gs_informer *in_nodes = NULL, *in_pods = NULL;
    int rc = 0;
    if (!s->o.extender && !(s->claims = gs_claims_new(s->kc, true, 30, err)))
        rc = err->code ? err->code : gs_error_set(err, GS_ENOMEM, "out of memory");
    if (!rc)
        rc = gs_informer_start(s->kc, &nodes_opts, &feed_ops, &nodes, &in_nodes, err);
    if (!rc)
        rc = gs_informer_start(s->kc, &pods_opts, &feed_ops, &pods, &in_pods, err);
    pthread_t t_leader, t_policy;
    bool policy = !rc && pthread_create(&t_policy, NULL, policy_main, s) == 0;
    bool leader = !rc && s->o.leader_elect && pthread_create(&t_leader, NULL, leader_main, s) == 0;
    if (!rc && (!policy || (s->o.leader_elect && !leader)))
        rc = gs_error_set(err, GS_EIO, "cannot start a thread");
    struct gs_engine *engine = NULL;
    int engine_nodes = 0;
    uint64_t seen = (uint64_t)-1;
    double last_cycle = 0;
    while (!rc && !gs_flag_get(stop) && !s->fatal) {
        pthread_mutex_lock(&s->st.mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        if (s->st.gen == seen)
            pthread_cond_timedwait(&s->st.cv, &s->st.mu, &ts);
        bool ready = s->st.nodes_synced && s->st.pods_synced;
        pthread_mutex_lock(&s->pmu);
        ready = ready && s->po_synced;
        pthread_mutex_unlock(&s->pmu);
        uint64_t gen = s->st.gen;
        /* watch events for pods we just bound need no cycle; the gauges refresh each second */
        bool due = ready && (work_due(s) || gs_clock_mono() - last_cycle >= 1.0);
        pthread_mutex_unlock(&s->st.mu);
        if (!ready || !gs_flag_get(&s->leader) || s->o.extender)
            continue;
        seen = gen;
        if (!due)
            continue;
        last_cycle = gs_clock_mono();
        rc = gs__driver_cycle(s, &engine, &engine_nodes);
        if (rc) {
            gs_error_set(err, rc, "scheduling cycle: %s", gs_error_name(rc));
            break;
        }
    }
    if (s->fatal && !rc)
        rc = gs_error_set(err, GS_EIO, "lost the leader lease");
    gs_flag_set(&s->quit, 1); /* stop the helper threads too */
    gs_informer_stop(in_nodes);
    gs_informer_stop(in_pods);
    feed_release(&nodes);
    feed_release(&pods);
    if (policy)
        pthread_join(t_policy, NULL);
    if (leader)
        pthread_join(t_leader, NULL);
    gs_httpd_stop(http);
    /* let queued binds and writes finish, then stop the workers */
    gs__binder_stop(s);
    gs_engine_free(engine);
    gs_engine_free(s->xengine);
    sched_free(s);
    return rc;
}

int gs_scheduler_explain(struct gs_kube_client *client, const struct gs_scheduler_opts *opts,
                         json_t **out, struct gs_error *err)
{
    *out = NULL;
    int stop = 0;
    struct gs_sched *s = sched_new(client, opts, &stop);
    if (!s)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    s->dry = true;
    gs_flag_set(&s->leader, 1);
    struct feed nodes = {.s = s, .kind = K_NODES}, pods = {.s = s, .kind = K_PODS};
    int rc = gs_informer_list(client, &nodes_opts, &feed_ops, &nodes, err);
    if (!rc)
        rc = gs_informer_list(client, &pods_opts, &feed_ops, &pods, err);
    if (!rc)
        rc = gs_policy_objs_list(client, &s->po, err);
    if (!rc && !(s->claims = gs_claims_new(client, false, 0, err)))
        rc = err->code ? err->code : gs_error_set(err, GS_ENOMEM, "out of memory");
    feed_release(&nodes);
    feed_release(&pods);
    struct gs_engine *engine = NULL;
    int engine_nodes = 0;
    if (!rc && (rc = gs__driver_cycle(s, &engine, &engine_nodes)))
        gs_error_set(err, rc, "scheduling cycle: %s", gs_error_name(rc));
    if (!rc)
        *out = opts->explain_decisions
                   ? json_incref(s->decision_lines ? s->decision_lines : json_array())
                   : json_incref(s->pending_report ? s->pending_report : json_array());
    gs_engine_free(engine);
    sched_free(s);
    return rc;
}
