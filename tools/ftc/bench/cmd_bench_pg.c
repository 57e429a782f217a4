/* `ftc bench pg`: process-group collectives benchmark in the style of
 * nccl-tests. Starts a store and N local ranks (this program re-run with
 * --worker-*), which time each collective and size; rank 0 prints a table
 * or JSON lines. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base_int.h"
#include "cli_args.h"
#include "bench/cmd_bench.h"
#include "ftc/ftc.h"

#define MAX_SIZES 32
#define MAX_RANKS 64

enum {
    OP_ALLREDUCE,
    OP_BROADCAST,
    OP_ALLGATHER,
    OP_REDUCE_SCATTER,
    OP_ALLTOALL,
    NOPS
};

/* "all" sets every bit. */
static const char *const op_names[NOPS + 2] = {
    "allreduce", "broadcast", "allgather", "reduce_scatter",
    "alltoall",  "all",       NULL};

static const char *const algo_names[] = {"auto", "ring",  "rdouble", "direct",
                                         "tree", "chain", NULL};

typedef struct cfg {
    int ranks;
    int ops; /* bit i: op_names[i] */
    size_t sizes[MAX_SIZES];
    int nsizes;
    bool json;
    double budget_s; /* per (op, size) */
    int iters;       /* 0: by size */
    int spin_us;
    int algo;
    int streams;
    size_t segment;
    const char *store; /* worker: store address */
    int rank;          /* worker */
    const char *prefix;
} cfg;

static const ftc__cli_option options[] = {
    {"ranks", FTC__CLI_INT, FTC__CLI_FIELD(cfg, ranks), .min = 1,
     .max = MAX_RANKS, .metavar = "N", .help = "ranks"},
    {"op", FTC__CLI_ENUM_SET, FTC__CLI_FIELD(cfg, ops), .names = op_names,
     .metavar = "LIST", .help = "collectives", .default_text = "all"},
    {"sizes", FTC__CLI_SIZE_LIST, FTC__CLI_ARRAY(cfg, sizes, nsizes), .min = 1,
     .max = INT64_MAX, .metavar = "LIST",
     .help = "per-rank buffer sizes with K/M/G suffixes"},
    {"iters", FTC__CLI_INT, FTC__CLI_FIELD(cfg, iters), .min = 1,
     .max = 1000000, .metavar = "K", .help = "iterations per size",
     .default_text = "500 at 4K down to 12 at 64M, within --budget"},
    {"budget", FTC__CLI_DOUBLE, FTC__CLI_FIELD(cfg, budget_s), .real_min = 1,
     .real_max = 3600, .metavar = "S", .help = "seconds per op and size"},
    {"json", FTC__CLI_FLAG, FTC__CLI_FIELD(cfg, json),
     .help = "one JSON object per line instead of a table (op, ranks, "
             "bytes, count, p50_us, p10_us, p90_us, algbw_gbps, busbw_gbps, "
             "b2b_us, b2b_busbw_gbps)"},
    {"spin", FTC__CLI_INT, FTC__CLI_FIELD(cfg, spin_us), .min = -2,
     .max = 1000000, .metavar = "US",
     .help = "ftc_pg_opts.spin_us (0: never poll)",
     .default_text = "-2 = auto"},
    {"algo", FTC__CLI_ENUM, FTC__CLI_FIELD(cfg, algo), .names = algo_names,
     .metavar = "NAME", .help = "the algorithm; auto: by size"},
    {"streams", FTC__CLI_INT, FTC__CLI_FIELD(cfg, streams), .min = 1, .max = 8,
     .metavar = "K", .help = "connections per peer"},
    {"segment", FTC__CLI_SIZE, FTC__CLI_FIELD(cfg, segment), .min = 1,
     .max = INT64_MAX, .metavar = "SIZE",
     .help = "pipelining segment, K/M suffixes"},
    /* The launcher's arguments to its ranks (this program re-run). */
    {"worker-store", FTC__CLI_STRING, FTC__CLI_FIELD(cfg, store),
     .metavar = "ADDR"},
    {"worker-rank", FTC__CLI_INT, FTC__CLI_FIELD(cfg, rank), .min = 0,
     .max = MAX_RANKS - 1, .metavar = "R"},
    {"worker-prefix", FTC__CLI_STRING, FTC__CLI_FIELD(cfg, prefix),
     .metavar = "PREFIX"},
};

