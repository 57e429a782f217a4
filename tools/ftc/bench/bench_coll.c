/* The collective timing of `ftc bench pg` and bench/ccl_raw.c (see
 * bench_coll.h). */
#include "bench/bench_coll.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/bench_stats.h"

const char *const bench_coll_op_names[BENCH_COLL_NOPS + 2] = {
    "allreduce", "broadcast", "allgather", "reduce_scatter",
    "alltoall",  "all",       NULL};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_coll_shape(int op, size_t bytes, int n, size_t *in_n, size_t *out_n)
{
    size_t c = bytes / sizeof(float);
    c -= c % (size_t)n;
    *in_n = *out_n = c;
    if (op == BENCH_COLL_ALLGATHER) {
        *in_n = c / (size_t)n;
    } else if (op == BENCH_COLL_REDUCE_SCATTER) {
        *out_n = c / (size_t)n;
    }
}

static int default_iters(size_t bytes)
{
    return bytes <= (8u << 10)     ? 500
           : bytes <= (128u << 10) ? 300
           : bytes <= (2u << 20)   ? 100
           : bytes <= (32u << 20)  ? 30
                                   : 12;
}

static double bus_factor(int op, int n)
{
    if (op == BENCH_COLL_ALLREDUCE) {
        return 2.0 * (n - 1) / n;
    }
    return op == BENCH_COLL_BROADCAST ? 1.0 : (double)(n - 1) / n;
}

static void *alloc_zero(const bench_coll_comm *cm, size_t bytes)
{
    return cm->alloc != NULL ? cm->alloc(bytes) : calloc(1, bytes);
}

static void release(const bench_coll_comm *cm, void *p)
{
    if (cm->release != NULL) {
        cm->release(p);
    } else {
        free(p);
    }
}

int bench_coll_one(const bench_coll_comm *cm, int op, size_t bytes, int iters,
                   double budget_s, double *lat, bench_coll_result *out)
{
    bench_coll_bufs b;
    bench_coll_shape(op, bytes, cm->size, &b.in_n, &b.out_n);
    /* Zeros: sums stay finite. */
    b.in = alloc_zero(cm, (b.in_n + 1) * sizeof(float));
    b.out = alloc_zero(cm, (b.out_n + 1) * sizeof(float));
    if (iters <= 0) {
        iters = default_iters(bytes);
    }
    int rc = b.in != NULL && b.out != NULL ? 0 : -1;
    for (int i = 0; rc == 0 && i < 3; i++) {
        rc = cm->run(cm->ctx, op, &b);
    }
    int done = 0;
    int64_t start = now_ns();
    while (rc == 0 && done < iters) {
        rc = cm->barrier(cm->ctx);
        int64_t t0 = now_ns();
        rc = rc ? rc : cm->run(cm->ctx, op, &b);
        lat[done++] = (double)(now_ns() - t0) / 1e3;
        if (rc == 0 && done % 8 == 0) {
            /* Rank 0 decides for all whether the budget is spent. */
            double stop =
                cm->rank == 0 && (double)(now_ns() - start) / 1e9 > budget_s;
            rc = cm->bcast(cm->ctx, &stop, 1);
            if (stop != 0) {
                break;
            }
        }
    }
    rc = rc ? rc : cm->max(cm->ctx, lat, (size_t)done);
    rc = rc ? rc : cm->barrier(cm->ctx);
    int64_t t0 = now_ns();
    for (int i = 0; rc == 0 && i < done; i++) {
        rc = cm->run(cm->ctx, op, &b);
    }
    double b2b = (double)(now_ns() - t0) / 1e3 / (done ? done : 1);
    rc = rc ? rc : cm->max(cm->ctx, &b2b, 1);
    if (rc == 0) {
        *out = (bench_coll_result){
            .op = op,
            .ranks = cm->size,
            .iters = done,
            .bytes = bytes,
            .count = b.in_n,
            .p10_us = bench_percentile(lat, (size_t)done, 10),
            .p50_us = bench_percentile(lat, (size_t)done, 50),
            .p90_us = bench_percentile(lat, (size_t)done, 90),
            .b2b_us = b2b,
        };
    }
    release(cm, b.in);
    release(cm, b.out);
    return rc;
}

void bench_coll_print_header(void)
{
    printf("# %-14s %14s %12s %11s %10s %8s %8s %10s %10s %8s\n"
           "# %-14s %14s %12s %11s %10s %8s %8s %10s %10s %8s\n",
           "backend", "op", "size(B)", "count", "time(us)", "algbw", "busbw",
           "p90(us)", "b2b(us)", "b2b bus", "", "", "", "(elems)", "p50",
           "(GB/s)", "(GB/s)", "", "", "(GB/s)");
    fflush(stdout);
}

void bench_coll_print(const bench_coll_result *r, const char *backend,
                      bool json)
{
    double f = bus_factor(r->op, r->ranks);
    double algbw = (double)r->bytes / r->p50_us / 1e3; /* us -> GB/s */
    double b2b_bus = (double)r->bytes / r->b2b_us / 1e3 * f;
    const char *op = bench_coll_op_names[r->op];
    if (json) {
        printf("{\"backend\":\"%s\",\"op\":\"%s\",\"ranks\":%d,\"bytes\":%zu,"
               "\"count\":%zu,\"iters\":%d,\"p50_us\":%.2f,\"p10_us\":%.2f,"
               "\"p90_us\":%.2f,\"algbw_gbps\":%.4f,\"busbw_gbps\":%.4f,"
               "\"b2b_us\":%.2f,\"b2b_busbw_gbps\":%.4f}\n",
               backend, op, r->ranks, r->bytes, r->count, r->iters, r->p50_us,
               r->p10_us, r->p90_us, algbw, algbw * f, r->b2b_us, b2b_bus);
    } else {
        printf("  %-14s %14s %12zu %11zu %10.1f %8.3f %8.3f %10.1f %10.1f "
               "%8.3f\n",
               backend, op, r->bytes, r->count, r->p50_us, algbw, algbw * f,
               r->p90_us, r->b2b_us, b2b_bus);
    }
    fflush(stdout);
}
