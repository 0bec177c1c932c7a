/* cel_eval.c - the evaluator of compiled CEL (cel.h) over one device: values (in an arena on
 * the stack, or once on the heap when that is not enough), the device's maps as upstream
 * presents them (a domain it lacks reads as an empty map), the operators with CEL's error
 * semantics (commutative && and ||, overflow and division by zero as errors, heterogeneous
 * equality), the comprehension macros and cel.bind, and the runtime cost counted as cel-go's
 * cost tracker counts it. Function calls go to cel_lib.c. A program is only read. */
#include "cel_internal.h"

#include "../base/error.h"
#include "../core/quantity.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- values ---------- */

void *gs__cel_alloc(struct gs__cel_ctx *c, size_t n)
{
    size_t at = (c->used + 15) & ~(size_t)15; /* __int128 in quantities */
    if (n > c->size || at > c->size - n) {
        c->out_of_mem = true;
        return NULL;
    }
    c->used = at + n;
    return c->mem + at;
}

struct gs__cel_val gs__cel_error(const char *msg)
{
    return (struct gs__cel_val){.t = V_ERR, .p = msg};
}

struct gs__cel_val gs__cel_errorf(struct gs__cel_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
    va_end(ap);
    return gs__cel_error(c->msg);
}

struct gs__cel_val gs__cel_str(const char *s, size_t n)
{
    return (struct gs__cel_val){.t = V_STR, .p = s, .n = (uint32_t)n};
}

static struct gs__cel_val vbool(bool b)
{
    return (struct gs__cel_val){.t = V_BOOL, .b = b};
}

static struct gs__cel_val no_overload(void)
{
    return gs__cel_error("no such overload");
}

static bool aborted(const struct gs__cel_ctx *c)
{
    return c->out_of_mem || c->fatal || c->cost > GS_CEL_MAX_COST;
}

void gs__cel_charge(struct gs__cel_ctx *c, uint64_t n)
{
    c->cost += n;
}

void gs__cel_charge_scan(struct gs__cel_ctx *c, uint64_t n)
{
    c->cost += (n + 9) / 10;
}

/* ---------- the device's maps ---------- */

static size_t domain_len(const char *qname)
{
    const char *s = strchr(qname, '/');
    return s ? (size_t)(s - qname) : strlen(qname);
}

static bool same_domain(const struct gs_dra_attr *a, const char *d, size_t n)
{
    return domain_len(a->name) == n && memcmp(a->name, d, n) == 0;
}

/* The attribute values of a device map: entry i of the map (key in *key, value in *val). The
 * outer maps list each domain once, at its first attribute. Returns false past the end. */
static bool dmap_entry(struct gs__cel_ctx *c, const struct gs__cel_val *m, uint32_t i,
                       struct gs__cel_val *key, struct gs__cel_val *val);

static struct gs__cel_val attr_value(struct gs__cel_ctx *c, const struct gs_dra_attr *a)
{
    switch (a->v.type) {
    case GS_DRA_INT:
        return (struct gs__cel_val){.t = V_INT, .i = a->v.i};
    case GS_DRA_BOOL:
        return vbool(a->v.b);
    case GS_DRA_STRING:
        return gs__cel_str(a->v.s, strlen(a->v.s));
    case GS_DRA_VERSION: {
        struct gs__cel_semver *v = gs__cel_alloc(c, sizeof(*v));
        const char *why;
        if (!v)
            return gs__cel_error("out of memory");
        if (gs__cel_semver_parse(a->v.s, strlen(a->v.s), NULL, v, &why))
            return gs__cel_errorf(c, "attribute %s: parse semantic version: %s", a->name, why);
        return (struct gs__cel_val){.t = V_VER, .p = v};
    }
    case GS_DRA_QUANTITY: {
        struct gs__cel_qty *q = gs__cel_alloc(c, sizeof(*q));
        if (!q)
            return gs__cel_error("out of memory");
        gs__cel_qty_from_value(&a->v.q, q);
        return (struct gs__cel_val){.t = V_QTY, .p = q};
    }
    default:
        return gs__cel_error("unsupported attribute value");
    }
}

