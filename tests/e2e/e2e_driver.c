/* e2e_driver - the client side of gpusched's end-to-end tests, speaking to the real API
 * server through gpusched's own client: create fake GPU nodes from a compact spec (labels
 * and allocatable as NVIDIA's stack publishes them), create pods, wait for bindings, and
 * verify from the API alone that no device is over-allocated, selectors hold and every
 * unbound pod carries a FailedScheduling Event that says why.
 *
 *   e2e_driver nodes  < spec    COUNT PREFIX MODEL GPUS whole|mig:<config>|ts:<R>|mps:<R>
 *   e2e_driver pods   < spec    COUNT PREFIX NS gpu:N|mig:<profile>|milli:M|none [k=v]
 *   e2e_driver wait-bound N SECONDS
 *   e2e_driver wait-running N SECONDS
 *   e2e_driver wait-none-pending SECONDS   every pod of $E2E_SCHEDULER bound (a list of the
 *                               unbound ones, then a watch: cheap on large clusters)
 *   e2e_driver writes NODE      the write paths a scheduler and a node agent need, checked
 *                               against the API server (UID-precondition delete, nomination,
 *                               node label and cordon patches)
 *   e2e_driver verify [--expect-bound N] [--expect-unschedulable N]
 *                               (an unbound pod's FailedScheduling Event waited for up to 60 s
 *                               in all: Events give way to binds, sched/binder.h)
 */
#include "base/error.h"
#include "core/catalog.h"
#include "formats/kubeobj.h"
#include "formats/migparted.h"
#include "kube/client.h"
#include "sim/scenario.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* strtol that never reads past a number and yields -1 on garbage */
static int atoi_safe(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return end == s ? -1 : (int)v;
}

static struct gs_kube_client *kc;

static int req(const char *method, const char *path, const char *ctype, json_t *body)
{
    struct gs_error err;
    gs_error_init(&err);
    long status = 0;
    int rc = gs_kube_request(kc, method, path, ctype, body, NULL, &status, &err);
    json_decref(body);
    if (rc && status != 409) {
        fprintf(stderr, "e2e_driver: %s\n", err.msg);
        return rc;
    }
    return 0;
}

/* Labels, allocatable and the inventory annotation the gpusched agent would publish for one
 * fake node (GPU g of a MIG config placed as the agent's MIG manager places it). */
