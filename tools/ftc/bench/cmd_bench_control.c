/* ftc bench control: latency of barrier, all_gather and all_sum over the
 * store, for 4 to 1024 ranks as threads of one process or as processes. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_stats.h"
#include "cli_args.h"
#include "cmd.h"
#include "ftc/ftc.h"

typedef enum { OP_BARRIER, OP_ALL_GATHER, OP_ALL_SUM } bench_op;
static const char *const op_names[] = {"barrier", "all_gather", "all_sum",
                                       NULL};

typedef struct bench_cfg {
    const char *addr;
    const char *prefix; /* unique per run and case */
    bench_op op;
    int ranks;
    int iters;
    size_t bytes;
} bench_cfg;

typedef struct rank_run {
    const bench_cfg *cfg;
    int rank;
    int64_t *exits; /* iters + 1 exit times (ns), the first is a warm-up */
    int rc;
} rank_run;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int one_op(const bench_cfg *cfg, ftc_control *g, const void *payload,
                  ftc_store_value *out)
{
    int64_t t = 60000;
    switch (cfg->op) {
    case OP_BARRIER:
        return ftc_control_barrier(g, NULL, t);
    case OP_ALL_GATHER: {
        int rc = ftc_control_all_gather(g, NULL, payload, cfg->bytes, out, t);
        if (rc == 0) {
            ftc_store_values_free(out, (size_t)cfg->ranks);
        }
        return rc;
    }
    case OP_ALL_SUM:
        return ftc_control_all_sum(g, NULL, 1, NULL, t);
    }
    return FTC_EINVAL;
}

/* One rank: connect, join the group, run iters + 1 collectives with
 * automatic keys, recording when each one returned. */
static int run_rank(rank_run *r)
{
    const bench_cfg *cfg = r->cfg;
    ftc_store_client_opts co;
    ftc_store_client_opts_init(&co);
    co.connect_timeout_ms = 60000;
    ftc_store_client *store = NULL;
    ftc_control *g = NULL;
    ftc_control_opts o;
    ftc_control_opts_init(&o);
    o.auto_prefix = cfg->prefix;
    o.generation = 0;
    void *payload = calloc(1, cfg->bytes + 1);
    ftc_store_value *out = calloc((size_t)cfg->ranks, sizeof(*out));
    int rc = payload == NULL || out == NULL ? FTC_ENOMEM : 0;
    if (rc == 0) {
        rc = ftc_store_client_connect(cfg->addr, &co, &store);
    }
    if (rc == 0) {
        rc = ftc_control_create(store, r->rank, cfg->ranks, &o, &g, 60000);
    }
    for (int i = 0; rc == 0 && i <= cfg->iters; i++) {
        rc = one_op(cfg, g, payload, out);
        r->exits[i] = now_ns();
    }
    if (rc != 0) {
        fprintf(stderr, "bench control: rank %d: %s\n", r->rank,
                ftc_last_error());
    }
    ftc_control_destroy(g);
    ftc_store_client_close(store);
    free(out);
    free(payload);
    r->rc = rc;
    return rc;
}

static void *rank_thread(void *arg)
{
    run_rank(arg);
    return NULL;
}

static int run_threads(rank_run *runs, int n)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t *t = calloc((size_t)n, sizeof(*t));
    int started = 0, failed = 0;
    for (; t != NULL && started < n; started++) {
        if (pthread_create(&t[started], &attr, rank_thread, &runs[started]) !=
            0) {
            fprintf(stderr, "bench control: thread %d: %s\n", started,
                    strerror(errno));
            failed = 1;
            break;
        }
    }
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        failed |= runs[i].rc != 0;
    }
    pthread_attr_destroy(&attr);
    free(t);
    return failed || t == NULL ? -1 : 0;
}

/* Processes: each rank is "ftc bench control --worker ..." writing its exit
 * times to <dir>/<rank>. */
static int run_procs(const bench_cfg *cfg, rank_run *runs, int n)
{
    char dir[] = "/tmp/ftc-bench-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        return -1;
    }
    pid_t *pids = calloc((size_t)n, sizeof(*pids));
    int failed = pids == NULL;
    char ranks[16], iters[16], bytes[32], rank[16];
    snprintf(ranks, sizeof(ranks), "%d", cfg->ranks);
    snprintf(iters, sizeof(iters), "%d", cfg->iters);
    snprintf(bytes, sizeof(bytes), "%zu", cfg->bytes);
    for (int i = 0; !failed && i < n; i++) {
        snprintf(rank, sizeof(rank), "%d", i);
        char *args[] = {"bench",
                        "control",
                        "--worker",
                        (char *)cfg->addr,
                        (char *)cfg->prefix,
                        (char *)op_names[cfg->op],
                        ranks,
                        iters,
                        bytes,
                        rank,
                        dir,
                        NULL};
        pids[i] = bench_spawn_self(args);
        failed = pids[i] < 0;
    }
    failed |= bench_wait_all(pids, n, 600000) != 0;
    for (int i = 0; !failed && i < n; i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%d", dir, i);
        FILE *f = fopen(path, "rb");
        size_t want = (size_t)cfg->iters + 1;
        failed =
            f == NULL || fread(runs[i].exits, sizeof(int64_t), want, f) != want;
        if (f != NULL) {
            fclose(f);
        }
        unlink(path);
    }
    rmdir(dir);
    free(pids);
    return failed ? -1 : 0;
}

