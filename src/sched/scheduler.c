/* scheduler.c - the `gpusched scheduler` daemon (sched/scheduler.h): its state
 * (sched/sched_internal.h) and threads. Informers over kube/client.c keep the store
 * (sched/store.c) of Nodes and Pods; a policy thread keeps the tenancy objects
 * (sched/tenancy.c); a Lease elects the leader; the main loop runs a scheduling cycle
 * (sched/driver.c) when the store changes, whose binds and writes the binder threads
 * (sched/binder.c) send; the HTTP endpoints (sched/endpoints.c) serve health, metrics and, in
 * extender mode, kube-scheduler's extender verbs (sched/extender.c). Explain runs one dry
 * cycle over lists made once. */
#include "scheduler.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "../base/log.h"
#include "binder.h"
#include "driver.h"
#include "endpoints.h"
#include "sched_internal.h"
#include "store.h"
#include "tenancy.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------- informers ---------- */

enum kind { K_NODES, K_PODS };

struct informer {
    struct gs_sched *s;
    enum kind kind;
    char rv[64];
    bool relist;
    /* list staging */
    struct gs_kube_node *lnodes;
    int nl, capl;
    struct gs_kube_pod *lpods;
    int npl, cappl;
};

#define NODES_PATH "/api/v1/nodes"
#define PODS_PATH                                                                                  \
    "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"

