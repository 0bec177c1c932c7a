/* frag.c - FGD's fragmentation measure and a per-thread memo keyed by node state; the fgd
 * and gpusched placement policies (policy.c) call it for every candidate node. */
#include "frag.h"
#include "../base/hash.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct shape_count {
    struct gs_shape s;
    double count;
};

static int shape_key_cmp(const struct gs_shape *a, const struct gs_shape *b)
{
    /* the order FGD's simulator uses to break frequency ties: cpu, milli, gpus, model */
    if (a->cpu != b->cpu)
        return a->cpu < b->cpu ? -1 : 1;
    if (a->milli != b->milli)
        return a->milli < b->milli ? -1 : 1;
    if (a->gpus != b->gpus)
        return a->gpus < b->gpus ? -1 : 1;
    if (a->model_mask != b->model_mask)
        return a->model_mask < b->model_mask ? -1 : 1;
    return 0;
}

static int by_count_desc(const void *pa, const void *pb)
{
    const struct shape_count *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return -shape_key_cmp(&a->s, &b->s);
}

int gs_typical_build(const struct gs_request *reqs, int n, int threshold_pct,
                     struct gs_typical *out)
{
    memset(out, 0, sizeof(*out));
    int cap = 1024, ns = 0;
    struct shape_count *sc = calloc((size_t)cap, sizeof(*sc));
    if (!sc)
        return 0;
    double total = 0;
    for (int i = 0; i < n; i++) {
        const struct gs_request *r = &reqs[i];
        if (r->kind == GS_REQ_MIG)
            continue;
        struct gs_shape s = {.cpu = r->cpu_milli,
                             .milli = r->kind == GS_REQ_NONE ? 0 : r->milli,
                             .gpus = r->kind == GS_REQ_NONE ? 0 : r->gpus,
                             .model_mask = r->model_mask};
        int k;
        for (k = 0; k < ns; k++)
            if (shape_key_cmp(&sc[k].s, &s) == 0)
                break;
        if (k == ns) {
            if (ns == cap) {
                struct shape_count *p = realloc(sc, sizeof(*sc) * (size_t)cap * 2);
                if (!p)
                    break;
                sc = p;
                cap *= 2;
            }
            sc[ns].s = s;
            sc[ns].count = 0;
            ns++;
        }
        sc[k].count += 1;
        total += 1;
    }
    qsort(sc, (size_t)ns, sizeof(*sc), by_count_desc);
    double want = threshold_pct * total / 100.0, cum = 0;
    int i = 0;
    while (cum < want && i < ns && i < GS_MAX_SHAPES) {
        cum += sc[i].count;
        i++;
    }
    for (int k = 0; k < i; k++) {
        out->s[k] = sc[k].s;
        out->s[k].freq = sc[k].count / cum;
    }
    out->n = i;
    free(sc);
    return i;
}

bool gs_typical_model_share(const struct gs_typical *t, const double *gpus, double *share)
{
    double all = 0;
    for (int m = 0; m < 32; m++)
        share[m] = 0;
    for (int k = 0; k < t->n; k++) {
        const struct gs_shape *s = &t->s[k];
        double d = s->freq * s->gpus * s->milli, of = 0;
        all += d;
        for (int m = 0; m < 32; m++)
            of += s->model_mask & (1u << m) ? gpus[m] : 0;
        for (int m = 0; m < 32 && of > 0; m++)
            share[m] += s->model_mask & (1u << m) ? d * gpus[m] / of : 0;
    }
    bool any = false;
    for (int m = 0; m < 32; m++) {
        share[m] = all > 0 ? share[m] / all : 0;
        any |= share[m] > 0;
    }
    return any;
}

