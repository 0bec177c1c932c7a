/* scheduler.c - `gpusched scheduler`: flags, credentials and signals around
 * sched/scheduler.c. */
#include "cli.h"
#include "../formats/scenario.h"

#include "../base/error.h"
#include "../base/log.h"
#include "../core/engine.h"
#include "../formats/migparted.h"
#include "../formats/topoobj.h"
#include "../sched/scheduler.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum mode { M_SCHEDULER = 0, M_EXTENDER, M_EXPLAIN };

/* "gpusched scheduler", "gpusched extender" or "gpusched explain": the command that runs, so
 * each error names the command the user typed */
static const char *prog = "gpusched scheduler";

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
               "         [--volume-bind-timeout 10m] [--topology-levels KEY,KEY,...]\n"
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
               "Volumes are bound as kube-scheduler binds them: a claim of a\n"
               "WaitForFirstConsumer class gets the smallest available volume that fits the\n"
               "chosen node, or is provisioned there (volume.kubernetes.io/selected-node); the\n"
               "pod is bound once its claims are, within --volume-bind-timeout.\n"
               "Gangs whose pods carry Kueue's kueue.x-k8s.io/podset-required-topology or\n"
               "podset-preferred-topology annotation are placed inside one domain of that\n"
               "level: the levels of the Topology their ResourceFlavor names, else of the one\n"
               "Topology (kueue.x-k8s.io), else --topology-levels (node label keys, broadest\n"
               "first, e.g. cloud.google.com/gce-topology-block,kubernetes.io/hostname).\n"
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

/* what the flags of the three modes fill */
struct sched_cli {
    struct gs_scheduler_opts o;
    struct gs_kube_client_opts copts;
    const char *kubeconfig, *context, *target;
    bool in_cluster, insecure, as_json;
    enum mode mode;
    char identity[256];
    struct gs_topo_levels topo_lv; /* --topology-levels */
};

static int mig_config_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    struct sched_cli *c = field;
    struct gs_error merr;
    gs_error_init(&merr);
    gs_migparted_free(mig_config);
    mig_config = NULL;
    if (gs_migparted_load(v, &mig_config, &merr) || gs_migparted_check(mig_config, -1, &merr)) {
        fprintf(stderr, "%s: --mig-config: %s\n", prog, merr.msg);
        gs_migparted_free(mig_config);
        mig_config = NULL;
        return GS_EXIT_USAGE;
    }
    c->o.mig_config = mig_config;
    return 0;
}

static int topology_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    struct sched_cli *c = field;
    struct gs_error terr;
    gs_error_init(&terr);
    if (gs_topo_levels_parse(v, &c->topo_lv, &terr)) {
        fprintf(stderr, "gpusched %s: --topology-levels '%.400s': %s\n",
                c->mode == M_EXPLAIN ? "explain" : "scheduler", v, terr.msg);
        return GS_EXIT_USAGE;
    }
    c->o.topology_levels = c->topo_lv.n > 0 ? &c->topo_lv : NULL;
    return 0;
}

static int policy_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    if (!gs_policy_find(v)) {
        fprintf(stderr, "%s: --policy '%s': unknown policy\n", prog, v);
        return GS_EXIT_USAGE;
    }
    *(const char **)field = v;
    return 0;
}

static int output_flag(const struct gs_cli_flag *f, const char *v, void *field)
{
    struct sched_cli *c = field;
    if (strcmp(v, "json") && strcmp(v, "text") && strcmp(v, "decisions")) {
        fprintf(stderr, "gpusched explain: --output '%s': expected text, json or decisions\n", v);
        return GS_EXIT_USAGE;
    }
    c->as_json = strcmp(v, "json") == 0;
    c->o.explain_decisions = strcmp(v, "decisions") == 0;
    return 0;
}

/* explain's NAMESPACE/POD */
static int target_arg(void *opts, const char *arg)
{
    struct sched_cli *c = opts;
    if (c->mode != M_EXPLAIN || c->target)
        return -1;
    c->target = arg;
    if (!strchr(arg, '/')) {
        fprintf(stderr, "gpusched explain: '%s': expected NAMESPACE/POD\n", arg);
        return GS_EXIT_USAGE;
    }
    return 0;
}

