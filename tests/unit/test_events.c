/* test_events.c - Events aggregated into series as kube-scheduler's recorder aggregates them
 * (sched/events): the first occurrence is written as it is; a repeat (same regarding object,
 * type, reason, action and note) takes the first's name and eventTime with series.count 2, 3,
 * ...; another note, reason or pod starts its own Event; a series unobserved for 6 minutes is
 * finished; entries of pods bound or no longer pending are dropped; the table is bounded. The
 * Events are those formats/kubeobj.h writes. */
#include "formats/kubeobj.h"
#include "sched/events.h"

#include <criterion/criterion.h>
#include <string.h>

#define T0 1767225600.0 /* 2026-01-01T00:00:00Z */

static struct gs_kube_pod pod(const char *name)
{
    struct gs_kube_pod p;
    memset(&p, 0, sizeof(p));
    snprintf(p.ns, sizeof(p.ns), "ml");
    snprintf(p.name, sizeof(p.name), "%s", name);
    snprintf(p.uid, sizeof(p.uid), "uid-%s", name);
    return p;
}

static json_t *failed(const char *name, const char *note)
{
    struct gs_kube_pod p = pod(name);
    json_t *ev = gs_kube_event(&p, "Warning", "FailedScheduling", "Scheduling", note, "gpusched-0");
    cr_assert_not_null(ev);
    return ev;
}

static const char *str(const json_t *o, const char *path)
{
    char key[64];
    const char *dot = strchr(path, '.');
    if (!dot)
        return json_string_value(json_object_get(o, path));
    snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
    return str(json_object_get(o, key), dot + 1);
}

static int series_count(const json_t *ev)
{
    return (int)json_integer_value(json_object_get(json_object_get(ev, "series"), "count"));
}

Test(events, a_repeat_becomes_the_series_of_the_first_event)
{
    struct gs_events *e = gs__events_new(0);
    const char *note = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.";
    json_t *first = failed("train-0", note);
    char name[256], time0[40];
    snprintf(name, sizeof(name), "%s", str(first, "metadata.name"));
    snprintf(time0, sizeof(time0), "%s", str(first, "eventTime"));
    cr_expect_eq(gs__events_observe(e, first, T0), GS_EVENTS_CREATE);
    cr_expect_null(json_object_get(first, "series"), "a first occurrence has no series");
    cr_expect_str_eq(str(first, "metadata.name"), name, "and keeps its own name");
    static const double at[] = {1.0, 3.0, 7.5, 15.25, 300.0};
    for (int k = 0; k < 5; k++) {
        json_t *again = failed("train-0", note);
        cr_expect_eq(gs__events_observe(e, again, T0 + at[k]), GS_EVENTS_SERIES, "repeat %d", k);
        cr_expect_str_eq(str(again, "metadata.name"), name, "repeat %d: the first's name", k);
        cr_expect_str_eq(str(again, "eventTime"), time0, "repeat %d: the first's eventTime", k);
        cr_expect_eq(series_count(again), k + 2, "repeat %d: count %d", k, series_count(again));
        json_t *patch = gs__events_series_patch(again);
        cr_assert_not_null(patch);
        cr_expect_eq(json_object_size(patch), 1, "the patch holds the series alone");
        cr_expect_eq(series_count(patch), k + 2);
        json_decref(patch);
        if (k == 0)
            cr_expect_str_eq(str(again, "series.lastObservedTime"), "2026-01-01T00:00:01.000000Z");
        if (k == 3)
            cr_expect_str_eq(str(again, "series.lastObservedTime"), "2026-01-01T00:00:15.250000Z");
        json_decref(again);
    }
    cr_expect_eq(gs__events_count(e), 1, "one entry: %d", gs__events_count(e));
    json_decref(first);
    gs__events_free(e);
}

Test(events, another_note_reason_or_pod_starts_its_own_event)
{
    struct gs_events *e = gs__events_new(0);
    json_t *a = failed("train-0", "quota: over by 1");
    cr_expect_eq(gs__events_observe(e, a, T0), GS_EVENTS_CREATE);
    struct {
        json_t *ev;
        const char *why;
    } others[] = {
        {failed("train-0", "0/3 nodes are available"), "another note"},
        {failed("train-1", "quota: over by 1"), "another pod"},
        {NULL, "another reason"},
        {NULL, "another type"},
    };
    struct gs_kube_pod p = pod("train-0");
    others[2].ev = gs_kube_event(&p, "Warning", "FailedPreemption", "Scheduling",
                                 "quota: over by 1", "gpusched-0");
    others[3].ev = gs_kube_event(&p, "Normal", "FailedScheduling", "Scheduling", "quota: over by 1",
                                 "gpusched-0");
    for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++) {
        cr_expect_eq(gs__events_observe(e, others[k].ev, T0 + 1), GS_EVENTS_CREATE, "%s",
                     others[k].why);
        cr_expect_null(json_object_get(others[k].ev, "series"), "%s", others[k].why);
        json_decref(others[k].ev);
    }
    cr_expect_eq(gs__events_count(e), 5);
    json_decref(a);
    gs__events_free(e);
}

