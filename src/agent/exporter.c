/* exporter.c - the node agent's exporter (see exporter.h): /metrics through the one
 * Prometheus text writer (formats/promtext), /healthz and /status. */
#include "exporter.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../formats/promtext.h"
#include "pods.h"
#include "reconciler.h"
#include "sampler.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_exporter {
    struct gs_exporter_opts o;
    struct gs_sampler *s;
    struct gs_pods *pods;
    struct gs_reconciler *r;
    pthread_mutex_t mu;
    uint64_t scrapes; /* under mu */
};

/* What one scrape shows: copies, so that the page is written without a lock. */
struct scrape {
    const struct gs_exporter_opts *o;
    struct gs_gpus g;
    int npods;
    struct gs_pod_dev pods[GS_AGENT_MAX_PODS];
    int cordoned;        /* -1: no cluster */
    int64_t corrections; /* -1: no pods */
};

struct gs_exporter *gs_exporter_new(const struct gs_exporter_opts *o, struct gs_sampler *s,
                                    struct gs_pods *pods, struct gs_reconciler *r)
{
    struct gs_exporter *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->o = *o;
    e->s = s;
    e->pods = pods;
    e->r = r;
    pthread_mutex_init(&e->mu, NULL);
    return e;
}

void gs_exporter_free(struct gs_exporter *e)
{
    if (!e)
        return;
    pthread_mutex_destroy(&e->mu);
    free(e);
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

int gs_exporter_monitor_config(const char *path, struct gs_monitor_config *out,
                               struct gs_error *err)
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
    *out = mon;
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

static bool enabled(const struct gs_exporter_opts *o, int f)
{
    if (o->mon->nmetrics == 0)
        return true;
    for (int k = 0; k < o->mon->nmetrics; k++)
        if (strcmp(o->mon->metrics[k], fields[f].name) == 0 ||
            strcmp(o->mon->metrics[k], fields[f].dcgm) == 0)
            return true;
    return false;
}

/* A series' labels: the GPU, its model and node, the configured extra labels, the MIG
 * instance and the pod holding it (formats/promtext escapes the values). Returns the count. */
#define MAX_SERIES_LABELS (12 + GS_MON_MAX_LABELS)
static int labels(const struct scrape *a, struct gs_prom_label *l, char (*num)[16], int i,
                  const struct gs_mig_inst *mi, const struct gs_pod_dev *p)
{
    const struct gs_gpu_model *cm = gs_catalog_get(a->g.info[i].model);
    bool dcgm = a->o->dcgm_names;
    int n = 0;
    snprintf(num[0], sizeof(num[0]), "%d", i);
    l[n++] = (struct gs_prom_label){"gpu", num[0]};
    l[n++] = (struct gs_prom_label){dcgm ? "UUID" : "uuid", a->g.info[i].uuid};
    l[n++] =
        (struct gs_prom_label){dcgm ? "modelName" : "model", cm ? cm->name : a->g.info[i].name};
    l[n++] = (struct gs_prom_label){"hostname", a->o->node ? a->o->node : ""};
    for (int k = 0; k < a->o->mon->nlabels && k < GS_MON_MAX_LABELS; k++)
        l[n++] = (struct gs_prom_label){a->o->mon->label_name[k], a->o->mon->label_value[k]};
    if (mi) {
        int pi = gs_gpu_profile_index(a->g.info[i].model, mi->profile_id);
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
 * one pod on it whole): then each reads its processes' use. */
static bool gpu_shared(const struct scrape *a, int i)
{
    if (a->g.info[i].mig_enabled)
        return false;
    if (a->o->replicas > 1)
        return true;
    const struct gs_pod_dev *first = NULL;
    for (int k = 0; k < a->npods; k++) {
        const struct gs_pod_dev *p = &a->pods[k];
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
 * nothing of its own is measured: the series is then left out, never written as 0. */
static bool pod_value(const struct scrape *a, int i, const struct gs_pod_dev *p,
                      const struct gs_mig_inst *mi, bool shared, int f, double *v)
{
    bool dcgm = a->o->dcgm_names;
    double mib = dcgm ? 1.0 / (1 << 20) : 1;
    *v = value(&a->g.m[i], f, dcgm);
    if (f != F_UTIL && f != F_MEMUSED && f != F_MEMTOTAL)
        return true;
    if (p->mig_start >= 0) {
        if (!mi)
            return f == F_MEMTOTAL; /* its instance is not there (yet) */
        const struct gs_mig_metrics *m = NULL;
        for (int q = 0; q < a->g.t.ninst[i] && !m; q++)
            if (a->g.t.inst[i][q].gi_id == mi->gi_id)
                m = &a->g.t.inst[i][q].m;
        if (f == F_MEMTOTAL) {
            int pi = gs_gpu_profile_index(a->g.info[i].model, mi->profile_id);
            if (m && m->mem_ok)
                *v = (double)m->mem_total * mib;
            else if (pi >= 0)
                *v = (double)gs_catalog_get(a->g.info[i].model)->profiles[pi].mem_mib *
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
    if (a->g.t.nproc[i] < 0 || !p->uid[0])
        return false; /* no process known, or no UID to match them to */
    double sum = 0;
    for (int k = 0; k < a->g.t.nproc[i]; k++) {
        const struct gs_gpu_proc *pr = &a->g.t.proc[i][k];
        if (strcmp(a->g.t.proc_uid[i][k], p->uid) != 0)
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
static int render(const struct scrape *a, struct gs_buf *b)
{
    bool dcgm = a->o->dcgm_names;
    struct gs_promtext w;
    gs_promtext_init(&w, b);
    struct gs_prom_label l[MAX_SERIES_LABELS];
    char num[2][16];
    for (int f = 0; f < NF; f++) {
        if (!enabled(a->o, f))
            continue;
        gs_promtext_family(&w, dcgm ? fields[f].dcgm : fields[f].name, GS_PROM_GAUGE,
                           fields[f].help);
        for (int i = 0; i < a->g.n; i++) {
            if (!a->g.measured[i])
                continue; /* no figure before it is measured */
            double v = value(&a->g.m[i], f, dcgm);
            bool shared = gpu_shared(a, i);
            /* one series per pod on the GPU (whole, shared or a MIG instance); the GPU
             * itself when nobody holds it */
            int shown = 0;
            for (int k = 0; k < a->npods; k++) {
                const struct gs_pod_dev *p = &a->pods[k];
                if (p->gpu != i)
                    continue;
                const struct gs_mig_inst *mi = NULL;
                for (int q = 0; q < a->g.ninst[i] && p->mig_start >= 0; q++)
                    if ((int)a->g.inst[i][q].start == p->mig_start)
                        mi = &a->g.inst[i][q];
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
        for (int i = 0; i < a->g.n; i++) {
            if (!a->g.measured[i])
                continue;
            uint64_t v = k == 0   ? (uint64_t)a->g.h[i].healthy
                         : k == 1 ? (uint64_t)a->g.h[i].xid_count
                                  : (uint64_t)a->g.m[i].ecc_uncorrected;
            gs_promtext_sample_u64(&w, l, labels(a, l, num, i, NULL, NULL), v);
        }
    }
    if (a->cordoned >= 0) {
        gs_promtext_family(&w, "gpusched_agent_node_cordoned", GS_PROM_GAUGE,
                           "1 while the agent holds its node cordoned for unhealthy GPUs (an "
                           "operator's cordon is not counted).");
        struct gs_prom_label hl = {"hostname", a->o->node ? a->o->node : ""};
        gs_promtext_sample_u64(&w, &hl, 1, (uint64_t)a->cordoned);
    }
    if (a->corrections >= 0) {
        gs_promtext_family(&w, "gpusched_agent_device_corrections_total", GS_PROM_COUNTER,
                           "gpusched.io/devices annotations the agent rewrote because the kubelet "
                           "gave the pod other devices than the scheduler recorded (0 when every "
                           "choice of the scheduler was honoured).");
        struct gs_prom_label hl = {"hostname", a->o->node ? a->o->node : ""};
        gs_promtext_sample_u64(&w, &hl, 1, (uint64_t)a->corrections);
    }
    return gs_promtext_end(&w);
}

int gs_exporter_render(struct gs_exporter *e, struct gs_buf *out)
{
    struct scrape *a = malloc(sizeof(*a));
    if (!a)
        return GS_ENOMEM;
    a->o = &e->o;
    gs_sampler_read(e->s, &a->g);
    a->npods = e->pods ? gs_pods_read(e->pods, a->pods, GS_AGENT_MAX_PODS) : 0;
    a->cordoned = e->r ? gs_reconciler_cordoned(e->r) : -1;
    a->corrections = e->pods ? (int64_t)gs_pods_corrections(e->pods) : -1;
    int rc = render(a, out);
    free(a);
    pthread_mutex_lock(&e->mu);
    e->scrapes++;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* /healthz, /metrics and /status (served by kube/httpd.c, which bounds the clients). */
int gs_exporter_http(void *cls, const struct gs_httpd_request *req, struct gs_httpd_reply *rep)
{
    struct gs_exporter *e = cls;
    if (strcmp(req->method, "GET") != 0)
        return gs_httpd_reply(rep, 405, "text/plain", "method not allowed\n");
    if (strcmp(req->url, "/healthz") == 0)
        return gs_httpd_reply(rep, 200, "text/plain", "ok\n");
    if (strcmp(req->url, "/metrics") == 0) {
        if (gs_exporter_render(e, &rep->body)) {
            gs_buf_reset(&rep->body);
            return gs_httpd_reply(rep, 500, "text/plain", "cannot write the metrics page\n");
        }
        rep->type = GS_PROMTEXT_CONTENT_TYPE;
        return 0;
    }
    if (strcmp(req->url, "/status") == 0) {
        json_t *o = json_array();
        struct gs_gpus *g = malloc(sizeof(*g));
        if (!o || !g) {
            json_decref(o);
            free(g);
            return GS_ENOMEM;
        }
        gs_sampler_read(e->s, g);
        for (int i = 0; i < g->n; i++) {
            json_t *mig = json_array();
            const struct gs_gpu_model *cm = gs_catalog_get(g->info[i].model);
            for (int q = 0; mig && q < g->ninst[i]; q++) {
                const struct gs_mig_inst *mi = &g->inst[i][q];
                int p = gs_gpu_profile_index(g->info[i].model, mi->profile_id);
                json_array_append_new(mig, json_pack("{s:s,s:i,s:i,s:s}", "profile",
                                                     p >= 0 ? cm->profiles[p].name : "", "start",
                                                     (int)mi->start, "gi", (int)mi->gi_id, "uuid",
                                                     mi->uuid));
            }
            bool ok = g->measured[i] && g->h[i].healthy;
            json_array_append_new(o, json_pack("{s:i,s:s,s:b,s:s,s:i,s:b,s:o*}", "gpu", i, "uuid",
                                               g->info[i].uuid, "healthy", ok, "reason",
                                               g->measured[i] ? g->h[i].why : "not measured",
                                               "instances", g->ninst[i], "mig_enabled",
                                               g->info[i].mig_enabled, "mig", mig));
        }
        free(g);
        int rc = gs_httpd_reply_json(rep, 200, o, JSON_INDENT(1));
        json_decref(o);
        return rc;
    }
    return gs_httpd_reply(rep, 404, "text/plain", "not found\n");
}
