/* reconciler.c - the node agent's node reconciler (see reconciler.h): cordon, labels, the
 * mig-parted config, the scheduler's desired layouts and the inventory, on the Node through
 * the API. MIG changes are planned and applied by migmgr.c. */
#include "reconciler.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/log.h"
#include "../formats/inventory.h"
#include "../formats/kubeobj.h"
#include "../formats/migdesired.h"
#include "../kube/client.h"
#include "migmgr.h"
#include "pods.h"
#include "sampler.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CORDON_ANNOTATION "gpusched.io/cordoned-by"
#define AGENT_ID          "gpusched-agent"

struct gs_reconciler {
    struct gs_reconciler_opts o;
    struct gs_gpu_backend *b;
    struct gs_sampler *s;
    struct gs_kube_client *kc;
    struct gs_gpus *g; /* the sampler's view, read where it is used */
    pthread_mutex_t mu;
    int cordoned;                     /* under mu: the agent's cordon holds */
    char mig_applied[GS_MP_NAME_MAX]; /* last config acted on */
    bool labels_done;
    char *inv_published; /* the inventory annotation last written, or NULL */
    /* dynamic MIG: the desired layouts of gpusched.io/mig-desired */
    bool desired_init;   /* what our last inventory said was read back */
    int64_t desired_gen; /* the last generation finished with (applied or refused) */
    char mig_state[GS_INV_MIG_STATE_MAX]; /* "", "pending" or "failed", as published */
    char mig_error[GS_INV_MIG_ERROR_MAX];
    char *desired_done;                  /* the annotation text last finished with, or NULL */
    uint32_t desired_mask;               /* GPUs the annotation lists: the mig.config leaves them */
    char desired_note[GS_ERROR_MSG_MAX]; /* the last waiting or failing note logged */
    struct gs_migmgr_use use[GS_AGENT_MAX_PODS]; /* devices in use (collect_use) */
    char use_pod[GS_AGENT_MAX_PODS][200];
    char use_uuid[GS_AGENT_MAX_PODS][96];
};

/* The GPUs as the sampler has them now. */
static const struct gs_gpus *view(struct gs_reconciler *r)
{
    gs_sampler_read(r->s, r->g);
    return r->g;
}

