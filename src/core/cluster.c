/* cluster.c - construction and accounting of the flat cluster arrays that the engine
 * (core/engine.c) scores and the simulator and scheduler mutate through decisions. */
#include "cluster.h"

#include "../base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Node versions are stamps from one process-wide counter, so a stamp names one node state
 * even across cluster copies: engine caches key on it. */
static uint32_t stamp_counter;

uint32_t gs__cluster_stamp(void)
{
    return __atomic_add_fetch(&stamp_counter, 1, __ATOMIC_RELAXED);
}

void gs_node_touch(struct gs_node *n)
{
    n->version = gs__cluster_stamp();
}

void gs_cluster_init(struct gs_cluster *c)
{
    memset(c, 0, sizeof(*c));
}

void gs_cluster_release(struct gs_cluster *c)
{
    for (int32_t i = 0; i < c->nnodes; i++)
        gs_labels_release(&c->nodes[i].labels);
    free(c->nodes);
    free(c->gpus);
    memset(c, 0, sizeof(*c));
}

int gs_cluster_add_node(struct gs_cluster *c, const char *name, int model, int ngpus,
                        int64_t cpu_milli, int64_t mem_mib, enum gs_gpu_mode mode, int replicas,
                        const struct gs_mig_layout *layout)
{
    if (ngpus < 0 || ngpus > GS_MAX_GPUS_NODE)
        return GS_EINVAL;
    if (ngpus > 0 && !gs_catalog_get(model))
        return GS_EINVAL;
    if (mode == GS_GPU_MIG && ngpus > 0 && !gs_catalog_mig_capable(model))
        return GS_EINVAL;
    if (c->nnodes == c->cap_nodes) {
        int32_t cap = c->cap_nodes ? c->cap_nodes * 2 : 64;
        struct gs_node *n = realloc(c->nodes, sizeof(*n) * (size_t)cap);
        if (!n)
            return GS_ENOMEM;
        c->nodes = n;
        c->cap_nodes = cap;
    }
    if (c->ngpus + ngpus > c->cap_gpus) {
        int32_t cap = c->cap_gpus ? c->cap_gpus * 2 : 256;
        while (cap < c->ngpus + ngpus)
            cap *= 2;
        struct gs_gpu *g = realloc(c->gpus, sizeof(*g) * (size_t)cap);
        if (!g)
            return GS_ENOMEM;
        c->gpus = g;
        c->cap_gpus = cap;
    }
    struct gs_mig_placement pl = {0};
    if (mode == GS_GPU_MIG && layout && ngpus > 0) {
        int rc = gs_mig_place(model, layout, &pl, NULL);
        if (rc)
            return rc;
    }
    int id = c->nnodes++;
    struct gs_node *n = &c->nodes[id];
    memset(n, 0, sizeof(*n));
    snprintf(n->name, sizeof(n->name), "%s", name);
    n->model = (int16_t)(ngpus > 0 ? model : -1);
    n->cpu_cap = n->cpu_free = cpu_milli;
    n->mem_cap = n->mem_free = mem_mib;
    n->pods_cap = 1 << 20;
    n->gpu0 = c->ngpus;
    n->ngpus = ngpus;
    n->version = gs__cluster_stamp();
    for (int i = 0; i < ngpus; i++) {
        struct gs_gpu *g = &c->gpus[c->ngpus++];
        memset(g, 0, sizeof(*g));
        g->model = (int16_t)model;
        g->mem_mib = (int32_t)gs_catalog_get(model)->mem_mib;
        g->mode = (uint8_t)mode;
        g->healthy = 1;
        g->milli_free = GS_MILLI;
        if (mode == GS_GPU_TIMESLICE || mode == GS_GPU_MPS)
            g->replicas = (uint8_t)(replicas > 1 ? replicas : 1);
        if (mode == GS_GPU_MIG)
            g->mig = pl;
    }
    return id;
}

int gs_node_set_label(struct gs_node *n, const char *key, const char *val)
{
    gs_node_touch(n);
    return gs_labels_set(&n->labels, key, val);
}

const char *gs_node_label(const struct gs_node *n, const char *key)
{
    return gs_labels_get(&n->labels, key);
}

int gs_cluster_copy(struct gs_cluster *dst, const struct gs_cluster *src)
{
    gs_cluster_release(dst);
    if (src->nnodes) {
        dst->nodes = malloc(sizeof(*dst->nodes) * (size_t)src->nnodes);
        if (!dst->nodes)
            return GS_ENOMEM;
        memcpy(dst->nodes, src->nodes, sizeof(*dst->nodes) * (size_t)src->nnodes);
        for (int32_t i = 0; i < src->nnodes; i++)
            gs_labels_init(&dst->nodes[i].labels);
        dst->nnodes = dst->cap_nodes = src->nnodes;
        for (int32_t i = 0; i < src->nnodes; i++)
            if (gs_labels_copy(&dst->nodes[i].labels, &src->nodes[i].labels)) {
                gs_cluster_release(dst);
                return GS_ENOMEM;
            }
    }
    if (src->ngpus) {
        dst->gpus = malloc(sizeof(*dst->gpus) * (size_t)src->ngpus);
        if (!dst->gpus) {
            gs_cluster_release(dst);
            return GS_ENOMEM;
        }
        memcpy(dst->gpus, src->gpus, sizeof(*dst->gpus) * (size_t)src->ngpus);
    }
    dst->nnodes = dst->cap_nodes = src->nnodes;
    dst->ngpus = dst->cap_gpus = src->ngpus;
    return 0;
}

double gs_gpu_alloc_units(const struct gs_gpu *g)
{
    switch (g->mode) {
    case GS_GPU_WHOLE:
    case GS_GPU_FRACTION:
        return (GS_MILLI - g->milli_free) / (double)GS_MILLI;
    case GS_GPU_TIMESLICE:
    case GS_GPU_MPS:
        return g->replicas ? (double)g->replicas_used / g->replicas : 0;
    case GS_GPU_MIG: {
        const struct gs_gpu_model *m = gs_catalog_get(g->model);
        double u = 0;
        for (int i = 0; i < g->mig.n; i++)
            if (g->mig_used & (1u << i))
                u += gs_mig_profile_units(&m->profiles[g->mig.inst[i].profile]);
        return u > 1 ? 1 : u;
    }
    }
    return 0;
}

void gs_cluster_totals(const struct gs_cluster *c, struct gs_cluster_totals *t)
{
    memset(t, 0, sizeof(*t));
    t->gpus = c->ngpus;
    t->units_cap = c->ngpus;
    for (int i = 0; i < c->ngpus; i++) {
        t->units_alloc += gs_gpu_alloc_units(&c->gpus[i]);
        t->units_used += c->gpus[i].util;
    }
}