double gs_frag_state(const struct gs_typical *t, enum gs_frag_mode mode, int model,
                     int64_t cpu_free, const int16_t *free, int ngpus)
{
    int64_t total = 0;
    for (int g = 0; g < ngpus; g++)
        total += free[g];
    if (total == 0)
        return 0;
    double f = 0;
    for (int k = 0; k < t->n; k++) {
        const struct gs_shape *s = &t->s[k];
        bool foreign = s->model_mask && (model < 0 || !(s->model_mask & (1u << model)));
        if (foreign && mode == GS_FRAG_HOSTABLE)
            continue;
        if (s->milli == 0 || foreign) {
            f += s->freq * (double)total;
            continue;
        }
        int fit = 0;
        int64_t small = 0;
        for (int g = 0; g < ngpus; g++) {
            if (free[g] >= s->milli)
                fit++;
            else
                small += free[g];
        }
        if (fit >= s->gpus && cpu_free >= s->cpu)
            f += s->freq * (double)small;
        else
            f += s->freq * (double)total;
    }
    return f;
}

#define MEMO_BITS 18
#define MEMO_SIZE (1u << MEMO_BITS)

struct memo_entry {
    uint64_t h; /* 0 = empty */
    int64_t cpu;
    int16_t model;
    uint8_t n;
    int16_t g[8];
    double v;
};

struct gs_frag_memo {
    struct memo_entry *e;
    uint32_t used;
    enum gs_frag_mode mode;
};

struct gs_frag_memo *gs_frag_memo_new(enum gs_frag_mode mode)
{
    struct gs_frag_memo *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->mode = mode;
    m->e = calloc(MEMO_SIZE, sizeof(*m->e));
    if (!m->e) {
        free(m);
        return NULL;
    }
    return m;
}

void gs_frag_memo_free(struct gs_frag_memo *m)
{
    if (!m)
        return;
    free(m->e);
    free(m);
}

double gs_frag_memo_get(struct gs_frag_memo *m, const struct gs_typical *t, int model,
                        int64_t cpu_free, const int16_t *free, int ngpus)
{
    if (ngpus > 8 || !m)
        return gs_frag_state(t, m ? m->mode : GS_FRAG_FGD, model, cpu_free, free, ngpus);
    int16_t g[8];
    memcpy(g, free, sizeof(int16_t) * (size_t)ngpus);
    /* insertion sort, descending: the measure ignores GPU order */
    for (int a = 1; a < ngpus; a++) {
        int16_t v = g[a];
        int b = a - 1;
        while (b >= 0 && g[b] < v) {
            g[b + 1] = g[b];
            b--;
        }
        g[b + 1] = v;
    }
    uint64_t h = gs_hash_step(GS_HASH_FNV_OFFSET, (uint64_t)(model + 1));
    h = gs_hash_step(h, (uint64_t)cpu_free);
    for (int i = 0; i < ngpus; i++)
        h = gs_hash_step(h, (uint64_t)(uint16_t)g[i]);
    h ^= h >> 29;
    if (!h)
        h = 1;
    uint32_t idx = (uint32_t)h & (MEMO_SIZE - 1);
    for (;;) {
        struct memo_entry *e = &m->e[idx];
        if (e->h == 0)
            break;
        if (e->h == h && e->cpu == cpu_free && e->model == model && e->n == ngpus &&
            memcmp(e->g, g, sizeof(int16_t) * (size_t)ngpus) == 0)
            return e->v;
        idx = (idx + 1) & (MEMO_SIZE - 1);
    }
    double v = gs_frag_state(t, m->mode, model, cpu_free, g, ngpus);
    if (m->used > MEMO_SIZE / 10 * 7) {
        memset(m->e, 0, sizeof(*m->e) * MEMO_SIZE);
        m->used = 0;
        idx = (uint32_t)h & (MEMO_SIZE - 1);
    }
    struct memo_entry *e = &m->e[idx];
    e->h = h;
    e->cpu = cpu_free;
    e->model = (int16_t)model;
    e->n = (uint8_t)ngpus;
    memcpy(e->g, g, sizeof(int16_t) * (size_t)ngpus);
    e->v = v;
    m->used++;
    return v;
}
