/* mig.c - placement search over the catalog's MIG geometry, and the exact planner. The MIG
 * manager, the engine's slot accounting and `gpusched mig` all validate layouts here, so a
 * layout the scheduler plans is one the fake GPU (and NVML) would accept. Every count of
 * slices comes from the model's own grid (gs_gpu_model.mig_compute, .mig_mem): 7 and 8 on
 * A100-class parts, 4 and 4 on A30 and RTX PRO 6000 Blackwell. */
#include "mig.h"

#include "../base/error.h"
#include "../base/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs_mig_layout_size(const struct gs_mig_layout *l)
{
    int n = 0;
    for (int i = 0; i < GS_MIG_MAX_PROFILES; i++)
        n += l->count[i];
    return n;
}

/* ---------- media engines ---------- */

/* Why instances of these profiles (n of them, profile indexes) cannot share a GPU, or NULL. */
static const char *media_conflict(const struct gs_gpu_model *m, const uint8_t *prof, int n,
                                  const char **a, const char **b)
{
    int ext = -1, all = -1;
    for (int i = 0; i < n; i++) {
        const struct gs_mig_profile *p = &m->profiles[prof[i]];
        if (p->media & GS_MIG_MEDIA_EXT) {
            if (ext >= 0) {
                *a = m->profiles[prof[ext]].name;
                *b = p->name;
                return "both hold the GPU's one media extension (OFA/JPEG)";
            }
            ext = i;
        }
        if (p->media & GS_MIG_MEDIA_ALL)
            all = i;
    }
    if (all < 0)
        return NULL;
    for (int i = 0; i < n; i++) {
        const struct gs_mig_profile *p = &m->profiles[prof[i]];
        if (i != all && !(p->media & GS_MIG_MEDIA_NONE)) {
            *a = m->profiles[prof[all]].name;
            *b = p->name;
            return "the first takes every media engine, so the others must be '-me' profiles";
        }
    }
    return NULL;
}

/* ---------- placement search ---------- */

struct search {
    const struct gs_gpu_model *m;
    uint8_t order[GS_MIG_COMPUTE_MAX + 1];
    int n;
    struct gs_mig_instance inst[GS_MIG_COMPUTE_MAX];
};

static bool dfs(struct search *s, int k, uint32_t occupied)
{
    if (k == s->n)
        return true;
    const struct gs_mig_profile *p = &s->m->profiles[s->order[k]];
    uint32_t span = (1u << p->mem_slices) - 1;
    /* identical consecutive profiles: keep starts increasing to avoid symmetric work */
    int min_start = 0;
    if (k > 0 && s->order[k - 1] == s->order[k])
        min_start = s->inst[k - 1].start + 1;
    for (int st = min_start; st < s->m->mig_mem; st++) {
        if (!(p->start_mask & (1u << st)))
            continue;
        if (st + p->mem_slices > s->m->mig_mem)
            continue;
        uint32_t bits = span << st;
        if (occupied & bits)
            continue;
        s->inst[k].profile = s->order[k];
        s->inst[k].start = (uint8_t)st;
        if (dfs(s, k + 1, occupied | bits))
            return true;
    }
    return false;
}

/* "1g.10gb 0-6, 3g.40gb 0/4" for the profiles of a layout */
static void starts_of(const struct gs_gpu_model *m, const struct gs_mig_layout *l, char *out,
                      size_t size)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < m->nprofiles && o + 1 < size; i++) {
        if (!l->count[i])
            continue;
        int n = snprintf(out + o, size - o, "%s%s ", o ? ", " : "", m->profiles[i].name);
        if (n < 0 || (size_t)n >= size - o)
            break;
        o += (size_t)n;
        bool first = true;
        for (int st = 0; st < m->mig_mem && o + 1 < size; st++) {
            if (!(m->profiles[i].start_mask & (1u << st)))
                continue;
            n = snprintf(out + o, size - o, "%s%d", first ? "" : "/", st);
            if (n < 0 || (size_t)n >= size - o)
                break;
            o += (size_t)n;
            first = false;
        }
    }
}

/* Checks and search shared by every entry point: `fixed` instances are already on the GPU
 * (profile known; nfixed may be 0), occupied_mem and used_compute what they take. */
