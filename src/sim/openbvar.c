/* openbvar.c - openb trace variants (openbvar.h): the CLI's `gpusched sim openb --variant`
 * and `gpusched sim openb-variant` call it; formats/openb.c writes what it returns. */
#include "openbvar.h"

#include "../base/error.h"
#include "../base/rng.h"
#include "../core/catalog.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    enum gs_openbvar_kind kind;
    double max;
} kinds[] = {
    {"gpushare", GS_OPENBVAR_GPUSHARE, 100},     {"multigpu", GS_OPENBVAR_MULTIGPU, 99},
    {"gpuspec", GS_OPENBVAR_GPUSPEC, 100},       {"cpu", GS_OPENBVAR_CPU, 99},
    {"gpuspecmix", GS_OPENBVAR_GPUSPECMIX, 100}, {"gpuspecskew", GS_OPENBVAR_GPUSPECSKEW, 100},
};

/* The GPU model sets the constrained pods of FGD's published gpuspec traces name, per mille
 * of those pods (counted over openb_pod_list_gpuspec20.csv's 1,444; gpuspec05 and gpuspec10
 * have nearly the same mix). Half name T4 alone, a seventh each G2 and P100: the small fleets
 * are asked for far beyond their share of the cluster's GPUs, G2's 71 % far below it. */
static const struct {
    const char *models;
    int permille;
} published_sets[] = {
    {"T4", 497},
    {"G2", 148},
    {"P100", 147},
    {"V100M16|V100M32", 77},
    {"P100|V100M16|V100M32", 37},
    {"G3", 35},
    {"G2|P100|T4|V100M16|V100M32", 14},
    {"V100M32", 10},
    {"P100|T4|V100M16|V100M32", 10},
    {"A10|G2|T4|V100M16|V100M32", 8},
    {"A10|T4", 6},
    {"P100|V100M16", 6},
    {"V100M16", 4},
    {"P100|T4", 1},
};
#define NSETS ((int)(sizeof(published_sets) / sizeof(published_sets[0])))

int gs_openbvar_parse(const char *spec, struct gs_openbvar *v, struct gs_error *err)
{
    int nv = 0;
    size_t len = strlen(spec);
    if (len == 0 || len > 256)
        return gs_error_set(err, GS_EINVAL,
                            "variant '%.40s': expected KIND=PCT[,KIND=PCT...] of at most 256 "
                            "characters",
                            spec);
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t tl = end ? (size_t)(end - p) : strlen(p);
        char term[64];
        if (tl == 0 || tl >= sizeof(term))
            return gs_error_set(err, GS_EINVAL, "variant '%s': empty or overlong term", spec);
        memcpy(term, p, tl);
        term[tl] = '\0';
        char *eq = strchr(term, '=');
        int k = -1;
        if (eq) {
            *eq = '\0';
            for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
                if (strcmp(term, kinds[i].name) == 0)
                    k = (int)i;
        }
        if (k < 0)
            return gs_error_set(err, GS_EINVAL,
                                "variant term '%.*s': expected gpushare=P, multigpu=P, "
                                "gpuspec=P, gpuspecmix=P, gpuspecskew=P or cpu=P",
                                (int)tl, p);
        char *e2;
        errno = 0;
        double pct = strtod(eq + 1, &e2);
        if (errno || e2 == eq + 1 || *e2 || !isfinite(pct) || pct < 0 || pct > kinds[k].max)
            return gs_error_set(err, GS_EINVAL,
                                "variant term '%.*s': the percentage must be a number in 0..%g",
                                (int)tl, p, kinds[k].max);
        if (nv >= GS_OPENBVAR_MAX)
            return gs_error_set(err, GS_EINVAL, "variant '%s': more than %d terms", spec,
                                GS_OPENBVAR_MAX);
        v[nv++] = (struct gs_openbvar){kinds[k].kind, pct};
        p = end ? end + 1 : p + tl;
        if (end && !*p)
            return gs_error_set(err, GS_EINVAL, "variant '%s': trailing comma", spec);
    }
    return nv;
}

static bool is_share(const struct gs_request *r)
{
    return r->kind == GS_REQ_FRACTION;
}

static bool is_multi(const struct gs_request *r)
{
    return r->kind == GS_REQ_GPU && r->gpus > 1;
}

