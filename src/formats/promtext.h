/* promtext.h - a writer of Prometheus's text exposition format (version 0.0.4), the page a
 * daemon serves on /metrics: families of counters, gauges and histograms, each opened once
 * with its # HELP and # TYPE lines and followed by its samples.
 *
 * Invariants of every page written through it: a family's HELP and TYPE lines appear once and
 * before its samples, and its samples follow them without another family in between (a
 * family opened a second time later on the page is refused); metric and label names match
 * [a-zA-Z_:][a-zA-Z0-9_:]* and [a-zA-Z_][a-zA-Z0-9_]*; label values are escaped (backslash,
 * double quote and newline become \\, \" and \n), HELP text too (backslash and newline);
 * values print exactly (the shortest decimal that reads back as the same double; unsigned
 * integers as integers; +Inf, -Inf, NaN as Prometheus spells them).
 *
 * Errors are sticky: the first one (GS_ENOMEM from the buffer, GS_EINVAL for a name or an
 * order that breaks the format) is kept, nothing more is written, and gs_promtext_end returns
 * it; a page cut short is no answer. A writer is a plain value on the caller's stack, not
 * thread-safe; it writes into a gs_buf it does not own. */
#ifndef GS_PROMTEXT_H
#define GS_PROMTEXT_H

#include <stdint.h>

/* The Content-Type of the page. */
#define GS_PROMTEXT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#define GS_PROMTEXT_MAX_FAMILIES 256 /* families one page can hold */

struct gs_buf;

enum gs_prom_type { GS_PROM_COUNTER, GS_PROM_GAUGE, GS_PROM_HISTOGRAM, GS_PROM_UNTYPED };

struct gs_prom_label {
    const char *name, *value;
};

struct gs_promtext {
    struct gs_buf *b;
    int err;
    char family[128]; /* the family open now ("" before the first) */
    enum gs_prom_type type;
    uint64_t seen[GS_PROMTEXT_MAX_FAMILIES]; /* hashes of the families opened so far */
    int nseen;
};

void gs_promtext_init(struct gs_promtext *w, struct gs_buf *b);
/* Open a family: name as on its TYPE line (a counter's usually ends in _total), its type and
 * a help text. Opening the family that is open already does nothing. */
void gs_promtext_family(struct gs_promtext *w, const char *name, enum gs_prom_type type,
                        const char *help);
/* One sample of the open family, named after it (a counter or gauge; for a histogram use
 * gs_promtext_histogram), with nl labels (l may be NULL when nl is 0). */
void gs_promtext_sample(struct gs_promtext *w, const struct gs_prom_label *l, int nl, double v);
/* The same with an unsigned integer value, printed exactly. */
void gs_promtext_sample_u64(struct gs_promtext *w, const struct gs_prom_label *l, int nl,
                            uint64_t v);
/* One histogram of the open family (a GS_PROM_HISTOGRAM): count[i] observations fell in
 * (bounds[i-1], bounds[i]] (bounds ascending), count_all in all (those above the last bound
 * too), summing to sum. Writes the cumulative _bucket series with le labels, the +Inf
 * bucket, _sum and _count, each with the nl labels l. */
void gs_promtext_histogram(struct gs_promtext *w, const struct gs_prom_label *l, int nl,
                           const double *bounds, const uint64_t *count, int nb, uint64_t count_all,
                           double sum);
/* 0, or the first error. */
int gs_promtext_end(const struct gs_promtext *w);

#endif
