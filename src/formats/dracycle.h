/* dracycle.h - one scheduling cycle's allocation of DRA claims, the same code for the
 * scheduler daemon (sched/claims.c feeds it the API's objects) and the simulator (sim/dra.c
 * feeds it the slices the agent would publish): the allocation world built from the
 * ResourceSlices (formats/draobj.h), every allocated claim's devices taken, and the pending
 * pods' claims prepared and allocated with core/dra.c, fragmentation-aware, as the cycle
 * (core/cycle.h) places the pods. Its hook functions are what the cycle's hooks do for DRA:
 * a node fits a pod only when all its claims can be allocated there (gs_dracycle_pod_fits),
 * a placed pod's claims are allocated (gs_dracycle_pod_place), and preemption gives a running
 * pod's claimed devices back while it tries victims (gs_dracycle_give_run).
 *
 * The cycle borrows the classes, slices and claims it is given (claims: gs_dracycle_hold
 * and the daemon's stale-reservation release change them) and owns the rest. Not
 * thread-safe: a cycle belongs to the thread that runs it. */
#ifndef GS_FORMATS_DRACYCLE_H
#define GS_FORMATS_DRACYCLE_H

#include "../core/cycle.h"
#include "../core/dra.h"
#include "../core/tenant.h"
#include "draext.h"
#include "draobj.h"
#include "draslice.h"
#include "kubeobj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One pending pod's claims in a cycle: those it names, then the claim of its extended
 * resources (formats/draext.h) when a DeviceClass backs one. */
struct gs_dracycle_pod {
    int n;
    /* per claim (room for n, in the pod's own allocation): */
    int *claim;                  /* index in the cycle's claims; -1: x's, to be made */
    struct gs_draobj_prep *prep; /* prepared */
    bool *prepared;              /* not yet allocated: prep holds it */
    struct gs_dra_result *res;   /* its allocation */
    bool borrowed;               /* prep belongs to the caller (gs_dracycle_pod_borrow) */
    int32_t node;                /* a node its allocated claims fix, or -1 */
    bool placed;
    int32_t placed_node;
    /* extended resources backed by a DeviceClass: x (owned; NULL: none), its claim the last
     * (x_slot), used only on nodes that serve them by DRA (gs_dracycle_set_alloc) */
    struct gs_draext *x;
    int x_slot;
    bool x_used; /* placed on a node that serves them by DRA */
};

struct gs_dracycle {
    const struct gs_draobj_class *classes;
    int nclasses;
    struct gs_draobj_claim *claims; /* borrowed */
    int nclaims;
    bool absent; /* resource.k8s.io/v1 is not served, or not every kind listed yet */
    struct gs_draobj_world w;
    struct gs_dra_state st;
    /* per device: 1 + the devices of its kind (its profile, or a whole device) that claims
     * hold now: the demand the fragmentation-aware choice keeps room for (core/dra.h) */
    double *weight;
    struct gs_dracycle_pod **pods; /* per pod of the caller (NULL: no claims) */
    int npods;
    struct gs_draobj_selcache sel; /* claims alike are evaluated once */
    struct gs_strmap byname;       /* "ns/name" -> claim index, made at the first search */
    bool named;
    /* a node's allocatable of an extended resource (NULL: none anywhere) */
    int64_t (*alloc)(void *ctx, int32_t node, const char *res);
    void *alloc_ctx;
};

/* The world built from slices (node ids: node_id), every allocated claim's devices taken, the
 * weights set, room for npods pods. Returns 0 or GS_ENOMEM (cy released). */
int gs_dracycle_init(struct gs_dracycle *cy, const struct gs_draobj_class *classes, int nclasses,
                     const struct gs_draobj_slice *slices, int nslices,
                     struct gs_draobj_claim *claims, int nclaims, bool absent, int npods,
                     int32_t (*node_id)(void *ctx, const char *node), void *ctx);
void gs_dracycle_release(struct gs_dracycle *cy);
/* For a cycle kept across passes (the simulator): forget the pods of the last pass (the
 * devices they took stay taken) and make room for npods; the weights set again from the
 * devices held now. Returns 0 or GS_ENOMEM. */
int gs_dracycle_next(struct gs_dracycle *cy, int npods);

/* The index in the cycle's claims of claim ns/name, or -1. */
int gs_dracycle_find(struct gs_dracycle *cy, const char *ns, const char *name);
/* For preemption: give back (held false) or take again (held true) the devices allocated to
 * claim k (nothing for a claim not allocated, nor for one reserved for more than one pod: the
 * others keep it). */
void gs_dracycle_hold(struct gs_dracycle *cy, int k, bool held);

/* Where the nodes' allocatable of extended resources comes from, for pods whose extended
 * resources a DeviceClass backs (formats/draext.h). */
