/* podspec.c - Pod JSON to struct gs_kpod (core/constraints): the fields kube-scheduler's
 * NodeName, NodeAffinity, NodePorts, PodTopologySpread and InterPodAffinity plugins read.
 * formats/kubeobj reads the same Pod's resources and tolerations; this reader owns the
 * placement constraints, validated as the API server validates them and bounded. */
#include "podspec.h"

#include "../base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_MAX    63
#define NAME_MAX_ 253
#define PATH_MAX_ 320

struct rd {
    struct gs_kpod *p;
    struct gs_error *err;
    char who[NS_MAX + NAME_MAX_ + 8];
};

static int fail(struct rd *r, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct rd *r, const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return gs_error_set(r->err, GS_EINVAL, "%s: %s: %s", r->who, path, msg);
}

static int oom(struct rd *r)
{
    return gs_error_set(r->err, GS_ENOMEM, "%s: out of memory", r->who);
}

/* An optional field's value: NULL when absent or null. */
static const json_t *field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

static int check_str(struct rd *r, const json_t *v, const char *path, size_t max, bool empty_ok)
{
    if (!json_is_string(v))
        return fail(r, path, "expected a string");
    const char *s = json_string_value(v);
    size_t l = json_string_length(v);
    if (strlen(s) != l)
        return fail(r, path, "contains a NUL byte");
    if (l > max)
        return fail(r, path, "longer than %zu bytes", max);
    if (!empty_ok && l == 0)
        return fail(r, path, "must not be empty");
    return 0;
}

/* A string field: NULL when absent or null; *bad when present with another type, an
 * embedded NUL, or longer than max. */
static int get_str(struct rd *r, const json_t *o, const char *key, const char *path, size_t max,
                   const char **out)
{
    *out = NULL;
    const json_t *v = field(o, key);
    if (!v)
        return 0;
    int rc = check_str(r, v, path, max, true);
    if (rc)
        return rc;
    *out = json_string_value(v);
    return 0;
}

/* An optional array or object field: NULL when absent or null. */
static int get_kind(struct rd *r, const json_t *o, const char *key, const char *path, bool array,
                    const json_t **out)
{
    *out = NULL;
    const json_t *v = field(o, key);
    if (!v)
        return 0;
    if (array ? !json_is_array(v) : !json_is_object(v))
        return fail(r, path, array ? "expected a list" : "expected an object");
    *out = v;
    return 0;
}

static int get_int(struct rd *r, const json_t *o, const char *key, const char *path, int64_t lo,
                   int64_t hi, bool *present, int64_t *out)
{
    *present = false;
    const json_t *v = field(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v))
        return fail(r, path, "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return fail(r, path, "%lld is out of range %lld..%lld", (long long)x, (long long)lo,
                    (long long)hi);
    *present = true;
    *out = x;
    return 0;
}

