/* engine.c - filters, device choice, the placement-policy table and the node selection
 * loop. The simulator (sim/) and the scheduler daemon call gs_engine_place with their own
 * cluster snapshot; both then apply the returned decision with gs_cluster_bind. The
 * baselines restate the FGD paper's simulator plugins (random, DotProduct, GpuClustering,
 * GpuPacking, BestFit, FGD), including their integer scores and tie-breaking, so published
 * figures can be reproduced; `gpusched` is our default. gs_engine_place_k runs the same loop and
 * then asks core/constraints (a pod's affinity, anti-affinity, spreading, ports, node name)
 * and the caller's tolerations callback about the nodes the engine admits, and adds
 * constraints' scores to the policy's. */
#include "engine.h"

#include "../base/error.h"
#include "../base/hash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODE_SCORE 100
#define MAX_SPEC_CPU   128000.0
#define MAX_SPEC_GPU   8000.0

/* Score memo per request shape: for each of the last SHAPES distinct requests, every node's
 * verdict and score at the node's version stamp. Nodes change one at a time (a bind), so a
 * placement is mostly memo hits and scores only the nodes that changed. Devices are chosen
 * again for the winner alone. Not used for the random policy (its score is a draw). */
#define SHAPES 64
struct shape_memo {
    uint64_t sig;
    uint64_t used; /* last use, for LRU replacement */
    uint32_t *ver;
    int8_t *why; /* -1: fits; else the gs_reason */
    int64_t *score;
    /* nodes 0..ncounted-1 by verdict: cnt[0] fit, cnt[1 + r] refused for gs_reason r */
    int32_t cnt[GS_R_COUNT + 1];
    int32_t ncounted;
};

struct gs_engine {
    const struct gs_policy *policy;
    struct shape_memo *memo_shapes; /* SHAPES entries, or NULL */
    uint64_t tick;
    const struct gs_typical *typ;
    struct gs_frag_memo *memo;
    struct gs_rng rng;
    int max_nodes;
    int64_t *scores;
    int32_t *rank; /* tie-break: the lowest rank wins among equal scores */
    int32_t *feasible;
    struct gs_alloc *choices;
    struct gs_kscore *kscores; /* gs_engine_place_k's scratch, allocated on first use */
};

/* ---------- filters ---------- */

static bool gpu_usable(const struct gs_gpu *g)
{
    return g->healthy;
}

static bool selector_matches(const struct gs_node *n, const struct gs_request *req)
{
    for (int i = 0; i < req->nsel; i++) {
        const char *v = gs_node_label(n, req->sel[i].key);
        if (!v || strcmp(v, req->sel[i].val) != 0) {
            /* nvidia.com/gpu.product values resolve through the catalog */
            if (v && strcmp(req->sel[i].key, "nvidia.com/gpu.product") == 0) {
                int a = gs_catalog_find(v), b = gs_catalog_find(req->sel[i].val);
                if (a >= 0 && a == b)
                    continue;
            }
            return false;
        }
    }
    return true;
}

static int count_whole(const struct gs_cluster *c, const struct gs_node *n)
{
    int k = 0;
    /* callers check memory per model; see mem_ok */
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
        if (gpu_usable(g) && (g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION) &&
            g->milli_free == GS_MILLI)
            k++;
    }
    return k;
}

/* Can one more replica of this GPU hold need_mib? MPS caps each client at memory/replicas;
 * time-slicing isolates nothing, so a pod that declares its memory is kept off a GPU whose
 * replicas already declared the rest. */
/* Memory of the node's GPUs (one model per node), MiB; 0 without GPUs. */
static int32_t node_gpu_mem(const struct gs_cluster *c, const struct gs_node *n)
{
    return n->ngpus > 0 ? c->gpus[n->gpu0].mem_mib : 0;
}

static bool replica_mem_ok(const struct gs_gpu *g, int32_t need_mib)
{
    if (need_mib <= 0)
        return true;
    if (g->mode == GS_GPU_MPS)
        return (int64_t)g->mem_mib / (g->replicas ? g->replicas : 1) >= need_mib;
    return (int64_t)g->mem_used_mib + need_mib <= (int64_t)g->mem_mib;
}

static int count_replicas_for(const struct gs_cluster *c, const struct gs_node *n, int32_t need)
{
    int k = 0;
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
        if (!gpu_usable(g) || (g->mode != GS_GPU_TIMESLICE && g->mode != GS_GPU_MPS))
            continue;
        int free_rep = g->replicas - g->replicas_used;
        if (need > 0 && g->mode == GS_GPU_TIMESLICE) {
            int64_t room = ((int64_t)g->mem_mib - g->mem_used_mib) / need;
            if (room < free_rep)
                free_rep = room < 0 ? 0 : (int)room;
        } else if (!replica_mem_ok(g, need)) {
            free_rep = 0;
        }
        k += free_rep;
    }
    return k;
}

static int count_replicas(const struct gs_cluster *c, const struct gs_node *n)
{
    return count_replicas_for(c, n, 0);
}

/* The profile's id in a GPU's model, looked up once per model a node's GPUs have (a lookup
 * compares names: it dominated rescoring MIG nodes). */
struct mig_profile {
    const char *name;
    int model, id;
};

static int mig_profile_of(struct mig_profile *m, int model)
{
    if (model != m->model) {
        m->model = model;
        m->id = gs_catalog_find_profile(model, m->name);
    }
    return m->id;
}

static int free_mig_slot(const struct gs_gpu *g, struct mig_profile *m)
{
    if (g->mode != GS_GPU_MIG || !gpu_usable(g))
        return -1;
    int p = mig_profile_of(m, g->model);
    if (p < 0)
        return -1;
    for (int i = 0; i < g->mig.n; i++)
        if (g->mig.inst[i].profile == p && !(g->mig_used & (1u << i)))
            return i;
    return -1;
}

