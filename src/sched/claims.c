/* claims.c - DRA in the scheduler (see claims.h): a feed of DeviceClasses, ResourceSlices,
 * DeviceTaintRules (immutable, counted lists) and ResourceClaims (followed event by event; a
 * view copies them, sharing their counted lists), a kube/cache.h cache per kind, or one list
 * each for explain; views with the allocations the scheduler wrote but the watch does not show
 * yet; and one cycle's allocation of pending pods' claims on a view
 * (formats/dracycle.c), with the stale reservations released and the claims' status writes.
 * sched/cyclein.c calls it from its hooks; sched/cycleout.c writes what it returns through
 * sched/binder.c before each Binding. */
#include "claims.h"

#include "../base/buf.h"
#include "../base/clock.h"
#include "../base/error.h"
#include "../base/hash.h"
#include "../base/log.h"
#include "../formats/draext.h"
#include "../kube/cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KCLASS = 0, KSLICE, KCLAIM, KRULE, NK };

#define ASSUME_S   60
#define ASSUME_MAX 1024

GS_KCACHE_DECODER(rd_class, gs_draobj_class_read)
GS_KCACHE_DECODER(rd_slice, gs_draobj_slice_read)
GS_KCACHE_DECODER(rd_claim, gs_draobj_claim_read)
GS_KCACHE_DECODER(rd_rule, gs_drataint_rule_read)
GS_KCACHE_RELEASER(rel_class, gs_draobj_class_release)
GS_KCACHE_RELEASER(rel_slice, gs_draobj_slice_release)
GS_KCACHE_RELEASER(rel_claim, gs_draobj_claim_release)
GS_KCACHE_RELEASER(rel_rule, gs_drataint_rule_release)

static void claim_key(const void *rec, char *out, size_t n)
{
    const struct gs_draobj_claim *c = rec;
    snprintf(out, n, "%s/%s", c->ns, c->name);
}

static void bad_object(void *user, const struct gs_error *err)
{
    GS_WARN("claims", "ignored: %s", err->msg);
}

/* Forbidden or failing: as good as absent (pods with claims then wait, saying so). */
static int list_failed(void *user, int rc, const struct gs_error *err)
{
    const struct gs_kcache_kind *k = user;
    GS_WARN("claims", "listing %s: %s", k->what, err->msg);
    return 0;
}

/* The four kinds (kube/cache.h): whole lists that views hold (GS_KCACHE_LISTS), but claims,
 * which change with every allocation, followed event by event (GS_KCACHE_EVENTS). */
#define KIND(p, w, type, rd, rel)                                                                  \
    {                                                                                              \
        .path = p, .what = w, .size = sizeof(type), .mode = GS_KCACHE_LISTS, .lane2 = true,        \
        .absent_retry_s = 5, .decode = rd, .release = rel, .bad = bad_object,                      \
        .failed = list_failed                                                                      \
    }
static const struct gs_kcache_kind kinds[NK] = {
    KIND("/apis/resource.k8s.io/v1/deviceclasses", "DeviceClasses", struct gs_draobj_class,
         rd_class, rel_class),
    KIND("/apis/resource.k8s.io/v1/resourceslices", "ResourceSlices", struct gs_draobj_slice,
         rd_slice, rel_slice),
    /* claims change with every allocation: followed event by event, views copy them */
    {.path = "/apis/resource.k8s.io/v1/resourceclaims",
     .what = "ResourceClaims",
     .size = sizeof(struct gs_draobj_claim),
     .mode = GS_KCACHE_EVENTS,
     .lane2 = true,
     .absent_retry_s = 5,
     .decode = rd_claim,
     .release = rel_claim,
     .key = claim_key,
     .bad = bad_object,
     .failed = list_failed},
    KIND("/apis/resource.k8s.io/v1/devicetaintrules", "DeviceTaintRules", struct gs_drataint_rule,
         rd_rule, rel_rule),
};

struct assumed {
    struct gs_draobj_claim c; /* status fields used only (and rv, released); its results and
                               * reserved lists are the entry's own, no requests */
    double at;
    bool released; /* held while the list shows the resourceVersion it was written against */
};

