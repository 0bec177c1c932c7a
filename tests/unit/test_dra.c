/* The DRA driver gpu.gpusched.io: formats/draslice (the ResourceSlices built from a node's
 * GPUs: whole GPUs, static MIG instances, partitionable GPUs whose placements consume shared
 * counters that admit exactly the layouts core/mig.c admits, the API's limits per slice) and
 * agent/dra (NodePrepareResources and NodeUnprepareResources answered without gRPC on the fake
 * GPU backend: dynamic MIG instances created and destroyed, CDI specs, the checkpoint, bad
 * requests). */
#include "agent/dra.h"
#include "agent/gpu.h"
#include "agent/grpcunary.h"
#include "base/error.h"
#include "core/catalog.h"
#include "core/mig.h"
#include "formats/draslice.h"

#include "dra.pb-c.h"
#include "pluginregistration.pb-c.h"

#include <criterion/criterion.h>
#include <grpc/status.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------- slices ---------- */

static struct gs_draslice_node node_of(const char *model, int ngpus, bool mig, bool dynamic)
{
    struct gs_draslice_node n;
    memset(&n, 0, sizeof(n));
    n.node = "gpu-node-1";
    n.node_uid = "0f6b1a7e-1111-2222-3333-444455556666";
    n.generation = 3;
    n.dynamic_mig = dynamic;
    n.ngpus = ngpus;
    for (int i = 0; i < ngpus; i++) {
        struct gs_draslice_gpu *g = &n.gpus[i];
        g->index = i;
        snprintf(g->uuid, sizeof(g->uuid), "GPU-%08d-aaaa-bbbb-cccc-dddddddddddd", i);
        g->model = gs_catalog_find(model);
        cr_assert_geq(g->model, 0, "model %s", model);
        g->mem_mib = gs_catalog_get(g->model)->mem_mib;
        g->mig_enabled = mig;
        g->healthy = true;
    }
    return n;
}

static json_t *build(const struct gs_draslice_node *n)
{
    struct gs_error err;
    gs_error_init(&err);
    json_t *s = gs_draslice_build(n, &err);
    cr_assert_not_null(s, "build: %s", err.msg);
    return s;
}

/* Every device of every slice, in order (borrowed references in a new array). */
static json_t *all_devices(const json_t *slices)
{
    json_t *out = json_array();
    size_t k, j;
    json_t *s, *d;
    json_array_foreach(slices, k, s)
    {
        json_array_foreach(json_object_get(json_object_get(s, "spec"), "devices"), j, d)
            json_array_append(out, d);
    }
    return out;
}

static json_t *find_device(const json_t *devs, const char *name)
{
    size_t k;
    json_t *d;
    json_array_foreach(
        devs, k, d) if (strcmp(json_string_value(json_object_get(d, "name")), name) == 0) return d;
    return NULL;
}

static const char *attr_s(const json_t *d, const char *name)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(d, "attributes"), name), "string"));
}

static json_int_t attr_i(const json_t *d, const char *name)
{
    return json_integer_value(
        json_object_get(json_object_get(json_object_get(d, "attributes"), name), "int"));
}

static const json_t *attr_b(const json_t *d, const char *name)
{
    return json_object_get(json_object_get(json_object_get(d, "attributes"), name), "bool");
}

static const char *cap(const json_t *d, const char *name)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(d, "capacity"), name), "value"));
}

