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
 * Besides the GPU's own readings, a backend gives each MIG instance's (utilization and
 * memory of one GPU instance) and each process's on a GPU (PID, GPU instance, SM
 * utilization, memory), from which the agent tells pods sharing a GPU apart. What NVML does
 * not measure is said so (a false *_ok), never read as 0: a MIG instance's utilization comes
 * from GPM, which Hopper and newer offer and Ampere (A100, A30) does not; per-process
 * utilization is not offered in MIG mode.
 * Calls are not thread-safe; the agent serialises them. */
#ifndef GS_AGENT_GPU_H
#define GS_AGENT_GPU_H

#include "../core/catalog.h"
#include "../core/gpulink.h"

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
    uint8_t cc_major, cc_minor;    /* CUDA compute capability (7.0 Volta); 0.0: not known */
    /* links, as far as the backend knows them (false, "" and 0 where it does not) */
    bool numa_ok;
    uint8_t numa;                      /* NUMA node of the GPU, with numa_ok */
    char pci_path[160];                /* PCIe path from the root complex (inventory.h) */
    uint8_t nvlink[GS_AGENT_MAX_GPUS]; /* NVLink links to the GPU of each index */
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

/* One MIG GPU instance's own readings. */
struct gs_mig_metrics {
    bool util_ok;      /* utilization measured (GPM: Hopper and newer); false: not offered */
    uint32_t util_pct; /* SMs of the instance busy, 0..100, over the time since the last call */
    bool mem_ok;       /* memory measured (the MIG device's memory info) */
    uint64_t mem_used, mem_total; /* bytes */
};

#define GS_GPU_NO_INSTANCE UINT32_MAX /* a process on a GPU not in MIG mode */
#define GS_AGENT_MAX_PROCS 64         /* processes of one GPU looked at */

/* A compute process on a GPU. */
struct gs_gpu_proc {
    uint32_t pid;      /* in the host's PID namespace */
    uint32_t gi_id;    /* the GPU instance it runs in, or GS_GPU_NO_INSTANCE */
    bool util_ok;      /* false: no utilization offered for it (MIG mode, an old driver) */
    uint32_t util_pct; /* SM utilization, 0..100: its samples since the last call, averaged */
    bool mem_ok;
    uint64_t mem_used; /* bytes */
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
    /* GPU instance gi_id of GPU i: its readings (*out zeroed first, *_ok say what was
     * measured). GS_ENOTFOUND for an instance that is not there. */
    int (*mig_metrics)(struct gs_gpu_backend *b, int i, uint32_t gi_id, struct gs_mig_metrics *out);
    /* Compute processes on GPU i: how many (<= cap), or GS_ENOTFOUND when the backend cannot
     * list them (no process is then known: not the same as none). */
    int (*processes)(struct gs_gpu_backend *b, int i, struct gs_gpu_proc *out, int cap);
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
/* Close any backend (b->ops->close); NULL is nothing. */
void gs_gpu_close(struct gs_gpu_backend *b);

/* Catalog profile index of an NVML GPU-instance profile ID on a model, or -1. */
int gs_gpu_profile_index(int model, uint32_t profile_id);
/* Its catalog name ("3g.40gb"), or NULL for a profile or model the catalog does not know. */
const char *gs_gpu_profile_name(int model, uint32_t profile_id);
/* The CUDA compute capability of a catalog model as major * 10 + minor (60 for P100, 70 for
 * V100), or 0 for a model whose capability the table lacks (the trace's G2, G3, "other"). */
int gs_gpu_compute_capability(int model);

/* The links between GPUs info[0..n) (core/gpulink.h), out[index] for each GPU index below
 * GS_LINK_MAX_GPUS: NVLink as the lower of the two GPUs' counts, the PCIe level from their
 * paths and NUMA nodes; all zero where the backend knows nothing. */
void gs_gpu_links(const struct gs_gpu_info *info, int n, struct gs_gpu_link out[GS_LINK_MAX_GPUS]);

/* The ops of a backend whose calls are named <p>_count, <p>_info, ... <p>_close: every slot
 * filled, in one place for all backends. */
#define GS_GPU_OPS(p)                                                                              \
    .count = p##_count, .info = p##_info, .metrics = p##_metrics, .mig_list = p##_mig_list,        \
    .mig_profiles = p##_mig_profiles, .mig_set_mode = p##_mig_set_mode,                            \
    .mig_create = p##_mig_create, .mig_destroy = p##_mig_destroy, .xids = p##_xids,                \
    .mig_metrics = p##_mig_metrics, .processes = p##_processes, .close = p##_close

#endif
