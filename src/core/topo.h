/* topo.h - topology-aware gang placement: domains of node labels, level by level.
 *
 * A topology is an ordered list of node label keys, broadest first, as a Kueue Topology
 * object's spec.levels[].nodeLabel lists them (cloud.google.com/gce-topology-block,
 * cloud.google.com/gce-topology-subblock, kubernetes.io/hostname; or nvidia.com/gpu.clique).
 * A domain of level l is the set of nodes that share the values of levels 0..l, as Kueue
 * identifies a domain by the values of its level and every level above (a subblock "s1" of
 * block "b1" and one of block "b2" are two domains). A node whose label of a level is missing
 * or empty belongs to no domain of that level nor of the levels below (as Kueue leaves nodes
 * without the topology's labels out of its snapshot).
 *
 * A gang asks for a level, required or preferred (Kueue's podset-required-topology and
 * podset-preferred-topology annotations). gs_topo_gang_place places it whole, in one call,
 * all or nothing as gs_gang_place does:
 *   required   inside one domain of the level, else nothing (the result names the level
 *              and the largest domain's room);
 *   preferred  inside one domain of the level, else of the level above, walking up, else
 *              over as few top-level domains as possible (most room first, the last by best
 *              fit, as Kueue spreads it), else anywhere (topology-blind, gs_gang_place).
 * How many of the gang's pods a node can take is counted from its free devices, CPU, memory
 * and pod slots (the largest member's request, so a heterogeneous gang is counted for its
 * largest pod); a domain's room is the sum over its nodes. Two algorithms choose a domain:
 *   GS_TOPO_GPUSCHED  the tightest domain that holds the gang: the finest level, at or below
 *                     the one asked, where a domain holds it; among those the least room
 *                     (best fit), then the fullest parent; inside the chosen domain, children
 *                     by most room first and the last by best fit (as few domains, then as
 *                     few nodes, as possible);
 *   GS_TOPO_KUEUE     Kueue's BestFit as its KEP 2724 and tas_flavor_snapshot.go describe it:
 *                     at the level asked, domains sorted by room (most first), the first
 *                     with the least room that holds the gang; then level by level down the
 *                     same greedy descent.
 * The pods are then placed by the engine (gs_engine_place_among), each among the nodes the
 * descent gave it, so devices are chosen as for any pod. When a planned placement fails (the count
 * was optimistic), the next candidate domain is tried, at most GS_TOPO_TRIES.
 *
 * Small work: gs_topo_small_domain steers a pod that asks no topology to the domains, level
 * by level, whose fragmentation for the gang shapes (gs_topo_shape) grows least when it
 * takes a GPU there: a domain that can still hold a shape's gang (for a waiting gang's shape:
 * that its GPUs in all hold it), broken by the pod so that it no longer can, counts all its
 * free GPUs as fragments for that shape (FGD one level up, core/frag.c); ties to the domain
 * with the least free GPUs, so small pods go to domains already in use.
 *
 * gs_topo_build computes the domains once per cycle (label values interned per level); the
 * struct owns its arrays (gs_topo_init / gs_topo_release) and reads the cluster's labels only
 * while building; the placement calls take the cluster it was built for (the same nodes, in
 * the same order; another cluster gets no topology placement). Rooms and free GPUs are kept
 * per node version, as the engine's memo keeps scores, so a cycle pays for the nodes that
 * changed. Not thread-safe per instance (placement writes its scratch). */
#ifndef GS_TOPO_H
#define GS_TOPO_H

#include "engine.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_TOPO_LEVELS_MAX 8
#define GS_TOPO_SHAPES_MAX 16
#define GS_TOPO_TRIES      4
#define GS_TOPO_WHY_MAX    200
#define GS_TOPO_ROOM_SLOTS 4

/* The levels: Kueue's spec.levels, broadest first. Plain data. */
struct gs_topo_levels {
    int32_t n;
    char key[GS_TOPO_LEVELS_MAX][GS_LABELS_KEY_MAX + 1];
};

/* Append a level key. Returns 0, or GS_EINVAL (empty or too long key, a key given twice, more
 * than GS_TOPO_LEVELS_MAX levels; lv unchanged). */
int gs_topo_levels_add(struct gs_topo_levels *lv, const char *key);
/* The index of key among the levels, or -1. */
int gs_topo_levels_find(const struct gs_topo_levels *lv, const char *key);

enum gs_topo_mode {
    GS_TOPO_ANY = 0,   /* no topology asked (zeroed structs mean this) */
    GS_TOPO_REQUIRED,  /* kueue.x-k8s.io/podset-required-topology */
    GS_TOPO_PREFERRED, /* kueue.x-k8s.io/podset-preferred-topology */
};

/* What a gang asks: a mode and a level (index into the levels). A level out of range (a key
 * the topology lacks: the caller passes -1) is refused for required, anywhere for preferred. */
struct gs_topo_ask {
    int8_t mode;
    int8_t level;
};

enum gs_topo_algo { GS_TOPO_GPUSCHED = 0, GS_TOPO_KUEUE };

/* A gang shape small work should not break up: gpus GPUs inside one domain of level, weighed
 * by freq (e.g. the gangs' share of arrivals). A shape of a gang that waits now (waiting:
 * the daemon's pending gangs) needs every domain whose GPUs in all hold it, not only those
 * with the room free now: the one it waits for frees up as the pods in it end, and small work
 * put there delays it further. */
struct gs_topo_shape {
    int32_t gpus;
    int8_t level;
    bool waiting;
    double freq;
};

