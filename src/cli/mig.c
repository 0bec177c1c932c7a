/* mig.c - `gpusched mig`: profiles and valid layouts of a GPU model, validation of a
 * mig-parted config, and planning the fewest GPUs for a demand of MIG instances. */
#include "cli.h"

#include "../base/error.h"
#include "../core/mig.h"
#include "../formats/migmgrfile.h"
#include "../formats/migparted.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void mig_usage(FILE *f)
{
    fprintf(f, "usage: gpusched mig profiles --gpu MODEL\n"
               "       gpusched mig layouts --gpu MODEL [--all]\n"
               "       gpusched mig validate FILE [--gpu MODEL] [--config NAME]\n"
               "       gpusched mig plan --gpu MODEL --demand PROFILE=N[,PROFILE=N...]\n"
               "\n"
               "MODEL is a catalog name or an nvidia.com/gpu.product value, e.g. A100-80GB,\n"
               "A100-SXM4-40GB, H100-80GB, H100-NVL-94GB, H200-141GB.\n");
}

static int need_mig(int model);

/* what the subcommands' flags fill */
struct mig_cli {
    int model; /* -1: no --gpu */
    bool all;
    const char *demand, *config, *file;
};

/* --gpu MODEL: the first one counts */
static int gpu_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    int *model = field;
    if (*model >= 0)
        return 0;
    if (!v) {
        fprintf(stderr, "gpusched mig: --gpu needs a model name\n");
        return GS_EXIT_USAGE;
    }
    *model = gs_catalog_find(v);
    if (*model < 0) {
        fprintf(stderr, "gpusched mig: --gpu '%s': unknown GPU model (known:", v);
        for (int m = 0; m < gs_catalog_count(); m++)
            fprintf(stderr, " %s", gs_catalog_get(m)->name);
        fprintf(stderr, ")\n");
        return GS_EXIT_USAGE;
    }
    return 0;
}

/* validate's FILE */
static int file_arg(void *opts, const char *arg)
{
    struct mig_cli *c = opts;
    if (c->file)
        return -1;
    c->file = arg;
    return 0;
}

#define M        struct mig_cli
#define GPU_FLAG GS_CLI_FN_BARE("--gpu", offsetof(M, model), gpu_flag, "MODEL: the GPU model")
static const struct gs_cli_flag profiles_flags[] = {GPU_FLAG, {0}};
static const struct gs_cli_flag layouts_flags[] = {
    GPU_FLAG,
    GS_CLI_SET("--all", M, all, "every valid layout, not only the maximal ones"),
    {0},
};
static const struct gs_cli_flag validate_flags[] = {
    GPU_FLAG,
    GS_CLI_STR("--config", M, config, "NAME: only this config"),
    {0},
};
static const struct gs_cli_flag plan_flags[] = {
    GPU_FLAG,
    GS_CLI_STR("--demand", M, demand, "PROFILE=N[,PROFILE=N...]: the instances wanted"),
    {0},
};
#undef GPU_FLAG
#undef M

/* Reads argv into c (validate: strictly; the others skip what they do not know); with
 * required, --gpu must name a MIG-capable model. */
static int mig_flags(int argc, char **argv, const struct gs_cli_flag *flags, struct mig_cli *c,
                     bool required)
{
    bool validate = flags == validate_flags;
    *c = (struct mig_cli){.model = -1};
    const struct gs_cli_parser p = {
        .prog = "gpusched mig validate",
        .flags = flags,
        .how = validate ? 0 : GS_CLI_LENIENT,
        .unknown = "unexpected argument",
        .incomplete = "unexpected argument",
        .positional = validate ? file_arg : NULL,
    };
    int rc = gs_cli_parse(&p, c, argc, argv);
    if (rc)
        return rc;
    if (required && c->model < 0) {
        fprintf(stderr, "gpusched mig: --gpu MODEL is required\n");
        return GS_EXIT_USAGE;
    }
    return required ? need_mig(c->model) : 0;
}

static int need_mig(int model)
{
    if (!gs_catalog_mig_capable(model)) {
        char why[512];
        gs_catalog_mig_refusal(model, why, sizeof(why));
        fprintf(stderr, "gpusched mig: %s\n", why);
        return GS_EXIT_USAGE;
    }
    return 0;
}