/* What every slice must have: kind, generateName, owner, driver, node, pool. */
static void check_common(const json_t *slices, const struct gs_draslice_node *n)
{
    size_t k;
    json_t *s;
    json_array_foreach(slices, k, s)
    {
        cr_assert_str_eq(json_string_value(json_object_get(s, "apiVersion")), "resource.k8s.io/v1");
        cr_assert_str_eq(json_string_value(json_object_get(s, "kind")), "ResourceSlice");
        json_t *meta = json_object_get(s, "metadata"), *spec = json_object_get(s, "spec");
        cr_assert_str_eq(json_string_value(json_object_get(meta, "generateName")),
                         "gpu-node-1-gpu.gpusched.io-");
        json_t *own = json_array_get(json_object_get(meta, "ownerReferences"), 0);
        cr_assert_str_eq(json_string_value(json_object_get(own, "kind")), "Node");
        cr_assert_str_eq(json_string_value(json_object_get(own, "uid")), n->node_uid);
        cr_assert(json_is_true(json_object_get(own, "controller")));
        cr_assert_str_eq(json_string_value(json_object_get(spec, "driver")), "gpu.gpusched.io");
        cr_assert_str_eq(json_string_value(json_object_get(spec, "nodeName")), "gpu-node-1");
        json_t *pool = json_object_get(spec, "pool");
        cr_assert_str_eq(json_string_value(json_object_get(pool, "name")), "gpu-node-1");
        cr_assert_eq(json_integer_value(json_object_get(pool, "generation")), n->generation);
        cr_assert_eq(json_integer_value(json_object_get(pool, "resourceSliceCount")),
                     (json_int_t)json_array_size(slices), "resourceSliceCount %lld of %zu slices",
                     json_integer_value(json_object_get(pool, "resourceSliceCount")),
                     json_array_size(slices));
        json_t *devs = json_object_get(spec, "devices"),
               *sets = json_object_get(spec, "sharedCounters");
        cr_assert(!devs != !sets, "slice %zu: exactly one of devices and sharedCounters", k);
        cr_assert_leq(json_array_size(devs), 64, "slice %zu: %zu devices", k,
                      json_array_size(devs));
        cr_assert_leq(json_array_size(sets), 8, "slice %zu: %zu counter sets", k,
                      json_array_size(sets));
        size_t j;
        json_t *d;
        json_array_foreach(devs, j, d)
        {
            const char *name = json_string_value(json_object_get(d, "name"));
            cr_assert_leq(strlen(name), 63);
            for (const char *c = name; *c; c++)
                cr_assert((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-',
                          "device name '%s' is not a DNS label", name);
            cr_assert_leq(json_object_size(json_object_get(d, "attributes")) +
                              json_object_size(json_object_get(d, "capacity")),
                          32);
        }
    }
}

Test(draslice, whole_gpu)
{
    struct gs_draslice_node n = node_of("H200-141GB", 2, false, false);
    json_t *s = build(&n);
    check_common(s, &n);
    cr_assert_eq(json_array_size(s), 1);
    json_t *devs = all_devices(s);
    cr_assert_eq(json_array_size(devs), 2);
    json_t *d = find_device(devs, "gpu-1");
    cr_assert_not_null(d);
    cr_assert_str_eq(attr_s(d, "type"), "gpu");
    cr_assert_str_eq(attr_s(d, "uuid"), n.gpus[1].uuid);
    cr_assert_str_eq(attr_s(d, "productName"), "H200-141GB");
    cr_assert_eq(attr_i(d, "index"), 1);
    cr_assert(json_is_false(attr_b(d, "mig")));
    char mem[32];
    snprintf(mem, sizeof(mem), "%llu", (unsigned long long)n.gpus[1].mem_mib << 20);
    cr_assert_str_eq(cap(d, "memory"), mem);
    cr_assert_null(json_object_get(d, "consumesCounters"));
    cr_assert_null(json_object_get(d, "taints"));
    json_decref(devs);
    json_decref(s);
}

Test(draslice, static_mig_instances)
{
    struct gs_draslice_node n = node_of("A100-80GB", 2, true, false);
    int m = n.gpus[0].model;
    int p3 = gs_catalog_find_profile(m, "3g.40gb");
    n.gpus[0].ninst = 2;
    n.gpus[0].inst[0] = (struct gs_draslice_inst){.profile = (uint8_t)p3, .start = 4};
    n.gpus[0].inst[1] = (struct gs_draslice_inst){.profile = (uint8_t)p3, .start = 0};
    snprintf(n.gpus[0].inst[0].uuid, 96, "MIG-aaaa-4");
    snprintf(n.gpus[0].inst[1].uuid, 96, "MIG-aaaa-0");
    n.gpus[1].mig_enabled = false;
    n.dynamic_mig = false;
    json_t *s = build(&n);
    check_common(s, &n);
    json_t *devs = all_devices(s);
    cr_assert_eq(json_array_size(devs), 3, "two instances and the whole GPU 1: %zu",
                 json_array_size(devs));
    cr_assert_null(find_device(devs, "gpu-0"), "a GPU in MIG mode is not offered whole");
    json_t *d = find_device(devs, "gpu-0-mig-3g-40gb-4");
    cr_assert_not_null(d);
    cr_assert_str_eq(attr_s(d, "type"), "mig");
    cr_assert_str_eq(attr_s(d, "profile"), "3g.40gb");
    cr_assert_str_eq(attr_s(d, "uuid"), "MIG-aaaa-4");
    cr_assert_str_eq(attr_s(d, "parentUUID"), n.gpus[0].uuid);
    cr_assert_eq(attr_i(d, "parentIndex"), 0);
    cr_assert_eq(attr_i(d, "placementStart"), 4);
    cr_assert_str_eq(attr_s(d, "productName"), "A100-80GB");
    cr_assert_str_eq(cap(d, "memory"), "42144366592"); /* 40192 MiB */
    cr_assert_str_eq(cap(d, "multiprocessors"), "42");
    cr_assert(json_is_false(attr_b(d, "dynamic")), "a static instance says dynamic = false");
    cr_assert_null(json_object_get(d, "consumesCounters"));
    cr_assert_not_null(find_device(devs, "gpu-0-mig-3g-40gb-0"));
    cr_assert_not_null(find_device(devs, "gpu-1"));
    json_decref(devs);
    json_decref(s);
}

/* ---- the counters of a partitionable GPU ---- */

struct counters {
    int n;
    char name[40][40];
    long long cap[40], used[40];
};

static int counter_index(struct counters *c, const char *name)
{
    for (int k = 0; k < c->n; k++)
        if (strcmp(c->name[k], name) == 0)
            return k;
    return -1;
}

static void read_set(const json_t *slices, const char *set, struct counters *c)
{
    memset(c, 0, sizeof(*c));
    size_t k, j;
    json_t *s, *cs;
    json_array_foreach(slices, k, s)
    {
        json_array_foreach(json_object_get(json_object_get(s, "spec"), "sharedCounters"), j, cs)
        {
            if (strcmp(json_string_value(json_object_get(cs, "name")), set) != 0)
                continue;
            const char *key;
            json_t *v;
            json_object_foreach(json_object_get(cs, "counters"), key, v)
            {
                snprintf(c->name[c->n], sizeof(c->name[0]), "%s", key);
                c->cap[c->n++] = atoll(json_string_value(json_object_get(v, "value")));
            }
            return;
        }
    }
    cr_assert_fail("no counter set %s", set);
}

/* Add (sign 1) or take back (-1) what device d consumes; true when every counter fits. */
static bool consume(struct counters *c, const json_t *d, int sign)
{
    bool fits = true;
    size_t k;
    json_t *cc;
    json_array_foreach(json_object_get(d, "consumesCounters"), k, cc)
    {
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(cc, "counters"), key, v)
        {
            int x = counter_index(c, key);
            cr_assert_geq(x, 0, "%s consumes unknown counter %s",
                          json_string_value(json_object_get(d, "name")), key);
            c->used[x] += sign * atoll(json_string_value(json_object_get(v, "value")));
            fits &= c->used[x] <= c->cap[x];
        }
    }
    return fits;
}

