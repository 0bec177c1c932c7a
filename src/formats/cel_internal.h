/* cel_internal.h - what the modules of gpusched's CEL share; not part of cel.h's contract.
 *
 *   cel_parse.c   lexer and parser: source to terms (struct gs_cel_node), macros expanded to
 *                 comprehension terms, names resolved
 *   cel_check.c   the type checker (overloads, literals of one type, the result type) and the
 *                 folding of constant conversions
 *   cel_cost.c    upstream's worst-case cost estimate
 *   cel_eval.c    the evaluator: values, the device, operators, comprehensions
 *   cel_lib.c     the function table and the functions (strings, conversions, versions,
 *                 quantities)
 *   cel_re.c      the regular expressions of matches()
 *
 * Terms: a tree in nodes[], children in kids[node.k .. node.k + node.nk). Types: an index into
 * types[], the first CT_FIXED fixed (enum below), then lists and maps made as needed. */
#ifndef GS_CEL_INTERNAL_H
#define GS_CEL_INTERNAL_H

#include "cel.h"

#include "../core/quantity.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_error;

enum gs__cel_op {
    OP_NONE = 0,
    OP_BOOL, /* literals: v */
    OP_INT,
    OP_UINT,
    OP_DOUBLE,
    OP_STR, /* s, slen */
    OP_NULL,
    OP_DEVICE, /* the variable device */
    OP_VAR,    /* a comprehension or cel.bind variable: var */
    OP_SELECT, /* kid0.field (s) */
    OP_HAS,    /* has(kid0.field) */
    OP_INDEX,  /* kid0[kid1] */
    OP_LIST,   /* [kids] */
    OP_MAP,    /* {kid0: kid1, kid2: kid3, ...} */
    OP_CALL,   /* fn(kids); F_MEMBER in flags: kid0 is the target */
    OP_NOT,
    OP_NEG,
    OP_AND,
    OP_OR,
    OP_COND, /* kid0 ? kid1 : kid2 */
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_IN,
    /* macros: kid0 the range, var the iteration variable, then the predicate and/or map */
    OP_ALL,
    OP_EXISTS,
    OP_EXISTS_ONE,
    OP_MAPX,   /* range.map(var, kid1) */
    OP_MAPF,   /* range.map(var, kid1, kid2): kid2 where kid1 */
    OP_FILTER, /* range.filter(var, kid1) */
    OP_BIND,   /* cel.bind(var, kid0, kid1) */
    OP_COUNT
};

#define NF_MEMBER 1 /* a member call: target.fn(args) */
#define NF_FOLDED 2 /* a constant conversion folded: the literal's op in var, its value in v, s */

/* type kinds */
enum gs__cel_kind {
    K_DYN = 0,
    K_ANY,  /* a device attribute's value: like dyn, but not a comprehension range */
    K_FREE, /* the element of an empty literal: fits anything */
    K_ERR,
    K_BOOL,
    K_INT,
    K_UINT,
    K_DOUBLE,
    K_STRING,
    K_NULL,
    K_SEMVER,
    K_QTY,
    K_DEVICE,
    K_LIST,
    K_MAP
};

/* the fixed types: types[CT_x] */
enum {
    CT_DYN = 0,
    CT_ANY,
    CT_FREE,
    CT_ERR,
    CT_BOOL,
    CT_INT,
    CT_UINT,
    CT_DOUBLE,
    CT_STRING,
    CT_NULL,
    CT_SEMVER,
    CT_QTY,
    CT_DEVICE,
    CT_ATTR_IN,  /* map(string, any) */
    CT_ATTR_OUT, /* map(string, CT_ATTR_IN) */
    CT_CAP_IN,   /* map(string, quantity) */
    CT_CAP_OUT,  /* map(string, CT_CAP_IN) */
    CT_LIST_STR,
    CT_LIST_DYN,
    CT_MAP_DYN,
    CT_FIXED
};

