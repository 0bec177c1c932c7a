/* gpu_nvml.c - the NVML backend, through dlopen("libnvidia-ml.so.1").
 *
 * The declarations below restate the few NVML types and calls used (nvml.h, NVML API
 * reference); nothing of the CUDA toolkit is needed to build. Every symbol is looked up at
 * open; a node without the library or with a driver that fails nvmlInit has no GPUs, and the
 * reason is returned for the log. MIG changes (mode, create, destroy) are implemented for the
 * MIG manager; inspection never calls them.
 * What gives pods their own readings is optional: a driver without a symbol, or a call that
 * answers NVML_ERROR_NOT_SUPPORTED, means "not measured", never 0 and never an error.
 *   - a MIG instance's utilization: GPM (nvmlGpmQueryDeviceSupport; Hopper and newer, not
 *     A100 or A30), the SM-utilization metric between the instance's sample of the previous
 *     call and this one's (nvmlGpmMigSampleGet, nvmlGpmMetricsGet): the first call for an
 *     instance has nothing to compare with and measures nothing;
 *   - a MIG instance's memory: its MIG device handle's memory info;
 *   - processes: nvmlDeviceGetComputeRunningProcesses_v3 and, for MPS clients,
 *     nvmlDeviceGetMPSComputeRunningProcesses_v3 (PID, memory, GPU instance), and the SM
 *     utilization samples of nvmlDeviceGetProcessUtilization since the newest one seen by
 *     the previous call (none in MIG mode, where NVML offers none).
 * Links, read once at open and optional as well: each GPU's NUMA node
 * (nvmlDeviceGetNumaNodeId, else the PCI device's numa_node in sysfs), its PCIe path (the
 * device's place under /sys/devices, from the root complex down), and its NVLink links
 * (nvmlDeviceGetNvLinkState for each link, nvmlDeviceGetNvLinkRemotePciInfo_v2 for what the
 * active ones reach: another GPU is a peer; anything else, an NVSwitch, through which every
 * GPU with switch links reaches every other with the fewer links of the two). */
#include "gpu.h"

#include "../base/error.h"
#include "../base/log.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t; /* NVML_SUCCESS 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned int id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount,
        copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;
typedef struct {
    unsigned int start, size;
} nvmlGpuInstancePlacement_t;
typedef struct {
    nvmlDevice_t device;
    unsigned int id, profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;
typedef struct {
    unsigned int id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
        sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define NVML_TEMPERATURE_GPU            0
#define NVML_CLOCK_SM                   1
#define NVML_CLOCK_MEM                  2
#define NVML_MEMORY_ERROR_TYPE_CORR     0
#define NVML_MEMORY_ERROR_TYPE_UNCORR   1
#define NVML_VOLATILE_ECC               0
#define NVML_EVENT_TYPE_XID             0x0000000000000008ULL
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x0F
#define NVML_CI_PROFILE_FULL_GI                                                                    \
    7 /* NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE is 7: used                                          \
       * through GetComputeInstanceProfileInfo by slices */
#define NVML_CI_ENGINE_SHARED        0
#define NVML_ERROR_TIMEOUT           10
#define NVML_ERROR_NOT_SUPPORTED     3
#define NVML_ERROR_NOT_FOUND         6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFULL /* usedGpuMemory unknown */

/* nvmlDeviceGetComputeRunningProcesses_v3 (nvmlProcessInfo_v2_t, which v3 takes) */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
    unsigned int gpuInstanceId;       /* 0xFFFFFFFF when not in MIG mode */
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU timestamp, microseconds */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

/* GPM (nvml.h "GPM Structs"). The metrics array is as long as NVML 13's header makes it
 * (NVML_GPM_METRIC_MAX 477; 98 in 12.0, same struct version): the library reads the
 * numMetrics entries asked for, and a longer array than its own is harmless. */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;
#define NVML_GPM_METRIC_SM_UTIL      2 /* percentage of SMs that were busy, 0.0 - 100.0 */
#define NVML_GPM_METRIC_MAX          477
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION     1
typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName, *longName, *unit;
    } metricInfo;
} nvmlGpmMetric_t;
typedef struct {
    unsigned int version, numMetrics;
    nvmlGpmSample_t sample1, sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
typedef struct {
    unsigned int version, isSupportedDevice;
} nvmlGpmSupport_t;

struct sym {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long *);
    nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned int *, unsigned int *);
    nvmlReturn_t (*cc)(nvmlDevice_t, int *, int *);
    nvmlReturn_t (*set_mig_mode)(nvmlDevice_t, unsigned int, nvmlReturn_t *);
    nvmlReturn_t (*gi_profile)(nvmlDevice_t, unsigned int, nvmlGpuInstanceProfileInfo_t *);
    nvmlReturn_t (*gi_placements)(nvmlDevice_t, unsigned int, nvmlGpuInstancePlacement_t *,
                                  unsigned int *);
    nvmlReturn_t (*gi_list)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *, unsigned int *);
    nvmlReturn_t (*gi_info)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *);
    nvmlReturn_t (*gi_create)(nvmlDevice_t, unsigned int, const nvmlGpuInstancePlacement_t *,
                              nvmlGpuInstance_t *);
    nvmlReturn_t (*gi_destroy)(nvmlGpuInstance_t);
    nvmlReturn_t (*gi_by_id)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *);
    nvmlReturn_t (*ci_profile)(nvmlGpuInstance_t, unsigned int, unsigned int,
                               nvmlComputeInstanceProfileInfo_t *);
    nvmlReturn_t (*ci_create)(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *);
    nvmlReturn_t (*ci_list)(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *,
                            unsigned int *);
    nvmlReturn_t (*ci_destroy)(nvmlComputeInstance_t);
    nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*mig_max)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*mig_gi_id)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*ev_create)(nvmlEventSet_t *);
    nvmlReturn_t (*ev_register)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
    nvmlReturn_t (*ev_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
    /* optional: NULL where the driver lacks them (not measured) */
    nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
    nvmlReturn_t (*mps_procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
    nvmlReturn_t (*proc_util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                              unsigned long long);
    nvmlReturn_t (*gpm_support)(nvmlDevice_t, nvmlGpmSupport_t *);
    nvmlReturn_t (*gpm_alloc)(nvmlGpmSample_t *);
    nvmlReturn_t (*gpm_free)(nvmlGpmSample_t);
    nvmlReturn_t (*gpm_mig_sample)(nvmlDevice_t, unsigned int, nvmlGpmSample_t);
    nvmlReturn_t (*gpm_metrics)(nvmlGpmMetricsGet_t *);
    nvmlReturn_t (*numa)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*nvl_state)(nvmlDevice_t, unsigned int, int *);
    nvmlReturn_t (*nvl_remote)(nvmlDevice_t, unsigned int, nvmlPciInfo_t *);
};

