/* scheduler.c - the `gpusched scheduler` daemon: informers over kube/client.c, a store of
 * Nodes and Pods, the scheduling loop over core/engine.c with the cluster rebuilt by
 * sched/cache.c, binding with the device annotation, Events, Lease leader election and the
 * HTTP endpoints. */
#include "scheduler.h"

#include "../base/flag.h"
#include "../base/buf.h"
#include "../base/error.h"
#include "../base/log.h"
#include "../core/gang.h"
#include "../kube/httpd.h"
#include "cache.h"
#include "tenancy.h"

#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------- store ---------- */

struct pod_entry {
    struct gs_kube_pod p;
    uint64_t seq;    /* arrival order in the store */
    double next_try; /* monotonic seconds */
    double backoff;
    bool assumed;                 /* bound by us, the watch has not shown it yet */
    char nominated[GS_KNAME_MAX]; /* node its victims are leaving, while they terminate */
    double nominated_at;
};

struct store {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen, seq;
    struct gs_kube_node *nodes;
    int nnodes, cap_nodes;
    struct pod_entry *pods;
    int npods, cap_pods;
    bool nodes_synced, pods_synced;
    const struct gs_migparted *mp; /* the scheduler's --mig-config, or NULL */
    /* Events regarding nodes that changed how gpusched sees them, for the next cycle to post
     * (the informer holds the lock; writes go through the background queue) */
    json_t *node_events;
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int find_node(const struct store *s, const char *name)
{
    for (int i = 0; i < s->nnodes; i++)
        if (strcmp(s->nodes[i].name, name) == 0)
            return i;
    return -1;
}

static int find_pod(const struct store *s, const char *ns, const char *name)
{
    for (int i = 0; i < s->npods; i++)
        if (strcmp(s->pods[i].p.name, name) == 0 && strcmp(s->pods[i].p.ns, ns) == 0)
            return i;
    return -1;
}

/* Why a node offers no GPUs (or no new pods), said once per change of the Node object: the
 * store sees each version once, a snapshot sees it every cycle. */
static void report_node(struct store *st, const struct gs_kube_node *old,
                        const struct gs_kube_node *n)
{
    const struct gs_migparted *mp = st->mp;
    if (old && strcmp(old->rv, n->rv) == 0)
        return;
    struct gs_cluster one;
    gs_cluster_init(&one);
    char note[256] = "", was[256] = "";
    gs_cache_add_node(&one, n, mp, note, sizeof(note));
    gs_cluster_release(&one);
    if (old) {
        gs_cluster_init(&one);
        gs_cache_add_node(&one, old, mp, was, sizeof(was));
        gs_cluster_release(&one);
    }
    json_t *ev = NULL;
    if (note[0] && strcmp(note, was) != 0) {
        char msg[400];
        snprintf(msg, sizeof(msg), "%s; it offers no GPUs%s", note,
                 n->refused[0] ? " and gets no new pods" : "");
        GS_WARN("cache", "node '%s': %s", n->name, msg);
        ev = gs_kube_node_event(n, "Warning", "GPUsUnusable", "Scheduling", msg, "gpusched");
    } else if (!note[0] && was[0]) {
        GS_INFO("cache", "node '%s': its GPUs are usable again", n->name);
        ev = gs_kube_node_event(n, "Normal", "GPUsUsable", "Scheduling",
                                "its GPUs are usable again", "gpusched");
    }
    if (ev) {
        if (!st->node_events)
            st->node_events = json_array();
        if (!st->node_events || json_array_size(st->node_events) >= 256 ||
            json_array_append_new(st->node_events, ev))
            json_decref(ev); /* a flood of node changes: the log has them */
    }
}

/* Takes what n owns (n is left empty). */
static int upsert_node(struct store *s, struct gs_kube_node *n)
{
    int i = find_node(s, n->name);
    report_node(s, i >= 0 ? &s->nodes[i] : NULL, n);
    if (i < 0) {
        if (s->nnodes == s->cap_nodes) {
            void *v = gs_grow(s->nodes, &s->cap_nodes, sizeof(*s->nodes), 64);
            if (!v)
                return GS_ENOMEM;
            s->nodes = v;
        }
        i = s->nnodes++;
        memset(&s->nodes[i], 0, sizeof(s->nodes[i]));
    }
    gs_kube_node_move(&s->nodes[i], n);
    return 0;
}

/* Takes p's reference to its constraints (p->k is left NULL). */
static int upsert_pod(struct store *s, struct gs_kube_pod *p)
{
    int i = find_pod(s, p->ns, p->name);
    if (i >= 0 && strcmp(s->pods[i].p.uid, p->uid) == 0) {
        struct pod_entry *e = &s->pods[i];
        gs_kube_pod_release(&e->p);
        if (e->assumed && !p->node[0]) {
            /* an older view of a pod we just bound: keep what we bound it to */
            char node[GS_KNAME_MAX], devices[256];
            memcpy(node, e->p.node, sizeof(node));
            memcpy(devices, e->p.devices, sizeof(devices));
            e->p = *p;
            p->k = NULL;
            memcpy(e->p.node, node, sizeof(node));
            memcpy(e->p.devices, devices, sizeof(devices));
            return 0;
        }
        e->p = *p;
        p->k = NULL;
        e->assumed = false;
        return 0;
    }
    if (i < 0) {
        if (s->npods == s->cap_pods) {
            void *v = gs_grow(s->pods, &s->cap_pods, sizeof(*s->pods), 256);
            if (!v)
                return GS_ENOMEM;
            s->pods = v;
        }
        i = s->npods++;
    } else {
        gs_kube_pod_release(&s->pods[i].p); /* a new pod under an old name */
    }
    memset(&s->pods[i], 0, sizeof(s->pods[i]));
    s->pods[i].p = *p;
    p->k = NULL;
    s->pods[i].seq = ++s->seq;
    return 0;
}

/* ---------- background work: binds and other writes ---------- */

enum job_kind { JOB_BIND = 0, JOB_WRITE };

struct job {
    enum job_kind kind;
    char method[8];
    char path[640];
    char ctype[64];
    json_t *body;
    struct gs_kube_pod pod; /* JOB_BIND */
    char node[GS_KNAME_MAX];
    char devices[256];
    double t0;
};

struct jobq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *v;
    int head, n, cap;
    bool closing;
};

