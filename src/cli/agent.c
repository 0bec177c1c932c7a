/* agent.c - `gpusched agent`: the node agent (run) and what the GPU backend sees (inspect). */
#include "../agent/agent.h"
#include "../agent/migmgr.h"
#include "../agent/podresources.h"
#include "../base/error.h"
#include "../base/log.h"
#include "../kube/config.h"
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(
        f, "usage: gpusched agent inspect [--fake FILE] [--pod-resources-socket SOCKET]\n"
           "       gpusched agent run [--fake FILE] [--node NAME] [--kubeconfig F | --in-cluster]\n"
           "                          [--interval S] [--memory-error-threshold N]\n"
           "                          [--temperature-threshold C] [--auto-cordon true|false]\n"
           "                          [--xid-hold S] [--ignore-xids 48,63] [--metrics-port 9400]\n"
           "                          [--metrics-bind ADDR] [--monitor-config gpu-metrics.json]\n"
           "                          [--dcgm-names] [--mig-config FILE] [--mig-dry-run] "
           "[--mig-force]\n"
           "                          [--dp-config FILE] [--pods-file FILE] [--duration S]\n"
           "                          [--proc-root /proc] [--insecure-skip-tls-verify]\n"
           "                          [--dra [--dra-plugins-dir DIR] [--dra-registry-dir DIR]\n"
           "                          [--cdi-dir DIR] [--dra-dynamic-mig]]\n"
           "                          [--fractions] [--mps-control PATH] [--mps-root DIR]\n"
           "                          [--mps-timeout S] [--mps-check-interval S]\n"
           "\n"
           "inspect prints the GPUs the backend sees (NVML through libnvidia-ml.so.1, or the\n"
           "fake), MIG mode, profiles and placements against gpusched's catalog, instances and\n"
           "readings, and changes nothing; exit 1 when a profile differs from the catalog.\n"
           "With --pod-resources-socket it lists what the kubelet says each container holds.\n"
           "run is the node agent: health (XID, ECC, temperature) with cordoning, GPU feature\n"
           "discovery labels, the MIG manager (nvidia.com/mig.config -> mig.config.state) and\n"
           "/metrics. The article's knobs are read from the environment too: NODE_NAME,\n"
           "CHECK_INTERVAL (60), MEMORY_ERROR_THRESHOLD (10), TEMPERATURE_THRESHOLD (90),\n"
           "AUTO_CORDON (true); flags win. CHECK_INTERVAL (--interval) paces health, pods and\n"
           "devices; the monitor config's scrape_interval paces the metrics (default: the\n"
           "same); each keeps its own. Every GPU is read before /metrics serves.\n"
           "MPS replicas (the device-plugin config's sharing.mps) and --fractions\n"
           "(gpusched.io/gpu-milli on whole GPUs) run as clients of one MPS control daemon\n"
           "per GPU, started and watched by the agent (--mps-control, default\n"
           "nvidia-cuda-mps-control; folders under --mps-root or mpsRoot, default\n"
           "/run/nvidia/mps); MPS on a GPU older than Volta is refused.\n"
           "Without a kubeconfig or --in-cluster it runs health\n"
           "and metrics only. --proc-root is the host's /proc (the agent needs hostPID): the\n"
           "cgroup of each GPU process there names its pod, whose own utilization and memory\n"
           "a pod sharing a GPU reads.\n"
           "--dra makes it the DRA driver gpu.gpusched.io: ResourceSlices of the node's GPUs\n"
           "(whole GPUs, MIG instances; with --dra-dynamic-mig every MIG placement of a GPU\n"
           "without other instances, on shared counters, its instance made when a claim is\n"
           "prepared) and the kubelet's DRA plugin on <plugins-dir>/gpu.gpusched.io/dra.sock,\n"
           "registered through <registry-dir>/gpu.gpusched.io-reg.sock, writing CDI specs\n"
           "into --cdi-dir (defaults /var/lib/kubelet/plugins, /var/lib/kubelet/plugins_registry,\n"
           "/var/run/cdi).\n");
}

