/* tenancy.c - GPUQueues, ResourceQuotas, PodGroups and PDBs for a scheduling cycle, and the
 * feed that lists and watches them with MigManagers, PersistentVolumeClaims and
 * PersistentVolumes (see tenancy.h). */
#include "tenancy.h"

#include "../base/flag.h"
#include "../base/buf.h"
#include "../base/error.h"
#include "../base/log.h"
#include "../kube/informer.h"
#include "../base/hash.h"

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

struct lister {
    void *items;
    int n, cap;
    size_t size;
    int (*read)(const json_t *, void *, struct gs_error *);
};

static int rd_queue(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_queue_read(o, out, e);
}
static int rd_rquota(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_rquota_read(o, out, e);
}
static int rd_group(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_podgroup_read(o, out, e);
}
static int rd_pdb(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_pdb_read(o, out, e);
}
static int rd_migmgr(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_migmgr_read(o, out, e);
}
static int rd_pvc(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_pvc_read(o, out, e);
}
static int rd_pv(const json_t *o, void *out, struct gs_error *e)
{
    return gs_kube_pv_read(o, out, e);
}

static int on_item(const json_t *item, void *user)
{
    struct lister *l = user;
    if (l->n == l->cap) {
        void *v = gs_grow(l->items, &l->cap, l->size, 16);
        if (!v)
            return GS_ENOMEM;
        l->items = v;
    }
    struct gs_error err;
    gs_error_init(&err);
    if (l->read(item, (char *)l->items + l->size * (size_t)l->n, &err)) {
        warn_once("ignored: %s", err.msg);
        return 0;
    }
    l->n++;
    return 0;
}

/* The seven kinds: where they are listed and where their array lives in gs_policy_objs. An
 * optional kind that cannot be listed (forbidden by an older RBAC role, say) is as good as
 * absent: it must not stop the others. */
enum { KQ, KR, KG, KB, KM, KPVC, KPV, NKINDS };
static const struct kind {
    const char *path, *what;
    size_t size;
    int (*read)(const json_t *, void *, struct gs_error *);
    size_t items, count; /* offsets in struct gs_policy_objs */
    bool optional;
} kinds[NKINDS] = {
    {"/apis/gpusched.io/v1alpha1/gpuqueues", "GPUQueues", sizeof(struct gs_kube_queue), rd_queue,
     offsetof(struct gs_policy_objs, queues), offsetof(struct gs_policy_objs, nqueues), false},
    {"/api/v1/resourcequotas", "ResourceQuotas", sizeof(struct gs_kube_rquota), rd_rquota,
     offsetof(struct gs_policy_objs, rquotas), offsetof(struct gs_policy_objs, nrquotas), false},
    {"/apis/scheduling.x-k8s.io/v1alpha1/podgroups", "PodGroups", sizeof(struct gs_kube_podgroup),
     rd_group, offsetof(struct gs_policy_objs, groups), offsetof(struct gs_policy_objs, ngroups),
     false},
    {"/apis/policy/v1/poddisruptionbudgets", "PodDisruptionBudgets", sizeof(struct gs_kube_pdb),
     rd_pdb, offsetof(struct gs_policy_objs, pdbs), offsetof(struct gs_policy_objs, npdbs), false},
    {"/apis/nvidia.com/v1alpha1/migmanagers", "MigManagers", sizeof(struct gs_kube_migmgr),
     rd_migmgr, offsetof(struct gs_policy_objs, migmgrs), offsetof(struct gs_policy_objs, nmigmgrs),
     false},
    {"/api/v1/persistentvolumeclaims", "PersistentVolumeClaims", sizeof(struct gs_kube_pvc), rd_pvc,
     offsetof(struct gs_policy_objs, pvcs), offsetof(struct gs_policy_objs, npvcs), true},
    {"/api/v1/persistentvolumes", "PersistentVolumes", sizeof(struct gs_kube_pv), rd_pv,
     offsetof(struct gs_policy_objs, pvs), offsetof(struct gs_policy_objs, npvs), true},
};

