/* migmgr.c - plan and apply a mig-parted config, or a desired layout with exact placements
 * (dynamic MIG), on a node's GPUs (see migmgr.h). The node reconciler (reconciler.c) gives
 * it the devices pods hold; the GPU backend (gpu.h) does the work and enforces NVIDIA's rules
 * again. */
#include "migmgr.h"

#include "../base/error.h"
#include "../base/log.h"
#include "../core/mig.h"
#include "../formats/migdesired.h"

#include <stdio.h>
#include <string.h>

static bool held(const struct gs_mig_inst *in, const char *const *in_use, int n)
{
    for (int k = 0; k < n; k++)
        if (in_use[k] && in->uuid[0] && strcmp(in_use[k], in->uuid) == 0)
            return true;
    return false;
}

/* Try to keep the instances flagged in keep[]; place the rest of the layout around them. */
static bool place_around(int model, const struct gs_mig_layout *want, const struct gs_mig_inst *cur,
                         int ncur, const bool *keep, struct gs_migmgr_gpu *g)
{
    struct gs_mig_layout rest = *want;
    /* the kept instances as they are placed: their slices, compute, max counts and media
     * engines all bound what may be created beside them */
    struct gs_mig_placement kept = {0};
    for (int k = 0; k < ncur; k++) {
        if (!keep[k])
            continue;
        int p = gs_gpu_profile_index(model, cur[k].profile_id);
        if (p < 0 || rest.count[p] == 0 || kept.n >= GS_MIG_COMPUTE_MAX || cur[k].start > 255)
            return false;
        rest.count[p]--;
        kept.inst[kept.n].profile = (uint8_t)p;
        kept.inst[kept.n].start = (uint8_t)cur[k].start;
        kept.n++;
    }
    struct gs_mig_placement pl;
    if (gs_mig_place_around(model, &rest, &kept, &pl, NULL))
        return false;
    g->nkeep = g->ndestroy = 0;
    for (int k = 0; k < ncur; k++) {
        if (keep[k])
            g->keep[g->nkeep++] = cur[k];
        else
            g->destroy[g->ndestroy++] = cur[k];
    }
    g->ncreate = pl.n;
    for (int k = 0; k < pl.n; k++)
        g->create[k] = pl.inst[k];
    return true;
}

int gs_migmgr_plan(struct gs_gpu_backend *b, const struct gs_migparted *mp, const char *config,
                   const char *const *in_use, int nin_use, bool force, struct gs_migmgr_plan *out,
                   struct gs_error *err)
{
    return gs_migmgr_plan_except(b, mp, config, in_use, nin_use, force, 0, out, err);
}

