/* Extended resources backed by a DeviceClass (formats/draext.c) as kube-scheduler serves them:
 * the class of a name (explicit extendedResourceName, the latest created first, then the
 * implicit deviceclass.resource.kubernetes.io/<class>), the special claim's requests and request
 * mappings for containers, init containers and sidecars (upstream's own cases of
 * createRequestsAndMappings), the objects written, and its allocation in a cycle on NVIDIA's
 * slices: on a node without the resource by DRA, on one with it by its device plugin, never on a
 * node with some of both; a claim an earlier try made is found by its owner. */
#include "base/error.h"
#include "core/tenant.h"
#include "formats/dracycle.h"
#include "formats/draext.h"
#include "formats/kubeobj.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static void class_of(const char *name, const char *ext, const char *created,
                     struct gs_draobj_class *c)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"creationTimestamp\":\"%s\"},\"spec\":{%s%s%s"
             "\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'gpu.nvidia.com' && "
             "device.attributes['gpu.nvidia.com'].type == 'gpu'\"}}]}}",
             name, created, ext ? "\"extendedResourceName\":\"" : "", ext ? ext : "",
             ext ? "\"," : "");
    json_t *o = json_of(buf);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_class_read(o, c, &err), 0, "%s", err.msg);
    json_decref(o);
}

Test(draext, the_class_of_a_name)
{
    struct gs_draobj_class c[4];
    class_of("old", "example.com/gpu", "2026-01-01T00:00:00Z", &c[0]);
    class_of("new-b", "example.com/gpu", "2026-02-01T00:00:00Z", &c[1]);
    class_of("new-a", "example.com/gpu", "2026-02-01T00:00:00Z", &c[2]);
    class_of("plain", NULL, "2026-03-01T00:00:00Z", &c[3]);
    const struct gs_draobj_class *k = gs_draext_class(c, 4, "example.com/gpu");
    cr_assert(k);
    cr_expect_str_eq(k->name, "new-a", "the latest created, then the first by name");
    k = gs_draext_class(c, 4, "deviceclass.resource.kubernetes.io/plain");
    cr_assert(k);
    cr_expect_str_eq(k->name, "plain", "the implicit name");
    k = gs_draext_class(c, 4, "deviceclass.resource.kubernetes.io/old");
    cr_assert(k);
    cr_expect_str_eq(k->name, "old", "every class has its implicit name");
    cr_expect_null(gs_draext_class(c, 4, "example.com/fpga"));
    cr_expect_null(gs_draext_class(c, 4, "deviceclass.resource.kubernetes.io/none"));
    for (int i = 0; i < 4; i++)
        gs_draobj_class_release(&c[i]);
}

/* A pod of init containers (I name=...; S for a sidecar) and containers (C name=...), each
 * "res=count,res=count" with the example.com/ domain implied. */
static void pod_of(const char *const *ctr, int n, struct gs_kube_pod *p)
{
    json_t *init = json_array(), *cs = json_array();
    for (int i = 0; i < n; i++) {
        json_t *lim = json_object();
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", ctr[i] + 2);
        for (char *tok = buf; tok && *tok;) {
            char *next = strchr(tok, ',');
            if (next)
                *next++ = '\0';
            char *eq = strchr(tok, '=');
            *eq = '\0';
            char name[96];
            snprintf(name, sizeof(name), "example.com/%s", tok);
            json_object_set_new(lim, name, json_string(eq + 1));
            tok = next;
        }
        char cname[16];
        snprintf(cname, sizeof(cname), "c%d", i);
        json_t *c = json_pack("{s:s, s:s, s:{s:o}}", "name", cname, "image", "x", "resources",
                              "limits", lim);
        if (ctr[i][0] == 'S')
            json_object_set_new(c, "restartPolicy", json_string("Always"));
        json_array_append_new(ctr[i][0] == 'C' ? cs : init, c);
    }
    json_t *o = json_pack("{s:{s:s, s:s, s:s}, s:{s:o, s:o}}", "metadata", "namespace", "ai",
                          "name", "trainer", "uid", "3f1c9e4a-77d0-4b6e-9d55-0c1b2a7e8f90", "spec",
                          "initContainers", init, "containers", cs);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_pod_read(o, p, &err), 0, "%s", err.msg);
    json_decref(o);
}

