/* dpconfig.c - table-driven reader for NVIDIA's device-plugin config; the node agent's
 * device plugin and the simulator's time-slicing and MPS node groups read replicas here. */
#include "dpconfig.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "yaml.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const char *gs_mig_strategy_name(enum gs_mig_strategy s)
{
    static const char *n[] = {"none", "single", "mixed"};
    return n[s];
}

const char *gs_sharing_name(enum gs_sharing s)
{
    static const char *n[] = {"none", "time-slicing", "mps"};
    return n[s];
}

static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '-' || c == '.'))
            return false;
    }
    return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

static int parse_resource(const struct gs_yaml *y, struct fy_node *n, const char *path, bool is_mps,
                          struct gs_dp_resource *r, struct gs_error *err)
{
    if (!gs_yaml_is_map(n))
        return gs_yaml_fail(y, n, path, err, "expected a mapping with name and replicas");
    memset(r, 0, sizeof(*r));
    r->all_devices = true;
    bool has_name = false, has_replicas = false;
    void *it = NULL;
    struct fy_node_pair *p;
    char key[32], sub[192];
    while ((p = fy_node_mapping_iterate(n, &it))) {
        struct fy_node *v = fy_node_pair_value(p);
        if (gs_yaml_key(p, key, sizeof(key)))
            return gs_yaml_fail(y, fy_node_pair_key(p), path, err, "expected a string key");
        snprintf(sub, sizeof(sub), "%s.%s", path, key);
        if (strcmp(key, "name") == 0) {
            char b[128];
            if (gs_yaml_str(y, v, sub, b, sizeof(b), err))
                return GS_EINVAL;
            if (!strchr(b, '/'))
                snprintf(r->name, sizeof(r->name), "nvidia.com/%.50s", b);
            else
                snprintf(r->name, sizeof(r->name), "%.63s", b);
            const char *slash = strchr(r->name, '/');
            const char *after = slash ? slash + 1 : ""; /* a name cut short before its '/' */
            if (strlen(r->name) > 63 || strlen(b) > 63 || !dns_subdomain(after))
                return gs_yaml_fail(y, v, sub, err,
                                    "'%s': expected <domain>/<name> within 63 characters, the "
                                    "name a DNS subdomain (lower-case letters, digits, '-', '.')",
                                    b);
            has_name = true;
        } else if (strcmp(key, "replicas") == 0) {
            int64_t rep;
            if (gs_yaml_int(y, v, sub, 2, is_mps ? 48 : 1024, &rep, err))
                return GS_EINVAL;
            r->replicas = (int)rep;
            has_replicas = true;
        } else if (strcmp(key, "rename") == 0) {
            if (gs_yaml_str(y, v, sub, r->rename, sizeof(r->rename), err))
                return GS_EINVAL;
        } else if (strcmp(key, "devices") == 0) {
            if (gs_yaml_is_scalar(v)) {
                char b[32];
                if (gs_yaml_str(y, v, sub, b, sizeof(b), err))
                    return GS_EINVAL;
                if (strcmp(b, "all") == 0)
                    r->all_devices = true;
                else {
                    int64_t cnt;
                    if (gs_yaml_int(y, v, sub, 1, 1024, &cnt, err))
                        return gs_yaml_fail(y, v, sub, err,
                                            "expected 'all', a device count or a list");
                    r->all_devices = false;
                    r->device_count = (int)cnt;
                }
            } else if (gs_yaml_is_seq(v)) {
                r->all_devices = false;
                void *it2 = NULL;
                struct fy_node *d;
                while ((d = fy_node_sequence_iterate(v, &it2))) {
                    if (r->ndevices >= GS_DP_MAX_DEVICES)
                        return gs_yaml_fail(y, d, sub, err, "more than %d devices",
                                            GS_DP_MAX_DEVICES);
                    char *dst = r->devices[r->ndevices];
                    if (gs_yaml_str(y, d, sub, dst, 64, err))
                        return GS_EINVAL;
                    bool ok = strncmp(dst, "GPU-", 4) == 0 || strncmp(dst, "MIG-", 4) == 0;
                    if (!ok) {
                        /* an index "i" or a MIG index "i:j" */
                        const char *c = dst;
                        int colons = 0, digits = 0;
                        for (; *c; c++) {
                            if (*c == ':')
                                colons++;
                            else if (isdigit((unsigned char)*c))
                                digits++;
                            else
                                break;
                        }
                        ok = !*c && digits > 0 && colons <= 1 && dst[0] != ':' &&
                             dst[strlen(dst) - 1] != ':';
                    }
                    if (!ok)
                        return gs_yaml_fail(y, d, sub, err,
                                            "'%s': expected a GPU index, a MIG index i:j, a "
                                            "GPU-<uuid> or a MIG-<uuid>",
                                            dst);
                    r->ndevices++;
                }
            } else {
                return gs_yaml_fail(y, v, sub, err, "expected 'all', a device count or a list");
            }
        } else {
            return gs_yaml_fail(y, fy_node_pair_key(p), sub, err,
                                "unexpected field (expected name, replicas, rename, devices)");
        }
    }
    if (!has_name)
        return gs_yaml_fail(y, n, path, err, "missing required field 'name'");
    if (!has_replicas)
        return gs_yaml_fail(y, n, path, err, "missing required field 'replicas' (>= 2)");
    return 0;
}

