/* draext.h - extended resources backed by a DeviceClass (KEP-5004; DRAExtendedResource, GA and
 * on by default in Kubernetes v1.37): a pod asking resources.limits["example.com/gpu"]: 1 where
 * a DeviceClass has spec.extendedResourceName "example.com/gpu" (or asking
 * "deviceclass.resource.kubernetes.io/<class>", any class's implicit name) gets it, on a node
 * whose allocatable has none of it, from a device of that class, as kube-scheduler's
 * DynamicResources plugin gives it:
 *   - the class of a name: the classes naming it in extendedResourceName, the one created last
 *     (the same second: the first by name); else the class of the implicit name;
 *   - kube-scheduler makes one ResourceClaim for the pod (annotation
 *     resource.kubernetes.io/extended-resource-claim: "true", the pod its controller owner),
 *     one request per container and resource, "container-<i>-request-<j>" (i: the container's
 *     place in initContainers then containers, j: the resource's among the container's
 *     requests, sorted), exactly count devices of the class; an init container reuses the
 *     requests of the containers and sidecars after it, and the init containers' requests
 *     beyond them are one request, their largest; the requests sorted by name;
 *   - it writes the claim, its allocation and reservedFor the pod, then the pod's
 *     status.extendedResourceClaimStatus {requestMappings: [{containerName, resourceName,
 *     requestName}], resourceClaimName}, and binds.
 * gpusched names the claim "<pod>-extended-resources-" (cut to 58 characters, as generateName
 * is) and five characters of a hash of the pod's uid, so that a retry finds the claim an
 * earlier try wrote; a claim of the pod found in the API is used as any claim of the pod.
 * gpusched serves by DRA the extended resources it keeps among a pod's other resources (not
 * nvidia.com/gpu, nvidia.com/mig-* nor gpusched.io/gpu-milli, which its engine counts), on a
 * node where every such resource of the pod has no allocatable; where each has some, the
 * device plugin's, as before; a node with some of both does not take the pod.
 * Pure functions on data; thread-safe. */
#ifndef GS_DRAEXT_H
#define GS_DRAEXT_H

#include "draobj.h"
#include "kubeobj.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define GS_DRAEXT_ANNOTATION "resource.kubernetes.io/extended-resource-claim"
#define GS_DRAEXT_PREFIX     "deviceclass.resource.kubernetes.io/"
#define GS_DRAEXT_MAX_MAP    (2 * GS_MAX_POD_XREQ)

/* The DeviceClass that backs extended resource name, or NULL. */
const struct gs_draobj_class *gs_draext_class(const struct gs_draobj_class *classes, int n,
                                              const char *name);

struct gs_draext_map {
    char container[64];
    char resource[64];
    char request[GS_DRA_NAME_MAX];
};

/* A pod's special claim. */
struct gs_draext {
    int nres;                      /* the backed resources the pod asks */
    char res[GS_MAX_POD_XREQ][64]; /* their names */
    struct gs_draobj_claim claim;  /* ns, name, owner and requests; owned */
    int nmap;                      /* status.extendedResourceClaimStatus.requestMappings */
    struct gs_draext_map map[GS_DRAEXT_MAX_MAP];
};

/* The pod's special claim from its containers' requests (p->xreq) and the classes: 0 with
 * nres > 0, or 0 with nres 0 when no class backs what it asks; GS_ENOMEM. out is released with
 * gs_draext_release either way. */
int gs_draext_build(const struct gs_kube_pod *p, const struct gs_draobj_class *classes, int n,
                    struct gs_draext *out, struct gs_error *err);
void gs_draext_release(struct gs_draext *x);

/* The claim's name for pod p into out (GS_KNAME_MAX bytes). */
void gs_draext_claim_name(const struct gs_kube_pod *p, char *out, size_t n);

/* The claim's object to create (POST), and the merge patch of the pod's status that names it.
 * NULL without memory. */
json_t *gs_draext_claim_json(const struct gs_draext *x, const char *pod_name, const char *pod_uid);
json_t *gs_draext_pod_status(const struct gs_draext *x);

#endif
