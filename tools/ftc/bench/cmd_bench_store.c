/* `ftc bench store`: set/get/add ops/s and barrier latency of ftc's store
 * client against ftc's server (embedded, or any TCPStore with --addr),
 * as a table or JSON lines. The clients are processes or threads. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base_int.h"
#include "bench/bench_stats.h"
#include "cli_args.h"
#include "bench/cmd_bench.h"
#include "ftc/ftc.h"

static const int default_tp_clients[] = {1, 4, 16, 64};
static const int default_bar_clients[] = {4, 16, 64, 256, 1024};
static const size_t default_sizes[] = {16, 1 << 20};

/* Processes up to this many clients; threads above (1,024 processes cost
 * seconds to start and a GiB of memory on a small machine). */
#define PROCS_MAX 64

typedef struct bench_args {
    int ops;            /* which ops to run: bit i is bench_op i */
    int clients;        /* 0: the default list */
    size_t value_bytes; /* 0: 16 B and 1 MiB */
    int64_t duration_ms;
    int rounds; /* 0: by clients */
    const char *addr;
    int dialect;
    int mode; /* 0 auto, 1 processes, 2 threads */
    int json;
} bench_args;

static const ftc__cli_option options[] = {
    {"clients", FTC__CLI_INT, FTC__CLI_FIELD(bench_args, clients), .min = 1,
     .max = 100000, .metavar = "K", .help = "only K clients",
     .default_text = "the lists above"},
    {"value-bytes", FTC__CLI_SIZE, FTC__CLI_FIELD(bench_args, value_bytes),
     .min = 1, .max = 1 << 30, .metavar = "B", .help = "only B-byte values",
     .default_text = "16 and 1048576"},
    {"ops", FTC__CLI_ENUM_SET, FTC__CLI_FIELD(bench_args, ops),
     .names = bench_op_names, .metavar = "LIST", .help = "which ops"},
    {"duration", FTC__CLI_SECONDS, FTC__CLI_FIELD(bench_args, duration_ms),
     .min = 1, .max = 3600000, .metavar = "S",
     .help = "seconds per throughput measurement"},
    {"rounds", FTC__CLI_INT, FTC__CLI_FIELD(bench_args, rounds), .min = 2,
     .max = 1000000, .metavar = "R", .help = "barrier rounds",
     .default_text = "400 to 20 by K"},
    {"addr", FTC__CLI_STRING, FTC__CLI_FIELD(bench_args, addr),
     .metavar = "HOST:PORT",
     .help = "a running server (ftc store, or PyTorch's TCPStore) instead "
             "of an embedded one"},
    {"v1", FTC__CLI_FLAG, FTC__CLI_FIELD(bench_args, dialect),
     .flag_value = FTC_STORE_DIALECT_V1,
     .help = "speak the PyTorch 1.13 dialect (with --addr)"},
    {"procs", FTC__CLI_FLAG, FTC__CLI_FIELD(bench_args, mode), .flag_value = 1,
     .help = "clients as processes (default: processes up to 64 clients, "
             "threads above)"},
    {"threads", FTC__CLI_FLAG, FTC__CLI_FIELD(bench_args, mode),
     .flag_value = 2, .help = "clients as threads"},
    {"json", FTC__CLI_FLAG, FTC__CLI_FIELD(bench_args, json),
     .help = "one JSON object per line: op, clients, value_bytes, "
             "ops_per_s, p50_us, p99_us, mode"},
};

static const ftc__cli_command command = {
    .name = "bench store",
    .about =
        "Measures ftc's store client against ftc's store server: set, get\n"
        "and add ops/s with K = 1, 4, 16, 64 clients for 16 B and 1 MiB\n"
        "values (add: one shared counter), and barrier latency (K clients\n"
        "in c10d's store barrier, ftc_store_client_barrier: one request\n"
        "each on ftc's server) for K = 4, 16, 64, 256, 1024. Each client\n"
        "has its own connection.\n",
    .notes = "Latencies are per call (set: until sent; barrier: per round,\n"
             "as the last client leaves). Throughput is all clients' ops over\n"
             "the span from the first start to the last end.\n",
    FTC__CLI_OPTIONS(options),
};

