/* cdomain.c - the ComputeDomain channel config of a ResourceClaim (formats/cdomain.h): NVIDIA's
 * opaque parameters read and checked, for formats/draobj.c's claim reader. */
#include "cdomain.h"

#include "../base/error.h"
#include "jfield.h"

#include <stdio.h>
#include <string.h>

/* One channel config's parameters p (at path): the domain into id, or GS_EINVAL. */
static int read_params(const json_t *p, const char *path, char *id, size_t n, struct gs_error *err)
{
    const char *api = gs_jstr(p, "apiVersion"), *mode = gs_jstr(p, "allocationMode");
    const json_t *d = json_object_get(p, "domainID");
    if (!api || strncmp(api, "resource.nvidia.com/", 20) != 0 || !api[20])
        return gs_error_set(err, GS_EINVAL,
                            "%s.apiVersion: expected resource.nvidia.com/<version>, got '%.60s'",
                            path, api ? api : "");
    if (!d)
        return gs_error_set(err, GS_EINVAL, "%s.domainID: missing (the ComputeDomain's uid)", path);
    if (!json_is_string(d))
        return gs_error_set(err, GS_EINVAL, "%s.domainID: not a string", path);
    const char *v = json_string_value(d);
    size_t len = strlen(v);
    if (len == 0)
        return gs_error_set(err, GS_EINVAL, "%s.domainID: empty (the ComputeDomain's uid)", path);
    if (len >= n || len != json_string_length(d))
        return gs_error_set(err, GS_EINVAL, "%s.domainID: longer than %zu characters", path, n - 1);
    if (json_object_get(p, "allocationMode") &&
        (!mode || (strcmp(mode, "Single") != 0 && strcmp(mode, "All") != 0)))
        return gs_error_set(err, GS_EINVAL, "%s.allocationMode: expected Single or All", path);
    memcpy(id, v, len + 1);
    return 0;
}

int gs_cdomain_read(const json_t *config, char *id, size_t n, struct gs_error *err)
{
    id[0] = '\0';
    if (!config || json_is_null(config))
        return 0;
    if (!json_is_array(config))
        return gs_error_set(err, GS_EINVAL, "spec.devices.config: expected a list");
    if (json_array_size(config) > GS_CDOMAIN_CONFIGS_MAX)
        return gs_error_set(err, GS_EINVAL, "spec.devices.config: more than %d entries",
                            GS_CDOMAIN_CONFIGS_MAX);
    char one[GS_CDOMAIN_ID_MAX];
    size_t i;
    const json_t *c;
    json_array_foreach(config, i, c)
    {
        const json_t *op = json_object_get(c, "opaque");
        const char *drv = gs_jstr(op, "driver");
        if (!drv || strcmp(drv, GS_CDOMAIN_DRIVER) != 0)
            continue;
        char path[80];
        snprintf(path, sizeof(path), "spec.devices.config[%zu].opaque.parameters", i);
        const json_t *p = json_object_get(op, "parameters");
        if (!json_is_object(p)) {
            id[0] = '\0';
            return gs_error_set(err, GS_EINVAL, "%s: expected an object", path);
        }
        const char *kind = gs_jstr(p, "kind");
        if (!kind) {
            id[0] = '\0';
            return gs_error_set(err, GS_EINVAL, "%s.kind: missing", path);
        }
        if (strcmp(kind, GS_CDOMAIN_CHANNEL) != 0)
            continue;
        size_t m = n < sizeof(one) ? n : sizeof(one);
        if (read_params(p, path, one, m, err)) {
            id[0] = '\0';
            return GS_EINVAL;
        }
        if (id[0] && strcmp(id, one) != 0) {
            char was[GS_CDOMAIN_ID_MAX];
            snprintf(was, sizeof(was), "%s", id);
            id[0] = '\0';
            return gs_error_set(err, GS_EINVAL,
                                "%s.domainID: '%s', but an earlier config names '%s' (one "
                                "claim, one ComputeDomain)",
                                path, one, was);
        }
        memcpy(id, one, strlen(one) + 1);
    }
    return id[0] ? 1 : 0;
}
