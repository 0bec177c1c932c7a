/* quantity.c - parser and canonical printer for Kubernetes quantities; formats/ uses it for
 * every resource value it reads from Kubernetes objects and scenario files. */
#include "quantity.h"

#include "../base/error.h"

#include <stdio.h>
#include <string.h>

#define NANO 1000000000LL
static const __int128 MAX_UNITS = (__int128)INT64_MAX;

/* Index of c in the suffix letters set, or -1. Bounded by the table, not by a terminator: a
 * NUL byte in the input is not a suffix (strchr would match the table's own '\0'). */
static int suffix_index(const char *set, size_t n, char c)
{
    const char *p = memchr(set, c, n);
    return p ? (int)(p - set) : -1;
}

static __int128 pow10i(int e)
{
    __int128 r = 1;
    while (e-- > 0)
        r *= 10;
    return r;
}

int gs_quantity_parse(const char *s, size_t len, struct gs_quantity *out, struct gs_error *err)
{
    if (!s || len == 0)
        return gs_error_set(err, GS_EINVAL, "empty quantity");
    if (len > GS_QUANTITY_MAX_LEN)
        return gs_error_set(err, GS_EINVAL, "quantity longer than %d characters",
                            GS_QUANTITY_MAX_LEN);
    size_t i = 0;
    bool neg = false;
    if (s[i] == '+' || s[i] == '-') {
        neg = s[i] == '-';
        i++;
    }
    /* mantissa digits: collect up to 40 significant digits exactly */
    __int128 mant = 0;
    int frac_digits = 0, ndigits = 0, big = 0;
    bool seen_dot = false, truncated_nonzero = false;
    for (; i < len; i++) {
        char c = s[i];
        if (c == '.') {
            if (seen_dot)
                return gs_error_set(err, GS_EINVAL, "quantity '%.*s': two decimal points", (int)len,
                                    s);
            seen_dot = true;
            continue;
        }
        if (c < '0' || c > '9')
            break;
        ndigits++;
        if (mant < ((__int128)1 << 100)) {
            mant = mant * 10 + (c - '0');
            if (seen_dot)
                frac_digits++;
        } else {
            /* more digits than we can hold: integer part grows the exponent, fraction
             * digits only matter for rounding up */
            if (!seen_dot)
                big++;
            else if (c != '0')
                truncated_nonzero = true;
        }
    }
    if (ndigits == 0)
        return gs_error_set(err, GS_EINVAL,
                            "quantity '%.*s': expected a number such as 1, 0.5 or 250m", (int)len,
                            s);
    /* suffix */
    const char *suf = s + i;
    size_t slen = len - i;
    int exp10 = 0;
    int bin_pow = 0; /* power of 1024 */
    enum gs_quantity_format fmt = GS_QTY_DECIMAL_SI;
    static const char bins[6] = {'K', 'M', 'G', 'T', 'P', 'E'};
    static const char sis[9] = {'n', 'u', 'm', 'k', 'M', 'G', 'T', 'P', 'E'};
    static const int exps[9] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
    if (slen == 0) {
    } else if (slen == 2 && suf[1] == 'i' && suffix_index(bins, sizeof(bins), suf[0]) >= 0) {
        bin_pow = suffix_index(bins, sizeof(bins), suf[0]) + 1;
        fmt = GS_QTY_BINARY_SI;
    } else if (slen == 1 && suffix_index(sis, sizeof(sis), suf[0]) >= 0) {
        exp10 = exps[suffix_index(sis, sizeof(sis), suf[0])];
    } else if ((suf[0] == 'e' || suf[0] == 'E') && slen >= 2) {
        size_t j = 1;
        bool eneg = false;
        if (suf[j] == '+' || suf[j] == '-') {
            eneg = suf[j] == '-';
            j++;
        }
        if (j >= slen)
            goto bad_suffix;
        int e = 0;
        for (; j < slen; j++) {
            if (suf[j] < '0' || suf[j] > '9')
                goto bad_suffix;
            if (e > 1000)
                return gs_error_set(err, GS_EINVAL, "quantity '%.*s': exponent out of range",
                                    (int)len, s);
            e = e * 10 + (suf[j] - '0');
        }
        exp10 = eneg ? -e : e;
        fmt = GS_QTY_DECIMAL_EXP;
    } else {
        goto bad_suffix;
    }
    /* value = mant * 10^(big - frac_digits + exp10) * 1024^bin_pow, in nanos */
    int e = big - frac_digits + exp10 + 9;
    __int128 v = mant;
    bool round_up = truncated_nonzero;
    for (int k = 0; k < bin_pow; k++) {
        if (v > ((__int128)1 << 110))
            goto overflow;
        v *= 1024;
    }
    if (e >= 0) {
        for (int k = 0; k < e; k++) {
            if (v > ((__int128)1 << 110))
                goto overflow;
            v *= 10;
        }
    } else {
        int d = -e;
        if (d > 38) {
            round_up = round_up || v != 0;
            v = 0;
        } else {
            __int128 p = pow10i(d);
            if (v % p)
                round_up = true;
            v /= p;
        }
    }
    if (round_up)
        v += 1;
    if (v / NANO > MAX_UNITS || (v / NANO == MAX_UNITS && v % NANO))
        goto overflow;
    out->nanos = neg ? -v : v;
    out->format = fmt;
    return 0;
overflow:
    return gs_error_set(err, GS_EINVAL, "quantity '%.*s': overflows 2^63-1", (int)len, s);
bad_suffix:
    return gs_error_set(err, GS_EINVAL,
                        "quantity '%.*s': unknown suffix '%.*s' (expected Ki..Ei, n, u, m, k, "
                        "M, G, T, P, E or e<exponent>)",
                        (int)len, s, (int)slen, suf);
}

