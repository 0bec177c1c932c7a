/* sim.c - `gpusched sim`: the embedded default scenario, scenario files and the openb
 * trace experiment. Parses flags, calls sim/, prints tables or JSON. */
#include "cli.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../sim/dra.h"
#include "../sim/openb.h"
#include "../sim/openbvar.h"
#include "../sim/toposim.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sim_usage(FILE *f)
{
    fprintf(f, "usage: gpusched sim                      run the embedded default scenario\n"
               "       gpusched sim scenario FILE [--format table|json] [--report OUT.html]\n"
               "                                         [--seed N]\n"
               "                          [--decisions STRATEGY [--until 0s]]  one strategy's\n"
               "                          decisions per cycle, as the scheduler's explain\n"
               "                          --output decisions prints them (and a SCALE line\n"
               "                          per autoscaler change of a service)\n"
               "       gpusched sim openb --nodes FILE --pods FILE[,FILE...]|FOLDER\n"
               "                          [--policy NAME[,NAME...]] [--seeds LO-HI] [--tune X]\n"
               "                          [--threads N] [--format table|json]\n"
               "                          [--variant KIND=PCT[,...] [--variant-seed N]]\n"
               "                          policy 'offline': an offline packer's unallocated\n"
               "                          share (achievable, and each of its candidates) and a\n"
               "                          proven lower bound; several pod lists (a folder:\n"
               "                          its openb_pod_list_*.csv) run in one pool, with\n"
               "                          gpusched against fgd per trace\n"
               "       gpusched sim openb-variant --pods FILE --nodes FILE --variant\n"
               "                          KIND=PCT[,...] [--seed N] --out FILE  write a variant\n"
               "                          of a pod list (FGD's workload variations): KIND is\n"
               "                          gpushare (%% of GPU from sharing pods), multigpu\n"
               "                          (%% from multi-GPU pods), gpuspec (%% of GPU pods\n"
               "                          naming a model, by fleet), gpuspecmix (the same, with\n"
               "                          the model sets FGD's published traces name),\n"
               "                          gpuspecskew (the same, models by a seeded random\n"
               "                          popularity) or cpu (%% of CPU-only pods)\n"
               "       gpusched sim dra [--seeds LO-HI] [--nodes N] [--gpus G] [--model M]\n"
               "                          [--format table|json]  DRA on partitionable GPUs:\n"
               "                          kube-scheduler's first fit against gpusched's\n"
               "                          allocator on a MIG-heavy workload (sim/dra.h)\n"
               "       gpusched sim topo [--scenario FILE] [--seeds LO-HI] [--blocks N]\n"
               "                          [--subblocks N] [--nodes N] [--hours H]\n"
               "                          [--format table|json]\n"
               "                          topology-aware training gangs beside small work:\n"
               "                          gpusched against Kueue's BestFit and topology-blind\n"
               "                          placement, job completion times (sim/toposim.h)\n"
               "\n"
               "policies:");
    for (int i = 0; i < gs_policy_count(); i++)
        fprintf(f, "%s %s", i ? "," : "", gs_policy_get(i)->name);
    fprintf(f, " (or 'all')\n");
}

/* --seeds N or LO-HI: at most f->hi + 1 seeds */
struct seeds {
    uint64_t lo, hi;
};

static int seeds_flag(const struct gs_cli_flag *f, const char *s, void *field)
{
    struct seeds *sd = field;
    char a[32];
    const char *dash = strchr(s, '-');
    if (!dash) {
        if (gs_cli_u64(s, &sd->lo))
            return GS_EINVAL;
        sd->hi = sd->lo;
    } else {
        size_t l = (size_t)(dash - s);
        if (l == 0 || l >= sizeof(a))
            return GS_EINVAL;
        memcpy(a, s, l);
        a[l] = '\0';
        if (gs_cli_u64(a, &sd->lo) || gs_cli_u64(dash + 1, &sd->hi) || sd->hi < sd->lo)
            return GS_EINVAL;
    }
    return (double)(sd->hi - sd->lo) > f->hi ? GS_EINVAL : 0;
}

struct openb_cli {
    const char *nodes, *pods, *policy, *format, *variant;
    uint64_t vseed, threads;
    struct seeds seeds;
    double tune;
};

