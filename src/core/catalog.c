/* catalog.c - static GPU model table and name resolution. The MIG rows restate NVIDIA's MIG
 * user guide and NVML's `nvidia-smi mig -lgip` / `-lgipp` output for each model, each model with
 * its own grid of compute and memory slices; mig.c searches placements over these rows, so
 * nothing else hard-codes a layout or a slice count. */
#include "catalog.h"

#include "../base/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Valid placement starts (memory-slice units), as `nvidia-smi mig -lgipp` prints them. */
#define S8_1G  0x7F /* 8-slice grid (A100/H100/H200/GH200/B200): 1 slice at 0..6 */
#define S8_1G2 0x55 /* 1g with 2 slices at 0,2,4,6 */
#define S8_2G  0x15 /* 0,2,4 */
#define S8_4SL 0x11 /* 3g, 4 slices: 0,4 */
#define S8_4G  0x01 /* 4g, 4 slices: 0 */
#define S8_7G  0x01 /* 7g, 8 slices: 0 */
#define S4_1G  0x0F /* 4-slice grid (A30, RTX PRO 6000): 1 slice at 0..3 */
#define S4_2G  0x05 /* 2 slices at 0,2 */
#define S4_4G  0x01 /* 4 slices at 0 */

#define GRID8 7, 8 /* compute, memory slices of the grid */
#define GRID4 4, 4
#define MIG8  .mig_compute = 7, .mig_mem = 8, .placement_unit = 1
#define MIG4  .mig_compute = 4, .mig_mem = 4, .placement_unit = 1

#define ME   GS_MIG_MEDIA_EXT
#define MALL (GS_MIG_MEDIA_EXT | GS_MIG_MEDIA_ALL)
#define NOME GS_MIG_MEDIA_NONE

/* One profile row: NVML ID, name, compute slices, memory slices, starts, max instances, SMs,
 * MiB, media engines; `grid` is the owning model's GRID8 or GRID4. */
#define ROW(grid, id, name, c, m, starts, max, sms, mib, media)                                    \
    {                                                                                              \
        id, name, c, m, starts, max, sms, mib, media, grid, false                                  \
    }

/* A row whose SMs and MiB are lower bounds (gs_mig_profile.at_least). */
#define ROWD(grid, id, name, c, m, starts, max, sms, mib, media)                                   \
    {                                                                                              \
        id, name, c, m, starts, max, sms, mib, media, grid, true                                   \
    }

/* The four small profiles every 8-slice part has (IDs 19/20/15/14, max 7/1/4/3): name, MiB and
 * SMs of the 1g, 1g double-memory and 2g. */
#define HEAD8(n1, m1, s1, n15, m15, s15, n2, m2, s2)                                               \
    ROW(GRID8, 19, n1, 1, 1, S8_1G, 7, s1, m1, 0),                                                 \
        ROW(GRID8, 20, n1 "+me", 1, 1, S8_1G, 1, s1, m1, ME),                                      \
        ROW(GRID8, 15, n15, 1, 2, S8_1G2, 4, s15, m15, 0),                                         \
        ROW(GRID8, 14, n2, 2, 2, S8_2G, 3, s2, m2, 0)

/* The seven profiles every 8-slice part has (IDs 19/20/15/14/9/5/0, max 7/1/4/3/2/1/1), named
 * after the part's memory: name, MiB and SMs of the 1g, 1g double-memory, 2g, 3g, 4g, 7g. */
#define STD8(n1, m1, s1, n15, m15, s15, n2, m2, s2, n3, m3, s3, n4, m4, s4, n7, m7, s7)            \
    HEAD8(n1, m1, s1, n15, m15, s15, n2, m2, s2), ROW(GRID8, 9, n3, 3, 4, S8_4SL, 2, s3, m3, 0),   \
        ROW(GRID8, 5, n4, 4, 4, S8_4G, 1, s4, m4, 0), ROW(GRID8, 0, n7, 7, 8, S8_7G, 1, s7, m7, 0)

