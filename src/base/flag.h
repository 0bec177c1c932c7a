/* flag.h - a flag one thread (or a signal handler) sets and others poll: stop requests,
 * leadership. An int read and written only through these, as relaxed atomics, so the reads
 * see a write without a lock and ThreadSanitizer knows it is meant. Header-only. */
#ifndef GS_FLAG_H
#define GS_FLAG_H

#include <stdbool.h>

static inline bool gs_flag_get(const volatile int *f)
{
    return __atomic_load_n(f, __ATOMIC_RELAXED) != 0;
}

static inline void gs_flag_set(volatile int *f, int v)
{
    __atomic_store_n(f, v, __ATOMIC_RELAXED);
}

#endif
