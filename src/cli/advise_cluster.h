/* advise_cluster.h - `gpusched advise cluster`: the live cluster (Nodes and Pods listed from
 * the API server, or read from `kubectl get nodes,pods -A -o json` output) as a scenario
 * (formats/clusterscen.h), advised like a scenario file. */
#ifndef GS_CLI_ADVISE_CLUSTER_H
#define GS_CLI_ADVISE_CLUSTER_H

#include "../base/buf.h"
#include "../formats/scenario.h"

struct gs_error;

/* From the API server (kubeconfig NULL: $KUBECONFIG or ~/.kube/config) or, when from_file is
 * set, from a List of Nodes and Pods in that file (read at its modification time). Each node's
 * GPUs and MIG layouts are the scheduler's reading (sched/cache.h): the agent's inventory,
 * else nvidia.com/mig.config in mig_config (a mig-parted file or the ConfigMap holding it, as
 * `gpusched scheduler --mig-config`; NULL: none), else counts. Fills sc (parsed from the
 * scenario text, which yaml gets) and node_names[g] (heap, caller frees: the group's node
 * names, space-separated). Returns 0 or an error. */
int gs_advise_cluster_scenario(const char *kubeconfig, const char *from_file,
                               const char *mig_config, double window_s, struct gs_scenario *sc,
                               char **node_names, struct gs_buf *yaml, struct gs_error *err);

#endif
