/* dra.c - the node agent's DRA driver gpu.gpusched.io (see dra.h): the kubelet's
 * registration and DRA v1 services over gRPC core, prepare and unprepare on the GPU backend
 * with CDI specs and an on-disk checkpoint, and the ResourceSlices formats/draslice builds,
 * converged through the API.
 *
 * The state is the list of prepared claims (d->claims), the checkpoint's content; d->mu
 * guards it, the slices last written and the health last given. The gRPC thread answers one
 * call at a time (as deviceplugin.c: each call a small state machine tagged by its context,
 * NEW, READ, DONE); gs__dra_answer takes the request's bytes and gives the answer's, so the
 * unit test calls it without gRPC. */
#include "dra.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "../base/log.h"
#include "../kube/client.h"
#include "dra.pb-c.h"
#include "pluginregistration.pb-c.h"

#include <errno.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PB(x)      K8s__Io__Kubelet__Pkg__Apis__Dra__V1__##x
#define pb_(x)     k8s__io__kubelet__pkg__apis__dra__v1__##x
#define PB_INIT(x) K8S__IO__KUBELET__PKG__APIS__DRA__V1__##x##__INIT

#define UID_MAX   129 /* a claim's uid (36 in practice) */
#define NS_MAX    64  /* a namespace: a DNS label */
#define NAME_MAX_ 254 /* an object name: a DNS subdomain */
#define REQ_MAX   128 /* "<request>/<subrequest>", two DNS labels */
#define PATH_MAX_ 600

struct prep_dev {
    char request[REQ_MAX];
    char device[GS_DRASLICE_NAME_MAX];
    char uuid[96]; /* what NVIDIA_VISIBLE_DEVICES gets */
    int gpu;       /* GPU index */
    uint32_t gi;   /* GPU instance, with created */
    bool created;  /* a MIG instance this claim's prepare made (unprepare destroys it) */
};

struct claim {
    char uid[UID_MAX], ns[NS_MAX], name[NAME_MAX_];
    int ndev;
    struct prep_dev dev[GS_DRA_MAX_RESULTS];
};

struct gs_dra {
    char node[NAME_MAX_];
    char dir[PATH_MAX_];      /* <plugins>/gpu.gpusched.io */
    char dra_sock[PATH_MAX_]; /* <dir>/dra.sock */
    char reg_sock[PATH_MAX_]; /* <registry>/gpu.gpusched.io-reg.sock */
    char cdi_dir[PATH_MAX_];
    char checkpoint[PATH_MAX_]; /* <dir>/checkpoint.json */
    bool dynamic_mig;
    gs_dra_claim_fn get_claim;
    void *claim_user;
    struct gs_gpu_backend *b;
    struct gs_kube_client *kc;
    pthread_mutex_t mu;
    struct claim *claims; /* under mu */
    int nclaims;
    bool healthy[GS_DRASLICE_MAX_GPUS]; /* by backend position, as the agent last said */
    bool dirty;                         /* a GPU changed: sync again */
    /* the slices (under mu) */
    char node_uid[UID_MAX];
    json_t *built;      /* the slices last built, generation 0 */
    json_t *written;    /* the same, as last written to the API; NULL: converge in full */
    json_t *names;      /* the names of the slices written */
    int64_t generation; /* the pool's generation last written */
    /* the server */
    grpc_server *server;
    grpc_completion_queue *cq;
    pthread_t thread;
    bool serving, requested;
    volatile int stop;
};

/* ---------- small helpers ---------- */

static int mkdir_p(const char *path, struct gs_error *err)
{
    char p[PATH_MAX_];
    snprintf(p, sizeof(p), "%s", path);
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char was = *c;
        *c = '\0';
        if (mkdir(p, 0755) && errno != EEXIST)
            return gs_error_set(err, GS_EIO, "mkdir %s: %s", p, strerror(errno));
        if (!(*c = was))
            return 0;
    }
}

/* Write text to path through path.tmp and rename (a reader never sees half of it). */
static int write_atomic(const char *path, const char *text, struct gs_error *err)
{
    char tmp[PATH_MAX_ + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return gs_error_set(err, GS_EIO, "%s: %s", tmp, strerror(errno));
    bool ok = fputs(text, f) >= 0;
    ok &= fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return gs_error_set(err, GS_EIO, "%s: %s", path, strerror(e));
    }
    return 0;
}

static struct claim *find_claim(struct gs_dra *d, const char *uid)
{
    for (int k = 0; k < d->nclaims; k++)
        if (strcmp(d->claims[k].uid, uid) == 0)
            return &d->claims[k];
    return NULL;
}

/* Backend position of the GPU with index x, or -1. */
static int gpu_pos(struct gs_dra *d, int x, struct gs_gpu_info *info)
{
    int n = d->b->ops->count(d->b);
    for (int i = 0; i < n && i < GS_AGENT_MAX_GPUS; i++)
        if (d->b->ops->info(d->b, i, info) == 0 && info->index == x)
            return i;
    return -1;
}

/* Whether a claim other than `except` holds the MIG device uuid. */
static bool held(struct gs_dra *d, const char *uuid, const struct claim *except)
{
    for (int k = 0; k < d->nclaims; k++)
        for (int j = 0; &d->claims[k] != except && j < d->claims[k].ndev; j++)
            if (strcmp(d->claims[k].dev[j].uuid, uuid) == 0)
                return true;
    return false;
}

