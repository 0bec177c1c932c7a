/* sampler.c - the node agent's GPU sampler with health (see sampler.h). The backend is read
 * without the lock where only the loop's thread changes what is read (tenants), under it
 * where the samples change. */
#include "sampler.h"

#include "../base/clock.h"
#include "../base/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t default_ignored[] = {13, 31, 43, 45, 68, 109};

struct gs_sampler {
    struct gs_gpu_backend *b;
    struct gs_sampler_opts o;
    pthread_mutex_t mu;
    struct gs_gpus g;       /* under mu (g.n fixed) */
    struct gs_tenants next; /* gs_sampler_tenants' scratch (the loop's thread) */
};

struct gs_sampler *gs_sampler_new(struct gs_gpu_backend *b, const struct gs_sampler_opts *o)
{
    struct gs_sampler *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->b = b;
    s->o = *o;
    pthread_mutex_init(&s->mu, NULL);
    s->g.n = b->ops->count(b);
    if (s->g.n > GS_AGENT_MAX_GPUS)
        s->g.n = GS_AGENT_MAX_GPUS;
    for (int i = 0; i < s->g.n; i++) {
        b->ops->info(b, i, &s->g.info[i]);
        s->g.h[i].healthy = true;
        s->g.t.nproc[i] = -1;
    }
    return s;
}

void gs_sampler_free(struct gs_sampler *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static bool ignored(const struct gs_sampler_opts *o, uint64_t xid)
{
    for (size_t k = 0; k < sizeof(default_ignored) / sizeof(default_ignored[0]); k++)
        if (default_ignored[k] == xid)
            return true;
    for (int k = 0; k < o->nignore; k++)
        if (o->ignore_xids[k] == xid)
            return true;
    return false;
}

/* GPU i's MIG mode and instances as the backend has them now. Call with s->mu held. */
static void layout_of(struct gs_sampler *s, int i)
{
    struct gs_gpus *g = &s->g;
    s->b->ops->info(s->b, i, &g->info[i]);
    g->ninst[i] =
        g->info[i].mig_enabled ? s->b->ops->mig_list(s->b, i, g->inst[i], GS_AGENT_MAX_INST) : 0;
    if (g->ninst[i] < 0)
        g->ninst[i] = 0;
}

void gs_sampler_relayout(struct gs_sampler *s)
{
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->g.n; i++)
        layout_of(s, i);
    pthread_mutex_unlock(&s->mu);
}

/* GPU i's health from its readings and its last XID. Call with s->mu held. */
static void judge(struct gs_sampler *s, int i, double now)
{
    const struct gs_sampler_opts *o = &s->o;
    const struct gs_gpu_metrics *m = &s->g.m[i];
    struct gs_gpu_health *h = &s->g.h[i];
    bool was = h->healthy;
    h->healthy = true;
    h->why[0] = '\0';
    if (h->last_xid_t > 0 && now - h->last_xid_t < o->xid_hold_s) {
        h->healthy = false;
        snprintf(h->why, sizeof(h->why), "XID %llu", (unsigned long long)h->last_xid);
    } else if (m->ecc_uncorrected >= o->ecc_threshold && o->ecc_threshold > 0) {
        h->healthy = false;
        snprintf(h->why, sizeof(h->why), "%llu uncorrected ECC errors (threshold %llu)",
                 (unsigned long long)m->ecc_uncorrected, (unsigned long long)o->ecc_threshold);
    } else if (m->temp_c >= o->temp_threshold && o->temp_threshold > 0) {
        h->healthy = false;
        snprintf(h->why, sizeof(h->why), "temperature %u C (threshold %u C)", m->temp_c,
                 o->temp_threshold);
    }
    if (was != h->healthy)
        GS_WARN("agent", "GPU %d (%s) is %s%s%s", i, s->g.info[i].uuid,
                h->healthy ? "healthy again" : "Unhealthy", h->healthy ? "" : ": ", h->why);
}

int gs_sampler_xids(struct gs_sampler *s, int wait_ms)
{
    int gpu[32], critical = 0;
    uint64_t xid[32];
    int nx = s->b->ops->xids(s->b, wait_ms, gpu, xid, 32);
    double now = gs_clock_wall();
    pthread_mutex_lock(&s->mu);
    for (int k = 0; k < nx; k++) {
        if (gpu[k] < 0 || gpu[k] >= s->g.n)
            continue;
        if (ignored(&s->o, xid[k])) {
            GS_INFO("agent", "GPU %d: XID %llu (application error, ignored)", gpu[k],
                    (unsigned long long)xid[k]);
            continue;
        }
        s->g.h[gpu[k]].last_xid_t = now;
        s->g.h[gpu[k]].last_xid = xid[k];
        s->g.h[gpu[k]].xid_count++;
        critical++;
    }
    pthread_mutex_unlock(&s->mu);
    return critical;
}