static int cmd_profiles(int argc, char **argv)
{
    struct mig_cli c;
    int rc = mig_flags(argc, argv, profiles_flags, &c, true);
    if (rc)
        return rc;
    int model = c.model;
    const struct gs_gpu_model *m = gs_catalog_get(model);
    printf("%s (%u MiB, %u SMs): MIG GPU-instance profiles\n", m->name, m->mem_mib, m->sms);
    bool any_low = false;
    for (int i = 0; i < m->nprofiles; i++)
        any_low |= m->profiles[i].at_least;
    int ws = any_low ? 6 : 5, wm = any_low ? 10 : 9; /* room for ">=" only where it is used */
    printf("%-12s %4s %7s %8s %-15s %4s %*s %*s %s\n", "profile", "id", "compute", "mem-sl",
           "starts", "max", ws, "SMs", wm, "mem(MiB)", "resource");
    for (int i = 0; i < m->nprofiles; i++) {
        const struct gs_mig_profile *p = &m->profiles[i];
        char starts[32] = "", res[64];
        size_t o = 0;
        for (int s = 0; s < 8; s++)
            if (p->start_mask & (1u << s))
                o += (size_t)snprintf(starts + o, sizeof(starts) - o, "%s%d", o ? "," : "", s);
        gs_mig_resource_name(p, res, sizeof(res));
        char sms[16], mib[16];
        snprintf(sms, sizeof(sms), "%s%u", p->at_least ? ">=" : "", p->sms);
        snprintf(mib, sizeof(mib), "%s%u", p->at_least ? ">=" : "", p->mem_mib);
        printf("%-12s %4u %7u %8u %-15s %4u %*s %*s %s\n", p->name, p->id, p->compute,
               p->mem_slices, starts, p->max_count, ws, sms, wm, mib, res);
    }
    if (any_low)
        printf(">=: no public nvidia-smi listing gives this row; at least this much, from the "
               "model's published rows\n");
    return GS_EXIT_OK;
}

static int cmd_layouts(int argc, char **argv)
{
    struct mig_cli c;
    int rc = mig_flags(argc, argv, layouts_flags, &c, true);
    if (rc)
        return rc;
    int model = c.model;
    bool all = c.all;
    static struct gs_mig_layout ls[4096];
    int n =
        all ? gs_mig_enumerate_valid(model, ls, 4096) : gs_mig_enumerate_maximal(model, ls, 4096);
    if (n > 4096)
        n = 4096;
    printf("%s: %d %s layouts\n", gs_catalog_get(model)->name, n, all ? "valid" : "maximal");
    for (int i = 0; i < n; i++) {
        char s[160];
        struct gs_mig_placement pl;
        gs_mig_layout_str(model, &ls[i], s, sizeof(s));
        gs_mig_place(model, &ls[i], &pl, NULL);
        printf("  %-44s placements:", s);
        for (int k = 0; k < pl.n; k++)
            printf(" %s@%u", gs_catalog_get(model)->profiles[pl.inst[k].profile].name,
                   pl.inst[k].start);
        printf("\n");
    }
    return GS_EXIT_OK;
}

