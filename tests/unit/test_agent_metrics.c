/* Node agent /metrics: a pod's gpu_utilization and memory used are its own. Two MIG pods on
 * one GPU read their instances' readings, not the GPU's; pods time-slicing one GPU read the
 * sum of their processes', which are matched to pods by PID through cgroup files under a
 * proc root; an A100's MIG instances measure no utilization, so their pods get no
 * utilization series (never a 0 that looks measured); a pod holding a GPU whole reads the
 * GPU's. The page is the one `agent run` serves (gs_agent_scrape, with the fake backend and a
 * pods file, as a kubelet would show them). */
#include "agent/agent.h"
#include "agent/gpu.h"
#include "base/buf.h"
#include "base/error.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static char dir[64], gpus_path[96], pods_path[96], proc_root[96];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gs-agent-metrics-%d", (int)getpid());
    snprintf(gpus_path, sizeof(gpus_path), "%s/gpus.json", dir);
    snprintf(pods_path, sizeof(pods_path), "%s/pods.json", dir);
    snprintf(proc_root, sizeof(proc_root), "%s/proc", dir);
    mkdir(dir, 0755);
    mkdir(proc_root, 0755);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A process PID in the cgroup the kubelet (systemd driver, containerd) gives a container of
 * pod uid; uid NULL: a process of the host, in no pod. */
static void process(unsigned pid, const char *uid)
{
    char d[160], path[192], text[400];
    snprintf(d, sizeof(d), "%s/%u", proc_root, pid);
    mkdir(d, 0755);
    snprintf(path, sizeof(path), "%s/cgroup", d);
    if (!uid) {
        write_file(path, "0::/system.slice/nvidia-persistenced.service\n");
        return;
    }
    char u[40];
    snprintf(u, sizeof(u), "%s", uid);
    for (char *c = u; *c; c++)
        if (*c == '-')
            *c = '_';
    snprintf(text, sizeof(text),
             "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/"
             "cri-containerd-%064x.scope\n",
             u, pid);
    write_file(path, text);
}

/* A Running pod in namespace ai with the devices annotation the scheduler writes. */
static void pod(json_t *items, const char *name, const char *uid, const char *devices)
{
    json_array_append_new(items,
                          json_pack("{s:{s:s,s:s,s:s,s:{s:s}},s:{s:[{s:s}]},s:{s:s}}", "metadata",
                                    "name", name, "namespace", "ai", "uid", uid, "annotations",
                                    "gpusched.io/devices", devices, "spec", "containers", "name",
                                    "main", "status", "phase", "Running"));
}

/* /metrics as `agent run` would serve it now. Malloc'd. */
static char *scrape(struct gs_gpu_backend *b, json_t *items)
{
    cr_assert_eq(json_dump_file(items, pods_path, 0), 0);
    struct gs_agent_opts o;
    memset(&o, 0, sizeof(o));
    o.pods_file = pods_path;
    o.proc_root = proc_root;
    o.interval_s = 1;
    struct gs_buf out;
    gs_buf_init(&out, 0);
    cr_assert_eq(gs_agent_scrape(b, &o, &out), 0);
    char *page = strdup(out.data ? out.data : "");
    gs_buf_release(&out);
    return page;
}

/* The value of metric's series for pod (pod "" for the GPU's own, with gpu=N); NAN when there
 * is none; two series for one pod fail the test. */
static double series(const char *page, const char *metric, const char *pod_name, int gpu)
{
    char want_pod[160], want_gpu[32], head[96];
    snprintf(want_pod, sizeof(want_pod), ",pod=\"%s\",", pod_name);
    snprintf(want_gpu, sizeof(want_gpu), "{gpu=\"%d\",", gpu);
    snprintf(head, sizeof(head), "%s{", metric);
    double v = NAN;
    int found = 0;
    for (const char *l = page; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *end = strchr(l, '\n');
        size_t n = end ? (size_t)(end - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)n, l);
        if (strncmp(line, head, strlen(head)) != 0 || !strstr(line, want_pod) ||
            (gpu >= 0 && !strstr(line, want_gpu)))
            continue;
        found++;
        v = strtod(strrchr(line, ' ') + 1, NULL);
    }
    cr_assert(found <= 1, "%d series of %s for pod '%s'", found, metric, pod_name);
    return v;
}

