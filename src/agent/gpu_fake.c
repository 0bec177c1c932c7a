/* gpu_fake.c - the fake GPU backend: a JSON file plays the hardware.
 *
 *   {"gpus": [{"model": "H100-80GB", "uuid": "GPU-...", "mig": true, "busy": false,
 *              "instances": [{"profile": "3g.40gb", "start": 0, "busy": false,
 *                             "util": 20, "mem_used_mib": 12000}],
 *              "util": 35, "mem_util": 20, "mem_used_mib": 1000, "power_w": 250,
 *              "temp_c": 50, "sm_clock_mhz": 1410, "mem_clock_mhz": 1593,
 *              "ecc_uncorrected": 0, "ecc_corrected": 0, "xids": [79],
 *              "processes": [{"pid": 4242, "mem_used_mib": 9000, "instance": 1}]}]}
 *
 * Every field is checked: an unknown field, at any level, or one of the wrong type is refused
 * with its path and what was expected, as is a key given twice.
 * MIG mode and instances are read once, at open; afterwards only create and destroy change
 * them, under the real rules, which the instances in the file must obey too: the profile
 * exists on the model, the start is one of its placements, no memory slice is shared, compute
 * slices fit the model's grid, media engines are not shared, and no profile has more
 * instances than its max count in the catalog (NVML's instanceCount: one 1g.10gb+me per A100
 * or H100). An instance marked busy refuses to be destroyed, as NVML does while a process
 * holds it; a GPU marked busy (a process on the whole GPU), or one with a busy instance,
 * refuses a MIG mode change, as NVML requires the GPU idle for one. Busy flags may change
 * while the agent runs. Metrics, ECC counts, temperatures and XIDs are re-read whenever the file's
 * modification time changes; the XIDs listed are delivered once per change.
 * An instance's own readings, "util" (0..100) and "mem_used_mib" (up to the profile's memory),
 * are optional (0) and re-read likewise (matched by start, as busy is); as NVML, the fake
 * measures an instance's utilization only where GPM is offered (Hopper and newer): on an
 * Ampere GPU (A100, A30) it is not measured, and a "util" there is refused. "processes" lists
 * the GPU's compute processes, also re-read: "pid" (1..4194304, once per GPU), "util" (SM
 * utilization 0..100, optional: 0), "mem_used_mib" (optional: 0) and, on a GPU in MIG mode,
 * "instance", the GPU instance ID it runs in (required there, refused elsewhere; the fake
 * numbers the instances of the file from 1 in their order). As NVML, no per-process
 * utilization is offered in MIG mode, so "util" with "instance" is refused. At most
 * GS_AGENT_MAX_PROCS processes per GPU. A GPU's compute capability is its model's (P100 6.0,
 * V100 7.0, T4 7.5, ...: gs_gpu_compute_capability), as NVML reports it.
 * "topology", read at open, links the GPUs as a server board does:
 *   "topology": {"nvlink": "pairs", "links": 4, "numa_nodes": 2}
 * "nvlink" is "none", "pairs" (GPUs 0-1, 2-3, ... each pair NVLink-bridged) or "all" (every
 * GPU to every other through NVSwitch); "links" the NVLink links of each linked pair (1..18:
 * 4 by default for pairs, 18 for all); "numa_nodes" (1..8, default 1) splits the GPUs in
 * index order over as many NUMA nodes, one PCIe root complex each. Each pair of GPUs sits
 * under one PCIe switch. Without it the GPUs' links are not known (as on a backend that
 * cannot tell). */
#include "gpu.h"

#include "../base/error.h"
#include "../base/log.h"
#include "../core/mig.h"
#include "../core/podmetric.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* An instance's own readings, as the file gives them. */
struct finst {
    bool busy;
    uint32_t util_pct;
    uint64_t mem_used_mib;
};

struct fgpu {
    struct gs_gpu_info info;
    struct gs_gpu_metrics m;
    int ninst;
    struct gs_mig_inst inst[GS_AGENT_MAX_INST];
    struct finst fi[GS_AGENT_MAX_INST]; /* beside inst[] */
    int nproc;
    struct gs_gpu_proc proc[GS_AGENT_MAX_PROCS];
    bool gpu_busy; /* a process holds the whole GPU */
    uint32_t next_gi;
};

struct fake {
    char path[512];
    struct timespec mtime;
    int n;
    struct fgpu g[GS_AGENT_MAX_GPUS];
    int nx;
    int xgpu[64];
    uint64_t xid[64];
};

/* A MIG device UUID derived from its GPU's and the instance id (stable across runs). */
static void mig_uuid(struct gs_mig_inst *in, const char *gpu_uuid)
{
    char gu[96];
    snprintf(gu, sizeof(gu), "%s", gpu_uuid);
    snprintf(in->uuid, sizeof(in->uuid), "MIG-%s-gi%u", gu + 4, in->gi_id);
}

