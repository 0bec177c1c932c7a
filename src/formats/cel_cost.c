/* cel_cost.c - the worst-case cost of a checked CEL expression (cel.h), estimated as upstream
 * estimates a DRA selector when the API server validates it: cel-go's checker.Cost over the
 * unfolded terms with the apiserver library's CostEstimator and the DRA size estimator (the
 * device's strings and maps have known maximum sizes: driver 63 characters, attribute values
 * 64, at most 32 domains and 32 attributes or capacities, domains 63 and names 32 characters).
 * Only the maximum of each estimate is kept; arithmetic saturates at UINT64_MAX, so an unknown
 * size makes a size-dependent cost "unbounded" exactly where upstream's does. It runs after
 * cel_check.c, which gives every term its type. */
#include "cel_internal.h"

#include <math.h>
#include <string.h>

#define UNKNOWN UINT64_MAX

/* where a term's value comes from in the device, for its maximum size */
enum {
    P_NONE = 0,
    P_DEAD, /* a path through the device that the size estimator cannot follow */
    P_DEVICE,
    P_DRIVER,
    P_MULTI,
    P_ATTRS,
    P_ATTRS_D,
    P_ATTR_V,
    P_CAPS,
    P_CAPS_D,
    P_CAP_V,
    P_KEY_DOMAIN,
    P_KEY_ID
};

struct est {
    uint64_t cost, size; /* size: UNKNOWN when not known */
    bool entry;          /* the element (value) and key sizes of a literal container */
    uint64_t esize, ksize;
    uint8_t path;
};

struct coster {
    const struct gs_cel *p;
    struct est var[GS_CEL_MAX_VARS];
};

static uint64_t add(uint64_t a, uint64_t b)
{
    return a > UNKNOWN - b ? UNKNOWN : a + b;
}

static uint64_t mul(uint64_t a, uint64_t b)
{
    return b && a > UNKNOWN / b ? UNKNOWN : a * b;
}

