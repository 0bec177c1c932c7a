/* cel.h - the subset of CEL that users write in DRA device selectors for GPUs, compiled and
 * evaluated over one device (core/dra.h).
 *
 * Supported (everything else is refused at compile time as "unsupported", naming the
 * construct and its position, so a claim that uses it stays pending with that reason):
 *   device.driver
 *   device.attributes['DOMAIN'].NAME      device.attributes["DOMAIN"].NAME
 *   device.capacity['DOMAIN'].NAME        (a quantity)
 *   q.compareTo(quantity('40Gi'))  q.isGreaterThan(quantity(..))  q.isLessThan(quantity(..))
 *   == != < <= > >=  on ints and strings, == != on bools and versions (quantities compare
 *   only through compareTo, as in CEL)
 *   && || ! ( )   x in ['a', 'b']   string ('..' or ".."), int and bool literals
 * Semantics follow CEL: && and || are commutative over errors (false && error is false,
 * true || error is true); comparing different types or reading an attribute a device does
 * not have is an error, and a selector that errs on a device does not select it (upstream
 * fails the whole allocation instead; here other devices may still match).
 *
 * Bounds: an expression of at most GS_CEL_MAX_LEN bytes, GS_CEL_MAX_NODES nodes, nesting
 * GS_CEL_MAX_DEPTH, string literals of GS_DRA_STR_MAX - 1 bytes. A compiled program is plain
 * data (no heap) and may be evaluated from any thread. */
#ifndef GS_CEL_H
#define GS_CEL_H

#include "../core/dra.h"

#include <stddef.h>
#include <stdint.h>

#define GS_CEL_MAX_LEN   10240
#define GS_CEL_MAX_NODES 256
#define GS_CEL_MAX_DEPTH 32
#define GS_CEL_MAX_LIST  16

struct gs_cel_node {
    uint8_t op;      /* internal opcode */
    uint8_t nlist;   /* OP_IN: list length */
    int16_t a, b;    /* operands (node indices) */
    uint16_t pos;    /* offset in the source, for messages */
    int32_t s, slen; /* a string (attribute domain, literal) in pool */
    int32_t n, nlen; /* attribute name in pool */
    int64_t i;       /* int or bool literal */
    struct gs_quantity q;
    int16_t list[GS_CEL_MAX_LIST];
};

struct gs_cel {
    int32_t n, root;
    struct gs_cel_node nodes[GS_CEL_MAX_NODES];
    int32_t npool;
    char pool[GS_CEL_MAX_LEN];
};

struct gs_error;

/* Compile src[0..len). Returns 0, or GS_EINVAL with a message: "unsupported CEL: <what> at
 * position N" or "CEL syntax error: <what> at position N" (positions count from 0). */
int gs_cel_compile(const char *src, size_t len, struct gs_cel *out, struct gs_error *err);
/* 1 when the program selects device d, 0 when not (false, or an error on this device). */
int gs_cel_eval(const struct gs_cel *p, const struct gs_dra_device *d);

#endif