static int parse_sharing(const struct gs_yaml *y, struct fy_node *n, const char *path, bool is_mps,
                         struct gs_dp_sharing *s, struct gs_error *err)
{
    if (!gs_yaml_is_map(n))
        return gs_yaml_fail(y, n, path, err, "expected a mapping with resources");
    bool has_res = false;
    void *it = NULL;
    struct fy_node_pair *p;
    char key[48], sub[160];
    while ((p = fy_node_mapping_iterate(n, &it))) {
        struct fy_node *v = fy_node_pair_value(p);
        if (gs_yaml_key(p, key, sizeof(key)))
            return gs_yaml_fail(y, fy_node_pair_key(p), path, err, "expected a string key");
        snprintf(sub, sizeof(sub), "%s.%s", path, key);
        if (strcmp(key, "renameByDefault") == 0) {
            if (gs_yaml_bool(y, v, sub, &s->rename_by_default, err))
                return GS_EINVAL;
        } else if (strcmp(key, "failRequestsGreaterThanOne") == 0) {
            if (gs_yaml_bool(y, v, sub, &s->fail_requests_gt_one, err))
                return GS_EINVAL;
            s->fail_set = true;
        } else if (strcmp(key, "resources") == 0) {
            has_res = true;
            if (!gs_yaml_is_seq(v) || fy_node_sequence_item_count(v) == 0)
                return gs_yaml_fail(y, v, sub, err, "expected a non-empty list of resources");
            void *it2 = NULL;
            struct fy_node *r;
            while ((r = fy_node_sequence_iterate(v, &it2))) {
                char rp[192];
                snprintf(rp, sizeof(rp), "%s[%d]", sub, s->nresources);
                if (s->nresources >= GS_DP_MAX_RESOURCES)
                    return gs_yaml_fail(y, r, rp, err, "more than %d resources",
                                        GS_DP_MAX_RESOURCES);
                if (parse_resource(y, r, rp, is_mps, &s->resources[s->nresources], err))
                    return GS_EINVAL;
                s->nresources++;
            }
        } else {
            return gs_yaml_fail(y, fy_node_pair_key(p), sub, err,
                                "unexpected field (expected renameByDefault, "
                                "failRequestsGreaterThanOne, resources)");
        }
    }
    if (!has_res)
        return gs_yaml_fail(y, n, path, err, "missing required field 'resources'");
    if (!s->fail_set)
        s->fail_requests_gt_one = is_mps; /* upstream default: true for MPS */
    for (int i = 0; i < s->nresources; i++) {
        struct gs_dp_resource *r = &s->resources[i];
        if (s->rename_by_default && !r->rename[0]) {
            char base[64];
            memcpy(base, r->name, sizeof(base));
            base[55] = '\0';
            snprintf(r->rename, sizeof(r->rename), "%s.shared", base);
        }
    }
    return 0;
}

/* flag tables: name, kind, where */
enum fkind { F_BOOL, F_STR, F_IGNORE, F_LIST_STRATEGY };
struct flag_row {
    const char *name;
    enum fkind kind;
    size_t off; /* into struct gs_dpconfig for F_BOOL/F_STR */
    size_t size;
};