static int parse_op(const char *s, bench_op *op)
{
    for (int i = 0; i < 3; i++) {
        if (strcmp(s, op_names[i]) == 0) {
            *op = (bench_op)i;
            return 0;
        }
    }
    return -1;
}

/* Worker process entry ("ftc bench control --worker ..."): argv[1] is
 * "--worker", then the fields run_procs passes. */
static int worker_main(int argc, char **argv)
{
    argc--;
    argv++;
    if (argc != 9) {
        return 2;
    }
    bench_cfg cfg = {.addr = argv[1], .prefix = argv[2]};
    if (parse_op(argv[3], &cfg.op) != 0) {
        return 2;
    }
    cfg.ranks = (int)strtol(argv[4], NULL, 10);
    cfg.iters = (int)strtol(argv[5], NULL, 10);
    cfg.bytes = (size_t)strtoull(argv[6], NULL, 10);
    rank_run r = {.cfg = &cfg, .rank = (int)strtol(argv[7], NULL, 10)};
    r.exits = calloc((size_t)cfg.iters + 1, sizeof(int64_t));
    if (r.exits == NULL || run_rank(&r) != 0) {
        return 1;
    }
    char path[256];
    snprintf(path, sizeof(path), "%s/%d", argv[8], r.rank);
    FILE *f = fopen(path, "wb");
    int ok = f != NULL &&
             fwrite(r.exits, sizeof(int64_t), (size_t)cfg.iters + 1, f) ==
                 (size_t)cfg.iters + 1;
    if (f != NULL) {
        ok &= fclose(f) == 0;
    }
    free(r.exits);
    return ok ? 0 : 1;
}

/* Latency of round i = when its last rank left minus when the last rank
 * left round i - 1 (what ../shared/anchors/tcpstore_bench.py measures). */
static void report(const bench_cfg *cfg, rank_run *runs, int procs, int json)
{
    int n = cfg->iters;
    double *lat = calloc((size_t)n, sizeof(*lat));
    if (lat == NULL) {
        return;
    }
    int64_t prev = 0;
    for (int i = 0; i <= n; i++) {
        int64_t last = 0;
        for (int k = 0; k < cfg->ranks; k++) {
            if (runs[k].exits[i] > last) {
                last = runs[k].exits[i];
            }
        }
        if (i > 0) {
            lat[i - 1] = (double)(last - prev) / 1000.0;
        }
        prev = last;
    }
    double p50 = bench_percentile(lat, (size_t)n, 50);
    double p99 = bench_percentile(lat, (size_t)n, 99);
    if (json) {
        printf("{\"op\":\"%s\",\"ranks\":%d,\"bytes\":%zu,\"mode\":\"%s\","
               "\"iters\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
               op_names[cfg->op], cfg->ranks, cfg->bytes,
               procs ? "procs" : "threads", n, p50, p99);
    } else {
        printf("%-10s %6d %8zu %-8s %6d %10.1f %10.1f\n", op_names[cfg->op],
               cfg->ranks, cfg->bytes, procs ? "procs" : "threads", n, p50,
               p99);
    }
    fflush(stdout);
    free(lat);
}

typedef struct control_args {
    int ranks[32];
    int n_ranks;
    int ops; /* bit i: op_names[i] */
    int procs;
    int iters; /* 0: by the rank count */
    size_t bytes;
    const char *addr; /* NULL: an embedded store */
    int json;
} control_args;

