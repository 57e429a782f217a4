/* The xccl process-group backend (src/pg/xccl/xccl.c) on the real oneCCL
 * between XCCL_SIZE processes meeting through an ftc store server, picked
 * by FTC_PG_BACKEND=xccl (set by CMake; the opts name no backend). One
 * process set runs every case, since each communicator's init takes
 * seconds:
 * - every collective x dtype x op through ftc_pg_* against the same
 *   reference as the tcp backend's matrix (pgt_check, bit for bit; AVG
 *   of f32/f64/f16/bf16 included: oneCCL's SUM then ftc's division);
 *   AVG of an integer dtype refused as on tcp;
 * - send/recv in pairs (a receive blocks the group's queue, so each pair
 *   posts the send first on one side), recv from FTC_PG_ANY_SOURCE
 *   refused with FTC_ENOTSUP naming the xccl backend, and a device
 *   tensor refused at the call;
 * - split with keys in reverse order, new_subgroups and mesh_2d, each a
 *   fresh oneCCL communicator, checked by membership and a collective;
 * - a receive stuck in oneCCL: FTC_ETIMEDOUT at its deadline, the group
 *   latched failed, abort failing the work queued behind it.
 * The role "missing" checks FTC_CCL_LIBRARY=/nonexistent: FTC_ENOTSUP at
 * ftc_pg_create naming the path, no key published in the store. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "pg_kit.h"

static const int colls[] = {
    PGT_ALLREDUCE, PGT_REDUCE,     PGT_REDUCE_SCATTER, PGT_BROADCAST,
    PGT_ALLGATHER, PGT_ALLGATHERV, PGT_ALLTOALL,       PGT_ALLTOALLV,
    PGT_GATHER,    PGT_SCATTER,    PGT_BARRIER,
};
#define NCOLLS (sizeof(colls) / sizeof(colls[0]))

static bool reducing(int coll)
{
    return coll == PGT_ALLREDUCE || coll == PGT_REDUCE ||
           coll == PGT_REDUCE_SCATTER;
}

static bool is_int(int dt)
{
    return dt == FTC_DTYPE_I8 || dt == FTC_DTYPE_U8 || dt == FTC_DTYPE_I32 ||
           dt == FTC_DTYPE_I64;
}

#define FAIL(...)                                                              \
    do {                                                                       \
        fprintf(stderr, "rank %d: ", ftc_pg_rank(pg));                         \
        fprintf(stderr, __VA_ARGS__);                                          \
        fprintf(stderr, ": %s\n", ftc_last_error());                           \
        return 1;                                                              \
    } while (0)

static int matrix(ftc_pg *pg)
{
    int n = ftc_pg_size(pg);
    size_t counts[] = {1, 7, (size_t)n * 5 + 3};
    int seed = 0;
    for (size_t c = 0; c < NCOLLS; c++) {
        for (int dt = 0; dt < FTC_DTYPE_COUNT; dt++) {
            int nops = reducing(colls[c]) ? FTC_OP_COUNT : 1;
            for (int op = 0; op < nops; op++) {
                if (op == FTC_OP_AVG && is_int(dt)) {
                    int8_t b[8] = {0};
                    ftc_tensor t = ftc_tensor_cpu(b, 1, dt);
                    ftc_work *w = NULL;
                    if (ftc_pg_allreduce(pg, &t, &t, op, NULL, &w) !=
                            FTC_EINVAL ||
                        w != NULL) {
                        FAIL("avg on %s not refused", ftc_dtype_name(dt));
                    }
                    continue;
                }
                for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]);
                     k++) {
                    seed++;
                    if (pgt_check(pg, colls[c], dt, op, counts[k],
                                  FTC_ALGO_AUTO, seed % n, seed) != 0) {
                        FAIL("matrix");
                    }
                }
            }
        }
    }
    if (ftc_pg_rank(pg) == 0) {
        printf("xccl group of %d: %d collectives checked\n", n, seed);
    }
    return 0;
}

/* Pairs (r, r^1): the even rank sends first, the odd one receives first. */
static int send_recv(ftc_pg *pg)
{
    int r = ftc_pg_rank(pg), n = ftc_pg_size(pg), peer = r ^ 1;
    if (peer >= n) {
        return 0;
    }
    float out[33], in[33];
    for (int i = 0; i < 33; i++) {
        out[i] = (float)(r * 100 + i);
        in[i] = -1;
    }
    ftc_tensor to = ftc_tensor_cpu(out, 33, FTC_DTYPE_F32);
    ftc_tensor from = ftc_tensor_cpu(in, 33, FTC_DTYPE_F32);
    ftc_work *ws = NULL, *wr = NULL;
    int rc;
    if (r % 2 == 0) {
        rc = ftc_pg_send(pg, &to, peer, 7, NULL, &ws);
        rc = rc ? rc : ftc_pg_recv(pg, &from, peer, 7, NULL, &wr);
    } else {
        rc = ftc_pg_recv(pg, &from, peer, 7, NULL, &wr);
        rc = rc ? rc : ftc_pg_send(pg, &to, peer, 7, NULL, &ws);
    }
    int src = -1;
    rc = rc ? rc : ftc_work_wait(wr, tk_ms(60000));
    rc = rc ? rc : ftc_work_source(wr, &src);
    rc = rc ? rc : pgt_wait(ws);
    ftc_work_release(wr);
    if (rc != 0 || src != peer) {
        FAIL("send/recv (source %d)", src);
    }
    for (int i = 0; i < 33; i++) {
        if (in[i] != (float)(peer * 100 + i)) {
            FAIL("send/recv element %d is %g", i, (double)in[i]);
        }
    }
    return 0;
}

