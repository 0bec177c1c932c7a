/* config.h - how to reach a Kubernetes API server: kubeconfig files and in-cluster config.
 *
 * kubeconfig: current-context (or an explicit context), clusters[].cluster.{server,
 * certificate-authority[-data], insecure-skip-tls-verify, tls-server-name}, users[].user.{
 * client-certificate[-data], client-key[-data], token, tokenFile}; relative paths resolve
 * against the file's folder; exec and auth-provider users are reported as unsupported.
 * In-cluster: KUBERNETES_SERVICE_HOST/PORT, the service-account token (re-read by the
 * client) and CA. TLS is always verified unless insecure-skip-tls-verify is set
 * explicitly. A config owns its PEM buffers: gs_kube_config_release. */
#ifndef GS_KUBE_CONFIG_H
#define GS_KUBE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct gs_kube_config {
    char server[512];
    char tls_server_name[256];
    bool insecure;
    char *ca_pem, *cert_pem, *key_pem; /* heap, NUL-terminated, or NULL */
    size_t ca_len, cert_len, key_len;
    char token[4096];
    char token_file[1024]; /* re-read before requests when set */
    char ns[64];
    char source[1100]; /* "kubeconfig /x (context y)" or "in-cluster" */
};

struct gs_error;

/* path NULL: $KUBECONFIG (first file) or ~/.kube/config. context NULL: current-context. */
int gs_kube_config_load(const char *path, const char *context, struct gs_kube_config *out,
                        struct gs_error *err);
/* Parse kubeconfig text; dir resolves relative paths. */
int gs_kube_config_parse(const char *name, const char *data, size_t len, const char *dir,
                         const char *context, struct gs_kube_config *out, struct gs_error *err);
/* root: "" for the real filesystem (tests pass a fake root). */
int gs_kube_config_in_cluster(const char *root, struct gs_kube_config *out, struct gs_error *err);
void gs_kube_config_release(struct gs_kube_config *c);
/* Decode base64 (standard alphabet, padding optional, whitespace ignored) into a new
 * NUL-terminated heap buffer. Returns the length or a negative error. */
long gs_base64_decode(const char *in, size_t len, char **out);

#endif
