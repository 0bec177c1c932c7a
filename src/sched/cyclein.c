/* cyclein.c - a scheduling cycle's input (sched/cyclein.h): the snapshot of the store
 * (sched/snapshot.c) and the tenancy objects (sched/tenancy.c) into core/cycle.h's input, with
 * the hooks the cycle calls for each pending pod: taints and Kubernetes constraints
 * (core/constraints.h), bound volumes, the resources the engine counts roughly, and DRA claims
 * (sched/claims.c). The output (sched/cycleout.c) applies what the cycle decides. */
#include "cyclein.h"

#include "../base/buf.h"
#include "../base/clock.h"
#include "../base/error.h"
#include "../base/log.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the pod tolerates a node's taints, for core/constraints and the engine; the
 * volumes bound to its claims, for node_has_room. */
struct tol_ctx {
    const struct gs__cycle *cy;
    const struct gs_kube_pod *p;
    const struct gs_volpod *vp; /* its claims (sched/volbind.h) */
    int8_t *vol_refused;        /* per node: why node_has_room last refused it for its volumes (an
                                   enum gs_volr; NULL: not kept) */
    int pod;                    /* the snapshot's index of p, for its DRA claims (-1: none) */
    bool *dra_refused;          /* set when a node was refused for its claims (or NULL) */
    int spod;                   /* the snapshot's index of p */
    int8_t *cd_refused;         /* per node: why node_has_room last refused it for its
                                   ComputeDomain (GS_CD_NODE_*; NULL: not kept) */
};

/* A pending pod's claims (sched/volbind.h): 0 with vp resolved, or 1 with why when the pod must
 * wait everywhere. Without the cycle's volume view (no memory), nothing is checked. */
int gs__cycle_pod_volumes(const struct gs__cycle *cy, const struct gs_kube_pod *p,
                          struct gs_volpod *vp, char *why, size_t n)
{
    memset(vp, 0, sizeof(*vp));
    return cy->vb && p->nclaims > 0 ? gs_volbind_pod(cy->vb, p, vp, why, n) : 0;
}

/* kube-scheduler's volume filters on one node: GS_VOLR_OK or why not. */
int gs__cycle_volumes_fit(const struct gs__cycle *cy, const struct gs_volpod *vp, int node)
{
    return cy->vb && vp->check ? gs_volbind_node(cy->vb, vp, node) : GS_VOLR_OK;
}

/* A nomination holds while its victims leave: 30 s at least, and while (up to 5 minutes) a
 * pod on the nominated node is still terminating (victims with a long grace period), so that
 * a waiting preemptor does not evict a second set; and while a GPU of the node is being
 * re-carved. */
static bool nomination_live(const struct gs__cycle *cy, int i)
{
    const char *nominated = gs__snapshot_pod_nominated(cy->sn, i);
    if (!nominated[0])
        return false;
    int node = gs__snapshot_find_node(cy->sn, nominated);
    if (node >= 0 && gs__snapshot_node_busy(cy->sn, node))
        return true; /* a GPU there is being re-carved, for it or another pod */
    double age = gs_clock_mono() - gs__snapshot_pod_nominated_at(cy->sn, i);
    if (age < 30)
        return true;
    return age <= 300 && node >= 0 && cy->leaving && cy->leaving[node];
}

static bool tolerates_node(void *ctx, int node)
{
    const struct tol_ctx *t = ctx;
    return gs_kube_tolerates(t->p, gs__snapshot_node(t->cy->sn, node));
}

/* The engine's further filter for a pod: the resources it does not count exactly, then the
 * node affinity of its bound volumes (upstream's order: NodeResourcesFit, VolumeBinding). */