static void **items_of(struct gs_policy_objs *po, int k)
{
    return (void **)((char *)po + kinds[k].items);
}
static int *count_of(struct gs_policy_objs *po, int k)
{
    return (int *)((char *)po + kinds[k].count);
}

/* One kind's lists, through a kube/informer.h informer (a daemon's feed) or once
 * (gs_policy_objs_list): the objects a list stages, and where a complete list goes. */
struct kind_feed {
    struct gs_policy_feed *f;   /* the feed, or NULL: list once into dst */
    struct gs_policy_objs *dst; /* without a feed */
    int k;
    struct lister l;
    struct gs_informer *inf;
};

static void kf_list_begin(void *user)
{
    struct kind_feed *kf = user;
    free(kf->l.items);
    kf->l = (struct lister){NULL, 0, 0, kinds[kf->k].size, kinds[kf->k].read};
}

static int kf_list_item(const json_t *item, void *user)
{
    struct kind_feed *kf = user;
    return on_item(item, &kf->l);
}

static int kf_list_end(const char *rv, int n, bool absent, void *user);

/* An optional kind that cannot be listed (forbidden by an older RBAC role, say) is as good as
 * absent; a 404 (the CRD is not installed) makes any kind absent (opts.absent_retry_s). */
static int kf_list_failed(int rc, const struct gs_error *err, void *user)
{
    struct kind_feed *kf = user;
    if (!kinds[kf->k].optional)
        return rc;
    warn_once("listing %s: %s; pods' volumes are not checked", kinds[kf->k].what, err->msg);
    return 0;
}

/* A change to any object of the kind: list it again (the feed hands out whole lists). */
static int kf_event(const char *type, const json_t *obj, void *user)
{
    return GS_INFORMER_RELIST;
}

static const struct gs_informer_ops kf_ops = {
    .list_begin = kf_list_begin,
    .list_item = kf_list_item,
    .list_end = kf_list_end,
    .list_failed = kf_list_failed,
    .event = kf_event,
};

static struct gs_informer_opts kf_opts(int k, double resync_s)
{
    return (struct gs_informer_opts){.path = kinds[k].path,
                                     .what = kinds[k].what,
                                     .lane2 = true,
                                     .resync_s = resync_s,
                                     .absent_retry_s = 1};
}

void gs_policy_objs_release(struct gs_policy_objs *po)
{
    for (int k = 0; k < NKINDS; k++)
        free(*items_of(po, k));
    memset(po, 0, sizeof(*po));
}

int gs_policy_objs_list(struct gs_kube_client *kc, struct gs_policy_objs *po, struct gs_error *err)
{
    memset(po, 0, sizeof(*po));
    for (int k = 0; k < NKINDS; k++) {
        struct kind_feed kf = {.dst = po, .k = k};
        struct gs_informer_opts o = kf_opts(k, 0);
        int rc = gs_informer_list(kc, &o, &kf_ops, &kf, err);
        free(kf.l.items);
        if (rc) {
            gs_policy_objs_release(po);
            return rc;
        }
    }
    return 0;
}

int gs_policy_objs_copy(struct gs_policy_objs *to, const struct gs_policy_objs *from)
{
    memset(to, 0, sizeof(*to));
    to->volumes_unknown = from->volumes_unknown;
    for (int k = 0; k < NKINDS; k++) {
        int n = *count_of((struct gs_policy_objs *)from, k);
        if (n == 0)
            continue;
        void *v = malloc(kinds[k].size * (size_t)n);
        if (!v) {
            gs_policy_objs_release(to);
            return GS_ENOMEM;
        }
        memcpy(v, *items_of((struct gs_policy_objs *)from, k), kinds[k].size * (size_t)n);
        *items_of(to, k) = v;
        *count_of(to, k) = n;
    }
    return 0;
}

/* ---------- the feed: an informer per kind ---------- */

struct gs_policy_feed {
    pthread_mutex_t mu;
    /* under mu: */
    struct gs_policy_objs cur;
    bool listed[NKINDS];  /* a list of the kind completed */
    bool missing[NKINDS]; /* and found its API absent */
    uint64_t gen;         /* lists completed so far */
    uint64_t synced_gen;  /* gen at the last gs_policy_feed_sync that copied */
    struct kind_feed kf[NKINDS];
};

