/* dra.h - the node agent as a Kubernetes DRA driver, gpu.gpusched.io (resource.k8s.io/v1,
 * the kubelet's DRA plugin API v1 over gRPC core; messages from src/agent/proto/dra.proto and
 * pluginregistration.proto through protobuf-c).
 *
 * The shared interface (other parts of gpusched build against it):
 *   - `gpusched agent run --dra [--dra-plugins-dir DIR] [--dra-registry-dir DIR]
 *     [--cdi-dir DIR] [--dra-dynamic-mig]` with --fake F --node N --kubeconfig K as usual.
 *     Defaults: /var/lib/kubelet/plugins, /var/lib/kubelet/plugins_registry, /var/run/cdi.
 *   - Registration: service pluginregistration.Registration on
 *     <registry>/gpu.gpusched.io-reg.sock; GetInfo answers PluginInfo{type "DRAPlugin", name
 *     "gpu.gpusched.io", endpoint "<plugins>/gpu.gpusched.io/dra.sock", supported_versions
 *     ["v1.DRAPlugin"]}; NotifyRegistrationStatus is logged. The kubelet's plugin watcher
 *     finds the socket itself (and again after a kubelet restart): nothing is dialled.
 *   - DRA service k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin (NodePrepareResources,
 *     NodeUnprepareResources) on <plugins>/gpu.gpusched.io/dra.sock.
 *   - ResourceSlices: formats/draslice.h (one pool per node named after it, ownerReference to
 *     the Node, generateName "<node>-gpu.gpusched.io-"; device names gpu-<i>,
 *     gpu-<i>-mig-<profile>-<start>, gpu-<i>-part-<profile>-<start>). gs_dra_sync converges
 *     them: it lists the slices with the field selectors spec.driver and spec.nodeName, then
 *     updates, creates and deletes until the pool is what the GPUs are now, bumping
 *     pool.generation (above every generation seen) whenever the pool changes; once at start
 *     it always rewrites them, later only on a change of GPUs, instances or health, or when
 *     the slices on the server are not the ones last written.
 *   - NodePrepareResources, per claim: a claim already prepared (in the checkpoint) is
 *     answered from the checkpoint; else the ResourceClaim is read (GET), its uid must match
 *     and status.allocation be set; of its results those of our driver are kept, and each
 *     must be of this node's pool and a device the driver publishes. A whole GPU gets its
 *     GPU UUID (a partitionable GPU in MIG mode without instances is switched out of MIG mode
 *     first); a static MIG device its MIG UUID; a placement "-part-" gets a MIG instance of
 *     that profile at that start, created now (MIG mode switched on first if needed; never by
 *     destroying anything: an overlap is the claim's error) or adopted when exactly that
 *     instance exists and no other claim holds it. A CDI spec <cdi-dir>/gpu.gpusched.io-<claim
 *     uid>.json (cdiVersion 0.6.0, kind gpu.gpusched.io/gpu, one device "<claim uid>-<device>"
 *     per result with env NVIDIA_VISIBLE_DEVICES=<uuid>) is written, then the checkpoint
 *     (<plugins>/gpu.gpusched.io/checkpoint.json, replaced atomically), then the answer: one
 *     Device per result with cdi_device_ids ["gpu.gpusched.io/gpu=<claim uid>-<device>"].
 *     A claim that fails gets its error and undoes what it created. Every claim asked is in
 *     the answer.
 *   - NodeUnprepareResources, per claim: the instances its prepare created are destroyed (one
 *     that cannot be, because a process still holds it, is the claim's error and the claim
 *     stays prepared), its CDI spec removed, the checkpoint updated. A claim never prepared
 *     is done at once. Every claim asked is in the answer.
 *   - After a prepare or unprepare that changed a GPU the slices are synced again.
 * Requests are bounded (GS_DRA_MAX_CLAIMS claims, ids and names of the API's lengths); a
 * malformed one gets INVALID_ARGUMENT with why.
 * The MIG instances claims hold are in use: gs_dra_in_use lists their UUIDs so the MIG
 * manager never destroys them. The backend given must be safe to share between threads
 * (gpulock.h): the gRPC thread creates and destroys instances while the agent's loop reads.
 * All functions are thread-safe. */