static bool dmap_entry(struct gs__cel_ctx *c, const struct gs__cel_val *m, uint32_t i,
                       struct gs__cel_val *key, struct gs__cel_val *val)
{
    const struct gs_dra_device *d = c->dev;
    bool cap = m->aux == DM_CAPS || m->aux == DM_CAP_DOMAIN;
    bool outer = m->aux == DM_ATTRS || m->aux == DM_CAPS;
    uint32_t seen = 0;
    for (int k = 0; k < d->nattrs; k++) {
        const struct gs_dra_attr *a = &d->attrs[k];
        if (a->capacity != cap)
            continue;
        size_t dl = domain_len(a->name);
        if (outer) {
            bool first = true;
            for (int j = 0; j < k && first; j++)
                first = d->attrs[j].capacity != cap || !same_domain(&d->attrs[j], a->name, dl);
            if (!first || seen++ != i)
                continue;
            *key = gs__cel_str(a->name, dl);
            *val = (struct gs__cel_val){
                .t = V_DMAP, .aux = (uint8_t)(m->aux + 1), .p = a->name, .n = (uint32_t)dl};
            return true;
        }
        if (!same_domain(a, m->p, m->n) || seen++ != i)
            continue;
        const char *id = a->name + (a->name[dl] ? dl + 1 : dl);
        *key = gs__cel_str(id, strlen(id));
        *val = attr_value(c, a);
        return true;
    }
    return false;
}

/* Whether two keys of a map are one, as upstream's Go map keys: scalars by value (numbers
 * across types), anything else (a list, a map, a quantity) only as the very same value. */
static bool same_key(struct gs__cel_ctx *c, const struct gs__cel_val *a,
                     const struct gs__cel_val *b)
{
    bool na = a->t == V_INT || a->t == V_UINT || a->t == V_DOUBLE;
    bool nb = b->t == V_INT || b->t == V_UINT || b->t == V_DOUBLE;
    if (na || nb)
        return na && nb && gs__cel_equal(c, a, b) == 1;
    if (a->t != b->t)
        return false;
    if (a->t == V_STR || a->t == V_BOOL || a->t == V_NULL)
        return gs__cel_equal(c, a, b) == 1;
    return a->p == b->p && a->n == b->n && a->aux == b->aux;
}

/* The value under key in a map (V_MAP or V_DMAP): 1 found, 0 not; *val set when found.
 * default_empty: the outer device maps answer an empty map for a missing domain. */
static int map_find(struct gs__cel_ctx *c, const struct gs__cel_val *m,
                    const struct gs__cel_val *key, struct gs__cel_val *val, bool default_empty)
{
    if (m->t == V_MAP) {
        const struct gs__cel_val *e = m->p;
        for (uint32_t i = 0; i < m->n; i++) {
            const struct gs__cel_val *k = &e[2 * i];
            if (same_key(c, k, key)) {
                *val = e[2 * i + 1];
                return 1;
            }
        }
        return 0;
    }
    if (m->aux == DM_ATTRS || m->aux == DM_CAPS) {
        if (key->t == V_STR && default_empty) {
            *val = (struct gs__cel_val){
                .t = V_DMAP, .aux = (uint8_t)(m->aux + 1), .p = key->p, .n = key->n};
            return 1;
        }
        if (key->t == V_STR) {
            struct gs__cel_val k, v;
            for (uint32_t i = 0; dmap_entry(c, m, i, &k, &v); i++)
                if (k.n == key->n && memcmp(k.p, key->p, k.n) == 0) {
                    *val = v;
                    return 1;
                }
            return 0;
        }
        if (default_empty) {
            *val = (struct gs__cel_val){.t = V_DMAP, .aux = (uint8_t)(m->aux + 1), .p = "", .n = 0};
            return 1;
        }
        return 0;
    }
    if (key->t != V_STR)
        return 0;
    const struct gs_dra_attr *a =
        gs_dra_attr_find(c->dev, m->p, m->n, key->p, key->n, m->aux == DM_CAP_DOMAIN);
    if (!a)
        return 0;
    *val = attr_value(c, a);
    return 1;
}

static uint32_t map_size(struct gs__cel_ctx *c, const struct gs__cel_val *m)
{
    if (m->t == V_MAP || m->t == V_LIST)
        return m->n;
    struct gs__cel_val k, v;
    uint32_t n = 0;
    while (dmap_entry(c, m, n, &k, &v))
        n++;
    return n;
}

/* entry i of a map (key and value) or of a list (value only) */
static bool entry_at(struct gs__cel_ctx *c, const struct gs__cel_val *m, uint32_t i,
                     struct gs__cel_val *key, struct gs__cel_val *val)
{
    if (m->t == V_LIST || m->t == V_MAP) {
        if (i >= m->n)
            return false;
        const struct gs__cel_val *e = m->p;
        *key = m->t == V_MAP ? e[2 * i] : e[i];
        *val = m->t == V_MAP ? e[2 * i + 1] : e[i];
        return true;
    }
    return dmap_entry(c, m, i, key, val);
}