#define O struct openb_cli
static const struct gs_cli_flag openb_flags[] = {
    GS_CLI_STR("--nodes", O, nodes, "FILE: openb node list"),
    GS_CLI_STR("--pods", O, pods,
               "FILE[,FILE...] or FOLDER: openb pod lists (a folder: its openb_pod_list_*.csv)"),
    GS_CLI_STR("--policy", O, policy, "NAME[,NAME...]: policies, or all"),
    GS_CLI_STR("--format", O, format, "table|json"),
    GS_CLI_STR("--variant", O, variant, "KIND=PCT[,...]: a workload variant"),
    GS_CLI_UINT("--variant-seed", O, vseed, 1e20, "N", "N: the variant's seed"),
    GS_CLI_FN("--seeds", offsetof(O, seeds), seeds_flag, 0, 1e20, "N or LO-HI", "LO-HI: seeds"),
    GS_CLI_REAL("--tune", O, tune, 0, 100, "a number in 0..100", "X: arrival tuning"),
    GS_CLI_UINT("--threads", O, threads, 64, "0..64", "N: threads (0: CPUs)"),
    {0},
};
#undef O

#define OPENB_MAX_TRACES 64

/* The traces of one experiment: each pod list's path and pods. */
struct openb_traces {
    int n;
    char *path[OPENB_MAX_TRACES];
    struct gs_openb_pod *pods[OPENB_MAX_TRACES];
    int npods[OPENB_MAX_TRACES];
};

static void traces_release(struct openb_traces *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->path[i]);
        free(t->pods[i]);
    }
    t->n = 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One --pods entry into t: a file, or a folder's openb_pod_list_*.csv by name. Returns 0 or
 * a negative error (said why). */
static int traces_add(struct openb_traces *t, const char *entry)
{
    DIR *d = opendir(entry);
    if (!d) {
        if (t->n == OPENB_MAX_TRACES) {
            fprintf(stderr, "gpusched sim openb: --pods: more than %d pod lists\n",
                    OPENB_MAX_TRACES);
            return GS_EINVAL;
        }
        t->path[t->n++] = strdup(entry);
        return t->path[t->n - 1] ? 0 : GS_ENOMEM;
    }
    int first = t->n, rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) && !rc) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, "openb_pod_list_", 15) != 0 || l < 4 ||
            strcmp(de->d_name + l - 4, ".csv") != 0)
            continue;
        if (t->n == OPENB_MAX_TRACES) {
            fprintf(stderr, "gpusched sim openb: --pods: more than %d pod lists\n",
                    OPENB_MAX_TRACES);
            rc = GS_EINVAL;
            break;
        }
        size_t n = strlen(entry) + l + 2;
        t->path[t->n] = malloc(n);
        if (!t->path[t->n]) {
            rc = GS_ENOMEM;
            break;
        }
        snprintf(t->path[t->n++], n, "%s/%s", entry, de->d_name);
    }
    closedir(d);
    if (!rc && t->n == first) {
        fprintf(stderr, "gpusched sim openb: --pods: folder '%s' holds no openb_pod_list_*.csv\n",
                entry);
        rc = GS_EINVAL;
    }
    qsort(&t->path[first], (size_t)(t->n - first), sizeof(t->path[0]), by_name);
    return rc;
}
/* The policies --policy names into pols (32 at most): their count, or -1 (said why). */
static int openb_policies(const char *pol, const struct gs_policy **pols)
{
    int np = 0;
    if (strcmp(pol, "all") == 0) {
        for (int i = 0; i < gs_policy_count(); i++)
            pols[np++] = gs_policy_get(i);
        pols[np++] = gs_openb_offline_policy();
        return np;
    }
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", pol);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const struct gs_policy *p =
            strcmp(t, "offline") == 0 ? gs_openb_offline_policy() : gs_policy_find(t);
        if (!p || np >= 32) {
            fprintf(stderr, "gpusched sim openb: --policy: unknown policy '%s'\n", t);
            sim_usage(stderr);
            return -1;
        }
        pols[np++] = p;
    }
    return np;
}

