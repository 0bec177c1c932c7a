/* advise.c - the decision tree, the demand estimate, the setup search and the configs it
 * writes (sim/advise.h). */
#include "advise.h"

#include "../base/error.h"
#include "../core/catalog.h"
#include "../core/mig.h"
#include "../formats/migparted.h"
#include "build.h"
#include "pool.h"
#include "service.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUDGET 160
#define MAX_MOVES      96
#define TOP_KEEP       6
#define FIT_LAYOUTS    3
#define CAND_LAYOUTS   (FIT_LAYOUTS + GS_MIG_MAX_PROFILES)
#define MAX_MAXIMAL    512

/* ---------- setups ---------- */

static int default_replicas(enum gs_group_sharing s)
{
    return s == GS_SHARE_TIMESLICING ? 4 : s == GS_SHARE_MPS ? 2 : 0;
}

/* Whether dynamic MIG has a GPU to re-carve: a group of a MIG-capable model. */
static bool any_mig_capable(const struct gs_scenario *sc)
{
    for (int g = 0; g < sc->ngroups; g++)
        if (sc->groups[g].gpus > 0 && gs_catalog_mig_capable(sc->groups[g].model))
            return true;
    return false;
}

/* One form per setup, so equal setups compare equal byte for byte. */
static void normalize(const struct gs_scenario *sc, struct gs_adv_setup *s)
{
    s->ngroups = sc->ngroups;
    for (int g = 0; g < sc->ngroups; g++) {
        struct gs_adv_group *a = &s->g[g];
        int n = sc->groups[g].gpus;
        bool whole = false;
        for (int k = 0; k < GS_MAX_GPUS_NODE; k++) {
            if (k >= n || !a->mig[k]) {
                a->mig[k] = false;
                memset(&a->layout[k], 0, sizeof(a->layout[k]));
                whole |= k < n;
            }
        }
        if (a->sharing == GS_SHARE_NONE || (!whole && a->sharing != GS_SHARE_FRACTION))
            a->replicas = 0;
        if (!whole && a->sharing != GS_SHARE_FRACTION)
            a->sharing = GS_SHARE_NONE;
        if ((a->sharing == GS_SHARE_TIMESLICING || a->sharing == GS_SHARE_MPS) && !a->replicas)
            a->replicas = default_replicas(a->sharing);
    }
    for (int g = sc->ngroups; g < GS_SC_MAX_GROUPS; g++)
        memset(&s->g[g], 0, sizeof(s->g[g]));
    s->dynamic_mig = s->dynamic_mig && any_mig_capable(sc) ? 1 : 0;
}

static int nmig(const struct gs_scenario *sc, const struct gs_adv_setup *s, int g)
{
    int n = 0;
    for (int k = 0; k < sc->groups[g].gpus && k < GS_MAX_GPUS_NODE; k++)
        n += s->g[g].mig[k];
    return n;
}

int gs_adv_setup_of(const struct gs_scenario *sc, struct gs_adv_setup *s, struct gs_error *err)
{
    memset(s, 0, sizeof(*s));
    struct gs_migparted *mp = NULL;
    int rc = 0;
    for (int g = 0; g < sc->ngroups && !rc; g++) {
        const struct gs_sc_group *grp = &sc->groups[g];
        struct gs_adv_group *a = &s->g[g];
        a->sharing = grp->sharing;
        a->replicas = grp->replicas ? grp->replicas : default_replicas(grp->sharing);
        if (!grp->gpus || (!grp->has_layout && !grp->mig_config[0]))
            continue;
        if (grp->mig_config[0] && !mp && (rc = gs_simbuild_migparted(sc, &mp, err)))
            break;
        const struct gs_mp_config *cfg;
        if ((rc = gs_simbuild_group_config(sc, mp, g, &cfg, err)))
            break;
        for (int k = 0; k < grp->gpus && k < GS_MAX_GPUS_NODE && !rc; k++) {
            bool on;
            struct gs_mig_layout l;
            rc = gs_simbuild_gpu_mig(sc, cfg, g, k, &on, &l, err);
            a->mig[k] = on && gs_mig_layout_size(&l) > 0;
            a->layout[k] = l;
        }
    }
    gs_migparted_free(mp);
    if (!rc)
        normalize(sc, s);
    return rc;
}

static void config_name(const struct gs_scenario *sc, int g, char *out, size_t size)
{
    snprintf(out, size, "gpusched-%.50s", sc->groups[g].name);
}

static bool same_gpu(const struct gs_adv_group *a, int i, int j)
{
    return a->mig[i] == a->mig[j] &&
           memcmp(&a->layout[i], &a->layout[j], sizeof(a->layout[i])) == 0;
}

