/* MIG geometry: catalog rows as NVML reports them, exact placement, and property tests over
 * every MIG-capable model (every enumerated layout validates, every valid multiset fits in a
 * maximal layout, no placement overlaps). */
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

Test(catalog, resolves_names_and_product_labels)
{
    struct {
        const char *name, *want;
    } cases[] = {
        {"A100-80GB", "A100-80GB"},
        {"A100-SXM4-80GB", "A100-80GB"},
        {"NVIDIA-A100-SXM4-80GB", "A100-80GB"},
        {"A100-SXM4-40GB", "A100-40GB"},
        {"H100-80GB", "H100-80GB"},
        {"H100-SXM5-80GB", "H100-80GB"},
        {"NVIDIA-H100-80GB-HBM3", "H100-80GB"},
        {"H100-PCIe", "H100-PCIe-80GB"},
        {"H100-NVL", "H100-NVL-94GB"},
        {"H200-141GB", "H200-141GB"},
        {"NVIDIA-H200", "H200-141GB"},
        {"L40S-48GB", "L40S-48GB"},
        {"RTX-4090", "RTX4090-24GB"},
        {"Tesla-T4", "T4"},
        {"V100M16", "V100M16"},
        {"A100-SXM4-80GB-SHARED", "A100-80GB"},
        {"NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "A100-80GB"},
        {"g2", "G2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int m = gs_catalog_find(cases[i].name);
        cr_assert_geq(m, 0, "'%s' not found", cases[i].name);
        cr_assert_str_eq(gs_catalog_get(m)->name, cases[i].want, "'%s' -> %s, want %s",
                         cases[i].name, gs_catalog_get(m)->name, cases[i].want);
    }
    cr_assert_lt(gs_catalog_find("B9000"), 0);
}

Test(catalog, prices_are_the_articles)
{
    cr_assert_float_eq(gs_catalog_get(model("A100-80GB"))->price_per_hour, 3.5, 1e-9);
    cr_assert_float_eq(gs_catalog_get(model("H100-80GB"))->price_per_hour, 4.5, 1e-9);
    cr_assert_float_eq(gs_catalog_get(model("H200-141GB"))->price_per_hour, 6.0, 1e-9);
    cr_assert_float_eq(gs_catalog_get(model("L40S-48GB"))->price_per_hour, 1.5, 1e-9);
    cr_assert_float_eq(gs_catalog_get(model("RTX4090-24GB"))->price_per_hour, 0.8, 1e-9);
}

Test(catalog, mig_rows_match_nvml)
{
    /* profile id, placement size and valid starts as `nvidia-smi mig -lgipp` prints them */
    int m = model("A100-80GB");
    const struct gs_gpu_model *g = gs_catalog_get(m);
    struct {
        const char *name;
        int id, compute, size, starts, max;
    } rows[] = {
        {"1g.10gb", 19, 1, 1, 0x7F, 7}, {"1g.10gb+me", 20, 1, 1, 0x7F, 1},
        {"1g.20gb", 15, 1, 2, 0x55, 4}, {"2g.20gb", 14, 2, 2, 0x15, 3},
        {"3g.40gb", 9, 3, 4, 0x11, 2},  {"4g.40gb", 5, 4, 4, 0x01, 1},
        {"7g.80gb", 0, 7, 8, 0x01, 1},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int p = gs_catalog_find_profile(m, rows[i].name);
        cr_assert_geq(p, 0, "%s", rows[i].name);
        const struct gs_mig_profile *pr = &g->profiles[p];
        cr_assert_eq(pr->id, rows[i].id, "%s id %u", rows[i].name, pr->id);
        cr_assert_eq(pr->compute, rows[i].compute, "%s", rows[i].name);
        cr_assert_eq(pr->mem_slices, rows[i].size, "%s", rows[i].name);
        cr_assert_eq(pr->start_mask, rows[i].starts, "%s", rows[i].name);
        cr_assert_eq(pr->max_count, rows[i].max, "%s", rows[i].name);
    }
    /* names follow each model's memory */
    cr_assert_geq(gs_catalog_find_profile(model("A100-40GB"), "1g.5gb"), 0);
    cr_assert_geq(gs_catalog_find_profile(model("H100-NVL-94GB"), "3g.47gb"), 0);
    cr_assert_geq(gs_catalog_find_profile(model("H200-141GB"), "1g.18gb"), 0);
    cr_assert_geq(gs_catalog_find_profile(model("H200-141GB"), "3g.71gb"), 0);
    cr_assert_lt(gs_catalog_find_profile(model("H200-141GB"), "3g.40gb"), 0);
    cr_assert_eq(gs_catalog_get(model("H100-PCIe-80GB"))
                     ->profiles[gs_catalog_find_profile(model("H100-PCIe-80GB"), "7g.80gb")]
                     .sms,
                 114);
    cr_assert_eq(gs_catalog_get(model("L40S-48GB"))->nprofiles, 0);
}

Test(mig, resource_names_and_accounting_units)
{
    int m = model("A100-80GB");
    const struct gs_gpu_model *g = gs_catalog_get(m);
    char name[64];
    gs_mig_resource_name(&g->profiles[gs_catalog_find_profile(m, "1g.10gb+me")], name,
                         sizeof(name));
    cr_assert_str_eq(name, "nvidia.com/mig-1g.10gb.me");
    gs_mig_resource_name(&g->profiles[gs_catalog_find_profile(m, "3g.40gb")], name, sizeof(name));
    cr_assert_str_eq(name, "nvidia.com/mig-3g.40gb");
    cr_assert_eq(gs_catalog_find_profile(m, "nvidia.com/mig-1g.10gb.me"),
                 gs_catalog_find_profile(m, "1g.10gb+me"));
    /* max(compute/7, memory/8) */
    cr_assert_float_eq(gs_mig_profile_units(&g->profiles[gs_catalog_find_profile(m, "3g.40gb")]),
                       0.5, 1e-9);
    cr_assert_float_eq(gs_mig_profile_units(&g->profiles[gs_catalog_find_profile(m, "1g.10gb")]),
                       1.0 / 7, 1e-9);
    cr_assert_float_eq(gs_mig_profile_units(&g->profiles[gs_catalog_find_profile(m, "4g.40gb")]),
                       4.0 / 7, 1e-9);
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
        int nmax = gs_mig_enumerate_maximal(m, maximal, 4096);
        int nval = gs_mig_enumerate_valid(m, valid, 4096);
        cr_assert(nmax > 0 && nmax <= 4096 && nval <= 4096, "model %d: %d maximal", m, nmax);
        /* every enumerated layout validates and places without overlap */
        for (int i = 0; i < nmax; i++) {
            struct gs_mig_placement pl;
            cr_assert_eq(gs_mig_place(m, &maximal[i], &pl, NULL), 0);
            cr_assert(gs_mig_placement_valid(m, &pl));
            uint8_t occ = 0;
            for (int k = 0; k < pl.n; k++) {
                const struct gs_mig_profile *p = &gs_catalog_get(m)->profiles[pl.inst[k].profile];
                uint8_t bits = (uint8_t)(((1u << p->mem_slices) - 1) << pl.inst[k].start);
                cr_assert_eq(occ & bits, 0, "model %d layout %d: instances overlap", m, i);
                occ |= bits;
            }
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
        const struct gs_gpu_model *g = gs_catalog_get(m);
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
    cr_assert_eq(checked, 6, "six MIG-capable models");
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
