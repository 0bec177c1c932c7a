/* advise.c - `gpusched advise`: which sharing mode and MIG layout each node group should run,
 * chosen by simulation (sim/advise.h), for a scenario file, the live cluster, or the article's
 * cluster sizes; writes the recommended mig-parted and device-plugin configs. */
#include "cli.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../core/catalog.h"
#include "../formats/scenario.h"
#include "../sim/advise.h"
#include "advise_cluster.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpusched advise scenario FILE [options]\n"
            "       gpusched advise cluster [--kubeconfig FILE | --from FILE.json]\n"
            "                               [--window DURATION] [--save-scenario FILE]\n"
            "                               [--mig-config FILE] [options]\n"
            "       gpusched advise sizes [--format table|json] [--budget N]\n"
            "       gpusched advise sizes --print-scenario small|medium|large|xlarge\n"
            "\n"
            "For each node group, walks the article's decision tree (MIG for isolation and\n"
            "SLAs, MPS for training that shares, time-slicing for light inference) from what\n"
            "the workload needs, then searches setups (sharing mode and replicas, MIG layout\n"
            "per GPU) by simulating each on the same arrivals, and recommends the best by\n"
            "online wait (the SLA first), used and allocated share and $ per useful GPU-hour.\n"
            "\n"
            "  scenario FILE   a scenario file (gpusched sim --help); its groups as written are\n"
            "                  the current setup\n"
            "  cluster         the live cluster: its GPU nodes grouped by model and setup, its\n"
            "                  pods (running, pending and finished within --window, default\n"
            "                  24h) as the workload (formats/clusterscen.h says how); --from\n"
            "                  reads `kubectl get nodes,pods -A -o json` output instead of the\n"
            "                  API server; --save-scenario FILE keeps the scenario it made;\n"
            "                  each node's MIG layout is read as the scheduler reads it (the\n"
            "                  agent's inventory, else nvidia.com/mig.config in --mig-config)\n"
            "  sizes           the article's cluster-size table (< 8, 8-32, 32-128, > 128\n"
            "                  GPUs) measured, beside the article's recommendation\n"
            "\n"
            "options:\n"
            "  --format table|json   output (default table)\n"
            "  --report FILE.html    a self-contained HTML report\n"
            "  --out DIR             where the recommended configs go (default\n"
            "                        gpusched-advice): mig-parted-config.yaml and\n"
            "                        device-plugin-config.yaml (ConfigMaps for NVIDIA's\n"
            "                        mig-manager and device plugin), device-plugin/GROUP.yaml,\n"
            "                        node-labels.sh\n"
            "  --budget N            setups to simulate at most (default 120)\n"
            "  --seed N              the arrivals' seed (default: the scenario's)\n"
            "  --threads N           simulations at once (default: CPUs)\n");
}

static int write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "w");
    if (!f || fwrite(data, 1, len, f) != len) {
        fprintf(stderr, "gpusched advise: cannot write '%s': %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return GS_EXIT_FAILURE;
    }
    if (fclose(f)) {
        fprintf(stderr, "gpusched advise: cannot write '%s': %s\n", path, strerror(errno));
        return GS_EXIT_FAILURE;
    }
    return 0;
}

static int mkdir_p(const char *dir)
{
    if (mkdir(dir, 0755) && errno != EEXIST) {
        fprintf(stderr, "gpusched advise: cannot create '%s': %s\n", dir, strerror(errno));
        return GS_EXIT_FAILURE;
    }
    return 0;
}

/* data.KEY: | with the text indented under it */
static int configmap(struct gs_buf *o, const char *name, const char *ns, const char *comment)
{
    return gs_buf_printf(o,
                         "# %s\n"
                         "apiVersion: v1\n"
                         "kind: ConfigMap\n"
                         "metadata:\n"
                         "  name: %s\n"
                         "  namespace: %s\n"
                         "data:\n",
                         comment, name, ns);
}

static int configmap_key(struct gs_buf *o, const char *key, const char *text)
{
    int rc = gs_buf_printf(o, "  %s: |\n", key);
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        rc |= gs_buf_puts(o, "    ");
        rc |= gs_buf_append(o, p, l);
        rc |= gs_buf_puts(o, "\n");
        p += l + (nl ? 1 : 0);
    }
    return rc;
}

/* The configs of the recommended setup under dir. node_names (may be NULL): per group, the
 * live nodes it was made of. */
