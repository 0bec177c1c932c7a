/* strategy.c - the seven sharing strategies of the comparison and the runs of all of them
 * (sim/scenario.h): one job per strategy on sim/pool.h's threads, and, when a service
 * autoscales, a second job per strategy with every service at its fixed replica count.
 * "all" is the article's last stage: MIG re-carved for what is pending (dynamic MIG),
 * priorities and preemption, time-slicing and MPS for inference on the GPUs left whole, and
 * the HPA on services; "all-static" (not in the comparison) is the same with the MIG layouts
 * held as written, for advice that weighs dynamic MIG against static layouts. */
#include "../base/error.h"
#include "pool.h"
#include "scenario.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NSTRATEGIES (GS_SIM_STRATEGIES + 1)

static const struct gs_strategy strategies[NSTRATEGIES] = {
    {"exclusive", "Exclusive (1 pod = 1 GPU)", false, GS_SM_NONE, false, false, false, 0, 0},
    {"time-slicing", "Time-slicing", false, GS_SM_TIMESLICING, false, false, false, 25, 20},
    {"mps", "MPS", false, GS_SM_MPS, false, false, false, 0, 0},
    {"static-mig", "Static MIG", true, GS_SM_NONE, false, false, false, 35, 30},
    {"mig-priority", "MIG + priority", true, GS_SM_NONE, true, false, false, 0, 0},
    {"dynamic-mig", "Dynamic MIG + priority", true, GS_SM_NONE, true, false, true, 0, 0},
    {"all", "All together", true, GS_SM_GROUP, true, true, true, 50, 50},
    {"all-static", "All together, static MIG", true, GS_SM_GROUP, true, true, false, 0, 0},
};

const struct gs_strategy *gs_strategy_get(int i)
{
    return i >= 0 && i < GS_SIM_STRATEGIES ? &strategies[i] : NULL;
}

const struct gs_strategy *gs_strategy_find(const char *name)
{
    for (int i = 0; i < NSTRATEGIES; i++)
        if (strcmp(strategies[i].name, name) == 0)
            return &strategies[i];
    return NULL;
}

/* Job i is strategy i; with an autoscaled service (pairs), job 2i is strategy i and job 2i + 1
 * the same with fixed replica counts (one after the other: a slow strategy's two runs
 * overlap). */
struct run_all {
    const struct gs_scenario *sc;
    bool pairs;
    struct gs_sim_result *out, *fixed;
};

static int run_job(void *ctx, int i, struct gs_error *err)
{
    const struct run_all *j = ctx;
    struct gs_sim_opts o = {.fixed_services = j->pairs && i % 2};
    int si = j->pairs ? i / 2 : i;
    return gs_sim_run_opts(j->sc, &strategies[si], &o,
                           o.fixed_services ? &j->fixed[si] : &j->out[si], err);
}

static int train_class(const struct gs_scenario *sc)
{
    for (int k = 0; k < sc->nclasses; k++)
        if (sc->classes[k].kind == GS_KIND_TRAINING)
            return k;
    return -1;
}

static void keep_fixed(const struct gs_scenario *sc, const struct gs_sim_result *r,
                       struct gs_sim_fixed *f)
{
    int tk = train_class(sc);
    f->ran = true;
    f->alloc_share = r->alloc_share;
    f->used_share = r->used_share;
    f->gpu_hours = r->gpu_hours;
    f->cost = r->cost;
    f->useful_gpu_hours = r->useful_gpu_hours;
    f->cost_per_useful_hour = r->cost_per_useful_hour;
    f->online_p99_wait = r->online_p99_wait;
    f->online_sla_miss_pct = r->online_sla_miss_pct;
    f->train_p50_wait = tk >= 0 ? r->cls[tk].wait_p50 : 0;
    f->jobs_completed = r->jobs_completed;
    memcpy(f->svc, r->svc, sizeof(f->svc));
}

int gs_sim_run_all(const struct gs_scenario *sc, int threads, struct gs_sim_result *out,
                   struct gs_error *err)
{
    bool compare = false;
    for (int k = 0; k < sc->nclasses; k++)
        compare |= sc->classes[k].service.on && sc->classes[k].service.autoscale;
    struct gs_sim_result *fixed = compare ? calloc(GS_SIM_STRATEGIES, sizeof(*fixed)) : NULL;
    if (compare && !fixed)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    struct run_all j = {.sc = sc, .pairs = compare, .out = out, .fixed = fixed};
    int failed = -1;
    int rc = gs_pool_run(compare ? 2 * GS_SIM_STRATEGIES : GS_SIM_STRATEGIES, threads, 0, run_job,
                         &j, &failed, err);
    if (rc)
        gs_error_prefix(err, "strategy '%s'%s", strategies[compare ? failed / 2 : failed].name,
                        compare && failed % 2 ? " (fixed replicas)" : "");
    for (int i = 0; compare && !rc && i < GS_SIM_STRATEGIES; i++)
        keep_fixed(sc, &fixed[i], &out[i].fixed);
    free(fixed);
    return rc;
}