static int place(int model, const struct gs_mig_layout *l, const struct gs_mig_instance *fixed,
                 int nfixed, uint32_t occupied_mem, int used_compute, struct gs_mig_placement *pl,
                 struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m)
        return gs_error_set(err, GS_EINVAL, "unknown GPU model id %d", model);
    if (m->nprofiles == 0)
        return gs_error_set(err, GS_EINVAL, "%s does not support MIG", m->name);
    struct search s = {.m = m};
    int compute = used_compute, mem = __builtin_popcount(occupied_mem), ninst = nfixed;
    for (int i = 0; i < GS_MIG_MAX_PROFILES; i++) {
        if (!l->count[i])
            continue;
        if (i >= m->nprofiles)
            return gs_error_set(err, GS_EINVAL, "profile index %d does not exist on %s", i,
                                m->name);
        const struct gs_mig_profile *p = &m->profiles[i];
        int have = l->count[i];
        for (int k = 0; k < nfixed; k++)
            have += fixed[k].profile == i;
        if (have > p->max_count)
            return gs_error_set(err, GS_ENOFIT, "%u x %s: at most %u fit on %s", have, p->name,
                                p->max_count, m->name);
        compute += p->compute * l->count[i];
        mem += p->mem_slices * l->count[i];
        ninst += l->count[i];
    }
    if (compute > m->mig_compute)
        return gs_error_set(err, GS_ENOFIT, "needs %d compute slices, %s has %d", compute, m->name,
                            m->mig_compute);
    if (mem > m->mig_mem)
        return gs_error_set(err, GS_ENOFIT, "needs %d memory slices, %s has %d", mem, m->name,
                            m->mig_mem);
    if (ninst > GS_MIG_COMPUTE_MAX)
        return gs_error_set(err, GS_ENOFIT, "%d instances, %s has %d compute slices", ninst,
                            m->name, m->mig_compute);
    uint8_t all[GS_MIG_COMPUTE_MAX];
    int nall = 0;
    for (int k = 0; k < nfixed; k++)
        all[nall++] = fixed[k].profile;
    for (int i = 0; i < m->nprofiles; i++)
        for (int c = 0; c < l->count[i]; c++)
            all[nall++] = (uint8_t)i;
    const char *a = NULL, *b = NULL, *why = media_conflict(m, all, nall, &a, &b);
    if (why)
        return gs_error_set(err, GS_ENOFIT, "%s and %s cannot share a GPU of %s: %s", a, b, m->name,
                            why);
    /* order: largest memory span first, then fewest valid starts, then profile index */
    for (int i = 0; i < m->nprofiles; i++)
        for (int c = 0; c < l->count[i]; c++)
            s.order[s.n++] = (uint8_t)i;
    for (int x = 1; x < s.n; x++) {
        uint8_t v = s.order[x];
        int y = x - 1;
        while (y >= 0) {
            const struct gs_mig_profile *py = &m->profiles[s.order[y]], *pv = &m->profiles[v];
            bool before = pv->mem_slices > py->mem_slices ||
                          (pv->mem_slices == py->mem_slices &&
                           __builtin_popcount(pv->start_mask) < __builtin_popcount(py->start_mask));
            if (!before)
                break;
            s.order[y + 1] = s.order[y];
            y--;
        }
        s.order[y + 1] = v;
    }
    if (!dfs(&s, 0, occupied_mem)) {
        char starts[256];
        starts_of(m, l, starts, sizeof(starts));
        return gs_error_set(err, GS_ENOFIT,
                            "no placement without overlapping memory slices exists on %s "
                            "(valid starts: %s)",
                            m->name, starts);
    }
    if (pl) {
        pl->n = (uint8_t)s.n;
        memcpy(pl->inst, s.inst, sizeof(s.inst[0]) * (size_t)s.n);
    }
    return 0;
}

int gs_mig_place_into(int model, const struct gs_mig_layout *l, uint8_t occupied_mem,
                      int used_compute, struct gs_mig_placement *pl, struct gs_error *err)
{
    return place(model, l, NULL, 0, occupied_mem, used_compute, pl, err);
}

