/* main.c - the gpusched binary: global flags, then dispatch to one file per subcommand
 * (src/cli/<command>.c); the helpers they share are in cli.c. */
#include "cli.h"

#include "../base/log.h"

#include <stdio.h>
#include <string.h>

static int version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("gpusched %s\n", GS_VERSION);
    return GS_EXIT_OK;
}

/* The subcommands: one row each, in the order usage lists them. */
static const struct gs_cli_command commands[] = {
    {"scheduler", gs_cli_scheduler,
     "schedule pods with schedulerName gpusched on a Kubernetes cluster"},
    {"extender", gs_cli_extender,
     "the same decisions for a stock kube-scheduler (extender protocol)"},
    {"explain", gs_cli_explain,
     "why a pending pod waits (quota, fragmentation, priority, gang...)"},
    {"top", gs_cli_top,
     "the scheduler's dashboard in a terminal: GPUs, MIG slices and\n"
     "             holders, queues, pending pods and why, recent events"},
    {"agent", gs_cli_agent,
     "node agent: kubelet device plugin, MIG manager, health and\n"
     "             cordoning, GPU labels, /metrics; agent inspect shows what the GPU\n"
     "             backend sees (see gpusched agent --help)"},
    {"sim", gs_cli_sim,
     "simulate: the embedded default scenario, a scenario file, or the\n"
     "             openb trace experiment (see gpusched sim --help)"},
    {"mig", gs_cli_mig,
     "MIG geometry: profiles, layouts, validate a mig-parted config,\n"
     "             plan layouts for a demand (see gpusched mig --help)"},
    {"advise", gs_cli_advise,
     "advice backed by simulation: sharing mode and MIG layout per node\n"
     "             group for a scenario or the live cluster, and the article's\n"
     "             cluster-size table measured (see gpusched advise --help)"},
    {"dpconfig", gs_cli_dpconfig,
     "validate an NVIDIA device-plugin config (dpconfig validate FILE)"},
    {"version", version, "print gpusched's version"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gpusched [--log-level LEVEL] COMMAND [ARGS]\n"
               "\n"
               "GPU scheduling for Kubernetes AI clusters: MIG partitioning, GPU sharing and\n"
               "multi-tenant placement, with a simulator that runs the very same engine.\n"
               "\n"
               "commands:\n");
    for (const struct gs_cli_command *c = commands; c->name; c++)
        fprintf(f, "  %-9s  %s\n", c->name, c->help);
    fprintf(f, "\nexit codes: 0 ok, 1 runtime failure, 2 bad input\n");
}

/* what the global flags fill */
struct global_cli {
    const char *command; /* the first argument that is not a flag */
};

static int log_level_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    enum gs_log_level lv;
    if (gs_log_parse_level(v, &lv))
        return GS_EXIT_USAGE;
    gs_log_set_level(lv);
    return 0;
}

static int version_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    version(0, NULL);
    return GS_CLI_STOP;
}

static int help_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    usage(stdout);
    return GS_CLI_STOP;
}

static int command_arg(void *opts, const char *arg)
{
    ((struct global_cli *)opts)->command = arg;
    return GS_CLI_STOP;
}

static const struct gs_cli_flag global_flags[] = {
    GS_CLI_FN("--log-level", 0, log_level_flag, 0, 0, "error, warn, info or debug",
              "LEVEL: error, warn, info or debug"),
    GS_CLI_FN_BARE("--version", 0, version_flag, "print gpusched's version"),
    GS_CLI_FN_BARE("-h", 0, help_flag, "this help"),
    GS_CLI_FN_BARE("--help", 0, help_flag, "this help"),
    {0},
};

static const struct gs_cli_parser global_parser = {
    .prog = "gpusched",
    .flags = global_flags,
    .unknown = "unknown option",
    .incomplete = "unknown option",
    .usage = usage,
    .positional = command_arg,
};

int main(int argc, char **argv)
{
    struct global_cli g = {NULL};
    int rc = gs_cli_parse(&global_parser, &g, argc - 1, argv + 1);
    if (rc == GS_CLI_STOP && !g.command)
        return GS_EXIT_OK; /* --version, --help */
    if (rc && rc != GS_CLI_STOP)
        return rc;
    if (!g.command) {
        usage(stderr);
        return GS_EXIT_USAGE;
    }
    int i = 1;
    while (argv[i] != g.command)
        i++;
    const char *cmd = argv[i];
    const struct gs_cli_command *c = gs_cli_command_find(commands, cmd);
    if (c)
        return c->run(argc - i - 1, argv + i + 1);
    if (strcmp(cmd, "help") == 0) {
        usage(stdout);
        return GS_EXIT_OK;
    }
    fprintf(stderr, "gpusched: unknown command '%s'\n", cmd);
    usage(stderr);
    return GS_EXIT_USAGE;
}
