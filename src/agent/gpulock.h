/* gpulock.h - a GPU backend that serialises another: every call of the inner backend is made
 * under one mutex, so that two threads (the agent's loop and the DRA driver's gRPC thread,
 * which creates MIG instances when the kubelet prepares a claim) can share it. A call that
 * waits (xids with a timeout) waits in slices of at most 50 ms and lets go of the mutex
 * between them, so a MIG change is never held up for a whole agent interval. Closing it does
 * not close the inner backend. Thread-safe. */
#ifndef GS_AGENT_GPULOCK_H
#define GS_AGENT_GPULOCK_H

#include "gpu.h"

/* A serialised view of inner (which must outlive it); NULL when out of memory. Free with
 * gs_gpu_close. */
struct gs_gpu_backend *gs_gpu_locked(struct gs_gpu_backend *inner);

#endif