int64_t gs__cel_size(const struct gs__cel_ctx *c, const struct gs__cel_val *v)
{
    if (v->t == V_STR)
        return (int64_t)gs__cel_utf8_len(v->p, v->n);
    if (v->t == V_LIST || v->t == V_MAP || v->t == V_DMAP)
        return map_size((struct gs__cel_ctx *)c, v);
    return -1;
}

/* cel-go's actualSize: the size of a string, list or map, else 1 */
static uint64_t actual_size(struct gs__cel_ctx *c, const struct gs__cel_val *v)
{
    int64_t n = gs__cel_size(c, v);
    return n < 0 ? 1 : (uint64_t)n;
}

/* ---------- comparison ---------- */

static bool numeric(const struct gs__cel_val *v)
{
    return v->t == V_INT || v->t == V_UINT || v->t == V_DOUBLE;
}

/* -1, 0, 1; 2 when unordered (NaN) */
static int num_cmp(const struct gs__cel_val *a, const struct gs__cel_val *b)
{
    if (a->t == V_INT && b->t == V_INT)
        return a->i < b->i ? -1 : a->i > b->i;
    if (a->t == V_UINT && b->t == V_UINT)
        return a->u < b->u ? -1 : a->u > b->u;
    if (a->t == V_INT && b->t == V_UINT)
        return a->i < 0 ? -1 : (uint64_t)a->i < b->u ? -1 : (uint64_t)a->i > b->u;
    if (a->t == V_UINT && b->t == V_INT)
        return -num_cmp(b, a);
    /* cel-go compares an int or uint with a double as doubles, out-of-range doubles first */
    double x = a->t == V_INT ? (double)a->i : a->t == V_UINT ? (double)a->u : a->d;
    double y = b->t == V_INT ? (double)b->i : b->t == V_UINT ? (double)b->u : b->d;
    if (isnan(x) || isnan(y))
        return 2;
    return x < y ? -1 : x > y;
}

int gs__cel_equal(struct gs__cel_ctx *c, const struct gs__cel_val *a, const struct gs__cel_val *b)
{
    if (a->t == V_NULL || b->t == V_NULL)
        return a->t == b->t;
    if (numeric(a))
        return numeric(b) && num_cmp(a, b) == 0;
    switch (a->t) {
    case V_VER:
        if (b->t != V_VER)
            return -1;
        return gs__cel_semver_cmp(a->p, b->p) == 0;
    case V_QTY:
        if (b->t != V_QTY || b->aux)
            return -1;
        return ((const struct gs__cel_qty *)a->p)->q.nanos ==
               ((const struct gs__cel_qty *)b->p)->q.nanos;
    case V_STR:
        return b->t == V_STR && a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
    case V_BOOL:
        return b->t == V_BOOL && a->b == b->b;
    case V_DEVICE:
        return b->t == V_DEVICE;
    case V_LIST: {
        if (b->t != V_LIST || a->n != b->n)
            return 0;
        const struct gs__cel_val *x = a->p, *y = b->p;
        for (uint32_t i = 0; i < a->n; i++)
            if (gs__cel_equal(c, &x[i], &y[i]) == 0)
                return 0;
        return 1;
    }
    case V_MAP:
    case V_DMAP: {
        if ((b->t != V_MAP && b->t != V_DMAP) || map_size(c, a) != map_size(c, b))
            return 0;
        struct gs__cel_val k, v, w;
        for (uint32_t i = 0; entry_at(c, a, i, &k, &v); i++) {
            if (!map_find(c, b, &k, &w, true) || gs__cel_equal(c, &v, &w) == 0)
                return 0;
        }
        return 1;
    }
    default:
        return 0;
    }
}

int gs__cel_order(const struct gs__cel_val *a, const struct gs__cel_val *b)
{
    if (numeric(a) && numeric(b)) {
        int r = num_cmp(a, b);
        return r == 2 ? 3 : r;
    }
    if (a->t == V_STR && b->t == V_STR) {
        size_t n = a->n < b->n ? a->n : b->n;
        int r = memcmp(a->p, b->p, n);
        return r ? (r < 0 ? -1 : 1) : (a->n < b->n ? -1 : a->n > b->n);
    }
    if (a->t == V_BOOL && b->t == V_BOOL)
        return a->b < b->b ? -1 : a->b > b->b;
    return 2;
}

/* ---------- evaluation ---------- */

static struct gs__cel_val eval(struct gs__cel_ctx *c, int k);

static struct gs__cel_val kid(struct gs__cel_ctx *c, const struct gs_cel_node *x, int i)
{
    return eval(c, c->p->kids[x->k + i]);
}

