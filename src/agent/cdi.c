/* cdi.c - the DRA driver's CDI specs (see cdi.h). */
#include "cdi.h"

#include "../base/error.h"
#include "../formats/draslice.h"
#include "files.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void cdi_path(const char *dir, const char *uid, char *out, size_t size)
{
    snprintf(out, size, "%s/%s-%s.json", dir, GS_DRA_DRIVER, uid);
}

int gs_cdi_write(const char *dir, const char *uid, const char *const *devices,
                 const char *const *uuids, int n, struct gs_error *err)
{
    json_t *devs = json_array();
    int rc = devs ? 0 : GS_ENOMEM;
    for (int j = 0; j < n && !rc; j++) {
        char name[200 + GS_DRASLICE_NAME_MAX], env[128];
        snprintf(name, sizeof(name), "%s-%s", uid, devices[j]);
        snprintf(env, sizeof(env), "NVIDIA_VISIBLE_DEVICES=%s", uuids[j]);
        if (json_array_append_new(
                devs, json_pack("{s:s,s:{s:[s]}}", "name", name, "containerEdits", "env", env)))
            rc = GS_ENOMEM;
    }
    json_t *spec = rc ? NULL
                      : json_pack("{s:s,s:s,s:O}", "cdiVersion", "0.6.0", "kind",
                                  GS_DRA_DRIVER "/gpu", "devices", devs);
    json_decref(devs);
    char *text = spec ? json_dumps(spec, JSON_INDENT(2)) : NULL;
    json_decref(spec);
    if (!text)
        return gs_error_set(err, GS_ENOMEM, "CDI spec: out of memory");
    char path[1024];
    cdi_path(dir, uid, path, sizeof(path));
    rc = gs_file_write_atomic(path, text, err);
    free(text);
    return rc;
}

void gs_cdi_remove(const char *dir, const char *uid)
{
    char path[1024];
    cdi_path(dir, uid, path, sizeof(path));
    unlink(path);
}