/* The 3g, 4g and 7g rows of a part whose public `-lgip` stops at the 2g: lower bounds from its
 * published rows. On every 8-slice part with all rows published (A100, H100, H100 NVL, H200,
 * GH200 96GB) a 4-slice instance has at least twice the memory of the 2-slice one, the 8-slice
 * at least twice the 4-slice, and a Ng instance at least N times the SMs of the 1g; the unit
 * test checks that rule on those rows. s1: the 1g's SMs, m2: the 2g's MiB. */
#define LOW8(n3, n4, n7, s1, m2)                                                                   \
    ROWD(GRID8, 9, n3, 3, 4, S8_4SL, 2, 3 * (s1), 2 * (m2), 0),                                    \
        ROWD(GRID8, 5, n4, 4, 4, S8_4G, 1, 4 * (s1), 2 * (m2), 0),                                 \
        ROWD(GRID8, 0, n7, 7, 8, S8_7G, 1, 7 * (s1), 4 * (m2), 0)

/* Sources, row by row, are in tests/unit/test_catalog.c, which restates every MIG row from
 * NVIDIA's MIG user guide ("Supported MIG Profiles": names, slices, max instances) and public
 * `nvidia-smi mig -lgip/-lgipp` dumps (IDs, placements, SMs, MiB). Rows no public dump gives
 * are LOW8's lower bounds; a model with no published figures at all has no MIG here
 * (mig_refused says why). Prices of the models added after the article's are rough public
 * on-demand rates, not measurements. */
