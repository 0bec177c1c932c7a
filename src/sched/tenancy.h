/* tenancy.h - the scheduler's view of tenancy: GPUQueues, ResourceQuotas, PodGroups and
 * PodDisruptionBudgets listed from the API server, turned into core/tenant.c's queues and
 * core/preempt.c's running pods for one scheduling cycle.
 *
 * A pod's queue: the label gpusched.io/queue, else the GPUQueue whose spec.namespaces lists
 * its namespace, else the GPUQueue named like its namespace, else none (no queue limits;
 * ResourceQuotas still apply). A pod's gang: the Workload API PodGroup
 * (scheduling.k8s.io/v1beta1) its spec.schedulingGroup.podGroupName names in its namespace, as
 * kube-scheduler v1.37 reads it (a basic one is no gang: its pods go one by one; a running
 * member is preempted alone unless its group's disruptionMode is all), else the PodGroup CRD
 * (scheduling.x-k8s.io/v1alpha1) its label scheduling.x-k8s.io/pod-group names. Both kinds are
 * in one array, the CRD's first, and become the same gangs of core/cycle.c. A PDB's allowed
 * disruptions are computed from the pods it selects (no controller is needed to fill its
 * status).
 *
 * Kueue's Topologies and ResourceFlavors (kueue.x-k8s.io/v1beta2, or v1beta1 where v1beta2 is not
 * served; none where the CRDs are absent or cannot be listed) give the topology levels
 * (sched/cyclein.c).
 *
 * The feed also keeps the storage objects a pending pod's volumes depend on (claims, volumes,
 * StorageClasses, CSIDrivers, CSIStorageCapacities, CSINodes), for sched/volbind.c.
 *
 * The fields of struct gs_policy_objs and struct gs_tenancy are this module's and the cycle
 * input's (sched/cyclein.c, which builds a cycle from them); every other module reads them
 * through the functions below. */
#ifndef GS_SCHED_TENANCY_H
#define GS_SCHED_TENANCY_H

#include "../core/preempt.h"
#include "../formats/tenantobj.h"
#include "../kube/client.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The storage objects a pending pod's volumes depend on (sched/volbind.h reads them). */
struct gs_storage {
    struct gs_kube_pvc *pvcs;
    int npvcs;
    struct gs_kube_pv *pvs;
    int npvs;
    struct gs_kube_sc *classes;
    int nclasses;
    struct gs_kube_csidriver *csidrivers;
    int ncsidrivers;
    struct gs_kube_csicap *csicaps;
    int ncsicaps;
    struct gs_kube_csinode *csinodes;
    int ncsinodes;
    /* the claims or volumes could not be listed (no API, or RBAC forbids it): pods' claims
     * are then not checked at all, rather than all found missing */
    bool volumes_unknown;
    /* the StorageClasses could not be listed: a claim not yet bound is then no constraint (the
     * pod goes where it fits, as when gpusched did not bind volumes) */
    bool classes_unknown;
};

struct gs_policy_objs {
    struct gs_kube_queue *queues;
    int nqueues;
    struct gs_kube_rquota *rquotas;
    int nrquotas;
    struct gs_kube_podgroup *groups;
    int ngroups;
    struct gs_kube_pdb *pdbs;
    int npdbs;
    struct gs_kube_migmgr *migmgrs;
    int nmigmgrs;
    struct gs_storage st;
    /* Kueue's Topologies and ResourceFlavors (formats/topoobj.h; v1beta2, else v1beta1) */
    struct gs_kube_topology *topos;
    int ntopos;
    struct gs_kube_flavor *flavors;
    int nflavors;
};

struct gs_error;

/* The MIG device a MigManager's gpuClients give a pod that asks one whole GPU (the
 * article's workload-to-MIG-type mapping), or NULL. */
const char *gs_policy_mig_for(const struct gs_policy_objs *po, const struct gs_kube_pod *p);

void gs_policy_objs_release(struct gs_policy_objs *po);
/* to (its old content not freed) becomes a copy of from (the objects are plain data; an
 * empty kind is a NULL array). Returns 0, or GS_ENOMEM with to empty. */
int gs_policy_objs_copy(struct gs_policy_objs *to, const struct gs_policy_objs *from);

/* The kinds (GPUQueue, ResourceQuota, PodGroup, PDB, MigManager, the storage kinds above, the
 * Workload API's PodGroup), each in a kube/cache.h cache: with watch, followed by an informer on
 * a thread of its own (an event lists the kind again, every kind is listed again each resync_s
 * anyway, and a kind whose API is absent each second: its CRD may be installed later; lists go
 * on the client's second lane); without, listed once now (explain). A kind whose API is not
 * installed (404: the CRD is absent) is empty; so is a claim or volume list that fails for any
 * reason (it sets volumes_unknown, with a warning) and a Workload API PodGroup list that fails
 * (a warning); objects that do not parse are skipped with a warning. The feed keeps the objects
 * current (a complete set of the kinds' latest lists) under its own lock. Returns NULL with err
 * (a list that failed, no memory or no thread). gs_policy_feed_free stops and joins the
 * informers. */
