/* policy.c - the placement policies (policy.h): one score function per row of one table.
 * The baselines restate the FGD paper's simulator plugins (random, DotProduct, GpuClustering,
 * GpuPacking, BestFit, FGD), including their integer scores and tie-breaking, so published
 * figures can be reproduced; `gpusched` is our default. A score also chooses the devices
 * (fit.c); the engine (engine.c) calls the scores through its memo. */
#include "engine_internal.h"

#include "fit.h"
#include "frag.h"
#include "policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODE_SCORE 100
#define MAX_SPEC_CPU   128000.0
#define MAX_SPEC_GPU   8000.0

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

/* The devices of a share are a draw, made for every node in turn; other kinds' devices draw
 * nothing, so they are chosen for the winner alone (a->node -1: the engine's finish). */
static int64_t score_random(struct gs_engine *e, const struct gs_cluster *c, int node,
                            const struct gs_request *req, struct gs_alloc *a)
{
    if (req->kind == GS_REQ_FRACTION)
        gs__fit_choose(&e->rng, c, node, req, GS__FIT_RANDOM, a);
    else
        a->node = -1;
    return (int64_t)(gs_rng_next(&e->rng) >> 2); /* the highest draw is a uniform pick */
}

static int64_t score_dotprod(struct gs_engine *e, const struct gs_cluster *c, int node,
                             const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    gs__fit_choose(&e->rng, c, node, req, GS__FIT_BEST, a);
    double nv0 = n->cpu_free / MAX_SPEC_CPU, nv1 = node_gpu_left(c, n) / MAX_SPEC_GPU;
    double pv0 = req->cpu_milli / MAX_SPEC_CPU, pv1 = req_gpu_milli(req) / MAX_SPEC_GPU;
    double dot = (nv0 * pv0 + nv1 * pv1) / 2.0;
    return (int64_t)(MAX_NODE_SCORE * (1.0 - dot));
}

static int64_t score_bestfit(struct gs_engine *e, const struct gs_cluster *c, int node,
                             const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    gs__fit_choose(&e->rng, c, node, req, GS__FIT_BEST, a);
    double s = (double)(n->cpu_free - req->cpu_milli) / MAX_SPEC_CPU * 0.5 +
               (double)(node_gpu_left(c, n) - req_gpu_milli(req)) / MAX_SPEC_GPU * 0.5;
    return (int64_t)((1.0 - s) * MAX_NODE_SCORE);
}

static int64_t score_packing(struct gs_engine *e, const struct gs_cluster *c, int node,
                             const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    gs__fit_choose(&e->rng, c, node, req, GS__FIT_BEST, a);
    if (req->kind == GS_REQ_NONE)
        return 0;
    int fully_free = gs__fit_count_whole(c, n);
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
    gs__fit_choose(&e->rng, c, node, req, GS__FIT_BEST, a);
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
        fr[i] = (g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION) && gs__gpu_usable(g)
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
            if (!gs__gpu_usable(g) || g->mode != GS_GPU_FRACTION || g->milli_free < req->milli)
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
    gs__fit_choose(&e->rng, c, node, req, GS__FIT_BEST, a);
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
        gs__fit_choose(&e->rng, c, node, req, GS__FIT_BEST, a);
        return score_packing(e, c, node, req, a);
    }
    double d = frag_delta(e, c, node, req, a);
    return (int64_t)(sigmoid(d / 1000.0) * MAX_NODE_SCORE);
}

/* ---------- gpusched ---------- */

/* How pressed a GPU model is. Its pressure is the idle GPU that pods naming the model are
 * expected to ask for (their share of the typical GPU demand, times all the cluster's idle GPU)
 * over the model's own idle GPU: at 1 its idle GPUs are all spoken for by pods that can run
 * nowhere else. A pod placed on a model's node costs SCARCITY_WEIGHT x pressure milli of
 * fragmentation per milli-GPU it takes, so a pod that can run elsewhere leaves the pressed
 * models to the pods that cannot: the pressure rises as the model's GPUs fill and falls as
 * the others' do. Pressure is counted in steps of PRESSURE_STEP, so scores cached between two
 * steps stay valid. Measured on the openb traces, published and generated (docs/simulator.md):
 * at weights 0.5 and 1 it beats fgd on every model-constrained one, where a fixed cost per
 * model, or one charged only above pressure 1, loses on some. */
#define SCARCITY_WEIGHT 0.5
#define PRESSURE_STEP   0.02

static double scarcity_cost(const struct gs_engine *e, int model)
{
    if (model < 0 || model >= 32)
        return 0;
    return SCARCITY_WEIGHT * PRESSURE_STEP * e->scarce.level[model];
}

/* The engine calls it before each placement: each model's pressure, from the cluster's idle
 * GPU; returns the models whose pressure changed step. */
