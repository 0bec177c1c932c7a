/* Formats: mig-parted config, NVIDIA device-plugin config, openb CSV variants and scenario
 * files — good input parses, bad input is rejected with file:line and what was expected. */
#include "base/buf.h"
#include "base/error.h"
#include "formats/dpconfig.h"
#include "formats/inventory.h"
#include "formats/migdesired.h"
#include "formats/migparted.h"
#include "formats/monitorcfg.h"
#include "formats/openb.h"
#include "formats/scenario.h"
#include "core/catalog.h"
#include "sim/scenario.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *examples(const char *file, char *buf, size_t n)
{
    snprintf(buf, n, "%s/seed/examples/%s", GS_SHARED_DIR, file);
    return buf;
}

static bool have_shared(void)
{
    char p[512];
    FILE *f = fopen(examples("nvidia-mig-config.yaml", p, sizeof(p)), "r");
    if (f)
        fclose(f);
    return f != NULL;
}

Test(migparted, the_articles_payload_parses_and_fits)
{
    struct gs_migparted *m = NULL;
    struct gs_error err;
    gs_error_init(&err);
    const char *t = gs_article_mig_config_yaml;
    cr_assert_eq(gs_migparted_parse("article", t, strlen(t), &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m->nconfigs, 4);
    const struct gs_mp_config *mixed = gs_migparted_find(m, "mixed");
    cr_assert_not_null(mixed);
    cr_assert_eq(mixed->nentries, 3);
    cr_assert_eq(gs_migparted_check(m, -1, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_migparted_check(m, gs_catalog_find("A100-80GB"), &err), 0, "%s", err.msg);
    cr_assert_eq(gs_migparted_check(m, gs_catalog_find("H100-80GB"), &err), 0, "%s", err.msg);
    /* on an A100-40GB "1g.10gb" is the double-memory profile: at most 4 */
    cr_assert_neq(gs_migparted_check(m, gs_catalog_find("A100-40GB"), &err), 0);
    cr_assert(strstr(err.msg, "at most 4") != NULL, "%s", err.msg);
    /* resolve per GPU index */
    bool en;
    struct gs_mig_layout l;
    int a100 = gs_catalog_find("A100-80GB");
    cr_assert_eq(gs_migparted_resolve(mixed, 0, a100, &en, &l, &err), 1);
    cr_assert(en);
    cr_assert_eq(l.count[gs_catalog_find_profile(a100, "3g.40gb")], 2);
    cr_assert_eq(gs_migparted_resolve(mixed, 1, a100, &en, &l, &err), 1);
    cr_assert_eq(l.count[gs_catalog_find_profile(a100, "1g.10gb")], 7);
    cr_assert_eq(gs_migparted_resolve(mixed, 2, a100, &en, &l, &err), 1);
    cr_assert(!en);
    cr_assert_eq(gs_migparted_resolve(mixed, 5, a100, &en, &l, &err), 0, "no entry for GPU 5");
    gs_migparted_free(m);
}

Test(migparted, the_articles_configmap_file_parses_as_it_is)
{
    if (!have_shared())
        cr_skip_test("../shared/seed/examples not present");
    char p[512];
    struct gs_migparted *m = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_migparted_load(examples("nvidia-mig-config.yaml", p, sizeof(p)), &m, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(m->nconfigs, 4);
    cr_assert_eq(gs_migparted_check(m, -1, &err), 0, "%s", err.msg);
    gs_migparted_free(m);
}

struct bad_case {
    const char *doc;
    int model_check; /* 1: parse succeeds, check (A100-80GB) fails */
    int line;
    const char *want;
};

static const struct bad_case bad[] = {
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
     "      mig-devices:\n        \"1g.10gb\": 8\n",
     1, 7, "at most 7"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
     "      mig-devices:\n        \"4g.40gb\": 2\n",
     1, 7, "at most 1"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
     "      mig-devices:\n        \"1g.11gb\": 1\n",
     1, 7, "1g.11gb is not an A100-80GB profile; A100-80GB offers 1g.10gb"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
     "      mig-devices:\n        \"3g.71gb\": 2\n",
     1, 7, "(closest: 3g.40gb)"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
     "      mig-devices:\n        \"zz\": 1\n",
     0, 7, "not a MIG profile name"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: [0\n", 0, 0, "invalid YAML"},
    {"version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n", 0, 1,
     "unknown version"},
    {"mig-configs: {a: [{devices: all, mig-enabled: false}]}\n", 0, 1, "version"},
    {"version: v1\nmig-configs: {}\n", 0, 2, "non-empty"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: some\n      mig-enabled: true\n", 0, 4,
     "'all' or a list"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n", 0, 4, "mig-enabled"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n", 0, 4,
     "mig-devices"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n"
     "      mig-devices: {\"1g.10gb\": 1}\n",
     0, 6, "mig-enabled is false"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
     "      mig-devices: {\"1g.10gb\": 0}\n",
     0, 6, "all counts"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
     "      colour: blue\n",
     0, 6, "unexpected field"},
    {"version: v1\nextra: 1\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n", 0, 2,
     "unexpected field"},
    {"version: v1\nmig-configs:\n  a:\n    - device-filter: nope\n      devices: all\n"
     "      mig-enabled: false\n",
     0, 4, "PCI id"},
    /* a GPU index in two entries of one config */
    {"version: v1\nmig-configs:\n  a:\n    - devices: [0, 1]\n      mig-enabled: false\n"
     "    - devices: [1]\n      mig-enabled: false\n",
     0, 6, "mig-configs.a[1].devices: GPU 1 is also in mig-configs.a[0].devices (line 4)"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n"
     "    - devices: [2]\n      mig-enabled: false\n",
     0, 6, "mig-configs.a[1].devices: GPU 2 is also in mig-configs.a[0].devices: all (line 4)"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: [3]\n      mig-enabled: false\n"
     "    - devices: all\n      mig-enabled: false\n",
     0, 6,
     "mig-configs.a[1].devices: all takes in GPU 3, already in mig-configs.a[0].devices (line "
     "4)"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n"
     "  b:\n    - devices: [0]\n      mig-enabled: false\n"
     "    - devices: all\n      mig-enabled: false\n",
     0, 9, "mig-configs.b[1].devices: all takes in GPU 0"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n"
     "    - devices: all\n      mig-enabled: false\n",
     0, 6,
     "mig-configs.a[1].devices: all takes in every GPU, already in mig-configs.a[0].devices: "
     "all (line 4)"},
    {"version: v1\nmig-configs:\n  a:\n    - devices: [4, 5,\n        4]\n"
     "      mig-enabled: false\n",
     0, 5, "mig-configs.a[0].devices: GPU 4 listed twice"},
    /* filters that can match the same GPU do not separate entries */
    {"version: v1\nmig-configs:\n  a:\n    - device-filter: \"0x20B210DE\"\n"
     "      devices: all\n      mig-enabled: false\n"
     "    - device-filter: [\"0x233010DE\", \"0x20B210DE\"]\n"
     "      devices: all\n      mig-enabled: false\n",
     0, 8, "mig-configs.a[1].devices: all takes in every GPU"},
    {"version: v1\nmig-configs:\n  a:\n    - device-filter: \"0x20B210DE\"\n"
     "      devices: [0]\n      mig-enabled: false\n"
     "    - devices: [0]\n      mig-enabled: false\n",
     0, 7, "GPU 0 is also in mig-configs.a[0].devices (line 5)"},
};

Test(migparted, bad_configs_name_the_line_and_change_nothing)
{
    int a100 = gs_catalog_find("A100-80GB");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gs_migparted *m = (struct gs_migparted *)0x1;
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_migparted_parse("t.yaml", bad[i].doc, strlen(bad[i].doc), &m, &err);
        if (bad[i].model_check) {
            cr_assert_eq(rc, 0, "case %zu: parse failed: %s", i, err.msg);
            rc = gs_migparted_check(m, a100, &err);
            gs_migparted_free(m);
        } else {
            cr_assert_null(m, "case %zu: failed parse must leave no config", i);
        }
        cr_assert_eq(rc, GS_EINVAL, "case %zu accepted", i);
        cr_assert(strstr(err.msg, bad[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
                  bad[i].want);
        if (bad[i].line) {
            char at[32];
            snprintf(at, sizeof(at), "t.yaml:%d:", bad[i].line);
            cr_assert(strstr(err.msg, at) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg, at);
        }
    }
}

Test(migparted, entries_for_different_gpu_models_may_name_the_same_indexes)
{
    /* NVIDIA's generated configs for nodes with two GPU models: one entry per model, each
     * with devices: all and a device-filter; filters with another subsystem id match other
     * boards */
    const char *t = "version: v1\nmig-configs:\n  all-1g:\n"
                    "    - device-filter: [\"0x20B010DE\", \"0x20B110DE\"]\n"
                    "      devices: all\n      mig-enabled: true\n"
                    "      mig-devices: {\"1g.5gb\": 7}\n"
                    "    - device-filter: \"0x20B210DE\"\n"
                    "      devices: all\n      mig-enabled: true\n"
                    "      mig-devices: {\"1g.10gb\": 7}\n"
                    "    - device-filter: \"0x233010DE:0x16C110DE\"\n"
                    "      devices: [0, 1]\n      mig-enabled: false\n"
                    "    - device-filter: \"0x233010DE:0x16C210DE\"\n"
                    "      devices: [1]\n      mig-enabled: false\n"
                    "  split:\n    - devices: [0]\n      mig-enabled: false\n"
                    "    - devices: [1, 2]\n      mig-enabled: false\n";
    struct gs_migparted *m = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_migparted_parse("two-models.yaml", t, strlen(t), &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m->configs[0].nentries, 4);
    gs_migparted_free(m);
}

Test(migparted, profile_string_syntax)
{
    const char *ok[] = {"1g.10gb",        "1g.10gb+me", "3g.40gb",       "1c.3g.40gb",
                        "1g.10gb+me.all", "1g.24gb-me", "1g.23gb+gfx,me"};
    const char *no[] = {"",
                        "1g",
                        "g.10gb",
                        "1g.10",
                        "1g.10gb+",
                        "1g.10gb+me+gfx",
                        "1g.10gb+me-gfx",
                        "1g.10gb+1me",
                        "1 g.10gb",
                        "0g.10gb",
                        "1g.10gb+me,me"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        cr_assert(gs_mig_profile_syntax_ok(ok[i]), "'%s' rejected", ok[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        cr_assert(!gs_mig_profile_syntax_ok(no[i]), "'%s' accepted", no[i]);
}

Test(dpconfig, the_articles_time_slicing_and_mps_configs)
{
    if (!have_shared())
        cr_skip_test("../shared/seed/examples not present");
    char p[512];
    struct gs_dpconfig c;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_dpconfig_load(examples("gpu-time-slicing.yaml", p, sizeof(p)), &c, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(c.sharing, GS_SHARING_TIMESLICING);
    cr_assert_eq(c.mig_strategy, GS_MIG_STRATEGY_NONE);
    cr_assert_eq(c.timeslicing.nresources, 1);
    cr_assert_str_eq(c.timeslicing.resources[0].name, "nvidia.com/gpu");
    cr_assert_eq(c.timeslicing.resources[0].replicas, 4);
    cr_assert(c.timeslicing.resources[0].all_devices);
    cr_assert(!c.timeslicing.fail_requests_gt_one);
    cr_assert_eq(gs_dpconfig_load(examples("gpu-mps-config.yaml", p, sizeof(p)), &c, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(c.sharing, GS_SHARING_MPS);
    cr_assert_eq(c.mps.resources[0].replicas, 2);
    cr_assert(c.mps.fail_requests_gt_one, "MPS defaults failRequestsGreaterThanOne to true");
}

Test(dpconfig, upstream_rules)
{
    struct {
        const char *doc;
        int ok;
        const char *want;
    } cases[] = {
        {"version: v1\nflags: {migStrategy: mixed}\n", 1, NULL},
        {"sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
         "      - {name: gpu, replicas: 10, devices: [0, \"1:0\", GPU-abc]}\n",
         1, NULL},
        {"version: v2\n", 0, "unknown version"},
        {"flags: {migStrategy: sometimes}\n", 0, "none, single or mixed"},
        {"sharing:\n  timeSlicing:\n    resources:\n      - {name: nvidia.com/gpu, replicas: 1}\n",
         0, "out of range"},
        {"sharing:\n  mps:\n    resources:\n      - {name: nvidia.com/gpu, replicas: 49}\n", 0,
         "out of range"},
        {"sharing:\n  timeSlicing:\n    resources: []\n", 0, "non-empty"},
        {"sharing:\n  timeSlicing:\n    resources:\n      - {replicas: 2}\n", 0, "'name'"},
        {"sharing:\n  timeSlicing:\n    resources:\n      - {name: nvidia.com/GPU_X, replicas: "
         "2}\n",
         0, "DNS subdomain"},
        {"flags: {migStrategy: mixed}\nsharing:\n  mps:\n    resources:\n"
         "      - {name: nvidia.com/gpu, replicas: 2}\n",
         0, "not supported with migStrategy mixed"},
        {"sharing:\n  timeSlicing:\n    resources:\n      - {name: gpu, replicas: 2, devices: "
         "[x]}\n",
         0, "GPU index"},
        {"flags: {plugin: {deviceIDStrategy: serial}}\n", 0, "uuid or index"},
        /* the article's --device-list-strategy=configmap: not a value the plugin accepts */
        {"flags: {plugin: {deviceListStrategy: configmap}}\n", 0,
         "'configmap': expected envvar, volume-mounts, cdi-annotations or cdi-cri"},
        {"flags: {plugin: {deviceListStrategy: [envvar, cdi-cri]}}\n", 1, NULL},
        {"flags: {plugin: {deviceListStrategy: volume-mounts}}\n", 1, NULL},
        {"flags: {plugin: {deviceListStrategy: [envvar, nope]}}\n", 0, "'nope': expected"},
        {"imex: {channelIDs: [1]}\n", 0, "[0]"},
        {"flags: {colour: blue}\n", 0, "unexpected field"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gs_dpconfig c;
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_dpconfig_parse("dp.yaml", cases[i].doc, strlen(cases[i].doc), &c, &err);
        if (cases[i].ok) {
            cr_assert_eq(rc, 0, "case %zu: %s", i, err.msg);
        } else {
            cr_assert_eq(rc, GS_EINVAL, "case %zu accepted", i);
            cr_assert(strstr(err.msg, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i,
                      err.msg, cases[i].want);
            cr_assert(strstr(err.msg, "dp.yaml") != NULL, "case %zu: no file name", i);
        }
    }
    struct gs_dpconfig c;
    const char *rn = "sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
                     "      - {name: gpu, replicas: 4}\n";
    cr_assert_eq(gs_dpconfig_parse("r", rn, strlen(rn), &c, NULL), 0);
    cr_assert_str_eq(c.timeslicing.resources[0].rename, "nvidia.com/gpu.shared");
}

Test(openb, every_upstream_variant_format)
{
    struct gs_openb_pod *pods;
    struct gs_error err;
    gs_error_init(&err);
    /* default-style 11 columns */
    const char *full = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                       "creation_time,deletion_time,scheduled_time\n"
                       "p0,12000,16384,1,1000,,LS,Running,0,100,0\n"
                       "p1,6000,12288,1,460,,BE,Pending,5,,\n"
                       "p2,1000,1024,0,0,,LS,Running,7,9,7\n"
                       "p3,8000,1024,8,1000,,LS,Running,7,9,7\n";
    int n = gs_openb_parse_pods("full.csv", full, strlen(full), &pods, &err);
    cr_assert_eq(n, 4, "%s", err.msg);
    cr_assert_eq(pods[0].req.kind, GS_REQ_GPU);
    cr_assert_eq(pods[1].req.kind, GS_REQ_FRACTION);
    cr_assert_eq(pods[1].req.milli, 460);
    cr_assert_eq(pods[1].deletion, -1);
    cr_assert_eq(pods[2].req.kind, GS_REQ_NONE);
    cr_assert_eq(pods[3].req.gpus, 8);
    free(pods);
    /* multigpu*: five columns only */
    const char *five = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\r\n"
                       "p0,8000,30517,2,1000\r\n"
                       "p1,4000,15258,1,500\r\n";
    n = gs_openb_parse_pods("five.csv", five, strlen(five), &pods, &err);
    cr_assert_eq(n, 2, "%s", err.msg);
    cr_assert_eq(pods[0].req.gpus, 2);
    cr_assert_eq(pods[0].creation, -1);
    free(pods);
    /* gpuspec*: lists of allowed models */
    const char *spec = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                       "creation_time,deletion_time,scheduled_time\n"
                       "p0,8000,30517,1,1000,V100M16|V100M32,LS,Running,0,1,0\n"
                       "p1,8000,30517,1,1000,T4,LS,Running,0,1,0\n";
    n = gs_openb_parse_pods("spec.csv", spec, strlen(spec), &pods, &err);
    cr_assert_eq(n, 2, "%s", err.msg);
    cr_assert_eq(pods[0].req.model_mask,
                 (1u << gs_catalog_find("V100M16")) | (1u << gs_catalog_find("V100M32")));
    cr_assert_eq(pods[1].req.model_mask, 1u << gs_catalog_find("T4"));
    free(pods);
    /* columns in another order with an extra one */
    const char *order = "gpu_milli,num_gpu,extra,memory_mib,cpu_milli,name\n1000,4,x,100,200,p9\n";
    n = gs_openb_parse_pods("order.csv", order, strlen(order), &pods, &err);
    cr_assert_eq(n, 1, "%s", err.msg);
    cr_assert_eq(pods[0].req.gpus, 4);
    cr_assert_eq(pods[0].req.cpu_milli, 200);
    free(pods);
    struct gs_openb_node *nodes;
    const char *nl =
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,0,\nn1,96000,393216,8,G2\n";
    n = gs_openb_parse_nodes("nodes.csv", nl, strlen(nl), &nodes, &err);
    cr_assert_eq(n, 2, "%s", err.msg);
    cr_assert_eq(nodes[0].model, -1);
    cr_assert_eq(nodes[1].gpus, 8);
    free(nodes);
}

Test(openb, bad_rows_name_the_line)
{
    struct {
        const char *doc, *want;
    } cases[] = {
        {"", "empty file"},
        {"a,b\n1,2\n", "header must name"},
        {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,x,1,0,0\n", "nodes.csv:2: column "
                                                                      "'cpu_milli'"},
        {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,2,500\n", ":2: num_gpu 2"},
        {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,1500\n", ":2: num_gpu 1"},
        {"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,1,1,1,1000,B9000\n",
         "unknown GPU model 'B9000'"},
        {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1\n", "missing column"},
        {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\"p0\",1,1,0,0\n", "malformed"},
        /* 19 digits beyond int64 (found by the fuzzer as a signed overflow) */
        {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,9999999999999999999,1,0,0\n",
         ":2: column 'cpu_milli'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gs_openb_pod *pods = (struct gs_openb_pod *)0x1;
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_openb_parse_pods("nodes.csv", cases[i].doc, strlen(cases[i].doc), &pods, &err);
        cr_assert_lt(rc, 0, "case %zu accepted", i);
        cr_assert_null(pods, "case %zu: output must stay empty", i);
        cr_assert(strstr(err.msg, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i].want);
    }
}

/* a NUL byte inside a row (found by the fuzzer: a name "\0\0x" was kept, and written back it
 * read as an empty name) is refused with its line and column */
Test(openb, a_nul_byte_in_a_row_is_refused_with_line_and_column)
{
    static const char doc[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,0,0\n"
                              "p\0x,1,1,0,0\n";
    struct gs_openb_pod *pods = (struct gs_openb_pod *)0x1;
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_openb_parse_pods("pods.csv", doc, sizeof(doc) - 1, &pods, &err);
    cr_assert_lt(rc, 0, "a NUL byte was accepted");
    cr_assert_null(pods);
    cr_assert(strstr(err.msg, "pods.csv:3:2: NUL byte") != NULL, "%s", err.msg);
}

Test(scenario, the_default_parses)
{
    struct gs_scenario *sc = calloc(1, sizeof(*sc));
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_scenario_parse("default", gs_default_scenario_yaml,
                                   strlen(gs_default_scenario_yaml), sc, &err),
                 0, "%s", err.msg);
    cr_assert_eq(sc->ngroups, 5);
    cr_assert_eq(sc->ntenants, 2);
    cr_assert_eq(sc->nclasses, 8);
    cr_assert_eq(sc->classes[0].priority, 1000000, "gpu-critical resolves to the article's value");
    cr_assert_eq(sc->classes[6].gang, 2, "distributed training is a gang of two 8-GPU pods");
    cr_assert_eq(sc->classes[0].gpu_mem_mib, 38 * 1024);
    cr_assert_float_eq(sc->duration_s, 26 * 3600.0, 1e-6);
    gs_scenario_release(sc);
    free(sc);
}

Test(scenario, dra_groups_and_claims)
{
    const char *doc = "duration: 1h\nnode_groups:\n"
                      "  - {name: d, gpu: A100-80GB, nodes: 2, gpus: 2, dra: dynamic-mig}\n"
                      "  - {name: w, gpu: L40S-48GB, nodes: 1, dra: whole}\n"
                      "classes:\n  - name: c\n    kind: training\n"
                      "    arrival: {process: poisson, per_hour: 1}\n"
                      "    duration: {dist: fixed, mean: 10m}\n"
                      "    request: {cpu: 2, claim: {device_class: mig.gpusched.io, "
                      "selector: \"device.attributes['gpu.gpusched.io'].profile == '3g.40gb'\", "
                      "count: 2}}\n";
    struct gs_scenario *sc = calloc(1, sizeof(*sc));
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_scenario_parse("t.yaml", doc, strlen(doc), sc, &err), 0, "%s", err.msg);
    cr_assert_eq(sc->groups[0].dra, GS_SC_DRA_DYNAMIC);
    cr_assert_eq(sc->groups[1].dra, GS_SC_DRA_WHOLE);
    cr_assert_str_eq(sc->classes[0].claim.device_class, "mig.gpusched.io");
    cr_assert_str_eq(sc->classes[0].claim.selector,
                     "device.attributes['gpu.gpusched.io'].profile == '3g.40gb'");
    cr_assert_eq(sc->classes[0].claim.count, 2);
    cr_assert_eq(sc->classes[0].gpus, 0);
    gs_scenario_release(sc);
    free(sc);
}

Test(scenario, bad_fields_name_the_line_and_path)
{
    const char *base = "duration: 1h\nnode_groups:\n  - {name: a, gpu: A100-80GB, nodes: 1}\n"
                       "classes:\n  - name: c\n    kind: training\n"
                       "    arrival: {process: poisson, per_hour: 1}\n"
                       "    duration: {dist: fixed, mean: 10m}\n    request: {gpus: 1}\n";
    struct {
        const char *from, *to, *want;
    } cases[] = {
        {"gpu: A100-80GB", "gpu: B9000", "t.yaml:3: node_groups[0].gpu: unknown GPU model"},
        {"nodes: 1", "nodes: 0", "node_groups[0].nodes"},
        {"kind: training", "kind: cooking", "classes[0].kind"},
        {"per_hour: 1", "per_hour: x", "classes[0].arrival.per_hour"},
        {"mean: 10m", "mean: 10 minutes", "expected a duration"},
        {"duration: 1h", "duration: forever", "t.yaml:1: duration"},
        {"gpus: 1}", "gpus: 1, colour: red}", "unexpected field"},
        {"request: {gpus: 1}", "request: {gpus: 1, memory: lots}", "Kubernetes quantity"},
        {"request: {gpus: 1}", "request: {mig: 9g.1tb}", "not a MIG profile"},
        {"request: {gpus: 1}", "request: {mig: 1g.18gb}",
         "t.yaml:9: classes[0].request.mig: '1g.18gb': no node group offers it"},
        {"request: {gpus: 1}", "request: {mig: 3g.70gb}", "(closest: 3g.40gb)"},
        {"- name: c\n", "- name: c\n    tenant: nobody\n", "unknown tenant"},
        {"nodes: 1}", "nodes: 1, mig_layout: {\"1g.10gb\": 8}}", "out of range"},
        {"nodes: 1}", "nodes: 1, mig_layout: {\"4g.40gb\": 1, \"3g.40gb\": 2}}", "compute slices"},
        {"kind: training", "kind: training\n    gang: 0", "classes[0].gang"},
        {"kind: training", "kind: training\n    gang: 65", "classes[0].gang"},
        {"duration: 1h", "duration: 1h\nmin_runtime: soon", "min_runtime"},
        {"nodes: 1}", "nodes: 1, dra: partly}", "t.yaml:3: node_groups[0].dra: 'partly'"},
        {"nodes: 1}", "nodes: 1, dra: whole, sharing: mps}", "drop mig_config"},
        {"request: {gpus: 1}", "request: {gpus: 1, claim: {device_class: gpu.gpusched.io}}",
         "t.yaml:9: classes[0].request: a claim is the pod's devices"},
        {"request: {gpus: 1}", "request: {claim: {selector: \"true\"}}",
         "missing required field 'device_class'"},
        {"request: {gpus: 1}", "request: {claim: {device_class: x, count: 9}}",
         "classes[0].request.claim.count"},
        {"duration: 1h", "duration: 1h\ntenants: [{name: t, quota: {cpu: 4}}]",
         "expected nvidia.com/gpu"},
        {"duration: 1h", "duration: 1h\ntenants: [{name: t, weight: 0}]", "tenants[0].weight"},
        /* names are identities: a second class, node group or tenant of one name */
        {"request: {gpus: 1}",
         "request: {gpus: 1}\n  - name: c\n    kind: development\n"
         "    arrival: {process: poisson, per_hour: 2}\n"
         "    duration: {dist: fixed, mean: 5m}\n    request: {gpus: 1}",
         "t.yaml:10: classes[1].name: 'c' is already the name of classes[0] (line 5)"},
        {"nodes: 1}\n", "nodes: 1}\n  - {name: a, gpu: H100-80GB, nodes: 2}\n",
         "t.yaml:4: node_groups[1].name: 'a' is already the name of node_groups[0] (line 3)"},
        {"duration: 1h", "duration: 1h\ntenants:\n  - {name: t}\n  - {name: u}\n  - {name: t}",
         "t.yaml:5: tenants[2].name: 't' is already the name of tenants[0] (line 3)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char doc[2048];
        const char *at = strstr(base, cases[i].from);
        cr_assert_not_null(at, "case %zu: bad fixture", i);
        snprintf(doc, sizeof(doc), "%.*s%s%s", (int)(at - base), base, cases[i].to,
                 at + strlen(cases[i].from));
        struct gs_scenario *sc = calloc(1, sizeof(*sc));
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_scenario_parse("t.yaml", doc, strlen(doc), sc, &err);
        cr_assert_eq(rc, GS_EINVAL, "case %zu accepted", i);
        cr_assert(strstr(err.msg, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i].want);
        gs_scenario_release(sc);
        free(sc);
    }
}

/* ---------- the article's gpu-monitor-config ---------- */

static const char *const mon_known[] = {"gpu_utilization", "gpu_memory_used_bytes",
                                        "gpu_temperature_celsius", NULL};
static const char *const mon_reserved[] = {"gpu", "pod", NULL};

static int mon_load(const char *text, struct gs_monitor_config *c, struct gs_error *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/gs-mon-%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    gs_error_init(err);
    int rc = gs_monitor_config_load(path, mon_known, mon_reserved, c, err);
    unlink(path);
    return rc;
}

Test(monitorcfg, the_articles_configmap_file_as_it_is)
{
    static const char *const all[] = {
        "gpu_utilization",        "gpu_memory_utilization", "gpu_memory_used_bytes",
        "gpu_memory_total_bytes", "gpu_power_usage_watts",  "gpu_temperature_celsius",
        "gpu_sm_clock_mhz",       "gpu_mem_clock_mhz",      NULL};
    struct gs_monitor_config c;
    struct gs_error err;
    gs_error_init(&err);
    /* the file also holds the DaemonSet: only the ConfigMap's gpu-metrics.json is read */
    cr_assert_eq(gs_monitor_config_load(GS_SOURCE_DIR "/deploy/article/gpu-monitor.yaml", all,
                                        mon_reserved, &c, &err),
                 0, "%s", err.msg);
    cr_assert_eq(c.nmetrics, 8);
    cr_assert_str_eq(c.metrics[7], "gpu_mem_clock_mhz");
    cr_assert_float_eq(c.scrape_interval_s, 15, 1e-9);
    cr_assert_eq(c.nlabels, 2);
    cr_assert_str_eq(c.label_name[0], "cluster");
    cr_assert_str_eq(c.label_value[0], "production");
    cr_assert_str_eq(c.label_name[1], "region");
    cr_assert_str_eq(c.label_value[1], "cn-east");
}

Test(monitorcfg, any_labels_and_no_metric_list_means_all)
{
    struct gs_monitor_config c;
    struct gs_error err;
    cr_assert_eq(mon_load("{\"labels\": {\"zone\": \"b\", \"team_id\": \"42\"}}", &c, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(c.nmetrics, 0);
    cr_assert_eq(c.nlabels, 2);
    cr_assert_str_eq(c.label_name[1], "team_id");
    cr_assert_float_eq(c.scrape_interval_s, 0, 1e-9);
    /* YAML is fine too */
    cr_assert_eq(mon_load("scrape_interval: 500ms\nmetrics: [gpu_utilization]\n", &c, &err), 0,
                 "%s", err.msg);
    cr_assert_float_eq(c.scrape_interval_s, 0.5, 1e-9);
}

Test(monitorcfg, bad_configs_name_the_line_and_field)
{
    static const struct {
        const char *doc, *want;
    } cases[] = {
        {"{\"metrics\": [\"gpu_utilization\",\n \"gpu_utilisation\"]}",
         ":2: metrics[1]: 'gpu_utilisation' is not a metric gpusched exports"},
        {"{\"metrics\": [\"gpu_utilization\", \"gpu_utilization\"]}", "listed twice"},
        {"{\"metrics\": []}", "metrics: an empty list exports nothing"},
        {"{\"metrics\": \"gpu_utilization\"}", "metrics: expected a list"},
        {"{\"scrape_interval\": \"soon\"}", "scrape_interval: 'soon': expected a duration"},
        {"{\"scrape_interval\": \"0s\"}", "expected a duration from 100ms to 1h"},
        {"{\"labels\": {\"pod\": \"x\"}}", "labels.pod: gpusched sets this label"},
        {"{\"labels\": {\"9zone\": \"a\"}}", "labels.9zone: not a Prometheus label name"},
        {"{\"labels\": {\"__name__\": \"a\"}}", "not a Prometheus label name"},
        {"{\"labels\": {\"zone\": \"\"}}", "labels.zone: expected a non-empty value"},
        {"{\"labels\": {\"zone\": {\"a\": 1}}}", "labels.zone"},
        {"{\"labels\": [\"zone\"]}", "labels: expected a mapping"},
        {"{\"clusters\": 3}", ":1: clusters: unexpected field"},
        {"[1, 2]", "expected an object"},
        {"{\"metrics\": [\"gpu_utilization\",\n", ":2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gs_monitor_config c;
        memset(&c, 0x5a, sizeof(c));
        struct gs_error err;
        cr_assert_eq(mon_load(cases[i].doc, &c, &err), GS_EINVAL, "case %zu accepted", i);
        cr_assert(strstr(err.msg, cases[i].want), "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i].want);
        cr_assert_eq(c.nmetrics, 0x5a5a5a5a, "case %zu: the output was touched", i);
    }
}

/* ---------- text handed to libfyaml ---------- */

/* libfyaml spins forever on a '%' directive line holding a broken UTF-8 byte; the byte check
 * that guards plain YAML must also guard the ConfigMap a config may be wrapped in (found by
 * fuzzer_migparted, fuzzer_dpconfig and fuzzer_agent). */
static const struct {
    const char *doc;
    size_t len;
    const char *want;
} broken_text[] = {
    {"kind: ConfigMap\n%ig\xca"
     "enable\n",
     0, "t.yaml:2:4: byte 0xca is not YAML text"},
    {"apiVersion: v1\nkind: ConfigMap\ndata:\n  config.yaml: |\n    version: v1\n"
     "%YAML 1.2\xff\n",
     0, "t.yaml:6:10: byte 0xff"},
    {"kind: ConfigMap\ndata:\n  config.yaml: |\n    version: v1\n  %x\x80\n", 0,
     "t.yaml:5:5: byte 0x80"},
    /* the inner text, after unescaping, is checked before libfyaml reads it too */
    {"kind: ConfigMap\ndata:\n  config.yaml: \"version: v1\\n\\x01\"\n", 0, "byte 0x01"},
    {"kind: ConfigMap\n%\0\n", 19, "t.yaml:2:2: byte 0x00"},
    /* UTF-8 that is not well formed or not printable (YAML's c-printable): an overlong
     * form (libfyaml spins on it in a directive too), a surrogate, a code point past
     * U+10FFFF, a C1 control, U+FFFE */
    {"kind: ConfigMap\n%k\xe0\x9c\x9an\n", 0, "t.yaml:2:3: byte 0xe0"},
    {"version: v1\n# \xc0\xafx\n", 0, "t.yaml:2:3: byte 0xc0"},
    {"version: v1\n# \xf0\x8f\xbf\xbfx\n", 0, "t.yaml:2:3: byte 0xf0"},
    {"version: v1\n# \xed\xa0\x80\n", 0, "t.yaml:2:3: byte 0xed"},
    {"version: v1\n# \xf4\x90\x80\x80\n", 0, "t.yaml:2:3: byte 0xf4"},
    {"version: v1\n# \xc2\x80\n", 0, "t.yaml:2:3: byte 0xc2"},
    {"version: v1\n# \xef\xbf\xbe\n", 0, "t.yaml:2:3: byte 0xef"},
    /* an explicit key: libfyaml crashes cleaning up after a tab error inside one (found by
     * fuzzer_toposcen), so every '?' key is refused, nested or in a ConfigMap too */
    {"? kind:\t? ? ?", 0, "t.yaml:1:1: explicit mapping key"},
    {"version: v1\nx:\n  ? a:\t-\n", 0, "t.yaml:3:3: explicit mapping key"},
    {"- - ? a:\t-", 0, "t.yaml:1:5: explicit mapping key"},
    {"--- ?\n", 0, "t.yaml:1:5: explicit mapping key"},
    /* lines broken by CR alone (found by CI's fuzzer_toposcen) or by NEL */
    {"\r\r? kkinind:\t?d:\r", 0, "explicit mapping key"},
    {"version: v1\xc2\x85? a:\t-", 0, "explicit mapping key"},
    {"kind: ConfigMap\ndata:\n  config.yaml: \"version: v1\\n?\\ta: b\"\n", 0,
     "explicit mapping key"},
};

Test(yaml, printable_utf8_is_text)
{
    /* NEL, BOM and characters from every UTF-8 length, up to U+10FFFD */
    /* '?' in a value, a flow mapping's explicit key and a '?'-led plain scalar are not
     * block keys */
    const char *q = "version: v1 # why? \nmig-configs: {a: [{devices: all, mig-enabled: false,"
                    " ? x : y}], \"?\": [], ?b: []}\n";
    struct gs_migparted *mq = NULL;
    struct gs_error qerr;
    gs_error_init(&qerr);
    int qrc = gs_migparted_parse("q.yaml", q, strlen(q), &mq, &qerr);
    cr_assert(qrc == 0 || !strstr(qerr.msg, "explicit mapping key"), "%s", qerr.msg);
    gs_migparted_free(mq);
    const char *t = "\xef\xbb\xbfversion: v1 # caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80 "
                    "\xed\x9f\xbf \xee\x80\x80 \xf4\x8f\xbf\xbd \xc2\x85\n"
                    "mig-configs: {a: [{devices: all, mig-enabled: false}]}\n";
    struct gs_migparted *m = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_migparted_parse("u.yaml", t, strlen(t), &m, &err), 0, "%s", err.msg);
    gs_migparted_free(m);
}

Test(yaml, broken_bytes_in_a_configmap_are_refused_before_libfyaml, .timeout = 10)
{
    for (size_t i = 0; i < sizeof(broken_text) / sizeof(broken_text[0]); i++) {
        const char *d = broken_text[i].doc;
        size_t len = broken_text[i].len ? broken_text[i].len : strlen(d);
        struct gs_error err;
        gs_error_init(&err);
        struct gs_migparted *m = NULL;
        cr_assert_eq(gs_migparted_parse("t.yaml", d, len, &m, &err), GS_EINVAL, "case %zu accepted",
                     i);
        cr_assert_null(m);
        cr_assert(strstr(err.msg, broken_text[i].want), "case %zu: '%s' lacks '%s'", i, err.msg,
                  broken_text[i].want);
        struct gs_dpconfig c;
        gs_error_init(&err);
        cr_assert_eq(gs_dpconfig_parse("t.yaml", d, len, &c, &err), GS_EINVAL, "case %zu accepted",
                     i);
        cr_assert(strstr(err.msg, broken_text[i].want), "case %zu: '%s' lacks '%s'", i, err.msg,
                  broken_text[i].want);
    }
}

/* The --monitor-config reader takes the same ConfigMap-wrapped files: the same broken text is
 * refused with its line and column before libfyaml sees it (a hang fails the timeout), and the
 * output is left untouched. The file is written as it is, NUL bytes included. */
Test(yaml, broken_bytes_in_a_monitor_configmap_are_refused_before_libfyaml, .timeout = 10)
{
    char dir[] = "/tmp/gs-mon-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof(path), "%s/t.yaml", dir);
    for (size_t i = 0; i < sizeof(broken_text) / sizeof(broken_text[0]); i++) {
        const char *d = broken_text[i].doc;
        size_t len = broken_text[i].len ? broken_text[i].len : strlen(d);
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(d, 1, len, f), len);
        fclose(f);
        struct gs_monitor_config c;
        memset(&c, 0x5a, sizeof(c));
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_monitor_config_load(path, mon_known, mon_reserved, &c, &err);
        cr_assert_eq(rc, GS_EINVAL, "case %zu: got %d want %d (GS_EINVAL)", i, rc, GS_EINVAL);
        cr_assert(strstr(err.msg, broken_text[i].want), "case %zu: '%s' lacks '%s'", i, err.msg,
                  broken_text[i].want);
        cr_assert_eq(c.nmetrics, 0x5a5a5a5a, "case %zu: the output was touched", i);
    }
    unlink(path);
    rmdir(dir);
}

/* ---------- dynamic MIG: the desired layout and what became of it ---------- */

#define DESIRED_EXAMPLE                                                                            \
    "{\"v\":1,\"generation\":7,\"gpus\":[{\"i\":0,\"mig\":[\"3g.40gb@0\",\"1g.10gb@4\","           \
    "\"1g.10gb@5\",\"1g.10gb@6\"]},{\"i\":2,\"whole\":true}]}"

Test(migdesired, the_example_reads_and_writes_back_the_same_text)
{
    struct gs_mig_desired d;
    struct gs_error err;
    gs_error_init(&err);
    const char *t = DESIRED_EXAMPLE;
    cr_assert_eq(gs_mig_desired_read(t, strlen(t), &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.version, 1);
    cr_expect_eq(d.generation, 7);
    cr_assert_eq(d.ngpus, 2);
    cr_expect_eq(d.gpus[0].index, 0);
    cr_expect(!d.gpus[0].whole);
    cr_assert_eq(d.gpus[0].ninst, 4);
    cr_expect_str_eq(d.gpus[0].inst[0].profile, "3g.40gb");
    cr_expect_eq(d.gpus[0].inst[0].start, 0);
    cr_expect_str_eq(d.gpus[0].inst[3].profile, "1g.10gb");
    cr_expect_eq(d.gpus[0].inst[3].start, 6);
    cr_expect_eq(d.gpus[1].index, 2);
    cr_expect(d.gpus[1].whole);
    cr_expect_eq(d.gpus[1].ninst, 0);
    cr_expect_eq(gs_mig_desired_find(&d, 2), &d.gpus[1]);
    cr_expect_null(gs_mig_desired_find(&d, 1));
    char *text = gs_mig_desired_write(&d);
    cr_assert_not_null(text);
    cr_expect_str_eq(text, t);
    free(text);
}

Test(migdesired, gpus_are_read_and_written_in_index_order)
{
    const char *t = "{\"gpus\":[{\"i\":5,\"mig\":[]},{\"i\":1,\"whole\":true},{\"i\":3,\"mig\":"
                    "[\"1g.10gb+me@6\",\"1c.3g.40gb@4\"]}],\"generation\":9223372036854775807,"
                    "\"v\":1}";
    struct gs_mig_desired d;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_mig_desired_read(t, strlen(t), &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.generation, INT64_MAX);
    cr_assert_eq(d.ngpus, 3);
    cr_expect_eq(d.gpus[0].index, 1);
    cr_expect_eq(d.gpus[1].index, 3);
    cr_expect_eq(d.gpus[2].index, 5);
    cr_expect(!d.gpus[2].whole && d.gpus[2].ninst == 0, "mig: [] is MIG mode with no instance");
    /* the writer sorts a struct it was handed out of order, too */
    struct gs_mig_desired w = d;
    w.gpus[0] = d.gpus[2];
    w.gpus[2] = d.gpus[0];
    char *text = gs_mig_desired_write(&w);
    cr_assert_not_null(text);
    cr_expect_str_eq(text, "{\"v\":1,\"generation\":9223372036854775807,\"gpus\":[{\"i\":1,"
                           "\"whole\":true},{\"i\":3,\"mig\":[\"1g.10gb+me@6\",\"1c.3g.40gb@4\"]},"
                           "{\"i\":5,\"mig\":[]}]}");
    struct gs_mig_desired back;
    cr_assert_eq(gs_mig_desired_read(text, strlen(text), &back, &err), 0, "%s", err.msg);
    cr_expect_eq(memcmp(&back, &d, sizeof(d)), 0, "the round trip changed the layout");
    free(text);
}

Test(migdesired, bad_annotations_are_refused_with_the_field_path)
{
    struct {
        const char *text, *want;
    } cases[] = {
        {"{\"v\":2,\"generation\":1,\"gpus\":[]}", "v: expected version 1"},
        {"{\"generation\":1,\"gpus\":[]}", "v: expected version 1"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[],\"x\":1}",
         "annotation: x: unknown field (expected v, generation, gpus)"},
        {"{\"v\":1,\"gpus\":[]}", "generation: expected a generation of 1 or more"},
        {"{\"v\":1,\"generation\":0,\"gpus\":[]}", "generation: expected"},
        {"{\"v\":1,\"generation\":-4,\"gpus\":[]}", "generation: expected"},
        {"{\"v\":1,\"generation\":\"7\",\"gpus\":[]}", "generation: expected"},
        {"{\"v\":1,\"generation\":1}", "gpus: expected a list"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"whole\":true},{\"i\":0,\"mig\":[]}]}",
         "gpus[1].i: GPU index given twice"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"whole\":true,\"mig\":[\"7g.80gb@0\"]}]}",
         "gpus[0].whole: a GPU is either whole or carved by mig, not both"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"whole\":false}]}",
         "gpus[0].whole: expected true"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0}]}",
         "gpus[0]: expected either mig (a list of \"<profile>@<start>\") or whole"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"mig\":{}}]}",
         "gpus[0].mig: expected a list"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"mig\":[\"3g.40gb@0\",\"3g.40gb\"]}]}",
         "gpus[0].mig[1]: expected \"<profile>@<start>\""},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"mig\":[\"3g.40gb@8\"]}]}",
         "gpus[0].mig[0]: expected"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"mig\":[\"3g.40gb@04\"]}]}",
         "gpus[0].mig[0]: expected"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"mig\":[\"3x.40gb@0\"]}]}",
         "gpus[0].mig[0]: expected"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"mig\":[\"1g.10gb+me+gfx@0\"]}]}",
         "gpus[0].mig[0]: expected"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"mig\":[\"@0\"]}]}",
         "gpus[0].mig[0]: expected"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"mig\":[7]}]}", "gpus[0].mig[0]: expected"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"mig\":[\"1g.10gb@0\",\"1g.10gb@1\","
         "\"1g.10gb@2\",\"1g.10gb@3\",\"1g.10gb@4\",\"1g.10gb@5\",\"1g.10gb@6\",\"1g.10gb@7\","
         "\"1g.10gb@7\"]}]}",
         "gpus[0].mig: 9 instances, at most 8"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":16,\"whole\":true}]}",
         "gpus[0].i: expected a GPU index 0 to 15"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"mig\":[]}]}", "gpus[0].i: expected"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":0,\"whole\":true,\"pods\":[]}]}",
         "gpus[0].pods: unknown field (expected i, mig, whole)"},
        {"{\"v\":1,\"generation\":1,\"gpus\":[7]}", "gpus[0]: expected an object"},
        {"[1]", "(top): expected an object"},
        {"{\"v\":1,\"v\":1,\"generation\":1,\"gpus\":[]}", "duplicate"},
        {"{\"v\":1,", "column"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct gs_mig_desired d;
        struct gs_error err;
        gs_error_init(&err);
        cr_expect_eq(gs_mig_desired_read(cases[k].text, strlen(cases[k].text), &d, &err), GS_EINVAL,
                     "case %zu accepted", k);
        cr_expect(strstr(err.msg, cases[k].want) != NULL, "case %zu: '%s' lacks '%s'", k, err.msg,
                  cases[k].want);
        cr_expect(strncmp(err.msg, "gpusched.io/mig-desired annotation: ", 36) == 0,
                  "case %zu: '%s' does not name the annotation", k, err.msg);
        cr_expect_eq(d.ngpus, 0, "case %zu: a refused text leaves GPUs behind", k);
    }
    /* 17 GPUs: more than a node holds */
    char many[2048];
    size_t off = (size_t)snprintf(many, sizeof(many), "{\"v\":1,\"generation\":1,\"gpus\":[");
    for (int i = 0; i < 17; i++)
        off += (size_t)snprintf(many + off, sizeof(many) - off, "%s{\"i\":%d,\"whole\":true}",
                                i ? "," : "", i);
    snprintf(many + off, sizeof(many) - off, "]}");
    struct gs_mig_desired d;
    struct gs_error err;
    gs_error_init(&err);
    cr_expect_eq(gs_mig_desired_read(many, strlen(many), &d, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "gpus: 17 GPUs, at most 16"), "%s", err.msg);
    /* over the size bound, before any parsing */
    size_t big = GS_MIG_DESIRED_MAX_BYTES + 1;
    char *text = malloc(big + 1);
    cr_assert_not_null(text);
    memset(text, ' ', big);
    memcpy(text, DESIRED_EXAMPLE, strlen(DESIRED_EXAMPLE));
    text[big] = '\0';
    gs_error_init(&err);
    cr_expect_eq(gs_mig_desired_read(text, big, &d, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "16385 bytes, at most 16384"), "%s", err.msg);
    free(text);
}

#define INV_GPU0 "{\"i\":0,\"uuid\":\"GPU-8f\",\"model\":\"H100-80GB\",\"mem\":81920"

Test(inventory, carries_what_became_of_the_desired_layout)
{
    const char *t = "{\"v\":1,\"generation\":7,\"mig_state\":\"failed\",\"mig_error\":\"GPU 0: "
                    "3g.40gb@0 overlaps 3g.40gb@2\",\"gpus\":[" INV_GPU0
                    ",\"mig\":[\"3g.40gb@0\",\"3g.40gb@4\"]}]}";
    struct gs_inventory inv;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_inventory_read(t, strlen(t), &inv, &err), 0, "%s", err.msg);
    cr_expect_eq(inv.generation, 7);
    cr_expect_str_eq(inv.mig_state, "failed");
    cr_expect_str_eq(inv.mig_error, "GPU 0: 3g.40gb@0 overlaps 3g.40gb@2");
    char *text = gs_inventory_write(&inv);
    cr_assert_not_null(text);
    cr_expect_str_eq(text, t);
    free(text);
    /* applied: the generation alone */
    inv.mig_state[0] = inv.mig_error[0] = '\0';
    text = gs_inventory_write(&inv);
    cr_assert_not_null(text);
    cr_expect(strncmp(text, "{\"v\":1,\"generation\":7,\"gpus\":[", 30) == 0, "%s", text);
    free(text);
    /* pending before any generation was finished */
    const char *p = "{\"v\":1,\"mig_state\":\"pending\",\"mig_error\":\"GPU 0: MIG instance "
                    "1g.10gb@0 (MIG-x) is held by pod ai/emb\",\"gpus\":[" INV_GPU0 "}]}";
    cr_assert_eq(gs_inventory_read(p, strlen(p), &inv, &err), 0, "%s", err.msg);
    cr_expect_eq(inv.generation, 0);
    cr_expect_str_eq(inv.mig_state, "pending");
    const char *s = "{\"v\":1,\"generation\":3,\"mig_state\":\"success\",\"gpus\":[]}";
    cr_expect_eq(gs_inventory_read(s, strlen(s), &inv, &err), 0, "%s", err.msg);
    /* a text from before dynamic MIG: nothing desired ever */
    const char *old = "{\"v\":1,\"gpus\":[" INV_GPU0 ",\"mig\":[\"7g.80gb@0\"]}]}";
    cr_assert_eq(gs_inventory_read(old, strlen(old), &inv, &err), 0, "%s", err.msg);
    cr_expect_eq(inv.generation, 0);
    cr_expect_str_eq(inv.mig_state, "");
    cr_expect_str_eq(inv.mig_error, "");
    text = gs_inventory_write(&inv);
    cr_assert_not_null(text);
    cr_expect_str_eq(text, old);
    free(text);
}

Test(inventory, bad_mig_states_are_refused_with_the_field)
{
    struct {
        const char *text, *want;
    } cases[] = {
        {"{\"v\":1,\"generation\":0,\"gpus\":[]}", "generation: expected"},
        {"{\"v\":1,\"generation\":\"7\",\"gpus\":[]}", "generation: expected"},
        {"{\"v\":1,\"mig_state\":\"done\",\"gpus\":[]}",
         "mig_state: expected \"pending\", \"failed\" or \"success\""},
        {"{\"v\":1,\"mig_state\":\"\",\"gpus\":[]}", "mig_state: expected"},
        {"{\"v\":1,\"mig_state\":7,\"gpus\":[]}", "mig_state: expected a string"},
        {"{\"v\":1,\"mig_state\":\"pending\",\"gpus\":[]}", "mig_error: required"},
        {"{\"v\":1,\"generation\":2,\"mig_error\":\"x\",\"gpus\":[]}",
         "mig_error: only with mig_state pending or failed"},
        {"{\"v\":1,\"generation\":2,\"mig_state\":\"failed\",\"mig_error\":\"xxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",\"gpus\":[]}",
         "mig_error: expected 1 to 159 bytes"},
        {"{\"v\":1,\"generations\":2,\"gpus\":[]}",
         "generations: unknown field (expected v, generation, mig_state, mig_error, gpus)"},
        /* the instance notation is NVIDIA's profile syntax now */
        {"{\"v\":1,\"gpus\":[" INV_GPU0 ",\"mig\":[\"3x.40gb@0\"]}]}", "gpus[0].mig[0]: expected"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct gs_inventory inv;
        struct gs_error err;
        gs_error_init(&err);
        cr_expect_eq(gs_inventory_read(cases[k].text, strlen(cases[k].text), &inv, &err), GS_EINVAL,
                     "case %zu accepted", k);
        cr_expect(strstr(err.msg, cases[k].want) != NULL, "case %zu: '%s' lacks '%s'", k, err.msg,
                  cases[k].want);
    }
}

Test(inventory, every_catalog_profile_is_in_the_instance_notation)
{
    for (int m = 0; m < gs_catalog_count(); m++) {
        const struct gs_gpu_model *gm = gs_catalog_get(m);
        for (int p = 0; p < gm->nprofiles; p++) {
            struct gs_inv_inst in;
            memset(&in, 0, sizeof(in));
            snprintf(in.profile, sizeof(in.profile), "%s", gm->profiles[p].name);
            in.start = 7;
            char t[GS_MIG_NAME_MAX + 8];
            gs_inv_inst_format(&in, t, sizeof(t));
            struct gs_inv_inst back;
            cr_expect_eq(gs_inv_inst_parse(t, &back), 0, "%s: '%s' refused", gm->name, t);
            cr_expect_eq(memcmp(&back, &in, sizeof(in)), 0, "%s: '%s' read back otherwise",
                         gm->name, t);
        }
    }
}
