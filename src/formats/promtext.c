/* promtext.c - the Prometheus text exposition writer (formats/promtext.h): the scheduler's
 * /metrics page (sched/metrics.c) is written through it, so names, escaping, value spelling
 * and the order of HELP, TYPE and samples are decided here once. */
#include "promtext.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../base/hash.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs_promtext_init(struct gs_promtext *w, struct gs_buf *b)
{
    memset(w, 0, sizeof(*w));
    w->b = b;
}

int gs_promtext_end(const struct gs_promtext *w)
{
    return w->err;
}

static void put(struct gs_promtext *w, const char *s, size_t n)
{
    if (w->err)
        return;
    int rc = gs_buf_append(w->b, s, n);
    if (rc)
        w->err = rc;
}

static void puts_(struct gs_promtext *w, const char *s)
{
    put(w, s, strlen(s));
}

/* Text with the characters the format escapes in it: backslash and newline, and in a label
 * value the double quote too. */
static void put_escaped(struct gs_promtext *w, const char *s, bool quote)
{
    const char *run = s;
    for (; *s; s++) {
        const char *rep = *s == '\\'           ? "\\\\"
                          : *s == '\n'         ? "\\n"
                          : *s == '"' && quote ? "\\\""
                                               : NULL;
        if (!rep)
            continue;
        put(w, run, (size_t)(s - run));
        puts_(w, rep);
        run = s + 1;
    }
    put(w, run, (size_t)(s - run));
}

static bool valid_name(const char *s, bool colon)
{
    if (!s || !*s)
        return false;
    for (const char *c = s; *c; c++) {
        bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
                     (colon && *c == ':');
        if (!alpha && (c == s || *c < '0' || *c > '9'))
            return false;
    }
    return true;
}

/* The shortest decimal that reads back as v, or +Inf, -Inf, NaN. */
static void fmt_double(char *s, size_t n, double v)
{
    if (isnan(v)) {
        snprintf(s, n, "NaN");
    } else if (isinf(v)) {
        snprintf(s, n, "%s", v > 0 ? "+Inf" : "-Inf");
    } else {
        snprintf(s, n, "%.15g", v);
        if (strtod(s, NULL) != v)
            snprintf(s, n, "%.17g", v);
    }
}

static void put_double(struct gs_promtext *w, double v)
{
    char s[40];
    fmt_double(s, sizeof(s), v);
    puts_(w, s);
}

void gs_promtext_family(struct gs_promtext *w, const char *name, enum gs_prom_type type,
                        const char *help)
{
    static const char *const types[] = {"counter", "gauge", "histogram", "untyped"};
    if (w->err || (w->family[0] && name && strcmp(name, w->family) == 0))
        return;
    if (!valid_name(name, true) || strlen(name) >= sizeof(w->family) ||
        (unsigned)type > GS_PROM_UNTYPED) {
        w->err = GS_EINVAL;
        return;
    }
    uint64_t h = gs_hash_str(name);
    for (int i = 0; i < w->nseen; i++)
        if (w->seen[i] == h) {
            w->err = GS_EINVAL; /* a family cut in two is not a valid page */
            return;
        }
    if (w->nseen == GS_PROMTEXT_MAX_FAMILIES) {
        w->err = GS_ENOSPC;
        return;
    }
    w->seen[w->nseen++] = h;
    snprintf(w->family, sizeof(w->family), "%s", name);
    w->type = type;
    puts_(w, "# HELP ");
    puts_(w, name);
    puts_(w, " ");
    put_escaped(w, help ? help : "", false);
    puts_(w, "\n# TYPE ");
    puts_(w, name);
    puts_(w, " ");
    puts_(w, types[type]);
    puts_(w, "\n");
}

/* name{labels[,le="bound"]} */
static void put_series(struct gs_promtext *w, const char *suffix, const struct gs_prom_label *l,
                       int nl, const char *le)
{
    if (!w->err && !w->family[0])
        w->err = GS_EINVAL; /* a sample before any family */
    for (int i = 0; i < nl && !w->err; i++)
        if (!valid_name(l[i].name, false) || !l[i].value || (le && strcmp(l[i].name, "le") == 0))
            w->err = GS_EINVAL;
    puts_(w, w->family);
    if (suffix)
        puts_(w, suffix);
    if (nl == 0 && !le)
        return;
    puts_(w, "{");
    for (int i = 0; i < nl; i++) {
        if (i)
            puts_(w, ",");
        puts_(w, l[i].name);
        puts_(w, "=\"");
        put_escaped(w, l[i].value, true);
        puts_(w, "\"");
    }
    if (le) {
        puts_(w, nl ? ",le=\"" : "le=\"");
        puts_(w, le);
        puts_(w, "\"");
    }
    puts_(w, "}");
}

void gs_promtext_sample(struct gs_promtext *w, const struct gs_prom_label *l, int nl, double v)
{
    if (!w->err && w->type == GS_PROM_HISTOGRAM)
        w->err = GS_EINVAL;
    put_series(w, NULL, l, nl, NULL);
    puts_(w, " ");
    put_double(w, v);
    puts_(w, "\n");
}

void gs_promtext_sample_u64(struct gs_promtext *w, const struct gs_prom_label *l, int nl,
                            uint64_t v)
{
    if (!w->err && w->type == GS_PROM_HISTOGRAM)
        w->err = GS_EINVAL;
    put_series(w, NULL, l, nl, NULL);
    char s[32];
    snprintf(s, sizeof(s), " %llu\n", (unsigned long long)v);
    puts_(w, s);
}

void gs_promtext_histogram(struct gs_promtext *w, const struct gs_prom_label *l, int nl,
                           const double *bounds, const uint64_t *count, int nb, uint64_t count_all,
                           double sum)
{
    if (!w->err && w->type != GS_PROM_HISTOGRAM)
        w->err = GS_EINVAL;
    uint64_t cum = 0;
    char n[32];
    for (int i = 0; i < nb && !w->err; i++) {
        if (i > 0 && !(bounds[i] > bounds[i - 1])) {
            w->err = GS_EINVAL;
            break;
        }
        cum += count[i];
        char le[40];
        fmt_double(le, sizeof(le), bounds[i]);
        put_series(w, "_bucket", l, nl, le);
        snprintf(n, sizeof(n), " %llu\n", (unsigned long long)cum);
        puts_(w, n);
    }
    put_series(w, "_bucket", l, nl, "+Inf");
    snprintf(n, sizeof(n), " %llu\n", (unsigned long long)count_all);
    puts_(w, n);
    put_series(w, "_sum", l, nl, NULL);
    puts_(w, " ");
    put_double(w, sum);
    puts_(w, "\n");
    put_series(w, "_count", l, nl, NULL);
    puts_(w, n);
}