static int refusals(ftc_pg *pg)
{
    float b[4] = {0};
    ftc_tensor t = ftc_tensor_cpu(b, 4, FTC_DTYPE_F32);
    ftc_work *w = NULL;
    int rc = ftc_pg_recv(pg, &t, FTC_PG_ANY_SOURCE, 1, NULL, &w);
    if (rc != FTC_ENOTSUP || w != NULL ||
        strstr(ftc_last_error(), "xccl") == NULL ||
        strstr(ftc_last_error(), "ANY_SOURCE") == NULL) {
        FAIL("recv from any source gave %s", ftc_err_name(rc));
    }
    t.device = FTC_DEVICE_CUDA;
    rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
    if (rc != FTC_ENOTSUP || w != NULL ||
        strstr(ftc_last_error(), "xccl") == NULL) {
        FAIL("a cuda tensor gave %s", ftc_err_name(rc));
    }
    return 0;
}

/* pg holds parent ranks want[0..m-1] in order, and an allreduce works. */
static int member_of(ftc_pg *pg, const int *want, int m, const char *what)
{
    int got[16];
    if (pg == NULL || ftc_pg_size(pg) != m) {
        fprintf(stderr, "%s: size %d, want %d\n", what,
                pg ? ftc_pg_size(pg) : -1, m);
        return 1;
    }
    ftc_pg_parent_ranks(pg, got);
    for (int i = 0; i < m; i++) {
        if (got[i] != want[i]) {
            FAIL("%s: member %d is %d, want %d", what, i, got[i], want[i]);
        }
    }
    if (pgt_check(pg, PGT_ALLREDUCE, FTC_DTYPE_F32, FTC_OP_AVG, 5,
                  FTC_ALGO_AUTO, 0, 1) != 0) {
        FAIL("%s: allreduce", what);
    }
    return 0;
}

