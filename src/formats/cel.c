/* cel.c - a bounded compiler and evaluator of the CEL subset of DRA device selectors (see
 * cel.h): a lexer over (ptr, len), a recursive-descent parser into a fixed node array, and an
 * evaluator over a core/dra.h device. formats/draobj.c compiles the selectors of DeviceClasses
 * and ResourceClaims with it; core/dra.c never sees CEL, only the devices it admits. */
#include "cel.h"

#include "../base/error.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum {
    OP_BOOL = 1, /* literal: i */
    OP_INT,      /* literal: i */
    OP_STR,      /* literal: s */
    OP_QTY,      /* quantity('..'): q */
    OP_DRIVER,   /* device.driver */
    OP_ATTR,     /* device.attributes['s'].n */
    OP_CAP,      /* device.capacity['s'].n */
    OP_CMPTO,    /* a.compareTo(b) */
    OP_QGT,      /* a.isGreaterThan(b) */
    OP_QLT,      /* a.isLessThan(b) */
    OP_NOT,
    OP_AND,
    OP_OR,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_IN, /* a in [list] */
    OP_LIST
};

enum tok {
    T_END = 0,
    T_IDENT,
    T_STR,
    T_INT,
    T_LP,
    T_RP,
    T_LB,
    T_RB,
    T_DOT,
    T_COMMA,
    T_NOT,
    T_AND,
    T_OR,
    T_EQ,
    T_NE,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_MINUS,
    T_OTHER /* an operator outside the subset */
};

struct parser {
    const char *src;
    size_t len, pos;
    struct gs_cel *p;
    struct gs_error *err;
    int depth;
    /* the current token */
    enum tok t;
    size_t tpos, tlen;
    int32_t ts, tslen; /* T_STR: unescaped into the pool */
    int64_t ti;
};

static int fail(struct parser *ps, size_t pos, bool unsupported, const char *what)
{
    return gs_error_set(ps->err, GS_EINVAL, "%s: %s at position %zu",
                        unsupported ? "unsupported CEL" : "CEL syntax error", what, pos);
}

static bool ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9');
}

/* A string literal at ps->pos (its quote), unescaped into the pool. */
static int lex_string(struct parser *ps)
{
    const char *s = ps->src;
    char q = s[ps->pos];
    size_t start = ps->pos;
    if (ps->pos + 2 < ps->len && s[ps->pos + 1] == q && s[ps->pos + 2] == q)
        return fail(ps, start, true, "triple-quoted string");
    ps->pos++;
    int32_t at = ps->p->npool, n = 0;
    for (;;) {
        if (ps->pos >= ps->len)
            return fail(ps, start, false, "unterminated string");
        char c = s[ps->pos++];
        if (c == q)
            break;
        if (c == '\\') {
            if (ps->pos >= ps->len)
                return fail(ps, start, false, "unterminated string");
            c = s[ps->pos++];
            if (c != '\\' && c != '\'' && c != '"')
                return fail(ps, ps->pos - 2, true, "escape sequence in a string");
        }
        if (n >= GS_DRA_STR_MAX - 1)
            return fail(ps, start, false, "string literal too long");
        if (ps->p->npool >= GS_CEL_MAX_LEN)
            return fail(ps, start, false, "expression too long");
        ps->p->pool[ps->p->npool++] = c;
        n++;
    }
    ps->ts = at;
    ps->tslen = n;
    ps->t = T_STR;
    return 0;
}

