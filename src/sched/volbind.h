/* volbind.h - a pending pod's volumes, judged and bound as kube-scheduler's volume plugins do:
 *
 *   VolumeBinding   every claim a pod uses (spec.volumes' persistentVolumeClaim, and a generic
 *                   ephemeral volume's <pod>-<volume> claim) must exist and not be deleting; a
 *                   bound claim's volume must exist and its required node affinity match the
 *                   node; an unbound claim of an Immediate class waits for the volume
 *                   controller; an unbound claim of a WaitForFirstConsumer class (delayed
 *                   binding) is matched on each node to the smallest available volume of its
 *                   class that fits (capacity, access modes, volume mode, selector, node
 *                   affinity; a volume pre-bound to it first), else provisioned there when its
 *                   class has a provisioner, the node is in the class's allowedTopologies and,
 *                   where the CSIDriver asks for capacity tracking, a CSIStorageCapacity of the
 *                   class reaching the node has room (maximumVolumeSize, else capacity); a claim
 *                   whose provisioning already chose a node (volume.kubernetes.io/selected-node)
 *                   fits that node alone
 *   VolumeZone      a bound volume's zone and region labels name the node's
 *   VolumeRestrictions  a ReadWriteOncePod claim another pod uses: the pod waits
 *   NodeVolumeLimits    a CSINode's allocatable count per driver: the node's attached CSI
 *                   volumes plus the pod's new ones may not exceed it
 *
 * One struct gs_volbind per scheduling cycle, built from the cycle's copy of the storage
 * objects and its snapshot; the pods already on nodes (and assumed there) count first, and each
 * placement reserves its volumes for the rest of the cycle. A placement's plan becomes the
 * writes the binder does before the Binding (PreBind): a chosen volume's spec.claimRef, a
 * provisioned claim's selected-node annotation; the pod is bound once all its claims are bound.
 *
 * struct gs_volassume outlives cycles: the volumes and provisionings chosen for pods whose
 * binding is in flight, until the informers show them (or the bind fails), so that the next
 * cycle does not give the same volume to another claim. Thread-safe.
 *
 * A gs_volbind belongs to the thread that runs the cycle. */
#ifndef GS_SCHED_VOLBIND_H
#define GS_SCHED_VOLBIND_H

#include "snapshot.h"
#include "tenancy.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>

/* Why a node cannot take a pod's volumes, in kube-scheduler's words (gs_volbind_reason). */
enum gs_volr {
    GS_VOLR_OK = 0,
    GS_VOLR_AFFINITY, /* "node(s) had volume node affinity conflict" */
    GS_VOLR_BIND,     /* "node(s) didn't find available persistent volumes to bind" */
    GS_VOLR_SPACE,    /* "node(s) did not have enough free storage" */
    GS_VOLR_ZONE,     /* "node(s) had no available volume zone" */
    GS_VOLR_LIMIT,    /* "node(s) exceed max volume count" */
    GS_VOLR_COUNT
};
const char *gs_volbind_reason(int r);

struct gs_volassume;
struct gs_volassume *gs_volassume_new(void);
void gs_volassume_free(struct gs_volassume *a);
/* Forget what was assumed for claim ns/name (its bind failed). */
void gs_volassume_drop(struct gs_volassume *a, const char *ns, const char *claim);

/* One pending pod's claims, resolved (gs_volbind_pod). */
struct gs_volpod {
    int n;
    bool check;                 /* some claim asks something of the node */
    int pvc[GS_MAX_POD_CLAIMS]; /* indices into the cycle's claims */
    int pv[GS_MAX_POD_CLAIMS];  /* its bound volume, or -1 */
    int sc[GS_MAX_POD_CLAIMS];  /* an unbound claim's class, or -1 */
    /* an unbound claim's, worked out once for every node (volbind.c's own): the node its
     * provisioning chose (-1: none yet, -2: a node the cycle does not hold) and the volumes
     * pre-bound to it */
    int32_t fixed[GS_MAX_POD_CLAIMS];
    int32_t pre[GS_MAX_POD_CLAIMS];
};

struct gs_volbind;
/* The cycle's volumes: po and sn are borrowed for the gs_volbind's life; assume (NULL: none)
 * is read now and pruned of what po shows done. NULL without memory. */
struct gs_volbind *gs_volbind_new(const struct gs_storage *po, const struct gs_snapshot *sn,
                                  struct gs_volassume *assume);
void gs_volbind_free(struct gs_volbind *vb);

/* Resolve pod p's claims into vp: 0 when it may be placed (vp->check: ask gs_volbind_node), 1
 * when it must wait everywhere, with why in upstream's words. */
int gs_volbind_pod(struct gs_volbind *vb, const struct gs_kube_pod *p, struct gs_volpod *vp,
                   char *why, size_t n);
/* Whether node (a snapshot index) can take the pod's volumes: GS_VOLR_OK or why not. */
int gs_volbind_node(struct gs_volbind *vb, const struct gs_volpod *vp, int node);
/* The pod (snapshot index pod) is placed on node: reserve its volumes for the rest of the
 * cycle and keep the plan for gs_volbind_writes. Returns 0, or GS_ENOMEM. */
int gs_volbind_place(struct gs_volbind *vb, int pod, const struct gs_volpod *vp, int node);

/* The binder's volume work for a placed pod, or NULL when it has none:
 * {"writes": [{"path", "body"}...] (merge patches), "wait": [{"namespace", "name"}...] (the
 * claims to see bound before the Binding), "timeout": seconds}. It records in the assume
 * table what it chose. */
json_t *gs_volbind_writes(struct gs_volbind *vb, int pod, double timeout_s);

#endif
