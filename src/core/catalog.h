/* catalog.h - the GPU models gpusched knows, with their exact MIG geometry.
 *
 * The catalog is static, read-only data: every model's memory, SMs, hourly price and, for
 * MIG-capable models, the GPU-instance profiles exactly as NVML reports them (profile ID,
 * compute slices, memory slices = placement size, valid placement starts, max instances,
 * SMs, memory). Model ids are dense indexes into that table, stable within one build.
 * All functions are pure and thread-safe; prices can be overridden per run by callers that
 * keep their own copy (see gs_catalog_price). */
#ifndef GS_CATALOG_H
#define GS_CATALOG_H

#include <stdbool.h>
#include <stdint.h>

#define GS_MIG_MAX_PROFILES 8
#define GS_MIG_MEM_SLICES   8
#define GS_MIG_COMPUTE_MAX  7
#define GS_MAX_MODELS       32

struct gs_mig_profile {
    uint16_t id;        /* NVML GPU-instance profile ID (19, 20, 15, 14, 9, 5, 0) */
    const char *name;   /* canonical NVIDIA name, e.g. "1g.10gb" or "1g.10gb+me" */
    uint8_t compute;    /* compute slices ("g") */
    uint8_t mem_slices; /* memory slices = placement size */
    uint8_t start_mask; /* bit s set: placement start s is valid */
    uint8_t max_count;  /* instances of this profile at most */
    uint16_t sms;       /* SMs of one instance */
    uint32_t mem_mib;   /* memory of one instance, MiB */
};

struct gs_gpu_model {
    const char *name;    /* catalog name, e.g. "A100-80GB" */
    const char *product; /* nvidia.com/gpu.product value GFD publishes (sanitized) */
    const char *aliases; /* ';'-separated extra names that resolve to this model */
    uint32_t mem_mib;
    uint16_t sms;
    double price_per_hour; /* $/h for one GPU */
    uint32_t pci_ids[4];   /* device<<16 | 0x10DE, for mig-parted device-filter */
    uint8_t nprofiles;     /* 0: not MIG-capable */
    struct gs_mig_profile profiles[GS_MIG_MAX_PROFILES];
};

int gs_catalog_count(void);
/* Model by dense id; NULL when out of range. */
const struct gs_gpu_model *gs_catalog_get(int id);
/* Resolve a name, an alias or a GPU-feature-discovery product label ("NVIDIA-A100-SXM4-80GB",
 * "A100-SXM4-80GB-SHARED", "H100-80GB-MIG-1g.10gb", case-insensitive). Returns the id or
 * GS_ENOTFOUND. */
int gs_catalog_find(const char *name);
/* Model whose pci_ids contain the id, or GS_ENOTFOUND. */
int gs_catalog_find_pci(uint32_t pci_id);
bool gs_catalog_mig_capable(int id);
/* Profile index within the model by NVIDIA name ("3g.40gb", "1g.10gb+me"); also accepts the
 * Kubernetes spelling ("1g.10gb.me", "mig-3g.40gb", "nvidia.com/mig-3g.40gb").
 * Returns index or GS_ENOTFOUND. */
int gs_catalog_find_profile(int model, const char *name);
/* Kubernetes extended resource name of a profile: "nvidia.com/mig-1g.10gb.me". */
void gs_mig_resource_name(const struct gs_mig_profile *p, char *out, unsigned out_size);
/* Accounting unit of DESIGN.md: max(compute/7, memory slices/8). */
double gs_mig_profile_units(const struct gs_mig_profile *p);
/* Comma-separated list of the model's profile names, for error messages. */
void gs_catalog_profile_list(int model, char *out, unsigned out_size);

#endif