static struct gs__cel_val literal(const struct gs_cel *p, const struct gs_cel_node *x, int op)
{
    switch (op) {
    case OP_BOOL:
        return vbool(x->v.i != 0);
    case OP_INT:
        return (struct gs__cel_val){.t = V_INT, .i = x->v.i};
    case OP_UINT:
        return (struct gs__cel_val){.t = V_UINT, .u = x->v.u};
    case OP_DOUBLE:
        return (struct gs__cel_val){.t = V_DOUBLE, .d = x->v.d};
    case OP_STR:
        return gs__cel_str(p->pool + x->s, (size_t)x->slen);
    default:
        return (struct gs__cel_val){.t = V_NULL};
    }
}

static bool constant(const struct gs_cel *p, const struct gs_cel_node *x)
{
    if (x->op <= OP_NULL || (x->op == OP_CALL && (x->flags & NF_FOLDED)))
        return true;
    if (x->op != OP_LIST && x->op != OP_MAP)
        return false;
    for (int i = 0; i < x->nk; i++)
        if (!constant(p, gs__cel_kid(p, x, i)))
            return false;
    return true;
}

/* a field or key of a value: select (x.f) and index (x[i]) */
static struct gs__cel_val member(struct gs__cel_ctx *c, struct gs__cel_val *v,
                                 const struct gs__cel_val *key, int field)
{
    struct gs__cel_val r;
    if (v->t == V_ERR)
        return *v;
    if (key->t == V_ERR)
        return *key;
    gs__cel_charge(c, 1);
    if (v->t == V_DEVICE && field) {
        if (field == 1)
            return gs__cel_str(c->dev->driver, strlen(c->dev->driver));
        if (field == 4)
            return vbool(c->dev->multi_alloc);
        return (struct gs__cel_val){.t = V_DMAP, .aux = field == 2 ? DM_ATTRS : DM_CAPS};
    }
    if (v->t == V_DEVICE) {
        static const char *const fields[] = {"driver", "attributes", "capacity",
                                             "allowMultipleAllocations"};
        for (int f = 0; key->t == V_STR && f < 4; f++) {
            if (strlen(fields[f]) != key->n || memcmp(fields[f], key->p, key->n) != 0)
                continue;
            if (f == 0)
                return gs__cel_str(c->dev->driver, strlen(c->dev->driver));
            if (f == 3)
                return vbool(c->dev->multi_alloc);
            return (struct gs__cel_val){.t = V_DMAP, .aux = f == 1 ? DM_ATTRS : DM_CAPS};
        }
        return gs__cel_errorf(c, "no such key: %.*s", (int)(key->t == V_STR ? key->n : 0),
                              key->t == V_STR ? (const char *)key->p : "");
    }
    if (v->t == V_LIST) {
        int64_t i;
        if (key->t == V_INT)
            i = key->i;
        else if (key->t == V_UINT && key->u <= INT64_MAX)
            i = (int64_t)key->u;
        else if (key->t == V_DOUBLE && key->d == (double)(int64_t)key->d)
            i = (int64_t)key->d;
        else
            return no_overload();
        if (i < 0 || i >= (int64_t)v->n)
            return gs__cel_errorf(c, "index out of bounds: %lld", (long long)i);
        return ((const struct gs__cel_val *)v->p)[i];
    }
    if (v->t != V_MAP && v->t != V_DMAP)
        return no_overload();
    if (key->t != V_STR && key->t != V_INT && key->t != V_UINT && key->t != V_BOOL &&
        key->t != V_DOUBLE)
        return gs__cel_error("invalid qualifier type");
    if (map_find(c, v, key, &r, true))
        return r;
    if (key->t == V_STR)
        return gs__cel_errorf(c, "no such key: %.*s", (int)key->n, (const char *)key->p);
    return gs__cel_error("no such key");
}

static struct gs__cel_val has(struct gs__cel_ctx *c, const struct gs_cel_node *x)
{
    struct gs__cel_val v = kid(c, x, 0), r;
    struct gs__cel_val key = gs__cel_str(c->p->pool + x->s, (size_t)x->slen);
    if (v.t == V_ERR)
        return v;
    if (v.t == V_DEVICE)
        return vbool(member(c, &v, &key, x->fn).t != V_ERR);
    if (v.t == V_LIST)
        return gs__cel_error("unsupported index type 'string' in list");
    if (v.t != V_MAP && v.t != V_DMAP)
        return vbool(false);
    return vbool(map_find(c, &v, &key, &r, true) == 1);
}

