/* frag.h - GPU fragmentation as the FGD paper measures it (Weng et al., ATC'23).
 *
 * "Typical" request shapes are the most frequent (CPU, milli-GPU per GPU, GPU count, model
 * restriction) tuples, taken by decreasing frequency until they cover the threshold share
 * of all requests (CPU-only ones included). A node's fragmentation is the frequency-weighted
 * sum over those shapes of the idle milli-GPU that the shape cannot use: all idle GPU when
 * the shape cannot be hosted at all (or asks no GPU), else the idle milli of GPUs whose
 * free share is below the shape's per-GPU request. A memo table caches fragmentation by
 * node state; it belongs to one thread.
 *
 * Two modes differ only in a shape the node's GPU model cannot host (it names another model):
 * FGD counts all the node's idle GPU as fragmentation to it; GS_FRAG_HOSTABLE leaves it out,
 * since the node's GPUs are no supply of that shape's. FGD's gradient then rewards filling
 * the nodes of the models that few constrained pods name — the scarce models, which those
 * few pods then find taken; in hostable mode a node's fragmentation is weighed only over the
 * shapes that could ever use it. On traces without model constraints the modes agree. */
#ifndef GS_FRAG_H
#define GS_FRAG_H

#include "workload.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_MAX_SHAPES 128

struct gs_shape {
    int64_t cpu;
    int16_t milli;
    uint8_t gpus;
    uint32_t model_mask;
    double freq;
};

struct gs_typical {
    int n;
    struct gs_shape s[GS_MAX_SHAPES];
};

/* Build typical shapes from requests (threshold in percent, e.g. 95). Requests of kind MIG
 * are skipped. Returns the number of shapes. */
int gs_typical_build(const struct gs_request *reqs, int n, int threshold_pct,
                     struct gs_typical *out);

/* The share of the typical shapes' GPU demand (frequency x GPUs x milli per GPU) that names
 * each GPU model, into share[0..32): a shape naming several models counts for each in
 * proportion to its GPUs in the cluster (gpus[m]); a shape naming no model, or only models the
 * cluster lacks, counts for none. Returns whether any share is above 0. Pure. */
bool gs_typical_model_share(const struct gs_typical *t, const double *gpus, double *share);

enum gs_frag_mode {
    GS_FRAG_FGD = 0,  /* as the FGD paper: shapes the model cannot host count all idle GPU */
    GS_FRAG_HOSTABLE, /* shapes the node's model cannot host do not count */
};

/* Fragmentation (milli-GPU) of a node state given as free GPU shares. */
double gs_frag_state(const struct gs_typical *t, enum gs_frag_mode mode, int model,
                     int64_t cpu_free, const int16_t *free, int ngpus);

struct gs_frag_memo;
/* Heap object measuring in one mode; NULL on allocation failure. */
struct gs_frag_memo *gs_frag_memo_new(enum gs_frag_mode mode);
void gs_frag_memo_free(struct gs_frag_memo *m);
/* Memoised gs_frag_state in the memo's mode (free need not be sorted; m NULL: FGD's mode,
 * not memoised). */
double gs_frag_memo_get(struct gs_frag_memo *m, const struct gs_typical *t, int model,
                        int64_t cpu_free, const int16_t *free, int ngpus);

#endif
