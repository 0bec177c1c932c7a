/* pods.c - the node agent's pod tracker (see pods.h): pod-resources (podresources.c), the
 * API's pods and their gpusched.io/devices annotations (formats/devices.h), which pod the
 * kubelet admits (pick, allocated), corrections. */
#include "pods.h"

#include "../base/error.h"
#include "../base/log.h"
#include "../formats/devices.h"
#include "../formats/kubeobj.h"
#include "../kube/client.h"
#include "gpu.h"
#include "podresources.h"
#include "sampler.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_pods {
    struct gs_pods_opts o;
    struct gs_sampler *s;
    struct gs_kube_client *kc;
    pthread_mutex_t mu;
    int n; /* under mu */
    struct gs_pod_dev pods[GS_AGENT_MAX_PODS];
    struct gs_pod_dev next[GS_AGENT_MAX_PODS]; /* refresh's scratch (the loop's thread) */
    struct gs_podres pr[GS_AGENT_MAX_PODS];    /* likewise */
    uint64_t corrections;                      /* under mu */
    /* pods Allocate gave devices to, by UID (or namespace/name) and resource: a ring, under
     * mu */
    char given[GS_AGENT_MAX_PODS][320];
    int ngiven;
};

struct gs_pods *gs_pods_new(const struct gs_pods_opts *o, struct gs_sampler *s,
                            struct gs_kube_client *kc)
{
    struct gs_pods *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->o = *o;
    p->s = s;
    p->kc = kc;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void gs_pods_free(struct gs_pods *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int gs_pods_devices(const char *ann, int *gpu, int *mig_start, int cap)
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

/* A pod object's namespace, name and gpusched.io/devices annotation (each NULL when absent). */
static const char *pod_devices(const json_t *pod, const char **ns, const char **name)
{
    const json_t *md = json_object_get(pod, "metadata");
    *ns = json_string_value(json_object_get(md, "namespace"));
    *name = json_string_value(json_object_get(md, "name"));
    return json_string_value(
        json_object_get(json_object_get(md, "annotations"), GS_DEVICES_ANNOTATION));
}

static bool same_pod(const struct gs_pod_dev *p, const char *ns, const char *name)
{
    return !strcmp(p->ns, ns ? ns : "") && !strcmp(p->name, name ? name : "");
}

/* Pods on this node and the devices they hold, from their gpusched.io/devices annotation;
 * pods already in pods[0..n) (from the kubelet's pod-resources) are left as they are.
 * Returns the new count. */
static int read_pods_json(const json_t *items, struct gs_pod_dev *pods, int n)
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
            if (same_pod(&pods[j], ns, name))
                snprintf(pods[j].uid, sizeof(pods[j].uid), "%s", uid);
        if (!ann)
            ann = json_string_value(json_object_get(it, "devices")); /* pods file */
        const char *phase =
            json_string_value(json_object_get(json_object_get(it, "status"), "phase"));
        if (!ann || (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))))
            continue;
        int g[16], st[16];
        int k = gs_pods_devices(ann, g, st, 16);
        const json_t *c0 =
            json_array_get(json_object_get(json_object_get(it, "spec"), "containers"), 0);
        const char *cn = json_string_value(json_object_get(c0, "name"));
        bool pending = !phase || strcmp(phase, "Pending") == 0, known = false;
        for (int j = 0; j < n0 && !known; j++)
            known = same_pod(&pods[j], ns, name);
        for (int d = 0; d < k && n < GS_AGENT_MAX_PODS && !known; d++) {
            struct gs_pod_dev *p = &pods[n++];
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
static int read_podresources(struct gs_pods *p, struct gs_pod_dev *pods)
{
    char why[512];
    int n = gs_podres_list(p->o.podres_socket, p->pr, GS_AGENT_MAX_PODS, why, sizeof(why));
    if (n < 0) {
        GS_WARN("agent", "pod-resources: %s", why);
        return -1;
    }
    int out = 0;
    for (int k = 0; k < n && out < GS_AGENT_MAX_PODS; k++) {
        int gpu, start;
        if (gs_sampler_locate(p->s, p->pr[k].device, &gpu, &start))
            continue; /* another resource's device */
        struct gs_pod_dev *d = &pods[out++];
        memset(d, 0, sizeof(*d));
        snprintf(d->ns, sizeof(d->ns), "%s", p->pr[k].ns);
        snprintf(d->name, sizeof(d->name), "%s", p->pr[k].pod);
        snprintf(d->container, sizeof(d->container), "%s", p->pr[k].container);
        d->gpu = gpu;
        d->mig_start = start;
        d->allocated = true;
    }
    return out;
}

/* The devices annotation that says what the kubelet really gave a pod: the truth entries
 * (from pod-resources) in the annotation's own kind ("mig=2:3g.40gb@4", "gpu=0,1",
 * "replica=1", "milli=0:500" keeps its share). Returns false when it cannot be written. */
static bool truth_annotation(struct gs_pods *p, const char *ann, const struct gs_pod_dev *t, int nt,
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
            if (t[k].mig_start < 0 || gs_sampler_profile(p->s, t[k].gpu, t[k].mig_start,
                                                         it->profile, sizeof(it->profile)))
                return false;
            it->start = t[k].mig_start;
        } else if (d.kind == GS_DEVICES_MILLI) {
            it->milli = was.item[0].milli; /* keeps its share */
        }
    }
    return gs_devices_format(&d, out, size) > 0;
}