struct gs_topo_domain {
    int32_t level;
    int32_t parent;                 /* domain of level - 1, -1 at level 0 */
    int32_t first, nnodes;          /* its nodes: t->members[first .. first + nnodes) */
    int32_t child_first, nchildren; /* its children: t->children[child_first ..) */
};

struct gs_topo {
    struct gs_topo_levels lv;
    enum gs_topo_algo algo;
    int32_t nnodes;                              /* of the cluster it was built for */
    int32_t ndomains;                            /* all levels */
    int32_t level_first[GS_TOPO_LEVELS_MAX + 1]; /* domains of level l: [level_first[l],
                                                    level_first[l + 1]) */
    int32_t *node_dom;                           /* nnodes x lv.n: domain of node at level, -1 */
    struct gs_topo_domain *doms;
    int32_t *members;  /* nodes grouped by domain, per level */
    int32_t *children; /* domains grouped by parent */
    /* small work (gs_topo_small_domain): the gang shapes to keep room for; n 0: off */
    int32_t nshapes;
    struct gs_topo_shape shapes[GS_TOPO_SHAPES_MAX];
    /* rooms per request shape, kept up to date from the nodes' versions (a node's room is
     * counted again only when its version changed, as the engine's memo does) */
    struct gs_topo_rooms {
        uint64_t sig; /* the request's (0: unused) */
        uint64_t used;
        int32_t *room; /* per node, -1: not counted */
        uint32_t *ver; /* per node: the version room was counted at */
        int32_t *droom;
    } rooms[GS_TOPO_ROOM_SLOTS];
    uint64_t rooms_clock;
    int32_t *room, *droom; /* the last counted shape's (rooms[i]'s arrays) */
    int32_t *quota;        /* per node: the descent's plan */
    int32_t *list;         /* per node: scratch */
    /* free whole GPUs per node (-1: not counted) at ver, and per domain; GPUs per domain */
    int32_t *nfree, *dfree, *dgpus;
    uint32_t *nfree_ver;
};

void gs_topo_init(struct gs_topo *t);
void gs_topo_release(struct gs_topo *t);
/* (Re)build the domains of the cluster's nodes for the levels (copied). Returns 0, or
 * GS_ENOMEM (t then empty: no levels). Call again when nodes or their labels change. */
int gs_topo_build(struct gs_topo *t, const struct gs_topo_levels *lv, enum gs_topo_algo algo,
                  const struct gs_cluster *c);
/* The domain of node at level (-1: none), and a domain's label value (its level's key on its
 * first node; "" for none). */
int32_t gs_topo_node_domain(const struct gs_topo *t, int node, int level);
const char *gs_topo_domain_value(const struct gs_topo *t, const struct gs_cluster *c, int32_t d);

/* Where a gang went, or why not. */
struct gs_topo_result {
    int32_t level;  /* level of the domain holding every member, -1: none (anywhere) */
    int32_t domain; /* that domain, -1 */
    int32_t nodes;  /* distinct nodes used */
    int32_t room;   /* on failure: the most pods one domain of the level asked could take */
    char why[GS_TOPO_WHY_MAX]; /* on failure: "no domain of level 'L' holds 16 pods: ..." */
};

/* Place the n members of a gang (reqs[i]) as the ask says; ask NULL or GS_TOPO_ANY, or t
 * NULL or without levels: exactly gs_gang_place. On success returns 0 with the cluster holding
 * every member and d[i] their decisions; else GS_ENOFIT with the cluster unchanged, *failed
 * the member that did not fit (0 when no domain holds the gang), why the engine's reasons
 * for it and res->why the topology's. res may be NULL. */
int gs_topo_gang_place(struct gs_topo *t, struct gs_engine *e, struct gs_cluster *c,
                       const struct gs_topo_ask *ask, const struct gs_request *const *reqs, int n,
                       struct gs_decision *d, int *failed, struct gs_reasons *why,
                       struct gs_topo_result *res);

/* Whether the gang's nodes (d[i].alloc.node) all lie in one domain of level. */
bool gs_topo_within(const struct gs_topo *t, const struct gs_decision *d, int n, int level);
/* How many levels, from the broadest, the nodes share a domain of: 0 when they are in no
 * one domain of level 0, t->lv.n when they share a domain of every level. */
int gs_topo_shared_levels(const struct gs_topo *t, const int32_t *nodes, int n);
/* The room, in pods of req, of the largest domain of level (for reasons and reports). */
int32_t gs_topo_max_room(struct gs_topo *t, const struct gs_cluster *c,
                         const struct gs_request *req, int level);

/* Small work: the domain a pod that asks no topology should go to. Level by level from the
 * broadest (the last level left to the engine when its domains are single nodes), the domain
 * under the one chosen above with room for the pod (free whole GPUs for a whole-GPU pod, any
 * GPU for a share or a slice) whose fragmentation for the shapes of that level grows least,
 * then one already in use, then the one with the least free GPUs. Returns the domain, or -1
 * when the filter is off (no shapes, no levels, a CPU-only pod) or no domain has room; the
 * caller places the pod anywhere when the domain's nodes refuse it. */
int32_t gs_topo_small_domain(struct gs_topo *t, const struct gs_cluster *c,
                             const struct gs_request *req);
/* The nodes of domain d (*n of them), NULL for no domain. */
const int32_t *gs_topo_domain_nodes(const struct gs_topo *t, int32_t d, int *n);

#endif
