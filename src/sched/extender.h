/* extender.h - kube-scheduler's extender protocol over the daemon's store and engine: a stock
 * kube-scheduler calls POST /filter and /prioritize with a pod and candidate nodes
 * (NodeNames, node-cache-capable, or Nodes.items) and POST /bind for the node it chose. Filter
 * keeps the nodes the engine can place the pod on (taints tolerated); prioritize scales the
 * engine's scores to 0..10; bind picks the devices there, binds with them in the
 * gpusched.io/devices annotation and assumes the pod in the store until the watch shows it.
 *
 * Thread-safety: called from the HTTP server's threads at once; one engine (s->xengine) is
 * shared under s->emu, and binds hold emu from their snapshot until the store has the bind,
 * so two binds never take the same slot. The engine is freed with the daemon. */
#ifndef GS_SCHED_EXTENDER_H
#define GS_SCHED_EXTENDER_H

#include "../kube/httpd.h"

struct gs_sched;

/* Answer one extender verb (req->url /filter, /prioritize or /bind; a JSON body): 200 with the
 * protocol's JSON answer (errors in its Error field), 400 for a body that is not JSON, 404 for
 * an unknown verb. Returns gs_httpd_reply's result, or GS_ENOMEM. */
int gs__extender_answer(struct gs_sched *s, const struct gs_httpd_request *req,
                        struct gs_httpd_reply *rep);

#endif