/* The GPM sample a MIG instance's last reading ended with. */
struct gpm_slot {
    uint32_t gi_id;
    bool have;     /* s holds that instance's sample */
    uint64_t used; /* tick of the last use, to recycle the slot of a destroyed instance */
    nvmlGpmSample_t s;
};

struct nvml {
    void *lib;
    struct sym s;
    unsigned int n;
    nvmlDevice_t dev[GS_AGENT_MAX_GPUS];
    struct gs_gpu_info info[GS_AGENT_MAX_GPUS];
    nvmlEventSet_t events;
    bool gpm[GS_AGENT_MAX_GPUS]; /* GPM offered on that GPU */
    struct gpm_slot slot[GS_AGENT_MAX_GPUS][GS_AGENT_MAX_INST];
    nvmlGpmSample_t spare; /* the sample being taken */
    uint64_t tick;
    unsigned long long util_seen[GS_AGENT_MAX_GPUS]; /* newest process sample read */
    nvmlGpmMetricsGet_t mg;                          /* ~19 KiB: not on the stack */
};

static const char *nerr(struct nvml *x, nvmlReturn_t r)
{
    return x->s.error_string ? x->s.error_string(r) : "NVML error";
}

static int n_count(struct gs_gpu_backend *b)
{
    struct nvml *x = b->impl;
    return x ? (int)x->n : 0;
}

static int n_info(struct gs_gpu_backend *b, int i, struct gs_gpu_info *out)
{
    struct nvml *x = b->impl;
    if (!x || i < 0 || i >= (int)x->n)
        return GS_ENOTFOUND;
    *out = x->info[i];
    unsigned int cur = 0, pend = 0;
    if (x->s.mig_mode && x->s.mig_mode(x->dev[i], &cur, &pend) == 0) {
        out->mig_enabled = cur == 1;
        out->mig_pending = pend != cur;
    }
    return 0;
}

static int n_metrics(struct gs_gpu_backend *b, int i, struct gs_gpu_metrics *out)
{
    struct nvml *x = b->impl;
    if (!x || i < 0 || i >= (int)x->n)
        return GS_ENOTFOUND;
    memset(out, 0, sizeof(*out));
    nvmlDevice_t d = x->dev[i];
    nvmlUtilization_t u;
    if (x->s.util(d, &u) == 0) { /* not supported in MIG mode: stays 0 */
        out->util_pct = u.gpu;
        out->mem_util_pct = u.memory;
    }
    nvmlMemory_t m;
    if (x->s.memory(d, &m) == 0) {
        out->mem_used = m.used;
        out->mem_total = m.total;
    }
    unsigned int v;
    if (x->s.power(d, &v) == 0)
        out->power_w = v / 1000.0;
    if (x->s.temp(d, NVML_TEMPERATURE_GPU, &v) == 0)
        out->temp_c = v;
    if (x->s.clock(d, NVML_CLOCK_SM, &v) == 0)
        out->sm_clock_mhz = v;
    if (x->s.clock(d, NVML_CLOCK_MEM, &v) == 0)
        out->mem_clock_mhz = v;
    unsigned long long e;
    if (x->s.ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORR, NVML_VOLATILE_ECC, &e) == 0)
        out->ecc_uncorrected = e;
    if (x->s.ecc(d, NVML_MEMORY_ERROR_TYPE_CORR, NVML_VOLATILE_ECC, &e) == 0)
        out->ecc_corrected = e;
    return 0;
}