int gs_migmgr_plan_except(struct gs_gpu_backend *b, const struct gs_migparted *mp,
                          const char *config, const char *const *in_use, int nin_use, bool force,
                          uint32_t skip, struct gs_migmgr_plan *out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    const struct gs_mp_config *c = gs_migparted_find(mp, config);
    if (!c)
        return gs_error_set(err, GS_ENOTFOUND, "mig-parted config '%s' is not in %s", config,
                            mp->file);
    snprintf(out->config, sizeof(out->config), "%s", config);
    int n = b->ops->count(b);
    for (int i = 0; i < n && i < GS_AGENT_MAX_GPUS; i++) {
        struct gs_gpu_info info;
        if (b->ops->info(b, i, &info))
            continue;
        struct gs_migmgr_gpu *g = &out->gpu[out->ngpus++];
        g->index = i;
        g->model = info.model;
        g->mode_now = info.mig_enabled;
        g->mode_want = g->mode_now;
        if (info.model < 0 || (skip >> i & 1))
            continue; /* a GPU gpusched does not know, or one a desired layout lists */
        bool enabled = false;
        struct gs_mig_layout want;
        memset(&want, 0, sizeof(want));
        int rc = gs_migparted_resolve(c, i, info.model, &enabled, &want, err);
        if (rc < 0) {
            char msg[GS_ERROR_MSG_MAX];
            snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
            return gs_error_set(err, GS_EINVAL, "%s; nothing was changed", msg);
        }
        if (rc == 0) {
            g->mode_want = g->mode_now; /* no entry for this GPU: leave it */
            continue;
        }
        if (enabled && !info.mig_capable)
            return gs_error_set(err, GS_EINVAL,
                                "config '%s' enables MIG on GPU %d, a %s, "
                                "which is not MIG-capable",
                                config, i, gs_catalog_get(info.model)->name);
        g->mode_want = enabled;
        struct gs_mig_inst cur[GS_AGENT_MAX_INST];
        int ncur = info.mig_enabled ? b->ops->mig_list(b, i, cur, GS_AGENT_MAX_INST) : 0;
        if (ncur < 0)
            return gs_error_set(err, ncur, "GPU %d: cannot list MIG instances", i);
        if (!enabled)
            memset(&want, 0, sizeof(want));
        /* already as asked? */
        struct gs_mig_layout have;
        memset(&have, 0, sizeof(have));
        for (int k = 0; k < ncur; k++) {
            int p = gs_gpu_profile_index(info.model, cur[k].profile_id);
            if (p >= 0)
                have.count[p]++;
        }
        if (g->mode_now == enabled && memcmp(&have, &want, sizeof(have)) == 0) {
            g->nkeep = ncur;
            memcpy(g->keep, cur, sizeof(cur[0]) * (size_t)ncur);
            continue;
        }
        /* keep what is still asked for, busy instances first; else only the busy ones;
         * else start over */
        bool keep[GS_AGENT_MAX_INST] = {false}, busy[GS_AGENT_MAX_INST] = {false};
        struct gs_mig_layout left = want;
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < ncur; k++) {
                int p = gs_gpu_profile_index(info.model, cur[k].profile_id);
                busy[k] = held(&cur[k], in_use, nin_use);
                if (p < 0 || keep[k] || (pass == 0) != busy[k] || left.count[p] == 0)
                    continue;
                keep[k] = true;
                left.count[p]--;
            }
        bool ok = enabled && place_around(info.model, &want, cur, ncur, keep, g);
        if (!ok && enabled) {
            for (int k = 0; k < ncur; k++)
                keep[k] = busy[k];
            ok = place_around(info.model, &want, cur, ncur, keep, g);
        }
        if (!ok) {
            memset(keep, 0, sizeof(keep));
            if (enabled) {
                ok = place_around(info.model, &want, cur, ncur, keep, g);
                if (!ok)
                    return gs_error_set(err, GS_EINVAL, "config '%s' does not fit GPU %d (%s)",
                                        config, i, gs_catalog_get(info.model)->name);
            } else {
                g->nkeep = g->ncreate = 0;
                g->ndestroy = ncur;
                memcpy(g->destroy, cur, sizeof(cur[0]) * (size_t)ncur);
            }
        }
        /* a GPU a pod holds whole cannot change MIG mode under it */
        bool whole_held = false;
        for (int k = 0; k < nin_use && !whole_held; k++)
            whole_held = in_use[k] && strcmp(in_use[k], info.uuid) == 0;
        if (whole_held && g->mode_now != g->mode_want && !force)
            return gs_error_set(err, GS_EINVAL,
                                "config '%s' would %s MIG on GPU %d (%s) that a pod holds; "
                                "nothing was changed (force to override)",
                                config, g->mode_want ? "enable" : "disable", i, info.uuid);
        for (int k = 0; k < g->ndestroy; k++)
            if (held(&g->destroy[k], in_use, nin_use) && !force)
                return gs_error_set(err, GS_EINVAL,
                                    "config '%s' would destroy MIG instance %s (GPU %d, GI %u) "
                                    "that a pod holds; nothing was changed (force to override)",
                                    config, g->destroy[k].uuid, i, g->destroy[k].gi_id);
        g->change = true;
        out->changes++;
    }
    return 0;
}

/* ---------- a desired layout (dynamic MIG) ---------- */

