/* dra.h - Dynamic Resource Allocation (resource.k8s.io/v1) as gpusched allocates it: the
 * devices drivers publish in ResourceSlices, the counter sets of partitionable devices, and
 * the allocation of one pod's ResourceClaims on one node.
 *
 * A world holds every device of every pool (the newest generation of each pool only; the
 * caller drops older ones) and every counter set, with the node each belongs to as the
 * caller's node id. Devices name their consumption of counters by index (set, counter),
 * resolved by the reader (formats/draobj.c). A state is what is allocated in a world: each
 * device is taken by at most one claim, and the sum of the consumption of the taken devices
 * of a counter set stays within each counter's value (that is how overlapping MIG placements
 * of one GPU exclude each other).
 *
 * A claim to allocate is data: its requests, each one or more alternatives (exactly, or
 * firstAvailable's sub-requests tried in order), each {count, mode ExactCount|All, the
 * devices its class's and its own selectors admit}; the selectors are evaluated by the
 * caller (formats/cel.h), so core sees only candidate device indices. constraints
 * matchAttribute / distinctAttribute across requests. gs_dra_allocate finds, per request,
 * the first alternative that fits with every other request and constraint, and among the
 * devices that fit prefers, fragmentation-aware:
 *   - devices of a GPU already partly used (their counter set consumed, or another device
 *     with the same parentUUID/uuid taken): pack before opening a fresh GPU;
 *   - then a device that consumes no counters (made already: a static MIG instance, a GPU
 *     that is not partitionable) before carving a partitionable GPU;
 *   - then the device whose taking leaves the most other devices of its counter set still
 *     allocatable (the most future MIG fits), each counted with its weight in the state
 *     (the demand for it, when the caller knows it);
 *   - then the device order of the world (deterministic);
 * and for a request of several devices whose devices carry link attributes (NVLink peers
 * gpu.gpusched.io/nvlinkPeers and nvlinks, gpu.gpusched.io/pcieSwitch, the standard
 * resource.kubernetes.io/pcieRoot, gpu.gpusched.io/numaNode; at most 16 candidates), the
 * best-linked set first, as the engine chooses whole GPUs (core/gpulink.h).
 * The search is a bounded backtracking (GS_DRA_MAX_STEPS); past the bound the claim does not
 * fit. Pure data, no I/O, no global state; not thread-safe per state. */
#ifndef GS_DRA_H
#define GS_DRA_H

#include "quantity.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_DRA_NAME_MAX     64  /* a device, pool or driver name (DNS label / subdomain) */
#define GS_DRA_QNAME_MAX    128 /* "domain/name" of an attribute or capacity */
#define GS_DRA_POOL_MAX     254 /* a pool name (the node's name, for node-local pools) */
#define GS_DRA_STR_MAX      72  /* a string or version attribute (API: 64) */
#define GS_DRA_MAX_ATTRS    32  /* attributes and capacities of one device (API: 32) */
#define GS_DRA_MAX_CONSUME  2   /* consumesCounters entries of one device (API: 2) */
#define GS_DRA_MAX_COUNTERS 32  /* counters of one counter set (API: 32) */
#define GS_DRA_MAX_REQ      8   /* requests of one claim */
#define GS_DRA_MAX_SUB      8   /* firstAvailable alternatives of one request */
#define GS_DRA_MAX_CONS     8   /* constraints of one claim */
#define GS_DRA_MAX_COUNT    32  /* devices one request takes */
#define GS_DRA_MAX_STEPS    200000
#define GS_DRA_MAX_TAINTS   16  /* taints of one device (API: 16) */
#define GS_DRA_MAX_TOL      16  /* tolerations of one request (API: 16) */
#define GS_DRA_KEY_MAX      320 /* a label name: prefix (253) '/' name (63) */
#define GS_DRA_LVALUE_MAX   64  /* a label value (63) */

enum gs_dra_type {
    GS_DRA_NONE = 0,
    GS_DRA_INT,
    GS_DRA_BOOL,
    GS_DRA_STRING,
    GS_DRA_VERSION,
    GS_DRA_QUANTITY /* a capacity */
};

struct gs_dra_value {
    uint8_t type; /* enum gs_dra_type */
    bool b;
    int64_t i;
    struct gs_quantity q;
    char s[GS_DRA_STR_MAX];
};

/* An attribute or a capacity: name is always qualified ("gpu.gpusched.io/type"; the reader
 * qualifies a bare name with the device's driver). */
struct gs_dra_attr {
    char name[GS_DRA_QNAME_MAX];
    bool capacity;
    struct gs_dra_value v;
};