static struct gs__cel_val build(struct gs__cel_ctx *c, const struct gs_cel_node *x)
{
    bool map = x->op == OP_MAP;
    uint32_t used = 0;
    struct gs__cel_val *e = gs__cel_alloc(c, sizeof(*e) * (x->nk + 1u));
    if (!e)
        return gs__cel_error("out of memory");
    for (int i = 0; i < x->nk; i++) {
        struct gs__cel_val v = kid(c, x, i);
        if (v.t == V_ERR)
            return v;
        if (!map || i % 2 == 0) {
            e[map ? 2 * used : used++] = v;
            continue;
        }
        /* a repeated key keeps the last value, as a Go map does; a version cannot be a key
         * there (upstream panics) */
        if (e[2 * used].t == V_VER) {
            c->fatal = "internal error: hash of unhashable type cel.Semver";
            return gs__cel_error(c->fatal);
        }
        uint32_t j = 0;
        while (j < used && !(e[2 * j].t == e[2 * used].t && same_key(c, &e[2 * j], &e[2 * used])))
            j++;
        e[2 * j + 1] = v;
        used += j == used;
    }
    if (!constant(c->p, x))
        gs__cel_charge(c, map ? 30 : 10);
    return (struct gs__cel_val){.t = map ? V_MAP : V_LIST, .p = e, .n = used};
}

static struct gs__cel_val logic(struct gs__cel_ctx *c, const struct gs_cel_node *x)
{
    if (x->op == OP_COND) {
        struct gs__cel_val cond = kid(c, x, 0);
        if (cond.t == V_ERR)
            return cond;
        if (cond.t != V_BOOL)
            return no_overload();
        return kid(c, x, cond.b ? 1 : 2);
    }
    bool dominant = x->op == OP_OR; /* true || x, false && x */
    struct gs__cel_val a = kid(c, x, 0);
    if (a.t == V_BOOL && a.b == dominant)
        return a;
    struct gs__cel_val b = kid(c, x, 1);
    if (b.t == V_BOOL && b.b == dominant)
        return b;
    if (a.t == V_ERR)
        return a;
    if (b.t == V_ERR)
        return b;
    if (a.t != V_BOOL || b.t != V_BOOL)
        return no_overload();
    return vbool(!dominant);
}

static struct gs__cel_val concat(struct gs__cel_ctx *c, const struct gs__cel_val *a,
                                 const struct gs__cel_val *b)
{
    size_t w = a->t == V_STR ? 1 : sizeof(struct gs__cel_val);
    if (a->t == V_STR)
        gs__cel_charge_scan(c, actual_size(c, a) + actual_size(c, b));
    else
        gs__cel_charge(c, 1);
    char *m = gs__cel_alloc(c, w * ((size_t)a->n + b->n) + 1);
    if (!m)
        return gs__cel_error("out of memory");
    memcpy(m, a->p, w * a->n);
    memcpy(m + w * a->n, b->p, w * b->n);
    return (struct gs__cel_val){.t = a->t, .p = m, .n = a->n + b->n};
}

static struct gs__cel_val arith_int(int op, int64_t a, int64_t b)
{
    int64_t r;
    bool over = false;
    switch (op) {
    case OP_ADD:
        over = __builtin_add_overflow(a, b, &r);
        break;
    case OP_SUB:
        over = __builtin_sub_overflow(a, b, &r);
        break;
    case OP_MUL:
        over = __builtin_mul_overflow(a, b, &r);
        break;
    default:
        if (b == 0)
            return gs__cel_error(op == OP_DIV ? "division by zero" : "modulus by zero");
        over = a == INT64_MIN && b == -1;
        r = over ? 0 : op == OP_DIV ? a / b : a % b;
        break;
    }
    return over ? gs__cel_error("integer overflow") : (struct gs__cel_val){.t = V_INT, .i = r};
}

static struct gs__cel_val arith_uint(int op, uint64_t a, uint64_t b)
{
    uint64_t r;
    bool over = false;
    switch (op) {
    case OP_ADD:
        over = __builtin_add_overflow(a, b, &r);
        break;
    case OP_SUB:
        over = __builtin_sub_overflow(a, b, &r);
        break;
    case OP_MUL:
        over = __builtin_mul_overflow(a, b, &r);
        break;
    default:
        if (b == 0)
            return gs__cel_error(op == OP_DIV ? "division by zero" : "modulus by zero");
        r = op == OP_DIV ? a / b : a % b;
        break;
    }
    return over ? gs__cel_error("unsigned integer overflow")
                : (struct gs__cel_val){.t = V_UINT, .u = r};
}