static int write_configs(const struct gs_advice *a, const char *dir, char *const *node_names)
{
    const struct gs_scenario *sc = a->sc;
    const struct gs_adv_setup *s = &a->recommended.setup;
    char path[1024];
    int code = mkdir_p(dir);
    snprintf(path, sizeof(path), "%s/device-plugin", dir);
    if (!code)
        code = mkdir_p(path);
    if (code)
        return code;
    struct gs_buf doc, cm, one;
    gs_buf_init(&doc, 0);
    gs_buf_init(&cm, 0);
    gs_buf_init(&one, 0);
    int rc = gs_adv_migparted(sc, s, &doc);
    /* every config NVIDIA ships has all-disabled; a node label can fall back to it */
    rc |= gs_buf_puts(&doc, doc.len ? "" : "version: v1\nmig-configs:\n");
    rc |= gs_buf_puts(&doc, "  all-disabled:\n    - devices: all\n      mig-enabled: false\n");
    rc |= configmap(&cm, "gpusched-mig-parted-config", "gpu-operator",
                    "gpusched advise: the recommended MIG layouts (NVIDIA mig-parted v1). "
                    "Point the GPU Operator's migManager.config.name at this ConfigMap and "
                    "label each node with its group's nvidia.com/mig.config (node-labels.sh)");
    rc |= configmap_key(&cm, "config.yaml", doc.data);
    snprintf(path, sizeof(path), "%s/mig-parted-config.yaml", dir);
    if (rc)
        goto oom;
    if ((code = write_file(path, cm.data, cm.len)))
        goto out;
    gs_buf_reset(&cm);
    rc = configmap(&cm, "gpusched-device-plugin-config", "gpu-operator",
                   "gpusched advise: the NVIDIA device plugin's config per node group. Point "
                   "the GPU Operator's devicePlugin.config.name at this ConfigMap and label "
                   "each node nvidia.com/device-plugin.config=GROUP.yaml (node-labels.sh)");
    for (int g = 0; g < sc->ngroups && !rc; g++) {
        if (!sc->groups[g].gpus)
            continue;
        gs_buf_reset(&one);
        rc |= gs_adv_dpconfig(sc, s, g, &one);
        char key[128];
        snprintf(key, sizeof(key), "%.100s.yaml", sc->groups[g].name);
        rc |= configmap_key(&cm, key, one.data);
        snprintf(path, sizeof(path), "%s/device-plugin/%s", dir, key);
        if (!rc && (code = write_file(path, one.data, one.len)))
            goto out;
    }
    snprintf(path, sizeof(path), "%s/device-plugin-config.yaml", dir);
    if (rc)
        goto oom;
    if ((code = write_file(path, cm.data, cm.len)))
        goto out;
    gs_buf_reset(&cm);
    rc = gs_buf_puts(&cm, "#!/bin/sh\n# gpusched advise: label each node group with its "
                          "recommended MIG and device-plugin configs\nset -e\n");
    for (int g = 0; g < sc->ngroups && !rc; g++) {
        const struct gs_sc_group *grp = &sc->groups[g];
        if (!grp->gpus)
            continue;
        bool mig = false;
        for (int k = 0; k < grp->gpus && k < GS_MAX_GPUS_NODE; k++)
            mig |= s->g[g].mig[k];
        char labels[256];
        snprintf(labels, sizeof(labels),
                 "nvidia.com/mig.config=%s%.50s nvidia.com/device-plugin.config=%.100s.yaml",
                 mig ? "gpusched-" : "all-disabled", mig ? grp->name : "", grp->name);
        if (node_names && node_names[g]) {
            rc |= gs_buf_printf(&cm, "kubectl label --overwrite nodes %s %s\n", node_names[g],
                                labels);
        } else if (grp->nlabels) {
            rc |= gs_buf_printf(&cm, "kubectl label --overwrite nodes -l ");
            for (int l = 0; l < grp->nlabels; l++)
                rc |= gs_buf_printf(&cm, "%s%s=%s", l ? "," : "", grp->labels[l].key,
                                    grp->labels[l].val);
            rc |= gs_buf_printf(&cm, " %s\n", labels);
        } else {
            rc |= gs_buf_printf(&cm,
                                "# node group %s (%d nodes): the scenario names no label that "
                                "selects them; put their names here\n"
                                "kubectl label --overwrite nodes -l "
                                "nvidia.com/gpu.product=%s %s\n",
                                grp->name, grp->nodes, gs_catalog_get(grp->model)->product, labels);
        }
    }
    snprintf(path, sizeof(path), "%s/node-labels.sh", dir);
    if (rc)
        goto oom;
    code = write_file(path, cm.data, cm.len);
    goto out;
oom:
    fprintf(stderr, "gpusched advise: out of memory\n");
    code = GS_EXIT_FAILURE;
out:
    gs_buf_release(&doc);
    gs_buf_release(&cm);
    gs_buf_release(&one);
    return code;
}

