/* volobj.h - the storage objects a pod's volumes depend on, read from the API server's JSON,
 * as kube-scheduler's volume plugins (VolumeBinding, VolumeZone, VolumeRestrictions,
 * NodeVolumeLimits) read them:
 *
 *   PersistentVolumeClaim (v1): metadata.namespace/name/uid/resourceVersion, deletionTimestamp,
 *     the annotation volume.kubernetes.io/selected-node, spec.volumeName,
 *     spec.storageClassName (else the legacy annotation volume.beta.kubernetes.io/storage-class),
 *     spec.accessModes, spec.volumeMode, spec.resources.requests.storage, spec.selector,
 *     status.phase
 *   PersistentVolume (v1): metadata.name/uid/resourceVersion/labels (the zone and region ones),
 *     spec.capacity.storage, spec.accessModes, spec.volumeMode, spec.storageClassName,
 *     spec.claimRef (namespace, name, uid), spec.csi.driver/volumeHandle,
 *     spec.nodeAffinity.required.nodeSelectorTerms (ORed terms of ANDed matchExpressions and
 *     matchFields), status.phase
 *   StorageClass (storage.k8s.io/v1): metadata.name, provisioner, volumeBindingMode,
 *     allowedTopologies[].matchLabelExpressions[] {key, values}
 *   CSIDriver (storage.k8s.io/v1): metadata.name, spec.storageCapacity
 *   CSIStorageCapacity (storage.k8s.io/v1): metadata.namespace/name, storageClassName,
 *     nodeTopology (a label selector), capacity, maximumVolumeSize
 *   CSINode (storage.k8s.io/v1): metadata.name (its node's), spec.drivers[] {name,
 *     allocatable.count}
 *
 * Everything is checked here and errors name the object and the field path; lists and strings
 * are bounded (more is GS_EINVAL). A claim, volume or class whose identity was read but not the
 * rest comes back with the error and its identity and `refused` filled (the message without
 * the object's name): the scheduler keeps it so, and a pod that uses it waits saying why,
 * rather than finding it missing. Plain structs, no heap. */
#ifndef GS_VOLOBJ_H
#define GS_VOLOBJ_H

#include "kubeobj.h"
#include "labelsel.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>

/* Access modes, as bits */
enum {
    GS_ACCESS_RWO = 1,  /* ReadWriteOnce */
    GS_ACCESS_ROX = 2,  /* ReadOnlyMany */
    GS_ACCESS_RWX = 4,  /* ReadWriteMany */
    GS_ACCESS_RWOP = 8, /* ReadWriteOncePod */
};

#define GS_VOL_STR      128 /* class, provisioner, driver names, uids, resource versions */
#define GS_VOL_MAX_SEL  8
#define GS_VOL_MAX_TOPO 4 /* allowedTopologies terms, and requirements per term */
#define GS_VOL_MAX_VALS 8
#define GS_VOL_MAX_DRV  8 /* drivers of one CSINode */

#define GS_ANN_SELECTED_NODE "volume.kubernetes.io/selected-node"
#define GS_VOL_REFUSED       200 /* why an object cannot be used */

/* A PersistentVolumeClaim. */
struct gs_kube_pvc {
    char ns[64];
    char name[GS_KNAME_MAX];
    char uid[GS_VOL_STR];
    char rv[GS_VOL_STR];
    char volume[GS_KNAME_MAX]; /* spec.volumeName; empty: not bound */
    bool bound;                /* status.phase Bound (and a volume named) */
    bool deleting;             /* metadata.deletionTimestamp */
    bool has_class;            /* a class is named (an empty name is "no class") */
    bool block;                /* spec.volumeMode Block */
    uint8_t access;            /* GS_ACCESS_* bits */
    char cls[GS_VOL_STR];
    char selected_node[GS_KNAME_MAX]; /* the annotation volume.kubernetes.io/selected-node */
    int64_t request;                  /* spec.resources.requests.storage, bytes (0: none) */
    int nsel;
    struct gs_sel_req sel[GS_VOL_MAX_SEL]; /* spec.selector on the volumes' labels */
    char refused[GS_VOL_REFUSED];          /* non-empty: its spec could not be read: why */
};

#define GS_PV_MAX_TERMS 4
#define GS_PV_MAX_REQS  4 /* per term, matchExpressions and matchFields together */
#define GS_PV_MAX_VALS  8

/* One node selector requirement: op is an enum gs_kop (core/constraints.h). */
struct gs_pv_req {
    char key[GS_LABEL_KEY_MAX];
    uint8_t op;
    bool field; /* matchFields: key is metadata.name */
    uint8_t nval;
    int64_t num; /* Gt / Lt */
    char val[GS_PV_MAX_VALS][GS_LABEL_VAL_MAX];
};

struct gs_pv_term {
    int nreqs;
    struct gs_pv_req reqs[GS_PV_MAX_REQS];
};

#define GS_PV_MAX_LABELS 16

struct gs_pv_label {
    char key[GS_LABEL_KEY_MAX];
    char val[GS_LABEL_VAL_MAX];
};

enum gs_pv_phase { GS_PV_PENDING = 0, GS_PV_AVAILABLE, GS_PV_BOUND, GS_PV_RELEASED, GS_PV_FAILED };

