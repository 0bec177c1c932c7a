/* migparted.c - reader and geometry check for NVIDIA mig-parted configs; `gpusched mig
 * validate`, the simulator's MIG node groups and the node agent's MIG manager use it. */
#include "migparted.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "yaml.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A slice count: one or two digits, not zero; advances *p past it. */
static bool count_ok(const char **p)
{
    int num = 0, nd = 0;
    while (isdigit((unsigned char)**p)) {
        num = num * 10 + (**p - '0');
        (*p)++;
        if (++nd > 2)
            return false;
    }
    return nd && num != 0;
}

bool gs_mig_profile_syntax_ok(const char *s)
{
    /* [<C>c.]<G>g.<GB>gb[+attr[,attr...]] or ...-attr */
    const char *p = s;
    size_t n = strlen(s);
    if (n == 0 || n > 31)
        return false;
    for (size_t i = 0; i < n; i++)
        if (isspace((unsigned char)s[i]))
            return false;
    if (strchr(s, '+') && strchr(s, '-'))
        return false;
    /* first number then 'c' or 'g' */
    if (!count_ok(&p))
        return false;
    if (*p == 'c') {
        if (p[1] != '.')
            return false;
        p += 2;
        if (!count_ok(&p))
            return false;
    }
    if (*p != 'g' || p[1] != '.')
        return false;
    p += 2;
    int nd = 0;
    while (isdigit((unsigned char)*p)) {
        p++;
        nd++;
        if (nd > 4)
            return false;
    }
    if (!nd || strncmp(p, "gb", 2) != 0)
        return false;
    p += 2;
    if (*p == '\0')
        return true;
    if (*p != '+' && *p != '-')
        return false;
    p++;
    if (!*p)
        return false;
    /* attributes: alnum and '.', not starting with digit or '.', unique, non-empty */
    char attrs[8][16];
    int na = 0;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 0 || l >= 16 || isdigit((unsigned char)p[0]) || p[0] == '.' || na >= 8)
            return false;
        for (size_t i = 0; i < l; i++)
            if (!isalnum((unsigned char)p[i]) && p[i] != '.')
                return false;
        memcpy(attrs[na], p, l);
        attrs[na][l] = '\0';
        for (int k = 0; k < na; k++)
            if (strcmp(attrs[k], attrs[na]) == 0)
                return false;
        na++;
        p += l + (e ? 1 : 0);
        if (e && !*p)
            return false;
    }
    return true;
}

/* "0xDDDDVVVV[:0xSSSSSSSS]" into the device/vendor word and the optional subsystem word. */
static int parse_filter(const char *s, uint32_t *out, uint32_t *sub_out, bool *has_sub)
{
    /* 0xDDDDVVVV[:0xSSSSSSSS]; we keep the device/vendor word */
    char b[32];
    snprintf(b, sizeof(b), "%s", s);
    char *colon = strchr(b, ':');
    if (colon)
        *colon = '\0';
    char *end;
    errno = 0;
    unsigned long v = strtoul(b, &end, 0);
    if (errno || end == b || *end || v > 0xFFFFFFFFul)
        return GS_EINVAL;
    unsigned long sub = 0;
    if (colon) {
        errno = 0;
        sub = strtoul(colon + 1, &end, 0);
        if (errno || end == colon + 1 || *end || sub > 0xFFFFFFFFul)
            return GS_EINVAL;
    }
    *out = (uint32_t)v;
    *sub_out = (uint32_t)sub;
    *has_sub = colon != NULL;
    return 0;
}

/* True when some GPU can pass both entries' device-filters (no filter passes every GPU). */
static bool filters_overlap(const struct gs_mp_entry *a, const struct gs_mp_entry *b)
{
    if (a->nfilters == 0 || b->nfilters == 0)
        return true;
    for (int i = 0; i < a->nfilters; i++)
        for (int j = 0; j < b->nfilters; j++)
            if (a->filter[i] == b->filter[j] && (!a->filter_has_sub[i] || !b->filter_has_sub[j] ||
                                                 a->filter_sub[i] == b->filter_sub[j]))
                return true;
    return false;
}

static bool lists_device(const struct gs_mp_entry *e, int idx)
{
    for (int d = 0; d < e->ndevices; d++)
        if (e->devices[d] == idx)
            return true;
    return false;
}

