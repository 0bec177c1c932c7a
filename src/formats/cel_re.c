/* cel_re.c - the regular expressions of CEL's matches() (cel.h): RE2 syntax as Go's
 * regexp/syntax reads it (Perl flags i, m, s, U; groups, named groups, alternation, * + ? and
 * {n,m} with lazy forms, classes with ranges, negation, POSIX [:name:] and \d \s \w, the
 * escapes, ^ $ \A \z \b \B, \Q...\E), refusing what RE2 refuses with its reason, compiled to a
 * small program of relative jumps and run by a Pike VM over the UTF-8 input: time linear in
 * the input times the program, memory bounded by GS_CEL_RE_MAX. Not supported (refused as
 * such): Unicode classes \p, and case folding beyond ASCII. cel_lib.c calls it at compile time
 * for literal patterns and at run time for the others. */
#include "cel_internal.h"

#include "../base/error.h"

#include <string.h>

enum {
    I_CHAR = 1, /* c; flags & 1: ASCII case folded */
    I_ANY,      /* flags & 1: also \n */
    I_CLASS,    /* ranges rng[c .. c + x); flags & 1 folded, & 2 negated */
    I_SPLIT,    /* to pc + x (preferred) and pc + y */
    I_JMP,      /* to pc + x */
    I_BOT,      /* \A, ^ without m */
    I_EOT,      /* \z, $ without m */
    I_BOL,      /* ^ with m */
    I_EOL,      /* $ with m */
    I_WORDB,
    I_NWORDB,
    I_MATCH
};

#define F_FOLD  1 /* pattern flags */
#define F_DOTNL 2
#define F_MULTI 4
#define MAX_REP 1000

struct re_parser {
    const char *s;
    size_t n, i;
    struct gs__cel_re *re;
    const char **why;
    int depth;
};

static int bad(struct re_parser *p, const char *why)
{
    *p->why = why;
    return GS_EINVAL;
}

static int unsup(struct re_parser *p, const char *why)
{
    *p->why = why;
    return GS_ENOSPC;
}

static int emit(struct re_parser *p, int op, int flags, int x, int y, uint32_t c)
{
    struct gs__cel_re *re = p->re;
    if (re->n >= GS_CEL_RE_MAX)
        return unsup(p, "expression too large");
    re->in[re->n++] =
        (struct gs__cel_re_inst){(uint8_t)op, (uint8_t)flags, (int16_t)x, (int16_t)y, c};
    return 0;
}

/* insert one instruction at pc, shifting [pc, n) up by one */
static int insert(struct re_parser *p, int pc, int op, int x, int y)
{
    struct gs__cel_re *re = p->re;
    if (re->n >= GS_CEL_RE_MAX)
        return unsup(p, "expression too large");
    memmove(&re->in[pc + 1], &re->in[pc], sizeof(re->in[0]) * (size_t)(re->n - pc));
    re->in[pc] = (struct gs__cel_re_inst){(uint8_t)op, 0, (int16_t)x, (int16_t)y, 0};
    re->n++;
    return 0;
}

static int add_range(struct re_parser *p, uint32_t lo, uint32_t hi)
{
    struct gs__cel_re *re = p->re;
    if (re->nr >= GS_CEL_RE_MAX)
        return unsup(p, "expression too large");
    re->rng[re->nr][0] = lo;
    re->rng[re->nr][1] = hi;
    re->nr++;
    return 0;
}

/* the next code point of the pattern; invalid UTF-8 is an error */
static int next_rune(struct re_parser *p, uint32_t *r)
{
    const unsigned char *u = (const unsigned char *)p->s + p->i;
    size_t left = p->n - p->i;
    int w = u[0] < 0x80 ? 1 : u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (w == 0 || (size_t)w > left)
        return bad(p, "invalid UTF-8");
    uint32_t cp = w == 1 ? u[0] : u[0] & (0x7F >> w);
    for (int k = 1; k < w; k++) {
        if ((u[k] & 0xC0) != 0x80)
            return bad(p, "invalid UTF-8");
        cp = cp << 6 | (u[k] & 0x3F);
    }
    p->i += (size_t)w;
    *r = cp;
    return 0;
}

