/* reconciler.h - the node agent's node reconciler: what the agent says and does on its Node
 * object, each round of the loop, from the GPU sampler's view (sampler.h).
 *
 *   - cordon: with auto_cordon the node is cordoned through the API when a GPU turns Unhealthy
 *     (and marked with the annotation gpusched.io/cordoned-by), and uncordoned when all are
 *     healthy again only if the agent cordoned it; every action gets an Event on the Node;
 *   - labels: GPU feature discovery's (nvidia.com/gpu.product, gpu.count, gpu.memory,
 *     mig.capable, mig.strategy, gpu.replicas, gpu.sharing-strategy), once;
 *   - MIG config: the mig-parted config the label nvidia.com/mig.config names (state in
 *     nvidia.com/mig.config.state: pending, success, failed);
 *   - desired layouts: the scheduler's gpusched.io/mig-desired (formats/migdesired.h; they win
 *     over the label on the GPUs they list): exact placements, kept instances keep their UUID,
 *     an instance or GPU a pod holds is never destroyed or switched (that GPU waits: mig_state
 *     pending in the inventory, tried again every round), an invalid layout is refused whole
 *     (mig_state failed, a Warning Event);
 *   - inventory: the annotation gpusched.io/inventory (with the generation finished), written
 *     when it changes, and at once after a MIG change.
 * MIG changes are planned and applied by migmgr.c; what is in use comes from the in_use
 * callback (pods and DRA claims); after a change the relaid callback brings the sampler and
 * the kubelet plugins up to date before the inventory is published.
 *
 * The reconciler owns what it last wrote and acted on; all of it is the loop's thread's but
 * the cordon gauge, which the exporter reads under the reconciler's lock. */
#ifndef GS_AGENT_RECONCILER_H
#define GS_AGENT_RECONCILER_H

#include "../formats/migparted.h"
#include "gpu.h"

#include <stdbool.h>

struct gs_reconciler_opts {
    const char *node;
    bool auto_cordon;
    const struct gs_migparted *mig; /* NULL: no MIG config applied */
    bool mig_dry_run, mig_force;
    int replicas;             /* of each whole GPU (time-slicing, MPS) */
    const char *sharing;      /* "none", "time-slicing" or "mps" */
    bool fractions;           /* whole GPUs not otherwise shared are also served as thousandths */
    const char *mig_strategy; /* the nvidia.com/mig.strategy label; NULL: none */
    /* The devices in use, by UUID, with who holds them; how many (<= cap). */
    int (*in_use)(void *user, char (*uuid)[96], char (*holder)[200], int cap);
    /* After a MIG change: the sampler and the kubelet plugins brought up to date. */
    void (*relaid)(void *user);
    void *user;
};

struct gs_reconciler;
struct gs_sampler;
struct gs_kube_client;

/* A reconciler of node o->node through kc over backend b (MIG changes) and the sampler s. NULL
 * when out of memory. */
struct gs_reconciler *gs_reconciler_new(const struct gs_reconciler_opts *o,
                                        struct gs_gpu_backend *b, struct gs_sampler *s,
                                        struct gs_kube_client *kc);
void gs_reconciler_free(struct gs_reconciler *r);
/* Read the Node and do all of the above. The loop's thread. */
void gs_reconciler_round(struct gs_reconciler *r);
/* Whether the agent holds its node cordoned (1) or not (0). Thread-safe. */
int gs_reconciler_cordoned(struct gs_reconciler *r);

#endif