static int n_mig_list(struct gs_gpu_backend *b, int i, struct gs_mig_inst *out, int cap)
{
    struct nvml *x = b->impl;
    if (!x || i < 0 || i >= (int)x->n)
        return GS_ENOTFOUND;
    if (!x->info[i].mig_capable)
        return 0;
    int n = 0;
    for (unsigned int pi = 0; pi < NVML_GPU_INSTANCE_PROFILE_COUNT && n < cap; pi++) {
        nvmlGpuInstanceProfileInfo_t pinfo;
        memset(&pinfo, 0, sizeof(pinfo));
        if (x->s.gi_profile(x->dev[i], pi, &pinfo) != 0)
            continue;
        nvmlGpuInstance_t gis[8];
        unsigned int cnt = 8;
        if (x->s.gi_list(x->dev[i], pinfo.id, gis, &cnt) != 0)
            continue;
        for (unsigned int k = 0; k < cnt && n < cap; k++) {
            nvmlGpuInstanceInfo_t gi;
            if (x->s.gi_info(gis[k], &gi) != 0)
                continue;
            struct gs_mig_inst *o = &out[n++];
            memset(o, 0, sizeof(*o));
            o->gi_id = gi.id;
            o->profile_id = gi.profileId;
            /* NVML units to memory slices (RTX PRO 6000 Blackwell places in thirds) */
            const struct gs_gpu_model *gm = gs_catalog_get(x->info[i].model);
            unsigned unit = gm && gm->placement_unit > 1 ? gm->placement_unit : 1;
            int sl = gm ? gs_catalog_slice_of_nvml(x->info[i].model, gi.placement.start) : -1;
            o->start = sl >= 0 ? (uint32_t)sl : gi.placement.start;
            o->size = gi.placement.size / unit;
        }
    }
    /* MIG device UUIDs, matched to their GPU instance */
    unsigned int max = 0;
    if (x->s.mig_max && x->s.mig_max(x->dev[i], &max) == 0)
        for (unsigned int k = 0; k < max; k++) {
            nvmlDevice_t md;
            unsigned int gid;
            if (x->s.mig_handle(x->dev[i], k, &md) != 0 || x->s.mig_gi_id(md, &gid) != 0)
                continue;
            for (int q = 0; q < n; q++)
                if (out[q].gi_id == gid)
                    x->s.uuid(md, out[q].uuid, sizeof(out[q].uuid));
        }
    return n;
}

static int n_mig_profiles(struct gs_gpu_backend *b, int i, struct gs_gpu_profile *out, int cap)
{
    struct nvml *x = b->impl;
    if (!x || i < 0 || i >= (int)x->n)
        return GS_ENOTFOUND;
    int n = 0;
    for (unsigned int pi = 0; pi < NVML_GPU_INSTANCE_PROFILE_COUNT && n < cap; pi++) {
        nvmlGpuInstanceProfileInfo_t info;
        memset(&info, 0, sizeof(info));
        if (x->s.gi_profile(x->dev[i], pi, &info) != 0)
            continue; /* this profile index does not exist on the GPU */
        struct gs_gpu_profile *o = &out[n++];
        memset(o, 0, sizeof(*o));
        o->id = info.id;
        o->compute = info.sliceCount;
        o->max_count = info.instanceCount;
        o->sms = info.multiprocessorCount;
        o->mem_mib = info.memorySizeMB;
        nvmlGpuInstancePlacement_t pl[8];
        unsigned int cnt = 8;
        const struct gs_gpu_model *gm = gs_catalog_get(x->info[i].model);
        unsigned unit = gm && gm->placement_unit > 1 ? gm->placement_unit : 1;
        if (x->s.gi_placements(x->dev[i], info.id, pl, &cnt) == 0)
            for (unsigned int k = 0; k < cnt && k < 8; k++) {
                /* NVML units to memory slices (RTX PRO 6000 Blackwell places in thirds) */
                int sl =
                    gm ? gs_catalog_slice_of_nvml(x->info[i].model, pl[k].start) : (int)pl[k].start;
                if (sl >= 0 && sl < 8)
                    o->start_mask |= (uint8_t)(1u << sl);
                o->mem_slices = pl[k].size / unit;
            }
    }
    return n;
}

