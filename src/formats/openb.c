/* openb.c - CSV reader for the openb trace's node and pod lists; sim/openb.c builds the
 * simulated cluster and the pod stream from what this returns. */
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

int gs_openb_parse_nodes(const char *name, const char *data, size_t len, struct gs_openb_node **out,
                         struct gs_error *err)
{
    struct reader r = {.name = name, .data = data, .len = len};
    const char *p;
    size_t l;
    struct csv_line h, ln;
    *out = NULL;
    int rc = next_line(&r, &p, &l, err);
    if (rc <= 0)
        return rc < 0 ? rc
                      : gs_error_set(err, GS_EINVAL,
                                     "%s: empty file, expected a header "
                                     "'sn,cpu_milli,memory_mib,gpu,model'",
                                     name);
    if (split(p, l, &h))
        return gs_error_set(err, GS_EINVAL, "%s:%d: malformed header", name, r.lineno);
    int c_sn = find_col(&h, "sn"), c_cpu = find_col(&h, "cpu_milli"),
        c_mem = find_col(&h, "memory_mib"), c_gpu = find_col(&h, "gpu"),
        c_model = find_col(&h, "model");
    if (c_sn < 0 || c_cpu < 0 || c_mem < 0 || c_gpu < 0 || c_model < 0)
        return gs_error_set(err, GS_EINVAL,
                            "%s:%d: header must name sn, cpu_milli, memory_mib, gpu and model",
                            name, r.lineno);
    int cap = 256, n = 0;
    struct gs_openb_node *v = malloc(sizeof(*v) * (size_t)cap);
    if (!v)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    while ((rc = next_line(&r, &p, &l, err)) > 0) {
        if (split(p, l, &ln)) {
            rc = gs_error_set(err, GS_EINVAL, "%s:%d: malformed CSV line", name, r.lineno);
            goto fail;
        }
        if (n == cap) {
            struct gs_openb_node *q = realloc(v, sizeof(*v) * (size_t)cap * 2);
            if (!q) {
                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
                goto fail;
            }
            v = q;
            cap *= 2;
        }
        struct gs_openb_node *nd = &v[n];
        memset(nd, 0, sizeof(*nd));
        if (c_sn >= ln.n || ln.l[c_sn] == 0 || ln.l[c_sn] >= GS_NAME_MAX) {
            rc = gs_error_set(err, GS_EINVAL, "%s:%d: column 'sn': expected a node name", name,
                              r.lineno);
            goto fail;
        }
        memcpy(nd->name, ln.f[c_sn], ln.l[c_sn]);
        int64_t g;
        if ((rc = get_int(&r, &ln, c_cpu, "cpu_milli", &nd->cpu_milli, err)) ||
            (rc = get_int(&r, &ln, c_mem, "memory_mib", &nd->mem_mib, err)) ||
            (rc = get_int(&r, &ln, c_gpu, "gpu", &g, err)))
            goto fail;
        if (g > GS_MAX_GPUS_NODE) {
            rc = gs_error_set(err, GS_EINVAL, "%s:%d: column 'gpu': %lld GPUs, at most %d", name,
                              r.lineno, (long long)g, GS_MAX_GPUS_NODE);
            goto fail;
        }
        nd->gpus = (int)g;
        nd->model = -1;
        if (g > 0) {
            if (c_model >= ln.n || parse_model(ln.f[c_model], ln.l[c_model], &nd->model)) {
                rc = gs_error_set(err, GS_EINVAL,
                                  "%s:%d: column 'model': unknown GPU model '%.*s' (expected "
                                  "a catalog model such as T4, V100M16, A100-80GB)",
                                  name, r.lineno,
                                  c_model < ln.n ? (int)(ln.l[c_model] > 40 ? 40 : ln.l[c_model])
                                                 : 0,
                                  c_model < ln.n ? ln.f[c_model] : "");
                goto fail;
            }
        }
        n++;
    }
    if (rc < 0)
        goto fail;
    *out = v;
    return n;
fail:
    free(v);
    return rc < 0 ? rc : GS_EINVAL;
}

