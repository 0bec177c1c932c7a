/* kports.c - host ports in use per node (kports.h): a short list per node, as a node holds
 * few pods with host ports; kstate.c counts them, kprep.c filters on conflicts. */
#include "kports.h"

#include "../base/buf.h"
#include "../base/error.h"

#include <stdlib.h>
#include <string.h>

void gs__kports_release(struct gs__kports *np)
{
    free(np->e);
    memset(np, 0, sizeof(*np));
}

int gs__kports_add(struct gs__kports *np, const struct gs_kport *p, int d)
{
    for (int i = 0; i < np->n; i++) {
        struct gs__kport_use *e = &np->e[i];
        if (e->port == p->port && e->proto == p->proto && strcmp(e->ip, p->ip) == 0) {
            e->refs += d;
            if (e->refs <= 0)
                np->e[i] = np->e[--np->n];
            return 0;
        }
    }
    if (d <= 0)
        return 0;
    if (np->n == np->cap) {
        struct gs__kport_use *g = gs_grow(np->e, &np->cap, sizeof(struct gs__kport_use), 4);
        if (!g)
            return GS_ENOMEM;
        np->e = g;
    }
    np->e[np->n++] = (struct gs__kport_use){p->ip, p->port, p->proto, d};
    return 0;
}

/* upstream HostPortInfo.CheckConflict: 0.0.0.0 conflicts with any address on the same
 * protocol and port, any other address with itself and 0.0.0.0 */
bool gs__kports_conflict(const struct gs__kports *np, const struct gs_kport *p)
{
    bool wild = strcmp(p->ip, "0.0.0.0") == 0;
    for (int i = 0; i < np->n; i++) {
        const struct gs__kport_use *e = &np->e[i];
        if (e->port != p->port || e->proto != p->proto)
            continue;
        if (wild || strcmp(e->ip, "0.0.0.0") == 0 || strcmp(e->ip, p->ip) == 0)
            return true;
    }
    return false;
}