int gs_mig_place_around(int model, const struct gs_mig_layout *l,
                        const struct gs_mig_placement *existing, struct gs_mig_placement *pl,
                        struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || !m->nprofiles)
        return place(model, l, NULL, 0, 0, 0, pl, err);
    if (existing && !gs_mig_placement_valid(model, existing))
        return gs_error_set(err, GS_EINVAL,
                            "the instances already on the %s overlap or are "
                            "misplaced",
                            m->name);
    uint32_t occ = 0;
    int compute = 0, n = existing ? existing->n : 0;
    for (int k = 0; k < n; k++) {
        const struct gs_mig_profile *p = &m->profiles[existing->inst[k].profile];
        occ |= ((1u << p->mem_slices) - 1) << existing->inst[k].start;
        compute += p->compute;
    }
    return place(model, l, n ? existing->inst : NULL, n, occ, compute, pl, err);
}

int gs_mig_place(int model, const struct gs_mig_layout *l, struct gs_mig_placement *pl,
                 struct gs_error *err)
{
    return place(model, l, NULL, 0, 0, 0, pl, err);
}

bool gs_mig_placement_valid(int model, const struct gs_mig_placement *pl)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || !m->nprofiles || pl->n > GS_MIG_COMPUTE_MAX)
        return false;
    uint32_t occ = 0;
    int compute = 0;
    uint8_t prof[GS_MIG_COMPUTE_MAX], count[GS_MIG_MAX_PROFILES] = {0};
    for (int i = 0; i < pl->n; i++) {
        if (pl->inst[i].profile >= m->nprofiles)
            return false;
        const struct gs_mig_profile *p = &m->profiles[pl->inst[i].profile];
        int st = pl->inst[i].start;
        if (st >= m->mig_mem || !(p->start_mask & (1u << st)) || st + p->mem_slices > m->mig_mem)
            return false;
        uint32_t bits = ((1u << p->mem_slices) - 1) << st;
        if (occ & bits)
            return false;
        occ |= bits;
        compute += p->compute;
        prof[i] = pl->inst[i].profile;
        if (++count[pl->inst[i].profile] > p->max_count)
            return false;
    }
    const char *a, *b;
    return compute <= m->mig_compute && !media_conflict(m, prof, pl->n, &a, &b);
}

static bool valid(int model, const struct gs_mig_layout *l)
{
    return gs_mig_place(model, l, NULL, NULL) == 0;
}

/* ---------- enumeration ---------- */

struct enum_ctx {
    int model;
    const struct gs_gpu_model *m;
    struct gs_mig_layout l;
    struct gs_mig_layout *out;
    int cap, found;
    bool maximal_only;
};

static bool is_maximal(struct enum_ctx *e)
{
    for (int p = 0; p < e->m->nprofiles; p++) {
        if (e->l.count[p] >= e->m->profiles[p].max_count)
            continue;
        e->l.count[p]++;
        bool grows = valid(e->model, &e->l);
        e->l.count[p]--;
        if (grows)
            return false;
    }
    return true;
}

/* Counts of profiles p..0 over the layout fixed above p. Valid layouts are closed under
 * removal, so once a count does not fit no larger count of that profile does either. The
 * order (profile 0 fastest, counts ascending) is that of an odometer over the counts. */
static void enum_rec(struct enum_ctx *e, int p)
{
    if (p < 0) {
        if (gs_mig_layout_size(&e->l) == 0 || (e->maximal_only && !is_maximal(e)))
            return;
        if (e->found < e->cap)
            e->out[e->found] = e->l;
        e->found++;
        return;
    }
    for (int c = 0; c <= e->m->profiles[p].max_count; c++) {
        e->l.count[p] = (uint8_t)c;
        if (c > 0 && !valid(e->model, &e->l))
            break;
        enum_rec(e, p - 1);
    }
    e->l.count[p] = 0;
}

static int enumerate(int model, struct gs_mig_layout *out, int cap, bool maximal_only)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || !m->nprofiles)
        return 0;
    struct enum_ctx e = {
        .model = model, .m = m, .out = out, .cap = cap, .maximal_only = maximal_only};
    enum_rec(&e, m->nprofiles - 1);
    return e.found;
}