/* A PersistentVolume. */
struct gs_kube_pv {
    char name[GS_KNAME_MAX];
    char uid[GS_VOL_STR];
    char rv[GS_VOL_STR];
    uint8_t phase; /* enum gs_pv_phase */
    uint8_t access;
    bool block;
    bool has_class;
    bool deleting;
    char cls[GS_VOL_STR];
    int64_t capacity;                                                   /* bytes */
    char claim_ns[64], claim_name[GS_KNAME_MAX], claim_uid[GS_VOL_STR]; /* spec.claimRef */
    char csi_driver[GS_VOL_STR], csi_handle[GS_KNAME_MAX];
    int nlabels; /* its labels: the zone and region ones first, then others while they fit */
    bool labels_partial; /* some labels did not fit: a claim's selector cannot match it */
    struct gs_pv_label labels[GS_PV_MAX_LABELS];
    int nterms;
    struct gs_pv_term terms[GS_PV_MAX_TERMS];
    char refused[GS_VOL_REFUSED]; /* non-empty: its spec could not be read: why */
};

enum gs_binding_mode { GS_BIND_IMMEDIATE = 0, GS_BIND_WAIT_FOR_FIRST_CONSUMER };

struct gs_topo_req {
    char key[GS_LABEL_KEY_MAX];
    int nval;
    char val[GS_VOL_MAX_VALS][GS_LABEL_VAL_MAX];
};

struct gs_topo_term {
    int nreqs;
    struct gs_topo_req reqs[GS_VOL_MAX_TOPO];
};

/* A StorageClass. */
struct gs_kube_sc {
    char name[GS_VOL_STR];
    char provisioner[GS_VOL_STR];
    uint8_t mode; /* enum gs_binding_mode */
    int nterms;   /* allowedTopologies (0: any node) */
    struct gs_topo_term terms[GS_VOL_MAX_TOPO];
    char refused[GS_VOL_REFUSED]; /* non-empty: the rest could not be read: why */
};

/* A CSIDriver. */
struct gs_kube_csidriver {
    char name[GS_VOL_STR];
    bool capacity; /* spec.storageCapacity: the scheduler checks CSIStorageCapacity */
};

/* A CSIStorageCapacity. */
struct gs_kube_csicap {
    char ns[64];
    char name[GS_KNAME_MAX];
    char cls[GS_VOL_STR];
    int64_t capacity; /* bytes; -1: not reported */
    int64_t max_size; /* maximumVolumeSize; -1: not reported */
    int nsel;
    struct gs_sel_req sel[GS_VOL_MAX_SEL]; /* nodeTopology */
    bool any_node;                         /* nodeTopology absent: no node */
};

struct gs_csinode_driver {
    char name[GS_VOL_STR];
    int32_t count; /* allocatable.count; -1: no limit */
};

/* A CSINode. */
struct gs_kube_csinode {
    char name[GS_KNAME_MAX];
    int ndrivers;
    struct gs_csinode_driver drivers[GS_VOL_MAX_DRV];
};

struct gs_error;

int gs_kube_pvc_read(const json_t *obj, struct gs_kube_pvc *out, struct gs_error *err);
/* Bounded: more than GS_PV_MAX_TERMS terms, GS_PV_MAX_REQS requirements in a term or
 * GS_PV_MAX_VALS values is GS_EINVAL naming the field path, as is an empty term list. */
int gs_kube_pv_read(const json_t *obj, struct gs_kube_pv *out, struct gs_error *err);
int gs_kube_sc_read(const json_t *obj, struct gs_kube_sc *out, struct gs_error *err);
int gs_kube_csidriver_read(const json_t *obj, struct gs_kube_csidriver *out, struct gs_error *err);
int gs_kube_csicap_read(const json_t *obj, struct gs_kube_csicap *out, struct gs_error *err);
int gs_kube_csinode_read(const json_t *obj, struct gs_kube_csinode *out, struct gs_error *err);

/* Whether node n may hold the volume: no required affinity, or any non-empty term whose
 * every matchExpressions requirement holds on its labels. matchFields are ignored, as
 * kube-scheduler ignores them for a volume (it matches the terms against the node's labels
 * alone), so a term of matchFields alone matches every node. */
bool gs_kube_pv_node_matches(const struct gs_kube_pv *pv, const struct gs_kube_node *n);
/* VolumeZone: every zone or region label of the volume (topology.kubernetes.io/zone and
 * /region, and their failure-domain.beta.kubernetes.io forms; a value may list several joined
 * by "__") names the node's value of the same label. */
bool gs_kube_pv_zone_matches(const struct gs_kube_pv *pv, const struct gs_kube_node *n);
/* The value of label key on the volume (among those kept), or NULL. */
const char *gs_kube_pv_label(const void *pv, const char *key);
/* Whether the class allows node n: no allowedTopologies, or a term whose every requirement
 * names the node's value of its key. */
bool gs_kube_sc_node_allowed(const struct gs_kube_sc *sc, const struct gs_kube_node *n);
/* Whether the capacity object describes storage node n reaches (its nodeTopology matches). */
bool gs_kube_csicap_node_matches(const struct gs_kube_csicap *c, const struct gs_kube_node *n);
/* A claim's access modes as upstream words them ("ReadWriteOnce,ReadWriteOncePod"). */
void gs_access_str(uint8_t access, char *out, size_t n);

#endif
