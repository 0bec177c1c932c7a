/* rng.c - xoshiro256** generator; every random choice in the engine and the simulator
 * draws from one of these, so a printed seed reproduces a run exactly. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void gs_rng_init(struct gs_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t gs_rng_next(struct gs_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Rejection sampling: draws below the largest multiple of n are uniform modulo n. */
static inline uint64_t below(struct gs_rng *rng, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v;
    do {
        v = gs_rng_next(rng);
    } while (v >= limit);
    return v % n;
}

uint64_t gs_rng_below(struct gs_rng *rng, uint64_t n)
{
    /* the engine's draws among a node's GPUs: constant divisors, which the compiler turns into
     * multiplications (the same draws, a fraction of two 64-bit divisions' cost) */
    switch (n) {
    case 1:
        return below(rng, 1);
    case 2:
        return below(rng, 2);
    case 3:
        return below(rng, 3);
    case 4:
        return below(rng, 4);
    case 5:
        return below(rng, 5);
    case 6:
        return below(rng, 6);
    case 7:
        return below(rng, 7);
    case 8:
        return below(rng, 8);
    default:
        return below(rng, n);
    }
}

double gs_rng_double(struct gs_rng *rng)
{
    return (double)(gs_rng_next(rng) >> 11) * 0x1.0p-53;
}

double gs_rng_exp(struct gs_rng *rng, double mean)
{
    double u = gs_rng_double(rng);
    return -mean * log1p(-u);
}

double gs_rng_lognormal(struct gs_rng *rng, double median, double sigma)
{
    double u1 = gs_rng_double(rng), u2 = gs_rng_double(rng);
    if (u1 < 1e-300)
        u1 = 1e-300;
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    return median * exp(sigma * z);
}
