/* config.c - kubeconfig and in-cluster configuration for kube/client.c. */
#include "config.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../formats/yaml.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long gs_base64_decode(const char *in, size_t len, char **out)
{
    *out = malloc(len / 4 * 3 + 4);
    if (!*out)
        return GS_ENOMEM;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        int v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '+' || c == '-')
            v = 62;
        else if (c == '/' || c == '_')
            v = 63;
        else if (c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\t')
            continue;
        else {
            free(*out);
            *out = NULL;
            return GS_EINVAL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            (*out)[o++] = (char)((acc >> bits) & 0xFF);
        }
    }
    (*out)[o] = '\0';
    return (long)o;
}

static int read_file(const char *dir, const char *path, char **out, size_t *len,
                     struct gs_error *err)
{
    char full[2048];
    if (path[0] == '/' || !dir)
        snprintf(full, sizeof(full), "%s", path);
    else
        snprintf(full, sizeof(full), "%s/%s", dir, path);
    struct gs_buf b;
    gs_buf_init(&b, 0);
    int rc = gs_buf_read_file(&b, full, 1 << 20, err);
    if (rc) {
        gs_buf_release(&b);
        return rc;
    }
    *out = b.data;
    *len = b.len;
    return 0;
}

/* Find the item named name in a kubeconfig list (clusters, users, contexts). */
static struct fy_node *named(struct fy_node *root, const char *list, const char *name,
                             const char *field)
{
    struct fy_node *seq = fy_node_mapping_lookup_by_string(root, list, (size_t)-1);
    void *it = NULL;
    struct fy_node *e;
    while (gs_yaml_is_seq(seq) && (e = fy_node_sequence_iterate(seq, &it))) {
        struct fy_node *n =
            gs_yaml_is_map(e) ? fy_node_mapping_lookup_by_string(e, "name", (size_t)-1) : NULL;
        size_t l = 0;
        const char *s = gs_yaml_is_scalar(n) ? fy_node_get_scalar(n, &l) : NULL;
        if (s && l == strlen(name) && memcmp(s, name, l) == 0)
            return fy_node_mapping_lookup_by_string(e, field, (size_t)-1);
    }
    return NULL;
}

static const char *str(struct fy_node *m, const char *key, char *buf, size_t n)
{
    struct fy_node *v =
        gs_yaml_is_map(m) ? fy_node_mapping_lookup_by_string(m, key, (size_t)-1) : NULL;
    size_t l = 0;
    const char *s = gs_yaml_is_scalar(v) ? fy_node_get_scalar(v, &l) : NULL;
    if (!s || l + 1 > n)
        return NULL;
    memcpy(buf, s, l);
    buf[l] = '\0';
    return buf;
}

/* PEM from "<key>-data" (base64) or "<key>" (a file path). */
static int pem(struct fy_node *m, const char *key, const char *dir, char **out, size_t *len,
               const char *what, struct gs_error *err)
{
    char k[64], val[8192];
    snprintf(k, sizeof(k), "%s-data", key);
    struct fy_node *v = fy_node_mapping_lookup_by_string(m, k, (size_t)-1);
    if (gs_yaml_is_scalar(v)) {
        size_t l = 0;
        const char *s = fy_node_get_scalar(v, &l);
        long n = gs_base64_decode(s, l, out);
        if (n < 0)
            return gs_error_set(err, GS_EINVAL, "%s: %s: not valid base64", what, k);
        *len = (size_t)n;
        return 0;
    }
    if (str(m, key, val, sizeof(val))) {
        int rc = read_file(dir, val, out, len, err);
        return rc ? gs_error_prefix(err, "%s: %s", what, key) : 0;
    }
    return 0;
}

void gs_kube_config_release(struct gs_kube_config *c)
{
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    c->ca_pem = c->cert_pem = c->key_pem = NULL;
}