void gs_openbvar_shares(const struct gs_openb_pod *pods, int n, struct gs_openbvar_shares *s)
{
    double t = 0, sh = 0, mu = 0;
    int gp = 0, spec = 0, cpu = 0;
    for (int i = 0; i < n; i++) {
        const struct gs_request *r = &pods[i].req;
        double m = (double)gs_request_total_milli(r);
        t += m;
        sh += is_share(r) ? m : 0;
        mu += is_multi(r) ? m : 0;
        if (r->kind == GS_REQ_NONE) {
            cpu++;
        } else {
            gp++;
            spec += r->model_mask != 0;
        }
    }
    s->gpushare = t > 0 ? 100.0 * sh / t : 0;
    s->multigpu = t > 0 ? 100.0 * mu / t : 0;
    s->gpuspec = gp ? 100.0 * spec / gp : 0;
    s->cpu = n ? 100.0 * cpu / n : 0;
}

/* The pod list being changed: a growable array and a removal mark per pod. */
struct work {
    struct gs_openb_pod *p;
    uint8_t *gone;
    int n, cap, added;
};

static void shuffle(struct gs_rng *rng, int32_t *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)gs_rng_below(rng, (uint64_t)i + 1);
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* Indices of live pods that pred accepts, shuffled; *out malloc'd. Returns the count. */
static int pick(struct work *w, struct gs_rng *rng, bool (*pred)(const struct gs_request *),
                int32_t **out)
{
    int32_t *a = malloc(sizeof(*a) * (size_t)(w->n ? w->n : 1));
    int k = 0;
    if (!a)
        return GS_ENOMEM;
    for (int i = 0; i < w->n; i++)
        if (!w->gone[i] && pred(&w->p[i].req))
            a[k++] = i;
    shuffle(rng, a, k);
    *out = a;
    return k;
}

static int add_copy(struct work *w, int from)
{
    if (w->n == w->cap) {
        int cap = w->cap;
        struct gs_openb_pod *q = realloc(w->p, sizeof(*q) * (size_t)cap * 2);
        if (!q)
            return GS_ENOMEM;
        w->p = q;
        uint8_t *g = realloc(w->gone, (size_t)cap * 2);
        if (!g)
            return GS_ENOMEM;
        w->gone = g;
        w->cap = cap * 2;
    }
    w->p[w->n] = w->p[from];
    char suffix[24];
    int sl = snprintf(suffix, sizeof(suffix), "-v%d", ++w->added);
    int keep = (int)strnlen(w->p[from].name, GS_NAME_MAX);
    if (keep + sl >= GS_NAME_MAX)
        keep = GS_NAME_MAX - 1 - sl;
    char base[GS_NAME_MAX];
    memcpy(base, w->p[from].name, sizeof(base));
    snprintf(w->p[w->n].name, GS_NAME_MAX, "%.*s%s", keep, base, suffix);
    w->gone[w->n] = 0;
    w->n++;
    return 0;
}

static bool any_gpu(const struct gs_request *r)
{
    return r->kind == GS_REQ_GPU;
}

static bool cpu_only(const struct gs_request *r)
{
    return r->kind == GS_REQ_NONE;
}

static bool gpu_nospec(const struct gs_request *r)
{
    return r->kind != GS_REQ_NONE && !r->model_mask;
}

static bool gpu_spec(const struct gs_request *r)
{
    return r->kind != GS_REQ_NONE && r->model_mask;
}

static int term_gpushare(struct work *w, struct gs_rng *rng, const int16_t *shares, int nshares,
                         double target, const char *what, struct gs_error *err)
{
    double t = 0, s = 0;
    for (int i = 0; i < w->n; i++)
        if (!w->gone[i]) {
            t += (double)gs_request_total_milli(&w->p[i].req);
            s += is_share(&w->p[i].req) ? w->p[i].req.milli : 0;
        }
    int32_t *c = NULL;
    bool up = s < target * t;
    if (up && !nshares)
        return gs_error_set(err, GS_EINVAL,
                            "%s: the trace has no GPU-sharing pod to draw a "
                            "share from",
                            what);
    int nc = pick(w, rng, up ? any_gpu : is_share, &c);
    if (nc < 0)
        return nc;
    for (int k = 0; k < nc && (up ? s < target * t : s > target * t); k++) {
        struct gs_request *r = &w->p[c[k]].req;
        if (up) {
            t -= (double)gs_request_total_milli(r);
            r->kind = GS_REQ_FRACTION;
            r->gpus = 1;
            r->milli = shares[gs_rng_below(rng, (uint64_t)nshares)];
            t += r->milli;
            s += r->milli;
        } else {
            t += GS_MILLI - r->milli;
            s -= r->milli;
            r->kind = GS_REQ_GPU;
            r->gpus = 1;
            r->milli = GS_MILLI;
        }
    }
    free(c);
    return 0;
}