static int cmd_validate(int argc, char **argv)
{
    struct mig_cli mc;
    int rc = mig_flags(argc, argv, validate_flags, &mc, false);
    if (rc)
        return rc;
    const char *file = mc.file, *config = mc.config;
    int model = mc.model;
    if (!file) {
        fprintf(stderr, "gpusched mig validate: FILE is required\n");
        return GS_EXIT_USAGE;
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_migparted *m = NULL;
    rc = gs_migparted_load(file, &m, &err);
    if (rc) {
        fprintf(stderr, "gpusched mig validate: %s\n", err.msg);
        return gs_cli_input_exit(rc);
    }
    if (config && !gs_migparted_find(m, config)) {
        fprintf(stderr, "gpusched mig validate: %s: no config named '%s'\n", file, config);
        gs_migparted_free(m);
        return GS_EXIT_USAGE;
    }
    rc = gs_migparted_check(m, model, &err);
    /* the MigManager documents beside it (the article's file has one) */
    int nmgr = rc ? 0 : gs_migmgr_file_check(file, m, model, &err);
    if (rc || nmgr < 0) {
        fprintf(stderr, "gpusched mig validate: %s\n", err.msg);
        gs_migparted_free(m);
        return rc ? GS_EXIT_USAGE : gs_cli_input_exit(nmgr);
    }
    printf("%s: valid mig-parted config, %d configs", file, m->nconfigs);
    if (model >= 0)
        printf(" (checked on %s)", gs_catalog_get(model)->name);
    if (nmgr > 0)
        printf("; %d MigManager%s, its gpuClients' MIG devices carved by the configs", nmgr,
               nmgr == 1 ? "" : "s");
    printf("\n");
    for (int c = 0; c < m->nconfigs; c++) {
        const struct gs_mp_config *cfg = &m->configs[c];
        if (config && strcmp(cfg->name, config) != 0)
            continue;
        printf("  %s:", cfg->name);
        for (int k = 0; k < cfg->nentries; k++) {
            const struct gs_mp_entry *e = &cfg->entries[k];
            printf(" [devices ");
            if (e->all_devices)
                printf("all");
            for (int d = 0; d < e->ndevices; d++)
                printf("%s%d", d ? "," : "", e->devices[d]);
            if (!e->mig_enabled)
                printf(": MIG off]");
            else {
                printf(":");
                for (int p = 0; p < e->nprofiles; p++)
                    printf(" %ux%s", e->profiles[p].count, e->profiles[p].name);
                printf("]");
            }
        }
        printf("\n");
    }
    gs_migparted_free(m);
    return GS_EXIT_OK;
}

static int cmd_plan(int argc, char **argv)
{
    struct mig_cli c;
    int rc = mig_flags(argc, argv, plan_flags, &c, true);
    if (rc)
        return rc;
    int model = c.model;
    const char *demand = c.demand;
    if (!demand) {
        fprintf(stderr, "gpusched mig plan: --demand PROFILE=N[,...] is required\n");
        return GS_EXIT_USAGE;
    }
    uint32_t want[GS_MIG_MAX_PROFILES] = {0};
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", demand);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        char *end = NULL;
        long n = eq ? strtol(eq + 1, &end, 10) : -1;
        if (!eq || end == eq + 1 || *end || n < 0 || n > 100000) {
            fprintf(stderr, "gpusched mig plan: --demand '%s': expected PROFILE=COUNT\n", t);
            return GS_EXIT_USAGE;
        }
        *eq = '\0';
        int p = gs_catalog_find_profile(model, t);
        if (p < 0) {
            char why[768];
            gs_catalog_profile_unknown(model, t, why, sizeof(why));
            fprintf(stderr, "gpusched mig plan: %s\n", why);
            return GS_EXIT_USAGE;
        }
        want[p] += (uint32_t)n;
    }
    static struct gs_mig_layout out[4096];
    struct gs_error err;
    gs_error_init(&err);
    int n = gs_mig_plan(model, want, out, 4096, &err);
    if (n < 0) {
        fprintf(stderr, "gpusched mig plan: %s\n", err.msg);
        return gs_cli_exit_code(n);
    }
    printf("%s: %d GPU%s\n", gs_catalog_get(model)->name, n, n == 1 ? "" : "s");
    for (int i = 0; i < n && i < 4096; i++) {
        char s[160];
        gs_mig_layout_str(model, &out[i], s, sizeof(s));
        printf("  gpu %d: %s\n", i, s);
    }
    return GS_EXIT_OK;
}

static const struct gs_cli_command mig_commands[] = {
    {"profiles", cmd_profiles, "a model's GPU-instance profiles"},
    {"layouts", cmd_layouts, "a model's maximal (or all valid) layouts"},
    {"validate", cmd_validate, "check a mig-parted config"},
    {"plan", cmd_plan, "the fewest GPUs for a demand"},
    {NULL, NULL, NULL},
};

int gs_cli_mig(int argc, char **argv)
{
    static const struct gs_cli_commands d = {
        .prog = "gpusched mig",
        .commands = mig_commands,
        .usage = mig_usage,
        .unknown = "unknown subcommand",
        .usage_on_unknown = true,
    };
    return gs_cli_dispatch(&d, argc, argv);
}