/* Whether the devices of annotation ann are pod-resources' t[0..n) (or another shape, which is
 * left alone). */
static bool agrees(const char *ann, const struct gs_pod_dev *t, int n)
{
    int g[16], st[16];
    int k = gs_pods_devices(ann, g, st, 16);
    if (n == 0 || k != n)
        return true; /* not allocated yet, or another shape (left alone) */
    for (int j = 0; j < n; j++) {
        bool found = false;
        for (int d = 0; d < k && !found; d++)
            found = g[d] == t[j].gpu && st[d] == t[j].mig_start;
        if (!found)
            return false;
    }
    return true;
}

/* The kubelet, not the scheduler, picks the device among equal ones: the device plugin API
 * names no pod in GetPreferredAllocation, so two pods waiting on one node for the same profile
 * may get each other's slot. Once pod-resources shows what a pod holds, its
 * gpusched.io/devices annotation is made to say so (gpusched's cache, the explain output and
 * the in-use protection of re-carving read it). pods[0..nt) are pod-resources' entries. */
static void correct_annotations(struct gs_pods *p, const json_t *items,
                                const struct gs_pod_dev *pods, int nt)
{
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it)
    {
        const char *ns, *name, *ann = pod_devices(it, &ns, &name);
        if (!ann || !ns || !name)
            continue;
        struct gs_pod_dev t[16];
        int n = 0;
        for (int j = 0; j < nt && n < 16; j++)
            if (!strcmp(pods[j].ns, ns) && !strcmp(pods[j].name, name))
                t[n++] = pods[j];
        char want[256];
        if (agrees(ann, t, n) || !truth_annotation(p, ann, t, n, want, sizeof(want)))
            continue;
        char path[400];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
        json_t *body = gs_kube_annotation_patch(GS_DEVICES_ANNOTATION, want);
        struct gs_error err;
        gs_error_init(&err);
        if (gs_kube_request(p->kc, "PATCH", path, "application/merge-patch+json", body, NULL, NULL,
                            &err)) {
            GS_WARN("agent", "pod %s/%s: devices annotation: %s", ns, name, err.msg);
        } else {
            pthread_mutex_lock(&p->mu);
            p->corrections++;
            pthread_mutex_unlock(&p->mu);
            GS_WARN("agent",
                    "pod %s/%s: devices annotation %s corrected to %s, as the kubelet "
                    "allocated",
                    ns, name, ann, want);
        }
        json_decref(body);
    }
}

/* The API's pods on this node after pod-resources' pods[0..n): the new count, or -1 when the
 * API did not answer. */
static int read_api(struct gs_pods *p, struct gs_pod_dev *pods, int n)
{
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s", p->o.node);
    json_t *list = NULL;
    struct gs_error err;
    gs_error_init(&err);
    int out = -1;
    if (gs_kube_request(p->kc, "GET", path, NULL, NULL, &list, NULL, &err) == 0) {
        out = read_pods_json(json_object_get(list, "items"), pods, n);
        if (p->o.podres_socket && n > 0)
            correct_annotations(p, json_object_get(list, "items"), pods, n);
    } else {
        GS_WARN("agent", "pods on %s: %s", p->o.node, err.msg);
    }
    json_decref(list);
    return out;
}

