/* dra.c - DRA allocation on partitionable GPUs, simulated (sim/dra.h). */
#include "dra.h"

#include "../base/error.h"
#include "../base/rng.h"
#include "../core/catalog.h"
#include "../core/cycle.h"
#include "../core/dra.h"
#include "../formats/dracycle.h"
#include "../formats/draobj.h"
#include "../formats/draslice.h"
#include "evheap.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct gs_drasim_spec gs_drasim_default = {
    .model = "A100-80GB",
    .nodes = 4,
    .gpus = 8,
    .duration_s = 26 * 3600.0,
    .warmup_s = 2 * 3600.0,
    .nclasses = 5,
    .cls =
        {
            {"embeddings-1g", "1g.10gb", 30, 1800, 0.6},
            {"chat-2g", "2g.20gb", 10, 3600, 0.5},
            {"llm-3g", "3g.40gb", 14, 5400, 0.5},
            {"finetune-4g", "4g.40gb", 8, 7200, 0.5},
            {"training-gpu", NULL, 0.5, 4 * 3600.0, 0.4},
        },
};

const char *gs_drasim_policy_name(enum gs_drasim_policy p)
{
    return p == GS_DRASIM_FIRSTFIT ? "firstfit" : "gpusched";
}

struct pod {
    int cls;
    double arrive, run, start; /* start < 0: pending */
    int node;
    struct gs_dra_result res;
    struct gs_alloc alloc; /* gpusched: its CPU and memory in the cluster */
};

/* A pod's CPU and memory per compute slice it takes, and a node's: never what refuses a pod. */
#define CPU_PER_SLICE 1000
#define MIB_PER_SLICE 8192

struct sim {
    const struct gs_drasim_spec *sp;
    int model, gpu_compute;
    struct gs_draobj_slice *slices;
    int nslices;
    struct gs_draobj_class classes[2];
    /* per class: its claim (the cycle's claim k), prepared once (CEL over every device) */
    struct gs_draobj_claim claims[GS_DRASIM_MAX_CLASSES];
    int nclaims;
    struct gs_draobj_prep prep[GS_DRASIM_MAX_CLASSES];
    bool prepped[GS_DRASIM_MAX_CLASSES];
    int need[GS_DRASIM_MAX_CLASSES]; /* compute slices a pod of the class takes */
    /* the scheduler's claim cycle, kept across passes: its world and state are the devices
     * (both policies); gpusched runs core/cycle.h on it with the cluster and engine below */
    struct gs_dracycle dc;
    bool dc_open;
    struct gs_cluster c; /* gpusched: the DRA nodes, CPU and memory only */
    struct gs_engine *e;
    int *node_used; /* compute slices allocated per node */
    int used;       /* in the cluster */
    struct pod *pods;
    int npods;
    struct gs_evheap done; /* completions: id is the pod */
};

static int32_t node_id(void *ctx, const char *node)
{
    const struct sim *s = ctx;
    int id;
    if (sscanf(node, "node-%d", &id) == 1 && id >= 0 && id < s->sp->nodes)
        return id;
    return -1;
}

static void release(struct sim *s)
{
    if (s->dc_open)
        gs_dracycle_release(&s->dc);
    gs_engine_free(s->e);
    gs_cluster_release(&s->c);
    for (int k = 0; k < GS_DRASIM_MAX_CLASSES; k++)
        if (s->prepped[k])
            gs_draobj_prep_release(&s->prep[k]);
    for (int k = 0; k < s->nclaims; k++)
        gs_draobj_claim_release(&s->claims[k]);
    for (int c = 0; c < 2; c++)
        gs_draobj_class_release(&s->classes[c]);
    for (int i = 0; i < s->nslices; i++)
        gs_draobj_slice_release(&s->slices[i]);
    free(s->slices);
    free(s->node_used);
    free(s->pods);
    gs_evheap_release(&s->done);
}