struct walk {
    int model;
    int n;
    json_t *dev[64];
    int profile[64], start[64];
    struct counters c;
    struct gs_mig_placement pl;
    long checked;
};

/* Every set of placements that either the counters or gs_mig_placement_valid admit: both must
 * agree (each relation is closed under taking subsets, so the walk stops where both refuse). */
static void walk(struct walk *w, int from)
{
    for (int i = from; i < w->n; i++) {
        bool fits = consume(&w->c, w->dev[i], 1);
        bool valid = false, pushed = false;
        if (w->pl.n < GS_MIG_COMPUTE_MAX) { /* more instances than that are never valid */
            w->pl.inst[w->pl.n].profile = (uint8_t)w->profile[i];
            w->pl.inst[w->pl.n].start = (uint8_t)w->start[i];
            w->pl.n++;
            pushed = true;
            valid = gs_mig_placement_valid(w->model, &w->pl);
        }
        w->checked++;
        cr_assert_eq(fits, valid, "%s: adding %s (%d placements): counters %s, mig.c %s",
                     gs_catalog_get(w->model)->name,
                     json_string_value(json_object_get(w->dev[i], "name")), w->pl.n,
                     fits ? "fit" : "refuse", valid ? "valid" : "invalid");
        if (fits && valid)
            walk(w, i + 1);
        if (pushed)
            w->pl.n--;
        consume(&w->c, w->dev[i], -1);
    }
}

static void check_partitionable(const char *model)
{
    struct gs_draslice_node n = node_of(model, 2, true, true);
    int m = n.gpus[0].model;
    const struct gs_gpu_model *gm = gs_catalog_get(m);
    /* GPU 1 holds a dynamic instance: still partitionable, the same devices */
    n.gpus[1].ninst = 1;
    n.gpus[1].inst[0] = (struct gs_draslice_inst){.profile = 0, .start = 0, .dynamic = true};
    json_t *s = build(&n);
    check_common(s, &n);
    json_t *devs = all_devices(s);
    int placements = 0;
    for (int p = 0; p < gm->nprofiles; p++)
        for (int st = 0; st < gm->mig_mem; st++)
            placements += (gm->profiles[p].start_mask >> st) & 1;
    cr_assert_eq(json_array_size(devs), (size_t)(2 * (placements + 1)),
                 "%s: %zu devices, expected 2 x (%d placements + the whole GPU)", model,
                 json_array_size(devs), placements);
    struct walk w;
    memset(&w, 0, sizeof(w));
    w.model = m;
    read_set(s, "gpu-0-counters", &w.c);
    int ci = counter_index(&w.c, "compute-slices");
    cr_assert_geq(ci, 0);
    cr_assert_eq(w.c.cap[ci], gm->mig_compute);
    json_t *whole = find_device(devs, "gpu-0");
    cr_assert_not_null(whole);
    cr_assert(json_is_true(attr_b(whole, "mig")));
    cr_assert(consume(&w.c, whole, 1), "the whole GPU fits the empty GPU");
    for (int k = 0; k < w.c.n; k++)
        cr_assert(strstr(w.c.name[k], "-instances") || w.c.used[k] == w.c.cap[k],
                  "the whole GPU takes all of %s", w.c.name[k]);
    consume(&w.c, whole, -1);
    for (int p = 0; p < gm->nprofiles; p++) {
        const struct gs_mig_profile *pr = &gm->profiles[p];
        for (int st = 0; st < gm->mig_mem; st++) {
            if (!((pr->start_mask >> st) & 1))
                continue;
            char name[64];
            gs_draslice_device_name(GS_DRA_PART, 0, m, p, st, name, sizeof(name));
            json_t *d = find_device(devs, name);
            cr_assert_not_null(d, "%s: no device %s", model, name);
            cr_assert_str_eq(attr_s(d, "type"), "mig");
            cr_assert_str_eq(attr_s(d, "profile"), pr->name);
            cr_assert_eq(attr_i(d, "placementStart"), st);
            cr_assert(json_is_true(attr_b(d, "dynamic")));
            cr_assert_str_eq(attr_s(d, "parentUUID"), n.gpus[0].uuid);
            /* exactly its compute and its memory slices */
            cr_assert(consume(&w.c, d, 1));
            cr_assert_eq(w.c.used[ci], pr->compute, "%s compute %lld", name, w.c.used[ci]);
            for (int ms = 0; ms < gm->mig_mem; ms++) {
                char cn[32];
                snprintf(cn, sizeof(cn), "memory-slice-%d", ms);
                int x = counter_index(&w.c, cn);
                cr_assert_geq(x, 0);
                cr_assert_eq(w.c.used[x], ms >= st && ms < st + pr->mem_slices, "%s %s = %lld",
                             name, cn, w.c.used[x]);
            }
            /* nothing else fits beside the whole GPU */
            cr_assert_not(consume(&w.c, whole, 1), "%s beside the whole GPU", name);
            consume(&w.c, whole, -1);
            consume(&w.c, d, -1);
            w.dev[w.n] = d;
            w.profile[w.n] = p;
            w.start[w.n++] = st;
        }
    }
    walk(&w, 0);
    cr_assert_gt(w.checked, 100);
    /* the devices of GPU 1 consume GPU 1's set */
    json_t *d1 = find_device(devs, "gpu-1");
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(d1, "consumesCounters"), 0), "counterSet")),
                     "gpu-1-counters");
    json_decref(devs);
    json_decref(s);
}

Test(draslice, partitionable_a100)
{
    check_partitionable("A100-80GB");
}

Test(draslice, partitionable_h100)
{
    check_partitionable("H100-80GB");
}

Test(draslice, partitionable_every_mig_model)
{
    for (int m = 0; m < gs_catalog_count(); m++)
        if (gs_catalog_mig_capable(m))
            check_partitionable(gs_catalog_get(m)->name);
}

