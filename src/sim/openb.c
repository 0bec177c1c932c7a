/* openb.c - the trace-replay experiment of the FGD paper on top of core/engine.c; the CLI's
 * `gpusched sim openb`, the openb tests and the simulator benchmark drive it. */
#include "openb.h"

#include "../base/clock.h"
#include "../base/error.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

int gs_openb_run_one(const struct gs_openb_spec *spec, const struct gs_policy *policy,
                     const struct gs_typical *typical, uint64_t seed, struct gs_openb_run *out)
{
    int rc = 0;
    struct gs_cluster c;
    struct gs_typical *own = NULL;
    struct gs_engine *e = NULL;
    int32_t *order = NULL;
    double *sum = NULL;
    int *cnt = NULL;
    memset(out, 0, sizeof(*out));
    out->seed = seed;
    rc = build_cluster(spec, &c);
    if (rc)
        goto out;
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
    struct gs_rng rng;
    gs_rng_init(&rng, seed);
    /* shuffle, then resample to tune x capacity */
    int64_t cap_milli = (int64_t)c.ngpus * GS_MILLI, req_milli = 0;
    int n = spec->npods, cap = n + 16;
    order = malloc(sizeof(*order) * (size_t)cap);
    if (!order) {
        rc = GS_ENOMEM;
        goto out;
    }
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
                    rc = GS_ENOMEM;
                    goto out;
                }
                order = q;
                cap *= 2;
            }
            order[n++] = idx;
            req_milli += gs_request_total_milli(r);
        }
    }
    e = gs_engine_new(policy, typical, c.nnodes, seed ^ 0x5eed5eedULL);
    sum = calloc(GS_OPENB_CURVE, sizeof(*sum));
    cnt = calloc(GS_OPENB_CURVE, sizeof(*cnt));
    if (!e || !sum || !cnt) {
        rc = GS_ENOMEM;
        goto out;
    }
    /* per event: arrived and allocated; bucket by rounded arrival percent */
    double *arr_pct = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double *alloc_pct = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!arr_pct || !alloc_pct) {
        free(arr_pct);
        free(alloc_pct);
        rc = GS_ENOMEM;
        goto out;
    }
    int64_t arrived = 0, used = 0;
    for (int k = 0; k < n; k++) {
        const struct gs_request *r = &spec->pods[order[k]].req;
        arrived += gs_request_total_milli(r);
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
        arr_pct[k] = (double)arrived / (double)cap_milli * 100.0;
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
    free(arr_pct);
    free(alloc_pct);
    out->pods = n;
    out->unalloc_at_100 = isnan(out->curve[100]) ? NAN : 100.0 - out->curve[100];
out:
    gs_engine_free(e);
    free(order);
    free(sum);
    free(cnt);
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
    int rc;
};

struct pool {
    struct job *jobs;
    int njobs, next;
    pthread_mutex_t mu;
};

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int i = p->next < p->njobs ? p->next++ : -1;
        pthread_mutex_unlock(&p->mu);
        if (i < 0)
            return NULL;
        struct job *j = &p->jobs[i];
        j->rc = gs_openb_run_one(j->spec, j->policy, j->typical, j->seed, j->out);
    }
}

int gs_openb_experiment(const struct gs_openb_spec *spec, const struct gs_policy *const *policies,
                        int npolicies, struct gs_openb_result *results, struct gs_error *err)
{
    if (spec->seed_hi < spec->seed_lo || spec->seed_hi - spec->seed_lo > 10000)
        return gs_error_set(err, GS_EINVAL, "seed range %llu-%llu: expected LO-HI, at most 10001",
                            (unsigned long long)spec->seed_lo, (unsigned long long)spec->seed_hi);
    int nseeds = (int)(spec->seed_hi - spec->seed_lo + 1);
    struct gs_request *reqs = malloc(sizeof(*reqs) * (size_t)(spec->npods ? spec->npods : 1));
    struct gs_typical *typ = malloc(sizeof(*typ));
    struct job *jobs = calloc((size_t)(nseeds * npolicies), sizeof(*jobs));
    if (!reqs || !typ || !jobs) {
        free(reqs);
        free(typ);
        free(jobs);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < spec->npods; i++)
        reqs[i] = spec->pods[i].req;
    gs_typical_build(reqs, spec->npods, 95, typ);
    free(reqs);
    int rc = 0;
    for (int p = 0; p < npolicies; p++) {
        memset(&results[p], 0, sizeof(results[p]));
        results[p].policy = policies[p];
        results[p].nruns = nseeds;
        results[p].runs = calloc((size_t)nseeds, sizeof(struct gs_openb_run));
        if (!results[p].runs)
            rc = GS_ENOMEM;
        for (int s = 0; s < nseeds && !rc; s++) {
            struct job *j = &jobs[p * nseeds + s];
            j->spec = spec;
            j->policy = policies[p];
            j->typical = typ;
            j->seed = spec->seed_lo + (uint64_t)s;
            j->out = &results[p].runs[s];
        }
    }
    if (!rc) {
        int nt = spec->threads > 0 ? spec->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
        if (nt < 1)
            nt = 1;
        if (nt > 64)
            nt = 64;
        struct pool pool = {.jobs = jobs, .njobs = nseeds * npolicies};
        pthread_mutex_init(&pool.mu, NULL);
        pthread_t th[64];
        double t0 = gs_clock_mono();
        int started = 0;
        for (int t = 0; t < nt; t++)
            if (pthread_create(&th[t], NULL, worker, &pool) == 0)
                started++;
        if (!started)
            worker(&pool);
        for (int t = 0; t < started; t++)
            pthread_join(th[t], NULL);
        pthread_mutex_destroy(&pool.mu);
        double dt = gs_clock_mono() - t0;
        for (int i = 0; i < nseeds * npolicies; i++)
            if (jobs[i].rc && !rc)
                rc = jobs[i].rc;
        for (int p = 0; p < npolicies && !rc; p++) {
            struct gs_openb_result *r = &results[p];
            r->seconds = dt;
            double s1 = 0, s2 = 0;
            for (int s = 0; s < nseeds; s++) {
                s1 += r->runs[s].unalloc_at_100;
                s2 += r->runs[s].unalloc_at_100 * r->runs[s].unalloc_at_100;
            }
            r->unalloc_mean = s1 / nseeds;
            double var = nseeds > 1 ? (s2 - s1 * s1 / nseeds) / (nseeds - 1) : 0;
            r->unalloc_std = var > 0 ? sqrt(var) : 0;
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