static int term_multigpu(struct work *w, struct gs_rng *rng, double target, const char *what,
                         struct gs_error *err)
{
    double t = 0, m = 0;
    for (int i = 0; i < w->n; i++)
        if (!w->gone[i]) {
            t += (double)gs_request_total_milli(&w->p[i].req);
            m += is_multi(&w->p[i].req) ? (double)gs_request_total_milli(&w->p[i].req) : 0;
        }
    int32_t *c = NULL;
    int nc = pick(w, rng, is_multi, &c), rc = 0;
    if (nc < 0)
        return nc;
    if (m < target * t && nc == 0) {
        free(c);
        return gs_error_set(err, GS_EINVAL, "%s: the trace has no multi-GPU pod to copy", what);
    }
    if (m < target * t) {
        while (m < target * t && !rc) {
            int from = c[gs_rng_below(rng, (uint64_t)nc)];
            double g = (double)gs_request_total_milli(&w->p[from].req);
            rc = add_copy(w, from);
            m += g;
            t += g;
        }
    } else {
        for (int k = 0; k < nc && m > target * t; k++) {
            double g = (double)gs_request_total_milli(&w->p[c[k]].req);
            w->gone[c[k]] = 1;
            m -= g;
            t -= g;
        }
    }
    free(c);
    return rc;
}

static int term_cpu(struct work *w, struct gs_rng *rng, double target, const char *what,
                    struct gs_error *err)
{
    int n = 0, c0 = 0;
    for (int i = 0; i < w->n; i++)
        if (!w->gone[i]) {
            n++;
            c0 += w->p[i].req.kind == GS_REQ_NONE;
        }
    int want = (int)nearbyint(target * (n - c0) / (1.0 - target));
    int32_t *c = NULL;
    int nc = pick(w, rng, cpu_only, &c), rc = 0;
    if (nc < 0)
        return nc;
    if (want > c0 && nc == 0) {
        free(c);
        return gs_error_set(err, GS_EINVAL, "%s: the trace has no CPU-only pod to copy", what);
    }
    for (int k = c0; k < want && !rc; k++)
        rc = add_copy(w, c[gs_rng_below(rng, (uint64_t)nc)]);
    for (int k = 0; k < c0 - want; k++)
        w->gone[c[k]] = 1;
    free(c);
    return rc;
}

/* The model mask of a catalog model list "A|B|C" (models the catalog lacks left out). */
static uint32_t set_mask(const char *models)
{
    uint32_t m = 0;
    char name[32];
    while (*models) {
        size_t l = strcspn(models, "|");
        if (l < sizeof(name)) {
            memcpy(name, models, l);
            name[l] = '\0';
            int id = gs_catalog_find(name);
            if (id >= 0 && id < 32)
                m |= 1u << id;
        }
        models += l + (models[l] == '|');
    }
    return m;
}

/* An index drawn in proportion to wt[0..n) (total tot > 0). */
static int draw(struct gs_rng *rng, const double *wt, int n, double tot)
{
    double x = gs_rng_double(rng) * tot;
    int m = 0;
    while (m < n - 1 && (x >= wt[m] || wt[m] == 0)) {
        x -= wt[m];
        m++;
    }
    return m;
}

/* How the models a pod names are drawn (gpuspec, gpuspecmix, gpuspecskew). */
struct specdraw {
    enum gs_openbvar_kind kind;
    uint32_t sets[NSETS];
    double pop[32]; /* gpuspecskew: each model's popularity */
};

/* The mask a pod that can run on host (models whose empty nodes can host it; gpus[m]: their
 * GPUs) gets; 0 when none can host it. */
static uint32_t spec_for(const struct specdraw *sd, struct gs_rng *rng, uint32_t host,
                         const double *gpus)
{
    double wt[32] = {0}, tot = 0;
    if (sd->kind == GS_OPENBVAR_GPUSPEC) {
        /* one model in proportion to its GPUs on nodes that can host the pod when empty */
        for (int m = 0; m < 32; m++)
            tot += wt[m] = host & (1u << m) ? gpus[m] : 0;
        return tot > 0 ? 1u << draw(rng, wt, 32, tot) : 0;
    }
    if (sd->kind == GS_OPENBVAR_GPUSPECMIX) {
        /* a published set, among those naming a model that can host the pod */
        double sw[NSETS];
        for (int k = 0; k < NSETS; k++)
            tot += sw[k] = sd->sets[k] & host ? published_sets[k].permille : 0;
        return tot > 0 ? sd->sets[draw(rng, sw, NSETS, tot)] : 0;
    }
    /* gpuspecskew: one model by popularity, or (one pod in four) two */
    for (int m = 0; m < 32; m++)
        tot += wt[m] = host & (1u << m) ? sd->pop[m] : 0;
    if (tot <= 0)
        return 0;
    int a = draw(rng, wt, 32, tot);
    uint32_t mask = 1u << a;
    if (gs_rng_below(rng, 4) == 0 && tot - wt[a] > 0) {
        tot -= wt[a];
        wt[a] = 0;
        mask |= 1u << draw(rng, wt, 32, tot);
    }
    return mask;
}

