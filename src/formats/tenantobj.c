/* tenantobj.c - GPUQueue, ResourceQuota, PodGroup, PodDisruptionBudget, MigManager,
 * PersistentVolumeClaim and PersistentVolume readers (see
 * tenantobj.h). */
#include "tenantobj.h"
#include "jfield.h"

#include "../base/error.h"
#include "migparted.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A map of resource -> quantity (string or integer). */
static int read_res(const json_t *m, struct gs_tobj_res *out, int *n, const char *who,
                    const char *path, struct gs_error *err)
{
    *n = 0;
    if (!m)
        return 0;
    if (!json_is_object(m))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a map of resource to quantity", who,
                            path);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)m, key, v)
    {
        if (*n >= GS_TOBJ_MAX_RES)
            return gs_error_set(err, GS_EINVAL, "%s: %s: more than %d resources", who, path,
                                GS_TOBJ_MAX_RES);
        struct gs_tobj_res *r = &out[*n];
        if (strlen(key) >= sizeof(r->name))
            return gs_error_set(err, GS_EINVAL, "%s: %s.%s: resource name too long", who, path,
                                key);
        snprintf(r->name, sizeof(r->name), "%s", key);
        if (json_is_string(v) && strlen(json_string_value(v)) < sizeof(r->qty))
            snprintf(r->qty, sizeof(r->qty), "%s", json_string_value(v));
        else if (json_is_integer(v))
            snprintf(r->qty, sizeof(r->qty), "%lld", (long long)json_integer_value(v));
        else
            return gs_error_set(err, GS_EINVAL, "%s: %s.%s: expected a quantity", who, path, key);
        (*n)++;
    }
    return 0;
}

static int read_int(const json_t *o, const char *key, int32_t def, int32_t lo, int32_t hi,
                    int32_t *out, const char *who, const char *path, struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return gs_error_set(err, GS_EINVAL, "%s: %s.%s: expected an integer in %d..%d", who, path,
                            key, (int)lo, (int)hi);
    *out = (int32_t)json_integer_value(v);
    return 0;
}

