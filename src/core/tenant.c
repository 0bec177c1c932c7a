/* tenant.c - queues, quotas, borrowing and fair shares (see tenant.h). */
#include "tenant.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "quantity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs_qvec_zero(struct gs_qvec *v)
{
    memset(v, 0, sizeof(*v));
}

void gs_qvec_unlimited(struct gs_qvec *v)
{
    for (int i = 0; i < GS_QR_COUNT; i++)
        v->v[i] = GS_QR_UNLIMITED;
}

void gs_tenants_init(struct gs_tenants *t)
{
    memset(t, 0, sizeof(*t));
}

void gs_tenants_release(struct gs_tenants *t)
{
    free(t->q);
    free(t->ns);
    memset(t, 0, sizeof(*t));
}

int gs_tenants_find(const struct gs_tenants *t, const char *name)
{
    for (int i = 0; i < t->nq; i++)
        if (strcmp(t->q[i].name, name) == 0)
            return i;
    return GS_ENOTFOUND;
}

int gs_tenants_add_queue(struct gs_tenants *t, const char *name, const char *parent, int32_t weight,
                         int32_t priority, struct gs_error *err)
{
    if (!name || !name[0] || strlen(name) >= GS_NAME_MAX)
        return gs_error_set(err, GS_EINVAL, "queue name: expected 1..%d characters",
                            GS_NAME_MAX - 1);
    if (gs_tenants_find(t, name) >= 0)
        return gs_error_set(err, GS_EINVAL, "queue '%s' is defined twice", name);
    int p = GS_QUEUE_NONE;
    if (parent && parent[0]) {
        p = gs_tenants_find(t, parent);
        if (p < 0)
            return gs_error_set(err, GS_EINVAL, "queue '%s': parent '%s' is not a known queue",
                                name, parent);
    }
    if (weight < 1)
        return gs_error_set(err, GS_EINVAL, "queue '%s': overQuotaWeight %d: expected >= 1", name,
                            (int)weight);
    if (t->nq == t->capq) {
        void *v = gs_grow(t->q, &t->capq, sizeof(*t->q), 16);
        if (!v)
            return gs_error_set(err, GS_ENOMEM, "out of memory");
        t->q = v;
    }
    struct gs_queue *q = &t->q[t->nq];
    memset(q, 0, sizeof(*q));
    snprintf(q->name, sizeof(q->name), "%s", name);
    q->parent = p;
    q->weight = weight;
    q->priority = priority;
    gs_qvec_unlimited(&q->limit);
    return t->nq++;
}

int gs_tenants_add_nsquota(struct gs_tenants *t, const char *ns, const char *name)
{
    if (t->nns == t->capns) {
        void *v = gs_grow(t->ns, &t->capns, sizeof(*t->ns), 8);
        if (!v)
            return GS_ENOMEM;
        t->ns = v;
    }
    struct gs_nsquota *n = &t->ns[t->nns];
    memset(n, 0, sizeof(*n));
    snprintf(n->ns, sizeof(n->ns), "%s", ns);
    snprintf(n->name, sizeof(n->name), "%s", name);
    gs_qvec_unlimited(&n->hard);
    return t->nns++;
}

static const char *const fixed_names[GS_QR_MIG0] = {"gpusched.io/gpu-units", "nvidia.com/gpu",
                                                    "cpu", "memory"};

const char *gs_tenants_dim_name(const struct gs_tenants *t, int dim)
{
    static const char *const mig_names[GS_QR_MIG_MAX] = {
        "nvidia.com/mig-#0", "nvidia.com/mig-#1", "nvidia.com/mig-#2", "nvidia.com/mig-#3",
        "nvidia.com/mig-#4", "nvidia.com/mig-#5", "nvidia.com/mig-#6", "nvidia.com/mig-#7"};
    if (dim >= 0 && dim < GS_QR_MIG0)
        return fixed_names[dim];
    if (dim >= GS_QR_MIG0 && dim < GS_QR_COUNT)
        return dim - GS_QR_MIG0 < t->nmig ? t->mig[dim - GS_QR_MIG0] : mig_names[dim - GS_QR_MIG0];
    return "?";
}

