/* mps.c - the node agent's MPS control daemons (see mps.h): each GPU's daemon started with
 * posix_spawn, configured and checked through the control program's commands on its stdin
 * (each run bounded by the timeout, then killed), restarted after a doubling backoff. */
#include "mps.h"

#include "../base/clock.h"
#include "../base/error.h"
#include "../base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define OUT_MAX 4096 /* what one control command may print */

enum state { DOWN = 0, UP };

struct daemon {
    struct gs_mps_want w;
    bool wanted, configured;
    enum state st;
    pid_t pid;        /* from the pid file; 0: unknown */
    double next_try;  /* wall clock of the next start */
    double backoff_s; /* the wait after the next failure */
    double up_since;
    char pipe[320], log[320];
};

struct gs_mps {
    struct gs_mps_opts o;
    char control[256], root[256], shm[320];
    pthread_mutex_t mu; /* guards d[].st, d[].pid and d[].pipe for gs_mps_live */
    struct daemon d[GS_AGENT_MAX_GPUS];
};

bool gs_mps_supported(const struct gs_gpu_info *g, char *why, size_t why_size)
{
    if (g->cc_major == 0 || g->cc_major >= 7)
        return true;
    if (why)
        snprintf(why, why_size,
                 "GPU %d (%s, %s) has compute capability %u.%u: MPS needs Volta or newer "
                 "(compute capability 7.0); share it by time-slicing, or not at all",
                 g->index, g->name, g->uuid, g->cc_major, g->cc_minor);
    return false;
}

int gs_mps_new(const struct gs_mps_opts *o, struct gs_mps **out, struct gs_error *err)
{
    struct gs_mps *m = calloc(1, sizeof(*m));
    if (!m)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    m->o = *o;
    if (m->o.timeout_s <= 0)
        m->o.timeout_s = 5;
    if (m->o.backoff_s <= 0)
        m->o.backoff_s = 1;
    if (m->o.backoff_max_s <= 0)
        m->o.backoff_max_s = 60;
    snprintf(m->control, sizeof(m->control), "%s",
             o->control ? o->control : "nvidia-cuda-mps-control");
    snprintf(m->root, sizeof(m->root), "%s", o->root ? o->root : "/run/nvidia/mps");
    snprintf(m->shm, sizeof(m->shm), "%s/shm", m->root);
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
    return 0;
}

/* mkdir -p path (mode 0755). 0 or -1 with errno. */
static int mkdirs(const char *path)
{
    char p[400];
    snprintf(p, sizeof(p), "%s", path);
    for (char *c = p + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return -1;
        *c = '/';
    }
    return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* The environment of the control program for d: ours, with the daemon's three variables.
 * env (room for cap pointers) points into ours and into vars. Returns 0 or -1. */
static int daemon_env(const struct daemon *d, char **env, int cap, char (*vars)[400])
{
    static const char *const own[3] = {
        "CUDA_VISIBLE_DEVICES=", "CUDA_MPS_PIPE_DIRECTORY=", "CUDA_MPS_LOG_DIRECTORY="};
    snprintf(vars[0], 400, "%s%s", own[0], d->w.uuid);
    snprintf(vars[1], 400, "%s%s", own[1], d->pipe);
    snprintf(vars[2], 400, "%s%s", own[2], d->log);
    int n = 0;
    for (char **e = environ; e && *e; e++) {
        bool mine = false;
        for (int k = 0; k < 3 && !mine; k++)
            mine = strncmp(*e, own[k], strlen(own[k])) == 0;
        if (mine)
            continue;
        if (n >= cap - 4)
            return -1;
        env[n++] = *e;
    }
    for (int k = 0; k < 3; k++)
        env[n++] = vars[k];
    env[n] = NULL;
    return 0;
}

/* Kill and reap a child that outlived its time. */
static void reap_hard(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Whether pid is a live process (a zombie is not). */
static bool alive(pid_t pid)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
        return false;
    char path[64], text[256] = "";
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true; /* no /proc to say more */
    bool ok = fgets(text, sizeof(text), f) != NULL;
    fclose(f);
    const char *close_paren = ok ? strrchr(text, ')') : NULL;
    return !(close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z');
}

/* Wait for child pid until deadline: its exit status, or -2 (then killed). */
static int wait_child(pid_t pid, double deadline)
{
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        if (w < 0 || gs_clock_wall() >= deadline)
            break;
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
    }
    reap_hard(pid);
    return -2;
}

/* Read fd to its end into out (size bytes, NUL-terminated) until deadline: 0, or -2. */
static int read_all(int fd, char *out, size_t size, double deadline)
{
    size_t got = 0;
    out[0] = '\0';
    for (;;) {
        int left = (int)((deadline - gs_clock_wall()) * 1000);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, left) <= 0)
            return -2;
        char buf[512];
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r <= 0)
            break;
        size_t take = (size_t)r < size - 1 - got ? (size_t)r : size - 1 - got;
        memcpy(out + got, buf, take);
        got += take;
        out[got] = '\0';
    }
    return 0;
}