static const ftc__cli_command command = {
    .name = "bench pg",
    .about = "Times process-group collectives between N local ranks (each\n"
             "a process started here, meeting through an embedded store),\n"
             "nccl-tests style: for each op and size, the median over\n"
             "iterations of the slowest rank's time (each iteration after a\n"
             "barrier), and back-to-back time (iterations in a row).\n"
             "algbw = size / time; busbw = algbw x 2(N-1)/N (allreduce),\n"
             "x 1 (broadcast), x (N-1)/N (allgather, reduce_scatter,\n"
             "alltoall). size is the per-rank buffer (allgather: output,\n"
             "reduce_scatter: input), f32 elements.\n",
    FTC__CLI_OPTIONS(options),
};

/* ------------------------------------------------------------- worker */

typedef struct bufs {
    float *in, *out;
    size_t in_n, out_n;
} bufs;

/* Element counts of in and out for one op at nccl-tests size `bytes`. */
static void shape(int op, size_t bytes, int n, size_t *in_n, size_t *out_n)
{
    size_t c = bytes / sizeof(float);
    c -= c % (size_t)n; /* blocks divide evenly */
    *in_n = *out_n = c;
    if (op == OP_ALLGATHER) {
        *in_n = c / (size_t)n;
    } else if (op == OP_REDUCE_SCATTER) {
        *out_n = c / (size_t)n;
    }
}

static int run_op(ftc_pg *pg, int op, bufs *b)
{
    ftc_tensor in = ftc_tensor_cpu(b->in, b->in_n, FTC_DTYPE_F32);
    ftc_tensor out = ftc_tensor_cpu(b->out, b->out_n, FTC_DTYPE_F32);
    ftc_work *w = NULL;
    int rc;
    switch (op) {
    case OP_ALLREDUCE:
        rc = ftc_pg_allreduce(pg, &in, &in, FTC_OP_SUM, NULL, &w);
        break;
    case OP_BROADCAST:
        rc = ftc_pg_broadcast(pg, &in, 0, NULL, &w);
        break;
    case OP_ALLGATHER:
        rc = ftc_pg_allgather(pg, &in, &out, NULL, &w);
        break;
    case OP_REDUCE_SCATTER:
        rc = ftc_pg_reduce_scatter(pg, &in, &out, FTC_OP_SUM, NULL, &w);
        break;
    default:
        rc = ftc_pg_alltoall(pg, &in, &out, NULL, &w);
        break;
    }
    if (rc == 0) {
        rc = ftc_work_wait(w, FTC_TIMEOUT_INFINITE);
        ftc_work_release(w);
    }
    return rc;
}

/* A blocking collective on small data: barrier, max, broadcast. */
static int sync_op(ftc_pg *pg, int kind, double *v, size_t n)
{
    ftc_tensor t = ftc_tensor_cpu(v, n, FTC_DTYPE_F64);
    ftc_work *w;
    int rc = kind == 0   ? ftc_pg_barrier(pg, NULL, &w)
             : kind == 1 ? ftc_pg_allreduce(pg, &t, &t, FTC_OP_MAX, NULL, &w)
                         : ftc_pg_broadcast(pg, &t, 0, NULL, &w);
    if (rc == 0) {
        rc = ftc_work_wait(w, FTC_TIMEOUT_INFINITE);
        ftc_work_release(w);
    }
    return rc;
}

