/* procpod: a process's pod UID and container ID from the text of /proc/PID/cgroup, under
 * cgroup v1 and v2, the kubelet's cgroupfs and systemd drivers, containerd, CRI-O and docker,
 * relative paths seen from inside a cgroup namespace, and static pods' hashed UIDs; what names
 * no pod is refused, and nothing is read past the length given. */
#include "agent/procpod.h"
#include "base/error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UID  "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
#define UIDU "0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0"
#define CID  "3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071829"

Test(procpod, the_kubelets_cgroup_names_give_pod_and_container)
{
    static const struct {
        const char *name, *text, *uid, *cid;
    } cases[] = {
        {"v2 cgroupfs, burstable", "0::/kubepods/burstable/pod" UID "/" CID "\n", UID, CID},
        {"v2 cgroupfs, guaranteed (no QoS level)", "0::/kubepods/pod" UID "/" CID "\n", UID, CID},
        {"v2 systemd, containerd",
         "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
         ".slice/cri-containerd-" CID ".scope\n",
         UID, CID},
        {"v2 systemd, guaranteed",
         "0::/kubepods.slice/kubepods-pod" UIDU ".slice/cri-containerd-" CID ".scope\n", UID, CID},
        {"v2 systemd, CRI-O",
         "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
         ".slice/crio-" CID ".scope\n",
         UID, CID},
        {"v2 systemd, docker",
         "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
         ".slice/docker-" CID ".scope\n",
         UID, CID},
        {"v2 systemd under a kubelet slice (kind)",
         "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
         "kubelet-kubepods-besteffort-pod" UIDU ".slice/cri-containerd-" CID ".scope\n",
         UID, CID},
        {"v2 seen from another cgroup namespace",
         "0::/../../kubepods-besteffort-pod" UIDU ".slice/cri-containerd-" CID ".scope\n", UID,
         CID},
        {"v2 a sub-cgroup inside the container",
         "0::/kubepods/burstable/pod" UID "/" CID "/init.scope\n", UID, CID},
        {"v1, one line per hierarchy",
         "12:memory:/kubepods/burstable/pod" UID "/" CID "\n"
         "11:cpu,cpuacct:/kubepods/burstable/pod" UID "/" CID "\n"
         "1:name=systemd:/kubepods/burstable/pod" UID "/" CID "\n",
         UID, CID},
        {"v1 hybrid: the unified line empty, a controller's names the pod",
         "0::/\n4:devices:/kubepods/besteffort/pod" UID "/crio-" CID "\n", UID, CID},
        {"a static pod's UID (32 hex digits)",
         "0::/kubepods/burstable/pod6c9a2b1e0d3f4a5b6c7d8e9f0a1b2c3d/" CID "\n",
         "6c9a2b1e0d3f4a5b6c7d8e9f0a1b2c3d", CID},
        {"the pod's own cgroup: no container", "0::/kubepods/burstable/pod" UID "\n", UID, ""},
        {"conmon beside the container: no container ID",
         "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
         ".slice/crio-conmon-" CID ".scope\n",
         UID, ""},
        {"no newline at the end", "0::/kubepods/pod" UID "/" CID, UID, CID},
        {"a short container ID", "0::/kubepods/pod" UID "/abc123\n", UID, "abc123"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gs_procpod pp;
        int rc = gs_procpod_parse(cases[i].text, strlen(cases[i].text), &pp);
        cr_assert_eq(rc, 0, "%s: refused (%d)", cases[i].name, rc);
        cr_assert_str_eq(pp.pod_uid, cases[i].uid, "%s: pod '%s', want '%s'", cases[i].name,
                         pp.pod_uid, cases[i].uid);
        cr_assert_str_eq(pp.container_id, cases[i].cid, "%s: container '%s', want '%s'",
                         cases[i].name, pp.container_id, cases[i].cid);
    }
}

Test(procpod, what_names_no_pod_is_refused)
{
    static const char *const cases[] = {
        "",
        "0::/\n",
        "0::/user.slice/user-1000.slice/session-3.scope\n",
        "0::/system.slice/containerd.service\n",
        /* not a UID: wrong length, a letter past f, dashes misplaced, systemd's '_' under
         * cgroupfs */
        "0::/kubepods/burstable/pod" UID "0/" CID "\n",
        "0::/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg/" CID "\n",
        "0::/kubepods/burstable/pod0f1e2d3c4-b5a-6978-8796-a5b4c3d2e1f0/" CID "\n",
        "0::/kubepods/burstable/pod" UIDU "/" CID "\n",
        /* a slice that is not the kubelet's, or without ".slice" */
        "0::/system.slice/foo-pod" UIDU ".slice/x.scope\n",
        "0::/kubepods.slice/kubepods-burstable-pod" UIDU "/x\n",
        /* no "hierarchy:controllers:" before the path */
        "/kubepods/pod" UID "/" CID "\n",
        "0:/kubepods/pod" UID "/" CID "\n",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gs_procpod pp;
        memset(&pp, 'x', sizeof(pp));
        cr_assert_eq(gs_procpod_parse(cases[i], strlen(cases[i]), &pp), GS_ENOTFOUND,
                     "case %zu accepted: '%s'", i, cases[i]);
        cr_assert_str_empty(pp.pod_uid, "case %zu: out not zeroed", i);
    }
    struct gs_procpod pp;
    cr_assert_eq(gs_procpod_parse(NULL, 0, &pp), GS_ENOTFOUND);
}

Test(procpod, nothing_past_the_length_is_read)
{
    /* the length cuts the UID short: a pod must not be found in the bytes after it */
    const char *text = "0::/kubepods/pod" UID "/" CID "\n";
    size_t cut = strlen("0::/kubepods/pod") + 20;
    char *copy = malloc(cut); /* exactly cut bytes: ASan reports any read past them */
    cr_assert_not_null(copy);
    memcpy(copy, text, cut);
    struct gs_procpod pp;
    cr_assert_eq(gs_procpod_parse(copy, cut, &pp), GS_ENOTFOUND);
    free(copy);
    /* a huge text is looked at up to GS_PROCPOD_MAX_TEXT only */
    size_t big = GS_PROCPOD_MAX_TEXT + 4096;
    char *junk = malloc(big);
    cr_assert_not_null(junk);
    memset(junk, '/', big);
    memcpy(junk, "0::", 3);
    const char *tail = "\n0::/kubepods/pod" UID "/" CID "\n";
    memcpy(junk + big - strlen(tail), tail, strlen(tail));
    cr_assert_eq(gs_procpod_parse(junk, big, &pp), GS_ENOTFOUND, "the line past the bound");
    free(junk);
}

Test(procpod, read_takes_the_file_under_the_proc_root)
{
    char root[64], dir[96], file[128];
    snprintf(root, sizeof(root), "/tmp/gs-procpod-%d", (int)getpid());
    snprintf(dir, sizeof(dir), "%s/4242", root);
    snprintf(file, sizeof(file), "%s/cgroup", dir);
    mkdir(root, 0755);
    mkdir(dir, 0755);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fputs("0::/kubepods/besteffort/pod" UID "/" CID "\n", f);
    fclose(f);
    struct gs_procpod pp;
    cr_assert_eq(gs_procpod_read(root, 4242, &pp), 0);
    cr_assert_str_eq(pp.pod_uid, UID);
    cr_assert_eq(gs_procpod_read(root, 4343, &pp), GS_EIO, "no such process");
    /* this very process is in no pod here (or, in a pod, in its own) */
    int rc = gs_procpod_read("/proc", (uint32_t)getpid(), &pp);
    cr_assert(rc == 0 || rc == GS_ENOTFOUND, "reading /proc/self's cgroup: %d", rc);
    unlink(file);
    rmdir(dir);
    rmdir(root);
}
