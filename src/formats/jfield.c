/* jfield.c - field readers shared by the object readers (formats/jfield.h). */
#include "jfield.h"

#include "../base/error.h"

#include <string.h>

const char *gs_jstr(const json_t *o, const char *key)
{
    const json_t *v = o ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int gs_jname(char *dst, size_t n, const char *src, const char *who, const char *path,
             struct gs_error *err)
{
    if (!src || !src[0])
        return gs_error_set(err, GS_EINVAL, "%s: %s is required", who, path);
    if (strlen(src) >= n)
        return gs_error_set(err, GS_EINVAL, "%s: %s: longer than %zu characters", who, path, n - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}
