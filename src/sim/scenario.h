/* scenario.h - time-based simulation of a scenario under the seven sharing strategies.
 *
 * A discrete-event simulation on a virtual clock (events ordered by time, then sequence
 * number; one seeded PRNG per run): workload classes arrive, wait in a queue, are placed by
 * the scheduling cycle (core/cycle.c, the scheduler daemon's own, with the engine's policy
 * gpusched), run at a speed set by what shares their GPU, and leave. Strategies (exclusive,
 * time-slicing, MPS, static MIG, MIG + priority, dynamic MIG + priority, all together: dynamic
 * MIG, priority, time-slicing/MPS on the GPUs left whole and the HPA on services) change
 * how node groups expose their GPUs, what each class asks for, the queue order, and whether
 * the cycle may re-carve MIG GPUs (dynamic-mig and all; each change takes the scenario's reconfig
 * time, during which the pods it is for wait). Results per strategy: allocated and used share of
 * GPUs over time, waits per class (p50/p95/p99), SLA misses of online inference, GPU-hours and $
 * per useful GPU-hour. Runs are independent; gs_sim_run_all runs them on a pool of threads.
 *
 * Services (online-inference classes with a service block, sim/service.h): a Deployment of
 * replicas, pods of the class's shape that go through the same cycle as every other pod
 * (priority, preemption, dynamic MIG), serving a request load; only ready replicas serve
 * (pending ones do not, a started one is ready after the service's startup time). Every 15 s
 * the service's requests are counted against its ready replicas (latency, SLA misses), each
 * replica's GPU busy share follows its load, and, when it autoscales, the HPA (core/hpa.h:
 * the article's gpu-hpa.yaml unless the scenario says otherwise) reads the replicas'
 * gpu_utilization and request_latency_ms and sets the replica count: new replicas are
 * pending pods, scale-down deletes the replicas a ReplicaSet deletes first (unscheduled, then
 * not ready, then the most recently ready: the youngest). When a service autoscales,
 * gs_sim_run_all runs every strategy a second time with each service held at its fixed
 * replica count (sized for the diurnal peak, gs_svc_peak_replicas) for comparison. */
#ifndef GS_SIM_SCENARIO_H
#define GS_SIM_SCENARIO_H

#include "../formats/scenario.h"
#include "idle.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_SIM_STRATEGIES 7
#define GS_SIM_SAMPLES    120

enum gs_share_mode { GS_SM_NONE = 0, GS_SM_TIMESLICING, GS_SM_MPS, GS_SM_GROUP };

struct gs_strategy {
    const char *name;
    const char *label;
    bool mig;
    enum gs_share_mode share;
    bool priority;
    bool mem_aware;    /* pods declare GPU memory and the engine honours it on shared GPUs */
    bool recarve;      /* dynamic MIG: the cycle re-carves GPUs for pods no slot fits */
    double claim_util; /* the article's stated utilization gain, % (0: none stated) */
    double claim_cost; /* the article's stated cost saving, % */
};

/* Strategy i of the comparison (0 .. GS_SIM_STRATEGIES - 1), NULL past them. */
const struct gs_strategy *gs_strategy_get(int i);
/* By name: those of the comparison, and "all-static" ("all" with the MIG layouts held as
 * written, no re-carving: what advice weighs dynamic MIG against). NULL: no such strategy. */
const struct gs_strategy *gs_strategy_find(const char *name);

#define GS_SIM_MAX_SERVICES GS_SC_MAX_SERVICES

/* A service over the measured window. */
struct gs_svc_stats {
    int cls;                         /* its class */
    int32_t fixed_replicas;          /* the count the fixed comparison holds */
    double requests;                 /* arrived in the measured window */
    double sla_miss_pct;             /* of them over the latency SLA or timed out */
    double latency_p50, latency_p99; /* s */
    double gpu_hours, cost; /* what its replicas held: a MIG slice its units, a shared replica
                               its share of the GPU; $ at the GPU's price */
    double used_gpu_hours;  /* of them busy serving */
    double replicas_mean;
    int replicas_max, scale_ups, scale_downs;
    float replicas_ts[GS_SIM_SAMPLES], ready_ts[GS_SIM_SAMPLES], rate_ts[GS_SIM_SAMPLES];
};