int gs_tenants_dim(struct gs_tenants *t, const char *resource)
{
    if (strncmp(resource, "requests.", 9) == 0)
        resource += 9;
    else if (strncmp(resource, "limits.", 7) == 0)
        resource += 7;
    for (int i = 0; i < GS_QR_MIG0; i++)
        if (strcmp(resource, fixed_names[i]) == 0)
            return i;
    if (strncmp(resource, "nvidia.com/mig-", 15) != 0)
        return GS_ENOTFOUND;
    const char *prof = resource + 15;
    if (!prof[0] || strlen(prof) >= GS_MIG_NAME_MAX)
        return GS_ENOTFOUND;
    for (int i = 0; i < t->nmig; i++)
        if (strcmp(t->mig[i], resource) == 0)
            return GS_QR_MIG0 + i;
    if (t->nmig == GS_QR_MIG_MAX)
        return GS_ENOSPC;
    snprintf(t->mig[t->nmig], sizeof(t->mig[0]), "%s", resource);
    return GS_QR_MIG0 + t->nmig++;
}

int gs_tenants_set(struct gs_tenants *t, struct gs_qvec *v, const char *resource,
                   const char *quantity, struct gs_error *err)
{
    int dim = gs_tenants_dim(t, resource);
    if (dim == GS_ENOSPC)
        return gs_error_set(err, GS_ENOSPC, "%s: more than %d MIG resources named in quotas",
                            resource, GS_QR_MIG_MAX);
    if (dim < 0)
        return gs_error_set(err, GS_ENOTFOUND, "%s: not a resource gpusched accounts", resource);
    struct gs_quantity q;
    struct gs_error qe;
    gs_error_init(&qe);
    if (gs_quantity_parse(quantity, strlen(quantity), &q, &qe))
        return gs_error_set(err, GS_EINVAL, "%s: %s", resource, qe.msg);
    if (q.nanos < 0)
        return gs_error_set(err, GS_EINVAL, "%s: '%s': expected a quantity >= 0", resource,
                            quantity);
    int64_t x;
    switch (dim) {
    case GS_QR_UNITS:
    case GS_QR_CPU:
        x = gs_quantity_milli(&q);
        break;
    case GS_QR_MEM:
        x = gs_quantity_value(&q);
        x = x / (1024 * 1024) + (x % (1024 * 1024) != 0);
        break;
    default:
        if (!gs_quantity_is_integer(&q))
            return gs_error_set(err, GS_EINVAL, "%s: '%s': expected a whole number", resource,
                                quantity);
        x = gs_quantity_value(&q);
    }
    v->v[dim] = x;
    return 0;
}

void gs_tenants_fmt(int dim, int64_t v, char *out, unsigned size)
{
    if (v == GS_QR_UNLIMITED)
        snprintf(out, size, "unlimited");
    else if (dim == GS_QR_UNITS || dim == GS_QR_CPU)
        snprintf(out, size, v % 1000 ? "%.3g" : "%.0f", (double)v / 1000);
    else if (dim == GS_QR_MEM)
        snprintf(out, size, v % 1024 ? "%lldMi" : "%lldGi", (long long)(v % 1024 ? v : v / 1024));
    else
        snprintf(out, size, "%lld", (long long)v);
}

void gs_tenants_demand(struct gs_tenants *t, const struct gs_request *r, struct gs_qvec *out)
{
    gs_qvec_zero(out);
    out->v[GS_QR_CPU] = r->cpu_milli;
    out->v[GS_QR_MEM] = r->mem_mib;
    out->v[GS_QR_UNITS] = (int64_t)llround(gs_request_units(r, -1) * 1000);
    if (r->kind == GS_REQ_GPU)
        out->v[GS_QR_GPU] = r->gpus;
    if (r->kind == GS_REQ_MIG) {
        char name[GS_MIG_NAME_MAX + 16];
        snprintf(name, sizeof(name), "nvidia.com/mig-%s", r->mig);
        int dim = gs_tenants_dim(t, name);
        if (dim >= GS_QR_MIG0)
            out->v[dim] = 1;
    }
}

static void vec_add(struct gs_qvec *a, const struct gs_qvec *d, int sign)
{
    for (int i = 0; i < GS_QR_COUNT; i++)
        a->v[i] += sign * d->v[i];
}

void gs_tenants_charge(struct gs_tenants *t, int queue, const char *ns, const struct gs_qvec *d,
                       int sign)
{
    for (int q = queue; q >= 0 && q < t->nq; q = t->q[q].parent)
        vec_add(&t->q[q].used, d, sign);
    if (ns)
        for (int i = 0; i < t->nns; i++)
            if (strcmp(t->ns[i].ns, ns) == 0)
                vec_add(&t->ns[i].used, d, sign);
}