static bool word_char(uint32_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* \d \s \w (and upper-case negations) as ranges; returns 1 when c names one */
static int perl_class(struct re_parser *p, char c, bool *neg)
{
    static const char *const sets[] = {"09", "\t\n\f\r  ", "09AZ__az"};
    const char *set;
    switch (c | 0x20) {
    case 'd':
        set = sets[0];
        break;
    case 's':
        set = sets[1];
        break;
    case 'w':
        set = sets[2];
        break;
    default:
        return 0;
    }
    *neg = c >= 'A' && c <= 'Z';
    for (size_t k = 0; set[k]; k += 2) {
        int rc = add_range(p, (unsigned char)set[k], (unsigned char)set[k + 1]);
        if (rc)
            return rc;
    }
    return 1;
}

/* an escape after '\' that stands for one code point (*r), or a class (*cls set) */
static int escape(struct re_parser *p, uint32_t *r)
{
    if (p->i >= p->n)
        return bad(p, "trailing backslash at end of expression");
    char c = p->s[p->i++];
    static const char simple[] = "a\af\ft\tn\nr\rv\v";
    for (size_t k = 0; simple[k]; k += 2)
        if (simple[k] == c) {
            *r = (unsigned char)simple[k + 1];
            return 0;
        }
    if (c >= '0' && c <= '7') {
        if (c != '0' && (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '7'))
            return bad(p, "invalid escape sequence");
        uint32_t v = (uint32_t)(c - '0');
        for (int k = 0; k < 2 && p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '7'; k++)
            v = v * 8 + (uint32_t)(p->s[p->i++] - '0');
        *r = v;
        return 0;
    }
    if (c == 'x') {
        uint32_t v = 0;
        if (p->i < p->n && p->s[p->i] == '{') {
            size_t b = ++p->i;
            while (p->i < p->n && gs__cel_hexval(p->s[p->i]) >= 0 && v <= 0x10FFFF)
                v = v * 16 + (uint32_t)gs__cel_hexval(p->s[p->i++]);
            if (p->i == b || p->i >= p->n || p->s[p->i] != '}' || v > 0x10FFFF)
                return bad(p, "invalid escape sequence");
            p->i++;
        } else {
            for (int k = 0; k < 2; k++) {
                if (p->i >= p->n || gs__cel_hexval(p->s[p->i]) < 0)
                    return bad(p, "invalid escape sequence");
                v = v * 16 + (uint32_t)gs__cel_hexval(p->s[p->i++]);
            }
        }
        *r = v;
        return 0;
    }
    if (c == 'p' || c == 'P')
        return unsup(p, "Unicode classes (\\p) are not supported");
    if ((unsigned char)c < 0x80 && !word_char((unsigned char)c)) {
        *r = (unsigned char)c;
        return 0;
    }
    return bad(p, "invalid escape sequence");
}

static int posix_class(struct re_parser *p, bool *neg, bool *found)
{
    static const struct {
        const char *name, *ranges;
    } cls[] = {{"alnum", "09AZaz"},
               {"alpha", "AZaz"},
               {"ascii", "\x01\x7f"},
               {"blank", "\t\t  "},
               {"cntrl", "\x01\x1f\x7f\x7f"},
               {"digit", "09"},
               {"graph", "!~"},
               {"lower", "az"},
               {"print", " ~"},
               {"punct", "!/:@[`{~"},
               {"space", "\t\r  "},
               {"upper", "AZ"},
               {"word", "09AZ__az"},
               {"xdigit", "09AFaf"}};
    *found = false;
    if (p->i + 2 >= p->n || p->s[p->i] != '[' || p->s[p->i + 1] != ':')
        return 0;
    const char *end = NULL;
    for (size_t k = p->i + 2; k + 1 < p->n; k++)
        if (p->s[k] == ':' && p->s[k + 1] == ']') {
            end = p->s + k;
            break;
        }
    if (!end)
        return 0;
    const char *name = p->s + p->i + 2;
    *neg = *name == '^';
    if (*neg)
        name++;
    for (size_t k = 0; k < sizeof(cls) / sizeof(cls[0]); k++) {
        if (strlen(cls[k].name) != (size_t)(end - name) ||
            memcmp(cls[k].name, name, (size_t)(end - name)) != 0)
            continue;
        for (const char *r = cls[k].ranges; *r; r += 2) {
            uint32_t lo = (unsigned char)r[0];
            int rc = add_range(p, lo == 1 ? 0 : lo, (unsigned char)r[1]);
            if (rc)
                return rc;
        }
        *found = true;
        p->i = (size_t)(end - p->s) + 2;
        return 0;
    }
    return bad(p, "invalid character class range");
}

/* the ranges of one negated sub-class (\D, [:^alpha:]) complemented into the class */
static int complement(struct re_parser *p, int from)
{
    struct gs__cel_re *re = p->re;
    int n = re->nr - from;
    uint32_t tmp[16][2];
    if (n > 16)
        return unsup(p, "expression too large");
    memcpy(tmp, re->rng[from], sizeof(tmp[0]) * (size_t)n);
    re->nr = from;
    /* the sub-classes' ranges are sorted and disjoint */
    uint32_t lo = 0;
    for (int k = 0; k < n; k++) {
        if (tmp[k][0] > lo) {
            int rc = add_range(p, lo, tmp[k][0] - 1);
            if (rc)
                return rc;
        }
        lo = tmp[k][1] + 1;
    }
    return add_range(p, lo, 0x10FFFF);
}

/* [...] after '[' */
static int parse_class(struct re_parser *p, int flags)
{
    int first = p->re->nr, rc;
    bool neg = false;
    if (p->i < p->n && p->s[p->i] == '^') {
        neg = true;
        p->i++;
    }
    bool start = true;
    for (;;) {
        if (p->i >= p->n)
            return bad(p, "missing closing ]");
        if (p->s[p->i] == ']' && !start)
            break;
        start = false;
        bool sub_neg, found;
        int mark = p->re->nr;
        if ((rc = posix_class(p, &sub_neg, &found)))
            return rc;
        if (found) {
            if (sub_neg && (rc = complement(p, mark)))
                return rc;
            continue;
        }
        uint32_t lo, hi;
        if (p->s[p->i] == '\\' && p->i + 1 < p->n) {
            p->i++;
            int pc = perl_class(p, p->s[p->i], &sub_neg);
            if (pc < 0)
                return pc;
            if (pc == 1) {
                p->i++;
                if (sub_neg && (rc = complement(p, mark)))
                    return rc;
                continue;
            }
            if (p->s[p->i] == 'b' || p->s[p->i] == 'B' || p->s[p->i] == 'A' || p->s[p->i] == 'z' ||
                p->s[p->i] == 'Q' || p->s[p->i] == 'E')
                return bad(p, "invalid escape sequence");
            if ((rc = escape(p, &lo)))
                return rc;
        } else if ((rc = next_rune(p, &lo))) {
            return rc;
        }
        hi = lo;
        if (p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
            p->i++;
            if (p->s[p->i] == '\\') {
                p->i++;
                if ((rc = escape(p, &hi)))
                    return rc;
            } else if ((rc = next_rune(p, &hi))) {
                return rc;
            }
            if (hi < lo)
                return bad(p, "invalid character class range");
        }
        if ((rc = add_range(p, lo, hi)))
            return rc;
    }
    p->i++;
    return emit(p, I_CLASS, (flags & F_FOLD ? 1 : 0) | (neg ? 2 : 0), p->re->nr - first, 0,
                (uint32_t)first);
}

static int parse_alt(struct re_parser *p, int *flags);

/* (...) after '(': a group, a named group, or flags */
static int parse_group(struct re_parser *p, int *flags)
{
    int inner = *flags, rc;
    if (p->i < p->n && p->s[p->i] == '?') {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == 'P' || p->s[p->i] == '<')) {
            if (p->s[p->i] == 'P')
                p->i++;
            if (p->i >= p->n || p->s[p->i] != '<')
                return bad(p, "invalid named capture");
            size_t b = ++p->i;
            while (p->i < p->n && word_char((unsigned char)p->s[p->i]))
                p->i++;
            if (p->i == b || p->i >= p->n || p->s[p->i] != '>')
                return bad(p, "invalid named capture");
            p->i++;
        } else {
            bool off = false, any = false;
            for (;;) {
                if (p->i >= p->n)
                    return bad(p, "missing closing )");
                char c = p->s[p->i++];
                int f = c == 'i' ? F_FOLD : c == 's' ? F_DOTNL : c == 'm' ? F_MULTI : 0;
                if (f || c == 'U') {
                    inner = off ? inner & ~f : inner | f;
                    any = true;
                } else if (c == '-' && !off) {
                    off = true;
                    any = false;
                } else if (c == ')' && any) {
                    *flags = inner; /* (?flags): the rest of the enclosing group */
                    return 1;
                } else if (c == ':' && (any || !off)) {
                    break;
                } else {
                    return bad(p, "invalid or unsupported Perl syntax");
                }
            }
        }
    }
    if (++p->depth > 32)
        return bad(p, "expression nests too deeply");
    if ((rc = parse_alt(p, &inner)))
        return rc;
    p->depth--;
    if (p->i >= p->n || p->s[p->i] != ')')
        return bad(p, "missing closing )");
    p->i++;
    return 0;
}