/* The live readings of a GPU object: one row per field, with its bounds and default. */
enum { L_UTIL, L_MEM_UTIL, L_MEM_USED, L_POWER, L_TEMP, L_SM, L_MC, L_ECC_U, L_ECC_C, L_N };
static const struct live_field {
    const char *key;
    double lo, hi, def; /* hi < 0: the model's memory in MiB */
} live_fields[L_N] = {
    [L_UTIL] = {"util", 0, 100, 0},
    [L_MEM_UTIL] = {"mem_util", 0, 100, 0},
    [L_MEM_USED] = {"mem_used_mib", 0, -1, 0},
    [L_POWER] = {"power_w", 0, 2000, 60},
    [L_TEMP] = {"temp_c", 0, 150, 40},
    [L_SM] = {"sm_clock_mhz", 0, 10000, 1400},
    [L_MC] = {"mem_clock_mhz", 0, 20000, 1600},
    [L_ECC_U] = {"ecc_uncorrected", 0, 1e15, 0},
    [L_ECC_C] = {"ecc_corrected", 0, 1e15, 0},
};

/* The other fields of each object of the description. */
static const char *const top_keys[] = {"gpus", "topology", NULL};
static const char *const topo_keys[] = {"nvlink", "links", "numa_nodes", NULL};
static const char *const gpu_keys[] = {"model",     "uuid", "mig",  "instances",
                                       "processes", "xids", "busy", NULL};
static const char *const inst_keys[] = {"profile", "start", "busy", "util", "mem_used_mib", NULL};
static const char *const proc_keys[] = {"pid", "util", "mem_used_mib", "instance", NULL};

/* GPM, which measures a MIG instance's utilization, is Hopper and newer: the Ampere MIG GPUs
 * (A100, A30) offer none (the rule the simulator's HPA follows too, core/podmetric.h). */
static bool gpm_offered(int model)
{
    return gs_podmetric_gpm(model);
}

/* Refuse a field of object o (at path, "" for the top) that is neither in keys nor, when
 * live, a live reading. */
static int check_fields(const json_t *o, const char *const *keys, bool live, const char *file,
                        const char *path, struct gs_error *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        bool known = false;
        for (int k = 0; keys[k] && !known; k++)
            known = strcmp(keys[k], key) == 0;
        for (int k = 0; live && k < L_N && !known; k++)
            known = strcmp(live_fields[k].key, key) == 0;
        if (known)
            continue;
        const char *names[24];
        int n = 0;
        for (int k = 0; keys[k] && n < 24; k++)
            names[n++] = keys[k];
        for (int k = 0; live && k < L_N && n < 24; k++)
            names[n++] = live_fields[k].key;
        char list[320];
        size_t off = 0;
        for (int k = 0; k < n && off < sizeof(list); k++)
            off +=
                (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", k ? ", " : "", names[k]);
        return gs_error_set(err, GS_EINVAL, "%s: %s%s%.64s: unexpected field (expected %s%s)", file,
                            path, *path ? "." : "", key, n > 1 ? "one of: " : "", list);
    }
    return 0;
}

static int num(const json_t *o, const char *key, double lo, double hi, double *out,
               const char *file, int gi, struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_number(v) || json_number_value(v) < lo || json_number_value(v) > hi)
        return gs_error_set(err, GS_EINVAL, "%s: gpus[%d].%s: expected a number in %g..%g", file,
                            gi, key, lo, hi);
    *out = json_number_value(v);
    return 0;
}

/* Optional number o.key in lo..hi (an integer when whole) at path; *out untouched when
 * absent. */
static int num_at(const json_t *o, const char *key, double lo, double hi, bool whole, double *out,
                  const char *file, const char *path, struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!(whole ? json_is_integer(v) : json_is_number(v)) || json_number_value(v) < lo ||
        json_number_value(v) > hi)
        return gs_error_set(err, GS_EINVAL, "%s: %s.%s: expected %s in %.0f..%.0f", file, path, key,
                            whole ? "an integer" : "a number", lo, hi);
    *out = json_number_value(v);
    return 0;
}

/* An instance's own readings (x, at ipath) for instance q of g. */
static int read_inst_live(struct fgpu *g, int q, const json_t *x, const char *file,
                          const char *ipath, struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(g->info.model);
    int p = gs_gpu_profile_index(g->info.model, g->inst[q].profile_id);
    double util = 0, mem = 0;
    int rc;
    if ((rc = num_at(x, "util", 0, 100, false, &util, file, ipath, err)) ||
        (rc = num_at(x, "mem_used_mib", 0, p >= 0 ? m->profiles[p].mem_mib : 0, false, &mem, file,
                     ipath, err)))
        return rc;
    if (json_object_get(x, "util") && !gpm_offered(g->info.model))
        return gs_error_set(err, GS_EINVAL,
                            "%s: %s.util: %s offers no MIG instance utilization (GPM is Hopper "
                            "and newer): leave it out",
                            file, ipath, m->name);
    g->fi[q].util_pct = (uint32_t)util;
    g->fi[q].mem_used_mib = (uint64_t)mem;
    return 0;
}

