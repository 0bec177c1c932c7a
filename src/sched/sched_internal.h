/* sched_internal.h - the scheduler daemon's state, shared by the modules of src/sched that
 * make up the daemon (scheduler.c wires them: store, binder, snapshot, driver, extender,
 * metrics, endpoints); nothing outside src/sched includes it.
 *
 * One struct gs_sched per daemon, made and freed by scheduler.c (gs_scheduler_run,
 * gs_scheduler_explain). Locks: st.mu guards the store; mmu the metrics, policy_lists,
 * pending_report and the evicted victims; pmu the tenancy objects po and po_synced; emu the
 * extender's engine; the journal has its own. stop, quit, fatal and leader are flags (base/flag.h),
 * read without a lock. The options o are fixed after start; their strings belong to the caller. */
#ifndef GS_SCHED_INTERNAL_H
#define GS_SCHED_INTERNAL_H

#include "../core/catalog.h"
#include "../core/engine.h"
#include "../formats/migdesired.h"
#include "binder.h"
#include "claims.h"
#include "journal.h"
#include "metrics.h"
#include "scheduler.h"
#include "store.h"
#include "tenancy.h"

#include <jansson.h>
#include <pthread.h>

#include <stdbool.h>
#include <stdint.h>

struct gs_sched {
    struct gs_kube_client *kc;
    struct gs_scheduler_opts o;
    volatile int *stop; /* the caller's: ends gs_scheduler_run */
    volatile int quit;  /* set when gs_scheduler_run ends its loop: stops the helper threads */
    volatile int fatal;
    struct gs_store st;
    volatile int leader;
    /* metrics (sched/metrics.c) */
    pthread_mutex_t mmu;
    uint64_t attempts_scheduled, attempts_unschedulable, attempts_error;
    uint64_t lat_count, lat_bucket[GS_METRICS_BUCKETS];
    double lat_sum;
    int pending;
    int nmodels;
    char model_name[GS_MAX_MODELS][32];
    double model_alloc[GS_MAX_MODELS], model_cap[GS_MAX_MODELS];
    struct gs_binder bd; /* sched/binder.c */
    /* tenancy objects, relisted every second */
    pthread_mutex_t pmu;
    struct gs_policy_objs po;
    bool po_synced;
    uint64_t policy_lists;  /* lists of tenancy objects so far (under mmu) */
    bool dry;               /* explain: decide, record why, write nothing */
    json_t *pending_report; /* under mmu: the last cycle's reasons per pending pod */
    json_t *decision_lines; /* dry (explain): the last cycle's decisions, one line each */
    uint64_t preemptions, victims;
    /* victims we deleted, until the watch shows them gone (uid, when) */
#define GS_EVICTED_MAX 1024
    char evicted[GS_EVICTED_MAX][64];
    double evicted_at[GS_EVICTED_MAX];
    int nevicted;
    double lost_gpu_hours;
    /* dynamic MIG (sched/driver.c, its thread only): the layouts this daemon asked for
     * lately, until the watch shows them on the Node, and when (hysteresis) */
#define GS_RECARVE_NOTES 64
    struct gs__recarve_note {
        char node[GS_KNAME_MAX];
        int gpu; /* physical index */
        int64_t generation;
        double at_wall, at_mono;
        struct gs_mig_desired_gpu want;
    } notes[GS_RECARVE_NOTES];
    int nnotes;
    /* recent binds, preemptions and re-carvings for the dashboard (its own lock) */
    struct gs_journal journal;
    /* DRA (sched/claims.c): classes, slices and claims, and the allocations written; NULL in
     * extender mode (kube-scheduler allocates there) */
    struct gs_claims *claims;
    /* extender mode: one engine shared by the HTTP handlers */
    pthread_mutex_t emu;
    struct gs_engine *xengine;
    int xengine_nodes;
};

#endif
