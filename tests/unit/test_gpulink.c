/* core/gpulink and its users: a multi-GPU pod gets the best-linked GPUs of a node, as NVIDIA's
 * device plugin's best-effort policy would give them. On 8 GPUs in 4 NVLink pairs a 2-GPU pod
 * gets one pair and a 4-GPU pod two whole pairs; a 1-GPU pod takes a GPU whose partner is busy
 * before breaking a free pair; with NVSwitch (every GPU linked alike) PCIe and NUMA decide.
 * The links travel in the node inventory (version 2, read back unchanged; a version-1 text is
 * still read and still written when no link is known), become the engine's device choice
 * through the cluster, steer the device plugin's GetPreferredAllocation, and, as DRA device
 * attributes, the DRA allocator's choice for a request of several GPUs. A node without links
 * keeps the index order it always had. */
#include "agent/deviceplugin.h"
#include "agent/gpu.h"
#include "base/error.h"
#include "core/catalog.h"
#include "core/cluster.h"
#include "core/dra.h"
#include "core/fit.h"
#include "core/gpulink.h"
#include "formats/draobj.h"
#include "formats/draslice.h"
#include "formats/inventory.h"

#include "fixtures.h"

#include "deviceplugin.pb-c.h"

#include <criterion/criterion.h>
#include <grpc/status.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* n GPUs: NVLink pairs (0-1, 2-3, ...) with links each when pairs, else all-to-all; PCIe: a pair
 * under one switch, half the GPUs per NUMA node (numa > 1) through host bridges. */
static void board(struct gs_gpu_link *l, int n, bool pairs, int links, int numa)
{
    memset(l, 0, sizeof(*l) * GS_LINK_MAX_GPUS);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            if (!pairs || i / 2 == j / 2)
                l[i].nvlink[j] = (uint8_t)links;
            int ui = i * numa / n, uj = j * numa / n;
            l[i].pcie[j] = i / 2 == j / 2 ? GS_PCIE_SINGLE_SWITCH
                           : ui == uj     ? GS_PCIE_HOST_BRIDGE
                                          : GS_PCIE_CROSS_CPU;
        }
}

static void expect_set(const int *got, const int *want, int k, const char *what)
{
    char g[64] = "", w[64] = "";
    for (int i = 0; i < k; i++) {
        snprintf(g + strlen(g), sizeof(g) - strlen(g), "%d ", got[i]);
        snprintf(w + strlen(w), sizeof(w) - strlen(w), "%d ", want[i]);
    }
    cr_expect_str_eq(g, w, "%s: got %s, want %s", what, g, w);
}

Test(gpulink, pairs_four_gpus_get_two_whole_pairs_two_get_one_pair)
{
    struct gs_gpu_link l[GS_LINK_MAX_GPUS];
    board(l, 8, true, 4, 2);
    int out[8];
    /* GPUs 0 and 3 busy: two pairs whole (4-5, 6-7) */
    uint32_t free = 0xff & ~(1u << 0) & ~(1u << 3);
    cr_assert_eq(gs_link_choose(l, 8, free, 0, 4, out), 4);
    expect_set(out, (int[]){4, 5, 6, 7}, 4, "4 GPUs");
    cr_assert_eq(gs_link_choose(l, 8, free, 0, 2, out), 2);
    expect_set(out, (int[]){4, 5}, 2, "2 GPUs");
    /* all free: pairs on one NUMA node first (0-1 with 2-3) */
    cr_assert_eq(gs_link_choose(l, 8, 0xff, 0, 4, out), 4);
    expect_set(out, (int[]){0, 1, 2, 3}, 4, "4 of 8 free");
    /* 1 GPU: the one whose partner is busy, not a whole pair */
    cr_assert_eq(gs_link_choose(l, 8, free, 0, 1, out), 1);
    cr_expect(out[0] == 1 || out[0] == 2, "1 GPU: got %d, want 1 or 2", out[0]);
    /* 3 GPUs: a pair and a GPU whose partner is busy, on the pair's NUMA node */
    cr_assert_eq(gs_link_choose(l, 8, 0xff & ~(1u << 3), 0, 3, out), 3);
    expect_set(out, (int[]){0, 1, 2}, 3, "3 GPUs");
}

