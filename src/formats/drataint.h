/* drataint.h - device taints and tolerations of resource.k8s.io/v1 as Kubernetes v1.37.2
 * defines them (DRADeviceTaints and DRADeviceTaintRules, GA and on by default in v1.37):
 *
 *   ResourceSlice spec.devices[].taints[] {key, value, effect None|NoSchedule|NoExecute,
 *     timeAdded}: the driver's taints (at most 16 a device)
 *   DeviceTaintRule (resource.k8s.io/v1, cluster-scoped): spec.deviceSelector {driver, pool,
 *     device} (each optional; no selector: no device), spec.taint: one taint added to every
 *     device it selects, as if the driver had published it (k8s.io/dynamic-resource-allocation
 *     resourceslice/tracker applies them so for kube-scheduler)
 *   ResourceClaim spec.devices.requests[].exactly.tolerations[] and
 *     .firstAvailable[].tolerations[] {key, operator Equal|Exists, value, effect,
 *     tolerationSeconds} (at most 16 a request)
 *
 * A device with a NoSchedule or NoExecute taint is allocated only to a request whose
 * tolerations tolerate each such taint (core/dra.h gs_dra_tolerated); None and effects this
 * build does not know inform only. A claim allocated already keeps its devices whatever taints
 * come later: evicting pods for NoExecute is kube-controller-manager's device taint eviction
 * controller's work, not a scheduler's. tolerationSeconds and timeAdded matter only to that
 * eviction and are checked but not kept.
 *
 * Every error names the object and the field path. Plain data; thread-safe. */
#ifndef GS_DRATAINT_H
#define GS_DRATAINT_H

#include "../core/dra.h"
#include "kubeobj.h"

#include <jansson.h>
#include <stdbool.h>

#define GS_DRATAINT_MAX_RULES 1024 /* DeviceTaintRules a cycle applies */

struct gs_error;

/* A device's taints[] into out[0..GS_DRA_MAX_TAINTS), *n set. Returns 0 or GS_EINVAL ("who:
 * path[1].effect: ..."). */
int gs_drataint_read_taints(const json_t *a, struct gs_dra_taint *out, uint16_t *n, const char *who,
                            const char *path, struct gs_error *err);
/* A request's tolerations[] into a new array *out (NULL when there are none: the caller frees
 * it), *n set. Returns 0, GS_EINVAL or GS_ENOMEM. */
int gs_drataint_read_tolerations(const json_t *a, struct gs_dra_toleration **out, int *n,
                                 const char *who, const char *path, struct gs_error *err);

struct gs_drataint_rule {
    char name[GS_KNAME_MAX];
    bool selector;                /* spec.deviceSelector is there (none: no device) */
    char driver[GS_DRA_NAME_MAX]; /* "": any */
    char pool[GS_DRA_POOL_MAX];   /* "": any */
    char device[GS_DRA_NAME_MAX]; /* "": any */
    struct gs_dra_taint taint;
};

/* A DeviceTaintRule. Returns 0 or GS_EINVAL. */
int gs_drataint_rule_read(const json_t *o, struct gs_drataint_rule *out, struct gs_error *err);
static inline void gs_drataint_rule_release(struct gs_drataint_rule *r)
{
    (void)r;
}
/* Whether rule r selects device d. */
bool gs_drataint_rule_selects(const struct gs_drataint_rule *r, const struct gs_dra_device *d);

/* The taints of every device that rules[0..n) select, each device's own first, into a new array
 * *store (the caller frees it; NULL when no rule selects a device): each such device's taints
 * pointer set into it, tainted set when one blocks. Returns 0 or GS_ENOMEM (the devices
 * untouched). */
int gs_drataint_apply(struct gs_dra_device *dev, int ndev, const struct gs_drataint_rule *rules,
                      int n, struct gs_dra_taint **store);

#endif