static int n_mig_set_mode(struct gs_gpu_backend *b, int i, bool enable)
{
    struct nvml *x = b->impl;
    if (!x || i < 0 || i >= (int)x->n)
        return GS_ENOTFOUND;
    nvmlReturn_t act = 0;
    nvmlReturn_t r = x->s.set_mig_mode(x->dev[i], enable ? 1 : 0, &act);
    if (r != 0) {
        GS_WARN("gpu", "GPU %d: set MIG mode: %s", i, nerr(x, r));
        return GS_EIO;
    }
    return 0;
}

static int n_mig_create(struct gs_gpu_backend *b, int i, uint32_t profile_id, uint32_t start,
                        struct gs_mig_inst *out)
{
    struct nvml *x = b->impl;
    if (!x || i < 0 || i >= (int)x->n)
        return GS_ENOTFOUND;
    const struct gs_gpu_model *m = gs_catalog_get(x->info[i].model);
    int p = gs_gpu_profile_index(x->info[i].model, profile_id);
    if (!m || p < 0)
        return GS_EINVAL;
    unsigned nstart, nsize;
    gs_catalog_nvml_placement(x->info[i].model, p, start, &nstart, &nsize);
    nvmlGpuInstancePlacement_t pl = {nstart, nsize};
    nvmlGpuInstance_t gi;
    nvmlReturn_t r = x->s.gi_create(x->dev[i], profile_id, &pl, &gi);
    if (r != 0) {
        GS_WARN("gpu", "GPU %d: create GPU instance %u at %u: %s", i, profile_id, start,
                nerr(x, r));
        return GS_EIO;
    }
    /* one compute instance over the whole GPU instance: the CI profile with its slices */
    for (unsigned int ci = 0; ci < 8; ci++) {
        nvmlComputeInstanceProfileInfo_t cinfo;
        if (x->s.ci_profile(gi, ci, NVML_CI_ENGINE_SHARED, &cinfo) != 0 ||
            cinfo.sliceCount != m->profiles[p].compute)
            continue;
        nvmlComputeInstance_t c;
        if ((r = x->s.ci_create(gi, cinfo.id, &c)) != 0) {
            GS_WARN("gpu", "GPU %d: create compute instance: %s", i, nerr(x, r));
            x->s.gi_destroy(gi);
            return GS_EIO;
        }
        break;
    }
    if (out) {
        nvmlGpuInstanceInfo_t info;
        memset(out, 0, sizeof(*out));
        if (x->s.gi_info(gi, &info) == 0) {
            out->gi_id = info.id;
            out->profile_id = info.profileId;
            out->start = info.placement.start;
            out->size = info.placement.size;
        }
    }
    return 0;
}

static int n_mig_destroy(struct gs_gpu_backend *b, int i, uint32_t gi_id)
{
    struct nvml *x = b->impl;
    if (!x || i < 0 || i >= (int)x->n)
        return GS_ENOTFOUND;
    nvmlGpuInstance_t gi;
    if (x->s.gi_by_id(x->dev[i], gi_id, &gi) != 0)
        return GS_ENOTFOUND;
    for (unsigned int ci = 0; ci < 8; ci++) {
        nvmlComputeInstanceProfileInfo_t cinfo;
        if (x->s.ci_profile(gi, ci, NVML_CI_ENGINE_SHARED, &cinfo) != 0)
            continue;
        nvmlComputeInstance_t cis[8];
        unsigned int cnt = 8;
        if (x->s.ci_list(gi, cinfo.id, cis, &cnt) != 0)
            continue;
        for (unsigned int k = 0; k < cnt; k++) {
            nvmlReturn_t r = x->s.ci_destroy(cis[k]);
            if (r != 0) {
                GS_WARN("gpu", "GPU %d: destroy compute instance of GI %u: %s", i, gi_id,
                        nerr(x, r));
                return GS_EINVAL; /* in use */
            }
        }
    }
    nvmlReturn_t r = x->s.gi_destroy(gi);
    if (r != 0) {
        GS_WARN("gpu", "GPU %d: destroy GPU instance %u: %s", i, gi_id, nerr(x, r));
        return GS_EINVAL;
    }
    return 0;
}

static int n_xids(struct gs_gpu_backend *b, int timeout_ms, int *gpu, uint64_t *xid, int cap)
{
    struct nvml *x = b->impl;
    if (!x || !x->events || cap <= 0)
        return 0;
    int n = 0;
    for (unsigned int wait = (unsigned int)timeout_ms; n < cap; wait = 0) {
        nvmlEventData_t ev;
        if (x->s.ev_wait(x->events, &ev, wait) != 0)
            break;
        if (!(ev.eventType & NVML_EVENT_TYPE_XID))
            continue;
        int g = -1;
        for (unsigned int k = 0; k < x->n; k++)
            if (x->dev[k] == ev.device)
                g = (int)k;
        gpu[n] = g;
        xid[n++] = ev.eventData;
    }
    return n;
}

