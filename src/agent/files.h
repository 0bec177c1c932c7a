/* files.h - the agent's small file helpers: directories made whole, files replaced at once.
 * Used by the DRA driver's checkpoint (draclaims.c) and CDI specs (cdi.c). Thread-safe (no
 * state). */
#ifndef GS_AGENT_FILES_H
#define GS_AGENT_FILES_H

struct gs_error;

/* mkdir -p: 0, or GS_EIO naming the directory that could not be made. */
int gs_file_mkdir_p(const char *path, struct gs_error *err);
/* Write text to path through path.tmp (fsync'ed) and rename: a reader never sees half of it.
 * 0, or GS_EIO with the path. */
int gs_file_write_atomic(const char *path, const char *text, struct gs_error *err);

#endif