#define S struct sched_cli
/* the flags of all three modes; usage() words them */
#define SCHED_FLAGS                                                                                \
    GS_CLI_SET("--insecure-skip-tls-verify", S, insecure, "do not verify the API server"),         \
        GS_CLI_SET("--in-cluster", S, in_cluster, "the service account's credentials"),            \
        GS_CLI_STR("--kubeconfig", S, kubeconfig, "FILE: the kubeconfig"),                         \
        GS_CLI_STR("--context", S, context, "NAME: the kubeconfig's context"),                     \
        GS_CLI_STR("--scheduler-name", S, o.scheduler_name, "NAME: pods' spec.schedulerName"),     \
        GS_CLI_FN("--mig-config", 0, mig_config_flag, 0, 0, NULL, "FILE: mig-parted config"),      \
        GS_CLI_FN("--policy", offsetof(S, o.policy), policy_flag, 0, 0, NULL, "NAME: policy"),     \
        GS_CLI_FN("--topology-levels", 0, topology_flag, 0, 0, NULL, "KEY,KEY: levels"),           \
        GS_CLI_NUM("--qps", S, copts.qps, 0.1, 100000, "API requests per second"),                 \
        GS_CLI_NUM("--burst", S, copts.burst, 1, 100000, "API request burst"),                     \
        GS_CLI_TRUEFALSE("--leader-elect", S, o.leader_elect, "true|false"),                       \
        GS_CLI_STR("--lease-namespace", S, o.lease_namespace, "NS: the Lease's namespace"),        \
        GS_CLI_STR("--lease-name", S, o.lease_name, "NAME: the Lease"),                            \
        GS_CLI_STR("--identity", S, o.identity, "NAME: this replica in the Lease"),                \
        GS_CLI_NUM("--lease-duration", S, o.lease_duration_s, 1, 3600, "S: lease duration"),       \
        GS_CLI_NUM("--renew-deadline", S, o.renew_deadline_s, 1, 3600, "S: renew deadline"),       \
        GS_CLI_NUM("--retry-period", S, o.retry_period_s, 0.1, 3600, "S: retry period"),           \
        GS_CLI_NUM("--http-port", S, o.http_port, 0, 65535, "PORT: HTTP (0: none)"),               \
        GS_CLI_STR("--http-bind", S, o.http_bind, "ADDR: HTTP address"),                           \
        GS_CLI_NUM("--min-runtime", S, o.min_runtime_s, 0, 86400 * 30, "S: no preemption before"), \
        GS_CLI_TRUEFALSE("--dynamic-mig", S, o.dynamic_mig, "true|false: re-carve MIG GPUs"),      \
        GS_CLI_DURATION("--recarve-hold", S, o.recarve_hold_s, 0, 86400,                           \
                        "a duration up to 1d (30s, 10m)", "DURATION: a re-carved GPU's rest"),     \
        GS_CLI_DURATION("--volume-bind-timeout", S, o.volume_bind_timeout_s, 1, 86400,             \
                        "a duration from 1s to 1d (30s, 10m)",                                     \
                        "DURATION: a bind's wait for its claims to be bound")

static const struct gs_cli_flag sched_flags[] = {SCHED_FLAGS, {0}};
static const struct gs_cli_flag explain_flags[] = {
    SCHED_FLAGS,
    GS_CLI_FN("--output", 0, output_flag, 0, 0, NULL, "text|json|decisions"),
    {0},
};
#undef S

static void usage_scheduler(FILE *f)
{
    usage(f, M_SCHEDULER);
}

static void usage_extender(FILE *f)
{
    usage(f, M_EXTENDER);
}

static void usage_explain(FILE *f)
{
    usage(f, M_EXPLAIN);
}