/* First dimension where used + d exceeds cap, or -1. */
static int over(const struct gs_qvec *used, const struct gs_qvec *d, const struct gs_qvec *cap)
{
    for (int i = 0; i < GS_QR_COUNT; i++)
        if (d->v[i] > 0 && cap->v[i] != GS_QR_UNLIMITED && used->v[i] + d->v[i] > cap->v[i])
            return i;
    return -1;
}

/* Deserved is "set" in a dimension when any of the queue's deserved values are: a queue with
 * no deserved quota at all is owed nothing. Unset dimensions of a queue with a quota are
 * unconstrained for that quota (GPU pods are not held back by an unstated CPU share). */
static bool has_deserved(const struct gs_queue *q)
{
    for (int i = 0; i < GS_QR_COUNT; i++)
        if (q->deserved.v[i] > 0)
            return true;
    return false;
}

static int over_deserved(const struct gs_tenants *t, const struct gs_queue *q,
                         const struct gs_qvec *d)
{
    (void)t;
    if (!has_deserved(q))
        return GS_QR_UNITS;
    for (int i = 0; i < GS_QR_COUNT; i++) {
        if (d->v[i] <= 0)
            continue;
        int64_t des = q->deserved.v[i];
        /* unset CPU, memory and GPU-equivalents do not constrain; an unset GPU resource is
         * covered by a GPU-equivalents share when one is set, else nothing of it is owed */
        if (des == 0 && (i == GS_QR_CPU || i == GS_QR_MEM || i == GS_QR_UNITS))
            continue;
        if (des == 0 && q->deserved.v[GS_QR_UNITS] > 0)
            continue;
        if (q->used.v[i] + d->v[i] > des)
            return i;
    }
    return -1;
}

enum gs_admit gs_tenants_admit(const struct gs_tenants *t, int queue, const char *ns,
                               const struct gs_qvec *d, char *why, unsigned why_size)
{
    char a[32], b[32], c[32];
    if (why && why_size)
        why[0] = '\0';
    if (ns)
        for (int i = 0; i < t->nns; i++) {
            const struct gs_nsquota *n = &t->ns[i];
            if (strcmp(n->ns, ns) != 0)
                continue;
            int dim = over(&n->used, d, &n->hard);
            if (dim >= 0) {
                if (why) {
                    gs_tenants_fmt(dim, n->used.v[dim], a, sizeof(a));
                    gs_tenants_fmt(dim, d->v[dim], b, sizeof(b));
                    gs_tenants_fmt(dim, n->hard.v[dim], c, sizeof(c));
                    snprintf(why, why_size,
                             "ResourceQuota %s/%s: %s used %s + requested %s > hard %s", n->ns,
                             n->name, gs_tenants_dim_name(t, dim), a, b, c);
                }
                return GS_ADMIT_DENY;
            }
        }
    enum gs_admit res = GS_ADMIT_OWED;
    for (int q = queue; q >= 0 && q < t->nq; q = t->q[q].parent) {
        const struct gs_queue *Q = &t->q[q];
        int dim = over(&Q->used, d, &Q->limit);
        if (dim >= 0) {
            if (why) {
                gs_tenants_fmt(dim, Q->used.v[dim], a, sizeof(a));
                gs_tenants_fmt(dim, d->v[dim], b, sizeof(b));
                gs_tenants_fmt(dim, Q->limit.v[dim], c, sizeof(c));
                snprintf(why, why_size, "queue %s: %s used %s + requested %s > limit %s", Q->name,
                         gs_tenants_dim_name(t, dim), a, b, c);
            }
            return GS_ADMIT_DENY;
        }
        if (res == GS_ADMIT_OWED) {
            dim = over_deserved(t, Q, d);
            if (dim >= 0) {
                res = GS_ADMIT_BORROW;
                if (why) {
                    gs_tenants_fmt(dim, Q->used.v[dim], a, sizeof(a));
                    gs_tenants_fmt(dim, d->v[dim], b, sizeof(b));
                    gs_tenants_fmt(dim, Q->deserved.v[dim], c, sizeof(c));
                    snprintf(why, why_size,
                             "queue %s: %s used %s + requested %s > deserved %s (borrowing)",
                             Q->name, gs_tenants_dim_name(t, dim), a, b, c);
                }
            }
        }
    }
    return res;
}

