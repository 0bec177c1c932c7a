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
               "                          naming a model) or cpu (%% of CPU-only pods)\n"
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

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || strlen(s) > 19)
        return GS_EINVAL;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return GS_EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return 0;
}

static int parse_seeds(const char *s, uint64_t *lo, uint64_t *hi)
{
    char a[32];
    const char *dash = strchr(s, '-');
    if (!dash)
        return parse_u64(s, lo) ? GS_EINVAL : (*hi = *lo, 0);
    size_t l = (size_t)(dash - s);
    if (l == 0 || l >= sizeof(a))
        return GS_EINVAL;
    memcpy(a, s, l);
    a[l] = '\0';
    if (parse_u64(a, lo) || parse_u64(dash + 1, hi) || *hi < *lo)
        return GS_EINVAL;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return GS_EINVAL;
    *out = v;
    return 0;
}

static int cmd_openb(int argc, char **argv)
{
    const char *nodes_path = NULL, *pods_path = NULL, *pol = "all", *format = "table";
    const char *variant = NULL;
    uint64_t lo = 42, hi = 51, vseed = 1;
    double tune = 1.3;
    int threads = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--nodes") == 0 && v)
            nodes_path = v, i++;
        else if (strcmp(a, "--pods") == 0 && v)
            pods_path = v, i++;
        else if (strcmp(a, "--policy") == 0 && v)
            pol = v, i++;
        else if (strcmp(a, "--format") == 0 && v)
            format = v, i++;
        else if (strcmp(a, "--variant") == 0 && v)
            variant = v, i++;
        else if (strcmp(a, "--variant-seed") == 0 && v) {
            if (parse_u64(v, &vseed)) {
                fprintf(stderr, "gpusched sim openb: --variant-seed '%s': expected N\n", v);
                return GS_EXIT_USAGE;
            }
            i++;
        } else if (strcmp(a, "--seeds") == 0 && v) {
            if (parse_seeds(v, &lo, &hi)) {
                fprintf(stderr, "gpusched sim openb: --seeds '%s': expected N or LO-HI\n", v);
                return GS_EXIT_USAGE;
            }
            i++;
        } else if (strcmp(a, "--tune") == 0 && v) {
            if (parse_double(v, &tune) || tune < 0 || tune > 100) {
                fprintf(stderr, "gpusched sim openb: --tune '%s': expected a number in 0..100\n",
                        v);
                return GS_EXIT_USAGE;
            }
            i++;
        } else if (strcmp(a, "--threads") == 0 && v) {
            uint64_t t;
            if (parse_u64(v, &t) || t > 64) {
                fprintf(stderr, "gpusched sim openb: --threads '%s': expected 0..64\n", v);
                return GS_EXIT_USAGE;
            }
            threads = (int)t;
            i++;
        } else {
            fprintf(stderr, "gpusched sim openb: unknown or incomplete option '%s'\n", a);
            sim_usage(stderr);
            return GS_EXIT_USAGE;
        }
    }
    if (!nodes_path || !pods_path) {
        fprintf(stderr, "gpusched sim openb: --nodes and --pods are required\n");
        sim_usage(stderr);
        return GS_EXIT_USAGE;
    }
    bool json = strcmp(format, "json") == 0;
    if (!json && strcmp(format, "table") != 0) {
        fprintf(stderr, "gpusched sim openb: --format '%s': expected table or json\n", format);
        return GS_EXIT_USAGE;
    }
    const struct gs_policy *pols[32];
    int np = 0;
    if (strcmp(pol, "all") == 0) {
        for (int i = 0; i < gs_policy_count(); i++)
            pols[np++] = gs_policy_get(i);
        pols[np++] = gs_openb_offline_policy();
    } else {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", pol);
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            const struct gs_policy *p =
                strcmp(t, "offline") == 0 ? gs_openb_offline_policy() : gs_policy_find(t);
            if (!p || np >= 32) {
                fprintf(stderr, "gpusched sim openb: --policy: unknown policy '%s'\n", t);
                sim_usage(stderr);
                return GS_EXIT_USAGE;
            }
            pols[np++] = p;
        }
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_openb_node *nodes = NULL;
    struct gs_openb_pod *pods = NULL;
    int nn = gs_openb_load_nodes(nodes_path, &nodes, &err);
    if (nn < 0) {
        fprintf(stderr, "gpusched sim openb: %s\n", err.msg);
        return gs_cli_exit_code(nn == GS_EIO ? GS_EINVAL : nn);
    }
    int npods = gs_openb_load_pods(pods_path, &pods, &err);
    if (npods < 0) {
        free(nodes);
        fprintf(stderr, "gpusched sim openb: %s\n", err.msg);
        return gs_cli_exit_code(npods == GS_EIO ? GS_EINVAL : npods);
    }
    if (variant) {
        struct gs_openbvar vt[GS_OPENBVAR_MAX];
        struct gs_openb_pod *vp = NULL;
        int nvt = gs_openbvar_parse(variant, vt, &err);
        int nvp =
            nvt < 0 ? nvt : gs_openbvar_apply(vt, nvt, nodes, nn, pods, npods, vseed, &vp, &err);
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
    struct gs_openb_spec spec = {.nodes = nodes,
                                 .nnodes = nn,
                                 .pods = pods,
                                 .npods = npods,
                                 .tune = tune,
                                 .seed_lo = lo,
                                 .seed_hi = hi,
                                 .threads = threads};
    struct gs_openb_result res[32];
    int rc = gs_openb_experiment(&spec, pols, np, res, &err);
    if (rc) {
        fprintf(stderr, "gpusched sim openb: %s\n", err.msg);
        free(nodes);
        free(pods);
        return gs_cli_exit_code(rc);
    }
    if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "nodes_file", json_string(nodes_path));
        json_object_set_new(root, "pods_file", json_string(pods_path));
        json_object_set_new(
            root, "seeds",
            json_sprintf("%llu-%llu", (unsigned long long)lo, (unsigned long long)hi));
        json_object_set_new(root, "tune", json_real(tune));
        if (variant) {
            json_object_set_new(root, "variant", json_string(variant));
            json_object_set_new(root, "variant_seed", json_integer((json_int_t)vseed));
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
    } else {
        printf("openb: %d nodes, %d pods, tune %.2f, seeds %llu-%llu\n", nn, npods, tune,
               (unsigned long long)lo, (unsigned long long)hi);
        if (variant)
            printf("variant %s (variant seed %llu)\n", variant, (unsigned long long)vseed);
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
    for (int p = 0; p < np; p++)
        gs_openb_result_release(&res[p]);
    free(nodes);
    free(pods);
    return GS_EXIT_OK;
}

