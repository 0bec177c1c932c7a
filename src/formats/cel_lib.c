/* cel_lib.c - the functions of CEL (cel.h) that Kubernetes declares for DRA selectors: the
 * overload table cel_check.c resolves calls against, and their implementations for
 * cel_eval.c: the standard size/contains/startsWith/endsWith/matches and conversions, the
 * Kubernetes strings extension (version 2), the semver library (blang/semver v4's grammar and
 * precedence) and the quantity library (over core/quantity.h), each failing as upstream's do.
 * Also the folding of constant conversions cel_check.c asks for. */
#include "cel_internal.h"

#include "../base/error.h"
#include "../core/quantity.h"

#include <errno.h>
#include <strings.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M true
#define G false

const struct gs__cel_overload gs__cel_overloads[] = {
    {"size", F_SIZE, G, 1, {CT_STRING}, CT_INT},
    {"size", F_SIZE, G, 1, {CT_LIST_DYN}, CT_INT},
    {"size", F_SIZE, G, 1, {CT_MAP_DYN}, CT_INT},
    {"size", F_SIZE, M, 1, {CT_STRING}, CT_INT},
    {"size", F_SIZE, M, 1, {CT_LIST_DYN}, CT_INT},
    {"size", F_SIZE, M, 1, {CT_MAP_DYN}, CT_INT},
    {"contains", F_CONTAINS, M, 2, {CT_STRING, CT_STRING}, CT_BOOL},
    {"startsWith", F_STARTS, M, 2, {CT_STRING, CT_STRING}, CT_BOOL},
    {"endsWith", F_ENDS, M, 2, {CT_STRING, CT_STRING}, CT_BOOL},
    {"matches", F_MATCHES, M, 2, {CT_STRING, CT_STRING}, CT_BOOL},
    {"matches", F_MATCHES, G, 2, {CT_STRING, CT_STRING}, CT_BOOL},
    {"int", F_INT, G, 1, {CT_INT}, CT_INT},
    {"int", F_INT, G, 1, {CT_UINT}, CT_INT},
    {"int", F_INT, G, 1, {CT_DOUBLE}, CT_INT},
    {"int", F_INT, G, 1, {CT_STRING}, CT_INT},
    {"uint", F_UINT, G, 1, {CT_INT}, CT_UINT},
    {"uint", F_UINT, G, 1, {CT_UINT}, CT_UINT},
    {"uint", F_UINT, G, 1, {CT_DOUBLE}, CT_UINT},
    {"uint", F_UINT, G, 1, {CT_STRING}, CT_UINT},
    {"double", F_DOUBLE, G, 1, {CT_INT}, CT_DOUBLE},
    {"double", F_DOUBLE, G, 1, {CT_UINT}, CT_DOUBLE},
    {"double", F_DOUBLE, G, 1, {CT_DOUBLE}, CT_DOUBLE},
    {"double", F_DOUBLE, G, 1, {CT_STRING}, CT_DOUBLE},
    {"string", F_STRING, G, 1, {CT_INT}, CT_STRING},
    {"string", F_STRING, G, 1, {CT_UINT}, CT_STRING},
    {"string", F_STRING, G, 1, {CT_DOUBLE}, CT_STRING},
    {"string", F_STRING, G, 1, {CT_BOOL}, CT_STRING},
    {"string", F_STRING, G, 1, {CT_STRING}, CT_STRING},
    {"bool", F_BOOL, G, 1, {CT_BOOL}, CT_BOOL},
    {"bool", F_BOOL, G, 1, {CT_STRING}, CT_BOOL},
    {"dyn", F_DYN, G, 1, {CT_DYN}, CT_DYN},
    {"charAt", F_CHARAT, M, 2, {CT_STRING, CT_INT}, CT_STRING},
    {"indexOf", F_INDEXOF, M, 2, {CT_STRING, CT_STRING}, CT_INT},
    {"indexOf", F_INDEXOF, M, 3, {CT_STRING, CT_STRING, CT_INT}, CT_INT},
    {"lastIndexOf", F_LASTINDEXOF, M, 2, {CT_STRING, CT_STRING}, CT_INT},
    {"lastIndexOf", F_LASTINDEXOF, M, 3, {CT_STRING, CT_STRING, CT_INT}, CT_INT},
    {"lowerAscii", F_LOWER, M, 1, {CT_STRING}, CT_STRING},
    {"upperAscii", F_UPPER, M, 1, {CT_STRING}, CT_STRING},
    {"replace", F_REPLACE, M, 3, {CT_STRING, CT_STRING, CT_STRING}, CT_STRING},
    {"replace", F_REPLACE, M, 4, {CT_STRING, CT_STRING, CT_STRING, CT_INT}, CT_STRING},
    {"split", F_SPLIT, M, 2, {CT_STRING, CT_STRING}, CT_LIST_STR},
    {"split", F_SPLIT, M, 3, {CT_STRING, CT_STRING, CT_INT}, CT_LIST_STR},
    {"substring", F_SUBSTRING, M, 2, {CT_STRING, CT_INT}, CT_STRING},
    {"substring", F_SUBSTRING, M, 3, {CT_STRING, CT_INT, CT_INT}, CT_STRING},
    {"trim", F_TRIM, M, 1, {CT_STRING}, CT_STRING},
    {"join", F_JOIN, M, 1, {CT_LIST_STR}, CT_STRING},
    {"join", F_JOIN, M, 2, {CT_LIST_STR, CT_STRING}, CT_STRING},
    {"semver", F_SEMVER, G, 1, {CT_STRING}, CT_SEMVER},
    {"semver", F_SEMVER, G, 2, {CT_STRING, CT_BOOL}, CT_SEMVER},
    {"isSemver", F_ISSEMVER, G, 1, {CT_STRING}, CT_BOOL},
    {"isSemver", F_ISSEMVER, G, 2, {CT_STRING, CT_BOOL}, CT_BOOL},
    {"major", F_MAJOR, M, 1, {CT_SEMVER}, CT_INT},
    {"minor", F_MINOR, M, 1, {CT_SEMVER}, CT_INT},
    {"patch", F_PATCH, M, 1, {CT_SEMVER}, CT_INT},
    {"isGreaterThan", F_GREATER, M, 2, {CT_SEMVER, CT_SEMVER}, CT_BOOL},
    {"isLessThan", F_LESS, M, 2, {CT_SEMVER, CT_SEMVER}, CT_BOOL},
    {"compareTo", F_COMPARE, M, 2, {CT_SEMVER, CT_SEMVER}, CT_INT},
    {"quantity", F_QUANTITY, G, 1, {CT_STRING}, CT_QTY},
    {"isQuantity", F_ISQUANTITY, G, 1, {CT_STRING}, CT_BOOL},
    {"sign", F_SIGN, G, 1, {CT_QTY}, CT_INT},
    {"isGreaterThan", F_GREATER, M, 2, {CT_QTY, CT_QTY}, CT_BOOL},
    {"isLessThan", F_LESS, M, 2, {CT_QTY, CT_QTY}, CT_BOOL},
    {"compareTo", F_COMPARE, M, 2, {CT_QTY, CT_QTY}, CT_INT},
    {"asApproximateFloat", F_ASFLOAT, M, 1, {CT_QTY}, CT_DOUBLE},
    {"asInteger", F_ASINTEGER, M, 1, {CT_QTY}, CT_INT},
    {"isInteger", F_ISINTEGER, M, 1, {CT_QTY}, CT_BOOL},
    {"add", F_ADD, M, 2, {CT_QTY, CT_QTY}, CT_QTY},
    {"add", F_ADD, M, 2, {CT_QTY, CT_INT}, CT_QTY},
    {"sub", F_SUB, M, 2, {CT_QTY, CT_QTY}, CT_QTY},
    {"sub", F_SUB, M, 2, {CT_QTY, CT_INT}, CT_QTY},
    /* the list library: the element type is checked by cel_check.c */
    {"indexOf", F_INDEXOF, M, 2, {CT_LIST_DYN, CT_DYN}, CT_INT},
    {"lastIndexOf", F_LASTINDEXOF, M, 2, {CT_LIST_DYN, CT_DYN}, CT_INT},
    {"sum", F_SUM, M, 1, {CT_LIST_DYN}, CT_DYN},
    {"min", F_MIN, M, 1, {CT_LIST_DYN}, CT_DYN},
    {"max", F_MAX, M, 1, {CT_LIST_DYN}, CT_DYN},
    {"isSorted", F_ISSORTED, M, 1, {CT_LIST_DYN}, CT_BOOL},
};
const size_t gs__cel_noverloads = sizeof(gs__cel_overloads) / sizeof(gs__cel_overloads[0]);