Test(gpulink, nvswitch_any_set_pcie_and_numa_break_the_tie)
{
    struct gs_gpu_link l[GS_LINK_MAX_GPUS];
    board(l, 8, false, 18, 2);
    int out[8];
    /* every set has the same NVLink score: the one under one NUMA node, pairs under one switch */
    cr_assert_eq(gs_link_choose(l, 8, 0xff & ~1u, 0, 4, out), 4);
    expect_set(out, (int[]){4, 5, 6, 7}, 4, "NUMA node 1 whole");
    cr_assert_eq(gs_link_choose(l, 8, 0xff & ~1u & ~(1u << 4), 0, 2, out), 2);
    expect_set(out, (int[]){2, 3}, 2, "a switch's pair");
    cr_expect_eq(gs_link_pair_score(l, 0, 1), 100 * 18 + 50);
    cr_expect_eq(gs_link_pair_score(l, 0, 4), 100 * 18 + 10);
}

Test(gpulink, must_include_and_too_few)
{
    struct gs_gpu_link l[GS_LINK_MAX_GPUS];
    board(l, 8, true, 4, 1);
    int out[8];
    cr_assert_eq(gs_link_choose(l, 8, 0xff, 1u << 5, 2, out), 2);
    expect_set(out, (int[]){4, 5}, 2, "must-include 5");
    cr_expect_eq(gs_link_choose(l, 8, 0x3, 0, 3, out), -1);
    cr_expect_eq(gs_link_choose(l, 8, 0xff, 0x7, 2, out), -1);
    /* no links: the lowest indexes */
    memset(l, 0, sizeof(l));
    cr_assert_eq(gs_link_choose(l, 8, 0xf6, 0, 3, out), 3);
    expect_set(out, (int[]){1, 2, 4}, 3, "no links");
}

Test(gpulink, pcie_levels_from_paths)
{
    const char *sw0a = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0";
    const char *sw0b = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0";
    const char *sw1 = "pci0000:00/0000:00:02.0/0000:05:00.0/0000:06:00.0/0000:07:00.0";
    const char *far = "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0";
    const char *deep = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:08:00.0/"
                       "0000:09:00.0/0000:0a:00.0";
    const char *board = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.1";
    cr_expect_eq(gs_link_pcie_level(sw0a, 0, sw0b, 0), GS_PCIE_SINGLE_SWITCH);
    cr_expect_eq(gs_link_pcie_level(sw0a, 0, sw1, 0), GS_PCIE_HOST_BRIDGE);
    cr_expect_eq(gs_link_pcie_level(sw0a, 0, far, 1), GS_PCIE_CROSS_CPU);
    cr_expect_eq(gs_link_pcie_level(sw0a, 0, far, 0), GS_PCIE_SAME_CPU);
    cr_expect_eq(gs_link_pcie_level(sw0a, -1, far, 1), GS_PCIE_UNKNOWN);
    cr_expect_eq(gs_link_pcie_level(sw0a, 0, deep, 0), GS_PCIE_MULTI_SWITCH);
    cr_expect_eq(gs_link_pcie_level(sw0a, 0, board, 0), GS_PCIE_SAME_BOARD);
    cr_expect_eq(gs_link_pcie_level("", 1, "", 1), GS_PCIE_SAME_CPU);
}

/* An inventory of 8 H100s in NVLink pairs on 2 NUMA nodes, a switch per pair. */
static void paired_inventory(struct gs_inventory *inv)
{
    memset(inv, 0, sizeof(*inv));
    inv->version = 2; /* links, no fractions */
    inv->ngpus = 8;
    for (int i = 0; i < 8; i++) {
        struct gs_inv_gpu *g = &inv->gpus[i];
        g->index = i;
        snprintf(g->uuid, sizeof(g->uuid), "GPU-%d", i);
        snprintf(g->model, sizeof(g->model), "H100-80GB");
        g->mem_mib = 81559;
        g->healthy = true;
        g->replicas = 1;
        g->has_numa = true;
        g->numa = (uint8_t)(i / 4);
        snprintf(g->pci, sizeof(g->pci),
                 "pci0000:%02x/0000:00:0%d.0/0000:1%d:00.0/0000:2%d:0%d.0/0000:3%d:00.0",
                 i / 4 * 0x80, i / 2 + 1, i / 2, i / 2, i % 2, i);
        g->nvlink[i ^ 1] = 4;
    }
}

