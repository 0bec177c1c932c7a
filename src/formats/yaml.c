/* yaml.c - libfyaml wrapper used by the mig-parted, device-plugin and scenario parsers:
 * loading with collected diagnostics, line numbers for nodes, typed scalar getters. */
#include "yaml.h"

#include "../base/buf.h"
#include "../base/error.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* YAML is text: well-formed UTF-8 (RFC 3629: shortest form, no surrogates, nothing past
 * U+10FFFF) of YAML 1.2's c-printable characters: tab, LF, CR, U+0020..U+007E, NEL (U+0085),
 * U+00A0..U+D7FF, U+E000..U+FFFD and U+10000..U+10FFFF. Anything else is refused here, before
 * the parser sees it, with its line and column (libfyaml spins forever on an overlong form in
 * a directive). Returns 0 or the byte offset + 1 of the first offender. */
static size_t yaml_bad_byte(const unsigned char *d, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = d[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
                return i + 1;
            i++;
            continue;
        }
        int n;
        uint32_t cp, min;
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
            min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
            min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
            min = 0x10000;
        } else {
            return i + 1;
        }
        for (int k = 1; k <= n; k++) {
            if (i + (size_t)k >= len || (d[i + (size_t)k] & 0xc0) != 0x80)
                return i + 1;
            cp = cp << 6 | (d[i + (size_t)k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return i + 1; /* overlong, past Unicode, or a surrogate */
        if ((cp < 0xa0 && cp != 0x85) || cp == 0xfffe || cp == 0xffff)
            return i + 1; /* C1 controls and the two non-characters c-printable leaves out */
        i += (size_t)n + 1;
    }
    return 0;
}

/* An explicit block mapping key: '?' followed by a blank or the line's end, first on its line
 * after indentation and any block sequence or explicit key indicators ("- ", "? "). libfyaml
 * 0.7.12 writes through a freed pointer while it cleans up after a tab error inside such a key
 * ("? a:<TAB>-"; upstream pantoniou/libfyaml #57), and none of the formats read here has a key
 * that is not a plain string, so such a key is refused before the parser sees it. A line of a
 * block scalar that begins "? " is refused too: the gate does not track scalars. Returns 0 or
 * the byte offset + 1 of the '?'. */
/* The length of the line break at d[i] (YAML's CR, LF and CR LF, and the NEL, LS and PS
 * libfyaml also breaks lines on), or 0. */
static size_t yaml_break(const char *d, size_t len, size_t i)
{
    const unsigned char *u = (const unsigned char *)d;
    if (i >= len)
        return 0;
    if (u[i] == '\r')
        return i + 1 < len && u[i + 1] == '\n' ? 2 : 1;
    if (u[i] == '\n')
        return 1;
    if (u[i] == 0xc2 && i + 1 < len && u[i + 1] == 0x85)
        return 2;
    if (u[i] == 0xe2 && i + 2 < len && u[i + 1] == 0x80 && (u[i + 2] == 0xa8 || u[i + 2] == 0xa9))
        return 3;
    return 0;
}

static bool yaml_blank_or_end(const char *d, size_t len, size_t i)
{
    return i >= len || d[i] == ' ' || d[i] == '\t' || yaml_break(d, len, i) > 0;
}

static size_t yaml_explicit_key(const char *d, size_t len)
{
    size_t i = len >= 3 && memcmp(d, "\xef\xbb\xbf", 3) == 0 ? 3 : 0; /* a BOM */
    while (i < len) {
        while (i < len && (d[i] == ' ' || d[i] == '\t'))
            i++;
        for (;;) {
            if (i + 3 < len && d[i] == '-' && d[i + 1] == '-' && d[i + 2] == '-' &&
                (d[i + 3] == ' ' || d[i + 3] == '\t')) {
                i += 3;
            } else if (i < len && d[i] == '?' && yaml_blank_or_end(d, len, i + 1)) {
                return i + 1;
            } else if (i + 1 < len && d[i] == '-' && (d[i + 1] == ' ' || d[i + 1] == '\t')) {
                i += 1;
            } else {
                break;
            }
            while (i < len && (d[i] == ' ' || d[i] == '\t'))
                i++;
        }
        size_t n = 0;
        while (i < len && !(n = yaml_break(d, len, i)))
            i++;
        i += i < len ? n : 1;
    }
    return 0;
}

/* line and column (1-based, in characters) of byte offset `at` of d */
static void yaml_position(const char *d, size_t at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at; i++) {
        if (d[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)d[i] & 0xc0) != 0x80) {
            (*col)++;
        }
    }
}

