/* kube/lease: the leader-election decision over a Lease object and a clock — a candidate renews
 * what it holds, waits while another holder renews, takes over once the holder has not renewed
 * for a whole lease duration by its own clock (never comparing another machine's timestamps),
 * takes an unheld Lease at once — and the objects it writes (create, renew, takeover). */
#include "base/error.h"
#include "kube/lease.h"

#include <criterion/criterion.h>
#include <string.h>

static json_t *lease(const char *holder, const char *renew, int transitions)
{
    json_t *spec =
        json_pack("{s:i, s:i}", "leaseDurationSeconds", 15, "leaseTransitions", transitions);
    if (holder)
        json_object_set_new(spec, "holderIdentity", json_string(holder));
    if (renew)
        json_object_set_new(spec, "renewTime", json_string(renew));
    return json_pack("{s:s, s:{s:s}, s:o}", "kind", "Lease", "metadata", "name", "gpusched", "spec",
                     spec);
}

static const char *action_name(enum gs_lease_action a)
{
    return a == GS_LEASE_WAIT ? "wait" : a == GS_LEASE_RENEW ? "renew" : "take";
}

/* One observation: the Lease as read (holder, renewTime) at time t (seconds). */
struct step {
    const char *holder, *renew;
    double t;
    enum gs_lease_action want;
};

static void run_steps(const struct step *steps, int n)
{
    struct gs_lease_observer ob;
    gs_lease_observer_init(&ob, 0);
    for (int i = 0; i < n; i++) {
        json_t *l = lease(steps[i].holder, steps[i].renew, 0);
        enum gs_lease_action a = gs_lease_decide(&ob, l, "me", 15, steps[i].t);
        json_decref(l);
        cr_assert_eq(a, steps[i].want, "step %d (holder %s, renewTime %s, t=%.0f): %s, want %s", i,
                     steps[i].holder ? steps[i].holder : "(none)",
                     steps[i].renew ? steps[i].renew : "(none)", steps[i].t, action_name(a),
                     action_name(steps[i].want));
    }
}

Test(lease, the_holder_renews_its_own_lease)
{
    const struct step s[] = {{"me", "2025-01-01T00:00:00.000000Z", 1, GS_LEASE_RENEW},
                             {"me", "2025-01-01T00:00:00.000000Z", 100, GS_LEASE_RENEW}};
    run_steps(s, 2);
}

Test(lease, an_unheld_lease_is_taken_at_once)
{
    const struct step s[] = {{NULL, NULL, 0, GS_LEASE_TAKE}, {"", "x", 0, GS_LEASE_TAKE}};
    run_steps(s, 2);
}

Test(lease, another_holder_that_renews_is_never_taken_over)
{
    /* renewTime moves every 10 s, less than the 15 s duration: always wait */
    const struct step s[] = {{"other", "r1", 0, GS_LEASE_WAIT},
                             {"other", "r1", 10, GS_LEASE_WAIT},
                             {"other", "r2", 14, GS_LEASE_WAIT},
                             {"other", "r3", 28, GS_LEASE_WAIT},
                             {"other", "r4", 42, GS_LEASE_WAIT}};
    run_steps(s, 5);
}

Test(lease, a_holder_silent_for_a_whole_duration_is_taken_over)
{
    /* the same holder and renewTime for more than 15 s of this candidate's clock */
    const struct step s[] = {{"other", "r1", 1, GS_LEASE_WAIT},
                             {"other", "r1", 15, GS_LEASE_WAIT},
                             {"other", "r1", 16.5, GS_LEASE_TAKE}};
    run_steps(s, 3);
}

Test(lease, a_lease_first_seen_waits_a_whole_duration_whatever_its_renew_time_says)
{
    /* a renewTime from long ago by the holder's clock proves nothing to this candidate */
    const struct step s[] = {{"other", "1999-01-01T00:00:00.000000Z", 100, GS_LEASE_WAIT},
                             {"other", "1999-01-01T00:00:00.000000Z", 114, GS_LEASE_WAIT},
                             {"other", "1999-01-01T00:00:00.000000Z", 115.5, GS_LEASE_TAKE}};
    run_steps(s, 3);
}