/* The world: every node's slices as the agent builds them, read as the scheduler reads them. */
static int build_world(struct sim *s, struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(s->model);
    int cap = 0, rc = 0;
    for (int n = 0; n < s->sp->nodes && !rc; n++) {
        struct gs_draslice_node dn;
        memset(&dn, 0, sizeof(dn));
        char name[32];
        snprintf(name, sizeof(name), "node-%d", n);
        dn.node = name;
        dn.generation = 1;
        dn.dynamic_mig = true;
        dn.ngpus = s->sp->gpus;
        for (int g = 0; g < dn.ngpus; g++) {
            struct gs_draslice_gpu *x = &dn.gpus[g];
            x->index = g;
            snprintf(x->uuid, sizeof(x->uuid), "GPU-sim-%d-%d", n, g);
            x->model = s->model;
            x->mem_mib = m->mem_mib;
            x->mig_enabled = true;
            x->healthy = true;
        }
        rc = gs_dracycle_node_slices(&dn, &s->slices, &s->nslices, &cap, err);
    }
    return rc;
}

static int prepare_claims(struct sim *s, struct gs_error *err)
{
    int rc = gs_dracycle_default_classes(s->classes, err);
    if (rc) {
        memset(s->classes, 0, sizeof(s->classes)); /* released by the call */
        return rc;
    }
    const struct gs_gpu_model *m = gs_catalog_get(s->model);
    for (int k = 0; k < s->sp->nclasses; k++) {
        const struct gs_drasim_class *cl = &s->sp->cls[k];
        char sel[256] = "";
        if (cl->profile) {
            int p = gs_catalog_find_profile(s->model, cl->profile);
            if (p < 0)
                return gs_error_set(err, GS_EINVAL, "class %s: %s has no MIG profile %s", cl->name,
                                    m->name, cl->profile);
            s->need[k] = m->profiles[p].compute;
            snprintf(sel, sizeof(sel),
                     ", \"selectors\": [{\"cel\": {\"expression\": "
                     "\"device.attributes['gpu.gpusched.io'].profile == '%s'\"}}]",
                     cl->profile);
        } else {
            s->need[k] = s->gpu_compute;
        }
        char text[1024];
        snprintf(text, sizeof(text),
                 "{\"metadata\": {\"namespace\": \"sim\", \"name\": \"%s\", \"uid\": \"uid-%d\"}, "
                 "\"spec\": {\"devices\": {\"requests\": [{\"name\": \"gpu\", \"exactly\": "
                 "{\"deviceClassName\": \"%s\"%s, \"allocationMode\": \"ExactCount\", "
                 "\"count\": 1}}]}}}",
                 cl->name, k, cl->profile ? "mig.gpusched.io" : "gpu.gpusched.io", sel);
        json_t *o = json_loads(text, 0, NULL);
        rc = o ? gs_draobj_claim_read(o, &s->claims[k], err) : GS_ENOMEM;
        json_decref(o);
        if (rc)
            return rc;
        s->nclaims++;
    }
    /* the world built from the slices as the scheduler builds it each cycle */
    if (gs_dracycle_init(&s->dc, s->classes, 2, s->slices, s->nslices, s->claims, s->nclaims, false,
                         0, node_id, s))
        return gs_error_set(err, GS_ENOMEM, "cannot build the DRA world of the simulated slices");
    s->dc_open = true;
    for (int k = 0; k < s->sp->nclasses; k++) {
        const struct gs_drasim_class *cl = &s->sp->cls[k];
        rc = gs_draobj_prepare(&s->claims[k], s->classes, 2, &s->dc.w.w, &s->prep[k], err);
        if (rc)
            return rc;
        s->prepped[k] = true;
        if (s->prep[k].c.req[0].sub[0].ncand == 0)
            return gs_error_set(err, GS_EINVAL, "class %s: no device of the slices matches",
                                cl->name);
    }
    return 0;
}

/* kube-scheduler's allocator for a one-device request on a node: the first device in slice
 * order whose counters fit. */
static int first_fit(const struct sim *s, int k, int node)
{
    const struct gs_dra_sub *sub = &s->prep[k].c.req[0].sub[0];
    for (int i = 0; i < sub->ncand; i++) {
        int d = sub->cand[i];
        if (s->dc.w.w.dev[d].node == node && gs_dra_fits(&s->dc.st, d))
            return d;
    }
    return -1;
}

/* Pod i took its devices on node. */
static void started(struct sim *s, int i, int node)
{
    s->pods[i].node = node;
    s->node_used[node] += s->need[s->pods[i].cls];
    s->used += s->need[s->pods[i].cls];
}

