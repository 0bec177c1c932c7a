/* dracycle.c - one cycle's allocation of DRA claims (dracycle.h): the world from the slices
 * (formats/draobj.c), the devices of allocated claims taken, pending pods' claims prepared
 * (CEL evaluated over every device) and allocated by core/dra.c; the weights that tell the
 * allocator which devices are in demand; and the DRA part of the cycle's hooks, which
 * sched/cyclein.c calls beside taints, volumes and constraints and sim/dra.c uses alone. */
#include "dracycle.h"

#include "../base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A device's kind for the demand: its driver and "profile" attribute ("" for a whole device). */
static const char *device_profile(const struct gs_dra_device *d)
{
    for (int k = 0; k < d->nattrs; k++) {
        const char *slash = strrchr(d->attrs[k].name, '/');
        if (!d->attrs[k].capacity && d->attrs[k].v.type == GS_DRA_STRING && slash &&
            strcmp(slash + 1, "profile") == 0)
            return d->attrs[k].v.s;
    }
    return "";
}

/* The demand the allocator keeps room for: how many devices of each kind claims hold now
 * (the mix the cluster serves), plus one so that a kind nobody holds yet still counts. */
#define WEIGHT_KINDS 64
static void set_weights(struct gs_dracycle *cy)
{
    const struct gs_dra_world *w = &cy->w.w;
    free(cy->weight);
    cy->weight = calloc((size_t)w->ndev + 1, sizeof(double));
    cy->st.weight = cy->weight;
    if (!cy->weight)
        return; /* unweighted: each device counts 1 */
    struct wkind {
        const char *driver, *profile;
        int n;
    } kind[WEIGHT_KINDS];
    int nk = 0;
    for (int j = 0; j < w->ndev; j++) {
        if (cy->st.owner[j] < 0)
            continue;
        const char *pj = device_profile(&w->dev[j]);
        int k = 0;
        while (k < nk &&
               (strcmp(kind[k].driver, w->dev[j].driver) != 0 || strcmp(kind[k].profile, pj) != 0))
            k++;
        if (k == nk && nk < WEIGHT_KINDS)
            kind[nk++] = (struct wkind){w->dev[j].driver, pj, 0};
        if (k < nk)
            kind[k].n++;
    }
    for (int i = 0; i < w->ndev; i++) {
        cy->weight[i] = 1;
        const char *pi = device_profile(&w->dev[i]);
        for (int k = 0; k < nk; k++)
            if (strcmp(kind[k].driver, w->dev[i].driver) == 0 && strcmp(kind[k].profile, pi) == 0)
                cy->weight[i] += kind[k].n;
    }
    cy->st.weight = cy->weight;
}

/* A pod with room for slots claims, in one allocation. NULL without memory. */
static struct gs_dracycle_pod *pod_new(int slots)
{
#define ALIGN16(x) (((x) + 15) & ~(size_t)15)
    size_t head = ALIGN16(sizeof(struct gs_dracycle_pod)), n = (size_t)slots;
    size_t res = ALIGN16(n * sizeof(struct gs_dra_result));
    size_t prep = ALIGN16(n * sizeof(struct gs_draobj_prep));
#undef ALIGN16
    struct gs_dracycle_pod *p = calloc(1, head + res + prep + n * (sizeof(int) + sizeof(bool)));
    if (!p)
        return NULL;
    char *at = (char *)p + head;
    p->res = (struct gs_dra_result *)at;
    p->prep = (struct gs_draobj_prep *)(at + res);
    p->claim = (int *)(at + res + prep);
    p->prepared = (bool *)(at + res + prep + n * sizeof(int));
    p->node = -1;
    p->x_slot = -1;
    return p;
}

static void pods_release(struct gs_dracycle *cy)
{
    for (int i = 0; cy->pods && i < cy->npods; i++) {
        struct gs_dracycle_pod *p = cy->pods[i];
        for (int k = 0; p && !p->borrowed && k < p->n; k++)
            gs_draobj_prep_release(&p->prep[k]);
        if (p && p->x) {
            gs_draext_release(p->x);
            free(p->x);
        }
        free(p);
    }
    free(cy->pods);
    cy->pods = NULL;
    cy->npods = 0;
}