static int fit_reason(const struct gs_cluster *c, int node, const struct gs_request *req)
{
    const struct gs_node *n = &c->nodes[node];
    int why = -1;
    if (n->unschedulable)
        why = GS_R_UNSCHEDULABLE;
    else if (req->kind != GS_REQ_NONE && req->model_mask &&
             (n->model < 0 || !(req->model_mask & (1u << n->model))))
        why = GS_R_MODEL;
    else if (req->nsel && !selector_matches(n, req))
        why = GS_R_SELECTOR;
    else if (n->cpu_free < req->cpu_milli)
        why = GS_R_CPU;
    else if (n->mem_free < req->mem_mib)
        why = GS_R_MEMORY;
    else if (n->pods_used >= n->pods_cap)
        why = GS_R_PODS;
    else {
        switch (req->kind) {
        case GS_REQ_GPU: {
            bool whole_mem = !req->gpu_mem_mib || node_gpu_mem(c, n) >= req->gpu_mem_mib;
            int whole = whole_mem ? count_whole(c, n) : 0;
            if (whole < req->gpus && count_replicas_for(c, n, req->gpu_mem_mib) < req->gpus)
                why = count_replicas(c, n) > 0 ? GS_R_REPLICA : GS_R_GPU_COUNT;
            break;
        }
        case GS_REQ_FRACTION: {
            bool ok = false;
            for (int i = 0; i < n->ngpus && !ok; i++) {
                const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
                ok = gpu_usable(g) && g->mode == GS_GPU_FRACTION && g->milli_free >= req->milli;
            }
            if (!ok)
                why = GS_R_GPU_SHARE;
            break;
        }
        case GS_REQ_MIG: {
            bool ok = false;
            struct mig_profile m = {req->mig, INT32_MIN, -1};
            for (int i = 0; i < n->ngpus && !ok; i++)
                ok = free_mig_slot(&c->gpus[n->gpu0 + i], &m) >= 0;
            if (!ok)
                why = GS_R_MIG_SLOT;
            break;
        }
        default:
            break;
        }
    }
    return why;
}

bool gs_engine_fits(const struct gs_cluster *c, int node, const struct gs_request *req,
                    struct gs_reasons *r)
{
    int why = fit_reason(c, node, req);
    if (r) {
        r->nodes++;
        if (why >= 0)
            r->count[why]++;
    }
    return why < 0;
}

/* Signature of everything in a request that filters or scores read. */
uint64_t gs_request_sig(const struct gs_request *r)
{
    uint64_t h = gs_hash_combine(0x6a09e667f3bcc908ULL, (uint64_t)r->cpu_milli);
    h = gs_hash_combine(h, (uint64_t)r->mem_mib);
    h = gs_hash_combine(h, (uint64_t)r->kind | (uint64_t)r->gpus << 8 |
                               (uint64_t)(uint16_t)r->milli << 16 | (uint64_t)r->model_mask << 32);
    h = gs_hash_combine(h, (uint64_t)(uint32_t)r->gpu_mem_mib | (uint64_t)r->nsel << 32);
    for (const char *p = r->mig; *p && p < r->mig + sizeof(r->mig); p++)
        h = gs_hash_combine(h, (uint64_t)(unsigned char)*p);
    for (int i = 0; i < r->nsel && i < GS_MAX_SELECTOR; i++) {
        for (const char *p = r->sel[i].key; *p && p < r->sel[i].key + GS_LABEL_KEY_MAX; p++)
            h = gs_hash_combine(h, (uint64_t)(unsigned char)*p);
        h = gs_hash_combine(h, '=');
        for (const char *p = r->sel[i].val; *p && p < r->sel[i].val + GS_LABEL_VAL_MAX; p++)
            h = gs_hash_combine(h, (uint64_t)(unsigned char)*p);
    }
    return h | 1; /* 0 marks an empty cache way */
}

void gs_reasons_str(const struct gs_reasons *r, const struct gs_request *req, char *out,
                    unsigned size)
{
    int fit = r->nodes - r->other;
    for (int i = 0; i < GS_R_COUNT; i++)
        fit -= r->count[i];
    char dev[64];
    if (req && req->kind == GS_REQ_MIG)
        snprintf(dev, sizeof(dev), "no free nvidia.com/mig-%s slot", req->mig);
    else
        snprintf(dev, sizeof(dev), "no free MIG slot of the profile");
    const char *names[GS_R_COUNT] = {"node unschedulable",
                                     "insufficient cpu",
                                     "insufficient memory",
                                     "too many pods",
                                     "GPU model mismatch",
                                     "node selector mismatch",
                                     "not enough free GPUs",
                                     "no GPU with enough free share",
                                     dev,
                                     "no free GPU replica"};
    size_t o = 0;
    int n = snprintf(out, size, "%d/%d nodes fit", fit, r->nodes);
    o = n > 0 ? (size_t)n : 0;
    const char *sep = ": ";
    /* largest counts first */
    bool done[GS_R_COUNT] = {false};
    for (;;) {
        int best = -1;
        for (int i = 0; i < GS_R_COUNT; i++)
            if (!done[i] && r->count[i] && (best < 0 || r->count[i] > r->count[best]))
                best = i;
        if (best < 0 || o + 1 >= size)
            break;
        done[best] = true;
        n = snprintf(out + o, size - o, "%s%d %s", sep, r->count[best], names[best]);
        if (n < 0)
            break;
        o += (size_t)n;
        sep = ", ";
    }
}

/* ---------- device choice ---------- */

enum gpusel { SEL_BEST, SEL_RANDOM };

static void choose_whole(const struct gs_cluster *c, const struct gs_node *n, int node,
                         const struct gs_request *req, struct gs_alloc *a)
{
    a->node = node;
    a->kind = GS_REQ_GPU;
    a->ndev = 0;
    a->milli = GS_MILLI;
    bool whole_mem = !req->gpu_mem_mib || node_gpu_mem(c, n) >= req->gpu_mem_mib;
    if (whole_mem && count_whole(c, n) >= req->gpus) {
        for (int i = 0; i < n->ngpus && a->ndev < req->gpus; i++) {
            const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
            if (gpu_usable(g) && (g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION) &&
                g->milli_free == GS_MILLI) {
                a->gpu[a->ndev] = n->gpu0 + i;
                a->slot[a->ndev] = -1;
                a->ndev++;
            }
        }
        return;
    }
    /* replicas, spread: the GPU with the fewest used replicas first (device plugin's
     * "distributed" policy) */
    uint8_t used[GS_MAX_GPUS_NODE];
    struct gs_gpu probe[GS_MAX_GPUS_NODE];
    for (int i = 0; i < n->ngpus; i++) {
        used[i] = c->gpus[n->gpu0 + i].replicas_used;
        probe[i] = c->gpus[n->gpu0 + i];
    }
    a->milli = 0;
    while (a->ndev < req->gpus) {
        int best = -1;
        for (int i = 0; i < n->ngpus; i++) {
            const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
            if (!gpu_usable(g) || (g->mode != GS_GPU_TIMESLICE && g->mode != GS_GPU_MPS))
                continue;
            if (!replica_mem_ok(&probe[i], req->gpu_mem_mib) || used[i] >= g->replicas)
                continue;
            if (best < 0 || used[i] < used[best])
                best = i;
        }
        if (best < 0)
            break;
        used[best]++;
        probe[best].mem_used_mib += req->gpu_mem_mib;
        a->gpu[a->ndev] = n->gpu0 + best;
        a->slot[a->ndev] = -1;
        a->ndev++;
    }
}

