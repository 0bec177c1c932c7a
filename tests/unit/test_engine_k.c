/* Engine placement with Kubernetes constraints (gs_engine_place_k): required anti-affinity
 * and DoNotSchedule spreading hold across replicas placed one by one, preferred terms outweigh
 * GPU packing while the policy still breaks their ties, refusals are counted once per node in
 * kube-scheduler's filter order, and a pod without constraints is placed exactly as
 * gs_engine_place places it, under every policy. Pods are Kubernetes JSON (single quotes). */
#include "base/error.h"
#include "base/rng.h"
#include "core/constraints.h"
#include "core/engine.h"
#include "formats/podspec.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXPODS 64
#define ZONE    "topology.kubernetes.io/zone"

struct world {
    struct gs_cluster c;
    struct gs_engine *e;
    struct gs_kstate *ks;
    struct gs_kprep *kp;
    struct gs_kpod pods[MAXPODS];
    int npods;
    bool selector_in_req;
};

/* H100 nodes "name gpus k=v ..." in whole-GPU mode; every node gets its hostname label, and a
 * node with the label taint=NoSchedule is one the pods do not tolerate */
static void world_init(struct world *w, const char *const *specs)
{
    memset(w, 0, sizeof(*w));
    gs_cluster_init(&w->c);
    int h100 = gs_catalog_find("H100-80GB");
    for (int i = 0; specs[i]; i++) {
        char buf[256], name[64];
        int gpus, off = 0;
        snprintf(buf, sizeof(buf), "%s", specs[i]);
        cr_assert_eq(sscanf(buf, "%63s %d %n", name, &gpus, &off), 2, "bad node '%s'", specs[i]);
        int id = gs_cluster_add_node(&w->c, name, gpus ? h100 : -1, gpus, 64000, 256000,
                                     GS_GPU_WHOLE, 0, NULL);
        cr_assert_geq(id, 0);
        cr_assert_eq(gs_node_set_label(&w->c.nodes[id], GS_KHOSTNAME_KEY, name), 0);
        char *save = NULL;
        for (char *tok = strtok_r(buf + off, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(tok, '=');
            cr_assert_not_null(eq, "bad label in '%s'", specs[i]);
            *eq = '\0';
            cr_assert_eq(gs_node_set_label(&w->c.nodes[id], tok, eq + 1), 0);
        }
    }
    w->e = gs_engine_new(gs_policy_find("gpusched"), NULL, w->c.nnodes, 1);
    cr_assert_not_null(w->e);
    cr_assert_eq(gs_kstate_new(&w->c, &w->ks), 0);
    cr_assert_eq(gs_kprep_new(&w->kp), 0);
}

static void world_release(struct world *w)
{
    gs_kprep_free(w->kp);
    gs_kstate_free(w->ks);
    for (int i = 0; i < w->npods; i++)
        gs_kpod_release(&w->pods[i]);
    gs_engine_free(w->e);
    gs_cluster_release(&w->c);
}

static void read_pod(const char *squoted, struct gs_kpod *p)
{
    char *j = strdup(squoted);
    for (char *q = j; *q; q++)
        if (*q == '\'')
            *q = '"';
    json_t *o = json_of(j);
    struct gs_error err;
    gs_error_init(&err);
    gs_kpod_init(p);
    cr_assert_eq(gs_podspec_read(o, p, &err), 0, "podspec: %s", err.msg);
    json_decref(o);
    free(j);
}

static bool tolerates(void *ctx, int node)
{
    const struct world *w = ctx;
    return gs_node_label(&w->c.nodes[node], "taint") == NULL;
}

/* Place the pod (JSON) with req through gs_engine_place_k, bind it and count it in the state.
 * Returns the node's name, or NULL when it does not fit (r then says why). */
static const char *place(struct world *w, const char *pod, const struct gs_request *req,
                         struct gs_reasons *r)
{
    cr_assert_lt(w->npods, MAXPODS);
    struct gs_kpod *p = &w->pods[w->npods++];
    read_pod(pod, p);
    cr_assert_eq(gs_kprep_compute(w->kp, w->ks, &w->c, p, tolerates, w), 0);
    struct gs_kplace k = {.ks = w->ks,
                          .kp = w->kp,
                          .tol = tolerates,
                          .tol_ctx = w,
                          .selector_in_req = w->selector_in_req};
    struct gs_decision d;
    memset(r, 0, sizeof(*r));
    int rc = gs_engine_place_k(w->e, &w->c, req, w->npods - 1, &k, &d, r);
    if (rc == GS_ENOFIT)
        return NULL;
    cr_assert_eq(rc, 0, "gs_engine_place_k: %d", rc);
    cr_assert_eq(gs_cluster_bind(&w->c, req, &d.alloc), 0);
    cr_assert_geq(gs_kstate_add_pod(w->ks, &w->c, p, d.alloc.node), 0);
    return w->c.nodes[d.alloc.node].name;
}

#define POD(name, labels, spec)                                                                    \
    "{'metadata':{'name':'" name "','namespace':'default','labels':{" labels "}},"                 \
    "'spec':{'containers':[{'name':'c'}]" spec "}}"
#define REQ_ANTI_HOST(app)                                                                         \
    ",'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"          \
    "'labelSelector':{'matchLabels':{'app':'" app "'}},'topologyKey':'" GS_KHOSTNAME_KEY "'}]}}"
#define PREF_ANTI_HOST(app)                                                                        \
    ",'affinity':{'podAntiAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{"         \
    "'weight':100,'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'" app "'}},"           \
    "'topologyKey':'" GS_KHOSTNAME_KEY "'}}]}}"
#define SPREAD_ZONE(skew, app)                                                                     \
    ",'topologySpreadConstraints':[{'maxSkew':" #skew ",'topologyKey':'" ZONE "',"                 \
    "'whenUnsatisfiable':'DoNotSchedule','labelSelector':{'matchLabels':{'app':'" app "'}}}]"

Test(engine_k, required_anti_affinity_puts_replicas_on_distinct_nodes)
{
    static const char *const nodes[] = {"n1 8", "n2 8", "n3 8", "n4 8", NULL};
    struct world w;
    world_init(&w, nodes);
    struct gs_request r = gpu_req(1);
    struct gs_reasons why;
    /* packing alone would stack them: the first node again and again */
    const char *seen[4] = {0};
    for (int i = 0; i < 4; i++) {
        seen[i] = place(&w, POD("web", "'app':'web'", REQ_ANTI_HOST("web")), &r, &why);
        cr_assert_not_null(seen[i], "replica %d does not fit", i);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(seen[i], seen[j], "replicas %d and %d both on %s", i, j, seen[i]);
    }
    cr_assert_null(place(&w, POD("web", "'app':'web'", REQ_ANTI_HOST("web")), &r, &why),
                   "a fifth replica has no node of its own");
    cr_assert_eq(why.nodes, 4, "nodes %d, want 4", why.nodes);
    cr_assert_eq(why.kverdict[GS_KNO_ANTI_AFFINITY], 4, "anti-affinity %d, want 4",
                 why.kverdict[GS_KNO_ANTI_AFFINITY]);
    cr_assert_eq(why.other, 4, "other %d, want 4", why.other);
    /* an unconstrained pod of another app still packs onto a used node */
    const char *o = place(&w, POD("db", "'app':'db'", ""), &r, &why);
    cr_assert_not_null(o);
    world_release(&w);
}

Test(engine_k, spread_keeps_zones_within_max_skew)
{
    static const char *const nodes[] = {"a1 8 " ZONE "=a", "a2 8 " ZONE "=a", "b1 8 " ZONE "=b",
                                        "b2 8 " ZONE "=b", "c1 8 " ZONE "=c", NULL};
    for (int skew = 1; skew <= 2; skew++) {
        struct world w;
        world_init(&w, nodes);
        struct gs_request r = gpu_req(1);
        struct gs_reasons why;
        int per_zone[3] = {0};
        for (int i = 0; i < 12; i++) {
            const char *n = place(&w,
                                  skew == 1 ? POD("s", "'app':'s'", SPREAD_ZONE(1, "s"))
                                            : POD("s", "'app':'s'", SPREAD_ZONE(2, "s")),
                                  &r, &why);
            cr_assert_not_null(n, "maxSkew %d: replica %d does not fit", skew, i);
            per_zone[n[0] - 'a']++;
            int lo = per_zone[0], hi = per_zone[0];
            for (int z = 1; z < 3; z++) {
                lo = per_zone[z] < lo ? per_zone[z] : lo;
                hi = per_zone[z] > hi ? per_zone[z] : hi;
            }
            cr_assert_leq(hi - lo, skew, "maxSkew %d: after %d replicas zones hold %d/%d/%d", skew,
                          i + 1, per_zone[0], per_zone[1], per_zone[2]);
        }
        world_release(&w);
    }
}

Test(engine_k, preferred_anti_affinity_spreads_while_capacity_allows)
{
    /* n2 has one GPU: once it is taken, the preference yields and the pod shares n1 */
    static const char *const nodes[] = {"n1 8", "n2 1", NULL};
    struct world w;
    world_init(&w, nodes);
    struct gs_request r = gpu_req(1);
    struct gs_reasons why;
    const char *a = place(&w, POD("p", "'app':'p'", PREF_ANTI_HOST("p")), &r, &why);
    const char *b = place(&w, POD("p", "'app':'p'", PREF_ANTI_HOST("p")), &r, &why);
    cr_assert(a && b);
    cr_assert_str_neq(a, b, "the second replica joined the first on %s", a);
    const char *c = place(&w, POD("p", "'app':'p'", PREF_ANTI_HOST("p")), &r, &why);
    cr_assert_not_null(c, "a preference never refuses a node");
    cr_assert_str_eq(c, "n1", "third replica on %s, want n1 (the only room)", c);
    world_release(&w);

    /* without the preference, gpusched packs: both on one node */
    static const char *const two[] = {"n1 8", "n2 8", NULL};
    world_init(&w, two);
    a = place(&w, POD("p", "'app':'p'", ""), &r, &why);
    b = place(&w, POD("p", "'app':'p'", ""), &r, &why);
    cr_assert(a && b);
    cr_assert_str_eq(a, b, "unconstrained replicas on %s and %s, want one node", a, b);
    world_release(&w);
}

Test(engine_k, the_policy_breaks_ties_between_equally_preferred_nodes)
{
    /* the pod prefers zone a; of a's two nodes, gpusched takes the one already in use */
    static const char *const nodes[] = {"a1 8 " ZONE "=a", "a2 8 " ZONE "=a", "b1 8 " ZONE "=b",
                                        NULL};
    struct world w;
    world_init(&w, nodes);
    struct gs_request r = gpu_req(1);
    struct gs_reasons why;
    /* occupy a2 and b1 with pods pinned there */
    cr_assert_str_eq(place(&w, POD("x", "'app':'x'", ",'nodeName':'a2'"), &r, &why), "a2");
    cr_assert_str_eq(place(&w, POD("y", "'app':'y'", ",'nodeName':'b1'"), &r, &why), "b1");
    const char *n = place(&w,
                          POD("p", "'app':'p'",
                              ",'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuring"
                              "Execution':[{'weight':10,'preference':{'matchExpressions':[{'key':"
                              "'" ZONE "','operator':'In','values':['a']}]}}]}}"),
                          &r, &why);
    cr_assert_not_null(n);
    cr_assert_str_eq(n, "a2", "placed on %s, want a2 (zone a, in use)", n);
    world_release(&w);
}

Test(engine_k, refusals_are_counted_once_per_node_in_upstream_order)
{
    /* n1 cordoned; n2 tainted; n3 runs a db pod; n4 runs one too and has no free GPU;
     * n5 is outside the pool and full: node affinity comes before resources, resources
     * before inter-pod anti-affinity */
    static const char *const nodes[] = {"n1 1 pool=gpu", "n2 1 pool=gpu taint=NoSchedule",
                                        "n3 2 pool=gpu", "n4 1 pool=gpu",
                                        "n5 0",          NULL};
    struct world w;
    world_init(&w, nodes);
    w.c.nodes[0].unschedulable = true;
    gs_node_touch(&w.c.nodes[0]);
    struct gs_request none;
    memset(&none, 0, sizeof(none));
    struct gs_reasons why;
    cr_assert_str_eq(place(&w, POD("db1", "'app':'db'", ",'nodeName':'n3'"), &none, &why), "n3");
    struct gs_request one = gpu_req(1);
    cr_assert_str_eq(place(&w, POD("db2", "'app':'db'", ",'nodeName':'n4'"), &one, &why), "n4");
    const char *n =
        place(&w,
              POD("web", "'app':'web'",
                  ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"
                  "'nodeSelectorTerms':[{'matchExpressions':[{'key':'pool','operator':'In',"
                  "'values':['gpu']}]}]}},'podAntiAffinity':{'requiredDuringSchedulingIgnored"
                  "DuringExecution':[{'labelSelector':{'matchLabels':{'app':'db'}},"
                  "'topologyKey':'" GS_KHOSTNAME_KEY "'}]}}"),
              &one, &why);
    cr_assert_null(n, "placed on %s", n);
    struct {
        const char *what;
        int got, want;
    } want[] = {
        {"nodes", why.nodes, 5},
        {"unschedulable", why.count[GS_R_UNSCHEDULABLE], 1},
        {"taint", why.taint, 1},
        {"anti-affinity", why.kverdict[GS_KNO_ANTI_AFFINITY], 1},
        {"gpu count", why.count[GS_R_GPU_COUNT], 1},
        {"node affinity", why.kverdict[GS_KNO_NODE_AFFINITY], 1},
        {"other", why.other, 3},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        cr_expect_eq(want[i].got, want[i].want, "%s: %d, want %d", want[i].what, want[i].got,
                     want[i].want);
    char s[256];
    gs_reasons_str(&why, &one, s, sizeof(s));
    cr_expect_str_eq(s, "0/5 nodes fit: 1 node unschedulable, 1 not enough free GPUs");
    cr_expect_str_eq(gs_kverdict_reason(GS_KNO_ANTI_AFFINITY),
                     "node(s) didn't match pod anti-affinity rules");
    world_release(&w);
}

Test(engine_k, selector_in_req_lets_the_engine_resolve_gpu_product_names)
{
    static const char *const nodes[] = {"n1 8 nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3", NULL};
    struct gs_request r = gpu_req(1);
    r.nsel = 1;
    snprintf(r.sel[0].key, sizeof(r.sel[0].key), "nvidia.com/gpu.product");
    snprintf(r.sel[0].val, sizeof(r.sel[0].val), "H100-80GB-HBM3");
#define SEL_POD POD("p", "", ",'nodeSelector':{'nvidia.com/gpu.product':'H100-80GB-HBM3'}")
    for (int in_req = 0; in_req <= 1; in_req++) {
        struct world w;
        world_init(&w, nodes);
        w.selector_in_req = in_req;
        struct gs_reasons why;
        const char *n = place(&w, SEL_POD, &r, &why);
        if (in_req) {
            cr_assert_not_null(n, "the catalog names one model both ways");
        } else {
            cr_assert_null(n, "the label differs from the selector's value");
            cr_assert_eq(why.kverdict[GS_KNO_NODE_AFFINITY], 1);
        }
        world_release(&w);
    }
}

Test(engine_k, a_bad_kplace_is_refused)
{
    static const char *const nodes[] = {"n1 8", NULL};
    struct world w;
    world_init(&w, nodes);
    struct gs_request r = gpu_req(1);
    struct gs_kplace k = {.ks = w.ks}; /* a state without its prep */
    struct gs_decision d;
    cr_assert_eq(gs_engine_place_k(w.e, &w.c, &r, 0, &k, &d, NULL), GS_EINVAL);
    world_release(&w);
}

/* The same decision: node, kind and each device (entries past ndev mean nothing) */
static bool same_alloc(const struct gs_decision *a, const struct gs_decision *b)
{
    if (a->kind != b->kind || a->pod != b->pod || a->alloc.node != b->alloc.node ||
        a->alloc.kind != b->alloc.kind || a->alloc.ndev != b->alloc.ndev ||
        a->alloc.milli != b->alloc.milli)
        return false;
    for (int i = 0; i < a->alloc.ndev; i++)
        if (a->alloc.gpu[i] != b->alloc.gpu[i] || a->alloc.slot[i] != b->alloc.slot[i])
            return false;
    return true;
}

static bool tolerates_all(void *ctx, int node)
{
    (void)ctx;
    (void)node;
    return true;
}

/* Unconstrained pods: gs_engine_place_k with a state (holding pods whose terms match no one
 * else) and a tolerations callback decides exactly as gs_engine_place, and so does k NULL:
 * the same node and devices for 300 mixed pods under every policy, and the same reasons when
 * nothing fits. */
Test(engine_k, unconstrained_pods_place_exactly_as_gs_engine_place)
{
    struct gs_cluster base;
    gs_cluster_init(&base);
    int a100 = gs_catalog_find("A100-80GB"), t4 = gs_catalog_find("T4");
    struct gs_mig_layout l;
    memset(&l, 0, sizeof(l));
    l.count[gs_catalog_find_profile(a100, "1g.10gb")] = 7;
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof(name), "f%d", i);
        int id = gs_cluster_add_node(&base, name, t4, 4, 32000, 65536, GS_GPU_FRACTION, 0, NULL);
        gs_node_set_label(&base.nodes[id], GS_KHOSTNAME_KEY, name);
        snprintf(name, sizeof(name), "m%d", i);
        id = gs_cluster_add_node(&base, name, a100, 2, 32000, 65536, GS_GPU_MIG, 0, &l);
        gs_node_set_label(&base.nodes[id], GS_KHOSTNAME_KEY, name);
        snprintf(name, sizeof(name), "t%d", i);
        id = gs_cluster_add_node(&base, name, t4, 2, 32000, 65536, GS_GPU_TIMESLICE, 3, NULL);
        gs_node_set_label(&base.nodes[id], GS_KHOSTNAME_KEY, name);
    }
    struct gs_kpod bare, other;
    read_pod(POD("bare", "'app':'bare'", ""), &bare);
    read_pod(POD("other", "'app':'other'", PREF_ANTI_HOST("other") SPREAD_ZONE(1, "other")),
             &other);
    for (int pol = 0; pol < gs_policy_count(); pol++) {
        const char *pname = gs_policy_get(pol)->name;
        struct gs_cluster c0, c1, c2;
        gs_cluster_init(&c0);
        gs_cluster_init(&c1);
        gs_cluster_init(&c2);
        cr_assert_eq(gs_cluster_copy(&c0, &base), 0);
        cr_assert_eq(gs_cluster_copy(&c1, &base), 0);
        cr_assert_eq(gs_cluster_copy(&c2, &base), 0);
        struct gs_engine *e0 = gs_engine_new(gs_policy_get(pol), NULL, base.nnodes, 3);
        struct gs_engine *e1 = gs_engine_new(gs_policy_get(pol), NULL, base.nnodes, 3);
        struct gs_engine *e2 = gs_engine_new(gs_policy_get(pol), NULL, base.nnodes, 3);
        struct gs_kstate *ks;
        struct gs_kprep *kp;
        cr_assert_eq(gs_kstate_new(&c1, &ks), 0);
        cr_assert_eq(gs_kprep_new(&kp), 0);
        cr_assert_eq(gs_kstate_add_pod(ks, &c1, &other, 0) >= 0, 1);
        struct gs_rng rng;
        gs_rng_init(&rng, 11);
        int placed = 0, refused = 0;
        for (int i = 0; i < 300; i++) {
            struct gs_request r = random_req(&rng);
            struct gs_decision d0, d1, d2;
            struct gs_reasons r0, r1, r2;
            memset(&r0, 0, sizeof(r0));
            memset(&r1, 0, sizeof(r1));
            memset(&r2, 0, sizeof(r2));
            cr_assert_eq(gs_kprep_compute(kp, ks, &c1, &bare, tolerates_all, NULL), 0);
            struct gs_kplace k = {.ks = ks, .kp = kp, .tol = tolerates_all};
            int rc0 = gs_engine_place(e0, &c0, &r, i, &d0, &r0);
            int rc1 = gs_engine_place_k(e1, &c1, &r, i, &k, &d1, &r1);
            int rc2 = gs_engine_place_k(e2, &c2, &r, i, NULL, &d2, &r2);
            cr_assert_eq(rc1, rc0, "%s pod %d: place_k %d, place %d", pname, i, rc1, rc0);
            cr_assert_eq(rc2, rc0, "%s pod %d: place_k(NULL) %d, place %d", pname, i, rc2, rc0);
            cr_assert_eq(memcmp(&r1, &r0, sizeof(r0)), 0, "%s pod %d: reasons differ", pname, i);
            cr_assert_eq(memcmp(&r2, &r0, sizeof(r0)), 0, "%s pod %d: reasons differ", pname, i);
            if (rc0) {
                refused++;
                continue;
            }
            cr_assert_eq(d1.alloc.node, d0.alloc.node, "%s pod %d: node %d, gs_engine_place %d",
                         pname, i, d1.alloc.node, d0.alloc.node);
            cr_assert(same_alloc(&d1, &d0), "%s pod %d: devices differ", pname, i);
            cr_assert(same_alloc(&d2, &d0), "%s pod %d: devices differ (k NULL)", pname, i);
            cr_assert_eq(gs_cluster_bind(&c0, &r, &d0.alloc), 0);
            cr_assert_eq(gs_cluster_bind(&c1, &r, &d1.alloc), 0);
            cr_assert_eq(gs_cluster_bind(&c2, &r, &d2.alloc), 0);
            /* the bare pod is counted like any placed pod (each placement its own object would
             * be; one object stands for all of them here) */
            cr_assert_geq(gs_kstate_add_pod(ks, &c1, &bare, d1.alloc.node), 0);
            placed++;
        }
        cr_assert_gt(placed, 50, "%s: %d placed", pname, placed);
        cr_assert_gt(refused, 0, "%s: the cluster never filled (nothing refused)", pname);
        gs_kprep_free(kp);
        gs_kstate_free(ks);
        gs_engine_free(e0);
        gs_engine_free(e1);
        gs_engine_free(e2);
        gs_cluster_release(&c0);
        gs_cluster_release(&c1);
        gs_cluster_release(&c2);
    }
    gs_kpod_release(&bare);
    gs_kpod_release(&other);
    gs_cluster_release(&base);
}