/* One trace's results as a JSON array. */
static json_t *openb_json_results(const struct gs_openb_result *res, int np)
{
    json_t *arr = json_array();
    for (int p = 0; p < np; p++) {
        json_t *o = json_object();
        json_object_set_new(o, "policy", json_string(res[p].policy->name));
        json_object_set_new(o, "unallocated_gpu_pct_at_100", json_real(res[p].unalloc_mean));
        json_object_set_new(o, "unallocated_gpu_pct_at_100_std", json_real(res[p].unalloc_std));
        bool off = res[p].policy == gs_openb_offline_policy();
        if (off) {
            json_object_set_new(o, "lower_bound_unallocated_gpu_pct_at_100",
                                json_real(res[p].bound_mean));
            json_object_set_new(o, "lower_bound_unallocated_gpu_pct_at_100_std",
                                json_real(res[p].bound_std));
            json_t *cands = json_object();
            for (int w = 0; w < GS_OPENB_CANDIDATES; w++)
                json_object_set_new(cands, gs_openb_cand_name(w),
                                    json_pack("{s:f,s:f}", "unallocated_gpu_pct_at_100",
                                              res[p].cand_mean[w], "unallocated_gpu_pct_at_100_std",
                                              res[p].cand_std[w]));
            json_object_set_new(o, "candidates", cands);
        }
        json_t *per = json_array();
        for (int s = 0; s < res[p].nruns; s++) {
            const struct gs_openb_run *run = &res[p].runs[s];
            json_t *so = json_object();
            json_object_set_new(so, "seed", json_integer((json_int_t)run->seed));
            json_object_set_new(so, "unallocated_gpu_pct_at_100", json_real(run->unalloc_at_100));
            if (off) {
                json_object_set_new(so, "lower_bound_unallocated_gpu_pct_at_100",
                                    json_real(run->bound_at_100));
                json_t *cands = json_object();
                for (int w = 0; w < GS_OPENB_CANDIDATES; w++)
                    json_object_set_new(cands, gs_openb_cand_name(w),
                                        json_real(run->cand_at_100[w]));
                json_object_set_new(so, "candidates", cands);
            }
            json_object_set_new(so, "pods", json_integer(run->pods));
            json_object_set_new(so, "failed_pods", json_integer(run->failed));
            json_array_append_new(per, so);
        }
        json_object_set_new(o, "runs", per);
        json_t *curve = json_array();
        for (int b = 0; b < GS_OPENB_CURVE; b++) {
            json_t *pt = json_object();
            json_object_set_new(pt, "arrived_pct", json_integer(b));
            json_object_set_new(pt, "allocated_pct",
                                isnan(res[p].curve_mean[b]) ? json_null()
                                                            : json_real(res[p].curve_mean[b]));
            json_array_append_new(curve, pt);
        }
        json_object_set_new(o, "curve", curve);
        json_array_append_new(arr, o);
    }
    return arr;
}

/* A share as JSON: null where it is not defined (NaN). */
static json_t *json_share(double x)
{
    return isnan(x) ? json_null() : json_real(x);
}

/* The gap summary over the traces that ran fgd, gpusched and offline (NULL when none did). */
static json_t *openb_json_gaps(const struct openb_traces *t, const struct gs_openb_result *res,
                               int np)
{
    json_t *arr = json_array();
    double sum[3] = {0};
    int cnt[3] = {0};
    for (int i = 0; i < t->n; i++) {
        struct gs_openb_gap g;
        if (!gs_openb_gap(&res[i * np], np, &g))
            continue;
        json_array_append_new(arr, json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:o,s:o,s:o}", "pods_file",
                                             t->path[i], "fgd", g.fgd, "gpusched", g.gpusched,
                                             "offline", g.offline, "offline_without_gpusched",
                                             g.independent, "lower_bound", g.bound, "gap_closed",
                                             json_share(g.closed), "gap_closed_without_gpusched",
                                             json_share(g.closed_independent),
                                             "gap_closed_to_bound", json_share(g.closed_bound)));
        double sh[3] = {g.closed, g.closed_independent, g.closed_bound};
        for (int k = 0; k < 3; k++)
            if (!isnan(sh[k])) {
                sum[k] += sh[k];
                cnt[k]++;
            }
    }
    if (json_array_size(arr) == 0) {
        json_decref(arr);
        return NULL;
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "traces", arr, "mean_gap_closed",
                     json_share(cnt[0] ? sum[0] / cnt[0] : NAN), "mean_gap_closed_without_gpusched",
                     json_share(cnt[1] ? sum[1] / cnt[1] : NAN), "mean_gap_closed_to_bound",
                     json_share(cnt[2] ? sum[2] / cnt[2] : NAN));
}