static void request(const struct sim *s, int k, struct gs_request *r)
{
    memset(r, 0, sizeof(*r));
    r->kind = GS_REQ_NONE;
    r->cpu_milli = (int64_t)s->need[k] * CPU_PER_SLICE;
    r->mem_mib = (int64_t)s->need[k] * MIB_PER_SLICE;
}

/* gpusched: one scheduling cycle (core/cycle.h) over the pending pods pend[0..n), in arrival
 * order, with the scheduler's DRA hooks on the claim cycle kept across passes: each pod names
 * its class's claim, prepared once. Each pod bound starts (its start time is the caller's);
 * frag (or NULL) counts those left waiting while the cluster had the compute slices free.
 * Returns the pods bound, or a negative error. */
static int cycle(struct sim *s, const int *pend, int n, double now, long *frag)
{
    struct gs_cyc_pod *cp = calloc((size_t)n + 1, sizeof(*cp));
    int rc = cp ? gs_dracycle_next(&s->dc, n) : GS_ENOMEM;
    for (int q = 0; !rc && q < n; q++) {
        int k = s->pods[pend[q]].cls;
        request(s, k, &cp[q].req);
        cp[q].queue = GS_QUEUE_NONE;
        cp[q].gang = -1;
        cp[q].seq = (uint64_t)pend[q];
        cp[q].nominated = -1;
        cp[q].due = true;
        rc = gs_dracycle_pod_borrow(&s->dc, q, k, &s->prep[k]);
    }
    struct gs_dracycle_hooks h;
    struct gs_cycle_in in = {.c = &s->c, .e = s->e, .pods = cp, .npods = n, .now_s = now};
    gs_dracycle_hooks_init(&h, &s->dc, NULL, &in.h);
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    if (!rc)
        rc = gs_cycle_run(&in, &out);
    int total = s->sp->nodes * s->sp->gpus * s->gpu_compute, bound = 0;
    for (int j = 0; !rc && j < out.n; j++) {
        const struct gs_cyc_decision *d = &out.d[j];
        struct pod *p = &s->pods[pend[d->pod]];
        if (d->kind == GS_CYC_BIND) {
            p->res = s->dc.pods[d->pod]->res[0];
            p->alloc = d->alloc;
            started(s, pend[d->pod], d->node);
            bound++;
        } else if (d->kind == GS_CYC_WAIT && frag && total - s->used >= s->need[p->cls]) {
            (*frag)++;
        }
    }
    gs_cycle_out_release(&out);
    free(cp);
    return rc ? rc : bound;
}

/* Place pod i now; true when placed. */
static bool place(struct sim *s, enum gs_drasim_policy pol, int i)
{
    struct pod *p = &s->pods[i];
    int k = p->cls, best = -1;
    if (pol == GS_DRASIM_FIRSTFIT) {
        for (int n = 0; n < s->sp->nodes; n++)
            if (first_fit(s, k, n) >= 0 && (best < 0 || s->node_used[n] < s->node_used[best]))
                best = n;
        if (best < 0)
            return false;
        int d = first_fit(s, k, best);
        gs_dra_take(&s->dc.st, d, i);
        p->res.n = 1;
        p->res.dev[0] = d;
    } else {
        return cycle(s, &i, 1, 0, NULL) == 1;
    }
    started(s, i, best);
    return true;
}

static int cmp_arrival(const void *a, const void *b)
{
    const struct pod *x = a, *y = b;
    if (x->arrive != y->arrive)
        return x->arrive < y->arrive ? -1 : 1;
    return x->cls - y->cls;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double q)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    int i = (int)ceil(q * n) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* gpusched's scheduler: a cluster of the DRA nodes, CPU and memory only (their GPUs are
 * ResourceSlices), and the engine the daemon sizes for it. */