Test(gpulink, inventory_round_trip_and_version_one_still_read)
{
    struct gs_inventory inv, back;
    paired_inventory(&inv);
    char *text = gs_inventory_write(&inv);
    cr_assert_not_null(text);
    cr_expect(strstr(text, "\"v\":2") != NULL, "%s", text);
    cr_expect(strstr(text, "\"nvlink\":{\"1\":4}") != NULL, "%s", text);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_inventory_read(text, strlen(text), &back, &err), 0, "%s", err.msg);
    cr_expect_eq(memcmp(&back, &inv, sizeof(inv)), 0, "the round trip changed the inventory");
    free(text);
    struct gs_gpu_link l[GS_MAX_GPUS_NODE];
    gs_inventory_links(&back, l);
    cr_expect_eq(l[0].nvlink[1], 4);
    cr_expect_eq(l[0].nvlink[2], 0);
    cr_expect_eq(l[0].pcie[1], GS_PCIE_SINGLE_SWITCH);
    cr_expect_eq(l[0].pcie[2], GS_PCIE_HOST_BRIDGE);
    cr_expect_eq(l[0].pcie[4], GS_PCIE_CROSS_CPU);
    /* no links: version 1, as before, which a version-1 reader takes */
    for (int i = 0; i < 8; i++) {
        inv.gpus[i].has_numa = false;
        inv.gpus[i].pci[0] = '\0';
        memset(inv.gpus[i].nvlink, 0, sizeof(inv.gpus[i].nvlink));
    }
    text = gs_inventory_write(&inv);
    cr_assert_not_null(text);
    cr_expect(strstr(text, "\"v\":1") != NULL && !strstr(text, "numa"), "%s", text);
    cr_assert_eq(gs_inventory_read(text, strlen(text), &back, &err), 0, "%s", err.msg);
    cr_expect_eq(back.version, 1);
    free(text);
}

