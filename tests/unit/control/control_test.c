/* Control collectives with threads over an embedded ftc store: every
 * scenario of PyTorch's test_control_collectives, plus timeouts that name
 * the missing ranks, late arrivals, automatic keys and interleaving.
 * Rank bodies run on threads, so they report through return codes (cmocka
 * assertions are only made on the main thread). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc/ftc.h"
#include "control_kit.h"
#include "testkit.h"

/* A rank body's code for "the call succeeded but returned wrong data". */
#define WRONG_VALUE 1000

typedef struct rank_ctx {
    char addr[64];
    int rank;
    int world;
    char prefix[32];
    int (*body)(struct rank_ctx *r, ftc_control *g);
    int64_t timeout_ms; /* for the body's collectives */
    int rc;
    char err[512];
    int64_t took_ms;
} rank_ctx;

static int wrong(rank_ctx *r, const char *what)
{
    snprintf(r->err, sizeof(r->err), "%s", what);
    return WRONG_VALUE;
}

static void *rank_main(void *arg)
{
    rank_ctx *r = arg;
    ftc_store_client *base = NULL, *view = NULL;
    ftc_control *g = NULL;
    r->rc = ftc_store_client_connect(r->addr, NULL, &base);
    if (r->rc == 0) {
        r->rc = ftc_store_client_prefix(base, r->prefix, &view);
    }
    if (r->rc == 0) {
        r->rc =
            ftc_control_create(view, r->rank, r->world, NULL, &g, tk_ms(10000));
    }
    if (r->rc == 0) {
        int64_t t0 = tk_now_ms();
        r->rc = r->body(r, g);
        r->took_ms = tk_now_ms() - t0;
    }
    if (r->rc != 0 && r->rc != WRONG_VALUE) {
        snprintf(r->err, sizeof(r->err), "%s", ftc_last_error());
    }
    ftc_control_destroy(g);
    ftc_store_client_close(view);
    ftc_store_client_close(base);
    return NULL;
}

/* Set by --procs: ranks are processes (this binary re-run as role
 * "rank") instead of threads. */
static int use_procs;

/* The bodies by name, so a child process can run one. */
typedef int (*body_fn)(rank_ctx *, ftc_control *);
static const struct {
    const char *name;
    body_fn fn;
} * bodies;
static size_t nbodies;

static const char *body_name(body_fn fn)
{
    for (size_t i = 0; i < nbodies; i++) {
        if (bodies[i].fn == fn) {
            return bodies[i].name;
        }
    }
    fail_msg("body not registered");
    return NULL;
}

/* Role "rank": addr prefix body rank world timeout_ms outfile. Runs one
 * rank and writes "<rc>\n<message>" to outfile. */
static int rank_role(int argc, char **argv)
{
    if (argc != 8) {
        return 2;
    }
    rank_ctx r;
    memset(&r, 0, sizeof(r));
    snprintf(r.addr, sizeof(r.addr), "%s", argv[1]);
    snprintf(r.prefix, sizeof(r.prefix), "%s", argv[2]);
    for (size_t i = 0; i < nbodies; i++) {
        if (strcmp(bodies[i].name, argv[3]) == 0) {
            r.body = bodies[i].fn;
        }
    }
    r.rank = (int)strtol(argv[4], NULL, 10);
    r.world = (int)strtol(argv[5], NULL, 10);
    r.timeout_ms = strtoll(argv[6], NULL, 10);
    if (r.body == NULL) {
        return 2;
    }
    rank_main(&r);
    FILE *f = fopen(argv[7], "w");
    if (f == NULL) {
        return 3;
    }
    fprintf(f, "%d\n%s", r.rc, r.err);
    return fclose(f) == 0 ? 0 : 3;
}

static void run_procs(rank_ctx *rs, int n)
{
    tk_child kids[16];
    char outs[16][256];
    assert_true(n <= 16);
    for (int i = 0; i < n; i++) {
        char rank[16], world[16], timeout[32];
        snprintf(rank, sizeof(rank), "%d", rs[i].rank);
        snprintf(world, sizeof(world), "%d", rs[i].world);
        snprintf(timeout, sizeof(timeout), "%lld", (long long)rs[i].timeout_ms);
        snprintf(outs[i], sizeof(outs[i]), "%s/%s-%d", tk_tmpdir(),
                 rs[i].prefix, rs[i].rank);
        char *args[] = {rs[i].addr, rs[i].prefix, (char *)body_name(rs[i].body),
                        rank,       world,        timeout,
                        outs[i],    NULL};
        tk_spawn(&kids[i], "rank", args, NULL);
    }
    assert_int_equal(tk_reap(kids, n, 60000), 0);
    for (int i = 0; i < n; i++) {
        assert_int_equal(tk_exit_code(&kids[i]), 0);
        FILE *f = fopen(outs[i], "r");
        assert_non_null(f);
        assert_int_equal(fscanf(f, "%d\n", &rs[i].rc), 1);
        size_t got = fread(rs[i].err, 1, sizeof(rs[i].err) - 1, f);
        rs[i].err[got] = '\0';
        fclose(f);
    }
}