static bool is_ancestor(const struct gs_tenants *t, int anc, int q)
{
    for (; q >= 0 && q < t->nq; q = t->q[q].parent)
        if (q == anc)
            return true;
    return false;
}

bool gs_tenants_reclaimable(const struct gs_tenants *t, int victim_queue, int reclaimer,
                            const struct gs_qvec *d)
{
    if (victim_queue < 0 || victim_queue >= t->nq)
        return false;
    for (int q = victim_queue; q >= 0 && q < t->nq; q = t->q[q].parent) {
        if (is_ancestor(t, q, reclaimer))
            break; /* shared part of the tree: the move stays inside it */
        const struct gs_queue *Q = &t->q[q];
        for (int i = 0; i < GS_QR_COUNT; i++) {
            if (d->v[i] <= 0)
                continue;
            int64_t des = Q->deserved.v[i];
            if (des == 0 && i != GS_QR_UNITS)
                continue; /* nothing owed in this dimension */
            if (Q->used.v[i] - d->v[i] < des)
                return false;
        }
    }
    return true;
}

void gs_tenants_fair(struct gs_tenants *t)
{
    int n = t->nq;
    if (n == 0)
        return;
    int64_t *want = calloc((size_t)n * 2, sizeof(*want));
    if (!want)
        return;
    int64_t *dem = want + n;
    for (int q = 0; q < n; q++)
        dem[q] = t->q[q].demand.v[GS_QR_UNITS];
    for (int q = n - 1; q >= 0; q--) /* parents come before their children */
        if (t->q[q].parent >= 0)
            dem[t->q[q].parent] += dem[q];
    int64_t left = t->cap.v[GS_QR_UNITS];
    /* leaves and roots alike: shares are computed among root queues, then split among the
     * children of each queue the same way */
    for (int q = 0; q < n; q++) {
        const struct gs_queue *Q = &t->q[q];
        int64_t w = Q->used.v[GS_QR_UNITS] + dem[q];
        if (Q->limit.v[GS_QR_UNITS] != GS_QR_UNLIMITED && w > Q->limit.v[GS_QR_UNITS])
            w = Q->limit.v[GS_QR_UNITS];
        want[q] = w;
        t->q[q].fair_units = 0;
    }
    for (int level_parent = -2; level_parent < n; level_parent++) {
        int parent = level_parent == -2 ? GS_QUEUE_NONE : level_parent;
        if (level_parent == -1)
            continue;
        int64_t pool = parent == GS_QUEUE_NONE ? left : t->q[parent].fair_units;
        /* deserved first, capped by what the queue wants */
        for (int q = 0; q < n; q++) {
            if (t->q[q].parent != parent)
                continue;
            int64_t d = t->q[q].deserved.v[GS_QR_UNITS];
            int64_t f = d < want[q] ? d : want[q];
            if (f > pool)
                f = pool;
            t->q[q].fair_units = f;
            pool -= f;
        }
        /* then water-fill the rest by weight */
        for (int round = 0; round < 64 && pool > 0; round++) {
            int64_t wsum = 0;
            for (int q = 0; q < n; q++)
                if (t->q[q].parent == parent && t->q[q].fair_units < want[q])
                    wsum += t->q[q].weight;
            if (wsum == 0)
                break;
            int64_t given = 0, p0 = pool;
            for (int q = 0; q < n; q++) {
                struct gs_queue *Q = &t->q[q];
                if (Q->parent != parent || Q->fair_units >= want[q])
                    continue;
                int64_t g = p0 * Q->weight / wsum;
                if (g < 1)
                    g = 1;
                if (g > want[q] - Q->fair_units)
                    g = want[q] - Q->fair_units;
                if (g > pool - given)
                    g = pool - given;
                Q->fair_units += g;
                given += g;
            }
            pool -= given;
            if (given == 0)
                break;
        }
    }
    free(want);
}

double gs_tenants_drf(const struct gs_tenants *t, int queue)
{
    if (queue < 0 || queue >= t->nq)
        return 0;
    const struct gs_queue *Q = &t->q[queue];
    double s = 0;
    const int dims[3] = {GS_QR_UNITS, GS_QR_CPU, GS_QR_MEM};
    for (int k = 0; k < 3; k++) {
        int i = dims[k];
        if (t->cap.v[i] > 0) {
            double x = (double)Q->used.v[i] / (double)t->cap.v[i];
            if (x > s)
                s = x;
        }
    }
    return s / Q->weight;
}