static int next(struct parser *ps)
{
    const char *s = ps->src;
    while (ps->pos < ps->len &&
           (s[ps->pos] == ' ' || s[ps->pos] == '\t' || s[ps->pos] == '\n' || s[ps->pos] == '\r'))
        ps->pos++;
    ps->tpos = ps->pos;
    if (ps->pos >= ps->len) {
        ps->t = T_END;
        ps->tlen = 0;
        return 0;
    }
    char c = s[ps->pos];
    char d = ps->pos + 1 < ps->len ? s[ps->pos + 1] : '\0';
    if (ident_start(c)) {
        while (ps->pos < ps->len && ident_char(s[ps->pos]))
            ps->pos++;
        ps->t = T_IDENT;
        ps->tlen = ps->pos - ps->tpos;
        if (ps->pos < ps->len && (s[ps->pos] == '\'' || s[ps->pos] == '"'))
            return fail(ps, ps->tpos, true, "prefixed (raw or bytes) string");
        return 0;
    }
    if (c == '\'' || c == '"') {
        int rc = lex_string(ps);
        ps->tlen = ps->pos - ps->tpos;
        return rc;
    }
    if (c >= '0' && c <= '9') {
        int64_t v = 0;
        if (c == '0' && (d == 'x' || d == 'X'))
            return fail(ps, ps->tpos, true, "hexadecimal literal");
        while (ps->pos < ps->len && s[ps->pos] >= '0' && s[ps->pos] <= '9') {
            int dig = s[ps->pos] - '0';
            if (v > (INT64_MAX - dig) / 10)
                return fail(ps, ps->tpos, false, "integer literal out of range");
            v = v * 10 + dig;
            ps->pos++;
        }
        if (ps->pos < ps->len && (s[ps->pos] == '.' || s[ps->pos] == 'e' || s[ps->pos] == 'E'))
            return fail(ps, ps->tpos, true, "floating-point literal");
        if (ps->pos < ps->len && (s[ps->pos] == 'u' || s[ps->pos] == 'U'))
            return fail(ps, ps->tpos, true, "unsigned literal");
        ps->t = T_INT;
        ps->ti = v;
        ps->tlen = ps->pos - ps->tpos;
        return 0;
    }
    static const struct {
        const char *s;
        enum tok t;
    } ops[] = {{"&&", T_AND}, {"||", T_OR}, {"==", T_EQ}, {"!=", T_NE},
               {"<=", T_LE},  {">=", T_GE}, {"(", T_LP},  {")", T_RP},
               {"[", T_LB},   {"]", T_RB},  {".", T_DOT}, {",", T_COMMA},
               {"!", T_NOT},  {"<", T_LT},  {">", T_GT},  {"-", T_MINUS}};
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        size_t n = strlen(ops[k].s);
        if (ps->pos + n <= ps->len && memcmp(s + ps->pos, ops[k].s, n) == 0) {
            ps->pos += n;
            ps->t = ops[k].t;
            ps->tlen = n;
            return 0;
        }
    }
    ps->t = T_OTHER;
    ps->pos++;
    ps->tlen = 1;
    return 0;
}

static bool is_ident(const struct parser *ps, const char *w)
{
    return ps->t == T_IDENT && ps->tlen == strlen(w) &&
           memcmp(ps->src + ps->tpos, w, ps->tlen) == 0;
}

static int new_node(struct parser *ps, uint8_t op, size_t pos)
{
    if (ps->p->n >= GS_CEL_MAX_NODES)
        return fail(ps, pos, false, "expression has too many terms");
    int k = ps->p->n++;
    struct gs_cel_node *x = &ps->p->nodes[k];
    memset(x, 0, sizeof(*x));
    x->op = op;
    x->a = x->b = -1;
    x->pos = (uint16_t)pos;
    return k;
}

/* "unsupported CEL: operator '+'", "... identifier 'size'" naming the token at hand. */
static int unsupported_token(struct parser *ps, const char *kind)
{
    char what[96];
    size_t n = ps->tlen > 40 ? 40 : ps->tlen;
    if (ps->t == T_END)
        return fail(ps, ps->tpos, false, "unexpected end of expression");
    snprintf(what, sizeof(what), "%s '%.*s'", kind, (int)n, ps->src + ps->tpos);
    return fail(ps, ps->tpos, true, what);
}

static int expect(struct parser *ps, enum tok t, const char *what)
{
    if (ps->t != t) {
        if (ps->t == T_OTHER)
            return unsupported_token(ps, "operator");
        char m[64];
        snprintf(m, sizeof(m), "expected %s", what);
        return fail(ps, ps->tpos, false, m);
    }
    return next(ps);
}

static int parse_or(struct parser *ps);

static bool is_macro(const char *s, size_t n)
{
    static const char *m[] = {"exists", "all", "exists_one", "map", "filter", "has"};
    for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++)
        if (n == strlen(m[k]) && memcmp(s, m[k], n) == 0)
            return true;
    return false;
}