/* one atom; returns 1 when it emitted nothing that can repeat (a flag group) */
static int parse_atom(struct re_parser *p, int *flags)
{
    uint32_t r;
    int rc;
    char c = p->s[p->i];
    switch (c) {
    case '(':
        p->i++;
        return parse_group(p, flags);
    case '[':
        p->i++;
        return parse_class(p, *flags);
    case '.':
        p->i++;
        return emit(p, I_ANY, *flags & F_DOTNL ? 1 : 0, 0, 0, 0);
    case '^':
        p->i++;
        return emit(p, *flags & F_MULTI ? I_BOL : I_BOT, 0, 0, 0, 0);
    case '$':
        p->i++;
        return emit(p, *flags & F_MULTI ? I_EOL : I_EOT, 0, 0, 0, 0);
    case '\\':
        p->i++;
        if (p->i < p->n) {
            char e = p->s[p->i];
            static const char asserts[] = "bBAz";
            static const int ops[] = {I_WORDB, I_NWORDB, I_BOT, I_EOT};
            const char *a = memchr(asserts, e, 4);
            if (a) {
                p->i++;
                return emit(p, ops[a - asserts], 0, 0, 0, 0);
            }
            if (e == 'Q') {
                p->i++;
                while (p->i < p->n) {
                    if (p->s[p->i] == '\\' && p->i + 1 < p->n && p->s[p->i + 1] == 'E') {
                        p->i += 2;
                        break;
                    }
                    if ((rc = next_rune(p, &r)) || (rc = emit(p, I_CHAR, *flags & F_FOLD, 0, 0, r)))
                        return rc;
                }
                return 1;
            }
            bool neg;
            int first = p->re->nr;
            int pc = perl_class(p, e, &neg);
            if (pc < 0)
                return pc;
            if (pc == 1) {
                p->i++;
                return emit(p, I_CLASS, neg ? 2 : 0, p->re->nr - first, 0, (uint32_t)first);
            }
        }
        if ((rc = escape(p, &r)))
            return rc;
        return emit(p, I_CHAR, *flags & F_FOLD, 0, 0, r);
    default:
        if ((rc = next_rune(p, &r)))
            return rc;
        return emit(p, I_CHAR, *flags & F_FOLD, 0, 0, r);
    }
}

