/* driver.c - the live scheduler's scheduling cycle (sched/driver.h): the cycle input
 * (sched/cyclein.c) built from a snapshot of the store, the recarve notes of the cycle output
 * (sched/cycleout.c) marked on it, core/cycle.c deciding on the engine this driver keeps, and
 * the decisions applied by the output. */
#include "driver.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/log.h"
#include "../core/cycle.h"
#include "cyclein.h"
#include "cycleout.h"
#include "store.h"

#include <stdlib.h>
#include <string.h>

struct gs_driver {
    struct gs_driver_deps d;
    struct gs__cycle_deps in;
    struct gs__cycleout *out;
    struct gs_engine *engine; /* sized for engine_nodes nodes; replaced when outgrown */
    int engine_nodes;
};

struct gs_driver *gs__driver_new(const struct gs_driver_deps *d)
{
    struct gs_driver *dr = calloc(1, sizeof(*dr));
    if (!dr)
        return NULL;
    dr->d = *d;
    dr->in = (struct gs__cycle_deps){.store = d->store,
                                     .policy = d->policy,
                                     .claims = d->claims,
                                     .scheduler_name = d->scheduler_name,
                                     .dry = d->dry,
                                     .dynamic_mig = d->dynamic_mig,
                                     .recarve_hold_s = d->recarve_hold_s,
                                     .min_runtime_s = d->min_runtime_s,
                                     .topo_flag = d->topo_flag,
                                     .vols = d->vols};
    struct gs__cycleout_deps od = {.store = d->store,
                                   .binder = d->binder,
                                   .metrics = d->metrics,
                                   .journal = d->journal,
                                   .claims = d->claims,
                                   .dry = d->dry,
                                   .recarve_hold_s = d->recarve_hold_s,
                                   .volume_bind_timeout_s = d->volume_bind_timeout_s};
    if (!(dr->out = gs__cycleout_new(&od))) {
        free(dr);
        return NULL;
    }
    return dr;
}

void gs__driver_free(struct gs_driver *dr)
{
    if (!dr)
        return;
    gs__cycleout_free(dr->out);
    gs_engine_free(dr->engine);
    free(dr);
}

json_t *gs__driver_decision_lines(struct gs_driver *dr)
{
    return gs__cycleout_decision_lines(dr->out);
}

/* The engine, grown for a cluster of n nodes (gs__cycle_run's callback). */
static struct gs_engine *engine_for(void *ctx, int n)
{
    struct gs_driver *dr = ctx;
    if (!dr->engine || dr->engine_nodes < n) {
        gs_engine_free(dr->engine);
        dr->engine_nodes = gs_cycle_engine_nodes(n);
        dr->engine = gs_engine_new(gs_policy_find(dr->d.policy_name), NULL, dr->engine_nodes, 42);
    }
    return dr->engine;
}

int gs__driver_cycle(struct gs_driver *dr)
{
    /* Events regarding nodes the informers saw change */
    gs__cycleout_node_events(dr->out, gs__store_take_node_events(dr->d.store));
    struct gs__cycle cy;
    double t[5] = {gs_clock_mono()};
    int rc = gs__cycle_take(&cy, &dr->in);
    if (rc)
        return rc;
    gs__cycleout_mark(dr->out, &cy);
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    t[1] = gs_clock_mono();
    rc = gs__cycle_prepare(&cy);
    t[2] = gs_clock_mono();
    if (!rc)
        rc = gs__cycle_run(&cy, engine_for, dr, &out);
    t[3] = gs_clock_mono();
    if (!rc)
        rc = gs__cycleout_apply(dr->out, &cy, &out);
    t[4] = gs_clock_mono();
    GS_DEBUG("scheduler", "cycle: take %.1f ms, prepare %.1f ms, decide %.1f ms, apply %.1f ms",
             1e3 * (t[1] - t[0]), 1e3 * (t[2] - t[1]), 1e3 * (t[3] - t[2]), 1e3 * (t[4] - t[3]));
    gs_cycle_out_release(&out);
    gs__cycle_release(&cy);
    return rc;
}
