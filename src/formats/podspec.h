/* podspec.h - a Pod's JSON (as the API server serves it, or a manifest) read into the
 * placement constraints of core/constraints: metadata.namespace (default "default"), .name,
 * .labels (every label), .deletionTimestamp; spec.nodeName, spec.nodeSelector,
 * spec.affinity.nodeAffinity (required nodeSelectorTerms with matchExpressions In, NotIn,
 * Exists, DoesNotExist, Gt, Lt and matchFields metadata.name In/NotIn; preferred terms with
 * weights), spec.affinity.podAffinity and .podAntiAffinity (required and preferred terms:
 * labelSelector matchLabels/matchExpressions, namespaces, namespaceSelector, topologyKey,
 * matchLabelKeys/mismatchLabelKeys merged into the selector as the API server does),
 * spec.topologySpreadConstraints (maxSkew, topologyKey, whenUnsatisfiable, labelSelector,
 * minDomains, nodeAffinityPolicy, nodeTaintsPolicy, matchLabelKeys merged), and the host
 * ports of containers and of restartable init containers (restartPolicy Always).
 *
 * Input is checked as the API server validates it (operators and their values, weights
 * 1..100, maxSkew > 0, minDomains only with DoNotSchedule, ...) and bounded (counts and
 * lengths below); anything else is GS_EINVAL with "ns/name: <field path>: why". A
 * namespaceSelector other than {} or requirements on kubernetes.io/metadata.name is refused:
 * the scheduler does not know namespaces' other labels. The result is sized by the object. */
#ifndef GS_PODSPEC_H
#define GS_PODSPEC_H

#include "../core/constraints.h"

#include <jansson.h>

#define GS_PODSPEC_MAX_LABELS   1024 /* metadata.labels */
#define GS_PODSPEC_MAX_SELECTOR 256  /* spec.nodeSelector entries */
#define GS_PODSPEC_MAX_TERMS    64   /* per list of terms or constraints */
#define GS_PODSPEC_MAX_REQS     64   /* requirements per selector or term */
#define GS_PODSPEC_MAX_VALUES   256  /* values per requirement */
#define GS_PODSPEC_MAX_NS       256  /* namespaces per term */
#define GS_PODSPEC_MAX_PORTS    512  /* host ports per pod */
#define GS_PODSPEC_MAX_CONT     256  /* containers, init containers */

struct gs_error;

/* Read a Pod into p (initialised or zeroed; its old content is released). On success p owns
 * what it holds (gs_kpod_release); on error p is left empty. Not thread-safe per p. */
int gs_podspec_read(const json_t *pod, struct gs_kpod *p, struct gs_error *err);

#endif
