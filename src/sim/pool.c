/* pool.c - the simulators' worker pool (sim/pool.h): a shared next-job counter under a
 * mutex, one pthread per worker, the lowest-indexed failure kept. */
#include "pool.h"

#include "../base/error.h"

#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

struct pool {
    gs_pool_job_fn fn;
    void *ctx;
    int njobs, next;
    pthread_mutex_t mu;
    bool stop;           /* a job failed: start no more */
    int failed;          /* lowest failed index, njobs: none */
    int rc;              /* its code */
    struct gs_error err; /* its message */
};

static void *worker(void *arg)
{
    struct pool *p = arg;
    struct gs_error e;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int i = !p->stop && p->next < p->njobs ? p->next++ : -1;
        pthread_mutex_unlock(&p->mu);
        if (i < 0)
            return NULL;
        gs_error_init(&e);
        int rc = p->fn(p->ctx, i, &e);
        if (!rc)
            continue;
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        if (i < p->failed) {
            p->failed = i;
            p->rc = rc;
            p->err = e;
        }
        pthread_mutex_unlock(&p->mu);
    }
}

int gs_pool_run(int njobs, int threads, int max_threads, gs_pool_job_fn fn, void *ctx, int *failed,
                struct gs_error *err)
{
    if (failed)
        *failed = -1;
    if (njobs <= 0)
        return 0;
    struct pool p = {.fn = fn, .ctx = ctx, .njobs = njobs, .failed = njobs};
    gs_error_init(&p.err);
    int max =
        max_threads > 0 && max_threads < GS_POOL_MAX_THREADS ? max_threads : GS_POOL_MAX_THREADS;
    int nt = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1)
        nt = 1;
    if (nt > max)
        nt = max;
    if (nt > njobs)
        nt = njobs;
    pthread_mutex_init(&p.mu, NULL);
    pthread_t th[GS_POOL_MAX_THREADS];
    int started = 0;
    for (int t = 0; t < nt; t++)
        if (pthread_create(&th[started], NULL, worker, &p) == 0)
            started++;
    if (!started)
        worker(&p);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&p.mu);
    if (p.failed == njobs)
        return 0;
    if (failed)
        *failed = p.failed;
    if (err)
        *err = p.err;
    return p.rc;
}
