/* draslice.h - the ResourceSlices (resource.k8s.io/v1) of gpusched's DRA driver
 * (gpu.gpusched.io) for one node, built from the node's GPUs as the agent sees them, and the
 * names of the devices they publish.
 *
 * One pool per node, named after the node; every slice has nodeName, generateName
 * "<node>-gpu.gpusched.io-", an ownerReference to the Node (controller: true) and the pool's
 * generation and resourceSliceCount. Devices (attribute names unqualified, hence in the
 * driver's domain: the CEL expression device.attributes['gpu.gpusched.io'].type reads them):
 *   - a whole GPU "gpu-<index>": type "gpu", uuid, productName (catalog name), index (int),
 *     mig (bool: MIG mode on now); capacity memory (bytes) and multiprocessors (when the
 *     catalog has them). Published for a GPU not in MIG mode, and for a partitionable one.
 *   - a MIG instance that exists (static MIG) "gpu-<index>-mig-<profile>-<start>", the
 *     profile's '.' and '+' spelt '-' (gpu-0-mig-3g-40gb-4): type "mig", uuid (the MIG
 *     device's), profile ("3g.40gb"), parentUUID, parentIndex, productName, placementStart,
 *     dynamic = false; capacity memory and multiprocessors. A GPU in MIG mode without dynamic MIG
 * publishes only its instances.
 *   - with dynamic MIG, a partitionable GPU: a MIG-capable GPU whose instances (if any) are
 *     all the driver's own dynamic ones, whatever its MIG mode now (prepare switches it). It
 *     has a counter set "gpu-<index>-counters" in a slice of counter sets (spec.sharedCounters,
 *     at most 8 sets a slice) with counters compute-slices (the model's 7 or 4),
 *     memory-slice-0..N-1 (1 each), media-extension (1: the one OFA/JPEG path a "+me"
 *     profile holds), media-engines (only on models with a "+me.all" profile: what every
 *     profile but a "-me" one takes 1 of, and "+me.all" takes all of) and
 *     <profile>-instances (a profile whose max count is below what could otherwise fit).
 *     Its whole-GPU device consumes every counter; each valid placement of each profile is a
 *     device "gpu-<index>-part-<profile>-<start>" (type "mig", profile, parentUUID,
 *     parentIndex, productName, placementStart, dynamic = true; capacity as above) that
 *     consumes its compute slices, the memory slices from start to start+size-1, and its
 *     media and instance counters. A set of placements fits the counters exactly when
 *     core/mig.c's gs_mig_placement_valid accepts it (the unit test proves it per model).
 * A GPU whose health is not good taints each of its devices
 * (gpu.gpusched.io/unhealthy: NoSchedule), so a scheduler allocates none of them.
 * Device slices hold at most 64 devices (the API's limit when counters or taints are used);
 * counter slices come first, then device slices, in GPU order: the same GPUs always give
 * the same slices.
 * Pure functions; thread-safe. */
#ifndef GS_DRASLICE_H
#define GS_DRASLICE_H

#include "../core/catalog.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_DRA_DRIVER             "gpu.gpusched.io"
#define GS_DRASLICE_MAX_GPUS      16
#define GS_DRASLICE_MAX_INST      8
#define GS_DRASLICE_MAX_DEVICES   64 /* a slice's, when counters or taints are used */
#define GS_DRASLICE_MAX_SETS      8  /* counter sets a slice */
#define GS_DRASLICE_NAME_MAX      64 /* a device name is a DNS label: 63 characters */
#define GS_DRASLICE_UNHEALTHY_KEY GS_DRA_DRIVER "/unhealthy"

struct gs_draslice_inst {
    uint8_t profile; /* index into the model's profiles */
    uint8_t start;   /* placement start, memory slices */
    char uuid[96];   /* MIG-... */
    bool dynamic;    /* created by the DRA driver for a claim */
};

struct gs_draslice_gpu {
    int index;
    char uuid[96];
    int model;        /* catalog id; a model the catalog lacks: gs_catalog_other() or < 0 */
    char product[96]; /* the driver's product name, for a model the catalog lacks */
    uint64_t mem_mib;
    bool mig_enabled;
    bool healthy;
    int ninst;
    struct gs_draslice_inst inst[GS_DRASLICE_MAX_INST];
    /* links, published on the whole GPU's device where known (core/dra.h reads them) */
    bool numa_ok;
    uint8_t numa;          /* gpu.gpusched.io/numaNode */
    char pcie_root[32];    /* resource.kubernetes.io/pcieRoot: the root complex, "pci0000:00" */
    char pcie_switch[32];  /* gpu.gpusched.io/pcieSwitch: the bridge above the GPU's port */
    uint32_t nvlink_peers; /* gpu.gpusched.io/nvlinkPeers: bit j, an NVLink to GPU index j */
    uint8_t nvlinks;       /* gpu.gpusched.io/nvlinks: links to each peer */
};

struct gs_draslice_node {
    const char *node;     /* Node name = pool name */
    const char *node_uid; /* for the ownerReference; NULL or "": none */
    int64_t generation;   /* pool.generation */
    bool dynamic_mig;     /* publish partitionable GPUs */
    int ngpus;
    struct gs_draslice_gpu gpus[GS_DRASLICE_MAX_GPUS];
};

struct gs_error;

/* Whether GPU g of n is published partitionable (see above). */
bool gs_draslice_partitionable(const struct gs_draslice_node *n, const struct gs_draslice_gpu *g);

/* The node's slices: a JSON array of whole ResourceSlice objects (apiVersion, kind, metadata
 * with generateName and ownerReferences, spec), counter slices first. Returns the new
 * array (the caller decrefs), or NULL with GS_ENOMEM or GS_EINVAL (a node or GPU the API
 * would refuse: no node name, an index twice) in err. */
json_t *gs_draslice_build(const struct gs_draslice_node *n, struct gs_error *err);

/* The kinds of device the driver publishes. */
enum gs_dra_kind { GS_DRA_GPU = 0, GS_DRA_MIG, GS_DRA_PART };

/* A device name taken apart. */
struct gs_dra_devref {
    enum gs_dra_kind kind;
    int gpu;          /* index */
    char profile[24]; /* GS_DRA_MIG and GS_DRA_PART: the name's spelling ("3g-40gb") */
    int start;        /* GS_DRA_MIG and GS_DRA_PART: placement start */
};

/* The name of a device into out (GS_DRASLICE_NAME_MAX bytes): kind GS_DRA_GPU ignores model,
 * profile and start. */
void gs_draslice_device_name(enum gs_dra_kind kind, int gpu, int model, int profile, int start,
                             char *out, size_t size);
/* Take a device name apart ("gpu-0", "gpu-0-mig-3g-40gb-4", "gpu-1-part-1g-10gb-me-6").
 * Returns 0, or GS_EINVAL (err says why; out untouched) for a name the driver never
 * publishes. */
int gs_draslice_parse_name(const char *name, struct gs_dra_devref *out, struct gs_error *err);
/* The profile index of a name's spelling on a model ("1g-10gb-me" -> "1g.10gb+me"), or
 * GS_ENOTFOUND. */
int gs_draslice_find_profile(int model, const char *spelt);

#endif