Test(events, a_series_unobserved_for_six_minutes_is_finished)
{
    struct gs_events *e = gs__events_new(0);
    struct {
        double at;
        enum gs_events_write want;
        int count;
    } steps[] = {
        {0, GS_EVENTS_CREATE, 0},
        {300, GS_EVENTS_SERIES, 2},
        {300 + GS_EVENTS_FINISH_S - 1, GS_EVENTS_SERIES, 3}, /* each observation extends it */
        {300 + 2 * GS_EVENTS_FINISH_S, GS_EVENTS_CREATE, 0}, /* unobserved 6 minutes: finished */
        {301 + 2 * GS_EVENTS_FINISH_S, GS_EVENTS_SERIES, 2},
    };
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        json_t *ev = failed("train-0", "no node fits");
        cr_expect_eq(gs__events_observe(e, ev, T0 + steps[k].at), steps[k].want, "step %zu", k);
        cr_expect_eq(series_count(ev), steps[k].count, "step %zu: count %d", k, series_count(ev));
        json_decref(ev);
    }
    /* a sweep drops what finished of other series too */
    json_t *other = failed("train-1", "no node fits");
    gs__events_observe(e, other, T0 + 400 + 3 * GS_EVENTS_FINISH_S);
    json_decref(other);
    cr_expect_eq(gs__events_count(e), 1, "only the new entry is left: %d", gs__events_count(e));
    gs__events_free(e);
}

Test(events, bound_and_no_longer_pending_pods_are_forgotten)
{
    struct gs_events *e = gs__events_new(0);
    static const char *const pods[] = {"a", "b", "c", "d"};
    for (int k = 0; k < 4; k++) {
        json_t *ev = failed(pods[k], "no node fits");
        gs__events_observe(e, ev, T0);
        json_decref(ev);
    }
    struct gs_kube_node n;
    memset(&n, 0, sizeof(n));
    snprintf(n.name, sizeof(n.name), "gpu-a100-01");
    snprintf(n.uid, sizeof(n.uid), "node-uid");
    json_t *nev =
        gs_kube_node_event(&n, "Warning", "GPUsUnusable", "Scheduling", "no inventory", "gpusched");
    cr_expect_eq(gs__events_observe(e, nev, T0), GS_EVENTS_CREATE);
    json_decref(nev);
    cr_expect_eq(gs__events_count(e), 5);
    gs__events_forget(e, "uid-a"); /* bound */
    cr_expect_eq(gs__events_count(e), 4);
    /* c and d are still pending; b was deleted; the node's entry is not a pod's */
    const char *const pending[] = {"uid-c", "uid-d", "uid-new"};
    cr_assert_eq(gs__events_retain(e, pending, 3), 0);
    cr_expect_eq(gs__events_count(e), 3, "c, d and the node's: %d", gs__events_count(e));
    for (int k = 0; k < 4; k++) {
        json_t *ev = failed(pods[k], "no node fits");
        enum gs_events_write w = gs__events_observe(e, ev, T0 + 1);
        cr_expect_eq(w, k >= 2 ? GS_EVENTS_SERIES : GS_EVENTS_CREATE, "pod %s", pods[k]);
        json_decref(ev);
    }
    nev =
        gs_kube_node_event(&n, "Warning", "GPUsUnusable", "Scheduling", "no inventory", "gpusched");
    cr_expect_eq(gs__events_observe(e, nev, T0 + 1), GS_EVENTS_SERIES, "the node's series lives");
    json_decref(nev);
    cr_assert_eq(gs__events_retain(e, NULL, 0), 0);
    cr_expect_eq(gs__events_count(e), 1, "no pod pending: the node's alone");
    gs__events_free(e);
}

Test(events, the_table_is_bounded_and_the_longest_unobserved_gives_way)
{
    struct gs_events *e = gs__events_new(4);
    char name[16];
    for (int k = 0; k < 6; k++) {
        snprintf(name, sizeof(name), "p%d", k);
        json_t *ev = failed(name, "no node fits");
        cr_expect_eq(gs__events_observe(e, ev, T0 + k), GS_EVENTS_CREATE);
        json_decref(ev);
        cr_expect_leq(gs__events_count(e), 4);
    }
    /* p0 and p1 gave way; p2..p5 are kept (looked at first: p1 and p0 then take two places) */
    for (int k = 5; k >= 0; k--) {
        snprintf(name, sizeof(name), "p%d", k);
        json_t *ev = failed(name, "no node fits");
        enum gs_events_write w = gs__events_observe(e, ev, T0 + 10);
        json_decref(ev);
        if (k >= 2)
            cr_expect_eq(w, GS_EVENTS_SERIES, "%s kept", name);
        else
            cr_expect_eq(w, GS_EVENTS_CREATE, "%s gave way", name);
    }
    gs__events_free(e);
}

Test(events, an_event_without_what_the_key_needs_is_written_alone)
{
    struct gs_events *e = gs__events_new(0);
    json_t *ev = json_pack("{s:s, s:{s:s}}", "reason", "", "metadata", "name", "x");
    for (int k = 0; k < 2; k++)
        cr_expect_eq(gs__events_observe(e, ev, T0 + k), GS_EVENTS_CREATE);
    cr_expect_eq(gs__events_count(e), 0);
    cr_expect_null(gs__events_series_patch(ev));
    json_decref(ev);
    gs__events_free(e);
}
