/* snapshot.c - a scheduling cycle's copy of the store (sched/snapshot.h): the cycle input
 * (sched/cyclein.c), the extender (sched/extender.c) and the dashboard (sched/uistate.c) each
 * take one and read it through its functions; sched/cache.c builds its cluster from the copied
 * Nodes and bound Pods. The struct is defined here only. */
#include "snapshot.h"

#include "../base/error.h"
#include "../core/recarve.h"
#include "cache.h"
#include "tenancy.h"
#include "../base/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_snapshot {
    struct gs_cluster c;
    struct gs_store *st; /* takes the copy's arrays back (gs__store_recycle) */
    struct gs_kube_node *nodes;
    int nn, ncap;
    struct gs_store_pod *pods;
    int np, pcap;
    bool tainted;
    struct gs_alloc *alloc; /* per pod: what a bound pod holds */
    int8_t *placed;
    int *hidx; /* node name hash: open addressing, -1 empty */
    unsigned hcap;
    /* per node, what its pods ask of what the engine counts only roughly or not at all:
     * memory to the byte, and each of the node's other resources (its res[] order) */
    int64_t *mem_used;
    int64_t (*res_used)[GS_MAX_NODE_RES];
    /* dynamic MIG: per GPU, being re-carved (a node's gpusched.io/mig-desired newer than its
     * inventory: the GPU is laid out as asked) and when this daemon last changed it; per
     * node, whether any of its GPUs is being re-carved */
    uint8_t *busy;
    double *changed_s;
    uint8_t *node_busy;
};

void gs__snapshot_free(struct gs_snapshot *sn)
{
    if (!sn)
        return;
    gs_cluster_release(&sn->c);
    for (int i = 0; sn->nodes && i < sn->nn; i++)
        gs_kube_node_release(&sn->nodes[i]);
    for (int i = 0; sn->pods && i < sn->np; i++)
        gs_kube_pod_release(&sn->pods[i].p);
    if (sn->st)
        gs__store_recycle(sn->st, sn->nodes, sn->ncap, sn->pods, sn->pcap);
    else {
        free(sn->nodes);
        free(sn->pods);
    }
    free(sn->alloc);
    free(sn->placed);
    free(sn->hidx);
    free(sn->mem_used);
    free(sn->res_used);
    free(sn->busy);
    free(sn->changed_s);
    free(sn->node_busy);
    free(sn);
}

int gs__snapshot_find_node(const struct gs_snapshot *sn, const char *name)
{
    if (!sn->hidx) {
        for (int k = 0; k < sn->nn; k++)
            if (strcmp(sn->nodes[k].name, name) == 0)
                return k;
        return -1;
    }
    for (unsigned h = (unsigned)gs_hash_str(name) & (sn->hcap - 1);; h = (h + 1) & (sn->hcap - 1)) {
        int k = sn->hidx[h];
        if (k < 0)
            return -1;
        if (strcmp(sn->nodes[k].name, name) == 0)
            return k;
    }
}

/* Index node names (a table at most half full); without memory the lookups scan. */
static void index_nodes(struct gs_snapshot *sn)
{
    unsigned cap = 16;
    while (cap < 2u * (unsigned)sn->nn)
        cap *= 2;
    sn->hidx = malloc(sizeof(*sn->hidx) * cap);
    if (!sn->hidx)
        return;
    sn->hcap = cap;
    memset(sn->hidx, 0xff, sizeof(*sn->hidx) * cap);
    for (int k = 0; k < sn->nn; k++) {
        unsigned h = (unsigned)gs_hash_str(sn->nodes[k].name) & (cap - 1);
        while (sn->hidx[h] >= 0)
            h = (h + 1) & (cap - 1);
        sn->hidx[h] = k;
    }
}

/* A pod a MigManager's gpuClients map to a MIG device asks that device instead of one whole
 * GPU, bound or pending (so its devices annotation reads as a MIG slot). */
static void map_mig_clients(struct gs_snapshot *sn, const struct gs_policy_objs *po)
{
    for (int i = 0; po && i < sn->np; i++) {
        struct gs_kube_pod *p = &sn->pods[i].p;
        const char *mig = gs_policy_mig_for(po, p);
        if (!mig)
            continue;
        p->req.kind = GS_REQ_MIG;
        p->req.gpus = 1;
        p->req.milli = 0;
        snprintf(p->req.mig, sizeof(p->req.mig), "%s", mig);
    }
}