static void openb_json(const struct openb_cli *c, const struct openb_traces *t,
                       const struct gs_openb_result *res, int np)
{
    json_t *root = json_object();
    json_object_set_new(root, "nodes_file", json_string(c->nodes));
    if (t->n == 1)
        json_object_set_new(root, "pods_file", json_string(t->path[0]));
    json_object_set_new(root, "seeds",
                        json_sprintf("%llu-%llu", (unsigned long long)c->seeds.lo,
                                     (unsigned long long)c->seeds.hi));
    json_object_set_new(root, "tune", json_real(c->tune));
    if (c->variant) {
        json_object_set_new(root, "variant", json_string(c->variant));
        json_object_set_new(root, "variant_seed", json_integer((json_int_t)c->vseed));
    }
    if (t->n == 1) {
        json_object_set_new(root, "results", openb_json_results(res, np));
    } else {
        json_t *arr = json_array();
        for (int i = 0; i < t->n; i++)
            json_array_append_new(arr, json_pack("{s:s,s:i,s:o}", "pods_file", t->path[i], "pods",
                                                 t->npods[i], "results",
                                                 openb_json_results(&res[i * np], np)));
        json_object_set_new(root, "traces", arr);
    }
    json_t *gaps = openb_json_gaps(t, res, np);
    if (gaps)
        json_object_set_new(root, "gpusched_against_fgd", gaps);
    char *s = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    if (s)
        puts(s);
    free(s);
    json_decref(root);
}

static void openb_table_results(const struct gs_openb_result *res, int np)
{
    printf("%-12s %22s %8s %10s\n", "policy", "unallocated@100% (%)", "std", "alloc@130%");
    for (int p = 0; p < np; p++) {
        if (res[p].policy != gs_openb_offline_policy()) {
            printf("%-12s %22.2f %8.2f %10.2f\n", res[p].policy->name, res[p].unalloc_mean,
                   res[p].unalloc_std, res[p].curve_mean[130]);
            continue;
        }
        printf("%-12s %22.2f %8.2f %10s  offline packer (achievable): the best of\n", "offline",
               res[p].unalloc_mean, res[p].unalloc_std, "-");
        static const char *what[GS_OPENB_CANDIDATES] = {"  the decreasing-size packer alone",
                                                        "  fgd's placement repaired",
                                                        "  gpusched's placement repaired"};
        for (int w = 0; w < GS_OPENB_CANDIDATES; w++)
            printf("%-12s %22.2f %8.2f %10s  %s\n", "offline", res[p].cand_mean[w],
                   res[p].cand_std[w], "-", what[w]);
        printf("%-12s %22.2f %8.2f %10s  lower bound (proven)\n", "offline", res[p].bound_mean,
               res[p].bound_std, "-");
    }
}

/* A share in percent, or "-" where it is not defined. */
static void print_share(double x)
{
    if (isnan(x))
        printf(" %8s", "-");
    else
        printf(" %7.0f%%", x * 100.0);
}

/* A trace's short name: its file name less "openb_pod_list_" and ".csv", into buf. */
static const char *trace_name(const char *path, char *buf, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "openb_pod_list_", 15) == 0)
        base += 15;
    size_t l = strlen(base);
    if (l > 4 && strcmp(base + l - 4, ".csv") == 0)
        l -= 4;
    snprintf(buf, n, "%.*s", (int)l, base);
    return buf;
}

/* gpusched against fgd per trace, and the shares of the gaps closed over all of them: the
 * mean of the traces' shares, and the share of the gaps summed over the traces (where a
 * trace with a tiny gap weighs little). */