static int default_rounds(int clients)
{
    return clients <= 4     ? 400
           : clients <= 16  ? 200
           : clients <= 64  ? 100
           : clients <= 256 ? 40
                            : 20;
}

typedef struct summary {
    double ops_per_s;
    double p50_us;
    double p99_us;
} summary;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Barrier latency as the PyTorch anchor measures it: period[r] = (last
 * exit of round r) - (last exit of round r-1). */
static void summarize_barrier(const bench_result *rs, int k, int rounds,
                              summary *s)
{
    int64_t *last = ftc__calloc((size_t)rounds, sizeof(*last));
    int64_t *per = ftc__calloc((size_t)rounds, sizeof(*per));
    if (last == NULL || per == NULL || rounds < 2) {
        ftc__free(last);
        ftc__free(per);
        return;
    }
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < k; i++) {
            if (rs[i].exits[r] > last[r]) {
                last[r] = rs[i].exits[r];
            }
        }
    }
    for (int r = 1; r < rounds; r++) {
        per[r - 1] = last[r] - last[r - 1];
    }
    qsort(per, (size_t)rounds - 1, sizeof(*per), cmp_i64);
    s->p50_us = (double)per[(rounds - 1) / 2] / 1000.0;
    s->p99_us = (double)per[((rounds - 1) * 99) / 100] / 1000.0;
    s->ops_per_s =
        (double)(rounds - 1) / ((double)(last[rounds - 1] - last[0]) / 1e9);
    ftc__free(last);
    ftc__free(per);
}

static void summarize(const bench_cell *cell, const bench_result *rs,
                      summary *s)
{
    memset(s, 0, sizeof(*s));
    if (cell->op == BENCH_BARRIER) {
        summarize_barrier(rs, cell->clients, cell->rounds, s);
        return;
    }
    static bench_hist all;
    memset(&all, 0, sizeof(all));
    uint64_t ops = 0;
    int64_t t0 = INT64_MAX, t1 = 0;
    for (int i = 0; i < cell->clients; i++) {
        bench_hist_merge(&all, &rs[i].hist);
        ops += rs[i].ops;
        t0 = rs[i].t0_ns < t0 ? rs[i].t0_ns : t0;
        t1 = rs[i].t1_ns > t1 ? rs[i].t1_ns : t1;
    }
    s->ops_per_s = t1 > t0 ? (double)ops / ((double)(t1 - t0) / 1e9) : 0;
    s->p50_us = bench_hist_quantile_us(&all, 0.50);
    s->p99_us = bench_hist_quantile_us(&all, 0.99);
}

static void print_row(const bench_args *a, const bench_cell *cell,
                      const summary *s, const char *mode)
{
    if (a->json) {
        printf("{\"op\":\"%s\",\"clients\":%d,\"value_bytes\":%zu,"
               "\"ops_per_s\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
               "\"mode\":\"%s\"}\n",
               bench_op_name(cell->op), cell->clients, cell->value_bytes,
               s->ops_per_s, s->p50_us, s->p99_us, mode);
    } else {
        printf("%-8s %7d %11zu %13.1f %10.1f %10.1f  %s\n",
               bench_op_name(cell->op), cell->clients, cell->value_bytes,
               s->ops_per_s, s->p50_us, s->p99_us, mode);
    }
    fflush(stdout);
}