/* A reservedFor entry naming a pod the scheduler does not know, since when. */
struct unknown {
    char uid[64];
    double at;
};

struct gs_claims {
    struct gs_kcache_kind kind[NK]; /* kinds[], with the feed's resync_s */
    struct gs_kcache *kc[NK];
    pthread_mutex_t mu;
    /* under mu: */
    struct assumed *as;
    int nas, capas;
    struct unknown *unk;
    int nunk;
};

/* The status lists of a claim held apart (an assumed entry's, a view's own). */
static void status_free(struct gs_draobj_claim *c)
{
    free(c->results);
    free(c->reserved);
    c->results = NULL;
    c->reserved = NULL;
}

struct gs_claims *gs_claims_new(struct gs_kube_client *kc, bool watch, double resync_s,
                                struct gs_error *err)
{
    struct gs_claims *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    pthread_mutex_init(&c->mu, NULL);
    memcpy(c->kind, kinds, sizeof(kinds));
    if (gs_kcache_open(kc, c->kind, NK, watch, resync_s, c->kc, err) == 0)
        return c;
    gs_claims_free(c);
    return NULL;
}

void gs_claims_free(struct gs_claims *c)
{
    if (!c)
        return;
    for (int a = 0; a < c->nas; a++)
        status_free(&c->as[a].c);
    free(c->as);
    free(c->unk);
    gs_kcache_close(c->kc, NK);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

uint64_t gs_claims_gen(struct gs_claims *c)
{
    return gs_kcache_gen_sum(c->kc, NK);
}

bool gs_claims_synced(struct gs_claims *c)
{
    for (int k = 0; k < NK; k++)
        if (!gs_kcache_synced(c->kc[k]))
            return false;
    return true;
}

struct rv_wait {
    char key[GS_KCACHE_KEY_MAX];
    unsigned long long rv;
};

/* Whether a resourceVersion reads as a number (as the API server's are; opaque otherwise). */
static bool rv_number(const char *s, unsigned long long *out)
{
    char *end = NULL;
    if (!s || s[0] < '0' || s[0] > '9')
        return false;
    *out = strtoull(s, &end, 10);
    return end && *end == '\0';
}

static bool rv_reached(struct gs_kcache *kc, void *arg)
{
    const struct rv_wait *w = arg;
    const struct gs_draobj_claim *cl = gs_kcache_find(kc, w->key);
    unsigned long long have;
    return !cl || (rv_number(cl->rv, &have) && have >= w->rv);
}

bool gs_claims_wait_rv(struct gs_claims *c, const char *ns, const char *name, const char *rv,
                       double timeout_s)
{
    struct rv_wait w;
    if (!c || !rv_number(rv, &w.rv))
        return false;
    snprintf(w.key, sizeof(w.key), "%s/%s", ns, name);
    return gs_kcache_wait_until(c->kc[KCLAIM], w.key, rv_reached, &w, timeout_s);
}

/* A claim's status as from's, with lists of its own (to's are not freed). Returns 0 or
 * GS_ENOMEM (to unchanged). */
static int status_copy(struct gs_draobj_claim *to, const struct gs_draobj_claim *from)
{
    int nres = from->nresults,
        nrsv = from->nreserved < GS_DRAOBJ_MAX_RESERVED ? from->nreserved : GS_DRAOBJ_MAX_RESERVED;
    struct gs_draobj_result *res = nres > 0 ? malloc(sizeof(*res) * (size_t)nres) : NULL;
    struct gs_draobj_reserved *rsv = nrsv > 0 ? malloc(sizeof(*rsv) * (size_t)nrsv) : NULL;
    if ((nres > 0 && !res) || (nrsv > 0 && !rsv)) {
        free(res);
        free(rsv);
        return GS_ENOMEM;
    }
    if (nres > 0)
        memcpy(res, from->results, sizeof(*res) * (size_t)nres);
    if (nrsv > 0)
        memcpy(rsv, from->reserved, sizeof(*rsv) * (size_t)nrsv);
    to->allocated = from->allocated;
    memcpy(to->node, from->node, sizeof(to->node));
    to->nresults = nres;
    to->results = res;
    to->nreserved = from->nreserved;
    to->reserved = rsv;
    return 0;
}

/* View claim i's status lists made the view's own (it may change them). Returns 0 or
 * GS_ENOMEM. */
static int own_status(struct gs_claims_view *v, int i)
{
    if (v->own[i])
        return 0;
    struct gs_draobj_claim *cl = &v->claims[i];
    int rc = status_copy(cl, cl);
    v->own[i] = rc == 0;
    return rc;
}

/* View claim i's status as the assumed from's. */
static void overlay(struct gs_claims_view *v, int i, const struct gs_draobj_claim *from)
{
    struct gs_draobj_claim *cl = &v->claims[i];
    struct gs_draobj_claim x = *cl;
    if (status_copy(&x, from))
        return; /* without memory: as the list shows it */
    if (v->own[i])
        status_free(cl);
    *cl = x;
    v->own[i] = true;
}

/* The claims as the watch shows them, each a copy with a reference to its lists. Returns the
 * count, or GS_ENOMEM. */
static int copy_claims(struct gs_kcache *kc, struct gs_draobj_claim **out, int spare)
{
    gs_kcache_lock(kc);
    int n = gs_kcache_count(kc);
    struct gs_draobj_claim *v = malloc(sizeof(*v) * ((size_t)n + (size_t)spare + 1));
    for (int i = 0; v && i < n; i++) {
        v[i] = *(const struct gs_draobj_claim *)gs_kcache_at(kc, i);
        gs_draobj_claim_ref(&v[i]);
    }
    gs_kcache_unlock(kc);
    *out = v;
    return v ? n : GS_ENOMEM;
}

/* The assumed allocations applied to the view while the watch does not show them yet; those
 * it shows (or a newer change), or older than ASSUME_S, forgotten. Called with c->mu held. */
static void apply_assumed(struct gs_claims *c, struct gs_claims_view *v, int nlist, bool listed)
{
    struct gs_strmap byname; /* "ns/name" -> view index */
    gs_strmap_init(&byname);
    char key[GS_KNAME_MAX + 70];
    for (int i = 0; i < nlist; i++) {
        int n = snprintf(key, sizeof(key), "%s/%s", v->claims[i].ns, v->claims[i].name);
        if (gs_strmap_get(&byname, key, (uint32_t)n) < 0)
            gs_strmap_put(&byname, key, (uint32_t)n, i);
    }
    double now = gs_clock_mono();
    for (int a = 0; a < c->nas; a++) {
        struct assumed *x = &c->as[a];
        bool keep = now - x->at < ASSUME_S;
        int n = snprintf(key, sizeof(key), "%s/%s", x->c.ns, x->c.name);
        int i = gs_strmap_get(&byname, key, (uint32_t)n);
        /* a claim the scheduler made has no uid yet: known by name */
        bool found = i >= 0 && (!x->c.uid[0] || strcmp(v->claims[i].uid, x->c.uid) == 0);
        if (keep && found) {
            const struct gs_draobj_claim *cl = &v->claims[i];
            if (x->released ? strcmp(cl->rv, x->c.rv) != 0
                            : cl->allocated && cl->nreserved >= x->c.nreserved)
                keep = false; /* the watch shows it (or a newer change) */
            else
                overlay(v, i, &x->c);
        }
        if (keep && !found && !x->c.uid[0]) {
            int k = v->nclaims++; /* made, not listed yet: its devices are held */
            v->claims[k] = x->c;
            v->own[k] = status_copy(&v->claims[k], &x->c) == 0;
            if (!v->own[k])
                v->nclaims--;
        } else if (!keep || (!found && listed)) {
            status_free(&x->c);
            c->as[a--] = c->as[--c->nas];
        }
    }
    gs_strmap_release(&byname);
}

int gs_claims_view(struct gs_claims *c, struct gs_claims_view *v)
{
    memset(v, 0, sizeof(*v));
    v->from = c;
    for (int k = 0; k < NK; k++) {
        v->ref[k] = gs_kcache_items_get(c->kc[k]);
        /* DeviceTaintRules not served (or not readable): no rule; but not listed yet, the
         * devices they taint are not known yet */
        v->absent |= !gs_kcache_synced(c->kc[k]) || (k != KRULE && gs_kcache_absent(c->kc[k]));
    }
    struct gs_kcache_items *lc = v->ref[KCLASS], *ls = v->ref[KSLICE], *lr = v->ref[KRULE];
    if (lc) {
        v->classes = lc->items;
        v->nclasses = lc->n;
    }
    if (ls) {
        v->slices = ls->items;
        v->nslices = ls->n;
    }
    if (lr && lr->n > 0) {
        v->rules = lr->items;
        v->nrules = lr->n < GS_DRATAINT_MAX_RULES ? lr->n : GS_DRATAINT_MAX_RULES;
    }
    bool listed = gs_kcache_synced(c->kc[KCLAIM]);
    /* room for the claims the scheduler made that the watch lacks: ASSUME_MAX at most */
    int nlist = copy_claims(c->kc[KCLAIM], &v->claims, ASSUME_MAX);
    if (nlist < 0)
        return GS_ENOMEM;
    v->nclaims = nlist;
    v->own = calloc((size_t)nlist + ASSUME_MAX + 1, sizeof(*v->own));
    if (!v->own) {
        gs_claims_view_release(v);
        return GS_ENOMEM;
    }
    pthread_mutex_lock(&c->mu);
    apply_assumed(c, v, nlist, listed);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

void gs_claims_view_release(struct gs_claims_view *v)
{
    for (int k = 0; k < NK; k++)
        gs_kcache_items_put(v->ref[k]);
    for (int i = 0; v->claims && i < v->nclaims; i++) {
        if (v->own && v->own[i])
            status_free(&v->claims[i]);
        gs_draobj_claim_release(&v->claims[i]);
    }
    free(v->own);
    free(v->claims);
    memset(v, 0, sizeof(*v));
}

static void assume(struct gs_claims *c, const struct gs_draobj_claim *claim, bool released)
{
    struct gs_draobj_claim x = *claim;
    x.req = NULL; /* the status only */
    x.nreq = 0;
    x.heap = NULL;
    if (status_copy(&x, claim))
        return; /* without memory: not assumed (the watch shows it in time) */
    pthread_mutex_lock(&c->mu);
    int a = 0;
    while (a < c->nas && strcmp(c->as[a].c.uid, claim->uid) != 0)
        a++;
    if (a == c->nas && c->nas < ASSUME_MAX && c->nas == c->capas) {
        void *v = gs_grow(c->as, &c->capas, sizeof(*c->as), 16);
        if (v)
            c->as = v;
    }
    if (a == c->nas && (c->nas >= ASSUME_MAX || c->nas == c->capas)) {
        pthread_mutex_unlock(&c->mu);
        status_free(&x);
        return;
    }
    if (a == c->nas)
        c->nas++;
    else
        status_free(&c->as[a].c);
    c->as[a].c = x;
    c->as[a].at = gs_clock_mono();
    c->as[a].released = released;
    pthread_mutex_unlock(&c->mu);
}

void gs_claims_assume(struct gs_claims *c, const struct gs_draobj_claim *claim)
{
    assume(c, claim, false);
}

void gs_claims_assume_released(struct gs_claims *c, const struct gs_draobj_claim *claim)
{
    assume(c, claim, true);
}

void gs_claims_forget(struct gs_claims *c, const char *uid)
{
    pthread_mutex_lock(&c->mu);
    for (int a = 0; a < c->nas; a++)
        if (strcmp(c->as[a].c.uid, uid) == 0) {
            status_free(&c->as[a].c);
            c->as[a--] = c->as[--c->nas];
        }
    pthread_mutex_unlock(&c->mu);
}

/* ---------- a cycle ---------- */

int gs_claims_cycle_init(struct gs_claims_cycle *cy, struct gs_claims *c, int npods,
                         int32_t (*node_id)(void *ctx, const char *node), void *ctx)
{
    memset(cy, 0, sizeof(*cy));
    int rc = gs_claims_view(c, &cy->v);
    if (rc)
        return rc;
    rc = gs_dracycle_init(&cy->d, cy->v.classes, cy->v.nclasses, cy->v.slices, cy->v.nslices,
                          cy->v.claims, cy->v.nclaims, cy->v.absent, npods, node_id, ctx);
    if (!rc && (rc = gs_draobj_world_taint(&cy->d.w, cy->v.rules, cy->v.nrules)))
        gs_dracycle_release(&cy->d);
    if (rc)
        gs_claims_view_release(&cy->v);
    return rc;
}

void gs_claims_cycle_release(struct gs_claims_cycle *cy)
{
    gs_dracycle_release(&cy->d);
    gs_claims_view_release(&cy->v);
}

/* Since when the pod uid has been unknown (now, the first time); list the uid as seen in
 * this pass (seen, nseen: at most cap). Called with c->mu held. */
static double unknown_since(struct gs_claims *c, const char *uid, struct unknown *seen, int *nseen,
                            int cap, double now)
{
    double at = now;
    for (int k = 0; k < c->nunk; k++)
        if (strcmp(c->unk[k].uid, uid) == 0)
            at = c->unk[k].at;
    bool dup = false;
    for (int k = 0; k < *nseen && !dup; k++)
        dup = strcmp(seen[k].uid, uid) == 0;
    if (!dup && *nseen < cap) {
        snprintf(seen[*nseen].uid, sizeof(seen[*nseen].uid), "%s", uid);
        seen[(*nseen)++].at = at;
    }
    return at;
}

#define UNKNOWN_MAX 1024

int gs_claims_release_stale(struct gs_claims_cycle *cy, struct gs_claims *c,
                            int (*gone)(void *ctx, const char *ns,
                                        const struct gs_draobj_reserved *r),
                            void *ctx, json_t *writes)
{
    struct unknown *seen = calloc(UNKNOWN_MAX, sizeof(*seen));
    bool *was = calloc((size_t)cy->v.nclaims + 1, sizeof(*was)); /* released here */
    if (!seen || !was) {
        free(seen);
        free(was);
        return GS_ENOMEM;
    }
    int nseen = 0, released = 0;
    double now = gs_clock_mono();
    /* the caller's verdicts first, outside the feed's lock (gone may take locks of its own) */
    int8_t *verdict = calloc((size_t)cy->v.nclaims * GS_DRAOBJ_MAX_RESERVED + 1, 1);
    if (!verdict) {
        free(seen);
        free(was);
        return GS_ENOMEM;
    }
    for (int i = 0; i < cy->v.nclaims; i++) {
        const struct gs_draobj_claim *cl = &cy->v.claims[i];
        for (int r = 0;
             cl->allocated && cl->nreserved <= GS_DRAOBJ_MAX_RESERVED && r < cl->nreserved; r++)
            verdict[(size_t)i * GS_DRAOBJ_MAX_RESERVED + (size_t)r] =
                (int8_t)gone(ctx, cl->ns, &cl->reserved[r]);
    }
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < cy->v.nclaims; i++) {
        struct gs_draobj_claim *cl = &cy->v.claims[i];
        if (!cl->allocated || cl->nreserved <= 0 || cl->nreserved > GS_DRAOBJ_MAX_RESERVED)
            continue;
        bool keep[GS_DRAOBJ_MAX_RESERVED];
        int nkept = 0;
        for (int r = 0; r < cl->nreserved; r++) {
            int g = verdict[(size_t)i * GS_DRAOBJ_MAX_RESERVED + (size_t)r];
            if (g == 2)
                g = now - unknown_since(c, cl->reserved[r].uid, seen, &nseen, UNKNOWN_MAX, now) >=
                    GS_CLAIMS_STALE_S;
            keep[r] = g == 0;
            nkept += keep[r];
        }
        if (nkept == cl->nreserved)
            continue;
        json_t *body = gs_draobj_release_patch(cl, keep);
        char path[600];
        snprintf(path, sizeof(path),
                 "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s/status", cl->ns,
                 cl->name);
        /* deallocated: its finalizer goes too, as the resourceclaim controller drops it */
        json_t *w = body ? json_pack("[{s:s, s:o}]", "path", path, "body", body) : NULL;
        if (w && nkept == 0 && cl->protect) {
            snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s",
                     cl->ns, cl->name);
            json_t *f = gs_draobj_finalizer_patch(cl, false);
            if (!f ||
                json_array_append_new(w, json_pack("{s:s, s:s, s:o, s:b}", "path", path, "ctype",
                                                   "application/strategic-merge-patch+json", "body",
                                                   f, "chain", true))) {
                json_decref(w);
                w = NULL;
            }
        }
        if (!w || json_array_append_new(writes, w)) {
            pthread_mutex_unlock(&c->mu);
            free(seen);
            free(was);
            free(verdict);
            return GS_ENOMEM;
        }
        GS_INFO("claims", "resourceclaim %s/%s: %d of %d reservedFor pods are gone%s", cl->ns,
                cl->name, cl->nreserved - nkept, cl->nreserved,
                nkept ? "" : ": its allocation is released");
        /* the view as the API will show it, at once */
        if (own_status(&cy->v, i)) {
            pthread_mutex_unlock(&c->mu);
            free(seen);
            free(was);
            free(verdict);
            return GS_ENOMEM;
        }
        int n = 0;
        for (int r = 0; r < cl->nreserved; r++)
            if (keep[r])
                cl->reserved[n++] = cl->reserved[r];
        cl->nreserved = n;
        if (n == 0) {
            gs_dracycle_hold(&cy->d, i, false); /* none reserved now */
            cl->allocated = false;
            cl->node[0] = '\0';
            cl->nresults = 0;
        }
        was[i] = true;
        released++;
    }
    /* the unknown pods of this pass are remembered, the others forgotten */
    free(c->unk);
    c->unk = seen;
    c->nunk = nseen;
    pthread_mutex_unlock(&c->mu);
    /* assumed outside the lock (assume takes it) */
    for (int i = 0; released && i < cy->v.nclaims; i++)
        if (was[i])
            assume(c, &cy->v.claims[i], true);
    free(was);
    free(verdict);
    return released;
}