static const struct gs_gpu_model models[] = {
    {.name = "A100-40GB",
     .product = "A100-SXM4-40GB",
     .aliases = "A100-PCIE-40GB;A100;A100-40G;A100-40GB-PCIE",
     .mem_mib = 40960,
     .sms = 108,
     .price_per_hour = 3.5,
     .pci_ids = {0x20B010DE, 0x20F110DE, 0x20B110DE, 0x20F610DE},
     .nprofiles = 7,
     .profiles = {STD8("1g.5gb", 4864, 14, "1g.10gb", 9856, 14, "2g.10gb", 9984, 28, "3g.20gb",
                       20096, 42, "4g.20gb", 20096, 56, "7g.40gb", 40448, 98)},
     MIG8},
    {.name = "A100-80GB",
     .product = "A100-SXM4-80GB",
     .aliases = "A100-80GB-PCIE;A100-PCIE-80GB;A100-80G;A100-SXM-80GB",
     .mem_mib = 81920,
     .sms = 108,
     .price_per_hour = 3.5,
     .pci_ids = {0x20B210DE, 0x20B510DE, 0x20F310DE, 0x20F510DE},
     .nprofiles = 7,
     .profiles = {STD8("1g.10gb", 9728, 14, "1g.20gb", 19968, 14, "2g.20gb", 19968, 28, "3g.40gb",
                       40192, 42, "4g.40gb", 40192, 56, "7g.80gb", 80896, 98)},
     MIG8},
    {.name = "H100-80GB",
     .product = "H100-SXM5-80GB",
     .aliases = "H100;H100-SXM;H100-80GB-HBM3;H100-SXM5",
     .mem_mib = 81920,
     .sms = 132,
     .price_per_hour = 4.5,
     .pci_ids = {0x233010DE, 0x232210DE, 0, 0},
     .nprofiles = 7,
     .profiles = {STD8("1g.10gb", 9984, 16, "1g.20gb", 20096, 26, "2g.20gb", 20096, 32, "3g.40gb",
                       40448, 60, "4g.40gb", 40448, 64, "7g.80gb", 81152, 132)},
     MIG8},
    {.name = "H100-PCIe-80GB",
     .product = "H100-PCIe",
     .aliases = "H100-PCIE-80GB;H100-80GB-PCIE",
     .mem_mib = 81920,
     .sms = 114,
     .price_per_hour = 4.5,
     .pci_ids = {0x233110DE, 0x232410DE, 0, 0},
     .nprofiles = 7,
     .profiles = {STD8("1g.10gb", 9984, 14, "1g.20gb", 20096, 14, "2g.20gb", 20096, 30, "3g.40gb",
                       40448, 46, "4g.40gb", 40448, 62, "7g.80gb", 81152, 114)},
     MIG8},
    {.name = "H100-NVL-94GB",
     .product = "H100-NVL",
     .aliases = "H100-NVL-94GB;H100NVL;H100-SXM5-94GB;H100-PCIE-94GB",
     .mem_mib = 95830,
     .sms = 132,
     .price_per_hour = 4.5,
     .pci_ids = {0x232110DE, 0x233A10DE, 0, 0},
     .nprofiles = 7,
     .profiles = {STD8("1g.12gb", 11008, 16, "1g.24gb", 22144, 26, "2g.24gb", 22144, 32, "3g.47gb",
                       47488, 60, "4g.47gb", 47488, 64, "7g.94gb", 95360, 132)},
     MIG8},
    {.name = "H200-141GB",
     .product = "H200",
     .aliases = "H200-SXM5-141GB;H200-141G;H200-NVL;H200-SXM",
     .mem_mib = 143771,
     .sms = 132,
     .price_per_hour = 6.0,
     .pci_ids = {0x233510DE, 0x233B10DE, 0, 0},
     .nprofiles = 7,
     .profiles = {STD8("1g.18gb", 16384, 16, "1g.35gb", 33024, 26, "2g.35gb", 33024, 32, "3g.71gb",
                       71168, 60, "4g.71gb", 71168, 64, "7g.141gb", 143104, 132)},
     MIG8},
    {.name = "L40S-48GB",
     .product = "L40S",
     .aliases = "L40S-48GB",
     .mem_mib = 46068,
     .sms = 142,
     .price_per_hour = 1.5,
     .pci_ids = {0x26B910DE, 0, 0, 0}},
    {.name = "RTX4090-24GB",
     .product = "GeForce-RTX-4090",
     .aliases = "RTX-4090;RTX4090;RTX-4090-24GB",
     .mem_mib = 24564,
     .sms = 128,
     .price_per_hour = 0.8,
     .pci_ids = {0x268410DE, 0, 0, 0}},
    {.name = "T4",
     .product = "Tesla-T4",
     .aliases = "T4-16GB",
     .mem_mib = 15360,
     .sms = 40,
     .price_per_hour = 0.35,
     .pci_ids = {0x1EB810DE, 0, 0, 0}},
    {.name = "P100",
     .product = "Tesla-P100-PCIE-16GB",
     .aliases = "P100-16GB",
     .mem_mib = 16280,
     .sms = 56,
     .price_per_hour = 0.6,
     .pci_ids = {0x15F810DE, 0, 0, 0}},
    {.name = "V100M16",
     .product = "Tesla-V100-SXM2-16GB",
     .aliases = "V100-16GB",
     .mem_mib = 16160,
     .sms = 80,
     .price_per_hour = 1.5,
     .pci_ids = {0x1DB110DE, 0, 0, 0}},
    {.name = "V100M32",
     .product = "Tesla-V100-SXM2-32GB",
     .aliases = "V100-32GB;V100S-PCIE-32GB",
     .mem_mib = 32510,
     .sms = 80,
     .price_per_hour = 2.0,
     .pci_ids = {0x1DB510DE, 0, 0, 0}},
    {.name = "A10",
     .product = "A10",
     .aliases = "A10-24GB",
     .mem_mib = 22731,
     .sms = 72,
     .price_per_hour = 0.75,
     .pci_ids = {0x223610DE, 0, 0, 0}},
    {.name = "G2",
     .product = "G2",
     .aliases = "",
     .mem_mib = 16384,
     .sms = 80,
     .price_per_hour = 1.0},
    {.name = "G3",
     .product = "G3",
     .aliases = "",
     .mem_mib = 16384,
     .sms = 80,
     .price_per_hour = 1.0},
    /* models added for real clusters: appended so the ids above do not move */
    {.name = "A30-24GB",
     .product = "A30",
     .aliases = "A30-24GB;A30-PCIE-24GB;A30-24G",
     .mem_mib = 24576,
     .sms = 56,
     .price_per_hour = 0.9,
     .pci_ids = {0x20B710DE, 0, 0, 0},
     .nprofiles = 5,
     .profiles = {ROW(GRID4, 14, "1g.6gb", 1, 1, S4_1G, 4, 14, 5952, 0),
                  ROW(GRID4, 21, "1g.6gb+me", 1, 1, S4_1G, 1, 14, 5952, ME),
                  ROW(GRID4, 5, "2g.12gb", 2, 2, S4_2G, 2, 28, 11968, 0),
                  ROW(GRID4, 6, "2g.12gb+me", 2, 2, S4_2G, 1, 28, 11968, ME),
                  ROW(GRID4, 0, "4g.24gb", 4, 4, S4_4G, 1, 56, 24000, 0)},
     MIG4},
    {.name = "GH200-96GB",
     .product = "GH200-480GB",
     .aliases = "GH200;GH200-96GB;GH200-480GB-96GB;H100-96GB",
     .mem_mib = 97871,
     .sms = 132,
     .price_per_hour = 3.2,
     .pci_ids = {0x234210DE, 0x233D10DE, 0, 0},
     .nprofiles = 7,
     .profiles = {STD8("1g.12gb", 11264, 16, "1g.24gb", 23552, 26, "2g.24gb", 23552, 32, "3g.48gb",
                       47616, 60, "4g.48gb", 47616, 64, "7g.96gb", 95232, 132)},
     MIG8},
    {.name = "GH200-144GB",
     .product = "GH200-144G-HBM3e",
     .aliases = "GH200-144GB;GH200-144G",
     .mem_mib = 145920,
     .sms = 132,
     .price_per_hour = 3.5,
     .pci_ids = {0x234810DE, 0, 0, 0},
     .nprofiles = 7,
     .profiles = {HEAD8("1g.18gb", 17920, 16, "1g.36gb", 36096, 26, "2g.36gb", 36096, 32),
                  LOW8("3g.72gb", "4g.72gb", "7g.144gb", 16, 36096)},
     MIG8},
    {.name = "H20-96GB",
     .product = "H20",
     .aliases = "H20-96GB",
     .mem_mib = 98304,
     .sms = 78,
     .price_per_hour = 2.0,
     .pci_ids = {0x232910DE, 0, 0, 0},
     .mig_refused = "the MIG user guide lists H20 among MIG GPUs, but no public source gives "
                    "the SMs and memory of its instances (its 78 SMs make the H100 figures "
                    "wrong): gpusched offers it whole, time-sliced or with MPS"},
    {.name = "B200-180GB",
     .product = "B200",
     .aliases = "B200-180GB;B200-SXM6-180GB",
     .mem_mib = 183359,
     .sms = 148,
     .price_per_hour = 7.5,
     .pci_ids = {0x290110DE, 0, 0, 0},
     .nprofiles = 7,
     .profiles = {HEAD8("1g.23gb", 20992, 18, "1g.45gb", 45312, 30, "2g.45gb", 45312, 36),
                  LOW8("3g.90gb", "4g.90gb", "7g.180gb", 18, 45312)},
     MIG8},
    /* B300: not in the MIG user guide; NVIDIA's GPU operator config names its profiles
     * (1g.34gb .. 7g.269gb) but no public source gives their SMs, nor the GPU's. */
    {.name = "B300-288GB",
     .product = "B300-SXM6-AC",
     .aliases = "B300;B300-288GB;B300-SXM6",
     .mem_mib = 275456,
     .sms = 0,
     .price_per_hour = 9.0,
     .pci_ids = {0x318210DE, 0, 0, 0},
     .mig_refused = "B300 is not in NVIDIA's MIG user guide and no public source gives the SMs "
                    "of its MIG instances: gpusched offers it whole, time-sliced or with MPS"},
    /* RTX PRO 6000 Blackwell: 4 compute and 4 memory slices; NVML places them on a 12-unit
     * grid (1g at {0,3,6,9}:3), so placement_unit is 3. */
    {.name = "RTXPRO6000-96GB",
     .product = "RTX-PRO-6000-Blackwell-Server-Edition",
     .aliases = "RTX-PRO-6000-Blackwell-Workstation-Edition;"
                "RTX-PRO-6000-Blackwell-Max-Q-Workstation-Edition;RTX-PRO-6000;"
                "RTX-PRO-6000-96GB;RTXPRO6000;RTX-PRO-6000-Blackwell",
     .mem_mib = 97887,
     .sms = 188,
     .price_per_hour = 2.0,
     .pci_ids = {0x2BB510DE, 0, 0, 0},
     .nprofiles = 11,
     .profiles = {ROW(GRID4, 14, "1g.24gb", 1, 1, S4_1G, 4, 46, 24192, 0),
                  ROW(GRID4, 21, "1g.24gb+me", 1, 1, S4_1G, 1, 46, 24192, ME),
                  ROW(GRID4, 47, "1g.24gb+gfx", 1, 1, S4_1G, 4, 46, 24192, 0),
                  ROW(GRID4, 65, "1g.24gb+me.all", 1, 1, S4_1G, 1, 46, 24192, MALL),
                  ROW(GRID4, 67, "1g.24gb-me", 1, 1, S4_1G, 4, 46, 24192, NOME),
                  ROW(GRID4, 5, "2g.48gb", 2, 2, S4_2G, 2, 94, 48512, 0),
                  ROW(GRID4, 35, "2g.48gb+gfx", 2, 2, S4_2G, 2, 94, 48512, 0),
                  ROW(GRID4, 64, "2g.48gb+me.all", 2, 2, S4_2G, 1, 94, 48512, MALL),
                  ROW(GRID4, 66, "2g.48gb-me", 2, 2, S4_2G, 2, 94, 48512, NOME),
                  ROW(GRID4, 0, "4g.96gb", 4, 4, S4_4G, 1, 188, 97408, 0),
                  ROW(GRID4, 32, "4g.96gb+gfx", 4, 4, S4_4G, 1, 188, 97408, 0)},
     .mig_compute = 4,
     .mig_mem = 4,
     .placement_unit = 3},
};

