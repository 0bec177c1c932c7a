/* toposcen.h - the topology simulator's scenario (`gpusched sim topo --scenario FILE`): a
 * cluster of blocks, subblocks and nodes, the links between them, and the classes of work.
 *
 * YAML (or JSON), every key optional but classes, unknown keys refused with file:line:
 *   blocks: 4          subblocks: 2 (per block)     nodes: 4 (per subblock)     gpus: 8
 *   hours: 48          (of arrivals)
 *   links: {across_blocks_gbps: 100, across_subblocks_gbps: 200, across_nodes_gbps: 400,
 *           nvlink_gbs: 900}
 *   classes:
 *     - {name: train-16, pods: 4, gpus: 4, per_hour: 1,
 *        required: cloud.google.com/gce-topology-subblock,    (or preferred: KEY, as Kueue's
 *        compute_s: 0.8, gradient_gb: 6, steps: 8000, sigma: 0.5}   podset-*-topology)
 *     - {name: infer-1, pods: 1, gpus: 1, per_hour: 30, median_s: 3600, sigma: 1.0}
 * A class with compute_s is training (a gang of pods x gpus, which may ask a level); one
 * without is small work running median_s. The levels are the simulator's three label keys
 * (GS_TOPOSCEN_BLOCK_KEY, GS_TOPOSCEN_SUBBLOCK_KEY, kubernetes.io/hostname). Plain data; the
 * reader is bounded and pure. */
#ifndef GS_TOPOSCEN_H
#define GS_TOPOSCEN_H

#include <stddef.h>

#define GS_TOPOSCEN_MAX_CLASSES  8
#define GS_TOPOSCEN_LINKS        4 /* across blocks, across subblocks, across nodes, in a node */
#define GS_TOPOSCEN_NAME_MAX     32
#define GS_TOPOSCEN_BLOCK_KEY    "cloud.google.com/gce-topology-block"
#define GS_TOPOSCEN_SUBBLOCK_KEY "cloud.google.com/gce-topology-subblock"
#define GS_TOPOSCEN_HOST_KEY     "kubernetes.io/hostname"

struct gs_toposcen_class {
    char name[GS_TOPOSCEN_NAME_MAX];
    int pods, gpus;   /* per job: pods, GPUs per pod */
    int mode, level;  /* enum gs_topo_mode and level (0 block, 1 subblock, 2 host); training */
    double per_hour;  /* arrivals */
    double compute_s; /* training: per step; 0 for small work */
    double grad_gb;   /* training: gradient bytes per step, GB */
    double steps;     /* training: median steps */
    double median_s;  /* small work: median run time */
    double sigma;     /* lognormal sigma of steps or run time */
};

struct gs_toposcen {
    int blocks, subblocks, nodes, gpus; /* per block, per subblock, per node */
    double link_gbs[GS_TOPOSCEN_LINKS]; /* GB/s, broadest first: across blocks .. NVLink */
    double duration_s;                  /* arrivals; the run lasts until every job is done */
    int nclasses;
    struct gs_toposcen_class cls[GS_TOPOSCEN_MAX_CLASSES];
};

struct gs_error;

/* Read a scenario from text over the defaults in *out (keys absent keep them; classes, when
 * given, replace the defaults' classes). Returns 0, or GS_EINVAL with "file:line: path: why"
 * (*out unchanged). */
int gs_toposcen_parse(const char *name, const char *data, size_t len, struct gs_toposcen *out,
                      struct gs_error *err);
/* The same from a file (at most GS_YAML_MAX bytes); GS_EIO when it cannot be read. */
int gs_toposcen_load(const char *path, struct gs_toposcen *out, struct gs_error *err);

#endif
