/* cluster.h - the engine's view of a cluster: nodes, GPUs and what is allocated on them.
 *
 * Flat arrays indexed by dense ids (node id, GPU id); a node's GPUs are contiguous
 * (gpu0 .. gpu0+ngpus-1). GPU modes: whole (milli accounting, no sharing), fractional
 * (milli-GPU shares), MIG (a placed layout; each instance is a slot), shared (time-slicing
 * or MPS replicas). The struct owns its arrays and each node's labels: gs_cluster_init /
 * gs_cluster_release; gs_cluster_copy copies them deeply.
 * Not thread-safe; the simulator gives each worker its own cluster. */
#ifndef GS_CLUSTER_H
#define GS_CLUSTER_H

#include "catalog.h"
#include "gpulink.h"
#include "labels.h"
#include "mig.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_NAME_MAX      64
#define GS_MAX_GPUS_NODE 16
#define GS_LABEL_KEY_MAX 64
#define GS_LABEL_VAL_MAX 64
#define GS_MILLI         1000

_Static_assert(GS_LINK_MAX_GPUS == GS_MAX_GPUS_NODE, "gpulink.h: one index per GPU of a node");

enum gs_gpu_mode {
    GS_GPU_WHOLE = 0, /* exclusive GPUs only */
    GS_GPU_FRACTION,  /* milli-GPU shares allowed */
    GS_GPU_MIG,       /* partitioned: instances are the allocatable slots */
    GS_GPU_TIMESLICE, /* time-slicing replicas */
    GS_GPU_MPS        /* MPS replicas */
};

struct gs_gpu {
    int16_t model;
    uint8_t mode;
    uint8_t healthy;
    int16_t milli_free; /* WHOLE / FRACTION: 0..1000 */
    uint8_t replicas;   /* TIMESLICE / MPS */
    uint8_t replicas_used;
    int32_t mem_mib;             /* framebuffer: the model's, or the node's nvidia.com/gpu.memory
                                  * for a model the catalog lacks */
    int32_t mem_used_mib;        /* TIMESLICE / MPS: memory declared by the replicas in use */
    struct gs_mig_placement mig; /* MIG: instances */
    uint8_t mig_used;            /* bit i: instance i is allocated */
    float util;                  /* simulated busy fraction of the whole GPU (0..1), used share */
    struct gs_gpu_link link;     /* links to the node's other GPUs (all zero: not known) */
};

/* One label of a selector (node selector, queue selectors): fixed size, plain data. A node's
 * own labels are a struct gs_labels, sized by the object. */
struct gs_label {
    char key[GS_LABEL_KEY_MAX];
    char val[GS_LABEL_VAL_MAX];
};

struct gs_node {
    char name[GS_NAME_MAX];
    int16_t model; /* -1: no GPUs */
    bool unschedulable;
    bool layout_guessed;       /* GPUs laid out from counts: physical indexes unknown */
    int64_t cpu_cap, cpu_free; /* millicores */
    int64_t mem_cap, mem_free; /* MiB */
    int32_t pods_cap, pods_used;
    int32_t gpu0, ngpus;
    uint16_t affinity[6];    /* pods by GPU shape: share, 1, 2, 4, 8, other (GpuClustering) */
    uint32_t version;        /* a fresh stamp on every change (gs_node_touch); caches key on it */
    struct gs_labels labels; /* owned by the node (released with the cluster) */
};

struct gs_cluster {
    struct gs_node *nodes;
    int32_t nnodes, cap_nodes;
    struct gs_gpu *gpus;
    int32_t ngpus, cap_gpus;
};

void gs_cluster_init(struct gs_cluster *c);
void gs_cluster_release(struct gs_cluster *c);
/* Add a node with ngpus GPUs of the model (model -1 and ngpus 0 for a CPU node), all in
 * the given mode (replicas for TIMESLICE/MPS; layout for MIG, may be NULL for empty MIG).
 * Returns the node id or a negative error. */
int gs_cluster_add_node(struct gs_cluster *c, const char *name, int model, int ngpus,
                        int64_t cpu_milli, int64_t mem_mib, enum gs_gpu_mode mode, int replicas,
                        const struct gs_mig_layout *layout);
/* Give the node a fresh version stamp: call after changing a node or its GPUs directly
 * (health, schedulability, mode), so cached placement scores are not reused. Thread-safe. */
void gs_node_touch(struct gs_node *n);
uint32_t gs__cluster_stamp(void);
/* Set (or replace) a label on a node. Returns 0, GS_EINVAL (key or value too long) or
 * GS_ENOMEM. */
int gs_node_set_label(struct gs_node *n, const char *key, const char *val);
const char *gs_node_label(const struct gs_node *n, const char *key);
/* Deep copy (dst must be initialised; its old content is released). */
int gs_cluster_copy(struct gs_cluster *dst, const struct gs_cluster *src);

/* Totals for reports. "units" follow the accounting unit of docs/architecture.md. */
struct gs_cluster_totals {
    int64_t gpus;       /* physical GPUs */
    double units_cap;   /* = gpus */
    double units_alloc; /* allocated GPU units */
    double units_used;  /* simulated busy units */
};
void gs_cluster_totals(const struct gs_cluster *c, struct gs_cluster_totals *t);
/* Allocated units of one GPU. */
double gs_gpu_alloc_units(const struct gs_gpu *g);

#endif