static void choose_fraction(struct gs_engine *e, const struct gs_cluster *c,
                            const struct gs_node *n, int node, const struct gs_request *req,
                            enum gpusel sel, struct gs_alloc *a)
{
    a->node = node;
    a->kind = GS_REQ_FRACTION;
    a->ndev = 0;
    a->milli = req->milli;
    int pick = -1, cnt = 0;
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
        if (!gpu_usable(g) || g->mode != GS_GPU_FRACTION || g->milli_free < req->milli)
            continue;
        if (sel == SEL_RANDOM) {
            cnt++;
            if (gs_rng_below(&e->rng, (uint64_t)cnt) == 0)
                pick = i;
        } else if (pick < 0 || g->milli_free < c->gpus[n->gpu0 + pick].milli_free) {
            pick = i;
        }
    }
    if (pick >= 0) {
        a->gpu[0] = n->gpu0 + pick;
        a->slot[0] = -1;
        a->ndev = 1;
    }
}

static void choose_mig(const struct gs_cluster *c, const struct gs_node *n, int node,
                       const struct gs_request *req, struct gs_alloc *a)
{
    /* pack: the GPU with the most instances already in use */
    a->node = node;
    a->kind = GS_REQ_MIG;
    a->ndev = 0;
    a->milli = 0;
    int best = -1, best_slot = -1, best_used = -1;
    struct mig_profile m = {req->mig, INT32_MIN, -1};
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
        int s = free_mig_slot(g, &m);
        if (s < 0)
            continue;
        int used = __builtin_popcount(g->mig_used);
        if (used > best_used) {
            best = i;
            best_slot = s;
            best_used = used;
        }
    }
    if (best >= 0) {
        a->gpu[0] = n->gpu0 + best;
        a->slot[0] = (int8_t)best_slot;
        a->ndev = 1;
    }
}

static void choose_devices(struct gs_engine *e, const struct gs_cluster *c, int node,
                           const struct gs_request *req, enum gpusel sel, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    switch (req->kind) {
    case GS_REQ_GPU:
        choose_whole(c, n, node, req, a);
        break;
    case GS_REQ_FRACTION:
        choose_fraction(e, c, n, node, req, sel, a);
        break;
    case GS_REQ_MIG:
        choose_mig(c, n, node, req, a);
        break;
    default:
        a->node = node;
        a->kind = GS_REQ_NONE;
        a->ndev = 0;
        a->milli = 0;
    }
}

/* milli-GPU left on a node over milli-accounted GPUs; MIG and shared GPUs count by units */
static int64_t node_gpu_left(const struct gs_cluster *c, const struct gs_node *n)
{
    int64_t t = 0;
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
        if (g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION)
            t += g->milli_free;
        else
            t += (int64_t)((1.0 - gs_gpu_alloc_units(g)) * GS_MILLI);
    }
    return t;
}

static int64_t req_gpu_milli(const struct gs_request *r)
{
    if (r->kind == GS_REQ_GPU || r->kind == GS_REQ_FRACTION)
        return (int64_t)r->gpus * r->milli;
    if (r->kind == GS_REQ_MIG)
        return (int64_t)(gs_request_units(r, -1) * GS_MILLI);
    return 0;
}

/* ---------- policies ---------- */

static int64_t score_random(struct gs_engine *e, const struct gs_cluster *c, int node,
                            const struct gs_request *req, struct gs_alloc *a)
{
    choose_devices(e, c, node, req, SEL_RANDOM, a);
    return (int64_t)(gs_rng_next(&e->rng) >> 2); /* the highest draw is a uniform pick */
}

static int64_t score_dotprod(struct gs_engine *e, const struct gs_cluster *c, int node,
                             const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    choose_devices(e, c, node, req, SEL_BEST, a);
    double nv0 = n->cpu_free / MAX_SPEC_CPU, nv1 = node_gpu_left(c, n) / MAX_SPEC_GPU;
    double pv0 = req->cpu_milli / MAX_SPEC_CPU, pv1 = req_gpu_milli(req) / MAX_SPEC_GPU;
    double dot = (nv0 * pv0 + nv1 * pv1) / 2.0;
    return (int64_t)(MAX_NODE_SCORE * (1.0 - dot));
}

static int64_t score_bestfit(struct gs_engine *e, const struct gs_cluster *c, int node,
                             const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    choose_devices(e, c, node, req, SEL_BEST, a);
    double s = (double)(n->cpu_free - req->cpu_milli) / MAX_SPEC_CPU * 0.5 +
               (double)(node_gpu_left(c, n) - req_gpu_milli(req)) / MAX_SPEC_GPU * 0.5;
    return (int64_t)((1.0 - s) * MAX_NODE_SCORE);
}