static void openb_table_gaps(const struct openb_traces *t, const struct gs_openb_result *res,
                             int np)
{
    double sum[3] = {0}, won = 0, gap[3] = {0};
    int cnt[3] = {0}, rows = 0;
    for (int i = 0; i < t->n; i++) {
        struct gs_openb_gap g;
        if (!gs_openb_gap(&res[i * np], np, &g))
            continue;
        if (rows++ == 0)
            printf("\ngpusched against fgd: unallocated GPU %% at 100 %% (means over the seeds), "
                   "and the share of fgd's\ndistance to the offline packer, to its best "
                   "candidate not made from gpusched's placement\n(indep.) and to the proven "
                   "bound that gpusched closes\n%-16s %7s %8s %7s %8s %7s %7s %8s %8s %8s\n",
                   "trace", "fgd", "gpusched", "g-fgd", "offline", "indep.", "bound", "closed",
                   "indep.", "bound");
        char name[64];
        printf("%-16s %7.2f %8.2f %+7.2f %8.2f %7.2f %7.2f",
               trace_name(t->path[i], name, sizeof(name)), g.fgd, g.gpusched, g.gpusched - g.fgd,
               g.offline, g.independent, g.bound);
        double sh[3] = {g.closed, g.closed_independent, g.closed_bound};
        double to[3] = {g.offline, g.independent, g.bound};
        won += g.fgd - g.gpusched;
        for (int k = 0; k < 3; k++) {
            print_share(sh[k]);
            gap[k] += g.fgd - to[k];
            if (!isnan(sh[k])) {
                sum[k] += sh[k];
                cnt[k]++;
            }
        }
        printf("\n");
    }
    if (rows == 0)
        return;
    printf("%-66s", "mean of the traces' shares");
    for (int k = 0; k < 3; k++)
        print_share(cnt[k] ? sum[k] / cnt[k] : NAN);
    printf("\n%-66s", "share of the gaps summed over the traces");
    for (int k = 0; k < 3; k++)
        print_share(gap[k] > 1e-9 ? won / gap[k] : NAN);
    printf("\n");
}

static void openb_table(const struct openb_cli *c, const struct openb_traces *t, int nn,
                        const struct gs_openb_result *res, int np)
{
    for (int i = 0; i < t->n; i++) {
        if (t->n == 1)
            printf("openb: %d nodes, %d pods, tune %.2f, seeds %llu-%llu\n", nn, t->npods[i],
                   c->tune, (unsigned long long)c->seeds.lo, (unsigned long long)c->seeds.hi);
        else
            printf("%s%s: %d nodes, %d pods, tune %.2f, seeds %llu-%llu\n", i ? "\n" : "",
                   t->path[i], nn, t->npods[i], c->tune, (unsigned long long)c->seeds.lo,
                   (unsigned long long)c->seeds.hi);
        if (c->variant)
            printf("variant %s (variant seed %llu)\n", c->variant, (unsigned long long)c->vseed);
        openb_table_results(&res[i * np], np);
    }
    openb_table_gaps(t, res, np);
    printf("wall time %.2f s\n", np ? res[0].seconds : 0.0);
}

/* The experiment on the loaded traces. */
static int openb_run(const struct openb_cli *c, const struct gs_policy **pols, int np,
                     const struct gs_openb_node *nodes, int nn, const struct openb_traces *t)
{
    struct gs_error err;
    gs_error_init(&err);
    struct gs_openb_spec spec[OPENB_MAX_TRACES];
    for (int i = 0; i < t->n; i++)
        spec[i] = (struct gs_openb_spec){.nodes = nodes,
                                         .nnodes = nn,
                                         .pods = t->pods[i],
                                         .npods = t->npods[i],
                                         .tune = c->tune,
                                         .seed_lo = c->seeds.lo,
                                         .seed_hi = c->seeds.hi,
                                         .threads = (int)c->threads};
    struct gs_openb_result *res = calloc((size_t)(t->n * np), sizeof(*res));
    if (!res)
        return gs_cli_exit_code(GS_ENOMEM);
    int rc = gs_openb_experiment_many(spec, t->n, pols, np, res, &err);
    if (rc)
        fprintf(stderr, "gpusched sim openb: %s\n", err.msg);
    else if (strcmp(c->format, "json") == 0)
        openb_json(c, t, res, np);
    else
        openb_table(c, t, nn, res, np);
    for (int p = 0; p < t->n * np; p++)
        gs_openb_result_release(&res[p]);
    free(res);
    return rc ? gs_cli_exit_code(rc) : GS_EXIT_OK;
}

static const struct gs_cli_parser openb_parser = {
    .prog = "gpusched sim openb",
    .flags = openb_flags,
    .unknown = "unknown or incomplete option",
    .incomplete = "unknown or incomplete option",
    .usage = sim_usage,
};