static bool node_has_room(void *ctx, int node)
{
    const struct tol_ctx *t = ctx;
    int vol = 0;
    /* a pod of an NVIDIA ComputeDomain: only nodes of its domain's NVLink clique */
    int cd = gs__topology_pod_node(t->cy->topo, t->spod, node);
    if (t->cd_refused)
        t->cd_refused[node] = (int8_t)cd;
    if (cd != GS_CD_NODE_OK) {
        if (t->vol_refused)
            t->vol_refused[node] = GS_VOLR_OK;
        return false;
    }
    uint32_t dra_res = t->cy->dra ? gs_dracycle_pod_dra_res(&t->cy->dra->d, t->pod, t->p) : 0;
    bool ok = gs__snapshot_resources_fit(t->cy->sn, node, t->p, dra_res, NULL, 0);
    if (ok && t->vp->check && (vol = gs__cycle_volumes_fit(t->cy, t->vp, node)))
        ok = false;
    if (ok && gs_kube_pod_dra(t->p) && t->cy->dra &&
        !gs_dracycle_pod_fits(&t->cy->dra->d, t->pod, node)) {
        ok = false;
        if (t->dra_refused)
            *t->dra_refused = true;
    }
    if (t->vol_refused)
        t->vol_refused[node] = (int8_t)vol;
    return ok;
}

/* The cycle's hooks (core/cycle.h): one pending pod's taints, Kubernetes constraints, bound
 * volumes and further resources, prepared when the cycle asks. */
struct gs__hooks {
    struct gs__cycle *cy;
    const int *idx; /* cycle pod -> snapshot pod */
    int cur;        /* the pod prepared, or -1 */
    struct gs_volpod vp;
    struct tol_ctx tc;
    bool kprepared;
    int *vol;  /* per cycle pod x GS_VOLR_COUNT: nodes refused for its volumes, by why */
    int *cd;   /* per cycle pod x 2: nodes refused for its ComputeDomain (no clique, another) */
    bool *dra; /* per cycle pod: a node was refused for its DRA claims */
    /* per running pod (cy->ty.run) x GS_MAX_POD_DRA: its claims' indices in the DRA view
     * (-1: none), for preemption; NULL without DRA */
    int *runclaim;
};

static void hooks_settle(struct gs__hooks *h)
{
    if (h->cur >= 0 && h->tc.vol_refused) {
        for (int i = 0; i < h->cy->c->nnodes; i++)
            h->vol[(size_t)h->cur * GS_VOLR_COUNT + (size_t)h->tc.vol_refused[i]]++;
    }
    for (int i = 0; h->cur >= 0 && h->tc.cd_refused && i < h->cy->c->nnodes; i++)
        if (h->tc.cd_refused[i] != GS_CD_NODE_OK)
            h->cd[(size_t)h->cur * 2 + (h->tc.cd_refused[i] == GS_CD_NODE_OTHER_CLIQUE)]++;
    free(h->tc.vol_refused);
    free(h->tc.cd_refused);
    h->tc.vol_refused = NULL;
    h->tc.cd_refused = NULL;
    h->cur = -1;
}

static int hook_prepare(void *ctx, int pod, struct gs_kplace *k)
{
    struct gs__hooks *h = ctx;
    struct gs__cycle *cy = h->cy;
    hooks_settle(h);
    const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, h->idx[pod]);
    char why[300];
    if (gs__cycle_pod_volumes(cy, p, &h->vp, why, sizeof(why)))
        memset(&h->vp, 0, sizeof(h->vp)); /* checked before the cycle */
    h->cur = pod;
    h->tc =
        (struct tol_ctx){.cy = cy,
                         .p = p,
                         .vp = &h->vp,
                         .vol_refused = h->vp.check ? calloc((size_t)cy->c->nnodes + 1, 1) : NULL,
                         .pod = h->idx[pod],
                         .dra_refused = &h->dra[pod],
                         .spod = h->idx[pod]};
    if (gs__topology_pod_domain(cy->topo, h->idx[pod], why, sizeof(why)))
        h->tc.cd_refused = calloc((size_t)cy->c->nnodes + 1, 1);
    *k = (struct gs_kplace){.tol = gs__snapshot_tainted(cy->sn) ? tolerates_node : NULL,
                            .tol_ctx = &h->tc,
                            .fit = node_has_room,
                            .fit_ctx = &h->tc};
    h->kprepared = cy->ks && cy->kp && p->k &&
                   gs_kprep_compute(cy->kp, cy->ks, cy->c, &p->k->kp, tolerates_node, &h->tc) == 0;
    if (h->kprepared) {
        k->ks = cy->ks;
        k->kp = cy->kp;
        k->selector_in_req = !p->k->kp.has_required && !p->sel_partial;
    }
    return 0;
}

