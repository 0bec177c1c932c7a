/* drapub.h - the DRA driver's ResourceSlices (formats/draslice.h builds them): one pool per
 * node, converged through the API. gs_drapub_sync lists the slices with the field selectors
 * spec.driver and spec.nodeName, then updates, creates and deletes until the pool is what the
 * GPUs are now, bumping pool.generation (above every generation seen) whenever the pool
 * changes; the first sync always rewrites them, later ones only on a change of GPUs,
 * instances or health, or when the slices on the server are not the ones last written.
 *
 * Owns the slices last built and written, their names and generation, and the health last
 * given. Not thread-safe: the driver (dra.c) calls it under its lock. */
#ifndef GS_AGENT_DRAPUB_H
#define GS_AGENT_DRAPUB_H

#include "gpu.h"

#include <jansson.h>
#include <stdbool.h>

struct gs_drapub;
struct gs_draclaims;
struct gs_kube_client;
struct gs_error;

/* A publisher for node (kc may be NULL: slices built, nothing published). NULL when out of
 * memory. */
struct gs_drapub *gs_drapub_new(const char *node, bool dynamic_mig, struct gs_kube_client *kc);
void gs_drapub_free(struct gs_drapub *p);
/* Backend GPU i's health is healthy[i] (NULL: all healthy), from the next sync on. */
void gs_drapub_health(struct gs_drapub *p, const bool *healthy, int n);
/* Build the slices of the GPUs of b as they are now (the instances claims' prepares made,
 * in claims, marked dynamic) and converge the API's to them. 0, or the API's error (tried
 * again in full at the next call). */
int gs_drapub_sync(struct gs_drapub *p, struct gs_gpu_backend *b, const struct gs_draclaims *claims,
                   struct gs_error *err);
/* The slices last built (a new reference; NULL before a sync). */
json_t *gs_drapub_slices(struct gs_drapub *p);

#endif