/* The gate in front of libfyaml: every text this file hands to it (a document, a ConfigMap
 * before it is unwrapped, the text unwrapped from it) passes here first, because libfyaml
 * does not stop on everything that is not text (a '%' directive line with a broken UTF-8
 * byte makes it spin forever) and crashes on some errors inside an explicit key. Bounded by
 * len; 0 or GS_EINVAL with file:line:column. */
static int yaml_text_check(const char *name, const char *data, size_t len, int line_offset,
                           struct gs_error *err)
{
    if (len > GS_YAML_MAX)
        return gs_error_set(err, GS_EINVAL, "%s: larger than %zu bytes", name, GS_YAML_MAX);
    int line, col;
    size_t bad = yaml_bad_byte((const unsigned char *)data, len);
    if (!bad) {
        size_t key = yaml_explicit_key(data, len);
        if (!key)
            return 0;
        yaml_position(data, key - 1, &line, &col);
        return gs_error_set(err, GS_EINVAL,
                            "%s:%d:%d: explicit mapping key ('? '): not supported (expected "
                            "plain 'key: value' mappings)",
                            name, line + line_offset, col);
    }
    yaml_position(data, bad - 1, &line, &col);
    return gs_error_set(err, GS_EINVAL,
                        "%s:%d:%d: byte 0x%02x is not YAML text (expected well-formed UTF-8 "
                        "of printable characters, tab and newline)",
                        name, line + line_offset, col, (unsigned char)data[bad - 1]);
}

int gs_yaml_text_check(const char *name, const char *data, size_t len, struct gs_error *err)
{
    return yaml_text_check(name, data, len, 0, err);
}

int gs_yaml_load(struct gs_yaml *y, const char *name, const char *data, size_t len,
                 struct gs_error *err)
{
    return gs_yaml_load_at(y, name, data, len, 0, err);
}

int gs_yaml_load_at(struct gs_yaml *y, const char *name, const char *data, size_t len,
                    int line_offset, struct gs_error *err)
{
    y->name = name;
    y->doc = NULL;
    y->line_offset = line_offset;
    int rc = yaml_text_check(name, data, len, line_offset, err);
    if (rc)
        return rc;
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = NULL;
    dcfg.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    if (!diag)
        return gs_error_set(err, GS_ENOMEM, "%s: out of memory", name);
    fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG, .diag = diag};
    struct fy_document *doc = fy_document_build_from_string(&cfg, data, len);
    if (!doc) {
        void *it = NULL;
        struct fy_diag_error *de = fy_diag_errors_iterate(diag, &it);
        if (de)
            rc = gs_error_set(err, GS_EINVAL, "%s:%d:%d: invalid YAML: %s", name,
                              de->line + y->line_offset, de->column,
                              de->msg ? de->msg : "syntax error");
        else
            rc = gs_error_set(err, GS_EINVAL, "%s: invalid YAML", name);
        if (doc)
            fy_document_destroy(doc);
        doc = NULL;
    }
    fy_diag_destroy(diag);
    y->doc = doc;
    return rc;
}

void gs_yaml_release(struct gs_yaml *y)
{
    if (y->doc)
        fy_document_destroy(y->doc);
    y->doc = NULL;
}

struct fy_node *gs_yaml_root(const struct gs_yaml *y)
{
    return y->doc ? fy_document_root(y->doc) : NULL;
}

/* An empty collection has no token of its own: use its key in the parent mapping. */
static int empty_line(struct fy_node *n)
{
    struct fy_node *parent = fy_node_get_parent(n);
    if (!gs_yaml_is_map(parent))
        return 0;
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(parent, &it)))
        if (fy_node_pair_value(p) == n)
            return gs_yaml_line(fy_node_pair_key(p));
    return 0;
}

int gs_yaml_line(struct fy_node *n)
{
    if ((gs_yaml_is_map(n) && fy_node_mapping_item_count(n) == 0) ||
        (gs_yaml_is_seq(n) && fy_node_sequence_item_count(n) == 0))
        return empty_line(n);
    for (int depth = 0; n && depth < 64; depth++) {
        switch (fy_node_get_type(n)) {
        case FYNT_SCALAR: {
            struct fy_token *t = fy_node_get_scalar_token(n);
            const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
            return m ? m->line + 1 : 0;
        }
        case FYNT_MAPPING: {
            void *it = NULL;
            struct fy_node_pair *p = fy_node_mapping_iterate(n, &it);
            if (!p)
                return 0;
            n = fy_node_pair_key(p);
            break;
        }
        case FYNT_SEQUENCE: {
            void *it = NULL;
            n = fy_node_sequence_iterate(n, &it);
            break;
        }
        default:
            return 0;
        }
    }
    return 0;
}

