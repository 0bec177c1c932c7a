/* fit.c - the engine's filters, the devices a request takes on a node, and binding them
 * (fit.h). Pure functions of the cluster (core/cluster) and the request (core/workload);
 * engine.c memoises the verdicts per node version, policy.c scores the nodes that fit. */
#include "fit.h"

#include "../base/error.h"

#include <stdio.h>
#include <string.h>

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

bool gs_engine_selects(const struct gs_node *n, const struct gs_request *req)
{
    return selector_matches(n, req);
}

int gs__fit_count_whole(const struct gs_cluster *c, const struct gs_node *n)
{
    int k = 0;
    /* callers check memory per model; see mem_ok */
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
        if (gs__gpu_usable(g) && (g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION) &&
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
        if (!gs__gpu_usable(g) || (g->mode != GS_GPU_TIMESLICE && g->mode != GS_GPU_MPS))
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
    if (g->mode != GS_GPU_MIG || !gs__gpu_usable(g))
        return -1;
    int p = mig_profile_of(m, g->model);
    if (p < 0)
        return -1;
    for (int i = 0; i < g->mig.n; i++)
        if (g->mig.inst[i].profile == p && !(g->mig_used & (1u << i)))
            return i;
    return -1;
}

int gs__fit_reason(const struct gs_cluster *c, int node, const struct gs_request *req)
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
            int whole = whole_mem ? gs__fit_count_whole(c, n) : 0;
            if (whole < req->gpus && count_replicas_for(c, n, req->gpu_mem_mib) < req->gpus)
                why = count_replicas(c, n) > 0 ? GS_R_REPLICA : GS_R_GPU_COUNT;
            break;
        }
        case GS_REQ_FRACTION: {
            bool ok = false;
            for (int i = 0; i < n->ngpus && !ok; i++) {
                const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
                ok = gs__gpu_usable(g) && g->mode == GS_GPU_FRACTION && g->milli_free >= req->milli;
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
    int why = gs__fit_reason(c, node, req);
    if (r) {
        r->nodes++;
        if (why >= 0)
            r->count[why]++;
    }
    return why < 0;
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

/* Whole GPUs on a node whose links are known: the best-linked set (core/gpulink.h). False on a
 * node without links, whose GPUs are taken in index order. */
static bool choose_linked(const struct gs_cluster *c, const struct gs_node *n,
                          const struct gs_request *req, struct gs_alloc *a)
{
    struct gs_gpu_link links[GS_MAX_GPUS_NODE];
    uint32_t free = 0;
    bool known = false;
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
        links[i] = g->link;
        known = known || gs_link_known(&g->link);
        if (gs__gpu_usable(g) && (g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION) &&
            g->milli_free == GS_MILLI)
            free |= 1u << i;
    }
    int pick[GS_MAX_GPUS_NODE];
    if (!known || gs_link_choose(links, n->ngpus, free, 0, req->gpus, pick) != req->gpus)
        return false;
    for (int k = 0; k < req->gpus; k++) {
        a->gpu[k] = n->gpu0 + pick[k];
        a->slot[k] = -1;
    }
    a->ndev = (uint8_t)req->gpus;
    return true;
}

static void choose_whole(const struct gs_cluster *c, const struct gs_node *n, int node,
                         const struct gs_request *req, struct gs_alloc *a)
{
    a->node = node;
    a->kind = GS_REQ_GPU;
    a->ndev = 0;
    a->milli = GS_MILLI;
    bool whole_mem = !req->gpu_mem_mib || node_gpu_mem(c, n) >= req->gpu_mem_mib;
    if (whole_mem && gs__fit_count_whole(c, n) >= req->gpus && choose_linked(c, n, req, a))
        return;
    if (whole_mem && gs__fit_count_whole(c, n) >= req->gpus) {
        for (int i = 0; i < n->ngpus && a->ndev < req->gpus; i++) {
            const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
            if (gs__gpu_usable(g) && (g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION) &&
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
            if (!gs__gpu_usable(g) || (g->mode != GS_GPU_TIMESLICE && g->mode != GS_GPU_MPS))
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

static void choose_fraction(struct gs_rng *rng, const struct gs_cluster *c, const struct gs_node *n,
                            int node, const struct gs_request *req, enum gs__fit_sel sel,
                            struct gs_alloc *a)
{
    a->node = node;
    a->kind = GS_REQ_FRACTION;
    a->ndev = 0;
    a->milli = req->milli;
    int pick = -1, cnt = 0;
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_gpu *g = &c->gpus[n->gpu0 + i];
        if (!gs__gpu_usable(g) || g->mode != GS_GPU_FRACTION || g->milli_free < req->milli)
            continue;
        if (sel == GS__FIT_RANDOM) {
            cnt++;
            if (gs_rng_below(rng, (uint64_t)cnt) == 0)
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

void gs__fit_choose(struct gs_rng *rng, const struct gs_cluster *c, int node,
                    const struct gs_request *req, enum gs__fit_sel sel, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    switch (req->kind) {
    case GS_REQ_GPU:
        choose_whole(c, n, node, req, a);
        break;
    case GS_REQ_FRACTION:
        choose_fraction(rng, c, n, node, req, sel, a);
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
                if (gs__gpu_usable(g) && g->mode == GS_GPU_FRACTION &&
                    g->milli_free >= req->milli) {
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
