/* volobj.c - storage objects read from the API server's JSON (formats/volobj.h). */
#include "volobj.h"
#include "jfield.h"

#include "../base/error.h"
#include "../core/quantity.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An optional string field: absent or null leaves dst empty; anything but a string, or one
 * too long, is an error. */
static int opt_str(const json_t *o, const char *key, char *dst, size_t n, const char *who,
                   const char *path, struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a string", who, path);
    if (strlen(json_string_value(v)) >= n)
        return gs_error_set(err, GS_EINVAL, "%s: %s: longer than %zu characters", who, path, n - 1);
    snprintf(dst, n, "%s", json_string_value(v));
    return 0;
}

/* An optional object at key: NULL when absent or null; an error when not an object. */
static int opt_obj(const json_t *o, const char *key, const json_t **out, const char *who,
                   const char *path, struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    *out = v && !json_is_null(v) ? v : NULL;
    if (*out && !json_is_object(*out))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected an object", who, path);
    return 0;
}

/* An object whose identity was read and not the rest: rc, with refused holding the error
 * message less its "who: " prefix. */
static int refuse(int rc, char *refused, size_t n, const char *who, const struct gs_error *err)
{
    const char *m = err && err->msg[0] ? err->msg : "could not be read";
    size_t lw = strlen(who);
    if (strncmp(m, who, lw) == 0 && m[lw] == ':' && m[lw + 1] == ' ')
        m += lw + 2;
    snprintf(refused, n, "%s", m);
    return rc;
}

/* A storage quantity ("10Gi", or a number) in bytes; -1 when absent. */
static int read_bytes(const json_t *v, int64_t *out, const char *who, const char *path,
                      struct gs_error *err)
{
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    char buf[64];
    if (json_is_integer(v))
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
    else if (json_is_string(v) && strlen(json_string_value(v)) < sizeof(buf))
        snprintf(buf, sizeof(buf), "%s", json_string_value(v));
    else
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a quantity", who, path);
    struct gs_quantity q;
    struct gs_error e2;
    gs_error_init(&e2);
    if (gs_quantity_parse(buf, strlen(buf), &q, &e2) || gs_quantity_milli(&q) < 0)
        return gs_error_set(err, GS_EINVAL, "%s: %s: '%s': expected a non-negative quantity", who,
                            path, buf);
    int64_t b = gs_quantity_value(&q);
    *out = b < 0 ? 0 : b;
    return 0;
}

static int read_access(const json_t *modes, uint8_t *out, const char *who, const char *path,
                       struct gs_error *err)
{
    *out = 0;
    if (!modes || json_is_null(modes))
        return 0;
    if (!json_is_array(modes))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected a list", who, path);
    static const char *const names[] = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany",
                                        "ReadWriteOncePod"};
    size_t i;
    const json_t *m;
    json_array_foreach(modes, i, m)
    {
        int k = -1;
        for (int j = 0; json_is_string(m) && j < 4; j++)
            if (strcmp(json_string_value(m), names[j]) == 0)
                k = j;
        if (k < 0)
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s[%zu]: expected ReadWriteOnce, ReadOnlyMany, ReadWriteMany "
                                "or ReadWriteOncePod",
                                who, path, i);
        *out |= (uint8_t)(1u << k);
    }
    return 0;
}

void gs_access_str(uint8_t access, char *out, size_t n)
{
    static const char *const names[] = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany",
                                        "ReadWriteOncePod"};
    size_t o = 0;
    out[0] = '\0';
    for (int j = 0; j < 4; j++)
        if (access & (1u << j) && o < n)
            o += (size_t)snprintf(out + o, n - o, "%s%s", o ? "," : "", names[j]);
}

static int read_mode(const json_t *spec, bool *block, const char *who, struct gs_error *err)
{
    const char *m = gs_jstr(spec, "volumeMode");
    *block = m && strcmp(m, "Block") == 0;
    if (m && !*block && strcmp(m, "Filesystem") != 0)
        return gs_error_set(err, GS_EINVAL,
                            "%s: spec.volumeMode: '%s': expected Filesystem or Block", who, m);
    return 0;
}