int gs_adv_migparted(const struct gs_scenario *sc, const struct gs_adv_setup *s, struct gs_buf *out)
{
    int rc = 0, configs = 0;
    for (int g = 0; g < sc->ngroups && !rc; g++) {
        const struct gs_sc_group *grp = &sc->groups[g];
        const struct gs_adv_group *a = &s->g[g];
        if (!nmig(sc, s, g))
            continue;
        if (!configs++)
            rc |= gs_buf_puts(out, "version: v1\nmig-configs:\n");
        char name[GS_MP_NAME_MAX];
        config_name(sc, g, name, sizeof(name));
        const struct gs_gpu_model *m = gs_catalog_get(grp->model);
        rc |= gs_buf_printf(out, "  %s:\n", name);
        int n = grp->gpus < GS_MAX_GPUS_NODE ? grp->gpus : GS_MAX_GPUS_NODE;
        bool done[GS_MAX_GPUS_NODE] = {0};
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            int cnt = 0;
            for (int j = i; j < n; j++)
                cnt += same_gpu(a, i, j);
            rc |= gs_buf_puts(out, "    - ");
            if (m->pci_ids[0]) {
                rc |= gs_buf_puts(out, "device-filter: [");
                for (int p = 0; p < 4 && m->pci_ids[p]; p++)
                    rc |= gs_buf_printf(out, "%s\"0x%08X\"", p ? ", " : "", m->pci_ids[p]);
                rc |= gs_buf_puts(out, "]\n      ");
            }
            if (cnt == n) {
                rc |= gs_buf_puts(out, "devices: all\n");
                done[i] = true;
            } else {
                rc |= gs_buf_puts(out, "devices: [");
                int w = 0;
                for (int j = i; j < n; j++)
                    if (same_gpu(a, i, j)) {
                        rc |= gs_buf_printf(out, "%s%d", w++ ? ", " : "", j);
                        done[j] = true;
                    }
                rc |= gs_buf_puts(out, "]\n");
            }
            for (int j = 0; j < n; j++)
                if (same_gpu(a, i, j))
                    done[j] = true;
            if (!a->mig[i]) {
                rc |= gs_buf_puts(out, "      mig-enabled: false\n");
                continue;
            }
            rc |= gs_buf_puts(out, "      mig-enabled: true\n      mig-devices:\n");
            for (int p = 0; p < m->nprofiles; p++)
                if (a->layout[i].count[p])
                    rc |= gs_buf_printf(out, "        \"%s\": %u\n", m->profiles[p].name,
                                        a->layout[i].count[p]);
        }
    }
    return rc ? GS_ENOMEM : 0;
}

int gs_adv_dpconfig(const struct gs_scenario *sc, const struct gs_adv_setup *s, int g,
                    struct gs_buf *out)
{
    const struct gs_adv_group *a = &s->g[g];
    bool mig = nmig(sc, s, g) > 0;
    int rc = gs_buf_printf(out,
                           "version: v1\n"
                           "flags:\n"
                           "  migStrategy: %s\n",
                           mig ? "mixed" : "none");
    if (a->sharing == GS_SHARE_TIMESLICING || a->sharing == GS_SHARE_MPS)
        rc |= gs_buf_printf(out,
                            "sharing:\n"
                            "  %s:\n"
                            "    resources:\n"
                            "      - name: nvidia.com/gpu\n"
                            "        replicas: %d\n",
                            a->sharing == GS_SHARE_MPS ? "mps" : "timeSlicing", a->replicas);
    return rc ? GS_ENOMEM : 0;
}

const char *gs_adv_sharing_name(enum gs_group_sharing s)
{
    switch (s) {
    case GS_SHARE_TIMESLICING:
        return "time-slicing";
    case GS_SHARE_MPS:
        return "mps";
    case GS_SHARE_FRACTION:
        return "fraction";
    default:
        return "none";
    }
}

void gs_adv_group_str(const struct gs_scenario *sc, const struct gs_adv_setup *s, int g, char *out,
                      unsigned size)
{
    const struct gs_sc_group *grp = &sc->groups[g];
    const struct gs_adv_group *a = &s->g[g];
    size_t w = 0;
    out[0] = 0;
    int n = grp->gpus < GS_MAX_GPUS_NODE ? grp->gpus : GS_MAX_GPUS_NODE;
    bool done[GS_MAX_GPUS_NODE] = {0};
    int whole = 0;
    for (int i = 0; i < n; i++) {
        if (!a->mig[i]) {
            whole++;
            continue;
        }
        if (done[i])
            continue;
        int cnt = 0;
        for (int j = i; j < n; j++)
            if (same_gpu(a, i, j)) {
                cnt++;
                done[j] = true;
            }
        char l[160];
        gs_mig_layout_str(grp->model, &a->layout[i], l, sizeof(l));
        if (w < size)
            w += (size_t)snprintf(out + w, size - w, "%s%d GPU%s MIG %s", w ? ", " : "", cnt,
                                  cnt == 1 ? "" : "s", l);
    }
    if (whole && w < size) {
        if (a->sharing == GS_SHARE_TIMESLICING || a->sharing == GS_SHARE_MPS)
            snprintf(out + w, size - w, "%s%d whole GPU%s %s x%d", w ? ", " : "", whole,
                     whole == 1 ? "" : "s", gs_adv_sharing_name(a->sharing), a->replicas);
        else
            snprintf(out + w, size - w, "%s%d whole GPU%s%s", w ? ", " : "", whole,
                     whole == 1 ? "" : "s", a->sharing == GS_SHARE_FRACTION ? " (fractions)" : "");
    }
}

/* ---------- simulating a setup ---------- */

