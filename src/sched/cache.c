/* cache.c - from Kubernetes objects to the engine's cluster: the scheduler daemon and the
 * extender rebuild their snapshot with it, and the end-to-end tests check allocations
 * from the API with the same reading. */
#include "cache.h"

#include "../base/error.h"
#include "../base/log.h"
#include "../formats/migparted.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t label_int(const struct gs_kube_node *kn, const char *key, int64_t dflt, char *why,
                         size_t n)
{
    const char *v = gs_kube_label(kn, key);
    if (!v)
        return dflt;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || x < 0 || x > 1000000) {
        if (!why[0])
            snprintf(why, n, "%s '%s' is not a number", key, v);
        return dflt;
    }
    return x;
}

/* What the cache decides for each GPU of a node before adding it to the cluster. */
struct gpu_plan {
    int32_t mem_mib; /* > 0: the node's word for its memory (a model the catalog lacks) */
    uint8_t mode, replicas;
    bool healthy;
    bool placed;                 /* MIG: pl holds the exact placement */
    struct gs_mig_layout layout; /* MIG, when not placed: placed by gs_mig_place */
    struct gs_mig_placement pl;
    uint8_t held; /* MIG instances the node does not advertise (yet): never handed out */
};

struct node_plan {
    int model;
    int ngpus;
    bool guessed; /* physical indexes unknown: laid out from counts */
    struct gpu_plan g[GS_MAX_GPUS_NODE];
};

static int64_t alloc_of(const struct gs_kube_node *kn, int model, int profile)
{
    int64_t n = 0;
    for (int i = 0; i < kn->next; i++)
        if (gs_catalog_find_profile(model, kn->ext[i].name) == profile)
            n += kn->ext[i].count;
    return n;
}

/* Every MIG resource the node advertises must be a profile of the model. */
static bool mig_resources_known(const struct gs_kube_node *kn, int model, char *why, size_t n)
{
    for (int i = 0; i < kn->next; i++)
        if (kn->ext[i].count > 0 && gs_catalog_find_profile(model, kn->ext[i].name) < 0) {
            snprintf(why, n, "%s is not a MIG profile of %s", kn->ext[i].name,
                     gs_catalog_get(model)->name);
            return false;
        }
    return true;
}

/* The agent's inventory: physical indexes and exact placements. A GPU index the inventory
 * skips (a GPU that fell off the bus) stays in place as an unhealthy GPU, so the indexes
 * after it keep their meaning. What the kubelet does not advertise (yet) is held back. */