static int boolean(const char *flag, const char *v, bool *out)
{
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = true;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = false;
    else {
        fprintf(stderr, "gpusched agent: %s '%s': expected true or false\n", flag, v);
        return GS_EXIT_USAGE;
    }
    return 0;
}

static int open_backend(const char *fake, struct gs_gpu_backend **b)
{
    struct gs_error err;
    gs_error_init(&err);
    if (fake) {
        int rc = gs_gpu_open_fake(fake, b, &err);
        if (rc)
            fprintf(stderr, "gpusched agent: %s\n", err.msg);
        return rc ? gs_cli_exit_code(rc) : 0;
    }
    char why[512];
    if (gs_gpu_open_nvml(b, why, sizeof(why)))
        return GS_EXIT_FAILURE;
    if (why[0])
        GS_WARN("agent", "%s", why);
    return 0;
}

/* what the flags (and the environment) of agent inspect, run and mig-plan fill */
struct agent_cli {
    struct gs_agent_opts o;
    const char *fake, *kubeconfig, *monitor, *migcfg, *dpcfg, *plan_cfg;
    bool in_cluster, insecure, interval_set;
};

static int interval_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    struct agent_cli *a = field;
    a->interval_set = true;
    return gs_cli_number(f->name, v, f->lo, f->hi, &a->o.interval_s);
}

static int cordon_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    return boolean(f->name, v, field);
}

static int ignore_xids_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    struct gs_agent_opts *o = field;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", v);
    char *save = NULL;
    double x;
    for (char *t = strtok_r(buf, ",", &save); t && o->nignore < 16;
         t = strtok_r(NULL, ",", &save)) {
        if (gs_cli_number(f->name, t, f->lo, f->hi, &x))
            return GS_EXIT_USAGE;
        o->ignore_xids[o->nignore++] = (uint64_t)x;
    }
    return 0;
}

#define A struct agent_cli
static const struct gs_cli_flag agent_flags[] = {
    GS_CLI_SET("--in-cluster", A, in_cluster, "the service account's credentials"),
    GS_CLI_SET("--insecure-skip-tls-verify", A, insecure, "do not verify the API server"),
    GS_CLI_SET("--dcgm-names", A, o.dcgm_names, "metrics by DCGM's names"),
    GS_CLI_SET("--mig-dry-run", A, o.mig_dry_run, "plan MIG changes, apply none"),
    GS_CLI_SET("--mig-force", A, o.mig_force, "destroy MIG instances pods hold"),
    GS_CLI_SET("--dra", A, o.dra, "the DRA driver gpu.gpusched.io"),
    GS_CLI_SET("--dra-dynamic-mig", A, o.dra_dynamic_mig, "partitionable GPUs"),
    GS_CLI_STR("--fake", A, fake, "FILE: fake GPUs instead of NVML"),
    GS_CLI_STR("--node", A, o.node, "NAME: this node (NODE_NAME)"),
    GS_CLI_STR("--kubeconfig", A, kubeconfig, "FILE: the kubeconfig"),
    GS_CLI_FN("--interval", 0, interval_flag, 0.05, 86400, NULL, "S: between checks"),
    GS_CLI_NUM("--memory-error-threshold", A, o.ecc_threshold, 0, 1e12, "N: ECC errors"),
    GS_CLI_NUM("--temperature-threshold", A, o.temp_threshold, 0, 200, "C: too hot"),
    GS_CLI_FN("--auto-cordon", offsetof(A, o.auto_cordon), cordon_flag, 0, 0, NULL,
              "true|false: cordon on a fault"),
    GS_CLI_NUM("--xid-hold", A, o.xid_hold_s, 0, 86400 * 30, "S: an XID's hold"),
    GS_CLI_FN("--ignore-xids", offsetof(A, o), ignore_xids_flag, 0, 1e9, NULL, "48,63: XIDs"),
    GS_CLI_NUM("--metrics-port", A, o.metrics_port, 0, 65535, "PORT: /metrics (0: none)"),
    GS_CLI_STR("--metrics-bind", A, o.metrics_bind, "ADDR: /metrics address"),
    GS_CLI_STR("--monitor-config", A, monitor, "FILE: gpu-metrics.json"),
    GS_CLI_STR("--mig-config", A, migcfg, "FILE: mig-parted config"),
    GS_CLI_STR("--config", A, plan_cfg, "NAME: mig-plan's config"),
    GS_CLI_STR("--dp-config", A, dpcfg, "FILE: device-plugin config"),
    GS_CLI_STR("--pods-file", A, o.pods_file, "FILE: pods without a cluster"),
    GS_CLI_STR("--device-plugin-dir", A, o.dp_dir, "DIR: the kubelet's device plugins"),
    GS_CLI_STR("--pod-resources-socket", A, o.podres_socket, "SOCKET: the kubelet's"),
    GS_CLI_STR("--proc-root", A, o.proc_root, "DIR: the host's /proc"),
    GS_CLI_STR("--dra-plugins-dir", A, o.dra_plugins_dir, "DIR: the kubelet's plugins"),
    GS_CLI_STR("--dra-registry-dir", A, o.dra_registry_dir, "DIR: plugin registration"),
    GS_CLI_STR("--cdi-dir", A, o.cdi_dir, "DIR: CDI specs"),
    GS_CLI_NUM("--duration", A, o.max_seconds, 0, 1e9, "S: stop after (0: never)"),
    GS_CLI_SET("--fractions", A, o.fractions, "gpusched.io/gpu-milli as MPS clients"),
    GS_CLI_STR("--mps-control", A, o.mps_control, "PATH: nvidia-cuda-mps-control"),
    GS_CLI_STR("--mps-root", A, o.mps_root, "DIR: MPS pipes, logs, shared memory"),
    GS_CLI_NUM("--mps-timeout", A, o.mps_timeout_s, 0.1, 600, "S: an MPS daemon hangs"),
    GS_CLI_NUM("--mps-check-interval", A, o.mps_interval_s, 0.05, 86400,
               "S: between MPS daemon checks"),
    {0},
};
#undef A