static int open_cluster(struct sim *s, struct gs_error *err)
{
    gs_cluster_init(&s->c);
    int64_t slices = (int64_t)s->sp->gpus * s->gpu_compute + 8;
    for (int n = 0; n < s->sp->nodes; n++) {
        char name[32];
        snprintf(name, sizeof(name), "node-%d", n);
        if (gs_cluster_add_node(&s->c, name, -1, 0, slices * CPU_PER_SLICE, slices * MIB_PER_SLICE,
                                GS_GPU_WHOLE, 1, NULL) < 0)
            return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    s->e = gs_engine_new(gs_policy_find("gpusched"), NULL, gs_cycle_engine_nodes(s->c.nnodes), 0);
    return s->e ? 0 : gs_error_set(err, GS_ENOMEM, "out of memory");
}

/* The cluster and the claims, prepared once per class. */
static int sim_open(struct sim *s, const struct gs_drasim_spec *sp, enum gs_drasim_policy pol,
                    struct gs_error *err)
{
    memset(s, 0, sizeof(*s));
    gs_evheap_init(&s->done);
    s->sp = sp;
    s->model = gs_catalog_find(sp->model);
    if (s->model < 0 || !gs_catalog_mig_capable(s->model))
        return gs_error_set(err, GS_EINVAL, "model '%s': not a MIG-capable catalog model",
                            sp->model ? sp->model : "");
    if (sp->nodes < 1 || sp->nodes > 1000 || sp->gpus < 1 || sp->gpus > GS_DRASLICE_MAX_GPUS ||
        sp->nclasses < 1 || sp->nclasses > GS_DRASIM_MAX_CLASSES)
        return gs_error_set(err, GS_EINVAL, "1-1000 nodes of 1-%d GPUs and 1-%d classes",
                            GS_DRASLICE_MAX_GPUS, GS_DRASIM_MAX_CLASSES);
    s->gpu_compute = gs_catalog_get(s->model)->mig_compute;
    int rc = build_world(s, err);
    if (!rc)
        rc = prepare_claims(s, err);
    s->node_used = rc ? NULL : calloc((size_t)sp->nodes, sizeof(int));
    if (!rc && !s->node_used)
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    if (!rc && pol == GS_DRASIM_GPUSCHED)
        rc = open_cluster(s, err);
    if (rc)
        release(s);
    return rc;
}

/* The pods of a run: arrivals per class, on one seeded stream each, in arrival order over
 * every class; each with its run time, drawn now so both policies see the same one. */
static int draw_arrivals(struct sim *s, uint64_t seed, struct gs_error *err)
{
    const struct gs_drasim_spec *sp = s->sp;
    int cap = 0;
    for (int k = 0; k < sp->nclasses; k++) {
        struct gs_rng rng;
        gs_rng_init(&rng, seed * 1000003u + (uint64_t)k);
        double rate = sp->cls[k].per_hour / 3600.0;
        for (double t = rate > 0 ? gs_rng_exp(&rng, 1 / rate) : 1e300; t < sp->duration_s;
             t += gs_rng_exp(&rng, 1 / rate)) {
            if (s->npods == cap) {
                cap = cap ? 2 * cap : 1024;
                struct pod *v = realloc(s->pods, sizeof(*v) * (size_t)cap);
                if (!v)
                    return gs_error_set(err, GS_ENOMEM, "out of memory");
                s->pods = v;
            }
            struct pod *p = &s->pods[s->npods++];
            memset(p, 0, sizeof(*p));
            p->cls = k;
            p->arrive = t;
            p->start = -1;
            p->node = -1;
            p->run = gs_rng_lognormal(&rng, sp->cls[k].median_s, sp->cls[k].sigma);
        }
    }
    qsort(s->pods, (size_t)s->npods, sizeof(*s->pods), cmp_arrival);
    return 0;
}

/* gpusched's pass: one cycle over the queue; the pods bound start now. Returns the pods left
 * pending (kept in arrival order in pending), or a negative error. */
static int pass(struct sim *s, int *pending, int npend, double t, struct gs_drasim_result *out)
{
    int rc = cycle(s, pending, npend, t, &out->frag_fails);
    if (rc < 0)
        return rc;
    int w = 0;
    for (int q = 0; q < npend; q++) {
        struct pod *p = &s->pods[pending[q]];
        if (p->node < 0) {
            pending[w++] = pending[q];
            continue;
        }
        p->start = t;
        if (gs_evheap_push(&s->done, t + p->run, 0, pending[q], 0))
            return GS_ENOMEM;
    }
    return w;
}

/* The run: at each instant completions, then arrivals, then a pass over the FIFO queue
 * (pending: room for every pod). */
static int run_events(struct sim *s, enum gs_drasim_policy pol, int *pending,
                      struct gs_drasim_result *out, struct gs_error *err)
{
    const struct gs_drasim_spec *sp = s->sp;
    int total = sp->nodes * sp->gpus * s->gpu_compute;
    int npend = 0, next = 0;
    double now = 0, integ = 0, span = 0;
    while (next < s->npods || gs_evheap_len(&s->done) > 0) {
        const struct gs_event *top = gs_evheap_peek(&s->done);
        double ta = next < s->npods ? s->pods[next].arrive : 1e300;
        double tc = top ? top->t : 1e300;
        double t = ta < tc ? ta : tc;
        if (t > sp->duration_s)
            t = sp->duration_s;
        double a = now > sp->warmup_s ? now : sp->warmup_s;
        if (t > a) {
            integ += (double)s->used / total * (t - a);
            span += t - a;
        }
        now = t;
        if (t >= sp->duration_s)
            break;
        while ((top = gs_evheap_peek(&s->done)) && top->t <= t) {
            struct pod *p = &s->pods[gs_evheap_pop(&s->done).id];
            for (int j = 0; j < p->res.n; j++)
                gs_dra_give(&s->dc.st, p->res.dev[j]);
            if (pol == GS_DRASIM_GPUSCHED) {
                struct gs_request r;
                request(s, p->cls, &r);
                gs_cluster_unbind(&s->c, &r, &p->alloc);
            }
            s->node_used[p->node] -= s->need[p->cls];
            s->used -= s->need[p->cls];
        }
        for (; next < s->npods && s->pods[next].arrive <= t; next++) {
            pending[npend++] = next;
            if (s->pods[next].arrive >= sp->warmup_s) {
                out->arrived++;
                out->cls_arrived[s->pods[next].cls]++;
            }
        }
        if (pol == GS_DRASIM_GPUSCHED && npend > 0) {
            if ((npend = pass(s, pending, npend, t, out)) < 0)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
            continue;
        }
        int w = 0;
        for (int q = 0; q < npend; q++) {
            int i = pending[q];
            struct pod *p = &s->pods[i];
            if (place(s, pol, i)) {
                p->start = t;
                if (gs_evheap_push(&s->done, t + p->run, 0, i, 0))
                    return gs_error_set(err, GS_ENOMEM, "out of memory");
                continue;
            }
            if (total - s->used >= s->need[p->cls])
                out->frag_fails++;
            pending[w++] = i;
        }
        npend = w;
    }
    out->alloc_share = span > 0 ? integ / span : 0;
    return 0;
}

/* Waits and counts after the warm-up (waits: room for every pod). */
static void dra_results(const struct sim *s, double *waits, struct gs_drasim_result *out)
{
    const struct gs_drasim_spec *sp = s->sp;
    out->pending_end = 0;
    int nw = 0;
    double sum = 0;
    for (int k = 0; k < sp->nclasses; k++) {
        int nk = 0;
        for (int i = 0; i < s->npods; i++) {
            const struct pod *p = &s->pods[i];
            if (p->cls != k || p->arrive < sp->warmup_s)
                continue;
            double wt = p->start >= 0 ? p->start - p->arrive : sp->duration_s - p->arrive;
            if (p->start >= 0) {
                out->started++;
                out->cls_started[k]++;
            } else {
                out->pending_end++;
            }
            waits[nw + nk++] = wt;
            sum += wt;
        }
        /* a class's p99 from its own waits (sorted in place, then all of them below) */
        out->cls_wait_p99[k] = pct(&waits[nw], nk, 0.99);
        nw += nk;
    }
    out->wait_mean = nw ? sum / nw : 0;
    out->wait_p50 = pct(waits, nw, 0.5);
    out->wait_p99 = pct(waits, nw, 0.99);
}

int gs_drasim_run(const struct gs_drasim_spec *sp, enum gs_drasim_policy pol, uint64_t seed,
                  struct gs_drasim_result *out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    struct sim s;
    int rc = sim_open(&s, sp, pol, err);
    if (rc)
        return rc;
    int *pending = NULL;
    double *waits = NULL;
    if ((rc = draw_arrivals(&s, seed, err)))
        goto out;
    pending = malloc(sizeof(int) * (size_t)(s.npods ? s.npods : 1));
    waits = malloc(sizeof(double) * (size_t)(s.npods ? s.npods : 1));
    if (!pending || !waits) {
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        goto out;
    }
    if (!(rc = run_events(&s, pol, pending, out, err)))
        dra_results(&s, waits, out);
out:
    free(pending);
    free(waits);
    release(&s);
    return rc;
}

int gs_drasim_fill(const struct gs_drasim_spec *sp, enum gs_drasim_policy pol, uint64_t seed,
                   double *unallocated, struct gs_error *err)
{
    struct sim s;
    int rc = sim_open(&s, sp, pol, err);
    if (rc)
        return rc;
    int cap = sp->nodes * sp->gpus * s.gpu_compute + 1;
    s.pods = calloc((size_t)cap, sizeof(*s.pods));
    if (!s.pods)
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    double wsum = 0;
    for (int k = 0; k < sp->nclasses; k++)
        wsum += sp->cls[k].per_hour;
    /* pods drawn from the class mix, each placed or refused, until the demand that arrived
     * reaches the cluster's compute slices */
    struct gs_rng rng;
    gs_rng_init(&rng, seed);
    int total = cap - 1, arrived = 0;
    while (!rc && arrived < total && s.npods < cap) {
        double u = gs_rng_double(&rng) * wsum;
        int k = 0;
        while (k < sp->nclasses - 1 && u >= sp->cls[k].per_hour) {
            u -= sp->cls[k].per_hour;
            k++;
        }
        int i = s.npods++;
        s.pods[i].cls = k;
        arrived += s.need[k];
        place(&s, pol, i);
    }
    *unallocated = total > 0 ? 1.0 - (double)s.used / total : 0;
    release(&s);
    return rc;
}

int gs_drasim_report(const struct gs_drasim_spec *sp, uint64_t lo, uint64_t hi, bool json,
                     struct gs_buf *o, struct gs_error *err)
{
    int nseeds = (int)(hi - lo + 1);
    if (hi < lo || nseeds > 1000)
        return gs_error_set(err, GS_EINVAL, "seeds %llu-%llu: expected LO <= HI, at most 1000",
                            (unsigned long long)lo, (unsigned long long)hi);
    struct gs_drasim_result *r = calloc((size_t)(GS_DRASIM_POLICIES * nseeds), sizeof(*r));
    if (!r)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    int rc = 0;
    for (int p = 0; p < GS_DRASIM_POLICIES && !rc; p++)
        for (int i = 0; i < nseeds && !rc; i++) {
            rc = gs_drasim_run(sp, (enum gs_drasim_policy)p, lo + (uint64_t)i, &r[p * nseeds + i],
                               err);
            if (!rc)
                rc = gs_drasim_fill(sp, (enum gs_drasim_policy)p, lo + (uint64_t)i,
                                    &r[p * nseeds + i].unalloc_full, err);
        }
    if (rc) {
        free(r);
        return rc;
    }
    /* mean and standard deviation of a field over the seeds */
#define STAT(p, field, mean, sd)                                                                   \
    do {                                                                                           \
        double s1 = 0, s2 = 0;                                                                     \
        for (int i_ = 0; i_ < nseeds; i_++) {                                                      \
            double v_ = (double)r[(p)*nseeds + i_].field;                                          \
            s1 += v_;                                                                              \
            s2 += v_ * v_;                                                                         \
        }                                                                                          \
        mean = s1 / nseeds;                                                                        \
        double var_ = s2 / nseeds - mean * mean;                                                   \
        sd = var_ > 0 ? sqrt(var_) : 0;                                                            \
    } while (0)
    json_t *root = json ? json_object() : NULL;
    json_t *pols = json ? json_array() : NULL;
    if (!json)
        rc |= gs_buf_printf(o,
                            "DRA on partitionable GPUs: %d nodes x %d %s, every GPU dynamic MIG; "
                            "%.0fh simulated (%.0fh warm-up), seeds %llu-%llu\n\n"
                            "%-9s %14s %14s %14s %12s %12s %14s %16s\n",
                            sp->nodes, sp->gpus, sp->model, sp->duration_s / 3600,
                            sp->warmup_s / 3600, (unsigned long long)lo, (unsigned long long)hi,
                            "policy", "allocated %", "wait p50 s", "wait p99 s", "started",
                            "pending end", "frag. refusals", "unalloc. @100%");
    for (int p = 0; p < GS_DRASIM_POLICIES; p++) {
        double am, as, pm, ps, qm, qs, sm, ss, em, es, fm, fs;
        STAT(p, alloc_share, am, as);
        STAT(p, wait_p50, pm, ps);
        STAT(p, wait_p99, qm, qs);
        STAT(p, started, sm, ss);
        STAT(p, pending_end, em, es);
        STAT(p, frag_fails, fm, fs);
        double um, us;
        STAT(p, unalloc_full, um, us);
        if (!json) {
            rc |= gs_buf_printf(o,
                                "%-9s %7.1f ± %4.1f %7.0f ± %4.0f %7.0f ± %4.0f %6.0f ± %3.0f "
                                "%6.0f ± %3.0f %7.0f ± %4.0f %8.2f ± %4.2f\n",
                                gs_drasim_policy_name((enum gs_drasim_policy)p), 100 * am, 100 * as,
                                pm, ps, qm, qs, sm, ss, em, es, fm, fs, 100 * um, 100 * us);
            continue;
        }
        json_t *j = json_object();
        json_object_set_new(j, "policy",
                            json_string(gs_drasim_policy_name((enum gs_drasim_policy)p)));
        json_object_set_new(j, "allocated_share_mean", json_real(am));
        json_object_set_new(j, "allocated_share_sd", json_real(as));
        json_object_set_new(j, "wait_p50_s_mean", json_real(pm));
        json_object_set_new(j, "wait_p99_s_mean", json_real(qm));
        json_object_set_new(j, "wait_p99_s_sd", json_real(qs));
        json_object_set_new(j, "started_mean", json_real(sm));
        json_object_set_new(j, "pending_end_mean", json_real(em));
        json_object_set_new(j, "frag_refusals_mean", json_real(fm));
        json_object_set_new(j, "unallocated_at_full_demand_mean", json_real(um));
        json_object_set_new(j, "unallocated_at_full_demand_sd", json_real(us));
        json_t *cls = json_array();
        for (int k = 0; k < sp->nclasses; k++) {
            double cm, cs, wm, ws;
            STAT(p, cls_started[k], cm, cs);
            STAT(p, cls_wait_p99[k], wm, ws);
            json_t *c = json_object();
            json_object_set_new(c, "class", json_string(sp->cls[k].name));
            json_object_set_new(c, "profile",
                                json_string(sp->cls[k].profile ? sp->cls[k].profile : "whole GPU"));
            json_object_set_new(c, "started_mean", json_real(cm));
            json_object_set_new(c, "wait_p99_s_mean", json_real(wm));
            json_array_append_new(cls, c);
            (void)cs;
            (void)ws;
        }
        json_object_set_new(j, "classes", cls);
        json_object_set_new(j, "seeds", json_integer(nseeds));
        json_array_append_new(pols, j);
    }
    if (!json) {
        rc |= gs_buf_puts(o, "\nper class, p99 wait (s), mean over the seeds:\n");
        for (int k = 0; k < sp->nclasses; k++) {
            rc |= gs_buf_printf(o, "  %-14s %-9s", sp->cls[k].name,
                                sp->cls[k].profile ? sp->cls[k].profile : "whole");
            for (int p = 0; p < GS_DRASIM_POLICIES; p++) {
                double wm, ws;
                STAT(p, cls_wait_p99[k], wm, ws);
                rc |= gs_buf_printf(o, "  %s %7.0f ± %5.0f",
                                    gs_drasim_policy_name((enum gs_drasim_policy)p), wm, ws);
            }
            rc |= gs_buf_puts(o, "\n");
        }
    } else {
        json_object_set_new(root, "model", json_string(sp->model));
        json_object_set_new(root, "nodes", json_integer(sp->nodes));
        json_object_set_new(root, "gpus_per_node", json_integer(sp->gpus));
        json_object_set_new(root, "policies", pols);
        char *txt = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        json_decref(root);
        rc |= txt ? gs_buf_puts(o, txt) | gs_buf_puts(o, "\n") : GS_ENOMEM;
        free(txt);
    }
#undef STAT
    free(r);
    return rc ? gs_error_set(err, GS_ENOMEM, "out of memory") : 0;
}
