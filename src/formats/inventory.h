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
 * With dynamic MIG (migdesired.h) it also carries what became of the scheduler's desired
 * layouts: "generation", the last gpusched.io/mig-desired generation the agent has finished
 * with (applied, or refused for good), and, while a desired layout waits (an instance it would
 * destroy is in use) or after it was refused, "mig_state" ("pending" or "failed") with
 * "mig_error", why, in short:
 *   {"v":1,"generation":7,"mig_state":"failed","mig_error":"GPU 0: ...","gpus":[...]}
 * Absent, they mean no desired layout was ever acted on (generation 0) or the last one was
 * applied; a reader also takes "mig_state":"success" (applied) from writers that say so.
 * "pending" leaves generation at the one finished before (the desired one is not finished);
 * "failed" comes with the refused generation, or with the one before when the annotation
 * itself could not be read (mig_error then quotes the reader's error).
 * Version 2 adds each GPU's links, as the agent reads them from NVML (or its fake backend):
 * "numa", its NUMA node; "pci", its PCIe path from the root complex down to the GPU, bridges
 * and switch ports separated by '/' (as under /sys/devices); "nvlink", the NVLink links to each
 * peer GPU by physical index:
 *   {"v":2,"gpus":[{"i":0,...,"numa":0,"pci":"pci0000:00/0000:00:01.0/0000:03:00.0",
 *                   "nvlink":{"1":4}},...]}
 * Version 3 adds the sharing mode "fractions": a whole GPU the agent also serves as thousandths
 * (gpusched.io/gpu-milli, each pod an MPS client of the GPU's daemon), with no replicas:
 *   {"v":3,"gpus":[{"i":0,...,"sharing":"fractions"},...]}
 * A writer writes the lowest version that says all it has to say (1 without links or
 * fractions, 2 with links, 3 with fractions), so older readers keep reading the nodes they
 * can; a reader takes 1 to 3.
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
#define GS_INVENTORY_VERSION    3 /* 3: with fractions; 2: with links; 1: neither */
#define GS_INVENTORY_MAX_BYTES  16384
#define GS_INV_MAX_INST         8
#define GS_INV_PCI_MAX          160 /* a PCIe path, NUL included */

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
    uint8_t mode;    /* enum gs_gpu_mode: WHOLE, MIG, TIMESLICE, MPS or FRACTION */
    uint8_t replicas;
    int ninst;
    struct gs_inv_inst inst[GS_INV_MAX_INST];
    /* links (version 2); absent: not known */
    bool has_numa;
    uint8_t numa;                     /* NUMA node, with has_numa */
    char pci[GS_INV_PCI_MAX];         /* PCIe path: "pci0000:00/0000:00:01.0/0000:03:00.0" */
    uint8_t nvlink[GS_MAX_GPUS_NODE]; /* NVLink links to the GPU of each physical index */
};

#define GS_INV_MIG_STATE_MAX 16
#define GS_INV_MIG_ERROR_MAX 160

struct gs_inventory {
    int version;
    int64_t generation;                   /* last mig-desired generation finished; 0: none */
    char mig_state[GS_INV_MIG_STATE_MAX]; /* "", "pending", "failed" (or "success") */
    char mig_error[GS_INV_MIG_ERROR_MAX]; /* why, with pending and failed */
    int ngpus;                            /* sorted by index */
    struct gs_inv_gpu gpus[GS_MAX_GPUS_NODE];
};

struct gs_error;

/* An instance in the inventory's notation, "<profile>@<start>" (NVIDIA's profile syntax, a
 * start of 0 to 7). Returns 0, or GS_EINVAL (out untouched). */
int gs_inv_inst_parse(const char *s, struct gs_inv_inst *out);
/* The notation of in, into out (size bytes, NUL-terminated). */
void gs_inv_inst_format(const struct gs_inv_inst *in, char *out, size_t size);

/* Whether g carries a link (a NUMA node, a PCIe path or an NVLink peer). */
bool gs_inv_gpu_has_links(const struct gs_inv_gpu *g);
/* The links between the inventory's GPUs, out[index] for each physical index below
 * GS_MAX_GPUS_NODE (core/gpulink.h: NVLink counts as the lower of the two GPUs' words, the PCIe
 * level from their paths and NUMA nodes); all zero where not known. */
void gs_inventory_links(const struct gs_inventory *inv, struct gs_gpu_link out[GS_MAX_GPUS_NODE]);

/* Read the annotation's text (len bytes). Returns 0, or GS_EINVAL with the field path in
 * err ("gpus[1].mig[2]: ..."). */
int gs_inventory_read(const char *text, size_t len, struct gs_inventory *out, struct gs_error *err);
/* The annotation's text, GPUs in index order (malloc'd, the caller frees); NULL when out of
 * memory or over GS_INVENTORY_MAX_BYTES. */
char *gs_inventory_write(const struct gs_inventory *inv);

#endif
