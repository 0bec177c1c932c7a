/* agent.c - the node agent's loop: health, cordon, labels, MIG config and desired layouts,
 * inventory, device plugins, metrics (see agent.h). MIG changes are planned and applied by
 * migmgr.c; what pods hold comes from pod-resources (podresources.c) and the API; which pod a
 * GPU process runs in, from its cgroup (procpod.c). */
#include "agent.h"

#include "../base/clock.h"
#include "../base/flag.h"
#include "../base/buf.h"
#include "../base/error.h"
#include "../base/log.h"
#include "../formats/kubeobj.h"
#include "../formats/migdesired.h"
#include "../formats/promtext.h"
#include "../kube/httpd.h"
#include "deviceplugin.h"
#include "dra.h"
#include "gpulock.h"
#include "migmgr.h"
#include "podresources.h"
#include "procpod.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CORDON_ANNOTATION "gpusched.io/cordoned-by"
#define AGENT_ID          "gpusched-agent"
#define MAX_PODS          256

static const uint64_t default_ignored[] = {13, 31, 43, 45, 68, 109};

int gs_agent_devices(const char *ann, int *gpu, int *mig_start, int cap)
{
    struct gs_devices d;
    if (!ann || gs_devices_parse(ann, strlen(ann), &d))
        return 0;
    int n = 0;
    for (int k = 0; k < d.n && n < cap; k++) {
        if (d.item[k].gpu >= GS_AGENT_MAX_GPUS)
            break;
        gpu[n] = d.item[k].gpu;
        mig_start[n++] = d.item[k].start;
    }
    return n;
}

/* ---------- inspect ---------- */

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

struct pod_dev {
    char ns[64], name[128], container[64];
    char uid[GS_PROCPOD_UID_SIZE]; /* metadata.uid; "" when only pod-resources named it */
    int gpu, mig_start;
    bool pending; /* not started yet: its devices are still to be allocated */
};

struct health {
    bool healthy;
    char why[160];
    double last_xid_t;
    uint64_t last_xid;
    uint64_t xid_count;
};

/* What each GPU's tenants use: every MIG instance's readings and every process with the pod
 * UID its cgroup names ("" for none). */
struct inst_reading {
    uint32_t gi_id;
    struct gs_mig_metrics m;
};
struct tenants {
    int ninst[GS_AGENT_MAX_GPUS];
    struct inst_reading inst[GS_AGENT_MAX_GPUS][GS_AGENT_MAX_INST];
    int nproc[GS_AGENT_MAX_GPUS]; /* < 0: the backend cannot list them */
    struct gs_gpu_proc proc[GS_AGENT_MAX_GPUS][GS_AGENT_MAX_PROCS];
    char proc_uid[GS_AGENT_MAX_GPUS][GS_AGENT_MAX_PROCS][GS_PROCPOD_UID_SIZE];
};

struct agent {
    struct gs_gpu_backend *b;
    struct gs_kube_client *kc;
    const struct gs_agent_opts *o;
    pthread_mutex_t mu;
    int n;
    struct gs_gpu_info info[GS_AGENT_MAX_GPUS];
    struct gs_gpu_metrics m[GS_AGENT_MAX_GPUS];
    int ninst[GS_AGENT_MAX_GPUS];
    struct gs_mig_inst inst[GS_AGENT_MAX_GPUS][GS_AGENT_MAX_INST];
    struct health h[GS_AGENT_MAX_GPUS];
    int npods;
    struct pod_dev pods[MAX_PODS];
    struct tenants t;    /* under mu */
    struct tenants next; /* read_tenants' scratch (main thread only) */
    uint64_t scrapes;
    bool cordoned_by_us;
    int node_cordoned; /* under mu: -1 unknown (no cluster), else the agent's cordon holds */
    char mig_applied[GS_MP_NAME_MAX]; /* last config acted on */
    bool labels_done;
    char *inv_published; /* the inventory annotation last written, or NULL */
    /* dynamic MIG: the desired layouts of gpusched.io/mig-desired (main thread only) */
    bool desired_init;   /* what our last inventory said was read back */
    int64_t desired_gen; /* the last generation finished with (applied or refused) */
    char mig_state[GS_INV_MIG_STATE_MAX]; /* "", "pending" or "failed", as published */
    char mig_error[GS_INV_MIG_ERROR_MAX];
    char *desired_done;                  /* the annotation text last finished with, or NULL */
    uint32_t desired_mask;               /* GPUs the annotation lists: the mig.config leaves them */
    char desired_note[GS_ERROR_MSG_MAX]; /* the last waiting or failing note logged */
    struct gs_migmgr_use use[MAX_PODS];  /* devices pods hold (collect_use) */
    char use_pod[MAX_PODS][200];
    char use_uuid[MAX_PODS][96];
    int nplugins;
    char plugin_res[16][96];
    struct gs_dp_plugin *plugins[16];
    struct gs_dra *dra; /* the DRA driver, or NULL */
    char dra_uuid[GS_DRA_MAX_CLAIMS][96];
};

static bool ignored(const struct gs_agent_opts *o, uint64_t xid)
{
    for (size_t k = 0; k < sizeof(default_ignored) / sizeof(default_ignored[0]); k++)
        if (default_ignored[k] == xid)
            return true;
    for (int k = 0; k < o->nignore; k++)
        if (o->ignore_xids[k] == xid)
            return true;
    return false;
}

