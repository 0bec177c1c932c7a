/* draslice.c - ResourceSlices of the gpu.gpusched.io DRA driver from a node's GPUs (see
 * draslice.h). The MIG geometry comes from core/catalog.h: every placement device is one of
 * a profile's valid starts, and the counters encode the rules of core/mig.c (memory slices,
 * compute slices, max counts, media engines) so that the scheduler's counter arithmetic
 * admits exactly the layouts gs_mig_placement_valid admits. The agent's DRA driver
 * (agent/dra.c) publishes what this builds. */
#include "draslice.h"

#include "../base/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((uint64_t)1 << 20)

bool gs_draslice_partitionable(const struct gs_draslice_node *n, const struct gs_draslice_gpu *g)
{
    if (!n->dynamic_mig || !gs_catalog_mig_capable(g->model))
        return false;
    for (int q = 0; q < g->ninst; q++)
        if (!g->inst[q].dynamic)
            return false;
    return true;
}

/* A profile's name as a DNS label: '.' and '+' become '-', a '-' of the name ("-me")
 * becomes "-no-" so that "1g.24gb-me" and "1g.24gb+me" stay apart. */
static void spell(const char *profile, char *out, size_t size)
{
    size_t o = 0;
    for (const char *c = profile; *c && o + 4 < size; c++) {
        if (*c == '-') {
            memcpy(out + o, "-no-", 4);
            o += 4;
        } else {
            out[o++] = *c == '.' || *c == '+' ? '-' : (char)tolower((unsigned char)*c);
        }
    }
    out[o] = '\0';
}

void gs_draslice_device_name(enum gs_dra_kind kind, int gpu, int model, int profile, int start,
                             char *out, size_t size)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    if (kind == GS_DRA_GPU || !m || profile < 0 || profile >= m->nprofiles) {
        snprintf(out, size, "gpu-%d", gpu);
        return;
    }
    char sp[32];
    spell(m->profiles[profile].name, sp, sizeof(sp));
    snprintf(out, size, "gpu-%d-%s-%s-%d", gpu, kind == GS_DRA_MIG ? "mig" : "part", sp, start);
}

int gs_draslice_find_profile(int model, const char *spelt)
{
    const struct gs_gpu_model *m = gs_catalog_get(model);
    for (int p = 0; m && p < m->nprofiles; p++) {
        char sp[32];
        spell(m->profiles[p].name, sp, sizeof(sp));
        if (strcmp(sp, spelt) == 0)
            return p;
    }
    return GS_ENOTFOUND;
}

/* A decimal number of at most 2 digits at *s, moving *s past it; -1 when none. */
static int small_number(const char **s)
{
    const char *c = *s;
    int v = 0, k = 0;
    while (isdigit((unsigned char)c[k]) && k < 3)
        v = v * 10 + (c[k++] - '0');
    if (k == 0 || k > 2 || (k == 2 && c[0] == '0'))
        return -1;
    *s = c + k;
    return v;
}

int gs_draslice_parse_name(const char *name, struct gs_dra_devref *out, struct gs_error *err)
{
    struct gs_dra_devref r = {0};
    size_t len = strnlen(name, GS_DRASLICE_NAME_MAX);
    if (len >= GS_DRASLICE_NAME_MAX || strncmp(name, "gpu-", 4) != 0)
        return gs_error_set(err, GS_EINVAL, "device '%.80s': not a %s device name", name,
                            GS_DRA_DRIVER);
    const char *c = name + 4;
    r.gpu = small_number(&c);
    if (r.gpu < 0 || r.gpu >= GS_DRASLICE_MAX_GPUS)
        return gs_error_set(err, GS_EINVAL, "device '%s': no GPU index", name);
    if (*c == '\0') {
        r.kind = GS_DRA_GPU;
        *out = r;
        return 0;
    }
    if (strncmp(c, "-mig-", 5) == 0)
        r.kind = GS_DRA_MIG;
    else if (strncmp(c, "-part-", 6) == 0)
        r.kind = GS_DRA_PART;
    else
        return gs_error_set(err, GS_EINVAL, "device '%s': expected -mig- or -part- after the GPU",
                            name);
    c += r.kind == GS_DRA_MIG ? 5 : 6;
    const char *dash = strrchr(c, '-');
    if (!dash || dash == c || (size_t)(dash - c) >= sizeof(r.profile))
        return gs_error_set(err, GS_EINVAL, "device '%s': no profile and start", name);
    memcpy(r.profile, c, (size_t)(dash - c));
    r.profile[dash - c] = '\0';
    const char *s = dash + 1;
    r.start = small_number(&s);
    if (r.start < 0 || r.start >= GS_MIG_MEM_SLICES || *s != '\0')
        return gs_error_set(err, GS_EINVAL, "device '%s': placement start is not 0 to %d", name,
                            GS_MIG_MEM_SLICES - 1);
    *out = r;
    return 0;
}

