/* plugins.c - the node agent's kubelet plugins (see plugins.h): the device plugins' resources
 * built from the sampler's view, the MPS control daemons their MPS clients need (mps.c), and
 * the DRA driver's start and updates. */
#include "plugins.h"

#include "../base/error.h"
#include "../base/log.h"
#include "deviceplugin.h"
#include "dra.h"
#include "mps.h"
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
    struct gs_mps *mps; /* the MPS control daemons, or NULL */
};

#define MILLI_RESOURCE "gpusched.io/gpu-milli"

/* One advertised resource and its devices, as the device-plugin config and MIG mode shape
 * them: whole GPUs (or their time-slicing/MPS replicas "<uuid>::<k>") as nvidia.com/gpu;
 * MIG instances as nvidia.com/mig-<profile> (mixed) or nvidia.com/gpu (single). */
struct res {
    char name[96];
    int n;
    struct gs_dp_device d[GS_DP_MAX_DEVS];
};

static int add_dev(struct res *rs, int *nrs, const char *name, const char *id,
                   const struct gs_gpus *g, int gpu, const char *uuid, bool milli)
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
    d->healthy = g->h[gpu].healthy;
    d->gpu = gpu;
    d->milli = milli;
    d->mem_mib = g->info[gpu].mem_mib;
    return 0;
}

/* Whether GPU i of g serves MPS clients (replicas under sharing.mps, or fractions), hence has
 * a daemon. */
