/* hash.h - the one hash function family of gpusched (64-bit FNV-1a, and a combiner for
 * signatures) and a byte-string -> int32 hash map.
 *
 * Hash values are stable across runs and machines (no seed): the simulator's memo tables and
 * the engine's request signatures depend on them being deterministic.
 *
 * struct gs_strmap is embedded: zero it (or gs_strmap_init), gs_strmap_release frees it. It
 * copies its keys; a key is any byte string (embedded NULs too), looked up by length and
 * bytes. Open addressing with linear probing, at most three quarters full, tombstones on
 * delete (reclaimed when it grows). Not thread-safe per map. */
#ifndef GS_HASH_H
#define GS_HASH_H

#include <stddef.h>
#include <stdint.h>

#define GS_HASH_FNV_OFFSET 14695981039346656037ull
#define GS_HASH_FNV_PRIME  1099511628211ull

/* One FNV-1a step: fold v into h. Start from GS_HASH_FNV_OFFSET. */
static inline uint64_t gs_hash_step(uint64_t h, uint64_t v)
{
    return (h ^ v) * GS_HASH_FNV_PRIME;
}

/* FNV-1a of n bytes, and of a NUL-terminated string (without its NUL). */
uint64_t gs_hash_bytes(const void *p, size_t n);
uint64_t gs_hash_str(const char *s);

/* Fold v into a signature h with good avalanche (boost's hash_combine, then a multiply). */
uint64_t gs_hash_combine(uint64_t h, uint64_t v);

struct gs_strmap {
    char **k;
    uint32_t *klen;
    int32_t *v;
    uint32_t cap, used; /* used: live keys and tombstones */
};

void gs_strmap_init(struct gs_strmap *m);
void gs_strmap_release(struct gs_strmap *m);
/* The value of key (len bytes), or -1 when absent. */
int32_t gs_strmap_get(const struct gs_strmap *m, const void *key, uint32_t len);
/* Insert a key that is not present (the caller checks with get). Returns 0 or GS_ENOMEM
 * (the map unchanged). */
int gs_strmap_put(struct gs_strmap *m, const void *key, uint32_t len, int32_t v);
/* Remove key if present. */
void gs_strmap_del(struct gs_strmap *m, const void *key, uint32_t len);

#endif