/* A method call after an operand: compareTo / isGreaterThan / isLessThan with a quantity. */
static int parse_method(struct parser *ps, int recv)
{
    /* at the identifier after '.' */
    size_t mpos = ps->tpos, mlen = ps->tlen;
    const char *m = ps->src + mpos;
    uint8_t op = 0;
    if (mlen == 9 && memcmp(m, "compareTo", 9) == 0)
        op = OP_CMPTO;
    else if (mlen == 13 && memcmp(m, "isGreaterThan", 13) == 0)
        op = OP_QGT;
    else if (mlen == 10 && memcmp(m, "isLessThan", 10) == 0)
        op = OP_QLT;
    int rc = next(ps);
    if (rc)
        return rc;
    if (ps->t != T_LP) {
        char what[96];
        snprintf(what, sizeof(what), "field '%.*s'", (int)(mlen > 40 ? 40 : mlen), m);
        return fail(ps, mpos, true, what);
    }
    if (!op) {
        char what[96];
        snprintf(what, sizeof(what), "%s '%.*s'", is_macro(m, mlen) ? "macro" : "method",
                 (int)(mlen > 40 ? 40 : mlen), m);
        return fail(ps, mpos, true, what);
    }
    if (ps->p->nodes[recv].op != OP_CAP && ps->p->nodes[recv].op != OP_QTY)
        return fail(ps, mpos, true, "quantity method on a value that is not a capacity");
    if ((rc = next(ps)))
        return rc;
    int arg = parse_or(ps);
    if (arg < 0)
        return arg;
    if (ps->p->nodes[arg].op != OP_QTY && ps->p->nodes[arg].op != OP_CAP)
        return fail(ps, ps->p->nodes[arg].pos, true, "argument that is not quantity('...')");
    if ((rc = expect(ps, T_RP, "')'")))
        return rc;
    int k = new_node(ps, op, mpos);
    if (k < 0)
        return k;
    ps->p->nodes[k].a = (int16_t)recv;
    ps->p->nodes[k].b = (int16_t)arg;
    return k;
}

/* device.driver | device.attributes['d'].n | device.capacity['d'].n */
static int parse_device(struct parser *ps)
{
    size_t pos = ps->tpos;
    int rc = next(ps);
    if (rc)
        return rc;
    if (ps->t != T_DOT)
        return fail(ps, pos, true,
                    "'device' used other than as device.driver, "
                    "device.attributes[...] or device.capacity[...]");
    if ((rc = next(ps)))
        return rc;
    if (is_ident(ps, "driver")) {
        int k = new_node(ps, OP_DRIVER, pos);
        return k < 0 ? k : (next(ps) ? ps->err->code : k);
    }
    bool cap = is_ident(ps, "capacity");
    if (!cap && !is_ident(ps, "attributes")) {
        if (ps->t == T_IDENT)
            return unsupported_token(ps, "device field");
        return fail(ps, ps->tpos, false, "expected driver, attributes or capacity");
    }
    if ((rc = next(ps)))
        return rc;
    if (ps->t == T_DOT) {
        if ((rc = next(ps)))
            return rc;
        if (ps->t == T_IDENT) {
            char what[96];
            snprintf(what, sizeof(what), "%s '%.*s' on device.%s", "method or field",
                     (int)(ps->tlen > 40 ? 40 : ps->tlen), ps->src + ps->tpos,
                     cap ? "capacity" : "attributes");
            return fail(ps, ps->tpos, true, what);
        }
    }
    if (ps->t != T_LB)
        return fail(ps, ps->tpos, true,
                    cap ? "device.capacity without ['DOMAIN']"
                        : "device.attributes without "
                          "['DOMAIN']");
    if ((rc = next(ps)))
        return rc;
    if (ps->t != T_STR)
        return fail(ps, ps->tpos, true, "a domain that is not a string literal");
    int32_t ds = ps->ts, dl = ps->tslen;
    if ((rc = next(ps)) || (rc = expect(ps, T_RB, "']'")))
        return rc;
    int32_t ns = 0, nl = 0;
    size_t npos = ps->tpos;
    if (ps->t == T_DOT) {
        if ((rc = next(ps)))
            return rc;
        if (ps->t != T_IDENT)
            return fail(ps, ps->tpos, false, "expected an attribute name");
        npos = ps->tpos;
        if (ps->pos < ps->len) {
            /* 'd'.exists(...) and other methods of the map */
            size_t q = ps->pos;
            while (q < ps->len && ps->src[q] == ' ')
                q++;
            if (q < ps->len && ps->src[q] == '(') {
                char what[96];
                snprintf(what, sizeof(what), "%s '%.*s' on device.%s['...']",
                         is_macro(ps->src + ps->tpos, ps->tlen) ? "macro" : "method",
                         (int)(ps->tlen > 40 ? 40 : ps->tlen), ps->src + ps->tpos,
                         cap ? "capacity" : "attributes");
                return fail(ps, ps->tpos, true, what);
            }
        }
        if (ps->p->npool + (int32_t)ps->tlen > GS_CEL_MAX_LEN)
            return fail(ps, ps->tpos, false, "expression too long");
        ns = ps->p->npool;
        nl = (int32_t)ps->tlen;
        memcpy(ps->p->pool + ns, ps->src + ps->tpos, ps->tlen);
        ps->p->npool += nl;
        if ((rc = next(ps)))
            return rc;
    } else if (ps->t == T_LB) {
        if ((rc = next(ps)))
            return rc;
        if (ps->t != T_STR)
            return fail(ps, ps->tpos, true, "an attribute name that is not a string literal");
        ns = ps->ts;
        nl = ps->tslen;
        if ((rc = next(ps)) || (rc = expect(ps, T_RB, "']'")))
            return rc;
    } else {
        return fail(ps, npos, true, "a whole attribute map (use device.attributes['D'].NAME)");
    }
    if (dl + 1 + nl >= GS_DRA_QNAME_MAX)
        return fail(ps, pos, false, "attribute name too long");
    int k = new_node(ps, cap ? OP_CAP : OP_ATTR, pos);
    if (k < 0)
        return k;
    struct gs_cel_node *x = &ps->p->nodes[k];
    x->s = ds;
    x->slen = dl;
    x->n = ns;
    x->nlen = nl;
    return k;
}

