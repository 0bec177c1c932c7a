/* uistate.c - GET /ui/state's document (sched/uistate.h): every node's GPUs with their MIG
 * instances and the pods holding them, the queues' deserved, used and borrowed shares, the
 * pending pods with the last cycle's verdicts, and the journal's recent events. */
#include "uistate.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "journal.h"
#include "metrics.h"
#include "snapshot.h"
#include "store.h"
#include "tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *mode_name(int mode)
{
    switch (mode) {
    case GS_GPU_FRACTION:
        return "fraction";
    case GS_GPU_MIG:
        return "mig";
    case GS_GPU_TIMESLICE:
        return "timeslice";
    case GS_GPU_MPS:
        return "mps";
    default:
        return "whole";
    }
}

/* A value of a tenancy dimension in the unit it is shown in: GPU-equivalents and cores (the
 * vector holds milli), MiB, counts. */
static double dim_value(int dim, int64_t v)
{
    return dim == GS_QR_UNITS || dim == GS_QR_CPU ? (double)v / 1000 : (double)v;
}

static const char *dim_unit(int dim)
{
    switch (dim) {
    case GS_QR_UNITS:
        return "GPU-equivalents";
    case GS_QR_CPU:
        return "cores";
    case GS_QR_MEM:
        return "MiB";
    case GS_QR_GPU:
        return "GPUs";
    default:
        return "instances";
    }
}

/* Set key to v, counting a failed allocation in *bad. */
static void put(json_t *o, const char *key, json_t *v, int *bad)
{
    if (!v || json_object_set_new(o, key, v))
        (*bad)++;
}

static void add(json_t *a, json_t *v, int *bad)
{
    if (!v || json_array_append_new(a, v))
        (*bad)++;
}

/* Each GPU's holders: per MIG instance the pod holding it (a string), per other GPU an
 * array of {pod, share}. */
struct holders {
    json_t **slot; /* per GPU: GS_MIG_COMPUTE_MAX entries, borrowed strings or NULL */
    json_t **list; /* per GPU: an array */
};

static int holders_fill(struct holders *h, struct gs_snapshot *sn)
{
    const struct gs_cluster *c = gs__snapshot_cluster(sn);
    size_t ng = (size_t)c->ngpus + 1;
    h->slot = calloc(ng * GS_MIG_COMPUTE_MAX, sizeof(*h->slot));
    h->list = calloc(ng, sizeof(*h->list));
    if (!h->slot || !h->list)
        return GS_ENOMEM;
    int bad = 0;
    for (int i = 0, np = gs__snapshot_npods(sn); i < np; i++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, i);
        const struct gs_alloc *a;
        if (!gs__snapshot_pod_placed(sn, i, &a) || !p->node[0] || a->kind == GS_REQ_NONE)
            continue;
        char who[GS_KNAME_MAX + 70];
        snprintf(who, sizeof(who), "%s/%s", p->ns, p->name);
        for (int k = 0; k < a->ndev && k < GS_MAX_GPUS_NODE; k++) {
            int g = a->gpu[k];
            if (g < 0 || g >= c->ngpus)
                continue;
            if (a->kind == GS_REQ_MIG) {
                int s = a->slot[k];
                if (s >= 0 && s < GS_MIG_COMPUTE_MAX && !h->slot[g * GS_MIG_COMPUTE_MAX + s]) {
                    json_t *v = json_string(who);
                    h->slot[g * GS_MIG_COMPUTE_MAX + s] = v;
                    bad += !v;
                }
                continue;
            }
            if (!h->list[g] && !(h->list[g] = json_array())) {
                bad++;
                continue;
            }
            char share[32];
            if (a->kind == GS_REQ_FRACTION || (a->milli > 0 && a->milli < GS_MILLI))
                snprintf(share, sizeof(share), "%.3g", (double)a->milli / GS_MILLI);
            else if (a->milli == 0)
                snprintf(share, sizeof(share), "replica");
            else
                snprintf(share, sizeof(share), "1");
            add(h->list[g], json_pack("{s:s, s:s}", "pod", who, "share", share), &bad);
        }
    }
    return bad ? GS_ENOMEM : 0;
}

static void holders_release(struct holders *h, int ngpus)
{
    for (int g = 0; h->slot && g < ngpus * GS_MIG_COMPUTE_MAX; g++)
        json_decref(h->slot[g]);
    for (int g = 0; h->list && g < ngpus; g++)
        json_decref(h->list[g]);
    free(h->slot);
    free(h->list);
}

