/* arena.h - a region allocator: many small allocations freed in one go (a pod's constraint
 * data, a placed term), as h2o's memory pools and git's mem-pool.h do.
 *
 * struct gs_arena is embedded: zero it (or gs_arena_init); gs_arena_release frees every
 * block. Allocations are zeroed and aligned for any type; they live until the release.
 * Blocks are 4 KiB, or one block of exactly the size asked for a larger allocation. Not
 * thread-safe per arena. */
#ifndef GS_ARENA_H
#define GS_ARENA_H

#include <stddef.h>

struct gs_arena_blk;

struct gs_arena {
    struct gs_arena_blk *head;
};

void gs_arena_init(struct gs_arena *a);
void gs_arena_release(struct gs_arena *a);
/* n zeroed bytes (n == 0 counts as 16), or NULL when out of memory. */
void *gs_arena_alloc(struct gs_arena *a, size_t n);
/* A copy of s in the arena, or NULL when out of memory. */
char *gs_arena_strdup(struct gs_arena *a, const char *s);

#endif
