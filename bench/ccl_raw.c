/* ccl_raw: raw oneCCL timed exactly as `ftc bench pg` times ftc, the
 * anchor of bench/pg_vs_oneccl.py. Starts an embedded ftc store and N
 * local ranks (this program re-run), which load oneCCL's C API with ftc's
 * loader (src/pg/xccl/ccl_api.h: dlopen, the environment, the unique id
 * through the store), then call onecclAllReduce, Broadcast, AllGather,
 * ReduceScatter and AllToAll on host buffers directly: nothing of ftc is
 * on the timed path. The measurement (barrier, slowest rank's time,
 * percentiles, back to back) is tools/ftc/bench/bench_coll.c, the one
 * `ftc bench pg` uses; oneCCL's C API has no barrier, so a 1-element
 * allreduce stands in for it. Output: the same table or JSON lines, with
 * backend "oneccl-shm" or "oneccl-tcp".
 *
 * --provider shm (default) is oneCCL's best CPU configuration
 * (../shared/reference/vendor-ccl.md): FI_PROVIDER=shm, CCL_ATL_SHM=1;
 * CCL_YIELD=sched_yield unless set; loopback interfaces (ftc's loader). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_coll.h"
#include "bench/bench_stats.h"
#include "cli_args.h"
#include "ftc/ftc.h"
#include "pg/xccl/ccl_api.h"

#define MAX_SIZES 32
#define MAX_RANKS 64

static const char *const providers[] = {"shm", "tcp", NULL};

typedef struct cfg {
    int ranks;
    int provider; /* index in providers */
    int ops;
    size_t sizes[MAX_SIZES];
    int nsizes;
    bool json;
    double budget_s;
    int iters;
    const char *store; /* worker */
    int rank;          /* worker */
    const char *prefix;
} cfg;

static const ftc__cli_option options[] = {
    {"ranks", FTC__CLI_INT, FTC__CLI_FIELD(cfg, ranks), .min = 1,
     .max = MAX_RANKS, .metavar = "N", .help = "ranks"},
    {"provider", FTC__CLI_ENUM, FTC__CLI_FIELD(cfg, provider),
     .names = providers, .metavar = "NAME",
     .help = "libfabric provider: shm (with CCL_ATL_SHM=1) or tcp"},
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
     .real_max = 3600, .metavar = "S", .help = "seconds per op and size"},
    {"json", FTC__CLI_FLAG, FTC__CLI_FIELD(cfg, json),
     .help = "JSON lines as `ftc bench pg --json`"},
    {"worker-store", FTC__CLI_STRING, FTC__CLI_FIELD(cfg, store),
     .metavar = "ADDR"},
    {"worker-rank", FTC__CLI_INT, FTC__CLI_FIELD(cfg, rank), .min = 0,
     .max = MAX_RANKS - 1, .metavar = "R"},
    {"worker-prefix", FTC__CLI_STRING, FTC__CLI_FIELD(cfg, prefix),
     .metavar = "PREFIX"},
};

static const ftc__cli_command command = {
    .name = "ccl_raw",
    .about = "Times raw oneCCL collectives between N local ranks the way\n"
             "`ftc bench pg` times ftc's (see bench/ccl_raw.c). Needs\n"
             "FTC_CCL_LIBRARY or libccl.so.2 on the loader path.\n",
    FTC__CLI_OPTIONS(options),
};

typedef struct ccl {
    const ftc__ccl_api *api;
    ftc__ccl_comm *comm;
    size_t size;
} ccl;

static int check(const ccl *c, int result, const char *what)
{
    return ftc__ccl_error(c->api, result, c->comm, what);
}

static int ccl_run(void *ctx, int op, const bench_coll_bufs *b)
{
    const ccl *c = ctx;
    const ftc__ccl_api *a = c->api;
    int f32 = FTC__CCL_FLOAT32;
    switch (op) {
    case BENCH_COLL_ALLREDUCE:
        return check(c,
                     a->all_reduce(b->in, b->in, b->in_n, f32, FTC__CCL_SUM,
                                   c->comm, NULL),
                     "allreduce");
    case BENCH_COLL_BROADCAST:
        return check(c,
                     a->broadcast(b->in, b->in, b->in_n, f32, 0, c->comm, NULL),
                     "broadcast");
    case BENCH_COLL_ALLGATHER:
        return check(c,
                     a->all_gather(b->in, b->out, b->in_n, f32, c->comm, NULL),
                     "allgather");
    case BENCH_COLL_REDUCE_SCATTER:
        return check(c,
                     a->reduce_scatter(b->in, b->out, b->out_n, f32,
                                       FTC__CCL_SUM, c->comm, NULL),
                     "reduce_scatter");
    default:
        return check(
            c,
            a->all_to_all(b->in, b->out, b->in_n / c->size, f32, c->comm, NULL),
            "alltoall");
    }
}

static int ccl_barrier(void *ctx)
{
    const ccl *c = ctx;
    float one = 1;
    return check(c,
                 c->api->all_reduce(&one, &one, 1, FTC__CCL_FLOAT32,
                                    FTC__CCL_SUM, c->comm, NULL),
                 "barrier allreduce");
}

