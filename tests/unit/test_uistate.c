/* test_uistate.c - the scheduler's dashboard without a cluster: a daemon's state (its store
 * holding a GPU Operator node with the gpusched agent's inventory, a pod bound to a MIG
 * slice, one to a whole GPU, one pending with the last cycle's verdict, the journal)
 * served through the daemon's own HTTP handler (sched/endpoints.c): GET /ui is one page with
 * no external asset, GET /ui/state valid JSON with the slices, holders and verdicts, other
 * methods 405; the journal keeps the latest 64 events; the terminal frame (sched/uitext.c)
 * shows the same and keeps to its width. The test wires the daemon's components by hand, as
 * sched/scheduler.c does: a detached store, the metrics with a verdict, the journal. */
#include "base/error.h"
#include "fixtures.h"
#include "formats/inventory.h"
#include "formats/kubeobj.h"
#include "sched/endpoints.h"
#include "sched/extender.h"
#include "sched/journal.h"
#include "sched/metrics.h"
#include "sched/store.h"
#include "sched/uistate.h"
#include "sched/uitext.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static const char *INVENTORY =
    "{\"v\":1,\"gpus\":["
    "{\"i\":0,\"uuid\":\"GPU-0a\",\"model\":\"A100-80GB\",\"mem\":81920,"
    "\"mig\":[\"3g.40gb@0\",\"3g.40gb@4\"]},"
    "{\"i\":1,\"uuid\":\"GPU-1b\",\"model\":\"A100-80GB\",\"mem\":81920,\"mig\":[\"1g.10gb@0\","
    "\"1g.10gb@1\",\"1g.10gb@2\",\"1g.10gb@3\",\"1g.10gb@4\",\"1g.10gb@5\",\"1g.10gb@6\"]},"
    "{\"i\":2,\"uuid\":\"GPU-2c\",\"model\":\"A100-80GB\",\"mem\":81920},"
    "{\"i\":3,\"uuid\":\"GPU-3d\",\"model\":\"A100-80GB\",\"mem\":81920}]}";

static struct daemon {
    struct gs_store *st;
    struct gs_metrics *metrics;
    struct gs_journal journal;
    struct gs_extender *extender;
    volatile int leader, fatal;
    struct gs_endpoints ep;
} * S;

static struct gs_kube_node knodes[1];
static struct gs_kube_pod kpods[3];
static int npods;

static void add_node(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/nodes/a100-mixed.json", GS_SOURCE_DIR);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    cr_assert_not_null(o, "%s: %s", path, je.text);
    json_object_set_new(json_object_get(json_object_get(o, "metadata"), "annotations"),
                        GS_INVENTORY_ANNOTATION, json_string(INVENTORY));
    json_object_set_new(json_object_get(o, "status"), "conditions",
                        json_pack("[{s:s, s:s}]", "type", "Ready", "status", "True"));
    struct gs_kube_node kn;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_node_read(o, &kn, &err), 0, "%s", err.msg);
    json_decref(o);
    cr_assert_eq(kn.ready, 1, "the Ready condition is read: %d", kn.ready);
    knodes[0] = kn;
}

/* A pod asking one of resource; bound to node with the devices annotation when node is set. */
static void add_pod(const char *name, const char *resource, const char *node, const char *devices)
{
    json_t *o = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:{}}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s}}}]}, s:{s:s}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "team-a", "uid",
        name, "annotations", "spec", "schedulerName", "gpusched", "containers", "name", "c",
        "image", "i", "resources", "limits", resource, "1", "status", "phase", "Pending");
    if (node) {
        json_object_set_new(json_object_get(o, "spec"), "nodeName", json_string(node));
        json_object_set_new(json_object_get(json_object_get(o, "metadata"), "annotations"),
                            GS_DEVICES_ANNOTATION, json_string(devices));
    }
    struct gs_kube_pod p;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, &p, &err), 0, "%s", err.msg);
    json_decref(o);
    kpods[npods++] = p;
}

