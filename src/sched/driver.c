/* driver.c - the live scheduler's scheduling cycle (sched/driver.h): a snapshot of the store
 * (sched/snapshot.c) and the tenancy objects (sched/tenancy.c) in, the engine (core/engine.c,
 * core/gang.c, core/preempt.c, core/constraints.c) deciding, and the decisions applied as
 * assumed binds in the store and writes queued on the binder (sched/binder.c). */
#include "driver.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "../base/log.h"
#include "../core/cycle.h"
#include "../formats/decision.h"
#include "../formats/migdesired.h"
#include "binder.h"
#include "claims.h"
#include "metrics.h"
#include "sched_internal.h"
#include "snapshot.h"
#include "tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A cycle's shared state. */
struct cycle {
    struct gs_sched *s;
    struct gs_snapshot *sn;
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
    /* DRA: the claims of the pods placed in this cycle (NULL: no feed) */
    struct gs_claims_cycle *dra;
};

static void report(struct cycle *cy, const struct gs_kube_pod *p, int queue, const char *category,
                   const char *msg)
{
    json_array_append_new(
        cy->report, json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "namespace", p->ns, "pod", p->name,
                              "queue", queue >= 0 ? cy->ty.t.q[queue].name : "", "priority",
                              (int)p->priority, "reason", category, "message", msg));
}

/* FailedScheduling: an Event, the PodScheduled condition and a backoff. */
static void unschedulable(struct cycle *cy, const struct gs_kube_pod *p, int queue,
                          const char *category, const char *msg, double t0)
{
    struct gs_sched *s = cy->s;
    report(cy, p, queue, category, msg);
    if (s->dry)
        return;
    gs__metrics_record_latency(s, gs_clock_mono() - t0, 1);
    gs__binder_emit_event(s, p, "Warning", "FailedScheduling", "Scheduling", msg);
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->ns, p->name);
    gs__binder_write_later(s, "PATCH", path, "application/strategic-merge-patch+json",
                           gs_kube_unschedulable_patch(msg));
    GS_INFO("scheduler", "%s/%s unschedulable (%s): %s", p->ns, p->name, category, msg);
    gs__binder_backoff_pod(s, p, 0);
}

