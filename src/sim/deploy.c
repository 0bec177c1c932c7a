/* deploy.c - the services of a simulated run (sim/run.h, sim/service.h): each is a Deployment
 * of replicas, pods of its class's shape that the world (sim/scenario.c) queues, places and
 * rates like any other pod; every 15 simulated seconds its requests are counted against its
 * ready replicas, each replica's load follows, and, when it autoscales, the HPA's own
 * arithmetic (core/hpa.c) sets the replica count from the metrics each replica's device
 * gives (core/podmetric.h: a MIG slice of an A100 has no gpu_utilization): new replicas
 * are pending pods, scale-down deletes the ones a ReplicaSet deletes first. */
#include "../base/buf.h"
#include "../base/error.h"
#include "../core/hpa.h"
#include "../core/podmetric.h"
#include "build.h"
#include "run.h"
#include "service.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVC_WORK_S 1e15 /* a replica never finishes its work: it is deleted */

/* A service's Deployment and its autoscaler. */
struct deploy {
    int cls;
    bool autoscale; /* the HPA runs (not in a fixed run) */
    struct gs_hpa_state hpa;
    int *pods; /* live replicas (not deleted) */
    int npods, cap;
    /* the measured window */
    double requests, missed, unit_s, used_s, cost, replica_s, span_s, rate;
    int replicas_max, scale_ups, scale_downs;
    bool created; /* replicas created since the last tick: a pass is due */
    struct gs_svc_mix mix;
};

static int svc_add_replica(struct sim *s, int k)
{
    struct deploy *v = &s->svc.v[k];
    const struct gs_sc_class *c = &s->sc->classes[v->cls];
    if (GS__SIM_ROOM(v->pods, v->npods, v->cap, 32))
        return GS_ENOMEM;
    struct gs_request r;
    bool shared;
    gs_simbuild_request(s->sc, s->st, s->share_ok, v->cls, &r, &shared);
    int rc = gs__sim_new_pod(s, v->cls, c->util, c->gpu_mem_mib, &r, SVC_WORK_S, -1);
    if (rc)
        return rc;
    s->pods[s->npods - 1].svc = k;
    v->pods[v->npods++] = s->npods - 1;
    v->created = true;
    return 0;
}

static bool svc_ready(const struct sim *s, const struct pod *p)
{
    return p->state == P_RUNNING &&
           s->now >= p->run_start + s->sc->classes[p->cls].service.startup_s;
}

/* The order a ReplicaSet deletes pods in (controller.ActivePodsWithRanks): not scheduled
 * first, then not ready, then the most recently ready; among equals the newest. */
static bool svc_delete_before(const struct sim *s, int a, int b)
{
    const struct pod *pa = &s->pods[a], *pb = &s->pods[b];
    int ta = pa->state != P_RUNNING ? 0 : svc_ready(s, pa) ? 2 : 1;
    int tb = pb->state != P_RUNNING ? 0 : svc_ready(s, pb) ? 2 : 1;
    if (ta != tb)
        return ta < tb;
    if (ta == 2 && pa->run_start != pb->run_start)
        return pa->run_start > pb->run_start;
    return a > b;
}

static int svc_scale(struct sim *s, int k, int32_t want, const struct gs_hpa_decision *d)
{
    struct deploy *v = &s->svc.v[k];
    int from = v->npods, rc = 0;
    char line[600];
    size_t o = (size_t)snprintf(line, sizeof(line), "SCALE %s %d -> %d %s proposal=%d rate=%.2f",
                                s->sc->classes[v->cls].name, from, (int)want, d->reason,
                                (int)d->proposal, v->rate);
    while (v->npods < want && !rc)
        rc = svc_add_replica(s, k);
    int removed = 0;
    while (v->npods > want && !rc) {
        int best = 0;
        for (int j = 1; j < v->npods; j++)
            if (svc_delete_before(s, v->pods[j], v->pods[best]))
                best = j;
        int pi = v->pods[best];
        v->pods[best] = v->pods[--v->npods];
        if (s->trace && o < sizeof(line)) {
            char name[GS_NAME_MAX + 16];
            gs__sim_pod_name(s, pi, name, sizeof(name));
            o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s",
                                  removed ? "," : " deleted=", name);
        }
        removed++;
        rc = gs__sim_delete_pod(s, pi);
    }
    if (want > from)
        v->scale_ups++;
    else
        v->scale_downs++;
    if (s->trace)
        s->trace(s->trace_ctx, s->now, line);
    return rc;
}