static const struct flag_row flag_rows[] = {
    {"failOnInitError", F_BOOL, offsetof(struct gs_dpconfig, fail_on_init_error), 0},
    {"nvidiaDriverRoot", F_STR, offsetof(struct gs_dpconfig, driver_root), 256},
    {"mpsRoot", F_STR, offsetof(struct gs_dpconfig, mps_root), 256},
    {"nvidiaDevRoot", F_IGNORE, 0, 0},
    {"gdrcopyEnabled", F_IGNORE, 0, 0},
    {"gdsEnabled", F_IGNORE, 0, 0},
    {"mofedEnabled", F_IGNORE, 0, 0},
    {"useNodeFeatureAPI", F_IGNORE, 0, 0},
    {"deviceDiscoveryStrategy", F_IGNORE, 0, 0},
    {"gfd", F_IGNORE, 0, 0},
};

static const struct flag_row plugin_rows[] = {
    {"passDeviceSpecs", F_BOOL, offsetof(struct gs_dpconfig, pass_device_specs), 0},
    {"deviceListStrategy", F_LIST_STRATEGY, 0, 0},
    {"deviceIDStrategy", F_STR, offsetof(struct gs_dpconfig, device_id_strategy), 16},
    {"cdiAnnotationPrefix", F_IGNORE, 0, 0},
    {"nvidiaCTKPath", F_IGNORE, 0, 0},
    {"containerDriverRoot", F_IGNORE, 0, 0},
    {"sharedDevicesAllocationPolicy", F_IGNORE, 0, 0},
};

/* deviceListStrategy: one of upstream's strategies, or a list of them (the plugin's
 * --device-list-strategy is a string slice); what the agent does is its own, but a value the
 * plugin would refuse is refused here too, at the value's line */
static int list_strategy(const struct gs_yaml *y, struct fy_node *v, const char *path,
                         struct gs_error *err)
{
    static const char *const ok[] = {"envvar", "volume-mounts", "cdi-annotations", "cdi-cri"};
    struct fy_node *one = v;
    void *it = NULL;
    if (gs_yaml_is_seq(v) && !(one = fy_node_sequence_iterate(v, &it)))
        return gs_yaml_fail(y, v, path, err,
                            "expected envvar, volume-mounts, cdi-annotations or cdi-cri");
    for (; one; one = gs_yaml_is_seq(v) ? fy_node_sequence_iterate(v, &it) : NULL) {
        char b[32];
        if (!gs_yaml_is_scalar(one) || gs_yaml_str(y, one, path, b, sizeof(b), err))
            return gs_yaml_fail(y, one, path, err,
                                "expected envvar, volume-mounts, cdi-annotations or cdi-cri");
        size_t i = 0;
        while (i < sizeof(ok) / sizeof(ok[0]) && strcmp(b, ok[i]) != 0)
            i++;
        if (i == sizeof(ok) / sizeof(ok[0]))
            return gs_yaml_fail(y, one, path, err,
                                "'%s': expected envvar, volume-mounts, cdi-annotations or cdi-cri "
                                "(NVIDIA's device plugin accepts no other)",
                                b);
    }
    return 0;
}

static int apply_row(const struct gs_yaml *y, const struct flag_row *rows, size_t nrows,
                     const char *key, struct fy_node *v, const char *sub, struct gs_dpconfig *c,
                     struct gs_error *err, bool *found)
{
    *found = false;
    for (size_t i = 0; i < nrows; i++) {
        if (strcmp(rows[i].name, key) != 0)
            continue;
        *found = true;
        if (rows[i].kind == F_BOOL)
            return gs_yaml_bool(y, v, sub, (bool *)((char *)c + rows[i].off), err);
        if (rows[i].kind == F_STR)
            return gs_yaml_str(y, v, sub, (char *)c + rows[i].off, rows[i].size, err);
        if (rows[i].kind == F_LIST_STRATEGY)
            return list_strategy(y, v, sub, err);
        return 0;
    }
    return 0;
}