/* functions */
enum gs__cel_fn {
    F_NONE = 0,
    F_SIZE,
    F_CONTAINS,
    F_STARTS,
    F_ENDS,
    F_MATCHES,
    F_INT,
    F_UINT,
    F_DOUBLE,
    F_STRING,
    F_BOOL,
    F_DYN,
    F_CHARAT,
    F_INDEXOF,
    F_LASTINDEXOF,
    F_LOWER,
    F_UPPER,
    F_REPLACE,
    F_SPLIT,
    F_SUBSTRING,
    F_TRIM,
    F_JOIN,
    F_SEMVER,
    F_ISSEMVER,
    F_MAJOR,
    F_MINOR,
    F_PATCH,
    F_QUANTITY,
    F_ISQUANTITY,
    F_SIGN,
    F_ISINTEGER,
    F_ASINTEGER,
    F_ASFLOAT,
    F_ADD,
    F_SUB,
    F_GREATER, /* isGreaterThan: versions and quantities */
    F_LESS,    /* isLessThan */
    F_COMPARE, /* compareTo */
    F_SUM,     /* the list library: sum, min, max, isSorted (indexOf, lastIndexOf: F_INDEXOF) */
    F_MIN,
    F_MAX,
    F_ISSORTED,
    F_COUNT
};

/* An overload of a function: its parameters (the target first for a member) as kinds, with
 * K_DYN for any value, K_LIST and K_MAP for any list and map, CT_LIST_STR-like exact types
 * given by type index in ptype when nonzero. */
struct gs__cel_overload {
    const char *name;
    uint8_t fn;
    bool member;
    uint8_t nargs;
    uint8_t param[4]; /* fixed type indices (CT_x) */
    uint8_t result;   /* fixed type index */
};

extern const struct gs__cel_overload gs__cel_overloads[];
extern const size_t gs__cel_noverloads;
/* Whether name is a function or macro of upstream's environment that gpusched does not run. */
bool gs__cel_unsupported_fn(const char *name, size_t len);
/* The function's name for messages. */
const char *gs__cel_fn_name(int fn);

/* ---- compile: shared by cel_parse.c, cel_check.c and cel_cost.c ---- */

/* Set a refusal on p and in err: "<prefix>: <what> at position N" (pos < 0: no position). */
int gs__cel_fail(struct gs_cel *p, struct gs_error *err, int refusal, int pos, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Parse src into p (terms, root). Returns 0 or GS_EINVAL. */
int gs__cel_parse(const char *src, size_t len, struct gs_cel *p, struct gs_error *err);
/* Type-check p, fold constant conversions. Returns 0 or GS_EINVAL. */
int gs__cel_check(struct gs_cel *p, struct gs_error *err);
/* The estimated worst-case cost of p (saturating at UINT64_MAX). */
uint64_t gs__cel_estimate(const struct gs_cel *p);
/* A type's name as CEL prints it ("list(int)") into buf. */
const char *gs__cel_type_name(const struct gs_cel *p, int t, char *buf, size_t size);

static inline const struct gs_cel_node *gs__cel_kid(const struct gs_cel *p,
                                                    const struct gs_cel_node *x, int i)
{
    return &p->nodes[p->kids[x->k + i]];
}

/* ---- evaluation: shared by cel_eval.c and cel_lib.c ---- */

enum gs__cel_vt {
    V_ERR = 0,
    V_BOOL,
    V_INT,
    V_UINT,
    V_DOUBLE,
    V_STR,
    V_NULL,
    V_LIST, /* p: struct gs__cel_val[n] */
    V_MAP,  /* p: struct gs__cel_val[2n], key then value */
    V_DMAP, /* a map of the device: aux is the enum below; p, n the domain */
    V_VER,  /* p: struct gs__cel_semver */
    V_QTY,  /* p: struct gs__cel_qty; aux 1: made by add or sub */
    V_DEVICE
};

enum { DM_ATTRS = 0, DM_ATTR_DOMAIN, DM_CAPS, DM_CAP_DOMAIN };

/* error kinds */
enum { E_RUNTIME = 0, E_COST };

struct gs__cel_val {
    uint8_t t;
    uint8_t aux;
    uint32_t n;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double d;
    };
    const void *p; /* V_ERR: the message, a static string */
};

struct gs__cel_semver {
    uint64_t major, minor, patch;
    const char *pre; /* the pre-release, without '-', and its length */
    uint32_t npre;
};

/* A quantity as upstream's resource.Quantity holds it: its value, and whether it is an
 * int64Amount {value, scale} (AsInt64 can succeed) or an inf.Dec (it cannot). */
struct gs__cel_qty {
    struct gs_quantity q;
    bool dec;
    int64_t value;
    int32_t scale;
};

