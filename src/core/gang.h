/* gang.h - all-or-nothing placement of a gang (a PodGroup with minMember).
 *
 * gs_gang_place places the members one after another with the engine, binding each on the
 * cluster so the next sees it; when any member does not fit, every member placed so far is
 * unbound again and the gang holds nothing. The caller decides when a gang is complete
 * (at least minMember pods exist) and applies the returned allocations. */
#ifndef GS_GANG_H
#define GS_GANG_H

#include "engine.h"

/* Place n members (reqs[i]); on success returns 0 with the cluster holding every member and
 * d[i] their decisions; else GS_ENOFIT with the cluster unchanged, *failed the first member
 * that did not fit and why its reasons. */
int gs_gang_place(struct gs_engine *e, struct gs_cluster *c, const struct gs_request *const *reqs,
                  int n, struct gs_decision *d, int *failed, struct gs_reasons *why);

#endif
