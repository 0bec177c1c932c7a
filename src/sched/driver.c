/* driver.c - the live scheduler's scheduling cycle (sched/driver.h): a snapshot of the store
 * (sched/snapshot.c) and the tenancy objects (sched/tenancy.c) in, the engine (core/engine.c,
 * core/gang.c, core/preempt.c, core/constraints.c) deciding, and the decisions applied as
 * assumed binds in the store and writes queued on the binder (sched/binder.c). */
#include "driver.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "../base/log.h"
#include "../core/gang.h"
#include "binder.h"
#include "metrics.h"
#include "sched_internal.h"
#include "snapshot.h"
#include "tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One pending pod's place in the cycle's order: priority, then pods owed their queue's
 * deserved share before borrowers, then the queue's priority, then its weighted dominant
 * share, then arrival. */
struct qitem {
    struct gs_store_pod *e;
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
                           double t0)
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
    if (gs_cluster_bind(cy->c, &p->req, a))
        return GS_EINTERNAL;
    if (cy->ks && p->k)
        gs_kstate_add_pod(cy->ks, cy->c, &p->k->kp, a->node);
    gs__snapshot_count_resources(cy->sn, a->node, p);
    if (s->dry) {
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
static bool nomination_live(const struct cycle *cy, const struct gs_store_pod *e)
{
    if (!e->nominated[0])
        return false;
    double age = gs_clock_mono() - e->nominated_at;
    if (age < 30)
        return true;
    int node = age > 300 || !cy->leaving ? -1 : gs__snapshot_find_node(cy->sn, e->nominated);
    return node >= 0 && cy->leaving[node];
}

/* The devices a nominated pod would take on its node now, if it fits there. */
static bool nominated_alloc(const struct cycle *cy, const struct gs_store_pod *e,
                            struct gs_alloc *a)
{
    int node = e->nominated[0] ? gs__snapshot_find_node(cy->sn, e->nominated) : -1;
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
    struct gs_sched *s = cy->s;
    struct gs_snapshot *sn = cy->sn;
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
        int slot =
            s->nevicted < GS_EVICTED_MAX ? s->nevicted++ : (int)(s->victims % GS_EVICTED_MAX);
        snprintf(s->evicted[slot], sizeof(s->evicted[slot]), "%s", vpod->uid);
        s->evicted_at[slot] = gs_clock_mono();
        pthread_mutex_unlock(&s->mmu);
        char msg[800], path[600];
        snprintf(msg, sizeof(msg), "Preempted by %s/%s (priority %d%s%s) on node %s", p->ns,
                 p->name, (int)p->priority, queue >= 0 ? ", queue " : "",
                 queue >= 0 ? cy->ty.t.q[queue].name : "", node);
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", vpod->ns, vpod->name);
        gs__binder_write_later(s, "PATCH", path, "application/strategic-merge-patch+json",
                               gs_kube_disruption_patch(msg));
        gs__binder_emit_event(s, vpod, "Normal", "Preempted", "Preempting", msg);
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", vpod->ns, vpod->name);
        gs__binder_write_later(s, "DELETE", path, NULL, gs_kube_delete_options(vpod->uid, -1));
    }
}

/* Hold devices a for p in this cycle and nominate its node (nominatedNodeName, the
 * Preempting Event and /debug/pending say msg) while the victims terminate. */
static void nominate(struct cycle *cy, const struct gs_kube_pod *p, int queue,
                     const struct gs_alloc *a, const char *msg)
{
    struct gs_sched *s = cy->s;
    const char *node = cy->c->nodes[a->node].name;
    report(cy, p, queue, "preempting", msg);
    gs_cluster_bind(cy->c, &p->req, a);
    if (s->dry)
        return;
    GS_INFO("scheduler", "%s/%s: %s", p->ns, p->name, msg);
    gs__binder_emit_event(s, p, "Normal", "Preempting", "Preempting", msg);
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->ns, p->name);
    gs__binder_write_later(s, "PATCH", path, "application/strategic-merge-patch+json",
                           gs_kube_nominated_patch(node, msg));
    pthread_mutex_lock(&s->st.mu);
    int i = gs__store_find_pod(&s->st, p->ns, p->name);
    if (i >= 0) {
        snprintf(s->st.pods[i].nominated, sizeof(s->st.pods[i].nominated), "%s", node);
        s->st.pods[i].nominated_at = gs_clock_mono();
        s->st.pods[i].next_try = gs_clock_mono() + 0.25;
    }
    pthread_mutex_unlock(&s->st.mu);
}

