/* clusterscen.h - a live cluster as a simulator scenario (formats/scenario.h), for
 * `gpusched advise cluster`.
 *
 * Nodes: every Node with GPUs (nvidia.com/gpu.product a catalog model) is grouped with the
 * nodes set up alike: same model, GPU count (nvidia.com/gpu.count, else allocatable), sharing
 * (nvidia.com/gpu.sharing-strategy and nvidia.com/gpu.replicas) and MIG layout per GPU (the
 * gpusched agent's inventory annotation; without one, the node's nvidia.com/mig-* allocatable
 * counts packed by the exact planner onto the GPUs nvidia.com/gpu does not count). A group's
 * cpu and memory are its smallest node's allocatable. Its MIG layouts become a mig-parted
 * config "live-GROUP" in the scenario's mig_configs. Nodes of a model the catalog lacks are
 * left out (named in a comment). Nodes are grouped also by their values of the labels the GPU
 * pods' nodeSelectors and required node affinity read (at most 8 keys; the GPU product and
 * sharing strategy are in the shape already), which the group carries as its labels.
 *
 * Workload: pods that ask for GPUs (nvidia.com/gpu or nvidia.com/mig-*), running, pending or
 * created within the window, grouped into classes by namespace, owner (a ReplicaSet's
 * Deployment, a Job, a StatefulSet; bare pods by namespace) and shape (GPUs or MIG profile,
 * cpu, memory). A class's kind is the label gpusched.io/workload-kind when set, else
 * online-inference for Deployments and StatefulSets, training for Jobs, development for bare
 * pods. Long-running services (Deployments, StatefulSets) are their current replicas for
 * the whole window; others arrive as a Poisson process at the rate they were created in the
 * window, and run as long as the finished ones did (lognormal fitted to them; running pods'
 * ages when none finished). Priority is the pod's spec.priority. util (unknown to the API) is
 * a default per kind (online 0.3, batch 0.5, training 0.8, development 0.1; for a MIG pod at
 * most its slice's share of the GPU) unless the pod's annotation gpusched.io/gpu-utilization
 * (0..1 of a whole GPU) says. No warm-up: the pods running or waiting now are there from the
 * start and their waits count (a Deployment's replicas that no slot fits miss the SLA). A pod on a
 * time-sliced or MPS node may share that way. A class keeps its pods' spec.nodeSelector and
 * required node affinity (node_selector, node_affinity; part of the class's key); constraints
 * beyond what a class holds (matchFields, more than 4 labels, terms, expressions or values)
 * are left out, the pod named in a comment. Namespaces are tenants when there are two or more. At
 * most 32 classes: the largest by GPUs held are kept, the rest named in a comment.
 *
 * The result is scenario YAML text (the caller parses it, so it is checked like any file). */
#ifndef GS_CLUSTERSCEN_H
#define GS_CLUSTERSCEN_H

#include "../base/buf.h"
#include "../core/cluster.h"
#include "scenario.h"

#include <jansson.h>

struct gs_error;

/* nodes and pods: the items of a NodeList and a PodList (JSON arrays). now_s: the time the
 * lists were read (Unix seconds); window_s: how far back created pods count. node_names[g]
 * (GS_SC_MAX_GROUPS entries, may be NULL) gets group g's node names, space-separated (heap,
 * caller frees). Returns 0, GS_EINVAL (no GPU node, no GPU pod) or GS_ENOMEM. */
int gs_cluster_scenario(const json_t *nodes, const json_t *pods, double now_s, double window_s,
                        struct gs_buf *yaml, char **node_names, struct gs_error *err);
/* The same, each node's GPUs (count, MIG layouts) taken from live where live has the node
 * with GPUs of its model: the scheduler's reading of the Nodes (sched/cache.h: the agent's
 * inventory, else nvidia.com/mig.config in the mig-parted config, else counts), so the
 * scenario has the layouts the scheduler places on. live NULL: as gs_cluster_scenario. */
int gs_cluster_scenario_live(const json_t *nodes, const json_t *pods, const struct gs_cluster *live,
                             double now_s, double window_s, struct gs_buf *yaml, char **node_names,
                             struct gs_error *err);

#endif
