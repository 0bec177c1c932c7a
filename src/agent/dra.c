/* dra.c - the node agent's DRA driver gpu.gpusched.io, its service side (see dra.h): the
 * kubelet's Registration and DRA v1 services, served by the agent's one gRPC server
 * (grpcserver.c), and prepare and unprepare on the GPU backend. What a prepare leaves is kept
 * by its owners: the CDI specs (cdi.c), the prepared claims and their checkpoint
 * (draclaims.c), the ResourceSlices (drapub.c).
 *
 * d->mu serialises every call into those owners: a prepare or unprepare (the gRPC thread), a
 * sync of the slices (the agent's loop, and the gRPC thread after a call that changed a GPU),
 * the in-use list (the agent's loop). gs__dra_answer takes the request's bytes and gives the
 * answer's, so the unit test calls it without gRPC. */
#include "dra.h"

#include "../base/error.h"
#include "../base/log.h"
#include "../kube/client.h"
#include "cdi.h"
#include "dra.pb-c.h"
#include "draclaims.h"
#include "drapub.h"
#include "files.h"
#include "grpcserver.h"
#include "pluginregistration.pb-c.h"

#include <grpc/status.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PB(x)      K8s__Io__Kubelet__Pkg__Apis__Dra__V1__##x
#define pb_(x)     k8s__io__kubelet__pkg__apis__dra__v1__##x
#define PB_INIT(x) K8S__IO__KUBELET__PKG__APIS__DRA__V1__##x##__INIT

#define PATH_SIZE 600

struct gs_dra {
    char node[GS_DRA_NAME_MAX];
    char dir[PATH_SIZE];      /* <plugins>/gpu.gpusched.io */
    char dra_sock[PATH_SIZE]; /* <dir>/dra.sock */
    char reg_sock[PATH_SIZE]; /* <registry>/gpu.gpusched.io-reg.sock */
    char cdi_dir[PATH_SIZE];
    bool dynamic_mig;
    gs_dra_claim_fn get_claim;
    void *claim_user;
    struct gs_gpu_backend *b;
    struct gs_kube_client *kc;
    pthread_mutex_t mu;
    struct gs_draclaims *claims; /* under mu */
    struct gs_drapub *pub;       /* under mu */
    bool dirty;                  /* under mu: a GPU changed, sync again */
    struct gs_grpc_service svc[2];
    struct gs_grpcd *server;
};

/* Backend position of the GPU with index x, or -1. */
static int gpu_pos(struct gs_dra *d, int x, struct gs_gpu_info *info)
{
    int n = d->b->ops->count(d->b);
    for (int i = 0; i < n && i < GS_AGENT_MAX_GPUS; i++)
        if (d->b->ops->info(d->b, i, info) == 0 && info->index == x)
            return i;
    return -1;
}

/* ---------- prepare and unprepare ---------- */

/* Undo what a failed prepare created. */
static void rollback(struct gs_dra *d, struct gs_dra_claim *c)
{
    struct gs_gpu_info info;
    for (int j = 0; j < c->ndev; j++) {
        int pos = c->dev[j].created ? gpu_pos(d, c->dev[j].gpu, &info) : -1;
        if (pos >= 0 && d->b->ops->mig_destroy(d->b, pos, c->dev[j].gi))
            GS_WARN("dra", "claim %s: GPU %d: instance %u could not be destroyed", c->uid,
                    c->dev[j].gpu, (unsigned)c->dev[j].gi);
    }
}

