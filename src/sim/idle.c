/* idle.c - the free GPU capacity of a simulated cluster split by cause (sim/idle.h), for
 * sim/scenario.c, which integrates the split over the run as it does the allocated share. */
#include "idle.h"

#include "../core/catalog.h"
#include "../core/fit.h"

#include <string.h>

static const char *const cause_names[GS_IDLE_CAUSES] = {"no demand",  "fragmentation", "quota",
                                                        "too little", "recarving",     "unhealthy"};

static const char *const cause_keys[GS_IDLE_CAUSES] = {"no_demand",  "fragmentation", "quota",
                                                       "too_little", "recarving",     "unhealthy"};

const char *gs_idle_cause_name(int cause)
{
    return cause >= 0 && cause < GS_IDLE_CAUSES ? cause_names[cause] : "?";
}

const char *gs_idle_cause_key(int cause)
{
    return cause >= 0 && cause < GS_IDLE_CAUSES ? cause_keys[cause] : "?";
}

static double free_units(const struct gs_gpu *g)
{
    double f = 1.0 - gs_gpu_alloc_units(g);
    return f > 0 ? f : 0;
}

static bool has_instance(const struct gs_gpu *g, int profile)
{
    for (int i = 0; i < g->mig.n; i++)
        if (g->mig.inst[i].profile == profile)
            return true;
    return false;
}

/* The units req would take on GPU g of node n, 0 when it could not use g whatever is free. */
static double need_on(const struct gs_node *n, const struct gs_gpu *g, const struct gs_request *r,
                      bool recarve)
{
    if (n->unschedulable || r->kind == GS_REQ_NONE)
        return 0;
    if (r->model_mask && !(r->model_mask & (1u << g->model)))
        return 0;
    if (r->nsel && !gs_engine_selects(n, r))
        return 0;
    switch (r->kind) {
    case GS_REQ_MIG: {
        int p = g->mode == GS_GPU_MIG ? gs_catalog_find_profile(g->model, r->mig) : -1;
        if (p < 0 || (!recarve && !has_instance(g, p)))
            return 0;
        return gs_mig_profile_units(&gs_catalog_get(g->model)->profiles[p]);
    }
    case GS_REQ_FRACTION:
        return g->mode == GS_GPU_FRACTION ? r->milli / (double)GS_MILLI : 0;
    default: {
        /* the GPU's memory, an MPS client's share of it, must hold what the pod declares */
        int64_t mem = g->mode == GS_GPU_MPS && g->replicas ? g->mem_mib / g->replicas : g->mem_mib;
        if (r->gpu_mem_mib > 0 && mem < r->gpu_mem_mib)
            return 0;
        if (g->mode == GS_GPU_TIMESLICE || g->mode == GS_GPU_MPS)
            return g->replicas ? (double)r->gpus / g->replicas : 0;
        return g->mode == GS_GPU_WHOLE || g->mode == GS_GPU_FRACTION ? r->gpus * r->milli / 1000.0
                                                                     : 0;
    }
    }
}

void gs_idle_split(const struct gs_cluster *c, const uint8_t *recarving, bool recarve,
                   const struct gs_idle_want *w, int nw, double out[GS_IDLE_CAUSES])
{
    memset(out, 0, sizeof(double) * GS_IDLE_CAUSES);
    if (nw > GS_IDLE_MAX_WANTS)
        nw = GS_IDLE_MAX_WANTS;
    /* per shape: the free units it could use, and the least it needs on one of its GPUs */
    double have[GS_IDLE_MAX_WANTS] = {0}, least[GS_IDLE_MAX_WANTS] = {0};
    for (int ni = 0; ni < c->nnodes; ni++) {
        const struct gs_node *n = &c->nodes[ni];
        for (int gi = n->gpu0; gi < n->gpu0 + n->ngpus; gi++) {
            const struct gs_gpu *g = &c->gpus[gi];
            if (!g->healthy || (recarving && recarving[gi]))
                continue;
            double f = free_units(g);
            for (int k = 0; k < nw; k++) {
                double need = need_on(n, g, &w[k].req, recarve);
                if (need <= 0)
                    continue;
                have[k] += f;
                if (least[k] == 0 || need < least[k])
                    least[k] = need;
            }
        }
    }
    for (int ni = 0; ni < c->nnodes; ni++) {
        const struct gs_node *n = &c->nodes[ni];
        for (int gi = n->gpu0; gi < n->gpu0 + n->ngpus; gi++) {
            const struct gs_gpu *g = &c->gpus[gi];
            double f = free_units(g);
            if (f <= 0)
                continue;
            int cause = GS_IDLE_NO_DEMAND;
            if (recarving && recarving[gi]) {
                cause = GS_IDLE_RECARVING;
            } else if (!g->healthy) {
                cause = GS_IDLE_UNHEALTHY;
            } else {
                bool frag = false, quota = false, little = false;
                for (int k = 0; k < nw && !frag; k++) {
                    if (need_on(n, g, &w[k].req, recarve) <= 0)
                        continue;
                    if (w[k].quota)
                        quota = true;
                    else if (least[k] <= have[k] + 1e-9)
                        frag = true;
                    else
                        little = true;
                }
                cause = frag     ? GS_IDLE_FRAGMENTATION
                        : quota  ? GS_IDLE_QUOTA
                        : little ? GS_IDLE_TOO_LITTLE
                                 : GS_IDLE_NO_DEMAND;
            }
            out[cause] += f;
        }
    }
}
