/* catalog.c - static GPU model table. The MIG rows restate NVML's `nvidia-smi mig -lgip` /
 * `-lgipp` output for each model (see the node-stack reference); mig.c searches placements
 * over these rows, so nothing else hard-codes a layout. */
#include "catalog.h"

#include "../base/error.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Valid placement starts (memory-slice units) shared by A100/H100/H200 class GPUs. */
#define S_1G  0x7F /* 0..6 */
#define S_1G2 0x55 /* 0,2,4,6 */
#define S_2G  0x15 /* 0,2,4 */
#define S_3G  0x11 /* 0,4 */
#define S_4G  0x01
#define S_7G  0x01

#define MIG7(n1, m1, s1, n15, m15, s15, n2, m2, s2, n3, m3, s3, n4, m4, s4, n7, m7, s7)            \
    7,                                                                                             \
    {                                                                                              \
        {19, n1, 1, 1, S_1G, 7, s1, m1}, {20, n1 "+me", 1, 1, S_1G, 1, s1, m1},                    \
            {15, n15, 1, 2, S_1G2, 4, s15, m15}, {14, n2, 2, 2, S_2G, 3, s2, m2},                  \
            {9, n3, 3, 4, S_3G, 2, s3, m3}, {5, n4, 4, 4, S_4G, 1, s4, m4},                        \
        {                                                                                          \
            0, n7, 7, 8, S_7G, 1, s7, m7                                                           \
        }                                                                                          \
    }

static const struct gs_gpu_model models[] = {
    {"A100-40GB",
     "A100-SXM4-40GB",
     "A100-PCIE-40GB;A100;A100-SXM4-40GB;A100-40G",
     40960,
     108,
     3.5,
     {0x20B010DE, 0x20F110DE, 0x20B110DE, 0x20F610DE},
     MIG7("1g.5gb", 4864, 14, "1g.10gb", 9856, 14, "2g.10gb", 9984, 28, "3g.20gb", 20096, 42,
          "4g.20gb", 20096, 56, "7g.40gb", 40448, 98)},
    {"A100-80GB",
     "A100-SXM4-80GB",
     "A100-PCIE-80GB;A100-80G;A100-SXM-80GB",
     81920,
     108,
     3.5,
     {0x20B210DE, 0x20B510DE, 0x20F310DE, 0x20F510DE},
     MIG7("1g.10gb", 9728, 14, "1g.20gb", 19968, 14, "2g.20gb", 19968, 28, "3g.40gb", 40192, 42,
          "4g.40gb", 40192, 56, "7g.80gb", 80896, 98)},
    {"H100-80GB",
     "H100-SXM5-80GB",
     "H100;H100-SXM;H100-80GB-HBM3;H100-SXM5",
     81920,
     132,
     4.5,
     {0x233010DE, 0x232210DE, 0, 0},
     MIG7("1g.10gb", 9984, 16, "1g.20gb", 20096, 26, "2g.20gb", 20096, 32, "3g.40gb", 40448, 60,
          "4g.40gb", 40448, 64, "7g.80gb", 81152, 132)},
    {"H100-PCIe-80GB",
     "H100-PCIe",
     "H100-PCIE-80GB;H100-PCIE",
     81920,
     114,
     4.5,
     {0x233110DE, 0x232410DE, 0, 0},
     MIG7("1g.10gb", 9984, 14, "1g.20gb", 20096, 14, "2g.20gb", 20096, 30, "3g.40gb", 40448, 46,
          "4g.40gb", 40448, 62, "7g.80gb", 81152, 114)},
    {"H100-NVL-94GB",
     "H100-NVL",
     "H100-NVL-94GB;H100NVL",
     95830,
     132,
     4.5,
     {0x232110DE, 0x233A10DE, 0, 0},
     MIG7("1g.12gb", 11008, 16, "1g.24gb", 22144, 26, "2g.24gb", 22144, 32, "3g.47gb", 47488, 60,
          "4g.47gb", 47488, 64, "7g.94gb", 95360, 132)},
    {"H200-141GB",
     "H200",
     "H200-SXM5-141GB;H200-141G;H200-NVL;H200-SXM",
     143771,
     132,
     6.0,
     {0x233510DE, 0x233B10DE, 0, 0},
     MIG7("1g.18gb", 16384, 16, "1g.35gb", 33024, 26, "2g.35gb", 33024, 32, "3g.71gb", 71168, 60,
          "4g.71gb", 71168, 64, "7g.141gb", 143104, 132)},
    {"L40S-48GB",
     "L40S",
     "L40S-48GB;NVIDIA-L40S",
     46068,
     142,
     1.5,
     {0x26B910DE, 0, 0, 0},
     0,
     {{0}}},
    {"RTX4090-24GB",
     "GeForce-RTX-4090",
     "RTX-4090;RTX4090;RTX-4090-24GB;NVIDIA-GeForce-RTX-4090",
     24564,
     128,
     0.8,
     {0x268410DE, 0, 0, 0},
     0,
     {{0}}},
    {"T4", "Tesla-T4", "T4-16GB", 15360, 40, 0.35, {0x1EB810DE, 0, 0, 0}, 0, {{0}}},
    {"P100", "Tesla-P100-PCIE-16GB", "P100-16GB", 16280, 56, 0.6, {0x15F810DE, 0, 0, 0}, 0, {{0}}},
    {"V100M16",
     "Tesla-V100-SXM2-16GB",
     "V100-16GB",
     16160,
     80,
     1.5,
     {0x1DB110DE, 0, 0, 0},
     0,
     {{0}}},
    {"V100M32",
     "Tesla-V100-SXM2-32GB",
     "V100-32GB;V100S-PCIE-32GB",
     32510,
     80,
     2.0,
     {0x1DB510DE, 0, 0, 0},
     0,
     {{0}}},
    {"A10", "A10", "NVIDIA-A10;A10-24GB", 22731, 72, 0.75, {0x223610DE, 0, 0, 0}, 0, {{0}}},
    {"G2", "G2", "", 16384, 80, 1.0, {0, 0, 0, 0}, 0, {{0}}},
    {"G3", "G3", "", 16384, 80, 1.0, {0, 0, 0, 0}, 0, {{0}}},
};