Test(lease, a_new_holder_restarts_the_count)
{
    const struct step s[] = {{"a", "r1", 0, GS_LEASE_WAIT},
                             {"a", "r1", 14, GS_LEASE_WAIT},
                             {"b", "r1", 15, GS_LEASE_WAIT}, /* b took it over: seen anew */
                             {"b", "r1", 29, GS_LEASE_WAIT},
                             {"b", "r1", 30.5, GS_LEASE_TAKE}};
    run_steps(s, 5);
}

static const struct gs_lease_opts opts = {.ns = "kube-system",
                                          .name = "gpusched",
                                          .identity = "me",
                                          .duration_s = 15,
                                          .renew_deadline_s = 10,
                                          .retry_period_s = 2};

static const char *spec_str(const json_t *l, const char *key)
{
    const char *v = json_string_value(json_object_get(json_object_get(l, "spec"), key));
    return v ? v : "(none)";
}

static json_int_t spec_int(const json_t *l, const char *key)
{
    return json_integer_value(json_object_get(json_object_get(l, "spec"), key));
}

Test(lease, a_new_lease_is_held_acquired_and_renewed_now)
{
    json_t *l = gs_lease_object(&opts, "T1");
    cr_assert_not_null(l);
    cr_assert_str_eq(json_string_value(json_object_get(l, "apiVersion")), "coordination.k8s.io/v1");
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(l, "metadata"), "namespace")),
        "kube-system");
    cr_assert_str_eq(spec_str(l, "holderIdentity"), "me");
    cr_assert_str_eq(spec_str(l, "acquireTime"), "T1");
    cr_assert_str_eq(spec_str(l, "renewTime"), "T1");
    cr_assert_eq(spec_int(l, "leaseDurationSeconds"), 15, "duration %lld",
                 (long long)spec_int(l, "leaseDurationSeconds"));
    cr_assert_eq(spec_int(l, "leaseTransitions"), 0);
    json_decref(l);
}

Test(lease, a_renewal_moves_only_the_renew_time)
{
    json_t *l = lease("me", "T0", 3);
    json_object_set_new(json_object_get(l, "spec"), "acquireTime", json_string("T-1"));
    cr_assert_eq(gs_lease_claim(l, &opts, "T1", true), 0);
    cr_assert_str_eq(spec_str(l, "renewTime"), "T1");
    cr_assert_str_eq(spec_str(l, "acquireTime"), "T-1");
    cr_assert_eq(spec_int(l, "leaseTransitions"), 3, "transitions %lld",
                 (long long)spec_int(l, "leaseTransitions"));
    json_decref(l);
}

Test(lease, a_takeover_is_acquired_now_and_counts_a_transition)
{
    json_t *l = lease("other", "T0", 3);
    cr_assert_eq(gs_lease_claim(l, &opts, "T1", false), 0);
    cr_assert_str_eq(spec_str(l, "holderIdentity"), "me");
    cr_assert_str_eq(spec_str(l, "renewTime"), "T1");
    cr_assert_str_eq(spec_str(l, "acquireTime"), "T1");
    cr_assert_eq(spec_int(l, "leaseTransitions"), 4, "transitions %lld",
                 (long long)spec_int(l, "leaseTransitions"));
    json_decref(l);
}

Test(lease, a_clean_stop_hands_back_only_a_lease_it_holds_and_the_next_takes_it_at_once)
{
    json_t *l = lease("me", "T0", 3);
    cr_assert_eq(gs_lease_release(l, &opts, "T1"), 0);
    cr_assert_str_eq(spec_str(l, "holderIdentity"), "");
    cr_assert_eq(spec_int(l, "leaseDurationSeconds"), 1);
    cr_assert_eq(spec_int(l, "leaseTransitions"), 3);
    /* another candidate that saw it held a moment ago takes it now, not a duration later */
    struct gs_lease_observer ob;
    gs_lease_observer_init(&ob, 0);
    json_t *held = lease("me", "T0", 3);
    cr_assert_eq(gs_lease_decide(&ob, held, "other", 15, 1), GS_LEASE_WAIT);
    cr_assert_eq(gs_lease_decide(&ob, l, "other", 15, 2), GS_LEASE_TAKE);
    json_decref(held);
    json_decref(l);
    /* one held by another is left alone */
    json_t *theirs = lease("other", "T0", 3);
    cr_assert_eq(gs_lease_release(theirs, &opts, "T1"), GS_ENOTFOUND);
    cr_assert_str_eq(spec_str(theirs, "holderIdentity"), "other");
    json_decref(theirs);
}