static char *dup(struct rd *r, const char *s)
{
    return gs_kpod_strdup(r->p, s);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts v[0..n) and drops repeats; returns how many remain. */
static uint32_t sort_unique(const char **v, size_t n)
{
    qsort(v, n, sizeof(char *), cmp_str);
    uint32_t u = 0;
    for (size_t j = 0; j < n; j++)
        if (u == 0 || strcmp(v[u - 1], v[j]) != 0)
            v[u++] = v[j];
    return u;
}

/* The n strings of list arr (at path) copied into the pod, then sorted and unique: *out and
 * *nout. Each at most max bytes, and not empty unless empty_ok; where num is given each must
 * also be an integer, and *num is the last. */
static int read_str_set(struct rd *r, const json_t *arr, size_t n, const char *path, size_t max,
                        bool empty_ok, int64_t *num, const char ***out, uint32_t *nout)
{
    const char **v = gs_kpod_alloc(r->p, n * sizeof(char *));
    if (!v)
        return oom(r);
    size_t i;
    const json_t *e;
    json_array_foreach(arr, i, e)
    {
        char p[PATH_MAX_];
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        int rc = check_str(r, e, p, max, empty_ok);
        if (rc)
            return rc;
        if (num && !gs_kreq_parse_num(json_string_value(e), num))
            return fail(r, p, "'%s' is not an integer", json_string_value(e));
        if (!(v[i] = dup(r, json_string_value(e))))
            return oom(r);
    }
    *out = v;
    *nout = sort_unique(v, n);
    return 0;
}

/* An optional list field of at most max entries (what names them in the message): *out NULL
 * and *n 0 when absent or null. */
static int get_list(struct rd *r, const json_t *o, const char *key, const char *path, size_t max,
                    const char *what, const json_t **out, size_t *n)
{
    int rc = get_kind(r, o, key, path, true, out);
    if (rc)
        return rc;
    *n = *out ? json_array_size(*out) : 0;
    if (*n > max)
        return fail(r, path, "more than %zu %s", max, what);
    return 0;
}

/* A non-empty topologyKey of the object at path, copied into the pod. */
static int read_topology_key(struct rd *r, const json_t *o, const char *path, const char **out)
{
    char p[PATH_MAX_];
    const char *tk;
    snprintf(p, sizeof(p), "%s.topologyKey", path);
    int rc = get_str(r, o, "topologyKey", p, GS_LABELS_KEY_MAX, &tk);
    if (rc)
        return rc;
    if (!tk || !*tk)
        return fail(r, p, "can not be empty");
    if (!(*out = dup(r, tk)))
        return oom(r);
    return 0;
}

/* One weighted preference {weight: 1..100, <field>: object}, both required; *term is the
 * object and tpath (PATH_MAX_ bytes) its path. */
static int read_weighted(struct rd *r, const json_t *e, const char *path, const char *field,
                         int32_t *weight, const json_t **term, char *tpath)
{
    if (!json_is_object(e))
        return fail(r, path, "expected an object");
    bool has;
    int64_t w = 0;
    int rc;
    snprintf(tpath, PATH_MAX_, "%s.weight", path);
    if ((rc = get_int(r, e, "weight", tpath, 1, 100, &has, &w)))
        return rc;
    if (!has)
        return fail(r, tpath, "required");
    *weight = (int32_t)w;
    snprintf(tpath, PATH_MAX_, "%s.%s", path, field);
    if ((rc = get_kind(r, e, field, tpath, false, term)))
        return rc;
    if (!*term)
        return fail(r, tpath, "required");
    return 0;
}

static const char *const op_names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};

enum req_kind {
    RK_LABEL_SEL, /* metav1.LabelSelector: In, NotIn, Exists, DoesNotExist */
    RK_NODE_EXPR, /* node selector matchExpressions: also Gt, Lt */
    RK_NODE_FIELD /* matchFields: metadata.name, In / NotIn, one value */
};

/* One requirement object {key, operator, values}. */
static int read_req(struct rd *r, const json_t *o, const char *path, enum req_kind kind,
                    struct gs_kreq *q)
{
    char p2[PATH_MAX_];
    if (!json_is_object(o))
        return fail(r, path, "expected an object");
    const char *key, *op;
    int rc;
    snprintf(p2, sizeof(p2), "%s.key", path);
    if ((rc = get_str(r, o, "key", p2, GS_LABELS_KEY_MAX, &key)))
        return rc;
    if (!key || !*key)
        return fail(r, p2, "required");
    if (kind == RK_NODE_FIELD && strcmp(key, "metadata.name") != 0)
        return fail(r, p2, "'%s' is not a supported field selector (only metadata.name)", key);
    snprintf(p2, sizeof(p2), "%s.operator", path);
    if ((rc = get_str(r, o, "operator", p2, 32, &op)))
        return rc;
    if (!op)
        return fail(r, p2, "required");
    int opi = -1;
    int nops = kind == RK_LABEL_SEL ? 4 : kind == RK_NODE_FIELD ? 2 : 6;
    for (int i = 0; i < nops; i++)
        if (strcmp(op, op_names[i]) == 0)
            opi = i;
    if (opi < 0)
        return fail(r, p2, "'%s' is not a valid operator here", op);
    const json_t *vals;
    size_t n;
    snprintf(p2, sizeof(p2), "%s.values", path);
    if ((rc = get_list(r, o, "values", p2, GS_PODSPEC_MAX_VALUES, "values", &vals, &n)))
        return rc;
    switch (opi) {
    case GS_KOP_IN:
    case GS_KOP_NOTIN:
        if (n == 0)
            return fail(r, p2, "must be specified when operator is %s", op);
        if (kind == RK_NODE_FIELD && n != 1)
            return fail(r, p2, "must have one element for a field selector");
        break;
    case GS_KOP_EXISTS:
    case GS_KOP_DOESNOTEXIST:
        if (n != 0)
            return fail(r, p2, "may not be specified when operator is %s", op);
        break;
    default:
        if (n != 1)
            return fail(r, p2, "must be specified as a single element when operator is %s", op);
    }
    q->op = (uint8_t)opi;
    if (!(q->key = dup(r, key)))
        return oom(r);
    bool num = opi == GS_KOP_GT || opi == GS_KOP_LT;
    return read_str_set(r, vals, n, p2, GS_LABELS_VAL_MAX, true, num ? &q->num : NULL, &q->vals,
                        &q->nvals);
}

