/* scheduler.c - `gpusched scheduler`: flags, credentials and signals around
 * sched/scheduler.c. */
#include "cli.h"
#include "../formats/scenario.h"

#include "../base/flag.h"
#include "../base/error.h"
#include "../base/log.h"
#include "../core/engine.h"
#include "../formats/migparted.h"
#include "../sched/scheduler.h"

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

enum mode { M_SCHEDULER = 0, M_EXTENDER, M_EXPLAIN };

static void usage(FILE *f, enum mode mode)
{
    if (mode == M_EXPLAIN) {
        fprintf(f, "usage: gpusched explain [NAMESPACE/POD] [--kubeconfig FILE] [--context NAME]\n"
                   "         [--in-cluster] [--scheduler-name gpusched] [--policy gpusched]\n"
                   "         [--min-runtime 0] [--output text|json|decisions] [--mig-config FILE]\n"
                   "         [--dynamic-mig true|false] [--insecure-skip-tls-verify]\n"
                   "\n"
                   "Says why a pending pod waits: lists the cluster once, runs one scheduling\n"
                   "cycle that writes nothing, and prints the verdict: quota (which queue or\n"
                   "ResourceQuota, by how much), fragmentation (enough free in total, no valid\n"
                   "slot), priority, gang (incomplete or does not fit), selector, taint,\n"
                   "preempting, resources, or fits. Without a pod: every pending pod. The\n"
                   "running scheduler serves the same report at /debug/pending.\n"
                   "Exit status: 0 printed, 1 API failure, 2 bad usage, 3 no such pending pod.\n");
        return;
    }
    bool extender = mode == M_EXTENDER;
    if (extender) {
        fprintf(f,
                "usage: gpusched extender [--kubeconfig FILE] [--context NAME] [--in-cluster]\n"
                "         [--policy gpusched] [--qps 50] [--burst 100] [--http-port 8888]\n"
                "         [--http-bind 0.0.0.0] [--mig-config FILE] [--insecure-skip-tls-verify]\n"
                "\n"
                "kube-scheduler's HTTP extender on gpusched's engine: POST /filter,\n"
                "/prioritize and /bind (Go field names, nodeCacheCapable), with the chosen\n"
                "devices in the gpusched.io/devices annotation. Every replica answers; no\n"
                "leader election. deploy/extender-config.yaml is a KubeSchedulerConfiguration\n"
                "that sends nvidia.com/* pods here.\n");
        return;
    }
    fprintf(f, "usage: gpusched scheduler [--kubeconfig FILE] [--context NAME] [--in-cluster]\n"
               "         [--scheduler-name gpusched] [--policy gpusched] [--qps 50] [--burst 100]\n"
               "         [--leader-elect true|false] [--lease-namespace kube-system]\n"
               "         [--lease-name gpusched] [--lease-duration 15] [--renew-deadline 10]\n"
               "         [--retry-period 2] [--identity NAME] [--http-port 10259]\n"
               "         [--http-bind 0.0.0.0] [--min-runtime 0] [--mig-config FILE]\n"
               "         [--dynamic-mig true|false] [--recarve-hold 10m]\n"
               "         [--insecure-skip-tls-verify]\n"
               "\n"
               "A node's GPUs come from the gpusched agent's gpusched.io/inventory annotation;\n"
               "on nodes run by NVIDIA's device plugin and mig-manager, from the mig-parted\n"
               "config (--mig-config: the file, or the ConfigMap holding it) entry that the\n"
               "node's nvidia.com/mig.config label names; else from allocatable counts, and\n"
               "then no GPU index is written for the node.\n"
               "Queues (GPUQueue), ResourceQuotas, priorities with preemption (victims that\n"
               "lose the fewest GPU-hours; none younger than --min-runtime seconds), PDBs and\n"
               "gangs (PodGroup) apply; /debug/pending says why each pending pod waits.\n"
               "--dynamic-mig true re-carves MIG GPUs for pods no free slot fits: the layout\n"
               "goes to the Node's gpusched.io/mig-desired annotation, the gpusched agent\n"
               "applies it (instances in use are never destroyed) and the pod, nominated\n"
               "meanwhile, binds once its instance exists; a GPU changed is left alone for\n"
               "--recarve-hold.\n"
               "TLS to the API server is verified against the kubeconfig's or the service\n"
               "account's CA; --insecure-skip-tls-verify (or the kubeconfig's own setting)\n"
               "turns that off.\n"
               "Schedules pods with spec.schedulerName gpusched: binds them with the chosen\n"
               "devices in the gpusched.io/devices annotation, and gives the others a\n"
               "FailedScheduling event that says why. Serves /healthz, /readyz, /metrics.\n");
}

