/* agent.h - `gpusched agent`: the node agent's loop over one GPU backend.
 *
 * Every interval (CHECK_INTERVAL) it reads each GPU's metrics and the XIDs since the last
 * round, and decides each GPU's health: an XID outside NVIDIA's default ignore list (13, 31,
 * 43, 45, 68, 109, plus --ignore-xids) makes it Unhealthy for xid_hold_s after the last one;
 * a volatile uncorrected ECC count at or over MEMORY_ERROR_THRESHOLD, or a temperature at or
 * over TEMPERATURE_THRESHOLD, makes it Unhealthy while it lasts. With AUTO_CORDON the node is
 * cordoned through the API when a GPU turns Unhealthy (and marked with the annotation
 * gpusched.io/cordoned-by), and uncordoned when all are healthy again only if the agent
 * cordoned it; every action gets an Event on the Node. It publishes GPU feature discovery's
 * labels (nvidia.com/gpu.product, gpu.count, gpu.memory, mig.capable, mig.strategy,
 * gpu.replicas, gpu.sharing-strategy), applies the mig-parted config the node label
 * nvidia.com/mig.config names (state in nvidia.com/mig.config.state: pending, success,
 * failed) and the scheduler's desired layouts (the Node's gpusched.io/mig-desired,
 * formats/migdesired.h; they win over the label on the GPUs they list): exact placements,
 * kept instances keep their UUID, an instance or GPU a pod holds is never destroyed or
 * switched (that GPU waits: mig_state pending in the inventory, tried again every round), an
 * invalid layout is refused whole (mig_state failed, a Warning Event), and the inventory
 * (annotation gpusched.io/inventory, with the generation finished) and the device plugins
 * follow at once. It serves /metrics (the article's metric names with its gpu-monitor-config's
 * labels, per GPU, MIG instance and pod; DCGM names as an option), /healthz and /status
 * (per GPU: health, MIG mode and instances with their UUIDs). A pod's utilization and memory
 * used are its own: a pod holding a whole GPU reads the GPU's; a pod on a MIG instance reads
 * the instance's (no utilization series where the backend does not measure it: A100, A30);
 * pods sharing a GPU (time-slicing, MPS, fractions) read the sum of their processes', whose
 * PIDs the backend reports and the cgroup under proc_root names the pod of (procpod.h,
 * matched to the pods listed by UID).
 * With dp_dir it runs a kubelet device plugin per resource (deviceplugin.h): whole GPUs or
 * their time-slicing/MPS replicas as nvidia.com/gpu, MIG instances as nvidia.com/mig-<profile>
 * (migStrategy mixed) or nvidia.com/gpu (single), Unhealthy while their GPU is.
 * Pods and their devices come from the kubelet's pod-resources API (podres_socket), then from
 * the API (the gpusched.io/devices annotation of pods on the node, for pods the kubelet has
 * not allocated yet) or, without a cluster, from a pods file. Without a kubeconfig it runs health
 * and metrics only.
 * With dra it is also the DRA driver gpu.gpusched.io (dra.h): it publishes the node's
 * ResourceSlices every round (devices of unhealthy GPUs tainted) and serves the kubelet's
 * registration and DRA sockets; the GPU backend is then shared with the driver's thread
 * through gpulock.h, and the devices prepared claims hold count as in use for the MIG
 * manager. */
#ifndef GS_AGENT_H
#define GS_AGENT_H

#include "../formats/dpconfig.h"
#include "../formats/migparted.h"
#include "../formats/monitorcfg.h"
#include "../kube/client.h"
#include "gpu.h"

struct gs_agent_opts {
    const char *node;        /* NODE_NAME */
    double interval_s;       /* CHECK_INTERVAL, seconds */
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
};

struct gs_error;
struct gs_buf;

/* Read the article's gpu-monitor-config (gpu-metrics.json, or the ConfigMap carrying it:
 * metrics by the article's or DCGM's names, scrape_interval, labels) into o->mon and
 * o->interval_s. Returns 0, or GS_EINVAL with file:line and the field (o untouched). */
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
