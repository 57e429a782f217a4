/* Every collective x every dtype x every op x every algorithm, between
 * real processes on loopback, for one group size (argument), with counts
 * 0, 1, odd, not divisible by the group size, and a few thousand (and
 * the hierarchical algorithms where the ranks sit on several hosts); plus a
 * 64 MiB subset (f32 sum allreduce, allgather, reduce_scatter and
 * broadcast). Each
 * result is compared bit for bit with a locally computed reference. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_kit.h"

typedef struct variant {
    int coll, algo;
    bool reducing;
} variant;

static const variant variants[] = {
    {PGT_ALLREDUCE, FTC_ALGO_RING, true},
    {PGT_ALLREDUCE, FTC_ALGO_RDOUBLE, true},
    {PGT_REDUCE, FTC_ALGO_TREE, true},
    {PGT_REDUCE, FTC_ALGO_CHAIN, true},
    {PGT_REDUCE_SCATTER, FTC_ALGO_RING, true},
    {PGT_REDUCE_SCATTER, FTC_ALGO_DIRECT, true},
    {PGT_BROADCAST, FTC_ALGO_TREE, false},
    {PGT_BROADCAST, FTC_ALGO_CHAIN, false},
    {PGT_ALLGATHER, FTC_ALGO_RING, false},
    {PGT_ALLGATHER, FTC_ALGO_DIRECT, false},
    {PGT_ALLGATHERV, FTC_ALGO_RING, false},
    {PGT_ALLGATHERV, FTC_ALGO_DIRECT, false},
    {PGT_ALLTOALL, FTC_ALGO_AUTO, false},
    {PGT_ALLTOALLV, FTC_ALGO_AUTO, false},
    {PGT_GATHER, FTC_ALGO_AUTO, false},
    {PGT_SCATTER, FTC_ALGO_AUTO, false},
    {PGT_BARRIER, FTC_ALGO_AUTO, false},
    {PGT_SENDRECV, FTC_ALGO_AUTO, false},
    /* Only where the ranks sit on several hosts (hier_variants). */
    {PGT_ALLREDUCE, FTC_ALGO_HIER, true},
    {PGT_BROADCAST, FTC_ALGO_HIER, false},
    {PGT_ALLGATHER, FTC_ALGO_HIER, false},
    {PGT_ALLGATHERV, FTC_ALGO_HIER, false},
};

#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))
enum { hier_variants = 4 };

/* With PG_MATRIX_HOSTS=h, the ranks are h "hosts" (FTC_PG_HOST_ID) of
 * n/h ranks: contiguous ranks, or with PG_MATRIX_INTERLEAVE rank % h. */
static int hosts;
static bool interleave;

/* AVG of an integer dtype must be refused at once, starting nothing. */
static int avg_refused(ftc_pg *pg, int dtype)
{
    int8_t buf[8] = {0};
    ftc_tensor t = ftc_tensor_cpu(buf, 1, dtype);
    ftc_work *w = (ftc_work *)buf;
    int rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_AVG, NULL, &w);
    if (rc != FTC_EINVAL || w != NULL) {
        fprintf(stderr, "avg on %s: got %s, work %p\n", ftc_dtype_name(dtype),
                ftc_err_name(rc), (void *)w);
        return 1;
    }
    return 0;
}

static int run_matrix(ftc_pg *pg)
{
    int n = ftc_pg_size(pg);
    size_t counts[] = {0, 1, 7, (size_t)n * 5 + 3, 3001};
    int seed = 0;
    size_t nvariants = hosts > 1 ? NVARIANTS : NVARIANTS - hier_variants;
    for (size_t v = 0; v < nvariants; v++) {
        for (int dt = 0; dt < FTC_DTYPE_COUNT; dt++) {
            int nops = variants[v].reducing ? FTC_OP_COUNT : 1;
            for (int op = 0; op < nops; op++) {
                if (op == FTC_OP_AVG &&
                    (dt == FTC_DTYPE_I8 || dt == FTC_DTYPE_U8 ||
                     dt == FTC_DTYPE_I32 || dt == FTC_DTYPE_I64)) {
                    if (avg_refused(pg, dt) != 0) {
                        return 1;
                    }
                    continue;
                }
                for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]);
                     c++) {
                    seed++;
                    int rc = pgt_check(pg, variants[v].coll, dt, op, counts[c],
                                       variants[v].algo, seed % n, seed);
                    if (rc != 0) {
                        fprintf(stderr, "%s\n", ftc_last_error());
                        return 1;
                    }
                }
            }
        }
    }
    if (ftc_pg_rank(pg) == 0) {
        printf("group of %d: %d collectives checked\n", n, seed);
    }
    return 0;
}

/* nccl-tests sizes: allreduce, reduce_scatter and broadcast 64 MiB in,
 * allgather 64 MiB out. */
static int run_large(ftc_pg *pg)
{
    size_t n = (size_t)ftc_pg_size(pg), elems = (64u << 20) / 4;
    const struct {
        int coll;
        size_t count;
    } cases[] = {
        {PGT_ALLREDUCE, elems},
        {PGT_ALLGATHER, elems / n},
        {PGT_REDUCE_SCATTER, elems / n},
        {PGT_BROADCAST, elems},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = pgt_check(pg, cases[i].coll, FTC_DTYPE_F32, FTC_OP_SUM,
                           cases[i].count, FTC_ALGO_AUTO, 0, (int)i + 1);
        if (rc != 0) {
            fprintf(stderr, "%s\n", ftc_last_error());
            return 1;
        }
    }
    return 0;
}