/* ---------- the checkpoint ---------- */

static int checkpoint_write(struct gs_dra *d, struct gs_error *err)
{
    json_t *cl = json_array(), *root = json_pack("{s:i,s:o}", "v", 1, "claims", cl);
    int rc = root ? 0 : GS_ENOMEM;
    for (int k = 0; k < d->nclaims && !rc; k++) {
        const struct claim *c = &d->claims[k];
        json_t *devs = json_array();
        for (int j = 0; j < c->ndev && devs; j++) {
            const struct prep_dev *p = &c->dev[j];
            if (json_array_append_new(devs,
                                      json_pack("{s:s,s:s,s:s,s:i,s:I,s:b}", "request", p->request,
                                                "device", p->device, "uuid", p->uuid, "gpu", p->gpu,
                                                "gi", (json_int_t)p->gi, "created", p->created)))
                rc = GS_ENOMEM;
        }
        if (!devs ||
            json_array_append_new(cl, json_pack("{s:s,s:s,s:s,s:o}", "uid", c->uid, "namespace",
                                                c->ns, "name", c->name, "devices", devs)))
            rc = GS_ENOMEM;
    }
    char *text = rc ? NULL : json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text)
        return gs_error_set(err, GS_ENOMEM, "checkpoint: out of memory");
    rc = write_atomic(d->checkpoint, text, err);
    free(text);
    return rc;
}