/* A requirement on key with the one value val. */
static int set_req1(struct rd *r, struct gs_kreq *q, int op, const char *key, const char *val)
{
    q->op = (uint8_t)op;
    q->key = dup(r, key);
    q->vals = gs_kpod_alloc(r->p, sizeof(char *));
    if (!q->key || !q->vals || !(q->vals[0] = dup(r, val)))
        return oom(r);
    q->nvals = 1;
    return 0;
}

/* A list of requirement objects appended to *reqs (capacity already allocated). */
static int read_req_list(struct rd *r, const json_t *arr, const char *path, enum req_kind kind,
                         struct gs_kreq *reqs, uint32_t *n)
{
    size_t i;
    const json_t *e;
    json_array_foreach(arr, i, e)
    {
        char p2[PATH_MAX_];
        snprintf(p2, sizeof(p2), "%s[%zu]", path, i);
        int rc = read_req(r, e, p2, kind, &reqs[(*n)++]);
        if (rc)
            return rc;
    }
    return 0;
}

/* metav1.LabelSelector; absent or null: nothing. extra: room for merged label keys. */
static int read_sel(struct rd *r, const json_t *o, const char *key, const char *path,
                    uint32_t extra, struct gs_ksel *s)
{
    memset(s, 0, sizeof(*s));
    const json_t *sel;
    int rc = get_kind(r, o, key, path, false, &sel);
    if (rc)
        return rc;
    if (!sel) {
        s->nothing = true;
        return 0;
    }
    const json_t *ml, *me;
    char p2[PATH_MAX_];
    snprintf(p2, sizeof(p2), "%s.matchLabels", path);
    if ((rc = get_kind(r, sel, "matchLabels", p2, false, &ml)))
        return rc;
    char p3[PATH_MAX_];
    snprintf(p3, sizeof(p3), "%s.matchExpressions", path);
    if ((rc = get_kind(r, sel, "matchExpressions", p3, true, &me)))
        return rc;
    size_t nml = ml ? json_object_size(ml) : 0, nme = me ? json_array_size(me) : 0;
    if (nml + nme > GS_PODSPEC_MAX_REQS)
        return fail(r, path, "more than %d requirements", GS_PODSPEC_MAX_REQS);
    s->reqs = gs_kpod_alloc(r->p, (nml + nme + extra) * sizeof(struct gs_kreq));
    if (!s->reqs)
        return oom(r);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)ml, k, v)
    {
        char p4[PATH_MAX_];
        snprintf(p4, sizeof(p4), "%s.matchLabels.%s", path, k);
        if (strlen(k) == 0 || strlen(k) > GS_LABELS_KEY_MAX)
            return fail(r, p2, "a key is empty or too long");
        if ((rc = check_str(r, v, p4, GS_LABELS_VAL_MAX, true)))
            return rc;
        if ((rc = set_req1(r, &s->reqs[s->nreqs++], GS_KOP_IN, k, json_string_value(v))))
            return rc;
    }
    return read_req_list(r, me, p3, RK_LABEL_SEL, s->reqs, &s->nreqs);
}

static bool has_req(const struct gs_ksel *s, int op, const char *key, const char *val)
{
    for (uint32_t i = 0; i < s->nreqs; i++)
        if (s->reqs[i].op == op && strcmp(s->reqs[i].key, key) == 0 && s->reqs[i].nvals == 1 &&
            strcmp(s->reqs[i].vals[0], val) == 0)
            return true;
    return false;
}

/* matchLabelKeys (In) / mismatchLabelKeys (NotIn) with the pod's values, added to the
 * selector as the API server merges them (idempotent: a merged requirement is not added
 * twice); keys the pod lacks are skipped. */