/* The class a claim or volume names: spec.storageClassName, else the legacy beta annotation. */
static int read_class(const json_t *md, const json_t *spec, char *cls, size_t n, bool *has,
                      const char *who, struct gs_error *err)
{
    const json_t *v = json_object_get(spec, "storageClassName");
    if (v && !json_is_null(v)) {
        *has = true;
        return opt_str(spec, "storageClassName", cls, n, who, "spec.storageClassName", err);
    }
    const char *legacy =
        gs_jstr(json_object_get(md, "annotations"), "volume.beta.kubernetes.io/storage-class");
    *has = legacy != NULL;
    if (legacy && strlen(legacy) >= n)
        return gs_error_set(err, GS_EINVAL, "%s: the storage-class annotation is too long", who);
    snprintf(cls, n, "%s", legacy ? legacy : "");
    return 0;
}

int gs_kube_pvc_read(const json_t *obj, struct gs_kube_pvc *c, struct gs_error *err)
{
    memset(c, 0, sizeof(*c));
    const json_t *md = json_object_get(obj, "metadata"), *spec = NULL;
    int rc = gs_jname(c->name, sizeof(c->name), gs_jstr(md, "name"), "PersistentVolumeClaim",
                      "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_KNAME_MAX + 32];
    snprintf(who, sizeof(who), "PersistentVolumeClaim %s", c->name);
    if ((rc = gs_jname(c->ns, sizeof(c->ns), gs_jstr(md, "namespace"), who, "metadata.namespace",
                       err)))
        return rc;
    c->deleting = gs_jstr(md, "deletionTimestamp") != NULL;
    if ((rc = opt_str(md, "uid", c->uid, sizeof(c->uid), who, "metadata.uid", err)) ||
        (rc = opt_str(md, "resourceVersion", c->rv, sizeof(c->rv), who, "metadata.resourceVersion",
                      err)) ||
        (rc = opt_obj(obj, "spec", &spec, who, "spec", err)) ||
        (rc = opt_str(spec, "volumeName", c->volume, sizeof(c->volume), who, "spec.volumeName",
                      err)) ||
        (rc = read_class(md, spec, c->cls, sizeof(c->cls), &c->has_class, who, err)) ||
        (rc = read_access(json_object_get(spec, "accessModes"), &c->access, who, "spec.accessModes",
                          err)) ||
        (rc = read_mode(spec, &c->block, who, err)) ||
        (rc = read_bytes(
             json_object_get(json_object_get(json_object_get(spec, "resources"), "requests"),
                             "storage"),
             &c->request, who, "spec.resources.requests.storage", err)) ||
        (rc = gs_labelsel_read(json_object_get(spec, "selector"), c->sel, GS_VOL_MAX_SEL, &c->nsel,
                               who, "spec.selector", err)) ||
        (rc = opt_str(json_object_get(md, "annotations"), GS_ANN_SELECTED_NODE, c->selected_node,
                      sizeof(c->selected_node), who,
                      "metadata.annotations[" GS_ANN_SELECTED_NODE "]", err)))
        return refuse(rc, c->refused, sizeof(c->refused), who, err);
    if (c->request < 0)
        c->request = 0;
    const char *phase = gs_jstr(json_object_get(obj, "status"), "phase");
    c->bound = phase && strcmp(phase, "Bound") == 0 && c->volume[0];
    return 0;
}

/* One requirement of a node selector term at path, as the API server validates it. */
static int read_pv_req(const json_t *e, bool field, struct gs_pv_req *r, const char *who,
                       const char *path, struct gs_error *err)
{
    memset(r, 0, sizeof(*r));
    r->field = field;
    const char *k = gs_jstr(e, "key"), *op = gs_jstr(e, "operator");
    if (!k || !k[0] || strlen(k) >= sizeof(r->key))
        return gs_error_set(err, GS_EINVAL, "%s: %s.key: expected a key of 1..%zu characters", who,
                            path, sizeof(r->key) - 1);
    if (field && strcmp(k, "metadata.name") != 0)
        return gs_error_set(err, GS_EINVAL, "%s: %s.key: '%s': only metadata.name is a field", who,
                            path, k);
    snprintf(r->key, sizeof(r->key), "%s", k);
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    int o = -1;
    for (int i = 0; op && i < 6; i++)
        if (strcmp(op, ops[i]) == 0)
            o = i;
    if (o < 0 || (field && o > GS_KOP_NOTIN))
        return gs_error_set(err, GS_EINVAL, "%s: %s.operator: '%s': expected %s", who, path,
                            op ? op : "",
                            field ? "In or NotIn"
                                  : "In, NotIn, Exists, "
                                    "DoesNotExist, Gt or Lt");
    r->op = (uint8_t)o;
    const json_t *vals = json_object_get(e, "values"), *x;
    if (vals && !json_is_array(vals))
        return gs_error_set(err, GS_EINVAL, "%s: %s.values: expected a list", who, path);
    size_t nv = json_array_size(vals), i;
    if ((o <= GS_KOP_NOTIN && nv == 0) || (field && nv != 1))
        return gs_error_set(err, GS_EINVAL, "%s: %s.values: %s", who, path,
                            field ? "expected exactly one value" : "expected values for In/NotIn");
    if ((o == GS_KOP_EXISTS || o == GS_KOP_DOESNOTEXIST) && nv != 0)
        return gs_error_set(err, GS_EINVAL, "%s: %s.values: expected none for %s", who, path, op);
    if ((o == GS_KOP_GT || o == GS_KOP_LT) &&
        (nv != 1 || !gs_kreq_parse_num(json_string_value(json_array_get(vals, 0)), &r->num)))
        return gs_error_set(err, GS_EINVAL, "%s: %s.values: expected one integer for %s", who, path,
                            op);
    if (nv > GS_PV_MAX_VALS)
        return gs_error_set(err, GS_EINVAL, "%s: %s.values: %zu values, at most %d", who, path, nv,
                            GS_PV_MAX_VALS);
    json_array_foreach(vals, i, x)
    {
        if (!json_is_string(x) || strlen(json_string_value(x)) >= GS_LABEL_VAL_MAX)
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s.values[%zu]: expected a string of at most %d characters",
                                who, path, i, GS_LABEL_VAL_MAX - 1);
        snprintf(r->val[r->nval++], GS_LABEL_VAL_MAX, "%s", json_string_value(x));
    }
    return 0;
}

