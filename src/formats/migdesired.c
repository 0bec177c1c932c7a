/* migdesired.c - the desired MIG layout annotation (see migdesired.h): the scheduler writes
 * it, the node agent's MIG manager (agent/reconciler.c, agent/migmgr.c) reads it and reports what
 * became of it in the inventory (inventory.c, whose instance notation it shares). Bounded as
 * the inventory is: the text's size, the GPUs per node and the instances per GPU. */
#include "migdesired.h"

#include "../base/error.h"
#include "annot.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(struct gs_error *err, const char *path, const char *what)
{
    return gs__annot_bad(err, GS_MIG_DESIRED_ANNOTATION, path, what);
}

static int read_gpu(const json_t *g, struct gs_mig_desired_gpu *out, const char *path,
                    struct gs_error *err)
{
    static const char *const keys[] = {"i", "mig", "whole", NULL};
    char p[64];
    if (!json_is_object(g))
        return bad(err, path, "expected an object with i and either mig or whole");
    if (gs__annot_known(g, GS_MIG_DESIRED_ANNOTATION, path, keys, "i, mig, whole", err))
        return GS_EINVAL;
    memset(out, 0, sizeof(*out));
    if (gs__annot_index(g, GS_MIG_DESIRED_ANNOTATION, path, GS_MAX_GPUS_NODE, &out->index, err))
        return GS_EINVAL;
    const json_t *mig = json_object_get(g, "mig"), *whole = json_object_get(g, "whole");
    if (whole) {
        snprintf(p, sizeof(p), "%s.whole", path);
        if (!json_is_true(whole))
            return bad(err, p, "expected true (MIG mode off); a MIG layout is given as mig");
        if (mig)
            return bad(err, p, "a GPU is either whole or carved by mig, not both");
        out->whole = true;
        return 0;
    }
    snprintf(p, sizeof(p), "%s.mig", path);
    if (!mig)
        return bad(err, path, "expected either mig (a list of \"<profile>@<start>\") or whole");
    if (!json_is_array(mig))
        return bad(err, p, "expected a list of \"<profile>@<start>\"");
    if (json_array_size(mig) > GS_INV_MAX_INST)
        return gs_error_set(err, GS_EINVAL, "%s annotation: %s: %zu instances, at most %d",
                            GS_MIG_DESIRED_ANNOTATION, p, json_array_size(mig), GS_INV_MAX_INST);
    size_t k;
    const json_t *v;
    json_array_foreach(mig, k, v)
    {
        snprintf(p, sizeof(p), "%s.mig[%zu]", path, k);
        if (!json_is_string(v) || gs_inv_inst_parse(json_string_value(v), &out->inst[out->ninst]))
            return bad(err, p,
                       "expected \"<profile>@<start>\": a MIG profile (\"3g.40gb\") and a start "
                       "of 0 to 7");
        out->ninst++;
    }
    return 0;
}

_Static_assert(offsetof(struct gs_mig_desired_gpu, index) == 0,
               "annot.h: entries begin with their index");

static int read_gpu_item(const json_t *g, void *item, const char *path, struct gs_error *err)
{
    return read_gpu(g, item, path, err);
}

int gs_mig_desired_read(const char *text, size_t len, struct gs_mig_desired *out,
                        struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    static const char *const keys[] = {"v", "generation", "gpus", NULL};
    json_t *o = gs__annot_load(GS_MIG_DESIRED_ANNOTATION, text, len, GS_MIG_DESIRED_MAX_BYTES,
                               GS_MIG_DESIRED_VERSION, keys, "v, generation, gpus", err);
    if (!o)
        return GS_EINVAL;
    int rc = GS_EINVAL;
    out->version = GS_MIG_DESIRED_VERSION;
    const json_t *gen = json_object_get(o, "generation");
    if (!json_is_integer(gen) || json_integer_value(gen) < 1) {
        bad(err, "generation", "expected a generation of 1 or more");
        goto out;
    }
    out->generation = (int64_t)json_integer_value(gen);
    if (gs__annot_gpus(o, GS_MIG_DESIRED_ANNOTATION, out->gpus, sizeof(out->gpus[0]),
                       GS_MAX_GPUS_NODE, &out->ngpus, read_gpu_item, err))
        goto out;
    rc = 0;
out:
    json_decref(o);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}

char *gs_mig_desired_write(const struct gs_mig_desired *d)
{
    int n = d->ngpus < 0 ? 0 : d->ngpus > GS_MAX_GPUS_NODE ? GS_MAX_GPUS_NODE : d->ngpus;
    int order[GS_MAX_GPUS_NODE];
    for (int k = 0; k < n; k++) { /* index order, without moving d's entries */
        int j = k;
        for (; j > 0 && d->gpus[order[j - 1]].index > d->gpus[k].index; j--)
            order[j] = order[j - 1];
        order[j] = k;
    }
    json_t *gpus = json_array();
    for (int k = 0; gpus && k < n; k++) {
        const struct gs_mig_desired_gpu *g = &d->gpus[order[k]];
        json_t *o = json_pack("{s:i}", "i", g->index);
        json_t *v = g->whole ? json_true() : json_array();
        int ni = g->ninst < 0 ? 0 : g->ninst > GS_INV_MAX_INST ? GS_INV_MAX_INST : g->ninst;
        for (int s = 0; v && !g->whole && s < ni; s++) {
            char t[GS_MIG_NAME_MAX + 8];
            gs_inv_inst_format(&g->inst[s], t, sizeof(t));
            if (json_array_append_new(v, json_string(t))) {
                json_decref(v);
                v = NULL;
            }
        }
        if (!o || !v) {
            json_decref(o);
            json_decref(v);
            json_decref(gpus);
            return NULL;
        }
        /* both steal their value's reference, even when they fail */
        if (json_object_set_new(o, g->whole ? "whole" : "mig", v)) {
            json_decref(o);
            json_decref(gpus);
            return NULL;
        }
        if (json_array_append_new(gpus, o)) {
            json_decref(gpus);
            return NULL;
        }
    }
    json_t *top = gpus ? json_pack("{s:i, s:I, s:o}", "v", GS_MIG_DESIRED_VERSION, "generation",
                                   (json_int_t)d->generation, "gpus", gpus)
                       : NULL;
    if (!top)
        return NULL;
    char *text = json_dumps(top, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(top);
    if (text && strlen(text) > GS_MIG_DESIRED_MAX_BYTES) {
        free(text);
        return NULL;
    }
    return text;
}

const struct gs_mig_desired_gpu *gs_mig_desired_find(const struct gs_mig_desired *d, int index)
{
    for (int k = 0; k < d->ngpus; k++)
        if (d->gpus[k].index == index)
            return &d->gpus[k];
    return NULL;
}
