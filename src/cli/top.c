/* top.c - `gpusched top`: the scheduler's dashboard in a terminal. Reads the running
 * scheduler's /ui/state (kube/httpget.h) and draws it (sched/uitext.h), again every interval,
 * or once. */
#include "cli.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../base/flag.h"
#include "../kube/httpget.h"
#include "../sched/uitext.h"

#include <jansson.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define STATE_MAX ((size_t)32 << 20)

static volatile int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    gs_flag_set(&stop_flag, 1);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gpusched top [--server URL] [--interval S] [--once] [--width N]\n"
               "\n"
               "The scheduler's dashboard in a terminal: every node's GPUs with their MIG\n"
               "slices and the pod holding each, the queues' used, deserved and borrowed\n"
               "shares, the pending pods with the scheduler's reasons, and the latest binds,\n"
               "preemptions and re-carvings. It reads the running scheduler's /ui/state (the\n"
               "page /ui draws the same in a browser) and draws it again every interval.\n"
               "\n"
               "  --server URL    the scheduler's HTTP address (--http-port);\n"
               "                  default http://127.0.0.1:10259\n"
               "  --interval S    seconds between frames, 0.2..3600; default 2\n"
               "  --once          print one frame (no screen control) and exit\n"
               "  --width N       columns, 40..1000; default the terminal's, or 120\n"
               "\n"
               "Colours only on a terminal. Exit status: 0 done (interrupted, or --once\n"
               "printed), 1 the server could not be read, 2 bad usage.\n");
}

/* Fetch and parse the state; err says why not. */
static json_t *fetch(const char *url, struct gs_buf *b, struct gs_error *err)
{
    if (gs_http_get(url, 10, STATE_MAX, b, NULL, err))
        return NULL;
    json_error_t je;
    json_t *st = json_loadb(b->data, b->len, 0, &je);
    if (!json_is_object(st) || !json_is_integer(json_object_get(st, "version"))) {
        if (st)
            gs_error_set(err, GS_EIO, "%s: not a gpusched /ui/state document", url);
        else
            gs_error_set(err, GS_EIO, "%s: invalid JSON: line %d: %s", url, je.line, je.text);
        json_decref(st);
        return NULL;
    }
    return st;
}

static int term_size(int *cols, int *rows)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0)
        return -1;
    *cols = ws.ws_col;
    *rows = ws.ws_row;
    return 0;
}

/* Write a frame over the last one: home, each line cleared to its end, at most rows - 1
 * lines, the rest of the screen cleared. */
static void draw(const char *text, int rows)
{
    fputs("\x1b[H", stdout);
    int line = 0;
    for (const char *p = text; *p && line < rows - 1; line++) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        fwrite(p, 1, n, stdout);
        fputs("\x1b[0m\x1b[K\n", stdout);
        p += n + (e ? 1 : 0);
    }
    fputs("\x1b[J", stdout);
    fflush(stdout);
}

static void nap(double s)
{
    for (double t = 0; t < s && !gs_flag_get(&stop_flag); t += 0.1) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

struct top_cli {
    const char *server;
    double interval, width;
    bool once;
};

#define T struct top_cli
static const struct gs_cli_flag top_flags[] = {
    GS_CLI_STR("--server", T, server, "URL: the scheduler's HTTP address"),
    GS_CLI_NUM("--interval", T, interval, 0.2, 3600, "S: seconds between frames"),
    GS_CLI_SET("--once", T, once, "print one frame and exit"),
    GS_CLI_NUM("--width", T, width, 40, 1000, "N: columns"),
    {0},
};
#undef T

static const struct gs_cli_parser top_parser = {
    .prog = "gpusched top",
    .flags = top_flags,
    .unknown = "unknown argument",
    .incomplete = "missing value for",
    .usage = usage,
};

int gs_cli_top(int argc, char **argv)
{
    if (gs_cli_wants_help(argc, argv)) {
        usage(stdout);
        return GS_EXIT_OK;
    }
    struct top_cli c = {.server = "http://127.0.0.1:10259", .interval = 2};
    int rc = gs_cli_parse(&top_parser, &c, argc, argv);
    if (rc)
        return rc;
    const char *server = c.server;
    double interval = c.interval, width = c.width;
    bool once = c.once;
    if (strncmp(server, "http://", 7) != 0 && strncmp(server, "https://", 8) != 0) {
        fprintf(stderr, "gpusched top: --server '%s': expected an http:// or https:// URL\n",
                server);
        return GS_EXIT_USAGE;
    }
    char url[1100];
    size_t sl = strlen(server);
    if (sl > 1000) {
        fprintf(stderr, "gpusched top: --server: longer than 1000 characters\n");
        return GS_EXIT_USAGE;
    }
    snprintf(url, sizeof(url), "%.*s/ui/state", (int)(sl && server[sl - 1] == '/' ? sl - 1 : sl),
             server);
    bool tty = isatty(STDOUT_FILENO);
    int cols = 120, rows = 50;
    if (tty)
        term_size(&cols, &rows);
    struct gs_uitext_opts o = {
        .width = width > 0 ? (int)width : cols, .color = tty, .source = server};
    struct gs_buf body, frame;
    gs_buf_init(&body, 0);
    gs_buf_init(&frame, 0);
    struct gs_error err;
    gs_error_init(&err);
    int ret = GS_EXIT_FAILURE;
    json_t *st = fetch(url, &body, &err);
    if (!st) {
        fprintf(stderr, "gpusched top: cannot read the scheduler's state: %s\n", err.msg);
        goto out;
    }
    if (once || !tty) {
        /* one frame, or frames one after the other into a pipe or file */
        for (;;) {
            gs_buf_reset(&frame);
            if (gs_uitext_render(st, &o, &frame)) {
                fprintf(stderr, "gpusched top: out of memory\n");
                goto out;
            }
            fwrite(frame.data, 1, frame.len, stdout);
            fflush(stdout);
            if (once)
                break;
            nap(interval);
            if (gs_flag_get(&stop_flag))
                break;
            json_t *next = fetch(url, &body, &err);
            if (!next) {
                fprintf(stderr, "gpusched top: %s\n", err.msg);
                continue;
            }
            json_decref(st);
            st = next;
            fputs("\n", stdout);
        }
        ret = GS_EXIT_OK;
        goto out;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    fputs("\x1b[?1049h\x1b[?25l", stdout); /* the alternate screen, no cursor */
    char lost[GS_ERROR_MSG_MAX + 64] = "";
    while (!gs_flag_get(&stop_flag)) {
        if (term_size(&cols, &rows) == 0 && width <= 0)
            o.width = cols;
        gs_buf_reset(&frame);
        if (lost[0])
            gs_buf_printf(&frame, "\x1b[1;31m%.*s\x1b[0m\n", o.width, lost);
        if (gs_uitext_render(st, &o, &frame))
            break;
        draw(frame.data, rows);
        nap(interval);
        json_t *next = fetch(url, &body, &err);
        if (!next) {
            snprintf(lost, sizeof(lost), "connection lost (showing the last state): %s", err.msg);
            continue;
        }
        lost[0] = '\0';
        json_decref(st);
        st = next;
    }
    fputs("\x1b[?25h\x1b[?1049l", stdout);
    fflush(stdout);
    ret = GS_EXIT_OK;
out:
    json_decref(st);
    gs_buf_release(&body);
    gs_buf_release(&frame);
    return ret;
}
