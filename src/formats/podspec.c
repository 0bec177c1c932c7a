/* podspec.c - Pod JSON to struct gs_kpod (core/constraints): the fields kube-scheduler's
 * NodeName, NodeAffinity, NodePorts, PodTopologySpread and InterPodAffinity plugins read.
 * formats/kubeobj reads the same Pod's resources and tolerations; this reader owns the
 * placement constraints, validated as the API server validates them and bounded. */
#include "podspec.h"

#include "../base/error.h"

#include <errno.h>
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

/* A string field: NULL when absent or null; *bad when present with another type, an
 * embedded NUL, or longer than max. */
static int get_str(struct rd *r, const json_t *o, const char *key, const char *path, size_t max,
                   const char **out)
{
    *out = NULL;
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return fail(r, path, "expected a string");
    const char *s = json_string_value(v);
    size_t l = json_string_length(v);
    if (strlen(s) != l)
        return fail(r, path, "contains a NUL byte");
    if (l > max)
        return fail(r, path, "longer than %zu bytes", max);
    *out = s;
    return 0;
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

/* An optional array or object field: NULL when absent or null. */
static int get_kind(struct rd *r, const json_t *o, const char *key, const char *path, bool array,
                    const json_t **out)
{
    *out = NULL;
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
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
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
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

/* strconv.ParseInt(s, 10, 64) */
static bool parse_i64(const char *s, int64_t *out)
{
    const char *d = s + (*s == '+' || *s == '-');
    if (!*d)
        return false;
    for (const char *q = d; *q; q++)
        if (*q < '0' || *q > '9')
            return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
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
    snprintf(p2, sizeof(p2), "%s.values", path);
    if ((rc = get_kind(r, o, "values", p2, true, &vals)))
        return rc;
    size_t n = vals ? json_array_size(vals) : 0;
    if (n > GS_PODSPEC_MAX_VALUES)
        return fail(r, p2, "more than %d values", GS_PODSPEC_MAX_VALUES);
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
    q->key = dup(r, key);
    q->vals = gs_kpod_alloc(r->p, n * sizeof(char *));
    if (!q->key || !q->vals)
        return oom(r);
    size_t i;
    const json_t *v;
    json_array_foreach(vals, i, v)
    {
        char p3[PATH_MAX_];
        snprintf(p3, sizeof(p3), "%s.values[%zu]", path, i);
        if ((rc = check_str(r, v, p3, GS_LABELS_VAL_MAX, true)))
            return rc;
        if (opi == GS_KOP_GT || opi == GS_KOP_LT) {
            if (!parse_i64(json_string_value(v), &q->num))
                return fail(r, p3, "'%s' is not an integer", json_string_value(v));
        }
        if (!(q->vals[i] = dup(r, json_string_value(v))))
            return oom(r);
    }
    /* sorted, unique */
    qsort(q->vals, n, sizeof(char *), cmp_str);
    uint32_t u = 0;
    for (size_t j = 0; j < n; j++)
        if (u == 0 || strcmp(q->vals[u - 1], q->vals[j]) != 0)
            q->vals[u++] = q->vals[j];
    q->nvals = u;
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
        struct gs_kreq *q = &s->reqs[s->nreqs++];
        q->op = GS_KOP_IN;
        q->key = dup(r, k);
        q->vals = gs_kpod_alloc(r->p, sizeof(char *));
        if (!q->key || !q->vals || !(q->vals[0] = dup(r, json_string_value(v))))
            return oom(r);
        q->nvals = 1;
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
        struct gs_kreq *q = &s->reqs[s->nreqs++];
        q->op = (uint8_t)op;
        q->key = dup(r, json_string_value(k));
        q->vals = gs_kpod_alloc(r->p, sizeof(char *));
        if (!q->key || !q->vals || !(q->vals[0] = dup(r, val)))
            return oom(r);
        q->nvals = 1;
    }
    return 0;
}

static size_t arr_size(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_array(v) ? json_array_size(v) : 0;
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

static int read_node_affinity(struct rd *r, const json_t *na)
{
    const char *base = "spec.affinity.nodeAffinity";
    const json_t *req, *pref;
    char p[PATH_MAX_];
    snprintf(p, sizeof(p), "%s.requiredDuringSchedulingIgnoredDuringExecution", base);
    int rc = get_kind(r, na, "requiredDuringSchedulingIgnoredDuringExecution", p, false, &req);
    if (rc)
        return rc;
    if (req) {
        const json_t *terms;
        char pt[PATH_MAX_];
        snprintf(pt, sizeof(pt), "%s.nodeSelectorTerms", p);
        if ((rc = get_kind(r, req, "nodeSelectorTerms", pt, true, &terms)))
            return rc;
        size_t n = terms ? json_array_size(terms) : 0;
        if (n == 0)
            return fail(r, pt, "must have at least one node selector term");
        if (n > GS_PODSPEC_MAX_TERMS)
            return fail(r, pt, "more than %d terms", GS_PODSPEC_MAX_TERMS);
        r->p->has_required = true;
        r->p->required = gs_kpod_alloc(r->p, n * sizeof(struct gs_knode_term));
        if (!r->p->required)
            return oom(r);
        size_t i;
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
    snprintf(p, sizeof(p), "%s.preferredDuringSchedulingIgnoredDuringExecution", base);
    if ((rc = get_kind(r, na, "preferredDuringSchedulingIgnoredDuringExecution", p, true, &pref)))
        return rc;
    size_t n = pref ? json_array_size(pref) : 0;
    if (n > GS_PODSPEC_MAX_TERMS)
        return fail(r, p, "more than %d terms", GS_PODSPEC_MAX_TERMS);
    r->p->preferred = gs_kpod_alloc(r->p, n * sizeof(struct gs_knode_pref));
    if (!r->p->preferred)
        return oom(r);
    size_t i;
    const json_t *e;
    json_array_foreach(pref, i, e)
    {
        char p2[PATH_MAX_], p3[PATH_MAX_];
        snprintf(p2, sizeof(p2), "%s[%zu]", p, i);
        if (!json_is_object(e))
            return fail(r, p2, "expected an object");
        struct gs_knode_pref *np = &r->p->preferred[i];
        bool has;
        int64_t w = 0;
        snprintf(p3, sizeof(p3), "%s.weight", p2);
        if ((rc = get_int(r, e, "weight", p3, 1, 100, &has, &w)))
            return rc;
        if (!has)
            return fail(r, p3, "required");
        np->weight = (int32_t)w;
        const json_t *pt;
        snprintf(p3, sizeof(p3), "%s.preference", p2);
        if ((rc = get_kind(r, e, "preference", p3, false, &pt)))
            return rc;
        if (!pt)
            return fail(r, p3, "required");
        if ((rc = read_node_term(r, pt, p3, &np->term)))
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
    const char *tk;
    snprintf(p, sizeof(p), "%s.topologyKey", path);
    if ((rc = get_str(r, o, "topologyKey", p, GS_LABELS_KEY_MAX, &tk)))
        return rc;
    if (!tk || !*tk)
        return fail(r, p, "can not be empty");
    if (!(t->topology_key = dup(r, tk)))
        return oom(r);
    uint32_t extra = (uint32_t)(arr_size(o, "matchLabelKeys") + arr_size(o, "mismatchLabelKeys"));
    if (extra > GS_PODSPEC_MAX_REQS)
        return fail(r, path, "more than %d label keys", GS_PODSPEC_MAX_REQS);
    snprintf(p, sizeof(p), "%s.labelSelector", path);
    if ((rc = read_sel(r, o, "labelSelector", p, extra, &t->sel)))
        return rc;
    snprintf(p, sizeof(p), "%s.matchLabelKeys", path);
    if ((rc = merge_keys(r, o, "matchLabelKeys", p, GS_KOP_IN, &t->sel)))
        return rc;
    snprintf(p, sizeof(p), "%s.mismatchLabelKeys", path);
    if ((rc = merge_keys(r, o, "mismatchLabelKeys", p, GS_KOP_NOTIN, &t->sel)))
        return rc;
    snprintf(p, sizeof(p), "%s.namespaceSelector", path);
    if ((rc = read_ns_sel(r, o, p, &t->ns_sel)))
        return rc;
    const json_t *nss;
    snprintf(p, sizeof(p), "%s.namespaces", path);
    if ((rc = get_kind(r, o, "namespaces", p, true, &nss)))
        return rc;
    size_t n = nss ? json_array_size(nss) : 0;
    if (n > GS_PODSPEC_MAX_NS)
        return fail(r, p, "more than %d namespaces", GS_PODSPEC_MAX_NS);
    if (n == 0 && t->ns_sel.nothing) {
        /* neither given: the pod's own namespace */
        t->ns = gs_kpod_alloc(r->p, sizeof(char *));
        if (!t->ns)
            return oom(r);
        t->ns[0] = r->p->ns;
        t->nns = 1;
        return 0;
    }
    t->ns = gs_kpod_alloc(r->p, n * sizeof(char *));
    if (!t->ns)
        return oom(r);
    size_t i;
    const json_t *v;
    json_array_foreach(nss, i, v)
    {
        char p2[PATH_MAX_];
        snprintf(p2, sizeof(p2), "%s[%zu]", p, i);
        if ((rc = check_str(r, v, p2, NS_MAX, false)))
            return rc;
        if (!(t->ns[i] = dup(r, json_string_value(v))))
            return oom(r);
    }
    qsort(t->ns, n, sizeof(char *), cmp_str);
    uint32_t u = 0;
    for (size_t j = 0; j < n; j++)
        if (u == 0 || strcmp(t->ns[u - 1], t->ns[j]) != 0)
            t->ns[u++] = t->ns[j];
    t->nns = u;
    return 0;
}

static int read_pod_affinity(struct rd *r, const json_t *pa, const char *base, bool anti)
{
    const json_t *req, *pref;
    char p[PATH_MAX_];
    int rc;
    snprintf(p, sizeof(p), "%s.requiredDuringSchedulingIgnoredDuringExecution", base);
    if ((rc = get_kind(r, pa, "requiredDuringSchedulingIgnoredDuringExecution", p, true, &req)))
        return rc;
    size_t n = req ? json_array_size(req) : 0;
    if (n > GS_PODSPEC_MAX_TERMS)
        return fail(r, p, "more than %d terms", GS_PODSPEC_MAX_TERMS);
    struct gs_kaff_term *terms = gs_kpod_alloc(r->p, n * sizeof(struct gs_kaff_term));
    if (!terms)
        return oom(r);
    size_t i;
    const json_t *e;
    json_array_foreach(req, i, e)
    {
        char p2[PATH_MAX_];
        snprintf(p2, sizeof(p2), "%s[%zu]", p, i);
        if ((rc = read_aff_term(r, e, p2, 0, &terms[i])))
            return rc;
    }
    if (anti) {
        r->p->anti = terms;
        r->p->nanti = (uint32_t)n;
    } else {
        r->p->aff = terms;
        r->p->naff = (uint32_t)n;
    }
    snprintf(p, sizeof(p), "%s.preferredDuringSchedulingIgnoredDuringExecution", base);
    if ((rc = get_kind(r, pa, "preferredDuringSchedulingIgnoredDuringExecution", p, true, &pref)))
        return rc;
    n = pref ? json_array_size(pref) : 0;
    if (n > GS_PODSPEC_MAX_TERMS)
        return fail(r, p, "more than %d terms", GS_PODSPEC_MAX_TERMS);
    terms = gs_kpod_alloc(r->p, n * sizeof(struct gs_kaff_term));
    if (!terms)
        return oom(r);
    json_array_foreach(pref, i, e)
    {
        char p2[PATH_MAX_], p3[PATH_MAX_];
        snprintf(p2, sizeof(p2), "%s[%zu]", p, i);
        if (!json_is_object(e))
            return fail(r, p2, "expected an object");
        bool has;
        int64_t w = 0;
        snprintf(p3, sizeof(p3), "%s.weight", p2);
        if ((rc = get_int(r, e, "weight", p3, 1, 100, &has, &w)))
            return rc;
        if (!has)
            return fail(r, p3, "required");
        const json_t *pt;
        snprintf(p3, sizeof(p3), "%s.podAffinityTerm", p2);
        if ((rc = get_kind(r, e, "podAffinityTerm", p3, false, &pt)))
            return rc;
        if (!pt)
            return fail(r, p3, "required");
        if ((rc = read_aff_term(r, pt, p3, (int32_t)w, &terms[i])))
            return rc;
    }
    if (anti) {
        r->p->panti = terms;
        r->p->npanti = (uint32_t)n;
    } else {
        r->p->paff = terms;
        r->p->npaff = (uint32_t)n;
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
        const char *s;
        snprintf(p, sizeof(p), "%s.topologyKey", path);
        if ((rc = get_str(r, o, "topologyKey", p, GS_LABELS_KEY_MAX, &s)))
            return rc;
        if (!s || !*s)
            return fail(r, p, "can not be empty");
        if (!(c->topology_key = dup(r, s)))
            return oom(r);
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
        uint32_t extra = (uint32_t)arr_size(o, "matchLabelKeys");
        if (extra > GS_PODSPEC_MAX_REQS)
            return fail(r, path, "more than %d label keys", GS_PODSPEC_MAX_REQS);
        snprintf(p, sizeof(p), "%s.labelSelector", path);
        if ((rc = read_sel(r, o, "labelSelector", p, extra, &c->sel)))
            return rc;
        snprintf(p, sizeof(p), "%s.matchLabelKeys", path);
        if ((rc = merge_keys(r, o, "matchLabelKeys", p, GS_KOP_IN, &c->sel)))
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
    if (p->arena || p->labels.buf)
        gs_kpod_release(p);
    gs_kpod_init(p);
    struct rd r = {.p = p, .err = err};
    int rc = read_all(&r, pod);
    if (rc)
        gs_kpod_release(p);
    return rc;
}
