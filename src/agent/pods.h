/* pods.h - the node agent's pod tracker: the pods on this node and the devices they hold.
 *
 * Pods and their devices come from the kubelet's pod-resources API (podres_socket), then from
 * the API (the gpusched.io/devices annotation of pods on the node, formats/devices.h, for pods
 * the kubelet has not allocated yet) or, without a cluster, from a pods file. The kubelet, not
 * the scheduler, picks the device among equal ones, so once pod-resources shows what a pod
 * holds, its annotation is corrected to say so. Device IDs and MIG placements are told apart
 * through the GPU sampler (sampler.h).
 *
 * The tracker owns the pod list, under its lock: the agent's loop refreshes it; the device
 * plugins' threads (pick) and the exporter's (read) read it. It takes the sampler's lock under
 * its own, never the other way round. */
#ifndef GS_AGENT_PODS_H
#define GS_AGENT_PODS_H

#include "procpod.h"

#include <stdbool.h>

#define GS_AGENT_MAX_PODS 256

/* One device a pod holds (a pod holding several is several entries). */
struct gs_pod_dev {
    char ns[64], name[128], container[64];
    char uid[GS_PROCPOD_UID_SIZE]; /* metadata.uid; "" when only pod-resources named it */
    int gpu, mig_start;            /* GPU index, MIG placement start (-1: the GPU) */
    bool pending;                  /* not started yet: its devices are still to be allocated */
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
/* The devices the scheduler recorded for pods still waiting on this node, as the advertised
 * IDs of resource (a device plugin's pick callback, deviceplugin.h). Thread-safe. */
int gs_pods_pick(void *pods, const char *resource, int size, char ids[][96], int cap);
/* The devices pods hold, by UUID (a MIG instance's, or the GPU's), with "namespace/name" of
 * the pod; how many (<= cap). Thread-safe. */
int gs_pods_use(struct gs_pods *p, char (*uuid)[96], char (*pod)[200], int cap);
/* Parse a gpusched.io/devices annotation into GPU indexes (and MIG starts, -1 otherwise);
 * returns how many. */
int gs_pods_devices(const char *ann, int *gpu, int *mig_start, int cap);

#endif
