/* Table tests for Kubernetes quantities: parse, canonical form, values, rejects. */
#include "base/error.h"
#include "core/quantity.h"

#include <criterion/criterion.h>
#include <string.h>

struct qcase {
    const char *in;
    const char *canon;
    int64_t value; /* Value() */
    int64_t milli; /* MilliValue() */
};

static const struct qcase good[] = {
    {"0", "0", 0, 0},
    {"1", "1", 1, 1000},
    {"1.5", "1500m", 2, 1500},
    {"0.1", "100m", 1, 100},
    {"1000", "1k", 1000, 1000000},
    {"1024", "1024", 1024, 1024000},
    {"1.5Gi", "1536Mi", 1610612736, 1610612736000},
    {"0.5Gi", "512Mi", 536870912, 536870912000},
    {"0.5Ki", "512", 512, 512000},
    {"10Gi", "10Gi", 10737418240, 10737418240000},
    {"1e3", "1e3", 1000, 1000000},
    {"1e4", "10e3", 10000, 10000000},
    {"500m", "500m", 1, 500},
    {"0.1m", "100u", 1, 1},
    {"1n", "1n", 1, 1},
    {"1u", "1u", 1, 1},
    {"+5", "5", 5, 5000},
    {"-5", "-5", -5, -5000},
    {"5.", "5", 5, 5000},
    {".5", "500m", 1, 500},
    {"2k", "2k", 2000, 2000000},
    {"3M", "3M", 3000000, 3000000000},
    {"1E", "1E", 1000000000000000000, INT64_MAX},
    {"1Ei", "1Ei", 1152921504606846976, INT64_MAX},
    {"1.23456789", "1234567890n", 2, 1235},
    {"0.0000000001", "1n", 1, 1},
    {"12e-3", "12e-3", 1, 12},
    {"128", "128", 128, 128000},
    {"64Gi", "64Gi", 68719476736, 68719476736000},
    {"007", "7", 7, 7000},
    {"9223372036854775807", "9223372036854775807", INT64_MAX, INT64_MAX},
};

Test(quantity, parses_and_prints_canonical_forms)
{
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct gs_quantity q;
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_quantity_parse(good[i].in, strlen(good[i].in), &q, &err);
        cr_assert_eq(rc, 0, "'%s': rc %d (%s)", good[i].in, rc, err.msg);
        char out[GS_QUANTITY_MAX_LEN];
        gs_quantity_format(&q, out, sizeof(out));
        cr_assert_str_eq(out, good[i].canon, "'%s': canonical '%s', want '%s'", good[i].in, out,
                         good[i].canon);
        cr_assert_eq(gs_quantity_value(&q), good[i].value, "'%s': value %lld want %lld", good[i].in,
                     (long long)gs_quantity_value(&q), (long long)good[i].value);
        cr_assert_eq(gs_quantity_milli(&q), good[i].milli, "'%s': milli %lld want %lld", good[i].in,
                     (long long)gs_quantity_milli(&q), (long long)good[i].milli);
    }
}

Test(quantity, canonical_form_reparses_to_the_same_value)
{
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct gs_quantity a, b;
        gs_quantity_parse(good[i].in, strlen(good[i].in), &a, NULL);
        char out[GS_QUANTITY_MAX_LEN];
        gs_quantity_format(&a, out, sizeof(out));
        cr_assert_eq(gs_quantity_parse(out, strlen(out), &b, NULL), 0, "'%s'", out);
        cr_assert(a.nanos == b.nanos, "'%s' -> '%s' changed value", good[i].in, out);
    }
}

static const char *bad[] = {
    "",
    "abc",
    "1x",
    "1.2.3",
    "Ki",
    "1Ki2",
    "1e",
    "1e+",
    "--1",
    "1 ",
    " 1",
    "1kk",
    "1.5.Gi",
    "e3",
    "1mi",
    "1KI",
    "1e99999",
    "10Ei",
    "9223372036854775808",
    "1e19",
    ".",
    "+",
    "-",
    "1..",
    "1,5",
    "0x10",
};

Test(quantity, rejects_garbage_and_overflow)
{
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gs_quantity q;
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_quantity_parse(bad[i], strlen(bad[i]), &q, &err);
        cr_assert_eq(rc, GS_EINVAL, "'%s' accepted (rc %d)", bad[i], rc);
        cr_assert(strlen(err.msg) > 0, "'%s': no message", bad[i]);
    }
}

Test(quantity, integer_check_for_extended_resources)
{
    struct gs_quantity q;
    gs_quantity_parse("2", 1, &q, NULL);
    cr_assert(gs_quantity_is_integer(&q));
    gs_quantity_parse("500m", 4, &q, NULL);
    cr_assert(!gs_quantity_is_integer(&q));
}

/* Parsers take (ptr, len): a NUL inside the range is a byte like any other, never the end of
 * a suffix table (ASan: global-buffer-overflow reading past "KMGTPE"). */
Test(quantity, an_embedded_nul_is_an_unknown_suffix)
{
    static const struct {
        const char *in;
        size_t len;
    } cases[] = {
        {"6\0", 2}, {"6\0i", 3}, {"1\0\0", 3}, {"1K\0", 3}, {"1e\0", 3}, {"1e1\0", 4}, {"\0", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gs_quantity q;
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_quantity_parse(cases[i].in, cases[i].len, &q, &err);
        cr_assert_eq(rc, GS_EINVAL, "case %zu accepted (rc %d)", i, rc);
        cr_assert(strlen(err.msg) > 0, "case %zu: no message", i);
    }
}