static json_t *gpu_json(struct gs_snapshot *sn, const struct holders *h, int node, int g, int *bad)
{
    const struct gs_cluster *c = gs__snapshot_cluster(sn);
    const uint8_t *busy = gs__snapshot_gpus_busy(sn);
    const struct gs_node *n = &c->nodes[node];
    const struct gs_gpu *G = &c->gpus[g];
    const struct gs_gpu_model *m = gs_catalog_get(G->model);
    json_t *o = json_object();
    if (!o) {
        (*bad)++;
        return NULL;
    }
    put(o, "index", json_integer(g - n->gpu0), bad);
    put(o, "model", json_string(m ? m->name : "other"), bad);
    put(o, "mode", json_string(mode_name(G->mode)), bad);
    put(o, "healthy", json_boolean(G->healthy), bad);
    put(o, "recarving", json_boolean(busy && busy[g]), bad);
    put(o, "memory_mib", json_integer(G->mem_mib), bad);
    put(o, "allocated", json_real(gs_gpu_alloc_units(G)), bad);
    if (G->mode == GS_GPU_MIG) {
        json_t *sl = json_array();
        for (int i = 0; sl && i < G->mig.n && i < GS_MIG_COMPUTE_MAX; i++) {
            const struct gs_mig_profile *pr = &m->profiles[G->mig.inst[i].profile];
            json_t *holder = h->slot[g * GS_MIG_COMPUTE_MAX + i];
            bool used = G->mig_used & (1u << i);
            add(sl,
                json_pack("{s:s, s:i, s:i, s:O?, s:b}", "profile", pr->name, "start",
                          (int)G->mig.inst[i].start, "size", (int)pr->mem_slices, "holder", holder,
                          "held", used && !holder),
                bad);
        }
        put(o, "slices", sl, bad);
        put(o, "memory_slices", json_integer(m->mig_mem), bad);
    } else {
        put(o, "holders", h->list[g] ? json_incref(h->list[g]) : json_array(), bad);
        if (G->mode == GS_GPU_TIMESLICE || G->mode == GS_GPU_MPS) {
            put(o, "replicas", json_integer(G->replicas), bad);
            put(o, "replicas_used", json_integer(G->replicas_used), bad);
        }
    }
    return o;
}

static json_t *nodes_json(struct gs_snapshot *sn, const struct holders *h, int *bad)
{
    const struct gs_cluster *c = gs__snapshot_cluster(sn);
    json_t *a = json_array();
    if (!a) {
        (*bad)++;
        return NULL;
    }
    for (int i = 0; i < gs__snapshot_nnodes(sn) && i < c->nnodes; i++) {
        const struct gs_kube_node *kn = gs__snapshot_node(sn, i);
        const struct gs_node *n = &c->nodes[i];
        const struct gs_gpu_model *m = n->ngpus > 0 ? gs_catalog_get(n->model) : NULL;
        json_t *o = json_object(), *gpus = json_array();
        if (!o || !gpus) {
            json_decref(o);
            json_decref(gpus);
            (*bad)++;
            continue;
        }
        put(o, "name", json_string(kn->name), bad);
        put(o, "model", json_string(m ? m->name : ""), bad);
        put(o, "ready", kn->ready < 0 ? json_null() : json_boolean(kn->ready), bad);
        put(o, "cordoned", json_boolean(kn->unschedulable), bad);
        put(o, "layout_guessed", json_boolean(n->layout_guessed), bad);
        if (kn->refused[0] || kn->inv_error[0])
            put(o, "problem", json_string(kn->refused[0] ? kn->refused : kn->inv_error), bad);
        for (int g = n->gpu0; g < n->gpu0 + n->ngpus; g++)
            add(gpus, gpu_json(sn, h, i, g, bad), bad);
        put(o, "gpus", gpus, bad);
        add(a, o, bad);
    }
    return a;
}

static json_t *queues_json(const struct gs_tenants *t, int *bad)
{
    json_t *a = json_array();
    if (!a) {
        (*bad)++;
        return NULL;
    }
    for (int q = 0; q < t->nq; q++) {
        const struct gs_queue *Q = &t->q[q];
        json_t *res = json_array();
        bool borrowing = false;
        for (int d = 0; res && d < GS_QR_MIG0 + t->nmig && d < GS_QR_COUNT; d++) {
            int64_t dv = Q->deserved.v[d], uv = Q->used.v[d], lv = Q->limit.v[d];
            bool gpu_dim = d != GS_QR_CPU && d != GS_QR_MEM;
            if (!dv && lv == GS_QR_UNLIMITED && (!uv || !gpu_dim))
                continue;
            int64_t bv = uv > dv ? uv - dv : 0;
            borrowing |= bv > 0;
            add(res,
                json_pack("{s:s, s:s, s:f, s:f, s:f, s:o}", "resource", gs_tenants_dim_name(t, d),
                          "unit", dim_unit(d), "deserved", dim_value(d, dv), "used",
                          dim_value(d, uv), "borrowed", dim_value(d, bv), "limit",
                          lv == GS_QR_UNLIMITED ? json_null() : json_real(dim_value(d, lv))),
                bad);
        }
        add(a,
            json_pack("{s:s, s:s, s:i, s:i, s:b, s:o*}", "name", Q->name, "parent",
                      Q->parent >= 0 ? t->q[Q->parent].name : "", "weight", (int)Q->weight,
                      "priority", (int)Q->priority, "borrowing", borrowing, "resources", res),
            bad);
        bad += !res;
    }
    return a;
}

