/* drapub.c - the DRA driver's ResourceSlices, built from the backend and converged through the
 * API (see drapub.h). */
#include "drapub.h"

#include "../base/error.h"
#include "../base/log.h"
#include "../formats/draslice.h"
#include "../kube/client.h"
#include "draclaims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_drapub {
    char node[GS_DRA_NAME_MAX];
    char node_uid[GS_DRA_UID_MAX];
    bool dynamic_mig;
    struct gs_kube_client *kc;
    bool healthy[GS_DRASLICE_MAX_GPUS]; /* by backend position, as the agent last said */
    json_t *built;                      /* the slices last built, generation 0 */
    json_t *written;    /* the same, as last written to the API; NULL: converge in full */
    json_t *names;      /* the names of the slices written */
    int64_t generation; /* the pool's generation last written */
};

struct gs_drapub *gs_drapub_new(const char *node, bool dynamic_mig, struct gs_kube_client *kc)
{
    struct gs_drapub *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    snprintf(p->node, sizeof(p->node), "%s", node);
    p->dynamic_mig = dynamic_mig;
    p->kc = kc;
    for (int i = 0; i < GS_DRASLICE_MAX_GPUS; i++)
        p->healthy[i] = true;
    return p;
}

void gs_drapub_free(struct gs_drapub *p)
{
    if (!p)
        return;
    json_decref(p->built);
    json_decref(p->written);
    json_decref(p->names);
    free(p);
}

void gs_drapub_health(struct gs_drapub *p, const bool *healthy, int n)
{
    for (int i = 0; i < GS_DRASLICE_MAX_GPUS; i++)
        p->healthy[i] = !healthy || i >= n || healthy[i];
}

json_t *gs_drapub_slices(struct gs_drapub *p)
{
    return json_incref(p->built);
}

/* A GPU's links as its device's attributes (draslice.h): NUMA node, the PCIe root complex and
 * the bridge above the GPU's port (its switch) from the PCIe path, the NVLink peers. */
static void slice_links(const struct gs_gpu_info *info, struct gs_draslice_gpu *g)
{
    g->numa_ok = info->numa_ok;
    g->numa = info->numa;
    const char *part[16];
    int len[16], n = 0;
    for (const char *c = info->pci_path; *c && n < 16;) {
        const char *e = strchr(c, '/');
        part[n] = c;
        len[n++] = e ? (int)(e - c) : (int)strlen(c);
        c = e ? e + 1 : c + strlen(c);
    }
    if (n >= 2 && len[0] < (int)sizeof(g->pcie_root))
        snprintf(g->pcie_root, sizeof(g->pcie_root), "%.*s", len[0], part[0]);
    if (n >= 4 && len[n - 3] < (int)sizeof(g->pcie_switch))
        snprintf(g->pcie_switch, sizeof(g->pcie_switch), "%.*s", len[n - 3], part[n - 3]);
    for (int j = 0; j < GS_AGENT_MAX_GPUS && j < 32; j++)
        if (info->nvlink[j] && j != info->index) {
            g->nvlink_peers |= 1u << j;
            g->nvlinks = info->nvlink[j] > g->nvlinks ? info->nvlink[j] : g->nvlinks;
        }
}

/* The node as the backend has it now, dynamic instances marked. */
static void node_now(struct gs_drapub *p, struct gs_gpu_backend *b,
                     const struct gs_draclaims *claims, struct gs_draslice_node *n)
{
    memset(n, 0, sizeof(*n));
    n->node = p->node;
    n->node_uid = p->node_uid;
    n->dynamic_mig = p->dynamic_mig;
    int count = b->ops->count(b);
    for (int i = 0; i < count && n->ngpus < GS_DRASLICE_MAX_GPUS; i++) {
        struct gs_gpu_info info;
        if (b->ops->info(b, i, &info))
            continue;
        struct gs_draslice_gpu *g = &n->gpus[n->ngpus++];
        g->index = info.index;
        snprintf(g->uuid, sizeof(g->uuid), "%s", info.uuid);
        g->model = info.model;
        snprintf(g->product, sizeof(g->product), "%s", info.name);
        g->mem_mib = info.mem_mib;
        g->mig_enabled = info.mig_enabled;
        g->healthy = p->healthy[i];
        slice_links(&info, g);
        struct gs_mig_inst inst[GS_AGENT_MAX_INST];
        int k = info.mig_enabled ? b->ops->mig_list(b, i, inst, GS_AGENT_MAX_INST) : 0;
        for (int q = 0; q < k && g->ninst < GS_DRASLICE_MAX_INST; q++) {
            int pi = gs_gpu_profile_index(info.model, inst[q].profile_id);
            if (pi < 0)
                continue;
            struct gs_draslice_inst *s = &g->inst[g->ninst++];
            s->profile = (uint8_t)pi;
            s->start = (uint8_t)inst[q].start;
            snprintf(s->uuid, sizeof(s->uuid), "%s", inst[q].uuid);
            s->dynamic = gs_draclaims_created(claims, inst[q].uuid);
        }
    }
}

static int collect(const json_t *item, void *user)
{
    json_t *items = user;
    if (!item) { /* the list started again */
        json_array_clear(items);
        return 0;
    }
    return json_array_append(items, (json_t *)item) ? GS_ENOMEM : 0;
}

static int names_equal(const json_t *a, const json_t *listed)
{
    if (!a || json_array_size(a) != json_array_size(listed))
        return 0;
    size_t k;
    json_t *x;
    json_array_foreach(listed, k, x)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(x, "metadata"), "name"));
        bool found = false;
        for (size_t j = 0; j < json_array_size(a) && !found; j++)
            found = name && strcmp(json_string_value(json_array_get(a, j)), name) == 0;
        if (!found)
            return 0;
    }
    return 1;
}

