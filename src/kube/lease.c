/* lease.c - Lease leader election (kube/lease.h): the decision over a Lease object, and the
 * loop that reads, creates and updates the Lease through kube/client.c. The scheduler daemon
 * (sched/scheduler.c) runs the loop on a thread of its own. */
#include "lease.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "../base/log.h"
#include "../formats/kubeobj.h"

#include <stdio.h>
#include <string.h>

void gs_lease_observer_init(struct gs_lease_observer *ob, double now)
{
    ob->seen[0] = '\0';
    ob->seen_at = now;
}

enum gs_lease_action gs_lease_decide(struct gs_lease_observer *ob, const json_t *lease,
                                     const char *identity, double duration_s, double now)
{
    const json_t *spec = json_object_get(lease, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    const char *renew = json_string_value(json_object_get(spec, "renewTime"));
    char rec[256];
    snprintf(rec, sizeof(rec), "%s|%s", holder ? holder : "", renew ? renew : "");
    if (strcmp(rec, ob->seen) != 0) {
        snprintf(ob->seen, sizeof(ob->seen), "%s", rec);
        ob->seen_at = now;
    }
    if (holder && strcmp(holder, identity) == 0)
        return GS_LEASE_RENEW;
    if (!holder || !holder[0] || now - ob->seen_at > duration_s)
        return GS_LEASE_TAKE;
    return GS_LEASE_WAIT;
}

json_t *gs_lease_object(const struct gs_lease_opts *o, const char *now_rfc3339)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s, s:i}}", "apiVersion",
                     "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", o->name,
                     "namespace", o->ns, "spec", "holderIdentity", o->identity,
                     "leaseDurationSeconds", (int)o->duration_s, "acquireTime", now_rfc3339,
                     "renewTime", now_rfc3339, "leaseTransitions", 0);
}

int gs_lease_claim(json_t *lease, const struct gs_lease_opts *o, const char *now_rfc3339,
                   bool renew)
{
    json_t *sp = json_object_get(lease, "spec");
    if (!sp) {
        sp = json_object();
        if (!sp || json_object_set_new(lease, "spec", sp))
            return GS_ENOMEM;
    }
    json_int_t trans = json_integer_value(json_object_get(sp, "leaseTransitions"));
    int rc = json_object_set_new(sp, "holderIdentity", json_string(o->identity));
    rc |= json_object_set_new(sp, "leaseDurationSeconds", json_integer((json_int_t)o->duration_s));
    rc |= json_object_set_new(sp, "renewTime", json_string(now_rfc3339));
    if (!renew) {
        rc |= json_object_set_new(sp, "acquireTime", json_string(now_rfc3339));
        rc |= json_object_set_new(sp, "leaseTransitions", json_integer(trans + 1));
    }
    return rc ? GS_ENOMEM : 0;
}

/* Set the leader flag; tell o->changed when it changed. */
static void set_leader(const struct gs_lease_opts *o, volatile int *leader, int v)
{
    if (gs_flag_get(leader) == v)
        return;
    gs_flag_set(leader, v);
    if (o->changed)
        o->changed(o->user);
}

int gs_lease_run(struct gs_kube_client *kc, const struct gs_lease_opts *o, volatile int *leader,
                 volatile int *stop)
{
    char path[512];
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", o->ns,
             o->name);
    struct gs_lease_observer ob;
    gs_lease_observer_init(&ob, gs_clock_mono());
    double last_renew = 0;
    while (!gs_flag_get(stop)) {
        struct gs_error err;
        gs_error_init(&err);
        json_t *lease = NULL;
        long status = 0;
        char now[40];
        gs_kube_micro_time(now, sizeof(now));
        int rc = gs_kube_request(kc, "GET", path, NULL, NULL, &lease, &status, &err);
        if (rc == GS_ENOTFOUND) {
            json_t *body = gs_lease_object(o, now);
            char cpath[512];
            snprintf(cpath, sizeof(cpath), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
                     o->ns);
            if (gs_kube_request(kc, "POST", cpath, NULL, body, NULL, NULL, &err) == 0) {
                set_leader(o, leader, 1);
                last_renew = gs_clock_mono();
                GS_INFO("leader", "'%s' acquired lease %s/%s", o->identity, o->ns, o->name);
            }
            json_decref(body);
        } else if (rc == 0) {
            enum gs_lease_action a =
                gs_lease_decide(&ob, lease, o->identity, o->duration_s, gs_clock_mono());
            bool mine = a == GS_LEASE_RENEW;
            if (a != GS_LEASE_WAIT && gs_lease_claim(lease, o, now, mine) == 0 &&
                gs_kube_request(kc, "PUT", path, NULL, lease, NULL, NULL, &err) == 0) {
                if (!gs_flag_get(leader))
                    GS_INFO("leader", "'%s' %s lease %s/%s", o->identity,
                            mine ? "holds" : "took over", o->ns, o->name);
                set_leader(o, leader, 1);
                last_renew = gs_clock_mono();
            }
        }
        json_decref(lease);
        if (gs_flag_get(leader) && gs_clock_mono() - last_renew > o->renew_deadline_s) {
            GS_ERR("leader", "'%s' could not renew the lease for %.0fs: stepping down (%s)",
                   o->identity, o->renew_deadline_s, err.msg);
            set_leader(o, leader, 0);
            return GS_EIO;
        }
        gs_clock_sleep(o->retry_period_s);
    }
    /* a clean stop hands the Lease back, so the next candidate need not wait it out */
    if (gs_flag_get(leader)) {
        struct gs_error err;
        gs_error_init(&err);
        json_t *lease = NULL;
        char now[40];
        gs_kube_micro_time(now, sizeof(now));
        if (gs_kube_request(kc, "GET", path, NULL, NULL, &lease, NULL, &err) == 0 &&
            gs_lease_release(lease, o, now) == 0 &&
            gs_kube_request(kc, "PUT", path, NULL, lease, NULL, NULL, &err) == 0)
            GS_INFO("leader", "'%s' released lease %s/%s", o->identity, o->ns, o->name);
        else if (err.msg[0])
            GS_WARN("leader", "'%s' could not release lease %s/%s: %s", o->identity, o->ns, o->name,
                    err.msg);
        json_decref(lease);
        set_leader(o, leader, 0);
    }
    return 0;
}

int gs_lease_release(json_t *lease, const struct gs_lease_opts *o, const char *now_rfc3339)
{
    json_t *spec = json_object_get(lease, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    if (!spec || !holder || strcmp(holder, o->identity) != 0)
        return GS_ENOTFOUND; /* not ours (any more) */
    if (json_object_set_new(spec, "holderIdentity", json_string("")) ||
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(1)) ||
        json_object_set_new(spec, "renewTime", json_string(now_rfc3339)))
        return GS_ENOMEM;
    return 0;
}