/* The pending pods of ours, in arrival order, each with the last cycle's verdict (reason ""
 * and no message before a cycle has looked at it). */
static json_t *pending_json(const struct gs_uistate_src *s, const struct gs_snapshot *sn, int *bad)
{
    json_t *a = json_array(), *by = json_object(), *report = gs__metrics_report(s->metrics);
    if (!a || !by || !report) {
        json_decref(a);
        json_decref(by);
        json_decref(report);
        (*bad)++;
        return NULL;
    }
    char key[GS_KNAME_MAX + 70];
    size_t ri;
    json_t *r;
    json_array_foreach(report, ri, r)
    {
        snprintf(key, sizeof(key), "%s/%s", json_string_value(json_object_get(r, "namespace")),
                 json_string_value(json_object_get(r, "pod")));
        if (json_object_set(by, key, r))
            (*bad)++;
    }
    json_decref(report);
    /* arrival order (the snapshot keeps the store's order, which deletions shuffle) */
    int np = gs__snapshot_npods(sn);
    int *order = malloc(sizeof(int) * (size_t)(np + 1));
    int n = 0;
    for (int i = 0; order && i < np; i++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, i);
        if (p->node[0] || p->terminating || strcmp(p->scheduler, s->scheduler_name) != 0)
            continue;
        int j = n++;
        while (j > 0 && gs__snapshot_pod_seq(sn, order[j - 1]) > gs__snapshot_pod_seq(sn, i)) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    if (!order)
        (*bad)++;
    for (int k = 0; k < n; k++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, order[k]);
        const char *nominated = gs__snapshot_pod_nominated(sn, order[k]);
        snprintf(key, sizeof(key), "%s/%s", p->ns, p->name);
        const json_t *v = json_object_get(by, key);
        const char *reason = v ? json_string_value(json_object_get(v, "reason")) : NULL;
        const char *msg = v ? json_string_value(json_object_get(v, "message")) : NULL;
        const char *queue = v ? json_string_value(json_object_get(v, "queue")) : NULL;
        add(a,
            json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s}", "namespace", p->ns, "pod", p->name,
                      "queue", queue ? queue : "", "priority", (int)p->priority, "reason",
                      reason ? reason : "", "message", msg ? msg : "", "nominated",
                      nominated[0] ? nominated : p->nominated),
            bad);
    }
    free(order);
    json_decref(by);
    return a;
}

int gs__uistate_build(const struct gs_uistate_src *s, json_t **out)
{
    *out = NULL;
    struct gs_policy_objs po;
    struct gs_snapshot *sn = NULL;
    struct gs_tenancy ty;
    struct holders h = {0};
    json_t *doc = NULL;
    int bad = 0;
    memset(&ty, 0, sizeof(ty));
    memset(&po, 0, sizeof(po));
    int rc = s->policy ? gs_policy_feed_copy(s->policy, &po) : 0;
    if (rc)
        return rc;
    uint64_t gen = gs__store_gen(s->store);
    bool synced = gs__store_synced(s->store);
    if ((rc = gs__snapshot_new(s->store, &po, &sn)) || (rc = gs__snapshot_tenancy(sn, &po, &ty)) ||
        (rc = holders_fill(&h, sn)))
        goto out;
    rc = GS_ENOMEM;
    if (!(doc = json_object()))
        goto out;
    put(doc, "version", json_integer(GS_UISTATE_VERSION), &bad);
    put(doc, "generation", json_integer((json_int_t)gen), &bad);
    put(doc, "time", json_real(gs_clock_wall()), &bad);
    put(doc, "scheduler", json_string(s->scheduler_name), &bad);
    put(doc, "mode", json_string(s->extender ? "extender" : "scheduler"), &bad);
    put(doc, "leader", json_boolean(gs_flag_get(s->leader)), &bad);
    put(doc, "synced", json_boolean(synced), &bad);
    put(doc, "dynamic_mig", json_boolean(s->dynamic_mig), &bad);
    put(doc, "nodes", nodes_json(sn, &h, &bad), &bad);
    put(doc, "queues", queues_json(gs_tenancy_tenants(&ty), &bad), &bad);
    put(doc, "pending", pending_json(s, sn, &bad), &bad);
    put(doc, "events", gs__journal_json(s->journal), &bad);
    if (bad) {
        json_decref(doc);
        doc = NULL;
        goto out;
    }
    rc = 0;
out:
    holders_release(&h, sn ? gs__snapshot_cluster(sn)->ngpus : 0);
    gs_tenancy_release(&ty);
    gs__snapshot_free(sn);
    gs_policy_objs_release(&po);
    *out = doc;
    return rc;
}
