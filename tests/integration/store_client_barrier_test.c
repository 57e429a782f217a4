/* ftc_store_client_barrier against the embedded ftc server: one request
 * per rank, ranks as threads and processes, mixed with ranks that do the
 * c10d barrier with plain ops (1.13 dialect, or add/set/wait by hand),
 * timeouts that keep the connection, late ranks, cancel, bad seats. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc/ftc.h"
#include "store_client_kit.h"
#include "testkit.h"

#define T(ms) tk_ms(ms)
#define DONE "<val_ignored>"

static ftc_store_server *server;
static char addr[64];

static int setup(void **state)
{
    (void)state;
    TK_OK(ftc_store_server_create(NULL, &server));
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ftc_store_server_port(server));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ftc_store_server_destroy(server);
    server = NULL;
    return 0;
}

static ftc_store_client *connect_dialect(int dialect)
{
    ftc_store_client *c = sck_connect(addr, dialect);
    assert_non_null(c);
    return c;
}

static uint64_t requests(void)
{
    return sck_requests(server);
}

static void expect_done(const ftc_store_barrier_result *r, int64_t arrived,
                        const char *last)
{
    assert_true(r->arrived == arrived);
    assert_non_null(r->last_members);
    assert_int_equal(r->last_members_len, strlen(last));
    assert_memory_equal(r->last_members, last, r->last_members_len);
}

/* Against ftc's server a barrier is one write and one request; in the
 * 1.13 dialect (no probe, so plain ops) the same barrier is SET + ADD in
 * one write, the compare_set, and a SET of the same value (for servers
 * whose compare_set wakes nobody). Both write c10d's keys. */
static void one_request_on_an_ftc_server(void **state)
{
    (void)state;
    ftc_store_client *c = connect_dialect(FTC_STORE_DIALECT_V2);
    uint64_t w0 = sck_writes(c);
    ftc_store_barrier_result r;
    TK_OK(ftc_store_client_barrier(c, "one/b", 0, 1, &r, T(5000)));
    expect_done(&r, 1, DONE);
    ftc_free(r.last_members);
    assert_int_equal(sck_writes(c) - w0, 1);
    /* VALIDATE, PING, CONTROL_BARRIER (a fresh server per test) */
    TK_WAIT_UNTIL(requests() == 3, 5000);
    const char *keys[] = {"one/b/0", "one/b/num_members", "one/b/last_members"};
    int ready = 0;
    TK_OK(ftc_store_client_check(c, keys, 3, &ready, T(5000)));
    assert_true(ready);
    ftc_store_client *v1 = connect_dialect(FTC_STORE_DIALECT_V1);
    w0 = sck_writes(v1);
    TK_OK(ftc_store_client_barrier(v1, "one/p", 0, 1, &r, T(5000)));
    expect_done(&r, 1, DONE);
    ftc_free(r.last_members);
    assert_int_equal(sck_writes(v1) - w0, 3);
    /* CHECK, then SET, ADD, COMPARE_SET, SET */
    TK_WAIT_UNTIL(requests() == 8, 5000);
    TK_OK(ftc_store_client_check(v1, keys, 1, &ready, T(5000)));
    assert_true(ready);
    ftc_store_client_close(v1);
    ftc_store_client_close(c);
}

/* ---- ranks of three kinds in one barrier */

enum { KIND_FTC, KIND_V1, KIND_C10D, KINDS };
#define WORLD 12
#define ROUNDS 20

typedef struct rank_run {
    int rank;
    int rc;
    char err[256];
    int64_t arrived[ROUNDS];
} rank_run;

/* c10d's own barrier with public plain ops, in c10d's order: ADD, SET
 * the rank key, then SET last_members or WAIT for it. */
static int c10d_barrier(ftc_store_client *c, const char *key, int rank,
                        int64_t *arrived)
{
    char k[96];
    snprintf(k, sizeof(k), "%s/num_members", key);
    int rc = ftc_store_client_add(c, k, 1, arrived, T(30000));
    snprintf(k, sizeof(k), "%s/%d", key, rank);
    rc = rc != 0 ? rc : ftc_store_client_set(c, k, "joined", 6, T(30000));
    snprintf(k, sizeof(k), "%s/last_members", key);
    if (rc == 0 && *arrived == WORLD) {
        return ftc_store_client_set(c, k, DONE, strlen(DONE), T(30000));
    }
    const char *keys[] = {k};
    return rc != 0 ? rc : ftc_store_client_wait(c, keys, 1, T(30000));
}

