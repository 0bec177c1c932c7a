/* kubeobj.h - Kubernetes objects as the API server serves them (JSON), read into the
 * engine's structs, and the JSON gpusched writes back (Binding, Event, status patches).
 *
 * Pods: containers' requests/limits for cpu, memory, nvidia.com/gpu and nvidia.com/mig-*
 * (extended resources must be integers; a request without a limit is rejected, a limit
 * without a request counts as both), nodeSelector, tolerations, schedulerName, priority,
 * the device annotation gpusched writes (GS_DEVICES_ANNOTATION), the claims its volumes use
 * (persistentVolumeClaim.claimName, and <pod>-<volume> for a generic ephemeral volume), the
 * ResourceClaims of spec.resourceClaims (DRA), the Workload API PodGroup of
 * spec.schedulingGroup, spec.schedulingGates (how many, and their names within a bound). Nodes:
 * allocatable resources, every label (a Node owns its label set: gs_kube_node_release), taints,
 * unschedulable. Every error names the object and the field path. Readers take a parsed
 * jansson object; a Pod is plain data (no heap). */
#ifndef GS_KUBEOBJ_H
#define GS_KUBEOBJ_H

#include "../core/engine.h"
#include "../core/workload.h"
#include "../core/constraints.h"
#include "devices.h"
#include "inventory.h"
#include "migdesired.h"
#include "topoobj.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define GS_KNAME_MAX            254
#define GS_MAX_TOLERATIONS      32
#define GS_MAX_TAINTS           64
#define GS_KUBE_MAX_NODE_LABELS 4096 /* a bound on input, far above real nodes (~100) */
#define GS_MAX_EXT              16
#define GS_MAX_POD_LABELS       8
#define GS_QUEUE_LABEL          "gpusched.io/queue"
#define GS_POD_GROUP_LABEL      "scheduling.x-k8s.io/pod-group"

#define GS_MAX_POD_RES    8  /* kinds of other resources one pod asks */
#define GS_MAX_POD_CLAIMS 8  /* PersistentVolumeClaims one pod uses */
#define GS_MAX_POD_DRA    4  /* ResourceClaims one pod uses (spec.resourceClaims) */
#define GS_MAX_NODE_RES   32 /* kinds of other resources a node has */

#define GS_POD_GATES_TEXT 200 /* the names of a pod's scheduling gates, as text */

/* A resource the engine does not model (ephemeral-storage, hugepages-2Mi, rdma/ib, ...), in
 * its base unit (bytes, or a count). */
struct gs_kube_res {
    char name[64];
    int64_t value;
};

/* One container's request of an extended resource (a name with a domain outside kubernetes.io,
 * or deviceclass.resource.kubernetes.io/<class>) among the other resources, as DRA serves
 * extended resources from a DeviceClass (formats/draext.h). */
#define GS_MAX_POD_XREQ 8
struct gs_kube_xreq {
    char container[64];
    char name[64];
    int64_t count;
    uint8_t index; /* in spec.initContainers followed by spec.containers */
    uint8_t ridx;  /* the name's place among the container's requests, sorted */
    uint8_t init;  /* 0 a container, 1 an init container, 2 a sidecar (restartPolicy Always) */
};

struct gs_toleration {
    char key[GS_LABEL_KEY_MAX];
    char op[16]; /* Equal | Exists */
    char value[GS_LABEL_VAL_MAX];
    char effect[24];
};