static int copy_bounded(char *out, size_t size, const char *s, const char *what,
                        struct gs_error *err)
{
    if (strlen(s) >= size)
        return gs_error_set(err, GS_EINVAL, "%s: longer than %zu characters", what, size - 1);
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

static int checkpoint_read(struct gs_dra *d, struct gs_error *err)
{
    struct gs_buf b;
    gs_buf_init(&b, 0);
    struct gs_error e2;
    gs_error_init(&e2);
    int rc = 0;
    json_t *root = NULL;
    if (access(d->checkpoint, F_OK) != 0)
        goto out; /* none yet */
    if ((rc = gs_buf_read_file(&b, d->checkpoint, 4u << 20, &e2)))
        goto bad;
    json_error_t je;
    json_t *claims;
    int v;
    if (!(root = json_loadb(b.data, b.len, 0, &je))) {
        rc = gs_error_set(&e2, GS_EINVAL, "line %d: %s", je.line, je.text);
        goto bad;
    }
    if (json_unpack_ex(root, &je, JSON_STRICT, "{s:i,s:o}", "v", &v, "claims", &claims) || v != 1 ||
        !json_is_array(claims)) {
        rc = gs_error_set(&e2, GS_EINVAL, "expected {\"v\":1,\"claims\":[...]}%s%s",
                          je.text[0] ? ": " : "", je.text);
        goto bad;
    }
    if (json_array_size(claims) > GS_DRA_MAX_CLAIMS) {
        rc = gs_error_set(&e2, GS_EINVAL, "claims: %zu, at most %d", json_array_size(claims),
                          GS_DRA_MAX_CLAIMS);
        goto bad;
    }
    d->claims = calloc(GS_DRA_MAX_CLAIMS, sizeof(*d->claims));
    if (!d->claims) {
        rc = gs_error_set(&e2, GS_ENOMEM, "out of memory");
        goto bad;
    }
    size_t k;
    json_t *c;
    json_array_foreach(claims, k, c)
    {
        struct claim *cl = &d->claims[d->nclaims];
        const char *uid, *ns, *name;
        json_t *devs;
        char at[64];
        snprintf(at, sizeof(at), "claims[%zu]", k);
        if (json_unpack_ex(c, &je, JSON_STRICT, "{s:s,s:s,s:s,s:o}", "uid", &uid, "namespace", &ns,
                           "name", &name, "devices", &devs) ||
            !json_is_array(devs) || json_array_size(devs) > GS_DRA_MAX_RESULTS) {
            rc = gs_error_set(&e2, GS_EINVAL,
                              "%s: expected uid, namespace, name, devices (at most %d)%s%s", at,
                              GS_DRA_MAX_RESULTS, je.text[0] ? ": " : "", je.text);
            goto bad;
        }
        if ((rc = copy_bounded(cl->uid, sizeof(cl->uid), uid, "uid", &e2)) ||
            (rc = copy_bounded(cl->ns, sizeof(cl->ns), ns, "namespace", &e2)) ||
            (rc = copy_bounded(cl->name, sizeof(cl->name), name, "name", &e2))) {
            gs_error_prefix(&e2, "%s", at);
            goto bad;
        }
        if (find_claim(d, uid)) {
            rc = gs_error_set(&e2, GS_EINVAL, "%s: uid %s twice", at, uid);
            goto bad;
        }
        size_t j;
        json_t *x;
        json_array_foreach(devs, j, x)
        {
            struct prep_dev *p = &cl->dev[cl->ndev];
            const char *req, *dev, *uuid;
            int gpu, created;
            json_int_t gi;
            struct gs_dra_devref ref;
            snprintf(at, sizeof(at), "claims[%zu].devices[%zu]", k, j);
            if (json_unpack_ex(x, &je, JSON_STRICT, "{s:s,s:s,s:s,s:i,s:I,s:b}", "request", &req,
                               "device", &dev, "uuid", &uuid, "gpu", &gpu, "gi", &gi, "created",
                               &created) ||
                gi < 0 || gi > UINT32_MAX) {
                rc = gs_error_set(&e2, GS_EINVAL,
                                  "%s: expected request, device, uuid, gpu, gi, created%s%s", at,
                                  je.text[0] ? ": " : "", je.text);
                goto bad;
            }
            if ((rc = copy_bounded(p->request, sizeof(p->request), req, "request", &e2)) ||
                (rc = copy_bounded(p->uuid, sizeof(p->uuid), uuid, "uuid", &e2)) ||
                (rc = gs_draslice_parse_name(dev, &ref, &e2))) {
                gs_error_prefix(&e2, "%s", at);
                goto bad;
            }
            snprintf(p->device, sizeof(p->device), "%s", dev);
            p->gpu = gpu;
            p->gi = (uint32_t)gi;
            p->created = created;
            cl->ndev++;
        }
        d->nclaims++;
    }
out:
    if (!d->claims && !(d->claims = calloc(GS_DRA_MAX_CLAIMS, sizeof(*d->claims))))
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    json_decref(root);
    gs_buf_release(&b);
    return rc;
bad:
    json_decref(root);
    gs_buf_release(&b);
    gs_error_set(err, rc, "DRA checkpoint %s: %s", d->checkpoint, e2.msg);
    return rc;
}

/* ---------- CDI ---------- */

static void cdi_path(const struct gs_dra *d, const char *uid, char *out, size_t size)
{
    snprintf(out, size, "%s/%s-%s.json", d->cdi_dir, GS_DRA_DRIVER, uid);
}

static int cdi_write(struct gs_dra *d, const struct claim *c, struct gs_error *err)
{
    json_t *devs = json_array();
    int rc = devs ? 0 : GS_ENOMEM;
    for (int j = 0; j < c->ndev && !rc; j++) {
        char name[UID_MAX + GS_DRASLICE_NAME_MAX + 2], env[128];
        snprintf(name, sizeof(name), "%s-%s", c->uid, c->dev[j].device);
        snprintf(env, sizeof(env), "NVIDIA_VISIBLE_DEVICES=%s", c->dev[j].uuid);
        if (json_array_append_new(
                devs, json_pack("{s:s,s:{s:[s]}}", "name", name, "containerEdits", "env", env)))
            rc = GS_ENOMEM;
    }
    json_t *spec = rc ? NULL
                      : json_pack("{s:s,s:s,s:O}", "cdiVersion", "0.6.0", "kind",
                                  GS_DRA_DRIVER "/gpu", "devices", devs);
    json_decref(devs);
    char *text = spec ? json_dumps(spec, JSON_INDENT(2)) : NULL;
    json_decref(spec);
    if (!text)
        return gs_error_set(err, GS_ENOMEM, "CDI spec: out of memory");
    char path[PATH_MAX_ + UID_MAX + 32];
    cdi_path(d, c->uid, path, sizeof(path));
    rc = write_atomic(path, text, err);
    free(text);
    return rc;
}

/* ---------- prepare and unprepare ---------- */

/* Undo what a failed prepare created. */
static void rollback(struct gs_dra *d, struct claim *c)
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
static int prepare_device(struct gs_dra *d, struct claim *c, const char *device, struct prep_dev *p,
                          struct gs_error *err)
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
        if (held(d, inst[q].uuid, c))
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

/* Prepare one claim (not yet prepared) into c, which the caller then keeps. */
static int prepare_claim(struct gs_dra *d, struct claim *c, struct gs_error *err)
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
        if (!pool || !dev || !req || strlen(req) >= REQ_MAX) {
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
        struct prep_dev *p = &c->dev[c->ndev];
        memset(p, 0, sizeof(*p));
        snprintf(p->request, sizeof(p->request), "%s", req);
        if ((rc = prepare_device(d, c, dev, p, err))) {
            gs_error_prefix(err, "ResourceClaim %s/%s", c->ns, c->name);
            goto undo;
        }
        c->ndev++;
    }
    if ((rc = cdi_write(d, c, err)))
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
    struct claim *c = find_claim(d, uid);
    char path[PATH_MAX_ + UID_MAX + 32];
    cdi_path(d, uid, path, sizeof(path));
    if (!c) {
        unlink(path);
        return 0;
    }
    struct gs_gpu_info info;
    for (int j = c->ndev - 1; j >= 0; j--) {
        struct prep_dev *p = &c->dev[j];
        int pos = p->created ? gpu_pos(d, p->gpu, &info) : -1;
        if (pos >= 0) {
            int rc = d->b->ops->mig_destroy(d->b, pos, p->gi);
            if (rc && rc != GS_ENOTFOUND) {
                c->ndev = j + 1; /* what is destroyed stays so */
                checkpoint_write(d, err);
                return gs_error_set(err, rc,
                                    "GPU %d: instance %s cannot be destroyed (%s: still "
                                    "in use?)",
                                    p->gpu, p->uuid, gs_error_name(rc));
            }
            d->dirty = true;
            GS_INFO("dra", "claim %s/%s: destroyed %s on GPU %d", c->ns, c->name, p->uuid, p->gpu);
        }
    }
    unlink(path);
    *c = d->claims[--d->nclaims];
    return checkpoint_write(d, err);
}