/* The pod holding uuid, or NULL. */
static const char *holder(const char *uuid, const struct gs_migmgr_use *use, int nuse)
{
    for (int k = 0; k < nuse; k++)
        if (uuid[0] && use[k].uuid && strcmp(use[k].uuid, uuid) == 0)
            return use[k].pod && use[k].pod[0] ? use[k].pod : "(unnamed)";
    return NULL;
}

/* The desired instances of a listed GPU as catalog placements; GS_EINVAL when one is not
 * valid for the model (err says which and why). */
static int desired_placement(const struct gs_mig_desired_gpu *dg, const struct gs_gpu_info *info,
                             struct gs_mig_placement *pl, struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(info->model);
    memset(pl, 0, sizeof(*pl));
    if (dg->ninst > GS_AGENT_MAX_INST || dg->ninst > GS_MIG_COMPUTE_MAX)
        return gs_error_set(err, GS_EINVAL, "GPU %d (%s): %d instances, a GPU holds at most %d",
                            dg->index, m->name, dg->ninst, GS_AGENT_MAX_INST);
    for (int k = 0; k < dg->ninst; k++) {
        const struct gs_inv_inst *in = &dg->inst[k];
        int p = gs_catalog_find_profile(info->model, in->profile);
        if (p < 0 || strcmp(m->profiles[p].name, in->profile) != 0) {
            char list[256];
            gs_catalog_profile_list(info->model, list, sizeof(list));
            return gs_error_set(err, GS_EINVAL, "GPU %d (%s): %s is not a MIG profile of it (%s)",
                                dg->index, m->name, in->profile, list);
        }
        const struct gs_mig_profile *pr = &m->profiles[p];
        if (!(pr->start_mask >> in->start & 1)) {
            char starts[32] = "";
            size_t off = 0;
            for (int s = 0; s < 8; s++)
                if (pr->start_mask >> s & 1)
                    off += (size_t)snprintf(starts + off, sizeof(starts) - off, "%s%d",
                                            off ? "," : "", s);
            return gs_error_set(err, GS_EINVAL, "GPU %d (%s): %s cannot start at %u (starts %s)",
                                dg->index, m->name, pr->name, in->start, starts);
        }
        for (int j = 0; j < k; j++) {
            const struct gs_mig_profile *q = &m->profiles[pl->inst[j].profile];
            unsigned a0 = in->start, a1 = a0 + pr->mem_slices;
            unsigned b0 = pl->inst[j].start, b1 = b0 + q->mem_slices;
            if (a0 < b1 && b0 < a1)
                return gs_error_set(err, GS_EINVAL, "GPU %d (%s): %s@%u overlaps %s@%u", dg->index,
                                    m->name, pr->name, in->start, q->name, b0);
        }
        pl->inst[pl->n].profile = (uint8_t)p;
        pl->inst[pl->n].start = in->start;
        pl->n++;
    }
    if (!gs_mig_placement_valid(info->model, pl)) {
        char why[GS_ERROR_MSG_MAX] = "more compute slices, instances of a profile or media "
                                     "engines than it has";
        struct gs_mig_layout l;
        memset(&l, 0, sizeof(l));
        for (int k = 0; k < pl->n; k++)
            l.count[pl->inst[k].profile]++;
        struct gs_error e2;
        gs_error_init(&e2);
        if (gs_mig_place(info->model, &l, NULL, &e2))
            snprintf(why, sizeof(why), "%s", e2.msg);
        return gs_error_set(err, GS_EINVAL, "GPU %d (%s): the layout does not fit: %s", dg->index,
                            m->name, why);
    }
    return 0;
}

