/* draclaims.c - the DRA driver's prepared claims and their checkpoint (see draclaims.h). The
 * checkpoint is read strictly: every field bounded and of its type, each uid once, device
 * names the driver publishes; a file that does not read stops the driver at start rather than
 * forgetting what it prepared. */
#include "draclaims.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "files.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gs_draclaims {
    char path[1024];
    struct gs_dra_claim *claims; /* GS_DRA_MAX_CLAIMS */
    int n;
};

static struct gs_dra_claim *find(const struct gs_draclaims *s, const char *uid)
{
    for (int k = 0; k < s->n; k++)
        if (strcmp(s->claims[k].uid, uid) == 0)
            return &s->claims[k];
    return NULL;
}

static int checkpoint_write(struct gs_draclaims *s, struct gs_error *err)
{
    json_t *cl = json_array(), *root = json_pack("{s:i,s:o}", "v", 1, "claims", cl);
    int rc = root ? 0 : GS_ENOMEM;
    for (int k = 0; k < s->n && !rc; k++) {
        const struct gs_dra_claim *c = &s->claims[k];
        json_t *devs = json_array();
        for (int j = 0; j < c->ndev && devs; j++) {
            const struct gs_dra_prepdev *p = &c->dev[j];
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
    rc = gs_file_write_atomic(s->path, text, err);
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

/* Device j of claim k (x) into p. */
static int read_device(const json_t *x, size_t k, size_t j, struct gs_dra_prepdev *p,
                       struct gs_error *err)
{
    const char *req, *dev, *uuid;
    int gpu, created, rc;
    json_int_t gi;
    json_error_t je;
    struct gs_dra_devref ref;
    char at[64];
    snprintf(at, sizeof(at), "claims[%zu].devices[%zu]", k, j);
    if (json_unpack_ex((json_t *)x, &je, JSON_STRICT, "{s:s,s:s,s:s,s:i,s:I,s:b}", "request", &req,
                       "device", &dev, "uuid", &uuid, "gpu", &gpu, "gi", &gi, "created",
                       &created) ||
        gi < 0 || gi > UINT32_MAX)
        return gs_error_set(err, GS_EINVAL,
                            "%s: expected request, device, uuid, gpu, gi, created%s%s", at,
                            je.text[0] ? ": " : "", je.text);
    if ((rc = copy_bounded(p->request, sizeof(p->request), req, "request", err)) ||
        (rc = copy_bounded(p->uuid, sizeof(p->uuid), uuid, "uuid", err)) ||
        (rc = gs_draslice_parse_name(dev, &ref, err)))
        return gs_error_prefix(err, "%s", at);
    snprintf(p->device, sizeof(p->device), "%s", dev);
    p->gpu = gpu;
    p->gi = (uint32_t)gi;
    p->created = created;
    return 0;
}

/* Claim k (c) of the checkpoint, kept as the next one. */
static int read_claim(struct gs_draclaims *s, const json_t *c, size_t k, struct gs_error *err)
{
    struct gs_dra_claim *cl = &s->claims[s->n];
    const char *uid, *ns, *name;
    json_t *devs;
    json_error_t je;
    char at[64];
    int rc;
    snprintf(at, sizeof(at), "claims[%zu]", k);
    if (json_unpack_ex((json_t *)c, &je, JSON_STRICT, "{s:s,s:s,s:s,s:o}", "uid", &uid, "namespace",
                       &ns, "name", &name, "devices", &devs) ||
        !json_is_array(devs) || json_array_size(devs) > GS_DRA_MAX_RESULTS)
        return gs_error_set(err, GS_EINVAL,
                            "%s: expected uid, namespace, name, devices (at most %d)%s%s", at,
                            GS_DRA_MAX_RESULTS, je.text[0] ? ": " : "", je.text);
    if ((rc = copy_bounded(cl->uid, sizeof(cl->uid), uid, "uid", err)) ||
        (rc = copy_bounded(cl->ns, sizeof(cl->ns), ns, "namespace", err)) ||
        (rc = copy_bounded(cl->name, sizeof(cl->name), name, "name", err)))
        return gs_error_prefix(err, "%s", at);
    if (find(s, uid))
        return gs_error_set(err, GS_EINVAL, "%s: uid %s twice", at, uid);
    size_t j;
    json_t *x;
    json_array_foreach(devs, j, x)
    {
        if ((rc = read_device(x, k, j, &cl->dev[cl->ndev], err)))
            return rc;
        cl->ndev++;
    }
    s->n++;
    return 0;
}

static int checkpoint_read(struct gs_draclaims *s, struct gs_error *err)
{
    if (access(s->path, F_OK) != 0)
        return 0; /* none yet */
    struct gs_buf b;
    gs_buf_init(&b, 0);
    struct gs_error e2;
    gs_error_init(&e2);
    json_t *root = NULL, *claims;
    json_error_t je;
    int v, rc = gs_buf_read_file(&b, s->path, 4u << 20, &e2);
    if (rc)
        goto out;
    if (!(root = json_loadb(b.data, b.len, 0, &je))) {
        rc = gs_error_set(&e2, GS_EINVAL, "line %d: %s", je.line, je.text);
        goto out;
    }
    if (json_unpack_ex(root, &je, JSON_STRICT, "{s:i,s:o}", "v", &v, "claims", &claims) || v != 1 ||
        !json_is_array(claims)) {
        rc = gs_error_set(&e2, GS_EINVAL, "expected {\"v\":1,\"claims\":[...]}%s%s",
                          je.text[0] ? ": " : "", je.text);
        goto out;
    }
    if (json_array_size(claims) > GS_DRA_MAX_CLAIMS) {
        rc = gs_error_set(&e2, GS_EINVAL, "claims: %zu, at most %d", json_array_size(claims),
                          GS_DRA_MAX_CLAIMS);
        goto out;
    }
    size_t k;
    json_t *c;
    json_array_foreach(claims, k, c)
    {
        if ((rc = read_claim(s, c, k, &e2)))
            break;
    }
out:
    json_decref(root);
    gs_buf_release(&b);
    if (rc)
        gs_error_set(err, rc, "DRA checkpoint %s: %s", s->path, e2.msg);
    return rc;
}

int gs_draclaims_open(const char *path, struct gs_draclaims **out, struct gs_error *err)
{
    *out = NULL;
    struct gs_draclaims *s = calloc(1, sizeof(*s));
    if (s)
        s->claims = calloc(GS_DRA_MAX_CLAIMS, sizeof(*s->claims));
    if (!s || !s->claims) {
        gs_draclaims_free(s);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    snprintf(s->path, sizeof(s->path), "%s", path);
    int rc = checkpoint_read(s, err);
    if (rc) {
        gs_draclaims_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void gs_draclaims_free(struct gs_draclaims *s)
{
    if (!s)
        return;
    free(s->claims);
    free(s);
}

int gs_draclaims_count(const struct gs_draclaims *s)
{
    return s->n;
}

const struct gs_dra_claim *gs_draclaims_find(const struct gs_draclaims *s, const char *uid)
{
    return find(s, uid);
}

int gs_draclaims_add(struct gs_draclaims *s, const struct gs_dra_claim *c, struct gs_error *err)
{
    if (s->n >= GS_DRA_MAX_CLAIMS)
        return gs_error_set(err, GS_ENOSPC, "%d claims prepared on this node already", s->n);
    s->claims[s->n++] = *c;
    int rc = checkpoint_write(s, err);
    if (rc)
        s->n--;
    return rc;
}

int gs_draclaims_truncate(struct gs_draclaims *s, const char *uid, int ndev, struct gs_error *err)
{
    struct gs_dra_claim *c = find(s, uid);
    if (c && ndev >= 0 && ndev < c->ndev)
        c->ndev = ndev;
    return checkpoint_write(s, err);
}

int gs_draclaims_remove(struct gs_draclaims *s, const char *uid, struct gs_error *err)
{
    struct gs_dra_claim *c = find(s, uid);
    if (c)
        *c = s->claims[--s->n];
    return checkpoint_write(s, err);
}

bool gs_draclaims_held(const struct gs_draclaims *s, const char *uuid)
{
    for (int k = 0; k < s->n; k++)
        for (int j = 0; j < s->claims[k].ndev; j++)
            if (strcmp(s->claims[k].dev[j].uuid, uuid) == 0)
                return true;
    return false;
}

bool gs_draclaims_created(const struct gs_draclaims *s, const char *uuid)
{
    for (int k = 0; k < s->n; k++)
        for (int j = 0; j < s->claims[k].ndev; j++)
            if (s->claims[k].dev[j].created && strcmp(s->claims[k].dev[j].uuid, uuid) == 0)
                return true;
    return false;
}

int gs_draclaims_uuids(const struct gs_draclaims *s, char (*uuids)[96], int cap)
{
    int n = 0;
    for (int k = 0; k < s->n; k++)
        for (int j = 0; j < s->claims[k].ndev && n < cap; j++)
            snprintf(uuids[n++], 96, "%s", s->claims[k].dev[j].uuid);
    return n;
}