static json_t *node_json(const char *name, int model, int gpus, const char *mode)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    static struct gs_inventory inv;
    memset(&inv, 0, sizeof(inv));
    inv.version = GS_INVENTORY_VERSION;
    inv.ngpus = gpus < GS_MAX_GPUS_NODE ? gpus : GS_MAX_GPUS_NODE;
    for (int g = 0; g < inv.ngpus; g++) {
        struct gs_inv_gpu *ig = &inv.gpus[g];
        ig->index = g;
        snprintf(ig->uuid, sizeof(ig->uuid), "GPU-%s-%d", name, g);
        snprintf(ig->model, sizeof(ig->model), "%s", m->name);
        ig->mem_mib = m->mem_mib;
        ig->healthy = true;
        ig->mode = GS_GPU_WHOLE;
        ig->replicas = 1;
    }
    json_t *labels =
        json_pack("{s:s, s:s, s:s, s:s, s:s}", "kubernetes.io/hostname", name,
                  "nvidia.com/gpu.product", m->product, "nvidia.com/gpu.present", "true", "type",
                  "fake-gpu", "nvidia.com/mig.capable", m->nprofiles ? "true" : "false");
    json_t *alloc = json_pack("{s:s, s:s, s:s}", "cpu", "128", "memory", "1Ti", "pods", "110");
    char v[32];
    snprintf(v, sizeof(v), "%d", gpus);
    json_object_set_new(labels, "nvidia.com/gpu.count", json_string(v));
    snprintf(v, sizeof(v), "%u", m->mem_mib);
    json_object_set_new(labels, "nvidia.com/gpu.memory", json_string(v));
    int whole = gpus;
    if (strncmp(mode, "ts:", 3) == 0 || strncmp(mode, "mps:", 4) == 0) {
        int r = (int)strtol(strchr(mode, ':') + 1, NULL, 10);
        snprintf(v, sizeof(v), "%d", r);
        json_object_set_new(labels, "nvidia.com/gpu.replicas", json_string(v));
        json_object_set_new(labels, "nvidia.com/gpu.sharing-strategy",
                            json_string(mode[0] == 't' ? "time-slicing" : "mps"));
        for (int g = 0; g < inv.ngpus; g++) {
            inv.gpus[g].mode = mode[0] == 't' ? GS_GPU_TIMESLICE : GS_GPU_MPS;
            inv.gpus[g].replicas = (uint8_t)r;
        }
        snprintf(v, sizeof(v), "%d", gpus * r);
        json_object_set_new(alloc, "nvidia.com/gpu", json_string(v));
        whole = -1;
    } else if (strncmp(mode, "mig:", 4) == 0) {
        struct gs_migparted *mp = NULL;
        gs_migparted_parse("article", gs_article_mig_config_yaml,
                           strlen(gs_article_mig_config_yaml), &mp, NULL);
        const struct gs_mp_config *cfg = gs_migparted_find(mp, mode + 4);
        if (!cfg) {
            fprintf(stderr, "e2e_driver: unknown mig config '%s'\n", mode + 4);
            exit(2);
        }
        json_object_set_new(labels, "nvidia.com/mig.config", json_string(mode + 4));
        json_object_set_new(labels, "nvidia.com/mig.config.state", json_string("success"));
        json_object_set_new(labels, "nvidia.com/mig.strategy", json_string("mixed"));
        uint32_t total[GS_MIG_MAX_PROFILES] = {0};
        whole = 0;
        for (int g = 0; g < gpus; g++) {
            bool en = false;
            struct gs_mig_layout l;
            if (gs_migparted_resolve(cfg, g, model, &en, &l, NULL) < 0 || !en) {
                whole++;
                continue;
            }
            struct gs_mig_placement pl;
            if (g < inv.ngpus && gs_mig_place(model, &l, &pl, NULL) == 0) {
                inv.gpus[g].mode = GS_GPU_MIG;
                for (int s = 0; s < pl.n && s < GS_INV_MAX_INST; s++) {
                    snprintf(inv.gpus[g].inst[s].profile, sizeof(inv.gpus[g].inst[s].profile), "%s",
                             m->profiles[pl.inst[s].profile].name);
                    inv.gpus[g].inst[s].start = pl.inst[s].start;
                    inv.gpus[g].ninst++;
                }
            }
            for (int p = 0; p < m->nprofiles; p++)
                total[p] += l.count[p];
        }
        for (int p = 0; p < m->nprofiles; p++) {
            if (!total[p])
                continue;
            char res[64];
            gs_mig_resource_name(&m->profiles[p], res, sizeof(res));
            snprintf(v, sizeof(v), "%u", total[p]);
            json_object_set_new(alloc, res, json_string(v));
        }
        gs_migparted_free(mp);
    }
    if (whole >= 0) {
        snprintf(v, sizeof(v), "%d", whole);
        json_object_set_new(alloc, "nvidia.com/gpu", json_string(v));
    }
    /* kwok, when the harness runs it, manages the nodes that carry its annotation */
    char *text = gs_inventory_write(&inv);
    json_t *n =
        json_pack("{s:s, s:s, s:{s:s, s:o, s:{s:s, s:s}}, s:{s:o, s:o}}", "apiVersion", "v1",
                  "kind", "Node", "metadata", "name", name, "labels", labels, "annotations",
                  "kwok.x-k8s.io/node", "fake", GS_INVENTORY_ANNOTATION, text ? text : "", "status",
                  "allocatable", alloc, "capacity", json_deep_copy(alloc));
    free(text);
    return n;
}

static int cmd_nodes(void)
{
    char line[512];
    while (fgets(line, sizeof(line), stdin)) {
        int count, gpus;
        char prefix[64], model[64], mode[64];
        if (line[0] == '#' ||
            sscanf(line, "%d %63s %63s %d %63s", &count, prefix, model, &gpus, mode) != 5)
            continue;
        int m = gs_catalog_find(model);
        if (m < 0) {
            fprintf(stderr, "e2e_driver: unknown model '%s'\n", model);
            return 2;
        }
        for (int i = 0; i < count; i++) {
            char name[128], path[256];
            snprintf(name, sizeof(name), "%s-%03d", prefix, i);
            json_t *n = node_json(name, m, gpus, mode);
            json_t *status = json_incref(json_object_get(n, "status"));
            if (req("POST", "/api/v1/nodes", NULL, n)) {
                json_decref(status);
                return 1;
            }
            snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", name);
            if (req("PATCH", path, "application/merge-patch+json",
                    json_pack("{s:o}", "status", status)))
                return 1;
        }
    }
    return 0;
}