/* apimachinery's ParseQuantity of s[0..n): 0 with *out, or -1 when upstream refuses it. */
int gs__cel_qty_parse(const char *s, size_t n, struct gs__cel_qty *out);
/* The representation of a canonical quantity (a device's capacity). */
void gs__cel_qty_from_value(const struct gs_quantity *q, struct gs__cel_qty *out);

struct gs__cel_ctx {
    const struct gs_cel *p;
    const struct gs_dra_device *dev;
    char *mem;
    size_t used, size;
    bool out_of_mem;
    const char *fatal; /* an error that ends the evaluation (upstream's panics) */
    uint64_t cost;
    struct gs__cel_val vars[GS_CEL_MAX_VARS];
    int16_t lazy[GS_CEL_MAX_VARS]; /* cel.bind: the term not evaluated yet, or -1 */
    char msg[160];                 /* a runtime error's message with its subject */
};

/* Arena allocation, aligned; NULL (and ctx->out_of_mem) past the bound. */
void *gs__cel_alloc(struct gs__cel_ctx *c, size_t n);
struct gs__cel_val gs__cel_error(const char *msg);
struct gs__cel_val gs__cel_errorf(struct gs__cel_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
struct gs__cel_val gs__cel_str(const char *s, size_t n);
/* Evaluate a call term (cel_lib.c) with its arguments evaluated (the target first). */
struct gs__cel_val gs__cel_call(struct gs__cel_ctx *c, const struct gs_cel_node *x,
                                const struct gs__cel_val *a, int n);
/* CEL equality: 1, 0, or -1 when it errs (a version or quantity against another type). */
int gs__cel_equal(struct gs__cel_ctx *c, const struct gs__cel_val *a, const struct gs__cel_val *b);
/* Size of a string (code points), list or map; -1 for other values. */
int64_t gs__cel_size(const struct gs__cel_ctx *c, const struct gs__cel_val *v);
/* The semver and quantity functions (cel_kube.c). */
struct gs__cel_val gs__cel_kube_call(struct gs__cel_ctx *c, int fn, const struct gs__cel_val *a,
                                     int n);
/* Add n to the cost; ceil(n * 0.1), CEL's string traversal cost. */
void gs__cel_charge(struct gs__cel_ctx *c, uint64_t n);
void gs__cel_charge_scan(struct gs__cel_ctx *c, uint64_t n);

/* Versions (blang/semver v4 as upstream parses them; with buf, of n + 8 bytes, normalized
 * first as semver(s, true) does, the result pointing into buf). 0, or -1 with *why set. */
int gs__cel_semver_parse(const char *s, size_t n, char *buf, struct gs__cel_semver *out,
                         const char **why);
int gs__cel_semver_cmp(const struct gs__cel_semver *a, const struct gs__cel_semver *b);

/* UTF-8: the number of code points of s[0..n); the byte offset of code point i (n if past);
 * the code point at s[*i], advancing *i (an invalid byte reads as U+FFFD, as in Go). */
size_t gs__cel_utf8_len(const char *s, size_t n);
size_t gs__cel_utf8_off(const char *s, size_t n, size_t i);
uint32_t gs__cel_utf8_decode(const char *s, size_t n, size_t *i);

/* CEL ordering of two values: -1, 0, 1; 2 when they do not compare (no overload), 3 when
 * one is NaN. Numbers compare across int, uint and double as cel-go does. */
int gs__cel_order(const struct gs__cel_val *a, const struct gs__cel_val *b);

static inline int gs__cel_hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Regular expressions (cel_re.c): a program for a Pike VM, jumps relative. compile: 0,
 * GS_EINVAL (not RE2 syntax: why says) or GS_ENOSPC (outside the subset or too large: why
 * says). match: 1 when s[0..n) has a match anywhere, else 0. About 10 KiB: on the stack of
 * the caller, who must have it. */
struct gs__cel_re_inst {
    uint8_t op, flags;
    int16_t x, y;
    uint32_t c;
};
struct gs__cel_re {
    int n, nr;
    struct gs__cel_re_inst in[GS_CEL_RE_MAX];
    uint32_t rng[GS_CEL_RE_MAX][2];
};
int gs__cel_re_compile(const char *pat, size_t n, struct gs__cel_re *re, const char **why);
int gs__cel_re_match(const struct gs__cel_re *re, const char *s, size_t n);

#endif
