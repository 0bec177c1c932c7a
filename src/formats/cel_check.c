/* cel_check.c - the type checker of CEL (cel.h), as cel-go's checker types an expression in the
 * environment Kubernetes gives DRA selectors: each term gets a type (cel_internal.h's table),
 * calls and operators are resolved against their overloads (dyn and a device attribute's
 * "any" fit every parameter), list and map literals must be of one type, and the result must
 * be a bool or an attribute's value. It also folds constant conversions (int('1')) and checks
 * regular expression literals, whose errors upstream reports when it builds the program. The
 * parser (cel_parse.c) runs before it, the cost estimate (cel_cost.c) after it. */
#include "cel_internal.h"

#include "../base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct checker {
    struct gs_cel *p;
    struct gs_error *err;
    uint16_t vtype[GS_CEL_MAX_VARS];
};

#define INVALID(c, pos, ...) gs__cel_fail((c)->p, (c)->err, GS_CEL_INVALID, (int)(pos), __VA_ARGS__)
#define UNSUP(c, pos, ...)                                                                         \
    gs__cel_fail((c)->p, (c)->err, GS_CEL_UNSUPPORTED, (int)(pos), __VA_ARGS__)

static int kind(const struct gs_cel *p, int t)
{
    return p->types[t].kind;
}

/* The type of kind k with parameters a, b: an existing one or a new one; -1 when full. */
static int mktype(struct gs_cel *p, int k, int a, int b)
{
    for (int t = 0; t < p->ntypes; t++)
        if (p->types[t].kind == k && p->types[t].a == a && p->types[t].b == b)
            return t;
    if (p->ntypes >= GS_CEL_MAX_TYPES)
        return -1;
    p->types[p->ntypes] = (struct gs_cel_type){(uint8_t)k, (uint8_t)a, (uint8_t)b};
    return p->ntypes++;
}

static void init_types(struct gs_cel *p)
{
    static const uint8_t fixed[] = {
        [CT_DYN] = K_DYN,       [CT_ANY] = K_ANY,   [CT_FREE] = K_FREE,     [CT_ERR] = K_ERR,
        [CT_BOOL] = K_BOOL,     [CT_INT] = K_INT,   [CT_UINT] = K_UINT,     [CT_DOUBLE] = K_DOUBLE,
        [CT_STRING] = K_STRING, [CT_NULL] = K_NULL, [CT_SEMVER] = K_SEMVER, [CT_QTY] = K_QTY,
        [CT_DEVICE] = K_DEVICE,
    };
    p->ntypes = CT_FIXED;
    for (int t = 0; t < CT_FIXED; t++)
        p->types[t] = (struct gs_cel_type){t < CT_ATTR_IN ? fixed[t] : K_MAP, 0, 0};
    p->types[CT_ATTR_IN] = (struct gs_cel_type){K_MAP, CT_STRING, CT_ANY};
    p->types[CT_ATTR_OUT] = (struct gs_cel_type){K_MAP, CT_STRING, CT_ATTR_IN};
    p->types[CT_CAP_IN] = (struct gs_cel_type){K_MAP, CT_STRING, CT_QTY};
    p->types[CT_CAP_OUT] = (struct gs_cel_type){K_MAP, CT_STRING, CT_CAP_IN};
    p->types[CT_LIST_STR] = (struct gs_cel_type){K_LIST, CT_STRING, 0};
    p->types[CT_LIST_DYN] = (struct gs_cel_type){K_LIST, CT_DYN, 0};
    p->types[CT_MAP_DYN] = (struct gs_cel_type){K_MAP, CT_DYN, CT_DYN};
}

static bool wild(const struct gs_cel *p, int t)
{
    int k = kind(p, t);
    return k == K_DYN || k == K_ANY || k == K_FREE || k == K_ERR;
}

/* Whether a value of type u may be given where t is expected (either may be dyn-like). */
static bool assignable(const struct gs_cel *p, int t, int u)
{
    if (t == u || wild(p, t) || wild(p, u))
        return true;
    const struct gs_cel_type *a = &p->types[t], *b = &p->types[u];
    /* null fits an object type (the device, versions, quantities), as in cel-go */
    if ((a->kind == K_NULL && b->kind >= K_SEMVER && b->kind <= K_DEVICE) ||
        (b->kind == K_NULL && a->kind >= K_SEMVER && a->kind <= K_DEVICE))
        return true;
    if (a->kind != b->kind)
        return false;
    if (a->kind == K_LIST)
        return assignable(p, a->a, b->a);
    if (a->kind == K_MAP)
        return assignable(p, a->a, b->a) && assignable(p, a->b, b->b);
    return true;
}