static void count_preemption(struct gs_sched *s, int victims, double gpu_hours)
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
    bool vol = false, ok = gs__snapshot_resources_fit(t->cy->sn, node, t->p, NULL, 0);
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
    struct gs_snapshot *sn = cy->sn;
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
    struct gs_snapshot *sn = cy->sn;
    struct gs_sched *s = cy->s;
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
            gs__binder_backoff_pod(s, &sn->pods[members[k]].p, 0.25);
        }
        return;
    }
    gang_timeout(cy, pg, msg, sizeof(msg));
    for (int k = 0; k < nm; k++)
        unschedulable(cy, &sn->pods[members[k]].p, queue, "gang", msg, t0);
}

/* The tenancy objects as last listed (an empty list may be a NULL pointer: copy only what
 * is there). Returns false without memory. */
static bool copy_policy(struct gs_sched *s, struct gs_policy_objs *cp)
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
        gs__snapshot_release(&sn);
        return GS_ENOMEM;
    }
    /* pending pods in order */
    int nq = 0, waiting = 0;
    double t = gs_clock_mono();
    for (int i = 0; i < np; i++) {
        struct gs_store_pod *e = &sn.pods[i];
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
            gs__snapshot_release(&sn);
            return GS_ENOMEM;
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
    /* pods whose victims have left go first, to the node they were nominated for, in or
     * out of their backoff: nothing else may take what was freed for them */
    int8_t *done = calloc(anp, 1);
    cy.leaving = calloc((size_t)sn.nn + 1, 1);
    for (int i = 0; cy.leaving && i < np; i++) {
        int n = sn.pods[i].p.terminating && sn.pods[i].p.node[0]
                    ? gs__snapshot_find_node(&sn, sn.pods[i].p.node)
                    : -1;
        if (n >= 0)
            cy.leaving[n] = 1;
    }
    for (int i = 0; done && i < np && !s->dry; i++) {
        struct gs_store_pod *e = &sn.pods[i];
        if (e->p.node[0] || e->p.terminating || !nomination_live(&cy, e) ||
            strcmp(e->p.scheduler, s->o.scheduler_name) != 0)
            continue;
        int g = cy.ty.pod_gang[i];
        if (g >= 0) {
            /* a gang that preempted goes first, whole */
            if (gang_done && !gang_done[g]) {
                gang_done[g] = true;
                schedule_gang(&cy, g, gs_clock_mono());
            }
            continue;
        }
        struct gs_alloc a;
        if (!nominated_alloc(&cy, e, &a))
            continue;
        if (assume_and_bind(&cy, &e->p, &a, gs_clock_mono()) == 0) {
            struct gs_qvec d;
            gs_tenants_demand(&cy.ty.t, &e->p.req, &d);
            gs_tenants_charge(&cy.ty.t, cy.ty.pod_queue[i], e->p.ns, &d, +1);
            done[i] = 1;
        }
    }
    for (int k = 0; k < nq && !gs_flag_get(s->stop) && gs_flag_get(&s->leader); k++) {
        struct gs_store_pod *e = q[k].e;
        if (done && done[q[k].idx])
            continue;
        const struct gs_kube_pod *p = &e->p;
        double t0 = gs_clock_mono();
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
            gs__binder_backoff_pod(s, p, 0.25);
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
    pthread_mutex_unlock(&s->mmu);
    free(q);
    free(gang_done);
    gs_tenancy_release(&cy.ty);
    gs_policy_objs_release(cp);
    gs__snapshot_release(&sn);
    return 0;
}