int gs_dracycle_init(struct gs_dracycle *cy, const struct gs_draobj_class *classes, int nclasses,
                     const struct gs_draobj_slice *slices, int nslices,
                     struct gs_draobj_claim *claims, int nclaims, bool absent, int npods,
                     int32_t (*node_id)(void *ctx, const char *node), void *ctx)
{
    memset(cy, 0, sizeof(*cy));
    gs_draobj_selcache_init(&cy->sel);
    gs_strmap_init(&cy->byname);
    cy->classes = classes;
    cy->nclasses = nclasses;
    cy->claims = claims;
    cy->nclaims = nclaims;
    cy->absent = absent;
    const struct gs_draobj_slice **sp = malloc(sizeof(*sp) * ((size_t)nslices + 1));
    if (!sp)
        return GS_ENOMEM;
    for (int i = 0; i < nslices; i++)
        sp[i] = &slices[i];
    int rc = gs_draobj_world_build(sp, nslices, node_id, ctx, &cy->w);
    free(sp);
    cy->pods = calloc((size_t)npods + 1, sizeof(*cy->pods));
    cy->npods = npods;
    if (rc || !cy->pods || gs_dra_state_init(&cy->st, &cy->w.w)) {
        gs_dracycle_release(cy);
        return GS_ENOMEM;
    }
    for (int i = 0; i < nclaims; i++) {
        const struct gs_draobj_claim *cl = &claims[i];
        for (int r = 0; cl->allocated && r < cl->nresults; r++) {
            int d = gs_dra_state_find(&cy->st, cl->results[r].driver, cl->results[r].pool,
                                      cl->results[r].device);
            if (d >= 0)
                gs_dra_take(&cy->st, d, i);
        }
    }
    set_weights(cy);
    return 0;
}

void gs_dracycle_release(struct gs_dracycle *cy)
{
    pods_release(cy);
    gs_draobj_selcache_release(&cy->sel);
    gs_strmap_release(&cy->byname);
    gs_dra_state_release(&cy->st);
    free(cy->weight);
    gs_draobj_world_release(&cy->w);
    memset(cy, 0, sizeof(*cy));
}

int gs_dracycle_next(struct gs_dracycle *cy, int npods)
{
    pods_release(cy);
    cy->pods = calloc((size_t)npods + 1, sizeof(*cy->pods));
    if (!cy->pods)
        return GS_ENOMEM;
    cy->npods = npods;
    set_weights(cy);
    return 0;
}

static int find_claim(struct gs_dracycle *cy, const char *ns, const char *name)
{
    char key[GS_KNAME_MAX + 70];
    if (!cy->named) { /* the first of a name, as a search in order finds it */
        cy->named = true;
        for (int i = 0; i < cy->nclaims; i++) {
            int n = snprintf(key, sizeof(key), "%s/%s", cy->claims[i].ns, cy->claims[i].name);
            if (gs_strmap_get(&cy->byname, key, (uint32_t)n) < 0 &&
                gs_strmap_put(&cy->byname, key, (uint32_t)n, i)) {
                gs_strmap_release(&cy->byname); /* without memory: searched in order */
                gs_strmap_init(&cy->byname);
                cy->named = false;
                break;
            }
        }
    }
    if (cy->named) {
        int n = snprintf(key, sizeof(key), "%s/%s", ns, name);
        return gs_strmap_get(&cy->byname, key, (uint32_t)n);
    }
    for (int i = 0; i < cy->nclaims; i++)
        if (strcmp(cy->claims[i].name, name) == 0 && strcmp(cy->claims[i].ns, ns) == 0)
            return i;
    return -1;
}

int gs_dracycle_find(struct gs_dracycle *cy, const char *ns, const char *name)
{
    return find_claim(cy, ns, name);
}

