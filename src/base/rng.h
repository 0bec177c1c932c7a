/* rng.h - seeded pseudo-random numbers (xoshiro256**, seeded through splitmix64).
 *
 * Deterministic: the same seed gives the same sequence on every platform. A struct gs_rng is
 * a plain value owned by its user; not thread-safe per instance. */
#ifndef GS_RNG_H
#define GS_RNG_H

#include <stdint.h>

struct gs_rng {
    uint64_t s[4];
};

void gs_rng_init(struct gs_rng *rng, uint64_t seed);
uint64_t gs_rng_next(struct gs_rng *rng);
/* Uniform integer in [0, n); n > 0. Unbiased (rejection). */
uint64_t gs_rng_below(struct gs_rng *rng, uint64_t n);
/* Uniform double in [0, 1). */
double gs_rng_double(struct gs_rng *rng);
/* Exponential with the given mean (> 0). */
double gs_rng_exp(struct gs_rng *rng, double mean);
/* Log-normal with the given median and sigma of the underlying normal. */
double gs_rng_lognormal(struct gs_rng *rng, double median, double sigma);

#endif
