/* gs-probe.c - what a container was given, for the e2e tests' image gpusched.local/gpu-probe
 * (built by scripts/image.py, entrypoint /gs-probe). It prints every environment variable whose
 * name starts with NVIDIA_, CUDA_MPS_ or GPUSCHED_ as NAME=value, one a line, sorted by name,
 * then the path of every /dev/nvidia* it sees (and of the entries of such a directory,
 * /dev/nvidia-caps/...), sorted, flushes, and sleeps until SIGTERM or SIGINT (exit 0). The e2e
 * tests read its log to see what the device plugin's Allocate answer became inside the
 * container. An MPS client (CUDA_MPS_PIPE_DIRECTORY set) prints two more kinds of lines: each
 * entry of that folder as "mps-pipe: NAME TYPE INODE" (TYPE socket, file, dir or other;
 * sorted), and what the control daemon behind the folder's "control" socket answers (in the
 * protocol of our fake nvidia-cuda-mps-control, tests/fake) to
 * get_default_active_thread_percentage and get_default_device_pinned_mem_limit 0, as
 * "mps-control: COMMAND: ANSWER", or "mps-control: COMMAND: error: WHY" when none answers
 * within 2 s.
 * With --serve PORT it plays an inference server's metrics meanwhile: GET /metrics answers
 * request_latency_ms (a gauge, Prometheus text), and GET /set?request_latency_ms=V sets it
 * (the e2e HPA test raises and lowers an application's latency that way). Linked static. */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

#define MAX_LINES 4096
#define MAX_PATH  512

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    stop = 1;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Orders NAME=value strings by NAME (so NVIDIA_X sorts before NVIDIA_X1 whatever the values). */
static int by_name(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t nx = strcspn(x, "="), ny = strcspn(y, "=");
    int c = memcmp(x, y, nx < ny ? nx : ny);
    if (c != 0)
        return c;
    return nx < ny ? -1 : nx > ny;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends the path DIR/NAME of every entry of DIR whose name starts with PREFIX to paths (at
 * most MAX_LINES, heap copies); recurses once into those that are directories. Returns the new
 * count; a directory that cannot be read adds nothing. */
static size_t list_dir(const char *dir, const char *prefix, bool recurse, char **paths, size_t n)
{
    DIR *d = opendir(dir);
    if (!d)
        return n;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < MAX_LINES) {
        if (!has_prefix(e->d_name, prefix) || strcmp(e->d_name, ".") == 0 ||
            strcmp(e->d_name, "..") == 0)
            continue;
        char path[MAX_PATH];
        int len = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (len < 0 || (size_t)len >= sizeof(path))
            continue;
        char *copy = strdup(path);
        if (!copy)
            break;
        paths[n++] = copy;
        if (recurse && e->d_type == DT_DIR)
            n = list_dir(path, "", false, paths, n);
    }
    closedir(d);
    return n;
}

/* The entries of an MPS client's pipe folder, "mps-pipe: NAME TYPE INODE", sorted. */
static void print_pipe(const char *dir)
{
    static char *names[MAX_LINES];
    size_t n = list_dir(dir, "", false, names, 0);
    qsort(names, n, sizeof(names[0]), by_string);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        const char *type = "other";
        unsigned long long ino = 0;
        if (lstat(names[i], &st) == 0) {
            type = S_ISSOCK(st.st_mode)  ? "socket"
                   : S_ISREG(st.st_mode) ? "file"
                   : S_ISDIR(st.st_mode) ? "dir"
                                         : "other";
            ino = (unsigned long long)st.st_ino;
        }
        printf("mps-pipe: %s %s %llu\n", strrchr(names[i], '/') + 1, type, ino);
        free(names[i]);
    }
}

/* Asks the control daemon of pipe folder dir one command; prints "mps-control: CMD: ANSWER". */
static void ask_control(const char *dir, const char *cmd)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char answer[256] = "";
    const char *why = NULL;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct timeval tv = {.tv_sec = 2};
    if (snprintf(a.sun_path, sizeof(a.sun_path), "%s/control", dir) >= (int)sizeof(a.sun_path))
        why = "the path is too long";
    else if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
             connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        why = strerror(errno);
    if (!why) {
        char line[128];
        int len = snprintf(line, sizeof(line), "%s\n", cmd);
        size_t got = 0;
        ssize_t r = 0;
        if (write(fd, line, (size_t)len) != len || shutdown(fd, SHUT_WR) != 0)
            why = strerror(errno);
        while (!why && got < sizeof(answer) - 1 &&
               (r = read(fd, answer + got, sizeof(answer) - 1 - got)) > 0)
            got += (size_t)r;
        answer[got] = '\0';
        answer[strcspn(answer, "\n")] = '\0';
        if (!why && r < 0)
            why = "no answer";
    }
    if (fd >= 0)
        close(fd);
    if (why)
        printf("mps-control: %s: error: %s\n", cmd, why);
    else
        printf("mps-control: %s: %s\n", cmd, answer);
}