/* A MIG device handle of GPU i's GPU instance gi_id, or NULL. */
static nvmlDevice_t mig_device(struct nvml *x, int i, uint32_t gi_id)
{
    unsigned int max = 0;
    if (x->s.mig_max(x->dev[i], &max) != 0)
        return NULL;
    for (unsigned int k = 0; k < max; k++) {
        nvmlDevice_t md;
        unsigned int gid;
        if (x->s.mig_handle(x->dev[i], k, &md) == 0 && x->s.mig_gi_id(md, &gid) == 0 &&
            gid == gi_id)
            return md;
    }
    return NULL;
}

/* GPM's SM utilization of GPU i's instance gi_id since the previous call for it; false when
 * not measured (no GPM, the first call, an error). */
static bool gpm_util(struct nvml *x, int i, uint32_t gi_id, uint32_t *pct)
{
    if (!x->gpm[i] || !x->s.gpm_mig_sample || !x->s.gpm_metrics)
        return false;
    if (!x->spare && x->s.gpm_alloc(&x->spare) != 0) {
        x->spare = NULL;
        return false;
    }
    struct gpm_slot *sl = NULL, *lru = NULL;
    for (int k = 0; k < GS_AGENT_MAX_INST && !sl; k++) {
        struct gpm_slot *c = &x->slot[i][k];
        if (c->have && c->gi_id == gi_id)
            sl = c;
        else if (!lru || c->used < lru->used)
            lru = c;
    }
    if (!sl) {
        sl = lru;
        sl->have = false;
        sl->gi_id = gi_id;
    }
    sl->used = ++x->tick;
    if (x->s.gpm_mig_sample(x->dev[i], gi_id, x->spare) != 0) {
        sl->have = false;
        return false;
    }
    bool ok = false;
    if (sl->have) {
        nvmlGpmMetricsGet_t *mg = &x->mg;
        memset(mg, 0, sizeof(*mg));
        mg->version = NVML_GPM_METRICS_GET_VERSION;
        mg->numMetrics = 1;
        mg->sample1 = sl->s;
        mg->sample2 = x->spare;
        mg->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
        if (x->s.gpm_metrics(mg) == 0 && mg->metrics[0].nvmlReturn == 0) {
            double v = mg->metrics[0].value;
            *pct = v <= 0 ? 0 : v >= 100 ? 100 : (uint32_t)(v + 0.5);
            ok = true;
        }
    }
    /* this sample starts the next interval; the old one becomes the spare */
    nvmlGpmSample_t t = sl->s;
    sl->s = x->spare;
    x->spare = t;
    sl->have = true;
    return ok;
}

static int n_mig_metrics(struct gs_gpu_backend *b, int i, uint32_t gi_id,
                         struct gs_mig_metrics *out)
{
    struct nvml *x = b->impl;
    memset(out, 0, sizeof(*out));
    if (!x || i < 0 || i >= (int)x->n)
        return GS_ENOTFOUND;
    nvmlDevice_t md = mig_device(x, i, gi_id);
    if (!md)
        return GS_ENOTFOUND;
    nvmlMemory_t m;
    if (x->s.memory(md, &m) == 0) {
        out->mem_ok = true;
        out->mem_used = m.used;
        out->mem_total = m.total;
    }
    out->util_ok = gpm_util(x, i, gi_id, &out->util_pct);
    return 0;
}

/* Processes of one list call (compute or MPS) appended to out[*n..cap), skipping PIDs there
 * already. Returns false when the call is not offered. */
static bool list_procs(struct nvml *x, int i,
                       nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *),
                       struct gs_gpu_proc *out, int *n, int cap)
{
    if (!fn)
        return false;
    nvmlProcessInfo_t local[GS_AGENT_MAX_PROCS], *buf = local;
    unsigned int cnt = GS_AGENT_MAX_PROCS;
    nvmlReturn_t r = fn(x->dev[i], &cnt, buf);
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) { /* more than we keep: read all, keep the first */
        cnt += 16;
        buf = calloc(cnt, sizeof(*buf));
        r = buf ? fn(x->dev[i], &cnt, buf) : NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (r == 0)
        for (unsigned int k = 0; k < cnt && *n < cap; k++) {
            bool dup = false;
            for (int j = 0; j < *n && !dup; j++)
                dup = out[j].pid == buf[k].pid;
            if (dup)
                continue;
            struct gs_gpu_proc *p = &out[(*n)++];
            memset(p, 0, sizeof(*p));
            p->pid = buf[k].pid;
            p->gi_id = x->info[i].mig_enabled ? buf[k].gpuInstanceId : GS_GPU_NO_INSTANCE;
            p->mem_ok = buf[k].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE_ULL;
            p->mem_used = p->mem_ok ? buf[k].usedGpuMemory : 0;
        }
    if (buf != local)
        free(buf);
    return r == 0;
}