void gs_dracycle_set_alloc(struct gs_dracycle *cy,
                           int64_t (*alloc)(void *ctx, int32_t node, const char *res), void *ctx);
/* Prepare pending pod i (p: its claims' names, its extended resources): 0 with claimed (what
 * its claims count for in t), or 1 when it must wait, with why ("resourceclaim ai/x: request
 * gpu: its selector \"...\": unsupported CEL: ..."); GS_ENOMEM. */
int gs_dracycle_pod_prepare(struct gs_dracycle *cy, int i, const struct gs_kube_pod *p,
                            struct gs_tenants *t, struct gs_qvec *claimed, char *why,
                            size_t why_size);
/* Pod i's other resources (p->res[r], bit r) that DRA serves on a node without them. */
uint32_t gs_dracycle_pod_dra_res(const struct gs_dracycle *cy, int i, const struct gs_kube_pod *p);
/* The claim of pod i's slot k: the cycle's, or the one of its extended resources to make. */
const struct gs_draobj_claim *gs_dracycle_pod_claim(const struct gs_dracycle *cy,
                                                    const struct gs_dracycle_pod *p, int k);
/* Pending pod i names the pending claim at index claim, prepared by the caller as prep (kept
 * by the caller, alive while the pod is; the simulator prepares one per class). Returns 0 or
 * GS_ENOMEM. */
int gs_dracycle_pod_borrow(struct gs_dracycle *cy, int i, int claim,
                           const struct gs_draobj_prep *prep);
/* Whether pod i's claims can be allocated on node now (true for a pod without claims). */
bool gs_dracycle_pod_fits(struct gs_dracycle *cy, int i, int32_t node);
/* How many times, up to max, pod i's claims could be allocated on node now, side by side (a
 * gang's members from one template each have such claims): nothing is kept. A pod whose
 * claims are allocated already, or that has extended resources by DRA: max when they fit, else
 * 0. */
int gs_dracycle_pod_copies(struct gs_dracycle *cy, int i, int32_t node, int max);
/* Allocate pod i's claims on node (the cycle placed it there). Returns 0 or GS_ENOFIT. */
int gs_dracycle_pod_place(struct gs_dracycle *cy, int i, int32_t node);
/* Why no node could take pod i's claims: per claim and request, the matching devices in the
 * cluster and how many are free. */
void gs_dracycle_pod_why(const struct gs_dracycle *cy, int i, char *out, size_t n);
/* What the allocated claims (ns, names) of a bound pod count for in t. */
void gs_dracycle_bound_demand(struct gs_dracycle *cy, const char *ns,
                              const char (*names)[GS_KNAME_MAX], int n, struct gs_tenants *t,
                              struct gs_qvec *out);

/* ---------- the simulators' objects ---------- */

/* The two DeviceClasses of deploy/dra/deviceclasses.yaml (gpu.gpusched.io: type gpu,
 * mig.gpusched.io: type mig), read into out[0..2). Returns 0 or an error (out released). */
int gs_dracycle_default_classes(struct gs_draobj_class out[2], struct gs_error *err);
/* Node dn's slices as its agent publishes them (gs_draslice_build), named as the API server
 * names them from their generateName ("<node>-slice-<i>"), read as the scheduler reads them
 * and appended to *slices (*n in use, *cap allocated; the caller releases them). Returns 0 or
 * an error. */
int gs_dracycle_node_slices(const struct gs_draslice_node *dn, struct gs_draobj_slice **slices,
                            int *n, int *cap, struct gs_error *err);

/* ---------- the cycle's hooks for DRA (core/cycle.h) ---------- */

/* Preemption (gs_cyc_hooks.give): a running pod's claims (claims[0..GS_MAX_POD_DRA), -1 for
 * none) given back (gone) or taken again. */
void gs_dracycle_give_run(struct gs_dracycle *cy, const int *claims, bool gone);
/* Whether the cycle's allows hook should leave a pod's claims apart: a pod whose devices are
 * all claims (req NONE) and not in a gang (gang < 0), when preemption weighs claims itself
 * (preempting: the give and fits hooks are set). For the others the claims must fit as
 * things stand (gangs and re-carving do not model them). */
bool gs_dracycle_claims_apart(bool preempting, const struct gs_request *req, int32_t gang);

/* The whole hook set for a driver whose pods have nothing but DRA claims to fit (the
 * simulator): pod (a cycle pod) is the cycle's pod index pod[pod] (pod NULL: the same index);
 * no preemption of claims. */
struct gs_dracycle_hooks {
    struct gs_dracycle *cy;
    const int *pod;
    int cur; /* the pod prepared */
};
void gs_dracycle_hooks_init(struct gs_dracycle_hooks *h, struct gs_dracycle *cy, const int *pod,
                            struct gs_cyc_hooks *out);

#endif
