/* The store client against the embedded ftc server: the one-write get,
 * waits woken by every kind of write, timeouts that keep the connection,
 * cancel, many threads, many processes, and a server restart. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "store/client/client_int.h"
#include "store_client_kit.h"
#include "testkit.h"

#define T(ms) tk_ms(ms)

static ftc_store_server *start_server(int port)
{
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.bind_host = "127.0.0.1";
    o.port = port;
    ftc_store_server *s = NULL;
    TK_OK(ftc_store_server_create(&o, &s));
    return s;
}

static void addr_of(int port, char *out, size_t cap)
{
    snprintf(out, cap, "127.0.0.1:%d", port);
}

static ftc_store_client *connect_port(int port)
{
    char addr[64];
    addr_of(port, addr, sizeof(addr));
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.connect_timeout_ms = T(30000);
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(addr, &o, &c));
    return c;
}

static void get_is_one_round_trip(void **state)
{
    (void)state;
    ftc_store_server *srv = start_server(0);
    ftc_store_client *c = connect_port(ftc_store_server_port(srv));
    assert_int_equal(c->core->conn.server, FTC__STORE_SERVER_FTC);
    sck_set_str(c, "a", "A", T(10000));
    sck_set_str(c, "b", "BB", T(10000));
    uint64_t w0 = sck_writes(c);
    sck_expect_str(c, "a", "A", T(10000));
    assert_int_equal(sck_writes(c) - w0, 1);
    const char *ks[] = {"a", "b"};
    ftc_store_value vs[2];
    w0 = sck_writes(c);
    TK_OK(ftc_store_client_multi_get(c, ks, 2, vs, T(10000)));
    assert_int_equal(sck_writes(c) - w0, 1);
    assert_memory_equal(vs[1].data, "BB", 2);
    ftc_store_values_free(vs, 2);
    TK_OK(ftc_store_client_queue_push(c, "q", "i", 1, T(10000)));
    void *v = NULL;
    size_t n = 0;
    w0 = sck_writes(c);
    TK_OK(ftc_store_client_queue_pop(c, "q", 1, &v, &n, T(10000)));
    assert_int_equal(sck_writes(c) - w0, 1);
    assert_memory_equal(v, "i", 1);
    ftc_free(v);
    TK_OK(ftc_store_client_ping(c, T(10000)));
    ftc_store_client_close(c);
    ftc_store_server_destroy(srv);
}

/* The 1.13 dialect against the ftc server: no handshake, gets in two
 * round trips, multi ops as pipelined GETs/SETs, and a wait timeout (no
 * CANCEL_WAIT in 1.13) that costs the connection but nothing else. */
static void v1_dialect_against_the_ftc_server(void **state)
{
    (void)state;
    ftc_store_server *srv = start_server(0);
    char addr[64];
    addr_of(ftc_store_server_port(srv), addr, sizeof(addr));
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.dialect = FTC_STORE_DIALECT_V1;
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(addr, &o, &c));
    assert_int_equal(c->core->conn.server, FTC__STORE_SERVER_UNKNOWN);
    const char *ks[] = {"v1/a", "v1/b"};
    ftc_store_value in[] = {{"A", 1}, {"BB", 2}}, out[2];
    TK_OK(ftc_store_client_multi_set(c, ks, in, 2, T(10000)));
    uint64_t w0 = sck_writes(c);
    sck_expect_str(c, "v1/a", "A", T(10000));
    assert_int_equal(sck_writes(c) - w0, 2);
    TK_OK(ftc_store_client_multi_get(c, ks, 2, out, T(10000)));
    assert_memory_equal(out[1].data, "BB", 2);
    ftc_store_values_free(out, 2);
    int64_t n = 0;
    TK_OK(ftc_store_client_add(c, "v1/n", 4, &n, T(10000)));
    assert_int_equal(n, 4);
    const char *zz = "v1/zz";
    TK_EXPECT(ftc_store_client_wait(c, &zz, 1, 50), FTC_ETIMEDOUT);
    ftc_store_client *other = connect_port(ftc_store_server_port(srv));
    sck_set_str(other, "v1/zz", "Z", T(10000));
    sck_expect_str(c, "v1/b", "BB", T(10000));
    sck_expect_str(c, "v1/zz", "Z", T(10000));
    assert_int_equal(sck_connects(c), 2);
    int deleted = 0;
    TK_OK(ftc_store_client_delete(c, "v1/zz", &deleted, T(10000)));
    assert_int_equal(deleted, 1);
    ftc_store_client_close(other);
    ftc_store_client_close(c);
    ftc_store_server_destroy(srv);
}

