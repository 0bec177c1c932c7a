/* draobj.c - DeviceClass, ResourceSlice and ResourceClaim readers, worlds built from slices,
 * claims prepared for core/dra.c (CEL selectors through formats/cel.c), and the claim status
 * patch the scheduler writes (see draobj.h). */
#include "draobj.h"
#include "jfield.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "cel.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int put(char *dst, size_t n, const char *src, const char *who, const char *path,
               bool required, struct gs_error *err)
{
    if (!src || !src[0]) {
        dst[0] = '\0';
        return required ? gs_error_set(err, GS_EINVAL, "%s: %s is required", who, path) : 0;
    }
    if (strlen(src) >= n)
        return gs_error_set(err, GS_EINVAL, "%s: %s: longer than %zu characters", who, path, n - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* selectors[] of {cel: {expression}} into owned strings */
static int read_selectors(const json_t *a, char **sel, int *n, const char *who, const char *path,
                          struct gs_error *err)
{
    *n = 0;
    if (!a)
        return 0;
    if (!json_is_array(a))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a list", who, path);
    if (json_array_size(a) > GS_DRAOBJ_MAX_SEL)
        return gs_error_set(err, GS_EINVAL, "%s: %s: more than %d selectors", who, path,
                            GS_DRAOBJ_MAX_SEL);
    size_t i;
    const json_t *s;
    json_array_foreach(a, i, s)
    {
        const char *e = gs_jstr(json_object_get(s, "cel"), "expression");
        if (!e)
            return gs_error_set(err, GS_EINVAL, "%s: %s[%zu].cel.expression is required", who, path,
                                i);
        if (strlen(e) > GS_CEL_MAX_LEN)
            return gs_error_set(err, GS_EINVAL, "%s: %s[%zu].cel.expression: longer than %d", who,
                                path, i, GS_CEL_MAX_LEN);
        if (!(sel[*n] = strdup(e)))
            return gs_error_set(err, GS_ENOMEM, "out of memory");
        (*n)++;
    }
    return 0;
}

int gs_draobj_class_read(const json_t *o, struct gs_draobj_class *c, struct gs_error *err)
{
    memset(c, 0, sizeof(*c));
    int rc = put(c->name, sizeof(c->name), gs_jstr(json_object_get(o, "metadata"), "name"),
                 "deviceclass", "metadata.name", true, err);
    if (rc)
        return rc;
    char who[GS_KNAME_MAX + 16];
    snprintf(who, sizeof(who), "deviceclass %s", c->name);
    const json_t *spec = json_object_get(o, "spec");
    if ((rc = put(c->ext, sizeof(c->ext), gs_jstr(spec, "extendedResourceName"), who,
                  "spec.extendedResourceName", false, err)) ||
        (rc = put(c->created, sizeof(c->created),
                  gs_jstr(json_object_get(o, "metadata"), "creationTimestamp"), who,
                  "metadata.creationTimestamp", false, err)))
        return rc;
    rc = read_selectors(json_object_get(spec, "selectors"), c->sel, &c->nsel, who, "spec.selectors",
                        err);
    if (rc)
        gs_draobj_class_release(c);
    return rc;
}

void gs_draobj_class_release(struct gs_draobj_class *c)
{
    for (int i = 0; i < c->nsel; i++)
        free(c->sel[i]);
    c->nsel = 0;
}

/* A quantity as text or integer, in milli (counters) and as a quantity (capacities). */
static int read_qty(const json_t *v, struct gs_quantity *q, const char *who, const char *path,
                    const char *key, struct gs_error *err)
{
    char buf[GS_QUANTITY_MAX_LEN];
    const json_t *x = json_object_get(v, "value");
    if (json_is_string(x))
        snprintf(buf, sizeof(buf), "%s", json_string_value(x));
    else if (json_is_integer(x))
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(x));
    else
        return gs_error_set(err, GS_EINVAL, "%s: %s.%s.value: expected a quantity", who, path, key);
    struct gs_error qe;
    gs_error_init(&qe);
    if (gs_quantity_parse(buf, strlen(buf), q, &qe) || q->nanos < 0)
        return gs_error_set(err, GS_EINVAL, "%s: %s.%s.value: %s", who, path, key,
                            qe.msg[0] ? qe.msg : "negative");
    return 0;
}

static int qualify(char *out, const char *driver, const char *key, const char *who,
                   const char *path, struct gs_error *err)
{
    int n = strchr(key, '/') ? snprintf(out, GS_DRA_QNAME_MAX, "%s", key)
                             : snprintf(out, GS_DRA_QNAME_MAX, "%s/%s", driver, key);
    if (n < 0 || n >= GS_DRA_QNAME_MAX)
        return gs_error_set(err, GS_EINVAL, "%s: %s.%s: name too long", who, path, key);
    return 0;
}

static int read_attrs(const json_t *m, bool cap, const char *driver, struct gs_dra_device *d,
                      const char *who, const char *path, struct gs_error *err)
{
    if (!m)
        return 0;
    if (!json_is_object(m))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a map", who, path);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)m, key, v)
    {
        if (d->nattrs >= GS_DRA_MAX_ATTRS)
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s: more than %d attributes and "
                                "capacities",
                                who, path, GS_DRA_MAX_ATTRS);
        struct gs_dra_attr *a = &d->attrs[d->nattrs];
        memset(a, 0, sizeof(*a));
        int rc = qualify(a->name, driver, key, who, path, err);
        if (rc)
            return rc;
        a->capacity = cap;
        if (cap) {
            a->v.type = GS_DRA_QUANTITY;
            if ((rc = read_qty(v, &a->v.q, who, path, key, err)))
                return rc;
        } else if (json_is_integer(json_object_get(v, "int"))) {
            a->v.type = GS_DRA_INT;
            a->v.i = json_integer_value(json_object_get(v, "int"));
        } else if (json_is_boolean(json_object_get(v, "bool"))) {
            a->v.type = GS_DRA_BOOL;
            a->v.b = json_is_true(json_object_get(v, "bool"));
        } else if (gs_jstr(v, "string") || gs_jstr(v, "version")) {
            const char *s = gs_jstr(v, "string") ? gs_jstr(v, "string") : gs_jstr(v, "version");
            a->v.type = gs_jstr(v, "string") ? GS_DRA_STRING : GS_DRA_VERSION;
            if (strlen(s) >= sizeof(a->v.s))
                return gs_error_set(err, GS_EINVAL, "%s: %s.%s: longer than %zu characters", who,
                                    path, key, sizeof(a->v.s) - 1);
            memcpy(a->v.s, s, strlen(s) + 1);
        } else {
            continue; /* list forms and future types: not selectable here */
        }
        d->nattrs++;
    }
    return 0;
}

