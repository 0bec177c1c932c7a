/* service.c - the load and queueing model of a scenario's services (see service.h): the
 * request rate over time from the scenario and the seed alone, what a replica's share of it
 * does to its latency and utilization, the replica count sized for the peak, and latency
 * quantiles over a run. sim/scenario.c runs the replicas and the autoscaler (core/hpa.c). */
#include "service.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../base/rng.h"
#include "../core/catalog.h"
#include "../core/podmetric.h"
#include "scenario.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A generator of its own for one service and one bucket (or day) of time. */
static void rng_for(struct gs_rng *r, uint64_t seed, int idx, int64_t bucket, uint64_t salt)
{
    uint64_t k = seed;
    k ^= ((uint64_t)idx + 1) * 0x9E3779B97F4A7C15ull;
    k ^= ((uint64_t)bucket + 0x1000) * 0xC2B2AE3D27D4EB4Full;
    k ^= salt * 0x165667B19E3779F9ull;
    gs_rng_init(r, k);
}

static double noise_at(const struct gs_sc_service *s, uint64_t seed, int idx, double t)
{
    if (s->noise <= 0)
        return 1.0;
    struct gs_rng r;
    rng_for(&r, seed, idx, (int64_t)floor(t / GS_SVC_NOISE_BUCKET_S), 1);
    return gs_rng_lognormal(&r, exp(-s->noise * s->noise / 2), s->noise); /* mean 1 */
}

/* The product of the factors of the random bursts under way at t: Poisson times per day,
 * drawn day by day (a burst may run past midnight: the day before is looked at too). */
static double random_bursts_at(const struct gs_sc_service *s, uint64_t seed, int idx, double t)
{
    if (s->random.per_day <= 0)
        return 1.0;
    double f = 1.0;
    int64_t day = (int64_t)floor(t / 86400.0);
    for (int64_t d = day - 1; d <= day; d++) {
        if (d < 0)
            continue;
        struct gs_rng r;
        rng_for(&r, seed, idx, d, 2);
        double at = (double)d * 86400.0, end = at + 86400.0;
        for (;;) {
            at += gs_rng_exp(&r, 86400.0 / s->random.per_day);
            if (at >= end || at > t)
                break;
            if (t < at + s->random.duration_s)
                f *= s->random.factor;
        }
    }
    return f;
}

double gs_svc_rate(const struct gs_sc_service *s, uint64_t seed, int idx, double t)
{
    double r = s->rate;
    if (s->amplitude > 0 && s->period_s > 0)
        r *= 1.0 + s->amplitude * cos(2.0 * M_PI * (t - s->peak_s) / s->period_s);
    r *= noise_at(s, seed, idx, t);
    for (int i = 0; i < s->nbursts; i++)
        if (t >= s->burst[i].at_s && t < s->burst[i].at_s + s->burst[i].duration_s)
            r *= s->burst[i].factor;
    r *= random_bursts_at(s, seed, idx, t);
    return r > 0 ? r : 0;
}

void gs_svc_replica(const struct gs_sc_service *s, double lambda, double v,
                    struct gs_svc_replica *out)
{
    double mu = s->capacity * v;
    double rho = mu > 0 ? lambda / mu : INFINITY;
    out->rho = rho;
    out->util_pct = 100.0 * (rho < 1.0 ? rho : 1.0);
    if (rho < 1.0) {
        double L = s->latency_s / (1.0 - rho);
        out->mean_s = L;
        out->miss = exp(-s->latency_sla_s / L);
        out->latency_ms = 1000.0 * L * (1.0 - exp(-s->latency_max_s / L));
    } else {
        out->mean_s = INFINITY;
        out->miss = 1.0;
        out->latency_ms = 1000.0 * s->latency_max_s;
    }
}