/* Whether the node may take the pod apart from its devices: taints, resources and volumes,
 * then its constraints (spec.nodeSelector alone is the engine's own selector filter). A pod
 * whose devices are all DRA claims (and not in a gang) is allowed apart from its claims too:
 * preemption weighs them itself (hook_give, hook_fits); for the others the claims must fit
 * as things stand (gangs and re-carving do not model them). */
static bool hook_allows(void *ctx, int pod, int node)
{
    struct gs__hooks *h = ctx;
    struct gs__cycle *cy = h->cy;
    if (h->cur != pod) {
        struct gs_kplace k;
        hook_prepare(ctx, pod, &k);
    }
    const struct gs_kube_pod *p = h->tc.p;
    struct tol_ctx t = h->tc;
    t.vol_refused = NULL;
    t.cd_refused = NULL;
    if (gs_dracycle_claims_apart(h->runclaim, &p->req, cy->ty.pod_gang[h->idx[pod]])) {
        t.pod = -1; /* claims apart */
        t.dra_refused = NULL;
    }
    if ((gs__snapshot_tainted(cy->sn) && !gs_kube_tolerates(p, gs__snapshot_node(cy->sn, node))) ||
        !node_has_room(&t, node))
        return false;
    if (!h->kprepared || gs_kprep_trivial(cy->kp))
        return true;
    enum gs_kverdict v = gs_kprep_filter(cy->kp, cy->ks, cy->c, node);
    return v == GS_KFIT || (v == GS_KNO_NODE_AFFINITY && !p->k->kp.has_required && !p->sel_partial);
}

static void hook_placed(void *ctx, int pod, int node)
{
    struct gs__hooks *h = ctx;
    struct gs__cycle *cy = h->cy;
    const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, h->idx[pod]);
    if (cy->ks && p->k)
        gs_kstate_add_pod(cy->ks, cy->c, &p->k->kp, node);
    gs__snapshot_count_resources(cy->sn, node, p);
    if (cy->vb && p->nclaims > 0) {
        if (h->cur != pod) {
            struct gs_kplace k;
            hook_prepare(ctx, pod, &k);
        }
        if (gs_volbind_place(cy->vb, h->idx[pod], &h->vp, node))
            GS_WARN("scheduler", "%s/%s: out of memory reserving its volumes", p->ns, p->name);
    }
    gs__topology_pod_placed(cy->topo, h->idx[pod], node);
    if (cy->dra && gs_kube_pod_dra(p) && gs_dracycle_pod_place(&cy->dra->d, h->idx[pod], node))
        GS_WARN("scheduler", "%s/%s: its claims no longer fit node %s", p->ns, p->name,
                cy->c->nodes[node].name);
}

/* Preemption of DRA claims (core/cycle.h): running pod v's claimed devices given back or
 * taken again in the cycle's DRA state; whether pod's claims can be allocated on node now. */
static void hook_give(void *ctx, int v, bool gone)
{
    struct gs__hooks *h = ctx;
    if (h->runclaim)
        gs_dracycle_give_run(&h->cy->dra->d, &h->runclaim[(size_t)v * GS_MAX_POD_DRA], gone);
}

static bool hook_fits(void *ctx, int pod, int node)
{
    struct gs__hooks *h = ctx;
    struct gs__cycle *cy = h->cy;
    const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, h->idx[pod]);
    return !cy->dra || !gs_kube_pod_dra(p) || gs_dracycle_pod_fits(&cy->dra->d, h->idx[pod], node);
}

/* A gang member's claims, side by side on node (core/cycle.h: copies). */
static int hook_copies(void *ctx, int pod, int node, int max)
{
    struct gs__hooks *h = ctx;
    struct gs__cycle *cy = h->cy;
    const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, h->idx[pod]);
    return !cy->dra || !gs_kube_pod_dra(p)
               ? max
               : gs_dracycle_pod_copies(&cy->dra->d, h->idx[pod], node, max);
}

/* ---------- stale claims ---------- */

struct by_uid {
    const char *uid;
    int pod; /* in the snapshot */
};

struct gone_ctx {
    struct gs_store *st;
    const struct gs_snapshot *sn;
    const struct by_uid *by_uid; /* snapshot pods sorted by uid */
    int n;
};

static int cmp_uid(const void *a, const void *b)
{
    return strcmp(((const struct by_uid *)a)->uid, ((const struct by_uid *)b)->uid);
}