/* Runs body on one thread (or process) per listed rank of a world, under a
 * fresh store prefix, and waits for all of them. */
static void run_ranks(rank_ctx *rs, int n, int world, body_fn body,
                      int64_t timeout_ms)
{
    static int next_id;
    pthread_t t[128];
    int id = next_id++;
    for (int i = 0; i < n; i++) {
        snprintf(rs[i].addr, sizeof(rs[i].addr), "%s", control_kit_addr());
        rs[i].world = world;
        snprintf(rs[i].prefix, sizeof(rs[i].prefix), "test%d%s", id,
                 use_procs ? "p" : "t");
        rs[i].body = body;
        rs[i].timeout_ms = tk_ms(timeout_ms);
    }
    if (use_procs) {
        run_procs(rs, n);
        return;
    }
    for (int i = 0; i < n; i++) {
        pthread_create(&t[i], NULL, rank_main, &rs[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
    }
}

static void run_world(rank_ctx *rs, int world,
                      int (*body)(rank_ctx *, ftc_control *))
{
    memset(rs, 0, sizeof(*rs) * (size_t)world);
    for (int i = 0; i < world; i++) {
        rs[i].rank = i;
    }
    run_ranks(rs, world, world, body, 10000);
}

static void expect_all_ok(const rank_ctx *rs, int n)
{
    for (int i = 0; i < n; i++) {
        if (rs[i].rc != 0) {
            fail_msg("rank %d: %s: %s", rs[i].rank, ftc_err_name(rs[i].rc),
                     rs[i].err);
        }
    }
}

/* ---- the scenarios of test_control_collectives ---- */

static int do_barrier(rank_ctx *r, ftc_control *g)
{
    return ftc_control_barrier(g, "foo", r->timeout_ms);
}

static void test_barrier(void **state)
{
    (void)state;
    rank_ctx rs[2];
    run_world(rs, 2, do_barrier);
    expect_all_ok(rs, 2);
}

static int do_broadcast(rank_ctx *r, ftc_control *g)
{
    if (r->rank == 2) {
        return ftc_control_broadcast_send(g, "foo", "data", 4, r->timeout_ms);
    }
    void *v = NULL;
    size_t len = 0;
    int rc = ftc_control_broadcast_recv(g, "foo", &v, &len, r->timeout_ms);
    if (rc == 0 && (len != 4 || memcmp(v, "data", 4) != 0)) {
        rc = wrong(r, "broadcast payload");
    }
    ftc_free(v);
    return rc;
}

static void test_broadcast(void **state)
{
    (void)state;
    rank_ctx rs[4];
    run_world(rs, 4, do_broadcast);
    expect_all_ok(rs, 4);
}

static int do_gather(rank_ctx *r, ftc_control *g)
{
    char mine[8];
    int n = snprintf(mine, sizeof(mine), "%d", r->rank);
    if (r->rank != 2) {
        return ftc_control_gather_send(g, "foo", mine, (size_t)n,
                                       r->timeout_ms);
    }
    ftc_store_value out[4];
    int rc =
        ftc_control_gather_recv(g, "foo", mine, (size_t)n, out, r->timeout_ms);
    for (int i = 0; rc == 0 && i < 4; i++) {
        char want[8];
        snprintf(want, sizeof(want), "%d", i);
        if (out[i].len != 1 || memcmp(out[i].data, want, 1) != 0) {
            rc = wrong(r, "gathered value");
        }
    }
    if (rc == 0 || rc == WRONG_VALUE) {
        ftc_store_values_free(out, 4);
    }
    return rc;
}

static void test_gather(void **state)
{
    (void)state;
    rank_ctx rs[4];
    run_world(rs, 4, do_gather);
    expect_all_ok(rs, 4);
}

static int do_scatter(rank_ctx *r, ftc_control *g)
{
    void *v = NULL;
    size_t len = 0;
    int rc;
    if (r->rank == 2) {
        ftc_store_value data[4] = {{"0", 1}, {"1", 1}, {"2", 1}, {"3", 1}};
        rc = ftc_control_scatter_send(g, "foo", data, &v, &len, r->timeout_ms);
    } else {
        rc = ftc_control_scatter_recv(g, "foo", &v, &len, r->timeout_ms);
    }
    char want = (char)('0' + r->rank);
    if (rc == 0 && (len != 1 || *(char *)v != want)) {
        rc = wrong(r, "scattered value");
    }
    ftc_free(v);
    return rc;
}

static void test_scatter(void **state)
{
    (void)state;
    rank_ctx rs[4];
    run_world(rs, 4, do_scatter);
    expect_all_ok(rs, 4);
}

static int do_all_gather(rank_ctx *r, ftc_control *g)
{
    char mine[8];
    int n = snprintf(mine, sizeof(mine), "r%d", r->rank);
    ftc_store_value out[8];
    int rc =
        ftc_control_all_gather(g, "foo", mine, (size_t)n, out, r->timeout_ms);
    for (int i = 0; rc == 0 && i < r->world; i++) {
        char want[8];
        int wn = snprintf(want, sizeof(want), "r%d", i);
        if (out[i].len != (size_t)wn || memcmp(out[i].data, want, 2) != 0) {
            rc = wrong(r, "all_gather value");
        }
    }
    if (rc == 0 || rc == WRONG_VALUE) {
        ftc_store_values_free(out, (size_t)r->world);
    }
    return rc;
}

static void test_all_gather(void **state)
{
    (void)state;
    rank_ctx rs[5];
    run_world(rs, 5, do_all_gather);
    expect_all_ok(rs, 5);
}

static int do_all_sum(rank_ctx *r, ftc_control *g)
{
    int64_t sum = -1;
    int rc = ftc_control_all_sum(g, "foo", r->rank, &sum, r->timeout_ms);
    if (rc == 0 && sum != 0 + 1 + 2 + 3) {
        rc = wrong(r, "all_sum result");
    }
    return rc;
}

static void test_all_sum(void **state)
{
    (void)state;
    rank_ctx rs[4];
    run_world(rs, 4, do_all_sum);
    expect_all_ok(rs, 4);
}

/* The timeout tests: rank 1 of 4 runs alone with a short timeout. */
static rank_ctx run_alone(int (*body)(rank_ctx *, ftc_control *),
                          int64_t timeout_ms)
{
    rank_ctx r;
    memset(&r, 0, sizeof(r));
    r.rank = 1;
    run_ranks(&r, 1, 4, body, timeout_ms);
    return r;
}

static void expect_timeout(const rank_ctx *r, const char *want)
{
    if (r->rc != FTC_ETIMEDOUT || strstr(r->err, want) == NULL) {
        fail_msg("got %s '%s', wanted FTC_ETIMEDOUT containing '%s'",
                 ftc_err_name(r->rc), r->err, want);
    }
}

static void test_broadcast_timeout(void **state)
{
    (void)state;
    rank_ctx r = run_alone(do_broadcast, 50);
    expect_timeout(&r, "broadcast 'foo' timed out after");
    assert_non_null(strstr(r.err, "nothing from the root"));
}

static void test_scatter_timeout(void **state)
{
    (void)state;
    rank_ctx r = run_alone(do_scatter, 50);
    expect_timeout(&r, "scatter 'foo' timed out after");
}

static int do_gather_recv(rank_ctx *r, ftc_control *g)
{
    ftc_store_value out[4];
    return ftc_control_gather_recv(g, "foo", "x", 1, out, r->timeout_ms);
}

static void test_gather_timeout(void **state)
{
    (void)state;
    rank_ctx r = run_alone(do_gather_recv, 50);
    expect_timeout(&r, "gather 'foo' timed out after");
    assert_non_null(strstr(r.err, "missing ranks 0, 2, 3"));
}

static void test_all_gather_timeout(void **state)
{
    (void)state;
    rank_ctx r = run_alone(do_all_gather, 50);
    expect_timeout(&r, "all_gather 'foo' timed out after");
    /* Our own value is in the store, so only the others are missing. */
    assert_non_null(strstr(r.err, "missing ranks 0, 2, 3"));
}

static void test_barrier_timeout(void **state)
{
    (void)state;
    rank_ctx r = run_alone(do_barrier, 50);
    expect_timeout(&r, "barrier 'foo' timed out after");
    assert_non_null(strstr(r.err, "missing ranks 0, 2, 3"));
}

static void test_all_sum_timeout(void **state)
{
    (void)state;
    rank_ctx r = run_alone(do_all_sum, 50);
    expect_timeout(&r, "missing ranks 0, 2, 3");
    assert_non_null(strstr(r.err, "foo/barrier"));
}

static int do_reuse(rank_ctx *r, ftc_control *g)
{
    int64_t t = r->timeout_ms;
    ftc_store_value out[1];
    void *v = NULL;
    size_t len;
    int rc = ftc_control_all_gather(g, "foo", "x", 1, out, t);
    if (rc != 0) {
        return rc;
    }
    ftc_store_values_free(out, 1);
    const struct {
        const char *name;
        int rc;
    } again[] = {
        {"barrier", ftc_control_barrier(g, "foo", t)},
        {"broadcast_send", ftc_control_broadcast_send(g, "foo", "x", 1, t)},
        {"broadcast_recv", ftc_control_broadcast_recv(g, "foo", &v, &len, t)},
        {"gather_send", ftc_control_gather_send(g, "foo", "x", 1, t)},
        {"gather_recv", ftc_control_gather_recv(g, "foo", "x", 1, out, t)},
        {"scatter_recv", ftc_control_scatter_recv(g, "foo", &v, &len, t)},
        {"all_gather", ftc_control_all_gather(g, "foo", "x", 1, out, t)},
        {"all_sum", ftc_control_all_sum(g, "foo", 1, NULL, t)},
    };
    for (size_t i = 0; i < sizeof(again) / sizeof(again[0]); i++) {
        if (again[i].rc != FTC_EEXIST) {
            return wrong(r, again[i].name);
        }
    }
    /* all_sum also consumes "<key>/barrier". */
    if (ftc_control_all_sum(g, "bar", 1, NULL, t) != 0) {
        return wrong(r, "all_sum bar");
    }
    if (ftc_control_barrier(g, "bar/barrier", t) != FTC_EEXIST) {
        return wrong(r, "bar/barrier reuse");
    }
    return 0;
}

static void test_unique(void **state)
{
    (void)state;
    rank_ctx rs[1];
    run_world(rs, 1, do_reuse);
    expect_all_ok(rs, 1);
}

static int do_simple_user_func(rank_ctx *r, ftc_control *g)
{
    int rc = ftc_control_barrier(g, "1", r->timeout_ms);
    int64_t sum = 0;
    if (rc == 0) {
        rc = ftc_control_all_sum(g, "2", r->rank, &sum, r->timeout_ms);
    }
    if (rc == 0 && sum != 0 + 1 + 2) {
        rc = wrong(r, "sum");
    }
    return rc;
}

static void test_simple_user_func(void **state)
{
    (void)state;
    rank_ctx rs[3];
    run_world(rs, 3, do_simple_user_func);
    expect_all_ok(rs, 3);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        body_fn fn;
    } table[] = {
        {"barrier", do_barrier},
        {"broadcast", do_broadcast},
        {"gather", do_gather},
        {"scatter", do_scatter},
        {"all_gather", do_all_gather},
        {"all_sum", do_all_sum},
        {"gather_recv", do_gather_recv},
        {"reuse", do_reuse},
        {"simple_user_func", do_simple_user_func},
    };
    bodies = (void *)table;
    nbodies = sizeof(table) / sizeof(table[0]);
    const tk_role roles[] = {{"rank", rank_role}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_scatter),
        cmocka_unit_test(test_all_gather),
        cmocka_unit_test(test_all_sum),
        cmocka_unit_test(test_broadcast_timeout),
        cmocka_unit_test(test_scatter_timeout),
        cmocka_unit_test(test_gather_timeout),
        cmocka_unit_test(test_all_gather_timeout),
        cmocka_unit_test(test_barrier_timeout),
        cmocka_unit_test(test_all_sum_timeout),
        cmocka_unit_test(test_unique),
        cmocka_unit_test(test_simple_user_func),
    };
    if (argc >= 2 && strcmp(argv[1], "--tk-role") == 0) {
        return tk_main(argc, argv, roles, 1, tests);
    }
    use_procs = argc >= 2 && strcmp(argv[1], "--procs") == 0;
    return tk_run_group(tests, control_kit_setup, control_kit_teardown);
}