static int parse_flags(const struct gs_yaml *y, struct fy_node *n, struct gs_dpconfig *c,
                       struct gs_error *err)
{
    if (!gs_yaml_is_map(n))
        return gs_yaml_fail(y, n, "flags", err, "expected a mapping");
    void *it = NULL;
    struct fy_node_pair *p;
    char key[48], sub[96];
    while ((p = fy_node_mapping_iterate(n, &it))) {
        struct fy_node *v = fy_node_pair_value(p);
        if (gs_yaml_key(p, key, sizeof(key)))
            return gs_yaml_fail(y, fy_node_pair_key(p), "flags", err, "expected a string key");
        snprintf(sub, sizeof(sub), "flags.%s", key);
        bool found;
        if (strcmp(key, "migStrategy") == 0) {
            char b[16];
            if (gs_yaml_str(y, v, sub, b, sizeof(b), err))
                return GS_EINVAL;
            if (strcmp(b, "none") == 0)
                c->mig_strategy = GS_MIG_STRATEGY_NONE;
            else if (strcmp(b, "single") == 0)
                c->mig_strategy = GS_MIG_STRATEGY_SINGLE;
            else if (strcmp(b, "mixed") == 0)
                c->mig_strategy = GS_MIG_STRATEGY_MIXED;
            else
                return gs_yaml_fail(y, v, sub, err, "'%s': expected none, single or mixed", b);
        } else if (strcmp(key, "plugin") == 0) {
            if (!gs_yaml_is_map(v))
                return gs_yaml_fail(y, v, sub, err, "expected a mapping");
            void *it2 = NULL;
            struct fy_node_pair *pp;
            struct fy_node *id_node = NULL; /* deviceIDStrategy's value, for its line */
            char k2[48], s2[128];
            while ((pp = fy_node_mapping_iterate(v, &it2))) {
                if (gs_yaml_key(pp, k2, sizeof(k2)))
                    return gs_yaml_fail(y, fy_node_pair_key(pp), sub, err, "expected a key");
                snprintf(s2, sizeof(s2), "%s.%s", sub, k2);
                if (strcmp(k2, "deviceIDStrategy") == 0)
                    id_node = fy_node_pair_value(pp);
                if (apply_row(y, plugin_rows, sizeof(plugin_rows) / sizeof(plugin_rows[0]), k2,
                              fy_node_pair_value(pp), s2, c, err, &found))
                    return GS_EINVAL;
                if (!found)
                    return gs_yaml_fail(y, fy_node_pair_key(pp), s2, err, "unexpected field");
            }
            if (c->device_id_strategy[0] && strcmp(c->device_id_strategy, "uuid") != 0 &&
                strcmp(c->device_id_strategy, "index") != 0)
                return gs_yaml_fail(y, id_node ? id_node : v, "flags.plugin.deviceIDStrategy", err,
                                    "'%s': expected uuid or index", c->device_id_strategy);
        } else {
            if (apply_row(y, flag_rows, sizeof(flag_rows) / sizeof(flag_rows[0]), key, v, sub, c,
                          err, &found))
                return GS_EINVAL;
            if (!found)
                return gs_yaml_fail(y, fy_node_pair_key(p), sub, err, "unexpected field");
        }
    }
    return 0;
}

