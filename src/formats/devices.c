/* devices.c - the gpusched.io/devices codec of formats/devices.h: a bounded reader (text
 * with a length, no strtol past the end) and the writer the scheduler's binder, its
 * decisions output and the agent's corrections share. */
#include "devices.h"

#include "../base/error.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[] = {"gpu", "replica", "milli", "mig"};

const char *gs_devices_kind_name(enum gs_devices_kind kind)
{
    return (unsigned)kind <= GS_DEVICES_MIG ? kind_names[kind] : "?";
}

/* A decimal number of at most 9 digits at *p (before end); advances *p. */
static bool number(const char **p, const char *end, int32_t *out)
{
    const char *s = *p;
    int32_t v = 0;
    while (*p < end && **p >= '0' && **p <= '9' && *p - s < 9)
        v = v * 10 + (*(*p)++ - '0');
    if (*p == s || (*p < end && **p >= '0' && **p <= '9'))
        return false;
    *out = v;
    return true;
}

static bool item(enum gs_devices_kind kind, const char **p, const char *end,
                 struct gs_devices_item *it)
{
    it->start = -1;
    if (!number(p, end, &it->gpu))
        return false;
    if (kind == GS_DEVICES_MILLI) {
        if (*p == end || **p != ':')
            return false;
        (*p)++;
        return number(p, end, &it->milli) && it->milli > 0 && it->milli < 1000;
    }
    if (kind != GS_DEVICES_MIG)
        return true;
    if (*p == end || **p != ':')
        return false;
    const char *prof = ++*p;
    while (*p < end && **p != '@' && **p != ',')
        (*p)++;
    size_t pl = (size_t)(*p - prof);
    if (*p == end || **p != '@' || pl == 0 || pl >= sizeof(it->profile) || memchr(prof, '\0', pl) ||
        memchr(prof, ':', pl))
        return false;
    memcpy(it->profile, prof, pl);
    it->profile[pl] = '\0';
    (*p)++;
    return number(p, end, &it->start);
}

int gs_devices_parse(const char *text, size_t len, struct gs_devices *d)
{
    memset(d, 0, sizeof(*d));
    const char *eq = text ? memchr(text, '=', len) : NULL;
    if (!eq || len >= GS_DEVICES_TEXT_MAX)
        return GS_EINVAL;
    size_t kl = (size_t)(eq - text);
    int kind = -1;
    for (int k = 0; k <= GS_DEVICES_MIG; k++)
        if (strlen(kind_names[k]) == kl && memcmp(text, kind_names[k], kl) == 0)
            kind = k;
    if (kind < 0)
        goto bad;
    d->kind = (enum gs_devices_kind)kind;
    const char *p = eq + 1, *end = text + len;
    while (p < end) {
        if (d->n == GS_DEVICES_MAX || !item(d->kind, &p, end, &d->item[d->n]))
            goto bad;
        d->n++;
        if (p < end && *p == ',' && p + 1 < end)
            p++;
        else if (p < end)
            goto bad;
    }
    return 0;
bad:
    memset(d, 0, sizeof(*d));
    return GS_EINVAL;
}

int gs_devices_format(const struct gs_devices *d, char *out, size_t size)
{
    int rc = GS_EINVAL;
    size_t o = 0;
    if (size == 0)
        return GS_ENOSPC;
    out[0] = '\0';
    if ((unsigned)d->kind > GS_DEVICES_MIG || d->n < 0 || d->n > GS_DEVICES_MAX)
        goto out;
    int w = snprintf(out, size, "%s=", kind_names[d->kind]);
    for (int k = 0; w >= 0 && (size_t)w < size - o && k < d->n; k++) {
        o += (size_t)w;
        const struct gs_devices_item *it = &d->item[k];
        const char *sep = k ? "," : "";
        if (it->gpu < 0)
            goto out;
        if (d->kind == GS_DEVICES_MIG) {
            if (!it->profile[0] || it->start < 0)
                goto out;
            w = snprintf(out + o, size - o, "%s%d:%s@%d", sep, it->gpu, it->profile, it->start);
        } else if (d->kind == GS_DEVICES_MILLI) {
            if (it->milli <= 0 || it->milli >= 1000)
                goto out;
            w = snprintf(out + o, size - o, "%s%d:%d", sep, it->gpu, it->milli);
        } else {
            w = snprintf(out + o, size - o, "%s%d", sep, it->gpu);
        }
    }
    if (w < 0 || (size_t)w >= size - o) {
        rc = GS_ENOSPC;
        goto out;
    }
    return (int)(o + (size_t)w);
out:
    out[0] = '\0';
    return rc;
}
