/* cli.c - what the subcommands of the gpusched binary share (cli.h): --help detection,
 * bounded number flags and exit codes from error codes. main.c and every subcommand file use
 * these; nothing here depends on main.c. */
#include "cli.h"

#include "../base/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gs_cli_wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    return false;
}

int gs_cli_number(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "gpusched: %s '%s': expected a number in %g..%g\n", flag, v, lo, hi);
        return GS_EXIT_USAGE;
    }
    *out = x;
    return 0;
}

int gs_cli_exit_code(int rc)
{
    if (rc == 0)
        return GS_EXIT_OK;
    if (rc == GS_EINVAL || rc == GS_ENOTFOUND || rc == GS_ENOFIT)
        return GS_EXIT_USAGE;
    return GS_EXIT_FAILURE;
}
