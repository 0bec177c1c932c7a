/* cel_kube.c - the Kubernetes libraries of CEL (cel.h) for DRA selectors: versions as the
 * semver library parses and orders them (blang/semver v4: strict semantic versioning, or
 * upstream's normalization with semver(s, true)) and quantities as the quantity library holds
 * them (core/quantity.h for the value, with apimachinery's int64Amount-or-inf.Dec
 * representation tracked so that isInteger, asInteger and add behave as upstream's). The
 * functions are called from cel_lib.c's dispatcher. */
#include "cel_internal.h"

#include "../base/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- versions ---------- */

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return n > 0;
}

static bool alnum_hyphen(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '-'))
            return false;
    }
    return n > 0;
}

static int parse_num(const char *s, size_t n, uint64_t *out, const char *what, const char **why)
{
    if (!all_digits(s, n)) {
        *why = what[0] == 'M'   ? "Invalid character(s) found in major number"
               : what[1] == 'i' ? "Invalid character(s) found in minor number"
                                : "Invalid character(s) found in patch number";
        return -1;
    }
    if (n > 1 && s[0] == '0') {
        *why = "number must not contain leading zeroes";
        return -1;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            *why = "value out of range";
            return -1;
        }
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* dot-separated identifiers: pre-release (numeric ones without leading zeros) or build */
static int check_idents(const char *s, size_t n, bool pre, const char **why)
{
    size_t i = 0;
    for (;;) {
        size_t e = i;
        while (e < n && s[e] != '.')
            e++;
        if (e == i) {
            *why = pre ? "Prerelease is empty" : "Build meta data is empty";
            return -1;
        }
        if (pre && all_digits(s + i, e - i)) {
            uint64_t v;
            if (e - i > 1 && s[i] == '0') {
                *why = "Numeric PreRelease version must not contain leading zeroes";
                return -1;
            }
            if (parse_num(s + i, e - i, &v, "p", why))
                return -1;
        } else if (!alnum_hyphen(s + i, e - i)) {
            *why = pre ? "Invalid character(s) found in prerelease"
                       : "Invalid character(s) found in build meta data";
            return -1;
        }
        if (e >= n)
            return 0;
        i = e + 1;
    }
}

static int semver_strict(const char *s, size_t n, struct gs__cel_semver *out, const char **why)
{
    if (n == 0) {
        *why = "Version string empty";
        return -1;
    }
    const char *d1 = memchr(s, '.', n);
    const char *d2 = d1 ? memchr(d1 + 1, '.', n - (size_t)(d1 + 1 - s)) : NULL;
    if (!d2) {
        *why = "No Major.Minor.Patch elements found";
        return -1;
    }
    if (parse_num(s, (size_t)(d1 - s), &out->major, "Major", why) ||
        parse_num(d1 + 1, (size_t)(d2 - d1 - 1), &out->minor, "minor", why))
        return -1;
    const char *rest = d2 + 1;
    size_t rn = n - (size_t)(rest - s);
    const char *pre = memchr(rest, '-', rn), *build = memchr(rest, '+', rn);
    if (pre && build && build < pre)
        pre = NULL;
    const char *end = pre ? pre : build ? build : rest + rn;
    if (parse_num(rest, (size_t)(end - rest), &out->patch, "patch", why))
        return -1;
    out->pre = NULL;
    out->npre = 0;
    if (pre) {
        const char *pe = build ? build : rest + rn;
        out->pre = pre + 1;
        out->npre = (uint32_t)(pe - pre - 1);
        if (check_idents(out->pre, out->npre, true, why))
            return -1;
    }
    if (build && check_idents(build + 1, (size_t)(rest + rn - build - 1), false, why))
        return -1;
    return 0;
}

/* upstream's normalizeAndParse: no 'v', leading zeros dropped, missing minor and patch 0;
 * the normalized text is written to buf (n + 8 bytes) and parsed there */
static int semver_normalized(const char *s, size_t n, char *buf, struct gs__cel_semver *out,
                             const char **why)
{
    size_t bn = 0, i = 0;
    int parts = 0;
    if (n > 0 && s[0] == 'v') {
        s++;
        n--;
    }
    while (parts < 3) {
        size_t e = i;
        while (e < n && (parts == 2 || s[e] != '.'))
            e++;
        const char *p = s + i;
        size_t pn = e - i;
        if (pn > 1) {
            while (pn > 0 && p[0] == '0') {
                p++;
                pn--;
            }
            if (pn == 0 || p[0] < '0' || p[0] > '9')
                buf[bn++] = '0';
        }
        memcpy(buf + bn, p, pn);
        bn += pn;
        parts++;
        if (e >= n)
            break;
        buf[bn++] = '.';
        i = e + 1;
    }
    if (parts < 3) {
        /* the last part given may not carry a pre-release or build */
        size_t last = bn;
        while (last > 0 && buf[last - 1] != '.')
            last--;
        if (memchr(buf + last, '+', bn - last) || memchr(buf + last, '-', bn - last)) {
            *why = "short version cannot contain PreRelease/Build meta data";
            return -1;
        }
        for (; parts < 3; parts++) {
            buf[bn++] = '.';
            buf[bn++] = '0';
        }
    }
    return semver_strict(buf, bn, out, why);
}

int gs__cel_semver_parse(const char *s, size_t n, char *buf, struct gs__cel_semver *out,
                         const char **why)
{
    return buf ? semver_normalized(s, n, buf, out, why) : semver_strict(s, n, out, why);
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

int gs__cel_semver_cmp(const struct gs__cel_semver *a, const struct gs__cel_semver *b)
{
    int c = cmp_u64(a->major, b->major);
    if (!c)
        c = cmp_u64(a->minor, b->minor);
    if (!c)
        c = cmp_u64(a->patch, b->patch);
    if (c || (!a->npre && !b->npre))
        return c;
    if (!a->npre)
        return 1;
    if (!b->npre)
        return -1;
    size_t i = 0, j = 0;
    while (i < a->npre && j < b->npre) {
        size_t ie = i, je = j;
        while (ie < a->npre && a->pre[ie] != '.')
            ie++;
        while (je < b->npre && b->pre[je] != '.')
            je++;
        bool an = all_digits(a->pre + i, ie - i), bn = all_digits(b->pre + j, je - j);
        if (an && bn) {
            uint64_t x = 0, y = 0;
            for (size_t k = i; k < ie; k++)
                x = x * 10 + (uint64_t)(a->pre[k] - '0');
            for (size_t k = j; k < je; k++)
                y = y * 10 + (uint64_t)(b->pre[k] - '0');
            c = cmp_u64(x, y);
        } else if (an != bn) {
            c = an ? -1 : 1;
        } else {
            size_t m = ie - i < je - j ? ie - i : je - j;
            c = memcmp(a->pre + i, b->pre + j, m);
            c = c ? (c < 0 ? -1 : 1) : cmp_u64(ie - i, je - j);
        }
        if (c)
            return c;
        i = ie + 1;
        j = je + 1;
    }
    bool amore = i < a->npre, bmore = j < b->npre;
    return amore == bmore ? 0 : amore ? 1 : -1;
}

/* ---------- quantities ---------- */

#define I128_MAX ((__int128)(((unsigned __int128)1 << 127) - 1))

static __int128 sat_mul(__int128 a, __int128 b)
{
    __int128 r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? -I128_MAX : I128_MAX;
    return r;
}

static __int128 sat_add(__int128 a, __int128 b)
{
    __int128 r;
    if (__builtin_add_overflow(a, b, &r))
        return a < 0 ? -I128_MAX : I128_MAX;
    return r;
}

/* the digits d (nd of them) times 10^e10 in nano units, times 2^bin, rounded up away from
 * zero to 1n as upstream rounds; saturating far beyond any real quantity */
static __int128 dec_nanos(const char *d, size_t nd, int e10, int bin)
{
    __int128 v = 0;
    bool rest = false;
    e10 += 9;
    for (size_t k = 0; k < nd; k++) {
        if (e10 < 0 && (int)(nd - k) <= -e10) {
            rest |= d[k] != '0'; /* below a nano: only rounds up */
            continue;
        }
        v = sat_add(sat_mul(v, 10), d[k] - '0');
    }
    for (int k = 0; k < e10; k++)
        v = sat_mul(v, 10);
    if (rest)
        v = sat_add(v, 1);
    for (int k = 0; k < bin; k++)
        v = sat_mul(v, 2);
    return v;
}

/* apimachinery's ParseQuantity: what it accepts, the value, and the representation it picks
 * (an int64Amount {value, scale}, or an inf.Dec). 0, or -1 when upstream refuses s. */
int gs__cel_qty_parse(const char *s, size_t n, struct gs__cel_qty *out)
{
    memset(out, 0, sizeof(*out));
    if (n == 0)
        return -1;
    if (n == 1 && s[0] == '0')
        return 0;
    size_t i = 0;
    bool neg = false;
    if (s[i] == '+' || s[i] == '-')
        neg = s[i++] == '-';
    while (i < n && s[i] == '0')
        i++;
    const char *num = s + i;
    size_t nnum = 0, nden = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++, nnum++;
    const char *den = s + i;
    bool zero_num = nnum == 0;
    if (i < n && s[i] == '.') {
        den = s + ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, nden++;
    }
    size_t value_end = i;
    const char *suf = s + i;
    while (i < n && strchr("eEinumkKMGTP", s[i]) && s[i] != '\0')
        i++;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i < n)
        return -1;
    size_t sn = n - (size_t)(suf - s);
    int exponent = 0;
    bool binary = false;
    static const char dec[] = "num kMGTPE";
    static const int decexp[] = {-9, -6, -3, 0, 3, 6, 9, 12, 15, 18};
    const char *bins = "KMGTPE";
    if (sn == 0) {
        exponent = 0;
    } else if (sn == 2 && suf[1] == 'i' && memchr(bins, suf[0], 6)) {
        binary = true;
        exponent = 10 * (int)((const char *)memchr(bins, suf[0], 6) - bins + 1);
    } else if (sn == 1 && suf[0] != ' ' && memchr(dec, suf[0], sizeof(dec) - 1)) {
        exponent = decexp[(const char *)memchr(dec, suf[0], sizeof(dec) - 1) - dec];
    } else if (sn > 1 && (suf[0] == 'e' || suf[0] == 'E')) {
        bool eneg = false;
        uint64_t e = 0;
        size_t k = 1;
        if (suf[k] == '+' || suf[k] == '-')
            eneg = suf[k++] == '-';
        if (k >= sn)
            return -1;
        for (; k < sn; k++) {
            if (suf[k] < '0' || suf[k] > '9')
                return -1;
            e = e * 10 + (uint64_t)(suf[k] - '0');
            if (e > 100000)
                e = 100000;
        }
        exponent = eneg ? -(int)e : (int)e;
    } else {
        return -1;
    }
    char digits[48];
    size_t nd = 0;
    if (zero_num)
        digits[nd++] = '0';
    for (size_t k = 0; k < nnum && nd < sizeof(digits); k++)
        digits[nd++] = num[k];
    for (size_t k = 0; k < nden && nd < sizeof(digits); k++)
        digits[nd++] = den[k];
    int precision, scale = 0;
    int64_t mantissa = 1;
    size_t lnum = zero_num ? 1 : nnum;
    if (!binary) {
        scale = exponent;
        precision = 18 - (int)(lnum + nden);
    } else if (nden == 0) {
        mantissa = (int64_t)1 << exponent;
        precision = 15 - (int)lnum - (int)((float)exponent * 3 / 10) - 1;
    } else {
        precision = -1;
    }
    if (precision >= 0 && scale - (int)nden >= -9) {
        int64_t v = 0, r;
        for (size_t k = 0; k < nd; k++)
            v = v * 10 + (digits[k] - '0');
        if (!__builtin_mul_overflow(v, mantissa, &r)) {
            out->value = neg ? -r : r;
            out->scale = scale - (int)nden;
            out->q.nanos = sat_mul(out->value, 1);
            for (int k = 0; k < out->scale + 9; k++)
                out->q.nanos = sat_mul(out->q.nanos, 10);
            out->q.format = binary ? GS_QTY_BINARY_SI : GS_QTY_DECIMAL_SI;
            return 0;
        }
    }
    /* the inf.Dec path: the value of the text before the suffix */
    bool any = false;
    for (size_t k = 0; k < value_end; k++)
        any |= s[k] >= '0' && s[k] <= '9';
    if (!any)
        return -1;
    out->dec = true;
    __int128 v =
        dec_nanos(digits, nd, binary ? -(int)nden : exponent - (int)nden, binary ? exponent : 0);
    if (binary && v > (__int128)INT64_MAX * 1000000000)
        v = (__int128)INT64_MAX * 1000000000;
    out->q.nanos = neg ? -v : v;
    out->q.format = binary ? GS_QTY_BINARY_SI : GS_QTY_DECIMAL_EXP;
    return 0;
}

void gs__cel_qty_from_value(const struct gs_quantity *q, struct gs__cel_qty *out)
{
    memset(out, 0, sizeof(*out));
    out->q = *q;
    __int128 v = q->nanos;
    int scale = -9;
    while (scale < 0 && v % 1000 == 0) {
        v /= 1000;
        scale += 3;
    }
    out->dec = v > INT64_MAX || v < INT64_MIN;
    out->value = (int64_t)v;
    out->scale = scale;
}

/* value * 10^scale as an int64, as int64Amount's positiveScaleInt64 */
static bool scaled(int64_t value, int scale, int64_t *out)
{
    int64_t v = value;
    for (int k = 0; k < scale; k++)
        if (__builtin_mul_overflow(v, 10, &v))
            return false;
    *out = v;
    return true;
}

static bool as_int64(const struct gs__cel_qty *q, int64_t *out)
{
    if (q->dec || q->scale < 0)
        return false;
    return scaled(q->value, q->scale, out);
}

/* int64Amount.Add; false when it would overflow (upstream then holds an inf.Dec) */
static bool amount_add(int64_t *av, int32_t *as, int64_t bv, int32_t bs)
{
    int64_t c;
    if (bv == 0)
        return true;
    if (*av == 0) {
        *av = bv;
        *as = bs;
        return true;
    }
    if (*as == bs)
        return !__builtin_add_overflow(*av, bv, av);
    if (*as > bs) {
        if (!scaled(*av, *as - bs, &c) || __builtin_add_overflow(c, bv, &c))
            return false;
        *av = c;
        *as = bs;
        return true;
    }
    if (!scaled(bv, bs - *as, &c) || __builtin_add_overflow(*av, c, &c))
        return false;
    *av = c;
    return true;
}

static struct gs__cel_val qty_add(struct gs__cel_ctx *c, const struct gs__cel_qty *a,
                                  const struct gs__cel_val *b, bool sub)
{
    struct gs__cel_qty y, *r = gs__cel_alloc(c, sizeof(*r));
    if (!r)
        return gs__cel_error("out of memory");
    if (b->t == V_INT) {
        memset(&y, 0, sizeof(y));
        y.q.nanos = (__int128)b->i * 1000000000;
        y.value = b->i;
    } else {
        y = *(const struct gs__cel_qty *)b->p;
    }
    *r = *a;
    if (sub) {
        y.q.nanos = -y.q.nanos;
        if (y.value == INT64_MIN)
            y.dec = true;
        y.value = -y.value;
    }
    r->q.nanos = a->q.nanos + y.q.nanos;
    if (r->q.nanos > (__int128)INT64_MAX * 1000000000 ||
        r->q.nanos < (__int128)INT64_MIN * 1000000000)
        return gs__cel_error("quantity out of range");
    r->dec = a->dec || y.dec || !amount_add(&r->value, &r->scale, y.value, y.scale);
    return (struct gs__cel_val){.t = V_QTY, .aux = 1, .p = r};
}

static double pow10i(int e)
{
    double p = 1;
    for (int k = 0; k < (e < 0 ? -e : e); k++)
        p *= 10;
    return e < 0 ? 1 / p : p;
}

static double approx(const struct gs__cel_qty *q)
{
    if (q->dec)
        return (double)q->q.nanos * pow10i(-9);
    if (q->scale == 0)
        return (double)q->value;
    return (double)q->value * pow10i(q->scale);
}

static int sign128(__int128 v)
{
    return v < 0 ? -1 : v > 0;
}

static struct gs__cel_val parse_qty(struct gs__cel_ctx *c, const struct gs__cel_val *s, bool is)
{
    struct gs__cel_qty q;
    gs__cel_charge_scan(c, (uint64_t)gs__cel_size(c, s));
    if (gs__cel_qty_parse(s->p, s->n, &q))
        return is ? (struct gs__cel_val){.t = V_BOOL, .b = false}
                  : gs__cel_error("quantities must match the regular expression "
                                  "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    if (is)
        return (struct gs__cel_val){.t = V_BOOL, .b = true};
    struct gs__cel_qty *r = gs__cel_alloc(c, sizeof(*r));
    if (!r)
        return gs__cel_error("out of memory");
    *r = q;
    return (struct gs__cel_val){.t = V_QTY, .p = r};
}

static struct gs__cel_val parse_ver(struct gs__cel_ctx *c, const struct gs__cel_val *a, int n,
                                    bool is)
{
    if (a[0].t != V_STR || (n > 1 && a[1].t != V_BOOL))
        return gs__cel_error("no such overload");
    gs__cel_charge_scan(c, (uint64_t)gs__cel_size(c, &a[0]));
    bool norm = n > 1 && a[1].b;
    struct gs__cel_semver *v = gs__cel_alloc(c, sizeof(*v));
    char *buf = norm ? gs__cel_alloc(c, a[0].n + 8u) : NULL;
    const char *why;
    if (!v || (norm && !buf))
        return gs__cel_error("out of memory");
    if (gs__cel_semver_parse(a[0].p, a[0].n, buf, v, &why))
        return is ? (struct gs__cel_val){.t = V_BOOL, .b = false} : gs__cel_error(why);
    if (is)
        return (struct gs__cel_val){.t = V_BOOL, .b = true};
    return (struct gs__cel_val){.t = V_VER, .p = v};
}

static struct gs__cel_val ival(int64_t i)
{
    return (struct gs__cel_val){.t = V_INT, .i = i};
}

struct gs__cel_val gs__cel_kube_call(struct gs__cel_ctx *c, int fn, const struct gs__cel_val *a,
                                     int n)
{
    struct gs__cel_val nso = gs__cel_error("no such overload");
    if (fn == F_SEMVER || fn == F_ISSEMVER)
        return parse_ver(c, a, n, fn == F_ISSEMVER);
    if (fn == F_QUANTITY || fn == F_ISQUANTITY)
        return a[0].t == V_STR ? parse_qty(c, &a[0], fn == F_ISQUANTITY) : nso;
    gs__cel_charge(c, 1);
    const struct gs__cel_semver *v = a[0].t == V_VER ? a[0].p : NULL;
    const struct gs__cel_qty *q = a[0].t == V_QTY ? a[0].p : NULL;
    int64_t i;
    switch (fn) {
    case F_MAJOR:
        return v ? ival((int64_t)v->major) : nso;
    case F_MINOR:
        return v ? ival((int64_t)v->minor) : nso;
    case F_PATCH:
        return v ? ival((int64_t)v->patch) : nso;
    case F_GREATER:
    case F_LESS:
    case F_COMPARE: {
        int r;
        if (v && n == 2 && a[1].t == V_VER)
            r = gs__cel_semver_cmp(v, a[1].p);
        else if (q && n == 2 && a[1].t == V_QTY)
            r = sign128(q->q.nanos - ((const struct gs__cel_qty *)a[1].p)->q.nanos);
        else
            return nso;
        if (fn == F_COMPARE)
            return ival(r);
        return (struct gs__cel_val){.t = V_BOOL, .b = fn == F_GREATER ? r > 0 : r < 0};
    }
    case F_SIGN:
        return q ? ival(sign128(q->q.nanos)) : nso;
    case F_ISINTEGER:
        return q ? (struct gs__cel_val){.t = V_BOOL, .b = as_int64(q, &i)} : nso;
    case F_ASINTEGER:
        if (!q)
            return nso;
        return as_int64(q, &i) ? ival(i) : gs__cel_error("cannot convert value to integer");
    case F_ASFLOAT:
        return q ? (struct gs__cel_val){.t = V_DOUBLE, .d = approx(q)} : nso;
    case F_ADD:
    case F_SUB:
        if (!q || n != 2 || (a[1].t != V_QTY && a[1].t != V_INT))
            return nso;
        return qty_add(c, q, &a[1], fn == F_SUB);
    default:
        return nso;
    }
}
