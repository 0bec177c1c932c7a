/* procpod.h - which Kubernetes pod and container a process runs in, from its cgroup.
 *
 * The kubelet puts every container in a cgroup named after its pod's UID and the container's
 * ID, whichever cgroup driver it uses:
 *   cgroupfs: /kubepods/burstable/pod<uid>/<container-id>   (also /kubepods/pod<uid>/...)
 *   systemd:  /kubepods.slice/kubepods-burstable.slice/
 *             kubepods-burstable-pod<uid with '_' for '-'>.slice/cri-containerd-<id>.scope
 *             (docker-<id>.scope and crio-<id>.scope likewise)
 * and /proc/PID/cgroup lists it, one line per hierarchy ("12:memory:/kubepods/...") under
 * cgroup v1, one "0::/..." line under v2. Read from inside a cgroup namespace the path is
 * relative and may start with "/..", so no prefix is required: the segments are matched.
 * A pod UID is a UUID (8-4-4-4-12 hex) or, for a static pod, 32 hex digits (the kubelet's
 * hash of its manifest); a container ID is 1 to 64 hex digits after its runtime's prefix.
 *
 * The parser is pure and bounded (GS_PROCPOD_MAX_TEXT bytes looked at, lines and segments
 * of bounded length), and thread-safe. The agent maps the PIDs NVML reports to pods with it
 * (sampler.c); the PIDs are the host's, so the agent reads the host's /proc (hostPID). */
#ifndef GS_AGENT_PROCPOD_H
#define GS_AGENT_PROCPOD_H

#include <stddef.h>
#include <stdint.h>

#define GS_PROCPOD_MAX_TEXT 65536 /* bytes of a cgroup file looked at */
#define GS_PROCPOD_UID_SIZE 40    /* 36 characters and the NUL */
#define GS_PROCPOD_CID_SIZE 72    /* 64 hex digits and the NUL */

struct gs_procpod {
    char pod_uid[GS_PROCPOD_UID_SIZE];      /* with dashes, as metadata.uid says it */
    char container_id[GS_PROCPOD_CID_SIZE]; /* hex; "" when the process is in the pod's
                                               cgroup but no container's (conmon, a sandbox) */
};

/* Parse the text of /proc/PID/cgroup (text[0..len), not NUL-terminated; at most
 * GS_PROCPOD_MAX_TEXT bytes are looked at). The first line whose path names a pod wins.
 * Returns 0 and fills *out, or GS_ENOTFOUND when no line names a pod (out is then
 * zeroed). Never reads past len. */
int gs_procpod_parse(const char *text, size_t len, struct gs_procpod *out);

/* Read <proc_root>/<pid>/cgroup and parse it. Returns 0, GS_ENOTFOUND (the process is in no
 * pod), or GS_EIO (no such process any more, or the file cannot be read). */
int gs_procpod_read(const char *proc_root, uint32_t pid, struct gs_procpod *out);

#endif