int gs_adv_simulate(const struct gs_scenario *sc, const struct gs_adv_setup *s,
                    struct gs_sim_result *out, struct gs_error *err)
{
    struct gs_scenario *c = malloc(sizeof(*c));
    if (!c)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    *c = *sc; /* the trace pods are shared, read only */
    struct gs_buf y;
    gs_buf_init(&y, 0);
    int rc = gs_adv_migparted(sc, s, &y);
    if (rc) {
        free(c);
        gs_buf_release(&y);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    c->mig_yaml = y.len ? y.data : NULL;
    c->mig_yaml_len = y.len;
    snprintf(c->mig_yaml_name, sizeof(c->mig_yaml_name), "gpusched advise (mig-parted)");
    for (int g = 0; g < sc->ngroups; g++) {
        struct gs_sc_group *grp = &c->groups[g];
        grp->sharing = s->g[g].sharing;
        grp->replicas = s->g[g].replicas;
        grp->has_layout = false;
        grp->mig_config[0] = 0;
        if (nmig(sc, s, g))
            config_name(sc, g, grp->mig_config, sizeof(grp->mig_config));
    }
    rc = gs_sim_run(c, gs_strategy_find(s->dynamic_mig ? "all" : "all-static"), out, err);
    gs_buf_release(&y);
    free(c);
    return rc;
}

static bool has_online(const struct gs_scenario *sc)
{
    for (int k = 0; k < sc->nclasses; k++)
        if (sc->classes[k].kind == GS_KIND_ONLINE)
            return true;
    return false;
}

static void score(const struct gs_scenario *sc, struct gs_adv_eval *e)
{
    const struct gs_sim_result *r = &e->r;
    double sla = sc->sla_wait_s > 0 ? sc->sla_wait_s : 30;
    e->feasible = !has_online(sc) || (r->online_p99_wait <= sla && r->online_sla_miss_pct <= 5.0);
    if (e->feasible)
        e->score = 10 + r->used_share + 0.1 * r->alloc_share - 1e-4 * r->oom_kills;
    else
        e->score =
            -log1p(r->online_p99_wait / sla) - r->online_sla_miss_pct / 100 + 0.01 * r->used_share;
}

/* ---------- running many setups on threads ---------- */

struct batch {
    const struct gs_scenario *sc;
    struct gs_adv_eval *ev;
};

static int batch_job(void *ctx, int i, struct gs_error *err)
{
    struct batch *b = ctx;
    int rc = gs_adv_simulate(b->sc, &b->ev[i].setup, &b->ev[i].r, err);
    if (!rc)
        score(b->sc, &b->ev[i]);
    return rc;
}

static int run_batch(const struct gs_scenario *sc, struct gs_adv_eval *ev, int n, int threads,
                     struct gs_error *err)
{
    struct batch b = {.sc = sc, .ev = ev};
    return gs_pool_run(n, threads, 16, batch_job, &b, NULL, err);
}

/* ---------- the workload: demand per class and where it can run ---------- */

static double mean_duration(const struct gs_sc_class *k)
{
    switch (k->dist) {
    case GS_DIST_LOGNORMAL:
        return k->median_s * exp(k->sigma * k->sigma / 2);
    default:
        return k->mean_s;
    }
}

/* Pods of the class running at once, on average (Little's law), or its peak replicas. */
static double concurrency(const struct gs_scenario *sc, const struct gs_sc_class *k)
{
    if (k->service.on)
        return gs_svc_peak_replicas(&k->service);
    double dur = mean_duration(k);
    double stop = k->stop_s > 0 ? k->stop_s : sc->duration_s;
    double active = stop - k->start_s;
    double c;
    if (k->arrival == GS_ARRIVAL_POISSON)
        c = k->per_hour / 3600.0 * dur;
    else if (k->interval_s > 0)
        c = dur / k->interval_s;
    else
        c = k->max_jobs; /* a burst */
    if (sc->duration_s > 0 && active > 0 && active < sc->duration_s)
        c *= active / sc->duration_s;
    if (k->max_jobs > 0 && c > k->max_jobs)
        c = k->max_jobs;
    return c * (k->gang > 1 ? k->gang : 1);
}

static int class_profile(const struct gs_sc_class *k, int model)
{
    if (!k->mig[0] || !gs_catalog_mig_capable(model))
        return -1;
    return gs_catalog_find_profile(model, k->mig);
}

/* A whole-GPU pod of the class fits a GPU of the group. */
static bool whole_fits(const struct gs_sc_class *k, const struct gs_sc_group *g)
{
    if (!g->gpus || k->gpus > g->gpus)
        return false;
    const struct gs_gpu_model *m = gs_catalog_get(g->model);
    return !k->gpu_mem_mib || !m->mem_mib || (uint32_t)k->gpu_mem_mib <= m->mem_mib;
}

/* Share of the class's demand a group takes: its GPUs over those of every group that can
 * host the class the same way. */
static double group_share(const struct gs_scenario *sc, const struct gs_sc_class *k, int g,
                          bool mig)
{
    double mine = 0, all = 0;
    for (int i = 0; i < sc->ngroups; i++) {
        const struct gs_sc_group *grp = &sc->groups[i];
        bool ok = mig ? class_profile(k, grp->model) >= 0 : whole_fits(k, grp);
        if (!ok)
            continue;
        all += grp->nodes * grp->gpus;
        if (i == g)
            mine = grp->nodes * grp->gpus;
    }
    return all > 0 ? mine / all : 0;
}

struct gdemand {
    double mig[GS_MIG_MAX_PROFILES]; /* instances of each profile, the group's share */
    double whole;                    /* whole GPUs */
    double shared;                   /* pods that may share a GPU */
};

/* Slots to hold a class's pods: the mean plus square-root staffing headroom for Poisson
 * arrivals (two standard deviations for online inference, whose SLA is its wait; half of one
 * for the rest, which may queue). */
static double staffed(const struct gs_sc_class *k, double mean)
{
    if (k->service.on || mean <= 0)
        return mean;
    return mean + (k->kind == GS_KIND_ONLINE ? 2.0 : 0.5) * sqrt(mean);
}

static void group_demand(const struct gs_scenario *sc, int g, struct gdemand *d)
{
    memset(d, 0, sizeof(*d));
    const struct gs_sc_group *grp = &sc->groups[g];
    for (int c = 0; c < sc->nclasses; c++) {
        const struct gs_sc_class *k = &sc->classes[c];
        double n = staffed(k, concurrency(sc, k));
        int p = class_profile(k, grp->model);
        if (k->mig[0]) {
            if (p >= 0)
                d->mig[p] += n * group_share(sc, k, g, true);
            continue; /* under MIG a class with a profile asks for its slice */
        }
        if (!k->gpus || !whole_fits(k, grp))
            continue;
        double share = group_share(sc, k, g, false);
        if (k->share)
            d->shared += n * share;
        else
            d->whole += n * k->gpus * share;
    }
}

/* ---------- the article's decision tree ---------- */

static void walk_tree(const struct gs_scenario *sc, int g, char *out, size_t size, char *pick,
                      size_t pick_size)
{
    const struct gs_sc_group *grp = &sc->groups[g];
    const struct gs_gpu_model *m = gs_catalog_get(grp->model);
    size_t w = 0;
#define SAY(...)                                                                                   \
    do {                                                                                           \
        if (w < size)                                                                              \
            w += (size_t)snprintf(out + w, size - w, __VA_ARGS__);                                 \
    } while (0)
    if (!grp->gpus) {
        SAY("no GPUs");
        snprintf(pick, pick_size, "none");
        return;
    }
    char online[160] = "", migc[160] = "", train[160] = "", light[160] = "", big[160] = "";
    int tenants = 0;
    bool seen[GS_SC_MAX_TENANTS + 1] = {0};
    size_t lo = 0, lm = 0, lt = 0, ll = 0, lb = 0;
    uint32_t largest = 0;
    for (int p = 0; p < m->nprofiles; p++)
        if (m->profiles[p].mem_mib > largest)
            largest = m->profiles[p].mem_mib;
    for (int c = 0; c < sc->nclasses; c++) {
        const struct gs_sc_class *k = &sc->classes[c];
        bool here = class_profile(k, grp->model) >= 0 || (!k->mig[0] && whole_fits(k, grp));
        if (!here)
            continue;
        int t = k->tenant >= 0 && k->tenant < GS_SC_MAX_TENANTS ? k->tenant : GS_SC_MAX_TENANTS;
        if (!seen[t]) {
            seen[t] = true;
            tenants++;
        }
#define ADD(buf, len)                                                                              \
    do {                                                                                           \
        if (len < sizeof(buf))                                                                     \
            len +=                                                                                 \
                (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? ", " : "", k->name);  \
    } while (0)
        if (k->kind == GS_KIND_ONLINE)
            ADD(online, lo);
        if (class_profile(k, grp->model) >= 0)
            ADD(migc, lm);
        if (k->kind == GS_KIND_TRAINING && (k->share & 2))
            ADD(train, lt);
        if (k->kind != GS_KIND_TRAINING && (k->share & 1))
            ADD(light, ll);
        if (!k->mig[0] && (k->gpus > 1 || (largest && (uint32_t)k->gpu_mem_mib > largest / 2)))
            ADD(big, lb);
#undef ADD
    }
    bool capable = gs_catalog_mig_capable(grp->model);
    SAY("%s supports MIG? %s", m->name, capable ? "yes" : "no");
    if (capable) {
        bool iso = online[0] || tenants > 1 || migc[0];
        SAY(" -> full isolation needed? %s", iso ? "yes" : "no");
        if (iso) {
            SAY(" (");
            int parts = 0;
            if (online[0])
                SAY("%sonline inference: %s", parts++ ? "; " : "", online);
            if (tenants > 1)
                SAY("%s%d tenants", parts++ ? "; " : "", tenants);
            if (migc[0])
                SAY("%sslices asked by %s", parts++ ? "; " : "", migc);
            SAY(") -> MIG");
            if (big[0])
                SAY("; whole GPUs kept for %s (more memory or GPUs than a slice holds)", big);
            snprintf(pick, pick_size, "mig");
            return;
        }
    }
    if (train[0] || capable) {
        SAY(" -> training? %s", train[0] ? "yes" : "no");
        if (train[0]) {
            SAY(" (%s) -> MPS", train);
            snprintf(pick, pick_size, "mps");
            return;
        }
    }
    if (light[0]) {
        SAY(" -> inference that can share (%s) -> time-slicing", light);
        snprintf(pick, pick_size, "time-slicing");
        return;
    }
    SAY(" -> nothing here can share -> whole GPUs");
    snprintf(pick, pick_size, "none");
#undef SAY
}

/* ---------- layouts that fit a demand ---------- */

struct fitted {
    struct gs_mig_layout l;
    double fit, units;
};

static int cmp_fit(const void *a, const void *b)
{
    const struct fitted *x = a, *y = b;
    if (x->fit != y->fit)
        return x->fit < y->fit ? 1 : -1;
    if (x->units != y->units)
        return x->units < y->units ? 1 : -1;
    return memcmp(&x->l, &y->l, sizeof(x->l));
}

/* The maximal layouts of the model that overlap the demand mix most (by units), best first. */
static int best_layouts(int model, const double d[GS_MIG_MAX_PROFILES], struct gs_mig_layout *out,
                        int cap)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    double tot = 0;
    for (int p = 0; p < m->nprofiles; p++)
        tot += d[p] * gs_mig_profile_units(&m->profiles[p]);
    if (tot <= 0)
        return 0;
    struct gs_mig_layout *all = calloc(MAX_MAXIMAL, sizeof(*all));
    struct fitted *f = calloc(MAX_MAXIMAL, sizeof(*f));
    if (!all || !f) {
        free(all);
        free(f);
        return 0;
    }
    int n = gs_mig_enumerate_maximal(model, all, MAX_MAXIMAL);
    if (n > MAX_MAXIMAL)
        n = MAX_MAXIMAL;
    int nf = 0;
    for (int i = 0; i < n; i++) {
        double lu = gs_mig_layout_units(model, &all[i]);
        if (lu <= 0)
            continue;
        double fit = 0;
        for (int p = 0; p < m->nprofiles; p++) {
            double u = gs_mig_profile_units(&m->profiles[p]);
            double a = d[p] * u / tot, b = all[i].count[p] * u / lu;
            fit += a < b ? a : b;
        }
        if (fit <= 0)
            continue;
        f[nf++] = (struct fitted){all[i], fit, lu};
    }
    qsort(f, (size_t)nf, sizeof(*f), cmp_fit);
    int k = 0;
    for (; k < nf && k < cap; k++)
        out[k] = f[k].l;
    free(all);
    free(f);
    return k;
}

