/* tenant.h - queues with quotas, borrowing and fair shares; namespace hard caps.
 *
 * A queue (the GPUQueue CRD) has a parent (a hierarchy; usage counts up the chain), a
 * deserved quota and a limit per resource, an over-quota weight and a priority. Resources
 * are a fixed vector: GPU-equivalents in the accounting unit of docs/architecture.md (milli), whole
 * GPUs (nvidia.com/gpu), CPU (millicores), memory (MiB) and up to GS_QR_MIG_MAX MIG resource names
 * (nvidia.com/mig-3g.40gb), registered as they are first named. Native ResourceQuota objects are
 * hard caps per namespace over the same vector.
 *
 * Rules (gs_tenants_admit, gs_tenants_reclaimable):
 *   - a pod never takes its queue (or any ancestor) over its limit, nor its namespace over a
 *     hard cap;
 *   - within deserved it is "owed": it may reclaim capacity lent to other queues;
 *   - beyond deserved it borrows idle capacity only, and what it borrows can be reclaimed;
 *   - a reclaim never pushes the victim's queue (or an ancestor that is not also the
 *     reclaimer's) below its deserved share.
 * Fair shares (gs_tenants_fair) give each queue its deserved share first, then lend the
 * rest of the cluster to queues that want more in proportion to weight (water-filling over
 * GPU-equivalents); the dominant resource share orders borrowers. Pure data, no I/O; not
 * thread-safe. */
#ifndef GS_TENANT_H
#define GS_TENANT_H

#include "workload.h"

#include <stdbool.h>
#include <stdint.h>

enum { GS_QR_UNITS = 0, GS_QR_GPU, GS_QR_CPU, GS_QR_MEM, GS_QR_MIG0 };
#define GS_QR_MIG_MAX   8
#define GS_QR_COUNT     (GS_QR_MIG0 + GS_QR_MIG_MAX)
#define GS_QR_UNLIMITED INT64_MAX
#define GS_QUEUE_NONE   (-1)

struct gs_qvec {
    int64_t v[GS_QR_COUNT];
};

struct gs_queue {
    char name[GS_NAME_MAX];
    int32_t parent; /* queue index or GS_QUEUE_NONE */
    struct gs_qvec deserved;
    struct gs_qvec limit; /* GS_QR_UNLIMITED where none */
    int32_t weight;       /* over-quota weight, >= 1 */
    int32_t priority;
    struct gs_qvec used;   /* allocated: own pods and children's */
    struct gs_qvec demand; /* pending requests (set by the caller before gs_tenants_fair) */
    int64_t fair_units;    /* fair share of GPU-equivalents (milli), from gs_tenants_fair */
};

struct gs_nsquota {
    char ns[GS_NAME_MAX];
    char name[GS_NAME_MAX]; /* the ResourceQuota object */
    struct gs_qvec hard;    /* GS_QR_UNLIMITED where none */
    struct gs_qvec used;
};

struct gs_tenants {
    struct gs_queue *q;
    int32_t nq, capq;
    struct gs_nsquota *ns;
    int32_t nns, capns;
    int nmig;
    char mig[GS_QR_MIG_MAX][GS_MIG_NAME_MAX + 16]; /* "nvidia.com/mig-<profile>" */
    struct gs_qvec cap; /* cluster capacity (units, GPUs, CPU, memory) for shares */
};

enum gs_admit {
    GS_ADMIT_OWED = 0, /* within deserved (every level): may reclaim */
    GS_ADMIT_BORROW,   /* beyond deserved, within limits: idle capacity only */
    GS_ADMIT_DENY      /* over a limit or a namespace hard cap */
};

struct gs_error;

void gs_tenants_init(struct gs_tenants *t);
void gs_tenants_release(struct gs_tenants *t);
/* Add a queue (parent "" or NULL: a root). Parents must be added first. Returns its index,
 * GS_EINVAL (duplicate, unknown parent) or GS_ENOMEM. */
int gs_tenants_add_queue(struct gs_tenants *t, const char *name, const char *parent, int32_t weight,
                         int32_t priority, struct gs_error *err);
int gs_tenants_find(const struct gs_tenants *t, const char *name);
/* Dimension of a resource name: "gpusched.io/gpu-units" (GPU-equivalents), "nvidia.com/gpu",
 * "cpu", "memory", "nvidia.com/mig-<profile>" (registered on first use). A ResourceQuota
 * key's "requests." / "limits." prefix is accepted. Returns the dimension, GS_ENOTFOUND for
 * a resource gpusched does not account, GS_ENOSPC when too many MIG names are in use. */
int gs_tenants_dim(struct gs_tenants *t, const char *resource);
/* Set a quantity of a resource (Kubernetes quantity text) in a vector, in the dimension's
 * unit. Returns 0, GS_EINVAL (bad quantity, message says which), GS_ENOTFOUND, GS_ENOSPC. */
int gs_tenants_set(struct gs_tenants *t, struct gs_qvec *v, const char *resource,
                   const char *quantity, struct gs_error *err);
/* Add a namespace hard cap (a ResourceQuota); hard starts unlimited. Returns its index. */
int gs_tenants_add_nsquota(struct gs_tenants *t, const char *ns, const char *name);

void gs_qvec_zero(struct gs_qvec *v);
void gs_qvec_unlimited(struct gs_qvec *v);
/* What a request accounts for (GPU-equivalents with the smallest matching model). */
void gs_tenants_demand(struct gs_tenants *t, const struct gs_request *r, struct gs_qvec *out);
/* Charge (sign +1) or release (-1) a pod's vector to its queue and ancestors and to every
 * hard cap of its namespace (queue may be GS_QUEUE_NONE, ns may be NULL). */
void gs_tenants_charge(struct gs_tenants *t, int queue, const char *ns, const struct gs_qvec *d,
                       int sign);
/* Whether a pod of this queue and namespace may take d now; why (may be NULL) says which
 * limit or cap, by how much, when denied, and what deserved share it exceeds when borrowing. */
enum gs_admit gs_tenants_admit(const struct gs_tenants *t, int queue, const char *ns,
                               const struct gs_qvec *d, char *why, unsigned why_size);
/* Whether evicting d (a pod of victim_queue) for a pod of queue reclaimer keeps the victim's
 * queue, and each ancestor not shared with the reclaimer, at or above its deserved share. */
bool gs_tenants_reclaimable(const struct gs_tenants *t, int victim_queue, int reclaimer,
                            const struct gs_qvec *d);
/* Fair shares of GPU-equivalents from deserved, weights, limits and demand (used + pending
 * demand) over cap.v[GS_QR_UNITS]. Fills fair_units of every queue. */
void gs_tenants_fair(struct gs_tenants *t);
/* Dominant resource share of a queue over the cluster capacity (units, CPU, memory),
 * divided by its weight; lower goes first when borrowing. */
double gs_tenants_drf(const struct gs_tenants *t, int queue);
/* "nvidia.com/mig-3g.40gb" etc. for a dimension (static or table storage). */
const char *gs_tenants_dim_name(const struct gs_tenants *t, int dim);
/* A value of a dimension as text ("3", "1.5", "500m", "64Gi"). */
void gs_tenants_fmt(int dim, int64_t v, char *out, unsigned size);

#endif