/* One result: the device, on this node's GPUs. Fills p (request set by the caller). */
static int prepare_device(struct gs_dra *d, struct gs_dra_claim *c, const char *device,
                          struct gs_dra_prepdev *p, struct gs_error *err)
{
    struct gs_dra_devref ref;
    int rc = gs_draslice_parse_name(device, &ref, err);
    if (rc)
        return rc;
    struct gs_gpu_info info;
    int pos = gpu_pos(d, ref.gpu, &info);
    if (pos < 0)
        return gs_error_set(err, GS_ENOTFOUND, "device %s: no GPU %d on node %s", device, ref.gpu,
                            d->node);
    snprintf(p->device, sizeof(p->device), "%s", device);
    p->gpu = ref.gpu;
    struct gs_mig_inst inst[GS_AGENT_MAX_INST];
    int ninst = info.mig_enabled ? d->b->ops->mig_list(d->b, pos, inst, GS_AGENT_MAX_INST) : 0;
    if (ninst < 0)
        return gs_error_set(err, GS_EIO, "GPU %d: its MIG instances cannot be read", ref.gpu);
    if (ref.kind == GS_DRA_GPU) {
        if (info.mig_enabled && ninst > 0)
            return gs_error_set(err, GS_ENOFIT,
                                "device %s: GPU %d is in MIG mode with %d "
                                "instance%s",
                                device, ref.gpu, ninst, ninst == 1 ? "" : "s");
        if (info.mig_enabled && (rc = d->b->ops->mig_set_mode(d->b, pos, false)))
            return gs_error_set(err, rc,
                                "device %s: GPU %d: MIG mode cannot be switched off "
                                "(is it in use?)",
                                device, ref.gpu);
        d->dirty |= info.mig_enabled;
        snprintf(p->uuid, sizeof(p->uuid), "%s", info.uuid);
        return 0;
    }
    int prof = gs_draslice_find_profile(info.model, ref.profile);
    if (prof < 0)
        return gs_error_set(err, GS_EINVAL, "device %s: GPU %d (%s) has no MIG profile '%s'",
                            device, ref.gpu, info.name, ref.profile);
    const struct gs_mig_profile *mp = &gs_catalog_get(info.model)->profiles[prof];
    for (int q = 0; q < ninst; q++) {
        if (inst[q].profile_id != mp->id || (int)inst[q].start != ref.start)
            continue;
        if (gs_draclaims_held(d->claims, inst[q].uuid))
            return gs_error_set(err, GS_ENOFIT,
                                "device %s: instance %s is held by another "
                                "claim",
                                device, inst[q].uuid);
        snprintf(p->uuid, sizeof(p->uuid), "%s", inst[q].uuid);
        p->gi = inst[q].gi_id;
        p->created = ref.kind == GS_DRA_PART; /* adopted: made by a prepare that did not finish */
        return 0;
    }
    if (ref.kind == GS_DRA_MIG)
        return gs_error_set(err, GS_ENOTFOUND, "device %s: GPU %d has no %s instance at %d", device,
                            ref.gpu, mp->name, ref.start);
    if (!d->dynamic_mig)
        return gs_error_set(err, GS_EINVAL, "device %s: dynamic MIG is off (--dra-dynamic-mig)",
                            device);
    if (!(mp->start_mask & (1u << ref.start)))
        return gs_error_set(err, GS_EINVAL, "device %s: %s cannot start at %d", device, mp->name,
                            ref.start);
    if (!info.mig_enabled) {
        if ((rc = d->b->ops->mig_set_mode(d->b, pos, true)) || d->b->ops->info(d->b, pos, &info) ||
            !info.mig_enabled)
            return gs_error_set(err, rc ? rc : GS_EIO,
                                "device %s: GPU %d: MIG mode cannot be switched on%s", device,
                                ref.gpu, info.mig_pending ? " (it waits for a GPU reset)" : "");
        d->dirty = true;
    }
    struct gs_mig_inst made;
    if ((rc = d->b->ops->mig_create(d->b, pos, mp->id, (uint32_t)ref.start, &made)))
        return gs_error_set(err, rc,
                            "device %s: GPU %d: a %s instance at %d cannot be created "
                            "(%s)",
                            device, ref.gpu, mp->name, ref.start, gs_error_name(rc));
    snprintf(p->uuid, sizeof(p->uuid), "%s", made.uuid);
    p->gi = made.gi_id;
    p->created = true;
    d->dirty = true;
    GS_INFO("dra", "claim %s/%s: created %s on GPU %d (%s)", c->ns, c->name, mp->name, ref.gpu,
            made.uuid);
    return 0;
}