static const struct gs_cli_parser agent_parser = {
    .prog = "gpusched agent",
    .flags = agent_flags,
    .how = GS_CLI_LAST_INCOMPLETE,
    .unknown = "unknown option",
    .incomplete = "unknown or incomplete option",
};

/* the defaults, the article's environment knobs, then the flags (which win) */
static int parse_flags(int argc, char **argv, struct agent_cli *a)
{
    memset(a, 0, sizeof(*a));
    struct gs_agent_opts *o = &a->o;
    o->interval_s = 60;
    o->ecc_threshold = 10;
    o->temp_threshold = 90;
    o->auto_cordon = true;
    o->xid_hold_s = 300;
    o->metrics_port = 9400;
    o->node = getenv("NODE_NAME");
    double x;
    const char *env;
    int rc = 0;
    if ((env = getenv("CHECK_INTERVAL")) &&
        (rc = gs_cli_number("CHECK_INTERVAL", env, 0.05, 86400, &o->interval_s)))
        return rc;
    if ((env = getenv("MEMORY_ERROR_THRESHOLD")) &&
        (rc = gs_cli_number("MEMORY_ERROR_THRESHOLD", env, 0, 1e12, &x)) == 0)
        o->ecc_threshold = (uint64_t)x;
    if (rc)
        return rc;
    if ((env = getenv("TEMPERATURE_THRESHOLD")) &&
        (rc = gs_cli_number("TEMPERATURE_THRESHOLD", env, 0, 200, &x)) == 0)
        o->temp_threshold = (uint32_t)x;
    if (rc)
        return rc;
    if ((env = getenv("AUTO_CORDON")) && (rc = boolean("AUTO_CORDON", env, &o->auto_cordon)))
        return rc;
    a->interval_set = getenv("CHECK_INTERVAL") != NULL;
    return gs_cli_parse(&agent_parser, a, argc, argv);
}