/* Claim k's allocated devices given back (held false) or taken again. */
static void hold(struct gs_dracycle *cy, int k, bool held)
{
    const struct gs_draobj_claim *cl = &cy->claims[k];
    for (int r = 0; cl->allocated && r < cl->nresults; r++) {
        int d = gs_dra_state_find(&cy->st, cl->results[r].driver, cl->results[r].pool,
                                  cl->results[r].device);
        if (d < 0)
            continue;
        if (!held && cy->st.owner[d] == k)
            gs_dra_give(&cy->st, d);
        else if (held && cy->st.owner[d] < 0)
            gs_dra_take(&cy->st, d, k);
    }
}

void gs_dracycle_hold(struct gs_dracycle *cy, int k, bool held)
{
    /* a claim shared with other pods stays theirs */
    if (k >= 0 && k < cy->nclaims && cy->claims[k].nreserved <= 1)
        hold(cy, k, held);
}

/* One device as what it stands for: a MIG profile or a whole GPU. */
static void device_demand(struct gs_tenants *t, const struct gs_dra_device *d, int count,
                          struct gs_qvec *acc)
{
    struct gs_request r;
    memset(&r, 0, sizeof(r));
    const char *prof = NULL;
    for (int k = 0; k < d->nattrs && !prof; k++) {
        const char *slash = strrchr(d->attrs[k].name, '/');
        if (!d->attrs[k].capacity && d->attrs[k].v.type == GS_DRA_STRING && slash &&
            strcmp(slash + 1, "profile") == 0)
            prof = d->attrs[k].v.s;
    }
    if (prof && strlen(prof) < sizeof(r.mig)) {
        r.kind = GS_REQ_MIG;
        r.gpus = 1;
        memcpy(r.mig, prof, strlen(prof) + 1);
    } else {
        r.kind = GS_REQ_GPU;
        r.gpus = 1;
        r.milli = GS_MILLI;
    }
    struct gs_qvec d1;
    gs_tenants_demand(t, &r, &d1);
    for (int x = 0; x < GS_QR_COUNT; x++)
        acc->v[x] += d1.v[x] * count;
}

static void allocated_demand(const struct gs_dracycle *cy, const struct gs_draobj_claim *cl,
                             struct gs_tenants *t, struct gs_qvec *acc)
{
    for (int r = 0; r < cl->nresults; r++) {
        int d = gs_dra_state_find(&cy->st, cl->results[r].driver, cl->results[r].pool,
                                  cl->results[r].device);
        if (d >= 0)
            device_demand(t, &cy->w.w.dev[d], 1, acc);
    }
}

/* A pending claim: per request, the first alternative with matching devices. */
static void pending_demand(const struct gs_dracycle *cy, const struct gs_dra_claim *dc,
                           struct gs_tenants *t, struct gs_qvec *acc)
{
    for (int r = 0; r < dc->nreq; r++)
        for (int s = 0; s < dc->req[r].nsub; s++) {
            const struct gs_dra_sub *sb = &dc->req[r].sub[s];
            if (sb->ncand == 0)
                continue;
            const struct gs_dra_device *d = &cy->w.w.dev[sb->cand[0]];
            int count = sb->count;
            if (sb->mode == GS_DRA_ALL) {
                count = 0;
                for (int k = 0; k < sb->ncand; k++)
                    count += cy->w.w.dev[sb->cand[k]].node == d->node;
            }
            device_demand(t, d, count, acc);
            break;
        }
}

void gs_dracycle_set_alloc(struct gs_dracycle *cy,
                           int64_t (*alloc)(void *ctx, int32_t node, const char *res), void *ctx)
{
    cy->alloc = alloc;
    cy->alloc_ctx = ctx;
}

const struct gs_draobj_claim *gs_dracycle_pod_claim(const struct gs_dracycle *cy,
                                                    const struct gs_dracycle_pod *p, int k)
{
    return p->claim[k] >= 0 ? &cy->claims[p->claim[k]] : &p->x->claim;
}

/* Claim c (an index in the cycle's claims, or -1: the special claim) as slot k of pod p:
 * prepared, or, allocated, fixing the pod's node. Returns 0, 1 (why says why the pod waits) or
 * GS_ENOMEM. */