static int claim_from_api(struct gs_dra *d, const char *ns, const char *name, json_t **out,
                          struct gs_error *err)
{
    if (d->get_claim)
        return d->get_claim(d->claim_user, ns, name, out, err);
    if (!d->kc)
        return gs_error_set(err, GS_ENOTFOUND, "no cluster to read the claim from");
    char path[512];
    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", ns,
             name);
    return gs_kube_request(d->kc, "GET", path, NULL, NULL, out, NULL, err);
}

/* The claim's CDI spec: its devices with their UUIDs. */
static int write_cdi(struct gs_dra *d, const struct gs_dra_claim *c, struct gs_error *err)
{
    const char *devs[GS_DRA_MAX_RESULTS], *uuids[GS_DRA_MAX_RESULTS];
    for (int j = 0; j < c->ndev; j++) {
        devs[j] = c->dev[j].device;
        uuids[j] = c->dev[j].uuid;
    }
    return gs_cdi_write(d->cdi_dir, c->uid, devs, uuids, c->ndev, err);
}

/* Prepare one claim (not yet prepared) into c, which the caller then keeps. */
static int prepare_claim(struct gs_dra *d, struct gs_dra_claim *c, struct gs_error *err)
{
    json_t *obj = NULL;
    int rc = claim_from_api(d, c->ns, c->name, &obj, err);
    if (rc) {
        gs_error_prefix(err, "ResourceClaim %s/%s", c->ns, c->name);
        goto out;
    }
    const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
    if (!uid || strcmp(uid, c->uid) != 0) {
        rc = gs_error_set(err, GS_EINVAL,
                          "ResourceClaim %s/%s has uid %s, not %s (deleted and "
                          "created again?)",
                          c->ns, c->name, uid ? uid : "(none)", c->uid);
        goto out;
    }
    json_t *alloc = json_object_get(json_object_get(obj, "status"), "allocation");
    json_t *results = json_object_get(json_object_get(alloc, "devices"), "results");
    if (!alloc || !json_is_array(results)) {
        rc = gs_error_set(err, GS_EINVAL, "ResourceClaim %s/%s is not allocated", c->ns, c->name);
        goto out;
    }
    if (json_array_size(results) > GS_DRA_MAX_RESULTS) {
        rc = gs_error_set(err, GS_EINVAL, "ResourceClaim %s/%s: %zu results, at most %d", c->ns,
                          c->name, json_array_size(results), GS_DRA_MAX_RESULTS);
        goto out;
    }
    size_t k;
    json_t *r;
    json_array_foreach(results, k, r)
    {
        const char *drv = json_string_value(json_object_get(r, "driver"));
        if (!drv || strcmp(drv, GS_DRA_DRIVER) != 0)
            continue;
        const char *pool = json_string_value(json_object_get(r, "pool"));
        const char *dev = json_string_value(json_object_get(r, "device"));
        const char *req = json_string_value(json_object_get(r, "request"));
        if (!pool || !dev || !req || strlen(req) >= GS_DRA_REQ_MAX) {
            rc = gs_error_set(err, GS_EINVAL,
                              "ResourceClaim %s/%s: results[%zu]: no pool, "
                              "device or request",
                              c->ns, c->name, k);
            goto undo;
        }
        if (strcmp(pool, d->node) != 0) {
            rc = gs_error_set(err, GS_EINVAL,
                              "ResourceClaim %s/%s: device %s is of pool %s, "
                              "not of this node's (%s)",
                              c->ns, c->name, dev, pool, d->node);
            goto undo;
        }
        struct gs_dra_prepdev *p = &c->dev[c->ndev];
        memset(p, 0, sizeof(*p));
        snprintf(p->request, sizeof(p->request), "%s", req);
        if ((rc = prepare_device(d, c, dev, p, err))) {
            gs_error_prefix(err, "ResourceClaim %s/%s", c->ns, c->name);
            goto undo;
        }
        c->ndev++;
    }
    if ((rc = write_cdi(d, c, err)))
        goto undo;
    goto out;
undo:
    rollback(d, c);
    c->ndev = 0;
out:
    json_decref(obj);
    return rc;
}

