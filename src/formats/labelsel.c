/* labelsel.c - label selectors read and matched (formats/labelsel.h). */
#include "labelsel.h"

#include "../base/error.h"

#include <stdio.h>
#include <string.h>

static int set_req(struct gs_sel_req *r, const char *key, const char *who, const char *path,
                   struct gs_error *err)
{
    memset(r, 0, sizeof(*r));
    if (!key || !key[0] || strlen(key) >= GS_LABEL_KEY_MAX)
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a label key of 1..%d characters", who,
                            path, GS_LABEL_KEY_MAX - 1);
    snprintf(r->key, sizeof(r->key), "%s", key);
    return 0;
}

static int add_value(struct gs_sel_req *r, const json_t *v, const char *who, const char *path,
                     struct gs_error *err)
{
    if (r->nval >= GS_SEL_MAX_VALS || !json_is_string(v) ||
        strlen(json_string_value(v)) >= GS_LABEL_VAL_MAX)
        return gs_error_set(err, GS_EINVAL,
                            "%s: %s: expected at most %d string values of at most %d characters",
                            who, path, GS_SEL_MAX_VALS, GS_LABEL_VAL_MAX - 1);
    snprintf(r->val[r->nval++], GS_LABEL_VAL_MAX, "%s", json_string_value(v));
    return 0;
}

static int read_expr(const json_t *e, struct gs_sel_req *r, const char *who, const char *path,
                     struct gs_error *err)
{
    if (!json_is_object(e))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected an object", who, path);
    const json_t *k = json_object_get(e, "key"), *op = json_object_get(e, "operator");
    char p[256];
    snprintf(p, sizeof(p), "%s.key", path);
    int rc = set_req(r, json_is_string(k) ? json_string_value(k) : NULL, who, p, err);
    if (rc)
        return rc;
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist"};
    int o = -1;
    for (int i = 0; json_is_string(op) && i < 4; i++)
        if (strcmp(json_string_value(op), ops[i]) == 0)
            o = i;
    if (o < 0)
        return gs_error_set(err, GS_EINVAL,
                            "%s: %s.operator: '%s': expected In, NotIn, Exists or DoesNotExist",
                            who, path, json_is_string(op) ? json_string_value(op) : "");
    r->op = (uint8_t)o;
    const json_t *vals = json_object_get(e, "values"), *v;
    snprintf(p, sizeof(p), "%s.values", path);
    if (vals && !json_is_array(vals))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a list", who, p);
    size_t i;
    json_array_foreach(vals, i, v)
    {
        if ((rc = add_value(r, v, who, p, err)))
            return rc;
    }
    if (o <= GS_SEL_NOTIN && r->nval == 0)
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected values for %s", who, p, ops[o]);
    if (o > GS_SEL_NOTIN && r->nval > 0)
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected none for %s", who, p, ops[o]);
    return 0;
}

int gs_labelsel_read(const json_t *sel, struct gs_sel_req *out, int max, int *nout, const char *who,
                     const char *path, struct gs_error *err)
{
    *nout = 0;
    if (!sel || json_is_null(sel))
        return 0;
    if (!json_is_object(sel))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a label selector", who, path);
    const json_t *ml = json_object_get(sel, "matchLabels"),
                 *me = json_object_get(sel, "matchExpressions");
    if ((ml && !json_is_object(ml) && !json_is_null(ml)) ||
        (me && !json_is_array(me) && !json_is_null(me)))
        return gs_error_set(err, GS_EINVAL,
                            "%s: %s: expected matchLabels an object and matchExpressions a list",
                            who, path);
    char p[256];
    const char *key;
    const json_t *v;
    int rc;
    json_object_foreach((json_t *)ml, key, v)
    {
        snprintf(p, sizeof(p), "%s.matchLabels.%s", path, key);
        if (*nout >= max)
            return gs_error_set(err, GS_EINVAL, "%s: %s: more than %d requirements", who, p, max);
        struct gs_sel_req *r = &out[*nout];
        if ((rc = set_req(r, key, who, p, err)) || (rc = add_value(r, v, who, p, err)))
            return rc;
        r->op = GS_SEL_IN;
        (*nout)++;
    }
    size_t i;
    json_array_foreach(me, i, v)
    {
        snprintf(p, sizeof(p), "%s.matchExpressions[%zu]", path, i);
        if (*nout >= max)
            return gs_error_set(err, GS_EINVAL, "%s: %s: more than %d requirements", who, p, max);
        if ((rc = read_expr(v, &out[*nout], who, p, err)))
            return rc;
        (*nout)++;
    }
    return 0;
}

bool gs_labelsel_matches(const struct gs_sel_req *sel, int n, gs_label_fn label, const void *obj)
{
    for (int i = 0; i < n; i++) {
        const struct gs_sel_req *r = &sel[i];
        const char *v = label(obj, r->key);
        bool in = false;
        for (int k = 0; v && k < r->nval; k++)
            in |= strcmp(v, r->val[k]) == 0;
        bool ok = r->op == GS_SEL_IN       ? in
                  : r->op == GS_SEL_NOTIN  ? !in
                  : r->op == GS_SEL_EXISTS ? v != NULL
                                           : v == NULL;
        if (!ok)
            return false;
    }
    return true;
}
