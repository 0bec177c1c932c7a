/* formats/promtext: the Prometheus text exposition writer — label values escape backslash,
 * double quote and newline, HELP text backslash and newline; HELP and TYPE come once per
 * family and a family cut in two is refused; histograms write cumulative buckets, +Inf, _sum
 * and _count; values print exactly; bad names and misuse are errors that stop the page. */
#include "base/buf.h"
#include "base/error.h"
#include "formats/promtext.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static struct gs_buf b;
static struct gs_promtext w;

static void setup(void)
{
    gs_buf_init(&b, 0);
    gs_promtext_init(&w, &b);
}

static void teardown(void)
{
    gs_buf_release(&b);
}

#define PAGE_IS(want)                                                                              \
    do {                                                                                           \
        cr_assert_eq(gs_promtext_end(&w), 0, "error %d", gs_promtext_end(&w));                     \
        cr_assert_str_eq(b.data ? b.data : "", (want));                                            \
    } while (0)

TestSuite(promtext, .init = setup, .fini = teardown);

Test(promtext, label_values_escape_backslash_quote_and_newline)
{
    static const struct {
        const char *value, *want;
    } cases[] = {
        {"plain", "plain"},
        {"a\\b", "a\\\\b"},
        {"say \"hi\"", "say \\\"hi\\\""},
        {"two\nlines", "two\\nlines"},
        {"\\\"\n", "\\\\\\\"\\n"},
        {"", ""},
        {"tab\tand unicode é", "tab\tand unicode é"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gs_buf_reset(&b);
        gs_promtext_init(&w, &b);
        gs_promtext_family(&w, "m", GS_PROM_GAUGE, "h");
        struct gs_prom_label l = {"pod", cases[i].value};
        gs_promtext_sample(&w, &l, 1, 1);
        char want[256];
        snprintf(want, sizeof(want), "# HELP m h\n# TYPE m gauge\nm{pod=\"%s\"} 1\n",
                 cases[i].want);
        PAGE_IS(want);
    }
}

Test(promtext, help_text_escapes_backslash_and_newline_but_not_quotes)
{
    gs_promtext_family(&w, "m", GS_PROM_COUNTER, "a \\ \"b\"\nc");
    PAGE_IS("# HELP m a \\\\ \"b\"\\nc\n# TYPE m counter\n");
}

Test(promtext, help_and_type_once_per_family_with_several_labels)
{
    gs_promtext_family(&w, "gpusched_schedule_attempts_total", GS_PROM_COUNTER, "Attempts.");
    struct gs_prom_label a[2] = {{"result", "scheduled"}, {"queue", "q"}};
    gs_promtext_sample_u64(&w, a, 2, 3);
    a[0].value = "error";
    gs_promtext_family(&w, "gpusched_schedule_attempts_total", GS_PROM_COUNTER, "Attempts.");
    gs_promtext_sample_u64(&w, a, 2, 18446744073709551615ull);
    gs_promtext_family(&w, "up", GS_PROM_GAUGE, "Up.");
    gs_promtext_sample(&w, NULL, 0, 1);
    PAGE_IS("# HELP gpusched_schedule_attempts_total Attempts.\n"
            "# TYPE gpusched_schedule_attempts_total counter\n"
            "gpusched_schedule_attempts_total{result=\"scheduled\",queue=\"q\"} 3\n"
            "gpusched_schedule_attempts_total{result=\"error\",queue=\"q\"} 18446744073709551615\n"
            "# HELP up Up.\n# TYPE up gauge\nup 1\n");
}

Test(promtext, a_family_opened_again_after_another_is_refused)
{
    gs_promtext_family(&w, "a", GS_PROM_GAUGE, "A.");
    gs_promtext_family(&w, "b", GS_PROM_GAUGE, "B.");
    gs_promtext_family(&w, "a", GS_PROM_GAUGE, "A.");
    cr_assert_eq(gs_promtext_end(&w), GS_EINVAL);
}

Test(promtext, histogram_buckets_are_cumulative_with_inf_sum_and_count)
{
    static const double bounds[] = {0.001, 0.0025, 1};
    static const uint64_t count[] = {2, 0, 5};
    gs_promtext_family(&w, "d_seconds", GS_PROM_HISTOGRAM, "D.");
    struct gs_prom_label l = {"verb", "bind"};
    gs_promtext_histogram(&w, &l, 1, bounds, count, 3, 9, 12.5);
    PAGE_IS("# HELP d_seconds D.\n# TYPE d_seconds histogram\n"
            "d_seconds_bucket{verb=\"bind\",le=\"0.001\"} 2\n"
            "d_seconds_bucket{verb=\"bind\",le=\"0.0025\"} 2\n"
            "d_seconds_bucket{verb=\"bind\",le=\"1\"} 7\n"
            "d_seconds_bucket{verb=\"bind\",le=\"+Inf\"} 9\n"
            "d_seconds_sum{verb=\"bind\"} 12.5\n"
            "d_seconds_count{verb=\"bind\"} 9\n");
}

Test(promtext, a_histogram_without_labels)
{
    static const double bounds[] = {0.5};
    static const uint64_t count[] = {1};
    gs_promtext_family(&w, "h", GS_PROM_HISTOGRAM, "H.");
    gs_promtext_histogram(&w, NULL, 0, bounds, count, 1, 1, 0.25);
    PAGE_IS("# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"0.5\"} 1\nh_bucket{le=\"+Inf\"} 1\n"
            "h_sum 0.25\nh_count 1\n");
}

Test(promtext, values_print_exactly_and_special_values_as_prometheus_spells_them)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {0, "0"},           {1.0 / 3, "0.33333333333333331"},
        {0.1, "0.1"},       {4.0 / 7, "0.5714285714285714"},
        {1e21, "1e+21"},    {-2.5, "-2.5"},
        {INFINITY, "+Inf"}, {-INFINITY, "-Inf"},
        {NAN, "NaN"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gs_buf_reset(&b);
        gs_promtext_init(&w, &b);
        gs_promtext_family(&w, "v", GS_PROM_GAUGE, "");
        gs_promtext_sample(&w, NULL, 0, cases[i].v);
        char want[128];
        snprintf(want, sizeof(want), "# HELP v \n# TYPE v gauge\nv %s\n", cases[i].want);
        PAGE_IS(want);
    }
}

