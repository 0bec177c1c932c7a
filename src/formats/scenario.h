/* scenario.h - simulator scenario files (YAML).
 *
 *   name: article-default        seed: 42         duration: 12h      warmup: 1h
 *   sla: {online_wait: 30s, online_min_speed: 0.8}
 *   prices: {A100-80GB: 3.5}                       # $/GPU-hour overrides
 *   mig_configs: <mig-parted v1 document>          # optional, else the article's
 *   node_groups:
 *     - {name, gpu, nodes, gpus, cpu, memory, mig_config, mig_layout,
 *        sharing: none|timeslicing|mps|fraction, replicas, labels,
 *        dra: whole|dynamic-mig}
 *     dra: the group's GPUs are published as gpusched's DRA driver publishes them
 *     (ResourceSlices of gpu.gpusched.io, as `agent run --dra` builds them), not as
 *     device-plugin GPUs: whole GPUs not in MIG mode, or (dynamic-mig, as with
 *     --dra-dynamic-mig) partitionable GPUs in MIG mode without instances. Pods reach them
 *     only through claims.
 *   min_runtime: 10m                                # no preemption of younger pods
 *   tenants: [{name, namespace, quota: {nvidia.com/gpu: 8}, limit: {...}, weight: 1}]
 *     quota: the deserved share (a GPUQueue's spec.deserved); idle capacity beyond it is
 *     borrowed and can be reclaimed; limit: a hard cap; weight: over-quota weight
 *   classes:
 *     - name, tenant, kind (online-inference | batch-inference | training | development),
 *       priority, arrival {process: poisson|fixed, per_hour | interval, start, stop}
 *       (fixed at interval 0s: a burst of max_jobs pods at start),
 *       duration {dist: fixed|exponential|lognormal, mean | median, sigma},
 *       request {gpus, cpu, memory, gpu_memory, mig, share: true|false|timeslicing|mps,
 *                claim {device_class, selector, count: 1}},
 *       (claim: each pod names a ResourceClaim of its own with one request "gpu" of count
 *       devices of the DeviceClass (gpu.gpusched.io or mig.gpusched.io, as deploy/dra/
 *       defines them) that the CEL selector accepts; allocated from the dra groups' slices
 *       as the scheduler allocates claims; instead of gpus and mig)
 *       util, max_jobs, gang (pods per job, all placed at once or none),
 *       node_selector {label: value} (at most 4), node_affinity: the required node affinity's
 *       nodeSelectorTerms [{matchExpressions: [{key, operator: In|NotIn|Exists|DoesNotExist|
 *       Gt|Lt, values}]}] (at most 4 terms of 4 expressions of 4 values): the pods go only
 *       to node groups whose labels (and GPU product) satisfy both,
 *       service (online-inference only, instead of arrival and duration): the class is a
 *       Deployment of replicas of its request's shape that serves a load of requests
 *         {replicas, fixed_replicas, autoscale: true, capacity (requests/s per replica),
 *          latency {base, max: 30s, sla: 1s}, startup: 0s,
 *          load {rate (requests/s), diurnal {amplitude, peak, period: 24h}, noise,
 *                bursts [{at, duration, factor}], random_bursts {per_day, duration, factor}},
 *          hpa {minReplicas, maxReplicas, metrics, behavior}}
 *       hpa takes autoscaling/v2 HorizontalPodAutoscaler spec field names and overrides the
 *       article's gpu-hpa.yaml field by field (a list given replaces the article's list);
 *       the replicas report the Pods metrics gpu_utilization and request_latency_ms
 *       (AverageValue targets); Resource, ContainerResource, Object and External metrics are
 *       accepted as the API server accepts them and are missing in the run (no replica
 *       reports them: no proposal from them, as for a metric the HPA cannot fetch).
 *       sim/service.h says what the keys mean.
 *   trace: {file: pods.csv, format: openb, time_scale: 1.0}   # instead of classes
 *   reconfig: {destroy: 1s, create: 2s, mode_change: 30s, notice: 2s, hold: 10m}
 *     dynamic MIG (strategy dynamic-mig): the time one MIG instance takes to destroy and to
 *     create, a MIG mode change (the GPU reset NVML needs), the time the scheduler's
 *     decision takes to reach the node and the new devices to reach the scheduler (notice),
 *     and how long a re-carved GPU is left alone (hold). Defaults: the GS_RECONF_* values.
 *
 * Durations take s/m/h/d suffixes; cpu and memory are Kubernetes quantities. Every key is
 * checked (unknown keys are errors), names of node groups, tenants and classes are unique
 * within their list, and errors cite file:line and the field path. The
 * parsed scenario is plain data owned by the caller (gs_scenario_release frees nothing
 * but the trace pods). */
