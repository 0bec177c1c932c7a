/* cycleout.c - a scheduling cycle's output (sched/cycleout.h): core/cycle.h's decisions on the
 * input sched/cyclein.c built, applied through the components' APIs: binds, evictions and
 * writes on the binder (sched/binder.c), assumed binds, backoffs and nominations in the store
 * (sched/store.c), events in the journal (sched/journal.c), counters and the pending report in
 * the metrics (sched/metrics.c); the verdict of each pod that waits, said as kube-scheduler
 * would, by category; and, as kube-scheduler writes it, the PodGroupInitiallyScheduled
 * condition of each Workload API PodGroup whose pods the cycle bound or left waiting. */
#include "cycleout.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/hash.h"
#include "../base/log.h"
#include "../formats/decision.h"
#include "../formats/migdesired.h"
#include "../formats/workloadobj.h"
#include "binder.h"
#include "cyclein.h"
#include "journal.h"
#include "metrics.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dynamic MIG: the layouts this daemon asked for lately, until the watch shows them on the
 * Node, and when (hysteresis) */
#define GS_RECARVE_NOTES 64
struct gs__recarve_note {
    char node[GS_KNAME_MAX];
    int gpu; /* physical index */
    int64_t generation;
    double at_wall, at_mono;
    struct gs_mig_desired_gpu want;
};

/* What a cycle did with a Workload API PodGroup's pods, the strongest first noted: a bind, a
 * refusal of the group (SchedulerError), a pod left waiting (Unschedulable). */
enum { PGO_NONE = 0, PGO_UNSCHEDULABLE, PGO_ERROR, PGO_SCHEDULED };
struct pg_outcome {
    uint8_t kind;
    char *msg; /* the first message of its kind (owned) */
};

/* the PodGroup conditions this daemon wrote lately, until the watch shows them: a cycle
 * before that does not write the same again */
#define GS_PG_NOTES  64
#define GS_PG_NOTE_S 30
struct gs__pg_note {
    uint64_t group, what; /* hashes of ns/name and of the condition */
    double at_mono;
};

struct gs__cycleout {
    struct gs__cycleout_deps d;
    struct gs__recarve_note notes[GS_RECARVE_NOTES];
    int nnotes;
    struct gs__pg_note pg_notes[GS_PG_NOTES];
    json_t *decision_lines; /* dry: the last cycle's */
    int scheduled;          /* binds queued in this cycle */
    struct pg_outcome *pgo; /* during apply: per PodGroup of the cycle (NULL: none noted) */
    int npgo;
};

struct gs__cycleout *gs__cycleout_new(const struct gs__cycleout_deps *d)
{
    struct gs__cycleout *o = calloc(1, sizeof(*o));
    if (o)
        o->d = *d;
    return o;
}

void gs__cycleout_free(struct gs__cycleout *o)
{
    if (!o)
        return;
    json_decref(o->decision_lines);
    free(o);
}

json_t *gs__cycleout_decision_lines(struct gs__cycleout *o)
{
    return o->decision_lines ? json_incref(o->decision_lines) : NULL;
}

void gs__cycleout_node_events(struct gs__cycleout *o, json_t *events)
{
    size_t ni;
    json_t *ne;
    json_array_foreach(events, ni, ne)
    {
        if (!o->d.dry)
            gs__binder_post_event(o->d.binder, json_incref(ne));
    }
    json_decref(events);
}

static void report(struct gs__cycle *cy, const struct gs_kube_pod *p, int queue,
                   const char *category, const char *msg)
{
    json_array_append_new(
        cy->report, json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "namespace", p->ns, "pod", p->name,
                              "queue", queue >= 0 ? gs_tenancy_tenants(&cy->ty)->q[queue].name : "",
                              "priority", (int)p->priority, "reason", category, "message", msg));
}

/* Pod p's Workload API PodGroup, if any, had this outcome in the cycle. */
static void note_group(struct gs__cycle *cy, const struct gs_kube_pod *p, int kind, const char *msg)
{
    struct gs__cycleout *s = cy->out;
    int g = s->pgo && p->group[0] ? gs_policy_pod_group(&cy->po, p) : -1;
    if (g < 0 || g >= s->npgo || s->pgo[g].kind >= kind)
        return;
    s->pgo[g].kind = (uint8_t)kind;
    free(s->pgo[g].msg);
    size_t n = strlen(msg) + 1;
    if ((s->pgo[g].msg = malloc(n)))
        memcpy(s->pgo[g].msg, msg, n);
}

/* Whether this condition was written on pg within GS_PG_NOTE_S (the watch may not show it
 * yet); if not, it is noted as written now (in the place of the group's note or the oldest). */