struct gs_policy_feed;
struct gs_policy_feed *gs_policy_feed_new(struct gs_kube_client *kc, bool watch, double resync_s,
                                          struct gs_error *err);
void gs_policy_feed_free(struct gs_policy_feed *f);
/* Take the kinds' latest lists once every kind has been listed and a list completed since the
 * last call: returns 1 when the current objects changed (they are replaced), 0 when not (or
 * nothing new), or GS_ENOMEM. Thread-safe. */
int gs_policy_feed_refresh(struct gs_policy_feed *f, struct gs_error *err);
/* Whether the feed holds a complete set of objects. Thread-safe. */
bool gs_policy_feed_ready(struct gs_policy_feed *f);
/* out (its old content not freed) becomes a copy of the current objects (empty before
 * ready). Returns 0 or GS_ENOMEM. Thread-safe. */
int gs_policy_feed_copy(struct gs_policy_feed *f, struct gs_policy_objs *out);
/* The StorageClass named name, or NULL. */
const struct gs_kube_sc *gs_storage_class_find(const struct gs_storage *st, const char *name);
/* PodGroup g (an index gs_tenancy_pod_gang gives), or NULL when g < 0. */
const struct gs_kube_podgroup *gs_policy_group(const struct gs_policy_objs *po, int g);
/* Kueue's Topologies and ResourceFlavors: how many, the array in *out. */
int gs_policy_topologies(const struct gs_policy_objs *po, const struct gs_kube_topology **out);
int gs_policy_flavors(const struct gs_policy_objs *po, const struct gs_kube_flavor **out);
/* How many PodGroups there are (both kinds). */
int gs_policy_group_count(const struct gs_policy_objs *po);
/* The index of the PodGroup of api (enum gs_pg_api) named ns/name, or -1. */
int gs_policy_find_group(const struct gs_policy_objs *po, int api, const char *ns,
                         const char *name);
/* The index of the Workload API PodGroup pod p names (basic ones too), or -1. */
int gs_policy_pod_group(const struct gs_policy_objs *po, const struct gs_kube_pod *p);
/* Why p cannot be scheduled with its Workload API PodGroup, in msg: 1 the group does not exist
 * (yet), 2 it cannot be scheduled with it (the group sets what gpusched does not model, or
 * p's priority is not the group's, which kube-scheduler refuses too), 0 neither. */
int gs_policy_group_refusal(const struct gs_policy_objs *po, const struct gs_kube_pod *p, char *msg,
                            size_t n);
/* Lists started so far (each kind counts one, failed lists too). Thread-safe. */
uint64_t gs_policy_feed_lists(struct gs_policy_feed *f);
/* Deep equality (to tell whether a relist changed anything). */
bool gs_policy_objs_equal(const struct gs_policy_objs *a, const struct gs_policy_objs *b);

/* One cycle's tenancy. pods: np pods at a stride (bytes) apart; alloc[i]/placed[i]: what
 * bound pod i holds in c. */
struct gs_tenancy {
    struct gs_tenants t;
    int32_t *pod_queue; /* per pod, GS_QUEUE_NONE */
    int32_t *pod_gang;  /* per pod, index into po->groups or -1 */
    int32_t *pod_run;   /* per pod, index into run or -1 */
    struct gs_running *run;
    int32_t *run_pod; /* per running pod, its index among the pods */
    int32_t nrun;
    int32_t *pdb_allowed;
    int32_t npdb;
    int32_t ngangs;
};

int gs_tenancy_build(struct gs_tenancy *ty, const struct gs_policy_objs *po,
                     const struct gs_cluster *c, const struct gs_kube_pod *pods, size_t stride,
                     int np, const struct gs_alloc *alloc, const int8_t *placed);
void gs_tenancy_release(struct gs_tenancy *ty);
/* The queues with their usage; pod i's queue (GS_QUEUE_NONE) and gang (-1: none); running pod
 * v's index among the pods. */
struct gs_tenants *gs_tenancy_tenants(struct gs_tenancy *ty);
int gs_tenancy_pod_queue(const struct gs_tenancy *ty, int i);
int gs_tenancy_pod_gang(const struct gs_tenancy *ty, int i);
int gs_tenancy_run_pod(const struct gs_tenancy *ty, int v);

#endif