Test(gpulink, bad_links_are_refused_with_the_field)
{
    struct {
        const char *links, *want;
    } cases[] = {
        {"\"numa\":-1", "gpus[0].numa: expected a NUMA node"},
        {"\"numa\":\"0\"", "gpus[0].numa"},
        {"\"pci\":\"\"", "gpus[0].pci: expected the PCIe path"},
        {"\"pci\":\"pci0000:00//0000:01:00.0\"", "gpus[0].pci: expected the PCIe path"},
        {"\"pci\":\"/pci0000:00\"", "gpus[0].pci"},
        {"\"pci\":\"pci0000:00/0000:01:00.0 x\"", "gpus[0].pci"},
        {"\"nvlink\":[1]", "gpus[0].nvlink: expected an object"},
        {"\"nvlink\":{\"0\":4}", "gpus[0].nvlink.0: expected the index of another GPU"},
        {"\"nvlink\":{\"16\":4}", "gpus[0].nvlink.16"},
        {"\"nvlink\":{\"01\":4}", "gpus[0].nvlink.01"},
        {"\"nvlink\":{\"x\":4}", "gpus[0].nvlink.x"},
        {"\"nvlink\":{\"1\":0}", "gpus[0].nvlink.1: expected 1 to 255"},
        {"\"nvlink\":{\"1\":256}", "gpus[0].nvlink.1"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char text[512];
        snprintf(
            text, sizeof(text),
            "{\"v\":2,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"H100-80GB\",\"mem\":1,%s}]}",
            cases[c].links);
        struct gs_inventory inv;
        struct gs_error err;
        gs_error_init(&err);
        cr_expect_eq(gs_inventory_read(text, strlen(text), &inv, &err), GS_EINVAL, "%s", text);
        cr_expect(strstr(err.msg, cases[c].want) != NULL, "%s: got '%s', want '%s'", text, err.msg,
                  cases[c].want);
    }
    const char *v1 = "{\"v\":1,\"gpus\":[{\"i\":0,\"uuid\":\"a\",\"model\":\"H100-80GB\",\"mem\":1,"
                     "\"numa\":0}]}";
    struct gs_inventory inv;
    struct gs_error err;
    gs_error_init(&err);
    cr_expect_eq(gs_inventory_read(v1, strlen(v1), &inv, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "gpus[0]: numa, pci and nvlink need version 2") != NULL, "%s",
              err.msg);
}

/* The engine's device choice: a linked node gives the best-linked GPUs, a node without links
 * the lowest free indexes, as always. */
Test(gpulink, engine_chooses_linked_whole_gpus)
{
    struct gs_cluster c;
    gs_cluster_init(&c);
    int m = gs_catalog_find("H100-80GB");
    int linked = gs_cluster_add_node(&c, "linked", m, 8, 64000, 512000, GS_GPU_WHOLE, 1, NULL);
    int plain = gs_cluster_add_node(&c, "plain", m, 8, 64000, 512000, GS_GPU_WHOLE, 1, NULL);
    cr_assert(linked >= 0 && plain >= 0);
    struct gs_gpu_link l[GS_LINK_MAX_GPUS];
    board(l, 8, true, 4, 2);
    for (int i = 0; i < 8; i++)
        c.gpus[c.nodes[linked].gpu0 + i].link = l[i];
    struct gs_request one = {.kind = GS_REQ_GPU, .gpus = 1, .milli = GS_MILLI};
    struct gs_request four = {.kind = GS_REQ_GPU, .gpus = 4, .milli = GS_MILLI};
    struct gs_alloc a;
    struct gs_rng rng;
    gs_rng_init(&rng, 1);
    /* take GPU 0 on both nodes, then GPU 3's partner is the next 1-GPU pod's on the linked one */
    for (int node = 0; node < 2; node++) {
        gs__fit_choose(&rng, &c, node, &one, GS__FIT_BEST, &a);
        cr_assert_eq(a.ndev, 1);
        cr_expect_eq(a.gpu[0] - c.nodes[node].gpu0, 0, "node %d: first GPU", node);
        cr_assert_eq(gs_cluster_bind(&c, &one, &a), 0);
    }
    gs__fit_choose(&rng, &c, linked, &one, GS__FIT_BEST, &a);
    cr_expect_eq(a.gpu[0] - c.nodes[linked].gpu0, 1, "the busy GPU's partner");
    gs__fit_choose(&rng, &c, linked, &four, GS__FIT_BEST, &a);
    cr_assert_eq(a.ndev, 4);
    int got[4];
    for (int k = 0; k < 4; k++)
        got[k] = a.gpu[k] - c.nodes[linked].gpu0;
    expect_set(got, (int[]){4, 5, 6, 7}, 4, "linked node, 4 GPUs");
    gs__fit_choose(&rng, &c, plain, &four, GS__FIT_BEST, &a);
    cr_assert_eq(a.ndev, 4);
    for (int k = 0; k < 4; k++)
        got[k] = a.gpu[k] - c.nodes[plain].gpu0;
    expect_set(got, (int[]){1, 2, 3, 4}, 4, "node without links, 4 GPUs");
    gs_cluster_release(&c);
}

/* GetPreferredAllocation of whole GPUs on a linked node, without the scheduler's record. */
Test(gpulink, device_plugin_prefers_linked_whole_gpus)
{
    struct gs_dp_device d[8];
    memset(d, 0, sizeof(d));
    static char ids[8][16];
    char *avail[8];
    for (int i = 0; i < 8; i++) {
        snprintf(d[i].id, sizeof(d[i].id), "GPU-%d", i);
        snprintf(d[i].uuid, sizeof(d[i].uuid), "GPU-%d", i);
        snprintf(ids[i], sizeof(ids[i]), "GPU-%d", i);
        d[i].healthy = true;
        d[i].gpu = i;
    }
    struct gs_dp_hooks h;
    memset(&h, 0, sizeof(h));
    board(h.links, 8, true, 4, 2);
    struct gs_dp_plugin *p = gs__dp_new("nvidia.com/gpu", d, 8, &h);
    cr_assert_not_null(p);
    /* GPUs 0 and 3 are in use: the kubelet offers the other six */
    int na = 0;
    for (int i = 0; i < 8; i++)
        if (i != 0 && i != 3)
            avail[na++] = ids[i];
    struct {
        int size;
        const char *want;
    } cases[] = {{2, "GPU-4 GPU-5 "}, {4, "GPU-4 GPU-5 GPU-6 GPU-7 "}, {1, "GPU-1 "}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        V1beta1__ContainerPreferredAllocationRequest q =
            V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
        q.n_available_deviceids = (size_t)na;
        q.available_deviceids = avail;
        q.allocation_size = cases[c].size;
        V1beta1__ContainerPreferredAllocationRequest *qs[] = {&q};
        V1beta1__PreferredAllocationRequest r = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
        r.n_container_requests = 1;
        r.container_requests = qs;
        size_t len = protobuf_c_message_get_packed_size(&r.base);
        uint8_t *in = malloc(len ? len : 1), *out = NULL;
        protobuf_c_message_pack(&r.base, in);
        size_t out_len = 0;
        char why[256];
        cr_assert_eq(gs__dp_answer(p, GS_DP_PREFERRED, in, len, &out, &out_len, why, sizeof(why)),
                     GRPC_STATUS_OK, "%s", why);
        V1beta1__PreferredAllocationResponse *resp =
            v1beta1__preferred_allocation_response__unpack(NULL, out_len, out);
        cr_assert_not_null(resp);
        char got[128] = "";
        for (size_t k = 0; k < resp->container_responses[0]->n_deviceids; k++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s ",
                     resp->container_responses[0]->deviceids[k]);
        cr_expect_str_eq(got, cases[c].want, "size %d: got %s", cases[c].size, got);
        v1beta1__preferred_allocation_response__free_unpacked(resp, NULL);
        free(in);
        free(out);
    }
    gs__dp_free(p);
}

/* The fake backend's topology: 8 GPUs in NVLink pairs over 2 NUMA nodes, a switch per pair. */
Test(gpulink, fake_backend_pairs_on_two_numa_nodes)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/gs-fake-links-%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("{\"gpus\":[", f);
    for (int i = 0; i < 8; i++)
        fprintf(f, "%s{\"model\":\"H100-80GB\"}", i ? "," : "");
    fputs("],\"topology\":{\"nvlink\":\"pairs\",\"links\":6,\"numa_nodes\":2}}", f);
    fclose(f);
    struct gs_gpu_backend *b = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_gpu_open_fake(path, &b, &err), 0, "%s", err.msg);
    struct gs_gpu_info info[8];
    for (int i = 0; i < 8; i++)
        cr_assert_eq(b->ops->info(b, i, &info[i]), 0);
    cr_expect(info[5].numa_ok && info[5].numa == 1, "GPU 5 on NUMA node 1");
    struct gs_gpu_link l[GS_LINK_MAX_GPUS];
    gs_gpu_links(info, 8, l);
    cr_expect_eq(l[2].nvlink[3], 6);
    cr_expect_eq(l[2].nvlink[4], 0);
    cr_expect_eq(l[2].pcie[3], GS_PCIE_SINGLE_SWITCH);
    cr_expect_eq(l[2].pcie[1], GS_PCIE_HOST_BRIDGE);
    cr_expect_eq(l[2].pcie[6], GS_PCIE_CROSS_CPU);
    int out[4];
    cr_assert_eq(gs_link_choose(l, 8, 0xff & ~(1u << 1), 0, 4, out), 4);
    expect_set(out, (int[]){4, 5, 6, 7}, 4, "fake pairs, GPU 1 busy");
    gs_gpu_close(b);
    unlink(path);
}