/* Nodes a taint or the constraints refuse, marked unschedulable in c (the way the scheduler
 * daemon used to apply constraints around gs_engine_place); returns how many. */
static int mask(struct gs_cluster *c, const struct gs_cluster *kc, struct gs_kstate *ks,
                struct gs_kprep *kp, bool (*tol)(void *, int), void *ctx, int8_t *masked)
{
    int n = 0;
    for (int i = 0; i < c->nnodes; i++) {
        masked[i] = 0;
        if (c->nodes[i].unschedulable || (tol(ctx, i) && gs_kprep_filter(kp, ks, kc, i) == GS_KFIT))
            continue;
        masked[i] = 1;
        c->nodes[i].unschedulable = true;
        gs_node_touch(&c->nodes[i]);
        n++;
    }
    return n;
}

static void unmask(struct gs_cluster *c, const int8_t *masked)
{
    for (int i = 0; i < c->nnodes; i++)
        if (masked[i]) {
            c->nodes[i].unschedulable = false;
            gs_node_touch(&c->nodes[i]);
        }
}

static bool untainted(void *ctx, int node)
{
    const struct gs_cluster *c = ctx;
    return gs_node_label(&c->nodes[node], "taint") == NULL;
}

/* Pods with required anti-affinity (groups of up to 40 replicas: more refused candidates than
 * the engine examines one by one before filtering every node) and DoNotSchedule spreading,
 * beside plain pods, on 90 nodes in 3 zones with some tainted: under every deterministic
 * policy, gs_engine_place_k decides exactly as gs_engine_place on a cluster where the refused
 * nodes are marked unschedulable. */