/* The Node's uid, which the slices' ownerReference names. 0, or the API's error. */
static int read_node_uid(struct gs_drapub *p, struct gs_error *err)
{
    char path[400];
    json_t *node = NULL;
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", p->node);
    int rc = gs_kube_request(p->kc, "GET", path, NULL, NULL, &node, NULL, err);
    const char *uid =
        rc ? NULL : json_string_value(json_object_get(json_object_get(node, "metadata"), "uid"));
    if (uid)
        snprintf(p->node_uid, sizeof(p->node_uid), "%s", uid);
    json_decref(node);
    return rc ? gs_error_prefix(err, "node %s", p->node) : 0;
}

/* Write want (generation gen) over the listed slices: the first ones updated, the rest
 * created, the listed ones left over deleted. The names written into names. */
static int write_slices(struct gs_drapub *p, json_t *want, const json_t *listed, int64_t gen,
                        json_t *names, struct gs_error *err)
{
    char path[700];
    int rc = 0;
    size_t k;
    json_t *x;
    json_array_foreach(want, k, x)
    {
        if (rc)
            break;
        json_object_set_new(json_object_get(json_object_get(x, "spec"), "pool"), "generation",
                            json_integer(gen));
        json_t *reply = NULL;
        if (k < json_array_size(listed)) {
            json_t *old = json_object_get(json_array_get(listed, k), "metadata");
            const char *name = json_string_value(json_object_get(old, "name"));
            json_t *meta = json_object_get(x, "metadata");
            json_object_set(meta, "name", json_object_get(old, "name"));
            json_object_set(meta, "resourceVersion", json_object_get(old, "resourceVersion"));
            snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/resourceslices/%s",
                     name ? name : "");
            rc = gs_kube_request(p->kc, "PUT", path, "application/json", x, &reply, NULL, err);
        } else {
            rc = gs_kube_request(p->kc, "POST", "/apis/resource.k8s.io/v1/resourceslices",
                                 "application/json", x, &reply, NULL, err);
        }
        json_t *name = json_object_get(json_object_get(reply, "metadata"), "name");
        if (!rc && name)
            json_array_append(names, name);
        json_decref(reply);
    }
    for (k = json_array_size(want); !rc && k < json_array_size(listed); k++) {
        const char *name = json_string_value(
            json_object_get(json_object_get(json_array_get(listed, k), "metadata"), "name"));
        snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/resourceslices/%s",
                 name ? name : "");
        rc = gs_kube_request(p->kc, "DELETE", path, NULL, NULL, NULL, NULL, err);
        if (rc == GS_ENOTFOUND)
            rc = 0;
    }
    return rc;
}

/* Converge the API's slices to p->built. 1 when the node's uid was read (build again). */
static int converge(struct gs_drapub *p, struct gs_error *err)
{
    if (!p->node_uid[0]) {
        int rc = read_node_uid(p, err);
        return rc ? rc : 1; /* the ownerReference needs the uid: build again */
    }
    char path[700];
    snprintf(path, sizeof(path),
             "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%%3D%s%%2C"
             "spec.nodeName%%3D%s",
             GS_DRA_DRIVER, p->node);
    json_t *listed = json_array();
    if (!listed)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    int rc = gs_kube_list(p->kc, path, collect, listed, NULL, 0, err);
    if (rc) {
        json_decref(listed);
        return gs_error_prefix(err, "listing resource slices");
    }
    int64_t maxgen = p->generation;
    bool same_gen = true;
    size_t k;
    json_t *x;
    json_array_foreach(listed, k, x)
    {
        json_int_t g = json_integer_value(
            json_object_get(json_object_get(json_object_get(x, "spec"), "pool"), "generation"));
        if (g > maxgen)
            maxgen = g;
        same_gen &= g == p->generation;
    }
    if (p->written && json_equal(p->written, p->built) && same_gen &&
        names_equal(p->names, listed)) {
        json_decref(listed);
        return 0;
    }
    int64_t gen = maxgen + 1;
    json_t *want = json_deep_copy(p->built), *names = json_array();
    rc = want && names ? write_slices(p, want, listed, gen, names, err)
                       : gs_error_set(err, GS_ENOMEM, "out of memory");
    json_decref(listed);
    json_decref(want);
    if (rc) {
        json_decref(names);
        json_decref(p->written);
        p->written = NULL; /* converge in full next time */
        return gs_error_prefix(err, "resource slices of node %s", p->node);
    }
    GS_INFO("dra", "node %s: %zu resource slice%s, pool generation %lld", p->node,
            json_array_size(names), json_array_size(names) == 1 ? "" : "s", (long long)gen);
    json_decref(p->written);
    p->written = json_incref(p->built);
    json_decref(p->names);
    p->names = names;
    p->generation = gen;
    return 0;
}

int gs_drapub_sync(struct gs_drapub *p, struct gs_gpu_backend *b, const struct gs_draclaims *claims,
                   struct gs_error *err)
{
    for (int round = 0; round < 2; round++) {
        struct gs_draslice_node *n = malloc(sizeof(*n));
        if (!n)
            return gs_error_set(err, GS_ENOMEM, "out of memory");
        node_now(p, b, claims, n);
        json_t *s = gs_draslice_build(n, err);
        free(n);
        if (!s)
            return err->code;
        json_decref(p->built);
        p->built = s;
        if (!p->kc)
            return 0;
        int rc = converge(p, err);
        if (rc <= 0)
            return rc;
    }
    return 0;
}
