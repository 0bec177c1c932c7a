/* advise.h - advice backed by simulation: which sharing mode and MIG layout each node group
 * of a cluster should run, chosen by simulating the cluster's own workload.
 *
 * For every node group gs_advise first walks the article's decision tree from what the
 * workload that can run there needs (is the GPU MIG-capable; does any online inference, a
 * second tenant or a memory-bound class need full isolation; is there training that can
 * share; does a class need more memory than a slice holds), and turns the answer into a
 * first setup: MIG GPUs carved by the exact planner (core/mig.h gs_mig_plan) for the
 * group's share of the MIG demand (Little's law: arrival rate x mean duration, services at
 * their peak replica count), whole or shared GPUs for the rest. Then it searches: a local
 * search over each group's setup (MIG GPUs per node +-1 and +-a quarter, every GPU carved
 * with one of the model's maximal layouts that fit the demand best, or the planner's mix,
 * the sharing mode and replicas of the GPUs left whole, and, cluster-wide, dynamic MIG on or
 * off), every candidate simulated by sim/scenario.c on the same arrivals (the scenario's
 * seed), under gpusched's scheduling (strategy "all": priority, memory-aware sharing, dynamic
 * MIG; "all-static" where dynamic MIG is off). A candidate's MIG layout reaches the
 * simulator as the mig-parted document gs_advice_migparted writes, so what is simulated is
 * what is recommended.
 *
 * Ranking: a setup is feasible when online inference meets the scenario's SLA (p99 wait
 * within sla.online_wait, at most 5 % of online pods missing it; a scenario without online
 * work is always feasible). Feasible beats infeasible; among feasible setups the higher used
 * share wins (with a fixed set of GPUs that is the lower $ per useful GPU-hour, price
 * weighted), then the higher allocated share; among infeasible ones the lower online p99
 * wait. The current setup is the scenario as written (its groups' sharing and mig_config,
 * the layouts static: dynamic MIG is off until the scheduler is told otherwise).
 *
 * Pure library code over a parsed scenario; it runs simulations on threads (opts.threads). */
#ifndef GS_SIM_ADVISE_H
#define GS_SIM_ADVISE_H

#include "../base/buf.h"
#include "../formats/scenario.h"
#include "scenario.h"

#include <stdbool.h>

/* One node group's setup: every node of the group is set up alike (one mig-parted config and
 * one device-plugin config per group, applied by node label). */
struct gs_adv_group {
    enum gs_group_sharing sharing; /* of the GPUs not in MIG mode */
    int replicas;                  /* time-slicing / MPS replicas per GPU */
    bool mig[GS_MAX_GPUS_NODE];    /* GPU index in MIG mode */
    struct gs_mig_layout layout[GS_MAX_GPUS_NODE];
};

struct gs_adv_setup {
    int ngroups;
    int dynamic_mig; /* 1: the scheduler re-carves MIG GPUs for what is pending (the chart's
                        scheduler.dynamicMig), 0: the layouts stay as set (an int: setups
                        compare byte for byte) */
    struct gs_adv_group g[GS_SC_MAX_GROUPS];
};

struct gs_adv_eval {
    struct gs_adv_setup setup;
    struct gs_sim_result r;
    bool feasible;
    double score;
};

#define GS_ADV_TREE_MAX 512

struct gs_advice {
    const struct gs_scenario *sc; /* not owned */
    struct gs_adv_eval current, recommended;
    struct gs_adv_eval seed;                      /* the decision tree's first setup */
    char tree[GS_SC_MAX_GROUPS][GS_ADV_TREE_MAX]; /* each group's walk, in words */
    char pick[GS_SC_MAX_GROUPS][32];              /* what the tree picks: mig, time-slicing... */
    int simulations;                              /* setups simulated */
    int passes;                                   /* search passes */
    struct gs_adv_eval *top;                      /* the best setups tried, best first (heap) */
    int ntop;
};

struct gs_advise_opts {
    int threads; /* <= 0: number of CPUs */
    int budget;  /* most setups to simulate; <= 0: 120 */
};

struct gs_error;

/* Advise on a scenario (classes, not a trace). out is filled; gs_advice_free frees it. */
int gs_advise(const struct gs_scenario *sc, const struct gs_advise_opts *o, struct gs_advice *out,
              struct gs_error *err);
void gs_advice_free(struct gs_advice *a);

/* The setup the scenario describes (its groups' sharing and mig configs, resolved per GPU). */
int gs_adv_setup_of(const struct gs_scenario *sc, struct gs_adv_setup *s, struct gs_error *err);
/* The mig-parted v1 document of a setup: one config "gpusched-GROUP" per group with MIG GPUs
 * (entries by GPU index, a device-filter of the model's PCI IDs, the GPUs left whole listed
 * with mig-enabled: false); "" when no group uses MIG. */
int gs_adv_migparted(const struct gs_scenario *sc, const struct gs_adv_setup *s,
                     struct gs_buf *out);
/* The NVIDIA device-plugin v1 config of group g (migStrategy mixed when it has MIG GPUs,
 * sharing.timeSlicing or sharing.mps with its replicas). */
int gs_adv_dpconfig(const struct gs_scenario *sc, const struct gs_adv_setup *s, int g,
                    struct gs_buf *out);
/* "none", "time-slicing", "mps" or "fraction". */
const char *gs_adv_sharing_name(enum gs_group_sharing s);
/* "MIG 2x3g.40gb on GPUs 0-1, 6 whole GPUs time-sliced x4" */
void gs_adv_group_str(const struct gs_scenario *sc, const struct gs_adv_setup *s, int g, char *out,
                      unsigned size);
/* Simulate a setup (the scenario with its groups set up so). */
int gs_adv_simulate(const struct gs_scenario *sc, const struct gs_adv_setup *s,
                    struct gs_sim_result *out, struct gs_error *err);

/* Renderings: a text table, JSON and a self-contained HTML report. files (may be NULL) names
 * the configs written, for the JSON and the report. */
int gs_advice_table(const struct gs_advice *a, struct gs_buf *out);
int gs_advice_json(const struct gs_advice *a, const char *files_dir, struct gs_buf *out);
int gs_advice_html(const struct gs_advice *a, struct gs_buf *out);

/* `advise sizes`: the article's cluster-size table (< 8, 8-32, 32-128, > 128 GPUs) measured:
 * a cluster of each size with the article's workload mix for it (MIG GPUs carved with the
 * article's configs as written), advised as above (budget: 60 setups per size unless
 * opts.budget says), and run under the exclusive strategy (1 pod = 1 GPU) for the gains. */
#define GS_ADV_SIZES 4
struct gs_adv_size {
    const char *label, *article_pick, *article_util; /* the article's row */
    char scenario_name[GS_NAME_MAX];
    int gpus;
    struct gs_advice advice;
    struct gs_sim_result exclusive; /* the cluster under strategy exclusive, for the gains */
};
/* The YAML of the size scenario i (0..3), for inspection and tests. */
const char *gs_adv_size_yaml(int i);
int gs_advise_sizes(const struct gs_advise_opts *o, struct gs_adv_size out[GS_ADV_SIZES],
                    struct gs_scenario *scs /* GS_ADV_SIZES, filled */, struct gs_error *err);
int gs_adv_sizes_table(const struct gs_adv_size *sz, struct gs_buf *out);
int gs_adv_sizes_json(const struct gs_adv_size *sz, struct gs_buf *out);

#endif