static int64_t score_packing(struct gs_engine *e, const struct gs_cluster *c, int node,
                             const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    choose_devices(e, c, node, req, SEL_BEST, a);
    if (req->kind == GS_REQ_NONE)
        return 0;
    int fully_free = count_whole(c, n);
    if (req->kind == GS_REQ_MIG || (req->kind == GS_REQ_GPU && fully_free < req->gpus)) {
        /* slots and replicas: prefer GPUs already in use */
        int64_t left = node_gpu_left(c, n);
        return MAX_NODE_SCORE - left * 100 / (GS_MILLI * (n->ngpus ? n->ngpus : 1)) / 2;
    }
    if (fully_free == n->ngpus) {
        int64_t s = MAX_NODE_SCORE / 3 - fully_free;
        return s > fully_free ? s : fully_free;
    }
    /* ascending free share: the GPUs the pod would take */
    int16_t fr[GS_MAX_GPUS_NODE];
    int idx[GS_MAX_GPUS_NODE];
    for (int i = 0; i < n->ngpus; i++) {
        fr[i] = c->gpus[n->gpu0 + i].milli_free;
        idx[i] = i;
    }
    for (int x = 1; x < n->ngpus; x++) {
        int v = idx[x], y = x - 1;
        while (y >= 0 && fr[idx[y]] > fr[v]) {
            idx[y + 1] = idx[y];
            y--;
        }
        idx[y + 1] = v;
    }
    int need = req->gpus, use_free = 0;
    int64_t ratio = 0;
    for (int k = 0; k < n->ngpus && need > 0; k++) {
        int16_t f = fr[idx[k]];
        if (req->milli <= f) {
            need--;
            ratio += f * 100 / GS_MILLI;
            if (f == GS_MILLI)
                use_free++;
        }
    }
    if (use_free > 0) {
        int64_t s = MAX_NODE_SCORE / 2 - use_free;
        return s > MAX_NODE_SCORE / 3 ? s : MAX_NODE_SCORE / 3;
    }
    int64_t s = MAX_NODE_SCORE - ratio / 10;
    return s > MAX_NODE_SCORE / 2 ? s : MAX_NODE_SCORE / 2;
}

static int64_t score_clustering(struct gs_engine *e, const struct gs_cluster *c, int node,
                                const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    choose_devices(e, c, node, req, SEL_BEST, a);
    int tag = gs_request_affinity(req);
    if (tag < 0)
        return 0;
    int distinct = 0;
    for (int i = 0; i < 6; i++)
        distinct += n->affinity[i] > 0;
    int64_t base = (MAX_NODE_SCORE / 4) * ((int64_t)MAX_SPEC_GPU - node_gpu_left(c, n)) /
                   (int64_t)MAX_SPEC_GPU;
    if (n->affinity[tag] > 0)
        return base + (distinct == 1 ? MAX_NODE_SCORE * 3 / 4 : MAX_NODE_SCORE * 2 / 4);
    return base + (distinct == 0 ? MAX_NODE_SCORE / 4 : 0);
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* Fragmentation of a node before and after taking a request; fills the device choice.
 * Returns the best (largest) F_before - F_after. For a fraction, every GPU that fits is
 * tried and the first one with the largest decrease wins. */
static double frag_delta(struct gs_engine *e, const struct gs_cluster *c, int node,
                         const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    int16_t fr[GS_MAX_GPUS_NODE];
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
        fr[i] = (g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION) && gpu_usable(g)
                    ? g->milli_free
                    : 0;
    }
    double fb = gs_frag_memo_get(e->memo, e->typ, n->model, n->cpu_free, fr, n->ngpus);
    int64_t cpu_after = n->cpu_free - req->cpu_milli;
    if (req->kind == GS_REQ_FRACTION) {
        a->node = node;
        a->kind = GS_REQ_FRACTION;
        a->milli = req->milli;
        a->ndev = 0;
        double best = 0;
        int64_t best_int = 0;
        for (int i = 0; i < n->ngpus; i++) {
            const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
            if (!gpu_usable(g) || g->mode != GS_GPU_FRACTION || g->milli_free < req->milli)
                continue;
            bool seen = false;
            for (int k = 0; k < i && !seen; k++)
                seen = fr[k] == fr[i] && c->gpus[n->gpu0 + k].mode == GS_GPU_FRACTION &&
                       fr[k] >= req->milli;
            if (seen)
                continue; /* same state after: same score, and the earlier index wins */
            fr[i] = (int16_t)(fr[i] - req->milli);
            double fa = gs_frag_memo_get(e->memo, e->typ, n->model, cpu_after, fr, n->ngpus);
            fr[i] = (int16_t)(fr[i] + req->milli);
            double d = fb - fa;
            int64_t di = (int64_t)(sigmoid(d / 1000.0) * MAX_NODE_SCORE);
            if (a->ndev == 0 || di > best_int) {
                best = d;
                best_int = di;
                a->gpu[0] = n->gpu0 + i;
                a->slot[0] = -1;
                a->ndev = 1;
            }
        }
        return best;
    }
    choose_devices(e, c, node, req, SEL_BEST, a);
    if (req->kind == GS_REQ_GPU && a->milli == GS_MILLI)
        for (int k = 0; k < a->ndev; k++)
            fr[a->gpu[k] - n->gpu0] = 0;
    double fa = gs_frag_memo_get(e->memo, e->typ, n->model, cpu_after, fr, n->ngpus);
    return fb - fa;
}

static int64_t score_fgd(struct gs_engine *e, const struct gs_cluster *c, int node,
                         const struct gs_request *req, struct gs_alloc *a)
{
    if (req->kind == GS_REQ_MIG) {
        choose_devices(e, c, node, req, SEL_BEST, a);
        return score_packing(e, c, node, req, a);
    }
    double d = frag_delta(e, c, node, req, a);
    return (int64_t)(sigmoid(d / 1000.0) * MAX_NODE_SCORE);
}

/* gpusched: FGD's fragmentation gradient, bucketed as FGD buckets it (a score step is about
 * 40 milli-GPU of fragmentation), measured over the shapes each node can host
 * (GS_FRAG_HOSTABLE, core/frag.h: a pod that names another GPU model is not stranded by this
 * node's idle GPUs, so unconstrained pods are not drawn to the scarce models that constrained
 * pods need), with two tie-breaks that FGD leaves to node order:
 * CPU-only pods go where the least GPU sits idle, so their CPU does not strand GPUs; GPU
 * pods prefer nodes already in use, which keeps empty nodes whole for multi-GPU pods. MIG
 * requests pack slots onto nodes and GPUs already in use. Measured on the openb traces
 * against fgd in tests/unit/test_openb.c. */
static int64_t score_gpusched(struct gs_engine *e, const struct gs_cluster *c, int node,
                              const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    int64_t idle = node_gpu_left(c, n);
    if (req->kind == GS_REQ_MIG) {
        choose_devices(e, c, node, req, SEL_BEST, a);
        return ((int64_t)1 << 40) - idle * 1024 - n->cpu_free / 1000;
    }
    double d = frag_delta(e, c, node, req, a);
    int64_t bucket = (int64_t)(sigmoid(d / 1000.0) * MAX_NODE_SCORE);
    if (req->kind == GS_REQ_NONE)
        return bucket * ((int64_t)1 << 32) + (((int64_t)1 << 20) - idle);
    bool in_use = idle < (int64_t)n->ngpus * GS_MILLI;
    return bucket * ((int64_t)1 << 32) + (in_use ? 1 : 0);
}