static int ccl_max(void *ctx, double *v, size_t n)
{
    const ccl *c = ctx;
    return check(c,
                 c->api->all_reduce(v, v, n, FTC__CCL_FLOAT64, FTC__CCL_MAX,
                                    c->comm, NULL),
                 "max allreduce");
}

static int ccl_bcast(void *ctx, double *v, size_t n)
{
    const ccl *c = ctx;
    return check(c,
                 c->api->broadcast(v, v, n, FTC__CCL_FLOAT64, 0, c->comm, NULL),
                 "broadcast");
}

static int worker(const cfg *c)
{
    const char *prov = providers[c->provider];
    setenv("FI_PROVIDER", prov, 1);
    if (strcmp(prov, "shm") == 0) {
        setenv("CCL_ATL_SHM", "1", 1);
    }
    setenv("CCL_YIELD", "sched_yield", 0);
    char name[32];
    snprintf(name, sizeof(name), "oneccl-%s", prov);
    ftc__ccl_env_hint hint = {c->rank, c->ranks, 1};
    ccl cc = {NULL, NULL, (size_t)c->ranks};
    ftc_store_client *store = NULL;
    int rc = ftc__ccl_load(&hint, &cc.api);
    rc = rc ? rc : ftc_store_client_connect(c->store, NULL, &store);
    if (rc == 0) {
        rc = ftc__ccl_comm_create(cc.api, store, c->prefix, c->rank, c->ranks,
                                  ftc__deadline_in_ms(120000), &cc.comm);
    }
    double *lat = calloc(1000000, sizeof(double));
    rc = rc == 0 && lat == NULL ? FTC_ENOMEM : rc;
    bench_coll_comm comm = {.ctx = &cc,
                            .rank = c->rank,
                            .size = c->ranks,
                            .run = ccl_run,
                            .barrier = ccl_barrier,
                            .max = ccl_max,
                            .bcast = ccl_bcast};
    if (rc == 0 && c->rank == 0 && !c->json) {
        printf("# ccl_raw: %d ranks, f32, loopback, oneCCL %d at %s, "
               "FI_PROVIDER=%s CCL_ATL_SHM=%s CCL_YIELD=%s\n",
               c->ranks, cc.api->version, cc.api->path, getenv("FI_PROVIDER"),
               getenv("CCL_ATL_SHM") ? getenv("CCL_ATL_SHM") : "-",
               getenv("CCL_YIELD"));
        bench_coll_print_header();
    }
    for (int op = 0; rc == 0 && op < BENCH_COLL_NOPS; op++) {
        for (int s = 0; rc == 0 && (c->ops & (1 << op)) && s < c->nsizes; s++) {
            bench_coll_result res;
            rc = bench_coll_one(&comm, op, c->sizes[s], c->iters, c->budget_s,
                                lat, &res);
            if (rc == 0 && c->rank == 0) {
                bench_coll_print(&res, name, c->json);
            }
        }
    }
    if (rc != 0) {
        fprintf(stderr, "ccl_raw: rank %d: %s (%s)\n", c->rank,
                ftc_strerror(rc), ftc_last_error());
    }
    free(lat);
    if (cc.comm != NULL) {
        ftc__ccl_comm_destroy(cc.api, cc.comm);
    }
    ftc_store_client_close(store);
    return rc == 0 ? 0 : 1;
}

static int launch(const cfg *c, int argc, char **argv)
{
    ftc_store_server_opts so;
    ftc_store_server_opts_init(&so);
    so.bind_host = "127.0.0.1";
    ftc_store_server *server = NULL;
    if (ftc_store_server_create(&so, &server) != 0) {
        fprintf(stderr, "ccl_raw: store: %s\n", ftc_last_error());
        return 1;
    }
    char store[64], prefix[64], rank[MAX_RANKS][16];
    snprintf(store, sizeof(store), "127.0.0.1:%d",
             ftc_store_server_port(server));
    snprintf(prefix, sizeof(prefix), "ccl-raw/%d", (int)getpid());
    char *args[64];
    int na = 0;
    for (int i = 1; i < argc && na < 56; i++) {
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
        pids[r] = bench_spawn_self(args);
    }
    /* An hour at most: a oneCCL rank whose peer died never returns. */
    int failed = bench_wait_all(pids, c->ranks, 3600 * 1000);
    ftc_store_server_destroy(server);
    return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    cfg c = {.ranks = 2,
             .ops = (1 << BENCH_COLL_NOPS) - 1,
             .sizes = {4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20},
             .nsizes = 5,
             .budget_s = 5,
             .rank = -1};
    int rc = ftc__cli_parse(&command, &c, argc, argv, NULL);
    if (rc != FTC__CLI_PARSED) {
        return rc;
    }
    if (c.ops & (1 << BENCH_COLL_NOPS)) { /* "all" */
        c.ops = (1 << BENCH_COLL_NOPS) - 1;
    }
    return c.rank >= 0 ? worker(&c) : launch(&c, argc, argv);
}
