/* migmgrfile.c - the MigManager documents of a manifest file (migmgrfile.h): each document
 * of kind MigManager is turned into JSON and read by gs_kube_migmgr_read, as the scheduler
 * reads it from the API server, then checked against the file's ConfigMap and mig-parted
 * configs (migparted.h) with the line of the field at fault. */
#include "migmgrfile.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../core/catalog.h"
#include "migparted.h"
#include "tenantobj.h"
#include "yaml.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The scalar at a /-path under n, as a string of at most size-1 bytes, or "" */
static struct fy_node *at(struct fy_node *n, const char *path, char *buf, size_t size)
{
    struct fy_node *v = n ? fy_node_by_path(n, path, (size_t)-1, FYNWF_DONT_FOLLOW) : NULL;
    size_t l = 0;
    const char *s = gs_yaml_is_scalar(v) ? fy_node_get_scalar(v, &l) : NULL;
    if (buf && size) {
        if (l >= size)
            l = size - 1;
        memcpy(buf, s ? s : "", s ? l : 0);
        buf[s ? l : 0] = '\0';
    }
    return v;
}

/* Whether a config of m carves the profile */
static bool carved(const struct gs_migparted *m, const char *profile)
{
    for (int c = 0; c < m->nconfigs; c++)
        for (int e = 0; e < m->configs[c].nentries; e++) {
            const struct gs_mp_entry *en = &m->configs[c].entries[e];
            for (int p = 0; en->mig_enabled && p < en->nprofiles; p++)
                if (strcmp(en->profiles[p].name, profile) == 0)
                    return true;
        }
    return false;
}

static bool any_model_has(int model, const char *profile)
{
    if (model >= 0)
        return gs_catalog_find_profile(model, profile) >= 0;
    for (int k = 0; k < gs_catalog_count(); k++)
        if (gs_catalog_find_profile(k, profile) >= 0)
            return true;
    return false;
}

__attribute__((format(printf, 4, 5))) static int fail_at(const char *path, struct fy_node *n,
                                                         struct gs_error *err, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int line = n ? gs_yaml_line(n) : 0;
    if (line > 0)
        return gs_error_set(err, GS_EINVAL, "%s:%d: %s", path, line, msg);
    return gs_error_set(err, GS_EINVAL, "%s: %s", path, msg);
}

/* One MigManager document: its gpuClients' devices against m (or the model). */
static int check_clients(const char *path, struct fy_node *root, const struct gs_kube_migmgr *mm,
                         const struct gs_migparted *m, int model, struct gs_error *err)
{
    bool configs = m && m->nconfigs > 0;
    for (int i = 0; i < mm->nclients; i++) {
        const char *dev = mm->clients[i].mig;
        if (configs ? carved(m, dev) : any_model_has(model, dev))
            continue;
        char yp[96], field[96], why[768] = "";
        snprintf(yp, sizeof(yp), "/spec/gpuClientsConfig/gpuClients/%d/migDevice", i);
        snprintf(field, sizeof(field), "spec.gpuClientsConfig.gpuClients[%d].migDevice", i);
        if (model >= 0 && gs_catalog_find_profile(model, dev) < 0)
            gs_catalog_profile_unknown(model, dev, why, sizeof(why));
        else if (configs)
            snprintf(why, sizeof(why), "no config of this file carves %s, so no node offers it",
                     dev);
        else
            snprintf(why, sizeof(why), "%s is a MIG profile of no known GPU", dev);
        char who[96];
        snprintf(who, sizeof(who), "MigManager %s", mm->name);
        return fail_at(path, at(root, yp, NULL, 0), err, "%s: %s: %s", who, field, why);
    }
    return 0;
}

/* The node a reader's message names ("... spec.gpuClientsConfig.gpuClients[1].migDevice: ..."),
 * for its line; the document's root when it names none. */
static struct fy_node *named_node(struct fy_node *root, const char *msg)
{
    const char *s = strstr(msg, "spec.gpuClientsConfig.gpuClients[");
    if (!s)
        return root;
    char yp[160] = "/";
    size_t o = 1;
    for (; *s && *s != ':' && *s != ' ' && o + 2 < sizeof(yp); s++)
        yp[o++] = *s == '.' || *s == '[' ? '/' : *s == ']' ? '\0' : *s;
    yp[o] = '\0';
    /* "a/b/c/1\0/x" -> "a/b/c/1/x": drop the NULs left by ']' */
    size_t w = 0;
    for (size_t r = 0; r < o; r++)
        if (yp[r])
            yp[w++] = yp[r];
    yp[w] = '\0';
    struct fy_node *n = fy_node_by_path(root, yp, (size_t)-1, FYNWF_DONT_FOLLOW);
    return n ? n : root;
}