/* The planner's layouts for a demand of instances (rounded up); returns how many GPUs. */
static int plan_layouts(int model, const double d[GS_MIG_MAX_PROFILES], double scale,
                        struct gs_mig_layout *out, int cap)
{
    uint32_t want[GS_MIG_MAX_PROFILES] = {0};
    bool any = false;
    for (int p = 0; p < GS_MIG_MAX_PROFILES; p++) {
        want[p] = (uint32_t)ceil(d[p] * scale - 1e-9);
        any |= want[p] > 0;
    }
    if (!any)
        return 0;
    struct gs_error e;
    gs_error_init(&e);
    int n = gs_mig_plan(model, want, out, cap, &e);
    return n < 0 ? 0 : (n > cap ? cap : n);
}

/* ---------- the search ---------- */

struct search {
    const struct gs_scenario *sc;
    const struct gs_advise_opts *o;
    int budget;
    struct gs_adv_eval *ev; /* every setup simulated */
    int nev, cap;
    struct gdemand dem[GS_SC_MAX_GROUPS];
    struct gs_mig_layout fit[GS_SC_MAX_GROUPS][CAND_LAYOUTS]; /* best fits, then pure ones */
    int nfit[GS_SC_MAX_GROUPS], ncand[GS_SC_MAX_GROUPS];
};