/* A GPU the entry e (devices node dn, at path) shares with an earlier entry of its config
 * (prev[0..nprev), named cfgpath[k]) is refused: upstream would apply both, the later one
 * silently undoing the earlier. */
static int check_overlap(const struct gs_yaml *y, struct fy_node *dn, const char *path,
                         const struct gs_mp_entry *e, const char *cfgpath,
                         const struct gs_mp_entry *prev, int nprev, struct gs_error *err)
{
    static const char hint[] = "each GPU may be in one entry of a config";
    for (int k = 0; k < nprev; k++) {
        const struct gs_mp_entry *p = &prev[k];
        if (!filters_overlap(e, p))
            continue;
        int pline = p->devices_line + y->line_offset;
        if (e->all_devices) {
            if (p->all_devices)
                return gs_yaml_fail(y, dn, path, err,
                                    "all takes in every GPU, already in %s[%d].devices: all "
                                    "(line %d); %s",
                                    cfgpath, k, pline, hint);
            if (p->ndevices > 0)
                return gs_yaml_fail(y, dn, path, err,
                                    "all takes in GPU %d, already in %s[%d].devices (line %d); %s",
                                    p->devices[0], cfgpath, k, pline, hint);
            continue;
        }
        void *it = NULL;
        struct fy_node *d;
        for (int i = 0; (d = fy_node_sequence_iterate(dn, &it)) && i < e->ndevices; i++) {
            int idx = e->devices[i];
            if (p->all_devices)
                return gs_yaml_fail(y, d, path, err,
                                    "GPU %d is also in %s[%d].devices: all (line %d); %s", idx,
                                    cfgpath, k, pline, hint);
            if (lists_device(p, idx))
                return gs_yaml_fail(y, d, path, err,
                                    "GPU %d is also in %s[%d].devices (line %d); %s", idx, cfgpath,
                                    k, pline, hint);
        }
    }
    return 0;
}