int gs_mig_enumerate_maximal(int model, struct gs_mig_layout *out, int cap)
{
    return enumerate(model, out, cap, true);
}

int gs_mig_enumerate_valid(int model, struct gs_mig_layout *out, int cap)
{
    return enumerate(model, out, cap, false);
}

void gs_mig_layout_str(int model, const struct gs_mig_layout *l, char *out, unsigned size)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    size_t o = 0;
    out[0] = '\0';
    if (!m)
        return;
    /* largest first */
    for (int i = m->nprofiles - 1; i >= 0; i--) {
        if (!l->count[i])
            continue;
        int n = snprintf(out + o, size - o, "%s%ux%s", o ? " + " : "", l->count[i],
                         m->profiles[i].name);
        if (n < 0 || (size_t)n >= size - o)
            break;
        o += (size_t)n;
    }
    if (!o)
        snprintf(out, size, "(empty)");
}

double gs_mig_layout_units(int model, const struct gs_mig_layout *l)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    double u = 0;
    for (int i = 0; m && i < m->nprofiles; i++)
        u += l->count[i] * gs_mig_profile_units(&m->profiles[i]);
    return u;
}

/* ---------- planning: the fewest GPUs for a demand ----------
 *
 * Bin packing over the model's valid layouts, solved exactly: a lower bound from weighted
 * capacities, a greedy upper bound, then a depth-first search for every GPU count from the
 * lower bound up to one below the greedy count. The search fills one GPU at a time with a
 * layout that holds the largest instance still unplaced and is maximal within what is left
 * (any solution can be turned into one of that form: valid layouts are closed under removal,
 * so instances can move into a GPU that has room for them), and remembers which remainders
 * were shown not to fit in k GPUs. */

#define PLAN_NODE_BUDGET 2000000 /* layouts tried before the search gives up proving */
#define PLAN_MAX_DEPTH   512     /* GPUs the exact search goes to; the greedy goes beyond */
#define PLAN_MAX_WEIGHTS 80

struct memo_slot {
    uint32_t r[GS_MIG_MAX_PROFILES];
    int32_t k; /* remainder r does not fit in k GPUs (nor fewer); 0: empty slot */
};

struct plan {
    const struct gs_gpu_model *m;
    int np;
    struct gs_mig_layout *lay; /* every valid layout */
    int nlay;
    uint64_t *keys;                 /* sorted keys of lay, for membership */
    int order[GS_MIG_MAX_PROFILES]; /* profiles, largest first */
    /* lower bound: sum r.w / cap(w) over weight vectors */
    int nw;
    uint32_t w[PLAN_MAX_WEIGHTS][GS_MIG_MAX_PROFILES];
    uint64_t wcap[PLAN_MAX_WEIGHTS];
    struct memo_slot *memo;
    size_t memo_size, memo_used;
    long nodes;
    bool gave_up;
    struct gs_mig_layout *path; /* current GPUs, depth-indexed */
    int *cand;                  /* candidates, nlay per depth */
};

static uint64_t layout_key(const struct gs_mig_layout *l)
{
    uint64_t k = 0;
    for (int i = 0; i < GS_MIG_MAX_PROFILES; i++)
        k |= (uint64_t)(l->count[i] & 7) << (3 * i);
    return k;
}

static int key_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool is_valid_key(const struct plan *pl, uint64_t k)
{
    return bsearch(&k, pl->keys, (size_t)pl->nlay, sizeof(k), key_cmp) != NULL;
}

static int64_t lower_bound(const struct plan *pl, const uint32_t *r)
{
    int64_t lb = 0;
    for (int j = 0; j < pl->nw; j++) {
        uint64_t sum = 0;
        for (int p = 0; p < pl->np; p++)
            sum += (uint64_t)r[p] * pl->w[j][p];
        if (!sum)
            continue;
        if (!pl->wcap[j])
            return INT64_MAX; /* cannot be placed at all */
        int64_t b = (int64_t)((sum + pl->wcap[j] - 1) / pl->wcap[j]);
        if (b > lb)
            lb = b;
    }
    return lb;
}

