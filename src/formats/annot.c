/* annot.c - the reading our Node annotations share (see annot.h). */
#include "annot.h"

#include "../base/error.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs__annot_bad(struct gs_error *err, const char *name, const char *path, const char *what)
{
    return gs_error_set(err, GS_EINVAL, "%s annotation: %s: %s", name, path, what);
}

int gs__annot_known(const json_t *o, const char *name, const char *path, const char *const *keys,
                    const char *expect, struct gs_error *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        bool known = false;
        for (int k = 0; keys[k] && !known; k++)
            known = strcmp(key, keys[k]) == 0;
        if (known)
            continue;
        char p[96], what[160];
        snprintf(p, sizeof(p), "%s%s%.40s", path, *path ? "." : "", key);
        snprintf(what, sizeof(what), "unknown field (expected %s)", expect);
        return gs__annot_bad(err, name, p, what);
    }
    return 0;
}

int gs__annot_index(const json_t *g, const char *name, const char *path, int max, int *out,
                    struct gs_error *err)
{
    const json_t *i = json_object_get(g, "i");
    if (!json_is_integer(i) || json_integer_value(i) < 0 || json_integer_value(i) >= max) {
        char p[96];
        snprintf(p, sizeof(p), "%s.i", path);
        return gs_error_set(err, GS_EINVAL, "%s annotation: %s: expected a GPU index 0 to %d", name,
                            p, max - 1);
    }
    *out = (int)json_integer_value(i);
    return 0;
}

json_t *gs__annot_load(const char *name, const char *text, size_t len, size_t max, int version,
                       const char *const *keys, const char *expect, struct gs_error *err)
{
    if (len > max) {
        gs_error_set(err, GS_EINVAL, "%s annotation: %zu bytes, at most %zu", name, len, max);
        return NULL;
    }
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        gs_error_set(err, GS_EINVAL, "%s annotation: column %d: %s", name, je.column, je.text);
        return NULL;
    }
    char what[160];
    if (!json_is_object(o)) {
        snprintf(what, sizeof(what), "expected an object with %s", expect);
        gs__annot_bad(err, name, "(top)", what);
        json_decref(o);
        return NULL;
    }
    if (gs__annot_known(o, name, "", keys, expect, err)) {
        json_decref(o);
        return NULL;
    }
    const json_t *ver = json_object_get(o, "v");
    if (!json_is_integer(ver) || json_integer_value(ver) < 1 || json_integer_value(ver) > version) {
        if (version == 1)
            gs_error_set(err, GS_EINVAL, "%s annotation: v: expected version 1", name);
        else
            gs_error_set(err, GS_EINVAL, "%s annotation: v: expected version 1 to %d", name,
                         version);
        json_decref(o);
        return NULL;
    }
    return o;
}

static int cmp_index(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int gs__annot_gpus(const json_t *o, const char *name, void *items, size_t item_size, int max,
                   int *n,
                   int (*read_one)(const json_t *g, void *item, const char *path,
                                   struct gs_error *err),
                   struct gs_error *err)
{
    *n = 0;
    const json_t *gpus = json_object_get(o, "gpus");
    if (!json_is_array(gpus))
        return gs__annot_bad(err, name, "gpus", "expected a list");
    if (json_array_size(gpus) > (size_t)max)
        return gs_error_set(err, GS_EINVAL, "%s annotation: gpus: %zu GPUs, at most %d", name,
                            json_array_size(gpus), max);
    char *base = items;
    size_t k;
    const json_t *v;
    json_array_foreach(gpus, k, v)
    {
        char p[32];
        snprintf(p, sizeof(p), "gpus[%zu]", k);
        void *item = base + (size_t)*n * item_size;
        if (read_one(v, item, p, err))
            return GS_EINVAL;
        for (int j = 0; j < *n; j++)
            if (*(const int *)(base + (size_t)j * item_size) == *(const int *)item) {
                char q[40];
                snprintf(q, sizeof(q), "gpus[%zu].i", k);
                return gs__annot_bad(err, name, q, "GPU index given twice");
            }
        (*n)++;
    }
    qsort(items, (size_t)*n, item_size, cmp_index);
    return 0;
}
