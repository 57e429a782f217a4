/* xorshift64* per thread, and exponential backoff with jitter. */
#include "base/rand.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static _Thread_local uint64_t state;

uint64_t ftc__rand_u64(void)
{
    if (state == 0) {
        if (getrandom(&state, sizeof(state), GRND_NONBLOCK) !=
            (ssize_t)sizeof(state)) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            state = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
        }
        state |= 1;
    }
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
}

uint64_t ftc__rand_below(uint64_t n)
{
    return ftc__rand_u64() % n;
}

uint64_t ftc__splitmix64(uint64_t *seq)
{
    uint64_t z = (*seq += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void ftc__backoff_init(ftc__backoff *b, int64_t initial_ms, int64_t max_ms)
{
    b->step_ms = initial_ms > 0 ? initial_ms : 1;
    b->max_ms = max_ms > b->step_ms ? max_ms : b->step_ms;
    b->factor = 2.0;
    b->jitter = 0.5;
}

int64_t ftc__backoff_next_ms(ftc__backoff *b)
{
    double r = (double)(ftc__rand_u64() >> 11) / (double)(1ULL << 53);
    int64_t delay = (int64_t)((double)b->step_ms * (1.0 - b->jitter * r));
    double next = (double)b->step_ms * b->factor;
    b->step_ms = next > (double)b->max_ms ? b->max_ms : (int64_t)next;
    return delay > 0 ? delay : 1;
}
