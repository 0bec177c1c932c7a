/* toposim.h - topology-aware gangs, simulated: data-parallel training beside small work on a
 * cluster of blocks, subblocks and nodes, and what placement does to job completion times.
 *
 * The cluster: blocks x subblocks x nodes of G GPUs, labelled as a cloud labels them
 * (cloud.google.com/gce-topology-block, cloud.google.com/gce-topology-subblock,
 * kubernetes.io/hostname), those three the topology's levels. Links: NVLink inside a node,
 * and the network inside a subblock, inside a block, across blocks, each with its speed.
 * The work: Poisson arrivals per class. A training class is a gang of P pods of g GPUs that
 * asks a level (required or preferred, as Kueue's annotations) and runs S steps (lognormal);
 * a step is its compute time plus a ring all-reduce of its gradients over the slowest link
 * its placement spans: 2 (n - 1) / n x gradient bytes / bandwidth, n the gang's GPUs. A small
 * class is a pod of g GPUs (inference, batch) that runs a lognormal time. A job's completion
 * time is its wait plus its run.
 *
 * Every policy runs the daemon's cycle (core/cycle.h, engine policy gpusched) on the same
 * arrivals, one cycle after each instant with arrivals or departures:
 *   gpusched  the cycle with the topology (core/topo.h, GS_TOPO_GPUSCHED) and the training
 *             classes as the shapes small work keeps room for;
 *   kueue     the cycle with the topology placed by Kueue's BestFit (GS_TOPO_KUEUE), no
 *             steering of small work (Kueue places pods that ask no topology as the
 *             scheduler does);
 *   blind     the cycle without a topology: gangs whole, wherever the engine puts them
 *             (gpusched before topology).
 * Results: the share of required gangs placed inside one domain of their level among those
 * placed while such a domain had room for them, training jobs' completion times (mean, p95)
 * and waits, small work's waits, and the training GPUs' placements by slowest link. */
#ifndef GS_SIM_TOPOSIM_H
#define GS_SIM_TOPOSIM_H

#include "../base/buf.h"
#include "../formats/toposcen.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_TOPOSIM_LINKS GS_TOPOSCEN_LINKS

enum gs_toposim_policy {
    GS_TOPOSIM_GPUSCHED = 0,
    GS_TOPOSIM_KUEUE,
    GS_TOPOSIM_BLIND,
    GS_TOPOSIM_POLICIES
};

struct gs_toposim_result {
    int gangs_fit, gangs_inside; /* required gangs placed while a domain had room; inside one */
    int jobs, small;             /* training jobs and small pods done */
    double jct_mean, jct_p95, wait_mean; /* training, seconds */
    double small_wait_mean;
    double span[GS_TOPOSIM_LINKS]; /* training jobs by slowest link spanned (share) */
    int pending_end;               /* never placed */
};

/* 4 blocks x 2 subblocks x 4 nodes x 8 GPUs (256 GPUs), 100/200/400 Gb/s and NVLink's 900
 * GB/s; 8- to 64-GPU training gangs beside 1- and 2-GPU inference and batch pods. */
extern const struct gs_toposcen gs_toposim_default;

struct gs_error;

const char *gs_toposim_policy_name(enum gs_toposim_policy p);
/* One run. Returns 0 or an error (err says why). */
int gs_toposim_run(const struct gs_toposcen *sp, enum gs_toposim_policy pol, uint64_t seed,
                   struct gs_toposim_result *out, struct gs_error *err);
/* Every policy over seeds lo..hi: a table (means over the seeds, and each policy's mean JCT
 * against blind's) or JSON. */
int gs_toposim_report(const struct gs_toposcen *sp, uint64_t lo, uint64_t hi, bool json,
                      struct gs_buf *out, struct gs_error *err);

#endif