/* SM utilization per process from the samples newer than the last call's newest, averaged
 * per PID, into out[0..n) (util_ok set); PIDs sampled but not listed are added. False when
 * not offered (MIG mode: NOT_SUPPORTED). */
static bool proc_samples(struct nvml *x, int i, struct gs_gpu_proc *out, int *n, int cap)
{
    if (!x->s.proc_util)
        return false;
    unsigned int cnt = 0;
    nvmlReturn_t r = x->s.proc_util(x->dev[i], NULL, &cnt, x->util_seen[i]);
    if (r == NVML_ERROR_NOT_FOUND) { /* no sample since: every process idle */
        for (int k = 0; k < *n; k++)
            out[k].util_ok = true;
        return true;
    }
    if (r != NVML_ERROR_INSUFFICIENT_SIZE && r != 0)
        return false;
    nvmlProcessUtilizationSample_t *sm = cnt ? calloc(cnt, sizeof(*sm)) : NULL;
    if (cnt && !sm)
        return false;
    if (cnt && (r = x->s.proc_util(x->dev[i], sm, &cnt, x->util_seen[i])) != 0 &&
        r != NVML_ERROR_NOT_FOUND) {
        free(sm);
        return false;
    }
    if (r == NVML_ERROR_NOT_FOUND)
        cnt = 0;
    uint64_t sum[GS_AGENT_MAX_PROCS] = {0};
    uint32_t nsum[GS_AGENT_MAX_PROCS] = {0};
    for (unsigned int k = 0; k < cnt; k++) {
        int j;
        for (j = 0; j < *n && out[j].pid != sm[k].pid; j++)
            ;
        if (j == *n) {
            if (*n >= cap)
                continue;
            memset(&out[j], 0, sizeof(out[j]));
            out[j].pid = sm[k].pid;
            out[j].gi_id = GS_GPU_NO_INSTANCE;
            (*n)++;
        }
        sum[j] += sm[k].smUtil;
        nsum[j]++;
        if (sm[k].timeStamp > x->util_seen[i])
            x->util_seen[i] = sm[k].timeStamp;
    }
    free(sm);
    for (int k = 0; k < *n; k++) {
        uint64_t v = nsum[k] ? (sum[k] + nsum[k] / 2) / nsum[k] : 0;
        out[k].util_ok = true;
        out[k].util_pct = v > 100 ? 100 : (uint32_t)v;
    }
    return true;
}

static int n_processes(struct gs_gpu_backend *b, int i, struct gs_gpu_proc *out, int cap)
{
    struct nvml *x = b->impl;
    if (!x || i < 0 || i >= (int)x->n)
        return GS_ENOTFOUND;
    if (cap > GS_AGENT_MAX_PROCS)
        cap = GS_AGENT_MAX_PROCS;
    int n = 0;
    bool listed = list_procs(x, i, x->s.procs, out, &n, cap);
    listed |= list_procs(x, i, x->s.mps_procs, out, &n, cap);
    if (!listed)
        return GS_ENOTFOUND;
    if (!x->info[i].mig_enabled)
        proc_samples(x, i, out, &n, cap);
    return n;
}

static void n_close(struct gs_gpu_backend *b)
{
    struct nvml *x = b->impl;
    if (x) {
        for (int i = 0; x->s.gpm_free && i < GS_AGENT_MAX_GPUS; i++)
            for (int k = 0; k < GS_AGENT_MAX_INST; k++)
                if (x->slot[i][k].s)
                    x->s.gpm_free(x->slot[i][k].s);
        if (x->spare && x->s.gpm_free)
            x->s.gpm_free(x->spare);
        if (x->s.shutdown)
            x->s.shutdown();
        dlclose(x->lib);
        free(x);
    }
    free(b);
}

static const struct gs_gpu_ops nvml_ops = {
    .name = "nvml",
    GS_GPU_OPS(n),
};

#define NVML_NVLINK_MAX_LINKS 18

/* GPU i's sysfs PCI name ("0000:3b:00.0"), its NUMA node and its PCIe path from sysfs. */
static void sysfs_links(struct gs_gpu_info *in, const nvmlPciInfo_t *pci, bool numa_known)
{
    char dev[64], p[128], real[PATH_MAX];
    snprintf(dev, sizeof(dev), "%04x:%02x:%02x.0", pci->domain, pci->bus & 0xff,
             pci->device & 0x1f);
    snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s", dev);
    if (realpath(p, real) && strncmp(real, "/sys/devices/", 13) == 0 &&
        strlen(real + 13) < sizeof(in->pci_path))
        snprintf(in->pci_path, sizeof(in->pci_path), "%s", real + 13);
    snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/numa_node", dev);
    FILE *f = numa_known ? NULL : fopen(p, "r");
    int node = -1;
    if (f && fscanf(f, "%d", &node) == 1 && node >= 0 && node < 256) {
        in->numa_ok = true;
        in->numa = (uint8_t)node;
    }
    if (f)
        fclose(f);
}

