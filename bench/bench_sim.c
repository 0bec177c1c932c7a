/* bench_sim - wall time of the openb default experiment (all seven policies and the offline
 * bound, seeds 42-51, tune 1.3) and of the embedded default scenario. Prints JSON lines; the openb
 * line is skipped (with a note on stderr) when ../shared/data/openb is absent. */
#include "base/error.h"
#include "sim/openb.h"
#include "sim/scenario.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *shared = argc > 1 ? argv[1] : "../shared";
    char np[1024], pp[1024];
    snprintf(np, sizeof(np), "%s/data/openb/openb_node_list_gpu_node.csv", shared);
    snprintf(pp, sizeof(pp), "%s/data/openb/openb_pod_list_default.csv", shared);
    struct gs_error err;
    gs_error_init(&err);
    struct gs_openb_node *nodes;
    struct gs_openb_pod *pods;
    int nn = gs_openb_load_nodes(np, &nodes, &err);
    int npods = nn > 0 ? gs_openb_load_pods(pp, &pods, &err) : -1;
    if (nn > 0 && npods > 0) {
        const struct gs_policy *pol[16];
        int n = gs_policy_count();
        for (int i = 0; i < n; i++)
            pol[i] = gs_policy_get(i);
        pol[n++] = gs_openb_offline_policy();
        struct gs_openb_spec spec = {.nodes = nodes,
                                     .nnodes = nn,
                                     .pods = pods,
                                     .npods = npods,
                                     .tune = 1.3,
                                     .seed_lo = 42,
                                     .seed_hi = 51};
        struct gs_openb_result res[16];
        double t0 = now();
        int rc = gs_openb_experiment(&spec, pol, n, res, &err);
        double dt = now() - t0;
        if (rc) {
            fprintf(stderr, "bench_sim: %s\n", err.msg);
            return 1;
        }
        printf("{\"bench\":\"sim_openb_default\",\"policies\":%d,\"seeds\":10,\"tune\":1.3,"
               "\"wall_s\":%.2f",
               n, dt);
        for (int i = 0; i < n; i++) {
            printf(",\"%s_unallocated_pct\":%.2f", res[i].policy->name, res[i].unalloc_mean);
            if (res[i].policy == gs_openb_offline_policy())
                printf(",\"offline_lower_bound_pct\":%.2f", res[i].bound_mean);
            gs_openb_result_release(&res[i]);
        }
        printf("}\n");
        free(nodes);
        free(pods);
    } else {
        fprintf(stderr, "bench_sim: openb traces not found under %s/data/openb: skipped\n", shared);
    }
    struct gs_scenario *sc = calloc(1, sizeof(*sc));
    struct gs_sim_result *r = calloc(GS_SIM_STRATEGIES, sizeof(*r));
    if (!sc || !r ||
        gs_scenario_parse("default", gs_default_scenario_yaml, strlen(gs_default_scenario_yaml), sc,
                          &err))
        return 1;
    double t0 = now();
    if (gs_sim_run_all(sc, 1, r, &err)) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    printf("{\"bench\":\"sim_default_scenario\",\"strategies\":%d,\"simulated_hours\":%.0f,"
           "\"wall_s\":%.3f}\n",
           GS_SIM_STRATEGIES, sc->duration_s / 3600, now() - t0);
    gs_scenario_release(sc);
    free(sc);
    free(r);
    return 0;
}
