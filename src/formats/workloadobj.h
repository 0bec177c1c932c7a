/* workloadobj.h - gangs as Kubernetes v1.37 defines them: the Workload API's PodGroup
 * (scheduling.k8s.io/v1beta1, as kube-scheduler and the Job controller of v1.37.2 read and
 * write it; v1alpha3 serves the same fields), read from the API server's JSON into the record
 * gpusched's PodGroup CRD fills (struct gs_kube_podgroup, formats/tenantobj.h, with api
 * GS_PG_WORKLOAD), so that one gang model places, preempts and reports both; and the status
 * condition kube-scheduler writes on it.
 *
 *   metadata: namespace, name, generation, creationTimestamp
 *   spec.schedulingPolicy: exactly one of gang {minCount >= 1} (all or nothing, once minCount
 *     pods exist) and basic {} (pods go one by one)
 *   spec.priority: the group's priority (0 when unset, as kube-scheduler's PodGroupPriority);
 *     kube-scheduler schedules no member whose own priority differs
 *   spec.disruptionMode: single (the default: a member may be preempted alone) or all
 *   spec.workloadRef.workloadName: the Workload it was made from (for messages)
 *   spec.schedulingConstraints.topology, spec.resourceClaims, spec.parentCompositePodGroupName:
 *     placement gpusched does not model; recorded in unsupported, so its pods wait saying so
 *     rather than be placed against them
 *   status.conditions[type PodGroupInitiallyScheduled]: status, reason, message (its hash) and
 *     lastTransitionTime, so a writer changes the condition only when it changes
 *
 * A Pod names its group in spec.schedulingGroup.podGroupName (gs_kube_pod.group). The Workload
 * object itself is not read: a PodGroup carries its template's policy, minCount included, and
 * kube-scheduler reads PodGroups alone.
 *
 * Bounded: names longer than 253 characters, minCount or priority out of range, a policy with
 * both or neither variant, more than GS_WPG_MAX_CONDITIONS conditions are GS_EINVAL naming the
 * object and the field path. Plain data, no heap. */
#ifndef GS_WORKLOADOBJ_H
#define GS_WORKLOADOBJ_H

#include "tenantobj.h"

#include <jansson.h>
#include <stdbool.h>

#define GS_WPG_MAX_CONDITIONS 16
#define GS_WPG_CONDITION      "PodGroupInitiallyScheduled"

struct gs_error;

/* Read a Workload API PodGroup into g (api GS_PG_WORKLOAD; timeout_s 0: kube-scheduler keeps
 * no schedule timeout for a group). Returns 0 or GS_EINVAL with err. */
int gs_kube_wpodgroup_read(const json_t *obj, struct gs_kube_podgroup *g, struct gs_error *err);

/* Whether PodGroupInitiallyScheduled should become (scheduled, reason, message) on g: not when
 * it says so already, and never from True back to False (kube-scheduler keeps True once set). */
bool gs_kube_wpodgroup_condition_changes(const struct gs_kube_podgroup *g, bool scheduled,
                                         const char *reason, const char *message);
/* Strategic-merge patch of g's status (the subresource) setting PodGroupInitiallyScheduled:
 * observedGeneration g's, lastTransitionTime now (RFC 3339) unless the status stays as it is.
 * A new reference; NULL on allocation failure. */
json_t *gs_kube_wpodgroup_condition_patch(const struct gs_kube_podgroup *g, bool scheduled,
                                          const char *reason, const char *message, const char *now);

#endif
