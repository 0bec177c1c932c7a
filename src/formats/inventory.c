/* inventory.c - the node inventory annotation (see inventory.h): the agent writes it from its
 * GPU backend (agent/reconciler.c), the scheduler's cache (sched/cache.c) reads it to lay out the
 * node's GPUs at their physical indexes with their exact MIG placements. */
#include "inventory.h"

#include "../base/error.h"
#include "annot.h"
#include "migparted.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(struct gs_error *err, const char *path, const char *what)
{
    return gs__annot_bad(err, GS_INVENTORY_ANNOTATION, path, what);
}

static int copy_str(const json_t *v, char *out, size_t size, bool required, const char *path,
                    struct gs_error *err)
{
    if (!v) {
        out[0] = '\0';
        return required ? bad(err, path, "required") : 0;
    }
    if (!json_is_string(v))
        return bad(err, path, "expected a string");
    const char *s = json_string_value(v);
    if (strlen(s) >= size || (required && !s[0]))
        return gs_error_set(err, GS_EINVAL, "%s annotation: %s: expected 1 to %zu bytes",
                            GS_INVENTORY_ANNOTATION, path, size - 1);
    snprintf(out, size, "%s", s);
    return 0;
}

int gs_inv_inst_parse(const char *s, struct gs_inv_inst *out)
{
    const char *at = strchr(s, '@');
    size_t pl = at ? (size_t)(at - s) : 0;
    char prof[GS_MIG_NAME_MAX];
    if (!at || pl == 0 || pl >= sizeof(prof) || at[1] < '0' || at[1] > '7' || at[2])
        return GS_EINVAL;
    memcpy(prof, s, pl);
    prof[pl] = '\0';
    if (!gs_mig_profile_syntax_ok(prof))
        return GS_EINVAL;
    memset(out->profile, 0, sizeof(out->profile));
    memcpy(out->profile, prof, pl + 1);
    out->start = (uint8_t)(at[1] - '0');
    return 0;
}

void gs_inv_inst_format(const struct gs_inv_inst *in, char *out, size_t size)
{
    snprintf(out, size, "%.*s@%u", (int)sizeof(in->profile) - 1, in->profile, in->start);
}

static int read_inst(const json_t *v, struct gs_inv_inst *in, const char *path,
                     struct gs_error *err)
{
    if (!json_is_string(v) || gs_inv_inst_parse(json_string_value(v), in))
        return bad(err, path,
                   "expected \"<profile>@<start>\": a MIG profile (\"3g.40gb\") and a start of "
                   "0 to 7");
    return 0;
}

