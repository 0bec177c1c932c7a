/* toposcen.c - the topology simulator's scenario reader (see toposcen.h), table-driven over
 * formats/yaml.c's bounded helpers. */
#include "toposcen.h"

#include "../base/error.h"
#include "../core/topo.h"
#include "yaml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum kind { K_INT, K_REAL };

struct row {
    const char *key;
    enum kind kind;
    size_t off;
    double lo, hi;
};

static const struct row top_rows[] = {
    {"blocks", K_INT, offsetof(struct gs_toposcen, blocks), 1, 64},
    {"subblocks", K_INT, offsetof(struct gs_toposcen, subblocks), 1, 64},
    {"nodes", K_INT, offsetof(struct gs_toposcen, nodes), 1, 64},
    {"gpus", K_INT, offsetof(struct gs_toposcen, gpus), 1, 16},
    {NULL, K_INT, 0, 0, 0},
};

/* Gb/s across the network's levels, GB/s over NVLink, into link_gbs[] (GB/s) */
static const struct row link_rows[] = {
    {"across_blocks_gbps", K_REAL, 0, 0.1, 1e5},
    {"across_subblocks_gbps", K_REAL, 1, 0.1, 1e5},
    {"across_nodes_gbps", K_REAL, 2, 0.1, 1e5},
    {"nvlink_gbs", K_REAL, 3, 0.1, 1e5},
    {NULL, K_REAL, 0, 0, 0},
};

static const struct row class_rows[] = {
    {"pods", K_INT, offsetof(struct gs_toposcen_class, pods), 1, 256},
    {"gpus", K_INT, offsetof(struct gs_toposcen_class, gpus), 1, 16},
    {"per_hour", K_REAL, offsetof(struct gs_toposcen_class, per_hour), 0, 1e4},
    {"compute_s", K_REAL, offsetof(struct gs_toposcen_class, compute_s), 0, 3600},
    {"gradient_gb", K_REAL, offsetof(struct gs_toposcen_class, grad_gb), 0, 1e4},
    {"steps", K_REAL, offsetof(struct gs_toposcen_class, steps), 1, 1e8},
    {"median_s", K_REAL, offsetof(struct gs_toposcen_class, median_s), 1, 1e7},
    {"sigma", K_REAL, offsetof(struct gs_toposcen_class, sigma), 0, 5},
    {NULL, K_INT, 0, 0, 0},
};

static const char *const level_keys[] = {GS_TOPOSCEN_BLOCK_KEY, GS_TOPOSCEN_SUBBLOCK_KEY,
                                         GS_TOPOSCEN_HOST_KEY};

/* key's value by its row into base; 1 when no row names key */
static int read_row(const struct gs_yaml *y, const struct row *rows, const char *key,
                    struct fy_node *v, const char *path, void *base, struct gs_error *err)
{
    for (const struct row *r = rows; r->key; r++) {
        if (strcmp(r->key, key) != 0)
            continue;
        if (r->kind == K_INT) {
            int64_t x;
            if (gs_yaml_int(y, v, path, (int64_t)r->lo, (int64_t)r->hi, &x, err))
                return GS_EINVAL;
            *(int *)((char *)base + r->off) = (int)x;
        } else {
            double x;
            if (gs_yaml_double(y, v, path, r->lo, r->hi, &x, err))
                return GS_EINVAL;
            *(double *)((char *)base + r->off) = x;
        }
        return 0;
    }
    return 1;
}

static int read_links(const struct gs_yaml *y, struct fy_node *n, struct gs_toposcen *s,
                      struct gs_error *err)
{
    if (!gs_yaml_is_map(n))
        return gs_yaml_fail(y, n, "links", err, "expected a mapping");
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
        char key[64], path[96];
        if (gs_yaml_key(p, key, sizeof(key)))
            return gs_yaml_fail(y, fy_node_pair_key(p), "links", err, "bad key");
        snprintf(path, sizeof(path), "links.%s", key);
        const struct row *r = link_rows;
        while (r->key && strcmp(r->key, key) != 0)
            r++;
        if (!r->key)
            return gs_yaml_fail(y, fy_node_pair_key(p), path, err,
                                "unexpected field (expected across_blocks_gbps, "
                                "across_subblocks_gbps, across_nodes_gbps, nvlink_gbs)");
        double x;
        if (gs_yaml_double(y, fy_node_pair_value(p), path, r->lo, r->hi, &x, err))
            return GS_EINVAL;
        s->link_gbs[r->off] = r->off < 3 ? x / 8 : x; /* Gb/s to GB/s; NVLink in GB/s */
    }
    return 0;
}

/* required / preferred: one of the levels' keys */
static int read_level(const struct gs_yaml *y, struct fy_node *v, const char *path, int mode,
                      struct gs_toposcen_class *k, struct gs_error *err)
{
    char key[GS_LABELS_KEY_MAX + 1];
    if (gs_yaml_str(y, v, path, key, sizeof(key), err))
        return GS_EINVAL;
    for (int l = 0; l < 3; l++)
        if (strcmp(key, level_keys[l]) == 0) {
            k->mode = mode;
            k->level = l;
            return 0;
        }
    return gs_yaml_fail(y, v, path, err, "'%s' is not a level (expected %s, %s or %s)", key,
                        level_keys[0], level_keys[1], level_keys[2]);
}