/* Plan one listed GPU (already validated). */
static int plan_desired_gpu(struct gs_gpu_backend *b, const struct gs_mig_desired_gpu *dg,
                            const struct gs_gpu_info *info, const struct gs_mig_placement *want,
                            const struct gs_migmgr_use *use, int nuse, struct gs_migmgr_gpu *g,
                            struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(info->model);
    g->index = dg->index;
    g->model = info->model;
    g->mode_now = info->mig_enabled;
    g->mode_want = dg->whole ? false : true;
    if (dg->whole && !info->mig_capable)
        g->mode_want = false;
    struct gs_mig_inst cur[GS_AGENT_MAX_INST];
    int ncur = info->mig_enabled ? b->ops->mig_list(b, dg->index, cur, GS_AGENT_MAX_INST) : 0;
    if (ncur < 0)
        return gs_error_set(err, ncur, "GPU %d: cannot list MIG instances", dg->index);
    bool taken[GS_MIG_COMPUTE_MAX] = {false};
    for (int k = 0; k < ncur; k++) {
        int p = gs_gpu_profile_index(info->model, cur[k].profile_id);
        int j = -1;
        for (int x = 0; g->mode_want && p >= 0 && x < want->n && j < 0; x++)
            if (!taken[x] && want->inst[x].profile == p && want->inst[x].start == cur[k].start)
                j = x;
        if (j >= 0) {
            taken[j] = true;
            g->keep[g->nkeep++] = cur[k];
        } else {
            g->destroy[g->ndestroy++] = cur[k];
        }
    }
    for (int x = 0; x < want->n; x++)
        if (!taken[x])
            g->create[g->ncreate++] = want->inst[x];
    bool mode = g->mode_now != g->mode_want;
    if (!mode && g->ndestroy == 0 && g->ncreate == 0)
        return 0; /* as asked */
    /* what a pod holds is never destroyed, nor a GPU's mode changed under it */
    const char *pod = NULL;
    for (int k = 0; k < g->ndestroy && !pod; k++)
        if ((pod = holder(g->destroy[k].uuid, use, nuse))) {
            int pi = gs_gpu_profile_index(info->model, g->destroy[k].profile_id);
            snprintf(g->why, sizeof(g->why), "GPU %d: MIG instance %s@%u (%s) is held by pod %s",
                     dg->index, pi >= 0 ? m->profiles[pi].name : "?", g->destroy[k].start,
                     g->destroy[k].uuid, pod);
        }
    if (!pod && mode && (pod = holder(info->uuid, use, nuse)))
        snprintf(g->why, sizeof(g->why),
                 "GPU %d (%s) is held by pod %s: MIG mode cannot %s under it", dg->index,
                 info->uuid, pod, g->mode_want ? "go on" : "go off");
    if (pod)
        g->wait = true;
    else
        g->change = true;
    return 0;
}

int gs_migmgr_plan_desired(struct gs_gpu_backend *b, const struct gs_mig_desired *d,
                           const struct gs_migmgr_use *use, int nuse, struct gs_migmgr_plan *out,
                           struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    out->generation = d->generation;
    int n = b->ops->count(b);
    if (n > GS_AGENT_MAX_GPUS)
        n = GS_AGENT_MAX_GPUS;
    struct gs_gpu_info info[GS_MAX_GPUS_NODE];
    struct gs_mig_placement want[GS_MAX_GPUS_NODE];
    /* every listed GPU is checked before anything is planned */
    for (int k = 0; k < d->ngpus && k < GS_MAX_GPUS_NODE; k++) {
        const struct gs_mig_desired_gpu *dg = &d->gpus[k];
        if (dg->index < 0 || dg->index >= n || b->ops->info(b, dg->index, &info[k]))
            return gs_error_set(err, GS_EINVAL, "GPU %d: no such GPU on this node (%d GPU%s)",
                                dg->index, n, n == 1 ? "" : "s");
        if (info[k].model < 0 || !gs_catalog_get(info[k].model))
            return gs_error_set(err, GS_EINVAL, "GPU %d (%s): a model gpusched does not know",
                                dg->index, info[k].name);
        memset(&want[k], 0, sizeof(want[k]));
        if (dg->whole)
            continue;
        if (!info[k].mig_capable)
            return gs_error_set(err, GS_EINVAL, "GPU %d (%s) is not MIG-capable", dg->index,
                                gs_catalog_get(info[k].model)->name);
        int rc = desired_placement(dg, &info[k], &want[k], err);
        if (rc)
            return rc;
    }
    for (int k = 0; k < d->ngpus && k < GS_MAX_GPUS_NODE; k++) {
        struct gs_migmgr_gpu *g = &out->gpu[out->ngpus];
        int rc = plan_desired_gpu(b, &d->gpus[k], &info[k], &want[k], use, nuse, g, err);
        if (rc) {
            memset(out, 0, sizeof(*out));
            return rc;
        }
        out->ngpus++;
        out->changes += g->change;
        out->waiting += g->wait;
    }
    return 0;
}