/* A PCIe path: 1 to GS_PCIE_PARTS components of [0-9A-Za-z:._-], separated by one '/'. */
#define GS_PCIE_PARTS 16
static bool pci_path_ok(const char *s)
{
    int parts = 1;
    if (!s[0] || s[0] == '/' || s[strlen(s) - 1] == '/')
        return false;
    for (const char *c = s; *c; c++) {
        bool sep = *c == '/';
        if (sep && (c[1] == '/' || ++parts > GS_PCIE_PARTS))
            return false;
        if (!sep && !((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
                      (*c >= 'A' && *c <= 'Z') || *c == ':' || *c == '.' || *c == '_' || *c == '-'))
            return false;
    }
    return true;
}

/* "nvlink": {"<peer index>": <links>, ...}. */
static int read_nvlink(const json_t *v, struct gs_inv_gpu *out, const char *path,
                       struct gs_error *err)
{
    char p[128];
    if (!json_is_object(v))
        return bad(err, path, "expected an object of peer GPU index to NVLink links");
    const char *key;
    const json_t *n;
    json_object_foreach((json_t *)v, key, n)
    {
        snprintf(p, sizeof(p), "%s.%.8s", path, key);
        char *end;
        long peer = strtol(key, &end, 10);
        bool digits = key[0] >= '0' && key[0] <= '9' && !(key[0] == '0' && key[1]);
        if (!digits || *end || peer < 0 || peer >= GS_MAX_GPUS_NODE || peer == out->index)
            return bad(err, p, "expected the index of another GPU (0 to 15)");
        if (!json_is_integer(n) || json_integer_value(n) < 1 || json_integer_value(n) > 255)
            return bad(err, p, "expected 1 to 255 NVLink links");
        out->nvlink[peer] = (uint8_t)json_integer_value(n);
    }
    return 0;
}

/* The links of a GPU (version 2): numa, pci, nvlink. */
static int read_links(const json_t *g, struct gs_inv_gpu *out, const char *path,
                      struct gs_error *err)
{
    char p[96];
    const json_t *numa = json_object_get(g, "numa");
    if (numa) {
        snprintf(p, sizeof(p), "%s.numa", path);
        if (!json_is_integer(numa) || json_integer_value(numa) < 0 ||
            json_integer_value(numa) > 255)
            return bad(err, p, "expected a NUMA node of 0 to 255");
        out->has_numa = true;
        out->numa = (uint8_t)json_integer_value(numa);
    }
    snprintf(p, sizeof(p), "%s.pci", path);
    if (copy_str(json_object_get(g, "pci"), out->pci, sizeof(out->pci), false, p, err))
        return GS_EINVAL;
    if (json_object_get(g, "pci") && !pci_path_ok(out->pci))
        return bad(err, p,
                   "expected the PCIe path from the root complex, '/' between bridges "
                   "(\"pci0000:00/0000:00:01.0/0000:03:00.0\")");
    const json_t *nv = json_object_get(g, "nvlink");
    snprintf(p, sizeof(p), "%s.nvlink", path);
    return nv ? read_nvlink(nv, out, p, err) : 0;
}

bool gs_inv_gpu_has_links(const struct gs_inv_gpu *g)
{
    for (int j = 0; j < GS_MAX_GPUS_NODE; j++)
        if (g->nvlink[j] && j != g->index)
            return true;
    return g->has_numa || g->pci[0];
}

void gs_inventory_links(const struct gs_inventory *inv, struct gs_gpu_link out[GS_MAX_GPUS_NODE])
{
    memset(out, 0, sizeof(struct gs_gpu_link) * GS_MAX_GPUS_NODE);
    for (int a = 0; a < inv->ngpus; a++) {
        const struct gs_inv_gpu *x = &inv->gpus[a];
        for (int b = 0; b < inv->ngpus; b++) {
            const struct gs_inv_gpu *y = &inv->gpus[b];
            if (a == b)
                continue;
            uint8_t nx = x->nvlink[y->index], ny = y->nvlink[x->index];
            out[x->index].nvlink[y->index] = nx < ny ? nx : ny;
            out[x->index].pcie[y->index] = (uint8_t)gs_link_pcie_level(
                x->pci, x->has_numa ? x->numa : -1, y->pci, y->has_numa ? y->numa : -1);
        }
    }
}

static int read_gpu(const json_t *g, struct gs_inv_gpu *out, const char *path, struct gs_error *err)
{
    static const char *const keys[] = {"i",       "uuid",     "model", "mem", "health", "mig",
                                       "sharing", "replicas", "numa",  "pci", "nvlink", NULL};
    char p[96];
    if (!json_is_object(g))
        return bad(err, path, "expected an object");
    if (gs__annot_known(g, GS_INVENTORY_ANNOTATION, path, keys,
                        "i, uuid, model, mem, health, mig, sharing, replicas, numa, pci, nvlink",
                        err))
        return GS_EINVAL;
    memset(out, 0, sizeof(*out));
    if (gs__annot_index(g, GS_INVENTORY_ANNOTATION, path, GS_MAX_GPUS_NODE, &out->index, err) ||
        read_links(g, out, path, err))
        return GS_EINVAL;
    snprintf(p, sizeof(p), "%s.uuid", path);
    if (copy_str(json_object_get(g, "uuid"), out->uuid, sizeof(out->uuid), true, p, err))
        return GS_EINVAL;
    snprintf(p, sizeof(p), "%s.model", path);
    if (copy_str(json_object_get(g, "model"), out->model, sizeof(out->model), true, p, err))
        return GS_EINVAL;
    const json_t *mem = json_object_get(g, "mem");
    snprintf(p, sizeof(p), "%s.mem", path);
    if (!json_is_integer(mem) || json_integer_value(mem) <= 0 ||
        json_integer_value(mem) > (1 << 24))
        return bad(err, p, "expected the GPU's memory in MiB (1 to 16777216)");
    out->mem_mib = (uint32_t)json_integer_value(mem);
    snprintf(p, sizeof(p), "%s.health", path);
    if (copy_str(json_object_get(g, "health"), out->health, sizeof(out->health), false, p, err))
        return GS_EINVAL;
    out->healthy = out->health[0] == '\0';
    const json_t *mig = json_object_get(g, "mig");
    const json_t *sharing = json_object_get(g, "sharing");
    const json_t *replicas = json_object_get(g, "replicas");
    out->mode = GS_GPU_WHOLE;
    out->replicas = 1;
    if (mig) {
        snprintf(p, sizeof(p), "%s.mig", path);
        if (!json_is_array(mig))
            return bad(err, p, "expected a list of \"<profile>@<start>\"");
        if (sharing || replicas)
            return bad(err, p, "a MIG GPU is not also shared by time-slicing, MPS or fractions");
        if (json_array_size(mig) > GS_INV_MAX_INST)
            return gs_error_set(err, GS_EINVAL, "%s annotation: %s: %zu instances, at most %d",
                                GS_INVENTORY_ANNOTATION, p, json_array_size(mig), GS_INV_MAX_INST);
        out->mode = GS_GPU_MIG;
        size_t k;
        const json_t *v;
        json_array_foreach(mig, k, v)
        {
            snprintf(p, sizeof(p), "%s.mig[%zu]", path, k);
            if (read_inst(v, &out->inst[out->ninst++], p, err))
                return GS_EINVAL;
        }
    } else if (sharing || replicas) {
        snprintf(p, sizeof(p), "%s.sharing", path);
        const char *sh = json_string_value(sharing);
        if (sh && strcmp(sh, "fractions") == 0) {
            if (replicas)
                return bad(err, p,
                           "\"fractions\" takes no replicas (a share is 1 to 999 "
                           "thousandths of the GPU)");
            out->mode = GS_GPU_FRACTION;
            return 0;
        }
        if (!sh || (strcmp(sh, "time-slicing") != 0 && strcmp(sh, "mps") != 0))
            return bad(err, p,
                       "expected \"time-slicing\" or \"mps\" (with replicas), or \"fractions\"");
        snprintf(p, sizeof(p), "%s.replicas", path);
        if (!json_is_integer(replicas) || json_integer_value(replicas) < 1 ||
            json_integer_value(replicas) > 255)
            return bad(err, p, "expected 1 to 255 replicas");
        out->mode = strcmp(sh, "mps") == 0 ? GS_GPU_MPS : GS_GPU_TIMESLICE;
        out->replicas = (uint8_t)json_integer_value(replicas);
    }
    return 0;
}

/* generation, mig_state and mig_error: what became of the desired MIG layouts. */
static int read_mig_status(const json_t *o, struct gs_inventory *out, struct gs_error *err)
{
    const json_t *gen = json_object_get(o, "generation");
    if (gen) {
        if (!json_is_integer(gen) || json_integer_value(gen) < 1)
            return bad(err, "generation", "expected a mig-desired generation of 1 or more");
        out->generation = (int64_t)json_integer_value(gen);
    }
    const json_t *st = json_object_get(o, "mig_state");
    const json_t *why = json_object_get(o, "mig_error");
    if (copy_str(st, out->mig_state, sizeof(out->mig_state), false, "mig_state", err) ||
        copy_str(why, out->mig_error, sizeof(out->mig_error), false, "mig_error", err))
        return GS_EINVAL;
    const char *s = out->mig_state;
    bool waits = !strcmp(s, "pending") || !strcmp(s, "failed");
    if (st && !waits && strcmp(s, "success") != 0)
        return bad(err, "mig_state", "expected \"pending\", \"failed\" or \"success\"");
    if (waits && !out->mig_error[0])
        return bad(err, "mig_error", "required (why) with mig_state pending or failed");
    if (why && !waits)
        return bad(err, "mig_error", "only with mig_state pending or failed");
    return 0;
}

_Static_assert(offsetof(struct gs_inv_gpu, index) == 0, "annot.h: entries begin with their index");

static int read_gpu_item(const json_t *g, void *item, const char *path, struct gs_error *err)
{
    return read_gpu(g, item, path, err);
}

int gs_inventory_read(const char *text, size_t len, struct gs_inventory *out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    static const char *const keys[] = {"v", "generation", "mig_state", "mig_error", "gpus", NULL};
    json_t *o = gs__annot_load(GS_INVENTORY_ANNOTATION, text, len, GS_INVENTORY_MAX_BYTES,
                               GS_INVENTORY_VERSION, keys,
                               "v, generation, mig_state, mig_error, gpus", err);
    if (!o)
        return GS_EINVAL;
    int rc = GS_EINVAL;
    out->version = (int)json_integer_value(json_object_get(o, "v"));
    if (read_mig_status(o, out, err) ||
        gs__annot_gpus(o, GS_INVENTORY_ANNOTATION, out->gpus, sizeof(out->gpus[0]),
                       GS_MAX_GPUS_NODE, &out->ngpus, read_gpu_item, err))
        goto out;
    for (int k = 0; k < out->ngpus; k++) {
        char p[32];
        snprintf(p, sizeof(p), "gpus[%d]", k);
        if (out->version < 2 && gs_inv_gpu_has_links(&out->gpus[k])) {
            bad(err, p, "numa, pci and nvlink need version 2");
            goto out;
        }
        if (out->version < 3 && out->gpus[k].mode == GS_GPU_FRACTION) {
            bad(err, p, "sharing \"fractions\" needs version 3");
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(o);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}

static void write_links(json_t *o, const struct gs_inv_gpu *g)
{
    if (g->has_numa)
        json_object_set_new(o, "numa", json_integer(g->numa));
    if (g->pci[0])
        json_object_set_new(o, "pci", json_string(g->pci));
    json_t *nv = NULL;
    for (int j = 0; j < GS_MAX_GPUS_NODE; j++) {
        if (!g->nvlink[j] || j == g->index)
            continue;
        char k[8];
        snprintf(k, sizeof(k), "%d", j);
        if (!nv)
            nv = json_object();
        if (nv)
            json_object_set_new(nv, k, json_integer(g->nvlink[j]));
    }
    if (nv)
        json_object_set_new(o, "nvlink", nv);
}

char *gs_inventory_write(const struct gs_inventory *inv)
{
    bool links = false, fractions = false;
    json_t *gpus = json_array();
    for (int k = 0; gpus && k < inv->ngpus; k++) {
        const struct gs_inv_gpu *g = &inv->gpus[k];
        json_t *o = json_pack("{s:i, s:s, s:s, s:I}", "i", g->index, "uuid", g->uuid, "model",
                              g->model, "mem", (json_int_t)g->mem_mib);
        if (!o) {
            json_decref(gpus);
            return NULL;
        }
        if (!g->healthy)
            json_object_set_new(o, "health", json_string(g->health[0] ? g->health : "unhealthy"));
        if (g->mode == GS_GPU_MIG) {
            json_t *a = json_array();
            for (int s = 0; a && s < g->ninst; s++) {
                char t[GS_MIG_NAME_MAX + 8];
                gs_inv_inst_format(&g->inst[s], t, sizeof(t));
                json_array_append_new(a, json_string(t));
            }
            json_object_set_new(o, "mig", a ? a : json_null());
        } else if (g->mode == GS_GPU_FRACTION) {
            json_object_set_new(o, "sharing", json_string("fractions"));
            fractions = true;
        } else if (g->mode == GS_GPU_TIMESLICE || g->mode == GS_GPU_MPS) {
            json_object_set_new(o, "sharing",
                                json_string(g->mode == GS_GPU_MPS ? "mps" : "time-slicing"));
            json_object_set_new(o, "replicas", json_integer(g->replicas));
        }
        write_links(o, g);
        links = links || gs_inv_gpu_has_links(g);
        json_array_append_new(gpus, o);
    }
    json_t *top = gpus ? json_pack("{s:i}", "v", fractions ? 3 : links ? 2 : 1) : NULL;
    if (!top) {
        json_decref(gpus);
        return NULL;
    }
    if (inv->generation > 0)
        json_object_set_new(top, "generation", json_integer((json_int_t)inv->generation));
    if (inv->mig_state[0]) {
        json_object_set_new(top, "mig_state", json_string(inv->mig_state));
        json_t *why = strcmp(inv->mig_state, "success") ? json_string(inv->mig_error) : NULL;
        if (why || strcmp(inv->mig_state, "success"))
            json_object_set_new(top, "mig_error", why ? why : json_string("(not UTF-8)"));
    }
    json_object_set_new(top, "gpus", gpus);
    char *text = json_dumps(top, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(top);
    if (text && strlen(text) > GS_INVENTORY_MAX_BYTES) {
        free(text);
        return NULL;
    }
    return text;
}