static int merge_keys(struct rd *r, const json_t *o, const char *field, const char *path, int op,
                      struct gs_ksel *s)
{
    const json_t *keys;
    int rc = get_kind(r, o, field, path, true, &keys);
    if (rc || !keys)
        return rc;
    size_t i;
    const json_t *k;
    json_array_foreach(keys, i, k)
    {
        char p2[PATH_MAX_];
        snprintf(p2, sizeof(p2), "%s[%zu]", path, i);
        if ((rc = check_str(r, k, p2, GS_LABELS_KEY_MAX, false)))
            return rc;
        if (s->nothing)
            return fail(r, p2, "labelSelector is required with %s", field);
        const char *val = gs_labels_get(&r->p->labels, json_string_value(k));
        if (!val || has_req(s, op, json_string_value(k), val))
            continue;
        if ((rc = set_req1(r, &s->reqs[s->nreqs++], op, json_string_value(k), val)))
            return rc;
    }
    return 0;
}

static size_t arr_size(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_array(v) ? json_array_size(v) : 0;
}

/* The labelSelector of the object at path with its matchLabelKeys merged in, and its
 * mismatchLabelKeys too where mismatch (pod affinity terms have both, spreading only the
 * first). */
static int read_merged_sel(struct rd *r, const json_t *o, const char *path, bool mismatch,
                           struct gs_ksel *s)
{
    char p[PATH_MAX_];
    int rc;
    size_t extra =
        arr_size(o, "matchLabelKeys") + (mismatch ? arr_size(o, "mismatchLabelKeys") : 0);
    if (extra > GS_PODSPEC_MAX_REQS)
        return fail(r, path, "more than %d label keys", GS_PODSPEC_MAX_REQS);
    snprintf(p, sizeof(p), "%s.labelSelector", path);
    if ((rc = read_sel(r, o, "labelSelector", p, (uint32_t)extra, s)))
        return rc;
    snprintf(p, sizeof(p), "%s.matchLabelKeys", path);
    if ((rc = merge_keys(r, o, "matchLabelKeys", p, GS_KOP_IN, s)))
        return rc;
    if (!mismatch)
        return 0;
    snprintf(p, sizeof(p), "%s.mismatchLabelKeys", path);
    return merge_keys(r, o, "mismatchLabelKeys", p, GS_KOP_NOTIN, s);
}

static int read_node_term(struct rd *r, const json_t *o, const char *path, struct gs_knode_term *t)
{
    if (!json_is_object(o))
        return fail(r, path, "expected an object");
    const json_t *me, *mf;
    char p1[PATH_MAX_], p2[PATH_MAX_];
    snprintf(p1, sizeof(p1), "%s.matchExpressions", path);
    snprintf(p2, sizeof(p2), "%s.matchFields", path);
    int rc;
    if ((rc = get_kind(r, o, "matchExpressions", p1, true, &me)) ||
        (rc = get_kind(r, o, "matchFields", p2, true, &mf)))
        return rc;
    size_t ne = me ? json_array_size(me) : 0, nf = mf ? json_array_size(mf) : 0;
    if (ne > GS_PODSPEC_MAX_REQS || nf > GS_PODSPEC_MAX_REQS)
        return fail(r, path, "more than %d requirements", GS_PODSPEC_MAX_REQS);
    t->exprs = gs_kpod_alloc(r->p, ne * sizeof(struct gs_kreq));
    t->fields = gs_kpod_alloc(r->p, nf * sizeof(struct gs_kreq));
    if (!t->exprs || !t->fields)
        return oom(r);
    if ((rc = read_req_list(r, me, p1, RK_NODE_EXPR, t->exprs, &t->nexprs)))
        return rc;
    return read_req_list(r, mf, p2, RK_NODE_FIELD, t->fields, &t->nfields);
}

#define REQUIRED_TERMS  "requiredDuringSchedulingIgnoredDuringExecution"
#define PREFERRED_TERMS "preferredDuringSchedulingIgnoredDuringExecution"