/* The GPU's processes (gi, its object o at path) into g. */
static int read_procs(struct fgpu *g, const json_t *o, const char *file, const char *path,
                      struct gs_error *err)
{
    const json_t *ps = json_object_get(o, "processes");
    g->nproc = 0;
    if (!ps)
        return 0;
    if (!json_is_array(ps) || json_array_size(ps) > GS_AGENT_MAX_PROCS)
        return gs_error_set(err, GS_EINVAL,
                            "%s: %s.processes: expected a list of at most %d {pid, util, "
                            "mem_used_mib, instance}",
                            file, path, GS_AGENT_MAX_PROCS);
    size_t k;
    const json_t *x;
    json_array_foreach(ps, k, x)
    {
        char ppath[96];
        snprintf(ppath, sizeof(ppath), "%s.processes[%zu]", path, k);
        if (!json_is_object(x))
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s: expected {pid, util, mem_used_mib, "
                                "instance}",
                                file, ppath);
        int rc = check_fields(x, proc_keys, false, file, ppath, err);
        double pid = 0, util = 0, mem = 0, inst = -1;
        if (rc || (rc = num_at(x, "pid", 1, 4194304, true, &pid, file, ppath, err)) ||
            (rc = num_at(x, "util", 0, 100, false, &util, file, ppath, err)) ||
            (rc = num_at(x, "mem_used_mib", 0, (double)g->info.mem_mib, false, &mem, file, ppath,
                         err)) ||
            (rc = num_at(x, "instance", 0, 1e6, true, &inst, file, ppath, err)))
            return rc;
        if (!json_object_get(x, "pid"))
            return gs_error_set(err, GS_EINVAL, "%s: %s.pid: required", file, ppath);
        for (int j = 0; j < g->nproc; j++)
            if (g->proc[j].pid == (uint32_t)pid)
                return gs_error_set(err, GS_EINVAL, "%s: %s.pid: %.0f is listed twice", file, ppath,
                                    pid);
        bool found = false;
        for (int q = 0; q < g->ninst && !found; q++)
            found = inst >= 0 && g->inst[q].gi_id == (uint32_t)inst;
        if (g->info.mig_enabled && !found)
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s.instance: expected the ID of one of the GPU's instances "
                                "(a process on a GPU in MIG mode runs in one)",
                                file, ppath);
        if (!g->info.mig_enabled && inst >= 0)
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s.instance: the GPU is not in MIG mode: leave it out", file,
                                ppath);
        if (g->info.mig_enabled && json_object_get(x, "util"))
            return gs_error_set(err, GS_EINVAL,
                                "%s: %s.util: NVML offers no per-process utilization in MIG mode: "
                                "leave it out",
                                file, ppath);
        struct gs_gpu_proc *pr = &g->proc[g->nproc++];
        memset(pr, 0, sizeof(*pr));
        pr->pid = (uint32_t)pid;
        pr->gi_id = inst >= 0 ? (uint32_t)inst : GS_GPU_NO_INSTANCE;
        pr->util_pct = (uint32_t)util;
        pr->mem_used = (uint64_t)mem << 20;
    }
    return 0;
}

/* Metrics, counters and XIDs of GPU gi from its object (the hot-reloaded part). */
static int read_live(struct fake *f, const json_t *o, int gi, bool queue_xids, struct gs_error *err)
{
    struct fgpu *g = &f->g[gi];
    const struct gs_gpu_model *m = gs_catalog_get(g->info.model);
    double val[L_N];
    for (int k = 0; k < L_N; k++) {
        const struct live_field *lf = &live_fields[k];
        val[k] = lf->def;
        int rc =
            num(o, lf->key, lf->lo, lf->hi < 0 ? m->mem_mib : lf->hi, &val[k], f->path, gi, err);
        if (rc)
            return rc;
    }
    struct gs_gpu_metrics *x = &g->m;
    x->util_pct = (uint32_t)val[L_UTIL];
    x->mem_util_pct = (uint32_t)val[L_MEM_UTIL];
    x->mem_total = (uint64_t)m->mem_mib << 20;
    x->mem_used = (uint64_t)val[L_MEM_USED] << 20;
    x->power_w = val[L_POWER];
    x->temp_c = (uint32_t)val[L_TEMP];
    x->sm_clock_mhz = (uint32_t)val[L_SM];
    x->mem_clock_mhz = (uint32_t)val[L_MC];
    x->ecc_uncorrected = (uint64_t)val[L_ECC_U];
    x->ecc_corrected = (uint64_t)val[L_ECC_C];
    const json_t *xs = json_object_get(o, "xids");
    if (xs && !json_is_array(xs))
        return gs_error_set(err, GS_EINVAL, "%s: gpus[%d].xids: expected a list of numbers",
                            f->path, gi);
    size_t k;
    const json_t *v;
    json_array_foreach(xs, k, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return gs_error_set(err, GS_EINVAL, "%s: gpus[%d].xids[%zu]: expected an XID number",
                                f->path, gi, k);
        if (queue_xids && f->nx < 64) {
            f->xgpu[f->nx] = gi;
            f->xid[f->nx++] = (uint64_t)json_integer_value(v);
        }
    }
    return 0;
}

