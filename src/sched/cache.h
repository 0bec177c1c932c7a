/* cache.h - the engine's cluster built from Kubernetes Nodes and the pods bound to them.
 *
 * A node's GPUs follow what NVIDIA's stack publishes: the model from the label
 * nvidia.com/gpu.product (catalog names and GFD values), the physical count from
 * nvidia.com/gpu.count (else the allocatable), time-slicing or MPS replicas from
 * nvidia.com/gpu.replicas and nvidia.com/gpu.sharing-strategy, MIG instances from
 * allocatable nvidia.com/mig-<profile> (laid out on the fewest GPUs of the model with exact
 * placements), and whole GPUs from allocatable nvidia.com/gpu. Bound pods take the devices
 * their gpusched.io/devices annotation names, or, without one, the first free devices that
 * fit. A node whose labels make no sense keeps its CPU and memory but offers no GPUs, and
 * says why. Pure functions over the given arrays; not thread-safe. */
#ifndef GS_SCHED_CACHE_H
#define GS_SCHED_CACHE_H

#include "../core/engine.h"
#include "../formats/kubeobj.h"

struct gs_error;

/* Add one node to c. Returns the node id or a negative error. A node whose GPU labels make
 * no sense keeps only CPU and memory, and note (when non-NULL) receives the reason; nothing
 * is logged here, so a caller reports it once per change of the Node, not once per cycle. */
int gs_cache_add_node(struct gs_cluster *c, const struct gs_kube_node *kn, char *note,
                      size_t note_size);
/* Parse a devices annotation ("gpu=0,1", "mig=0:3g.40gb@4", "milli=2:500", "replica=1,1")
 * into an allocation on node id (GPU indexes are node-local). Returns 0 or GS_EINVAL. */
int gs_cache_parse_devices(const struct gs_cluster *c, int node, const char *text,
                           const struct gs_request *req, struct gs_alloc *a);
/* Account a bound pod: its annotated devices when they are valid and free, else the first
 * free devices that fit. Returns 0, or GS_ENOFIT when the node cannot hold it (the pod is
 * then counted for CPU and memory only). */
int gs_cache_add_pod(struct gs_cluster *c, int node, const struct gs_kube_pod *p,
                     struct gs_alloc *used);

#endif