/* The DRA allocator: whole GPUs whose devices carry the agent's link attributes; a request of
 * several devices gets the best-linked ones. */
static int32_t one_node(void *ctx, const char *node)
{
    (void)ctx;
    (void)node;
    return 0;
}

static int dra_alloc(struct gs_dra_state *st, const struct gs_draobj_world *w,
                     const struct gs_draobj_class *cls, int count, char *out, size_t n)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ai\",\"name\":\"c\",\"uid\":\"u-c\","
             "\"resourceVersion\":\"7\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
             "\"exactly\":{\"deviceClassName\":\"gpu.gpusched.io\",\"count\":%d}}]}}}",
             count);
    json_t *o = json_of(buf);
    static struct gs_draobj_claim c;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_claim_read(o, &c, &err), 0, "%s", err.msg);
    json_decref(o);
    struct gs_draobj_prep p;
    cr_assert_eq(gs_draobj_prepare(&c, cls, 1, &w->w, &p, &err), 0, "%s", err.msg);
    struct gs_dra_result r;
    int rc = gs_dra_allocate(st, &p.c, 0, 1, &r);
    out[0] = '\0';
    int idx[GS_DRA_MAX_COUNT];
    for (int k = 0; rc == 0 && k < r.n; k++) {
        const struct gs_dra_attr *a = NULL;
        for (int t = 0; t < w->w.dev[r.dev[k]].nattrs; t++)
            if (!strcmp(w->w.dev[r.dev[k]].attrs[t].name, "gpu.gpusched.io/index"))
                a = &w->w.dev[r.dev[k]].attrs[t];
        cr_assert_not_null(a);
        idx[k] = (int)a->v.i;
    }
    for (int k = 0; rc == 0 && k < r.n; k++)
        for (int j = k + 1; j < r.n; j++)
            if (idx[j] < idx[k]) {
                int t = idx[j];
                idx[j] = idx[k];
                idx[k] = t;
            }
    for (int k = 0; rc == 0 && k < r.n; k++)
        snprintf(out + strlen(out), n - strlen(out), "%s%d", k ? "," : "", idx[k]);
    gs_draobj_prep_release(&p);
    gs_draobj_claim_release(&c);
    return rc;
}