/* What replica p holds, as the agent tells a pod's devices apart (core/podmetric.h): the
 * model of its (first) GPU and the kind of device; false when it holds no GPU. */
static bool svc_device(const struct sim *s, const struct pod *p, int *model,
                       enum gs_pod_device *dev)
{
    if (p->alloc.ndev == 0)
        return false;
    const struct gs_gpu *g = &s->c.gpus[p->alloc.gpu[0]];
    *model = g->model;
    if (p->alloc.kind == GS_REQ_MIG)
        *dev = GS_PODDEV_MIG;
    else if (g->mode == GS_GPU_TIMESLICE)
        *dev = GS_PODDEV_TIMESLICE;
    else if (g->mode == GS_GPU_MPS)
        *dev = GS_PODDEV_MPS;
    else if (p->alloc.kind == GS_REQ_FRACTION)
        *dev = GS_PODDEV_FRACTION;
    else
        *dev = GS_PODDEV_WHOLE;
    return true;
}

/* Every 15 s: the requests of the next 15 s against the ready replicas (each replica's busy
 * share follows its load), then the HPA's sync. */
int gs__deploy_tick(struct sim *s, int k, bool *sched)
{
    struct deploy *v = &s->svc.v[k];
    const struct gs_sc_service *sv = &s->sc->classes[v->cls].service;
    double span = fmin(GS_HPA_SYNC_S, s->sc->duration_s - s->now);
    bool measured = s->now >= s->sc->warmup_s && span > 0;
    double lam = gs_svc_rate(sv, s->sc->seed, k, s->now + GS_HPA_SYNC_S / 2);
    v->rate = lam;
    if (v->created) /* the replicas created at the start */
        *sched = true;
    v->created = false;
    int nready = 0, nstarting = 0, npending = 0, rc = 0;
    double units = 0, cost_h = 0;
    for (int j = 0; j < v->npods; j++) {
        const struct pod *p = &s->pods[v->pods[j]];
        if (p->state == P_RUNNING || p->state == P_HELD) {
            double c;
            units += gs__sim_pod_units(s, p, &c);
            cost_h += c;
        }
        if (svc_ready(s, p))
            nready++;
        else if (p->state == P_RUNNING)
            nstarting++;
        else
            npending++;
    }
    struct gs_hpa_obs obs[GS_HPA_MAX_METRICS];
    memset(obs, 0, sizeof(obs));
    int metric[GS_HPA_MAX_METRICS];
    for (int m = 0; m < sv->hpa.nmetrics; m++)
        metric[m] = gs_podmetric_find(sv->hpa.metric[m].name);
    for (int j = 0; j < v->npods && !rc; j++) {
        int pi = v->pods[j];
        struct pod *p = &s->pods[pi];
        if (!svc_ready(s, p)) {
            rc = gs__sim_set_busy(s, pi, 0);
            continue;
        }
        struct gs_svc_replica r;
        double share = lam / nready;
        gs_svc_replica(sv, share, p->rate, &r);
        rc = gs__sim_set_busy(s, pi, r.rho < 1.0 ? r.rho : 1.0);
        if (measured)
            v->used_s += gs__sim_pod_used(p) * span;
        /* each metric as the replica's device gives it: one the agent cannot measure
         * there is missing for this pod, as the metrics API would return nothing */
        int model = -1;
        enum gs_pod_device dev = GS_PODDEV_WHOLE;
        bool gpu = svc_device(s, p, &model, &dev);
        for (int m = 0; m < sv->hpa.nmetrics; m++) {
            bool server = gs_podmetric_source(metric[m]) == GS_PODMETRIC_SERVER;
            if (!server && (!gpu || !gs_podmetric_has(metric[m], model, dev))) {
                obs[m].nmissing++;
                continue;
            }
            obs[m].sum += metric[m] == GS_PODMETRIC_GPU_UTILIZATION ? r.util_pct : r.latency_ms;
            obs[m].nready++;
        }
        if (measured) {
            v->requests += share * span;
            v->missed += share * span * r.miss;
            if (!rc)
                rc = gs_svc_mix_add(&v->mix, share * span, r.mean_s);
        }
    }
    if (measured) {
        if (nready == 0) { /* nobody serves: every request times out */
            v->requests += lam * span;
            v->missed += lam * span;
            if (!rc)
                rc = gs_svc_mix_add(&v->mix, lam * span, INFINITY);
        }
        v->unit_s += units * span;
        v->cost += cost_h * span / 3600.0;
        v->replica_s += v->npods * span;
        v->span_s += span;
        if (v->npods > v->replicas_max)
            v->replicas_max = v->npods;
    }
    if (rc || !v->autoscale)
        return rc;
    for (int m = 0; m < sv->hpa.nmetrics; m++) {
        obs[m].nunready = npending;
        obs[m].nmissing += nstarting; /* running, not serving yet: no value */
    }
    struct gs_hpa_decision d;
    int32_t want = gs_hpa_sync(&sv->hpa, &v->hpa, s->now, v->npods, obs, &d);
    if (want == v->npods)
        return 0;
    *sched = true;
    rc = svc_scale(s, k, want, &d);
    v->created = false;
    return rc;
}