enum admit { ADMIT_OK = 0, ADMIT_AT_MAX, ADMIT_NO_PLACE };

/* Whether an instance of profile index p may be created at start on g, by the rules NVML
 * applies: the profile's max count, then a placement beside the instances already there
 * (core/mig.c, which holds the count too; it is looked at first here to say why). */
static enum admit fgpu_admit(const struct fgpu *g, int p, int64_t start)
{
    const struct gs_mig_profile *mp = &gs_catalog_get(g->info.model)->profiles[p];
    int same = 0;
    for (int q = 0; q < g->ninst; q++)
        same += g->inst[q].profile_id == mp->id;
    if (same >= mp->max_count)
        return ADMIT_AT_MAX; /* NVML_ERROR_INSUFFICIENT_RESOURCES */
    if (start < 0 || start > 7 || g->ninst >= GS_AGENT_MAX_INST)
        return ADMIT_NO_PLACE;
    struct gs_mig_placement pl = {0};
    for (int q = 0; q < g->ninst; q++) {
        pl.inst[pl.n].profile = (uint8_t)gs_gpu_profile_index(g->info.model, g->inst[q].profile_id);
        pl.inst[pl.n++].start = (uint8_t)g->inst[q].start;
    }
    pl.inst[pl.n].profile = (uint8_t)p;
    pl.inst[pl.n++].start = (uint8_t)start;
    return gs_mig_placement_valid(g->info.model, &pl) ? ADMIT_OK : ADMIT_NO_PLACE;
}

/* A GPU UUID as NVML prints it ("GPU-" then hex digits and dashes; letters are let through
 * for fakes' sake, as in the UUIDs made up below). */
static bool uuid_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 5 || n > 80 || strncmp(s, "GPU-", 4) != 0)
        return false;
    for (size_t i = 4; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-')
            return false;
    return true;
}

/* A boolean field key of o (absent: false) at path. */
static int check_bool(const json_t *o, const char *key, const char *file, const char *path,
                      struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (v && !json_is_boolean(v))
        return gs_error_set(err, GS_EINVAL, "%s: %s.%s: expected true or false", file, path, key);
    return 0;
}

/* The shape of GPU object o (at path): its fields, and its instances' types and ranges (the
 * profile's memory once it is known: read_inst_live). */
static int check_gpu(const json_t *o, const char *file, const char *path, struct gs_error *err)
{
    if (!json_is_object(o))
        return gs_error_set(err, GS_EINVAL, "%s: %s: expected an object with 'model'", file, path);
    int rc = check_fields(o, gpu_keys, true, file, path, err);
    if (rc)
        return rc;
    const json_t *insts = json_object_get(o, "instances");
    if (insts && !json_is_array(insts))
        return gs_error_set(err, GS_EINVAL, "%s: %s.instances: expected a list of {profile, start}",
                            file, path);
    size_t k;
    const json_t *x;
    json_array_foreach(insts, k, x)
    {
        char ipath[80];
        snprintf(ipath, sizeof(ipath), "%s.instances[%zu]", path, k);
        if (!json_is_object(x))
            return gs_error_set(err, GS_EINVAL, "%s: %s: expected {profile, start}", file, ipath);
        double ignored_value;
        if ((rc = check_fields(x, inst_keys, false, file, ipath, err)) ||
            (rc = check_bool(x, "busy", file, ipath, err)) ||
            (rc = num_at(x, "util", 0, 100, false, &ignored_value, file, ipath, err)) ||
            (rc = num_at(x, "mem_used_mib", 0, 1e7, false, &ignored_value, file, ipath, err)))
            return rc;
    }
    return check_bool(o, "busy", file, path, err);
}