Test(draslice, static_gpu_is_not_partitionable)
{
    struct gs_draslice_node n = node_of("A100-80GB", 1, true, true);
    n.gpus[0].ninst = 1;
    n.gpus[0].inst[0] = (struct gs_draslice_inst){.profile = 0, .start = 0, .dynamic = false};
    snprintf(n.gpus[0].inst[0].uuid, 96, "MIG-static");
    json_t *s = build(&n);
    json_t *devs = all_devices(s);
    cr_assert_eq(json_array_size(devs), 1);
    cr_assert_not_null(find_device(devs, "gpu-0-mig-1g-10gb-0"));
    cr_assert_eq(json_array_size(s), 1, "no counter slice");
    json_decref(devs);
    json_decref(s);
}

Test(draslice, limits_split_slices)
{
    struct gs_draslice_node n = node_of("A100-80GB", 16, false, true);
    json_t *s = build(&n);
    check_common(s, &n); /* <= 64 devices and <= 8 counter sets per slice */
    json_t *devs = all_devices(s);
    cr_assert_eq(json_array_size(devs), 16 * 26);
    int counter_slices = 0;
    size_t k;
    json_t *x;
    json_array_foreach(s, k, x) counter_slices +=
        json_object_get(json_object_get(x, "spec"), "sharedCounters") != NULL;
    cr_assert_eq(counter_slices, 2);
    cr_assert_eq(json_array_size(s), 2 + (16 * 26 + 63) / 64);
    /* counter slices come first */
    cr_assert_not_null(
        json_object_get(json_object_get(json_array_get(s, 0), "spec"), "sharedCounters"));
    json_decref(devs);
    json_decref(s);
}

Test(draslice, unhealthy_gpu_is_tainted)
{
    struct gs_draslice_node n = node_of("A100-80GB", 2, false, true);
    n.gpus[1].healthy = false;
    json_t *s = build(&n);
    json_t *devs = all_devices(s);
    size_t k;
    json_t *d;
    json_array_foreach(devs, k, d)
    {
        bool on1 = strncmp(json_string_value(json_object_get(d, "name")), "gpu-1", 5) == 0;
        json_t *t = json_array_get(json_object_get(d, "taints"), 0);
        cr_assert_eq(t != NULL, on1, "%s", json_string_value(json_object_get(d, "name")));
        if (t) {
            cr_assert_str_eq(json_string_value(json_object_get(t, "key")),
                             "gpu.gpusched.io/unhealthy");
            cr_assert_str_eq(json_string_value(json_object_get(t, "effect")), "NoSchedule");
        }
    }
    json_decref(devs);
    json_decref(s);
}

Test(draslice, empty_pool_has_one_slice)
{
    struct gs_draslice_node n = node_of("A100-80GB", 0, false, false);
    json_t *s = build(&n);
    cr_assert_eq(json_array_size(s), 1);
    cr_assert_eq(
        json_array_size(json_object_get(json_object_get(json_array_get(s, 0), "spec"), "devices")),
        0);
    json_decref(s);
}

Test(draslice, bad_nodes_refused)
{
    struct gs_error err;
    gs_error_init(&err);
    struct gs_draslice_node n = node_of("A100-80GB", 2, false, false);
    n.gpus[1].index = 0;
    cr_assert_null(gs_draslice_build(&n, &err));
    cr_assert_eq(err.code, GS_EINVAL);
    cr_assert(strstr(err.msg, "twice"), "%s", err.msg);
    n = node_of("A100-80GB", 1, false, false);
    n.node = "";
    cr_assert_null(gs_draslice_build(&n, &err));
}

Test(draslice, names_round_trip)
{
    for (int m = 0; m < gs_catalog_count(); m++) {
        const struct gs_gpu_model *gm = gs_catalog_get(m);
        char seen[GS_MIG_MAX_PROFILES][64];
        for (int p = 0; p < gm->nprofiles; p++) {
            char name[64];
            gs_draslice_device_name(GS_DRA_PART, 15, m, p, 6, name, sizeof(name));
            snprintf(seen[p], sizeof(seen[p]), "%s", name);
            for (int q = 0; q < p; q++)
                cr_assert_str_neq(seen[q], name, "%s: two profiles spelt %s", gm->name, name);
            struct gs_dra_devref r;
            struct gs_error err;
            cr_assert_eq(gs_draslice_parse_name(name, &r, &err), 0, "%s: %s", name, err.msg);
            cr_assert_eq(r.kind, GS_DRA_PART);
            cr_assert_eq(r.gpu, 15);
            cr_assert_eq(r.start, 6);
            cr_assert_eq(gs_draslice_find_profile(m, r.profile), p, "%s", name);
        }
    }
    struct gs_dra_devref r;
    struct gs_error err;
    cr_assert_eq(gs_draslice_parse_name("gpu-3", &r, &err), 0);
    cr_assert_eq(r.kind, GS_DRA_GPU);
    cr_assert_eq(gs_draslice_parse_name("gpu-0-mig-3g-40gb-4", &r, &err), 0);
    cr_assert_eq(r.kind, GS_DRA_MIG);
    cr_assert_str_eq(r.profile, "3g-40gb");
    const char *bad[] = {"gpu-",
                         "gpu-x",
                         "gpu-01",
                         "gpu-16",
                         "gpu-0-mig-",
                         "gpu-0-mig-3g-40gb",
                         "gpu-0-mig-3g-40gb-8",
                         "gpu-0-mig--4",
                         "gpu-0-foo-3g-40gb-4",
                         "nvidia-0",
                         "gpu-0-part-3g-40gb-4x",
                         ""};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
        cr_assert_neq(gs_draslice_parse_name(bad[k], &r, &err), 0, "'%s' accepted", bad[k]);
}