/* For each profile the demand asks, the maximal layout with the most instances of it (the
 * fewest others on a tie): what a GPU for that profile alone looks like. Appended to the
 * group's candidates after the best fits, without repeats. */
static void add_pure_layouts(struct search *S, int g)
{
    int model = S->sc->groups[g].model;
    struct gs_mig_layout *all = calloc(MAX_MAXIMAL, sizeof(*all));
    if (!all)
        return;
    int n = gs_mig_enumerate_maximal(model, all, MAX_MAXIMAL);
    if (n > MAX_MAXIMAL)
        n = MAX_MAXIMAL;
    S->ncand[g] = S->nfit[g];
    for (int p = 0; p < GS_MIG_MAX_PROFILES; p++) {
        if (S->dem[g].mig[p] <= 0)
            continue;
        int best = -1;
        for (int i = 0; i < n; i++) {
            if (!all[i].count[p])
                continue;
            if (best < 0 || all[i].count[p] > all[best].count[p] ||
                (all[i].count[p] == all[best].count[p] &&
                 gs_mig_layout_size(&all[i]) < gs_mig_layout_size(&all[best])))
                best = i;
        }
        if (best < 0)
            continue;
        bool dup = false;
        for (int c = 0; c < S->ncand[g]; c++)
            dup |= memcmp(&S->fit[g][c], &all[best], sizeof(all[best])) == 0;
        if (!dup && S->ncand[g] < CAND_LAYOUTS)
            S->fit[g][S->ncand[g]++] = all[best];
    }
    free(all);
}