static int subgroups(ftc_pg *world)
{
    int r = ftc_pg_rank(world), n = ftc_pg_size(world), want[16], m = 0;
    ftc_pg *pg = world, *sub = NULL, *shard = NULL, *rep = NULL;
    /* split: colors by parity, keys reversed. */
    int rc = ftc_pg_split(world, r % 2, n - r, NULL, &sub);
    for (int i = n - 1; i >= 0; i--) {
        if (i % 2 == r % 2) {
            want[m++] = i;
        }
    }
    if (rc != 0 || member_of(sub, want, m, "split") != 0) {
        FAIL("split");
    }
    ftc_pg_destroy(sub);
    sub = NULL;
    int g = n / 2;
    rc = ftc_pg_new_subgroups(world, g, NULL, &sub);
    for (int i = 0; i < g; i++) {
        want[i] = (r / g) * g + i;
    }
    if (rc != 0 || member_of(sub, want, g, "new_subgroups") != 0) {
        FAIL("new_subgroups");
    }
    ftc_pg_destroy(sub);
    rc = ftc_pg_mesh_2d(world, 2, FTC_DEVICE_CPU, NULL, &shard, &rep);
    int rw[16];
    for (int i = 0; i < 2; i++) {
        want[i] = (r / 2) * 2 + i;
    }
    for (int i = 0; i < n / 2; i++) {
        rw[i] = r % 2 + i * 2;
    }
    if (rc != 0 || member_of(shard, want, 2, "mesh_2d shard") != 0 ||
        member_of(rep, rw, n / 2, "mesh_2d replicate") != 0) {
        FAIL("mesh_2d");
    }
    ftc_pg_destroy(shard);
    ftc_pg_destroy(rep);
    return 0;
}

/* A call oneCCL cannot finish in time: rank 0 receives from rank 1 with
 * a 300 ms deadline while rank 1 holds its send back. ftc_work_wait
 * (no timeout of its own) returns FTC_ETIMEDOUT at the deadline, the
 * group is latched failed, abort fails the allreduce queued behind the
 * receive at once; then rank 1 sends, so the receive returns and destroy
 * can join the worker. On baby-xccl the deadline kills the child, so the
 * receive has already failed with FTC_ETIMEDOUT and rank 1 sends nothing
 * (its oneCCL would wait forever for the killed peer). */
static int stuck(ftc_pg *pg, const char *store)
{
    int r = ftc_pg_rank(pg);
    const char *be = getenv("FTC_PG_BACKEND");
    bool baby = be != NULL && strncmp(be, "baby-", 5) == 0;
    if (r > 1) {
        return 0;
    }
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(store, NULL, &c));
    float b[4] = {1, 2, 3, 4}, s[1] = {1};
    ftc_tensor t = ftc_tensor_cpu(b, 4, FTC_DTYPE_F32);
    ftc_tensor one = ftc_tensor_cpu(s, 1, FTC_DTYPE_F32);
    ftc_work *w1 = NULL, *w2 = NULL;
    int rc = 0, done = 0;
    if (r == 1) {
        void *v = NULL;
        size_t len = 0;
        TK_OK(ftc_store_client_get(c, "xccl_pg/stuck_seen", &v, &len,
                                   tk_ms(60000)));
        ftc_free(v);
        ftc_store_client_close(c);
        if (baby) {
            return 0;
        }
        rc = ftc_pg_send(pg, &t, 0, 3, NULL, &w1);
        return rc ? rc : pgt_wait(w1);
    }
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.timeout_ms = 300;
    TK_OK(ftc_pg_recv(pg, &t, 1, 3, &o, &w1));
    TK_OK(ftc_pg_allreduce(pg, &one, &one, FTC_OP_SUM, NULL, &w2));
    int64_t t0 = tk_now_ms();
    rc = ftc_work_wait(w1, FTC_TIMEOUT_INFINITE);
    int64_t took = tk_now_ms() - t0;
    if (rc != FTC_ETIMEDOUT || strstr(ftc_last_error(), "deadline") == NULL ||
        took > tk_ms(5000)) {
        FAIL("stuck recv: %s after %lld ms", ftc_err_name(rc), (long long)took);
    }
    if (ftc_pg_status(pg) != FTC_ETIMEDOUT) {
        FAIL("status after the deadline");
    }
    ftc_pg_abort(pg);
    rc = ftc_work_test(w2, &done);
    if (!done || rc == 0) {
        FAIL("queued allreduce after abort: done %d, %s", done,
             ftc_err_name(rc));
    }
    ftc_work_release(w2);
    TK_OK(ftc_store_client_set(c, "xccl_pg/stuck_seen", "1", 1, 10000));
    ftc_store_client_close(c);
    /* oneCCL's receive returns now (a wait would time out at once: the
     * work is past its deadline). */
    int64_t end = tk_now_ms() + tk_ms(60000);
    done = 0;
    while ((rc = ftc_work_test(w1, &done)) == 0 && !done && tk_now_ms() < end) {
        usleep(10000);
    }
    ftc_work_release(w1);
    if ((baby ? rc != FTC_ETIMEDOUT : rc != 0) || !done) {
        FAIL("the late receive (done %d)", done);
    }
    printf("xccl: stuck recv timed out after %lld ms\n", (long long)took);
    return 0;
}