static int pod_slot(struct gs_dracycle *cy, struct gs_dracycle_pod *p, int k, int c,
                    struct gs_tenants *t, struct gs_qvec *claimed, char *why, size_t why_size)
{
    p->claim[k] = c;
    const struct gs_draobj_claim *cl = gs_dracycle_pod_claim(cy, p, k);
    if (cl->allocated) {
        allocated_demand(cy, cl, t, claimed);
        if (!cl->node[0])
            return 0;
        /* the node it was allocated for: found through a device of the node */
        int32_t node = -1;
        for (int r = 0; r < cl->nresults && node < 0; r++) {
            int d = gs_dra_state_find(&cy->st, cl->results[r].driver, cl->results[r].pool,
                                      cl->results[r].device);
            if (d >= 0)
                node = cy->w.w.dev[d].node;
        }
        if (node < 0) {
            snprintf(why, why_size,
                     "resourceclaim %s/%s is allocated on node %s, whose devices are not "
                     "published",
                     cl->ns, cl->name, cl->node);
            return 1;
        }
        if (p->node >= 0 && p->node != node) {
            snprintf(why, why_size,
                     "its claims are allocated on different nodes (resourceclaim %s/%s on %s)",
                     cl->ns, cl->name, cl->node);
            return 1;
        }
        p->node = node;
        return 0;
    }
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_draobj_prepare_cached(cl, cy->classes, cy->nclasses, &cy->w.w, &cy->sel,
                                      &p->prep[k], &err);
    if (rc == GS_ENOMEM)
        return rc;
    if (rc) {
        snprintf(why, why_size, "%s", err.msg);
        return 1;
    }
    p->prepared[k] = true;
    pending_demand(cy, &p->prep[k].c, t, claimed);
    return 0;
}

/* The pod's extended resources a DeviceClass backs, as the last slot: the claim an earlier
 * try made (the pod its controller owner), else the one to make. */
static int pod_extended(struct gs_dracycle *cy, struct gs_dracycle_pod *p,
                        const struct gs_kube_pod *pod, struct gs_tenants *t,
                        struct gs_qvec *claimed, char *why, size_t why_size)
{
    struct gs_error err;
    gs_error_init(&err);
    if (!(p->x = calloc(1, sizeof(*p->x))))
        return GS_ENOMEM;
    int rc = gs_draext_build(pod, cy->classes, cy->nclasses, p->x, &err);
    if (rc == GS_ENOMEM)
        return rc;
    if (rc) {
        snprintf(why, why_size, "%s", err.msg);
        return 1;
    }
    if (p->x->nres == 0)
        return 0;
    int c = -1;
    for (int k = 0; k < cy->nclaims && c < 0; k++)
        if (cy->claims[k].extended && strcmp(cy->claims[k].owner_uid, pod->uid) == 0 &&
            strcmp(cy->claims[k].ns, pod->ns) == 0)
            c = k;
    p->x_slot = p->n++;
    return pod_slot(cy, p, p->x_slot, c, t, claimed, why, why_size);
}

int gs_dracycle_pod_prepare(struct gs_dracycle *cy, int i, const struct gs_kube_pod *pod,
                            struct gs_tenants *t, struct gs_qvec *claimed, char *why,
                            size_t why_size)
{
    gs_qvec_zero(claimed);
    int n = pod->ndra;
    if (n <= 0 && (pod->nxreq <= 0 || cy->absent))
        return 0; /* extended resources without DRA's objects: the device plugins' */
    if (cy->absent) {
        snprintf(why, why_size,
                 "resource.k8s.io/v1 (DeviceClasses, ResourceSlices, ResourceClaims) is not "
                 "served or not listed yet");
        return 1;
    }
    struct gs_dracycle_pod *p = pod_new(n + (pod->nxreq > 0));
    if (!p)
        return GS_ENOMEM;
    cy->pods[i] = p;
    for (int k = 0; k < n; k++) {
        if (!pod->dra[k][0]) {
            snprintf(why, why_size,
                     "spec.resourceClaims[%d]: the ResourceClaim from its template does not "
                     "exist yet",
                     k);
            return 1;
        }
        int c = find_claim(cy, pod->ns, pod->dra[k]);
        if (c < 0) {
            snprintf(why, why_size, "resourceclaim %s/%s not found", pod->ns, pod->dra[k]);
            return 1;
        }
        p->n++;
        int rc = pod_slot(cy, p, k, c, t, claimed, why, why_size);
        if (rc)
            return rc;
    }
    return pod->nxreq > 0 ? pod_extended(cy, p, pod, t, claimed, why, why_size) : 0;
}