static void add_weight(struct plan *pl, const uint32_t *w)
{
    if (pl->nw >= PLAN_MAX_WEIGHTS)
        return;
    uint64_t cap = 0;
    for (int i = 0; i < pl->nlay; i++) {
        uint64_t s = 0;
        for (int p = 0; p < pl->np; p++)
            s += (uint64_t)pl->lay[i].count[p] * w[p];
        if (s > cap)
            cap = s;
    }
    memcpy(pl->w[pl->nw], w, sizeof(pl->w[0]));
    pl->wcap[pl->nw++] = cap;
}

static uint64_t memo_hash(const uint32_t *r, int np)
{
    uint64_t h = gs_hash_bytes(NULL, 0);
    for (int p = 0; p < np; p++)
        h = gs_hash_step(h, r[p]);
    return h ^ (h >> 31);
}

static struct memo_slot *memo_find(struct plan *pl, const uint32_t *r, bool insert)
{
    if (!pl->memo)
        return NULL;
    size_t mask = pl->memo_size - 1, i = (size_t)memo_hash(r, pl->np) & mask;
    for (;; i = (i + 1) & mask) {
        struct memo_slot *s = &pl->memo[i];
        if (s->k == 0) {
            if (!insert || pl->memo_used * 10 >= pl->memo_size * 7)
                return NULL; /* full: the search goes on without remembering */
            memcpy(s->r, r, sizeof(s->r));
            pl->memo_used++;
            return s;
        }
        if (memcmp(s->r, r, sizeof(s->r)) == 0)
            return s;
    }
}

/* The candidates for the next GPU: layouts within r that hold the largest profile left and
 * are maximal within r, in the order of pl->lay (fullest first). Returns how many. */
static int candidates(const struct plan *pl, const uint32_t *r, int *cand)
{
    int t = -1;
    for (int k = 0; k < pl->np && t < 0; k++)
        if (r[pl->order[k]])
            t = pl->order[k];
    int n = 0;
    for (int i = 0; i < pl->nlay; i++) {
        const struct gs_mig_layout *c = &pl->lay[i];
        if (!c->count[t])
            continue;
        bool within = true;
        for (int p = 0; p < pl->np && within; p++)
            within = c->count[p] <= r[p];
        if (!within)
            continue;
        bool maximal = true;
        uint64_t key = layout_key(c);
        for (int p = 0; p < pl->np && maximal; p++)
            if (c->count[p] < r[p] && c->count[p] < 7)
                maximal = !is_valid_key(pl, key + ((uint64_t)1 << (3 * p)));
        if (maximal)
            cand[n++] = i;
    }
    return n;
}

/* Does r fit in k GPUs? Fills pl->path[depth..] when it does. */
static bool fits(struct plan *pl, uint32_t *r, int k, int depth)
{
    bool empty = true;
    for (int p = 0; p < pl->np && empty; p++)
        empty = r[p] == 0;
    if (empty)
        return true;
    if (k <= 0 || lower_bound(pl, r) > k)
        return false;
    struct memo_slot *s = memo_find(pl, r, false);
    if (s && s->k >= k)
        return false;
    if (++pl->nodes > PLAN_NODE_BUDGET) {
        pl->gave_up = true;
        return false;
    }
    int *cand = pl->cand + (size_t)depth * (size_t)pl->nlay;
    int n = candidates(pl, r, cand);
    bool ok = false;
    for (int i = 0; i < n && !ok && !pl->gave_up; i++) {
        const struct gs_mig_layout *c = &pl->lay[cand[i]];
        for (int p = 0; p < pl->np; p++)
            r[p] -= c->count[p];
        ok = fits(pl, r, k - 1, depth + 1);
        for (int p = 0; p < pl->np; p++)
            r[p] += c->count[p];
        if (ok)
            pl->path[depth] = *c;
    }
    if (!ok && !pl->gave_up && (s = memo_find(pl, r, true)) != NULL && s->k < k)
        s->k = k;
    return ok;
}