/* {n}, {n,}, {n,m} at p->i: 1 with *min, *max (-1: no bound), 0 when it is not one */
static int repeat_count(struct re_parser *p, int *min, int *max)
{
    size_t i = p->i + 1;
    int v[2] = {0, -1}, k = 0;
    bool digits = false;
    for (; i < p->n; i++) {
        char c = p->s[i];
        if (c >= '0' && c <= '9') {
            v[k] = (k == 1 && v[1] < 0 ? 0 : v[k]) * 10 + (c - '0');
            if (v[k] > 100000)
                v[k] = 100000;
            digits = true;
        } else if (c == ',' && k == 0 && digits) {
            k = 1;
        } else if (c == '}' && digits) {
            break;
        } else {
            return 0;
        }
    }
    if (i >= p->n)
        return 0;
    *min = v[0];
    *max = k == 0 ? v[0] : v[1];
    p->i = i + 1;
    return 1;
}

/* repeat the fragment [from, n) min..max times (max -1: unbounded) */
static int repeat(struct re_parser *p, int from, int min, int max)
{
    struct gs__cel_re *re = p->re;
    int len = re->n - from, rc;
    if (min > MAX_REP || max > MAX_REP || (max >= 0 && max < min))
        return bad(p, "invalid repeat count");
    if (len == 0)
        return 0;
    struct gs__cel_re_inst frag[GS_CEL_RE_MAX];
    memcpy(frag, &re->in[from], sizeof(frag[0]) * (size_t)len);
    re->n = from;
    for (int k = 0; k < min; k++) {
        if (re->n + len > GS_CEL_RE_MAX)
            return unsup(p, "expression too large");
        memcpy(&re->in[re->n], frag, sizeof(frag[0]) * (size_t)len);
        re->n += len;
    }
    if (max < 0) {
        /* L: split body, end; body; jmp L */
        int l = re->n;
        if (re->n + len + 2 > GS_CEL_RE_MAX)
            return unsup(p, "expression too large");
        if ((rc = emit(p, I_SPLIT, 0, 1, len + 2, 0)))
            return rc;
        memcpy(&re->in[re->n], frag, sizeof(frag[0]) * (size_t)len);
        re->n += len;
        return emit(p, I_JMP, 0, l - re->n, 0, 0);
    }
    /* (x(x(x)?)?)?: each optional copy skips to the end */
    int opt = max - min, starts[MAX_REP];
    if (re->n + opt * (len + 1) > GS_CEL_RE_MAX)
        return unsup(p, "expression too large");
    for (int k = 0; k < opt; k++) {
        starts[k] = re->n;
        if ((rc = emit(p, I_SPLIT, 0, 1, 0, 0)))
            return rc;
        memcpy(&re->in[re->n], frag, sizeof(frag[0]) * (size_t)len);
        re->n += len;
    }
    for (int k = 0; k < opt; k++)
        re->in[starts[k]].y = (int16_t)(re->n - starts[k]);
    return 0;
}

