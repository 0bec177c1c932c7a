/* tenancy.c - GPUQueues, ResourceQuotas, PodGroups (the CRD's and the Workload API's) and PDBs
 * for a scheduling cycle, and the feed (a kube/cache.h cache per kind) that keeps them current
 * with MigManagers, PersistentVolumeClaims and PersistentVolumes (see tenancy.h). */
#include "tenancy.h"

#include "../base/flag.h"
#include "../base/buf.h"
#include "../base/error.h"
#include "../base/log.h"
#include "../kube/cache.h"
#include "../base/hash.h"
#include "../formats/workloadobj.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A bad object is seen on every relist and every cycle: its warning is logged once, and again
 * only after WARN_AGAIN_S (or when it changes, since the text names what is wrong). */
#define WARN_SLOTS   128
#define WARN_AGAIN_S 600

static void warn_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn_once(const char *fmt, ...)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t seen[WARN_SLOTS];
    static time_t at[WARN_SLOTS];
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    uint64_t h = gs_hash_str(msg);
    time_t now = time(NULL);
    pthread_mutex_lock(&mu);
    int slot = (int)(h % WARN_SLOTS);
    bool quiet = seen[slot] == h && now - at[slot] < WARN_AGAIN_S;
    if (!quiet) {
        seen[slot] = h;
        at[slot] = now;
    }
    pthread_mutex_unlock(&mu);
    if (!quiet)
        GS_WARN("tenancy", "%s", msg);
}

GS_KCACHE_DECODER(rd_queue, gs_kube_queue_read)
GS_KCACHE_DECODER(rd_rquota, gs_kube_rquota_read)
GS_KCACHE_DECODER(rd_group, gs_kube_podgroup_read)
GS_KCACHE_DECODER(rd_pdb, gs_kube_pdb_read)
GS_KCACHE_DECODER(rd_migmgr, gs_kube_migmgr_read)
GS_KCACHE_DECODER(rd_csid, gs_kube_csidriver_read)
GS_KCACHE_DECODER(rd_csic, gs_kube_csicap_read)
GS_KCACHE_DECODER(rd_csin, gs_kube_csinode_read)
GS_KCACHE_DECODER(rd_wgroup, gs_kube_wpodgroup_read)
GS_KCACHE_DECODER(rd_topo, gs_kube_topology_read)
GS_KCACHE_DECODER(rd_flavor, gs_kube_flavor_read)

/* A claim, volume or class whose spec gpusched cannot read is kept, refused (formats/volobj.h),
 * so that a pod using it waits saying why rather than finding it missing. */
#define KEEP_REFUSED(name, fn, type)                                                               \
    static int name(const json_t *obj, void *rec, struct gs_error *err)                            \
    {                                                                                              \
        int rc = fn(obj, rec, err);                                                                \
        if (rc && ((type *)rec)->refused[0]) {                                                     \
            warn_once("not usable: %s; pods using it wait", err->msg);                             \
            return 0;                                                                              \
        }                                                                                          \
        return rc;                                                                                 \
    }
KEEP_REFUSED(rd_pvc, gs_kube_pvc_read, struct gs_kube_pvc)
KEEP_REFUSED(rd_pv, gs_kube_pv_read, struct gs_kube_pv)
KEEP_REFUSED(rd_sc, gs_kube_sc_read, struct gs_kube_sc)

static void bad_object(void *user, const struct gs_error *err)
{
    warn_once("ignored: %s", err->msg);
}

/* An optional kind that cannot be listed (forbidden by an older RBAC role, say) is as good as
 * absent: it must not stop the others. A 404 (the CRD is not installed) makes any kind absent
 * (absent_retry_s). */
static int optional_failed(void *user, int rc, const struct gs_error *err)
{
    const struct gs_kcache_kind *k = user;
    warn_once("listing %s: %s; pods' volumes are checked without them", k->what, err->msg);
    return 0;
}

/* The Workload API (scheduling.k8s.io/v1beta1) is served only where a cluster turns it on:
 * where it is not (404) or cannot be listed (an older RBAC role), no pod names one of its
 * PodGroups (the API server drops spec.schedulingGroup without it), so it is simply absent. */
static int workload_failed(void *user, int rc, const struct gs_error *err)
{
    warn_once("listing PodGroups (scheduling.k8s.io/v1beta1): %s; gangs of the Workload API are "
              "not read",
              err->msg);
    return 0;
}