int gs_kube_config_parse(const char *name, const char *data, size_t len, const char *dir,
                         const char *context, struct gs_kube_config *out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    struct gs_yaml y;
    int rc = gs_yaml_load(&y, name, data, len, err);
    if (rc)
        return gs_error_prefix(err, "kubeconfig");
    struct fy_node *root = gs_yaml_root(&y);
    char ctx[256], cluster[256], user[256], buf[512];
    rc = GS_EINVAL;
    if (!gs_yaml_is_map(root)) {
        gs_error_set(err, GS_EINVAL,
                     "kubeconfig %s: expected a mapping (apiVersion: v1, kind: "
                     "Config)",
                     name);
        goto out;
    }
    if (context)
        snprintf(ctx, sizeof(ctx), "%s", context);
    else if (!str(root, "current-context", ctx, sizeof(ctx)) || !ctx[0]) {
        gs_error_set(err, GS_EINVAL, "kubeconfig %s: no current-context (pass --context)", name);
        goto out;
    }
    struct fy_node *c = named(root, "contexts", ctx, "context");
    if (!gs_yaml_is_map(c)) {
        gs_error_set(err, GS_EINVAL, "kubeconfig %s: context '%s' not found in contexts", name,
                     ctx);
        goto out;
    }
    if (!str(c, "cluster", cluster, sizeof(cluster))) {
        gs_error_set(err, GS_EINVAL, "kubeconfig %s: context '%s' names no cluster", name, ctx);
        goto out;
    }
    str(c, "namespace", out->ns, sizeof(out->ns));
    struct fy_node *cl = named(root, "clusters", cluster, "cluster");
    if (!gs_yaml_is_map(cl) || !str(cl, "server", out->server, sizeof(out->server))) {
        gs_error_set(err, GS_EINVAL, "kubeconfig %s: cluster '%s' not found or has no server", name,
                     cluster);
        goto out;
    }
    if (strncmp(out->server, "https://", 8) != 0 && strncmp(out->server, "http://", 7) != 0) {
        gs_error_set(err, GS_EINVAL,
                     "kubeconfig %s: cluster '%s': server '%s' is not an http(s) URL", name,
                     cluster, out->server);
        goto out;
    }
    if (str(cl, "insecure-skip-tls-verify", buf, sizeof(buf)))
        out->insecure = strcmp(buf, "true") == 0;
    str(cl, "tls-server-name", out->tls_server_name, sizeof(out->tls_server_name));
    char what[600];
    snprintf(what, sizeof(what), "kubeconfig %s: cluster '%s'", name, cluster);
    if (pem(cl, "certificate-authority", dir, &out->ca_pem, &out->ca_len, what, err))
        goto out;
    if (str(c, "user", user, sizeof(user))) {
        struct fy_node *u = named(root, "users", user, "user");
        if (!gs_yaml_is_map(u) && u) {
            gs_error_set(err, GS_EINVAL, "kubeconfig %s: user '%s' is not a mapping", name, user);
            goto out;
        }
        if (u) {
            snprintf(what, sizeof(what), "kubeconfig %s: user '%s'", name, user);
            if (fy_node_mapping_lookup_by_string(u, "exec", (size_t)-1) ||
                fy_node_mapping_lookup_by_string(u, "auth-provider", (size_t)-1)) {
                gs_error_set(err, GS_EINVAL,
                             "%s: exec and auth-provider credentials are not supported (use a "
                             "client certificate or a token)",
                             what);
                goto out;
            }
            if (pem(u, "client-certificate", dir, &out->cert_pem, &out->cert_len, what, err) ||
                pem(u, "client-key", dir, &out->key_pem, &out->key_len, what, err))
                goto out;
            if (!out->cert_pem != !out->key_pem) {
                gs_error_set(err, GS_EINVAL, "%s: a client certificate needs its key", what);
                goto out;
            }
            str(u, "token", out->token, sizeof(out->token));
            char tf[1024];
            if (str(u, "tokenFile", tf, sizeof(tf))) {
                if (tf[0] == '/' || !dir)
                    snprintf(out->token_file, sizeof(out->token_file), "%s", tf);
                else
                    snprintf(out->token_file, sizeof(out->token_file), "%s/%s", dir, tf);
            }
        }
    }
    snprintf(out->source, sizeof(out->source), "kubeconfig %s (context %s)", name, ctx);
    rc = 0;
out:
    gs_yaml_release(&y);
    if (rc)
        gs_kube_config_release(out);
    return rc;
}

int gs_kube_config_load(const char *path, const char *context, struct gs_kube_config *out,
                        struct gs_error *err)
{
    char p[1024];
    if (path) {
        snprintf(p, sizeof(p), "%s", path);
    } else if (getenv("KUBECONFIG") && getenv("KUBECONFIG")[0]) {
        snprintf(p, sizeof(p), "%s", getenv("KUBECONFIG"));
        char *colon = strchr(p, ':');
        if (colon)
            *colon = '\0'; /* the first file wins */
    } else {
        snprintf(p, sizeof(p), "%s/.kube/config", getenv("HOME") ? getenv("HOME") : ".");
    }
    char *data = NULL;
    size_t len = 0;
    memset(out, 0, sizeof(*out));
    int rc = read_file(NULL, p, &data, &len, err);
    if (rc)
        return gs_error_prefix(err, "kubeconfig");
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", p);
    rc = gs_kube_config_parse(p, data, len, dirname(dir), context, out, err);
    free(data);
    return rc;
}

int gs_kube_config_in_cluster(const char *root, struct gs_kube_config *out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return gs_error_set(err, GS_EINVAL,
                            "in-cluster config: KUBERNETES_SERVICE_HOST and "
                            "KUBERNETES_SERVICE_PORT are not set");
    bool v6 = strchr(host, ':') != NULL;
    snprintf(out->server, sizeof(out->server), "https://%s%s%s:%s", v6 ? "[" : "", host,
             v6 ? "]" : "", port);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/var/run/secrets/kubernetes.io/serviceaccount", root ? root : "");
    snprintf(out->token_file, sizeof(out->token_file), "%s/token", dir);
    int rc = read_file(dir, "ca.crt", &out->ca_pem, &out->ca_len, err);
    if (rc)
        return gs_error_prefix(err, "in-cluster config");
    char *ns = NULL;
    size_t nl = 0;
    if (read_file(dir, "namespace", &ns, &nl, NULL) == 0) {
        snprintf(out->ns, sizeof(out->ns), "%.*s", (int)(nl < 63 ? nl : 63), ns);
        free(ns);
    }
    snprintf(out->source, sizeof(out->source), "in-cluster (%s)", out->server);
    return 0;
}
