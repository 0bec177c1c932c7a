/* toposim.c - topology-aware gangs beside small work, simulated (see toposim.h).
 *
 * Jobs are drawn up front from one seeded stream (the same arrivals for every policy); the
 * event queue (evheap.h) holds arrivals and departures; after each instant one cycle of the
 * daemon's code (core/cycle.c) runs over every pending pod, with the topology of core/topo.c
 * or without it, and the pods it binds start their jobs. */
#include "toposim.h"

#include "../base/error.h"
#include "../base/rng.h"
#include "../core/cycle.h"
#include "../core/topo.h"
#include "evheap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_KEY    GS_TOPOSCEN_BLOCK_KEY
#define SUBBLOCK_KEY GS_TOPOSCEN_SUBBLOCK_KEY
#define HOST_KEY     GS_TOPOSCEN_HOST_KEY

const struct gs_toposcen gs_toposim_default = {
    .blocks = 4,
    .subblocks = 2,
    .nodes = 4,
    .gpus = 8,
    /* 100, 200, 400 Gb/s; NVLink 900 GB/s */
    .link_gbs = {12.5, 25, 50, 900},
    .duration_s = 2 * 86400,
    .nclasses = 6,
    .cls =
        {
            {"train-8", 8, 1, GS_TOPO_REQUIRED, 2, 2.0, 0.4, 2, 16000, 0, 0.5},
            {"train-16", 4, 4, GS_TOPO_REQUIRED, 1, 1.0, 0.8, 6, 8000, 0, 0.5},
            {"train-32", 4, 8, GS_TOPO_REQUIRED, 0, 0.5, 1.2, 14, 4000, 0, 0.5},
            {"train-64", 8, 8, GS_TOPO_PREFERRED, 0, 0.2, 2.0, 26, 3000, 0, 0.5},
            {"infer-1", 1, 1, GS_TOPO_ANY, 0, 30, 0, 0, 0, 3600, 1.0},
            {"batch-2", 1, 2, GS_TOPO_ANY, 0, 20, 0, 0, 0, 1800, 0.8},
        },
};

static const char *const policy_names[GS_TOPOSIM_POLICIES] = {"gpusched", "kueue", "blind"};

const char *gs_toposim_policy_name(enum gs_toposim_policy p)
{
    return p >= 0 && p < GS_TOPOSIM_POLICIES ? policy_names[p] : "?";
}

enum { JOB_FUTURE = 0, JOB_PENDING, JOB_RUNNING, JOB_DONE };
enum { EV_ARRIVE = 0, EV_FINISH };

struct job {
    int cls;
    int state;
    double arrive, start, end;
    double work; /* training: steps; small: run time */
    int32_t pod0;
    bool fit_now; /* required gang: a domain of its level had room at this cycle's start */
};

struct spod {
    int32_t job;
    struct gs_request req;
    struct gs_alloc a;
};

struct run {
    const struct gs_toposcen *sp;
    enum gs_toposim_policy pol;
    struct gs_cluster c;
    struct gs_topo t;
    struct gs_engine *e;
    struct gs_typical typ; /* the engine's (it keeps a pointer) */
    struct job *jobs;
    int njobs;
    struct spod *pods;
    int npods;
    struct gs_evheap h;
    /* per cycle */
    struct gs_cyc_pod *cp;
    int32_t *cp_pod; /* cycle pod -> spod */
    struct gs_cyc_gang *cg;
    int32_t *cg_job;
    /* results */
    double *jct;
    int njct;
    double wait_sum, small_wait_sum;
    int nsmall;
    int span[GS_TOPOSIM_LINKS];
    int gangs_fit, gangs_inside;
};

static bool training(const struct gs_toposcen_class *k)
{
    return k->compute_s > 0;
}