/* {NAME: {value}} of a counter set or a consumption */
static int read_counters(const json_t *m, char (*names)[GS_DRA_NAME_MAX], int64_t *milli,
                         uint8_t *n, const char *who, const char *path, struct gs_error *err)
{
    *n = 0;
    if (!json_is_object(m))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a map of counters", who, path);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)m, key, v)
    {
        if (*n >= GS_DRA_MAX_COUNTERS)
            return gs_error_set(err, GS_EINVAL, "%s: %s: more than %d counters", who, path,
                                GS_DRA_MAX_COUNTERS);
        int rc = put(names[*n], GS_DRA_NAME_MAX, key, who, path, true, err);
        struct gs_quantity q;
        if (rc || (rc = read_qty(v, &q, who, path, key, err)))
            return rc;
        milli[*n] = gs_quantity_milli(&q);
        (*n)++;
    }
    return 0;
}

/* A device's taints into the slice's store at *used (room counted beforehand). */
static int read_device_taints(const json_t *a, struct gs_draobj_slice *s, struct gs_dra_device *d,
                              size_t *used, const char *who, const char *path, struct gs_error *err)
{
    struct gs_dra_taint t[GS_DRA_MAX_TAINTS];
    int rc = gs_drataint_read_taints(a, t, &d->ntaints, who, path, err);
    if (rc || d->ntaints == 0)
        return rc;
    memcpy(&s->taints[*used], t, sizeof(*t) * d->ntaints);
    d->taints = &s->taints[*used];
    *used += d->ntaints;
    for (int k = 0; k < d->ntaints; k++)
        d->tainted |=
            t[k].effect == GS_DRA_EFFECT_NOSCHEDULE || t[k].effect == GS_DRA_EFFECT_NOEXECUTE;
    return 0;
}

int gs_draobj_slice_read(const json_t *o, struct gs_draobj_slice *s, struct gs_error *err)
{
    memset(s, 0, sizeof(*s));
    /* a slice not created yet has only a generateName: the name is for messages */
    const json_t *md = json_object_get(o, "metadata");
    int rc = put(s->name, sizeof(s->name),
                 gs_jstr(md, "name") ? gs_jstr(md, "name") : gs_jstr(md, "generateName"),
                 "resourceslice", "metadata.name", false, err);
    if (rc)
        return rc;
    char who[GS_KNAME_MAX + 16];
    snprintf(who, sizeof(who), "resourceslice %s", s->name);
    const json_t *spec = json_object_get(o, "spec");
    const json_t *pool = json_object_get(spec, "pool");
    if ((rc = put(s->driver, sizeof(s->driver), gs_jstr(spec, "driver"), who, "spec.driver", true,
                  err)) ||
        (rc = put(s->pool, sizeof(s->pool), gs_jstr(pool, "name"), who, "spec.pool.name", true,
                  err)) ||
        (rc = put(s->node, sizeof(s->node), gs_jstr(spec, "nodeName"), who, "spec.nodeName", false,
                  err)))
        goto out;
    s->generation = json_integer_value(json_object_get(pool, "generation"));
    s->all_nodes = json_is_true(json_object_get(spec, "allNodes"));
    s->other_nodes = !s->node[0] && !s->all_nodes;
    const json_t *sets = json_object_get(spec, "sharedCounters");
    if (sets && (!json_is_array(sets) || json_array_size(sets) > GS_DRAOBJ_MAX_SETS)) {
        rc = gs_error_set(err, GS_EINVAL, "%s: spec.sharedCounters: expected a list of at most %d",
                          who, GS_DRAOBJ_MAX_SETS);
        goto out;
    }
    size_t i;
    const json_t *x;
    json_array_foreach(sets, i, x)
    {
        struct gs_dra_counterset *cs = &s->sets[s->nsets];
        char path[64];
        snprintf(path, sizeof(path), "spec.sharedCounters[%zu]", i);
        if ((rc = put(cs->name, sizeof(cs->name), gs_jstr(x, "name"), who, path, true, err)))
            goto out;
        snprintf(path, sizeof(path), "spec.sharedCounters[%zu].counters", i);
        if ((rc = read_counters(json_object_get(x, "counters"), cs->counter, cs->milli, &cs->n, who,
                                path, err)))
            goto out;
        snprintf(cs->driver, sizeof(cs->driver), "%s", s->driver);
        snprintf(cs->pool, sizeof(cs->pool), "%s", s->pool);
        cs->node = -1;
        s->nsets++;
    }
    const json_t *devs = json_object_get(spec, "devices");
    if (devs && (!json_is_array(devs) || json_array_size(devs) > GS_DRAOBJ_MAX_DEV)) {
        rc = gs_error_set(err, GS_EINVAL, "%s: spec.devices: expected a list of at most %d", who,
                          GS_DRAOBJ_MAX_DEV);
        goto out;
    }
    size_t nd = json_array_size(devs), ntaints = 0;
    s->dev = calloc(nd + 1, sizeof(*s->dev));
    s->cref = calloc(nd + 1, sizeof(*s->cref));
    json_array_foreach(devs, i, x)
    {
        const json_t *t = json_object_get(x, "taints");
        ntaints +=
            json_is_array(t) && json_array_size(t) <= GS_DRA_MAX_TAINTS ? json_array_size(t) : 0;
    }
    s->taints = ntaints ? malloc(sizeof(*s->taints) * ntaints) : NULL;
    if (!s->dev || !s->cref || (ntaints && !s->taints)) {
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        goto out;
    }
    ntaints = 0;
    json_array_foreach(devs, i, x)
    {
        struct gs_dra_device *d = &s->dev[s->ndev];
        char path[96];
        snprintf(path, sizeof(path), "spec.devices[%zu].name", i);
        if ((rc = put(d->name, sizeof(d->name), gs_jstr(x, "name"), who, path, true, err)))
            goto out;
        snprintf(d->driver, sizeof(d->driver), "%s", s->driver);
        snprintf(d->pool, sizeof(d->pool), "%s", s->pool);
        d->node = -1;
        snprintf(path, sizeof(path), "spec.devices[%zu].attributes", i);
        if ((rc =
                 read_attrs(json_object_get(x, "attributes"), false, s->driver, d, who, path, err)))
            goto out;
        snprintf(path, sizeof(path), "spec.devices[%zu].capacity", i);
        if ((rc = read_attrs(json_object_get(x, "capacity"), true, s->driver, d, who, path, err)))
            goto out;
        d->multi_alloc = json_is_true(json_object_get(x, "allowMultipleAllocations"));
        snprintf(path, sizeof(path), "spec.devices[%zu].taints", i);
        if ((rc = read_device_taints(json_object_get(x, "taints"), s, d, &ntaints, who, path, err)))
            goto out;
        size_t j;
        const json_t *c;
        const json_t *cc = json_object_get(x, "consumesCounters");
        if (cc && (!json_is_array(cc) || json_array_size(cc) > GS_DRA_MAX_CONSUME)) {
            rc = gs_error_set(err, GS_EINVAL,
                              "%s: spec.devices[%zu].consumesCounters: expected a list of at "
                              "most %d",
                              who, i, GS_DRA_MAX_CONSUME);
            goto out;
        }
        json_array_foreach(cc, j, c)
        {
            struct gs_draobj_cref *cr = &s->cref[s->ndev][j];
            snprintf(path, sizeof(path), "spec.devices[%zu].consumesCounters[%zu]", i, j);
            if ((rc = put(cr->set, sizeof(cr->set), gs_jstr(c, "counterSet"), who, path, true,
                          err)) ||
                (rc = read_counters(json_object_get(c, "counters"), cr->counter,
                                    d->consume[j].milli, &cr->n, who, path, err)))
                goto out;
            d->consume[j].n = cr->n;
            d->nconsume++;
        }
        s->ndev++;
    }
    rc = 0;
out:
    if (rc)
        gs_draobj_slice_release(s);
    return rc;
}

