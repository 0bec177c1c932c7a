/* extender.c - kube-scheduler's extender verbs (sched/extender.h): each call takes a snapshot
 * of the store (sched/snapshot.c) and asks the engine (core/engine.c) about the pod on the
 * candidate nodes; a bind goes straight to the API server (kube/client.c) from the HTTP
 * thread and is assumed in the store (sched/store.c). The extender owns its engine and the
 * lock that orders its binds. */
#include "extender.h"

#include "../base/error.h"
#include "../base/log.h"
#include "metrics.h"
#include "snapshot.h"
#include "store.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_extender {
    struct gs_kube_client *kc;
    struct gs_store *st;
    struct gs_metrics *m;
    const char *policy;
    pthread_mutex_t mu; /* the engine, and a bind from its snapshot until the store has it */
    struct gs_engine *engine;
    int engine_nodes;
};

struct gs_extender *gs__extender_new(struct gs_kube_client *kc, struct gs_store *st,
                                     struct gs_metrics *m, const char *policy)
{
    struct gs_extender *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    *x = (struct gs_extender){.kc = kc, .st = st, .m = m, .policy = policy};
    pthread_mutex_init(&x->mu, NULL);
    return x;
}

void gs__extender_free(struct gs_extender *x)
{
    if (!x)
        return;
    gs_engine_free(x->engine);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

static struct gs_engine *x_engine(struct gs_extender *s, int nodes)
{
    if (!s->engine || s->engine_nodes < nodes) {
        gs_engine_free(s->engine);
        s->engine_nodes = nodes > 64 ? nodes * 2 : 128;
        s->engine = gs_engine_new(gs_policy_find(s->policy), NULL, s->engine_nodes, 42);
    }
    return s->engine;
}

/* Candidate node names: NodeNames, or the names in Nodes.items. */
static json_t *x_candidates(const json_t *args)
{
    json_t *names = json_array();
    const json_t *nn = json_object_get(args, "NodeNames");
    size_t i;
    const json_t *v;
    if (json_is_array(nn)) {
        json_array_foreach(nn, i, v) json_array_append(names, (json_t *)v);
        return names;
    }
    json_array_foreach(json_object_get(json_object_get(args, "Nodes"), "items"), i, v)
    {
        const char *n = json_string_value(json_object_get(json_object_get(v, "metadata"), "name"));
        if (n)
            json_array_append_new(names, json_string(n));
    }
    return names;
}

static json_t *x_filter_or_prioritize(struct gs_extender *s, const json_t *args, bool prioritize,
                                      char *errbuf, size_t errsize)
{
    struct gs_kube_pod pod;
    struct gs_error err;
    gs_error_init(&err);
    if (gs_kube_pod_read(json_object_get(args, "Pod"), &pod, &err)) {
        snprintf(errbuf, errsize, "%s", err.msg);
        return NULL;
    }
    struct gs_snapshot *sn;
    if (gs__snapshot_new(s->st, NULL, &sn)) {
        snprintf(errbuf, errsize, "out of memory");
        return NULL;
    }
    struct gs_cluster *c = gs__snapshot_cluster(sn);
    json_t *cands = x_candidates(args);
    json_t *keep = json_array(), *failed = json_object(), *prio = json_array();
    int64_t *scores = calloc(json_array_size(cands) + 1, sizeof(*scores));
    if (!cands || !keep || !failed || !prio || !scores) {
        snprintf(errbuf, errsize, "out of memory");
        json_decref(cands);
        json_decref(keep);
        json_decref(failed);
        json_decref(prio);
        free(scores);
        gs__snapshot_free(sn);
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    struct gs_engine *e = x_engine(s, c->nnodes);
    size_t i;
    const json_t *v;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    json_array_foreach(cands, i, v)
    {
        const char *name = json_string_value(v);
        int id = name ? gs__snapshot_find_node(sn, name) : -1;
        struct gs_reasons why;
        memset(&why, 0, sizeof(why));
        bool fits = id >= 0 && gs_kube_tolerates(&pod, gs__snapshot_node(sn, id)) &&
                    gs_engine_fits(c, id, &pod.req, &why);
        if (!fits) {
            char msg[256] = "node not in gpusched's cache";
            if (id >= 0 && !gs_kube_tolerates(&pod, gs__snapshot_node(sn, id)))
                snprintf(msg, sizeof(msg), "untolerated taint");
            else if (id >= 0)
                gs_reasons_str(&why, &pod.req, msg, sizeof(msg));
            if (name)
                json_object_set_new(failed, name, json_string(msg));
            scores[i] = INT64_MIN;
            continue;
        }
        json_array_append(keep, (json_t *)v);
        struct gs_alloc a;
        scores[i] = e ? gs_engine_score(e, c, id, &pod.req, &a) : 0;
        if (scores[i] < lo)
            lo = scores[i];
        if (scores[i] > hi)
            hi = scores[i];
    }
    pthread_mutex_unlock(&s->mu);
    json_t *out;
    if (prioritize) {
        json_array_foreach(cands, i, v)
        {
            int64_t sc = scores[i] == INT64_MIN ? 0
                         : hi == lo
                             ? 10
                             : (int64_t)((double)(scores[i] - lo) / (double)(hi - lo) * 10.0);
            json_array_append_new(prio,
                                  json_pack("{s:O, s:I}", "Host", v, "Score", (json_int_t)sc));
        }
        out = json_incref(prio);
    } else {
        out = json_pack("{s:O, s:o, s:o, s:s}", "NodeNames", keep, "FailedNodes", failed,
                        "FailedAndUnresolvableNodes", json_object(), "Error", "");
        failed = NULL;
    }
    json_decref(keep);
    json_decref(failed);
    json_decref(prio);
    json_decref(cands);
    free(scores);
    gs__snapshot_free(sn);
    return out;
}

/* Bind pod to node with the devices the engine picks there, and assume it in the store. Called
 * with s->emu held: the HTTP server answers requests concurrently, and one bind's devices must
 * be in the store before the next bind takes its snapshot, or two pods get the same slot. */
static json_t *x_bind_locked(struct gs_extender *s, const struct gs_kube_pod *pod, const char *ns,
                             const char *name, const char *node)
{
    char msg[1024] = "", path[600];
    struct gs_snapshot *sn;
    if (gs__snapshot_new(s->st, NULL, &sn))
        return json_pack("{s:s}", "Error", "out of memory");
    struct gs_cluster *c = gs__snapshot_cluster(sn);
    int id = gs__snapshot_find_node(sn, node);
    char devices[256] = "";
    if (id < 0) {
        snprintf(msg, sizeof(msg), "node %s is not in gpusched's cache", node);
    } else if (pod->req.kind != GS_REQ_NONE) {
        struct gs_reasons why;
        memset(&why, 0, sizeof(why));
        if (!gs_engine_fits(c, id, &pod->req, &why)) {
            gs_reasons_str(&why, &pod->req, msg, sizeof(msg));
        } else {
            struct gs_engine *e = x_engine(s, c->nnodes);
            struct gs_alloc a;
            if (e) {
                gs_engine_score(e, c, id, &pod->req, &a);
                gs_kube_devices_str(c, &a, devices, sizeof(devices));
            }
        }
    }
    gs__snapshot_free(sn);
    if (msg[0])
        return json_pack("{s:s}", "Error", msg);
    json_t *b = gs_kube_binding(pod, node);
    if (devices[0])
        json_object_set_new(json_object_get(b, "metadata"), "annotations",
                            json_pack("{s:s}", GS_DEVICES_ANNOTATION, devices));
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", ns, name);
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_kube_request(s->kc, "POST", path, NULL, b, NULL, NULL, &err);
    json_decref(b);
    if (rc)
        return json_pack("{s:s}", "Error", err.msg);
    /* assume it until the watch reports it */
    gs__store_assume(s->st, ns, name, NULL, node, devices, false);
    gs__store_changed(s->st);
    gs__metrics_record_latency(s->m, 0, 0);
    GS_INFO("extender", "%s/%s -> %s %s", ns, name, node, devices);
    return json_pack("{s:s}", "Error", "");
}

static json_t *x_bind(struct gs_extender *s, const json_t *args)
{
    const char *ns = json_string_value(json_object_get(args, "PodNamespace"));
    const char *name = json_string_value(json_object_get(args, "PodName"));
    const char *uid = json_string_value(json_object_get(args, "PodUID"));
    const char *node = json_string_value(json_object_get(args, "Node"));
    if (!ns || !name || !node)
        return json_pack("{s:s}", "Error", "PodNamespace, PodName and Node are required");
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
    json_t *obj = NULL;
    struct gs_error err;
    gs_error_init(&err);
    struct gs_kube_pod pod;
    if (gs_kube_request(s->kc, "GET", path, NULL, NULL, &obj, NULL, &err) ||
        gs_kube_pod_read(obj, &pod, &err)) {
        json_decref(obj);
        return json_pack("{s:s}", "Error", err.msg);
    }
    json_decref(obj);
    if (uid && strcmp(uid, pod.uid) != 0)
        return json_pack("{s:s}", "Error", "pod UID changed");
    pthread_mutex_lock(&s->mu);
    json_t *out = x_bind_locked(s, &pod, ns, name, node);
    pthread_mutex_unlock(&s->mu);
    return out;
}

/* The extender's verbs: a JSON body in, a JSON answer out. */
int gs__extender_answer(struct gs_extender *s, const struct gs_httpd_request *req,
                        struct gs_httpd_reply *rep)
{
    /* Until both caches hold the cluster, every node would look empty or unknown: a filter
     * answered now turns a pod unschedulable, and kube-scheduler may then leave it in its
     * unschedulable queue for minutes. An error instead makes it retry with backoff. */
    if (!gs__store_synced(s->st))
        return gs_httpd_reply(rep, 503, "application/json",
                              "{\"Error\":\"gpusched extender not ready: the node and pod "
                              "caches are not synced yet\"}");
    json_t *args = json_loadb(req->body, req->len, 0, NULL);
    if (!args)
        return gs_httpd_reply(rep, 400, "application/json",
                              "{\"Error\":\"request body is not JSON\"}");
    json_t *out = NULL;
    char errbuf[1024] = "";
    if (strcmp(req->url, "/filter") == 0)
        out = x_filter_or_prioritize(s, args, false, errbuf, sizeof(errbuf));
    else if (strcmp(req->url, "/prioritize") == 0)
        out = x_filter_or_prioritize(s, args, true, errbuf, sizeof(errbuf));
    else if (strcmp(req->url, "/bind") == 0)
        out = x_bind(s, args);
    json_decref(args);
    if (!out && !errbuf[0])
        return gs_httpd_reply(rep, 404, "application/json", "{\"Error\":\"unknown verb\"}");
    if (!out)
        out = json_pack("{s:s}", "Error", errbuf);
    int rc = gs_httpd_reply_json(rep, 200, out, JSON_COMPACT);
    json_decref(out);
    return rc;
}
