/* scheduler.h - the gpusched scheduler daemon: schedules pods whose schedulerName is ours.
 *
 * Informers (list + watch with resourceVersion, bookmarks, relist on 410, reconnect with
 * backoff) keep a store of Nodes and non-terminal Pods. When the store changes, the leader
 * rebuilds the engine's cluster from it (sched/cache.c), places pending pods in priority
 * order, and binds each with the chosen devices in the gpusched.io/devices annotation (the
 * Binding carries it). A pod that does not fit gets a FailedScheduling Event that says why,
 * per reason with node counts, and is retried when the cluster changes, with backoff.
 * Leader election uses a coordination.k8s.io/v1 Lease. /healthz, /readyz and /metrics are
 * served over HTTP. In extender mode the same store and engine answer kube-scheduler's
 * extender calls (filter, prioritize, bind; node-cache-capable) instead. Tenancy (queues,
 * quotas, borrowing, preemption, gangs; sched/tenancy.c, core/tenant.c, core/preempt.c)
 * orders and gates the pending pods; /debug/pending says why each one waits. One daemon per
 * process; gs_scheduler_run blocks until stop is set or
 * leadership is lost. */
#ifndef GS_SCHEDULER_H
#define GS_SCHEDULER_H

#include "../kube/client.h"

#include <jansson.h>

#include <stdbool.h>

struct gs_migparted;
struct gs_topo_levels;

struct gs_scheduler_opts {
    const char *scheduler_name; /* "gpusched" */
    const char *policy;         /* engine policy, "gpusched" */
    bool leader_elect;
    const char *lease_namespace, *lease_name, *identity;
    double lease_duration_s, renew_deadline_s, retry_period_s;
    int http_port;                /* 0: no HTTP server */
    const char *http_bind;        /* "127.0.0.1" or "0.0.0.0" */
    int max_backoff_s;            /* per pod; 60 */
    double min_runtime_s;         /* a pod runs this long before it can be preempted; 0 */
    double volume_bind_timeout_s; /* a bind waits this long for its claims to be bound; 600 */
    bool extender;                /* serve kube-scheduler's extender protocol on the HTTP port
                                   * (POST /filter, /prioritize, /bind) instead of scheduling */
    /* NVIDIA's mig-parted config (the ConfigMap NVIDIA's mig-manager applies), for nodes
     * without a gpusched agent's inventory: their nvidia.com/mig.config names the layout of
     * each physical GPU. NULL: such nodes are laid out from counts. Not owned. */
    const struct gs_migparted *mig_config;
    /* dynamic MIG: re-carve GPUs for pods no free slot fits (core/cycle), writing the layout
     * to the Node's gpusched.io/mig-desired for the agent to apply; a GPU changed is left
     * alone for recarve_hold_s */
    bool dynamic_mig;
    double recarve_hold_s;
    /* explain: return the cycle's decisions as lines (formats/decision.h) instead of the
     * verdict per pending pod */
    bool explain_decisions;
    /* topology levels (--topology-levels), for gangs that ask a level when no Kueue Topology
     * applies (sched/cyclein.h); NULL: none. Not owned. */
    const struct gs_topo_levels *topology_levels;
};

struct gs_error;

/* Runs until *stop becomes non-zero (returns 0) or the daemon must exit: lost leadership
 * (GS_EIO) or a fatal error. Takes ownership of the client. */
int gs_scheduler_run(struct gs_kube_client *client, const struct gs_scheduler_opts *opts,
                     volatile int *stop, struct gs_error *err);

/* Explain: list Nodes, Pods, GPUQueues, ResourceQuotas, PodGroups and PDBs once, run one
 * scheduling cycle that writes nothing, and return (new reference) the cycle's verdict for
 * every pending pod of ours: [{namespace, pod, queue, priority, reason, message}], reason one
 * of fits, quota, gang, selector, taint, fragmentation, priority, preempting, resources.
 * Takes ownership of the client. */
int gs_scheduler_explain(struct gs_kube_client *client, const struct gs_scheduler_opts *opts,
                         json_t **out, struct gs_error *err);

#endif