/* ---- waits woken by each kind of write */

struct waiter {
    ftc_store_client *c;
    const char *key;
    const char *want;
    int rc;
};

static void *wait_then_get(void *arg)
{
    struct waiter *w = arg;
    void *v = NULL;
    size_t n = 0;
    w->rc = ftc_store_client_get(w->c, w->key, &v, &n, T(30000));
    if (w->rc == 0 && (n != strlen(w->want) || memcmp(v, w->want, n) != 0)) {
        w->rc = -100;
    }
    ftc_free(v);
    return NULL;
}

typedef void (*write_fn)(ftc_store_client *c, const char *key);

static void by_set(ftc_store_client *c, const char *key)
{
    sck_set_str(c, key, "x", T(10000));
}

static void by_add(ftc_store_client *c, const char *key)
{
    TK_OK(ftc_store_client_add(c, key, 3, NULL, T(10000)));
}

static void by_compare_set(ftc_store_client *c, const char *key)
{
    TK_OK(ftc_store_client_compare_set(c, key, "", 0, "cs", 2, NULL, NULL,
                                       T(10000)));
}

static void by_append(ftc_store_client *c, const char *key)
{
    TK_OK(ftc_store_client_append(c, key, "ap", 2, T(10000)));
}

static void by_multi_set(ftc_store_client *c, const char *key)
{
    const char *ks[] = {"other", key};
    ftc_store_value vs[] = {{"o", 1}, {"ms", 2}};
    TK_OK(ftc_store_client_multi_set(c, ks, vs, 2, T(10000)));
}

static void waits_are_woken_by_every_write(void **state)
{
    (void)state;
    ftc_store_server *srv = start_server(0);
    int port = ftc_store_server_port(srv);
    ftc_store_client *c = connect_port(port);
    struct {
        const char *key;
        write_fn write;
        const char *want;
    } cases[] = {
        {"w/set", by_set, "x"},
        {"w/add", by_add, "3"},
        {"w/compare_set", by_compare_set, "cs"},
        {"w/append", by_append, "ap"},
        {"w/multi_set", by_multi_set, "ms"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct waiter w = {connect_port(port), cases[i].key, cases[i].want, 0};
        uint64_t r0 = sck_requests(srv), w0 = sck_writes(w.c);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, wait_then_get, &w), 0);
        /* The waiter's WAIT + GET went out before the write, and very
         * likely parked (the server's counters lag by one loop pass);
         * either way the waiter must get the written value. */
        TK_WAIT_UNTIL(sck_writes(w.c) > w0 && sck_requests(srv) > r0, 10000);
        cases[i].write(c, cases[i].key);
        pthread_join(t, NULL);
        if (w.rc != 0) {
            fail_msg("waiter on %s: %s (%d)", cases[i].key, ftc_err_name(w.rc),
                     w.rc);
        }
        ftc_store_client_close(w.c);
    }
    ftc_store_client_close(c);
    ftc_store_server_destroy(srv);
}

/* ---- timeouts */

struct late_setter {
    int port;
    int64_t after_ms;
};

static void *set_later(void *arg)
{
    struct late_setter *l = arg;
    ftc_store_client *c = connect_port(l->port);
    /* The value must arrive after the earlier call's 50 ms timeout would
     * have ended a later call, were timeouts to leak. */
    tk_pause_ms((int)l->after_ms);
    sck_set_str(c, "to/late", "L", T(10000));
    ftc_store_client_close(c);
    return NULL;
}

