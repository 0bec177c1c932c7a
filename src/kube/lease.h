/* lease.h - leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection
 * does it: every retry period each candidate reads the Lease; it creates the Lease when there
 * is none, renews it when it holds it, and takes it over when the holder has not renewed it
 * for leaseDurationSeconds as this candidate's own clock measures it (the time since the
 * holder and renewTime it last saw changed; clocks of different machines are never compared).
 * A leader that cannot renew for renew_deadline_s steps down.
 *
 * The decision is a pure function of the Lease object, what this candidate observed and a
 * clock (gs_lease_decide), so it can be tested without an API server; gs_lease_run is the
 * loop around it. A leader that stops cleanly releases the Lease (holderIdentity "", as
 * client-go's ReleaseOnCancel does), so the next candidate takes it at its next retry instead
 * of waiting out leaseDurationSeconds; a leader that dies leaves it to expire. */
#ifndef GS_KUBE_LEASE_H
#define GS_KUBE_LEASE_H

#include "client.h"

#include <jansson.h>

#include <stdbool.h>

struct gs_lease_opts {
    const char *ns, *name; /* the Lease */
    const char *identity;  /* this candidate (holderIdentity) */
    double duration_s;     /* leaseDurationSeconds */
    double renew_deadline_s;
    double retry_period_s;
    /* called on gs_lease_run's thread each time *leader changes, after it changed (NULL: none):
     * a daemon waiting for its leader flag wakes */
    void (*changed)(void *user);
    void *user;
};

/* What one candidate has seen of the Lease: its holder and renewTime, and when (its own
 * monotonic clock) they last changed; gs_lease_observer_init starts it at the candidate's
 * start, so that a Lease first seen is not taken before a whole duration has passed. */
struct gs_lease_observer {
    char seen[256];
    double seen_at;
};

enum gs_lease_action {
    GS_LEASE_WAIT,  /* another candidate holds it and has renewed it lately */
    GS_LEASE_RENEW, /* this candidate holds it */
    GS_LEASE_TAKE,  /* nobody holds it, or its holder let it expire */
};

void gs_lease_observer_init(struct gs_lease_observer *ob, double now);
/* Decide from lease (a Lease object as read) at monotonic time now; records what it saw in
 * ob. */
enum gs_lease_action gs_lease_decide(struct gs_lease_observer *ob, const json_t *lease,
                                     const char *identity, double duration_s, double now);
/* A new Lease held by identity, acquired and renewed at now_rfc3339 (a MicroTime). Returns a
 * new reference or NULL without memory. */
json_t *gs_lease_object(const struct gs_lease_opts *o, const char *now_rfc3339);
/* Update lease in place for a PUT: identity holds it, renewed at now_rfc3339; on a takeover
 * (renew false) also acquired then, with leaseTransitions one more. Returns 0 or GS_ENOMEM. */
int gs_lease_claim(json_t *lease, const struct gs_lease_opts *o, const char *now_rfc3339,
                   bool renew);

/* Update lease in place to hand it back (holderIdentity "", leaseDurationSeconds 1, renewed
 * at now_rfc3339) when identity holds it. Returns 0, GS_ENOTFOUND when another holds it (leave
 * it), GS_ENOMEM. */
int gs_lease_release(json_t *lease, const struct gs_lease_opts *o, const char *now_rfc3339);

/* Run for leadership until *stop becomes non-zero (returns 0) or this candidate, leader, could
 * not renew the Lease for renew_deadline_s (returns GS_EIO: the caller must stop acting as
 * leader at once). *leader is set to 1 while this candidate holds the Lease and back to 0
 * when it steps down (o->changed is told). Blocks the calling thread; the client is shared. */
int gs_lease_run(struct gs_kube_client *kc, const struct gs_lease_opts *o, volatile int *leader,
                 volatile int *stop);

#endif