static bool is_quant(const struct re_parser *p)
{
    char c = p->s[p->i];
    if (c == '*' || c == '+' || c == '?')
        return true;
    if (c != '{')
        return false;
    struct re_parser q = *p;
    int a, b;
    return repeat_count(&q, &a, &b) == 1;
}

static int parse_concat(struct re_parser *p, int *flags)
{
    int rc;
    while (p->i < p->n && p->s[p->i] != '|' && p->s[p->i] != ')') {
        if (is_quant(p))
            return bad(p, "missing argument to repetition operator");
        int from = p->re->n;
        rc = parse_atom(p, flags);
        if (rc < 0)
            return rc;
        if (rc == 1)
            continue; /* flags or \Q..\E: nothing to repeat as one */
        bool repeated = false;
        while (p->i < p->n && is_quant(p)) {
            if (repeated)
                return bad(p, "invalid nested repetition operator");
            repeated = true;
            int min = 0, max = -1;
            char c = p->s[p->i];
            if (c == '{')
                repeat_count(p, &min, &max);
            else {
                p->i++;
                min = c == '+';
                max = c == '?' ? 1 : -1;
            }
            if (p->i < p->n && p->s[p->i] == '?')
                p->i++; /* lazy: the same language */
            if ((rc = repeat(p, from, min, max)))
                return rc;
        }
    }
    return 0;
}

static int parse_alt(struct re_parser *p, int *flags)
{
    int from = p->re->n, rc, last = -1;
    if ((rc = parse_concat(p, flags)))
        return rc;
    while (p->i < p->n && p->s[p->i] == '|') {
        p->i++;
        /* split A, B in front of A; A ends with a jump past the last branch, the jumps
         * chained through x until then */
        if ((rc = insert(p, from, I_SPLIT, 1, 0)))
            return rc;
        int j = p->re->n;
        if ((rc = emit(p, I_JMP, 0, last, 0, 0)))
            return rc;
        last = j;
        p->re->in[from].y = (int16_t)(p->re->n - from);
        from = p->re->n;
        if ((rc = parse_concat(p, flags)))
            return rc;
    }
    while (last >= 0) {
        int prev = p->re->in[last].x;
        p->re->in[last].x = (int16_t)(p->re->n - last);
        last = prev;
    }
    return 0;
}

int gs__cel_re_compile(const char *pat, size_t n, struct gs__cel_re *re, const char **why)
{
    struct re_parser p = {.s = pat, .n = n, .re = re, .why = why};
    int flags = 0;
    re->n = re->nr = 0;
    int rc = parse_alt(&p, &flags);
    if (rc)
        return rc;
    if (p.i < n)
        return bad(&p, "unexpected )");
    return emit(&p, I_MATCH, 0, 0, 0, 0);
}

/* ---------- matching ---------- */