_Static_assert(sizeof(models) / sizeof(models[0]) < GS_MAX_MODELS,
               "model ids, and the one after them for other models, fit a uint32_t");

/* Any GPU model the table lacks: whole GPUs and time-slicing/MPS replicas only (memory comes
 * from the node, not from here). Its id is one past the table, so loops over the catalog's
 * models do not meet it. */
static const struct gs_gpu_model other_model = {.name = "other", .product = "other"};

int gs_catalog_count(void)
{
    return (int)(sizeof(models) / sizeof(models[0]));
}

int gs_catalog_other(void)
{
    return gs_catalog_count();
}

const struct gs_gpu_model *gs_catalog_get(int id)
{
    if (id == gs_catalog_other())
        return &other_model;
    if (id < 0 || id >= gs_catalog_count())
        return NULL;
    return &models[id];
}

#define NAME_MAX_LEN 128

/* The label form of a name, as GFD's sanitise() makes it, upper-cased: characters outside
 * [A-Za-z0-9-_. ] dropped, each run of blanks between words one '-'; '_' counts as '-'. */
static void canon(const char *in, size_t len, char *out, size_t n)
{
    size_t o = 0;
    bool gap = false; /* blanks seen since the last character kept */
    for (size_t i = 0; i < len && in[i] && o + 1 < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (isspace(c)) {
            gap = true;
            continue;
        }
        if (c == '_')
            c = '-';
        if (!isalnum(c) && c != '.' && c != '-')
            continue;
        if (gap && o > 0 && o + 2 < n)
            out[o++] = '-';
        gap = false;
        out[o++] = (char)toupper(c);
    }
    out[o] = '\0';
}