static void jobq_init(struct jobq *q, int cap)
{
    memset(q, 0, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->v = calloc((size_t)cap, sizeof(*q->v));
    q->cap = q->v ? cap : 0;
}

/* Returns false when full (the caller drops or handles the job). */
static bool jobq_push(struct jobq *q, const struct job *j)
{
    pthread_mutex_lock(&q->mu);
    bool ok = q->n < q->cap && !q->closing;
    if (ok) {
        q->v[(q->head + q->n) % q->cap] = *j;
        q->n++;
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return ok;
}

static bool jobq_pop(struct jobq *q, struct job *j)
{
    pthread_mutex_lock(&q->mu);
    while (q->n == 0 && !q->closing)
        pthread_cond_wait(&q->cv, &q->mu);
    bool ok = q->n > 0;
    if (ok) {
        *j = q->v[q->head];
        q->head = (q->head + 1) % q->cap;
        q->n--;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return ok;
}

static void jobq_close(struct jobq *q)
{
    pthread_mutex_lock(&q->mu);
    q->closing = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void jobq_release(struct jobq *q)
{
    for (int k = 0; k < q->n; k++)
        json_decref(q->v[(q->head + k) % q->cap].body);
    free(q->v);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

/* ---------- daemon state ---------- */

#define BIND_WORKERS 16

#define NBUCKETS 9
static const double buckets[NBUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1};

struct sched {
    struct gs_kube_client *kc;
    struct gs_scheduler_opts o;
    volatile int *stop;
    volatile int fatal;
    struct store st;
    volatile int leader;
    /* metrics */
    pthread_mutex_t mmu;
    uint64_t attempts_scheduled, attempts_unschedulable, attempts_error;
    uint64_t lat_count, lat_bucket[NBUCKETS];
    double lat_sum;
    int pending;
    int nmodels;
    char model_name[GS_MAX_MODELS][32];
    double model_alloc[GS_MAX_MODELS], model_cap[GS_MAX_MODELS];
    struct jobq bindq, bgq;
    /* tenancy objects, relisted every second */
    pthread_mutex_t pmu;
    struct gs_policy_objs po;
    bool po_synced;
    uint64_t policy_lists;  /* lists of tenancy objects so far (under mmu) */
    bool dry;               /* explain: decide, record why, write nothing */
    json_t *pending_report; /* under mmu: the last cycle's reasons per pending pod */
    uint64_t preemptions, victims;
    /* victims we deleted, until the watch shows them gone (uid, when) */
#define EVICTED_MAX 1024
    char evicted[EVICTED_MAX][64];
    double evicted_at[EVICTED_MAX];
    int nevicted;
    double lost_gpu_hours;
    /* extender mode: one engine shared by the HTTP handlers */
    pthread_mutex_t emu;
    struct gs_engine *xengine;
    int xengine_nodes;
};

struct snapshot {
    struct gs_cluster c;
    struct gs_kube_node *nodes;
    int nn;
    struct pod_entry *pods;
    int np;
    bool tainted;
    struct gs_alloc *alloc; /* per pod: what a bound pod holds */
    int8_t *placed;
    int *hidx; /* node name hash: open addressing, -1 empty */
    unsigned hcap;
    /* per node, what its pods ask of what the engine counts only roughly or not at all:
     * memory to the byte, and each of the node's other resources (its res[] order) */
    int64_t *mem_used;
    int64_t (*res_used)[GS_MAX_NODE_RES];
};

static void snapshot_release(struct snapshot *sn)
{
    gs_cluster_release(&sn->c);
    for (int i = 0; sn->nodes && i < sn->nn; i++)
        gs_kube_node_release(&sn->nodes[i]);
    for (int i = 0; sn->pods && i < sn->np; i++)
        gs_kube_pod_release(&sn->pods[i].p);
    free(sn->nodes);
    free(sn->pods);
    free(sn->alloc);
    free(sn->placed);
    free(sn->hidx);
    free(sn->mem_used);
    free(sn->res_used);
    memset(sn, 0, sizeof(*sn));
}

static unsigned name_hash(const char *n)
{
    unsigned h = 2166136261u;
    for (; *n; n++)
        h = (h ^ (unsigned char)*n) * 16777619u;
    return h;
}

static int find_in(const struct snapshot *sn, const char *name)
{
    if (!sn->hidx) {
        for (int k = 0; k < sn->nn; k++)
            if (strcmp(sn->nodes[k].name, name) == 0)
                return k;
        return -1;
    }
    for (unsigned h = name_hash(name) & (sn->hcap - 1);; h = (h + 1) & (sn->hcap - 1)) {
        int k = sn->hidx[h];
        if (k < 0)
            return -1;
        if (strcmp(sn->nodes[k].name, name) == 0)
            return k;
    }
}

/* Index node names (a table at most half full); without memory the lookups scan. */
static void index_nodes(struct snapshot *sn)
{
    unsigned cap = 16;
    while (cap < 2u * (unsigned)sn->nn)
        cap *= 2;
    sn->hidx = malloc(sizeof(*sn->hidx) * cap);
    if (!sn->hidx)
        return;
    sn->hcap = cap;
    memset(sn->hidx, 0xff, sizeof(*sn->hidx) * cap);
    for (int k = 0; k < sn->nn; k++) {
        unsigned h = name_hash(sn->nodes[k].name) & (cap - 1);
        while (sn->hidx[h] >= 0)
            h = (h + 1) & (cap - 1);
        sn->hidx[h] = k;
    }
}

/* Copy the store and rebuild the engine's cluster from it (nodes, then bound pods). */
/* A pod a MigManager's gpuClients map to a MIG device asks that device instead of one whole
 * GPU, bound or pending (so its devices annotation reads as a MIG slot). */
static void map_mig_clients(struct snapshot *sn, const struct gs_policy_objs *po)
{
    for (int i = 0; po && i < sn->np; i++) {
        struct gs_kube_pod *p = &sn->pods[i].p;
        const char *mig = gs_policy_mig_for(po, p);
        if (!mig)
            continue;
        p->req.kind = GS_REQ_MIG;
        p->req.gpus = 1;
        p->req.milli = 0;
        snprintf(p->req.mig, sizeof(p->req.mig), "%s", mig);
    }
}

/* A pod on a node: what it asks of the resources resources_fit checks. */
static void count_resources(struct snapshot *sn, int node, const struct gs_kube_pod *p)
{
    const struct gs_kube_node *kn = &sn->nodes[node];
    sn->mem_used[node] += p->mem_bytes;
    for (int r = 0; r < p->nres; r++)
        for (int k = 0; k < kn->nres; k++)
            if (strcmp(kn->res[k].name, p->res[r].name) == 0)
                sn->res_used[node][k] += p->res[r].value;
}

static int take_snapshot(struct store *st, struct snapshot *sn, const struct gs_policy_objs *po)
{
    memset(sn, 0, sizeof(*sn));
    pthread_mutex_lock(&st->mu);
    sn->nn = st->nnodes;
    sn->np = st->npods;
    size_t ann = sn->nn > 0 ? (size_t)sn->nn : 1, anp = sn->np > 0 ? (size_t)sn->np : 1;
    sn->nodes = calloc(ann, sizeof(*sn->nodes));
    sn->pods = malloc(sizeof(*sn->pods) * anp);
    sn->alloc = calloc(anp, sizeof(*sn->alloc));
    sn->placed = calloc(anp, 1);
    if (!sn->nodes || !sn->pods || !sn->alloc || !sn->placed) {
        pthread_mutex_unlock(&st->mu);
        snapshot_release(sn);
        return GS_ENOMEM;
    }
    for (int i = 0; i < sn->nn; i++)
        if (gs_kube_node_copy(&sn->nodes[i], &st->nodes[i])) {
            pthread_mutex_unlock(&st->mu);
            snapshot_release(sn);
            return GS_ENOMEM;
        }
    if (sn->np > 0)
        memcpy(sn->pods, st->pods, sizeof(*sn->pods) * (size_t)sn->np);
    for (int i = 0; i < sn->np; i++)
        gs_kube_pod_ref(&sn->pods[i].p);
    pthread_mutex_unlock(&st->mu);
    map_mig_clients(sn, po);
    index_nodes(sn);
    gs_cluster_init(&sn->c);
    for (int i = 0; i < sn->nn; i++) {
        gs_cache_add_node(&sn->c, &sn->nodes[i], st->mp, NULL, 0);
        sn->tainted |= sn->nodes[i].ntaints > 0 || sn->nodes[i].unschedulable;
    }
    sn->mem_used = calloc(ann, sizeof(*sn->mem_used));
    sn->res_used = calloc(ann, sizeof(*sn->res_used));
    if (!sn->mem_used || !sn->res_used) {
        snapshot_release(sn);
        return GS_ENOMEM;
    }
    for (int i = 0; i < sn->np; i++) {
        struct gs_kube_pod *p = &sn->pods[i].p;
        if (!p->node[0])
            continue;
        int id = find_in(sn, p->node);
        if (id >= 0) {
            sn->placed[i] = gs_cache_add_pod(&sn->c, id, p, &sn->alloc[i]) == 0;
            count_resources(sn, id, p);
        }
    }
    return 0;
}

/* Whether the node has room, to the byte, for what the engine counts roughly (memory) or not
 * at all (ephemeral-storage, hugepages, extended resources other than GPUs): kube-scheduler's
 * NodeResourcesFit for them. Names the first resource short in why (may be NULL). */
static bool resources_fit(const struct snapshot *sn, int node, const struct gs_kube_pod *p,
                          char *why, size_t n)
{
    const struct gs_kube_node *kn = &sn->nodes[node];
    if (p->mem_bytes > 0 && kn->mem_bytes - sn->mem_used[node] < p->mem_bytes) {
        if (why)
            snprintf(why, n, "memory");
        return false;
    }
    for (int r = 0; r < p->nres; r++) {
        if (p->res[r].value <= 0)
            continue;
        int64_t room = 0;
        for (int k = 0; k < kn->nres; k++)
            if (strcmp(kn->res[k].name, p->res[r].name) == 0)
                room = kn->res[k].value - sn->res_used[node][k];
        if (room < p->res[r].value) {
            if (why)
                snprintf(why, n, "%s", p->res[r].name);
            return false;
        }
    }
    return true;
}

/* ---------- informers ---------- */

enum kind { K_NODES, K_PODS };

struct informer {
    struct sched *s;
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
    struct store *st = &in->s->st;
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
                int i = find_node(st, n.name);
                if (i >= 0) {
                    gs_kube_node_release(&st->nodes[i]);
                    st->nodes[i] = st->nodes[--st->nnodes];
                }
            } else {
                upsert_node(st, &n);
            }
            gs_kube_node_release(&n);
        } else {
            GS_WARN("informer", "%s", err.msg);
        }
    } else {
        struct gs_kube_pod p;
        if (gs_kube_pod_read(obj, &p, &err) == 0) {
            int i = find_pod(st, p.ns, p.name);
            if (strcmp(type, "DELETED") == 0) {
                if (i >= 0) {
                    gs_kube_pod_release(&st->pods[i].p);
                    st->pods[i] = st->pods[--st->npods];
                }
            } else {
                gs_kube_pod_read_constraints(obj, &p);
                upsert_pod(st, &p);
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

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static void *informer_main(void *arg)
{
    struct informer *in = arg;
    struct sched *s = in->s;
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
                sleep_s(backoff);
                backoff = fmin(backoff * 2, 30);
                continue;
            }
            struct store *st = &s->st;
            pthread_mutex_lock(&st->mu);
            if (in->kind == K_NODES) {
                for (int i = 0; i < st->nnodes; i++)
                    gs_kube_node_release(&st->nodes[i]);
                st->nnodes = 0;
                for (int i = 0; i < in->nl; i++) {
                    upsert_node(st, &in->lnodes[i]);
                    gs_kube_node_release(&in->lnodes[i]);
                }
                in->nl = 0;
                st->nodes_synced = true;
            } else {
                /* keep backoff state of pods that stay */
                struct pod_entry *old = st->pods;
                int nold = st->npods;
                st->pods = NULL;
                st->npods = st->cap_pods = 0;
                for (int i = 0; i < in->npl; i++) {
                    upsert_pod(st, &in->lpods[i]);
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
            sleep_s(backoff);
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
    struct sched *s = arg;
    char path[512], observed[256] = "";
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
             s->o.lease_namespace, s->o.lease_name);
    double observed_at = mono(), last_renew = 0;
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
                last_renew = mono();
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
                observed_at = mono();
            }
            bool mine = holder && strcmp(holder, s->o.identity) == 0;
            bool expired = !holder || !holder[0] || mono() - observed_at > s->o.lease_duration_s;
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
                    last_renew = mono();
                }
            }
        }
        json_decref(lease);
        if (gs_flag_get(&s->leader) && mono() - last_renew > s->o.renew_deadline_s) {
            GS_ERR("leader", "'%s' could not renew the lease for %.0fs: stepping down (%s)",
                   s->o.identity, s->o.renew_deadline_s, err.msg);
            gs_flag_set(&s->leader, 0);
            s->fatal = 1;
            pthread_mutex_lock(&s->st.mu);
            pthread_cond_broadcast(&s->st.cv);
            pthread_mutex_unlock(&s->st.mu);
            break;
        }
        sleep_s(s->o.retry_period_s);
    }
    return NULL;
}

/* ---------- HTTP ---------- */

/* ---------- kube-scheduler extender (filter, prioritize, bind) ---------- */

static void record_latency(struct sched *s, double dt, int result);

static struct gs_engine *x_engine(struct sched *s, int nodes)
{
    if (!s->xengine || s->xengine_nodes < nodes) {
        gs_engine_free(s->xengine);
        s->xengine_nodes = nodes > 64 ? nodes * 2 : 128;
        s->xengine = gs_engine_new(gs_policy_find(s->o.policy), NULL, s->xengine_nodes, 42);
    }
    return s->xengine;
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

static json_t *x_filter_or_prioritize(struct sched *s, const json_t *args, bool prioritize,
                                      char *errbuf, size_t errsize)
{
    struct gs_kube_pod pod;
    struct gs_error err;
    gs_error_init(&err);
    if (gs_kube_pod_read(json_object_get(args, "Pod"), &pod, &err)) {
        snprintf(errbuf, errsize, "%s", err.msg);
        return NULL;
    }
    struct snapshot sn;
    if (take_snapshot(&s->st, &sn, NULL)) {
        snprintf(errbuf, errsize, "out of memory");
        return NULL;
    }
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
        snapshot_release(&sn);
        return NULL;
    }
    pthread_mutex_lock(&s->emu);
    struct gs_engine *e = x_engine(s, sn.c.nnodes);
    size_t i;
    const json_t *v;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    json_array_foreach(cands, i, v)
    {
        const char *name = json_string_value(v);
        int id = name ? find_in(&sn, name) : -1;
        struct gs_reasons why;
        memset(&why, 0, sizeof(why));
        bool fits = id >= 0 && gs_kube_tolerates(&pod, &sn.nodes[id]) &&
                    gs_engine_fits(&sn.c, id, &pod.req, &why);
        if (!fits) {
            char msg[256] = "node not in gpusched's cache";
            if (id >= 0 && !gs_kube_tolerates(&pod, &sn.nodes[id]))
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
        scores[i] = e ? gs_engine_score(e, &sn.c, id, &pod.req, &a) : 0;
        if (scores[i] < lo)
            lo = scores[i];
        if (scores[i] > hi)
            hi = scores[i];
    }
    pthread_mutex_unlock(&s->emu);
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
    snapshot_release(&sn);
    return out;
}

/* Bind pod to node with the devices the engine picks there, and assume it in the store. Called
 * with s->emu held: the HTTP server answers requests concurrently, and one bind's devices must
 * be in the store before the next bind takes its snapshot, or two pods get the same slot. */
static json_t *x_bind_locked(struct sched *s, const struct gs_kube_pod *pod, const char *ns,
                             const char *name, const char *node)
{
    char msg[1024] = "", path[600];
    struct snapshot sn;
    if (take_snapshot(&s->st, &sn, NULL))
        return json_pack("{s:s}", "Error", "out of memory");
    int id = find_in(&sn, node);
    char devices[256] = "";
    if (id < 0) {
        snprintf(msg, sizeof(msg), "node %s is not in gpusched's cache", node);
    } else if (pod->req.kind != GS_REQ_NONE) {
        struct gs_reasons why;
        memset(&why, 0, sizeof(why));
        if (!gs_engine_fits(&sn.c, id, &pod->req, &why)) {
            gs_reasons_str(&why, &pod->req, msg, sizeof(msg));
        } else {
            struct gs_engine *e = x_engine(s, sn.c.nnodes);
            struct gs_alloc a;
            if (e) {
                gs_engine_score(e, &sn.c, id, &pod->req, &a);
                gs_kube_devices_str(&sn.c, &a, devices, sizeof(devices));
            }
        }
    }
    snapshot_release(&sn);
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
    pthread_mutex_lock(&s->st.mu);
    int i = find_pod(&s->st, ns, name);
    if (i >= 0 && !s->st.pods[i].p.node[0]) {
        snprintf(s->st.pods[i].p.node, sizeof(s->st.pods[i].p.node), "%s", node);
        snprintf(s->st.pods[i].p.devices, sizeof(s->st.pods[i].p.devices), "%s", devices);
    }
    s->st.gen++;
    pthread_mutex_unlock(&s->st.mu);
    record_latency(s, 0, 0);
    GS_INFO("extender", "%s/%s -> %s %s", ns, name, node, devices);
    return json_pack("{s:s}", "Error", "");
}

static json_t *x_bind(struct sched *s, const json_t *args)
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
    pthread_mutex_lock(&s->emu);
    json_t *out = x_bind_locked(s, &pod, ns, name, node);
    pthread_mutex_unlock(&s->emu);
    return out;
}

/* The extender's verbs: a JSON body in, a JSON answer out. */
static int x_answer(struct sched *s, const struct gs_httpd_request *req, struct gs_httpd_reply *rep)
{
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
    char *text = out ? json_dumps(out, JSON_COMPACT) : NULL;
    json_decref(out);
    if (!text)
        return GS_ENOMEM;
    int rc = gs_httpd_reply(rep, 200, "application/json", text);
    free(text);
    return rc;
}

/* Every endpoint (served by kube/httpd.c, which bounds the clients). */
static int http_handler(void *cls, const struct gs_httpd_request *req, struct gs_httpd_reply *rep)
{
    struct sched *s = cls;
    const char *method = req->method, *url = req->url;
    if (strcmp(method, "POST") == 0 && s->o.extender)
        return x_answer(s, req, rep);
    if (strcmp(method, "GET") != 0)
        return gs_httpd_reply(rep, 405, "text/plain", "method not allowed\n");
    if (strcmp(url, "/healthz") == 0)
        return s->fatal ? gs_httpd_reply(rep, 500, "text/plain", "fatal\n")
                        : gs_httpd_reply(rep, 200, "text/plain", "ok\n");
    if (strcmp(url, "/readyz") == 0) {
        pthread_mutex_lock(&s->st.mu);
        bool ready = s->st.nodes_synced && s->st.pods_synced && !s->fatal;
        pthread_mutex_unlock(&s->st.mu);
        return ready ? gs_httpd_reply(rep, 200, "text/plain", "ok\n")
                     : gs_httpd_reply(rep, 503, "text/plain", "informers not synced\n");
    }
    if (strcmp(url, "/debug/pending") == 0) {
        pthread_mutex_lock(&s->mmu);
        bool any = s->pending_report != NULL;
        char *text = any ? json_dumps(s->pending_report, JSON_INDENT(1)) : NULL;
        pthread_mutex_unlock(&s->mmu);
        if (any && !text)
            return GS_ENOMEM;
        int rc = gs_httpd_reply(rep, 200, "application/json", text ? text : "[]");
        free(text);
        return rc;
    }
    if (strcmp(url, "/metrics") == 0) {
        struct gs_buf *b = &rep->body;
        int rc = 0;
        pthread_mutex_lock(&s->mmu);
        rc |= gs_buf_printf(
            b,
            "# HELP gpusched_schedule_attempts_total Scheduling attempts by result.\n"
            "# TYPE gpusched_schedule_attempts_total counter\n"
            "gpusched_schedule_attempts_total{result=\"scheduled\"} %llu\n"
            "gpusched_schedule_attempts_total{result=\"unschedulable\"} %llu\n"
            "gpusched_schedule_attempts_total{result=\"error\"} %llu\n"
            "# HELP gpusched_scheduling_duration_seconds Time to place and bind a pod.\n"
            "# TYPE gpusched_scheduling_duration_seconds histogram\n",
            (unsigned long long)s->attempts_scheduled,
            (unsigned long long)s->attempts_unschedulable, (unsigned long long)s->attempts_error);
        uint64_t cum = 0;
        for (int i = 0; i < NBUCKETS; i++) {
            cum += s->lat_bucket[i];
            rc |= gs_buf_printf(b, "gpusched_scheduling_duration_seconds_bucket{le=\"%g\"} %llu\n",
                                buckets[i], (unsigned long long)cum);
        }
        rc |= gs_buf_printf(b,
                            "gpusched_scheduling_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                            "gpusched_scheduling_duration_seconds_sum %.6f\n"
                            "gpusched_scheduling_duration_seconds_count %llu\n"
                            "# HELP gpusched_pending_pods Pods waiting for gpusched.\n"
                            "# TYPE gpusched_pending_pods gauge\n"
                            "gpusched_pending_pods %d\n"
                            "# HELP gpusched_leader 1 when this replica holds the lease.\n"
                            "# TYPE gpusched_leader gauge\n"
                            "gpusched_leader %d\n"
                            "# HELP gpusched_gpus_allocatable GPUs (accounting units) by model.\n"
                            "# TYPE gpusched_gpus_allocatable gauge\n",
                            (unsigned long long)s->lat_count, s->lat_sum,
                            (unsigned long long)s->lat_count, s->pending,
                            gs_flag_get(&s->leader) ? 1 : 0);
        for (int m = 0; m < s->nmodels; m++)
            rc |= gs_buf_printf(b, "gpusched_gpus_allocatable{model=\"%s\"} %g\n", s->model_name[m],
                                s->model_cap[m]);
        rc |= gs_buf_puts(b, "# HELP gpusched_gpus_allocated GPUs (accounting units) allocated by "
                             "model.\n# TYPE gpusched_gpus_allocated gauge\n");
        for (int m = 0; m < s->nmodels; m++)
            rc |= gs_buf_printf(b, "gpusched_gpus_allocated{model=\"%s\"} %g\n", s->model_name[m],
                                s->model_alloc[m]);
        rc |= gs_buf_printf(
            b,
            "# HELP gpusched_preemptions_total Preemptions (victim sets evicted).\n"
            "# TYPE gpusched_preemptions_total counter\n"
            "gpusched_preemptions_total %llu\n"
            "# HELP gpusched_preemption_victims_total Pods evicted by preemption.\n"
            "# TYPE gpusched_preemption_victims_total counter\n"
            "gpusched_preemption_victims_total %llu\n"
            "# HELP gpusched_preemption_lost_gpu_hours_total GPU-hours of work lost "
            "to preemption.\n"
            "# TYPE gpusched_preemption_lost_gpu_hours_total counter\n"
            "gpusched_preemption_lost_gpu_hours_total %.6f\n"
            "# HELP gpusched_policy_lists_total Lists of GPUQueues, ResourceQuotas, "
            "PodGroups, PDBs, MigManagers, PersistentVolumeClaims and PersistentVolumes (one "
            "per kind; watches say when).\n"
            "# TYPE gpusched_policy_lists_total counter\n"
            "gpusched_policy_lists_total %llu\n",
            (unsigned long long)s->preemptions, (unsigned long long)s->victims, s->lost_gpu_hours,
            (unsigned long long)s->policy_lists);
        pthread_mutex_unlock(&s->mmu);
        /* a page cut short by a failed allocation is no answer */
        if (rc)
            return GS_ENOMEM;
        rep->type = "text/plain; version=0.0.4";
        return 0;
    }
    return gs_httpd_reply(rep, 404, "text/plain", "not found\n");
}

/* ---------- scheduling ---------- */

/* Queue a write for the background lane (Events, status patches). */
static void write_later(struct sched *s, const char *method, const char *path, const char *ctype,
                        json_t *body)
{
    struct job j;
    memset(&j, 0, sizeof(j));
    j.kind = JOB_WRITE;
    snprintf(j.method, sizeof(j.method), "%s", method);
    snprintf(j.path, sizeof(j.path), "%s", path);
    snprintf(j.ctype, sizeof(j.ctype), "%s", ctype ? ctype : "");
    j.body = body;
    if (!jobq_push(&s->bgq, &j)) {
        GS_WARN("scheduler", "background queue full: dropping %s %s", method, path);
        json_decref(body);
    }
}

static void emit_event(struct sched *s, const struct gs_kube_pod *p, const char *type,
                       const char *reason, const char *action, const char *note)
{
    char path[256];
    snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", p->ns);
    write_later(s, "POST", path, NULL, gs_kube_event(p, type, reason, action, note, s->o.identity));
}

static void record_latency(struct sched *s, double dt, int result);

static void *bg_worker(void *arg)
{
    struct sched *s = arg;
    struct job j;
    while (jobq_pop(&s->bgq, &j)) {
        struct gs_error err;
        gs_error_init(&err);
        if (gs_kube_request_lane2(s->kc, j.method, j.path, j.ctype[0] ? j.ctype : NULL, j.body,
                                  NULL, NULL, &err))
            GS_WARN("scheduler", "%s", err.msg);
        json_decref(j.body);
    }
    return NULL;
}

static void set_backoff(struct sched *s, struct pod_entry *e)
{
    double b = e->backoff ? e->backoff * 2 : 1;
    if (b > s->o.max_backoff_s)
        b = s->o.max_backoff_s;
    e->backoff = b;
    e->next_try = mono() + b;
}

static void *bind_worker(void *arg)
{
    struct sched *s = arg;
    struct job j;
    while (jobq_pop(&s->bindq, &j)) {
        struct gs_error err;
        gs_error_init(&err);
        long status = 0;
        json_t *b = gs_kube_binding(&j.pod, j.node);
        if (j.devices[0])
            json_object_set_new(json_object_get(b, "metadata"), "annotations",
                                json_pack("{s:s}", GS_DEVICES_ANNOTATION, j.devices));
        int rc = gs_kube_request(s->kc, "POST", j.path, NULL, b, NULL, &status, &err);
        json_decref(b);
        if (rc == 0) {
            record_latency(s, mono() - j.t0, 0);
            char note[700];
            snprintf(note, sizeof(note), "Successfully assigned %s/%s to %s%s%s", j.pod.ns,
                     j.pod.name, j.node, j.devices[0] ? " with " : "", j.devices);
            emit_event(s, &j.pod, "Normal", "Scheduled", "Binding", note);
            GS_INFO("scheduler", "%s/%s -> %s %s", j.pod.ns, j.pod.name, j.node, j.devices);
            continue;
        }
        record_latency(s, mono() - j.t0, 2);
        if (status == 409 || status == 404) {
            /* already assigned (the watch will tell) or gone */
            GS_INFO("scheduler", "bind %s/%s: %s", j.pod.ns, j.pod.name, err.msg);
            continue;
        }
        GS_WARN("scheduler", "bind %s/%s: %s", j.pod.ns, j.pod.name, err.msg);
        /* give the devices back and retry later */
        pthread_mutex_lock(&s->st.mu);
        int i = find_pod(&s->st, j.pod.ns, j.pod.name);
        if (i >= 0 && s->st.pods[i].assumed && strcmp(s->st.pods[i].p.uid, j.pod.uid) == 0) {
            s->st.pods[i].assumed = false;
            s->st.pods[i].p.node[0] = '\0';
            s->st.pods[i].p.devices[0] = '\0';
            set_backoff(s, &s->st.pods[i]);
            s->st.gen++;
            pthread_cond_broadcast(&s->st.cv);
        }
        pthread_mutex_unlock(&s->st.mu);
    }
    return NULL;
}

static void record_latency(struct sched *s, double dt, int result)
{
    pthread_mutex_lock(&s->mmu);
    if (result == 0)
        s->attempts_scheduled++;
    else if (result == 1)
        s->attempts_unschedulable++;
    else
        s->attempts_error++;
    s->lat_count++;
    s->lat_sum += dt;
    for (int i = 0; i < NBUCKETS; i++)
        if (dt <= buckets[i]) {
            s->lat_bucket[i]++;
            break;
        }
    pthread_mutex_unlock(&s->mmu);
}

static void update_gauges(struct sched *s, const struct gs_cluster *c, int pending)
{
    pthread_mutex_lock(&s->mmu);
    s->pending = pending;
    s->nmodels = 0;
    for (int g = 0; g < c->ngpus; g++) {
        const char *name = gs_catalog_get(c->gpus[g].model)->name;
        int m;
        for (m = 0; m < s->nmodels; m++)
            if (strcmp(s->model_name[m], name) == 0)
                break;
        if (m == s->nmodels) {
            if (s->nmodels >= GS_MAX_MODELS)
                continue;
            snprintf(s->model_name[m], sizeof(s->model_name[m]), "%s", name);
            s->model_cap[m] = s->model_alloc[m] = 0;
            s->nmodels++;
        }
        s->model_cap[m] += 1;
        s->model_alloc[m] += gs_gpu_alloc_units(&c->gpus[g]);
    }
    pthread_mutex_unlock(&s->mmu);
}

/* Whether a pending pod of ours is due (not in backoff): a cycle without one only refreshes
 * the gauges. Called with the store locked. */
static bool work_due(const struct sched *s)
{
    double t = mono();
    for (int i = 0; i < s->st.npods; i++) {
        const struct pod_entry *e = &s->st.pods[i];
        if (!e->p.node[0] && !e->p.terminating && e->next_try <= t &&
            strcmp(e->p.scheduler, s->o.scheduler_name) == 0)
            return true;
    }
    return false;
}

/* One pending pod's place in the cycle's order: priority, then pods owed their queue's
 * deserved share before borrowers, then the queue's priority, then its weighted dominant
 * share, then arrival. */
struct qitem {
    struct pod_entry *e;
    int idx; /* in the snapshot */
    int32_t prio;
    int borrow;
    int32_t qprio; /* the queue's priority */
    double drf;
};

static int cmp_qitem(const void *a, const void *b)
{
    const struct qitem *x = a, *y = b;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    if (x->borrow != y->borrow)
        return x->borrow - y->borrow;
    if (x->qprio != y->qprio)
        return x->qprio > y->qprio ? -1 : 1;
    if (x->drf != y->drf)
        return x->drf < y->drf ? -1 : 1;
    return x->e->seq < y->e->seq ? -1 : x->e->seq > y->e->seq;
}

/* A cycle's shared state. */
struct cycle {
    struct sched *s;
    struct snapshot *sn;
    struct gs_cluster *c;
    struct gs_engine *engine;
    struct gs_tenancy ty;
    struct gs_policy_objs po;
    json_t *report;
    double now_wall;
    int scheduled;
    int8_t *leaving; /* per node: a pod there is terminating (NULL: none known) */
    /* Kubernetes placement constraints: the placed pods (borrowed from the snapshot, which
     * holds a reference to each) and one pod's precomputation; NULL without memory */
    struct gs_kstate *ks;
    struct gs_kprep *kp;
};

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(struct cycle *cy, const struct gs_kube_pod *p, int queue, const char *category,
                   const char *msg)
{
    json_array_append_new(
        cy->report, json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "namespace", p->ns, "pod", p->name,
                              "queue", queue >= 0 ? cy->ty.t.q[queue].name : "", "priority",
                              (int)p->priority, "reason", category, "message", msg));
}

