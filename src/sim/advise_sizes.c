/* advise_sizes.c - `gpusched advise sizes`: the article's table of recommended setups by
 * cluster size, measured. Each size is a cluster of the article's GPUs with the article's
 * workloads (LLM inference on 3g.40gb slices, 7B inference and embeddings that may share,
 * batch inference, small and large training, development), more kinds and more teams as the
 * cluster grows, run first as it starts out (every GPU whole, one pod per GPU), then advised
 * (sim/advise.h). */
#include "advise.h"

#include "../base/error.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZES_BUDGET 60 /* setups simulated per size unless the caller says */

/* Shared class blocks, parametrised by arrivals per hour. */
#define LLM70(rate, tenant)                                                                        \
    "  - name: llm-70b-awq\n" tenant "    kind: online-inference\n    priority: gpu-critical\n"    \
    "    arrival: {process: poisson, per_hour: " rate "}\n"                                        \
    "    duration: {dist: lognormal, median: 2h, sigma: 0.5}\n"                                    \
    "    request: {gpus: 1, cpu: 8, memory: 64Gi, gpu_memory: 38Gi, mig: 3g.40gb}\n"               \
    "    util: 0.35\n"
#define LLM7(rate, tenant)                                                                         \
    "  - name: llm-7b\n" tenant "    kind: online-inference\n    priority: gpu-critical\n"         \
    "    arrival: {process: poisson, per_hour: " rate "}\n"                                        \
    "    duration: {dist: lognormal, median: 90m, sigma: 0.5}\n"                                   \
    "    request: {gpus: 1, cpu: 4, memory: 32Gi, gpu_memory: 18Gi, share: timeslicing}\n"         \
    "    util: 0.2\n"
#define EMBED(rate, tenant, mig)                                                                   \
    "  - name: embeddings\n" tenant "    kind: online-inference\n    priority: gpu-high\n"         \
    "    arrival: {process: poisson, per_hour: " rate "}\n"                                        \
    "    duration: {dist: lognormal, median: 1h, sigma: 0.5}\n"                                    \
    "    request: {gpus: 1, cpu: 2, memory: 8Gi, gpu_memory: 6Gi" mig ", share: timeslicing}\n"    \
    "    util: 0.1\n"
#define BATCH(rate, tenant)                                                                        \
    "  - name: batch-inference\n" tenant "    kind: batch-inference\n    priority: gpu-high\n"     \
    "    arrival: {process: poisson, per_hour: " rate "}\n"                                        \
    "    duration: {dist: exponential, mean: 1h}\n"                                                \
    "    request: {gpus: 1, cpu: 8, memory: 32Gi, gpu_memory: 30Gi, mig: 3g.40gb, share: mps}\n"   \
    "    util: 0.5\n"
#define SMALLTRAIN(rate, tenant)                                                                   \
    "  - name: small-training\n" tenant "    kind: training\n    priority: gpu-low\n"              \
    "    arrival: {process: poisson, per_hour: " rate "}\n"                                        \
    "    duration: {dist: lognormal, median: 2h, sigma: 0.6}\n"                                    \
    "    request: {gpus: 1, cpu: 8, memory: 64Gi, gpu_memory: 20Gi, share: mps}\n"                 \
    "    util: 0.6\n"
#define LARGETRAIN(rate, tenant)                                                                   \
    "  - name: large-training\n" tenant "    kind: training\n    priority: gpu-low\n"              \
    "    arrival: {process: poisson, per_hour: " rate "}\n"                                        \
    "    duration: {dist: lognormal, median: 4h, sigma: 0.4}\n"                                    \
    "    request: {gpus: 4, cpu: 32, memory: 256Gi, gpu_memory: 70Gi}\n"                           \
    "    util: 0.9\n"
#define DISTTRAIN(rate, tenant)                                                                    \
    "  - name: distributed-training\n" tenant "    kind: training\n    priority: gpu-low\n"        \
    "    gang: 2\n"                                                                                \
    "    arrival: {process: poisson, per_hour: " rate "}\n"                                        \
    "    duration: {dist: lognormal, median: 6h, sigma: 0.4}\n"                                    \
    "    request: {gpus: 8, cpu: 64, memory: 512Gi, gpu_memory: 70Gi}\n"                           \
    "    util: 0.9\n"
#define DEV(rate, tenant)                                                                          \
    "  - name: development\n" tenant "    kind: development\n    priority: gpu-low\n"              \
    "    arrival: {process: poisson, per_hour: " rate "}\n"                                        \
    "    duration: {dist: lognormal, median: 1h, sigma: 0.7}\n"                                    \
    "    request: {gpus: 1, cpu: 4, memory: 16Gi, gpu_memory: 8Gi, share: timeslicing}\n"          \
    "    util: 0.05\n"

