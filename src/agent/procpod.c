/* procpod.c - a process's pod UID and container ID from the text of /proc/PID/cgroup (see
 * procpod.h for the cgroup names the kubelet gives under each driver). The GPU sampler
 * (sampler.c) calls gs_procpod_read for the PIDs its GPU backend reports; the parser is also
 * a fuzz target (fuzz/fuzz_procpod.c). Everything is looked at in place: no copy of the input,
 * no allocation. */
#include "procpod.h"

#include "../base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool has_prefix(const char *s, size_t n, const char *p)
{
    size_t pn = strlen(p);
    return n >= pn && memcmp(s, p, pn) == 0;
}

static bool has_suffix(const char *s, size_t n, const char *p)
{
    size_t pn = strlen(p);
    return n >= pn && memcmp(s + n - pn, p, pn) == 0;
}

/* A pod UID spelt with sep between its groups ('-' under cgroupfs, '_' in systemd's slice
 * names): 8-4-4-4-12 hex digits, or 32 hex digits (a static pod's). Written with dashes to
 * out. */
static bool take_uid(const char *s, size_t n, char sep, char *out)
{
    if (n == 32) {
        for (size_t i = 0; i < n; i++)
            if (!is_hex(s[i]))
                return false;
    } else if (n == 36) {
        for (size_t i = 0; i < n; i++) {
            bool dash = i == 8 || i == 13 || i == 18 || i == 23;
            if (dash ? s[i] != sep : !is_hex(s[i]))
                return false;
        }
    } else {
        return false;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = s[i] == sep ? '-' : s[i];
    out[n] = '\0';
    return true;
}

/* A path segment naming a pod: "pod<uid>" (cgroupfs) or "<...kubepods...>-pod<uid>.slice"
 * (systemd). */
static bool pod_segment(const char *s, size_t n, char *uid)
{
    if (has_prefix(s, n, "pod"))
        return take_uid(s + 3, n - 3, '-', uid);
    if (!has_suffix(s, n, ".slice"))
        return false;
    size_t body = n - 6; /* without ".slice" */
    /* the last "-pod" in the name; what is before it is the kubepods slice's name */
    for (size_t i = body; i-- > 0;) {
        if (i + 4 > body || memcmp(s + i, "-pod", 4) != 0)
            continue;
        bool kubepods = false;
        for (size_t k = 0; k + 8 <= i && !kubepods; k++)
            kubepods = memcmp(s + k, "kubepods", 8) == 0;
        return kubepods && take_uid(s + i + 4, body - i - 4, '_', uid);
    }
    return false;
}

/* The container segment after the pod's: "<id>" (cgroupfs), "cri-containerd-<id>.scope",
 * "crio-<id>.scope", "docker-<id>.scope" (systemd; cri-o and docker under cgroupfs use the
 * prefix without ".scope"). Anything else leaves out empty. */
static void container_segment(const char *s, size_t n, char *out)
{
    static const char *const prefixes[] = {"cri-containerd-", "crio-", "docker-", NULL};
    out[0] = '\0';
    if (has_suffix(s, n, ".scope"))
        n -= 6;
    for (int k = 0; prefixes[k]; k++)
        if (has_prefix(s, n, prefixes[k])) {
            size_t pn = strlen(prefixes[k]);
            s += pn;
            n -= pn;
            break;
        }
    if (n == 0 || n > 64)
        return;
    for (size_t i = 0; i < n; i++)
        if (!is_hex(s[i]))
            return;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* One line's path (after "hierarchy:controllers:"), path[0..n). */
static bool parse_path(const char *path, size_t n, struct gs_procpod *out)
{
    bool pod = false;
    for (size_t i = 0; i < n;) {
        while (i < n && path[i] == '/')
            i++;
        size_t j = i;
        while (j < n && path[j] != '/')
            j++;
        if (j > i) {
            if (pod) {
                container_segment(path + i, j - i, out->container_id);
                return true;
            }
            pod = pod_segment(path + i, j - i, out->pod_uid);
        }
        i = j;
    }
    return pod; /* the pod's own cgroup: no container */
}

int gs_procpod_parse(const char *text, size_t len, struct gs_procpod *out)
{
    memset(out, 0, sizeof(*out));
    if (!text)
        return GS_ENOTFOUND;
    if (len > GS_PROCPOD_MAX_TEXT)
        len = GS_PROCPOD_MAX_TEXT;
    for (size_t at = 0; at < len;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
        if (!c2)
            continue; /* not "hierarchy:controllers:path" */
        const char *path = c2 + 1;
        if (parse_path(path, n - (size_t)(path - line), out))
            return 0;
        memset(out, 0, sizeof(*out));
    }
    return GS_ENOTFOUND;
}

int gs_procpod_read(const char *proc_root, uint32_t pid, struct gs_procpod *out)
{
    static const size_t cap = GS_PROCPOD_MAX_TEXT;
    memset(out, 0, sizeof(*out));
    char path[4200];
    int w = snprintf(path, sizeof(path), "%s/%u/cgroup", proc_root ? proc_root : "/proc", pid);
    if (w < 0 || (size_t)w >= sizeof(path))
        return GS_EIO;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return GS_EIO;
    char text[GS_PROCPOD_MAX_TEXT]; /* on the stack: the agent's loop calls this */
    size_t len = 0;
    while (len < cap) {
        ssize_t r = read(fd, text + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    return gs_procpod_parse(text, len, out);
}
