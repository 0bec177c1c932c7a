/* cdomain.h - NVIDIA ComputeDomains (multi-node NVLink through DRA) as a ResourceClaim names
 * them, read from the API server's JSON.
 *
 * NVIDIA's DRA driver (k8s-dra-driver-gpu) turns a user's ComputeDomain
 * (resource.nvidia.com/v1beta1) into a ResourceClaimTemplate whose claims ask one IMEX channel
 * (DeviceClass compute-domain-default-channel.nvidia.com, driver compute-domain.nvidia.com) and
 * carry, in spec.devices.config[], an opaque config for that driver:
 *   {opaque: {driver: compute-domain.nvidia.com, parameters: {apiVersion:
 *    resource.nvidia.com/v1beta1, kind: ComputeDomainChannelConfig, domainID: <the
 *    ComputeDomain's uid>, allocationMode: Single | All}}, requests: [channel]}
 * (the resourceclaim controller copies the template's spec into each pod's claim). Every pod
 * whose claim names one domainID belongs to that domain, and the domain's pods must share one
 * NVLink clique: the nodes' nvidia.com/gpu.clique label (GPU feature discovery writes
 * "<clusterUUID>.<cliqueId>" on IMEX-capable nodes). gpusched keeps them there
 * (sched/topology.h).
 *
 * Read: only configs of driver compute-domain.nvidia.com whose parameters' kind is
 * ComputeDomainChannelConfig (a ComputeDomainDaemonConfig is the driver's own); their
 * parameters must be an object of apiVersion resource.nvidia.com/..., domainID a non-empty
 * string of at most GS_CDOMAIN_ID_MAX - 1 characters, allocationMode absent, Single or All;
 * two channel configs of one claim must name the same domain. Bounded, plain data, no heap;
 * errors name the field path ("spec.devices.config[0].opaque.parameters.domainID: empty").
 * Thread-safe (no state). */
#ifndef GS_CDOMAIN_H
#define GS_CDOMAIN_H

#include <jansson.h>

#include <stddef.h>

#define GS_CDOMAIN_DRIVER      "compute-domain.nvidia.com"
#define GS_CDOMAIN_CHANNEL     "ComputeDomainChannelConfig"
#define GS_CDOMAIN_CLIQUE      "nvidia.com/gpu.clique"
#define GS_CDOMAIN_ID_MAX      64
#define GS_CDOMAIN_CONFIGS_MAX 32 /* the API's limit of a claim's spec.devices.config */

struct gs_error;

/* config: a claim's spec.devices.config (NULL or absent: none). Returns 1 with the domainID
 * in id[0..n) when a channel config names a domain, 0 when none does (id ""), or GS_EINVAL
 * with err naming the field ("spec.devices.config[1].opaque.parameters.domainID: empty") and
 * id "". */
int gs_cdomain_read(const json_t *config, char *id, size_t n, struct gs_error *err);

#endif