static bool name_eq(const char *want, const char *cand, size_t cand_len)
{
    char c[NAME_MAX_LEN];
    canon(cand, cand_len, c, sizeof(c));
    return strcmp(want, c) == 0;
}

/* want is already in canonical form */
static int find_exact(const char *want)
{
    for (int i = 0; i < gs_catalog_count(); i++) {
        const struct gs_gpu_model *m = &models[i];
        if (name_eq(want, m->name, strlen(m->name)) ||
            name_eq(want, m->product, strlen(m->product)))
            return i;
        for (const char *p = m->aliases; p && *p;) {
            const char *e = strchr(p, ';');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            if (l > 0 && name_eq(want, p, l))
                return i;
            p = e ? e + 1 : NULL;
        }
    }
    return GS_ENOTFOUND;
}

int gs_catalog_find(const char *name)
{
    if (!name || !*name)
        return GS_ENOTFOUND;
    size_t len = strnlen(name, NAME_MAX_LEN);
    if (len >= NAME_MAX_LEN - 1)
        return GS_ENOTFOUND;
    char work[NAME_MAX_LEN];
    canon(name, len, work, sizeof(work));
    char *s = work;
    if (strncmp(s, "NVIDIA-", 7) == 0)
        s += 7;
    /* GFD decorations: "-SHARED" (time-slicing/MPS replicas), "-MIG-<profile>" (single
     * strategy, also "-MIG-INVALID"); nvidia-smi names a MIG device "<model> MIG <profile>" */
    size_t l = strlen(s);
    if (l > 7 && strcmp(s + l - 7, "-SHARED") == 0)
        s[l - 7] = '\0';
    char *mig = strstr(s, "-MIG-");
    if (mig)
        *mig = '\0';
    int id = find_exact(s);
    if (id >= 0)
        return id;
    if (strncmp(s, "TESLA-", 6) == 0)
        return find_exact(s + 6);
    return GS_ENOTFOUND;
}