uint32_t gs_dracycle_pod_dra_res(const struct gs_dracycle *cy, int i, const struct gs_kube_pod *p)
{
    const struct gs_dracycle_pod *dp = i >= 0 && i < cy->npods ? cy->pods[i] : NULL;
    uint32_t m = 0;
    for (int r = 0; dp && dp->x && r < p->nres && r < 32; r++)
        for (int k = 0; k < dp->x->nres; k++)
            if (strcmp(p->res[r].name, dp->x->res[k]) == 0)
                m |= 1u << r;
    return m;
}

int gs_dracycle_pod_borrow(struct gs_dracycle *cy, int i, int claim,
                           const struct gs_draobj_prep *prep)
{
    struct gs_dracycle_pod *p = pod_new(1);
    if (!p)
        return GS_ENOMEM;
    cy->pods[i] = p;
    p->n = 1;
    p->claim[0] = claim;
    p->prep[0] = *prep;
    p->prepared[0] = true;
    p->borrowed = true;
    return 0;
}

/* Whether node serves pod p's extended resources by DRA (1: none of them allocatable), by
 * device plugins (0: each allocatable), or neither (-1: some of both). */
static int served_by_dra(const struct gs_dracycle *cy, const struct gs_dracycle_pod *p,
                         int32_t node)
{
    if (!cy->alloc)
        return 1;
    int zero = 0;
    for (int k = 0; k < p->x->nres; k++)
        zero += cy->alloc(cy->alloc_ctx, node, p->x->res[k]) <= 0;
    return zero == p->x->nres ? 1 : zero == 0 ? 0 : -1;
}

/* Allocate every prepared claim of p on node; keep (true) or give back. */
static bool allocate(struct gs_dracycle *cy, struct gs_dracycle_pod *p, int i, int32_t node,
                     bool keep)
{
    if (p->node >= 0 && p->node != node)
        return false;
    int dra = p->x_slot >= 0 ? served_by_dra(cy, p, node) : 1;
    if (dra < 0 || (dra == 0 && p->x_slot >= 0 && p->claim[p->x_slot] >= 0 &&
                    cy->claims[p->claim[p->x_slot]].allocated))
        return false; /* (its claim, allocated, holds DRA's devices already) */
    if (keep)
        p->x_used = p->x_slot >= 0 && dra == 1;
    int k = 0;
    for (; k < p->n; k++) {
        if (!p->prepared[k] || (k == p->x_slot && dra == 0))
            continue;
        if (gs_dra_allocate(&cy->st, &p->prep[k].c, node, cy->nclaims + i, &p->res[k]))
            break;
    }
    bool ok = k == p->n;
    if (!ok || !keep)
        for (int j = 0; j < k; j++)
            for (int r = 0; p->prepared[j] && !(j == p->x_slot && dra == 0) && r < p->res[j].n; r++)
                gs_dra_give(&cy->st, p->res[j].dev[r]);
    return ok;
}

bool gs_dracycle_pod_fits(struct gs_dracycle *cy, int i, int32_t node)
{
    struct gs_dracycle_pod *p = i >= 0 && i < cy->npods ? cy->pods[i] : NULL;
    if (!p)
        return true;
    if (p->placed)
        return p->placed_node == node;
    return allocate(cy, p, i, node, false);
}

