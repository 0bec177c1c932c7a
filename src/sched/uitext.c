/* uitext.c - a /ui/state document as a terminal frame (sched/uitext.h). */
#include "uitext.h"

#include "../base/error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ANSI SGR parameters */
#define BOLD   "1"
#define DIM    "2"
#define RED    "31"
#define GREEN  "32"
#define YELLOW "33"
#define BLUE   "34"
#define PURPLE "35"
#define CYAN   "36"

/* One frame being written: the column of the current line, cut at the width. */
struct frame {
    struct gs_buf *out;
    bool color;
    int w, col;
    int bad;
};

static void raw(struct frame *f, const char *s, size_t n)
{
    if (gs_buf_append(f->out, s, n))
        f->bad++;
}

/* Append text in style (NULL: plain), cut at the width; control bytes (an escape sequence in
 * a name from the network) are drawn as '?'. */
static void put(struct frame *f, const char *style, const char *text)
{
    size_t n = strlen(text);
    int room = f->w - f->col;
    if (room <= 0 || n == 0)
        return;
    if (n > (size_t)room) {
        n = (size_t)room;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
            n--; /* not inside a UTF-8 sequence */
    }
    if (f->color && style) {
        raw(f, "\x1b[", 2);
        raw(f, style, strlen(style));
        raw(f, "m", 1);
    }
    char clean[256];
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < sizeof(clean) && i < n; k++, i++) {
            unsigned char c = (unsigned char)text[i];
            clean[k] = c < 0x20 || c == 0x7f ? '?' : (char)c;
        }
        raw(f, clean, k);
    }
    if (f->color && style)
        raw(f, "\x1b[0m", 4);
    f->col += (int)n;
}