static void backoff_pod(struct sched *s, const struct gs_kube_pod *p, double retry_s)
{
    pthread_mutex_lock(&s->st.mu);
    int i = find_pod(&s->st, p->ns, p->name);
    if (i >= 0) {
        if (retry_s > 0)
            s->st.pods[i].next_try = mono() + retry_s;
        else
            set_backoff(s, &s->st.pods[i]);
    }
    pthread_mutex_unlock(&s->st.mu);
}

/* FailedScheduling: an Event, the PodScheduled condition and a backoff. */
static void unschedulable(struct cycle *cy, const struct gs_kube_pod *p, int queue,
                          const char *category, const char *msg, double t0)
{
    struct sched *s = cy->s;
    report(cy, p, queue, category, msg);
    if (s->dry)
        return;
    record_latency(s, mono() - t0, 1);
    emit_event(s, p, "Warning", "FailedScheduling", "Scheduling", msg);
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->ns, p->name);
    write_later(s, "PATCH", path, "application/strategic-merge-patch+json",
                gs_kube_unschedulable_patch(msg));
    GS_INFO("scheduler", "%s/%s unschedulable (%s): %s", p->ns, p->name, category, msg);
    backoff_pod(s, p, 0);
}

/* Assume the pod on the node now; a binder thread tells the API server. */
static int assume_and_bind(struct cycle *cy, const struct gs_kube_pod *p, const struct gs_alloc *a,
                           double t0)
{
    struct sched *s = cy->s;
    struct store *st = &s->st;
    struct job j;
    memset(&j, 0, sizeof(j));
    j.kind = JOB_BIND;
    j.pod = *p;
    j.pod.k = NULL; /* a copy without a reference */
    j.t0 = t0;
    snprintf(j.node, sizeof(j.node), "%s", cy->c->nodes[a->node].name);
    if (p->req.kind != GS_REQ_NONE)
        gs_kube_devices_str(cy->c, a, j.devices, sizeof(j.devices));
    snprintf(j.path, sizeof(j.path), "/api/v1/namespaces/%s/pods/%s/binding", p->ns, p->name);
    if (gs_cluster_bind(cy->c, &p->req, a))
        return GS_EINTERNAL;
    if (cy->ks && p->k)
        gs_kstate_add_pod(cy->ks, cy->c, &p->k->kp, a->node);
    count_resources(cy->sn, a->node, p);
    if (s->dry) {
        char msg[600];
        snprintf(msg, sizeof(msg), "fits: would bind to %s%s%s", j.node, j.devices[0] ? " " : "",
                 j.devices);
        report(cy, p, -1, "fits", msg);
        return 0;
    }
    pthread_mutex_lock(&st->mu);
    int i = find_pod(st, p->ns, p->name);
    if (i >= 0 && strcmp(st->pods[i].p.uid, p->uid) == 0 && !st->pods[i].p.node[0]) {
        snprintf(st->pods[i].p.node, sizeof(st->pods[i].p.node), "%s", j.node);
        snprintf(st->pods[i].p.devices, sizeof(st->pods[i].p.devices), "%s", j.devices);
        st->pods[i].assumed = true;
        st->pods[i].nominated[0] = '\0';
    }
    pthread_mutex_unlock(&st->mu);
    if (!jobq_push(&s->bindq, &j)) {
        /* cannot happen with the queue sized to the pending pods; undo */
        gs_cluster_unbind(cy->c, &p->req, a);
        pthread_mutex_lock(&st->mu);
        if (i >= 0 && st->pods[i].assumed) {
            st->pods[i].assumed = false;
            st->pods[i].p.node[0] = '\0';
        }
        pthread_mutex_unlock(&st->mu);
        return GS_ENOSPC;
    }
    cy->scheduled++;
    return 0;
}

