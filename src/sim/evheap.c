/* evheap.c - the simulators' event queue (sim/evheap.h): a binary min-heap in a flat array,
 * by (time, sequence). sim/scenario.c and sim/dra.c drive their clocks with it. */
#include "evheap.h"

#include "../base/buf.h"
#include "../base/error.h"

#include <stdlib.h>

void gs_evheap_init(struct gs_evheap *h)
{
    h->v = NULL;
    h->n = h->cap = 0;
    h->seq = 0;
}

void gs_evheap_release(struct gs_evheap *h)
{
    free(h->v);
    gs_evheap_init(h);
}

static bool ev_less(const struct gs_event *a, const struct gs_event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void swap(struct gs_event *a, struct gs_event *b)
{
    struct gs_event t = *a;
    *a = *b;
    *b = t;
}

int gs_evheap_push(struct gs_evheap *h, double t, int type, int id, uint32_t version)
{
    if (h->n == h->cap) {
        void *v = gs_grow(h->v, &h->cap, sizeof(*h->v), 1024);
        if (!v)
            return GS_ENOMEM;
        h->v = v;
    }
    int i = h->n++;
    h->v[i] =
        (struct gs_event){.t = t, .seq = h->seq++, .type = type, .id = id, .version = version};
    while (i > 0 && ev_less(&h->v[i], &h->v[(i - 1) / 2])) {
        swap(&h->v[i], &h->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    return 0;
}

struct gs_event gs_evheap_pop(struct gs_evheap *h)
{
    struct gs_event top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && ev_less(&h->v[l], &h->v[m]))
            m = l;
        if (r < h->n && ev_less(&h->v[r], &h->v[m]))
            m = r;
        if (m == i)
            break;
        swap(&h->v[i], &h->v[m]);
        i = m;
    }
    return top;
}

const struct gs_event *gs_evheap_peek(const struct gs_evheap *h)
{
    return h->n > 0 ? &h->v[0] : NULL;
}