/* A device taint's effect, and a toleration's (ANY: the toleration names none). Only NoSchedule
 * and NoExecute keep a device from being allocated; None and effects this build does not know
 * are informational (upstream: "consumers must treat unknown effects like None"). */
enum gs_dra_effect {
    GS_DRA_EFFECT_ANY = 0,
    GS_DRA_EFFECT_NONE,
    GS_DRA_EFFECT_NOSCHEDULE,
    GS_DRA_EFFECT_NOEXECUTE,
    GS_DRA_EFFECT_OTHER
};

struct gs_dra_taint {
    char key[GS_DRA_KEY_MAX];
    char value[GS_DRA_LVALUE_MAX];
    uint8_t effect; /* enum gs_dra_effect, never ANY */
};

enum gs_dra_tol_op { GS_DRA_TOL_EQUAL = 0, GS_DRA_TOL_EXISTS, GS_DRA_TOL_OTHER };

/* A request's toleration: key "" matches every key (with Exists), effect ANY every effect. */
struct gs_dra_toleration {
    char key[GS_DRA_KEY_MAX];
    char value[GS_DRA_LVALUE_MAX];
    uint8_t op;     /* enum gs_dra_tol_op; OTHER tolerates nothing */
    uint8_t effect; /* enum gs_dra_effect */
};

struct gs_dra_consume {
    int32_t set; /* index into the world's counter sets */
    uint8_t n;
    int8_t counter[GS_DRA_MAX_COUNTERS]; /* index into the set's counters */
    int64_t milli[GS_DRA_MAX_COUNTERS];
};

struct gs_dra_device {
    char driver[GS_DRA_NAME_MAX];
    char pool[GS_DRA_POOL_MAX];
    char name[GS_DRA_NAME_MAX];
    int32_t node; /* the caller's node id; -1: every node (allNodes) */
    bool tainted; /* a NoSchedule or NoExecute taint: allocated only where a request tolerates
                   * every such taint (gs_dra_tolerated) */
    uint16_t ntaints;
    const struct gs_dra_taint *taints; /* the driver's and DeviceTaintRules', borrowed */
    /* allowMultipleAllocations (read by CEL selectors only) */
    bool multi_alloc;
    uint8_t nattrs;
    struct gs_dra_attr attrs[GS_DRA_MAX_ATTRS];
    uint8_t nconsume;
    struct gs_dra_consume consume[GS_DRA_MAX_CONSUME];
};

struct gs_dra_counterset {
    char driver[GS_DRA_NAME_MAX];
    char pool[GS_DRA_POOL_MAX];
    char name[GS_DRA_NAME_MAX];
    int32_t node;
    uint8_t n;
    char counter[GS_DRA_MAX_COUNTERS][GS_DRA_NAME_MAX];
    int64_t milli[GS_DRA_MAX_COUNTERS]; /* each counter's value */
};

/* Devices and counter sets, borrowed by the functions below. */
struct gs_dra_world {
    const struct gs_dra_device *dev;
    int32_t ndev;
    const struct gs_dra_counterset *sets;
    int32_t nsets;
};

/* The attribute (or capacity) named domain/name of a device, or NULL. */
const struct gs_dra_attr *gs_dra_attr_find(const struct gs_dra_device *d, const char *domain,
                                           size_t dlen, const char *name, size_t nlen,
                                           bool capacity);
/* A device's string attribute named by a qualified name ("gpu.gpusched.io/profile"), or
 * NULL. */
const char *gs_dra_attr_str(const struct gs_dra_device *d, const char *qname);
/* Whether tolerations tol[0..ntol) tolerate every NoSchedule and NoExecute taint of d (as
 * k8s.io/dynamic-resource-allocation's allocator decides: ToleratesTaint per taint). */
bool gs_dra_tolerated(const struct gs_dra_device *d, const struct gs_dra_toleration *tol, int ntol);
/* Whether toleration t tolerates taint x (resourceclaim.ToleratesTaint). */
bool gs_dra_tolerates(const struct gs_dra_toleration *t, const struct gs_dra_taint *x);

/* The device named driver/pool/name, or -1. */
int gs_dra_find(const struct gs_dra_world *w, const char *driver, const char *pool,
                const char *name);

/* What is taken in a world. Heap arrays sized for it (gs_dra_state_init), with indices of the
 * world built there: the GPU each device is part of, the devices of each counter set, the
 * devices by name. */