static int unprepare_claim(struct gs_dra *d, const char *uid, struct gs_error *err)
{
    const struct gs_dra_claim *c = gs_draclaims_find(d->claims, uid);
    if (!c) {
        gs_cdi_remove(d->cdi_dir, uid);
        return 0;
    }
    struct gs_gpu_info info;
    for (int j = c->ndev - 1; j >= 0; j--) {
        const struct gs_dra_prepdev *p = &c->dev[j];
        int pos = p->created ? gpu_pos(d, p->gpu, &info) : -1;
        if (pos < 0)
            continue;
        int rc = d->b->ops->mig_destroy(d->b, pos, p->gi);
        if (rc && rc != GS_ENOTFOUND) {
            gs_draclaims_truncate(d->claims, uid, j + 1, err); /* what is destroyed stays so */
            return gs_error_set(err, rc,
                                "GPU %d: instance %s cannot be destroyed (%s: still "
                                "in use?)",
                                p->gpu, p->uuid, gs_error_name(rc));
        }
        d->dirty = true;
        GS_INFO("dra", "claim %s/%s: destroyed %s on GPU %d", c->ns, c->name, p->uuid, p->gpu);
    }
    gs_cdi_remove(d->cdi_dir, uid);
    return gs_draclaims_remove(d->claims, uid, err);
}

/* ---------- answers ---------- */

/* The claims of a request: bounded, each field within the API's lengths, each uid once. */
static int check_claims(PB(Claim) * *cl, size_t n, char *why, size_t size)
{
    if (n > GS_DRA_MAX_CLAIMS)
        return gs_grpc_invalid(why, size, "%zu claims in one request, at most %d", n,
                               GS_DRA_MAX_CLAIMS);
    for (size_t k = 0; k < n; k++) {
        const PB(Claim) *c = cl[k];
        if (!c->uid[0] || strlen(c->uid) >= GS_DRA_UID_MAX ||
            strlen(c->namespace_) >= GS_DRA_NS_MAX || strlen(c->name) >= GS_DRA_NAME_MAX ||
            !c->namespace_[0] || !c->name[0] || strchr(c->namespace_, '/') ||
            strchr(c->name, '/') || strchr(c->uid, '/') || strchr(c->uid, '.'))
            return gs_grpc_invalid(why, size,
                                   "claim %zu: uid, namespace or name empty, too long or "
                                   "not a name",
                                   k);
        for (size_t j = 0; j < k; j++)
            if (strcmp(cl[j]->uid, c->uid) == 0)
                return gs_grpc_invalid(why, size, "claim uid %s appears twice", c->uid);
    }
    return GRPC_STATUS_OK;
}

static void free_prepared_answer(PB(NodePrepareResourceResponse) * r)
{
    if (!r)
        return;
    for (size_t j = 0; j < r->n_devices; j++) {
        free(r->devices[j]->request_names);
        free(r->devices[j]->cdi_device_ids[0]);
        free(r->devices[j]->cdi_device_ids);
        free(r->devices[j]);
    }
    free(r->devices);
    if (r->error && r->error != protobuf_c_empty_string)
        free(r->error);
    free(r);
}

/* What one prepared claim answers. Arrays are malloc'ed into the response (freed by
 * free_prepare_response). */
static PB(NodePrepareResourceResponse) * prepared_answer(const struct gs_dra_claim *c)
{
    PB(NodePrepareResourceResponse) *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    pb_(node_prepare_resource_response__init)(r);
    r->devices = calloc((size_t)(c->ndev ? c->ndev : 1), sizeof(*r->devices));
    if (!r->devices) {
        free(r);
        return NULL;
    }
    for (int j = 0; j < c->ndev; j++) {
        PB(Device) *dv = calloc(1, sizeof(*dv));
        char **req = calloc(1, sizeof(char *)), **ids = calloc(1, sizeof(char *));
        char *id = malloc(GS_DRA_UID_MAX + GS_DRASLICE_NAME_MAX + 32);
        if (!dv || !req || !ids || !id) {
            free(dv), free(req), free(ids), free(id);
            free_prepared_answer(r);
            return NULL;
        }
        pb_(device__init)(dv);
        snprintf(id, GS_DRA_UID_MAX + GS_DRASLICE_NAME_MAX + 32, "%s/gpu=%s-%s", GS_DRA_DRIVER,
                 c->uid, c->dev[j].device);
        req[0] = (char *)c->dev[j].request;
        ids[0] = id;
        dv->n_request_names = 1;
        dv->request_names = req;
        dv->pool_name = NULL; /* set by the caller: the node */
        dv->device_name = (char *)c->dev[j].device;
        dv->n_cdi_device_ids = 1;
        dv->cdi_device_ids = ids;
        r->devices[r->n_devices++] = dv;
    }
    return r;
}

