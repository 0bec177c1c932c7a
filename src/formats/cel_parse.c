/* cel_parse.c - the lexer and parser of CEL (cel.h): source text over (ptr, len) into the terms
 * of a struct gs_cel, as upstream's parser (cel-go, CEL.g4) reads it: precedence and
 * associativity, negative literals, !! and -- that cancel, && and || chains balanced, macros
 * (has, all, exists, exists_one, map, filter, cel.bind) expanded into comprehension terms, and
 * names resolved against the variables in scope (device, iteration and bound variables).
 * cel_check.c then types what this builds; nothing here evaluates. */
#include "cel_internal.h"

#include "../base/error.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tok {
    T_END = 0,
    T_IDENT,
    T_INT,    /* magnitude in tu (a literal may be -2^63) */
    T_UINT,   /* tu */
    T_DOUBLE, /* td */
    T_STR,    /* ts, tslen in the pool */
    T_LP,
    T_RP,
    T_LB,
    T_RB,
    T_LBRACE,
    T_RBRACE,
    T_DOT,
    T_COMMA,
    T_COLON,
    T_QUESTION,
    T_NOT,
    T_AND,
    T_OR,
    T_EQ,
    T_NE,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_SLASH,
    T_PERCENT,
    T_OTHER
};

#define MAX_TREE 200 /* depth of the tree of terms */

struct parser {
    const char *src;
    size_t len, pos;
    struct gs_cel *p;
    struct gs_error *err;
    int depth;
    enum tok t;
    size_t tpos, tlen;
    int32_t ts, tslen;
    uint64_t tu;
    double td;
    /* variables in scope: name (in src) and slot */
    int nscope;
    struct {
        size_t off, len;
    } scope[GS_CEL_MAX_VARS];
    /* children not yet attached to a term */
    int nstack;
    int16_t stack[GS_CEL_MAX_NODES];
};

