/* bench_snapshot - what a scheduling cycle of the daemon pays before it decides anything: the
 * copy of its store (sched/snapshot.c: every Node and Pod copied under the store's lock, the
 * engine's cluster rebuilt from them), on the cluster of `make bench-e2e`'s large run: 5,000
 * nodes shaped as the GPU Operator's A100 node (tests/data/nodes/a100-whole.json, its ~95
 * labels) and 20,000 pods, half of them bound. CPU time per snapshot (the machine's load does
 * not count), over REPS snapshots taken and freed in a row as the daemon's cycles do.
 *
 *   bench_snapshot NODE-JSON [REPS]
 *
 * Prints one JSON line. */
#include "base/error.h"
#include "formats/kubeobj.h"
#include "sched/snapshot.h"
#include "sched/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NODES 5000
#define PODS  20000

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int add_nodes(struct gs_store *st, json_t *o)
{
    json_t *md = json_object_get(o, "metadata");
    for (int i = 0; i < NODES; i++) {
        char name[64];
        snprintf(name, sizeof(name), "gpu-a100-%04d", i);
        json_object_set_new(md, "name", json_string(name));
        json_object_set_new(json_object_get(md, "labels"), "kubernetes.io/hostname",
                            json_string(name));
        struct gs_kube_node kn;
        struct gs_error err;
        gs_error_init(&err);
        if (gs_kube_node_read(o, &kn, &err) || gs__store_upsert_node(st, &kn)) {
            fprintf(stderr, "bench_snapshot: node: %s\n", err.msg);
            return 1;
        }
    }
    return 0;
}

/* PODS pods as a ReplicaSet writes them (1 GPU, 4 CPUs), the first half bound 8 to a node */
static int add_pods(struct gs_store *st)
{
    for (int i = 0; i < PODS; i++) {
        char name[64], uid[64];
        snprintf(name, sizeof(name), "infer-7d9f8b6c5d-%05d", i);
        snprintf(uid, sizeof(uid), "5f0c3a1e-0000-4000-8000-%012d", i);
        json_t *p = json_pack(
            "{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s, s:s},"
            " s:{s:s}}}], s:[{s:s, s:s, s:s}]}, s:{s:s}}",
            "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "scale",
            "uid", uid, "labels", "app", "infer", "pod-template-hash", "7d9f8b6c5d", "spec",
            "schedulerName", "gpusched", "containers", "name", "main", "image", "i", "resources",
            "requests", "cpu", "4", "nvidia.com/gpu", "1", "limits", "nvidia.com/gpu", "1",
            "tolerations", "key", "nvidia.com/gpu", "operator", "Exists", "effect", "NoSchedule",
            "status", "phase", "Pending");
        if (i < PODS / 2) {
            char node[64];
            snprintf(node, sizeof(node), "gpu-a100-%04d", i / 8);
            json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
        }
        struct gs_kube_pod kp;
        memset(&kp, 0, sizeof(kp));
        struct gs_error err;
        gs_error_init(&err);
        int rc = gs_kube_pod_read(p, &kp, &err);
        if (!rc)
            rc = gs_kube_pod_read_constraints(p, &kp);
        json_decref(p);
        if (rc || gs__store_upsert_pod(st, &kp)) {
            fprintf(stderr, "bench_snapshot: pod: %s\n", err.msg);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_snapshot NODE-JSON [REPS]\n");
        return 2;
    }
    int reps = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 20;
    if (reps < 1)
        reps = 1;
    json_error_t je;
    json_t *o = json_load_file(argv[1], 0, &je);
    if (!o) {
        fprintf(stderr, "bench_snapshot: %s: %s\n", argv[1], je.text);
        return 1;
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_store *st = NULL;
    if (gs__store_new(NULL, GS_STORE_DETACHED, NULL, 10, &st, &err)) {
        fprintf(stderr, "bench_snapshot: %s\n", err.msg);
        return 1;
    }
    int rc = add_nodes(st, o) || add_pods(st);
    json_decref(o);
    double t0 = cpu_now(), first = 0;
    for (int r = 0; !rc && r < reps; r++) {
        struct gs_snapshot *sn;
        if (gs__snapshot_new(st, NULL, &sn)) {
            fprintf(stderr, "bench_snapshot: out of memory\n");
            rc = 1;
            break;
        }
        gs__snapshot_free(sn);
        if (r == 0)
            first = cpu_now() - t0;
    }
    double t = cpu_now() - t0;
    if (!rc)
        printf("{\"bench\":\"snapshot\",\"nodes\":%d,\"pods\":%d,\"reps\":%d,"
               "\"first_ms\":%.1f,\"ms_per_snapshot\":%.1f}\n",
               NODES, PODS, reps, first * 1e3, reps > 1 ? (t - first) / (reps - 1) * 1e3 : t * 1e3);
    gs__store_free(st);
    return rc;
}