void gs_draobj_slice_release(struct gs_draobj_slice *s)
{
    free(s->dev);
    free(s->cref);
    free(s->taints);
    s->dev = NULL;
    s->cref = NULL;
    s->taints = NULL;
    s->ndev = 0;
}

static int read_sub(const json_t *x, struct gs_draobj_sub *sb, const char *who, const char *path,
                    struct gs_error *err)
{
    char p[160];
    snprintf(p, sizeof(p), "%s.deviceClassName", path);
    int rc = put(sb->cls, sizeof(sb->cls), gs_jstr(x, "deviceClassName"), who, p, true, err);
    if (rc)
        return rc;
    const char *mode = gs_jstr(x, "allocationMode");
    if (!mode || strcmp(mode, "ExactCount") == 0)
        sb->mode = GS_DRA_EXACT;
    else if (strcmp(mode, "All") == 0)
        sb->mode = GS_DRA_ALL;
    else
        return gs_error_set(err, GS_EINVAL,
                            "%s: %s.allocationMode: \"%s\" (expected ExactCount "
                            "or All)",
                            who, path, mode);
    const json_t *cnt = json_object_get(x, "count");
    sb->count = 1;
    if (cnt) {
        if (!json_is_integer(cnt) || json_integer_value(cnt) < 1 ||
            json_integer_value(cnt) > GS_DRA_MAX_COUNT)
            return gs_error_set(err, GS_EINVAL, "%s: %s.count: expected an integer in 1..%d", who,
                                path, GS_DRA_MAX_COUNT);
        sb->count = (int32_t)json_integer_value(cnt);
    }
    snprintf(p, sizeof(p), "%s.tolerations", path);
    if ((rc = gs_drataint_read_tolerations(json_object_get(x, "tolerations"), &sb->tol, &sb->ntol,
                                           who, p, err)))
        return rc;
    snprintf(p, sizeof(p), "%s.selectors", path);
    return read_selectors(json_object_get(x, "selectors"), sb->sel, &sb->nsel, who, p, err);
}

