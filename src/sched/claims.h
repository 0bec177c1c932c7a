/* claims.h - the scheduler's Dynamic Resource Allocation: the DeviceClasses, ResourceSlices,
 * ResourceClaims and DeviceTaintRules (resource.k8s.io/v1) listed and watched, and, for one
 * scheduling cycle,
 * the allocation of the claims of the pods it places, as kube-scheduler's DynamicResources
 * plugin does it:
 *   - a pod names its claims in spec.resourceClaims (resourceClaimName, or the claim the
 *     resourceclaim controller made from a template); it waits, with reason "dra", while a
 *     claim is missing, a class is missing, or a selector is outside the CEL subset
 *     (formats/cel.h: the message quotes the expression and what is unsupported);
 *   - a claim already allocated is honoured: the pod goes to the node its allocation names;
 *   - otherwise a node fits only when all its claims can be allocated there (core/dra.c,
 *     fragmentation-aware) beside every device other claims hold (formats/dracycle.h: the
 *     same cycle the simulator runs), on devices whose taints (the driver's and those
 *     DeviceTaintRules add, formats/drataint.h) the request tolerates;
 *   - when the pod binds, each claim's status (allocation: results and nodeSelector; and
 *     reservedFor the pod) is written through resourceclaims/<name>/status before the
 *     Binding, and the allocation is assumed until the watch shows it;
 *   - a claim reserved only for pods that are gone is released (gs_claims_release_stale), its
 *     devices free in the same cycle;
 *   - preemption gives a running pod's claimed devices back while it tries victims
 *     (gs_claims_hold), so that a pending pod's claims can take them.
 * Quotas: a claimed device counts against the pod's queue as the resources it stands for: a
 * device with a "profile" attribute (a MIG instance or placement) as one
 * nvidia.com/mig-<profile>, any other device as one nvidia.com/gpu (and its GPU-equivalents
 * accordingly). A pending claim counts as its first alternative with matching devices asks
 * (All: the matching devices of one node); an allocated one as its devices.
 *
 * Threads: the feed lists and watches on threads of its own (a kube/cache.h cache per kind);
 * gs_claims_view and gs_claims_assume may be called from any thread. A cycle belongs to the
 * thread that runs it. */
#ifndef GS_SCHED_CLAIMS_H
#define GS_SCHED_CLAIMS_H

#include "../core/dra.h"
#include "../core/tenant.h"
#include "../formats/dracycle.h"
#include "../formats/draobj.h"
#include "../kube/client.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct gs_claims;

/* A daemon's feed (watch true: kube/cache.h caches, relisted every resync_s) or one list of each
 * kind (watch false: explain). A kind whose API is not served leaves the view absent. Returns NULL
 * without memory or threads (or, without watch, when a list fails: err says why). */
struct gs_claims *gs_claims_new(struct gs_kube_client *kc, bool watch, double resync_s,
                                struct gs_error *err);
void gs_claims_free(struct gs_claims *c);
/* Completed lists so far (changes when any kind was listed again). Thread-safe. */
uint64_t gs_claims_gen(struct gs_claims *c);
/* Whether every kind has been listed once (or found not served or not readable), as
 * kube-scheduler waits for its informers' caches before its first cycle: until then a pod
 * with claims would be judged on slices not read yet. Thread-safe. */
bool gs_claims_synced(struct gs_claims *c);
/* Wait, up to timeout_s seconds, until the watch shows claim ns/name at resourceVersion rv or
 * later (a write's answer): the API server serves watches from its cache, so a write sent
 * after this finds the claim current there, where one sent before finds it stale and is
 * retried by the API server against etcd. Returns whether it did. Thread-safe. */
bool gs_claims_wait_rv(struct gs_claims *c, const char *ns, const char *name, const char *rv,
                       double timeout_s);

/* One consistent view of the four kinds, the scheduler's assumed allocations applied. A
 * DeviceTaintRule kind that is not served or not readable counts as no rule. */
struct gs_claims_view {
    const struct gs_draobj_class *classes;
    int nclasses;
    const struct gs_draobj_slice *slices;
    int nslices;
    struct gs_draobj_claim *claims; /* copies (a reference to their lists each), the view's */
    bool *own; /* per claim: its status lists are the view's own (changed in it) */
    int nclaims;
    const struct gs_drataint_rule *rules;
    int nrules;
    bool absent; /* resource.k8s.io/v1 is not served, or not every kind listed yet */
    void *ref[4];
    struct gs_claims *from;
};
/* Returns 0 or GS_ENOMEM. */
int gs_claims_view(struct gs_claims *c, struct gs_claims_view *v);
void gs_claims_view_release(struct gs_claims_view *v);
/* Remember that the scheduler wrote claim's allocation (a claim read, with its new status),
 * until a list shows it or 60 s pass; forget it when the write failed. Thread-safe. */