int gs_openb_parse_pods(const char *name, const char *data, size_t len, struct gs_openb_pod **out,
                        struct gs_error *err)
{
    struct reader r = {.name = name, .data = data, .len = len};
    const char *p;
    size_t l;
    struct csv_line h, ln;
    *out = NULL;
    int rc = next_line(&r, &p, &l, err);
    if (rc <= 0)
        return rc < 0 ? rc
                      : gs_error_set(err, GS_EINVAL,
                                     "%s: empty file, expected a header "
                                     "'name,cpu_milli,memory_mib,num_gpu,gpu_milli,...'",
                                     name);
    if (split(p, l, &h))
        return gs_error_set(err, GS_EINVAL, "%s:%d: malformed header", name, r.lineno);
    int c_name = find_col(&h, "name"), c_cpu = find_col(&h, "cpu_milli"),
        c_mem = find_col(&h, "memory_mib"), c_ng = find_col(&h, "num_gpu"),
        c_gm = find_col(&h, "gpu_milli"), c_spec = find_col(&h, "gpu_spec"),
        c_qos = find_col(&h, "qos"), c_ct = find_col(&h, "creation_time"),
        c_dt = find_col(&h, "deletion_time"), c_st = find_col(&h, "scheduled_time");
    if (c_name < 0 || c_cpu < 0 || c_mem < 0 || c_ng < 0 || c_gm < 0)
        return gs_error_set(
            err, GS_EINVAL,
            "%s:%d: header must name name, cpu_milli, memory_mib, num_gpu and gpu_milli", name,
            r.lineno);
    int cap = 1024, n = 0;
    struct gs_openb_pod *v = malloc(sizeof(*v) * (size_t)cap);
    if (!v)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    while ((rc = next_line(&r, &p, &l, err)) > 0) {
        if (split(p, l, &ln)) {
            rc = gs_error_set(err, GS_EINVAL, "%s:%d: malformed CSV line", name, r.lineno);
            goto fail;
        }
        if (n == cap) {
            struct gs_openb_pod *q = realloc(v, sizeof(*v) * (size_t)cap * 2);
            if (!q) {
                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
                goto fail;
            }
            v = q;
            cap *= 2;
        }
        struct gs_openb_pod *pd = &v[n];
        memset(pd, 0, sizeof(*pd));
        if (c_name >= ln.n || ln.l[c_name] == 0 || ln.l[c_name] >= GS_NAME_MAX) {
            rc = gs_error_set(err, GS_EINVAL, "%s:%d: column 'name': expected a pod name", name,
                              r.lineno);
            goto fail;
        }
        memcpy(pd->name, ln.f[c_name], ln.l[c_name]);
        int64_t ng, gm;
        if ((rc = get_int(&r, &ln, c_cpu, "cpu_milli", &pd->req.cpu_milli, err)) ||
            (rc = get_int(&r, &ln, c_mem, "memory_mib", &pd->req.mem_mib, err)) ||
            (rc = get_int(&r, &ln, c_ng, "num_gpu", &ng, err)) ||
            (rc = get_int(&r, &ln, c_gm, "gpu_milli", &gm, err)))
            goto fail;
        if (ng > GS_MAX_GPUS_NODE || gm > GS_MILLI || (ng > 0 && gm == 0) ||
            (ng > 1 && gm < GS_MILLI)) {
            rc = gs_error_set(err, GS_EINVAL,
                              "%s:%d: num_gpu %lld with gpu_milli %lld: expected 0..%d GPUs and "
                              "1..1000 milli, a share below 1000 only with one GPU",
                              name, r.lineno, (long long)ng, (long long)gm, GS_MAX_GPUS_NODE);
            goto fail;
        }
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
        if (c_spec >= 0 && c_spec < ln.n && ln.l[c_spec] > 0) {
            const char *s = ln.f[c_spec];
            size_t sl = ln.l[c_spec], st = 0;
            for (size_t i = 0; i <= sl; i++) {
                if (i < sl && s[i] != '|')
                    continue;
                if (i > st) {
                    int m;
                    if (parse_model(s + st, i - st, &m)) {
                        rc = gs_error_set(err, GS_EINVAL,
                                          "%s:%d: column 'gpu_spec': unknown GPU model '%.*s'",
                                          name, r.lineno, (int)(i - st > 40 ? 40 : i - st), s + st);
                        goto fail;
                    }
                    pd->req.model_mask |= 1u << m;
                }
                st = i + 1;
            }
        }
        if (c_qos >= 0 && c_qos < ln.n && ln.l[c_qos] < sizeof(pd->qos))
            memcpy(pd->qos, ln.f[c_qos], ln.l[c_qos]);
        pd->creation = pd->deletion = pd->scheduled = -1;
        int cols[3] = {c_ct, c_dt, c_st};
        int64_t *dst[3] = {&pd->creation, &pd->deletion, &pd->scheduled};
        const char *cn[3] = {"creation_time", "deletion_time", "scheduled_time"};
        for (int k = 0; k < 3; k++) {
            if (cols[k] < 0 || cols[k] >= ln.n || ln.l[cols[k]] == 0)
                continue;
            if ((rc = get_int(&r, &ln, cols[k], cn[k], dst[k], err)))
                goto fail;
        }
        n++;
    }
    if (rc < 0)
        goto fail;
    *out = v;
    return n;
fail:
    free(v);
    return rc < 0 ? rc : GS_EINVAL;
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