/* Entry n at path; prev[0..nprev) are the entries before it in config cfgpath. */
static int parse_entry(const struct gs_yaml *y, struct fy_node *n, const char *path,
                       const char *cfgpath, const struct gs_mp_entry *prev, int nprev,
                       struct gs_mp_entry *e, struct gs_error *err)
{
    if (!gs_yaml_is_map(n))
        return gs_yaml_fail(y, n, path, err, "expected a mapping with devices and mig-enabled");
    memset(e, 0, sizeof(*e));
    e->line = gs_yaml_line(n);
    bool has_devices = false, has_enabled = false, has_migdev = false;
    struct fy_node *migdev = NULL, *devnode = NULL;
    void *it = NULL;
    struct fy_node_pair *p;
    char key[64], sub[160];
    while ((p = fy_node_mapping_iterate(n, &it))) {
        struct fy_node *v = fy_node_pair_value(p);
        if (gs_yaml_key(p, key, sizeof(key)))
            return gs_yaml_fail(y, fy_node_pair_key(p), path, err, "expected a string key");
        snprintf(sub, sizeof(sub), "%s.%s", path, key);
        if (strcmp(key, "devices") == 0) {
            has_devices = true;
            devnode = v;
            e->devices_line = gs_yaml_line(v);
            if (gs_yaml_is_scalar(v)) {
                char b[16];
                if (gs_yaml_str(y, v, sub, b, sizeof(b), err) || strcmp(b, "all") != 0)
                    return gs_yaml_fail(y, v, sub, err, "expected 'all' or a list of GPU indexes");
                e->all_devices = true;
            } else if (gs_yaml_is_seq(v)) {
                void *it2 = NULL;
                struct fy_node *d;
                while ((d = fy_node_sequence_iterate(v, &it2))) {
                    int64_t idx;
                    if (e->ndevices >= GS_MP_MAX_DEVICES)
                        return gs_yaml_fail(y, d, sub, err, "more than %d devices",
                                            GS_MP_MAX_DEVICES);
                    if (gs_yaml_int(y, d, sub, 0, 1023, &idx, err))
                        return GS_EINVAL;
                    if (lists_device(e, (int)idx))
                        return gs_yaml_fail(y, d, sub, err, "GPU %d listed twice", (int)idx);
                    e->devices[e->ndevices++] = (int)idx;
                }
            } else {
                return gs_yaml_fail(y, v, sub, err, "expected 'all' or a list of GPU indexes");
            }
        } else if (strcmp(key, "mig-enabled") == 0) {
            has_enabled = true;
            if (gs_yaml_bool(y, v, sub, &e->mig_enabled, err))
                return GS_EINVAL;
        } else if (strcmp(key, "device-filter") == 0) {
            char b[40];
            if (gs_yaml_is_scalar(v)) {
                if (gs_yaml_str(y, v, sub, b, sizeof(b), err) ||
                    parse_filter(b, &e->filter[0], &e->filter_sub[0], &e->filter_has_sub[0]))
                    return gs_yaml_fail(y, v, sub, err, "expected a PCI id such as 0x20B210DE");
                e->nfilters = 1;
            } else if (gs_yaml_is_seq(v)) {
                void *it2 = NULL;
                struct fy_node *d;
                while ((d = fy_node_sequence_iterate(v, &it2))) {
                    if (e->nfilters >= GS_MP_MAX_FILTERS)
                        return gs_yaml_fail(y, d, sub, err, "more than %d filters",
                                            GS_MP_MAX_FILTERS);
                    if (gs_yaml_str(y, d, sub, b, sizeof(b), err) ||
                        parse_filter(b, &e->filter[e->nfilters], &e->filter_sub[e->nfilters],
                                     &e->filter_has_sub[e->nfilters]))
                        return gs_yaml_fail(y, d, sub, err, "expected a PCI id such as 0x20B210DE");
                    e->nfilters++;
                }
            } else {
                return gs_yaml_fail(y, v, sub, err, "expected a PCI id or a list of them");
            }
        } else if (strcmp(key, "mig-devices") == 0) {
            has_migdev = true;
            migdev = v;
            if (!gs_yaml_is_map(v) && !(gs_yaml_is_scalar(v) && fy_node_get_scalar_length(v) == 0))
                return gs_yaml_fail(y, v, sub, err, "expected a map of profile to count");
            bool any = false;
            void *it2 = NULL;
            struct fy_node_pair *mp;
            while (gs_yaml_is_map(v) && (mp = fy_node_mapping_iterate(v, &it2))) {
                struct gs_mp_profile *pr = &e->profiles[e->nprofiles];
                char pk[64], psub[256];
                if (gs_yaml_key(mp, pk, sizeof(pk)))
                    return gs_yaml_fail(y, fy_node_pair_key(mp), sub, err,
                                        "expected a MIG profile name");
                snprintf(psub, sizeof(psub), "%s.\"%s\"", sub, pk);
                if (!gs_mig_profile_syntax_ok(pk))
                    return gs_yaml_fail(y, fy_node_pair_key(mp), psub, err,
                                        "not a MIG profile name (expected [<C>c.]<G>g.<GB>gb"
                                        "[+attr], e.g. 1g.10gb or 3g.40gb)");
                if (e->nprofiles >= GS_MP_MAX_PROFILES)
                    return gs_yaml_fail(y, fy_node_pair_key(mp), sub, err, "more than %d profiles",
                                        GS_MP_MAX_PROFILES);
                for (int k = 0; k < e->nprofiles; k++)
                    if (strcmp(e->profiles[k].name, pk) == 0)
                        return gs_yaml_fail(y, fy_node_pair_key(mp), psub, err,
                                            "profile listed twice");
                int64_t cnt;
                if (gs_yaml_int(y, fy_node_pair_value(mp), psub, 0, 64, &cnt, err))
                    return GS_EINVAL;
                snprintf(pr->name, sizeof(pr->name), "%s", pk);
                pr->count = (uint32_t)cnt;
                pr->line = gs_yaml_line(fy_node_pair_key(mp));
                any |= cnt > 0;
                e->nprofiles++;
            }
            if (e->nprofiles > 0 && !any)
                return gs_yaml_fail(y, v, sub, err, "all counts for all MIG profiles are 0");
        } else {
            return gs_yaml_fail(y, fy_node_pair_key(p), sub, err,
                                "unexpected field (expected device-filter, devices, "
                                "mig-enabled, mig-devices)");
        }
    }
    if (!has_devices)
        return gs_yaml_fail(y, n, path, err, "missing required field 'devices'");
    if (!has_enabled)
        return gs_yaml_fail(y, n, path, err, "missing required field 'mig-enabled'");
    if (e->mig_enabled && !has_migdev)
        return gs_yaml_fail(y, n, path, err,
                            "mig-enabled is true but 'mig-devices' is missing (use {} to "
                            "enable MIG without instances)");
    if (!e->mig_enabled && e->nprofiles > 0)
        return gs_yaml_fail(y, migdev, path, err,
                            "mig-enabled is false but mig-devices lists profiles");
    char dpath[224];
    snprintf(dpath, sizeof(dpath), "%s.devices", path);
    return check_overlap(y, devnode, dpath, e, cfgpath, prev, nprev, err);
}

