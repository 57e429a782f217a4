/* Latency histogram for `ftc bench`: log-linear buckets (HdrHistogram's
 * idea with 5 bits of precision), cheap to fill in the measured loop. */
#include "bench/cmd_bench.h"

int bench_hist_bucket(uint64_t ns)
{
    if (ns < 64) {
        return (int)ns;
    }
    int e = 63 - __builtin_clzll(ns); /* >= 6 */
    int idx = (e - 5) * 32 + (int)(ns >> (e - 5));
    return idx < BENCH_HIST_BUCKETS ? idx : BENCH_HIST_BUCKETS - 1;
}

/* The middle of a bucket's range, in ns. */
static double bucket_mid_ns(int idx)
{
    if (idx < 64) {
        return idx;
    }
    int e = idx / 32 + 4;
    int m = idx % 32 + 32;
    return ((double)m + 0.5) * (double)(1ULL << (e - 5));
}

void bench_hist_add(bench_hist *h, uint64_t ns)
{
    h->count[bench_hist_bucket(ns)]++;
    h->total++;
}

void bench_hist_merge(bench_hist *into, const bench_hist *from)
{
    for (int i = 0; i < BENCH_HIST_BUCKETS; i++) {
        into->count[i] += from->count[i];
    }
    into->total += from->total;
}

double bench_hist_quantile_us(const bench_hist *h, double q)
{
    if (h->total == 0) {
        return 0;
    }
    uint64_t rank = (uint64_t)(q * (double)(h->total - 1));
    uint64_t seen = 0;
    for (int i = 0; i < BENCH_HIST_BUCKETS; i++) {
        seen += h->count[i];
        if (seen > rank) {
            return bucket_mid_ns(i) / 1000.0;
        }
    }
    return bucket_mid_ns(BENCH_HIST_BUCKETS - 1) / 1000.0;
}