/* Event regarding this node (events.k8s.io/v1). */
static void node_event(struct agent *a, const char *type, const char *reason, const char *note)
{
    if (!a->kc || !a->o->node)
        return;
    char now[40], name[200];
    gs_kube_micro_time(now, sizeof(now));
    snprintf(name, sizeof(name), "%s.%llx", a->o->node,
             (unsigned long long)(gs_clock_wall() * 1e6));
    json_t *ev = json_pack(
        "{s:s,s:s,s:{s:s,s:s},s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s}}", "apiVersion",
        "events.k8s.io/v1", "kind", "Event", "metadata", "name", name, "namespace", "default",
        "eventTime", now, "type", type, "reason", reason, "action", reason, "note", note,
        "reportingController", "gpusched.io/agent", "reportingInstance", a->o->node, "regarding",
        "apiVersion", "v1", "kind", "Node", "name", a->o->node, "uid", a->o->node);
    struct gs_error err;
    gs_error_init(&err);
    if (ev && gs_kube_request(a->kc, "POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                              NULL, ev, NULL, NULL, &err))
        GS_WARN("agent", "event %s: %s", reason, err.msg);
    json_decref(ev);
}

static int patch_node(struct agent *a, json_t *body, struct gs_error *err)
{
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", a->o->node);
    int rc = gs_kube_request(a->kc, "PATCH", path, "application/merge-patch+json", body, NULL, NULL,
                             err);
    json_decref(body);
    return rc;
}

/* Cordon or uncordon as the GPUs' health asks; never uncordon a node someone else cordoned. */
static void reconcile_cordon(struct agent *a, const json_t *node)
{
    if (!a->kc || !a->o->auto_cordon)
        return;
    bool sick = false;
    char why[600] = "";
    size_t off = 0;
    for (int i = 0; i < a->n; i++)
        if (!a->h[i].healthy) {
            sick = true;
            if (off < sizeof(why))
                off += (size_t)snprintf(why + off, sizeof(why) - off, "%sGPU %d (%s): %s",
                                        off ? "; " : "", i, a->info[i].uuid, a->h[i].why);
        }
    const json_t *md = json_object_get(node, "metadata");
    const char *by =
        json_string_value(json_object_get(json_object_get(md, "annotations"), CORDON_ANNOTATION));
    bool unsched = json_is_true(json_object_get(json_object_get(node, "spec"), "unschedulable"));
    bool ours = by && strcmp(by, AGENT_ID) == 0;
    struct gs_error err;
    gs_error_init(&err);
    if (sick && !unsched) {
        json_t *p = json_pack("{s:{s:{s:s}},s:{s:b}}", "metadata", "annotations", CORDON_ANNOTATION,
                              AGENT_ID, "spec", "unschedulable", 1);
        if (patch_node(a, p, &err) == 0) {
            char note[800];
            snprintf(note, sizeof(note), "cordoned: %s", why);
            GS_WARN("agent", "node %s %s", a->o->node, note);
            node_event(a, "Warning", "GPUUnhealthy", note);
        } else {
            GS_WARN("agent", "cordon %s: %s", a->o->node, err.msg);
        }
    } else if (!sick && unsched && ours) {
        json_t *p = json_pack("{s:{s:{s:n}},s:{s:b}}", "metadata", "annotations", CORDON_ANNOTATION,
                              "spec", "unschedulable", 0);
        if (patch_node(a, p, &err) == 0) {
            GS_INFO("agent", "node %s uncordoned: every GPU is healthy again", a->o->node);
            node_event(a, "Normal", "GPUHealthy", "uncordoned: every GPU is healthy again");
        } else {
            GS_WARN("agent", "uncordon %s: %s", a->o->node, err.msg);
        }
    } else if (!sick && !unsched && ours) {
        /* someone uncordoned by hand: forget our mark */
        patch_node(a, json_pack("{s:{s:{s:n}}}", "metadata", "annotations", CORDON_ANNOTATION),
                   &err);
    }
    /* what the node says now, our doing or not (for the gpusched_agent_node_cordoned gauge) */
    bool held = (unsched && ours) || (sick && !unsched && !err.msg[0]);
    if (!sick && unsched && ours && !err.msg[0])
        held = false;
    pthread_mutex_lock(&a->mu);
    a->node_cordoned = held;
    pthread_mutex_unlock(&a->mu);
}

/* Replicas of each whole GPU under the device-plugin config's sharing ("none",
 * "time-slicing" or "mps"). */
static int gpu_replicas(const struct agent *a, const char **sharing)
{
    const struct gs_dpconfig *dp = a->o->dp;
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

/* The node inventory (formats/inventory.h) from what the backend sees: the one truth the
 * scheduler builds this node from. Malloc'd text, NULL when out of memory. Call with a->mu
 * held. */
static char *inventory_text(const struct agent *a)
{
    struct gs_inventory *inv = calloc(1, sizeof(*inv));
    if (!inv)
        return NULL;
    inv->version = GS_INVENTORY_VERSION;
    inv->generation = a->desired_gen;
    snprintf(inv->mig_state, sizeof(inv->mig_state), "%s", a->mig_state);
    snprintf(inv->mig_error, sizeof(inv->mig_error), "%s", a->mig_error);
    const char *sharing;
    int replicas = gpu_replicas(a, &sharing);
    for (int i = 0; i < a->n && inv->ngpus < GS_MAX_GPUS_NODE; i++) {
        const struct gs_gpu_info *gi = &a->info[i];
        struct gs_inv_gpu *g = &inv->gpus[inv->ngpus++];
        const struct gs_gpu_model *m = gs_catalog_get(gi->model);
        g->index = gi->index;
        snprintf(g->uuid, sizeof(g->uuid), "%s", gi->uuid);
        snprintf(g->model, sizeof(g->model), "%s", m ? m->name : gi->name);
        g->mem_mib = (uint32_t)gi->mem_mib;
        g->healthy = a->h[i].healthy;
        snprintf(g->health, sizeof(g->health), "%s", g->healthy ? "" : a->h[i].why);
        g->replicas = 1;
        if (gi->mig_enabled) {
            g->mode = GS_GPU_MIG;
            for (int q = 0; q < a->ninst[i] && g->ninst < GS_INV_MAX_INST; q++) {
                int p = m ? gs_gpu_profile_index(gi->model, a->inst[i][q].profile_id) : -1;
                if (p < 0)
                    continue; /* a profile gpusched does not know: not offered */
                snprintf(g->inst[g->ninst].profile, sizeof(g->inst[0].profile), "%s",
                         m->profiles[p].name);
                g->inst[g->ninst].start = (uint8_t)a->inst[i][q].start;
                g->ninst++;
            }
        } else if (replicas > 1) {
            g->mode = strcmp(sharing, "mps") == 0 ? GS_GPU_MPS : GS_GPU_TIMESLICE;
            g->replicas = (uint8_t)(replicas > 255 ? 255 : replicas);
        }
    }
    char *text = gs_inventory_write(inv);
    free(inv);
    return text;
}

/* Publish the inventory on the Node when it changed (MIG layout, health, sharing). */
static void publish_inventory(struct agent *a)
{
    pthread_mutex_lock(&a->mu);
    char *text = inventory_text(a);
    pthread_mutex_unlock(&a->mu);
    if (!text) {
        GS_WARN("agent", "inventory: out of memory or over %d bytes", GS_INVENTORY_MAX_BYTES);
        return;
    }
    if (a->inv_published && strcmp(a->inv_published, text) == 0) {
        free(text);
        return;
    }
    struct gs_error err;
    gs_error_init(&err);
    if (patch_node(a, gs_kube_annotation_patch(GS_INVENTORY_ANNOTATION, text), &err)) {
        GS_WARN("agent", "inventory: %s", err.msg);
        free(text);
        return;
    }
    GS_INFO("agent", "node %s: inventory %s", a->o->node, text);
    free(a->inv_published);
    a->inv_published = text;
}

/* GPU feature discovery's labels, from what the backend sees and the device-plugin config. */
static json_t *gfd_labels(struct agent *a)
{
    json_t *l = json_object();
    if (a->n == 0)
        return l;
    const struct gs_gpu_model *m = gs_catalog_get(a->info[0].model);
    const struct gs_dpconfig *dp = a->o->dp;
    const char *sharing;
    int replicas = gpu_replicas(a, &sharing);
    char v[140], product[100];
    /* as GPU feature discovery does: the driver's name, [^A-Za-z0-9-_. ] removed, spaces
     * to '-' */
    size_t o = 0;
    for (const char *c = a->info[0].name; *c && o + 1 < sizeof(product); c++)
        if (*c == ' ')
            product[o++] = '-';
        else if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
                 *c == '-' || *c == '_' || *c == '.')
            product[o++] = *c;
    product[o] = '\0';
    (void)m;
    if (replicas > 1) {
        snprintf(v, sizeof(v), "%s-SHARED", product);
        json_object_set_new(l, "nvidia.com/gpu.product", json_string(v));
    } else {
        json_object_set_new(l, "nvidia.com/gpu.product", json_string(product));
    }
    snprintf(v, sizeof(v), "%d", a->n);
    json_object_set_new(l, "nvidia.com/gpu.count", json_string(v));
    snprintf(v, sizeof(v), "%llu", (unsigned long long)a->info[0].mem_mib);
    json_object_set_new(l, "nvidia.com/gpu.memory", json_string(v));
    bool capable = false;
    for (int i = 0; i < a->n; i++)
        capable |= a->info[i].mig_capable;
    json_object_set_new(l, "nvidia.com/mig.capable", json_string(capable ? "true" : "false"));
    if (dp && dp->mig_strategy != GS_MIG_STRATEGY_NONE)
        json_object_set_new(l, "nvidia.com/mig.strategy",
                            json_string(gs_mig_strategy_name(dp->mig_strategy)));
    snprintf(v, sizeof(v), "%d", replicas);
    json_object_set_new(l, "nvidia.com/gpu.replicas", json_string(v));
    json_object_set_new(l, "nvidia.com/gpu.sharing-strategy", json_string(sharing));
    json_object_set_new(l, "nvidia.com/gpu.present", json_string("true"));
    return l;
}

static void set_state(struct agent *a, const char *state)
{
    struct gs_error err;
    gs_error_init(&err);
    if (patch_node(
            a,
            json_pack("{s:{s:{s:s}}}", "metadata", "labels", "nvidia.com/mig.config.state", state),
            &err))
        GS_WARN("agent", "mig.config.state=%s: %s", state, err.msg);
}

/* The devices pods hold (a->use[0..n)): a MIG instance by its UUID, a whole or shared GPU
 * by its GPU UUID, each with the pod's namespace/name; from a->pods, which the kubelet's
 * pod-resources and the pods' gpusched.io/devices annotations fill (refresh_pods). */
static int collect_use(struct agent *a)
{
    int n = 0;
    pthread_mutex_lock(&a->mu);
    for (int k = 0; k < a->npods && n < MAX_PODS; k++) {
        const struct pod_dev *p = &a->pods[k];
        if (p->gpu < 0 || p->gpu >= a->n)
            continue;
        const char *uuid = p->mig_start < 0 ? a->info[p->gpu].uuid : NULL;
        for (int q = 0; q < a->ninst[p->gpu] && !uuid; q++)
            if ((int)a->inst[p->gpu][q].start == p->mig_start)
                uuid = a->inst[p->gpu][q].uuid;
        if (!uuid)
            continue; /* an instance that is not there (yet) */
        snprintf(a->use_uuid[n], sizeof(a->use_uuid[n]), "%s", uuid);
        snprintf(a->use_pod[n], sizeof(a->use_pod[n]), "%s/%s", p->ns, p->name);
        a->use[n].uuid = a->use_uuid[n];
        a->use[n].pod = a->use_pod[n];
        n++;
    }
    pthread_mutex_unlock(&a->mu);
    /* the devices DRA claims hold (a claim, not a pod, holds them) */
    int nd = a->dra ? gs_dra_in_use(a->dra, a->dra_uuid, GS_DRA_MAX_CLAIMS) : 0;
    for (int k = 0; k < nd && n < MAX_PODS; k++, n++) {
        snprintf(a->use_uuid[n], sizeof(a->use_uuid[n]), "%s", a->dra_uuid[k]);
        snprintf(a->use_pod[n], sizeof(a->use_pod[n]), "a ResourceClaim of %s", GS_DRA_DRIVER);
        a->use[n].uuid = a->use_uuid[n];
        a->use[n].pod = a->use_pod[n];
    }
    return n;
}

static void reconcile_plugins(struct agent *a);
static void read_layout(struct agent *a);
static void sync_dra(struct agent *a);

/* After a MIG change: what the backend holds now, advertised by the device plugins and
 * published in the inventory at once (not a round later). */
static void relaid(struct agent *a)
{
    read_layout(a);
    reconcile_plugins(a);
    if (a->kc && a->o->node)
        publish_inventory(a);
    if (a->dra)
        sync_dra(a);
}

/* Apply the mig-parted config named by the node's nvidia.com/mig.config label when it
 * changes (and once at start), on the GPUs a desired layout does not list. */
static void reconcile_mig(struct agent *a, const json_t *node)
{
    if (!a->o->mig || !a->kc)
        return;
    const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const char *want = json_string_value(json_object_get(labels, "nvidia.com/mig.config"));
    if (!want || strcmp(want, a->mig_applied) == 0)
        return;
    snprintf(a->mig_applied, sizeof(a->mig_applied), "%s", want);
    const char *in_use[MAX_PODS];
    int nuse = collect_use(a);
    for (int k = 0; k < nuse; k++)
        in_use[k] = a->use[k].uuid;
    struct gs_migmgr_plan plan;
    struct gs_error err;
    gs_error_init(&err);
    char text[4096];
    int rc = gs_migmgr_plan_except(a->b, a->o->mig, want, in_use, nuse, a->o->mig_force,
                                   a->desired_mask, &plan, &err);
    if (rc) {
        GS_WARN("agent", "mig.config %s: %s", want, err.msg);
        set_state(a, "failed");
        node_event(a, "Warning", "MIGConfigFailed", err.msg);
        return;
    }
    gs_migmgr_plan_str(&plan, text, sizeof(text));
    if (a->o->mig_dry_run) {
        GS_INFO("agent", "dry run, nothing changed:\n%s", text);
        return;
    }
    if (plan.changes == 0) {
        set_state(a, "success");
        return;
    }
    set_state(a, "pending");
    GS_INFO("agent", "applying mig.config %s:\n%s", want, text);
    rc = gs_migmgr_apply(a->b, &plan, &err);
    relaid(a);
    if (rc) {
        GS_WARN("agent", "mig.config %s: %s", want, err.msg);
        set_state(a, "failed");
        node_event(a, "Warning", "MIGConfigFailed", err.msg);
        return;
    }
    set_state(a, "success");
    char note[600];
    snprintf(note, sizeof(note), "MIG config %s applied to %d GPU%s", want, plan.changes,
             plan.changes == 1 ? "" : "s");
    node_event(a, "Normal", "MIGConfigApplied", note);
}

/* ---------- dynamic MIG: the scheduler's desired layouts ---------- */

/* What became of the desired layouts, as the inventory says it ("" state: applied). */
static void desired_state(struct agent *a, const char *state, const char *why)
{
    snprintf(a->mig_state, sizeof(a->mig_state), "%s", state);
    snprintf(a->mig_error, sizeof(a->mig_error), "%s", state[0] ? why : "");
    if (state[0] && !a->mig_error[0])
        snprintf(a->mig_error, sizeof(a->mig_error), "unknown");
}

static void desired_finished(struct agent *a, const char *text)
{
    free(a->desired_done);
    a->desired_done = strdup(text);
}

/* The generation of an annotation the reader refused, when it has a usable one; else 0. */
static int64_t generation_of(const char *text, size_t len)
{
    json_t *o = json_loadb(text, len, 0, NULL);
    const json_t *g = json_object_get(o, "generation");
    int64_t gen = json_is_integer(g) && json_integer_value(g) > 0 ? json_integer_value(g) : 0;
    json_decref(o);
    return gen;
}

/* Once, at the first look at the Node: the generation our last inventory finished with (an
 * agent restarted does not apply or refuse it again). */
static void desired_adopt(struct agent *a, const json_t *annotations)
{
    a->desired_init = true;
    const json_t *t = json_object_get(annotations, GS_INVENTORY_ANNOTATION);
    struct gs_inventory *inv = calloc(1, sizeof(*inv));
    if (inv && json_is_string(t) &&
        gs_inventory_read(json_string_value(t), json_string_length(t), inv, NULL) == 0) {
        a->desired_gen = inv->generation;
        if (strcmp(inv->mig_state, "failed") == 0)
            desired_state(a, "failed", inv->mig_error);
        if (a->desired_gen > 0)
            GS_INFO("agent", "node %s: mig-desired generation %lld finished before (%s)",
                    a->o->node, (long long)a->desired_gen, a->mig_state[0] ? "failed" : "applied");
    }
    free(inv);
}

/* "GPU 0: 1g.10gb@0,3g.40gb@4; GPU 2: whole" for the GPUs of a plan, as the backend holds
 * them now. */
static void layouts_note(struct agent *a, const struct gs_migmgr_plan *plan, char *out, size_t size)
{
    size_t off = 0;
    out[0] = '\0';
    pthread_mutex_lock(&a->mu);
    for (int k = 0; k < plan->ngpus && off < size; k++) {
        int i = plan->gpu[k].index;
        off += (size_t)snprintf(out + off, size - off, "%sGPU %d: %s", k ? "; " : "", i,
                                a->info[i].mig_enabled ? "" : "whole");
        for (int q = 0; q < a->ninst[i] && off < size; q++) {
            int p = gs_gpu_profile_index(a->info[i].model, a->inst[i][q].profile_id);
            off +=
                (size_t)snprintf(out + off, size - off, "%s%s@%u", q ? "," : "",
                                 p >= 0 ? gs_catalog_get(a->info[i].model)->profiles[p].name : "?",
                                 a->inst[i][q].start);
        }
        if (a->info[i].mig_enabled && a->ninst[i] == 0 && off < size)
            off += (size_t)snprintf(out + off, size - off, "MIG, no instances");
    }
    pthread_mutex_unlock(&a->mu);
}

/* A desired layout refused for good: its generation is finished (gen 0: an annotation without
 * a readable generation; the one finished before stays), nothing changed. */
static void desired_refuse(struct agent *a, int64_t gen, const char *text, const char *why)
{
    if (gen > a->desired_gen)
        a->desired_gen = gen;
    desired_state(a, "failed", why);
    desired_finished(a, text);
    a->desired_note[0] = '\0';
    char note[GS_ERROR_MSG_MAX + 64];
    snprintf(note, sizeof(note), "mig-desired generation %lld refused, nothing changed: %s",
             (long long)gen, why);
    GS_WARN("agent", "node %s: %s", a->o->node, note);
    set_state(a, "failed");
    node_event(a, "Warning", "MIGLayoutRefused", note);
    publish_inventory(a);
}

/* Apply the node's gpusched.io/mig-desired layout when its generation is newer than the last
 * one finished with: the GPUs that can change now change (instances a pod holds are never
 * destroyed), the others wait and are tried again every round (pods come and go) until
 * they can; an invalid layout is refused whole. */
static void reconcile_desired(struct agent *a, const json_t *node)
{
    if (!a->kc || !a->o->node)
        return;
    const json_t *anns = json_object_get(json_object_get(node, "metadata"), "annotations");
    if (!a->desired_init)
        desired_adopt(a, anns);
    const json_t *ann = json_object_get(anns, GS_MIG_DESIRED_ANNOTATION);
    if (!ann) {
        a->desired_mask = 0;
        return;
    }
    const char *text = json_is_string(ann) ? json_string_value(ann) : "";
    size_t len = json_is_string(ann) ? json_string_length(ann) : 0;
    if (a->desired_done && strcmp(a->desired_done, text) == 0)
        return; /* finished with this very text */
    struct gs_error err;
    gs_error_init(&err);
    struct gs_mig_desired *d = calloc(1, sizeof(*d));
    if (!d)
        return;
    if (gs_mig_desired_read(text, len, d, &err)) {
        int64_t gen = generation_of(text, len);
        if (gen > 0 && gen <= a->desired_gen) { /* stale, even if it could be read */
            GS_WARN("agent",
                    "node %s: mig-desired generation %lld is not newer than %lld: "
                    "left as is (%s)",
                    a->o->node, (long long)gen, (long long)a->desired_gen, err.msg);
            desired_finished(a, text);
        } else {
            desired_refuse(a, gen, text, err.msg);
        }
        goto out;
    }
    a->desired_mask = 0;
    for (int k = 0; k < d->ngpus; k++)
        a->desired_mask |= 1u << d->gpus[k].index;
    if (d->generation <= a->desired_gen) {
        GS_INFO("agent", "node %s: mig-desired generation %lld is not newer than %lld: left as is",
                a->o->node, (long long)d->generation, (long long)a->desired_gen);
        desired_finished(a, text);
        goto out;
    }
    int nuse = collect_use(a);
    static struct gs_migmgr_plan plan;
    char ptext[4096], note[GS_ERROR_MSG_MAX];
    int rc = gs_migmgr_plan_desired(a->b, d, a->use, nuse, &plan, &err);
    if (rc == GS_EINVAL) {
        desired_refuse(a, d->generation, text, err.msg);
        goto out;
    }
    if (rc) { /* the backend could not be read: try again next round */
        snprintf(note, sizeof(note), "%s", err.msg);
        desired_state(a, "pending", note);
        if (strcmp(note, a->desired_note) != 0)
            GS_WARN("agent", "mig-desired generation %lld: %s", (long long)d->generation, note);
        snprintf(a->desired_note, sizeof(a->desired_note), "%s", note);
        goto out;
    }
    gs_migmgr_plan_str(&plan, ptext, sizeof(ptext));
    if (a->o->mig_dry_run) {
        desired_state(a, "pending", "dry run (--mig-dry-run): nothing applied");
        if (strcmp(ptext, a->desired_note) != 0)
            GS_INFO("agent", "dry run, nothing changed:\n%s", ptext);
        snprintf(a->desired_note, sizeof(a->desired_note), "%s", ptext);
        goto out;
    }
    if (plan.changes > 0) {
        set_state(a, "pending");
        GS_INFO("agent", "applying %s", ptext);
        rc = gs_migmgr_apply(a->b, &plan, &err);
        if (rc) {
            /* the backend refused a step (a process the pods do not show): the GPU is
             * partly changed; the next round plans again from what it holds */
            desired_state(a, "pending", err.msg);
            relaid(a);
            if (strcmp(err.msg, a->desired_note) != 0) {
                GS_WARN("agent", "mig-desired generation %lld: %s", (long long)d->generation,
                        err.msg);
                node_event(a, "Warning", "MIGLayoutPending", err.msg);
            }
            snprintf(a->desired_note, sizeof(a->desired_note), "%s", err.msg);
            goto out;
        }
    }
    if (plan.waiting > 0) {
        size_t off = 0;
        note[0] = '\0';
        for (int k = 0; k < plan.ngpus && off < sizeof(note); k++)
            if (plan.gpu[k].wait)
                off += (size_t)snprintf(note + off, sizeof(note) - off, "%s%s", off ? "; " : "",
                                        plan.gpu[k].why);
        desired_state(a, "pending", note);
        if (plan.changes > 0)
            relaid(a);
        else
            publish_inventory(a);
        if (strcmp(note, a->desired_note) != 0) {
            GS_INFO("agent", "node %s: mig-desired generation %lld waits: %s", a->o->node,
                    (long long)d->generation, note);
            set_state(a, "pending");
            char ev[GS_ERROR_MSG_MAX + 64];
            snprintf(ev, sizeof(ev), "mig-desired generation %lld waits: %s",
                     (long long)d->generation, note);
            node_event(a, "Normal", "MIGLayoutPending", ev);
        }
        snprintf(a->desired_note, sizeof(a->desired_note), "%s", note);
        goto out;
    }
    a->desired_gen = d->generation;
    desired_state(a, "", "");
    desired_finished(a, text);
    a->desired_note[0] = '\0';
    relaid(a);
    set_state(a, "success");
    char layouts[700], ev[800];
    layouts_note(a, &plan, layouts, sizeof(layouts));
    snprintf(ev, sizeof(ev), "mig-desired generation %lld applied (%d GPU%s changed): %s",
             (long long)d->generation, plan.changes, plan.changes == 1 ? "" : "s",
             plan.ngpus ? layouts : "no GPU listed");
    GS_INFO("agent", "node %s: %s", a->o->node, ev);
    node_event(a, "Normal", "MIGLayoutApplied", ev);
out:
    free(d);
}

/* A pod object's namespace, name and gpusched.io/devices annotation (each NULL when absent). */
static const char *pod_devices(const json_t *pod, const char **ns, const char **name)
{
    const json_t *md = json_object_get(pod, "metadata");
    *ns = json_string_value(json_object_get(md, "namespace"));
    *name = json_string_value(json_object_get(md, "name"));
    return json_string_value(
        json_object_get(json_object_get(md, "annotations"), GS_DEVICES_ANNOTATION));
}

/* Pods on this node and the devices they hold, from their gpusched.io/devices annotation;
 * pods already in pods[0..n) (from the kubelet's pod-resources) are left as they are.
 * Returns the new count. */
static int read_pods_json(const json_t *items, struct pod_dev *pods, int n)
{
    int n0 = n;
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it)
    {
        const char *ns, *name, *ann = pod_devices(it, &ns, &name);
        const char *uid =
            json_string_value(json_object_get(json_object_get(it, "metadata"), "uid"));
        /* pods pod-resources named: their UID, which it does not say */
        for (int j = 0; j < n0 && uid; j++)
            if (!strcmp(pods[j].ns, ns ? ns : "") && !strcmp(pods[j].name, name ? name : ""))
                snprintf(pods[j].uid, sizeof(pods[j].uid), "%s", uid);
        if (!ann)
            ann = json_string_value(json_object_get(it, "devices")); /* pods file */
        const char *phase =
            json_string_value(json_object_get(json_object_get(it, "status"), "phase"));
        if (!ann || (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))))
            continue;
        int g[16], st[16];
        int k = gs_agent_devices(ann, g, st, 16);
        const json_t *c0 =
            json_array_get(json_object_get(json_object_get(it, "spec"), "containers"), 0);
        const char *cn = json_string_value(json_object_get(c0, "name"));
        bool pending = !phase || strcmp(phase, "Pending") == 0, known = false;
        for (int j = 0; j < n0 && !known; j++)
            known = !strcmp(pods[j].ns, ns ? ns : "") && !strcmp(pods[j].name, name ? name : "");
        for (int d = 0; d < k && n < MAX_PODS && !known; d++) {
            struct pod_dev *p = &pods[n++];
            snprintf(p->ns, sizeof(p->ns), "%s", ns ? ns : "");
            snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
            snprintf(p->container, sizeof(p->container), "%s", cn ? cn : "");
            snprintf(p->uid, sizeof(p->uid), "%s", uid ? uid : "");
            p->gpu = g[d];
            p->mig_start = st[d];
            p->pending = pending;
        }
    }
    return n;
}