static int default_iters(size_t bytes)
{
    return bytes <= (8u << 10)     ? 500
           : bytes <= (128u << 10) ? 300
           : bytes <= (2u << 20)   ? 100
           : bytes <= (32u << 20)  ? 30
                                   : 12;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double bus_factor(int op, int n)
{
    if (op == OP_ALLREDUCE) {
        return 2.0 * (n - 1) / n;
    }
    return op == OP_BROADCAST ? 1.0 : (double)(n - 1) / n;
}

static void report(const cfg *c, int op, size_t bytes, size_t count,
                   double *lat, int iters, double b2b)
{
    qsort(lat, (size_t)iters, sizeof(double), cmp_double);
    double p50 = lat[iters / 2], p10 = lat[iters / 10];
    double p90 = lat[iters * 9 / 10];
    double f = bus_factor(op, c->ranks);
    double algbw = (double)bytes / p50 / 1e3; /* us -> GB/s */
    if (c->json) {
        printf("{\"op\":\"%s\",\"ranks\":%d,\"bytes\":%zu,\"count\":%zu,"
               "\"iters\":%d,\"p50_us\":%.2f,\"p10_us\":%.2f,\"p90_us\":%.2f,"
               "\"algbw_gbps\":%.4f,\"busbw_gbps\":%.4f,\"b2b_us\":%.2f,"
               "\"b2b_busbw_gbps\":%.4f}\n",
               op_names[op], c->ranks, bytes, count, iters, p50, p10, p90,
               algbw, algbw * f, b2b, (double)bytes / b2b / 1e3 * f);
    } else {
        printf("%14s %12zu %11zu %10.1f %8.3f %8.3f %10.1f %10.1f %8.3f\n",
               op_names[op], bytes, count, p50, algbw, algbw * f, p90, b2b,
               (double)bytes / b2b / 1e3 * f);
    }
    fflush(stdout);
}

/* Times one op at one size on every rank; rank 0 reports. */
static int bench_one(ftc_pg *pg, const cfg *c, int op, size_t bytes,
                     double *lat)
{
    int n = ftc_pg_size(pg), r = ftc_pg_rank(pg);
    bufs b;
    shape(op, bytes, n, &b.in_n, &b.out_n);
    b.in = calloc(b.in_n + 1, sizeof(float)); /* zeros: sums stay finite */
    b.out = calloc(b.out_n + 1, sizeof(float));
    int iters = c->iters > 0 ? c->iters : default_iters(bytes);
    int rc = b.in != NULL && b.out != NULL ? 0 : FTC_ENOMEM;
    for (int i = 0; rc == 0 && i < 3; i++) {
        rc = run_op(pg, op, &b);
    }
    int done = 0;
    int64_t start = ftc__now_ns();
    while (rc == 0 && done < iters) {
        rc = sync_op(pg, 0, NULL, 0);
        int64_t t0 = ftc__now_ns();
        rc = rc ? rc : run_op(pg, op, &b);
        lat[done++] = (double)(ftc__now_ns() - t0) / 1e3;
        if (rc == 0 && done % 8 == 0) {
            /* Rank 0 decides for all whether the budget is spent. */
            double stop =
                r == 0 && (double)(ftc__now_ns() - start) / 1e9 > c->budget_s;
            rc = sync_op(pg, 2, &stop, 1);
            if (stop != 0) {
                break;
            }
        }
    }
    rc = rc ? rc : sync_op(pg, 1, lat, (size_t)done);
    rc = rc ? rc : sync_op(pg, 0, NULL, 0);
    int64_t t0 = ftc__now_ns();
    for (int i = 0; rc == 0 && i < done; i++) {
        rc = run_op(pg, op, &b);
    }
    double b2b = (double)(ftc__now_ns() - t0) / 1e3 / (done ? done : 1);
    rc = rc ? rc : sync_op(pg, 1, &b2b, 1);
    if (rc == 0 && r == 0) {
        report(c, op, bytes, b.in_n, lat, done, b2b);
    }
    free(b.in);
    free(b.out);
    return rc;
}

static int worker(const cfg *c)
{
    ftc_store_client *store = NULL;
    ftc_pg *pg = NULL;
    int rc = ftc_store_client_connect(c->store, NULL, &store);
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.host = "127.0.0.1";
    o.spin_us = c->spin_us;
    o.streams = c->streams;
    o.segment_bytes = c->segment;
    o.allreduce_algo =
        c->algo == FTC_ALGO_RING || c->algo == FTC_ALGO_RDOUBLE ? c->algo : 0;
    o.allgather_algo =
        c->algo == FTC_ALGO_RING || c->algo == FTC_ALGO_DIRECT ? c->algo : 0;
    o.broadcast_algo =
        c->algo == FTC_ALGO_TREE || c->algo == FTC_ALGO_CHAIN ? c->algo : 0;
    if (rc == 0) {
        rc = ftc_pg_create(store, c->prefix, c->rank, c->ranks, &o, &pg);
    }
    double *lat = calloc(1000000, sizeof(double));
    if (rc == 0 && c->rank == 0 && !c->json) {
        printf("# ftc bench pg: %d ranks, f32, tcp backend, loopback\n"
               "# %12s %12s %11s %10s %8s %8s %10s %10s %8s\n"
               "# %12s %12s %11s %10s %8s %8s %10s %10s %8s\n",
               c->ranks, "op", "size(B)", "count", "time(us)", "algbw", "busbw",
               "p90(us)", "b2b(us)", "b2b bus", "", "", "(elems)", "p50",
               "(GB/s)", "(GB/s)", "", "", "(GB/s)");
        fflush(stdout);
    }
    for (int op = 0; rc == 0 && op < NOPS; op++) {
        for (int s = 0; rc == 0 && (c->ops & (1 << op)) && s < c->nsizes; s++) {
            rc = bench_one(pg, c, op, c->sizes[s], lat);
        }
    }
    if (rc != 0) {
        fprintf(stderr, "ftc bench pg: rank %d: %s (%s)\n", c->rank,
                ftc_strerror(rc), ftc_last_error());
    }
    free(lat);
    ftc_pg_destroy(pg);
    ftc_store_client_close(store);
    return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------- launcher */

static pid_t spawn(char **argv)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* Only async-signal-safe calls until exec: the parent has threads
         * (the store). A rank dies with the launcher. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    return pid;
}

static int launch(const cfg *c, int argc, char **argv)
{
    ftc_store_server_opts so;
    ftc_store_server_opts_init(&so);
    so.bind_host = "127.0.0.1";
    ftc_store_server *server = NULL;
    if (ftc_store_server_create(&so, &server) != 0) {
        fprintf(stderr, "ftc bench pg: store: %s\n", ftc_last_error());
        return 1;
    }
    char store[64], prefix[64], rank[MAX_RANKS][16];
    snprintf(store, sizeof(store), "127.0.0.1:%d",
             ftc_store_server_port(server));
    snprintf(prefix, sizeof(prefix), "bench-pg/%d", (int)getpid());
    char *args[128];
    int na = 0;
    args[na++] = "ftc";
    if (strcmp(argv[0], "pg") == 0) {
        args[na++] = "bench"; /* reached as `ftc bench pg` */
    }
    for (int i = 0; i < argc && na < 120; i++) {
        args[na++] = argv[i];
    }
    args[na++] = "--worker-store";
    args[na++] = store;
    args[na++] = "--worker-prefix";
    args[na++] = prefix;
    args[na++] = "--worker-rank";
    args[na + 1] = NULL;
    pid_t pids[MAX_RANKS];
    fflush(NULL);
    for (int r = 0; r < c->ranks; r++) {
        snprintf(rank[r], sizeof(rank[r]), "%d", r);
        args[na] = rank[r];
        pids[r] = spawn(args);
    }
    int status = 0;
    for (int r = 0; r < c->ranks; r++) {
        int st = 0;
        if (pids[r] < 0 || waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0) {
            status = 1;
        }
    }
    ftc_store_server_destroy(server);
    return status;
}

int bench_pg_main(int argc, char **argv)
{
    ftc_pg_opts defaults;
    ftc_pg_opts_init(&defaults);
    cfg c = {.ranks = 2,
             .ops = (1 << NOPS) - 1,
             .sizes = {4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20},
             .nsizes = 5,
             .budget_s = 5,
             .spin_us = defaults.spin_us,
             .streams = defaults.streams,
             .segment = defaults.segment_bytes,
             .rank = -1};
    int rc = ftc__cli_parse(&command, &c, argc, argv, NULL);
    if (rc != FTC__CLI_PARSED) {
        return rc;
    }
    if (c.ops & (1 << NOPS)) { /* "all" */
        c.ops = (1 << NOPS) - 1;
    }
    if (c.rank >= 0) {
        return worker(&c);
    }
    return launch(&c, argc, argv);
}
