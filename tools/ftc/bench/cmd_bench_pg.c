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
#include "bench/bench_coll.h"
#include "bench/bench_stats.h"
#include "bench/cmd_bench.h"
#include "ftc/ftc.h"

#define MAX_SIZES 32
#define MAX_RANKS 64
#define MAX_BACKENDS 8

static const char *const algo_names[] = {"auto", "ring",  "rdouble", "direct",
                                         "tree", "chain", "hier",    NULL};

typedef struct cfg {
    int ranks;
    int ops; /* bit i: bench_coll_op_names[i] */
    size_t sizes[MAX_SIZES];
    int nsizes;
    const char *backend_list; /* --backend */
    char *backend_copy;       /* split in place into backends */
    const char *backends[MAX_BACKENDS];
    int nbackends;
    bool json;
    bool shared_buffers;
    double budget_s; /* per (op, size) */
    int iters;       /* 0: by size */
    int rebuilds;
    int spin_us;
    int algo;
    int hosts;
    int streams;
    size_t segment;
    const char *store; /* worker: store address */
    int rank;          /* worker */
    const char *prefix;
} cfg;

static const ftc__cli_option options[] = {
    {"ranks", FTC__CLI_INT, FTC__CLI_FIELD(cfg, ranks), .min = 1,
     .max = MAX_RANKS, .metavar = "N", .help = "ranks"},
    {"backend", FTC__CLI_STRING, FTC__CLI_FIELD(cfg, backend_list),
     .metavar = "LIST",
     .help = "backends by name (tcp, xccl, ...), comma-separated: one block "
             "each, interleaved per op and size; NAME+mac, NAME+encrypt or "
             "NAME+off runs it with a token and that message protection, "
             "NAME+shm or "
             "NAME+tcp with that transport between these local ranks",
     .env = "FTC_PG_BACKEND"},
    {"op", FTC__CLI_ENUM_SET, FTC__CLI_FIELD(cfg, ops),
     .names = bench_coll_op_names, .metavar = "LIST", .help = "collectives",
     .default_text = "all"},
    {"sizes", FTC__CLI_SIZE_LIST, FTC__CLI_ARRAY(cfg, sizes, nsizes), .min = 1,
     .max = INT64_MAX, .metavar = "LIST",
     .help = "per-rank buffer sizes with K/M/G suffixes"},
    {"iters", FTC__CLI_INT, FTC__CLI_FIELD(cfg, iters), .min = 1,
     .max = 1000000, .metavar = "K", .help = "iterations per size",
     .default_text = "500 at 4K down to 12 at 64M, within --budget"},
    {"budget", FTC__CLI_DOUBLE, FTC__CLI_FIELD(cfg, budget_s), .real_min = 1,
     .real_max = 3600, .metavar = "S",
     .help = "seconds per op, size and backend"},
    {"json", FTC__CLI_FLAG, FTC__CLI_FIELD(cfg, json),
     .help = "one JSON object per line instead of a table (backend, op, "
             "ranks, bytes, count, iters, p50_us, p10_us, p90_us, algbw_gbps, "
             "busbw_gbps, b2b_us, b2b_busbw_gbps)"},
    {"shared-buffers", FTC__CLI_FLAG, FTC__CLI_FIELD(cfg, shared_buffers),
     .help = "buffers from ftc_pg_mem_alloc (Baby groups move them without "
             "a copy; ordinary memory to other backends)"},
    {"rebuilds", FTC__CLI_INT, FTC__CLI_FIELD(cfg, rebuilds), .min = 0,
     .max = 10000, .metavar = "K",
     .help = "after the collectives, K times per backend: every rank aborts "
             "its group, destroys it, creates a new one and runs a 1-float "
             "allreduce on it; prints that time (p50, min, max over K, the "
             "slowest rank's)"},
    {"spin", FTC__CLI_INT, FTC__CLI_FIELD(cfg, spin_us), .min = -2,
     .max = 1000000, .metavar = "US",
     .help = "ftc_pg_opts.spin_us (0: never poll)",
     .default_text = "-2 = auto"},
    {"algo", FTC__CLI_ENUM, FTC__CLI_FIELD(cfg, algo), .names = algo_names,
     .metavar = "NAME", .help = "the algorithm; auto: by size"},
    {"hosts", FTC__CLI_INT, FTC__CLI_FIELD(cfg, hosts), .min = 1,
     .max = MAX_RANKS, .metavar = "H",
     .help = "rank r acts as if on host r % H (FTC_PG_HOST_ID): shared "
             "memory within a host, TCP between, hierarchical collectives "
             "where every host has the same number of ranks"},
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
             "reduce_scatter: input), f32 elements. With several backends,\n"
             "each (op, size) runs on each in turn, so load hits them alike.\n",
    .notes = "A backend that cannot be created prints \"NAME: not available:\n"
             "REASON\" on stderr and the others run. Exit status: 0 when\n"
             "every available backend ran, 1 when a run failed or none was\n"
             "available, 2 for bad usage.\n",
    FTC__CLI_OPTIONS(options),
};