void gs_pods_refresh(struct gs_pods *p)
{
    struct gs_pod_dev *pods = p->next;
    int n = 0;
    bool any = false;
    if (p->o.podres_socket) {
        n = read_podresources(p, pods);
        any = n >= 0;
        if (n < 0)
            n = 0;
    }
    if (p->kc && p->o.node) {
        int m = read_api(p, pods, n);
        any |= m >= 0;
        n = m >= 0 ? m : n;
    } else if (p->o.pods_file) {
        json_t *list = json_load_file(p->o.pods_file, 0, NULL);
        if (list) {
            n = read_pods_json(json_is_array(list) ? list : json_object_get(list, "items"), pods,
                               n);
            any = true;
        }
        json_decref(list);
    }
    if (!any)
        return; /* nothing answered: keep what we knew */
    pthread_mutex_lock(&p->mu);
    memcpy(p->pods, pods, sizeof(pods[0]) * (size_t)n);
    p->n = n;
    pthread_mutex_unlock(&p->mu);
}

int gs_pods_read(struct gs_pods *p, struct gs_pod_dev *out, int cap)
{
    pthread_mutex_lock(&p->mu);
    int n = p->n < cap ? p->n : cap;
    memcpy(out, p->pods, sizeof(out[0]) * (size_t)n);
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* ---------- which pod the kubelet admits ---------- */

/* A pod bound here, not allocated yet, with the devices the scheduler recorded. */
struct cand {
    char key[320]; /* its UID, or namespace/name */
    char what[200];
    double t_sched, t_create;
    int order; /* in the list */
    struct gs_devices d;
};

#define MAX_CANDS           64
#define MAX_KUBELET_ENTRIES 1024

/* The kubelet's own view through pod-resources, when it answers: a candidate holding a device
 * of resource is allocated already (dropped); a candidate the kubelet manages that holds no
 * device is the pod it admits now (it adds a pod to its manager just before admitting it, and
 * the next one only after), and then the only candidate kept. Returns the count left. */
static int kubelet_view(struct gs_pods *p, const char *resource, struct cand *c, int n)
{
    struct gs_podres *pr = p->o.podres_socket ? malloc(sizeof(*pr) * MAX_KUBELET_ENTRIES) : NULL;
    char why[512];
    int np = pr ? gs_podres_list_pods(p->o.podres_socket, pr, MAX_KUBELET_ENTRIES, why, sizeof(why))
                : -1;
    bool admitting[MAX_CANDS] = {false};
    int kept = 0, nadmit = 0;
    for (int k = 0; k < n && k < MAX_CANDS && np >= 0; k++) {
        bool held = false;
        for (int j = 0; j < np && !held; j++) {
            char who[200];
            snprintf(who, sizeof(who), "%.63s/%.127s", pr[j].ns, pr[j].pod);
            if (strcmp(who, c[k].what) != 0)
                continue;
            held = strcmp(pr[j].resource, resource) == 0 && pr[j].device[0];
            admitting[k] |= !pr[j].device[0];
        }
        if (held)
            continue;
        nadmit += admitting[k];
        admitting[kept] = admitting[k];
        c[kept++] = c[k];
    }
    free(pr);
    if (np < 0)
        return n; /* no answer: the API's view alone */
    if (nadmit == 0)
        return kept;
    int m = 0;
    for (int k = 0; k < kept; k++)
        if (admitting[k])
            c[m++] = c[k];
    return m;
}

/* Whether the recorded devices d answer a container of resource asking size devices. */
static bool fits_request(const struct gs_devices *d, const char *resource, int size)
{
    if (strcmp(resource, "gpusched.io/gpu-milli") == 0)
        return d->kind == GS_DEVICES_MILLI && d->n == 1 && d->item[0].milli == size;
    if (d->n != size || d->kind == GS_DEVICES_MILLI)
        return false;
    if (strncmp(resource, "nvidia.com/mig-", 15) != 0)
        return strcmp(resource, "nvidia.com/gpu") == 0; /* whole, replicas, or MIG single */
    if (d->kind != GS_DEVICES_MIG)
        return false;
    for (int k = 0; k < d->n; k++) {
        char want[96];
        snprintf(want, sizeof(want), "%s", d->item[k].profile);
        for (char *c = want; *c; c++)
            if (*c == '+')
                *c = '.'; /* 1g.10gb+me is advertised as nvidia.com/mig-1g.10gb.me */
        if (strcmp(resource + 15, want) != 0)
            return false;
    }
    return true;
}

/* Whether a container of pod asks exactly size of resource (its limits, which extended
 * resources must give): 1, 0, or -1 when the pod says nothing of its containers (a pods
 * file): its recorded devices alone then tell. */
static int asks(const json_t *pod, const char *resource, int size)
{
    const json_t *cs = json_object_get(json_object_get(pod, "spec"), "containers");
    if (!json_is_array(cs))
        return -1;
    size_t i;
    const json_t *c;
    json_array_foreach(cs, i, c)
    {
        const json_t *v =
            json_object_get(json_object_get(json_object_get(c, "resources"), "limits"), resource);
        const char *q = json_string_value(v);
        char *end = NULL;
        long n = q ? strtol(q, &end, 10) : json_is_integer(v) ? (long)json_integer_value(v) : -1;
        if ((!q || (end != q && !*end)) && n == size)
            return 1;
    }
    return 0;
}

/* A pod's time from its PodScheduled condition (the binding), else 0. */
static double scheduled_at(const json_t *pod)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *t = json_string_value(json_object_get(c, "lastTransitionTime"));
        double v;
        if (type && t && strcmp(type, "PodScheduled") == 0 && gs_kube_parse_time(t, &v) == 0)
            return v;
    }
    return 0;
}