static int cmd_mig_plan(int argc, char **argv)
{
    struct agent_cli a;
    struct gs_gpu_backend *b = NULL;
    int rc = parse_flags(argc, argv, &a);
    if (rc)
        return rc;
    if (!a.migcfg || !a.plan_cfg) {
        fprintf(stderr,
                "gpusched agent mig-plan: --mig-config FILE and --config NAME are required\n");
        return GS_EXIT_USAGE;
    }
    if ((rc = open_backend(a.fake, &b)))
        return rc;
    struct gs_error perr;
    gs_error_init(&perr);
    struct gs_migparted *pmp = NULL;
    static struct gs_migmgr_plan plan;
    static char text[16384];
    rc = gs_migparted_load(a.migcfg, &pmp, &perr);
    if (rc) {
        fprintf(stderr, "gpusched agent mig-plan: %s\n", perr.msg);
        gs_gpu_close(b);
        return gs_cli_input_exit(rc);
    }
    rc = gs_migmgr_plan(b, pmp, a.plan_cfg, NULL, 0, false, &plan, &perr);
    if (!rc) {
        gs_migmgr_plan_str(&plan, text, sizeof(text));
        fputs(text, stdout);
    } else {
        fprintf(stderr, "gpusched agent mig-plan: %s\n", perr.msg);
    }
    gs_migparted_free(pmp);
    gs_gpu_close(b);
    return rc ? gs_cli_exit_code(rc) : GS_EXIT_OK;
}

static int cmd_inspect(int argc, char **argv)
{
    struct agent_cli a;
    struct gs_gpu_backend *b = NULL;
    int rc = parse_flags(argc, argv, &a);
    if (rc || (rc = open_backend(a.fake, &b)))
        return rc;
    static char text[65536];
    int mism = gs_agent_inspect(b, text, sizeof(text));
    fputs(text, stdout);
    gs_gpu_close(b);
    const char *sock = a.o.podres_socket;
    if (sock) {
        /* what the kubelet says each container holds (its pod-resources List) */
        static struct gs_podres pr[1024];
        char why[512];
        int n = gs_podres_list(sock, pr, 1024, why, sizeof(why));
        if (n < 0) {
            fprintf(stderr, "gpusched agent inspect: pod-resources %s: %s\n", sock, why);
            return GS_EXIT_FAILURE;
        }
        printf("kubelet pod-resources: %d device%s held\n", n, n == 1 ? "" : "s");
        for (int k = 0; k < n; k++)
            printf("  pod %s/%s container %s: %s %s\n", pr[k].ns, pr[k].pod, pr[k].container,
                   pr[k].resource, pr[k].device);
    }
    if (mism > 0)
        fprintf(stderr, "gpusched agent: %d MIG profile%s differ from the catalog\n", mism,
                mism == 1 ? "" : "s");
    return mism > 0 ? GS_EXIT_FAILURE : GS_EXIT_OK;
}

/* What run's flags name must exist and go together. */
static int check_run(const struct agent_cli *a, struct gs_error *err)
{
    /* a config the agent is told to use and cannot read is an error, never a feature silently
     * off (deploy/agent.yaml mounts its ConfigMaps as required: the kubelet keeps the pod
     * from starting, with a FailedMount Event, until they exist) */
    const char *files[3] = {a->monitor, a->migcfg, a->dpcfg};
    const char *flags[3] = {"--monitor-config", "--mig-config", "--dp-config"};
    for (int k = 0; k < 3; k++)
        if (files[k] && access(files[k], R_OK) != 0)
            return gs_error_set(err, GS_EINVAL, "%s %s: %s (the ConfigMap it names is missing?)",
                                flags[k], files[k], strerror(errno));
    const struct gs_agent_opts *o = &a->o;
    if (!o->dra && (o->dra_dynamic_mig || o->dra_plugins_dir || o->dra_registry_dir || o->cdi_dir))
        return gs_error_set(err, GS_EINVAL,
                            "--dra-dynamic-mig, --dra-plugins-dir, --dra-registry-dir and "
                            "--cdi-dir go with --dra");
    if (o->dra && !o->node)
        return gs_error_set(err, GS_EINVAL, "--dra needs --node (or NODE_NAME)");
    if (o->proc_root && access(o->proc_root, R_OK | X_OK) != 0)
        return gs_error_set(err, GS_EINVAL, "--proc-root %s: %s (the host's /proc, mounted?)",
                            o->proc_root, strerror(errno));
    return 0;
}