static const struct gs_policy policies[] = {
    {"gpusched", "fragmentation gradient; CPU pods off idle GPUs; used nodes first (default)",
     score_gpusched, false},
    {"fgd", "FGD: fragmentation gradient descent (Weng et al., ATC'23)", score_fgd, false},
    {"bestfit", "least weighted leftover CPU and GPU (0.5/0.5)", score_bestfit, true},
    {"packing", "GpuPacking: shared GPUs, then free GPUs on used nodes, then free nodes",
     score_packing, false},
    {"clustering", "GpuClustering: nodes already running pods of the same GPU shape",
     score_clustering, false},
    {"dotprod", "Tetris dot product of free and requested (CPU, GPU)", score_dotprod, false},
    {"random", "uniformly random feasible node", score_random, false},
};

int gs_policy_count(void)
{
    return (int)(sizeof(policies) / sizeof(policies[0]));
}

const struct gs_policy *gs_policy_get(int i)
{
    return i >= 0 && i < gs_policy_count() ? &policies[i] : NULL;
}

const struct gs_policy *gs_policy_find(const char *name)
{
    for (int i = 0; i < gs_policy_count(); i++)
        if (strcmp(policies[i].name, name) == 0)
            return &policies[i];
    return NULL;
}

/* ---------- engine ---------- */

struct gs_engine *gs_engine_new(const struct gs_policy *policy, const struct gs_typical *typical,
                                int max_nodes, uint64_t seed)
{
    struct gs_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->policy = policy ? policy : &policies[0];
    e->typ = typical;
    e->max_nodes = max_nodes > 0 ? max_nodes : 1;
    gs_rng_init(&e->rng, seed);
    e->scores = malloc(sizeof(*e->scores) * (size_t)e->max_nodes);
    e->feasible = malloc(sizeof(*e->feasible) * (size_t)e->max_nodes);
    e->rank = malloc(sizeof(*e->rank) * (size_t)e->max_nodes);
    if (e->rank) {
        /* a seeded random priority order over nodes, as the FGD paper's simulator gets by
         * prefixing node names with a random permutation and taking the smallest name */
        for (int i = 0; i < e->max_nodes; i++)
            e->rank[i] = i;
        for (int i = e->max_nodes - 1; i > 0; i--) {
            int j = (int)gs_rng_below(&e->rng, (uint64_t)i + 1);
            int32_t t = e->rank[i];
            e->rank[i] = e->rank[j];
            e->rank[j] = t;
        }
    }
    e->choices = malloc(sizeof(*e->choices) * (size_t)e->max_nodes);
    bool memo_ok = e->policy->score != score_random;
    if (memo_ok) {
        e->memo_shapes = calloc(SHAPES, sizeof(*e->memo_shapes));
        for (int k = 0; e->memo_shapes && k < SHAPES; k++) {
            struct shape_memo *sm = &e->memo_shapes[k];
            sm->ver = calloc((size_t)e->max_nodes, sizeof(*sm->ver));
            sm->why = calloc((size_t)e->max_nodes, sizeof(*sm->why));
            sm->score = calloc((size_t)e->max_nodes, sizeof(*sm->score));
            if (!sm->ver || !sm->why || !sm->score)
                memo_ok = false;
        }
    }
    static const struct gs_typical empty;
    if (!e->typ)
        e->typ = &empty;

    if (e->policy->score == score_fgd)
        e->memo = gs_frag_memo_new(GS_FRAG_FGD);
    else if (e->policy->score == score_gpusched)
        e->memo = gs_frag_memo_new(GS_FRAG_HOSTABLE);
    if (!e->scores || !e->feasible || !e->choices || !e->rank ||
        (e->policy->score != score_random && (!e->memo_shapes || !memo_ok))) {
        gs_engine_free(e);
        return NULL;
    }
    return e;
}

void gs_engine_free(struct gs_engine *e)
{
    if (!e)
        return;
    gs_frag_memo_free(e->memo);
    free(e->scores);
    for (int k = 0; e->memo_shapes && k < SHAPES; k++) {
        free(e->memo_shapes[k].ver);
        free(e->memo_shapes[k].why);
        free(e->memo_shapes[k].score);
    }
    free(e->memo_shapes);
    free(e->rank);
    free(e->feasible);
    free(e->choices);
    free(e->kscores);
    free(e);
}

struct gs_rng *gs_engine_rng(struct gs_engine *e)
{
    return &e->rng;
}

/* The memo way for this request's shape (NULL without a memo), marked used. */
static struct shape_memo *memo_for(struct gs_engine *e, const struct gs_request *req)
{
    if (!e->memo_shapes)
        return NULL;
    struct shape_memo *sm = NULL;
    uint64_t sig = gs_request_sig(req);
    int lru = 0;
    for (int k = 0; k < SHAPES && !sm; k++) {
        if (e->memo_shapes[k].sig == sig)
            sm = &e->memo_shapes[k];
        else if (e->memo_shapes[k].used < e->memo_shapes[lru].used)
            lru = k;
    }
    if (!sm) {
        sm = &e->memo_shapes[lru];
        sm->sig = sig;
        memset(sm->ver, 0, sizeof(*sm->ver) * (size_t)e->max_nodes);
        sm->ncounted = -1; /* counted again, even for a cluster of no nodes */
    }
    sm->used = ++e->tick;
    return sm;
}

/* Is node na with score sa better than node nb with sb: the higher score, then the lower
 * rank. */
static inline bool better(const struct gs_engine *e, int64_t sa, int na, int64_t sb, int nb)
{
    return sa > sb || (sa == sb && e->rank[na] < e->rank[nb]);
}

/* ---------- Kubernetes constraints (gs_engine_place_k) ---------- */

#define KTAINT GS_KVERDICT_COUNT       /* a taint verdict, beside the gs_kverdicts */
#define KFIT   (GS_KVERDICT_COUNT + 1) /* the caller's resource fit refused the node */
#define KTOP   32                      /* candidates examined in order before filtering them all */

/* Taints, then the constraints: -1 when node i passes both, else KTAINT or the gs_kverdict. */
static int kverdict(const struct gs_cluster *c, const struct gs_kplace *k, bool kfilter, int i)
{
    if (k->tol && !k->tol(k->tol_ctx, i))
        return KTAINT;
    if (k->fit && !k->fit(k->fit_ctx, i))
        return KFIT;
    if (kfilter) {
        enum gs_kverdict v = gs_kprep_filter(k->kp, k->ks, c, i);
        if (v != GS_KFIT && !(v == GS_KNO_NODE_AFFINITY && k->selector_in_req))
            return (int)v;
    }
    return -1;
}