#define MIB(x) ((double)(x)*1048576.0)

#define U_LLM_A  "11111111-1111-4111-8111-111111111111"
#define U_LLM_B  "22222222-2222-4222-8222-222222222222"
#define U_CHAT_A "33333333-3333-4333-8333-333333333333"
#define U_CHAT_B "44444444-4444-4444-8444-444444444444"
#define U_IDLE   "55555555-5555-4555-8555-555555555555"
#define U_TRAIN  "66666666-6666-4666-8666-666666666666"
#define U_A100_A "77777777-7777-4777-8777-777777777777"

/* GPU 0: an H100 in MIG mode, two 3g.40gb instances told 20 and 65 (the GPU says 55);
 * GPU 1: an H100 time-sliced by three pods, two with a process (10 and 45), one idle, and a
 * host process; GPU 2: an H100 a pod holds whole; GPU 3: an A100 in MIG mode; GPU 4: nobody. */
static const char *node_json =
    "{\"gpus\": ["
    "{\"model\": \"H100-80GB\", \"mig\": true, \"util\": 55, \"mem_used_mib\": 50000,"
    " \"instances\": [{\"profile\": \"3g.40gb\", \"start\": 0, \"util\": 20,"
    "                  \"mem_used_mib\": 12000},"
    "                 {\"profile\": \"3g.40gb\", \"start\": 4, \"util\": 65,"
    "                  \"mem_used_mib\": 30000}],"
    " \"processes\": [{\"pid\": 5001, \"mem_used_mib\": 11000, \"instance\": 1},"
    "                 {\"pid\": 5002, \"mem_used_mib\": 29000, \"instance\": 2}]},"
    "{\"model\": \"H100-80GB\", \"util\": 60, \"mem_used_mib\": 21200,"
    " \"processes\": [{\"pid\": 4242, \"util\": 10, \"mem_used_mib\": 1000},"
    "                 {\"pid\": 4343, \"util\": 45, \"mem_used_mib\": 20000},"
    "                 {\"pid\": 4444, \"util\": 5, \"mem_used_mib\": 200}]},"
    "{\"model\": \"H100-80GB\", \"util\": 71, \"mem_used_mib\": 30000,"
    " \"processes\": [{\"pid\": 6001, \"util\": 70, \"mem_used_mib\": 29500}]},"
    "{\"model\": \"A100-80GB\", \"mig\": true,"
    " \"instances\": [{\"profile\": \"3g.40gb\", \"start\": 0, \"mem_used_mib\": 9000},"
    "                 {\"profile\": \"3g.40gb\", \"start\": 4}]},"
    "{\"model\": \"H100-80GB\", \"util\": 3}]}";

static struct gs_gpu_backend *node(json_t **items)
{
    write_file(gpus_path, node_json);
    struct gs_gpu_backend *b = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_gpu_open_fake(gpus_path, &b, &err), 0, "%s", err.msg);
    process(5001, U_LLM_A);
    process(5002, U_LLM_B);
    process(4242, U_CHAT_A);
    process(4343, U_CHAT_B);
    process(4444, NULL);
    process(6001, U_TRAIN);
    *items = json_array();
    pod(*items, "llm-a", U_LLM_A, "mig=0:3g.40gb@0");
    pod(*items, "llm-b", U_LLM_B, "mig=0:3g.40gb@4");
    pod(*items, "chat-a", U_CHAT_A, "replica=1");
    pod(*items, "chat-b", U_CHAT_B, "replica=1");
    pod(*items, "chat-idle", U_IDLE, "replica=1");
    pod(*items, "trainer", U_TRAIN, "gpu=2");
    pod(*items, "a100-a", U_A100_A, "mig=3:3g.40gb@0");
    return b;
}

TestSuite(agent_metrics, .init = setup, .fini = teardown);