/* Pods and devices from the kubelet's pod-resources: advertised IDs back to GPU indexes and
 * MIG instances. Returns the count, or -1 when the kubelet did not answer. */
static int read_podresources(struct agent *a, struct pod_dev *pods)
{
    static struct gs_podres pr[MAX_PODS];
    char why[512];
    int n = gs_podres_list(a->o->podres_socket, pr, MAX_PODS, why, sizeof(why));
    if (n < 0) {
        GS_WARN("agent", "pod-resources: %s", why);
        return -1;
    }
    int out = 0;
    pthread_mutex_lock(&a->mu);
    for (int k = 0; k < n && out < MAX_PODS; k++) {
        int gpu = -1, start = -1;
        for (int i = 0; i < a->n && gpu < 0; i++) {
            size_t ul = strlen(a->info[i].uuid);
            if (!strcmp(pr[k].device, a->info[i].uuid) ||
                (!strncmp(pr[k].device, a->info[i].uuid, ul) &&
                 !strncmp(pr[k].device + ul, "::", 2)))
                gpu = i;
            for (int q = 0; q < a->ninst[i] && gpu < 0; q++)
                if (!strcmp(pr[k].device, a->inst[i][q].uuid)) {
                    gpu = i;
                    start = (int)a->inst[i][q].start;
                }
        }
        if (gpu < 0)
            continue; /* another resource's device */
        struct pod_dev *p = &pods[out++];
        memset(p, 0, sizeof(*p));
        snprintf(p->ns, sizeof(p->ns), "%s", pr[k].ns);
        snprintf(p->name, sizeof(p->name), "%s", pr[k].pod);
        snprintf(p->container, sizeof(p->container), "%s", pr[k].container);
        p->gpu = gpu;
        p->mig_start = start;
    }
    pthread_mutex_unlock(&a->mu);
    return out;
}

