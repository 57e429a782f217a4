/* Non-cryptographic randomness (jitter, ids) and retry backoff. */
#ifndef FTC_BASE_RAND_H
#define FTC_BASE_RAND_H

#include <stdint.h>

/* A per-thread generator seeded from getrandom(2). */
uint64_t ftc__rand_u64(void);
/* Uniform in [0, n); n > 0. */
uint64_t ftc__rand_below(uint64_t n);
/* SplitMix64: the next value of a seeded, reproducible sequence whose
 * state is *seq (any value; replays of a seed give the same values). */
uint64_t ftc__splitmix64(uint64_t *seq);

/* Exponential backoff with jitter: each delay is the current step scaled by
 * a random factor in [1 - jitter, 1], and the step grows by factor up to
 * max_ms. */
typedef struct ftc__backoff {
    int64_t step_ms;
    int64_t max_ms;
    double factor;
    double jitter;
} ftc__backoff;

void ftc__backoff_init(ftc__backoff *b, int64_t initial_ms, int64_t max_ms);
int64_t ftc__backoff_next_ms(ftc__backoff *b);

#endif