Test(engine_k, required_constraints_decide_as_masking_refused_nodes)
{
    struct gs_cluster base;
    gs_cluster_init(&base);
    int h100 = gs_catalog_find("H100-80GB"), t4 = gs_catalog_find("T4");
    for (int i = 0; i < 90; i++) {
        char name[16], zone[8];
        snprintf(name, sizeof(name), "n%02d", i);
        snprintf(zone, sizeof(zone), "z%d", i % 3);
        int id =
            i % 2 ? gs_cluster_add_node(&base, name, h100, 8, 64000, 65536, GS_GPU_WHOLE, 0, NULL)
                  : gs_cluster_add_node(&base, name, t4, 4, 32000, 65536, GS_GPU_FRACTION, 0, NULL);
        gs_node_set_label(&base.nodes[id], GS_KHOSTNAME_KEY, name);
        gs_node_set_label(&base.nodes[id], ZONE, zone);
        if (i % 17 == 5)
            gs_node_set_label(&base.nodes[id], "taint", "NoSchedule");
    }
    static const char *const specs[] = {
        POD("a", "'app':'a'", REQ_ANTI_HOST("a")),
        POD("s", "'app':'s'", SPREAD_ZONE(1, "s")),
        POD("p", "'app':'p'", ""),
        POD("b", "'app':'b'", REQ_ANTI_HOST("b") SPREAD_ZONE(1, "b")),
    };
    enum { NSPEC = 4, NPODS = 160 };
    struct gs_kpod *pods = calloc(NPODS, sizeof(*pods));
    cr_assert_not_null(pods);
    int kind[NPODS];
    for (int i = 0; i < NPODS; i++) {
        /* 40 'a' replicas first, then the others interleaved */
        kind[i] = i < 40 ? 0 : 1 + i % (NSPEC - 1);
        read_pod(specs[kind[i]], &pods[i]);
    }
    int8_t masked[90];
    for (int pol = 0; pol < gs_policy_count(); pol++) {
        const char *pname = gs_policy_get(pol)->name;
        if (strcmp(pname, "random") == 0)
            continue; /* its draws follow the nodes scored, which differ by design */
        struct gs_cluster c0, c1;
        gs_cluster_init(&c0);
        gs_cluster_init(&c1);
        cr_assert_eq(gs_cluster_copy(&c0, &base), 0);
        cr_assert_eq(gs_cluster_copy(&c1, &base), 0);
        struct gs_engine *e0 = gs_engine_new(gs_policy_get(pol), NULL, base.nnodes, 5);
        struct gs_engine *e1 = gs_engine_new(gs_policy_get(pol), NULL, base.nnodes, 5);
        struct gs_kstate *ks;
        struct gs_kprep *kp;
        cr_assert_eq(gs_kstate_new(&c1, &ks), 0);
        cr_assert_eq(gs_kprep_new(&kp), 0);
        int placed = 0, refused = 0;
        for (int i = 0; i < NPODS; i++) {
            struct gs_request r = i % 5 == 4 ? gpu_req(2) : gpu_req(1);
            cr_assert_eq(gs_kprep_compute(kp, ks, &c1, &pods[i], untainted, &c1), 0);
            struct gs_kplace k = {.ks = ks, .kp = kp, .tol = untainted, .tol_ctx = &c1};
            struct gs_decision d0, d1;
            mask(&c0, &c1, ks, kp, untainted, &c1, masked);
            int rc0 = gs_engine_place(e0, &c0, &r, i, &d0, NULL);
            unmask(&c0, masked);
            int rc1 = gs_engine_place_k(e1, &c1, &r, i, &k, &d1, NULL);
            cr_assert_eq(rc1, rc0, "%s pod %d (%c): place_k %d, masked place %d", pname, i,
                         "aspb"[kind[i]], rc1, rc0);
            if (rc0) {
                refused++;
                continue;
            }
            cr_assert(same_alloc(&d1, &d0), "%s pod %d (%c): node %s, masked place %s", pname, i,
                      "aspb"[kind[i]], c1.nodes[d1.alloc.node].name, c0.nodes[d0.alloc.node].name);
            cr_assert_eq(gs_cluster_bind(&c0, &r, &d0.alloc), 0);
            cr_assert_eq(gs_cluster_bind(&c1, &r, &d1.alloc), 0);
            cr_assert_geq(gs_kstate_add_pod(ks, &c1, &pods[i], d1.alloc.node), 0);
            placed++;
        }
        cr_assert_gt(placed, 100, "%s: %d placed", pname, placed);
        gs_kprep_free(kp);
        gs_kstate_free(ks);
        gs_engine_free(e0);
        gs_engine_free(e1);
        gs_cluster_release(&c0);
        gs_cluster_release(&c1);
    }
    for (int i = 0; i < NPODS; i++)
        gs_kpod_release(&pods[i]);
    free(pods);
    gs_cluster_release(&base);
}

