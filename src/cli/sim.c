/* sim.c - `gpusched sim`: the embedded default scenario, scenario files and the openb
 * trace experiment. Parses flags, calls sim/, prints tables or JSON. */
#include "cli.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../sim/dra.h"
#include "../sim/openb.h"
#include "../sim/openbvar.h"

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
               "       gpusched sim openb --nodes FILE --pods FILE [--policy NAME[,NAME...]]\n"
               "                          [--seeds LO-HI] [--tune X] [--threads N]\n"
               "                          [--format table|json]\n"
               "                          [--variant KIND=PCT[,...] [--variant-seed N]]\n"
               "                          policy 'offline': an offline packer's unallocated\n"
               "                          share (achievable) and a proven lower bound\n"
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
    GS_CLI_STR("--pods", O, pods, "FILE: openb pod list"),
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

static void openb_json(const struct openb_cli *c, const struct gs_openb_result *res, int np)
{
    json_t *root = json_object();
    json_object_set_new(root, "nodes_file", json_string(c->nodes));
    json_object_set_new(root, "pods_file", json_string(c->pods));
    json_object_set_new(root, "seeds",
                        json_sprintf("%llu-%llu", (unsigned long long)c->seeds.lo,
                                     (unsigned long long)c->seeds.hi));
    json_object_set_new(root, "tune", json_real(c->tune));
    if (c->variant) {
        json_object_set_new(root, "variant", json_string(c->variant));
        json_object_set_new(root, "variant_seed", json_integer((json_int_t)c->vseed));
    }
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
        }
        json_t *per = json_array();
        for (int s = 0; s < res[p].nruns; s++) {
            json_t *so = json_object();
            json_object_set_new(so, "seed", json_integer((json_int_t)res[p].runs[s].seed));
            json_object_set_new(so, "unallocated_gpu_pct_at_100",
                                json_real(res[p].runs[s].unalloc_at_100));
            if (off)
                json_object_set_new(so, "lower_bound_unallocated_gpu_pct_at_100",
                                    json_real(res[p].runs[s].bound_at_100));
            json_object_set_new(so, "pods", json_integer(res[p].runs[s].pods));
            json_object_set_new(so, "failed_pods", json_integer(res[p].runs[s].failed));
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
    json_object_set_new(root, "results", arr);
    char *s = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    if (s)
        puts(s);
    free(s);
    json_decref(root);
}

static void openb_table(const struct openb_cli *c, const struct gs_openb_result *res, int np,
                        int nn, int npods)
{
    printf("openb: %d nodes, %d pods, tune %.2f, seeds %llu-%llu\n", nn, npods, c->tune,
           (unsigned long long)c->seeds.lo, (unsigned long long)c->seeds.hi);
    if (c->variant)
        printf("variant %s (variant seed %llu)\n", c->variant, (unsigned long long)c->vseed);
    printf("%-12s %22s %8s %10s\n", "policy", "unallocated@100% (%)", "std", "alloc@130%");
    for (int p = 0; p < np; p++) {
        if (res[p].policy != gs_openb_offline_policy()) {
            printf("%-12s %22.2f %8.2f %10.2f\n", res[p].policy->name, res[p].unalloc_mean,
                   res[p].unalloc_std, res[p].curve_mean[130]);
            continue;
        }
        printf("%-12s %22.2f %8.2f %10s  offline packer (achievable)\n", "offline",
               res[p].unalloc_mean, res[p].unalloc_std, "-");
        printf("%-12s %22.2f %8.2f %10s  lower bound (proven)\n", "offline", res[p].bound_mean,
               res[p].bound_std, "-");
    }
    printf("wall time %.2f s\n", np ? res[0].seconds : 0.0);
}

/* The experiment on the loaded lists; takes nodes and pods. */
static int openb_run(const struct openb_cli *c, const struct gs_policy **pols, int np,
                     struct gs_openb_node *nodes, int nn, struct gs_openb_pod *pods, int npods)
{
    struct gs_error err;
    gs_error_init(&err);
    struct gs_openb_spec spec = {.nodes = nodes,
                                 .nnodes = nn,
                                 .pods = pods,
                                 .npods = npods,
                                 .tune = c->tune,
                                 .seed_lo = c->seeds.lo,
                                 .seed_hi = c->seeds.hi,
                                 .threads = (int)c->threads};
    struct gs_openb_result res[32];
    int rc = gs_openb_experiment(&spec, pols, np, res, &err);
    if (rc) {
        fprintf(stderr, "gpusched sim openb: %s\n", err.msg);
        free(nodes);
        free(pods);
        return gs_cli_exit_code(rc);
    }
    if (strcmp(c->format, "json") == 0)
        openb_json(c, res, np);
    else
        openb_table(c, res, np, nn, npods);
    for (int p = 0; p < np; p++)
        gs_openb_result_release(&res[p]);
    free(nodes);
    free(pods);
    return GS_EXIT_OK;
}

static const struct gs_cli_parser openb_parser = {
    .prog = "gpusched sim openb",
    .flags = openb_flags,
    .unknown = "unknown or incomplete option",
    .incomplete = "unknown or incomplete option",
    .usage = sim_usage,
};

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
    struct gs_openb_pod *pods = NULL;
    int nn = gs_openb_load_nodes(c.nodes, &nodes, &err);
    if (nn < 0) {
        fprintf(stderr, "gpusched sim openb: %s\n", err.msg);
        return gs_cli_exit_code(nn == GS_EIO ? GS_EINVAL : nn);
    }
    int npods = gs_openb_load_pods(c.pods, &pods, &err);
    if (npods < 0) {
        free(nodes);
        fprintf(stderr, "gpusched sim openb: %s\n", err.msg);
        return gs_cli_exit_code(npods == GS_EIO ? GS_EINVAL : npods);
    }
    if (c.variant) {
        struct gs_openbvar vt[GS_OPENBVAR_MAX];
        struct gs_openb_pod *vp = NULL;
        int nvt = gs_openbvar_parse(c.variant, vt, &err);
        int nvp =
            nvt < 0 ? nvt : gs_openbvar_apply(vt, nvt, nodes, nn, pods, npods, c.vseed, &vp, &err);
        if (nvp < 0) {
            fprintf(stderr, "gpusched sim openb: --variant: %s\n", err.msg);
            free(nodes);
            free(pods);
            return gs_cli_exit_code(nvp);
        }
        free(pods);
        pods = vp;
        npods = nvp;
    }
    return openb_run(&c, pols, np, nodes, nn, pods, npods);
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
    return rc < 0 ? gs_cli_exit_code(rc == GS_EIO && nn > 0 && np > 0 ? GS_EIO : GS_EINVAL)
                  : GS_EXIT_OK;
}

/* the subcommands beside a scenario (scenario.c) */
static const struct gs_cli_command sim_commands[] = {
    {"openb-variant", cmd_openb_variant, "a variant of an openb pod list"},
    {"openb", cmd_openb, "the openb trace experiment"},
    {"dra", cmd_dra, "DRA on partitionable GPUs"},
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