struct gs_dra_state {
    const struct gs_dra_world *w;
    int32_t *owner;     /* per device: taker id (>= 0), or -1 free */
    int64_t *used;      /* per set x GS_DRA_MAX_COUNTERS: consumed milli */
    int32_t *gpu;       /* per device: its GPU (parentUUID, else uuid, on its node) as a dense id,
                         * or -1 */
    int32_t *gpu_taken; /* per GPU id: devices of it taken */
    int32_t *set_off, *set_devs; /* devices consuming from set k: set_devs[set_off[k]..[k+1]) */
    int32_t *byname;             /* device indices sorted by (name, pool, driver) */
    /* per device (the caller's, may be NULL: 1 each): what keeping the device allocatable is
     * worth to the claims to come, e.g. the demand for its profile. The fragmentation-aware
     * choice keeps the most weight of other devices of the GPU allocatable. */
    const double *weight;
};

/* Returns 0 or GS_ENOMEM. */
int gs_dra_state_init(struct gs_dra_state *s, const struct gs_dra_world *w);
/* gs_dra_find through the state's index (O(log n)). */
int gs_dra_state_find(const struct gs_dra_state *s, const char *driver, const char *pool,
                      const char *name);
void gs_dra_state_release(struct gs_dra_state *s);
/* Whether device dev is free and its consumption fits the counters left (taints are the
 * candidates' business: gs_dra_sub.cand). */
bool gs_dra_fits(const struct gs_dra_state *s, int dev);
/* Take device dev for owner (its counters consumed even when they do not fit: an allocation
 * read from the API server is a fact), or give it back (owner -1). */
void gs_dra_take(struct gs_dra_state *s, int dev, int32_t owner);
void gs_dra_give(struct gs_dra_state *s, int dev);

enum gs_dra_mode { GS_DRA_EXACT = 0, GS_DRA_ALL };

/* One alternative of a request. cand: the devices (world indices, ascending) its class's and
 * its own selectors admit and whose taints it tolerates, on any node; bynode (NULL: none, the
 * search then scans cand): the same devices ordered by (node, index), so that a node's are
 * found at once (gs_dra_claim_index). Both owned by the caller. */
struct gs_dra_sub {
    char name[2 * GS_DRA_NAME_MAX]; /* "req" or, for firstAvailable, "req/sub" */
    uint8_t mode;                   /* enum gs_dra_mode */
    int32_t count;                  /* GS_DRA_EXACT: 1..GS_DRA_MAX_COUNT */
    const int32_t *cand;
    const int32_t *bynode;
    int32_t ncand;
    int32_t ntainted; /* devices the selectors admit that are left out for their taints */
};

struct gs_dra_req {
    char name[GS_DRA_NAME_MAX];
    uint8_t nsub; /* 1 for exactly */
    struct gs_dra_sub sub[GS_DRA_MAX_SUB];
};

/* matchAttribute (all devices of the named requests have the same value of attr) or
 * distinctAttribute (all different). reqs: bit k names request k; 0: every request. */
struct gs_dra_constraint {
    uint32_t reqs;
    bool distinct;
    char attr[GS_DRA_QNAME_MAX];
};

struct gs_dra_claim {
    uint8_t nreq;
    struct gs_dra_req req[GS_DRA_MAX_REQ];
    uint8_t ncons;
    struct gs_dra_constraint cons[GS_DRA_MAX_CONS];
};

/* One claim's allocation: per result, the request (or "req/sub") it answers and the device. */
struct gs_dra_result {
    int32_t n;
    int32_t dev[GS_DRA_MAX_REQ * GS_DRA_MAX_COUNT];
    int16_t req[GS_DRA_MAX_REQ * GS_DRA_MAX_COUNT]; /* request index */
    int8_t sub[GS_DRA_MAX_REQ * GS_DRA_MAX_COUNT];  /* alternative index */
};

/* Set alternative sb's bynode, in store (room for its ncand, owned by the caller), from its
 * cand and w; left NULL when a candidate is not a device of w. gs_dra_claim_index does it for
 * every alternative of a claim (store: room for all their ncand). */
void gs_dra_sub_index(struct gs_dra_sub *sb, const struct gs_dra_world *w, int32_t *store);
void gs_dra_claim_index(struct gs_dra_claim *c, const struct gs_dra_world *w, int32_t *store);

/* Allocate claim on node (devices of that node or of every node) in s for owner: 0 with the
 * devices taken in s and listed in out; GS_ENOFIT (s unchanged) when no choice fits. Never
 * fails otherwise. */
int gs_dra_allocate(struct gs_dra_state *s, const struct gs_dra_claim *claim, int32_t node,
                    int32_t owner, struct gs_dra_result *out);
/* The name of result k's request: "req" or "req/sub". */
const char *gs_dra_result_request(const struct gs_dra_claim *claim, const struct gs_dra_result *r,
                                  int k);

#endif
