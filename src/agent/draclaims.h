/* draclaims.h - the claims the DRA driver has prepared on this node, and their checkpoint
 * (<plugins>/gpu.gpusched.io/checkpoint.json, {"v":1,"claims":[...]}, replaced atomically on
 * every change), read back at start so that a restarted agent answers and unprepares what it
 * prepared before.
 *
 * The store owns the list and the file; the driver (dra.c) fills a claim when it prepares it
 * and hands it over whole. Not thread-safe: the driver calls it under its lock. */
#ifndef GS_AGENT_DRACLAIMS_H
#define GS_AGENT_DRACLAIMS_H

#include "../formats/draslice.h"
#include "dra.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_DRA_UID_MAX  129 /* a claim's uid (36 in practice) */
#define GS_DRA_NS_MAX   64  /* a namespace: a DNS label */
#define GS_DRA_NAME_MAX 254 /* an object name: a DNS subdomain */
#define GS_DRA_REQ_MAX  128 /* "<request>/<subrequest>", two DNS labels */

/* A device prepared for one result of a claim. */
struct gs_dra_prepdev {
    char request[GS_DRA_REQ_MAX];
    char device[GS_DRASLICE_NAME_MAX];
    char uuid[96]; /* what NVIDIA_VISIBLE_DEVICES gets */
    int gpu;       /* GPU index */
    uint32_t gi;   /* GPU instance, with created */
    bool created;  /* a MIG instance this claim's prepare made (unprepare destroys it) */
};

struct gs_dra_claim {
    char uid[GS_DRA_UID_MAX], ns[GS_DRA_NS_MAX], name[GS_DRA_NAME_MAX];
    int ndev;
    struct gs_dra_prepdev dev[GS_DRA_MAX_RESULTS];
};

struct gs_draclaims;
struct gs_error;

/* The store of checkpoint path, with what it holds (none yet: empty). 0 and *out, GS_EINVAL
 * (a checkpoint that does not read: its path and field), GS_EIO, GS_ENOMEM. */
int gs_draclaims_open(const char *path, struct gs_draclaims **out, struct gs_error *err);
void gs_draclaims_free(struct gs_draclaims *s);

int gs_draclaims_count(const struct gs_draclaims *s);
/* The claim of uid, or NULL; valid until the store changes. */
const struct gs_dra_claim *gs_draclaims_find(const struct gs_draclaims *s, const char *uid);
/* Keep claim c and write the checkpoint. 0; GS_ENOSPC when GS_DRA_MAX_CLAIMS are kept; the
 * checkpoint's error (c is then not kept). */
int gs_draclaims_add(struct gs_draclaims *s, const struct gs_dra_claim *c, struct gs_error *err);
/* Keep only the first ndev devices of claim uid (the others are undone), and write. */
int gs_draclaims_truncate(struct gs_draclaims *s, const char *uid, int ndev, struct gs_error *err);
/* Forget claim uid and write. */
int gs_draclaims_remove(struct gs_draclaims *s, const char *uid, struct gs_error *err);
/* Whether a kept claim holds the device uuid; whether a kept claim's prepare made it. */
bool gs_draclaims_held(const struct gs_draclaims *s, const char *uuid);
bool gs_draclaims_created(const struct gs_draclaims *s, const char *uuid);
/* The UUIDs of every kept claim's devices into uuids; how many (<= cap). */
int gs_draclaims_uuids(const struct gs_draclaims *s, char (*uuids)[96], int cap);

#endif
