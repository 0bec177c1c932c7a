/* tenantobj.h - the objects that shape tenancy, read from the API server's JSON:
 *
 *   GPUQueue (gpusched.io/v1alpha1, cluster-scoped; deploy/crds/gpuqueue.yaml):
 *     spec: {parent, deserved: {resource: quantity}, limit: {...}, overQuotaWeight,
 *            priority, namespaces: [ns...]}   # pods of these namespaces default to it
 *   ResourceQuota (v1): spec.hard, as the article's gpu-quota-team-a/b
 *   PodGroup (scheduling.x-k8s.io/v1alpha1): spec.minMember, spec.scheduleTimeoutSeconds
 *     (the Workload API's PodGroup, scheduling.k8s.io/v1beta1, is read into the same record by
 *     formats/workloadobj.h)
 *   PodDisruptionBudget (policy/v1): minAvailable | maxUnavailable (int or "N%"),
 *     selector.matchLabels (and matchExpressions In / NotIn / Exists / DoesNotExist)
 *   MigManager (nvidia.com/v1alpha1, the article's): spec.gpuClientsConfig.gpuClients
 *     [{namespace, podSelector: {matchLabels, matchExpressions}, migDevice: "3g.40gb"}]:
 *     a pod that matches asks that MIG device instead of one whole GPU
 *   PersistentVolumeClaims and PersistentVolumes: formats/volobj.h
 *
 * Resource names and quantities are kept as text for core/tenant.c to check; everything
 * else is checked here, and errors name the object and the field path. Plain structs, no
 * heap. */
#ifndef GS_TENANTOBJ_H
#define GS_TENANTOBJ_H

#include "../core/cluster.h"
#include "kubeobj.h"
#include "labelsel.h"
#include "volobj.h"

#include <jansson.h>

#define GS_TOBJ_MAX_RES 16
#define GS_TOBJ_MAX_NS  16
#define GS_TOBJ_MAX_SEL 8

struct gs_tobj_res {
    char name[64];
    char qty[48];
};

struct gs_kube_queue {
    char name[GS_NAME_MAX];
    char parent[GS_NAME_MAX];
    int ndeserved, nlimit;
    struct gs_tobj_res deserved[GS_TOBJ_MAX_RES], limit[GS_TOBJ_MAX_RES];
    int32_t weight, priority;
    int nns;
    char ns[GS_TOBJ_MAX_NS][64];
};

struct gs_kube_rquota {
    char ns[64];
    char name[GS_NAME_MAX];
    int nhard;
    struct gs_tobj_res hard[GS_TOBJ_MAX_RES];
};

/* Where a gang is declared: gpusched's PodGroup CRD (a pod's label GS_POD_GROUP_LABEL), or
 * the Workload API's PodGroup of Kubernetes v1.37 (a pod's spec.schedulingGroup;
 * formats/workloadobj.h). */
enum gs_pg_api { GS_PG_CRD = 0, GS_PG_WORKLOAD };

/* The PodGroupInitiallyScheduled condition a Workload API PodGroup carries. */
enum gs_pg_cond { GS_PGC_NONE = 0, GS_PGC_TRUE, GS_PGC_FALSE };

struct gs_kube_podgroup {
    char ns[64];
    char name[GS_KNAME_MAX]; /* the CRD's: shorter than GS_NAME_MAX */
    int32_t min_member;
    int32_t timeout_s; /* 0: none */
    double created_s;
    /* the Workload API's alone (formats/workloadobj.h); zero for the CRD: */
    uint8_t api;                 /* enum gs_pg_api */
    bool basic;                  /* schedulingPolicy.basic: its pods go one by one */
    bool disrupt_all;            /* disruptionMode.all: preempted whole (else one by one) */
    int32_t priority;            /* spec.priority (0 when unset) */
    int64_t generation;          /* metadata.generation */
    uint8_t cond;                /* enum gs_pg_cond: PodGroupInitiallyScheduled */
    char cond_reason[48];        /* its reason, */
    uint64_t cond_msg;           /* the hash of its message */
    char cond_since[40];         /* and its lastTransitionTime */
    char workload[GS_KNAME_MAX]; /* spec.workloadRef.workloadName ("": none) */
    char unsupported[120];       /* what its pods wait for gpusched to model ("": nothing) */
};

struct gs_kube_pdb {
    char ns[64];
    char name[GS_NAME_MAX];
    int32_t min_available, max_unavailable; /* -1: not set */
    bool min_pct, max_pct;                  /* the value is a percentage */
    int nsel;
    struct gs_sel_req sel[GS_TOBJ_MAX_SEL];
};

#define GS_TOBJ_MAX_CLIENTS 16

struct gs_kube_migclient {
    char ns[64];
    int nsel;
    struct gs_sel_req sel[GS_TOBJ_MAX_SEL];
    char mig[32]; /* profile, e.g. 3g.40gb */
};

struct gs_kube_migmgr {
    char name[GS_NAME_MAX];
    int nclients;
    struct gs_kube_migclient clients[GS_TOBJ_MAX_CLIENTS];
};

struct gs_error;

int gs_kube_migmgr_read(const json_t *obj, struct gs_kube_migmgr *out, struct gs_error *err);
/* Whether a pod's labels satisfy a selector (every requirement; none matches all). */
bool gs_kube_selector_matches(const struct gs_sel_req *sel, int n, const struct gs_kube_pod *p);

int gs_kube_queue_read(const json_t *obj, struct gs_kube_queue *out, struct gs_error *err);
int gs_kube_rquota_read(const json_t *obj, struct gs_kube_rquota *out, struct gs_error *err);
int gs_kube_podgroup_read(const json_t *obj, struct gs_kube_podgroup *out, struct gs_error *err);
int gs_kube_pdb_read(const json_t *obj, struct gs_kube_pdb *out, struct gs_error *err);
/* Whether a pod matches a PDB (same namespace, selector; an empty selector matches all). */
bool gs_kube_pdb_matches(const struct gs_kube_pdb *b, const struct gs_kube_pod *p);
/* Disruptions a PDB allows given how many matching pods run (healthy) out of expected. */
int32_t gs_kube_pdb_allowed(const struct gs_kube_pdb *b, int32_t healthy, int32_t expected);

/* Patch of a victim's status adding the DisruptionTarget condition (reason
 * PreemptionByScheduler) with a message. */
json_t *gs_kube_disruption_patch(const char *message);

#endif
