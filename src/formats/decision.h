/* decision.h - a scheduling cycle's decision (core/cycle.h) as one line of text, the same for
 * the scheduler daemon (`gpusched scheduler explain --output decisions`) and the simulator
 * (`gpusched sim scenario F --decisions STRATEGY`), so that their decisions on one cluster
 * can be compared line by line:
 *   BIND ai/llm-0 node-1 mig=0:3g.40gb@4
 *   NOMINATE ai/llm-1 node-1 mig=1:3g.40gb@0 recarving
 *   EVICT ai/llm-1 node-1 ai/train-3
 *   REPARTITION ai/llm-1 node-1 gpu=1 3g.40gb@0,3g.40gb@4      (or gpu=1 whole)
 *   WAIT ai/big-0 fit
 * Devices are written as the gpusched.io/devices annotation writes them (physical GPU index
 * within the node). Pure; thread-safe. */
#ifndef GS_DECISION_H
#define GS_DECISION_H

#include "../core/cycle.h"

#include <stddef.h>

/* The line for d, on cluster c (as it is after the cycle), the pod and (EVICT) the victim
 * named by the caller. */
void gs_decision_line(const struct gs_cluster *c, const struct gs_cyc_decision *d, const char *pod,
                      const char *victim, char *out, size_t size);

#endif
