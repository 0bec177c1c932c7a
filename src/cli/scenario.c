/* scenario.c - `gpusched sim` with no arguments (the embedded default) and `gpusched sim
 * scenario FILE`: runs the seven strategies and prints a table, JSON or an HTML report; with
 * --decisions STRATEGY, runs that one and prints each cycle's decisions (formats/decision.h)
 * and each autoscaler change of a service (SCALE lines), those up to --until seconds of
 * simulated time. */
#include "cli.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../formats/scenario.h"
#include "../sim/report.h"
#include "../sim/scenario.h"
#include "../sim/service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct trace {
    double until;
};

static void print_decision(void *ctx, double t, const char *line)
{
    const struct trace *tr = ctx;
    if (t <= tr->until)
        printf("t=%.3f %s\n", t, line);
}

struct scenario_cli {
    const char *format, *report, *decisions;
    double until;
    int64_t seed;
};

static int seed_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    char *end;
    errno = 0;
    long long s = strtoll(v, &end, 10);
    if (errno || *end || s < 0)
        return GS_EINVAL;
    *(int64_t *)field = s;
    return 0;
}

#define C struct scenario_cli
static const struct gs_cli_flag scenario_flags[] = {
    GS_CLI_STR("--format", C, format, "table|json"),
    GS_CLI_STR("--report", C, report, "OUT.html: an HTML report"),
    GS_CLI_STR("--decisions", C, decisions, "STRATEGY: its decisions per cycle"),
    GS_CLI_DURATION("--until", C, until, 0, 1e9, "a duration (0s, 10m)",
                    "DURATION: decisions up to"),
    GS_CLI_FN("--seed", offsetof(C, seed), seed_flag, 0, 0, "a non-negative integer",
              "N: the arrivals' seed"),
    {0},
};
#undef C

static const struct gs_cli_parser scenario_parser = {
    .prog = "gpusched sim",
    .flags = scenario_flags,
    .unknown = "unknown or incomplete option",
    .incomplete = "unknown or incomplete option",
    .suffix = " (see --help)",
};

/* The services' HPA metrics against their replicas' devices (sim/service.h), under the one
 * strategy run or all of them: a warning per metric some replicas lack, an error when none
 * could report it. Returns an exit code. */
static int check_metrics(const struct gs_scenario *sc, const struct gs_strategy *one)
{
    const struct gs_strategy *st[GS_SIM_STRATEGIES];
    int nst = one ? 1 : GS_SIM_STRATEGIES;
    for (int k = 0; k < nst; k++)
        st[k] = one ? one : gs_strategy_get(k);
    struct gs_buf warn;
    gs_buf_init(&warn, 0);
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_svc_check_metrics(sc, st, nst, &warn, &err);
    for (char *l = warn.data, *nl; l && *l; l = nl + 1) {
        nl = strchr(l, '\n');
        fprintf(stderr, "gpusched sim: warning: %.*s\n", (int)(nl - l), l);
    }
    gs_buf_release(&warn);
    if (rc)
        fprintf(stderr, "gpusched sim: %s\n", err.msg);
    return rc == GS_EINVAL ? GS_EXIT_USAGE : rc ? GS_EXIT_FAILURE : GS_EXIT_OK;
}

int gs_cli_sim_scenario(int argc, char **argv)
{
    const char *file = NULL;
    struct scenario_cli c = {.format = "table", .until = 1e18, .seed = -1};
    int i = 0;
    if (argc > 0 && strcmp(argv[0], "scenario") == 0) {
        if (argc < 2 || argv[1][0] == '-') {
            fprintf(stderr, "gpusched sim scenario: FILE is required\n");
            return GS_EXIT_USAGE;
        }
        file = argv[1];
        i = 2;
    }
    int code = gs_cli_parse(&scenario_parser, &c, argc - i, argv + i);
    if (code)
        return code;
    const char *format = c.format, *report = c.report, *decisions = c.decisions;
    struct trace tr = {c.until};
    int64_t seed = c.seed;
    bool json = strcmp(format, "json") == 0;
    if (!json && strcmp(format, "table") != 0) {
        fprintf(stderr, "gpusched sim: --format '%s': expected table or json\n", format);
        return GS_EXIT_USAGE;
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_scenario *sc = calloc(1, sizeof(*sc));
    struct gs_sim_result *res = calloc(GS_SIM_STRATEGIES, sizeof(*res));
    if (!sc || !res) {
        free(sc);
        free(res);
        fprintf(stderr, "gpusched sim: out of memory\n");
        return GS_EXIT_FAILURE;
    }
    int rc = file ? gs_scenario_load(file, sc, &err)
                  : gs_scenario_parse("embedded default scenario", gs_default_scenario_yaml,
                                      strlen(gs_default_scenario_yaml), sc, &err);
    code = GS_EXIT_OK;
    if (rc) {
        fprintf(stderr, "gpusched sim: %s\n", err.msg);
        code = gs_cli_input_exit(rc);
        goto out;
    }
    if (seed >= 0)
        sc->seed = (uint64_t)seed;
    const struct gs_strategy *st = decisions ? gs_strategy_find(decisions) : NULL;
    if (decisions && !st) {
        fprintf(stderr, "gpusched sim: --decisions '%s': no such strategy (", decisions);
        for (int k = 0; k < GS_SIM_STRATEGIES; k++)
            fprintf(stderr, "%s%s", k ? ", " : "", gs_strategy_get(k)->name);
        fprintf(stderr, ")\n");
        code = GS_EXIT_USAGE;
        goto out;
    }
    if ((code = check_metrics(sc, st)))
        goto out;
    if (decisions) {
        rc = gs_sim_run_traced(sc, st, print_decision, &tr, res, &err);
        if (rc) {
            fprintf(stderr, "gpusched sim: %s\n", err.msg);
            code = gs_cli_exit_code(rc);
        }
        goto out;
    }
    rc = gs_sim_run_all(sc, 0, res, &err);
    if (rc) {
        fprintf(stderr, "gpusched sim: %s\n", err.msg);
        code = gs_cli_exit_code(rc);
        goto out;
    }
    struct gs_buf b;
    gs_buf_init(&b, 0);
    rc = json ? gs_report_json(sc, res, GS_SIM_STRATEGIES, &b)
              : gs_report_table(sc, res, GS_SIM_STRATEGIES, &b);
    if (!rc)
        fputs(b.data ? b.data : "", stdout);
    gs_buf_reset(&b);
    if (!rc && report) {
        rc = gs_report_html(sc, res, GS_SIM_STRATEGIES, &b);
        FILE *f = rc ? NULL : fopen(report, "w");
        if (!f || fwrite(b.data, 1, b.len, f) != b.len) {
            fprintf(stderr, "gpusched sim: cannot write report '%s': %s\n", report,
                    strerror(errno));
            code = GS_EXIT_FAILURE;
        } else if (!json) {
            printf("report written to %s\n", report);
        }
        if (f)
            fclose(f);
    }
    gs_buf_release(&b);
    if (rc && code == GS_EXIT_OK)
        code = GS_EXIT_FAILURE;
out:
    gs_scenario_release(sc);
    free(sc);
    free(res);
    return code;
}