static int read_claim_spec(const json_t *devices, struct gs_draobj_claim *c, const char *who,
                           struct gs_error *err)
{
    const json_t *reqs = json_object_get(devices, "requests");
    if (!json_is_array(reqs) || json_array_size(reqs) == 0 ||
        json_array_size(reqs) > GS_DRA_MAX_REQ)
        return gs_error_set(err, GS_EINVAL,
                            "%s: spec.devices.requests: expected a list of 1 to %d requests", who,
                            GS_DRA_MAX_REQ);
    size_t i;
    const json_t *r;
    int rc;
    if (gs_draobj_claim_alloc(c, (int)json_array_size(reqs)))
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    json_array_foreach(reqs, i, r)
    {
        struct gs_draobj_req *q = &c->req[c->nreq++];
        char path[96];
        snprintf(path, sizeof(path), "spec.devices.requests[%zu].name", i);
        if ((rc = put(q->name, sizeof(q->name), gs_jstr(r, "name"), who, path, true, err)))
            return rc;
        const json_t *ex = json_object_get(r, "exactly"),
                     *fa = json_object_get(r, "firstAvailable");
        if (ex && !fa) {
            snprintf(path, sizeof(path), "spec.devices.requests[%zu].exactly", i);
            q->nsub = 1;
            if ((rc = read_sub(ex, &q->sub[0], who, path, err)))
                return rc;
        } else if (fa && !ex) {
            if (!json_is_array(fa) || json_array_size(fa) == 0 ||
                json_array_size(fa) > GS_DRA_MAX_SUB)
                return gs_error_set(err, GS_EINVAL,
                                    "%s: spec.devices.requests[%zu].firstAvailable: expected 1 to "
                                    "%d sub-requests",
                                    who, i, GS_DRA_MAX_SUB);
            q->first_available = true;
            size_t j;
            const json_t *s;
            json_array_foreach(fa, j, s)
            {
                struct gs_draobj_sub *sb = &q->sub[q->nsub++];
                snprintf(path, sizeof(path), "spec.devices.requests[%zu].firstAvailable[%zu]", i,
                         j);
                char np[128];
                snprintf(np, sizeof(np), "%s.name", path);
                if ((rc =
                         put(sb->name, sizeof(sb->name), gs_jstr(s, "name"), who, np, true, err)) ||
                    (rc = read_sub(s, sb, who, path, err)))
                    return rc;
            }
        } else {
            return gs_error_set(err, GS_EINVAL,
                                "%s: spec.devices.requests[%zu]: exactly one of exactly and "
                                "firstAvailable is required",
                                who, i);
        }
    }
    const json_t *cons = json_object_get(devices, "constraints");
    if (cons && (!json_is_array(cons) || json_array_size(cons) > GS_DRA_MAX_CONS))
        return gs_error_set(err, GS_EINVAL,
                            "%s: spec.devices.constraints: expected a list of at most %d", who,
                            GS_DRA_MAX_CONS);
    json_array_foreach(cons, i, r)
    {
        struct gs_dra_constraint *k = &c->cons[c->ncons];
        const char *m = gs_jstr(r, "matchAttribute"), *d = gs_jstr(r, "distinctAttribute");
        if (!m == !d)
            return gs_error_set(err, GS_EINVAL,
                                "%s: spec.devices.constraints[%zu]: exactly one of matchAttribute "
                                "and distinctAttribute is required",
                                who, i);
        k->distinct = d != NULL;
        const char *a = m ? m : d;
        if (!strchr(a, '/') || strlen(a) >= sizeof(k->attr))
            return gs_error_set(err, GS_EINVAL,
                                "%s: spec.devices.constraints[%zu]: \"%s\": expected a fully "
                                "qualified attribute name (domain/name)",
                                who, i, a);
        memcpy(k->attr, a, strlen(a) + 1);
        const json_t *rl = json_object_get(r, "requests");
        size_t j;
        const json_t *n;
        json_array_foreach(rl, j, n)
        {
            const char *rn = json_string_value(n);
            int found = -1;
            for (int q = 0; rn && q < c->nreq; q++) {
                size_t len = strlen(c->req[q].name);
                /* "req" or "req/sub": the request it belongs to */
                if (strncmp(rn, c->req[q].name, len) == 0 && (rn[len] == '\0' || rn[len] == '/'))
                    found = q;
            }
            if (found < 0)
                return gs_error_set(err, GS_EINVAL,
                                    "%s: spec.devices.constraints[%zu].requests[%zu]: no request "
                                    "\"%s\"",
                                    who, i, j, rn ? rn : "");
            k->reqs |= 1u << found;
        }
        c->ncons++;
    }
    return 0;
}

/* The node a nodeSelector of one term with metadata.name In [node] (or
 * kubernetes.io/hostname) names. */
static void selector_node(const json_t *ns, char *out, size_t n)
{
    out[0] = '\0';
    const json_t *terms = json_object_get(ns, "nodeSelectorTerms");
    const json_t *t = json_array_get(terms, 0);
    const char *lists[] = {"matchFields", "matchExpressions"};
    for (int l = 0; l < 2; l++) {
        size_t i;
        const json_t *e;
        json_array_foreach(json_object_get(t, lists[l]), i, e)
        {
            const char *key = gs_jstr(e, "key");
            const json_t *vals = json_object_get(e, "values");
            if (key &&
                (strcmp(key, "metadata.name") == 0 || strcmp(key, "kubernetes.io/hostname") == 0) &&
                json_array_size(vals) == 1 && json_is_string(json_array_get(vals, 0)))
                snprintf(out, n, "%s", json_string_value(json_array_get(vals, 0)));
        }
    }
}

