/* draobj.h - the resource.k8s.io/v1 objects gpusched reads to allocate devices, and the status
 * it writes back:
 *
 *   DeviceClass: metadata.name, creationTimestamp, spec.selectors[].cel.expression,
 *     spec.extendedResourceName
 *   ResourceSlice: spec.driver, spec.pool {name, generation}, spec.nodeName | spec.allNodes,
 *     spec.devices[] {name, attributes {NAME: {int|bool|string|version}}, capacity {NAME:
 *     {value}}, allowMultipleAllocations (for selectors), consumesCounters [{counterSet,
 *     counters {NAME: {value}}}], taints[] (formats/drataint.h: a NoSchedule or NoExecute taint
 *     keeps the device from requests that do not tolerate it)},
 *     spec.sharedCounters[] {name, counters {NAME: {value}}}; a bare attribute or capacity
 *     name is qualified with the driver ("type" of gpu.gpusched.io is gpu.gpusched.io/type)
 *   ResourceClaim: metadata {namespace, name, uid, resourceVersion, the annotation
 *     resource.kubernetes.io/extended-resource-claim and the controller ownerReference's uid},
 *     spec.devices.requests[]
 *     {name, exactly {deviceClassName, selectors, allocationMode, count, tolerations} |
 *     firstAvailable[] {name, deviceClassName, selectors, allocationMode, count, tolerations}},
 *     spec.devices.constraints[]
 *     {requests, matchAttribute | distinctAttribute}, spec.devices.config[] (only NVIDIA's
 *     ComputeDomain channel config: formats/cdomain.h), status.allocation {devices.results[]
 *     {request, driver, pool, device}, nodeSelector}, status.reservedFor[] {resource, name,
 *     uid}
 *
 * A world (core/dra.h) is built from slices: per pool only the slices of its newest
 * generation, each device's consumption resolved to the counter sets of its pool (a device
 * whose counter set or counter is not published is left out). A claim is prepared against a
 * world and the classes: classes found, CEL selectors compiled (formats/cel.h) and evaluated
 * over every device, so core sees the candidate devices of each request. Every error names
 * the object and the field path, and for a selector quotes the expression. Objects own heap
 * (selector text, devices): release them. Not thread-safe per object; distinct objects may be
 * used from distinct threads. */
#ifndef GS_DRAOBJ_H
#define GS_DRAOBJ_H

#include "../base/hash.h"
#include "../core/dra.h"
#include "cdomain.h"
#include "drataint.h"
#include "kubeobj.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define GS_DRAOBJ_MAX_SEL      32  /* selectors of a class or a request (API: 32) */
#define GS_DRAOBJ_MAX_DEV      128 /* devices of one slice (API: 128) */
#define GS_DRAOBJ_MAX_SETS     8   /* counter sets of one slice (API: 8) */
#define GS_DRAOBJ_MAX_RESULTS  64
#define GS_DRAOBJ_MAX_RESERVED 32

struct gs_draobj_class {
    char name[GS_KNAME_MAX];
    int nsel;
    char *sel[GS_DRAOBJ_MAX_SEL]; /* CEL text, owned */
    char ext[64];                 /* spec.extendedResourceName, or "" (formats/draext.h) */
    char created[40];             /* metadata.creationTimestamp (RFC 3339, compared as text) */
};

/* The names a device's consumption uses, before they are resolved against its pool. */
struct gs_draobj_cref {
    char set[GS_DRA_NAME_MAX];
    uint8_t n;
    char counter[GS_DRA_MAX_COUNTERS][GS_DRA_NAME_MAX];
};

struct gs_draobj_slice {
    char name[GS_KNAME_MAX];
    char driver[GS_DRA_NAME_MAX];
    char pool[GS_KNAME_MAX];
    int64_t generation;
    char node[GS_KNAME_MAX]; /* spec.nodeName; empty with all_nodes */
    bool all_nodes;
    bool other_nodes; /* nodeSelector or perDeviceNodeSelection: not used by gpusched */
    int ndev;
    struct gs_dra_device *dev; /* owned; node is -1 until a world is built */
    struct gs_draobj_cref (*cref)[GS_DRA_MAX_CONSUME]; /* per device, owned */
    int nsets;
    struct gs_dra_counterset sets[GS_DRAOBJ_MAX_SETS];
    struct gs_dra_taint *taints; /* owned: the devices' taints point into it */
};