static void putf(struct frame *f, const char *style, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void putf(struct frame *f, const char *style, const char *fmt, ...)
{
    char b[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof(b), fmt, ap);
    va_end(ap);
    put(f, style, b);
}

static void nl(struct frame *f)
{
    raw(f, "\n", 1);
    f->col = 0;
}

/* Spaces up to column c. */
static void pad(struct frame *f, int c)
{
    while (f->col < c && f->col < f->w) {
        raw(f, " ", 1);
        f->col++;
    }
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : 0;
}

static const json_t *arr(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_array(v) ? v : NULL;
}

static void fmt_num(double v, char *out, size_t n)
{
    if (!isfinite(v))
        snprintf(out, n, "?");
    else if (fabs(v - round(v)) < 1e-9 && fabs(v) < 1e15)
        snprintf(out, n, "%.0f", v);
    else
        snprintf(out, n, "%.3g", v);
}

static void fmt_clock(double t, char *out, size_t n)
{
    time_t s = (time_t)t;
    struct tm tm;
    if (!isfinite(t) || t <= 0 || !localtime_r(&s, &tm) || !strftime(out, n, "%H:%M:%S", &tm))
        snprintf(out, n, "--:--:--");
}

static void title(struct frame *f, const json_t *st, const struct gs_uitext_opts *o)
{
    char clock[16];
    fmt_clock(num(st, "time"), clock, sizeof(clock));
    put(f, BOLD, "gpusched top");
    if (o->source && o->source[0])
        putf(f, NULL, "  %s", o->source);
    putf(f, NULL, "  %s %s%s%s", str(st, "scheduler"), str(st, "mode"),
         json_is_true(json_object_get(st, "leader")) ? " (leader)" : " (standby)",
         json_is_false(json_object_get(st, "synced")) ? ", listing" : "");
    putf(f, DIM, "  generation %.0f  %s", num(st, "generation"), clock);
    nl(f);
}

/* One cell per MIG slice, wrapped under the GPU's label (indent columns). */
static void slices(struct frame *f, const json_t *g, int indent)
{
    size_t k;
    const json_t *s;
    int index = (int)num(g, "index");
    json_array_foreach(arr(g, "slices"), k, s)
    {
        const char *holder = str(s, "holder");
        bool held = json_is_true(json_object_get(s, "held"));
        char id[96], cell[400];
        snprintf(id, sizeof(id), "%d:%s@%.0f", index, str(s, "profile"), num(s, "start"));
        snprintf(cell, sizeof(cell), "[%s %s]", id, holder[0] ? holder : held ? "in use" : "free");
        if (f->col > indent && f->col + 1 + (int)strlen(cell) > f->w) {
            nl(f);
            pad(f, indent);
        } else if (f->col > indent) {
            put(f, NULL, " ");
        }
        put(f, NULL, "[");
        put(f, NULL, id);
        put(f, NULL, " ");
        put(f, holder[0] ? CYAN : DIM, holder[0] ? holder : held ? "in use" : "free");
        put(f, NULL, "]");
    }
}

static void holders(struct frame *f, const json_t *g, int indent)
{
    size_t k;
    const json_t *h;
    const json_t *a = arr(g, "holders");
    if (!a || json_array_size(a) == 0) {
        put(f, DIM, "free");
        return;
    }
    json_array_foreach(a, k, h)
    {
        char cell[400];
        snprintf(cell, sizeof(cell), "%s (%s)", str(h, "pod"), str(h, "share"));
        if (f->col > indent && f->col + 2 + (int)strlen(cell) > f->w) {
            nl(f);
            pad(f, indent);
        } else if (f->col > indent) {
            put(f, NULL, "  ");
        }
        put(f, CYAN, str(h, "pod"));
        putf(f, DIM, " (%s)", str(h, "share"));
    }
}

static void nodes(struct frame *f, const json_t *st)
{
    const json_t *a = arr(st, "nodes");
    putf(f, BOLD, "NODES (%zu)", a ? json_array_size(a) : 0);
    nl(f);
    size_t i;
    const json_t *n;
    json_array_foreach(a, i, n)
    {
        const json_t *ready = json_object_get(n, "ready");
        put(f, NULL, "  ");
        put(f, BOLD, str(n, "name"));
        putf(f, NULL, "  %s  ", str(n, "model")[0] ? str(n, "model") : "no GPUs");
        put(f,
            json_is_true(ready)    ? GREEN
            : json_is_false(ready) ? RED
                                   : DIM,
            json_is_true(ready)    ? "Ready"
            : json_is_false(ready) ? "NotReady"
                                   : "-");
        if (json_is_true(json_object_get(n, "cordoned")))
            put(f, YELLOW, "  cordoned");
        if (str(n, "problem")[0])
            putf(f, RED, "  unusable: %s", str(n, "problem"));
        nl(f);
        size_t k;
        const json_t *g;
        json_array_foreach(arr(n, "gpus"), k, g)
        {
            char mode[48];
            const char *m = str(g, "mode");
            if (num(g, "replicas") > 0)
                snprintf(mode, sizeof(mode), "%s x%.0f", m, num(g, "replicas"));
            else
                snprintf(mode, sizeof(mode), "%s", m);
            putf(f, NULL, "    GPU %-2.0f ", num(g, "index"));
            putf(f, DIM, "%-12s ", mode);
            if (json_is_false(json_object_get(g, "healthy")))
                put(f, RED, "unhealthy ");
            if (json_is_true(json_object_get(g, "recarving")))
                put(f, YELLOW, "re-carving ");
            int indent = f->col;
            if (strcmp(m, "mig") == 0)
                slices(f, g, indent);
            else
                holders(f, g, indent);
            nl(f);
        }
    }
}

/* A bar of used within deserved (=), borrowed beyond it (+), room up to the larger of
 * deserved and limit (.), the deserved mark (|). */
static void bar(struct frame *f, double used, double deserved, double borrowed, double limit,
                int width)
{
    if (width > 120)
        width = 120;
    double scale = fmax(fmax(used, deserved), fmax(limit, 1e-9));
    int own = (int)lround(fmin(used, deserved) / scale * width);
    int more = (int)lround(borrowed / scale * width);
    int mark = deserved > 0 ? (int)lround(deserved / scale * width) : -1;
    char b[130];
    int k = 0;
    for (; k < width; k++)
        b[k] = k < own ? '=' : k < own + more ? '+' : '.';
    if (mark > 0 && mark <= width)
        b[mark - 1] = '|';
    b[k] = '\0';
    put(f, NULL, "[");
    put(f, borrowed > 0 ? PURPLE : GREEN, b);
    put(f, NULL, "]");
}

static void queues(struct frame *f, const json_t *st)
{
    const json_t *a = arr(st, "queues");
    putf(f, BOLD, "QUEUES (%zu)", a ? json_array_size(a) : 0);
    nl(f);
    size_t i;
    const json_t *q;
    json_array_foreach(a, i, q)
    {
        put(f, NULL, "  ");
        put(f, BOLD, str(q, "name"));
        if (str(q, "parent")[0])
            putf(f, DIM, "  in %s", str(q, "parent"));
        putf(f, DIM, "  weight %.0f  priority %.0f", num(q, "weight"), num(q, "priority"));
        if (json_is_true(json_object_get(q, "borrowing")))
            put(f, PURPLE, "  borrowing");
        nl(f);
        size_t k;
        const json_t *r;
        json_array_foreach(arr(q, "resources"), k, r)
        {
            char u[32], d[32], b[32], l[32];
            const json_t *lim = json_object_get(r, "limit");
            fmt_num(num(r, "used"), u, sizeof(u));
            fmt_num(num(r, "deserved"), d, sizeof(d));
            fmt_num(num(r, "borrowed"), b, sizeof(b));
            if (json_is_number(lim))
                fmt_num(json_number_value(lim), l, sizeof(l));
            else
                snprintf(l, sizeof(l), "-");
            putf(f, NULL, "    %-24s ", str(r, "resource"));
            bar(f, num(r, "used"), num(r, "deserved"), num(r, "borrowed"),
                json_is_number(lim) ? json_number_value(lim) : 0, 20);
            putf(f, NULL, " used %s of %s deserved", u, d);
            if (num(r, "borrowed") > 0)
                putf(f, PURPLE, ", %s borrowed", b);
            if (json_is_number(lim))
                putf(f, DIM, ", limit %s", l);
            nl(f);
        }
    }
}

static const char *reason_style(const char *r)
{
    if (strcmp(r, "quota") == 0)
        return PURPLE;
    if (strcmp(r, "fragmentation") == 0)
        return YELLOW;
    if (strcmp(r, "priority") == 0 || strcmp(r, "preempting") == 0)
        return BLUE;
    if (strcmp(r, "gated") == 0) /* held back by its owner (spec.schedulingGates) */
        return DIM;
    return RED;
}

/* text over at most lines lines from column indent, broken at a space where it can be; the
 * last line is cut at the width. */
static void wrap(struct frame *f, const char *text, int indent, int lines)
{
    int room = f->w - indent;
    for (int l = 0; *text && l < lines && room > 0; l++) {
        pad(f, indent);
        size_t n = strlen(text);
        if (n > (size_t)room && l + 1 < lines) {
            n = (size_t)room;
            size_t sp = n;
            while (sp > 0 && text[sp] != ' ')
                sp--;
            if (sp > (size_t)room / 2)
                n = sp;
        }
        char b[1024];
        snprintf(b, sizeof(b), "%.*s", (int)(n < sizeof(b) ? n : sizeof(b) - 1), text);
        put(f, DIM, b);
        nl(f);
        text += n;
        while (*text == ' ')
            text++;
    }
}

static void pending(struct frame *f, const json_t *st, int max)
{
    const json_t *a = arr(st, "pending");
    size_t n = a ? json_array_size(a) : 0;
    putf(f, BOLD, "PENDING (%zu)", n);
    nl(f);
    size_t i;
    const json_t *p;
    json_array_foreach(a, i, p)
    {
        if ((int)i >= max) {
            putf(f, DIM, "  ... %zu more", n - i);
            nl(f);
            break;
        }
        const char *reason = str(p, "reason");
        putf(f, NULL, "  %s/%s", str(p, "namespace"), str(p, "pod"));
        putf(f, DIM, "  queue %s  priority %.0f  ", str(p, "queue")[0] ? str(p, "queue") : "-",
             num(p, "priority"));
        put(f, reason[0] ? reason_style(reason) : DIM, reason[0] ? reason : "not yet considered");
        if (str(p, "nominated")[0])
            putf(f, DIM, "  nominated to %s", str(p, "nominated"));
        nl(f);
        wrap(f, str(p, "message"), 6, 3);
    }
}

static void events(struct frame *f, const json_t *st, int max)
{
    const json_t *a = arr(st, "events");
    size_t n = a ? json_array_size(a) : 0;
    size_t from = n > (size_t)max ? n - (size_t)max : 0;
    putf(f, BOLD, "EVENTS (%zu)", n);
    nl(f);
    for (size_t i = n; i-- > from;) {
        const json_t *e = json_array_get(a, i);
        const char *kind = str(e, "kind");
        char clock[16], text[1200];
        fmt_clock(num(e, "time"), clock, sizeof(clock));
        if (strcmp(kind, "bind") == 0) {
            snprintf(text, sizeof(text), "%s/%s -> %s %s", str(e, "namespace"), str(e, "pod"),
                     str(e, "node"), str(e, "devices"));
        } else if (strcmp(kind, "preempt") == 0) {
            char victims[800] = "";
            size_t k;
            const json_t *v;
            json_array_foreach(arr(e, "victims"), k, v)
            {
                size_t o = strlen(victims);
                const char *s = json_string_value(v);
                snprintf(victims + o, sizeof(victims) - o, "%s%s", k ? ", " : "", s ? s : "?");
            }
            snprintf(text, sizeof(text), "%s/%s on %s%s: evicted %s", str(e, "namespace"),
                     str(e, "pod"), str(e, "node"),
                     json_is_true(json_object_get(e, "recarving")) ? " (re-carving)" : "", victims);
        } else if (strcmp(kind, "recarve") == 0) {
            snprintf(text, sizeof(text), "%s GPU %.0f: %s -> %s", str(e, "node"), num(e, "gpu"),
                     str(e, "from"), str(e, "to"));
        } else {
            snprintf(text, sizeof(text), "?");
        }
        putf(f, DIM, "  %s ", clock);
        putf(f,
             strcmp(kind, "bind") == 0      ? GREEN
             : strcmp(kind, "preempt") == 0 ? RED
                                            : YELLOW,
             "%-8s", kind);
        put(f, NULL, text);
        nl(f);
    }
}

int gs_uitext_render(const json_t *state, const struct gs_uitext_opts *o, struct gs_buf *out)
{
    struct frame f = {.out = out, .color = o->color, .w = o->width < 40 ? 40 : o->width};
    title(&f, state, o);
    nl(&f);
    nodes(&f, state);
    nl(&f);
    queues(&f, state);
    nl(&f);
    pending(&f, state, o->max_pending > 0 ? o->max_pending : 20);
    nl(&f);
    events(&f, state, o->max_events > 0 ? o->max_events : 10);
    return f.bad ? GS_ENOMEM : 0;
}
