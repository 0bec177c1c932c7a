/* buf.h - a growable byte buffer (always NUL-terminated), growable arrays and a bounded
 * file reader.
 *
 * struct gs_buf is embedded: gs_buf_init / gs_buf_release. Appends fail with GS_ENOMEM or
 * GS_ENOSPC past the optional max (0 = GS_BUF_DEFAULT_MAX). Not thread-safe per instance. */
#ifndef GS_BUF_H
#define GS_BUF_H

#include <stdarg.h>
#include <stddef.h>

#define GS_BUF_DEFAULT_MAX ((size_t)1 << 30)

struct gs_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max;
};

void gs_buf_init(struct gs_buf *b, size_t max);
void gs_buf_release(struct gs_buf *b);
void gs_buf_reset(struct gs_buf *b);
int gs_buf_append(struct gs_buf *b, const void *data, size_t len);
int gs_buf_puts(struct gs_buf *b, const char *s);
int gs_buf_printf(struct gs_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gs_buf_vprintf(struct gs_buf *b, const char *fmt, va_list ap);

/* Growable arrays: v (NULL at first) reallocated to twice *cap elements of elem bytes, or to
 * first when *cap is 0. Returns the new array and updates *cap, or NULL (v and *cap
 * untouched) when out of memory. */
void *gs_grow(void *v, int *cap, size_t elem, int first);

struct gs_error;
/* Read a whole file (at most max bytes, 0 = 64 MiB) into b. Errors: GS_EIO (with the path
 * and strerror), GS_ENOSPC when larger than max. */
int gs_buf_read_file(struct gs_buf *b, const char *path, size_t max, struct gs_error *err);

#endif