static void count_k(struct gs_reasons *r, int v)
{
    if (v == KTAINT)
        r->taint++;
    else if (v == KFIT)
        r->fit++;
    else
        r->kverdict[v]++;
}

/* A node no filter admits, counted under the first that refuses it in upstream's order:
 * node unschedulable, node name, taints, node affinity (with the engine's model and selector
 * checks), host ports, the engine's resource and device fit, spreading and inter-pod
 * (anti-)affinity. why is the engine's verdict. */
static void count_refusal(const struct gs_cluster *c, int i, int why, const struct gs_kplace *k,
                          bool kfilter, struct gs_reasons *r)
{
    enum gs_kverdict v = GS_KFIT;
    if (kfilter) {
        v = gs_kprep_filter(k->kp, k->ks, c, i);
        if (v == GS_KNO_NODE_AFFINITY && k->selector_in_req)
            v = GS_KFIT;
    }
    if (why == GS_R_UNSCHEDULABLE)
        r->count[why]++;
    else if (v == GS_KNO_NODE_NAME)
        r->kverdict[v]++;
    else if (k->tol && !k->tol(k->tol_ctx, i))
        r->taint++;
    else if (why < 0 && k->fit && !k->fit(k->fit_ctx, i))
        r->fit++;
    else if (why == GS_R_MODEL || why == GS_R_SELECTOR)
        r->count[why]++;
    else if (v == GS_KNO_NODE_AFFINITY || v == GS_KNO_PORTS)
        r->kverdict[v]++;
    else if (why >= 0)
        r->count[why]++;
    else if (v != GS_KFIT)
        r->kverdict[v]++;
}

/* The Kubernetes scores of the nf nodes in e->feasible into e->kscores. Returns 1 when every
 * one is zero, 0 when not, or GS_ENOMEM. */
static int kscore(struct gs_engine *e, const struct gs_cluster *c, const struct gs_kplace *k,
                  int nf)
{
    if (!e->kscores) {
        e->kscores = malloc(sizeof(*e->kscores) * (size_t)e->max_nodes);
        if (!e->kscores)
            return GS_ENOMEM;
    }
    int rc = gs_kprep_score(k->kp, k->ks, c, e->feasible, nf, e->kscores, k->tol, k->tol_ctx);
    if (rc)
        return rc;
    /* all zero, read as words (a loop the compiler vectorises) */
    const unsigned char *b = (const unsigned char *)e->kscores;
    size_t words = sizeof(*e->kscores) * (size_t)nf / sizeof(uint64_t);
    uint64_t any = 0;
    for (size_t w = 0; w < words; w++) {
        uint64_t x;
        memcpy(&x, b + w * sizeof(x), sizeof(x));
        any |= x;
    }
    return any == 0;
}

/* The winner among the nf feasible nodes by the documented weighting, from e->kscores; *best
 * (the policy's choice) stays when the Kubernetes scores are equal on every node. */
static void kscore_choose(struct gs_engine *e, int nf, int *best)
{
    int64_t k0 = gs_kscore_total(&e->kscores[0]);
    bool flat = true;
    int64_t hi = e->scores[0], lo = e->scores[0];
    for (int j = 1; j < nf; j++) {
        flat &= gs_kscore_total(&e->kscores[j]) == k0;
        if (e->scores[j] > hi)
            hi = e->scores[j];
        if (e->scores[j] < lo)
            lo = e->scores[j];
    }
    if (flat)
        return;
    /* min-max as upstream normalises; in double, as raw policy scores reach 2^62 */
    int b = 0;
    int64_t bt = INT64_MIN;
    for (int j = 0; j < nf; j++) {
        int64_t g =
            hi == lo ? 0
                     : (int64_t)((double)(e->scores[j] - lo) / (double)(hi - lo) * GS_KMAX_SCORE);
        int64_t t = GS_ENGINE_KWEIGHT_POLICY * g + gs_kscore_total(&e->kscores[j]);
        if (j == 0 || t > bt ||
            (t == bt && better(e, e->scores[j], e->feasible[j], e->scores[b], e->feasible[b]))) {
            b = j;
            bt = t;
        }
    }
    *best = b;
}

/* When the Kubernetes scores cannot change the order (all zero), the winner is the first node
 * in the policy's order that taints and constraints admit: examine the best, then the next
 * KTOP, before filtering every node. Returns the winner's index in e->feasible, -1 when every
 * node was examined and refused, -2 when undecided. */
static int lazy_pick(struct gs_engine *e, const struct gs_cluster *c, const struct gs_kplace *k,
                     bool kfilter, int nf, int best, struct gs_reasons *lr)
{
    int v = kverdict(c, k, kfilter, e->feasible[best]);
    if (v < 0)
        return best;
    count_k(lr, v);
    /* the next KTOP by (score, rank), sorted; the last one's score and rank in registers */
    int top[KTOP], nt = 0;
    int64_t ls = INT64_MAX;
    int32_t lrk = -1;
    for (int j = 0; j < nf; j++) {
        int64_t sc = e->scores[j];
        if (j == best || (nt == KTOP && (sc < ls || (sc == ls && e->rank[e->feasible[j]] > lrk))))
            continue;
        int at = nt < KTOP ? nt++ : KTOP - 1;
        while (at > 0 &&
               better(e, sc, e->feasible[j], e->scores[top[at - 1]], e->feasible[top[at - 1]])) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = j;
        ls = e->scores[top[nt - 1]];
        lrk = e->rank[e->feasible[top[nt - 1]]];
    }
    for (int t = 0; t < nt; t++) {
        if ((v = kverdict(c, k, kfilter, e->feasible[top[t]])) < 0)
            return top[t];
        count_k(lr, v);
    }
    return nf - 1 <= KTOP ? -1 : -2;
}

/* ---------- node selection ---------- */

/* The engine's verdict on node i into the memo. */
static void memo_refresh(struct gs_engine *e, const struct gs_cluster *c,
                         const struct gs_request *req, struct shape_memo *sm, int i)
{
    int why = fit_reason(c, i, req);
    if (i < sm->ncounted) {
        sm->cnt[1 + sm->why[i]]--;
        sm->cnt[1 + why]++;
    }
    sm->ver[i] = c->nodes[i].version;
    sm->why[i] = (int8_t)why;
    sm->score[i] = why < 0 ? e->policy->score(e, c, i, req, &e->choices[0]) : 0;
}

