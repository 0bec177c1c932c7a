/* cel.h - CEL device selectors of Dynamic Resource Allocation, as Kubernetes v1.37 compiles and
 * runs them (k8s.io/dynamic-resource-allocation/cel): compiled, type-checked and cost-checked
 * once, then evaluated over one device (core/dra.h) at a time.
 *
 * The environment (what an expression may use), as upstream declares it for DRA:
 *   device.driver (string), device.allowMultipleAllocations (bool),
 *   device.attributes (map of domain to map of name to value: int, bool, string or version),
 *   device.capacity (map of domain to map of name to quantity); both maps are read as
 *   m['DOMAIN'].NAME, m['DOMAIN']['NAME'] or m.DOMAIN..., and a domain the device lacks reads
 *   as an empty map (so has(device.attributes['x'].y) is false, device.attributes['x'].y an
 *   error). A bare attribute name belongs to the device's driver.
 *   Values: int, uint, double, string, bool, null, lists, maps, versions (semver), quantities.
 *   Literals: 1, -1, 0x1f, 1u, 1.5, 1e3, 'a', "a", '''a''', r'a', with CEL's escapes; [..];
 *   {k: v}; true, false, null; // comments.
 *   Operators: ! - * / % + == != < <= > >= in && || ?: ; a[i] on lists and maps; CEL's
 *   heterogeneous equality (1 == dyn(1.0)), cross-type numeric ordering (1 < 1.5), integer
 *   overflow, division and modulus by zero as errors; + on strings and lists.
 *   Macros: has(x.f), l.all(x, p), l.exists(x, p), l.exists_one(x, p), l.map(x, f),
 *   l.map(x, p, f), l.filter(x, p) (over lists, and over maps' keys), cel.bind(v, init, e).
 *   Functions: size (strings in code points, lists, maps), contains, startsWith, endsWith,
 *   matches (RE2 syntax, see below), int, uint, double, string, bool, dyn; the Kubernetes
 *   string extension: charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split,
 *   substring, trim, join; semver(s[, normalize]), isSemver(s[, normalize]), major, minor,
 *   patch, compareTo, isGreaterThan, isLessThan, == on versions; quantity(s), isQuantity(s),
 *   sign(q), isInteger, asInteger, asApproximateFloat, add, sub, compareTo, isGreaterThan,
 *   isLessThan, == on quantities; the list library: sum, min, max, isSorted, indexOf,
 *   lastIndexOf.
 *   matches: RE2 syntax without Unicode classes (\pL) and with ASCII-only case folding for
 *   (?i); a pattern outside that subset, or compiling to more than GS_CEL_RE_MAX
 *   instructions, is refused as unsupported.
 * Not supported, refused at compile time as "unsupported CEL: ..." naming the construct:
 *   bytes, timestamps and durations, type() and type names, optional syntax (?. [? {?),
 *   two-variable comprehensions, the list extension (slice, flatten, sort, distinct, first,
 *   ...), sets, format, quote, find, url, ip, cidr, message construction.
 *
 * Semantics follow CEL: && and || are commutative over errors (false && error is false, true ||
 * error is true); a missing key, a runtime type mismatch or an overflow is an error, and a
 * selector that errs on a device does not select it (upstream fails the whole allocation;
 * here the claim may still be satisfied by other devices). A device with a version attribute
 * that is not semantic versioning errs on every selector, as upstream's.
 *
 * Checks as upstream's, at compile time: syntax; types (no matching overload, undeclared
 * names, list and map literals of one type, the result a bool or a device value); constant
 * conversions (int('x')) and regular expression literals; and the cost. Cost is CEL's cost
 * model as upstream estimates it for DRA (checker.Cost with apiserver's cost estimator and the
 * DRA size estimator: attribute strings of at most 64 characters, at most 32 attributes or
 * capacities, driver names of 63): the worst-case estimate of an expression must not exceed
 * GS_CEL_MAX_COST (resource.k8s.io's CELSelectorExpressionMaxCost, which the API server
 * enforces on every new selector), else "CEL cost limit exceeded: estimated cost N exceeds
 * 1000000". At run time the evaluator counts cost the same way and stops an evaluation past
 * GS_CEL_MAX_COST ("actual cost limit exceeded"), so no selector runs unbounded.
 *
 * Proof: e2e test_cel_conformance judges a corpus (tests/data/cel/conformance.txt) with
 * upstream's own cel package and with this one, and fails on any difference. Known
 * differences, none of them met by a selector a user would write: the element type of an
 * empty literal ([], {}) is not inferred from its later use; indexing null; a map built from
 * a device's maps iterates in the device's order where upstream's is random; regular
 * expressions as said above; the runtime cost of a string comparison counts bytes where
 * upstream counts code points (only the runtime bound, never a verdict, depends on it).
 *
 * Bounds: an expression of at most GS_CEL_MAX_LEN bytes (upstream's limit), GS_CEL_MAX_NODES
 * terms, nesting GS_CEL_MAX_DEPTH, GS_CEL_MAX_VARS nested comprehension variables; an
 * evaluation uses at most GS_CEL_EVAL_MEM bytes of stack for the values it builds, then once
 * GS_CEL_EVAL_MEM_MAX of heap, beyond which it fails as over the cost limit. A compiled
 * program is plain data (no pointers, no heap), is never written by evaluation and may be
 * evaluated from any number of threads at once. */
