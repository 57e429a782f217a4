/* `ftc bench store` internals shared by its files: the measured cell, one
 * benchmark client, its result, the latency histogram and the runners that
 * drive K clients as threads or as worker processes. */
#ifndef FTC_TOOLS_CMD_BENCH_H
#define FTC_TOOLS_CMD_BENCH_H

#include <stddef.h>
#include <stdint.h>

typedef enum bench_op {
    BENCH_SET,
    BENCH_GET,
    BENCH_ADD,
    BENCH_BARRIER,
    BENCH_NOPS
} bench_op;

/* "set", "get", "add", "barrier", then NULL. */
extern const char *const bench_op_names[BENCH_NOPS + 1];
const char *bench_op_name(bench_op op);
int bench_op_parse(const char *name); /* -1 if unknown */

/* One measurement: K clients doing one op. */
typedef struct bench_cell {
    bench_op op;
    int clients;
    size_t value_bytes;
    int64_t duration_ms; /* throughput ops run this long */
    int rounds;          /* barrier rounds */
    int dialect;         /* FTC_STORE_DIALECT_* */
    char addr[128];      /* the server */
    char prefix[64];     /* keys of this cell start with it */
} bench_cell;

/* Log-linear histogram of latencies in ns: 32 sub-buckets per power of
 * two, so a quantile is within about 3 %. */
#define BENCH_HIST_BUCKETS 1184
typedef struct bench_hist {
    uint64_t count[BENCH_HIST_BUCKETS];
    uint64_t total;
} bench_hist;

void bench_hist_add(bench_hist *h, uint64_t ns);
void bench_hist_merge(bench_hist *into, const bench_hist *from);
/* The q-quantile (0..1) in microseconds; 0 when empty. */
double bench_hist_quantile_us(const bench_hist *h, double q);
/* Bucket index <-> lower bound (exposed for serialisation). */
int bench_hist_bucket(uint64_t ns);

/* What one client measured. */
typedef struct bench_result {
    int rc; /* 0, or the ftc error that stopped it */
    char err[256];
    uint64_t ops;
    int64_t t0_ns; /* CLOCK_MONOTONIC: comparable across processes */
    int64_t t1_ns;
    bench_hist hist;
    int64_t *exits; /* barrier: when it left each round (ftc__malloc) */
    int nexits;
} bench_result;

/* Connects, prepares the keys (get reads values it set first) and runs the
 * cell's op after start() returns; start is where K clients line up. */
void bench_client_run(const bench_cell *cell, int id, bench_result *r,
                      void (*start)(void *arg), void *arg);
void bench_result_free(bench_result *r);

/* Runs K clients as threads of this process, or as worker processes
 * (`ftc bench store --worker`), filling results[K]. 0, or -1 with a
 * message on stderr when the clients could not be started. */
int bench_run_threads(const bench_cell *cell, bench_result *results);
int bench_run_procs(const bench_cell *cell, bench_result *results);

/* The worker process: one client, results on stdout. */
int bench_worker_main(int argc, char **argv);

/* ftc bench store */
int bench_store_main(int argc, char **argv);
/* `ftc bench pg` (cmd_bench_pg.c): process-group collectives. */
int bench_pg_main(int argc, char **argv);

#endif