static void from_inventory(const struct gs_kube_node *kn, struct node_plan *np, char *why,
                           size_t wn)
{
    const struct gs_inventory *inv = kn->inv;
    np->model = -1;
    np->ngpus = inv->ngpus ? inv->gpus[inv->ngpus - 1].index + 1 : 0;
    for (int k = 0; k < np->ngpus; k++)
        np->g[k] = (struct gpu_plan){.mode = GS_GPU_WHOLE, .replicas = 1, .healthy = false};
    for (int k = 0; k < inv->ngpus; k++) {
        const struct gs_inv_gpu *ig = &inv->gpus[k];
        int m = gs_catalog_find(ig->model);
        if (m < 0)
            m = gs_catalog_other(); /* whole GPUs and replicas; MIG needs the catalog */
        if (np->model >= 0 && m != np->model) {
            snprintf(why, wn, "%s: GPU %d is a %s, GPU %d a %s: one model per node",
                     GS_INVENTORY_ANNOTATION, inv->gpus[0].index, gs_catalog_get(np->model)->name,
                     ig->index, gs_catalog_get(m)->name);
            return;
        }
        np->model = m;
        struct gpu_plan *g = &np->g[ig->index];
        g->mode = ig->mode;
        g->replicas = ig->replicas;
        g->healthy = ig->healthy;
        g->mem_mib = (int32_t)ig->mem_mib;
        if (ig->mode != GS_GPU_MIG)
            continue;
        if (!gs_catalog_mig_capable(m) || ig->ninst > GS_MIG_COMPUTE_MAX) {
            snprintf(why, wn, "%s: GPU %d: %s cannot hold %d MIG instances",
                     GS_INVENTORY_ANNOTATION, ig->index, gs_catalog_get(m)->name, ig->ninst);
            return;
        }
        g->placed = true;
        g->pl.n = (uint8_t)ig->ninst;
        for (int s = 0; s < ig->ninst; s++) {
            int p = gs_catalog_find_profile(m, ig->inst[s].profile);
            if (p < 0) {
                snprintf(why, wn, "%s: GPU %d: %s is not a MIG profile of %s",
                         GS_INVENTORY_ANNOTATION, ig->index, ig->inst[s].profile,
                         gs_catalog_get(m)->name);
                return;
            }
            g->pl.inst[s].profile = (uint8_t)p;
            g->pl.inst[s].start = ig->inst[s].start;
        }
        if (!gs_mig_placement_valid(m, &g->pl)) {
            snprintf(why, wn, "%s: GPU %d: the instances overlap or start where %s allows none",
                     GS_INVENTORY_ANNOTATION, ig->index, gs_catalog_get(m)->name);
            return;
        }
    }
    if (np->model < 0)
        return;
    if (!mig_resources_known(kn, np->model, why, wn))
        return;
    /* hold back what the kubelet does not advertise: instances of each profile beyond the
     * allocatable count (from the last GPU down), whole GPUs beyond nvidia.com/gpu */
    const struct gs_gpu_model *gm = gs_catalog_get(np->model);
    for (int p = 0; p < gm->nprofiles; p++) {
        int64_t have = 0;
        for (int k = 0; k < np->ngpus; k++)
            for (int s = 0; np->g[k].placed && s < np->g[k].pl.n; s++)
                have += np->g[k].pl.inst[s].profile == p;
        int64_t extra = have - alloc_of(kn, np->model, p);
        for (int k = np->ngpus - 1; k >= 0 && extra > 0; k--)
            for (int s = np->g[k].pl.n - 1; np->g[k].placed && s >= 0 && extra > 0; s--)
                if (np->g[k].pl.inst[s].profile == p) {
                    np->g[k].held |= (uint8_t)(1u << s);
                    extra--;
                }
    }
    int64_t advertised = kn->gpus;
    for (int k = 0; k < np->ngpus; k++) {
        struct gpu_plan *g = &np->g[k];
        if (g->mode == GS_GPU_MIG || !g->healthy)
            continue;
        int64_t need = g->mode == GS_GPU_WHOLE ? 1 : g->replicas;
        if (advertised >= need)
            advertised -= need;
        else
            g->healthy = false; /* not advertised: the kubelet would not admit a pod on it */
    }
}

/* A mig-parted config named by nvidia.com/mig.config (NVIDIA's mig-manager applied it): each
 * physical GPU's layout, accepted only when it accounts for exactly what the node
 * advertises. Returns true when the plan is exact. */
static bool from_config(const struct gs_kube_node *kn, int model, const struct gs_migparted *mp,
                        int64_t count, int64_t replicas, enum gs_gpu_mode shared,
                        struct node_plan *np)
{
    const char *name = gs_kube_label(kn, "nvidia.com/mig.config");
    const char *state = gs_kube_label(kn, "nvidia.com/mig.config.state");
    const struct gs_mp_config *cfg = mp && name ? gs_migparted_find(mp, name) : NULL;
    if (!cfg || count <= 0 || count > GS_MAX_GPUS_NODE || (state && strcmp(state, "success")))
        return false;
    uint32_t per_profile[GS_MIG_MAX_PROFILES] = {0};
    int64_t whole = 0;
    np->model = model;
    np->ngpus = (int)count;
    for (int k = 0; k < np->ngpus; k++) {
        struct gpu_plan *g = &np->g[k];
        *g = (struct gpu_plan){.mode = GS_GPU_WHOLE, .replicas = 1, .healthy = true};
        bool enabled = false;
        struct gs_mig_layout layout;
        memset(&layout, 0, sizeof(layout));
        if (gs_migparted_resolve(cfg, k, model, &enabled, &layout, NULL) < 0)
            return false;
        if (!enabled) {
            if (replicas > 1) {
                g->mode = (uint8_t)shared;
                g->replicas = (uint8_t)replicas;
            }
            whole += replicas;
            continue;
        }
        g->mode = GS_GPU_MIG;
        g->layout = layout;
        for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
            per_profile[p] += layout.count[p];
    }
    if (whole != kn->gpus)
        return false;
    const struct gs_gpu_model *gm = gs_catalog_get(model);
    for (int p = 0; p < gm->nprofiles; p++)
        if ((int64_t)per_profile[p] != alloc_of(kn, model, p))
            return false;
    return true;
}