/* ---------- counters ---------- */

static bool has_media(const struct gs_gpu_model *m, uint8_t flag)
{
    for (int p = 0; p < m->nprofiles; p++)
        if (m->profiles[p].media & flag)
            return true;
    return false;
}

/* Whether a profile's max count must be a counter: below what could fit without it. */
static bool instance_counter(const struct gs_gpu_model *m, const struct gs_mig_profile *p)
{
    int starts = __builtin_popcount(p->start_mask);
    int fit = starts;
    if (m->mig_mem / p->mem_slices < fit)
        fit = m->mig_mem / p->mem_slices;
    if (m->mig_compute / p->compute < fit)
        fit = m->mig_compute / p->compute;
    return p->max_count < fit;
}

static int set_counter(json_t *obj, const char *name, int64_t value)
{
    char v[24];
    snprintf(v, sizeof(v), "%lld", (long long)value);
    return json_object_set_new(obj, name, json_pack("{s:s}", "value", v));
}

/* Every counter of a whole GPU of model m into c: its compute slices, each memory slice and
 * its media engines. Returns nonzero when one could not be set. */
static int whole_counters(json_t *c, const struct gs_gpu_model *m)
{
    char name[GS_DRASLICE_NAME_MAX];
    int rc = set_counter(c, "compute-slices", m->mig_compute);
    for (int s = 0; s < m->mig_mem; s++) {
        snprintf(name, sizeof(name), "memory-slice-%d", s);
        rc |= set_counter(c, name, 1);
    }
    if (has_media(m, GS_MIG_MEDIA_EXT))
        rc |= set_counter(c, "media-extension", 1);
    if (has_media(m, GS_MIG_MEDIA_ALL))
        rc |= set_counter(c, "media-engines", m->mig_mem);
    return rc;
}

/* The counter set of a partitionable GPU of model m. */
static json_t *counter_set(const struct gs_draslice_gpu *g, const struct gs_gpu_model *m)
{
    json_t *c = json_object();
    char name[GS_DRASLICE_NAME_MAX];
    if (!c)
        return NULL;
    int rc = whole_counters(c, m);
    for (int p = 0; p < m->nprofiles; p++) {
        if (!instance_counter(m, &m->profiles[p]))
            continue;
        char sp[32];
        spell(m->profiles[p].name, sp, sizeof(sp));
        snprintf(name, sizeof(name), "%s-instances", sp);
        rc |= set_counter(c, name, m->profiles[p].max_count);
    }
    if (rc) {
        json_decref(c);
        return NULL;
    }
    snprintf(name, sizeof(name), "gpu-%d-counters", g->index);
    return json_pack("{s:s,s:o}", "name", name, "counters", c);
}

/* What a device of GPU g consumes: every counter (profile < 0: the whole GPU), or one
 * placement's. */