static int parse_list(struct parser *ps)
{
    size_t pos = ps->tpos;
    int rc = next(ps);
    if (rc)
        return rc;
    int k = new_node(ps, OP_LIST, pos);
    if (k < 0)
        return k;
    while (ps->t != T_RB) {
        if (ps->p->nodes[k].nlist >= GS_CEL_MAX_LIST)
            return fail(ps, ps->tpos, false, "list too long");
        int e = parse_or(ps);
        if (e < 0)
            return e;
        uint8_t op = ps->p->nodes[e].op;
        if (op != OP_STR && op != OP_INT && op != OP_BOOL)
            return fail(ps, ps->p->nodes[e].pos, true, "list element that is not a literal");
        struct gs_cel_node *x = &ps->p->nodes[k];
        x->list[x->nlist++] = (int16_t)e;
        if (ps->t == T_COMMA) {
            if ((rc = next(ps)))
                return rc;
        } else if (ps->t != T_RB) {
            return expect(ps, T_RB, "']' or ','");
        }
    }
    return next(ps) ? ps->err->code : k;
}

static int parse_primary(struct parser *ps)
{
    size_t pos = ps->tpos;
    int rc, k;
    if (++ps->depth > GS_CEL_MAX_DEPTH)
        return fail(ps, pos, false, "expression nested too deeply");
    switch (ps->t) {
    case T_LP:
        if ((rc = next(ps)))
            return rc;
        k = parse_or(ps);
        if (k < 0)
            return k;
        if ((rc = expect(ps, T_RP, "')'")))
            return rc;
        break;
    case T_STR:
        k = new_node(ps, OP_STR, pos);
        if (k < 0)
            return k;
        ps->p->nodes[k].s = ps->ts;
        ps->p->nodes[k].slen = ps->tslen;
        if ((rc = next(ps)))
            return rc;
        break;
    case T_INT:
    case T_MINUS: {
        bool neg = ps->t == T_MINUS;
        if (neg && ((rc = next(ps)) || ps->t != T_INT))
            return rc ? rc : fail(ps, pos, true, "operator '-' other than before an integer");
        k = new_node(ps, OP_INT, pos);
        if (k < 0)
            return k;
        ps->p->nodes[k].i = neg ? -ps->ti : ps->ti;
        if ((rc = next(ps)))
            return rc;
        break;
    }
    case T_LB:
        k = parse_list(ps);
        break;
    case T_IDENT:
        if (is_ident(ps, "true") || is_ident(ps, "false")) {
            k = new_node(ps, OP_BOOL, pos);
            if (k < 0)
                return k;
            ps->p->nodes[k].i = is_ident(ps, "true");
            if ((rc = next(ps)))
                return rc;
        } else if (is_ident(ps, "device")) {
            k = parse_device(ps);
        } else if (is_ident(ps, "quantity")) {
            if ((rc = next(ps)) || (rc = expect(ps, T_LP, "'(' after quantity")))
                return rc;
            if (ps->t != T_STR)
                return fail(ps, ps->tpos, true, "quantity() of something other than a string");
            struct gs_quantity q;
            struct gs_error qe;
            gs_error_init(&qe);
            if (gs_quantity_parse(ps->p->pool + ps->ts, (size_t)ps->tslen, &q, &qe))
                return fail(ps, ps->tpos, false, "quantity() of an invalid quantity");
            if ((rc = next(ps)) || (rc = expect(ps, T_RP, "')'")))
                return rc;
            k = new_node(ps, OP_QTY, pos);
            if (k < 0)
                return k;
            ps->p->nodes[k].q = q;
        } else {
            bool call = false;
            size_t q = ps->pos;
            while (q < ps->len && ps->src[q] == ' ')
                q++;
            call = q < ps->len && ps->src[q] == '(';
            return unsupported_token(
                ps, call ? (is_macro(ps->src + ps->tpos, ps->tlen) ? "macro" : "function")
                         : "identifier");
        }
        break;
    case T_OTHER:
        return unsupported_token(ps, "operator");
    default:
        if (ps->t == T_END)
            return fail(ps, pos, false, "unexpected end of expression");
        return unsupported_token(ps, "token");
    }
    if (k < 0)
        return k;
    /* postfix: .method(...) */
    while (ps->t == T_DOT) {
        if ((rc = next(ps)))
            return rc;
        if (ps->t != T_IDENT)
            return fail(ps, ps->tpos, false, "expected a name after '.'");
        k = parse_method(ps, k);
        if (k < 0)
            return k;
    }
    if (ps->t == T_LB)
        return fail(ps, ps->tpos, true, "index '[...]' on this value");
    ps->depth--;
    return k;
}