static const ftc__cli_option options[] = {
    {"ranks", FTC__CLI_INT_LIST, FTC__CLI_ARRAY(control_args, ranks, n_ranks),
     .min = 1, .max = 100000, .metavar = "N[,N...]",
     .help = "rank counts, one case each"},
    {"op", FTC__CLI_ENUM_SET, FTC__CLI_FIELD(control_args, ops),
     .names = op_names, .metavar = "NAME[,...]", .help = "which collectives"},
    {"procs", FTC__CLI_FLAG, FTC__CLI_FIELD(control_args, procs),
     .help = "ranks are processes, not threads"},
    {"iters", FTC__CLI_INT, FTC__CLI_FIELD(control_args, iters), .min = 1,
     .max = 1000000, .metavar = "K", .help = "collectives per case",
     .default_text = "200, 50 above 64 ranks, 20 above 256"},
    {"bytes", FTC__CLI_SIZE, FTC__CLI_FIELD(control_args, bytes), .min = 0,
     .max = 1 << 30, .metavar = "B", .help = "all_gather payload per rank"},
    {"addr", FTC__CLI_STRING, FTC__CLI_FIELD(control_args, addr),
     .metavar = "HOST:PORT", .help = "a running store",
     .default_text = "an embedded ftc store"},
    {"json", FTC__CLI_FLAG, FTC__CLI_FIELD(control_args, json),
     .help = "one JSON object per line instead of a table"},
};

static const ftc__cli_command command = {
    .name = "bench control",
    .about = "Latency of control collectives over the store: p50 and p99 of\n"
             "the time between successive collectives completing on every\n"
             "rank. Ranks are threads (default) or processes (--procs), each\n"
             "with its own store connection.\n",
    FTC__CLI_OPTIONS(options),
};

/* Descriptors this process holds for a case: the embedded server's end
 * of every connection, and with threads the ranks' ends too. */
static long fds_needed(const bench_cfg *cfg, int procs, int embedded)
{
    return (long)cfg->ranks * ((embedded ? 1 : 0) + (procs ? 0 : 1)) + 64;
}

static int run_case(bench_cfg *cfg, int procs, int embedded, int json)
{
    if (bench_fd_room(fds_needed(cfg, procs, embedded)) != 0) {
        fprintf(stderr, "bench control: %s with %d ranks failed\n",
                op_names[cfg->op], cfg->ranks);
        return -1;
    }
    rank_run *runs = calloc((size_t)cfg->ranks, sizeof(*runs));
    int64_t *exits =
        calloc((size_t)cfg->ranks * ((size_t)cfg->iters + 1), sizeof(*exits));
    int rc = runs == NULL || exits == NULL ? -1 : 0;
    for (int i = 0; rc == 0 && i < cfg->ranks; i++) {
        runs[i] = (rank_run){.cfg = cfg,
                             .rank = i,
                             .exits = exits + (size_t)i * (cfg->iters + 1)};
    }
    if (rc == 0) {
        rc = procs ? run_procs(cfg, runs, cfg->ranks)
                   : run_threads(runs, cfg->ranks);
    }
    if (rc == 0) {
        report(cfg, runs, procs, json);
    } else {
        fprintf(stderr, "bench control: %s with %d ranks failed\n",
                op_names[cfg->op], cfg->ranks);
    }
    free(exits);
    free(runs);
    return rc;
}

int ftc__cmd_bench_control(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0) {
        return worker_main(argc, argv);
    }
    control_args a = {
        .ranks = {4, 16, 64, 256, 1024}, .n_ranks = 5, .ops = 7, .bytes = 16};
    int rc = ftc__cli_parse(&command, &a, argc, argv, NULL);
    if (rc != FTC__CLI_PARSED) {
        return rc;
    }
    ftc_store_server *server = NULL;
    char local[64];
    const char *addr = a.addr;
    if (addr == NULL) {
        if (ftc_store_server_create(NULL, &server) != 0) {
            fprintf(stderr, "bench control: %s\n", ftc_last_error());
            return 1;
        }
        snprintf(local, sizeof(local), "127.0.0.1:%d",
                 ftc_store_server_port(server));
        addr = local;
    }
    if (!a.json) {
        printf("%-10s %6s %8s %-8s %6s %10s %10s\n", "op", "ranks", "bytes",
               "mode", "iters", "p50_us", "p99_us");
    }
    int failed = 0;
    for (int op = 0; op_names[op] != NULL; op++) {
        for (int i = 0; (a.ops & (1 << op)) && i < a.n_ranks; i++) {
            bench_cfg cfg = {.addr = addr,
                             .bytes = a.bytes,
                             .op = (bench_op)op,
                             .ranks = a.ranks[i]};
            cfg.iters = a.iters > 0 ? a.iters
                                    : (cfg.ranks <= 64    ? 200
                                       : cfg.ranks <= 256 ? 50
                                                          : 20);
            char prefix[96];
            snprintf(prefix, sizeof(prefix), "bench/%s/%d/%d/%" PRId64,
                     op_names[op], cfg.ranks, (int)getpid(), (int64_t)now_ns());
            cfg.prefix = prefix;
            if (run_case(&cfg, a.procs, server != NULL, a.json) != 0) {
                failed = 1;
            }
        }
    }
    ftc_store_server_destroy(server);
    return failed ? 1 : 0;
}