/* ---------- answers ---------- */

static int invalid(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int invalid(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return GRPC_STATUS_INVALID_ARGUMENT;
}

static int pack(const ProtobufCMessage *m, uint8_t **out, size_t *len, char *why, size_t size)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = malloc(n ? n : 1);
    if (!b) {
        snprintf(why, size, "out of memory");
        return GRPC_STATUS_RESOURCE_EXHAUSTED;
    }
    protobuf_c_message_pack(m, b);
    *out = b;
    *len = n;
    return GRPC_STATUS_OK;
}

/* The claims of a request: bounded, each field within the API's lengths, each uid once. */
static int check_claims(PB(Claim) * *cl, size_t n, char *why, size_t size)
{
    if (n > GS_DRA_MAX_CLAIMS)
        return invalid(why, size, "%zu claims in one request, at most %d", n, GS_DRA_MAX_CLAIMS);
    for (size_t k = 0; k < n; k++) {
        const PB(Claim) *c = cl[k];
        if (!c->uid[0] || strlen(c->uid) >= UID_MAX || strlen(c->namespace_) >= NS_MAX ||
            strlen(c->name) >= NAME_MAX_ || !c->namespace_[0] || !c->name[0] ||
            strchr(c->namespace_, '/') || strchr(c->name, '/') || strchr(c->uid, '/') ||
            strchr(c->uid, '.'))
            return invalid(why, size,
                           "claim %zu: uid, namespace or name empty, too long or "
                           "not a name",
                           k);
        for (size_t j = 0; j < k; j++)
            if (strcmp(cl[j]->uid, c->uid) == 0)
                return invalid(why, size, "claim uid %s appears twice", c->uid);
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
static PB(NodePrepareResourceResponse) * prepared_answer(const struct claim *c)
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
        char *id = malloc(UID_MAX + GS_DRASLICE_NAME_MAX + 32);
        if (!dv || !req || !ids || !id) {
            free(dv), free(req), free(ids), free(id);
            free_prepared_answer(r);
            return NULL;
        }
        pb_(device__init)(dv);
        snprintf(id, UID_MAX + GS_DRASLICE_NAME_MAX + 32, "%s/gpu=%s-%s", GS_DRA_DRIVER, c->uid,
                 c->dev[j].device);
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

static int answer_prepare(struct gs_dra *d, const uint8_t *in, size_t len, uint8_t **out,
                          size_t *out_len, char *why, size_t size)
{
    PB(NodePrepareResourcesRequest) *req =
        pb_(node_prepare_resources_request__unpack)(NULL, len, in);
    if (!req)
        return invalid(why, size, "NodePrepareResourcesRequest does not decode");
    int code = check_claims(req->claims, req->n_claims, why, size);
    size_t n = req->n_claims;
    PB(NodePrepareResourcesResponse__ClaimsEntry) *ent = NULL, **entp = NULL;
    PB(NodePrepareResourceResponse) **ans = NULL;
    if (code != GRPC_STATUS_OK)
        goto out;
    ent = calloc(n ? n : 1, sizeof(*ent));
    entp = calloc(n ? n : 1, sizeof(*entp));
    ans = calloc(n ? n : 1, sizeof(*ans));
    if (!ent || !entp || !ans) {
        code = GRPC_STATUS_RESOURCE_EXHAUSTED;
        snprintf(why, size, "out of memory");
        goto out;
    }
    pthread_mutex_lock(&d->mu);
    for (size_t k = 0; k < n; k++) {
        const PB(Claim) *q = req->claims[k];
        struct gs_error err;
        gs_error_init(&err);
        struct claim *c = find_claim(d, q->uid);
        int rc = 0;
        if (!c && d->nclaims >= GS_DRA_MAX_CLAIMS) {
            rc = gs_error_set(&err, GS_ENOSPC, "%d claims prepared on this node already",
                              d->nclaims);
        } else if (!c) {
            c = &d->claims[d->nclaims];
            memset(c, 0, sizeof(*c));
            snprintf(c->uid, sizeof(c->uid), "%s", q->uid);
            snprintf(c->ns, sizeof(c->ns), "%s", q->namespace_);
            snprintf(c->name, sizeof(c->name), "%s", q->name);
            rc = prepare_claim(d, c, &err);
            if (!rc) {
                d->nclaims++;
                if ((rc = checkpoint_write(d, &err))) {
                    d->nclaims--;
                    rollback(d, c);
                    char path[PATH_MAX_ + UID_MAX + 32];
                    cdi_path(d, c->uid, path, sizeof(path));
                    unlink(path);
                }
            }
            if (!rc)
                GS_INFO("dra", "claim %s/%s (%s): prepared %d device%s", c->ns, c->name, c->uid,
                        c->ndev, c->ndev == 1 ? "" : "s");
        }
        ans[k] = rc ? calloc(1, sizeof(*ans[k])) : prepared_answer(c);
        if (ans[k] && rc) {
            pb_(node_prepare_resource_response__init)(ans[k]);
            ans[k]->error = strdup(err.msg);
            GS_WARN("dra", "prepare %s/%s: %s", q->namespace_, q->name, err.msg);
        }
        if (!ans[k] || (rc && !ans[k]->error)) {
            code = GRPC_STATUS_RESOURCE_EXHAUSTED;
            snprintf(why, size, "out of memory");
            break;
        }
        for (size_t j = 0; j < ans[k]->n_devices; j++)
            ans[k]->devices[j]->pool_name = d->node;
        pb_(node_prepare_resources_response__claims_entry__init)(&ent[k]);
        ent[k].key = q->uid;
        ent[k].value = ans[k];
        entp[k] = &ent[k];
    }
    pthread_mutex_unlock(&d->mu);
    if (code == GRPC_STATUS_OK) {
        PB(NodePrepareResourcesResponse) r = PB_INIT(NODE_PREPARE_RESOURCES_RESPONSE);
        r.n_claims = n;
        r.claims = entp;
        code = pack(&r.base, out, out_len, why, size);
    }
out:
    for (size_t k = 0; ans && k < n; k++)
        free_prepared_answer(ans[k]);
    free(ans);
    free(ent);
    free(entp);
    pb_(node_prepare_resources_request__free_unpacked)(req, NULL);
    return code;
}

static int answer_unprepare(struct gs_dra *d, const uint8_t *in, size_t len, uint8_t **out,
                            size_t *out_len, char *why, size_t size)
{
    PB(NodeUnprepareResourcesRequest) *req =
        pb_(node_unprepare_resources_request__unpack)(NULL, len, in);
    if (!req)
        return invalid(why, size, "NodeUnprepareResourcesRequest does not decode");
    int code = check_claims(req->claims, req->n_claims, why, size);
    size_t n = req->n_claims;
    PB(NodeUnprepareResourcesResponse__ClaimsEntry) *ent = NULL, **entp = NULL;
    PB(NodeUnprepareResourceResponse) *ans = NULL;
    char(*msg)[GS_ERROR_MSG_MAX] = NULL;
    if (code != GRPC_STATUS_OK)
        goto out;
    ent = calloc(n ? n : 1, sizeof(*ent));
    entp = calloc(n ? n : 1, sizeof(*entp));
    ans = calloc(n ? n : 1, sizeof(*ans));
    msg = calloc(n ? n : 1, sizeof(*msg));
    if (!ent || !entp || !ans || !msg) {
        code = GRPC_STATUS_RESOURCE_EXHAUSTED;
        snprintf(why, size, "out of memory");
        goto out;
    }
    pthread_mutex_lock(&d->mu);
    for (size_t k = 0; k < n; k++) {
        const PB(Claim) *q = req->claims[k];
        struct gs_error err;
        gs_error_init(&err);
        bool was = find_claim(d, q->uid) != NULL;
        pb_(node_unprepare_resource_response__init)(&ans[k]);
        if (unprepare_claim(d, q->uid, &err)) {
            snprintf(msg[k], sizeof(msg[k]), "%s", err.msg);
            ans[k].error = msg[k];
            GS_WARN("dra", "unprepare %s/%s: %s", q->namespace_, q->name, err.msg);
        } else if (was) {
            GS_INFO("dra", "claim %s/%s (%s): unprepared", q->namespace_, q->name, q->uid);
        }
        pb_(node_unprepare_resources_response__claims_entry__init)(&ent[k]);
        ent[k].key = q->uid;
        ent[k].value = &ans[k];
        entp[k] = &ent[k];
    }
    pthread_mutex_unlock(&d->mu);
    PB(NodeUnprepareResourcesResponse) r = PB_INIT(NODE_UNPREPARE_RESOURCES_RESPONSE);
    r.n_claims = n;
    r.claims = entp;
    code = pack(&r.base, out, out_len, why, size);
out:
    free(ent);
    free(entp);
    free(ans);
    free(msg);
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
        return pack(&r.base, out, out_len, why, why_size);
    }
    case GS_DRA_NOTIFY: {
        Pluginregistration__RegistrationStatus *s =
            pluginregistration__registration_status__unpack(NULL, len, in);
        if (!s)
            return invalid(why, why_size, "RegistrationStatus does not decode");
        if (s->plugin_registered)
            GS_INFO("dra", "%s: registered with the kubelet", GS_DRA_DRIVER);
        else
            GS_WARN("dra", "%s: the kubelet refused the registration: %.300s", GS_DRA_DRIVER,
                    s->error);
        pluginregistration__registration_status__free_unpacked(s, NULL);
        Pluginregistration__RegistrationStatusResponse r =
            PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
        return pack(&r.base, out, out_len, why, why_size);
    }
    case GS_DRA_PREPARE:
        return answer_prepare(d, in, len, out, out_len, why, why_size);
    case GS_DRA_UNPREPARE:
        return answer_unprepare(d, in, len, out, out_len, why, why_size);
    }
    return GRPC_STATUS_UNIMPLEMENTED;
}