/* the defaults of the mode, then the flags */
static int parse_flags(int argc, char **argv, struct sched_cli *c)
{
    char host[128] = "gpusched";
    gethostname(host, sizeof(host) - 1);
    snprintf(c->identity, sizeof(c->identity), "%s_%d", host, (int)getpid());
    bool extender = c->mode == M_EXTENDER;
    c->o = (struct gs_scheduler_opts){
        .scheduler_name = "gpusched",
        .policy = "gpusched",
        .leader_elect = !extender, /* every extender replica answers kube-scheduler */
        .lease_namespace = "kube-system",
        .lease_name = "gpusched",
        .identity = c->identity,
        .lease_duration_s = 15,
        .renew_deadline_s = 10,
        .retry_period_s = 2,
        .http_port = extender ? 8888 : 10259,
        .max_backoff_s = 60,
        .extender = extender,
        .recarve_hold_s = 600,
        .volume_bind_timeout_s = 600,
    };
    c->copts = (struct gs_kube_client_opts){.qps = 50, .burst = 100, .timeout_s = 30};
    const struct gs_cli_parser p = {
        .prog = prog,
        .flags = c->mode == M_EXPLAIN ? explain_flags : sched_flags,
        .how = GS_CLI_INLINE | GS_CLI_LAST_INCOMPLETE,
        .unknown = "unknown option",
        .incomplete = "unknown or incomplete option",
        .usage = c->mode == M_EXPLAIN    ? usage_explain
                 : c->mode == M_EXTENDER ? usage_extender
                                         : usage_scheduler,
        .positional = target_arg,
    };
    int rc = gs_cli_parse(&p, c, argc, argv);
    if (rc)
        return rc;
    if (c->o.renew_deadline_s >= c->o.lease_duration_s) {
        fprintf(stderr, "%s: --renew-deadline must be less than --lease-duration\n", prog);
        return GS_EXIT_USAGE;
    }
    return 0;
}

/* A client for the API server the flags name, checked with one request. */
static int api_connect(const struct sched_cli *c, struct gs_kube_client **kc)
{
    struct gs_error err;
    gs_error_init(&err);
    struct gs_kube_config cfg;
    int rc = c->in_cluster ? gs_kube_config_in_cluster("", &cfg, &err)
                           : gs_kube_config_load(c->kubeconfig, c->context, &cfg, &err);
    if (rc) {
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        return GS_EXIT_USAGE;
    }
    if (c->insecure) {
        cfg.insecure = true;
        GS_WARN("scheduler", "TLS verification of the API server is off "
                             "(--insecure-skip-tls-verify)");
    }
    GS_INFO("scheduler", "using %s, scheduler name '%s', policy '%s'", cfg.source,
            c->o.scheduler_name, c->o.policy);
    rc = gs_kube_client_new(&cfg, &c->copts, kc, &err);
    if (rc) {
        gs_kube_config_release(&cfg);
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        return GS_EXIT_FAILURE;
    }
    /* fail fast on an unreachable or forbidden API server */
    long status = 0;
    rc = gs_kube_request(*kc, "GET", "/api/v1/nodes?limit=1", NULL, NULL, NULL, &status, &err);
    if (rc) {
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        gs_kube_client_free(*kc);
        return GS_EXIT_FAILURE;
    }
    return 0;
}

static int run_mode(int argc, char **argv, enum mode mode)
{
    if (gs_cli_wants_help(argc, argv)) {
        usage(stdout, mode);
        return GS_EXIT_OK;
    }
    struct sched_cli c = {.mode = mode};
    struct gs_kube_client *kc = NULL;
    int rc = parse_flags(argc, argv, &c);
    if (rc || (rc = api_connect(&c, &kc)))
        return rc;
    if (mode == M_EXPLAIN)
        return explain(kc, &c.o, c.target, c.as_json);
    struct gs_error err;
    gs_error_init(&err);
    rc = gs_scheduler_run(kc, &c.o, gs_cli_stop_on_signals(), &err);
    if (rc) {
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        return GS_EXIT_FAILURE;
    }
    return GS_EXIT_OK;
}

static int run(int argc, char **argv, enum mode mode)
{
    prog = mode == M_EXPLAIN    ? "gpusched explain"
           : mode == M_EXTENDER ? "gpusched extender"
                                : "gpusched scheduler";
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
