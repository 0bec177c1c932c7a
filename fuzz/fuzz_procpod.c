/* Fuzz target: the pod and container of a process from the text of its /proc/PID/cgroup
 * (agent/procpod.h). Whatever the text, a pod found has a UID of 32 or 36 characters, in
 * dashes and hex digits, and a container ID of at most 64 hex digits; nothing found leaves the
 * output zeroed. */
#include "agent/procpod.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int hexdash(const char *s, int dashes)
{
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F') ||
              (dashes && *s == '-')))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_procpod pp;
    int rc = gs_procpod_parse((const char *)data, size, &pp);
    size_t ul = strnlen(pp.pod_uid, sizeof(pp.pod_uid)),
           cl = strnlen(pp.container_id, sizeof(pp.container_id));
    if (ul == sizeof(pp.pod_uid) || cl == sizeof(pp.container_id))
        abort(); /* not terminated */
    if (rc == 0 && ((ul != 32 && ul != 36) || !hexdash(pp.pod_uid, 1) || cl > 64 ||
                    !hexdash(pp.container_id, 0)))
        abort();
    if (rc != 0 && (ul || cl))
        abort();
    return 0;
}