/* The labels a volume is matched on: zone and region ones first, then the others while they
 * fit. */
static int read_pv_labels(const json_t *labels, struct gs_kube_pv *pv, const char *who,
                          struct gs_error *err)
{
    if (labels && !json_is_object(labels) && !json_is_null(labels))
        return gs_error_set(err, GS_EINVAL, "%s: metadata.labels: expected an object", who);
    for (int pass = 0; pass < 2; pass++) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)labels, k, v)
        {
            bool zone = strstr(k, "/zone") || strstr(k, "/region");
            if (zone != (pass == 0))
                continue;
            if (!json_is_string(v) || strlen(json_string_value(v)) >= GS_LABEL_VAL_MAX ||
                strlen(k) >= GS_LABEL_KEY_MAX || pv->nlabels >= GS_PV_MAX_LABELS) {
                if (zone)
                    return gs_error_set(err, GS_EINVAL,
                                        "%s: metadata.labels.%s: expected a string of at most %d "
                                        "characters",
                                        who, k, GS_LABEL_VAL_MAX - 1);
                pv->labels_partial = true;
                continue;
            }
            snprintf(pv->labels[pv->nlabels].key, GS_LABEL_KEY_MAX, "%s", k);
            snprintf(pv->labels[pv->nlabels].val, GS_LABEL_VAL_MAX, "%s", json_string_value(v));
            pv->nlabels++;
        }
    }
    return 0;
}

