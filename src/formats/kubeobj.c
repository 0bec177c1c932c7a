/* kubeobj.c - Pod and Node JSON to engine structs, and the Binding, Event and patch bodies
 * the scheduler sends; sched/ builds its cache from what this reads. */
#include "kubeobj.h"
#include "jfield.h"

#include "../base/error.h"
#include "../core/quantity.h"
#include "podspec.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

static int qty(const json_t *v, struct gs_quantity *q)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        return gs_quantity_parse(s, strlen(s), q, NULL);
    }
    if (json_is_integer(v)) {
        char b[32];
        snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(v));
        return gs_quantity_parse(b, strlen(b), q, NULL);
    }
    return GS_EINVAL;
}

struct res_sum {
    int64_t cpu_milli, mem_bytes;
    int64_t gpus, milli;
    char mig[GS_MIG_NAME_MAX];
    int64_t mig_count;
    int nres; /* other resources (ephemeral-storage, hugepages-*, extended ones) */
    struct gs_kube_res res[GS_MAX_POD_RES];
    bool res_over; /* more distinct other resources than kept */
};

/* A resource kube-scheduler's NodeResourcesFit counts that the engine does not model. */
static bool other_resource(const char *key)
{
    return strcmp(key, "cpu") != 0 && strcmp(key, "memory") != 0 && strcmp(key, "pods") != 0 &&
           strcmp(key, "nvidia.com/gpu") != 0 && strncmp(key, "nvidia.com/mig-", 15) != 0 &&
           strcmp(key, "gpusched.io/gpu-milli") != 0;
}

static void res_add(struct res_sum *s, const char *name, int64_t v)
{
    for (int i = 0; i < s->nres; i++)
        if (strcmp(s->res[i].name, name) == 0) {
            s->res[i].value += v;
            return;
        }
    if (s->nres >= GS_MAX_POD_RES || strlen(name) >= sizeof(s->res[0].name)) {
        s->res_over = true;
        return;
    }
    snprintf(s->res[s->nres].name, sizeof(s->res[0].name), "%s", name);
    s->res[s->nres++].value = v;
}

static int64_t res_get(const struct res_sum *s, const char *name)
{
    for (int i = 0; i < s->nres; i++)
        if (strcmp(s->res[i].name, name) == 0)
            return s->res[i].value;
    return 0;
}

/* a += b, or a = max(a, b) per resource */
static void res_merge(struct res_sum *a, const struct res_sum *b, bool max)
{
    a->res_over |= b->res_over;
    for (int i = 0; i < b->nres; i++) {
        int64_t have = res_get(a, b->res[i].name);
        if (!max)
            res_add(a, b->res[i].name, b->res[i].value);
        else if (b->res[i].value > have)
            res_add(a, b->res[i].name, b->res[i].value - have);
    }
}

static int read_resources(const char *who, const char *path, const json_t *res, struct res_sum *sum,
                          struct gs_error *err)
{
    const json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
    const char *key;
    const json_t *v;
    struct gs_quantity q;
    /* cpu and memory: requests, else limits */
    const char *basic[2] = {"cpu", "memory"};
    for (int k = 0; k < 2; k++) {
        const json_t *rv = json_object_get(req, basic[k]);
        if (!rv)
            rv = json_object_get(lim, basic[k]);
        if (!rv)
            continue;
        if (qty(rv, &q) || q.nanos < 0)
            return gs_error_set(err, GS_EINVAL, "%s: %s.resources.%s: not a quantity", who, path,
                                basic[k]);
        if (k == 0)
            sum->cpu_milli += gs_quantity_milli(&q);
        else
            sum->mem_bytes += gs_quantity_value(&q);
    }
    /* every other resource kube-scheduler fits: requests, else limits */
    const json_t *both[2] = {req, lim};
    for (int k = 0; k < 2; k++) {
        json_object_foreach((json_t *)both[k], key, v)
        {
            if (!other_resource(key) || (k == 1 && json_object_get(req, key)))
                continue;
            if (qty(v, &q) || q.nanos < 0)
                return gs_error_set(err, GS_EINVAL, "%s: %s.resources.%s.%s: not a quantity", who,
                                    path, k ? "limits" : "requests", key);
            res_add(sum, key, gs_quantity_value(&q));
        }
    }
    /* extended resources: limits are the truth; requests must be absent or equal */
    json_object_foreach((json_t *)req, key, v)
    {
        if (strchr(key, '/') == NULL || strncmp(key, "kubernetes.io/", 14) == 0)
            continue;
        if (!json_object_get(lim, key))
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s.resources.requests.%s: Limit must be set for non "
                                "overcommitable resources",
                                who, path, key);
        struct gs_quantity a, b;
        if (qty(v, &a) || qty(json_object_get(lim, key), &b) || a.nanos != b.nanos)
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s.resources.requests.%s: must be equal to "
                                "%s limit",
                                who, path, key, key);
    }
    json_object_foreach((json_t *)lim, key, v)
    {
        bool gpu = strcmp(key, "nvidia.com/gpu") == 0;
        bool mig = strncmp(key, "nvidia.com/mig-", 15) == 0;
        bool milli = strcmp(key, "gpusched.io/gpu-milli") == 0;
        if (!gpu && !mig && !milli)
            continue;
        if (qty(v, &q) || !gs_quantity_is_integer(&q) || q.nanos < 0)
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s.resources.limits.%s: must be a non-negative integer", who,
                                path, key);
        int64_t n = gs_quantity_value(&q);
        if (n > 1000000)
            return gs_error_set(err, GS_EINVAL, "%s: %s.resources.limits.%s: %lld is too large",
                                who, path, key, (long long)n);
        if (gpu)
            sum->gpus += n;
        else if (milli)
            sum->milli += n;
        else if (n > 0) {
            if (sum->mig[0] && strcmp(sum->mig, key + 15) != 0)
                return gs_error_set(err, GS_EINVAL,
                                    "%s: %s.resources.limits: MIG devices of two profiles (%s and "
                                    "%s) in one pod are not supported",
                                    who, path, sum->mig, key + 15);
            if (strlen(key + 15) >= sizeof(sum->mig))
                return gs_error_set(err, GS_EINVAL, "%s: %s.resources.limits.%s: name too long",
                                    who, path, key);
            copy(sum->mig, sizeof(sum->mig), key + 15);
            sum->mig_count += n;
        }
    }
    return 0;
}