static int cmd_pods(void)
{
    char line[512];
    req("POST", "/api/v1/namespaces", NULL,
        json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                  "name", "e2e"));
    while (fgets(line, sizeof(line), stdin)) {
        int count;
        char prefix[64], ns[64], kind[64], sel[128] = "";
        if (line[0] == '#' ||
            sscanf(line, "%d %63s %63s %63s %127s", &count, prefix, ns, kind, sel) < 4)
            continue;
        for (int i = 0; i < count; i++) {
            char name[128], path[256], v[16];
            snprintf(name, sizeof(name), "%s-%04d", prefix, i);
            json_t *limits = json_pack("{s:s, s:s}", "cpu", "500m", "memory", "1Gi");
            if (strncmp(kind, "gpu:", 4) == 0)
                json_object_set_new(limits, "nvidia.com/gpu", json_string(kind + 4));
            else if (strncmp(kind, "mig:", 4) == 0) {
                char res[64];
                snprintf(res, sizeof(res), "nvidia.com/mig-%s", kind + 4);
                json_object_set_new(limits, res, json_string("1"));
            } else if (strncmp(kind, "milli:", 6) == 0)
                json_object_set_new(limits, "gpusched.io/gpu-milli", json_string(kind + 6));
            const char *sched = getenv("E2E_SCHEDULER") ? getenv("E2E_SCHEDULER") : "gpusched";
            json_t *spec = json_pack("{s:s, s:[{s:s, s:s, s:{s:o}}], s:[{s:s, s:s}]}",
                                     "schedulerName", sched, "containers", "name", "c", "image",
                                     "registry.invalid/none:1", "resources", "limits", limits,
                                     "tolerations", "key", "nvidia.com/gpu", "operator", "Exists");
            if (sel[0]) {
                char k[128];
                snprintf(k, sizeof(k), "%s", sel);
                char *eq = strchr(k, '=');
                if (eq) {
                    *eq = '\0';
                    json_object_set_new(spec, "nodeSelector", json_pack("{s:s}", k, eq + 1));
                }
            }
            (void)v;
            snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
            if (req("POST", path, NULL,
                    json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "v1", "kind", "Pod",
                              "metadata", "name", name, "namespace", ns, "spec", spec)))
                return 1;
        }
    }
    return 0;
}

struct listing {
    int n, cap;
    struct gs_kube_pod *pods;
    struct gs_kube_node *nodes;
};

static int add_pod(const json_t *item, void *user)
{
    struct listing *l = user;
    if (!item) { /* the list starts over */
        for (int i = 0; i < l->n; i++)
            gs_kube_pod_release(&l->pods[i]);
        l->n = 0;
        return 0;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->pods = realloc(l->pods, sizeof(*l->pods) * (size_t)l->cap);
    }
    const char *want = getenv("E2E_SCHEDULER") ? getenv("E2E_SCHEDULER") : "gpusched";
    if (gs_kube_pod_read(item, &l->pods[l->n], NULL) == 0 &&
        strcmp(l->pods[l->n].scheduler, want) == 0)
        l->n++;
    return 0;
}

static int add_node(const json_t *item, void *user)
{
    struct listing *l = user;
    if (!item) { /* the list starts over */
        for (int i = 0; i < l->n; i++)
            gs_kube_node_release(&l->nodes[i]);
        l->n = 0;
        return 0;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->nodes = realloc(l->nodes, sizeof(*l->nodes) * (size_t)l->cap);
    }
    if (gs_kube_node_read(item, &l->nodes[l->n], NULL) == 0)
        l->n++;
    return 0;
}