static json_t *consumes(const struct gs_draslice_gpu *g, const struct gs_gpu_model *m, int profile,
                        int start)
{
    json_t *c = json_object();
    if (!c)
        return NULL;
    int rc = 0;
    char name[GS_DRASLICE_NAME_MAX];
    if (profile < 0) {
        rc |= whole_counters(c, m);
    } else {
        const struct gs_mig_profile *p = &m->profiles[profile];
        rc |= set_counter(c, "compute-slices", p->compute);
        for (int s = start; s < start + p->mem_slices; s++) {
            snprintf(name, sizeof(name), "memory-slice-%d", s);
            rc |= set_counter(c, name, 1);
        }
        if (p->media & GS_MIG_MEDIA_EXT)
            rc |= set_counter(c, "media-extension", 1);
        if (has_media(m, GS_MIG_MEDIA_ALL) && !(p->media & GS_MIG_MEDIA_NONE))
            rc |= set_counter(c, "media-engines", p->media & GS_MIG_MEDIA_ALL ? m->mig_mem : 1);
        if (instance_counter(m, p)) {
            char sp[32];
            spell(p->name, sp, sizeof(sp));
            snprintf(name, sizeof(name), "%s-instances", sp);
            rc |= set_counter(c, name, 1);
        }
    }
    if (rc) {
        json_decref(c);
        return NULL;
    }
    snprintf(name, sizeof(name), "gpu-%d-counters", g->index);
    return json_pack("[{s:s,s:o}]", "counterSet", name, "counters", c);
}

/* ---------- devices ---------- */

static int attr(json_t *attrs, const char *name, const char *type, json_t *v)
{
    if (!v)
        return GS_ENOMEM;
    return json_object_set_new(attrs, name, json_pack("{s:o}", type, v)) ? GS_ENOMEM : 0;
}

static int cap_bytes(json_t *caps, const char *name, uint64_t v)
{
    char s[32];
    snprintf(s, sizeof(s), "%llu", (unsigned long long)v);
    return json_object_set_new(caps, name, json_pack("{s:s}", "value", s)) ? GS_ENOMEM : 0;
}

/* The whole GPU's links, those known. */
static int link_attrs(json_t *attrs, const struct gs_draslice_gpu *g)
{
    int rc = 0;
    if (g->numa_ok)
        rc |= attr(attrs, "numaNode", "int", json_integer(g->numa));
    if (g->pcie_root[0])
        rc |= attr(attrs, "resource.kubernetes.io/pcieRoot", "string", json_string(g->pcie_root));
    if (g->pcie_switch[0])
        rc |= attr(attrs, "pcieSwitch", "string", json_string(g->pcie_switch));
    if (g->nvlink_peers) {
        rc |= attr(attrs, "nvlinkPeers", "int", json_integer(g->nvlink_peers));
        rc |= attr(attrs, "nvlinks", "int", json_integer(g->nvlinks ? g->nvlinks : 1));
    }
    return rc;
}

static const char *product(const struct gs_draslice_gpu *g)
{
    const struct gs_gpu_model *m =
        g->model >= 0 && g->model < gs_catalog_count() ? gs_catalog_get(g->model) : NULL;
    return m ? m->name : g->product[0] ? g->product : "unknown";
}

/* A device of GPU g: the whole GPU (profile < 0) or an instance (kind MIG, with its uuid) or
 * a placement (kind PART); with counters when the GPU is partitionable. */
