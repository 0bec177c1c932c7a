/* dra.c - DRA allocation on partitionable GPUs, simulated (sim/dra.h). */
#include "dra.h"

#include "../base/error.h"
#include "../base/rng.h"
#include "../core/catalog.h"
#include "../core/dra.h"
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

/* The two DeviceClasses of deploy/dra/deviceclasses.yaml. */
static const char *const class_json[2] = {
    "{\"metadata\": {\"name\": \"gpu.gpusched.io\"}, \"spec\": {\"selectors\": [{\"cel\": "
    "{\"expression\": \"device.driver == 'gpu.gpusched.io' && "
    "device.attributes['gpu.gpusched.io'].type == 'gpu'\"}}]}}",
    "{\"metadata\": {\"name\": \"mig.gpusched.io\"}, \"spec\": {\"selectors\": [{\"cel\": "
    "{\"expression\": \"device.driver == 'gpu.gpusched.io' && "
    "device.attributes['gpu.gpusched.io'].type == 'mig'\"}}]}}",
};

struct pod {
    int cls;
    double arrive, run, start; /* start < 0: pending */
    int node;
    struct gs_dra_result res;
};

struct sim {
    const struct gs_drasim_spec *sp;
    int model, gpu_compute;
    struct gs_draobj_world world;
    struct gs_draobj_slice *slices;
    int nslices;
    struct gs_draobj_class classes[2];
    struct gs_draobj_prep prep[GS_DRASIM_MAX_CLASSES];
    bool prepped[GS_DRASIM_MAX_CLASSES];
    int need[GS_DRASIM_MAX_CLASSES]; /* compute slices a pod of the class takes */
    struct gs_dra_state st;
    double *weight; /* per device: the demand for it (gpusched's allocator) */
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
    gs_dra_state_release(&s->st);
    for (int k = 0; k < GS_DRASIM_MAX_CLASSES; k++)
        if (s->prepped[k])
            gs_draobj_prep_release(&s->prep[k]);
    for (int c = 0; c < 2; c++)
        gs_draobj_class_release(&s->classes[c]);
    gs_draobj_world_release(&s->world);
    for (int i = 0; i < s->nslices; i++)
        gs_draobj_slice_release(&s->slices[i]);
    free(s->slices);
    free(s->weight);
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
        json_t *arr = gs_draslice_build(&dn, err);
        if (!arr)
            return GS_EINVAL;
        size_t i;
        json_t *o;
        json_array_foreach(arr, i, o)
        {
            if (s->nslices == cap) {
                cap = cap ? 2 * cap : 16;
                struct gs_draobj_slice *v = realloc(s->slices, sizeof(*v) * (size_t)cap);
                if (!v) {
                    rc = gs_error_set(err, GS_ENOMEM, "out of memory");
                    break;
                }
                s->slices = v;
            }
            /* the API server names a slice from its generateName */
            json_t *md = json_object_get(o, "metadata");
            char sname[96];
            snprintf(sname, sizeof(sname), "node-%d-slice-%zu", n, i);
            json_object_set_new(md, "name", json_string(sname));
            if ((rc = gs_draobj_slice_read(o, &s->slices[s->nslices], err)))
                break;
            s->nslices++;
        }
        json_decref(arr);
    }
    if (rc)
        return rc;
    const struct gs_draobj_slice **ptr =
        malloc(sizeof(*ptr) * (size_t)(s->nslices ? s->nslices : 1));
    if (!ptr)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    for (int i = 0; i < s->nslices; i++)
        ptr[i] = &s->slices[i];
    rc = gs_draobj_world_build(ptr, s->nslices, node_id, s, &s->world);
    free(ptr);
    if (rc)
        return gs_error_set(err, rc, "cannot build the DRA world of the simulated slices");
    return 0;
}

static int prepare_claims(struct sim *s, struct gs_error *err)
{
    for (int c = 0; c < 2; c++) {
        json_t *o = json_loads(class_json[c], 0, NULL);
        int rc = o ? gs_draobj_class_read(o, &s->classes[c], err) : GS_ENOMEM;
        json_decref(o);
        if (rc)
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
        struct gs_draobj_claim claim;
        int rc = o ? gs_draobj_claim_read(o, &claim, err) : GS_ENOMEM;
        json_decref(o);
        if (rc)
            return rc;
        rc = gs_draobj_prepare(&claim, s->classes, 2, &s->world.w, &s->prep[k], err);
        gs_draobj_claim_release(&claim);
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
        if (s->world.w.dev[d].node == node && gs_dra_fits(&s->st, d))
            return d;
    }
    return -1;
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
        gs_dra_take(&s->st, d, i);
        p->res.n = 1;
        p->res.dev[0] = d;
    } else {
        for (int n = 0; n < s->sp->nodes; n++) {
            struct gs_dra_result r;
            if (gs_dra_allocate(&s->st, &s->prep[k].c, n, i, &r) != 0)
                continue;
            for (int j = 0; j < r.n; j++)
                gs_dra_give(&s->st, r.dev[j]);
            if (best < 0 || s->node_used[n] > s->node_used[best])
                best = n;
        }
        if (best < 0 || gs_dra_allocate(&s->st, &s->prep[k].c, best, i, &p->res) != 0)
            return false;
    }
    p->node = best;
    s->node_used[best] += s->need[k];
    s->used += s->need[k];
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

/* The cluster, the claims and, for gpusched, the demand as weights: what gpusched's scheduler
 * knows of it, each class's rate of compute slices (arrivals x slices) spread over the devices
 * its claim admits. */
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
    if (!rc && gs_dra_state_init(&s->st, &s->world.w))
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    s->node_used = rc ? NULL : calloc((size_t)sp->nodes, sizeof(int));
    if (!rc && !s->node_used)
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    if (!rc && pol == GS_DRASIM_GPUSCHED) {
        s->weight = calloc((size_t)s->world.w.ndev + 1, sizeof(double));
        if (!s->weight)
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        for (int k = 0; !rc && k < sp->nclasses; k++) {
            const struct gs_dra_sub *sub = &s->prep[k].c.req[0].sub[0];
            for (int i = 0; i < sub->ncand; i++)
                s->weight[sub->cand[i]] += sp->cls[k].per_hour * s->need[k];
        }
        s->st.weight = s->weight;
    }
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
                gs_dra_give(&s->st, p->res.dev[j]);
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
