/* advise_cluster.c - the live cluster as a scenario for `gpusched advise cluster`: the Nodes
 * read by the scheduler's own reader (sched/cache.h) for their GPUs and MIG layouts, then
 * grouped with their pods by formats/clusterscen.h. */
#include "advise_cluster.h"

#include "../base/error.h"
#include "../formats/clusterscen.h"
#include "../formats/kubeobj.h"
#include "../formats/migparted.h"
#include "../kube/client.h"
#include "../kube/config.h"
#include "../sched/cache.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define FROM_MAX_BYTES (512u << 20)

static int add_item(const json_t *item, void *user)
{
    json_t *arr = user;
    if (!item) /* a relisted page: start over */
        return json_array_clear(arr) ? GS_ENOMEM : 0;
    return json_array_append(arr, (json_t *)item) ? GS_ENOMEM : 0;
}

static int from_api(const char *kubeconfig, json_t *nodes, json_t *pods, struct gs_error *err)
{
    struct gs_kube_config cfg;
    int rc = gs_kube_config_load(kubeconfig, NULL, &cfg, err);
    if (rc)
        return rc;
    struct gs_kube_client *kc = NULL;
    struct gs_kube_client_opts o = {0};
    if ((rc = gs_kube_client_new(&cfg, &o, &kc, err))) {
        gs_kube_config_release(&cfg);
        return rc;
    }
    rc = gs_kube_list(kc, "/api/v1/nodes", add_item, nodes, NULL, 0, err);
    if (!rc)
        rc = gs_kube_list(kc, "/api/v1/pods", add_item, pods, NULL, 0, err);
    gs_kube_client_free(kc);
    return rc;
}

static int from_file(const char *path, json_t *nodes, json_t *pods, double *mtime,
                     struct gs_error *err)
{
    struct stat st;
    if (stat(path, &st))
        return gs_error_set(err, GS_EINVAL, "--from %s: cannot read it: %s", path, strerror(errno));
    if ((unsigned long long)st.st_size > FROM_MAX_BYTES)
        return gs_error_set(err, GS_EINVAL, "--from %s: larger than %u MiB", path,
                            FROM_MAX_BYTES >> 20);
    *mtime = (double)st.st_mtime;
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return gs_error_set(err, GS_EINVAL,
                            "%s:%d:%d: %s (expected the JSON of `kubectl get "
                            "nodes,pods -A -o json`)",
                            path, je.line, je.column, je.text);
    json_t *items = json_object_get(root, "items");
    if (!json_is_array(items)) {
        json_decref(root);
        return gs_error_set(err, GS_EINVAL, "%s: items: expected a List of Nodes and Pods", path);
    }
    size_t i;
    json_t *it;
    int rc = 0;
    json_array_foreach(items, i, it)
    {
        const char *kind = json_string_value(json_object_get(it, "kind"));
        if (!kind) {
            rc = gs_error_set(err, GS_EINVAL, "%s: items[%zu].kind: missing", path, i);
            break;
        }
        if (strcmp(kind, "Node") == 0)
            rc = json_array_append(nodes, it);
        else if (strcmp(kind, "Pod") == 0)
            rc = json_array_append(pods, it);
        if (rc) {
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
            break;
        }
    }
    json_decref(root);
    return rc;
}

/* The Nodes as the scheduler reads them into c (a Node it cannot read is left to
 * clusterscen, which notes it). */
static int read_cluster(const json_t *nodes, const char *mig_config, struct gs_cluster *c,
                        struct gs_error *err)
{
    struct gs_migparted *mp = NULL;
    if (mig_config && (gs_migparted_load(mig_config, &mp, err) || gs_migparted_check(mp, -1, err)))
        return gs_error_prefix(err, "--mig-config");
    size_t i;
    json_t *it;
    int rc = 0;
    json_array_foreach(nodes, i, it)
    {
        struct gs_kube_node kn;
        struct gs_error e;
        gs_error_init(&e);
        if (gs_kube_node_read(it, &kn, &e))
            continue;
        if (gs_cache_add_node(c, &kn, mp, NULL, 0) < 0)
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        gs_kube_node_release(&kn);
        if (rc)
            break;
    }
    gs_migparted_free(mp);
    return rc;
}

int gs_advise_cluster_scenario(const char *kubeconfig, const char *from, const char *mig_config,
                               double window_s, struct gs_scenario *sc, char **node_names,
                               struct gs_buf *yaml, struct gs_error *err)
{
    json_t *nodes = json_array(), *pods = json_array();
    if (!nodes || !pods) {
        json_decref(nodes);
        json_decref(pods);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    double now = (double)time(NULL);
    int rc =
        from ? from_file(from, nodes, pods, &now, err) : from_api(kubeconfig, nodes, pods, err);
    struct gs_cluster live;
    gs_cluster_init(&live);
    if (!rc)
        rc = read_cluster(nodes, mig_config, &live, err);
    if (!rc)
        rc = gs_cluster_scenario_live(nodes, pods, &live, now, window_s, yaml, node_names, err);
    gs_cluster_release(&live);
    json_decref(nodes);
    json_decref(pods);
    if (!rc)
        rc = gs_scenario_parse("live cluster scenario", yaml->data, yaml->len, sc, err);
    return rc;
}