/* Prepare claim q unless it is prepared: 0 (then it is in d->claims), or its error. */
static int prepare_one(struct gs_dra *d, const PB(Claim) * q, struct gs_error *err)
{
    if (gs_draclaims_find(d->claims, q->uid))
        return 0;
    int n = gs_draclaims_count(d->claims);
    if (n >= GS_DRA_MAX_CLAIMS)
        return gs_error_set(err, GS_ENOSPC, "%d claims prepared on this node already", n);
    struct gs_dra_claim *c = calloc(1, sizeof(*c));
    if (!c)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    snprintf(c->uid, sizeof(c->uid), "%s", q->uid);
    snprintf(c->ns, sizeof(c->ns), "%s", q->namespace_);
    snprintf(c->name, sizeof(c->name), "%s", q->name);
    int rc = prepare_claim(d, c, err);
    if (!rc && (rc = gs_draclaims_add(d->claims, c, err))) {
        rollback(d, c);
        gs_cdi_remove(d->cdi_dir, c->uid);
    }
    if (!rc)
        GS_INFO("dra", "claim %s/%s (%s): prepared %d device%s", c->ns, c->name, c->uid, c->ndev,
                c->ndev == 1 ? "" : "s");
    free(c);
    return rc;
}

/* Each claim of a request (checked) answered by one() under d->mu, into its slot of *slots
 * (n of size bytes) and its entry pointer, which one() stores at index k of *ptrs (n
 * pointers); both for the caller to free. GRPC_STATUS_OK, or the status with why. */
typedef int (*claim_fn)(struct gs_dra *d, const PB(Claim) * q, void *slot, void *ptrs, size_t k,
                        char *why, size_t why_size);
static int each_claim(struct gs_dra *d, PB(Claim) * *cl, size_t n, size_t size, claim_fn one,
                      void **slots, void **ptrs, char *why, size_t why_size)
{
    *slots = *ptrs = NULL;
    int code = check_claims(cl, n, why, why_size);
    if (code != GRPC_STATUS_OK)
        return code;
    *slots = calloc(n ? n : 1, size);
    *ptrs = calloc(n ? n : 1, sizeof(void *));
    if (!*slots || !*ptrs)
        return gs_grpc_no_memory(why, why_size);
    pthread_mutex_lock(&d->mu);
    for (size_t k = 0; k < n && code == GRPC_STATUS_OK; k++)
        code = one(d, cl[k], (char *)*slots + k * size, *ptrs, k, why, why_size);
    pthread_mutex_unlock(&d->mu);
    return code;
}

struct prep_slot {
    PB(NodePrepareResourcesResponse__ClaimsEntry) ent;
    PB(NodePrepareResourceResponse) * ans;
};

static int prepare_entry(struct gs_dra *d, const PB(Claim) * q, void *slot, void *ptrs, size_t k,
                         char *why, size_t why_size)
{
    struct prep_slot *s = slot;
    struct gs_error err;
    gs_error_init(&err);
    int rc = prepare_one(d, q, &err);
    s->ans =
        rc ? calloc(1, sizeof(*s->ans)) : prepared_answer(gs_draclaims_find(d->claims, q->uid));
    if (s->ans && rc) {
        pb_(node_prepare_resource_response__init)(s->ans);
        s->ans->error = strdup(err.msg);
        GS_WARN("dra", "prepare %s/%s: %s", q->namespace_, q->name, err.msg);
    }
    if (!s->ans || (rc && !s->ans->error))
        return gs_grpc_no_memory(why, why_size);
    for (size_t j = 0; j < s->ans->n_devices; j++)
        s->ans->devices[j]->pool_name = d->node;
    pb_(node_prepare_resources_response__claims_entry__init)(&s->ent);
    s->ent.key = q->uid;
    s->ent.value = s->ans;
    ((PB(NodePrepareResourcesResponse__ClaimsEntry) **)ptrs)[k] = &s->ent;
    return GRPC_STATUS_OK;
}