static int build_cluster(struct run *r, struct gs_error *err)
{
    const struct gs_toposcen *sp = r->sp;
    int model = gs_catalog_find("H100-80GB");
    struct gs_topo_levels lv;
    memset(&lv, 0, sizeof(lv));
    gs_topo_levels_add(&lv, BLOCK_KEY);
    gs_topo_levels_add(&lv, SUBBLOCK_KEY);
    gs_topo_levels_add(&lv, HOST_KEY);
    for (int b = 0; b < sp->blocks; b++)
        for (int s = 0; s < sp->subblocks; s++)
            for (int n = 0; n < sp->nodes; n++) {
                char name[64], bv[16], sv[16];
                snprintf(name, sizeof(name), "gpu-b%d-s%d-n%d", b, s, n);
                snprintf(bv, sizeof(bv), "block-%d", b);
                snprintf(sv, sizeof(sv), "sub-%d", s);
                int id = gs_cluster_add_node(&r->c, name, model, sp->gpus, 16000LL * sp->gpus,
                                             128LL * 1024 * sp->gpus, GS_GPU_WHOLE, 0, NULL);
                if (id < 0 || gs_node_set_label(&r->c.nodes[id], BLOCK_KEY, bv) ||
                    gs_node_set_label(&r->c.nodes[id], SUBBLOCK_KEY, sv) ||
                    gs_node_set_label(&r->c.nodes[id], HOST_KEY, name))
                    return gs_error_set(err, GS_ENOMEM, "building the cluster: out of memory");
            }
    enum gs_topo_algo algo = r->pol == GS_TOPOSIM_KUEUE ? GS_TOPO_KUEUE : GS_TOPO_GPUSCHED;
    if (r->pol == GS_TOPOSIM_GPUSCHED) {
        double tot = 0;
        for (int k = 0; k < sp->nclasses; k++)
            if (training(&sp->cls[k]))
                tot += sp->cls[k].per_hour * sp->cls[k].pods * sp->cls[k].gpus;
        for (int k = 0; k < sp->nclasses && r->t.nshapes < GS_TOPO_SHAPES_MAX; k++) {
            const struct gs_toposcen_class *x = &sp->cls[k];
            if (training(x) && tot > 0)
                r->t.shapes[r->t.nshapes++] =
                    (struct gs_topo_shape){.gpus = x->pods * x->gpus,
                                           .level = (int8_t)x->level,
                                           .freq = x->per_hour * x->pods * x->gpus / tot};
        }
    }
    if (gs_topo_build(&r->t, &lv, algo, &r->c))
        return gs_error_set(err, GS_ENOMEM, "building the topology: out of memory");
    return 0;
}

static struct gs_request pod_req(const struct gs_toposcen_class *k)
{
    struct gs_request q;
    memset(&q, 0, sizeof(q));
    q.kind = GS_REQ_GPU;
    q.gpus = (uint8_t)k->gpus;
    q.milli = GS_MILLI;
    q.cpu_milli = 8000LL * k->gpus;
    q.mem_mib = 64LL * 1024 * k->gpus;
    return q;
}

static int cmp_arrive(const void *a, const void *b)
{
    const struct job *x = a, *y = b;
    if (x->arrive != y->arrive)
        return x->arrive < y->arrive ? -1 : 1;
    return x->cls - y->cls;
}