static void setup(void)
{
    S = calloc(1, sizeof(*S));
    cr_assert_not_null(S);
    S->leader = 1;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs__store_new(NULL, GS_STORE_DETACHED, NULL, 60, &S->st, &err), 0, "%s", err.msg);
    S->metrics = gs__metrics_new(&S->leader);
    cr_assert_not_null(S->metrics);
    gs__journal_init(&S->journal);
    S->ep = (struct gs_endpoints){.fatal = &S->fatal,
                                  .ui = {.store = S->st,
                                         .metrics = S->metrics,
                                         .journal = &S->journal,
                                         .scheduler_name = "gpusched",
                                         .leader = &S->leader}};
    add_node();
    add_pod("infer", "nvidia.com/mig-3g.40gb", "gpu-a100-02", "mig=0:3g.40gb@4");
    add_pod("train", "nvidia.com/gpu", "gpu-a100-02", "gpu=2");
    add_pod("waits", "nvidia.com/gpu", NULL, NULL);
    cr_assert_eq(gs__store_load(S->st, knodes, 1, kpods, npods), 0);
    npods = 0;
    gs__metrics_set_report(S->metrics, json_pack("[{s:s, s:s, s:s, s:i, s:s, s:s}]", "namespace",
                                                 "team-a", "pod", "waits", "queue", "", "priority",
                                                 0, "reason", "fragmentation", "message",
                                                 "fragmentation: no node has 2 free"));
    gs__journal_add(&S->journal, "bind",
                    json_pack("{s:s, s:s, s:s, s:s}", "namespace", "team-a", "pod", "infer", "node",
                              "gpu-a100-02", "devices", "mig=0:3g.40gb@4"));
}

static void teardown(void)
{
    gs__extender_free(S->extender);
    gs__metrics_free(S->metrics);
    gs__journal_release(&S->journal);
    gs__store_free(S->st);
    free(S);
}

/* One request through the daemon's handler: the status, the body in rep (released by the
 * caller). */
static unsigned serve(const char *method, const char *url, struct gs_httpd_reply *rep)
{
    struct gs_httpd_request req = {.method = method, .url = url, .body = "", .len = 0};
    rep->status = 200;
    rep->type = "text/plain";
    gs_buf_init(&rep->body, 0);
    int rc = gs__endpoints_handle(&S->ep, &req, rep);
    cr_assert_eq(rc, 0, "%s %s: %d", method, url, rc);
    return rep->status;
}

static json_t *state(void)
{
    struct gs_httpd_reply rep;
    cr_assert_eq(serve("GET", "/ui/state", &rep), 200);
    cr_expect_str_eq(rep.type, "application/json");
    json_error_t je;
    json_t *st = json_loadb(rep.body.data, rep.body.len, 0, &je);
    cr_assert_not_null(st, "/ui/state is not JSON: line %d: %s", je.line, je.text);
    gs_buf_release(&rep.body);
    return st;
}

TestSuite(uistate, .init = setup, .fini = teardown);

Test(uistate, the_page_is_one_document_with_no_external_asset)
{
    struct gs_httpd_reply rep;
    cr_assert_eq(serve("GET", "/ui", &rep), 200);
    cr_expect_str_eq(rep.type, "text/html; charset=utf-8");
    const char *page = rep.body.data;
    cr_expect_eq(rep.body.len, gs__ui_page_len);
    cr_expect(strncmp(page, "<!DOCTYPE html>", 15) == 0, "starts: %.40s", page);
    cr_expect(strstr(page, "</html>") != NULL);
    /* no URL with a scheme or a host: nothing is loaded from anywhere but the scheduler */
    static const char *const banned[] = {
        "http:",   "https:",      "src=\"//",           "src='//", "href=\"//", "href='//", "url(",
        "@import", "<script src", "rel=\"stylesheet\"", "<iframe", "<img"};
    for (size_t k = 0; k < sizeof(banned) / sizeof(banned[0]); k++)
        cr_expect_null(strstr(page, banned[k]), "the page holds '%s'", banned[k]);
    /* it reads its state beside itself */
    cr_expect(strstr(page, "\"/state\"") != NULL, "the page names /ui/state relative to itself");
    gs_buf_release(&rep.body);
    cr_assert_eq(serve("GET", "/ui/", &rep), 200, "/ui/ is the page too");
    gs_buf_release(&rep.body);
}