/* Kueue's Topologies and ResourceFlavors are read where Kueue is installed and gpusched may
 * list them: a list that fails (an older RBAC role) leaves them absent. */
static int kueue_failed(void *user, int rc, const struct gs_error *err)
{
    const struct gs_kcache_kind *k = user;
    warn_once("listing %s: %s; topology levels come from --topology-levels alone", k->what,
              err->msg);
    return 0;
}

#define KIND(p, w, type, rd, opt)                                                                  \
    {                                                                                              \
        .path = p, .what = w, .size = sizeof(type), .mode = GS_KCACHE_LISTS, .lane2 = true,        \
        .absent_retry_s = 1, .decode = rd, .bad = bad_object,                                      \
        .failed = opt == 1   ? optional_failed                                                     \
                  : opt == 2 ? workload_failed                                                     \
                  : opt == 3 ? kueue_failed                                                        \
                             : NULL                                                                \
    }

/* The kinds, and the arrays of gs_policy_objs they fill: the Workload API's PodGroups (KW)
 * follow the CRD's in groups; Kueue's v1beta1 Topologies and ResourceFlavors (KT1, KF1) stand
 * in for v1beta2's where that version is not served. */
enum {
    KQ,
    KR,
    KG,
    KB,
    KM,
    KPVC,
    KPV,
    KSC,
    KCSID,
    KCSIC,
    KCSIN,
    KT,
    KF,
    NARRAYS,
    KW = NARRAYS,
    KT1,
    KF1,
    NKINDS
};
static const struct gs_kcache_kind kinds[NKINDS] = {
    KIND("/apis/gpusched.io/v1alpha1/gpuqueues", "GPUQueues", struct gs_kube_queue, rd_queue, 0),
    KIND("/api/v1/resourcequotas", "ResourceQuotas", struct gs_kube_rquota, rd_rquota, 0),
    KIND("/apis/scheduling.x-k8s.io/v1alpha1/podgroups", "PodGroups", struct gs_kube_podgroup,
         rd_group, 0),
    KIND("/apis/policy/v1/poddisruptionbudgets", "PodDisruptionBudgets", struct gs_kube_pdb, rd_pdb,
         0),
    KIND("/apis/nvidia.com/v1alpha1/migmanagers", "MigManagers", struct gs_kube_migmgr, rd_migmgr,
         0),
    KIND("/api/v1/persistentvolumeclaims", "PersistentVolumeClaims", struct gs_kube_pvc, rd_pvc, 1),
    KIND("/api/v1/persistentvolumes", "PersistentVolumes", struct gs_kube_pv, rd_pv, 1),
    KIND("/apis/storage.k8s.io/v1/storageclasses", "StorageClasses", struct gs_kube_sc, rd_sc, 1),
    KIND("/apis/storage.k8s.io/v1/csidrivers", "CSIDrivers", struct gs_kube_csidriver, rd_csid, 1),
    KIND("/apis/storage.k8s.io/v1/csistoragecapacities", "CSIStorageCapacities",
         struct gs_kube_csicap, rd_csic, 1),
    KIND("/apis/storage.k8s.io/v1/csinodes", "CSINodes", struct gs_kube_csinode, rd_csin, 1),
    KIND("/apis/kueue.x-k8s.io/v1beta2/topologies", "Topologies (kueue.x-k8s.io/v1beta2)",
         struct gs_kube_topology, rd_topo, 3),
    KIND("/apis/kueue.x-k8s.io/v1beta2/resourceflavors", "ResourceFlavors (kueue.x-k8s.io/v1beta2)",
         struct gs_kube_flavor, rd_flavor, 3),
    KIND("/apis/scheduling.k8s.io/v1beta1/podgroups", "PodGroups (scheduling.k8s.io)",
         struct gs_kube_podgroup, rd_wgroup, 2),
    KIND("/apis/kueue.x-k8s.io/v1beta1/topologies", "Topologies (kueue.x-k8s.io/v1beta1)",
         struct gs_kube_topology, rd_topo, 3),
    KIND("/apis/kueue.x-k8s.io/v1beta1/resourceflavors", "ResourceFlavors (kueue.x-k8s.io/v1beta1)",
         struct gs_kube_flavor, rd_flavor, 3),
};
static const size_t items_off[NARRAYS] = {
    offsetof(struct gs_policy_objs, queues),        offsetof(struct gs_policy_objs, rquotas),
    offsetof(struct gs_policy_objs, groups),        offsetof(struct gs_policy_objs, pdbs),
    offsetof(struct gs_policy_objs, migmgrs),       offsetof(struct gs_policy_objs, st.pvcs),
    offsetof(struct gs_policy_objs, st.pvs),        offsetof(struct gs_policy_objs, st.classes),
    offsetof(struct gs_policy_objs, st.csidrivers), offsetof(struct gs_policy_objs, st.csicaps),
    offsetof(struct gs_policy_objs, st.csinodes),   offsetof(struct gs_policy_objs, topos),
    offsetof(struct gs_policy_objs, flavors)};
