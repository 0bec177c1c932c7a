/* migmgr.h - the MIG manager: make a node's GPUs match a mig-parted config.
 *
 * gs_migmgr_plan reads what every GPU holds (backend) and what the named config asks for it
 * (formats/migparted.c resolves entries by device index and device-filter), and plans per
 * GPU: nothing (already as asked: same MIG mode and the same instances by profile), or the
 * instances to destroy and the ones to create at exact placements (core/mig.c). Instances
 * still asked for are kept where the rest fits around them; an instance a pod holds (its
 * MIG device UUID in in_use), or a GPU a pod holds whole (its GPU UUID in in_use), is never
 * destroyed or switched unless force is set: the plan then fails and nothing changes (the
 * backend refuses to destroy an instance a process holds, too). The whole node is
 * checked before anything is touched. gs_migmgr_apply executes a plan (destroy, mode,
 * create); gs_migmgr_plan_str prints it (--dry-run).
 *
 * gs_migmgr_plan_desired plans a desired layout (formats/migdesired.h, dynamic MIG) with
 * its EXACT placements: per listed GPU, every instance the list names at the same profile and
 * start is kept (not destroyed and re-created: it keeps its UUID), the others are destroyed,
 * the missing ones created at the given starts; "whole" destroys them all and turns MIG off.
 * Every listed GPU is checked against its model (profile, start, overlaps, counts, media
 * engines) before anything is planned: one invalid GPU refuses the whole layout. A GPU whose
 * plan would destroy an instance a pod holds, or change the MIG mode of a GPU a pod holds,
 * waits (wait, why naming the instance and the pod) while the others go ahead. */
#ifndef GS_AGENT_MIGMGR_H
#define GS_AGENT_MIGMGR_H

#include "../formats/migparted.h"
#include "gpu.h"

#define GS_MIGMGR_WHY_MAX 200

struct gs_migmgr_gpu {
    int index, model;
    bool change;                 /* anything to do on this GPU (and it may be done now) */
    bool wait;                   /* something to do that a pod's device stands in the way of */
    char why[GS_MIGMGR_WHY_MAX]; /* with wait: the instance or GPU and the pod holding it */
    bool mode_now, mode_want;    /* MIG enabled */
    int ndestroy, ncreate, nkeep;
    struct gs_mig_inst destroy[GS_AGENT_MAX_INST], keep[GS_AGENT_MAX_INST];
    struct gs_mig_instance create[GS_AGENT_MAX_INST]; /* catalog profile index and start */
};

struct gs_migmgr_plan {
    char config[GS_MP_NAME_MAX]; /* the mig-parted config planned, or "" */
    int64_t generation;          /* the desired layout's generation planned, or 0 */
    int ngpus;
    struct gs_migmgr_gpu gpu[GS_AGENT_MAX_GPUS];
    int changes; /* GPUs with something to do now */
    int waiting; /* GPUs that wait for pods (gs_migmgr_plan_desired) */
};

/* A device a pod holds: a MIG device UUID or a GPU UUID, and "namespace/name". */
struct gs_migmgr_use {
    const char *uuid;
    const char *pod;
};

struct gs_error;
struct gs_mig_desired;

/* in_use: MIG device UUIDs held by pods (may be NULL). Returns 0, GS_ENOTFOUND (no such
 * config), GS_EINVAL (the config does not fit a GPU, or would destroy an instance in use;
 * err says which GPU and instance). */
int gs_migmgr_plan(struct gs_gpu_backend *b, const struct gs_migparted *mp, const char *config,
                   const char *const *in_use, int nin_use, bool force, struct gs_migmgr_plan *out,
                   struct gs_error *err);
/* Same, leaving the GPUs whose bit is set in skip as they are (a desired layout lists them). */
int gs_migmgr_plan_except(struct gs_gpu_backend *b, const struct gs_migparted *mp,
                          const char *config, const char *const *in_use, int nin_use, bool force,
                          uint32_t skip, struct gs_migmgr_plan *out, struct gs_error *err);
/* Plan a desired layout (see above); use lists the devices pods hold (may be NULL). Returns
 * 0 (GPUs to change now in changes, GPUs that wait in waiting, with why), GS_EINVAL when
 * the layout is invalid for a GPU it lists (err names the GPU and what is wrong; nothing is
 * planned: out has no GPUs), or the backend's error when it cannot be read. */
int gs_migmgr_plan_desired(struct gs_gpu_backend *b, const struct gs_mig_desired *d,
                           const struct gs_migmgr_use *use, int nuse, struct gs_migmgr_plan *out,
                           struct gs_error *err);
/* Execute. Returns 0, or an error naming the GPU and step (the hardware may be partly
 * changed then; a later apply of the same config finishes it). */
int gs_migmgr_apply(struct gs_gpu_backend *b, const struct gs_migmgr_plan *p, struct gs_error *err);
/* Human-readable plan, one line per GPU (a waiting GPU says why). */
void gs_migmgr_plan_str(const struct gs_migmgr_plan *p, char *out, size_t size);

#endif