static void *rank_main(void *arg)
{
    rank_run *r = arg;
    int kind = r->rank % KINDS;
    ftc_store_client *c = connect_dialect(
        kind == KIND_V1 ? FTC_STORE_DIALECT_V1 : FTC_STORE_DIALECT_V2);
    for (int i = 0; r->rc == 0 && i < ROUNDS; i++) {
        char key[32];
        snprintf(key, sizeof(key), "mix/b%d", i);
        if (kind == KIND_C10D) {
            r->rc = c10d_barrier(c, key, r->rank, &r->arrived[i]);
            continue;
        }
        ftc_store_barrier_result res;
        r->rc =
            ftc_store_client_barrier(c, key, r->rank, WORLD, &res, T(30000));
        if (r->rc == 0 && (res.last_members_len != strlen(DONE) ||
                           memcmp(res.last_members, DONE, strlen(DONE)))) {
            r->rc = -100;
        }
        r->arrived[i] = res.arrived;
        ftc_free(res.last_members);
    }
    if (r->rc != 0) {
        snprintf(r->err, sizeof(r->err), "%s", ftc_last_error());
    }
    ftc_store_client_close(c);
    return NULL;
}

/* Each round, every rank gets a distinct arrival number 1..WORLD and
 * nobody leaves before the last arrives. */
static void threads_of_three_kinds_meet(void **state)
{
    (void)state;
    rank_run runs[WORLD];
    pthread_t t[WORLD];
    for (int i = 0; i < WORLD; i++) {
        memset(&runs[i], 0, sizeof(runs[i]));
        runs[i].rank = i;
        assert_int_equal(pthread_create(&t[i], NULL, rank_main, &runs[i]), 0);
    }
    for (int i = 0; i < WORLD; i++) {
        pthread_join(t[i], NULL);
    }
    for (int round = 0; round < ROUNDS; round++) {
        int seen[WORLD + 1] = {0};
        for (int i = 0; i < WORLD; i++) {
            if (runs[i].rc != 0) {
                fail_msg("rank %d: %d %s", i, runs[i].rc, runs[i].err);
            }
            int64_t a = runs[i].arrived[round];
            assert_true(a >= 1 && a <= WORLD);
            assert_int_equal(seen[a]++, 0);
        }
    }
}

/* ---- processes */

/* Role "rank": addr rank world rounds. Exit codes: 0 ok, 2 connect, 3
 * barrier failed, 4 wrong answer. */
static int role_rank(int argc, char **argv)
{
    if (argc < 5) {
        return 1;
    }
    int rank = (int)strtol(argv[2], NULL, 10);
    int world = (int)strtol(argv[3], NULL, 10);
    int rounds = (int)strtol(argv[4], NULL, 10);
    ftc_store_client *c = sck_connect(argv[1], FTC_STORE_DIALECT_V2);
    if (c == NULL) {
        return 2;
    }
    for (int i = 0; i < rounds; i++) {
        char key[32];
        snprintf(key, sizeof(key), "proc/b%d", i);
        ftc_store_barrier_result r;
        if (ftc_store_client_barrier(c, key, rank, world, &r, T(60000)) != 0) {
            fprintf(stderr, "rank %d: %s\n", rank, ftc_last_error());
            return 3;
        }
        int ok = r.arrived >= 1 && r.arrived <= world &&
                 r.last_members_len == strlen(DONE);
        ftc_free(r.last_members);
        if (!ok) {
            return 4;
        }
    }
    ftc_store_client_close(c);
    return 0;
}

static void processes_meet(void **state)
{
    (void)state;
    enum { K = 8, R = 30 };
    tk_child kids[K];
    char world[16], rounds[16], rank[K][16];
    snprintf(world, sizeof(world), "%d", K);
    snprintf(rounds, sizeof(rounds), "%d", R);
    for (int i = 0; i < K; i++) {
        snprintf(rank[i], sizeof(rank[i]), "%d", i);
        char *args[] = {addr, rank[i], world, rounds, NULL};
        tk_spawn(&kids[i], "rank", args, NULL);
    }
    assert_int_equal(tk_reap(kids, K, 120000), 0);
    for (int i = 0; i < K; i++) {
        if (tk_exit_code(&kids[i]) != 0) {
            fail_msg("rank %d exited with %d", i, tk_exit_code(&kids[i]));
        }
    }
    ftc_store_client *c = connect_dialect(FTC_STORE_DIALECT_V2);
    for (int i = 0; i < R; i++) {
        char key[48];
        snprintf(key, sizeof(key), "proc/b%d/num_members", i);
        int64_t n = 0;
        TK_OK(ftc_store_client_add(c, key, 0, &n, T(5000)));
        assert_int_equal(n, K);
    }
    ftc_store_client_close(c);
}

/* ---- failures */

/* A rank alone times out within its timeout, naming the barrier, and its
 * connection stays in step (cancelled in-protocol, no reconnect). Its
 * arrival counts: one more rank completes the barrier of two, and a third
 * arrival is told there were too many. */