static int kf_list_end(const char *rv, int n, bool absent, void *user)
{
    struct kind_feed *kf = user;
    int k = kf->k;
    struct gs_policy_objs *to = kf->dst;
    struct gs_policy_feed *f = kf->f;
    if (f) {
        pthread_mutex_lock(&f->mu);
        to = &f->cur;
        f->listed[k] = true;
        f->missing[k] = absent;
        f->gen++;
    } else {
        to->volumes_unknown |= absent && kinds[k].optional;
    }
    free(*items_of(to, k));
    *items_of(to, k) = kf->l.items;
    *count_of(to, k) = kf->l.n;
    kf->l.items = NULL;
    kf->l.n = kf->l.cap = 0;
    if (f)
        pthread_mutex_unlock(&f->mu);
    return 0;
}

struct gs_policy_feed *gs_policy_feed_new(struct gs_kube_client *kc, double resync_s)
{
    struct gs_policy_feed *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    pthread_mutex_init(&f->mu, NULL);
    for (int k = 0; k < NKINDS; k++) {
        f->kf[k].f = f;
        f->kf[k].k = k;
        struct gs_informer_opts o = kf_opts(k, resync_s);
        struct gs_error err;
        gs_error_init(&err);
        if (gs_informer_start(kc, &o, &kf_ops, &f->kf[k], &f->kf[k].inf, &err)) {
            GS_ERR("tenancy", "%s", err.msg);
            gs_policy_feed_free(f);
            return NULL;
        }
    }
    return f;
}

void gs_policy_feed_free(struct gs_policy_feed *f)
{
    if (!f)
        return;
    for (int k = 0; k < NKINDS; k++) {
        gs_informer_stop(f->kf[k].inf);
        free(f->kf[k].l.items);
    }
    gs_policy_objs_release(&f->cur);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

uint64_t gs_policy_feed_lists(struct gs_policy_feed *f)
{
    uint64_t n = 0;
    for (int k = 0; k < NKINDS; k++)
        n += gs_informer_lists(f->kf[k].inf);
    return n;
}

int gs_policy_feed_sync(struct gs_policy_feed *f, struct gs_policy_objs *out, struct gs_error *err)
{
    pthread_mutex_lock(&f->mu);
    bool all = true;
    for (int k = 0; k < NKINDS; k++)
        all &= f->listed[k];
    if (!all || f->gen == f->synced_gen) {
        pthread_mutex_unlock(&f->mu);
        return 0;
    }
    int rc = gs_policy_objs_copy(out, &f->cur);
    if (!rc) {
        out->volumes_unknown = f->missing[KPVC] || f->missing[KPV];
        f->synced_gen = f->gen;
    }
    pthread_mutex_unlock(&f->mu);
    return rc ? gs_error_set(err, rc, "out of memory") : 1;
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
           same(a->pvcs, a->npvcs, b->pvcs, b->npvcs, sizeof(*a->pvcs)) &&
           same(a->pvs, a->npvs, b->pvs, b->npvs, sizeof(*a->pvs)) &&
           a->volumes_unknown == b->volumes_unknown;
}

const struct gs_kube_pvc *gs_policy_pvc_find(const struct gs_policy_objs *po, const char *ns,
                                             const char *name)
{
    for (int i = 0; i < po->npvcs; i++)
        if (strcmp(po->pvcs[i].name, name) == 0 && strcmp(po->pvcs[i].ns, ns) == 0)
            return &po->pvcs[i];
    return NULL;
}

const struct gs_kube_pv *gs_policy_pv_find(const struct gs_policy_objs *po, const char *name)
{
    for (int i = 0; i < po->npvs; i++)
        if (strcmp(po->pvs[i].name, name) == 0)
            return &po->pvs[i];
    return NULL;
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
            if (strcmp(po->groups[k].name, g) == 0 && strcmp(po->groups[k].ns, p->ns) == 0)
                ty->pod_gang[i] = k;
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
        r->gang = ty->pod_gang[i];
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
