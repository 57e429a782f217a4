/* The measurement method of `ftc bench pg`, shared with bench/ccl_raw.c
 * (raw oneCCL timed the same way, in the same run): buffer shapes, the
 * timing of one collective at one size (each iteration after a barrier,
 * the slowest rank's time, then the same count back to back), its
 * percentiles and the table or JSON line it prints. The communicator is
 * a table of calls, so any library can be timed by the same code. */
#ifndef FTC_TOOLS_BENCH_COLL_H
#define FTC_TOOLS_BENCH_COLL_H

#include <stdbool.h>
#include <stddef.h>

enum {
    BENCH_COLL_ALLREDUCE,
    BENCH_COLL_BROADCAST,
    BENCH_COLL_ALLGATHER,
    BENCH_COLL_REDUCE_SCATTER,
    BENCH_COLL_ALLTOALL,
    BENCH_COLL_NOPS
};

/* The ops' names, then "all" (every bit of an ENUM_SET) and NULL. */
extern const char *const bench_coll_op_names[BENCH_COLL_NOPS + 2];

/* One op's f32 buffers (in/out element counts, see bench_coll_shape). */
typedef struct bench_coll_bufs {
    float *in, *out;
    size_t in_n, out_n;
} bench_coll_bufs;

/* A communicator of size ranks; each call is blocking and returns 0 or an
 * error code (printed by the caller). */
typedef struct bench_coll_comm {
    void *ctx;
    int rank, size;
    /* The timed collective: allreduce SUM in place, broadcast from 0,
     * allgather, reduce_scatter SUM, alltoall. */
    int (*run)(void *ctx, int op, const bench_coll_bufs *b);
    int (*barrier)(void *ctx);
    int (*max)(void *ctx, double *v, size_t n);   /* element-wise, in place */
    int (*bcast)(void *ctx, double *v, size_t n); /* from rank 0 */
    /* The buffers' memory, zero-filled (NULL: calloc and free). */
    void *(*alloc)(size_t bytes);
    void (*release)(void *p);
} bench_coll_comm;

/* What rank 0 reports for one op and size (times in microseconds). */
typedef struct bench_coll_result {
    int op, ranks, iters;
    size_t bytes, count;
    double p50_us, p10_us, p90_us, b2b_us;
} bench_coll_result;

/* Element counts of in and out for one op at nccl-tests size `bytes` per
 * rank (allgather: output, reduce_scatter: input), blocks divisible by n. */
void bench_coll_shape(int op, size_t bytes, int n, size_t *in_n, size_t *out_n);

/* Times op at bytes on every rank: 3 warm-up calls, then up to iters
 * iterations (0: 500 at 4K down to 12 at 64M) of barrier + op, stopping
 * when rank 0 has spent budget_s; each iteration's time is the slowest
 * rank's; then as many back to back. lat has room for 1000000 samples.
 * Fills *out on every rank. */
int bench_coll_one(const bench_coll_comm *comm, int op, size_t bytes, int iters,
                   double budget_s, double *lat, bench_coll_result *out);

/* The table's two header lines (after a "# ..." title of the caller). */
void bench_coll_print_header(void);

/* One row, or one JSON object with "backend" first, on stdout. */
void bench_coll_print(const bench_coll_result *r, const char *backend,
                      bool json);

#endif
