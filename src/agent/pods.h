/* pods.h - the node agent's pod tracker: the pods on this node and the devices they hold.
 *
 * Pods and their devices come from the kubelet's pod-resources API (podres_socket), then from
 * the API (the gpusched.io/devices annotation of pods on the node, formats/devices.h, for pods
 * the kubelet has not allocated yet) or, without a cluster, from a pods file. Device IDs and
 * MIG placements are told apart through the GPU sampler (sampler.h).
 *
 * The device plugin API names no pod, so the tracker says which pod the kubelet is admitting:
 * of the pods bound to this node (read from the API at that moment) whose limits and
 * annotation ask as many devices of the resource as the kubelet does, the one the kubelet's
 * pod-resources lists holding no device at all (the kubelet adds a pod to its pod manager
 * just before admitting it, the next only after); without pod-resources, the first bound not
 * allocated yet (PodScheduled's time, then creation, then namespace and name: a guess when
 * pods are bound in the same second, which the kubelet admits in any order).
 * Its recorded devices steer the kubelet's choice (pick); what Allocate gave is then noted
 * against it (allocated), so the next admission resolves to the next pod. Should the kubelet
 * still give a pod other devices (those recorded were taken or unhealthy), once
 * pod-resources shows what it holds its annotation is corrected to say so, and counted.
 *
 * The tracker owns the pod list, under its lock: the agent's loop refreshes it; the device
 * plugins' threads (pick) and the exporter's (read) read it. It takes the sampler's lock under
 * its own, never the other way round. */
#ifndef GS_AGENT_PODS_H
#define GS_AGENT_PODS_H

#include "procpod.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_AGENT_MAX_PODS 256

/* One device a pod holds (a pod holding several is several entries). */
struct gs_pod_dev {
    char ns[64], name[128], container[64];
    char uid[GS_PROCPOD_UID_SIZE]; /* metadata.uid; "" when only pod-resources named it */
    int gpu, mig_start;            /* GPU index, MIG placement start (-1: the GPU) */
    bool pending;                  /* not started yet: its devices are still to be allocated */
    bool allocated;                /* the kubelet's pod-resources lists it */
};

struct gs_pods_opts {
    const char *node;          /* NULL: no pods from the API */
    const char *podres_socket; /* NULL: not read */
    const char *pods_file;     /* without a cluster (JSON): pods with "devices" */
};

struct gs_pods;
struct gs_sampler;
struct gs_kube_client;

/* A tracker (kc may be NULL: no cluster). NULL when out of memory. */
struct gs_pods *gs_pods_new(const struct gs_pods_opts *o, struct gs_sampler *s,
                            struct gs_kube_client *kc);
void gs_pods_free(struct gs_pods *p);
/* Read the pods again (and correct the annotations pod-resources contradicts). When nothing
 * answers, what was known is kept. The loop's thread. */
void gs_pods_refresh(struct gs_pods *p);
/* A copy of the pod list into out; how many (<= cap). Thread-safe. */
int gs_pods_read(struct gs_pods *p, struct gs_pod_dev *out, int cap);
/* The devices the scheduler recorded for the pod the kubelet is admitting, asking size devices
 * of resource: their UUIDs (a GPU's or a MIG instance's) into uuids; how many (0: no such pod
 * known). A device plugin's pick hook (deviceplugin.h). Thread-safe. */
int gs_pods_pick(struct gs_pods *p, const char *resource, int size, char uuids[][96], int cap);
/* Allocate gave a container size devices of resource, uuids[0..n): noted against the pod
 * being admitted (the one whose recorded devices these are, else the first pick would name),
 * which later picks then pass over. A device plugin's allocated hook. Thread-safe. */
void gs_pods_allocated(struct gs_pods *p, const char *resource, int size, char uuids[][96], int n);
/* Annotations corrected to what the kubelet gave since the start. Thread-safe. */
uint64_t gs_pods_corrections(struct gs_pods *p);
/* The devices pods hold, by UUID (a MIG instance's, or the GPU's), with "namespace/name" of
 * the pod; how many (<= cap). Thread-safe. */
int gs_pods_use(struct gs_pods *p, char (*uuid)[96], char (*pod)[200], int cap);
/* Parse a gpusched.io/devices annotation into GPU indexes (and MIG starts, -1 otherwise);
 * returns how many. */
int gs_pods_devices(const char *ann, int *gpu, int *mig_start, int cap);

#endif
