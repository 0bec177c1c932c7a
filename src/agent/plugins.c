/* plugins.c - the node agent's kubelet plugins (see plugins.h): the device plugins' resources
 * built from the sampler's view, and the DRA driver's start and updates. */
#include "plugins.h"

#include "../base/error.h"
#include "../base/log.h"
#include "deviceplugin.h"
#include "dra.h"
#include "pods.h"
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RESOURCES 16

struct gs_plugins {
    struct gs_plugins_opts o;
    struct gs_sampler *s;
    struct gs_pods *pods;
    struct gs_gpus *g; /* the sampler's view, read by build_resources */
    int nplugins;
    char plugin_res[MAX_RESOURCES][96];
    struct gs_dp_plugin *plugins[MAX_RESOURCES];
    struct gs_dra *dra; /* the DRA driver, or NULL */
};

/* One advertised resource and its devices, as the device-plugin config and MIG mode shape
 * them: whole GPUs (or their time-slicing/MPS replicas "<uuid>::<k>") as nvidia.com/gpu;
 * MIG instances as nvidia.com/mig-<profile> (mixed) or nvidia.com/gpu (single). */
struct res {
    char name[96];
    int n;
    struct gs_dp_device d[GS_DP_MAX_DEVS];
};

static int add_dev(struct res *rs, int *nrs, const char *name, const char *id, const char *uuid,
                   bool healthy, int gpu)
{
    int r;
    for (r = 0; r < *nrs; r++)
        if (strcmp(rs[r].name, name) == 0)
            break;
    if (r == *nrs) {
        if (*nrs >= MAX_RESOURCES)
            return -1;
        memset(&rs[r], 0, sizeof(rs[r]));
        snprintf(rs[r].name, sizeof(rs[r].name), "%s", name);
        (*nrs)++;
    }
    if (rs[r].n >= GS_DP_MAX_DEVS)
        return -1;
    struct gs_dp_device *d = &rs[r].d[rs[r].n++];
    memset(d, 0, sizeof(*d));
    snprintf(d->id, sizeof(d->id), "%s", id);
    snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
    d->healthy = healthy;
    d->gpu = gpu;
    return 0;
}

static int build_resources(struct gs_plugins *a, struct res *rs)
{
    int nrs = 0;
    const struct gs_dpconfig *dp = a->o.dp;
    enum gs_mig_strategy strat = dp ? dp->mig_strategy : GS_MIG_STRATEGY_NONE;
    int replicas = a->o.replicas;
    gs_sampler_read(a->s, a->g);
    const struct gs_gpus *g = a->g;
    for (int i = 0; i < g->n; i++) {
        bool ok = g->h[i].healthy;
        if (!g->info[i].mig_enabled) {
            if (replicas <= 1) {
                add_dev(rs, &nrs, "nvidia.com/gpu", g->info[i].uuid, g->info[i].uuid, ok, i);
            } else {
                for (int k = 0; k < replicas; k++) {
                    char id[96];
                    snprintf(id, sizeof(id), "%.80s::%d", g->info[i].uuid, k);
                    add_dev(rs, &nrs, "nvidia.com/gpu", id, g->info[i].uuid, ok, i);
                }
            }
            continue;
        }
        if (strat == GS_MIG_STRATEGY_NONE)
            continue; /* MIG GPUs are not advertised without a MIG strategy */
        const struct gs_gpu_model *m = gs_catalog_get(g->info[i].model);
        for (int q = 0; q < g->ninst[i]; q++) {
            const struct gs_mig_inst *mi = &g->inst[i][q];
            int pi = gs_gpu_profile_index(g->info[i].model, mi->profile_id);
            char name[96];
            if (strat == GS_MIG_STRATEGY_SINGLE)
                snprintf(name, sizeof(name), "nvidia.com/gpu");
            else if (m && pi >= 0)
                gs_mig_resource_name(&m->profiles[pi], name, sizeof(name));
            else
                continue;
            add_dev(rs, &nrs, name, mi->uuid, mi->uuid, ok, i);
        }
    }
    return nrs;
}