/* The engine keeps counts per verdict with each request shape it remembers (64 of them): after
 * more shapes than that, and on a cluster of no nodes, the reasons still count the nodes of
 * the cluster at hand. */
Test(engine_k, reasons_count_the_cluster_at_hand_after_the_memo_turns_over)
{
    struct gs_cluster one, none;
    gs_cluster_init(&one);
    gs_cluster_init(&none);
    int id = gs_cluster_add_node(&one, "n1", gs_catalog_find("H100-80GB"), 1, 64000, 65536,
                                 GS_GPU_WHOLE, 0, NULL);
    cr_assert_geq(id, 0);
    struct gs_engine *e = gs_engine_new(gs_policy_find("gpusched"), NULL, 4, 1);
    struct gs_decision d;
    struct gs_reasons r;
    for (int s = 0; s < 64; s++) {
        struct gs_request q = gpu_req(2); /* never fits one GPU: refused, counted */
        q.cpu_milli = 1000 + s;           /* a new shape each time */
        memset(&r, 0, sizeof(r));
        cr_assert_eq(gs_engine_place_k(e, &one, &q, s, NULL, &d, &r), GS_ENOFIT);
        cr_assert_eq(r.nodes, 1, "shape %d: nodes %d, want 1", s, r.nodes);
        cr_assert_eq(r.count[GS_R_GPU_COUNT], 1, "shape %d: %d refused, want 1", s,
                     r.count[GS_R_GPU_COUNT]);
    }
    for (int s = 0; s < 8; s++) {
        struct gs_request fresh = gpu_req(2);
        fresh.cpu_milli = 5000 + s; /* takes over the way of a shape placed on one node */
        memset(&r, 0, sizeof(r));
        cr_assert_eq(gs_engine_place_k(e, &none, &fresh, s, NULL, &d, &r), GS_ENOFIT);
        cr_assert_eq(r.nodes, 0, "shape %d: nodes %d, want 0", s, r.nodes);
        for (int j = 0; j < GS_R_COUNT; j++)
            cr_assert_eq(r.count[j], 0, "shape %d: reason %d counted %d on no nodes", s, j,
                         r.count[j]);
    }
    gs_engine_free(e);
    gs_cluster_release(&one);
    gs_cluster_release(&none);
}
