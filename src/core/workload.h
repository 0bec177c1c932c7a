/* workload.h - what a pod asks of a node: CPU, memory and one kind of GPU device.
 *
 * A request is plain data (no heap). GPU kinds: none (CPU-only); whole GPUs (nvidia.com/gpu:
 * N; on time-sliced or MPS GPUs this takes N replicas, as NVIDIA's device plugin
 * advertises them); a milli-GPU fraction of one GPU; one MIG instance named by profile
 * ("3g.40gb"). model_mask restricts GPU models (bit = catalog id; 0 = any); the selector
 * must match node labels. Helpers are pure and thread-safe. */
#ifndef GS_WORKLOAD_H
#define GS_WORKLOAD_H

#include "cluster.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_MAX_SELECTOR 4
#define GS_MIG_NAME_MAX 24

enum gs_req_kind { GS_REQ_NONE = 0, GS_REQ_GPU, GS_REQ_FRACTION, GS_REQ_MIG };

struct gs_request {
    int64_t cpu_milli;
    int64_t mem_mib;
    uint8_t kind;
    uint8_t gpus;              /* GS_REQ_GPU: count; others: 1 (0 for NONE) */
    int16_t milli;             /* per GPU: 1000 for whole, < 1000 for a fraction */
    char mig[GS_MIG_NAME_MAX]; /* GS_REQ_MIG: profile name */
    uint32_t model_mask;
    int32_t gpu_mem_mib; /* memory the work needs on each device (0 = no check): whole GPUs
                          * need a model this large, MPS replicas a per-client share this
                          * large; time-slicing does not isolate memory and is not checked */
    uint8_t nsel;
    struct gs_label sel[GS_MAX_SELECTOR];
};

/* GPU total requested in the accounting units of docs/architecture.md for a given model (MIG units
 * depend on the model; for kind MIG with model < 0 the smallest matching profile across models). */
double gs_request_units(const struct gs_request *r, int model);
/* Total milli-GPU of a milli-accounted request (gpus x milli), 0 for MIG/NONE. */
int64_t gs_request_total_milli(const struct gs_request *r);
/* 64-bit signature of every field filters and scores read (never 0): equal requests have
 * equal signatures. */
uint64_t gs_request_sig(const struct gs_request *r);
/* Shape tag for GpuClustering: 0 share, 1..4 for 1/2/4/8 GPUs, 5 other, -1 none. */
int gs_request_affinity(const struct gs_request *r);

#endif