/* A pod on a node: what it asks of the resources gs__snapshot_resources_fit checks. */
void gs__snapshot_count_resources(struct gs_snapshot *sn, int node, const struct gs_kube_pod *p)
{
    const struct gs_kube_node *kn = &sn->nodes[node];
    sn->mem_used[node] += p->mem_bytes;
    for (int r = 0; r < p->nres; r++)
        for (int k = 0; k < kn->nres; k++)
            if (strcmp(kn->res[k].name, p->res[r].name) == 0)
                sn->res_used[node][k] += p->res[r].value;
}

void gs__snapshot_pending_desired(const struct gs_snapshot *sn, int node,
                                  struct gs_mig_desired *out)
{
    memset(out, 0, sizeof(*out));
    const struct gs_kube_node *kn = &sn->nodes[node];
    if (kn->inv && kn->desired && kn->desired->generation > kn->inv->generation)
        *out = *kn->desired;
}

/* A node's pending desired layout on its GPUs in the cluster; they are marked busy. */
static void apply_desired(struct gs_snapshot *sn, int node)
{
    struct gs_mig_desired d;
    gs__snapshot_pending_desired(sn, node, &d);
    const struct gs_node *n = &sn->c.nodes[node];
    for (int k = 0; k < d.ngpus; k++) {
        const struct gs_mig_desired_gpu *g = &d.gpus[k];
        if (g->index < 0 || g->index >= n->ngpus)
            continue;
        int gi = n->gpu0 + g->index;
        int model = sn->c.gpus[gi].model;
        struct gs_recarve_gpu x = {.gpu = gi, .mode = g->whole ? GS_GPU_WHOLE : GS_GPU_MIG};
        bool ok = g->whole || gs_catalog_mig_capable(model);
        for (int i = 0; ok && !g->whole && i < g->ninst && i < GS_MIG_COMPUTE_MAX; i++) {
            int p = gs_catalog_find_profile(model, g->inst[i].profile);
            ok = p >= 0;
            x.pl.inst[x.pl.n].profile = (uint8_t)(p < 0 ? 0 : p);
            x.pl.inst[x.pl.n].start = g->inst[i].start;
            x.pl.n++;
        }
        if (ok && gs_recarve_apply(&sn->c, &x, NULL) == 0) {
            sn->busy[gi] = 1;
            sn->node_busy[node] = 1;
        }
    }
}

int gs__snapshot_new(struct gs_store *st, const struct gs_policy_objs *po, struct gs_snapshot **out)
{
    *out = NULL;
    struct gs_snapshot *sn = calloc(1, sizeof(*sn));
    if (!sn)
        return GS_ENOMEM;
    gs_cluster_init(&sn->c);
    if (gs__store_copy(st, &sn->nodes, &sn->nn, &sn->ncap, &sn->pods, &sn->np, &sn->pcap)) {
        free(sn);
        return GS_ENOMEM;
    }
    sn->st = st;
    size_t ann = sn->nn > 0 ? (size_t)sn->nn : 1, anp = sn->np > 0 ? (size_t)sn->np : 1;
    sn->alloc = calloc(anp, sizeof(*sn->alloc));
    sn->placed = calloc(anp, 1);
    if (!sn->alloc || !sn->placed) {
        gs__snapshot_free(sn);
        return GS_ENOMEM;
    }
    map_mig_clients(sn, po);
    index_nodes(sn);
    for (int i = 0; i < sn->nn; i++) {
        gs_cache_add_node(&sn->c, &sn->nodes[i], gs__store_migparted(st), NULL, 0);
        sn->tainted |= sn->nodes[i].ntaints > 0 || sn->nodes[i].unschedulable;
    }
    sn->mem_used = calloc(ann, sizeof(*sn->mem_used));
    sn->res_used = calloc(ann, sizeof(*sn->res_used));
    sn->busy = calloc((size_t)sn->c.ngpus + 1, 1);
    sn->changed_s = calloc((size_t)sn->c.ngpus + 1, sizeof(double));
    sn->node_busy = calloc(ann, 1);
    if (!sn->mem_used || !sn->res_used || !sn->busy || !sn->changed_s || !sn->node_busy) {
        gs__snapshot_free(sn);
        return GS_ENOMEM;
    }
    /* GPUs being re-carved are laid out as asked, before the pods bind on them */
    for (int i = 0; i < sn->nn; i++)
        apply_desired(sn, i);
    for (int i = 0; i < sn->np; i++) {
        struct gs_kube_pod *p = &sn->pods[i].p;
        if (!p->node[0])
            continue;
        int id = gs__snapshot_find_node(sn, p->node);
        if (id >= 0) {
            sn->placed[i] = gs_cache_add_pod(&sn->c, id, p, &sn->alloc[i]) == 0;
            gs__snapshot_count_resources(sn, id, p);
        }
    }
    *out = sn;
    return 0;
}

