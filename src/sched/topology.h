/* topology.h - one scheduling cycle's topology: which levels apply, what each gang asks, and
 * core/topo.h's domains built for the cycle's cluster.
 *
 * A gang's ask is read from its pending pods (Kueue's kueue.x-k8s.io/podset-required-topology
 * and podset-preferred-topology annotations, formats/topoobj.h); every pending member must ask
 * the same (mode and level), or the gang waits saying which two pods disagree. Pods outside a
 * gang are not constrained by the annotations (one pod is on one node).
 *
 * Which levels a gang's ask is read against, in order:
 *   1. the Topology (kueue.x-k8s.io) that the gang's ResourceFlavor names (spec.topologyName):
 *      the flavor whose spec.nodeLabels all appear in the pods' spec.nodeSelector, as Kueue
 *      writes them there when it admits the pods with that flavor;
 *   2. else the one Topology, when the cluster has exactly one;
 *   3. else the scheduler's --topology-levels.
 * A level the applicable levels lack, a flavor naming a Topology that does not exist, several
 * Topologies and no flavor (nor flag) to choose one, or a Topology of more than
 * GS_TOPO_LEVELS_MAX levels: the gang waits with a reason naming the level or the object.
 *
 * NVIDIA ComputeDomains (formats/cdomain.h): a pod whose ResourceClaims carry a
 * ComputeDomainChannelConfig belongs to that domainID, and a domain's pods must share one NVLink
 * clique (the node label nvidia.com/gpu.clique). gpusched reads that as an implicit required
 * level nvidia.com/gpu.clique for the domain's pods, through the same machinery:
 *   - a gang of them that asks no level asks it of the levels [nvidia.com/gpu.clique]
 *     (reasons say "of ComputeDomain <uid>"); one that asks a coarser level or a preferred one
 *     of levels having nvidia.com/gpu.clique asks it required there; levels without it, or
 *     members in two domains: the gang waits saying so;
 *   - a pod of a domain whose pods are bound already (or placed earlier in the cycle) may take
 *     only a node of their clique, and no pod of a domain a node without the label
 *     (gs__topology_pod_node: the cycle's node filter); bound pods already in two cliques: its
 *     pods wait saying which;
 *   - a claim whose channel config cannot be read: its pod (its gang) waits, "dra", with the
 *     claim and the field path.
 *
 * Each list of levels in use gets its domains (core/topo.h) built once per cycle, and each
 * gang is placed by those of its own levels (core/cycle.h: gs_cyc_gang.domains); without any
 * gang asking a level, nothing is built and the cycle decides as before.
 *
 * The struct is opaque, owned by the cycle input (sched/cyclein.c) that builds it, read by the
 * cycle output (sched/cycleout.c) for its reasons; one thread. */
#ifndef GS_SCHED_TOPOLOGY_H
#define GS_SCHED_TOPOLOGY_H

#include "../core/topo.h"
#include "claims.h"
#include "snapshot.h"
#include "tenancy.h"

#include <stddef.h>

struct gs__topology;

/* The cycle's topology from the objects, the flag's levels (NULL: none), the snapshot's pods
 * (the pending ones of scheduler_name), their gangs (ty), the cluster c and the cycle's claims
 * (dra, NULL: none, so no ComputeDomains). Returns 0 with *out (free with gs__topology_free),
 * or GS_ENOMEM. t keeps c and reads dra only while it is built. */
int gs__topology_new(const struct gs_policy_objs *po, const struct gs_topo_levels *flag,
                     const struct gs_snapshot *sn, const struct gs_tenancy *ty,
                     const struct gs_cluster *c, struct gs_claims_cycle *dra,
                     const char *scheduler_name, struct gs__topology **out);
void gs__topology_free(struct gs__topology *t);
/* The domains gang g's ask indexes (core/cycle.h's gs_cyc_gang.domains), NULL when it asks
 * nothing or is blocked. */
struct gs_topo *gs__topology_domains(struct gs__topology *t, int g);
/* What gang g asks in the cycle's levels (zero: nothing). */
struct gs_topo_ask gs__topology_ask(const struct gs__topology *t, int g);
/* Why gang g's pods cannot be placed by topology whatever the cycle does, in msg ("topology:
 * ..."): returns "topology", or NULL when they may be. */
const char *gs__topology_blocked(const struct gs__topology *t, int g, char *msg, size_t n);
/* The words for gang g's required level no domain holds: "level 'K' of Topology T" (or of
 * --topology-levels, or of ComputeDomain U, with the clique its running pods hold). */
void gs__topology_level_words(const struct gs__topology *t, int g, char *msg, size_t n);

/* ComputeDomains, per snapshot pod i. Why pod i cannot be placed whatever the cycle does (a
 * claim's channel config unreadable: "dra"; its domain's running pods split over cliques:
 * "topology"), in msg; NULL when it may be. */
const char *gs__topology_pod_blocked(const struct gs__topology *t, int i, char *msg, size_t n);
enum { GS_CD_NODE_OK = 0, GS_CD_NODE_NO_CLIQUE, GS_CD_NODE_OTHER_CLIQUE };
/* Whether node may take pod i for its domain: GS_CD_NODE_OK (also for a pod of no domain),
 * GS_CD_NODE_NO_CLIQUE (the node has no nvidia.com/gpu.clique label), GS_CD_NODE_OTHER_CLIQUE
 * (the domain's pods are in another clique). */
int gs__topology_pod_node(const struct gs__topology *t, int i, int node);
/* Pod i took node in the cycle: its domain's later pods follow it to that clique. */
void gs__topology_pod_placed(struct gs__topology *t, int i, int node);
/* "ComputeDomain U (its pods are in NVLink clique 'C')" for pod i, in msg; false for a pod of
 * no domain. */
bool gs__topology_pod_domain(const struct gs__topology *t, int i, char *msg, size_t n);

#endif
