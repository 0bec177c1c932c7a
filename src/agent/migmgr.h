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
 * create); gs_migmgr_plan_str prints it (--dry-run). */
#ifndef GS_AGENT_MIGMGR_H
#define GS_AGENT_MIGMGR_H

#include "../formats/migparted.h"
#include "gpu.h"

struct gs_migmgr_gpu {
    int index, model;
    bool change;              /* anything to do on this GPU */
    bool mode_now, mode_want; /* MIG enabled */
    int ndestroy, ncreate, nkeep;
    struct gs_mig_inst destroy[GS_AGENT_MAX_INST], keep[GS_AGENT_MAX_INST];
    struct gs_mig_instance create[GS_AGENT_MAX_INST]; /* catalog profile index and start */
};

struct gs_migmgr_plan {
    char config[GS_MP_NAME_MAX];
    int ngpus;
    struct gs_migmgr_gpu gpu[GS_AGENT_MAX_GPUS];
    int changes; /* GPUs with something to do */
};

struct gs_error;

/* in_use: MIG device UUIDs held by pods (may be NULL). Returns 0, GS_ENOTFOUND (no such
 * config), GS_EINVAL (the config does not fit a GPU, or would destroy an instance in use;
 * err says which GPU and instance). */
int gs_migmgr_plan(struct gs_gpu_backend *b, const struct gs_migparted *mp, const char *config,
                   const char *const *in_use, int nin_use, bool force, struct gs_migmgr_plan *out,
                   struct gs_error *err);
/* Execute. Returns 0, or an error naming the GPU and step (the hardware may be partly
 * changed then; a later apply of the same config finishes it). */
int gs_migmgr_apply(struct gs_gpu_backend *b, const struct gs_migmgr_plan *p, struct gs_error *err);
/* Human-readable plan, one line per GPU. */
void gs_migmgr_plan_str(const struct gs_migmgr_plan *p, char *out, size_t size);

#endif