Test(uistate, only_get_is_answered)
{
    static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH"};
    static const char *const urls[] = {"/ui", "/ui/state"};
    for (size_t m = 0; m < 4; m++)
        for (size_t u = 0; u < 2; u++) {
            struct gs_httpd_reply rep;
            unsigned st = serve(methods[m], urls[u], &rep);
            cr_expect_eq(st, 405, "%s %s: %u", methods[m], urls[u], st);
            gs_buf_release(&rep.body);
        }
    /* the extender takes POSTs, not on the dashboard's paths */
    S->extender = gs__extender_new(NULL, S->st, S->metrics, "gpusched");
    S->ep.extender = S->extender;
    S->ep.ui.extender = true;
    struct gs_httpd_reply rep;
    cr_expect_eq(serve("POST", "/ui/state", &rep), 405);
    gs_buf_release(&rep.body);
}

Test(uistate, the_state_shows_slices_holders_and_verdicts)
{
    json_t *st = state();
    cr_expect_eq(json_integer_value(json_object_get(st, "version")), GS_UISTATE_VERSION);
    cr_expect(json_is_true(json_object_get(st, "leader")));
    cr_expect(json_is_true(json_object_get(st, "synced")));
    json_t *nodes = json_object_get(st, "nodes");
    cr_assert_eq(json_array_size(nodes), 1);
    json_t *n = json_array_get(nodes, 0);
    cr_expect_str_eq(json_string_value(json_object_get(n, "name")), "gpu-a100-02");
    cr_expect_str_eq(json_string_value(json_object_get(n, "model")), "A100-80GB");
    cr_expect(json_is_true(json_object_get(n, "ready")));
    cr_expect(json_is_false(json_object_get(n, "cordoned")));
    json_t *gpus = json_object_get(n, "gpus");
    cr_assert_eq(json_array_size(gpus), 4);
    /* GPU 0: two 3g.40gb slices, the one at 4 held by team-a/infer */
    json_t *g0 = json_array_get(gpus, 0), *sl = json_object_get(g0, "slices");
    cr_expect_str_eq(json_string_value(json_object_get(g0, "mode")), "mig");
    cr_expect_eq(json_integer_value(json_object_get(g0, "memory_slices")), 8);
    cr_assert_eq(json_array_size(sl), 2);
    static const struct {
        int gpu, slice, start, size;
        const char *profile, *holder;
    } want[] = {
        {0, 0, 0, 4, "3g.40gb", NULL},
        {0, 1, 4, 4, "3g.40gb", "team-a/infer"},
        {1, 0, 0, 1, "1g.10gb", NULL},
        {1, 6, 6, 1, "1g.10gb", NULL},
    };
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        json_t *s = json_array_get(json_object_get(json_array_get(gpus, want[k].gpu), "slices"),
                                   want[k].slice);
        cr_assert_not_null(s, "GPU %d slice %d", want[k].gpu, want[k].slice);
        cr_expect_str_eq(json_string_value(json_object_get(s, "profile")), want[k].profile);
        cr_expect_eq(json_integer_value(json_object_get(s, "start")), want[k].start);
        cr_expect_eq(json_integer_value(json_object_get(s, "size")), want[k].size);
        const char *h = json_string_value(json_object_get(s, "holder"));
        if (want[k].holder)
            cr_expect(h && strcmp(h, want[k].holder) == 0, "GPU %d slice %d: holder %s",
                      want[k].gpu, want[k].slice, h ? h : "null");
        else
            cr_expect(json_is_null(json_object_get(s, "holder")), "GPU %d slice %d: holder %s",
                      want[k].gpu, want[k].slice, h ? h : "null");
    }
    /* GPU 2: whole, held by team-a/train; GPU 3 free */
    json_t *g2 = json_array_get(gpus, 2), *g3 = json_array_get(gpus, 3);
    cr_expect_str_eq(json_string_value(json_object_get(g2, "mode")), "whole");
    json_t *h2 = json_array_get(json_object_get(g2, "holders"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(h2, "pod")), "team-a/train");
    cr_expect_str_eq(json_string_value(json_object_get(h2, "share")), "1");
    cr_expect_eq(json_array_size(json_object_get(g3, "holders")), 0);
    /* the pending pod, with the last cycle's verdict */
    json_t *pend = json_object_get(st, "pending");
    cr_assert_eq(json_array_size(pend), 1);
    json_t *p = json_array_get(pend, 0);
    cr_expect_str_eq(json_string_value(json_object_get(p, "pod")), "waits");
    cr_expect_str_eq(json_string_value(json_object_get(p, "reason")), "fragmentation");
    cr_expect_str_eq(json_string_value(json_object_get(p, "message")),
                     "fragmentation: no node has 2 free");
    json_t *ev = json_object_get(st, "events");
    cr_assert_eq(json_array_size(ev), 1);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(ev, 0), "kind")), "bind");
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(ev, 0), "seq")), 1);
    json_decref(st);
}

