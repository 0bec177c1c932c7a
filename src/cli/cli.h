/* cli.h - subcommand entry points of the gpusched binary (one file each in src/cli, called
 * by main.c) and the helpers they share (cli.c). Each entry point returns the process exit
 * code: 0 ok, 1 runtime failure, 2 bad input. Flags are parsed here; all logic lives in
 * the library. The helpers print to stderr and are not thread-safe (strtod's errno). */
#ifndef GS_CLI_H
#define GS_CLI_H

#include <stdbool.h>

#define GS_EXIT_OK      0
#define GS_EXIT_FAILURE 1
#define GS_EXIT_USAGE   2

int gs_cli_sim(int argc, char **argv);
int gs_cli_mig(int argc, char **argv);
int gs_cli_sim_scenario(int argc, char **argv);
int gs_cli_scheduler(int argc, char **argv);
int gs_cli_extender(int argc, char **argv);
int gs_cli_explain(int argc, char **argv);
int gs_cli_agent(int argc, char **argv);
int gs_cli_advise(int argc, char **argv);
int gs_cli_dpconfig(int argc, char **argv);
int gs_cli_top(int argc, char **argv);

/* true when argv has -h or --help */
bool gs_cli_wants_help(int argc, char **argv);
/* A number flag in lo..hi; on bad input prints "gpusched: FLAG 'V': expected a number in
 * LO..HI" and returns GS_EXIT_USAGE, else 0. */
int gs_cli_number(const char *flag, const char *v, double lo, double hi, double *out);
/* exit code for an error code (GS_EINVAL & co -> 2, others -> 1) */
int gs_cli_exit_code(int rc);

#endif
