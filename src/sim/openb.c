/* openb.c - the trace-replay experiment of the FGD paper on top of core/engine.c; the CLI's
 * `gpusched sim openb`, the openb tests and the simulator benchmark drive it. */
#include "openb.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "openbopt.h"
#include "pool.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int build_cluster(const struct gs_openb_spec *s, struct gs_cluster *c)
{
    gs_cluster_init(c);
    for (int i = 0; i < s->nnodes; i++) {
        const struct gs_openb_node *n = &s->nodes[i];
        int rc = gs_cluster_add_node(c, n->name, n->model, n->gpus, n->cpu_milli, n->mem_mib,
                                     GS_GPU_FRACTION, 0, NULL);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static double round2(double x)
{
    return nearbyint(x * 100.0) / 100.0;
}

/* The arrival sequence of one seed: shuffle, then resample to tune x capacity. *order is
 * malloc'd (caller frees); returns its length or GS_ENOMEM. */
static int arrivals(const struct gs_openb_spec *spec, uint64_t seed, int64_t cap_milli,
                    int32_t **order_out)
{
    struct gs_rng rng;
    gs_rng_init(&rng, seed);
    int64_t req_milli = 0;
    int n = spec->npods, cap = n + 16;
    int32_t *order = malloc(sizeof(*order) * (size_t)cap);
    *order_out = NULL;
    if (!order)
        return GS_ENOMEM;
    for (int i = 0; i < n; i++) {
        order[i] = i;
        req_milli += gs_request_total_milli(&spec->pods[i].req);
    }
    for (int i = n - 1; i > 0; i--) {
        int j = (int)gs_rng_below(&rng, (uint64_t)i + 1);
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    if (spec->tune > 0 && n > 0) {
        double target = spec->tune * (double)cap_milli;
        while ((double)req_milli > target && n > 0) {
            int idx = (int)gs_rng_below(&rng, (uint64_t)n);
            req_milli -= gs_request_total_milli(&spec->pods[order[idx]].req);
            memmove(&order[idx], &order[idx + 1], sizeof(*order) * (size_t)(n - idx - 1));
            n--;
        }
        for (;;) {
            int idx = (int)gs_rng_below(&rng, (uint64_t)spec->npods);
            const struct gs_request *r = &spec->pods[idx].req;
            /* the paper's simulator compares with the per-GPU share here; kept as is */
            int64_t per_gpu = r->kind == GS_REQ_NONE ? 0 : r->milli;
            if ((double)(req_milli + per_gpu) > target)
                break;
            if (n == cap) {
                int32_t *q = realloc(order, sizeof(*order) * (size_t)cap * 2);
                if (!q) {
                    free(order);
                    return GS_ENOMEM;
                }
                order = q;
                cap *= 2;
            }
            order[n++] = idx;
            req_milli += gs_request_total_milli(r);
        }
    }
    *order_out = order;
    return n;
}

/* The events the curve averages at bucket b (arrived % rounding to b, else those within
 * b +- 1.5): a run of consecutive events, since arrived demand only grows. Returns false
 * when there is none. */
static bool bucket_events(const double *arr_pct, int n, int b, int *k0, int *k1)
{
    *k0 = -1;
    for (int pass = 0; pass < 2 && *k0 < 0; pass++)
        for (int k = 0; k < n; k++) {
            bool in = pass == 0 ? (int)nearbyint(arr_pct[k]) == b
                                : arr_pct[k] >= b - 1 - 0.5 && arr_pct[k] < b + 1 + 0.5;
            if (!in)
                continue;
            if (*k0 < 0)
                *k0 = k;
            *k1 = k;
        }
    return *k0 >= 0;
}

const char *gs_openb_cand_name(int cand)
{
    static const char *names[GS_OPENB_CANDIDATES] = {"packer", "fgd+repair", "gpusched+repair"};
    return cand >= 0 && cand < GS_OPENB_CANDIDATES ? names[cand] : NULL;
}

/* Placed milli after each event k0..k1 (into used[0..k1-k0]) of one achievable offline
 * packing. GS_OPENB_GPUSCHED_REPAIRED: gpusched's engine on the arrivals up to k0, then the
 * repair local search with everything up to k0 known, then the engine on each later event as
 * it comes. GS_OPENB_FGD_REPAIRED: the same from fgd's placement. GS_OPENB_PACKER: the
 * decreasing-size packer on the arrivals up to k0, then the packer's rule on each later
 * event. */
static int offline_candidate(const struct gs_openb_spec *spec, const struct gs_typical *typical,
                             const struct gs_request *reqs, const int32_t *order, int k0, int k1,
                             uint64_t seed, int which, int64_t *used)
{
    struct gs_cluster c;
    struct gs_engine *e = NULL;
    struct gs_alloc *alloc = NULL;
    uint8_t *placed = NULL;
    int rc = build_cluster(spec, &c);
    if (rc)
        goto out;
    int64_t u = 0;
    if (which == GS_OPENB_PACKER) {
        u = gs_openb_pack(&c, reqs, order, k0 + 1, NULL);
        if (u < 0) {
            rc = (int)u;
            goto out;
        }
        used[0] = u;
        for (int k = k0 + 1; k <= k1; k++) {
            if (gs_openb_pack_one(&c, &reqs[order[k]]) == 0)
                u += gs_request_total_milli(&reqs[order[k]]);
            used[k - k0] = u;
        }
        goto out;
    }
    e = gs_engine_new(gs_policy_find(which == GS_OPENB_GPUSCHED_REPAIRED ? "gpusched" : "fgd"),
                      typical, c.nnodes, seed ^ 0x5eed5eedULL);
    alloc = calloc((size_t)k0 + 1, sizeof(*alloc));
    placed = calloc((size_t)k0 + 1, 1);
    if (!e || !alloc || !placed) {
        rc = GS_ENOMEM;
        goto out;
    }
    for (int k = 0; k <= k1; k++) {
        const struct gs_request *r = &reqs[order[k]];
        struct gs_decision d;
        if (gs_engine_place(e, &c, r, order[k], &d, NULL) == 0 &&
            gs_cluster_bind(&c, r, &d.alloc) == 0) {
            u += gs_request_total_milli(r);
            if (k <= k0) {
                alloc[k] = d.alloc;
                placed[k] = 1;
            }
        }
        if (k == k0) {
            int64_t g = gs_openb_repair(&c, reqs, order, k0 + 1, alloc, placed, 16);
            if (g < 0) {
                rc = (int)g;
                goto out;
            }
            u += g;
        }
        if (k >= k0)
            used[k - k0] = u;
    }
out:
    gs_engine_free(e);
    free(alloc);
    free(placed);
    gs_cluster_release(&c);
    return rc;
}

/* The offline pseudo-policy on one seed's arrivals: the best of the three candidates, and
 * the bounds of sim/openbopt.h on the pods arrived by each event; both averaged over the
 * 100 % bucket as the online curve is. */
static int run_offline(const struct gs_openb_spec *spec, const struct gs_typical *typical,
                       struct gs_cluster *c, const int32_t *order, int n, const double *arr_pct,
                       int64_t cap_milli, uint64_t seed, struct gs_openb_run *out)
{
    int k0, k1 = -1, rc = 0;
    for (int b = 0; b < GS_OPENB_CURVE; b++)
        out->curve[b] = NAN;
    out->unalloc_at_100 = out->bound_at_100 = NAN;
    for (int w = 0; w < GS_OPENB_CANDIDATES; w++)
        out->cand_at_100[w] = NAN;
    out->pods = n;
    if (!bucket_events(arr_pct, n, 100, &k0, &k1))
        return 0;
    int nb = k1 - k0 + 1;
    struct gs_request *reqs = malloc(sizeof(*reqs) * (size_t)(spec->npods ? spec->npods : 1));
    int64_t *used = malloc(sizeof(*used) * (size_t)nb * GS_OPENB_CANDIDATES);
    if (!reqs || !used) {
        rc = GS_ENOMEM;
        goto out;
    }
    for (int i = 0; i < spec->npods; i++)
        reqs[i] = spec->pods[i].req;
    double best = INFINITY;
    for (int w = 0; w < GS_OPENB_CANDIDATES; w++) {
        if ((rc = offline_candidate(spec, typical, reqs, order, k0, k1, seed, w, used + w * nb)))
            goto out;
        double sa = 0;
        for (int k = 0; k < nb; k++)
            sa += round2((double)used[w * nb + k] / (double)cap_milli * 100.0);
        double un = 100.0 - round2(sa / nb);
        out->cand_at_100[w] = un;
        if (un < best)
            best = un;
    }
    double ub = 0;
    if ((rc = gs_openb_bound(c, reqs, order, k1 + 1, 200, &ub)))
        goto out;
    double sb = 0;
    for (int k = k0; k <= k1; k++) {
        double lb = gs_openb_unalloc_bound(c, reqs, order, k + 1, ub);
        sb += round2(((double)cap_milli - lb) / (double)cap_milli * 100.0);
    }
    out->curve[100] = 100.0 - best;
    out->unalloc_at_100 = best;
    out->bound_at_100 = 100.0 - round2(sb / nb);
out:
    free(reqs);
    free(used);
    return rc;
}

static const struct gs_policy offline_policy = {
    "offline",
    "not an online policy: an offline packer that knows every arrival (achievable) and a "
    "Lagrangian bound (proven); see sim/openbopt.h",
    NULL, false, NULL};

const struct gs_policy *gs_openb_offline_policy(void)
{
    return &offline_policy;
}

int gs_openb_run_one(const struct gs_openb_spec *spec, const struct gs_policy *policy,
                     const struct gs_typical *typical, uint64_t seed, struct gs_openb_run *out)
{
    int rc = 0;
    struct gs_cluster c;
    struct gs_typical *own = NULL;
    struct gs_engine *e = NULL;
    int32_t *order = NULL;
    double *sum = NULL, *arr_pct = NULL, *alloc_pct = NULL;
    int *cnt = NULL;
    memset(out, 0, sizeof(*out));
    out->seed = seed;
    out->bound_at_100 = NAN;
    for (int w = 0; w < GS_OPENB_CANDIDATES; w++)
        out->cand_at_100[w] = NAN;
    rc = build_cluster(spec, &c);
    if (rc)
        goto out;
    bool offline = policy == &offline_policy;
    if (!typical) {
        struct gs_request *reqs = malloc(sizeof(*reqs) * (size_t)(spec->npods ? spec->npods : 1));
        own = malloc(sizeof(*own));
        if (!reqs || !own) {
            free(reqs);
            rc = GS_ENOMEM;
            goto out;
        }
        for (int i = 0; i < spec->npods; i++)
            reqs[i] = spec->pods[i].req;
        gs_typical_build(reqs, spec->npods, 95, own);
        free(reqs);
        typical = own;
    }
    int64_t cap_milli = (int64_t)c.ngpus * GS_MILLI;
    int n = arrivals(spec, seed, cap_milli, &order);
    if (n < 0) {
        rc = n;
        goto out;
    }
    arr_pct = malloc(sizeof(double) * (size_t)(n ? n : 1));
    alloc_pct = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!arr_pct || !alloc_pct) {
        rc = GS_ENOMEM;
        goto out;
    }
    int64_t arrived = 0, used = 0;
    for (int k = 0; k < n; k++) {
        arrived += gs_request_total_milli(&spec->pods[order[k]].req);
        arr_pct[k] = (double)arrived / (double)cap_milli * 100.0;
    }
    if (offline) {
        rc = run_offline(spec, typical, &c, order, n, arr_pct, cap_milli, seed, out);
        goto out;
    }
    e = gs_engine_new(policy, typical, c.nnodes, seed ^ 0x5eed5eedULL);
    sum = calloc(GS_OPENB_CURVE, sizeof(*sum));
    cnt = calloc(GS_OPENB_CURVE, sizeof(*cnt));
    if (!e || !sum || !cnt) {
        rc = GS_ENOMEM;
        goto out;
    }
    /* per event: arrived and allocated; bucket by rounded arrival percent */
    for (int k = 0; k < n; k++) {
        const struct gs_request *r = &spec->pods[order[k]].req;
        struct gs_decision d;
        int prc = gs_engine_place(e, &c, r, order[k], &d, NULL);
        if (prc == 0) {
            if (gs_cluster_bind(&c, r, &d.alloc) == 0)
                used += gs_request_total_milli(r);
            else
                out->failed++;
        } else {
            out->failed++;
        }
        alloc_pct[k] = round2((double)used / (double)cap_milli * 100.0);
    }
    for (int k = 0; k < n; k++) {
        int b = (int)nearbyint(arr_pct[k]);
        if (b >= 0 && b < GS_OPENB_CURVE) {
            sum[b] += alloc_pct[k];
            cnt[b]++;
        }
    }
    for (int b = 0; b < GS_OPENB_CURVE; b++) {
        if (cnt[b]) {
            out->curve[b] = round2(sum[b] / cnt[b]);
            continue;
        }
        double s2 = 0;
        int c2 = 0;
        for (int k = 0; k < n; k++)
            if (arr_pct[k] >= b - 1 - 0.5 && arr_pct[k] < b + 1 + 0.5) {
                s2 += alloc_pct[k];
                c2++;
            }
        out->curve[b] = c2 ? round2(s2 / c2) : NAN;
    }
    out->pods = n;
    out->unalloc_at_100 = isnan(out->curve[100]) ? NAN : 100.0 - out->curve[100];
out:
    gs_engine_free(e);
    free(order);
    free(sum);
    free(cnt);
    free(arr_pct);
    free(alloc_pct);
    free(own);
    gs_cluster_release(&c);
    return rc;
}

struct job {
    const struct gs_openb_spec *spec;
    const struct gs_policy *policy;
    const struct gs_typical *typical;
    uint64_t seed;
    struct gs_openb_run *out;
};

static int run_job(void *ctx, int i, struct gs_error *err)
{
    (void)err;
    struct job *j = &((struct job *)ctx)[i];
    return gs_openb_run_one(j->spec, j->policy, j->typical, j->seed, j->out);
}

/* Mean and sample standard deviation over the runs of the double at offset off. */
static void mean_sd(const struct gs_openb_run *runs, int n, size_t off, double *mean, double *sd)
{
    double s1 = 0, s2 = 0;
    for (int i = 0; i < n; i++) {
        double v;
        memcpy(&v, (const char *)&runs[i] + off, sizeof(v));
        s1 += v;
        s2 += v * v;
    }
    *mean = s1 / n;
    double var = n > 1 ? (s2 - s1 * s1 / n) / (n - 1) : 0;
    *sd = var > 0 ? sqrt(var) : 0;
}

/* Means, spreads and the mean curve of a result whose runs are done. */
static void summarise(struct gs_openb_result *r, int nseeds, double seconds)
{
    r->seconds = seconds;
    mean_sd(r->runs, nseeds, offsetof(struct gs_openb_run, unalloc_at_100), &r->unalloc_mean,
            &r->unalloc_std);
    mean_sd(r->runs, nseeds, offsetof(struct gs_openb_run, bound_at_100), &r->bound_mean,
            &r->bound_std);
    for (int w = 0; w < GS_OPENB_CANDIDATES; w++)
        mean_sd(r->runs, nseeds,
                offsetof(struct gs_openb_run, cand_at_100) + sizeof(double) * (size_t)w,
                &r->cand_mean[w], &r->cand_std[w]);
    for (int b = 0; b < GS_OPENB_CURVE; b++) {
        double cs = 0;
        int cn = 0;
        for (int s = 0; s < nseeds; s++)
            if (!isnan(r->runs[s].curve[b])) {
                cs += r->runs[s].curve[b];
                cn++;
            }
        r->curve_mean[b] = cn ? cs / cn : NAN;
    }
}

int gs_openb_experiment(const struct gs_openb_spec *spec, const struct gs_policy *const *policies,
                        int npolicies, struct gs_openb_result *results, struct gs_error *err)
{
    return gs_openb_experiment_many(spec, 1, policies, npolicies, results, err);
}

int gs_openb_experiment_many(const struct gs_openb_spec *specs, int nspecs,
                             const struct gs_policy *const *policies, int npolicies,
                             struct gs_openb_result *results, struct gs_error *err)
{
    const struct gs_openb_spec *spec = &specs[0];
    if (spec->seed_hi < spec->seed_lo || spec->seed_hi - spec->seed_lo > 10000)
        return gs_error_set(err, GS_EINVAL, "seed range %llu-%llu: expected LO-HI, at most 10001",
                            (unsigned long long)spec->seed_lo, (unsigned long long)spec->seed_hi);
    int nseeds = (int)(spec->seed_hi - spec->seed_lo + 1), nres = nspecs * npolicies;
    struct gs_typical *typ = calloc((size_t)(nspecs > 0 ? nspecs : 1), sizeof(*typ));
    struct job *jobs = calloc((size_t)(nseeds * nres > 0 ? nseeds * nres : 1), sizeof(*jobs));
    int rc = typ && jobs ? 0 : GS_ENOMEM;
    for (int t = 0; t < nspecs && !rc; t++) {
        const struct gs_openb_spec *sp = &specs[t];
        struct gs_request *reqs = malloc(sizeof(*reqs) * (size_t)(sp->npods ? sp->npods : 1));
        if (!reqs) {
            rc = GS_ENOMEM;
            break;
        }
        for (int i = 0; i < sp->npods; i++)
            reqs[i] = sp->pods[i].req;
        gs_typical_build(reqs, sp->npods, 95, &typ[t]);
        free(reqs);
    }
    for (int r = 0; r < nres; r++) {
        memset(&results[r], 0, sizeof(results[r]));
        results[r].policy = policies[r % npolicies];
        results[r].nruns = nseeds;
        results[r].runs = rc ? NULL : calloc((size_t)nseeds, sizeof(struct gs_openb_run));
        if (!results[r].runs)
            rc = GS_ENOMEM;
        for (int s = 0; s < nseeds && !rc; s++) {
            struct job *j = &jobs[r * nseeds + s];
            j->spec = &specs[r / npolicies];
            j->policy = policies[r % npolicies];
            j->typical = &typ[r / npolicies];
            j->seed = spec->seed_lo + (uint64_t)s;
            j->out = &results[r].runs[s];
        }
    }
    if (!rc) {
        double t0 = gs_clock_mono();
        rc = gs_pool_run(nseeds * nres, spec->threads, 0, run_job, jobs, NULL, NULL);
        double dt = gs_clock_mono() - t0;
        for (int r = 0; r < nres && !rc; r++)
            summarise(&results[r], nseeds, dt);
    }
    free(jobs);
    free(typ);
    if (rc)
        return gs_error_set(err, rc, "openb experiment: %s", gs_error_name(rc));
    return 0;
}

void gs_openb_result_release(struct gs_openb_result *r)
{
    free(r->runs);
    r->runs = NULL;
}

static double share_closed(double f, double g, double x)
{
    return f - x > 1e-9 ? (f - g) / (f - x) : NAN;
}

bool gs_openb_gap(const struct gs_openb_result *res, int n, struct gs_openb_gap *g)
{
    const struct gs_openb_result *f = NULL, *gs = NULL, *off = NULL;
    for (int i = 0; i < n; i++) {
        const char *name = res[i].policy->name;
        if (res[i].policy == &offline_policy)
            off = &res[i];
        else if (strcmp(name, "fgd") == 0)
            f = &res[i];
        else if (strcmp(name, "gpusched") == 0)
            gs = &res[i];
    }
    if (!f || !gs || !off || off->nruns <= 0)
        return false;
    double ind = 0;
    for (int s = 0; s < off->nruns; s++) {
        const double *c = off->runs[s].cand_at_100;
        ind += fmin(c[GS_OPENB_PACKER], c[GS_OPENB_FGD_REPAIRED]);
    }
    *g = (struct gs_openb_gap){.fgd = f->unalloc_mean,
                               .gpusched = gs->unalloc_mean,
                               .offline = off->unalloc_mean,
                               .independent = ind / off->nruns,
                               .bound = off->bound_mean};
    g->closed = share_closed(g->fgd, g->gpusched, g->offline);
    g->closed_independent = share_closed(g->fgd, g->gpusched, g->independent);
    g->closed_bound = share_closed(g->fgd, g->gpusched, g->bound);
    return true;
}