static int parse_text(const char *name, const char *data, size_t len, int line_offset,
                      struct gs_migparted **out, struct gs_error *err)
{
    *out = NULL;
    struct gs_yaml y;
    int rc = gs_yaml_load_at(&y, name, data, len, line_offset, err);
    if (rc)
        return rc;
    struct gs_migparted *m = calloc(1, sizeof(*m));
    if (!m) {
        gs_yaml_release(&y);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    snprintf(m->file, sizeof(m->file), "%s", name);
    struct fy_node *root = gs_yaml_root(&y);
    rc = GS_EINVAL;
    if (!gs_yaml_is_map(root)) {
        gs_yaml_fail(&y, root, "(top)", err,
                     "expected a mapping with 'version: v1' and 'mig-configs'");
        goto fail;
    }
    struct fy_node *configs = NULL, *version = NULL;
    void *it = NULL;
    struct fy_node_pair *p;
    char key[64];
    while ((p = fy_node_mapping_iterate(root, &it))) {
        if (gs_yaml_key(p, key, sizeof(key))) {
            gs_yaml_fail(&y, fy_node_pair_key(p), "(top)", err, "expected a string key");
            goto fail;
        }
        if (strcmp(key, "version") == 0)
            version = fy_node_pair_value(p);
        else if (strcmp(key, "mig-configs") == 0)
            configs = fy_node_pair_value(p);
        else {
            gs_yaml_fail(&y, fy_node_pair_key(p), key, err,
                         "unexpected field (expected version, mig-configs)");
            goto fail;
        }
    }
    char v[16];
    if (!version) {
        gs_yaml_fail(&y, root, "version", err, "missing; expected 'version: v1'");
        goto fail;
    }
    if (gs_yaml_str(&y, version, "version", v, sizeof(v), err) || strcmp(v, "v1") != 0) {
        gs_yaml_fail(&y, version, "version", err, "unknown version (expected v1)");
        goto fail;
    }
    if (!gs_yaml_is_map(configs) || fy_node_mapping_item_count(configs) == 0) {
        gs_yaml_fail(&y, configs ? configs : root, "mig-configs", err,
                     "expected a non-empty map of config name to a list of entries");
        goto fail;
    }
    int nc = fy_node_mapping_item_count(configs);
    if (nc > GS_MP_MAX_CONFIGS) {
        gs_yaml_fail(&y, configs, "mig-configs", err, "more than %d configs", GS_MP_MAX_CONFIGS);
        goto fail;
    }
    m->configs = calloc((size_t)nc, sizeof(*m->configs));
    if (!m->configs) {
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        goto fail;
    }
    it = NULL;
    while ((p = fy_node_mapping_iterate(configs, &it))) {
        struct gs_mp_config *c = &m->configs[m->nconfigs];
        char path[160];
        if (gs_yaml_key(p, c->name, sizeof(c->name))) {
            gs_yaml_fail(&y, fy_node_pair_key(p), "mig-configs", err,
                         "config names are strings of at most %d characters", GS_MP_NAME_MAX - 1);
            goto fail;
        }
        snprintf(path, sizeof(path), "mig-configs.%s", c->name);
        c->line = gs_yaml_line(fy_node_pair_key(p));
        struct fy_node *list = fy_node_pair_value(p);
        if (!gs_yaml_is_seq(list) || fy_node_sequence_item_count(list) == 0) {
            gs_yaml_fail(&y, list ? list : fy_node_pair_key(p), path, err,
                         "expected a non-empty list of entries");
            goto fail;
        }
        void *it2 = NULL;
        struct fy_node *en;
        while ((en = fy_node_sequence_iterate(list, &it2))) {
            char epath[192];
            snprintf(epath, sizeof(epath), "%s[%d]", path, c->nentries);
            if (c->nentries >= GS_MP_MAX_ENTRIES) {
                gs_yaml_fail(&y, en, epath, err, "more than %d entries", GS_MP_MAX_ENTRIES);
                goto fail;
            }
            if (parse_entry(&y, en, epath, path, c->entries, c->nentries, &c->entries[c->nentries],
                            err))
                goto fail;
            c->nentries++;
        }
        m->nconfigs++;
    }
    for (int c = 0; c < m->nconfigs; c++) {
        m->configs[c].line += line_offset;
        for (int k = 0; k < m->configs[c].nentries; k++) {
            struct gs_mp_entry *e = &m->configs[c].entries[k];
            e->line += line_offset;
            e->devices_line += line_offset;
            for (int q = 0; q < e->nprofiles; q++)
                e->profiles[q].line += line_offset;
        }
    }
    gs_yaml_release(&y);
    *out = m;
    return 0;
fail:
    gs_yaml_release(&y);
    gs_migparted_free(m);
    return rc;
}

static int parse_any(const char *name, const char *data, size_t len, int line_offset, void *out,
                     struct gs_error *err)
{
    return parse_text(name, data, len, line_offset, (struct gs_migparted **)out, err);
}

int gs_migparted_parse(const char *name, const char *data, size_t len, struct gs_migparted **out,
                       struct gs_error *err)
{
    return gs_yaml_read_unwrapped(name, data, len, parse_any, out, err);
}

int gs_migparted_load(const char *path, struct gs_migparted **out, struct gs_error *err)
{
    return gs_yaml_read_file(path, parse_any, out, err);
}

void gs_migparted_free(struct gs_migparted *m)
{
    if (!m)
        return;
    free(m->configs);
    free(m);
}

const struct gs_mp_config *gs_migparted_find(const struct gs_migparted *m, const char *name)
{
    for (int i = 0; m && i < m->nconfigs; i++)
        if (strcmp(m->configs[i].name, name) == 0)
            return &m->configs[i];
    return NULL;
}

/* Layout of an entry on a model; GS_ENOFIT/GS_ENOTFOUND with the reason. */
static int entry_layout(const struct gs_mp_entry *e, int model, struct gs_mig_layout *l,
                        int *bad_line, struct gs_error *err)
{
    memset(l, 0, sizeof(*l));
    const struct gs_gpu_model *gm = gs_catalog_get(model);
    for (int k = 0; k < e->nprofiles; k++) {
        int pi = gs_catalog_find_profile(model, e->profiles[k].name);
        if (pi < 0) {
            char why[768];
            gs_catalog_profile_unknown(model, e->profiles[k].name, why, sizeof(why));
            *bad_line = e->profiles[k].line;
            return gs_error_set(err, GS_ENOTFOUND, "%s", why);
        }
        if (e->profiles[k].count > 255) {
            *bad_line = e->profiles[k].line;
            return gs_error_set(err, GS_ENOFIT, "\"%s\": %u instances", e->profiles[k].name,
                                e->profiles[k].count);
        }
        l->count[pi] = (uint8_t)(l->count[pi] + e->profiles[k].count);
    }
    for (int pi = 0; pi < gm->nprofiles; pi++) {
        if (l->count[pi] > gm->profiles[pi].max_count) {
            for (int k = 0; k < e->nprofiles; k++)
                if (gs_catalog_find_profile(model, e->profiles[k].name) == pi)
                    *bad_line = e->profiles[k].line;
            return gs_error_set(err, GS_ENOFIT, "\"%s\": %u instances, at most %u fit on %s",
                                gm->profiles[pi].name, l->count[pi], gm->profiles[pi].max_count,
                                gm->name);
        }
    }
    int rc = gs_mig_place(model, l, NULL, err);
    if (rc)
        *bad_line = e->line;
    return rc;
}

/* Candidate models of an entry: the given model, the MIG-capable models its device-filter
 * names, or (-1) "decided per file". */
static int entry_models(const struct gs_mp_entry *e, int model, int *cands)
{
    int nc = 0;
    if (model >= 0) {
        cands[nc++] = model;
    } else if (e->nfilters) {
        for (int f = 0; f < e->nfilters; f++) {
            int id = gs_catalog_find_pci(e->filter[f]);
            if (id >= 0 && gs_catalog_mig_capable(id))
                cands[nc++] = id;
        }
    }
    return nc;
}

int gs_migparted_check(const struct gs_migparted *m, int model, struct gs_error *err)
{
    if (model >= 0 && !gs_catalog_mig_capable(model)) {
        for (int c = 0; c < m->nconfigs; c++)
            for (int k = 0; k < m->configs[c].nentries; k++) {
                const struct gs_mp_entry *e = &m->configs[c].entries[k];
                if (e->mig_enabled && !e->all_devices)
                    return gs_error_set(
                        err, GS_EINVAL, "%s:%d: mig-configs.%s[%d]: %s does not support MIG",
                        m->file, e->line, m->configs[c].name, k, gs_catalog_get(model)->name);
            }
        return 0;
    }
    /* Entries without a model of their own (no --gpu, no device-filter) must all fit one
     * common model: a config file is written for one kind of GPU. Pick the model that
     * fits the most of them and report the first entry that does not fit it. */
    int common = model;
    if (common < 0) {
        int best = -1, best_fit = -1;
        for (int id = 0; id < gs_catalog_count(); id++) {
            if (!gs_catalog_mig_capable(id))
                continue;
            int fit = 0;
            for (int c = 0; c < m->nconfigs; c++)
                for (int k = 0; k < m->configs[c].nentries; k++) {
                    const struct gs_mp_entry *e = &m->configs[c].entries[k];
                    struct gs_mig_layout l;
                    int line;
                    if (e->mig_enabled && !e->nfilters && entry_layout(e, id, &l, &line, NULL) == 0)
                        fit++;
                }
            if (fit > best_fit) {
                best = id;
                best_fit = fit;
            }
        }
        common = best;
    }
    for (int c = 0; c < m->nconfigs; c++) {
        const struct gs_mp_config *cfg = &m->configs[c];
        for (int k = 0; k < cfg->nentries; k++) {
            const struct gs_mp_entry *e = &cfg->entries[k];
            if (!e->mig_enabled)
                continue;
            int cands[GS_MAX_MODELS];
            int nc = entry_models(e, model, cands);
            if (nc == 0 && e->nfilters)
                continue; /* filters name GPUs without MIG or that we do not model */
            if (nc == 0 && common >= 0)
                cands[nc++] = common;
            for (int i = 0; i < nc; i++) {
                struct gs_mig_layout l;
                struct gs_error e2;
                int line = e->line;
                gs_error_init(&e2);
                if (entry_layout(e, cands[i], &l, &line, &e2))
                    return gs_error_set(err, GS_EINVAL, "%s:%d: mig-configs.%s[%d].mig-devices: %s",
                                        m->file, line, cfg->name, k, e2.msg);
            }
        }
    }
    return 0;
}

int gs_migparted_resolve(const struct gs_mp_config *c, int gpu_index, int model, bool *enabled,
                         struct gs_mig_layout *layout, struct gs_error *err)
{
    const struct gs_gpu_model *gm = gs_catalog_get(model);
    int matched = 0;
    *enabled = false;
    memset(layout, 0, sizeof(*layout));
    for (int k = 0; k < c->nentries; k++) {
        const struct gs_mp_entry *e = &c->entries[k];
        bool f_ok = e->nfilters == 0;
        for (int f = 0; f < e->nfilters && !f_ok; f++)
            for (int q = 0; gm && q < 4; q++)
                f_ok |= gm->pci_ids[q] && gm->pci_ids[q] == e->filter[f];
        bool d_ok = e->all_devices;
        for (int d = 0; d < e->ndevices && !d_ok; d++)
            d_ok = e->devices[d] == gpu_index;
        if (!f_ok || !d_ok)
            continue;
        matched = 1;
        if (!e->mig_enabled || !gs_catalog_mig_capable(model)) {
            if (e->mig_enabled && !e->all_devices)
                return gs_error_set(err, GS_EINVAL, "config '%s' asks MIG on GPU %d, a %s", c->name,
                                    gpu_index, gm ? gm->name : "GPU without MIG");
            *enabled = false;
            memset(layout, 0, sizeof(*layout));
            continue;
        }
        int line = 0;
        if (entry_layout(e, model, layout, &line, err))
            return gs_error_prefix(err, "config '%s', GPU %d", c->name, gpu_index) ? GS_EINVAL
                                                                                   : GS_EINVAL;
        *enabled = true;
    }
    return matched;
}