/* ------------------------------------------------------------- worker */

/* Waits for and releases *w when the call that made it (rc) succeeded. */
static int wait_work(int rc, ftc_work **w)
{
    if (rc == 0) {
        rc = ftc_work_wait(*w, FTC_TIMEOUT_INFINITE);
        ftc_work_release(*w);
    }
    return rc;
}

static int pg_run(void *ctx, int op, const bench_coll_bufs *b)
{
    ftc_pg *pg = ctx;
    ftc_tensor in = ftc_tensor_cpu(b->in, b->in_n, FTC_DTYPE_F32);
    ftc_tensor out = ftc_tensor_cpu(b->out, b->out_n, FTC_DTYPE_F32);
    ftc_work *w = NULL;
    int rc;
    switch (op) {
    case BENCH_COLL_ALLREDUCE:
        rc = ftc_pg_allreduce(pg, &in, &in, FTC_OP_SUM, NULL, &w);
        break;
    case BENCH_COLL_BROADCAST:
        rc = ftc_pg_broadcast(pg, &in, 0, NULL, &w);
        break;
    case BENCH_COLL_ALLGATHER:
        rc = ftc_pg_allgather(pg, &in, &out, NULL, &w);
        break;
    case BENCH_COLL_REDUCE_SCATTER:
        rc = ftc_pg_reduce_scatter(pg, &in, &out, FTC_OP_SUM, NULL, &w);
        break;
    default:
        rc = ftc_pg_alltoall(pg, &in, &out, NULL, &w);
        break;
    }
    return wait_work(rc, &w);
}

static void *shared_alloc(size_t bytes)
{
    void *p = NULL;
    return ftc_pg_mem_alloc(bytes, &p) == 0 ? p : NULL;
}

static int pg_barrier(void *ctx)
{
    ftc_work *w = NULL;
    int rc = ftc_pg_barrier(ctx, NULL, &w);
    return wait_work(rc, &w);
}

static int pg_max(void *ctx, double *v, size_t n)
{
    ftc_tensor t = ftc_tensor_cpu(v, n, FTC_DTYPE_F64);
    ftc_work *w = NULL;
    int rc = ftc_pg_allreduce(ctx, &t, &t, FTC_OP_MAX, NULL, &w);
    return wait_work(rc, &w);
}

static int pg_bcast(void *ctx, double *v, size_t n)
{
    ftc_tensor t = ftc_tensor_cpu(v, n, FTC_DTYPE_F64);
    ftc_work *w = NULL;
    int rc = ftc_pg_broadcast(ctx, &t, 0, NULL, &w);
    return wait_work(rc, &w);
}

/* What a --backend entry's suffixes choose. */
typedef struct entry_opts {
    int protect;   /* +mac, +encrypt, +off; FTC_PG_PROTECT_DEFAULT: no token */
    int transport; /* +shm, +tcp; FTC_PG_TRANSPORT_DEFAULT */
} entry_opts;

/* The backend of a --backend entry ("tcp", "tcp+mac", "tcp+tcp+off")
 * into name, and its suffixes into eo. -1 for an unknown suffix. */