static bool seen_setup(const struct search *S, const struct gs_adv_setup *s)
{
    for (int i = 0; i < S->nev; i++)
        if (memcmp(&S->ev[i].setup, s, sizeof(*s)) == 0)
            return true;
    return false;
}

/* Simulate the candidates not seen before (within the budget); *best gets the index of the
 * best of them in S->ev, or -1 when none ran. Returns 0 or an error. */
static int evaluate(struct search *S, struct gs_adv_setup *cand, int n, int *best,
                    struct gs_error *err)
{
    int first = S->nev;
    *best = -1;
    for (int i = 0; i < n && S->nev < S->budget; i++) {
        normalize(S->sc, &cand[i]);
        if (seen_setup(S, &cand[i]))
            continue;
        if (S->nev == S->cap) {
            int nc = S->cap ? 2 * S->cap : 32;
            struct gs_adv_eval *v = realloc(S->ev, sizeof(*v) * (size_t)nc);
            if (!v)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
            S->ev = v;
            S->cap = nc;
        }
        memset(&S->ev[S->nev], 0, sizeof(S->ev[S->nev]));
        S->ev[S->nev++].setup = cand[i];
    }
    if (S->nev == first)
        return 0;
    int rc = run_batch(S->sc, &S->ev[first], S->nev - first, S->o->threads, err);
    if (rc)
        return rc;
    *best = first;
    for (int i = first + 1; i < S->nev; i++)
        if (S->ev[i].score > S->ev[*best].score)
            *best = i;
    return 0;
}

/* Carve GPUs [0, k) of group g: keep the layouts already there, give new ones `fill`. */
static void set_mig_count(struct gs_adv_group *a, int gpus, int k, const struct gs_mig_layout *fill)
{
    for (int i = 0; i < gpus && i < GS_MAX_GPUS_NODE; i++) {
        if (i < k && !a->mig[i]) {
            a->mig[i] = true;
            a->layout[i] = *fill;
        } else if (i >= k) {
            a->mig[i] = false;
        }
    }
}

/* The MIG GPUs first, in their order, then the whole ones (setups the search makes carve a
 * prefix of the GPUs). */
static void compact(const struct gs_scenario *sc, struct gs_adv_setup *s, int g)
{
    struct gs_adv_group *a = &s->g[g];
    int n = sc->groups[g].gpus < GS_MAX_GPUS_NODE ? sc->groups[g].gpus : GS_MAX_GPUS_NODE;
    int w = 0;
    struct gs_mig_layout l[GS_MAX_GPUS_NODE];
    for (int i = 0; i < n; i++)
        if (a->mig[i])
            l[w++] = a->layout[i];
    for (int i = 0; i < n; i++) {
        a->mig[i] = i < w;
        if (i < w)
            a->layout[i] = l[i];
    }
}

static bool any_share(const struct gs_scenario *sc, int g, uint8_t bit)
{
    for (int c = 0; c < sc->nclasses; c++) {
        const struct gs_sc_class *k = &sc->classes[c];
        if ((k->share & bit) && !k->mig[0] && whole_fits(k, &sc->groups[g]))
            return true;
        if ((k->share & bit) && k->mig[0] && class_profile(k, sc->groups[g].model) < 0 &&
            whole_fits(k, &sc->groups[g]))
            return true;
    }
    return false;
}

static bool mig_demand(const struct search *S, int g)
{
    for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
        if (S->dem[g].mig[p] > 0)
            return true;
    return false;
}

/* The planner's mix for the group's MIG demand per node, on k GPUs. */
static void planner_mix(const struct search *S, int g, int k, struct gs_adv_group *a)
{
    const struct gs_sc_group *grp = &S->sc->groups[g];
    struct gs_mig_layout pl[64];
    double per_node[GS_MIG_MAX_PROFILES];
    for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
        per_node[p] = S->dem[g].mig[p] / (grp->nodes > 0 ? grp->nodes : 1);
    int n = plan_layouts(grp->model, per_node, 1.0, pl, 64);
    if (n == 0 && S->nfit[g])
        pl[n++] = S->fit[g][0];
    for (int i = 0; i < grp->gpus && i < GS_MAX_GPUS_NODE; i++) {
        a->mig[i] = i < k && n > 0;
        if (a->mig[i])
            a->layout[i] = pl[i % n];
    }
}

