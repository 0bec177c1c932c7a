/* agent.h - `gpusched agent`: the node agent over one GPU backend, as a few components that
 * each own their state and lock (agent.c wires them and runs the loop). The loop has three
 * cadences: the GPUs' metrics are read every scrape interval (the monitor config's
 * scrape_interval), health is judged, pods and devices refreshed and the node reconciled every
 * check interval (CHECK_INTERVAL), MPS daemons checked every MPS check interval; a critical
 * XID is judged at once. Every GPU is read once before /metrics serves: no figure is shown
 * before it is measured.
 *   - the GPU sampler with health (sampler.h): each GPU's metrics and XIDs, its health
 *     (XIDs outside NVIDIA's ignore list, ECC, temperature), its tenants' use;
 *   - the pod tracker (pods.h): the pods on the node and their devices, from the kubelet's
 *     pod-resources, the gpusched.io/devices annotations (corrected to what the kubelet gave)
 *     or, without a cluster, a pods file;
 *   - the node reconciler (reconciler.h): auto-cordon with Events, GPU feature discovery's
 *     labels, the mig-parted config the label nvidia.com/mig.config names, the scheduler's
 *     desired layouts (gpusched.io/mig-desired) and the inventory (gpusched.io/inventory);
 *   - the kubelet plugins (plugins.h): with dp_dir a device plugin per resource
 *     (deviceplugin.h); with dra the DRA driver gpu.gpusched.io (dra.h), whose gRPC thread
 *     shares the backend through gpulock.h; both on the one gRPC server (grpcserver.h);
 *   - the exporter (exporter.h): /metrics, /healthz and /status;
 *   - through the plugins, each MPS GPU's control daemon (mps.h).
 * Without a kubeconfig it runs health and metrics only. */
#ifndef GS_AGENT_H
#define GS_AGENT_H

#include "../formats/dpconfig.h"
#include "../formats/migparted.h"
#include "../formats/monitorcfg.h"
#include "../kube/client.h"
#include "gpu.h"

struct gs_agent_opts {
    const char *node;        /* NODE_NAME */
    double interval_s;       /* CHECK_INTERVAL: health, pods, devices, the node; seconds */
    double scrape_s;         /* the monitor config's scrape_interval: metrics; 0: interval_s */
    uint64_t ecc_threshold;  /* MEMORY_ERROR_THRESHOLD */
    uint32_t temp_threshold; /* TEMPERATURE_THRESHOLD, Celsius */
    bool auto_cordon;        /* AUTO_CORDON */
    double xid_hold_s;       /* an XID keeps its GPU Unhealthy this long */
    int nignore;
    uint64_t ignore_xids[16]; /* on top of NVIDIA's defaults */
    int metrics_port;         /* 9400; 0: no HTTP */
    const char *metrics_bind;
    struct gs_monitor_config mon; /* the article's gpu-monitor-config: metrics, labels */
    bool dcgm_names;
    const struct gs_migparted *mig; /* mig-parted config (NULL: no MIG manager) */
    bool mig_dry_run;
    bool mig_force; /* destroy MIG instances pods hold (default: the config fails instead) */
    const struct gs_dpconfig *dp; /* device-plugin config (sharing, MIG strategy); may be NULL */
    const char *pods_file;        /* pod devices without a cluster (JSON) */
    const char *dp_dir;           /* kubelet device-plugin directory; NULL: no device plugin */
    const char *podres_socket;    /* the kubelet's pod-resources socket; NULL: not read */
    const char *proc_root;        /* the host's /proc (hostPID), for the pods of GPU processes;
                                     NULL: "/proc" */
    double max_seconds;           /* stop after this long (0: never); for benchmarks */
    /* the DRA driver gpu.gpusched.io (dra.h): ResourceSlices, the kubelet's DRA plugin */
    bool dra;
    const char *dra_plugins_dir;  /* NULL: /var/lib/kubelet/plugins */
    const char *dra_registry_dir; /* NULL: /var/lib/kubelet/plugins_registry */
    const char *cdi_dir;          /* NULL: /var/run/cdi */
    bool dra_dynamic_mig;         /* partitionable GPUs, MIG instances made at prepare */
    /* MPS clients: replicas under the device-plugin config's sharing.mps, and fractions */
    bool fractions;          /* gpusched.io/gpu-milli on whole GPUs not otherwise shared */
    const char *mps_control; /* nvidia-cuda-mps-control (a path, or looked up in PATH) */
    const char *mps_root;    /* NULL: the device-plugin config's mpsRoot, else /run/nvidia/mps */
    double mps_timeout_s;    /* an unanswered control command: the daemon hangs; 0: 5 s */
    double mps_interval_s;   /* between checks of the daemons; 0: 5 s */
};

struct gs_error;
struct gs_buf;

/* Read the article's gpu-monitor-config (gpu-metrics.json, or the ConfigMap carrying it:
 * metrics by the article's or DCGM's names, scrape_interval, labels) into o->mon and
 * o->scrape_s (o->interval_s, the health checks', is left alone). Returns 0, or GS_EINVAL with
 * file:line and the field (o untouched). */
int gs_agent_monitor_config(const char *path, struct gs_agent_opts *o, struct gs_error *err);
/* Runs until *stop (0) or a fatal error. kc may be NULL (no cluster). Takes neither. */
int gs_agent_run(struct gs_gpu_backend *b, struct gs_kube_client *kc, const struct gs_agent_opts *o,
                 volatile int *stop, struct gs_error *err);
/* One round of the loop without a cluster (the GPUs' readings, their processes and the pods
 * these run in, pods from o->pods_file) and the /metrics page the agent would then serve,
 * appended to out: what a scrape of `agent run` shows, for tests and tools. Changes nothing
 * on the GPUs (the backend's MIG layout is read, not applied). Returns 0, GS_ENOMEM, or the
 * Prometheus writer's error. Not thread-safe (one call at a time, as the loop's). */
int gs_agent_scrape(struct gs_gpu_backend *b, const struct gs_agent_opts *o, struct gs_buf *out);
/* What the backend sees, as text (agent inspect): GPUs, MIG mode, profiles and placements
 * compared with the catalog, instances, health readings. Changes nothing. Returns the number
 * of profile mismatches with the catalog. */
int gs_agent_inspect(struct gs_gpu_backend *b, char *out, size_t size);
/* Parse a gpusched.io/devices annotation into GPU indexes (and MIG starts, -1 otherwise);
 * returns how many. */
int gs_agent_devices(const char *ann, int *gpu, int *mig_start, int cap);

#endif