/* Last resort: only counts. Whole GPUs first, then the fewest GPUs that hold the MIG
 * devices; which physical GPU is which is not known (np->guessed). */
static void from_counts(const struct gs_kube_node *kn, int model, int64_t count, int64_t replicas,
                        enum gs_gpu_mode shared, struct node_plan *np, char *why, size_t wn)
{
    int64_t mig_total = 0;
    for (int i = 0; i < kn->next; i++)
        mig_total += kn->ext[i].count;
    np->model = model;
    np->guessed = mig_total > 0;
    struct gs_mig_layout layouts[GS_MAX_GPUS_NODE];
    int mig_gpus = 0;
    if (mig_total > 0) {
        if (!mig_resources_known(kn, model, why, wn))
            return;
        uint32_t demand[GS_MIG_MAX_PROFILES] = {0};
        for (int i = 0; i < kn->next; i++) {
            if (kn->ext[i].count > GS_MIG_COMPUTE_MAX * GS_MAX_GPUS_NODE) {
                snprintf(why, wn, "%s: %lld instances", kn->ext[i].name,
                         (long long)kn->ext[i].count);
                return;
            }
            int p = gs_catalog_find_profile(model, kn->ext[i].name);
            if (p >= 0)
                demand[p] += (uint32_t)kn->ext[i].count;
        }
        mig_gpus = gs_mig_plan(model, demand, layouts, GS_MAX_GPUS_NODE, NULL);
        if (mig_gpus < 0 || mig_gpus > GS_MAX_GPUS_NODE) {
            snprintf(why, wn, "MIG devices do not fit %d GPUs", GS_MAX_GPUS_NODE);
            return;
        }
    }
    int whole = (int)kn->gpus;
    if (replicas > 1) {
        if (kn->gpus % replicas) {
            snprintf(why, wn, "nvidia.com/gpu %lld is not a multiple of %lld replicas",
                     (long long)kn->gpus, (long long)replicas);
            return;
        }
        whole = (int)(kn->gpus / replicas);
    }
    if (whole > GS_MAX_GPUS_NODE || whole + mig_gpus > GS_MAX_GPUS_NODE) {
        snprintf(why, wn, "%d GPUs, at most %d per node", whole + mig_gpus, GS_MAX_GPUS_NODE);
        return;
    }
    if (count >= 0 && count < whole + mig_gpus) {
        snprintf(why, wn, "nvidia.com/gpu.count %lld is less than the %d GPUs advertised",
                 (long long)count, whole + mig_gpus);
        return;
    }
    np->ngpus = whole + mig_gpus;
    for (int k = 0; k < whole; k++)
        np->g[k] = (struct gpu_plan){.mode = (uint8_t)(replicas > 1 ? shared : GS_GPU_WHOLE),
                                     .replicas = (uint8_t)replicas,
                                     .healthy = true};
    for (int k = 0; k < mig_gpus; k++)
        np->g[whole + k] = (struct gpu_plan){
            .mode = GS_GPU_MIG, .replicas = 1, .healthy = true, .layout = layouts[k]};
}