static uint32_t prepare_gpusched(struct gs_engine *e, const struct gs_cluster *c)
{
    struct gs__scarcity *s = &e->scarce;
    if (!s->checked) {
        /* the typical shapes never change: if none names a model, no model is ever pressed */
        s->checked = s->off = true;
        for (int k = 0; k < e->typ->n; k++)
            s->off &= e->typ->s[k].model_mask == 0;
    }
    if (s->off)
        return 0;
    if (!s->node && !(s->node = calloc((size_t)e->max_nodes, sizeof(*s->node))))
        return 0;                 /* no memory for the sums: no pressure (scores as without it) */
    if (c->nnodes != s->nnodes) { /* nodes came or went: summed again */
        memset(s->node, 0, sizeof(*s->node) * (size_t)e->max_nodes);
        memset(s->idle, 0, sizeof(s->idle));
        memset(s->gpus_now, 0, sizeof(s->gpus_now));
        s->nnodes = c->nnodes;
    }
    /* the idle GPU per model, kept up to date from the nodes that changed */
    for (int i = 0; i < c->nnodes; i++) {
        const struct gs_node *n = &c->nodes[i];
        struct gs__scarce_node *sn = &s->node[i];
        if (sn->version == n->version && sn->version)
            continue;
        if (sn->model >= 0 && sn->model < 32 && sn->version) {
            s->idle[sn->model] -= (double)sn->idle;
            s->gpus_now[sn->model] -= sn->gpus;
        }
        sn->version = n->version;
        sn->model = n->model;
        sn->gpus = n->ngpus;
        sn->idle = n->model >= 0 && n->model < 32 ? node_gpu_left(c, n) : 0;
        if (n->model >= 0 && n->model < 32) {
            s->idle[n->model] += (double)sn->idle;
            s->gpus_now[n->model] += n->ngpus;
        }
    }
    double gpus[32], all = 0;
    for (int m = 0; m < 32; m++) {
        gpus[m] = s->gpus_now[m];
        all += s->idle[m];
    }
    if (memcmp(gpus, s->gpus, sizeof(gpus)) != 0) {
        /* first call, or nodes came or went: the demand split over the models again */
        memcpy(s->gpus, gpus, sizeof(gpus));
        gs_typical_model_share(e->typ, gpus, s->share);
    }
    uint32_t changed = 0;
    for (int m = 0; m < 32; m++) {
        double p = s->idle[m] > 0 ? s->share[m] * all / s->idle[m] / PRESSURE_STEP : 0;
        int32_t level = p < 1e6 ? (int32_t)p : 1000000;
        if (level != s->level[m]) {
            s->level[m] = level;
            changed |= 1u << m;
        }
    }
    return changed;
}

/* gpusched: FGD's fragmentation gradient, bucketed as FGD buckets it (a score step is about
 * 40 milli-GPU of fragmentation), measured over the shapes each node can host
 * (GS_FRAG_HOSTABLE, core/frag.h: a pod that names another GPU model is not stranded by this
 * node's idle GPUs), less the cost of taking a pressed model's GPUs (scarcity_cost above: the
 * look-ahead FGD's measure lacks, see docs/simulator.md), with two tie-breaks that FGD leaves
 * to node order: CPU-only pods go where the least GPU sits idle, so their CPU does not strand
 * GPUs; GPU pods prefer nodes already in use, which keeps empty nodes whole for multi-GPU
 * pods. MIG requests pack slots onto nodes and GPUs already in use. On a trace whose pods name
 * no GPU model the pressure is 0 everywhere: the scores are the gradient's and the tie-breaks'
 * alone. Measured on the openb traces against fgd in tests/unit/test_openb.c and
 * tests/cli/openb_traces.sh. */
static int64_t score_gpusched(struct gs_engine *e, const struct gs_cluster *c, int node,
                              const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    int64_t idle = node_gpu_left(c, n);
    if (req->kind == GS_REQ_MIG) {
        gs__fit_choose(&e->rng, c, node, req, GS__FIT_BEST, a);
        return ((int64_t)1 << 40) - idle * 1024 - n->cpu_free / 1000;
    }
    double d = frag_delta(e, c, node, req, a) -
               scarcity_cost(e, n->model) * (double)gs_request_total_milli(req);
    int64_t bucket = (int64_t)(sigmoid(d / 1000.0) * MAX_NODE_SCORE);
    if (req->kind == GS_REQ_NONE)
        return bucket * ((int64_t)1 << 32) + (((int64_t)1 << 20) - idle);
    bool in_use = idle < (int64_t)n->ngpus * GS_MILLI;
    return bucket * ((int64_t)1 << 32) + (in_use ? 1 : 0);
}

static const struct gs_policy policies[] = {
    {"gpusched",
     "fragmentation gradient; scarce GPU models kept for their pods; CPU pods off idle GPUs; "
     "used nodes first (default)",
     score_gpusched, false, prepare_gpusched},
    {"fgd", "FGD: fragmentation gradient descent (Weng et al., ATC'23)", score_fgd, false, NULL},
    {"bestfit", "least weighted leftover CPU and GPU (0.5/0.5)", score_bestfit, true, NULL},
    {"packing", "GpuPacking: shared GPUs, then free GPUs on used nodes, then free nodes",
     score_packing, false, NULL},
    {"clustering", "GpuClustering: nodes already running pods of the same GPU shape",
     score_clustering, false, NULL},
    {"dotprod", "Tetris dot product of free and requested (CPU, GPU)", score_dotprod, false, NULL},
    {"random", "uniformly random feasible node", score_random, false, NULL},
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

bool gs__policy_random(const struct gs_policy *p)
{
    return p->score == score_random;
}

int gs__policy_frag_mode(const struct gs_policy *p)
{
    if (p->score == score_fgd)
        return GS_FRAG_FGD;
    if (p->score == score_gpusched)
        return GS_FRAG_HOSTABLE;
    return -1;
}
