/* Node agent: the fake GPU backend obeys the real MIG rules, and the MIG manager applies the
 * article's nvidia-mig-config with exactly NVIDIA's placements, idempotently, changes nothing
 * for a config that does not fit, and never destroys an instance a pod holds; it applies the
 * scheduler's desired layouts (dynamic MIG) at their exact placements, keeping the instances
 * they keep, waiting while a pod holds what would go, and refusing an invalid one whole. */
#include "agent/gpu.h"
#include "agent/migmgr.h"
#include "base/error.h"
#include "formats/migdesired.h"
#include "formats/migparted.h"
#include "sim/scenario.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static struct gs_gpu_backend *fake(const char *json)
{
    snprintf(path, sizeof(path), "/tmp/gs-fake-%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(json, f);
    fclose(f);
    struct gs_gpu_backend *b = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_gpu_open_fake(path, &b, &err), 0, "%s", err.msg);
    return b;
}

static struct gs_migparted *article(void)
{
    struct gs_migparted *mp = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_migparted_parse("nvidia-mig-config", gs_article_mig_config_yaml,
                                    strlen(gs_article_mig_config_yaml), &mp, &err),
                 0, "%s", err.msg);
    return mp;
}

/* "3g.40gb@0 3g.40gb@4" for GPU i */
static void layout_of(struct gs_gpu_backend *b, int i, char *out, size_t n)
{
    struct gs_gpu_info info;
    b->ops->info(b, i, &info);
    struct gs_mig_inst in[8];
    int k = b->ops->mig_list(b, i, in, 8);
    /* by start */
    for (int x = 1; x < k; x++)
        for (int y = x; y > 0 && in[y].start < in[y - 1].start; y--) {
            struct gs_mig_inst t = in[y];
            in[y] = in[y - 1];
            in[y - 1] = t;
        }
    out[0] = '\0';
    size_t off = 0;
    if (!info.mig_enabled)
        snprintf(out, n, "off");
    for (int x = 0; x < k; x++) {
        int p = gs_gpu_profile_index(info.model, in[x].profile_id);
        off += (size_t)snprintf(out + off, n - off, "%s%s@%u", x ? " " : "",
                                gs_catalog_get(info.model)->profiles[p].name, in[x].start);
    }
}

static int apply(struct gs_gpu_backend *b, struct gs_migparted *mp, const char *cfg,
                 const char *const *in_use, int n, bool force, struct gs_error *err)
{
    struct gs_migmgr_plan plan;
    int rc = gs_migmgr_plan(b, mp, cfg, in_use, n, force, &plan, err);
    if (rc)
        return rc;
    rc = gs_migmgr_apply(b, &plan, err);
    return rc ? rc : plan.changes;
}

#define A100X4                                                                                     \
    "{\"gpus\":[{\"model\":\"A100-80GB\"},{\"model\":\"A100-80GB\"},{\"model\":\"A100-80GB\"},"    \
    "{\"model\":\"A100-80GB\"}]}"

Test(fake_gpu, mig_rules_are_the_real_ones)
{
    struct gs_gpu_backend *b = fake("{\"gpus\":[{\"model\":\"A100-80GB\",\"mig\":true,"
                                    "\"instances\":[{\"profile\":\"3g.40gb\",\"start\":0,"
                                    "\"busy\":true}],\"temp_c\":55,\"util\":30}]}");
    cr_assert_eq(b->ops->count(b), 1);
    struct gs_gpu_info info;
    cr_assert_eq(b->ops->info(b, 0, &info), 0);
    cr_assert(info.mig_capable && info.mig_enabled);
    struct gs_gpu_metrics m;
    cr_assert_eq(b->ops->metrics(b, 0, &m), 0);
    cr_assert_eq(m.temp_c, 55);
    cr_assert_eq(m.mem_total, (uint64_t)81920 << 20);
    struct gs_mig_inst in;
    /* 3g.40gb (profile 9) may start at 0 or 4; 0 is taken, 2 is not a valid start */
    cr_assert_eq(b->ops->mig_create(b, 0, 9, 2, &in), GS_ENOFIT);
    cr_assert_eq(b->ops->mig_create(b, 0, 9, 0, &in), GS_ENOFIT, "overlaps");
    cr_assert_eq(b->ops->mig_create(b, 0, 9, 4, &in), 0);
    /* now 6 compute slices in use: a 1g.10gb (profile 19) still fits nowhere in memory */
    cr_assert_eq(b->ops->mig_create(b, 0, 19, 3, &in), GS_ENOFIT);
    struct gs_mig_inst all[8];
    cr_assert_eq(b->ops->mig_list(b, 0, all, 8), 2);
    cr_assert_eq(b->ops->mig_destroy(b, 0, all[0].gi_id), GS_EINVAL, "busy: in use");
    cr_assert_eq(b->ops->mig_destroy(b, 0, all[1].gi_id), 0);
    cr_assert_eq(b->ops->mig_set_mode(b, 0, false), GS_EINVAL, "instances left");
    gs_gpu_close(b);
    unlink(path);
}