/* Whether the pod tolerates a node's taints, for core/constraints and the engine; the
 * volumes bound to its claims, for node_has_room. */
struct tol_ctx {
    const struct cycle *cy;
    const struct gs_kube_pod *p;
    const struct gs_kube_pv *const *pvs; /* those with a required node affinity */
    int npvs;
    int8_t *vol_refused; /* per node: node_has_room last refused it for a volume (or NULL) */
};

/* The volumes bound to a pending pod's claims (kube-scheduler's VolumeBinding PreFilter):
 * 0 with pvs[0..*npv) the volumes whose required node affinity its node must match, or 1 with
 * why when the pod must wait. A claim not yet bound (Pending: WaitForFirstConsumer, or a
 * provisioner still at work) is no constraint here: gpusched neither provisions volumes nor
 * picks one for a claim (dynamic provisioning and delayed binding are out of scope), so such
 * a pod goes where it fits and the volume follows it. When claims or volumes cannot be
 * listed at all (volumes_unknown), nothing is checked. */
static int pod_volumes(const struct cycle *cy, const struct gs_kube_pod *p,
                       const struct gs_kube_pv **pvs, int *npv, char *why, size_t n)
{
    *npv = 0;
    if (cy->po.volumes_unknown)
        return 0;
    for (int i = 0; i < p->nclaims; i++) {
        const struct gs_kube_pvc *c = gs_policy_pvc_find(&cy->po, p->ns, p->claims[i]);
        if (!c) {
            snprintf(why, n, "persistentvolumeclaim \"%s\" not found", p->claims[i]);
            return 1;
        }
        if (!c->bound)
            continue;
        const struct gs_kube_pv *pv = gs_policy_pv_find(&cy->po, c->volume);
        if (!pv) {
            snprintf(why, n,
                     "pvc(s) bound to non-existent pv(s): persistentvolumeclaim \"%s\" is bound "
                     "to persistentvolume \"%s\", which does not exist",
                     c->name, c->volume);
            return 1;
        }
        if (pv->nterms > 0 && *npv < GS_MAX_POD_CLAIMS)
            pvs[(*npv)++] = pv;
    }
    return 0;
}

