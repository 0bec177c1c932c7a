/* volbind.c - pods' volumes judged and bound as kube-scheduler's volume plugins do
 * (sched/volbind.h). */
#include "volbind.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/hash.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_PROVISIONER "kubernetes.io/no-provisioner"
#define ASSUME_MAX_S   900.0 /* an assumption the informers never confirm is dropped then */

const char *gs_volbind_reason(int r)
{
    static const char *const words[GS_VOLR_COUNT] = {
        "",
        "node(s) had volume node affinity conflict",
        "node(s) didn't find available persistent volumes to bind",
        "node(s) did not have enough free storage",
        "node(s) had no available volume zone",
        "node(s) exceed max volume count",
    };
    return r > 0 && r < GS_VOLR_COUNT ? words[r] : "";
}

/* ---------- the assume table ---------- */

struct assumed {
    char ns[64];
    char claim[GS_KNAME_MAX];
    char pv[GS_KNAME_MAX]; /* the volume chosen for it, or "" (provisioned) */
    char node[GS_KNAME_MAX];
    double at; /* monotonic s */
};

struct gs_volassume {
    pthread_mutex_t mu;
    struct assumed *v;
    int n, cap;
};

struct gs_volassume *gs_volassume_new(void)
{
    struct gs_volassume *a = calloc(1, sizeof(*a));
    if (a)
        pthread_mutex_init(&a->mu, NULL);
    return a;
}

void gs_volassume_free(struct gs_volassume *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->mu);
    free(a->v);
    free(a);
}

static void assume_add(struct gs_volassume *a, const char *ns, const char *claim, const char *pv,
                       const char *node)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        struct assumed *v = realloc(a->v, sizeof(*v) * (size_t)cap);
        if (!v) {
            pthread_mutex_unlock(&a->mu);
            return; /* not remembered: a later cycle may pick the volume, the write then fails */
        }
        a->v = v;
        a->cap = cap;
    }
    struct assumed *e = &a->v[a->n++];
    snprintf(e->ns, sizeof(e->ns), "%s", ns);
    snprintf(e->claim, sizeof(e->claim), "%s", claim);
    snprintf(e->pv, sizeof(e->pv), "%s", pv);
    snprintf(e->node, sizeof(e->node), "%s", node);
    e->at = gs_clock_mono();
    pthread_mutex_unlock(&a->mu);
}

void gs_volassume_drop(struct gs_volassume *a, const char *ns, const char *claim)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->n;)
        if (strcmp(a->v[i].ns, ns) == 0 && strcmp(a->v[i].claim, claim) == 0)
            a->v[i] = a->v[--a->n];
        else
            i++;
    pthread_mutex_unlock(&a->mu);
}

/* ---------- the cycle's view ---------- */

struct gs_volbind {
    const struct gs_storage *po;
    const struct gs_snapshot *sn;
    struct gs_volassume *assume;
    struct gs_strmap pvc_at;   /* "ns/name" -> index in po->pvcs */
    struct gs_strmap pv_at;    /* name -> index in po->pvs */
    struct gs_strmap csid_at;  /* CSIDriver name -> index */
    struct gs_strmap attached; /* (node, volume) as two int32 -> 1: a CSI volume in use there */
    struct gs_strmap rwop;     /* "ns/claim" -> pods using a ReadWriteOncePod claim */
    struct gs_strmap prov;     /* "ns/claim" -> node index its provisioning chose */
    /* the volumes a claim may be matched to, in lists (see index_volumes): "p" ns name -> the
     * volumes pre-bound to claim ns/name, by index; "c" class -> the available volumes of the
     * class not tied to one host, "h" class host -> those of one host, each by capacity */
    struct gs_strmap lists;
    struct vlist *vl;
    int32_t *vidx;       /* the lists' volumes, list after list */
    int8_t *taken;       /* per volume: given to a claim in this cycle (or in flight) */
    struct plan **plans; /* per snapshot pod, or NULL */
    int npods, nnodes;
    int32_t *csin_of;     /* per node: its CSINode (an index), or -1 */
    int32_t *drv_used;    /* per CSINode x GS_VOL_MAX_DRV: CSI volumes of that driver in use */
    struct clscache **cc; /* per class: what it allows on each node, built on first use */
};

/* What a WaitForFirstConsumer class allows on each node, worked out once a cycle, the first
 * time a claim of the class is judged. */
struct clscache {
    int32_t any;     /* the list of the class's available volumes tied to no host, or -1 */
    int32_t *host;   /* per node: the list of those of its host, or -1 */
    int8_t *allowed; /* per node: a provisioner may provision there (allowedTopologies); NULL:
                        the class has no provisioner */
    int64_t *room;   /* per node: the most a CSIStorageCapacity of the class that reaches it
                        offers (maximumVolumeSize, else capacity; -1 none); NULL: the driver
                        tracks no capacity */
};

