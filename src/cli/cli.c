/* cli.c - what the subcommands of the gpusched binary share (cli.h): --help detection,
 * bounded number flags, exit codes from error codes, and the flag-table parser. main.c and
 * every subcommand file use these; nothing here depends on main.c. */
#include "cli.h"

#include "../base/error.h"
#include "../formats/scenario.h"

#include "../base/flag.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

bool gs_cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

bool gs_cli_wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (gs_cli_is_help(argv[i]))
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

int gs_cli_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || strlen(s) > 19)
        return GS_EINVAL;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return GS_EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return 0;
}

static volatile int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    gs_flag_set(&stop_flag, 1);
}

volatile int *gs_cli_stop_on_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return &stop_flag;
}

int gs_cli_exit_code(int rc)
{
    if (rc == 0)
        return GS_EXIT_OK;
    if (rc == GS_EINVAL || rc == GS_ENOTFOUND || rc == GS_ENOFIT)
        return GS_EXIT_USAGE;
    return GS_EXIT_FAILURE;
}

int gs_cli_input_exit(int rc)
{
    if (rc == 0)
        return GS_EXIT_OK;
    return rc == GS_ENOMEM || rc == GS_EINTERNAL ? GS_EXIT_FAILURE : GS_EXIT_USAGE;
}

const struct gs_cli_command *gs_cli_command_find(const struct gs_cli_command *cmds,
                                                 const char *name)
{
    for (; cmds->name; cmds++)
        if (strcmp(cmds->name, name) == 0)
            return cmds;
    return NULL;
}

int gs_cli_dispatch(const struct gs_cli_commands *d, int argc, char **argv)
{
    if (argc < 1 || gs_cli_wants_help(argc, argv)) {
        d->usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? GS_EXIT_USAGE : GS_EXIT_OK;
    }
    const struct gs_cli_command *c = gs_cli_command_find(d->commands, argv[0]);
    if (c)
        return c->run(argc - 1, argv + 1);
    fprintf(stderr, "%s: %s '%s'%s\n", d->prog, d->unknown, argv[0], d->suffix ? d->suffix : "");
    if (d->usage_on_unknown)
        d->usage(stderr);
    return GS_EXIT_USAGE;
}

const struct gs_cli_flag *gs_cli_flag_find(const struct gs_cli_flag *flags, const char *name)
{
    for (; flags->name; flags++)
        if (strcmp(flags->name, name) == 0)
            return flags;
    return NULL;
}

/* v is one of the '|'-separated choices */
static bool one_of(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *c = choices; c; c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL)
        if (strncmp(c, v, n) == 0 && (c[n] == '|' || c[n] == '\0'))
            return true;
    return false;
}

static int real(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return GS_EINVAL;
    *out = v;
    return 0;
}

/* a gs_cli_number kind: the number into its field's type */
static int number(const struct gs_cli_flag *f, const char *v, void *field)
{
    double x;
    if (gs_cli_number(f->name, v, f->lo, f->hi, &x))
        return GS_EXIT_USAGE;
    switch (f->kind) {
    case GS_CLI_KINT:
        *(int *)field = (int)x;
        break;
    case GS_CLI_KU32:
        *(uint32_t *)field = (uint32_t)x;
        break;
    case GS_CLI_KU64:
        *(uint64_t *)field = (uint64_t)x;
        break;
    case GS_CLI_KI64:
        *(int64_t *)field = (int64_t)x;
        break;
    default:
        *(double *)field = x;
        break;
    }
    return 0;
}

/* One flag's value into its field: 0 or the exit code. */
static int set(const struct gs_cli_parser *p, void *opts, const struct gs_cli_flag *f,
               const char *v)
{
    void *field = (char *)opts + f->off;
    bool bad = false;
    double x = 0;
    uint64_t u = 0;
    switch (f->kind) {
    case GS_CLI_KSET:
        *(bool *)field = true;
        return 0;
    case GS_CLI_KSTR:
        *(const char **)field = v;
        return 0;
    case GS_CLI_KTRUEFALSE:
        bad = strcmp(v, "true") != 0 && strcmp(v, "false") != 0;
        if (!bad)
            *(bool *)field = strcmp(v, "true") == 0;
        break;
    case GS_CLI_KCHOICE:
        bad = !one_of(f->choices, v);
        if (!bad)
            *(const char **)field = v;
        break;
    case GS_CLI_KDOUBLE:
    case GS_CLI_KINT:
    case GS_CLI_KU32:
    case GS_CLI_KU64:
    case GS_CLI_KI64:
        return number(f, v, field);
    case GS_CLI_KREAL:
        bad = real(v, &x) || x < f->lo || x > f->hi;
        if (!bad)
            *(double *)field = x;
        break;
    case GS_CLI_KUINT:
        bad = gs_cli_u64(v, &u) || (double)u > f->hi;
        if (!bad)
            *(uint64_t *)field = u;
        break;
    case GS_CLI_KDURATION:
        bad = gs_parse_duration(v, &x) || x < f->lo || x > f->hi;
        if (!bad)
            *(double *)field = x;
        break;
    case GS_CLI_KFUNC: {
        int rc = f->parse(f, v, field);
        if (rc && !f->expect)
            return rc;
        bad = rc != 0;
        break;
    }
    }
    if (!bad)
        return 0;
    fprintf(stderr, "%s: %s '%s': expected %s\n", p->prog, f->name, v, f->expect);
    return GS_EXIT_USAGE;
}

static int fail(const struct gs_cli_parser *p, const char *what, const char *arg)
{
    fprintf(stderr, "%s: %s '%s'%s\n", p->prog, what, arg, p->suffix ? p->suffix : "");
    if (p->usage)
        p->usage(stderr);
    return GS_EXIT_USAGE;
}

int gs_cli_parse(const struct gs_cli_parser *p, void *opts, int argc, char **argv)
{
    char name[64];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *eq =
            (p->how & GS_CLI_INLINE) && strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        bool inline_value = eq && (size_t)(eq - a) < sizeof(name);
        if (inline_value) { /* --flag=value */
            snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
            a = name;
            v = eq + 1;
        }
        const struct gs_cli_flag *f = gs_cli_flag_find(p->flags, a);
        if (f && f->kind == GS_CLI_KSET && !inline_value) {
            *(bool *)((char *)opts + f->off) = true;
            continue;
        }
        int rc = a[0] != '-' && p->positional ? p->positional(opts, a) : -1;
        if (rc == 0)
            continue;
        if (rc != -1)
            return rc;
        if (!f || f->kind == GS_CLI_KSET) { /* a flag without value given one is unknown */
            if (p->how & GS_CLI_LENIENT)
                continue;
            bool last = !v && (p->how & GS_CLI_LAST_INCOMPLETE);
            return fail(p, last ? p->incomplete : p->unknown, a);
        }
        if (!v && !f->bare) {
            if (p->how & GS_CLI_LENIENT)
                continue;
            return fail(p, p->incomplete, a);
        }
        if (!inline_value && v)
            i++;
        if ((rc = set(p, opts, f, v)))
            return rc;
    }
    return 0;
}
