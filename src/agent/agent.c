/* agent.c - `gpusched agent` (see agent.h): the wiring of the node agent's components and
 * its loop. Each component owns its state and lock behind a small API:
 *   - sampler.c: the GPU sampler with health (the backend's readings, health, tenants);
 *   - pods.c: the pod tracker (pods, their devices, pod-resources, annotation corrections);
 *   - reconciler.c: the node reconciler (cordon, labels, inventory, MIG config and desired
 *     layouts, through migmgr.c);
 *   - plugins.c: the kubelet plugins (device plugins, the DRA driver), served by the one gRPC
 *     server (grpcserver.c);
 *   - exporter.c: /metrics, /healthz and /status, on the HTTP server's threads.
 * This file starts them, runs the loop that drives them, and holds inspect. */
#include "agent.h"

#include "../base/buf.h"
#include "../base/clock.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "../base/log.h"
#include "../formats/draslice.h"
#include "../kube/httpd.h"
#include "dra.h"
#include "exporter.h"
#include "gpulock.h"
#include "plugins.h"
#include "pods.h"
#include "procpod.h"
#include "reconciler.h"
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int gs_agent_devices(const char *ann, int *gpu, int *mig_start, int cap)
{
    return gs_pods_devices(ann, gpu, mig_start, cap);
}

int gs_agent_monitor_config(const char *path, struct gs_agent_opts *o, struct gs_error *err)
{
    struct gs_monitor_config mon;
    int rc = gs_exporter_monitor_config(path, &mon, err);
    if (rc)
        return rc;
    o->mon = mon;
    if (mon.scrape_interval_s > 0)
        o->scrape_s = mon.scrape_interval_s;
    return 0;
}

/* ---------- inspect ---------- */

/* A GPU's links as the inventory publishes them: NUMA node, PCIe path, NVLink peers. */
static void inspect_links(struct gs_buf *o, const struct gs_gpu_info *in, int n)
{
    char nv[256] = "";
    size_t off = 0;
    for (int j = 0; j < n && j < GS_AGENT_MAX_GPUS && off < sizeof(nv); j++)
        if (in->nvlink[j] && j != in->index)
            off += (size_t)snprintf(nv + off, sizeof(nv) - off, "%sGPU %d x%u", off ? ", " : "", j,
                                    in->nvlink[j]);
    char numa[16] = "not known";
    if (in->numa_ok)
        snprintf(numa, sizeof(numa), "%u", in->numa);
    gs_buf_printf(o, "  links: NUMA node %s, PCIe %s, NVLink %s\n", numa,
                  in->pci_path[0] ? in->pci_path : "not known", nv[0] ? nv : "none");
}