bool gs__cel_unsupported_fn(const char *name, size_t len)
{
    static const char *const names[] = {"type",
                                        "bytes",
                                        "duration",
                                        "timestamp",
                                        "getDate",
                                        "getDayOfMonth",
                                        "getDayOfWeek",
                                        "getDayOfYear",
                                        "getFullYear",
                                        "getHours",
                                        "getMilliseconds",
                                        "getMinutes",
                                        "getMonth",
                                        "getSeconds",
                                        "format",
                                        "strings.quote",
                                        "reverse",
                                        "find",
                                        "findAll",
                                        "url",
                                        "isURL",
                                        "getScheme",
                                        "getHost",
                                        "getHostname",
                                        "getPort",
                                        "getEscapedPath",
                                        "getQuery",
                                        "ip",
                                        "isIP",
                                        "cidr",
                                        "isCIDR",
                                        "ip.isCanonical",
                                        "sets.contains",
                                        "sets.equivalent",
                                        "sets.intersects",
                                        "lists.range",
                                        "slice",
                                        "flatten",
                                        "distinct",
                                        "sort",
                                        "sortBy",
                                        "first",
                                        "last",
                                        "includes",
                                        "optional.of",
                                        "optional.none",
                                        "optional.ofNonZeroValue",
                                        "orValue",
                                        "hasValue",
                                        "value",
                                        "or",
                                        "authorizer",
                                        "serviceAccount",
                                        "fieldSelector",
                                        "labelSelector",
                                        "format.named",
                                        "jsonpatch.escapeKey",
                                        "validate",
                                        "getField",
                                        "existsOne",
                                        "transformList",
                                        "transformMap",
                                        "transformMapEntry"};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        if (strlen(names[k]) == len && memcmp(names[k], name, len) == 0)
            return true;
    return false;
}