/* Lanes join the ranks of a host, TCP the hosts. The group is checked to
 * be mixed so, and, where hosts are contiguous, so are the two groups of a
 * 2-D mesh over it: shard (one host's ranks, all lanes) and replicate
 * (one rank per host, all TCP). */

static int check_lanes(ftc_pg *pg, int want, const char *what)
{
    if (pgt_lanes(pg) != want) {
        fprintf(stderr, "rank %d: %s has %d lanes, expected %d\n",
                ftc_pg_rank(pg), what, pgt_lanes(pg), want);
        return 1;
    }
    return 0;
}

static int run_mesh(ftc_pg *pg)
{
    int per_host = ftc_pg_size(pg) / hosts;
    ftc_pg *shard = NULL, *rep = NULL;
    int rc = ftc_pg_mesh_2d(pg, per_host, FTC_DEVICE_CPU, NULL, &shard, &rep);
    if (rc != 0) {
        fprintf(stderr, "mesh_2d: %s\n", ftc_last_error());
        return 1;
    }
    rc = check_lanes(shard, per_host - 1, "the shard group") ||
         check_lanes(rep, 0, "the replicate group");
    for (int i = 0; rc == 0 && i < 2; i++) {
        ftc_pg *sub = i == 0 ? shard : rep;
        rc = pgt_check(sub, PGT_ALLREDUCE, FTC_DTYPE_F32, FTC_OP_SUM, 300001,
                       FTC_ALGO_AUTO, 0, 77 + i) ||
             pgt_check(sub, PGT_ALLGATHER, FTC_DTYPE_BF16, FTC_OP_SUM, 4099,
                       FTC_ALGO_AUTO, 0, 79 + i);
        if (rc != 0) {
            fprintf(stderr, "%s group: %s\n", i == 0 ? "shard" : "replicate",
                    ftc_last_error());
        }
    }
    ftc_pg_destroy(shard);
    ftc_pg_destroy(rep);
    return rc;
}

/* Role: one member. argv: store size rank mode */
static int member(int argc, char **argv)
{
    if (argc < 5) {
        return 2;
    }
    int n = (int)strtol(argv[2], NULL, 10),
        rank = (int)strtol(argv[3], NULL, 10);
    bool large = strcmp(argv[4], "large") == 0;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.timeout_ms = tk_ms(60000);
    o.connect_timeout_ms = tk_ms(30000);
    if (!large) {
        o.segment_bytes = 2048; /* many segments at small sizes */
    }
    if (hosts > 1) {
        char id[16];
        snprintf(id, sizeof(id), "host%d",
                 interleave ? rank % hosts : rank / (n / hosts));
        setenv("FTC_PG_HOST_ID", id, 1);
    }
    ftc_pg *pg = NULL;
    int rc = pgt_create(argv[1], "matrix", rank, n, &o, &pg);
    if (rc != 0) {
        fprintf(stderr, "rank %d: create: %s\n", rank, ftc_last_error());
        return 1;
    }
    if (hosts > 1) {
        rc = check_lanes(pg, n / hosts - 1, "the group") ||
             (!interleave && run_mesh(pg));
    }
    rc = rc ? rc : large ? run_large(pg) : run_matrix(pg);
    ftc_pg_destroy(pg);
    if (rc == 0 && pgt_lane_segments() != 0) {
        fprintf(stderr, "rank %d: lane segments left after destroy\n", rank);
        return 1;
    }
    return rc;
}

static void run_group(int n, const char *mode)
{
    tk_child kids[8];
    char size[16], rank[8][16];
    snprintf(size, sizeof(size), "%d", n);
    for (int r = 0; r < n; r++) {
        snprintf(rank[r], sizeof(rank[r]), "%d", r);
        char *args[] = {(char *)pgt_store(), size, rank[r], (char *)mode, NULL};
        tk_spawn(&kids[r], "member", args, NULL);
    }
    assert_int_equal(tk_reap(kids, n, 280000), 0);
    for (int r = 0; r < n; r++) {
        if (tk_exit_code(&kids[r]) != 0) {
            fail_msg("rank %d of %d exited with %d", r, n,
                     tk_exit_code(&kids[r]));
        }
    }
}

static int group_size;

static void matrix(void **state)
{
    (void)state;
    run_group(group_size, "matrix");
}

static void large_64mib(void **state)
{
    (void)state;
    run_group(group_size, "large");
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"member", member}};
    const char *env = getenv("PG_MATRIX_SIZE");
    group_size = env != NULL ? (int)strtol(env, NULL, 10) : 2;
    env = getenv("PG_MATRIX_HOSTS");
    hosts = env != NULL ? (int)strtol(env, NULL, 10) : 1;
    interleave = getenv("PG_MATRIX_INTERLEAVE") != NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matrix),
    };
    const struct CMUnitTest large[] = {
        cmocka_unit_test(large_64mib),
    };
    if (getenv("PG_MATRIX_LARGE") != NULL) {
        return tk_main(argc, argv, roles, 1, large);
    }
    return tk_main(argc, argv, roles, 1, tests);
}
