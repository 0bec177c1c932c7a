/* openb.c - CSV reader (and pod-list writer) for the openb trace's node and pod lists; sim/openb.c
 * builds the simulated cluster and the pod stream from what this returns. */
#include "openb.h"

#include "../base/buf.h"
#include "../base/error.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 32

struct csv_line {
    int n;
    const char *f[MAX_FIELDS];
    size_t l[MAX_FIELDS];
};

/* Split one line (no quoting in the openb files; a quote is rejected). */
static int split(const char *p, size_t len, struct csv_line *out)
{
    out->n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && p[i] == '"')
            return GS_EINVAL;
        if (i == len || p[i] == ',') {
            if (out->n >= MAX_FIELDS)
                return GS_ENOSPC;
            out->f[out->n] = p + start;
            out->l[out->n] = i - start;
            out->n++;
            start = i + 1;
        }
    }
    return 0;
}

static int find_col(const struct csv_line *h, const char *name)
{
    for (int i = 0; i < h->n; i++)
        if (h->l[i] == strlen(name) && memcmp(h->f[i], name, h->l[i]) == 0)
            return i;
    return -1;
}

static int parse_int(const char *s, size_t l, int64_t *out)
{
    if (l == 0 || l > 19)
        return GS_EINVAL;
    int64_t v = 0;
    size_t i = 0;
    bool neg = false;
    if (s[0] == '-') {
        neg = true;
        i = 1;
        if (l == 1)
            return GS_EINVAL;
    }
    for (; i < l; i++) {
        if (s[i] < '0' || s[i] > '9')
            return GS_EINVAL;
        if (v > (INT64_MAX - (s[i] - '0')) / 10)
            return GS_EINVAL; /* beyond int64 */
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

struct reader {
    const char *name, *data;
    size_t len, pos;
    int lineno;
};

/* Next non-empty line; returns 0 at end. */
static int next_line(struct reader *r, const char **p, size_t *l, struct gs_error *err)
{
    while (r->pos < r->len) {
        const char *s = r->data + r->pos;
        const char *e = memchr(s, '\n', r->len - r->pos);
        size_t n = e ? (size_t)(e - s) : r->len - r->pos;
        r->pos += n + (e ? 1 : 0);
        r->lineno++;
        if (n && s[n - 1] == '\r')
            n--;
        if (n == 0)
            continue;
        if (n > GS_OPENB_LINE_MAX)
            return gs_error_set(err, GS_EINVAL, "%s:%d: line longer than %d bytes", r->name,
                                r->lineno, GS_OPENB_LINE_MAX);
        const char *nul = memchr(s, '\0', n);
        if (nul)
            return gs_error_set(err, GS_EINVAL, "%s:%d:%d: NUL byte in a CSV line", r->name,
                                r->lineno, (int)(nul - s) + 1);
        *p = s;
        *l = n;
        return 1;
    }
    return 0;
}

static int get_int(struct reader *r, const struct csv_line *ln, int col, const char *what,
                   int64_t *out, struct gs_error *err)
{
    if (col >= ln->n)
        return gs_error_set(err, GS_EINVAL, "%s:%d: missing column '%s' (line has %d fields)",
                            r->name, r->lineno, what, ln->n);
    if (parse_int(ln->f[col], ln->l[col], out) || *out < 0)
        return gs_error_set(
            err, GS_EINVAL, "%s:%d: column '%s': expected a non-negative integer, got '%.*s'",
            r->name, r->lineno, what, (int)(ln->l[col] > 40 ? 40 : ln->l[col]), ln->f[col]);
    return 0;
}

static int parse_model(const char *s, size_t l, int *out)
{
    char m[64];
    if (l >= sizeof(m))
        return GS_EINVAL;
    memcpy(m, s, l);
    m[l] = '\0';
    int id = gs_catalog_find(m);
    if (id < 0)
        return GS_EINVAL;
    *out = id;
    return 0;
}

/* One row into one element; cols[i] is the index of wanted column i, or -1. */
typedef int (*row_fn)(struct reader *r, const struct csv_line *ln, const int *cols, void *elem,
                      struct gs_error *err);

/* Header by name, then every row through fn into a growing array (*out, malloc'd). The first
 * nrequired wanted columns must be present. On error *out stays NULL. */
static int parse_table(const char *name, const char *data, size_t len, const char *const *wanted,
                       int nwanted, int nrequired, size_t elem_size, row_fn fn, void **out,
                       struct gs_error *err)
{
    struct reader r = {.name = name, .data = data, .len = len};
    const char *p;
    size_t l;
    struct csv_line h, ln;
    char header[256] = "";
    for (int i = 0, o = 0; i < nrequired; i++)
        o += snprintf(header + o, sizeof(header) - (size_t)o, "%s%s", i ? "," : "", wanted[i]);
    *out = NULL;
    int rc = next_line(&r, &p, &l, err);
    if (rc <= 0)
        return rc < 0 ? rc
                      : gs_error_set(err, GS_EINVAL, "%s: empty file, expected a header '%s'", name,
                                     header);
    if (split(p, l, &h))
        return gs_error_set(err, GS_EINVAL, "%s:%d: malformed header", name, r.lineno);
    int cols[MAX_FIELDS];
    for (int i = 0; i < nwanted && i < MAX_FIELDS; i++) {
        cols[i] = find_col(&h, wanted[i]);
        if (cols[i] < 0 && i < nrequired)
            return gs_error_set(err, GS_EINVAL, "%s:%d: header must name %s", name, r.lineno,
                                header);
    }
    size_t cap = 256, n = 0;
    char *v = malloc(elem_size * cap);
    if (!v)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    while ((rc = next_line(&r, &p, &l, err)) > 0) {
        if (split(p, l, &ln)) {
            rc = gs_error_set(err, GS_EINVAL, "%s:%d: malformed CSV line", name, r.lineno);
            goto fail;
        }
        if (n == cap) {
            char *q = realloc(v, elem_size * cap * 2);
            if (!q) {
                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
                goto fail;
            }
            v = q;
            cap *= 2;
        }
        memset(v + n * elem_size, 0, elem_size);
        if ((rc = fn(&r, &ln, cols, v + n * elem_size, err)))
            goto fail;
        n++;
    }
    if (rc < 0)
        goto fail;
    if (n > INT32_MAX) {
        rc = gs_error_set(err, GS_EINVAL, "%s: too many rows", name);
        goto fail;
    }
    *out = v;
    return (int)n;
fail:
    free(v);
    return rc < 0 ? rc : GS_EINVAL;
}

static int get_name(struct reader *r, const struct csv_line *ln, int col, const char *what,
                    char *dst, struct gs_error *err)
{
    if (col >= ln->n || ln->l[col] == 0 || ln->l[col] >= GS_NAME_MAX)
        return gs_error_set(err, GS_EINVAL,
                            "%s:%d: column '%s': expected a name of 1..%d "
                            "characters",
                            r->name, r->lineno, what, GS_NAME_MAX - 1);
    memcpy(dst, ln->f[col], ln->l[col]);
    return 0;
}

enum { N_SN, N_CPU, N_MEM, N_GPU, N_MODEL };
static const char *const node_cols[] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};

static int node_row(struct reader *r, const struct csv_line *ln, const int *c, void *elem,
                    struct gs_error *err)
{
    struct gs_openb_node *nd = elem;
    int64_t g;
    int rc;
    if ((rc = get_name(r, ln, c[N_SN], "sn", nd->name, err)) ||
        (rc = get_int(r, ln, c[N_CPU], "cpu_milli", &nd->cpu_milli, err)) ||
        (rc = get_int(r, ln, c[N_MEM], "memory_mib", &nd->mem_mib, err)) ||
        (rc = get_int(r, ln, c[N_GPU], "gpu", &g, err)))
        return rc;
    if (g > GS_MAX_GPUS_NODE)
        return gs_error_set(err, GS_EINVAL, "%s:%d: column 'gpu': %lld GPUs, at most %d", r->name,
                            r->lineno, (long long)g, GS_MAX_GPUS_NODE);
    nd->gpus = (int)g;
    nd->model = -1;
    int cm = c[N_MODEL];
    if (g > 0 && (cm >= ln->n || parse_model(ln->f[cm], ln->l[cm], &nd->model)))
        return gs_error_set(err, GS_EINVAL,
                            "%s:%d: column 'model': unknown GPU model '%.*s' (expected a catalog "
                            "model such as T4, V100M16, A100-80GB)",
                            r->name, r->lineno,
                            cm < ln->n ? (int)(ln->l[cm] > 40 ? 40 : ln->l[cm]) : 0,
                            cm < ln->n ? ln->f[cm] : "");
    return 0;
}

int gs_openb_parse_nodes(const char *name, const char *data, size_t len, struct gs_openb_node **out,
                         struct gs_error *err)
{
    return parse_table(name, data, len, node_cols, 5, 5, sizeof(**out), node_row, (void **)out,
                       err);
}

enum { P_NAME, P_CPU, P_MEM, P_NG, P_GM, P_SPEC, P_QOS, P_CT, P_DT, P_ST };
static const char *const pod_cols[] = {
    "name",     "cpu_milli", "memory_mib",    "num_gpu",       "gpu_milli",
    "gpu_spec", "qos",       "creation_time", "deletion_time", "scheduled_time"};

static int pod_row(struct reader *r, const struct csv_line *ln, const int *c, void *elem,
                   struct gs_error *err)
{
    struct gs_openb_pod *pd = elem;
    int64_t ng, gm;
    int rc;
    if ((rc = get_name(r, ln, c[P_NAME], "name", pd->name, err)) ||
        (rc = get_int(r, ln, c[P_CPU], "cpu_milli", &pd->req.cpu_milli, err)) ||
        (rc = get_int(r, ln, c[P_MEM], "memory_mib", &pd->req.mem_mib, err)) ||
        (rc = get_int(r, ln, c[P_NG], "num_gpu", &ng, err)) ||
        (rc = get_int(r, ln, c[P_GM], "gpu_milli", &gm, err)))
        return rc;
    if (ng > GS_MAX_GPUS_NODE || gm > GS_MILLI || (ng > 0 && gm == 0) || (ng > 1 && gm < GS_MILLI))
        return gs_error_set(err, GS_EINVAL,
                            "%s:%d: num_gpu %lld with gpu_milli %lld: expected 0..%d GPUs and "
                            "1..1000 milli, a share below 1000 only with one GPU",
                            r->name, r->lineno, (long long)ng, (long long)gm, GS_MAX_GPUS_NODE);
    if (ng == 0) {
        pd->req.kind = GS_REQ_NONE;
    } else if (gm < GS_MILLI) {
        pd->req.kind = GS_REQ_FRACTION;
        pd->req.gpus = 1;
        pd->req.milli = (int16_t)gm;
    } else {
        pd->req.kind = GS_REQ_GPU;
        pd->req.gpus = (uint8_t)ng;
        pd->req.milli = GS_MILLI;
    }
    int cs = c[P_SPEC];
    if (cs >= 0 && cs < ln->n && ln->l[cs] > 0) {
        /* '|'-separated list of allowed models */
        const char *sp = ln->f[cs];
        size_t sl = ln->l[cs], st = 0;
        for (size_t i = 0; i <= sl; i++) {
            if (i < sl && sp[i] != '|')
                continue;
            int m;
            if (i > st && parse_model(sp + st, i - st, &m))
                return gs_error_set(err, GS_EINVAL,
                                    "%s:%d: column 'gpu_spec': unknown GPU model '%.*s'", r->name,
                                    r->lineno, (int)(i - st > 40 ? 40 : i - st), sp + st);
            if (i > st)
                pd->req.model_mask |= 1u << m;
            st = i + 1;
        }
    }
    int cq = c[P_QOS];
    if (cq >= 0 && cq < ln->n && ln->l[cq] < sizeof(pd->qos))
        memcpy(pd->qos, ln->f[cq], ln->l[cq]);
    int64_t *dst[3] = {&pd->creation, &pd->deletion, &pd->scheduled};
    for (int k = 0; k < 3; k++) {
        int col = c[P_CT + k];
        *dst[k] = -1;
        if (col < 0 || col >= ln->n || ln->l[col] == 0)
            continue;
        if ((rc = get_int(r, ln, col, pod_cols[P_CT + k], dst[k], err)))
            return rc;
    }
    return 0;
}

int gs_openb_parse_pods(const char *name, const char *data, size_t len, struct gs_openb_pod **out,
                        struct gs_error *err)
{
    return parse_table(name, data, len, pod_cols, 10, 5, sizeof(**out), pod_row, (void **)out, err);
}

int gs_openb_load_nodes(const char *path, struct gs_openb_node **out, struct gs_error *err)
{
    struct gs_buf b;
    gs_buf_init(&b, 0);
    int rc = gs_buf_read_file(&b, path, 0, err);
    if (rc == 0)
        rc = gs_openb_parse_nodes(path, b.data, b.len, out, err);
    gs_buf_release(&b);
    return rc;
}

int gs_openb_load_pods(const char *path, struct gs_openb_pod **out, struct gs_error *err)
{
    struct gs_buf b;
    gs_buf_init(&b, 0);
    int rc = gs_buf_read_file(&b, path, 0, err);
    if (rc == 0)
        rc = gs_openb_parse_pods(path, b.data, b.len, out, err);
    gs_buf_release(&b);
    return rc;
}

int gs_openb_write_pods(const struct gs_openb_pod *pods, int n, struct gs_buf *b)
{
    int rc = gs_buf_puts(b, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,"
                            "creation_time,deletion_time,scheduled_time\n");
    for (int i = 0; i < n && !rc; i++) {
        const struct gs_openb_pod *p = &pods[i];
        const struct gs_request *r = &p->req;
        int ng = r->kind == GS_REQ_NONE ? 0 : r->gpus;
        int gm = r->kind == GS_REQ_NONE ? 0 : r->milli;
        rc = gs_buf_printf(b, "%.*s,%lld,%lld,%d,%d,", GS_NAME_MAX, p->name,
                           (long long)r->cpu_milli, (long long)r->mem_mib, ng, gm);
        bool first = true;
        for (int m = 0; m < 32 && !rc; m++)
            if (r->model_mask & (1u << m)) {
                const struct gs_gpu_model *gm_ = gs_catalog_get(m);
                rc = gs_buf_printf(b, "%s%s", first ? "" : "|", gm_ ? gm_->name : "?");
                first = false;
            }
        if (!rc)
            rc = gs_buf_printf(b, ",%.*s", (int)sizeof(p->qos), p->qos);
        const int64_t t[3] = {p->creation, p->deletion, p->scheduled};
        for (int k = 0; k < 3 && !rc; k++)
            rc = t[k] >= 0 ? gs_buf_printf(b, ",%lld", (long long)t[k]) : gs_buf_puts(b, ",");
        if (!rc)
            rc = gs_buf_puts(b, "\n");
    }
    return rc;
}
