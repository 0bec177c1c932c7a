/* kstate_internal.h - the inside of struct gs_kstate (kstate.h), shared by the two modules
 * that read it: kstate.c, which owns and updates it, and kprep.c, which reads it to prepare,
 * filter and score a pod (and interns topology keys through gs__kstate_key). Nothing else
 * includes this header.
 *
 * Invariants: a class (gs__kclass) is live while it counts a placed pod; its per-node counts
 * are in a gs__knodes map. A placed term (gs__kterm) is live while a placed pod holds it, with
 * its counts per value of its topology key and nz, how many values count a pod. Free slots
 * are reused from the free lists; ids are stable while live. */
#ifndef GS_KSTATE_INTERNAL_H
#define GS_KSTATE_INTERNAL_H

#include "../base/arena.h"
#include "../base/buf.h"
#include "../base/hash.h"
#include "cluster.h"
#include "kports.h"
#include "kstate.h"

#include <stdbool.h>
#include <stdint.h>

/* node id -> count; entries that fall to 0 stay until the next rehash */
struct gs__knodes {
    int32_t *key, *cnt;
    uint32_t cap, used;
};

/* The next node of m holding pods, from slot *i on (start at 0): its index and pod count;
 * false past the last. */
static inline bool gs__knodes_next(const struct gs__knodes *m, uint32_t *i, int32_t *node,
                                   int32_t *cnt)
{
    for (; *i < m->cap; (*i)++) {
        if (m->key[*i] >= 0 && m->cnt[*i] > 0) {
            *node = m->key[*i];
            *cnt = m->cnt[*i];
            (*i)++;
            return true;
        }
    }
    return false;
}

/* a topology key in use, interned: each node's value as a dense id */
struct gs__ktopo {
    char *name;
    int32_t *val; /* per node: value id, -1 when the node lacks the key */
    int32_t nvals;
    bool hostname;
};

/* placed pods of one (namespace, labels, terminating) */
struct gs__kclass {
    bool live;
    bool terminating;
    char *sig; /* the map key */
    uint32_t siglen;
    int32_t ns;   /* namespace id */
    int32_t npos; /* position in the namespace's list */
    const char *nsname;
    struct gs_labels labels;
    int32_t npods;
    struct gs__knodes nodes;
};

/* a namespace and its live classes */
struct gs__kns {
    char *name;
    int32_t *cls;
    int ncls, cap;
};

/* the placed terms, by kind; preferred anti-affinity carries its weight negated */
enum gs__kterm_kind {
    GS__KX_REQ_ANTI = 0,
    GS__KX_REQ_AFF,
    GS__KX_PREF_AFF,
    GS__KX_PREF_ANTI,
    GS__KX_KINDS
};

/* a distinct placed (anti-)affinity term of one kind and weight */
struct gs__kterm {
    bool live;
    uint8_t kind;
    int32_t weight; /* signed: the score multiplier folded in */
    int32_t key;
    int32_t pos; /* position in the kind's list */
    char *sig;
    uint32_t siglen;
    struct gs_kaff_term t; /* deep copy in arena */
    struct gs_arena arena;
    int32_t *cnt; /* per value id of key */
    int32_t nz;   /* values with cnt > 0 */
    int32_t refs;
};

/* a placed pod: its class and the ids of its terms */
struct gs__kplaced {
    const struct gs_kpod *pod;
    int32_t node; /* -1: free slot */
    int32_t cls;
    int32_t nx;
    int32_t *x;
};

struct gs_kstate {
    int32_t nnodes;
    uint32_t stamp; /* tells this state from any other (preps cache per state) */
    struct gs__ktopo *keys;
    int nkeys, capkeys;
    struct gs_strmap keymap;
    struct gs__kclass *cls;
    int ncls, capcls;
    int32_t *freecls;
    int nfreecls, capfreecls;
    struct gs_strmap clsmap;
    struct gs__kns *ns;
    int nns, capns;
    struct gs_strmap nsmap;
    struct gs__kterm *x;
    int nx, capx;
    int32_t *freex;
    int nfreex, capfreex;
    struct gs_strmap xmap;
    int32_t *xlist[GS__KX_KINDS];
    int nxlist[GS__KX_KINDS], capxlist[GS__KX_KINDS];
    struct gs__kports *ports; /* per node */
    struct gs__kplaced *pods;
    int npodslots, cappods, npods;
    int32_t *freepods;
    int nfreepods, capfreepods;
    struct gs_buf sig;
};

/* The value id of topology key on node, -1 when the node lacks the key. */
static inline int32_t gs__kstate_val(const struct gs_kstate *s, int key, int node)
{
    return s->keys[key].val[node];
}

/* The id of a topology key, interning it (every node's value) on first use. Returns the id or
 * GS_ENOMEM. */
int gs__kstate_key(struct gs_kstate *s, const struct gs_cluster *c, const char *name);

/* Signatures: length-prefixed fields appended to b, so no two different inputs share one. */
void gs__ksig_str(struct gs_buf *b, const char *str);
void gs__ksig_u32(struct gs_buf *b, uint32_t v);
void gs__ksig_sel(struct gs_buf *b, const struct gs_ksel *s);

#endif