Test(agent_metrics, two_mig_pods_read_their_instances_not_the_gpu)
{
    json_t *items;
    struct gs_gpu_backend *b = node(&items);
    char *page = scrape(b, items);
    double a = series(page, "gpu_utilization", "llm-a", 0),
           bb = series(page, "gpu_utilization", "llm-b", 0);
    cr_assert_eq(a, 20, "llm-a reads %g, want its instance's 20 (the GPU says 55)", a);
    cr_assert_eq(bb, 65, "llm-b reads %g, want its instance's 65 (the GPU says 55)", bb);
    a = series(page, "gpu_memory_used_bytes", "llm-a", 0);
    bb = series(page, "gpu_memory_used_bytes", "llm-b", 0);
    cr_assert_eq(a, MIB(12000), "llm-a memory %g, want %g", a, MIB(12000));
    cr_assert_eq(bb, MIB(30000), "llm-b memory %g, want %g", bb, MIB(30000));
    /* an H100-80GB's 3g.40gb instance holds 40448 MiB */
    a = series(page, "gpu_memory_total_bytes", "llm-a", 0);
    cr_assert_eq(a, MIB(40448), "llm-a memory total %g, want %g", a, MIB(40448));
    /* the instance's labels are on its pod's series */
    cr_assert(strstr(page, "gpu_instance_id=\"2\",pod=\"llm-b\""), "no gpu_instance_id label");
    free(page);
    json_decref(items);
    gs_gpu_close(b);
}

Test(agent_metrics, time_sliced_pods_read_their_processes)
{
    json_t *items;
    struct gs_gpu_backend *b = node(&items);
    char *page = scrape(b, items);
    double a = series(page, "gpu_utilization", "chat-a", 1),
           bb = series(page, "gpu_utilization", "chat-b", 1),
           idle = series(page, "gpu_utilization", "chat-idle", 1);
    cr_assert_eq(a, 10, "chat-a reads %g, want its process's 10 (the GPU says 60)", a);
    cr_assert_eq(bb, 45, "chat-b reads %g, want its process's 45 (the GPU says 60)", bb);
    cr_assert_eq(idle, 0, "chat-idle has no process: reads %g, want 0", idle);
    a = series(page, "gpu_memory_used_bytes", "chat-a", 1);
    bb = series(page, "gpu_memory_used_bytes", "chat-b", 1);
    idle = series(page, "gpu_memory_used_bytes", "chat-idle", 1);
    cr_assert_eq(a, MIB(1000), "chat-a memory %g, want %g", a, MIB(1000));
    cr_assert_eq(bb, MIB(20000), "chat-b memory %g, want %g", bb, MIB(20000));
    cr_assert_eq(idle, 0, "chat-idle memory %g, want 0", idle);
    /* the host's process (4444: 5 %, 200 MiB) is nobody's; the total stays the GPU's */
    a = series(page, "gpu_memory_total_bytes", "chat-a", 1);
    cr_assert_eq(a, MIB(81920), "chat-a memory total %g, want the GPU's", a);
    free(page);
    json_decref(items);
    gs_gpu_close(b);
}

Test(agent_metrics, a_process_of_two_pods_is_summed_per_pod)
{
    /* chat-b starts a second process (15 %, 500 MiB): its share is the sum */
    json_t *items;
    struct gs_gpu_backend *b = node(&items);
    gs_gpu_close(b);
    char *text = strdup(node_json);
    const char *from = "{\"pid\": 4444,";
    char *at = strstr(text, from);
    cr_assert_not_null(at);
    size_t need = strlen(text) + 128;
    char *json = malloc(need);
    snprintf(json, need, "%.*s{\"pid\": 4545, \"util\": 15, \"mem_used_mib\": 500}, %s",
             (int)(at - text), text, at);
    write_file(gpus_path, json);
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_gpu_open_fake(gpus_path, &b, &err), 0, "%s", err.msg);
    process(4545, U_CHAT_B);
    char *page = scrape(b, items);
    double bb = series(page, "gpu_utilization", "chat-b", 1);
    cr_assert_eq(bb, 60, "chat-b reads %g, want 45 + 15", bb);
    bb = series(page, "gpu_memory_used_bytes", "chat-b", 1);
    cr_assert_eq(bb, MIB(20500), "chat-b memory %g, want %g", bb, MIB(20500));
    free(page);
    free(json);
    free(text);
    json_decref(items);
    gs_gpu_close(b);
}