int gs_kube_queue_read(const json_t *obj, struct gs_kube_queue *q, struct gs_error *err)
{
    memset(q, 0, sizeof(*q));
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    int rc =
        gs_jname(q->name, sizeof(q->name), gs_jstr(md, "name"), "GPUQueue", "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_NAME_MAX + 16];
    snprintf(who, sizeof(who), "GPUQueue %s", q->name);
    if (spec && !json_is_object(spec))
        return gs_error_set(err, GS_EINVAL, "%s: spec: expected an object", who);
    const char *parent = gs_jstr(spec, "parent");
    if (parent && parent[0] &&
        (rc = gs_jname(q->parent, sizeof(q->parent), parent, who, "spec.parent", err)))
        return rc;
    if (strcmp(q->parent, q->name) == 0)
        return gs_error_set(err, GS_EINVAL, "%s: spec.parent: a queue cannot be its own parent",
                            who);
    if ((rc = read_res(json_object_get(spec, "deserved"), q->deserved, &q->ndeserved, who,
                       "spec.deserved", err)) ||
        (rc = read_res(json_object_get(spec, "limit"), q->limit, &q->nlimit, who, "spec.limit",
                       err)) ||
        (rc = read_int(spec, "overQuotaWeight", 1, 1, 1000000, &q->weight, who, "spec", err)) ||
        (rc = read_int(spec, "priority", 0, INT32_MIN, INT32_MAX, &q->priority, who, "spec", err)))
        return rc;
    size_t i;
    const json_t *v;
    const json_t *nss = json_object_get(spec, "namespaces");
    if (nss && !json_is_array(nss))
        return gs_error_set(err, GS_EINVAL, "%s: spec.namespaces: expected a list", who);
    json_array_foreach(nss, i, v)
    {
        if (q->nns >= GS_TOBJ_MAX_NS)
            return gs_error_set(err, GS_EINVAL, "%s: spec.namespaces: more than %d", who,
                                GS_TOBJ_MAX_NS);
        char path[64];
        snprintf(path, sizeof(path), "spec.namespaces[%zu]", i);
        if ((rc = gs_jname(q->ns[q->nns], sizeof(q->ns[0]), json_string_value(v), who, path, err)))
            return rc;
        q->nns++;
    }
    return 0;
}

int gs_kube_rquota_read(const json_t *obj, struct gs_kube_rquota *q, struct gs_error *err)
{
    memset(q, 0, sizeof(*q));
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    int rc = gs_jname(q->name, sizeof(q->name), gs_jstr(md, "name"), "ResourceQuota",
                      "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_NAME_MAX + 16];
    snprintf(who, sizeof(who), "ResourceQuota %s", q->name);
    if ((rc = gs_jname(q->ns, sizeof(q->ns), gs_jstr(md, "namespace"), who, "metadata.namespace",
                       err)))
        return rc;
    /* spec.hard holds every kind of quota (pods, services, ...): keep the ones that fit */
    const char *key;
    const json_t *v;
    json_object_foreach(json_object_get(spec, "hard"), key, v)
    {
        if (q->nhard >= GS_TOBJ_MAX_RES)
            break;
        struct gs_tobj_res *r = &q->hard[q->nhard];
        if (strlen(key) >= sizeof(r->name) || !json_is_string(v) ||
            strlen(json_string_value(v)) >= sizeof(r->qty))
            continue;
        snprintf(r->name, sizeof(r->name), "%s", key);
        snprintf(r->qty, sizeof(r->qty), "%s", json_string_value(v));
        q->nhard++;
    }
    return 0;
}

int gs_kube_podgroup_read(const json_t *obj, struct gs_kube_podgroup *g, struct gs_error *err)
{
    memset(g, 0, sizeof(*g));
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    int rc = gs_jname(g->name, GS_NAME_MAX, gs_jstr(md, "name"), "PodGroup", "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_NAME_MAX + 16];
    snprintf(who, sizeof(who), "PodGroup %s", g->name);
    if ((rc = gs_jname(g->ns, sizeof(g->ns), gs_jstr(md, "namespace"), who, "metadata.namespace",
                       err)) ||
        (rc = read_int(spec, "minMember", 1, 1, 100000, &g->min_member, who, "spec", err)) ||
        (rc = read_int(spec, "scheduleTimeoutSeconds", 0, 0, 86400 * 365, &g->timeout_s, who,
                       "spec", err)))
        return rc;
    const char *ts = gs_jstr(md, "creationTimestamp");
    if (!ts || gs_kube_parse_time(ts, &g->created_s))
        g->created_s = 0;
    return 0;
}

static int int_or_pct(const json_t *v, int32_t *out, bool *pct, const char *who, const char *path,
                      struct gs_error *err)
{
    *out = -1;
    *pct = false;
    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= INT32_MAX) {
        *out = (int32_t)json_integer_value(v);
        return 0;
    }
    const char *s = json_string_value(v);
    char *end = NULL;
    long x = s ? strtol(s, &end, 10) : -1;
    if (s && end != s && x >= 0 && x <= 100 && strcmp(end, "%") == 0) {
        *out = (int32_t)x;
        *pct = true;
        return 0;
    }
    return gs_error_set(err, GS_EINVAL,
                        "%s: %s: expected an integer >= 0 or a percentage "
                        "like \"50%%\"",
                        who, path);
}

int gs_kube_pdb_read(const json_t *obj, struct gs_kube_pdb *b, struct gs_error *err)
{
    memset(b, 0, sizeof(*b));
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    int rc = gs_jname(b->name, sizeof(b->name), gs_jstr(md, "name"), "PodDisruptionBudget",
                      "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_NAME_MAX + 24];
    snprintf(who, sizeof(who), "PodDisruptionBudget %s", b->name);
    if ((rc = gs_jname(b->ns, sizeof(b->ns), gs_jstr(md, "namespace"), who, "metadata.namespace",
                       err)) ||
        (rc = int_or_pct(json_object_get(spec, "minAvailable"), &b->min_available, &b->min_pct, who,
                         "spec.minAvailable", err)) ||
        (rc = int_or_pct(json_object_get(spec, "maxUnavailable"), &b->max_unavailable, &b->max_pct,
                         who, "spec.maxUnavailable", err)))
        return rc;
    if ((rc = gs_labelsel_read(json_object_get(spec, "selector"), b->sel, GS_TOBJ_MAX_SEL, &b->nsel,
                               who, "spec.selector", err)))
        return rc;
    return 0;
}

static const char *pod_label(const void *p, const char *key)
{
    return gs_kube_pod_label(p, key);
}

bool gs_kube_selector_matches(const struct gs_sel_req *sel, int n, const struct gs_kube_pod *p)
{
    return gs_labelsel_matches(sel, n, pod_label, p);
}

bool gs_kube_pdb_matches(const struct gs_kube_pdb *b, const struct gs_kube_pod *p)
{
    return strcmp(b->ns, p->ns) == 0 && gs_kube_selector_matches(b->sel, b->nsel, p);
}

int gs_kube_migmgr_read(const json_t *obj, struct gs_kube_migmgr *m, struct gs_error *err)
{
    memset(m, 0, sizeof(*m));
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    int rc =
        gs_jname(m->name, sizeof(m->name), gs_jstr(md, "name"), "MigManager", "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_NAME_MAX + 16];
    snprintf(who, sizeof(who), "MigManager %s", m->name);
    const json_t *cl = json_object_get(json_object_get(spec, "gpuClientsConfig"), "gpuClients");
    if (cl && !json_is_array(cl))
        return gs_error_set(err, GS_EINVAL, "%s: spec.gpuClientsConfig.gpuClients: expected a list",
                            who);
    size_t i;
    const json_t *c;
    json_array_foreach(cl, i, c)
    {
        if (m->nclients >= GS_TOBJ_MAX_CLIENTS)
            return gs_error_set(err, GS_EINVAL,
                                "%s: spec.gpuClientsConfig.gpuClients: more than %d", who,
                                GS_TOBJ_MAX_CLIENTS);
        struct gs_kube_migclient *x = &m->clients[m->nclients];
        char path[96];
        snprintf(path, sizeof(path), "spec.gpuClientsConfig.gpuClients[%zu]", i);
        const char *ns = gs_jstr(c, "namespace"), *dev = gs_jstr(c, "migDevice");
        if (ns && strlen(ns) >= sizeof(x->ns))
            return gs_error_set(err, GS_EINVAL, "%s: %s.namespace: too long", who, path);
        snprintf(x->ns, sizeof(x->ns), "%s", ns ? ns : "");
        if (!dev || !gs_mig_profile_syntax_ok(dev) || strlen(dev) >= sizeof(x->mig))
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s.migDevice: expected a MIG profile like "
                                "\"3g.40gb\"",
                                who, path);
        snprintf(x->mig, sizeof(x->mig), "%s", dev);
        char spath[128];
        snprintf(spath, sizeof(spath), "%s.podSelector", path);
        if ((rc = gs_labelsel_read(json_object_get(c, "podSelector"), x->sel, GS_TOBJ_MAX_SEL,
                                   &x->nsel, who, spath, err)))
            return rc;
        m->nclients++;
    }
    return 0;
}

int32_t gs_kube_pdb_allowed(const struct gs_kube_pdb *b, int32_t healthy, int32_t expected)
{
    int32_t allowed;
    if (b->max_unavailable >= 0) {
        int32_t maxu =
            b->max_pct ? (int32_t)ceil(expected * b->max_unavailable / 100.0) : b->max_unavailable;
        allowed = healthy - (expected - maxu);
    } else if (b->min_available >= 0) {
        int32_t mina =
            b->min_pct ? (int32_t)ceil(expected * b->min_available / 100.0) : b->min_available;
        allowed = healthy - mina;
    } else {
        allowed = healthy - 1; /* neither set: as minAvailable 1, the conservative reading */
    }
    return allowed > 0 ? allowed : 0;
}

json_t *gs_kube_disruption_patch(const char *message)
{
    char now[40];
    gs_kube_micro_time(now, sizeof(now));
    now[19] = 'Z'; /* conditions carry second precision */
    now[20] = '\0';
    return json_pack("{s:{s:[{s:s,s:s,s:s,s:s,s:s}]}}", "status", "conditions", "type",
                     "DisruptionTarget", "status", "True", "reason", "PreemptionByScheduler",
                     "message", message, "lastTransitionTime", now);
}
