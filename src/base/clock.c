/* clock.c - clock_gettime and nanosleep in seconds as doubles (base/clock.h). */
#include "clock.h"

#include <time.h>

double gs_clock_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

double gs_clock_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

void gs_clock_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

struct timespec gs_clock_mono_deadline(double s)
{
    double end = gs_clock_mono() + s;
    struct timespec ts = {.tv_sec = (time_t)end};
    ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
    return ts;
}
