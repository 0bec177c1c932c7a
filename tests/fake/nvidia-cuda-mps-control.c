/* nvidia-cuda-mps-control.c - a fake of NVIDIA's MPS control program, for the agent's tests
 * (not product code): no GPU is touched. It obeys the rules the agent relies on:
 *
 *   nvidia-cuda-mps-control -d   start the control daemon in the background: refused unless
 *                                CUDA_MPS_PIPE_DIRECTORY is an existing folder; the daemon
 *                                writes nvidia-cuda-mps-control.pid and its socket "control"
 *                                (mode 0666) there, logs to
 *                                CUDA_MPS_LOG_DIRECTORY/control.log (with the
 *                                CUDA_VISIBLE_DEVICES it was given) and serves until "quit";
 *                                -d returns once it serves
 *   nvidia-cuda-mps-control      a client: the commands on stdin go to the daemon of
 *                                CUDA_MPS_PIPE_DIRECTORY, its answers to stdout; exit 1 when no
 *                                daemon answers there
 *
 * Commands: set_default_active_thread_percentage N (1..100),
 * get_default_active_thread_percentage, set_default_device_pinned_mem_limit DEV VALUE (e.g. 0
 * 40960M), get_default_device_pinned_mem_limit DEV, get_server_list (none), quit; anything
 * else is answered "unknown command".
 *
 * GS_FAKE_MPS_STATE names a file the daemon reads before each command and every 100 ms: a
 * line "die" makes it exit at once (as a crash: its pid file and socket stay), "hang" makes
 * it stop answering (connections are accepted, never answered), "nostart" makes -d fail; a
 * line may name the GPU it is for after the word ("die GPU-1234"), matched as a prefix of
 * CUDA_VISIBLE_DEVICES. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *pipe_dir, *log_dir, *visible;
static double thread_pct = 100;
static char pinned[16][32];
static FILE *log_file;

/* The state file says `word` for this daemon's GPU. */
static bool state(const char *word)
{
    const char *path = getenv("GS_FAKE_MPS_STATE");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return false;
    char line[256];
    bool yes = false;
    while (!yes && fgets(line, sizeof(line), f)) {
        char w[32] = "", gpu[200] = "";
        if (sscanf(line, "%31s %199s", w, gpu) < 1 || strcmp(w, word) != 0)
            continue;
        yes = !gpu[0] || strncmp(visible, gpu, strlen(gpu)) == 0;
    }
    fclose(f);
    return yes;
}

static void socket_path(struct sockaddr_un *a)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    snprintf(a->sun_path, sizeof(a->sun_path), "%s/control", pipe_dir);
}

/* One command line of a client, answered into out. Returns false on quit. */
static bool command(char *line, FILE *out)
{
    char cmd[64] = "", a1[64] = "", a2[64] = "";
    int n = sscanf(line, "%63s %63s %63s", cmd, a1, a2);
    if (log_file) {
        fprintf(log_file, "command: %s\n", line);
        fflush(log_file);
    }
    if (n < 1)
        return true;
    if (strcmp(cmd, "set_default_active_thread_percentage") == 0 && n == 2) {
        double v = strtod(a1, NULL);
        if (v >= 1 && v <= 100)
            thread_pct = v;
        else
            fprintf(out, "invalid percentage\n");
    } else if (strcmp(cmd, "get_default_active_thread_percentage") == 0) {
        fprintf(out, "%.1f\n", thread_pct);
    } else if (strcmp(cmd, "set_default_device_pinned_mem_limit") == 0 && n == 3) {
        int dev = (int)strtol(a1, NULL, 10);
        if (dev >= 0 && dev < 16)
            snprintf(pinned[dev], sizeof(pinned[dev]), "%s", a2);
    } else if (strcmp(cmd, "get_default_device_pinned_mem_limit") == 0 && n == 2) {
        int dev = (int)strtol(a1, NULL, 10);
        fprintf(out, "%s\n", dev >= 0 && dev < 16 && pinned[dev][0] ? pinned[dev] : "0");
    } else if (strcmp(cmd, "get_server_list") == 0) {
        /* no server runs: no client has connected */
    } else if (strcmp(cmd, "quit") == 0) {
        return false;
    } else {
        fprintf(out, "unknown command\n");
    }
    return true;
}