/* Whether the pod a claim is reserved for is gone (gs_claims_release_stale): 0 it exists, 1
 * gone for sure (terminal, deleted before it was bound, seen deleted on the watch, a victim
 * of ours the store no longer holds), 2 the store does not hold it. */
static int pod_gone(void *ctx, const char *ns, const struct gs_draobj_reserved *r)
{
    const struct gone_ctx *g = ctx;
    if (r->resource[0] && strcmp(r->resource, "pods") != 0)
        return 0; /* not a pod: not ours to judge */
    int lo = 0, hi = g->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const struct gs_kube_pod *p = gs__snapshot_pod(g->sn, g->by_uid[mid].pod);
        int c = strcmp(p->uid, r->uid);
        if (c == 0) {
            bool terminal = strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0;
            return terminal || (p->terminating && !p->node[0]) ? 1 : 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    (void)ns;
    return gs__store_pod_gone(g->st, r->uid) ? 1 : 2;
}

/* Release the claims reserved only for pods that are gone: free in this cycle's DRA world,
 * their status writes left in cy->stale_writes for the output. Only with a complete list of
 * pods. */
static int release_stale_claims(struct gs__cycle *cy)
{
    const struct gs__cycle_deps *d = cy->d;
    if (d->dry || !gs__store_pods_synced(d->store) || !cy->dra)
        return 0;
    const struct gs_snapshot *sn = cy->sn;
    int np = gs__snapshot_npods(sn);
    struct by_uid *by_uid = malloc(sizeof(*by_uid) * ((size_t)np + 1));
    json_t *writes = json_array();
    if (!by_uid || !writes) {
        free(by_uid);
        json_decref(writes);
        return GS_ENOMEM;
    }
    for (int i = 0; i < np; i++)
        by_uid[i] = (struct by_uid){gs__snapshot_pod(sn, i)->uid, i};
    qsort(by_uid, (size_t)np, sizeof(*by_uid), cmp_uid);
    struct gone_ctx g = {d->store, sn, by_uid, np};
    int rc = gs_claims_release_stale(cy->dra, d->claims, pod_gone, &g, writes);
    cy->stale_writes = writes;
    free(by_uid);
    return rc < 0 ? rc : 0;
}

/* A node's id in a cycle's DRA world: its index in the snapshot. */
static int32_t dra_node_id(void *ctx, const char *node)
{
    return gs__snapshot_find_node(ctx, node);
}

/* A node's allocatable of an extended resource, for those DRA may serve. */
static int64_t node_allocatable(void *ctx, int32_t node, const char *res)
{
    const struct gs_kube_node *kn = gs__snapshot_node(ctx, node);
    for (int k = 0; kn && k < kn->nres; k++)
        if (strcmp(kn->res[k].name, res) == 0)
            return kn->res[k].value;
    return 0;
}

/* Bound pods' claimed devices count against their queues (gs_tenancy_build counted their
 * requests). */
static void charge_bound_claims(struct gs__cycle *cy)
{
    for (int v = 0; cy->dra && v < cy->ty.nrun; v++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, cy->ty.run_pod[v]);
        if (p->ndra == 0)
            continue;
        struct gs_qvec q;
        gs_claims_bound_demand(cy->dra, p->ns, p->dra, p->ndra, &cy->ty.t, &q);
        struct gs_running *r = &cy->ty.run[v];
        for (int x = 0; x < GS_QR_COUNT; x++)
            r->demand.v[x] += q.v[x];
        gs_tenants_charge(&cy->ty.t, r->queue, p->ns, &q, +1);
    }
}

/* ---------- a cycle's input ---------- */

int gs__cycle_take(struct gs__cycle *cy, const struct gs__cycle_deps *d)
{
    memset(cy, 0, sizeof(*cy));
    cy->d = d;
    int rc = d->policy ? gs_policy_feed_copy(d->policy, &cy->po) : 0;
    if (!rc && !(rc = gs__snapshot_new(d->store, &cy->po, &cy->sn)))
        cy->c = gs__snapshot_cluster(cy->sn);
    cy->now_wall = gs_clock_wall();
    cy->report = json_array();
    if (!rc && !cy->report)
        rc = GS_ENOMEM;
    if (rc)
        gs__cycle_release(cy);
    return rc;
}

