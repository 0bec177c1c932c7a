/* idle.h - where idle GPU capacity goes, by cause: the simulator's counterpart of the
 * article's table of waste. At one instant the GPUs' free capacity (1 - allocated units per
 * GPU, as the allocated share counts it) is split, GPU by GPU, into exactly one cause each:
 *
 *   recarving      the GPU is being re-carved (dynamic MIG: from the cycle's decision until
 *                  the new layout is ready);
 *   unhealthy      the GPU is unhealthy (the engine places nothing on it);
 *   fragmentation  a waiting pod (not held by quota) could use this GPU's kind of capacity,
 *                  and the free capacity of that kind, counted whole, would hold it, yet no
 *                  placement exists: it is split over GPUs, slices or nodes, or stranded on
 *                  nodes short of CPU or memory or on time-sliced GPUs whose memory the
 *                  pods there declared;
 *   quota          the only waiting pods that could use it are held by their queue's limit or
 *                  a namespace's hard cap (the cycle's WAIT QUOTA);
 *   too little     waiting pods could use it, but even counted whole the free capacity of
 *                  their kind is less than each of them needs: they wait for running pods;
 *   no demand      no waiting pod could use it (nothing waits, or what waits needs another
 *                  GPU model, MIG profile, sharing mode or node).
 *
 * "Could use" is the engine's filters that do not depend on what is free: the node is
 * schedulable, its model and labels match the pod's model mask and node selector, the GPU
 * (an MPS client's share of it) has the GPU memory the pod declares, and the GPU's mode takes
 * the request (whole and shared requests: whole, fraction, time-slicing and
 * MPS GPUs; fractions: fraction GPUs; MIG: MIG GPUs carved with an instance of the profile,
 * or, where the cycle may re-carve, any MIG GPU whose model has the profile). A pod needs, on
 * a GPU it could use, the GPU units it would take there (whole GPUs: their count; a replica:
 * 1/replicas; a MIG instance: its profile's units). The causes sum to the GPUs' free units.
 * Pure and thread-safe: reads the cluster only. */
#ifndef GS_SIM_IDLE_H
#define GS_SIM_IDLE_H

#include "../core/cluster.h"
#include "../core/workload.h"

#include <stdbool.h>
#include <stdint.h>

enum gs_idle_cause {
    GS_IDLE_NO_DEMAND = 0,
    GS_IDLE_FRAGMENTATION,
    GS_IDLE_QUOTA,
    GS_IDLE_TOO_LITTLE,
    GS_IDLE_RECARVING,
    GS_IDLE_UNHEALTHY,
    GS_IDLE_CAUSES
};

/* "no demand", "fragmentation", ... ("?" out of range); _key: "no_demand", ... for JSON. */
const char *gs_idle_cause_name(int cause);
const char *gs_idle_cause_key(int cause);

/* One shape of waiting pod: its request and whether it is held by quota. */
struct gs_idle_want {
    struct gs_request req;
    bool quota;
};

/* At most this many distinct shapes are weighed (the first in queue order). */
#define GS_IDLE_MAX_WANTS 64

/* Split the free units of c's GPUs now into out[cause] (overwritten; they sum to the free
 * units). recarving: per GPU, nonzero while re-carved (may be NULL); recarve: the cycle may
 * re-carve MIG GPUs. w: the waiting pods' shapes (nw of them, at most GS_IDLE_MAX_WANTS). */
void gs_idle_split(const struct gs_cluster *c, const uint8_t *recarving, bool recarve,
                   const struct gs_idle_want *w, int nw, double out[GS_IDLE_CAUSES]);

#endif
