/* mig.h - MIG layouts: exact placement search, enumeration and planning.
 *
 * A layout is a multiset of a model's GPU-instance profiles (counts per profile index). A
 * layout is valid when every instance gets a placement start from its profile's valid
 * starts with no two instances sharing a memory slice, compute slices sum to at most the
 * model's compute slices (7 on A100-class parts, 4 on A30 and RTX PRO 6000 Blackwell), no
 * profile exceeds its max count, and the media engines allow it (one "+me" instance per
 * GPU; a "+me.all" one only beside "-me" ones). Validation is a search, not a table lookup,
 * and it says why a layout does not fit. Placements are deterministic: largest instances
 * first, each at its lowest legal start. Pure functions over catalog data; thread-safe. */
#ifndef GS_MIG_H
#define GS_MIG_H

#include "catalog.h"

#include <stdbool.h>
#include <stdint.h>

struct gs_error;

struct gs_mig_layout {
    uint8_t count[GS_MIG_MAX_PROFILES];
};

struct gs_mig_instance {
    uint8_t profile; /* index into the model's profiles */
    uint8_t start;   /* placement start, memory-slice units */
};

struct gs_mig_placement {
    uint8_t n;
    struct gs_mig_instance inst[GS_MIG_COMPUTE_MAX];
};

/* Total instances in a layout. */
int gs_mig_layout_size(const struct gs_mig_layout *l);
/* Place a layout on an empty GPU of the model. Returns 0 and fills pl (may be NULL), or
 * GS_ENOFIT/GS_EINVAL with the reason in err. */
int gs_mig_place(int model, const struct gs_mig_layout *l, struct gs_mig_placement *pl,
                 struct gs_error *err);
/* Same, around instances already placed (occupied memory-slice mask and compute in use).
 * It cannot check media engines against instances it only knows as a mask; prefer
 * gs_mig_place_around. */
int gs_mig_place_into(int model, const struct gs_mig_layout *l, uint8_t occupied_mem,
                      int used_compute, struct gs_mig_placement *pl, struct gs_error *err);
/* Same, around the instances of `existing` (may be NULL): their slices, compute, max counts
 * and media engines all count. pl gets only the new instances. GS_EINVAL when existing is
 * not itself valid. */
int gs_mig_place_around(int model, const struct gs_mig_layout *l,
                        const struct gs_mig_placement *existing, struct gs_mig_placement *pl,
                        struct gs_error *err);
/* Order a placement's instances by start (one order per layout, for writing it out). */
void gs_mig_placement_sort(struct gs_mig_placement *pl);
/* True when the placement has no overlapping instances, only valid starts, and fits the
 * model's compute, max counts and media engines. */
bool gs_mig_placement_valid(int model, const struct gs_mig_placement *pl);
/* Enumerate every maximal valid layout (no instance of any profile can be added).
 * Writes at most cap layouts to out; returns how many exist (may exceed cap). */
int gs_mig_enumerate_maximal(int model, struct gs_mig_layout *out, int cap);
/* Enumerate every valid non-empty layout; same contract. */
int gs_mig_enumerate_valid(int model, struct gs_mig_layout *out, int cap);
/* "2x3g.40gb + 1x1g.10gb" */
void gs_mig_layout_str(int model, const struct gs_mig_layout *l, char *out, unsigned size);
/* Accounting units of a layout (sum of gs_mig_profile_units). */
double gs_mig_layout_units(int model, const struct gs_mig_layout *l);

/* Fewest GPUs of the model that hold the demand (counts per profile index, any size).
 * Fills up to cap layouts, which together hold exactly the demand; returns the GPU count, or
 * GS_ENOFIT when a demanded profile does not exist (count 0 demand is fine), GS_ENOMEM.
 * Exact: a branch-and-bound search proves no fewer GPUs can hold the demand. On a demand
 * too large to prove within its budget (2 million layouts tried, or more than 512 GPUs) it
 * returns its greedy count; gs_mig_plan_ex says whether the count is proven (*optimal). */
int gs_mig_plan(int model, const uint32_t demand[GS_MIG_MAX_PROFILES], struct gs_mig_layout *out,
                int cap, struct gs_error *err);
int gs_mig_plan_ex(int model, const uint32_t demand[GS_MIG_MAX_PROFILES], struct gs_mig_layout *out,
                   int cap, bool *optimal, struct gs_error *err);

#endif
