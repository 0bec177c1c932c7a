/* metrics.c - the scheduler daemon's counters, gauges and last verdicts (sched/metrics.h):
 * the binder, the extender and the scheduling cycle record into them; the HTTP endpoints
 * (sched/endpoints.c) serve the page written here through formats/promtext.c, and the
 * verdicts as /debug/pending. */
#include "metrics.h"

#include "../base/buf.h"
#include "../base/flag.h"
#include "../core/catalog.h"
#include "../core/cluster.h"
#include "../formats/promtext.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_metrics {
    const volatile int *leader;
    pthread_mutex_t mu;
    /* under mu: */
    uint64_t attempts_scheduled, attempts_unschedulable, attempts_error;
    uint64_t lat_count, lat_bucket[GS_METRICS_BUCKETS];
    double lat_sum;
    int pending;
    int nmodels;
    char model_name[GS_MAX_MODELS][32];
    double model_alloc[GS_MAX_MODELS], model_cap[GS_MAX_MODELS];
    uint64_t preemptions, victims;
    double lost_gpu_hours;
    uint64_t policy_lists;
    uint64_t cycles;
    json_t *report; /* the last cycle's reasons per pending pod */
};

static const double buckets[GS_METRICS_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                                   0.05,  0.1,    0.5,   1};

void gs__metrics_record_latency(struct gs_metrics *s, double dt, int result)
{
    pthread_mutex_lock(&s->mu);
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
    pthread_mutex_unlock(&s->mu);
}

void gs__metrics_count_cycle(struct gs_metrics *s)
{
    pthread_mutex_lock(&s->mu);
    s->cycles++;
    pthread_mutex_unlock(&s->mu);
}

void gs__metrics_update_gauges(struct gs_metrics *s, const struct gs_cluster *c, int pending)
{
    pthread_mutex_lock(&s->mu);
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
    pthread_mutex_unlock(&s->mu);
}

int gs__metrics_write(struct gs_metrics *s, struct gs_buf *b)
{
    struct gs_promtext w;
    gs_promtext_init(&w, b);
    pthread_mutex_lock(&s->mu);
    gs_promtext_family(&w, "gpusched_schedule_attempts_total", GS_PROM_COUNTER,
                       "Scheduling attempts by result.");
    static const struct gs_prom_label scheduled = {"result", "scheduled"},
                                      unschedulable = {"result", "unschedulable"},
                                      error = {"result", "error"};
    gs_promtext_sample_u64(&w, &scheduled, 1, s->attempts_scheduled);
    gs_promtext_sample_u64(&w, &unschedulable, 1, s->attempts_unschedulable);
    gs_promtext_sample_u64(&w, &error, 1, s->attempts_error);
    gs_promtext_family(&w, "gpusched_scheduling_cycles_total", GS_PROM_COUNTER,
                       "Scheduling cycles run.");
    gs_promtext_sample_u64(&w, NULL, 0, s->cycles);
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
    if (s->report) {
        json_t *count = json_object();
        size_t i;
        json_t *r;
        json_array_foreach(s->report, i, r)
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
    gs_promtext_sample(&w, NULL, 0, gs_flag_get(s->leader) ? 1 : 0);
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
    pthread_mutex_unlock(&s->mu);
    return gs_promtext_end(&w);
}

struct gs_metrics *gs__metrics_new(const volatile int *leader)
{
    struct gs_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->leader = leader;
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void gs__metrics_free(struct gs_metrics *m)
{
    if (!m)
        return;
    json_decref(m->report);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void gs__metrics_count_preemption(struct gs_metrics *m, int victims, double gpu_hours)
{
    pthread_mutex_lock(&m->mu);
    m->preemptions++;
    m->victims += (uint64_t)victims;
    m->lost_gpu_hours += gpu_hours;
    pthread_mutex_unlock(&m->mu);
}

void gs__metrics_set_policy_lists(struct gs_metrics *m, uint64_t n)
{
    pthread_mutex_lock(&m->mu);
    m->policy_lists = n;
    pthread_mutex_unlock(&m->mu);
}

static void report_key(const json_t *r, char *key, size_t n)
{
    snprintf(key, n, "%s/%s", json_string_value(json_object_get(r, "namespace")),
             json_string_value(json_object_get(r, "pod")));
}

void gs__metrics_publish_report(struct gs_metrics *m, json_t *report, const char *const *pending,
                                int npending)
{
    pthread_mutex_lock(&m->mu);
    json_t *seen = json_object(), *last = json_object();
    char key[GS_REPORT_KEY_MAX];
    size_t ri;
    json_t *r;
    json_array_foreach(report, ri, r)
    {
        report_key(r, key, sizeof(key));
        json_object_set(seen, key, json_true());
    }
    json_array_foreach(m->report, ri, r)
    {
        report_key(r, key, sizeof(key));
        json_object_set(last, key, r);
    }
    for (int i = 0; i < npending; i++) {
        json_t *old = json_object_get(last, pending[i]);
        if (old && !json_object_get(seen, pending[i]))
            json_array_append(report, old);
    }
    json_decref(seen);
    json_decref(last);
    json_decref(m->report);
    m->report = report;
    pthread_mutex_unlock(&m->mu);
}

void gs__metrics_set_report(struct gs_metrics *m, json_t *report)
{
    pthread_mutex_lock(&m->mu);
    json_decref(m->report);
    m->report = report;
    pthread_mutex_unlock(&m->mu);
}

json_t *gs__metrics_report(struct gs_metrics *m)
{
    pthread_mutex_lock(&m->mu);
    json_t *r = m->report ? json_deep_copy(m->report) : json_array();
    pthread_mutex_unlock(&m->mu);
    return r;
}

int gs__metrics_reply_pending(struct gs_metrics *m, struct gs_httpd_reply *rep)
{
    pthread_mutex_lock(&m->mu);
    int rc = m->report ? gs_httpd_reply_json(rep, 200, m->report, JSON_INDENT(1))
                       : gs_httpd_reply(rep, 200, "application/json", "[]");
    pthread_mutex_unlock(&m->mu);
    return rc;
}