/* A pod's scalars beyond its name (state, node, scheduler, priority, start) and its labels. */
static void pod_fields(const json_t *obj, const json_t *md, const json_t *spec, const json_t *st,
                       struct gs_kube_pod *p)
{
    p->terminating = json_object_get(md, "deletionTimestamp") != NULL;
    const char *dev = gs_jstr(json_object_get(md, "annotations"), GS_DEVICES_ANNOTATION);
    copy(p->devices, sizeof(p->devices), dev);
    gs_kube_topoask_read(json_object_get(md, "annotations"), &p->topo);
    copy(p->node, sizeof(p->node), gs_jstr(spec, "nodeName"));
    copy(p->nominated, sizeof(p->nominated),
         gs_jstr(json_object_get(obj, "status"), "nominatedNodeName"));
    copy(p->scheduler, sizeof(p->scheduler), gs_jstr(spec, "schedulerName"));
    if (!p->scheduler[0])
        copy(p->scheduler, sizeof(p->scheduler), "default-scheduler");
    copy(p->priority_class, sizeof(p->priority_class), gs_jstr(spec, "priorityClassName"));
    const json_t *prio = json_object_get(spec, "priority");
    p->priority = json_is_integer(prio) ? (int32_t)json_integer_value(prio) : 0;
    copy(p->phase, sizeof(p->phase), gs_jstr(st, "phase"));
    const char *pp = gs_jstr(spec, "preemptionPolicy");
    p->preempt_never = pp && strcmp(pp, "Never") == 0;
    const char *ts = gs_jstr(st, "startTime");
    if (!ts || gs_kube_parse_time(ts, &p->start_s))
        if (!(ts = gs_jstr(md, "creationTimestamp")) || gs_kube_parse_time(ts, &p->start_s))
            p->start_s = 0;
    const char *lkey;
    const json_t *lv;
    json_object_foreach(json_object_get(md, "labels"), lkey, lv)
    {
        if (p->nlabels >= GS_MAX_POD_LABELS || !json_is_string(lv))
            continue;
        if (strlen(lkey) >= GS_LABEL_KEY_MAX || strlen(json_string_value(lv)) >= GS_LABEL_VAL_MAX)
            continue;
        /* the labels gpusched reads come first */
        copy(p->labels[p->nlabels].key, GS_LABEL_KEY_MAX, lkey);
        copy(p->labels[p->nlabels].val, GS_LABEL_VAL_MAX, json_string_value(lv));
        p->nlabels++;
    }
}

/* An extended resource as kube-scheduler's DRA backs them (IsDRAExtendedResourceName): a domain
 * outside kubernetes.io, or a DeviceClass's implicit name. */
static bool xres_name(const char *key)
{
    return strncmp(key, "deviceclass.resource.kubernetes.io/", 35) == 0 ||
           (strchr(key, '/') && !strstr(key, "kubernetes.io/") &&
            strncmp(key, "requests.", 9) != 0);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Container c's (index k) requests of extended resources other than the GPUs gpusched counts
 * itself, into p->xreq (requests as the API server defaults them: limits where unset). */
static void container_xreqs(const json_t *c, int k, uint8_t init, struct gs_kube_pod *p)
{
    const json_t *res = json_object_get(c, "resources");
    const json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
    const char *keys[64];
    int n = 0;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)req, key, v)
    {
        if (n < 64)
            keys[n++] = key;
    }
    json_object_foreach((json_t *)lim, key, v)
    {
        if (n < 64 && !json_object_get(req, key))
            keys[n++] = key;
    }
    qsort(keys, (size_t)n, sizeof(*keys), cmp_str);
    for (int i = 0; i < n && p->nxreq < GS_MAX_POD_XREQ; i++) {
        struct gs_quantity q;
        const json_t *qv = json_object_get(req, keys[i]) ? json_object_get(req, keys[i])
                                                         : json_object_get(lim, keys[i]);
        if (!other_resource(keys[i]) || !xres_name(keys[i]) || strlen(keys[i]) >= 64 ||
            qty(qv, &q) || !gs_quantity_is_integer(&q) || gs_quantity_value(&q) <= 0)
            continue;
        struct gs_kube_xreq *x = &p->xreq[p->nxreq++];
        copy(x->container, sizeof(x->container), gs_jstr(c, "name"));
        copy(x->name, sizeof(x->name), keys[i]);
        x->count = gs_quantity_value(&q);
        x->index = (uint8_t)k;
        x->ridx = (uint8_t)i;
        x->init = init;
    }
}

static void pod_xreqs(const json_t *spec, struct gs_kube_pod *p)
{
    const json_t *ic = json_object_get(spec, "initContainers");
    size_t i, nic = json_array_size(ic);
    const json_t *c;
    json_array_foreach(ic, i, c)
    {
        const char *rp = gs_jstr(c, "restartPolicy");
        if (i < 255)
            container_xreqs(c, (int)i, rp && strcmp(rp, "Always") == 0 ? 2 : 1, p);
    }
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        if (nic + i < 255)
            container_xreqs(c, (int)(nic + i), 0, p);
    }
}

