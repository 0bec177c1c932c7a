/* metrics.c - the scheduler daemon's counters and gauges (sched/metrics.h): the binder, the
 * extender and the scheduling cycle record into them; the HTTP endpoints (sched/endpoints.c)
 * serve the page written here through formats/promtext.c. */
#include "metrics.h"

#include "../base/buf.h"
#include "../base/flag.h"
#include "../formats/promtext.h"
#include "sched_internal.h"

#include <stdio.h>
#include <string.h>

static const double buckets[GS_METRICS_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                                   0.05,  0.1,    0.5,   1};

void gs__metrics_record_latency(struct gs_sched *s, double dt, int result)
{
    pthread_mutex_lock(&s->mmu);
    if (result == 0)
        s->attempts_scheduled++;
    else if (result == 1)
        s->attempts_unschedulable++;
    else
        s->attempts_error++;
    s->lat_count++;
    s->lat_sum += dt;
    for (int i = 0; i < GS_METRICS_BUCKETS; i++)
        if (dt <= buckets[i]) {
            s->lat_bucket[i]++;
            break;
        }
    pthread_mutex_unlock(&s->mmu);
}

void gs__metrics_update_gauges(struct gs_sched *s, const struct gs_cluster *c, int pending)
{
    pthread_mutex_lock(&s->mmu);
    s->pending = pending;
    s->nmodels = 0;
    for (int g = 0; g < c->ngpus; g++) {
        const char *name = gs_catalog_get(c->gpus[g].model)->name;
        int m;
        for (m = 0; m < s->nmodels; m++)
            if (strcmp(s->model_name[m], name) == 0)
                break;
        if (m == s->nmodels) {
            if (s->nmodels >= GS_MAX_MODELS)
                continue;
            snprintf(s->model_name[m], sizeof(s->model_name[m]), "%s", name);
            s->model_cap[m] = s->model_alloc[m] = 0;
            s->nmodels++;
        }
        s->model_cap[m] += 1;
        s->model_alloc[m] += gs_gpu_alloc_units(&c->gpus[g]);
    }
    pthread_mutex_unlock(&s->mmu);
}

int gs__metrics_write(struct gs_sched *s, struct gs_buf *b)
{
    struct gs_promtext w;
    gs_promtext_init(&w, b);
    pthread_mutex_lock(&s->mmu);
    gs_promtext_family(&w, "gpusched_schedule_attempts_total", GS_PROM_COUNTER,
                       "Scheduling attempts by result.");
    static const struct gs_prom_label scheduled = {"result", "scheduled"},
                                      unschedulable = {"result", "unschedulable"},
                                      error = {"result", "error"};
    gs_promtext_sample_u64(&w, &scheduled, 1, s->attempts_scheduled);
    gs_promtext_sample_u64(&w, &unschedulable, 1, s->attempts_unschedulable);
    gs_promtext_sample_u64(&w, &error, 1, s->attempts_error);
    gs_promtext_family(&w, "gpusched_scheduling_duration_seconds", GS_PROM_HISTOGRAM,
                       "Time to place and bind a pod.");
    gs_promtext_histogram(&w, NULL, 0, buckets, s->lat_bucket, GS_METRICS_BUCKETS, s->lat_count,
                          s->lat_sum);
    gs_promtext_family(&w, "gpusched_pending_pods", GS_PROM_GAUGE, "Pods waiting for gpusched.");
    gs_promtext_sample(&w, NULL, 0, s->pending);
    /* by the last verdict on each (what /debug/pending says): quota, fragmentation, selector,
     * taint, gang, preemption... a reason with no pod now is not written */
    gs_promtext_family(&w, "gpusched_pending_pods_by_reason", GS_PROM_GAUGE,
                       "Pods waiting for gpusched, by why the last cycle left them waiting.");
    if (s->pending_report) {
        json_t *count = json_object();
        size_t i;
        json_t *r;
        json_array_foreach(s->pending_report, i, r)
        {
            const char *why = json_string_value(json_object_get(r, "reason"));
            if (why && count)
                json_object_set_new(
                    count, why, json_integer(json_integer_value(json_object_get(count, why)) + 1));
        }
        const char *why;
        json_t *n;
        json_object_foreach(count, why, n)
        {
            struct gs_prom_label l = {"reason", why};
            gs_promtext_sample(&w, &l, 1, (double)json_integer_value(n));
        }
        json_decref(count);
    }
    gs_promtext_family(&w, "gpusched_leader", GS_PROM_GAUGE,
                       "1 when this replica holds the lease.");
    gs_promtext_sample(&w, NULL, 0, gs_flag_get(&s->leader) ? 1 : 0);
    gs_promtext_family(&w, "gpusched_gpus_allocatable", GS_PROM_GAUGE,
                       "GPUs (accounting units) by model.");
    for (int m = 0; m < s->nmodels; m++) {
        struct gs_prom_label model = {"model", s->model_name[m]};
        gs_promtext_sample(&w, &model, 1, s->model_cap[m]);
    }
    gs_promtext_family(&w, "gpusched_gpus_allocated", GS_PROM_GAUGE,
                       "GPUs (accounting units) allocated by model.");
    for (int m = 0; m < s->nmodels; m++) {
        struct gs_prom_label model = {"model", s->model_name[m]};
        gs_promtext_sample(&w, &model, 1, s->model_alloc[m]);
    }
    gs_promtext_family(&w, "gpusched_preemptions_total", GS_PROM_COUNTER,
                       "Preemptions (victim sets evicted).");
    gs_promtext_sample_u64(&w, NULL, 0, s->preemptions);
    gs_promtext_family(&w, "gpusched_preemption_victims_total", GS_PROM_COUNTER,
                       "Pods evicted by preemption.");
    gs_promtext_sample_u64(&w, NULL, 0, s->victims);
    gs_promtext_family(&w, "gpusched_preemption_lost_gpu_hours_total", GS_PROM_COUNTER,
                       "GPU-hours of work lost to preemption.");
    gs_promtext_sample(&w, NULL, 0, s->lost_gpu_hours);
    gs_promtext_family(&w, "gpusched_policy_lists_total", GS_PROM_COUNTER,
                       "Lists of GPUQueues, ResourceQuotas, PodGroups, PDBs, MigManagers, "
                       "PersistentVolumeClaims and PersistentVolumes (one per kind; watches say "
                       "when).");
    gs_promtext_sample_u64(&w, NULL, 0, s->policy_lists);
    pthread_mutex_unlock(&s->mmu);
    return gs_promtext_end(&w);
}