static int read_class(const struct gs_yaml *y, struct fy_node *n, int i,
                      struct gs_toposcen_class *k, struct gs_error *err)
{
    char path[96];
    snprintf(path, sizeof(path), "classes[%d]", i);
    if (!gs_yaml_is_map(n))
        return gs_yaml_fail(y, n, path, err, "expected a mapping");
    memset(k, 0, sizeof(*k));
    k->sigma = 0.5;
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
        char key[64], kp[160];
        if (gs_yaml_key(p, key, sizeof(key)))
            return gs_yaml_fail(y, fy_node_pair_key(p), path, err, "bad key");
        snprintf(kp, sizeof(kp), "%s.%s", path, key);
        struct fy_node *v = fy_node_pair_value(p);
        int rc;
        if (strcmp(key, "name") == 0)
            rc = gs_yaml_str(y, v, kp, k->name, sizeof(k->name), err);
        else if (strcmp(key, "required") == 0)
            rc = read_level(y, v, kp, GS_TOPO_REQUIRED, k, err);
        else if (strcmp(key, "preferred") == 0)
            rc = read_level(y, v, kp, GS_TOPO_PREFERRED, k, err);
        else if ((rc = read_row(y, class_rows, key, v, kp, k, err)) == 1)
            return gs_yaml_fail(y, fy_node_pair_key(p), kp, err,
                                "unexpected field (expected name, pods, gpus, per_hour, required, "
                                "preferred, compute_s, gradient_gb, steps, median_s, sigma)");
        if (rc)
            return GS_EINVAL;
    }
    if (!k->name[0])
        return gs_yaml_fail(y, n, path, err, "a class needs a name");
    if (k->compute_s > 0 ? k->steps <= 0 : k->median_s <= 0)
        return gs_yaml_fail(y, n, path, err,
                            "training (compute_s) needs steps, small work median_s");
    if (k->compute_s <= 0 && k->mode != GS_TOPO_ANY)
        return gs_yaml_fail(y, n, path, err, "only training classes (compute_s) ask a level");
    return 0;
}

static int parse_text(const char *name, const char *data, size_t len, int line_offset,
                      struct gs_toposcen *out, struct gs_error *err)
{
    struct gs_yaml y;
    int rc = gs_yaml_load_at(&y, name, data, len, line_offset, err);
    if (rc)
        return rc;
    struct gs_toposcen s = *out;
    struct fy_node *root = gs_yaml_root(&y);
    bool classes = false;
    rc = GS_EINVAL;
    if (!gs_yaml_is_map(root)) {
        gs_yaml_fail(&y, root, "", err, "expected a mapping");
        goto out;
    }
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(root, &it))) {
        char key[64];
        if (gs_yaml_key(p, key, sizeof(key))) {
            gs_yaml_fail(&y, fy_node_pair_key(p), "", err, "bad key");
            goto out;
        }
        struct fy_node *v = fy_node_pair_value(p);
        if (strcmp(key, "hours") == 0) {
            double h;
            if (gs_yaml_double(&y, v, key, 1, 24 * 30, &h, err))
                goto out;
            s.duration_s = h * 3600;
        } else if (strcmp(key, "links") == 0) {
            if (read_links(&y, v, &s, err))
                goto out;
        } else if (strcmp(key, "classes") == 0) {
            int n = gs_yaml_is_seq(v) ? fy_node_sequence_item_count(v) : -1;
            if (n < 1 || n > GS_TOPOSCEN_MAX_CLASSES) {
                gs_yaml_fail(&y, v, key, err, "expected a list of 1 to %d classes",
                             GS_TOPOSCEN_MAX_CLASSES);
                goto out;
            }
            for (int i = 0; i < n; i++)
                if (read_class(&y, fy_node_sequence_get_by_index(v, i), i, &s.cls[i], err))
                    goto out;
            s.nclasses = n;
            classes = true;
        } else {
            int r = read_row(&y, top_rows, key, v, key, &s, err);
            if (r == 1)
                gs_yaml_fail(&y, fy_node_pair_key(p), key, err,
                             "unexpected field (expected blocks, subblocks, nodes, gpus, hours, "
                             "links, classes)");
            if (r)
                goto out;
        }
    }
    for (int i = 0; i < s.nclasses; i++)
        if (s.cls[i].gpus > s.gpus) {
            gs_yaml_fail(&y, root, classes ? "classes" : "gpus", err,
                         "class '%s' asks %d GPUs per pod, a node has %d", s.cls[i].name,
                         s.cls[i].gpus, s.gpus);
            goto out;
        }
    *out = s;
    rc = 0;
out:
    gs_yaml_release(&y);
    return rc;
}

static int parse_any(const char *name, const char *data, size_t len, int line_offset, void *out,
                     struct gs_error *err)
{
    return parse_text(name, data, len, line_offset, (struct gs_toposcen *)out, err);
}

int gs_toposcen_parse(const char *name, const char *data, size_t len, struct gs_toposcen *out,
                      struct gs_error *err)
{
    return gs_yaml_read_unwrapped(name, data, len, parse_any, out, err);
}

int gs_toposcen_load(const char *path, struct gs_toposcen *out, struct gs_error *err)
{
    return gs_yaml_read_file(path, parse_any, out, err);
}