static int parse_unary(struct parser *ps)
{
    if (ps->t == T_NOT) {
        size_t pos = ps->tpos;
        if (++ps->depth > GS_CEL_MAX_DEPTH)
            return fail(ps, pos, false, "expression nested too deeply");
        int rc = next(ps);
        if (rc)
            return rc;
        int a = parse_unary(ps);
        if (a < 0)
            return a;
        int k = new_node(ps, OP_NOT, pos);
        if (k < 0)
            return k;
        ps->p->nodes[k].a = (int16_t)a;
        ps->depth--;
        return k;
    }
    return parse_primary(ps);
}

static int parse_rel(struct parser *ps)
{
    int a = parse_unary(ps);
    if (a < 0)
        return a;
    uint8_t op = 0;
    size_t pos = ps->tpos;
    switch (ps->t) {
    case T_EQ:
        op = OP_EQ;
        break;
    case T_NE:
        op = OP_NE;
        break;
    case T_LT:
        op = OP_LT;
        break;
    case T_LE:
        op = OP_LE;
        break;
    case T_GT:
        op = OP_GT;
        break;
    case T_GE:
        op = OP_GE;
        break;
    default:
        if (is_ident(ps, "in"))
            op = OP_IN;
        break;
    }
    if (!op)
        return a;
    int rc = next(ps);
    if (rc)
        return rc;
    int b = parse_unary(ps);
    if (b < 0)
        return b;
    struct gs_cel_node *na = &ps->p->nodes[a], *nb = &ps->p->nodes[b];
    if (op == OP_IN && nb->op != OP_LIST)
        return fail(ps, pos, true, "'in' other than with a list literal ['a', 'b']");
    if (op != OP_IN && (nb->op == OP_LIST || na->op == OP_LIST))
        return fail(ps, pos, true, "comparison with a list");
    if ((na->op == OP_CAP || na->op == OP_QTY || nb->op == OP_CAP || nb->op == OP_QTY)) {
        static const char *const name[] = {
            [OP_EQ] = "==", [OP_NE] = "!=", [OP_LT] = "<", [OP_LE] = "<=",
            [OP_GT] = ">",  [OP_GE] = ">=", [OP_IN] = "in"};
        char what[120];
        snprintf(what, sizeof(what),
                 "operator '%s' on a quantity (use .compareTo(quantity('...')))", name[op]);
        return fail(ps, pos, true, what);
    }
    if (ps->t == T_EQ || ps->t == T_NE || ps->t == T_LT || ps->t == T_LE || ps->t == T_GT ||
        ps->t == T_GE || is_ident(ps, "in"))
        return fail(ps, ps->tpos, false, "chained comparison");
    int k = new_node(ps, op, pos);
    if (k < 0)
        return k;
    ps->p->nodes[k].a = (int16_t)a;
    ps->p->nodes[k].b = (int16_t)b;
    return k;
}