static int term_gpuspec(struct work *w, struct gs_rng *rng, const struct gs_openb_node *nodes,
                        int nnodes, enum gs_openbvar_kind kind, double target, const char *what,
                        struct gs_error *err)
{
    int g = 0, s = 0;
    for (int i = 0; i < w->n; i++)
        if (!w->gone[i] && w->p[i].req.kind != GS_REQ_NONE) {
            g++;
            s += w->p[i].req.model_mask != 0;
        }
    int want = (int)nearbyint(target * g);
    if (want > s && nnodes <= 0)
        return gs_error_set(err, GS_EINVAL, "%s: naming GPU models needs the node list", what);
    struct specdraw sd = {.kind = kind};
    for (int k = 0; k < NSETS; k++)
        sd.sets[k] = set_mask(published_sets[k].models);
    if (kind == GS_OPENBVAR_GPUSPECSKEW && want > s)
        for (int m = 0; m < 32; m++) {
            /* squared exponentials: a few models draw most of the demand, whatever their fleet */
            double e = -log(1.0 - gs_rng_double(rng));
            sd.pop[m] = e * e;
        }
    int32_t *c = NULL;
    int nc = pick(w, rng, want > s ? gpu_nospec : gpu_spec, &c);
    if (nc < 0)
        return nc;
    for (int k = 0; k < nc && s != want; k++) {
        struct gs_request *r = &w->p[c[k]].req;
        if (want < s) {
            r->model_mask = 0;
            s--;
            continue;
        }
        double gpus[32] = {0};
        uint32_t host = 0;
        for (int i = 0; i < nnodes; i++) {
            const struct gs_openb_node *nd = &nodes[i];
            if (nd->model < 0 || nd->model >= 32 || nd->gpus < r->gpus ||
                nd->cpu_milli < r->cpu_milli || nd->mem_mib < r->mem_mib)
                continue;
            gpus[nd->model] += nd->gpus;
            host |= 1u << nd->model;
        }
        uint32_t mask = spec_for(&sd, rng, host, gpus);
        if (!mask)
            continue; /* no node hosts it: a model would not change that */
        r->model_mask = mask;
        s++;
    }
    free(c);
    return 0;
}

int gs_openbvar_apply(const struct gs_openbvar *v, int nv, const struct gs_openb_node *nodes,
                      int nnodes, const struct gs_openb_pod *pods, int n, uint64_t seed,
                      struct gs_openb_pod **out, struct gs_error *err)
{
    int rc = 0;
    struct work w = {.n = n, .cap = n + 16};
    int16_t *shares = malloc(sizeof(*shares) * (size_t)(n ? n : 1));
    w.p = malloc(sizeof(*w.p) * (size_t)w.cap);
    w.gone = calloc((size_t)w.cap, 1);
    *out = NULL;
    if (!shares || !w.p || !w.gone) {
        rc = GS_ENOMEM;
        goto fail;
    }
    int nshares = 0;
    for (int i = 0; i < n; i++) {
        w.p[i] = pods[i];
        if (is_share(&pods[i].req))
            shares[nshares++] = pods[i].req.milli;
    }
    struct gs_rng rng;
    gs_rng_init(&rng, seed);
    for (int t = 0; t < nv && !rc; t++) {
        char what[48];
        snprintf(what, sizeof(what), "variant term %s=%g", kinds[v[t].kind].name, v[t].pct);
        double target = v[t].pct / 100.0;
        switch (v[t].kind) {
        case GS_OPENBVAR_GPUSHARE:
            rc = term_gpushare(&w, &rng, shares, nshares, target, what, err);
            break;
        case GS_OPENBVAR_MULTIGPU:
            rc = term_multigpu(&w, &rng, target, what, err);
            break;
        case GS_OPENBVAR_GPUSPEC:
        case GS_OPENBVAR_GPUSPECMIX:
        case GS_OPENBVAR_GPUSPECSKEW:
            rc = term_gpuspec(&w, &rng, nodes, nnodes, v[t].kind, target, what, err);
            break;
        case GS_OPENBVAR_CPU:
            rc = term_cpu(&w, &rng, target, what, err);
            break;
        }
    }
    if (rc)
        goto fail;
    int k = 0;
    for (int i = 0; i < w.n; i++)
        if (!w.gone[i])
            w.p[k++] = w.p[i];
    free(shares);
    free(w.gone);
    *out = w.p;
    return k;
fail:
    if (rc == GS_ENOMEM)
        gs_error_set(err, GS_ENOMEM, "out of memory");
    free(shares);
    free(w.p);
    free(w.gone);
    return rc;
}