struct gs_draobj_sub {
    char name[GS_DRA_NAME_MAX]; /* the sub-request's name (firstAvailable), else "" */
    char cls[GS_KNAME_MAX];
    uint8_t mode; /* enum gs_dra_mode */
    int32_t count;
    int nsel;
    char *sel[GS_DRAOBJ_MAX_SEL]; /* owned */
    int ntol;
    struct gs_dra_toleration *tol; /* owned */
};

struct gs_draobj_req {
    char name[GS_DRA_NAME_MAX];
    bool first_available;
    int nsub;
    struct gs_draobj_sub sub[GS_DRA_MAX_SUB];
};

struct gs_draobj_result {
    char request[2 * GS_DRA_NAME_MAX];
    char driver[GS_DRA_NAME_MAX];
    char pool[GS_KNAME_MAX];
    char device[GS_DRA_NAME_MAX];
};

struct gs_draobj_reserved {
    char resource[32];
    char name[GS_KNAME_MAX];
    char uid[64];
};

/* The lists a claim read owns, counted: copies share them (gs_draobj_claim_ref). */
struct gs_draobj_heap {
    long refs;
    struct gs_draobj_req *req; /* nreq, each sub's selectors and tolerations */
    int nreq;
    struct gs_draobj_result *results;
    struct gs_draobj_reserved *reserved;
};

/* A claim: small, its lists on the heap, counted (heap): a copy that takes a reference
 * (gs_draobj_claim_ref) keeps them alive until it is released, and must not write through
 * them: whoever changes a copy's status points it at lists of its own. A copy with heap NULL
 * owns nothing. */
/* The finalizer an allocated claim carries (resourceapi.Finalizer): added before the allocation
 * is written, dropped once the claim is deallocated. */
#define GS_DRAOBJ_FINALIZER "resource.kubernetes.io/delete-protection"

struct gs_draobj_claim {
    char ns[64];
    char name[GS_KNAME_MAX];
    char uid[64];
    char rv[32];
    bool extended;      /* made by a scheduler for a pod's extended resources (draext.h) */
    bool protect;       /* has the finalizer GS_DRAOBJ_FINALIZER */
    bool deleting;      /* metadata.deletionTimestamp is set */
    char owner_uid[64]; /* the controller ownerReference's uid, or "" */
    int nreq;
    struct gs_draobj_req *req; /* nreq */
    int ncons;
    struct gs_dra_constraint cons[GS_DRA_MAX_CONS];
    /* spec.devices.config: the NVIDIA ComputeDomain a channel config names (formats/cdomain.h),
     * or ""; a config that cannot be read leaves it "" and says why in cd_why (the claim is
     * read all the same: the scheduler holds its pods back with that reason) */
    char cd_domain[GS_CDOMAIN_ID_MAX];
    char cd_why[240];
    /* status */
    bool allocated;
    char node[GS_KNAME_MAX]; /* the node its allocation's nodeSelector names ("": any) */
    int nresults;
    struct gs_draobj_result *results; /* nresults (at most GS_DRAOBJ_MAX_RESULTS) */
    int nreserved; /* every entry counted; the first GS_DRAOBJ_MAX_RESERVED kept */
    struct gs_draobj_reserved *reserved; /* min(nreserved, GS_DRAOBJ_MAX_RESERVED) */
    struct gs_draobj_heap *heap;
};

struct gs_error;

/* Readers: 0, or GS_EINVAL naming the object and field ("resourceclaim ns/x: spec.devices
 * .requests[0].exactly.count: ..."), or GS_ENOMEM. The output is released on error too. */
int gs_draobj_class_read(const json_t *o, struct gs_draobj_class *out, struct gs_error *err);
void gs_draobj_class_release(struct gs_draobj_class *c);
int gs_draobj_slice_read(const json_t *o, struct gs_draobj_slice *out, struct gs_error *err);
void gs_draobj_slice_release(struct gs_draobj_slice *s);
int gs_draobj_claim_read(const json_t *o, struct gs_draobj_claim *out, struct gs_error *err);
/* Drop c's reference to its lists (the last frees them) and clear them from c. Thread-safe for
 * distinct copies. */
void gs_draobj_claim_release(struct gs_draobj_claim *c);
/* One more reference to c's lists, for a copy of c. Thread-safe. */
void gs_draobj_claim_ref(const struct gs_draobj_claim *c);
/* A claim's own lists with room for nreq requests (zeroed; c->nreq left to the caller).
 * Returns 0 or GS_ENOMEM. */
int gs_draobj_claim_alloc(struct gs_draobj_claim *c, int nreq);