/* The highest load a replica may carry with every metric within its target. */
static double rho_within_targets(const struct gs_sc_service *s)
{
    double best = 0.999;
    for (int m = 0; m < s->hpa.nmetrics; m++) {
        const struct gs_hpa_metric *mt = &s->hpa.metric[m];
        if (gs_podmetric_find(mt->name) < 0)
            continue; /* no replica reports it */
        double lo = 0, hi = 0.999;
        struct gs_svc_replica r;
        for (int it = 0; it < 60; it++) { /* the metric grows with rho */
            double mid = (lo + hi) / 2;
            gs_svc_replica(s, mid * s->capacity, 1.0, &r);
            double v = strcmp(mt->name, "gpu_utilization") == 0 ? r.util_pct : r.latency_ms;
            if (v <= mt->target)
                lo = mid;
            else
                hi = mid;
        }
        if (lo < best)
            best = lo;
    }
    return best;
}

int32_t gs_svc_peak_replicas(const struct gs_sc_service *s)
{
    if (s->fixed_replicas > 0)
        return s->fixed_replicas;
    double peak = s->rate * (1.0 + s->amplitude);
    double rho = rho_within_targets(s);
    double n = rho > 0 ? ceil(peak / (s->capacity * rho) - 1e-9) : GS_SC_MAX_REPLICAS;
    if (n < 1)
        n = 1;
    return n > GS_SC_MAX_REPLICAS ? GS_SC_MAX_REPLICAS : (int32_t)n;
}

/* Metric pm of class k's replicas under strategy st: whether some replica has it (*none
 * false) and the node groups where a replica lacks it (bit per group, into *lack). MIG
 * slices of the class's profile under a MIG strategy, else whole GPUs or replicas. */
static void metric_under(const struct gs_scenario *sc, const struct gs_sc_class *k,
                         const struct gs_strategy *st, int pm, bool *none, uint64_t *lack)
{
    *none = false;
    if (!(st->mig && k->mig[0])) {
        *none = k->gpus == 0 && !k->mig[0] && gs_podmetric_source(pm) == GS_PODMETRIC_AGENT;
        return;
    }
    bool some = false;
    for (int g = 0; g < sc->ngroups && g < 64; g++) {
        const struct gs_sc_group *grp = &sc->groups[g];
        if (grp->gpus == 0 || grp->dra || !(grp->has_layout || grp->mig_config[0]) ||
            gs_catalog_find_profile(grp->model, k->mig) < 0)
            continue;
        if (gs_podmetric_has(pm, grp->model, GS_PODDEV_MIG))
            some = true;
        else
            *lack |= 1ull << g;
    }
    *none = !some;
}

