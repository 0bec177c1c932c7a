/* draext.c - a pod's extended resources served from DeviceClasses (see draext.h): the class of
 * a name, the special claim's requests and request mappings as kube-scheduler's
 * createRequestsAndMappings makes them, and the objects written for it. formats/dracycle.c
 * allocates the claim beside the pod's own claims; sched/claims.c writes it. */
#include "draext.h"

#include "../base/error.h"
#include "../base/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct gs_draobj_class *gs_draext_class(const struct gs_draobj_class *classes, int n,
                                              const char *name)
{
    const struct gs_draobj_class *best = NULL;
    for (int i = 0; i < n; i++) {
        const struct gs_draobj_class *c = &classes[i];
        if (strcmp(c->ext, name) != 0)
            continue;
        int t = best ? strcmp(c->created, best->created) : 1;
        if (t > 0 || (t == 0 && strcmp(c->name, best->name) < 0))
            best = c;
    }
    if (best || strncmp(name, GS_DRAEXT_PREFIX, strlen(GS_DRAEXT_PREFIX)) != 0)
        return best;
    for (int i = 0; i < n; i++)
        if (strcmp(classes[i].name, name + strlen(GS_DRAEXT_PREFIX)) == 0)
            return &classes[i];
    return NULL;
}

void gs_draext_claim_name(const struct gs_kube_pod *p, char *out, size_t n)
{
    static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
    char base[64];
    snprintf(base, sizeof(base), "%.*s", 58, p->name);
    size_t bl = strlen(base);
    snprintf(base + bl, sizeof(base) - bl, "-extended-resources-");
    base[58] = '\0';
    uint64_t h = gs_hash_str(p->uid[0] ? p->uid : p->name);
    char tail[6];
    for (int k = 0; k < 5; k++, h /= 27)
        tail[k] = alnum[h % 27];
    tail[5] = '\0';
    snprintf(out, n, "%s%s", base, tail);
}

/* A request being made: its name and count. */
struct req {
    char name[GS_DRA_NAME_MAX];
    int64_t count;
    bool set;
};

static void req_name(const struct gs_kube_xreq *x, char *out, size_t n)
{
    snprintf(out, n, "container-%d-request-%d", x->index, x->ridx);
}

static int add_map(struct gs_draext *o, const struct gs_kube_xreq *x, const char *request)
{
    if (o->nmap >= GS_DRAEXT_MAX_MAP)
        return GS_EINVAL;
    struct gs_draext_map *m = &o->map[o->nmap++];
    snprintf(m->container, sizeof(m->container), "%s", x->container);
    snprintf(m->resource, sizeof(m->resource), "%s", x->name);
    snprintf(m->request, sizeof(m->request), "%s", request);
    return 0;
}

/* The requests and mappings of one resource (createRequestsAndMappings for one name). */
static int one_resource(const struct gs_kube_pod *p, const char *res, const char *cls,
                        struct req *reqs, int *nreq, struct gs_draext *o)
{
    struct req lng[256];
    memset(lng, 0, sizeof(lng));
    int rc = 0;
    for (int k = 0; k < p->nxreq && !rc; k++) { /* the long-lived containers (and sidecars) */
        const struct gs_kube_xreq *x = &p->xreq[k];
        if (x->init == 1 || strcmp(x->name, res) != 0)
            continue;
        req_name(x, lng[x->index].name, sizeof(lng[0].name));
        lng[x->index].count = x->count;
        lng[x->index].set = true;
        rc = add_map(o, x, lng[x->index].name);
    }
    struct req big = {0};
    int first_short = o->nmap, nshort = 0;
    for (int k = 0; k < p->nxreq && !rc; k++) { /* the init containers: reuse, then ask */
        const struct gs_kube_xreq *x = &p->xreq[k];
        if (x->init != 1 || strcmp(x->name, res) != 0)
            continue;
        int64_t sum = 0;
        for (int j = x->index; j < 256 && sum < x->count && !rc; j++)
            if (lng[j].set) {
                sum += lng[j].count;
                rc = add_map(o, x, lng[j].name);
            }
        if (rc || sum >= x->count)
            continue;
        struct req r = {.count = x->count - sum, .set = true};
        req_name(x, r.name, sizeof(r.name));
        rc = add_map(o, x, r.name);
        nshort++;
        if (!big.set || big.count < r.count)
            big = r;
    }
    if (rc)
        return rc;
    /* the init containers' own requests are one: the largest */
    for (int m = first_short; nshort > 1 && m < o->nmap; m++)
        if (strncmp(o->map[m].request, "container-", 10) == 0 &&
            strcmp(o->map[m].request, big.name) != 0) {
            bool own = true; /* not a long-lived container's request it reuses */
            for (int j = 0; j < 256 && own; j++)
                own = !lng[j].set || strcmp(lng[j].name, o->map[m].request) != 0;
            if (own)
                snprintf(o->map[m].request, sizeof(o->map[m].request), "%s", big.name);
        }
    struct req *add[257];
    int nadd = 0;
    if (big.set)
        add[nadd++] = &big;
    for (int j = 0; j < 256; j++)
        if (lng[j].set)
            add[nadd++] = &lng[j];
    for (int a = 0; a < nadd; a++) {
        if (*nreq >= GS_DRA_MAX_REQ || add[a]->count > GS_DRA_MAX_COUNT)
            return GS_EINVAL;
        reqs[(*nreq)++] = *add[a];
    }
    (void)cls;
    return 0;
}

