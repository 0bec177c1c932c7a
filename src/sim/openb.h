/* openb.h - the FGD paper's experiment on the openb trace, run with gpusched's engine.
 *
 * Method (restated from the paper's simulator): shuffle the pods with the seed; resample
 * them with replacement (or drop random ones) until the requested GPU total is `tune` x the
 * cluster's GPU capacity; schedule one pod at a time with no departures; after every pod
 * record arrived and allocated milli-GPU. The curve gives allocation (% of capacity) at each
 * 1 % of arrived demand; the headline is the unallocated share at 100 %. Runs for several
 * policies and seeds go to a pool of threads; each run owns its cluster and engine, so the
 * result does not depend on the thread count. */
#ifndef GS_SIM_OPENB_H
#define GS_SIM_OPENB_H

#include "../core/engine.h"
#include "../formats/openb.h"

#include <stdint.h>

#define GS_OPENB_CURVE 131 /* 0..130 % arrived */

struct gs_openb_run {
    uint64_t seed;
    double curve[GS_OPENB_CURVE]; /* allocated % of GPU capacity; NaN where no sample */
    double unalloc_at_100;
    int pods, failed;
};

struct gs_openb_result {
    const struct gs_policy *policy;
    int nruns;
    struct gs_openb_run *runs;
    double unalloc_mean, unalloc_std;
    double curve_mean[GS_OPENB_CURVE];
    double seconds;
};

struct gs_openb_spec {
    const struct gs_openb_node *nodes;
    int nnodes;
    const struct gs_openb_pod *pods;
    int npods;
    double tune; /* <= 0: no resampling */
    uint64_t seed_lo, seed_hi;
    int threads; /* <= 0: number of CPUs */
};

struct gs_error;

/* Run every policy over seeds seed_lo..seed_hi. results[i] belongs to policies[i]; release
 * with gs_openb_result_release. Returns 0 or a negative error. */
int gs_openb_experiment(const struct gs_openb_spec *spec, const struct gs_policy *const *policies,
                        int npolicies, struct gs_openb_result *results, struct gs_error *err);
void gs_openb_result_release(struct gs_openb_result *r);

/* One run (exposed for tests and benchmarks). typical may be NULL: built from the pods. */
int gs_openb_run_one(const struct gs_openb_spec *spec, const struct gs_policy *policy,
                     const struct gs_typical *typical, uint64_t seed, struct gs_openb_run *out);

#endif