/* Every job of the run, by arrival, and their pods. */
static int draw_jobs(struct run *r, uint64_t seed, struct gs_error *err)
{
    const struct gs_toposcen *sp = r->sp;
    struct gs_rng rng;
    gs_rng_init(&rng, seed);
    int cap = 0;
    for (int k = 0; k < sp->nclasses; k++) {
        const struct gs_toposcen_class *x = &sp->cls[k];
        if (x->per_hour <= 0)
            continue;
        for (double t = gs_rng_exp(&rng, 3600 / x->per_hour); t < sp->duration_s;
             t += gs_rng_exp(&rng, 3600 / x->per_hour)) {
            if (r->njobs == cap) {
                struct job *nj = realloc(r->jobs, sizeof(*nj) * (size_t)(cap = cap * 2 + 64));
                if (!nj)
                    return gs_error_set(err, GS_ENOMEM, "out of memory");
                r->jobs = nj;
            }
            struct job *j = &r->jobs[r->njobs++];
            memset(j, 0, sizeof(*j));
            j->cls = k;
            j->arrive = t;
            j->work = training(x) ? gs_rng_lognormal(&rng, x->steps, x->sigma)
                                  : gs_rng_lognormal(&rng, x->median_s, x->sigma);
        }
    }
    qsort(r->jobs, (size_t)r->njobs, sizeof(*r->jobs), cmp_arrive);
    for (int i = 0; i < r->njobs; i++)
        r->npods += sp->cls[r->jobs[i].cls].pods;
    r->pods = calloc((size_t)r->npods + 1, sizeof(*r->pods));
    r->cp = calloc((size_t)r->npods + 1, sizeof(*r->cp));
    r->cp_pod = calloc((size_t)r->npods + 1, sizeof(*r->cp_pod));
    r->cg = calloc((size_t)r->njobs + 1, sizeof(*r->cg));
    r->cg_job = calloc((size_t)r->njobs + 1, sizeof(*r->cg_job));
    r->jct = calloc((size_t)r->njobs + 1, sizeof(*r->jct));
    if (!r->pods || !r->cp || !r->cp_pod || !r->cg || !r->cg_job || !r->jct)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    int p = 0;
    for (int i = 0; i < r->njobs; i++) {
        const struct gs_toposcen_class *x = &sp->cls[r->jobs[i].cls];
        r->jobs[i].pod0 = p;
        for (int m = 0; m < x->pods; m++, p++) {
            r->pods[p].job = i;
            r->pods[p].req = pod_req(x);
        }
        if (gs_evheap_push(&r->h, r->jobs[i].arrive, EV_ARRIVE, i, 0))
            return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    return 0;
}

/* The slowest link a job's pods span: an index into link_gbs. */
static int job_link(struct run *r, const struct job *j)
{
    int n = r->sp->cls[j->cls].pods;
    int32_t nodes[256];
    if (n > 256)
        n = 256;
    for (int m = 0; m < n; m++)
        nodes[m] = r->pods[j->pod0 + m].a.node;
    int s = gs_topo_shared_levels(&r->t, nodes, n);
    return s < GS_TOPOSIM_LINKS ? s : GS_TOPOSIM_LINKS - 1;
}

static int start_job(struct run *r, int ji, double now)
{
    struct job *j = &r->jobs[ji];
    const struct gs_toposcen_class *x = &r->sp->cls[j->cls];
    j->state = JOB_RUNNING;
    j->start = now;
    double run = j->work;
    if (training(x)) {
        int link = job_link(r, j);
        double n = (double)x->pods * x->gpus;
        double ar = n > 1 ? 2 * (n - 1) / n * x->grad_gb / r->sp->link_gbs[link] : 0;
        run = j->work * (x->compute_s + ar);
        r->span[link]++;
        if (x->mode == GS_TOPO_REQUIRED && j->fit_now) {
            r->gangs_fit++;
            r->gangs_inside += link > x->level;
        }
    }
    j->end = now + run;
    return gs_evheap_push(&r->h, j->end, EV_FINISH, ji, 0);
}

static void finish_job(struct run *r, int ji)
{
    struct job *j = &r->jobs[ji];
    const struct gs_toposcen_class *x = &r->sp->cls[j->cls];
    for (int m = 0; m < x->pods; m++)
        gs_cluster_unbind(&r->c, &r->pods[j->pod0 + m].req, &r->pods[j->pod0 + m].a);
    j->state = JOB_DONE;
    double wait = j->start - j->arrive;
    if (training(x)) {
        r->jct[r->njct++] = j->end - j->arrive;
        r->wait_sum += wait;
    } else {
        r->small_wait_sum += wait;
        r->nsmall++;
    }
}

/* One cycle over every pending pod; the jobs whose pods all bound start. */
static int cycle(struct run *r, double now, struct gs_error *err)
{
    int np = 0, ng = 0;
    for (int i = 0; i < r->njobs; i++) {
        struct job *j = &r->jobs[i];
        if (j->state != JOB_PENDING)
            continue;
        const struct gs_toposcen_class *x = &r->sp->cls[j->cls];
        int g = -1;
        if (training(x)) {
            g = ng++;
            r->cg[g] = (struct gs_cyc_gang){.min_member = x->pods,
                                            .topo = {(int8_t)x->mode, (int8_t)x->level}};
            r->cg_job[g] = i;
            j->fit_now = x->mode == GS_TOPO_REQUIRED &&
                         gs_topo_max_room(&r->t, &r->c, &r->pods[j->pod0].req, x->level) >= x->pods;
        }
        for (int m = 0; m < x->pods; m++) {
            struct gs_cyc_pod *p = &r->cp[np];
            memset(p, 0, sizeof(*p));
            p->req = r->pods[j->pod0 + m].req;
            p->queue = GS_QUEUE_NONE;
            p->gang = g;
            p->seq = (uint64_t)(j->pod0 + m);
            p->nominated = -1;
            p->due = true;
            r->cp_pod[np++] = j->pod0 + m;
        }
    }
    if (np == 0)
        return 0;
    struct gs_cycle_in in = {.c = &r->c,
                             .e = r->e,
                             .pods = r->cp,
                             .npods = np,
                             .gangs = r->cg,
                             .ngangs = ng,
                             .now_s = now,
                             .topo = r->pol == GS_TOPOSIM_BLIND ? NULL : &r->t};
    struct gs_cycle_out out;
    gs_cycle_out_init(&out);
    int rc = gs_cycle_run(&in, &out);
    for (int k = 0; k < out.n && !rc; k++)
        if (out.d[k].kind == GS_CYC_BIND)
            r->pods[r->cp_pod[out.d[k].pod]].a = out.d[k].alloc;
    /* a job starts when every pod of it bound (gangs: in this one cycle) */
    for (int k = 0; k < out.n && !rc; k++) {
        if (out.d[k].kind != GS_CYC_BIND)
            continue;
        int32_t ji = r->pods[r->cp_pod[out.d[k].pod]].job;
        struct job *j = &r->jobs[ji];
        if (j->state == JOB_PENDING &&
            r->cp_pod[out.d[k].pod] == j->pod0 + r->sp->cls[j->cls].pods - 1)
            rc = start_job(r, ji, now);
    }
    gs_cycle_out_release(&out);
    return rc ? gs_error_set(err, rc, "cycle at %.0fs failed", now) : 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run_release(struct run *r)
{
    gs_engine_free(r->e);
    gs_topo_release(&r->t);
    gs_cluster_release(&r->c);
    gs_evheap_release(&r->h);
    free(r->jobs);
    free(r->pods);
    free(r->cp);
    free(r->cp_pod);
    free(r->cg);
    free(r->cg_job);
    free(r->jct);
}

static int run_events(struct run *r, struct gs_error *err)
{
    int rc = 0;
    while (!rc && gs_evheap_len(&r->h) > 0) {
        double now = gs_evheap_peek(&r->h)->t;
        while (gs_evheap_len(&r->h) > 0 && gs_evheap_peek(&r->h)->t == now) {
            struct gs_event ev = gs_evheap_pop(&r->h);
            if (ev.type == EV_ARRIVE)
                r->jobs[ev.id].state = JOB_PENDING;
            else
                finish_job(r, ev.id);
        }
        rc = cycle(r, now, err);
    }
    return rc;
}

int gs_toposim_run(const struct gs_toposcen *sp, enum gs_toposim_policy pol, uint64_t seed,
                   struct gs_toposim_result *out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    if (sp->blocks < 1 || sp->subblocks < 1 || sp->nodes < 1 || sp->gpus < 1 ||
        sp->gpus > GS_MAX_GPUS_NODE || sp->nclasses < 1 || sp->nclasses > GS_TOPOSCEN_MAX_CLASSES)
        return gs_error_set(err, GS_EINVAL, "topology scenario: bad cluster or classes");
    for (int k = 0; k < sp->nclasses; k++) {
        const struct gs_toposcen_class *x = &sp->cls[k];
        if (x->pods < 1 || x->pods > GS_CYCLE_GANG_MAX || x->gpus < 1 || x->gpus > sp->gpus ||
            x->level < 0 || x->level > 2)
            return gs_error_set(err, GS_EINVAL, "class '%s': bad pods, GPUs or level", x->name);
    }
    struct run r;
    memset(&r, 0, sizeof(r));
    r.sp = sp;
    r.pol = pol;
    gs_cluster_init(&r.c);
    gs_topo_init(&r.t);
    gs_evheap_init(&r.h);
    int rc = build_cluster(&r, err);
    if (!rc)
        rc = draw_jobs(&r, seed, err);
    if (!rc) {
        struct gs_request typ[GS_TOPOSCEN_MAX_CLASSES];
        for (int k = 0; k < sp->nclasses; k++)
            typ[k] = pod_req(&sp->cls[k]);
        gs_typical_build(typ, sp->nclasses, 95, &r.typ);
        r.e = gs_engine_new(gs_policy_find("gpusched"), &r.typ, gs_cycle_engine_nodes(r.c.nnodes),
                            seed);
        if (!r.e)
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    if (!rc)
        rc = run_events(&r, err);
    if (!rc) {
        qsort(r.jct, (size_t)r.njct, sizeof(double), cmp_dbl);
        double s = 0;
        for (int i = 0; i < r.njct; i++)
            s += r.jct[i];
        out->jobs = r.njct;
        out->jct_mean = r.njct ? s / r.njct : 0;
        out->jct_p95 = r.njct ? r.jct[(int)floor(0.95 * (r.njct - 1))] : 0;
        out->wait_mean = r.njct ? r.wait_sum / r.njct : 0;
        out->small = r.nsmall;
        out->small_wait_mean = r.nsmall ? r.small_wait_sum / r.nsmall : 0;
        for (int l = 0; l < GS_TOPOSIM_LINKS; l++)
            out->span[l] = r.njct ? (double)r.span[l] / r.njct : 0;
        out->gangs_fit = r.gangs_fit;
        out->gangs_inside = r.gangs_inside;
        for (int i = 0; i < r.njobs; i++)
            out->pending_end += r.jobs[i].state != JOB_DONE;
    }
    run_release(&r);
    return rc;
}

int gs_toposim_report(const struct gs_toposcen *sp, uint64_t lo, uint64_t hi, bool json,
                      struct gs_buf *o, struct gs_error *err)
{
    int nseeds = (int)(hi - lo + 1);
    if (hi < lo || nseeds > 1000)
        return gs_error_set(err, GS_EINVAL, "seeds %llu-%llu: expected LO <= HI, at most 1000",
                            (unsigned long long)lo, (unsigned long long)hi);
    struct gs_toposim_result m[GS_TOPOSIM_POLICIES];
    double inside[GS_TOPOSIM_POLICIES];
    memset(m, 0, sizeof(m));
    int rc = 0;
    for (int p = 0; p < GS_TOPOSIM_POLICIES && !rc; p++) {
        long fit = 0, in = 0;
        for (int i = 0; i < nseeds && !rc; i++) {
            struct gs_toposim_result x;
            rc = gs_toposim_run(sp, (enum gs_toposim_policy)p, lo + (uint64_t)i, &x, err);
            fit += x.gangs_fit;
            in += x.gangs_inside;
            m[p].jobs += x.jobs;
            m[p].small += x.small;
            m[p].pending_end += x.pending_end;
            m[p].jct_mean += x.jct_mean / nseeds;
            m[p].jct_p95 += x.jct_p95 / nseeds;
            m[p].wait_mean += x.wait_mean / nseeds;
            m[p].small_wait_mean += x.small_wait_mean / nseeds;
            for (int l = 0; l < GS_TOPOSIM_LINKS; l++)
                m[p].span[l] += x.span[l] / nseeds;
        }
        m[p].gangs_fit = (int)fit;
        m[p].gangs_inside = (int)in;
        inside[p] = fit ? 100.0 * (double)in / (double)fit : 100;
    }
    if (rc)
        return rc;
    double blind = m[GS_TOPOSIM_BLIND].jct_mean;
    int gpus = sp->blocks * sp->subblocks * sp->nodes * sp->gpus;
    if (json) {
        rc |= gs_buf_printf(o, "{\"gpus\":%d,\"seeds\":[%llu,%llu],\"policies\":[", gpus,
                            (unsigned long long)lo, (unsigned long long)hi);
        for (int p = 0; p < GS_TOPOSIM_POLICIES; p++)
            rc |=
                gs_buf_printf(o,
                              "%s{\"policy\":\"%s\",\"inside_required_pct\":%.2f,\"gangs_fit\":%d,"
                              "\"jct_mean_s\":%.1f,\"jct_p95_s\":%.1f,\"wait_mean_s\":%.1f,"
                              "\"small_wait_mean_s\":%.1f,\"jct_vs_blind_pct\":%.2f,\"jobs\":%d,"
                              "\"across_blocks\":%.4f,\"pending_end\":%d}",
                              p ? "," : "", policy_names[p], inside[p], m[p].gangs_fit,
                              m[p].jct_mean, m[p].jct_p95, m[p].wait_mean, m[p].small_wait_mean,
                              blind > 0 ? 100 * (m[p].jct_mean - blind) / blind : 0, m[p].jobs,
                              m[p].span[0], m[p].pending_end);
        rc |= gs_buf_puts(o, "]}\n");
        return rc ? gs_error_set(err, GS_ENOMEM, "out of memory") : 0;
    }
    rc |= gs_buf_printf(o,
                        "topology-aware gangs: %d blocks x %d subblocks x %d nodes x %d GPUs "
                        "(%d GPUs); links %.0f/%.0f/%.0f Gb/s across blocks/subblocks/nodes, "
                        "%.0f GB/s in a node; %.0fh of arrivals, seeds %llu-%llu\n\n",
                        sp->blocks, sp->subblocks, sp->nodes, sp->gpus, gpus, sp->link_gbs[0] * 8,
                        sp->link_gbs[1] * 8, sp->link_gbs[2] * 8, sp->link_gbs[3],
                        sp->duration_s / 3600, (unsigned long long)lo, (unsigned long long)hi);
    rc |= gs_buf_printf(o, "%-9s %11s %10s %10s %10s %10s %9s %12s %8s\n", "policy", "in-domain %",
                        "JCT mean h", "JCT p95 h", "wait h", "small wait", "vs blind",
                        "across-block", "jobs");
    for (int p = 0; p < GS_TOPOSIM_POLICIES; p++)
        rc |= gs_buf_printf(o, "%-9s %11.1f %10.2f %10.2f %10.2f %9.1fm %8.1f%% %11.1f%% %8d\n",
                            policy_names[p], inside[p], m[p].jct_mean / 3600, m[p].jct_p95 / 3600,
                            m[p].wait_mean / 3600, m[p].small_wait_mean / 60,
                            blind > 0 ? 100 * (m[p].jct_mean - blind) / blind : 0,
                            100 * m[p].span[0], m[p].jobs);
    rc |= gs_buf_printf(o,
                        "\nin-domain: required gangs placed inside one domain of their level, "
                        "of those placed while one had room (%d, %d, %d gangs)\n",
                        m[0].gangs_fit, m[1].gangs_fit, m[2].gangs_fit);
    return rc ? gs_error_set(err, GS_ENOMEM, "out of memory") : 0;
}