/* The devices annotation that says what the kubelet really gave a pod: the truth entries
 * (from pod-resources) in the annotation's own kind ("mig=2:3g.40gb@4", "gpu=0,1",
 * "replica=1", "milli=0:500" keeps its share). Returns false when it cannot be written. */
static bool truth_annotation(struct agent *a, const char *ann, const struct pod_dev *t, int nt,
                             char *out, size_t size)
{
    struct gs_devices was, d;
    if (gs_devices_parse(ann, strlen(ann), &was) || nt > GS_DEVICES_MAX)
        return false;
    memset(&d, 0, sizeof(d));
    d.kind = was.kind;
    for (int k = 0; k < nt; k++) {
        struct gs_devices_item *it = &d.item[d.n++];
        it->gpu = t[k].gpu;
        it->start = -1;
        if (d.kind == GS_DEVICES_MIG) {
            const char *prof = NULL;
            for (int q = 0; q < a->ninst[t[k].gpu] && !prof; q++)
                if ((int)a->inst[t[k].gpu][q].start == t[k].mig_start) {
                    int pi = gs_gpu_profile_index(a->info[t[k].gpu].model,
                                                  a->inst[t[k].gpu][q].profile_id);
                    const struct gs_gpu_model *m = gs_catalog_get(a->info[t[k].gpu].model);
                    prof = m && pi >= 0 ? m->profiles[pi].name : NULL;
                }
            if (!prof || t[k].mig_start < 0)
                return false;
            snprintf(it->profile, sizeof(it->profile), "%s", prof);
            it->start = t[k].mig_start;
        } else if (d.kind == GS_DEVICES_MILLI) {
            it->milli = was.item[0].milli; /* keeps its share */
        }
    }
    return gs_devices_format(&d, out, size) > 0;
}