/* Every GPU's NUMA node, PCIe path and NVLink links (see the top). */
static void read_links(struct nvml *x)
{
    nvmlPciInfo_t pci[GS_AGENT_MAX_GPUS];
    int sw[GS_AGENT_MAX_GPUS] = {0}; /* links to NVSwitches */
    memset(pci, 0, sizeof(pci));
    for (unsigned int i = 0; i < x->n; i++) {
        struct gs_gpu_info *in = &x->info[i];
        unsigned int node;
        if (x->s.numa && x->s.numa(x->dev[i], &node) == 0 && node < 256) {
            in->numa_ok = true;
            in->numa = (uint8_t)node;
        }
        if (x->s.pci(x->dev[i], &pci[i]) == 0)
            sysfs_links(in, &pci[i], in->numa_ok);
    }
    for (unsigned int i = 0; x->s.nvl_state && x->s.nvl_remote && i < x->n; i++) {
        for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
            int active = 0;
            nvmlPciInfo_t r;
            if (x->s.nvl_state(x->dev[i], l, &active) != 0 || !active ||
                x->s.nvl_remote(x->dev[i], l, &r) != 0)
                continue;
            int peer = -1;
            for (unsigned int j = 0; j < x->n && peer < 0; j++)
                if (j != i && pci[j].domain == r.domain && pci[j].bus == r.bus &&
                    pci[j].device == r.device)
                    peer = (int)j;
            if (peer >= 0 && x->info[i].nvlink[peer] < 255)
                x->info[i].nvlink[peer]++;
            else if (peer < 0)
                sw[i]++;
        }
    }
    for (unsigned int i = 0; i < x->n; i++)
        for (unsigned int j = 0; j < x->n; j++)
            if (i != j && sw[i] && sw[j] && !x->info[i].nvlink[j])
                x->info[i].nvlink[j] = (uint8_t)(sw[i] < sw[j] ? sw[i] : sw[j]);
}

#define LOOK(field, sym)                                                                           \
    do {                                                                                           \
        *(void **)&x->s.field = dlsym(x->lib, sym);                                                \
        if (!x->s.field) {                                                                         \
            snprintf(why, why_size, "libnvidia-ml.so.1 has no %s: driver too old", sym);           \
            goto none;                                                                             \
        }                                                                                          \
    } while (0)
/* a symbol that may be missing: what it gives is then not measured */
#define LOOK_OPTIONAL(field, sym) (*(void **)&x->s.field = dlsym(x->lib, sym))

