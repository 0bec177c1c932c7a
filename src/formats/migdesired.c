/* migdesired.c - the desired MIG layout annotation (see migdesired.h): the scheduler writes
 * it, the node agent's MIG manager (agent/agent.c, agent/migmgr.c) reads it and reports what
 * became of it in the inventory (inventory.c, whose instance notation it shares). Bounded as
 * the inventory is: the text's size, the GPUs per node and the instances per GPU. */
#include "migdesired.h"

#include "../base/error.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(struct gs_error *err, const char *path, const char *what)
{
    return gs_error_set(err, GS_EINVAL, "%s annotation: %s: %s", GS_MIG_DESIRED_ANNOTATION, path,
                        what);
}

/* Refuse a field of o not in keys; expect names them for the message. */
static int known_fields(const json_t *o, const char *const *keys, const char *path,
                        const char *expect, struct gs_error *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        bool known = false;
        for (int k = 0; keys[k] && !known; k++)
            known = strcmp(key, keys[k]) == 0;
        if (known)
            continue;
        char p[96], what[96];
        snprintf(p, sizeof(p), "%s%s%.40s", path, *path ? "." : "", key);
        snprintf(what, sizeof(what), "unknown field (expected %s)", expect);
        return bad(err, p, what);
    }
    return 0;
}

static int read_gpu(const json_t *g, struct gs_mig_desired_gpu *out, const char *path,
                    struct gs_error *err)
{
    static const char *const keys[] = {"i", "mig", "whole", NULL};
    char p[64];
    if (!json_is_object(g))
        return bad(err, path, "expected an object with i and either mig or whole");
    if (known_fields(g, keys, path, "i, mig, whole", err))
        return GS_EINVAL;
    memset(out, 0, sizeof(*out));
    const json_t *i = json_object_get(g, "i");
    snprintf(p, sizeof(p), "%s.i", path);
    if (!json_is_integer(i) || json_integer_value(i) < 0 ||
        json_integer_value(i) >= GS_MAX_GPUS_NODE)
        return gs_error_set(err, GS_EINVAL, "%s annotation: %s: expected a GPU index 0 to %d",
                            GS_MIG_DESIRED_ANNOTATION, p, GS_MAX_GPUS_NODE - 1);
    out->index = (int)json_integer_value(i);
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

static int cmp_index(const void *a, const void *b)
{
    const struct gs_mig_desired_gpu *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

int gs_mig_desired_read(const char *text, size_t len, struct gs_mig_desired *out,
                        struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    if (len > GS_MIG_DESIRED_MAX_BYTES)
        return gs_error_set(err, GS_EINVAL, "%s annotation: %zu bytes, at most %d",
                            GS_MIG_DESIRED_ANNOTATION, len, GS_MIG_DESIRED_MAX_BYTES);
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return gs_error_set(err, GS_EINVAL, "%s annotation: column %d: %s",
                            GS_MIG_DESIRED_ANNOTATION, je.column, je.text);
    int rc = GS_EINVAL;
    static const char *const keys[] = {"v", "generation", "gpus", NULL};
    if (!json_is_object(o)) {
        bad(err, "(top)", "expected an object with v, generation and gpus");
        goto out;
    }
    if (known_fields(o, keys, "", "v, generation, gpus", err))
        goto out;
    const json_t *ver = json_object_get(o, "v");
    if (!json_is_integer(ver) || json_integer_value(ver) != GS_MIG_DESIRED_VERSION) {
        gs_error_set(err, GS_EINVAL, "%s annotation: v: expected version %d",
                     GS_MIG_DESIRED_ANNOTATION, GS_MIG_DESIRED_VERSION);
        goto out;
    }
    out->version = GS_MIG_DESIRED_VERSION;
    const json_t *gen = json_object_get(o, "generation");
    if (!json_is_integer(gen) || json_integer_value(gen) < 1) {
        bad(err, "generation", "expected a generation of 1 or more");
        goto out;
    }
    out->generation = (int64_t)json_integer_value(gen);
    const json_t *gpus = json_object_get(o, "gpus");
    if (!json_is_array(gpus)) {
        bad(err, "gpus", "expected a list");
        goto out;
    }
    if (json_array_size(gpus) > GS_MAX_GPUS_NODE) {
        gs_error_set(err, GS_EINVAL, "%s annotation: gpus: %zu GPUs, at most %d",
                     GS_MIG_DESIRED_ANNOTATION, json_array_size(gpus), GS_MAX_GPUS_NODE);
        goto out;
    }
    size_t k;
    const json_t *v;
    json_array_foreach(gpus, k, v)
    {
        char p[32];
        snprintf(p, sizeof(p), "gpus[%zu]", k);
        if (read_gpu(v, &out->gpus[out->ngpus], p, err))
            goto out;
        for (int j = 0; j < out->ngpus; j++)
            if (out->gpus[j].index == out->gpus[out->ngpus].index) {
                char q[40];
                snprintf(q, sizeof(q), "gpus[%zu].i", k);
                bad(err, q, "GPU index given twice");
                goto out;
            }
        out->ngpus++;
    }
    qsort(out->gpus, (size_t)out->ngpus, sizeof(out->gpus[0]), cmp_index);
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
