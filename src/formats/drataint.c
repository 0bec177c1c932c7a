/* drataint.c - device taints, request tolerations and DeviceTaintRules read from the API's JSON,
 * and the rules applied to a world's devices as upstream's ResourceSlice tracker applies them
 * (see drataint.h). formats/draobj.c reads the first two inside slices and claims; sched/claims.c
 * watches the rules and applies them to each cycle's world. */
#include "drataint.h"

#include "../base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *gs_jstr(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* src (optional) into dst[n]; too long is an error */
static int copy(char *dst, size_t n, const char *src, const char *who, const char *path,
                const char *field, struct gs_error *err)
{
    dst[0] = '\0';
    if (!src)
        return 0;
    size_t len = strlen(src);
    if (len >= n)
        return gs_error_set(err, GS_EINVAL, "%s: %s.%s: longer than %zu characters", who, path,
                            field, n - 1);
    memcpy(dst, src, len + 1);
    return 0;
}

/* A field that must be a string when present. */
static int string_or_absent(const json_t *o, const char *key, const char *who, const char *path,
                            struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (v && !json_is_string(v) && !json_is_null(v))
        return gs_error_set(err, GS_EINVAL, "%s: %s.%s: expected a string", who, path, key);
    return 0;
}

static uint8_t effect_of(const char *e)
{
    if (!e || !e[0])
        return GS_DRA_EFFECT_ANY;
    if (strcmp(e, "NoSchedule") == 0)
        return GS_DRA_EFFECT_NOSCHEDULE;
    if (strcmp(e, "NoExecute") == 0)
        return GS_DRA_EFFECT_NOEXECUTE;
    if (strcmp(e, "None") == 0)
        return GS_DRA_EFFECT_NONE;
    return GS_DRA_EFFECT_OTHER;
}

/* One taint {key, value, effect, timeAdded} at path. */
static int read_taint(const json_t *t, struct gs_dra_taint *x, const char *who, const char *path,
                      struct gs_error *err)
{
    memset(x, 0, sizeof(*x));
    if (!json_is_object(t))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected an object", who, path);
    int rc;
    if ((rc = string_or_absent(t, "key", who, path, err)) ||
        (rc = string_or_absent(t, "value", who, path, err)) ||
        (rc = string_or_absent(t, "effect", who, path, err)) ||
        (rc = string_or_absent(t, "timeAdded", who, path, err)) ||
        (rc = copy(x->key, sizeof(x->key), gs_jstr(t, "key"), who, path, "key", err)) ||
        (rc = copy(x->value, sizeof(x->value), gs_jstr(t, "value"), who, path, "value", err)))
        return rc;
    if (!x->key[0])
        return gs_error_set(err, GS_EINVAL, "%s: %s.key is required", who, path);
    x->effect = effect_of(gs_jstr(t, "effect"));
    if (x->effect == GS_DRA_EFFECT_ANY) /* none given: informational, as an unknown one */
        x->effect = GS_DRA_EFFECT_OTHER;
    return 0;
}

int gs_drataint_read_taints(const json_t *a, struct gs_dra_taint *out, uint16_t *n, const char *who,
                            const char *path, struct gs_error *err)
{
    *n = 0;
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a) || json_array_size(a) > GS_DRA_MAX_TAINTS)
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a list of at most %d taints", who,
                            path, GS_DRA_MAX_TAINTS);
    size_t i;
    const json_t *t;
    json_array_foreach(a, i, t)
    {
        char p[160];
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        int rc = read_taint(t, &out[*n], who, p, err);
        if (rc)
            return rc;
        (*n)++;
    }
    return 0;
}

int gs_drataint_read_tolerations(const json_t *a, struct gs_dra_toleration **out, int *n,
                                 const char *who, const char *path, struct gs_error *err)
{
    *out = NULL;
    *n = 0;
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a) || json_array_size(a) > GS_DRA_MAX_TOL)
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a list of at most %d tolerations",
                            who, path, GS_DRA_MAX_TOL);
    if (json_array_size(a) == 0)
        return 0;
    struct gs_dra_toleration *tol = calloc(json_array_size(a), sizeof(*tol));
    if (!tol)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    size_t i;
    const json_t *t;
    int rc = 0;
    json_array_foreach(a, i, t)
    {
        struct gs_dra_toleration *x = &tol[i];
        char p[160];
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        if (!json_is_object(t)) {
            rc = gs_error_set(err, GS_EINVAL, "%s: %s: expected an object", who, p);
            break;
        }
        const json_t *secs = json_object_get(t, "tolerationSeconds");
        if ((rc = string_or_absent(t, "key", who, p, err)) ||
            (rc = string_or_absent(t, "operator", who, p, err)) ||
            (rc = string_or_absent(t, "value", who, p, err)) ||
            (rc = string_or_absent(t, "effect", who, p, err)) ||
            (rc = copy(x->key, sizeof(x->key), gs_jstr(t, "key"), who, p, "key", err)) ||
            (rc = copy(x->value, sizeof(x->value), gs_jstr(t, "value"), who, p, "value", err)))
            break;
        if (secs && !json_is_integer(secs) && !json_is_null(secs)) {
            rc = gs_error_set(err, GS_EINVAL, "%s: %s.tolerationSeconds: expected an integer", who,
                              p);
            break;
        }
        const char *op = gs_jstr(t, "operator");
        /* "" is Equal (the API defaults it); any other operator tolerates nothing */
        x->op = !op || !op[0] || strcmp(op, "Equal") == 0 ? GS_DRA_TOL_EQUAL
                : strcmp(op, "Exists") == 0               ? GS_DRA_TOL_EXISTS
                                                          : GS_DRA_TOL_OTHER;
        x->effect = effect_of(gs_jstr(t, "effect"));
    }
    if (rc) {
        free(tol);
        return rc;
    }
    *out = tol;
    *n = (int)json_array_size(a);
    return 0;
}

