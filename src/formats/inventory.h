/* inventory.h - the node inventory: the one truth about a node's GPUs, which the node agent
 * publishes on its Node (annotation GS_INVENTORY_ANNOTATION) and the scheduler builds the
 * node from.
 *
 * Per GPU: physical index, UUID, model (catalog name, or the driver's product name for a
 * model the catalog lacks), memory, health, and its mode: whole, time-slicing or MPS with N
 * replicas, or MIG with every instance's profile and placement start. The text is compact
 * JSON, versioned and size-bounded:
 *   {"v":1,"gpus":[{"i":0,"uuid":"GPU-8f...","model":"A100-80GB","mem":81920,
 *                   "mig":["3g.40gb@0","3g.40gb@4"]},
 *                  {"i":2,"uuid":"GPU-1c...","model":"A100-80GB","mem":81920},
 *                  {"i":3,...,"sharing":"time-slicing","replicas":4,"health":"xid 79"}]}
 * A reader refuses what it cannot use exactly (an unknown version, a field it does not know,
 * an index given twice, more GPUs or instances than a node or GPU holds, more than
 * GS_INVENTORY_MAX_BYTES) with the field path; it never guesses. Plain data, no heap in the
 * struct; pure functions, thread-safe. */
#ifndef GS_INVENTORY_H
#define GS_INVENTORY_H

#include "../core/cluster.h"
#include "../core/workload.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_INVENTORY_ANNOTATION "gpusched.io/inventory"
#define GS_INVENTORY_VERSION    1
#define GS_INVENTORY_MAX_BYTES  16384
#define GS_INV_MAX_INST         8

struct gs_inv_inst {
    char profile[GS_MIG_NAME_MAX]; /* NVIDIA name: "3g.40gb", "1g.10gb+me" */
    uint8_t start;                 /* placement start, memory slices */
};

struct gs_inv_gpu {
    int index;
    char uuid[96];
    char model[96]; /* catalog name, or the driver's product name */
    uint32_t mem_mib;
    bool healthy;
    char health[64]; /* why not healthy */
    uint8_t mode;    /* enum gs_gpu_mode: WHOLE, MIG, TIMESLICE or MPS */
    uint8_t replicas;
    int ninst;
    struct gs_inv_inst inst[GS_INV_MAX_INST];
};

struct gs_inventory {
    int version;
    int ngpus; /* sorted by index */
    struct gs_inv_gpu gpus[GS_MAX_GPUS_NODE];
};

struct gs_error;

/* Read the annotation's text (len bytes). Returns 0, or GS_EINVAL with the field path in
 * err ("gpus[1].mig[2]: ..."). */
int gs_inventory_read(const char *text, size_t len, struct gs_inventory *out, struct gs_error *err);
/* The annotation's text, GPUs in index order (malloc'd, the caller frees); NULL when out of
 * memory or over GS_INVENTORY_MAX_BYTES. */
char *gs_inventory_write(const struct gs_inventory *inv);

#endif
