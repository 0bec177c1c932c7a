/* gpulock.c - a GPU backend serialising another (see gpulock.h): the same vtable, each entry
 * taking the mutex around the inner call. */
#include "gpulock.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct locked {
    struct gs_gpu_backend self;
    struct gs_gpu_backend *in;
    struct gs_gpu_ops ops; /* locked_ops under the inner backend's name */
    pthread_mutex_t mu;
};

#define L(b)  ((struct locked *)(b)->impl)
#define IN(b) (L(b)->in)
#define CALL(b, expr)                                                                              \
    do {                                                                                           \
        pthread_mutex_lock(&L(b)->mu);                                                             \
        int rc_ = (expr);                                                                          \
        pthread_mutex_unlock(&L(b)->mu);                                                           \
        return rc_;                                                                                \
    } while (0)

static int l_count(struct gs_gpu_backend *b)
{
    CALL(b, IN(b)->ops->count(IN(b)));
}

static int l_info(struct gs_gpu_backend *b, int i, struct gs_gpu_info *out)
{
    CALL(b, IN(b)->ops->info(IN(b), i, out));
}

static int l_metrics(struct gs_gpu_backend *b, int i, struct gs_gpu_metrics *out)
{
    CALL(b, IN(b)->ops->metrics(IN(b), i, out));
}

static int l_mig_list(struct gs_gpu_backend *b, int i, struct gs_mig_inst *out, int cap)
{
    CALL(b, IN(b)->ops->mig_list(IN(b), i, out, cap));
}

static int l_mig_profiles(struct gs_gpu_backend *b, int i, struct gs_gpu_profile *out, int cap)
{
    CALL(b, IN(b)->ops->mig_profiles(IN(b), i, out, cap));
}

static int l_mig_set_mode(struct gs_gpu_backend *b, int i, bool enable)
{
    CALL(b, IN(b)->ops->mig_set_mode(IN(b), i, enable));
}

static int l_mig_create(struct gs_gpu_backend *b, int i, uint32_t profile_id, uint32_t start,
                        struct gs_mig_inst *out)
{
    CALL(b, IN(b)->ops->mig_create(IN(b), i, profile_id, start, out));
}

static int l_mig_destroy(struct gs_gpu_backend *b, int i, uint32_t gi_id)
{
    CALL(b, IN(b)->ops->mig_destroy(IN(b), i, gi_id));
}

static int l_xids(struct gs_gpu_backend *b, int timeout_ms, int *gpu, uint64_t *xid, int cap)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long spent = (now.tv_sec - t0.tv_sec) * 1000L + (now.tv_nsec - t0.tv_nsec) / 1000000L;
        long left = timeout_ms - spent;
        int slice = left <= 0 ? 0 : left < 50 ? (int)left : 50;
        pthread_mutex_lock(&L(b)->mu);
        int n = IN(b)->ops->xids(IN(b), slice, gpu, xid, cap);
        pthread_mutex_unlock(&L(b)->mu);
        if (n != 0 || left <= 50)
            return n;
    }
}

static int l_mig_metrics(struct gs_gpu_backend *b, int i, uint32_t gi_id,
                         struct gs_mig_metrics *out)
{
    CALL(b, IN(b)->ops->mig_metrics(IN(b), i, gi_id, out));
}

static int l_processes(struct gs_gpu_backend *b, int i, struct gs_gpu_proc *out, int cap)
{
    CALL(b, IN(b)->ops->processes(IN(b), i, out, cap));
}

static void l_close(struct gs_gpu_backend *b)
{
    pthread_mutex_destroy(&L(b)->mu);
    free(L(b));
}

static const struct gs_gpu_ops locked_ops = {
    GS_GPU_OPS(l),
};

struct gs_gpu_backend *gs_gpu_locked(struct gs_gpu_backend *inner)
{
    struct locked *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->in = inner;
    pthread_mutex_init(&l->mu, NULL);
    l->ops = locked_ops;
    l->ops.name = inner->ops->name;
    l->self.ops = &l->ops;
    l->self.impl = l;
    return &l->self;
}