/* A world's storage. node_id maps a node name to the caller's id (-1: unknown: the node's
 * devices are left out). */
struct gs_draobj_world {
    struct gs_dra_world w;
    struct gs_dra_device *dev;
    struct gs_dra_counterset *sets;
    struct gs_dra_taint *taints; /* DeviceTaintRules' taints with the devices' own (drataint.h) */
};
int gs_draobj_world_build(const struct gs_draobj_slice *const *slices, int n,
                          int32_t (*node_id)(void *ctx, const char *node), void *ctx,
                          struct gs_draobj_world *out);
void gs_draobj_world_release(struct gs_draobj_world *w);

/* DeviceTaintRules rules[0..n) applied to w's devices (formats/drataint.h). Returns 0 or
 * GS_ENOMEM (w untouched). */
int gs_draobj_world_taint(struct gs_draobj_world *w, const struct gs_drataint_rule *rules, int n);

/* A claim ready for core: candidates per alternative. Only c's requests in use (c.nreq) and
 * constraints are set. cand holds the candidates the prep owns; an alternative found in a
 * gs_draobj_selcache points at the cache's, so such a prep is released before its cache. */
struct gs_draobj_prep {
    struct gs_dra_claim c;
    int32_t *cand;
};
/* Prepare claim against world w and the classes: per alternative the devices its class's and
 * its own selectors admit and whose taints it tolerates (ntainted: those left out for their
 * taints). Returns 0, GS_ENOTFOUND (a class does not
 * exist), GS_EINVAL (a selector outside the CEL subset or malformed: the message quotes it,
 * "resourceclaim ns/x: request gpu: selector \"...\": unsupported CEL: macro 'exists' at
 * position 30"), or GS_ENOMEM. */
int gs_draobj_prepare(const struct gs_draobj_claim *claim, const struct gs_draobj_class *classes,
                      int nclasses, const struct gs_dra_world *w, struct gs_draobj_prep *out,
                      struct gs_error *err);
void gs_draobj_prep_release(struct gs_draobj_prep *p);

/* What gs_draobj_prepare found for each distinct alternative (its class, selectors and
 * tolerations) against one world, so that claims alike (a Job's pods' claims from one template)
 * are evaluated once a cycle: their candidates and bynode order shared with the first. Embedded:
 * zero it or gs_draobj_selcache_init; valid for one world only. Not thread-safe. */
struct gs_draobj_selent {
    int32_t *cand; /* ncand candidates, then their bynode order (NULL: none) */
    int32_t ncand, ntainted;
    bool indexed;
};
struct gs_draobj_selcache {
    struct gs_strmap map; /* key -> index in e */
    struct gs_draobj_selent *e;
    int n, cap;
};
void gs_draobj_selcache_init(struct gs_draobj_selcache *c);
void gs_draobj_selcache_release(struct gs_draobj_selcache *c);
/* gs_draobj_prepare through cache (NULL: none); the same results. */
int gs_draobj_prepare_cached(const struct gs_draobj_claim *claim,
                             const struct gs_draobj_class *classes, int nclasses,
                             const struct gs_dra_world *w, struct gs_draobj_selcache *cache,
                             struct gs_draobj_prep *out, struct gs_error *err);

/* The merge patch of the claim's status subresource that allocates it (when
 * alloc is non-NULL: results on devices of w, nodeSelector naming node) and reserves it for the
 * pod (reservedFor keeps the present entries), with metadata.uid and resourceVersion as
 * preconditions. NULL without memory. */
json_t *gs_draobj_status_patch(const struct gs_draobj_claim *claim, const struct gs_dra_claim *dc,
                               const struct gs_dra_result *alloc, const struct gs_dra_world *w,
                               const char *node, const char *pod_name, const char *pod_uid);

/* The strategic merge patch of the claim itself that adds (add) or removes GS_DRAOBJ_FINALIZER,
 * leaving its other finalizers, with metadata.uid as precondition and, when adding, its
 * resourceVersion. NULL without memory. */
json_t *gs_draobj_finalizer_patch(const struct gs_draobj_claim *claim, bool add);

/* The merge patch of the claim's status subresource that keeps only the reservedFor entries
 * marked in keep (per entry of claim->reserved) and, when none is kept, clears the allocation
 * (reservedFor and allocation null), with metadata.uid and resourceVersion as preconditions.
 * NULL without memory. */
json_t *gs_draobj_release_patch(const struct gs_draobj_claim *claim, const bool *keep);

#endif
