/* uitext.h - the scheduler's dashboard as text for a terminal (`gpusched top`): one frame
 * drawn from a /ui/state document (sched/endpoints.h lists its fields) — every node with its
 * GPUs, each MIG slice as "[index:profile@start holder]" (the holder's ns/name, or "free"),
 * the pods sharing other GPUs, the queues' used, deserved and borrowed shares with a bar, the
 * pending pods with the scheduler's reason and message, and the latest events.
 *
 * The document comes from the network: a missing or mistyped field is drawn as empty, never
 * trusted; every line is cut to the width. Pure: no I/O; thread-safe. */
#ifndef GS_SCHED_UITEXT_H
#define GS_SCHED_UITEXT_H

#include "../base/buf.h"

#include <jansson.h>

#include <stdbool.h>

struct gs_uitext_opts {
    int width;          /* columns; < 40: 40 */
    bool color;         /* ANSI colours and bold */
    const char *source; /* shown in the title (the server's URL); may be NULL */
    int max_events;     /* the latest events shown; <= 0: 10 */
    int max_pending;    /* pending pods shown; <= 0: 20 */
};

/* Append one frame (lines ending in "\n", no cursor movement) to out. Returns 0 or
 * GS_ENOMEM. */
int gs_uitext_render(const json_t *state, const struct gs_uitext_opts *o, struct gs_buf *out);

#endif