static int cmd_dra(int argc, char **argv)
{
    struct gs_drasim_spec sp = gs_drasim_default;
    uint64_t lo = 42, hi = 51;
    bool json = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        if (!v) {
            fprintf(stderr, "gpusched sim dra: unknown or incomplete option '%s'\n", a);
            return GS_EXIT_USAGE;
        }
        if (strcmp(a, "--seeds") == 0) {
            if (parse_seeds(v, &lo, &hi) || hi - lo > 999) {
                fprintf(stderr,
                        "gpusched sim dra: --seeds '%s': expected N or LO-HI (at most "
                        "1000 seeds)\n",
                        v);
                return GS_EXIT_USAGE;
            }
        } else if (strcmp(a, "--nodes") == 0 || strcmp(a, "--gpus") == 0) {
            bool nodes = a[2] == 'n';
            if (gs_cli_number(a, v, 1, nodes ? 1000 : 16, &d))
                return GS_EXIT_USAGE;
            *(nodes ? &sp.nodes : &sp.gpus) = (int)d;
        } else if (strcmp(a, "--model") == 0) {
            sp.model = v;
        } else if (strcmp(a, "--format") == 0) {
            if (strcmp(v, "json") != 0 && strcmp(v, "table") != 0) {
                fprintf(stderr, "gpusched sim dra: --format '%s': expected table or json\n", v);
                return GS_EXIT_USAGE;
            }
            json = strcmp(v, "json") == 0;
        } else {
            fprintf(stderr, "gpusched sim dra: unknown option '%s'\n", a);
            return GS_EXIT_USAGE;
        }
        i++;
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_buf b;
    gs_buf_init(&b, 0);
    int rc = gs_drasim_report(&sp, lo, hi, json, &b, &err);
    if (rc)
        fprintf(stderr, "gpusched sim dra: %s\n", err.msg);
    else
        fputs(b.data ? b.data : "", stdout);
    gs_buf_release(&b);
    return rc ? gs_cli_exit_code(rc) : GS_EXIT_OK;
}

static int cmd_openb_variant(int argc, char **argv)
{
    const char *nodes_path = NULL, *pods_path = NULL, *variant = NULL, *out_path = NULL;
    uint64_t seed = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "gpusched sim openb-variant: unknown or incomplete option '%s'\n", a);
            return GS_EXIT_USAGE;
        }
        if (strcmp(a, "--nodes") == 0)
            nodes_path = v;
        else if (strcmp(a, "--pods") == 0)
            pods_path = v;
        else if (strcmp(a, "--variant") == 0)
            variant = v;
        else if (strcmp(a, "--out") == 0)
            out_path = v;
        else if (strcmp(a, "--seed") == 0) {
            if (parse_u64(v, &seed)) {
                fprintf(stderr, "gpusched sim openb-variant: --seed '%s': expected N\n", v);
                return GS_EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "gpusched sim openb-variant: unknown option '%s'\n", a);
            return GS_EXIT_USAGE;
        }
        i++;
    }
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

int gs_cli_sim(int argc, char **argv)
{
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        sim_usage(stdout);
        return GS_EXIT_OK;
    }
    if (argc >= 1 && strcmp(argv[0], "openb-variant") == 0) {
        if (gs_cli_wants_help(argc - 1, argv + 1)) {
            sim_usage(stdout);
            return GS_EXIT_OK;
        }
        return cmd_openb_variant(argc - 1, argv + 1);
    }
    if (argc >= 1 && strcmp(argv[0], "openb") == 0) {
        if (gs_cli_wants_help(argc - 1, argv + 1)) {
            sim_usage(stdout);
            return GS_EXIT_OK;
        }
        return cmd_openb(argc - 1, argv + 1);
    }
    if (argc >= 1 && strcmp(argv[0], "dra") == 0) {
        if (gs_cli_wants_help(argc - 1, argv + 1)) {
            sim_usage(stdout);
            return GS_EXIT_OK;
        }
        return cmd_dra(argc - 1, argv + 1);
    }
    return gs_cli_sim_scenario(argc, argv);
}
