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

int main(int argc, char **argv)
{
    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        if (strcmp(argv[i], "--log-level") == 0 && i + 1 < argc) {
            enum gs_log_level lv;
            if (gs_log_parse_level(argv[i + 1], &lv)) {
                fprintf(stderr, "gpusched: --log-level '%s': expected error, warn, info or debug\n",
                        argv[i + 1]);
                return GS_EXIT_USAGE;
            }
            gs_log_set_level(lv);
            i += 2;
        } else if (strcmp(argv[i], "--version") == 0) {
            return version(0, NULL);
        } else if (gs_cli_is_help(argv[i])) {
            usage(stdout);
            return GS_EXIT_OK;
        } else {
            fprintf(stderr, "gpusched: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return GS_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return GS_EXIT_USAGE;
    }
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