/* A list of volumes: vidx[at..at+n). */
struct vlist {
    int32_t at, n;
};

enum { STEP_NONE = 0, STEP_BIND, STEP_PROVISION };

struct plan {
    int node;
    int n;
    uint8_t step[GS_MAX_POD_CLAIMS];
    int pvc[GS_MAX_POD_CLAIMS];
    int pv[GS_MAX_POD_CLAIMS];
};

static uint32_t key2(char *k, size_t n, const char *a, char sep, const char *b)
{
    int len = snprintf(k, n, "%s%c%s", a, sep, b);
    return len < 0 ? 0 : (uint32_t)((size_t)len < n ? (size_t)len : n - 1);
}

static int map_add(struct gs_strmap *m, const char *k, uint32_t len, int32_t by)
{
    int32_t v = gs_strmap_get(m, k, len);
    if (v >= 0) {
        gs_strmap_del(m, k, len);
        return gs_strmap_put(m, k, len, v + by);
    }
    return gs_strmap_put(m, k, len, by);
}

static int32_t map_get(const struct gs_strmap *m, const char *k, uint32_t len)
{
    int32_t v = gs_strmap_get(m, k, len);
    return v < 0 ? 0 : v;
}

static const struct gs_kube_pvc *pvc_of(const struct gs_volbind *vb, const char *ns,
                                        const char *name)
{
    char k[64 + GS_KNAME_MAX + 2];
    int32_t i = gs_strmap_get(&vb->pvc_at, k, key2(k, sizeof(k), ns, '/', name));
    return i >= 0 ? &vb->po->pvcs[i] : NULL;
}

static int pv_index(const struct gs_volbind *vb, const char *name)
{
    return gs_strmap_get(&vb->pv_at, name, (uint32_t)strlen(name));
}

/* Whether CSI volume v is in use on node already. */
static bool attached(const struct gs_volbind *vb, int node, int v)
{
    int32_t k[2] = {node, v};
    return gs_strmap_get(&vb->attached, k, sizeof(k)) >= 0;
}

/* A CSI volume in use on node: counted once per node, whoever uses it, against its driver's
 * limit in the node's CSINode. */
static int attach(struct gs_volbind *vb, int node, int v)
{
    const struct gs_kube_pv *pv = &vb->po->pvs[v];
    int32_t k[2] = {node, v};
    if (!pv->csi_driver[0] || gs_strmap_get(&vb->attached, k, sizeof(k)) >= 0)
        return 0;
    if (gs_strmap_put(&vb->attached, k, sizeof(k), 1))
        return GS_ENOMEM;
    int32_t cn = vb->csin_of[node];
    const struct gs_kube_csinode *n = cn >= 0 ? &vb->po->csinodes[cn] : NULL;
    for (int d = 0; n && d < n->ndrivers; d++)
        if (strcmp(n->drivers[d].name, pv->csi_driver) == 0)
            vb->drv_used[(size_t)cn * GS_VOL_MAX_DRV + (size_t)d]++;
    return 0;
}

/* A pod on node (bound, assumed, or placed in this cycle) uses its claims there. */
static int count_pod(struct gs_volbind *vb, const struct gs_kube_pod *p, int node)
{
    int rc = 0;
    for (int i = 0; i < p->nclaims && !rc; i++) {
        const struct gs_kube_pvc *c = pvc_of(vb, p->ns, p->claims[i]);
        if (!c)
            continue;
        if (c->access & GS_ACCESS_RWOP) {
            char k[64 + GS_KNAME_MAX + 2];
            rc = map_add(&vb->rwop, k, key2(k, sizeof(k), c->ns, '/', c->name), 1);
        }
        int v = c->bound ? pv_index(vb, c->volume) : -1;
        if (!rc && v >= 0 && node >= 0)
            rc = attach(vb, node, v);
    }
    return rc;
}

static bool pod_running(const struct gs_kube_pod *p)
{
    return p->node[0] && strcmp(p->phase, "Succeeded") != 0 && strcmp(p->phase, "Failed") != 0;
}

/* What the assume table holds and the objects do not show yet: volumes taken, provisionings
 * under way. Entries the objects confirm (or too old) are dropped. */
