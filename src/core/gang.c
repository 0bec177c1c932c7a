/* gang.c - all-or-nothing gang placement (see gang.h). */
#include "gang.h"

#include "../base/error.h"

#include <string.h>

int gs_gang_place(struct gs_engine *e, struct gs_cluster *c, const struct gs_request *const *reqs,
                  int n, struct gs_decision *d, int *failed, struct gs_reasons *why)
{
    int i;
    for (i = 0; i < n; i++) {
        if (why)
            memset(why, 0, sizeof(*why));
        int rc = gs_engine_place(e, c, reqs[i], i, &d[i], why);
        if (rc == 0)
            rc = gs_cluster_bind(c, reqs[i], &d[i].alloc);
        if (rc)
            break;
    }
    if (i == n)
        return 0;
    if (failed)
        *failed = i;
    while (--i >= 0)
        gs_cluster_unbind(c, reqs[i], &d[i].alloc);
    return GS_ENOFIT;
}