static int read_pv_affinity(const json_t *spec, struct gs_kube_pv *pv, const char *who,
                            struct gs_error *err)
{
    const json_t *req = json_object_get(json_object_get(spec, "nodeAffinity"), "required");
    if (!req)
        return 0;
    const json_t *terms = json_object_get(req, "nodeSelectorTerms");
    if (!json_is_array(terms) || json_array_size(terms) == 0)
        return gs_error_set(err, GS_EINVAL,
                            "%s: spec.nodeAffinity.required.nodeSelectorTerms: expected a "
                            "non-empty list",
                            who);
    if (json_array_size(terms) > GS_PV_MAX_TERMS)
        return gs_error_set(err, GS_EINVAL,
                            "%s: spec.nodeAffinity.required.nodeSelectorTerms: %zu terms, at "
                            "most %d",
                            who, json_array_size(terms), GS_PV_MAX_TERMS);
    size_t i, j;
    const json_t *t, *e;
    int rc;
    json_array_foreach(terms, i, t)
    {
        struct gs_pv_term *term = &pv->terms[pv->nterms++];
        static const char *const lists[] = {"matchExpressions", "matchFields"};
        for (int l = 0; l < 2; l++) {
            const json_t *a = json_object_get(t, lists[l]);
            char path[160];
            snprintf(path, sizeof(path), "spec.nodeAffinity.required.nodeSelectorTerms[%zu].%s", i,
                     lists[l]);
            if (a && !json_is_array(a))
                return gs_error_set(err, GS_EINVAL, "%s: %s: expected a list", who, path);
            json_array_foreach(a, j, e)
            {
                if (term->nreqs >= GS_PV_MAX_REQS)
                    return gs_error_set(err, GS_EINVAL,
                                        "%s: %s: more than %d requirements in one term", who, path,
                                        GS_PV_MAX_REQS);
                char rpath[180];
                snprintf(rpath, sizeof(rpath), "%s[%zu]", path, j);
                if ((rc = read_pv_req(e, l == 1, &term->reqs[term->nreqs], who, rpath, err)))
                    return rc;
                term->nreqs++;
            }
        }
    }
    return 0;
}