/* ---------- UTF-8 ---------- */

static size_t utf8_step(const char *s, size_t n, size_t i)
{
    unsigned char c = (unsigned char)s[i];
    size_t w = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    return i + w > n ? n - i : w;
}

size_t gs__cel_utf8_len(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i += utf8_step(s, n, i))
        k++;
    return k;
}

size_t gs__cel_utf8_off(const char *s, size_t n, size_t i)
{
    size_t off = 0;
    for (size_t k = 0; k < i && off < n; k++)
        off += utf8_step(s, n, off);
    return off;
}

/* ---------- strings ---------- */

static struct gs__cel_val nso(void)
{
    return gs__cel_error("no such overload");
}

static struct gs__cel_val ival(int64_t i)
{
    return (struct gs__cel_val){.t = V_INT, .i = i};
}

static struct gs__cel_val bval(bool b)
{
    return (struct gs__cel_val){.t = V_BOOL, .b = b};
}

static uint64_t usize(const struct gs__cel_ctx *c, const struct gs__cel_val *v)
{
    int64_t n = gs__cel_size(c, v);
    return n < 0 ? 1 : (uint64_t)n;
}

static char *strdup_arena(struct gs__cel_ctx *c, size_t n)
{
    return gs__cel_alloc(c, n + 1);
}

uint32_t gs__cel_utf8_decode(const char *s, size_t n, size_t *i)
{
    const unsigned char *u = (const unsigned char *)s + *i;
    size_t left = n - *i;
    if (u[0] < 0x80) {
        (*i)++;
        return u[0];
    }
    int w = u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (w == 0 || (size_t)w > left) {
        (*i)++;
        return 0xFFFD;
    }
    uint32_t cp = u[0] & (0x7F >> w);
    for (int k = 1; k < w; k++) {
        if ((u[k] & 0xC0) != 0x80) {
            (*i)++;
            return 0xFFFD;
        }
        cp = cp << 6 | (u[k] & 0x3F);
    }
    *i += (size_t)w;
    return cp;
}

static bool is_space(uint32_t r)
{
    return r == ' ' || (r >= '\t' && r <= '\r') || r == 0x85 || r == 0xA0 || r == 0x1680 ||
           (r >= 0x2000 && r <= 0x200A) || r == 0x2028 || r == 0x2029 || r == 0x202F ||
           r == 0x205F || r == 0x3000;
}

static struct gs__cel_val trim(const struct gs__cel_val *s)
{
    const char *p = s->p;
    size_t b = 0, e = s->n;
    while (b < e) {
        size_t i = b;
        if (!is_space(gs__cel_utf8_decode(p, e, &i)))
            break;
        b = i;
    }
    while (e > b) {
        size_t j = e - 1;
        while (j > b && ((unsigned char)p[j] & 0xC0) == 0x80 && e - j < 4)
            j--;
        size_t i = j;
        if (!is_space(gs__cel_utf8_decode(p, e, &i)) || i != e)
            break;
        e = j;
    }
    return gs__cel_str(p + b, e - b);
}

static struct gs__cel_val ascii_case(struct gs__cel_ctx *c, const struct gs__cel_val *s, bool up)
{
    char *m = strdup_arena(c, s->n);
    if (!m)
        return gs__cel_error("out of memory");
    for (size_t i = 0; i < s->n; i++) {
        char ch = ((const char *)s->p)[i];
        if (up && ch >= 'a' && ch <= 'z')
            ch = (char)(ch - 32);
        else if (!up && ch >= 'A' && ch <= 'Z')
            ch = (char)(ch + 32);
        m[i] = ch;
    }
    return gs__cel_str(m, s->n);
}

static const char *find(const char *h, size_t hn, const char *n, size_t nn)
{
    if (nn == 0)
        return h;
    for (size_t i = 0; i + nn <= hn; i++)
        if (memcmp(h + i, n, nn) == 0)
            return h + i;
    return NULL;
}

/* indexOf / lastIndexOf in code points, as the strings extension */
static struct gs__cel_val index_of(const struct gs__cel_val *a, int n, bool last)
{
    const char *s = a[0].p, *sub = a[1].p;
    int64_t len = (int64_t)gs__cel_utf8_len(s, a[0].n),
            slen = (int64_t)gs__cel_utf8_len(sub, a[1].n);
    int64_t off;
    if (n > 2) {
        off = a[2].i;
    } else if (!last) {
        off = 0;
    } else {
        if (a[1].n == 0)
            return ival(len);
        if (a[0].n < a[1].n)
            return ival(-1);
        off = len - 1;
    }
    if (off < 0)
        return gs__cel_error("index out of range");
    if (a[1].n == 0)
        return ival(off > len ? len : off);
    if (off >= len)
        return ival(-1);
    if (last && off > len - slen)
        off = len - slen;
    for (int64_t i = off; last ? i >= 0 : i < len - (slen - 1); i += last ? -1 : 1) {
        size_t b = gs__cel_utf8_off(s, a[0].n, (size_t)i);
        if (a[0].n - b >= a[1].n && memcmp(s + b, sub, a[1].n) == 0)
            return ival(i);
    }
    return ival(-1);
}

