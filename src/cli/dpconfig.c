/* dpconfig.c - `gpusched dpconfig validate FILE`: read an NVIDIA device-plugin v1 config (or
 * the ConfigMap it ships in) with the reader the agent uses (formats/dpconfig.h) and print
 * what it configures. */
#include "cli.h"

#include "../base/error.h"
#include "../formats/dpconfig.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: gpusched dpconfig validate FILE...\n"
               "\n"
               "Reads each NVIDIA k8s-device-plugin config (version v1, YAML or JSON, or the\n"
               "ConfigMap it ships in) as the agent's --dp-config does, with upstream's rules,\n"
               "and prints its MIG strategy and sharing; exit 2 with file:line on the first\n"
               "error.\n");
}

static int cmd_validate(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "gpusched dpconfig validate: FILE is required\n");
        return GS_EXIT_USAGE;
    }
    for (int i = 0; i < argc; i++) {
        static struct gs_dpconfig dp;
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_dpconfig_load(argv[i], &dp, &err);
        if (rc) {
            fprintf(stderr, "gpusched dpconfig: %s\n", err.msg);
            return gs_cli_input_exit(rc);
        }
        const struct gs_dp_sharing *sh = dp.sharing == GS_SHARING_MPS ? &dp.mps : &dp.timeslicing;
        printf("%s: valid; migStrategy %s, sharing %s", argv[i],
               gs_mig_strategy_name(dp.mig_strategy), gs_sharing_name(dp.sharing));
        for (int r = 0; dp.sharing != GS_SHARING_NONE && r < sh->nresources; r++)
            printf("%s%s x%d", r ? ", " : " (", sh->resources[r].name, sh->resources[r].replicas);
        printf("%s\n", dp.sharing != GS_SHARING_NONE && sh->nresources ? ")" : "");
    }
    return GS_EXIT_OK;
}

static const struct gs_cli_command dpconfig_commands[] = {
    {"validate", cmd_validate, "read device-plugin configs, print what they configure"},
    {NULL, NULL, NULL},
};

int gs_cli_dpconfig(int argc, char **argv)
{
    static const struct gs_cli_commands d = {
        .prog = "gpusched dpconfig",
        .commands = dpconfig_commands,
        .usage = usage,
        .unknown = "unknown subcommand",
        .suffix = " (validate)",
    };
    return gs_cli_dispatch(&d, argc, argv);
}