#ifndef GS_CEL_H
#define GS_CEL_H

#include "../core/dra.h"

#include <stddef.h>
#include <stdint.h>

#define GS_CEL_MAX_LEN      10240   /* resource.k8s.io CELSelectorExpressionMaxLength */
#define GS_CEL_MAX_COST     1000000 /* resource.k8s.io CELSelectorExpressionMaxCost */
#define GS_CEL_MAX_NODES    2048
#define GS_CEL_MAX_DEPTH    48
#define GS_CEL_MAX_VARS     16
#define GS_CEL_MAX_TYPES    96
#define GS_CEL_MAX_POOL     (GS_CEL_MAX_LEN + 4096)
#define GS_CEL_RE_MAX       512               /* instructions of one regular expression */
#define GS_CEL_EVAL_MEM     (16 * 1024)       /* stack */
#define GS_CEL_EVAL_MEM_MAX (4 * 1024 * 1024) /* heap, once the stack is not enough */

/* One term of a compiled expression (internal: see cel_internal.h). */
struct gs_cel_node {
    uint8_t op, fn, nk, flags;
    uint16_t type, pos;
    int16_t k, var;  /* first child in kids[]; variable slot */
    int32_t s, slen; /* a string in pool */
    union {
        int64_t i;
        uint64_t u;
        double d;
    } v;
};

/* A type of the checker (internal). */
struct gs_cel_type {
    uint8_t kind;
    uint8_t a, b; /* list element; map key and value */
};

/* Why gs_cel_compile refused an expression. */
enum gs_cel_refusal {
    GS_CEL_OK = 0,
    GS_CEL_SYNTAX,      /* "CEL syntax error: ..." */
    GS_CEL_UNSUPPORTED, /* "unsupported CEL: ..." (valid CEL that gpusched does not run) */
    GS_CEL_INVALID,     /* "CEL compile error: ..." (types, names, constants, the result) */
    GS_CEL_COSTLY       /* "CEL cost limit exceeded: ..." */
};

struct gs_cel {
    int32_t n, root, nkids, ntypes, npool;
    uint8_t refusal;   /* enum gs_cel_refusal of the last compile */
    uint64_t max_cost; /* the estimated worst-case cost */
    struct gs_cel_node nodes[GS_CEL_MAX_NODES];
    int16_t kids[GS_CEL_MAX_NODES];
    struct gs_cel_type types[GS_CEL_MAX_TYPES];
    char pool[GS_CEL_MAX_POOL];
};

struct gs_error;

/* Compile src[0..len) into out (about 90 KiB: allocate it, do not put it on a thread's
 * stack). Returns 0, or GS_EINVAL with out->refusal set and a message that starts as the
 * refusal says and ends with "at position N" where a position applies (counting bytes from
 * 0). */
int gs_cel_compile(const char *src, size_t len, struct gs_cel *out, struct gs_error *err);

/* Run p on device d: 1 when it selects d, 0 when not; GS_EINVAL when the expression errs on
 * d (err says why: "CEL runtime error: no such key: 'x'", "... actual cost limit exceeded").
 * Returns GS_ENOSPC instead for the cost limit and the memory bound. Thread-safe. */
int gs_cel_run(const struct gs_cel *p, const struct gs_dra_device *d, struct gs_error *err);

/* 1 when p selects device d, 0 when not (false, or an error on this device). Thread-safe. */
int gs_cel_eval(const struct gs_cel *p, const struct gs_dra_device *d);

#endif
