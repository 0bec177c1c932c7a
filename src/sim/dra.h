/* dra.h - DRA allocation on partitionable GPUs, simulated: kube-scheduler's first fit against
 * gpusched's allocator, on the same arrivals.
 *
 * The cluster is nodes of one MIG-capable model whose GPUs are all partitionable (dynamic MIG
 * through DRA): their ResourceSlices are the ones the agent publishes (formats/draslice.c),
 * read back by the scheduler's reader (formats/draobj.c) into an allocation world
 * (core/dra.h); the workload is pods that each name one ResourceClaim of one device (a MIG
 * profile by a CEL selector on the class mig.gpusched.io, or a whole GPU of class
 * gpu.gpusched.io), prepared by the scheduler's claim code (CEL evaluated over every device).
 * Pods arrive as Poisson processes per class, wait in a FIFO queue (each pass tries every
 * pending pod, as kube-scheduler retries them), run for a lognormal time and free their
 * device (the dynamic MIG instance is destroyed).
 *
 * Policies:
 *   firstfit  kube-scheduler v1.37's way: among the nodes where the claim can be allocated,
 *             the one its default scoring prefers (NodeResourcesFit LeastAllocated; a pod's
 *             CPU and memory requests here scale with its compute slices, so the node with
 *             the fewest compute slices allocated, ties to the first node); on that node the
 *             allocator takes the first device in slice order whose counters fit.
 *   gpusched  gpusched's scheduler: the daemon's cycle (core/cycle.h, engine policy gpusched)
 *             with its DRA hooks (formats/dracycle.h) on a cluster of the nodes with CPU and
 *             memory only, each pass one cycle over the pending pods; a node fits when the
 *             pod's claim can be allocated there, the engine chooses among those nodes as it
 *             does for the daemon's claim-only pods, and core/dra.c's gs_dra_allocate chooses
 *             the device fragmentation-aware (partly used GPUs first, then the placement that
 *             leaves the most other placements of its GPU allocatable, weighted by the devices
 *             of each kind held now), so the simulator and the daemon choose the same node and
 *             device for the same claims.
 * Results: the time-averaged share of compute slices allocated after the warm-up, waits
 * (p50, p99, per class), pods started and still pending at the end, and pod-passes that
 * failed while the cluster had enough free compute slices for the pod (fragmentation). */
#ifndef GS_SIM_DRA_H
#define GS_SIM_DRA_H

#include "../base/buf.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_DRASIM_MAX_CLASSES 8

struct gs_drasim_class {
    const char *name;
    const char *profile; /* MIG profile, NULL: a whole GPU */
    double per_hour, median_s, sigma;
};

struct gs_drasim_spec {
    const char *model; /* catalog name */
    int nodes, gpus;
    double duration_s, warmup_s;
    int nclasses;
    struct gs_drasim_class cls[GS_DRASIM_MAX_CLASSES];
};

enum gs_drasim_policy { GS_DRASIM_FIRSTFIT = 0, GS_DRASIM_GPUSCHED, GS_DRASIM_POLICIES };

struct gs_drasim_result {
    double alloc_share; /* compute slices allocated, time average after warm-up */
    double wait_p50, wait_p99, wait_mean;
    int arrived, started, pending_end;
    long frag_fails;     /* pod-passes refused while enough compute slices were free */
    double unalloc_full; /* gs_drasim_fill's, for the same seed (gs_drasim_report) */
    int cls_arrived[GS_DRASIM_MAX_CLASSES], cls_started[GS_DRASIM_MAX_CLASSES];
    double cls_wait_p99[GS_DRASIM_MAX_CLASSES];
};

/* The MIG-heavy default: 4 nodes of 8 A100-80GB, inference on 1g/2g/3g slices, 4g
 * fine-tuning and whole-GPU training, about the cluster's capacity. */
extern const struct gs_drasim_spec gs_drasim_default;

struct gs_error;

const char *gs_drasim_policy_name(enum gs_drasim_policy p);
/* One run. Returns 0 or an error (err says why). */
int gs_drasim_run(const struct gs_drasim_spec *sp, enum gs_drasim_policy pol, uint64_t seed,
                  struct gs_drasim_result *out, struct gs_error *err);
/* The FGD paper's measure on the same GPUs: pods drawn from the class mix (weights: the
 * classes' rates), never leaving, each placed or refused, until the compute slices they ask
 * reach the cluster's; *unallocated gets the share of compute slices left unallocated then
 * (what fragmentation strands). */
int gs_drasim_fill(const struct gs_drasim_spec *sp, enum gs_drasim_policy pol, uint64_t seed,
                   double *unallocated, struct gs_error *err);
/* Every policy over seeds lo..hi: a table (mean and standard deviation per policy) or JSON. */
int gs_drasim_report(const struct gs_drasim_spec *sp, uint64_t lo, uint64_t hi, bool json,
                     struct gs_buf *out, struct gs_error *err);

#endif