/* Role: one member. argv: store size rank */
static int member(int argc, char **argv)
{
    if (argc < 4) {
        return 2;
    }
    int n = (int)strtol(argv[2], NULL, 10),
        rank = (int)strtol(argv[3], NULL, 10);
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.host = "127.0.0.1";
    o.timeout_ms = tk_ms(60000);
    o.connect_timeout_ms = tk_ms(60000);
    ftc_pg *pg = NULL;
    int rc = pgt_create(argv[1], "xccl_pg", rank, n, &o, &pg);
    if (rc != 0) {
        fprintf(stderr, "rank %d: create: %s\n", rank, ftc_last_error());
        return 1;
    }
    rc = refusals(pg);
    rc = rc ? rc : matrix(pg);
    rc = rc ? rc : send_recv(pg);
    rc = rc ? rc : subgroups(pg);
    rc = rc ? rc : stuck(pg, argv[1]);
    ftc_pg_destroy(pg);
    return rc;
}

/* Role: FTC_CCL_LIBRARY names no file. argv: store */
static int missing(int argc, char **argv)
{
    if (argc < 2) {
        return 2;
    }
    ftc_store_client *c = NULL;
    int64_t before = -1, after = -1;
    TK_OK(ftc_store_client_connect(argv[1], NULL, &c));
    TK_OK(ftc_store_client_num_keys(c, &before, 10000));
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.backend = "xccl";
    ftc_pg *pg = NULL;
    int rc = ftc_pg_create(c, "xccl_missing", 0, 1, &o, &pg);
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", ftc_last_error());
    TK_OK(ftc_store_client_num_keys(c, &after, 10000));
    ftc_store_client_close(c);
    if (rc != FTC_ENOTSUP || pg != NULL ||
        strstr(msg, "/nonexistent") == NULL || before != after) {
        fprintf(stderr, "missing library: %s (%s), keys %lld -> %lld\n",
                ftc_err_name(rc), msg, (long long)before, (long long)after);
        return 1;
    }
    return 0;
}

static int group_size;

static void run_group(void **state)
{
    (void)state;
    tk_child kids[8];
    char size[16], rank[8][16];
    snprintf(size, sizeof(size), "%d", group_size);
    for (int r = 0; r < group_size; r++) {
        snprintf(rank[r], sizeof(rank[r]), "%d", r);
        char *args[] = {(char *)pgt_store(), size, rank[r], NULL};
        tk_spawn(&kids[r], "member", args, NULL);
    }
    assert_int_equal(tk_reap(kids, group_size, tk_ms(280000)), 0);
    for (int r = 0; r < group_size; r++) {
        if (tk_exit_code(&kids[r]) != 0) {
            fail_msg("rank %d of %d exited with %d", r, group_size,
                     tk_exit_code(&kids[r]));
        }
    }
}

static void missing_library(void **state)
{
    (void)state;
    tk_child kid;
    char *args[] = {(char *)pgt_store(), NULL};
    tk_spawn(&kid, "missing", args, NULL);
    assert_int_equal(tk_reap(&kid, 1, tk_ms(30000)), 0);
    assert_int_equal(tk_exit_code(&kid), 0);
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"member", member}, {"missing", missing}};
    const char *env = getenv("XCCL_SIZE");
    group_size = env != NULL ? (int)strtol(env, NULL, 10) : 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_group),
    };
    const struct CMUnitTest miss[] = {
        cmocka_unit_test(missing_library),
    };
    if (getenv("XCCL_MISSING") != NULL) {
        return tk_main(argc, argv, roles, 2, miss);
    }
    return tk_main(argc, argv, roles, 2, tests);
}