int gs_draobj_claim_read(const json_t *o, struct gs_draobj_claim *c, struct gs_error *err)
{
    memset(c, 0, sizeof(*c));
    const json_t *md = json_object_get(o, "metadata");
    int rc = put(c->name, sizeof(c->name), gs_jstr(md, "name"), "resourceclaim", "metadata.name",
                 true, err);
    char who[GS_KNAME_MAX + 90];
    snprintf(who, sizeof(who), "resourceclaim %s", c->name);
    if (rc || (rc = put(c->ns, sizeof(c->ns), gs_jstr(md, "namespace"), who, "metadata.namespace",
                        true, err)))
        return rc;
    snprintf(who, sizeof(who), "resourceclaim %s/%s", c->ns, c->name);
    if ((rc = put(c->uid, sizeof(c->uid), gs_jstr(md, "uid"), who, "metadata.uid", false, err)) ||
        (rc = put(c->rv, sizeof(c->rv), gs_jstr(md, "resourceVersion"), who,
                  "metadata.resourceVersion", false, err)))
        return rc;
    const char *ext = gs_jstr(json_object_get(md, "annotations"),
                              "resource.kubernetes.io/extended-resource-claim");
    c->extended = ext && strcmp(ext, "true") == 0;
    c->deleting = json_is_string(json_object_get(md, "deletionTimestamp"));
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(md, "finalizers"), i, r) c->protect |=
        json_is_string(r) && strcmp(json_string_value(r), GS_DRAOBJ_FINALIZER) == 0;
    json_array_foreach(json_object_get(md, "ownerReferences"), i, r)
    {
        if (json_is_true(json_object_get(r, "controller")) &&
            (rc = put(c->owner_uid, sizeof(c->owner_uid), gs_jstr(r, "uid"), who,
                      "metadata.ownerReferences.uid", false, err)))
            return rc;
    }
    const json_t *devices = json_object_get(json_object_get(o, "spec"), "devices");
    if ((rc = read_claim_spec(devices, c, who, err)))
        goto out;
    struct gs_error cerr;
    gs_error_init(&cerr);
    if (gs_cdomain_read(json_object_get(devices, "config"), c->cd_domain, sizeof(c->cd_domain),
                        &cerr) < 0)
        snprintf(c->cd_why, sizeof(c->cd_why), "%s: %s", who, cerr.msg);
    const json_t *st = json_object_get(o, "status");
    const json_t *alloc = json_object_get(st, "allocation");
    if (json_is_object(alloc)) {
        c->allocated = true;
        selector_node(json_object_get(alloc, "nodeSelector"), c->node, sizeof(c->node));
        const json_t *rl = json_object_get(json_object_get(alloc, "devices"), "results");
        if (json_array_size(rl) > 0 &&
            !(c->results =
                  calloc(json_array_size(rl) < GS_DRAOBJ_MAX_RESULTS ? json_array_size(rl)
                                                                     : GS_DRAOBJ_MAX_RESULTS,
                         sizeof(*c->results)))) {
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
            goto out;
        }
        if (c->heap)
            c->heap->results = c->results;
        json_array_foreach(rl, i, r)
        {
            if (c->nresults >= GS_DRAOBJ_MAX_RESULTS) {
                rc = gs_error_set(err, GS_EINVAL,
                                  "%s: status.allocation.devices.results: more "
                                  "than %d",
                                  who, GS_DRAOBJ_MAX_RESULTS);
                goto out;
            }
            struct gs_draobj_result *x = &c->results[c->nresults++];
            char path[96];
            snprintf(path, sizeof(path), "status.allocation.devices.results[%zu]", i);
            if ((rc = put(x->request, sizeof(x->request), gs_jstr(r, "request"), who, path, true,
                          err)) ||
                (rc = put(x->driver, sizeof(x->driver), gs_jstr(r, "driver"), who, path, true,
                          err)) ||
                (rc = put(x->pool, sizeof(x->pool), gs_jstr(r, "pool"), who, path, true, err)) ||
                (rc =
                     put(x->device, sizeof(x->device), gs_jstr(r, "device"), who, path, true, err)))
                goto out;
        }
    }
    const json_t *rf = json_object_get(st, "reservedFor");
    size_t nrf =
        json_array_size(rf) < GS_DRAOBJ_MAX_RESERVED ? json_array_size(rf) : GS_DRAOBJ_MAX_RESERVED;
    if (nrf > 0 && !(c->reserved = calloc(nrf, sizeof(*c->reserved)))) {
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        goto out;
    }
    if (c->heap)
        c->heap->reserved = c->reserved;
    json_array_foreach(rf, i, r)
    {
        if (c->nreserved < GS_DRAOBJ_MAX_RESERVED) {
            struct gs_draobj_reserved *x = &c->reserved[c->nreserved];
            char path[64];
            snprintf(path, sizeof(path), "status.reservedFor[%zu]", i);
            if ((rc = put(x->resource, sizeof(x->resource), gs_jstr(r, "resource"), who, path,
                          false, err)) ||
                (rc = put(x->name, sizeof(x->name), gs_jstr(r, "name"), who, path, true, err)) ||
                (rc = put(x->uid, sizeof(x->uid), gs_jstr(r, "uid"), who, path, false, err)))
                goto out;
        }
        c->nreserved++;
    }
    rc = 0;
out:
    if (rc)
        gs_draobj_claim_release(c);
    return rc;
}

int gs_draobj_claim_alloc(struct gs_draobj_claim *c, int nreq)
{
    struct gs_draobj_heap *h = calloc(1, sizeof(*h));
    struct gs_draobj_req *req = calloc((size_t)nreq + 1, sizeof(*req));
    if (!h || !req) {
        free(h);
        free(req);
        return GS_ENOMEM;
    }
    h->refs = 1;
    h->req = req;
    h->nreq = nreq;
    c->heap = h;
    c->req = req;
    return 0;
}

void gs_draobj_claim_ref(const struct gs_draobj_claim *c)
{
    if (c->heap)
        __atomic_add_fetch(&c->heap->refs, 1, __ATOMIC_RELAXED);
}

void gs_draobj_claim_release(struct gs_draobj_claim *c)
{
    struct gs_draobj_heap *h = c->heap;
    if (h && __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        for (int r = 0; r < h->nreq; r++)
            for (int s = 0; s < h->req[r].nsub; s++) {
                for (int k = 0; k < h->req[r].sub[s].nsel; k++)
                    free(h->req[r].sub[s].sel[k]);
                free(h->req[r].sub[s].tol);
            }
        free(h->req);
        free(h->results);
        free(h->reserved);
        free(h);
    }
    c->heap = NULL;
    c->req = NULL;
    c->results = NULL;
    c->reserved = NULL;
    c->nreq = c->nresults = 0;
}

/* ---------- worlds ---------- */

/* A counter set's key in its world: driver, pool and name. */
static int set_key(const char *driver, const char *pool, const char *name, char *out, size_t n)
{
    int k = snprintf(out, n, "%s/%s/%s", driver, pool, name);
    return k < 0 ? 0 : k >= (int)n ? (int)n - 1 : k;
}

struct pool_gen {
    const char *driver, *pool;
    int64_t gen;
};