#ifndef GS_AGENT_DRA_H
#define GS_AGENT_DRA_H

#include "../formats/draslice.h"
#include "gpu.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_DRA_PLUGINS_DIR  "/var/lib/kubelet/plugins"
#define GS_DRA_REGISTRY_DIR "/var/lib/kubelet/plugins_registry"
#define GS_DRA_CDI_DIR      "/var/run/cdi"
#define GS_DRA_MAX_CLAIMS   256 /* claims prepared on a node, and claims in one request */
#define GS_DRA_MAX_RESULTS  32  /* the API's AllocationResultsMaxSize */

struct gs_kube_client;
struct gs_error;

/* Read a ResourceClaim: 0 and *out (the caller decrefs), GS_ENOTFOUND, or another error in
 * err. Tests give one; the driver otherwise GETs it from the API. */
typedef int (*gs_dra_claim_fn)(void *user, const char *ns, const char *name, json_t **out,
                               struct gs_error *err);

struct gs_dra_opts {
    const char *node;
    const char *plugins_dir;   /* NULL: GS_DRA_PLUGINS_DIR */
    const char *registry_dir;  /* NULL: GS_DRA_REGISTRY_DIR */
    const char *cdi_dir;       /* NULL: GS_DRA_CDI_DIR */
    bool dynamic_mig;          /* publish partitionable GPUs, create instances at prepare */
    gs_dra_claim_fn get_claim; /* NULL: GET through kc */
    void *claim_user;
};

struct gs_dra;

/* A driver over the backend b (shared, see above) and the client kc (may be NULL: nothing
 * published, claims only through get_claim). Makes <plugins>/gpu.gpusched.io and the CDI
 * directory and reads the checkpoint. Returns 0 and *out, GS_EINVAL (a checkpoint that does
 * not read: its path and field), GS_EIO (a directory), GS_ENOMEM. Serves nothing yet. */
int gs_dra_new(const struct gs_dra_opts *o, struct gs_gpu_backend *b, struct gs_kube_client *kc,
               struct gs_dra **out, struct gs_error *err);
/* Serve the registration and DRA sockets on a thread of their own. 0, or GS_EIO. */
int gs_dra_serve(struct gs_dra *d, struct gs_error *err);
/* Publish the slices of the GPUs as they are now; healthy[i] is backend GPU i's health (NULL:
 * all healthy). Returns 0, or the API's error (tried again at the next call). */
int gs_dra_sync(struct gs_dra *d, const bool *healthy, int n, struct gs_error *err);
/* The UUIDs (MIG or GPU) of devices prepared claims hold, into uuids; how many (<= cap). */
int gs_dra_in_use(struct gs_dra *d, char (*uuids)[96], int cap);
/* Claims prepared now. */
int gs_dra_prepared(struct gs_dra *d);
/* Stop serving (sockets removed) and free; prepared claims stay in the checkpoint. */
void gs_dra_free(struct gs_dra *d);

/* ---- without gRPC (tests; gs_dra_serve serves these) ---- */

enum gs_dra_call { GS_DRA_GET_INFO = 0, GS_DRA_NOTIFY, GS_DRA_PREPARE, GS_DRA_UNPREPARE };

/* Answer one call from the request's bytes: a grpc_status_code, 0 (OK) with *out (malloc'ed)
 * the packed answer of *out_len bytes, else INVALID_ARGUMENT (why says what), or
 * RESOURCE_EXHAUSTED, with *out NULL. */
int gs__dra_answer(struct gs_dra *d, enum gs_dra_call call, const uint8_t *in, size_t len,
                   uint8_t **out, size_t *out_len, char *why, size_t why_size);
/* The slices the last gs_dra_sync built (a new reference; NULL before one). */
json_t *gs__dra_slices(struct gs_dra *d);

#endif