static int read_node_affinity(struct rd *r, const json_t *na)
{
    const char *base = "spec.affinity.nodeAffinity";
    const json_t *req, *pref;
    char p[PATH_MAX_];
    snprintf(p, sizeof(p), "%s." REQUIRED_TERMS, base);
    int rc = get_kind(r, na, REQUIRED_TERMS, p, false, &req);
    if (rc)
        return rc;
    size_t n, i;
    if (req) {
        const json_t *terms;
        char pt[PATH_MAX_];
        snprintf(pt, sizeof(pt), "%s.nodeSelectorTerms", p);
        if ((rc = get_list(r, req, "nodeSelectorTerms", pt, GS_PODSPEC_MAX_TERMS, "terms", &terms,
                           &n)))
            return rc;
        if (n == 0)
            return fail(r, pt, "must have at least one node selector term");
        r->p->has_required = true;
        r->p->required = gs_kpod_alloc(r->p, n * sizeof(struct gs_knode_term));
        if (!r->p->required)
            return oom(r);
        const json_t *t;
        json_array_foreach(terms, i, t)
        {
            char p2[PATH_MAX_];
            snprintf(p2, sizeof(p2), "%s[%zu]", pt, i);
            if ((rc = read_node_term(r, t, p2, &r->p->required[i])))
                return rc;
            r->p->nrequired++;
        }
    }
    snprintf(p, sizeof(p), "%s." PREFERRED_TERMS, base);
    if ((rc = get_list(r, na, PREFERRED_TERMS, p, GS_PODSPEC_MAX_TERMS, "terms", &pref, &n)))
        return rc;
    r->p->preferred = gs_kpod_alloc(r->p, n * sizeof(struct gs_knode_pref));
    if (!r->p->preferred)
        return oom(r);
    const json_t *e;
    json_array_foreach(pref, i, e)
    {
        char p2[PATH_MAX_], p3[PATH_MAX_];
        snprintf(p2, sizeof(p2), "%s[%zu]", p, i);
        struct gs_knode_pref *np = &r->p->preferred[i];
        const json_t *pt;
        if ((rc = read_weighted(r, e, p2, "preference", &np->weight, &pt, p3)) ||
            (rc = read_node_term(r, pt, p3, &np->term)))
            return rc;
        r->p->npreferred++;
    }
    return 0;
}

/* namespaceSelector: absent or null: nothing; otherwise requirements on
 * kubernetes.io/metadata.name only. */
static int read_ns_sel(struct rd *r, const json_t *o, const char *path, struct gs_ksel *s)
{
    int rc = read_sel(r, o, "namespaceSelector", path, 0, s);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < s->nreqs; i++)
        if (strcmp(s->reqs[i].key, GS_KNS_NAME_KEY) != 0)
            return fail(r, path,
                        "selecting namespaces by label '%s' is not supported (only {} or "
                        "requirements on " GS_KNS_NAME_KEY ")",
                        s->reqs[i].key);
    return 0;
}

static int read_aff_term(struct rd *r, const json_t *o, const char *path, int32_t weight,
                         struct gs_kaff_term *t)
{
    if (!json_is_object(o))
        return fail(r, path, "expected an object");
    char p[PATH_MAX_];
    int rc;
    t->weight = weight;
    if ((rc = read_topology_key(r, o, path, &t->topology_key)) ||
        (rc = read_merged_sel(r, o, path, true, &t->sel)))
        return rc;
    snprintf(p, sizeof(p), "%s.namespaceSelector", path);
    if ((rc = read_ns_sel(r, o, p, &t->ns_sel)))
        return rc;
    const json_t *nss;
    size_t n;
    snprintf(p, sizeof(p), "%s.namespaces", path);
    if ((rc = get_list(r, o, "namespaces", p, GS_PODSPEC_MAX_NS, "namespaces", &nss, &n)))
        return rc;
    if (n == 0 && t->ns_sel.nothing) {
        /* neither given: the pod's own namespace */
        t->ns = gs_kpod_alloc(r->p, sizeof(char *));
        if (!t->ns)
            return oom(r);
        t->ns[0] = r->p->ns;
        t->nns = 1;
        return 0;
    }
    return read_str_set(r, nss, n, p, NS_MAX, false, NULL, &t->ns, &t->nns);
}

/* podAffinity or podAntiAffinity (anti): required terms, then weighted preferred ones. */
static int read_pod_affinity(struct rd *r, const json_t *pa, const char *base, bool anti)
{
    struct gs_kpod *pod = r->p;
    struct gs_kaff_term **dst[2] = {anti ? &pod->anti : &pod->aff, anti ? &pod->panti : &pod->paff};
    uint32_t *ndst[2] = {anti ? &pod->nanti : &pod->naff, anti ? &pod->npanti : &pod->npaff};
    for (int pref = 0; pref < 2; pref++) {
        const char *field = pref ? PREFERRED_TERMS : REQUIRED_TERMS;
        const json_t *arr;
        size_t n;
        char p[PATH_MAX_];
        snprintf(p, sizeof(p), "%s.%s", base, field);
        int rc = get_list(r, pa, field, p, GS_PODSPEC_MAX_TERMS, "terms", &arr, &n);
        if (rc)
            return rc;
        struct gs_kaff_term *terms = gs_kpod_alloc(pod, n * sizeof(struct gs_kaff_term));
        if (!terms)
            return oom(r);
        size_t i;
        const json_t *e;
        json_array_foreach(arr, i, e)
        {
            char p2[PATH_MAX_], p3[PATH_MAX_];
            snprintf(p2, sizeof(p2), "%s[%zu]", p, i);
            const json_t *t = e;
            const char *tpath = p2;
            int32_t w = 0;
            if (pref) {
                if ((rc = read_weighted(r, e, p2, "podAffinityTerm", &w, &t, p3)))
                    return rc;
                tpath = p3;
            }
            if ((rc = read_aff_term(r, t, tpath, w, &terms[i])))
                return rc;
        }
        *dst[pref] = terms;
        *ndst[pref] = (uint32_t)n;
    }
    return 0;
}