static void timeouts_keep_the_connection_in_step(void **state)
{
    (void)state;
    ftc_store_server *srv = start_server(0);
    int port = ftc_store_server_port(srv);
    ftc_store_client *c = connect_port(port);
    ftc_store_client *other = connect_port(port);
    sck_set_str(c, "to/a", "A", T(10000));
    const char *zz = "to/zz";
    TK_EXPECT(ftc_store_client_wait(c, &zz, 1, 50), FTC_ETIMEDOUT);
    assert_string_equal(ftc_last_error(),
                        "wait timeout after 50 ms, keys: to/zz");
    void *v = NULL;
    size_t n = 0;
    TK_EXPECT(ftc_store_client_get(c, "to/yy", &v, &n, 50), FTC_ETIMEDOUT);
    const char *ks[] = {"to/a", "to/xx"};
    ftc_store_value vs[2];
    TK_EXPECT(ftc_store_client_multi_get(c, ks, 2, vs, 50), FTC_ETIMEDOUT);
    TK_EXPECT(ftc_store_client_queue_pop(c, "to/q", 1, &v, &n, 50),
              FTC_ETIMEDOUT);
    /* The keys appear now; no late answer reaches the next calls. */
    sck_set_str(other, "to/zz", "Z", T(10000));
    sck_set_str(other, "to/yy", "Y", T(10000));
    sck_set_str(other, "to/xx", "X", T(10000));
    TK_OK(ftc_store_client_queue_push(other, "to/q", "Q", 1, T(10000)));
    sck_expect_str(c, "to/a", "A", T(10000));
    sck_expect_str(c, "to/yy", "Y", T(10000));
    TK_OK(ftc_store_client_queue_pop(c, "to/q", 0, &v, &n, T(10000)));
    assert_memory_equal(v, "Q", 1);
    ftc_free(v);
    /* Every timeout was settled in-protocol: still the first connection. */
    assert_int_equal(sck_connects(c), 1);
    /* The next call has its own (infinite) timeout. */
    struct late_setter l = {port, 300};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, set_later, &l), 0);
    sck_expect_str(c, "to/late", "L", FTC_TIMEOUT_INFINITE);
    pthread_join(t, NULL);
    ftc_store_client_close(other);
    ftc_store_client_close(c);
    ftc_store_server_destroy(srv);
}

static void cancel_unblocks_a_parked_get(void **state)
{
    (void)state;
    ftc_store_server *srv = start_server(0);
    ftc_store_client *c = connect_port(ftc_store_server_port(srv));
    ftc_store_client *view = NULL;
    TK_OK(ftc_store_client_prefix(c, "v", &view));
    sck_blocked b;
    sck_block_in_get(&b, view, "never");
    assert_int_equal(sck_cancel_and_join(&b, c), FTC_ECANCELED);
    sck_set_str(view, "k", "after", T(10000));
    sck_expect_str(c, "v/k", "after", T(10000));
    assert_int_equal(sck_connects(c), 2);
    ftc_store_client_close(view);
    ftc_store_client_close(c);
    ftc_store_server_destroy(srv);
}

/* ---- many threads */

struct worker {
    ftc_store_client *shared; /* NULL: the worker connects its own */
    int port;
    int id;
    int rc;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    ftc_store_client *c = w->shared ? w->shared : connect_port(w->port);
    char key[32], val[32];
    snprintf(key, sizeof(key), "thr/%d", w->id);
    for (int i = 0; i < 300 && w->rc == 0; i++) {
        snprintf(val, sizeof(val), "%d.%d", w->id, i);
        w->rc = ftc_store_client_add(c, "thr/n", 1, NULL, T(30000));
        if (w->rc == 0) {
            w->rc = ftc_store_client_set(c, key, val, strlen(val), T(30000));
        }
        void *v = NULL;
        size_t n = 0;
        if (w->rc == 0) {
            w->rc = ftc_store_client_get(c, key, &v, &n, T(30000));
        }
        if (w->rc == 0 && (n != strlen(val) || memcmp(v, val, n) != 0)) {
            w->rc = -100;
        }
        ftc_free(v);
    }
    if (w->shared == NULL) {
        ftc_store_client_close(c);
    }
    return NULL;
}