/* ceil(x * f), saturating */
static uint64_t factor(uint64_t x, double f)
{
    double v = (double)x;
    if (v > 0 && v > (double)UNKNOWN / f)
        return UNKNOWN;
    double c = ceil(v * f);
    return c >= 18446744073709551616.0 ? UNKNOWN : (uint64_t)c;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t path_size(int path)
{
    static const uint64_t sizes[] = {
        [P_NONE] = 0,   [P_DEAD] = 0,        [P_DEVICE] = 0,  [P_DRIVER] = 63, [P_MULTI] = 1,
        [P_ATTRS] = 32, [P_ATTRS_D] = 32,    [P_ATTR_V] = 64, [P_CAPS] = 32,   [P_CAPS_D] = 32,
        [P_CAP_V] = 0,  [P_KEY_DOMAIN] = 63, [P_KEY_ID] = 32};
    return sizes[path];
}

static bool scalar(const struct gs_cel *p, int t)
{
    int k = p->types[t].kind;
    return k == K_BOOL || k == K_INT || k == K_UINT || k == K_DOUBLE;
}

/* a term's size when nothing computed one: its path, or 1 for a scalar type */
static void fallback_size(const struct gs_cel *p, const struct gs_cel_node *x, struct est *e)
{
    if (e->path > P_DEVICE)
        e->size = path_size(e->path);
    else if (scalar(p, x->type))
        e->size = 1;
    else
        e->size = UNKNOWN;
}

static struct est cost(struct coster *c, int k);

static struct est kid(struct coster *c, const struct gs_cel_node *x, int i)
{
    return cost(c, c->p->kids[x->k + i]);
}

static int select_path(int from, bool index, const char *f, size_t n)
{
    switch (from) {
    case P_DEVICE:
        if (index)
            return P_DEAD;
        if (n == 6 && memcmp(f, "driver", 6) == 0)
            return P_DRIVER;
        if (n == 10 && memcmp(f, "attributes", 10) == 0)
            return P_ATTRS;
        if (n == 8 && memcmp(f, "capacity", 8) == 0)
            return P_CAPS;
        return n == 24 ? P_MULTI : P_DEAD;
    case P_ATTRS:
        return index ? P_ATTRS_D : P_DEAD;
    case P_ATTRS_D:
        return P_ATTR_V;
    case P_CAPS:
        return index ? P_CAPS_D : P_DEAD;
    case P_CAPS_D:
        /* a quantity's declared size is 0; by a field name the estimator cannot follow it */
        return index ? P_CAP_V : P_DEAD;
    case P_NONE:
        return P_NONE;
    default:
        return P_DEAD;
    }
}

static struct est literal(const struct gs_cel *p, const struct gs_cel_node *x)
{
    struct est e = {0};
    if (x->op == OP_STR)
        e.size = gs__cel_utf8_len(p->pool + x->s, (size_t)x->slen);
    else
        e.size = 1;
    return e;
}

static struct est container(struct coster *c, const struct gs_cel_node *x)
{
    bool map = x->op == OP_MAP;
    struct est e = {.entry = true, .size = map ? x->nk / 2u : x->nk};
    for (int i = 0; i < x->nk; i++) {
        struct est a = kid(c, x, i);
        e.cost = add(e.cost, a.cost);
        if (map && i % 2 == 0)
            e.ksize = max64(e.ksize, a.size);
        else
            e.esize = max64(e.esize, a.size);
    }
    if (!map)
        e.ksize = 1;
    e.cost = add(e.cost, map ? 30 : 10);
    return e;
}

/* the size-dependent cost of == != < <= > >= on strings (and on anything of unknown size) */
static uint64_t compare_cost(const struct est *a, const struct est *b)
{
    return factor(a->size < b->size ? a->size : b->size, 0.1);
}

static struct est relation(struct coster *c, const struct gs_cel_node *x)
{
    const struct gs_cel *p = c->p;
    struct est a = kid(c, x, 0), b = kid(c, x, 1), e = {0};
    e.cost = add(a.cost, b.cost);
    int ta = gs__cel_kid(p, x, 0)->type, tb = gs__cel_kid(p, x, 1)->type;
    int ka = p->types[ta].kind, kb = p->types[tb].kind;
    bool strings = (ka == K_STRING || ka == K_DYN || ka == K_ANY) &&
                   (kb == K_STRING || kb == K_DYN || kb == K_ANY);
    uint64_t own;
    switch (x->op) {
    case OP_IN:
        own = kb == K_LIST || kb == K_DYN || kb == K_ANY ? b.size : 1;
        break;
    case OP_EQ:
        own = ta == tb && (ka == K_QTY || ka == K_SEMVER) ? 1 : compare_cost(&a, &b);
        break;
    case OP_NE:
        own = compare_cost(&a, &b);
        break;
    default:
        own = strings ? max64(1, compare_cost(&a, &b)) : 1;
        break;
    }
    e.cost = add(e.cost, own);
    e.size = 1;
    return e;
}

static struct est arith(struct coster *c, const struct gs_cel_node *x)
{
    const struct gs_cel *p = c->p;
    struct est a = kid(c, x, 0), b = kid(c, x, 1), e = {0};
    e.cost = add(a.cost, b.cost);
    int k = p->types[x->type].kind;
    int ka = p->types[gs__cel_kid(p, x, 0)->type].kind,
        kb = p->types[gs__cel_kid(p, x, 1)->type].kind;
    bool concat = ka != K_NULL && kb != K_NULL; /* null + x: only timestamps' rows */
    if (x->op == OP_ADD && concat && (k == K_STRING || k == K_LIST || k == K_DYN)) {
        e.size = add(a.size, b.size);
        uint64_t own = k == K_LIST ? 1 : factor(e.size, 0.1);
        e.cost = add(e.cost, k == K_DYN ? max64(1, own) : own);
        if (k == K_LIST && a.entry && b.entry) {
            e.entry = true;
            e.esize = max64(a.esize, b.esize);
            e.ksize = 1;
        }
        return e;
    }
    e.cost = add(e.cost, 1);
    fallback_size(p, x, &e);
    return e;
}

/* upstream's estimate of a function's own cost, and the size of its result */
static uint64_t call_cost(const struct est *a, int n, const struct gs_cel_node *x, uint64_t *size,
                          const struct gs_cel *p)
{
    const struct gs_cel_node *k1 = n > 1 ? gs__cel_kid(p, x, 1) : NULL;
    switch (x->fn) {
    case F_CONTAINS:
        return mul(factor(a[0].size, 0.1), factor(a[1].size, 0.1));
    case F_STARTS:
    case F_ENDS:
        return factor(a[1].size, 0.1);
    case F_MATCHES:
        return mul(factor(add(a[0].size, 1), 0.1), factor(a[1].size, 0.25));
    case F_INDEXOF:
    case F_LASTINDEXOF:
    case F_SUM:
    case F_MIN:
    case F_MAX:
    case F_ISSORTED: {
        /* apiserver's estimate: a list costs 1 an element (strings: unbounded, their size is
         * never known); anything else is costed as a string */
        const struct gs_cel_type *t = &p->types[gs__cel_kid(p, x, 0)->type];
        if (t->kind != K_LIST)
            return factor(a[0].size, 0.1);
        int ek = p->types[t->a].kind;
        return mul(a[0].size, ek == K_STRING ? UNKNOWN : 1);
    }
    case F_LOWER:
    case F_UPPER:
    case F_SUBSTRING:
    case F_TRIM:
        *size = a[0].size;
        return factor(a[0].size, 0.1);
    case F_REPLACE: {
        uint64_t sz = a[0].size, with = a[2].size;
        uint64_t old_min = k1 && k1->op == OP_STR ? a[1].size : 0, count, kept = 0;
        if (old_min == 0) {
            count = sz == UNKNOWN ? sz : sz + 1;
            kept = sz;
        } else if (with <= old_min) {
            count = 0;
            kept = sz;
        } else {
            count = (uint64_t)ceil((double)sz / (double)old_min);
        }
        *size = add(mul(count, with), kept);
        return factor(sz, 0.2);
    }
    case F_SPLIT: {
        const struct gs_cel_node *lim = n > 2 ? gs__cel_kid(p, x, 2) : NULL;
        *size = lim && lim->op == OP_INT ? (uint64_t)lim->v.i : a[0].size;
        return factor(a[0].size, 0.2);
    }
    case F_JOIN: {
        /* the elements' size is never known: upstream's estimate is unbounded unless the
         * list is empty, or the target is not typed as a list (dyn) */
        bool typed = p->types[gs__cel_kid(p, x, 0)->type].kind == K_LIST;
        uint64_t sz = typed ? mul(a[0].size, UNKNOWN) : 0;
        if (n > 1)
            sz = add(sz, mul(a[1].size, a[0].size ? a[0].size - 1 : 0));
        *size = sz;
        return factor(sz, 0.1);
    }
    case F_SEMVER:
    case F_ISSEMVER:
    case F_QUANTITY:
    case F_ISQUANTITY:
        return factor(a[0].size, 0.1);
    default:
        return 1;
    }
}

static struct est call(struct coster *c, const struct gs_cel_node *x)
{
    struct est a[4] = {0}, e = {0};
    for (int i = 0; i < x->nk && i < 4; i++) {
        a[i] = kid(c, x, i);
        e.cost = add(e.cost, a[i].cost);
    }
    if (x->fn == F_DYN) {
        e = a[0];
        e.cost = add(e.cost, 1);
        e.path = P_NONE;
        return e;
    }
    uint64_t size = 0;
    bool sized = false;
    uint64_t own = call_cost(a, x->nk, x, &size, c->p);
    sized = x->fn == F_LOWER || x->fn == F_UPPER || x->fn == F_SUBSTRING || x->fn == F_TRIM ||
            x->fn == F_REPLACE || x->fn == F_SPLIT || x->fn == F_JOIN;
    e.cost = add(e.cost, own);
    if (sized)
        e.size = size;
    else
        fallback_size(c->p, x, &e);
    return e;
}

static struct est member(struct coster *c, const struct gs_cel_node *x)
{
    const struct gs_cel *p = c->p;
    struct est o = kid(c, x, 0), e = {0};
    bool index = x->op == OP_INDEX;
    int kind = p->types[gs__cel_kid(p, x, 0)->type].kind;
    e.cost = o.cost;
    if (x->op == OP_HAS) {
        e.size = 1;
        return e;
    }
    if (index) {
        struct est i = kid(c, x, 1);
        e.cost = add(add(e.cost, i.cost), 1);
    } else if (kind == K_MAP || kind == K_DEVICE || kind == K_FREE) {
        e.cost = add(e.cost, 1);
    }
    e.path = (uint8_t)select_path(o.path, index, p->pool + x->s, (size_t)x->slen);
    if (index && o.entry) {
        e.size = o.esize;
        return e;
    }
    fallback_size(p, x, &e);
    return e;
}

static struct est logic(struct coster *c, const struct gs_cel_node *x)
{
    struct est e = {0};
    if (x->op == OP_COND) {
        struct est a = kid(c, x, 0), t = kid(c, x, 1), f = kid(c, x, 2);
        e.cost = add(a.cost, max64(t.cost, f.cost));
        e.size = max64(t.size, f.size);
        if (t.entry && f.entry) {
            e.entry = true;
            e.esize = max64(t.esize, f.esize);
            e.ksize = max64(t.ksize, f.ksize);
        }
        return e;
    }
    struct est a = kid(c, x, 0);
    e.cost = a.cost;
    if (x->op == OP_AND || x->op == OP_OR)
        e.cost = add(e.cost, kid(c, x, 1).cost);
    else
        e.cost = add(e.cost, 1);
    fallback_size(c->p, x, &e);
    return e;
}

/* the macros as cel-go expands them: range + init + result + |range| x (condition + step) */
static struct est comprehension(struct coster *c, const struct gs_cel_node *x)
{
    const struct gs_cel *p = c->p;
    struct est r = kid(c, x, 0), e = {0};
    if (x->op == OP_BIND) {
        c->var[x->var] = r;
        struct est b = kid(c, x, 1);
        b.cost = add(add(b.cost, r.cost), 10);
        /* upstream sizes the result once the variable is out of scope: the bare variable has
         * no size then */
        if (gs__cel_kid(p, x, 1)->op == OP_VAR && gs__cel_kid(p, x, 1)->var == x->var) {
            b.entry = false;
            fallback_size(p, gs__cel_kid(p, x, 1), &b);
        }
        b.path = P_NONE; /* upstream keeps no path for a bind */
        return b;
    }
    int rk = p->types[gs__cel_kid(p, x, 0)->type].kind;
    struct est *v = &c->var[x->var];
    memset(v, 0, sizeof(*v));
    bool list = rk == K_LIST;
    v->path = r.path == P_NONE                            ? P_NONE
              : list                                      ? P_DEAD
              : r.path == P_ATTRS || r.path == P_CAPS     ? P_KEY_DOMAIN
              : r.path == P_ATTRS_D || r.path == P_CAPS_D ? P_KEY_ID
                                                          : P_DEAD;
    if (v->path > P_DEVICE)
        v->size = path_size(v->path);
    else if ((list || rk == K_MAP) && scalar(p, p->types[gs__cel_kid(p, x, 0)->type].a))
        v->size = 1;
    else if (r.entry)
        v->size = list ? r.esize : r.ksize;
    else
        v->size = UNKNOWN;
    struct est pr = kid(c, x, 1);
    uint64_t step, cond, init = 0, result = 1;
    switch (x->op) {
    case OP_ALL:
        cond = 2;
        step = add(pr.cost, 1);
        break;
    case OP_EXISTS:
        cond = 3;
        step = add(pr.cost, 1);
        break;
    case OP_EXISTS_ONE:
        cond = 0;
        step = add(pr.cost, 2);
        result = 2;
        break;
    case OP_MAPX:
        cond = 0;
        init = 10;
        step = add(pr.cost, 12);
        break;
    case OP_MAPF:
        cond = 0;
        init = 10;
        step = add(pr.cost, add(kid(c, x, 2).cost, 12));
        break;
    default: /* filter */
        cond = 0;
        init = 10;
        step = add(pr.cost, 13);
        break;
    }
    e.cost = add(add(add(r.cost, init), result), mul(r.size, add(cond, step)));
    e.size = init ? r.size : 1;
    return e;
}

static struct est cost(struct coster *c, int k)
{
    const struct gs_cel *p = c->p;
    const struct gs_cel_node *x = &p->nodes[k];
    struct est e = {0};
    switch (x->op) {
    case OP_BOOL:
    case OP_INT:
    case OP_UINT:
    case OP_DOUBLE:
    case OP_STR:
    case OP_NULL:
        return literal(p, x);
    case OP_DEVICE:
        e.cost = 1;
        e.path = P_DEVICE;
        e.size = 0; /* the device object's declared maximum size */
        return e;
    case OP_VAR:
        e = c->var[x->var];
        e.cost = 1;
        return e;
    case OP_SELECT:
    case OP_HAS:
    case OP_INDEX:
        return member(c, x);
    case OP_LIST:
    case OP_MAP:
        return container(c, x);
    case OP_CALL:
        return call(c, x);
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
    case OP_NOT:
    case OP_NEG:
    case OP_AND:
    case OP_OR:
    case OP_COND:
        return logic(c, x);
    default:
        return comprehension(c, x);
    }
}

uint64_t gs__cel_estimate(const struct gs_cel *p)
{
    struct coster c = {.p = p};
    return cost(&c, p->root).cost;
}