int gs_dracycle_pod_copies(struct gs_dracycle *cy, int i, int32_t node, int max)
{
    struct gs_dracycle_pod *p = i >= 0 && i < cy->npods ? cy->pods[i] : NULL;
    if (!p || max <= 0)
        return max > 0 ? max : 0;
    if (p->placed || p->node >= 0 || p->x_slot >= 0)
        return gs_dracycle_pod_fits(cy, i, node) ? max : 0; /* (no second copy to count) */
    size_t n = (size_t)p->n;
    struct gs_dra_result *held = calloc(n * (size_t)max + 1, sizeof(*held));
    if (!held)
        return gs_dracycle_pod_fits(cy, i, node) ? 1 : 0;
    int got = 0;
    for (bool ok = true; ok && got < max;) {
        size_t k = 0;
        for (; k < n; k++)
            if (p->prepared[k] && gs_dra_allocate(&cy->st, &p->prep[k].c, node, cy->nclaims + i,
                                                  &held[(size_t)got * n + k]))
                break;
        ok = k == n;
        got += ok;
        for (size_t j = 0; !ok && j < k; j++)
            for (int r = 0; p->prepared[j] && r < held[(size_t)got * n + j].n; r++)
                gs_dra_give(&cy->st, held[(size_t)got * n + j].dev[r]);
    }
    for (int c = 0; c < got; c++)
        for (size_t j = 0; j < n; j++)
            for (int r = 0; p->prepared[j] && r < held[(size_t)c * n + j].n; r++)
                gs_dra_give(&cy->st, held[(size_t)c * n + j].dev[r]);
    free(held);
    return got;
}

int gs_dracycle_pod_place(struct gs_dracycle *cy, int i, int32_t node)
{
    struct gs_dracycle_pod *p = i >= 0 && i < cy->npods ? cy->pods[i] : NULL;
    if (!p || p->placed)
        return 0;
    if (!allocate(cy, p, i, node, true))
        return GS_ENOFIT;
    p->placed = true;
    p->placed_node = node;
    return 0;
}

void gs_dracycle_pod_why(const struct gs_dracycle *cy, int i, char *out, size_t n)
{
    out[0] = '\0';
    const struct gs_dracycle_pod *p = i >= 0 && i < cy->npods ? cy->pods[i] : NULL;
    if (!p)
        return;
    size_t o = 0;
    for (int k = 0; k < p->n && o < n; k++) {
        const struct gs_draobj_claim *cl = gs_dracycle_pod_claim(cy, p, k);
        if (!p->prepared[k]) {
            o += (size_t)snprintf(out + o, n - o, "%sresourceclaim %s/%s: allocated on node %s",
                                  o ? "; " : "", cl->ns, cl->name, cl->node[0] ? cl->node : "-");
            continue;
        }
        for (int r = 0; r < p->prep[k].c.nreq && o < n; r++) {
            const struct gs_dra_req *rq = &p->prep[k].c.req[r];
            for (int s = 0; s < rq->nsub && o < n; s++) {
                const struct gs_dra_sub *sb = &rq->sub[s];
                int nfree = 0;
                for (int c = 0; c < sb->ncand; c++)
                    nfree += gs_dra_fits(&cy->st, sb->cand[c]);
                char want[32];
                if (sb->mode == GS_DRA_ALL)
                    snprintf(want, sizeof(want), "all");
                else
                    snprintf(want, sizeof(want), "%d", (int)sb->count);
                o += (size_t)snprintf(out + o, n - o,
                                      "%sresourceclaim %s/%s request %s: wants %s of %d matching "
                                      "device(s), %d free",
                                      o ? "; " : "", cl->ns, cl->name, sb->name, want, sb->ncand,
                                      nfree);
                if (sb->ntainted && o < n)
                    o += (size_t)snprintf(out + o, n - o,
                                          " (%d more with a taint it does not tolerate)",
                                          (int)sb->ntainted);
            }
        }
    }
}

void gs_dracycle_bound_demand(struct gs_dracycle *cy, const char *ns,
                              const char (*names)[GS_KNAME_MAX], int n, struct gs_tenants *t,
                              struct gs_qvec *out)
{
    gs_qvec_zero(out);
    for (int k = 0; k < n; k++) {
        int c = names[k][0] ? find_claim(cy, ns, names[k]) : -1;
        if (c >= 0 && cy->claims[c].allocated)
            allocated_demand(cy, &cy->claims[c], t, out);
    }
}

/* ---------- the simulators' objects ---------- */

