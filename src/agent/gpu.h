/* gpu.h - the node agent's GPU backend: what a node's GPUs are, how they are partitioned,
 * how they are doing, and what went wrong (XIDs).
 *
 * Two backends share one vtable:
 *   - NVML, through dlopen("libnvidia-ml.so.1") with our own declarations of the few calls
 *     used (no CUDA toolkit at build time). A node without the library, or where nvmlInit
 *     fails, has no GPUs: gs_gpu_open_nvml says why and returns a backend with 0 devices.
 *   - fake, driven by a JSON file (see gpu_fake.c): catalog models, MIG mode and instances
 *     created and destroyed under the real placement rules (core/mig.c), and metrics, ECC
 *     counts, temperatures and pending XIDs that the file may change while the agent runs
 *     (it is re-read when its modification time changes).
 * Calls are not thread-safe; the agent serialises them. */
#ifndef GS_AGENT_GPU_H
#define GS_AGENT_GPU_H

#include "../core/catalog.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_AGENT_MAX_GPUS 16
#define GS_AGENT_MAX_INST 7

struct gs_gpu_info {
    int index;
    char uuid[96];
    char name[96];    /* as the driver names it: "NVIDIA H200" */
    uint32_t pci_id;  /* device << 16 | vendor */
    int model;        /* catalog id, or -1 for a model gpusched does not know */
    uint64_t mem_mib; /* framebuffer */
    bool mig_capable;
    bool mig_enabled, mig_pending; /* current mode; a mode change waiting for a reset */
};

struct gs_gpu_metrics {
    uint32_t util_pct;            /* SM busy, 0..100 */
    uint32_t mem_util_pct;        /* memory controller busy, 0..100 */
    uint64_t mem_used, mem_total; /* bytes */
    double power_w;
    uint32_t temp_c;
    uint32_t sm_clock_mhz, mem_clock_mhz;
    uint64_t ecc_uncorrected, ecc_corrected; /* volatile counts since the driver loaded */
};

/* A MIG GPU instance (with its compute instance). */
struct gs_mig_inst {
    uint32_t gi_id;
    uint32_t profile_id;  /* NVML GPU-instance profile ID (19, 9, ...) */
    uint32_t start, size; /* placement, memory slices */
    char uuid[96];        /* MIG-<uuid> of its compute instance */
};

/* A GPU-instance profile as the backend reports it. */
struct gs_gpu_profile {
    uint32_t id;         /* NVML profile ID */
    uint32_t compute;    /* sliceCount */
    uint32_t mem_slices; /* placement size */
    uint32_t max_count;  /* instanceCount */
    uint32_t sms;        /* multiprocessorCount */
    uint64_t mem_mib;    /* memorySizeMB */
    uint8_t start_mask;  /* possible placements: bit s = start s */
};

struct gs_gpu_backend;

struct gs_gpu_ops {
    const char *name;
    int (*count)(struct gs_gpu_backend *b);
    int (*info)(struct gs_gpu_backend *b, int i, struct gs_gpu_info *out);
    int (*metrics)(struct gs_gpu_backend *b, int i, struct gs_gpu_metrics *out);
    /* Instances of GPU i; returns how many (<= cap) or an error. */
    int (*mig_list)(struct gs_gpu_backend *b, int i, struct gs_mig_inst *out, int cap);
    /* GPU-instance profiles of GPU i with their possible placements; how many, or < 0. */
    int (*mig_profiles)(struct gs_gpu_backend *b, int i, struct gs_gpu_profile *out, int cap);
    /* Enable or disable MIG mode (no instances may exist to disable). */
    int (*mig_set_mode)(struct gs_gpu_backend *b, int i, bool enable);
    /* Create a GPU instance of the profile at the placement start, with one compute instance
     * spanning it. */
    int (*mig_create)(struct gs_gpu_backend *b, int i, uint32_t profile_id, uint32_t start,
                      struct gs_mig_inst *out);
    int (*mig_destroy)(struct gs_gpu_backend *b, int i, uint32_t gi_id);
    /* Critical XIDs since the last call: up to cap (gpu, xid) pairs; waits at most timeout_ms
     * for the first one. Returns how many. */
    int (*xids)(struct gs_gpu_backend *b, int timeout_ms, int *gpu, uint64_t *xid, int cap);
    void (*close)(struct gs_gpu_backend *b);
};

struct gs_gpu_backend {
    const struct gs_gpu_ops *ops;
    void *impl;
};

struct gs_error;

/* NVML: never fails for a missing library (0 GPUs, *why says so); GS_ENOMEM only. */
int gs_gpu_open_nvml(struct gs_gpu_backend **out, char *why, unsigned why_size);
/* Fake from a JSON file. GS_EINVAL with file and field path on a bad description. */
int gs_gpu_open_fake(const char *path, struct gs_gpu_backend **out, struct gs_error *err);
void gs_gpu_close(struct gs_gpu_backend *b);

/* Catalog profile index of an NVML GPU-instance profile ID on a model, or -1. */
int gs_gpu_profile_index(int model, uint32_t profile_id);

#endif