/* Event regarding this node (events.k8s.io/v1). */
static void node_event(struct gs_reconciler *r, const char *type, const char *reason,
                       const char *note)
{
    if (!r->kc || !r->o.node)
        return;
    char now[40], name[200];
    gs_kube_micro_time(now, sizeof(now));
    snprintf(name, sizeof(name), "%s.%llx", r->o.node, (unsigned long long)(gs_clock_wall() * 1e6));
    json_t *ev = json_pack("{s:s,s:s,s:{s:s,s:s},s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s}}",
                           "apiVersion", "events.k8s.io/v1", "kind", "Event", "metadata", "name",
                           name, "namespace", "default", "eventTime", now, "type", type, "reason",
                           reason, "action", reason, "note", note, "reportingController",
                           "gpusched.io/agent", "reportingInstance", r->o.node, "regarding",
                           "apiVersion", "v1", "kind", "Node", "name", r->o.node, "uid", r->o.node);
    struct gs_error err;
    gs_error_init(&err);
    if (ev && gs_kube_request(r->kc, "POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                              NULL, ev, NULL, NULL, &err))
        GS_WARN("agent", "event %s: %s", reason, err.msg);
    json_decref(ev);
}

static int patch_node(struct gs_reconciler *r, json_t *body, struct gs_error *err)
{
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", r->o.node);
    int rc = gs_kube_request(r->kc, "PATCH", path, "application/merge-patch+json", body, NULL, NULL,
                             err);
    json_decref(body);
    return rc;
}

/* Cordon or uncordon as the GPUs' health asks; never uncordon a node someone else cordoned. */
static void reconcile_cordon(struct gs_reconciler *r, const json_t *node)
{
    if (!r->kc || !r->o.auto_cordon)
        return;
    const struct gs_gpus *g = view(r);
    bool sick = false;
    char why[600] = "";
    size_t off = 0;
    for (int i = 0; i < g->n; i++)
        if (!g->h[i].healthy) {
            sick = true;
            if (off < sizeof(why))
                off += (size_t)snprintf(why + off, sizeof(why) - off, "%sGPU %d (%s): %s",
                                        off ? "; " : "", i, g->info[i].uuid, g->h[i].why);
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
        if (patch_node(r, p, &err) == 0) {
            char note[800];
            snprintf(note, sizeof(note), "cordoned: %s", why);
            GS_WARN("agent", "node %s %s", r->o.node, note);
            node_event(r, "Warning", "GPUUnhealthy", note);
        } else {
            GS_WARN("agent", "cordon %s: %s", r->o.node, err.msg);
        }
    } else if (!sick && unsched && ours) {
        json_t *p = json_pack("{s:{s:{s:n}},s:{s:b}}", "metadata", "annotations", CORDON_ANNOTATION,
                              "spec", "unschedulable", 0);
        if (patch_node(r, p, &err) == 0) {
            GS_INFO("agent", "node %s uncordoned: every GPU is healthy again", r->o.node);
            node_event(r, "Normal", "GPUHealthy", "uncordoned: every GPU is healthy again");
        } else {
            GS_WARN("agent", "uncordon %s: %s", r->o.node, err.msg);
        }
    } else if (!sick && !unsched && ours) {
        /* someone uncordoned by hand: forget our mark */
        patch_node(r, json_pack("{s:{s:{s:n}}}", "metadata", "annotations", CORDON_ANNOTATION),
                   &err);
    }
    /* what the node says now, our doing or not (for the gpusched_agent_node_cordoned gauge) */
    bool held = (unsched && ours) || (sick && !unsched && !err.msg[0]);
    if (!sick && unsched && ours && !err.msg[0])
        held = false;
    pthread_mutex_lock(&r->mu);
    r->cordoned = held;
    pthread_mutex_unlock(&r->mu);
}

/* The node inventory (formats/inventory.h) from what the backend sees: the one truth the
 * scheduler builds this node from (r->g, read just before). Malloc'd text, NULL when out of
 * memory. */
static char *inventory_text(const struct gs_reconciler *r)
{
    struct gs_inventory *inv = calloc(1, sizeof(*inv));
    if (!inv)
        return NULL;
    inv->version = GS_INVENTORY_VERSION;
    inv->generation = r->desired_gen;
    snprintf(inv->mig_state, sizeof(inv->mig_state), "%s", r->mig_state);
    snprintf(inv->mig_error, sizeof(inv->mig_error), "%s", r->mig_error);
    const char *sharing = r->o.sharing;
    int replicas = r->o.replicas;
    const struct gs_gpus *s = r->g;
    for (int i = 0; i < s->n && inv->ngpus < GS_MAX_GPUS_NODE; i++) {
        const struct gs_gpu_info *gi = &s->info[i];
        struct gs_inv_gpu *g = &inv->gpus[inv->ngpus++];
        const struct gs_gpu_model *m = gs_catalog_get(gi->model);
        g->index = gi->index;
        snprintf(g->uuid, sizeof(g->uuid), "%s", gi->uuid);
        snprintf(g->model, sizeof(g->model), "%s", m ? m->name : gi->name);
        g->mem_mib = (uint32_t)gi->mem_mib;
        g->healthy = s->h[i].healthy;
        snprintf(g->health, sizeof(g->health), "%s", g->healthy ? "" : s->h[i].why);
        g->replicas = 1;
        g->has_numa = gi->numa_ok;
        g->numa = gi->numa;
        snprintf(g->pci, sizeof(g->pci), "%s", gi->pci_path);
        for (int j = 0; j < GS_AGENT_MAX_GPUS && j < GS_MAX_GPUS_NODE; j++)
            g->nvlink[j] = j == gi->index ? 0 : gi->nvlink[j];
        if (gi->mig_enabled) {
            g->mode = GS_GPU_MIG;
            for (int q = 0; q < s->ninst[i] && g->ninst < GS_INV_MAX_INST; q++) {
                int p = m ? gs_gpu_profile_index(gi->model, s->inst[i][q].profile_id) : -1;
                if (p < 0)
                    continue; /* a profile gpusched does not know: not offered */
                snprintf(g->inst[g->ninst].profile, sizeof(g->inst[0].profile), "%s",
                         m->profiles[p].name);
                g->inst[g->ninst].start = (uint8_t)s->inst[i][q].start;
                g->ninst++;
            }
        } else if (replicas > 1) {
            g->mode = strcmp(sharing, "mps") == 0 ? GS_GPU_MPS : GS_GPU_TIMESLICE;
            g->replicas = (uint8_t)(replicas > 255 ? 255 : replicas);
        } else if (r->o.fractions) {
            g->mode = GS_GPU_FRACTION; /* gpusched.io/gpu-milli besides nvidia.com/gpu */
        }
    }
    char *text = gs_inventory_write(inv);
    free(inv);
    return text;
}

/* Publish the inventory on the Node when it changed (MIG layout, health, sharing). */
static void publish_inventory(struct gs_reconciler *r)
{
    gs_sampler_read(r->s, r->g);
    char *text = inventory_text(r);
    if (!text) {
        GS_WARN("agent", "inventory: out of memory or over %d bytes", GS_INVENTORY_MAX_BYTES);
        return;
    }
    if (r->inv_published && strcmp(r->inv_published, text) == 0) {
        free(text);
        return;
    }
    struct gs_error err;
    gs_error_init(&err);
    if (patch_node(r, gs_kube_annotation_patch(GS_INVENTORY_ANNOTATION, text), &err)) {
        GS_WARN("agent", "inventory: %s", err.msg);
        free(text);
        return;
    }
    GS_INFO("agent", "node %s: inventory %s", r->o.node, text);
    free(r->inv_published);
    r->inv_published = text;
}

/* GPU feature discovery's labels, from what the backend sees and the device-plugin config. */
static json_t *gfd_labels(struct gs_reconciler *r)
{
    const struct gs_gpus *g = view(r);
    json_t *l = json_object();
    if (g->n == 0)
        return l;
    const char *sharing = r->o.sharing;
    int replicas = r->o.replicas;
    char v[140], product[100];
    /* as GPU feature discovery does: the driver's name, [^A-Za-z0-9-_. ] removed, spaces
     * to '-' */
    size_t o = 0;
    for (const char *c = g->info[0].name; *c && o + 1 < sizeof(product); c++)
        if (*c == ' ')
            product[o++] = '-';
        else if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
                 *c == '-' || *c == '_' || *c == '.')
            product[o++] = *c;
    product[o] = '\0';
    if (replicas > 1) {
        snprintf(v, sizeof(v), "%s-SHARED", product);
        json_object_set_new(l, "nvidia.com/gpu.product", json_string(v));
    } else {
        json_object_set_new(l, "nvidia.com/gpu.product", json_string(product));
    }
    snprintf(v, sizeof(v), "%d", g->n);
    json_object_set_new(l, "nvidia.com/gpu.count", json_string(v));
    snprintf(v, sizeof(v), "%llu", (unsigned long long)g->info[0].mem_mib);
    json_object_set_new(l, "nvidia.com/gpu.memory", json_string(v));
    bool capable = false;
    for (int i = 0; i < g->n; i++)
        capable |= g->info[i].mig_capable;
    json_object_set_new(l, "nvidia.com/mig.capable", json_string(capable ? "true" : "false"));
    if (r->o.mig_strategy)
        json_object_set_new(l, "nvidia.com/mig.strategy", json_string(r->o.mig_strategy));
    snprintf(v, sizeof(v), "%d", replicas);
    json_object_set_new(l, "nvidia.com/gpu.replicas", json_string(v));
    json_object_set_new(l, "nvidia.com/gpu.sharing-strategy", json_string(sharing));
    json_object_set_new(l, "nvidia.com/gpu.present", json_string("true"));
    return l;
}

static void set_state(struct gs_reconciler *r, const char *state)
{
    struct gs_error err;
    gs_error_init(&err);
    if (patch_node(
            r,
            json_pack("{s:{s:{s:s}}}", "metadata", "labels", "nvidia.com/mig.config.state", state),
            &err))
        GS_WARN("agent", "mig.config.state=%s: %s", state, err.msg);
}

/* The devices in use (r->use[0..n)): by pods (a MIG instance by its UUID, a whole or shared
 * GPU by its GPU UUID, each with the pod's namespace/name) and by DRA claims. */
static int collect_use(struct gs_reconciler *r)
{
    int n = r->o.in_use ? r->o.in_use(r->o.user, r->use_uuid, r->use_pod, GS_AGENT_MAX_PODS) : 0;
    for (int k = 0; k < n; k++) {
        r->use[k].uuid = r->use_uuid[k];
        r->use[k].pod = r->use_pod[k];
    }
    return n;
}

/* After a MIG change: what the backend holds now, advertised by the device plugins and
 * published in the inventory at once (not a round later). */
static void relaid(struct gs_reconciler *r)
{
    if (r->o.relaid)
        r->o.relaid(r->o.user);
    publish_inventory(r);
}

/* Apply the mig-parted config named by the node's nvidia.com/mig.config label when it
 * changes (and once at start), on the GPUs a desired layout does not list. */
static void reconcile_mig(struct gs_reconciler *r, const json_t *node)
{
    if (!r->o.mig || !r->kc)
        return;
    const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const char *want = json_string_value(json_object_get(labels, "nvidia.com/mig.config"));
    if (!want || strcmp(want, r->mig_applied) == 0)
        return;
    snprintf(r->mig_applied, sizeof(r->mig_applied), "%s", want);
    const char *in_use[GS_AGENT_MAX_PODS];
    int nuse = collect_use(r);
    for (int k = 0; k < nuse; k++)
        in_use[k] = r->use[k].uuid;
    struct gs_migmgr_plan plan;
    struct gs_error err;
    gs_error_init(&err);
    char text[4096];
    int rc = gs_migmgr_plan_except(r->b, r->o.mig, want, in_use, nuse, r->o.mig_force,
                                   r->desired_mask, &plan, &err);
    if (rc) {
        GS_WARN("agent", "mig.config %s: %s", want, err.msg);
        set_state(r, "failed");
        node_event(r, "Warning", "MIGConfigFailed", err.msg);
        return;
    }
    gs_migmgr_plan_str(&plan, text, sizeof(text));
    if (r->o.mig_dry_run) {
        GS_INFO("agent", "dry run, nothing changed:\n%s", text);
        return;
    }
    if (plan.changes == 0) {
        set_state(r, "success");
        return;
    }
    set_state(r, "pending");
    GS_INFO("agent", "applying mig.config %s:\n%s", want, text);
    rc = gs_migmgr_apply(r->b, &plan, &err);
    relaid(r);
    if (rc) {
        GS_WARN("agent", "mig.config %s: %s", want, err.msg);
        set_state(r, "failed");
        node_event(r, "Warning", "MIGConfigFailed", err.msg);
        return;
    }
    set_state(r, "success");
    char note[600];
    snprintf(note, sizeof(note), "MIG config %s applied to %d GPU%s", want, plan.changes,
             plan.changes == 1 ? "" : "s");
    node_event(r, "Normal", "MIGConfigApplied", note);
}

/* ---------- dynamic MIG: the scheduler's desired layouts ---------- */

/* What became of the desired layouts, as the inventory says it ("" state: applied). */
static void desired_state(struct gs_reconciler *r, const char *state, const char *why)
{
    snprintf(r->mig_state, sizeof(r->mig_state), "%s", state);
    snprintf(r->mig_error, sizeof(r->mig_error), "%s", state[0] ? why : "");
    if (state[0] && !r->mig_error[0])
        snprintf(r->mig_error, sizeof(r->mig_error), "unknown");
}

static void desired_finished(struct gs_reconciler *r, const char *text)
{
    free(r->desired_done);
    r->desired_done = strdup(text);
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
static void desired_adopt(struct gs_reconciler *r, const json_t *annotations)
{
    r->desired_init = true;
    const json_t *t = json_object_get(annotations, GS_INVENTORY_ANNOTATION);
    struct gs_inventory *inv = calloc(1, sizeof(*inv));
    if (inv && json_is_string(t) &&
        gs_inventory_read(json_string_value(t), json_string_length(t), inv, NULL) == 0) {
        r->desired_gen = inv->generation;
        if (strcmp(inv->mig_state, "failed") == 0)
            desired_state(r, "failed", inv->mig_error);
        if (r->desired_gen > 0)
            GS_INFO("agent", "node %s: mig-desired generation %lld finished before (%s)", r->o.node,
                    (long long)r->desired_gen, r->mig_state[0] ? "failed" : "applied");
    }
    free(inv);
}

/* "GPU 0: 1g.10gb@0,3g.40gb@4; GPU 2: whole" for the GPUs of a plan, as the backend holds
 * them now. */
static void layouts_note(struct gs_reconciler *r, const struct gs_migmgr_plan *plan, char *out,
                         size_t size)
{
    size_t off = 0;
    out[0] = '\0';
    const struct gs_gpus *g = view(r);
    for (int k = 0; k < plan->ngpus && off < size; k++) {
        int i = plan->gpu[k].index;
        off += (size_t)snprintf(out + off, size - off, "%sGPU %d: %s", k ? "; " : "", i,
                                g->info[i].mig_enabled ? "" : "whole");
        for (int q = 0; q < g->ninst[i] && off < size; q++) {
            int p = gs_gpu_profile_index(g->info[i].model, g->inst[i][q].profile_id);
            off +=
                (size_t)snprintf(out + off, size - off, "%s%s@%u", q ? "," : "",
                                 p >= 0 ? gs_catalog_get(g->info[i].model)->profiles[p].name : "?",
                                 g->inst[i][q].start);
        }
        if (g->info[i].mig_enabled && g->ninst[i] == 0 && off < size)
            off += (size_t)snprintf(out + off, size - off, "MIG, no instances");
    }
}

/* A desired layout refused for good: its generation is finished (gen 0: an annotation without
 * a readable generation; the one finished before stays), nothing changed. */
static void desired_refuse(struct gs_reconciler *r, int64_t gen, const char *text, const char *why)
{
    if (gen > r->desired_gen)
        r->desired_gen = gen;
    desired_state(r, "failed", why);
    desired_finished(r, text);
    r->desired_note[0] = '\0';
    char note[GS_ERROR_MSG_MAX + 64];
    snprintf(note, sizeof(note), "mig-desired generation %lld refused, nothing changed: %s",
             (long long)gen, why);
    GS_WARN("agent", "node %s: %s", r->o.node, note);
    set_state(r, "failed");
    node_event(r, "Warning", "MIGLayoutRefused", note);
    publish_inventory(r);
}

/* Apply the node's gpusched.io/mig-desired layout when its generation is newer than the last
 * one finished with: the GPUs that can change now change (instances a pod holds are never
 * destroyed), the others wait and are tried again every round (pods come and go) until
 * they can; an invalid layout is refused whole. */
static void reconcile_desired(struct gs_reconciler *r, const json_t *node)
{
    if (!r->kc || !r->o.node)
        return;
    const json_t *anns = json_object_get(json_object_get(node, "metadata"), "annotations");
    if (!r->desired_init)
        desired_adopt(r, anns);
    const json_t *ann = json_object_get(anns, GS_MIG_DESIRED_ANNOTATION);
    if (!ann) {
        r->desired_mask = 0;
        return;
    }
    const char *text = json_is_string(ann) ? json_string_value(ann) : "";
    size_t len = json_is_string(ann) ? json_string_length(ann) : 0;
    if (r->desired_done && strcmp(r->desired_done, text) == 0)
        return; /* finished with this very text */
    struct gs_error err;
    gs_error_init(&err);
    struct gs_mig_desired *d = calloc(1, sizeof(*d));
    if (!d)
        return;
    if (gs_mig_desired_read(text, len, d, &err)) {
        int64_t gen = generation_of(text, len);
        if (gen > 0 && gen <= r->desired_gen) { /* stale, even if it could be read */
            GS_WARN("agent",
                    "node %s: mig-desired generation %lld is not newer than %lld: "
                    "left as is (%s)",
                    r->o.node, (long long)gen, (long long)r->desired_gen, err.msg);
            desired_finished(r, text);
        } else {
            desired_refuse(r, gen, text, err.msg);
        }
        goto out;
    }
    r->desired_mask = 0;
    for (int k = 0; k < d->ngpus; k++)
        r->desired_mask |= 1u << d->gpus[k].index;
    if (d->generation <= r->desired_gen) {
        GS_INFO("agent", "node %s: mig-desired generation %lld is not newer than %lld: left as is",
                r->o.node, (long long)d->generation, (long long)r->desired_gen);
        desired_finished(r, text);
        goto out;
    }
    int nuse = collect_use(r);
    static struct gs_migmgr_plan plan;
    char ptext[4096], note[GS_ERROR_MSG_MAX];
    int rc = gs_migmgr_plan_desired(r->b, d, r->use, nuse, &plan, &err);
    if (rc == GS_EINVAL) {
        desired_refuse(r, d->generation, text, err.msg);
        goto out;
    }
    if (rc) { /* the backend could not be read: try again next round */
        snprintf(note, sizeof(note), "%s", err.msg);
        desired_state(r, "pending", note);
        if (strcmp(note, r->desired_note) != 0)
            GS_WARN("agent", "mig-desired generation %lld: %s", (long long)d->generation, note);
        snprintf(r->desired_note, sizeof(r->desired_note), "%s", note);
        goto out;
    }
    gs_migmgr_plan_str(&plan, ptext, sizeof(ptext));
    if (r->o.mig_dry_run) {
        desired_state(r, "pending", "dry run (--mig-dry-run): nothing applied");
        if (strcmp(ptext, r->desired_note) != 0)
            GS_INFO("agent", "dry run, nothing changed:\n%s", ptext);
        snprintf(r->desired_note, sizeof(r->desired_note), "%s", ptext);
        goto out;
    }
    if (plan.changes > 0) {
        set_state(r, "pending");
        GS_INFO("agent", "applying %s", ptext);
        rc = gs_migmgr_apply(r->b, &plan, &err);
        if (rc) {
            /* the backend refused a step (a process the pods do not show): the GPU is
             * partly changed; the next round plans again from what it holds */
            desired_state(r, "pending", err.msg);
            relaid(r);
            if (strcmp(err.msg, r->desired_note) != 0) {
                GS_WARN("agent", "mig-desired generation %lld: %s", (long long)d->generation,
                        err.msg);
                node_event(r, "Warning", "MIGLayoutPending", err.msg);
            }
            snprintf(r->desired_note, sizeof(r->desired_note), "%s", err.msg);
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
        desired_state(r, "pending", note);
        if (plan.changes > 0)
            relaid(r);
        else
            publish_inventory(r);
        if (strcmp(note, r->desired_note) != 0) {
            GS_INFO("agent", "node %s: mig-desired generation %lld waits: %s", r->o.node,
                    (long long)d->generation, note);
            set_state(r, "pending");
            char ev[GS_ERROR_MSG_MAX + 64];
            snprintf(ev, sizeof(ev), "mig-desired generation %lld waits: %s",
                     (long long)d->generation, note);
            node_event(r, "Normal", "MIGLayoutPending", ev);
        }
        snprintf(r->desired_note, sizeof(r->desired_note), "%s", note);
        goto out;
    }
    r->desired_gen = d->generation;
    desired_state(r, "", "");
    desired_finished(r, text);
    r->desired_note[0] = '\0';
    relaid(r);
    set_state(r, "success");
    char layouts[700], ev[800];
    layouts_note(r, &plan, layouts, sizeof(layouts));
    snprintf(ev, sizeof(ev), "mig-desired generation %lld applied (%d GPU%s changed): %s",
             (long long)d->generation, plan.changes, plan.changes == 1 ? "" : "s",
             plan.ngpus ? layouts : "no GPU listed");
    GS_INFO("agent", "node %s: %s", r->o.node, ev);
    node_event(r, "Normal", "MIGLayoutApplied", ev);
out:
    free(d);
}

/* ---------- the round ---------- */

struct gs_reconciler *gs_reconciler_new(const struct gs_reconciler_opts *o,
                                        struct gs_gpu_backend *b, struct gs_sampler *s,
                                        struct gs_kube_client *kc)
{
    struct gs_reconciler *r = calloc(1, sizeof(*r));
    if (r)
        r->g = malloc(sizeof(*r->g));
    if (!r || !r->g) {
        free(r);
        return NULL;
    }
    r->o = *o;
    r->b = b;
    r->s = s;
    r->kc = kc;
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void gs_reconciler_free(struct gs_reconciler *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->mu);
    free(r->inv_published);
    free(r->desired_done);
    free(r->g);
    free(r);
}

int gs_reconciler_cordoned(struct gs_reconciler *r)
{
    pthread_mutex_lock(&r->mu);
    int held = r->cordoned;
    pthread_mutex_unlock(&r->mu);
    return held;
}

void gs_reconciler_round(struct gs_reconciler *r)
{
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", r->o.node);
    json_t *node = NULL;
    struct gs_error err;
    gs_error_init(&err);
    if (gs_kube_request(r->kc, "GET", path, NULL, NULL, &node, NULL, &err) == 0) {
        if (!r->labels_done) {
            json_t *p = json_pack("{s:{s:o}}", "metadata", "labels", gfd_labels(r));
            r->labels_done = patch_node(r, p, &err) == 0;
            if (!r->labels_done)
                GS_WARN("agent", "labels: %s", err.msg);
        }
        reconcile_cordon(r, node);
        reconcile_desired(r, node);
        reconcile_mig(r, node);
        publish_inventory(r);
    } else {
        GS_WARN("agent", "node %s: %s", r->o.node, err.msg);
    }
    json_decref(node);
}