Test(fake_gpu, bad_descriptions_name_the_field)
{
    const char *cases[][2] = {
        {"{\"gpus\":[{\"model\":\"B9000\"}]}", "gpus[0].model"},
        {"{\"gpus\":[{\"model\":\"L40S-48GB\",\"mig\":true}]}", "not MIG-capable"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"mig\":true,\"instances\":[{\"profile\":"
         "\"3g.40gb\",\"start\":1}]}]}",
         "gpus[0].instances[0]"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"temp_c\":900}]}", "gpus[0].temp_c"},
        {"{\"gpus\":{}}", "gpus: expected a list"},
        {"{\"gpus\":[", "gs-fake"},
        /* a profile's instance limit (NVML's max count) holds in the description too */
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"1g.10gb+me\",\"start\":0},{\"profile\":\"1g.10gb+me\",\"start\":1}]}]}",
         "gpus[0].instances[1]: 1g.10gb+me: at most 1 instance of it fits on one A100-80GB"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"1g.10gb+me\",\"start\":6},{\"profile\":\"1g.10gb\",\"start\":0},"
         "{\"profile\":\"1g.10gb+me\",\"start\":3}]}]}",
         "gpus[0].instances[2]: 1g.10gb+me: at most 1 instance"},
        /* unknown fields, at every level, and fields of the wrong type */
        {"{\"gpus\":[{\"model\":\"A100-80GB\"}],\"gpu\":[]}",
         "gpu: unexpected field (expected one of: gpus, topology)"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"temperature\":50}]}",
         "gpus[0].temperature: unexpected field (expected one of: model, uuid, mig, instances, "
         "processes, xids, busy, util,"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"3g.40gb\",\"start\":0,\"bsy\":true}]}]}",
         "gpus[0].instances[0].bsy: unexpected field (expected one of: profile, start, busy, util, "
         "mem_used_mib)"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"mig\":true,\"instances\":{}}]}",
         "gpus[0].instances: expected a list"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"3g.40gb\",\"start\":0,\"busy\":1}]}]}",
         "gpus[0].instances[0].busy: expected true or false"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"uuid\":7}]}", "gpus[0].uuid: expected"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"uuid\":\"ab\"}]}", "gpus[0].uuid: expected"},
        {"{\"gpus\":[7]}", "gpus[0]: expected an object"},
        /* the fake GPUs' links */
        {"{\"gpus\":[],\"topology\":[]}", "topology: expected an object"},
        {"{\"gpus\":[],\"topology\":{\"nvlink\":\"ring\"}}",
         "topology.nvlink: expected \"none\", \"pairs\" or \"all\""},
        {"{\"gpus\":[],\"topology\":{\"links\":19}}",
         "topology.links: expected an integer in 1..18"},
        {"{\"gpus\":[],\"topology\":{\"numa_nodes\":0}}",
         "topology.numa_nodes: expected an integer in 1..8"},
        {"{\"gpus\":[],\"topology\":{\"nvswitch\":true}}",
         "topology.nvswitch: unexpected field (expected one of: nvlink, links, numa_nodes)"},
        {"[]", "expected an object"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"util\":1,\"util\":2}]}", "duplicate"},
        /* an instance's own readings: types, ranges, and what the model measures */
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"3g.40gb\",\"start\":0,\"util\":\"high\"}]}]}",
         "gpus[0].instances[0].util: expected a number in 0..100"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"3g.40gb\",\"start\":0,\"util\":101}]}]}",
         "gpus[0].instances[0].util: expected a number in 0..100"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"3g.40gb\",\"start\":0,\"mem_used_mib\":40449}]}]}",
         "gpus[0].instances[0].mem_used_mib: expected a number in 0..40448"},
        {"{\"gpus\":[{\"model\":\"A100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"3g.40gb\",\"start\":0,\"util\":20}]}]}",
         "gpus[0].instances[0].util: A100-80GB offers no MIG instance utilization (GPM is Hopper "
         "and newer)"},
        /* processes */
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":{}}]}",
         "gpus[0].processes: expected a list of at most 64"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[7]}]}",
         "gpus[0].processes[0]: expected {pid, util, mem_used_mib, instance}"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[{\"pid\":1,\"cpu\":3}]}]}",
         "gpus[0].processes[0].cpu: unexpected field (expected one of: pid, util, mem_used_mib, "
         "instance)"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[{\"util\":3}]}]}",
         "gpus[0].processes[0].pid: required"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[{\"pid\":\"42\"}]}]}",
         "gpus[0].processes[0].pid: expected an integer in 1..4194304"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[{\"pid\":0}]}]}",
         "gpus[0].processes[0].pid: expected an integer in 1..4194304"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[{\"pid\":42.5}]}]}",
         "gpus[0].processes[0].pid: expected an integer"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[{\"pid\":42,\"util\":-1}]}]}",
         "gpus[0].processes[0].util: expected a number in 0..100"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[{\"pid\":42,"
         "\"mem_used_mib\":81921}]}]}",
         "gpus[0].processes[0].mem_used_mib: expected a number in 0..81920"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[{\"pid\":42},{\"pid\":42}]}]}",
         "gpus[0].processes[1].pid: 42 is listed twice"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"processes\":[{\"pid\":42,\"instance\":1}]}]}",
         "gpus[0].processes[0].instance: the GPU is not in MIG mode"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"3g.40gb\",\"start\":0}],\"processes\":[{\"pid\":42}]}]}",
         "gpus[0].processes[0].instance: expected the ID of one of the GPU's instances"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"3g.40gb\",\"start\":0}],\"processes\":[{\"pid\":42,\"instance\":2}]}]}",
         "gpus[0].processes[0].instance: expected the ID of one of the GPU's instances"},
        {"{\"gpus\":[{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":["
         "{\"profile\":\"3g.40gb\",\"start\":0}],\"processes\":[{\"pid\":42,\"instance\":1,"
         "\"util\":5}]}]}",
         "gpus[0].processes[0].util: NVML offers no per-process utilization in MIG mode"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(path, sizeof(path), "/tmp/gs-fake-%d.json", (int)getpid());
        FILE *f = fopen(path, "w");
        fputs(cases[i][0], f);
        fclose(f);
        struct gs_gpu_backend *b = NULL;
        struct gs_error err;
        gs_error_init(&err);
        cr_assert_eq(gs_gpu_open_fake(path, &b, &err), GS_EINVAL, "case %zu accepted", i);
        cr_assert(strstr(err.msg, cases[i][1]), "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i][1]);
    }
    unlink(path);
}

Test(fake_gpu, a_profiles_instance_limit_holds_on_create)
{
    /* 1g.10gb+me (profile 20) has max count 1 on an A100 and an H100, though 7 one-slice
     * placements are free */
    const char *models[] = {"A100-80GB", "H100-80GB"};
    for (size_t i = 0; i < 2; i++) {
        char json[128];
        snprintf(json, sizeof(json), "{\"gpus\":[{\"model\":\"%s\",\"mig\":true}]}", models[i]);
        struct gs_gpu_backend *b = fake(json);
        struct gs_gpu_profile pr[16];
        int np = b->ops->mig_profiles(b, 0, pr, 16);
        uint32_t max = 0;
        for (int k = 0; k < np; k++)
            if (pr[k].id == 20)
                max = pr[k].max_count;
        cr_assert_eq(max, 1, "%s: the backend reports max count %u for profile 20", models[i], max);
        struct gs_mig_inst in;
        cr_assert_eq(b->ops->mig_create(b, 0, 20, 0, &in), 0);
        cr_assert_eq(b->ops->mig_create(b, 0, 20, 1, &in), GS_ENOFIT, "%s: a second 1g.10gb+me",
                     models[i]);
        cr_assert_eq(b->ops->mig_create(b, 0, 19, 1, &in), 0, "a 1g.10gb still fits");
        struct gs_mig_inst all[8];
        cr_assert_eq(b->ops->mig_list(b, 0, all, 8), 2);
        /* once it is gone, another may be made */
        cr_assert_eq(b->ops->mig_destroy(b, 0, all[0].gi_id), 0);
        cr_assert_eq(b->ops->mig_create(b, 0, 20, 2, &in), 0);
        gs_gpu_close(b);
    }
    unlink(path);
}

Test(migmgr, the_articles_configs_give_nvidias_placements)
{
    struct gs_gpu_backend *b = fake(A100X4);
    struct gs_migparted *mp = article();
    struct gs_error err;
    gs_error_init(&err);
    char l[128];
    cr_assert_eq(apply(b, mp, "all-1g.10gb", NULL, 0, false, &err), 4, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        layout_of(b, i, l, sizeof(l));
        cr_assert_str_eq(l, "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 "
                            "1g.10gb@6");
    }
    cr_assert_eq(apply(b, mp, "all-1g.10gb", NULL, 0, false, &err), 0, "idempotent");
    cr_assert_eq(apply(b, mp, "all-2g.20gb", NULL, 0, false, &err), 4, "%s", err.msg);
    layout_of(b, 3, l, sizeof(l));
    cr_assert_str_eq(l, "2g.20gb@0 2g.20gb@2 2g.20gb@4");
    cr_assert_eq(apply(b, mp, "all-3g.40gb", NULL, 0, false, &err), 4, "%s", err.msg);
    layout_of(b, 0, l, sizeof(l));
    cr_assert_str_eq(l, "3g.40gb@0 3g.40gb@4");
    /* mixed: GPU0 keeps its two 3g.40gb, GPU1 becomes 7 x 1g.10gb, GPUs 2 and 3 leave MIG */
    cr_assert_eq(apply(b, mp, "mixed", NULL, 0, false, &err), 3, "%s", err.msg);
    layout_of(b, 0, l, sizeof(l));
    cr_assert_str_eq(l, "3g.40gb@0 3g.40gb@4");
    layout_of(b, 1, l, sizeof(l));
    cr_assert_str_eq(l, "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 "
                        "1g.10gb@6");
    layout_of(b, 2, l, sizeof(l));
    cr_assert_str_eq(l, "off");
    cr_assert_eq(apply(b, mp, "mixed", NULL, 0, false, &err), 0, "idempotent");
    gs_migparted_free(mp);
    gs_gpu_close(b);
    unlink(path);
}

Test(migmgr, a_config_that_does_not_fit_changes_nothing)
{
    struct gs_gpu_backend *b = fake(A100X4);
    struct gs_migparted *mp = article();
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(apply(b, mp, "all-3g.40gb", NULL, 0, false, &err), 4, "%s", err.msg);
    cr_assert_eq(apply(b, mp, "no-such-config", NULL, 0, false, &err), GS_ENOTFOUND);
    /* a config that parses but does not fit an A100 (4 x 3g.40gb) */
    const char *bad = "version: v1\nmig-configs:\n  too-many:\n    - devices: all\n"
                      "      mig-enabled: true\n      mig-devices: {\"3g.40gb\": 3}\n";
    struct gs_migparted *mb = NULL;
    if (gs_migparted_parse("bad.yaml", bad, strlen(bad), &mb, &err) == 0) {
        gs_error_init(&err);
        int rc = apply(b, mb, "too-many", NULL, 0, false, &err);
        cr_assert_eq(rc, GS_EINVAL, "rc %d: %s", rc, err.msg);
        cr_assert(strstr(err.msg, "GPU 0"), "%s", err.msg);
        gs_migparted_free(mb);
    }
    char l[128];
    for (int i = 0; i < 4; i++) {
        layout_of(b, i, l, sizeof(l));
        cr_assert_str_eq(l, "3g.40gb@0 3g.40gb@4", "GPU %d changed", i);
    }
    gs_migparted_free(mp);
    gs_gpu_close(b);
    unlink(path);
}

Test(migmgr, an_instance_a_pod_holds_is_never_destroyed)
{
    struct gs_gpu_backend *b = fake(A100X4);
    struct gs_migparted *mp = article();
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(apply(b, mp, "all-3g.40gb", NULL, 0, false, &err), 4, "%s", err.msg);
    struct gs_mig_inst in[8];
    cr_assert_eq(b->ops->mig_list(b, 2, in, 8), 2);
    const char *held[1] = {in[1].uuid};
    /* all-1g.10gb would destroy it: refused, nothing changed on any GPU */
    cr_assert_eq(apply(b, mp, "all-1g.10gb", held, 1, false, &err), GS_EINVAL);
    cr_assert(strstr(err.msg, in[1].uuid) && strstr(err.msg, "nothing was changed"), "%s", err.msg);
    char l[128];
    for (int i = 0; i < 4; i++) {
        layout_of(b, i, l, sizeof(l));
        cr_assert_str_eq(l, "3g.40gb@0 3g.40gb@4", "GPU %d changed", i);
    }
    /* mixed keeps GPU 0's 3g.40gb pair but disables MIG on GPU 2: refused too */
    cr_assert_eq(apply(b, mp, "mixed", held, 1, false, &err), GS_EINVAL);
    /* forced, it goes through */
    cr_assert_eq(apply(b, mp, "all-1g.10gb", held, 1, true, &err), 4, "%s", err.msg);
    gs_migparted_free(mp);
    gs_gpu_close(b);
    unlink(path);
}

Test(fake_gpu, a_mode_change_needs_an_idle_gpu)
{
    struct gs_gpu_backend *b = fake("{\"gpus\":[{\"model\":\"H100-80GB\",\"busy\":true},"
                                    "{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":["
                                    "{\"profile\":\"7g.80gb\",\"start\":0,\"busy\":true}]}]}");
    cr_assert_eq(b->ops->mig_set_mode(b, 0, true), GS_EINVAL, "a process holds GPU 0");
    struct gs_gpu_info info;
    b->ops->info(b, 0, &info);
    cr_assert(!info.mig_enabled);
    cr_assert_eq(b->ops->mig_set_mode(b, 1, true), 0, "already on: nothing to change");
    struct gs_mig_inst in[8];
    cr_assert_eq(b->ops->mig_list(b, 1, in, 8), 1);
    cr_assert_eq(b->ops->mig_destroy(b, 1, in[0].gi_id), GS_EINVAL, "busy");
    /* the process ends (the file changes while the agent runs) */
    sleep(1); /* a new modification time */
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("{\"gpus\":[{\"model\":\"H100-80GB\"},{\"model\":\"H100-80GB\",\"mig\":true,"
          "\"instances\":[{\"profile\":\"7g.80gb\",\"start\":0}]}]}",
          f);
    fclose(f);
    cr_assert_eq(b->ops->mig_set_mode(b, 0, true), 0);
    cr_assert_eq(b->ops->mig_destroy(b, 1, in[0].gi_id), 0);
    cr_assert_eq(b->ops->mig_set_mode(b, 1, false), 0);
    gs_gpu_close(b);
    unlink(path);
}

/* GPUs 0 and 1 in 7 x 1g.10gb, GPU 2 whole, GPU 3 an L40S (no MIG) */
#define H100X3                                                                                     \
    "{\"gpus\":[{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":[" SEVEN_1G "]},"              \
    "{\"model\":\"H100-80GB\",\"mig\":true,\"instances\":[" SEVEN_1G "]},"                         \
    "{\"model\":\"H100-80GB\"},{\"model\":\"L40S-48GB\"}]}"
#define SEVEN_1G                                                                                   \
    "{\"profile\":\"1g.10gb\",\"start\":0},{\"profile\":\"1g.10gb\",\"start\":1},"                 \
    "{\"profile\":\"1g.10gb\",\"start\":2},{\"profile\":\"1g.10gb\",\"start\":3},"                 \
    "{\"profile\":\"1g.10gb\",\"start\":4},{\"profile\":\"1g.10gb\",\"start\":5},"                 \
    "{\"profile\":\"1g.10gb\",\"start\":6}"
#define ALL_1G "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 1g.10gb@6"

static void desired(const char *json, struct gs_mig_desired *d)
{
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_mig_desired_read(json, strlen(json), d, &err), 0, "%s", err.msg);
}

/* The UUID of GPU i's instance at start, or "". */
static const char *uuid_at(struct gs_gpu_backend *b, int i, unsigned start)
{
    static struct gs_mig_inst in[8];
    int n = b->ops->mig_list(b, i, in, 8);
    for (int k = 0; k < n; k++)
        if (in[k].start == start)
            return in[k].uuid;
    return "";
}

Test(migmgr_desired, exact_placements_and_kept_instances_keep_their_uuid)
{
    struct gs_gpu_backend *b = fake(H100X3);
    struct gs_mig_desired d;
    desired("{\"v\":1,\"generation\":3,\"gpus\":[{\"i\":1,\"mig\":[\"3g.40gb@0\",\"3g.40gb@4\"]},"
            "{\"i\":2,\"mig\":[\"7g.80gb@0\"]},{\"i\":0,\"mig\":[\"1g.10gb@0\",\"3g.40gb@4\"]}]}",
            &d);
    char held[96];
    snprintf(held, sizeof(held), "%s", uuid_at(b, 0, 0));
    cr_assert(held[0]);
    struct gs_migmgr_use use[1] = {{held, "ai/emb"}};
    static struct gs_migmgr_plan plan;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_migmgr_plan_desired(b, &d, use, 1, &plan, &err), 0, "%s", err.msg);
    cr_expect_eq(plan.changes, 3);
    cr_expect_eq(plan.waiting, 0);
    cr_assert_eq(plan.ngpus, 3);
    const struct gs_migmgr_gpu *g0 = &plan.gpu[0];
    cr_expect_eq(g0->index, 0);
    cr_expect_eq(g0->nkeep, 1, "GPU 0 keeps its 1g.10gb@0");
    cr_expect_str_eq(g0->keep[0].uuid, held);
    cr_expect_eq(g0->ndestroy, 6);
    cr_expect_eq(g0->ncreate, 1);
    cr_expect_eq(g0->create[0].start, 4);
    cr_expect(plan.gpu[2].mode_want && !plan.gpu[2].mode_now, "GPU 2: MIG on");
    char text[2048];
    gs_migmgr_plan_str(&plan, text, sizeof(text));
    cr_expect(strstr(text, "mig-desired generation 3: 3 GPUs to change"), "%s", text);
    cr_assert_eq(gs_migmgr_apply(b, &plan, &err), 0, "%s", err.msg);
    char l[160];
    layout_of(b, 0, l, sizeof(l));
    cr_expect_str_eq(l, "1g.10gb@0 3g.40gb@4");
    cr_expect_str_eq(uuid_at(b, 0, 0), held, "the kept instance was re-created");
    layout_of(b, 1, l, sizeof(l));
    cr_expect_str_eq(l, "3g.40gb@0 3g.40gb@4");
    layout_of(b, 2, l, sizeof(l));
    cr_expect_str_eq(l, "7g.80gb@0");
    layout_of(b, 3, l, sizeof(l));
    cr_expect_str_eq(l, "off", "a GPU not listed is left as it is");
    /* as asked now: nothing to do */
    cr_assert_eq(gs_migmgr_plan_desired(b, &d, use, 1, &plan, &err), 0, "%s", err.msg);
    cr_expect_eq(plan.changes, 0);
    cr_expect_eq(plan.waiting, 0);
    /* whole: instances go, MIG mode off; mig: [] is MIG mode with no instance */
    desired("{\"v\":1,\"generation\":4,\"gpus\":[{\"i\":2,\"whole\":true},{\"i\":1,\"mig\":[]}]}",
            &d);
    cr_assert_eq(gs_migmgr_plan_desired(b, &d, NULL, 0, &plan, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_migmgr_apply(b, &plan, &err), 0, "%s", err.msg);
    layout_of(b, 2, l, sizeof(l));
    cr_expect_str_eq(l, "off");
    layout_of(b, 1, l, sizeof(l));
    cr_expect_str_eq(l, "");
    struct gs_gpu_info info;
    b->ops->info(b, 1, &info);
    cr_expect(info.mig_enabled);
    gs_gpu_close(b);
    unlink(path);
}

Test(migmgr_desired, an_instance_a_pod_holds_makes_its_gpu_wait)
{
    struct gs_gpu_backend *b = fake(H100X3);
    struct gs_mig_desired d;
    desired("{\"v\":1,\"generation\":5,\"gpus\":[{\"i\":0,\"mig\":[\"7g.80gb@0\"]},"
            "{\"i\":1,\"whole\":true}]}",
            &d);
    char held[96];
    snprintf(held, sizeof(held), "%s", uuid_at(b, 0, 3));
    struct gs_migmgr_use use[2] = {{"MIG-not-here", "ai/other"}, {held, "ai/emb"}};
    static struct gs_migmgr_plan plan;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_migmgr_plan_desired(b, &d, use, 2, &plan, &err), 0, "%s", err.msg);
    cr_expect_eq(plan.waiting, 1);
    cr_expect_eq(plan.changes, 1, "GPU 1 does not wait for GPU 0");
    cr_expect(plan.gpu[0].wait && !plan.gpu[0].change);
    cr_expect(strstr(plan.gpu[0].why, "GPU 0: MIG instance 1g.10gb@3") &&
                  strstr(plan.gpu[0].why, held) && strstr(plan.gpu[0].why, "pod ai/emb"),
              "%s", plan.gpu[0].why);
    cr_assert_eq(gs_migmgr_apply(b, &plan, &err), 0, "%s", err.msg);
    char l[160];
    layout_of(b, 0, l, sizeof(l));
    cr_expect_str_eq(l, ALL_1G, "GPU 0 changed while a pod holds one of its instances");
    layout_of(b, 1, l, sizeof(l));
    cr_expect_str_eq(l, "off");
    /* the pod is gone: GPU 0 goes ahead, GPU 1 is as asked */
    cr_assert_eq(gs_migmgr_plan_desired(b, &d, use, 1, &plan, &err), 0, "%s", err.msg);
    cr_expect_eq(plan.waiting, 0);
    cr_expect_eq(plan.changes, 1);
    cr_assert_eq(gs_migmgr_apply(b, &plan, &err), 0, "%s", err.msg);
    layout_of(b, 0, l, sizeof(l));
    cr_expect_str_eq(l, "7g.80gb@0");
    gs_gpu_close(b);
    unlink(path);
}

Test(migmgr_desired, a_gpu_a_pod_holds_whole_keeps_its_mode)
{
    struct gs_gpu_backend *b = fake(H100X3);
    struct gs_gpu_info info;
    b->ops->info(b, 2, &info);
    struct gs_migmgr_use use[1] = {{info.uuid, "ai/trainer"}};
    struct gs_mig_desired d;
    desired("{\"v\":1,\"generation\":1,\"gpus\":[{\"i\":2,\"mig\":[\"7g.80gb@0\"]}]}", &d);
    static struct gs_migmgr_plan plan;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_migmgr_plan_desired(b, &d, use, 1, &plan, &err), 0, "%s", err.msg);
    cr_expect_eq(plan.waiting, 1);
    cr_expect_eq(plan.changes, 0);
    cr_expect(strstr(plan.gpu[0].why, "held by pod ai/trainer"), "%s", plan.gpu[0].why);
    /* a GPU held whole that is whole already: as asked, nothing waits */
    desired("{\"v\":1,\"generation\":2,\"gpus\":[{\"i\":2,\"whole\":true}]}", &d);
    cr_assert_eq(gs_migmgr_plan_desired(b, &d, use, 1, &plan, &err), 0, "%s", err.msg);
    cr_expect_eq(plan.waiting + plan.changes, 0);
    gs_gpu_close(b);
    unlink(path);
}

Test(migmgr_desired, an_invalid_layout_is_refused_whole_and_changes_nothing)
{
    struct {
        const char *gpus, *want;
    } cases[] = {
        {"{\"i\":0,\"mig\":[\"3g.40gb@0\",\"1g.10gb@2\"]}",
         "GPU 0 (H100-80GB): 1g.10gb@2 overlaps 3g.40gb@0"},
        {"{\"i\":0,\"mig\":[\"3g.40gb@2\"]}", "GPU 0 (H100-80GB): 3g.40gb cannot start at 2"},
        {"{\"i\":0,\"mig\":[\"5g.60gb@0\"]}", "GPU 0 (H100-80GB): 5g.60gb is not a MIG profile"},
        {"{\"i\":0,\"mig\":[\"1g.10gb+me@0\",\"1g.10gb+me@1\"]}", "GPU 0 (H100-80GB): the layout"},
        {"{\"i\":0,\"mig\":[\"1g.10gb@0\",\"1g.10gb@1\",\"1g.10gb@2\",\"1g.10gb@3\",\"1g.10gb@4\","
         "\"1g.10gb@5\",\"1g.10gb@6\",\"1g.10gb@7\"]}",
         "GPU 0 (H100-80GB): 8 instances"},
        {"{\"i\":7,\"whole\":true}", "GPU 7: no such GPU on this node (4 GPUs)"},
        {"{\"i\":3,\"mig\":[]}", "GPU 3 (L40S-48GB) is not MIG-capable"},
    };
    struct gs_gpu_backend *b = fake(H100X3);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        /* GPUs 1 and 2 could change: they do not, since GPU 0 (or 7, 3) is invalid */
        char json[512];
        snprintf(json, sizeof(json),
                 "{\"v\":1,\"generation\":9,\"gpus\":[{\"i\":1,\"whole\":true},{\"i\":2,"
                 "\"mig\":[\"7g.80gb@0\"]},%s]}",
                 cases[k].gpus);
        struct gs_mig_desired d;
        desired(json, &d);
        static struct gs_migmgr_plan plan;
        struct gs_error err;
        gs_error_init(&err);
        cr_expect_eq(gs_migmgr_plan_desired(b, &d, NULL, 0, &plan, &err), GS_EINVAL,
                     "case %zu accepted", k);
        cr_expect(strstr(err.msg, cases[k].want), "case %zu: '%s' lacks '%s'", k, err.msg,
                  cases[k].want);
        cr_expect_eq(plan.ngpus + plan.changes, 0, "case %zu: a refused layout planned GPUs", k);
        cr_assert_eq(gs_migmgr_apply(b, &plan, &err), 0);
        char l[160];
        for (int i = 0; i < 2; i++) {
            layout_of(b, i, l, sizeof(l));
            cr_expect_str_eq(l, ALL_1G, "case %zu: GPU %d changed", k, i);
        }
        layout_of(b, 2, l, sizeof(l));
        cr_expect_str_eq(l, "off", "case %zu: GPU 2 changed", k);
    }
    gs_gpu_close(b);
    unlink(path);
}

Test(migmgr_desired, the_mig_config_leaves_the_gpus_a_desired_layout_lists)
{
    struct gs_gpu_backend *b = fake(A100X4);
    struct gs_migparted *mp = article();
    static struct gs_migmgr_plan plan;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(
        gs_migmgr_plan_except(b, mp, "all-3g.40gb", NULL, 0, false, 1u << 1 | 1u << 3, &plan, &err),
        0, "%s", err.msg);
    cr_expect_eq(plan.changes, 2);
    cr_assert_eq(gs_migmgr_apply(b, &plan, &err), 0, "%s", err.msg);
    char l[128];
    for (int i = 0; i < 4; i++) {
        layout_of(b, i, l, sizeof(l));
        cr_expect_str_eq(l, i % 2 ? "off" : "3g.40gb@0 3g.40gb@4", "GPU %d", i);
    }
    gs_migparted_free(mp);
    gs_gpu_close(b);
    unlink(path);
}

Test(nvml, no_library_means_no_gpus)
{
    struct gs_gpu_backend *b = NULL;
    char why[256];
    cr_assert_eq(gs_gpu_open_nvml(&b, why, sizeof(why)), 0);
    cr_assert_not_null(b);
    if (b->ops->count(b) == 0)
        cr_assert(strstr(why, "no GPUs") || why[0] == '\0', "%s", why);
    gs_gpu_close(b);
}