/* The same type, a free element fitting anything (literals of one type). */
static bool same(const struct gs_cel *p, int t, int u)
{
    if (t == u || kind(p, t) == K_FREE || kind(p, u) == K_FREE)
        return true;
    const struct gs_cel_type *a = &p->types[t], *b = &p->types[u];
    if (a->kind != b->kind)
        return false;
    if (a->kind == K_LIST)
        return same(p, a->a, b->a);
    if (a->kind == K_MAP)
        return same(p, a->a, b->a) && same(p, a->b, b->b);
    return true;
}

/* The more general of two assignable types (dyn and any over the others). */
static int join(struct gs_cel *p, int t, int u)
{
    int kt = kind(p, t), ku = kind(p, u);
    if (ku == K_FREE || ku == K_ERR)
        return t;
    if (kt == K_FREE || kt == K_ERR)
        return u;
    /* as cel-go substitutes a type parameter: of dyn and any the second given, else any over
     * a concrete type, dyn over a concrete type */
    if ((kt == K_ANY && ku == K_DYN) || (kt == K_DYN && ku == K_ANY))
        return u;
    if (kt == K_ANY || kt == K_DYN)
        return t;
    if (ku == K_ANY || ku == K_DYN)
        return u;
    if (kt == K_LIST && ku == K_LIST) {
        int e = join(p, p->types[t].a, p->types[u].a);
        int r = mktype(p, K_LIST, e, 0);
        return r < 0 ? CT_DYN : r;
    }
    if (kt == K_MAP && ku == K_MAP) {
        int k = join(p, p->types[t].a, p->types[u].a), v = join(p, p->types[t].b, p->types[u].b);
        int r = mktype(p, K_MAP, k, v);
        return r < 0 ? CT_DYN : r;
    }
    return t;
}

const char *gs__cel_type_name(const struct gs_cel *p, int t, char *buf, size_t size)
{
    static const char *const names[] = {[K_DYN] = "dyn",
                                        [K_ANY] = "any",
                                        [K_FREE] = "_var0",
                                        [K_ERR] = "!error!",
                                        [K_BOOL] = "bool",
                                        [K_INT] = "int",
                                        [K_UINT] = "uint",
                                        [K_DOUBLE] = "double",
                                        [K_STRING] = "string",
                                        [K_NULL] = "null_type",
                                        [K_SEMVER] = "kubernetes.Semver",
                                        [K_QTY] = "kubernetes.Quantity",
                                        [K_DEVICE] = "kubernetes.DRADevice"};
    const struct gs_cel_type *x = &p->types[t];
    char a[96], b[96];
    if (x->kind == K_LIST)
        snprintf(buf, size, "list(%s)", gs__cel_type_name(p, x->a, a, sizeof(a)));
    else if (x->kind == K_MAP)
        snprintf(buf, size, "map(%s, %s)", gs__cel_type_name(p, x->a, a, sizeof(a)),
                 gs__cel_type_name(p, x->b, b, sizeof(b)));
    else
        snprintf(buf, size, "%s", names[x->kind]);
    return buf;
}

/* "(int, string)" or "string.(int)" for a member call */
static const char *arg_names(struct checker *c, const struct gs_cel_node *x, bool member, char *buf,
                             size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < x->nk && n + 2 < size; i++) {
        char t[128];
        gs__cel_type_name(c->p, gs__cel_kid(c->p, x, i)->type, t, sizeof(t));
        const char *sep = member && i == 0 ? "" : i > (member ? 1 : 0) ? ", " : "";
        n += (size_t)snprintf(buf + n, size - n, "%s%s%s%s", i == 0 && !member ? "(" : sep, t,
                              member && i == 0 ? ".(" : "", i + 1 == x->nk ? ")" : "");
    }
    if (x->nk == 0)
        snprintf(buf + n, size - n, "()");
    return buf;
}

static int no_overload(struct checker *c, const struct gs_cel_node *x, const char *fn, bool member)
{
    char args[400];
    return INVALID(c, x->pos, "found no matching overload for '%s' applied to '%s'", fn,
                   arg_names(c, x, member, args, sizeof(args)));
}

