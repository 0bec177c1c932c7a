/* service.h - online inference as a service: the request load a scenario's service serves
 * over time, and what one replica makes of its share (the simulator's load and queueing
 * model; the replicas themselves are pods the scheduling cycle places: sim/deploy.c runs the
 * Deployments, sim/scenario.c the world).
 *
 * Load (requests/s at time t, seconds):
 *   rate(t) = rate * (1 + amplitude * cos(2 pi (t - peak) / period)) * noise(t) * bursts(t)
 * noise(t) is a mean-1 lognormal factor (sigma: noise) drawn per 5-minute bucket; bursts(t)
 * multiplies the factors of the bursts under way: the listed ones and random ones (Poisson
 * times, per_day a day, from the seed). Every draw comes from a generator seeded by (seed,
 * service index, bucket or day), never from the simulation's own: the load is a pure
 * function of the scenario, the same under every strategy, with or without the autoscaler.
 *
 * Queueing (M/M/1-like, one queue per ready replica): requests spread evenly over the ready
 * replicas, as a Service balances them; a replica at speed v (the share of its GPU it gets,
 * as the simulator rates every pod) serves mu = capacity * v requests/s, so rho =
 * lambda / mu. Its mean latency is L = base / (1 - rho) (rho >= 1: unbounded), a request's
 * latency is exponential with mean L and cut at max (the timeout, counted at max); a request
 * misses the SLA when its latency passes sla: exp(-sla / L) of them. The metrics a replica
 * reports (what the HPA reads): gpu_utilization = 100 * min(rho, 1), request_latency_ms =
 * its mean latency E[min(T, max)] = L (1 - exp(-max / L)) in ms (max when rho >= 1).
 *
 * Pure functions except the latency mixture, a growable array owned by its user (not
 * thread-safe per instance). */
#ifndef GS_SIM_SERVICE_H
#define GS_SIM_SERVICE_H

#include "../formats/scenario.h"

#include <stdint.h>

#define GS_SVC_NOISE_BUCKET_S 300.0

/* Requests per second at time t of service index idx (its place among the scenario's
 * services, which seeds its draws) under seed. */
double gs_svc_rate(const struct gs_sc_service *s, uint64_t seed, int idx, double t);

/* One ready replica serving lambda requests/s at speed v (0 < v <= 1). */
struct gs_svc_replica {
    double rho;        /* lambda / (capacity * v) */
    double mean_s;     /* L; INFINITY when rho >= 1 */
    double miss;       /* share of its requests over the SLA (timeouts included) */
    double latency_ms; /* request_latency_ms it reports */
    double util_pct;   /* gpu_utilization it reports */
};
void gs_svc_replica(const struct gs_sc_service *s, double lambda, double v,
                    struct gs_svc_replica *out);

/* The fixed replica count sized for the diurnal peak: the fewest replicas at full speed whose
 * metrics at rate * (1 + amplitude), bursts and noise aside, are within every HPA target
 * (fixed_replicas when the scenario gives it). Not bounded by maxReplicas. */
int32_t gs_svc_peak_replicas(const struct gs_sc_service *s);

struct gs_strategy;
struct gs_buf;

/* Whether the HPAs of the scenario's autoscaled services read metrics their replicas' devices
 * give (core/podmetric.h), under the strategies st[0..nst) that will run: a metric some
 * replicas cannot give (a MIG slice of an A100 has no gpu_utilization) is one warning line in
 * warn, naming the service, the metric, the node groups and the strategies. Returns 0, or
 * GS_EINVAL with err naming them when under every one of those strategies no replica of a
 * service could give a Pods metric its HPA reads. A Resource, ContainerResource, Object or
 * External metric (no replica reports one) is a warning line, never an error. */
int gs_svc_check_metrics(const struct gs_scenario *sc, const struct gs_strategy *const *st, int nst,
                         struct gs_buf *warn, struct gs_error *err);

/* Request latencies over a run: a mixture of cut exponentials (weight: requests; mean L;
 * INFINITY: every request timed out). Consecutive components with one mean merge. */
struct gs_svc_mix {
    int n, cap;
    double *w, *mean;
    double total;
    double max_s; /* the timeout */
};
void gs_svc_mix_init(struct gs_svc_mix *m, double max_s);
void gs_svc_mix_release(struct gs_svc_mix *m);
/* Returns 0 or GS_ENOMEM. */
int gs_svc_mix_add(struct gs_svc_mix *m, double w, double mean_s);
/* The latency below which q of the requests fall (0 when there are none). */
double gs_svc_mix_quantile(const struct gs_svc_mix *m, double q);

#endif