static int list_pods(struct listing *l)
{
    memset(l, 0, sizeof(*l));
    struct gs_error err;
    gs_error_init(&err);
    if (gs_kube_list(kc, "/api/v1/pods", add_pod, l, NULL, 0, &err)) {
        fprintf(stderr, "e2e_driver: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int bound(const struct listing *l)
{
    int b = 0;
    for (int i = 0; i < l->n; i++)
        b += l->pods[i].node[0] != 0;
    return b;
}

static int cmd_wait(int want, int seconds)
{
    time_t end = time(NULL) + seconds;
    int b = 0;
    while (time(NULL) < end) {
        struct listing l;
        if (list_pods(&l))
            return 1;
        b = bound(&l);
        free(l.pods);
        if (b >= want) {
            printf("bound %d pods\n", b);
            return 0;
        }
        usleep(500000);
    }
    fprintf(stderr, "e2e_driver: only %d of %d pods bound after %d s\n", b, want, seconds);
    return 1;
}

static json_t *get(const char *path, long *status)
{
    json_t *out = NULL;
    struct gs_error err;
    gs_error_init(&err);
    *status = 0;
    gs_kube_request(kc, "GET", path, NULL, NULL, &out, status, &err);
    return out;
}

static int check(bool ok, const char *what)
{
    printf("writes: %s: %s\n", what, ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}

static int cmd_writes(const char *node)
{
    struct gs_error err;
    long st = 0;
    int bad = 0;
    char path[512], npath[512];
    req("POST", "/api/v1/namespaces", NULL,
        json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                  "name", "e2e"));
    json_t *pod =
        json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind", "Pod",
                  "metadata", "name", "writes-0", "spec", "schedulerName", "nobody", "containers",
                  "name", "c", "image", "registry.invalid/none:1");
    json_t *created = NULL;
    gs_error_init(&err);
    gs_kube_request(kc, "POST", "/api/v1/namespaces/e2e/pods", NULL, pod, &created, &st, &err);
    json_decref(pod);
    char uid[64];
    const char *u = json_string_value(json_object_get(json_object_get(created, "metadata"), "uid"));
    snprintf(uid, sizeof(uid), "%s", u ? u : "");
    json_decref(created);
    if (check(st == 201 && uid[0], "create pod"))
        return 1;
    snprintf(path, sizeof(path), "/api/v1/namespaces/e2e/pods/writes-0");
    /* delete with a stale UID: 409, the pod stays */
    json_t *o = gs_kube_delete_options("00000000-0000-0000-0000-000000000000", 0);
    gs_error_init(&err);
    int rc = gs_kube_request(kc, "DELETE", path, NULL, o, NULL, &st, &err);
    json_decref(o);
    bad |= check(rc && st == 409 && strstr(err.msg, "409"), "delete with a stale UID is 409");
    json_t *g = get(path, &st);
    bad |= check(st == 200, "the pod is still there");
    json_decref(g);
    /* nominate a node in status */
    json_t *np = gs_kube_nominated_patch(node, "preempting lower-priority pods");
    snprintf(npath, sizeof(npath), "%s/status", path);
    gs_error_init(&err);
    gs_kube_request(kc, "PATCH", npath, "application/strategic-merge-patch+json", np, NULL, &st,
                    &err);
    json_decref(np);
    g = get(path, &st);
    const char *nn =
        json_string_value(json_object_get(json_object_get(g, "status"), "nominatedNodeName"));
    bad |= check(nn && strcmp(nn, node) == 0, "status.nominatedNodeName set");
    json_decref(g);
    /* label and cordon the node, then undo both */
    snprintf(npath, sizeof(npath), "/api/v1/nodes/%s", node);
    for (int pass = 0; pass < 2; pass++) {
        json_t *p = gs_kube_node_patch("gpusched.io/writes", pass ? NULL : "yes", pass ? 0 : 1);
        gs_error_init(&err);
        gs_kube_request(kc, "PATCH", npath, "application/merge-patch+json", p, NULL, &st, &err);
        json_decref(p);
        g = get(npath, &st);
        struct gs_kube_node n;
        gs_error_init(&err);
        bool read = g && gs_kube_node_read(g, &n, &err) == 0;
        const char *l = read ? gs_kube_label(&n, "gpusched.io/writes") : NULL;
        if (pass == 0)
            bad |= check(read && l && strcmp(l, "yes") == 0 && n.unschedulable,
                         "node labelled and cordoned");
        else
            bad |= check(read && !l && !n.unschedulable, "label removed, node uncordoned");
        if (read)
            gs_kube_node_release(&n);
        json_decref(g);
    }
    /* delete with the right UID */
    o = gs_kube_delete_options(uid, 0);
    gs_error_init(&err);
    rc = gs_kube_request(kc, "DELETE", path, NULL, o, NULL, &st, &err);
    json_decref(o);
    bad |= check(rc == 0 && (st == 200 || st == 202), "delete with the pod's UID");
    return bad;
}

/* Pods in phase Running: the fake kubelet (kwok) started them on their nodes. */
static int cmd_wait_running(int want, int seconds)
{
    time_t end = time(NULL) + seconds;
    int r = 0;
    while (time(NULL) < end) {
        struct listing l;
        if (list_pods(&l))
            return 1;
        r = 0;
        for (int i = 0; i < l.n; i++)
            r += l.pods[i].node[0] && strcmp(l.pods[i].phase, "Running") == 0;
        free(l.pods);
        if (r >= want) {
            printf("running %d pods\n", r);
            return 0;
        }
        usleep(500000);
    }
    fprintf(stderr, "e2e_driver: only %d of %d pods running after %d s\n", r, want, seconds);
    return 1;
}

static int count_item(const json_t *item, void *user)
{
    int *n = user;
    *n = item ? *n + 1 : 0;
    return 0;
}

struct pending {
    int n;
    char rv[64];
};

/* A watch event on the pending pods: a pod that gains a node leaves the selection (DELETED,
 * as the API server reports an object that stops matching a watch's field selector). Ends
 * the watch (1) once none is left, or (2) when the watch expired (ERROR: list again). */
static int on_pending(const char *type, const json_t *obj, void *user)
{
    struct pending *w = user;
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (strcmp(type, "ERROR") == 0)
        return 2;
    if (rv)
        snprintf(w->rv, sizeof(w->rv), "%s", rv);
    if (strcmp(type, "ADDED") == 0)
        w->n++;
    else if (strcmp(type, "DELETED") == 0)
        w->n--;
    return w->n <= 0 ? 1 : 0;
}

/* Until no pod of the scheduler is left without a node: one list of the pending pods (the
 * API server filters them by field selector), then a watch on the same selection, so that
 * waiting costs the API server next to nothing however many pods are pending. */
static int cmd_wait_none_pending(int seconds)
{
    const char *sched = getenv("E2E_SCHEDULER") ? getenv("E2E_SCHEDULER") : "gpusched";
    char path[256];
    snprintf(path, sizeof(path),
             "/api/v1/pods?fieldSelector=spec.nodeName%%3D,spec.schedulerName%%3D%s", sched);
    time_t end = time(NULL) + seconds;
    struct pending w = {.n = -1};
    while (time(NULL) < end) {
        struct gs_error err;
        gs_error_init(&err);
        w.n = 0;
        if (gs_kube_list(kc, path, count_item, &w.n, w.rv, sizeof(w.rv), &err)) {
            fprintf(stderr, "e2e_driver: %s\n", err.msg);
            return 1;
        }
        int rc = 0;
        while (w.n > 0 && rc == 0 && time(NULL) < end) {
            long left = (long)(end - time(NULL));
            rc = gs_kube_watch(kc, path, w.rv, left < 60 ? (int)left + 1 : 60, on_pending, &w, NULL,
                               &err);
        }
        if (w.n <= 0) {
            printf("no pod of %s pending\n", sched);
            return 0;
        }
        if (rc != 2 && rc != GS_ENOTFOUND) {
            fprintf(stderr, "e2e_driver: %s\n", err.msg);
            return 1;
        }
    }
    fprintf(stderr, "e2e_driver: %d pods of %s still pending after %d s\n", w.n, sched, seconds);
    return 1;
}

static int has_failed_event(const struct gs_kube_pod *p, char *note, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path),
             "/apis/events.k8s.io/v1/namespaces/%s/events?fieldSelector=regarding.name%%3D%s",
             p->ns, p->name);
    json_t *out = NULL;
    if (gs_kube_request(kc, "GET", path, NULL, NULL, &out, NULL, NULL))
        return 0;
    size_t i;
    json_t *ev;
    int found = 0;
    json_array_foreach(json_object_get(out, "items"), i, ev)
    {
        const char *reason = json_string_value(json_object_get(ev, "reason"));
        if (reason && strcmp(reason, "FailedScheduling") == 0) {
            snprintf(note, n, "%s", json_string_value(json_object_get(ev, "note")));
            found = 1;
        }
    }
    json_decref(out);
    return found;
}

