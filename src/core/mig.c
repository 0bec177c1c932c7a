/* mig.c - placement search over the catalog's MIG geometry. The MIG manager, the engine's
 * slot accounting and `gpusched mig` all validate layouts here, so a layout the scheduler
 * plans is one the fake GPU (and NVML) would accept. */
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

struct search {
    const struct gs_gpu_model *m;
    uint8_t order[GS_MIG_COMPUTE_MAX + 1];
    int n;
    struct gs_mig_instance inst[GS_MIG_COMPUTE_MAX];
};

static bool dfs(struct search *s, int k, uint8_t occupied)
{
    if (k == s->n)
        return true;
    const struct gs_mig_profile *p = &s->m->profiles[s->order[k]];
    uint8_t span = (uint8_t)((1u << p->mem_slices) - 1);
    /* identical consecutive profiles: keep starts increasing to avoid symmetric work */
    int min_start = 0;
    if (k > 0 && s->order[k - 1] == s->order[k])
        min_start = s->inst[k - 1].start + 1;
    for (int st = min_start; st < GS_MIG_MEM_SLICES; st++) {
        if (!(p->start_mask & (1u << st)))
            continue;
        if (st + p->mem_slices > GS_MIG_MEM_SLICES)
            continue;
        uint8_t bits = (uint8_t)(span << st);
        if (occupied & bits)
            continue;
        s->inst[k].profile = s->order[k];
        s->inst[k].start = (uint8_t)st;
        if (dfs(s, k + 1, occupied | bits))
            return true;
    }
    return false;
}

int gs_mig_place_into(int model, const struct gs_mig_layout *l, uint8_t occupied_mem,
                      int used_compute, struct gs_mig_placement *pl, struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m)
        return gs_error_set(err, GS_EINVAL, "unknown GPU model id %d", model);
    if (m->nprofiles == 0)
        return gs_error_set(err, GS_EINVAL, "%s does not support MIG", m->name);
    struct search s = {.m = m};
    int compute = used_compute, mem = __builtin_popcount(occupied_mem);
    for (int i = 0; i < GS_MIG_MAX_PROFILES; i++) {
        if (!l->count[i])
            continue;
        if (i >= m->nprofiles)
            return gs_error_set(err, GS_EINVAL, "profile index %d does not exist on %s", i,
                                m->name);
        const struct gs_mig_profile *p = &m->profiles[i];
        if (l->count[i] > p->max_count)
            return gs_error_set(err, GS_ENOFIT, "%u x %s: at most %u fit on %s", l->count[i],
                                p->name, p->max_count, m->name);
        compute += p->compute * l->count[i];
        mem += p->mem_slices * l->count[i];
    }
    if (compute > GS_MIG_COMPUTE_MAX)
        return gs_error_set(err, GS_ENOFIT, "needs %d compute slices, %s has %d", compute, m->name,
                            GS_MIG_COMPUTE_MAX);
    if (mem > GS_MIG_MEM_SLICES)
        return gs_error_set(err, GS_ENOFIT, "needs %d memory slices, %s has %d", mem, m->name,
                            GS_MIG_MEM_SLICES);
    /* order: largest memory span first, then fewest valid starts, then profile index */
    for (int i = 0; i < m->nprofiles; i++)
        for (int c = 0; c < l->count[i]; c++)
            s.order[s.n++] = (uint8_t)i;
    for (int a = 1; a < s.n; a++) {
        uint8_t v = s.order[a];
        int b = a - 1;
        while (b >= 0) {
            const struct gs_mig_profile *pb = &m->profiles[s.order[b]], *pv = &m->profiles[v];
            bool before = pv->mem_slices > pb->mem_slices ||
                          (pv->mem_slices == pb->mem_slices &&
                           __builtin_popcount(pv->start_mask) < __builtin_popcount(pb->start_mask));
            if (!before)
                break;
            s.order[b + 1] = s.order[b];
            b--;
        }
        s.order[b + 1] = v;
    }
    if (!dfs(&s, 0, occupied_mem))
        return gs_error_set(err, GS_ENOFIT,
                            "no placement without overlapping memory slices exists on %s "
                            "(valid starts: 1g 0-6, 1g double-memory 0/2/4/6, 2g 0/2/4, 3g 0/4, "
                            "4g 0, 7g 0)",
                            m->name);
    if (pl) {
        pl->n = (uint8_t)s.n;
        memcpy(pl->inst, s.inst, sizeof(s.inst[0]) * (size_t)s.n);
    }
    return 0;
}

int gs_mig_place(int model, const struct gs_mig_layout *l, struct gs_mig_placement *pl,
                 struct gs_error *err)
{
    return gs_mig_place_into(model, l, 0, 0, pl, err);
}

bool gs_mig_placement_valid(int model, const struct gs_mig_placement *pl)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m)
        return false;
    uint8_t occ = 0;
    int compute = 0;
    for (int i = 0; i < pl->n; i++) {
        if (pl->inst[i].profile >= m->nprofiles)
            return false;
        const struct gs_mig_profile *p = &m->profiles[pl->inst[i].profile];
        int st = pl->inst[i].start;
        if (!(p->start_mask & (1u << st)) || st + p->mem_slices > GS_MIG_MEM_SLICES)
            return false;
        uint8_t bits = (uint8_t)(((1u << p->mem_slices) - 1) << st);
        if (occ & bits)
            return false;
        occ |= bits;
        compute += p->compute;
    }
    return compute <= GS_MIG_COMPUTE_MAX;
}

static bool valid(int model, const struct gs_mig_layout *l)
{
    return gs_mig_place(model, l, NULL, NULL) == 0;
}

static int enumerate(int model, struct gs_mig_layout *out, int cap, bool maximal_only)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (!m || !m->nprofiles)
        return 0;
    int np = m->nprofiles, found = 0;
    struct gs_mig_layout l;
    memset(&l, 0, sizeof(l));
    /* odometer over counts 0..max per profile */
    for (;;) {
        if (gs_mig_layout_size(&l) > 0 && valid(model, &l)) {
            bool maximal = true;
            if (maximal_only) {
                for (int p = 0; p < np && maximal; p++) {
                    if (l.count[p] >= m->profiles[p].max_count)
                        continue;
                    l.count[p]++;
                    if (valid(model, &l))
                        maximal = false;
                    l.count[p]--;
                }
            }
            if (maximal) {
                if (found < cap)
                    out[found] = l;
                found++;
            }
        }
        int p = 0;
        while (p < np) {
            if (l.count[p] < m->profiles[p].max_count) {
                l.count[p]++;
                break;
            }
            l.count[p] = 0;
            p++;
        }
        if (p == np)
            break;
    }
    return found;
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