int gs_kube_pv_read(const json_t *obj, struct gs_kube_pv *pv, struct gs_error *err)
{
    memset(pv, 0, sizeof(*pv));
    const json_t *md = json_object_get(obj, "metadata"), *spec = NULL, *ref = NULL, *csi = NULL;
    int rc = gs_jname(pv->name, sizeof(pv->name), gs_jstr(md, "name"), "PersistentVolume",
                      "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_KNAME_MAX + 32];
    snprintf(who, sizeof(who), "PersistentVolume %s", pv->name);
    pv->deleting = gs_jstr(md, "deletionTimestamp") != NULL;
    if ((rc = opt_str(md, "uid", pv->uid, sizeof(pv->uid), who, "metadata.uid", err)) ||
        (rc = opt_str(md, "resourceVersion", pv->rv, sizeof(pv->rv), who,
                      "metadata.resourceVersion", err)) ||
        (rc = read_pv_labels(json_object_get(md, "labels"), pv, who, err)) ||
        (rc = opt_obj(obj, "spec", &spec, who, "spec", err)) ||
        (rc = read_class(md, spec, pv->cls, sizeof(pv->cls), &pv->has_class, who, err)) ||
        (rc = read_access(json_object_get(spec, "accessModes"), &pv->access, who,
                          "spec.accessModes", err)) ||
        (rc = read_mode(spec, &pv->block, who, err)) ||
        (rc = read_bytes(json_object_get(json_object_get(spec, "capacity"), "storage"),
                         &pv->capacity, who, "spec.capacity.storage", err)) ||
        (rc = opt_obj(spec, "claimRef", &ref, who, "spec.claimRef", err)) ||
        (rc = opt_str(ref, "namespace", pv->claim_ns, sizeof(pv->claim_ns), who,
                      "spec.claimRef.namespace", err)) ||
        (rc = opt_str(ref, "name", pv->claim_name, sizeof(pv->claim_name), who,
                      "spec.claimRef.name", err)) ||
        (rc = opt_str(ref, "uid", pv->claim_uid, sizeof(pv->claim_uid), who, "spec.claimRef.uid",
                      err)) ||
        (rc = opt_obj(spec, "csi", &csi, who, "spec.csi", err)) ||
        (rc = opt_str(csi, "driver", pv->csi_driver, sizeof(pv->csi_driver), who, "spec.csi.driver",
                      err)) ||
        (rc = opt_str(csi, "volumeHandle", pv->csi_handle, sizeof(pv->csi_handle), who,
                      "spec.csi.volumeHandle", err)) ||
        (rc = read_pv_affinity(spec, pv, who, err)))
        return refuse(rc, pv->refused, sizeof(pv->refused), who, err);
    if (pv->capacity < 0)
        pv->capacity = 0;
    static const char *const phases[] = {"Pending", "Available", "Bound", "Released", "Failed"};
    const char *ph = gs_jstr(json_object_get(obj, "status"), "phase");
    for (int i = 0; ph && i < 5; i++)
        if (strcmp(ph, phases[i]) == 0)
            pv->phase = (uint8_t)i;
    return 0;
}

static bool pv_req_matches(const struct gs_pv_req *r, const char *v)
{
    bool in = false;
    for (int k = 0; v && k < r->nval; k++)
        in |= strcmp(v, r->val[k]) == 0;
    return gs_kop_matches((enum gs_kop)r->op, in, r->num, v);
}

/* As kube-scheduler's VolumeBinding (and the kubelet before it mounts) judges a volume:
 * k8s.io/component-helpers/storage/volume.CheckNodeAffinity matches the terms against a node
 * that holds the node's labels only, and nodeaffinity skips a term's matchFields for a node
 * without a name (nodeSelectorTerm.match: len(nodeFields) > 0). So matchFields constrain
 * nothing here, and a term of matchFields alone matches every node. */
bool gs_kube_pv_node_matches(const struct gs_kube_pv *pv, const struct gs_kube_node *n)
{
    if (pv->nterms == 0)
        return true;
    for (int t = 0; t < pv->nterms; t++) {
        const struct gs_pv_term *term = &pv->terms[t];
        bool ok = term->nreqs > 0; /* a term with no requirement matches no node */
        for (int i = 0; ok && i < term->nreqs; i++) {
            const struct gs_pv_req *r = &term->reqs[i];
            if (!r->field)
                ok = pv_req_matches(r, gs_kube_label(n, r->key));
        }
        if (ok)
            return true;
    }
    return false;
}

const char *gs_kube_pv_label(const void *obj, const char *key)
{
    const struct gs_kube_pv *pv = obj;
    for (int i = 0; i < pv->nlabels; i++)
        if (strcmp(pv->labels[i].key, key) == 0)
            return pv->labels[i].val;
    return NULL;
}

/* Whether v is one of the values joined by "__" in set (upstream's LabelZonesToSet). */
static bool in_zone_set(const char *set, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = set; *p;) {
        const char *end = strstr(p, "__");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0)
            return true;
        if (!end)
            break;
        p = end + 2;
    }
    return false;
}

bool gs_kube_pv_zone_matches(const struct gs_kube_pv *pv, const struct gs_kube_node *n)
{
    static const char *const keys[] = {
        "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"};
    for (int i = 0; i < pv->nlabels; i++) {
        for (int k = 0; k < 4; k++) {
            if (strcmp(pv->labels[i].key, keys[k]) != 0)
                continue;
            /* the node's value under the label, or under its other form (GA / beta) */
            const char *v = gs_kube_label(n, keys[k]);
            if (!v)
                v = gs_kube_label(n, keys[k < 2 ? k + 2 : k - 2]);
            if (!v || !in_zone_set(pv->labels[i].val, v))
                return false;
        }
    }
    return true;
}

