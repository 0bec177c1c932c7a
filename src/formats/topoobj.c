/* topoobj.c - Kueue's Topology and ResourceFlavor, a pod's topology annotations and the
 * --topology-levels flag (topoobj.h), read into plain records; sched/tenancy.c keeps the
 * objects current and sched/cyclein.c turns them into core/topo.h's levels and asks. */
#include "topoobj.h"

#include "../base/error.h"
#include "jfield.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool alnum(char c)
{
    return isalnum((unsigned char)c) != 0;
}

/* A label key as Kubernetes validates it (a qualified name): an optional DNS subdomain prefix
 * (at most 253 characters) and '/', then a name of 1 to 63 characters of [A-Za-z0-9-_.] that
 * starts and ends with a letter or digit. NULL when valid, else why. */
static const char *key_invalid(const char *k)
{
    size_t n = strlen(k);
    if (n == 0)
        return "is empty";
    if (n > GS_TOPOOBJ_KEY_MAX)
        return "is longer than 316 characters";
    const char *slash = strchr(k, '/');
    const char *name = slash ? slash + 1 : k;
    if (slash && (slash == k || (size_t)(slash - k) > 253 || strchr(name, '/')))
        return "has an invalid prefix";
    for (const char *p = k; p < (slash ? slash : k); p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' || *p == '.'))
            return "has an invalid prefix";
    size_t nl = strlen(name);
    if (nl == 0 || nl > 63 || !alnum(name[0]) || !alnum(name[nl - 1]))
        return "is not a label key (a name of 1 to 63 characters, alphanumeric at both ends)";
    for (const char *p = name; *p; p++)
        if (!alnum(*p) && *p != '-' && *p != '_' && *p != '.')
            return "is not a label key (letters, digits, '-', '_' and '.')";
    return NULL;
}

int gs_kube_topology_read(const json_t *obj, struct gs_kube_topology *t, struct gs_error *err)
{
    memset(t, 0, sizeof(*t));
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    int rc =
        gs_jname(t->name, sizeof(t->name), gs_jstr(md, "name"), "Topology", "metadata.name", err);
    if (rc)
        return rc;
    const json_t *levels = json_object_get(spec, "levels");
    if (!json_is_array(levels) || json_array_size(levels) == 0)
        return gs_error_set(err, GS_EINVAL, "Topology %s: spec.levels: expected 1 to %d levels",
                            t->name, GS_TOPOOBJ_LEVELS_MAX);
    if (json_array_size(levels) > GS_TOPOOBJ_LEVELS_MAX)
        return gs_error_set(err, GS_EINVAL, "Topology %s: spec.levels: %zu levels, at most %d",
                            t->name, json_array_size(levels), GS_TOPOOBJ_LEVELS_MAX);
    size_t i;
    const json_t *l;
    json_array_foreach(levels, i, l)
    {
        const char *k = gs_jstr(l, "nodeLabel");
        const char *bad = k ? key_invalid(k) : "is missing";
        if (bad)
            return gs_error_set(err, GS_EINVAL, "Topology %s: spec.levels[%zu].nodeLabel %s",
                                t->name, i, bad);
        for (int j = 0; j < t->nlevels; j++)
            if (strcmp(t->level[j], k) == 0)
                return gs_error_set(err, GS_EINVAL,
                                    "Topology %s: spec.levels[%zu].nodeLabel: '%s' is also "
                                    "level %d",
                                    t->name, i, k, j);
        snprintf(t->level[t->nlevels++], GS_TOPOOBJ_KEY_MAX + 1, "%s", k);
    }
    for (int j = 0; j + 1 < t->nlevels; j++)
        if (strcmp(t->level[j], "kubernetes.io/hostname") == 0)
            return gs_error_set(err, GS_EINVAL,
                                "Topology %s: spec.levels[%d].nodeLabel: kubernetes.io/hostname "
                                "can only be the lowest level",
                                t->name, j);
    return 0;
}

int gs_kube_flavor_read(const json_t *obj, struct gs_kube_flavor *f, struct gs_error *err)
{
    memset(f, 0, sizeof(*f));
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    int rc = gs_jname(f->name, sizeof(f->name), gs_jstr(md, "name"), "ResourceFlavor",
                      "metadata.name", err);
    if (rc)
        return rc;
    const json_t *tn = json_object_get(spec, "topologyName");
    if (tn && !json_is_null(tn)) {
        char who[GS_TOPOOBJ_NAME_MAX + 32];
        snprintf(who, sizeof(who), "ResourceFlavor %s", f->name);
        if ((rc = gs_jname(f->topology, sizeof(f->topology), json_string_value(tn), who,
                           "spec.topologyName", err)))
            return rc;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(spec, "nodeLabels"), key, v)
    {
        const char *s = json_string_value(v);
        const char *bad = key_invalid(key);
        if (bad)
            return gs_error_set(err, GS_EINVAL, "ResourceFlavor %s: spec.nodeLabels: key %.80s %s",
                                f->name, key, bad);
        if (!s || strlen(s) >= GS_TOPOOBJ_VAL_MAX)
            return gs_error_set(err, GS_EINVAL,
                                "ResourceFlavor %s: spec.nodeLabels.%s: expected a string of at "
                                "most %d characters",
                                f->name, key, GS_TOPOOBJ_VAL_MAX - 1);
        if (f->nlabels == GS_TOPOOBJ_FLAVOR_LABELS)
            return gs_error_set(err, GS_EINVAL, "ResourceFlavor %s: spec.nodeLabels: more than %d",
                                f->name, GS_TOPOOBJ_FLAVOR_LABELS);
        snprintf(f->key[f->nlabels], sizeof(f->key[0]), "%s", key);
        snprintf(f->val[f->nlabels], sizeof(f->val[0]), "%s", s);
        f->nlabels++;
    }
    return 0;
}

/* One annotation's level into a: 1 when set, 0 when absent, -1 with a->error. */
static int ask_level(const json_t *annotations, const char *name, struct gs_kube_topoask *a)
{
    const json_t *v = json_object_get(annotations, name);
    if (!v)
        return 0;
    const char *s = json_string_value(v);
    const char *bad = !s ? "is not a string" : key_invalid(s);
    if (bad) {
        snprintf(a->error, sizeof(a->error), "annotation %s: the level %s", name, bad);
        return -1;
    }
    snprintf(a->level, sizeof(a->level), "%s", s);
    return 1;
}

void gs_kube_topoask_read(const json_t *annotations, struct gs_kube_topoask *a)
{
    memset(a, 0, sizeof(*a));
    int req = ask_level(annotations, GS_TOPO_REQUIRED_ANNOTATION, a);
    if (req < 0)
        return;
    struct gs_kube_topoask b;
    memset(&b, 0, sizeof(b));
    int pref = ask_level(annotations, GS_TOPO_PREFERRED_ANNOTATION, &b);
    if (pref < 0) {
        snprintf(a->error, sizeof(a->error), "%s", b.error);
        return;
    }
    const char *u = gs_jstr(annotations, GS_TOPO_UNCONSTRAINED_ANNOTATION);
    a->unconstrained = u && strcmp(u, "true") == 0;
    if (req + pref + a->unconstrained > 1) {
        snprintf(a->error, sizeof(a->error),
                 "annotations: at most one of %s, %s and %s=true may be set",
                 GS_TOPO_REQUIRED_ANNOTATION, GS_TOPO_PREFERRED_ANNOTATION,
                 GS_TOPO_UNCONSTRAINED_ANNOTATION);
        a->level[0] = '\0';
        return;
    }
    if (pref)
        snprintf(a->level, sizeof(a->level), "%s", b.level);
    a->mode = req ? GS_TOPO_REQUIRED : pref ? GS_TOPO_PREFERRED : GS_TOPO_ANY;
}

int gs_kube_topology_levels(const struct gs_kube_topology *t, struct gs_topo_levels *lv,
                            struct gs_error *err)
{
    memset(lv, 0, sizeof(*lv));
    if (t->nlevels > GS_TOPO_LEVELS_MAX)
        return gs_error_set(err, GS_EINVAL, "Topology %s: %d levels; gpusched places by at most %d",
                            t->name, (int)t->nlevels, GS_TOPO_LEVELS_MAX);
    for (int i = 0; i < t->nlevels; i++)
        if (gs_topo_levels_add(lv, t->level[i]))
            return gs_error_set(err, GS_EINVAL, "Topology %s: level '%s' cannot be used", t->name,
                                t->level[i]);
    return 0;
}

int gs_topo_levels_parse(const char *text, struct gs_topo_levels *lv, struct gs_error *err)
{
    memset(lv, 0, sizeof(*lv));
    const char *p = text ? text : "";
    for (int i = 0;; i++) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char key[GS_TOPOOBJ_KEY_MAX + 2];
        if (n > GS_TOPOOBJ_KEY_MAX)
            return gs_error_set(err, GS_EINVAL, "level %d is longer than %d characters", i + 1,
                                GS_TOPOOBJ_KEY_MAX);
        memcpy(key, p, n);
        key[n] = '\0';
        const char *bad = key_invalid(key);
        if (bad)
            return gs_error_set(err, GS_EINVAL, "level %d '%s' %s", i + 1, key, bad);
        if (gs_topo_levels_find(lv, key) >= 0)
            return gs_error_set(err, GS_EINVAL, "level '%s' is given twice", key);
        if (gs_topo_levels_add(lv, key))
            return gs_error_set(err, GS_EINVAL, "more than %d levels", GS_TOPO_LEVELS_MAX);
        if (!end)
            return 0;
        p = end + 1;
    }
}
