/* policy.h - the placement policies: rows of one table {name, help, score}. A score function
 * rates one node that fits (higher is better) and fills the devices the request would take
 * there; the engine (engine.h) picks the best-scoring node, ties to the lowest rank in its
 * seeded node order. The table is constant and the lookups are thread-safe; a score uses its
 * engine's scratch (one engine per thread). */
#ifndef GS_POLICY_H
#define GS_POLICY_H

#include "cluster.h"
#include "fit.h"
#include "workload.h"

#include <stdbool.h>
#include <stdint.h>

struct gs_engine;

typedef int64_t (*gs_score_fn)(struct gs_engine *e, const struct gs_cluster *c, int node,
                               const struct gs_request *req, struct gs_alloc *choice);
/* Called by the engine before it scores for a placement: a policy whose scores also depend on
 * the whole cluster's state updates it, and returns the GPU models (a mask of model ids)
 * whose nodes' scores for whole or shared GPUs changed although the nodes did not, so the
 * engine scores them again (scores of other requests must not depend on that state). */
typedef uint32_t (*gs_prepare_fn)(struct gs_engine *e, const struct gs_cluster *c);

struct gs_policy {
    const char *name;
    const char *help;
    gs_score_fn score;
    bool normalize;        /* min-max normalise scores over feasible nodes before choosing */
    gs_prepare_fn prepare; /* NULL: scores depend on the node and the request alone */
};

int gs_policy_count(void);
const struct gs_policy *gs_policy_get(int i);
/* Policy by name, or NULL. */
const struct gs_policy *gs_policy_find(const char *name);

#endif
