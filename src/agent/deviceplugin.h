/* deviceplugin.h - the kubelet device plugin (API v1beta1 over gRPC core, messages from
 * src/agent/proto/deviceplugin.proto through protobuf-c).
 *
 * One plugin serves one resource on its own Unix socket in the kubelet's plugin directory
 * and registers it with the kubelet (Registration/Register on kubelet.sock) after it serves.
 * ListAndWatch streams the full device list, again whenever a device's health changes.
 * A device entry is one ID (a GPU or MIG UUID, or a replica "<uuid>::<k>"), or a GPU's
 * thousandths (gpusched.io/gpu-milli): GS_DP_MILLI IDs "<id>::m0".."<id>::m999", so that a
 * fraction pod of M thousandths is given M IDs of one GPU.
 *
 * GetPreferredAllocation steers the kubelet to the devices the scheduler recorded for the pod
 * it is admitting (the pick hook: the device plugin API names no pod, the agent's pod tracker
 * resolves it), else, for whole GPUs on a node whose GPU links are known, the best-linked
 * set (NVLink, then PCIe and NUMA, as NVIDIA's device plugin's best-effort policy), else
 * packs onto the fewest GPUs. Allocate answers NVIDIA_VISIBLE_DEVICES with
 * the GPU or MIG UUIDs behind the IDs, then tells the agent what it gave (the allocated hook).
 * An MPS replica or a fraction runs as an MPS client of its GPU's control daemon: the answer
 * adds CUDA_MPS_PIPE_DIRECTORY with the daemon's pipe folder mounted (and its shared-memory
 * folder on /dev/shm), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
 * of its share (a replica: 1/replicas; a fraction: M/1000 of the GPU's threads and memory),
 * and is refused (FAILED_PRECONDITION) while that daemon does not run: no container is given
 * a dead pipe. When the kubelet restarts (it removes the plugin sockets and re-creates
 * kubelet.sock) the plugin serves again and re-registers. Each plugin runs one thread; device
 * lists are swapped under a lock by the agent.
 *
 * Requests are the kubelet's, but nothing read from one is trusted: a malformed request (more
 * IDs than a plugin can advertise or GS_DP_MAX_CONTAINERS containers, an ID twice, an
 * allocation size outside 1..available, must-include devices that are more than the allocation
 * or not available, an unknown device in Allocate, MPS replicas of two GPUs or a fraction of
 * 1000 thousandths or more in one container) gets INVALID_ARGUMENT with the reason; unknown
 * available devices are never preferred; running out of memory gets RESOURCE_EXHAUSTED. */
#ifndef GS_AGENT_DEVICEPLUGIN_H
#define GS_AGENT_DEVICEPLUGIN_H

#include "../core/gpulink.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_DP_MAX_DEVS       128  /* device entries one plugin holds */
#define GS_DP_MILLI          1000 /* IDs of a GPU's thousandths */
#define GS_DP_MAX_IDS        (16 * GS_DP_MILLI + GS_DP_MAX_DEVS) /* IDs a plugin may advertise */
#define GS_DP_MAX_CONTAINERS 64 /* container requests in one call (the kubelet sends one) */

struct gs_dp_device {
    char id[96];   /* advertised ID: GPU UUID, MIG UUID, or "<uuid>::<k>"; with milli, the
                      prefix of the GPU's thousandths "<id>::m<k>" */
    char uuid[96]; /* what NVIDIA_VISIBLE_DEVICES gets */
    bool healthy;
    bool milli;       /* stands for GS_DP_MILLI IDs, a GPU's thousandths */
    int gpu;          /* node-local GPU index, for packing and its MPS daemon */
    uint64_t mem_mib; /* the GPU's memory, for an MPS client's pinned memory limit */
};

/* How a plugin's devices are shared. */
enum gs_dp_share {
    GS_DP_PLAIN = 0, /* each device to one container (whole GPUs, MIG, time-slicing replicas) */
    GS_DP_MPS,       /* MPS replicas: each container 1/replicas of its GPU's daemon */
    GS_DP_FRACTION,  /* thousandths: a container M/1000 of its GPU's daemon */
};

/* What a plugin asks of the agent. Every hook may be NULL; they are called on the plugin's
 * thread without its lock and must be thread-safe. */
struct gs_dp_hooks {
    enum gs_dp_share sharing;
    int replicas; /* GS_DP_MPS: replicas of each GPU */
    /* The devices the scheduler recorded for the pod the kubelet is admitting now, asking
     * size IDs of resource: their UUIDs (GPU or MIG) into uuids; how many (0: none known). */
    int (*pick)(void *user, const char *resource, int size, char uuids[][96], int cap);
    /* Allocate gave a container of resource size IDs, of the devices uuids[0..n). */
    void (*allocated)(void *user, const char *resource, int size, char uuids[][96], int n);
    /* GPU gpu's live MPS control daemon: its pipe folder (the same path on the host and in
     * the container) and its shared-memory folder, each into size bytes. 0, or -1 when none
     * runs. */
    int (*mps_live)(void *user, int gpu, char *pipe, char *shm, size_t size);
    void *user;
    /* The links between the node's GPUs by GPU index (all zero: not known): whole GPUs the
     * scheduler did not name are preferred as the best-linked set (core/gpulink.h). */
    struct gs_gpu_link links[GS_LINK_MAX_GPUS];
};

struct gs_dp_plugin;

/* Start serving resource at dir/<socket> and register with dir/kubelet.sock; hooks may be
 * NULL (plain, no hooks). Returns NULL on failure (why says what). */
struct gs_dp_plugin *gs_dp_start(const char *dir, const char *resource, const char *socket,
                                 const struct gs_dp_device *devs, int n,
                                 const struct gs_dp_hooks *hooks, char *why, unsigned why_size);
/* Replace the device list (health changes): streams get the new list. */
void gs_dp_update(struct gs_dp_plugin *p, const struct gs_dp_device *devs, int n);
void gs_dp_stop(struct gs_dp_plugin *p);

/* ---- the answers without gRPC (for tests; gs_dp_start serves them) ---- */

/* The calls of the DevicePlugin service. */
enum gs_dp_call { GS_DP_OPTIONS = 0, GS_DP_LIST, GS_DP_PREFERRED, GS_DP_ALLOCATE, GS_DP_PRESTART };

/* A plugin that serves nothing (no socket, thread or registration), for gs__dp_answer.
 * Returns NULL when out of memory; free with gs__dp_free. */
struct gs_dp_plugin *gs__dp_new(const char *resource, const struct gs_dp_device *devs, int n,
                                const struct gs_dp_hooks *hooks);
void gs__dp_free(struct gs_dp_plugin *p);

/* Answer one call: in[0..len) is the request as it came off the wire (ignored for OPTIONS and
 * LIST). Returns a grpc_status_code: 0 (OK) with *out (malloc'ed, the caller frees) holding
 * the packed answer of *out_len bytes, else INVALID_ARGUMENT (why says what was wrong),
 * FAILED_PRECONDITION (an MPS daemon that does not run), RESOURCE_EXHAUSTED (out of memory) or
 * UNIMPLEMENTED, with *out NULL. Thread-safe; calls the hooks without the plugin's lock. */
int gs__dp_answer(struct gs_dp_plugin *p, enum gs_dp_call call, const uint8_t *in, size_t len,
                  uint8_t **out, size_t *out_len, char *why, size_t why_size);

#endif