static struct gs__cel_val arith(struct gs__cel_ctx *c, const struct gs_cel_node *x)
{
    struct gs__cel_val a = kid(c, x, 0), b = kid(c, x, 1);
    if (a.t == V_ERR)
        return a;
    if (b.t == V_ERR)
        return b;
    if (x->op == OP_ADD && a.t == b.t && (a.t == V_STR || a.t == V_LIST))
        return concat(c, &a, &b);
    gs__cel_charge(c, 1);
    if (a.t != b.t)
        return no_overload();
    if (a.t == V_INT)
        return arith_int(x->op, a.i, b.i);
    if (a.t == V_UINT)
        return arith_uint(x->op, a.u, b.u);
    if (a.t != V_DOUBLE || x->op == OP_MOD)
        return no_overload();
    double r = x->op == OP_ADD   ? a.d + b.d
               : x->op == OP_SUB ? a.d - b.d
               : x->op == OP_MUL ? a.d * b.d
                                 : a.d / b.d;
    return (struct gs__cel_val){.t = V_DOUBLE, .d = r};
}

static struct gs__cel_val unary(struct gs__cel_ctx *c, const struct gs_cel_node *x)
{
    struct gs__cel_val a = kid(c, x, 0);
    if (a.t == V_ERR)
        return a;
    gs__cel_charge(c, 1);
    if (x->op == OP_NOT)
        return a.t == V_BOOL ? vbool(!a.b) : no_overload();
    if (a.t == V_INT)
        return a.i == INT64_MIN ? gs__cel_error("integer overflow")
                                : (struct gs__cel_val){.t = V_INT, .i = -a.i};
    if (a.t == V_DOUBLE)
        return (struct gs__cel_val){.t = V_DOUBLE, .d = -a.d};
    return no_overload();
}

/* Whether upstream looks a version up in a Go map for "v in b", which panics (a version is not
 * hashable): b a map of a literal, or a constant non-empty list of scalars (made a set). */
static bool unhashable_lookup(struct gs__cel_ctx *c, const struct gs_cel_node *bx,
                              const struct gs__cel_val *b)
{
    if (b->t == V_MAP)
        return true;
    if (b->t != V_LIST || b->n == 0 || !constant(c->p, bx))
        return false;
    const struct gs__cel_val *e = b->p;
    for (uint32_t i = 0; i < b->n; i++)
        if (e[i].t != V_BOOL && e[i].t != V_INT && e[i].t != V_UINT && e[i].t != V_DOUBLE &&
            e[i].t != V_STR)
            return false;
    return true;
}

/* equality and ordering cost: ceil(min(size a, size b) * 0.1) */
static void charge_compare(struct gs__cel_ctx *c, const struct gs__cel_val *a,
                           const struct gs__cel_val *b)
{
    if (a->t == V_QTY || a->t == V_VER) {
        gs__cel_charge(c, 1);
        return;
    }
    /* bytes for strings: an upper bound of upstream's code points, without counting them */
    uint64_t x = a->t == V_STR ? a->n : actual_size(c, a);
    uint64_t y = b->t == V_STR ? b->n : actual_size(c, b);
    gs__cel_charge_scan(c, x < y ? x : y);
}

static struct gs__cel_val relation(struct gs__cel_ctx *c, const struct gs_cel_node *x)
{
    struct gs__cel_val a = kid(c, x, 0), b = kid(c, x, 1);
    if (a.t == V_ERR)
        return a;
    if (b.t == V_ERR)
        return b;
    if (x->op == OP_IN) {
        struct gs__cel_val k, v;
        if (a.t == V_VER && unhashable_lookup(c, gs__cel_kid(c->p, x, 1), &b)) {
            /* upstream panics there: the evaluation ends, no && or || absorbs it */
            c->fatal = "internal error: hash of unhashable type cel.Semver";
            return gs__cel_error(c->fatal);
        }
        if (b.t == V_LIST) {
            gs__cel_charge(c, b.n);
            for (uint32_t i = 0; entry_at(c, &b, i, &k, &v); i++)
                if (gs__cel_equal(c, &a, &v) == 1)
                    return vbool(true);
            return vbool(false);
        }
        gs__cel_charge(c, 1);
        if (b.t != V_MAP && b.t != V_DMAP)
            return no_overload();
        return vbool(map_find(c, &b, &a, &v, false) == 1);
    }
    charge_compare(c, &a, &b);
    if (x->op == OP_EQ || x->op == OP_NE) {
        int e = gs__cel_equal(c, &a, &b);
        if (e < 0 && x->op == OP_EQ)
            return no_overload();
        /* != is "not true": an equality that errs is unequal (cel-go's evalNe) */
        return vbool((e == 1) == (x->op == OP_EQ));
    }
    int o = gs__cel_order(&a, &b);
    if (o == 2)
        return no_overload();
    if (o == 3)
        return gs__cel_error("NaN values cannot be ordered");
    switch (x->op) {
    case OP_LT:
        return vbool(o < 0);
    case OP_LE:
        return vbool(o <= 0);
    case OP_GT:
        return vbool(o > 0);
    default:
        return vbool(o >= 0);
    }
}