int gs__cel_fail(struct gs_cel *p, struct gs_error *err, int refusal, int pos, const char *fmt, ...)
{
    static const char *const prefix[] = {"", "CEL syntax error", "unsupported CEL",
                                         "CEL compile error", "CEL cost limit exceeded"};
    char what[GS_ERROR_MSG_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    p->refusal = (uint8_t)refusal;
    if (pos >= 0)
        return gs_error_set(err, GS_EINVAL, "%s: %s at position %d", prefix[refusal], what, pos);
    return gs_error_set(err, GS_EINVAL, "%s: %s", prefix[refusal], what);
}

#define SYNTAX(ps, pos, ...)                                                                       \
    gs__cel_fail((ps)->p, (ps)->err, GS_CEL_SYNTAX, (int)(pos), __VA_ARGS__)
#define UNSUP(ps, pos, ...)                                                                        \
    gs__cel_fail((ps)->p, (ps)->err, GS_CEL_UNSUPPORTED, (int)(pos), __VA_ARGS__)
#define INVALID(ps, pos, ...)                                                                      \
    gs__cel_fail((ps)->p, (ps)->err, GS_CEL_INVALID, (int)(pos), __VA_ARGS__)

static bool ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int pool_put(struct parser *ps, const char *s, size_t n)
{
    if ((size_t)ps->p->npool + n > GS_CEL_MAX_POOL)
        return SYNTAX(ps, ps->tpos, "expression too long");
    memcpy(ps->p->pool + ps->p->npool, s, n);
    ps->p->npool += (int32_t)n;
    return 0;
}

/* Append code point cp as UTF-8 to the pool. */
static int pool_utf8(struct parser *ps, uint32_t cp, size_t at)
{
    char b[4];
    size_t n;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return SYNTAX(ps, at, "invalid code point in an escape sequence");
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return pool_put(ps, b, n);
}

/* One escape sequence at ps->pos (just after the backslash) into the pool. */
static int lex_escape(struct parser *ps, size_t at)
{
    const char *s = ps->src;
    if (ps->pos >= ps->len)
        return SYNTAX(ps, at, "unterminated string");
    char c = s[ps->pos++];
    static const char simple_in[] = "abfnrtv\\'\"`?";
    static const char simple_out[] = "\a\b\f\n\r\t\v\\'\"`?";
    const char *q = memchr(simple_in, c, sizeof(simple_in) - 1);
    if (q)
        return pool_put(ps, &simple_out[q - simple_in], 1);
    uint32_t cp = 0;
    int digits = 0, base = 16;
    if (c == 'x' || c == 'X')
        digits = 2;
    else if (c == 'u')
        digits = 4;
    else if (c == 'U')
        digits = 8;
    else if (c >= '0' && c <= '3') {
        base = 8;
        digits = 2;
        cp = (uint32_t)(c - '0');
    } else {
        return SYNTAX(ps, at, "invalid escape sequence '\\%c'", c);
    }
    for (int k = 0; k < digits; k++) {
        int v = ps->pos < ps->len ? gs__cel_hexval(s[ps->pos]) : -1;
        if (v < 0 || v >= base)
            return SYNTAX(ps, at, "invalid escape sequence");
        cp = cp * (uint32_t)base + (uint32_t)v;
        ps->pos++;
    }
    return pool_utf8(ps, cp, at);
}

/* A string literal at ps->pos (its first quote); raw: r'...'. */
static int lex_string(struct parser *ps, bool raw)
{
    const char *s = ps->src;
    size_t start = ps->tpos;
    char q = s[ps->pos];
    bool triple = ps->pos + 2 < ps->len && s[ps->pos + 1] == q && s[ps->pos + 2] == q;
    ps->pos += triple ? 3 : 1;
    ps->ts = ps->p->npool;
    for (;;) {
        if (ps->pos >= ps->len)
            return SYNTAX(ps, start, "unterminated string");
        char c = s[ps->pos];
        if (c == q &&
            (!triple || (ps->pos + 2 < ps->len && s[ps->pos + 1] == q && s[ps->pos + 2] == q))) {
            ps->pos += triple ? 3 : 1;
            break;
        }
        if (!triple && (c == '\n' || c == '\r'))
            return SYNTAX(ps, start, "newline in a string");
        ps->pos++;
        int rc = c == '\\' && !raw ? lex_escape(ps, ps->pos - 1) : pool_put(ps, &c, 1);
        if (rc)
            return rc;
    }
    ps->tslen = ps->p->npool - ps->ts;
    ps->t = T_STR;
    return 0;
}

static int lex_number(struct parser *ps)
{
    const char *s = ps->src;
    size_t p = ps->pos;
    if (s[p] == '0' && p + 1 < ps->len && s[p + 1] == 'x') {
        uint64_t v = 0;
        p += 2;
        size_t d0 = p;
        for (; p < ps->len && gs__cel_hexval(s[p]) >= 0; p++) {
            if (v >> 60)
                return SYNTAX(ps, ps->tpos, "integer literal out of range");
            v = v * 16 + (uint64_t)gs__cel_hexval(s[p]);
        }
        if (p == d0)
            return SYNTAX(ps, ps->tpos, "invalid hexadecimal literal");
        ps->tu = v;
        ps->t = T_INT;
        if (p < ps->len && (s[p] == 'u' || s[p] == 'U')) {
            ps->t = T_UINT;
            p++;
        }
        ps->pos = p;
        return 0;
    }
    size_t q = p;
    while (q < ps->len && is_digit(s[q]))
        q++;
    bool dbl = false;
    if (q < ps->len && s[q] == '.' && q + 1 < ps->len && is_digit(s[q + 1])) {
        dbl = true;
        q++;
        while (q < ps->len && is_digit(s[q]))
            q++;
    }
    if (q < ps->len && (s[q] == 'e' || s[q] == 'E')) {
        size_t e = q + 1;
        if (e < ps->len && (s[e] == '+' || s[e] == '-'))
            e++;
        if (e < ps->len && is_digit(s[e])) {
            dbl = true;
            q = e;
            while (q < ps->len && is_digit(s[q]))
                q++;
        }
    }
    if (dbl) {
        char buf[400];
        if (q - p >= sizeof(buf))
            return SYNTAX(ps, ps->tpos, "floating-point literal too long");
        memcpy(buf, s + p, q - p);
        buf[q - p] = '\0';
        errno = 0;
        ps->td = strtod(buf, NULL);
        if (errno == ERANGE && isinf(ps->td))
            return SYNTAX(ps, ps->tpos, "floating-point literal out of range");
        ps->t = T_DOUBLE;
        ps->pos = q;
        return 0;
    }
    uint64_t v = 0;
    for (size_t k = p; k < q; k++) {
        uint64_t d = (uint64_t)(s[k] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return SYNTAX(ps, ps->tpos, "integer literal out of range");
        v = v * 10 + d;
    }
    ps->tu = v;
    ps->t = T_INT;
    if (q < ps->len && (s[q] == 'u' || s[q] == 'U')) {
        ps->t = T_UINT;
        q++;
    }
    ps->pos = q;
    return 0;
}

static void skip_space(struct parser *ps)
{
    const char *s = ps->src;
    while (ps->pos < ps->len) {
        char c = s[ps->pos];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f')
            ps->pos++;
        else if (c == '/' && ps->pos + 1 < ps->len && s[ps->pos + 1] == '/')
            while (ps->pos < ps->len && s[ps->pos] != '\n')
                ps->pos++;
        else
            break;
    }
}

static int next(struct parser *ps)
{
    skip_space(ps);
    const char *s = ps->src;
    ps->tpos = ps->pos;
    if (ps->pos >= ps->len) {
        ps->t = T_END;
        ps->tlen = 0;
        return 0;
    }
    char c = s[ps->pos];
    char d = ps->pos + 1 < ps->len ? s[ps->pos + 1] : '\0';
    int rc = 0;
    if (ident_start(c)) {
        size_t e = ps->pos;
        while (e < ps->len && (ident_start(s[e]) || is_digit(s[e])))
            e++;
        size_t n = e - ps->pos;
        char q = e < ps->len ? s[e] : '\0';
        if ((q == '\'' || q == '"') && n <= 2) {
            bool raw = false, bytes = false;
            for (size_t k = ps->pos; k < e; k++) {
                raw |= s[k] == 'r' || s[k] == 'R';
                bytes |= s[k] == 'b' || s[k] == 'B';
            }
            if (bytes)
                return UNSUP(ps, ps->tpos, "bytes literal");
            if (raw && n == 1) {
                ps->pos = e;
                rc = lex_string(ps, true);
                ps->tlen = ps->pos - ps->tpos;
                return rc;
            }
        }
        ps->pos = e;
        ps->t = T_IDENT;
        ps->tlen = n;
        return 0;
    }
    if (c == '\'' || c == '"') {
        rc = lex_string(ps, false);
    } else if (is_digit(c) || (c == '.' && is_digit(d))) {
        rc = lex_number(ps);
    } else {
        static const struct {
            const char *s;
            enum tok t;
        } ops[] = {{"&&", T_AND},  {"||", T_OR},   {"==", T_EQ},    {"!=", T_NE},
                   {"<=", T_LE},   {">=", T_GE},   {"(", T_LP},     {")", T_RP},
                   {"[", T_LB},    {"]", T_RB},    {"{", T_LBRACE}, {"}", T_RBRACE},
                   {".", T_DOT},   {",", T_COMMA}, {":", T_COLON},  {"?", T_QUESTION},
                   {"!", T_NOT},   {"<", T_LT},    {">", T_GT},     {"+", T_PLUS},
                   {"-", T_MINUS}, {"*", T_STAR},  {"/", T_SLASH},  {"%", T_PERCENT}};
        ps->t = T_OTHER;
        for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
            size_t n = strlen(ops[k].s);
            if (ps->pos + n <= ps->len && memcmp(s + ps->pos, ops[k].s, n) == 0) {
                ps->t = ops[k].t;
                ps->pos += n;
                break;
            }
        }
        if (ps->t == T_OTHER)
            ps->pos++;
    }
    ps->tlen = ps->pos - ps->tpos;
    return rc;
}

static bool is_word(const struct parser *ps, const char *w)
{
    return ps->t == T_IDENT && ps->tlen == strlen(w) &&
           memcmp(ps->src + ps->tpos, w, ps->tlen) == 0;
}

static bool reserved(const char *s, size_t n)
{
    static const char *const words[] = {
        "as",  "break",  "const", "continue", "else",    "for",       "function",
        "if",  "import", "let",   "loop",     "package", "namespace", "return",
        "var", "void",   "while", "in",       "true",    "false",     "null"};
    for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
        if (strlen(words[k]) == n && memcmp(words[k], s, n) == 0)
            return true;
    return false;
}

static int expect(struct parser *ps, enum tok t, const char *what)
{
    if (ps->t != t) {
        if (ps->t == T_END)
            return SYNTAX(ps, ps->tpos, "unexpected end of expression, expected %s", what);
        return SYNTAX(ps, ps->tpos, "expected %s", what);
    }
    return next(ps);
}

/* ---------- terms ---------- */

static int push(struct parser *ps, int node)
{
    if (ps->nstack >= GS_CEL_MAX_NODES)
        return UNSUP(ps, ps->tpos, "expression has more than %d terms", GS_CEL_MAX_NODES);
    ps->stack[ps->nstack++] = (int16_t)node;
    return 0;
}

/* A new term taking the top nk pending children. Returns its index or an error. */
static int mk(struct parser *ps, int op, size_t pos, int nk)
{
    struct gs_cel *p = ps->p;
    if (p->n >= GS_CEL_MAX_NODES || nk > 255)
        return UNSUP(ps, pos, "expression has more than %d terms", GS_CEL_MAX_NODES);
    int k = p->n++;
    struct gs_cel_node *x = &p->nodes[k];
    memset(x, 0, sizeof(*x));
    x->op = (uint8_t)op;
    x->pos = (uint16_t)pos;
    x->var = -1;
    x->k = (int16_t)p->nkids;
    x->nk = (uint8_t)nk;
    memcpy(&p->kids[p->nkids], &ps->stack[ps->nstack - nk], sizeof(int16_t) * (size_t)nk);
    p->nkids += nk;
    ps->nstack -= nk;
    return k;
}

static int mk2(struct parser *ps, int op, size_t pos, int a, int b)
{
    int rc;
    if ((rc = push(ps, a)) || (rc = push(ps, b)))
        return rc;
    return mk(ps, op, pos, 2);
}

/* Balance a chain of n pending && or || operands into a tree, as cel-go's parser does. */
static int balance(struct parser *ps, int op, size_t pos, int lo, int hi)
{
    if (lo == hi)
        return ps->stack[lo];
    int mid = (lo + hi + 1) / 2;
    int a = balance(ps, op, pos, lo, mid - 1);
    if (a < 0)
        return a;
    int b = balance(ps, op, pos, mid, hi);
    if (b < 0)
        return b;
    struct gs_cel *p = ps->p;
    if (p->n >= GS_CEL_MAX_NODES)
        return UNSUP(ps, pos, "expression has more than %d terms", GS_CEL_MAX_NODES);
    int k = p->n++;
    struct gs_cel_node *x = &p->nodes[k];
    memset(x, 0, sizeof(*x));
    x->op = (uint8_t)op;
    x->pos = (uint16_t)pos;
    x->var = -1;
    x->k = (int16_t)p->nkids;
    x->nk = 2;
    p->kids[p->nkids++] = (int16_t)a;
    p->kids[p->nkids++] = (int16_t)b;
    return k;
}

static int parse_expr(struct parser *ps);

static int enter(struct parser *ps)
{
    if (++ps->depth > GS_CEL_MAX_DEPTH)
        return UNSUP(ps, ps->tpos, "expression nested more than %d deep", GS_CEL_MAX_DEPTH);
    return 0;
}

/* args until ')' or ']' pushed; returns their count or an error */
static int parse_args(struct parser *ps, enum tok close, const char *what)
{
    int n = 0, rc;
    while (ps->t != close) {
        int a = parse_expr(ps);
        if (a < 0)
            return a;
        if ((rc = push(ps, a)))
            return rc;
        n++;
        if (ps->t == T_COMMA) {
            if ((rc = next(ps)))
                return rc;
        } else if (ps->t != close) {
            return expect(ps, close, what) ? ps->err->code : SYNTAX(ps, ps->tpos, "%s", what);
        }
    }
    return next(ps) ? ps->err->code : n;
}

static int find_var(const struct parser *ps, const char *s, size_t n)
{
    for (int k = ps->nscope - 1; k >= 0; k--)
        if (ps->scope[k].len == n && memcmp(ps->src + ps->scope[k].off, s, n) == 0)
            return k;
    return -1;
}

/* The iteration variable of a macro: a bare name followed by ','. */
static int macro_var(struct parser *ps, size_t *off, size_t *n)
{
    if (ps->t != T_IDENT || reserved(ps->src + ps->tpos, ps->tlen))
        return SYNTAX(ps, ps->tpos, "argument must be a simple name");
    *off = ps->tpos;
    *n = ps->tlen;
    int rc = next(ps);
    if (rc)
        return rc;
    if (ps->t != T_COMMA)
        return SYNTAX(ps, ps->tpos, "argument must be a simple name");
    if (*n == 10 && memcmp(ps->src + *off, "__result__", 10) == 0)
        return SYNTAX(ps, *off, "iteration variable overwrites accumulator variable");
    if (ps->nscope >= GS_CEL_MAX_VARS)
        return UNSUP(ps, *off, "more than %d nested comprehensions", GS_CEL_MAX_VARS);
    return next(ps);
}

/* The macro named at name (all, exists, ...) on target, after its '(' */
static int parse_macro(struct parser *ps, int op, int target, size_t pos, int nargs)
{
    size_t off, n;
    int rc = macro_var(ps, &off, &n);
    if (rc)
        return rc;
    int slot = ps->nscope++;
    ps->scope[slot].off = off;
    ps->scope[slot].len = n;
    if ((rc = push(ps, target)))
        return rc;
    /* nargs: the target, the variable and the expressions */
    for (int k = 2; k < nargs; k++) {
        int a = parse_expr(ps);
        if (a < 0)
            return a;
        if ((rc = push(ps, a)))
            return rc;
        if (k + 1 < nargs && (rc = expect(ps, T_COMMA, "','")))
            return rc;
    }
    ps->nscope--;
    if ((rc = expect(ps, T_RP, "')'")))
        return rc;
    int k = mk(ps, op, pos, nargs - 1);
    if (k >= 0)
        ps->p->nodes[k].var = (int16_t)slot;
    return k;
}

/* How many top-level arguments the call whose '(' was just consumed has (for macros). */
static int count_args(const struct parser *ps)
{
    int depth = 0, n = 0;
    bool any = false;
    char quote = 0;
    for (size_t i = ps->tpos; i < ps->len; i++) {
        char c = ps->src[i];
        if (quote) {
            if (c == '\\')
                i++;
            else if (c == quote)
                quote = 0;
            continue;
        }
        if (c == '\'' || c == '"') {
            quote = c;
            any = true;
        } else if (c == '(' || c == '[' || c == '{') {
            depth++;
            any = true;
        } else if (c == ')' || c == ']' || c == '}') {
            if (depth-- == 0)
                return any ? n + 1 : 0;
        } else if (c == ',' && depth == 0) {
            n++;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            any = true;
        }
    }
    return n + 1;
}

/* A call term of nk pending children, its function's name (in src) copied to the pool. */
static int call_node(struct parser *ps, size_t pos, int nk, int flags, size_t noff, size_t nlen)
{
    int32_t at = ps->p->npool;
    int rc = pool_put(ps, ps->src + noff, nlen);
    if (rc)
        return rc;
    int k = mk(ps, OP_CALL, pos, nk);
    if (k >= 0) {
        ps->p->nodes[k].flags = (uint8_t)flags;
        ps->p->nodes[k].s = at;
        ps->p->nodes[k].slen = (int32_t)nlen;
    }
    return k;
}

struct macro_row {
    const char *name;
    int op, nargs; /* nargs counts the arguments inside the parentheses */
};

static const struct macro_row member_macros[] = {
    {"all", OP_ALL, 2},  {"exists", OP_EXISTS, 2}, {"exists_one", OP_EXISTS_ONE, 2},
    {"map", OP_MAPX, 2}, {"map", OP_MAPF, 3},      {"filter", OP_FILTER, 2},
};

static bool name_is(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* target.NAME(...) with the name at noff/nlen and the '(' consumed */
static int parse_member_call(struct parser *ps, int target, size_t noff, size_t nlen, size_t pos)
{
    const char *name = ps->src + noff;
    int nargs = count_args(ps);
    for (size_t k = 0; k < sizeof(member_macros) / sizeof(member_macros[0]); k++)
        if (name_is(name, nlen, member_macros[k].name) && nargs == member_macros[k].nargs)
            return parse_macro(ps, member_macros[k].op, target, pos, nargs + 1);
    if ((nargs == 3 && (name_is(name, nlen, "all") || name_is(name, nlen, "exists") ||
                        name_is(name, nlen, "existsOne") || name_is(name, nlen, "transformList") ||
                        name_is(name, nlen, "transformMap"))) ||
        name_is(name, nlen, "transformMapEntry") ||
        (nargs == 4 &&
         (name_is(name, nlen, "transformList") || name_is(name, nlen, "transformMap"))))
        return UNSUP(ps, noff, "two-variable comprehension '%.*s'", (int)nlen, name);
    if (name_is(name, nlen, "existsOne") && nargs == 2)
        return UNSUP(ps, noff, "macro 'existsOne' (use exists_one)");
    if (gs__cel_unsupported_fn(name, nlen))
        return UNSUP(ps, noff, "function '%.*s'", (int)nlen, name);
    int rc = push(ps, target);
    if (rc)
        return rc;
    int n = parse_args(ps, T_RP, "')' or ','");
    if (n < 0)
        return n;
    return call_node(ps, pos, n + 1, NF_MEMBER, noff, nlen);
}

/* cel.bind(v, init, e) with "cel.bind(" consumed */
static int parse_bind(struct parser *ps, size_t pos)
{
    size_t off, n;
    if (count_args(ps) != 3)
        return SYNTAX(ps, pos, "cel.bind takes a name, a value and an expression");
    int rc = macro_var(ps, &off, &n);
    if (rc)
        return rc;
    int init = parse_expr(ps);
    if (init < 0)
        return init;
    if ((rc = push(ps, init)) || (rc = expect(ps, T_COMMA, "','")))
        return rc;
    int slot = ps->nscope++;
    ps->scope[slot].off = off;
    ps->scope[slot].len = n;
    int body = parse_expr(ps);
    ps->nscope--;
    if (body < 0)
        return body;
    if ((rc = push(ps, body)) || (rc = expect(ps, T_RP, "')'")))
        return rc;
    int k = mk(ps, OP_BIND, pos, 2);
    if (k >= 0)
        ps->p->nodes[k].var = (int16_t)slot;
    return k;
}

/* A global call NAME( with '(' current. */
static int parse_global_call(struct parser *ps, size_t noff, size_t nlen)
{
    const char *name = ps->src + noff;
    int rc = next(ps);
    if (rc)
        return rc;
    if (name_is(name, nlen, "has")) {
        if (count_args(ps) != 1)
            return SYNTAX(ps, noff, "has() takes one argument");
        int a = parse_expr(ps);
        if (a < 0)
            return a;
        if ((rc = expect(ps, T_RP, "')'")))
            return rc;
        struct gs_cel_node *x = &ps->p->nodes[a];
        if (x->op != OP_SELECT)
            return SYNTAX(ps, noff, "invalid argument to has() macro");
        x->op = OP_HAS;
        return a;
    }
    if (gs__cel_unsupported_fn(name, nlen))
        return UNSUP(ps, noff, "function '%.*s'", (int)nlen, name);
    int n = parse_args(ps, T_RP, "')' or ','");
    if (n < 0)
        return n;
    return call_node(ps, noff, n, 0, noff, nlen);
}

static int parse_ident(struct parser *ps)
{
    size_t pos = ps->tpos, n = ps->tlen;
    const char *name = ps->src + pos;
    int rc;
    if (name_is(name, n, "true") || name_is(name, n, "false")) {
        int k = mk(ps, OP_BOOL, pos, 0);
        if (k >= 0)
            ps->p->nodes[k].v.i = name_is(name, n, "true");
        return next(ps) ? ps->err->code : k;
    }
    if (name_is(name, n, "null")) {
        int k = mk(ps, OP_NULL, pos, 0);
        return next(ps) ? ps->err->code : k;
    }
    if (reserved(name, n))
        return SYNTAX(ps, pos, "reserved word '%.*s'", (int)n, name);
    if ((rc = next(ps)))
        return rc;
    if (ps->t == T_LP)
        return parse_global_call(ps, pos, n);
    if (ps->t == T_LBRACE)
        return UNSUP(ps, pos, "message construction");
    int slot = find_var(ps, name, n);
    if (slot >= 0) {
        int k = mk(ps, OP_VAR, pos, 0);
        if (k >= 0)
            ps->p->nodes[k].var = (int16_t)slot;
        return k;
    }
    if (name_is(name, n, "device"))
        return mk(ps, OP_DEVICE, pos, 0);
    /* a qualified function name: cel.bind, sets.contains, strings.quote, ... */
    if (ps->t == T_DOT) {
        size_t save = ps->pos;
        skip_space(ps);
        size_t fo = ps->pos, fe = fo;
        while (fe < ps->len && (ident_start(ps->src[fe]) || is_digit(ps->src[fe])))
            fe++;
        size_t after = fe;
        while (after < ps->len && (ps->src[after] == ' ' || ps->src[after] == '\t'))
            after++;
        bool call = after < ps->len && ps->src[after] == '(';
        ps->pos = save;
        if (call && name_is(name, n, "cel") && name_is(ps->src + fo, fe - fo, "bind")) {
            ps->pos = after + 1;
            if ((rc = next(ps)))
                return rc;
            return parse_bind(ps, pos);
        }
        if (call) {
            char q[64];
            snprintf(q, sizeof(q), "%.*s.%.*s", (int)n, name, (int)(fe - fo), ps->src + fo);
            if (gs__cel_unsupported_fn(q, strlen(q)))
                return UNSUP(ps, pos, "function '%s'", q);
        }
    }
    static const char *const types[] = {"int",   "uint", "double", "bool", "string",
                                        "bytes", "list", "map",    "type", "null_type"};
    for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
        if (name_is(name, n, types[k]))
            return UNSUP(ps, pos, "type name '%s' as a value", types[k]);
    return INVALID(ps, pos, "undeclared reference to '%.*s'", (int)n, name);
}

static int parse_list_or_map(struct parser *ps)
{
    size_t pos = ps->tpos;
    bool list = ps->t == T_LB;
    int rc = next(ps);
    if (rc)
        return rc;
    if (list) {
        if (ps->t == T_QUESTION)
            return UNSUP(ps, ps->tpos, "optional list element");
        int n = parse_args(ps, T_RB, "']' or ','");
        return n < 0 ? n : mk(ps, OP_LIST, pos, n);
    }
    int n = 0;
    while (ps->t != T_RBRACE) {
        if (ps->t == T_QUESTION)
            return UNSUP(ps, ps->tpos, "optional map entry");
        int key = parse_expr(ps);
        if (key < 0)
            return key;
        if ((rc = push(ps, key)) || (rc = expect(ps, T_COLON, "':'")))
            return rc;
        int val = parse_expr(ps);
        if (val < 0)
            return val;
        if ((rc = push(ps, val)))
            return rc;
        n += 2;
        if (ps->t == T_COMMA) {
            if ((rc = next(ps)))
                return rc;
        } else if (ps->t != T_RBRACE) {
            return expect(ps, T_RBRACE, "'}' or ','");
        }
    }
    if ((rc = next(ps)))
        return rc;
    return mk(ps, OP_MAP, pos, n);
}

/* A number literal, negated when neg (the '-' before it belongs to the literal). */
static int parse_number(struct parser *ps, bool neg, size_t pos)
{
    int k;
    if (ps->t == T_INT) {
        if (ps->tu > (uint64_t)INT64_MAX + (neg ? 1 : 0))
            return SYNTAX(ps, pos, "integer literal out of range");
        k = mk(ps, OP_INT, pos, 0);
        if (k >= 0)
            ps->p->nodes[k].v.i = neg ? (int64_t)(0 - ps->tu) : (int64_t)ps->tu;
    } else if (ps->t == T_UINT) {
        k = mk(ps, OP_UINT, pos, 0);
        if (k >= 0)
            ps->p->nodes[k].v.u = ps->tu;
    } else {
        k = mk(ps, OP_DOUBLE, pos, 0);
        if (k >= 0)
            ps->p->nodes[k].v.d = neg ? -ps->td : ps->td;
    }
    return next(ps) ? ps->err->code : k;
}

static int parse_primary(struct parser *ps)
{
    size_t pos = ps->tpos;
    int k, rc;
    switch (ps->t) {
    case T_LP:
        if ((rc = next(ps)))
            return rc;
        k = parse_expr(ps);
        if (k < 0)
            return k;
        if ((rc = expect(ps, T_RP, "')'")))
            return rc;
        return k;
    case T_STR:
        k = mk(ps, OP_STR, pos, 0);
        if (k >= 0) {
            ps->p->nodes[k].s = ps->ts;
            ps->p->nodes[k].slen = ps->tslen;
        }
        return next(ps) ? ps->err->code : k;
    case T_INT:
    case T_UINT:
    case T_DOUBLE:
        return parse_number(ps, false, pos);
    case T_LB:
    case T_LBRACE:
        return parse_list_or_map(ps);
    case T_IDENT:
        return parse_ident(ps);
    case T_DOT:
        return UNSUP(ps, pos, "a leading '.' (root namespace)");
    case T_END:
        return SYNTAX(ps, pos, "unexpected end of expression");
    default:
        return SYNTAX(ps, pos, "unexpected '%.*s'", (int)ps->tlen, ps->src + ps->tpos);
    }
}

static int parse_member(struct parser *ps, int k)
{
    int rc;
    while (k >= 0 && (ps->t == T_DOT || ps->t == T_LB)) {
        size_t pos = ps->tpos;
        bool dot = ps->t == T_DOT;
        if ((rc = next(ps)))
            return rc;
        if (ps->t == T_QUESTION)
            return UNSUP(ps, ps->tpos, "optional %s", dot ? "field selection" : "index");
        if (!dot) {
            int idx = parse_expr(ps);
            if (idx < 0)
                return idx;
            if ((rc = expect(ps, T_RB, "']'")))
                return rc;
            k = mk2(ps, OP_INDEX, pos, k, idx);
            continue;
        }
        if (ps->t != T_IDENT)
            return SYNTAX(ps, ps->tpos, "expected a name after '.'");
        size_t noff = ps->tpos, nlen = ps->tlen;
        if (reserved(ps->src + noff, nlen))
            return SYNTAX(ps, noff, "reserved word '%.*s'", (int)nlen, ps->src + noff);
        if ((rc = next(ps)))
            return rc;
        if (ps->t == T_LP) {
            if ((rc = next(ps)))
                return rc;
            k = parse_member_call(ps, k, noff, nlen, noff);
            continue;
        }
        if ((rc = push(ps, k)))
            return rc;
        k = mk(ps, OP_SELECT, noff, 1);
        if (k >= 0) {
            int32_t at = ps->p->npool;
            if ((rc = pool_put(ps, ps->src + noff, nlen)))
                return rc;
            ps->p->nodes[k].s = at;
            ps->p->nodes[k].slen = (int32_t)nlen;
        }
    }
    return k;
}

static int parse_unary(struct parser *ps)
{
    size_t pos = ps->tpos;
    int nnot = 0, nneg = 0, rc, k;
    if (ps->t == T_NOT) {
        while (ps->t == T_NOT) {
            nnot++;
            if ((rc = next(ps)))
                return rc;
        }
    } else {
        while (ps->t == T_MINUS) {
            nneg++;
            if ((rc = next(ps)))
                return rc;
        }
    }
    bool number = ps->t == T_INT || ps->t == T_DOUBLE;
    if (nneg > 0 && number) {
        k = parse_number(ps, true, ps->tpos);
        nneg--;
    } else {
        k = parse_primary(ps);
    }
    k = parse_member(ps, k);
    if (k < 0)
        return k;
    if (nnot % 2 || nneg % 2) {
        if ((rc = push(ps, k)))
            return rc;
        k = mk(ps, nnot ? OP_NOT : OP_NEG, pos, 1);
    }
    return k;
}

static int parse_binary(struct parser *ps, int level);

static const struct {
    enum tok t;
    int op, level;
} binops[] = {
    {T_STAR, OP_MUL, 2},  {T_SLASH, OP_DIV, 2}, {T_PERCENT, OP_MOD, 2}, {T_PLUS, OP_ADD, 1},
    {T_MINUS, OP_SUB, 1}, {T_EQ, OP_EQ, 0},     {T_NE, OP_NE, 0},       {T_LT, OP_LT, 0},
    {T_LE, OP_LE, 0},     {T_GT, OP_GT, 0},     {T_GE, OP_GE, 0},
};

static int binop_of(const struct parser *ps, int level)
{
    if (level == 0 && is_word(ps, "in"))
        return OP_IN;
    for (size_t k = 0; k < sizeof(binops) / sizeof(binops[0]); k++)
        if (binops[k].t == ps->t && binops[k].level == level)
            return binops[k].op;
    return 0;
}

/* level 0: relations, 1: + -, 2: * / %; left-associative */
static int parse_binary(struct parser *ps, int level)
{
    int a = level == 2 ? parse_unary(ps) : parse_binary(ps, level + 1);
    int op;
    while (a >= 0 && (op = binop_of(ps, level))) {
        size_t pos = ps->tpos;
        int rc = next(ps);
        if (rc)
            return rc;
        int b = level == 2 ? parse_unary(ps) : parse_binary(ps, level + 1);
        if (b < 0)
            return b;
        a = mk2(ps, op, pos, a, b);
    }
    return a;
}

/* a chain of && (or ||) operands, balanced */
static int parse_chain(struct parser *ps, bool or)
{
    int base = ps->nstack, rc;
    size_t pos = 0;
    for (;;) {
        int a = or ? parse_chain(ps, false) : parse_binary(ps, 0);
        if (a < 0)
            return a;
        if ((rc = push(ps, a)))
            return rc;
        if (ps->t != (or ? T_OR : T_AND))
            break;
        if (!pos)
            pos = ps->tpos;
        if ((rc = next(ps)))
            return rc;
    }
    int k = balance(ps, or ? OP_OR : OP_AND, pos, base, ps->nstack - 1);
    ps->nstack = base;
    return k;
}

static int parse_expr(struct parser *ps)
{
    int rc = enter(ps);
    if (rc)
        return rc;
    int c = parse_chain(ps, true);
    if (c >= 0 && ps->t == T_QUESTION) {
        size_t pos = ps->tpos;
        if ((rc = next(ps)) || (rc = push(ps, c)))
            return rc;
        int a = parse_chain(ps, true);
        if (a < 0)
            return a;
        if ((rc = push(ps, a)) || (rc = expect(ps, T_COLON, "':'")))
            return rc;
        int b = parse_expr(ps);
        if (b < 0)
            return b;
        if ((rc = push(ps, b)))
            return rc;
        c = mk(ps, OP_COND, pos, 3);
    }
    ps->depth--;
    return c;
}

static int tree_depth(const struct gs_cel *p, int k, int d)
{
    if (d > MAX_TREE)
        return d;
    const struct gs_cel_node *x = &p->nodes[k];
    int m = d;
    for (int i = 0; i < x->nk; i++) {
        int c = tree_depth(p, p->kids[x->k + i], d + 1);
        if (c > m)
            m = c;
    }
    return m;
}

int gs__cel_parse(const char *src, size_t len, struct gs_cel *p, struct gs_error *err)
{
    struct parser parser, *ps = &parser;
    memset(ps, 0, offsetof(struct parser, stack)); /* the stack is written before it is read */
    ps->src = src;
    ps->len = len;
    ps->p = p;
    ps->err = err;
    int rc = next(ps);
    int k = rc ? rc : parse_expr(ps);
    if (k >= 0 && ps->t != T_END)
        k = SYNTAX(ps, ps->tpos, "unexpected '%.*s' after the expression", (int)ps->tlen,
                   ps->src + ps->tpos);
    if (k >= 0 && tree_depth(p, k, 0) > MAX_TREE)
        k = UNSUP(ps, -1, "expression nested more than %d deep", MAX_TREE);
    if (k < 0)
        return k;
    p->root = k;
    return 0;
}
