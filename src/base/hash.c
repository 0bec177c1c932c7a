/* hash.c - FNV-1a hashing and the byte-string map of base/hash.h, used by the engine's
 * constraint indexes, the scheduler's node index, the MIG planner's memo and the Prometheus
 * writer instead of private copies. */
#include "hash.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

uint64_t gs_hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = GS_HASH_FNV_OFFSET;
    for (size_t i = 0; i < n; i++)
        h = gs_hash_step(h, b[i]);
    return h;
}

uint64_t gs_hash_str(const char *s)
{
    uint64_t h = GS_HASH_FNV_OFFSET;
    for (; *s; s++)
        h = gs_hash_step(h, (unsigned char)*s);
    return h;
}

uint64_t gs_hash_combine(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

#define TOMB ((char *)1)

void gs_strmap_init(struct gs_strmap *m)
{
    memset(m, 0, sizeof(*m));
}

void gs_strmap_release(struct gs_strmap *m)
{
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->k[i] && m->k[i] != TOMB)
            free(m->k[i]);
    free(m->k);
    free(m->klen);
    free(m->v);
    memset(m, 0, sizeof(*m));
}

static uint32_t slot0(const struct gs_strmap *m, const void *key, uint32_t len)
{
    return (uint32_t)gs_hash_bytes(key, len) & (m->cap - 1);
}

int32_t gs_strmap_get(const struct gs_strmap *m, const void *key, uint32_t len)
{
    if (!m->cap)
        return -1;
    for (uint32_t i = slot0(m, key, len);; i = (i + 1) & (m->cap - 1)) {
        if (!m->k[i])
            return -1;
        if (m->k[i] != TOMB && m->klen[i] == len && memcmp(m->k[i], key, len) == 0)
            return m->v[i];
    }
}

static int grow(struct gs_strmap *m)
{
    uint32_t cap = m->cap ? m->cap * 2 : 16;
    struct gs_strmap n = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(uint32_t)),
                          calloc(cap, sizeof(int32_t)), cap, 0};
    if (!n.k || !n.klen || !n.v) {
        free(n.k);
        free(n.klen);
        free(n.v);
        return GS_ENOMEM;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->k[i] || m->k[i] == TOMB)
            continue;
        uint32_t j = slot0(&n, m->k[i], m->klen[i]);
        while (n.k[j])
            j = (j + 1) & (cap - 1);
        n.k[j] = m->k[i];
        n.klen[j] = m->klen[i];
        n.v[j] = m->v[i];
        n.used++;
    }
    free(m->k);
    free(m->klen);
    free(m->v);
    *m = n;
    return 0;
}

int gs_strmap_put(struct gs_strmap *m, const void *key, uint32_t len, int32_t v)
{
    if ((m->used + 1) * 4 >= m->cap * 3 && grow(m))
        return GS_ENOMEM;
    char *k = malloc(len ? len : 1);
    if (!k)
        return GS_ENOMEM;
    memcpy(k, key, len);
    uint32_t i = slot0(m, key, len);
    while (m->k[i] && m->k[i] != TOMB)
        i = (i + 1) & (m->cap - 1);
    if (!m->k[i])
        m->used++;
    m->k[i] = k;
    m->klen[i] = len;
    m->v[i] = v;
    return 0;
}

void gs_strmap_del(struct gs_strmap *m, const void *key, uint32_t len)
{
    if (!m->cap)
        return;
    for (uint32_t i = slot0(m, key, len);; i = (i + 1) & (m->cap - 1)) {
        if (!m->k[i])
            return;
        if (m->k[i] != TOMB && m->klen[i] == len && memcmp(m->k[i], key, len) == 0) {
            free(m->k[i]);
            m->k[i] = TOMB;
            return;
        }
    }
}