/* Assume the pod on the node now; a binder thread tells the API server. */
static int assume_and_bind(struct cycle *cy, const struct gs_kube_pod *p, const struct gs_alloc *a,
                           double t0, json_t *claim_writes)
{
    struct gs_sched *s = cy->s;
    struct gs_store *st = &s->st;
    struct gs_job j;
    memset(&j, 0, sizeof(j));
    j.kind = GS_JOB_BIND;
    j.pod = *p;
    j.pod.k = NULL; /* a copy without a reference */
    j.t0 = t0;
    snprintf(j.node, sizeof(j.node), "%s", cy->c->nodes[a->node].name);
    if (p->req.kind != GS_REQ_NONE)
        gs_kube_devices_str(cy->c, a, j.devices, sizeof(j.devices));
    snprintf(j.path, sizeof(j.path), "/api/v1/namespaces/%s/pods/%s/binding", p->ns, p->name);
    j.body = claim_writes; /* the claims' status, written before the Binding */
    if (s->dry) {
        json_decref(claim_writes);
        char msg[600];
        snprintf(msg, sizeof(msg), "fits: would bind to %s%s%s", j.node, j.devices[0] ? " " : "",
                 j.devices);
        report(cy, p, -1, "fits", msg);
        return 0;
    }
    pthread_mutex_lock(&st->mu);
    int i = gs__store_find_pod(st, p->ns, p->name);
    if (i >= 0 && strcmp(st->pods[i].p.uid, p->uid) == 0 && !st->pods[i].p.node[0]) {
        snprintf(st->pods[i].p.node, sizeof(st->pods[i].p.node), "%s", j.node);
        snprintf(st->pods[i].p.devices, sizeof(st->pods[i].p.devices), "%s", j.devices);
        st->pods[i].assumed = true;
        st->pods[i].nominated[0] = '\0';
    }
    pthread_mutex_unlock(&st->mu);
    if (!gs__binder_bind(s, &j)) {
        /* cannot happen with the queue sized to the pending pods; undo */
        json_decref(claim_writes);
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
    int pod;             /* the snapshot's index of p, for its DRA claims (-1: none) */
    bool *dra_refused;   /* set when a node was refused for its claims (or NULL) */
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
 * a waiting preemptor does not evict a second set; and while a GPU of the node is being
 * re-carved. */
static bool nomination_live(const struct cycle *cy, const struct gs_store_pod *e)
{
    if (!e->nominated[0])
        return false;
    int node = gs__snapshot_find_node(cy->sn, e->nominated);
    if (node >= 0 && cy->sn->node_busy && cy->sn->node_busy[node])
        return true; /* a GPU there is being re-carved, for it or another pod */
    double age = gs_clock_mono() - e->nominated_at;
    if (age < 30)
        return true;
    return age <= 300 && node >= 0 && cy->leaving && cy->leaving[node];
}

/* Evict running pod v (an index into cy->ty.run) for p: DisruptionTarget, delete with the UID
 * precondition, Events; its name is appended to names. The cycle already took it off the
 * cluster and its queue. */
static void evict(struct cycle *cy, const struct gs_kube_pod *p, int queue, int v, char *names,
                  size_t size)
{
    struct gs_sched *s = cy->s;
    struct gs_snapshot *sn = cy->sn;
    int vp = cy->ty.run_pod[v];
    const struct gs_kube_pod *vpod = &sn->pods[vp].p;
    const char *node = vpod->node;
    size_t off = strlen(names);
    if (off < size - 1)
        snprintf(names + off, size - off, "%s%s/%s", off ? ", " : "", vpod->ns, vpod->name);
    if (s->dry)
        return;
    pthread_mutex_lock(&s->mmu);
    int slot = s->nevicted < GS_EVICTED_MAX ? s->nevicted++ : (int)(s->victims % GS_EVICTED_MAX);
    snprintf(s->evicted[slot], sizeof(s->evicted[slot]), "%s", vpod->uid);
    s->evicted_at[slot] = gs_clock_mono();
    pthread_mutex_unlock(&s->mmu);
    char msg[800], path[600];
    snprintf(msg, sizeof(msg), "Preempted by %s/%s (priority %d%s%s) on node %s", p->ns, p->name,
             (int)p->priority, queue >= 0 ? ", queue " : "",
             queue >= 0 ? cy->ty.t.q[queue].name : "", node);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", vpod->ns, vpod->name);
    gs__binder_write_later(s, "PATCH", path, "application/strategic-merge-patch+json",
                           gs_kube_disruption_patch(msg));
    gs__binder_emit_event(s, vpod, "Normal", "Preempted", "Preempting", msg);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", vpod->ns, vpod->name);
    gs__binder_write_later(s, "DELETE", path, NULL, gs_kube_delete_options(vpod->uid, -1));
}

/* Hold devices a for p (the cycle holds them on the cluster) and nominate its node
 * (nominatedNodeName; an Event with reason, and /debug/pending, say msg) while its victims
 * terminate or its GPU is re-carved. A pod already nominated there only gets the report. */
static void nominate(struct cycle *cy, const struct gs_store_pod *e, int queue,
                     const struct gs_alloc *a, const char *reason, const char *msg)
{
    struct gs_sched *s = cy->s;
    const struct gs_kube_pod *p = &e->p;
    const char *node = cy->c->nodes[a->node].name;
    report(cy, p, queue, "preempting", msg);
    if (s->dry)
        return;
    bool recarving = strcmp(reason, "Recarving") == 0;
    /* the store's entry says whether this is news (the snapshot's copy may have adopted a
     * nomination read back after a restart) */
    pthread_mutex_lock(&s->st.mu);
    int i = gs__store_find_pod(&s->st, p->ns, p->name);
    bool again = i >= 0 && strcmp(s->st.pods[i].nominated, node) == 0;
    if (i >= 0) {
        snprintf(s->st.pods[i].nominated, sizeof(s->st.pods[i].nominated), "%s", node);
        /* a hold while a GPU is re-carved keeps the nomination fresh: once the change is
         * done, the kubelet has 30 s to advertise the new device before the pod looks
         * elsewhere */
        if (!again || recarving)
            s->st.pods[i].nominated_at = gs_clock_mono();
        s->st.pods[i].next_try = gs_clock_mono() + 0.25;
    }
    pthread_mutex_unlock(&s->st.mu);
    if (again && strcmp(p->nominated, node) == 0)
        return;
    GS_INFO("scheduler", "%s/%s: %s", p->ns, p->name, msg);
    gs__binder_emit_event(s, p, "Normal", reason, reason, msg);
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->ns, p->name);
    gs__binder_write_later(s, "PATCH", path, "application/strategic-merge-patch+json",
                           gs_kube_nominated_patch(node, msg));
}

static void count_preemption(struct gs_sched *s, int victims, double gpu_hours)
{
    pthread_mutex_lock(&s->mmu);
    s->preemptions++;
    s->victims += (uint64_t)victims;
    s->lost_gpu_hours += gpu_hours;
    pthread_mutex_unlock(&s->mmu);
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
    bool vol = false, ok = gs__snapshot_resources_fit(t->cy->sn, node, t->p, NULL, 0);
    if (ok && t->npvs > 0 && !volumes_fit(t, node))
        ok = false, vol = true;
    if (ok && t->p->ndra > 0 && t->cy->dra && !gs_claims_pod_fits(t->cy->dra, t->pod, node)) {
        ok = false;
        if (t->dra_refused)
            *t->dra_refused = true;
    }
    if (t->vol_refused)
        t->vol_refused[node] = vol;
    return ok;
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

/* The tenancy objects as last listed. Returns false without memory (cp is then empty). */
static bool copy_policy(struct gs_sched *s, struct gs_policy_objs *cp)
{
    pthread_mutex_lock(&s->pmu);
    int rc = gs_policy_objs_copy(cp, &s->po);
    pthread_mutex_unlock(&s->pmu);
    return rc == 0;
}

/* The cycle's hooks (core/cycle.h): one pending pod's taints, Kubernetes constraints, bound
 * volumes and further resources, prepared when the cycle asks. */
struct hooks {
    struct cycle *cy;
    const int *idx; /* cycle pod -> snapshot pod */
    int cur;        /* the pod prepared, or -1 */
    const struct gs_kube_pv *pvs[GS_MAX_POD_CLAIMS];
    struct tol_ctx tc;
    bool kprepared;
    int *vol;  /* per cycle pod: nodes refused for a volume's node affinity */
    bool *dra; /* per cycle pod: a node was refused for its DRA claims */
    /* per running pod (cy->ty.run) x GS_MAX_POD_DRA: its claims' indices in the DRA view
     * (-1: none), for preemption; NULL without DRA */
    int *runclaim;
};

static void hooks_settle(struct hooks *h)
{
    if (h->cur >= 0 && h->tc.vol_refused) {
        for (int i = 0; i < h->cy->c->nnodes; i++)
            h->vol[h->cur] += h->tc.vol_refused[i];
    }
    free(h->tc.vol_refused);
    h->tc.vol_refused = NULL;
    h->cur = -1;
}

static int hook_prepare(void *ctx, int pod, struct gs_kplace *k)
{
    struct hooks *h = ctx;
    struct cycle *cy = h->cy;
    hooks_settle(h);
    const struct gs_kube_pod *p = &cy->sn->pods[h->idx[pod]].p;
    char why[300];
    int npvs = 0;
    if (pod_volumes(cy, p, h->pvs, &npvs, why, sizeof(why)))
        npvs = 0; /* checked before the cycle */
    h->cur = pod;
    h->tc = (struct tol_ctx){cy,
                             p,
                             h->pvs,
                             npvs,
                             npvs > 0 ? calloc((size_t)cy->c->nnodes + 1, 1) : NULL,
                             h->idx[pod],
                             &h->dra[pod]};
    *k = (struct gs_kplace){.tol = cy->sn->tainted ? tolerates_node : NULL,
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
    struct hooks *h = ctx;
    struct cycle *cy = h->cy;
    if (h->cur != pod) {
        struct gs_kplace k;
        hook_prepare(ctx, pod, &k);
    }
    const struct gs_kube_pod *p = h->tc.p;
    struct tol_ctx t = h->tc;
    t.vol_refused = NULL;
    if (h->runclaim && p->req.kind == GS_REQ_NONE && cy->ty.pod_gang[h->idx[pod]] < 0) {
        t.pod = -1; /* claims apart */
        t.dra_refused = NULL;
    }
    if ((cy->sn->tainted && !gs_kube_tolerates(p, &cy->sn->nodes[node])) ||
        !node_has_room(&t, node))
        return false;
    if (!h->kprepared || gs_kprep_trivial(cy->kp))
        return true;
    enum gs_kverdict v = gs_kprep_filter(cy->kp, cy->ks, cy->c, node);
    return v == GS_KFIT || (v == GS_KNO_NODE_AFFINITY && !p->k->kp.has_required && !p->sel_partial);
}

static void hook_placed(void *ctx, int pod, int node)
{
    struct hooks *h = ctx;
    struct cycle *cy = h->cy;
    const struct gs_kube_pod *p = &cy->sn->pods[h->idx[pod]].p;
    if (cy->ks && p->k)
        gs_kstate_add_pod(cy->ks, cy->c, &p->k->kp, node);
    gs__snapshot_count_resources(cy->sn, node, p);
    if (cy->dra && p->ndra > 0 && gs_claims_pod_place(cy->dra, h->idx[pod], node))
        GS_WARN("scheduler", "%s/%s: its claims no longer fit node %s", p->ns, p->name,
                cy->c->nodes[node].name);
}

/* Preemption of DRA claims (core/cycle.h): running pod v's claimed devices given back or
 * taken again in the cycle's DRA state; whether pod's claims can be allocated on node now. */
static void hook_give(void *ctx, int v, bool gone)
{
    struct hooks *h = ctx;
    for (int k = 0; h->runclaim && k < GS_MAX_POD_DRA; k++)
        gs_claims_hold(h->cy->dra, h->runclaim[(size_t)v * GS_MAX_POD_DRA + k], !gone);
}

static bool hook_fits(void *ctx, int pod, int node)
{
    struct hooks *h = ctx;
    struct cycle *cy = h->cy;
    const struct gs_kube_pod *p = &cy->sn->pods[h->idx[pod]].p;
    return !cy->dra || p->ndra == 0 || gs_claims_pod_fits(cy->dra, h->idx[pod], node);
}

/* ---------- stale claims ---------- */

struct by_uid {
    const char *uid;
    int pod; /* in the snapshot */
};

struct gone_ctx {
    struct gs_sched *s;
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
        const struct gs_kube_pod *p = &g->sn->pods[g->by_uid[mid].pod].p;
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
    struct gs_sched *s = g->s;
    pthread_mutex_lock(&s->st.mu);
    int sure = gs__store_pod_gone(&s->st, r->uid);
    pthread_mutex_unlock(&s->st.mu);
    pthread_mutex_lock(&s->mmu);
    for (int k = 0; k < s->nevicted && !sure; k++)
        sure = strcmp(s->evicted[k], r->uid) == 0;
    pthread_mutex_unlock(&s->mmu);
    return sure ? 1 : 2;
}

/* Release the claims reserved only for pods that are gone: free in this cycle's DRA world,
 * their status written in the background. Only with a complete list of pods. */
static int release_stale_claims(struct cycle *cy)
{
    struct gs_sched *s = cy->s;
    pthread_mutex_lock(&s->st.mu);
    bool synced = s->st.pods_synced;
    pthread_mutex_unlock(&s->st.mu);
    if (s->dry || !synced || !cy->dra)
        return 0;
    const struct gs_snapshot *sn = cy->sn;
    struct by_uid *by_uid = malloc(sizeof(*by_uid) * ((size_t)sn->np + 1));
    json_t *writes = json_array();
    if (!by_uid || !writes) {
        free(by_uid);
        json_decref(writes);
        return GS_ENOMEM;
    }
    for (int i = 0; i < sn->np; i++)
        by_uid[i] = (struct by_uid){sn->pods[i].p.uid, i};
    qsort(by_uid, (size_t)sn->np, sizeof(*by_uid), cmp_uid);
    struct gone_ctx g = {s, sn, by_uid, sn->np};
    int rc = gs_claims_release_stale(cy->dra, s->claims, pod_gone, &g, writes);
    size_t wi;
    json_t *w;
    json_array_foreach(writes, wi, w)
    {
        gs__binder_write_later(s, "PATCH", json_string_value(json_object_get(w, "path")),
                               "application/merge-patch+json",
                               json_incref(json_object_get(w, "body")));
    }
    json_decref(writes);
    free(by_uid);
    return rc < 0 ? rc : 0;
}

/* Remember a layout asked for a node's GPU (the oldest note gives way). */
static void note_recarve(struct gs_sched *s, const char *node, int gpu, int64_t gen,
                         const struct gs_mig_desired_gpu *want)
{
    int k = 0;
    for (; k < s->nnotes; k++)
        if (strcmp(s->notes[k].node, node) == 0 && s->notes[k].gpu == gpu)
            break;
    if (k == s->nnotes && s->nnotes < GS_RECARVE_NOTES)
        s->nnotes++;
    if (k == GS_RECARVE_NOTES) {
        k = 0;
        for (int j = 1; j < s->nnotes; j++)
            if (s->notes[j].at_mono < s->notes[k].at_mono)
                k = j;
    }
    struct gs__recarve_note *x = &s->notes[k];
    snprintf(x->node, sizeof(x->node), "%s", node);
    x->gpu = gpu;
    x->generation = gen;
    x->at_wall = gs_clock_wall();
    x->at_mono = gs_clock_mono();
    x->want = *want;
}

/* The notes in the snapshot: a GPU changed lately keeps its change time (hysteresis); one
 * whose change the Node does not show yet (the watch lags the write) is busy. Notes older
 * than the hold time, or than 2 minutes once the Node shows them, are dropped. */
static void apply_notes(struct gs_snapshot *sn, struct gs_sched *s)
{
    double now = gs_clock_mono();
    for (int k = 0; k < s->nnotes; k++) {
        struct gs__recarve_note *x = &s->notes[k];
        int node = gs__snapshot_find_node(sn, x->node);
        const struct gs_kube_node *kn = node >= 0 ? &sn->nodes[node] : NULL;
        int64_t seen = kn && kn->desired ? kn->desired->generation : 0;
        if (kn && kn->inv && kn->inv->generation > seen)
            seen = kn->inv->generation;
        if (!kn || (now - x->at_mono > s->o.recarve_hold_s &&
                    (seen >= x->generation || now - x->at_mono > 120))) {
            s->notes[k--] = s->notes[--s->nnotes];
            continue;
        }
        const struct gs_node *n = &sn->c.nodes[node];
        if (x->gpu < 0 || x->gpu >= n->ngpus)
            continue;
        sn->changed_s[n->gpu0 + x->gpu] = x->at_wall;
        if (seen < x->generation && now - x->at_mono < 120) {
            sn->busy[n->gpu0 + x->gpu] = 1;
            sn->node_busy[node] = 1;
        }
    }
}

/* Victims chosen for one pod (or gang) so far in the decisions: for its message. */
struct victims {
    int owner; /* the pod (cycle index), or -2 - gang */
    int n;
    double gpu_hours;
    char names[1024];
};

/* A GPU's layout as the node's inventory reports it: "whole", "1g.10gb@0,1g.10gb@1,...",
 * or "unknown" without an inventory entry for it. */
static void inventory_layout(const struct gs_inventory *inv, int index, char *out, size_t n)
{
    snprintf(out, n, "unknown");
    for (int k = 0; inv && k < inv->ngpus; k++) {
        const struct gs_inv_gpu *g = &inv->gpus[k];
        if (g->index != index)
            continue;
        snprintf(out, n, "%s", g->mode == GS_GPU_MIG ? "" : "whole");
        for (int i = 0; g->mode == GS_GPU_MIG && i < g->ninst; i++)
            snprintf(out + strlen(out), n - strlen(out), "%s%s@%d", i ? "," : "",
                     g->inst[i].profile, (int)g->inst[i].start);
    }
}

/* The dashboard's record of one preemption: the preemptor, its node, its victims. */
static void journal_preemption(struct gs_sched *s, const struct gs_kube_pod *p, const char *node,
                               bool recarving, const struct victims *v)
{
    json_t *names = json_array();
    for (const char *a = v->names; names && *a;) {
        const char *b = strstr(a, ", ");
        size_t len = b ? (size_t)(b - a) : strlen(a);
        json_array_append_new(names, json_stringn(a, len));
        a = b ? b + 2 : a + len;
    }
    gs__journal_add(&s->journal, "preempt",
                    json_pack("{s:s, s:s, s:s, s:i, s:o*, s:f, s:b}", "namespace", p->ns, "pod",
                              p->name, "node", node, "priority", (int)p->priority, "victims", names,
                              "gpu_hours", v->gpu_hours, "recarving", recarving));
}

/* Write the new layouts the cycle chose for one node's GPUs (REPARTITION decisions
 * d[from..to)) as its gpusched.io/mig-desired, GPUs whose earlier change is still pending
 * kept, with the next generation; remember it until the watch shows it. */
static void write_desired(struct cycle *cy, const struct gs_cycle_out *out, int from, int to)
{
    struct gs_sched *s = cy->s;
    int node = out->d[from].node;
    const struct gs_kube_node *kn = &cy->sn->nodes[node];
    const struct gs_node *n = &cy->c->nodes[node];
    struct gs_mig_desired d;
    gs__snapshot_pending_desired(cy->sn, node, &d);
    d.version = GS_MIG_DESIRED_VERSION;
    int64_t gen = d.generation;
    /* what this daemon asked lately that the Node does not show yet stays asked */
    int64_t shown = kn->desired ? kn->desired->generation : 0;
    for (int k = 0; k < s->nnotes; k++) {
        const struct gs__recarve_note *x = &s->notes[k];
        if (strcmp(x->node, kn->name) != 0 || x->generation <= shown)
            continue;
        if (x->generation > gen)
            gen = x->generation;
        int j = 0;
        while (j < d.ngpus && d.gpus[j].index != x->gpu)
            j++;
        if (j == d.ngpus && d.ngpus < GS_MAX_GPUS_NODE)
            d.ngpus++;
        if (j < d.ngpus)
            d.gpus[j] = x->want;
    }
    for (int a = 1; a < d.ngpus; a++) /* index order */
        for (int b = a; b > 0 && d.gpus[b - 1].index > d.gpus[b].index; b--) {
            struct gs_mig_desired_gpu tmp = d.gpus[b];
            d.gpus[b] = d.gpus[b - 1];
            d.gpus[b - 1] = tmp;
        }
    if (kn->inv && kn->inv->generation > gen)
        gen = kn->inv->generation;
    if (kn->desired && kn->desired->generation > gen)
        gen = kn->desired->generation;
    d.generation = gen + 1;
    char what[400] = "";
    json_t *events = s->dry ? NULL : json_array();
    for (int k = from; k < to; k++) {
        const struct gs_cyc_decision *x = &out->d[k];
        int index = x->gpu - n->gpu0;
        struct gs_mig_desired_gpu *g = NULL;
        for (int j = 0; j < d.ngpus && !g; j++)
            if (d.gpus[j].index == index)
                g = &d.gpus[j];
        if (!g && d.ngpus < GS_MAX_GPUS_NODE) {
            int j = d.ngpus++;
            while (j > 0 && d.gpus[j - 1].index > index) {
                d.gpus[j] = d.gpus[j - 1];
                j--;
            }
            g = &d.gpus[j];
        }
        if (!g)
            continue;
        memset(g, 0, sizeof(*g));
        g->index = index;
        g->whole = x->mode != GS_GPU_MIG;
        const struct gs_gpu_model *m = gs_catalog_get(cy->c->gpus[x->gpu].model);
        const struct gs_mig_placement pl = x->layout; /* by start */
        for (int i = 0; !g->whole && i < pl.n && i < GS_INV_MAX_INST; i++) {
            snprintf(g->inst[i].profile, sizeof(g->inst[i].profile), "%s",
                     m->profiles[pl.inst[i].profile].name);
            g->inst[i].start = pl.inst[i].start;
            g->ninst++;
        }
        size_t o = strlen(what);
        char lay[160] = "";
        if (g->whole)
            snprintf(lay, sizeof(lay), "whole");
        for (int i = 0; i < g->ninst; i++)
            snprintf(lay + strlen(lay), sizeof(lay) - strlen(lay), "%s%s@%d", i ? "," : "",
                     g->inst[i].profile, g->inst[i].start);
        snprintf(what + o, sizeof(what) - o, "%sGPU %d -> %s", o ? "; " : "", index, lay);
        note_recarve(s, kn->name, index, d.generation, g);
        if (events) {
            char was[160];
            inventory_layout(kn->inv, index, was, sizeof(was));
            json_array_append_new(events, json_pack("{s:s, s:i, s:s, s:s, s:I}", "node", kn->name,
                                                    "gpu", index, "from", was, "to", lay,
                                                    "generation", (json_int_t)d.generation));
        }
    }
    GS_INFO("scheduler", "node %s: re-carving (generation %lld): %s", kn->name,
            (long long)d.generation, what);
    if (s->dry)
        return;
    size_t ei;
    json_t *ev;
    json_array_foreach(events, ei, ev)
    {
        gs__journal_add(&s->journal, "recarve", json_incref(ev));
    }
    json_decref(events);
    char *text = gs_mig_desired_write(&d);
    if (!text)
        return;
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", kn->name);
    gs__binder_write_later(
        s, "PATCH", path, "application/merge-patch+json",
        json_pack("{s:{s:{s:s}}}", "metadata", "annotations", GS_MIG_DESIRED_ANNOTATION, text));
    free(text);
}

/* A node's id in a cycle's DRA world: its index in the snapshot. */
static int32_t dra_node_id(void *ctx, const char *node)
{
    return gs__snapshot_find_node(ctx, node);
}

/* Bound pods' claimed devices count against their queues (gs_tenancy_build counted their
 * requests). */
static void charge_bound_claims(struct cycle *cy)
{
    for (int v = 0; cy->dra && v < cy->ty.nrun; v++) {
        const struct gs_kube_pod *p = &cy->sn->pods[cy->ty.run_pod[v]].p;
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

int gs__driver_cycle(struct gs_sched *s, struct gs_engine **engine, int *engine_nodes)
{
    struct gs_store *st = &s->st;
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
            gs__binder_write_later(s, "POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                                   NULL, json_incref(ne));
    }
    json_decref(nev);
    struct cycle cy;
    memset(&cy, 0, sizeof(cy));
    struct gs_policy_objs *cp = &cy.po;
    bool copied = copy_policy(s, cp);
    struct gs_snapshot sn;
    int src = gs__snapshot_take(st, &sn, cp);
    if (src) {
        gs_policy_objs_release(cp);
        return src;
    }
    apply_notes(&sn, s);
    cy.s = s;
    cy.sn = &sn;
    cy.c = &sn.c;
    cy.now_wall = gs_clock_wall();
    cy.report = json_array();
    int np = sn.np;
    /* pods we evicted that the watch still shows are as good as gone */
    pthread_mutex_lock(&s->mmu);
    for (int k = 0; k < s->nevicted; k++) {
        if (gs_clock_mono() - s->evicted_at[k] > 120) {
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
    struct gs_cyc_pod *cpods = calloc(anp, sizeof(*cpods));
    int *idx = calloc(anp, sizeof(int));
    struct gs_cyc_gang *gangs = calloc((size_t)cp->ngroups + 1, sizeof(*gangs));
    struct hooks h = {
        .cy = &cy, .cur = -1, .vol = calloc(anp, sizeof(int)), .dra = calloc(anp, sizeof(bool))};
    struct gs_claims_cycle dra;
    memset(&dra, 0, sizeof(dra));
    const char **run_ns = NULL;
    uint8_t *fixed = NULL;
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    int rc = 0;
    if (!cpods || !idx || !gangs || !h.vol || !h.dra || !cy.report || !copied ||
        gs_tenancy_build(&cy.ty, cp, &sn.c, &sn.pods[0].p, sizeof(sn.pods[0]), np, sn.alloc,
                         sn.placed) ||
        !(run_ns = calloc((size_t)cy.ty.nrun + 1, sizeof(*run_ns)))) {
        rc = GS_ENOMEM;
        goto out;
    }
    if (s->claims) {
        if (gs_claims_cycle_init(&dra, s->claims, np, dra_node_id, &sn)) {
            rc = GS_ENOMEM;
            goto out;
        }
        cy.dra = &dra;
        if (release_stale_claims(&cy)) {
            rc = GS_ENOMEM;
            goto out;
        }
        charge_bound_claims(&cy);
        h.runclaim = malloc(sizeof(int) * GS_MAX_POD_DRA * ((size_t)cy.ty.nrun + 1));
        if (!h.runclaim) {
            rc = GS_ENOMEM;
            goto out;
        }
        for (int v = 0; v < cy.ty.nrun; v++) {
            const struct gs_kube_pod *rp = &sn.pods[cy.ty.run_pod[v]].p;
            for (int k = 0; k < GS_MAX_POD_DRA; k++)
                h.runclaim[(size_t)v * GS_MAX_POD_DRA + k] =
                    k < rp->ndra && rp->dra[k][0] ? gs_claims_find(&dra, rp->ns, rp->dra[k]) : -1;
        }
    }
    if (!*engine || *engine_nodes < sn.c.nnodes) {
        gs_engine_free(*engine);
        *engine_nodes = gs_cycle_engine_nodes(sn.c.nnodes);
        *engine = gs_engine_new(gs_policy_find(s->o.policy), NULL, *engine_nodes, 42);
        if (!*engine) {
            rc = GS_ENOMEM;
            goto out;
        }
    }
    cy.engine = *engine;
    struct gs_cluster *c = &sn.c;
    /* the placed pods, for affinity, anti-affinity, spread and ports */
    if (gs_kstate_new(c, &cy.ks) == 0 && gs_kprep_new(&cy.kp) == 0) {
        for (int i = 0; i < np; i++) {
            const struct gs_kube_pod *bp = &sn.pods[i].p;
            int n = bp->k && bp->node[0] ? gs__snapshot_find_node(&sn, bp->node) : -1;
            if (n >= 0 && gs_kstate_add_pod(cy.ks, c, &bp->k->kp, n) < 0)
                break;
        }
    }
    cy.leaving = calloc((size_t)sn.nn + 1, 1);
    for (int i = 0; cy.leaving && i < np; i++) {
        int n = sn.pods[i].p.terminating && sn.pods[i].p.node[0]
                    ? gs__snapshot_find_node(&sn, sn.pods[i].p.node)
                    : -1;
        if (n >= 0)
            cy.leaving[n] = 1;
    }
    for (int v = 0; v < cy.ty.nrun; v++)
        run_ns[v] = sn.pods[cy.ty.run_pod[v]].p.ns;
    /* the pending pods of ours; those whose objects say they cannot go anywhere wait here */
    int ncp = 0, waiting = 0;
    double t = gs_clock_mono();
    for (int i = 0; i < np; i++) {
        struct gs_store_pod *e = &sn.pods[i];
        const struct gs_kube_pod *p = &e->p;
        int g = cy.ty.pod_gang[i];
        if (p->node[0] || p->terminating) {
            if (g >= 0 && p->node[0] && !p->terminating)
                gangs[g].running++;
            continue;
        }
        if (strcmp(p->scheduler, s->o.scheduler_name) != 0)
            continue;
        waiting++;
        if (!e->nominated[0] && p->nominated[0] && !s->dry && !e->adopted) {
            /* a nomination written before a restart (status.nominatedNodeName): adopted once,
             * as if made now */
            snprintf(e->nominated, sizeof(e->nominated), "%s", p->nominated);
            e->nominated_at = t;
            pthread_mutex_lock(&st->mu);
            int si = gs__store_find_pod(st, p->ns, p->name);
            if (si >= 0 && !st->pods[si].nominated[0] && !st->pods[si].adopted) {
                snprintf(st->pods[si].nominated, sizeof(st->pods[si].nominated), "%s",
                         p->nominated);
                st->pods[si].nominated_at = t;
            }
            if (si >= 0)
                st->pods[si].adopted = true;
            pthread_mutex_unlock(&st->mu);
        }
        bool live = !s->dry && nomination_live(&cy, e);
        bool due = s->dry || e->next_try <= t;
        if (!due && !live && g < 0)
            continue;
        int queue = cy.ty.pod_queue[i];
        const char *qlabel = gs_kube_pod_label(p, GS_QUEUE_LABEL);
        const char *gl = gs_kube_pod_label(p, GS_POD_GROUP_LABEL);
        char msg[1400], why[400];
        msg[0] = '\0';
        const char *cat = NULL;
        const struct gs_kube_pv *pvs[GS_MAX_POD_CLAIMS];
        int npvs = 0;
        if (qlabel && queue < 0) {
            snprintf(msg, sizeof(msg),
                     "queue: the label %s names GPUQueue '%s', which does not exist",
                     GS_QUEUE_LABEL, qlabel);
            cat = "quota";
        } else if (gl && g < 0) {
            snprintf(msg, sizeof(msg), "gang: PodGroup %s/%s (label %s) does not exist", p->ns, gl,
                     GS_POD_GROUP_LABEL);
            cat = "gang";
        } else if (p->k_error[0] || p->refused[0]) {
            snprintf(msg, sizeof(msg), "constraints: %s", p->refused[0] ? p->refused : p->k_error);
            cat = "constraints";
        } else if (pod_volumes(&cy, p, pvs, &npvs, why, sizeof(why))) {
            snprintf(msg, sizeof(msg), "%svolumes: %s", g >= 0 ? "gang member: " : "", why);
            cat = "constraints";
        }
        struct gs_qvec claimed;
        gs_qvec_zero(&claimed);
        if (!cat && p->ndra > 0) {
            int dr = cy.dra ? gs_claims_pod_prepare(cy.dra, i, p->ns, p->dra, p->ndra, &cy.ty.t,
                                                    &claimed, why, sizeof(why))
                            : 1;
            if (dr < 0) {
                rc = dr;
                goto out;
            }
            if (dr) {
                snprintf(msg, sizeof(msg), "dra: %s",
                         cy.dra ? why : "the scheduler does not read ResourceClaims");
                cat = "dra";
            }
        }
        if (cat) {
            if (due)
                unschedulable(&cy, p, queue, cat, msg, t);
            continue;
        }
        struct gs_cyc_pod *x = &cpods[ncp];
        idx[ncp++] = i;
        x->req = p->req;
        x->priority = p->priority;
        x->queue = queue;
        x->gang = g;
        x->ns = p->ns;
        x->seq = e->seq;
        x->nominated = live ? gs__snapshot_find_node(&sn, e->nominated) : -1;
        x->nomination_live = live;
        x->preempt_never = p->preempt_never;
        x->due = due;
        x->claimed = claimed;
    }
    for (int g = 0; g < cp->ngroups; g++)
        gangs[g].min_member = cp->groups[g].min_member;
    /* only a gpusched agent applies a re-carve: GPUs of nodes without its inventory keep
     * their layout */
    fixed = calloc((size_t)c->ngpus + 1, 1);
    if (!fixed) {
        rc = GS_ENOMEM;
        goto out;
    }
    for (int n = 0; n < sn.nn && n < c->nnodes; n++)
        if (!sn.nodes[n].inv)
            memset(fixed + c->nodes[n].gpu0, 1, (size_t)c->nodes[n].ngpus);
    h.idx = idx;
    struct gs_cycle_in in = {.c = c,
                             .e = *engine,
                             .t = &cy.ty.t,
                             .pods = cpods,
                             .npods = ncp,
                             .gangs = gangs,
                             .ngangs = cp->ngroups,
                             .run = cy.ty.run,
                             .nrun = cy.ty.nrun,
                             .run_ns = run_ns,
                             .pdb_allowed = cy.ty.pdb_allowed,
                             .npdb = cy.ty.npdb,
                             .busy = sn.busy,
                             .fixed = fixed,
                             .changed_s = sn.changed_s,
                             .now_s = cy.now_wall,
                             .o = {.preempt = true,
                                   .recarve = s->o.dynamic_mig,
                                   .hold_s = s->o.recarve_hold_s,
                                   .min_runtime_s = s->o.min_runtime_s},
                             .h = {hook_prepare, hook_allows, hook_placed,
                                   h.runclaim ? hook_give : NULL, h.runclaim ? hook_fits : NULL,
                                   &h}};
    rc = gs_cycle_run(&in, &out);
    hooks_settle(&h);
    if (rc)
        goto out;
    if (s->dry) {
        /* explain --output decisions: the same lines the simulator prints */
        json_t *lines = json_array();
        for (int k = 0; lines && k < out.n; k++) {
            const struct gs_cyc_decision *d = &out.d[k];
            const struct gs_kube_pod *p = &sn.pods[idx[d->pod]].p;
            char pod[GS_KNAME_MAX + 70], victim[GS_KNAME_MAX + 70], line[800];
            snprintf(pod, sizeof(pod), "%s/%s", p->ns, p->name);
            if (d->kind == GS_CYC_EVICT) {
                const struct gs_kube_pod *v = &sn.pods[cy.ty.run_pod[d->victim]].p;
                snprintf(victim, sizeof(victim), "%s/%s", v->ns, v->name);
            }
            gs_decision_line(c, d, pod, d->kind == GS_CYC_EVICT ? victim : NULL, line,
                             sizeof(line));
            json_array_append_new(lines, json_string(line));
        }
        json_decref(s->decision_lines);
        s->decision_lines = lines;
    }
    /* apply the decisions */
    struct victims vic = {.owner = -1};
    int nrecarve_from = -1;
    for (int k = 0; k < out.n; k++) {
        const struct gs_cyc_decision *d = &out.d[k];
        struct gs_store_pod *e = &sn.pods[idx[d->pod]];
        const struct gs_kube_pod *p = &e->p;
        int queue = cy.ty.pod_queue[idx[d->pod]], g = cy.ty.pod_gang[idx[d->pod]];
        const struct gs_kube_podgroup *pg = g >= 0 ? &cp->groups[g] : NULL;
        int owner = g >= 0 ? -2 - g : d->pod;
        if (vic.owner != owner)
            vic = (struct victims){.owner = owner};
        char msg[1600], extra[400], why[400];
        switch (d->kind) {
        case GS_CYC_BIND:
            assume_and_bind(&cy, p, &d->alloc, t,
                            cy.dra && p->ndra > 0 && !s->dry
                                ? gs_claims_pod_writes(cy.dra, s->claims, idx[d->pod],
                                                       c->nodes[d->alloc.node].name, p->name,
                                                       p->uid)
                                : NULL);
            break;
        case GS_CYC_EVICT:
            evict(&cy, p, queue, d->victim, vic.names, sizeof(vic.names));
            vic.n++;
            vic.gpu_hours += d->gpu_hours;
            break;
        case GS_CYC_REPARTITION:
            /* consecutive decisions for one node are written together */
            if (nrecarve_from < 0)
                nrecarve_from = k;
            if (k + 1 >= out.n || out.d[k + 1].kind != GS_CYC_REPARTITION ||
                out.d[k + 1].node != d->node) {
                write_desired(&cy, &out, nrecarve_from, k + 1);
                nrecarve_from = -1;
            }
            break;
        case GS_CYC_NOMINATE: {
            const char *node = c->nodes[d->node].name;
            char dev[300] = "";
            gs_kube_devices_str(c, &d->alloc, dev, sizeof(dev));
            if (d->why == GS_WHY_RECARVING)
                snprintf(msg, sizeof(msg),
                         "re-carving a GPU of node %s for it (%s%s%s); it binds once the node "
                         "agent has made the instance",
                         node, dev, vic.n ? ", preempting " : "", vic.n ? vic.names : "");
            else if (pg) {
                int nm = 0;
                for (int j = 0; j < ncp; j++)
                    nm += cpods[j].gang == g;
                snprintf(
                    msg, sizeof(msg),
                    "gang %s/%s (%d pods): preempting %d pod%s (%.4f GPU-hours lost) so that every "
                    "member starts at once: %s",
                    pg->ns, pg->name, nm, vic.n, vic.n == 1 ? "" : "s", vic.gpu_hours, vic.names);
            } else if (vic.n)
                snprintf(msg, sizeof(msg),
                         "preempting %d pod%s on node %s (%.4f GPU-hours lost): %s", vic.n,
                         vic.n == 1 ? "" : "s", node, vic.gpu_hours, vic.names);
            else
                snprintf(msg, sizeof(msg), "waiting for preempted pods to leave node %s", node);
            nominate(&cy, e, queue, &d->alloc,
                     d->why == GS_WHY_RECARVING ? "Recarving" : "Preempting", msg);
            /* the owner's last nomination: its victims count as one preemption */
            const struct gs_cyc_decision *nx = k + 1 < out.n ? &out.d[k + 1] : NULL;
            int nx_gang = nx ? cy.ty.pod_gang[idx[nx->pod]] : -1;
            bool last = !nx || nx->kind != GS_CYC_NOMINATE ||
                        (nx_gang >= 0 ? -2 - nx_gang : nx->pod) != owner;
            if (vic.n && !s->dry && last) {
                count_preemption(s, vic.n, vic.gpu_hours);
                journal_preemption(s, p, node, d->why == GS_WHY_RECARVING, &vic);
                vic = (struct victims){.owner = owner};
            }
            break;
        }
        case GS_CYC_WAIT: {
            int nm = 0;
            for (int j = 0; g >= 0 && j < ncp; j++)
                nm += cpods[j].gang == g;
            if (!cpods[d->pod].due && d->why != GS_WHY_PREEMPTING)
                break; /* in backoff: keeps its last verdict */
            if (d->why == GS_WHY_QUOTA) {
                struct gs_qvec dv;
                gs_tenants_demand(&cy.ty.t, &p->req, &dv);
                for (int x = 0; x < GS_QR_COUNT; x++)
                    dv.v[x] += cpods[d->pod].claimed.v[x];
                gs_tenants_admit(&cy.ty.t, queue, p->ns, &dv, why, sizeof(why));
                if (pg)
                    snprintf(msg, sizeof(msg), "quota: gang %s/%s (%d pods): %s", pg->ns, pg->name,
                             nm, why);
                else
                    snprintf(msg, sizeof(msg), "quota: %s", why);
                unschedulable(&cy, p, queue, "quota", msg, t);
                break;
            }
            if (d->why == GS_WHY_GANG_SHORT && pg) {
                snprintf(msg, sizeof(msg),
                         "gang %s/%s: %d of minMember %d pods exist; waiting for the rest", pg->ns,
                         pg->name, nm + gangs[g].running, (int)pg->min_member);
                gang_timeout(&cy, pg, msg, sizeof(msg));
                unschedulable(&cy, p, queue, "gang", msg, t);
                break;
            }
            char reasons[1000];
            gs_reasons_str(&d->r, d->failed >= 0 ? &cpods[d->failed].req : &p->req, reasons,
                           sizeof(reasons));
            if (pg) {
                const char *fname = d->failed >= 0 ? sn.pods[idx[d->failed]].p.name : p->name;
                snprintf(msg, sizeof(msg),
                         "gang %s/%s (%d pods, minMember %d): member %s does not fit: %s; the "
                         "gang holds nothing",
                         pg->ns, pg->name, nm, (int)pg->min_member, fname, reasons);
                if (d->why == GS_WHY_PREEMPTING) {
                    snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
                             "; waiting for the pods preempted for it to leave");
                    report(&cy, p, queue, "preempting", msg);
                    gs__binder_backoff_pod(s, p, 0.25);
                } else {
                    gang_timeout(&cy, pg, msg, sizeof(msg));
                    unschedulable(&cy, p, queue, "gang", msg, t);
                }
                break;
            }
            snprintf(msg, sizeof(msg), "%s", reasons);
            int vol = h.vol[d->pod];
            int kmasked = constraint_reasons(&d->r, vol, msg, sizeof(msg));
            if (d->why == GS_WHY_PREEMPTING || d->why == GS_WHY_RECARVING) {
                snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "; waiting for %s node %s",
                         d->why == GS_WHY_RECARVING ? "a GPU re-carve on"
                                                    : "preempted pods to leave",
                         e->nominated);
                report(&cy, p, queue, "preempting", msg);
                gs__binder_backoff_pod(s, p, 0.25);
                break;
            }
            const struct gs_kube_pv *pvs[GS_MAX_POD_CLAIMS];
            int npvs = 0;
            pod_volumes(&cy, p, pvs, &npvs, why, sizeof(why));
            struct tol_ctx tc = {&cy, p, pvs, npvs, NULL, idx[d->pod], NULL};
            const struct gs_reasons *r = &d->r;
            const char *cat =
                classify(&cy, p, r, r->taint, d->candidates, &tc, extra, sizeof(extra));
            if (kmasked > 0 &&
                kmasked + r->taint + r->count[GS_R_SELECTOR] + r->count[GS_R_MODEL] >= r->nodes) {
                cat = r->kverdict[GS_KNO_NODE_AFFINITY] == kmasked ? "selector" : "constraints";
                extra[0] = '\0';
            }
            vol = vol < r->fit ? vol : r->fit;
            if (vol > 0 &&
                kmasked + vol + r->taint + r->count[GS_R_SELECTOR] + r->count[GS_R_MODEL] >=
                    r->nodes) {
                cat = "constraints";
                extra[0] = '\0';
            }
            if (d->why == GS_WHY_BORROW) {
                struct gs_qvec dv;
                gs_tenants_demand(&cy.ty.t, &p->req, &dv);
                for (int x = 0; x < GS_QR_COUNT; x++)
                    dv.v[x] += cpods[d->pod].claimed.v[x];
                gs_tenants_admit(&cy.ty.t, queue, p->ns, &dv, why, sizeof(why));
                snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
                         "; %s, and no idle capacity fits", why);
                if (strcmp(cat, "selector") != 0 && strcmp(cat, "taint") != 0)
                    cat = "quota";
            }
            snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s", extra);
            if (cy.dra && p->ndra > 0 && h.dra[d->pod] && strcmp(cat, "selector") != 0 &&
                strcmp(cat, "taint") != 0) {
                char dw[800];
                gs_claims_pod_why(cy.dra, idx[d->pod], dw, sizeof(dw));
                snprintf(msg, sizeof(msg), "dra: no node can allocate its claims: %s", dw);
                cat = "dra";
            }
            unschedulable(&cy, p, queue, cat, msg, t);
            break;
        }
        default:
            break;
        }
    }
    /* gangs bound in this cycle: one line each */
    for (int k = 0; !s->dry && k < out.n; k++) {
        const struct gs_cyc_decision *d = &out.d[k];
        int g = d->kind == GS_CYC_BIND ? cpods[d->pod].gang : -1;
        if (g < 0 ||
            (k > 0 && out.d[k - 1].kind == GS_CYC_BIND && cpods[out.d[k - 1].pod].gang == g))
            continue;
        int n = 0;
        for (int j = k; j < out.n && out.d[j].kind == GS_CYC_BIND && cpods[out.d[j].pod].gang == g;
             j++)
            n++;
        GS_INFO("scheduler", "gang %s/%s: %d pods placed together", cp->groups[g].ns,
                cp->groups[g].name, n);
    }
    gs__metrics_update_gauges(s, c, waiting - cy.scheduled);
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
    cy.report = NULL;
    pthread_mutex_unlock(&s->mmu);
out:
    gs_cycle_out_release(&out);
    free(cy.leaving);
    gs_kprep_free(cy.kp);
    gs_kstate_free(cy.ks);
    json_decref(cy.report);
    free(cpods);
    free(idx);
    free(gangs);
    free(h.vol);
    free(h.dra);
    free(h.runclaim);
    gs_claims_cycle_release(&dra);
    free(run_ns);
    free(fixed);
    gs_tenancy_release(&cy.ty);
    gs_policy_objs_release(cp);
    gs__snapshot_release(&sn);
    return rc;
}