Test(uistate, the_journal_keeps_the_latest_events_oldest_first)
{
    for (int i = 0; i < 100; i++)
        gs__journal_add(&S->journal, "recarve",
                        json_pack("{s:s, s:i, s:s, s:s}", "node", "n", "gpu", i, "from", "whole",
                                  "to", "3g.40gb@0,3g.40gb@4"));
    gs__journal_add(&S->journal, "bind", NULL); /* a failed allocation is dropped */
    json_t *ev = gs__journal_json(&S->journal);
    cr_assert_eq(json_array_size(ev), GS_JOURNAL_MAX);
    for (size_t k = 0; k < GS_JOURNAL_MAX; k++) {
        json_t *e = json_array_get(ev, k);
        json_int_t seq = json_integer_value(json_object_get(e, "seq"));
        cr_expect_eq(seq, (json_int_t)(101 - GS_JOURNAL_MAX + 1 + k), "entry %zu: seq %lld", k,
                     (long long)seq);
        cr_expect_eq(json_integer_value(json_object_get(e, "gpu")), seq - 2);
    }
    json_decref(ev);
}

Test(uistate, the_terminal_frame_shows_the_same_within_its_width)
{
    json_t *st = state();
    struct gs_buf b;
    gs_buf_init(&b, 0);
    struct gs_uitext_opts o = {.width = 72, .source = "http://127.0.0.1:1"};
    cr_assert_eq(gs_uitext_render(st, &o, &b), 0);
    static const char *const want[] = {
        "gpu-a100-02",
        "A100-80GB",
        "Ready",
        "[0:3g.40gb@0 free]",
        "[0:3g.40gb@4 team-a/infer]",
        "team-a/train (1)",
        "team-a/waits",
        "fragmentation",
        "PENDING (1)",
        "EVENTS (1)",
        "bind",
    };
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
        cr_expect(strstr(b.data, want[k]) != NULL, "'%s' not in the frame:\n%s", want[k], b.data);
    cr_expect_null(strchr(b.data, '\x1b'), "no escape sequence without colour");
    for (const char *l = b.data; *l;) {
        const char *e = strchr(l, '\n');
        cr_assert_not_null(e, "every line ends");
        cr_expect_leq(e - l, 72, "a line of %d columns: %.*s", (int)(e - l), (int)(e - l), l);
        l = e + 1;
    }
    /* a hostile document: wrong types, control bytes, nothing trusted */
    json_t *bad = json_pack("{s:s, s:[{s:i, s:s, s:[{s:s, s:[{s:s}]}]}], s:{}, s:[i]}", "scheduler",
                            "x\x1b[2Jy", "nodes", "name", 7, "model", "\x1b]0;t\x07", "gpus",
                            "mode", "mig", "slices", "profile", "1g", "queues", "pending", 3);
    gs_buf_reset(&b);
    o.color = true;
    cr_assert_eq(gs_uitext_render(bad, &o, &b), 0);
    cr_expect_null(strstr(b.data, "\x1b[2J"), "a name's escape sequence is not passed on");
    cr_expect_null(strstr(b.data, "\x1b]0"), "a name's escape sequence is not passed on");
    json_decref(bad);
    gs_buf_release(&b);
    json_decref(st);
}