void gs_sampler_measure(struct gs_sampler *s, bool judge_health)
{
    double now = gs_clock_wall();
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->g.n; i++) {
        struct gs_gpu_metrics m;
        memset(&m, 0, sizeof(m));
        s->g.measured[i] = s->b->ops->metrics(s->b, i, &m) == 0;
        s->g.m[i] = m;
        layout_of(s, i);
        if (judge_health && s->g.measured[i])
            judge(s, i, now);
    }
    pthread_mutex_unlock(&s->mu);
}

void gs_sampler_round(struct gs_sampler *s, int wait_ms)
{
    gs_sampler_xids(s, wait_ms);
    gs_sampler_measure(s, true);
}

void gs_sampler_tenants(struct gs_sampler *s)
{
    struct gs_tenants *t = &s->next;
    const struct gs_gpus *g = &s->g; /* its layout changes on this thread only */
    for (int i = 0; i < g->n; i++) {
        t->ninst[i] = 0;
        for (int q = 0; q < g->ninst[i]; q++) {
            struct gs_inst_reading *r = &t->inst[i][t->ninst[i]];
            r->gi_id = g->inst[i][q].gi_id;
            if (s->b->ops->mig_metrics(s->b, i, r->gi_id, &r->m) == 0)
                t->ninst[i]++;
        }
        t->nproc[i] = s->b->ops->processes(s->b, i, t->proc[i], GS_AGENT_MAX_PROCS);
        for (int k = 0; k < t->nproc[i]; k++) {
            struct gs_procpod pp;
            int rc = gs_procpod_read(s->o.proc_root, t->proc[i][k].pid, &pp);
            snprintf(t->proc_uid[i][k], sizeof(t->proc_uid[i][k]), "%s", rc ? "" : pp.pod_uid);
        }
    }
    pthread_mutex_lock(&s->mu);
    memcpy(&s->g.t, t, sizeof(*t));
    pthread_mutex_unlock(&s->mu);
}

int gs_sampler_count(const struct gs_sampler *s)
{
    return s->g.n;
}

void gs_sampler_read(struct gs_sampler *s, struct gs_gpus *out)
{
    pthread_mutex_lock(&s->mu);
    memcpy(out, &s->g, sizeof(*out));
    pthread_mutex_unlock(&s->mu);
}

int gs_sampler_health(struct gs_sampler *s, bool *healthy, int cap)
{
    pthread_mutex_lock(&s->mu);
    int n = s->g.n < cap ? s->g.n : cap;
    for (int i = 0; i < n; i++)
        healthy[i] = s->g.h[i].healthy;
    pthread_mutex_unlock(&s->mu);
    return n;
}

int gs_sampler_locate(struct gs_sampler *s, const char *id, int *gpu, int *start)
{
    *gpu = *start = -1;
    pthread_mutex_lock(&s->mu);
    const struct gs_gpus *g = &s->g;
    for (int i = 0; i < g->n && *gpu < 0; i++) {
        size_t ul = strlen(g->info[i].uuid);
        if (!strcmp(id, g->info[i].uuid) ||
            (!strncmp(id, g->info[i].uuid, ul) && !strncmp(id + ul, "::", 2)))
            *gpu = i;
        for (int q = 0; q < g->ninst[i] && *gpu < 0; q++)
            if (!strcmp(id, g->inst[i][q].uuid)) {
                *gpu = i;
                *start = (int)g->inst[i][q].start;
            }
    }
    pthread_mutex_unlock(&s->mu);
    return *gpu >= 0 ? 0 : -1;
}

/* GPU gpu's instance at start, or NULL. Call with s->mu held. */
static const struct gs_mig_inst *inst_at(const struct gs_gpus *g, int gpu, int start)
{
    for (int q = 0; q < g->ninst[gpu]; q++)
        if ((int)g->inst[gpu][q].start == start)
            return &g->inst[gpu][q];
    return NULL;
}

int gs_sampler_uuid(struct gs_sampler *s, int gpu, int start, char *out)
{
    int rc = -1;
    pthread_mutex_lock(&s->mu);
    if (gpu >= 0 && gpu < s->g.n) {
        const struct gs_mig_inst *mi = start < 0 ? NULL : inst_at(&s->g, gpu, start);
        const char *uuid = start < 0 ? s->g.info[gpu].uuid : mi ? mi->uuid : NULL;
        if (uuid) {
            snprintf(out, 96, "%s", uuid);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int gs_sampler_profile(struct gs_sampler *s, int gpu, int start, char *out, size_t size)
{
    int rc = -1;
    pthread_mutex_lock(&s->mu);
    const struct gs_mig_inst *mi =
        gpu >= 0 && gpu < s->g.n && start >= 0 ? inst_at(&s->g, gpu, start) : NULL;
    const char *name = mi ? gs_gpu_profile_name(s->g.info[gpu].model, mi->profile_id) : NULL;
    if (name) {
        snprintf(out, size, "%s", name);
        rc = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}
