/* constraints.h - Kubernetes placement semantics, as kube-scheduler v1.37 applies them: the
 * filters NodeName, NodeAffinity (spec.nodeSelector and required node affinity), NodePorts,
 * PodTopologySpread (DoNotSchedule) and InterPodAffinity (required affinity and
 * anti-affinity, both the incoming pod's and the placed pods' anti-affinity against it), and
 * the scores NodeAffinity (preferred), InterPodAffinity (preferred terms of both sides and the
 * placed pods' required affinity at weight 1) and PodTopologySpread (ScheduleAnyway), each
 * normalised to 0..100 as upstream normalises it. Taints, tolerations and resource fit live
 * elsewhere (the engine); NodeUnschedulable too.
 *
 * Three nouns:
 * - struct gs_kpod: what one pod asks (labels, namespace, node selector and affinity, pod
 *   (anti-)affinity terms, spread constraints, host ports). Plain data sized by the object:
 *   every array and string lives in the pod's own arena; gs_kpod_init / gs_kpod_release.
 *   formats/podspec fills it from a Pod's JSON; tests may build one by hand with the
 *   gs_kpod_alloc/gs_kpod_strdup helpers.
 * - struct gs_kstate: what the placed pods add up to on a cluster's nodes: pods grouped by
 *   (namespace, labels, terminating) with per-node counts, the placed pods' affinity terms
 *   deduplicated with counts per topology value, host ports per node, and every topology key
 *   in use interned to dense value ids per node. Updated incrementally (gs_kstate_add_pod /
 *   gs_kstate_remove_pod). It borrows each added pod: the gs_kpod must stay alive and
 *   unchanged until it is removed or the state released. Node labels are read when a key is
 *   first used: after a node's labels change or nodes are added, rebuild the state
 *   (gs_kstate_release + init + add every pod again).
 * - struct gs_kprep: the per-pod precomputation (upstream's PreFilter/PreScore state): counts
 *   per topology value for the incoming pod's terms and spread constraints, the placed terms
 *   that match it. Computed once per pod (gs_kprep_compute), after which gs_kprep_filter is
 *   O(terms + constraints) per node with no allocation, and gs_kprep_score scores the feasible
 *   nodes in one pass. A prep is valid until the state changes; reuse one prep for every
 *   pod (its buffers are kept).
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

#include "../base/arena.h"
#include "cluster.h"
#include "labels.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_KHOSTNAME_KEY "kubernetes.io/hostname"
#define GS_KNS_NAME_KEY  "kubernetes.io/metadata.name"
#define GS_KMAX_SCORE    100
/* kube-scheduler's default plugin weights for the three scores */
#define GS_KWEIGHT_NODE_AFFINITY 2
#define GS_KWEIGHT_INTER_POD     2
#define GS_KWEIGHT_SPREAD        2
#define GS_KHARD_AFFINITY_WEIGHT 1 /* InterPodAffinityArgs.hardPodAffinityWeight default */

enum gs_kop {
    GS_KOP_IN = 0,
    GS_KOP_NOTIN,
    GS_KOP_EXISTS,
    GS_KOP_DOESNOTEXIST,
    GS_KOP_GT, /* node selectors only: the label parses as an integer greater than num */
    GS_KOP_LT
};

/* One requirement: key op values. Values sorted and unique for In/NotIn. */
struct gs_kreq {
    uint8_t op; /* enum gs_kop */
    const char *key;
    uint32_t nvals;
    const char **vals;
    int64_t num; /* Gt / Lt */
};

/* A label selector: the AND of its requirements (matchLabels become In with one value).
 * nothing: a nil selector (matches no set); otherwise zero requirements match every set. */
struct gs_ksel {
    bool nothing;
    uint32_t nreqs;
    struct gs_kreq *reqs;
};

/* A node selector term: AND of label expressions and metadata.name field expressions
 * (In/NotIn). A term with neither matches no node. */
struct gs_knode_term {
    uint32_t nexprs, nfields;
    struct gs_kreq *exprs, *fields;
};

struct gs_knode_pref {
    int32_t weight; /* 1..100 */
    struct gs_knode_term term;
};

/* A pod (anti-)affinity term, namespaces resolved: the pod's own namespace when neither
 * namespaces nor namespaceSelector is given. A pod matches when its namespace is listed or
 * matches ns_sel (only kubernetes.io/metadata.name requirements; ns_sel.nothing when absent,
 * no requirements: every namespace), and its labels match sel. */