int gs_yaml_fail(const struct gs_yaml *y, struct fy_node *n, const char *path, struct gs_error *err,
                 const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int line = gs_yaml_line(n);
    if (line > 0)
        line += y->line_offset;
    if (line > 0)
        return gs_error_set(err, GS_EINVAL, "%s:%d: %s: %s", y->name, line, path, msg);
    return gs_error_set(err, GS_EINVAL, "%s: %s: %s", y->name, path, msg);
}

bool gs_yaml_is_map(struct fy_node *n)
{
    return n && fy_node_get_type(n) == FYNT_MAPPING;
}

bool gs_yaml_is_seq(struct fy_node *n)
{
    return n && fy_node_get_type(n) == FYNT_SEQUENCE;
}

bool gs_yaml_is_scalar(struct fy_node *n)
{
    return n && fy_node_get_type(n) == FYNT_SCALAR;
}

int gs_yaml_str(const struct gs_yaml *y, struct fy_node *n, const char *path, char *buf,
                size_t size, struct gs_error *err)
{
    if (!gs_yaml_is_scalar(n))
        return gs_yaml_fail(y, n, path, err, "expected a scalar value");
    size_t l = 0;
    const char *s = fy_node_get_scalar(n, &l);
    if (!s || l + 1 > size)
        return gs_yaml_fail(y, n, path, err, "value longer than %zu characters", size - 1);
    memcpy(buf, s, l);
    buf[l] = '\0';
    return 0;
}

int gs_yaml_bool(const struct gs_yaml *y, struct fy_node *n, const char *path, bool *out,
                 struct gs_error *err)
{
    char b[16];
    if (gs_yaml_str(y, n, path, b, sizeof(b), err))
        return gs_yaml_fail(y, n, path, err, "expected true or false");
    if (strcmp(b, "true") == 0 || strcmp(b, "True") == 0 || strcmp(b, "TRUE") == 0)
        *out = true;
    else if (strcmp(b, "false") == 0 || strcmp(b, "False") == 0 || strcmp(b, "FALSE") == 0)
        *out = false;
    else
        return gs_yaml_fail(y, n, path, err, "expected true or false, got '%s'", b);
    return 0;
}

int gs_yaml_int(const struct gs_yaml *y, struct fy_node *n, const char *path, int64_t lo,
                int64_t hi, int64_t *out, struct gs_error *err)
{
    char b[32];
    if (gs_yaml_str(y, n, path, b, sizeof(b), err))
        return gs_yaml_fail(y, n, path, err, "expected an integer");
    char *end;
    errno = 0;
    long long v = strtoll(b, &end, 10);
    if (errno || end == b || *end)
        return gs_yaml_fail(y, n, path, err, "expected an integer, got '%s'", b);
    if (v < lo || v > hi)
        return gs_yaml_fail(y, n, path, err, "%lld is out of range %lld..%lld", v, (long long)lo,
                            (long long)hi);
    *out = v;
    return 0;
}

int gs_yaml_double(const struct gs_yaml *y, struct fy_node *n, const char *path, double lo,
                   double hi, double *out, struct gs_error *err)
{
    char b[48];
    if (gs_yaml_str(y, n, path, b, sizeof(b), err))
        return gs_yaml_fail(y, n, path, err, "expected a number");
    char *end;
    errno = 0;
    double v = strtod(b, &end);
    if (errno || end == b || *end || !isfinite(v))
        return gs_yaml_fail(y, n, path, err, "expected a number, got '%s'", b);
    if (v < lo || v > hi)
        return gs_yaml_fail(y, n, path, err, "%g is out of range %g..%g", v, lo, hi);
    *out = v;
    return 0;
}

int gs_yaml_key(struct fy_node_pair *p, char *buf, size_t size)
{
    struct fy_node *k = fy_node_pair_key(p);
    if (!gs_yaml_is_scalar(k))
        return GS_EINVAL;
    size_t l = 0;
    const char *s = fy_node_get_scalar(k, &l);
    if (!s || l + 1 > size)
        return GS_EINVAL;
    memcpy(buf, s, l);
    buf[l] = '\0';
    return 0;
}