/* kube-scheduler's VolumeBinding filter for bound volumes: the node matches the required node
 * affinity of every one. */
static bool volumes_fit(const struct tol_ctx *t, int node)
{
    for (int i = 0; i < t->npvs; i++)
        if (!gs_kube_pv_node_matches(t->pvs[i], &t->cy->sn->nodes[node]))
            return false;
    return true;
}

/* Why a pod that fits nowhere waits, by category: selector, taint, fragmentation (enough
 * free in total, no valid slot on one node), priority (only equal or higher priority pods
 * hold what it needs) or resources. */
static const char *classify(struct cycle *cy, const struct gs_kube_pod *p,
                            const struct gs_reasons *why, int masked, int candidates,
                            const struct tol_ctx *vt, char *extra, size_t n)
{
    extra[0] = '\0';
    int nodes = why->nodes;
    int sel = why->count[GS_R_SELECTOR] + why->count[GS_R_MODEL];
    if (nodes > 0 && sel == nodes)
        return "selector";
    if (masked > 0 && masked + sel >= nodes) {
        snprintf(extra, n, "; taint: %d node%s have a taint the pod does not tolerate", masked,
                 masked == 1 ? "" : "s");
        return "taint";
    }
    const struct gs_request *r = &p->req;
    if (r->kind != GS_REQ_NONE) {
        /* free capacity of the kind the pod asks for, on nodes whose labels allow it */
        double free_units = 0;
        int free_whole = 0;
        for (int k = 0; k < cy->c->nnodes; k++) {
            const struct gs_node *nd = &cy->c->nodes[k];
            /* nodes its volumes rule out hold nothing it could use */
            if (nd->unschedulable || (vt->npvs > 0 && !volumes_fit(vt, k)))
                continue;
            for (int g = nd->gpu0; g < nd->gpu0 + nd->ngpus; g++) {
                const struct gs_gpu *G = &cy->c->gpus[g];
                if (!G->healthy)
                    continue;
                double u = 1.0 - gs_gpu_alloc_units(G);
                free_units += u;
                free_whole += G->mode != GS_GPU_MIG && G->milli_free == GS_MILLI &&
                              (G->mode == GS_GPU_WHOLE || G->mode == GS_GPU_FRACTION);
            }
        }
        double want = gs_request_units(r, -1);
        if (r->kind == GS_REQ_GPU && r->milli == GS_MILLI && free_whole >= r->gpus) {
            snprintf(extra, n,
                     "; fragmentation: %d whole GPUs are free in the cluster but no "
                     "node has %d free",
                     free_whole, (int)r->gpus);
            return "fragmentation";
        }
        if (r->kind != GS_REQ_GPU && free_units + 1e-9 >= want) {
            snprintf(extra, n,
                     "; fragmentation: %.2f GPU-equivalents are free in the cluster "
                     "but no node has a valid %s%s",
                     free_units, r->kind == GS_REQ_MIG ? "slot of " : "share of one GPU",
                     r->kind == GS_REQ_MIG ? r->mig : "");
            return "fragmentation";
        }
    }
    if (!p->preempt_never && candidates == 0 &&
        why->count[GS_R_GPU_COUNT] + why->count[GS_R_GPU_SHARE] + why->count[GS_R_MIG_SLOT] +
                why->count[GS_R_REPLICA] >
            0) {
        snprintf(extra, n,
                 "; priority: no running pod of lower priority in its queue, nor "
                 "borrowed capacity it is owed, could make room");
        return "priority";
    }
    return "resources";
}

/* A nomination holds while its victims leave: 30 s at least, and while (up to 5 minutes) a
 * pod on the nominated node is still terminating (victims with a long grace period), so that
 * a waiting preemptor does not evict a second set. */
static bool nomination_live(const struct cycle *cy, const struct pod_entry *e)
{
    if (!e->nominated[0])
        return false;
    double age = mono() - e->nominated_at;
    if (age < 30)
        return true;
    int node = age > 300 || !cy->leaving ? -1 : find_in(cy->sn, e->nominated);
    return node >= 0 && cy->leaving[node];
}

/* The devices a nominated pod would take on its node now, if it fits there. */
static bool nominated_alloc(const struct cycle *cy, const struct pod_entry *e, struct gs_alloc *a)
{
    int node = e->nominated[0] ? find_in(cy->sn, e->nominated) : -1;
    if (node < 0 || !gs_engine_fits(cy->c, node, &e->p.req, NULL))
        return false;
    gs_engine_score(cy->engine, cy->c, node, &e->p.req, a);
    a->node = node;
    return true;
}

/* What victim choice sees in this cycle: the running pods, budgets, tenants. */
static struct gs_preempt_ctx preempt_ctx(struct cycle *cy)
{
    return (struct gs_preempt_ctx){.run = cy->ty.run,
                                   .nrun = cy->ty.nrun,
                                   .ngangs = cy->ty.ngangs,
                                   .pdb_allowed = cy->ty.pdb_allowed,
                                   .npdb = cy->ty.npdb,
                                   .tenants = &cy->ty.t,
                                   .now_s = cy->now_wall,
                                   .min_runtime_s = cy->s->o.min_runtime_s};
}

/* Evict a plan's victims for p (DisruptionTarget, delete with the UID precondition, Events);
 * their names are appended to names. */
static void evict(struct cycle *cy, const struct gs_kube_pod *p, int queue,
                  const struct gs_preempt_plan *plan, char *names, size_t size)
{
    struct sched *s = cy->s;
    struct snapshot *sn = cy->sn;
    const char *node = cy->c->nodes[plan->node].name;
    size_t off = strlen(names);
    for (int i = 0; i < plan->nvictims; i++) {
        struct gs_running *v = &cy->ty.run[plan->victims[i]];
        int vp = cy->ty.run_pod[plan->victims[i]];
        const struct gs_kube_pod *vpod = &sn->pods[vp].p;
        if (off < size - 1)
            off += (size_t)snprintf(names + off, size - off, "%s%s/%s", off ? ", " : "", vpod->ns,
                                    vpod->name);
        if (v->node >= 0 && v->node < cy->c->nnodes)
            gs_cluster_unbind(cy->c, &v->req, &v->alloc);
        gs_tenants_charge(&cy->ty.t, v->queue, vpod->ns, &v->demand, -1);
        v->node = -1; /* gone for the rest of the cycle */
        v->gang = -1;
        if (s->dry)
            continue;
        pthread_mutex_lock(&s->mmu);
        int slot = s->nevicted < EVICTED_MAX ? s->nevicted++ : (int)(s->victims % EVICTED_MAX);
        snprintf(s->evicted[slot], sizeof(s->evicted[slot]), "%s", vpod->uid);
        s->evicted_at[slot] = mono();
        pthread_mutex_unlock(&s->mmu);
        char msg[800], path[600];
        snprintf(msg, sizeof(msg), "Preempted by %s/%s (priority %d%s%s) on node %s", p->ns,
                 p->name, (int)p->priority, queue >= 0 ? ", queue " : "",
                 queue >= 0 ? cy->ty.t.q[queue].name : "", node);
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", vpod->ns, vpod->name);
        write_later(s, "PATCH", path, "application/strategic-merge-patch+json",
                    gs_kube_disruption_patch(msg));
        emit_event(s, vpod, "Normal", "Preempted", "Preempting", msg);
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", vpod->ns, vpod->name);
        write_later(s, "DELETE", path, NULL, gs_kube_delete_options(vpod->uid, -1));
    }
}

/* Hold devices a for p in this cycle and nominate its node (nominatedNodeName, the
 * Preempting Event and /debug/pending say msg) while the victims terminate. */
static void nominate(struct cycle *cy, const struct gs_kube_pod *p, int queue,
                     const struct gs_alloc *a, const char *msg)
{
    struct sched *s = cy->s;
    const char *node = cy->c->nodes[a->node].name;
    report(cy, p, queue, "preempting", msg);
    gs_cluster_bind(cy->c, &p->req, a);
    if (s->dry)
        return;
    GS_INFO("scheduler", "%s/%s: %s", p->ns, p->name, msg);
    emit_event(s, p, "Normal", "Preempting", "Preempting", msg);
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->ns, p->name);
    write_later(s, "PATCH", path, "application/strategic-merge-patch+json",
                gs_kube_nominated_patch(node, msg));
    pthread_mutex_lock(&s->st.mu);
    int i = find_pod(&s->st, p->ns, p->name);
    if (i >= 0) {
        snprintf(s->st.pods[i].nominated, sizeof(s->st.pods[i].nominated), "%s", node);
        s->st.pods[i].nominated_at = mono();
        s->st.pods[i].next_try = mono() + 0.25;
    }
    pthread_mutex_unlock(&s->st.mu);
}

static void count_preemption(struct sched *s, int victims, double gpu_hours)
{
    pthread_mutex_lock(&s->mmu);
    s->preemptions++;
    s->victims += (uint64_t)victims;
    s->lost_gpu_hours += gpu_hours;
    pthread_mutex_unlock(&s->mmu);
}

/* Evict the plan's victims for p and hold the freed devices for it. */
static void preempt(struct cycle *cy, const struct gs_kube_pod *p, int queue,
                    const struct gs_preempt_plan *plan)
{
    char names[1024] = "", msg[1400];
    evict(cy, p, queue, plan, names, sizeof(names));
    snprintf(msg, sizeof(msg), "preempting %d pod%s on node %s (%.4f GPU-hours lost): %s",
             plan->nvictims, plan->nvictims == 1 ? "" : "s", cy->c->nodes[plan->node].name,
             plan->gpu_hours, names);
    nominate(cy, p, queue, &plan->alloc, msg);
    count_preemption(cy->s, plan->nvictims, plan->gpu_hours);
}

static bool tolerates_node(void *ctx, int node)
{
    const struct tol_ctx *t = ctx;
    return gs_kube_tolerates(t->p, &t->cy->sn->nodes[node]);
}

/* The engine's further filter for a pod: the resources it does not count exactly, then the
 * node affinity of its bound volumes (upstream's order: NodeResourcesFit, VolumeBinding). */
static bool node_has_room(void *ctx, int node)
{
    const struct tol_ctx *t = ctx;
    bool vol = false, ok = resources_fit(t->cy->sn, node, t->p, NULL, 0);
    if (ok && t->npvs > 0 && !volumes_fit(t, node))
        ok = false, vol = true;
    if (t->vol_refused)
        t->vol_refused[node] = vol;
    return ok;
}

/* Nodes out for this pod: those with a taint it does not tolerate (returned count) and those
 * its Kubernetes constraints refuse (counted per verdict in kno[]); both are marked
 * unschedulable for the engine and preemption until unmask_taints. */