static void many_threads(void **state)
{
    (void)state;
    enum { OWN = 12, SHARED = 8 };
    ftc_store_server *srv = start_server(0);
    int port = ftc_store_server_port(srv);
    ftc_store_client *shared = connect_port(port);
    struct worker w[OWN + SHARED];
    pthread_t t[OWN + SHARED];
    for (int i = 0; i < OWN + SHARED; i++) {
        w[i] = (struct worker){i < OWN ? NULL : shared, port, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < OWN + SHARED; i++) {
        pthread_join(t[i], NULL);
        if (w[i].rc != 0) {
            fail_msg("worker %d: %s (%d)", i, ftc_err_name(w[i].rc), w[i].rc);
        }
    }
    int64_t total = 0;
    TK_OK(ftc_store_client_add(shared, "thr/n", 0, &total, T(10000)));
    assert_int_equal(total, (OWN + SHARED) * 300);
    ftc_store_client_close(shared);
    ftc_store_server_destroy(srv);
}

/* ---- many processes */

/* Child: adds to a counter, then meets the others at a barrier (add, then
 * the last one sets "go", everyone gets it). Exit codes: 0 ok, 2 connect,
 * 3 add, 4 get. */
static int role_adder(int argc, char **argv)
{
    if (argc < 3) {
        return 1;
    }
    int k = (int)strtol(argv[2], NULL, 10);
    ftc_store_client *c = sck_connect(argv[1], FTC_STORE_DIALECT_V2);
    if (c == NULL) {
        return 2;
    }
    for (int i = 0; i < 200; i++) {
        if (ftc_store_client_add(c, "proc/n", 1, NULL, T(30000)) != 0) {
            return 3;
        }
    }
    int64_t arrived = 0;
    if (ftc_store_client_add(c, "proc/arrived", 1, &arrived, T(30000)) != 0) {
        return 3;
    }
    if (arrived == k && ftc_store_client_set(c, "proc/go", "1", 1, T(30000))) {
        return 3;
    }
    void *v = NULL;
    size_t n = 0;
    if (ftc_store_client_get(c, "proc/go", &v, &n, T(60000)) != 0) {
        return 4;
    }
    ftc_free(v);
    ftc_store_client_close(c);
    return 0;
}

static void many_processes(void **state)
{
    (void)state;
    enum { K = 8 };
    ftc_store_server *srv = start_server(0);
    char addr[64], k_s[16];
    addr_of(ftc_store_server_port(srv), addr, sizeof(addr));
    snprintf(k_s, sizeof(k_s), "%d", K);
    tk_child kids[K];
    char *args[] = {addr, k_s, NULL};
    for (int i = 0; i < K; i++) {
        tk_spawn(&kids[i], "adder", args, NULL);
    }
    assert_int_equal(tk_reap(kids, K, 120000), 0);
    for (int i = 0; i < K; i++) {
        if (tk_exit_code(&kids[i]) != 0) {
            fail_msg("adder %d exited with %d", i, tk_exit_code(&kids[i]));
        }
    }
    ftc_store_client *c = connect_port(ftc_store_server_port(srv));
    int64_t total = 0;
    TK_OK(ftc_store_client_add(c, "proc/n", 0, &total, T(10000)));
    assert_int_equal(total, K * 200);
    ftc_store_client_close(c);
    ftc_store_server_destroy(srv);
}

/* ---- the server restarts on the same port */

struct retry_call {
    ftc_store_client *c;
    int rc;
    int64_t keys;
};

static void *num_keys_call(void *arg)
{
    struct retry_call *r = arg;
    r->rc = ftc_store_client_num_keys(r->c, &r->keys, T(30000));
    return NULL;
}

static void reconnects_after_a_server_restart(void **state)
{
    (void)state;
    ftc_store_server *srv = start_server(0);
    int port = ftc_store_server_port(srv);
    ftc_store_client *c = connect_port(port);
    sck_set_str(c, "r/k", "1", T(10000));
    sck_expect_str(c, "r/k", "1", T(10000));
    /* A get parked on the server ends when the server goes away. */
    sck_blocked b;
    uint64_t w0 = sck_writes(c);
    sck_block_in_get(&b, c, "r/never");
    TK_WAIT_UNTIL(sck_writes(c) > w0, 10000); /* its WAIT + GET are sent */
    ftc_store_server_destroy(srv);
    TK_WAIT_UNTIL(atomic_load(&b.done), 10000);
    pthread_join(b.thread, NULL);
    assert_true(b.rc == FTC_ECLOSED || b.rc == FTC_EPEER);
    /* While it is down, a call retries the connection until it is back. */
    struct retry_call r = {c, -1, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, num_keys_call, &r), 0);
    srv = start_server(port);
    pthread_join(t, NULL);
    TK_OK(r.rc);
    assert_int_equal(r.keys, 0); /* a fresh server */
    assert_true(sck_connects(c) >= 2);
    /* A one-way set on a connection the restart closed must not be lost:
     * the idle check replaces the connection first. */
    ftc_store_server_destroy(srv);
    srv = start_server(port);
    uint64_t before = sck_connects(c);
    sck_set_str(c, "r/k2", "2", T(10000));
    assert_int_equal(sck_connects(c), before + 1);
    ftc_store_client *other = connect_port(port);
    sck_expect_str(other, "r/k2", "2", T(10000));
    ftc_store_client_close(other);
    ftc_store_client_close(c);
    ftc_store_server_destroy(srv);
}

int main(int argc, char **argv)
{
    const tk_role roles[] = {{"adder", role_adder}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_is_one_round_trip),
        cmocka_unit_test(v1_dialect_against_the_ftc_server),
        cmocka_unit_test(waits_are_woken_by_every_write),
        cmocka_unit_test(timeouts_keep_the_connection_in_step),
        cmocka_unit_test(cancel_unblocks_a_parked_get),
        cmocka_unit_test(many_threads),
        cmocka_unit_test(many_processes),
        cmocka_unit_test(reconnects_after_a_server_restart),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