static int answer_prepare(struct gs_dra *d, const uint8_t *in, size_t len, uint8_t **out,
                          size_t *out_len, char *why, size_t size)
{
    PB(NodePrepareResourcesRequest) *req =
        pb_(node_prepare_resources_request__unpack)(NULL, len, in);
    if (!req)
        return gs_grpc_invalid(why, size, "NodePrepareResourcesRequest does not decode");
    size_t n = req->n_claims;
    void *slots, *ptrs;
    int code = each_claim(d, req->claims, n, sizeof(struct prep_slot), prepare_entry, &slots, &ptrs,
                          why, size);
    struct prep_slot *s = slots;
    if (code == GRPC_STATUS_OK) {
        PB(NodePrepareResourcesResponse) r = PB_INIT(NODE_PREPARE_RESOURCES_RESPONSE);
        r.n_claims = n;
        r.claims = ptrs;
        code = gs_grpc_pack(&r.base, out, out_len, why, size);
    }
    for (size_t k = 0; s && k < n; k++)
        free_prepared_answer(s[k].ans);
    free(slots);
    free(ptrs);
    pb_(node_prepare_resources_request__free_unpacked)(req, NULL);
    return code;
}

struct unprep_slot {
    PB(NodeUnprepareResourcesResponse__ClaimsEntry) ent;
    PB(NodeUnprepareResourceResponse) ans;
    char msg[GS_ERROR_MSG_MAX];
};

static int unprepare_entry(struct gs_dra *d, const PB(Claim) * q, void *slot, void *ptrs, size_t k,
                           char *why, size_t why_size)
{
    struct unprep_slot *s = slot;
    struct gs_error err;
    gs_error_init(&err);
    bool was = gs_draclaims_find(d->claims, q->uid) != NULL;
    pb_(node_unprepare_resource_response__init)(&s->ans);
    if (unprepare_claim(d, q->uid, &err)) {
        snprintf(s->msg, sizeof(s->msg), "%s", err.msg);
        s->ans.error = s->msg;
        GS_WARN("dra", "unprepare %s/%s: %s", q->namespace_, q->name, err.msg);
    } else if (was) {
        GS_INFO("dra", "claim %s/%s (%s): unprepared", q->namespace_, q->name, q->uid);
    }
    pb_(node_unprepare_resources_response__claims_entry__init)(&s->ent);
    s->ent.key = q->uid;
    s->ent.value = &s->ans;
    ((PB(NodeUnprepareResourcesResponse__ClaimsEntry) **)ptrs)[k] = &s->ent;
    return GRPC_STATUS_OK;
}

static int answer_unprepare(struct gs_dra *d, const uint8_t *in, size_t len, uint8_t **out,
                            size_t *out_len, char *why, size_t size)
{
    PB(NodeUnprepareResourcesRequest) *req =
        pb_(node_unprepare_resources_request__unpack)(NULL, len, in);
    if (!req)
        return gs_grpc_invalid(why, size, "NodeUnprepareResourcesRequest does not decode");
    void *slots, *ptrs;
    int code = each_claim(d, req->claims, req->n_claims, sizeof(struct unprep_slot),
                          unprepare_entry, &slots, &ptrs, why, size);
    if (code == GRPC_STATUS_OK) {
        PB(NodeUnprepareResourcesResponse) r = PB_INIT(NODE_UNPREPARE_RESOURCES_RESPONSE);
        r.n_claims = req->n_claims;
        r.claims = ptrs;
        code = gs_grpc_pack(&r.base, out, out_len, why, size);
    }
    free(slots);
    free(ptrs);
    pb_(node_unprepare_resources_request__free_unpacked)(req, NULL);
    return code;
}