struct gs_kube_pod {
    char ns[64];
    char name[GS_KNAME_MAX];
    char uid[64];
    char node[GS_KNAME_MAX];
    char nominated[GS_KNAME_MAX]; /* status.nominatedNodeName */
    char scheduler[64];
    char phase[16];
    char rv[32];
    char priority_class[64];
    char devices[256]; /* the gpusched.io/devices annotation, if any */
    int32_t priority;
    bool terminating;
    bool preempt_never; /* spec.preemptionPolicy: Never */
    double start_s;     /* status.startTime, else metadata.creationTimestamp (Unix seconds) */
    struct gs_request req;
    int nlabels;
    struct gs_label labels[GS_MAX_POD_LABELS];
    int ntol;
    struct gs_toleration tol[GS_MAX_TOLERATIONS];
    bool sel_partial;  /* req.sel holds only part of spec.nodeSelector (the constraints hold
                        * all of it) */
    int64_t mem_bytes; /* the memory request to the byte (req.mem_mib is rounded down) */
    int nres;
    struct gs_kube_res res[GS_MAX_POD_RES]; /* requests of the other resources */
    int nxreq; /* containers' requests of extended resources (the first GS_MAX_POD_XREQ) */
    struct gs_kube_xreq xreq[GS_MAX_POD_XREQ];
    int nclaims; /* spec.volumes' PersistentVolumeClaims */
    char claims[GS_MAX_POD_CLAIMS][GS_KNAME_MAX];
    /* spec.resourceClaims: the ResourceClaim each names (resourceClaimName, or for a
     * resourceClaimTemplateName the claim status.resourceClaimStatuses records; "" while the
     * controller has not made it yet) */
    int ndra;
    char dra[GS_MAX_POD_DRA][GS_KNAME_MAX];
    /* spec.schedulingGates: how many (a pod with any is never scheduled; the API server lets
     * them be removed, never added) and their names, space-separated as kube-scheduler lists
     * them; a list longer than the field ends in "..." */
    int ngates;
    char gates[GS_POD_GATES_TEXT];
    /* non-empty: why gpusched cannot model the pod exactly (more tolerations or claims than
     * it keeps); it is then not scheduled, and says why */
    char refused[160];
    /* set (by the scheduler's store) for a pod kept although its request could not be read
     * (gpusched.io/gpu-milli out of 1..999, two kinds of GPU device...): refused says why, with
     * the field and what it accepts; the pod asks no GPU and is never placed */
    bool unreadable;
    /* spec.schedulingGroup.podGroupName: its gang in the Workload API (formats/workloadobj.h;
     * "": none) */
    char group[GS_KNAME_MAX];
    /* its topology ask: Kueue's podset-*-topology annotations (formats/topoobj.h) */
    struct gs_kube_topoask topo;
    /* Kubernetes placement constraints (node affinity, pod (anti-)affinity, spread, host
     * ports, every label), read only on request (gs_kube_pod_read_constraints): shared and
     * immutable, counted references. A by-value copy does not own a reference: only copies
     * that take one (gs_kube_pod_ref) may use k, and they drop it (gs_kube_pod_release). */
    struct gs_kube_kpod *k;
    char k_error[200]; /* why the constraints could not be read */
};

/* A pod's constraints with their reference count. */
struct gs_kube_kpod {
    long refs;
    struct gs_kpod kp;
};

struct gs_taint {
    char key[GS_LABEL_KEY_MAX];
    char value[GS_LABEL_VAL_MAX];
    char effect[24];
};

struct gs_kube_ext {
    char name[64]; /* e.g. nvidia.com/mig-3g.40gb */
    int64_t count;
};

struct gs_kube_node {
    char name[GS_KNAME_MAX];
    char uid[64];
    char rv[32];
    bool unschedulable;
    int8_t ready; /* its Ready condition: 1 True, 0 False or Unknown, -1 none reported */
    int64_t cpu_milli, mem_mib, pods; /* mem_mib rounded up; mem_bytes exact */
    int64_t mem_bytes;
    int64_t gpus; /* allocatable nvidia.com/gpu */
    int next;
    struct gs_kube_ext ext[GS_MAX_EXT]; /* nvidia.com/mig-* */
    struct gs_labels labels;            /* every label, owned (gs_kube_node_release) */
    int nres;
    struct gs_kube_res res[GS_MAX_NODE_RES]; /* allocatable of the other resources */
    int ntaints;
    struct gs_taint taints[GS_MAX_TAINTS];
    /* non-empty: why gpusched cannot model the node exactly (more taints or MIG resources
     * than it keeps); the node is then known (its pods are counted) but gets no new pods */
    char refused[160];
    /* the agent's inventory annotation, read (shared and immutable: copies of the node take a
     * reference, gs_kube_node_release drops it); NULL when absent or invalid */
    const struct gs_inventory *inv;
    char inv_error[200]; /* why the annotation present could not be used */
    /* the gpusched.io/mig-desired annotation (dynamic MIG), read with the inventory and shared
     * with it; NULL when absent, invalid or without an inventory */
    const struct gs_mig_desired *desired;
};

struct gs_error;

/* Whether DRA may serve pod p: it names ResourceClaims, or asks extended resources a
 * DeviceClass may back (formats/draext.h). */
static inline bool gs_kube_pod_dra(const struct gs_kube_pod *p)
{
    return p->ndra > 0 || p->nxreq > 0;
}