int gs_catalog_find_pci(uint32_t pci_id)
{
    for (int i = 0; i < gs_catalog_count(); i++)
        for (int k = 0; k < 4; k++)
            if (models[i].pci_ids[k] && models[i].pci_ids[k] == pci_id)
                return i;
    return GS_ENOTFOUND;
}

bool gs_catalog_mig_capable(int id)
{
    const struct gs_gpu_model *m = gs_catalog_get(id);
    return m && m->nprofiles > 0;
}

int gs_catalog_find_profile(int model, const char *name)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || !name)
        return GS_ENOTFOUND;
    if (strncmp(name, "nvidia.com/", 11) == 0)
        name += 11;
    if (strncmp(name, "mig-", 4) == 0)
        name += 4;
    for (int i = 0; i < m->nprofiles; i++) {
        const char *pn = m->profiles[i].name;
        if (strcmp(pn, name) == 0)
            return i;
        /* Kubernetes spelling: '+' -> '.' */
        char k8s[32];
        snprintf(k8s, sizeof(k8s), "%s", pn);
        for (char *c = k8s; *c; c++)
            if (*c == '+')
                *c = '.';
        if (strcmp(k8s, name) == 0)
            return i;
    }
    return GS_ENOTFOUND;
}

void gs_mig_resource_name(const struct gs_mig_profile *p, char *out, unsigned out_size)
{
    snprintf(out, out_size, "nvidia.com/mig-%s", p->name);
    for (char *c = out; *c; c++)
        if (*c == '+')
            *c = '.';
}

double gs_mig_profile_units(const struct gs_mig_profile *p)
{
    if (!p->gpu_compute || !p->gpu_mem)
        return 0;
    double c = p->compute / (double)p->gpu_compute, m = p->mem_slices / (double)p->gpu_mem;
    return c > m ? c : m;
}