static int parse_and(struct parser *ps)
{
    int a = parse_rel(ps);
    while (a >= 0 && ps->t == T_AND) {
        size_t pos = ps->tpos;
        int rc = next(ps);
        if (rc)
            return rc;
        int b = parse_rel(ps);
        if (b < 0)
            return b;
        int k = new_node(ps, OP_AND, pos);
        if (k < 0)
            return k;
        ps->p->nodes[k].a = (int16_t)a;
        ps->p->nodes[k].b = (int16_t)b;
        a = k;
    }
    return a;
}

static int parse_or(struct parser *ps)
{
    if (++ps->depth > GS_CEL_MAX_DEPTH)
        return fail(ps, ps->tpos, false, "expression nested too deeply");
    int a = parse_and(ps);
    while (a >= 0 && ps->t == T_OR) {
        size_t pos = ps->tpos;
        int rc = next(ps);
        if (rc)
            return rc;
        int b = parse_and(ps);
        if (b < 0)
            return b;
        int k = new_node(ps, OP_OR, pos);
        if (k < 0)
            return k;
        ps->p->nodes[k].a = (int16_t)a;
        ps->p->nodes[k].b = (int16_t)b;
        a = k;
    }
    if (a >= 0)
        ps->depth--;
    return a;
}

int gs_cel_compile(const char *src, size_t len, struct gs_cel *out, struct gs_error *err)
{
    struct gs_error local;
    if (!err) {
        gs_error_init(&local);
        err = &local;
    }
    out->n = 0;
    out->npool = 0;
    out->root = -1;
    if (len > GS_CEL_MAX_LEN)
        return gs_error_set(err, GS_EINVAL, "CEL expression longer than %d bytes", GS_CEL_MAX_LEN);
    if (memchr(src, '\0', len))
        return gs_error_set(err, GS_EINVAL, "CEL syntax error: NUL byte in the expression");
    struct parser ps = {.src = src, .len = len, .p = out, .err = err};
    int rc = next(&ps);
    if (rc)
        return rc;
    int k = parse_or(&ps);
    if (k < 0)
        return k;
    if (ps.t != T_END) {
        if (ps.t == T_OTHER)
            return unsupported_token(&ps, "operator");
        if (ps.t == T_IDENT)
            return unsupported_token(&ps, "identifier");
        return fail(&ps, ps.tpos, false, "unexpected token after the expression");
    }
    uint8_t op = out->nodes[k].op;
    if (op == OP_INT || op == OP_STR || op == OP_QTY || op == OP_LIST || op == OP_CAP ||
        op == OP_CMPTO || op == OP_DRIVER)
        return gs_error_set(err, GS_EINVAL,
                            "CEL: the expression must be a boolean (a comparison, &&, ||, !)");
    out->root = k;
    return 0;
}

/* ---------- evaluation ---------- */

enum vt { V_ERR = 0, V_BOOL, V_INT, V_STR, V_VER, V_QTY };

struct val {
    uint8_t t;
    bool b;
    int64_t i;
    const char *s;
    size_t n;
    const struct gs_quantity *q;
};

static struct val eval(const struct gs_cel *p, int k, const struct gs_dra_device *d);

static int cmp_str(const char *a, size_t na, const char *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = memcmp(a, b, n);
    return c ? c : (na < nb ? -1 : na > nb);
}

/* -2: not comparable */
static int compare(const struct val *a, const struct val *b, bool order)
{
    if (a->t == V_INT && b->t == V_INT)
        return a->i < b->i ? -1 : a->i > b->i;
    if (a->t == V_STR && b->t == V_STR)
        return cmp_str(a->s, a->n, b->s, b->n);
    if (order)
        return -2;
    if (a->t == V_BOOL && b->t == V_BOOL)
        return a->b != b->b;
    if ((a->t == V_VER || a->t == V_STR) && (b->t == V_VER || b->t == V_STR))
        return cmp_str(a->s, a->n, b->s, b->n) != 0;
    return -2;
}