/* A StorageClass past its name. */
static int read_sc_rest(const json_t *obj, struct gs_kube_sc *sc, const char *who,
                        struct gs_error *err)
{
    int rc = gs_jname(sc->provisioner, sizeof(sc->provisioner), gs_jstr(obj, "provisioner"), who,
                      "provisioner", err);
    if (rc)
        return rc;
    const char *mode = gs_jstr(obj, "volumeBindingMode");
    if (mode && strcmp(mode, "WaitForFirstConsumer") == 0)
        sc->mode = GS_BIND_WAIT_FOR_FIRST_CONSUMER;
    else if (mode && strcmp(mode, "Immediate") != 0)
        return gs_error_set(
            err, GS_EINVAL,
            "%s: volumeBindingMode: '%s': expected Immediate or WaitForFirstConsumer", who, mode);
    const json_t *topo = json_object_get(obj, "allowedTopologies"), *t, *e, *v;
    if (topo && !json_is_array(topo) && !json_is_null(topo))
        return gs_error_set(err, GS_EINVAL, "%s: allowedTopologies: expected a list", who);
    if (json_array_size(topo) > GS_VOL_MAX_TOPO)
        return gs_error_set(err, GS_EINVAL, "%s: allowedTopologies: %zu terms, at most %d", who,
                            json_array_size(topo), GS_VOL_MAX_TOPO);
    size_t i, j, k;
    json_array_foreach(topo, i, t)
    {
        struct gs_topo_term *term = &sc->terms[sc->nterms++];
        const json_t *exprs = json_object_get(t, "matchLabelExpressions");
        if (!json_is_array(exprs) || json_array_size(exprs) > GS_VOL_MAX_TOPO)
            return gs_error_set(err, GS_EINVAL,
                                "%s: allowedTopologies[%zu].matchLabelExpressions: expected a list "
                                "of at most %d",
                                who, i, GS_VOL_MAX_TOPO);
        json_array_foreach(exprs, j, e)
        {
            struct gs_topo_req *r = &term->reqs[term->nreqs++];
            const char *key = gs_jstr(e, "key");
            const json_t *vals = json_object_get(e, "values");
            if (!key || !key[0] || strlen(key) >= GS_LABEL_KEY_MAX || !json_is_array(vals) ||
                json_array_size(vals) == 0 || json_array_size(vals) > GS_VOL_MAX_VALS)
                return gs_error_set(
                    err, GS_EINVAL,
                    "%s: allowedTopologies[%zu].matchLabelExpressions[%zu]: expected "
                    "a key and 1..%d values",
                    who, i, j, GS_VOL_MAX_VALS);
            snprintf(r->key, sizeof(r->key), "%s", key);
            json_array_foreach(vals, k, v)
            {
                if (!json_is_string(v) || strlen(json_string_value(v)) >= GS_LABEL_VAL_MAX)
                    return gs_error_set(err, GS_EINVAL,
                                        "%s: allowedTopologies[%zu].matchLabelExpressions[%zu]."
                                        "values[%zu]: expected a label value",
                                        who, i, j, k);
                snprintf(r->val[r->nval++], GS_LABEL_VAL_MAX, "%s", json_string_value(v));
            }
        }
    }
    return 0;
}