void gs__cycle_release(struct gs__cycle *cy)
{
    if (cy->h) {
        free(cy->h->tc.vol_refused);
        free(cy->h->tc.cd_refused);
        free(cy->h->vol);
        free(cy->h->cd);
        free(cy->h->dra);
        free(cy->h->runclaim);
        free(cy->h);
    }
    free(cy->leaving);
    gs_kprep_free(cy->kp);
    gs_kstate_free(cy->ks);
    json_decref(cy->report);
    json_decref(cy->stale_writes);
    free(cy->cpods);
    free(cy->idx);
    free(cy->gangs);
    free(cy->gang_gated);
    free(cy->waits);
    gs_claims_cycle_release(&cy->dra_state);
    gs__topology_free(cy->topo);
    gs_volbind_free(cy->vb);
    free(cy->run_ns);
    free(cy->fixed);
    gs_tenancy_release(&cy->ty);
    gs_policy_objs_release(&cy->po);
    gs__snapshot_free(cy->sn);
    memset(cy, 0, sizeof(*cy));
}

int gs__cycle_run(struct gs__cycle *cy, struct gs_engine *(*engine)(void *ctx, int nodes),
                  void *ctx, struct gs_cycle_out *out)
{
    if (!(cy->in.e = engine(ctx, cy->c->nnodes)))
        return GS_ENOMEM;
    int rc = gs_cycle_run(&cy->in, out);
    hooks_settle(cy->h);
    return rc;
}

const int *gs__cycle_vol_refused(const struct gs__cycle *cy, int k)
{
    return &cy->h->vol[(size_t)k * GS_VOLR_COUNT];
}

const int *gs__cycle_cd_refused(const struct gs__cycle *cy, int k)
{
    return &cy->h->cd[(size_t)k * 2];
}

bool gs__cycle_dra_refused(const struct gs__cycle *cy, int k)
{
    return cy->h->dra[k];
}

/* DRA: the cycle's claims, stale reservations released, bound pods' claims charged, and the
 * running pods' claims for preemption. */
static int prepare_dra(struct gs__cycle *cy)
{
    if (!cy->d->claims)
        return 0;
    const struct gs_snapshot *sn = cy->sn;
    if (gs_claims_cycle_init(&cy->dra_state, cy->d->claims, gs__snapshot_npods(sn), dra_node_id,
                             cy->sn))
        return GS_ENOMEM;
    cy->dra = &cy->dra_state;
    gs_dracycle_set_alloc(&cy->dra_state.d, node_allocatable, cy->sn);
    if (release_stale_claims(cy))
        return GS_ENOMEM;
    charge_bound_claims(cy);
    struct gs__hooks *h = cy->h;
    h->runclaim = malloc(sizeof(int) * GS_MAX_POD_DRA * ((size_t)cy->ty.nrun + 1));
    if (!h->runclaim)
        return GS_ENOMEM;
    for (int v = 0; v < cy->ty.nrun; v++) {
        const struct gs_kube_pod *rp = gs__snapshot_pod(sn, cy->ty.run_pod[v]);
        for (int k = 0; k < GS_MAX_POD_DRA; k++)
            h->runclaim[(size_t)v * GS_MAX_POD_DRA + k] =
                k < rp->ndra && rp->dra[k][0] ? gs_claims_find(cy->dra, rp->ns, rp->dra[k]) : -1;
    }
    return 0;
}

/* The placed pods, for affinity, anti-affinity, spread and ports; the nodes pods are leaving. */
static void prepare_constraints(struct gs__cycle *cy)
{
    const struct gs_snapshot *sn = cy->sn;
    struct gs_cluster *c = cy->c;
    int np = gs__snapshot_npods(sn);
    if (gs_kstate_new(c, &cy->ks) == 0 && gs_kprep_new(&cy->kp) == 0) {
        for (int i = 0; i < np; i++) {
            const struct gs_kube_pod *bp = gs__snapshot_pod(sn, i);
            int n = bp->k && bp->node[0] ? gs__snapshot_find_node(sn, bp->node) : -1;
            if (n >= 0 && gs_kstate_add_pod(cy->ks, c, &bp->k->kp, n) < 0)
                break;
        }
    }
    cy->leaving = calloc((size_t)gs__snapshot_nnodes(sn) + 1, 1);
    for (int i = 0; cy->leaving && i < np; i++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, i);
        int n = p->terminating && p->node[0] ? gs__snapshot_find_node(sn, p->node) : -1;
        if (n >= 0)
            cy->leaving[n] = 1;
    }
    for (int v = 0; v < cy->ty.nrun; v++)
        cy->run_ns[v] = gs__snapshot_pod(sn, cy->ty.run_pod[v])->ns;
}

