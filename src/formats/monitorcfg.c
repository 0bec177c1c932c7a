/* monitorcfg.c - reader of the article's gpu-monitor-config (see monitorcfg.h). */
#include "monitorcfg.h"

#include "../base/error.h"
#include "scenario.h"
#include "yaml.h"

#include <stdio.h>
#include <string.h>

struct ctx {
    const char *const *known, *const *reserved;
    struct gs_monitor_config cfg;
};

static bool listed(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0)
            return true;
    return false;
}

/* Prometheus label names: [a-zA-Z_][a-zA-Z0-9_]*, and "__" is reserved for internal use. */
static bool label_name_ok(const char *s)
{
    if (!*s || (s[0] == '_' && s[1] == '_'))
        return false;
    for (const char *c = s; *c; c++) {
        bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_';
        if (!alpha && !(c > s && *c >= '0' && *c <= '9'))
            return false;
    }
    return true;
}

static int read_metrics(const struct gs_yaml *y, struct fy_node *v, struct ctx *c,
                        struct gs_error *err)
{
    if (!gs_yaml_is_seq(v))
        return gs_yaml_fail(y, v, "metrics", err, "expected a list of metric names");
    void *it = NULL;
    struct fy_node *m;
    int i = 0;
    while ((m = fy_node_sequence_iterate(v, &it))) {
        char path[32], name[48];
        snprintf(path, sizeof(path), "metrics[%d]", i++);
        if (c->cfg.nmetrics >= GS_MON_MAX_METRICS)
            return gs_yaml_fail(y, m, path, err, "more than %d metrics", GS_MON_MAX_METRICS);
        if (gs_yaml_str(y, m, path, name, sizeof(name), err))
            return GS_EINVAL;
        if (!listed(c->known, name)) {
            char all[512] = "";
            for (const char *const *k = c->known; k && *k; k++)
                snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s",
                         k == c->known ? "" : ", ", *k);
            return gs_yaml_fail(y, m, path, err, "'%s' is not a metric gpusched exports (%s)", name,
                                all);
        }
        for (int k = 0; k < c->cfg.nmetrics; k++)
            if (strcmp(c->cfg.metrics[k], name) == 0)
                return gs_yaml_fail(y, m, path, err, "'%s' is listed twice", name);
        snprintf(c->cfg.metrics[c->cfg.nmetrics++], sizeof(c->cfg.metrics[0]), "%s", name);
    }
    if (c->cfg.nmetrics == 0)
        return gs_yaml_fail(y, v, "metrics", err,
                            "an empty list exports nothing; leave it out to export every metric");
    return 0;
}

static int read_labels(const struct gs_yaml *y, struct fy_node *v, struct ctx *c,
                       struct gs_error *err)
{
    if (!gs_yaml_is_map(v))
        return gs_yaml_fail(y, v, "labels", err, "expected a mapping of label names to values");
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(v, &it))) {
        char key[64], path[96];
        if (gs_yaml_key(p, key, sizeof(key)))
            return gs_yaml_fail(y, fy_node_pair_key(p), "labels", err,
                                "expected a label name of at most 63 characters");
        snprintf(path, sizeof(path), "labels.%s", key);
        if (!label_name_ok(key))
            return gs_yaml_fail(y, fy_node_pair_key(p), path, err,
                                "not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not "
                                "starting with __)");
        if (listed(c->reserved, key))
            return gs_yaml_fail(y, fy_node_pair_key(p), path, err,
                                "gpusched sets this label on every series itself");
        if (c->cfg.nlabels >= GS_MON_MAX_LABELS)
            return gs_yaml_fail(y, fy_node_pair_key(p), path, err, "more than %d labels",
                                GS_MON_MAX_LABELS);
        int n = c->cfg.nlabels;
        if (gs_yaml_str(y, fy_node_pair_value(p), path, c->cfg.label_value[n],
                        sizeof(c->cfg.label_value[n]), err))
            return GS_EINVAL;
        if (!c->cfg.label_value[n][0])
            return gs_yaml_fail(y, fy_node_pair_value(p), path, err, "expected a non-empty value");
        snprintf(c->cfg.label_name[n], sizeof(c->cfg.label_name[n]), "%s", key);
        c->cfg.nlabels++;
    }
    return 0;
}

static int read_text(const char *name, const char *data, size_t len, int line_offset, void *out,
                     struct gs_error *err)
{
    struct ctx *c = out;
    struct gs_yaml y;
    int rc = gs_yaml_load_at(&y, name, data, len, line_offset, err);
    if (rc)
        return rc;
    struct fy_node *root = gs_yaml_root(&y);
    if (!gs_yaml_is_map(root)) {
        rc = gs_yaml_fail(&y, root, "(document)", err,
                          "expected an object with metrics, scrape_interval and labels");
        goto out;
    }
    void *it = NULL;
    struct fy_node_pair *p;
    while (!rc && (p = fy_node_mapping_iterate(root, &it))) {
        char key[48];
        struct fy_node *v = fy_node_pair_value(p);
        if (gs_yaml_key(p, key, sizeof(key))) {
            rc = gs_yaml_fail(&y, fy_node_pair_key(p), "(document)", err, "expected a field name");
        } else if (strcmp(key, "metrics") == 0) {
            rc = read_metrics(&y, v, c, err);
        } else if (strcmp(key, "labels") == 0) {
            rc = read_labels(&y, v, c, err);
        } else if (strcmp(key, "scrape_interval") == 0) {
            char s[32];
            double sec = 0;
            if ((rc = gs_yaml_str(&y, v, key, s, sizeof(s), err)))
                break;
            if (gs_parse_duration(s, &sec) || sec < 0.1 || sec > 3600)
                rc = gs_yaml_fail(&y, v, key, err,
                                  "'%s': expected a duration from 100ms to 1h, like \"15s\"", s);
            c->cfg.scrape_interval_s = sec;
        } else {
            rc = gs_yaml_fail(&y, fy_node_pair_key(p), key, err,
                              "unexpected field (expected metrics, scrape_interval, labels)");
        }
    }
out:
    gs_yaml_release(&y);
    return rc;
}

int gs_monitor_config_load(const char *path, const char *const *known, const char *const *reserved,
                           struct gs_monitor_config *out, struct gs_error *err)
{
    struct ctx c;
    memset(&c, 0, sizeof(c));
    c.known = known;
    c.reserved = reserved;
    int rc = gs_yaml_read_file(path, read_text, &c, err);
    if (rc == 0)
        *out = c.cfg;
    return rc;
}