int gs_kube_sc_read(const json_t *obj, struct gs_kube_sc *sc, struct gs_error *err)
{
    memset(sc, 0, sizeof(*sc));
    const json_t *md = json_object_get(obj, "metadata");
    int rc = gs_jname(sc->name, sizeof(sc->name), gs_jstr(md, "name"), "StorageClass",
                      "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_VOL_STR + 32];
    snprintf(who, sizeof(who), "StorageClass %s", sc->name);
    if ((rc = read_sc_rest(obj, sc, who, err)))
        return refuse(rc, sc->refused, sizeof(sc->refused), who, err);
    return 0;
}

bool gs_kube_sc_node_allowed(const struct gs_kube_sc *sc, const struct gs_kube_node *n)
{
    if (sc->nterms == 0)
        return true;
    for (int t = 0; t < sc->nterms; t++) {
        bool ok = true;
        for (int i = 0; ok && i < sc->terms[t].nreqs; i++) {
            const struct gs_topo_req *r = &sc->terms[t].reqs[i];
            const char *v = gs_kube_label(n, r->key);
            bool in = false;
            for (int k = 0; v && k < r->nval; k++)
                in |= strcmp(v, r->val[k]) == 0;
            ok = in;
        }
        if (ok)
            return true;
    }
    return false;
}

int gs_kube_csidriver_read(const json_t *obj, struct gs_kube_csidriver *d, struct gs_error *err)
{
    memset(d, 0, sizeof(*d));
    int rc = gs_jname(d->name, sizeof(d->name), gs_jstr(json_object_get(obj, "metadata"), "name"),
                      "CSIDriver", "metadata.name", err);
    if (rc)
        return rc;
    const json_t *sc = json_object_get(json_object_get(obj, "spec"), "storageCapacity");
    if (sc && !json_is_boolean(sc) && !json_is_null(sc))
        return gs_error_set(err, GS_EINVAL,
                            "CSIDriver %s: spec.storageCapacity: expected a boolean", d->name);
    d->capacity = json_is_true(sc);
    return 0;
}

int gs_kube_csicap_read(const json_t *obj, struct gs_kube_csicap *c, struct gs_error *err)
{
    memset(c, 0, sizeof(*c));
    const json_t *md = json_object_get(obj, "metadata");
    int rc = gs_jname(c->name, sizeof(c->name), gs_jstr(md, "name"), "CSIStorageCapacity",
                      "metadata.name", err);
    if (rc)
        return rc;
    char who[GS_KNAME_MAX + 32];
    snprintf(who, sizeof(who), "CSIStorageCapacity %s", c->name);
    const json_t *topo = json_object_get(obj, "nodeTopology");
    if ((rc = gs_jname(c->ns, sizeof(c->ns), gs_jstr(md, "namespace"), who, "metadata.namespace",
                       err)) ||
        (rc = gs_jname(c->cls, sizeof(c->cls), gs_jstr(obj, "storageClassName"), who,
                       "storageClassName", err)) ||
        (rc = read_bytes(json_object_get(obj, "capacity"), &c->capacity, who, "capacity", err)) ||
        (rc = read_bytes(json_object_get(obj, "maximumVolumeSize"), &c->max_size, who,
                         "maximumVolumeSize", err)) ||
        (rc = gs_labelsel_read(topo, c->sel, GS_VOL_MAX_SEL, &c->nsel, who, "nodeTopology", err)))
        return rc;
    c->any_node = topo && !json_is_null(topo);
    return 0;
}

static const char *node_label(const void *n, const char *key)
{
    return gs_kube_label(n, key);
}

bool gs_kube_csicap_node_matches(const struct gs_kube_csicap *c, const struct gs_kube_node *n)
{
    /* upstream: a nil nodeTopology matches no node, an empty one every node */
    return c->any_node && gs_labelsel_matches(c->sel, c->nsel, node_label, n);
}

int gs_kube_csinode_read(const json_t *obj, struct gs_kube_csinode *cn, struct gs_error *err)
{
    memset(cn, 0, sizeof(*cn));
    int rc = gs_jname(cn->name, sizeof(cn->name), gs_jstr(json_object_get(obj, "metadata"), "name"),
                      "CSINode", "metadata.name", err);
    if (rc)
        return rc;
    const json_t *drivers = json_object_get(json_object_get(obj, "spec"), "drivers"), *d;
    if (drivers && !json_is_array(drivers) && !json_is_null(drivers))
        return gs_error_set(err, GS_EINVAL, "CSINode %s: spec.drivers: expected a list", cn->name);
    if (json_array_size(drivers) > GS_VOL_MAX_DRV)
        return gs_error_set(err, GS_EINVAL, "CSINode %s: spec.drivers: %zu drivers, at most %d",
                            cn->name, json_array_size(drivers), GS_VOL_MAX_DRV);
    size_t i;
    json_array_foreach(drivers, i, d)
    {
        struct gs_csinode_driver *x = &cn->drivers[cn->ndrivers++];
        char path[64];
        snprintf(path, sizeof(path), "spec.drivers[%zu].name", i);
        char who[GS_KNAME_MAX + 16];
        snprintf(who, sizeof(who), "CSINode %s", cn->name);
        if ((rc = gs_jname(x->name, sizeof(x->name), gs_jstr(d, "name"), who, path, err)))
            return rc;
        const json_t *cnt = json_object_get(json_object_get(d, "allocatable"), "count");
        x->count = -1;
        if (cnt && !json_is_null(cnt)) {
            if (!json_is_integer(cnt) || json_integer_value(cnt) < 0 ||
                json_integer_value(cnt) > INT32_MAX)
                return gs_error_set(err, GS_EINVAL,
                                    "%s: spec.drivers[%zu].allocatable.count: expected a "
                                    "non-negative integer",
                                    who, i);
            x->count = (int32_t)json_integer_value(cnt);
        }
    }
    return 0;
}
