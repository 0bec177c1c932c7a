/* labels.c - label sets sized by the object: nodes in the engine's cluster (core/cluster.c)
 * and the Kubernetes objects the readers build (formats/kubeobj.c) keep every label in one
 * sorted buffer, so selectors and affinity terms can match any label a node carries. */
#include "labels.h"

#include "../base/error.h"

#include <stdlib.h>
#include <string.h>

struct pair {
    uint32_t key, val;
};

static const struct pair *pairs(const struct gs_labels *l)
{
    return (const struct pair *)(const void *)l->buf;
}

void gs_labels_init(struct gs_labels *l)
{
    memset(l, 0, sizeof(*l));
}

void gs_labels_release(struct gs_labels *l)
{
    free(l->buf);
    memset(l, 0, sizeof(*l));
}

int gs_labels_copy(struct gs_labels *dst, const struct gs_labels *src)
{
    if (dst == src)
        return 0;
    gs_labels_release(dst);
    if (!src->n)
        return 0;
    char *b = malloc(src->size);
    if (!b)
        return GS_ENOMEM;
    memcpy(b, src->buf, src->size);
    dst->buf = b;
    dst->n = src->n;
    dst->size = src->size;
    return 0;
}

void gs_labels_move(struct gs_labels *dst, struct gs_labels *src)
{
    if (dst == src)
        return;
    gs_labels_release(dst);
    *dst = *src;
    memset(src, 0, sizeof(*src));
}

struct entry {
    const char *key, *val;
    uint32_t pos; /* input position: a key given twice keeps its last value */
};

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->pos < y->pos ? 1 : -1; /* later input first */
}

int gs_labels_build(struct gs_labels *l, const struct gs_label_ref *kv, uint32_t n)
{
    if (n > UINT32_MAX / 4 / sizeof(struct pair))
        return GS_EINVAL;
    uint64_t size = (uint64_t)n * sizeof(struct pair);
    for (uint32_t i = 0; i < n; i++) {
        size_t kl = strnlen(kv[i].key, GS_LABELS_KEY_MAX + 1);
        size_t vl = strnlen(kv[i].val, GS_LABELS_VAL_MAX + 1);
        if (kl == 0 || kl > GS_LABELS_KEY_MAX || vl > GS_LABELS_VAL_MAX)
            return GS_EINVAL;
        size += kl + vl + 2;
    }
    if (size > UINT32_MAX / 2)
        return GS_EINVAL;
    if (n == 0) {
        gs_labels_release(l);
        return 0;
    }
    struct entry *idx = malloc(sizeof(*idx) * n);
    char *b = malloc((size_t)size);
    if (!idx || !b) {
        free(idx);
        free(b);
        return GS_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        idx[i] = (struct entry){kv[i].key, kv[i].val, i};
    qsort(idx, n, sizeof(*idx), cmp_entry);
    struct pair *pv = (struct pair *)(void *)b;
    uint32_t m = 0, off = n * (uint32_t)sizeof(struct pair);
    for (uint32_t i = 0; i < n; i++) {
        if (m > 0 && strcmp(b + pv[m - 1].key, idx[i].key) == 0)
            continue;
        size_t kl = strlen(idx[i].key), vl = strlen(idx[i].val);
        pv[m].key = off;
        memcpy(b + off, idx[i].key, kl + 1);
        off += (uint32_t)kl + 1;
        pv[m].val = off;
        memcpy(b + off, idx[i].val, vl + 1);
        off += (uint32_t)vl + 1;
        m++;
    }
    free(idx);
    if (m < n) {
        /* duplicates dropped: move the strings down so the pair table is exactly m long */
        uint32_t shift = (n - m) * (uint32_t)sizeof(struct pair);
        uint32_t table = m * (uint32_t)sizeof(struct pair);
        memmove(b + table, b + table + shift, off - table - shift);
        for (uint32_t i = 0; i < m; i++) {
            pv[i].key -= shift;
            pv[i].val -= shift;
        }
        off -= shift;
    }
    free(l->buf);
    l->buf = b;
    l->n = m;
    l->size = off;
    return 0;
}

const char *gs_labels_key(const struct gs_labels *l, uint32_t i)
{
    return l->buf + pairs(l)[i].key;
}

const char *gs_labels_val(const struct gs_labels *l, uint32_t i)
{
    return l->buf + pairs(l)[i].val;
}

const char *gs_labels_get(const struct gs_labels *l, const char *key)
{
    uint32_t lo = 0, hi = l->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(gs_labels_key(l, mid), key);
        if (c == 0)
            return gs_labels_val(l, mid);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int gs_labels_set(struct gs_labels *l, const char *key, const char *val)
{
    struct gs_label_ref *kv = malloc(sizeof(*kv) * ((size_t)l->n + 1));
    if (!kv)
        return GS_ENOMEM;
    for (uint32_t i = 0; i < l->n; i++) {
        kv[i].key = gs_labels_key(l, i);
        kv[i].val = gs_labels_val(l, i);
    }
    kv[l->n].key = key;
    kv[l->n].val = val;
    /* build into a fresh set: kv points into l's buffer */
    struct gs_labels fresh;
    gs_labels_init(&fresh);
    int rc = gs_labels_build(&fresh, kv, l->n + 1);
    free(kv);
    if (rc == 0)
        gs_labels_move(l, &fresh);
    return rc;
}

bool gs_labels_equal(const struct gs_labels *a, const struct gs_labels *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (strcmp(gs_labels_key(a, i), gs_labels_key(b, i)) ||
            strcmp(gs_labels_val(a, i), gs_labels_val(b, i)))
            return false;
    return true;
}