static struct val vbool(bool b)
{
    return (struct val){.t = V_BOOL, .b = b};
}

static struct val eval(const struct gs_cel *p, int k, const struct gs_dra_device *d)
{
    const struct gs_cel_node *x = &p->nodes[k];
    struct val err = {.t = V_ERR};
    switch (x->op) {
    case OP_BOOL:
        return vbool(x->i != 0);
    case OP_INT:
        return (struct val){.t = V_INT, .i = x->i};
    case OP_STR:
        return (struct val){.t = V_STR, .s = p->pool + x->s, .n = (size_t)x->slen};
    case OP_QTY:
        return (struct val){.t = V_QTY, .q = &x->q};
    case OP_DRIVER:
        return (struct val){.t = V_STR, .s = d->driver, .n = strlen(d->driver)};
    case OP_ATTR:
    case OP_CAP: {
        const struct gs_dra_attr *a = gs_dra_attr_find(
            d, p->pool + x->s, (size_t)x->slen, p->pool + x->n, (size_t)x->nlen, x->op == OP_CAP);
        if (!a)
            return err;
        switch (a->v.type) {
        case GS_DRA_INT:
            return (struct val){.t = V_INT, .i = a->v.i};
        case GS_DRA_BOOL:
            return vbool(a->v.b);
        case GS_DRA_STRING:
            return (struct val){.t = V_STR, .s = a->v.s, .n = strlen(a->v.s)};
        case GS_DRA_VERSION:
            return (struct val){.t = V_VER, .s = a->v.s, .n = strlen(a->v.s)};
        case GS_DRA_QUANTITY:
            return (struct val){.t = V_QTY, .q = &a->v.q};
        default:
            return err;
        }
    }
    case OP_CMPTO:
    case OP_QGT:
    case OP_QLT: {
        struct val a = eval(p, x->a, d), b = eval(p, x->b, d);
        if (a.t != V_QTY || b.t != V_QTY)
            return err;
        int c = a.q->nanos < b.q->nanos ? -1 : a.q->nanos > b.q->nanos;
        if (x->op == OP_CMPTO)
            return (struct val){.t = V_INT, .i = c};
        return vbool(x->op == OP_QGT ? c > 0 : c < 0);
    }
    case OP_NOT: {
        struct val a = eval(p, x->a, d);
        return a.t == V_BOOL ? vbool(!a.b) : err;
    }
    case OP_AND:
    case OP_OR: {
        bool dominant = x->op == OP_OR; /* true || x, false && x */
        struct val a = eval(p, x->a, d);
        if (a.t == V_BOOL && a.b == dominant)
            return a;
        struct val b = eval(p, x->b, d);
        if (b.t == V_BOOL && b.b == dominant)
            return b;
        if (a.t != V_BOOL || b.t != V_BOOL)
            return err;
        return vbool(!dominant);
    }
    case OP_EQ:
    case OP_NE:
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE: {
        struct val a = eval(p, x->a, d), b = eval(p, x->b, d);
        if (a.t == V_ERR || b.t == V_ERR)
            return err;
        bool order = x->op != OP_EQ && x->op != OP_NE;
        int c = compare(&a, &b, order);
        if (c == -2)
            return err;
        switch (x->op) {
        case OP_EQ:
            return vbool(c == 0);
        case OP_NE:
            return vbool(c != 0);
        case OP_LT:
            return vbool(c < 0);
        case OP_LE:
            return vbool(c <= 0);
        case OP_GT:
            return vbool(c > 0);
        default:
            return vbool(c >= 0);
        }
    }
    case OP_IN: {
        struct val a = eval(p, x->a, d);
        if (a.t == V_ERR)
            return err;
        const struct gs_cel_node *l = &p->nodes[x->b];
        bool typed = false;
        for (int i = 0; i < l->nlist; i++) {
            struct val e = eval(p, l->list[i], d);
            int c = compare(&a, &e, false);
            if (c == 0)
                return vbool(true);
            typed |= c != -2;
        }
        return typed || l->nlist == 0 ? vbool(false) : err;
    }
    default:
        return err;
    }
}

int gs_cel_eval(const struct gs_cel *p, const struct gs_dra_device *d)
{
    if (p->root < 0 || p->root >= p->n)
        return 0;
    struct val v = eval(p, p->root, d);
    return v.t == V_BOOL && v.b;
}
