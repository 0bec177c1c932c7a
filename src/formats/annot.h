/* annot.h - what gpusched's own Node annotations (the agent's inventory, inventory.h; the
 * scheduler's desired MIG layout, migdesired.h) share when read: a bounded JSON object with a
 * version and known fields only, and a "gpus" list of per-GPU entries keyed by physical index
 * (each index once, sorted). Errors read "<annotation> annotation: <path>: <what>". Pure;
 * thread-safe. Internal to src/formats. */
#ifndef GS_FORMATS_ANNOT_H
#define GS_FORMATS_ANNOT_H

#include <jansson.h>

#include <stddef.h>

struct gs_error;

/* GS_EINVAL with "<name> annotation: <path>: <what>". */
int gs__annot_bad(struct gs_error *err, const char *name, const char *path, const char *what);

/* Refuse a field of o that is not in keys (NULL-terminated): "<path>.<key>: unknown field
 * (expected <expect>)", "<key>: ..." when path is "" (the top). Returns 0 or GS_EINVAL. */
int gs__annot_known(const json_t *o, const char *name, const char *path, const char *const *keys,
                    const char *expect, struct gs_error *err);

/* An entry's "i", a GPU index 0..max-1, into *out. Returns 0 or GS_EINVAL ("<path>.i: expected
 * a GPU index 0 to <max-1>"). */
int gs__annot_index(const json_t *g, const char *name, const char *path, int max, int *out,
                    struct gs_error *err);

/* Load text (len bytes, at most max) as an object of version 1 to `version` whose fields are all in
 * keys (NULL-terminated; expect lists them for the message). Returns a new reference, or NULL
 * with err set. */
json_t *gs__annot_load(const char *name, const char *text, size_t len, size_t max, int version,
                       const char *const *keys, const char *expect, struct gs_error *err);

/* Read the "gpus" list of o into items (n entries of item_size bytes, each beginning with its
 * int physical index): at most max entries, read_one(entry, item, "gpus[k]", err) for each, an
 * index given twice refused, sorted by index. Returns 0 with *n set, or GS_EINVAL. */
int gs__annot_gpus(const json_t *o, const char *name, void *items, size_t item_size, int max,
                   int *n,
                   int (*read_one)(const json_t *g, void *item, const char *path,
                                   struct gs_error *err),
                   struct gs_error *err);

#endif