static void timeout_keeps_the_connection(void **state)
{
    (void)state;
    ftc_store_client *c = connect_dialect(FTC_STORE_DIALECT_V2);
    ftc_store_barrier_result r;
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc_store_client_barrier(c, "to/b", 0, 2, &r, 100),
              FTC_ETIMEDOUT);
    int64_t took = tk_now_ms() - t0;
    assert_true(took >= 95 && took < 100 + T(2000));
    assert_string_equal(ftc_last_error(),
                        "barrier timeout after 100 ms, keys: to/b");
    assert_null(r.last_members);
    assert_true(r.arrived == 0);
    ftc_store_client *other = connect_dialect(FTC_STORE_DIALECT_V2);
    TK_OK(ftc_store_client_barrier(other, "to/b", 1, 2, &r, T(5000)));
    expect_done(&r, 2, DONE);
    ftc_free(r.last_members);
    TK_EXPECT(ftc_store_client_barrier(c, "to/b", 0, 2, &r, T(5000)),
              FTC_ESTALE);
    assert_non_null(strstr(ftc_last_error(), "3 arrivals for world size 2"));
    assert_int_equal(sck_connects(c), 1);
    ftc_store_client_close(other);
    ftc_store_client_close(c);
}

/* A rank arriving after last_members was written (here: a marker a rank
 * that gave up left) returns at once with that value; more arrivals than
 * the world size fail with FTC_ESTALE saying so. */
static void late_ranks_return_at_once(void **state)
{
    (void)state;
    ftc_store_client *c = connect_dialect(FTC_STORE_DIALECT_V2);
    ftc_store_client *v1 = connect_dialect(FTC_STORE_DIALECT_V1);
    TK_OK(ftc_store_client_compare_set(c, "late/b/last_members", "", 0, "gone",
                                       4, NULL, NULL, T(5000)));
    ftc_store_client *both[] = {c, v1};
    for (int i = 0; i < 2; i++) {
        ftc_store_barrier_result r;
        int64_t t0 = tk_now_ms();
        TK_OK(ftc_store_client_barrier(both[i], "late/b", i, 4, &r, T(30000)));
        assert_true(tk_now_ms() - t0 < T(5000));
        expect_done(&r, i + 1, "gone");
        ftc_free(r.last_members);
    }
    TK_OK(ftc_store_client_barrier(c, "late/s", 0, 1, NULL, T(5000)));
    for (int i = 0; i < 2; i++) {
        ftc_store_barrier_result r;
        TK_EXPECT(
            ftc_store_client_barrier(both[i], "late/s", 0, 1, &r, T(5000)),
            FTC_ESTALE);
        assert_non_null(strstr(ftc_last_error(), "arrivals for world size 1"));
        assert_null(r.last_members);
    }
    ftc_store_client_close(v1);
    ftc_store_client_close(c);
}

static int barrier_forever(ftc_store_client *c, const char *key)
{
    return ftc_store_client_barrier(c, key, 0, 2, NULL, FTC_TIMEOUT_INFINITE);
}

/* cancel() from another thread ends a waiting barrier with FTC_ECANCELED;
 * its arrival (sent before) counts, and the next call reconnects. */
static void cancel_unblocks_a_barrier(void **state)
{
    (void)state;
    ftc_store_client *c = connect_dialect(FTC_STORE_DIALECT_V2);
    uint64_t w0 = sck_writes(c);
    sck_blocked b;
    sck_block_in(&b, c, "cancel/b", barrier_forever);
    TK_WAIT_UNTIL(sck_writes(c) > w0, 10000);
    assert_int_equal(sck_cancel_and_join(&b, c), FTC_ECANCELED);
    TK_OK(ftc_store_client_barrier(c, "cancel/b", 1, 2, NULL, T(5000)));
    assert_int_equal(sck_connects(c), 2);
    ftc_store_client_close(c);
}

static void bad_seats(void **state)
{
    (void)state;
    ftc_store_client *c = connect_dialect(FTC_STORE_DIALECT_V2);
    TK_EXPECT(ftc_store_client_barrier(c, "x", 2, 2, NULL, 100), FTC_EINVAL);
    TK_EXPECT(ftc_store_client_barrier(c, "x", -1, 2, NULL, 100), FTC_EINVAL);
    TK_EXPECT(ftc_store_client_barrier(c, "x", 0, 0, NULL, 100), FTC_EINVAL);
    TK_EXPECT(ftc_store_client_barrier(c, NULL, 0, 1, NULL, 100), FTC_EINVAL);
    TK_EXPECT(ftc_store_client_barrier(NULL, "x", 0, 1, NULL, 100),
              FTC_EMISUSE);
    int ready = 1;
    const char *k = "x/num_members";
    TK_OK(ftc_store_client_check(c, &k, 1, &ready, T(5000)));
    assert_false(ready);
    ftc_store_client_close(c);
}

int main(int argc, char **argv)
{
    const tk_role roles[] = {{"rank", role_rank}};
#define S(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        S(one_request_on_an_ftc_server),
        S(threads_of_three_kinds_meet),
        S(processes_meet),
        S(timeout_keeps_the_connection),
        S(late_ranks_return_at_once),
        S(cancel_unblocks_a_barrier),
        S(bad_seats),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
