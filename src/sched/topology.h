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
 * Each list of levels in use gets its domains (core/topo.h) built once per cycle, and each
 * gang is placed by those of its own levels (core/cycle.h: gs_cyc_gang.domains); without any
 * gang asking a level, nothing is built and the cycle decides as before.
 *
 * The struct is opaque, owned by the cycle input (sched/cyclein.c) that builds it, read by the
 * cycle output (sched/cycleout.c) for its reasons; one thread. */
#ifndef GS_SCHED_TOPOLOGY_H
#define GS_SCHED_TOPOLOGY_H

#include "../core/topo.h"
#include "snapshot.h"
#include "tenancy.h"

#include <stddef.h>

struct gs__topology;

/* The cycle's topology from the objects, the flag's levels (NULL: none), the snapshot's pods
 * (the pending ones of scheduler_name), their gangs (ty) and the cluster c. Returns 0 with
 * *out (free with gs__topology_free), or GS_ENOMEM. */
int gs__topology_new(const struct gs_policy_objs *po, const struct gs_topo_levels *flag,
                     const struct gs_snapshot *sn, const struct gs_tenancy *ty,
                     const struct gs_cluster *c, const char *scheduler_name,
                     struct gs__topology **out);
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
 * --topology-levels). */
void gs__topology_level_words(const struct gs__topology *t, int g, char *msg, size_t n);

#endif