double gs_mig_profile_compute_share(const struct gs_mig_profile *p)
{
    return p->gpu_compute ? p->compute / (double)p->gpu_compute : 0;
}

void gs_catalog_nvml_placement(int model, int profile, unsigned start, unsigned *nvml_start,
                               unsigned *nvml_size)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    unsigned unit = m && m->placement_unit ? m->placement_unit : 1;
    *nvml_start = start * unit;
    *nvml_size =
        m && profile >= 0 && profile < m->nprofiles ? m->profiles[profile].mem_slices * unit : 0;
}

int gs_catalog_slice_of_nvml(int model, unsigned nvml_start)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || !m->nprofiles)
        return GS_EINVAL;
    unsigned unit = m->placement_unit ? m->placement_unit : 1;
    if (nvml_start % unit || nvml_start / unit >= m->mig_mem)
        return GS_EINVAL;
    return (int)(nvml_start / unit);
}

void gs_catalog_mig_refusal(int model, char *out, unsigned out_size)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || m->nprofiles)
        snprintf(out, out_size, "%s", m ? "" : "unknown GPU model");
    else if (m->mig_refused)
        snprintf(out, out_size, "MIG is not offered on %s: %s", m->name, m->mig_refused);
    else
        snprintf(out, out_size, "%s does not support MIG", m->name);
}

/* "<G>g.<GB>gb..." after any "nvidia.com/" and "mig-": G and GB, false when not of that form */
static bool profile_shape(const char *name, unsigned *g, unsigned *gb)
{
    if (strncmp(name, "nvidia.com/", 11) == 0)
        name += 11;
    if (strncmp(name, "mig-", 4) == 0)
        name += 4;
    char *end;
    unsigned long a = strtoul(name, &end, 10);
    if (end == name || a > 64 || strncmp(end, "g.", 2) != 0)
        return false;
    const char *p = end + 2;
    unsigned long b = strtoul(p, &end, 10);
    if (end == p || b > 100000 || strncmp(end, "gb", 2) != 0)
        return false;
    *g = (unsigned)a;
    *gb = (unsigned)b;
    return true;
}

int gs_catalog_closest_profile(int model, const char *name)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    unsigned g, gb;
    if (!m || !name || !profile_shape(name, &g, &gb))
        return GS_ENOTFOUND;
    int best = GS_ENOTFOUND;
    unsigned long best_score = 0;
    for (int i = 0; i < m->nprofiles; i++) {
        unsigned pg, pgb;
        if (!profile_shape(m->profiles[i].name, &pg, &pgb))
            continue;
        /* other compute slices weigh more than any memory gap; a variant (+me, -me, +gfx)
         * loses a tie to the plain profile */
        unsigned long score = (pg != g ? 1000000ul : 0) + (pgb > gb ? pgb - gb : gb - pgb) * 2 +
                              (strpbrk(m->profiles[i].name + 2, "+-") != NULL);
        if (best < 0 || score < best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

void gs_catalog_profile_unknown(int model, const char *name, char *out, unsigned out_size)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || !m->nprofiles) {
        gs_catalog_mig_refusal(model, out, out_size);
        return;
    }
    char list[512];
    gs_catalog_profile_list(model, list, sizeof(list));
    int c = gs_catalog_closest_profile(model, name);
    snprintf(out, out_size, "%s is not a%s %s profile; %s offers %s%s%s%s", name,
             strchr("AEFHILMNORSX", m->name[0]) ? "n" : "", m->name, m->name, list,
             c >= 0 ? " (closest: " : "", c >= 0 ? m->profiles[c].name : "", c >= 0 ? ")" : "");
}

void gs_catalog_profile_list(int model, char *out, unsigned out_size)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    size_t o = 0;
    out[0] = '\0';
    if (!m)
        return;
    for (int i = 0; i < m->nprofiles && o + 1 < out_size; i++) {
        int n = snprintf(out + o, out_size - o, "%s%s", i ? ", " : "", m->profiles[i].name);
        if (n < 0)
            break;
        o += (size_t)n;
    }
}