/* gs_engine_place and gs_engine_place_k (k NULL: no taints or constraints, and the choice is
 * the policy's alone). The engine's filters and scores come from the memo, refreshed first for
 * the nodes that changed; the nodes they admit are e->feasible. Taints and constraints then
 * narrow those down, lazily when the Kubernetes scores are all zero (see lazy_pick). */
static int place(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                 int32_t pod, const struct gs_kplace *k, struct gs_decision *d,
                 struct gs_reasons *r)
{
    if (c->nnodes > e->max_nodes)
        return GS_EINVAL;
    struct shape_memo *sm = memo_for(e, req);
    struct gs_reasons lr; /* this call's counts, added to r at the end */
    memset(&lr, 0, sizeof(lr));
    int nf = 0, best = -1;
    /* the feasible list, for what looks at every feasible node: normalising, constraints */
    bool list = !sm || e->policy->normalize || (k && (k->kp || k->tol || k->fit));
    if (sm) {
        for (int i = 0; i < c->nnodes; i++)
            if (sm->ver[i] != c->nodes[i].version)
                memo_refresh(e, c, req, sm, i);
        const int8_t *why = sm->why;
        const int64_t *score = sm->score;
        if (sm->ncounted != c->nnodes) {
            memset(sm->cnt, 0, sizeof(sm->cnt));
            for (int i = 0; i < c->nnodes; i++)
                sm->cnt[1 + why[i]]++;
            sm->ncounted = c->nnodes;
        }
        for (int j = 0; j < GS_R_COUNT; j++)
            lr.count[j] = sm->cnt[1 + j];
        /* the best by (score, rank), kept in registers: ties are common (empty nodes) */
        int64_t bs = INT64_MIN;
        int32_t br = INT32_MAX;
        int bi = -1;
        if (list) {
            /* branch-free: whether a node fits follows no pattern a predictor learns */
            int32_t *fe = e->feasible;
            int64_t *fs = e->scores;
            const int32_t *rank = e->rank;
            for (int i = 0; i < c->nnodes; i++) {
                int64_t sc = score[i];
                int32_t rk = rank[i];
                bool fit = why[i] < 0;
                fe[nf] = i;
                fs[nf] = sc;
                bool b = fit & ((sc > bs) | ((sc == bs) & (rk < br)));
                bs = b ? sc : bs;
                br = b ? rk : br;
                bi = b ? nf : bi;
                nf += fit;
            }
        } else {
            for (int i = 0; i < c->nnodes; i++) {
                int64_t sc = score[i];
                int32_t rk = e->rank[i];
                if (why[i] < 0 && (sc > bs || (sc == bs && rk < br))) {
                    bs = sc;
                    br = rk;
                    bi = i;
                }
            }
            if (bi >= 0) { /* the winner alone stands for the feasible nodes */
                e->feasible[0] = bi;
                e->scores[0] = bs;
                bi = 0;
                nf = 1;
            }
        }
        best = bi;
    } else {
        for (int i = 0; i < c->nnodes; i++) {
            int why = fit_reason(c, i, req);
            if (why >= 0) {
                lr.count[why]++;
                continue;
            }
            int64_t s = e->policy->score(e, c, i, req, &e->choices[nf]);
            e->feasible[nf] = i;
            e->scores[nf] = s;
            if (best < 0 || better(e, s, i, e->scores[best], e->feasible[best]))
                best = nf;
            nf++;
        }
    }
    bool kfilter = k && k->kp && !gs_kprep_trivial(k->kp);
    bool kzero = !k || !k->kp; /* the Kubernetes scores are all zero */
    bool kscored = false;      /* e->kscores are those of e->feasible[0..nf) */
    if (nf > 0 && !kzero) {
        int rc = kscore(e, c, k, nf);
        if (rc < 0)
            return rc;
        kzero = rc == 1;
        kscored = true;
    }
    if (nf > 0 && k && (k->tol || k->fit || kfilter)) {
        int w = -2;
        if (sm && !e->policy->normalize && kzero)
            w = lazy_pick(e, c, k, kfilter, nf, best, &lr);
        if (w >= 0) {
            best = w;
        } else if (w == -1) {
            nf = 0;
        } else {
            /* every node through taints and constraints */
            int n2 = 0;
            lr.taint = lr.fit = 0;
            memset(lr.kverdict, 0, sizeof(lr.kverdict));
            best = -1;
            for (int j = 0; j < nf; j++) {
                int i = e->feasible[j], v = kverdict(c, k, kfilter, i);
                if (v >= 0) {
                    count_k(&lr, v);
                    continue;
                }
                e->feasible[n2] = i;
                e->scores[n2] = e->scores[j];
                if (!sm)
                    e->choices[n2] = e->choices[j];
                if (best < 0 || better(e, e->scores[n2], i, e->scores[best], e->feasible[best]))
                    best = n2;
                n2++;
            }
            kscored &= n2 == nf;
            nf = n2;
        }
    }
    if (nf == 0 && k && r) {
        /* no node fits: say why in upstream's order, node by node (the memo holds every
         * node's engine verdict now) */
        memset(&lr, 0, sizeof(lr));
        bool kf = k->kp && !gs_kprep_trivial(k->kp);
        for (int i = 0; i < c->nnodes; i++)
            count_refusal(c, i, sm ? sm->why[i] : fit_reason(c, i, req), k, kf, &lr);
    }
    if (r) {
        for (int j = 0; j < GS_R_COUNT; j++)
            r->count[j] += lr.count[j];
        r->nodes += c->nnodes;
        r->other += lr.taint + lr.fit;
        r->taint += lr.taint;
        r->fit += lr.fit;
        for (int v = 0; v < GS_KVERDICT_COUNT; v++) {
            r->other += lr.kverdict[v];
            r->kverdict[v] += lr.kverdict[v];
        }
    }
    if (nf == 0)
        return GS_ENOFIT;
    if (e->policy->normalize) {
        int64_t hi = INT64_MIN, lo = INT64_MAX;
        for (int j = 0; j < nf; j++) {
            if (e->scores[j] > hi)
                hi = e->scores[j];
            if (e->scores[j] < lo)
                lo = e->scores[j];
        }
        best = 0;
        for (int j = 0; j < nf; j++) {
            e->scores[j] = hi == lo ? 0 : (e->scores[j] - lo) * MAX_NODE_SCORE / (hi - lo);
            if (j > 0 &&
                better(e, e->scores[j], e->feasible[j], e->scores[best], e->feasible[best]))
                best = j;
        }
    }
    if (!kzero) {
        /* scored over the feasible nodes, as upstream scores only those */
        int rc = kscored ? 0 : kscore(e, c, k, nf);
        if (rc < 0)
            return rc;
        if (rc == 0)
            kscore_choose(e, nf, &best);
    }
    memset(d, 0, sizeof(*d));
    d->kind = GS_DECIDE_BIND;
    d->pod = pod;
    if (sm) /* devices of the winner: its score function chooses them again */
        e->policy->score(e, c, e->feasible[best], req, &d->alloc);
    else
        d->alloc = e->choices[best];
    if (req->kind != GS_REQ_NONE && d->alloc.ndev == 0)
        return GS_EINTERNAL;
    return 0;
}

