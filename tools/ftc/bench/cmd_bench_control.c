/* ftc bench control: latency of barrier, all_gather and all_sum over the
 * store, for 4 to 1024 ranks as threads of one process or as processes. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_stats.h"
#include "cmd.h"
#include "ftc/ftc.h"

typedef enum { OP_BARRIER, OP_ALL_GATHER, OP_ALL_SUM } bench_op;
static const char *op_names[] = {"barrier", "all_gather", "all_sum"};

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

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ftc bench control [--ranks N[,N...]] "
            "[--op barrier|all_gather|all_sum[,...]]\n"
            "                         [--procs] [--iters K] [--bytes B] "
            "[--addr HOST:PORT] [--json]\n\n"
            "Latency of control collectives over the store: p50 and p99 of\n"
            "the time between successive collectives completing on every\n"
            "rank. Ranks are threads (default) or processes (--procs), each\n"
            "with its own store connection. Without --addr an embedded ftc\n"
            "store serves the run. Defaults: --ranks 4,16,64,256,1024\n"
            "--op barrier,all_gather,all_sum --bytes 16; --iters scales\n"
            "down with the rank count.\n");
}

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
    static const struct option longopts[] = {
        {"ranks", required_argument, NULL, 'r'},
        {"op", required_argument, NULL, 'o'},
        {"procs", no_argument, NULL, 'p'},
        {"iters", required_argument, NULL, 'i'},
        {"bytes", required_argument, NULL, 'b'},
        {"addr", required_argument, NULL, 'a'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    if (argc > 1 && strcmp(argv[1], "--worker") == 0) {
        return worker_main(argc, argv);
    }
    char ranks_list[256] = "4,16,64,256,1024";
    char ops_list[128] = "barrier,all_gather,all_sum";
    const char *addr = NULL;
    int procs = 0, json = 0, iters = 0;
    size_t bytes = 16;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            snprintf(ranks_list, sizeof(ranks_list), "%s", optarg);
            break;
        case 'o':
            snprintf(ops_list, sizeof(ops_list), "%s", optarg);
            break;
        case 'p':
            procs = 1;
            break;
        case 'i':
            iters = (int)strtol(optarg, NULL, 10);
            break;
        case 'b':
            bytes = (size_t)strtoull(optarg, NULL, 10);
            break;
        case 'a':
            addr = optarg;
            break;
        case 'j':
            json = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    ftc_store_server *server = NULL;
    char local[64];
    if (addr == NULL) {
        if (ftc_store_server_create(NULL, &server) != 0) {
            fprintf(stderr, "bench control: %s\n", ftc_last_error());
            return 1;
        }
        snprintf(local, sizeof(local), "127.0.0.1:%d",
                 ftc_store_server_port(server));
        addr = local;
    }
    if (!json) {
        printf("%-10s %6s %8s %-8s %6s %10s %10s\n", "op", "ranks", "bytes",
               "mode", "iters", "p50_us", "p99_us");
    }
    int failed = 0;
    char *save_ops = NULL;
    for (char *op = strtok_r(ops_list, ",", &save_ops); op != NULL;
         op = strtok_r(NULL, ",", &save_ops)) {
        bench_cfg cfg = {.addr = addr, .bytes = bytes};
        if (parse_op(op, &cfg.op) != 0) {
            fprintf(stderr, "bench control: unknown op '%s'\n", op);
            failed = 1;
            break;
        }
        char list[256];
        snprintf(list, sizeof(list), "%s", ranks_list);
        char *save_ranks = NULL;
        for (char *n = strtok_r(list, ",", &save_ranks); n != NULL;
             n = strtok_r(NULL, ",", &save_ranks)) {
            cfg.ranks = (int)strtol(n, NULL, 10);
            cfg.iters = iters > 0 ? iters
                                  : (cfg.ranks <= 64    ? 200
                                     : cfg.ranks <= 256 ? 50
                                                        : 20);
            char prefix[96];
            snprintf(prefix, sizeof(prefix), "bench/%s/%d/%d/%" PRId64, op,
                     cfg.ranks, (int)getpid(), (int64_t)now_ns());
            cfg.prefix = prefix;
            if (cfg.ranks < 1 ||
                run_case(&cfg, procs, server != NULL, json) != 0) {
                failed = 1;
            }
        }
    }
    ftc_store_server_destroy(server);
    return failed ? 1 : 0;
}
