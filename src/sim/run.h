/* run.h - the state of one simulated run of a scenario under a strategy, shared by the two
 * modules that own its parts (internal to src/sim; not for other folders):
 *   sim/scenario.c  the world and its clock: pods, their speed, the queue, the scheduling
 *                   cycle's pass, the event loop and the run's results;
 *   sim/deploy.c    the services: Deployments of replicas and their autoscaler, which add,
 *                   delete and load pods only through the gs__sim_* functions below.
 * One run owns one struct sim; nothing in it is shared between threads. */
#ifndef GS_SIM_RUN_H
#define GS_SIM_RUN_H

#include "../base/buf.h"
#include "../base/error.h"
#include "../base/rng.h"
#include "../core/cycle.h"
#include "../core/engine.h"
#include "../core/tenant.h"
#include "evheap.h"
#include "idle.h"
#include "scenario.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum ev_type { EV_ARRIVAL = 0, EV_COMPLETE, EV_RETRY, EV_SAMPLE, EV_RECONF, EV_SERVICE };

enum pod_state { P_PENDING = 0, P_RUNNING, P_DONE, P_BACKOFF, P_HELD };

struct pod {
    int cls;
    double first_arrival, start;
    double work_left, rate, last;
    double rate_sum_dt, run_dt; /* for the mean speed */
    double util;                /* busy fraction of a whole GPU it wants, per GPU */
    double busy;                /* of that, what it uses now (1; a replica: its load) */
    int32_t gpu_mem;            /* MiB it really needs (OOM check on time-slicing) */
    struct gs_request req;
    struct gs_alloc alloc;
    uint32_t version;
    uint8_t state;
    bool started, measured, oom;
    int32_t gang;      /* -1, or the gang (job) id */
    double work_total; /* a preempted pod starts over */
    double run_start;  /* start of the current run */
    int32_t ord;       /* its number within its class: it is named CLASS-ORD */
    int32_t svc;       /* the service it is a replica of, -1 none */
    double end;        /* when a replica was deleted */
    uint8_t why;       /* why it waited at the last cycle (enum gs_cyc_why; 0 before one) */
};

struct gpu_rt {
    int npods;
    int cap;
    int *pods;
    double load; /* sum of util of pods on this GPU (replicas) */
    int64_t mem; /* sum of real GPU memory of pods on this GPU (replicas) */
};

/* The services of a run (sim/deploy.c owns them; struct deploy is its own). */
struct gs__deploys {
    bool fixed; /* every service at its fixed replica count, no autoscaler */
    int n;
    struct deploy *v;
};

struct gs__simdra;

struct sim {
    const struct gs_scenario *sc;
    const struct gs_strategy *st;
    struct gs_cluster c;
    struct gs_engine *e;
    struct gs_rng rng;
    struct gs_evheap h;
    struct pod *pods;
    int npods, cap_pods;
    int *queue;
    int nqueue, cap_queue;
    struct gpu_rt *grt;
    double now;
    double alloc_units, used_units; /* current */
    double int_alloc, int_used, int_t;
    double idle_units[GS_IDLE_CAUSES], int_idle[GS_IDLE_CAUSES]; /* free units by cause */
    int class_jobs[GS_SC_MAX_CLASSES];
    /* tenancy (strategies with priority) */
    bool tenancy;
    struct gs_tenants t;
    int ngangs;
    struct gs_running *run;
    int32_t *run_pod;
    int nrun, cap_run;
    bool run_dirty;
    int preemptions, victims;
    double lost_gpu_hours;
    uint8_t share_ok[GS_SC_MAX_CLASSES]; /* sharing modes that exist here and fit the class */
    /* the cycle's input, and dynamic MIG */
    struct gs_cyc_pod *cyc;
    int cap_cyc;
    int class_pods[GS_SC_MAX_CLASSES];
    gs_sim_trace_fn trace; /* each cycle's decisions as lines (NULL: none) */
    void *trace_ctx;
    uint8_t *busy;     /* per GPU: being re-carved */
    double *changed_s; /* per GPU: last re-carve */
    int recarves;
    struct gs__deploys svc;
    struct gs__simdra *dra; /* DRA claims (sim/scenario.c), NULL for a scenario without */
};

/* Room for one more element of arr (n in use, cap allocated; both ints): gs_grow when full,
 * first elements at first. Evaluates to 0 or GS_ENOMEM (arr untouched). */
#define GS__SIM_ROOM(arr, n, cap, first)                                                           \
    ((n) < (cap) ? 0 : gs__sim_grow(&(arr), &(cap), sizeof(*(arr)), (first)))

static inline int gs__sim_grow(void *arrp, int *cap, size_t elem, int first)
{
    void *v;
    memcpy(&v, arrp, sizeof(v));
    if (!(v = gs_grow(v, cap, elem, first)))
        return GS_ENOMEM;
    memcpy(arrp, &v, sizeof(v));
    return 0;
}

static inline bool gs__sim_replica_gpu(const struct gs_gpu *g)
{
    return g->mode == GS_GPU_TIMESLICE || g->mode == GS_GPU_MPS;
}

/* sim/scenario.c: the world, for the services. */
/* A new pending pod of class cls (its index is s->npods - 1). Returns 0 or GS_ENOMEM. */
int gs__sim_new_pod(struct sim *s, int cls, double util, int32_t gmem, const struct gs_request *r,
                    double work, int32_t gang);
/* Delete pod pi: a pending one leaves the queue, one held on a GPU being re-carved gives its
 * devices back, a running one finishes. */
int gs__sim_delete_pod(struct sim *s, int pi);
/* A running pod's busy share of what it wants (a replica: its load) changes. */
int gs__sim_set_busy(struct sim *s, int pi, double busy);
/* GPU units pod p uses now (its util x speed x busy share, per device). */
double gs__sim_pod_used(const struct pod *p);
/* GPUs pod p holds: a MIG slice its units, a time-slicing or MPS replica its share, else its
 * milli-GPUs; *cost_h gets their $ an hour. */
double gs__sim_pod_units(const struct sim *s, const struct pod *p, double *cost_h);
/* Its name in decision lines: CLASS-N. */
void gs__sim_pod_name(const struct sim *s, int pi, char *out, size_t n);

/* sim/deploy.c: the services, for the world's loop. */
/* Create each service's first replicas and its first tick. */
int gs__deploy_start(struct sim *s);
/* Service k's 15 s step (an EV_SERVICE event); *sched: a scheduling pass is due. */
int gs__deploy_tick(struct sim *s, int k, bool *sched);
/* Sample i of every service's replica counts and load. */
void gs__deploy_sample(const struct sim *s, struct gs_sim_result *out, int i);
/* The services' figures over the measured window. */
void gs__deploy_results(const struct sim *s, struct gs_sim_result *out);
void gs__deploy_release(struct gs__deploys *d);

#endif