struct opts {
    const char *format, *report, *out, *kubeconfig, *save, *from, *print, *mig_config;
    double window_s;
    int budget, threads;
    int64_t seed;
};

#define O struct opts
/* the options of every subcommand; usage() words them */
#define ADVISE_FLAGS                                                                               \
    GS_CLI_CHOICE("--format", O, format, "table|json", "table or json", "table|json: output"),     \
        GS_CLI_STR("--report", O, report, "FILE.html: an HTML report"),                            \
        GS_CLI_STR("--out", O, out, "DIR: the recommended configs"),                               \
        GS_CLI_NUM("--budget", O, budget, 1, 100000, "N: setups to simulate at most"),             \
        GS_CLI_NUM("--threads", O, threads, 1, 64, "N: simulations at once"),                      \
        GS_CLI_NUM("--seed", O, seed, 0, 9e15, "N: the arrivals' seed")

static const struct gs_cli_flag advise_flags[] = {ADVISE_FLAGS, {0}};
static const struct gs_cli_flag cluster_flags[] = {
    ADVISE_FLAGS,
    GS_CLI_STR("--kubeconfig", O, kubeconfig, "FILE: the kubeconfig"),
    GS_CLI_STR("--from", O, from, "FILE.json: kubectl get nodes,pods -A -o json"),
    GS_CLI_STR("--save-scenario", O, save, "FILE: the scenario made"),
    GS_CLI_STR("--mig-config", O, mig_config, "FILE: mig-parted config (file or ConfigMap)"),
    GS_CLI_DURATION("--window", O, window_s, 600, INFINITY, "a duration of at least 10m",
                    "DURATION: finished pods within"),
    {0},
};
static const struct gs_cli_flag print_flag[] = {
    GS_CLI_STR("--print-scenario", O, print, "small|medium|large|xlarge"),
    {0},
};
#undef O

static int parse_opts(int argc, char **argv, struct opts *o, bool cluster)
{
    const struct gs_cli_parser p = {
        .prog = "gpusched advise",
        .flags = cluster ? cluster_flags : advise_flags,
        .unknown = "unknown or incomplete option",
        .incomplete = "unknown or incomplete option",
        .suffix = " (see --help)",
    };
    return gs_cli_parse(&p, o, argc, argv);
}

static int advise_and_print(struct gs_scenario *sc, const struct opts *o, char *const *node_names)
{
    if (o->seed >= 0)
        sc->seed = (uint64_t)o->seed;
    struct gs_error err;
    gs_error_init(&err);
    struct gs_advise_opts ao = {.threads = o->threads, .budget = o->budget};
    struct gs_advice *a = calloc(1, sizeof(*a));
    if (!a) {
        fprintf(stderr, "gpusched advise: out of memory\n");
        return GS_EXIT_FAILURE;
    }
    int rc = gs_advise(sc, &ao, a, &err);
    if (rc) {
        fprintf(stderr, "gpusched advise: %s\n", err.msg);
        free(a);
        return gs_cli_exit_code(rc);
    }
    const char *dir = o->out ? o->out : "gpusched-advice";
    int code = write_configs(a, dir, node_names);
    struct gs_buf b;
    gs_buf_init(&b, 0);
    bool json = strcmp(o->format, "json") == 0;
    if (!code) {
        rc = json ? gs_advice_json(a, dir, &b) : gs_advice_table(a, &b);
        if (!rc && !json)
            rc = gs_buf_printf(&b,
                               "\nconfigs written to %s/: mig-parted-config.yaml, "
                               "device-plugin-config.yaml, device-plugin/GROUP.yaml, "
                               "node-labels.sh\n",
                               dir);
        if (rc)
            code = GS_EXIT_FAILURE;
        else
            fputs(b.data ? b.data : "", stdout);
    }
    if (!code && o->report) {
        gs_buf_reset(&b);
        if (gs_advice_html(a, &b))
            code = GS_EXIT_FAILURE;
        else
            code = write_file(o->report, b.data, b.len);
        if (!code && !json)
            printf("report written to %s\n", o->report);
    }
    gs_buf_release(&b);
    gs_advice_free(a);
    free(a);
    return code;
}

static int cmd_scenario(int argc, char **argv)
{
    if (argc < 1 || argv[0][0] == '-') {
        fprintf(stderr, "gpusched advise scenario: FILE is required\n");
        return GS_EXIT_USAGE;
    }
    struct opts o = {.format = "table", .seed = -1};
    int code = parse_opts(argc - 1, argv + 1, &o, false);
    if (code)
        return code;
    struct gs_scenario *sc = calloc(1, sizeof(*sc));
    if (!sc)
        return GS_EXIT_FAILURE;
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_scenario_load(argv[0], sc, &err);
    if (rc) {
        fprintf(stderr, "gpusched advise: %s\n", err.msg);
        free(sc);
        return gs_cli_input_exit(rc);
    }
    code = advise_and_print(sc, &o, NULL);
    gs_scenario_release(sc);
    free(sc);
    return code;
}