/* the comprehension macros over a list's elements or a map's keys */
static struct gs__cel_val comprehension(struct gs__cel_ctx *c, const struct gs_cel_node *x)
{
    struct gs__cel_val r = kid(c, x, 0);
    if (r.t == V_ERR)
        return r;
    if (r.t != V_LIST && r.t != V_MAP && r.t != V_DMAP)
        return no_overload();
    uint32_t n = map_size(c, &r), count = 0, out = 0;
    struct gs__cel_val acc = vbool(x->op == OP_ALL), *list = NULL, key, val;
    bool lists = x->op == OP_MAPX || x->op == OP_MAPF || x->op == OP_FILTER;
    if (lists && !(list = gs__cel_alloc(c, sizeof(*list) * (n + 1u))))
        return gs__cel_error("out of memory");
    for (uint32_t i = 0; i < n && entry_at(c, &r, i, &key, &val) && !aborted(c); i++) {
        struct gs__cel_val *var = &c->vars[x->var];
        *var = r.t == V_LIST ? val : key;
        if (x->op == OP_ALL || x->op == OP_EXISTS) {
            bool dominant = x->op == OP_EXISTS;
            gs__cel_charge(c, dominant ? 4 : 3);
            if (acc.t == V_BOOL && acc.b == dominant)
                break;
            struct gs__cel_val p = kid(c, x, 1);
            if (p.t == V_BOOL && p.b == dominant)
                acc = p;
            else if (acc.t != V_ERR)
                acc = p.t == V_BOOL || p.t == V_ERR ? p : no_overload();
            continue;
        }
        gs__cel_charge(c, 2);
        struct gs__cel_val p = kid(c, x, 1);
        if (x->op == OP_MAPX) {
            if (p.t == V_ERR)
                return p;
            gs__cel_charge(c, 10);
            list[out++] = p;
            continue;
        }
        if (p.t == V_ERR)
            return p;
        if (p.t != V_BOOL)
            return no_overload();
        if (x->op == OP_EXISTS_ONE) {
            count += p.b;
            continue;
        }
        if (!p.b)
            continue;
        gs__cel_charge(c, 11);
        if (x->op == OP_FILTER) {
            list[out++] = *var;
            continue;
        }
        struct gs__cel_val f = kid(c, x, 2);
        if (f.t == V_ERR)
            return f;
        list[out++] = f;
    }
    gs__cel_charge(c, 1);
    if (x->op == OP_EXISTS_ONE)
        return vbool(count == 1);
    if (list)
        return (struct gs__cel_val){.t = V_LIST, .p = list, .n = out};
    if (acc.t == V_BOOL || acc.t == V_ERR)
        return acc;
    return no_overload();
}

static struct gs__cel_val call(struct gs__cel_ctx *c, const struct gs_cel_node *x)
{
    struct gs__cel_val a[4];
    if (x->flags & NF_FOLDED)
        return literal(c->p, x, x->var);
    for (int i = 0; i < x->nk && i < 4; i++) {
        a[i] = kid(c, x, i);
        if (a[i].t == V_ERR)
            return a[i];
    }
    if (x->fn == F_DYN)
        return a[0];
    return gs__cel_call(c, x, a, x->nk);
}

