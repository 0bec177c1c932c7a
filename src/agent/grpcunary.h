/* grpcunary.h - one blocking unary gRPC call over a Unix socket (gRPC core, insecure, as the
 * kubelet's local APIs are): send a packed protobuf message, get the packed answer. Used for
 * the kubelet's Registration and pod-resources APIs. Thread-safe (each call has its own
 * channel and queue). */
#ifndef GS_AGENT_GRPCUNARY_H
#define GS_AGENT_GRPCUNARY_H

#include <stddef.h>
#include <stdint.h>

/* Call method ("/v1beta1.Registration/Register") on the socket with req[0..len). On success
 * returns 0 and *out (malloc'ed, may be NULL for an empty answer) holds the answer of *out_len
 * bytes; else -1 and why says what (the status and its details). */
int gs_grpc_unary(const char *socket, const char *method, const uint8_t *req, size_t len,
                  int timeout_s, uint8_t **out, size_t *out_len, char *why, unsigned why_size);

#endif
