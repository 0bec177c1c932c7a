/* agent/mps: the MPS control daemons against our fake nvidia-cuda-mps-control (tests/fake):
 * one daemon per GPU with its folders, CUDA_VISIBLE_DEVICES and defaults; a daemon that dies,
 * hangs or cannot start is down (never live) and started again after its backoff; the daemons
 * are asked to quit at the end; MPS needs Volta or newer. Every wait is on a condition, bounded
 * by a deadline. */
#include "agent/mps.h"

#include "base/clock.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[128], state[160];

static void setup(void)
{
    snprintf(root, sizeof(root), "/tmp/gs-test-mps.XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    snprintf(state, sizeof(state), "%s/state", root);
    setenv("GS_FAKE_MPS_STATE", state, 1);
}

static void say(const char *what)
{
    FILE *f = fopen(state, "w");
    cr_assert_not_null(f);
    fputs(what, f);
    fclose(f);
}

static struct gs_mps *component(void)
{
    struct gs_mps_opts o = {.control = GS_FAKE_MPS_CONTROL,
                            .root = root,
                            .timeout_s = 1,
                            .backoff_s = 0.1,
                            .backoff_max_s = 0.4};
    struct gs_mps *m = NULL;
    cr_assert_eq(gs_mps_new(&o, &m, NULL), 0);
    return m;
}

static const struct gs_mps_want two[2] = {
    {.gpu = 0, .uuid = "GPU-aaaa0000", .thread_pct = 25, .mem_mib = 20480},
    {.gpu = 1, .uuid = "GPU-bbbb1111", .thread_pct = 25, .mem_mib = 20480},
};

/* Rounds until GPU gpu's daemon is live (want) or not, for at most 10 s. */
static bool until_live(struct gs_mps *m, int gpu, bool want)
{
    char pipe[256], shm[256];
    double deadline = gs_clock_wall() + 10;
    while (gs_clock_wall() < deadline) {
        gs_mps_round(m);
        if ((gs_mps_live(m, gpu, pipe, shm, sizeof(pipe)) == 0) == want)
            return true;
        nanosleep(&(struct timespec){0, 20000000L}, NULL);
    }
    return false;
}

static pid_t pid_of(const char *uuid)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/%s/pipe/nvidia-cuda-mps-control.pid", root, uuid);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

/* Whether process pid is gone (or a zombie), waiting up to 5 s. */
static bool gone(pid_t pid)
{
    double deadline = gs_clock_wall() + 5;
    for (;;) {
        char path[64], text[256] = "";
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        bool ok = f && fgets(text, sizeof(text), f);
        if (f)
            fclose(f);
        const char *c = ok ? strrchr(text, ')') : NULL;
        if (!ok || (c && c[2] == 'Z'))
            return true;
        if (gs_clock_wall() >= deadline)
            return false;
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
    }
}

static bool log_says(const char *uuid, const char *text)
{
    char path[400], line[512];
    snprintf(path, sizeof(path), "%s/%s/log/control.log", root, uuid);
    FILE *f = fopen(path, "r");
    bool found = false;
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return found;
}

Test(mps, each_gpu_gets_a_daemon_with_its_folders_and_defaults, .init = setup)
{
    struct gs_mps *m = component();
    gs_mps_set(m, two, 2);
    char pipe[256], shm[256];
    cr_expect_neq(gs_mps_live(m, 0, pipe, shm, sizeof(pipe)), 0, "live before any round");
    cr_assert(gs_mps_round(m), "the first round started nothing");
    cr_assert_eq(gs_mps_running(m), 2);
    cr_assert_eq(gs_mps_live(m, 1, pipe, shm, sizeof(pipe)), 0);
    char want[400];
    snprintf(want, sizeof(want), "%s/GPU-bbbb1111/pipe", root);
    cr_expect_str_eq(pipe, want);
    snprintf(want, sizeof(want), "%s/shm", root);
    cr_expect_str_eq(shm, want);
    cr_expect(log_says("GPU-bbbb1111", "started: CUDA_VISIBLE_DEVICES=GPU-bbbb1111"));
    cr_expect(log_says("GPU-bbbb1111", "command: set_default_active_thread_percentage 25"));
    cr_expect(log_says("GPU-bbbb1111", "command: set_default_device_pinned_mem_limit 0 20480M"));
    cr_expect(!gs_mps_round(m), "a round of healthy daemons changed something");
    pid_t p0 = pid_of("GPU-aaaa0000");
    cr_assert_gt(p0, 0);
    gs_mps_free(m);
    cr_expect(gone(p0), "daemon %d still runs after free", (int)p0);
}

Test(mps, a_daemon_that_dies_is_not_live_and_starts_again, .init = setup)
{
    struct gs_mps *m = component();
    gs_mps_set(m, two, 2);
    cr_assert(until_live(m, 0, true));
    pid_t p0 = pid_of("GPU-aaaa0000");
    cr_assert_eq(kill(p0, SIGKILL), 0);
    /* not live at once, before any round: no container gets its pipe */
    char pipe[256], shm[256];
    double deadline = gs_clock_wall() + 5;
    while (gs_mps_live(m, 0, pipe, shm, sizeof(pipe)) == 0 && gs_clock_wall() < deadline)
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
    cr_expect_neq(gs_mps_live(m, 0, pipe, shm, sizeof(pipe)), 0);
    cr_assert(until_live(m, 0, true), "not started again");
    cr_expect_neq(pid_of("GPU-aaaa0000"), p0);
    cr_expect_eq(gs_mps_live(m, 1, pipe, shm, sizeof(pipe)), 0, "GPU 1's daemon was disturbed");
    gs_mps_free(m);
}

Test(mps, a_daemon_that_hangs_is_killed_and_started_again_once_it_answers, .init = setup)
{
    struct gs_mps *m = component();
    gs_mps_set(m, two, 1);
    cr_assert(until_live(m, 0, true));
    pid_t p0 = pid_of("GPU-aaaa0000");
    say("hang GPU-aaaa0000\n");
    cr_assert(until_live(m, 0, false), "a hung daemon stays live");
    cr_expect(gone(p0), "the hung daemon %d was not killed", (int)p0);
    say("\n");
    cr_assert(until_live(m, 0, true), "not started again once the fake answers");
    gs_mps_free(m);
}

Test(mps, a_daemon_that_cannot_start_is_down_and_retried, .init = setup)
{
    struct gs_mps *m = component();
    say("nostart\n");
    gs_mps_set(m, two, 1);
    cr_expect(!gs_mps_round(m));
    char pipe[256], shm[256];
    cr_expect_neq(gs_mps_live(m, 0, pipe, shm, sizeof(pipe)), 0);
    cr_expect_eq(gs_mps_running(m), 0);
    say("\n");
    cr_assert(until_live(m, 0, true), "not retried");
    gs_mps_free(m);
}

Test(mps, a_missing_control_program_is_down_not_fatal, .init = setup)
{
    struct gs_mps_opts o = {.control = "/nonexistent/nvidia-cuda-mps-control", .root = root};
    struct gs_mps *m = NULL;
    cr_assert_eq(gs_mps_new(&o, &m, NULL), 0);
    gs_mps_set(m, two, 2);
    gs_mps_round(m);
    cr_expect_eq(gs_mps_running(m), 0);
    gs_mps_free(m);
}

Test(mps, mps_needs_volta_or_newer)
{
    struct gs_gpu_info p100 = {.index = 3, .uuid = "GPU-p100", .name = "Tesla P100-PCIE-16GB"};
    p100.cc_major = 6;
    char why[400];
    cr_expect(!gs_mps_supported(&p100, why, sizeof(why)));
    cr_expect(strstr(why, "GPU 3 (Tesla P100-PCIE-16GB, GPU-p100) has compute capability 6.0: "
                          "MPS needs Volta or newer (compute capability 7.0)") != NULL,
              "%s", why);
    struct gs_gpu_info v100 = {.cc_major = 7}, unknown = {.cc_major = 0};
    cr_expect(gs_mps_supported(&v100, NULL, 0));
    cr_expect(gs_mps_supported(&unknown, NULL, 0));
    cr_expect_eq(gs_gpu_compute_capability(gs_catalog_find("P100")), 60);
    cr_expect_eq(gs_gpu_compute_capability(gs_catalog_find("V100M16")), 70);
    cr_expect_eq(gs_gpu_compute_capability(gs_catalog_find("H100-80GB")), 90);
}
