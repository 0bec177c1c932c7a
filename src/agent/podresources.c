/* podresources.c - the kubelet's pod-resources List (see podresources.h). */
#include "podresources.h"

#include "podresources.pb-c.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void init_once(void)
{
    grpc_init();
}

int gs_podres_list(const char *socket, struct gs_podres *out, int cap, char *why, unsigned why_size)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_once);
    char target[600];
    snprintf(target, sizeof(target), "unix:%s", socket);
    grpc_channel_credentials *cc = grpc_insecure_credentials_create();
    grpc_channel *ch = grpc_channel_create(target, cc, NULL);
    grpc_channel_credentials_release(cc);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    gpr_timespec deadline =
        gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(2, GPR_TIMESPAN));
    grpc_call *call = grpc_channel_create_call(
        ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
        grpc_slice_from_static_string("/v1.PodResourcesLister/List"), NULL, deadline, NULL);
    V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
    size_t n = v1__list_pod_resources_request__get_packed_size(&req);
    grpc_slice s = grpc_slice_malloc(n);
    v1__list_pod_resources_request__pack(&req, GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&s, 1), *recv = NULL;
    grpc_slice_unref(s);
    grpc_metadata_array im, tm;
    grpc_metadata_array_init(&im);
    grpc_metadata_array_init(&tm);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &im;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &tm;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    int count = -1;
    if (grpc_call_start_batch(call, ops, 6, call, NULL) == GRPC_CALL_OK &&
        grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type ==
            GRPC_OP_COMPLETE &&
        status == GRPC_STATUS_OK && recv) {
        grpc_byte_buffer_reader r;
        grpc_slice all = grpc_empty_slice();
        if (grpc_byte_buffer_reader_init(&r, recv)) {
            all = grpc_byte_buffer_reader_readall(&r);
            grpc_byte_buffer_reader_destroy(&r);
        }
        V1__ListPodResourcesResponse *resp = v1__list_pod_resources_response__unpack(
            NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
        grpc_slice_unref(all);
        if (!resp) {
            snprintf(why, why_size, "%s: the List answer does not decode", socket);
        } else {
            count = 0;
            for (size_t p = 0; p < resp->n_pod_resources; p++) {
                const V1__PodResources *pr = resp->pod_resources[p];
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
        }
    } else {
        char *d = grpc_slice_to_c_string(details);
        snprintf(why, why_size, "%s: List: status %d %s", socket, (int)status, d);
        gpr_free(d);
    }
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&im);
    grpc_metadata_array_destroy(&tm);
    grpc_byte_buffer_destroy(send);
    if (recv)
        grpc_byte_buffer_destroy(recv);
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
    grpc_channel_destroy(ch);
    return count;
}