int gs__dra_answer(struct gs_dra *d, enum gs_dra_call call, const uint8_t *in, size_t len,
                   uint8_t **out, size_t *out_len, char *why, size_t why_size)
{
    *out = NULL;
    *out_len = 0;
    why[0] = '\0';
    switch (call) {
    case GS_DRA_GET_INFO: {
        Pluginregistration__PluginInfo r = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
        char *versions[] = {"v1.DRAPlugin"};
        r.type = "DRAPlugin";
        r.name = GS_DRA_DRIVER;
        r.endpoint = d->dra_sock;
        r.n_supported_versions = 1;
        r.supported_versions = versions;
        return gs_grpc_pack(&r.base, out, out_len, why, why_size);
    }
    case GS_DRA_NOTIFY: {
        Pluginregistration__RegistrationStatus *s =
            pluginregistration__registration_status__unpack(NULL, len, in);
        if (!s)
            return gs_grpc_invalid(why, why_size, "RegistrationStatus does not decode");
        if (s->plugin_registered)
            GS_INFO("dra", "%s: registered with the kubelet", GS_DRA_DRIVER);
        else
            GS_WARN("dra", "%s: the kubelet refused the registration: %.300s", GS_DRA_DRIVER,
                    s->error);
        pluginregistration__registration_status__free_unpacked(s, NULL);
        Pluginregistration__RegistrationStatusResponse r =
            PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
        return gs_grpc_pack(&r.base, out, out_len, why, why_size);
    }
    case GS_DRA_PREPARE:
        return answer_prepare(d, in, len, out, out_len, why, why_size);
    case GS_DRA_UNPREPARE:
        return answer_unprepare(d, in, len, out, out_len, why, why_size);
    }
    return GRPC_STATUS_UNIMPLEMENTED;
}

/* ---------- the slices, the claims in use ---------- */

/* Sync the slices; with d->mu held. */
static int sync_locked(struct gs_dra *d, struct gs_error *err)
{
    d->dirty = false;
    return gs_drapub_sync(d->pub, d->b, d->claims, err);
}