/* The same run with every service at its fixed replica count: the headline figures. */
struct gs_sim_fixed {
    bool ran;
    double alloc_share, used_share, gpu_hours, cost, useful_gpu_hours, cost_per_useful_hour;
    double online_p99_wait, online_sla_miss_pct;
    double train_p50_wait; /* the first training class's */
    int jobs_completed;
    struct gs_svc_stats svc[GS_SIM_MAX_SERVICES];
};

struct gs_class_stats {
    int arrived, started, completed, waiting_at_end, oom_kills, sla_miss;
    double wait_p50, wait_p95, wait_p99, wait_mean;
};

struct gs_sim_result {
    const struct gs_strategy *strategy;
    uint64_t seed;
    double sim_seconds;
    int gpus;
    double alloc_share, used_share; /* time averages over the measured window, 0..1 */
    double gpu_hours, cost, useful_gpu_hours, cost_per_useful_hour;
    /* GPU-hours of the measured window left unallocated, by cause (sim/idle.h); they sum to
     * idle_gpu_hours = gpu_hours x (1 - alloc_share) */
    double idle_gpu_hours, idle_by_cause[GS_IDLE_CAUSES];
    double online_p99_wait, online_sla_miss_pct;
    int oom_kills, jobs_completed;
    int nclasses;
    struct gs_class_stats cls[GS_SC_MAX_CLASSES];
    double t[GS_SIM_SAMPLES], alloc_ts[GS_SIM_SAMPLES], used_ts[GS_SIM_SAMPLES];
    int pending_ts[GS_SIM_SAMPLES];
    /* tenancy (strategies with priority and a scenario with tenants) */
    int preemptions, victims;
    double lost_gpu_hours;
    int recarves; /* GPUs re-carved (dynamic MIG) */
    int nteams;   /* = scenario tenants when tenancy ran, else 0 */
    double team_ts[GS_SC_MAX_TENANTS][GS_SIM_SAMPLES]; /* allocated share of all GPUs */
    double team_mean[GS_SC_MAX_TENANTS];
    double wall_seconds;
    /* services, in class order; fixed: this run held them at their fixed counts */
    bool fixed_services;
    int nsvc;
    struct gs_svc_stats svc[GS_SIM_MAX_SERVICES];
    struct gs_sim_fixed fixed; /* gs_sim_run_all: the comparison run, when a service scales */
};

struct gs_error;

/* Run one strategy. Returns 0 or a negative error (err says why). */
int gs_sim_run(const struct gs_scenario *sc, const struct gs_strategy *st,
               struct gs_sim_result *out, struct gs_error *err);
/* gs_sim_run, and each cycle's decisions (formats/decision.h lines, pods named CLASS-N) given
 * to trace with the simulated time; with services, the autoscaler's changes too, as lines
 * "SCALE CLASS FROM -> TO REASON proposal=N rate=R[ deleted=CLASS-N,...]". */
typedef void (*gs_sim_trace_fn)(void *ctx, double t, const char *line);
int gs_sim_run_traced(const struct gs_scenario *sc, const struct gs_strategy *st,
                      gs_sim_trace_fn trace, void *ctx, struct gs_sim_result *out,
                      struct gs_error *err);
/* A run with options: trace (as gs_sim_run_traced, NULL: none), and fixed_services (every
 * service at its fixed replica count, no autoscaler). */
struct gs_sim_opts {
    bool fixed_services;
    gs_sim_trace_fn trace;
    void *trace_ctx;
};
int gs_sim_run_opts(const struct gs_scenario *sc, const struct gs_strategy *st,
                    const struct gs_sim_opts *o, struct gs_sim_result *out, struct gs_error *err);
/* Run every strategy (threads <= 0: number of CPUs). out has GS_SIM_STRATEGIES entries. When a
 * service of the scenario autoscales, each strategy also runs with fixed replica counts, into
 * out[i].fixed. */
int gs_sim_run_all(const struct gs_scenario *sc, int threads, struct gs_sim_result *out,
                   struct gs_error *err);

/* The embedded default scenario (the article's setting) and the article's mig-parted
 * config, as YAML text. */
extern const char gs_default_scenario_yaml[];
extern const char gs_article_mig_config_yaml[];

#endif
