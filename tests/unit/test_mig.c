/* MIG layouts: exact placement on each model's own grid, media-engine rules, enumeration, and
 * the planner, which must use the fewest GPUs (checked against an independent brute force).
 * Property tests run over every MIG-capable model (every enumerated layout validates, every
 * valid multiset fits in a maximal layout, no placement overlaps). The catalog's rows
 * themselves are checked in test_catalog.c. */
#include "base/error.h"
#include "core/catalog.h"
#include "core/mig.h"

#include <criterion/criterion.h>
#include <string.h>

static int model(const char *name)
{
    int m = gs_catalog_find(name);
    cr_assert_geq(m, 0, "model '%s' not in the catalog", name);
    return m;
}

static struct gs_mig_layout layout_of(int m, const char *spec)
{
    /* "3g.40gb=2,1g.10gb=1" */
    struct gs_mig_layout l;
    memset(&l, 0, sizeof(l));
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", spec);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        *eq = '\0';
        int p = gs_catalog_find_profile(m, t);
        cr_assert_geq(p, 0, "profile %s", t);
        l.count[p] = (uint8_t)strtol(eq + 1, NULL, 10);
    }
    return l;
}

Test(mig, exact_placement_and_reasons)
{
    int m = model("A100-80GB");
    struct gs_error err;
    struct gs_mig_placement pl;
    struct gs_mig_layout ok[] = {
        layout_of(m, "3g.40gb=2"),           layout_of(m, "1g.10gb=7"),
        layout_of(m, "2g.20gb=3,1g.10gb=1"), layout_of(m, "4g.40gb=1,3g.40gb=1"),
        layout_of(m, "4g.40gb=1,1g.10gb=2"), layout_of(m, "1g.20gb=4"),
        layout_of(m, "7g.80gb=1"),           layout_of(m, "3g.40gb=1,1g.20gb=2"),
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        gs_error_init(&err);
        cr_assert_eq(gs_mig_place(m, &ok[i], &pl, &err), 0, "layout %zu: %s", i, err.msg);
        cr_assert(gs_mig_placement_valid(m, &pl), "layout %zu placement invalid", i);
        cr_assert_eq(pl.n, gs_mig_layout_size(&ok[i]));
    }
    struct {
        const char *spec, *why;
    } bad[] = {
        {"1g.10gb=8", "at most 7"},
        {"4g.40gb=2", "at most 1"},
        {"3g.40gb=2,1g.10gb=1", "memory slices"},
        {"7g.80gb=1,1g.10gb=1", "compute slices"},
        {"1g.10gb+me=2", "at most 1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gs_mig_layout l = layout_of(m, bad[i].spec);
        gs_error_init(&err);
        cr_assert_neq(gs_mig_place(m, &l, NULL, &err), 0, "%s accepted", bad[i].spec);
        cr_assert(strstr(err.msg, bad[i].why) != NULL, "%s: '%s' lacks '%s'", bad[i].spec, err.msg,
                  bad[i].why);
    }
    /* around instances already there, the search is what decides: a 1g at slice 1 leaves
     * no start for a 4g (only start 0) but a 3g still fits at 4 */
    struct gs_mig_layout four = layout_of(m, "4g.40gb=1"), three = layout_of(m, "3g.40gb=1");
    gs_error_init(&err);
    cr_assert_eq(gs_mig_place_into(m, &four, 0x02, 1, NULL, &err), GS_ENOFIT);
    cr_assert(strstr(err.msg, "no placement") != NULL, "%s", err.msg);
    cr_assert_eq(gs_mig_place_into(m, &three, 0x02, 1, &pl, NULL), 0);
    cr_assert_eq(pl.inst[0].start, 4);
    /* deterministic placement: largest first, each at its lowest legal start */
    struct gs_mig_layout l = layout_of(m, "3g.40gb=1,1g.20gb=2");
    gs_mig_place(m, &l, &pl, NULL);
    cr_assert_eq(pl.inst[0].start, 0, "largest first at its lowest start");
}

static bool sub_multiset(const struct gs_mig_layout *a, const struct gs_mig_layout *b)
{
    for (int i = 0; i < GS_MIG_MAX_PROFILES; i++)
        if (a->count[i] > b->count[i])
            return false;
    return true;
}

Test(mig, properties_hold_on_every_mig_model)
{
    static struct gs_mig_layout maximal[4096], valid[4096];
    int checked = 0;
    for (int m = 0; m < gs_catalog_count(); m++) {
        if (!gs_catalog_mig_capable(m))
            continue;
        checked++;
        const struct gs_gpu_model *g = gs_catalog_get(m);
        int nmax = gs_mig_enumerate_maximal(m, maximal, 4096);
        int nval = gs_mig_enumerate_valid(m, valid, 4096);
        cr_assert(nmax > 0 && nmax <= 4096 && nval <= 4096, "model %d: %d maximal", m, nmax);
        /* every enumerated layout validates and places without overlap */
        for (int i = 0; i < nmax; i++) {
            struct gs_mig_placement pl;
            cr_assert_eq(gs_mig_place(m, &maximal[i], &pl, NULL), 0);
            cr_assert(gs_mig_placement_valid(m, &pl));
            unsigned occ = 0;
            int compute = 0;
            for (int k = 0; k < pl.n; k++) {
                const struct gs_mig_profile *p = &g->profiles[pl.inst[k].profile];
                unsigned bits = ((1u << p->mem_slices) - 1) << pl.inst[k].start;
                cr_assert_eq(occ & bits, 0, "%s layout %d: instances overlap", g->name, i);
                occ |= bits;
                compute += p->compute;
            }
            /* within the model's own grid, not the largest one */
            cr_assert_eq(occ >> g->mig_mem, 0, "%s layout %d: past memory slice %d", g->name, i,
                         g->mig_mem);
            cr_assert_leq(compute, g->mig_compute, "%s layout %d", g->name, i);
        }
        /* every valid multiset fits in some maximal layout */
        for (int i = 0; i < nval; i++) {
            bool found = false;
            for (int j = 0; j < nmax && !found; j++)
                found = sub_multiset(&valid[i], &maximal[j]);
            char s[128];
            gs_mig_layout_str(m, &valid[i], s, sizeof(s));
            cr_assert(found, "model %d: valid %s is in no maximal layout", m, s);
        }
        /* and every multiset the odometer did not list is invalid: spot-check all small
         * layouts of up to 3 instances */
        for (int a = 0; a < g->nprofiles; a++)
            for (int b = a; b < g->nprofiles; b++)
                for (int c = b; c < g->nprofiles; c++) {
                    struct gs_mig_layout l;
                    memset(&l, 0, sizeof(l));
                    l.count[a]++;
                    l.count[b]++;
                    l.count[c]++;
                    bool listed = false;
                    for (int i = 0; i < nval && !listed; i++)
                        listed = memcmp(&valid[i], &l, sizeof(l)) == 0;
                    cr_assert_eq(listed, gs_mig_place(m, &l, NULL, NULL) == 0);
                }
    }
    cr_assert_eq(checked, 11, "%d MIG-capable models", checked);
}

Test(mig, plan_uses_fewest_gpus)
{
    int m = model("A100-80GB");
    uint32_t demand[GS_MIG_MAX_PROFILES] = {0};
    demand[gs_catalog_find_profile(m, "3g.40gb")] = 1;
    demand[gs_catalog_find_profile(m, "1g.10gb")] = 3;
    struct gs_mig_layout out[16];
    cr_assert_eq(gs_mig_plan(m, demand, out, 16, NULL), 1);
    memset(demand, 0, sizeof(demand));
    demand[gs_catalog_find_profile(m, "3g.40gb")] = 5;
    demand[gs_catalog_find_profile(m, "1g.10gb")] = 9;
    demand[gs_catalog_find_profile(m, "2g.20gb")] = 2;
    int n = gs_mig_plan(m, demand, out, 16, NULL);
    /* lower bound: 33 memory slices need 5 GPUs */
    cr_assert_eq(n, 5, "planned %d GPUs", n);
    uint32_t got[GS_MIG_MAX_PROFILES] = {0};
    for (int i = 0; i < n; i++) {
        cr_assert_eq(gs_mig_place(m, &out[i], NULL, NULL), 0);
        for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
            got[p] += out[i].count[p];
    }
    cr_assert_eq(memcmp(got, demand, sizeof(got)), 0, "plan covers exactly the demand");
}

Test(mig, plan_fills_each_gpu_with_one_me_instance_and_six_1g)
{
    /* `gpusched mig plan --gpu A100-80GB --demand 1g.10gb+me=2,1g.10gb=12` said 3 GPUs: each
     * A100 holds one 1g.10gb+me beside six 1g.10gb, so 2 suffice */
    int m = model("A100-80GB");
    uint32_t demand[GS_MIG_MAX_PROFILES] = {0};
    demand[gs_catalog_find_profile(m, "1g.10gb+me")] = 2;
    demand[gs_catalog_find_profile(m, "1g.10gb")] = 12;
    struct gs_mig_layout out[16];
    int n = gs_mig_plan(m, demand, out, 16, NULL);
    cr_assert_eq(n, 2, "planned %d GPUs, want 2", n);
    uint32_t got[GS_MIG_MAX_PROFILES] = {0};
    for (int i = 0; i < n; i++) {
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_eq(gs_mig_place(m, &out[i], NULL, &err), 0, "gpu %d: %s", i, err.msg);
        for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
            got[p] += out[i].count[p];
    }
    cr_assert_eq(memcmp(got, demand, sizeof(got)), 0, "plan covers exactly the demand");
    bool optimal = false;
    cr_assert_eq(gs_mig_plan_ex(m, demand, out, 16, &optimal, NULL), 2);
    cr_assert(optimal, "the count is not proven");
}

/* ---------- an independent optimum: dynamic programming over remainders ---------- */

#define BF_MAXP 3
#define BF_MAXC 6

struct brute {
    int model, np, prof[BF_MAXP], d[BF_MAXP], nstates;
    bool valid[343];  /* by mixed-radix index of counts */
    int8_t best[343]; /* fewest GPUs for a remainder; -1: not computed */
};

static int bf_index(const struct brute *b, const int *c)
{
    int idx = 0;
    for (int i = b->np - 1; i >= 0; i--)
        idx = idx * (b->d[i] + 1) + c[i];
    return idx;
}

static void bf_counts(const struct brute *b, int idx, int *c)
{
    for (int i = 0; i < b->np; i++) {
        c[i] = idx % (b->d[i] + 1);
        idx /= b->d[i] + 1;
    }
}

static int bf_solve(struct brute *b, int idx)
{
    if (idx == 0)
        return 0;
    if (b->best[idx] >= 0)
        return b->best[idx];
    int r[BF_MAXP], best = 127;
    bf_counts(b, idx, r);
    for (int sub = 1; sub <= idx; sub++) {
        int c[BF_MAXP];
        bf_counts(b, sub, c);
        bool within = true;
        for (int i = 0; i < b->np; i++)
            within &= c[i] <= r[i];
        if (!within || !b->valid[sub])
            continue;
        int rest[BF_MAXP];
        for (int i = 0; i < b->np; i++)
            rest[i] = r[i] - c[i];
        int v = 1 + bf_solve(b, bf_index(b, rest));
        if (v < best)
            best = v;
    }
    b->best[idx] = (int8_t)best;
    return best;
}

static int brute_force(int model, int np, const int *prof, const int *d)
{
    struct brute b = {.model = model, .np = np, .nstates = 1};
    for (int i = 0; i < np; i++) {
        b.prof[i] = prof[i];
        b.d[i] = d[i];
        b.nstates *= d[i] + 1;
    }
    for (int s = 0; s < b.nstates; s++) {
        int c[BF_MAXP] = {0};
        bf_counts(&b, s, c);
        struct gs_mig_layout l;
        memset(&l, 0, sizeof(l));
        for (int i = 0; i < np; i++)
            l.count[prof[i]] = (uint8_t)c[i];
        b.valid[s] = s > 0 && gs_mig_place(model, &l, NULL, NULL) == 0;
        b.best[s] = -1;
    }
    return bf_solve(&b, b.nstates - 1);
}

Test(mig, plan_matches_a_brute_force_optimum_on_small_demands)
{
    const char *models[] = {"A100-80GB", "A100-40GB", "H100-80GB", "A30-24GB", "RTXPRO6000-96GB"};
    uint32_t seed = 12345;
    int cases = 0;
    for (size_t mi = 0; mi < sizeof(models) / sizeof(models[0]); mi++) {
        int m = model(models[mi]);
        const struct gs_gpu_model *g = gs_catalog_get(m);
        for (int t = 0; t < 60; t++) {
            int np = 2 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 2, prof[BF_MAXP],
                d[BF_MAXP];
            for (int i = 0; i < np; i++) {
                bool again;
                do {
                    prof[i] = (int)((seed = seed * 1103515245u + 12345u) >> 16) % g->nprofiles;
                    again = false;
                    for (int j = 0; j < i; j++)
                        again |= prof[j] == prof[i];
                } while (again);
                d[i] = (int)((seed = seed * 1103515245u + 12345u) >> 16) % (BF_MAXC + 1);
            }
            uint32_t demand[GS_MIG_MAX_PROFILES] = {0};
            char what[160] = "";
            size_t o = 0;
            for (int i = 0; i < np; i++) {
                demand[prof[i]] = (uint32_t)d[i];
                o += (size_t)snprintf(what + o, sizeof(what) - o, " %s=%d",
                                      g->profiles[prof[i]].name, d[i]);
            }
            int want = brute_force(m, np, prof, d);
            struct gs_mig_layout out[64];
            bool optimal = false;
            int n = gs_mig_plan_ex(m, demand, out, 64, &optimal, NULL);
            cr_assert_eq(n, want, "%s%s: planned %d GPUs, the optimum is %d", g->name, what, n,
                         want);
            cr_assert(optimal, "%s%s: not proven", g->name, what);
            uint32_t got[GS_MIG_MAX_PROFILES] = {0};
            for (int i = 0; i < n; i++) {
                cr_assert_eq(gs_mig_place(m, &out[i], NULL, NULL), 0, "%s%s: gpu %d invalid",
                             g->name, what, i);
                for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
                    got[p] += out[i].count[p];
            }
            cr_assert_eq(memcmp(got, demand, sizeof(got)), 0, "%s%s: not the demand", g->name,
                         what);
            cases++;
        }
    }
    cr_assert_eq(cases, 300);
}

Test(mig, plan_stays_fast_and_bounded_on_large_demands)
{
    int m = model("A100-80GB");
    uint32_t demand[GS_MIG_MAX_PROFILES] = {0};
    static struct gs_mig_layout out[20000];
    bool optimal = false;
    /* the lower bound meets the greedy count: nothing to search */
    demand[gs_catalog_find_profile(m, "1g.10gb")] = 100000;
    cr_assert_eq(gs_mig_plan_ex(m, demand, out, 20000, &optimal, NULL), 14286);
    cr_assert(optimal);
    /* a mixed demand: the answer covers the demand and is at least the memory bound */
    memset(demand, 0, sizeof(demand));
    demand[gs_catalog_find_profile(m, "3g.40gb")] = 41;
    demand[gs_catalog_find_profile(m, "2g.20gb")] = 37;
    demand[gs_catalog_find_profile(m, "1g.20gb")] = 13;
    demand[gs_catalog_find_profile(m, "1g.10gb")] = 55;
    demand[gs_catalog_find_profile(m, "1g.10gb+me")] = 9;
    int n = gs_mig_plan_ex(m, demand, out, 20000, &optimal, NULL);
    int mem = 41 * 4 + 37 * 2 + 13 * 2 + 55 + 9;
    cr_assert_geq(n, (mem + 7) / 8, "%d GPUs", n);
    uint32_t got[GS_MIG_MAX_PROFILES] = {0};
    for (int i = 0; i < n; i++) {
        cr_assert_eq(gs_mig_place(m, &out[i], NULL, NULL), 0);
        for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
            got[p] += out[i].count[p];
    }
    cr_assert_eq(memcmp(got, demand, sizeof(got)), 0);
    /* nothing to plan; a profile the model lacks */
    memset(demand, 0, sizeof(demand));
    cr_assert_eq(gs_mig_plan(m, demand, out, 16, NULL), 0);
    demand[GS_MIG_MAX_PROFILES - 1] = 1;
    cr_assert_eq(gs_mig_plan(m, demand, out, 16, NULL), GS_ENOFIT);
    cr_assert_eq(gs_mig_plan(model("L40S-48GB"), demand, out, 16, NULL), GS_EINVAL);
}

Test(mig, each_model_places_on_its_own_grid)
{
    struct {
        const char *model, *spec, *why; /* why: NULL when the layout is valid */
    } cases[] = {
        {"A30-24GB", "1g.6gb=4", NULL},
        {"A30-24GB", "2g.12gb=2", NULL},
        {"A30-24GB", "2g.12gb=1,1g.6gb=2", NULL},
        {"A30-24GB", "4g.24gb=1", NULL},
        {"A30-24GB", "1g.6gb=5", "at most 4"},
        {"A30-24GB", "4g.24gb=1,1g.6gb=1", "needs 5 compute slices, A30-24GB has 4"},
        {"A30-24GB", "2g.12gb=2,1g.6gb=1", "needs 5 compute slices"},
        {"RTXPRO6000-96GB", "1g.24gb=4", NULL},
        {"RTXPRO6000-96GB", "2g.48gb=1,1g.24gb+gfx=1,1g.24gb=1", NULL},
        {"RTXPRO6000-96GB", "2g.48gb=2", NULL},
        {"RTXPRO6000-96GB", "2g.48gb=2,1g.24gb-me=1", "needs 5 compute slices"},
        {"RTXPRO6000-96GB", "4g.96gb=1,1g.24gb=1", "compute slices"},
        /* the 8-slice grid is unchanged */
        {"A100-80GB", "1g.10gb=7", NULL},
        {"A100-80GB", "4g.40gb=1,3g.40gb=1", NULL},
        {"A100-80GB", "1g.10gb=8", "at most 7"},
        {"B200-180GB", "3g.90gb=2", NULL},
        {"B200-180GB", "7g.180gb=1,1g.23gb=1", "compute slices"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int m = model(cases[i].model);
        struct gs_mig_layout l = layout_of(m, cases[i].spec);
        struct gs_mig_placement pl;
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_mig_place(m, &l, &pl, &err);
        if (!cases[i].why) {
            cr_assert_eq(rc, 0, "%s %s: %s", cases[i].model, cases[i].spec, err.msg);
            cr_assert(gs_mig_placement_valid(m, &pl), "%s %s", cases[i].model, cases[i].spec);
            for (int k = 0; k < pl.n; k++) {
                const struct gs_mig_profile *p = &gs_catalog_get(m)->profiles[pl.inst[k].profile];
                cr_assert_leq(pl.inst[k].start + p->mem_slices, gs_catalog_get(m)->mig_mem,
                              "%s %s: %s at %u is past the grid", cases[i].model, cases[i].spec,
                              p->name, pl.inst[k].start);
            }
        } else {
            cr_assert_neq(rc, 0, "%s %s accepted", cases[i].model, cases[i].spec);
            cr_assert(strstr(err.msg, cases[i].why) != NULL, "%s %s: '%s' lacks '%s'",
                      cases[i].model, cases[i].spec, err.msg, cases[i].why);
        }
    }
    /* around what is there: a 1g at slice 1 of an A30 leaves the 2g only slice 2 */
    int a30 = model("A30-24GB");
    struct gs_mig_layout two = layout_of(a30, "2g.12gb=1"), four = layout_of(a30, "4g.24gb=1");
    struct gs_mig_placement pl;
    cr_assert_eq(gs_mig_place_into(a30, &two, 0x02, 1, &pl, NULL), 0);
    cr_assert_eq(pl.inst[0].start, 2);
    cr_assert_eq(gs_mig_place_into(a30, &four, 0x02, 1, NULL, NULL), GS_ENOFIT);
    /* a placement past a 4-slice grid is not valid there, though it would be on an A100 */
    struct gs_mig_placement past = {.n = 1};
    past.inst[0].profile = (uint8_t)gs_catalog_find_profile(a30, "1g.6gb");
    past.inst[0].start = 5;
    cr_assert_not(gs_mig_placement_valid(a30, &past));
    /* the accounting unit of a layout follows the grid: two 2g.12gb fill an A30 */
    cr_assert_float_eq(gs_mig_layout_units(a30, &two) * 2, 1.0, 1e-9);
    /* every maximal A30 layout, by hand from the guide's table and the -lgipp placements */
    const char *want[] = {"4x1g.6gb",
                          "1x1g.6gb+me + 3x1g.6gb",
                          "1x2g.12gb + 2x1g.6gb",
                          "1x2g.12gb + 1x1g.6gb+me + 1x1g.6gb",
                          "2x2g.12gb",
                          "1x2g.12gb+me + 2x1g.6gb",
                          "1x2g.12gb+me + 1x2g.12gb",
                          "1x4g.24gb"};
    struct gs_mig_layout ls[64];
    int n = gs_mig_enumerate_maximal(a30, ls, 64);
    cr_assert_eq(n, 8, "%d maximal A30 layouts", n);
    for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
        bool found = false;
        for (int i = 0; i < n && !found; i++) {
            char s[128];
            gs_mig_layout_str(a30, &ls[i], s, sizeof(s));
            found = strcmp(s, want[w]) == 0;
        }
        cr_assert(found, "maximal A30 layout '%s' missing", want[w]);
    }
}

Test(mig, media_engines_limit_what_shares_a_gpu)
{
    struct {
        const char *model, *spec, *why;
    } cases[] = {
        /* one media extension (OFA/JPEG) per GPU */
        {"A30-24GB", "1g.6gb+me=1,2g.12gb+me=1", "cannot share"},
        {"A30-24GB", "1g.6gb+me=1,2g.12gb=1,1g.6gb=1", NULL},
        {"A100-80GB", "1g.10gb+me=1,1g.10gb=6", NULL},
        {"RTXPRO6000-96GB", "1g.24gb+me=1,1g.24gb+me.all=1", "cannot share"},
        {"RTXPRO6000-96GB", "1g.24gb+me=1,1g.24gb=3", NULL},
        /* +me.all takes every media engine: only -me instances beside it */
        {"RTXPRO6000-96GB", "1g.24gb+me.all=1,1g.24gb=1", "cannot share"},
        {"RTXPRO6000-96GB", "1g.24gb+me.all=1,1g.24gb+gfx=1", "cannot share"},
        {"RTXPRO6000-96GB", "2g.48gb+me.all=1,2g.48gb=1", "cannot share"},
        {"RTXPRO6000-96GB", "1g.24gb+me.all=1,1g.24gb-me=3", NULL},
        {"RTXPRO6000-96GB", "2g.48gb+me.all=1,1g.24gb-me=2", NULL},
        {"RTXPRO6000-96GB", "2g.48gb-me=1,1g.24gb+me.all=1,1g.24gb-me=1", NULL},
        {"RTXPRO6000-96GB", "1g.24gb+me.all=1,2g.48gb+me.all=1", "cannot share"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int m = model(cases[i].model);
        struct gs_mig_layout l = layout_of(m, cases[i].spec);
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_mig_place(m, &l, NULL, &err);
        if (!cases[i].why)
            cr_assert_eq(rc, 0, "%s %s: %s", cases[i].model, cases[i].spec, err.msg);
        else
            cr_assert(rc == GS_ENOFIT && strstr(err.msg, cases[i].why), "%s %s: rc %d '%s'",
                      cases[i].model, cases[i].spec, rc, err.msg);
    }
    /* a placement that breaks the rule is not valid, and nothing joins it */
    int rtx = model("RTXPRO6000-96GB");
    int all = gs_catalog_find_profile(rtx, "1g.24gb+me.all");
    int plain = gs_catalog_find_profile(rtx, "1g.24gb"),
        none = gs_catalog_find_profile(rtx, "1g.24gb-me");
    struct gs_mig_placement have = {.n = 1}, bad = {.n = 2}, pl;
    have.inst[0].profile = (uint8_t)all;
    have.inst[0].start = 0;
    bad.inst[0] = have.inst[0];
    bad.inst[1].profile = (uint8_t)plain;
    bad.inst[1].start = 1;
    cr_assert_not(gs_mig_placement_valid(rtx, &bad));
    struct gs_mig_layout add_plain = layout_of(rtx, "1g.24gb=1"),
                         add_none = layout_of(rtx, "1g.24gb-me=3");
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_mig_place_around(rtx, &add_plain, &have, &pl, &err), GS_ENOFIT);
    cr_assert(strstr(err.msg, "cannot share") != NULL, "%s", err.msg);
    cr_assert_eq(gs_mig_place_around(rtx, &add_none, &have, &pl, NULL), 0);
    cr_assert_eq(pl.n, 3);
    for (int k = 0; k < pl.n; k++)
        cr_assert(pl.inst[k].profile == none && pl.inst[k].start >= 1, "new instance at %u",
                  pl.inst[k].start);
    cr_assert_eq(gs_mig_place_around(rtx, &add_none, &bad, &pl, NULL), GS_EINVAL);
    /* the planner keeps them apart too */
    uint32_t demand[GS_MIG_MAX_PROFILES] = {0};
    demand[all] = 1;
    demand[plain] = 3;
    struct gs_mig_layout out[8];
    cr_assert_eq(gs_mig_plan(rtx, demand, out, 8, NULL), 2);
    demand[plain] = 0;
    demand[none] = 3;
    cr_assert_eq(gs_mig_plan(rtx, demand, out, 8, NULL), 1);
}
