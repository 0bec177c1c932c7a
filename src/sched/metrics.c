/* metrics.c - the scheduler daemon's counters and gauges (sched/metrics.h): the binder, the
 * extender and the scheduling cycle record into them; the HTTP endpoints (sched/endpoints.c)
 * serve the page written here. */
#include "metrics.h"

#include "../base/buf.h"
#include "../base/flag.h"
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
    int rc = 0;
    pthread_mutex_lock(&s->mmu);
    rc |= gs_buf_printf(
        b,
        "# HELP gpusched_schedule_attempts_total Scheduling attempts by result.\n"
        "# TYPE gpusched_schedule_attempts_total counter\n"
        "gpusched_schedule_attempts_total{result=\"scheduled\"} %llu\n"
        "gpusched_schedule_attempts_total{result=\"unschedulable\"} %llu\n"
        "gpusched_schedule_attempts_total{result=\"error\"} %llu\n"
        "# HELP gpusched_scheduling_duration_seconds Time to place and bind a pod.\n"
        "# TYPE gpusched_scheduling_duration_seconds histogram\n",
        (unsigned long long)s->attempts_scheduled, (unsigned long long)s->attempts_unschedulable,
        (unsigned long long)s->attempts_error);
    uint64_t cum = 0;
    for (int i = 0; i < GS_METRICS_BUCKETS; i++) {
        cum += s->lat_bucket[i];
        rc |= gs_buf_printf(b, "gpusched_scheduling_duration_seconds_bucket{le=\"%g\"} %llu\n",
                            buckets[i], (unsigned long long)cum);
    }
    rc |= gs_buf_printf(b,
                        "gpusched_scheduling_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                        "gpusched_scheduling_duration_seconds_sum %.6f\n"
                        "gpusched_scheduling_duration_seconds_count %llu\n"
                        "# HELP gpusched_pending_pods Pods waiting for gpusched.\n"
                        "# TYPE gpusched_pending_pods gauge\n"
                        "gpusched_pending_pods %d\n"
                        "# HELP gpusched_leader 1 when this replica holds the lease.\n"
                        "# TYPE gpusched_leader gauge\n"
                        "gpusched_leader %d\n"
                        "# HELP gpusched_gpus_allocatable GPUs (accounting units) by model.\n"
                        "# TYPE gpusched_gpus_allocatable gauge\n",
                        (unsigned long long)s->lat_count, s->lat_sum,
                        (unsigned long long)s->lat_count, s->pending,
                        gs_flag_get(&s->leader) ? 1 : 0);
    for (int m = 0; m < s->nmodels; m++)
        rc |= gs_buf_printf(b, "gpusched_gpus_allocatable{model=\"%s\"} %g\n", s->model_name[m],
                            s->model_cap[m]);
    rc |= gs_buf_puts(b, "# HELP gpusched_gpus_allocated GPUs (accounting units) allocated by "
                         "model.\n# TYPE gpusched_gpus_allocated gauge\n");
    for (int m = 0; m < s->nmodels; m++)
        rc |= gs_buf_printf(b, "gpusched_gpus_allocated{model=\"%s\"} %g\n", s->model_name[m],
                            s->model_alloc[m]);
    rc |= gs_buf_printf(
        b,
        "# HELP gpusched_preemptions_total Preemptions (victim sets evicted).\n"
        "# TYPE gpusched_preemptions_total counter\n"
        "gpusched_preemptions_total %llu\n"
        "# HELP gpusched_preemption_victims_total Pods evicted by preemption.\n"
        "# TYPE gpusched_preemption_victims_total counter\n"
        "gpusched_preemption_victims_total %llu\n"
        "# HELP gpusched_preemption_lost_gpu_hours_total GPU-hours of work lost "
        "to preemption.\n"
        "# TYPE gpusched_preemption_lost_gpu_hours_total counter\n"
        "gpusched_preemption_lost_gpu_hours_total %.6f\n"
        "# HELP gpusched_policy_lists_total Lists of GPUQueues, ResourceQuotas, "
        "PodGroups, PDBs, MigManagers, PersistentVolumeClaims and PersistentVolumes (one "
        "per kind; watches say when).\n"
        "# TYPE gpusched_policy_lists_total counter\n"
        "gpusched_policy_lists_total %llu\n",
        (unsigned long long)s->preemptions, (unsigned long long)s->victims, s->lost_gpu_hours,
        (unsigned long long)s->policy_lists);
    pthread_mutex_unlock(&s->mmu);
    return rc;
}