static const size_t count_off[NARRAYS] = {
    offsetof(struct gs_policy_objs, nqueues),        offsetof(struct gs_policy_objs, nrquotas),
    offsetof(struct gs_policy_objs, ngroups),        offsetof(struct gs_policy_objs, npdbs),
    offsetof(struct gs_policy_objs, nmigmgrs),       offsetof(struct gs_policy_objs, st.npvcs),
    offsetof(struct gs_policy_objs, st.npvs),        offsetof(struct gs_policy_objs, st.nclasses),
    offsetof(struct gs_policy_objs, st.ncsidrivers), offsetof(struct gs_policy_objs, st.ncsicaps),
    offsetof(struct gs_policy_objs, st.ncsinodes),   offsetof(struct gs_policy_objs, ntopos),
    offsetof(struct gs_policy_objs, nflavors)};

static void **items_of(struct gs_policy_objs *po, int k)
{
    return (void **)((char *)po + items_off[k]);
}
static int *count_of(struct gs_policy_objs *po, int k)
{
    return (int *)((char *)po + count_off[k]);
}

void gs_policy_objs_release(struct gs_policy_objs *po)
{
    for (int k = 0; k < NARRAYS; k++)
        free(*items_of(po, k));
    memset(po, 0, sizeof(*po));
}

/* Array k of to gets a copy of n records at v appended. */
static int copy_kind(struct gs_policy_objs *to, int k, const void *v, int n)
{
    if (n <= 0)
        return 0;
    size_t size = kinds[k].size, had = (size_t)*count_of(to, k);
    char *a = realloc(*items_of(to, k), size * (had + (size_t)n));
    if (!a)
        return GS_ENOMEM;
    memcpy(a + size * had, v, size * (size_t)n);
    *items_of(to, k) = a;
    *count_of(to, k) = (int)had + n;
    return 0;
}

int gs_policy_objs_copy(struct gs_policy_objs *to, const struct gs_policy_objs *from)
{
    memset(to, 0, sizeof(*to));
    to->st.volumes_unknown = from->st.volumes_unknown;
    to->st.classes_unknown = from->st.classes_unknown;
    for (int k = 0; k < NARRAYS; k++)
        if (copy_kind(to, k, *items_of((struct gs_policy_objs *)from, k),
                      *count_of((struct gs_policy_objs *)from, k))) {
            gs_policy_objs_release(to);
            return GS_ENOMEM;
        }
    return 0;
}

/* ---------- the feed: a kube/cache.h cache per kind ---------- */

struct gs_policy_feed {
    struct gs_kcache_kind kind[NKINDS]; /* kinds[], with the feed's resync_s */
    struct gs_kcache *kc[NKINDS];
    pthread_mutex_t mu;
    /* under mu: */
    uint64_t synced_gen; /* the kinds' generations at the last refresh that took them */
    struct gs_policy_objs cur;
    bool ready; /* cur holds a complete set */
};