static bool mps_gpu(const struct gs_plugins *a, const struct gs_gpus *g, int i)
{
    const struct gs_dpconfig *dp = a->o.dp;
    if (g->info[i].mig_enabled)
        return false;
    if (a->o.replicas > 1)
        return dp && dp->sharing == GS_SHARING_MPS;
    return a->o.fractions;
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
        const char *uuid = g->info[i].uuid;
        if (!g->info[i].mig_enabled) {
            if (replicas <= 1) {
                add_dev(rs, &nrs, "nvidia.com/gpu", uuid, g, i, uuid, false);
                if (a->o.fractions)
                    add_dev(rs, &nrs, MILLI_RESOURCE, uuid, g, i, uuid, true);
            } else {
                for (int k = 0; k < replicas; k++) {
                    char id[96];
                    snprintf(id, sizeof(id), "%.80s::%d", uuid, k);
                    add_dev(rs, &nrs, "nvidia.com/gpu", id, g, i, uuid, false);
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
            add_dev(rs, &nrs, name, mi->uuid, g, i, mi->uuid, false);
        }
    }
    /* an MPS client's device is healthy while its GPU's daemon runs too */
    char pipe[256], shm[256];
    for (int r = 0; r < nrs; r++)
        for (int k = 0; k < rs[r].n; k++) {
            struct gs_dp_device *d = &rs[r].d[k];
            bool mig = strcmp(d->id, d->uuid) != 0 && strncmp(d->uuid, "MIG-", 4) == 0;
            if (!mig && mps_gpu(a, g, d->gpu) && (d->milli || replicas > 1))
                d->healthy &= gs_mps_live(a->mps, d->gpu, pipe, shm, sizeof(pipe)) == 0;
        }
    return nrs;
}

/* The MPS control daemons the GPUs need now: a replica's share of the GPU by default, or (for
 * fractions, whose clients narrow it) all of it. */
static void want_daemons(struct gs_plugins *a)
{
    if (!a->mps)
        return;
    struct gs_mps_want w[GS_AGENT_MAX_GPUS];
    int n = 0, replicas = a->o.replicas > 1 ? a->o.replicas : 1;
    const struct gs_gpus *g = a->g; /* as build_resources read it */
    for (int i = 0; i < g->n && n < GS_AGENT_MAX_GPUS; i++) {
        if (!mps_gpu(a, g, i))
            continue;
        memset(&w[n], 0, sizeof(w[n]));
        w[n].gpu = i;
        snprintf(w[n].uuid, sizeof(w[n].uuid), "%s", g->info[i].uuid);
        w[n].thread_pct = 100 / replicas > 0 ? 100 / replicas : 1;
        w[n].mem_mib = replicas > 1 ? g->info[i].mem_mib / (uint64_t)replicas : 0;
        n++;
    }
    gs_mps_set(a->mps, w, n);
}

/* The device plugins' hooks (user: the plugins), on their threads. */
static int live(void *user, int gpu, char *pipe, char *shm, size_t size)
{
    struct gs_plugins *a = user;
    return gs_mps_live(a->mps, gpu, pipe, shm, size);
}

static int pick(void *user, const char *resource, int size, char uuids[][96], int cap)
{
    struct gs_plugins *a = user;
    return a->pods ? gs_pods_pick(a->pods, resource, size, uuids, cap) : 0;
}

static void allocated(void *user, const char *resource, int size, char uuids[][96], int n)
{
    struct gs_plugins *a = user;
    if (a->pods)
        gs_pods_allocated(a->pods, resource, size, uuids, n);
}

/* How the plugin of resource r shares its devices. */
static struct gs_dp_hooks hooks_of(struct gs_plugins *a, const char *resource)
{
    const struct gs_dpconfig *dp = a->o.dp;
    struct gs_dp_hooks h = {.pick = pick,
                            .allocated = allocated,
                            .mps_live = live,
                            .user = a,
                            .replicas = a->o.replicas};
    if (strcmp(resource, "nvidia.com/gpu") == 0)
        gs_gpu_links(a->g->info, a->g->n, h.links); /* links are fixed: read once at start */
    if (strcmp(resource, MILLI_RESOURCE) == 0)
        h.sharing = GS_DP_FRACTION;
    else if (dp && dp->sharing == GS_SHARING_MPS && a->o.replicas > 1 &&
             strcmp(resource, "nvidia.com/gpu") == 0)
        h.sharing = GS_DP_MPS;
    return h;
}

static void update_devices(struct gs_plugins *a)
{
    if (!a->o.dp_dir)
        return;
    static struct res rs[MAX_RESOURCES];
    int nrs = build_resources(a, rs);
    want_daemons(a);
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
        struct gs_dp_hooks h = hooks_of(a, rs[r].name);
        struct gs_dp_plugin *p =
            gs_dp_start(a->o.dp_dir, rs[r].name, sock, rs[r].d, rs[r].n, &h, why, sizeof(why));
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

/* The MPS control daemons' component, when GPUs serve MPS clients (none has started yet): MPS
 * on a GPU older than Volta is refused here, with the GPU and the rule. */
static int start_mps(struct gs_plugins *p, struct gs_error *err)
{
    const struct gs_dpconfig *dp = p->o.dp;
    if (!p->o.dp_dir)
        return 0;
    if (p->o.fractions && p->o.replicas > 1)
        GS_WARN("agent", "--fractions: no gpusched.io/gpu-milli offered: the device-plugin "
                         "config's sharing replicates every whole GPU (fractions take GPUs "
                         "that are not otherwise shared)");
    gs_sampler_read(p->s, p->g);
    bool any = false;
    for (int i = 0; i < p->g->n; i++) {
        if (!mps_gpu(p, p->g, i))
            continue;
        char why[400];
        if (!gs_mps_supported(&p->g->info[i], why, sizeof(why)))
            return gs_error_set(err, GS_EINVAL, "%s %s: %s",
                                p->o.replicas > 1 ? "sharing.mps in" : "--fractions (MPS clients)",
                                p->o.replicas > 1 ? "--dp-config" : "on this node", why);
        any = true;
    }
    struct gs_mps_opts mo = {.control = p->o.mps_control,
                             .root = p->o.mps_root           ? p->o.mps_root
                                     : dp && dp->mps_root[0] ? dp->mps_root
                                                             : NULL,
                             .timeout_s = p->o.mps_timeout_s};
    return any ? gs_mps_new(&mo, &p->mps, err) : 0;
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
    int rc = start_mps(p, err);
    if (rc) {
        gs_plugins_stop(p);
        return rc;
    }
    if (o->dra) {
        struct gs_dra_opts d = {.node = o->node,
                                .plugins_dir = o->dra_plugins_dir,
                                .registry_dir = o->dra_registry_dir,
                                .cdi_dir = o->cdi_dir,
                                .dynamic_mig = o->dra_dynamic_mig};
        rc = gs_dra_new(&d, b, kc, &p->dra, err);
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

int gs_plugins_mps_round(struct gs_plugins *p)
{
    if (!p->mps)
        return 0;
    gs_sampler_read(p->s, p->g);
    want_daemons(p);
    if (gs_mps_round(p->mps))
        update_devices(p); /* the devices of a daemon that came or went, at once */
    return gs_mps_running(p->mps);
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
    gs_mps_free(p->mps); /* after the plugins: no Allocate asks it any more */
    free(p->g);
    free(p);
}
