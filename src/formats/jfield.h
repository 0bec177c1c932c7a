/* jfield.h - the two field readers every object reader of formats/ uses on the API server's
 * JSON: a string field, and a required name copied into a bounded buffer. */
#ifndef GS_JFIELD_H
#define GS_JFIELD_H

#include <jansson.h>

#include <stddef.h>

struct gs_error;

/* The string value of o's field key, or NULL (o NULL, the field absent or not a string). */
const char *gs_jstr(const json_t *o, const char *key);
/* src (a required field at path of who) into dst[0..n): GS_EINVAL naming who and path when
 * it is missing, empty or n characters or longer; else 0. */
int gs_jname(char *dst, size_t n, const char *src, const char *who, const char *path,
             struct gs_error *err);

#endif