bool gs__snapshot_resources_fit(const struct gs_snapshot *sn, int node, const struct gs_kube_pod *p,
                                uint32_t dra_res, char *why, size_t n)
{
    const struct gs_kube_node *kn = &sn->nodes[node];
    if (p->mem_bytes > 0 && kn->mem_bytes - sn->mem_used[node] < p->mem_bytes) {
        if (why)
            snprintf(why, n, "memory");
        return false;
    }
    for (int r = 0; r < p->nres; r++) {
        if (p->res[r].value <= 0)
            continue;
        int64_t room = 0, have = 0;
        for (int k = 0; k < kn->nres; k++)
            if (strcmp(kn->res[k].name, p->res[r].name) == 0) {
                room = kn->res[k].value - sn->res_used[node][k];
                have = kn->res[k].value;
            }
        if (r < 32 && (dra_res & (1u << r)) && have <= 0)
            continue; /* DRA serves it here (formats/draext.h) */
        if (room < p->res[r].value) {
            if (why)
                snprintf(why, n, "%s", p->res[r].name);
            return false;
        }
    }
    return true;
}

/* ---------- reading ---------- */

struct gs_cluster *gs__snapshot_cluster(struct gs_snapshot *sn)
{
    return &sn->c;
}

int gs__snapshot_nnodes(const struct gs_snapshot *sn)
{
    return sn->nn;
}

const struct gs_kube_node *gs__snapshot_node(const struct gs_snapshot *sn, int i)
{
    return &sn->nodes[i];
}

bool gs__snapshot_tainted(const struct gs_snapshot *sn)
{
    return sn->tainted;
}

const uint8_t *gs__snapshot_gpus_busy(const struct gs_snapshot *sn)
{
    return sn->busy;
}

const double *gs__snapshot_gpus_changed(const struct gs_snapshot *sn)
{
    return sn->changed_s;
}

bool gs__snapshot_node_busy(const struct gs_snapshot *sn, int node)
{
    return sn->node_busy[node] != 0;
}

void gs__snapshot_note_recarve(struct gs_snapshot *sn, int node, int gpu, double at_wall, bool busy)
{
    int g = sn->c.nodes[node].gpu0 + gpu;
    sn->changed_s[g] = at_wall;
    if (busy) {
        sn->busy[g] = 1;
        sn->node_busy[node] = 1;
    }
}

int gs__snapshot_npods(const struct gs_snapshot *sn)
{
    return sn->np;
}

const struct gs_kube_pod *gs__snapshot_pod(const struct gs_snapshot *sn, int i)
{
    return &sn->pods[i].p;
}

uint64_t gs__snapshot_pod_seq(const struct gs_snapshot *sn, int i)
{
    return sn->pods[i].seq;
}

const char *gs__snapshot_pod_nominated(const struct gs_snapshot *sn, int i)
{
    return sn->pods[i].nominated;
}

double gs__snapshot_pod_nominated_at(const struct gs_snapshot *sn, int i)
{
    return sn->pods[i].nominated_at;
}

bool gs__snapshot_pod_due(const struct gs_snapshot *sn, int i, double t)
{
    return sn->pods[i].next_try <= t;
}

bool gs__snapshot_pod_adopt(struct gs_snapshot *sn, int i, double t)
{
    struct gs_store_pod *e = &sn->pods[i];
    if (e->nominated[0] || !e->p.nominated[0] || e->adopted)
        return false;
    snprintf(e->nominated, sizeof(e->nominated), "%s", e->p.nominated);
    e->nominated_at = t;
    return true;
}

bool gs__snapshot_pod_placed(const struct gs_snapshot *sn, int i, const struct gs_alloc **a)
{
    *a = &sn->alloc[i];
    return sn->placed[i] != 0;
}

void gs__snapshot_mark_evicted(struct gs_snapshot *sn, struct gs_store *st)
{
    for (int i = 0; i < sn->np; i++)
        if (gs__store_is_evicted(st, sn->pods[i].p.uid))
            sn->pods[i].p.terminating = true;
}

int gs__snapshot_tenancy(const struct gs_snapshot *sn, const struct gs_policy_objs *po,
                         struct gs_tenancy *ty)
{
    return gs_tenancy_build(ty, po, &sn->c, &sn->pods[0].p, sizeof(sn->pods[0]), sn->np, sn->alloc,
                            sn->placed);
}
