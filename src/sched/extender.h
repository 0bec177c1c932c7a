/* extender.h - kube-scheduler's extender protocol over the daemon's store and engine: a stock
 * kube-scheduler calls POST /filter and /prioritize with a pod and candidate nodes
 * (NodeNames, node-cache-capable, or Nodes.items) and POST /bind for the node it chose. Filter
 * keeps the nodes the engine can place the pod on (taints tolerated); prioritize scales the
 * engine's scores to 0..10; bind picks the devices there, binds with them in the
 * gpusched.io/devices annotation and assumes the pod in the store until the watch shows it.
 *
 * Thread-safety: called from the HTTP server's threads at once; the extender's one engine is
 * shared under its lock, and binds hold that lock from their snapshot until the store has the
 * bind, so two binds never take the same slot. */
#ifndef GS_SCHED_EXTENDER_H
#define GS_SCHED_EXTENDER_H

#include "../kube/httpd.h"

struct gs_extender;
struct gs_kube_client;
struct gs_metrics;
struct gs_store;

/* An extender over the store (the pods it binds are assumed there), recording into m, placing
 * with the engine policy named policy (a string that outlives it). NULL without memory. */
struct gs_extender *gs__extender_new(struct gs_kube_client *kc, struct gs_store *st,
                                     struct gs_metrics *m, const char *policy);
void gs__extender_free(struct gs_extender *x);

/* Answer one extender verb (req->url /filter, /prioritize or /bind; a JSON body): 200 with the
 * protocol's JSON answer (errors in its Error field), 400 for a body that is not JSON, 404 for
 * an unknown verb. Returns gs_httpd_reply's result, or GS_ENOMEM. */
int gs__extender_answer(struct gs_extender *x, const struct gs_httpd_request *req,
                        struct gs_httpd_reply *rep);

#endif