int gs_agent_inspect(struct gs_gpu_backend *b, char *out, size_t size)
{
    struct gs_buf o;
    gs_buf_init(&o, 0);
    int n = b->ops->count(b), mismatches = 0;
    gs_buf_printf(&o, "backend %s: %d GPU%s\n", b->ops->name, n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        struct gs_gpu_info in;
        struct gs_gpu_metrics m;
        if (b->ops->info(b, i, &in))
            continue;
        memset(&m, 0, sizeof(m));
        b->ops->metrics(b, i, &m);
        const struct gs_gpu_model *cm = gs_catalog_get(in.model);
        gs_buf_printf(&o,
                      "GPU %d: %s (%s), %s, PCI 0x%08X, %llu MiB, MIG %s%s%s\n"
                      "  now: util %u%%, memory %llu/%llu MiB, %.0f W, %u C, SM %u MHz, memory "
                      "%u MHz, ECC uncorrected %llu, corrected %llu\n",
                      i, in.name, cm ? cm->name : "not in gpusched's catalog", in.uuid, in.pci_id,
                      (unsigned long long)in.mem_mib,
                      !in.mig_capable  ? "not supported"
                      : in.mig_enabled ? "enabled"
                                       : "disabled",
                      in.mig_pending ? " (change pending a reset)" : "", "", m.util_pct,
                      (unsigned long long)(m.mem_used >> 20),
                      (unsigned long long)(m.mem_total >> 20), m.power_w, m.temp_c, m.sm_clock_mhz,
                      m.mem_clock_mhz, (unsigned long long)m.ecc_uncorrected,
                      (unsigned long long)m.ecc_corrected);
        inspect_links(&o, &in, n);
        struct gs_gpu_proc ps[GS_AGENT_MAX_PROCS];
        int nps = b->ops->processes(b, i, ps, GS_AGENT_MAX_PROCS);
        if (nps < 0)
            gs_buf_printf(&o, "  processes: not offered\n");
        for (int k = 0; k < nps; k++) {
            struct gs_procpod pp;
            char gi[16] = "-", util[16] = "not measured", mem[32] = "not measured";
            if (ps[k].gi_id != GS_GPU_NO_INSTANCE)
                snprintf(gi, sizeof(gi), "%u", ps[k].gi_id);
            if (ps[k].util_ok)
                snprintf(util, sizeof(util), "%u%%", ps[k].util_pct);
            if (ps[k].mem_ok)
                snprintf(mem, sizeof(mem), "%llu MiB", (unsigned long long)(ps[k].mem_used >> 20));
            bool in_pod = gs_procpod_read(NULL, ps[k].pid, &pp) == 0;
            gs_buf_printf(&o,
                          "  process %u: GPU instance %s, SM util %s, memory %s, pod (/proc) %s\n",
                          ps[k].pid, gi, util, mem, in_pod ? pp.pod_uid : "none");
        }
        if (!in.mig_capable)
            continue;
        struct gs_gpu_profile pr[16];
        int np = b->ops->mig_profiles(b, i, pr, 16);
        gs_buf_printf(&o, "  MIG profiles (id, slices, memory slices, max, SMs, MiB, starts) "
                          "against the catalog:\n");
        for (int k = 0; k < np; k++) {
            int ci = cm ? gs_gpu_profile_index(in.model, pr[k].id) : -1;
            char starts[32] = "";
            size_t so = 0;
            for (int s = 0; s < 8; s++)
                if (pr[k].start_mask >> s & 1)
                    so += (size_t)snprintf(starts + so, sizeof(starts) - so, "%s%d", so ? "," : "",
                                           s);
            const char *verdict = "not in the catalog";
            if (ci >= 0) {
                const struct gs_mig_profile *c = &cm->profiles[ci];
                bool same = c->compute == pr[k].compute && c->mem_slices == pr[k].mem_slices &&
                            c->max_count == pr[k].max_count && c->start_mask == pr[k].start_mask &&
                            c->sms == pr[k].sms;
                verdict = same ? c->name : "DIFFERS from the catalog";
                if (!same)
                    mismatches++;
            } else if (cm) {
                mismatches++;
            }
            gs_buf_printf(&o, "    %3u  %ug  %u  x%u  %3u SMs  %6llu MiB  starts {%s}  %s\n",
                          pr[k].id, pr[k].compute, pr[k].mem_slices, pr[k].max_count, pr[k].sms,
                          (unsigned long long)pr[k].mem_mib, starts, verdict);
        }
        struct gs_mig_inst mi[8];
        int ni = in.mig_enabled ? b->ops->mig_list(b, i, mi, 8) : 0;
        /* an instance's utilization is the change between two samples: take two, 200 ms
         * apart */
        struct gs_mig_metrics mm[8];
        for (int pass = 0; pass < 2 && ni > 0; pass++) {
            for (int k = 0; k < ni; k++)
                if (b->ops->mig_metrics(b, i, mi[k].gi_id, &mm[k]))
                    memset(&mm[k], 0, sizeof(mm[k]));
            if (pass == 0)
                nanosleep(&(struct timespec){0, 200000000L}, NULL);
        }
        for (int k = 0; k < ni; k++) {
            int ci = cm ? gs_gpu_profile_index(in.model, mi[k].profile_id) : -1;
            char util[32] = "not measured", mem[64] = "not measured";
            if (mm[k].util_ok)
                snprintf(util, sizeof(util), "%u%%", mm[k].util_pct);
            if (mm[k].mem_ok)
                snprintf(mem, sizeof(mem), "%llu/%llu MiB",
                         (unsigned long long)(mm[k].mem_used >> 20),
                         (unsigned long long)(mm[k].mem_total >> 20));
            gs_buf_printf(&o, "  instance GI %u: %s at start %u (size %u) %s; util %s, memory %s\n",
                          mi[k].gi_id, ci >= 0 ? cm->profiles[ci].name : "?", mi[k].start,
                          mi[k].size, mi[k].uuid, util, mem);
        }
    }
    snprintf(out, size, "%s", o.data ? o.data : "");
    gs_buf_release(&o);
    return mismatches;
}