/* The monitor, MIG and device-plugin configs into a->o (*mp: the MIG config, caller frees). */
static int load_configs(struct agent_cli *a, struct gs_migparted **mp, struct gs_error *err)
{
    static struct gs_dpconfig dp;
    int rc;
    if (a->monitor && (rc = gs_agent_monitor_config(a->monitor, &a->o, err)))
        return rc;
    /* two settings, one rule: each paces its own work, neither overrides the other */
    if (a->interval_set && a->o.scrape_s > 0)
        GS_WARN("agent",
                "CHECK_INTERVAL (--interval) %gs paces health, pods and devices; the monitor "
                "config's scrape_interval %gs paces the metrics: both apply, each to its own",
                a->o.interval_s, a->o.scrape_s);
    if (a->migcfg && (rc = gs_migparted_load(a->migcfg, mp, err)))
        return rc;
    a->o.mig = *mp;
    if (a->dpcfg) {
        if ((rc = gs_dpconfig_load(a->dpcfg, &dp, err)))
            return rc;
        a->o.dp = &dp;
    }
    return 0;
}

/* The cluster's client when a kubeconfig or --in-cluster is given, else NULL. */
static int kube_client(const struct agent_cli *a, struct gs_kube_client **kc, struct gs_error *err)
{
    *kc = NULL;
    if (!a->kubeconfig && !a->in_cluster)
        return 0;
    if (!a->o.node)
        return gs_error_set(err, GS_EINVAL, "--node (or NODE_NAME) is required with a cluster");
    struct gs_kube_config cfg;
    int rc = a->in_cluster ? gs_kube_config_in_cluster("", &cfg, err)
                           : gs_kube_config_load(a->kubeconfig, NULL, &cfg, err);
    if (rc)
        return rc;
    cfg.insecure |= a->insecure;
    struct gs_kube_client_opts copts = {.qps = 20, .burst = 40, .timeout_s = 15};
    if ((rc = gs_kube_client_new(&cfg, &copts, kc, err)))
        gs_kube_config_release(&cfg);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    struct agent_cli a;
    struct gs_gpu_backend *b = NULL;
    int rc = parse_flags(argc, argv, &a);
    if (rc || (rc = open_backend(a.fake, &b)))
        return rc;
    struct gs_error err;
    gs_error_init(&err);
    struct gs_migparted *mp = NULL;
    struct gs_kube_client *kc = NULL;
    /* the flags and the files they name are input; the API server is not */
    bool input = (rc = check_run(&a, &err)) || (rc = load_configs(&a, &mp, &err));
    if (rc || (rc = kube_client(&a, &kc, &err))) {
        fprintf(stderr, "gpusched agent: %s\n", err.msg);
        gs_migparted_free(mp);
        gs_gpu_close(b);
        return input ? gs_cli_input_exit(rc) : gs_cli_exit_code(rc);
    }
    rc = gs_agent_run(b, kc, &a.o, gs_cli_stop_on_signals(), &err);
    gs_kube_client_free(kc);
    gs_migparted_free(mp);
    gs_gpu_close(b);
    if (rc) {
        fprintf(stderr, "gpusched agent: %s\n", err.msg);
        return gs_cli_exit_code(rc);
    }
    return GS_EXIT_OK;
}

static const struct gs_cli_command agent_commands[] = {
    {"inspect", cmd_inspect, "what the GPU backend sees"},
    {"run", cmd_run, "the node agent"},
    {"mig-plan", cmd_mig_plan, "what the MIG manager would do for a config"},
    {NULL, NULL, NULL},
};

int gs_cli_agent(int argc, char **argv)
{
    static const struct gs_cli_commands d = {
        .prog = "gpusched agent",
        .commands = agent_commands,
        .usage = usage,
        .unknown = "unknown command",
        .usage_on_unknown = true,
    };
    return gs_cli_dispatch(&d, argc, argv);
}
