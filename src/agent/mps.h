/* mps.h - the node agent's MPS control daemons: one `nvidia-cuda-mps-control -d` per GPU that
 * shares its compute through MPS (MPS replicas, gpusched.io/gpu-milli fractions), run and
 * watched as NVIDIA's device plugin runs them (its mps-control-daemon), whose place the agent
 * takes on a gpusched node.
 *
 * A GPU's daemon runs with CUDA_VISIBLE_DEVICES set to the GPU's UUID (its clients see the GPU
 * as device 0), CUDA_MPS_PIPE_DIRECTORY <root>/<uuid>/pipe and CUDA_MPS_LOG_DIRECTORY
 * <root>/<uuid>/log; <root>/shm is the clients' shared memory with its server. Once it runs,
 * the control commands `set_default_active_thread_percentage N` and
 * `set_default_device_pinned_mem_limit 0 <M>M` set the defaults of its servers (the share of
 * one replica; a fraction's client narrows them in its own environment). Every round each
 * daemon is checked: its PID (from nvidia-cuda-mps-control.pid in the pipe folder) alive and
 * `get_default_active_thread_percentage` answered within the timeout. A daemon that died or
 * hangs (killed then) is down until it is started again, after a backoff that doubles from
 * backoff_s to backoff_max_s while it keeps failing. A daemon already running when the agent
 * starts (an agent restart) is kept and configured again, so its clients keep running.
 *
 * MPS needs Volta or newer (compute capability 7.0): gs_mps_supported says so of a GPU.
 *
 * The component owns its daemons' state under its lock. The agent's loop (one thread) calls
 * set, round and free, which run the control program and wait on it (at most the timeout a
 * call); any thread asks whether a GPU's daemon is live (gs_mps_live). */
#ifndef GS_AGENT_MPS_H
#define GS_AGENT_MPS_H

#include "gpu.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_mps_opts {
    const char *control;  /* the control program: a path, or a name looked up in PATH; NULL:
                             "nvidia-cuda-mps-control" */
    const char *root;     /* host folder of the pipes, logs and shared memory; NULL:
                             /run/nvidia/mps */
    double timeout_s;     /* a control command not answered this long: the daemon hangs; <= 0:
                             5 */
    double backoff_s;     /* first wait before starting a failed daemon again; <= 0: 1 */
    double backoff_max_s; /* the longest; <= 0: 60 */
};

/* What one daemon is for. */
struct gs_mps_want {
    int gpu;          /* node-local index */
    char uuid[96];    /* the GPU's UUID */
    int thread_pct;   /* the servers' default active thread percentage, 1..100 */
    uint64_t mem_mib; /* their default pinned device memory limit; 0: none */
};

struct gs_mps;
struct gs_error;

/* Compute capability 7.0 (Volta) or newer, or one the backend did not say (0.0). When not, why
 * (may be NULL) names the GPU and the rule. */
bool gs_mps_supported(const struct gs_gpu_info *g, char *why, size_t why_size);

/* A component over opts (copied; its strings must outlive it). GS_ENOMEM only. */
int gs_mps_new(const struct gs_mps_opts *o, struct gs_mps **out, struct gs_error *err);
/* Ask each running daemon to quit (killed after the timeout), then free. NULL is nothing. */
void gs_mps_free(struct gs_mps *m);
/* The daemons wanted: want[0..n) (at most GS_AGENT_MAX_GPUS); a daemon no longer wanted is
 * stopped, one whose defaults changed is configured again. Nothing starts before the next
 * round. The loop's thread. */
void gs_mps_set(struct gs_mps *m, const struct gs_mps_want *want, int n);
/* Start what is due, check what runs, stop what hangs. Returns true when a daemon came up or
 * went down. The loop's thread. */
bool gs_mps_round(struct gs_mps *m);
/* Whether GPU gpu's daemon runs (as of the last round and its PID now): 0 with its pipe and
 * shared-memory folders (each into size bytes), or -1. Thread-safe. */
int gs_mps_live(struct gs_mps *m, int gpu, char *pipe, char *shm, size_t size);
/* How many daemons run. Thread-safe. */
int gs_mps_running(struct gs_mps *m);

#endif
