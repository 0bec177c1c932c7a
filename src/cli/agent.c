/* agent.c - `gpusched agent`: the node agent (run) and what the GPU backend sees (inspect). */
#include "../agent/agent.h"
#include "../agent/migmgr.h"
#include "../agent/podresources.h"
#include "../base/flag.h"
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

static volatile int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    gs_flag_set(&stop_flag, 1);
}

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
           "\n"
           "inspect prints the GPUs the backend sees (NVML through libnvidia-ml.so.1, or the\n"
           "fake), MIG mode, profiles and placements against gpusched's catalog, instances and\n"
           "readings, and changes nothing; exit 1 when a profile differs from the catalog.\n"
           "With --pod-resources-socket it lists what the kubelet says each container holds.\n"
           "run is the node agent: health (XID, ECC, temperature) with cordoning, GPU feature\n"
           "discovery labels, the MIG manager (nvidia.com/mig.config -> mig.config.state) and\n"
           "/metrics. The article's knobs are read from the environment too: NODE_NAME,\n"
           "CHECK_INTERVAL (60), MEMORY_ERROR_THRESHOLD (10), TEMPERATURE_THRESHOLD (90),\n"
           "AUTO_CORDON (true); flags win. Without a kubeconfig or --in-cluster it runs health\n"
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