static bool was_given(const struct gs_pods *p, const char *key, const char *resource)
{
    char k[320];
    snprintf(k, sizeof(k), "%.200s %.100s", key, resource);
    for (int j = 0; j < p->ngiven && j < GS_AGENT_MAX_PODS; j++)
        if (strcmp(p->given[j], k) == 0)
            return true;
    return false;
}

/* The pods on this node whose recorded devices answer a container of resource asking size,
 * that pod-resources does not list and Allocate gave nothing yet: read from the API now (or
 * the pods file), into c (room for cap), the first bound first. Returns how many. */
static int candidates(struct gs_pods *p, const char *resource, int size, struct cand *c, int cap)
{
    json_t *list = NULL;
    if (p->kc && p->o.node) {
        char path[400];
        snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s", p->o.node);
        struct gs_error err;
        gs_error_init(&err);
        if (gs_kube_request(p->kc, "GET", path, NULL, NULL, &list, NULL, &err))
            GS_WARN("agent", "pods on %s: %s", p->o.node, err.msg);
    } else if (p->o.pods_file) {
        list = json_load_file(p->o.pods_file, 0, NULL);
    }
    const json_t *items = json_is_array(list) ? list : json_object_get(list, "items");
    int n = 0;
    size_t i;
    const json_t *it;
    pthread_mutex_lock(&p->mu);
    json_array_foreach(items, i, it)
    {
        const char *ns, *name, *ann = pod_devices(it, &ns, &name);
        const json_t *md = json_object_get(it, "metadata");
        const char *uid = json_string_value(json_object_get(md, "uid"));
        const char *phase =
            json_string_value(json_object_get(json_object_get(it, "status"), "phase"));
        if (!ann)
            ann = json_string_value(json_object_get(it, "devices")); /* pods file */
        if (!ann || n >= cap || (phase && strcmp(phase, "Pending") != 0))
            continue;
        struct cand *x = &c[n];
        int asked = asks(it, resource, size);
        if (asked == 0 || gs_devices_parse(ann, strlen(ann), &x->d) ||
            !fits_request(&x->d, resource, size))
            continue;
        bool listed = false; /* pod-resources lists it: allocated already */
        for (int k = 0; k < p->n && !listed; k++)
            listed = p->pods[k].allocated && same_pod(&p->pods[k], ns, name);
        snprintf(x->key, sizeof(x->key), "%.200s", uid ? uid : "");
        if (!uid)
            snprintf(x->key, sizeof(x->key), "%.63s/%.127s", ns ? ns : "", name ? name : "");
        if (listed || was_given(p, x->key, resource))
            continue;
        snprintf(x->what, sizeof(x->what), "%.63s/%.127s", ns ? ns : "", name ? name : "");
        const char *ct = json_string_value(json_object_get(md, "creationTimestamp"));
        x->t_sched = scheduled_at(it);
        if (!ct || gs_kube_parse_time(ct, &x->t_create))
            x->t_create = 0;
        x->order = n++;
    }
    pthread_mutex_unlock(&p->mu);
    json_decref(list);
    n = kubelet_view(p, resource, c, n);
    /* the first bound first; a batch as the kubelet sorts it (creation), then the list's order
     * (namespace and name) */
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0; b--) {
            struct cand *l = &c[b - 1], *r = &c[b];
            bool swap = r->t_sched != l->t_sched     ? r->t_sched < l->t_sched
                        : r->t_create != l->t_create ? r->t_create < l->t_create
                                                     : r->order < l->order;
            if (!swap)
                break;
            struct cand t = *l;
            *l = *r;
            *r = t;
        }
    return n;
}