static struct gs__cel_val eval(struct gs__cel_ctx *c, int k)
{
    const struct gs_cel_node *x = &c->p->nodes[k];
    if (aborted(c))
        return gs__cel_error("aborted");
    switch (x->op) {
    case OP_BOOL:
    case OP_INT:
    case OP_UINT:
    case OP_DOUBLE:
    case OP_STR:
    case OP_NULL:
        return literal(c->p, x, x->op);
    case OP_DEVICE:
        gs__cel_charge(c, 1);
        return (struct gs__cel_val){.t = V_DEVICE};
    case OP_VAR:
        gs__cel_charge(c, 1);
        if (c->lazy[x->var] >= 0) {
            int init = c->lazy[x->var];
            c->lazy[x->var] = -1;
            c->vars[x->var] = eval(c, init);
        }
        return c->vars[x->var];
    case OP_SELECT: {
        struct gs__cel_val v = kid(c, x, 0);
        struct gs__cel_val key = gs__cel_str(c->p->pool + x->s, (size_t)x->slen);
        return member(c, &v, &key, x->fn);
    }
    case OP_HAS:
        return has(c, x);
    case OP_INDEX: {
        struct gs__cel_val v = kid(c, x, 0), key = kid(c, x, 1);
        return member(c, &v, &key, 0);
    }
    case OP_LIST:
    case OP_MAP:
        return build(c, x);
    case OP_CALL:
        return call(c, x);
    case OP_NOT:
    case OP_NEG:
        return unary(c, x);
    case OP_AND:
    case OP_OR:
    case OP_COND:
        return logic(c, x);
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_MOD:
        return arith(c, x);
    case OP_EQ:
    case OP_NE:
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
    case OP_IN:
        return relation(c, x);
    case OP_BIND: {
        int16_t saved = c->lazy[x->var];
        c->lazy[x->var] = c->p->kids[x->k];
        struct gs__cel_val v = kid(c, x, 1);
        c->lazy[x->var] = saved;
        return v;
    }
    default:
        return comprehension(c, x);
    }
}

/* A device whose version attribute is not semantic versioning errs on every selector. */
static int check_versions(struct gs__cel_ctx *c, struct gs_error *err)
{
    for (int k = 0; k < c->dev->nattrs; k++) {
        const struct gs_dra_attr *a = &c->dev->attrs[k];
        struct gs__cel_semver v;
        const char *why;
        if (!a->capacity && a->v.type == GS_DRA_VERSION &&
            gs__cel_semver_parse(a->v.s, strlen(a->v.s), NULL, &v, &why))
            return gs_error_set(err, GS_EINVAL,
                                "CEL runtime error: attribute %s: parse semantic version: %s",
                                a->name, why);
    }
    return 0;
}

/* the scalars of a context (its variables and message are written before they are read) */
static void ctx_init(struct gs__cel_ctx *c, const struct gs_cel *p, const struct gs_dra_device *d,
                     char *mem, size_t size)
{
    c->p = p;
    c->dev = d;
    c->mem = mem;
    c->used = 0;
    c->size = size;
    c->out_of_mem = false;
    c->fatal = NULL;
    c->cost = 0;
}

static int run_in(struct gs__cel_ctx *c, struct gs_error *err)
{
    for (int i = 0; i < GS_CEL_MAX_VARS; i++)
        c->lazy[i] = -1;
    struct gs__cel_val v = eval(c, c->p->root);
    if (c->out_of_mem)
        return GS_ENOSPC;
    if (c->fatal)
        return gs_error_set(err, GS_EINVAL, "CEL runtime error: %s", c->fatal);
    if (c->cost > GS_CEL_MAX_COST)
        return gs_error_set(err, GS_ENOSPC,
                            "CEL runtime error: operation cancelled: actual cost limit exceeded");
    if (v.t == V_ERR)
        return gs_error_set(err, GS_EINVAL, "CEL runtime error: %s", (const char *)v.p);
    if (v.t != V_BOOL)
        return gs_error_set(err, GS_EINVAL,
                            "CEL runtime error: the result is not a bool, it cannot select");
    return v.b;
}

int gs_cel_run(const struct gs_cel *p, const struct gs_dra_device *d, struct gs_error *err)
{
    if (p->refusal || p->root < 0 || p->root >= p->n)
        return gs_error_set(err, GS_EINVAL, "CEL: the expression did not compile");
    _Alignas(16) char stack[GS_CEL_EVAL_MEM];
    struct gs__cel_ctx c;
    ctx_init(&c, p, d, stack, sizeof(stack));
    int rc = check_versions(&c, err);
    if (rc)
        return rc;
    rc = run_in(&c, err);
    if (rc != GS_ENOSPC || !c.out_of_mem)
        return rc;
    struct gs__cel_ctx h;
    ctx_init(&h, p, d, malloc(GS_CEL_EVAL_MEM_MAX), GS_CEL_EVAL_MEM_MAX);
    if (!h.mem)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    rc = run_in(&h, err);
    free(h.mem);
    if (rc == GS_ENOSPC && h.out_of_mem)
        return gs_error_set(err, GS_ENOSPC,
                            "CEL runtime error: the evaluation needs more than %d bytes "
                            "(cost limit exceeded)",
                            GS_CEL_EVAL_MEM_MAX);
    return rc;
}

int gs_cel_eval(const struct gs_cel *p, const struct gs_dra_device *d)
{
    struct gs_error err;
    return gs_cel_run(p, d, &err) == 1;
}