static int mask_taints(struct cycle *cy, const struct gs_kube_pod *p, const struct tol_ctx *vt,
                       int8_t **masked, int kno[GS_KVERDICT_COUNT])
{
    struct gs_cluster *c = cy->c;
    int nn = c->nnodes, n = 0;
    memset(kno, 0, sizeof(int) * GS_KVERDICT_COUNT);
    struct tol_ctx tc = {cy, p, vt->pvs, vt->npvs, NULL};
    bool constrained = cy->ks && cy->kp && p->k &&
                       gs_kprep_compute(cy->kp, cy->ks, c, &p->k->kp, tolerates_node, &tc) == 0 &&
                       !gs_kprep_trivial(cy->kp);
    *masked = cy->sn->tainted || constrained || tc.npvs > 0 ? calloc((size_t)nn + 1, 1) : NULL;
    for (int i = 0; *masked && i < nn; i++) {
        if (c->nodes[i].unschedulable)
            continue;
        if ((cy->sn->tainted && !gs_kube_tolerates(p, &cy->sn->nodes[i])) ||
            !node_has_room(&tc, i)) {
            (*masked)[i] = 1;
            n++;
        } else if (constrained) {
            enum gs_kverdict v = gs_kprep_filter(cy->kp, cy->ks, c, i);
            /* spec.nodeSelector alone is the engine's own selector filter, in its words */
            if (v == GS_KFIT ||
                (v == GS_KNO_NODE_AFFINITY && !p->k->kp.has_required && !p->sel_partial))
                continue;
            kno[v]++;
            (*masked)[i] = 1;
        } else {
            continue;
        }
        c->nodes[i].unschedulable = true;
        gs_node_touch(&c->nodes[i]);
    }
    return n;
}

/* ", 3 node(s) didn't match pod anti-affinity rules" for the nodes the constraints refused
 * (gs_engine_place_k's counts; vol of those its fit refused were for a volume's node
 * affinity); returns how many. */
static int constraint_reasons(const struct gs_reasons *r, int vol, char *out, size_t n)
{
    int total = 0;
    size_t o = strlen(out);
    vol = vol < r->fit ? vol : r->fit;
    if (r->fit > vol && o < n)
        o += (size_t)snprintf(out + o, n - o,
                              ", %d node(s) had too little memory, ephemeral-storage, hugepages "
                              "or another resource left",
                              r->fit - vol);
    if (vol > 0 && o < n)
        o +=
            (size_t)snprintf(out + o, n - o, ", %d node(s) had volume node affinity conflict", vol);
    for (int v = GS_KNO_NODE_NAME; v < GS_KVERDICT_COUNT; v++) {
        if (!r->kverdict[v])
            continue;
        total += r->kverdict[v];
        if (o < n)
            o += (size_t)snprintf(out + o, n - o, ", %d %s", r->kverdict[v],
                                  gs_kverdict_reason((enum gs_kverdict)v));
    }
    return total;
}

static void unmask_taints(struct cycle *cy, int8_t *masked)
{
    for (int i = 0; masked && i < cy->c->nnodes; i++)
        if (masked[i]) {
            cy->c->nodes[i].unschedulable = false;
            gs_node_touch(&cy->c->nodes[i]);
        }
    free(masked);
}

/* A gang past its PodGroup's scheduleTimeoutSeconds says so in its message (the members keep
 * waiting, and keep holding nothing). */
static void gang_timeout(const struct cycle *cy, const struct gs_kube_podgroup *pg, char *msg,
                         size_t size)
{
    double waited = cy->now_wall - pg->created_s;
    if (pg->timeout_s <= 0 || pg->created_s <= 0 || waited < pg->timeout_s)
        return;
    size_t n = strlen(msg);
    snprintf(msg + n, size - n,
             "; scheduleTimeoutSeconds %d passed (%.0f s since the PodGroup "
             "was created)",
             (int)pg->timeout_s, waited);
}

/* Victims for every member of a gang that does not fit: each member whose place needs them
 * evicts its victims and is nominated; the others are nominated where they fit; every
 * member holds its devices in this cycle. Returns false when no victim set helps. */
static bool preempt_gang(struct cycle *cy, const struct gs_kube_podgroup *pg, const int *members,
                         const struct gs_request *const *reqs, int nm, int queue, bool owed)
{
    struct snapshot *sn = cy->sn;
    const struct gs_kube_pod *p0 = &sn->pods[members[0]].p;
    struct gs_preempt_plan *plans = calloc((size_t)nm, sizeof(*plans));
    if (!plans)
        return false;
    struct gs_preempt_ctx ctx = preempt_ctx(cy);
    struct gs_preemptor pr = {NULL, queue, p0->priority, owed};
    if (gs_gang_preempt(cy->engine, cy->c, &cy->ty.t, &ctx, &pr, reqs, nm, plans) != 0) {
        free(plans);
        return false;
    }
    char names[1024] = "", msg[1400];
    int nv = 0;
    double lost = 0;
    for (int k = 0; k < nm; k++) {
        if (plans[k].nvictims == 0)
            continue;
        evict(cy, &sn->pods[members[k]].p, queue, &plans[k], names, sizeof(names));
        nv += plans[k].nvictims;
        lost += plans[k].gpu_hours;
    }
    snprintf(msg, sizeof(msg),
             "gang %s/%s (%d pods): preempting %d pod%s (%.4f GPU-hours lost) so that every "
             "member starts at once: %s",
             pg->ns, pg->name, nm, nv, nv == 1 ? "" : "s", lost, names);
    for (int k = 0; k < nm; k++) {
        struct gs_qvec d;
        nominate(cy, &sn->pods[members[k]].p, queue, &plans[k].alloc, msg);
        gs_tenants_demand(&cy->ty.t, reqs[k], &d);
        gs_tenants_charge(&cy->ty.t, queue, sn->pods[members[k]].p.ns, &d, +1);
    }
    count_preemption(cy->s, nv, lost);
    free(plans);
    return true;
}

/* A gang: place every pending member (due or in backoff) at once, or none. When it does
 * not fit, its members preempt for it together (gs_gang_preempt); while their victims
 * terminate, members nominated for a node hold what is free there for the gang. */
static void schedule_gang(struct cycle *cy, int g, double t0)
{
    struct snapshot *sn = cy->sn;
    struct sched *s = cy->s;
    const struct gs_kube_podgroup *pg = &cy->po.groups[g];
    int bound = 0, members[256], nm = 0;
    bool nominated = false;
    for (int i = 0; i < sn->np; i++) {
        const struct gs_kube_pod *p = &sn->pods[i].p;
        if (cy->ty.pod_gang[i] != g || p->terminating)
            continue;
        if (p->node[0])
            bound++;
        else if (nm < 256 && strcmp(p->scheduler, s->o.scheduler_name) == 0) {
            members[nm++] = i;
            nominated |= nomination_live(cy, &sn->pods[i]);
        }
    }
    if (nm == 0)
        return;
    const struct gs_kube_pod *p0 = &sn->pods[members[0]].p;
    int queue = cy->ty.pod_queue[members[0]];
    char msg[1400];
    if (nm + bound < pg->min_member) {
        snprintf(msg, sizeof(msg),
                 "gang %s/%s: %d of minMember %d pods exist; waiting for the rest", pg->ns,
                 pg->name, nm + bound, (int)pg->min_member);
        gang_timeout(cy, pg, msg, sizeof(msg));
        for (int k = 0; k < nm; k++)
            unschedulable(cy, &sn->pods[members[k]].p, queue, "gang", msg, t0);
        return;
    }
    struct gs_qvec sum, d;
    gs_qvec_zero(&sum);
    const struct gs_request *reqs[256];
    for (int k = 0; k < nm; k++) {
        reqs[k] = &sn->pods[members[k]].p.req;
        gs_tenants_demand(&cy->ty.t, reqs[k], &d);
        for (int x = 0; x < GS_QR_COUNT; x++)
            sum.v[x] += d.v[x];
    }
    char why[400];
    enum gs_admit adm = gs_tenants_admit(&cy->ty.t, queue, p0->ns, &sum, why, sizeof(why));
    if (adm == GS_ADMIT_DENY) {
        snprintf(msg, sizeof(msg), "quota: gang %s/%s (%d pods): %s", pg->ns, pg->name, nm, why);
        for (int k = 0; k < nm; k++)
            unschedulable(cy, &sn->pods[members[k]].p, queue, "quota", msg, t0);
        return;
    }
    struct gs_decision dec[256];
    struct gs_reasons r;
    int failed = 0;
    int8_t *masked;
    int kno[GS_KVERDICT_COUNT];
    /* the first member's taints, constraints and volumes stand for the gang's (members are
     * placed in one step: they do not see each other's affinity) */
    const struct gs_kube_pv *pvs[GS_MAX_POD_CLAIMS];
    int npvs = 0;
    if (pod_volumes(cy, p0, pvs, &npvs, why, sizeof(why))) {
        snprintf(msg, sizeof(msg), "volumes: gang %s/%s (%d pods): %s", pg->ns, pg->name, nm, why);
        for (int k = 0; k < nm; k++)
            unschedulable(cy, &sn->pods[members[k]].p, queue, "constraints", msg, t0);
        return;
    }
    struct tol_ctx vt = {cy, p0, pvs, npvs, NULL};
    mask_taints(cy, p0, &vt, &masked, kno);
    int rc = gs_gang_place(cy->engine, cy->c, reqs, nm, dec, &failed, &r);
    if (rc == 0) {
        unmask_taints(cy, masked);
        /* the gang holds its devices in c; bind each member on those devices */
        for (int k = 0; k < nm; k++)
            gs_cluster_unbind(cy->c, reqs[k], &dec[k].alloc);
        for (int k = 0; k < nm; k++)
            if (assume_and_bind(cy, &sn->pods[members[k]].p, &dec[k].alloc, t0) == 0) {
                gs_tenants_demand(&cy->ty.t, reqs[k], &d);
                gs_tenants_charge(&cy->ty.t, queue, sn->pods[members[k]].p.ns, &d, +1);
            }
        if (!s->dry)
            GS_INFO("scheduler", "gang %s/%s: %d pods placed together", pg->ns, pg->name, nm);
        return;
    }
    bool preempted = !nominated && !p0->preempt_never &&
                     preempt_gang(cy, pg, members, reqs, nm, queue, adm == GS_ADMIT_OWED);
    unmask_taints(cy, masked);
    if (preempted)
        return;
    char reasons[600];
    gs_reasons_str(&r, reqs[failed], reasons, sizeof(reasons));
    snprintf(msg, sizeof(msg),
             "gang %s/%s (%d pods, minMember %d): member %s does not fit: %s; "
             "the gang holds nothing",
             pg->ns, pg->name, nm, (int)pg->min_member, sn->pods[members[failed]].p.name, reasons);
    if (nominated) {
        /* victims still leaving: what is free on each nominated node waits for its member */
        for (int k = 0; k < nm; k++) {
            struct gs_alloc a;
            if (nominated_alloc(cy, &sn->pods[members[k]], &a))
                gs_cluster_bind(cy->c, reqs[k], &a);
        }
        snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
                 "; waiting for the pods preempted for it to leave");
        for (int k = 0; k < nm; k++) {
            report(cy, &sn->pods[members[k]].p, queue, "preempting", msg);
            backoff_pod(s, &sn->pods[members[k]].p, 0.25);
        }
        return;
    }
    gang_timeout(cy, pg, msg, sizeof(msg));
    for (int k = 0; k < nm; k++)
        unschedulable(cy, &sn->pods[members[k]].p, queue, "gang", msg, t0);
}