int gs_yaml_unwrap_configmap(const char *name, const char *data, size_t len, struct gs_buf *text,
                             int *line_offset, char *what, size_t what_size, struct gs_error *err)
{
    /* cheap test first: only manifests are unwrapped */
    if (!memmem(data, len, "kind:", 5) || !memmem(data, len, "ConfigMap", 9))
        return 0;
    int rc = yaml_text_check(name, data, len, 0, err);
    if (rc)
        return rc;
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    if (!diag)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    fy_diag_set_collect_errors(diag, true); /* library code prints nothing */
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG, .diag = diag};
    struct fy_parser *fyp = fy_parser_create(&cfg);
    if (!fyp) {
        fy_diag_destroy(diag);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    if (fy_parser_set_string(fyp, data, len)) {
        fy_parser_destroy(fyp);
        fy_diag_destroy(diag);
        return 0;
    }
    struct fy_document *d;
    while (!rc && (d = fy_parse_load_document(fyp))) {
        struct fy_node *root = fy_document_root(d);
        struct fy_node *kind = gs_yaml_is_map(root)
                                   ? fy_node_mapping_lookup_by_string(root, "kind", (size_t)-1)
                                   : NULL;
        size_t kl = 0;
        const char *ks = gs_yaml_is_scalar(kind) ? fy_node_get_scalar(kind, &kl) : NULL;
        if (ks && kl == 9 && memcmp(ks, "ConfigMap", 9) == 0) {
            struct fy_node *dat = fy_node_mapping_lookup_by_string(root, "data", (size_t)-1);
            void *it = NULL;
            struct fy_node_pair *p;
            while (gs_yaml_is_map(dat) && (p = fy_node_mapping_iterate(dat, &it))) {
                char key[128];
                if (gs_yaml_key(p, key, sizeof(key)))
                    continue;
                size_t l = strlen(key);
                bool want = (l > 5 && strcmp(key + l - 5, ".yaml") == 0) ||
                            (l > 4 && strcmp(key + l - 4, ".yml") == 0) ||
                            (l > 5 && strcmp(key + l - 5, ".json") == 0);
                struct fy_node *v = fy_node_pair_value(p);
                if (!want || !gs_yaml_is_scalar(v))
                    continue;
                size_t vl = 0;
                const char *vs = fy_node_get_scalar(v, &vl);
                struct fy_node *meta =
                    fy_node_mapping_lookup_by_string(root, "metadata", (size_t)-1);
                struct fy_node *nm =
                    gs_yaml_is_map(meta)
                        ? fy_node_mapping_lookup_by_string(meta, "name", (size_t)-1)
                        : NULL;
                size_t nl = 0;
                const char *ns = gs_yaml_is_scalar(nm) ? fy_node_get_scalar(nm, &nl) : "";
                snprintf(what, what_size, "ConfigMap %.*s, data.%s", (int)(nl > 64 ? 64 : nl), ns,
                         key);
                gs_buf_reset(text);
                if (gs_buf_append(text, vs ? vs : "", vl)) {
                    rc = gs_error_set(err, GS_ENOMEM, "out of memory");
                    break;
                }
                *line_offset = gs_yaml_line(v) - 1; /* the value's text starts on that line */
                rc = 1;
                break;
            }
        }
        fy_parse_document_destroy(fyp, d);
    }
    fy_parser_destroy(fyp);
    fy_diag_destroy(diag);
    return rc;
}

int gs_yaml_read_unwrapped(const char *name, const char *data, size_t len, gs_yaml_text_fn fn,
                           void *out, struct gs_error *err)
{
    struct gs_buf inner;
    gs_buf_init(&inner, GS_YAML_MAX + 1);
    char what[160], label[512];
    int offset = 0;
    int rc = gs_yaml_unwrap_configmap(name, data, len, &inner, &offset, what, sizeof(what), err);
    if (rc == 1) {
        snprintf(label, sizeof(label), "%s (%s)", name, what);
        rc = yaml_text_check(label, inner.data, inner.len, offset, err);
        if (rc == 0)
            rc = fn(label, inner.data, inner.len, offset, out, err);
    } else if (rc == 0) {
        rc = fn(name, data, len, 0, out, err);
    }
    gs_buf_release(&inner);
    return rc;
}

int gs_yaml_read_file(const char *path, gs_yaml_text_fn fn, void *out, struct gs_error *err)
{
    struct gs_buf b;
    gs_buf_init(&b, GS_YAML_MAX + 1);
    int rc = gs_buf_read_file(&b, path, GS_YAML_MAX, err);
    if (rc == 0)
        rc = gs_yaml_read_unwrapped(path, b.data, b.len, fn, out, err);
    gs_buf_release(&b);
    return rc;
}