int gs_catalog_count(void)
{
    return (int)(sizeof(models) / sizeof(models[0]));
}

const struct gs_gpu_model *gs_catalog_get(int id)
{
    if (id < 0 || id >= gs_catalog_count())
        return NULL;
    return &models[id];
}

static void canon(const char *in, char *out, size_t n)
{
    /* upper-case, '_' and ' ' -> '-' */
    size_t o = 0;
    for (; *in && o + 1 < n; in++) {
        char c = *in;
        if (c == '_' || c == ' ')
            c = '-';
        out[o++] = (char)toupper((unsigned char)c);
    }
    out[o] = '\0';
}

static bool name_eq(const char *a, const char *b)
{
    char ca[96], cb[96];
    canon(a, ca, sizeof(ca));
    canon(b, cb, sizeof(cb));
    return strcmp(ca, cb) == 0;
}

static int find_exact(const char *name)
{
    for (int i = 0; i < gs_catalog_count(); i++) {
        const struct gs_gpu_model *m = &models[i];
        if (name_eq(name, m->name) || name_eq(name, m->product))
            return i;
        const char *p = m->aliases;
        while (p && *p) {
            const char *e = strchr(p, ';');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            char alias[96];
            if (l < sizeof(alias)) {
                memcpy(alias, p, l);
                alias[l] = '\0';
                if (name_eq(name, alias))
                    return i;
            }
            p = e ? e + 1 : NULL;
        }
    }
    return GS_ENOTFOUND;
}

int gs_catalog_find(const char *name)
{
    if (!name || !*name || strlen(name) > 90)
        return GS_ENOTFOUND;
    char buf[96];
    canon(name, buf, sizeof(buf));
    const char *s = buf;
    if (strncmp(s, "NVIDIA-", 7) == 0)
        s += 7;
    char work[96];
    snprintf(work, sizeof(work), "%s", s);
    /* strip GFD decorations: "-SHARED", "-MIG-<profile>" */
    size_t l = strlen(work);
    if (l > 7 && strcmp(work + l - 7, "-SHARED") == 0)
        work[l - 7] = '\0';
    char *mig = strstr(work, "-MIG-");
    if (mig)
        *mig = '\0';
    int id = find_exact(work);
    if (id >= 0)
        return id;
    if (strncmp(work, "TESLA-", 6) == 0)
        return find_exact(work + 6);
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
    double c = p->compute / 7.0, m = p->mem_slices / 8.0;
    return c > m ? c : m;
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