int gs_cache_add_node(struct gs_cluster *c, const struct gs_kube_node *kn,
                      const struct gs_migparted *mp, char *note, size_t note_size)
{
    char why[256] = "";
    if (kn->refused[0])
        snprintf(why, sizeof(why), "%s", kn->refused);
    const char *product = gs_kube_label(kn, "nvidia.com/gpu.product");
    int model = product ? gs_catalog_find(product) : -1;
    int64_t count = label_int(kn, "nvidia.com/gpu.count", -1, why, sizeof(why));
    int64_t replicas = label_int(kn, "nvidia.com/gpu.replicas", 1, why, sizeof(why));
    if (!why[0] && (replicas < 1 || replicas > 255))
        snprintf(why, sizeof(why), "nvidia.com/gpu.replicas %lld: expected 1 to 255",
                 (long long)replicas);
    const char *strategy = gs_kube_label(kn, "nvidia.com/gpu.sharing-strategy");
    enum gs_gpu_mode shared =
        strategy && strcmp(strategy, "mps") == 0 ? GS_GPU_MPS : GS_GPU_TIMESLICE;
    int64_t mig_total = 0;
    for (int i = 0; i < kn->next; i++)
        mig_total += kn->ext[i].count;
    bool has_gpu = kn->gpus > 0 || mig_total > 0 || (kn->inv && kn->inv->ngpus > 0);
    struct node_plan np;
    memset(&np, 0, sizeof(np));
    np.model = -1;
    if (!why[0] && kn->inv_error[0] && !has_gpu)
        has_gpu = true;
    if (!why[0] && kn->inv) {
        from_inventory(kn, &np, why, sizeof(why));
    } else if (!why[0] && kn->inv_error[0]) {
        snprintf(why, sizeof(why), "%s", kn->inv_error);
    } else if (!why[0] && has_gpu && model < 0 && mig_total > 0) {
        snprintf(why, sizeof(why),
                 "nvidia.com/gpu.product '%s' is not a GPU model gpusched knows, and MIG "
                 "devices need its geometry",
                 product ? product : "(missing)");
    } else if (!why[0] && has_gpu && model < 0) {
        /* a model the catalog lacks: whole GPUs and replicas, memory from its label */
        int64_t mem = label_int(kn, "nvidia.com/gpu.memory", 0, why, sizeof(why));
        if (!why[0]) {
            from_counts(kn, gs_catalog_other(), count, replicas, shared, &np, why, sizeof(why));
            for (int k = 0; k < np.ngpus; k++)
                np.g[k].mem_mib = (int32_t)mem;
        }
    } else if (!why[0] && has_gpu) {
        if (!(mig_total > 0 && from_config(kn, model, mp, count, replicas, shared, &np))) {
            memset(&np, 0, sizeof(np));
            from_counts(kn, model, count, replicas, shared, &np, why, sizeof(why));
        }
    }
    if (why[0] || np.model < 0)
        np.ngpus = 0;
    for (int k = 0; k < np.ngpus && !why[0]; k++)
        if (np.g[k].mode == GS_GPU_MIG && !gs_catalog_mig_capable(np.model))
            snprintf(why, sizeof(why), "%s is not MIG-capable", gs_catalog_get(np.model)->name);
    if (why[0])
        np.ngpus = 0;
    if (note)
        snprintf(note, note_size, "%s", has_gpu ? why : "");
    int id = gs_cluster_add_node(c, kn->name, np.ngpus ? np.model : -1, np.ngpus, kn->cpu_milli,
                                 kn->mem_mib, GS_GPU_WHOLE, 1, NULL);
    if (id < 0)
        return id;
    struct gs_node *n = &c->nodes[id];
    /* a node gpusched cannot model exactly keeps its pods but gets no new ones; a cordoned
     * node (spec.unschedulable) is the pods' tolerations' business (gs_kube_tolerates) */
    n->unschedulable = kn->refused[0];
    n->layout_guessed = np.guessed;
    n->pods_cap = kn->pods > 0 ? (int32_t)kn->pods : 110;
    if (gs_labels_copy(&n->labels, &kn->labels)) {
        GS_WARN("cache", "node '%s': out of memory for its labels; it gets no new pods", kn->name);
        n->unschedulable = true;
    }
    struct gs_gpu_link links[GS_MAX_GPUS_NODE];
    memset(links, 0, sizeof(links));
    if (kn->inv && !np.guessed)
        gs_inventory_links(kn->inv, links); /* the multi-GPU device choice reads them */
    for (int k = 0; k < np.ngpus; k++) {
        const struct gpu_plan *pg = &np.g[k];
        struct gs_gpu *g = &c->gpus[n->gpu0 + k];
        g->link = links[k];
        g->mode = pg->mode;
        g->replicas = pg->mode == GS_GPU_TIMESLICE || pg->mode == GS_GPU_MPS ? pg->replicas : 0;
        g->healthy = pg->healthy;
        if (pg->mem_mib > 0)
            g->mem_mib = pg->mem_mib;
        if (pg->mode == GS_GPU_MIG) {
            if (pg->placed)
                g->mig = pg->pl;
            else if (gs_mig_place(np.model, &pg->layout, &g->mig, NULL))
                g->healthy = false; /* a plan that does not place: offer nothing here */
            g->mig_used = pg->held;
        }
    }
    gs_node_touch(n);
    return id;
}