static int read_policy(struct rd *r, const json_t *o, const char *key, const char *path, bool def,
                       bool *honor)
{
    const char *v;
    int rc = get_str(r, o, key, path, 16, &v);
    if (rc)
        return rc;
    if (!v)
        *honor = def;
    else if (strcmp(v, "Honor") == 0)
        *honor = true;
    else if (strcmp(v, "Ignore") == 0)
        *honor = false;
    else
        return fail(r, path, "'%s' is not Honor or Ignore", v);
    return 0;
}

static int read_spread(struct rd *r, const json_t *arr)
{
    const char *base = "spec.topologySpreadConstraints";
    size_t n = json_array_size(arr);
    if (n > GS_PODSPEC_MAX_TERMS)
        return fail(r, base, "more than %d constraints", GS_PODSPEC_MAX_TERMS);
    r->p->spread = gs_kpod_alloc(r->p, n * sizeof(struct gs_kspread));
    if (!r->p->spread)
        return oom(r);
    size_t i;
    const json_t *o;
    json_array_foreach(arr, i, o)
    {
        char path[PATH_MAX_], p[PATH_MAX_];
        snprintf(path, sizeof(path), "%s[%zu]", base, i);
        if (!json_is_object(o))
            return fail(r, path, "expected an object");
        struct gs_kspread *c = &r->p->spread[i];
        bool has;
        int64_t v = 0;
        int rc;
        snprintf(p, sizeof(p), "%s.maxSkew", path);
        if ((rc = get_int(r, o, "maxSkew", p, 1, INT32_MAX, &has, &v)))
            return rc;
        if (!has)
            return fail(r, p, "required");
        c->max_skew = (int32_t)v;
        if ((rc = read_topology_key(r, o, path, &c->topology_key)))
            return rc;
        const char *s;
        snprintf(p, sizeof(p), "%s.whenUnsatisfiable", path);
        if ((rc = get_str(r, o, "whenUnsatisfiable", p, 32, &s)))
            return rc;
        if (!s)
            return fail(r, p, "required");
        if (strcmp(s, "DoNotSchedule") == 0)
            c->do_not_schedule = true;
        else if (strcmp(s, "ScheduleAnyway") != 0)
            return fail(r, p, "'%s' is not DoNotSchedule or ScheduleAnyway", s);
        snprintf(p, sizeof(p), "%s.minDomains", path);
        if ((rc = get_int(r, o, "minDomains", p, 1, INT32_MAX, &has, &v)))
            return rc;
        if (has && !c->do_not_schedule)
            return fail(r, p, "can only use minDomains with whenUnsatisfiable DoNotSchedule");
        c->min_domains = has ? (int32_t)v : 0;
        snprintf(p, sizeof(p), "%s.nodeAffinityPolicy", path);
        if ((rc = read_policy(r, o, "nodeAffinityPolicy", p, true, &c->affinity_honor)))
            return rc;
        snprintf(p, sizeof(p), "%s.nodeTaintsPolicy", path);
        if ((rc = read_policy(r, o, "nodeTaintsPolicy", p, false, &c->taints_honor)))
            return rc;
        if ((rc = read_merged_sel(r, o, path, false, &c->sel)))
            return rc;
        r->p->nspread++;
    }
    return 0;
}

