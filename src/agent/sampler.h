/* sampler.h - the node agent's GPU sampler with health: the one reader of the GPU backend
 * for the agent's loop. Every round it reads each GPU's metrics, MIG layout and the XIDs
 * since the last round, and decides each GPU's health: an XID outside NVIDIA's default ignore
 * list (13, 31, 43, 45, 68, 109, plus the configured ones) makes it Unhealthy for xid_hold_s
 * after the last one; a volatile uncorrected ECC count at or over the ECC threshold, or a
 * temperature at or over the temperature threshold, makes it Unhealthy while it lasts. It
 * also reads what each GPU's tenants use: every MIG instance's readings and every process
 * with the pod UID its cgroup (under proc_root) names.
 *
 * The sampler owns those samples and the health state, under its lock. The agent's loop (one
 * thread) calls round, tenants and relayout; any thread reads a copy (gs_sampler_read) or asks
 * about one device (locate, uuid, profile). */
#ifndef GS_AGENT_SAMPLER_H
#define GS_AGENT_SAMPLER_H

#include "gpu.h"
#include "procpod.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_sampler_opts {
    uint64_t ecc_threshold;  /* 0: no ECC check */
    uint32_t temp_threshold; /* Celsius; 0: no temperature check */
    double xid_hold_s;
    int nignore;
    const uint64_t *ignore_xids; /* on top of NVIDIA's defaults */
    const char *proc_root;       /* the host's /proc; NULL: "/proc" */
};

struct gs_gpu_health {
    bool healthy;
    char why[160];
    double last_xid_t;
    uint64_t last_xid;
    uint64_t xid_count;
};

/* What each GPU's tenants use: every MIG instance's readings and every process with the pod
 * UID its cgroup names ("" for none). */
struct gs_inst_reading {
    uint32_t gi_id;
    struct gs_mig_metrics m;
};
struct gs_tenants {
    int ninst[GS_AGENT_MAX_GPUS];
    struct gs_inst_reading inst[GS_AGENT_MAX_GPUS][GS_AGENT_MAX_INST];
    int nproc[GS_AGENT_MAX_GPUS]; /* < 0: the backend cannot list them */
    struct gs_gpu_proc proc[GS_AGENT_MAX_GPUS][GS_AGENT_MAX_PROCS];
    char proc_uid[GS_AGENT_MAX_GPUS][GS_AGENT_MAX_PROCS][GS_PROCPOD_UID_SIZE];
};

/* The GPUs as last sampled (a copy: the reader's own). A GPU not measured yet (or whose last
 * reading failed) has no figures: measured[i] is false and m[i] and h[i] say nothing. */
struct gs_gpus {
    int n;
    struct gs_gpu_info info[GS_AGENT_MAX_GPUS];
    bool measured[GS_AGENT_MAX_GPUS];
    struct gs_gpu_metrics m[GS_AGENT_MAX_GPUS];
    int ninst[GS_AGENT_MAX_GPUS];
    struct gs_mig_inst inst[GS_AGENT_MAX_GPUS][GS_AGENT_MAX_INST];
    struct gs_gpu_health h[GS_AGENT_MAX_GPUS];
    struct gs_tenants t;
};

struct gs_sampler;

/* A sampler of b (which outlives it), with each GPU's description read and all healthy. NULL
 * when out of memory. */
struct gs_sampler *gs_sampler_new(struct gs_gpu_backend *b, const struct gs_sampler_opts *o);
void gs_sampler_free(struct gs_sampler *s);

/* The XIDs since the last call (waited for up to wait_ms), each critical one held against its
 * GPU's health from now; returns how many critical ones came. The loop's thread. */
int gs_sampler_xids(struct gs_sampler *s, int wait_ms);
/* Each GPU's metrics and layout read now; with judge, its health decided from them and its
 * XIDs. The loop's thread. */
void gs_sampler_measure(struct gs_sampler *s, bool judge);
/* Both: XIDs (waited for up to wait_ms), then metrics, layouts and health. The loop's thread. */
void gs_sampler_round(struct gs_sampler *s, int wait_ms);
/* Each GPU's processes with their pods and each MIG instance's readings. The loop's thread. */
void gs_sampler_tenants(struct gs_sampler *s);
/* The MIG modes and instances again (after a MIG change). The loop's thread. */
void gs_sampler_relayout(struct gs_sampler *s);

/* How many GPUs (fixed at gs_sampler_new). Thread-safe. */
int gs_sampler_count(const struct gs_sampler *s);
/* A copy of everything. Thread-safe. */
void gs_sampler_read(struct gs_sampler *s, struct gs_gpus *out);
/* Each GPU's health into healthy (n of them); returns n. Thread-safe. */
int gs_sampler_health(struct gs_sampler *s, bool *healthy, int cap);
/* The GPU (and MIG placement start, -1 for a whole GPU) behind a device ID: a GPU UUID, one of
 * its replicas "<uuid>::<k>", or a MIG UUID. 0, or -1 for a device not on these GPUs.
 * Thread-safe. */
int gs_sampler_locate(struct gs_sampler *s, const char *id, int *gpu, int *start);
/* The UUID of GPU gpu (start < 0) or of its MIG instance at start into out (96 bytes). 0, or
 * -1 when there is no such GPU or instance (yet). Thread-safe. */
int gs_sampler_uuid(struct gs_sampler *s, int gpu, int start, char *out);
/* The catalog profile name of GPU gpu's MIG instance at start into out. 0, or -1 when there
 * is no such instance or the catalog does not know its profile. Thread-safe. */
int gs_sampler_profile(struct gs_sampler *s, int gpu, int start, char *out, size_t size);

#endif
