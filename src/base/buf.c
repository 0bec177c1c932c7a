/* buf.c - growable, NUL-terminated byte buffer used by parsers, reports and the CLI. */
#include "buf.h"

#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

void gs_buf_init(struct gs_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max ? max : GS_BUF_DEFAULT_MAX;
}

void gs_buf_release(struct gs_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void gs_buf_reset(struct gs_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int grow(struct gs_buf *b, size_t need)
{
    if (need + 1 > b->max)
        return GS_ENOSPC;
    if (need + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need + 1)
        cap *= 2;
    if (cap > b->max)
        cap = b->max;
    char *p = realloc(b->data, cap);
    if (!p)
        return GS_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int gs_buf_append(struct gs_buf *b, const void *data, size_t len)
{
    int rc = grow(b, b->len + len);
    if (rc)
        return rc;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int gs_buf_puts(struct gs_buf *b, const char *s)
{
    return gs_buf_append(b, s, strlen(s));
}

int gs_buf_vprintf(struct gs_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return GS_EINTERNAL;
    int rc = grow(b, b->len + (size_t)n);
    if (rc)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int gs_buf_printf(struct gs_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = gs_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int gs_buf_read_file(struct gs_buf *b, const char *path, size_t max, struct gs_error *err)
{
    if (!max)
        max = (size_t)64 << 20;
    FILE *f = fopen(path, "rb");
    if (!f)
        return gs_error_set(err, GS_EIO, "cannot open '%s': %s", path, strerror(errno));
    int rc = 0;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (b->len + n > max) {
            rc = gs_error_set(err, GS_ENOSPC, "'%s' is larger than %zu bytes", path, max);
            goto out;
        }
        rc = gs_buf_append(b, chunk, n);
        if (rc) {
            rc = gs_error_set(err, rc, "reading '%s': %s", path, gs_error_name(rc));
            goto out;
        }
    }
    if (ferror(f))
        rc = gs_error_set(err, GS_EIO, "reading '%s': %s", path, strerror(errno));
    if (!b->data)
        rc = rc ? rc : gs_buf_append(b, "", 0);
out:
    fclose(f);
    return rc;
}

void *gs_grow(void *v, int *cap, size_t elem, int first)
{
    if (*cap > INT_MAX / 2)
        return NULL;
    int n = *cap ? *cap * 2 : first;
    void *g = realloc(v, elem * (size_t)n);
    if (g)
        *cap = n;
    return g;
}