/* ---------- slices ---------- */

/* The node as the backend has it now, dynamic instances marked. Call with d->mu held. */
static void node_now(struct gs_dra *d, struct gs_draslice_node *n)
{
    memset(n, 0, sizeof(*n));
    n->node = d->node;
    n->node_uid = d->node_uid;
    n->dynamic_mig = d->dynamic_mig;
    int count = d->b->ops->count(d->b);
    for (int i = 0; i < count && n->ngpus < GS_DRASLICE_MAX_GPUS; i++) {
        struct gs_gpu_info info;
        if (d->b->ops->info(d->b, i, &info))
            continue;
        struct gs_draslice_gpu *g = &n->gpus[n->ngpus++];
        g->index = info.index;
        snprintf(g->uuid, sizeof(g->uuid), "%s", info.uuid);
        g->model = info.model;
        snprintf(g->product, sizeof(g->product), "%s", info.name);
        g->mem_mib = info.mem_mib;
        g->mig_enabled = info.mig_enabled;
        g->healthy = d->healthy[i];
        struct gs_mig_inst inst[GS_AGENT_MAX_INST];
        int k = info.mig_enabled ? d->b->ops->mig_list(d->b, i, inst, GS_AGENT_MAX_INST) : 0;
        for (int q = 0; q < k && g->ninst < GS_DRASLICE_MAX_INST; q++) {
            int p = gs_gpu_profile_index(info.model, inst[q].profile_id);
            if (p < 0)
                continue;
            struct gs_draslice_inst *s = &g->inst[g->ninst++];
            s->profile = (uint8_t)p;
            s->start = (uint8_t)inst[q].start;
            snprintf(s->uuid, sizeof(s->uuid), "%s", inst[q].uuid);
            for (int c = 0; c < d->nclaims && !s->dynamic; c++)
                for (int j = 0; j < d->claims[c].ndev; j++)
                    s->dynamic |= d->claims[c].dev[j].created &&
                                  strcmp(d->claims[c].dev[j].uuid, inst[q].uuid) == 0;
        }
    }
}