static int parse_entry(const char *entry, char *name, size_t cap,
                       entry_opts *eo)
{
    *eo = (entry_opts){FTC_PG_PROTECT_DEFAULT, FTC_PG_TRANSPORT_DEFAULT};
    const char *plus = strchr(entry, '+');
    size_t n = plus != NULL ? (size_t)(plus - entry) : strlen(entry);
    snprintf(name, cap, "%.*s", (int)n, entry);
    while (plus != NULL) {
        const char *word = plus + 1;
        plus = strchr(word, '+');
        size_t len = plus != NULL ? (size_t)(plus - word) : strlen(word);
        static const struct {
            const char *word;
            int is_transport, value;
        } suffixes[] = {{"mac", 0, FTC_PG_PROTECT_MAC},
                        {"encrypt", 0, FTC_PG_PROTECT_ENCRYPT},
                        {"off", 0, FTC_PG_PROTECT_OFF},
                        {"shm", 1, FTC_PG_TRANSPORT_SHM},
                        {"tcp", 1, FTC_PG_TRANSPORT_TCP}};
        size_t k = 0;
        while (k < sizeof(suffixes) / sizeof(suffixes[0]) &&
               (strlen(suffixes[k].word) != len ||
                strncmp(word, suffixes[k].word, len) != 0)) {
            k++;
        }
        if (k == sizeof(suffixes) / sizeof(suffixes[0])) {
            return -1;
        }
        *(suffixes[k].is_transport ? &eo->transport : &eo->protect) =
            suffixes[k].value;
    }
    return 0;
}

/* Creates this rank's group on backend b (under "<prefix>/<name>"), then
 * every rank publishes whether it could and reads the others', so all
 * agree: *pg stays NULL on every rank when one failed, and rank 0 says
 * why (its own reason, else the first failed rank's). 0, or the store's
 * error. */
static int create_backend(const cfg *c, ftc_store_client *store, int b,
                          const char *prefix, ftc_pg **pg)
{
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.host = "127.0.0.1";
    char name[64];
    entry_opts eo;
    parse_entry(c->backends[b], name, sizeof(name), &eo);
    o.protect = eo.protect;
    o.transport = eo.transport;
    o.backend = name;
    /* With a protection named, the group has a token (the bench's own, so
     * FTC_TOKEN in the environment does not change the rows). */
    o.token = o.protect != FTC_PG_PROTECT_DEFAULT ? "ftc bench pg" : NULL;
    o.spin_us = c->spin_us;
    o.streams = c->streams;
    o.segment_bytes = c->segment;
    bool hier = c->algo == FTC_ALGO_HIER;
    o.allreduce_algo =
        c->algo == FTC_ALGO_RING || c->algo == FTC_ALGO_RDOUBLE || hier
            ? c->algo
            : 0;
    o.allgather_algo =
        c->algo == FTC_ALGO_RING || c->algo == FTC_ALGO_DIRECT || hier ? c->algo
                                                                       : 0;
    o.broadcast_algo =
        c->algo == FTC_ALGO_TREE || c->algo == FTC_ALGO_CHAIN || hier ? c->algo
                                                                      : 0;
    if (c->hosts > 1) {
        char id[32];
        snprintf(id, sizeof(id), "bench-host-%d", c->rank % c->hosts);
        setenv("FTC_PG_HOST_ID", id, 1);
    }
    char key[320], why[512] = "ok";
    int rc = ftc_pg_create(store, prefix, c->rank, c->ranks, &o, pg);
    if (rc != 0) {
        snprintf(why, sizeof(why), "%s (%s)", ftc_last_error(),
                 ftc_strerror(rc));
    }
    snprintf(key, sizeof(key), "%s/created/%d", prefix, c->rank);
    int src = ftc_store_client_set(store, key, why, strlen(why), 60000);
    bool all_ok = rc == 0;
    char first[512] = "";
    for (int r = 0; src == 0 && r < c->ranks; r++) {
        void *v = NULL;
        size_t len = 0;
        snprintf(key, sizeof(key), "%s/created/%d", prefix, r);
        src = ftc_store_client_get(store, key, &v, &len, 600000);
        if (src == 0 && !(len == 2 && memcmp(v, "ok", 2) == 0)) {
            if (all_ok) {
                snprintf(first, sizeof(first), "rank %d: %.*s", r,
                         (int)(len < 400 ? len : 400), (const char *)v);
            }
            all_ok = false;
        }
        ftc_free(v);
    }
    if (!all_ok) {
        if (c->rank == 0) {
            fprintf(stderr, "%s: not available: %s\n", c->backends[b],
                    rc != 0 ? why : first);
        }
        ftc_pg_destroy(*pg);
        *pg = NULL;
    }
    return src;
}

