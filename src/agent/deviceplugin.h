/* deviceplugin.h - the kubelet device plugin (API v1beta1 over gRPC core, messages from
 * src/agent/proto/deviceplugin.proto through protobuf-c).
 *
 * One plugin serves one resource on its own Unix socket in the kubelet's plugin directory
 * and registers it with the kubelet (Registration/Register on kubelet.sock) after it serves.
 * ListAndWatch streams the full device list, again whenever a device's health changes;
 * Allocate answers NVIDIA_VISIBLE_DEVICES with the GPU or MIG UUIDs behind the IDs (replica
 * IDs "<uuid>::<k>" name their GPU), and for MPS replicas the pipe directory, its mount and
 * the per-client thread and memory limits; GetPreferredAllocation prefers the devices the
 * scheduler recorded for a pod still waiting on this node (pick callback), else packs
 * replicas onto the fewest GPUs. When the kubelet restarts (it removes the plugin sockets and
 * re-creates kubelet.sock) the plugin serves again and re-registers. Each plugin runs one
 * thread; device lists are swapped under a lock by the agent.
 *
 * Requests are the kubelet's, but nothing read from one is trusted: a malformed request (more
 * IDs than a plugin advertises or GS_DP_MAX_CONTAINERS containers, an ID twice, an allocation
 * size outside 1..available, must-include devices that are more than the allocation or not
 * available, an unknown device in Allocate) gets INVALID_ARGUMENT with the reason; unknown
 * available devices are never preferred; running out of memory gets RESOURCE_EXHAUSTED. */
#ifndef GS_AGENT_DEVICEPLUGIN_H
#define GS_AGENT_DEVICEPLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_DP_MAX_DEVS       128 /* devices (IDs) one plugin advertises */
#define GS_DP_MAX_CONTAINERS 64  /* container requests in one call (the kubelet sends one) */

struct gs_dp_device {
    char id[96];   /* advertised ID: GPU UUID, MIG UUID, or "<uuid>::<k>" */
    char uuid[96]; /* what NVIDIA_VISIBLE_DEVICES gets */
    bool healthy;
    int gpu; /* node-local GPU index, for packing */
};

struct gs_dp_mps {
    bool on;
    char pipe_dir[256]; /* host and container path of the MPS control daemon's pipes */
    int replicas;
    uint64_t mem_mib; /* of the GPU; each client gets mem/replicas */
};

/* Devices the scheduler recorded for a waiting pod: fills ids (advertised IDs), returns how
 * many (0 when none); user is the plugin's pick_user. */
typedef int (*gs_dp_pick_fn)(void *user, const char *resource, int size, char ids[][96], int cap);

struct gs_dp_plugin;

/* Start serving resource at dir/<socket> and register with dir/kubelet.sock. Returns NULL on
 * failure (why says what). */
struct gs_dp_plugin *gs_dp_start(const char *dir, const char *resource, const char *socket,
                                 const struct gs_dp_device *devs, int n,
                                 const struct gs_dp_mps *mps, gs_dp_pick_fn pick, void *pick_user,
                                 char *why, unsigned why_size);
/* Replace the device list (health changes): streams get the new list. */
void gs_dp_update(struct gs_dp_plugin *p, const struct gs_dp_device *devs, int n);
void gs_dp_stop(struct gs_dp_plugin *p);

/* ---- the answers without gRPC (for tests; gs_dp_start serves them) ---- */

/* The calls of the DevicePlugin service. */
enum gs_dp_call { GS_DP_OPTIONS = 0, GS_DP_LIST, GS_DP_PREFERRED, GS_DP_ALLOCATE, GS_DP_PRESTART };

/* A plugin that serves nothing (no socket, thread or registration), for gs__dp_answer.
 * Returns NULL when out of memory; free with gs__dp_free. */
struct gs_dp_plugin *gs__dp_new(const char *resource, const struct gs_dp_device *devs, int n,
                                const struct gs_dp_mps *mps, gs_dp_pick_fn pick, void *pick_user);
void gs__dp_free(struct gs_dp_plugin *p);

/* Answer one call: in[0..len) is the request as it came off the wire (ignored for OPTIONS and
 * LIST). Returns a grpc_status_code: 0 (OK) with *out (malloc'ed, the caller frees) holding
 * the packed answer of *out_len bytes, else INVALID_ARGUMENT (why says what was wrong),
 * RESOURCE_EXHAUSTED (out of memory) or UNIMPLEMENTED, with *out NULL. Thread-safe; calls
 * the pick callback without holding the plugin's lock. */
int gs__dp_answer(struct gs_dp_plugin *p, enum gs_dp_call call, const uint8_t *in, size_t len,
                  uint8_t **out, size_t *out_len, char *why, size_t why_size);

#endif