/* The kubelet, not the scheduler, picks the device among equal ones: the device plugin API
 * names no pod in GetPreferredAllocation, so two pods waiting on one node for the same profile
 * may get each other's slot. Once pod-resources shows what a pod holds, its
 * gpusched.io/devices annotation is made to say so (gpusched's cache, the explain output and
 * the in-use protection of re-carving read it). pods[0..nt) are pod-resources' entries. */
static void correct_annotations(struct agent *a, const json_t *items, const struct pod_dev *pods,
                                int nt)
{
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it)
    {
        const char *ns, *name, *ann = pod_devices(it, &ns, &name);
        if (!ann || !ns || !name)
            continue;
        struct pod_dev t[16];
        int n = 0;
        for (int j = 0; j < nt && n < 16; j++)
            if (!strcmp(pods[j].ns, ns) && !strcmp(pods[j].name, name))
                t[n++] = pods[j];
        int g[16], st[16];
        int k = gs_agent_devices(ann, g, st, 16);
        if (n == 0 || k != n)
            continue; /* not allocated yet, or another shape (left alone) */
        bool same = true;
        for (int j = 0; j < n && same; j++) {
            bool found = false;
            for (int d = 0; d < k && !found; d++)
                found = g[d] == t[j].gpu && st[d] == t[j].mig_start;
            same = found;
        }
        char want[256];
        if (same || !truth_annotation(a, ann, t, n, want, sizeof(want)))
            continue;
        char path[400];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
        json_t *body = gs_kube_annotation_patch(GS_DEVICES_ANNOTATION, want);
        struct gs_error err;
        gs_error_init(&err);
        if (gs_kube_request(a->kc, "PATCH", path, "application/merge-patch+json", body, NULL, NULL,
                            &err))
            GS_WARN("agent", "pod %s/%s: devices annotation: %s", ns, name, err.msg);
        else
            GS_INFO("agent",
                    "pod %s/%s: devices annotation %s corrected to %s, as the kubelet "
                    "allocated",
                    ns, name, ann, want);
        json_decref(body);
    }
}

static void refresh_pods(struct agent *a)
{
    static struct pod_dev pods[MAX_PODS];
    int n = 0;
    bool any = false;
    if (a->o->podres_socket) {
        n = read_podresources(a, pods);
        any = n >= 0;
        if (n < 0)
            n = 0;
    }
    if (a->kc && a->o->node) {
        char path[400];
        snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s", a->o->node);
        json_t *list = NULL;
        struct gs_error err;
        gs_error_init(&err);
        if (gs_kube_request(a->kc, "GET", path, NULL, NULL, &list, NULL, &err) == 0) {
            int nt = n;
            n = read_pods_json(json_object_get(list, "items"), pods, n);
            any = true;
            if (a->o->podres_socket && nt > 0)
                correct_annotations(a, json_object_get(list, "items"), pods, nt);
        } else {
            GS_WARN("agent", "pods on %s: %s", a->o->node, err.msg);
        }
        json_decref(list);
    } else if (a->o->pods_file) {
        json_t *list = json_load_file(a->o->pods_file, 0, NULL);
        if (list) {
            n = read_pods_json(json_is_array(list) ? list : json_object_get(list, "items"), pods,
                               n);
            any = true;
        }
        json_decref(list);
    }
    if (!any)
        return; /* nothing answered: keep what we knew */
    pthread_mutex_lock(&a->mu);
    memcpy(a->pods, pods, sizeof(pods[0]) * (size_t)n);
    a->npods = n;
    pthread_mutex_unlock(&a->mu);
}

/* GPU i's MIG mode and instances as the backend has them now. Call with a->mu held. */
static void layout_of(struct agent *a, int i)
{
    a->b->ops->info(a->b, i, &a->info[i]);
    a->ninst[i] =
        a->info[i].mig_enabled ? a->b->ops->mig_list(a->b, i, a->inst[i], GS_AGENT_MAX_INST) : 0;
    if (a->ninst[i] < 0)
        a->ninst[i] = 0;
}

static void read_layout(struct agent *a)
{
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->n; i++)
        layout_of(a, i);
    pthread_mutex_unlock(&a->mu);
}

/* One round: metrics, XIDs, health. XIDs are waited for up to wait_ms. */
static void round_gpus(struct agent *a, int wait_ms)
{
    int gpu[32];
    uint64_t xid[32];
    int nx = a->b->ops->xids(a->b, wait_ms, gpu, xid, 32);
    double now = gs_clock_wall();
    pthread_mutex_lock(&a->mu);
    for (int k = 0; k < nx; k++) {
        if (gpu[k] < 0 || gpu[k] >= a->n)
            continue;
        if (ignored(a->o, xid[k])) {
            GS_INFO("agent", "GPU %d: XID %llu (application error, ignored)", gpu[k],
                    (unsigned long long)xid[k]);
            continue;
        }
        a->h[gpu[k]].last_xid_t = now;
        a->h[gpu[k]].last_xid = xid[k];
        a->h[gpu[k]].xid_count++;
    }
    for (int i = 0; i < a->n; i++) {
        a->b->ops->metrics(a->b, i, &a->m[i]);
        layout_of(a, i);
        struct health *h = &a->h[i];
        bool was = h->healthy;
        h->healthy = true;
        h->why[0] = '\0';
        if (h->last_xid_t > 0 && now - h->last_xid_t < a->o->xid_hold_s) {
            h->healthy = false;
            snprintf(h->why, sizeof(h->why), "XID %llu", (unsigned long long)h->last_xid);
        } else if (a->m[i].ecc_uncorrected >= a->o->ecc_threshold && a->o->ecc_threshold > 0) {
            h->healthy = false;
            snprintf(h->why, sizeof(h->why), "%llu uncorrected ECC errors (threshold %llu)",
                     (unsigned long long)a->m[i].ecc_uncorrected,
                     (unsigned long long)a->o->ecc_threshold);
        } else if (a->m[i].temp_c >= a->o->temp_threshold && a->o->temp_threshold > 0) {
            h->healthy = false;
            snprintf(h->why, sizeof(h->why), "temperature %u C (threshold %u C)", a->m[i].temp_c,
                     a->o->temp_threshold);
        }
        if (was != h->healthy)
            GS_WARN("agent", "GPU %d (%s) is %s%s%s", i, a->info[i].uuid,
                    h->healthy ? "healthy again" : "Unhealthy", h->healthy ? "" : ": ", h->why);
    }
    pthread_mutex_unlock(&a->mu);
}

/* Each GPU's processes with the pods they run in (the cgroup of each PID under the proc root)
 * and each MIG instance's readings, published under a->mu at the end. The backend and /proc
 * are read without the lock: only this thread calls the backend or changes a->inst. */
