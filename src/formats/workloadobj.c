/* workloadobj.c - the Workload API's PodGroup (scheduling.k8s.io/v1beta1) read into the gang
 * record the PodGroup CRD's reader fills (formats/tenantobj.c), and the patch of its
 * PodGroupInitiallyScheduled condition (see workloadobj.h). sched/tenancy.c lists the objects;
 * sched/cycleout.c writes the condition. */
#include "workloadobj.h"
#include "jfield.h"

#include "../base/error.h"
#include "../base/hash.h"
#include "kubeobj.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* A name (a string without NULs, 1..n-1 bytes) at path into dst. */
static int read_name(const json_t *o, const char *key, char *dst, size_t n, const char *who,
                     const char *path, struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) == 0)
        return gs_error_set(err, GS_EINVAL, "%s: %s is required", who, path);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return gs_error_set(err, GS_EINVAL, "%s: %s: not a name", who, path);
    if (json_string_length(v) >= n)
        return gs_error_set(err, GS_EINVAL, "%s: %s: longer than %zu characters", who, path, n - 1);
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

/* An optional integer in lo..hi (def when absent). */
static int read_int(const json_t *o, const char *key, int64_t def, int64_t lo, int64_t hi,
                    int64_t *out, const char *who, const char *path, struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected an integer in %lld..%lld", who, path,
                            (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

/* An optional object at path (NULL when absent or null). */
static int read_obj(const json_t *o, const char *key, const json_t **out, const char *who,
                    const char *path, struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    *out = v && !json_is_null(v) ? v : NULL;
    if (*out && !json_is_object(*out))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected an object", who, path);
    return 0;
}

/* spec.schedulingPolicy: exactly one of gang {minCount} and basic {}. */
static int read_policy(const json_t *spec, struct gs_kube_podgroup *g, const char *who,
                       struct gs_error *err)
{
    const json_t *pol, *gang, *basic;
    int rc;
    if ((rc = read_obj(spec, "schedulingPolicy", &pol, who, "spec.schedulingPolicy", err)))
        return rc;
    if (!pol)
        return gs_error_set(err, GS_EINVAL, "%s: spec.schedulingPolicy is required", who);
    if ((rc = read_obj(pol, "gang", &gang, who, "spec.schedulingPolicy.gang", err)) ||
        (rc = read_obj(pol, "basic", &basic, who, "spec.schedulingPolicy.basic", err)))
        return rc;
    if (!gang == !basic)
        return gs_error_set(err, GS_EINVAL,
                            "%s: spec.schedulingPolicy: exactly one of gang and basic must be set",
                            who);
    g->basic = basic != NULL;
    int64_t v = 1;
    if (gang) {
        if (!json_object_get(gang, "minCount"))
            return gs_error_set(err, GS_EINVAL,
                                "%s: spec.schedulingPolicy.gang.minCount is required", who);
        if ((rc = read_int(gang, "minCount", 1, 1, 100000, &v, who,
                           "spec.schedulingPolicy.gang.minCount", err)))
            return rc;
    }
    g->min_member = (int32_t)v;
    return 0;
}

/* A list at path that is present and not empty. */
static int non_empty_list(const json_t *o, const char *key, bool *out, const char *who,
                          const char *path, struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    *out = false;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a list", who, path);
    *out = json_array_size(v) > 0;
    return 0;
}

/* spec.disruptionMode, spec.workloadRef, and the placement gpusched does not model. */
static int read_rest(const json_t *spec, struct gs_kube_podgroup *g, const char *who,
                     struct gs_error *err)
{
    const json_t *dm, *ref, *cons;
    int rc;
    if ((rc = read_obj(spec, "disruptionMode", &dm, who, "spec.disruptionMode", err)) ||
        (rc = read_obj(spec, "workloadRef", &ref, who, "spec.workloadRef", err)) ||
        (rc = read_obj(spec, "schedulingConstraints", &cons, who, "spec.schedulingConstraints",
                       err)))
        return rc;
    if (dm) {
        const json_t *all = json_object_get(dm, "all"), *single = json_object_get(dm, "single");
        if (json_is_null(all))
            all = NULL;
        if (json_is_null(single))
            single = NULL;
        if ((all && !json_is_object(all)) || (single && !json_is_object(single)) || (all && single))
            return gs_error_set(err, GS_EINVAL,
                                "%s: spec.disruptionMode: at most one of single and all, "
                                "each an object",
                                who);
        g->disrupt_all = all != NULL;
    }
    if (ref && (rc = read_name(ref, "workloadName", g->workload, sizeof(g->workload), who,
                               "spec.workloadRef.workloadName", err)))
        return rc;
    bool topo = false, claims = false;
    if ((cons && (rc = non_empty_list(cons, "topology", &topo, who,
                                      "spec.schedulingConstraints.topology", err))) ||
        (rc = non_empty_list(spec, "resourceClaims", &claims, who, "spec.resourceClaims", err)))
        return rc;
    const json_t *parent = json_object_get(spec, "parentCompositePodGroupName");
    if (parent && !json_is_null(parent) && !json_is_string(parent))
        return gs_error_set(err, GS_EINVAL, "%s: spec.parentCompositePodGroupName: expected a name",
                            who);
    const char *what = topo     ? "spec.schedulingConstraints.topology (topology-aware placement)"
                       : claims ? "spec.resourceClaims (claims shared by the group)"
                       : parent && json_string_length(parent) > 0
                           ? "spec.parentCompositePodGroupName (composite pod groups)"
                           : NULL;
    if (what)
        snprintf(g->unsupported, sizeof(g->unsupported), "%s", what);
    return 0;
}

/* status.conditions: PodGroupInitiallyScheduled, as the last writer left it. */
static int read_condition(const json_t *st, struct gs_kube_podgroup *g, const char *who,
                          struct gs_error *err)
{
    const json_t *conds = json_object_get(st, "conditions");
    if (!conds || json_is_null(conds))
        return 0;
    if (!json_is_array(conds))
        return gs_error_set(err, GS_EINVAL, "%s: status.conditions: expected a list", who);
    if (json_array_size(conds) > GS_WPG_MAX_CONDITIONS)
        return gs_error_set(err, GS_EINVAL, "%s: status.conditions: more than %d", who,
                            GS_WPG_MAX_CONDITIONS);
    size_t i;
    const json_t *c;
    json_array_foreach(conds, i, c)
    {
        if (!json_is_object(c))
            return gs_error_set(err, GS_EINVAL, "%s: status.conditions[%zu]: expected an object",
                                who, i);
        const char *type = gs_jstr(c, "type"), *status = gs_jstr(c, "status");
        if (!type || strcmp(type, GS_WPG_CONDITION) != 0 || !status)
            continue;
        g->cond = strcmp(status, "True") == 0    ? GS_PGC_TRUE
                  : strcmp(status, "False") == 0 ? GS_PGC_FALSE
                                                 : GS_PGC_NONE;
        const char *reason = gs_jstr(c, "reason"), *since = gs_jstr(c, "lastTransitionTime");
        const char *msg = gs_jstr(c, "message");
        snprintf(g->cond_reason, sizeof(g->cond_reason), "%s", reason ? reason : "");
        g->cond_msg = gs_hash_str(msg ? msg : "");
        if (since && strlen(since) < sizeof(g->cond_since))
            memcpy(g->cond_since, since, strlen(since) + 1);
    }
    return 0;
}

int gs_kube_wpodgroup_read(const json_t *obj, struct gs_kube_podgroup *g, struct gs_error *err)
{
    memset(g, 0, sizeof(*g));
    g->api = GS_PG_WORKLOAD;
    if (!json_is_object(obj))
        return gs_error_set(err, GS_EINVAL, "PodGroup: expected a JSON object");
    const json_t *md = json_object_get(obj, "metadata"), *spec, *st;
    int rc = read_name(md, "name", g->name, sizeof(g->name), "PodGroup", "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_KNAME_MAX + 16];
    snprintf(who, sizeof(who), "PodGroup %s", g->name);
    if ((rc = read_name(md, "namespace", g->ns, sizeof(g->ns), who, "metadata.namespace", err)))
        return rc;
    snprintf(who, sizeof(who), "PodGroup %s/%s", g->ns, g->name);
    int64_t v = 0;
    if ((rc = read_int(md, "generation", 0, 0, INT64_MAX, &v, who, "metadata.generation", err)))
        return rc;
    g->generation = v;
    const char *ts = gs_jstr(md, "creationTimestamp");
    if (!ts || gs_kube_parse_time(ts, &g->created_s))
        g->created_s = 0;
    if ((rc = read_obj(obj, "spec", &spec, who, "spec", err)) ||
        (rc = read_obj(obj, "status", &st, who, "status", err)))
        return rc;
    if (!spec)
        return gs_error_set(err, GS_EINVAL, "%s: spec is required", who);
    if ((rc = read_policy(spec, g, who, err)) ||
        (rc = read_int(spec, "priority", 0, INT32_MIN, INT32_MAX, &v, who, "spec.priority", err)))
        return rc;
    g->priority = (int32_t)v;
    if ((rc = read_rest(spec, g, who, err)))
        return rc;
    return st ? read_condition(st, g, who, err) : 0;
}

bool gs_kube_wpodgroup_condition_changes(const struct gs_kube_podgroup *g, bool scheduled,
                                         const char *reason, const char *message)
{
    if (g->cond == GS_PGC_TRUE && !scheduled)
        return false;
    return g->cond != (scheduled ? GS_PGC_TRUE : GS_PGC_FALSE) ||
           strcmp(g->cond_reason, reason) != 0 || g->cond_msg != gs_hash_str(message);
}

json_t *gs_kube_wpodgroup_condition_patch(const struct gs_kube_podgroup *g, bool scheduled,
                                          const char *reason, const char *message, const char *now)
{
    bool same = g->cond == (scheduled ? GS_PGC_TRUE : GS_PGC_FALSE) && g->cond_since[0];
    json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", GS_WPG_CONDITION, "status",
                          scheduled ? "True" : "False", "reason", reason, "message", message,
                          "lastTransitionTime", same ? g->cond_since : now, "observedGeneration",
                          (json_int_t)g->generation);
    return c ? json_pack("{s:{s:[o]}}", "status", "conditions", c) : NULL;
}
