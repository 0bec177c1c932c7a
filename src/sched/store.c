/* store.c - the scheduler's feed of Nodes and Pods (sched/store.h): two kube/cache.h caches
 * whose per-kind callbacks decode the objects (formats/kubeobj.c), carry what the scheduler
 * knows of a pod over its updates, and say once per change of a Node why its GPUs are
 * unusable (through sched/cache.c). The binder, the extender and the scheduling cycle change
 * the pods' scheduler state through this API; every cycle copies the store into a snapshot
 * (sched/snapshot.c). */
#include "store.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/log.h"
#include "../kube/cache.h"
#include "cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GONE_MAX    1024 /* UIDs of pods the watch saw deleted lately */
#define EVICTED_MAX 1024 /* victims we deleted, until the watch shows them gone */
#define EVICTED_S   120
/* After an event that may free room (a pod gone, a node new), a pod that waits tries again
 * within this long of its last try, whatever its backoff: kube-scheduler moves its unschedulable
 * pods on such events, its backoff at most podMaxBackoffSeconds (10). */
#define EVENT_BACKOFF_S 10.0

struct gs_store {
    struct gs_kcache *nodes, *pods;
    const struct gs_migparted *mp;
    double max_backoff_s;
    /* under the pods cache's lock: */
    uint64_t seq;
    char gone[GONE_MAX][64];
    int ngone, gone_next;
    char evicted[EVICTED_MAX][64];
    double evicted_at[EVICTED_MAX];
    int nevicted;
    uint64_t nevictions;
    /* under the nodes cache's lock: Events for the next cycle to post */
    json_t *node_events;
    /* the change counter, and when an event last may have freed room (monotonic s) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen;
    double moved_at;
    /* under mu: the arrays of a released copy, for the next (gs__store_recycle) */
    struct gs_kube_node *spare_nodes;
    struct gs_store_pod *spare_pods;
    int spare_ncap, spare_pcap;
};

static void note_moved(struct gs_store *st)
{
    pthread_mutex_lock(&st->mu);
    st->moved_at = gs_clock_mono();
    pthread_mutex_unlock(&st->mu);
}

static double moved_at(struct gs_store *st)
{
    pthread_mutex_lock(&st->mu);
    double t = st->moved_at;
    pthread_mutex_unlock(&st->mu);
    return t;
}

/* When a pod in backoff is due: its next try, or sooner when an event since its last try may
 * have freed room (EVENT_BACKOFF_S). */
static double due_at(double next_try, double backoff, double moved)
{
    double last = next_try - backoff;
    if (backoff > EVENT_BACKOFF_S && moved > last && last + EVENT_BACKOFF_S < next_try)
        return last + EVENT_BACKOFF_S;
    return next_try;
}

/* ---------- the two kinds ---------- */

GS_KCACHE_DECODER(node_decode, gs_kube_node_read)

GS_KCACHE_RELEASER(node_release, gs_kube_node_release)

static void node_key(const void *rec, char *out, size_t n)
{
    snprintf(out, n, "%s", ((const struct gs_kube_node *)rec)->name);
}

/* Why a node offers no GPUs (or no new pods), said once per change of the Node object: the
 * store sees each version once, a snapshot sees it every cycle. A complete list reports every
 * node as new. */