/* The UUIDs of recorded devices d into uuids (room for cap); how many (-1: one is not on
 * these GPUs now). */
static int uuids_of(struct gs_pods *p, const struct gs_devices *d, char uuids[][96], int cap)
{
    int n = 0;
    for (int k = 0; k < d->n && n < cap; k++)
        if (gs_sampler_uuid(p->s, d->item[k].gpu, d->item[k].start, uuids[n++]))
            return -1;
    return n;
}

int gs_pods_pick(struct gs_pods *p, const char *resource, int size, char uuids[][96], int cap)
{
    struct cand *c = malloc(sizeof(*c) * MAX_CANDS);
    int n = c ? candidates(p, resource, size, c, MAX_CANDS) : 0, got = 0;
    for (int k = 0; k < n && got <= 0; k++) {
        got = uuids_of(p, &c[k].d, uuids, cap);
        if (got > 0)
            GS_DEBUG("agent", "%s x%d: the kubelet admits %s (of %d waiting): %s", resource, size,
                     c[k].what, n, uuids[0]);
    }
    free(c);
    return got > 0 ? got : 0;
}

void gs_pods_allocated(struct gs_pods *p, const char *resource, int size, char uuids[][96], int n)
{
    struct cand *c = malloc(sizeof(*c) * MAX_CANDS);
    int nc = c ? candidates(p, resource, size, c, MAX_CANDS) : 0, which = -1;
    char rec[GS_DEVICES_MAX][96];
    for (int k = 0; k < nc && which < 0; k++) {
        int m = uuids_of(p, &c[k].d, rec, GS_DEVICES_MAX);
        bool same = m == n;
        for (int j = 0; j < m && same; j++) {
            bool found = false;
            for (int i = 0; i < n && !found; i++)
                found = strcmp(rec[j], uuids[i]) == 0;
            same = found;
        }
        if (same)
            which = k;
    }
    if (which < 0 && nc > 0) {
        which = 0;
        GS_WARN("agent",
                "%s: the kubelet gave %s other devices than the scheduler recorded (%s first); "
                "its annotation will be corrected",
                resource, c[0].what, n > 0 ? uuids[0] : "none");
    }
    if (which >= 0) {
        pthread_mutex_lock(&p->mu);
        int slot = p->ngiven++ % GS_AGENT_MAX_PODS;
        snprintf(p->given[slot], sizeof(p->given[slot]), "%.200s %.100s", c[which].key, resource);
        pthread_mutex_unlock(&p->mu);
        GS_INFO("agent", "%s: allocated to %s: %s%s", resource, c[which].what,
                n > 0 ? uuids[0] : "", n > 1 ? ", ..." : "");
    }
    free(c);
}

uint64_t gs_pods_corrections(struct gs_pods *p)
{
    pthread_mutex_lock(&p->mu);
    uint64_t n = p->corrections;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int gs_pods_use(struct gs_pods *p, char (*uuid)[96], char (*pod)[200], int cap)
{
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (int k = 0; k < p->n && n < cap; k++) {
        const struct gs_pod_dev *d = &p->pods[k];
        if (gs_sampler_uuid(p->s, d->gpu, d->mig_start, uuid[n]))
            continue; /* an instance that is not there (yet) */
        snprintf(pod[n], 200, "%s/%s", d->ns, d->name);
        n++;
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}