int gs_migmgr_apply(struct gs_gpu_backend *b, const struct gs_migmgr_plan *p, struct gs_error *err)
{
    for (int k = 0; k < p->ngpus; k++) {
        const struct gs_migmgr_gpu *g = &p->gpu[k];
        if (!g->change)
            continue;
        for (int d = 0; d < g->ndestroy; d++) {
            int rc = b->ops->mig_destroy(b, g->index, g->destroy[d].gi_id);
            if (rc)
                return gs_error_set(err, rc, "GPU %d: destroying GPU instance %u failed%s",
                                    g->index, g->destroy[d].gi_id,
                                    rc == GS_EINVAL ? " (in use)" : "");
        }
        if (g->mode_now != g->mode_want) {
            int rc = b->ops->mig_set_mode(b, g->index, g->mode_want);
            if (rc)
                return gs_error_set(err, rc, "GPU %d: %s MIG mode failed", g->index,
                                    g->mode_want ? "enabling" : "disabling");
        }
        const struct gs_gpu_model *m = gs_catalog_get(g->model);
        for (int c = 0; c < g->ncreate; c++) {
            const struct gs_mig_profile *pr = &m->profiles[g->create[c].profile];
            int rc = b->ops->mig_create(b, g->index, pr->id, g->create[c].start, NULL);
            if (rc)
                return gs_error_set(err, rc, "GPU %d: creating %s at start %u failed", g->index,
                                    pr->name, g->create[c].start);
        }
    }
    return 0;
}

void gs_migmgr_plan_str(const struct gs_migmgr_plan *p, char *out, size_t size)
{
    size_t off = 0;
    out[0] = '\0';
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (off < size)                                                                            \
            off += (size_t)snprintf(out + off, size - off, __VA_ARGS__);                           \
    } while (0)
    if (p->generation > 0)
        PUT("mig-desired generation %lld: %d GPU%s to change, %d waiting\n",
            (long long)p->generation, p->changes, p->changes == 1 ? "" : "s", p->waiting);
    else
        PUT("config %s: %d GPU%s to change\n", p->config, p->changes, p->changes == 1 ? "" : "s");
    for (int k = 0; k < p->ngpus; k++) {
        const struct gs_migmgr_gpu *g = &p->gpu[k];
        const struct gs_gpu_model *m = gs_catalog_get(g->model);
        PUT("GPU %d (%s): ", g->index, m ? m->name : "unknown model");
        if (g->wait)
            PUT("waits: %s; ", g->why);
        if (!g->change && !g->wait) {
            PUT("as asked (MIG %s, %d instance%s)\n", g->mode_now ? "on" : "off", g->nkeep,
                g->nkeep == 1 ? "" : "s");
            continue;
        }
        if (g->mode_now != g->mode_want)
            PUT("MIG %s; ", g->mode_want ? "enable" : "disable");
        for (int d = 0; d < g->ndestroy; d++) {
            int pi = gs_gpu_profile_index(g->model, g->destroy[d].profile_id);
            PUT("destroy %s@%u; ", pi >= 0 ? m->profiles[pi].name : "?", g->destroy[d].start);
        }
        for (int d = 0; d < g->nkeep; d++) {
            int pi = gs_gpu_profile_index(g->model, g->keep[d].profile_id);
            PUT("keep %s@%u; ", pi >= 0 ? m->profiles[pi].name : "?", g->keep[d].start);
        }
        for (int c = 0; c < g->ncreate; c++)
            PUT("create %s@%u; ", m->profiles[g->create[c].profile].name, g->create[c].start);
        PUT("\n");
    }
#undef PUT
}
