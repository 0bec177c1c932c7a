/* openbvar.h - openb trace variants derived the way the FGD paper derived theirs (Weng et al.,
 * ATC'23, "workload variations"): from one pod list, change one share and keep the rest.
 *
 * A spec is a comma-separated list of KIND=PCT, applied in order:
 *   gpushare=P  P % of the requested GPU (milli) comes from GPU-sharing pods: random whole-GPU
 *               pods become one-GPU sharing pods with a share drawn from the trace's sharing
 *               pods (or random sharing pods become one whole GPU) until the share is reached;
 *               the pod count is kept (as upstream's gpushareNN files keep it).
 *   multigpu=P  P % of the requested GPU comes from multi-GPU pods: copies of random
 *               multi-GPU pods are added (or random ones removed) (upstream's multigpuNN).
 *   gpuspec=P   P % of GPU pods name one GPU model (gpu_spec): random GPU pods get a model
 *               drawn in proportion to the cluster's GPUs of each model that can host the pod
 *               on an empty node (or lose theirs). Every model is then asked for in
 *               proportion to its fleet: unlike upstream's gpuspecNN files (gpuspecmix).
 *   gpuspecmix=P as gpuspec, but the models are drawn the way FGD's published gpuspec traces
 *               name them (upstream's gpuspecNN): sets of models (T4 alone for half the
 *               pods, G2, P100, the V100s, ...) in the proportions those files show, among
 *               the sets naming a model that can host the pod; the small fleets are asked for
 *               far beyond their share of the GPUs.
 *   gpuspecskew=P as gpuspec, but each GPU model gets a popularity drawn from the seed (a
 *               squared exponential: a few models draw most pods, whatever their fleet), and
 *               a pod names one model by popularity among those that can host it, or (one pod
 *               in four) two; each seed makes other models scarce.
 *   cpu=P       P % of pods are CPU-only: copies of random CPU-only pods are added (or random
 *               ones removed) (upstream's cpuNNN, written in tenths there).
 * P is a number in 0..100 (0..99 for multigpu and cpu). A share the trace cannot reach (no
 * sharing pod to draw a share from, no multi-GPU or CPU-only pod to copy) is an error that
 * names the term. Deterministic: the same pods, nodes, spec and seed give the same variant.
 * Added pods are named after their original with a "-vN" suffix. Pure; thread-safe. */
#ifndef GS_SIM_OPENBVAR_H
#define GS_SIM_OPENBVAR_H

#include "../formats/openb.h"

#include <stdint.h>

#define GS_OPENBVAR_MAX 8

enum gs_openbvar_kind {
    GS_OPENBVAR_GPUSHARE,
    GS_OPENBVAR_MULTIGPU,
    GS_OPENBVAR_GPUSPEC,
    GS_OPENBVAR_CPU,
    GS_OPENBVAR_GPUSPECMIX,
    GS_OPENBVAR_GPUSPECSKEW
};

struct gs_openbvar {
    enum gs_openbvar_kind kind;
    double pct;
};

struct gs_error;

/* Parse a spec ("gpushare=60,cpu=20") into v (at most GS_OPENBVAR_MAX terms). Returns the
 * number of terms or GS_EINVAL with a message naming the bad term. */
int gs_openbvar_parse(const char *spec, struct gs_openbvar *v, struct gs_error *err);

/* Apply the terms to pods[0..n) with the cluster's nodes (for gpuspec). *out is malloc'd
 * (caller frees); returns its pod count or a negative error (nothing allocated then). */
int gs_openbvar_apply(const struct gs_openbvar *v, int nv, const struct gs_openb_node *nodes,
                      int nnodes, const struct gs_openb_pod *pods, int n, uint64_t seed,
                      struct gs_openb_pod **out, struct gs_error *err);

/* Shares of a pod list, in percent: GPU milli from sharing pods, GPU milli from multi-GPU
 * pods, GPU pods with a model named, CPU-only pods among all pods. */
struct gs_openbvar_shares {
    double gpushare, multigpu, gpuspec, cpu;
};
void gs_openbvar_shares(const struct gs_openb_pod *pods, int n, struct gs_openbvar_shares *s);

#endif