static int on_list_item(const json_t *item, void *user)
{
    struct informer *in = user;
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

#define RELIST 7001

static int on_event(const char *type, const json_t *obj, void *user)
{
    struct informer *in = user;
    struct gs_store *st = &in->s->st;
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (strcmp(type, "ERROR") == 0) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        GS_INFO("informer", "watch error %lld: %s; relisting", (long long)code,
                json_string_value(json_object_get(obj, "message")));
        return RELIST;
    }
    if (strcmp(type, "BOOKMARK") == 0) {
        if (rv)
            snprintf(in->rv, sizeof(in->rv), "%s", rv);
        return 0;
    }
    struct gs_error err;
    gs_error_init(&err);
    pthread_mutex_lock(&st->mu);
    if (in->kind == K_NODES) {
        struct gs_kube_node n;
        if (gs_kube_node_read(obj, &n, &err) == 0) {
            if (strcmp(type, "DELETED") == 0) {
                int i = gs__store_find_node(st, n.name);
                if (i >= 0) {
                    gs_kube_node_release(&st->nodes[i]);
                    st->nodes[i] = st->nodes[--st->nnodes];
                }
            } else {
                gs__store_upsert_node(st, &n);
            }
            gs_kube_node_release(&n);
        } else {
            GS_WARN("informer", "%s", err.msg);
        }
    } else {
        struct gs_kube_pod p;
        if (gs_kube_pod_read(obj, &p, &err) == 0) {
            int i = gs__store_find_pod(st, p.ns, p.name);
            if (strcmp(type, "DELETED") == 0) {
                if (i >= 0) {
                    gs_kube_pod_release(&st->pods[i].p);
                    st->pods[i] = st->pods[--st->npods];
                }
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
    if (rv)
        snprintf(in->rv, sizeof(in->rv), "%s", rv);
    return 0;
}

static void *informer_main(void *arg)
{
    struct informer *in = arg;
    struct gs_sched *s = in->s;
    const char *path = in->kind == K_NODES ? NODES_PATH : PODS_PATH;
    double backoff = 1;
    in->relist = true;
    while (!gs_flag_get(s->stop) && !s->fatal) {
        struct gs_error err;
        gs_error_init(&err);
        if (in->relist) {
            for (int i = 0; i < in->nl; i++)
                gs_kube_node_release(&in->lnodes[i]);
            for (int i = 0; i < in->npl; i++)
                gs_kube_pod_release(&in->lpods[i]);
            in->nl = in->npl = 0;
            int rc = gs_kube_list(s->kc, path, on_list_item, in, in->rv, sizeof(in->rv), &err);
            if (rc) {
                GS_WARN("informer", "list %s: %s; retrying in %.0fs",
                        in->kind == K_NODES ? "nodes" : "pods", err.msg, backoff);
                gs_clock_sleep(backoff);
                backoff = fmin(backoff * 2, 30);
                continue;
            }
            struct gs_store *st = &s->st;
            pthread_mutex_lock(&st->mu);
            if (in->kind == K_NODES) {
                for (int i = 0; i < st->nnodes; i++)
                    gs_kube_node_release(&st->nodes[i]);
                st->nnodes = 0;
                for (int i = 0; i < in->nl; i++) {
                    gs__store_upsert_node(st, &in->lnodes[i]);
                    gs_kube_node_release(&in->lnodes[i]);
                }
                in->nl = 0;
                st->nodes_synced = true;
            } else {
                /* keep backoff state of pods that stay */
                struct gs_store_pod *old = st->pods;
                int nold = st->npods;
                st->pods = NULL;
                st->npods = st->cap_pods = 0;
                for (int i = 0; i < in->npl; i++) {
                    gs__store_upsert_pod(st, &in->lpods[i]);
                    for (int k = 0; k < nold; k++)
                        if (strcmp(old[k].p.uid, in->lpods[i].uid) == 0) {
                            st->pods[st->npods - 1].next_try = old[k].next_try;
                            st->pods[st->npods - 1].backoff = old[k].backoff;
                            st->pods[st->npods - 1].seq = old[k].seq;
                        }
                }
                for (int k = 0; k < nold; k++)
                    gs_kube_pod_release(&old[k].p);
                free(old);
                for (int i = 0; i < in->npl; i++)
                    gs_kube_pod_release(&in->lpods[i]);
                in->npl = 0;
                st->pods_synced = true;
            }
            st->gen++;
            pthread_cond_broadcast(&st->cv);
            pthread_mutex_unlock(&st->mu);
            in->relist = false;
            GS_INFO("informer", "listed %d %s at resourceVersion %s",
                    in->kind == K_NODES ? in->nl : in->npl, in->kind == K_NODES ? "nodes" : "pods",
                    in->rv);
        }
        int rc = gs_kube_watch(s->kc, path, in->rv, 60, on_event, in, s->stop, &err);
        if (rc == RELIST || rc == GS_ENOTFOUND) {
            in->relist = true;
        } else if (rc) {
            GS_WARN("informer", "%s; reconnecting in %.0fs", err.msg, backoff);
            gs_clock_sleep(backoff);
            backoff = fmin(backoff * 2, 30);
            in->relist = true;
        } else {
            backoff = 1;
        }
    }
    for (int i = 0; i < in->nl; i++)
        gs_kube_node_release(&in->lnodes[i]);
    for (int i = 0; i < in->npl; i++)
        gs_kube_pod_release(&in->lpods[i]);
    free(in->lnodes);
    free(in->lpods);
    return NULL;
}

/* ---------- leader election ---------- */

static void *leader_main(void *arg)
{
    struct gs_sched *s = arg;
    char path[512], observed[256] = "";
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
             s->o.lease_namespace, s->o.lease_name);
    double observed_at = gs_clock_mono(), last_renew = 0;
    while (!gs_flag_get(s->stop) && !s->fatal) {
        struct gs_error err;
        gs_error_init(&err);
        json_t *lease = NULL;
        long status = 0;
        char now[40];
        gs_kube_micro_time(now, sizeof(now));
        int rc = gs_kube_request(s->kc, "GET", path, NULL, NULL, &lease, &status, &err);
        if (rc == GS_ENOTFOUND) {
            json_t *body = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s, s:i}}",
                                     "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
                                     "metadata", "name", s->o.lease_name, "namespace",
                                     s->o.lease_namespace, "spec", "holderIdentity", s->o.identity,
                                     "leaseDurationSeconds", (int)s->o.lease_duration_s,
                                     "acquireTime", now, "renewTime", now, "leaseTransitions", 0);
            char cpath[512];
            snprintf(cpath, sizeof(cpath), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
                     s->o.lease_namespace);
            if (gs_kube_request(s->kc, "POST", cpath, NULL, body, NULL, NULL, &err) == 0) {
                gs_flag_set(&s->leader, 1);
                last_renew = gs_clock_mono();
                GS_INFO("leader", "'%s' acquired lease %s/%s", s->o.identity, s->o.lease_namespace,
                        s->o.lease_name);
            }
            json_decref(body);
        } else if (rc == 0) {
            json_t *spec = json_object_get(lease, "spec");
            const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
            const char *renew = json_string_value(json_object_get(spec, "renewTime"));
            json_int_t trans = json_integer_value(json_object_get(spec, "leaseTransitions"));
            char rec[256];
            snprintf(rec, sizeof(rec), "%s|%s", holder ? holder : "", renew ? renew : "");
            if (strcmp(rec, observed) != 0) {
                snprintf(observed, sizeof(observed), "%s", rec);
                observed_at = gs_clock_mono();
            }
            bool mine = holder && strcmp(holder, s->o.identity) == 0;
            bool expired =
                !holder || !holder[0] || gs_clock_mono() - observed_at > s->o.lease_duration_s;
            if (mine || expired) {
                json_t *sp = json_object_get(lease, "spec");
                json_object_set_new(sp, "holderIdentity", json_string(s->o.identity));
                json_object_set_new(sp, "leaseDurationSeconds",
                                    json_integer((json_int_t)s->o.lease_duration_s));
                json_object_set_new(sp, "renewTime", json_string(now));
                if (!mine) {
                    json_object_set_new(sp, "acquireTime", json_string(now));
                    json_object_set_new(sp, "leaseTransitions", json_integer(trans + 1));
                }
                if (gs_kube_request(s->kc, "PUT", path, NULL, lease, NULL, NULL, &err) == 0) {
                    if (!gs_flag_get(&s->leader))
                        GS_INFO("leader", "'%s' %s lease %s/%s", s->o.identity,
                                mine ? "holds" : "took over", s->o.lease_namespace,
                                s->o.lease_name);
                    gs_flag_set(&s->leader, 1);
                    last_renew = gs_clock_mono();
                }
            }
        }
        json_decref(lease);
        if (gs_flag_get(&s->leader) && gs_clock_mono() - last_renew > s->o.renew_deadline_s) {
            GS_ERR("leader", "'%s' could not renew the lease for %.0fs: stepping down (%s)",
                   s->o.identity, s->o.renew_deadline_s, err.msg);
            gs_flag_set(&s->leader, 0);
            s->fatal = 1;
            pthread_mutex_lock(&s->st.mu);
            pthread_cond_broadcast(&s->st.cv);
            pthread_mutex_unlock(&s->st.mu);
            break;
        }
        gs_clock_sleep(s->o.retry_period_s);
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
    struct gs_policy_feed *feed = gs_policy_feed_new(s->kc, s->stop, 30);
    if (!feed) {
        s->fatal = true;
        return NULL;
    }
    while (!gs_flag_get(s->stop) && !s->fatal) {
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
    return s;
}

static void sched_free(struct gs_sched *s)
{
    gs_policy_objs_release(&s->po);
    json_decref(s->pending_report);
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
    struct informer in_nodes = {.s = s, .kind = K_NODES}, in_pods = {.s = s, .kind = K_PODS};
    pthread_t t_nodes, t_pods, t_leader, t_policy;
    pthread_create(&t_nodes, NULL, informer_main, &in_nodes);
    pthread_create(&t_pods, NULL, informer_main, &in_pods);
    pthread_create(&t_policy, NULL, policy_main, s);
    if (s->o.leader_elect)
        pthread_create(&t_leader, NULL, leader_main, s);
    struct gs_engine *engine = NULL;
    int engine_nodes = 0;
    uint64_t seen = (uint64_t)-1;
    double last_cycle = 0;
    int rc = 0;
    while (!gs_flag_get(stop) && !s->fatal) {
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
    int flag = 1;
    volatile int *st = stop;
    if (!*st)
        s->stop = &flag; /* stop the helper threads too */
    pthread_join(t_nodes, NULL);
    pthread_join(t_pods, NULL);
    pthread_join(t_policy, NULL);
    if (s->o.leader_elect)
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
    int rc = 0;
    s->dry = true;
    gs_flag_set(&s->leader, 1);
    struct informer in_nodes = {.s = s, .kind = K_NODES}, in_pods = {.s = s, .kind = K_PODS};
    rc = gs_kube_list(client, NODES_PATH, on_list_item, &in_nodes, in_nodes.rv, sizeof(in_nodes.rv),
                      err);
    if (!rc)
        rc = gs_kube_list(client, PODS_PATH, on_list_item, &in_pods, in_pods.rv, sizeof(in_pods.rv),
                          err);
    if (!rc)
        rc = gs_policy_objs_list(client, &s->po, err);
    for (int i = 0; !rc && i < in_nodes.nl; i++)
        rc = gs__store_upsert_node(&s->st, &in_nodes.lnodes[i]);
    for (int i = 0; i < in_nodes.nl; i++)
        gs_kube_node_release(&in_nodes.lnodes[i]);
    for (int i = 0; !rc && i < in_pods.npl; i++)
        rc = gs__store_upsert_pod(&s->st, &in_pods.lpods[i]);
    for (int i = 0; i < in_pods.npl; i++)
        gs_kube_pod_release(&in_pods.lpods[i]);
    struct gs_engine *engine = NULL;
    int engine_nodes = 0;
    if (!rc && (rc = gs__driver_cycle(s, &engine, &engine_nodes)))
        gs_error_set(err, rc, "scheduling cycle: %s", gs_error_name(rc));
    if (!rc)
        *out = json_incref(s->pending_report ? s->pending_report : json_array());
    gs_engine_free(engine);
    free(in_nodes.lnodes);
    free(in_pods.lpods);
    sched_free(s);
    return rc;
}
