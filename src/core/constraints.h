/* constraints.h - Kubernetes placement semantics, as kube-scheduler v1.37 applies them: the
 * filters NodeName, NodeAffinity (spec.nodeSelector and required node affinity), NodePorts,
 * PodTopologySpread (DoNotSchedule) and InterPodAffinity (required affinity and
 * anti-affinity, both the incoming pod's and the placed pods' anti-affinity against it), and
 * the scores NodeAffinity (preferred), InterPodAffinity (preferred terms of both sides and the
 * placed pods' required affinity at weight 1) and PodTopologySpread (ScheduleAnyway), each
 * normalised to 0..100 as upstream normalises it. Taints, tolerations and resource fit live
 * elsewhere (the engine); NodeUnschedulable too.
 *
 * Three nouns, each a module whose header is its contract; this header includes the three:
 * - struct gs_kpod (kpod.h): what one pod asks (labels, namespace, node selector and affinity,
 *   pod (anti-)affinity terms, spread constraints, host ports), and the predicates on its
 *   terms (label selectors, node selector terms, namespaces).
 * - struct gs_kstate (kstate.h): what the placed pods add up to on a cluster's nodes, updated
 *   incrementally as pods are added and removed; host ports per node live in kports.c.
 * - struct gs_kprep (kprep.h): the per-pod precomputation (upstream's PreFilter/PreScore
 *   state), and the filters and scores that read it.
 *
 * Semantics follow upstream to the quirks: a nil label selector matches nothing and an empty
 * one everything; a spread constraint whose selector has no requirements counts no pods; a
 * pod whose required affinity matches no placed pod may still go where the node has every
 * topology key, if it matches all its own terms and no pod in the cluster matches them;
 * affinity counts of terms with the same topology key add up; terminating pods count for
 * inter-pod affinity but not for spreading. Namespace selectors: only requirements on
 * kubernetes.io/metadata.name (exact, every namespace has it) or the empty selector (all
 * namespaces); podspec refuses others. System default spread constraints are not applied.
 *
 * Core: no I/O, no threads, no globals. A state is not thread-safe while being updated; any
 * number of threads may read one state with their own preps. */
#ifndef GS_CONSTRAINTS_H
#define GS_CONSTRAINTS_H

#include "kpod.h"
#include "kprep.h"
#include "kstate.h"

#endif
