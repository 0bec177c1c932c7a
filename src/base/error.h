/* error.h - the one error type of gpusched.
 *
 * A fallible function returns int: 0 (or a count) on success, a negative GS_E* code on
 * failure. Where context matters it also fills a struct gs_error with a message; callers
 * add context as the error travels up with gs_error_prefix ("loading 'x.yaml': line 3: ...").
 * A struct gs_error is a plain value: no heap, no release needed. Not thread-safe per
 * instance (each thread owns its own). */
#ifndef GS_ERROR_H
#define GS_ERROR_H

#include <stdarg.h>
#include <stddef.h>

enum {
    GS_OK = 0,
    GS_EINVAL = -1,    /* bad input: a user's file, flag or request (CLI exit 2) */
    GS_ENOMEM = -2,    /* allocation failed */
    GS_EIO = -3,       /* file or socket failure (CLI exit 1) */
    GS_ENOTFOUND = -4, /* a named thing does not exist */
    GS_ENOSPC = -5,    /* a fixed bound was reached */
    GS_ENOFIT = -6,    /* a request does not fit (placement, MIG layout) */
    GS_EINTERNAL = -7  /* a broken invariant: a bug */
};

#define GS_ERROR_MSG_MAX 1024

struct gs_error {
    int code;
    char msg[GS_ERROR_MSG_MAX];
};

/* Reset to "no error". */
void gs_error_init(struct gs_error *err);

/* Set code and message (printf-style); returns code so callers can `return gs_error_set(...)`.
 * err may be NULL, in which case only the code is returned. */
int gs_error_set(struct gs_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepend context: "<context>: <previous message>". Keeps the code. Returns the code. */
int gs_error_prefix(struct gs_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Short name of a code ("invalid input", ...). Never NULL. */
const char *gs_error_name(int code);

#endif