/* ---------- the running agent ---------- */

/* The components of one agent. */
struct agent {
    const struct gs_agent_opts *o;
    struct gs_sampler *sampler;
    struct gs_pods *pods;
    struct gs_reconciler *node; /* NULL without a cluster */
    struct gs_plugins *plugins;
    struct gs_exporter *exporter;
    int replicas;        /* of each whole GPU under the device-plugin config's sharing */
    const char *sharing; /* "none", "time-slicing" or "mps" */
    char dra_uuid[GS_DRA_MAX_CLAIMS][96];
};

/* Replicas of each whole GPU under the device-plugin config's sharing. */
static int gpu_replicas(const struct gs_dpconfig *dp, const char **sharing)
{
    int replicas = 1;
    *sharing = "none";
    if (dp && dp->sharing != GS_SHARING_NONE) {
        const struct gs_dp_sharing *sh =
            dp->sharing == GS_SHARING_MPS ? &dp->mps : &dp->timeslicing;
        for (int k = 0; k < sh->nresources && k < GS_DP_MAX_RESOURCES; k++) {
            const struct gs_dp_resource *r = &sh->resources[k];
            if (strncmp(r->name, "nvidia.com/gpu", sizeof(r->name)) == 0)
                replicas = r->replicas;
        }
        *sharing = dp->sharing == GS_SHARING_MPS ? "mps" : "time-slicing";
    }
    return replicas;
}

/* The devices in use, for the reconciler's MIG changes: what pods hold, then what DRA claims
 * hold (a claim, not a pod, holds them). */
static int in_use(void *user, char (*uuid)[96], char (*holder)[200], int cap)
{
    struct agent *a = user;
    int n = gs_pods_use(a->pods, uuid, holder, cap);
    int nd = a->plugins ? gs_plugins_in_use(a->plugins, a->dra_uuid, GS_DRA_MAX_CLAIMS) : 0;
    for (int k = 0; k < nd && n < cap; k++, n++) {
        snprintf(uuid[n], 96, "%s", a->dra_uuid[k]);
        snprintf(holder[n], 200, "a ResourceClaim of %s", GS_DRA_DRIVER);
    }
    return n;
}

/* After a MIG change: what the backend holds now, advertised by the kubelet plugins at once
 * (not a round later); the reconciler publishes the inventory next. */
static void relaid(void *user)
{
    struct agent *a = user;
    gs_sampler_relayout(a->sampler);
    if (a->plugins)
        gs_plugins_update(a->plugins);
}

static void agent_free(struct agent *a)
{
    if (!a)
        return;
    gs_exporter_free(a->exporter);
    gs_plugins_stop(a->plugins);
    gs_reconciler_free(a->node);
    gs_pods_free(a->pods);
    gs_sampler_free(a->sampler);
    free(a);
}