static int parse_text(const char *name, const char *data, size_t len, int line_offset,
                      struct gs_dpconfig *out, struct gs_error *err)
{
    struct gs_dpconfig c;
    memset(&c, 0, sizeof(c));
    c.fail_on_init_error = true;
    c.imex_channels = -1;
    snprintf(c.device_id_strategy, sizeof(c.device_id_strategy), "uuid");
    struct gs_yaml y;
    int rc = gs_yaml_load_at(&y, name, data, len, line_offset, err);
    if (rc)
        return rc;
    rc = GS_EINVAL;
    struct fy_node *root = gs_yaml_root(&y);
    struct fy_node *mps_key = NULL; /* sharing.mps, for the line of an error about it */
    if (root && !gs_yaml_is_map(root)) {
        gs_yaml_fail(&y, root, "(top)", err, "expected a mapping");
        goto out;
    }
    void *it = NULL;
    struct fy_node_pair *p;
    char key[32];
    while (root && (p = fy_node_mapping_iterate(root, &it))) {
        struct fy_node *v = fy_node_pair_value(p);
        if (gs_yaml_key(p, key, sizeof(key))) {
            gs_yaml_fail(&y, fy_node_pair_key(p), "(top)", err, "expected a string key");
            goto out;
        }
        if (strcmp(key, "version") == 0) {
            char b[8];
            if (gs_yaml_str(&y, v, "version", b, sizeof(b), err) || strcmp(b, "v1") != 0) {
                gs_yaml_fail(&y, v, "version", err, "unknown version (expected v1)");
                goto out;
            }
        } else if (strcmp(key, "flags") == 0) {
            if (parse_flags(&y, v, &c, err))
                goto out;
        } else if (strcmp(key, "resources") == 0) {
            /* accepted and ignored, as upstream does today */
        } else if (strcmp(key, "sharing") == 0) {
            if (!gs_yaml_is_map(v)) {
                gs_yaml_fail(&y, v, "sharing", err, "expected timeSlicing and/or mps");
                goto out;
            }
            void *it2 = NULL;
            struct fy_node_pair *sp;
            char k2[32];
            while ((sp = fy_node_mapping_iterate(v, &it2))) {
                gs_yaml_key(sp, k2, sizeof(k2));
                if (strcmp(k2, "timeSlicing") == 0) {
                    if (parse_sharing(&y, fy_node_pair_value(sp), "sharing.timeSlicing", false,
                                      &c.timeslicing, err))
                        goto out;
                } else if (strcmp(k2, "mps") == 0) {
                    mps_key = fy_node_pair_key(sp);
                    if (parse_sharing(&y, fy_node_pair_value(sp), "sharing.mps", true, &c.mps, err))
                        goto out;
                } else {
                    gs_yaml_fail(&y, fy_node_pair_key(sp), "sharing", err,
                                 "unexpected field '%s' (expected timeSlicing, mps)", k2);
                    goto out;
                }
            }
        } else if (strcmp(key, "imex") == 0) {
            struct fy_node *ch = gs_yaml_is_map(v)
                                     ? fy_node_mapping_lookup_by_string(v, "channelIDs", (size_t)-1)
                                     : NULL;
            if (!gs_yaml_is_map(v)) {
                gs_yaml_fail(&y, v, "imex", err, "expected channelIDs and required");
                goto out;
            }
            if (ch) {
                int n = gs_yaml_is_seq(ch) ? fy_node_sequence_item_count(ch) : -1;
                int64_t id = -1;
                if (n == 1)
                    gs_yaml_int(&y, fy_node_sequence_get_by_index(ch, 0), "imex.channelIDs", 0, 0,
                                &id, NULL);
                if (n < 0 || n > 1 || (n == 1 && id != 0)) {
                    gs_yaml_fail(&y, ch, "imex.channelIDs", err, "only [] or [0] are valid");
                    goto out;
                }
                c.imex_channels = n == 1 ? 0 : -1;
            }
        } else {
            gs_yaml_fail(&y, fy_node_pair_key(p), key, err,
                         "unexpected field (expected version, flags, resources, sharing, imex)");
            goto out;
        }
    }
    bool mps = false, ts = false;
    for (int i = 0; i < c.mps.nresources; i++)
        mps |= c.mps.resources[i].replicas > 1;
    for (int i = 0; i < c.timeslicing.nresources; i++)
        ts |= c.timeslicing.resources[i].replicas > 1;
    c.sharing = mps ? GS_SHARING_MPS : ts ? GS_SHARING_TIMESLICING : GS_SHARING_NONE;
    if (mps && c.mig_strategy == GS_MIG_STRATEGY_MIXED) {
        gs_yaml_fail(&y, mps_key ? mps_key : root, "sharing.mps", err,
                     "MPS sharing is not supported with migStrategy mixed");
        goto out;
    }
    if (mps && !c.mps_root[0])
        snprintf(c.mps_root, sizeof(c.mps_root), "/run/nvidia/mps");
    *out = c;
    rc = 0;
out:
    gs_yaml_release(&y);
    return rc;
}

static int parse_any(const char *name, const char *data, size_t len, int line_offset, void *out,
                     struct gs_error *err)
{
    return parse_text(name, data, len, line_offset, (struct gs_dpconfig *)out, err);
}

int gs_dpconfig_parse(const char *name, const char *data, size_t len, struct gs_dpconfig *out,
                      struct gs_error *err)
{
    return gs_yaml_read_unwrapped(name, data, len, parse_any, out, err);
}

int gs_dpconfig_load(const char *path, struct gs_dpconfig *out, struct gs_error *err)
{
    return gs_yaml_read_file(path, parse_any, out, err);
}
