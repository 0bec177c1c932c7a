/* devices.h - the gpusched.io/devices annotation: which devices of its node a pod holds, as
 * the scheduler records them before it binds the pod (and the extender in its bind), the
 * scheduler's cache reads them back for bound pods, and the node agent honours and corrects
 * them. One codec for all of them.
 *
 * Grammar (one kind per annotation; I is a GPU's physical index on its node, decimal):
 *   gpu=I[,I...]                 whole GPUs
 *   replica=I[,I...]             one time-slicing or MPS replica of each GPU named
 *   milli=I:M                    M thousandths of GPU I (0 < M < 1000)
 *   mig=I:PROFILE@S[,I:...]      the MIG instance of PROFILE (a catalog name such as 3g.40gb)
 *                                at placement start S on GPU I
 * At most GS_DEVICES_MAX entries and GS_DEVICES_TEXT_MAX - 1 bytes. The reader is strict:
 * anything else is refused whole. Whether the indexes, profiles and starts exist on a node is
 * the caller's to judge (sched/cache.c against the cluster, the agent against its GPUs).
 * Pure functions; thread-safe. */
#ifndef GS_FORMATS_DEVICES_H
#define GS_FORMATS_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#define GS_DEVICES_ANNOTATION  "gpusched.io/devices"
#define GS_DEVICES_MAX         16  /* entries (a node's GPUs, GS_MAX_GPUS_NODE) */
#define GS_DEVICES_TEXT_MAX    251 /* the text, with its NUL */
#define GS_DEVICES_PROFILE_MAX 32  /* a profile name, with its NUL */

enum gs_devices_kind { GS_DEVICES_GPU = 0, GS_DEVICES_REPLICA, GS_DEVICES_MILLI, GS_DEVICES_MIG };

struct gs_devices_item {
    int32_t gpu;                          /* physical index, >= 0 */
    int32_t milli;                        /* GS_DEVICES_MILLI: 1..999; else 0 */
    int32_t start;                        /* GS_DEVICES_MIG: the placement start; else -1 */
    char profile[GS_DEVICES_PROFILE_MAX]; /* GS_DEVICES_MIG: the profile name; else "" */
};

struct gs_devices {
    enum gs_devices_kind kind;
    int n;
    struct gs_devices_item item[GS_DEVICES_MAX];
};

/* The kind's name as the annotation spells it ("gpu", "replica", "milli", "mig"). */
const char *gs_devices_kind_name(enum gs_devices_kind kind);

/* Read len bytes of text (need not be NUL-terminated) into *d. Returns 0, or GS_EINVAL for
 * anything outside the grammar (d is then zeroed). */
int gs_devices_parse(const char *text, size_t len, struct gs_devices *d);

/* Write d as annotation text into out (size bytes). Returns the length written, or
 * GS_EINVAL for an entry outside the grammar, or GS_ENOSPC when it does not fit (out then
 * holds ""). */
int gs_devices_format(const struct gs_devices *d, char *out, size_t size);

#endif