/* Check a node's devices from annotations alone, independently of the scheduler's code. */
static int check_node(const struct gs_kube_node *n, const struct listing *pods)
{
    int bad = 0, gpus = 0, replicas = 1;
    const char *c = gs_kube_label(n, "nvidia.com/gpu.count");
    const char *r = gs_kube_label(n, "nvidia.com/gpu.replicas");
    gpus = c ? atoi_safe(c) : 0;
    replicas = r ? atoi_safe(r) : 1;
    int whole[64] = {0}, rep[64] = {0}, milli[64] = {0};
    char slots[64][8][24];
    int nslots[64] = {0};
    for (int i = 0; i < pods->n; i++) {
        const struct gs_kube_pod *p = &pods->pods[i];
        if (strcmp(p->node, n->name) != 0 || p->req.kind == GS_REQ_NONE)
            continue;
        const char *eq = strchr(p->devices, '=');
        if (!eq) {
            fprintf(stderr, "VIOLATION: %s/%s on %s has no devices annotation\n", p->ns, p->name,
                    n->name);
            bad++;
            continue;
        }
        char kind[16];
        snprintf(kind, sizeof(kind), "%.*s", (int)(eq - p->devices), p->devices);
        char list[256];
        snprintf(list, sizeof(list), "%s", eq + 1);
        char *save = NULL;
        int ndev = 0;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int g = atoi_safe(t);
            ndev++;
            if (g < 0 || g >= gpus || g >= 64) {
                fprintf(stderr, "VIOLATION: %s/%s uses GPU %d of %s (%d GPUs)\n", p->ns, p->name, g,
                        n->name, gpus);
                bad++;
                continue;
            }
            if (strcmp(kind, "gpu") == 0)
                whole[g]++;
            else if (strcmp(kind, "replica") == 0)
                rep[g]++;
            else if (strcmp(kind, "milli") == 0)
                milli[g] += atoi_safe(strchr(t, ':') ? strchr(t, ':') + 1 : "0");
            else if (strcmp(kind, "mig") == 0) {
                const char *slot = strchr(t, ':');
                for (int k = 0; slot && k < nslots[g]; k++)
                    if (strcmp(slots[g][k], slot) == 0) {
                        fprintf(stderr, "VIOLATION: MIG slot %d%s of %s given twice\n", g, slot,
                                n->name);
                        bad++;
                    }
                if (slot && nslots[g] < 8)
                    snprintf(slots[g][nslots[g]++], 24, "%s", slot);
            }
        }
        if (p->req.kind == GS_REQ_GPU && ndev != p->req.gpus) {
            fprintf(stderr, "VIOLATION: %s/%s asked %d GPUs and got %d\n", p->ns, p->name,
                    p->req.gpus, ndev);
            bad++;
        }
    }
    for (int g = 0; g < gpus && g < 64; g++) {
        if (whole[g] > 1 || (whole[g] && (rep[g] || milli[g] || nslots[g])) || rep[g] > replicas ||
            milli[g] > 1000) {
            fprintf(stderr,
                    "VIOLATION: GPU %d of %s over-allocated (whole %d, replicas %d/%d, "
                    "milli %d, mig %d)\n",
                    g, n->name, whole[g], rep[g], replicas, milli[g], nslots[g]);
            bad++;
        }
    }
    return bad;
}