#define HEAD(name)                                                                                 \
    "name: " name "\nseed: 42\nduration: 12h\nwarmup: 2h\n"                                        \
    "sla: {online_wait: 30s, online_min_speed: 0.8}\n"
#define TA  "    tenant: team-a\n"
#define TB  "    tenant: team-b\n"
#define TC  "    tenant: team-c\n"
#define NOT ""

static const char *const size_yaml[GS_ADV_SIZES] = {
    /* < 8 GPUs: a workstation-class cluster, no MIG-capable GPU, inference and development */
    HEAD("size-small") "node_groups:\n"
                       "  - {name: l40s, gpu: L40S-48GB, nodes: 1, gpus: 4, cpu: 64, memory: "
                       "512Gi}\n"
                       "  - {name: rtx4090, gpu: RTX4090-24GB, nodes: 1, gpus: 2, cpu: 32, "
                       "memory: 256Gi}\n"
                       "classes:\n" LLM7("2", NOT) EMBED("3", NOT, "") SMALLTRAIN("2", NOT)
                           DEV("3", NOT),
    /* 8-32 GPUs: A100s carved as the article's "mixed" and L40S, LLM inference on slices */
    HEAD("size-medium") "node_groups:\n"
                        "  - {name: a100, gpu: A100-80GB, nodes: 2, gpus: 8, cpu: 128, memory: "
                        "1Ti, mig_config: mixed}\n"
                        "  - {name: l40s, gpu: L40S-48GB, nodes: 2, gpus: 4, cpu: 64, memory: "
                        "512Gi}\n"
                        "classes:\n" LLM70("3", NOT) LLM7("6", NOT)
                            EMBED("8", NOT, ", mig: 1g.10gb") SMALLTRAIN("4", NOT)
                                LARGETRAIN("0.5", NOT) DEV("4", NOT),
    /* 32-128 GPUs: A100 ("mixed"), H100 (all-3g.40gb), L40S; two teams with quotas */
    HEAD("size-large") "node_groups:\n"
                       "  - {name: a100, gpu: A100-80GB, nodes: 4, gpus: 8, cpu: 128, memory: "
                       "1Ti, mig_config: mixed}\n"
                       "  - {name: h100, gpu: H100-80GB, nodes: 2, gpus: 8, cpu: 192, memory: "
                       "2Ti, mig_config: all-3g.40gb}\n"
                       "  - {name: l40s, gpu: L40S-48GB, nodes: 2, gpus: 4, cpu: 64, memory: "
                       "512Gi}\n"
                       "tenants:\n"
                       "  - {name: team-a, namespace: team-a, quota: {nvidia.com/gpu: 24}}\n"
                       "  - {name: team-b, namespace: team-b, quota: {nvidia.com/gpu: 16}}\n"
                       "classes:\n" LLM70("6", TA) LLM7("10", TB) EMBED("12", TA, ", mig: 1g.10gb")
                           BATCH("4", TB) SMALLTRAIN("8", TB) LARGETRAIN("1.5", TA) DEV("6", TB),
    /* > 128 GPUs: the whole range, three teams, gang-scheduled distributed training */
    HEAD("size-xlarge") "node_groups:\n"
                        "  - {name: a100, gpu: A100-80GB, nodes: 9, gpus: 8, cpu: 128, memory: "
                        "1Ti, mig_config: mixed}\n"
                        "  - {name: h100, gpu: H100-80GB, nodes: 5, gpus: 8, cpu: 192, memory: "
                        "2Ti, mig_config: all-3g.40gb}\n"
                        "  - {name: h200, gpu: H200-141GB, nodes: 1, gpus: 8, cpu: 192, memory: "
                        "2Ti}\n"
                        "  - {name: l40s, gpu: L40S-48GB, nodes: 3, gpus: 4, cpu: 64, memory: "
                        "512Gi}\n"
                        "tenants:\n"
                        "  - {name: team-a, namespace: team-a, quota: {nvidia.com/gpu: 56}}\n"
                        "  - {name: team-b, namespace: team-b, quota: {nvidia.com/gpu: 40}}\n"
                        "  - {name: team-c, namespace: team-c, quota: {nvidia.com/gpu: 24}}\n"
                        "classes:\n" LLM70("14", TA) LLM7("22", TB)
                            EMBED("26", TA, ", mig: 1g.10gb") BATCH("8", TC) SMALLTRAIN("18", TB)
                                LARGETRAIN("3", TC) DISTTRAIN("0.5", TA) DEV("12", TB),
};

static const struct {
    const char *label, *pick, *util;
} article[GS_ADV_SIZES] = {
    {"< 8 GPUs", "Time Slicing", "60 %"},
    {"8-32 GPUs", "MIG + Time Slicing", "75 %"},
    {"32-128 GPUs", "MIG + priority scheduling", "80 %"},
    {"> 128 GPUs", "the full set", "85 %+"},
};