static int explain(struct gs_kube_client *kc, const struct gs_scheduler_opts *o, const char *target,
                   bool as_json)
{
    struct gs_error err;
    gs_error_init(&err);
    json_t *rep = NULL;
    if (gs_scheduler_explain(kc, o, &rep, &err)) {
        fprintf(stderr, "gpusched explain: %s\n", err.msg);
        return GS_EXIT_FAILURE;
    }
    if (o->explain_decisions) {
        size_t k;
        json_t *line;
        json_array_foreach(rep, k, line) printf("%s\n", json_string_value(line));
        json_decref(rep);
        return GS_EXIT_OK;
    }
    json_t *sel = json_array();
    size_t i;
    json_t *it;
    json_array_foreach(rep, i, it)
    {
        char name[600];
        snprintf(name, sizeof(name), "%s/%s", json_string_value(json_object_get(it, "namespace")),
                 json_string_value(json_object_get(it, "pod")));
        if (!target || strcmp(target, name) == 0)
            json_array_append(sel, it);
    }
    json_decref(rep);
    if (target && json_array_size(sel) == 0) {
        json_decref(sel);
        fprintf(stderr, "gpusched explain: %s is not a pending pod of scheduler '%s'\n", target,
                o->scheduler_name);
        return 3;
    }
    if (as_json) {
        char *text = json_dumps(sel, JSON_INDENT(2));
        printf("%s\n", text ? text : "[]");
        free(text);
    } else {
        json_array_foreach(sel, i, it)
        {
            const char *q = json_string_value(json_object_get(it, "queue"));
            printf("%s/%s  priority %lld%s%s\n  reason: %s\n  %s\n",
                   json_string_value(json_object_get(it, "namespace")),
                   json_string_value(json_object_get(it, "pod")),
                   (long long)json_integer_value(json_object_get(it, "priority")),
                   q && q[0] ? "  queue " : "", q ? q : "",
                   json_string_value(json_object_get(it, "reason")),
                   json_string_value(json_object_get(it, "message")));
        }
    }
    json_decref(sel);
    return GS_EXIT_OK;
}

/* --mig-config, loaded while the flags are read; freed when the command returns */
static struct gs_migparted *mig_config;