static int cmd_sizes(int argc, char **argv)
{
    if (argc == 2 && gs_cli_flag_find(print_flag, argv[0])) {
        static const char *const names[GS_ADV_SIZES] = {"small", "medium", "large", "xlarge"};
        for (int i = 0; i < GS_ADV_SIZES; i++)
            if (strcmp(argv[1], names[i]) == 0) {
                fputs(gs_adv_size_yaml(i), stdout);
                return GS_EXIT_OK;
            }
        fprintf(stderr,
                "gpusched advise sizes: --print-scenario '%s': expected small, medium, "
                "large or xlarge\n",
                argv[1]);
        return GS_EXIT_USAGE;
    }
    struct opts o = {.format = "table", .seed = -1};
    int code = parse_opts(argc, argv, &o, false);
    if (code)
        return code;
    if (o.report || o.out || o.seed >= 0) {
        fprintf(stderr, "gpusched advise sizes: takes only --format, --budget and --threads\n");
        return GS_EXIT_USAGE;
    }
    struct gs_adv_size *sz = calloc(GS_ADV_SIZES, sizeof(*sz));
    struct gs_scenario *scs = calloc(GS_ADV_SIZES, sizeof(*scs));
    if (!sz || !scs) {
        free(sz);
        free(scs);
        return GS_EXIT_FAILURE;
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_advise_opts ao = {.threads = o.threads, .budget = o.budget};
    int rc = gs_advise_sizes(&ao, sz, scs, &err);
    if (rc) {
        fprintf(stderr, "gpusched advise sizes: %s\n", err.msg);
        code = gs_cli_exit_code(rc);
    } else {
        struct gs_buf b;
        gs_buf_init(&b, 0);
        rc = strcmp(o.format, "json") == 0 ? gs_adv_sizes_json(sz, &b) : gs_adv_sizes_table(sz, &b);
        if (rc)
            code = GS_EXIT_FAILURE;
        else
            fputs(b.data ? b.data : "", stdout);
        gs_buf_release(&b);
    }
    for (int i = 0; i < GS_ADV_SIZES; i++) {
        gs_advice_free(&sz[i].advice);
        gs_scenario_release(&scs[i]);
    }
    free(sz);
    free(scs);
    return code;
}

static int cmd_cluster(int argc, char **argv)
{
    struct opts o = {.format = "table", .seed = -1, .window_s = 86400};
    int code = parse_opts(argc, argv, &o, true);
    if (code)
        return code;
    if (o.from && o.kubeconfig) {
        fprintf(stderr, "gpusched advise cluster: --from and --kubeconfig exclude each other\n");
        return GS_EXIT_USAGE;
    }
    struct gs_scenario *sc = calloc(1, sizeof(*sc));
    char **names = calloc(GS_SC_MAX_GROUPS, sizeof(char *));
    if (!sc || !names) {
        free(sc);
        free(names);
        return GS_EXIT_FAILURE;
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_buf yaml;
    gs_buf_init(&yaml, 0);
    int rc = gs_advise_cluster_scenario(o.kubeconfig, o.from, o.mig_config, o.window_s, sc, names,
                                        &yaml, &err);
    if (rc) {
        fprintf(stderr, "gpusched advise cluster: %s\n", err.msg);
        code = gs_cli_exit_code(rc);
        goto out;
    }
    /* the configs' folder first: the scenario may be saved into it */
    if ((code = mkdir_p(o.out ? o.out : "gpusched-advice")))
        goto out;
    if (o.save && (code = write_file(o.save, yaml.data, yaml.len)))
        goto out;
    code = advise_and_print(sc, &o, names);
out:
    for (int g = 0; g < GS_SC_MAX_GROUPS; g++)
        free(names[g]);
    free(names);
    gs_buf_release(&yaml);
    gs_scenario_release(sc);
    free(sc);
    return code;
}

static const struct gs_cli_command advise_commands[] = {
    {"scenario", cmd_scenario, "a scenario file"},
    {"sizes", cmd_sizes, "the article's cluster-size table"},
    {"cluster", cmd_cluster, "the live cluster"},
    {NULL, NULL, NULL},
};

int gs_cli_advise(int argc, char **argv)
{
    static const struct gs_cli_commands d = {
        .prog = "gpusched advise",
        .commands = advise_commands,
        .usage = usage,
        .unknown = "unknown subcommand",
        .suffix = " (scenario, cluster, sizes)",
    };
    return gs_cli_dispatch(&d, argc, argv);
}