struct gs_kaff_term {
    struct gs_ksel sel;
    uint32_t nns;
    const char **ns; /* sorted, unique */
    struct gs_ksel ns_sel;
    const char *topology_key;
    int32_t weight; /* preferred terms: 1..100; required: 0 */
};

struct gs_kspread {
    int32_t max_skew;
    const char *topology_key;
    bool do_not_schedule; /* whenUnsatisfiable DoNotSchedule, else ScheduleAnyway */
    struct gs_ksel sel;   /* matchLabelKeys already merged */
    int32_t min_domains;  /* 0: unset */
    bool affinity_honor;  /* nodeAffinityPolicy (default Honor) */
    bool taints_honor;    /* nodeTaintsPolicy (default Ignore) */
};

enum gs_kproto { GS_KPROTO_TCP = 0, GS_KPROTO_UDP, GS_KPROTO_SCTP };
#define GS_KIP_MAX 46 /* an IPv6 address in text, with its NUL */

struct gs_kport {
    int32_t port;        /* hostPort, 1..65535 */
    uint8_t proto;       /* enum gs_kproto */
    char ip[GS_KIP_MAX]; /* hostIP; "0.0.0.0" when not given (every address) */
};

struct gs_kpod {
    const char *ns, *name;
    const char *node_name; /* spec.nodeName, NULL when empty */
    bool terminating;      /* metadata.deletionTimestamp set */
    struct gs_labels labels;
    uint32_t nnode_selector;
    struct gs_label_ref *node_selector; /* spec.nodeSelector */
    bool has_required;                  /* required node affinity given */
    uint32_t nrequired;                 /* ORed terms */
    struct gs_knode_term *required;
    uint32_t npreferred;
    struct gs_knode_pref *preferred;
    uint32_t naff, nanti, npaff, npanti; /* required / preferred pod affinity, anti-affinity */
    struct gs_kaff_term *aff, *anti, *paff, *panti;
    uint32_t nspread;
    struct gs_kspread *spread;
    uint32_t nports;
    struct gs_kport *ports;
    struct gs_arena arena; /* owner of every pointer above except labels */
};

void gs_kpod_init(struct gs_kpod *p);
void gs_kpod_release(struct gs_kpod *p);
/* Zeroed memory from the pod's arena, freed by gs_kpod_release; NULL on allocation failure
 * (or n == 0 gives a valid pointer to nothing). */
void *gs_kpod_alloc(struct gs_kpod *p, size_t n);
char *gs_kpod_strdup(struct gs_kpod *p, const char *s);
/* strconv.ParseInt(s, 10, 64), as Gt / Lt read a requirement's value and a label's:
 * optional sign, decimal digits, no spaces; false for NULL, empty or out of range. */
bool gs_kreq_parse_num(const char *s, int64_t *out);
/* A requirement's operator on a label's value v (NULL: the label is absent): in says whether v
 * is among the requirement's values (In, NotIn), num is Gt's or Lt's bound. */
bool gs_kop_matches(enum gs_kop op, bool in, int64_t num, const char *v);

/* Label selector match against a label set. */
bool gs_ksel_matches(const struct gs_ksel *s, const struct gs_labels *l);
/* Node selector term match on a node (empty term: false). */
bool gs_knode_term_matches(const struct gs_knode_term *t, const struct gs_node *n);
/* spec.nodeSelector and required node affinity both hold (upstream GetRequiredNodeAffinity). */
bool gs_kpod_node_matches(const struct gs_kpod *p, const struct gs_node *n);
/* An (anti-)affinity term matches a pod (namespace and labels). */
bool gs_kaff_term_matches(const struct gs_kaff_term *t, const struct gs_kpod *target);

/* Why a filter refused a node; the text is kube-scheduler's reason. */
enum gs_kverdict {
    GS_KFIT = 0,
    GS_KNO_NODE_NAME,     /* "node(s) didn't match the requested node name" */
    GS_KNO_NODE_AFFINITY, /* "node(s) didn't match Pod's node affinity/selector" */
    GS_KNO_PORTS,         /* "node(s) didn't have free ports for the requested pod ports" */
    GS_KNO_SPREAD_LABEL,  /* "...topology spread constraints (missing required label)" */
    GS_KNO_SPREAD,        /* "node(s) didn't match pod topology spread constraints" */
    GS_KNO_AFFINITY,      /* "node(s) didn't match pod affinity rules" */
    GS_KNO_ANTI_AFFINITY, /* "node(s) didn't match pod anti-affinity rules" */
    GS_KNO_EXISTING_ANTI  /* "node(s) didn't satisfy existing pods anti-affinity rules" */
};
const char *gs_kverdict_reason(enum gs_kverdict v);
/* True when retrying later cannot help while the node stays as it is (upstream's
 * UnschedulableAndUnresolvable: node name, node affinity, missing spread label, affinity):
 * preemption on that node is pointless. */