static json_t *device(const struct gs_draslice_gpu *g, bool part, enum gs_dra_kind kind,
                      int profile, int start, const char *mig_uuid)
{
    const struct gs_gpu_model *m =
        g->model >= 0 && g->model < gs_catalog_count() ? gs_catalog_get(g->model) : NULL;
    char name[GS_DRASLICE_NAME_MAX];
    gs_draslice_device_name(kind, g->index, g->model, profile, start, name, sizeof(name));
    json_t *attrs = json_object(), *caps = json_object(), *d = NULL;
    int rc = !attrs || !caps ? GS_ENOMEM : 0;
    if (rc)
        goto out;
    if (kind == GS_DRA_GPU) {
        rc |= attr(attrs, "type", "string", json_string("gpu"));
        rc |= attr(attrs, "uuid", "string", json_string(g->uuid));
        rc |= attr(attrs, "productName", "string", json_string(product(g)));
        rc |= attr(attrs, "index", "int", json_integer(g->index));
        rc |= attr(attrs, "mig", "bool", json_boolean(g->mig_enabled));
        rc |= link_attrs(attrs, g);
        rc |= cap_bytes(caps, "memory", g->mem_mib * MIB);
        if (m && m->sms)
            rc |= cap_bytes(caps, "multiprocessors", m->sms);
    } else {
        const struct gs_mig_profile *p = &m->profiles[profile];
        rc |= attr(attrs, "type", "string", json_string("mig"));
        if (mig_uuid)
            rc |= attr(attrs, "uuid", "string", json_string(mig_uuid));
        rc |= attr(attrs, "profile", "string", json_string(p->name));
        rc |= attr(attrs, "parentUUID", "string", json_string(g->uuid));
        rc |= attr(attrs, "parentIndex", "int", json_integer(g->index));
        rc |= attr(attrs, "productName", "string", json_string(product(g)));
        rc |= attr(attrs, "placementStart", "int", json_integer(start));
        /* on every MIG device, so a plain `dynamic == true` (or false) selects without CEL's
         * optional syntax */
        rc |= attr(attrs, "dynamic", "bool", json_boolean(kind == GS_DRA_PART));
        rc |= cap_bytes(caps, "memory", (uint64_t)p->mem_mib * MIB);
        if (p->sms)
            rc |= cap_bytes(caps, "multiprocessors", p->sms);
    }
    if (rc)
        goto out;
    d = json_pack("{s:s,s:O,s:O}", "name", name, "attributes", attrs, "capacity", caps);
    if (!d) {
        rc = GS_ENOMEM;
        goto out;
    }
    if (part && m) {
        json_t *c = consumes(g, m, kind == GS_DRA_GPU ? -1 : profile, start);
        rc |= !c || json_object_set_new(d, "consumesCounters", c) ? GS_ENOMEM : 0;
    }
    if (!g->healthy)
        rc |= json_object_set_new(d, "taints",
                                  json_pack("[{s:s,s:s}]", "key", GS_DRASLICE_UNHEALTHY_KEY,
                                            "effect", "NoSchedule"))
                  ? GS_ENOMEM
                  : 0;
out:
    json_decref(attrs);
    json_decref(caps);
    if (rc) {
        json_decref(d);
        return NULL;
    }
    return d;
}

/* Every device of GPU g, appended to devs. */
static int gpu_devices(const struct gs_draslice_node *n, const struct gs_draslice_gpu *g,
                       json_t *devs)
{
    const struct gs_gpu_model *m =
        g->model >= 0 && g->model < gs_catalog_count() ? gs_catalog_get(g->model) : NULL;
    bool part = gs_draslice_partitionable(n, g);
    if (part || !g->mig_enabled)
        if (json_array_append_new(devs, device(g, part, GS_DRA_GPU, -1, 0, NULL)))
            return GS_ENOMEM;
    if (part) {
        for (int p = 0; p < m->nprofiles; p++)
            for (int s = 0; s < m->mig_mem; s++)
                if ((m->profiles[p].start_mask & (1u << s)) &&
                    s + m->profiles[p].mem_slices <= m->mig_mem &&
                    json_array_append_new(devs, device(g, true, GS_DRA_PART, p, s, NULL)))
                    return GS_ENOMEM;
        return 0;
    }
    if (!g->mig_enabled || !m)
        return 0;
    for (int q = 0; q < g->ninst; q++) {
        const struct gs_draslice_inst *in = &g->inst[q];
        if (in->profile >= m->nprofiles)
            continue;
        if (json_array_append_new(devs,
                                  device(g, false, GS_DRA_MIG, in->profile, in->start, in->uuid)))
            return GS_ENOMEM;
    }
    return 0;
}