/* --rebuilds: what a membership change costs a group on backend b, from
 * the abort to the first call on its replacement (each rank's time; the
 * slowest rank's goes in lat[i]). */
static int time_rebuilds(const cfg *c, ftc_store_client *store, int b,
                         ftc_pg **pg, double *lat)
{
    int rc = 0;
    for (int i = 0; rc == 0 && *pg != NULL && i < c->rebuilds; i++) {
        /* Every rank aborts at once, as on a membership change. The
         * store's barrier, not the group's: a peer's abort may fail a
         * collective this rank has not seen complete yet. */
        char prefix[256];
        snprintf(prefix, sizeof(prefix), "%s/%s/rebuild%d", c->prefix,
                 c->backends[b], i);
        rc = ftc_store_client_barrier(store, prefix, c->rank, c->ranks, NULL,
                                      60000);
        int64_t t0 = ftc__now_ns();
        ftc_pg_abort(*pg);
        ftc_pg_destroy(*pg);
        *pg = NULL;
        rc = rc != 0 ? rc : create_backend(c, store, b, prefix, pg);
        double one = 1;
        rc = rc != 0 || *pg == NULL ? (rc != 0 ? rc : FTC_EPEER)
                                    : pg_max(*pg, &one, 1);
        lat[i] = (double)(ftc__now_ns() - t0) / 1e6;
    }
    rc = rc != 0 ? rc : pg_max(*pg, lat, (size_t)c->rebuilds);
    if (rc == 0 && c->rank == 0) {
        double p50 = bench_percentile(lat, (size_t)c->rebuilds, 50);
        double lo = bench_percentile(lat, (size_t)c->rebuilds, 0);
        double hi = bench_percentile(lat, (size_t)c->rebuilds, 100);
        if (c->json) {
            printf("{\"backend\":\"%s\",\"op\":\"rebuild\",\"ranks\":%d,"
                   "\"iters\":%d,\"p50_ms\":%.2f,\"min_ms\":%.2f,"
                   "\"max_ms\":%.2f}\n",
                   c->backends[b], c->ranks, c->rebuilds, p50, lo, hi);
        } else {
            printf("# %-14s abort -> new group -> first allreduce: p50 %.2f "
                   "ms, min %.2f, max %.2f (%d rebuilds)\n",
                   c->backends[b], p50, lo, hi, c->rebuilds);
        }
    }
    return rc;
}

