/* gs-probe.c - what a container was given, for the e2e tests' image gpusched.local/gpu-probe
 * (built by scripts/image.py, entrypoint /gs-probe). It prints every environment variable whose
 * name starts with NVIDIA_ or GPUSCHED_ as NAME=value, one a line, sorted by name, then the path
 * of every /dev/nvidia* it sees (and of the entries of such a directory, /dev/nvidia-caps/...),
 * sorted, flushes, and sleeps until SIGTERM or SIGINT (exit 0). The e2e tests read its log to
 * see what the device plugin's Allocate answer became inside the container. Linked static. */
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
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
        if (has_prefix(*e, "NVIDIA_") || has_prefix(*e, "GPUSCHED_"))
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
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("gs-probe: stdout");
        return 1;
    }
    while (!stop)
        sigsuspend(&wait_mask);
    return 0;
}