/* fullest first: share of compute plus share of memory used, then fewer instances */
static int fuller(const struct gs_gpu_model *m, const struct gs_mig_layout *x,
                  const struct gs_mig_layout *y)
{
    int cx = 0, cy = 0, mx = 0, my = 0, nx = 0, ny = 0;
    for (int p = 0; p < m->nprofiles; p++) {
        cx += x->count[p] * m->profiles[p].compute;
        cy += y->count[p] * m->profiles[p].compute;
        mx += x->count[p] * m->profiles[p].mem_slices;
        my += y->count[p] * m->profiles[p].mem_slices;
        nx += x->count[p];
        ny += y->count[p];
    }
    int sx = cx * m->mig_mem + mx * m->mig_compute, sy = cy * m->mig_mem + my * m->mig_compute;
    if (sx != sy)
        return sx > sy ? -1 : 1;
    if (nx != ny)
        return nx < ny ? -1 : 1;
    return memcmp(x->count, y->count, sizeof(x->count));
}

static int profile_size_cmp(const struct gs_gpu_model *m, int a, int b)
{
    const struct gs_mig_profile *x = &m->profiles[a], *y = &m->profiles[b];
    if (x->mem_slices != y->mem_slices)
        return x->mem_slices > y->mem_slices ? -1 : 1;
    if (x->compute != y->compute)
        return x->compute > y->compute ? -1 : 1;
    int sx = __builtin_popcount(x->start_mask), sy = __builtin_popcount(y->start_mask);
    if (sx != sy)
        return sx < sy ? -1 : 1;
    if (x->max_count != y->max_count)
        return x->max_count < y->max_count ? -1 : 1;
    return a < b ? -1 : a > b;
}