/* Load trace i of t (its variant applied when asked). Returns 0 or an exit code (said why). */
static int openb_load(const struct openb_cli *c, const struct gs_openb_node *nodes, int nn,
                      struct openb_traces *t, int i)
{
    struct gs_error err;
    gs_error_init(&err);
    int npods = gs_openb_load_pods(t->path[i], &t->pods[i], &err);
    if (npods < 0) {
        fprintf(stderr, "gpusched sim openb: %s\n", err.msg);
        return gs_cli_input_exit(npods);
    }
    t->npods[i] = npods;
    if (!c->variant)
        return 0;
    struct gs_openbvar vt[GS_OPENBVAR_MAX];
    struct gs_openb_pod *vp = NULL;
    int nvt = gs_openbvar_parse(c->variant, vt, &err);
    int nvp = nvt < 0
                  ? nvt
                  : gs_openbvar_apply(vt, nvt, nodes, nn, t->pods[i], npods, c->vseed, &vp, &err);
    if (nvp < 0) {
        fprintf(stderr, "gpusched sim openb: --variant: %s\n", err.msg);
        return gs_cli_exit_code(nvp);
    }
    free(t->pods[i]);
    t->pods[i] = vp;
    t->npods[i] = nvp;
    return 0;
}

static int cmd_openb(int argc, char **argv)
{
    struct openb_cli c = {
        .policy = "all", .format = "table", .seeds = {42, 51}, .vseed = 1, .tune = 1.3};
    int rc = gs_cli_parse(&openb_parser, &c, argc, argv);
    if (rc)
        return rc;
    if (!c.nodes || !c.pods) {
        fprintf(stderr, "gpusched sim openb: --nodes and --pods are required\n");
        sim_usage(stderr);
        return GS_EXIT_USAGE;
    }
    if (strcmp(c.format, "json") != 0 && strcmp(c.format, "table") != 0) {
        fprintf(stderr, "gpusched sim openb: --format '%s': expected table or json\n", c.format);
        return GS_EXIT_USAGE;
    }
    const struct gs_policy *pols[32];
    int np = openb_policies(c.policy, pols);
    if (np < 0)
        return GS_EXIT_USAGE;
    struct gs_error err;
    gs_error_init(&err);
    struct gs_openb_node *nodes = NULL;
    int nn = gs_openb_load_nodes(c.nodes, &nodes, &err);
    if (nn < 0) {
        fprintf(stderr, "gpusched sim openb: %s\n", err.msg);
        return gs_cli_input_exit(nn);
    }
    struct openb_traces t = {0};
    char list[4096];
    if (strlen(c.pods) >= sizeof(list) || strspn(c.pods, ",") == strlen(c.pods)) {
        fprintf(stderr,
                "gpusched sim openb: --pods: expected FILE[,FILE...] or a folder, at "
                "most %zu characters\n",
                sizeof(list) - 1);
        free(nodes);
        return GS_EXIT_USAGE;
    }
    snprintf(list, sizeof(list), "%s", c.pods);
    char *save = NULL;
    for (char *e = strtok_r(list, ",", &save); e && !rc; e = strtok_r(NULL, ",", &save)) {
        int arc = traces_add(&t, e);
        rc = arc ? gs_cli_exit_code(arc) : 0;
    }
    for (int i = 0; i < t.n && !rc; i++)
        rc = openb_load(&c, nodes, nn, &t, i);
    if (!rc)
        rc = openb_run(&c, pols, np, nodes, nn, &t);
    traces_release(&t);
    free(nodes);
    return rc;
}

struct dra_cli {
    struct gs_drasim_spec sp;
    struct seeds seeds;
    const char *format;
};

#define D struct dra_cli
static const struct gs_cli_flag dra_flags[] = {
    GS_CLI_FN("--seeds", offsetof(D, seeds), seeds_flag, 0, 999, "N or LO-HI (at most 1000 seeds)",
              "LO-HI: seeds"),
    GS_CLI_NUM("--nodes", D, sp.nodes, 1, 1000, "N: nodes"),
    GS_CLI_NUM("--gpus", D, sp.gpus, 1, 16, "G: GPUs per node"),
    GS_CLI_STR("--model", D, sp.model, "M: the GPU model"),
    GS_CLI_CHOICE("--format", D, format, "table|json", "table or json", "table|json"),
    {0},
};
#undef D

static const struct gs_cli_parser dra_parser = {
    .prog = "gpusched sim dra",
    .flags = dra_flags,
    .how = GS_CLI_LAST_INCOMPLETE,
    .unknown = "unknown option",
    .incomplete = "unknown or incomplete option",
};