/* The pod's effective request as kube-scheduler counts it: max(sum of containers, each init
 * container), sidecars on both sides, plus spec.overhead. Returns 0 or an error in err. */
static int pod_totals(const char *who, const json_t *spec, struct res_sum *tot,
                      struct gs_error *err)
{
    /* effective request: max(sum of containers, each init container) */
    struct res_sum total = {0}, init_max = {0};
    const json_t *containers = json_object_get(spec, "containers");
    size_t i;
    const json_t *c;
    json_array_foreach(containers, i, c)
    {
        char path[64];
        snprintf(path, sizeof(path), "spec.containers[%zu]", i);
        int rc = read_resources(who, path, json_object_get(c, "resources"), &total, err);
        if (rc)
            return rc;
    }
    /* init containers as kube-scheduler counts them (resourcehelper.PodRequests): a sidecar
     * (restartPolicy Always) runs beside the containers and the init containers after it, so
     * it adds to both; a plain init container runs alone beside the sidecars before it */
    struct res_sum side = {0};
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        char path[64];
        struct res_sum one = {0};
        snprintf(path, sizeof(path), "spec.initContainers[%zu]", i);
        int rc = read_resources(who, path, json_object_get(c, "resources"), &one, err);
        if (rc)
            return rc;
        const char *rp = gs_jstr(c, "restartPolicy");
        if (rp && strcmp(rp, "Always") == 0) {
            res_merge(&total, &one, false);
            res_merge(&side, &one, false);
            total.cpu_milli += one.cpu_milli;
            total.mem_bytes += one.mem_bytes;
            total.gpus += one.gpus;
            side.cpu_milli += one.cpu_milli;
            side.mem_bytes += one.mem_bytes;
            side.gpus += one.gpus;
            one = side;
        } else {
            res_merge(&one, &side, false);
            one.cpu_milli += side.cpu_milli;
            one.mem_bytes += side.mem_bytes;
            one.gpus += side.gpus;
        }
        res_merge(&init_max, &one, true);
        if (one.cpu_milli > init_max.cpu_milli)
            init_max.cpu_milli = one.cpu_milli;
        if (one.mem_bytes > init_max.mem_bytes)
            init_max.mem_bytes = one.mem_bytes;
        if (one.gpus > init_max.gpus)
            init_max.gpus = one.gpus;
    }
    if (init_max.cpu_milli > total.cpu_milli)
        total.cpu_milli = init_max.cpu_milli;
    if (init_max.mem_bytes > total.mem_bytes)
        total.mem_bytes = init_max.mem_bytes;
    if (init_max.gpus > total.gpus)
        total.gpus = init_max.gpus;
    res_merge(&total, &init_max, true);
    /* spec.overhead (RuntimeClass) counts on top, as kube-scheduler counts it */
    const json_t *ovh = json_object_get(spec, "overhead");
    if (ovh) {
        struct res_sum o = {0};
        json_t *wrap = json_pack("{s:O}", "requests", ovh);
        int rc = wrap ? read_resources(who, "spec.overhead", wrap, &o, err) : GS_ENOMEM;
        json_decref(wrap);
        if (rc)
            return rc;
        total.cpu_milli += o.cpu_milli;
        total.mem_bytes += o.mem_bytes;
        res_merge(&total, &o, false);
    }
    *tot = total;
    return 0;
}

/* The engine's request (and the pod's bytes and other resources) from the totals: one kind of
 * GPU device at most, within the engine's bounds. Returns 0 or an error in err. */
static int pod_request(const char *who, const struct res_sum *t, struct gs_kube_pod *p,
                       struct gs_error *err)
{
    /* the engine counts memory in MiB, rounded down here and up on nodes, so it never refuses
     * what fits to the byte; the scheduler checks the bytes (and the other resources) */
    p->mem_bytes = t->mem_bytes;
    p->nres = t->nres;
    memcpy(p->res, t->res, sizeof(p->res[0]) * (size_t)t->nres);
    if (t->res_over)
        snprintf(p->refused, sizeof(p->refused),
                 "spec.containers: more than %d kinds of resources besides cpu, memory and GPUs",
                 GS_MAX_POD_RES);
    struct gs_request *r = &p->req;
    r->cpu_milli = t->cpu_milli;
    r->mem_mib = t->mem_bytes >> 20;
    int kinds = (t->gpus > 0) + (t->mig_count > 0) + (t->milli > 0);
    if (kinds > 1)
        return gs_error_set(err, GS_EINVAL,
                            "%s: spec.containers: asks for more than one kind of GPU device "
                            "(nvidia.com/gpu, nvidia.com/mig-*, gpusched.io/gpu-milli)",
                            who);
    if (t->gpus > GS_MAX_GPUS_NODE)
        return gs_error_set(err, GS_EINVAL, "%s: nvidia.com/gpu: %lld GPUs, at most %d per pod",
                            who, (long long)t->gpus, GS_MAX_GPUS_NODE);
    if (t->mig_count > 1)
        return gs_error_set(err, GS_EINVAL,
                            "%s: nvidia.com/mig-%s: %lld instances; one MIG instance per pod is "
                            "supported",
                            who, t->mig, (long long)t->mig_count);
    if (t->milli >= GS_MILLI)
        return gs_error_set(err, GS_EINVAL,
                            "%s: resources.limits.gpusched.io/gpu-milli: %lld; a share is 1 "
                            "to 999 thousandths of one GPU (ask nvidia.com/gpu for whole GPUs)",
                            who, (long long)t->milli);
    if (t->gpus > 0) {
        r->kind = GS_REQ_GPU;
        r->gpus = (uint8_t)t->gpus;
        r->milli = GS_MILLI;
    } else if (t->mig_count == 1) {
        r->kind = GS_REQ_MIG;
        r->gpus = 1;
        copy(r->mig, sizeof(r->mig), t->mig);
        bool known = false;
        for (int m = 0; m < gs_catalog_count() && !known; m++)
            known = gs_catalog_find_profile(m, r->mig) >= 0;
        if (!known)
            return gs_error_set(err, GS_EINVAL,
                                "%s: nvidia.com/mig-%s: not a MIG profile of any known GPU", who,
                                r->mig);
    } else if (t->milli > 0) {
        r->kind = GS_REQ_FRACTION;
        r->gpus = 1;
        r->milli = (int16_t)t->milli;
    } else {
        r->kind = GS_REQ_NONE;
    }
    return 0;
}