static bool pg_written_lately(struct gs__cycleout *s, const struct gs_kube_podgroup *pg,
                              const char *reason, const char *msg)
{
    uint64_t group = gs_hash_step(gs_hash_str(pg->ns), gs_hash_str(pg->name));
    uint64_t what = gs_hash_step(gs_hash_str(reason), gs_hash_str(msg));
    double now = gs_clock_mono();
    int k = 0;
    for (int j = 0; j < GS_PG_NOTES; j++) {
        if (s->pg_notes[j].group == group) {
            k = j;
            break;
        }
        if (s->pg_notes[j].at_mono < s->pg_notes[k].at_mono)
            k = j;
    }
    struct gs__pg_note *x = &s->pg_notes[k];
    if (x->group == group && x->what == what && x->at_mono > 0 && now - x->at_mono < GS_PG_NOTE_S)
        return true;
    *x = (struct gs__pg_note){.group = group, .what = what, .at_mono = now};
    return false;
}

/* PodGroupInitiallyScheduled on each Workload API PodGroup the cycle noted, where it changes:
 * True (reason Scheduled) once a member is bound, else False with the reason and message of
 * the first member left waiting (kube-scheduler's updatePodGroupCondition). */
static void write_group_conditions(struct gs__cycle *cy)
{
    struct gs__cycleout *s = cy->out;
    char now[40];
    gs_kube_micro_time(now, sizeof(now));
    for (int g = 0; g < s->npgo; g++) {
        const struct pg_outcome *o = &s->pgo[g];
        const struct gs_kube_podgroup *pg = gs_policy_group(&cy->po, g);
        if (o->kind == PGO_NONE || pg->api != GS_PG_WORKLOAD)
            continue;
        bool ok = o->kind == PGO_SCHEDULED;
        const char *reason = ok                     ? "Scheduled"
                             : o->kind == PGO_ERROR ? "SchedulerError"
                                                    : "Unschedulable";
        const char *msg = ok || !o->msg ? "" : o->msg;
        if (!gs_kube_wpodgroup_condition_changes(pg, ok, reason, msg) ||
            pg_written_lately(s, pg, reason, msg))
            continue;
        char path[600];
        snprintf(path, sizeof(path),
                 "/apis/scheduling.k8s.io/v1beta1/namespaces/%s/podgroups/%s/status", pg->ns,
                 pg->name);
        gs__binder_write_later(s->d.binder, "PATCH", path, "application/strategic-merge-patch+json",
                               gs_kube_wpodgroup_condition_patch(pg, ok, reason, msg, now));
        GS_INFO("scheduler", "PodGroup %s/%s: %s %s (%s)", pg->ns, pg->name, GS_WPG_CONDITION,
                ok ? "True" : "False", reason);
    }
}

/* FailedScheduling: an Event, the PodScheduled condition and a backoff; group: the pod's
 * Workload API PodGroup is told too. */
static void unschedulable_as(struct gs__cycle *cy, const struct gs_kube_pod *p, int queue,
                             const char *category, const char *msg, double t0, bool group)
{
    struct gs__cycleout *s = cy->out;
    if (group)
        note_group(cy, p, PGO_UNSCHEDULABLE, msg);
    report(cy, p, queue, category, msg);
    if (s->d.dry)
        return;
    gs__metrics_record_latency(s->d.metrics, gs_clock_mono() - t0, 1);
    gs__binder_emit_event(s->d.binder, p, "Warning", "FailedScheduling", "Scheduling", msg);
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->ns, p->name);
    gs__binder_write_later(s->d.binder, "PATCH", path, "application/strategic-merge-patch+json",
                           gs_kube_unschedulable_patch(msg));
    GS_INFO("scheduler", "%s/%s unschedulable (%s): %s", p->ns, p->name, category, msg);
    gs__store_backoff(s->d.store, p->ns, p->name, 0);
}

static void unschedulable(struct gs__cycle *cy, const struct gs_kube_pod *p, int queue,
                          const char *category, const char *msg, double t0)
{
    unschedulable_as(cy, p, queue, category, msg, t0, true);
}