static void update_devices(struct gs_plugins *a)
{
    if (!a->o.dp_dir)
        return;
    static struct res rs[MAX_RESOURCES];
    int nrs = build_resources(a, rs);
    for (int r = 0; r < nrs; r++) {
        int s;
        for (s = 0; s < a->nplugins; s++)
            if (strcmp(a->plugin_res[s], rs[r].name) == 0)
                break;
        if (s < a->nplugins) {
            gs_dp_update(a->plugins[s], rs[r].d, rs[r].n);
            continue;
        }
        if (a->nplugins >= MAX_RESOURCES)
            continue;
        char sock[128], why[512];
        snprintf(sock, sizeof(sock), "gpusched-%s.sock", rs[r].name);
        for (char *c = sock; *c; c++)
            if (*c == '/')
                *c = '-';
        struct gs_dp_mps mps;
        memset(&mps, 0, sizeof(mps));
        const struct gs_dpconfig *dp = a->o.dp;
        if (dp && dp->sharing == GS_SHARING_MPS && strcmp(rs[r].name, "nvidia.com/gpu") == 0) {
            mps.on = true;
            snprintf(mps.pipe_dir, sizeof(mps.pipe_dir), "%s/pipe",
                     dp->mps_root[0] ? dp->mps_root : "/run/nvidia/mps");
            mps.replicas = rs[r].n / (a->g->n > 0 ? a->g->n : 1);
            mps.mem_mib = a->g->n > 0 ? a->g->info[0].mem_mib : 0;
            for (int k = 0; k < dp->mps.nresources && k < GS_DP_MAX_RESOURCES; k++)
                if (dp->mps.resources[k].replicas > 0)
                    mps.replicas = dp->mps.resources[k].replicas;
        }
        struct gs_dp_plugin *p = gs_dp_start(a->o.dp_dir, rs[r].name, sock, rs[r].d, rs[r].n, &mps,
                                             gs_pods_pick, a->pods, why, sizeof(why));
        if (!p) {
            GS_WARN("agent", "device plugin %s: %s", rs[r].name, why);
            continue;
        }
        snprintf(a->plugin_res[a->nplugins], sizeof(a->plugin_res[0]), "%s", rs[r].name);
        a->plugins[a->nplugins++] = p;
    }
    /* resources that disappeared (a MIG change): no devices left to offer */
    for (int s = 0; s < a->nplugins; s++) {
        bool found = false;
        for (int r = 0; r < nrs && !found; r++)
            found = strcmp(a->plugin_res[s], rs[r].name) == 0;
        if (!found)
            gs_dp_update(a->plugins[s], NULL, 0);
    }
}

/* The DRA driver: its slices of the GPUs as they are now, with their health. */
static void sync_dra(struct gs_plugins *p)
{
    bool healthy[GS_AGENT_MAX_GPUS];
    int n = gs_sampler_health(p->s, healthy, GS_AGENT_MAX_GPUS);
    struct gs_error err;
    gs_error_init(&err);
    if (gs_dra_sync(p->dra, healthy, n, &err))
        GS_WARN("agent", "DRA: %s", err.msg);
}

int gs_plugins_start(const struct gs_plugins_opts *o, struct gs_sampler *s, struct gs_pods *pods,
                     struct gs_gpu_backend *b, struct gs_kube_client *kc, struct gs_plugins **out,
                     struct gs_error *err)
{
    *out = NULL;
    struct gs_plugins *p = calloc(1, sizeof(*p));
    if (p)
        p->g = malloc(sizeof(*p->g));
    if (!p || !p->g) {
        free(p);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    p->o = *o;
    p->s = s;
    p->pods = pods;
    if (o->dra) {
        struct gs_dra_opts d = {.node = o->node,
                                .plugins_dir = o->dra_plugins_dir,
                                .registry_dir = o->dra_registry_dir,
                                .cdi_dir = o->cdi_dir,
                                .dynamic_mig = o->dra_dynamic_mig};
        int rc = gs_dra_new(&d, b, kc, &p->dra, err);
        if (!rc)
            rc = gs_dra_serve(p->dra, err);
        if (rc) {
            gs_plugins_stop(p);
            return gs_error_prefix(err, "DRA driver (--dra)");
        }
    }
    *out = p;
    return 0;
}

void gs_plugins_update(struct gs_plugins *p)
{
    update_devices(p);
    if (p->dra)
        sync_dra(p);
}

int gs_plugins_in_use(struct gs_plugins *p, char (*uuid)[96], int cap)
{
    return p->dra ? gs_dra_in_use(p->dra, uuid, cap) : 0;
}

void gs_plugins_stop(struct gs_plugins *p)
{
    if (!p)
        return;
    for (int k = 0; k < p->nplugins; k++)
        gs_dp_stop(p->plugins[k]);
    gs_dra_free(p->dra);
    free(p->g);
    free(p);
}