/* spec.nodeSelector into the engine's selector (what fits it; sel_partial when not all). */
static int pod_selector(const char *who, const json_t *spec, struct gs_kube_pod *p,
                        struct gs_error *err)
{
    struct gs_request *r = &p->req;
    const char *key;
    const json_t *v;
    json_object_foreach(json_object_get(spec, "nodeSelector"), key, v)
    {
        if (!json_is_string(v))
            return gs_error_set(err, GS_EINVAL, "%s: spec.nodeSelector.%.80s: expected a string",
                                who, key);
        /* the engine's own selector keeps what fits it; the whole selector is the pod's
         * constraints' (gs_kube_pod_read_constraints) */
        if (r->nsel >= GS_MAX_SELECTOR || strlen(key) >= GS_LABEL_KEY_MAX ||
            strlen(json_string_value(v)) >= GS_LABEL_VAL_MAX) {
            p->sel_partial = true;
            continue;
        }
        copy(r->sel[r->nsel].key, GS_LABEL_KEY_MAX, key);
        copy(r->sel[r->nsel].val, GS_LABEL_VAL_MAX, json_string_value(v));
        r->nsel++;
    }
    return 0;
}

/* The PersistentVolumeClaims of its volumes and the ResourceClaims it names. */
static void pod_claims(const json_t *obj, const json_t *spec, struct gs_kube_pod *p)
{
    size_t i;
    const json_t *c;
    /* the claims of its volumes: a generic ephemeral volume's claim is <pod>-<volume> */
    const json_t *vols = json_object_get(spec, "volumes");
    json_array_foreach(vols, i, c)
    {
        const char *claim = gs_jstr(json_object_get(c, "persistentVolumeClaim"), "claimName");
        const char *vname = gs_jstr(c, "name");
        char eph[2 * GS_KNAME_MAX];
        if (!claim && json_object_get(c, "ephemeral") && vname) {
            snprintf(eph, sizeof(eph), "%s-%s", p->name, vname);
            claim = eph;
        }
        if (!claim || !claim[0])
            continue;
        if (p->nclaims >= GS_MAX_POD_CLAIMS || strlen(claim) >= GS_KNAME_MAX) {
            if (!p->refused[0])
                snprintf(p->refused, sizeof(p->refused),
                         "spec.volumes[%zu]: more than %d PersistentVolumeClaims, or a claim "
                         "name over %d characters",
                         i, GS_MAX_POD_CLAIMS, GS_KNAME_MAX - 1);
            break;
        }
        copy(p->claims[p->nclaims++], GS_KNAME_MAX, claim);
    }
    /* DRA: the ResourceClaims it names, directly or made from a template */
    const json_t *rcs = json_object_get(spec, "resourceClaims");
    json_array_foreach(rcs, i, c)
    {
        const char *claim = gs_jstr(c, "resourceClaimName");
        const char *rname = gs_jstr(c, "name");
        if (!claim && gs_jstr(c, "resourceClaimTemplateName")) {
            size_t j;
            const json_t *cs;
            claim = "";
            json_array_foreach(
                json_object_get(json_object_get(obj, "status"), "resourceClaimStatuses"), j, cs)
            {
                const char *n = gs_jstr(cs, "name"), *rc = gs_jstr(cs, "resourceClaimName");
                if (n && rname && rc && strcmp(n, rname) == 0)
                    claim = rc;
            }
        }
        if (!claim)
            continue;
        if (p->ndra >= GS_MAX_POD_DRA || strlen(claim) >= GS_KNAME_MAX) {
            if (!p->refused[0])
                snprintf(p->refused, sizeof(p->refused),
                         "spec.resourceClaims[%zu]: more than %d ResourceClaims, or a claim name "
                         "over %d characters",
                         i, GS_MAX_POD_DRA, GS_KNAME_MAX - 1);
            break;
        }
        copy(p->dra[p->ndra++], GS_KNAME_MAX, claim);
    }
}

/* spec.schedulingGates: the count, and the names that fit the text (an entry without a name
 * still gates: the API server never sends one). */
static void pod_gates(const json_t *spec, struct gs_kube_pod *p)
{
    const json_t *gates = json_object_get(spec, "schedulingGates");
    size_t n = json_array_size(gates), i, off = 0;
    const json_t *g;
    p->ngates = n > 1000000 ? 1000000 : (int)n;
    json_array_foreach(gates, i, g)
    {
        const char *name = gs_jstr(g, "name");
        size_t len = name ? strlen(name) : 0, room = sizeof(p->gates) - off;
        if (!len)
            continue;
        if (len + (off ? 1 : 0) + 5 > room) { /* room is left for " ..." and the NUL */
            snprintf(p->gates + off, room, "%s...", off ? " " : "");
            break;
        }
        off += (size_t)snprintf(p->gates + off, room, "%s%s", off ? " " : "", name);
    }
}