int gs_drataint_rule_read(const json_t *o, struct gs_drataint_rule *r, struct gs_error *err)
{
    memset(r, 0, sizeof(*r));
    const char *name = gs_jstr(json_object_get(o, "metadata"), "name");
    if (!name || !name[0])
        return gs_error_set(err, GS_EINVAL, "devicetaintrule: metadata.name is required");
    if (strlen(name) >= sizeof(r->name))
        return gs_error_set(err, GS_EINVAL, "devicetaintrule: metadata.name: longer than %zu",
                            sizeof(r->name) - 1);
    memcpy(r->name, name, strlen(name) + 1);
    char who[GS_KNAME_MAX + 20];
    snprintf(who, sizeof(who), "devicetaintrule %s", r->name);
    const json_t *spec = json_object_get(o, "spec");
    const json_t *sel = json_object_get(spec, "deviceSelector");
    int rc;
    if (sel && !json_is_null(sel)) {
        if (!json_is_object(sel))
            return gs_error_set(err, GS_EINVAL, "%s: spec.deviceSelector: expected an object", who);
        r->selector = true;
        const char *p = "spec.deviceSelector";
        if ((rc = string_or_absent(sel, "driver", who, p, err)) ||
            (rc = string_or_absent(sel, "pool", who, p, err)) ||
            (rc = string_or_absent(sel, "device", who, p, err)) ||
            (rc = copy(r->driver, sizeof(r->driver), gs_jstr(sel, "driver"), who, p, "driver",
                       err)) ||
            (rc = copy(r->pool, sizeof(r->pool), gs_jstr(sel, "pool"), who, p, "pool", err)) ||
            (rc =
                 copy(r->device, sizeof(r->device), gs_jstr(sel, "device"), who, p, "device", err)))
            return rc;
    }
    return read_taint(json_object_get(spec, "taint"), &r->taint, who, "spec.taint", err);
}

bool gs_drataint_rule_selects(const struct gs_drataint_rule *r, const struct gs_dra_device *d)
{
    return r->selector && (!r->driver[0] || strcmp(r->driver, d->driver) == 0) &&
           (!r->pool[0] || strcmp(r->pool, d->pool) == 0) &&
           (!r->device[0] || strcmp(r->device, d->name) == 0);
}

int gs_drataint_apply(struct gs_dra_device *dev, int ndev, const struct gs_drataint_rule *rules,
                      int n, struct gs_dra_taint **store)
{
    *store = NULL;
    size_t total = 0;
    for (int i = 0; i < ndev; i++) {
        size_t add = 0;
        for (int k = 0; k < n; k++)
            add += gs_drataint_rule_selects(&rules[k], &dev[i]);
        if (add)
            total += add + dev[i].ntaints;
    }
    if (total == 0)
        return 0;
    struct gs_dra_taint *t = malloc(sizeof(*t) * total);
    if (!t)
        return GS_ENOMEM;
    size_t used = 0;
    for (int i = 0; i < ndev; i++) {
        struct gs_dra_device *d = &dev[i];
        size_t start = used;
        for (int k = 0; k < n; k++)
            if (gs_drataint_rule_selects(&rules[k], d))
                t[used++] = rules[k].taint;
        if (used == start)
            continue;
        /* the device's own first, as the tracker appends the rules' */
        memmove(&t[start + d->ntaints], &t[start], sizeof(*t) * (used - start));
        if (d->ntaints)
            memcpy(&t[start], d->taints, sizeof(*t) * d->ntaints);
        used += d->ntaints;
        d->taints = &t[start];
        d->ntaints = (uint16_t)(used - start);
        for (size_t k = start; k < used; k++)
            d->tainted |=
                t[k].effect == GS_DRA_EFFECT_NOSCHEDULE || t[k].effect == GS_DRA_EFFECT_NOEXECUTE;
    }
    *store = t;
    return 0;
}