static void hang(void)
{
    for (;;) {
        if (state("die"))
            _exit(1);
        nanosleep(&(struct timespec){0, 100000000L}, NULL);
    }
}

static int serve(int ls)
{
    for (;;) {
        struct pollfd p = {.fd = ls, .events = POLLIN};
        int r = poll(&p, 1, 100);
        if (state("die"))
            _exit(1); /* as a crash: the pid file and the socket stay */
        if (state("hang"))
            hang();
        if (r <= 0)
            continue;
        int c = accept(ls, NULL, NULL);
        if (c < 0)
            continue;
        FILE *in = fdopen(c, "r+");
        if (!in) {
            close(c);
            continue;
        }
        char line[512];
        bool go_on = true;
        while (go_on && fgets(line, sizeof(line), in)) {
            line[strcspn(line, "\n")] = '\0';
            if (state("hang"))
                hang();
            go_on = command(line, in);
            fflush(in);
        }
        fclose(in);
        if (!go_on) {
            char path[600];
            snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-control.pid", pipe_dir);
            unlink(path);
            snprintf(path, sizeof(path), "%s/control", pipe_dir);
            unlink(path);
            return 0;
        }
    }
}

static int daemon_start(void)
{
    struct stat st;
    if (!pipe_dir || stat(pipe_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "CUDA_MPS_PIPE_DIRECTORY '%s' is not a folder\n", pipe_dir ? pipe_dir : "");
        return 1;
    }
    if (state("nostart")) {
        fprintf(stderr, "An instance of this daemon is already running\n");
        return 1;
    }
    int ready[2];
    if (pipe(ready))
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid > 0) { /* -d: back once the daemon serves */
        close(ready[1]);
        char b;
        ssize_t r = read(ready[0], &b, 1);
        waitpid(pid, NULL, 0);
        return r == 1 ? 0 : 1;
    }
    close(ready[0]);
    setsid();
    if (fork() != 0)
        _exit(0);
    signal(SIGPIPE, SIG_IGN);
    char path[600];
    if (log_dir) {
        snprintf(path, sizeof(path), "%s/control.log", log_dir);
        log_file = fopen(path, "a");
    }
    if (log_file) {
        fprintf(log_file, "started: CUDA_VISIBLE_DEVICES=%s\n", visible);
        fflush(log_file);
    }
    struct sockaddr_un a;
    socket_path(&a);
    unlink(a.sun_path);
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    /* open to every user, as NVIDIA's: a client of any user connects (its server is then
     * started as that user) */
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || chmod(a.sun_path, 0666) ||
        listen(ls, 16))
        _exit(1);
    snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-control.pid", pipe_dir);
    FILE *pf = fopen(path, "w");
    if (!pf)
        _exit(1);
    fprintf(pf, "%d\n", (int)getpid());
    fclose(pf);
    int dn = open("/dev/null", O_RDWR);
    if (dn >= 0) {
        dup2(dn, 0);
        dup2(dn, 1);
        dup2(dn, 2);
    }
    ssize_t w = write(ready[1], "1", 1);
    (void)w;
    close(ready[1]);
    _exit(serve(ls));
}

static int client(void)
{
    struct sockaddr_un a;
    socket_path(&a);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
        fprintf(stderr, "Cannot find MPS control daemon process\n");
        return 1;
    }
    char buf[4096];
    ssize_t n;
    while ((n = read(0, buf, sizeof(buf))) > 0)
        if (write(s, buf, (size_t)n) != n)
            return 1;
    shutdown(s, SHUT_WR);
    while ((n = read(s, buf, sizeof(buf))) > 0)
        if (write(1, buf, (size_t)n) != n)
            return 1;
    close(s);
    return 0;
}

int main(int argc, char **argv)
{
    pipe_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    log_dir = getenv("CUDA_MPS_LOG_DIRECTORY");
    visible = getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "";
    if (!pipe_dir)
        pipe_dir = "/tmp/nvidia-mps";
    if (argc == 2 && strcmp(argv[1], "-d") == 0)
        return daemon_start();
    if (argc == 1)
        return client();
    fprintf(stderr, "usage: nvidia-cuda-mps-control [-d]\n");
    return 2;
}