static int check(struct checker *c, int k);

static bool boolish(const struct gs_cel *p, int t)
{
    return t == CT_BOOL || wild(p, t);
}

static int check_kids(struct checker *c, const struct gs_cel_node *x, int from)
{
    for (int i = from; i < x->nk; i++) {
        int rc = check(c, c->p->kids[x->k + i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* the type of x.f; for the device's fields, the field's number (1..4) goes in x->fn */
static int select_type(struct checker *c, struct gs_cel_node *x)
{
    struct gs_cel *p = c->p;
    int t = gs__cel_kid(p, x, 0)->type;
    const char *f = p->pool + x->s;
    size_t n = (size_t)x->slen;
    char tn[128];
    switch (kind(p, t)) {
    case K_DEVICE: {
        static const struct {
            const char *name;
            uint8_t type;
        } fields[] = {{"driver", CT_STRING},
                      {"attributes", CT_ATTR_OUT},
                      {"capacity", CT_CAP_OUT},
                      {"allowMultipleAllocations", CT_BOOL}};
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
            if (strlen(fields[i].name) == n && memcmp(fields[i].name, f, n) == 0) {
                x->fn = (uint8_t)(i + 1);
                return fields[i].type;
            }
        return INVALID(c, x->pos, "undefined field '%.*s'", (int)n, f);
    }
    case K_MAP:
        return p->types[t].b;
    case K_DYN:
    case K_ANY:
    case K_FREE:
    case K_ERR:
        return CT_DYN;
    default:
        return INVALID(c, x->pos, "type '%s' does not support field selection",
                       gs__cel_type_name(p, t, tn, sizeof(tn)));
    }
}

static int literal_type(struct checker *c, struct gs_cel_node *x)
{
    struct gs_cel *p = c->p;
    int elem = CT_FREE, key = CT_FREE;
    bool map = x->op == OP_MAP;
    for (int i = 0; i < x->nk; i++) {
        const struct gs_cel_node *e = gs__cel_kid(p, x, i);
        bool is_key = map && i % 2 == 0;
        int *want = is_key ? &key : &elem;
        if (i < (map ? 2 : 1)) {
            *want = e->type;
            continue;
        }
        if (!same(p, *want, e->type)) {
            char a[128], b[128];
            return INVALID(c, e->pos, "expected type '%s' but found '%s'",
                           gs__cel_type_name(p, *want, a, sizeof(a)),
                           gs__cel_type_name(p, e->type, b, sizeof(b)));
        }
        *want = join(p, *want, e->type);
    }
    int t = map ? mktype(p, K_MAP, key, elem) : mktype(p, K_LIST, elem, 0);
    return t < 0 ? UNSUP(c, x->pos, "more than %d distinct types", GS_CEL_MAX_TYPES) : t;
}

static int index_type(struct checker *c, const struct gs_cel_node *x)
{
    struct gs_cel *p = c->p;
    int t = gs__cel_kid(p, x, 0)->type, i = gs__cel_kid(p, x, 1)->type;
    if (wild(p, t))
        return CT_DYN;
    if (kind(p, t) == K_LIST && assignable(p, CT_INT, i))
        return p->types[t].a;
    if (kind(p, t) == K_MAP && assignable(p, p->types[t].a, i))
        return p->types[t].b;
    return no_overload(c, x, "_[_]", false);
}

/* numeric and string rows of the arithmetic operators; 0 when none fits */
static int arith_type(struct checker *c, const struct gs_cel_node *x)
{
    struct gs_cel *p = c->p;
    int a = gs__cel_kid(p, x, 0)->type, b = gs__cel_kid(p, x, 1)->type;
    static const uint8_t add[] = {CT_INT, CT_UINT, CT_DOUBLE, CT_STRING};
    int nrows = x->op == OP_ADD ? 4 : x->op == OP_MOD ? 2 : 3;
    int res = -1;
    bool dyn = false;
    for (int r = 0; r < nrows; r++) {
        if (assignable(p, add[r], a) && assignable(p, add[r], b)) {
            dyn |= res >= 0 && res != add[r];
            res = add[r];
        }
    }
    if (x->op == OP_ADD && (kind(p, a) == K_LIST || wild(p, a)) &&
        (kind(p, b) == K_LIST || wild(p, b)) && assignable(p, a, b) &&
        !(wild(p, a) && wild(p, b))) {
        int l = join(p, kind(p, a) == K_LIST ? a : b, kind(p, b) == K_LIST ? b : a);
        dyn |= res >= 0;
        res = l;
    }
    /* timestamps and durations: upstream's other rows, which only dyn operands (and null)
     * reach */
    bool tsrow = x->op == OP_ADD || x->op == OP_SUB;
    if ((wild(p, a) && wild(p, b)) ||
        (tsrow && (wild(p, a) || a == CT_NULL) && (wild(p, b) || b == CT_NULL)))
        dyn = true;
    if (res < 0 && !dyn) {
        static const char *const names[] = {[OP_ADD] = "_+_",
                                            [OP_SUB] = "_-_",
                                            [OP_MUL] = "_*_",
                                            [OP_DIV] = "_/_",
                                            [OP_MOD] = "_%_"};
        return no_overload(c, x, names[x->op], false);
    }
    return dyn ? CT_DYN : res;
}

static bool orderable(const struct gs_cel *p, int a, int b)
{
    static const uint8_t num[] = {CT_INT, CT_UINT, CT_DOUBLE};
    /* upstream's timestamp and duration rows take dyn and null */
    if ((wild(p, a) || a == CT_NULL) && (wild(p, b) || b == CT_NULL))
        return true;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (assignable(p, num[i], a) && assignable(p, num[j], b))
                return true;
    return (assignable(p, CT_STRING, a) && assignable(p, CT_STRING, b)) ||
           (assignable(p, CT_BOOL, a) && assignable(p, CT_BOOL, b));
}

static int relation_type(struct checker *c, const struct gs_cel_node *x)
{
    struct gs_cel *p = c->p;
    int a = gs__cel_kid(p, x, 0)->type, b = gs__cel_kid(p, x, 1)->type;
    static const char *const names[] = {
        [OP_EQ] = "_==_", [OP_NE] = "_!=_", [OP_LT] = "_<_", [OP_LE] = "_<=_",
        [OP_GT] = "_>_",  [OP_GE] = "_>=_", [OP_IN] = "@in"};
    bool ok;
    if (x->op == OP_EQ || x->op == OP_NE)
        ok = assignable(p, a, b);
    else if (x->op == OP_IN)
        ok = wild(p, b) || (kind(p, b) == K_LIST && assignable(p, p->types[b].a, a)) ||
             (kind(p, b) == K_MAP && assignable(p, p->types[b].a, a));
    else
        ok = orderable(p, a, b);
    return ok ? CT_BOOL : no_overload(c, x, names[x->op], false);
}

/* The list library's overloads are per element type: sum of int, uint or double; min, max and
 * isSorted of those, bool and string; indexOf and lastIndexOf of the element's type. The
 * result type, or -1 when no overload fits the list. */
static int list_fn_type(struct checker *c, const struct gs_cel_node *x, int fn, int res)
{
    struct gs_cel *p = c->p;
    int e = p->types[gs__cel_kid(p, x, 0)->type].a;
    int ek = kind(p, e);
    bool num = ek == K_INT || ek == K_UINT || ek == K_DOUBLE;
    switch (fn) {
    case F_INDEXOF:
    case F_LASTINDEXOF:
        return x->nk == 2 && assignable(p, e, gs__cel_kid(p, x, 1)->type) ? CT_INT : -1;
    case F_SUM:
        return wild(p, e) ? CT_DYN : num ? e : -1;
    case F_MIN:
    case F_MAX:
        return wild(p, e) ? CT_DYN : num || ek == K_BOOL || ek == K_STRING ? e : -1;
    case F_ISSORTED:
        return wild(p, e) || num || ek == K_BOOL || ek == K_STRING ? CT_BOOL : -1;
    default:
        return res;
    }
}

/* the overloads of a call: resolve, type, fold */
static int call_type(struct checker *c, int k)
{
    struct gs_cel *p = c->p;
    struct gs_cel_node *x = &p->nodes[k];
    const char *name = p->pool + x->s;
    size_t n = (size_t)x->slen;
    bool member = x->flags & NF_MEMBER, named = false;
    int res = -1, fn = 0;
    for (size_t o = 0; o < gs__cel_noverloads; o++) {
        const struct gs__cel_overload *ov = &gs__cel_overloads[o];
        if (strlen(ov->name) != n || memcmp(ov->name, name, n) != 0)
            continue;
        named = true;
        if (ov->member != member || ov->nargs != x->nk)
            continue;
        bool fits = true;
        for (int i = 0; i < x->nk && fits; i++)
            fits = assignable(p, ov->param[i], gs__cel_kid(p, x, i)->type);
        if (!fits)
            continue;
        fn = ov->fn;
        res = res < 0 || res == ov->result ? ov->result : CT_DYN;
    }
    char fname[80];
    snprintf(fname, sizeof(fname), "%.*s", (int)(n < 70 ? n : 70), name);
    if (!named)
        return INVALID(c, x->pos, "undeclared reference to '%s'", fname);
    if (res >= 0 && member && kind(p, gs__cel_kid(p, x, 0)->type) == K_LIST)
        res = list_fn_type(c, x, fn, res);
    if (res < 0)
        return no_overload(c, x, fname, member);
    x->fn = (uint8_t)fn;
    return res;
}

static int range_var(struct checker *c, const struct gs_cel_node *x)
{
    struct gs_cel *p = c->p;
    const struct gs_cel_node *r = gs__cel_kid(p, x, 0);
    int t = r->type;
    char tn[128];
    switch (kind(p, t)) {
    case K_LIST:
        return p->types[t].a;
    case K_MAP:
        return p->types[t].a;
    case K_DYN:
    case K_FREE:
    case K_ERR:
        return CT_DYN;
    default:
        return INVALID(c, r->pos,
                       "expression of type '%s' cannot be range of a comprehension (must be "
                       "list, map, or dynamic)",
                       gs__cel_type_name(p, t, tn, sizeof(tn)));
    }
}

static int macro_type(struct checker *c, int k)
{
    struct gs_cel *p = c->p;
    struct gs_cel_node *x = &p->nodes[k];
    int rc = check(c, p->kids[x->k]);
    if (rc < 0)
        return rc;
    if (x->op == OP_BIND) {
        c->vtype[x->var] = gs__cel_kid(p, x, 0)->type;
        rc = check(c, p->kids[x->k + 1]);
        return rc < 0 ? rc : gs__cel_kid(p, x, 1)->type;
    }
    int v = range_var(c, x);
    if (v < 0)
        return v;
    c->vtype[x->var] = (uint16_t)v;
    if ((rc = check_kids(c, x, 1)))
        return rc;
    bool pred = x->op != OP_MAPX;
    const struct gs_cel_node *e = gs__cel_kid(p, x, 1);
    if (pred && !boolish(p, e->type)) {
        char tn[128];
        return INVALID(c, e->pos, "expected type 'bool' but found '%s'",
                       gs__cel_type_name(p, e->type, tn, sizeof(tn)));
    }
    int t;
    switch (x->op) {
    case OP_MAPX:
        t = mktype(p, K_LIST, e->type, 0);
        break;
    case OP_MAPF:
        t = mktype(p, K_LIST, gs__cel_kid(p, x, 2)->type, 0);
        break;
    case OP_FILTER:
        t = mktype(p, K_LIST, v, 0);
        break;
    default:
        return CT_BOOL;
    }
    return t < 0 ? UNSUP(c, x->pos, "more than %d distinct types", GS_CEL_MAX_TYPES) : t;
}

static int logic_type(struct checker *c, const struct gs_cel_node *x)
{
    struct gs_cel *p = c->p;
    char tn[128];
    if (x->op == OP_NOT || x->op == OP_NEG) {
        int t = gs__cel_kid(p, x, 0)->type;
        if (x->op == OP_NOT)
            return boolish(p, t) ? CT_BOOL : no_overload(c, x, "!_", false);
        if (wild(p, t))
            return CT_DYN;
        return t == CT_INT || t == CT_DOUBLE ? t : no_overload(c, x, "-_", false);
    }
    if (x->op == OP_COND) {
        int a = gs__cel_kid(p, x, 1)->type, b = gs__cel_kid(p, x, 2)->type;
        if (!boolish(p, gs__cel_kid(p, x, 0)->type) || !assignable(p, a, b))
            return no_overload(c, x, "_?_:_", false);
        return join(p, a, b);
    }
    for (int i = 0; i < 2; i++) {
        const struct gs_cel_node *e = gs__cel_kid(p, x, i);
        if (!boolish(p, e->type))
            return INVALID(c, e->pos, "expected type 'bool' but found '%s'",
                           gs__cel_type_name(p, e->type, tn, sizeof(tn)));
    }
    return CT_BOOL;
}

int gs__cel_fold(struct gs_cel *p, int k, const char **why);
int gs__cel_check_regex(struct gs_cel *p, int k, struct gs_error *err);

static int check(struct checker *c, int k)
{
    struct gs_cel *p = c->p;
    struct gs_cel_node *x = &p->nodes[k];
    static const uint8_t lit[] = {
        [OP_BOOL] = CT_BOOL,  [OP_INT] = CT_INT,   [OP_UINT] = CT_UINT,    [OP_DOUBLE] = CT_DOUBLE,
        [OP_STR] = CT_STRING, [OP_NULL] = CT_NULL, [OP_DEVICE] = CT_DEVICE};
    int t, rc;
    if (x->op >= OP_ALL && x->op <= OP_BIND) {
        t = macro_type(c, k);
    } else if (x->op <= OP_DEVICE) {
        t = lit[x->op];
    } else if (x->op == OP_VAR) {
        t = c->vtype[x->var];
    } else if ((rc = check_kids(c, x, 0))) {
        return rc;
    } else {
        switch (x->op) {
        case OP_SELECT:
            t = select_type(c, x);
            break;
        case OP_HAS:
            t = select_type(c, x);
            t = t < 0 ? t : CT_BOOL;
            break;
        case OP_INDEX:
            t = index_type(c, x);
            break;
        case OP_LIST:
        case OP_MAP:
            t = literal_type(c, x);
            break;
        case OP_CALL:
            t = call_type(c, k);
            break;
        case OP_ADD:
        case OP_SUB:
        case OP_MUL:
        case OP_DIV:
        case OP_MOD:
            t = arith_type(c, x);
            break;
        case OP_EQ:
        case OP_NE:
        case OP_LT:
        case OP_LE:
        case OP_GT:
        case OP_GE:
        case OP_IN:
            t = relation_type(c, x);
            break;
        default:
            t = logic_type(c, x);
            break;
        }
    }
    if (t < 0)
        return t;
    x->type = (uint16_t)t;
    return 0;
}

/* a constant as upstream's planner sees one: a literal, a folded conversion, a list or map of
 * constants */
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

/* Conversions of constants are folded, and regex literals compiled, where upstream's program
 * planner does (errors there are errors of the program, not of an evaluation); a constant
 * index must be a scalar. Post-order. */
static int fold(struct checker *c, int k)
{
    struct gs_cel *p = c->p;
    struct gs_cel_node *x = &p->nodes[k];
    for (int i = 0; i < x->nk; i++) {
        int rc = fold(c, p->kids[x->k + i]);
        if (rc)
            return rc;
    }
    if (x->op == OP_INDEX) {
        const struct gs_cel_node *i = gs__cel_kid(p, x, 1);
        while (i->op == OP_CALL && i->fn == F_DYN && !(i->flags & NF_FOLDED) &&
               constant(p, gs__cel_kid(p, i, 0)))
            i = gs__cel_kid(p, i, 0); /* dyn() of a constant is folded too */
        int op = i->op == OP_CALL ? i->var : i->op;
        if (constant(p, i) && (op == OP_NULL || op == OP_LIST || op == OP_MAP))
            return INVALID(c, i->pos, "invalid qualifier type");
        return 0;
    }
    if (x->op != OP_CALL)
        return 0;
    if (x->fn == F_MATCHES)
        return gs__cel_check_regex(p, k, c->err);
    const char *why = NULL;
    int rc = gs__cel_fold(p, k, &why);
    if (rc == GS_ENOSPC)
        return UNSUP(c, x->pos, "%s", why);
    if (rc)
        return INVALID(c, x->pos, "%s", why);
    return 0;
}

int gs__cel_check(struct gs_cel *p, struct gs_error *err)
{
    struct checker c = {.p = p, .err = err};
    init_types(p);
    int rc = check(&c, p->root);
    if (rc)
        return rc;
    int t = p->nodes[p->root].type;
    if (t != CT_BOOL && t != CT_ANY) {
        char tn[128];
        return INVALID(&c, -1, "must evaluate to bool or the unknown type, not %s",
                       gs__cel_type_name(p, t, tn, sizeof(tn)));
    }
    return fold(&c, p->root);
}