static void pod_tolerations(const json_t *spec, struct gs_kube_pod *p)
{
    size_t i;
    const json_t *c;
    const json_t *tols = json_object_get(spec, "tolerations");
    if (json_array_size(tols) > GS_MAX_TOLERATIONS)
        snprintf(p->refused, sizeof(p->refused), "spec.tolerations: %zu tolerations, at most %d",
                 json_array_size(tols), GS_MAX_TOLERATIONS);
    json_array_foreach(tols, i, c)
    {
        if (p->ntol >= GS_MAX_TOLERATIONS)
            break;
        struct gs_toleration *t = &p->tol[p->ntol++];
        const char *tk = gs_jstr(c, "key"), *tv = gs_jstr(c, "value");
        if ((tk && strlen(tk) >= sizeof(t->key)) || (tv && strlen(tv) >= sizeof(t->value))) {
            snprintf(p->refused, sizeof(p->refused),
                     "spec.tolerations[%zu]: a key or value over %zu bytes", i, sizeof(t->key) - 1);
        }
        copy(t->key, sizeof(t->key), tk);
        copy(t->op, sizeof(t->op), gs_jstr(c, "operator"));
        copy(t->value, sizeof(t->value), tv);
        copy(t->effect, sizeof(t->effect), gs_jstr(c, "effect"));
    }
}

/* spec.schedulingGroup.podGroupName: the Workload API PodGroup the pod belongs to (Kubernetes
 * v1.37, formats/workloadobj.h). One gpusched cannot read refuses the pod, naming the field. */
static void pod_group(const json_t *spec, struct gs_kube_pod *p)
{
    const json_t *sg = json_object_get(spec, "schedulingGroup");
    if (!sg || json_is_null(sg))
        return;
    const json_t *v = json_object_get(sg, "podGroupName");
    const char *bad = NULL;
    if (!json_is_object(sg))
        bad = "spec.schedulingGroup: expected an object";
    else if (!v)
        bad = "spec.schedulingGroup: no podGroupName (the only kind of group gpusched reads)";
    else if (!json_is_string(v) || json_string_length(v) == 0 ||
             strlen(json_string_value(v)) != json_string_length(v))
        bad = "spec.schedulingGroup.podGroupName: expected a name";
    else if (json_string_length(v) >= sizeof(p->group))
        bad = "spec.schedulingGroup.podGroupName: longer than 253 characters";
    if (!bad)
        copy(p->group, sizeof(p->group), json_string_value(v));
    else if (!p->refused[0])
        copy(p->refused, sizeof(p->refused), bad);
}

int gs_kube_pod_read(const json_t *obj, struct gs_kube_pod *p, struct gs_error *err)
{
    memset(p, 0, sizeof(*p));
    if (!json_is_object(obj))
        return gs_error_set(err, GS_EINVAL, "pod: expected a JSON object");
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec"),
                 *st = json_object_get(obj, "status");
    copy(p->ns, sizeof(p->ns), gs_jstr(md, "namespace"));
    copy(p->name, sizeof(p->name), gs_jstr(md, "name"));
    copy(p->uid, sizeof(p->uid), gs_jstr(md, "uid"));
    copy(p->rv, sizeof(p->rv), gs_jstr(md, "resourceVersion"));
    if (!p->name[0] || !json_is_object(spec))
        return gs_error_set(err, GS_EINVAL, "pod: metadata.name and spec are required");
    char who[GS_KNAME_MAX + 70];
    snprintf(who, sizeof(who), "pod %s/%s", p->ns, p->name);
    pod_fields(obj, md, spec, st, p);
    struct res_sum total;
    int rc = pod_totals(who, spec, &total, err);
    if (!rc)
        rc = pod_request(who, &total, p, err);
    if (!rc)
        rc = pod_selector(who, spec, p, err);
    if (rc)
        return rc;
    pod_claims(obj, spec, p);
    pod_tolerations(spec, p);
    pod_xreqs(spec, p);
    pod_group(spec, p);
    pod_gates(spec, p);
    return 0;
}

/* A read inventory shared by the copies of a node (the scheduler copies every node into each
 * cycle's snapshot): immutable, freed by the last reference. */
struct shared_inv {
    long refs;
    struct gs_inventory inv;
    struct gs_mig_desired desired;
};

static struct shared_inv *shared_of(const struct gs_inventory *inv)
{
    return (struct shared_inv *)(void *)((char *)(uintptr_t)inv - offsetof(struct shared_inv, inv));
}

static void read_inventory(const json_t *md, struct gs_kube_node *n)
{
    const json_t *a = json_object_get(json_object_get(md, "annotations"), GS_INVENTORY_ANNOTATION);
    if (!a)
        return;
    struct gs_error e;
    gs_error_init(&e);
    struct shared_inv *sh = malloc(sizeof(*sh));
    if (!sh) {
        snprintf(n->inv_error, sizeof(n->inv_error), "%s: out of memory", GS_INVENTORY_ANNOTATION);
        return;
    }
    if (!json_is_string(a)) {
        gs_error_set(&e, GS_EINVAL, "%s annotation: expected a string", GS_INVENTORY_ANNOTATION);
    } else if (gs_inventory_read(json_string_value(a), json_string_length(a), &sh->inv, &e) == 0) {
        sh->refs = 1;
        n->inv = &sh->inv;
        /* the layout the scheduler asked for (ours: one that does not read is ignored) */
        const json_t *d =
            json_object_get(json_object_get(md, "annotations"), GS_MIG_DESIRED_ANNOTATION);
        if (json_is_string(d) &&
            gs_mig_desired_read(json_string_value(d), json_string_length(d), &sh->desired, &e) == 0)
            n->desired = &sh->desired;
        return;
    }
    free(sh);
    snprintf(n->inv_error, sizeof(n->inv_error), "metadata.annotations.%s", e.msg);
}

