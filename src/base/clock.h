/* clock.h - the daemons' clocks: seconds as doubles, monotonic for intervals and deadlines,
 * wall (realtime) for what is compared with timestamps from elsewhere (an API object's
 * creationTimestamp), and a sleep. Core never reads a clock (its callers pass the time in);
 * the simulator has its own virtual one. All functions are thread-safe. */
#ifndef GS_CLOCK_H
#define GS_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC: never jumps, unrelated to the date. */
double gs_clock_mono(void);
/* Seconds since the Unix epoch (CLOCK_REALTIME). */
double gs_clock_wall(void);
/* The CLOCK_MONOTONIC time s seconds from now, as pthread_cond_timedwait takes it (for a
 * condition variable set to that clock). */
struct timespec gs_clock_mono_deadline(double s);
/* Sleep s seconds (s >= 0; a signal may cut it short). */
void gs_clock_sleep(double s);

#endif
