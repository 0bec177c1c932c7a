/* pool.h - the simulators' worker pool: run jobs 0..n-1 on a few threads.
 *
 * Jobs are handed out in index order to whichever thread is free; each job writes its
 * results where its index says (the caller's arrays), so what comes out does not depend on
 * the thread count or on timing. Once a job fails no new job starts (those running finish);
 * the error returned is that of the failed job with the lowest index, which is the same
 * whatever the timing (every job below it was started). sim/scenario.c (the strategies),
 * sim/openb.c (policies x seeds) and sim/advise.c (candidate setups) use it.
 *
 * gs_pool_run blocks until every started job is done. The job function runs on several
 * threads at once: it must touch only what its index owns (and read-only shared input). */
#ifndef GS_SIM_POOL_H
#define GS_SIM_POOL_H

struct gs_error;

/* One job: 0 or a negative error, with its message in err (the job's own, initialised). */
typedef int (*gs_pool_job_fn)(void *ctx, int i, struct gs_error *err);

#define GS_POOL_MAX_THREADS 64

/* Run jobs 0..njobs-1 on threads threads (<= 0: the number of CPUs), at most max_threads
 * (<= 0: GS_POOL_MAX_THREADS) and at most njobs; in the calling thread when no thread can
 * be started. Returns 0, or the error of the lowest-indexed failed job: its code, its
 * message in err (may be NULL) and its index in *failed (may be NULL). */
int gs_pool_run(int njobs, int threads, int max_threads, gs_pool_job_fn fn, void *ctx, int *failed,
                struct gs_error *err);

#endif