static int node_read(const json_t *obj, struct gs_kube_node *n, struct gs_error *err)
{
    memset(n, 0, sizeof(*n));
    if (!json_is_object(obj))
        return gs_error_set(err, GS_EINVAL, "node: expected a JSON object");
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec"),
                 *st = json_object_get(obj, "status");
    copy(n->name, sizeof(n->name), gs_jstr(md, "name"));
    copy(n->rv, sizeof(n->rv), gs_jstr(md, "resourceVersion"));
    copy(n->uid, sizeof(n->uid), gs_jstr(md, "uid"));
    if (!n->name[0])
        return gs_error_set(err, GS_EINVAL, "node: metadata.name is required");
    const json_t *u = json_object_get(spec, "unschedulable");
    n->unschedulable = json_is_true(u);
    n->ready = -1;
    size_t ci;
    const json_t *cond;
    json_array_foreach(json_object_get(st, "conditions"), ci, cond)
    {
        const char *ct = json_string_value(json_object_get(cond, "type"));
        if (ct && strcmp(ct, "Ready") == 0) {
            const char *cs = json_string_value(json_object_get(cond, "status"));
            n->ready = cs && strcmp(cs, "True") == 0;
        }
    }
    read_inventory(md, n);
    const char *key;
    const json_t *v;
    const json_t *labels = json_object_get(md, "labels");
    if (labels && !json_is_object(labels))
        return gs_error_set(err, GS_EINVAL, "node %s: metadata.labels: expected an object",
                            n->name);
    size_t nl = json_object_size(labels);
    if (nl > GS_KUBE_MAX_NODE_LABELS)
        return gs_error_set(err, GS_EINVAL, "node %s: metadata.labels: %zu labels, at most %d",
                            n->name, nl, GS_KUBE_MAX_NODE_LABELS);
    if (nl) {
        struct gs_label_ref *kv = malloc(sizeof(*kv) * nl);
        if (!kv)
            return gs_error_set(err, GS_ENOMEM, "node %s: out of memory for %zu labels", n->name,
                                nl);
        uint32_t k = 0;
        json_object_foreach((json_t *)labels, key, v)
        {
            if (!json_is_string(v)) {
                free(kv);
                return gs_error_set(err, GS_EINVAL,
                                    "node %s: metadata.labels.%s: expected a string", n->name, key);
            }
            kv[k].key = key;
            kv[k].val = json_string_value(v);
            if (strlen(key) > GS_LABELS_KEY_MAX || strlen(kv[k].val) > GS_LABELS_VAL_MAX) {
                free(kv);
                return gs_error_set(err, GS_EINVAL,
                                    "node %s: metadata.labels.%.64s: key or value too long "
                                    "(at most %d and %d bytes)",
                                    n->name, key, GS_LABELS_KEY_MAX, GS_LABELS_VAL_MAX);
            }
            k++;
        }
        int rc = gs_labels_build(&n->labels, kv, k);
        free(kv);
        if (rc)
            return gs_error_set(err, rc, "node %s: metadata.labels: %s", n->name,
                                gs_error_name(rc));
    }
    size_t i;
    const json_t *t;
    const json_t *taints = json_object_get(spec, "taints");
    if (json_array_size(taints) > GS_MAX_TAINTS)
        snprintf(n->refused, sizeof(n->refused), "spec.taints: %zu taints, at most %d",
                 json_array_size(taints), GS_MAX_TAINTS);
    json_array_foreach(taints, i, t)
    {
        if (n->ntaints >= GS_MAX_TAINTS)
            break;
        struct gs_taint *x = &n->taints[n->ntaints++];
        copy(x->key, sizeof(x->key), gs_jstr(t, "key"));
        copy(x->value, sizeof(x->value), gs_jstr(t, "value"));
        copy(x->effect, sizeof(x->effect), gs_jstr(t, "effect"));
    }
    const json_t *alloc = json_object_get(st, "allocatable");
    struct gs_quantity q;
    json_object_foreach((json_t *)alloc, key, v)
    {
        if (qty(v, &q) || q.nanos < 0)
            return gs_error_set(err, GS_EINVAL, "node %s: status.allocatable.%s: not a quantity",
                                n->name, key);
        if (strcmp(key, "cpu") == 0)
            n->cpu_milli = gs_quantity_milli(&q);
        else if (strcmp(key, "memory") == 0) {
            n->mem_bytes = gs_quantity_value(&q);
            n->mem_mib = (n->mem_bytes + (1 << 20) - 1) >> 20;
        } else if (other_resource(key) && strncmp(key, "nvidia.com/", 11) != 0) {
            if (n->nres >= GS_MAX_NODE_RES || strlen(key) >= sizeof(n->res[0].name)) {
                if (!n->refused[0])
                    snprintf(n->refused, sizeof(n->refused),
                             "status.allocatable.%.80s: more than %d resources besides cpu, "
                             "memory, pods and GPUs",
                             key, GS_MAX_NODE_RES);
                continue;
            }
            copy(n->res[n->nres].name, sizeof(n->res[0].name), key);
            n->res[n->nres++].value = gs_quantity_value(&q);
        } else if (strcmp(key, "pods") == 0)
            n->pods = gs_quantity_value(&q);
        else if (strcmp(key, "nvidia.com/gpu") == 0)
            n->gpus = gs_quantity_value(&q);
        else if (strncmp(key, "nvidia.com/mig-", 15) == 0) {
            if (n->next >= GS_MAX_EXT || strlen(key) >= sizeof(n->ext[0].name)) {
                if (!n->refused[0])
                    snprintf(n->refused, sizeof(n->refused),
                             "status.allocatable.%.80s: more than %d MIG resources or a name "
                             "over %zu bytes",
                             key, GS_MAX_EXT, sizeof(n->ext[0].name) - 1);
                continue;
            }
            copy(n->ext[n->next].name, sizeof(n->ext[0].name), key);
            n->ext[n->next].count = gs_quantity_value(&q);
            n->next++;
        }
    }
    return 0;
}