Test(gpulink, dra_requests_of_several_gpus_get_linked_ones)
{
    static struct gs_draslice_node n;
    memset(&n, 0, sizeof(n));
    n.node = "links";
    n.generation = 1;
    n.ngpus = 8;
    for (int g = 0; g < 8; g++) {
        struct gs_draslice_gpu *x = &n.gpus[g];
        x->index = g;
        snprintf(x->uuid, sizeof(x->uuid), "GPU-links-%d", g);
        x->model = gs_catalog_find("H100-80GB");
        x->mem_mib = 81920;
        x->healthy = true;
        x->numa_ok = true;
        x->numa = (uint8_t)(g / 4);
        snprintf(x->pcie_root, sizeof(x->pcie_root), "pci0000:%02x", g / 4 * 0x80);
        snprintf(x->pcie_switch, sizeof(x->pcie_switch), "0000:1%d:00.0", g / 2);
        x->nvlink_peers = 1u << (g ^ 1);
        x->nvlinks = 4;
    }
    struct gs_error err;
    gs_error_init(&err);
    json_t *a = gs_draslice_build(&n, &err);
    cr_assert(a, "%s", err.msg);
    char *text = json_dumps(a, JSON_COMPACT);
    cr_assert(text && strstr(text, "\"resource.kubernetes.io/pcieRoot\"") != NULL);
    cr_expect(strstr(text, "\"nvlinkPeers\":{\"int\":2}") != NULL, "%.300s", text);
    free(text);
    static struct gs_draobj_slice slices[8];
    const struct gs_draobj_slice *sp[8];
    size_t ns = json_array_size(a);
    cr_assert_leq(ns, 8);
    for (size_t i = 0; i < ns; i++) {
        cr_assert_eq(gs_draobj_slice_read(json_array_get(a, i), &slices[i], &err), 0, "%s",
                     err.msg);
        sp[i] = &slices[i];
    }
    json_decref(a);
    static struct gs_draobj_world w;
    cr_assert_eq(gs_draobj_world_build(sp, (int)ns, one_node, NULL, &w), 0);
    struct gs_draobj_class cls;
    json_t *o = json_of("{\"metadata\":{\"name\":\"gpu.gpusched.io\"},\"spec\":{\"selectors\":[{"
                        "\"cel\":{\"expression\":\"device.driver == 'gpu.gpusched.io' && "
                        "device.attributes['gpu.gpusched.io'].type == 'gpu'\"}}]}}");
    cr_assert_eq(gs_draobj_class_read(o, &cls, &err), 0, "%s", err.msg);
    json_decref(o);
    struct gs_dra_state st;
    cr_assert_eq(gs_dra_state_init(&st, &w.w), 0);
    char got[64];
    cr_assert_eq(dra_alloc(&st, &w, &cls, 1, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "0");
    cr_assert_eq(dra_alloc(&st, &w, &cls, 2, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "2,3", "a whole pair beside GPU 0");
    cr_assert_eq(dra_alloc(&st, &w, &cls, 4, got, sizeof(got)), 0);
    cr_expect_str_eq(got, "4,5,6,7", "two whole pairs");
    gs_dra_state_release(&st);
    gs_draobj_class_release(&cls);
    gs_draobj_world_release(&w);
    for (size_t i = 0; i < ns; i++)
        gs_draobj_slice_release(&slices[i]);
}
