/* migmgrfile.h - the MigManager documents of a manifest file. The article's
 * nvidia-mig-config.yaml holds a mig-parted ConfigMap and, as a second YAML document, a
 * MigManager (nvidia.com/v1alpha1) whose gpuClients map workloads to MIG devices. `gpusched mig
 * validate` checks both: this module reads each MigManager with the scheduler's own reader
 * (tenantobj.h), then checks what only the file can tell: that spec.config names the file's
 * ConfigMap and that each gpuClients[].migDevice is a profile the file's configs carve. Pure;
 * thread-safe. */
#ifndef GS_MIGMGRFILE_H
#define GS_MIGMGRFILE_H

#include <stddef.h>

struct gs_migparted;
struct gs_error;

/* Checks every MigManager document of the file at path (at most GS_YAML_MAX bytes). m: the
 * mig-parted configs read from the same file (NULL or none: each migDevice need only be a
 * profile of model, or of any MIG-capable model when model < 0). Returns the number of
 * MigManagers (0: none), or GS_EINVAL with "path:line: MigManager NAME: field: why". */
int gs_migmgr_file_check(const char *path, const struct gs_migparted *m, int model,
                         struct gs_error *err);
/* The same on a file's text (data, len), named path in messages. */
int gs_migmgr_check_text(const char *path, const char *data, size_t len,
                         const struct gs_migparted *m, int model, struct gs_error *err);

#endif