/* Read a Pod. Bad resource values are GS_EINVAL with "ns/name: spec.containers[0].resources
 * .limits.nvidia.com/gpu: ...". */
int gs_kube_pod_read(const json_t *obj, struct gs_kube_pod *out, struct gs_error *err);
/* Read a Node into out (not initialised; on success it owns its labels: release it with
 * gs_kube_node_release; on error it holds nothing). Every label is kept. */
int gs_kube_node_read(const json_t *obj, struct gs_kube_node *out, struct gs_error *err);
void gs_kube_node_release(struct gs_kube_node *n);
/* dst (initialised or zeroed; released first) takes what src owns; src is left empty. */
void gs_kube_node_move(struct gs_kube_node *dst, struct gs_kube_node *src);
/* dst (initialised or zeroed) becomes an independent copy of src. 0 or GS_ENOMEM. */
int gs_kube_node_copy(struct gs_kube_node *dst, const struct gs_kube_node *src);
const char *gs_kube_label(const struct gs_kube_node *n, const char *key);
/* Read the pod's placement constraints (formats/podspec) into p->k, a new reference p owns;
 * on a refusal p->k is NULL and p->k_error says why. Returns 0, GS_EINVAL or GS_ENOMEM. */
int gs_kube_pod_read_constraints(const json_t *obj, struct gs_kube_pod *p);
/* Take a reference to p->k (a copy of the pod that will use it), drop one. */
void gs_kube_pod_ref(struct gs_kube_pod *p);
void gs_kube_pod_release(struct gs_kube_pod *p);
/* A pod's label value, or NULL (labels longer than GS_LABEL_*_MAX are not kept). */
const char *gs_kube_pod_label(const struct gs_kube_pod *p, const char *key);
/* RFC 3339 time ("2026-11-29T19:20:00Z", fractions and offsets allowed) as Unix seconds;
 * returns 0 or GS_EINVAL. */
int gs_kube_parse_time(const char *s, double *out);
/* True when the pod tolerates every NoSchedule/NoExecute taint of the node, and, when the node
 * is cordoned (spec.unschedulable), node.kubernetes.io/unschedulable:NoSchedule. */
bool gs_kube_tolerates(const struct gs_kube_pod *p, const struct gs_kube_node *n);

/* Now as a MicroTime (RFC 3339 with microseconds, UTC), as Events and Leases carry it. */
void gs_kube_micro_time(char *out, size_t n);

/* Writers (new references; NULL on allocation failure). */
json_t *gs_kube_binding(const struct gs_kube_pod *p, const char *node);
/* events.k8s.io/v1 Event regarding a pod. */
json_t *gs_kube_event(const struct gs_kube_pod *p, const char *type, const char *reason,
                      const char *action, const char *note, const char *instance);
/* events.k8s.io/v1 Event regarding a Node (in the default namespace, as the kubelet's are). */
json_t *gs_kube_node_event(const struct gs_kube_node *n, const char *type, const char *reason,
                           const char *action, const char *note, const char *instance);
/* Strategic-merge patch of status: PodScheduled=False/Unschedulable with a message. */
json_t *gs_kube_unschedulable_patch(const char *message);
/* Strategic-merge patch of status for a preemptor: nominatedNodeName and PodScheduled=False
 * with a message (node NULL clears the nomination). */
json_t *gs_kube_nominated_patch(const char *node, const char *message);
/* DeleteOptions with a UID precondition (the API server answers 409 when the pod with that
 * name is no longer the one meant) and a grace period (negative: the pod's own). */
json_t *gs_kube_delete_options(const char *uid, long grace_s);
/* Merge patch of a Node: one label set (value NULL removes it; key NULL leaves labels) and
 * spec.unschedulable (cordon 1, uncordon 0, leave -1). */
json_t *gs_kube_node_patch(const char *label_key, const char *label_value, int unschedulable);
/* Metadata patch setting one annotation. */
json_t *gs_kube_annotation_patch(const char *key, const char *value);
/* Devices annotation text for an allocation (formats/devices.h): "gpu=0,1" or
 * "mig=0:3g.40gb@4" or "milli=0:500" or "replica=2". GPU indexes are the node's physical indexes;
 * on a node laid out from counts (layout_guessed) they are unknown and the text is empty. */
void gs_kube_devices_str(const struct gs_cluster *c, const struct gs_alloc *a, char *out,
                         unsigned size);

#endif