static struct gs__cel_val substring(const struct gs__cel_val *a, int n)
{
    int64_t len = (int64_t)gs__cel_utf8_len(a[0].p, a[0].n);
    int64_t b = a[1].i, e = n > 2 ? a[2].i : len;
    if (n > 2 && b > e)
        return gs__cel_error("invalid substring range");
    if (b < 0 || b > len || e < 0 || e > len)
        return gs__cel_error("index out of range");
    size_t bo = gs__cel_utf8_off(a[0].p, a[0].n, (size_t)b);
    size_t eo = gs__cel_utf8_off(a[0].p, a[0].n, (size_t)e);
    return gs__cel_str((const char *)a[0].p + bo, eo - bo);
}

/* Go's strings.Replace(s, old, new, n) */
static struct gs__cel_val replace(struct gs__cel_ctx *c, const struct gs__cel_val *a, int n)
{
    const char *s = a[0].p, *old = a[1].p, *rep = a[2].p;
    size_t sn = a[0].n, on = a[1].n, rn = a[2].n;
    int64_t limit = n > 3 ? a[3].i : -1;
    size_t cap = sn + 1, at = 0;
    if (on == 0)
        cap += (gs__cel_utf8_len(s, sn) + 1) * rn;
    else
        cap += (sn / on + 1) * rn;
    char *m = strdup_arena(c, cap);
    if (!m)
        return gs__cel_error("out of memory");
    size_t i = 0;
    int64_t done = 0;
    while (i <= sn) {
        const char *hit = limit < 0 || done < limit ? find(s + i, sn - i, old, on) : NULL;
        if (on == 0 && hit) {
            memcpy(m + at, rep, rn);
            at += rn;
            done++;
            if (i == sn)
                break;
            size_t j = i;
            gs__cel_utf8_decode(s, sn, &j);
            memcpy(m + at, s + i, j - i);
            at += j - i;
            i = j;
            continue;
        }
        if (!hit) {
            memcpy(m + at, s + i, sn - i);
            at += sn - i;
            break;
        }
        size_t h = (size_t)(hit - s);
        memcpy(m + at, s + i, h - i);
        at += h - i;
        memcpy(m + at, rep, rn);
        at += rn;
        i = h + on;
        done++;
    }
    return gs__cel_str(m, at);
}

/* Go's strings.SplitN(s, sep, n) (n < 0: all) */
static struct gs__cel_val split(struct gs__cel_ctx *c, const struct gs__cel_val *a, int n)
{
    const char *s = a[0].p, *sep = a[1].p;
    size_t sn = a[0].n, pn = a[1].n;
    int64_t limit = n > 2 ? a[2].i : -1;
    if (limit == 0)
        return (struct gs__cel_val){.t = V_LIST, .p = NULL, .n = 0};
    size_t most = pn ? sn / pn + 1 : sn + 1;
    if (limit > 0 && (uint64_t)limit < most)
        most = (size_t)limit;
    struct gs__cel_val *l = gs__cel_alloc(c, sizeof(*l) * (most + 1));
    if (!l)
        return gs__cel_error("out of memory");
    uint32_t k = 0;
    size_t i = 0;
    if (pn == 0) {
        while (i < sn) {
            size_t j = i;
            if (limit > 0 && (int64_t)k == limit - 1)
                j = sn;
            else
                gs__cel_utf8_decode(s, sn, &j);
            l[k++] = gs__cel_str(s + i, j - i);
            i = j;
        }
    } else {
        for (;;) {
            const char *hit =
                limit < 0 || (int64_t)k < limit - 1 ? find(s + i, sn - i, sep, pn) : NULL;
            if (!hit) {
                l[k++] = gs__cel_str(s + i, sn - i);
                break;
            }
            l[k++] = gs__cel_str(s + i, (size_t)(hit - (s + i)));
            i = (size_t)(hit - s) + pn;
        }
    }
    return (struct gs__cel_val){.t = V_LIST, .p = l, .n = k};
}

static struct gs__cel_val join(struct gs__cel_ctx *c, const struct gs__cel_val *a, int n)
{
    const struct gs__cel_val *e = a[0].p;
    size_t sep = n > 1 ? a[1].n : 0, total = 0;
    for (uint32_t i = 0; i < a[0].n; i++) {
        if (e[i].t != V_STR)
            return gs__cel_error("join: invalid input");
        total += e[i].n + sep;
    }
    char *m = strdup_arena(c, total);
    if (!m)
        return gs__cel_error("out of memory");
    size_t at = 0;
    for (uint32_t i = 0; i < a[0].n; i++) {
        if (i && sep) {
            memcpy(m + at, a[1].p, sep);
            at += sep;
        }
        memcpy(m + at, e[i].p, e[i].n);
        at += e[i].n;
    }
    struct gs__cel_val r = gs__cel_str(m, at);
    gs__cel_charge_scan(c, 2 * usize(c, &r));
    return r;
}

static struct gs__cel_val char_at(const struct gs__cel_val *a)
{
    int64_t len = (int64_t)gs__cel_utf8_len(a[0].p, a[0].n), i = a[1].i;
    if (i < 0 || i > len)
        return gs__cel_error("index out of range");
    size_t b = gs__cel_utf8_off(a[0].p, a[0].n, (size_t)i);
    size_t e = gs__cel_utf8_off(a[0].p, a[0].n, (size_t)i + 1);
    return gs__cel_str((const char *)a[0].p + b, e - b);
}

