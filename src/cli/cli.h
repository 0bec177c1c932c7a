/* cli.h - subcommand entry points of the gpusched binary (one file each in src/cli, called
 * by main.c) and the helpers they share (cli.c). Each entry point returns the process exit
 * code: 0 ok, 1 runtime failure, 2 bad input. Flags are parsed here; all logic lives in
 * the library. The helpers print to stderr and are not thread-safe (strtod's errno).
 *
 * Flags and subcommands are tables. A command's flags are rows of struct gs_cli_flag (name,
 * how the value is read, where it goes in the command's options struct, help), made with the
 * GS_CLI_* macros below, which check at compile time that the field has the kind's type; a
 * struct gs_cli_parser says how the command words its errors; gs_cli_parse reads argv
 * against it. Usage texts stay hand-written; tests/cli/usage.sh checks that every flag of a
 * table appears in its command's --help. Subcommands are rows of struct gs_cli_command. */
#ifndef GS_CLI_H
#define GS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* true when arg is -h or --help */
bool gs_cli_is_help(const char *arg);
/* true when argv has -h or --help */
bool gs_cli_wants_help(int argc, char **argv);
/* A number flag in lo..hi; on bad input prints "gpusched: FLAG 'V': expected a number in
 * LO..HI" and returns GS_EXIT_USAGE, else 0. */
int gs_cli_number(const char *flag, const char *v, double lo, double hi, double *out);
/* Decimal digits only, at most 19 of them: 0 or GS_EINVAL. Prints nothing. */
int gs_cli_u64(const char *s, uint64_t *out);
/* The daemons' stop flag: SIGINT and SIGTERM set it (from now on), SIGPIPE is ignored. */
volatile int *gs_cli_stop_on_signals(void);
/* exit code for an error code (GS_EINVAL & co -> 2, others -> 1) */
int gs_cli_exit_code(int rc);
/* Exit code for an error reading an input file the user named (a scenario, a trace, a config,
 * a manifest): one rule for every command. A missing, unreadable or oversized file is bad input
 * like a malformed one: 2; only running out of memory or a broken invariant is 1. */
int gs_cli_input_exit(int rc);

/* A subcommand: one row of a table that ends with a row whose name is NULL. */
struct gs_cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
};
/* The row named name, or NULL. */
const struct gs_cli_command *gs_cli_command_find(const struct gs_cli_command *cmds,
                                                 const char *name);
/* A command made of subcommands: how it dispatches and words an unknown one. */
struct gs_cli_commands {
    const char *prog; /* "gpusched mig" */
    const struct gs_cli_command *commands;
    void (*usage)(FILE *f); /* on --help (stdout) and without a subcommand (stderr) */
    const char *unknown;    /* "PROG: UNKNOWN 'WORD'SUFFIX" */
    const char *suffix;
    bool usage_on_unknown; /* usage(stderr) after that */
};
/* Usage with no argument (exit 2) or -h/--help anywhere (exit 0); else the subcommand
 * argv[0] with the arguments after it, or the unknown message (exit 2). */
int gs_cli_dispatch(const struct gs_cli_commands *d, int argc, char **argv);

/* How a flag's value is read and what its field is. Number kinds without an expect text
 * complain as gs_cli_number does; the others as "PROG: NAME 'V': expected EXPECT". */
enum gs_cli_kind {
    GS_CLI_KSET,       /* bool; takes no value: present means true */
    GS_CLI_KSTR,       /* const char *: the value */
    GS_CLI_KTRUEFALSE, /* bool: true or false */
    GS_CLI_KCHOICE,    /* const char *: one of choices ("table|json") */
    GS_CLI_KDOUBLE,    /* gs_cli_number in lo..hi into a double */
    GS_CLI_KINT,       /* ... truncated to an int */
    GS_CLI_KU32,       /* ... to a uint32_t */
    GS_CLI_KU64,       /* ... to a uint64_t */
    GS_CLI_KI64,       /* ... to an int64_t */
    GS_CLI_KREAL,      /* double: a whole finite number in lo..hi */
    GS_CLI_KUINT,      /* uint64_t: gs_cli_u64, at most hi */
    GS_CLI_KDURATION,  /* double: seconds (gs_parse_duration: 30s, 10m) in lo..hi */
    GS_CLI_KFUNC,      /* parse(flag, value, field) */
};

struct gs_cli_flag {
    const char *name; /* "--kubeconfig"; NULL ends a table */
    enum gs_cli_kind kind;
    size_t off; /* of the field in the options struct */
    double lo, hi;
    const char *choices; /* GS_CLI_KCHOICE: "a|b|c" */
    const char *expect;  /* what a bad value should have been, for the message */
    /* GS_CLI_KFUNC: 0, or non-zero for a bad value (then the expect message when expect is
     * set, else the function has printed why and returns the exit code) */
    int (*parse)(const struct gs_cli_flag *f, const char *v, void *field);
    bool bare;        /* GS_CLI_KFUNC: called with v NULL when the value is missing */
    const char *help; /* the value and what it does */
};