int gs__deploy_start(struct sim *s)
{
    for (int k = 0; k < s->sc->nclasses; k++)
        s->svc.n += s->sc->classes[k].service.on;
    if (s->svc.n == 0)
        return 0;
    s->svc.v = calloc((size_t)s->svc.n, sizeof(*s->svc.v));
    if (!s->svc.v)
        return GS_ENOMEM;
    int rc = 0;
    for (int c = 0, k = 0; c < s->sc->nclasses && !rc; c++) {
        const struct gs_sc_service *sv = &s->sc->classes[c].service;
        if (!sv->on)
            continue;
        struct deploy *v = &s->svc.v[k];
        v->cls = c;
        v->autoscale = sv->autoscale && !s->svc.fixed;
        gs_hpa_state_init(&v->hpa);
        gs_svc_mix_init(&v->mix, sv->latency_max_s);
        int32_t n = s->svc.fixed && sv->autoscale ? gs_svc_peak_replicas(sv) : sv->replicas;
        for (int32_t i = 0; i < n && !rc; i++)
            rc = svc_add_replica(s, k);
        if (!rc)
            rc = gs_evheap_push(&s->h, 0, EV_SERVICE, k, 0);
        k++;
    }
    return rc;
}

void gs__deploy_sample(const struct sim *s, struct gs_sim_result *out, int i)
{
    for (int k = 0; k < s->svc.n; k++) {
        const struct deploy *v = &s->svc.v[k];
        int ready = 0;
        for (int j = 0; j < v->npods; j++)
            ready += svc_ready(s, &s->pods[v->pods[j]]);
        out->svc[k].replicas_ts[i] = (float)v->npods;
        out->svc[k].ready_ts[i] = (float)ready;
        out->svc[k].rate_ts[i] = (float)v->rate;
    }
}

void gs__deploy_results(const struct sim *s, struct gs_sim_result *out)
{
    out->fixed_services = s->svc.fixed;
    out->nsvc = s->svc.n;
    for (int k = 0; k < s->svc.n; k++) {
        const struct deploy *v = &s->svc.v[k];
        const struct gs_sc_service *sv = &s->sc->classes[v->cls].service;
        struct gs_svc_stats *o = &out->svc[k];
        o->cls = v->cls;
        o->fixed_replicas = sv->autoscale ? gs_svc_peak_replicas(sv) : sv->replicas;
        o->requests = v->requests;
        o->sla_miss_pct = v->requests > 0 ? 100.0 * v->missed / v->requests : 0;
        o->latency_p50 = gs_svc_mix_quantile(&v->mix, 0.50);
        o->latency_p99 = gs_svc_mix_quantile(&v->mix, 0.99);
        o->gpu_hours = v->unit_s / 3600.0;
        o->used_gpu_hours = v->used_s / 3600.0;
        o->cost = v->cost;
        o->replicas_mean = v->span_s > 0 ? v->replica_s / v->span_s : 0;
        o->replicas_max = v->replicas_max;
        o->scale_ups = v->scale_ups;
        o->scale_downs = v->scale_downs;
    }
}

void gs__deploy_release(struct gs__deploys *d)
{
    for (int k = 0; k < d->n && d->v; k++) {
        free(d->v[k].pods);
        gs_svc_mix_release(&d->v[k].mix);
    }
    free(d->v);
}