/* ---------- conversions ---------- */

/* Go's strconv.FormatFloat(d, 'g', -1, 64) */
static size_t format_double(double d, char *out, size_t size)
{
    if (isnan(d))
        return (size_t)snprintf(out, size, "NaN");
    if (isinf(d))
        return (size_t)snprintf(out, size, d > 0 ? "+Inf" : "-Inf");
    if (d == 0)
        return (size_t)snprintf(out, size, signbit(d) ? "-0" : "0");
    char e[40];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec - 1, d);
        if (strtod(e, NULL) == d)
            break;
    }
    /* e: [-]d.ddde[+-]xx */
    char digits[24];
    size_t nd = 0;
    const char *p = e;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    int x = (int)strtol(p + 1, NULL, 10);
    size_t n = 0;
    if (neg)
        out[n++] = '-';
    if (x < -4 || x >= 6) {
        out[n++] = digits[0];
        if (nd > 1) {
            out[n++] = '.';
            memcpy(out + n, digits + 1, nd - 1);
            n += nd - 1;
        }
        n += (size_t)snprintf(out + n, size - n, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
        return n;
    }
    if (x < 0) {
        out[n++] = '0';
        out[n++] = '.';
        for (int k = -1; k > x; k--)
            out[n++] = '0';
        memcpy(out + n, digits, nd);
        n += nd;
    } else {
        for (int k = 0; k <= x; k++)
            out[n++] = (size_t)k < nd ? digits[k] : '0';
        if ((size_t)x + 1 < nd) {
            out[n++] = '.';
            memcpy(out + n, digits + x + 1, nd - (size_t)x - 1);
            n += nd - (size_t)x - 1;
        }
    }
    out[n] = '\0';
    return n;
}

/* Go's strconv.ParseInt(s, 10, 64) (signed) and ParseUint(s, 10, 64) */
static bool parse_int(const char *s, size_t n, bool sign, bool *neg, uint64_t *mag)
{
    size_t i = 0;
    *neg = false;
    if (sign && n > 0 && (s[0] == '+' || s[0] == '-'))
        *neg = s[i++] == '-';
    if (i == n)
        return false;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *mag = v;
    return true;
}

static bool digits_only(const char *s, size_t *i, size_t n, bool hex)
{
    size_t b = *i;
    while (*i < n && ((s[*i] >= '0' && s[*i] <= '9') ||
                      (hex && ((s[*i] >= 'a' && s[*i] <= 'f') || (s[*i] >= 'A' && s[*i] <= 'F')))))
        (*i)++;
    return *i > b;
}

/* Go's strconv.ParseFloat(s, 64): decimal or hexadecimal (with a p exponent), inf, infinity,
 * nan; no spaces, no underscores */
static bool parse_float(const char *s, size_t n, double *out)
{
    char buf[400];
    if (n == 0 || n >= sizeof(buf))
        return false;
    /* Go's literal syntax allows an underscore between digits (or after a base prefix) */
    size_t m = 0, sg = n > 0 && (s[0] == '+' || s[0] == '-');
    bool hexs = n > sg + 1 && s[sg] == '0' && (s[sg + 1] == 'x' || s[sg + 1] == 'X');
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '_') {
            int lim = hexs ? 16 : 10;
            bool before = k > 0 && ((hexs && k == sg + 2) || (gs__cel_hexval(s[k - 1]) >= 0 &&
                                                              gs__cel_hexval(s[k - 1]) < lim));
            bool after =
                k + 1 < n && gs__cel_hexval(s[k + 1]) >= 0 && gs__cel_hexval(s[k + 1]) < lim;
            if (!before || !after)
                return false;
            continue;
        }
        buf[m++] = s[k];
    }
    buf[m] = '\0';
    n = m;
    size_t i = buf[0] == '+' || buf[0] == '-' ? 1 : 0;
    if (strcasecmp(buf + i, "inf") == 0 || strcasecmp(buf + i, "infinity") == 0) {
        *out = buf[0] == '-' ? -INFINITY : INFINITY;
        return true;
    }
    if (i == 0 && strcasecmp(buf, "nan") == 0) {
        *out = NAN;
        return true;
    }
    bool hex = n > i + 1 && buf[i] == '0' && (buf[i + 1] == 'x' || buf[i + 1] == 'X');
    if (hex)
        i += 2;
    bool mant = digits_only(buf, &i, n, hex);
    if (i < n && buf[i] == '.') {
        i++;
        mant |= digits_only(buf, &i, n, hex);
    }
    if (!mant)
        return false;
    if (i < n && (hex ? buf[i] == 'p' || buf[i] == 'P' : buf[i] == 'e' || buf[i] == 'E')) {
        i++;
        if (i < n && (buf[i] == '+' || buf[i] == '-'))
            i++;
        if (!digits_only(buf, &i, n, false))
            return false;
    } else if (hex) {
        return false;
    }
    if (i != n)
        return false;
    errno = 0;
    *out = strtod(buf, NULL);
    return !(errno == ERANGE && isinf(*out));
}