/* Instance k of the file (x) on g, first read: under the placement rules NVML applies. */
static int first_inst(struct fgpu *g, const json_t *x, size_t k, const char *file, const char *path,
                      struct gs_error *err)
{
    const struct gs_gpu_model *m = gs_catalog_get(g->info.model);
    int gi = g->info.index;
    const char *pn = json_string_value(json_object_get(x, "profile"));
    int p = pn ? gs_catalog_find_profile(g->info.model, pn) : -1;
    const json_t *st = json_object_get(x, "start");
    if (!g->info.mig_enabled || p < 0 || !json_is_integer(st) || g->ninst >= GS_AGENT_MAX_INST)
        return gs_error_set(err, GS_EINVAL,
                            "%s: gpus[%d].instances[%zu]: expected {profile, start} "
                            "of a %s profile on a GPU with mig: true",
                            file, gi, k, m->name);
    enum admit a = fgpu_admit(g, p, json_integer_value(st));
    if (a == ADMIT_AT_MAX) {
        unsigned mc = m->profiles[p].max_count;
        return gs_error_set(err, GS_EINVAL,
                            "%s: gpus[%d].instances[%zu]: %s: at most %u instance%s "
                            "of it fit%s on one %s",
                            file, gi, k, m->profiles[p].name, mc, mc == 1 ? "" : "s",
                            mc == 1 ? "s" : "", m->name);
    }
    if (a != ADMIT_OK)
        return gs_error_set(err, GS_EINVAL,
                            "%s: gpus[%d].instances[%zu]: %s at start %lld is not a "
                            "valid placement next to the instances before it",
                            file, gi, k, pn, (long long)json_integer_value(st));
    struct gs_mig_inst *in = &g->inst[g->ninst];
    in->gi_id = g->next_gi++;
    in->profile_id = m->profiles[p].id;
    in->start = (uint32_t)json_integer_value(st);
    in->size = m->profiles[p].mem_slices;
    mig_uuid(in, g->info.uuid);
    memset(&g->fi[g->ninst], 0, sizeof(g->fi[0]));
    g->fi[g->ninst].busy = json_is_true(json_object_get(x, "busy"));
    g->ninst++;
    char ipath[80];
    snprintf(ipath, sizeof(ipath), "%s.instances[%zu]", path, k);
    return read_inst_live(g, g->ninst - 1, x, file, ipath, err);
}

/* GPU gi (object o at path), first read: what it is, its MIG mode and instances. */
static int first_gpu(struct fgpu *g, const json_t *o, int gi, const char *file, const char *path,
                     struct gs_error *err)
{
    memset(g, 0, sizeof(*g));
    const char *model = json_string_value(json_object_get(o, "model"));
    int mid = model ? gs_catalog_find(model) : GS_ENOTFOUND;
    if (mid < 0)
        return gs_error_set(err, GS_EINVAL,
                            "%s: gpus[%d].model: '%s' is not a GPU model "
                            "gpusched knows (e.g. A100-80GB, H100-80GB)",
                            file, gi, model ? model : "");
    const struct gs_gpu_model *m = gs_catalog_get(mid);
    g->info.index = gi;
    g->info.model = mid;
    g->info.pci_id = m->pci_ids[0];
    g->info.mem_mib = m->mem_mib;
    g->info.mig_capable = m->nprofiles > 0;
    int cc = gs_gpu_compute_capability(mid); /* as NVML reports it */
    g->info.cc_major = (uint8_t)(cc / 10);
    g->info.cc_minor = (uint8_t)(cc % 10);
    snprintf(g->info.name, sizeof(g->info.name), "NVIDIA %s", m->product);
    const json_t *uj = json_object_get(o, "uuid");
    const char *uuid = json_string_value(uj);
    if (uj && (!uuid || !uuid_ok(uuid)))
        return gs_error_set(err, GS_EINVAL,
                            "%s: gpus[%d].uuid: expected GPU-<letters, digits and "
                            "dashes>, at most 80 characters",
                            file, gi);
    if (uuid)
        snprintf(g->info.uuid, sizeof(g->info.uuid), "%s", uuid);
    else
        snprintf(g->info.uuid, sizeof(g->info.uuid), "GPU-%08x-fake-4000-8000-%012d",
                 (unsigned)(mid * 7919 + 17), gi);
    g->next_gi = 1;
    const json_t *mig = json_object_get(o, "mig");
    if (mig && !json_is_boolean(mig))
        return gs_error_set(err, GS_EINVAL, "%s: gpus[%d].mig: expected true or false", file, gi);
    g->info.mig_enabled = json_is_true(mig);
    if (g->info.mig_enabled && !g->info.mig_capable)
        return gs_error_set(err, GS_EINVAL, "%s: gpus[%d].mig: %s is not MIG-capable", file, gi,
                            m->name);
    size_t k;
    const json_t *x;
    int rc;
    json_array_foreach(json_object_get(o, "instances"), k, x)
    {
        if ((rc = first_inst(g, x, k, file, path, err)))
            return rc;
    }
    g->gpu_busy = json_is_true(json_object_get(o, "busy"));
    return 0;
}