/* ---------- prepare and unprepare, on the fake backend ---------- */

/* The claims the API would serve: name -> object. */
static json_t *api_claims;

static int get_claim(void *user, const char *ns, const char *name, json_t **out,
                     struct gs_error *err)
{
    (void)user;
    cr_assert_str_eq(ns, "team-a");
    json_t *c = json_object_get(api_claims, name);
    if (!c)
        return gs_error_set(err, GS_ENOTFOUND, "404 Not Found");
    *out = json_incref(c);
    return 0;
}

/* An allocated claim of our driver: results "<request>=<device>" (pool gpu-node-1). */
static void put_claim(const char *name, const char *uid, const char *pool, int n,
                      const char *const *devs)
{
    json_t *res = json_array();
    for (int k = 0; k < n; k++)
        json_array_append_new(res, json_pack("{s:s,s:s,s:s,s:s}", "request", "gpu", "driver",
                                             "gpu.gpusched.io", "pool", pool, "device", devs[k]));
    json_array_append_new(res, json_pack("{s:s,s:s,s:s,s:s}", "request", "nic", "driver",
                                         "other.example.com", "pool", "x", "device", "nic-0"));
    json_object_set_new(api_claims, name,
                        json_pack("{s:{s:s,s:s,s:s},s:{s:{s:{s:o}}}}", "metadata", "name", name,
                                  "namespace", "team-a", "uid", uid, "status", "allocation",
                                  "devices", "results", res));
}

struct env {
    char dir[128], fake[200], plugins[200], registry[200], cdi[200];
    struct gs_gpu_backend *b;
    struct gs_dra *d;
};

static void env_open(struct env *e, const char *gpus_json, bool dynamic)
{
    snprintf(e->dir, sizeof(e->dir), "/tmp/gs-test-dra-XXXXXX");
    cr_assert_not_null(mkdtemp(e->dir));
    snprintf(e->fake, sizeof(e->fake), "%s/gpus.json", e->dir);
    snprintf(e->plugins, sizeof(e->plugins), "%s/plugins", e->dir);
    snprintf(e->registry, sizeof(e->registry), "%s/plugins_registry", e->dir);
    snprintf(e->cdi, sizeof(e->cdi), "%s/cdi", e->dir);
    FILE *f = fopen(e->fake, "w");
    fputs(gpus_json, f);
    fclose(f);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_gpu_open_fake(e->fake, &e->b, &err), 0, "%s", err.msg);
    struct gs_dra_opts o = {.node = "gpu-node-1",
                            .plugins_dir = e->plugins,
                            .registry_dir = e->registry,
                            .cdi_dir = e->cdi,
                            .dynamic_mig = dynamic,
                            .get_claim = get_claim};
    cr_assert_eq(gs_dra_new(&o, e->b, NULL, &e->d, &err), 0, "%s", err.msg);
    if (!api_claims)
        api_claims = json_object();
}

static void env_restart(struct env *e, bool dynamic)
{
    gs_dra_free(e->d);
    struct gs_error err;
    gs_error_init(&err);
    struct gs_dra_opts o = {.node = "gpu-node-1",
                            .plugins_dir = e->plugins,
                            .registry_dir = e->registry,
                            .cdi_dir = e->cdi,
                            .dynamic_mig = dynamic,
                            .get_claim = get_claim};
    cr_assert_eq(gs_dra_new(&o, e->b, NULL, &e->d, &err), 0, "%s", err.msg);
}

static void env_close(struct env *e)
{
    gs_dra_free(e->d);
    gs_gpu_close(e->b);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
    cr_assert_eq(system(cmd), 0);
    json_decref(api_claims);
    api_claims = NULL;
}

#define A100_MIG_EMPTY                                                                             \
    "{\"gpus\":[{\"model\":\"A100-80GB\",\"uuid\":\"GPU-a0a0a0a0-0000\",\"mig\":true},"            \
    "{\"model\":\"A100-80GB\",\"uuid\":\"GPU-a1a1a1a1-1111\",\"mig\":false}]}"

typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse prep_resp;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse unprep_resp;

static uint8_t *pack_claims(bool prepare, int n, const char *const *names, const char *const *uids,
                            size_t *len)
{
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim c[8], *cp[8];
    for (int k = 0; k < n; k++) {
        k8s__io__kubelet__pkg__apis__dra__v1__claim__init(&c[k]);
        c[k].namespace_ = "team-a";
        c[k].name = (char *)names[k];
        c[k].uid = (char *)uids[k];
        cp[k] = &c[k];
    }
    uint8_t *b;
    if (prepare) {
        K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesRequest r =
            K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_REQUEST__INIT;
        r.n_claims = (size_t)n;
        r.claims = cp;
        *len =
            k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__get_packed_size(
                &r);
        b = malloc(*len + 1);
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__pack(&r, b);
    } else {
        K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesRequest r =
            K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_REQUEST__INIT;
        r.n_claims = (size_t)n;
        r.claims = cp;
        *len =
            k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__get_packed_size(
                &r);
        b = malloc(*len + 1);
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__pack(&r, b);
    }
    return b;
}

static prep_resp *prepare(struct gs_dra *d, int n, const char *const *names,
                          const char *const *uids)
{
    size_t len, olen;
    uint8_t *in = pack_claims(true, n, names, uids, &len), *out = NULL;
    char why[512];
    int code = gs__dra_answer(d, GS_DRA_PREPARE, in, len, &out, &olen, why, sizeof(why));
    free(in);
    cr_assert_eq(code, GRPC_STATUS_OK, "prepare: %d %s", code, why);
    prep_resp *r = k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__unpack(
        NULL, olen, out);
    free(out);
    cr_assert_not_null(r);
    cr_assert_eq(r->n_claims, (size_t)n, "every claim answered");
    return r;
}

