/* labels.h - a set of Kubernetes labels (key -> value), sized by the object.
 *
 * Real Node objects carry dozens of labels (NFD's feature.node.kubernetes.io/..., GFD's
 * nvidia.com/..., the GPU Operator's nvidia.com/gpu.deploy.<x>, cloud topology), so a set keeps
 * every label it is given: no count cap, keys up to GS_LABELS_KEY_MAX and values up to
 * GS_LABELS_VAL_MAX bytes (Kubernetes allows a 253-byte prefix, '/', a 63-byte name, and
 * 63-byte values; longer input is refused, never cut).
 *
 * Layout: one heap buffer holding n (key offset, value offset) pairs sorted by key, then the
 * NUL-terminated strings, so a lookup is a binary search and a copy is one allocation.
 * The struct owns its buffer: gs_labels_init / gs_labels_release; copying the struct by value
 * shares the buffer (use gs_labels_copy for a second owner, gs_labels_move to hand it over).
 * Not thread-safe per instance; reads of a set nobody writes are. */
#ifndef GS_LABELS_H
#define GS_LABELS_H

#include <stdbool.h>
#include <stdint.h>

#define GS_LABELS_KEY_MAX 317 /* 253 (prefix) + 1 + 63 */
#define GS_LABELS_VAL_MAX 255

struct gs_labels {
    char *buf;     /* NULL when empty */
    uint32_t n;    /* labels */
    uint32_t size; /* bytes used in buf */
};

/* One label to build a set from (the strings stay the caller's). */
struct gs_label_ref {
    const char *key;
    const char *val;
};

void gs_labels_init(struct gs_labels *l);
void gs_labels_release(struct gs_labels *l);
/* dst (initialised; its old content is released) becomes an independent copy of src.
 * Returns 0 or GS_ENOMEM (dst then empty). */
int gs_labels_copy(struct gs_labels *dst, const struct gs_labels *src);
/* dst (initialised; released first) takes src's buffer; src is left empty. */
void gs_labels_move(struct gs_labels *dst, struct gs_labels *src);
/* Replace l (initialised) with the n labels given. A key given twice keeps the last value.
 * Returns 0, GS_EINVAL (an empty or too long key, a too long value; l unchanged) or
 * GS_ENOMEM (l unchanged). */
int gs_labels_build(struct gs_labels *l, const struct gs_label_ref *kv, uint32_t n);
/* Set (or replace) one label. Returns 0, GS_EINVAL or GS_ENOMEM (l unchanged). */
int gs_labels_set(struct gs_labels *l, const char *key, const char *val);
/* The value of key, or NULL. */
const char *gs_labels_get(const struct gs_labels *l, const char *key);
/* The i-th label in key order (i < l->n). */
const char *gs_labels_key(const struct gs_labels *l, uint32_t i);
const char *gs_labels_val(const struct gs_labels *l, uint32_t i);
/* True when both hold the same labels. */
bool gs_labels_equal(const struct gs_labels *a, const struct gs_labels *b);

#endif
