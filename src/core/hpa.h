/* hpa.h - the HorizontalPodAutoscaler's replica arithmetic (autoscaling/v2), as the Kubernetes
 * HPA controller computes it (pkg/controller/podautoscaler: horizontal.go and
 * replica_calculator.go), for Pods metrics with AverageValue targets.
 *
 * Each sync (the controller's period is 15 s) takes the Deployment's replica count (current),
 * and per metric the values its pods report, and returns the new replica count:
 *   1. current above maxReplicas or below minReplicas: that bound, nothing else;
 *   2. per metric (replica calculator): ratio = mean over pods with a value / target; pending
 *      pods (unready) count as 0 when ratio > 1, running pods without a value yet (missing)
 *      count as the target when ratio < 1 and as 0 when ratio > 1 (at exactly 1 they are
 *      left out); a pod counts as missing for one metric and not for another when its
 *      device gives one and not the other (core/podmetric.h); within the tolerance
 *      (1 - scaleDown.tolerance <= ratio <= 1 + scaleUp.tolerance, 0.1 each by default) the
 *      proposal is current; else ceil(ratio * pods counted) (a proposal that the unready or
 *      missing pods would turn around keeps current). No pod with a value: the metric is
 *      invalid. The proposal is the highest over the valid metrics; none valid, or one
 *      invalid while the others would scale down: no change this sync;
 *   3. stabilization: the proposal is recorded; up = the lowest recorded within scaleUp's
 *      window, down = the highest within scaleDown's (this sync's included); the result is
 *      current raised to up, then lowered to down;
 *   4. rate policies: scaling up, each policy allows from the replicas at the start of its
 *      period (current minus what was added plus what was removed within periodSeconds) +value
 *      pods or ceil(start * (1 + value/100)); scaling down, start - value or
 *      trunc(start * (1 - value/100)); selectPolicy Max takes the largest change, Min the
 *      smallest, Disabled none; never past maxReplicas or below minReplicas;
 *   5. a change is recorded as a scale event (for the policies' periods).
 * Windows count what is strictly younger than now - window, as the controller's time.After
 * does. Recommendations and events are kept as the controller keeps them (an outdated entry
 * is reused before the list grows), in fixed arrays of GS_HPA_HISTORY entries: enough for the
 * longest window (3600 s) and period (1800 s) at one sync per 15 s; past that the oldest entry
 * is overwritten.
 *
 * Pure and deterministic: time is the caller's (seconds), no I/O, no allocation. A struct
 * gs_hpa_state belongs to one HPA and one caller; not thread-safe per state. */
#ifndef GS_HPA_H
#define GS_HPA_H

#include <stdbool.h>
#include <stdint.h>

#define GS_HPA_MAX_METRICS  4
#define GS_HPA_MAX_POLICIES 4
#define GS_HPA_HISTORY      256
#define GS_HPA_METRIC_MAX   64
#define GS_HPA_SYNC_S       15.0 /* --horizontal-pod-autoscaler-sync-period */
#define GS_HPA_TOLERANCE    0.1  /* --horizontal-pod-autoscaler-tolerance */

enum gs_hpa_policy_type { GS_HPA_POLICY_PODS = 0, GS_HPA_POLICY_PERCENT };
enum gs_hpa_select { GS_HPA_SELECT_MAX = 0, GS_HPA_SELECT_MIN, GS_HPA_SELECT_DISABLED };

struct gs_hpa_policy {
    enum gs_hpa_policy_type type;
    int32_t value;    /* pods, or percent */
    int32_t period_s; /* periodSeconds, 1..1800 */
};

/* HPAScalingRules: one direction's behavior. */
struct gs_hpa_rules {
    int32_t window_s; /* stabilizationWindowSeconds, 0..3600 */
    enum gs_hpa_select select;
    double tolerance; /* of the usage ratio, e.g. 0.1 */
    int npolicies;
    struct gs_hpa_policy policy[GS_HPA_MAX_POLICIES];
};

/* One Pods metric with an AverageValue target. */
struct gs_hpa_metric {
    char name[GS_HPA_METRIC_MAX];
    double target; /* averageValue */
};

struct gs_hpa_spec {
    int32_t min_replicas, max_replicas;
    int nmetrics;
    struct gs_hpa_metric metric[GS_HPA_MAX_METRICS];
    struct gs_hpa_rules up, down;
};

/* Kubernetes' defaults of spec.behavior: scaleUp no window, the higher of +4 pods and +100 %
 * per 15 s; scaleDown 300 s window, -100 % per 15 s; selectPolicy Max; tolerance 0.1. */
void gs_hpa_rules_default_up(struct gs_hpa_rules *r);
void gs_hpa_rules_default_down(struct gs_hpa_rules *r);
/* The article's gpu-hpa.yaml: 2..20 replicas, gpu_utilization 70 and request_latency_ms 200
 * (Pods, AverageValue), scaleUp 60 s window and +50 % per 120 s, scaleDown 300 s window and
 * -25 % per 300 s. */
void gs_hpa_spec_article(struct gs_hpa_spec *s);

/* What one metric's pods report this sync, grouped as the controller's groupPods groups them
 * for a Pods metric (readiness plays no part: only CPU looks at it); pods being deleted are
 * not counted at all. */
struct gs_hpa_obs {
    double sum;       /* of the values of the pods that report one */
    int32_t nready;   /* running pods that report a value */
    int32_t nunready; /* pending pods */
    int32_t nmissing; /* running pods without a value (not yet, or their device gives none) */
};

/* The replica calculator for one metric: the proposal, or -1 when the metric is invalid (no
 * pod reports a value). */
int32_t gs_hpa_metric_replicas(const struct gs_hpa_spec *s, int32_t current, double target,
                               const struct gs_hpa_obs *o);

struct gs_hpa_stamp {
    double t;
    int32_t v; /* a recommendation, or a scale event's replica change */
    bool outdated;
};

/* The controller's memory of one HPA. Zero it (or gs_hpa_state_init) before the first sync. */
struct gs_hpa_state {
    int nrec, nup, ndown;
    struct gs_hpa_stamp rec[GS_HPA_HISTORY];
    struct gs_hpa_stamp up[GS_HPA_HISTORY], down[GS_HPA_HISTORY];
};

void gs_hpa_state_init(struct gs_hpa_state *st);

/* What a sync decided, and why (the controller's condition reasons). */
struct gs_hpa_decision {
    int32_t desired;    /* the new replica count (current when nothing changes) */
    int32_t proposal;   /* step 2's proposal (-1: no valid metric) */
    int32_t stabilized; /* after step 3 */
    int32_t metric;     /* index of the metric that set the proposal, -1 none */
    const char *reason; /* e.g. ScaleUpLimit, ScaleDownStabilized, DesiredWithinRange */
};

/* One sync at time now (seconds, not decreasing between calls) with obs[s->nmetrics]. Returns
 * the new replica count and, when d is not NULL, fills it. Records the recommendation and a
 * scale event in st. */
int32_t gs_hpa_sync(const struct gs_hpa_spec *s, struct gs_hpa_state *st, double now,
                    int32_t current, const struct gs_hpa_obs *obs, struct gs_hpa_decision *d);

#endif