const char *gs_adv_size_yaml(int i)
{
    return i >= 0 && i < GS_ADV_SIZES ? size_yaml[i] : NULL;
}

int gs_advise_sizes(const struct gs_advise_opts *o, struct gs_adv_size out[GS_ADV_SIZES],
                    struct gs_scenario *scs, struct gs_error *err)
{
    for (int i = 0; i < GS_ADV_SIZES; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        out[i].label = article[i].label;
        out[i].article_pick = article[i].pick;
        out[i].article_util = article[i].util;
        int rc =
            gs_scenario_parse("advise sizes", size_yaml[i], strlen(size_yaml[i]), &scs[i], err);
        if (rc)
            return rc;
        snprintf(out[i].scenario_name, sizeof(out[i].scenario_name), "%s", scs[i].name);
        for (int g = 0; g < scs[i].ngroups; g++)
            out[i].gpus += scs[i].groups[g].nodes * scs[i].groups[g].gpus;
        struct gs_advise_opts so = *o;
        if (so.budget <= 0)
            so.budget = SIZES_BUDGET;
        if ((rc = gs_advise(&scs[i], &so, &out[i].advice, err)))
            return gs_error_prefix(err, "%s", scs[i].name);
        if ((rc = gs_sim_run(&scs[i], gs_strategy_find("exclusive"), &out[i].exclusive, err)))
            return gs_error_prefix(err, "%s, exclusive", scs[i].name);
    }
    return 0;
}

/* "MIG + time-slicing" from what the recommended setup uses ("Dynamic MIG" where the
 * scheduler re-carves: with sharing and priority, the article's full set). */
static void setup_words(const struct gs_advice *a, char *out, size_t size)
{
    const struct gs_scenario *sc = a->sc;
    bool mig = false, ts = false, mps = false, whole = false;
    for (int g = 0; g < sc->ngroups; g++) {
        const struct gs_adv_group *x = &a->recommended.setup.g[g];
        for (int k = 0; k < sc->groups[g].gpus && k < GS_MAX_GPUS_NODE; k++) {
            if (x->mig[k])
                mig = true;
            else if (x->sharing == GS_SHARE_TIMESLICING)
                ts = true;
            else if (x->sharing == GS_SHARE_MPS)
                mps = true;
            else
                whole = true;
        }
    }
    size_t w = 0;
    out[0] = 0;
    bool dyn = a->recommended.setup.dynamic_mig;
    if (mig || dyn)
        w += (size_t)snprintf(out + w, size - w, "%s", dyn ? "Dynamic MIG" : "MIG");
    if (ts && w < size)
        w += (size_t)snprintf(out + w, size - w, "%sTime-slicing", w ? " + " : "");
    if (mps && w < size)
        w += (size_t)snprintf(out + w, size - w, "%sMPS", w ? " + " : "");
    if (whole && w < size)
        w += (size_t)snprintf(out + w, size - w, "%swhole GPUs", w ? " + " : "");
    bool tenants = sc->ntenants > 0;
    if (tenants && w < size)
        snprintf(out + w, size - w, " + priority/quotas");
}

