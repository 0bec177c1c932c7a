/* cache.c - from Kubernetes objects to the engine's cluster: the scheduler daemon and the
 * extender rebuild their snapshot with it, and the end-to-end tests check allocations
 * from the API with the same reading. */
#include "cache.h"

#include "../base/error.h"
#include "../base/log.h"

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

int gs_cache_add_node(struct gs_cluster *c, const struct gs_kube_node *kn, char *note,
                      size_t note_size)
{
    char why[256] = "";
    if (kn->refused[0])
        snprintf(why, sizeof(why), "%s", kn->refused);
    const char *product = gs_kube_label(kn, "nvidia.com/gpu.product");
    int model = product ? gs_catalog_find(product) : -1;
    int64_t count = label_int(kn, "nvidia.com/gpu.count", -1, why, sizeof(why));
    int64_t replicas = label_int(kn, "nvidia.com/gpu.replicas", 1, why, sizeof(why));
    const char *strategy = gs_kube_label(kn, "nvidia.com/gpu.sharing-strategy");
    int64_t mig_total = 0;
    for (int i = 0; i < kn->next; i++)
        mig_total += kn->ext[i].count;
    bool has_gpu = kn->gpus > 0 || mig_total > 0;
    if (!why[0] && has_gpu && model < 0)
        snprintf(why, sizeof(why), "nvidia.com/gpu.product '%s' is not a known GPU model",
                 product ? product : "(missing)");
    struct gs_mig_layout layouts[GS_MAX_GPUS_NODE];
    int mig_gpus = 0;
    if (!why[0] && mig_total > 0) {
        uint32_t demand[GS_MIG_MAX_PROFILES] = {0};
        for (int i = 0; i < kn->next && !why[0]; i++) {
            int p = gs_catalog_find_profile(model, kn->ext[i].name);
            if (p < 0)
                snprintf(why, sizeof(why), "%s is not a MIG profile of %s", kn->ext[i].name,
                         gs_catalog_get(model)->name);
            else if (kn->ext[i].count > 7 * GS_MAX_GPUS_NODE)
                snprintf(why, sizeof(why), "%s: %lld instances", kn->ext[i].name,
                         (long long)kn->ext[i].count);
            else
                demand[p] += (uint32_t)kn->ext[i].count;
        }
        if (!why[0]) {
            mig_gpus = gs_mig_plan(model, demand, layouts, GS_MAX_GPUS_NODE, NULL);
            if (mig_gpus < 0 || mig_gpus > GS_MAX_GPUS_NODE)
                snprintf(why, sizeof(why), "MIG devices do not fit %d GPUs", GS_MAX_GPUS_NODE);
        }
    }
    enum gs_gpu_mode mode = GS_GPU_WHOLE;
    int whole = (int)kn->gpus;
    if (!why[0] && replicas > 1) {
        if (replicas > 255 || kn->gpus % replicas) {
            snprintf(why, sizeof(why), "nvidia.com/gpu %lld is not a multiple of %lld replicas",
                     (long long)kn->gpus, (long long)replicas);
        } else {
            mode = strategy && strcmp(strategy, "mps") == 0 ? GS_GPU_MPS : GS_GPU_TIMESLICE;
            whole = (int)(kn->gpus / replicas);
        }
    }
    if (!why[0] && whole + mig_gpus > GS_MAX_GPUS_NODE)
        snprintf(why, sizeof(why), "%d GPUs, at most %d per node", whole + mig_gpus,
                 GS_MAX_GPUS_NODE);
    if (!why[0] && count >= 0 && count < whole + mig_gpus)
        snprintf(why, sizeof(why), "nvidia.com/gpu.count %lld is less than the %d GPUs advertised",
                 (long long)count, whole + mig_gpus);
    if (note)
        snprintf(note, note_size, "%s", why);
    int ngpus = why[0] ? 0 : whole + mig_gpus;
    if (!ngpus)
        mig_gpus = 0; /* a refused node has no GPUs to lay MIG instances on */
    int id = gs_cluster_add_node(c, kn->name, ngpus ? model : -1, ngpus, kn->cpu_milli, kn->mem_mib,
                                 mode, (int)replicas, NULL);
    if (id < 0)
        return id;
    struct gs_node *n = &c->nodes[id];
    /* a node gpusched cannot model exactly keeps its pods but gets no new ones */
    n->unschedulable = kn->unschedulable || kn->refused[0];
    n->pods_cap = kn->pods > 0 ? (int32_t)kn->pods : 110;
    if (gs_labels_copy(&n->labels, &kn->labels)) {
        GS_WARN("cache", "node '%s': out of memory for its labels; it gets no new pods", kn->name);
        n->unschedulable = true;
    }
    /* MIG GPUs come after the whole ones */
    for (int k = 0; k < mig_gpus; k++) {
        struct gs_gpu *g = &c->gpus[n->gpu0 + whole + k];
        g->mode = GS_GPU_MIG;
        g->replicas = 0;
        gs_mig_place(model, &layouts[k], &g->mig, NULL);
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
    const char *eq = strchr(text, '=');
    if (!eq || strlen(text) > 250)
        return GS_EINVAL;
    size_t kl = (size_t)(eq - text);
    const char *p = eq + 1;
    bool mig = kl == 3 && strncmp(text, "mig", 3) == 0;
    bool milli = kl == 5 && strncmp(text, "milli", 5) == 0;
    bool replica = kl == 7 && strncmp(text, "replica", 7) == 0;
    bool gpu = kl == 3 && strncmp(text, "gpu", 3) == 0;
    if (!mig && !milli && !replica && !gpu)
        return GS_EINVAL;
    a->milli = gpu ? GS_MILLI : 0;
    while (*p) {
        char *end;
        long idx = strtol(p, &end, 10);
        if (end == p || idx < 0 || idx >= n->ngpus || a->ndev >= GS_MAX_GPUS_NODE)
            return GS_EINVAL;
        a->gpu[a->ndev] = n->gpu0 + (int32_t)idx;
        a->slot[a->ndev] = -1;
        p = end;
        if (mig) {
            /* :<profile>@<start> */
            if (*p != ':')
                return GS_EINVAL;
            const char *at = strchr(p, '@');
            if (!at)
                return GS_EINVAL;
            char prof[32];
            size_t pl = (size_t)(at - p - 1);
            if (pl == 0 || pl >= sizeof(prof))
                return GS_EINVAL;
            memcpy(prof, p + 1, pl);
            prof[pl] = '\0';
            long start = strtol(at + 1, &end, 10);
            if (end == at + 1)
                return GS_EINVAL;
            const struct gs_gpu *g = &c->gpus[a->gpu[a->ndev]];
            if (g->mode != GS_GPU_MIG)
                return GS_EINVAL;
            int pi = gs_catalog_find_profile(g->model, prof);
            for (int s = 0; s < g->mig.n; s++)
                if (g->mig.inst[s].profile == pi && g->mig.inst[s].start == start &&
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
            p = end;
        } else if (milli) {
            if (*p != ':')
                return GS_EINVAL;
            long m = strtol(p + 1, &end, 10);
            if (end == p + 1 || m <= 0 || m >= GS_MILLI)
                return GS_EINVAL;
            a->milli = (int16_t)m;
            p = end;
        }
        a->ndev++;
        if (*p == ',')
            p++;
        else if (*p)
            return GS_EINVAL;
    }
    /* the annotation must match what the pod asks */
    if (req->kind == GS_REQ_MIG && (!mig || a->ndev != 1))
        return GS_EINVAL;
    if (req->kind == GS_REQ_FRACTION && (!milli || a->ndev != 1 || a->milli != req->milli))
        return GS_EINVAL;
    if (req->kind == GS_REQ_GPU && ((!gpu && !replica) || a->ndev != req->gpus))
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