/* Assume the pod on the node now; a binder thread tells the API server. */
static int assume_and_bind(struct gs__cycle *cy, int pod, const struct gs_kube_pod *p,
                           const struct gs_alloc *a, double t0, json_t *claim_writes)
{
    struct gs__cycleout *s = cy->out;
    struct gs_job j;
    memset(&j, 0, sizeof(j));
    j.kind = GS_JOB_BIND;
    snprintf(j.pod.ns, sizeof(j.pod.ns), "%s", p->ns);
    snprintf(j.pod.name, sizeof(j.pod.name), "%s", p->name);
    snprintf(j.pod.uid, sizeof(j.pod.uid), "%s", p->uid);
    j.t0 = t0;
    snprintf(j.node, sizeof(j.node), "%s", cy->c->nodes[a->node].name);
    if (p->req.kind != GS_REQ_NONE)
        gs_kube_devices_str(cy->c, a, j.devices, sizeof(j.devices));
    snprintf(j.path, sizeof(j.path), "/api/v1/namespaces/%s/pods/%s/binding", p->ns, p->name);
    j.body = claim_writes; /* the claims' status, written before the Binding */
    if (s->d.dry) {
        json_decref(claim_writes);
        char msg[600];
        snprintf(msg, sizeof(msg), "fits: would bind to %s%s%s", j.node, j.devices[0] ? " " : "",
                 j.devices);
        report(cy, p, -1, "fits", msg);
        return 0;
    }
    j.vol = cy->vb && p->nclaims > 0 ? gs_volbind_writes(cy->vb, pod, s->d.volume_bind_timeout_s)
                                     : NULL;
    gs__store_assume(s->d.store, p->ns, p->name, p->uid, j.node, j.devices, true);
    if (!gs__binder_bind(s->d.binder, &j)) {
        /* cannot happen with the queue sized to the pending pods; undo */
        json_decref(claim_writes);
        json_decref(j.vol);
        gs_cluster_unbind(cy->c, &p->req, a);
        gs__store_unassume(s->d.store, p->ns, p->name);
        return GS_ENOSPC;
    }
    /* the binds in the order decided (the differential test replays them in this order) */
    GS_DEBUG("scheduler", "assume %s/%s on %s", p->ns, p->name, j.node);
    s->scheduled++;
    return 0;
}

/* Why a pod that fits nowhere waits, by category: selector, taint, fragmentation (enough
 * free in total, no valid slot on one node), priority (only equal or higher priority pods
 * hold what it needs) or resources. */
static const char *classify(struct gs__cycle *cy, const struct gs_kube_pod *p,
                            const struct gs_reasons *why, int masked, int candidates,
                            const struct gs_volpod *vp, char *extra, size_t n)
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
            if (nd->unschedulable || gs__cycle_volumes_fit(cy, vp, k))
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

/* Evict running pod v (an index into cy->ty.run) for p: DisruptionTarget, delete with the UID
 * precondition, Events; its name is appended to names. The cycle already took it off the
 * cluster and its queue. */
static void evict(struct gs__cycle *cy, const struct gs_kube_pod *p, int queue, int v, char *names,
                  size_t size)
{
    struct gs__cycleout *s = cy->out;
    const struct gs_kube_pod *vpod = gs__snapshot_pod(cy->sn, gs_tenancy_run_pod(&cy->ty, v));
    const char *node = vpod->node;
    size_t off = strlen(names);
    if (off < size - 1)
        snprintf(names + off, size - off, "%s%s/%s", off ? ", " : "", vpod->ns, vpod->name);
    if (s->d.dry)
        return;
    gs__store_evicted(s->d.store, vpod->uid);
    char msg[800], path[600];
    snprintf(msg, sizeof(msg), "Preempted by %s/%s (priority %d%s%s) on node %s", p->ns, p->name,
             (int)p->priority, queue >= 0 ? ", queue " : "",
             queue >= 0 ? gs_tenancy_tenants(&cy->ty)->q[queue].name : "", node);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", vpod->ns, vpod->name);
    gs__binder_write_later(s->d.binder, "PATCH", path, "application/strategic-merge-patch+json",
                           gs_kube_disruption_patch(msg));
    gs__binder_emit_event(s->d.binder, vpod, "Normal", "Preempted", "Preempting", msg);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", vpod->ns, vpod->name);
    gs__binder_write_later(s->d.binder, "DELETE", path, NULL,
                           gs_kube_delete_options(vpod->uid, -1));
}

/* Hold devices a for p (the cycle holds them on the cluster) and nominate its node
 * (nominatedNodeName; an Event with reason, and /debug/pending, say msg) while its victims
 * terminate or its GPU is re-carved. A pod already nominated there only gets the report. */
static void nominate(struct gs__cycle *cy, const struct gs_kube_pod *p, int queue,
                     const struct gs_alloc *a, const char *reason, const char *msg)
{
    struct gs__cycleout *s = cy->out;
    const char *node = cy->c->nodes[a->node].name;
    report(cy, p, queue, "preempting", msg);
    if (s->d.dry)
        return;
    bool recarving = strcmp(reason, "Recarving") == 0;
    /* the store's entry says whether this is news (the snapshot's copy may have adopted a
     * nomination read back after a restart) */
    /* a hold while a GPU is re-carved keeps the nomination fresh: once the change is done,
     * the kubelet has 30 s to advertise the new device before the pod looks elsewhere */
    bool again = gs__store_nominate(s->d.store, p->ns, p->name, node, recarving);
    if (again && strcmp(p->nominated, node) == 0)
        return;
    GS_INFO("scheduler", "%s/%s: %s", p->ns, p->name, msg);
    gs__binder_emit_event(s->d.binder, p, "Normal", reason, reason, msg);
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->ns, p->name);
    gs__binder_write_later(s->d.binder, "PATCH", path, "application/strategic-merge-patch+json",
                           gs_kube_nominated_patch(node, msg));
}