struct listed {
    json_t *items;
};

static int collect(const json_t *item, void *user)
{
    struct listed *l = user;
    if (!item) { /* the list started again */
        json_array_clear(l->items);
        return 0;
    }
    return json_array_append(l->items, (json_t *)item) ? GS_ENOMEM : 0;
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

/* Converge the API's slices to d->built. Call with d->mu held. */
static int converge(struct gs_dra *d, struct gs_error *err)
{
    if (!d->node_uid[0]) {
        char path[400];
        json_t *node = NULL;
        snprintf(path, sizeof(path), "/api/v1/nodes/%s", d->node);
        int rc = gs_kube_request(d->kc, "GET", path, NULL, NULL, &node, NULL, err);
        const char *uid =
            rc ? NULL
               : json_string_value(json_object_get(json_object_get(node, "metadata"), "uid"));
        if (uid)
            snprintf(d->node_uid, sizeof(d->node_uid), "%s", uid);
        json_decref(node);
        if (rc)
            return gs_error_prefix(err, "node %s", d->node);
        /* the ownerReference needs the uid: build again */
        return 1;
    }
    char path[700];
    snprintf(path, sizeof(path),
             "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%%3D%s%%2C"
             "spec.nodeName%%3D%s",
             GS_DRA_DRIVER, d->node);
    struct listed l = {json_array()};
    if (!l.items)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    int rc = gs_kube_list(d->kc, path, collect, &l, NULL, 0, err);
    if (rc) {
        json_decref(l.items);
        return gs_error_prefix(err, "listing resource slices");
    }
    int64_t maxgen = d->generation;
    bool same_gen = true;
    size_t k;
    json_t *x;
    json_array_foreach(l.items, k, x)
    {
        json_int_t g = json_integer_value(
            json_object_get(json_object_get(json_object_get(x, "spec"), "pool"), "generation"));
        if (g > maxgen)
            maxgen = g;
        same_gen &= g == d->generation;
    }
    if (d->written && json_equal(d->written, d->built) && same_gen &&
        names_equal(d->names, l.items)) {
        json_decref(l.items);
        return 0;
    }
    int64_t gen = maxgen + 1;
    json_t *want = json_deep_copy(d->built), *names = json_array();
    rc = want && names ? 0 : gs_error_set(err, GS_ENOMEM, "out of memory");
    json_array_foreach(want, k, x)
    {
        if (rc)
            break;
        json_object_set_new(json_object_get(json_object_get(x, "spec"), "pool"), "generation",
                            json_integer(gen));
        json_t *reply = NULL;
        if (k < json_array_size(l.items)) {
            json_t *old = json_object_get(json_array_get(l.items, k), "metadata");
            const char *name = json_string_value(json_object_get(old, "name"));
            json_t *meta = json_object_get(x, "metadata");
            json_object_set(meta, "name", json_object_get(old, "name"));
            json_object_set(meta, "resourceVersion", json_object_get(old, "resourceVersion"));
            snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/resourceslices/%s",
                     name ? name : "");
            rc = gs_kube_request(d->kc, "PUT", path, "application/json", x, &reply, NULL, err);
        } else {
            rc = gs_kube_request(d->kc, "POST", "/apis/resource.k8s.io/v1/resourceslices",
                                 "application/json", x, &reply, NULL, err);
        }
        json_t *name = json_object_get(json_object_get(reply, "metadata"), "name");
        if (!rc && name)
            json_array_append(names, name);
        json_decref(reply);
    }
    for (k = json_array_size(want); !rc && k < json_array_size(l.items); k++) {
        const char *name = json_string_value(
            json_object_get(json_object_get(json_array_get(l.items, k), "metadata"), "name"));
        snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/resourceslices/%s",
                 name ? name : "");
        rc = gs_kube_request(d->kc, "DELETE", path, NULL, NULL, NULL, NULL, err);
        if (rc == GS_ENOTFOUND)
            rc = 0;
    }
    json_decref(l.items);
    json_decref(want);
    if (rc) {
        json_decref(names);
        json_decref(d->written);
        d->written = NULL; /* converge in full next time */
        return gs_error_prefix(err, "resource slices of node %s", d->node);
    }
    GS_INFO("dra", "node %s: %zu resource slice%s, pool generation %lld", d->node,
            json_array_size(names), json_array_size(names) == 1 ? "" : "s", (long long)gen);
    json_decref(d->written);
    d->written = json_incref(d->built);
    json_decref(d->names);
    d->names = names;
    d->generation = gen;
    return 0;
}