void gs_claims_assume(struct gs_claims *c, const struct gs_draobj_claim *claim);
void gs_claims_forget(struct gs_claims *c, const char *uid);
/* Remember that the scheduler released claim (reservedFor entries dropped, the allocation
 * cleared when none is left: the claim read, with its new status) until a list shows a newer
 * resourceVersion or 60 s pass. Thread-safe. */
void gs_claims_assume_released(struct gs_claims *c, const struct gs_draobj_claim *claim);

/* A cycle (formats/dracycle.h) on one view: the world built from the view's slices (node ids:
 * node_id) with the view's DeviceTaintRules applied, every allocated claim's devices taken. */
struct gs_claims_cycle {
    struct gs_claims_view v;
    struct gs_dracycle d; /* on v's classes, slices and claims */
};

int gs_claims_cycle_init(struct gs_claims_cycle *cy, struct gs_claims *c, int npods,
                         int32_t (*node_id)(void *ctx, const char *node), void *ctx);
void gs_claims_cycle_release(struct gs_claims_cycle *cy);

/* formats/dracycle.h's, on the cycle's claims */
static inline int gs_claims_pod_prepare(struct gs_claims_cycle *cy, int i,
                                        const struct gs_kube_pod *p, struct gs_tenants *t,
                                        struct gs_qvec *claimed, char *why, size_t why_size)
{
    return gs_dracycle_pod_prepare(&cy->d, i, p, t, claimed, why, why_size);
}
static inline void gs_claims_pod_why(const struct gs_claims_cycle *cy, int i, char *out, size_t n)
{
    gs_dracycle_pod_why(&cy->d, i, out, n);
}
/* The writes that allocate and reserve pod i's claims on node (placed there): a sequence
 * (sched/binder.h) of merge patches of resourceclaims/<name>/status, in claim order, each one
 * that allocates a claim without GS_DRAOBJ_FINALIZER after a write adding it; for the claim of
 * its extended resources (formats/draext.h) the claim is first created ({method: POST, path,
 * body}) and the pod's status.extendedResourceClaimStatus patched last (NULL without memory).
 * Each allocated claim is assumed in c (the one created by name, until the watch shows it). */
json_t *gs_claims_pod_writes(struct gs_claims_cycle *cy, struct gs_claims *c, int i,
                             const char *node, const char *pod_name, const char *pod_uid);
/* Stale reservations, as kube-controller-manager's resourceclaim controller drops them: an
 * allocated claim whose status.reservedFor names pods that are gone (terminal, deleted, or
 * another pod under the name) loses those entries, and its allocation when none is left.
 * gone(ctx, ns, entry) says, for an entry: 0 the pod exists (kept), 1 it is gone for sure,
 * 2 the caller does not know the pod (deleted, or not seen yet): gone once it has been
 * unknown for GS_CLAIMS_STALE_S (c remembers since when); it is called before c's lock is
 * taken, once per entry of an allocated claim. A claim with more entries than
 * GS_DRAOBJ_MAX_RESERVED, or none, is left alone. Each released claim's devices are free in
 * the cycle's state and its view shows the new status at once; its writes are appended to
 * writes as one sequence (sched/binder.h: a JSON array of writes): a merge patch of
 * resourceclaims/<name>/status with the uid and resourceVersion as preconditions, reservedFor
 * the entries kept, allocation null when none is, then, when none is and the claim has
 * GS_DRAOBJ_FINALIZER, that finalizer removed; the claim is assumed in c. Returns the claims
 * released, or GS_ENOMEM. */
#define GS_CLAIMS_STALE_S 2.0
int gs_claims_release_stale(struct gs_claims_cycle *cy, struct gs_claims *c,
                            int (*gone)(void *ctx, const char *ns,
                                        const struct gs_draobj_reserved *r),
                            void *ctx, json_t *writes);

static inline int gs_claims_find(struct gs_claims_cycle *cy, const char *ns, const char *name)
{
    return gs_dracycle_find(&cy->d, ns, name);
}
/* The cycle's claim ns/name (its view's copy, alive with the cycle), or NULL. */
static inline const struct gs_draobj_claim *gs_claims_cycle_claim(struct gs_claims_cycle *cy,
                                                                  const char *ns, const char *name)
{
    int k = gs_dracycle_find(&cy->d, ns, name);
    return k >= 0 ? &cy->d.claims[k] : NULL;
}
static inline void gs_claims_bound_demand(struct gs_claims_cycle *cy, const char *ns,
                                          const char (*names)[GS_KNAME_MAX], int n,
                                          struct gs_tenants *t, struct gs_qvec *out)
{
    gs_dracycle_bound_demand(&cy->d, ns, names, n, t, out);
}

#endif
