/* A tiny deterministic random generator (splitmix64) so every replica can
 * regenerate the same weights and data from a seed. */
#ifndef FTC_EXAMPLES_RNG_H
#define FTC_EXAMPLES_RNG_H

#include <math.h>
#include <stdint.h>

static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double rng_uniform(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) / (double)(1ULL << 53);
}

/* Standard normal (Box-Muller). */
static inline double rng_normal(uint64_t *s)
{
    double u = rng_uniform(s), v = rng_uniform(s);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

#endif