/* The kinds' latest lists as objects; 0, 1 (no complete set yet) or GS_ENOMEM. */
static int take_lists(struct gs_policy_feed *f, struct gs_policy_objs *out)
{
    memset(out, 0, sizeof(*out));
    for (int k = 0; k < NKINDS; k++)
        if (!gs_kcache_synced(f->kc[k]))
            return 1;
    int rc = 0;
    for (int k = 0; k < NKINDS && !rc; k++) {
        /* v1beta1 only where v1beta2 is not served (both show the same objects) */
        if ((k == KT1 && !gs_kcache_absent(f->kc[KT])) ||
            (k == KF1 && !gs_kcache_absent(f->kc[KF])))
            continue;
        struct gs_kcache_items *l = gs_kcache_items_get(f->kc[k]);
        rc = l ? copy_kind(out,
                           k == KW    ? KG
                           : k == KT1 ? KT
                           : k == KF1 ? KF
                                      : k,
                           l->items, l->n)
               : 0;
        gs_kcache_items_put(l);
    }
    out->st.volumes_unknown = gs_kcache_absent(f->kc[KPVC]) || gs_kcache_absent(f->kc[KPV]);
    out->st.classes_unknown = gs_kcache_absent(f->kc[KSC]);
    if (rc)
        gs_policy_objs_release(out);
    return rc;
}