json_t *gs_claims_pod_writes(struct gs_claims_cycle *cy, struct gs_claims *c, int i,
                             const char *node, const char *pod_name, const char *pod_uid)
{
    struct gs_dracycle_pod *p = i >= 0 && i < cy->d.npods ? cy->d.pods[i] : NULL;
    json_t *out = json_array();
    for (int k = 0; p && out && k < p->n; k++) {
        if (k == p->x_slot && !p->x_used)
            continue; /* the node's device plugins serve its extended resources */
        const struct gs_draobj_claim *cl = gs_dracycle_pod_claim(&cy->d, p, k);
        if (p->claim[k] < 0) { /* the claim of its extended resources: made first */
            char path[300];
            snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims",
                     cl->ns);
            json_array_append_new(out,
                                  json_pack("{s:s, s:s, s:o*}", "method", "POST", "path", path,
                                            "body", gs_draext_claim_json(p->x, pod_name, pod_uid)));
        }
        bool reserved = false;
        for (int r = 0; r < cl->nreserved && r < GS_DRAOBJ_MAX_RESERVED; r++)
            reserved |= strcmp(cl->reserved[r].uid, pod_uid) == 0;
        if (!p->prepared[k] && reserved)
            continue;
        char path[600];
        /* the finalizer first, in a write of the claim itself, as kube-scheduler adds it (the
         * created claim has it): the allocation's precondition is then the version that write
         * gave */
        bool chain = p->prepared[k] && !cl->protect && p->claim[k] >= 0;
        if (chain) {
            snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s",
                     cl->ns, cl->name);
            json_array_append_new(out, json_pack("{s:s, s:s, s:o*}", "path", path, "ctype",
                                                 "application/strategic-merge-patch+json", "body",
                                                 gs_draobj_finalizer_patch(cl, true)));
        }
        json_t *body = gs_draobj_status_patch(cl, p->prepared[k] ? &p->prep[k].c : NULL,
                                              p->prepared[k] ? &p->res[k] : NULL, &cy->d.w.w, node,
                                              pod_name, pod_uid);
        snprintf(path, sizeof(path),
                 "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s/status", cl->ns,
                 cl->name);
        /* a strategic merge patch: reservedFor merges by uid (the whole list is sent, under the
         * resourceVersion precondition, so it ends as a merge patch would leave it), and the API
         * server applies it to the object as it is, where a JSON merge patch costs it an
         * encoding and a decoding of the whole claim (about 7 times the CPU in the DRA bench) */
        json_t *sw =
            json_pack("{s:s, s:s, s:o*, s:b}", "path", path, "ctype",
                      "application/strategic-merge-patch+json", "body", body, "chain", chain);
        if (sw && chain) /* sent once the watch shows the finalizer's write */
            json_object_set_new(sw, "settle", json_pack("[s, s]", cl->ns, cl->name));
        json_array_append_new(out, sw);
        /* the claim as the API will show it: assumed until the watch does (assume copies the
         * lists) */
        struct gs_draobj_claim a = *cl;
        int nrsv = cl->nreserved < GS_DRAOBJ_MAX_RESERVED ? cl->nreserved : GS_DRAOBJ_MAX_RESERVED;
        struct gs_draobj_result *res = calloc(GS_DRAOBJ_MAX_RESULTS, sizeof(*res));
        struct gs_draobj_reserved *rsv = calloc(GS_DRAOBJ_MAX_RESERVED, sizeof(*rsv));
        if (!res || !rsv) {
            free(res);
            free(rsv);
            continue; /* not assumed: the watch shows it in time */
        }
        if (nrsv > 0)
            memcpy(rsv, cl->reserved, sizeof(*rsv) * (size_t)nrsv);
        if (cl->nresults > 0)
            memcpy(res, cl->results, sizeof(*res) * (size_t)cl->nresults);
        a.results = res;
        a.reserved = rsv;
        if (p->prepared[k]) {
            a.allocated = true;
            a.protect = true;
            snprintf(a.node, sizeof(a.node), "%s", node);
            a.nresults = 0;
            for (int r = 0; r < p->res[k].n && a.nresults < GS_DRAOBJ_MAX_RESULTS; r++) {
                const struct gs_dra_device *d = &cy->d.w.w.dev[p->res[k].dev[r]];
                struct gs_draobj_result *x = &a.results[a.nresults++];
                snprintf(x->request, sizeof(x->request), "%s",
                         gs_dra_result_request(&p->prep[k].c, &p->res[k], r));
                snprintf(x->driver, sizeof(x->driver), "%s", d->driver);
                snprintf(x->pool, sizeof(x->pool), "%s", d->pool);
                snprintf(x->device, sizeof(x->device), "%s", d->name);
            }
        }
        if (a.nreserved < GS_DRAOBJ_MAX_RESERVED) {
            struct gs_draobj_reserved *x = &a.reserved[a.nreserved];
            snprintf(x->resource, sizeof(x->resource), "pods");
            snprintf(x->name, sizeof(x->name), "%s", pod_name);
            snprintf(x->uid, sizeof(x->uid), "%s", pod_uid);
        }
        a.nreserved++;
        if (c)
            gs_claims_assume(c, &a);
        free(res);
        free(rsv);
    }
    if (p && out && p->x_slot >= 0 && p->x_used) { /* the pod names the claim */
        char path[600];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->x->claim.ns,
                 pod_name);
        json_array_append_new(
            out, json_pack("{s:s, s:o*}", "path", path, "body", gs_draext_pod_status(p->x)));
    }
    return out;
}
