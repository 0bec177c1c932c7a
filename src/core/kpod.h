/* kpod.h - what one pod asks of its placement, and the predicates on each of its terms.
 *
 * struct gs_kpod: the pod's labels, namespace, node selector and affinity, pod (anti-)affinity
 * terms, spread constraints and host ports. Plain data sized by the object: every array and
 * string lives in the pod's own arena; gs_kpod_init / gs_kpod_release. formats/podspec fills
 * it from a Pod's JSON; tests may build one by hand with the gs_kpod_alloc/gs_kpod_strdup
 * helpers. The predicates below read only their arguments and are thread-safe.
 *
 * Semantics (constraints.h says more): a nil label selector matches nothing and an empty one
 * everything; namespace selectors see only kubernetes.io/metadata.name. */
#ifndef GS_KPOD_H
#define GS_KPOD_H

#include "../base/arena.h"
#include "cluster.h"
#include "labels.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_KHOSTNAME_KEY "kubernetes.io/hostname"
#define GS_KNS_NAME_KEY  "kubernetes.io/metadata.name"

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
/* The namespace half of gs_kaff_term_matches: ns is listed by the term or matches its
 * namespace selector. */
bool gs_kaff_ns_matches(const struct gs_kaff_term *t, const char *ns);

#endif