static struct gs_draobj_class cls[3];

static void classes(void)
{
    class_of("class", "example.com/gpu", "2026-01-01T00:00:00Z", &cls[0]);
    class_of("class1", "example.com/gpu1", "2026-01-01T00:00:00Z", &cls[1]);
    class_of("classInit", "example.com/gpuinit", "2026-01-01T00:00:00Z", &cls[2]);
}

static void classes_done(void)
{
    for (int i = 0; i < 3; i++)
        gs_draobj_class_release(&cls[i]);
}

/* The special claim's requests as "name:class:count ..." */
static void requests(const struct gs_draext *x, char *out, size_t n)
{
    out[0] = '\0';
    for (int k = 0; k < x->claim.nreq; k++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s:%s:%d", k ? " " : "",
                 x->claim.req[k].name, x->claim.req[k].sub[0].cls, x->claim.req[k].sub[0].count);
}

static void mappings(const struct gs_draext *x, char *out, size_t n)
{
    out[0] = '\0';
    for (int k = 0; k < x->nmap; k++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s/%s->%s", k ? " " : "",
                 x->map[k].container, x->map[k].resource + 12, x->map[k].request);
}

/* upstream's Test_createRequestsAndMappings_requests cases */
static const struct {
    const char *what;
    const char *ctr[4];
    int n;
    const char *want;
} cases[] = {
    {"two resources match",
     {"C gpu=1,gpu1=2"},
     1,
     "container-0-request-0:class:1 container-0-request-1:class1:2"},
    {"two containers match",
     {"C gpu=1", "C gpu1=2"},
     2,
     "container-0-request-0:class:1 container-1-request-0:class1:2"},
    {"one init container, one regular container",
     {"I gpuinit=2", "C gpu=1"},
     2,
     "container-0-request-0:classInit:2 container-1-request-0:class:1"},
    {"two init containers, one regular container",
     {"I gpuinit=1", "I gpuinit=2", "C gpu=1"},
     3,
     "container-1-request-0:classInit:2 container-2-request-0:class:1"},
    {"three init containers, one sidecar, one regular container",
     {"I gpuinit=1", "S gpuinit=1", "I gpuinit=2", "C gpu=1"},
     4,
     "container-1-request-0:classInit:1 container-2-request-0:classInit:2 "
     "container-3-request-0:class:1"},
    {"an init container reuses the container after it",
     {"I gpu=2", "C gpu=1"},
     2,
     "container-0-request-0:class:1 container-1-request-0:class:1"},
    {"an init container within what the container asks",
     {"I gpu=1", "C gpu=3"},
     2,
     "container-1-request-0:class:3"},
};

Test(draext, requests_as_kube_scheduler_makes_them, .init = classes, .fini = classes_done)
{
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        static struct gs_kube_pod p;
        pod_of(cases[k].ctr, cases[k].n, &p);
        struct gs_draext x;
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_eq(gs_draext_build(&p, cls, 3, &x, &err), 0, "%s: %s", cases[k].what, err.msg);
        char got[512];
        requests(&x, got, sizeof(got));
        cr_expect_str_eq(got, cases[k].want, "%s", cases[k].what);
        gs_draext_release(&x);
    }
}

Test(draext, mappings_name_the_request_each_container_uses, .init = classes, .fini = classes_done)
{
    static struct gs_kube_pod p;
    const char *ctr[] = {"I gpuinit=1", "I gpuinit=2", "C gpu=1"};
    pod_of(ctr, 3, &p);
    struct gs_draext x;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draext_build(&p, cls, 3, &x, &err), 0, "%s", err.msg);
    char got[512];
    mappings(&x, got, sizeof(got));
    /* both init containers use the larger init request */
    cr_expect_str_eq(got, "c2/gpu->container-2-request-0 c0/gpuinit->container-1-request-0 "
                          "c1/gpuinit->container-1-request-0");
    cr_expect_eq(x.nres, 2);
    cr_expect_eq(strlen(x.claim.name), strlen("trainer-extended-resources-") + 5, "%s",
                 x.claim.name);
    cr_expect_eq(strncmp(x.claim.name, "trainer-extended-resources-", 27), 0, "%s", x.claim.name);
    gs_draext_release(&x);
}