static int worker(const cfg *c)
{
    ftc_store_client *store = NULL;
    ftc_pg *pgs[MAX_BACKENDS] = {NULL};
    bench_coll_comm comms[MAX_BACKENDS];
    int rc = ftc_store_client_connect(c->store, NULL, &store);
    int available = 0;
    for (int b = 0; rc == 0 && b < c->nbackends; b++) {
        char prefix[256];
        snprintf(prefix, sizeof(prefix), "%s/%s", c->prefix, c->backends[b]);
        rc = create_backend(c, store, b, prefix, &pgs[b]);
        comms[b] = (bench_coll_comm){
            .ctx = pgs[b],
            .rank = c->rank,
            .size = c->ranks,
            .run = pg_run,
            .barrier = pg_barrier,
            .max = pg_max,
            .bcast = pg_bcast,
            .alloc = c->shared_buffers ? shared_alloc : NULL,
            .release = c->shared_buffers ? ftc_pg_mem_free : NULL};
        available += pgs[b] != NULL;
    }
    double *lat = calloc(1000000, sizeof(double));
    rc = rc == 0 && lat == NULL ? FTC_ENOMEM : rc;
    if (rc == 0 && available > 0 && c->rank == 0 && !c->json) {
        printf("# ftc bench pg: %d ranks, f32, loopback, %s, backends",
               c->ranks,
               c->shared_buffers ? "shared buffers" : "ordinary buffers");
        for (int b = 0; b < c->nbackends; b++) {
            printf(pgs[b] != NULL ? " %s" : " (%s: not available)",
                   c->backends[b]);
        }
        printf("\n");
        bench_coll_print_header();
    }
    for (int op = 0; rc == 0 && op < BENCH_COLL_NOPS; op++) {
        for (int s = 0; rc == 0 && (c->ops & (1 << op)) && s < c->nsizes; s++) {
            for (int b = 0; rc == 0 && b < c->nbackends; b++) {
                bench_coll_result res;
                if (pgs[b] == NULL) {
                    continue;
                }
                rc = bench_coll_one(&comms[b], op, c->sizes[s], c->iters,
                                    c->budget_s, lat, &res);
                if (rc == 0 && c->rank == 0) {
                    bench_coll_print(&res, c->backends[b], c->json);
                }
            }
        }
    }
    for (int b = 0; rc == 0 && c->rebuilds > 0 && b < c->nbackends; b++) {
        if (pgs[b] != NULL) {
            rc = time_rebuilds(c, store, b, &pgs[b], lat);
        }
    }
    if (rc != 0) {
        fprintf(stderr, "ftc bench pg: rank %d: %s (%s)\n", c->rank,
                ftc_strerror(rc), ftc_last_error());
    }
    free(lat);
    for (int b = 0; b < c->nbackends; b++) {
        ftc_pg_destroy(pgs[b]);
    }
    ftc_store_client_close(store);
    return rc == 0 && available > 0 ? 0 : 1;
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

/* --backend's names into c->backends: none empty, none twice. */
static int split_backends(cfg *c)
{
    c->backend_copy = strdup(c->backend_list);
    if (c->backend_copy == NULL) {
        return 1;
    }
    char *save = NULL;
    for (char *p = c->backend_copy;; p = NULL) {
        char *name = strtok_r(p, ",", &save);
        if (name == NULL) {
            break;
        }
        if (c->nbackends == MAX_BACKENDS) {
            return ftc__cli_usage_error(&command, "--backend: at most %d names",
                                        MAX_BACKENDS);
        }
        char base[64];
        entry_opts eo;
        if (parse_entry(name, base, sizeof(base), &eo) != 0) {
            return ftc__cli_usage_error(&command,
                                        "--backend: %s: a suffix is +mac, "
                                        "+encrypt or +off (protection), "
                                        "+shm or +tcp "
                                        "(transport)",
                                        name);
        }
        for (int i = 0; i < c->nbackends; i++) {
            if (strcmp(c->backends[i], name) == 0) {
                return ftc__cli_usage_error(&command, "--backend: %s twice",
                                            name);
            }
        }
        c->backends[c->nbackends++] = name;
    }
    if (c->nbackends == 0) {
        return ftc__cli_usage_error(&command, "--backend: no name in '%s'",
                                    c->backend_list);
    }
    return 0;
}

int bench_pg_main(int argc, char **argv)
{
    ftc_pg_opts defaults;
    ftc_pg_opts_init(&defaults);
    cfg c = {.ranks = 2,
             .ops = (1 << BENCH_COLL_NOPS) - 1,
             .backend_list = "tcp",
             .sizes = {4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20},
             .nsizes = 5,
             .budget_s = 5,
             .spin_us = defaults.spin_us,
             .streams = defaults.streams,
             .segment = defaults.segment_bytes,
             .hosts = 1,
             .rank = -1};
    int rc = ftc__cli_parse(&command, &c, argc, argv, NULL);
    if (rc != FTC__CLI_PARSED) {
        return rc;
    }
    if (c.ops & (1 << BENCH_COLL_NOPS)) { /* "all" */
        c.ops = (1 << BENCH_COLL_NOPS) - 1;
    }
    /* The aborts of --rebuilds are deliberate: their warnings (and the
     * workers', who inherit this) would drown the table. */
    if (c.rebuilds > 0 && getenv("FTC_LOG") == NULL) {
        setenv("FTC_LOG", "error", 0);
    }
    rc = split_backends(&c);
    if (rc == 0) {
        rc = c.rank >= 0 ? worker(&c) : launch(&c, argc, argv);
    }
    free(c.backend_copy);
    return rc;
}