/* GPU g (object o at path) read again: busy flags may change while running (a process
 * starts or ends), and the instances' own readings. */
static int reread_gpu(struct fgpu *g, const json_t *o, const char *file, const char *path,
                      struct gs_error *err)
{
    g->gpu_busy = json_is_true(json_object_get(o, "busy"));
    size_t k;
    const json_t *x;
    json_array_foreach(json_object_get(o, "instances"), k, x)
    {
        const json_t *st = json_object_get(x, "start");
        for (int q = 0; q < g->ninst; q++)
            if (json_is_integer(st) && g->inst[q].start == json_integer_value(st)) {
                g->fi[q].busy = json_is_true(json_object_get(x, "busy"));
                char ipath[80];
                snprintf(ipath, sizeof(ipath), "%s.instances[%zu]", path, k);
                int rc = read_inst_live(g, q, x, file, ipath, err);
                if (rc)
                    return rc;
            }
    }
    return 0;
}

/* The "topology" of the fake GPUs f->g[0..n) (see the top). */
static int read_topology(struct fake *f, int n, const json_t *t, const char *file,
                         struct gs_error *err)
{
    if (!json_is_object(t))
        return gs_error_set(err, GS_EINVAL, "%s: topology: expected an object", file);
    int rc = check_fields(t, topo_keys, false, file, "topology", err);
    if (rc)
        return rc;
    const char *kind = json_string_value(json_object_get(t, "nvlink"));
    if (json_object_get(t, "nvlink") &&
        (!kind || (strcmp(kind, "none") && strcmp(kind, "pairs") && strcmp(kind, "all"))))
        return gs_error_set(err, GS_EINVAL,
                            "%s: topology.nvlink: expected \"none\", \"pairs\" or \"all\"", file);
    bool all = kind && !strcmp(kind, "all"), pairs = kind && !strcmp(kind, "pairs");
    double links = all ? 18 : 4, numa = 1;
    if ((rc = num_at(t, "links", 1, 18, true, &links, file, "topology", err)) ||
        (rc = num_at(t, "numa_nodes", 1, 8, true, &numa, file, "topology", err)))
        return rc;
    for (int i = 0; i < n; i++) {
        struct gs_gpu_info *g = &f->g[i].info;
        int u = i * (int)numa / n, pair = i / 2, r = (u * 0x20) & 0xff;
        g->numa_ok = true;
        g->numa = (uint8_t)u;
        snprintf(g->pci_path, sizeof(g->pci_path),
                 "pci0000:%02x/0000:%02x:%02x.0/0000:%02x:00.0/0000:%02x:%02x.0/0000:%02x:00.0", r,
                 r, (pair + 1) & 0x1f, (r + 4 * pair + 1) & 0xff, (r + 4 * pair + 2) & 0xff, i % 2,
                 (r + 4 * pair + 3 + i % 2) & 0xff);
        for (int j = 0; j < n; j++)
            if (j != i && (all || (pairs && j / 2 == pair)))
                g->nvlink[j] = (uint8_t)links;
    }
    return 0;
}