int gs_cli_agent(int argc, char **argv)
{
    if (argc < 1 || gs_cli_wants_help(argc, argv)) {
        usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? GS_EXIT_USAGE : GS_EXIT_OK;
    }
    const char *cmd = argv[0];
    if (strcmp(cmd, "inspect") != 0 && strcmp(cmd, "run") != 0 && strcmp(cmd, "mig-plan") != 0) {
        fprintf(stderr, "gpusched agent: unknown command '%s'\n", cmd);
        usage(stderr);
        return GS_EXIT_USAGE;
    }
    struct gs_agent_opts o;
    memset(&o, 0, sizeof(o));
    o.interval_s = 60;
    o.ecc_threshold = 10;
    o.temp_threshold = 90;
    o.auto_cordon = true;
    o.xid_hold_s = 300;
    o.metrics_port = 9400;
    o.node = getenv("NODE_NAME");
    double x;
    const char *env;
    int rc = 0;
    if ((env = getenv("CHECK_INTERVAL")) &&
        (rc = gs_cli_number("CHECK_INTERVAL", env, 0.05, 86400, &o.interval_s)))
        return rc;
    if ((env = getenv("MEMORY_ERROR_THRESHOLD")) &&
        (rc = gs_cli_number("MEMORY_ERROR_THRESHOLD", env, 0, 1e12, &x)) == 0)
        o.ecc_threshold = (uint64_t)x;
    if (rc)
        return rc;
    if ((env = getenv("TEMPERATURE_THRESHOLD")) &&
        (rc = gs_cli_number("TEMPERATURE_THRESHOLD", env, 0, 200, &x)) == 0)
        o.temp_threshold = (uint32_t)x;
    if (rc)
        return rc;
    if ((env = getenv("AUTO_CORDON")) && (rc = boolean("AUTO_CORDON", env, &o.auto_cordon)))
        return rc;
    const char *fake = NULL, *kubeconfig = NULL, *monitor = NULL, *migcfg = NULL, *dpcfg = NULL,
               *plan_cfg = NULL;
    bool in_cluster = false, insecure = false, interval_set = getenv("CHECK_INTERVAL") != NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--in-cluster") == 0) {
            in_cluster = true;
            continue;
        }
        if (strcmp(a, "--insecure-skip-tls-verify") == 0) {
            insecure = true;
            continue;
        }
        if (strcmp(a, "--dcgm-names") == 0) {
            o.dcgm_names = true;
            continue;
        }
        if (strcmp(a, "--mig-dry-run") == 0) {
            o.mig_dry_run = true;
            continue;
        }
        if (strcmp(a, "--mig-force") == 0) {
            o.mig_force = true;
            continue;
        }
        if (strcmp(a, "--dra") == 0) {
            o.dra = true;
            continue;
        }
        if (strcmp(a, "--dra-dynamic-mig") == 0) {
            o.dra_dynamic_mig = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "gpusched agent: unknown or incomplete option '%s'\n", a);
            return GS_EXIT_USAGE;
        }
        i++;
        if (strcmp(a, "--fake") == 0)
            fake = v;
        else if (strcmp(a, "--node") == 0)
            o.node = v;
        else if (strcmp(a, "--kubeconfig") == 0)
            kubeconfig = v;
        else if (strcmp(a, "--interval") == 0) {
            rc = gs_cli_number(a, v, 0.05, 86400, &o.interval_s);
            interval_set = true;
        } else if (strcmp(a, "--memory-error-threshold") == 0 &&
                   !(rc = gs_cli_number(a, v, 0, 1e12, &x)))
            o.ecc_threshold = (uint64_t)x;
        else if (strcmp(a, "--temperature-threshold") == 0 &&
                 !(rc = gs_cli_number(a, v, 0, 200, &x)))
            o.temp_threshold = (uint32_t)x;
        else if (strcmp(a, "--auto-cordon") == 0)
            rc = boolean(a, v, &o.auto_cordon);
        else if (strcmp(a, "--xid-hold") == 0)
            rc = gs_cli_number(a, v, 0, 86400 * 30, &o.xid_hold_s);
        else if (strcmp(a, "--ignore-xids") == 0) {
            char buf[256];
            snprintf(buf, sizeof(buf), "%s", v);
            char *save = NULL;
            for (char *t = strtok_r(buf, ",", &save); t && o.nignore < 16;
                 t = strtok_r(NULL, ",", &save)) {
                if ((rc = gs_cli_number(a, t, 0, 1e9, &x)))
                    break;
                o.ignore_xids[o.nignore++] = (uint64_t)x;
            }
        } else if (strcmp(a, "--metrics-port") == 0 && !(rc = gs_cli_number(a, v, 0, 65535, &x)))
            o.metrics_port = (int)x;
        else if (strcmp(a, "--metrics-bind") == 0)
            o.metrics_bind = v;
        else if (strcmp(a, "--monitor-config") == 0)
            monitor = v;
        else if (strcmp(a, "--mig-config") == 0)
            migcfg = v;
        else if (strcmp(a, "--config") == 0)
            plan_cfg = v;
        else if (strcmp(a, "--dp-config") == 0)
            dpcfg = v;
        else if (strcmp(a, "--pods-file") == 0)
            o.pods_file = v;
        else if (strcmp(a, "--device-plugin-dir") == 0)
            o.dp_dir = v;
        else if (strcmp(a, "--pod-resources-socket") == 0)
            o.podres_socket = v;
        else if (strcmp(a, "--proc-root") == 0)
            o.proc_root = v;
        else if (strcmp(a, "--dra-plugins-dir") == 0)
            o.dra_plugins_dir = v;
        else if (strcmp(a, "--dra-registry-dir") == 0)
            o.dra_registry_dir = v;
        else if (strcmp(a, "--cdi-dir") == 0)
            o.cdi_dir = v;
        else if (strcmp(a, "--duration") == 0)
            rc = gs_cli_number(a, v, 0, 1e9, &o.max_seconds);
        else if (!rc) {
            fprintf(stderr, "gpusched agent: unknown option '%s'\n", a);
            return GS_EXIT_USAGE;
        }
        if (rc)
            return rc;
    }
    if (strcmp(cmd, "mig-plan") == 0 && (!migcfg || !plan_cfg)) {
        fprintf(stderr,
                "gpusched agent mig-plan: --mig-config FILE and --config NAME are required\n");
        return GS_EXIT_USAGE;
    }
    struct gs_gpu_backend *b = NULL;
    if ((rc = open_backend(fake, &b)))
        return rc;
    if (strcmp(cmd, "mig-plan") == 0) {
        struct gs_error perr;
        gs_error_init(&perr);
        struct gs_migparted *pmp = NULL;
        static struct gs_migmgr_plan plan;
        static char text[16384];
        rc = gs_migparted_load(migcfg, &pmp, &perr);
        if (!rc)
            rc = gs_migmgr_plan(b, pmp, plan_cfg, NULL, 0, false, &plan, &perr);
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
    if (strcmp(cmd, "inspect") == 0) {
        static char text[65536];
        int mism = gs_agent_inspect(b, text, sizeof(text));
        fputs(text, stdout);
        gs_gpu_close(b);
        if (o.podres_socket) {
            /* what the kubelet says each container holds (its pod-resources List) */
            static struct gs_podres pr[1024];
            char why[512];
            int n = gs_podres_list(o.podres_socket, pr, 1024, why, sizeof(why));
            if (n < 0) {
                fprintf(stderr, "gpusched agent inspect: pod-resources %s: %s\n", o.podres_socket,
                        why);
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
    struct gs_error err;
    gs_error_init(&err);
    struct gs_migparted *mp = NULL;
    /* a config the agent is told to use and cannot read is an error, never a feature silently
     * off (deploy/agent.yaml mounts its ConfigMaps as required: the kubelet keeps the pod
     * from starting, with a FailedMount Event, until they exist) */
    const char **files[3] = {&monitor, &migcfg, &dpcfg};
    const char *flags[3] = {"--monitor-config", "--mig-config", "--dp-config"};
    for (int k = 0; k < 3; k++)
        if (*files[k] && access(*files[k], R_OK) != 0) {
            rc = gs_error_set(&err, GS_EINVAL, "%s %s: %s (the ConfigMap it names is missing?)",
                              flags[k], *files[k], strerror(errno));
            goto bad;
        }
    if (!o.dra && (o.dra_dynamic_mig || o.dra_plugins_dir || o.dra_registry_dir || o.cdi_dir)) {
        rc = gs_error_set(&err, GS_EINVAL,
                          "--dra-dynamic-mig, --dra-plugins-dir, --dra-registry-dir and --cdi-dir "
                          "go with --dra");
        goto bad;
    }
    if (o.dra && !o.node) {
        rc = gs_error_set(&err, GS_EINVAL, "--dra needs --node (or NODE_NAME)");
        goto bad;
    }
    if (o.proc_root && access(o.proc_root, R_OK | X_OK) != 0) {
        rc = gs_error_set(&err, GS_EINVAL, "--proc-root %s: %s (the host's /proc, mounted?)",
                          o.proc_root, strerror(errno));
        goto bad;
    }
    static struct gs_dpconfig dp;
    double interval = o.interval_s;
    if (monitor && (rc = gs_agent_monitor_config(monitor, &o, &err)))
        goto bad;
    if (interval_set) /* CHECK_INTERVAL or --interval win over the scrape interval */
        o.interval_s = interval;
    if (migcfg && (rc = gs_migparted_load(migcfg, &mp, &err)))
        goto bad;
    o.mig = mp;
    if (dpcfg) {
        if ((rc = gs_dpconfig_load(dpcfg, &dp, &err)))
            goto bad;
        o.dp = &dp;
    }
    struct gs_kube_client *kc = NULL;
    if (kubeconfig || in_cluster) {
        if (!o.node) {
            rc = gs_error_set(&err, GS_EINVAL, "--node (or NODE_NAME) is required with a cluster");
            goto bad;
        }
        struct gs_kube_config cfg;
        rc = in_cluster ? gs_kube_config_in_cluster("", &cfg, &err)
                        : gs_kube_config_load(kubeconfig, NULL, &cfg, &err);
        if (rc)
            goto bad;
        cfg.insecure |= insecure;
        struct gs_kube_client_opts copts = {.qps = 20, .burst = 40, .timeout_s = 15};
        if ((rc = gs_kube_client_new(&cfg, &copts, &kc, &err))) {
            gs_kube_config_release(&cfg);
            goto bad;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = gs_agent_run(b, kc, &o, &stop_flag, &err);
    gs_kube_client_free(kc);
    gs_migparted_free(mp);
    gs_gpu_close(b);
    if (rc) {
        fprintf(stderr, "gpusched agent: %s\n", err.msg);
        return gs_cli_exit_code(rc);
    }
    return GS_EXIT_OK;
bad:
    fprintf(stderr, "gpusched agent: %s\n", err.msg);
    gs_migparted_free(mp);
    gs_gpu_close(b);
    return gs_cli_exit_code(rc);
}