#ifndef GS_SCENARIO_H
#define GS_SCENARIO_H

#include "../core/catalog.h"
#include "../core/cluster.h"
#include "../core/hpa.h"
#include "../core/mig.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_SC_MAX_GROUPS   32
#define GS_SC_MAX_CLASSES  32
#define GS_SC_MAX_TENANTS  16
#define GS_SC_MAX_QUOTA    8
#define GS_SC_MAX_SERVICES 8
#define GS_SC_MAX_BURSTS   16
#define GS_SC_MAX_REPLICAS 1000

enum gs_class_kind { GS_KIND_ONLINE = 0, GS_KIND_BATCH, GS_KIND_TRAINING, GS_KIND_DEV };
enum gs_group_sharing { GS_SHARE_NONE = 0, GS_SHARE_TIMESLICING, GS_SHARE_MPS, GS_SHARE_FRACTION };
enum gs_arrival { GS_ARRIVAL_POISSON = 0, GS_ARRIVAL_FIXED };
enum gs_dist { GS_DIST_FIXED = 0, GS_DIST_EXP, GS_DIST_LOGNORMAL };
enum gs_sc_dra { GS_SC_DRA_NONE = 0, GS_SC_DRA_WHOLE, GS_SC_DRA_DYNAMIC };

struct gs_sc_group {
    char name[GS_NAME_MAX];
    int model;
    int nodes, gpus;
    int64_t cpu_milli, mem_mib;
    char mig_config[64]; /* name in the scenario's mig configs; "" = none */
    bool has_layout;     /* mig_layout given inline: every GPU gets it */
    struct gs_mig_layout layout;
    enum gs_group_sharing sharing;
    int replicas;
    int nlabels;
    struct gs_label labels[8];
    enum gs_sc_dra dra; /* the GPUs are DRA devices (ResourceSlices), not device-plugin GPUs */
    int unhealthy;      /* GPUs unhealthy the whole run: the group's last ones */
};

/* A class's pods' ResourceClaim: one request "gpu" (count 0: none). */
struct gs_sc_claim {
    char device_class[64];
    char selector[256]; /* CEL; "" none */
    int count;
};

struct gs_sc_tenant {
    char name[GS_NAME_MAX];
    char ns[GS_NAME_MAX];
    int nquota;
    char quota_name[GS_SC_MAX_QUOTA][64];
    int64_t quota_value[GS_SC_MAX_QUOTA];
    int nlimit;
    char limit_name[GS_SC_MAX_QUOTA][64];
    int64_t limit_value[GS_SC_MAX_QUOTA];
    int weight;
};

struct gs_sc_burst {
    double at_s, duration_s, factor; /* the rate times factor over [at, at + duration) */
};

/* An online-inference class run as a Deployment of replicas serving a request load. */
struct gs_sc_service {
    bool on;
    bool autoscale;         /* the HPA drives the replica count (else replicas stays) */
    int32_t replicas;       /* at the start (default: minReplicas) */
    int32_t fixed_replicas; /* the fixed-count comparison; 0: sized for the diurnal peak */
    double capacity;        /* requests/s one replica serves at full speed */
    double latency_s, latency_max_s, latency_sla_s;  /* idle latency, timeout, SLA */
    double startup_s;                                /* from start to ready */
    double rate, amplitude, peak_s, period_s, noise; /* the load */
    int nbursts;
    struct gs_sc_burst burst[GS_SC_MAX_BURSTS];
    struct {
        double per_day, duration_s, factor;
    } random; /* bursts at seeded random times */
    struct gs_hpa_spec hpa;
};