static int sync_locked(struct gs_dra *d, struct gs_error *err)
{
    for (int round = 0; round < 2; round++) {
        struct gs_draslice_node *n = malloc(sizeof(*n));
        if (!n)
            return gs_error_set(err, GS_ENOMEM, "out of memory");
        node_now(d, n);
        json_t *s = gs_draslice_build(n, err);
        free(n);
        if (!s)
            return err->code;
        json_decref(d->built);
        d->built = s;
        d->dirty = false;
        if (!d->kc)
            return 0;
        int rc = converge(d, err);
        if (rc <= 0)
            return rc;
    }
    return 0;
}

int gs_dra_sync(struct gs_dra *d, const bool *healthy, int n, struct gs_error *err)
{
    pthread_mutex_lock(&d->mu);
    for (int i = 0; i < GS_DRASLICE_MAX_GPUS; i++)
        d->healthy[i] = !healthy || i >= n || healthy[i];
    int rc = sync_locked(d, err);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

json_t *gs__dra_slices(struct gs_dra *d)
{
    pthread_mutex_lock(&d->mu);
    json_t *s = json_incref(d->built);
    pthread_mutex_unlock(&d->mu);
    return s;
}

int gs_dra_in_use(struct gs_dra *d, char (*uuids)[96], int cap)
{
    int n = 0;
    pthread_mutex_lock(&d->mu);
    for (int k = 0; k < d->nclaims; k++)
        for (int j = 0; j < d->claims[k].ndev && n < cap; j++)
            snprintf(uuids[n++], 96, "%s", d->claims[k].dev[j].uuid);
    pthread_mutex_unlock(&d->mu);
    return n;
}

int gs_dra_prepared(struct gs_dra *d)
{
    pthread_mutex_lock(&d->mu);
    int n = d->nclaims;
    pthread_mutex_unlock(&d->mu);
    return n;
}

/* ---------- the gRPC server ---------- */

enum state { S_NEW = 0, S_READ, S_DONE };

struct call {
    enum state st;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
    grpc_byte_buffer *in, *out;
    int method;
    int cancelled;
};

/* indexed by enum gs_dra_call */
static const char *const paths[] = {
    "/pluginregistration.Registration/GetInfo",
    "/pluginregistration.Registration/NotifyRegistrationStatus",
    "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
    "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
};
#define NCALLS ((int)(sizeof(paths) / sizeof(paths[0])))

static void new_call(struct gs_dra *d)
{
    struct call *c = calloc(1, sizeof(*c));
    d->requested = c != NULL;
    if (!c)
        return;
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    grpc_server_request_call(d->server, &c->call, &c->details, &c->md, d->cq, d->cq, c);
}

static void free_call(struct call *c)
{
    if (c->call)
        grpc_call_unref(c->call);
    if (c->in)
        grpc_byte_buffer_destroy(c->in);
    if (c->out)
        grpc_byte_buffer_destroy(c->out);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    free(c);
}

static void on_event(struct gs_dra *d, struct call *c, bool ok)
{
    if (!ok || c->st == S_DONE) {
        free_call(c);
        return;
    }
    grpc_op ops[3];
    memset(ops, 0, sizeof(ops));
    if (c->st == S_NEW) {
        new_call(d);
        c->method = -1;
        for (int m = 0; m < NCALLS; m++)
            if (grpc_slice_str_cmp(c->details.method, paths[m]) == 0)
                c->method = m;
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_RECV_MESSAGE;
        ops[1].data.recv_message.recv_message = &c->in;
        c->st = S_READ;
        grpc_call_start_batch(c->call, ops, 2, c, NULL);
        return;
    }
    /* S_READ: answer */
    grpc_slice in = grpc_empty_slice();
    grpc_byte_buffer_reader r;
    if (c->in && grpc_byte_buffer_reader_init(&r, c->in)) {
        in = grpc_byte_buffer_reader_readall(&r);
        grpc_byte_buffer_reader_destroy(&r);
    }
    char why[GS_ERROR_MSG_MAX] = "unknown method";
    uint8_t *ans = NULL;
    size_t len = 0;
    int code = GRPC_STATUS_UNIMPLEMENTED;
    if (c->method >= 0)
        code = gs__dra_answer(d, (enum gs_dra_call)c->method, GRPC_SLICE_START_PTR(in),
                              GRPC_SLICE_LENGTH(in), &ans, &len, why, sizeof(why));
    grpc_slice_unref(in);
    if (code != GRPC_STATUS_OK)
        GS_WARN("dra", "%s: %s", c->method >= 0 ? paths[c->method] : "call", why);
    size_t n = 0;
    if (code == GRPC_STATUS_OK) {
        grpc_slice s = len ? grpc_slice_new(ans, len, free) : grpc_empty_slice();
        if (!len)
            free(ans);
        c->out = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->out;
    }
    grpc_slice details = grpc_slice_from_copied_string(code == GRPC_STATUS_OK ? "" : why);
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)code;
    ops[n++].data.send_status_from_server.status_details = &details;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    c->st = S_DONE;
    grpc_call_start_batch(c->call, ops, n, c, NULL);
    grpc_slice_unref(details);
    /* after a prepare or unprepare that changed a GPU: the slices again */
    pthread_mutex_lock(&d->mu);
    if (d->dirty) {
        struct gs_error err;
        gs_error_init(&err);
        if (sync_locked(d, &err))
            GS_WARN("dra", "%s", err.msg);
    }
    pthread_mutex_unlock(&d->mu);
}