int gs_draobj_world_build(const struct gs_draobj_slice *const *slices, int n,
                          int32_t (*node_id)(void *ctx, const char *node), void *ctx,
                          struct gs_draobj_world *out)
{
    memset(out, 0, sizeof(*out));
    size_t nd = 0, ns = 0;
    struct pool_gen *pg = calloc((size_t)n + 1, sizeof(*pg));
    int npg = 0;
    if (!pg)
        return GS_ENOMEM;
    /* each slice's pool, found through a map of "driver/pool" */
    struct gs_strmap pools;
    gs_strmap_init(&pools);
    int32_t *pool_of = calloc((size_t)n + 1, sizeof(*pool_of));
    if (!pool_of) {
        free(pg);
        return GS_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        nd += (size_t)slices[i]->ndev;
        ns += (size_t)slices[i]->nsets;
        char key[GS_DRA_NAME_MAX + GS_KNAME_MAX + 2];
        int kl = snprintf(key, sizeof(key), "%s/%s", slices[i]->driver, slices[i]->pool);
        int k = gs_strmap_get(&pools, key, (uint32_t)kl);
        if (k < 0 && gs_strmap_put(&pools, key, (uint32_t)kl, npg) == 0)
            k = npg;
        if (k < 0) { /* without memory: searched in order */
            k = 0;
            while (k < npg && (strcmp(pg[k].driver, slices[i]->driver) != 0 ||
                               strcmp(pg[k].pool, slices[i]->pool) != 0))
                k++;
        }
        if (k == npg)
            pg[npg++] =
                (struct pool_gen){slices[i]->driver, slices[i]->pool, slices[i]->generation};
        else if (slices[i]->generation > pg[k].gen)
            pg[k].gen = slices[i]->generation;
        pool_of[i] = k;
    }
    gs_strmap_release(&pools);
    out->dev = calloc(nd + 1, sizeof(*out->dev));
    out->sets = calloc(ns + 1, sizeof(*out->sets));
    int32_t *node_of = calloc((size_t)n + 1, sizeof(*node_of));
    bool *use = calloc((size_t)n + 1, sizeof(*use));
    if (!out->dev || !out->sets || !node_of || !use) {
        free(pg);
        free(pool_of);
        free(node_of);
        free(use);
        gs_draobj_world_release(out);
        return GS_ENOMEM;
    }
    /* counter sets first: devices refer to them (by "driver/pool/name", setmap) */
    int nsets = 0, ndev = 0;
    struct gs_strmap setmap;
    gs_strmap_init(&setmap);
    for (int i = 0; i < n; i++) {
        const struct gs_draobj_slice *s = slices[i];
        int k = pool_of[i];
        use[i] = s->generation == pg[k].gen && !s->other_nodes;
        node_of[i] = s->all_nodes ? -1 : node_id(ctx, s->node);
        if (!s->all_nodes && node_of[i] < 0)
            use[i] = false;
        for (int c = 0; use[i] && c < s->nsets; c++) {
            out->sets[nsets] = s->sets[c];
            out->sets[nsets].node = node_of[i];
            char key[3 * GS_KNAME_MAX];
            int kl = set_key(s->driver, s->pool, s->sets[c].name, key, sizeof(key));
            if (gs_strmap_get(&setmap, key, (uint32_t)kl) < 0)
                gs_strmap_put(&setmap, key, (uint32_t)kl, nsets);
            nsets++;
        }
    }
    for (int i = 0; i < n; i++) {
        const struct gs_draobj_slice *s = slices[i];
        for (int d = 0; use[i] && d < s->ndev; d++) {
            struct gs_dra_device *x = &out->dev[ndev];
            *x = s->dev[d];
            x->node = node_of[i];
            bool ok = true;
            for (int c = 0; c < x->nconsume && ok; c++) {
                const struct gs_draobj_cref *cr = &s->cref[d][c];
                char key[3 * GS_KNAME_MAX];
                int kl = set_key(s->driver, s->pool, cr->set, key, sizeof(key));
                int set = gs_strmap_get(&setmap, key, (uint32_t)kl);
                ok = set >= 0;
                x->consume[c].set = set;
                for (int j = 0; ok && j < cr->n; j++) {
                    int ci = -1;
                    for (int q = 0; q < out->sets[set].n && ci < 0; q++)
                        if (strcmp(out->sets[set].counter[q], cr->counter[j]) == 0)
                            ci = q;
                    ok = ci >= 0;
                    x->consume[c].counter[j] = (int8_t)ci;
                }
            }
            if (ok)
                ndev++;
        }
    }
    gs_strmap_release(&setmap);
    free(pg);
    free(pool_of);
    free(node_of);
    free(use);
    out->w = (struct gs_dra_world){out->dev, ndev, out->sets, nsets};
    return 0;
}

int gs_draobj_world_taint(struct gs_draobj_world *w, const struct gs_drataint_rule *rules, int n)
{
    struct gs_dra_taint *store = NULL;
    if (n <= 0)
        return 0;
    int rc = gs_drataint_apply(w->dev, w->w.ndev, rules, n, &store);
    if (rc)
        return rc;
    free(w->taints);
    w->taints = store;
    return 0;
}

void gs_draobj_world_release(struct gs_draobj_world *w)
{
    free(w->dev);
    free(w->sets);
    free(w->taints);
    memset(w, 0, sizeof(*w));
}

/* ---------- claims for core ---------- */

static const struct gs_draobj_class *find_class(const struct gs_draobj_class *cl, int n,
                                                const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(cl[i].name, name) == 0)
            return &cl[i];
    return NULL;
}

/* Compile each selector of sel in turn into prog and keep in ok[] only the devices it selects
 * (one program at a time: a compiled selector is large). */
static int select_devices(struct gs_cel *prog, char *const *sel, int nsel,
                          const struct gs_dra_world *w, bool *ok, const char *who, const char *what,
                          struct gs_error *err)
{
    for (int k = 0; k < nsel; k++) {
        int rc = gs_cel_compile(sel[k], strlen(sel[k]), prog, err);
        if (rc)
            return gs_error_prefix(err, "%s: %s selector \"%.300s\"", who, what, sel[k]);
        for (int d = 0; d < w->ndev; d++)
            if (ok[d])
                ok[d] = gs_cel_eval(prog, &w->dev[d]) == 1;
    }
    return 0;
}

void gs_draobj_selcache_init(struct gs_draobj_selcache *c)
{
    memset(c, 0, sizeof(*c));
    gs_strmap_init(&c->map);
}