static void prep_free(prep_resp *r)
{
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__free_unpacked(r, NULL);
}

static K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse *entry(prep_resp *r,
                                                                                const char *uid)
{
    for (size_t k = 0; k < r->n_claims; k++)
        if (strcmp(r->claims[k]->key, uid) == 0)
            return r->claims[k]->value;
    cr_assert_fail("claim %s not in the answer", uid);
    return NULL;
}

static const char *unprepare(struct gs_dra *d, const char *name, const char *uid)
{
    static char msg[1024];
    size_t len, olen;
    uint8_t *in = pack_claims(false, 1, &name, &uid, &len), *out = NULL;
    char why[512];
    int code = gs__dra_answer(d, GS_DRA_UNPREPARE, in, len, &out, &olen, why, sizeof(why));
    free(in);
    cr_assert_eq(code, GRPC_STATUS_OK, "unprepare: %d %s", code, why);
    unprep_resp *r =
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__unpack(NULL, olen,
                                                                                        out);
    free(out);
    cr_assert_eq(r->n_claims, 1);
    cr_assert_str_eq(r->claims[0]->key, uid);
    snprintf(msg, sizeof(msg), "%s", r->claims[0]->value->error);
    k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__free_unpacked(r, NULL);
    return msg;
}

static int instances(struct gs_gpu_backend *b, int gpu, struct gs_mig_inst *inst)
{
    return b->ops->mig_list(b, gpu, inst, GS_AGENT_MAX_INST);
}

static json_t *read_json(const char *path)
{
    json_error_t je;
    return json_load_file(path, 0, &je);
}

Test(dra, get_info)
{
    struct env e;
    env_open(&e, A100_MIG_EMPTY, true);
    uint8_t *out = NULL;
    size_t len;
    char why[256];
    cr_assert_eq(gs__dra_answer(e.d, GS_DRA_GET_INFO, NULL, 0, &out, &len, why, sizeof(why)), 0);
    Pluginregistration__PluginInfo *pi = pluginregistration__plugin_info__unpack(NULL, len, out);
    cr_assert_str_eq(pi->type, "DRAPlugin");
    cr_assert_str_eq(pi->name, "gpu.gpusched.io");
    char ep[300];
    snprintf(ep, sizeof(ep), "%s/gpu.gpusched.io/dra.sock", e.plugins);
    cr_assert_str_eq(pi->endpoint, ep);
    cr_assert_eq(pi->n_supported_versions, 1);
    cr_assert_str_eq(pi->supported_versions[0], "v1.DRAPlugin");
    pluginregistration__plugin_info__free_unpacked(pi, NULL);
    free(out);
    env_close(&e);
}

Test(dra, prepare_dynamic_placement_creates_instance_and_cdi)
{
    struct env e;
    env_open(&e, A100_MIG_EMPTY, true);
    const char *dev[] = {"gpu-0-part-3g-40gb-4"};
    put_claim("c1", "uid-1", "gpu-node-1", 1, dev);
    const char *names[] = {"c1"}, *uids[] = {"uid-1"};
    prep_resp *r = prepare(e.d, 1, names, uids);
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse *x = entry(r, "uid-1");
    cr_assert_str_eq(x->error, "");
    cr_assert_eq(x->n_devices, 1, "only our driver's result");
    cr_assert_str_eq(x->devices[0]->device_name, "gpu-0-part-3g-40gb-4");
    cr_assert_str_eq(x->devices[0]->pool_name, "gpu-node-1");
    cr_assert_str_eq(x->devices[0]->request_names[0], "gpu");
    cr_assert_str_eq(x->devices[0]->cdi_device_ids[0],
                     "gpu.gpusched.io/gpu=uid-1-gpu-0-part-3g-40gb-4");
    prep_free(r);
    struct gs_mig_inst in[GS_AGENT_MAX_INST];
    cr_assert_eq(instances(e.b, 0, in), 1);
    cr_assert_eq(in[0].start, 4);
    cr_assert_eq(in[0].profile_id, 9);
    /* the CDI spec */
    char path[300], env[200];
    snprintf(path, sizeof(path), "%s/gpu.gpusched.io-uid-1.json", e.cdi);
    json_t *cdi = read_json(path);
    cr_assert_not_null(cdi, "no CDI spec %s", path);
    cr_assert_str_eq(json_string_value(json_object_get(cdi, "cdiVersion")), "0.6.0");
    cr_assert_str_eq(json_string_value(json_object_get(cdi, "kind")), "gpu.gpusched.io/gpu");
    json_t *d0 = json_array_get(json_object_get(cdi, "devices"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(d0, "name")), "uid-1-gpu-0-part-3g-40gb-4");
    snprintf(env, sizeof(env), "NVIDIA_VISIBLE_DEVICES=%s", in[0].uuid);
    cr_assert_str_eq(json_string_value(json_array_get(
                         json_object_get(json_object_get(d0, "containerEdits"), "env"), 0)),
                     env);
    json_decref(cdi);
    /* the instance is in use for the MIG manager */
    char uuids[4][96];
    cr_assert_eq(gs_dra_in_use(e.d, uuids, 4), 1);
    cr_assert_str_eq(uuids[0], in[0].uuid);
    /* again: the same answer, no second instance */
    r = prepare(e.d, 1, names, uids);
    cr_assert_str_eq(entry(r, "uid-1")->devices[0]->device_name, "gpu-0-part-3g-40gb-4");
    prep_free(r);
    cr_assert_eq(instances(e.b, 0, in), 1);
    /* the slices keep the GPU partitionable: its instance is the driver's own */
    struct gs_error err;
    cr_assert_eq(gs_dra_sync(e.d, NULL, 0, &err), 0);
    json_t *s = gs__dra_slices(e.d), *devs = all_devices(s);
    cr_assert_not_null(find_device(devs, "gpu-0-part-1g-10gb-0"));
    cr_assert_null(find_device(devs, "gpu-0-mig-3g-40gb-4"));
    json_decref(devs);
    json_decref(s);
    /* a restart reads the checkpoint: prepared, nothing made twice */
    env_restart(&e, true);
    cr_assert_eq(gs_dra_prepared(e.d), 1);
    r = prepare(e.d, 1, names, uids);
    cr_assert_str_eq(entry(r, "uid-1")->error, "");
    prep_free(r);
    cr_assert_eq(instances(e.b, 0, in), 1);
    /* unprepare: the instance goes, the CDI spec too */
    cr_assert_str_eq(unprepare(e.d, "c1", "uid-1"), "");
    cr_assert_eq(instances(e.b, 0, in), 0);
    cr_assert_neq(access(path, F_OK), 0, "CDI spec left behind");
    cr_assert_eq(gs_dra_prepared(e.d), 0);
    /* and again: nothing to do, still answered */
    cr_assert_str_eq(unprepare(e.d, "c1", "uid-1"), "");
    env_restart(&e, true);
    cr_assert_eq(gs_dra_prepared(e.d), 0);
    env_close(&e);
}

