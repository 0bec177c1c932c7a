/* The GPU catalog: names as GFD and nvidia-smi print them resolve to the right model, and
 * every MIG row matches NVIDIA's published tables. The rows below are typed from the sources
 * named above each block, not copied from src/core/catalog.c: the MIG user guide
 * ("Supported MIG Profiles": profile names, fractions of compute and memory, instances
 * available) and public `nvidia-smi mig -lgip` / `-lgipp` dumps (profile IDs, placements,
 * SMs, memory). A 0 for SMs or MiB means no public source gives it. */
#include "base/error.h"
#include "core/catalog.h"

#include <criterion/criterion.h>
#include <string.h>

static int model(const char *name)
{
    int m = gs_catalog_find(name);
    cr_assert_geq(m, 0, "model '%s' not in the catalog", name);
    return m;
}

Test(catalog, resolves_gfd_product_labels_and_nvidia_smi_names)
{
    struct {
        const char *name, *want;
    } cases[] = {
        /* catalog names and aliases */
        {"A100-80GB", "A100-80GB"},
        {"A100-SXM4-80GB", "A100-80GB"},
        {"H100-80GB", "H100-80GB"},
        {"H100-SXM5-80GB", "H100-80GB"},
        {"H100-PCIe", "H100-PCIe-80GB"},
        {"H100-NVL", "H100-NVL-94GB"},
        {"H200-141GB", "H200-141GB"},
        {"L40S-48GB", "L40S-48GB"},
        {"RTX-4090", "RTX4090-24GB"},
        {"V100M16", "V100M16"},
        {"g2", "G2"},
        {"A30-24GB", "A30-24GB"},
        {"B200-180GB", "B200-180GB"},
        {"RTXPRO6000-96GB", "RTXPRO6000-96GB"},
        /* nvidia.com/gpu.product as GFD writes it */
        {"NVIDIA-A100-SXM4-80GB", "A100-80GB"},
        {"NVIDIA-A100-SXM4-40GB", "A100-40GB"},
        {"NVIDIA-A100-PCIE-40GB", "A100-40GB"},
        {"NVIDIA-A100-80GB-PCIe", "A100-80GB"},
        {"NVIDIA-H100-80GB-HBM3", "H100-80GB"},
        {"NVIDIA-H100-PCIe", "H100-PCIe-80GB"},
        {"NVIDIA-H100-NVL", "H100-NVL-94GB"},
        {"NVIDIA-H200", "H200-141GB"},
        {"NVIDIA-H200-NVL", "H200-141GB"},
        {"NVIDIA-A30", "A30-24GB"},
        {"NVIDIA-H20", "H20-96GB"},
        {"NVIDIA-GH200-480GB", "GH200-96GB"},
        {"NVIDIA-GH200-144G-HBM3e", "GH200-144GB"},
        {"NVIDIA-B200", "B200-180GB"},
        {"NVIDIA-B300-SXM6-AC", "B300-288GB"},
        {"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "RTXPRO6000-96GB"},
        {"NVIDIA-RTX-PRO-6000-Blackwell-Workstation-Edition", "RTXPRO6000-96GB"},
        {"NVIDIA-RTX-PRO-6000-Blackwell-Max-Q-Workstation-Edition", "RTXPRO6000-96GB"},
        {"NVIDIA-L40S", "L40S-48GB"},
        {"NVIDIA-GeForce-RTX-4090", "RTX4090-24GB"},
        {"NVIDIA-A10", "A10"},
        {"Tesla-T4", "T4"},
        {"Tesla-V100-SXM2-16GB", "V100M16"},
        /* GFD decorations: replicas, MIG strategy single (GFD drops the '+') */
        {"A100-SXM4-80GB-SHARED", "A100-80GB"},
        {"NVIDIA-L40S-SHARED", "L40S-48GB"},
        {"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-SHARED", "RTXPRO6000-96GB"},
        {"NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "A100-80GB"},
        {"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB"},
        {"NVIDIA-A100-80GB-PCIe-MIG-1g.10gb", "A100-80GB"},
        {"NVIDIA-H100-80GB-HBM3-MIG-1g.10gbme", "H100-80GB"},
        {"NVIDIA-A30-MIG-2g.12gb", "A30-24GB"},
        {"NVIDIA-H20-MIG-3g.48gb", "H20-96GB"},
        {"NVIDIA-A100-SXM4-40GB-MIG-INVALID", "A100-40GB"},
        {"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-1g.24gb-SHARED", "RTXPRO6000-96GB"},
        /* names as nvidia-smi (NVML) prints them */
        {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
        {"NVIDIA A100 80GB PCIe", "A100-80GB"},
        {"A100-SXM4-40GB", "A100-40GB"},
        {"NVIDIA H100 80GB HBM3", "H100-80GB"},
        {"NVIDIA H100 PCIe", "H100-PCIe-80GB"},
        {"NVIDIA H100 NVL", "H100-NVL-94GB"},
        {"NVIDIA H200 NVL", "H200-141GB"},
        {"NVIDIA A30", "A30-24GB"},
        {"NVIDIA GH200 480GB", "GH200-96GB"},
        {"NVIDIA GH200 144G HBM3e", "GH200-144GB"},
        {"NVIDIA B200", "B200-180GB"},
        {"NVIDIA B300 SXM6 AC", "B300-288GB"},
        {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTXPRO6000-96GB"},
        {"NVIDIA GeForce RTX 4090", "RTX4090-24GB"},
        {"Tesla T4", "T4"},
        {"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "H100-80GB"},
        {"NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb+me.all", "RTXPRO6000-96GB"},
        {"  NVIDIA   A30 ", "A30-24GB"},
        {"nvidia-a100-sxm4-80gb", "A100-80GB"},
        {"NVIDIA_H100_PCIe", "H100-PCIe-80GB"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int m = gs_catalog_find(cases[i].name);
        cr_assert_geq(m, 0, "'%s' not found", cases[i].name);
        cr_assert_str_eq(gs_catalog_get(m)->name, cases[i].want, "'%s' -> %s, want %s",
                         cases[i].name, gs_catalog_get(m)->name, cases[i].want);
    }
}

Test(catalog, unknown_variants_are_not_the_nearest_model)
{
    /* a model gpusched does not know must not be taken for its neighbour: its MIG grid
     * differs (H20 141GB, H100 96GB SXM) or is unknown */
    const char *unknown[] = {
        "B9000",
        "NVIDIA-H800",
        "NVIDIA-H20-3e",
        "NVIDIA-H100-SXM5-96GB",
        "NVIDIA-B200X",
        "NVIDIA-GB300",
        "NVIDIA-RTX-PRO-5000-Blackwell",
        "",
        "NVIDIA-",
        "-MIG-1g.10gb",
        ("NVIDIA-A100-SXM4-80GB-EXTRA-LONG-SUFFIX-THAT-IS-NOT-A-GFD-DECORATION-AT-"
         "ALL-AND-RUNS-PAST-ANY-LABEL-VALUE-KUBERNETES-ACCEPTS-0123456789")};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        cr_assert_lt(gs_catalog_find(unknown[i]), 0, "'%s' resolved to %s", unknown[i],
                     gs_catalog_get(gs_catalog_find(unknown[i]))->name);
    cr_assert_lt(gs_catalog_find(NULL), 0);
}

Test(catalog, prices_are_the_articles)
{
    cr_assert_float_eq(gs_catalog_get(model("A100-80GB"))->price_per_hour, 3.5, 1e-9);
    cr_assert_float_eq(gs_catalog_get(model("H100-80GB"))->price_per_hour, 4.5, 1e-9);
    cr_assert_float_eq(gs_catalog_get(model("H200-141GB"))->price_per_hour, 6.0, 1e-9);
    cr_assert_float_eq(gs_catalog_get(model("L40S-48GB"))->price_per_hour, 1.5, 1e-9);
    cr_assert_float_eq(gs_catalog_get(model("RTX4090-24GB"))->price_per_hour, 0.8, 1e-9);
}

Test(catalog, model_ids_of_the_article_do_not_move)
{
    /* scenario files, golden results and model masks name these ids */
    const char *first[] = {
        "A100-40GB", "A100-80GB",    "H100-80GB", "H100-PCIe-80GB", "H100-NVL-94GB", "H200-141GB",
        "L40S-48GB", "RTX4090-24GB", "T4",        "P100",           "V100M16",       "V100M32",
        "A10",       "G2",           "G3"};
    for (int i = 0; i < (int)(sizeof(first) / sizeof(first[0])); i++)
        cr_assert_str_eq(gs_catalog_get(i)->name, first[i], "id %d is %s, want %s", i,
                         gs_catalog_get(i)->name, first[i]);
    cr_assert_leq(gs_catalog_count(), GS_MAX_MODELS);
}

/* ---------- MIG rows, typed from the sources ---------- */

struct grid {
    const char *model;
    int compute, mem, unit; /* slices of the grid; NVML placement units per memory slice */
};

static const struct grid grids[] = {
    /* MIG user guide: fractions of 1/7 SMs and 1/8 memory on A100/H100/H200/B200 ("H100 on
     * GH200", H20 and GH200 144GB use the H100 tables' sevenths and eighths), quarters on A30
     * and RTX PRO 6000 Blackwell; -lgipp on RTX PRO 6000: {0,3,6,9}:3, {0,6}:6, {0}:12 */
    {"A100-40GB", 7, 8, 1},      {"A100-80GB", 7, 8, 1},       {"H100-80GB", 7, 8, 1},
    {"H100-PCIe-80GB", 7, 8, 1}, {"H100-NVL-94GB", 7, 8, 1},   {"H200-141GB", 7, 8, 1},
    {"A30-24GB", 4, 4, 1},       {"GH200-96GB", 7, 8, 1},      {"GH200-144GB", 7, 8, 1},
    {"B200-180GB", 7, 8, 1},     {"RTXPRO6000-96GB", 4, 4, 3},
};

struct row {
    const char *model, *name;
    int id, compute, mem;
    const char *starts; /* memory slices, as -lgipp lists them (divided by the unit) */
    int max, sms, mib;
    const char *media; /* "" or "me" (one per GPU), "all" (+me.all), "none" (-me) */
};

static const struct row rows[] = {
    /* A100-40GB: guide table "A100-SXM4-40GB"; lgip/lgipp in the guide's getting-started page */
    {"A100-40GB", "1g.5gb", 19, 1, 1, "0,1,2,3,4,5,6", 7, 14, 4864, ""},
    {"A100-40GB", "1g.5gb+me", 20, 1, 1, "0,1,2,3,4,5,6", 1, 14, 4864, "me"},
    {"A100-40GB", "1g.10gb", 15, 1, 2, "0,2,4,6", 4, 14, 9856, ""},
    {"A100-40GB", "2g.10gb", 14, 2, 2, "0,2,4", 3, 28, 9984, ""},
    {"A100-40GB", "3g.20gb", 9, 3, 4, "0,4", 2, 42, 20096, ""},
    {"A100-40GB", "4g.20gb", 5, 4, 4, "0", 1, 56, 20096, ""},
    {"A100-40GB", "7g.40gb", 0, 7, 8, "0", 1, 98, 40448, ""},
    /* A100-80GB (SXM4 and PCIe): guide names "1g.10gb ... 7g.80gb respectively"; public
     * lgipp "{0,1,2,3,4,5,6}:1 ... {0}:8" */
    {"A100-80GB", "1g.10gb", 19, 1, 1, "0,1,2,3,4,5,6", 7, 14, 9728, ""},
    {"A100-80GB", "1g.10gb+me", 20, 1, 1, "0,1,2,3,4,5,6", 1, 14, 9728, "me"},
    {"A100-80GB", "1g.20gb", 15, 1, 2, "0,2,4,6", 4, 14, 19968, ""},
    {"A100-80GB", "2g.20gb", 14, 2, 2, "0,2,4", 3, 28, 19968, ""},
    {"A100-80GB", "3g.40gb", 9, 3, 4, "0,4", 2, 42, 40192, ""},
    {"A100-80GB", "4g.40gb", 5, 4, 4, "0", 1, 56, 40192, ""},
    {"A100-80GB", "7g.80gb", 0, 7, 8, "0", 1, 98, 80896, ""},
    /* H100 80GB SXM5: guide table "H100 80GB (PCIe and SXM5)"; lgip jbarrow.ai field notes */
    {"H100-80GB", "1g.10gb", 19, 1, 1, "0,1,2,3,4,5,6", 7, 16, 9984, ""},
    {"H100-80GB", "1g.10gb+me", 20, 1, 1, "0,1,2,3,4,5,6", 1, 16, 9984, "me"},
    {"H100-80GB", "1g.20gb", 15, 1, 2, "0,2,4,6", 4, 26, 20096, ""},
    {"H100-80GB", "2g.20gb", 14, 2, 2, "0,2,4", 3, 32, 20096, ""},
    {"H100-80GB", "3g.40gb", 9, 3, 4, "0,4", 2, 60, 40448, ""},
    {"H100-80GB", "4g.40gb", 5, 4, 4, "0", 1, 64, 40448, ""},
    {"H100-80GB", "7g.80gb", 0, 7, 8, "0", 1, 132, 81152, ""},
    /* H100 PCIe 80GB: same guide table; lgip on driver 570.169 */
    {"H100-PCIe-80GB", "1g.10gb", 19, 1, 1, "0,1,2,3,4,5,6", 7, 14, 9984, ""},
    {"H100-PCIe-80GB", "1g.10gb+me", 20, 1, 1, "0,1,2,3,4,5,6", 1, 14, 9984, "me"},
    {"H100-PCIe-80GB", "1g.20gb", 15, 1, 2, "0,2,4,6", 4, 14, 20096, ""},
    {"H100-PCIe-80GB", "2g.20gb", 14, 2, 2, "0,2,4", 3, 30, 20096, ""},
    {"H100-PCIe-80GB", "3g.40gb", 9, 3, 4, "0,4", 2, 46, 40448, ""},
    {"H100-PCIe-80GB", "4g.40gb", 5, 4, 4, "0", 1, 62, 40448, ""},
    {"H100-PCIe-80GB", "7g.80gb", 0, 7, 8, "0", 1, 114, 81152, ""},
    /* H100 NVL 94GB: guide table "H100 94GB (PCIe and SXM5)"; lgip NVIDIA/gpu-operator#900,
     * NVIDIA/mig-parted#101 (the 3g SM count has no public row: 60 as on every GH100) */
    {"H100-NVL-94GB", "1g.12gb", 19, 1, 1, "0,1,2,3,4,5,6", 7, 16, 11008, ""},
    {"H100-NVL-94GB", "1g.12gb+me", 20, 1, 1, "0,1,2,3,4,5,6", 1, 16, 11008, "me"},
    {"H100-NVL-94GB", "1g.24gb", 15, 1, 2, "0,2,4,6", 4, 26, 22144, ""},
    {"H100-NVL-94GB", "2g.24gb", 14, 2, 2, "0,2,4", 3, 32, 22144, ""},
    {"H100-NVL-94GB", "3g.47gb", 9, 3, 4, "0,4", 2, 60, 47488, ""},
    {"H100-NVL-94GB", "4g.47gb", 5, 4, 4, "0", 1, 64, 47488, ""},
    {"H100-NVL-94GB", "7g.94gb", 0, 7, 8, "0", 1, 132, 95360, ""},
    /* H200 141GB: guide table "H200 141GB"; lgip NVIDIA/mig-parted#120 */
    {"H200-141GB", "1g.18gb", 19, 1, 1, "0,1,2,3,4,5,6", 7, 16, 16384, ""},
    {"H200-141GB", "1g.18gb+me", 20, 1, 1, "0,1,2,3,4,5,6", 1, 16, 16384, "me"},
    {"H200-141GB", "1g.35gb", 15, 1, 2, "0,2,4,6", 4, 26, 33024, ""},
    {"H200-141GB", "2g.35gb", 14, 2, 2, "0,2,4", 3, 32, 33024, ""},
    {"H200-141GB", "3g.71gb", 9, 3, 4, "0,4", 2, 60, 71168, ""},
    {"H200-141GB", "4g.71gb", 5, 4, 4, "0", 1, 64, 71168, ""},
    {"H200-141GB", "7g.141gb", 0, 7, 8, "0", 1, 132, 143104, ""},
    /* A30-24GB: guide table "A30-24GB" (1/4 .. Full; 4, 1, 2, 1, 1 instances); lgip and lgipp
     * on driver 535.183 ("{0,1,2,3}:1", "{0,2}:2", "{0}:4"; 5.81/11.69/23.44 GiB) */
    {"A30-24GB", "1g.6gb", 14, 1, 1, "0,1,2,3", 4, 14, 5952, ""},
    {"A30-24GB", "1g.6gb+me", 21, 1, 1, "0,1,2,3", 1, 14, 5952, "me"},
    {"A30-24GB", "2g.12gb", 5, 2, 2, "0,2", 2, 28, 11968, ""},
    {"A30-24GB", "2g.12gb+me", 6, 2, 2, "0,2", 1, 28, 11968, "me"},
    {"A30-24GB", "4g.24gb", 0, 4, 4, "0", 1, 56, 24000, ""},
    /* GH200 96GB ("H100 on GH200"): guide table "H100 96GB"; lgip on a GH200 480GB (11.00,
     * 23.00, 46.50, 93.00 GiB) */
    {"GH200-96GB", "1g.12gb", 19, 1, 1, "0,1,2,3,4,5,6", 7, 16, 11264, ""},
    {"GH200-96GB", "1g.12gb+me", 20, 1, 1, "0,1,2,3,4,5,6", 1, 16, 11264, "me"},
    {"GH200-96GB", "1g.24gb", 15, 1, 2, "0,2,4,6", 4, 26, 23552, ""},
    {"GH200-96GB", "2g.24gb", 14, 2, 2, "0,2,4", 3, 32, 23552, ""},
    {"GH200-96GB", "3g.48gb", 9, 3, 4, "0,4", 2, 60, 47616, ""},
    {"GH200-96GB", "4g.48gb", 5, 4, 4, "0", 1, 64, 47616, ""},
    {"GH200-96GB", "7g.96gb", 0, 7, 8, "0", 1, 132, 95232, ""},
    /* GH200 144G HBM3e: not in the guide; lgip in NVIDIA/mig-parted#139 for the 1g and 2g rows
     * (17.50, 35.25 GiB), names and counts of the rest from mig-parted's config-default.yaml */
    {"GH200-144GB", "1g.18gb", 19, 1, 1, "0,1,2,3,4,5,6", 7, 16, 17920, ""},
    {"GH200-144GB", "1g.18gb+me", 20, 1, 1, "0,1,2,3,4,5,6", 1, 16, 17920, "me"},
    {"GH200-144GB", "1g.36gb", 15, 1, 2, "0,2,4,6", 4, 26, 36096, ""},
    {"GH200-144GB", "2g.36gb", 14, 2, 2, "0,2,4", 3, 32, 36096, ""},
    /* 3g, 4g, 7g: no public lgip; lower bounds from the rows above (catalog.c LOW8): 3, 4, 7
     * times the 1g's 16 SMs, 2 and 4 times the 2g's 36096 MiB */
    {"GH200-144GB", "3g.72gb", 9, 3, 4, "0,4", 2, 48, 72192, ""},
    {"GH200-144GB", "4g.72gb", 5, 4, 4, "0", 1, 64, 72192, ""},
    {"GH200-144GB", "7g.144gb", 0, 7, 8, "0", 1, 112, 144384, ""},
    /* H20 96GB: the guide lists it among MIG GPUs, but no public lgip gives its instances'
     * SMs or memory (78 SMs: not the H100's): no MIG rows, see mig_is_refused_... below */
    /* B200 180GB: guide table "B200 180 GB" (1/8, 2/8, 4/8 memory; 7, 1, 4, 3, 2, 1, 1);
     * lgip NVIDIA/mig-parted#187 for the 1g and 2g rows (20.50, 44.25 GiB) */
    {"B200-180GB", "1g.23gb", 19, 1, 1, "0,1,2,3,4,5,6", 7, 18, 20992, ""},
    {"B200-180GB", "1g.23gb+me", 20, 1, 1, "0,1,2,3,4,5,6", 1, 18, 20992, "me"},
    {"B200-180GB", "1g.45gb", 15, 1, 2, "0,2,4,6", 4, 30, 45312, ""},
    {"B200-180GB", "2g.45gb", 14, 2, 2, "0,2,4", 3, 36, 45312, ""},
    /* 3g, 4g, 7g: lower bounds, 3, 4, 7 times 18 SMs and 2, 4 times 45312 MiB */
    {"B200-180GB", "3g.90gb", 9, 3, 4, "0,4", 2, 54, 90624, ""},
    {"B200-180GB", "4g.90gb", 5, 4, 4, "0", 1, 72, 90624, ""},
    {"B200-180GB", "7g.180gb", 0, 7, 8, "0", 1, 126, 181248, ""},
    /* B300: not in the MIG user guide and no public SMs: no MIG rows */
    /* RTX PRO 6000 Blackwell (Server, Workstation, Max-Q): guide table (1/4, 1/2, Full;
     * 4, 1, 4, 1, 4, 2, 2, 1, 2, 1, 1 instances; "+me.all: allocates all available media
     * engines", "-me: excludes all media engines"); lgip in bigstack-oss/cubecos#312 and a
     * public walkthrough (IDs 14/21/47/65/67/5/35/64/66/0/32, 46/94/188 SMs, 23.62/47.38/95.12
     * GiB); lgipp "{0,3,6,9}:3", "{0,6}:6", "{0}:12", i.e. slices 0-3, 0/2, 0 */
    {"RTXPRO6000-96GB", "1g.24gb", 14, 1, 1, "0,1,2,3", 4, 46, 24192, ""},
    {"RTXPRO6000-96GB", "1g.24gb+me", 21, 1, 1, "0,1,2,3", 1, 46, 24192, "me"},
    {"RTXPRO6000-96GB", "1g.24gb+gfx", 47, 1, 1, "0,1,2,3", 4, 46, 24192, ""},
    {"RTXPRO6000-96GB", "1g.24gb+me.all", 65, 1, 1, "0,1,2,3", 1, 46, 24192, "all"},
    {"RTXPRO6000-96GB", "1g.24gb-me", 67, 1, 1, "0,1,2,3", 4, 46, 24192, "none"},
    {"RTXPRO6000-96GB", "2g.48gb", 5, 2, 2, "0,2", 2, 94, 48512, ""},
    {"RTXPRO6000-96GB", "2g.48gb+gfx", 35, 2, 2, "0,2", 2, 94, 48512, ""},
    {"RTXPRO6000-96GB", "2g.48gb+me.all", 64, 2, 2, "0,2", 1, 94, 48512, "all"},
    {"RTXPRO6000-96GB", "2g.48gb-me", 66, 2, 2, "0,2", 2, 94, 48512, "none"},
    {"RTXPRO6000-96GB", "4g.96gb", 0, 4, 4, "0", 1, 188, 97408, ""},
    {"RTXPRO6000-96GB", "4g.96gb+gfx", 32, 4, 4, "0", 1, 188, 97408, ""},
};

static unsigned starts_mask(const char *list)
{
    unsigned m = 0;
    for (const char *p = list; *p;) {
        char *end;
        long s = strtol(p, &end, 10);
        m |= 1u << s;
        p = *end == ',' ? end + 1 : end;
    }
    return m;
}

static unsigned media_flags(const char *s)
{
    if (strcmp(s, "me") == 0)
        return GS_MIG_MEDIA_EXT;
    if (strcmp(s, "all") == 0)
        return GS_MIG_MEDIA_EXT | GS_MIG_MEDIA_ALL;
    if (strcmp(s, "none") == 0)
        return GS_MIG_MEDIA_NONE;
    return 0;
}

Test(catalog, mig_rows_match_the_guide_and_nvml_row_by_row)
{
    for (size_t g = 0; g < sizeof(grids) / sizeof(grids[0]); g++) {
        const struct gs_gpu_model *m = gs_catalog_get(model(grids[g].model));
        cr_assert_eq(m->mig_compute, grids[g].compute, "%s: %d compute slices, want %d", m->name,
                     m->mig_compute, grids[g].compute);
        cr_assert_eq(m->mig_mem, grids[g].mem, "%s: %d memory slices, want %d", m->name, m->mig_mem,
                     grids[g].mem);
        cr_assert_eq(m->placement_unit, grids[g].unit, "%s: placement unit %d, want %d", m->name,
                     m->placement_unit, grids[g].unit);
        int nrows = 0;
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
            nrows += strcmp(rows[i].model, grids[g].model) == 0;
        cr_assert_eq(m->nprofiles, nrows, "%s: %d profiles in the catalog, %d in the guide",
                     m->name, m->nprofiles, nrows);
    }
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        int id = model(r->model);
        int p = gs_catalog_find_profile(id, r->name);
        cr_assert_geq(p, 0, "%s: no profile %s", r->model, r->name);
        const struct gs_mig_profile *pr = &gs_catalog_get(id)->profiles[p];
        cr_assert_str_eq(pr->name, r->name);
        cr_assert_eq(pr->id, r->id, "%s %s: id %u, want %d", r->model, r->name, pr->id, r->id);
        cr_assert_eq(pr->compute, r->compute, "%s %s: %u compute slices, want %d", r->model,
                     r->name, pr->compute, r->compute);
        cr_assert_eq(pr->mem_slices, r->mem, "%s %s: %u memory slices, want %d", r->model, r->name,
                     pr->mem_slices, r->mem);
        cr_assert_eq(pr->start_mask, starts_mask(r->starts), "%s %s: starts 0x%x, want {%s}",
                     r->model, r->name, pr->start_mask, r->starts);
        cr_assert_eq(pr->max_count, r->max, "%s %s: max %u, want %d", r->model, r->name,
                     pr->max_count, r->max);
        cr_assert_eq(pr->sms, r->sms, "%s %s: %u SMs, want %d", r->model, r->name, pr->sms, r->sms);
        cr_assert_eq(pr->mem_mib, (uint32_t)r->mib, "%s %s: %u MiB, want %d", r->model, r->name,
                     pr->mem_mib, r->mib);
        cr_assert_eq(pr->media, media_flags(r->media), "%s %s: media 0x%x, want %s", r->model,
                     r->name, pr->media, r->media[0] ? r->media : "(none)");
    }
}

Test(catalog, every_model_fits_the_bounds_and_its_own_grid)
{
    int mig = 0;
    for (int id = 0; id < gs_catalog_count(); id++) {
        const struct gs_gpu_model *m = gs_catalog_get(id);
        cr_assert_leq(m->nprofiles, GS_MIG_MAX_PROFILES, "%s", m->name);
        if (!m->nprofiles)
            continue;
        mig++;
        cr_assert(m->mig_compute >= 1 && m->mig_compute <= GS_MIG_COMPUTE_MAX, "%s", m->name);
        cr_assert(m->mig_mem >= 1 && m->mig_mem <= GS_MIG_MEM_SLICES, "%s", m->name);
        cr_assert_geq(m->placement_unit, 1, "%s", m->name);
        bool whole = false;
        for (int p = 0; p < m->nprofiles; p++) {
            const struct gs_mig_profile *pr = &m->profiles[p];
            cr_assert_eq(pr->gpu_compute, m->mig_compute, "%s %s", m->name, pr->name);
            cr_assert_eq(pr->gpu_mem, m->mig_mem, "%s %s", m->name, pr->name);
            cr_assert(pr->compute >= 1 && pr->compute <= m->mig_compute, "%s %s", m->name,
                      pr->name);
            cr_assert_neq(pr->start_mask, 0, "%s %s", m->name, pr->name);
            for (int s = 0; s < 8; s++)
                if (pr->start_mask & (1u << s))
                    cr_assert_leq(s + pr->mem_slices, m->mig_mem, "%s %s at %d", m->name, pr->name,
                                  s);
            cr_assert(pr->max_count >= 1 && pr->max_count <= m->mig_compute, "%s %s", m->name,
                      pr->name);
            whole |= pr->compute == m->mig_compute && pr->mem_slices == m->mig_mem;
            cr_assert_eq(gs_catalog_find_profile(id, pr->name), p, "%s: %s is not unique", m->name,
                         pr->name);
        }
        cr_assert(whole, "%s has no whole-GPU profile", m->name);
    }
    cr_assert_eq(mig, 11, "%d MIG-capable models", mig);
}

/* No profile of a MIG-capable model prints 0 SMs or 0 MiB: each has NVML's figure or a
 * lower bound marked at_least; spot checks of published figures per model. */
Test(catalog, every_mig_profile_has_its_sms_and_memory)
{
    for (int id = 0; id < gs_catalog_count(); id++) {
        const struct gs_gpu_model *m = gs_catalog_get(id);
        for (int p = 0; p < m->nprofiles; p++) {
            const struct gs_mig_profile *pr = &m->profiles[p];
            cr_assert_gt(pr->sms, 0, "%s %s: 0 SMs", m->name, pr->name);
            cr_assert_gt(pr->mem_mib, 0, "%s %s: 0 MiB", m->name, pr->name);
            cr_assert_leq(pr->mem_mib, m->mem_mib, "%s %s: %u MiB, more than the GPU's %u", m->name,
                          pr->name, pr->mem_mib, m->mem_mib);
            if (m->sms)
                cr_assert_leq(pr->sms, m->sms, "%s %s: %u SMs, more than the GPU's %u", m->name,
                              pr->name, pr->sms, m->sms);
        }
    }
    struct {
        const char *model, *profile;
        unsigned sms, mib;
        bool at_least;
    } pub[] = {
        {"A100-40GB", "3g.20gb", 42, 20096, false},
        {"A100-80GB", "7g.80gb", 98, 80896, false},
        {"H100-80GB", "3g.40gb", 60, 40448, false},
        {"H100-PCIe-80GB", "4g.40gb", 62, 40448, false},
        {"H100-NVL-94GB", "1g.24gb", 26, 22144, false},
        {"H200-141GB", "7g.141gb", 132, 143104, false},
        {"A30-24GB", "2g.12gb", 28, 11968, false},
        {"GH200-96GB", "3g.48gb", 60, 47616, false},
        {"GH200-144GB", "2g.36gb", 32, 36096, false},
        {"GH200-144GB", "7g.144gb", 112, 144384, true},
        {"B200-180GB", "1g.23gb", 18, 20992, false},
        {"B200-180GB", "3g.90gb", 54, 90624, true},
        {"RTXPRO6000-96GB", "2g.48gb", 94, 48512, false},
    };
    for (size_t i = 0; i < sizeof(pub) / sizeof(pub[0]); i++) {
        int id = model(pub[i].model), p = gs_catalog_find_profile(id, pub[i].profile);
        cr_assert_geq(p, 0, "%s %s", pub[i].model, pub[i].profile);
        const struct gs_mig_profile *pr = &gs_catalog_get(id)->profiles[p];
        cr_assert(pr->sms == pub[i].sms && pr->mem_mib == pub[i].mib &&
                      pr->at_least == pub[i].at_least,
                  "%s %s: %u SMs, %u MiB%s; want %u, %u%s", pub[i].model, pub[i].profile, pr->sms,
                  pr->mem_mib, pr->at_least ? " (at least)" : "", pub[i].sms, pub[i].mib,
                  pub[i].at_least ? " (at least)" : "");
    }
}

/* The lower bounds of catalog.c's LOW8 hold on every 8-slice model whose rows are all published:
 * a 4-slice instance has at least twice the 2g's memory, the 8-slice at least twice the 4-slice
 * one, and an Ng instance at least N times the 1g's SMs. */
Test(catalog, lower_bounds_hold_on_every_fully_published_model)
{
    int checked = 0;
    for (int id = 0; id < gs_catalog_count(); id++) {
        const struct gs_gpu_model *m = gs_catalog_get(id);
        bool published = m->nprofiles && m->mig_mem == 8;
        for (int p = 0; published && p < m->nprofiles; p++)
            published = !m->profiles[p].at_least;
        if (!published)
            continue;
        const struct gs_mig_profile *g1 = NULL, *g2 = NULL, *g4 = NULL, *g8 = NULL;
        for (int p = 0; p < m->nprofiles; p++) {
            const struct gs_mig_profile *pr = &m->profiles[p];
            if (pr->compute == 2)
                g2 = pr;
            if (pr->mem_slices == 4 && (!g4 || pr->mem_mib < g4->mem_mib))
                g4 = pr;
            if (pr->mem_slices == 8)
                g8 = pr;
            if (pr->id == 19)
                g1 = pr;
        }
        cr_assert(g1 && g2 && g4 && g8, "%s", m->name);
        cr_assert_geq(g4->mem_mib, 2 * g2->mem_mib, "%s: %u < 2 x %u", m->name, g4->mem_mib,
                      g2->mem_mib);
        cr_assert_geq(g8->mem_mib, 2 * g4->mem_mib, "%s: %u < 2 x %u", m->name, g8->mem_mib,
                      g4->mem_mib);
        for (int p = 0; p < m->nprofiles; p++)
            cr_assert_geq(m->profiles[p].sms, m->profiles[p].compute * g1->sms, "%s %s", m->name,
                          m->profiles[p].name);
        checked++;
    }
    cr_assert_eq(checked, 7, "%d fully published 8-slice models", checked);
}

/* H20 and B300 have MIG silicon but no published instance figures: MIG is refused, saying why. */
Test(catalog, mig_is_refused_where_no_figures_are_published)
{
    const char *refused[] = {"H20-96GB", "B300-288GB"};
    for (size_t i = 0; i < 2; i++) {
        int id = model(refused[i]);
        cr_assert(!gs_catalog_mig_capable(id), "%s", refused[i]);
        char why[512];
        gs_catalog_mig_refusal(id, why, sizeof(why));
        cr_assert(strstr(why, "MIG is not offered on") && strstr(why, "no public source"), "%s",
                  why);
    }
    char why[512];
    gs_catalog_mig_refusal(model("L40S-48GB"), why, sizeof(why));
    cr_assert_str_eq(why, "L40S-48GB does not support MIG");
}

/* The article's H200 sizes ("7 x 20 GB", "2 x 70 GB") get NVIDIA's names and the nearest one. */
Test(catalog, unknown_profile_names_the_models_profiles_and_the_closest)
{
    int h200 = model("H200-141GB");
    cr_assert_str_eq(
        gs_catalog_get(h200)->profiles[gs_catalog_closest_profile(h200, "1g.20gb")].name,
        "1g.18gb");
    cr_assert_str_eq(gs_catalog_get(h200)
                         ->profiles[gs_catalog_closest_profile(h200, "nvidia.com/mig-3g.70gb")]
                         .name,
                     "3g.71gb");
    cr_assert_str_eq(
        gs_catalog_get(h200)->profiles[gs_catalog_closest_profile(h200, "2g.40gb")].name,
        "2g.35gb");
    cr_assert_lt(gs_catalog_closest_profile(h200, "big"), 0);
    char msg[768];
    gs_catalog_profile_unknown(h200, "1g.20gb", msg, sizeof(msg));
    cr_assert_str_eq(msg, "1g.20gb is not an H200-141GB profile; H200-141GB offers 1g.18gb, "
                          "1g.18gb+me, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb (closest: "
                          "1g.18gb)");
    gs_catalog_profile_unknown(model("B200-180GB"), "1g.20gb", msg, sizeof(msg));
    cr_assert(strstr(msg, "is not a B200-180GB profile") && strstr(msg, "(closest: 1g.23gb)"), "%s",
              msg);
}

Test(catalog, accounting_units_follow_each_models_grid)
{
    struct {
        const char *model, *profile;
        double units, compute_share;
    } cases[] = {
        {"A100-80GB", "3g.40gb", 0.5, 3.0 / 7},
        {"A100-80GB", "1g.10gb", 1.0 / 7, 1.0 / 7},
        {"A100-80GB", "4g.40gb", 4.0 / 7, 4.0 / 7},
        {"A100-80GB", "1g.20gb", 0.25, 1.0 / 7},
        {"A30-24GB", "1g.6gb", 0.25, 0.25},
        {"A30-24GB", "2g.12gb+me", 0.5, 0.5},
        {"A30-24GB", "4g.24gb", 1.0, 1.0},
        {"RTXPRO6000-96GB", "2g.48gb", 0.5, 0.5},
        {"RTXPRO6000-96GB", "1g.24gb-me", 0.25, 0.25},
        {"B200-180GB", "7g.180gb", 1.0, 1.0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int m = model(cases[i].model);
        int p = gs_catalog_find_profile(m, cases[i].profile);
        cr_assert_geq(p, 0);
        const struct gs_mig_profile *pr = &gs_catalog_get(m)->profiles[p];
        cr_assert_float_eq(gs_mig_profile_units(pr), cases[i].units, 1e-9, "%s %s: %f, want %f",
                           cases[i].model, cases[i].profile, gs_mig_profile_units(pr),
                           cases[i].units);
        cr_assert_float_eq(gs_mig_profile_compute_share(pr), cases[i].compute_share, 1e-9, "%s %s",
                           cases[i].model, cases[i].profile);
    }
}

Test(catalog, nvml_placements_scale_to_the_models_grid)
{
    unsigned st, sz;
    int rtx = model("RTXPRO6000-96GB"), a100 = model("A100-80GB");
    /* -lgipp on RTX PRO 6000: 1g {0,3,6,9}:3, 2g {0,6}:6, 4g {0}:12 */
    gs_catalog_nvml_placement(rtx, gs_catalog_find_profile(rtx, "1g.24gb"), 3, &st, &sz);
    cr_assert(st == 9 && sz == 3, "1g.24gb at slice 3: %u:%u, want 9:3", st, sz);
    gs_catalog_nvml_placement(rtx, gs_catalog_find_profile(rtx, "2g.48gb"), 2, &st, &sz);
    cr_assert(st == 6 && sz == 6, "2g.48gb at slice 2: %u:%u, want 6:6", st, sz);
    gs_catalog_nvml_placement(rtx, gs_catalog_find_profile(rtx, "4g.96gb"), 0, &st, &sz);
    cr_assert(st == 0 && sz == 12, "%u:%u", st, sz);
    cr_assert_eq(gs_catalog_slice_of_nvml(rtx, 9), 3);
    cr_assert_eq(gs_catalog_slice_of_nvml(rtx, 4), GS_EINVAL);
    cr_assert_eq(gs_catalog_slice_of_nvml(rtx, 12), GS_EINVAL);
    /* everywhere else NVML's units are memory slices */
    gs_catalog_nvml_placement(a100, gs_catalog_find_profile(a100, "3g.40gb"), 4, &st, &sz);
    cr_assert(st == 4 && sz == 4, "%u:%u", st, sz);
    cr_assert_eq(gs_catalog_slice_of_nvml(a100, 6), 6);
    cr_assert_eq(gs_catalog_slice_of_nvml(a100, 8), GS_EINVAL);
    cr_assert_eq(gs_catalog_slice_of_nvml(model("L40S-48GB"), 0), GS_EINVAL);
}

Test(catalog, profile_names_take_the_kubernetes_spelling)
{
    int m = model("A100-80GB"), rtx = model("RTXPRO6000-96GB");
    const struct gs_gpu_model *g = gs_catalog_get(m);
    char name[64];
    gs_mig_resource_name(&g->profiles[gs_catalog_find_profile(m, "1g.10gb+me")], name,
                         sizeof(name));
    cr_assert_str_eq(name, "nvidia.com/mig-1g.10gb.me");
    gs_mig_resource_name(&g->profiles[gs_catalog_find_profile(m, "3g.40gb")], name, sizeof(name));
    cr_assert_str_eq(name, "nvidia.com/mig-3g.40gb");
    cr_assert_eq(gs_catalog_find_profile(m, "nvidia.com/mig-1g.10gb.me"),
                 gs_catalog_find_profile(m, "1g.10gb+me"));
    const struct gs_gpu_model *r = gs_catalog_get(rtx);
    gs_mig_resource_name(&r->profiles[gs_catalog_find_profile(rtx, "1g.24gb+me.all")], name,
                         sizeof(name));
    cr_assert_str_eq(name, "nvidia.com/mig-1g.24gb.me.all");
    gs_mig_resource_name(&r->profiles[gs_catalog_find_profile(rtx, "2g.48gb-me")], name,
                         sizeof(name));
    cr_assert_str_eq(name, "nvidia.com/mig-2g.48gb-me");
    cr_assert_eq(gs_catalog_find_profile(rtx, "nvidia.com/mig-1g.24gb.me.all"),
                 gs_catalog_find_profile(rtx, "1g.24gb+me.all"));
    /* names follow each model's memory */
    cr_assert_lt(gs_catalog_find_profile(model("H200-141GB"), "3g.40gb"), 0);
    cr_assert_lt(gs_catalog_find_profile(model("B300-288GB"), "1g.34gb+me"), 0);
    cr_assert_eq(gs_catalog_get(model("L40S-48GB"))->nprofiles, 0);
}