/* The tenancy objects as last listed (an empty list may be a NULL pointer: copy only what
 * is there). Returns false without memory. */
static bool copy_policy(struct sched *s, struct gs_policy_objs *cp)
{
    pthread_mutex_lock(&s->pmu);
    const struct gs_policy_objs *po = &s->po;
    cp->nqueues = po->nqueues;
    cp->nrquotas = po->nrquotas;
    cp->ngroups = po->ngroups;
    cp->npdbs = po->npdbs;
    cp->nmigmgrs = po->nmigmgrs;
    cp->npvcs = po->npvcs;
    cp->npvs = po->npvs;
    cp->volumes_unknown = po->volumes_unknown;
    cp->queues = malloc(sizeof(*cp->queues) * (size_t)(po->nqueues + 1));
    cp->rquotas = malloc(sizeof(*cp->rquotas) * (size_t)(po->nrquotas + 1));
    cp->groups = malloc(sizeof(*cp->groups) * (size_t)(po->ngroups + 1));
    cp->pdbs = malloc(sizeof(*cp->pdbs) * (size_t)(po->npdbs + 1));
    cp->migmgrs = malloc(sizeof(*cp->migmgrs) * (size_t)(po->nmigmgrs + 1));
    cp->pvcs = malloc(sizeof(*cp->pvcs) * (size_t)(po->npvcs + 1));
    cp->pvs = malloc(sizeof(*cp->pvs) * (size_t)(po->npvs + 1));
    bool ok =
        cp->queues && cp->rquotas && cp->groups && cp->pdbs && cp->migmgrs && cp->pvcs && cp->pvs;
    if (ok && po->nqueues > 0)
        memcpy(cp->queues, po->queues, sizeof(*cp->queues) * (size_t)po->nqueues);
    if (ok && po->nrquotas > 0)
        memcpy(cp->rquotas, po->rquotas, sizeof(*cp->rquotas) * (size_t)po->nrquotas);
    if (ok && po->ngroups > 0)
        memcpy(cp->groups, po->groups, sizeof(*cp->groups) * (size_t)po->ngroups);
    if (ok && po->npdbs > 0)
        memcpy(cp->pdbs, po->pdbs, sizeof(*cp->pdbs) * (size_t)po->npdbs);
    if (ok && po->nmigmgrs > 0)
        memcpy(cp->migmgrs, po->migmgrs, sizeof(*cp->migmgrs) * (size_t)po->nmigmgrs);
    if (ok && po->npvcs > 0)
        memcpy(cp->pvcs, po->pvcs, sizeof(*cp->pvcs) * (size_t)po->npvcs);
    if (ok && po->npvs > 0)
        memcpy(cp->pvs, po->pvs, sizeof(*cp->pvs) * (size_t)po->npvs);
    pthread_mutex_unlock(&s->pmu);
    if (!ok) {
        cp->nqueues = cp->nrquotas = cp->ngroups = cp->npdbs = cp->nmigmgrs = 0;
        cp->npvcs = cp->npvs = 0;
    }
    return ok;
}

static int schedule_cycle(struct sched *s, struct gs_engine **engine, int *engine_nodes)
{
    struct store *st = &s->st;
    /* Events regarding nodes the informers saw change */
    pthread_mutex_lock(&st->mu);
    json_t *nev = st->node_events;
    st->node_events = NULL;
    pthread_mutex_unlock(&st->mu);
    size_t ni;
    json_t *ne;
    json_array_foreach(nev, ni, ne)
    {
        if (!s->dry)
            write_later(s, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", NULL,
                        json_incref(ne));
    }
    json_decref(nev);
    struct cycle cy;
    memset(&cy, 0, sizeof(cy));
    struct gs_policy_objs *cp = &cy.po;
    bool copied = copy_policy(s, cp);
    struct snapshot sn;
    int src = take_snapshot(st, &sn, cp);
    if (src) {
        gs_policy_objs_release(cp);
        return src;
    }
    cy.s = s;
    cy.sn = &sn;
    cy.c = &sn.c;
    cy.now_wall = wall();
    cy.report = json_array();
    int np = sn.np;
    /* pods we evicted that the watch still shows are as good as gone */
    pthread_mutex_lock(&s->mmu);
    for (int k = 0; k < s->nevicted; k++) {
        if (mono() - s->evicted_at[k] > 120) {
            s->evicted_at[k] = s->evicted_at[s->nevicted - 1];
            memcpy(s->evicted[k], s->evicted[--s->nevicted], sizeof(s->evicted[k]));
            k--;
            continue;
        }
        for (int i = 0; i < np; i++)
            if (strcmp(sn.pods[i].p.uid, s->evicted[k]) == 0)
                sn.pods[i].p.terminating = true;
    }
    pthread_mutex_unlock(&s->mmu);
    size_t anp = np > 0 ? (size_t)np : 1;
    struct qitem *q = malloc(sizeof(*q) * anp);
    bool *gang_done = calloc((size_t)cp->ngroups + 1, 1);
    if (!q || !gang_done || !cy.report || !copied ||
        gs_tenancy_build(&cy.ty, cp, &sn.c, &sn.pods[0].p, sizeof(sn.pods[0]), np, sn.alloc,
                         sn.placed)) {
        free(q);
        free(gang_done);
        json_decref(cy.report);
        gs_tenancy_release(&cy.ty);
        gs_policy_objs_release(cp);
        snapshot_release(&sn);
        return GS_ENOMEM;
    }
    /* pending pods in order */
    int nq = 0, waiting = 0;
    double t = mono();
    for (int i = 0; i < np; i++) {
        struct pod_entry *e = &sn.pods[i];
        if (e->p.node[0] || e->p.terminating || strcmp(e->p.scheduler, s->o.scheduler_name) != 0)
            continue;
        waiting++;
        if (e->next_try > t && !s->dry)
            continue;
        struct qitem *it = &q[nq++];
        it->e = e;
        it->idx = i;
        it->prio = e->p.priority;
        int qi = cy.ty.pod_queue[i];
        struct gs_qvec d;
        gs_tenants_demand(&cy.ty.t, &e->p.req, &d);
        it->borrow = gs_tenants_admit(&cy.ty.t, qi, e->p.ns, &d, NULL, 0) != GS_ADMIT_OWED;
        it->drf = gs_tenants_drf(&cy.ty.t, qi);
        it->qprio = qi >= 0 ? cy.ty.t.q[qi].priority : 0;
    }
    qsort(q, (size_t)nq, sizeof(*q), cmp_qitem);
    if (!*engine || *engine_nodes < sn.c.nnodes) {
        gs_engine_free(*engine);
        *engine_nodes = sn.c.nnodes > 64 ? sn.c.nnodes * 2 : 128;
        *engine = gs_engine_new(gs_policy_find(s->o.policy), NULL, *engine_nodes, 42);
        if (!*engine) {
            free(q);
            free(gang_done);
            json_decref(cy.report);
            gs_tenancy_release(&cy.ty);
            gs_policy_objs_release(cp);
            snapshot_release(&sn);
            return GS_ENOMEM;
        }
    }
    cy.engine = *engine;
    struct gs_cluster *c = &sn.c;
    /* the placed pods, for affinity, anti-affinity, spread and ports */
    if (gs_kstate_new(c, &cy.ks) == 0 && gs_kprep_new(&cy.kp) == 0) {
        for (int i = 0; i < np; i++) {
            const struct gs_kube_pod *bp = &sn.pods[i].p;
            int n = bp->k && bp->node[0] ? find_in(&sn, bp->node) : -1;
            if (n >= 0 && gs_kstate_add_pod(cy.ks, c, &bp->k->kp, n) < 0)
                break;
        }
    }
    /* pods whose victims have left go first, to the node they were nominated for, in or
     * out of their backoff: nothing else may take what was freed for them */
    int8_t *done = calloc(anp, 1);
    cy.leaving = calloc((size_t)sn.nn + 1, 1);
    for (int i = 0; cy.leaving && i < np; i++) {
        int n =
            sn.pods[i].p.terminating && sn.pods[i].p.node[0] ? find_in(&sn, sn.pods[i].p.node) : -1;
        if (n >= 0)
            cy.leaving[n] = 1;
    }
    for (int i = 0; done && i < np && !s->dry; i++) {
        struct pod_entry *e = &sn.pods[i];
        if (e->p.node[0] || e->p.terminating || !nomination_live(&cy, e) ||
            strcmp(e->p.scheduler, s->o.scheduler_name) != 0)
            continue;
        int g = cy.ty.pod_gang[i];
        if (g >= 0) {
            /* a gang that preempted goes first, whole */
            if (gang_done && !gang_done[g]) {
                gang_done[g] = true;
                schedule_gang(&cy, g, mono());
            }
            continue;
        }
        struct gs_alloc a;
        if (!nominated_alloc(&cy, e, &a))
            continue;
        if (assume_and_bind(&cy, &e->p, &a, mono()) == 0) {
            struct gs_qvec d;
            gs_tenants_demand(&cy.ty.t, &e->p.req, &d);
            gs_tenants_charge(&cy.ty.t, cy.ty.pod_queue[i], e->p.ns, &d, +1);
            done[i] = 1;
        }
    }
    for (int k = 0; k < nq && !gs_flag_get(s->stop) && gs_flag_get(&s->leader); k++) {
        struct pod_entry *e = q[k].e;
        if (done && done[q[k].idx])
            continue;
        const struct gs_kube_pod *p = &e->p;
        double t0 = mono();
        int queue = cy.ty.pod_queue[q[k].idx], g = cy.ty.pod_gang[q[k].idx];
        const char *qlabel = gs_kube_pod_label(p, GS_QUEUE_LABEL);
        char msg[1400], why[400], extra[300];
        if (qlabel && queue < 0) {
            snprintf(msg, sizeof(msg),
                     "queue: the label %s names GPUQueue '%s', which does not "
                     "exist",
                     GS_QUEUE_LABEL, qlabel);
            unschedulable(&cy, p, queue, "quota", msg, t0);
            continue;
        }
        const char *gl = gs_kube_pod_label(p, GS_POD_GROUP_LABEL);
        if (gl && g < 0) {
            snprintf(msg, sizeof(msg), "gang: PodGroup %s/%s (label %s) does not exist", p->ns, gl,
                     GS_POD_GROUP_LABEL);
            unschedulable(&cy, p, queue, "gang", msg, t0);
            continue;
        }
        if (g >= 0) {
            if (!gang_done[g]) {
                gang_done[g] = true;
                schedule_gang(&cy, g, t0);
            }
            continue;
        }
        struct gs_qvec d;
        gs_tenants_demand(&cy.ty.t, &p->req, &d);
        enum gs_admit adm = gs_tenants_admit(&cy.ty.t, queue, p->ns, &d, why, sizeof(why));
        if (adm == GS_ADMIT_DENY) {
            snprintf(msg, sizeof(msg), "quota: %s", why);
            unschedulable(&cy, p, queue, "quota", msg, t0);
            continue;
        }
        if (p->k_error[0] || p->refused[0]) {
            snprintf(msg, sizeof(msg), "constraints: %s", p->refused[0] ? p->refused : p->k_error);
            unschedulable(&cy, p, queue, "constraints", msg, t0);
            continue;
        }
        /* the volumes bound to its claims */
        const struct gs_kube_pv *pvs[GS_MAX_POD_CLAIMS];
        int npvs = 0;
        if (pod_volumes(&cy, p, pvs, &npvs, why, sizeof(why))) {
            snprintf(msg, sizeof(msg), "volumes: %s", why);
            unschedulable(&cy, p, queue, "constraints", msg, t0);
            continue;
        }
        /* the engine with the pod's taints, Kubernetes constraints and volumes */
        struct tol_ctx tc = {&cy, p, pvs, npvs, npvs > 0 ? calloc((size_t)c->nnodes + 1, 1) : NULL};
        struct gs_kplace kpl = {.tol = cy.sn->tainted ? tolerates_node : NULL,
                                .tol_ctx = &tc,
                                .fit = node_has_room,
                                .fit_ctx = &tc};
        if (cy.ks && cy.kp && p->k &&
            gs_kprep_compute(cy.kp, cy.ks, c, &p->k->kp, tolerates_node, &tc) == 0) {
            kpl.ks = cy.ks;
            kpl.kp = cy.kp;
            kpl.selector_in_req = !p->k->kp.has_required && !p->sel_partial;
        }
        struct gs_decision dec;
        struct gs_reasons r;
        memset(&r, 0, sizeof(r));
        int rc = gs_engine_place_k(*engine, c, &p->req, 0, &kpl, &dec, &r);
        struct gs_preempt_plan plan;
        int prc = GS_ENOFIT;
        memset(&plan, 0, sizeof(plan));
        bool nominated = nomination_live(&cy, e);
        if (rc && !p->preempt_never && !nominated) {
            /* preemption sees the nodes taints and constraints refuse as unschedulable */
            int8_t *masked;
            int kno[GS_KVERDICT_COUNT];
            mask_taints(&cy, p, &tc, &masked, kno);
            struct gs_preempt_ctx ctx = preempt_ctx(&cy);
            struct gs_preemptor pr = {&p->req, queue, p->priority, adm == GS_ADMIT_OWED};
            prc = gs_preempt_plan(*engine, c, &ctx, &pr, &plan);
            unmask_taints(&cy, masked);
        }
        int vol = 0;
        for (int i = 0; tc.vol_refused && i < c->nnodes; i++)
            vol += tc.vol_refused[i];
        free(tc.vol_refused);
        if (rc == 0) {
            if (assume_and_bind(&cy, p, &dec.alloc, t0) == 0)
                gs_tenants_charge(&cy.ty.t, queue, p->ns, &d, +1);
            continue;
        }
        if (prc == 0) {
            preempt(&cy, p, queue, &plan);
            gs_tenants_charge(&cy.ty.t, queue, p->ns, &d, +1);
            continue;
        }
        gs_reasons_str(&r, &p->req, msg, sizeof(msg));
        int kmasked = constraint_reasons(&r, vol, msg, sizeof(msg));
        if (nominated) {
            snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
                     "; waiting for preempted pods to leave node %s", e->nominated);
            report(&cy, p, queue, "preempting", msg);
            backoff_pod(s, p, 0.25);
            continue;
        }
        const char *cat = classify(&cy, p, &r, r.taint, plan.candidates, &tc, extra, sizeof(extra));
        if (kmasked > 0 &&
            kmasked + r.taint + r.count[GS_R_SELECTOR] + r.count[GS_R_MODEL] >= r.nodes) {
            /* node affinity is where a pod may go (selector); the rest is about other pods
             * (affinity, anti-affinity, spread, ports) or a node name */
            cat = r.kverdict[GS_KNO_NODE_AFFINITY] == kmasked ? "selector" : "constraints";
            extra[0] = '\0';
        }
        vol = vol < r.fit ? vol : r.fit;
        if (vol > 0 &&
            kmasked + vol + r.taint + r.count[GS_R_SELECTOR] + r.count[GS_R_MODEL] >= r.nodes) {
            /* where the pod's volumes are, as node affinity says where it may go */
            cat = "constraints";
            extra[0] = '\0';
        }
        if (adm == GS_ADMIT_BORROW) {
            /* over its deserved share: only idle capacity would do, and there is none */
            snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
                     "; %s, and no idle capacity fits", why);
            if (strcmp(cat, "selector") != 0 && strcmp(cat, "taint") != 0)
                cat = "quota";
        }
        snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s", extra);
        unschedulable(&cy, p, queue, cat, msg, t0);
    }
    free(done);
    free(cy.leaving);
    gs_kprep_free(cy.kp);
    gs_kstate_free(cy.ks);
    update_gauges(s, c, waiting - cy.scheduled);
    /* pods this cycle did not look at (in backoff) keep their last verdict; keyed by
     * namespace/name so the merge stays linear in the pending pods */
    pthread_mutex_lock(&s->mmu);
    json_t *seen = json_object(), *last = json_object();
    char key[GS_KNAME_MAX + 70];
    size_t ri;
    json_t *r;
    json_array_foreach(cy.report, ri, r)
    {
        snprintf(key, sizeof(key), "%s/%s", json_string_value(json_object_get(r, "namespace")),
                 json_string_value(json_object_get(r, "pod")));
        json_object_set(seen, key, json_true());
    }
    json_array_foreach(s->pending_report, ri, r)
    {
        snprintf(key, sizeof(key), "%s/%s", json_string_value(json_object_get(r, "namespace")),
                 json_string_value(json_object_get(r, "pod")));
        json_object_set(last, key, r);
    }
    for (int i = 0; i < np; i++) {
        const struct gs_kube_pod *p = &sn.pods[i].p;
        if (p->node[0] || p->terminating)
            continue;
        snprintf(key, sizeof(key), "%s/%s", p->ns, p->name);
        json_t *old = json_object_get(last, key);
        if (old && !json_object_get(seen, key))
            json_array_append(cy.report, old);
    }
    json_decref(seen);
    json_decref(last);
    json_decref(s->pending_report);
    s->pending_report = cy.report;
    pthread_mutex_unlock(&s->mmu);
    free(q);
    free(gang_done);
    gs_tenancy_release(&cy.ty);
    gs_policy_objs_release(cp);
    snapshot_release(&sn);
    return 0;
}