/* One HTTP request on fd: the request line decides, the rest is ignored. */
static void answer(int fd, double *latency_ms)
{
    char req[4096];
    ssize_t got = read(fd, req, sizeof(req) - 1);
    if (got <= 0)
        return;
    req[got] = '\0';
    char body[256];
    const char *status = "200 OK";
    const char *set = "GET /set?request_latency_ms=";
    if (strncmp(req, "GET /metrics", 12) == 0) {
        snprintf(body, sizeof(body),
                 "# HELP request_latency_ms Mean request latency, milliseconds.\n"
                 "# TYPE request_latency_ms gauge\nrequest_latency_ms %g\n",
                 *latency_ms);
    } else if (strncmp(req, set, strlen(set)) == 0) {
        char *end;
        double v = strtod(req + strlen(set), &end);
        if (end == req + strlen(set) || v < 0) {
            status = "400 Bad Request";
            snprintf(body, sizeof(body), "request_latency_ms: want a number >= 0\n");
        } else {
            *latency_ms = v;
            snprintf(body, sizeof(body), "request_latency_ms %g\n", v);
        }
    } else {
        status = "404 Not Found";
        snprintf(body, sizeof(body), "GET /metrics or /set?request_latency_ms=V\n");
    }
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %s\r\nContent-Type: text/plain; version=0.0.4\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, strlen(body));
    if (n > 0 && write(fd, head, (size_t)n) == n)
        (void)!write(fd, body, strlen(body));
}

/* Serves port until SIGTERM or SIGINT (unblocked only while waiting). Returns 0 or 1. */
static int serve(int port, const sigset_t *wait_mask)
{
    int ls = socket(AF_INET6, SOCK_STREAM, 0);
    int one = 1, zero = 0;
    struct sockaddr_in6 a = {
        .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = IN6ADDR_ANY_INIT};
    if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) != 0 ||
        bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 16) != 0) {
        perror("gs-probe: --serve");
        return 1;
    }
    double latency_ms = 0;
    while (!stop) {
        struct pollfd p = {.fd = ls, .events = POLLIN};
        if (ppoll(&p, 1, NULL, wait_mask) <= 0)
            continue;
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue;
        struct timeval tv = {.tv_sec = 2};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        answer(fd, &latency_ms);
        close(fd);
    }
    close(ls);
    return 0;
}

int main(int argc, char **argv)
{
    long port = 0;
    if (argc == 3 && strcmp(argv[1], "--serve") == 0) {
        char *end;
        port = strtol(argv[2], &end, 10);
        if (*end || port < 1 || port > 65535) {
            fprintf(stderr, "gs-probe: --serve PORT: want a port 1..65535, got '%s'\n", argv[2]);
            return 2;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: gs-probe [--serve PORT]\n");
        return 2;
    }
    sigset_t block, wait_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    if (sigprocmask(SIG_BLOCK, &block, &wait_mask) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
        sigaction(SIGINT, &sa, NULL) != 0) {
        perror("gs-probe: signals");
        return 1;
    }
    sigdelset(&wait_mask, SIGTERM);
    sigdelset(&wait_mask, SIGINT);

    static char *lines[MAX_LINES];
    size_t n = 0;
    for (char **e = environ; *e && n < MAX_LINES; e++)
        if (has_prefix(*e, "NVIDIA_") || has_prefix(*e, "CUDA_MPS_") || has_prefix(*e, "GPUSCHED_"))
            lines[n++] = *e;
    qsort(lines, n, sizeof(lines[0]), by_name);
    for (size_t i = 0; i < n; i++)
        printf("%s\n", lines[i]);

    static char *paths[MAX_LINES];
    size_t np = list_dir("/dev", "nvidia", true, paths, 0);
    qsort(paths, np, sizeof(paths[0]), by_string);
    for (size_t i = 0; i < np; i++) {
        printf("%s\n", paths[i]);
        free(paths[i]);
    }
    const char *pipe_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    if (pipe_dir) {
        print_pipe(pipe_dir);
        ask_control(pipe_dir, "get_default_active_thread_percentage");
        ask_control(pipe_dir, "get_default_device_pinned_mem_limit 0");
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("gs-probe: stdout");
        return 1;
    }
    if (port)
        return serve((int)port, &wait_mask);
    while (!stop)
        sigsuspend(&wait_mask);
    return 0;
}