/* The nodes of fit refused for the pod's volumes (vol: counts by enum gs_volr). */
static int vol_total(const int *vol, int fit)
{
    int t = 0;
    for (int r = 1; r < GS_VOLR_COUNT; r++)
        t += vol[r];
    return t < fit ? t : fit;
}

/* ", 3 node(s) didn't match pod anti-affinity rules" for the nodes the constraints refused
 * (gs_engine_place_k's counts; of those its fit refused, vol[r] were for the pod's volumes,
 * by enum gs_volr); returns how many. */
static int constraint_reasons(const struct gs_reasons *r, const int *vol, int ncd, char *out,
                              size_t n)
{
    int total = 0;
    size_t o = strlen(out);
    int nvol = vol_total(vol, r->fit) + ncd; /* (the ComputeDomain's: cd_words) */
    if (r->fit > nvol && o < n)
        o += (size_t)snprintf(out + o, n - o,
                              ", %d node(s) had too little memory, ephemeral-storage, hugepages "
                              "or another resource left",
                              r->fit - nvol);
    for (int v = 1; v < GS_VOLR_COUNT && nvol > 0; v++)
        if (vol[v] > 0 && o < n)
            o += (size_t)snprintf(out + o, n - o, ", %d %s", vol[v], gs_volbind_reason(v));
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

/* The name a gang's minimum has where it is declared. */
static const char *min_word(const struct gs_kube_podgroup *pg)
{
    return pg->api == GS_PG_WORKLOAD ? "minCount" : "minMember";
}

/* A gang past its PodGroup's scheduleTimeoutSeconds says so in its message (the members keep
 * waiting, and keep holding nothing). */
static void gang_timeout(const struct gs__cycle *cy, const struct gs_kube_podgroup *pg, char *msg,
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

/* Remember a layout asked for a node's GPU (the oldest note gives way). */
static void note_recarve(struct gs__cycleout *s, const char *node, int gpu, int64_t gen,
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
void gs__cycleout_mark(struct gs__cycleout *s, struct gs__cycle *cy)
{
    struct gs_snapshot *sn = cy->sn;
    double now = gs_clock_mono();
    for (int k = 0; k < s->nnotes; k++) {
        struct gs__recarve_note *x = &s->notes[k];
        int node = gs__snapshot_find_node(sn, x->node);
        const struct gs_kube_node *kn = node >= 0 ? gs__snapshot_node(sn, node) : NULL;
        int64_t seen = kn && kn->desired ? kn->desired->generation : 0;
        if (kn && kn->inv && kn->inv->generation > seen)
            seen = kn->inv->generation;
        if (!kn || (now - x->at_mono > s->d.recarve_hold_s &&
                    (seen >= x->generation || now - x->at_mono > 120))) {
            s->notes[k--] = s->notes[--s->nnotes];
            continue;
        }
        if (x->gpu < 0 || x->gpu >= cy->c->nodes[node].ngpus)
            continue;
        gs__snapshot_note_recarve(sn, node, x->gpu, x->at_wall,
                                  seen < x->generation && now - x->at_mono < 120);
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
static void journal_preemption(struct gs__cycleout *s, const struct gs_kube_pod *p,
                               const char *node, bool recarving, const struct victims *v)
{
    json_t *names = json_array();
    for (const char *a = v->names; names && *a;) {
        const char *b = strstr(a, ", ");
        size_t len = b ? (size_t)(b - a) : strlen(a);
        json_array_append_new(names, json_stringn(a, len));
        a = b ? b + 2 : a + len;
    }
    gs__journal_add(s->d.journal, "preempt",
                    json_pack("{s:s, s:s, s:s, s:i, s:o*, s:f, s:b}", "namespace", p->ns, "pod",
                              p->name, "node", node, "priority", (int)p->priority, "victims", names,
                              "gpu_hours", v->gpu_hours, "recarving", recarving));
}

/* Write the new layouts the cycle chose for one node's GPUs (REPARTITION decisions
 * d[from..to)) as its gpusched.io/mig-desired, GPUs whose earlier change is still pending
 * kept, with the next generation; remember it until the watch shows it. */
static void write_desired(struct gs__cycle *cy, const struct gs_cycle_out *out, int from, int to)
{
    struct gs__cycleout *s = cy->out;
    int node = out->d[from].node;
    const struct gs_kube_node *kn = gs__snapshot_node(cy->sn, node);
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
    json_t *events = s->d.dry ? NULL : json_array();
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
    if (s->d.dry)
        return;
    size_t ei;
    json_t *ev;
    json_array_foreach(events, ei, ev)
    {
        gs__journal_add(s->d.journal, "recarve", json_incref(ev));
    }
    json_decref(events);
    char *text = gs_mig_desired_write(&d);
    if (!text)
        return;
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", kn->name);
    gs__binder_write_later(
        s->d.binder, "PATCH", path, "application/merge-patch+json",
        json_pack("{s:{s:{s:s}}}", "metadata", "annotations", GS_MIG_DESIRED_ANNOTATION, text));
    free(text);
}

/* ---------- applying a cycle ---------- */

/* explain --output decisions: the same lines the simulator prints */
static void decision_lines(struct gs__cycleout *s, const struct gs__cycle *cy,
                           const struct gs_cycle_out *out)
{
    json_t *lines = json_array();
    for (int k = 0; lines && k < out->n; k++) {
        const struct gs_cyc_decision *d = &out->d[k];
        const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, cy->idx[d->pod]);
        char pod[GS_KNAME_MAX + 70], victim[GS_KNAME_MAX + 70], line[800];
        snprintf(pod, sizeof(pod), "%s/%s", p->ns, p->name);
        if (d->kind == GS_CYC_EVICT) {
            const struct gs_kube_pod *v =
                gs__snapshot_pod(cy->sn, gs_tenancy_run_pod(&cy->ty, d->victim));
            snprintf(victim, sizeof(victim), "%s/%s", v->ns, v->name);
        }
        gs_decision_line(cy->c, d, pod, d->kind == GS_CYC_EVICT ? victim : NULL, line,
                         sizeof(line));
        json_array_append_new(lines, json_string(line));
    }
    json_decref(s->decision_lines);
    s->decision_lines = lines;
}

/* Members of gang g among the cycle's pods. */
static int gang_members(const struct gs__cycle *cy, int g)
{
    int nm = 0;
    for (int j = 0; g >= 0 && j < cy->ncp; j++)
        nm += cy->cpods[j].gang == g;
    return nm;
}

/* A nomination: its message (re-carving, a gang's or a pod's victims), and the owner's last
 * nomination counts its victims as one preemption. */
static void apply_nominate(struct gs__cycle *cy, const struct gs_cycle_out *out, int k,
                           struct victims *vic)
{
    struct gs__cycleout *s = cy->out;
    const struct gs_cyc_decision *d = &out->d[k];
    const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, cy->idx[d->pod]);
    int queue = gs_tenancy_pod_queue(&cy->ty, cy->idx[d->pod]);
    int g = gs_tenancy_pod_gang(&cy->ty, cy->idx[d->pod]);
    const struct gs_kube_podgroup *pg = gs_policy_group(&cy->po, g);
    const char *node = cy->c->nodes[d->node].name;
    char dev[300] = "", msg[1600];
    gs_kube_devices_str(cy->c, &d->alloc, dev, sizeof(dev));
    if (d->why == GS_WHY_RECARVING)
        snprintf(msg, sizeof(msg),
                 "re-carving a GPU of node %s for it (%s%s%s); it binds once the node "
                 "agent has made the instance",
                 node, dev, vic->n ? ", preempting " : "", vic->n ? vic->names : "");
    else if (pg)
        snprintf(msg, sizeof(msg),
                 "gang %s/%s (%d pods): preempting %d pod%s (%.4f GPU-hours lost) so that every "
                 "member starts at once: %s",
                 pg->ns, pg->name, gang_members(cy, g), vic->n, vic->n == 1 ? "" : "s",
                 vic->gpu_hours, vic->names);
    else if (vic->n)
        snprintf(msg, sizeof(msg), "preempting %d pod%s on node %s (%.4f GPU-hours lost): %s",
                 vic->n, vic->n == 1 ? "" : "s", node, vic->gpu_hours, vic->names);
    else
        snprintf(msg, sizeof(msg), "waiting for preempted pods to leave node %s", node);
    nominate(cy, p, queue, &d->alloc, d->why == GS_WHY_RECARVING ? "Recarving" : "Preempting", msg);
    /* the owner's last nomination: its victims count as one preemption */
    const struct gs_cyc_decision *nx = k + 1 < out->n ? &out->d[k + 1] : NULL;
    int nx_gang = nx ? gs_tenancy_pod_gang(&cy->ty, cy->idx[nx->pod]) : -1;
    bool last =
        !nx || nx->kind != GS_CYC_NOMINATE || (nx_gang >= 0 ? -2 - nx_gang : nx->pod) != vic->owner;
    if (vic->n && !s->d.dry && last) {
        gs__metrics_count_preemption(s->d.metrics, vic->n, vic->gpu_hours);
        journal_preemption(s, p, node, d->why == GS_WHY_RECARVING, vic);
        *vic = (struct victims){.owner = vic->owner};
    }
}

/* What pod p (cycle pod k) would use, with its claims, is over its queue's or namespace's
 * quota: why, in why. */
static void quota_why(struct gs__cycle *cy, int k, const struct gs_kube_pod *p, int queue,
                      char *why, size_t n)
{
    struct gs_qvec dv;
    gs_tenants_demand(gs_tenancy_tenants(&cy->ty), &p->req, &dv);
    for (int x = 0; x < GS_QR_COUNT; x++)
        dv.v[x] += cy->cpods[k].claimed.v[x];
    gs_tenants_admit(gs_tenancy_tenants(&cy->ty), queue, p->ns, &dv, why, n);
}

/* A pod of an NVIDIA ComputeDomain (sched/topology.h): the nodes its domain's clique ruled out
 * (of those the engine found room on: cycle pod k's), appended to msg; the category "topology"
 * when they and the nodes of another model, selector or taint are every node. */
static void cd_words(struct gs__cycle *cy, int k, const struct gs_reasons *r, char *msg, size_t n,
                     const char **cat)
{
    char dom[300];
    const int *cdr = gs__cycle_cd_refused(cy, k);
    if (!gs__topology_pod_domain(cy->topo, cy->idx[k], dom, sizeof(dom)) || cdr[0] + cdr[1] == 0)
        return;
    size_t l = strlen(msg);
    snprintf(msg + l, n - l,
             "; computedomain: %s: %d node(s) have no label nvidia.com/gpu.clique, %d are in "
             "another clique",
             dom, cdr[0], cdr[1]);
    if (cdr[0] + cdr[1] + r->taint + r->count[GS_R_SELECTOR] + r->count[GS_R_MODEL] >= r->nodes)
        *cat = "topology";
}

/* A pod (not in a gang) that fits nowhere: the engine's reasons with the constraints' and the
 * volumes', and the category that says best why. */
static void wait_nowhere(struct gs__cycle *cy, const struct gs_cyc_decision *d, int queue,
                         char *reasons)
{
    struct gs__cycleout *s = cy->out;
    const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, cy->idx[d->pod]);
    char msg[1600], extra[400], why[400];
    snprintf(msg, sizeof(msg), "%s", reasons);
    const int *vols = gs__cycle_vol_refused(cy, d->pod);
    const int *cdr = gs__cycle_cd_refused(cy, d->pod);
    int kmasked = constraint_reasons(&d->r, vols, cdr[0] + cdr[1], msg, sizeof(msg));
    if (d->why == GS_WHY_PREEMPTING || d->why == GS_WHY_RECARVING) {
        snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "; waiting for %s node %s",
                 d->why == GS_WHY_RECARVING ? "a GPU re-carve on" : "preempted pods to leave",
                 gs__snapshot_pod_nominated(cy->sn, cy->idx[d->pod]));
        report(cy, p, queue, "preempting", msg);
        note_group(cy, p, PGO_UNSCHEDULABLE, msg);
        gs__store_backoff(s->d.store, p->ns, p->name, 0.25);
        return;
    }
    struct gs_volpod vp;
    gs__cycle_pod_volumes(cy, p, &vp, why, sizeof(why));
    const struct gs_reasons *r = &d->r;
    const char *cat = classify(cy, p, r, r->taint, d->candidates, &vp, extra, sizeof(extra));
    if (kmasked > 0 &&
        kmasked + r->taint + r->count[GS_R_SELECTOR] + r->count[GS_R_MODEL] >= r->nodes) {
        cat = r->kverdict[GS_KNO_NODE_AFFINITY] == kmasked ? "selector" : "constraints";
        extra[0] = '\0';
    }
    int vol = vol_total(vols, r->fit);
    if (vol > 0 &&
        kmasked + vol + r->taint + r->count[GS_R_SELECTOR] + r->count[GS_R_MODEL] >= r->nodes) {
        cat = "constraints";
        extra[0] = '\0';
    }
    if (d->why == GS_WHY_BORROW) {
        quota_why(cy, d->pod, p, queue, why, sizeof(why));
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
                 "; %s, and no idle capacity fits", why);
        if (strcmp(cat, "selector") != 0 && strcmp(cat, "taint") != 0)
            cat = "quota";
    }
    snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s", extra);
    if (cy->dra && gs_kube_pod_dra(p) && gs__cycle_dra_refused(cy, d->pod) &&
        strcmp(cat, "selector") != 0 && strcmp(cat, "taint") != 0) {
        char dw[800];
        gs_claims_pod_why(cy->dra, cy->idx[d->pod], dw, sizeof(dw));
        snprintf(msg, sizeof(msg), "dra: no node can allocate its claims: %s", dw);
        cat = "dra";
    }
    cd_words(cy, d->pod, &d->r, msg, sizeof(msg), &cat);
    unschedulable(cy, p, queue, cat, msg, cy->t0);
}