static json_t *slice(const struct gs_draslice_node *n, const char *what, json_t *items)
{
    char gen[300];
    snprintf(gen, sizeof(gen), "%s-%s-", n->node, GS_DRA_DRIVER);
    json_t *meta = json_pack("{s:s}", "generateName", gen);
    if (meta && n->node_uid && n->node_uid[0])
        json_object_set_new(meta, "ownerReferences",
                            json_pack("[{s:s,s:s,s:s,s:s,s:b}]", "apiVersion", "v1", "kind", "Node",
                                      "name", n->node, "uid", n->node_uid, "controller", 1));
    json_t *spec = json_pack("{s:s,s:s,s:{s:s,s:I,s:i},s:o}", "driver", GS_DRA_DRIVER, "nodeName",
                             n->node, "pool", "name", n->node, "generation",
                             (json_int_t)n->generation, "resourceSliceCount", 0, what, items);
    if (!meta || !spec) {
        json_decref(meta);
        json_decref(spec);
        return NULL;
    }
    return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "resource.k8s.io/v1", "kind",
                     "ResourceSlice", "metadata", meta, "spec", spec);
}

json_t *gs_draslice_build(const struct gs_draslice_node *n, struct gs_error *err)
{
    if (!n->node || !n->node[0])
        return gs_error_set(err, GS_EINVAL, "resource slices: no node name"), NULL;
    if (n->ngpus < 0 || n->ngpus > GS_DRASLICE_MAX_GPUS)
        return gs_error_set(err, GS_EINVAL, "resource slices: %d GPUs (at most %d)", n->ngpus,
                            GS_DRASLICE_MAX_GPUS),
               NULL;
    uint32_t seen = 0;
    for (int i = 0; i < n->ngpus; i++) {
        int x = n->gpus[i].index;
        if (x < 0 || x >= GS_DRASLICE_MAX_GPUS || (seen & (1u << x)))
            return gs_error_set(err, GS_EINVAL, "resource slices: GPU index %d %s", x,
                                x < 0 || x >= GS_DRASLICE_MAX_GPUS ? "out of range" : "twice"),
                   NULL;
        seen |= 1u << x;
    }
    json_t *out = json_array(), *sets = NULL, *devs = json_array(), *items = NULL;
    if (!out || !devs)
        goto nomem;
    for (int i = 0; i < n->ngpus; i++) {
        const struct gs_draslice_gpu *g = &n->gpus[i];
        if (!gs_draslice_partitionable(n, g))
            continue;
        if (!sets && !(sets = json_array()))
            goto nomem;
        if (json_array_append_new(sets, counter_set(g, gs_catalog_get(g->model))))
            goto nomem;
        if (json_array_size(sets) == GS_DRASLICE_MAX_SETS) {
            if (json_array_append_new(out, slice(n, "sharedCounters", sets)))
                goto nomem_sets;
            sets = NULL;
        }
    }
    if (sets) {
        if (json_array_append_new(out, slice(n, "sharedCounters", sets)))
            goto nomem_sets;
        sets = NULL;
    }
    for (int i = 0; i < n->ngpus; i++)
        if (gpu_devices(n, &n->gpus[i], devs))
            goto nomem;
    for (size_t k = 0; k < json_array_size(devs); k += GS_DRASLICE_MAX_DEVICES) {
        if (!(items = json_array()))
            goto nomem;
        for (size_t j = k; j < k + GS_DRASLICE_MAX_DEVICES && j < json_array_size(devs); j++)
            if (json_array_append(items, json_array_get(devs, j)))
                goto nomem;
        if (json_array_append_new(out, slice(n, "devices", items)))
            goto nomem_items;
        items = NULL;
    }
    if (json_array_size(out) == 0) { /* a pool with no device still says so: one empty slice */
        if (!(items = json_array()) || json_array_append_new(out, slice(n, "devices", items)))
            goto nomem_items;
        items = NULL;
    }
    size_t k;
    json_t *s;
    json_array_foreach(out, k, s)
    {
        json_t *pool = json_object_get(json_object_get(s, "spec"), "pool");
        json_object_set_new(pool, "resourceSliceCount",
                            json_integer((json_int_t)json_array_size(out)));
    }
    json_decref(devs);
    return out;
nomem_sets: /* json_array_append_new took sets whatever happened */
    sets = NULL;
    goto nomem;
nomem_items:
    items = NULL;
nomem:
    json_decref(sets);
    json_decref(items);
    json_decref(devs);
    json_decref(out);
    gs_error_set(err, GS_ENOMEM, "resource slices: out of memory");
    return NULL;
}