static struct gs__cel_val convert(struct gs__cel_ctx *c, int fn, const struct gs__cel_val *v)
{
    static const char *const bools[] = {"1", "t", "T", "TRUE",  "true",  "True",
                                        "0", "f", "F", "FALSE", "false", "False"};
    bool neg;
    uint64_t mag;
    char buf[40];
    switch (fn * 16 + v->t) {
    case F_INT * 16 + V_INT:
    case F_UINT * 16 + V_UINT:
    case F_DOUBLE * 16 + V_DOUBLE:
    case F_STRING * 16 + V_STR:
    case F_BOOL * 16 + V_BOOL:
        return *v;
    case F_INT * 16 + V_UINT:
        return v->u > INT64_MAX ? gs__cel_error("integer overflow") : ival((int64_t)v->u);
    case F_INT * 16 + V_DOUBLE:
        if (isnan(v->d) || v->d <= -9223372036854775808.0 || v->d >= 9223372036854775808.0)
            return gs__cel_error("integer overflow");
        return ival((int64_t)v->d);
    case F_INT * 16 + V_STR:
        if (!parse_int(v->p, v->n, true, &neg, &mag) || mag > (uint64_t)INT64_MAX + neg)
            return gs__cel_error("type conversion error from 'string' to 'int'");
        return ival(neg ? (int64_t)(0 - mag) : (int64_t)mag);
    case F_UINT * 16 + V_INT:
        return v->i < 0 ? gs__cel_error("unsigned integer overflow")
                        : (struct gs__cel_val){.t = V_UINT, .u = (uint64_t)v->i};
    case F_UINT * 16 + V_DOUBLE:
        if (isnan(v->d) || v->d < 0 || v->d >= 18446744073709551616.0)
            return gs__cel_error("unsigned integer overflow");
        return (struct gs__cel_val){.t = V_UINT, .u = (uint64_t)v->d};
    case F_UINT * 16 + V_STR:
        if (!parse_int(v->p, v->n, false, &neg, &mag))
            return gs__cel_error("type conversion error from 'string' to 'uint'");
        return (struct gs__cel_val){.t = V_UINT, .u = mag};
    case F_DOUBLE * 16 + V_INT:
        return (struct gs__cel_val){.t = V_DOUBLE, .d = (double)v->i};
    case F_DOUBLE * 16 + V_UINT:
        return (struct gs__cel_val){.t = V_DOUBLE, .d = (double)v->u};
    case F_DOUBLE * 16 + V_STR: {
        double d;
        if (!parse_float(v->p, v->n, &d))
            return gs__cel_error("type conversion error from 'string' to 'double'");
        return (struct gs__cel_val){.t = V_DOUBLE, .d = d};
    }
    case F_STRING * 16 + V_INT:
        snprintf(buf, sizeof(buf), "%lld", (long long)v->i);
        break;
    case F_STRING * 16 + V_UINT:
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v->u);
        break;
    case F_STRING * 16 + V_DOUBLE:
        format_double(v->d, buf, sizeof(buf));
        break;
    case F_STRING * 16 + V_BOOL:
        snprintf(buf, sizeof(buf), "%s", v->b ? "true" : "false");
        break;
    case F_BOOL * 16 + V_STR:
        for (size_t k = 0; k < sizeof(bools) / sizeof(bools[0]); k++)
            if (strlen(bools[k]) == v->n && memcmp(bools[k], v->p, v->n) == 0)
                return bval(k < 6);
        return gs__cel_error("type conversion error from 'string' to 'bool'");
    default:
        return nso();
    }
    size_t n = strlen(buf);
    char *m = strdup_arena(c, n);
    if (!m)
        return gs__cel_error("out of memory");
    memcpy(m, buf, n);
    return gs__cel_str(m, n);
}

/* ---------- compile-time work: folding, regex literals ---------- */

static bool folded_value(const struct gs_cel *p, const struct gs_cel_node *x, struct gs__cel_val *v)
{
    int op = x->op == OP_CALL && (x->flags & NF_FOLDED) ? x->var : x->op;
    if (x->op != OP_CALL && x->op > OP_NULL)
        return false;
    if (x->op == OP_CALL && !(x->flags & NF_FOLDED))
        return false;
    switch (op) {
    case OP_BOOL:
        *v = bval(x->v.i != 0);
        return true;
    case OP_INT:
        *v = ival(x->v.i);
        return true;
    case OP_UINT:
        *v = (struct gs__cel_val){.t = V_UINT, .u = x->v.u};
        return true;
    case OP_DOUBLE:
        *v = (struct gs__cel_val){.t = V_DOUBLE, .d = x->v.d};
        return true;
    case OP_STR:
        *v = gs__cel_str(p->pool + x->s, (size_t)x->slen);
        return true;
    default:
        *v = (struct gs__cel_val){.t = V_NULL};
        return true;
    }
}

