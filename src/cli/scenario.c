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

int gs_cli_sim_scenario(int argc, char **argv)
{
    const char *file = NULL, *format = "table", *report = NULL, *decisions = NULL;
    struct trace tr = {1e18};
    int64_t seed = -1;
    int i = 0;
    if (argc > 0 && strcmp(argv[0], "scenario") == 0) {
        if (argc < 2 || argv[1][0] == '-') {
            fprintf(stderr, "gpusched sim scenario: FILE is required\n");
            return GS_EXIT_USAGE;
        }
        file = argv[1];
        i = 2;
    }
    for (; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--format") == 0 && v) {
            format = v;
            i++;
        } else if (strcmp(a, "--report") == 0 && v) {
            report = v;
            i++;
        } else if (strcmp(a, "--decisions") == 0 && v) {
            decisions = v;
            i++;
        } else if (strcmp(a, "--until") == 0 && v) {
            if (gs_parse_duration(v, &tr.until)) {
                fprintf(stderr, "gpusched sim: --until '%s': expected a duration (0s, 10m)\n", v);
                return GS_EXIT_USAGE;
            }
            i++;
        } else if (strcmp(a, "--seed") == 0 && v) {
            char *end;
            errno = 0;
            long long s = strtoll(v, &end, 10);
            if (errno || *end || s < 0) {
                fprintf(stderr, "gpusched sim: --seed '%s': expected a non-negative integer\n", v);
                return GS_EXIT_USAGE;
            }
            seed = s;
            i++;
        } else {
            fprintf(stderr, "gpusched sim: unknown or incomplete option '%s' (see --help)\n", a);
            return GS_EXIT_USAGE;
        }
    }
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
    int code = GS_EXIT_OK;
    if (rc) {
        fprintf(stderr, "gpusched sim: %s\n", err.msg);
        code = rc == GS_EIO || rc == GS_EINVAL ? GS_EXIT_USAGE : GS_EXIT_FAILURE;
        goto out;
    }
    if (seed >= 0)
        sc->seed = (uint64_t)seed;
    if (decisions) {
        const struct gs_strategy *st = gs_strategy_find(decisions);
        if (!st) {
            fprintf(stderr, "gpusched sim: --decisions '%s': no such strategy (", decisions);
            for (int k = 0; k < GS_SIM_STRATEGIES; k++)
                fprintf(stderr, "%s%s", k ? ", " : "", gs_strategy_get(k)->name);
            fprintf(stderr, ")\n");
            code = GS_EXIT_USAGE;
            goto out;
        }
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
