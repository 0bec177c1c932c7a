/* migparted.h - NVIDIA mig-parted configuration, version v1 (YAML or JSON).
 *
 *   version: v1
 *   mig-configs:
 *     <name>:
 *       - device-filter: "0x20B210DE" | [..]   (optional)
 *         devices: all | [0, 1]
 *         mig-enabled: true | false
 *         mig-devices: {"1g.10gb": 7}
 *
 * Parsing applies upstream's rules (required keys, unknown keys rejected, profile-string
 * syntax, counts >= 0 and not all zero, mig-devices only with mig-enabled) and one of ours:
 * within a config, a GPU is named by one entry at most (upstream applies entries in order, so
 * a second entry for the same GPU silently overrides the first); entries whose device-filters
 * cannot match the same GPU (NVIDIA's configs for nodes with two models) do not collide, and
 * an index is not listed twice in one entry. gs_migparted_check
 * then proves every entry's layout on the GPU models it can apply to with an exact placement
 * search. Errors cite file:line and the field path; a failed parse leaves *out empty.
 * The parsed config is a heap object: gs_migparted_free. */
#ifndef GS_MIGPARTED_H
#define GS_MIGPARTED_H

#include "../core/mig.h"

#include <stdbool.h>
#include <stdint.h>

#define GS_MP_MAX_CONFIGS  64
#define GS_MP_MAX_ENTRIES  16
#define GS_MP_MAX_DEVICES  32
#define GS_MP_MAX_FILTERS  8
#define GS_MP_MAX_PROFILES 8
#define GS_MP_NAME_MAX     64

struct gs_mp_profile {
    char name[32];
    uint32_t count;
    int line;
};

struct gs_mp_entry {
    int line;
    int nfilters;
    uint32_t filter[GS_MP_MAX_FILTERS];     /* device << 16 | vendor */
    uint32_t filter_sub[GS_MP_MAX_FILTERS]; /* subsystem device << 16 | vendor, when has_sub */
    bool filter_has_sub[GS_MP_MAX_FILTERS];
    int devices_line;
    bool all_devices;
    int ndevices;
    int devices[GS_MP_MAX_DEVICES];
    bool mig_enabled;
    int nprofiles;
    struct gs_mp_profile profiles[GS_MP_MAX_PROFILES];
};

struct gs_mp_config {
    char name[GS_MP_NAME_MAX];
    int line;
    int nentries;
    struct gs_mp_entry entries[GS_MP_MAX_ENTRIES];
};

struct gs_migparted {
    char file[256];
    int nconfigs;
    struct gs_mp_config *configs;
};

struct gs_error;

/* True when s is a valid MIG profile string ("[<C>c.]<G>g.<GB>gb[+attr[,attr]]"). */
bool gs_mig_profile_syntax_ok(const char *s);
int gs_migparted_parse(const char *name, const char *data, size_t len, struct gs_migparted **out,
                       struct gs_error *err);
int gs_migparted_load(const char *path, struct gs_migparted **out, struct gs_error *err);
void gs_migparted_free(struct gs_migparted *m);
const struct gs_mp_config *gs_migparted_find(const struct gs_migparted *m, const char *name);
/* Validate every config against the GPU geometry: model >= 0 checks every MIG entry on that
 * model; model < 0 uses the entry's device-filter or, without one, requires the layout to
 * fit at least one MIG-capable model. Returns 0 or GS_EINVAL with file:line. */
int gs_migparted_check(const struct gs_migparted *m, int model, struct gs_error *err);
/* What a config asks for GPU index i of the given model: *enabled and *layout. Returns 1 when
 * an entry matched, 0 when none did, GS_EINVAL when the layout does not fit the model. */
int gs_migparted_resolve(const struct gs_mp_config *c, int gpu_index, int model, bool *enabled,
                         struct gs_mig_layout *layout, struct gs_error *err);

#endif