static int import_assumed(struct gs_volbind *vb)
{
    struct gs_volassume *a = vb->assume;
    if (!a)
        return 0;
    int rc = 0;
    double now = gs_clock_mono();
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->n && !rc;) {
        struct assumed *e = &a->v[i];
        const struct gs_kube_pvc *c = pvc_of(vb, e->ns, e->claim);
        int v = e->pv[0] ? pv_index(vb, e->pv) : -1;
        bool done = !c || c->bound || now - e->at > ASSUME_MAX_S ||
                    (v >= 0 && strcmp(vb->po->pvs[v].claim_name, e->claim) == 0 &&
                     strcmp(vb->po->pvs[v].claim_ns, e->ns) == 0) ||
                    (!e->pv[0] && strcmp(c->selected_node, e->node) == 0);
        if (done) {
            a->v[i] = a->v[--a->n];
            continue;
        }
        if (v >= 0)
            vb->taken[v] = 1;
        int node = gs__snapshot_find_node(vb->sn, e->node);
        if (!e->pv[0] && node >= 0) {
            char k[64 + GS_KNAME_MAX + 2];
            uint32_t len = key2(k, sizeof(k), e->ns, '/', e->claim);
            if (gs_strmap_get(&vb->prov, k, len) < 0)
                rc = gs_strmap_put(&vb->prov, k, len, node);
        }
        i++;
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

static int index_objects(struct gs_volbind *vb)
{
    const struct gs_storage *po = vb->po;
    char k[64 + GS_KNAME_MAX + 2];
    int rc = 0;
    for (int i = 0; i < po->npvcs && !rc; i++) {
        uint32_t len = key2(k, sizeof(k), po->pvcs[i].ns, '/', po->pvcs[i].name);
        if (gs_strmap_get(&vb->pvc_at, k, len) < 0)
            rc = gs_strmap_put(&vb->pvc_at, k, len, i);
    }
    for (int i = 0; i < po->npvs && !rc; i++) {
        const char *n = po->pvs[i].name;
        if (gs_strmap_get(&vb->pv_at, n, (uint32_t)strlen(n)) < 0)
            rc = gs_strmap_put(&vb->pv_at, n, (uint32_t)strlen(n), i);
    }
    for (int i = 0; i < po->ncsidrivers && !rc; i++) {
        const char *n = po->csidrivers[i].name;
        if (gs_strmap_get(&vb->csid_at, n, (uint32_t)strlen(n)) < 0)
            rc = gs_strmap_put(&vb->csid_at, n, (uint32_t)strlen(n), i);
    }
    for (int n = 0; n < vb->nnodes; n++)
        vb->csin_of[n] = -1;
    for (int i = 0; i < po->ncsinodes; i++) {
        int n = gs__snapshot_find_node(vb->sn, po->csinodes[i].name);
        if (n >= 0 && vb->csin_of[n] < 0)
            vb->csin_of[n] = i;
    }
    return rc;
}

/* A list's key: tag, a, then (unless NULL) NUL and b. */
#define LKEY_MAX (2 + 2 * GS_KNAME_MAX + 2)
static uint32_t lkey(char *k, char tag, const char *a, const char *b)
{
    size_t la = strnlen(a, GS_KNAME_MAX), lb = b ? strnlen(b, GS_KNAME_MAX) : 0;
    k[0] = tag;
    memcpy(k + 1, a, la);
    if (b) {
        k[1 + la] = '\0';
        memcpy(k + 2 + la, b, lb);
        return (uint32_t)(2 + la + lb);
    }
    return (uint32_t)(1 + la);
}

/* The one host a volume's required affinity names (a single term, a single requirement
 * kubernetes.io/hostname In [host], as a local volume's), or NULL: it is then matched on every
 * node. */
static const char *pinned_host(const struct gs_kube_pv *pv)
{
    if (pv->nterms != 1 || pv->terms[0].nreqs != 1)
        return NULL;
    const struct gs_pv_req *r = &pv->terms[0].reqs[0];
    return !r->field && r->op == GS_KOP_IN && r->nval == 1 && strcmp(r->key, GS_KHOSTNAME_KEY) == 0
               ? r->val[0]
               : NULL;
}

struct vkey {
    int64_t cap; /* 0 in the pre-bound lists: by index alone */
    int32_t list, v;
};

static int cmp_vkey(const void *a, const void *b)
{
    const struct vkey *x = a, *y = b;
    if (x->list != y->list)
        return x->list < y->list ? -1 : 1;
    if (x->cap != y->cap)
        return x->cap < y->cap ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

/* upstream's FindMatchingVolume looks at every volume for every claim and node; here a claim
 * looks only at the volumes pre-bound to it, then at the available volumes of its class that
 * its node can reach (those of its host, and those tied to no host), smallest first. A
 * volume claimed by another, not available or being deleted can match no claim and is in no
 * list. */
static int index_volumes(struct gs_volbind *vb)
{
    const struct gs_storage *po = vb->po;
    struct vkey *keys = malloc(sizeof(*keys) * ((size_t)po->npvs + 1));
    vb->vidx = malloc(sizeof(*vb->vidx) * ((size_t)po->npvs + 1));
    vb->vl = malloc(sizeof(*vb->vl) * ((size_t)po->npvs + 1));
    if (!keys || !vb->vidx || !vb->vl) {
        free(keys);
        return GS_ENOMEM;
    }
    int n = 0, nl = 0, rc = 0;
    char k[LKEY_MAX];
    for (int v = 0; v < po->npvs && !rc; v++) {
        const struct gs_kube_pv *pv = &po->pvs[v];
        uint32_t len;
        if (pv->refused[0])
            continue; /* its spec is unknown: it matches no claim */
        if (pv->claim_name[0])
            len = lkey(k, 'p', pv->claim_ns, pv->claim_name);
        else if (pv->phase == GS_PV_AVAILABLE && !pv->deleting)
            len = pinned_host(pv) ? lkey(k, 'h', pv->cls, pinned_host(pv))
                                  : lkey(k, 'c', pv->cls, NULL);
        else
            continue;
        int32_t l = gs_strmap_get(&vb->lists, k, len);
        if (l < 0 && !(rc = gs_strmap_put(&vb->lists, k, len, nl)))
            l = nl++;
        keys[n++] = (struct vkey){pv->claim_name[0] ? 0 : pv->capacity, l, v};
    }
    if (!rc) {
        qsort(keys, (size_t)n, sizeof(*keys), cmp_vkey);
        for (int i = 0; i < n; i++) {
            struct vlist *l = &vb->vl[keys[i].list];
            if (i == 0 || keys[i - 1].list != keys[i].list)
                *l = (struct vlist){i, 0};
            l->n++;
            vb->vidx[i] = keys[i].v;
        }
    }
    free(keys);
    return rc;
}

struct gs_volbind *gs_volbind_new(const struct gs_storage *po, const struct gs_snapshot *sn,
                                  struct gs_volassume *assume)
{
    struct gs_volbind *vb = calloc(1, sizeof(*vb));
    if (!vb)
        return NULL;
    vb->po = po;
    vb->sn = sn;
    vb->assume = assume;
    vb->npods = gs__snapshot_npods(sn);
    vb->nnodes = gs__snapshot_nnodes(sn);
    vb->taken = calloc((size_t)po->npvs + 1, 1);
    vb->plans = calloc((size_t)vb->npods + 1, sizeof(*vb->plans));
    vb->csin_of = malloc(sizeof(*vb->csin_of) * ((size_t)vb->nnodes + 1));
    vb->drv_used = calloc((size_t)po->ncsinodes * GS_VOL_MAX_DRV + 1, sizeof(*vb->drv_used));
    vb->cc = calloc((size_t)po->nclasses + 1, sizeof(*vb->cc));
    int rc = !vb->taken || !vb->plans || !vb->csin_of || !vb->drv_used || !vb->cc
                 ? GS_ENOMEM
                 : index_objects(vb);
    if (!rc)
        rc = index_volumes(vb);
    for (int i = 0; i < vb->npods && !rc; i++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, i);
        if (p->nclaims > 0 && pod_running(p))
            rc = count_pod(vb, p, gs__snapshot_find_node(sn, p->node));
    }
    if (!rc)
        rc = import_assumed(vb);
    if (rc) {
        gs_volbind_free(vb);
        return NULL;
    }
    return vb;
}

void gs_volbind_free(struct gs_volbind *vb)
{
    if (!vb)
        return;
    struct gs_strmap *maps[] = {&vb->pvc_at, &vb->pv_at, &vb->csid_at, &vb->attached,
                                &vb->rwop,   &vb->prov,  &vb->lists};
    for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
        gs_strmap_release(maps[i]);
    for (int i = 0; vb->plans && i < vb->npods; i++)
        free(vb->plans[i]);
    free(vb->plans);
    for (int i = 0; vb->cc && i < vb->po->nclasses; i++) {
        if (!vb->cc[i])
            continue;
        free(vb->cc[i]->host);
        free(vb->cc[i]->allowed);
        free(vb->cc[i]->room);
        free(vb->cc[i]);
    }
    free(vb->cc);
    free(vb->csin_of);
    free(vb->drv_used);
    free(vb->vl);
    free(vb->vidx);
    free(vb->taken);
    free(vb);
}

/* ---------- one pod ---------- */

/* The claim is in use by a pod other than p (ReadWriteOncePod). */
static bool rwop_in_use(const struct gs_volbind *vb, const struct gs_kube_pvc *c)
{
    char k[64 + GS_KNAME_MAX + 2];
    return map_get(&vb->rwop, k, key2(k, sizeof(k), c->ns, '/', c->name)) > 0;
}

/* The most room the CSIStorageCapacities of class sc offer on each node (upstream's
 * hasEnoughCapacity: one of them, reaching the node, must hold the claim). */
static int64_t *class_room(const struct gs_volbind *vb, const struct gs_kube_sc *sc)
{
    int64_t *room = malloc(sizeof(*room) * ((size_t)vb->nnodes + 1));
    for (int n = 0; room && n < vb->nnodes; n++) {
        const struct gs_kube_node *kn = gs__snapshot_node(vb->sn, n);
        room[n] = -1;
        for (int i = 0; i < vb->po->ncsicaps; i++) {
            const struct gs_kube_csicap *cap = &vb->po->csicaps[i];
            int64_t r = cap->max_size >= 0 ? cap->max_size : cap->capacity;
            if (r > room[n] && strcmp(cap->cls, sc->name) == 0 &&
                gs_kube_csicap_node_matches(cap, kn))
                room[n] = r;
        }
    }
    return room;
}

/* Class s's cache, built now if it is not yet. NULL without memory. */
static const struct clscache *class_cache(struct gs_volbind *vb, int s)
{
    if (vb->cc[s])
        return vb->cc[s];
    const struct gs_kube_sc *sc = &vb->po->classes[s];
    struct clscache *cc = calloc(1, sizeof(*cc));
    if (!cc)
        return NULL;
    char k[LKEY_MAX];
    cc->any = gs_strmap_get(&vb->lists, k, lkey(k, 'c', sc->name, NULL));
    cc->host = malloc(sizeof(*cc->host) * ((size_t)vb->nnodes + 1));
    bool prov = sc->provisioner[0] && strcmp(sc->provisioner, NO_PROVISIONER) != 0;
    int32_t d = gs_strmap_get(&vb->csid_at, sc->provisioner, (uint32_t)strlen(sc->provisioner));
    if (prov)
        cc->allowed = malloc((size_t)vb->nnodes + 1);
    if (prov && d >= 0 && vb->po->csidrivers[d].capacity)
        cc->room = class_room(vb, sc);
    bool ok = cc->host && (!prov || cc->allowed) &&
              (!prov || d < 0 || !vb->po->csidrivers[d].capacity || cc->room);
    for (int n = 0; ok && n < vb->nnodes; n++) {
        const struct gs_kube_node *kn = gs__snapshot_node(vb->sn, n);
        const char *host = gs_kube_label(kn, GS_KHOSTNAME_KEY);
        cc->host[n] = host ? gs_strmap_get(&vb->lists, k, lkey(k, 'h', sc->name, host)) : -1;
        if (cc->allowed)
            cc->allowed[n] = gs_kube_sc_node_allowed(sc, kn);
    }
    if (!ok) {
        free(cc->host);
        free(cc->allowed);
        free(cc->room);
        free(cc);
        return NULL;
    }
    return vb->cc[s] = cc;
}

/* An unbound claim's node-independent part: the node its provisioning chose (its
 * selected-node annotation, or a provisioning chosen in this cycle or in flight), the volumes
 * pre-bound to it. */
static void resolve_unbound(const struct gs_volbind *vb, const struct gs_kube_pvc *c,
                            struct gs_volpod *vp, int k)
{
    char key[LKEY_MAX];
    int32_t pnode = gs_strmap_get(&vb->prov, key, key2(key, sizeof(key), c->ns, '/', c->name));
    vp->fixed[k] = pnode >= 0 ? pnode : -1;
    if (pnode < 0 && c->selected_node[0]) {
        int n = gs__snapshot_find_node(vb->sn, c->selected_node);
        vp->fixed[k] = n >= 0 ? n : -2; /* a node the snapshot lacks: no node fits */
    }
    vp->pre[k] = gs_strmap_get(&vb->lists, key, lkey(key, 'p', c->ns, c->name));
}

static int resolve_claim(struct gs_volbind *vb, const struct gs_kube_pod *p, int i,
                         struct gs_volpod *vp, char *why, size_t n)
{
    const char *name = p->claims[i];
    const struct gs_kube_pvc *c = pvc_of(vb, p->ns, name);
    int k = vp->n;
    if (!c) {
        snprintf(why, n, "persistentvolumeclaim \"%s\" not found", name);
        return 1;
    }
    if (c->deleting) {
        snprintf(why, n, "persistentvolumeclaim \"%s\" is being deleted", name);
        return 1;
    }
    if (c->refused[0]) {
        snprintf(why, n, "gpusched cannot read persistentvolumeclaim \"%s\": %s", name, c->refused);
        return 1;
    }
    if ((c->access & GS_ACCESS_RWOP) && rwop_in_use(vb, c)) {
        snprintf(why, n,
                 "node has pod using PersistentVolumeClaim with the same name and "
                 "ReadWriteOncePod access mode");
        return 1;
    }
    vp->pvc[k] = (int)(c - vb->po->pvcs);
    vp->pv[k] = vp->sc[k] = -1;
    if (c->bound) {
        int v = pv_index(vb, c->volume);
        if (v < 0) {
            snprintf(why, n,
                     "pvc(s) bound to non-existent pv(s): persistentvolumeclaim \"%s\" is bound "
                     "to persistentvolume \"%s\", which does not exist",
                     c->name, c->volume);
            return 1;
        }
        vp->pv[k] = v;
        const struct gs_kube_pv *pv = &vb->po->pvs[v];
        if (pv->refused[0]) {
            snprintf(why, n,
                     "persistentvolumeclaim \"%s\" is bound to persistentvolume \"%s\", which "
                     "gpusched cannot read: %s",
                     c->name, c->volume, pv->refused);
            return 1;
        }
        vp->check |= pv->nterms > 0 || pv->nlabels > 0 || pv->csi_driver[0];
        vp->n++;
        return 0;
    }
    if (vb->po->classes_unknown)
        return 0; /* no classes to judge by: no constraint, as before volume binding */
    const struct gs_kube_sc *sc =
        c->has_class && c->cls[0] ? gs_storage_class_find(vb->po, c->cls) : NULL;
    if (c->has_class && c->cls[0] && !sc) {
        snprintf(why, n,
                 "persistentvolumeclaim \"%s\": storageclass.storage.k8s.io \"%s\" not found",
                 c->name, c->cls);
        return 1;
    }
    if (sc && sc->refused[0]) {
        snprintf(why, n,
                 "persistentvolumeclaim \"%s\": gpusched cannot read storageclass.storage.k8s.io "
                 "\"%s\": %s",
                 c->name, c->cls, sc->refused);
        return 1;
    }
    if (!sc || sc->mode != GS_BIND_WAIT_FOR_FIRST_CONSUMER) {
        snprintf(why, n, "pod has unbound immediate PersistentVolumeClaims (\"%s\")", c->name);
        return 1;
    }
    vp->sc[k] = (int)(sc - vb->po->classes);
    if (!class_cache(vb, vp->sc[k])) {
        snprintf(why, n, "persistentvolumeclaim \"%s\": out of memory matching its volumes",
                 c->name);
        return 1;
    }
    resolve_unbound(vb, c, vp, k);
    vp->check = true;
    vp->n++;
    return 0;
}

int gs_volbind_pod(struct gs_volbind *vb, const struct gs_kube_pod *p, struct gs_volpod *vp,
                   char *why, size_t n)
{
    memset(vp, 0, sizeof(*vp));
    if (vb->po->volumes_unknown)
        return 0;
    for (int i = 0; i < p->nclaims; i++)
        if (resolve_claim(vb, p, i, vp, why, n))
            return 1;
    return 0;
}

/* Whether volume v may go to claim c on node at all: not being deleted, its volume mode, not
 * given to another claim, not chosen for another claim of the pod, reachable from the node. */
static bool usable(const struct gs_volbind *vb, int v, const struct gs_kube_pvc *c,
                   const struct gs_kube_node *node, const int *chosen, int nchosen)
{
    const struct gs_kube_pv *pv = &vb->po->pvs[v];
    if (pv->deleting || pv->block != c->block || vb->taken[v])
        return false;
    for (int k = 0; k < nchosen; k++)
        if (chosen[k] == v)
            return false;
    return gs_kube_pv_node_matches(pv, node);
}

/* The first volume of list l (available, of the claim's class, by capacity; -1: none) that
 * fits claim c on node: the smallest, the lowest index among equals. -1: none. */
static int first_fit(const struct gs_volbind *vb, int32_t l, const struct gs_kube_pvc *c,
                     const struct gs_kube_node *node, const int *chosen, int nchosen)
{
    if (l < 0)
        return -1;
    const struct gs_kube_pv *pvs = vb->po->pvs;
    const int32_t *v = vb->vidx + vb->vl[l].at;
    int lo = 0, hi = vb->vl[l].n, end = hi;
    while (lo < hi) { /* the first with room for the request */
        int mid = lo + (hi - lo) / 2;
        if (pvs[v[mid]].capacity < c->request)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo; i < end; i++) {
        const struct gs_kube_pv *pv = &pvs[v[i]];
        if ((pv->access & c->access) != c->access || !usable(vb, v[i], c, node, chosen, nchosen) ||
            (c->nsel > 0 &&
             (pv->labels_partial || !gs_labelsel_matches(c->sel, c->nsel, gs_kube_pv_label, pv))))
            continue;
        return v[i];
    }
    return -1;
}

/* upstream's FindMatchingVolume for claim k of the pod on node: a volume pre-bound to the
 * claim first, else the smallest available one of its class that fits (the lowest index among
 * equals). -1: none. */
static int match_volume(const struct gs_volbind *vb, const struct gs_volpod *vp, int k, int node,
                        const struct gs_kube_node *kn, const int *chosen, int nchosen)
{
    const struct gs_kube_pvc *c = &vb->po->pvcs[vp->pvc[k]];
    const struct gs_kube_pv *pvs = vb->po->pvs;
    for (int i = 0; vp->pre[k] >= 0 && i < vb->vl[vp->pre[k]].n; i++) {
        int v = vb->vidx[vb->vl[vp->pre[k]].at + i];
        if ((!pvs[v].claim_uid[0] || !c->uid[0] || strcmp(pvs[v].claim_uid, c->uid) == 0) &&
            usable(vb, v, c, kn, chosen, nchosen))
            return v;
    }
    const struct clscache *cc = vb->cc[vp->sc[k]];
    int best = first_fit(vb, cc->any, c, kn, chosen, nchosen);
    int h = first_fit(vb, cc->host[node], c, kn, chosen, nchosen);
    if (h >= 0 && (best < 0 || pvs[h].capacity < pvs[best].capacity ||
                   (pvs[h].capacity == pvs[best].capacity && h < best)))
        best = h;
    return best;
}

/* upstream's checkVolumeProvisions for claim k of the pod on node: GS_VOLR_OK, or why not. */
static int can_provision(const struct gs_volbind *vb, const struct gs_volpod *vp, int k, int node)
{
    const struct clscache *cc = vb->cc[vp->sc[k]];
    if (!cc->allowed || !cc->allowed[node])
        return GS_VOLR_BIND; /* no provisioner, or not in the class's allowedTopologies */
    if (!cc->room)
        return GS_VOLR_OK; /* no capacity tracking */
    return cc->room[node] >= vb->po->pvcs[vp->pvc[k]].request ? GS_VOLR_OK : GS_VOLR_SPACE;
}

/* The node's CSI attach limit against the pod's new volumes. */
static bool within_limits(const struct gs_volbind *vb, int node, const struct plan *pl,
                          const struct gs_volpod *vp)
{
    int32_t cn = vb->csin_of[node];
    if (cn < 0)
        return true;
    const struct gs_kube_csinode *n = &vb->po->csinodes[cn];
    for (int d = 0; d < n->ndrivers; d++) {
        const struct gs_csinode_driver *drv = &n->drivers[d];
        if (drv->count < 0)
            continue;
        int32_t used = vb->drv_used[(size_t)cn * GS_VOL_MAX_DRV + (size_t)d];
        for (int i = 0; i < pl->n; i++) {
            const char *driver = NULL;
            if (pl->pv[i] >= 0)
                driver = vb->po->pvs[pl->pv[i]].csi_driver;
            else if (vp->sc[i] >= 0)
                driver = vb->po->classes[vp->sc[i]].provisioner;
            if (!driver || strcmp(driver, drv->name) != 0)
                continue;
            if (pl->pv[i] >= 0 && attached(vb, node, pl->pv[i]))
                continue; /* in use there already */
            used++;
        }
        if (used > drv->count)
            return false;
    }
    return true;
}

/* The plan for the pod's claims on node, or why it has none. */
static int plan_node(struct gs_volbind *vb, const struct gs_volpod *vp, int node, struct plan *pl)
{
    const struct gs_kube_node *kn = gs__snapshot_node(vb->sn, node);
    pl->node = node;
    pl->n = vp->n;
    int why = GS_VOLR_OK;
    int chosen[GS_MAX_POD_CLAIMS], nchosen = 0;
    for (int i = 0; i < vp->n; i++) {
        pl->pvc[i] = vp->pvc[i];
        pl->pv[i] = vp->pv[i];
        pl->step[i] = STEP_NONE;
        if (vp->pv[i] >= 0) {
            const struct gs_kube_pv *pv = &vb->po->pvs[vp->pv[i]];
            if (!gs_kube_pv_node_matches(pv, kn))
                return GS_VOLR_AFFINITY;
            if (!gs_kube_pv_zone_matches(pv, kn))
                why = why ? why : GS_VOLR_ZONE;
            continue;
        }
        if (vp->fixed[i] != -1) {
            /* provisioning chose a node already */
            if (vp->fixed[i] != node)
                return GS_VOLR_BIND;
            continue;
        }
        int v = match_volume(vb, vp, i, node, kn, chosen, nchosen);
        if (v >= 0) {
            pl->pv[i] = chosen[nchosen++] = v;
            pl->step[i] = STEP_BIND;
            continue;
        }
        int r = can_provision(vb, vp, i, node);
        if (r)
            return r;
        pl->step[i] = STEP_PROVISION;
    }
    if (!why && !within_limits(vb, node, pl, vp))
        why = GS_VOLR_LIMIT;
    return why;
}

int gs_volbind_node(struct gs_volbind *vb, const struct gs_volpod *vp, int node)
{
    if (!vp->check)
        return GS_VOLR_OK;
    struct plan pl;
    return plan_node(vb, vp, node, &pl);
}

int gs_volbind_place(struct gs_volbind *vb, int pod, const struct gs_volpod *vp, int node)
{
    if (vp->n == 0 || pod < 0 || pod >= vb->npods)
        return 0;
    struct plan *pl = vb->plans[pod];
    if (!pl && !(pl = vb->plans[pod] = malloc(sizeof(*pl))))
        return GS_ENOMEM;
    if (plan_node(vb, vp, node, pl) != GS_VOLR_OK) {
        free(pl);
        vb->plans[pod] = NULL;
        return 0; /* placed against the hooks' word: nothing to bind */
    }
    int rc = 0;
    for (int i = 0; i < pl->n && !rc; i++) {
        const struct gs_kube_pvc *c = &vb->po->pvcs[pl->pvc[i]];
        if (pl->step[i] == STEP_BIND)
            vb->taken[pl->pv[i]] = 1;
        if (pl->step[i] == STEP_PROVISION) {
            char k[64 + GS_KNAME_MAX + 2];
            uint32_t len = key2(k, sizeof(k), c->ns, '/', c->name);
            if (gs_strmap_get(&vb->prov, k, len) < 0)
                rc = gs_strmap_put(&vb->prov, k, len, node);
        }
    }
    return rc ? rc : count_pod(vb, gs__snapshot_pod(vb->sn, pod), node);
}

/* A claim the binder waits for, with who is to bind it, for its message if it never is: the
 * volume chosen for it, or its class's provisioner and whether a CSIDriver of that name is
 * registered. */
static json_t *wait_entry(const struct gs_volbind *vb, const struct gs_kube_pvc *c, const char *pv)
{
    json_t *w = json_pack("{s:s, s:s}", "namespace", c->ns, "name", c->name);
    const struct gs_kube_sc *sc =
        c->has_class && c->cls[0] ? gs_storage_class_find(vb->po, c->cls) : NULL;
    if (pv) {
        json_object_set_new(w, "volume", json_string(pv));
    } else if (sc && sc->provisioner[0] && strcmp(sc->provisioner, NO_PROVISIONER) != 0) {
        int32_t d = gs_strmap_get(&vb->csid_at, sc->provisioner, (uint32_t)strlen(sc->provisioner));
        json_object_set_new(w, "class", json_string(sc->name));
        json_object_set_new(w, "provisioner", json_string(sc->provisioner));
        json_object_set_new(w, "driver", json_boolean(d >= 0));
    }
    return w;
}

json_t *gs_volbind_writes(struct gs_volbind *vb, int pod, double timeout_s)
{
    const struct plan *pl = pod >= 0 && pod < vb->npods ? vb->plans[pod] : NULL;
    if (!pl)
        return NULL;
    const char *node = gs__snapshot_node(vb->sn, pl->node)->name;
    json_t *writes = json_array(), *wait = json_array();
    for (int i = 0; i < pl->n; i++) {
        const struct gs_kube_pvc *c = &vb->po->pvcs[pl->pvc[i]];
        char path[512];
        if (pl->step[i] == STEP_BIND) {
            /* the volume controller's bind, as upstream's PreBind writes it: claimRef with the
             * claim's identity, guarded by the volume's resourceVersion */
            const struct gs_kube_pv *pv = &vb->po->pvs[pl->pv[i]];
            snprintf(path, sizeof(path), "/api/v1/persistentvolumes/%s", pv->name);
            json_t *md = json_pack("{s:{s:s}}", "annotations",
                                   "pv.kubernetes.io/bound-by-controller", "yes");
            if (pv->rv[0])
                json_object_set_new(md, "resourceVersion", json_string(pv->rv));
            json_t *ref = json_pack("{s:s, s:s, s:s, s:s}", "kind", "PersistentVolumeClaim",
                                    "apiVersion", "v1", "namespace", c->ns, "name", c->name);
            if (c->uid[0])
                json_object_set_new(ref, "uid", json_string(c->uid));
            if (c->rv[0])
                json_object_set_new(ref, "resourceVersion", json_string(c->rv));
            json_array_append_new(writes, json_pack("{s:s, s:{s:o, s:{s:o}}}", "path", path, "body",
                                                    "metadata", md, "spec", "claimRef", ref));
            assume_add(vb->assume, c->ns, c->name, pv->name, node);
        } else if (pl->step[i] == STEP_PROVISION) {
            snprintf(path, sizeof(path), "/api/v1/namespaces/%s/persistentvolumeclaims/%s", c->ns,
                     c->name);
            json_array_append_new(writes,
                                  json_pack("{s:s, s:{s:{s:{s:s}}}}", "path", path, "body",
                                            "metadata", "annotations", GS_ANN_SELECTED_NODE, node));
            assume_add(vb->assume, c->ns, c->name, "", node);
        }
        if (!c->bound)
            json_array_append_new(
                wait,
                wait_entry(vb, c, pl->step[i] == STEP_BIND ? vb->po->pvs[pl->pv[i]].name : NULL));
    }
    if (json_array_size(writes) == 0 && json_array_size(wait) == 0) {
        json_decref(writes);
        json_decref(wait);
        return NULL;
    }
    return json_pack("{s:o, s:o, s:f}", "writes", writes, "wait", wait, "timeout", timeout_s);
}
