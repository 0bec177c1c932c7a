/* evheap.h - the simulators' event queue: a binary min-heap of events in one flat array,
 * ordered by time, then by the sequence number the heap gives each event as it is pushed.
 *
 * Invariants: (t, seq) is a strict total order (seq is unique per heap), so the order events
 * come out in depends only on their times and the order they went in, never on the heap's
 * shape: a deterministic simulation (STYLE.md rule 21, libuv's timer start_id). Events are
 * values (no allocation per event; the array grows by doubling): a simulator that changes
 * its mind about an event pushes a new one and ignores the stale one when it comes out (a
 * version number in the event tells them apart).
 *
 * struct gs_evheap is embedded: gs_evheap_init / gs_evheap_release. Not thread-safe per
 * instance (each run owns its own). */
#ifndef GS_SIM_EVHEAP_H
#define GS_SIM_EVHEAP_H

#include <stdbool.h>
#include <stdint.h>

struct gs_event {
    double t;
    uint64_t seq;     /* set by gs_evheap_push */
    int type;         /* the simulator's own */
    int id;           /* what it is about (a pod, a class, a GPU, a sample) */
    uint32_t version; /* the simulator's, to recognise stale events */
};

struct gs_evheap {
    struct gs_event *v;
    int n, cap;
    uint64_t seq; /* the next event's */
};

void gs_evheap_init(struct gs_evheap *h);
void gs_evheap_release(struct gs_evheap *h);
/* Add an event at time t. Returns 0 or GS_ENOMEM (the heap is unchanged). */
int gs_evheap_push(struct gs_evheap *h, double t, int type, int id, uint32_t version);
/* Take the earliest event (ties: the first pushed). The heap must not be empty. */
struct gs_event gs_evheap_pop(struct gs_evheap *h);
/* The earliest event without taking it, NULL when empty. */
const struct gs_event *gs_evheap_peek(const struct gs_evheap *h);

static inline int gs_evheap_len(const struct gs_evheap *h)
{
    return h->n;
}

#endif