static uint32_t fold(uint32_t c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static bool class_has(const struct gs__cel_re *re, const struct gs__cel_re_inst *in, uint32_t c)
{
    bool hit = false;
    for (int k = 0; k < in->x && !hit; k++) {
        const uint32_t *r = re->rng[in->c + (uint32_t)k];
        hit = c >= r[0] && c <= r[1];
        if (!hit && (in->flags & 1) && c < 128) {
            uint32_t u = c >= 'a' && c <= 'z' ? c - 32 : fold(c);
            hit = u >= r[0] && u <= r[1];
        }
    }
    return hit != ((in->flags & 2) != 0);
}

struct vm {
    const struct gs__cel_re *re;
    uint16_t *list[2];
    int n[2];
    uint32_t *mark, gen;
    uint16_t *stack;
    int32_t prev, next; /* code points around the position; -1 at the ends */
};

static bool is_word(int32_t c)
{
    return c >= 0 && word_char((uint32_t)c);
}

/* add pc and what it reaches without input to list l; true when that reaches the match */
static bool add(struct vm *v, int l, int pc)
{
    int sp = 0;
    v->stack[sp++] = (uint16_t)pc;
    while (sp > 0) {
        pc = v->stack[--sp];
        if (v->mark[pc] == v->gen)
            continue;
        v->mark[pc] = v->gen;
        const struct gs__cel_re_inst *in = &v->re->in[pc];
        bool pass;
        switch (in->op) {
        case I_MATCH:
            return true;
        case I_JMP:
            v->stack[sp++] = (uint16_t)(pc + in->x);
            continue;
        case I_SPLIT:
            v->stack[sp++] = (uint16_t)(pc + in->y);
            v->stack[sp++] = (uint16_t)(pc + in->x);
            continue;
        case I_BOT:
            pass = v->prev < 0;
            break;
        case I_EOT:
            pass = v->next < 0;
            break;
        case I_BOL:
            pass = v->prev < 0 || v->prev == '\n';
            break;
        case I_EOL:
            pass = v->next < 0 || v->next == '\n';
            break;
        case I_WORDB:
        case I_NWORDB:
            pass = (is_word(v->prev) != is_word(v->next)) == (in->op == I_WORDB);
            break;
        default:
            v->list[l][v->n[l]++] = (uint16_t)pc;
            continue;
        }
        if (pass)
            v->stack[sp++] = (uint16_t)(pc + 1);
    }
    return false;
}

static bool step_ok(const struct gs__cel_re *re, const struct gs__cel_re_inst *in, int32_t c)
{
    switch (in->op) {
    case I_CHAR:
        return (uint32_t)c == in->c ||
               ((in->flags & 1) && c < 128 && fold((uint32_t)c) == fold(in->c));
    case I_ANY:
        return c != '\n' || (in->flags & 1);
    default:
        return class_has(re, in, (uint32_t)c);
    }
}

int gs__cel_re_match(const struct gs__cel_re *re, const char *s, size_t n)
{
    uint16_t a[GS_CEL_RE_MAX], b[GS_CEL_RE_MAX], st[2 * GS_CEL_RE_MAX + 2];
    uint32_t mark[GS_CEL_RE_MAX] = {0};
    struct vm v = {.re = re, .list = {a, b}, .mark = mark, .stack = st, .prev = -1};
    size_t j = 0;
    int cur = 0;
    v.next = j < n ? (int32_t)gs__cel_utf8_decode(s, n, &j) : -1;
    for (;;) {
        v.gen++;
        /* the threads carried over are in list cur; a new one starts here */
        for (int k = 0; k < v.n[cur]; k++)
            mark[v.list[cur][k]] = v.gen;
        int keep = v.n[cur];
        v.n[cur] = 0;
        for (int k = 0; k < keep; k++)
            v.list[cur][v.n[cur]++] = v.list[cur][k];
        if (add(&v, cur, 0))
            return 1;
        if (v.next < 0)
            return 0;
        int nxt = 1 - cur;
        v.n[nxt] = 0;
        int32_t c = v.next;
        v.prev = c;
        v.next = j < n ? (int32_t)gs__cel_utf8_decode(s, n, &j) : -1;
        v.gen++;
        for (int k = 0; k < v.n[cur]; k++) {
            const struct gs__cel_re_inst *in = &re->in[v.list[cur][k]];
            if (step_ok(re, in, c) && add(&v, nxt, v.list[cur][k] + 1))
                return 1;
        }
        cur = nxt;
    }
}