int gs_kube_node_read(const json_t *obj, struct gs_kube_node *n, struct gs_error *err)
{
    int rc = node_read(obj, n, err);
    if (rc)
        gs_kube_node_release(n);
    return rc;
}

const char *gs_kube_label(const struct gs_kube_node *n, const char *key)
{
    return gs_labels_get(&n->labels, key);
}

int gs_kube_pod_read_constraints(const json_t *obj, struct gs_kube_pod *p)
{
    p->k = NULL;
    p->k_error[0] = '\0';
    struct gs_kube_kpod *k = malloc(sizeof(*k));
    if (!k) {
        snprintf(p->k_error, sizeof(p->k_error), "out of memory");
        return GS_ENOMEM;
    }
    gs_kpod_init(&k->kp);
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_podspec_read(obj, &k->kp, &err);
    if (rc) {
        gs_kpod_release(&k->kp);
        free(k);
        snprintf(p->k_error, sizeof(p->k_error), "%s", err.msg);
        return rc;
    }
    k->refs = 1;
    p->k = k;
    return 0;
}

void gs_kube_pod_ref(struct gs_kube_pod *p)
{
    if (p->k)
        __atomic_add_fetch(&p->k->refs, 1, __ATOMIC_RELAXED);
}

void gs_kube_pod_release(struct gs_kube_pod *p)
{
    if (p->k && __atomic_sub_fetch(&p->k->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        gs_kpod_release(&p->k->kp);
        free(p->k);
    }
    p->k = NULL;
}

void gs_kube_node_release(struct gs_kube_node *n)
{
    gs_labels_release(&n->labels);
    if (n->inv) {
        struct shared_inv *sh = shared_of(n->inv);
        if (__atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) == 0)
            free(sh);
        n->inv = NULL;
        n->desired = NULL;
    }
}

void gs_kube_node_move(struct gs_kube_node *dst, struct gs_kube_node *src)
{
    if (dst == src)
        return;
    gs_kube_node_release(dst);
    *dst = *src;
    gs_labels_init(&src->labels);
    src->inv = NULL;
    src->desired = NULL;
}

int gs_kube_node_copy(struct gs_kube_node *dst, const struct gs_kube_node *src)
{
    if (dst == src)
        return 0;
    gs_kube_node_release(dst);
    *dst = *src;
    if (dst->inv)
        __atomic_add_fetch(&shared_of(dst->inv)->refs, 1, __ATOMIC_RELAXED);
    gs_labels_init(&dst->labels);
    return gs_labels_copy(&dst->labels, &src->labels);
}

const char *gs_kube_pod_label(const struct gs_kube_pod *p, const char *key)
{
    for (int i = 0; i < p->nlabels; i++)
        if (strcmp(p->labels[i].key, key) == 0)
            return p->labels[i].val;
    return NULL;
}

int gs_kube_parse_time(const char *s, double *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    int used = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &used) != 6 ||
        used != 19)
        return GS_EINVAL;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return GS_EINVAL;
    double frac = 0;
    const char *r = s + 19;
    if (*r == '.') {
        double scale = 0.1;
        for (r++; *r >= '0' && *r <= '9'; r++, scale /= 10)
            frac += (*r - '0') * scale;
    }
    long off = 0;
    if (*r == 'Z' || *r == 'z') {
        r++;
    } else if (*r == '+' || *r == '-') {
        int hh, mm;
        if (sscanf(r + 1, "%2d:%2d", &hh, &mm) != 2 || strlen(r) != 6)
            return GS_EINVAL;
        off = (hh * 3600L + mm * 60L) * (*r == '+' ? 1 : -1);
        r += 6;
    } else {
        return GS_EINVAL;
    }
    if (*r)
        return GS_EINVAL;
    *out = (double)(timegm(&tm) - off) + frac;
    return 0;
}

static bool tolerates_one(const struct gs_kube_pod *p, const struct gs_taint *t)
{
    for (int i = 0; i < p->ntol; i++) {
        const struct gs_toleration *o = &p->tol[i];
        if (o->effect[0] && strcmp(o->effect, t->effect) != 0)
            continue;
        if (!o->key[0] && strcmp(o->op, "Exists") == 0)
            return true; /* tolerates everything */
        if (strcmp(o->key, t->key) != 0)
            continue;
        if (strcmp(o->op, "Exists") == 0 || strcmp(o->value, t->value) == 0)
            return true;
    }
    return false;
}

bool gs_kube_tolerates(const struct gs_kube_pod *p, const struct gs_kube_node *n)
{
    /* a cordoned node, as kube-scheduler's NodeUnschedulable sees it: only pods tolerating
     * node.kubernetes.io/unschedulable:NoSchedule (DaemonSets' pods do) may go there */
    static const struct gs_taint cordon = {.key = "node.kubernetes.io/unschedulable",
                                           .effect = "NoSchedule"};
    if (n->unschedulable && !tolerates_one(p, &cordon))
        return false;
    for (int i = 0; i < n->ntaints; i++) {
        const struct gs_taint *t = &n->taints[i];
        if (strcmp(t->effect, "NoSchedule") != 0 && strcmp(t->effect, "NoExecute") != 0)
            continue;
        if (!tolerates_one(p, t))
            return false;
    }
    return true;
}