int gs_svc_check_metrics(const struct gs_scenario *sc, const struct gs_strategy *const *st, int nst,
                         struct gs_buf *warn, struct gs_error *err)
{
    for (int c = 0; c < sc->nclasses; c++) {
        const struct gs_sc_class *k = &sc->classes[c];
        if (!k->service.on || !k->service.autoscale)
            continue;
        for (int m = 0; m < k->service.hpa.nmetrics; m++) {
            const char *name = k->service.hpa.metric[m].name;
            int pm = gs_podmetric_find(name);
            if (pm < 0) {
                if (gs_buf_printf(warn,
                                  "class '%s': service.hpa reads %s, which the simulated replicas "
                                  "cannot report (they report gpu_utilization and "
                                  "request_latency_ms); the HPA finds it missing, as a metric it "
                                  "cannot fetch: it gives no proposal, the other metrics still "
                                  "scale up, and no scale-down while it is missing\n",
                                  k->name, name))
                    return gs_error_set(err, GS_ENOMEM, "out of memory");
                continue;
            }
            uint64_t lack = 0;
            char lacking[256] = "", nowhere[256] = "";
            int nlacking = 0, nnone = 0;
            for (int i = 0; i < nst; i++) {
                uint64_t l = 0;
                bool none;
                metric_under(sc, k, st[i], pm, &none, &l);
                lack |= l;
                size_t o = strlen(lacking), q = strlen(nowhere);
                if (l || none)
                    snprintf(lacking + o, sizeof(lacking) - o, "%s%s", nlacking++ ? ", " : "",
                             st[i]->name);
                if (none)
                    snprintf(nowhere + q, sizeof(nowhere) - q, "%s%s", nnone++ ? ", " : "",
                             st[i]->name);
            }
            if (!nlacking)
                continue;
            char groups[256] = "", why[256] = "";
            for (int g = 0, n = 0; g < sc->ngroups && g < 64; g++) {
                if (!(lack >> g & 1))
                    continue;
                size_t o = strlen(groups);
                snprintf(groups + o, sizeof(groups) - o, "%s'%s' (%s)", n ? ", " : "",
                         sc->groups[g].name, gs_catalog_get(sc->groups[g].model)->name);
                if (!n++)
                    gs_podmetric_why_missing(pm, sc->groups[g].model, GS_PODDEV_MIG, why,
                                             sizeof(why));
            }
            if (!why[0])
                snprintf(why, sizeof(why), "its pods hold no GPU the agent could measure");
            if (nnone == nst)
                return gs_error_set(err, GS_EINVAL,
                                    "class '%s': service.hpa reads %s, which none of its replicas "
                                    "can report under %s: %s",
                                    k->name, name, nowhere, why);
            int rc = gs_buf_printf(warn,
                                   "class '%s': service.hpa reads %s, which its replicas%s%s%s "
                                   "lack under %s (%s); the HPA counts them as missing (0 on a "
                                   "scale-up, the target on a scale-down)",
                                   k->name, name, groups[0] ? " on MIG slices of " : "", groups,
                                   groups[0] ? "" : " all", lacking, why);
            if (!rc && nnone)
                rc = gs_buf_printf(warn,
                                   "; under %s none has it: it gives no scaling there, and no "
                                   "scale-down while it is missing",
                                   nowhere);
            if (rc || (rc = gs_buf_puts(warn, "\n")))
                return gs_error_set(err, rc, "out of memory");
        }
    }
    return 0;
}

void gs_svc_mix_init(struct gs_svc_mix *m, double max_s)
{
    m->n = m->cap = 0;
    m->w = m->mean = NULL;
    m->total = 0;
    m->max_s = max_s;
}

void gs_svc_mix_release(struct gs_svc_mix *m)
{
    free(m->w);
    free(m->mean);
    gs_svc_mix_init(m, m->max_s);
}

int gs_svc_mix_add(struct gs_svc_mix *m, double w, double mean_s)
{
    if (!(w > 0))
        return 0;
    m->total += w;
    if (m->n > 0 && m->mean[m->n - 1] == mean_s) {
        m->w[m->n - 1] += w;
        return 0;
    }
    if (m->n == m->cap) {
        int cap = m->cap;
        void *v = gs_grow(m->w, &cap, sizeof(double), 256);
        if (!v)
            return GS_ENOMEM;
        m->w = v;
        v = gs_grow(m->mean, &m->cap, sizeof(double), 256);
        if (!v)
            return GS_ENOMEM;
        m->mean = v;
    }
    m->w[m->n] = w;
    m->mean[m->n] = mean_s;
    m->n++;
    return 0;
}

/* Requests answered within x (x below the timeout). */
static double mix_below(const struct gs_svc_mix *m, double x)
{
    double f = 0;
    for (int i = 0; i < m->n; i++)
        if (isfinite(m->mean[i]))
            f += m->w[i] * (1.0 - exp(-x / m->mean[i]));
    return f;
}

double gs_svc_mix_quantile(const struct gs_svc_mix *m, double q)
{
    if (m->total <= 0)
        return 0;
    double want = q * m->total;
    if (mix_below(m, m->max_s) < want)
        return m->max_s; /* the rest timed out */
    double lo = 0, hi = m->max_s;
    for (int it = 0; it < 64; it++) {
        double mid = (lo + hi) / 2;
        if (mix_below(m, mid) < want)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}