Test(dra, overlapping_placement_refused_and_nothing_destroyed)
{
    struct env e;
    env_open(&e, A100_MIG_EMPTY, true);
    const char *d1[] = {"gpu-0-part-4g-40gb-0"},
               *d2[] = {"gpu-0-part-2g-20gb-2", "gpu-0-part-3g-40gb-4"};
    put_claim("c1", "uid-1", "gpu-node-1", 1, d1);
    put_claim("c2", "uid-2", "gpu-node-1", 2, d2);
    const char *names[] = {"c1", "c2"}, *uids[] = {"uid-1", "uid-2"};
    prep_resp *r = prepare(e.d, 2, names, uids);
    cr_assert_str_eq(entry(r, "uid-1")->error, "");
    const char *why = entry(r, "uid-2")->error;
    cr_assert(strstr(why, "gpu-0-part-2g-20gb-2") && strstr(why, "cannot be created"), "%s", why);
    prep_free(r);
    struct gs_mig_inst in[GS_AGENT_MAX_INST];
    cr_assert_eq(instances(e.b, 0, in), 1, "the 3g.40gb made for c2 was taken back");
    cr_assert_eq(in[0].profile_id, 5);
    char path[300];
    snprintf(path, sizeof(path), "%s/gpu.gpusched.io-uid-2.json", e.cdi);
    cr_assert_neq(access(path, F_OK), 0);
    env_close(&e);
}

Test(dra, whole_gpu_and_static_mig)
{
    struct env e;
    env_open(&e,
             "{\"gpus\":[{\"model\":\"A100-80GB\",\"uuid\":\"GPU-a0a0\",\"mig\":true},"
             "{\"model\":\"A100-80GB\",\"uuid\":\"GPU-a1a1\",\"mig\":true,\"instances\":"
             "[{\"profile\":\"3g.40gb\",\"start\":4}]}]}",
             true);
    const char *d1[] = {"gpu-0"}, *d2[] = {"gpu-1-mig-3g-40gb-4"};
    put_claim("c1", "uid-1", "gpu-node-1", 1, d1);
    put_claim("c2", "uid-2", "gpu-node-1", 1, d2);
    const char *names[] = {"c1", "c2"}, *uids[] = {"uid-1", "uid-2"};
    prep_resp *r = prepare(e.d, 2, names, uids);
    cr_assert_str_eq(entry(r, "uid-1")->error, "");
    cr_assert_str_eq(entry(r, "uid-2")->error, "");
    prep_free(r);
    struct gs_gpu_info info;
    e.b->ops->info(e.b, 0, &info);
    cr_assert_not(info.mig_enabled, "a whole GPU is taken out of MIG mode");
    char uuids[4][96];
    cr_assert_eq(gs_dra_in_use(e.d, uuids, 4), 2);
    cr_assert_str_eq(uuids[0], "GPU-a0a0");
    cr_assert(strncmp(uuids[1], "MIG-", 4) == 0, "%s", uuids[1]);
    cr_assert_str_eq(unprepare(e.d, "c2", "uid-2"), "");
    struct gs_mig_inst in[GS_AGENT_MAX_INST];
    cr_assert_eq(instances(e.b, 1, in), 1, "a static instance outlives its claim");
    env_close(&e);
}

Test(dra, bad_claims_get_errors)
{
    struct env e;
    env_open(&e, A100_MIG_EMPTY, false);
    const char *part[] = {"gpu-0-part-3g-40gb-4"}, *other[] = {"gpu-1"}, *bad[] = {"gpu-9"},
               *junk[] = {"tpu-0"};
    put_claim("nodyn", "uid-1", "gpu-node-1", 1, part);
    put_claim("elsewhere", "uid-2", "gpu-node-2", 1, other);
    put_claim("nogpu", "uid-3", "gpu-node-1", 1, bad);
    put_claim("junk", "uid-4", "gpu-node-1", 1, junk);
    put_claim("moved", "uid-other", "gpu-node-1", 1, other);
    json_object_set_new(api_claims, "unalloc", json_pack("{s:{s:s}}", "metadata", "uid", "uid-6"));
    const char *names[] = {"nodyn", "elsewhere", "nogpu", "junk", "moved", "unalloc", "gone"};
    const char *uids[] = {"uid-1", "uid-2", "uid-3", "uid-4", "uid-5", "uid-6", "uid-7"};
    const char *want[] = {
        "dynamic MIG is off",        "not of this node", "no GPU 9", "not a gpu.gpusched.io device",
        "deleted and created again", "not allocated",    "404"};
    prep_resp *r = prepare(e.d, 7, names, uids);
    for (int k = 0; k < 7; k++) {
        const char *why = entry(r, uids[k])->error;
        cr_assert(strstr(why, want[k]), "claim %s: '%s', expected '%s'", names[k], why, want[k]);
        cr_assert_eq(entry(r, uids[k])->n_devices, 0);
    }
    prep_free(r);
    cr_assert_eq(gs_dra_prepared(e.d), 0);
    env_close(&e);
}

