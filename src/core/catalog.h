/* catalog.h - the GPU models gpusched knows, with their exact MIG geometry.
 *
 * The catalog is static, read-only data: every model's memory, SMs, hourly price and, for
 * MIG-capable models, its MIG grid (compute and memory slices: 7 and 8 on A100/H100/H200/B200,
 * 4 and 4 on A30 and RTX PRO 6000 Blackwell) and the GPU-instance profiles as NVML reports
 * them (profile ID, compute slices, memory slices = placement size, valid placement starts,
 * max instances, SMs, memory, media engines). Invariants: every profile fits its model's
 * grid; no model exceeds the GS_MIG_* bounds. Model ids are dense indexes into that table,
 * stable within one build; new models go at the end.
 * All functions are pure and thread-safe; prices can be overridden per run by callers that
 * keep their own copy (see gs_catalog_price). */
#ifndef GS_CATALOG_H
#define GS_CATALOG_H

#include <stdbool.h>
#include <stdint.h>

/* Bounds over every model; each model has its own geometry (gs_gpu_model.mig_compute and
 * .mig_mem), never more than these. */
#define GS_MIG_MAX_PROFILES 12 /* profiles of one model (RTX PRO 6000 Blackwell has 11) */
#define GS_MIG_MEM_SLICES   8  /* memory slices of the largest grid (A100/H100/H200/B200) */
#define GS_MIG_COMPUTE_MAX  7  /* compute slices, hence instances, of the largest grid */
#define GS_MAX_MODELS       32 /* model ids fit a uint32_t mask */

/* Media engines of a profile, where they restrict what can share a GPU. */
#define GS_MIG_MEDIA_EXT                                                                           \
    0x01 /* holds the GPU's one OFA/JPEG path ("+me", "+me.all"): at most                          \
            one such instance per GPU */
#define GS_MIG_MEDIA_ALL                                                                           \
    0x02                       /* takes every media engine ("+me.all"): every other instance       \
                                  on the GPU must be a GS_MIG_MEDIA_NONE one */
#define GS_MIG_MEDIA_NONE 0x04 /* has no media engine at all ("-me") */

struct gs_mig_profile {
    uint16_t id;        /* NVML GPU-instance profile ID (19, 20, 15, 14, 9, 5, 0 on A100) */
    const char *name;   /* canonical NVIDIA name, e.g. "1g.10gb" or "1g.10gb+me" */
    uint8_t compute;    /* compute slices ("g") */
    uint8_t mem_slices; /* memory slices = placement size */
    uint8_t start_mask; /* bit s set: placement start s (memory-slice units) is valid */
    uint8_t max_count;  /* instances of this profile at most */
    uint16_t sms;       /* SMs of one instance; never 0 on a MIG-capable model */
    uint32_t mem_mib;   /* memory of one instance, MiB; never 0 on a MIG-capable model */
    uint8_t media;      /* GS_MIG_MEDIA_* */
    uint8_t gpu_compute, gpu_mem; /* the owning model's slices, so a profile knows its share */
    /* sms and mem_mib are lower bounds, not NVML's figures: no public `nvidia-smi mig -lgip`
     * gives this row, so they are derived from the model's published rows (catalog.c says
     * how); the real instance has at least as much */
    bool at_least;
};

struct gs_gpu_model {
    const char *name;    /* catalog name, e.g. "A100-80GB" */
    const char *product; /* nvidia.com/gpu.product value GFD publishes, less "NVIDIA-" */
    const char *aliases; /* ';'-separated extra names that resolve to this model */
    uint32_t mem_mib;
    uint16_t sms;          /* 0: not published */
    double price_per_hour; /* $/h for one GPU */
    uint32_t pci_ids[4];   /* device<<16 | 0x10DE, for mig-parted device-filter */
    uint8_t nprofiles;     /* 0: not MIG-capable */
    struct gs_mig_profile profiles[GS_MIG_MAX_PROFILES];
    uint8_t mig_compute;    /* compute slices of the GPU in MIG mode (7, or 4 on A30/RTX PRO) */
    uint8_t mig_mem;        /* memory slices (8, or 4) */
    uint8_t placement_unit; /* NVML placement units per memory slice: 1, but 3 on RTX PRO 6000
                               Blackwell, whose `nvidia-smi mig -lgipp` grid has 12 units */
    /* Set on a model whose silicon has MIG but whose instances' SMs and memory no public
     * source gives: gpusched refuses MIG on it (nprofiles is 0) and says this why. */
    const char *mig_refused;
};

int gs_catalog_count(void);
/* The id of "other": a GPU model the catalog lacks (no MIG, no memory of its own: a node
 * says how much its GPUs have). It is gs_catalog_count(), one past the table: gs_catalog_get
 * returns it, gs_catalog_find never does. */
int gs_catalog_other(void);
/* Model by dense id; NULL when out of range. */
const struct gs_gpu_model *gs_catalog_get(int id);
/* Resolve a catalog name, an alias, a GPU-feature-discovery nvidia.com/gpu.product label
 * ("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe-SHARED", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")
 * or a name as nvidia-smi prints it ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3 MIG
 * 1g.10gb"). Case-insensitive; spaces and '_' count as '-', characters GFD drops are dropped.
 * Exact names only: an unknown variant is GS_ENOTFOUND, never the nearest model. */
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
/* Accounting unit (docs/architecture.md): max(compute / the GPU's compute slices, memory slices /
 * the GPU's memory slices), e.g. max(c/7, m/8) on A100, max(c/4, m/4) on A30. */
double gs_mig_profile_units(const struct gs_mig_profile *p);
/* Share of the GPU's compute an instance has: compute / the GPU's compute slices. */
double gs_mig_profile_compute_share(const struct gs_mig_profile *p);
/* NVML placement of an instance at memory slice `start`: start and size in the units
 * nvmlGpuInstancePlacement_t and `nvidia-smi mig -lgipp` use (slices times
 * placement_unit). gs_catalog_slice_of_nvml is the inverse: the memory slice of an NVML
 * placement start, or GS_EINVAL when it is not on the model's grid. */
void gs_catalog_nvml_placement(int model, int profile, unsigned start, unsigned *nvml_start,
                               unsigned *nvml_size);
int gs_catalog_slice_of_nvml(int model, unsigned nvml_start);
/* Comma-separated list of the model's profile names, for error messages. */
void gs_catalog_profile_list(int model, char *out, unsigned out_size);
/* Why MIG is refused on a model ("<name> does not support MIG", or the catalog's reason for a
 * model whose MIG figures are not published), for error messages; "" for a MIG-capable one. */
void gs_catalog_mig_refusal(int model, char *out, unsigned out_size);
/* The profile of the model nearest to an unknown name: the same compute slices ("1g") and the
 * nearest memory, else the nearest memory; GS_ENOTFOUND when the model has no MIG or the name
 * is not of the form <G>g.<GB>gb. */
int gs_catalog_closest_profile(int model, const char *name);
/* The message for a profile name the model lacks: "1g.20gb is not an H200-141GB profile;
 * H200-141GB offers 1g.18gb, 1g.18gb+me, ... (closest: 1g.18gb)", or the refusal of MIG on
 * a model without it. */
void gs_catalog_profile_unknown(int model, const char *name, char *out, unsigned out_size);

#endif