/* Run the control program for d: with "-d" (the daemon, its output to /dev/null: the daemon
 * keeps what it inherits), or as a client given input on stdin, its stdout read into out (size
 * bytes, NUL-terminated); all within the timeout. Returns its exit status (>= 0), -1 when it
 * could not run (errno), or -2 when it did not finish in time (killed). */
static int run_control(struct gs_mps *m, const struct daemon *d, const char *arg, const char *input,
                       char *out, size_t size)
{
    char *env[512], vars[3][400];
    int in[2] = {-1, -1}, outp[2] = {-1, -1};
    bool client = arg == NULL;
    out[0] = '\0';
    if (daemon_env(d, env, 512, vars) || pipe2(in, O_CLOEXEC) ||
        (client && pipe2(outp, O_CLOEXEC))) {
        for (int k = 0; k < 2; k++) {
            if (in[k] >= 0)
                close(in[k]);
            if (outp[k] >= 0)
                close(outp[k]);
        }
        errno = ENOMEM;
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    if (client)
        posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    else
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    char *argv[3] = {m->control, (char *)arg, NULL};
    pid_t pid;
    int rc = strchr(m->control, '/') ? posix_spawn(&pid, m->control, &fa, NULL, argv, env)
                                     : posix_spawnp(&pid, m->control, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    if (client)
        close(outp[1]);
    if (rc != 0) {
        close(in[1]);
        if (client)
            close(outp[0]);
        errno = rc;
        return -1;
    }
    /* the input is a few short lines: it fits the pipe's buffer */
    size_t len = input ? strlen(input) : 0;
    ssize_t wrote = len ? write(in[1], input, len) : 0;
    (void)wrote;
    close(in[1]);
    double deadline = gs_clock_wall() + m->o.timeout_s;
    if (client) {
        int r = read_all(outp[0], out, size, deadline);
        close(outp[0]);
        if (r) {
            reap_hard(pid);
            return -2;
        }
    }
    return wait_child(pid, deadline);
}

/* The daemon's PID from its pid file, when that process is alive (a zombie child of ours is
 * reaped first: an agent that is its container's PID 1 inherits it); else 0. */
static pid_t live_pid(const struct daemon *d)
{
    char path[400], text[32] = "";
    snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-control.pid", d->pipe);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    bool ok = fgets(text, sizeof(text), f) != NULL;
    fclose(f);
    char *end = NULL;
    long pid = ok ? strtol(text, &end, 10) : 0;
    if (pid <= 1 || pid > 4194304 || end == text)
        return 0;
    waitpid((pid_t)pid, NULL, WNOHANG);
    return alive((pid_t)pid) ? (pid_t)pid : 0;
}

/* The daemon answers its control commands: 0, or -1 with why. */
static int answers(struct gs_mps *m, const struct daemon *d, char *why, size_t why_size)
{
    char out[OUT_MAX];
    int rc = run_control(m, d, NULL, "get_default_active_thread_percentage\n", out, sizeof(out));
    char *end = NULL;
    double pct = rc == 0 ? strtod(out, &end) : -1;
    if (rc == 0 && end != out && pct > 0 && pct <= 100)
        return 0;
    if (rc == -2)
        snprintf(why, why_size, "it did not answer within %.0f s (it hangs)", m->o.timeout_s);
    else if (rc == -1)
        snprintf(why, why_size, "%s: %s", m->control, strerror(errno));
    else
        snprintf(why, why_size, "get_default_active_thread_percentage: exit %d, '%.80s'", rc, out);
    return -1;
}

/* Set the daemon's defaults. 0, or -1 with why. */
static int configure(struct gs_mps *m, struct daemon *d, char *why, size_t why_size)
{
    char in[256], out[OUT_MAX];
    int n = snprintf(in, sizeof(in), "set_default_active_thread_percentage %d\n", d->w.thread_pct);
    if (d->w.mem_mib > 0)
        snprintf(in + n, sizeof(in) - (size_t)n, "set_default_device_pinned_mem_limit 0 %lluM\n",
                 (unsigned long long)d->w.mem_mib);
    int rc = run_control(m, d, NULL, in, out, sizeof(out));
    if (rc == 0) {
        d->configured = true;
        return 0;
    }
    snprintf(why, why_size, "setting its defaults: %s",
             rc == -2   ? "no answer (it hangs)"
             : rc == -1 ? strerror(errno)
                        : out);
    return -1;
}

/* Start d's daemon (or adopt the one that runs) and configure it. 0, or -1 with why. */
static int start(struct gs_mps *m, struct daemon *d, char *why, size_t why_size)
{
    if (mkdirs(d->pipe) || mkdirs(d->log) || mkdirs(m->shm)) {
        snprintf(why, why_size, "%s: %s", d->pipe, strerror(errno));
        return -1;
    }
    d->configured = false;
    pid_t pid = live_pid(d);
    if (pid && answers(m, d, why, why_size) == 0) {
        GS_INFO("mps", "GPU %d (%s): the MPS control daemon %d runs already: kept", d->w.gpu,
                d->w.uuid, (int)pid);
    } else {
        if (pid)
            reap_hard(pid); /* alive but deaf: a new one takes its pipe */
        char out[OUT_MAX];
        int rc = run_control(m, d, "-d", NULL, out, sizeof(out));
        if (rc != 0) {
            snprintf(why, why_size, "%s -d: %s", m->control,
                     rc == -1   ? strerror(errno)
                     : rc == -2 ? "did not return"
                                : "failed");
            return -1;
        }
        /* -d returns once the daemon forked; it writes its pid file and opens its pipe */
        double deadline = gs_clock_wall() + m->o.timeout_s;
        while (!(pid = live_pid(d)) && gs_clock_wall() < deadline)
            nanosleep(&(struct timespec){0, 20000000L}, NULL);
        if (!pid || answers(m, d, why, why_size)) {
            if (!pid)
                snprintf(why, why_size, "no live daemon in %s after %.0f s", d->pipe,
                         m->o.timeout_s);
            else
                reap_hard(pid);
            return -1;
        }
    }
    if (configure(m, d, why, why_size))
        return -1;
    pthread_mutex_lock(&m->mu);
    d->pid = pid;
    d->st = UP;
    pthread_mutex_unlock(&m->mu);
    d->up_since = gs_clock_wall();
    return 0;
}

/* d is down (why): killed when alive, started again after its backoff. */
static void down(struct gs_mps *m, struct daemon *d, const char *why)
{
    pid_t pid = d->pid ? d->pid : live_pid(d);
    pthread_mutex_lock(&m->mu);
    bool was = d->st == UP;
    d->st = DOWN;
    d->pid = 0;
    pthread_mutex_unlock(&m->mu);
    if (pid && alive(pid))
        reap_hard(pid);
    double now = gs_clock_wall();
    d->next_try = now + d->backoff_s;
    GS_WARN("mps",
            "GPU %d (%s): MPS control daemon %s: %s; its devices are Unhealthy, started "
            "again in %.1f s",
            d->w.gpu, d->w.uuid, was ? "down" : "not started", why, d->backoff_s);
    d->backoff_s = d->backoff_s * 2 < m->o.backoff_max_s ? d->backoff_s * 2 : m->o.backoff_max_s;
}

/* Ask d's daemon to quit (killed when it does not within the timeout). */
static void stop(struct gs_mps *m, struct daemon *d)
{
    pid_t pid = d->pid ? d->pid : live_pid(d);
    pthread_mutex_lock(&m->mu);
    d->st = DOWN;
    d->pid = 0;
    pthread_mutex_unlock(&m->mu);
    if (!pid)
        return;
    char out[OUT_MAX];
    run_control(m, d, NULL, "quit\n", out, sizeof(out));
    double deadline = gs_clock_wall() + m->o.timeout_s;
    while (alive(pid) && gs_clock_wall() < deadline) {
        waitpid(pid, NULL, WNOHANG); /* ours when the agent is its container's PID 1 */
        nanosleep(&(struct timespec){0, 20000000L}, NULL);
    }
    if (alive(pid))
        reap_hard(pid);
    GS_INFO("mps", "GPU %d (%s): MPS control daemon stopped", d->w.gpu, d->w.uuid);
}

void gs_mps_set(struct gs_mps *m, const struct gs_mps_want *want, int n)
{
    bool keep[GS_AGENT_MAX_GPUS] = {false};
    for (int k = 0; k < n && k < GS_AGENT_MAX_GPUS; k++) {
        int g = want[k].gpu;
        if (g < 0 || g >= GS_AGENT_MAX_GPUS)
            continue;
        struct daemon *d = &m->d[g];
        keep[g] = true;
        if (d->wanted && strcmp(d->w.uuid, want[k].uuid) == 0) {
            if (d->w.thread_pct != want[k].thread_pct || d->w.mem_mib != want[k].mem_mib)
                d->configured = false; /* the next round sets the new defaults */
            d->w = want[k];
            continue;
        }
        if (d->wanted)
            stop(m, d);
        pthread_mutex_lock(&m->mu);
        d->w = want[k];
        d->wanted = true;
        d->configured = false;
        d->st = DOWN;
        d->next_try = 0;
        d->backoff_s = m->o.backoff_s;
        snprintf(d->pipe, sizeof(d->pipe), "%s/%s/pipe", m->root, want[k].uuid);
        snprintf(d->log, sizeof(d->log), "%s/%s/log", m->root, want[k].uuid);
        pthread_mutex_unlock(&m->mu);
    }
    for (int g = 0; g < GS_AGENT_MAX_GPUS; g++)
        if (m->d[g].wanted && !keep[g]) {
            stop(m, &m->d[g]);
            m->d[g].wanted = false;
        }
}

bool gs_mps_round(struct gs_mps *m)
{
    bool changed = false;
    double now = gs_clock_wall();
    for (int g = 0; g < GS_AGENT_MAX_GPUS; g++) {
        struct daemon *d = &m->d[g];
        char why[320] = "";
        if (!d->wanted)
            continue;
        if (d->st == DOWN) {
            if (now < d->next_try)
                continue;
            if (start(m, d, why, sizeof(why)) == 0) {
                GS_INFO("mps",
                        "GPU %d (%s): MPS control daemon %d runs (pipe %s, %d%% of the threads "
                        "and %llu MiB pinned per server by default)",
                        d->w.gpu, d->w.uuid, (int)d->pid, d->pipe, d->w.thread_pct,
                        (unsigned long long)d->w.mem_mib);
                changed = true;
            } else {
                down(m, d, why);
            }
            continue;
        }
        pid_t pid = live_pid(d);
        if (pid != d->pid) {
            down(m, d, pid ? "another process holds its pipe" : "it exited");
            changed = true;
        } else if (answers(m, d, why, sizeof(why)) ||
                   (!d->configured && configure(m, d, why, sizeof(why)))) {
            down(m, d, why);
            changed = true;
        } else if (now - d->up_since >= m->o.backoff_max_s) {
            d->backoff_s = m->o.backoff_s; /* up long enough: a later failure starts afresh */
        }
    }
    return changed;
}

int gs_mps_live(struct gs_mps *m, int gpu, char *pipe, char *shm, size_t size)
{
    if (!m || gpu < 0 || gpu >= GS_AGENT_MAX_GPUS)
        return -1;
    pthread_mutex_lock(&m->mu);
    const struct daemon *d = &m->d[gpu];
    pid_t pid = d->st == UP ? d->pid : 0;
    if (pid) {
        snprintf(pipe, size, "%s", d->pipe);
        snprintf(shm, size, "%s", m->shm);
    }
    pthread_mutex_unlock(&m->mu);
    /* a daemon that died since the last round is not live (never a dead pipe) */
    return pid && alive(pid) ? 0 : -1;
}

int gs_mps_running(struct gs_mps *m)
{
    int n = 0;
    pthread_mutex_lock(&m->mu);
    for (int g = 0; g < GS_AGENT_MAX_GPUS; g++)
        n += m->d[g].wanted && m->d[g].st == UP;
    pthread_mutex_unlock(&m->mu);
    return n;
}

void gs_mps_free(struct gs_mps *m)
{
    if (!m)
        return;
    for (int g = 0; g < GS_AGENT_MAX_GPUS; g++)
        if (m->d[g].wanted)
            stop(m, &m->d[g]);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