/* Set pod i aside: it waits, and says why (when due). Returns 0 or GS_ENOMEM. */
static int add_wait(struct gs__cycle *cy, int i, int queue, const char *category, const char *msg,
                    bool gated)
{
    if (cy->nwaits == cy->capwaits) {
        void *v = gs_grow(cy->waits, &cy->capwaits, sizeof(*cy->waits), 16);
        if (!v)
            return GS_ENOMEM;
        cy->waits = v;
    }
    struct gs__wait *w = &cy->waits[cy->nwaits++];
    w->pod = i;
    w->queue = queue;
    w->category = category;
    w->gated = gated;
    snprintf(w->msg, sizeof(w->msg), "%s", msg);
    return 0;
}

/* Why pending pod i cannot go anywhere whatever the cycle does (NULL: it may be placed), in
 * msg; its DRA claims prepared, what they count for in claimed. GS_ENOMEM in *rc. */
static const char *pod_blocked(struct gs__cycle *cy, int i, char *msg, size_t n,
                               struct gs_qvec *claimed, int *rc)
{
    const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, i);
    int queue = cy->ty.pod_queue[i], g = cy->ty.pod_gang[i];
    const char *qlabel = gs_kube_pod_label(p, GS_QUEUE_LABEL);
    const char *gl = gs_kube_pod_label(p, GS_POD_GROUP_LABEL);
    char why[400];
    struct gs_volpod vp;
    gs_qvec_zero(claimed);
    if (p->unreadable) {
        snprintf(msg, n, "request: %s", p->refused);
        return "request";
    }
    if (qlabel && queue < 0) {
        snprintf(msg, n, "queue: the label %s names GPUQueue '%s', which does not exist",
                 GS_QUEUE_LABEL, qlabel);
        return "quota";
    }
    /* spec.schedulingGroup (the Workload API) is read over the label (the CRD) */
    if (p->group[0] && gs_policy_group_refusal(&cy->po, p, msg, n))
        return "gang";
    if (!p->group[0] && gl && g < 0) {
        snprintf(msg, n, "gang: PodGroup %s/%s (label %s) does not exist", p->ns, gl,
                 GS_POD_GROUP_LABEL);
        return "gang";
    }
    const char *tcat = g >= 0 ? gs__topology_blocked(cy->topo, g, msg, n)
                              : gs__topology_pod_blocked(cy->topo, i, msg, n);
    if (tcat)
        return tcat;
    if (p->k_error[0] || p->refused[0]) {
        snprintf(msg, n, "constraints: %s", p->refused[0] ? p->refused : p->k_error);
        return "constraints";
    }
    if (gs__cycle_pod_volumes(cy, p, &vp, why, sizeof(why))) {
        snprintf(msg, n, "%svolumes: %s", g >= 0 ? "gang member: " : "", why);
        return "constraints";
    }
    if (!gs_kube_pod_dra(p) || (!cy->dra && p->ndra <= 0))
        return NULL; /* (extended resources without DRA: the device plugins') */
    int dr =
        cy->dra ? gs_claims_pod_prepare(cy->dra, i, p, &cy->ty.t, claimed, why, sizeof(why)) : 1;
    if (dr < 0) {
        *rc = dr;
        return "error";
    }
    if (!dr)
        return NULL;
    snprintf(msg, n, "dra: %s", cy->dra ? why : "the scheduler does not read ResourceClaims");
    return "dra";
}

/* The pending pods of ours into the cycle; those whose objects say they cannot go anywhere
 * wait here. */