/* The rows. T is the options struct type, fld its field (nested fields too: o.policy). */
#define GS_CLI_AT(T, fld, ctype) _Generic(((T *)0)->fld, ctype : offsetof(T, fld))
#define GS_CLI_SET(n, T, fld, h)                                                                   \
    {                                                                                              \
        .name = (n), .kind = GS_CLI_KSET, .off = GS_CLI_AT(T, fld, bool), .help = (h)              \
    }
#define GS_CLI_STR(n, T, fld, h)                                                                   \
    {                                                                                              \
        .name = (n), .kind = GS_CLI_KSTR, .off = GS_CLI_AT(T, fld, const char *), .help = (h)      \
    }
#define GS_CLI_TRUEFALSE(n, T, fld, h)                                                             \
    {                                                                                              \
        .name = (n), .kind = GS_CLI_KTRUEFALSE, .off = GS_CLI_AT(T, fld, bool),                    \
        .expect = "true or false", .help = (h)                                                     \
    }
#define GS_CLI_CHOICE(n, T, fld, ch, exp, h)                                                       \
    {                                                                                              \
        .name = (n), .kind = GS_CLI_KCHOICE, .off = GS_CLI_AT(T, fld, const char *),               \
        .choices = (ch), .expect = (exp), .help = (h)                                              \
    }
/* gs_cli_number into a double, int, uint32_t, uint64_t or int64_t field */
#define GS_CLI_NUM(n, T, fld, l, u, h)                                                             \
    {                                                                                              \
        .name = (n),                                                                               \
        .kind = _Generic(((T *)0)->fld, double                                                     \
                         : GS_CLI_KDOUBLE, int                                                     \
                         : GS_CLI_KINT, uint32_t                                                   \
                         : GS_CLI_KU32, uint64_t                                                   \
                         : GS_CLI_KU64, int64_t                                                    \
                         : GS_CLI_KI64),                                                           \
        .off = offsetof(T, fld), .lo = (l), .hi = (u), .help = (h)                                 \
    }
#define GS_CLI_REAL(n, T, fld, l, u, exp, h)                                                       \
    {                                                                                              \
        .name = (n), .kind = GS_CLI_KREAL, .off = GS_CLI_AT(T, fld, double), .lo = (l), .hi = (u), \
        .expect = (exp), .help = (h)                                                               \
    }
#define GS_CLI_UINT(n, T, fld, u, exp, h)                                                          \
    {                                                                                              \
        .name = (n), .kind = GS_CLI_KUINT, .off = GS_CLI_AT(T, fld, uint64_t), .hi = (u),          \
        .expect = (exp), .help = (h)                                                               \
    }
#define GS_CLI_DURATION(n, T, fld, l, u, exp, h)                                                   \
    {                                                                                              \
        .name = (n), .kind = GS_CLI_KDURATION, .off = GS_CLI_AT(T, fld, double), .lo = (l),        \
        .hi = (u), .expect = (exp), .help = (h)                                                    \
    }
/* fn gets the field at off (0: the whole options struct) */
#define GS_CLI_FN(n, o, fn, l, u, exp, h)                                                          \
    {                                                                                              \
        .name = (n), .kind = GS_CLI_KFUNC, .off = (o), .lo = (l), .hi = (u), .expect = (exp),      \
        .parse = (fn), .help = (h)                                                                 \
    }
#define GS_CLI_FN_BARE(n, o, fn, h)                                                                \
    {                                                                                              \
        .name = (n), .kind = GS_CLI_KFUNC, .off = (o), .parse = (fn), .bare = true, .help = (h)    \
    }

/* Returned by a parse function or a positional to end the parse there (an action such as
 * --version, or a command word after global flags); gs_cli_parse then returns it. */
#define GS_CLI_STOP (-2)

/* gs_cli_parse's ways (bits) */
enum {
    GS_CLI_INLINE = 1,          /* --flag=value too */
    GS_CLI_LAST_INCOMPLETE = 2, /* an unknown last argument gets the incomplete message */
    GS_CLI_LENIENT = 4,         /* skip unknown arguments and value flags without a value */
};

/* How a command reads its argv and words its errors: "PROG: UNKNOWN 'ARG'SUFFIX" for an
 * argument no row names, "PROG: INCOMPLETE 'ARG'SUFFIX" for a flag without its value, each
 * followed by usage(stderr) when set. */
struct gs_cli_parser {
    const char *prog; /* "gpusched sim openb" */
    const struct gs_cli_flag *flags;
    unsigned how;
    const char *unknown, *incomplete, *suffix;
    void (*usage)(FILE *f);
    /* an argument that does not start with '-': 0 taken, -1 not (then it is unknown),
     * GS_CLI_STOP, else the exit code (it has printed why) */
    int (*positional)(void *opts, const char *arg);
};

/* The row named name, or NULL. */
const struct gs_cli_flag *gs_cli_flag_find(const struct gs_cli_flag *flags, const char *name);
/* Reads argv[0..argc) into opts (the options struct the rows' offsets point into): 0, GS_CLI_STOP,
 * or the exit code once the first bad argument has been reported. Fields of flags not given keep
 * their values. */
int gs_cli_parse(const struct gs_cli_parser *p, void *opts, int argc, char **argv);

#endif