/* The sampler, the pods, the reconciler (with a cluster) and the exporter over b. */
static struct agent *agent_new(struct gs_gpu_backend *b, struct gs_kube_client *kc,
                               const struct gs_agent_opts *o)
{
    struct agent *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->o = o;
    a->replicas = gpu_replicas(o->dp, &a->sharing);
    struct gs_sampler_opts so = {.ecc_threshold = o->ecc_threshold,
                                 .temp_threshold = o->temp_threshold,
                                 .xid_hold_s = o->xid_hold_s,
                                 .nignore = o->nignore,
                                 .ignore_xids = o->ignore_xids,
                                 .proc_root = o->proc_root};
    struct gs_pods_opts po = {
        .node = o->node, .podres_socket = o->podres_socket, .pods_file = o->pods_file};
    const struct gs_dpconfig *dp = o->dp;
    struct gs_reconciler_opts ro = {.node = o->node,
                                    .auto_cordon = o->auto_cordon,
                                    .mig = o->mig,
                                    .mig_dry_run = o->mig_dry_run,
                                    .mig_force = o->mig_force,
                                    .replicas = a->replicas,
                                    .sharing = a->sharing,
                                    .fractions = o->fractions && o->dp_dir && a->replicas <= 1,
                                    .mig_strategy = dp && dp->mig_strategy != GS_MIG_STRATEGY_NONE
                                                        ? gs_mig_strategy_name(dp->mig_strategy)
                                                        : NULL,
                                    .in_use = in_use,
                                    .relaid = relaid,
                                    .user = a};
    struct gs_exporter_opts eo = {
        .node = o->node, .mon = &o->mon, .dcgm_names = o->dcgm_names, .replicas = a->replicas};
    bool ok = (a->sampler = gs_sampler_new(b, &so)) && (a->pods = gs_pods_new(&po, a->sampler, kc));
    if (ok && kc && o->node)
        ok = (a->node = gs_reconciler_new(&ro, b, a->sampler, kc)) != NULL;
    if (ok)
        ok = (a->exporter = gs_exporter_new(&eo, a->sampler, a->pods, a->node)) != NULL;
    if (!ok) {
        agent_free(a);
        return NULL;
    }
    return a;
}

int gs_agent_scrape(struct gs_gpu_backend *b, const struct gs_agent_opts *o, struct gs_buf *out)
{
    struct agent *a = agent_new(b, NULL, o);
    if (!a)
        return GS_ENOMEM;
    gs_sampler_round(a->sampler, 0);
    gs_sampler_tenants(a->sampler);
    gs_pods_refresh(a->pods);
    int rc = gs_exporter_render(a->exporter, out);
    agent_free(a);
    return rc;
}

/* The kubelet plugins (with the DRA driver on the shared backend and the MPS daemons). */
static int start_plugins(struct agent *a, struct gs_gpu_backend *b, struct gs_kube_client *kc,
                         struct gs_error *err)
{
    const struct gs_agent_opts *o = a->o;
    struct gs_plugins_opts pl = {.dp_dir = o->dp_dir,
                                 .dp = o->dp,
                                 .replicas = a->replicas,
                                 .dra = o->dra,
                                 .node = o->node,
                                 .dra_plugins_dir = o->dra_plugins_dir,
                                 .dra_registry_dir = o->dra_registry_dir,
                                 .cdi_dir = o->cdi_dir,
                                 .dra_dynamic_mig = o->dra_dynamic_mig,
                                 .fractions = o->fractions,
                                 .mps_control = o->mps_control,
                                 .mps_root = o->mps_root,
                                 .mps_timeout_s = o->mps_timeout_s};
    return gs_plugins_start(&pl, a->sampler, a->pods, b, kc, &a->plugins, err);
}

/* The HTTP server of /metrics, once every figure it shows has been read. */
static int start_http(struct agent *a, struct gs_httpd **httpd, struct gs_error *err)
{
    const struct gs_agent_opts *o = a->o;
    if (o->metrics_port <= 0)
        return 0;
    struct gs_httpd_opts ho = {.name = "agent", .bind = o->metrics_bind, .port = o->metrics_port};
    if (gs_httpd_start(&ho, gs_exporter_http, a->exporter, httpd, err))
        return gs_error_prefix(err, "metrics server (--metrics-port, --metrics-bind)");
    return 0;
}