static int cmd_verify(int expect_bound, int expect_unsched)
{
    struct listing pods, nodes;
    if (list_pods(&pods))
        return 1;
    memset(&nodes, 0, sizeof(nodes));
    if (gs_kube_list(kc, "/api/v1/nodes", add_node, &nodes, NULL, 0, NULL))
        return 1;
    int bad = 0, nb = 0, nu = 0;
    time_t deadline = time(NULL) + 60;
    for (int i = 0; i < nodes.n; i++)
        bad += check_node(&nodes.nodes[i], &pods);
    for (int i = 0; i < pods.n; i++) {
        const struct gs_kube_pod *p = &pods.pods[i];
        if (p->node[0]) {
            nb++;
            /* the node selector holds */
            const struct gs_kube_node *n = NULL;
            for (int k = 0; k < nodes.n && !n; k++)
                if (strcmp(nodes.nodes[k].name, p->node) == 0)
                    n = &nodes.nodes[k];
            for (int s = 0; n && s < p->req.nsel; s++) {
                const char *v = gs_kube_label(n, p->req.sel[s].key);
                if (!v || strcmp(v, p->req.sel[s].val) != 0) {
                    fprintf(stderr, "VIOLATION: %s/%s on %s breaks selector %s=%s\n", p->ns,
                            p->name, p->node, p->req.sel[s].key, p->req.sel[s].val);
                    bad++;
                }
            }
            continue;
        }
        nu++;
        char note[1100] = "";
        bool ev;
        while (!(ev = has_failed_event(p, note, sizeof(note))) && time(NULL) < deadline)
            usleep(200000);
        if (!ev) {
            fprintf(stderr, "VIOLATION: %s/%s is not bound and has no FailedScheduling event\n",
                    p->ns, p->name);
            bad++;
        } else if (!strstr(note, "nodes fit") && strncmp(note, "quota: ", 7) != 0 &&
                   strncmp(note, "gang ", 5) != 0 && strncmp(note, "topology: ", 10) != 0) {
            fprintf(stderr, "VIOLATION: %s/%s: event note '%s' does not say why\n", p->ns, p->name,
                    note);
            bad++;
        } else if (nu <= 3) {
            printf("unschedulable %s/%s: %s\n", p->ns, p->name, note);
        }
    }
    printf("verify: %d pods, %d bound, %d unschedulable, %d violations\n", pods.n, nb, nu, bad);
    if (expect_bound >= 0 && nb != expect_bound) {
        fprintf(stderr, "e2e_driver: %d bound, expected %d\n", nb, expect_bound);
        bad++;
    }
    if (expect_unsched >= 0 && nu != expect_unsched) {
        fprintf(stderr, "e2e_driver: %d unschedulable, expected %d\n", nu, expect_unsched);
        bad++;
    }
    free(pods.pods);
    for (int i = 0; i < nodes.n; i++)
        gs_kube_node_release(&nodes.nodes[i]);
    free(nodes.nodes);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(
            stderr,
            "usage: e2e_driver nodes|pods|wait-bound N S|wait-running N S|writes NODE|verify\n");
        return 2;
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_kube_config cfg;
    if (gs_kube_config_load(NULL, NULL, &cfg, &err) ||
        gs_kube_client_new(&cfg, &(struct gs_kube_client_opts){.qps = 500, .burst = 1000}, &kc,
                           &err)) {
        fprintf(stderr, "e2e_driver: %s\n", err.msg);
        return 1;
    }
    int rc = 2;
    if (strcmp(argv[1], "nodes") == 0)
        rc = cmd_nodes();
    else if (strcmp(argv[1], "pods") == 0)
        rc = cmd_pods();
    else if (strcmp(argv[1], "wait-bound") == 0 && argc >= 4)
        rc = cmd_wait(atoi_safe(argv[2]), atoi_safe(argv[3]));
    else if (strcmp(argv[1], "writes") == 0 && argc >= 3)
        rc = cmd_writes(argv[2]);
    else if (strcmp(argv[1], "wait-running") == 0 && argc >= 4)
        rc = cmd_wait_running(atoi_safe(argv[2]), atoi_safe(argv[3]));
    else if (strcmp(argv[1], "wait-none-pending") == 0 && argc >= 3)
        rc = cmd_wait_none_pending(atoi_safe(argv[2]));
    else if (strcmp(argv[1], "verify") == 0) {
        int eb = -1, eu = -1;
        for (int i = 2; i + 1 < argc; i += 2) {
            if (strcmp(argv[i], "--expect-bound") == 0)
                eb = atoi_safe(argv[i + 1]);
            else if (strcmp(argv[i], "--expect-unschedulable") == 0)
                eu = atoi_safe(argv[i + 1]);
        }
        rc = cmd_verify(eb, eu);
    }
    gs_kube_client_free(kc);
    return rc;
}