static int read_ports(struct rd *r, const json_t *spec)
{
    static const char *const lists[2] = {"initContainers", "containers"};
    size_t total = 0;
    for (int l = 0; l < 2; l++) {
        const json_t *cs = json_object_get(spec, lists[l]);
        if (cs && !json_is_array(cs) && !json_is_null(cs))
            return fail(r, lists[l], "expected a list");
        if (json_array_size(cs) > GS_PODSPEC_MAX_CONT)
            return fail(r, lists[l], "more than %d containers", GS_PODSPEC_MAX_CONT);
        size_t i;
        const json_t *c;
        json_array_foreach(cs, i, c) total += arr_size(c, "ports");
    }
    if (total > GS_PODSPEC_MAX_PORTS)
        return fail(r, "spec.containers", "more than %d ports", GS_PODSPEC_MAX_PORTS);
    r->p->ports = gs_kpod_alloc(r->p, total * sizeof(struct gs_kport));
    if (!r->p->ports)
        return oom(r);
    for (int l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            char path[PATH_MAX_], p[PATH_MAX_];
            snprintf(path, sizeof(path), "spec.%s[%zu]", lists[l], i);
            if (!json_is_object(c))
                return fail(r, path, "expected an object");
            int rc;
            if (l == 0) {
                /* only init containers that run for the pod's life (sidecars) */
                const char *rp;
                snprintf(p, sizeof(p), "%s.restartPolicy", path);
                if ((rc = get_str(r, c, "restartPolicy", p, 16, &rp)))
                    return rc;
                if (!rp || strcmp(rp, "Always") != 0)
                    continue;
            }
            const json_t *ports;
            snprintf(p, sizeof(p), "%s.ports", path);
            if ((rc = get_kind(r, c, "ports", p, true, &ports)))
                return rc;
            size_t j;
            const json_t *po;
            json_array_foreach(ports, j, po)
            {
                char pp[PATH_MAX_], pf[PATH_MAX_];
                snprintf(pp, sizeof(pp), "%s.ports[%zu]", path, j);
                if (!json_is_object(po))
                    return fail(r, pp, "expected an object");
                bool has;
                int64_t hp = 0;
                snprintf(pf, sizeof(pf), "%s.hostPort", pp);
                if ((rc = get_int(r, po, "hostPort", pf, 0, 65535, &has, &hp)))
                    return rc;
                if (!has || hp == 0)
                    continue;
                struct gs_kport *k = &r->p->ports[r->p->nports];
                k->port = (int32_t)hp;
                const char *s;
                snprintf(pf, sizeof(pf), "%s.protocol", pp);
                if ((rc = get_str(r, po, "protocol", pf, 8, &s)))
                    return rc;
                if (!s || strcmp(s, "TCP") == 0)
                    k->proto = GS_KPROTO_TCP;
                else if (strcmp(s, "UDP") == 0)
                    k->proto = GS_KPROTO_UDP;
                else if (strcmp(s, "SCTP") == 0)
                    k->proto = GS_KPROTO_SCTP;
                else
                    return fail(r, pf, "'%s' is not TCP, UDP or SCTP", s);
                snprintf(pf, sizeof(pf), "%s.hostIP", pp);
                if ((rc = get_str(r, po, "hostIP", pf, GS_KIP_MAX - 1, &s)))
                    return rc;
                snprintf(k->ip, sizeof(k->ip), "%s", s && *s ? s : "0.0.0.0");
                r->p->nports++;
            }
        }
    }
    return 0;
}

static int read_labels(struct rd *r, const json_t *md)
{
    const json_t *lab;
    int rc = get_kind(r, md, "labels", "metadata.labels", false, &lab);
    if (rc || !lab)
        return rc;
    size_t n = json_object_size(lab);
    if (n > GS_PODSPEC_MAX_LABELS)
        return fail(r, "metadata.labels", "more than %d labels", GS_PODSPEC_MAX_LABELS);
    struct gs_label_ref *kv = malloc((n ? n : 1) * sizeof(*kv));
    if (!kv)
        return oom(r);
    uint32_t i = 0;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)lab, k, v)
    {
        char p[PATH_MAX_];
        snprintf(p, sizeof(p), "metadata.labels.%s", k);
        if (!*k || strlen(k) > GS_LABELS_KEY_MAX) {
            rc = fail(r, "metadata.labels", "a key is empty or longer than %d bytes",
                      GS_LABELS_KEY_MAX);
            goto out;
        }
        if ((rc = check_str(r, v, p, GS_LABELS_VAL_MAX, true)))
            goto out;
        kv[i].key = k;
        kv[i].val = json_string_value(v);
        i++;
    }
    rc = gs_labels_build(&r->p->labels, kv, i);
    if (rc == GS_ENOMEM)
        rc = oom(r);
    else if (rc)
        rc = fail(r, "metadata.labels", "a key or value is too long");