int gs__cel_fold(struct gs_cel *p, int k, const char **why)
{
    struct gs_cel_node *x = &p->nodes[k];
    struct gs__cel_val a, r;
    if (x->nk != 1 || x->fn < F_INT || x->fn > F_DYN || !folded_value(p, gs__cel_kid(p, x, 0), &a))
        return 0;
    _Alignas(16) char mem[64];
    struct gs__cel_ctx c = {.p = p, .mem = mem, .size = sizeof(mem)};
    r = x->fn == F_DYN ? a : convert(&c, x->fn, &a);
    if (r.t == V_ERR) {
        *why = r.p;
        return GS_EINVAL;
    }
    static const uint8_t ops[] = {[V_BOOL] = OP_BOOL,     [V_INT] = OP_INT, [V_UINT] = OP_UINT,
                                  [V_DOUBLE] = OP_DOUBLE, [V_STR] = OP_STR, [V_NULL] = OP_NULL};
    x->var = ops[r.t];
    x->flags |= NF_FOLDED;
    if (r.t == V_STR) {
        if ((size_t)p->npool + r.n > GS_CEL_MAX_POOL) {
            *why = "expression too long";
            return GS_ENOSPC;
        }
        memmove(p->pool + p->npool, r.p, r.n);
        x->s = p->npool;
        x->slen = (int32_t)r.n;
        p->npool += (int32_t)r.n;
    } else if (r.t == V_DOUBLE) {
        x->v.d = r.d;
    } else if (r.t == V_UINT) {
        x->v.u = r.u;
    } else {
        x->v.i = r.t == V_BOOL ? r.b : r.i;
    }
    return 0;
}

int gs__cel_check_regex(struct gs_cel *p, int k, struct gs_error *err)
{
    const struct gs_cel_node *x = &p->nodes[k];
    struct gs__cel_val pat;
    if (x->nk != 2 || !folded_value(p, gs__cel_kid(p, x, 1), &pat) || pat.t != V_STR)
        return 0;
    struct gs__cel_re re;
    const char *why = NULL;
    int rc = gs__cel_re_compile(pat.p, pat.n, &re, &why);
    if (rc == GS_ENOSPC)
        return gs__cel_fail(p, err, GS_CEL_UNSUPPORTED, gs__cel_kid(p, x, 1)->pos,
                            "regular expression: %s", why);
    if (rc)
        return gs__cel_fail(p, err, GS_CEL_INVALID, gs__cel_kid(p, x, 1)->pos,
                            "invalid matches argument: %s", why);
    return 0;
}

/* ---------- calls ---------- */

static struct gs__cel_val matches(struct gs__cel_ctx *c, const struct gs__cel_val *a)
{
    uint64_t sc = (usize(c, &a[0]) + 1 + 9) / 10, rc = (usize(c, &a[1]) + 3) / 4;
    gs__cel_charge(c, sc * rc);
    struct gs__cel_re re;
    const char *why = NULL;
    if (gs__cel_re_compile(a[1].p, a[1].n, &re, &why))
        return gs__cel_errorf(c, "invalid regular expression: %s", why);
    return bval(gs__cel_re_match(&re, a[0].p, a[0].n) == 1);
}

static bool all_strings(const struct gs__cel_val *a, int from, int to)
{
    for (int i = from; i < to; i++)
        if (a[i].t != V_STR)
            return false;
    return true;
}

/* the string functions: a[0] is the target */
static struct gs__cel_val string_call(struct gs__cel_ctx *c, int fn, const struct gs__cel_val *a,
                                      int n)
{
    if (a[0].t != V_STR)
        return nso();
    bool tail_int = n > 1 && a[n - 1].t == V_INT;
    switch (fn) {
    case F_CHARAT:
        gs__cel_charge(c, 1);
        return tail_int ? char_at(a) : nso();
    case F_INDEXOF:
    case F_LASTINDEXOF:
        gs__cel_charge(c, a[0].n / 10);
        if (a[1].t != V_STR || (n > 2 && !tail_int))
            return nso();
        return index_of(a, n, fn == F_LASTINDEXOF);
    case F_LOWER:
    case F_UPPER:
        gs__cel_charge_scan(c, usize(c, &a[0]));
        return ascii_case(c, &a[0], fn == F_UPPER);
    case F_TRIM:
        gs__cel_charge_scan(c, usize(c, &a[0]));
        return trim(&a[0]);
    case F_SUBSTRING:
        gs__cel_charge_scan(c, usize(c, &a[0]));
        return a[1].t == V_INT && (n < 3 || tail_int) ? substring(a, n) : nso();
    case F_REPLACE:
        gs__cel_charge_scan(c, 2 * usize(c, &a[0]));
        return all_strings(a, 1, 3) && (n < 4 || tail_int) ? replace(c, a, n) : nso();
    case F_SPLIT:
        gs__cel_charge_scan(c, 2 * usize(c, &a[0]));
        return a[1].t == V_STR && (n < 3 || tail_int) ? split(c, a, n) : nso();
    default:
        break;
    }
    if (n != 2 || a[1].t != V_STR)
        return nso();
    const char *s = a[0].p, *t = a[1].p;
    switch (fn) {
    case F_CONTAINS:
        gs__cel_charge(c, ((usize(c, &a[0]) + 9) / 10) * ((usize(c, &a[1]) + 9) / 10));
        return bval(find(s, a[0].n, t, a[1].n) != NULL);
    case F_STARTS:
        gs__cel_charge_scan(c, usize(c, &a[1]));
        return bval(a[0].n >= a[1].n && memcmp(s, t, a[1].n) == 0);
    case F_ENDS:
        gs__cel_charge_scan(c, usize(c, &a[1]));
        return bval(a[0].n >= a[1].n && memcmp(s + a[0].n - a[1].n, t, a[1].n) == 0);
    case F_MATCHES:
        return matches(c, a);
    default:
        return nso();
    }
}

