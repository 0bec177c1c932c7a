/* openb.h - the FGD paper's experiment on the openb trace, run with gpusched's engine.
 *
 * Method (restated from the paper's simulator): shuffle the pods with the seed; resample
 * them with replacement (or drop random ones) until the requested GPU total is `tune` x the
 * cluster's GPU capacity; schedule one pod at a time with no departures; after every pod
 * record arrived and allocated milli-GPU. The curve gives allocation (% of capacity) at each
 * 1 % of arrived demand; the headline is the unallocated share at 100 %. Runs for several
 * policies and seeds go to a pool of threads; each run owns its cluster and engine, so the
 * result does not depend on the thread count.
 *
 * Beside the engine's policies, gs_openb_offline_policy() names the pseudo-policy "offline"
 * (sim/openbopt.h): on each seed's arrivals, the unallocated share at 100 % an offline packer
 * achieves (unalloc_at_100: the best of its candidates, an upper bound on the optimum's),
 * each candidate's (cand_at_100: the decreasing-size packer alone, fgd's online placement
 * repaired, gpusched's repaired), and a proven lower bound on what any placement leaves
 * (bound_at_100), all averaged over the 100 % bucket exactly as the online curve is; its
 * curve holds only the 100 % point. */
#ifndef GS_SIM_OPENB_H
#define GS_SIM_OPENB_H

#include "../core/engine.h"
#include "../formats/openb.h"

#include <stdint.h>

#define GS_OPENB_CURVE 131 /* 0..130 % arrived */

/* The offline packer's candidates, in the order of cand_at_100 */
enum gs_openb_cand {
    GS_OPENB_PACKER,            /* the decreasing-size packer alone: no online placement in it */
    GS_OPENB_FGD_REPAIRED,      /* fgd's online placement, repaired with hindsight */
    GS_OPENB_GPUSCHED_REPAIRED, /* gpusched's, repaired */
    GS_OPENB_CANDIDATES
};
/* The candidate's name ("packer", "fgd+repair", "gpusched+repair"), or NULL. */
const char *gs_openb_cand_name(int cand);

struct gs_openb_run {
    uint64_t seed;
    double curve[GS_OPENB_CURVE]; /* allocated % of GPU capacity; NaN where no sample */
    double unalloc_at_100;
    double bound_at_100; /* offline only: proven lower bound on unalloc_at_100; else NaN */
    double cand_at_100[GS_OPENB_CANDIDATES]; /* offline only: each candidate's; else NaN */
    int pods, failed;
};

struct gs_openb_result {
    const struct gs_policy *policy;
    int nruns;
    struct gs_openb_run *runs;
    double unalloc_mean, unalloc_std;
    double bound_mean, bound_std; /* offline only (NaN for online policies) */
    double cand_mean[GS_OPENB_CANDIDATES], cand_std[GS_OPENB_CANDIDATES]; /* offline only */
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
/* The same for several traces at once (specs[0..nspecs), each with its own typical shapes),
 * every run of every trace in one pool of specs[0].threads threads: results[t * npolicies + i]
 * belongs to specs[t] and policies[i]; seconds is the whole pool's wall time. */
int gs_openb_experiment_many(const struct gs_openb_spec *specs, int nspecs,
                             const struct gs_policy *const *policies, int npolicies,
                             struct gs_openb_result *results, struct gs_error *err);
void gs_openb_result_release(struct gs_openb_result *r);

/* gpusched against fgd on one trace, with the offline figures: means of unallocated GPU % at
 * 100 %, and the share of fgd's distance to each offline figure that gpusched closes,
 * (fgd - gpusched) / (fgd - x): to the offline packer (the best candidate), to the best
 * candidate that does not start from gpusched's own placement (independent: the packer alone
 * or fgd's placement repaired, per seed), and to the proven bound. A share is NaN where fgd is
 * not above x; above 1 where gpusched beats x. */
struct gs_openb_gap {
    double fgd, gpusched, offline, independent, bound;
    double closed, closed_independent, closed_bound;
};
/* From one trace's results (res[0..n), fgd's, gpusched's and the offline pseudo-policy's
 * among them); false when one is missing. Pure. */
bool gs_openb_gap(const struct gs_openb_result *res, int n, struct gs_openb_gap *g);

/* The "offline" pseudo-policy: pass it among the policies of gs_openb_experiment or to
 * gs_openb_run_one. Its score function is NULL: never give it to an engine. */
const struct gs_policy *gs_openb_offline_policy(void);

/* One run (exposed for tests and benchmarks). typical may be NULL: built from the pods. */
int gs_openb_run_one(const struct gs_openb_spec *spec, const struct gs_policy *policy,
                     const struct gs_typical *typical, uint64_t seed, struct gs_openb_run *out);

#endif