Test(promtext, bad_names_and_misuse_stop_the_page)
{
    struct gs_prom_label bad = {"0pod", "x"}, dash = {"a-b", "x"}, le = {"le", "1"};
    static const double bounds[] = {1, 1};
    static const uint64_t count[] = {0, 0};
    for (int i = 0; i < 7; i++) {
        gs_buf_reset(&b);
        gs_promtext_init(&w, &b);
        switch (i) {
        case 0: /* a metric name with a dash */
            gs_promtext_family(&w, "my-metric", GS_PROM_GAUGE, "");
            break;
        case 1: /* a label name starting with a digit */
            gs_promtext_family(&w, "m", GS_PROM_GAUGE, "");
            gs_promtext_sample(&w, &bad, 1, 1);
            break;
        case 2: /* a label name with a dash */
            gs_promtext_family(&w, "m", GS_PROM_GAUGE, "");
            gs_promtext_sample(&w, &dash, 1, 1);
            break;
        case 3: /* a sample before any family */
            gs_promtext_sample(&w, NULL, 0, 1);
            break;
        case 4: /* a plain sample in a histogram family */
            gs_promtext_family(&w, "h", GS_PROM_HISTOGRAM, "");
            gs_promtext_sample(&w, NULL, 0, 1);
            break;
        case 5: /* a histogram whose own labels say le, or bounds not ascending */
            gs_promtext_family(&w, "h", GS_PROM_HISTOGRAM, "");
            gs_promtext_histogram(&w, &le, 1, bounds, count, 1, 0, 0);
            break;
        case 6:
            gs_promtext_family(&w, "h", GS_PROM_HISTOGRAM, "");
            gs_promtext_histogram(&w, NULL, 0, bounds, count, 2, 0, 0);
            break;
        }
        cr_assert_eq(gs_promtext_end(&w), GS_EINVAL, "case %d: %d", i, gs_promtext_end(&w));
    }
}

Test(promtext, a_name_with_a_colon_is_a_metric_name_only)
{
    gs_promtext_family(&w, "job:rate5m", GS_PROM_GAUGE, "R.");
    gs_promtext_sample(&w, NULL, 0, 2);
    PAGE_IS("# HELP job:rate5m R.\n# TYPE job:rate5m gauge\njob:rate5m 2\n");
    struct gs_prom_label c = {"a:b", "x"};
    gs_promtext_sample(&w, &c, 1, 1);
    cr_assert_eq(gs_promtext_end(&w), GS_EINVAL);
}

Test(promtext, an_append_that_fails_is_kept_and_the_rest_is_not_written)
{
    struct gs_buf small;
    gs_buf_init(&small, 40);
    gs_promtext_init(&w, &small);
    gs_promtext_family(&w, "a_rather_long_metric_name", GS_PROM_GAUGE, "With some help text.");
    gs_promtext_sample(&w, NULL, 0, 1);
    cr_assert_neq(gs_promtext_end(&w), 0);
    size_t len = small.len;
    gs_promtext_family(&w, "b", GS_PROM_GAUGE, "");
    cr_assert_eq(small.len, len, "wrote %zu more bytes after the error", small.len - len);
    gs_buf_release(&small);
}