static void node_merge(void *user, void *rec, const void *prev, bool listed)
{
    struct gs_store *st = user;
    const struct gs_kube_node *n = rec, *old = listed ? NULL : prev;
    if (old && strcmp(old->rv, n->rv) == 0)
        return;
    if (!prev)
        note_moved(st);
    struct gs_cluster one;
    gs_cluster_init(&one);
    char note[256] = "", was[256] = "";
    gs_cache_add_node(&one, n, st->mp, note, sizeof(note));
    gs_cluster_release(&one);
    if (old) {
        gs_cluster_init(&one);
        gs_cache_add_node(&one, old, st->mp, was, sizeof(was));
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

/* A pod with a name whose request cannot be read (gpusched.io/gpu-milli of 1000, a negative
 * count, two kinds of GPU device...) is kept, asking no GPU, so that the cycle tells it why
 * (FailedScheduling, PodScheduled False) instead of leaving it Pending without a word; what
 * its object holds beyond the request is read as for any pod. */
static int pod_keep_unreadable(const json_t *obj, struct gs_kube_pod *p, struct gs_error *err)
{
    char who[GS_KNAME_MAX * 2 + 16];
    snprintf(who, sizeof(who), "pod %s/%s: ", p->ns, p->name);
    const char *why = strncmp(err->msg, who, strlen(who)) == 0 ? err->msg + strlen(who) : err->msg;
    GS_WARN("informer", "%s%s: it is not scheduled", who, why);
    snprintf(p->refused, sizeof(p->refused), "%s", why);
    p->unreadable = true;
    p->req.kind = GS_REQ_NONE;
    p->req.gpus = 0;
    p->req.milli = 0;
    p->req.mig[0] = '\0';
    gs_kube_pod_read_constraints(obj, p);
    return 0;
}

int gs__store_read_pod(const json_t *obj, struct gs_kube_pod *p, struct gs_error *err)
{
    int rc = gs_kube_pod_read(obj, p, err);
    if (rc == GS_EINVAL && p->name[0] && p->uid[0] && json_is_object(json_object_get(obj, "spec")))
        return pod_keep_unreadable(obj, p, err);
    if (rc == 0)
        gs_kube_pod_read_constraints(obj, p);
    return rc;
}

static int pod_decode(const json_t *obj, void *rec, struct gs_error *err)
{
    return gs__store_read_pod(obj, &((struct gs_store_pod *)rec)->p, err);
}

static void pod_release(void *rec)
{
    gs_kube_pod_release(&((struct gs_store_pod *)rec)->p);
}

static void pod_key(const void *rec, char *out, size_t n)
{
    const struct gs_kube_pod *p = &((const struct gs_store_pod *)rec)->p;
    snprintf(out, n, "%s/%s", p->ns, p->name);
}

/* The same pod (same UID) keeps its order, backoff and nomination, and a bind of ours the
 * update does not show yet (one whose last scheduling gate went is due at once); a new pod
 * under an old name starts afresh. A complete list keeps
 * only the order and backoff of the pods that stay. */
static void pod_merge(void *user, void *rec, const void *prev, bool listed)
{
    struct gs_store *st = user;
    struct gs_store_pod *e = rec;
    const struct gs_store_pod *old = prev;
    bool same = old && strcmp(old->p.uid, e->p.uid) == 0;
    if (listed) {
        e->seq = ++st->seq;
        if (same) {
            e->next_try = old->next_try;
            e->backoff = old->backoff;
            e->seq = old->seq;
        }
        return;
    }
    if (!same) {
        e->seq = ++st->seq;
        return;
    }
    struct gs_kube_pod p = e->p;
    *e = *old;
    e->p = p;
    if (old->p.ngates > 0 && p.ngates == 0) {
        /* its last scheduling gate is gone: due in the next cycle, as kube-scheduler moves
         * an ungated pod to its active queue */
        e->next_try = 0;
        e->backoff = 0;
    }
    if (old->assumed && !p.node[0]) {
        /* an older view of a pod we just bound: keep what we bound it to */
        memcpy(e->p.node, old->p.node, sizeof(e->p.node));
        memcpy(e->p.devices, old->p.devices, sizeof(e->p.devices));
        return;
    }
    e->assumed = false;
}

static void pod_removed(void *user, const void *rec)
{
    struct gs_store *st = user;
    const struct gs_store_pod *e = rec;
    if (!e->p.uid[0])
        return;
    note_moved(st);
    memcpy(st->gone[st->gone_next], e->p.uid, sizeof(st->gone[0]));
    st->gone_next = (st->gone_next + 1) % GONE_MAX;
    if (st->ngone < GONE_MAX)
        st->ngone++;
}

/* The two kinds, one row each. */
static const struct gs_kcache_kind nodes_kind = {
    "/api/v1/nodes",         "nodes",         sizeof(struct gs_kube_node), .decode = node_decode,
    .release = node_release, .key = node_key, .merge = node_merge};
static const struct gs_kcache_kind pods_kind = {
    "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed",
    "pods",
    sizeof(struct gs_store_pod),
    .decode = pod_decode,
    .release = pod_release,
    .key = pod_key,
    .merge = pod_merge,
    .removed = pod_removed};

/* ---------- the store ---------- */

static void on_change(void *user)
{
    gs__store_changed(user);
}

int gs__store_new(struct gs_kube_client *kc, enum gs_store_feed how, const struct gs_migparted *mp,
                  double max_backoff_s, struct gs_store **out, struct gs_error *err)
{
    *out = NULL;
    struct gs_store *st = calloc(1, sizeof(*st));
    if (!st)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    st->mp = mp;
    st->max_backoff_s = max_backoff_s;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    int rc;
    if (how == GS_STORE_LIST) {
        rc = gs_kcache_list_once(kc, &nodes_kind, st, &st->nodes, err);
        if (!rc)
            rc = gs_kcache_list_once(kc, &pods_kind, st, &st->pods, err);
    } else {
        struct gs_kube_client *k = how == GS_STORE_WATCH ? kc : NULL;
        rc = gs_kcache_start(k, &nodes_kind, st, on_change, &st->nodes, err);
        if (!rc)
            rc = gs_kcache_start(k, &pods_kind, st, on_change, &st->pods, err);
    }
    if (rc) {
        gs__store_free(st);
        return rc;
    }
    *out = st;
    return 0;
}

void gs__store_free(struct gs_store *st)
{
    if (!st)
        return;
    gs_kcache_free(st->nodes);
    gs_kcache_free(st->pods);
    json_decref(st->node_events);
    free(st->spare_nodes);
    free(st->spare_pods);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    free(st);
}

uint64_t gs__store_gen(struct gs_store *st)
{
    pthread_mutex_lock(&st->mu);
    uint64_t g = st->gen;
    pthread_mutex_unlock(&st->mu);
    return g;
}

void gs__store_changed(struct gs_store *st)
{
    pthread_mutex_lock(&st->mu);
    st->gen++;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

uint64_t gs__store_wait(struct gs_store *st, uint64_t seen, double timeout_s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double end = (double)ts.tv_nsec / 1e9 + timeout_s;
    ts.tv_sec += (time_t)end;
    ts.tv_nsec = (long)((end - (double)(time_t)end) * 1e9);
    pthread_mutex_lock(&st->mu);
    if (st->gen == seen)
        pthread_cond_timedwait(&st->cv, &st->mu, &ts);
    uint64_t g = st->gen;
    pthread_mutex_unlock(&st->mu);
    return g;
}

bool gs__store_synced(struct gs_store *st)
{
    return gs_kcache_synced(st->nodes) && gs_kcache_synced(st->pods);
}

bool gs__store_pods_synced(struct gs_store *st)
{
    return gs_kcache_synced(st->pods);
}

const struct gs_migparted *gs__store_migparted(const struct gs_store *st)
{
    return st->mp;
}

/* An array of at least n entries of size bytes: the spare one when large enough (taken), else
 * a new one with some room to grow (zeroed). *cap: its entries. */
static void *take_array(struct gs_store *st, void **spare, int *spare_cap, int n, size_t size,
                        int *cap)
{
    pthread_mutex_lock(&st->mu);
    void *v = NULL;
    if (*spare && *spare_cap >= n) {
        v = *spare;
        *cap = *spare_cap;
        *spare = NULL;
        *spare_cap = 0;
    }
    pthread_mutex_unlock(&st->mu);
    if (v)
        return v;
    *cap = n + n / 8 + 16;
    return calloc((size_t)*cap, size);
}

/* Keep v (cap entries) as the spare array if it is larger than the one kept; free the other. */
static void keep_array(struct gs_store *st, void **spare, int *spare_cap, void *v, int cap)
{
    pthread_mutex_lock(&st->mu);
    if (v && cap > *spare_cap) {
        void *old = *spare;
        *spare = v;
        *spare_cap = cap;
        v = old;
    }
    pthread_mutex_unlock(&st->mu);
    free(v);
}

void gs__store_recycle(struct gs_store *st, struct gs_kube_node *nodes, int ncap,
                       struct gs_store_pod *pods, int pcap)
{
    keep_array(st, (void **)&st->spare_nodes, &st->spare_ncap, nodes, ncap);
    keep_array(st, (void **)&st->spare_pods, &st->spare_pcap, pods, pcap);
}

int gs__store_copy(struct gs_store *st, struct gs_kube_node **nodes, int *nn, int *ncap,
                   struct gs_store_pod **pods, int *np, int *pcap)
{
    *nodes = NULL;
    *pods = NULL;
    *nn = *np = *ncap = *pcap = 0;
    gs_kcache_lock(st->nodes);
    int n = gs_kcache_count(st->nodes), vcap = 0;
    struct gs_kube_node *v =
        take_array(st, (void **)&st->spare_nodes, &st->spare_ncap, n, sizeof(*v), &vcap);
    for (int i = 0; v && i < n; i++)
        if (gs_kube_node_copy(&v[i], gs_kcache_at(st->nodes, i))) {
            for (int k = 0; k < i; k++)
                gs_kube_node_release(&v[k]);
            free(v);
            v = NULL;
        }
    gs_kcache_unlock(st->nodes);
    if (!v)
        return GS_ENOMEM;
    double moved = moved_at(st);
    gs_kcache_lock(st->pods);
    int m = gs_kcache_count(st->pods), mcap = 0;
    struct gs_store_pod *p =
        take_array(st, (void **)&st->spare_pods, &st->spare_pcap, m, sizeof(*p), &mcap);
    for (int i = 0; p && i < m; i++) {
        p[i] = *(const struct gs_store_pod *)gs_kcache_at(st->pods, i);
        p[i].next_try = due_at(p[i].next_try, p[i].backoff, moved);
        gs_kube_pod_ref(&p[i].p);
    }
    gs_kcache_unlock(st->pods);
    if (!p) {
        for (int k = 0; k < n; k++)
            gs_kube_node_release(&v[k]);
        free(v);
        return GS_ENOMEM;
    }
    *nodes = v;
    *nn = n;
    *ncap = vcap;
    *pods = p;
    *np = m;
    *pcap = mcap;
    return 0;
}

int gs__store_due_count(struct gs_store *st, const char *scheduler, int most)
{
    double t = gs_clock_mono(), moved = moved_at(st);
    int due = 0;
    gs_kcache_lock(st->pods);
    for (int i = 0, n = gs_kcache_count(st->pods); i < n && due < most; i++) {
        const struct gs_store_pod *e = gs_kcache_at(st->pods, i);
        due += !e->p.node[0] && !e->p.terminating && e->p.ngates == 0 &&
               due_at(e->next_try, e->backoff, moved) <= t &&
               strcmp(e->p.scheduler, scheduler) == 0;
    }
    gs_kcache_unlock(st->pods);
    return due;
}

bool gs__store_work_due(struct gs_store *st, const char *scheduler)
{
    return gs__store_due_count(st, scheduler, 1) > 0;
}

json_t *gs__store_take_node_events(struct gs_store *st)
{
    gs_kcache_lock(st->nodes);
    json_t *ev = st->node_events;
    st->node_events = NULL;
    gs_kcache_unlock(st->nodes);
    return ev;
}

bool gs__store_pod_gone(struct gs_store *st, const char *uid)
{
    bool gone = false;
    gs_kcache_lock(st->pods);
    for (int k = 0; k < st->ngone && !gone; k++)
        gone = strcmp(st->gone[k], uid) == 0;
    for (int k = 0; k < st->nevicted && !gone; k++)
        gone = strcmp(st->evicted[k], uid) == 0;
    gs_kcache_unlock(st->pods);
    return gone;
}

/* The pod so named, with the pods' lock held (the caller unlocks), or NULL. */
static struct gs_store_pod *find_pod(struct gs_store *st, const char *ns, const char *name)
{
    char key[GS_KCACHE_KEY_MAX];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    gs_kcache_lock(st->pods);
    return gs_kcache_find(st->pods, key);
}

static void set_backoff(struct gs_store *st, struct gs_store_pod *e)
{
    double b = e->backoff ? e->backoff * 2 : 1;
    if (b > st->max_backoff_s)
        b = st->max_backoff_s;
    e->backoff = b;
    e->next_try = gs_clock_mono() + b;
}

bool gs__store_assume(struct gs_store *st, const char *ns, const char *name, const char *uid,
                      const char *node, const char *devices, bool mark)
{
    struct gs_store_pod *e = find_pod(st, ns, name);
    bool ok = e && (!uid || strcmp(e->p.uid, uid) == 0) && !e->p.node[0];
    if (ok) {
        snprintf(e->p.node, sizeof(e->p.node), "%s", node);
        snprintf(e->p.devices, sizeof(e->p.devices), "%s", devices);
        if (mark) {
            e->assumed = true;
            e->nominated[0] = '\0';
        }
    }
    gs_kcache_unlock(st->pods);
    return ok;
}

void gs__store_unassume(struct gs_store *st, const char *ns, const char *name)
{
    struct gs_store_pod *e = find_pod(st, ns, name);
    if (e && e->assumed) {
        e->assumed = false;
        e->p.node[0] = '\0';
    }
    gs_kcache_unlock(st->pods);
}

void gs__store_give_back(struct gs_store *st, const char *ns, const char *name, const char *uid)
{
    struct gs_store_pod *e = find_pod(st, ns, name);
    bool changed = e && e->assumed && strcmp(e->p.uid, uid) == 0;
    if (changed) {
        e->assumed = false;
        e->p.node[0] = '\0';
        e->p.devices[0] = '\0';
        set_backoff(st, e);
    }
    gs_kcache_unlock(st->pods);
    if (changed)
        gs__store_changed(st);
}

void gs__store_backoff(struct gs_store *st, const char *ns, const char *name, double retry_s)
{
    struct gs_store_pod *e = find_pod(st, ns, name);
    if (e && retry_s > 0)
        e->next_try = gs_clock_mono() + retry_s;
    else if (e)
        set_backoff(st, e);
    gs_kcache_unlock(st->pods);
}

bool gs__store_nominate(struct gs_store *st, const char *ns, const char *name, const char *node,
                        bool refresh)
{
    struct gs_store_pod *e = find_pod(st, ns, name);
    bool again = e && strcmp(e->nominated, node) == 0;
    if (e) {
        snprintf(e->nominated, sizeof(e->nominated), "%s", node);
        if (!again || refresh)
            e->nominated_at = gs_clock_mono();
        e->next_try = gs_clock_mono() + 0.25;
    }
    gs_kcache_unlock(st->pods);
    return again;
}

void gs__store_adopt(struct gs_store *st, const char *ns, const char *name, const char *node,
                     double t)
{
    struct gs_store_pod *e = find_pod(st, ns, name);
    if (e && !e->nominated[0] && !e->adopted) {
        snprintf(e->nominated, sizeof(e->nominated), "%s", node);
        e->nominated_at = t;
    }
    if (e)
        e->adopted = true;
    gs_kcache_unlock(st->pods);
}

void gs__store_kick(struct gs_store *st, bool dra_only)
{
    gs_kcache_lock(st->pods);
    for (int i = 0, n = gs_kcache_count(st->pods); i < n; i++) {
        struct gs_store_pod *e = gs_kcache_at(st->pods, i);
        if (!e->p.node[0] && (!dra_only || gs_kube_pod_dra(&e->p)))
            e->next_try = 0;
    }
    gs_kcache_unlock(st->pods);
    gs__store_changed(st);
}

void gs__store_evicted(struct gs_store *st, const char *uid)
{
    gs_kcache_lock(st->pods);
    int slot = st->nevicted < EVICTED_MAX ? st->nevicted++ : (int)(st->nevictions % EVICTED_MAX);
    st->nevictions++;
    snprintf(st->evicted[slot], sizeof(st->evicted[slot]), "%s", uid);
    st->evicted_at[slot] = gs_clock_mono();
    gs_kcache_unlock(st->pods);
}

void gs__store_evicted_prune(struct gs_store *st)
{
    gs_kcache_lock(st->pods);
    for (int k = 0; k < st->nevicted; k++)
        if (gs_clock_mono() - st->evicted_at[k] > EVICTED_S) {
            st->evicted_at[k] = st->evicted_at[st->nevicted - 1];
            memcpy(st->evicted[k], st->evicted[--st->nevicted], sizeof(st->evicted[k]));
            k--;
        }
    gs_kcache_unlock(st->pods);
}

bool gs__store_is_evicted(struct gs_store *st, const char *uid)
{
    bool found = false;
    gs_kcache_lock(st->pods);
    for (int k = 0; k < st->nevicted && !found; k++)
        found = strcmp(st->evicted[k], uid) == 0;
    gs_kcache_unlock(st->pods);
    return found;
}

int gs__store_upsert_node(struct gs_store *st, struct gs_kube_node *n)
{
    struct gs_kube_node rec = *n;
    memset(n, 0, sizeof(*n));
    return gs_kcache_put(st->nodes, &rec);
}

int gs__store_upsert_pod(struct gs_store *st, struct gs_kube_pod *p)
{
    struct gs_store_pod rec;
    memset(&rec, 0, sizeof(rec));
    rec.p = *p;
    p->k = NULL;
    return gs_kcache_put(st->pods, &rec);
}

int gs__store_load(struct gs_store *st, struct gs_kube_node *nodes, int nn,
                   struct gs_kube_pod *pods, int np)
{
    struct gs_store_pod *v = calloc(np > 0 ? (size_t)np : 1, sizeof(*v));
    if (!v)
        return GS_ENOMEM;
    for (int i = 0; i < np; i++) {
        v[i].p = pods[i];
        pods[i].k = NULL;
    }
    int rc = gs_kcache_replace(st->nodes, nodes, nn);
    for (int i = 0; i < nn; i++)
        memset(&nodes[i], 0, sizeof(nodes[i]));
    int rp = gs_kcache_replace(st->pods, v, np);
    free(v);
    return rc ? rc : rp;
}
