/* dpconfig.h - NVIDIA k8s-device-plugin configuration, version v1 (YAML or JSON).
 *
 * Reads flags (migStrategy, failOnInitError, plugin.*, gfd.*, the driver and MPS roots),
 * resources (accepted and ignored, as upstream does), sharing.timeSlicing and sharing.mps
 * (renameByDefault, failRequestsGreaterThanOne, resources[].name/replicas/rename/devices)
 * and imex, with upstream's validation: replicas >= 2 (MPS at most 48), resource names
 * fully qualified as nvidia.com/<dns-subdomain> within 63 characters, MPS not with
 * migStrategy mixed, imex.channelIDs [] or [0]. Unknown keys are errors. A parsed config is
 * plain data (no heap). */
#ifndef GS_DPCONFIG_H
#define GS_DPCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define GS_DP_MAX_RESOURCES 8
#define GS_DP_MAX_DEVICES   16

enum gs_mig_strategy { GS_MIG_STRATEGY_NONE = 0, GS_MIG_STRATEGY_SINGLE, GS_MIG_STRATEGY_MIXED };
enum gs_sharing { GS_SHARING_NONE = 0, GS_SHARING_TIMESLICING, GS_SHARING_MPS };

struct gs_dp_resource {
    char name[64];   /* fully qualified, e.g. nvidia.com/gpu */
    char rename[64]; /* advertised name when renamed (name.shared with renameByDefault) */
    int replicas;
    bool all_devices;
    int device_count; /* > 0: the first N devices */
    int ndevices;
    char devices[GS_DP_MAX_DEVICES][64];
};

struct gs_dp_sharing {
    bool rename_by_default;
    bool fail_requests_gt_one;
    bool fail_set;
    int nresources;
    struct gs_dp_resource resources[GS_DP_MAX_RESOURCES];
};

struct gs_dpconfig {
    enum gs_mig_strategy mig_strategy;
    bool fail_on_init_error;
    bool pass_device_specs;
    char device_list_strategy[64];
    char device_id_strategy[16];
    char mps_root[256];
    char driver_root[256];
    struct gs_dp_sharing timeslicing;
    struct gs_dp_sharing mps;
    enum gs_sharing sharing; /* the strategy upstream picks: MPS, else time-slicing, else none */
    int imex_channels;       /* -1: none; 0: channel 0 */
};

struct gs_error;

int gs_dpconfig_parse(const char *name, const char *data, size_t len, struct gs_dpconfig *out,
                      struct gs_error *err);
int gs_dpconfig_load(const char *path, struct gs_dpconfig *out, struct gs_error *err);
const char *gs_mig_strategy_name(enum gs_mig_strategy s);
const char *gs_sharing_name(enum gs_sharing s);

#endif