static void i128_str(__int128 v, char *out, size_t n)
{
    char tmp[64];
    int p = 0;
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-v) : (unsigned __int128)v;
    do {
        tmp[p++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u && p < 60);
    size_t o = 0;
    if (neg && o + 1 < n)
        out[o++] = '-';
    while (p > 0 && o + 1 < n)
        out[o++] = tmp[--p];
    out[o] = '\0';
}

void gs_quantity_format(const struct gs_quantity *q, char *out, size_t out_size)
{
    __int128 v = q->nanos;
    if (v == 0) {
        snprintf(out, out_size, "0");
        return;
    }
    __int128 a = v < 0 ? -v : v;
    char num[64];
    if (q->format == GS_QTY_BINARY_SI && a % NANO == 0 && a / NANO >= 1024) {
        __int128 u = v / NANO;
        int k = 0;
        while (k < 6 && u % 1024 == 0 && (u < 0 ? -u : u) >= 1024) {
            u /= 1024;
            k++;
        }
        if (k > 0) {
            static const char *bs[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
            i128_str(u, num, sizeof(num));
            snprintf(out, out_size, "%s%s", num, bs[k]);
            return;
        }
    }
    /* decimal: largest exponent 3k (k in -3..6) that divides exactly */
    int k = -3;
    __int128 m = v;
    while (k < 6 && m % 1000 == 0) {
        m /= 1000;
        k++;
    }
    i128_str(m, num, sizeof(num));
    if (q->format == GS_QTY_DECIMAL_EXP) {
        if (k == 0)
            snprintf(out, out_size, "%s", num);
        else
            snprintf(out, out_size, "%se%d", num, 3 * k);
        return;
    }
    static const char *ds[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    snprintf(out, out_size, "%s%s", num, ds[k + 3]);
}

static int64_t sat(__int128 v)
{
    if (v > INT64_MAX)
        return INT64_MAX;
    if (v < INT64_MIN)
        return INT64_MIN;
    return (int64_t)v;
}

int64_t gs_quantity_value(const struct gs_quantity *q)
{
    __int128 v = q->nanos / NANO;
    if (q->nanos % NANO > 0)
        v += 1;
    return sat(v);
}

int64_t gs_quantity_milli(const struct gs_quantity *q)
{
    __int128 v = q->nanos / 1000000;
    if (q->nanos % 1000000 > 0)
        v += 1;
    return sat(v);
}

bool gs_quantity_is_integer(const struct gs_quantity *q)
{
    return q->nanos % NANO == 0;
}