bool gs_kverdict_unresolvable(enum gs_kverdict v);

struct gs_kstate;
struct gs_kprep;

/* A state for the cluster's nodes (node ids 0..c->nnodes-1), no pods. Returns 0 or
 * GS_ENOMEM. */
int gs_kstate_new(const struct gs_cluster *c, struct gs_kstate **out);
void gs_kstate_free(struct gs_kstate *s);
/* Count a placed pod on node (borrowed, see above). Returns a handle (>= 0) for
 * gs_kstate_remove_pod, GS_EINVAL (bad node id) or GS_ENOMEM (state unchanged). */
int gs_kstate_add_pod(struct gs_kstate *s, const struct gs_cluster *c, const struct gs_kpod *p,
                      int node);
/* Forget a placed pod by handle. Returns 0 or GS_ENOTFOUND. */
int gs_kstate_remove_pod(struct gs_kstate *s, int handle);
/* Placed pods counted. */
int gs_kstate_npods(const struct gs_kstate *s);

/* Whether the pod tolerates a node's NoSchedule/NoExecute taints: only asked for spread
 * constraints with nodeTaintsPolicy Honor. NULL: every node is tolerated. */
typedef bool (*gs_ktolerates_fn)(void *ctx, int node);

int gs_kprep_new(struct gs_kprep **out);
void gs_kprep_free(struct gs_kprep *p);
/* Precompute for pod p (borrowed until the next compute) against the state; a topology key
 * the state has not seen is interned into it (so the state is written: not concurrently
 * with another compute or an update). Returns 0 or
 * GS_ENOMEM (the prep then refuses every node). O(nodes) for pods with DoNotSchedule spread
 * constraints, O(placed pods matching its terms) otherwise, O(distinct placed terms) for the
 * placed pods' anti-affinity. */
int gs_kprep_compute(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c,
                     const struct gs_kpod *pod, gs_ktolerates_fn tol, void *tol_ctx);
/* True when the pod asks nothing of this module that could refuse a node (no node name,
 * selector, required affinity, host ports, DoNotSchedule spread, pod (anti-)affinity, and no
 * placed pod's anti-affinity matches it): the engine may skip gs_kprep_filter. */
bool gs_kprep_trivial(const struct gs_kprep *p);
/* Filter one node: GS_KFIT or why not, in upstream plugin order (NodeName, NodeAffinity,
 * NodePorts, PodTopologySpread, InterPodAffinity). Thread-safe for a shared state and prep
 * (reads only). */
enum gs_kverdict gs_kprep_filter(const struct gs_kprep *p, const struct gs_kstate *s,
                                 const struct gs_cluster *c, int node);
/* Same, with the reason's text written to why (may be NULL). Returns true when it fits. */
bool gs_kstate_filter(const struct gs_kprep *p, const struct gs_kstate *s,
                      const struct gs_cluster *c, int node, char *why, size_t n);

/* Normalised scores of one feasible node, each 0..100. */
struct gs_kscore {
    int64_t node_affinity, inter_pod, spread;
};
/* Weighted sum with kube-scheduler's default weights. */
int64_t gs_kscore_total(const struct gs_kscore *s);
/* Score the feasible nodes (the ones that passed every filter, as upstream scores only
 * those) for the prepared pod: out[i] for nodes[i]. Normalisation is over these nodes.
 * Same tolerations callback as for gs_kprep_compute (spread, nodeTaintsPolicy Honor).
 * May intern topology keys into the state, as compute does. Returns 0 or GS_ENOMEM. */
int gs_kprep_score(struct gs_kprep *p, struct gs_kstate *s, const struct gs_cluster *c,
                   const int32_t *nodes, int32_t n, struct gs_kscore *out, gs_ktolerates_fn tol,
                   void *tol_ctx);

#endif