int gs_gpu_open_nvml(struct gs_gpu_backend **out, char *why, unsigned why_size)
{
    *out = NULL;
    struct gs_gpu_backend *b = calloc(1, sizeof(*b));
    struct nvml *x = calloc(1, sizeof(*x));
    if (!b || !x) {
        free(b);
        free(x);
        return GS_ENOMEM;
    }
    b->ops = &nvml_ops;
    *out = b;
    why[0] = '\0';
    x->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!x->lib) {
        snprintf(why, why_size, "no NVIDIA driver library (libnvidia-ml.so.1: %s): no GPUs",
                 dlerror());
        free(x);
        return 0;
    }
    LOOK(init, "nvmlInit_v2");
    LOOK(shutdown, "nvmlShutdown");
    LOOK(error_string, "nvmlErrorString");
    LOOK(count, "nvmlDeviceGetCount_v2");
    LOOK(handle, "nvmlDeviceGetHandleByIndex_v2");
    LOOK(name, "nvmlDeviceGetName");
    LOOK(uuid, "nvmlDeviceGetUUID");
    LOOK(pci, "nvmlDeviceGetPciInfo_v3");
    LOOK(memory, "nvmlDeviceGetMemoryInfo");
    LOOK(util, "nvmlDeviceGetUtilizationRates");
    LOOK(power, "nvmlDeviceGetPowerUsage");
    LOOK(temp, "nvmlDeviceGetTemperature");
    LOOK(clock, "nvmlDeviceGetClockInfo");
    LOOK(ecc, "nvmlDeviceGetTotalEccErrors");
    LOOK(mig_mode, "nvmlDeviceGetMigMode");
    LOOK_OPTIONAL(cc, "nvmlDeviceGetCudaComputeCapability");
    LOOK(set_mig_mode, "nvmlDeviceSetMigMode");
    LOOK(gi_profile, "nvmlDeviceGetGpuInstanceProfileInfo");
    LOOK(gi_list, "nvmlDeviceGetGpuInstances");
    LOOK(gi_placements, "nvmlDeviceGetGpuInstancePossiblePlacements_v2");
    LOOK(gi_info, "nvmlGpuInstanceGetInfo");
    LOOK(gi_create, "nvmlDeviceCreateGpuInstanceWithPlacement");
    LOOK(gi_destroy, "nvmlGpuInstanceDestroy");
    LOOK(gi_by_id, "nvmlDeviceGetGpuInstanceById");
    LOOK(ci_profile, "nvmlGpuInstanceGetComputeInstanceProfileInfo");
    LOOK(ci_create, "nvmlGpuInstanceCreateComputeInstance");
    LOOK(ci_list, "nvmlGpuInstanceGetComputeInstances");
    LOOK(ci_destroy, "nvmlComputeInstanceDestroy");
    LOOK(mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
    LOOK(mig_max, "nvmlDeviceGetMaxMigDeviceCount");
    LOOK(mig_gi_id, "nvmlDeviceGetGpuInstanceId");
    LOOK(ev_create, "nvmlEventSetCreate");
    LOOK(ev_register, "nvmlDeviceRegisterEvents");
    LOOK(ev_wait, "nvmlEventSetWait_v2");
    LOOK_OPTIONAL(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    LOOK_OPTIONAL(mps_procs, "nvmlDeviceGetMPSComputeRunningProcesses_v3");
    LOOK_OPTIONAL(proc_util, "nvmlDeviceGetProcessUtilization");
    LOOK_OPTIONAL(gpm_support, "nvmlGpmQueryDeviceSupport");
    LOOK_OPTIONAL(gpm_alloc, "nvmlGpmSampleAlloc");
    LOOK_OPTIONAL(gpm_free, "nvmlGpmSampleFree");
    LOOK_OPTIONAL(gpm_mig_sample, "nvmlGpmMigSampleGet");
    LOOK_OPTIONAL(gpm_metrics, "nvmlGpmMetricsGet");
    LOOK_OPTIONAL(numa, "nvmlDeviceGetNumaNodeId");
    LOOK_OPTIONAL(nvl_state, "nvmlDeviceGetNvLinkState");
    LOOK_OPTIONAL(nvl_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    if (!x->s.gpm_alloc || !x->s.gpm_free)
        x->s.gpm_support = NULL; /* GPM needs all of them */
    nvmlReturn_t r = x->s.init();
    if (r != 0) {
        snprintf(why, why_size, "nvmlInit failed (%s): no GPUs", nerr(x, r));
        x->s.shutdown = NULL;
        goto none;
    }
    if ((r = x->s.count(&x->n)) != 0 || x->n > GS_AGENT_MAX_GPUS) {
        snprintf(why, why_size, "nvmlDeviceGetCount: %s", r ? nerr(x, r) : "too many GPUs");
        x->n = 0;
    }
    if (x->s.ev_create(&x->events) != 0)
        x->events = NULL;
    for (unsigned int i = 0; i < x->n; i++) {
        struct gs_gpu_info *in = &x->info[i];
        in->index = (int)i;
        in->model = -1;
        if ((r = x->s.handle(i, &x->dev[i])) != 0) {
            snprintf(why, why_size, "GPU %u: %s", i, nerr(x, r));
            x->n = i;
            break;
        }
        x->s.name(x->dev[i], in->name, sizeof(in->name));
        x->s.uuid(x->dev[i], in->uuid, sizeof(in->uuid));
        nvmlPciInfo_t pci;
        if (x->s.pci(x->dev[i], &pci) == 0)
            in->pci_id = pci.pciDeviceId;
        nvmlMemory_t m;
        if (x->s.memory(x->dev[i], &m) == 0)
            in->mem_mib = m.total >> 20;
        in->model = gs_catalog_find_pci(in->pci_id);
        if (in->model < 0) {
            const char *nm = strncmp(in->name, "NVIDIA ", 7) == 0 ? in->name + 7 : in->name;
            in->model = gs_catalog_find(nm);
        }
        int major = 0, minor = 0;
        if (x->s.cc && x->s.cc(x->dev[i], &major, &minor) == 0 && major > 0 && major < 256 &&
            minor >= 0 && minor < 256) {
            in->cc_major = (uint8_t)major;
            in->cc_minor = (uint8_t)minor;
        }
        unsigned int cur, pend;
        r = x->s.mig_mode(x->dev[i], &cur, &pend);
        in->mig_capable = r == 0;
        in->mig_enabled = r == 0 && cur == 1;
        in->mig_pending = r == 0 && cur != pend;
        if (x->events)
            x->s.ev_register(x->dev[i], NVML_EVENT_TYPE_XID, x->events);
        nvmlGpmSupport_t gs = {NVML_GPM_SUPPORT_VERSION, 0};
        x->gpm[i] =
            x->s.gpm_support && x->s.gpm_support(x->dev[i], &gs) == 0 && gs.isSupportedDevice;
    }
    read_links(x);
    b->impl = x;
    return 0;
none:
    dlclose(x->lib);
    free(x);
    return 0;
}