void gs_draobj_selcache_release(struct gs_draobj_selcache *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->e[i].cand);
    free(c->e);
    gs_strmap_release(&c->map);
    memset(c, 0, sizeof(*c));
}

/* An alternative's key: its class, selectors and tolerations, each field ended by a NUL. */
static int sel_key(const struct gs_draobj_sub *sb, struct gs_buf *key)
{
    gs_buf_reset(key);
    int rc = gs_buf_append(key, sb->cls, strlen(sb->cls) + 1);
    for (int k = 0; k < sb->nsel && !rc; k++)
        rc = gs_buf_append(key, sb->sel[k], strlen(sb->sel[k]) + 1);
    rc = rc ? rc : gs_buf_append(key, "\x01", 1);
    for (int t = 0; t < sb->ntol && !rc; t++) {
        const struct gs_dra_toleration *x = &sb->tol[t];
        uint8_t ops[2] = {x->op, x->effect};
        rc = gs_buf_append(key, x->key, strlen(x->key) + 1) ||
             gs_buf_append(key, x->value, strlen(x->value) + 1) || gs_buf_append(key, ops, 2);
    }
    return rc ? GS_ENOMEM : 0;
}

/* The candidates of alternative sb of class cl, evaluated over w into ds (cand at store). */
static int evaluate(const struct gs_draobj_sub *sb, const struct gs_draobj_class *cl,
                    const struct gs_dra_world *w, const char *who, struct gs_dra_sub *ds,
                    int32_t *store, struct gs_error *err)
{
    struct gs_cel *prog = malloc(sizeof(*prog));
    bool *ok = malloc(sizeof(*ok) * ((size_t)w->ndev + 1));
    if (!prog || !ok) {
        free(prog);
        free(ok);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    char cwhat[GS_KNAME_MAX + 20];
    snprintf(cwhat, sizeof(cwhat), "deviceclass %s", cl->name);
    for (int d = 0; d < w->ndev; d++)
        ok[d] = true;
    int rc = select_devices(prog, cl->sel, cl->nsel, w, ok, who, cwhat, err);
    if (!rc)
        rc = select_devices(prog, sb->sel, sb->nsel, w, ok, who, "its", err);
    ds->cand = store;
    for (int d = 0; d < w->ndev && !rc; d++) {
        if (ok[d] && w->dev[d].tainted && !gs_dra_tolerated(&w->dev[d], sb->tol, sb->ntol))
            ds->ntainted++;
        else if (ok[d])
            store[ds->ncand++] = d;
    }
    free(prog);
    free(ok);
    return rc;
}

/* Alternative sb's candidates into ds at store (cand, then bynode): from the cache when it has
 * them, else evaluated (and kept there). Returns the ints of store used, or an error. */
static int sub_candidates(const struct gs_draobj_sub *sb, const struct gs_draobj_class *cl,
                          const struct gs_dra_world *w, struct gs_draobj_selcache *cache,
                          struct gs_buf *key, const char *who, struct gs_dra_sub *ds,
                          struct gs_draobj_prep *out, int32_t **store, size_t room,
                          struct gs_error *err)
{
    int32_t at = -1;
    bool keyed = cache && sel_key(sb, key) == 0;
    if (keyed)
        at = gs_strmap_get(&cache->map, key->data, (uint32_t)key->len);
    if (at >= 0) {
        /* the cache's own arrays: they outlive the prep (sched: a cycle's claims alike, 32 KB
         * of candidates each at 4,000 devices, were copied and page-faulted one by one) */
        const struct gs_draobj_selent *e = &cache->e[at];
        ds->cand = e->cand;
        ds->ncand = e->ncand;
        ds->ntainted = e->ntainted;
        ds->bynode = e->indexed ? e->cand + e->ncand : NULL;
        return 0;
    }
    if (!*store) { /* the prep's first alternative not in the cache */
        if (!(out->cand = malloc(sizeof(*out->cand) * room)))
            return gs_error_set(err, GS_ENOMEM, "out of memory");
        *store = out->cand;
    }
    int rc = evaluate(sb, cl, w, who, ds, *store, err);
    if (rc)
        return rc;
    gs_dra_sub_index(ds, w, *store + ds->ncand);
    if (keyed && cache->n == cache->cap) {
        void *v = gs_grow(cache->e, &cache->cap, sizeof(*cache->e), 16);
        if (v)
            cache->e = v;
    }
    if (keyed && cache->n < cache->cap) {
        struct gs_draobj_selent *e = &cache->e[cache->n];
        size_t n = (ds->bynode ? 2 : 1) * (size_t)ds->ncand;
        e->cand = malloc(sizeof(*e->cand) * (n + 1));
        if (e->cand && gs_strmap_put(&cache->map, key->data, (uint32_t)key->len, cache->n) == 0) {
            memcpy(e->cand, *store, sizeof(**store) * n);
            e->ncand = ds->ncand;
            e->ntainted = ds->ntainted;
            e->indexed = ds->bynode != NULL;
            cache->n++;
        } else {
            free(e->cand); /* not cached: still prepared */
        }
    }
    *store += 2 * ds->ncand;
    return 0;
}

int gs_draobj_prepare_cached(const struct gs_draobj_claim *claim,
                             const struct gs_draobj_class *classes, int nclasses,
                             const struct gs_dra_world *w, struct gs_draobj_selcache *cache,
                             struct gs_draobj_prep *out, struct gs_error *err)
{
    /* the requests in use only: the struct is 12 KB, a claim's one request 1.4 KB of it */
    memset(out, 0, offsetof(struct gs_draobj_prep, c.req));
    out->cand = NULL;
    int nalt = 0;
    for (int r = 0; r < claim->nreq; r++)
        nalt += claim->req[r].nsub;
    /* per alternative the cache does not hold, its candidates, then their bynode order
     * (gs_dra_sub_index), in cand: allocated at the first such */
    size_t room = 2 * (size_t)w->ndev * (size_t)nalt + 1;
    int32_t *store = NULL;
    struct gs_buf key;
    gs_buf_init(&key, 0);
    char who[GS_KNAME_MAX + 120];
    int rc = 0;
    out->c.nreq = (uint8_t)claim->nreq;
    for (int r = 0; r < claim->nreq && !rc; r++) {
        const struct gs_draobj_req *q = &claim->req[r];
        struct gs_dra_req *dq = &out->c.req[r];
        memset(dq, 0, sizeof(*dq));
        snprintf(dq->name, sizeof(dq->name), "%s", q->name);
        dq->nsub = (uint8_t)q->nsub;
        for (int s = 0; s < q->nsub && !rc; s++) {
            const struct gs_draobj_sub *sb = &q->sub[s];
            struct gs_dra_sub *ds = &dq->sub[s];
            if (q->first_available)
                snprintf(ds->name, sizeof(ds->name), "%s/%s", q->name, sb->name);
            else
                snprintf(ds->name, sizeof(ds->name), "%s", q->name);
            ds->mode = sb->mode;
            ds->count = sb->count;
            snprintf(who, sizeof(who), "resourceclaim %s/%s: request %s", claim->ns, claim->name,
                     ds->name);
            const struct gs_draobj_class *cl = find_class(classes, nclasses, sb->cls);
            if (!cl) {
                rc = gs_error_set(err, GS_ENOTFOUND, "%s: deviceclass \"%s\" not found", who,
                                  sb->cls);
                break;
            }
            rc = sub_candidates(sb, cl, w, cache, &key, who, ds, out, &store, room, err);
        }
    }
    gs_buf_release(&key);
    out->c.ncons = (uint8_t)claim->ncons;
    memcpy(out->c.cons, claim->cons, sizeof(claim->cons));
    if (rc)
        gs_draobj_prep_release(out);
    return rc;
}

int gs_draobj_prepare(const struct gs_draobj_claim *claim, const struct gs_draobj_class *classes,
                      int nclasses, const struct gs_dra_world *w, struct gs_draobj_prep *out,
                      struct gs_error *err)
{
    return gs_draobj_prepare_cached(claim, classes, nclasses, w, NULL, out, err);
}

void gs_draobj_prep_release(struct gs_draobj_prep *p)
{
    free(p->cand);
    p->cand = NULL;
}

json_t *gs_draobj_status_patch(const struct gs_draobj_claim *claim, const struct gs_dra_claim *dc,
                               const struct gs_dra_result *alloc, const struct gs_dra_world *w,
                               const char *node, const char *pod_name, const char *pod_uid)
{
    json_t *res = json_array();
    for (int i = 0; i < claim->nreserved && i < GS_DRAOBJ_MAX_RESERVED; i++)
        json_array_append_new(
            res, json_pack("{s:s, s:s, s:s}", "resource",
                           claim->reserved[i].resource[0] ? claim->reserved[i].resource : "pods",
                           "name", claim->reserved[i].name, "uid", claim->reserved[i].uid));
    json_array_append_new(
        res, json_pack("{s:s, s:s, s:s}", "resource", "pods", "name", pod_name, "uid", pod_uid));
    json_t *status = json_pack("{s:o}", "reservedFor", res);
    if (alloc && status) {
        json_t *results = json_array();
        for (int k = 0; k < alloc->n; k++) {
            const struct gs_dra_device *d = &w->dev[alloc->dev[k]];
            json_array_append_new(results,
                                  json_pack("{s:s, s:s, s:s, s:s}", "request",
                                            gs_dra_result_request(dc, alloc, k), "driver",
                                            d->driver, "pool", d->pool, "device", d->name));
        }
        json_object_set_new(status, "allocation",
                            json_pack("{s:{s:o}, s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}", "devices",
                                      "results", results, "nodeSelector", "nodeSelectorTerms",
                                      "matchFields", "key", "metadata.name", "operator", "In",
                                      "values", node));
    }
    json_t *md = json_object();
    if (claim->uid[0])
        json_object_set_new(md, "uid", json_string(claim->uid));
    if (claim->rv[0])
        json_object_set_new(md, "resourceVersion", json_string(claim->rv));
    json_t *patch = json_pack("{s:o, s:o}", "metadata", md, "status", status);
    return patch;
}

json_t *gs_draobj_finalizer_patch(const struct gs_draobj_claim *claim, bool add)
{
    json_t *md = json_pack("{s:[s]}", add ? "finalizers" : "$deleteFromPrimitiveList/finalizers",
                           GS_DRAOBJ_FINALIZER);
    if (md && claim->uid[0])
        json_object_set_new(md, "uid", json_string(claim->uid));
    if (md && add && claim->rv[0])
        json_object_set_new(md, "resourceVersion", json_string(claim->rv));
    return md ? json_pack("{s:o}", "metadata", md) : NULL;
}

json_t *gs_draobj_release_patch(const struct gs_draobj_claim *claim, const bool *keep)
{
    json_t *res = json_array();
    int nkept = 0;
    for (int i = 0; res && i < claim->nreserved && i < GS_DRAOBJ_MAX_RESERVED; i++) {
        if (!keep[i])
            continue;
        nkept++;
        json_array_append_new(
            res, json_pack("{s:s, s:s, s:s}", "resource",
                           claim->reserved[i].resource[0] ? claim->reserved[i].resource : "pods",
                           "name", claim->reserved[i].name, "uid", claim->reserved[i].uid));
    }
    if (!res)
        return NULL;
    json_t *status;
    if (nkept > 0) {
        status = json_pack("{s:o}", "reservedFor", res);
    } else {
        json_decref(res);
        status = json_pack("{s:n, s:n}", "reservedFor", "allocation");
    }
    json_t *md = json_object();
    if (md && claim->uid[0])
        json_object_set_new(md, "uid", json_string(claim->uid));
    if (md && claim->rv[0])
        json_object_set_new(md, "resourceVersion", json_string(claim->rv));
    return json_pack("{s:o, s:o}", "metadata", md, "status", status);
}