int gs_mig_plan_ex(int model, const uint32_t demand[GS_MIG_MAX_PROFILES], struct gs_mig_layout *out,
                   int cap, bool *optimal, struct gs_error *err)
{
    if (optimal)
        *optimal = false;
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || !m->nprofiles)
        return gs_error_set(err, GS_EINVAL, "%s does not support MIG", m ? m->name : "model");
    for (int i = m->nprofiles; i < GS_MIG_MAX_PROFILES; i++)
        if (demand[i])
            return gs_error_set(err, GS_ENOFIT, "profile index %d does not exist on %s", i,
                                m->name);
    struct plan pl = {.m = m, .np = m->nprofiles};
    uint32_t r[GS_MIG_MAX_PROFILES] = {0};
    uint64_t total = 0;
    for (int p = 0; p < pl.np; p++)
        total += r[p] = demand[p];
    if (total == 0) {
        if (optimal)
            *optimal = true;
        return 0;
    }
    int ret = GS_ENOMEM, nvalid = gs_mig_enumerate_valid(model, NULL, 0);
    int64_t best_n = 0;
    pl.lay = malloc(sizeof(*pl.lay) * (size_t)nvalid);
    pl.keys = malloc(sizeof(*pl.keys) * (size_t)nvalid);
    struct gs_mig_layout *best = NULL;
    if (!pl.lay || !pl.keys) {
        gs_error_set(err, GS_ENOMEM, "planning MIG layouts: out of memory");
        goto out;
    }
    pl.nlay = gs_mig_enumerate_valid(model, pl.lay, nvalid);
    for (int a = 1; a < pl.nlay; a++) { /* a few hundred at most */
        struct gs_mig_layout v = pl.lay[a];
        int b = a - 1;
        for (; b >= 0 && fuller(m, &v, &pl.lay[b]) < 0; b--)
            pl.lay[b + 1] = pl.lay[b];
        pl.lay[b + 1] = v;
    }
    for (int i = 0; i < pl.nlay; i++)
        pl.keys[i] = layout_key(&pl.lay[i]);
    qsort(pl.keys, (size_t)pl.nlay, sizeof(*pl.keys), key_cmp);
    for (int p = 0; p < pl.np; p++)
        pl.order[p] = p;
    for (int a = 1; a < pl.np; a++)
        for (int b = a; b > 0 && profile_size_cmp(m, pl.order[b], pl.order[b - 1]) < 0; b--) {
            int t = pl.order[b];
            pl.order[b] = pl.order[b - 1];
            pl.order[b - 1] = t;
        }
    /* weights: compute slices, memory slices, and 1 for each subset of the demanded profiles
     * (one profile alone gives its max count; the '+me' ones together give 1) */
    uint32_t w[GS_MIG_MAX_PROFILES];
    for (int p = 0; p < pl.np; p++)
        w[p] = m->profiles[p].compute;
    add_weight(&pl, w);
    for (int p = 0; p < pl.np; p++)
        w[p] = m->profiles[p].mem_slices;
    add_weight(&pl, w);
    int dem[GS_MIG_MAX_PROFILES], nd = 0;
    for (int p = 0; p < pl.np; p++)
        if (r[p])
            dem[nd++] = p;
    for (uint32_t set = 1; set < (1u << nd) && pl.nw < PLAN_MAX_WEIGHTS; set++) {
        memset(w, 0, sizeof(w));
        for (int i = 0; i < nd; i++)
            if (set & (1u << i))
                w[dem[i]] = 1;
        add_weight(&pl, w);
    }
    int64_t lb = lower_bound(&pl, r);
    if (lb == INT64_MAX) {
        ret = gs_error_set(err, GS_EINTERNAL, "planner found no layout");
        goto out;
    }
    /* greedy: the search's first choice at every step, which always makes progress */
    size_t best_cap = 64;
    best = malloc(sizeof(*best) * best_cap);
    pl.cand = malloc(sizeof(int) * (size_t)pl.nlay);
    if (!best || !pl.cand) {
        gs_error_set(err, GS_ENOMEM, "planning MIG layouts: out of memory");
        goto out;
    }
    uint32_t left[GS_MIG_MAX_PROFILES];
    memcpy(left, r, sizeof(left));
    for (uint64_t todo = total; todo > 0;) {
        if (candidates(&pl, left, pl.cand) == 0) {
            ret = gs_error_set(err, GS_EINTERNAL, "planner found no layout");
            goto out;
        }
        const struct gs_mig_layout *c = &pl.lay[pl.cand[0]];
        if ((size_t)best_n == best_cap) {
            struct gs_mig_layout *nb = realloc(best, sizeof(*best) * best_cap * 2);
            if (!nb) {
                gs_error_set(err, GS_ENOMEM, "planning MIG layouts: out of memory");
                goto out;
            }
            best = nb;
            best_cap *= 2;
        }
        best[best_n++] = *c;
        for (int p = 0; p < pl.np; p++) {
            left[p] -= c->count[p];
            todo -= c->count[p];
        }
    }
    /* exact: the first k from the lower bound that fits is the fewest */
    bool proven = lb >= best_n;
    if (!proven && best_n - 1 <= PLAN_MAX_DEPTH) {
        pl.memo_size = 1u << 16;
        pl.memo = calloc(pl.memo_size, sizeof(*pl.memo));
        pl.path = malloc(sizeof(*pl.path) * (size_t)best_n);
        free(pl.cand);
        pl.cand = malloc(sizeof(int) * (size_t)pl.nlay * (size_t)best_n);
        if (!pl.path || !pl.cand) {
            gs_error_set(err, GS_ENOMEM, "planning MIG layouts: out of memory");
            goto out;
        }
        for (int64_t k = lb; k < best_n && !pl.gave_up; k++) {
            if (fits(&pl, r, (int)k, 0)) {
                memcpy(best, pl.path, sizeof(*best) * (size_t)k);
                best_n = k;
                break;
            }
        }
        proven = !pl.gave_up;
    }
    if (optimal)
        *optimal = proven;
    for (int64_t i = 0; i < best_n && i < cap; i++)
        out[i] = best[i];
    ret = (int)best_n;
out:
    free(pl.lay);
    free(pl.keys);
    free(pl.memo);
    free(pl.path);
    free(pl.cand);
    free(best);
    return ret;
}

int gs_mig_plan(int model, const uint32_t demand[GS_MIG_MAX_PROFILES], struct gs_mig_layout *out,
                int cap, struct gs_error *err)
{
    return gs_mig_plan_ex(model, demand, out, cap, NULL, err);
}

void gs_mig_placement_sort(struct gs_mig_placement *pl)
{
    for (int i = 1; i < pl->n; i++)
        for (int j = i; j > 0 && pl->inst[j - 1].start > pl->inst[j].start; j--) {
            struct gs_mig_instance t = pl->inst[j];
            pl->inst[j] = pl->inst[j - 1];
            pl->inst[j - 1] = t;
        }
}
