/* engine_internal.h - the inside of struct gs_engine (engine.h), shared by the two modules
 * that read it: engine.c, which owns it (the node search and its memo), and policy.c, whose
 * score functions use its random generator, fragmentation memo and typical shapes. Nothing
 * else includes this header. */
#ifndef GS_ENGINE_INTERNAL_H
#define GS_ENGINE_INTERNAL_H

#include "../base/rng.h"
#include "engine.h"
#include "frag.h"

#include <stdint.h>

struct gs__shape_memo; /* engine.c's */

/* A node as the gpusched policy last summed it (policy.c). */
struct gs__scarce_node {
    uint32_t version; /* 0: not summed */
    int16_t model;
    int32_t gpus;
    int64_t idle; /* milli-GPU */
};

/* The gpusched policy's view of how pressed each GPU model is (policy.c): the share of the
 * typical GPU demand naming each model, for the GPUs per model it was computed on; each
 * model's GPUs and idle milli-GPU now, summed over node[0..nnodes) (max_nodes of them,
 * allocated on first use, freed with the engine); each model's pressure in steps. */
struct gs__scarcity {
    bool checked, off; /* off: no typical shape names a model, no pressure anywhere */
    double gpus[32];
    double share[32];
    int32_t level[32];
    struct gs__scarce_node *node;
    int32_t nnodes;
    int32_t gpus_now[32];
    double idle[32];
};

struct gs_engine {
    const struct gs_policy *policy;
    struct gs__shape_memo *memo_shapes; /* one per recent request shape (engine.c) */
    bool draws; /* the policy's scores are draws (random): the memo keeps verdicts alone */
    uint64_t tick;
    const struct gs_typical *typ;
    struct gs_frag_memo *memo;
    struct gs_rng rng;
    int max_nodes;
    int64_t *scores;
    int32_t *rank; /* tie-break: the lowest rank wins among equal scores */
    int32_t *feasible;
    struct gs_alloc *choices;
    struct gs_kscore *kscores;  /* gs_engine_place_k's scratch, allocated on first use */
    struct gs__scarcity scarce; /* the gpusched policy's (policy.c) */
};

/* policy.c: whether p is the random policy (its score is a draw: never memoised), and the
 * fragmentation mode its scores use (an enum gs_frag_mode), -1 for none. */
bool gs__policy_random(const struct gs_policy *p);
int gs__policy_frag_mode(const struct gs_policy *p);

#endif