/* A pod the cycle left waiting: over quota, a gang short of members or that does not fit
 * whole, or a pod that fits nowhere. */
static void apply_wait(struct gs__cycle *cy, const struct gs_cyc_decision *d)
{
    struct gs__cycleout *s = cy->out;
    const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, cy->idx[d->pod]);
    int queue = gs_tenancy_pod_queue(&cy->ty, cy->idx[d->pod]);
    int g = gs_tenancy_pod_gang(&cy->ty, cy->idx[d->pod]);
    const struct gs_kube_podgroup *pg = gs_policy_group(&cy->po, g);
    char msg[1600], why[400];
    int nm = gang_members(cy, g);
    if (!cy->cpods[d->pod].due && d->why != GS_WHY_PREEMPTING)
        return; /* in backoff: keeps its last verdict */
    if (d->why == GS_WHY_QUOTA) {
        quota_why(cy, d->pod, p, queue, why, sizeof(why));
        if (pg)
            snprintf(msg, sizeof(msg), "quota: gang %s/%s (%d pods): %s", pg->ns, pg->name, nm,
                     why);
        else
            snprintf(msg, sizeof(msg), "quota: %s", why);
        unschedulable(cy, p, queue, "quota", msg, cy->t0);
        return;
    }
    if (d->why == GS_WHY_GANG_SHORT && pg) {
        snprintf(msg, sizeof(msg), "gang %s/%s: %d of %s %d pods exist; waiting for the rest",
                 pg->ns, pg->name, nm + cy->gangs[g].running, min_word(pg), (int)pg->min_member);
        if (cy->gang_gated[g] > 0)
            snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
                     " (%d more wait for their scheduling gates)", cy->gang_gated[g]);
        gang_timeout(cy, pg, msg, sizeof(msg));
        /* kube-scheduler tries no group short of minCount, and says nothing on it */
        unschedulable_as(cy, p, queue, "gang", msg, cy->t0, false);
        return;
    }
    if (d->why == GS_WHY_TOPOLOGY && pg) {
        char level[600];
        gs__topology_level_words(cy->topo, g, level, sizeof(level));
        snprintf(msg, sizeof(msg),
                 "topology: gang %s/%s (%d pods) requires one domain of %s: no domain holds it; "
                 "the largest has room for %d of its pods; the gang holds nothing",
                 pg->ns, pg->name, nm, level, (int)d->topo_room);
        gang_timeout(cy, pg, msg, sizeof(msg));
        unschedulable(cy, p, queue, "topology", msg, cy->t0);
        return;
    }
    char reasons[1000];
    gs_reasons_str(&d->r, d->failed >= 0 ? &cy->cpods[d->failed].req : &p->req, reasons,
                   sizeof(reasons));
    if (!pg) {
        wait_nowhere(cy, d, queue, reasons);
        return;
    }
    const char *fname =
        d->failed >= 0 ? gs__snapshot_pod(cy->sn, cy->idx[d->failed])->name : p->name;
    snprintf(msg, sizeof(msg),
             "gang %s/%s (%d pods, %s %d): member %s does not fit: %s; the "
             "gang holds nothing",
             pg->ns, pg->name, nm, min_word(pg), (int)pg->min_member, fname, reasons);
    if (d->why == GS_WHY_PREEMPTING) {
        snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
                 "; waiting for the pods preempted for it to leave");
        report(cy, p, queue, "preempting", msg);
        note_group(cy, p, PGO_UNSCHEDULABLE, msg);
        gs__store_backoff(s->d.store, p->ns, p->name, 0.25);
    } else {
        gang_timeout(cy, pg, msg, sizeof(msg));
        unschedulable(cy, p, queue, "gang", msg, cy->t0);
    }
}