static int cmd_dra(int argc, char **argv)
{
    struct dra_cli c = {.sp = gs_drasim_default, .seeds = {42, 51}, .format = "table"};
    int rc = gs_cli_parse(&dra_parser, &c, argc, argv);
    if (rc)
        return rc;
    struct gs_error err;
    gs_error_init(&err);
    struct gs_buf b;
    gs_buf_init(&b, 0);
    rc = gs_drasim_report(&c.sp, c.seeds.lo, c.seeds.hi, strcmp(c.format, "json") == 0, &b, &err);
    if (rc)
        fprintf(stderr, "gpusched sim dra: %s\n", err.msg);
    else
        fputs(b.data ? b.data : "", stdout);
    gs_buf_release(&b);
    return rc ? gs_cli_exit_code(rc) : GS_EXIT_OK;
}

struct topo_cli {
    struct gs_toposcen sp;
    struct seeds seeds;
    double hours;
    const char *format, *scenario;
};

#define T struct topo_cli
static const struct gs_cli_flag topo_flags[] = {
    GS_CLI_FN("--seeds", offsetof(T, seeds), seeds_flag, 0, 999, "N or LO-HI (at most 1000 seeds)",
              "LO-HI: seeds"),
    GS_CLI_STR("--scenario", T, scenario, "FILE: the cluster, links and classes (YAML)"),
    GS_CLI_NUM("--blocks", T, sp.blocks, 1, 64, "N: blocks"),
    GS_CLI_NUM("--subblocks", T, sp.subblocks, 1, 64, "N: subblocks per block"),
    GS_CLI_NUM("--nodes", T, sp.nodes, 1, 64, "N: nodes per subblock"),
    GS_CLI_NUM("--hours", T, hours, 1, 24 * 30, "H: hours of arrivals"),
    GS_CLI_CHOICE("--format", T, format, "table|json", "table or json", "table|json"),
    {0},
};
#undef T

static const struct gs_cli_parser topo_parser = {
    .prog = "gpusched sim topo",
    .flags = topo_flags,
    .how = GS_CLI_LAST_INCOMPLETE,
    .unknown = "unknown option",
    .incomplete = "unknown or incomplete option",
};

static int cmd_topo(int argc, char **argv)
{
    struct topo_cli c = {.sp = gs_toposim_default,
                         .seeds = {1, 3},
                         .hours = gs_toposim_default.duration_s / 3600,
                         .format = "table"};
    int rc = gs_cli_parse(&topo_parser, &c, argc, argv);
    if (rc)
        return rc;
    struct gs_error err;
    gs_error_init(&err);
    if (c.scenario) {
        /* the file over the defaults, then the flags again over the file */
        struct topo_cli f = c;
        f.sp = gs_toposim_default;
        if ((rc = gs_toposcen_load(c.scenario, &f.sp, &err)) != 0) {
            fprintf(stderr, "gpusched sim topo: %s\n", err.msg);
            return gs_cli_exit_code(rc);
        }
        f.hours = f.sp.duration_s / 3600;
        if ((rc = gs_cli_parse(&topo_parser, &f, argc, argv)) != 0)
            return rc;
        c = f;
    }
    c.sp.duration_s = c.hours * 3600;
    struct gs_buf b;
    gs_buf_init(&b, 0);
    rc = gs_toposim_report(&c.sp, c.seeds.lo, c.seeds.hi, strcmp(c.format, "json") == 0, &b, &err);
    if (rc)
        fprintf(stderr, "gpusched sim topo: %s\n", err.msg);
    else
        fputs(b.data ? b.data : "", stdout);
    gs_buf_release(&b);
    return rc ? gs_cli_exit_code(rc) : GS_EXIT_OK;
}

struct variant_cli {
    const char *nodes, *pods, *variant, *out;
    uint64_t seed;
};

#define V struct variant_cli
static const struct gs_cli_flag variant_flags[] = {
    GS_CLI_STR("--nodes", V, nodes, "FILE: openb node list"),
    GS_CLI_STR("--pods", V, pods, "FILE: openb pod list"),
    GS_CLI_STR("--variant", V, variant, "KIND=PCT[,...]: the variation"),
    GS_CLI_STR("--out", V, out, "FILE: the variant pod list"),
    GS_CLI_UINT("--seed", V, seed, 1e20, "N", "N: the variant's seed"),
    {0},
};
#undef V

static const struct gs_cli_parser variant_parser = {
    .prog = "gpusched sim openb-variant",
    .flags = variant_flags,
    .how = GS_CLI_LAST_INCOMPLETE,
    .unknown = "unknown option",
    .incomplete = "unknown or incomplete option",
};