out:
    free(kv);
    return rc;
}

static int read_all(struct rd *r, const json_t *obj)
{
    struct gs_kpod *p = r->p;
    int rc;
    if (!json_is_object(obj))
        return gs_error_set(r->err, GS_EINVAL, "pod: expected a JSON object");
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    if (!json_is_object(md))
        return gs_error_set(r->err, GS_EINVAL, "pod: metadata: expected an object");
    const char *ns, *name;
    snprintf(r->who, sizeof(r->who), "pod");
    if ((rc = get_str(r, md, "namespace", "metadata.namespace", NS_MAX, &ns)) ||
        (rc = get_str(r, md, "name", "metadata.name", NAME_MAX_, &name)))
        return rc;
    if (!ns || !*ns)
        ns = "default";
    snprintf(r->who, sizeof(r->who), "pod %s/%s", ns, name ? name : "");
    if (!(p->ns = dup(r, ns)) || !(p->name = dup(r, name ? name : "")))
        return oom(r);
    const json_t *del = json_object_get(md, "deletionTimestamp");
    p->terminating = del && !json_is_null(del);
    if ((rc = read_labels(r, md)))
        return rc;
    if (!spec || json_is_null(spec))
        return 0;
    if (!json_is_object(spec))
        return fail(r, "spec", "expected an object");
    const char *nn;
    if ((rc = get_str(r, spec, "nodeName", "spec.nodeName", NAME_MAX_, &nn)))
        return rc;
    if (nn && *nn && !(p->node_name = dup(r, nn)))
        return oom(r);
    const json_t *sel;
    if ((rc = get_kind(r, spec, "nodeSelector", "spec.nodeSelector", false, &sel)))
        return rc;
    if (sel) {
        size_t n = json_object_size(sel);
        if (n > GS_PODSPEC_MAX_SELECTOR)
            return fail(r, "spec.nodeSelector", "more than %d entries", GS_PODSPEC_MAX_SELECTOR);
        p->node_selector = gs_kpod_alloc(p, n * sizeof(struct gs_label_ref));
        if (!p->node_selector)
            return oom(r);
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)sel, k, v)
        {
            char pp[PATH_MAX_];
            snprintf(pp, sizeof(pp), "spec.nodeSelector.%s", k);
            if (!*k || strlen(k) > GS_LABELS_KEY_MAX)
                return fail(r, "spec.nodeSelector", "a key is empty or too long");
            if ((rc = check_str(r, v, pp, GS_LABELS_VAL_MAX, true)))
                return rc;
            struct gs_label_ref *e = &p->node_selector[p->nnode_selector++];
            if (!(e->key = dup(r, k)) || !(e->val = dup(r, json_string_value(v))))
                return oom(r);
        }
    }
    const json_t *aff, *x;
    if ((rc = get_kind(r, spec, "affinity", "spec.affinity", false, &aff)))
        return rc;
    if (aff) {
        if ((rc = get_kind(r, aff, "nodeAffinity", "spec.affinity.nodeAffinity", false, &x)))
            return rc;
        if (x && (rc = read_node_affinity(r, x)))
            return rc;
        if ((rc = get_kind(r, aff, "podAffinity", "spec.affinity.podAffinity", false, &x)))
            return rc;
        if (x && (rc = read_pod_affinity(r, x, "spec.affinity.podAffinity", false)))
            return rc;
        if ((rc = get_kind(r, aff, "podAntiAffinity", "spec.affinity.podAntiAffinity", false, &x)))
            return rc;
        if (x && (rc = read_pod_affinity(r, x, "spec.affinity.podAntiAffinity", true)))
            return rc;
    }
    if ((rc = get_kind(r, spec, "topologySpreadConstraints", "spec.topologySpreadConstraints", true,
                       &x)))
        return rc;
    if (x && (rc = read_spread(r, x)))
        return rc;
    return read_ports(r, spec);
}

int gs_podspec_read(const json_t *pod, struct gs_kpod *p, struct gs_error *err)
{
    if (p->arena.head || p->labels.buf)
        gs_kpod_release(p);
    gs_kpod_init(p);
    struct rd r = {.p = p, .err = err};
    int rc = read_all(&r, pod);
    if (rc)
        gs_kpod_release(p);
    return rc;
}