static void *serve_thread(void *arg)
{
    struct gs_dra *d = arg;
    while (!gs_flag_get(&d->stop)) {
        grpc_event ev = grpc_completion_queue_next(
            d->cq,
            gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(100, GPR_TIMESPAN)),
            NULL);
        if (ev.type == GRPC_OP_COMPLETE)
            on_event(d, ev.tag, ev.success);
        if (!d->requested)
            new_call(d);
    }
    grpc_server_shutdown_and_notify(d->server, d->cq, d);
    grpc_server_cancel_all_calls(d->server);
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(
            d->cq,
            gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(5, GPR_TIMESPAN)),
            NULL);
        if (ev.type != GRPC_OP_COMPLETE || ev.tag == d)
            break;
        on_event(d, ev.tag, false);
    }
    grpc_server_destroy(d->server);
    grpc_completion_queue_shutdown(d->cq);
    while (grpc_completion_queue_next(d->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(d->cq);
    unlink(d->reg_sock);
    unlink(d->dra_sock);
    return NULL;
}

int gs_dra_serve(struct gs_dra *d, struct gs_error *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, grpc_init);
    unlink(d->dra_sock);
    unlink(d->reg_sock);
    d->cq = grpc_completion_queue_create_for_next(NULL);
    d->server = grpc_server_create(NULL, NULL);
    grpc_server_register_completion_queue(d->server, d->cq, NULL);
    /* the DRA socket first: the kubelet dials it as soon as it sees the registration socket */
    const char *socks[2] = {d->dra_sock, d->reg_sock};
    for (int k = 0; k < 2; k++) {
        char addr[PATH_MAX_ + 8];
        snprintf(addr, sizeof(addr), "unix:%s", socks[k]);
        grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
        int port = grpc_server_add_http2_port(d->server, addr, creds);
        grpc_server_credentials_release(creds);
        if (!port) {
            grpc_server_destroy(d->server);
            grpc_completion_queue_shutdown(d->cq);
            while (
                grpc_completion_queue_next(d->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
                GRPC_QUEUE_SHUTDOWN)
                ;
            grpc_completion_queue_destroy(d->cq);
            return gs_error_set(err, GS_EIO, "cannot serve on %s", socks[k]);
        }
    }
    grpc_server_start(d->server);
    new_call(d);
    pthread_create(&d->thread, NULL, serve_thread, d);
    d->serving = true;
    GS_INFO("dra", "%s: serving %s, registration %s", GS_DRA_DRIVER, d->dra_sock, d->reg_sock);
    return 0;
}

/* ---------- lifecycle ---------- */

int gs_dra_new(const struct gs_dra_opts *o, struct gs_gpu_backend *b, struct gs_kube_client *kc,
               struct gs_dra **out, struct gs_error *err)
{
    *out = NULL;
    if (!o->node || !o->node[0] || strlen(o->node) >= NAME_MAX_)
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
    snprintf(d->checkpoint, sizeof(d->checkpoint), "%s/checkpoint.json", d->dir);
    d->dynamic_mig = o->dynamic_mig;
    d->get_claim = o->get_claim;
    d->claim_user = o->claim_user;
    d->b = b;
    d->kc = kc;
    pthread_mutex_init(&d->mu, NULL);
    for (int i = 0; i < GS_DRASLICE_MAX_GPUS; i++)
        d->healthy[i] = true;
    int rc = mkdir_p(d->dir, err);
    if (!rc)
        rc = mkdir_p(registry, err);
    if (!rc)
        rc = mkdir_p(d->cdi_dir, err);
    if (!rc)
        rc = checkpoint_read(d, err);
    if (rc) {
        gs_dra_free(d);
        return rc;
    }
    if (d->nclaims)
        GS_INFO("dra", "%d claim%s prepared before (checkpoint %s)", d->nclaims,
                d->nclaims == 1 ? "" : "s", d->checkpoint);
    *out = d;
    return 0;
}

void gs_dra_free(struct gs_dra *d)
{
    if (!d)
        return;
    if (d->serving) {
        gs_flag_set(&d->stop, 1);
        pthread_join(d->thread, NULL);
    }
    json_decref(d->built);
    json_decref(d->written);
    json_decref(d->names);
    free(d->claims);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