static int run_mode(int argc, char **argv, enum mode mode)
{
    bool extender = mode == M_EXTENDER;
    const char *target = NULL;
    bool as_json = false;
    if (gs_cli_wants_help(argc, argv)) {
        usage(stdout, mode);
        return GS_EXIT_OK;
    }
    const char *kubeconfig = NULL, *context = NULL;
    bool in_cluster = false, insecure = false;
    char host[128] = "gpusched", identity[256];
    gethostname(host, sizeof(host) - 1);
    snprintf(identity, sizeof(identity), "%s_%d", host, (int)getpid());
    struct gs_scheduler_opts o = {
        .scheduler_name = "gpusched",
        .policy = "gpusched",
        .leader_elect = true,
        .lease_namespace = "kube-system",
        .lease_name = "gpusched",
        .identity = identity,
        .lease_duration_s = 15,
        .renew_deadline_s = 10,
        .retry_period_s = 2,
        .http_port = 10259,
        .max_backoff_s = 60,
        .extender = extender,
        .recarve_hold_s = 600,
    };
    if (extender) {
        o.leader_elect = false; /* every replica answers kube-scheduler */
        o.http_port = 8888;
    }
    struct gs_kube_client_opts copts = {.qps = 50, .burst = 100, .timeout_s = 30};
    char flag[64];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *eqs = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        bool inline_value = eqs && (size_t)(eqs - a) < sizeof(flag);
        if (inline_value) { /* --flag=value */
            snprintf(flag, sizeof(flag), "%.*s", (int)(eqs - a), a);
            a = flag;
            v = eqs + 1;
            i--; /* the value is not a separate argument */
        }
        double x;
        int rc = 0;
        if (strcmp(a, "--insecure-skip-tls-verify") == 0) {
            insecure = true;
            continue;
        }
        if (mode == M_EXPLAIN && a[0] != '-' && !target) {
            target = a;
            if (!strchr(target, '/')) {
                fprintf(stderr, "gpusched explain: '%s': expected NAMESPACE/POD\n", target);
                return GS_EXIT_USAGE;
            }
            continue;
        }
        if (!v && strcmp(a, "--in-cluster") != 0) {
            fprintf(stderr, "gpusched scheduler: unknown or incomplete option '%s'\n", a);
            usage(stderr, mode);
            return GS_EXIT_USAGE;
        }
        if (strcmp(a, "--in-cluster") == 0) {
            in_cluster = true;
            continue;
        }
        i++;
        if (strcmp(a, "--kubeconfig") == 0)
            kubeconfig = v;
        else if (strcmp(a, "--context") == 0)
            context = v;
        else if (strcmp(a, "--scheduler-name") == 0)
            o.scheduler_name = v;
        else if (strcmp(a, "--mig-config") == 0) {
            struct gs_error merr;
            gs_error_init(&merr);
            gs_migparted_free(mig_config);
            mig_config = NULL;
            if (gs_migparted_load(v, &mig_config, &merr) ||
                gs_migparted_check(mig_config, -1, &merr)) {
                fprintf(stderr, "gpusched %s: --mig-config: %s\n",
                        mode == M_EXPLAIN ? "explain"
                        : extender        ? "extender"
                                          : "scheduler",
                        merr.msg);
                gs_migparted_free(mig_config);
                return GS_EXIT_USAGE;
            }
            o.mig_config = mig_config;
        } else if (strcmp(a, "--policy") == 0) {
            if (!gs_policy_find(v)) {
                fprintf(stderr, "gpusched scheduler: --policy '%s': unknown policy\n", v);
                return GS_EXIT_USAGE;
            }
            o.policy = v;
        } else if (strcmp(a, "--qps") == 0)
            rc = gs_cli_number(a, v, 0.1, 100000, &copts.qps);
        else if (strcmp(a, "--burst") == 0) {
            rc = gs_cli_number(a, v, 1, 100000, &x);
            copts.burst = (int)x;
        } else if (strcmp(a, "--leader-elect") == 0) {
            if (strcmp(v, "true") && strcmp(v, "false")) {
                fprintf(stderr, "gpusched scheduler: --leader-elect '%s': expected true or false\n",
                        v);
                return GS_EXIT_USAGE;
            }
            o.leader_elect = strcmp(v, "true") == 0;
        } else if (strcmp(a, "--lease-namespace") == 0)
            o.lease_namespace = v;
        else if (strcmp(a, "--lease-name") == 0)
            o.lease_name = v;
        else if (strcmp(a, "--identity") == 0)
            o.identity = v;
        else if (strcmp(a, "--lease-duration") == 0)
            rc = gs_cli_number(a, v, 1, 3600, &o.lease_duration_s);
        else if (strcmp(a, "--renew-deadline") == 0)
            rc = gs_cli_number(a, v, 1, 3600, &o.renew_deadline_s);
        else if (strcmp(a, "--retry-period") == 0)
            rc = gs_cli_number(a, v, 0.1, 3600, &o.retry_period_s);
        else if (strcmp(a, "--http-port") == 0) {
            rc = gs_cli_number(a, v, 0, 65535, &x);
            o.http_port = (int)x;
        } else if (strcmp(a, "--http-bind") == 0)
            o.http_bind = v;
        else if (strcmp(a, "--min-runtime") == 0)
            rc = gs_cli_number(a, v, 0, 86400 * 30, &o.min_runtime_s);
        else if (strcmp(a, "--dynamic-mig") == 0) {
            if (strcmp(v, "true") && strcmp(v, "false")) {
                fprintf(stderr, "gpusched scheduler: --dynamic-mig '%s': expected true or false\n",
                        v);
                return GS_EXIT_USAGE;
            }
            o.dynamic_mig = strcmp(v, "true") == 0;
        } else if (strcmp(a, "--recarve-hold") == 0) {
            if (gs_parse_duration(v, &o.recarve_hold_s) || o.recarve_hold_s > 86400) {
                fprintf(stderr,
                        "gpusched scheduler: --recarve-hold '%s': expected a duration up to 1d "
                        "(30s, 10m)\n",
                        v);
                return GS_EXIT_USAGE;
            }
        } else if (mode == M_EXPLAIN && strcmp(a, "--output") == 0) {
            if (strcmp(v, "json") && strcmp(v, "text") && strcmp(v, "decisions")) {
                fprintf(stderr,
                        "gpusched explain: --output '%s': expected text, json or decisions\n", v);
                return GS_EXIT_USAGE;
            }
            as_json = strcmp(v, "json") == 0;
            o.explain_decisions = strcmp(v, "decisions") == 0;
        } else {
            fprintf(stderr, "gpusched scheduler: unknown option '%s'\n", a);
            usage(stderr, mode);
            return GS_EXIT_USAGE;
        }
        if (rc)
            return rc;
    }
    if (o.renew_deadline_s >= o.lease_duration_s) {
        fprintf(stderr,
                "gpusched scheduler: --renew-deadline must be less than --lease-duration\n");
        return GS_EXIT_USAGE;
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_kube_config cfg;
    int rc = in_cluster ? gs_kube_config_in_cluster("", &cfg, &err)
                        : gs_kube_config_load(kubeconfig, context, &cfg, &err);
    if (rc) {
        fprintf(stderr, "gpusched scheduler: %s\n", err.msg);
        return GS_EXIT_USAGE;
    }
    if (insecure) {
        cfg.insecure = true;
        GS_WARN("scheduler", "TLS verification of the API server is off "
                             "(--insecure-skip-tls-verify)");
    }
    GS_INFO("scheduler", "using %s, scheduler name '%s', policy '%s'", cfg.source, o.scheduler_name,
            o.policy);
    struct gs_kube_client *kc = NULL;
    rc = gs_kube_client_new(&cfg, &copts, &kc, &err);
    if (rc) {
        gs_kube_config_release(&cfg);
        fprintf(stderr, "gpusched scheduler: %s\n", err.msg);
        return GS_EXIT_FAILURE;
    }
    /* fail fast on an unreachable or forbidden API server */
    long status = 0;
    rc = gs_kube_request(kc, "GET", "/api/v1/nodes?limit=1", NULL, NULL, NULL, &status, &err);
    if (rc) {
        fprintf(stderr, "gpusched scheduler: %s\n", err.msg);
        gs_kube_client_free(kc);
        return GS_EXIT_FAILURE;
    }
    if (mode == M_EXPLAIN)
        return explain(kc, &o, target, as_json);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = gs_scheduler_run(kc, &o, &stop_flag, &err);
    if (rc) {
        fprintf(stderr, "gpusched scheduler: %s\n", err.msg);
        return GS_EXIT_FAILURE;
    }
    return GS_EXIT_OK;
}

static int run(int argc, char **argv, enum mode mode)
{
    int rc = run_mode(argc, argv, mode);
    gs_migparted_free(mig_config);
    mig_config = NULL;
    return rc;
}

int gs_cli_scheduler(int argc, char **argv)
{
    return run(argc, argv, M_SCHEDULER);
}

int gs_cli_extender(int argc, char **argv)
{
    return run(argc, argv, M_EXTENDER);
}

int gs_cli_explain(int argc, char **argv)
{
    return run(argc, argv, M_EXPLAIN);
}