int gs_adv_sizes_table(const struct gs_adv_size *sz, struct gs_buf *o)
{
    int rc = gs_buf_printf(o, "%-12s %5s | %-26s %8s | %-58s %7s %7s %9s %9s\n", "cluster", "GPUs",
                           "article: recommended", "expected", "measured: recommended", "alloc%",
                           "used%", "used vs", "$/useful");
    rc |= gs_buf_printf(o, "%-12s %5s | %-26s %8s | %-58s %7s %7s %9s %9s\n", "", "", "", "util",
                        "", "", "", "exclusive", "vs excl.");
    for (int i = 0; i < GS_ADV_SIZES; i++) {
        const struct gs_adv_size *s = &sz[i];
        const struct gs_sim_result *r = &s->advice.recommended.r, *x = &s->exclusive;
        char words[128];
        setup_words(&s->advice, words, sizeof(words));
        rc |= gs_buf_printf(o, "%-12s %5d | %-26s %8s | %-58s %7.1f %7.1f %+8.0f%% %+8.0f%%\n",
                            s->label, s->gpus, s->article_pick, s->article_util, words,
                            100 * r->alloc_share, 100 * r->used_share,
                            x->used_share > 0 ? 100 * (r->used_share / x->used_share - 1) : 0,
                            x->cost_per_useful_hour > 0
                                ? 100 * (r->cost_per_useful_hour / x->cost_per_useful_hour - 1)
                                : 0);
    }
    rc |= gs_buf_puts(o, "\nper size (exclusive: every GPU whole, one pod per GPU, a MIG-sized "
                         "workload on a whole GPU; as written: the article's MIG configs, mixed "
                         "on A100 and all-3g.40gb on H100, with gpusched's scheduling):\n");
    for (int i = 0; i < GS_ADV_SIZES; i++) {
        const struct gs_adv_size *s = &sz[i];
        const struct gs_advice *a = &s->advice;
        rc |= gs_buf_printf(o,
                            "  %s (%s, %d GPUs): exclusive alloc %.1f%% used %.1f%% online p99 "
                            "wait %.0fs; as written alloc %.1f%% used %.1f%% online p99 wait "
                            "%.0fs; recommended alloc %.1f%% used %.1f%% online p99 wait "
                            "%.0fs%s; %d setups simulated\n",
                            s->label, s->scenario_name, s->gpus, 100 * s->exclusive.alloc_share,
                            100 * s->exclusive.used_share, s->exclusive.online_p99_wait,
                            100 * a->current.r.alloc_share, 100 * a->current.r.used_share,
                            a->current.r.online_p99_wait, 100 * a->recommended.r.alloc_share,
                            100 * a->recommended.r.used_share, a->recommended.r.online_p99_wait,
                            a->recommended.feasible ? "" : " (SLA missed)", a->simulations);
        for (int g = 0; g < a->sc->ngroups; g++) {
            char str[256];
            gs_adv_group_str(a->sc, &a->recommended.setup, g, str, sizeof(str));
            rc |= gs_buf_printf(o, "    %s (%d x %d): %s\n", a->sc->groups[g].name,
                                a->sc->groups[g].nodes, a->sc->groups[g].gpus, str);
        }
    }
    return rc ? GS_ENOMEM : 0;
}

int gs_adv_sizes_json(const struct gs_adv_size *sz, struct gs_buf *out)
{
    json_t *root = json_array();
    for (int i = 0; i < GS_ADV_SIZES; i++) {
        const struct gs_adv_size *s = &sz[i];
        const struct gs_advice *a = &s->advice;
        json_t *j = json_object();
        char words[128];
        setup_words(a, words, sizeof(words));
        json_object_set_new(j, "cluster", json_string(s->label));
        json_object_set_new(j, "scenario", json_string(s->scenario_name));
        json_object_set_new(j, "gpus", json_integer(s->gpus));
        json_object_set_new(j, "article_recommendation", json_string(s->article_pick));
        json_object_set_new(j, "article_expected_utilization", json_string(s->article_util));
        json_object_set_new(j, "recommendation", json_string(words));
        json_object_set_new(j, "dynamic_mig", json_boolean(a->recommended.setup.dynamic_mig));
        json_object_set_new(j, "simulations", json_integer(a->simulations));
        json_object_set_new(j, "exclusive_used_share", json_real(s->exclusive.used_share));
        json_object_set_new(j, "exclusive_allocated_share", json_real(s->exclusive.alloc_share));
        json_object_set_new(j, "exclusive_online_p99_wait_s",
                            json_real(s->exclusive.online_p99_wait));
        json_object_set_new(j, "as_written_used_share", json_real(a->current.r.used_share));
        json_object_set_new(j, "as_written_allocated_share", json_real(a->current.r.alloc_share));
        json_object_set_new(j, "as_written_online_p99_wait_s",
                            json_real(a->current.r.online_p99_wait));
        json_object_set_new(j, "used_share", json_real(a->recommended.r.used_share));
        json_object_set_new(j, "allocated_share", json_real(a->recommended.r.alloc_share));
        json_object_set_new(j, "online_p99_wait_s", json_real(a->recommended.r.online_p99_wait));
        json_object_set_new(j, "usd_per_useful_gpu_hour",
                            json_real(a->recommended.r.cost_per_useful_hour));
        json_object_set_new(j, "exclusive_usd_per_useful_gpu_hour",
                            json_real(s->exclusive.cost_per_useful_hour));
        json_object_set_new(j, "sla_met", json_boolean(a->recommended.feasible));
        json_t *groups = json_array();
        for (int g = 0; g < a->sc->ngroups; g++) {
            char str[256];
            gs_adv_group_str(a->sc, &a->recommended.setup, g, str, sizeof(str));
            json_t *x = json_object();
            json_object_set_new(x, "name", json_string(a->sc->groups[g].name));
            json_object_set_new(x, "setup", json_string(str));
            json_object_set_new(x, "decision_tree", json_string(a->tree[g]));
            json_array_append_new(groups, x);
        }
        json_object_set_new(j, "node_groups", groups);
        json_array_append_new(root, j);
    }
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    json_decref(root);
    if (!s)
        return GS_ENOMEM;
    int rc = gs_buf_puts(out, s) | gs_buf_puts(out, "\n");
    free(s);
    return rc ? GS_ENOMEM : 0;
}
