/* grpcserver.h - the one gRPC server of the kubelet plugins (gRPC core, insecure, on Unix
 * sockets, as the kubelet's local APIs are), driven by a table of services the way gpu.h's
 * backends are driven by a table of calls.
 *
 * A server listens on one or more sockets and answers the methods of its services on all of
 * them: the device plugin (deviceplugin.h) serves the DevicePlugin service on its resource's
 * socket; the DRA driver (dra.h) serves Registration and DRAPlugin on its two. A service
 * answers from request bytes to answer bytes and knows nothing of gRPC (so its unit tests call
 * it directly); the server owns the completion queue, the calls (small state machines tagged
 * by their context: NEW, READ, DONE), the streams and their thread. A streaming method
 * (ListAndWatch) sends its answer at once, then again whenever the service's version moves,
 * one message in flight at a time, until the client closes.
 *
 * Registration with the kubelet, where the plugin dials it (the device plugin's Register on
 * kubelet.sock), is the server's too: it registers after it serves, and a registrar thread
 * watches the kubelet: when the kubelet restarts (it removes the plugin's socket and makes a
 * new kubelet.sock) the server serves again and registers again, retried every second. A
 * plugin the kubelet finds by its socket (DRA's plugin watcher) gives no register call.
 *
 * Each server runs one thread (and the registrar); a service's calls are made on it, one at a
 * time. gs_grpcd_start and gs_grpcd_stop are for one owner thread. */
#ifndef GS_AGENT_GRPCSERVER_H
#define GS_AGENT_GRPCSERVER_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_grpc_method {
    const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
    int call;         /* the service's number for it, given to answer */
    bool stream;      /* server streaming: answered again whenever version moves */
};

/* Answer one call: in[0..len) as it came off the wire. A grpc_status_code: 0 (OK) with *out
 * (malloc'ed, the server frees it) the packed answer of *out_len bytes, else why says what. */
typedef int (*gs_grpc_answer_fn)(void *user, int call, const uint8_t *in, size_t len, uint8_t **out,
                                 size_t *out_len, char *why, size_t why_size);

struct gs_grpc_service {
    const struct gs_grpc_method *methods;
    int nmethods;
    gs_grpc_answer_fn answer;
    /* What a stream would be sent now, as a number that moves when it changes (NULL: the
     * service has no streaming method). */
    uint64_t (*version)(void *user);
    /* After a unary call of the service, or an unknown method, is answered (NULL: nothing). */
    void (*answered)(void *user);
    void *user;
};

struct gs_grpcd_opts {
    const char *tag;            /* for logs: the resource, or the driver's name */
    const char *log;            /* the log component: "deviceplugin", "dra" */
    const char *const *sockets; /* paths served, in this order (the kubelet may dial the
                                   first as soon as it sees the last) */
    int nsockets;
    const struct gs_grpc_service *services;
    int nservices;
    /* Registration where the plugin dials the kubelet (NULL: none, no registrar): called once
     * the server serves; 0, or -1 with why. */
    int (*register_fn)(void *user, char *why, unsigned why_size);
    void *register_user;
    const char *kubelet; /* the socket whose restart means register again (with register_fn) */
};

struct gs_grpcd;

/* Serve, and register where opts say so. Returns NULL when a socket cannot be served or the
 * registration fails (why says what; nothing is left running). */
struct gs_grpcd *gs_grpcd_start(const struct gs_grpcd_opts *o, char *why, unsigned why_size);
/* Stop serving (sockets removed) and free. NULL is nothing. */
void gs_grpcd_stop(struct gs_grpcd *d);

/* ---- for the services' answers ---- */

/* Pack m into *out (malloc'ed) and *len: GRPC_STATUS_OK, or RESOURCE_EXHAUSTED with why. */
int gs_grpc_pack(const ProtobufCMessage *m, uint8_t **out, size_t *len, char *why, size_t why_size);
/* why := the formatted reason; returns GRPC_STATUS_INVALID_ARGUMENT. */
int gs_grpc_invalid(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* why := the formatted reason; returns code (a grpc_status_code). */
int gs_grpc_status(char *why, size_t why_size, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* why := "out of memory"; returns GRPC_STATUS_RESOURCE_EXHAUSTED. */
int gs_grpc_no_memory(char *why, size_t why_size);

#endif