static int load(struct fake *f, bool first, struct gs_error *err)
{
    json_error_t je;
    json_t *root = json_load_file(f->path, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return gs_error_set(err, GS_EINVAL, "%s:%d: %s", f->path, je.line, je.text);
    const json_t *gpus = json_object_get(root, "gpus");
    int rc = 0;
    if (!json_is_object(root)) {
        rc = gs_error_set(err, GS_EINVAL, "%s: expected an object with a 'gpus' list", f->path);
        goto out;
    }
    if ((rc = check_fields(root, top_keys, false, f->path, "", err)))
        goto out;
    if (!json_is_array(gpus) || json_array_size(gpus) > GS_AGENT_MAX_GPUS) {
        rc = gs_error_set(err, GS_EINVAL, "%s: gpus: expected a list of at most %d GPUs", f->path,
                          GS_AGENT_MAX_GPUS);
        goto out;
    }
    if (!first && (int)json_array_size(gpus) != f->n) {
        rc = gs_error_set(err, GS_EINVAL, "%s: gpus: the number of GPUs changed (%d -> %zu)",
                          f->path, f->n, json_array_size(gpus));
        goto out;
    }
    struct fake tmp = *f; /* nothing changes unless the whole file is good */
    tmp.nx = first ? 0 : f->nx;
    size_t i;
    const json_t *o;
    json_array_foreach(gpus, i, o)
    {
        int gi = (int)i;
        struct fgpu *g = &tmp.g[gi];
        char path[48];
        snprintf(path, sizeof(path), "gpus[%d]", gi);
        if ((rc = check_gpu(o, f->path, path, err)) ||
            (rc = first ? first_gpu(g, o, gi, f->path, path, err)
                        : reread_gpu(g, o, f->path, path, err)) ||
            (rc = read_procs(g, o, f->path, path, err)) || (rc = read_live(&tmp, o, gi, true, err)))
            goto out;
    }
    tmp.n = (int)json_array_size(gpus);
    const json_t *topo = json_object_get(root, "topology");
    if (first && topo && (rc = read_topology(&tmp, tmp.n, topo, f->path, err)))
        goto out;
    *f = tmp;
out:
    json_decref(root);
    return rc;
}

static void maybe_reload(struct fake *f)
{
    struct stat st;
    if (stat(f->path, &st) != 0)
        return;
    if (st.st_mtim.tv_sec == f->mtime.tv_sec && st.st_mtim.tv_nsec == f->mtime.tv_nsec)
        return;
    struct gs_error err;
    gs_error_init(&err);
    if (load(f, false, &err)) {
        GS_WARN("gpu", "fake GPUs: keeping the last good state: %s", err.msg);
        f->mtime = st.st_mtim; /* do not repeat the warning until it changes again */
        return;
    }
    f->mtime = st.st_mtim;
}

static int f_count(struct gs_gpu_backend *b)
{
    return ((struct fake *)b->impl)->n;
}

static int f_info(struct gs_gpu_backend *b, int i, struct gs_gpu_info *out)
{
    struct fake *f = b->impl;
    if (i < 0 || i >= f->n)
        return GS_ENOTFOUND;
    *out = f->g[i].info;
    return 0;
}

static int f_metrics(struct gs_gpu_backend *b, int i, struct gs_gpu_metrics *out)
{
    struct fake *f = b->impl;
    maybe_reload(f);
    if (i < 0 || i >= f->n)
        return GS_ENOTFOUND;
    *out = f->g[i].m;
    return 0;
}

static int f_mig_list(struct gs_gpu_backend *b, int i, struct gs_mig_inst *out, int cap)
{
    struct fake *f = b->impl;
    if (i < 0 || i >= f->n)
        return GS_ENOTFOUND;
    int n = 0;
    for (int k = 0; k < f->g[i].ninst && n < cap; k++)
        out[n++] = f->g[i].inst[k];
    return n;
}

static int f_mig_profiles(struct gs_gpu_backend *b, int i, struct gs_gpu_profile *out, int cap)
{
    struct fake *f = b->impl;
    if (i < 0 || i >= f->n)
        return GS_ENOTFOUND;
    const struct gs_gpu_model *m = gs_catalog_get(f->g[i].info.model);
    int n = 0;
    for (int p = 0; p < m->nprofiles && n < cap; p++, n++) {
        const struct gs_mig_profile *pr = &m->profiles[p];
        out[n] = (struct gs_gpu_profile){pr->id,  pr->compute, pr->mem_slices, pr->max_count,
                                         pr->sms, pr->mem_mib, pr->start_mask};
    }
    return n;
}

static int f_mig_set_mode(struct gs_gpu_backend *b, int i, bool enable)
{
    struct fake *f = b->impl;
    if (i < 0 || i >= f->n)
        return GS_ENOTFOUND;
    struct fgpu *g = &f->g[i];
    if (!g->info.mig_capable)
        return GS_EINVAL;
    if (!enable && g->ninst > 0)
        return GS_EINVAL; /* instances must go first */
    if (enable == g->info.mig_enabled)
        return 0;
    maybe_reload(f);
    bool busy = g->gpu_busy;
    for (int q = 0; q < g->ninst; q++)
        busy |= g->fi[q].busy;
    if (busy)
        return GS_EINVAL; /* NVML_ERROR_IN_USE: the GPU must be idle to change its mode */
    g->info.mig_enabled = enable;
    return 0;
}

static int f_mig_create(struct gs_gpu_backend *b, int i, uint32_t profile_id, uint32_t start,
                        struct gs_mig_inst *out)
{
    struct fake *f = b->impl;
    if (i < 0 || i >= f->n)
        return GS_ENOTFOUND;
    struct fgpu *g = &f->g[i];
    int p = gs_gpu_profile_index(g->info.model, profile_id);
    if (!g->info.mig_enabled || p < 0 || start > 7)
        return GS_EINVAL;
    if (fgpu_admit(g, p, start) != ADMIT_OK)
        return GS_ENOFIT; /* NVML_ERROR_INSUFFICIENT_RESOURCES */
    const struct gs_mig_profile *mp = &gs_catalog_get(g->info.model)->profiles[p];
    struct gs_mig_inst *in = &g->inst[g->ninst];
    in->gi_id = g->next_gi++;
    in->profile_id = profile_id;
    in->start = start;
    in->size = mp->mem_slices;
    mig_uuid(in, g->info.uuid);
    memset(&g->fi[g->ninst], 0, sizeof(g->fi[0]));
    g->ninst++;
    if (out)
        *out = *in;
    return 0;
}

static int f_mig_destroy(struct gs_gpu_backend *b, int i, uint32_t gi_id)
{
    struct fake *f = b->impl;
    maybe_reload(f);
    if (i < 0 || i >= f->n)
        return GS_ENOTFOUND;
    struct fgpu *g = &f->g[i];
    for (int q = 0; q < g->ninst; q++) {
        if (g->inst[q].gi_id != gi_id)
            continue;
        if (g->fi[q].busy)
            return GS_EINVAL; /* NVML_ERROR_IN_USE */
        memmove(&g->inst[q], &g->inst[q + 1], sizeof(g->inst[0]) * (size_t)(g->ninst - q - 1));
        memmove(&g->fi[q], &g->fi[q + 1], sizeof(g->fi[0]) * (size_t)(g->ninst - q - 1));
        g->ninst--;
        return 0;
    }
    return GS_ENOTFOUND;
}

static int f_xids(struct gs_gpu_backend *b, int timeout_ms, int *gpu, uint64_t *xid, int cap)
{
    struct fake *f = b->impl;
    maybe_reload(f);
    if (f->nx == 0 && timeout_ms > 0) {
        struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        maybe_reload(f);
    }
    int n = f->nx < cap ? f->nx : cap;
    for (int k = 0; k < n; k++) {
        gpu[k] = f->xgpu[k];
        xid[k] = f->xid[k];
    }
    memmove(f->xgpu, f->xgpu + n, sizeof(f->xgpu[0]) * (size_t)(f->nx - n));
    memmove(f->xid, f->xid + n, sizeof(f->xid[0]) * (size_t)(f->nx - n));
    f->nx -= n;
    return n;
}

static int f_mig_metrics(struct gs_gpu_backend *b, int i, uint32_t gi_id,
                         struct gs_mig_metrics *out)
{
    struct fake *f = b->impl;
    memset(out, 0, sizeof(*out));
    maybe_reload(f);
    if (i < 0 || i >= f->n)
        return GS_ENOTFOUND;
    const struct fgpu *g = &f->g[i];
    for (int q = 0; q < g->ninst; q++) {
        if (g->inst[q].gi_id != gi_id)
            continue;
        int p = gs_gpu_profile_index(g->info.model, g->inst[q].profile_id);
        out->util_ok = gpm_offered(g->info.model);
        out->util_pct = out->util_ok ? g->fi[q].util_pct : 0;
        out->mem_ok = p >= 0;
        out->mem_used = g->fi[q].mem_used_mib << 20;
        out->mem_total =
            p >= 0 ? (uint64_t)gs_catalog_get(g->info.model)->profiles[p].mem_mib << 20 : 0;
        return 0;
    }
    return GS_ENOTFOUND;
}

static int f_processes(struct gs_gpu_backend *b, int i, struct gs_gpu_proc *out, int cap)
{
    struct fake *f = b->impl;
    maybe_reload(f);
    if (i < 0 || i >= f->n)
        return GS_ENOTFOUND;
    const struct fgpu *g = &f->g[i];
    int n = 0;
    for (int k = 0; k < g->nproc && n < cap; k++) {
        out[n] = g->proc[k];
        out[n].util_ok = !g->info.mig_enabled; /* none per process in MIG mode */
        out[n].mem_ok = true;
        n++;
    }
    return n;
}

static void f_close(struct gs_gpu_backend *b)
{
    free(b->impl);
    free(b);
}

static const struct gs_gpu_ops fake_ops = {
    .name = "fake",
    GS_GPU_OPS(f),
};

int gs_gpu_open_fake(const char *path, struct gs_gpu_backend **out, struct gs_error *err)
{
    *out = NULL;
    struct fake *f = calloc(1, sizeof(*f));
    struct gs_gpu_backend *b = calloc(1, sizeof(*b));
    if (!f || !b) {
        free(f);
        free(b);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    snprintf(f->path, sizeof(f->path), "%s", path);
    struct stat st;
    if (stat(path, &st) != 0) {
        free(f);
        free(b);
        return gs_error_set(err, GS_EINVAL, "%s: cannot read the fake GPU description", path);
    }
    int rc = load(f, true, err);
    if (rc) {
        free(f);
        free(b);
        return rc;
    }
    f->mtime = st.st_mtim;
    b->ops = &fake_ops;
    b->impl = f;
    *out = b;
    return 0;
}
