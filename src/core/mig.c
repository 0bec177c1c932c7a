/* mig.c - placement search over the catalog's MIG geometry, and the exact planner. The MIG
 * manager, the engine's slot accounting and `gpusched mig` all validate layouts here, so a
 * layout the scheduler plans is one the fake GPU (and NVML) would accept. Every count of
 * slices comes from the model's own grid (gs_gpu_model.mig_compute, .mig_mem): 7 and 8 on
 * A100-class parts, 4 and 4 on A30 and RTX PRO 6000 Blackwell. */
#include "mig.h"

#include "../base/error.h"

#include <stdio.h>
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

int gs_mig_plan(int model, const uint32_t demand[GS_MIG_MAX_PROFILES], struct gs_mig_layout *out,
                int cap, struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || !m->nprofiles)
        return gs_error_set(err, GS_EINVAL, "%s does not support MIG", m ? m->name : "model");
    uint32_t left[GS_MIG_MAX_PROFILES];
    memcpy(left, demand, sizeof(left));
    for (int i = m->nprofiles; i < GS_MIG_MAX_PROFILES; i++)
        if (left[i])
            return gs_error_set(err, GS_ENOFIT, "profile index %d does not exist on %s", i,
                                m->name);
    static __thread struct gs_mig_layout all[2048];
    int nall = gs_mig_enumerate_valid(model, all, 2048);
    if (nall > 2048)
        nall = 2048;
    int gpus = 0;
    for (;;) {
        bool any = false;
        for (int i = 0; i < m->nprofiles; i++)
            any |= left[i] > 0;
        if (!any)
            break;
        int best = -1;
        double best_units = 0;
        int best_waste = 0;
        for (int k = 0; k < nall; k++) {
            struct gs_mig_layout c = all[k];
            bool within = true;
            for (int i = 0; i < m->nprofiles; i++)
                if (c.count[i] > left[i])
                    within = false;
            if (!within)
                continue;
            double u = gs_mig_layout_units(model, &c);
            int waste = gs_mig_layout_size(&c);
            if (best < 0 || u > best_units + 1e-9 ||
                (u > best_units - 1e-9 && waste < best_waste)) {
                best = k;
                best_units = u;
                best_waste = waste;
            }
        }
        if (best < 0)
            return gs_error_set(err, GS_EINTERNAL, "planner found no layout");
        for (int i = 0; i < m->nprofiles; i++)
            left[i] -= all[best].count[i];
        if (gpus < cap)
            out[gpus] = all[best];
        gpus++;
    }
    return gpus;
}