/* A MigManager document: read as the scheduler reads it, then checked against the file. */
static int check_doc(const char *path, struct fy_document *d, const char *configmap,
                     const struct gs_migparted *m, int model, struct gs_error *err)
{
    struct fy_node *root = fy_document_root(d);
    char api[64];
    struct fy_node *av = at(root, "/apiVersion", api, sizeof(api));
    if (strcmp(api, "nvidia.com/v1alpha1") != 0)
        return fail_at(path, av ? av : root, err,
                       "MigManager: apiVersion '%s': expected nvidia.com/v1alpha1", api);
    char *text = fy_emit_document_to_string(d, FYECF_MODE_JSON_ONELINE);
    json_error_t je;
    json_t *obj = text ? json_loads(text, JSON_REJECT_DUPLICATES, &je) : NULL;
    free(text);
    if (!obj)
        return fail_at(path, root, err, "MigManager: not a JSON-compatible document");
    struct gs_kube_migmgr *mm = calloc(1, sizeof(*mm));
    if (!mm) {
        json_decref(obj);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    struct gs_error e2;
    gs_error_init(&e2);
    int rc = gs_kube_migmgr_read(obj, mm, &e2);
    json_decref(obj);
    char cfg[GS_NAME_MAX];
    struct fy_node *cv = at(root, "/spec/config", cfg, sizeof(cfg));
    if (rc)
        rc = fail_at(path, named_node(root, e2.msg), err, "%s", e2.msg);
    else if (cfg[0] && configmap[0] && strcmp(cfg, configmap) != 0)
        rc = fail_at(path, cv, err,
                     "MigManager %s: spec.config: '%s' names no ConfigMap of this file (it holds "
                     "%s)",
                     mm->name, cfg, configmap);
    else
        rc = check_clients(path, root, mm, m, model, err);
    free(mm);
    return rc;
}

int gs_migmgr_file_check(const char *path, const struct gs_migparted *m, int model,
                         struct gs_error *err)
{
    struct gs_buf b;
    gs_buf_init(&b, GS_YAML_MAX + 1);
    int rc = gs_buf_read_file(&b, path, GS_YAML_MAX, err);
    if (rc == 0)
        rc = gs_migmgr_check_text(path, b.data ? b.data : "", b.len, m, model, err);
    gs_buf_release(&b);
    return rc;
}

int gs_migmgr_check_text(const char *path, const char *data, size_t len,
                         const struct gs_migparted *m, int model, struct gs_error *err)
{
    if (len > GS_YAML_MAX)
        return gs_error_set(err, GS_EINVAL, "%s: larger than %zu bytes", path, GS_YAML_MAX);
    int n = 0, rc = gs_yaml_text_check(path, data, len, err);
    if (rc)
        return rc;
    rc = GS_ENOMEM;
    /* a document the parser cannot read was already refused by the mig-parted reader, or
     * holds no MigManager it could check: stop at it */
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    if (diag)
        fy_diag_set_collect_errors(diag, true); /* library code prints nothing */
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG, .diag = diag};
    struct fy_parser *fyp = diag ? fy_parser_create(&cfg) : NULL;
    if (!fyp || fy_parser_set_string(fyp, data, len)) {
        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        goto out;
    }
    /* two passes: the ConfigMap may follow the MigManager that names it */
    char configmap[GS_NAME_MAX] = "";
    struct fy_document *docs[64];
    int nd = 0;
    struct fy_document *d;
    while (nd < 64 && (d = fy_parse_load_document(fyp))) {
        char kind[32], name[GS_NAME_MAX];
        at(fy_document_root(d), "/kind", kind, sizeof(kind));
        at(fy_document_root(d), "/metadata/name", name, sizeof(name));
        if (strcmp(kind, "ConfigMap") == 0 && !configmap[0])
            snprintf(configmap, sizeof(configmap), "%s", name);
        docs[nd++] = d;
    }
    rc = 0;
    for (int i = 0; i < nd; i++) {
        char kind[32];
        at(fy_document_root(docs[i]), "/kind", kind, sizeof(kind));
        if (!rc && strcmp(kind, "MigManager") == 0) {
            rc = check_doc(path, docs[i], configmap, m, model, err);
            n++;
        }
        fy_parse_document_destroy(fyp, docs[i]);
    }
out:
    if (fyp)
        fy_parser_destroy(fyp);
    if (diag)
        fy_diag_destroy(diag);
    return rc ? rc : n;
}
