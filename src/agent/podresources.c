/* podresources.c - the kubelet's pod-resources List (see podresources.h). */
#include "podresources.h"

#include "grpcunary.h"
#include "podresources.pb-c.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int list(const char *socket, struct gs_podres *out, int cap, bool bare, char *why,
                unsigned why_size)
{
    V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
    uint8_t buf[16], *ans = NULL; /* the request is empty */
    size_t n = v1__list_pod_resources_request__pack(&req, buf), got = 0;
    if (gs_grpc_unary(socket, "/v1.PodResourcesLister/List", buf, n, 2, &ans, &got, why, why_size))
        return -1;
    V1__ListPodResourcesResponse *resp = v1__list_pod_resources_response__unpack(NULL, got, ans);
    free(ans);
    if (!resp) {
        snprintf(why, why_size, "%s: the List answer does not decode", socket);
        return -1;
    }
    int count = 0;
    for (size_t p = 0; p < resp->n_pod_resources; p++) {
        const V1__PodResources *pr = resp->pod_resources[p];
        size_t held = 0;
        for (size_t c = 0; c < pr->n_containers; c++)
            for (size_t d = 0; d < pr->containers[c]->n_devices; d++)
                held += pr->containers[c]->devices[d]->n_device_ids;
        if (bare && held == 0 && count < cap) {
            struct gs_podres *o = &out[count++];
            memset(o, 0, sizeof(*o));
            snprintf(o->ns, sizeof(o->ns), "%s", pr->namespace_);
            snprintf(o->pod, sizeof(o->pod), "%s", pr->name);
        }
        for (size_t c = 0; c < pr->n_containers; c++) {
            const V1__ContainerResources *cr = pr->containers[c];
            for (size_t d = 0; d < cr->n_devices; d++) {
                const V1__ContainerDevices *cd = cr->devices[d];
                for (size_t k = 0; k < cd->n_device_ids && count < cap; k++) {
                    struct gs_podres *o = &out[count++];
                    snprintf(o->ns, sizeof(o->ns), "%s", pr->namespace_);
                    snprintf(o->pod, sizeof(o->pod), "%s", pr->name);
                    snprintf(o->container, sizeof(o->container), "%s", cr->name);
                    snprintf(o->resource, sizeof(o->resource), "%s", cd->resource_name);
                    snprintf(o->device, sizeof(o->device), "%s", cd->device_ids[k]);
                }
            }
        }
    }
    v1__list_pod_resources_response__free_unpacked(resp, NULL);
    return count;
}

int gs_podres_list(const char *socket, struct gs_podres *out, int cap, char *why, unsigned why_size)
{
    return list(socket, out, cap, false, why, why_size);
}

int gs_podres_list_pods(const char *socket, struct gs_podres *out, int cap, char *why,
                        unsigned why_size)
{
    return list(socket, out, cap, true, why, why_size);
}
