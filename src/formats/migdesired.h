/* migdesired.h - the desired MIG layout of some of a node's GPUs: what the scheduler asks
 * the node agent's MIG manager to make of them (dynamic MIG), written on the Node as the
 * annotation GS_MIG_DESIRED_ANNOTATION.
 *
 *   {"v":1,"generation":7,"gpus":[{"i":0,"mig":["3g.40gb@0","1g.10gb@4","1g.10gb@5"]},
 *                                 {"i":2,"whole":true}]}
 *
 * generation (1 to 2^63-1) grows with each change the scheduler writes; the agent reports
 * the last one it has finished with in the inventory (inventory.h: generation, mig_state,
 * mig_error). Each GPU listed by physical index gets either "mig", the complete list of the
 * instances it holds afterwards (profile@start, the inventory's notation; [] is MIG mode on
 * with no instances), or "whole": true (MIG mode off). GPUs not listed are left as they are.
 * A reader refuses what it cannot use exactly (an unknown version or field, an index given
 * twice, both whole and mig or neither, a profile that is not NVIDIA's profile syntax, a
 * start outside 0 to 7, more GPUs or instances than a node or GPU holds, more than
 * GS_MIG_DESIRED_MAX_BYTES) with the field path; it knows no GPU model, so whether a layout
 * fits its GPU is the agent's to check. Plain data, no heap in the struct; pure functions,
 * thread-safe. */
#ifndef GS_MIGDESIRED_H
#define GS_MIGDESIRED_H

#include "inventory.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_MIG_DESIRED_ANNOTATION "gpusched.io/mig-desired"
#define GS_MIG_DESIRED_VERSION    1
#define GS_MIG_DESIRED_MAX_BYTES  16384

struct gs_mig_desired_gpu {
    int index;  /* physical GPU index */
    bool whole; /* MIG mode off; else MIG mode on with exactly inst[0..ninst) */
    int ninst;
    struct gs_inv_inst inst[GS_INV_MAX_INST];
};

struct gs_mig_desired {
    int version;
    int64_t generation; /* > 0 */
    int ngpus;          /* sorted by index, each index once */
    struct gs_mig_desired_gpu gpus[GS_MAX_GPUS_NODE];
};

struct gs_error;

/* Read the annotation's text (len bytes). Returns 0, or GS_EINVAL with the field path in err
 * ("gpusched.io/mig-desired annotation: gpus[1].mig[2]: ..."); *out is zeroed then. */
int gs_mig_desired_read(const char *text, size_t len, struct gs_mig_desired *out,
                        struct gs_error *err);
/* The annotation's text, GPUs in index order (malloc'd, the caller frees); NULL when out of
 * memory or over GS_MIG_DESIRED_MAX_BYTES. */
char *gs_mig_desired_write(const struct gs_mig_desired *d);
/* The entry for physical GPU index, or NULL when d does not list it. */
const struct gs_mig_desired_gpu *gs_mig_desired_find(const struct gs_mig_desired *d, int index);

#endif