/* Gangs bound in this cycle: one line each. */
static void log_gangs(const struct gs__cycle *cy, const struct gs_cycle_out *out)
{
    for (int k = 0; k < out->n; k++) {
        const struct gs_cyc_decision *d = &out->d[k];
        int g = d->kind == GS_CYC_BIND ? cy->cpods[d->pod].gang : -1;
        if (g < 0 ||
            (k > 0 && out->d[k - 1].kind == GS_CYC_BIND && cy->cpods[out->d[k - 1].pod].gang == g))
            continue;
        int n = 0;
        for (int j = k;
             j < out->n && out->d[j].kind == GS_CYC_BIND && cy->cpods[out->d[j].pod].gang == g; j++)
            n++;
        const struct gs_kube_podgroup *pg = gs_policy_group(&cy->po, g);
        GS_INFO("scheduler", "gang %s/%s: %d pods placed together", pg->ns, pg->name, n);
    }
}

/* The cycle's verdicts become the pending report; pods this cycle did not look at (in
 * backoff) keep their last verdict. The Events' series of pods no longer pending end. */
static int publish_report(struct gs__cycle *cy)
{
    const struct gs_snapshot *sn = cy->sn;
    int np = gs__snapshot_npods(sn);
    char(*keys)[GS_REPORT_KEY_MAX] = malloc(sizeof(*keys) * ((size_t)np + 1));
    const char **pending = malloc(sizeof(*pending) * ((size_t)np + 1));
    const char **uids = malloc(sizeof(*uids) * ((size_t)np + 1));
    if (!keys || !pending || !uids) {
        free(keys);
        free(pending);
        free(uids);
        return GS_ENOMEM;
    }
    int n = 0;
    for (int i = 0; i < np; i++) {
        const struct gs_kube_pod *p = gs__snapshot_pod(sn, i);
        if (p->node[0] || p->terminating)
            continue;
        snprintf(keys[n], sizeof(keys[n]), "%s/%s", p->ns, p->name);
        pending[n] = keys[n];
        uids[n] = p->uid;
        n++;
    }
    gs__metrics_publish_report(cy->out->d.metrics, cy->report, pending, n);
    cy->report = NULL;
    if (!cy->out->d.dry)
        gs__binder_events_retain(cy->out->d.binder, uids, n);
    free(keys);
    free(pending);
    free(uids);
    return 0;
}