Test(agent_metrics, an_a100_mig_pod_has_no_utilization_series)
{
    json_t *items;
    struct gs_gpu_backend *b = node(&items);
    char *page = scrape(b, items);
    double u = series(page, "gpu_utilization", "a100-a", 3);
    cr_assert(isnan(u), "a100-a reads %g: an A100 measures no MIG instance utilization", u);
    double m = series(page, "gpu_memory_used_bytes", "a100-a", 3);
    cr_assert_eq(m, MIB(9000), "a100-a memory %g, want its instance's %g", m, MIB(9000));
    /* its other series are there */
    cr_assert(!isnan(series(page, "gpu_temperature_celsius", "a100-a", 3)));
    /* the HELP text says what is measured and what is not */
    cr_assert(strstr(page, "A100 and A30 measure none"), "HELP does not say what A100 lacks");
    cr_assert(strstr(page, "Attributed"), "HELP does not say what is attributed");
    free(page);
    json_decref(items);
    gs_gpu_close(b);
}

Test(agent_metrics, a_pod_holding_a_gpu_whole_reads_the_gpus)
{
    json_t *items;
    struct gs_gpu_backend *b = node(&items);
    char *page = scrape(b, items);
    double u = series(page, "gpu_utilization", "trainer", 2);
    cr_assert_eq(u, 71, "trainer reads %g, want the GPU's 71", u);
    u = series(page, "gpu_memory_used_bytes", "trainer", 2);
    cr_assert_eq(u, MIB(30000), "trainer memory %g, want the GPU's", u);
    /* nobody's GPU: its own series, pod "" */
    u = series(page, "gpu_utilization", "", 4);
    cr_assert_eq(u, 3, "GPU 4 reads %g", u);
    free(page);
    json_decref(items);
    gs_gpu_close(b);
}

Test(agent_metrics, a_shared_pod_whose_uid_is_unknown_has_no_series)
{
    /* a pod without metadata.uid (as the kubelet's pod-resources names pods) cannot be
     * matched to processes: no series rather than a 0 */
    json_t *items;
    struct gs_gpu_backend *b = node(&items);
    json_t *md = json_object_get(json_array_get(items, 2), "metadata");
    json_object_del(md, "uid");
    char *page = scrape(b, items);
    cr_assert(isnan(series(page, "gpu_utilization", "chat-a", 1)));
    cr_assert_eq(series(page, "gpu_utilization", "chat-b", 1), 45);
    free(page);
    json_decref(items);
    gs_gpu_close(b);
}

Test(agent_metrics, readings_follow_the_file)
{
    /* the fake re-reads instances' and processes' readings when the file changes */
    json_t *items;
    struct gs_gpu_backend *b = node(&items);
    char *page = scrape(b, items);
    cr_assert_eq(series(page, "gpu_utilization", "llm-a", 0), 20);
    free(page);
    char *text = strdup(node_json), *at = strstr(text, "\"util\": 20,");
    cr_assert_not_null(at);
    memcpy(at, "\"util\": 37,", 11);
    at = strstr(text, "\"util\": 45,");
    cr_assert_not_null(at);
    memcpy(at, "\"util\": 33,", 11);
    write_file(gpus_path, text);
    struct timeval tv[2] = {{.tv_sec = 2000000000}, {.tv_sec = 2000000000}};
    cr_assert_eq(utimes(gpus_path, tv), 0); /* a new modification time, however fast */
    page = scrape(b, items);
    cr_assert_eq(series(page, "gpu_utilization", "llm-a", 0), 37);
    cr_assert_eq(series(page, "gpu_utilization", "chat-b", 1), 33);
    free(page);
    free(text);
    json_decref(items);
    gs_gpu_close(b);
}