/* ---------- tenancy objects ---------- */

static void *policy_main(void *arg)
{
    struct sched *s = arg;
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
            sleep_s(backoff);
            backoff = backoff * 2 > 30 ? 30 : backoff * 2;
            continue;
        }
        backoff = 1;
        if (rc == 0) {
            sleep_s(0.05); /* nothing changed: the watches say when */
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
static struct sched *sched_new(struct gs_kube_client *client, const struct gs_scheduler_opts *opts,
                               volatile int *stop)
{
    struct sched *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_kube_client_free(client);
        return NULL;
    }
    s->kc = client;
    s->o = *opts;
    s->st.mp = opts->mig_config;
    s->stop = stop;
    if (!s->o.max_backoff_s)
        s->o.max_backoff_s = 60;
    pthread_mutex_init(&s->st.mu, NULL);
    pthread_cond_init(&s->st.cv, NULL);
    pthread_mutex_init(&s->mmu, NULL);
    pthread_mutex_init(&s->emu, NULL);
    pthread_mutex_init(&s->pmu, NULL);
    return s;
}

static void sched_free(struct sched *s)
{
    gs_policy_objs_release(&s->po);
    json_decref(s->pending_report);
    for (int i = 0; i < s->st.nnodes; i++)
        gs_kube_node_release(&s->st.nodes[i]);
    free(s->st.nodes);
    json_decref(s->st.node_events);
    for (int i = 0; i < s->st.npods; i++)
        gs_kube_pod_release(&s->st.pods[i].p);
    free(s->st.pods);
    gs_kube_client_free(s->kc);
    pthread_mutex_destroy(&s->st.mu);
    pthread_cond_destroy(&s->st.cv);
    pthread_mutex_destroy(&s->mmu);
    pthread_mutex_destroy(&s->emu);
    pthread_mutex_destroy(&s->pmu);
    free(s);
}

int gs_scheduler_run(struct gs_kube_client *client, const struct gs_scheduler_opts *opts,
                     volatile int *stop, struct gs_error *err)
{
    struct sched *s = sched_new(client, opts, stop);
    if (!s)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    s->leader = !s->o.leader_elect;
    struct gs_httpd *http = NULL;
    if (s->o.http_port > 0) {
        struct gs_httpd_opts ho = {.name = s->o.extender ? "extender" : "scheduler",
                                   .bind = s->o.http_bind,
                                   .port = s->o.http_port};
        int rc = gs_httpd_start(&ho, http_handler, s, &http, err);
        if (rc) {
            sched_free(s);
            return gs_error_prefix(err, "HTTP server (--http-port, --http-bind)");
        }
    }
    jobq_init(&s->bindq, 65536);
    jobq_init(&s->bgq, 65536);
    pthread_t t_bind[BIND_WORKERS], t_bg;
    for (int k = 0; k < BIND_WORKERS; k++)
        pthread_create(&t_bind[k], NULL, bind_worker, s);
    pthread_create(&t_bg, NULL, bg_worker, s);
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
        bool due = ready && (work_due(s) || mono() - last_cycle >= 1.0);
        pthread_mutex_unlock(&s->st.mu);
        if (!ready || !gs_flag_get(&s->leader) || s->o.extender)
            continue;
        seen = gen;
        if (!due)
            continue;
        last_cycle = mono();
        rc = schedule_cycle(s, &engine, &engine_nodes);
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
    jobq_close(&s->bindq);
    for (int k = 0; k < BIND_WORKERS; k++)
        pthread_join(t_bind[k], NULL);
    jobq_close(&s->bgq);
    pthread_join(t_bg, NULL);
    jobq_release(&s->bindq);
    jobq_release(&s->bgq);
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
    struct sched *s = sched_new(client, opts, &stop);
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
        rc = upsert_node(&s->st, &in_nodes.lnodes[i]);
    for (int i = 0; i < in_nodes.nl; i++)
        gs_kube_node_release(&in_nodes.lnodes[i]);
    for (int i = 0; !rc && i < in_pods.npl; i++)
        rc = upsert_pod(&s->st, &in_pods.lpods[i]);
    for (int i = 0; i < in_pods.npl; i++)
        gs_kube_pod_release(&in_pods.lpods[i]);
    struct gs_engine *engine = NULL;
    int engine_nodes = 0;
    if (!rc && (rc = schedule_cycle(s, &engine, &engine_nodes)))
        gs_error_set(err, rc, "scheduling cycle: %s", gs_error_name(rc));
    if (!rc)
        *out = json_incref(s->pending_report ? s->pending_report : json_array());
    gs_engine_free(engine);
    free(in_nodes.lnodes);
    free(in_pods.lpods);
    sched_free(s);
    return rc;
}
