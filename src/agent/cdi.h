/* cdi.h - the DRA driver's CDI specs: one file <dir>/gpu.gpusched.io-<claim uid>.json per
 * prepared claim (cdiVersion 0.6.0, kind gpu.gpusched.io/gpu, one device "<claim uid>-<device>"
 * per result with env NVIDIA_VISIBLE_DEVICES=<uuid>), which the container runtime reads.
 * Owns nothing but those files; thread-safe (no state). */
#ifndef GS_AGENT_CDI_H
#define GS_AGENT_CDI_H

#include <stddef.h>

struct gs_error;

/* Write the spec of claim uid: devices[k] (device names) get uuids[k]. Replaced at once.
 * 0, GS_ENOMEM, or GS_EIO with the path. */
int gs_cdi_write(const char *dir, const char *uid, const char *const *devices,
                 const char *const *uuids, int n, struct gs_error *err);
/* Remove the spec of claim uid (none is fine). */
void gs_cdi_remove(const char *dir, const char *uid);

#endif