int gs__cycleout_apply(struct gs__cycleout *s, struct gs__cycle *cy, const struct gs_cycle_out *out)
{
    cy->out = s;
    s->scheduled = 0;
    size_t wi;
    json_t *w;
    json_array_foreach(cy->stale_writes, wi, w)
        gs__binder_writes_later(s->d.binder, json_incref(w));
    s->npgo = 0;
    int ngroups = gs_policy_group_count(&cy->po);
    if (!s->d.dry && (s->pgo = calloc((size_t)ngroups + 1, sizeof(*s->pgo))))
        s->npgo = ngroups;
    for (int k = 0; k < cy->nwaits; k++) {
        const struct gs__wait *x = &cy->waits[k];
        const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, x->pod);
        /* a gated pod is no attempt: kube-scheduler writes it no Event and no condition
         * (the API server set PodScheduled=False/SchedulingGated when it was created) */
        if (x->gated) {
            report(cy, p, x->queue, x->category, x->msg);
            continue;
        }
        char why[400];
        /* a group that does not exist yet is told nothing; one its pod cannot go with is
         * told why (SchedulerError) */
        int refused = gs_policy_group_refusal(&cy->po, p, why, sizeof(why));
        if (refused == 2)
            note_group(cy, p, PGO_ERROR, x->msg);
        unschedulable_as(cy, p, x->queue, x->category, x->msg, cy->t0, refused == 0);
    }
    if (s->d.dry)
        decision_lines(s, cy, out);
    struct victims vic = {.owner = -1};
    int nrecarve_from = -1;
    for (int k = 0; k < out->n; k++) {
        const struct gs_cyc_decision *d = &out->d[k];
        const struct gs_kube_pod *p = gs__snapshot_pod(cy->sn, cy->idx[d->pod]);
        int g = gs_tenancy_pod_gang(&cy->ty, cy->idx[d->pod]);
        int owner = g >= 0 ? -2 - g : d->pod;
        if (vic.owner != owner)
            vic = (struct victims){.owner = owner};
        switch (d->kind) {
        case GS_CYC_BIND:
            note_group(cy, p, PGO_SCHEDULED, "");
            assume_and_bind(cy, cy->idx[d->pod], p, &d->alloc, cy->t0,
                            cy->dra && gs_kube_pod_dra(p) && !s->d.dry
                                ? gs_claims_pod_writes(cy->dra, s->d.claims, cy->idx[d->pod],
                                                       cy->c->nodes[d->alloc.node].name, p->name,
                                                       p->uid)
                                : NULL);
            break;
        case GS_CYC_EVICT:
            evict(cy, p, gs_tenancy_pod_queue(&cy->ty, cy->idx[d->pod]), d->victim, vic.names,
                  sizeof(vic.names));
            vic.n++;
            vic.gpu_hours += d->gpu_hours;
            break;
        case GS_CYC_REPARTITION:
            /* consecutive decisions for one node are written together */
            if (nrecarve_from < 0)
                nrecarve_from = k;
            if (k + 1 >= out->n || out->d[k + 1].kind != GS_CYC_REPARTITION ||
                out->d[k + 1].node != d->node) {
                write_desired(cy, out, nrecarve_from, k + 1);
                nrecarve_from = -1;
            }
            break;
        case GS_CYC_NOMINATE:
            apply_nominate(cy, out, k, &vic);
            break;
        case GS_CYC_WAIT:
            apply_wait(cy, d);
            break;
        default:
            break;
        }
    }
    if (!s->d.dry) {
        log_gangs(cy, out);
        write_group_conditions(cy);
        gs__metrics_count_cycle(s->d.metrics);
    }
    for (int g = 0; g < s->npgo; g++)
        free(s->pgo[g].msg);
    free(s->pgo);
    s->pgo = NULL;
    s->npgo = 0;
    gs__metrics_update_gauges(s->d.metrics, cy->c, cy->waiting - s->scheduled);
    return publish_report(cy);
}