/* apiserver's traversalCost: strings by a tenth of their bytes, containers by their items */
static uint64_t traversal(struct gs__cel_ctx *c, const struct gs__cel_val *v)
{
    if (v->t == V_STR)
        return v->n / 10;
    if (v->t != V_LIST && v->t != V_MAP)
        return 1;
    uint64_t t = 0;
    const struct gs__cel_val *e = v->p;
    for (uint32_t i = 0; i < (v->t == V_MAP ? 2 * v->n : v->n); i++)
        t += traversal(c, &e[i]);
    return t;
}

static bool comparable(const struct gs__cel_val *v)
{
    return v->t == V_INT || v->t == V_UINT || v->t == V_DOUBLE || v->t == V_STR || v->t == V_BOOL;
}

/* the list library (apiserver's library.Lists): a[0] is a list */
static struct gs__cel_val list_call(struct gs__cel_ctx *c, const struct gs_cel_node *x,
                                    const struct gs__cel_val *a, int n)
{
    const struct gs__cel_val *e = a[0].p;
    int64_t len = a[0].n;
    gs__cel_charge(c, traversal(c, &a[0]));
    switch (x->fn) {
    case F_INDEXOF:
        for (int64_t i = 0; n == 2 && i < len; i++)
            if (gs__cel_equal(c, &e[i], &a[1]) == 1)
                return ival(i);
        return n == 2 ? ival(-1) : nso();
    case F_LASTINDEXOF:
        for (int64_t i = len - 1; n == 2 && i >= 0; i--)
            if (gs__cel_equal(c, &e[i], &a[1]) == 1)
                return ival(i);
        return n == 2 ? ival(-1) : nso();
    case F_ISSORTED:
        for (int64_t i = 0; i < len; i++) {
            if (!comparable(&e[i]))
                return nso();
            if (i && gs__cel_order(&e[i - 1], &e[i]) == 1)
                return bval(false);
        }
        return bval(true);
    case F_MIN:
    case F_MAX: {
        const struct gs__cel_val *r = NULL;
        for (int64_t i = 0; i < len; i++) {
            if (!comparable(&e[i]))
                return nso();
            if (!r || gs__cel_order(r, &e[i]) == (x->fn == F_MIN ? 1 : -1))
                r = &e[i];
        }
        return r ? *r
                 : gs__cel_error(x->fn == F_MIN ? "min called on empty list"
                                                : "max called on empty list");
    }
    default: { /* F_SUM, from the zero of the element type; for a list typed dyn, of its first
                * element's (int when it is empty), as upstream's dispatch picks the overload */
        int t = c->p->types[x->type].kind;
        if (t == K_DYN && len > 0)
            t = e[0].t == V_INT      ? K_INT
                : e[0].t == V_UINT   ? K_UINT
                : e[0].t == V_DOUBLE ? K_DOUBLE
                                     : -1;
        if (t < 0)
            return nso();
        struct gs__cel_val acc = t == K_UINT     ? (struct gs__cel_val){.t = V_UINT}
                                 : t == K_DOUBLE ? (struct gs__cel_val){.t = V_DOUBLE}
                                                 : ival(0);
        for (int64_t i = 0; i < len; i++) {
            if (e[i].t != acc.t)
                return nso();
            if (acc.t == V_DOUBLE)
                acc.d += e[i].d;
            else if (acc.t == V_UINT && __builtin_add_overflow(acc.u, e[i].u, &acc.u))
                return gs__cel_error("unsigned integer overflow");
            else if (acc.t == V_INT && __builtin_add_overflow(acc.i, e[i].i, &acc.i))
                return gs__cel_error("integer overflow");
        }
        return acc;
    }
    }
}

struct gs__cel_val gs__cel_call(struct gs__cel_ctx *c, const struct gs_cel_node *x,
                                const struct gs__cel_val *a, int n)
{
    if (a[0].t == V_LIST && (x->fn == F_INDEXOF || x->fn == F_LASTINDEXOF || x->fn == F_SUM ||
                             x->fn == F_MIN || x->fn == F_MAX || x->fn == F_ISSORTED))
        return list_call(c, x, a, n);
    switch (x->fn) {
    case F_SUM:
    case F_MIN:
    case F_MAX:
    case F_ISSORTED:
        return nso();
    case F_SIZE: {
        gs__cel_charge(c, 1);
        int64_t s = gs__cel_size(c, &a[0]);
        return s < 0 ? nso() : ival(s);
    }
    case F_INT:
    case F_UINT:
    case F_DOUBLE:
    case F_STRING:
    case F_BOOL:
        gs__cel_charge(c, 1);
        return convert(c, x->fn, &a[0]);
    case F_JOIN:
        if (a[0].t != V_LIST || (n > 1 && a[1].t != V_STR))
            return nso();
        return join(c, a, n);
    case F_CONTAINS:
    case F_STARTS:
    case F_ENDS:
    case F_MATCHES:
    case F_CHARAT:
    case F_INDEXOF:
    case F_LASTINDEXOF:
    case F_LOWER:
    case F_UPPER:
    case F_REPLACE:
    case F_SPLIT:
    case F_SUBSTRING:
    case F_TRIM:
        return string_call(c, x->fn, a, n);
    default:
        return gs__cel_kube_call(c, x->fn, a, n);
    }
}
