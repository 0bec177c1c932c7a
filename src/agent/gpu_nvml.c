/* gpu_nvml.c - the NVML backend, through dlopen("libnvidia-ml.so.1").
 *
 * The declarations below restate the few NVML types and calls used (nvml.h, NVML API
 * reference); nothing of the CUDA toolkit is needed to build. Every symbol is looked up at
 * open; a node without the library or with a driver that fails nvmlInit has no GPUs, and the
 * reason is returned for the log. MIG changes (mode, create, destroy) are implemented for the
 * MIG manager; inspection never calls them. */
#include "gpu.h"

#include "../base/error.h"
#include "../base/log.h"

#include <dlfcn.h>
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
#define NVML_CI_ENGINE_SHARED    0
#define NVML_ERROR_TIMEOUT       10
#define NVML_ERROR_NOT_SUPPORTED 3

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
};

struct nvml {
    void *lib;
    struct sym s;
    unsigned int n;
    nvmlDevice_t dev[GS_AGENT_MAX_GPUS];
    struct gs_gpu_info info[GS_AGENT_MAX_GPUS];
    nvmlEventSet_t events;
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

static void n_close(struct gs_gpu_backend *b)
{
    struct nvml *x = b->impl;
    if (x) {
        if (x->s.shutdown)
            x->s.shutdown();
        dlclose(x->lib);
        free(x);
    }
    free(b);
}

static const struct gs_gpu_ops nvml_ops = {
    "nvml",         n_count,      n_info,        n_metrics, n_mig_list, n_mig_profiles,
    n_mig_set_mode, n_mig_create, n_mig_destroy, n_xids,    n_close,
};

#define LOOK(field, sym)                                                                           \
    do {                                                                                           \
        *(void **)&x->s.field = dlsym(x->lib, sym);                                                \
        if (!x->s.field) {                                                                         \
            snprintf(why, why_size, "libnvidia-ml.so.1 has no %s: driver too old", sym);           \
            goto none;                                                                             \
        }                                                                                          \
    } while (0)

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
        unsigned int cur, pend;
        r = x->s.mig_mode(x->dev[i], &cur, &pend);
        in->mig_capable = r == 0;
        in->mig_enabled = r == 0 && cur == 1;
        in->mig_pending = r == 0 && cur != pend;
        if (x->events)
            x->s.ev_register(x->dev[i], NVML_EVENT_TYPE_XID, x->events);
    }
    b->impl = x;
    return 0;
none:
    dlclose(x->lib);
    free(x);
    return 0;
}
