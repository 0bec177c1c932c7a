/* cache.h - the engine's cluster built from Kubernetes Nodes and the pods bound to them.
 *
 * A node's GPUs come from one of three sources, best first:
 *   1. the gpusched agent's inventory annotation (formats/inventory.h): every GPU at its
 *      physical index with its exact MIG placements, health and replicas; what the kubelet
 *      does not advertise (yet) is held back;
 *   2. on nodes run by NVIDIA's device plugin and mig-manager, the mig-parted config named by
 *      nvidia.com/mig.config (state success) in the config the scheduler is pointed at, when
 *      it accounts for exactly the node's allocatable nvidia.com/gpu and nvidia.com/mig-*;
 *   3. only counts: whole GPUs (nvidia.com/gpu, time-slicing or MPS replicas from
 *      nvidia.com/gpu.replicas and nvidia.com/gpu.sharing-strategy) and the fewest GPUs that
 *      hold the advertised MIG devices. Which physical GPU is which is then unknown: the node
 *      is marked layout_guessed and gpusched never writes a GPU index for it.
 * The model comes from the label nvidia.com/gpu.product (catalog names and GFD values) or
 * the inventory. Bound pods take the devices their gpusched.io/devices annotation names, or,
 * without one, the first free devices that fit. A node whose objects make no sense keeps its
 * CPU and memory but offers no GPUs, and says why. Pure functions over the given arrays; not
 * thread-safe. */
#ifndef GS_SCHED_CACHE_H
#define GS_SCHED_CACHE_H

#include "../core/engine.h"
#include "../formats/kubeobj.h"

struct gs_error;
struct gs_migparted;

/* Add one node to c. Returns the node id or a negative error. A node whose GPU labels make
 * no sense keeps only CPU and memory, and note (when non-NULL) receives the reason; nothing
 * is logged here, so a caller reports it once per change of the Node, not once per cycle. */
int gs_cache_add_node(struct gs_cluster *c, const struct gs_kube_node *kn,
                      const struct gs_migparted *mp, char *note, size_t note_size);
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
