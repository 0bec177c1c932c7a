/* kports.h - the host ports in use on one node, internal to core's constraints: kstate.c
 * counts the placed pods' ports in, kprep.c asks whether an incoming pod's ports conflict
 * (upstream NodePorts). A port in use borrows its address from the placed pod (kstate.h:
 * the state borrows every pod it counts). Embedded, zeroed to start; not thread-safe while
 * being updated. */
#ifndef GS_KPORTS_H
#define GS_KPORTS_H

#include "kpod.h"

#include <stdbool.h>
#include <stdint.h>

struct gs__kport_use {
    const char *ip;
    int32_t port;
    uint8_t proto;
    int32_t refs; /* placed pods asking for it */
};

struct gs__kports {
    struct gs__kport_use *e;
    int n, cap;
};

void gs__kports_release(struct gs__kports *np);
/* Count port p d times more (d < 0: fewer; an entry at 0 goes). Returns 0 or GS_ENOMEM (then
 * unchanged; never for d <= 0). */
int gs__kports_add(struct gs__kports *np, const struct gs_kport *p, int d);
/* upstream HostPortInfo.CheckConflict: p conflicts with a port in use on the node. */
bool gs__kports_conflict(const struct gs__kports *np, const struct gs_kport *p);

#endif