Test(draext, objects_written_for_the_claim, .init = classes, .fini = classes_done)
{
    static struct gs_kube_pod p;
    const char *ctr[] = {"C gpu=2"};
    pod_of(ctr, 1, &p);
    struct gs_draext x;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draext_build(&p, cls, 3, &x, &err), 0, "%s", err.msg);
    json_t *c = gs_draext_claim_json(&x, "trainer", p.uid);
    cr_assert(c);
    const json_t *md = json_object_get(c, "metadata");
    cr_expect_str_eq(json_string_value(
                         json_object_get(json_object_get(md, "annotations"), GS_DRAEXT_ANNOTATION)),
                     "true");
    const json_t *own = json_array_get(json_object_get(md, "ownerReferences"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(own, "kind")), "Pod");
    cr_expect_str_eq(json_string_value(json_object_get(own, "uid")), p.uid);
    cr_expect(json_is_true(json_object_get(own, "controller")));
    const json_t *r = json_array_get(
        json_object_get(json_object_get(json_object_get(c, "spec"), "devices"), "requests"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(r, "name")), "container-0-request-0");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(r, "exactly"), "count")), 2);
    /* the claim read back is the claim of the pod it names */
    struct gs_draobj_claim back;
    cr_assert_eq(gs_draobj_claim_read(c, &back, &err), 0, "%s", err.msg);
    cr_expect(back.extended);
    cr_expect_str_eq(back.owner_uid, p.uid);
    gs_draobj_claim_release(&back);
    json_decref(c);
    json_t *st = gs_draext_pod_status(&x);
    const json_t *es =
        json_object_get(json_object_get(st, "status"), "extendedResourceClaimStatus");
    cr_expect_str_eq(json_string_value(json_object_get(es, "resourceClaimName")), x.claim.name);
    const json_t *m = json_array_get(json_object_get(es, "requestMappings"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(m, "containerName")), "c0");
    cr_expect_str_eq(json_string_value(json_object_get(m, "resourceName")), "example.com/gpu");
    cr_expect_str_eq(json_string_value(json_object_get(m, "requestName")), "container-0-request-0");
    json_decref(st);
    gs_draext_release(&x);
}

/* ---------- in a cycle, on NVIDIA's slices ---------- */

static struct gs_draobj_slice sl;

static int32_t node_id(void *ctx, const char *node)
{
    (void)ctx;
    return strcmp(node, "nv-h100-0") == 0 ? 0 : -1;
}

/* node 0 (nv-h100-0) has no example.com/gpu allocatable; node 1 has 4 from a device plugin,
 * and example.com/gpu1 nowhere */
static int64_t alloc(void *ctx, int32_t node, const char *res)
{
    (void)ctx;
    return node == 1 && strcmp(res, "example.com/gpu") == 0 ? 4 : 0;
}

static void h100_slice(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/dra/nvidia/slices-h100.json", GS_SOURCE_DIR);
    json_t *l = json_load_file(path, 0, NULL);
    cr_assert(l);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_slice_read(json_array_get(json_object_get(l, "items"), 0), &sl, &err), 0,
                 "%s", err.msg);
    json_decref(l);
    classes();
}

static void h100_done(void)
{
    gs_draobj_slice_release(&sl);
    classes_done();
}

