/* podresources.h - a client of the kubelet's pod-resources API (v1 List over gRPC core):
 * which pod and container holds which device of which resource on this node. */
#ifndef GS_AGENT_PODRESOURCES_H
#define GS_AGENT_PODRESOURCES_H

struct gs_podres {
    char ns[64], pod[128], container[64];
    char resource[96];
    char device[96]; /* the ID the device plugin advertised; "" for a pod that holds none */
};

/* List from the socket (e.g. /var/lib/kubelet/pod-resources/kubelet.sock), at most cap
 * entries, within 2 s: one per device a container holds. Returns how many, or -1 (why says
 * what). */
int gs_podres_list(const char *socket, struct gs_podres *out, int cap, char *why,
                   unsigned why_size);
/* The same, and one entry (resource and device "") for each pod the kubelet manages that holds
 * no device at all: among them the pod it is admitting, whose devices are being allocated. */
int gs_podres_list_pods(const char *socket, struct gs_podres *out, int cap, char *why,
                        unsigned why_size);

#endif