Test(dra, malformed_requests)
{
    struct env e;
    env_open(&e, A100_MIG_EMPTY, true);
    uint8_t junk[] = {0x0a, 0x50, 0x01}, *out = NULL;
    size_t len;
    char why[256];
    cr_assert_eq(
        gs__dra_answer(e.d, GS_DRA_PREPARE, junk, sizeof(junk), &out, &len, why, sizeof(why)),
        GRPC_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(why, "does not decode"), "%s", why);
    cr_assert_null(out);
    const char *names[] = {"a", "b"}, *uids[] = {"u", "u"};
    uint8_t *in = pack_claims(true, 2, names, uids, &len);
    cr_assert_eq(gs__dra_answer(e.d, GS_DRA_PREPARE, in, len, &out, &len, why, sizeof(why)),
                 GRPC_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(why, "twice"), "%s", why);
    free(in);
    const char *n2[] = {"../etc"}, *u2[] = {"u"};
    in = pack_claims(false, 1, n2, u2, &len);
    cr_assert_eq(gs__dra_answer(e.d, GS_DRA_UNPREPARE, in, len, &out, &len, why, sizeof(why)),
                 GRPC_STATUS_INVALID_ARGUMENT);
    free(in);
    env_close(&e);
}

Test(dra, bad_checkpoint_refused)
{
    struct env e;
    env_open(&e, A100_MIG_EMPTY, true);
    gs_dra_free(e.d);
    char path[300];
    snprintf(path, sizeof(path), "%s/gpu.gpusched.io/checkpoint.json", e.plugins);
    FILE *f = fopen(path, "w");
    fputs("{\"v\":1,\"claims\":[{\"uid\":\"u\",\"namespace\":\"n\",\"name\":\"c\",\"devices\":"
          "[{\"request\":\"r\",\"device\":\"gpu-0-zzz\",\"uuid\":\"x\",\"gpu\":0,\"gi\":1,"
          "\"created\":true}]}]}",
          f);
    fclose(f);
    struct gs_error err;
    gs_error_init(&err);
    struct gs_dra_opts o = {.node = "gpu-node-1",
                            .plugins_dir = e.plugins,
                            .registry_dir = e.registry,
                            .cdi_dir = e.cdi};
    cr_assert_eq(gs_dra_new(&o, e.b, NULL, &e.d, &err), GS_EINVAL);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, "claims[0].devices[0]"), "%s", err.msg);
    e.d = NULL;
    env_close(&e);
}

/* Over the real sockets: the kubelet's calls through gRPC core. */
Test(dra, served_over_sockets)
{
    struct env e;
    env_open(&e, A100_MIG_EMPTY, true);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_dra_serve(e.d, &err), 0, "%s", err.msg);
    char reg[300], sock[300], why[512];
    snprintf(reg, sizeof(reg), "%s/gpu.gpusched.io-reg.sock", e.registry);
    snprintf(sock, sizeof(sock), "%s/gpu.gpusched.io/dra.sock", e.plugins);
    uint8_t *out = NULL;
    size_t len = 0;
    cr_assert_eq(gs_grpc_unary(reg, "/pluginregistration.Registration/GetInfo", NULL, 0, 10, &out,
                               &len, why, sizeof(why)),
                 0, "%s", why);
    Pluginregistration__PluginInfo *pi = pluginregistration__plugin_info__unpack(NULL, len, out);
    cr_assert_str_eq(pi->endpoint, sock);
    pluginregistration__plugin_info__free_unpacked(pi, NULL);
    free(out);
    const char *dev[] = {"gpu-1-part-1g-10gb-6"};
    put_claim("c1", "uid-1", "gpu-node-1", 1, dev);
    const char *names[] = {"c1"}, *uids[] = {"uid-1"};
    size_t rl;
    uint8_t *req = pack_claims(true, 1, names, uids, &rl);
    cr_assert_eq(gs_grpc_unary(sock,
                               "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
                               req, rl, 10, &out, &len, why, sizeof(why)),
                 0, "%s", why);
    free(req);
    prep_resp *r = k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__unpack(
        NULL, len, out);
    free(out);
    cr_assert_str_eq(entry(r, "uid-1")->error, "");
    cr_assert_str_eq(entry(r, "uid-1")->devices[0]->cdi_device_ids[0],
                     "gpu.gpusched.io/gpu=uid-1-gpu-1-part-1g-10gb-6");
    prep_free(r);
    struct gs_gpu_info info;
    e.b->ops->info(e.b, 1, &info);
    cr_assert(info.mig_enabled, "MIG mode switched on for the placement");
    req = pack_claims(false, 1, names, uids, &rl);
    cr_assert_eq(gs_grpc_unary(sock,
                               "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
                               req, rl, 10, &out, &len, why, sizeof(why)),
                 0, "%s", why);
    free(req);
    free(out);
    struct gs_mig_inst in[GS_AGENT_MAX_INST];
    cr_assert_eq(instances(e.b, 1, in), 0);
    cr_assert_neq(gs_grpc_unary(sock, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/Nope", NULL, 0, 10,
                                &out, &len, why, sizeof(why)),
                  0);
    env_close(&e);
    cr_assert_neq(access(sock, F_OK), 0, "socket removed at stop");
}