/* A class's node constraints, as a pod's spec.nodeSelector and required node affinity
 * (nodeSelectorTerms, ORed; each term's matchExpressions ANDed). Matched against a node
 * group's labels and the GPU product the simulator gives its nodes (core/kpod.h). */
#define GS_SC_MAX_NODESEL 4
#define GS_SC_MAX_TERMS   4
#define GS_SC_MAX_EXPRS   4
#define GS_SC_MAX_VALS    4
struct gs_sc_expr {
    char key[GS_LABEL_KEY_MAX];
    uint8_t op; /* enum gs_kop */
    uint8_t nvals;
    char vals[GS_SC_MAX_VALS][GS_LABEL_VAL_MAX];
};
struct gs_sc_term {
    int nexprs;
    struct gs_sc_expr expr[GS_SC_MAX_EXPRS];
};

struct gs_sc_class {
    char name[GS_NAME_MAX];
    int tenant; /* index, -1 none */
    enum gs_class_kind kind;
    int32_t priority;
    enum gs_arrival arrival;
    double per_hour, interval_s, start_s, stop_s;
    enum gs_dist dist;
    double mean_s, median_s, sigma;
    int gpus;
    int64_t cpu_milli, mem_mib;
    int32_t gpu_mem_mib;
    char mig[24];
    uint8_t share; /* bit 0: may run on time-slicing replicas, bit 1: on MPS replicas */
    double util;
    int max_jobs;
    int gang; /* pods per job (0 or 1: a single pod) */
    struct gs_sc_claim claim;
    struct gs_sc_service service;
    int nnode_sel; /* node_selector: labels a node must carry */
    struct gs_label node_sel[GS_SC_MAX_NODESEL];
    int nterms; /* node_affinity: 0 none, else at least one term must match */
    struct gs_sc_term term[GS_SC_MAX_TERMS];
};

struct gs_sc_trace_pod {
    double arrival_s, duration_s;
    int64_t cpu_milli, mem_mib;
    int gpus;
    int16_t milli;
};

/* Dynamic MIG defaults: NVML creates or destroys a GPU or compute instance in about a second
 * or two on A100/H100; turning MIG mode on or off needs the GPU idle and reset (tens of
 * seconds, with the device plugin re-registering); the annotation round trip (scheduler ->
 * API server -> agent, then the inventory back) takes a couple of seconds. */
#define GS_RECONF_DESTROY_S 1.0
#define GS_RECONF_CREATE_S  2.0
#define GS_RECONF_MODE_S    30.0
#define GS_RECONF_NOTICE_S  2.0
#define GS_RECONF_HOLD_S    600.0

struct gs_scenario {
    char name[GS_NAME_MAX];
    uint64_t seed;
    double duration_s, warmup_s;
    double sla_wait_s, sla_min_speed;
    double min_runtime_s;
    double reconf_destroy_s, reconf_create_s, reconf_mode_s, reconf_notice_s, reconf_hold_s;
    double price[GS_MAX_MODELS];
    char mig_yaml_name[256];
    char *mig_yaml; /* raw mig-parted document text (heap), or NULL for the article's */
    size_t mig_yaml_len;
    int ngroups;
    struct gs_sc_group groups[GS_SC_MAX_GROUPS];
    int ntenants;
    struct gs_sc_tenant tenants[GS_SC_MAX_TENANTS];
    int nclasses;
    struct gs_sc_class classes[GS_SC_MAX_CLASSES];
    int ntrace;
    struct gs_sc_trace_pod *trace; /* heap */
};

struct gs_error;

/* Parse seconds from "90", "30s", "10m", "2h", "1d", "1.5h". */
int gs_parse_duration(const char *s, double *out);
int gs_scenario_parse(const char *name, const char *data, size_t len, struct gs_scenario *sc,
                      struct gs_error *err);
int gs_scenario_load(const char *path, struct gs_scenario *sc, struct gs_error *err);
void gs_scenario_release(struct gs_scenario *sc);
const char *gs_class_kind_name(enum gs_class_kind k);

#endif