static void seed_setup(struct search *S, const char pick[][32], struct gs_adv_setup *s)
{
    const struct gs_scenario *sc = S->sc;
    memset(s, 0, sizeof(*s));
    for (int g = 0; g < sc->ngroups; g++) {
        const struct gs_sc_group *grp = &sc->groups[g];
        struct gs_adv_group *a = &s->g[g];
        if (grp->sharing == GS_SHARE_FRACTION) {
            a->sharing = GS_SHARE_FRACTION;
            a->replicas = grp->replicas;
            continue;
        }
        if (strcmp(pick[g], "mig") == 0 && mig_demand(S, g)) {
            struct gs_mig_layout pl[256];
            int need = plan_layouts(grp->model, S->dem[g].mig, 1.0, pl, 256);
            double whole = S->dem[g].whole + S->dem[g].shared / 4;
            int gpus = grp->nodes * grp->gpus;
            int k = need + whole > 0 ? (int)lround(gpus * need / (need + whole)) : gpus;
            if (k < 1)
                k = 1;
            int per = (k + grp->nodes - 1) / (grp->nodes > 0 ? grp->nodes : 1);
            if (per > grp->gpus)
                per = grp->gpus;
            planner_mix(S, g, per, a);
            a->sharing = any_share(sc, g, 1) ? GS_SHARE_TIMESLICING : GS_SHARE_NONE;
        } else if (strcmp(pick[g], "mps") == 0) {
            a->sharing = GS_SHARE_MPS;
        } else if (strcmp(pick[g], "time-slicing") == 0) {
            a->sharing = GS_SHARE_TIMESLICING;
        }
        a->replicas = default_replicas(a->sharing);
    }
    normalize(sc, s);
}

/* Neighbours of `from` that change group g only. */
static int neighbours(struct search *S, const struct gs_adv_setup *from, int g,
                      struct gs_adv_setup *out, int cap)
{
    const struct gs_scenario *sc = S->sc;
    const struct gs_sc_group *grp = &sc->groups[g];
    int n = 0, G = grp->gpus < GS_MAX_GPUS_NODE ? grp->gpus : GS_MAX_GPUS_NODE;
    if (!G || grp->sharing == GS_SHARE_FRACTION)
        return 0;
    struct gs_adv_setup base = *from;
    compact(sc, &base, g);
    int k = nmig(sc, &base, g);
#define PUSH(s)                                                                                    \
    do {                                                                                           \
        if (n < cap)                                                                               \
            out[n++] = (s);                                                                        \
    } while (0)
    if (gs_catalog_mig_capable(grp->model) && mig_demand(S, g) && S->nfit[g]) {
        int q = G / 4 > 1 ? G / 4 : 2;
        int deltas[2] = {-q, q};
        for (int d = 0; d < 2; d++) {
            int k2 = k + deltas[d];
            if (k2 < 0 || k2 > G || k2 == k)
                continue;
            struct gs_adv_setup s = base;
            set_mig_count(&s.g[g], G, k2, &S->fit[g][0]);
            if (k2 > 0 && s.g[g].sharing == GS_SHARE_MPS)
                s.g[g].sharing = GS_SHARE_NONE; /* upstream: no MPS with mixed MIG */
            PUSH(s);
        }
        /* one GPU more, or one GPU of a run of equal layouts re-carved, with each candidate */
        for (int f = 0; f < S->ncand[g]; f++) {
            if (k < G) {
                struct gs_adv_setup s = base;
                set_mig_count(&s.g[g], G, k + 1, &S->fit[g][f]);
                if (s.g[g].sharing == GS_SHARE_MPS)
                    s.g[g].sharing = GS_SHARE_NONE;
                PUSH(s);
            }
            for (int i = 0; i < k; i++) {
                bool run_end = i == k - 1 || memcmp(&base.g[g].layout[i], &base.g[g].layout[i + 1],
                                                    sizeof(base.g[g].layout[i])) != 0;
                if (!run_end ||
                    memcmp(&base.g[g].layout[i], &S->fit[g][f], sizeof(S->fit[g][f])) == 0)
                    continue;
                struct gs_adv_setup s = base;
                s.g[g].layout[i] = S->fit[g][f];
                PUSH(s);
            }
        }
        /* one GPU of a run back to whole */
        for (int i = 0; i < k; i++) {
            bool run_end = i == k - 1 || memcmp(&base.g[g].layout[i], &base.g[g].layout[i + 1],
                                                sizeof(base.g[g].layout[i])) != 0;
            if (!run_end)
                continue;
            struct gs_adv_setup s = base;
            for (int j = i; j < k - 1; j++)
                s.g[g].layout[j] = s.g[g].layout[j + 1];
            s.g[g].mig[k - 1] = false;
            PUSH(s);
        }
        int kk = k ? k : (G + 1) / 2;
        for (int f = 0; f < S->nfit[g]; f++) {
            struct gs_adv_setup s = base;
            for (int i = 0; i < G; i++) {
                s.g[g].mig[i] = i < kk;
                s.g[g].layout[i] = S->fit[g][f];
            }
            if (s.g[g].sharing == GS_SHARE_MPS)
                s.g[g].sharing = GS_SHARE_NONE;
            PUSH(s);
        }
        struct gs_adv_setup s = base;
        planner_mix(S, g, kk, &s.g[g]);
        if (s.g[g].sharing == GS_SHARE_MPS)
            s.g[g].sharing = GS_SHARE_NONE;
        PUSH(s);
    } else if (k > 0) {
        struct gs_adv_setup s = base; /* MIG that nothing asks for: off */
        set_mig_count(&s.g[g], G, 0, NULL);
        PUSH(s);
    }
    if (k < G) {
        struct {
            enum gs_group_sharing m;
            int r;
        } modes[] = {{GS_SHARE_NONE, 0},        {GS_SHARE_TIMESLICING, 2},
                     {GS_SHARE_TIMESLICING, 4}, {GS_SHARE_TIMESLICING, 8},
                     {GS_SHARE_MPS, 2},         {GS_SHARE_MPS, 4}};
        for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
            if (modes[i].m == GS_SHARE_TIMESLICING && !any_share(sc, g, 1))
                continue;
            if (modes[i].m == GS_SHARE_MPS && (!any_share(sc, g, 2) || k > 0))
                continue;
            if (modes[i].m == base.g[g].sharing && modes[i].r == base.g[g].replicas)
                continue;
            struct gs_adv_setup s = base;
            s.g[g].sharing = modes[i].m;
            s.g[g].replicas = modes[i].r;
            PUSH(s);
        }
    }