static int cmp_req(const void *a, const void *b)
{
    return strcmp(((const struct req *)a)->name, ((const struct req *)b)->name);
}

static int cmp_name64(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int gs_draext_build(const struct gs_kube_pod *p, const struct gs_draobj_class *classes, int n,
                    struct gs_draext *o, struct gs_error *err)
{
    memset(o, 0, sizeof(*o));
    const char *cls[GS_MAX_POD_XREQ];
    for (int k = 0; k < p->nxreq; k++) {
        bool seen = false;
        for (int j = 0; j < o->nres && !seen; j++)
            seen = strcmp(o->res[j], p->xreq[k].name) == 0;
        if (!seen && gs_draext_class(classes, n, p->xreq[k].name))
            snprintf(o->res[o->nres++], sizeof(o->res[0]), "%s", p->xreq[k].name);
    }
    if (o->nres == 0)
        return 0;
    qsort(o->res, (size_t)o->nres, sizeof(o->res[0]), cmp_name64);
    struct req reqs[GS_DRA_MAX_REQ];
    int nreq = 0;
    char rcls[GS_DRA_MAX_REQ][GS_KNAME_MAX];
    for (int r = 0; r < o->nres; r++) {
        cls[r] = gs_draext_class(classes, n, o->res[r])->name;
        int before = nreq;
        if (one_resource(p, o->res[r], cls[r], reqs, &nreq, o))
            return gs_error_set(err, GS_EINVAL,
                                "pod %s/%s: its extended resources need more than %d requests of "
                                "at most %d devices each",
                                p->ns, p->name, GS_DRA_MAX_REQ, GS_DRA_MAX_COUNT);
        for (int k = before; k < nreq; k++)
            snprintf(rcls[k], sizeof(rcls[k]), "%s", cls[r]);
    }
    /* sorted by name, each with its class */
    struct {
        struct req r;
        char cls[GS_KNAME_MAX];
    } all[GS_DRA_MAX_REQ];
    for (int k = 0; k < nreq; k++) {
        all[k].r = reqs[k];
        snprintf(all[k].cls, sizeof(all[k].cls), "%s", rcls[k]);
    }
    qsort(all, (size_t)nreq, sizeof(all[0]), cmp_req);
    struct gs_draobj_claim *c = &o->claim;
    snprintf(c->ns, sizeof(c->ns), "%s", p->ns);
    gs_draext_claim_name(p, c->name, sizeof(c->name));
    snprintf(c->owner_uid, sizeof(c->owner_uid), "%s", p->uid);
    c->extended = true;
    if (gs_draobj_claim_alloc(c, nreq))
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    for (int k = 0; k < nreq; k++) {
        struct gs_draobj_req *q = &c->req[c->nreq++];
        snprintf(q->name, sizeof(q->name), "%s", all[k].r.name);
        q->nsub = 1;
        snprintf(q->sub[0].cls, sizeof(q->sub[0].cls), "%s", all[k].cls);
        q->sub[0].mode = GS_DRA_EXACT;
        q->sub[0].count = (int32_t)all[k].r.count;
    }
    return 0;
}

void gs_draext_release(struct gs_draext *x)
{
    gs_draobj_claim_release(&x->claim);
}

json_t *gs_draext_claim_json(const struct gs_draext *x, const char *pod_name, const char *pod_uid)
{
    json_t *reqs = json_array();
    for (int k = 0; reqs && k < x->claim.nreq; k++) {
        const struct gs_draobj_req *q = &x->claim.req[k];
        json_array_append_new(reqs,
                              json_pack("{s:s, s:{s:s, s:s, s:i}}", "name", q->name, "exactly",
                                        "deviceClassName", q->sub[0].cls, "allocationMode",
                                        "ExactCount", "count", (int)q->sub[0].count));
    }
    if (!reqs)
        return NULL;
    /* made with the finalizer its allocation needs (formats/draobj.h) */
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:[s], s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b}]}, "
                     "s:{s:{s:o}}}",
                     "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata",
                     "name", x->claim.name, "namespace", x->claim.ns, "finalizers",
                     GS_DRAOBJ_FINALIZER, "annotations", GS_DRAEXT_ANNOTATION, "true",
                     "ownerReferences", "apiVersion", "v1", "kind", "Pod", "name", pod_name, "uid",
                     pod_uid, "controller", 1, "spec", "devices", "requests", reqs);
}

json_t *gs_draext_pod_status(const struct gs_draext *x)
{
    json_t *maps = json_array();
    for (int k = 0; maps && k < x->nmap; k++)
        json_array_append_new(
            maps, json_pack("{s:s, s:s, s:s}", "containerName", x->map[k].container, "resourceName",
                            x->map[k].resource, "requestName", x->map[k].request));
    if (!maps)
        return NULL;
    return json_pack("{s:{s:{s:o, s:s}}}", "status", "extendedResourceClaimStatus",
                     "requestMappings", maps, "resourceClaimName", x->claim.name);
}