int gs_cache_parse_devices(const struct gs_cluster *c, int node, const char *text,
                           const struct gs_request *req, struct gs_alloc *a)
{
    const struct gs_node *n = &c->nodes[node];
    memset(a, 0, sizeof(*a));
    a->node = node;
    a->kind = req->kind;
    struct gs_devices d;
    if (gs_devices_parse(text, strlen(text), &d) || d.n > GS_MAX_GPUS_NODE)
        return GS_EINVAL;
    a->milli = d.kind == GS_DEVICES_GPU ? GS_MILLI : 0;
    for (int k = 0; k < d.n; k++) {
        const struct gs_devices_item *it = &d.item[k];
        if (it->gpu >= n->ngpus)
            return GS_EINVAL;
        a->gpu[a->ndev] = n->gpu0 + it->gpu;
        a->slot[a->ndev] = -1;
        if (d.kind == GS_DEVICES_MIG) {
            const struct gs_gpu *g = &c->gpus[a->gpu[a->ndev]];
            if (g->mode != GS_GPU_MIG)
                return GS_EINVAL;
            int pi = gs_catalog_find_profile(g->model, it->profile);
            for (int s = 0; s < g->mig.n; s++)
                if (g->mig.inst[s].profile == pi && g->mig.inst[s].start == it->start &&
                    !(g->mig_used & (1u << s)))
                    a->slot[a->ndev] = (int8_t)s;
            if (a->slot[a->ndev] < 0) {
                /* an instance of that profile anywhere free on the GPU will do */
                for (int s = 0; s < g->mig.n && a->slot[a->ndev] < 0; s++)
                    if (g->mig.inst[s].profile == pi && !(g->mig_used & (1u << s)))
                        a->slot[a->ndev] = (int8_t)s;
            }
            if (a->slot[a->ndev] < 0)
                return GS_EINVAL;
        } else if (d.kind == GS_DEVICES_MILLI) {
            a->milli = (int16_t)it->milli;
        }
        a->ndev++;
    }
    /* the annotation must match what the pod asks */
    bool mig = d.kind == GS_DEVICES_MIG, milli = d.kind == GS_DEVICES_MILLI;
    if (req->kind == GS_REQ_MIG && (!mig || a->ndev != 1))
        return GS_EINVAL;
    if (req->kind == GS_REQ_FRACTION && (!milli || a->ndev != 1 || a->milli != req->milli))
        return GS_EINVAL;
    if (req->kind == GS_REQ_GPU && (mig || milli || a->ndev != req->gpus))
        return GS_EINVAL;
    return 0;
}

int gs_cache_add_pod(struct gs_cluster *c, int node, const struct gs_kube_pod *p,
                     struct gs_alloc *used)
{
    struct gs_alloc a;
    if (p->req.kind == GS_REQ_NONE) {
        memset(&a, 0, sizeof(a));
        a.node = node;
        if (gs_cluster_bind(c, &p->req, &a) == 0) {
            if (used)
                *used = a;
            return 0;
        }
    } else if (p->devices[0] && gs_cache_parse_devices(c, node, p->devices, &p->req, &a) == 0 &&
               gs_cluster_bind(c, &p->req, &a) == 0) {
        if (used)
            *used = a;
        return 0;
    } else {
        /* bound by someone else (or an annotation we cannot honour): first free devices */
        struct gs_cluster one = {
            .nodes = &c->nodes[node], .nnodes = 1, .gpus = c->gpus, .ngpus = c->ngpus};
        struct gs_node saved = c->nodes[node];
        bool unsched = one.nodes[0].unschedulable;
        one.nodes[0].unschedulable = false;
        int rc = gs_engine_first_fit(&one, &p->req, &a);
        one.nodes[0].unschedulable = unsched;
        (void)saved;
        if (rc == 0) {
            a.node = node;
            if (gs_cluster_bind(c, &p->req, &a) == 0) {
                if (used)
                    *used = a;
                return 0;
            }
        }
    }
    /* over-committed node: count what we can so the node looks as full as it is */
    struct gs_node *n = &c->nodes[node];
    n->cpu_free -= p->req.cpu_milli;
    n->mem_free -= p->req.mem_mib;
    n->pods_used++;
    gs_node_touch(n);
    GS_WARN("cache", "pod %s/%s on node '%s' does not fit what the node offers", p->ns, p->name,
            n->name);
    return GS_ENOFIT;
}