static void read_tenants(struct agent *a)
{
    struct tenants *t = &a->next;
    for (int i = 0; i < a->n; i++) {
        t->ninst[i] = 0;
        for (int q = 0; q < a->ninst[i]; q++) {
            struct inst_reading *r = &t->inst[i][t->ninst[i]];
            r->gi_id = a->inst[i][q].gi_id;
            if (a->b->ops->mig_metrics(a->b, i, r->gi_id, &r->m) == 0)
                t->ninst[i]++;
        }
        t->nproc[i] = a->b->ops->processes(a->b, i, t->proc[i], GS_AGENT_MAX_PROCS);
        for (int k = 0; k < t->nproc[i]; k++) {
            struct gs_procpod pp;
            int rc = gs_procpod_read(a->o->proc_root, t->proc[i][k].pid, &pp);
            snprintf(t->proc_uid[i][k], sizeof(t->proc_uid[i][k]), "%s", rc ? "" : pp.pod_uid);
        }
    }
    pthread_mutex_lock(&a->mu);
    memcpy(&a->t, t, sizeof(*t));
    pthread_mutex_unlock(&a->mu);
}

/* ---------- device plugins ---------- */

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
        if (*nrs >= 16)
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

static int build_resources(struct agent *a, struct res *rs)
{
    int nrs = 0;
    const struct gs_dpconfig *dp = a->o->dp;
    enum gs_mig_strategy strat = dp ? dp->mig_strategy : GS_MIG_STRATEGY_NONE;
    int replicas = 1;
    if (dp && dp->sharing != GS_SHARING_NONE) {
        const struct gs_dp_sharing *sh =
            dp->sharing == GS_SHARING_MPS ? &dp->mps : &dp->timeslicing;
        for (int k = 0; k < sh->nresources && k < GS_DP_MAX_RESOURCES; k++)
            if (strncmp(sh->resources[k].name, "nvidia.com/gpu", sizeof(sh->resources[k].name)) ==
                0)
                replicas = sh->resources[k].replicas;
    }
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->n; i++) {
        bool ok = a->h[i].healthy;
        if (!a->info[i].mig_enabled) {
            if (replicas <= 1) {
                add_dev(rs, &nrs, "nvidia.com/gpu", a->info[i].uuid, a->info[i].uuid, ok, i);
            } else {
                for (int k = 0; k < replicas; k++) {
                    char id[96];
                    snprintf(id, sizeof(id), "%.80s::%d", a->info[i].uuid, k);
                    add_dev(rs, &nrs, "nvidia.com/gpu", id, a->info[i].uuid, ok, i);
                }
            }
            continue;
        }
        if (strat == GS_MIG_STRATEGY_NONE)
            continue; /* MIG GPUs are not advertised without a MIG strategy */
        const struct gs_gpu_model *m = gs_catalog_get(a->info[i].model);
        for (int q = 0; q < a->ninst[i]; q++) {
            const struct gs_mig_inst *mi = &a->inst[i][q];
            int pi = gs_gpu_profile_index(a->info[i].model, mi->profile_id);
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
    pthread_mutex_unlock(&a->mu);
    return nrs;
}

/* The devices the scheduler recorded for a pod still waiting on this node. */
static int pick(void *user, const char *resource, int size, char ids[][96], int cap)
{
    struct agent *a = user;
    int n = 0;
    pthread_mutex_lock(&a->mu);
    for (int k = 0; k < a->npods && n < cap; k++) {
        const struct pod_dev *p = &a->pods[k];
        if (!p->pending || p->gpu < 0 || p->gpu >= a->n)
            continue;
        bool mig = p->mig_start >= 0;
        if (mig != (strncmp(resource, "nvidia.com/mig-", 15) == 0) &&
            strcmp(resource, "nvidia.com/gpu"))
            continue;
        if (mig) {
            for (int q = 0; q < a->ninst[p->gpu]; q++)
                if ((int)a->inst[p->gpu][q].start == p->mig_start)
                    snprintf(ids[n++], 96, "%s", a->inst[p->gpu][q].uuid);
        } else {
            snprintf(ids[n++], 96, "%s", a->info[p->gpu].uuid);
            /* replicas of that GPU: any of its IDs */
            for (int r = 0; r < 16 && n < cap; r++)
                snprintf(ids[n++], 96, "%.80s::%d", a->info[p->gpu].uuid, r);
        }
        if (n >= size)
            break;
    }
    pthread_mutex_unlock(&a->mu);
    return n;
}

static void reconcile_plugins(struct agent *a)
{
    if (!a->o->dp_dir)
        return;
    static struct res rs[16];
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
        if (a->nplugins >= 16)
            continue;
        char sock[128], why[512];
        snprintf(sock, sizeof(sock), "gpusched-%s.sock", rs[r].name);
        for (char *c = sock; *c; c++)
            if (*c == '/')
                *c = '-';
        struct gs_dp_mps mps;
        memset(&mps, 0, sizeof(mps));
        const struct gs_dpconfig *dp = a->o->dp;
        if (dp && dp->sharing == GS_SHARING_MPS && strcmp(rs[r].name, "nvidia.com/gpu") == 0) {
            mps.on = true;
            snprintf(mps.pipe_dir, sizeof(mps.pipe_dir), "%s/pipe",
                     dp->mps_root[0] ? dp->mps_root : "/run/nvidia/mps");
            mps.replicas = rs[r].n / (a->n > 0 ? a->n : 1);
            mps.mem_mib = a->n > 0 ? a->info[0].mem_mib : 0;
            for (int k = 0; k < dp->mps.nresources && k < GS_DP_MAX_RESOURCES; k++)
                if (dp->mps.resources[k].replicas > 0)
                    mps.replicas = dp->mps.resources[k].replicas;
        }
        struct gs_dp_plugin *p = gs_dp_start(a->o->dp_dir, rs[r].name, sock, rs[r].d, rs[r].n, &mps,
                                             pick, a, why, sizeof(why));
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

/* ---------- /metrics ---------- */

enum field { F_UTIL, F_MEMUTIL, F_MEMUSED, F_MEMTOTAL, F_POWER, F_TEMP, F_SMCLK, F_MEMCLK, NF };

static const struct {
    const char *name, *dcgm, *help;
} fields[NF] = {
    {"gpu_utilization", "DCGM_FI_DEV_GPU_UTIL",
     "GPU utilization (SM busy), percent. Measured: a GPU's and a pod's holding it whole "
     "(NVML), a MIG pod's instance's (GPM, Hopper and newer; A100 and A30 measure none: no "
     "series). Attributed: pods sharing a GPU (time-slicing, MPS) read the sum of their "
     "processes' SM samples, each process matched by PID to its pod's cgroup (0: no process)."},
    {"gpu_memory_utilization", "DCGM_FI_DEV_MEM_COPY_UTIL",
     "Memory controller busy, percent (the GPU's, for its pods too)."},
    {"gpu_memory_used_bytes", "DCGM_FI_DEV_FB_USED",
     "Framebuffer memory used. Measured: a GPU's and a pod's holding it whole, a MIG pod's "
     "instance's. Attributed: pods sharing a GPU read the sum of their processes' (by PID)."},
    {"gpu_memory_total_bytes", "DCGM_FI_DEV_FB_TOTAL",
     "Framebuffer memory in total (a MIG pod: its instance's)."},
    {"gpu_power_usage_watts", "DCGM_FI_DEV_POWER_USAGE", "Power draw, watts."},
    {"gpu_temperature_celsius", "DCGM_FI_DEV_GPU_TEMP", "GPU temperature, Celsius."},
    {"gpu_sm_clock_mhz", "DCGM_FI_DEV_SM_CLOCK", "SM clock, MHz."},
    {"gpu_mem_clock_mhz", "DCGM_FI_DEV_MEM_CLOCK", "Memory clock, MHz."},
};

/* ---------- the article's gpu-monitor-config ---------- */

int gs_agent_monitor_config(const char *path, struct gs_agent_opts *o, struct gs_error *err)
{
    const char *known[2 * NF + 1];
    for (int f = 0; f < NF; f++) {
        known[2 * f] = fields[f].name;
        known[2 * f + 1] = fields[f].dcgm;
    }
    known[2 * NF] = NULL;
    static const char *const reserved[] = {
        "gpu",           "uuid",     "UUID",        "model",
        "modelName",     "hostname", "mig_profile", "gpu_instance_id",
        "GPU_I_PROFILE", "GPU_I_ID", "pod",         "namespace",
        "container",     NULL};
    struct gs_monitor_config mon;
    int rc = gs_monitor_config_load(path, known, reserved, &mon, err);
    if (rc)
        return rc;
    o->mon = mon;
    if (mon.scrape_interval_s > 0)
        o->interval_s = mon.scrape_interval_s;
    return 0;
}

static double value(const struct gs_gpu_metrics *m, int f, bool dcgm)
{
    double mib = dcgm ? 1.0 / (1 << 20) : 1; /* DCGM reports framebuffer in MiB */
    switch (f) {
    case F_UTIL:
        return m->util_pct;
    case F_MEMUTIL:
        return m->mem_util_pct;
    case F_MEMUSED:
        return (double)m->mem_used * mib;
    case F_MEMTOTAL:
        return (double)m->mem_total * mib;
    case F_POWER:
        return m->power_w;
    case F_TEMP:
        return m->temp_c;
    case F_SMCLK:
        return m->sm_clock_mhz;
    default:
        return m->mem_clock_mhz;
    }
}

static bool enabled(const struct gs_agent_opts *o, int f)
{
    if (o->mon.nmetrics == 0)
        return true;
    for (int k = 0; k < o->mon.nmetrics; k++)
        if (strcmp(o->mon.metrics[k], fields[f].name) == 0 ||
            strcmp(o->mon.metrics[k], fields[f].dcgm) == 0)
            return true;
    return false;
}

/* A series' labels: the GPU, its model and node, the configured extra labels, the MIG
 * instance and the pod holding it (formats/promtext escapes the values). Returns the count. */
#define MAX_SERIES_LABELS (12 + GS_MON_MAX_LABELS)
static int labels(struct agent *a, struct gs_prom_label *l, char (*num)[16], int i,
                  const struct gs_mig_inst *mi, const struct pod_dev *p)
{
    const struct gs_gpu_model *cm = gs_catalog_get(a->info[i].model);
    bool dcgm = a->o->dcgm_names;
    int n = 0;
    snprintf(num[0], sizeof(num[0]), "%d", i);
    l[n++] = (struct gs_prom_label){"gpu", num[0]};
    l[n++] = (struct gs_prom_label){dcgm ? "UUID" : "uuid", a->info[i].uuid};
    l[n++] = (struct gs_prom_label){dcgm ? "modelName" : "model", cm ? cm->name : a->info[i].name};
    l[n++] = (struct gs_prom_label){"hostname", a->o->node ? a->o->node : ""};
    for (int k = 0; k < a->o->mon.nlabels && k < GS_MON_MAX_LABELS; k++)
        l[n++] = (struct gs_prom_label){a->o->mon.label_name[k], a->o->mon.label_value[k]};
    if (mi) {
        int pi = gs_gpu_profile_index(a->info[i].model, mi->profile_id);
        snprintf(num[1], sizeof(num[1]), "%u", mi->gi_id);
        l[n++] = (struct gs_prom_label){dcgm ? "GPU_I_PROFILE" : "mig_profile",
                                        pi >= 0 ? cm->profiles[pi].name : ""};
        l[n++] = (struct gs_prom_label){dcgm ? "GPU_I_ID" : "gpu_instance_id", num[1]};
    }
    l[n++] = (struct gs_prom_label){"pod", p ? p->name : ""};
    l[n++] = (struct gs_prom_label){"namespace", p ? p->ns : ""};
    l[n++] = (struct gs_prom_label){"container", p ? p->container : ""};
    return n;
}

/* Whether the pods on GPU i share it (time-slicing or MPS replicas, fractions, or more than
 * one pod on it whole): then each reads its processes' use. Call with a->mu held. */
static bool gpu_shared(const struct agent *a, int i)
{
    const char *sharing;
    if (a->info[i].mig_enabled)
        return false;
    if (gpu_replicas(a, &sharing) > 1)
        return true;
    const struct pod_dev *first = NULL;
    for (int k = 0; k < a->npods; k++) {
        const struct pod_dev *p = &a->pods[k];
        if (p->gpu != i || p->mig_start >= 0)
            continue;
        if (first && (strcmp(first->name, p->name) || strcmp(first->ns, p->ns)))
            return true;
        first = p;
    }
    return false;
}

/* Field f of pod p on GPU i (on MIG instance mi, when it holds one), into *v: its own
 * utilization and memory (see fields[].help), the GPU's other readings. Returns false when
 * nothing of its own is measured: the series is then left out, never written as 0. Call
 * with a->mu held. */
static bool pod_value(const struct agent *a, int i, const struct pod_dev *p,
                      const struct gs_mig_inst *mi, bool shared, int f, double *v)
{
    bool dcgm = a->o->dcgm_names;
    double mib = dcgm ? 1.0 / (1 << 20) : 1;
    *v = value(&a->m[i], f, dcgm);
    if (f != F_UTIL && f != F_MEMUSED && f != F_MEMTOTAL)
        return true;
    if (p->mig_start >= 0) {
        if (!mi)
            return f == F_MEMTOTAL; /* its instance is not there (yet) */
        const struct gs_mig_metrics *m = NULL;
        for (int q = 0; q < a->t.ninst[i] && !m; q++)
            if (a->t.inst[i][q].gi_id == mi->gi_id)
                m = &a->t.inst[i][q].m;
        if (f == F_MEMTOTAL) {
            int pi = gs_gpu_profile_index(a->info[i].model, mi->profile_id);
            if (m && m->mem_ok)
                *v = (double)m->mem_total * mib;
            else if (pi >= 0)
                *v = (double)gs_catalog_get(a->info[i].model)->profiles[pi].mem_mib *
                     (dcgm ? 1 : 1 << 20);
            return true;
        }
        if (!m)
            return false;
        *v = f == F_UTIL ? m->util_pct : (double)m->mem_used * mib;
        return f == F_UTIL ? m->util_ok : m->mem_ok;
    }
    if (!shared || f == F_MEMTOTAL)
        return true; /* the GPU is the pod's alone */
    if (a->t.nproc[i] < 0 || !p->uid[0])
        return false; /* no process known, or no UID to match them to */
    double sum = 0;
    for (int k = 0; k < a->t.nproc[i]; k++) {
        const struct gs_gpu_proc *pr = &a->t.proc[i][k];
        if (strcmp(a->t.proc_uid[i][k], p->uid) != 0)
            continue;
        if (f == F_UTIL ? !pr->util_ok : !pr->mem_ok)
            return false;
        sum += f == F_UTIL ? pr->util_pct : (double)pr->mem_used * mib;
    }
    *v = f == F_UTIL && sum > 100 ? 100 : sum;
    return true;
}

/* /metrics, through the one Prometheus text writer (formats/promtext). Returns 0 or the
 * writer's error (the page is then no answer). */
static int render(struct agent *a, struct gs_buf *b)
{
    bool dcgm = a->o->dcgm_names;
    struct gs_promtext w;
    gs_promtext_init(&w, b);
    struct gs_prom_label l[MAX_SERIES_LABELS];
    char num[2][16];
    pthread_mutex_lock(&a->mu);
    for (int f = 0; f < NF; f++) {
        if (!enabled(a->o, f))
            continue;
        gs_promtext_family(&w, dcgm ? fields[f].dcgm : fields[f].name, GS_PROM_GAUGE,
                           fields[f].help);
        for (int i = 0; i < a->n; i++) {
            double v = value(&a->m[i], f, dcgm);
            bool shared = gpu_shared(a, i);
            /* one series per pod on the GPU (whole, shared or a MIG instance); the GPU
             * itself when nobody holds it */
            int shown = 0;
            for (int k = 0; k < a->npods; k++) {
                const struct pod_dev *p = &a->pods[k];
                if (p->gpu != i)
                    continue;
                const struct gs_mig_inst *mi = NULL;
                for (int q = 0; q < a->ninst[i] && p->mig_start >= 0; q++)
                    if ((int)a->inst[i][q].start == p->mig_start)
                        mi = &a->inst[i][q];
                bool dup = false; /* a pod holding a GPU twice (replicas) is one series */
                for (int j = 0; j < k && !dup; j++)
                    dup = a->pods[j].gpu == i && a->pods[j].mig_start == p->mig_start &&
                          !strcmp(a->pods[j].name, p->name) && !strcmp(a->pods[j].ns, p->ns);
                if (dup)
                    continue;
                shown++;
                double pv;
                if (pod_value(a, i, p, mi, shared, f, &pv))
                    gs_promtext_sample(&w, l, labels(a, l, num, i, mi, p), pv);
            }
            if (!shown)
                gs_promtext_sample(&w, l, labels(a, l, num, i, NULL, NULL), v);
        }
    }
    /* the agent's own health series, per GPU */
    static const struct {
        const char *name;
        enum gs_prom_type type;
        const char *help;
    } own[3] = {
        {"gpu_healthy", GS_PROM_GAUGE,
         "1 when the GPU passes the health checks (XID, ECC, temperature)."},
        {"gpu_xid_errors_total", GS_PROM_COUNTER, "Critical XIDs seen (ignored ones excluded)."},
        {"gpu_ecc_uncorrected_errors", GS_PROM_GAUGE, "Volatile uncorrected ECC errors."},
    };
    for (int k = 0; k < 3; k++) {
        gs_promtext_family(&w, own[k].name, own[k].type, own[k].help);
        for (int i = 0; i < a->n; i++) {
            uint64_t v = k == 0   ? (uint64_t)a->h[i].healthy
                         : k == 1 ? (uint64_t)a->h[i].xid_count
                                  : (uint64_t)a->m[i].ecc_uncorrected;
            gs_promtext_sample_u64(&w, l, labels(a, l, num, i, NULL, NULL), v);
        }
    }
    if (a->node_cordoned >= 0) {
        gs_promtext_family(&w, "gpusched_agent_node_cordoned", GS_PROM_GAUGE,
                           "1 while the agent holds its node cordoned for unhealthy GPUs (an "
                           "operator's cordon is not counted).");
        struct gs_prom_label hl = {"hostname", a->o->node ? a->o->node : ""};
        gs_promtext_sample_u64(&w, &hl, 1, (uint64_t)a->node_cordoned);
    }
    a->scrapes++;
    pthread_mutex_unlock(&a->mu);
    return gs_promtext_end(&w);
}

/* /healthz, /metrics and /status (served by kube/httpd.c, which bounds the clients). */
static int http(void *cls, const struct gs_httpd_request *req, struct gs_httpd_reply *rep)
{
    struct agent *a = cls;
    if (strcmp(req->method, "GET") != 0)
        return gs_httpd_reply(rep, 405, "text/plain", "method not allowed\n");
    if (strcmp(req->url, "/healthz") == 0)
        return gs_httpd_reply(rep, 200, "text/plain", "ok\n");
    if (strcmp(req->url, "/metrics") == 0) {
        if (render(a, &rep->body)) {
            gs_buf_reset(&rep->body);
            return gs_httpd_reply(rep, 500, "text/plain", "cannot write the metrics page\n");
        }
        rep->type = GS_PROMTEXT_CONTENT_TYPE;
        return 0;
    }
    if (strcmp(req->url, "/status") == 0) {
        json_t *o = json_array();
        if (!o)
            return GS_ENOMEM;
        pthread_mutex_lock(&a->mu);
        for (int i = 0; i < a->n; i++) {
            json_t *mig = json_array();
            const struct gs_gpu_model *cm = gs_catalog_get(a->info[i].model);
            for (int q = 0; mig && q < a->ninst[i]; q++) {
                const struct gs_mig_inst *mi = &a->inst[i][q];
                int p = gs_gpu_profile_index(a->info[i].model, mi->profile_id);
                json_array_append_new(mig, json_pack("{s:s,s:i,s:i,s:s}", "profile",
                                                     p >= 0 ? cm->profiles[p].name : "", "start",
                                                     (int)mi->start, "gi", (int)mi->gi_id, "uuid",
                                                     mi->uuid));
            }
            json_array_append_new(o, json_pack("{s:i,s:s,s:b,s:s,s:i,s:b,s:o*}", "gpu", i, "uuid",
                                               a->info[i].uuid, "healthy", a->h[i].healthy,
                                               "reason", a->h[i].why, "instances", a->ninst[i],
                                               "mig_enabled", a->info[i].mig_enabled, "mig", mig));
        }
        pthread_mutex_unlock(&a->mu);
        int rc = gs_httpd_reply_json(rep, 200, o, JSON_INDENT(1));
        json_decref(o);
        return rc;
    }
    return gs_httpd_reply(rep, 404, "text/plain", "not found\n");
}

static struct agent *agent_new(struct gs_gpu_backend *b, struct gs_kube_client *kc,
                               const struct gs_agent_opts *o)
{
    struct agent *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->b = b;
    a->kc = kc;
    a->o = o;
    a->node_cordoned = kc && o->node ? 0 : -1;
    pthread_mutex_init(&a->mu, NULL);
    a->n = b->ops->count(b);
    if (a->n > GS_AGENT_MAX_GPUS)
        a->n = GS_AGENT_MAX_GPUS;
    for (int i = 0; i < a->n; i++) {
        b->ops->info(b, i, &a->info[i]);
        a->h[i].healthy = true;
        a->t.nproc[i] = -1;
    }
    return a;
}

static void agent_free(struct agent *a)
{
    pthread_mutex_destroy(&a->mu);
    free(a->inv_published);
    free(a->desired_done);
    free(a);
}

int gs_agent_scrape(struct gs_gpu_backend *b, const struct gs_agent_opts *o, struct gs_buf *out)
{
    struct agent *a = agent_new(b, NULL, o);
    if (!a)
        return GS_ENOMEM;
    round_gpus(a, 0);
    read_tenants(a);
    refresh_pods(a);
    int rc = render(a, out);
    agent_free(a);
    return rc;
}

/* The DRA driver: its slices of the GPUs as they are now, with their health. */
static void sync_dra(struct agent *a)
{
    bool healthy[GS_AGENT_MAX_GPUS];
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->n; i++)
        healthy[i] = a->h[i].healthy;
    pthread_mutex_unlock(&a->mu);
    struct gs_error err;
    gs_error_init(&err);
    if (gs_dra_sync(a->dra, healthy, a->n, &err))
        GS_WARN("agent", "DRA: %s", err.msg);
}

/* Start the DRA driver on the shared backend. */
static int start_dra(struct agent *a, struct gs_error *err)
{
    struct gs_dra_opts d = {.node = a->o->node,
                            .plugins_dir = a->o->dra_plugins_dir,
                            .registry_dir = a->o->dra_registry_dir,
                            .cdi_dir = a->o->cdi_dir,
                            .dynamic_mig = a->o->dra_dynamic_mig};
    int rc = gs_dra_new(&d, a->b, a->kc, &a->dra, err);
    if (!rc)
        rc = gs_dra_serve(a->dra, err);
    if (rc) {
        gs_dra_free(a->dra);
        a->dra = NULL;
        return gs_error_prefix(err, "DRA driver (--dra)");
    }
    return 0;
}

int gs_agent_run(struct gs_gpu_backend *b, struct gs_kube_client *kc, const struct gs_agent_opts *o,
                 volatile int *stop, struct gs_error *err)
{
    /* with the DRA driver, its gRPC thread and this loop share the backend */
    struct gs_gpu_backend *shared = o->dra ? gs_gpu_locked(b) : NULL;
    if (o->dra && !shared)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    struct agent *a = agent_new(shared ? shared : b, kc, o);
    if (!a) {
        gs_gpu_close(shared);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    if (o->dra && start_dra(a, err)) {
        agent_free(a);
        gs_gpu_close(shared);
        return err->code;
    }
    struct gs_httpd *d = NULL;
    if (o->metrics_port > 0) {
        struct gs_httpd_opts ho = {
            .name = "agent", .bind = o->metrics_bind, .port = o->metrics_port};
        int rc = gs_httpd_start(&ho, http, a, &d, err);
        if (rc) {
            gs_dra_free(a->dra);
            agent_free(a);
            gs_gpu_close(shared);
            return gs_error_prefix(err, "metrics server (--metrics-port, --metrics-bind)");
        }
    }
    GS_INFO("agent", "%d GPU%s (%s backend), node %s, every %.1fs%s", a->n, a->n == 1 ? "" : "s",
            b->ops->name, o->node ? o->node : "(none)", o->interval_s, kc ? "" : ", no cluster");
    double t0 = gs_clock_wall();
    while (!gs_flag_get(stop)) {
        round_gpus(a, (int)(o->interval_s * 1000));
        read_tenants(a);
        refresh_pods(a);
        reconcile_plugins(a);
        if (a->dra)
            sync_dra(a);
        if (kc && o->node) {
            char path[400];
            snprintf(path, sizeof(path), "/api/v1/nodes/%s", o->node);
            json_t *node = NULL;
            struct gs_error e2;
            gs_error_init(&e2);
            if (gs_kube_request(kc, "GET", path, NULL, NULL, &node, NULL, &e2) == 0) {
                if (!a->labels_done) {
                    json_t *p = json_pack("{s:{s:o}}", "metadata", "labels", gfd_labels(a));
                    a->labels_done = patch_node(a, p, &e2) == 0;
                    if (!a->labels_done)
                        GS_WARN("agent", "labels: %s", e2.msg);
                }
                reconcile_cordon(a, node);
                reconcile_desired(a, node);
                reconcile_mig(a, node);
                publish_inventory(a);
            } else {
                GS_WARN("agent", "node %s: %s", o->node, e2.msg);
            }
            json_decref(node);
        }
        if (o->max_seconds > 0 && gs_clock_wall() - t0 >= o->max_seconds)
            break;
    }
    gs_httpd_stop(d);
    for (int k = 0; k < a->nplugins; k++)
        gs_dp_stop(a->plugins[k]);
    gs_dra_free(a->dra);
    agent_free(a);
    gs_gpu_close(shared);
    return 0;
}