static int prepare_pods(struct gs__cycle *cy)
{
    const struct gs__cycle_deps *d = cy->d;
    struct gs_snapshot *sn = cy->sn;
    double t = cy->t0;
    for (int i = 0, np = gs__snapshot_npods(sn); i < np; i++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, i);
        int g = cy->ty.pod_gang[i];
        if (p->node[0] || p->terminating) {
            if (g >= 0 && p->node[0] && !p->terminating)
                cy->gangs[g].running++;
            continue;
        }
        if (strcmp(p->scheduler, d->scheduler_name) != 0)
            continue;
        cy->waiting++;
        if (p->ngates > 0) {
            /* kube-scheduler's SchedulingGates PreEnqueue: not even queued; its gang counts
             * it as gated, not as a member */
            char msg[GS_POD_GATES_TEXT + 64];
            snprintf(msg, sizeof(msg), "waiting for scheduling gates: [%s]", p->gates);
            if (g >= 0)
                cy->gang_gated[g]++;
            if (add_wait(cy, i, cy->ty.pod_queue[i], "gated", msg, true))
                return GS_ENOMEM;
            continue;
        }
        /* a nomination written before a restart (status.nominatedNodeName): adopted once, as
         * if made now */
        if (!d->dry && gs__snapshot_pod_adopt(sn, i, t))
            gs__store_adopt(d->store, p->ns, p->name, p->nominated, t);
        bool live = !d->dry && nomination_live(cy, i);
        bool due = d->dry || gs__snapshot_pod_due(sn, i, t);
        if (!due && !live && g < 0)
            continue;
        int queue = cy->ty.pod_queue[i], rc = 0;
        char msg[1400];
        struct gs_qvec claimed;
        const char *cat = pod_blocked(cy, i, msg, sizeof(msg), &claimed, &rc);
        if (rc)
            return rc;
        if (cat) {
            if (due && add_wait(cy, i, queue, cat, msg, false))
                return GS_ENOMEM;
            continue;
        }
        struct gs_cyc_pod *x = &cy->cpods[cy->ncp];
        cy->idx[cy->ncp++] = i;
        x->req = p->req;
        x->priority = p->priority;
        x->queue = queue;
        x->gang = g;
        x->ns = p->ns;
        x->seq = gs__snapshot_pod_seq(sn, i);
        x->nominated = live ? gs__snapshot_find_node(sn, gs__snapshot_pod_nominated(sn, i)) : -1;
        x->nomination_live = live;
        x->preempt_never = p->preempt_never;
        x->due = due;
        x->claimed = claimed;
    }
    for (int g = 0; g < cy->po.ngroups; g++) {
        cy->gangs[g].min_member = cy->po.groups[g].min_member;
        cy->gangs[g].topo = gs__topology_ask(cy->topo, g);
        cy->gangs[g].domains = gs__topology_domains(cy->topo, g);
    }
    return 0;
}

/* Small work's steering (core/cycle.h: in->topo with shapes): the shapes of this cycle's gangs
 * that ask a level (their pending members' whole GPUs, weighted by them), on the domains of the
 * first such gang; pods outside those gangs then keep out of the domains the gangs need. They
 * are waiting shapes (core/topo.h): a gang that no domain holds yet waits for one whose pods
 * end, so every domain big enough is kept, not only those with the room free now.
 * NULL: no gang asks a level (every decision as without topology). */
static struct gs_topo *steering(struct gs__cycle *cy)
{
    struct gs_topo *t = NULL;
    int ng = cy->po.ngroups;
    for (int g = 0; g < ng && !t; g++)
        if (cy->gangs[g].topo.mode != GS_TOPO_ANY)
            t = cy->gangs[g].domains;
    int32_t *gpus = t ? calloc((size_t)ng, sizeof(*gpus)) : NULL;
    if (!gpus)
        return NULL;
    for (int i = 0; i < cy->ncp; i++) {
        const struct gs_cyc_pod *x = &cy->cpods[i];
        if (x->gang >= 0 && x->gang < ng && x->req.kind == GS_REQ_GPU && x->req.milli >= GS_MILLI)
            gpus[x->gang] += x->req.gpus;
    }
    double tot = 0;
    for (int g = 0; g < ng; g++)
        if (cy->gangs[g].topo.mode != GS_TOPO_ANY && cy->gangs[g].domains == t)
            tot += gpus[g];
    t->nshapes = 0;
    for (int g = 0; g < ng && tot > 0 && t->nshapes < GS_TOPO_SHAPES_MAX; g++)
        if (cy->gangs[g].topo.mode != GS_TOPO_ANY && cy->gangs[g].domains == t && gpus[g] > 0)
            t->shapes[t->nshapes++] = (struct gs_topo_shape){.gpus = gpus[g],
                                                             .level = cy->gangs[g].topo.level,
                                                             .waiting = true,
                                                             .freq = gpus[g] / tot};
    free(gpus);
    return t->nshapes > 0 ? t : NULL;
}