/* When each of the loop's jobs is due next (wall clock). */
struct due {
    double scrape, check, mps;
};

/* The next time after now of a job every period seconds last due at *t. */
static void advance(double *t, double period, double now)
{
    while (*t <= now)
        *t += period;
}

/* One turn of the loop: what is due at now. check: health, pods, devices, the node; scrape:
 * the metrics; mps: the daemons. */
static void turn(struct agent *a, bool check, bool scrape, bool mps)
{
    if (check || scrape) {
        gs_sampler_measure(a->sampler, check);
        gs_sampler_tenants(a->sampler);
    }
    if (check)
        gs_pods_refresh(a->pods);
    if (check || mps) /* first: a plugin registers its devices healthy once their daemon runs */
        gs_plugins_mps_round(a->plugins);
    if (check)
        gs_plugins_update(a->plugins);
    if (check && a->node)
        gs_reconciler_round(a->node);
}

int gs_agent_run(struct gs_gpu_backend *b, struct gs_kube_client *kc, const struct gs_agent_opts *o,
                 volatile int *stop, struct gs_error *err)
{
    /* with the DRA driver, its gRPC thread and this loop share the backend */
    struct gs_gpu_backend *shared = o->dra ? gs_gpu_locked(b) : NULL;
    if (o->dra && !shared)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    struct gs_gpu_backend *use = shared ? shared : b;
    struct agent *a = agent_new(use, kc, o);
    if (!a) {
        gs_gpu_close(shared);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    struct gs_httpd *d = NULL;
    double check_s = o->interval_s > 0 ? o->interval_s : 60;
    double scrape_s = o->scrape_s > 0 ? o->scrape_s : check_s;
    double mps_s = o->mps_interval_s > 0 ? o->mps_interval_s : 5;
    /* every GPU read, and everything built on the readings, before /metrics serves */
    int rc = start_plugins(a, use, kc, err);
    if (rc == 0) {
        gs_sampler_xids(a->sampler, 0);
        turn(a, true, true, true);
        rc = start_http(a, &d, err);
    }
    if (rc) {
        agent_free(a);
        gs_gpu_close(shared);
        return rc;
    }
    int n = gs_sampler_count(a->sampler);
    GS_INFO("agent", "%d GPU%s (%s backend), node %s, health every %.1fs, metrics every %.1fs%s", n,
            n == 1 ? "" : "s", b->ops->name, o->node ? o->node : "(none)", check_s, scrape_s,
            kc ? "" : ", no cluster");
    double t0 = gs_clock_wall();
    struct due next = {t0 + scrape_s, t0 + check_s, t0 + mps_s};
    while (!gs_flag_get(stop)) {
        double now = gs_clock_wall(), at = next.scrape < next.check ? next.scrape : next.check;
        if (at > next.mps)
            at = next.mps;
        if (o->max_seconds > 0 && at > t0 + o->max_seconds)
            at = t0 + o->max_seconds;
        int wait_ms = at > now ? (int)((at - now) * 1000) : 0;
        /* a critical XID is judged at once, not at the next check */
        bool xid = gs_sampler_xids(a->sampler, wait_ms) > 0;
        now = gs_clock_wall();
        bool check = now >= next.check, scrape = now >= next.scrape, mps = now >= next.mps;
        if (xid && !check) {
            gs_sampler_measure(a->sampler, true);
            gs_plugins_update(a->plugins);
        }
        turn(a, check, scrape, mps);
        advance(&next.check, check_s, now);
        advance(&next.scrape, scrape_s, now);
        advance(&next.mps, mps_s, now);
        if (o->max_seconds > 0 && gs_clock_wall() - t0 >= o->max_seconds)
            break;
    }
    gs_httpd_stop(d);
    agent_free(a);
    gs_gpu_close(shared);
    return 0;
}