/* Runs one cell; 0, or 1 after printing why it failed. */
static int run_cell(const bench_args *a, bench_cell *cell)
{
    int procs = a->mode == 1 || (a->mode == 0 && cell->clients <= PROCS_MAX);
    bench_result *rs = ftc__calloc((size_t)cell->clients, sizeof(*rs));
    if (rs == NULL) {
        fprintf(stderr, "ftc bench store: out of memory\n");
        return 1;
    }
    int rc = procs ? bench_run_procs(cell, rs) : bench_run_threads(cell, rs);
    for (int i = 0; rc == 0 && i < cell->clients; i++) {
        if (rs[i].rc != 0 ||
            (cell->op == BENCH_BARRIER && rs[i].nexits < cell->rounds)) {
            fprintf(stderr, "ftc bench store: %s, client %d: %s\n",
                    bench_op_name(cell->op), i,
                    rs[i].rc ? rs[i].err : "incomplete report");
            rc = 1;
        }
    }
    if (rc == 0) {
        summary s;
        summarize(cell, rs, &s);
        print_row(a, cell, &s, procs ? "procs" : "threads");
    }
    for (int i = 0; i < cell->clients; i++) {
        bench_result_free(&rs[i]);
    }
    ftc__free(rs);
    return rc != 0;
}

static int run_all(const bench_args *a, const char *addr)
{
    static int seq;
    int failed = 0;
    size_t sizes[2];
    size_t nsizes = 0;
    if (a->value_bytes != 0) {
        sizes[nsizes++] = a->value_bytes;
    } else {
        memcpy(sizes, default_sizes, sizeof(default_sizes));
        nsizes = 2;
    }
    if (!a->json) {
        printf("%-8s %7s %11s %13s %10s %10s  %s\n", "op", "clients",
               "value_bytes", "ops_per_s", "p50_us", "p99_us", "mode");
    }
    for (int op = 0; op < BENCH_NOPS; op++) {
        if (!(a->ops & (1 << op))) {
            continue;
        }
        int barrier = op == BENCH_BARRIER;
        const int *ks = barrier ? default_bar_clients : default_tp_clients;
        size_t nks = barrier ? 5 : 4;
        if (a->clients != 0) {
            ks = &a->clients;
            nks = 1;
        }
        /* add has no value; barrier's values are one byte. */
        size_t nv = op == BENCH_SET || op == BENCH_GET ? nsizes : 1;
        for (size_t vi = 0; vi < nv; vi++) {
            for (size_t ki = 0; ki < nks; ki++) {
                bench_cell cell;
                memset(&cell, 0, sizeof(cell));
                cell.op = (bench_op)op;
                cell.clients = ks[ki];
                cell.value_bytes =
                    op == BENCH_SET || op == BENCH_GET ? sizes[vi] : 0;
                cell.duration_ms = a->duration_ms;
                cell.rounds = a->rounds ? a->rounds : default_rounds(ks[ki]);
                cell.dialect = a->dialect;
                snprintf(cell.addr, sizeof(cell.addr), "%s", addr);
                snprintf(cell.prefix, sizeof(cell.prefix), "bench/%d/%d",
                         (int)getpid(), seq++);
                failed |= run_cell(a, &cell);
            }
        }
    }
    return failed;
}

int bench_store_main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--worker") == 0) {
        return bench_worker_main(argc, argv);
    }
    bench_args a = {.ops = (1 << BENCH_NOPS) - 1, .duration_ms = 2000};
    int rc = ftc__cli_parse(&command, &a, argc, argv, NULL);
    if (rc != FTC__CLI_PARSED) {
        return rc;
    }
    ftc_store_server *srv = NULL;
    char addr[160];
    if (a.addr != NULL) {
        snprintf(addr, sizeof(addr), "%s", a.addr);
    } else {
        ftc_store_server_opts so;
        ftc_store_server_opts_init(&so);
        so.bind_host = "127.0.0.1";
        if (ftc_store_server_create(&so, &srv) != 0) {
            fprintf(stderr, "ftc bench store: %s\n", ftc_last_error());
            return 1;
        }
        snprintf(addr, sizeof(addr), "127.0.0.1:%d",
                 ftc_store_server_port(srv));
    }
    if (!a.json) {
        printf("ftc bench store: server %s (%s), %.1f s per measurement\n",
               addr, srv ? "embedded ftc" : "--addr",
               (double)a.duration_ms / 1000.0);
    }
    rc = run_all(&a, addr);
    ftc_store_server_destroy(srv);
    return rc;
}