json_t *gs_kube_binding(const struct gs_kube_pod *p, const char *node)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind",
                     "Binding", "metadata", "name", p->name, "namespace", p->ns, "uid", p->uid,
                     "target", "apiVersion", "v1", "kind", "Node", "name", node);
}

void gs_kube_micro_time(char *out, size_t n)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%s.%06ldZ", base, ts.tv_nsec / 1000);
}

/* An events.k8s.io/v1 Event regarding one object (a Pod, or a Node: ns NULL). */
static json_t *event_json(const char *kind, const char *name, const char *ns, const char *uid,
                          const char *type, const char *reason, const char *action,
                          const char *note, const char *instance)
{
    char ename[GS_KNAME_MAX + 32], now[40];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(ename, sizeof(ename), "%.200s.%llx%05lx", name, (unsigned long long)ts.tv_sec,
             (long)(ts.tv_nsec / 10000) & 0xfffff);
    gs_kube_micro_time(now, sizeof(now));
    char n1024[1024];
    snprintf(n1024, sizeof(n1024), "%s", note ? note : "");
    json_t *regarding = json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind", kind, "name",
                                  name, "uid", uid ? uid : "");
    if (regarding && ns)
        json_object_set_new(regarding, "namespace", json_string(ns));
    if (!regarding)
        return NULL;
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}",
                     "apiVersion", "events.k8s.io/v1", "kind", "Event", "metadata", "name", ename,
                     "namespace", ns ? ns : "default", "eventTime", now, "type", type, "reason",
                     reason, "action", action, "note", n1024, "reportingController",
                     "gpusched.io/scheduler", "reportingInstance", instance, "regarding",
                     regarding);
}

json_t *gs_kube_event(const struct gs_kube_pod *p, const char *type, const char *reason,
                      const char *action, const char *note, const char *instance)
{
    return event_json("Pod", p->name, p->ns, p->uid, type, reason, action, note, instance);
}

json_t *gs_kube_node_event(const struct gs_kube_node *n, const char *type, const char *reason,
                           const char *action, const char *note, const char *instance)
{
    return event_json("Node", n->name, NULL, n->uid, type, reason, action, note, instance);
}

json_t *gs_kube_unschedulable_patch(const char *message)
{
    char now[40];
    gs_kube_micro_time(now, sizeof(now));
    now[19] = 'Z';
    now[20] = '\0'; /* conditions use seconds */
    return json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions", "type",
                     "PodScheduled", "status", "False", "reason", "Unschedulable", "message",
                     message, "lastTransitionTime", now);
}

json_t *gs_kube_nominated_patch(const char *node, const char *message)
{
    json_t *p = gs_kube_unschedulable_patch(message ? message : "");
    if (p)
        json_object_set_new(json_object_get(p, "status"), "nominatedNodeName",
                            node ? json_string(node) : json_null());
    return p;
}

json_t *gs_kube_delete_options(const char *uid, long grace_s)
{
    json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "DeleteOptions",
                          "preconditions", "uid", uid ? uid : "");
    if (o && grace_s >= 0)
        json_object_set_new(o, "gracePeriodSeconds", json_integer(grace_s));
    return o;
}

json_t *gs_kube_node_patch(const char *label_key, const char *label_value, int unschedulable)
{
    json_t *p = json_object();
    if (!p)
        return NULL;
    if (label_key)
        json_object_set_new(p, "metadata",
                            json_pack("{s:{s:o}}", "labels", label_key,
                                      label_value ? json_string(label_value) : json_null()));
    if (unschedulable >= 0)
        json_object_set_new(p, "spec", json_pack("{s:b}", "unschedulable", unschedulable ? 1 : 0));
    return p;
}

json_t *gs_kube_annotation_patch(const char *key, const char *value)
{
    return json_pack("{s:{s:{s:s}}}", "metadata", "annotations", key, value);
}

void gs_kube_devices_str(const struct gs_cluster *c, const struct gs_alloc *a, char *out,
                         unsigned size)
{
    out[0] = '\0';
    const struct gs_node *n = &c->nodes[a->node];
    if (n->layout_guessed)
        return; /* physical indexes unknown: name none (the device plugin picks) */
    struct gs_devices d = {.kind = a->kind == GS_REQ_MIG        ? GS_DEVICES_MIG
                                   : a->kind == GS_REQ_FRACTION ? GS_DEVICES_MILLI
                                   : a->milli == 0              ? GS_DEVICES_REPLICA
                                                                : GS_DEVICES_GPU};
    for (int k = 0; k < a->ndev && d.n < GS_DEVICES_MAX; k++) {
        struct gs_devices_item *it = &d.item[d.n++];
        const struct gs_gpu *g = &c->gpus[a->gpu[k]];
        it->gpu = a->gpu[k] - n->gpu0;
        it->start = -1;
        if (a->kind == GS_REQ_MIG) {
            const struct gs_mig_instance *in = &g->mig.inst[a->slot[k]];
            snprintf(it->profile, sizeof(it->profile), "%s",
                     gs_catalog_get(g->model)->profiles[in->profile].name);
            it->start = in->start;
        } else if (a->kind == GS_REQ_FRACTION) {
            it->milli = a->milli;
        }
    }
    (void)gs_devices_format(&d, out, size);
}