Test(draext, served_by_dra_where_the_node_has_none, .init = h100_slice, .fini = h100_done)
{
    static struct gs_tenants t;
    gs_tenants_init(&t);
    struct gs_dracycle cy;
    cr_assert_eq(gs_dracycle_init(&cy, cls, 3, &sl, 1, NULL, 0, false, 3, node_id, NULL), 0);
    gs_dracycle_set_alloc(&cy, alloc, NULL);
    static struct gs_kube_pod two, mixed, none;
    const char *c2[] = {"C gpu=2"}, *cm[] = {"C gpu=1,gpu1=1"}, *cn[] = {"C fpga=1"};
    pod_of(c2, 1, &two);
    pod_of(cm, 1, &mixed);
    pod_of(cn, 1, &none);
    struct gs_qvec q;
    char why[512] = "";
    cr_assert_eq(gs_dracycle_pod_prepare(&cy, 0, &two, &t, &q, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(gs_dracycle_pod_prepare(&cy, 1, &mixed, &t, &q, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(gs_dracycle_pod_prepare(&cy, 2, &none, &t, &q, why, sizeof(why)), 0, "%s", why);
    cr_expect_eq(gs_dracycle_pod_dra_res(&cy, 0, &two), 1u, "its example.com/gpu");
    cr_expect_eq(gs_dracycle_pod_dra_res(&cy, 2, &none), 0u, "no class backs example.com/fpga");
    /* node 0 by DRA (two of its seven untainted H100s), node 1 by its device plugin */
    cr_expect(gs_dracycle_pod_fits(&cy, 0, 0));
    cr_expect(gs_dracycle_pod_fits(&cy, 0, 1));
    /* some of both on node 1: neither serves the pod there; node 0 serves both by DRA */
    cr_expect_not(gs_dracycle_pod_fits(&cy, 1, 1));
    cr_expect(gs_dracycle_pod_fits(&cy, 1, 0));
    cr_assert_eq(gs_dracycle_pod_place(&cy, 0, 0), 0);
    const struct gs_dracycle_pod *p = cy.pods[0];
    cr_expect(p->x_used);
    cr_expect_eq(p->res[p->x_slot].n, 2);
    for (int r = 0; r < p->res[p->x_slot].n; r++)
        cr_expect_str_neq(cy.w.w.dev[p->res[p->x_slot].dev[r]].name, "gpu-7", "tainted");
    const struct gs_draobj_claim *xc = gs_dracycle_pod_claim(&cy, p, p->x_slot);
    cr_expect(xc->extended);
    cr_expect_str_eq(xc->owner_uid, two.uid);
    gs_dracycle_release(&cy);
    gs_tenants_release(&t);
}

Test(draext, a_claim_an_earlier_try_made_is_the_pods, .init = h100_slice, .fini = h100_done)
{
    static struct gs_tenants t;
    gs_tenants_init(&t);
    static struct gs_kube_pod two;
    const char *c2[] = {"C gpu=2"};
    pod_of(c2, 1, &two);
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ai\",\"name\":\"trainer-extended-resources-x\","
             "\"uid\":\"cu\",\"annotations\":{\"" GS_DRAEXT_ANNOTATION "\":\"true\"},"
             "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"trainer\","
             "\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"devices\":{\"requests\":[{"
             "\"name\":\"container-0-request-0\",\"exactly\":{\"deviceClassName\":\"class\","
             "\"count\":2}}]}},\"status\":{\"allocation\":{\"devices\":{\"results\":["
             "{\"request\":\"container-0-request-0\",\"driver\":\"gpu.nvidia.com\",\"pool\":"
             "\"nv-h100-0\",\"device\":\"gpu-4\"},{\"request\":\"container-0-request-0\","
             "\"driver\":\"gpu.nvidia.com\",\"pool\":\"nv-h100-0\",\"device\":\"gpu-5\"}]},"
             "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
             "\"metadata.name\",\"operator\":\"In\",\"values\":[\"nv-h100-0\"]}]}]}}}}",
             two.uid);
    json_t *o = json_of(buf);
    static struct gs_draobj_claim made[1];
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_claim_read(o, &made[0], &err), 0, "%s", err.msg);
    json_decref(o);
    struct gs_dracycle cy;
    cr_assert_eq(gs_dracycle_init(&cy, cls, 3, &sl, 1, made, 1, false, 1, node_id, NULL), 0);
    gs_dracycle_set_alloc(&cy, alloc, NULL);
    struct gs_qvec q;
    char why[512] = "";
    cr_assert_eq(gs_dracycle_pod_prepare(&cy, 0, &two, &t, &q, why, sizeof(why)), 0, "%s", why);
    const struct gs_dracycle_pod *p = cy.pods[0];
    cr_expect_eq(p->claim[p->x_slot], 0, "the claim made before");
    cr_expect_eq(p->node, 0, "its allocation fixes the node");
    cr_expect_not(gs_dracycle_pod_fits(&cy, 0, 1));
    cr_expect(gs_dracycle_pod_fits(&cy, 0, 0));
    gs_dracycle_release(&cy);
    gs_draobj_claim_release(&made[0]);
    gs_tenants_release(&t);
}
