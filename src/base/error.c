/* error.c - the error value every fallible gpusched function fills: a code and a message
 * that grows context as it travels up the call chain. */
#include "error.h"

#include <stdio.h>
#include <string.h>

void gs_error_init(struct gs_error *err)
{
    if (!err)
        return;
    err->code = GS_OK;
    err->msg[0] = '\0';
}

int gs_error_set(struct gs_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

int gs_error_prefix(struct gs_error *err, const char *fmt, ...)
{
    if (!err)
        return GS_EINTERNAL;
    char ctx[GS_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof(ctx), fmt, ap);
    va_end(ap);
    char old[GS_ERROR_MSG_MAX];
    memcpy(old, err->msg, sizeof(old));
    snprintf(err->msg, sizeof(err->msg), "%s: %s", ctx, old);
    return err->code;
}

const char *gs_error_name(int code)
{
    switch (code) {
    case GS_OK:
        return "ok";
    case GS_EINVAL:
        return "invalid input";
    case GS_ENOMEM:
        return "out of memory";
    case GS_EIO:
        return "i/o error";
    case GS_ENOTFOUND:
        return "not found";
    case GS_ENOSPC:
        return "limit reached";
    case GS_ENOFIT:
        return "does not fit";
    default:
        return "internal error";
    }
}
