/* build.h - what a scenario becomes under a sharing strategy: the cluster of its node groups
 * (MIG layouts from the mig-parted config, time-slicing and MPS replicas, labels), the
 * tenants' queues, and what each workload class asks for. sim/scenario.c builds every run
 * with it; sim/advise.c reads a scenario's current MIG layouts through the same functions,
 * so the advice starts from the cluster the simulator runs.
 *
 * Pure functions of their inputs (no globals): thread-safe on distinct outputs. Errors name
 * the node group ("node group 'a100': ..."). */
#ifndef GS_SIM_BUILD_H
#define GS_SIM_BUILD_H

#include "../core/cluster.h"
#include "../core/engine.h"
#include "../core/tenant.h"
#include "../formats/draobj.h"
#include "../formats/migparted.h"
#include "scenario.h"

#include <stdbool.h>
#include <stdint.h>

struct gs_error;

/* The scenario's mig-parted config (its mig_configs) or, without one, the article's, parsed
 * into *mp (the caller frees it with gs_migparted_free). Returns 0 or GS_EINVAL. */
int gs_simbuild_migparted(const struct gs_scenario *sc, struct gs_migparted **mp,
                          struct gs_error *err);
/* Node group g's mig_config looked up in mp: *cfg, or NULL when the group names none.
 * Returns 0, or GS_EINVAL when mp does not hold it. */
int gs_simbuild_group_config(const struct gs_scenario *sc, const struct gs_migparted *mp, int g,
                             const struct gs_mp_config **cfg, struct gs_error *err);
/* GPU k of node group g: MIG on (*on) and its layout, from cfg (gs_simbuild_group_config; a
 * config without an entry for the GPU leaves MIG off) or, without cfg, the group's inline
 * layout. Returns 0 or GS_EINVAL (the layout does not fit the GPU). */
int gs_simbuild_gpu_mig(const struct gs_scenario *sc, const struct gs_mp_config *cfg, int g, int k,
                        bool *on, struct gs_mig_layout *layout, struct gs_error *err);

/* The cluster of the scenario's node groups under strategy st (nodes GROUP-N; a dra group's
 * nodes without GPUs: theirs are DRA devices), into c
 * (initialised here; the caller releases it, also on error). Returns 0 or an error. */
int gs_simbuild_cluster(const struct gs_scenario *sc, const struct gs_strategy *st,
                        struct gs_cluster *c, struct gs_error *err);
/* Per class: the sharing modes that exist on c and can hold its GPU memory (bit 0:
 * time-slicing, bit 1: MPS); a class with none gets dedicated GPUs. */
void gs_simbuild_share_ok(const struct gs_scenario *sc, const struct gs_cluster *c,
                          uint8_t share_ok[GS_SC_MAX_CLASSES]);
/* The tenants' capacity (c's GPU units, CPU and memory) and, when queues is set, one queue
 * per scenario tenant with its quota and limit, into t (initialised by the caller). */
int gs_simbuild_tenants(const struct gs_scenario *sc, const struct gs_cluster *c, bool queues,
                        struct gs_tenants *t, struct gs_error *err);
#define GS_SIMBUILD_CLASS_LABEL "sim.gpusched.io/class-"
/* Whether class k's node_selector and node_affinity admit node n (its labels), as
 * kube-scheduler's NodeAffinity filter does (core/kpod.h). True for a class without them. */
bool gs_simbuild_class_admits(const struct gs_sc_class *k, const struct gs_node *n);
/* The same for node group g's nodes: its labels and the GPU product the simulator sets. */
bool gs_simbuild_group_admits(const struct gs_scenario *sc, int k, int g);
/* What a pod of class k asks for under st (share_ok: gs_simbuild_share_ok's); *shared: it
 * may land on a time-sliced or MPS GPU. A class with a node_selector or node_affinity also
 * asks for the label GS_SIMBUILD_CLASS_LABEL<k>, which gs_simbuild_cluster puts on the nodes
 * that satisfy them. */
void gs_simbuild_request(const struct gs_scenario *sc, const struct gs_strategy *st,
                         const uint8_t *share_ok, int k, struct gs_request *r, bool *shared);

/* The DRA part of a scenario: the ResourceSlices of its dra groups' nodes as gpusched's agent
 * publishes them, the DeviceClasses of deploy/dra/, and per claim class its pods' claim
 * (every pod of the class names one like it; sim/scenario.c allocates it per pod). */
struct gs_simbuild_dra {
    struct gs_draobj_class classes[2];
    bool has_classes;
    struct gs_draobj_slice *slices;
    int nslices, cap_slices;
    struct gs_draobj_claim claims[GS_SC_MAX_CLASSES];
    int nclaims;
    int claim_of[GS_SC_MAX_CLASSES]; /* per class: its claim, -1 none */
};
/* Into d (initialised here; the caller releases it, also on error): nothing (nslices and
 * nclaims 0) for a scenario without dra groups nor claims. Returns 0 or an error. */
int gs_simbuild_dra(const struct gs_scenario *sc, struct gs_simbuild_dra *d, struct gs_error *err);
void gs_simbuild_dra_release(struct gs_simbuild_dra *d);

#endif