int gs_engine_place(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                    int32_t pod, struct gs_decision *d, struct gs_reasons *r)
{
    return place(e, c, req, pod, NULL, d, r);
}

int gs_engine_place_k(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                      int32_t pod, const struct gs_kplace *k, struct gs_decision *d,
                      struct gs_reasons *r)
{
    if (k && !k->ks != !k->kp)
        return GS_EINVAL;
    return place(e, c, req, pod, k, d, r);
}

int64_t gs_engine_score(struct gs_engine *e, const struct gs_cluster *c, int node,
                        const struct gs_request *req, struct gs_alloc *choice)
{
    return e->policy->score(e, c, node, req, choice);
}

int gs_engine_first_fit(const struct gs_cluster *c, const struct gs_request *req,
                        struct gs_alloc *a)
{
    for (int i = 0; i < c->nnodes; i++) {
        if (!gs_engine_fits(c, i, req, NULL))
            continue;
        const struct gs_node *n = &c->nodes[i];
        switch (req->kind) {
        case GS_REQ_GPU:
            choose_whole(c, n, i, req, a);
            break;
        case GS_REQ_MIG:
            choose_mig(c, n, i, req, a);
            break;
        case GS_REQ_FRACTION: {
            a->node = i;
            a->kind = GS_REQ_FRACTION;
            a->milli = req->milli;
            a->ndev = 0;
            for (int k = 0; k < n->ngpus && !a->ndev; k++) {
                const struct gs_gpu *g = &c->gpus[n->gpu0 + k];
                if (gpu_usable(g) && g->mode == GS_GPU_FRACTION && g->milli_free >= req->milli) {
                    a->gpu[0] = n->gpu0 + k;
                    a->slot[0] = -1;
                    a->ndev = 1;
                }
            }
            break;
        }
        default:
            a->node = i;
            a->kind = GS_REQ_NONE;
            a->ndev = 0;
        }
        return 0;
    }
    return GS_ENOFIT;
}

/* ---------- applying decisions ---------- */

static int apply(struct gs_cluster *c, const struct gs_request *req, const struct gs_alloc *a,
                 int sign)
{
    if (a->node < 0 || a->node >= c->nnodes)
        return GS_EINVAL;
    struct gs_node *n = &c->nodes[a->node];
    /* validate first: nothing changes on error */
    for (int k = 0; k < a->ndev; k++) {
        if (a->gpu[k] < n->gpu0 || a->gpu[k] >= n->gpu0 + n->ngpus)
            return GS_EINVAL;
        const struct gs_gpu *g = &c->gpus[a->gpu[k]];
        switch (g->mode) {
        case GS_GPU_WHOLE:
        case GS_GPU_FRACTION:
            if (sign > 0 && g->milli_free < a->milli)
                return GS_EINVAL;
            if (sign < 0 && g->milli_free + a->milli > GS_MILLI)
                return GS_EINVAL;
            break;
        case GS_GPU_TIMESLICE:
        case GS_GPU_MPS: {
            int same = 0;
            for (int j = 0; j < a->ndev; j++)
                same += a->gpu[j] == a->gpu[k];
            if (sign > 0 && g->replicas_used + same > g->replicas)
                return GS_EINVAL;
            if (sign < 0 && g->replicas_used < same)
                return GS_EINVAL;
            break;
        }
        case GS_GPU_MIG:
            if (a->slot[k] < 0 || a->slot[k] >= g->mig.n)
                return GS_EINVAL;
            if (sign > 0 && (g->mig_used & (1u << a->slot[k])))
                return GS_EINVAL;
            if (sign < 0 && !(g->mig_used & (1u << a->slot[k])))
                return GS_EINVAL;
            break;
        }
    }
    if (sign > 0 && (n->cpu_free < req->cpu_milli || n->mem_free < req->mem_mib))
        return GS_EINVAL;
    for (int k = 0; k < a->ndev; k++) {
        struct gs_gpu *g = &c->gpus[a->gpu[k]];
        switch (g->mode) {
        case GS_GPU_WHOLE:
        case GS_GPU_FRACTION:
            g->milli_free = (int16_t)(g->milli_free - sign * a->milli);
            break;
        case GS_GPU_TIMESLICE:
        case GS_GPU_MPS:
            g->replicas_used = (uint8_t)(g->replicas_used + sign);
            g->mem_used_mib += sign * req->gpu_mem_mib;
            break;
        case GS_GPU_MIG:
            if (sign > 0)
                g->mig_used |= (uint8_t)(1u << a->slot[k]);
            else
                g->mig_used &= (uint8_t) ~(1u << a->slot[k]);
            break;
        }
    }
    n->cpu_free -= sign * req->cpu_milli;
    n->mem_free -= sign * req->mem_mib;
    n->pods_used += sign;
    int tag = gs_request_affinity(req);
    if (tag >= 0)
        n->affinity[tag] = (uint16_t)(n->affinity[tag] + sign);
    gs_node_touch(n);
    return 0;
}

int gs_cluster_bind(struct gs_cluster *c, const struct gs_request *req, const struct gs_alloc *a)
{
    return apply(c, req, a, +1);
}

int gs_cluster_unbind(struct gs_cluster *c, const struct gs_request *req, const struct gs_alloc *a)
{
    return apply(c, req, a, -1);
}