#undef PUSH
    return n;
}

static int cmp_eval(const void *a, const void *b)
{
    const struct gs_adv_eval *x = a, *y = b;
    return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

int gs_advise(const struct gs_scenario *sc, const struct gs_advise_opts *o, struct gs_advice *out,
              struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    out->sc = sc;
    if (sc->ntrace > 0 || sc->nclasses == 0)
        return gs_error_set(err, GS_EINVAL,
                            "scenario '%s': advise needs workload classes (a trace scenario has "
                            "none to walk the decision tree with)",
                            sc->name);
    struct search S = {.sc = sc, .o = o, .budget = o->budget > 0 ? o->budget : DEFAULT_BUDGET};
    for (int g = 0; g < sc->ngroups; g++) {
        walk_tree(sc, g, out->tree[g], sizeof(out->tree[g]), out->pick[g], sizeof(out->pick[g]));
        group_demand(sc, g, &S.dem[g]);
        if (gs_catalog_mig_capable(sc->groups[g].model)) {
            S.nfit[g] = best_layouts(sc->groups[g].model, S.dem[g].mig, S.fit[g], FIT_LAYOUTS);
            add_pure_layouts(&S, g);
        }
    }
    /* the scenario as written */
    int rc = gs_adv_setup_of(sc, &out->current.setup, err);
    if (rc)
        return rc;
    struct gs_sim_result *cur = &out->current.r;
    if ((rc = gs_sim_run(sc, gs_strategy_find("all-static"), cur, err)))
        return rc;
    score(sc, &out->current);
    /* the decision tree's setup, and the current one through the same path; each also with
     * dynamic MIG (normalize drops it where no GPU could be re-carved) */
    struct gs_adv_setup first[4];
    seed_setup(&S, (const char(*)[32])out->pick, &first[0]);
    first[1] = out->current.setup;
    first[2] = first[0];
    first[3] = first[1];
    first[2].dynamic_mig = first[3].dynamic_mig = 1;
    int best;
    if ((rc = evaluate(&S, first, 4, &best, err))) {
        free(S.ev);
        return rc;
    }
    for (int i = 0; i < S.nev; i++)
        if (memcmp(&S.ev[i].setup, &first[0], sizeof(first[0])) == 0)
            out->seed = S.ev[i];
    /* local search, group by group, largest groups first */
    int order[GS_SC_MAX_GROUPS];
    for (int g = 0; g < sc->ngroups; g++)
        order[g] = g;
    for (int i = 1; i < sc->ngroups; i++)
        for (int j = i; j > 0; j--) {
            const struct gs_sc_group *a = &sc->groups[order[j - 1]], *b = &sc->groups[order[j]];
            if (a->nodes * a->gpus >= b->nodes * b->gpus)
                break;
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    struct gs_adv_setup *cand = calloc(MAX_MOVES, sizeof(*cand));
    if (!cand) {
        free(S.ev);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    bool improved = true;
    while (improved && S.nev < S.budget) {
        improved = false;
        out->passes++;
        for (int oi = -1; oi < sc->ngroups && S.nev < S.budget; oi++) {
            int n = 1;
            if (oi < 0) { /* the cluster-wide move: dynamic MIG on or off */
                cand[0] = S.ev[best].setup;
                cand[0].dynamic_mig = !cand[0].dynamic_mig ? 1 : 0;
            } else {
                n = neighbours(&S, &S.ev[best].setup, order[oi], cand, MAX_MOVES);
            }
            int b;
            if ((rc = evaluate(&S, cand, n, &b, err))) {
                free(cand);
                free(S.ev);
                return rc;
            }
            if (b >= 0 && S.ev[b].score > S.ev[best].score + 1e-9) {
                best = b;
                improved = true;
            }
        }
    }
    free(cand);
    out->recommended = S.ev[best];
    out->simulations = S.nev + 1;
    qsort(S.ev, (size_t)S.nev, sizeof(*S.ev), cmp_eval);
    out->ntop = S.nev < TOP_KEEP ? S.nev : TOP_KEEP;
    out->top = S.ev; /* the first ntop are kept; the rest is freed with it */
    return 0;
}

void gs_advice_free(struct gs_advice *a)
{
    free(a->top);
    a->top = NULL;
    a->ntop = 0;
}
