/* arena.c - the region allocator of base/arena.h: a list of blocks, newest first, each
 * filled from the front; a pod's constraint data (core/kpod.c) lives in one. */
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct gs_arena_blk {
    struct gs_arena_blk *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
};

void gs_arena_init(struct gs_arena *a)
{
    a->head = NULL;
}

void gs_arena_release(struct gs_arena *a)
{
    struct gs_arena_blk *b = a->head;
    while (b) {
        struct gs_arena_blk *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
}

void *gs_arena_alloc(struct gs_arena *a, size_t n)
{
    if (n > SIZE_MAX - 16)
        return NULL;
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    struct gs_arena_blk *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 4096 ? n : 4096;
        b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *gs_arena_strdup(struct gs_arena *a, const char *s)
{
    size_t l = strlen(s);
    char *d = gs_arena_alloc(a, l + 1);
    if (d)
        memcpy(d, s, l + 1);
    return d;
}