static const char *const default_class_json[2] = {
    "{\"metadata\": {\"name\": \"gpu.gpusched.io\"}, \"spec\": {\"selectors\": [{\"cel\": "
    "{\"expression\": \"device.driver == 'gpu.gpusched.io' && "
    "device.attributes['gpu.gpusched.io'].type == 'gpu'\"}}]}}",
    "{\"metadata\": {\"name\": \"mig.gpusched.io\"}, \"spec\": {\"selectors\": [{\"cel\": "
    "{\"expression\": \"device.driver == 'gpu.gpusched.io' && "
    "device.attributes['gpu.gpusched.io'].type == 'mig'\"}}]}}",
};

int gs_dracycle_default_classes(struct gs_draobj_class out[2], struct gs_error *err)
{
    for (int c = 0; c < 2; c++) {
        json_t *o = json_loads(default_class_json[c], 0, NULL);
        int rc = o ? gs_draobj_class_read(o, &out[c], err)
                   : gs_error_set(err, GS_ENOMEM, "out of memory");
        json_decref(o);
        if (rc) {
            for (int k = 0; k < c; k++)
                gs_draobj_class_release(&out[k]);
            return rc;
        }
    }
    return 0;
}

int gs_dracycle_node_slices(const struct gs_draslice_node *dn, struct gs_draobj_slice **slices,
                            int *n, int *cap, struct gs_error *err)
{
    json_t *arr = gs_draslice_build(dn, err);
    if (!arr)
        return GS_EINVAL;
    int rc = 0;
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        if (*n == *cap) {
            int nc = *cap ? 2 * *cap : 16;
            struct gs_draobj_slice *v = realloc(*slices, sizeof(*v) * (size_t)nc);
            if (!v) {
                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
                break;
            }
            *slices = v;
            *cap = nc;
        }
        char name[160];
        snprintf(name, sizeof(name), "%s-slice-%zu", dn->node, i);
        json_object_set_new(json_object_get(o, "metadata"), "name", json_string(name));
        if ((rc = gs_draobj_slice_read(o, &(*slices)[*n], err)))
            break;
        (*n)++;
    }
    json_decref(arr);
    return rc;
}

/* ---------- the cycle's hooks ---------- */

void gs_dracycle_give_run(struct gs_dracycle *cy, const int *claims, bool gone)
{
    for (int k = 0; k < GS_MAX_POD_DRA; k++)
        gs_dracycle_hold(cy, claims[k], !gone);
}

bool gs_dracycle_claims_apart(bool preempting, const struct gs_request *req, int32_t gang)
{
    return preempting && req->kind == GS_REQ_NONE && gang < 0;
}

static int hook_pod(const struct gs_dracycle_hooks *h, int pod)
{
    return h->pod ? h->pod[pod] : pod;
}

static bool hook_node_fits(void *ctx, int node)
{
    struct gs_dracycle_hooks *h = ctx;
    return gs_dracycle_pod_fits(h->cy, hook_pod(h, h->cur), node);
}

static int hook_prepare(void *ctx, int pod, struct gs_kplace *k)
{
    struct gs_dracycle_hooks *h = ctx;
    h->cur = pod;
    *k = (struct gs_kplace){.fit = hook_node_fits, .fit_ctx = h};
    return 0;
}

static bool hook_allows(void *ctx, int pod, int node)
{
    struct gs_dracycle_hooks *h = ctx;
    return gs_dracycle_pod_fits(h->cy, hook_pod(h, pod), node);
}

static void hook_placed(void *ctx, int pod, int node)
{
    struct gs_dracycle_hooks *h = ctx;
    gs_dracycle_pod_place(h->cy, hook_pod(h, pod), node);
}

void gs_dracycle_hooks_init(struct gs_dracycle_hooks *h, struct gs_dracycle *cy, const int *pod,
                            struct gs_cyc_hooks *out)
{
    *h = (struct gs_dracycle_hooks){.cy = cy, .pod = pod, .cur = -1};
    *out = (struct gs_cyc_hooks){
        .prepare = hook_prepare, .allows = hook_allows, .placed = hook_placed, .ctx = h};
}
