/* topoobj.h - topology as the ecosystem writes it, read from the API server's JSON:
 *
 *   Topology (kueue.x-k8s.io/v1beta2 and v1beta1, cluster-scoped): spec.levels[].nodeLabel,
 *     the node label keys of the levels, broadest first (1 to 16 levels, each key at most 316
 *     characters, no key twice; kubernetes.io/hostname only last), as Kueue's
 *     apis/kueue/v1beta2/topology_types.go defines them
 *   ResourceFlavor (kueue.x-k8s.io/v1beta2 and v1beta1): spec.nodeLabels (the labels Kueue
 *     adds to the nodeSelector of the pods it admits with the flavor) and spec.topologyName
 *     (the Topology its pods are placed by)
 *   a pod's ask, from its annotations as Kueue's PodSet annotations are written on the pod
 *     template: kueue.x-k8s.io/podset-required-topology: LEVEL,
 *     kueue.x-k8s.io/podset-preferred-topology: LEVEL, and
 *     kueue.x-k8s.io/podset-unconstrained-topology: "true" (no level; "false" is as absent)
 *   the scheduler's --topology-levels flag: "key1,key2,...", broadest first
 *
 * Bounded: every name, key and value has a limit, and errors name the object and the field
 * path ("Topology t: spec.levels[2].nodeLabel: ..."). Plain data, no heap. */
#ifndef GS_TOPOOBJ_H
#define GS_TOPOOBJ_H

#include "../core/topo.h"

#include <jansson.h>

#include <stdint.h>

#define GS_TOPOOBJ_LEVELS_MAX    16 /* Kueue's MaxItems */
#define GS_TOPOOBJ_KEY_MAX       316
#define GS_TOPOOBJ_NAME_MAX      254
#define GS_TOPOOBJ_FLAVOR_LABELS 16
#define GS_TOPOOBJ_VAL_MAX       64

#define GS_TOPO_REQUIRED_ANNOTATION      "kueue.x-k8s.io/podset-required-topology"
#define GS_TOPO_PREFERRED_ANNOTATION     "kueue.x-k8s.io/podset-preferred-topology"
#define GS_TOPO_UNCONSTRAINED_ANNOTATION "kueue.x-k8s.io/podset-unconstrained-topology"

struct gs_error;

struct gs_kube_topology {
    char name[GS_TOPOOBJ_NAME_MAX];
    int32_t nlevels;
    char level[GS_TOPOOBJ_LEVELS_MAX][GS_TOPOOBJ_KEY_MAX + 1];
};

struct gs_kube_flavor {
    char name[GS_TOPOOBJ_NAME_MAX];
    char topology[GS_TOPOOBJ_NAME_MAX]; /* spec.topologyName, "": none */
    int32_t nlabels;
    char key[GS_TOPOOBJ_FLAVOR_LABELS][GS_TOPOOBJ_KEY_MAX + 1];
    char val[GS_TOPOOBJ_FLAVOR_LABELS][GS_TOPOOBJ_VAL_MAX];
};

/* What one pod's annotations ask. mode: enum gs_topo_mode (GS_TOPO_ANY for none or
 * unconstrained); level: the key asked ("" for none); error: non-empty when the annotations
 * cannot be honoured (both required and preferred, an empty or too long level, a value that
 * is not a string), the pod then waits saying so. */
struct gs_kube_topoask {
    int8_t mode;
    bool unconstrained;
    char level[GS_TOPOOBJ_KEY_MAX + 1];
    char error[160];
};

/* Read a Topology / ResourceFlavor (either version). Returns 0 or GS_EINVAL with err naming
 * the object and the field path; *t / *f zeroed first. */
int gs_kube_topology_read(const json_t *obj, struct gs_kube_topology *t, struct gs_error *err);
int gs_kube_flavor_read(const json_t *obj, struct gs_kube_flavor *f, struct gs_error *err);
/* A pod's ask from its metadata.annotations (may be NULL); never fails (see error). */
void gs_kube_topoask_read(const json_t *annotations, struct gs_kube_topoask *a);
/* A Topology's levels as core's levels. Returns 0, or GS_EINVAL naming the Topology (more
 * levels than core/topo.h places, GS_TOPO_LEVELS_MAX). */
int gs_kube_topology_levels(const struct gs_kube_topology *t, struct gs_topo_levels *lv,
                            struct gs_error *err);
/* The --topology-levels flag's text ("key1,key2"): 0 with lv filled, or GS_EINVAL (an empty
 * or too long key, a key twice, more than GS_TOPO_LEVELS_MAX). */
int gs_topo_levels_parse(const char *text, struct gs_topo_levels *lv, struct gs_error *err);

#endif
