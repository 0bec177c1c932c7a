/* decision.c - decisions as lines of text (see decision.h). */
#include "decision.h"

#include "kubeobj.h"

#include <stdio.h>
#include <string.h>

void gs_decision_line(const struct gs_cluster *c, const struct gs_cyc_decision *d, const char *pod,
                      const char *victim, char *out, size_t size)
{
    const char *kind = gs_cyc_kind_name(d->kind);
    const char *node = d->node >= 0 && d->node < c->nnodes ? c->nodes[d->node].name : "-";
    char dev[300] = "";
    switch (d->kind) {
    case GS_CYC_BIND:
    case GS_CYC_NOMINATE:
        gs_kube_devices_str(c, &d->alloc, dev, sizeof(dev));
        snprintf(out, size, "%s %s %s %s%s%s", kind, pod, node, dev[0] ? dev : "-",
                 d->kind == GS_CYC_NOMINATE ? " " : "",
                 d->kind == GS_CYC_NOMINATE ? gs_cyc_why_name(d->why) : "");
        break;
    case GS_CYC_EVICT:
        snprintf(out, size, "%s %s %s %s", kind, pod, node, victim ? victim : "-");
        break;
    case GS_CYC_REPARTITION: {
        int index = d->gpu - (d->node >= 0 && d->node < c->nnodes ? c->nodes[d->node].gpu0 : 0);
        char lay[200] = "";
        if (d->mode != GS_GPU_MIG) {
            snprintf(lay, sizeof(lay), "whole");
        } else {
            const struct gs_gpu_model *m = gs_catalog_get(c->gpus[d->gpu].model);
            const struct gs_mig_placement pl = d->layout; /* by start */
            for (int i = 0; i < pl.n; i++) {
                size_t o = strlen(lay);
                snprintf(lay + o, sizeof(lay) - o, "%s%s@%d", i ? "," : "",
                         m->profiles[pl.inst[i].profile].name, pl.inst[i].start);
            }
        }
        snprintf(out, size, "%s %s %s gpu=%d %s", kind, pod, node, index, lay);
        break;
    }
    default:
        snprintf(out, size, "%s %s %s", kind, pod, gs_cyc_why_name(d->why));
        break;
    }
}
