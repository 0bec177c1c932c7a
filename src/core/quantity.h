/* quantity.h - Kubernetes resource quantities ("500m", "1.5Gi", "1e3").
 *
 * The full grammar of apimachinery's resource.Quantity: a signed number (digits,
 * digits.digits, digits. or .digits) followed by a binary suffix (Ki..Ei), a decimal SI
 * suffix (n u m "" k M G T P E) or a decimal exponent (e<int>, E<int>). Values are kept in
 * nano units as an exact integer, rounded up (away from zero) to 1n; magnitudes above
 * 2^63-1 units are rejected as overflow. Pure functions, thread-safe. */
#ifndef GS_QUANTITY_H
#define GS_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gs_quantity_format { GS_QTY_DECIMAL_SI = 0, GS_QTY_BINARY_SI, GS_QTY_DECIMAL_EXP };

struct gs_quantity {
    __int128 nanos; /* value x 10^9 */
    enum gs_quantity_format format;
};

#define GS_QUANTITY_MAX_LEN 64

struct gs_error;

/* Parse s[0..len). Returns 0, or GS_EINVAL with a message naming what was wrong. */
int gs_quantity_parse(const char *s, size_t len, struct gs_quantity *out, struct gs_error *err);
/* Canonical form as the API server serializes it. out_size >= GS_QUANTITY_MAX_LEN. */
void gs_quantity_format(const struct gs_quantity *q, char *out, size_t out_size);
/* Value rounded up to an integer (Kubernetes Value()). Saturates at INT64 bounds. */
int64_t gs_quantity_value(const struct gs_quantity *q);
/* Value x 1000 rounded up (Kubernetes MilliValue()). Saturates. */
int64_t gs_quantity_milli(const struct gs_quantity *q);
/* True when the value is a whole number. */
bool gs_quantity_is_integer(const struct gs_quantity *q);

#endif