int gs_dra_sync(struct gs_dra *d, const bool *healthy, int n, struct gs_error *err)
{
    pthread_mutex_lock(&d->mu);
    gs_drapub_health(d->pub, healthy, n);
    int rc = sync_locked(d, err);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

json_t *gs__dra_slices(struct gs_dra *d)
{
    pthread_mutex_lock(&d->mu);
    json_t *s = gs_drapub_slices(d->pub);
    pthread_mutex_unlock(&d->mu);
    return s;
}

int gs_dra_in_use(struct gs_dra *d, char (*uuids)[96], int cap)
{
    pthread_mutex_lock(&d->mu);
    int n = gs_draclaims_uuids(d->claims, uuids, cap);
    pthread_mutex_unlock(&d->mu);
    return n;
}

int gs_dra_prepared(struct gs_dra *d)
{
    pthread_mutex_lock(&d->mu);
    int n = gs_draclaims_count(d->claims);
    pthread_mutex_unlock(&d->mu);
    return n;
}

/* ---------- serving ---------- */

static const struct gs_grpc_method registration[] = {
    {"/pluginregistration.Registration/GetInfo", GS_DRA_GET_INFO, false},
    {"/pluginregistration.Registration/NotifyRegistrationStatus", GS_DRA_NOTIFY, false},
};
static const struct gs_grpc_method plugin[] = {
    {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", GS_DRA_PREPARE, false},
    {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources", GS_DRA_UNPREPARE, false},
};

static int serve_answer(void *user, int call, const uint8_t *in, size_t len, uint8_t **out,
                        size_t *out_len, char *why, size_t why_size)
{
    return gs__dra_answer(user, (enum gs_dra_call)call, in, len, out, out_len, why, why_size);
}

/* After a prepare or unprepare that changed a GPU: the slices again. */
static void answered(void *user)
{
    struct gs_dra *d = user;
    pthread_mutex_lock(&d->mu);
    if (d->dirty) {
        struct gs_error err;
        gs_error_init(&err);
        if (sync_locked(d, &err))
            GS_WARN("dra", "%s", err.msg);
    }
    pthread_mutex_unlock(&d->mu);
}

int gs_dra_serve(struct gs_dra *d, struct gs_error *err)
{
    d->svc[0] = (struct gs_grpc_service){registration, 2, serve_answer, NULL, answered, d};
    d->svc[1] = (struct gs_grpc_service){plugin, 2, serve_answer, NULL, answered, d};
    /* the DRA socket first: the kubelet dials it as soon as it sees the registration socket */
    const char *socks[2] = {d->dra_sock, d->reg_sock};
    struct gs_grpcd_opts o = {.tag = GS_DRA_DRIVER,
                              .log = "dra",
                              .sockets = socks,
                              .nsockets = 2,
                              .services = d->svc,
                              .nservices = 2};
    char why[512];
    if (!(d->server = gs_grpcd_start(&o, why, sizeof(why))))
        return gs_error_set(err, GS_EIO, "%s", why);
    GS_INFO("dra", "%s: serving %s, registration %s", GS_DRA_DRIVER, d->dra_sock, d->reg_sock);
    return 0;
}

/* ---------- lifecycle ---------- */

int gs_dra_new(const struct gs_dra_opts *o, struct gs_gpu_backend *b, struct gs_kube_client *kc,
               struct gs_dra **out, struct gs_error *err)
{
    *out = NULL;
    if (!o->node || !o->node[0] || strlen(o->node) >= GS_DRA_NAME_MAX)
        return gs_error_set(err, GS_EINVAL, "the DRA driver needs the node's name (--node)");
    const char *plugins = o->plugins_dir ? o->plugins_dir : GS_DRA_PLUGINS_DIR;
    const char *registry = o->registry_dir ? o->registry_dir : GS_DRA_REGISTRY_DIR;
    const char *cdi = o->cdi_dir ? o->cdi_dir : GS_DRA_CDI_DIR;
    if (strlen(plugins) > 300 || strlen(registry) > 300 || strlen(cdi) > 300)
        return gs_error_set(err, GS_EINVAL, "DRA directories: at most 300 characters each");
    struct gs_dra *d = calloc(1, sizeof(*d));
    if (!d)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    snprintf(d->node, sizeof(d->node), "%s", o->node);
    snprintf(d->dir, sizeof(d->dir), "%s/%s", plugins, GS_DRA_DRIVER);
    snprintf(d->dra_sock, sizeof(d->dra_sock), "%s/dra.sock", d->dir);
    snprintf(d->reg_sock, sizeof(d->reg_sock), "%s/%s-reg.sock", registry, GS_DRA_DRIVER);
    snprintf(d->cdi_dir, sizeof(d->cdi_dir), "%s", cdi);
    d->dynamic_mig = o->dynamic_mig;
    d->get_claim = o->get_claim;
    d->claim_user = o->claim_user;
    d->b = b;
    d->kc = kc;
    pthread_mutex_init(&d->mu, NULL);
    char checkpoint[PATH_SIZE + 32];
    snprintf(checkpoint, sizeof(checkpoint), "%s/checkpoint.json", d->dir);
    int rc = gs_file_mkdir_p(d->dir, err);
    if (!rc)
        rc = gs_file_mkdir_p(registry, err);
    if (!rc)
        rc = gs_file_mkdir_p(d->cdi_dir, err);
    if (!rc)
        rc = gs_draclaims_open(checkpoint, &d->claims, err);
    if (!rc && !(d->pub = gs_drapub_new(d->node, d->dynamic_mig, kc)))
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    if (rc) {
        gs_dra_free(d);
        return rc;
    }
    int n = gs_draclaims_count(d->claims);
    if (n)
        GS_INFO("dra", "%d claim%s prepared before (checkpoint %s)", n, n == 1 ? "" : "s",
                checkpoint);
    *out = d;
    return 0;
}

void gs_dra_free(struct gs_dra *d)
{
    if (!d)
        return;
    gs_grpcd_stop(d->server);
    gs_drapub_free(d->pub);
    gs_draclaims_free(d->claims);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