static int cmd_openb_variant(int argc, char **argv)
{
    struct variant_cli c = {.seed = 1};
    int code = gs_cli_parse(&variant_parser, &c, argc, argv);
    if (code)
        return code;
    const char *nodes_path = c.nodes, *pods_path = c.pods, *variant = c.variant, *out_path = c.out;
    uint64_t seed = c.seed;
    if (!nodes_path || !pods_path || !variant || !out_path) {
        fprintf(stderr, "gpusched sim openb-variant: --nodes, --pods, --variant and --out are "
                        "required\n");
        return GS_EXIT_USAGE;
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_openbvar vt[GS_OPENBVAR_MAX];
    struct gs_openb_node *nodes = NULL;
    struct gs_openb_pod *pods = NULL, *vp = NULL;
    struct gs_buf b;
    gs_buf_init(&b, 0);
    int nn = 0, np = 0, nvp = 0, rc = gs_openbvar_parse(variant, vt, &err);
    int nvt = rc;
    if (rc >= 0)
        rc = nn = gs_openb_load_nodes(nodes_path, &nodes, &err);
    if (rc >= 0)
        rc = np = gs_openb_load_pods(pods_path, &pods, &err);
    if (rc >= 0)
        rc = nvp = gs_openbvar_apply(vt, nvt, nodes, nn, pods, np, seed, &vp, &err);
    if (rc >= 0)
        rc = gs_openb_write_pods(vp, nvp, &b);
    if (rc >= 0) {
        FILE *f = fopen(out_path, "w");
        if (!f || fwrite(b.data, 1, b.len, f) != b.len) {
            rc = gs_error_set(&err, GS_EIO, "writing '%s': %s", out_path, strerror(errno));
        }
        if (f && fclose(f) && rc >= 0)
            rc = gs_error_set(&err, GS_EIO, "writing '%s': %s", out_path, strerror(errno));
    }
    if (rc >= 0) {
        struct gs_openbvar_shares s0, s1;
        gs_openbvar_shares(pods, np, &s0);
        gs_openbvar_shares(vp, nvp, &s1);
        printf("%s: %d pods (from %d), variant %s, seed %llu\n", out_path, nvp, np, variant,
               (unsigned long long)seed);
        printf("%-10s %8s %8s\n", "share %", "before", "after");
        printf("%-10s %8.2f %8.2f\n", "gpushare", s0.gpushare, s1.gpushare);
        printf("%-10s %8.2f %8.2f\n", "multigpu", s0.multigpu, s1.multigpu);
        printf("%-10s %8.2f %8.2f\n", "gpuspec", s0.gpuspec, s1.gpuspec);
        printf("%-10s %8.2f %8.2f\n", "cpu", s0.cpu, s1.cpu);
    } else {
        fprintf(stderr, "gpusched sim openb-variant: %s\n", err.msg);
    }
    gs_buf_release(&b);
    free(nodes);
    free(pods);
    free(vp);
    /* after both inputs are read, an I/O error is writing --out: a failure of the run */
    return rc < 0 ? (rc == GS_EIO && nn > 0 && np > 0 ? GS_EXIT_FAILURE : gs_cli_input_exit(rc))
                  : GS_EXIT_OK;
}

/* the subcommands beside a scenario (scenario.c) */
static const struct gs_cli_command sim_commands[] = {
    {"openb-variant", cmd_openb_variant, "a variant of an openb pod list"},
    {"openb", cmd_openb, "the openb trace experiment"},
    {"dra", cmd_dra, "DRA on partitionable GPUs"},
    {"topo", cmd_topo, "topology-aware training gangs"},
    {NULL, NULL, NULL},
};

int gs_cli_sim(int argc, char **argv)
{
    if (argc >= 1 && gs_cli_is_help(argv[0])) {
        sim_usage(stdout);
        return GS_EXIT_OK;
    }
    const struct gs_cli_command *c = argc >= 1 ? gs_cli_command_find(sim_commands, argv[0]) : NULL;
    if (!c)
        return gs_cli_sim_scenario(argc, argv);
    if (gs_cli_wants_help(argc - 1, argv + 1)) {
        sim_usage(stdout);
        return GS_EXIT_OK;
    }
    return c->run(argc - 1, argv + 1);
}