int gs__cycle_prepare(struct gs__cycle *cy)
{
    const struct gs__cycle_deps *d = cy->d;
    struct gs_snapshot *sn = cy->sn;
    int np = gs__snapshot_npods(sn);
    cy->t0 = gs_clock_mono();
    /* pods we evicted that the watch still shows are as good as gone */
    gs__store_evicted_prune(d->store);
    gs__snapshot_mark_evicted(sn, d->store);
    size_t anp = np > 0 ? (size_t)np : 1;
    cy->cpods = calloc(anp, sizeof(*cy->cpods));
    cy->idx = calloc(anp, sizeof(int));
    cy->gangs = calloc((size_t)cy->po.ngroups + 1, sizeof(*cy->gangs));
    cy->gang_gated = calloc((size_t)cy->po.ngroups + 1, sizeof(int));
    cy->h = calloc(1, sizeof(*cy->h));
    if (!cy->cpods || !cy->idx || !cy->gangs || !cy->gang_gated || !cy->h)
        return GS_ENOMEM;
    *cy->h = (struct gs__hooks){.cy = cy,
                                .cur = -1,
                                .idx = cy->idx,
                                .vol = calloc(anp * GS_VOLR_COUNT, sizeof(int)),
                                .cd = calloc(anp * 2, sizeof(int)),
                                .dra = calloc(anp, sizeof(bool))};
    if (!cy->h->vol || !cy->h->cd || !cy->h->dra || gs__snapshot_tenancy(sn, &cy->po, &cy->ty) ||
        !(cy->vb = gs_volbind_new(&cy->po.st, sn, d->vols)) ||
        !(cy->run_ns = calloc((size_t)cy->ty.nrun + 1, sizeof(*cy->run_ns))))
        return GS_ENOMEM;
    int rc = prepare_dra(cy);
    if (rc || (rc = gs__topology_new(&cy->po, d->topo_flag, sn, &cy->ty, cy->c, cy->dra,
                                     d->scheduler_name, &cy->topo)))
        return rc;
    prepare_constraints(cy);
    if ((rc = prepare_pods(cy)))
        return rc;
    /* only a gpusched agent applies a re-carve: GPUs of nodes without its inventory keep
     * their layout */
    struct gs_cluster *c = cy->c;
    cy->fixed = calloc((size_t)c->ngpus + 1, 1);
    if (!cy->fixed)
        return GS_ENOMEM;
    for (int n = 0; n < gs__snapshot_nnodes(sn) && n < c->nnodes; n++)
        if (!gs__snapshot_node(sn, n)->inv)
            memset(cy->fixed + c->nodes[n].gpu0, 1, (size_t)c->nodes[n].ngpus);
    struct gs__hooks *h = cy->h;
    cy->in = (struct gs_cycle_in){
        .c = c,
        .t = &cy->ty.t,
        .pods = cy->cpods,
        .npods = cy->ncp,
        .gangs = cy->gangs,
        .ngangs = cy->po.ngroups,
        .run = cy->ty.run,
        .nrun = cy->ty.nrun,
        .run_ns = cy->run_ns,
        .pdb_allowed = cy->ty.pdb_allowed,
        .npdb = cy->ty.npdb,
        .busy = gs__snapshot_gpus_busy(sn),
        .fixed = cy->fixed,
        .changed_s = gs__snapshot_gpus_changed(sn),
        .now_s = cy->now_wall,
        .o = {.preempt = true,
              .recarve = d->dynamic_mig,
              .hold_s = d->recarve_hold_s,
              .min_runtime_s = d->min_runtime_s},
        .h = {hook_prepare, hook_allows, hook_placed, h->runclaim ? hook_give : NULL,
              h->runclaim ? hook_fits : NULL, h, cy->dra ? hook_copies : NULL},
        .topo = steering(cy)};
    return 0;
}