struct gs_policy_feed *gs_policy_feed_new(struct gs_kube_client *kc, bool watch, double resync_s,
                                          struct gs_error *err)
{
    struct gs_policy_feed *f = calloc(1, sizeof(*f));
    if (!f) {
        gs_error_set(err, GS_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&f->mu, NULL);
    memcpy(f->kind, kinds, sizeof(kinds));
    int rc = gs_kcache_open(kc, f->kind, NKINDS, watch, resync_s, f->kc, err);
    if (!rc && !watch && (rc = take_lists(f, &f->cur)) == 0)
        f->ready = true;
    if (rc) {
        if (watch)
            GS_ERR("tenancy", "%s", err->msg);
        gs_policy_feed_free(f);
        return NULL;
    }
    return f;
}

void gs_policy_feed_free(struct gs_policy_feed *f)
{
    if (!f)
        return;
    gs_kcache_close(f->kc, NKINDS);
    gs_policy_objs_release(&f->cur);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

uint64_t gs_policy_feed_lists(struct gs_policy_feed *f)
{
    uint64_t n = 0;
    for (int k = 0; k < NKINDS; k++)
        n += gs_kcache_lists(f->kc[k]);
    return n;
}

int gs_policy_feed_refresh(struct gs_policy_feed *f, struct gs_error *err)
{
    uint64_t gen = gs_kcache_gen_sum(f->kc, NKINDS);
    pthread_mutex_lock(&f->mu);
    bool seen = gen == f->synced_gen;
    pthread_mutex_unlock(&f->mu);
    if (seen)
        return 0;
    struct gs_policy_objs po;
    int rc = take_lists(f, &po);
    if (rc == 1)
        return 0; /* a kind not listed yet */
    if (rc)
        return gs_error_set(err, rc, "out of memory");
    pthread_mutex_lock(&f->mu);
    f->synced_gen = gen;
    bool changed = !f->ready || !gs_policy_objs_equal(&po, &f->cur);
    if (changed) {
        gs_policy_objs_release(&f->cur);
        f->cur = po;
        f->ready = true;
    } else {
        gs_policy_objs_release(&po);
    }
    pthread_mutex_unlock(&f->mu);
    return changed ? 1 : 0;
}

bool gs_policy_feed_ready(struct gs_policy_feed *f)
{
    pthread_mutex_lock(&f->mu);
    bool r = f->ready;
    pthread_mutex_unlock(&f->mu);
    return r;
}

int gs_policy_feed_copy(struct gs_policy_feed *f, struct gs_policy_objs *out)
{
    pthread_mutex_lock(&f->mu);
    int rc = gs_policy_objs_copy(out, &f->cur);
    pthread_mutex_unlock(&f->mu);
    return rc;
}
static bool same(const void *a, int na, const void *b, int nb, size_t size)
{
    return na == nb && (na == 0 || memcmp(a, b, size * (size_t)na) == 0);
}

bool gs_policy_objs_equal(const struct gs_policy_objs *a, const struct gs_policy_objs *b)
{
    return same(a->queues, a->nqueues, b->queues, b->nqueues, sizeof(*a->queues)) &&
           same(a->rquotas, a->nrquotas, b->rquotas, b->nrquotas, sizeof(*a->rquotas)) &&
           same(a->groups, a->ngroups, b->groups, b->ngroups, sizeof(*a->groups)) &&
           same(a->pdbs, a->npdbs, b->pdbs, b->npdbs, sizeof(*a->pdbs)) &&
           same(a->migmgrs, a->nmigmgrs, b->migmgrs, b->nmigmgrs, sizeof(*a->migmgrs)) &&
           same(a->st.pvcs, a->st.npvcs, b->st.pvcs, b->st.npvcs, sizeof(*a->st.pvcs)) &&
           same(a->st.pvs, a->st.npvs, b->st.pvs, b->st.npvs, sizeof(*a->st.pvs)) &&
           same(a->st.classes, a->st.nclasses, b->st.classes, b->st.nclasses,
                sizeof(*a->st.classes)) &&
           same(a->st.csidrivers, a->st.ncsidrivers, b->st.csidrivers, b->st.ncsidrivers,
                sizeof(*a->st.csidrivers)) &&
           same(a->st.csicaps, a->st.ncsicaps, b->st.csicaps, b->st.ncsicaps,
                sizeof(*a->st.csicaps)) &&
           same(a->st.csinodes, a->st.ncsinodes, b->st.csinodes, b->st.ncsinodes,
                sizeof(*a->st.csinodes)) &&
           same(a->topos, a->ntopos, b->topos, b->ntopos, sizeof(*a->topos)) &&
           same(a->flavors, a->nflavors, b->flavors, b->nflavors, sizeof(*a->flavors)) &&
           a->st.volumes_unknown == b->st.volumes_unknown &&
           a->st.classes_unknown == b->st.classes_unknown;
}

const struct gs_kube_sc *gs_storage_class_find(const struct gs_storage *st, const char *name)
{
    for (int i = 0; i < st->nclasses; i++)
        if (strcmp(st->classes[i].name, name) == 0)
            return &st->classes[i];
    return NULL;
}

const struct gs_kube_podgroup *gs_policy_group(const struct gs_policy_objs *po, int g)
{
    return g >= 0 ? &po->groups[g] : NULL;
}

int gs_policy_topologies(const struct gs_policy_objs *po, const struct gs_kube_topology **out)
{
    *out = po->topos;
    return po->ntopos;
}

int gs_policy_flavors(const struct gs_policy_objs *po, const struct gs_kube_flavor **out)
{
    *out = po->flavors;
    return po->nflavors;
}

int gs_policy_group_count(const struct gs_policy_objs *po)
{
    return po->ngroups;
}

int gs_policy_find_group(const struct gs_policy_objs *po, int api, const char *ns, const char *name)
{
    int found = -1;
    for (int k = 0; name && k < po->ngroups; k++)
        if (po->groups[k].api == api && strcmp(po->groups[k].name, name) == 0 &&
            strcmp(po->groups[k].ns, ns) == 0)
            found = k;
    return found;
}

int gs_policy_pod_group(const struct gs_policy_objs *po, const struct gs_kube_pod *p)
{
    return p->group[0] ? gs_policy_find_group(po, GS_PG_WORKLOAD, p->ns, p->group) : -1;
}

int gs_policy_group_refusal(const struct gs_policy_objs *po, const struct gs_kube_pod *p, char *msg,
                            size_t n)
{
    if (!p->group[0])
        return 0;
    int k = gs_policy_pod_group(po, p);
    if (k < 0) {
        snprintf(msg, n,
                 "gang: PodGroup %s/%s (spec.schedulingGroup.podGroupName) does not exist; "
                 "waiting for it to appear",
                 p->ns, p->group);
        return 1;
    }
    const struct gs_kube_podgroup *g = &po->groups[k];
    if (g->unsupported[0]) {
        snprintf(msg, n, "gang: PodGroup %s/%s sets %s, which gpusched does not model", p->ns,
                 p->group, g->unsupported);
        return 2;
    }
    if (p->priority != g->priority) {
        /* kube-scheduler's words (validatePodGroup) */
        snprintf(msg, n,
                 "gang: PodGroup %s/%s: all pods in a single pod group should have the same "
                 "priority as the pod group's priority, got %d and %d",
                 p->ns, p->group, (int)p->priority, (int)g->priority);
        return 2;
    }
    return 0;
}

const char *gs_policy_mig_for(const struct gs_policy_objs *po, const struct gs_kube_pod *p)
{
    if (p->req.kind != GS_REQ_GPU || p->req.gpus != 1)
        return NULL;
    for (int m = 0; m < po->nmigmgrs; m++)
        for (int c = 0; c < po->migmgrs[m].nclients; c++) {
            const struct gs_kube_migclient *x = &po->migmgrs[m].clients[c];
            if ((!x->ns[0] || strcmp(x->ns, p->ns) == 0) &&
                gs_kube_selector_matches(x->sel, x->nsel, p))
                return x->mig;
        }
    return NULL;
}

void gs_tenancy_release(struct gs_tenancy *ty)
{
    gs_tenants_release(&ty->t);
    free(ty->pod_queue);
    free(ty->pod_gang);
    free(ty->pod_run);
    free(ty->run);
    free(ty->run_pod);
    free(ty->pdb_allowed);
    memset(ty, 0, sizeof(*ty));
}

struct gs_tenants *gs_tenancy_tenants(struct gs_tenancy *ty)
{
    return &ty->t;
}

int gs_tenancy_pod_queue(const struct gs_tenancy *ty, int i)
{
    return ty->pod_queue[i];
}

int gs_tenancy_pod_gang(const struct gs_tenancy *ty, int i)
{
    return ty->pod_gang[i];
}

int gs_tenancy_run_pod(const struct gs_tenancy *ty, int v)
{
    return ty->run_pod[v];
}

static void set_all(struct gs_tenants *t, struct gs_qvec *v, const struct gs_tobj_res *r, int n,
                    const char *who)
{
    for (int i = 0; i < n; i++) {
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_tenants_set(t, v, r[i].name, r[i].qty, &err);
        /* a ResourceQuota holds all kinds of resources (pods, services...): only those
         * gpusched accounts matter; a GPUQueue names nothing else */
        if (rc && (rc != GS_ENOTFOUND || strncmp(who, "GPUQueue", 8) == 0))
            warn_once("%s: %s%s", who, err.msg,
                      rc == GS_ENOTFOUND ? " (expected nvidia.com/gpu, nvidia.com/mig-<profile>, "
                                           "gpusched.io/gpu-units, cpu or memory); ignored"
                                         : "; ignored");
    }
}

static int pod_queue(const struct gs_tenants *t, const struct gs_policy_objs *po,
                     const struct gs_kube_pod *p)
{
    const char *l = gs_kube_pod_label(p, GS_QUEUE_LABEL);
    if (l)
        return gs_tenants_find(t, l);
    for (int i = 0; i < po->nqueues; i++)
        for (int k = 0; k < po->queues[i].nns; k++)
            if (strcmp(po->queues[i].ns[k], p->ns) == 0)
                return gs_tenants_find(t, po->queues[i].name);
    int q = gs_tenants_find(t, p->ns);
    return q >= 0 ? q : GS_QUEUE_NONE;
}

int gs_tenancy_build(struct gs_tenancy *ty, const struct gs_policy_objs *po,
                     const struct gs_cluster *c, const struct gs_kube_pod *pods, size_t stride,
                     int np, const struct gs_alloc *alloc, const int8_t *placed)
{
    memset(ty, 0, sizeof(*ty));
    gs_tenants_init(&ty->t);
    struct gs_tenants *t = &ty->t;
    /* queues, parents first; a queue whose parent never appears is left out */
    bool *added = calloc((size_t)po->nqueues + 1, 1);
    if (!added)
        return GS_ENOMEM;
    for (bool progress = true; progress;) {
        progress = false;
        for (int i = 0; i < po->nqueues; i++) {
            const struct gs_kube_queue *k = &po->queues[i];
            if (added[i] || (k->parent[0] && gs_tenants_find(t, k->parent) < 0))
                continue;
            struct gs_error err;
            gs_error_init(&err);
            int q = gs_tenants_add_queue(t, k->name, k->parent, k->weight, k->priority, &err);
            added[i] = true;
            progress = true;
            if (q < 0) {
                warn_once("GPUQueue %s: %s", k->name, err.msg);
                continue;
            }
            char who[GS_NAME_MAX + 16];
            snprintf(who, sizeof(who), "GPUQueue %s", k->name);
            set_all(t, &t->q[q].deserved, k->deserved, k->ndeserved, who);
            set_all(t, &t->q[q].limit, k->limit, k->nlimit, who);
        }
    }
    for (int i = 0; i < po->nqueues; i++)
        if (!added[i])
            warn_once("GPUQueue %s: parent '%s' does not exist (or is in a cycle); "
                      "the queue is ignored",
                      po->queues[i].name, po->queues[i].parent);
    free(added);
    for (int i = 0; i < po->nrquotas; i++) {
        const struct gs_kube_rquota *r = &po->rquotas[i];
        int k = gs_tenants_add_nsquota(t, r->ns, r->name);
        if (k < 0)
            return GS_ENOMEM;
        char who[GS_NAME_MAX + 80];
        snprintf(who, sizeof(who), "ResourceQuota %s/%s", r->ns, r->name);
        set_all(t, &t->ns[k].hard, r->hard, r->nhard, who);
    }
    /* capacity */
    struct gs_cluster_totals tot;
    gs_cluster_totals(c, &tot);
    t->cap.v[GS_QR_UNITS] = (int64_t)(tot.units_cap * 1000);
    t->cap.v[GS_QR_GPU] = tot.gpus;
    for (int n = 0; n < c->nnodes; n++) {
        t->cap.v[GS_QR_CPU] += c->nodes[n].cpu_cap;
        t->cap.v[GS_QR_MEM] += c->nodes[n].mem_cap;
    }
    size_t an = np > 0 ? (size_t)np : 1;
    ty->pod_queue = malloc(sizeof(int32_t) * an);
    ty->pod_gang = malloc(sizeof(int32_t) * an);
    ty->pod_run = malloc(sizeof(int32_t) * an);
    ty->run = malloc(sizeof(*ty->run) * an);
    ty->run_pod = malloc(sizeof(*ty->run_pod) * an);
    ty->npdb = po->npdbs;
    ty->pdb_allowed = calloc((size_t)po->npdbs + 1, sizeof(int32_t));
    int32_t *healthy = calloc((size_t)po->npdbs + 1, sizeof(int32_t) * 2);
    if (!ty->pod_queue || !ty->pod_gang || !ty->pod_run || !ty->run || !ty->run_pod ||
        !ty->pdb_allowed || !healthy) {
        free(healthy);
        return GS_ENOMEM;
    }
    int32_t *expected = healthy + po->npdbs + 1;
    ty->ngangs = po->ngroups;
    for (int i = 0; i < np; i++) {
        const struct gs_kube_pod *p = (const void *)((const char *)pods + stride * (size_t)i);
        ty->pod_queue[i] = pod_queue(t, po, p);
        ty->pod_gang[i] = -1;
        ty->pod_run[i] = -1;
        const char *g = gs_kube_pod_label(p, GS_POD_GROUP_LABEL);
        for (int k = 0; g && k < po->ngroups; k++)
            if (po->groups[k].api == GS_PG_CRD && strcmp(po->groups[k].name, g) == 0 &&
                strcmp(po->groups[k].ns, p->ns) == 0)
                ty->pod_gang[i] = k;
        /* spec.schedulingGroup, as kube-scheduler reads it, over the label; a basic group's
         * pods go one by one */
        int wg = gs_policy_pod_group(po, p);
        if (p->group[0])
            ty->pod_gang[i] = wg >= 0 && !po->groups[wg].basic ? wg : -1;
        if (!p->node[0])
            continue;
        struct gs_qvec d;
        gs_tenants_demand(t, &p->req, &d);
        gs_tenants_charge(t, ty->pod_queue[i], p->ns, &d, +1);
        int pdb = -1;
        for (int k = 0; k < po->npdbs && !p->terminating; k++)
            if (gs_kube_pdb_matches(&po->pdbs[k], p)) {
                expected[k]++;
                healthy[k] += strcmp(p->phase, "Running") == 0;
                if (pdb < 0)
                    pdb = k;
            }
        if (!placed[i] || p->terminating)
            continue;
        struct gs_running *r = &ty->run[ty->nrun];
        memset(r, 0, sizeof(*r));
        r->node = alloc[i].node;
        r->req = p->req;
        r->alloc = alloc[i];
        r->queue = ty->pod_queue[i];
        r->priority = p->priority;
        r->start_s = p->start_s;
        /* a Workload API gang is preempted whole only with disruptionMode all */
        r->gang = wg >= 0 && !po->groups[wg].disrupt_all ? -1 : ty->pod_gang[i];
        r->pdb = pdb;
        r->demand = d;
        ty->run_pod[ty->nrun] = i;
        ty->pod_run[i] = ty->nrun++;
    }
    for (int k = 0; k < po->npdbs; k++)
        ty->pdb_allowed[k] = gs_kube_pdb_allowed(&po->pdbs[k], healthy[k], expected[k]);
    free(healthy);
    return 0;
}
