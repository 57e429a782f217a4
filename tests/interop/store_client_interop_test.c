/* The ftc store client against PyTorch's own TCPStore servers (torch 2.x
 * libuv and legacy servers, torch 1.13), next to a real PyTorch client.
 * usage: store_client_interop_test PYTHON AGENT_PY {torch2|torch2_legacy|
 * torch1} */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base_int.h"
#include "store/client/client_int.h"
#include "store_client_kit.h"
#include "testkit.h"
#include "torch_kit.h"

static const char *python, *agent_py, *flavour;
static int dialect;   /* FTC_STORE_DIALECT_* that the server speaks */
static int legacy_2x; /* torch 2.x legacy server: no queues */
static torch_agent agent;
static char agent_error[512];
static ftc_store_client *store; /* one client shared by the tests */

#define T(ms) tk_ms(ms)

/* ---- the PyTorch side */

static json_t *cmd(const char *op, const char *prefix, const char *key)
{
    json_t *c = json_pack("{s:s}", "op", op);
    if (prefix != NULL) {
        json_object_set_new(c, "prefix", json_string(prefix));
    }
    if (key != NULL) {
        json_object_set_new(c, "key", json_string(key));
    }
    return c;
}

static json_t *with_value(json_t *c, const void *v, size_t n)
{
    char *hex = ftc__malloc(2 * n + 1);
    torch_agent_hex(v, n, hex);
    json_object_set_new(c, "value", json_string(hex));
    ftc__free(hex);
    return c;
}

static void py_set(const char *prefix, const char *key, const char *v)
{
    json_decref(torch_agent_ok(
        &agent, with_value(cmd("set", prefix, key), v, strlen(v))));
}

static void py_expect(const char *prefix, const char *key, const char *want)
{
    json_t *r = torch_agent_ok(&agent, cmd("get", prefix, key));
    char got[4096];
    size_t n = torch_agent_unhex(json_string_value(r), got, sizeof(got));
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    json_decref(r);
}

static int64_t py_add(const char *key, int64_t delta)
{
    json_t *c = cmd("add", NULL, key);
    json_object_set_new(c, "delta", json_integer(delta));
    json_t *r = torch_agent_ok(&agent, c);
    int64_t v = json_integer_value(r);
    json_decref(r);
    return v;
}

/* ---- the ftc side */

static void need_agent(void)
{
    if (agent.pid <= 0) {
        fail_msg("no PyTorch server (%s): %s", flavour, agent_error);
    }
}

static ftc_store_client *connect_opts(const char *addr, size_t max_value)
{
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.dialect = dialect;
    o.connect_timeout_ms = T(60000);
    o.max_value_bytes = max_value;
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(addr, &o, &c));
    return c;
}

/* ---- tests */

static void probe_found_a_pytorch_server(void **state)
{
    (void)state;
    need_agent();
    assert_int_equal(store->core->conn.server, dialect == FTC_STORE_DIALECT_V2
                                                   ? FTC__STORE_SERVER_TORCH
                                                   : FTC__STORE_SERVER_UNKNOWN);
    if (dialect == FTC_STORE_DIALECT_V2) {
        TK_OK(ftc_store_client_ping(store, T(10000)));
    } else {
        TK_EXPECT(ftc_store_client_ping(store, T(10000)), FTC_ENOTSUP);
    }
}

static void values_roundtrip(void **state)
{
    (void)state;
    need_agent();
    sck_set_str(store, "ops/k", "v", T(10000));
    sck_expect_str(store, "ops/k", "v", T(10000));
    sck_set_str(store, "ops/k", "v2", T(10000)); /* overwrite */
    sck_expect_str(store, "ops/k", "v2", T(10000));
    sck_set_str(store, "ops/empty", "", T(10000));
    sck_expect_str(store, "ops/empty", "", T(10000));
    unsigned char bin[256];
    for (int i = 0; i < 256; i++) {
        bin[i] = (unsigned char)(255 - i);
    }
    TK_OK(ftc_store_client_set(store, "ops/bin", bin, sizeof(bin), T(10000)));
    sck_expect_value(store, "ops/bin", bin, sizeof(bin), T(10000));
    /* 3 MiB: under the libuv server's 8 MiB payload limit. */
    size_t big_n = 3 << 20;
    char *big = ftc__malloc(big_n);
    for (size_t i = 0; i < big_n; i++) {
        big[i] = (char)(i * 7);
    }
    TK_OK(ftc_store_client_set(store, "ops/big", big, big_n, T(30000)));
    sck_expect_value(store, "ops/big", big, big_n, T(10000));
    ftc__free(big);
}

static void counters_and_compare_set(void **state)
{
    (void)state;
    need_agent();
    int64_t v = 0;
    TK_OK(ftc_store_client_add(store, "ops/ctr", 5, &v, T(10000)));
    assert_int_equal(v, 5);
    TK_OK(ftc_store_client_add(store, "ops/ctr", -7, &v, T(10000)));
    assert_int_equal(v, -2);
    sck_expect_str(store, "ops/ctr", "-2",
                   T(10000)); /* stored as decimal text */
    void *cur = NULL;
    size_t n = 0;
    /* Missing key, empty expected: set. */
    TK_OK(ftc_store_client_compare_set(store, "ops/cs", "", 0, "a", 1, &cur, &n,
                                       T(10000)));
    assert_int_equal(n, 1);
    assert_memory_equal(cur, "a", 1);
    ftc_free(cur);
    /* Present, matching: replaced. */
    TK_OK(ftc_store_client_compare_set(store, "ops/cs", "a", 1, "bb", 2, &cur,
                                       &n, T(10000)));
    assert_memory_equal(cur, "bb", 2);
    ftc_free(cur);
    /* Present, not matching: unchanged, current value returned. */
    TK_OK(ftc_store_client_compare_set(store, "ops/cs", "zz", 2, "c", 1, &cur,
                                       &n, T(10000)));
    assert_int_equal(n, 2);
    assert_memory_equal(cur, "bb", 2);
    ftc_free(cur);
    sck_expect_str(store, "ops/cs", "bb", T(10000));
    /* Missing key, non-empty expected: nothing set, expected returned. */
    TK_OK(ftc_store_client_compare_set(store, "ops/cs2", "x", 1, "y", 1, &cur,
                                       &n, T(10000)));
    assert_memory_equal(cur, "x", 1);
    ftc_free(cur);
    const char *k = "ops/cs2";
    int ready = 1;
    TK_OK(ftc_store_client_check(store, &k, 1, &ready, T(10000)));
    assert_int_equal(ready, 0);
    /* current may be NULL. */
    TK_OK(ftc_store_client_compare_set(store, "ops/cs", "bb", 2, "d", 1, NULL,
                                       NULL, T(10000)));
    sck_expect_str(store, "ops/cs", "d", T(10000));
}

static void check_wait_delete_num_keys(void **state)
{
    (void)state;
    need_agent();
    sck_set_str(store, "cw/a", "1", T(10000));
    const char *both[] = {"cw/a", "cw/b"};
    int ready = -1;
    TK_OK(ftc_store_client_check(store, both, 1, &ready, T(10000)));
    assert_int_equal(ready, 1);
    TK_OK(ftc_store_client_check(store, both, 2, &ready, T(10000)));
    assert_int_equal(ready, 0);
    TK_OK(ftc_store_client_check(store, NULL, 0, &ready, T(10000)));
    assert_int_equal(ready, 1);
    TK_OK(ftc_store_client_wait(store, both, 1, T(10000)));
    int64_t n0 = 0, n1 = 0;
    TK_OK(ftc_store_client_num_keys(store, &n0, T(10000)));
    sck_set_str(store, "cw/b", "2", T(10000));
    TK_OK(ftc_store_client_num_keys(store, &n1, T(10000)));
    assert_int_equal(n1, n0 + 1);
    TK_OK(ftc_store_client_wait(store, both, 2, T(10000)));
    int deleted = -1;
    TK_OK(ftc_store_client_delete(store, "cw/b", &deleted, T(10000)));
    assert_int_equal(deleted, 1);
    TK_OK(ftc_store_client_delete(store, "cw/b", &deleted, T(10000)));
    assert_int_equal(deleted, 0);
    TK_OK(ftc_store_client_check(store, both, 2, &ready, T(10000)));
    assert_int_equal(ready, 0);
    TK_OK(ftc_store_client_num_keys(store, &n1, T(10000)));
    assert_int_equal(n1, n0);
}

static void multi_ops_and_append(void **state)
{
    (void)state;
    need_agent();
    const char *ks[] = {"mo/a", "mo/b", "mo/c"};
    ftc_store_value in[] = {{"A", 1}, {"", 0}, {"CCC", 3}}, out[3];
    TK_OK(ftc_store_client_multi_set(store, ks, in, 3, T(10000)));
    TK_OK(ftc_store_client_multi_get(store, ks, 3, out, T(10000)));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(out[i].len, in[i].len);
        assert_non_null(out[i].data);
        assert_memory_equal(out[i].data, in[i].data, in[i].len);
    }
    ftc_store_values_free(out, 3);
    const char *missing[] = {"mo/a", "mo/none"};
    TK_EXPECT(ftc_store_client_multi_get(store, missing, 2, out, 100),
              FTC_ETIMEDOUT);
    assert_null(out[0].data);
    if (dialect == FTC_STORE_DIALECT_V1) {
        TK_EXPECT(ftc_store_client_append(store, "mo/a", "x", 1, 100),
                  FTC_ENOTSUP);
        return;
    }
    TK_OK(ftc_store_client_append(store, "mo/a", "bc", 2, T(10000)));
    TK_OK(ftc_store_client_append(store, "mo/new", "n", 1, T(10000)));
    sck_expect_str(store, "mo/a", "Abc", T(10000));
    sck_expect_str(store, "mo/new", "n", T(10000));
}

static void queues(void **state)
{
    (void)state;
    need_agent();
    int64_t len = -1;
    void *v = NULL;
    size_t n = 0;
    if (dialect == FTC_STORE_DIALECT_V1) {
        TK_EXPECT(ftc_store_client_queue_len(store, "q", &len, 100),
                  FTC_ENOTSUP);
        return;
    }
    if (legacy_2x) {
        /* The legacy server has no queues: it drops the connection. The
         * client reports it and reconnects for the next call. */
        int rc = ftc_store_client_queue_len(store, "q", &len, T(10000));
        assert_true(rc == FTC_ECLOSED || rc == FTC_EPEER);
        sck_set_str(store, "q/after", "ok", T(10000));
        sck_expect_str(store, "q/after", "ok", T(10000));
        return;
    }
    TK_OK(ftc_store_client_queue_push(store, "q", "x", 1, T(10000)));
    TK_OK(ftc_store_client_queue_push(store, "q", "yy", 2, T(10000)));
    TK_OK(ftc_store_client_queue_len(store, "q", &len, T(10000)));
    assert_int_equal(len, 2);
    TK_OK(ftc_store_client_queue_pop(store, "q", 0, &v, &n, T(10000)));
    assert_memory_equal(v, "x", 1);
    ftc_free(v);
    TK_OK(ftc_store_client_queue_pop(store, "q", 1, &v, &n, T(10000)));
    assert_int_equal(n, 2);
    assert_memory_equal(v, "yy", 2);
    ftc_free(v);
    TK_EXPECT(ftc_store_client_queue_pop(store, "q", 0, &v, &n, T(10000)),
              FTC_ENOENT);
    TK_EXPECT(ftc_store_client_queue_pop(store, "q", 1, &v, &n, 100),
              FTC_ETIMEDOUT);
    assert_null(v);
    TK_OK(ftc_store_client_queue_push(store, "q", "z", 1, T(10000)));
    TK_OK(ftc_store_client_queue_pop(store, "q", 1, &v, &n, T(10000)));
    assert_memory_equal(v, "z", 1);
    ftc_free(v);
    /* A PyTorch client pops what we pushed. */
    TK_OK(ftc_store_client_queue_push(store, "q2", "from-c", 6, T(10000)));
    json_t *r = torch_agent_ok(&agent, cmd("queue_pop", NULL, "q2"));
    assert_string_equal(json_string_value(r), "66726f6d2d63");
    json_decref(r);
}

/* The mixed test: a PyTorch client and ours on the same server see each
 * other's keys, counters, prefixes and wake-ups. */
static void pytorch_and_ftc_clients_share_keys(void **state)
{
    (void)state;
    need_agent();
    sck_set_str(store, "mix/a", "from-c", T(10000));
    py_expect(NULL, "mix/a", "from-c");
    py_set(NULL, "mix/b", "from-py");
    sck_expect_str(store, "mix/b", "from-py", T(10000));
    assert_int_equal(py_add("mix/n", 5), 5);
    int64_t v = 0;
    TK_OK(ftc_store_client_add(store, "mix/n", 7, &v, T(10000)));
    assert_int_equal(v, 12);
    assert_int_equal(py_add("mix/n", 0), 12);
    /* Views are PrefixStores. */
    ftc_store_client *grp = NULL, *sub = NULL;
    TK_OK(ftc_store_client_prefix(store, "grp", &grp));
    TK_OK(ftc_store_client_prefix(grp, "sub", &sub));
    sck_set_str(grp, "k", "in-grp", T(10000));
    py_expect("grp", "k", "in-grp");
    py_set("grp/sub", "k2", "in-sub");
    sck_expect_str(sub, "k2", "in-sub", T(10000));
    py_expect(NULL, "grp/sub/k2", "in-sub");
    /* A PyTorch wait is woken by our set. */
    json_t *w = cmd("wait", NULL, NULL);
    json_object_set_new(w, "keys", json_pack("[s]", "mix/late"));
    json_object_set_new(w, "timeout_ms", json_integer(T(30000)));
    torch_agent_send(&agent, w);
    json_decref(w);
    sck_set_str(store, "mix/late", "now", T(10000));
    json_t *reply = torch_agent_recv(&agent, 30000);
    assert_true(json_is_true(json_object_get(reply, "ok")));
    json_decref(reply);
    /* PyTorch's compare_set sees our value. */
    json_t *cs = with_value(cmd("compare_set", NULL, "mix/a"), "swapped", 7);
    json_object_set_new(cs, "expected", json_string("66726f6d2d63"));
    json_t *r = torch_agent_ok(&agent, cs);
    assert_string_equal(json_string_value(r), "73776170706564");
    json_decref(r);
    sck_expect_str(store, "mix/a", "swapped", T(10000));
    if (dialect == FTC_STORE_DIALECT_V2) {
        TK_OK(ftc_store_client_append(store, "mix/b", "+c", 2, T(10000)));
        py_expect(NULL, "mix/b", "from-py+c");
        json_t *mg = cmd("multi_get", NULL, NULL);
        json_object_set_new(mg, "keys", json_pack("[s,s]", "mix/a", "mix/b"));
        r = torch_agent_ok(&agent, mg);
        assert_string_equal(json_string_value(json_array_get(r, 0)),
                            "73776170706564");
        json_decref(r);
    }
    r = torch_agent_ok(&agent, cmd("delete", NULL, "mix/a"));
    json_decref(r);
    const char *k = "mix/a";
    int ready = 1;
    TK_OK(ftc_store_client_check(store, &k, 1, &ready, T(10000)));
    assert_int_equal(ready, 0);
    ftc_store_client_close(sub);
    ftc_store_client_close(grp);
}

struct barrier_rank {
    int rank;
    int rc;
    ftc_store_barrier_result res;
};

static void *enter_barrier(void *arg)
{
    struct barrier_rank *b = arg;
    ftc_store_client *c = connect_opts(agent.addr, 1 << 20);
    b->rc = ftc_store_client_barrier(c, "ib", b->rank, 3, &b->res, T(30000));
    ftc_store_client_close(c);
    return NULL;
}

/* The c10d barrier on PyTorch's server (plain ops: no CONTROL_BARRIER
 * there) with a PyTorch rank doing it by hand: it arrives first, ftc rank
 * 1 waits, ftc rank 2 is last and completes it for everyone; then a rank
 * alone times out, and the client carries on. */
static void barrier_with_a_pytorch_rank(void **state)
{
    (void)state;
    need_agent();
    assert_int_equal(py_add("ib/num_members", 1), 1);
    py_set(NULL, "ib/0", "joined");
    struct barrier_rank r1 = {.rank = 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, enter_barrier, &r1), 0);
    TK_WAIT_UNTIL(py_add("ib/num_members", 0) == 2, 30000);
    ftc_store_barrier_result res;
    TK_OK(ftc_store_client_barrier(store, "ib", 2, 3, &res, T(30000)));
    pthread_join(t, NULL);
    assert_int_equal(r1.rc, 0);
    assert_int_equal(r1.res.arrived, 2);
    assert_int_equal(res.arrived, 3);
    ftc_store_barrier_result *both[] = {&res, &r1.res};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(both[i]->last_members_len, 13);
        assert_memory_equal(both[i]->last_members, "<val_ignored>", 13);
        ftc_free(both[i]->last_members);
    }
    py_expect(NULL, "ib/1", "joined");
    py_expect(NULL, "ib/2", "joined");
    py_expect(NULL, "ib/last_members", "<val_ignored>");
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc_store_client_barrier(store, "ib2", 0, 2, &res, 200),
              FTC_ETIMEDOUT);
    assert_true(tk_now_ms() - t0 >= 190);
    assert_null(res.last_members);
    assert_int_equal(py_add("ib2/num_members", 1), 2);
    py_set(NULL, "ib2/last_members", "<val_ignored>");
    sck_set_str(store, "ib/after", "ok", T(10000));
    py_expect(NULL, "ib/after", "ok");
}

/* A timed-out wait or get leaves nothing behind: when the key appears
 * later, the next call still gets its own answer. */
static void timeouts_never_desynchronise(void **state)
{
    (void)state;
    need_agent();
    sck_set_str(store, "ds/a", "A", T(10000));
    const char *zz = "ds/zz";
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc_store_client_wait(store, &zz, 1, 200), FTC_ETIMEDOUT);
    assert_true(tk_now_ms() - t0 >= 190);
    assert_string_equal(ftc_last_error(),
                        "wait timeout after 200 ms, keys: ds/zz");
    py_set(NULL, "ds/zz", "late"); /* 1.13 now sends a stray answer */
    sck_expect_str(store, "ds/a", "A", T(10000));
    void *v = NULL;
    size_t n = 0;
    TK_EXPECT(ftc_store_client_get(store, "ds/yy", &v, &n, 200), FTC_ETIMEDOUT);
    py_set(NULL, "ds/yy", "yy");
    sck_expect_str(store, "ds/a", "A", T(10000));
    sck_expect_str(store, "ds/yy", "yy", T(10000));
    sck_expect_str(store, "ds/zz", "late", T(10000));
    int64_t c = 0;
    TK_OK(ftc_store_client_add(store, "ds/n", 3, &c, T(10000)));
    assert_int_equal(c, 3);
}

static void cancel_from_another_thread(void **state)
{
    (void)state;
    need_agent();
    sck_set_str(store, "cancel/a", "A", T(10000));
    sck_blocked g;
    int64_t t0 = tk_now_ms();
    sck_block_in_get(&g, store, "cancel/never");
    assert_int_equal(sck_cancel_and_join(&g, store), FTC_ECANCELED);
    assert_true(tk_now_ms() - t0 < T(5000));
    py_set(NULL, "cancel/never", "x"); /* the old wait's answer, if any */
    sck_expect_str(store, "cancel/a", "A", T(10000));
}

struct adder {
    int id;
    int rc;
};

static void *add_many(void *arg)
{
    struct adder *a = arg;
    char key[32], val[32];
    snprintf(key, sizeof(key), "thr/k%d", a->id);
    for (int i = 0; i < 200 && a->rc == 0; i++) {
        a->rc = ftc_store_client_add(store, "thr/n", 1, NULL, T(30000));
        snprintf(val, sizeof(val), "%d-%d", a->id, i);
        if (a->rc == 0) {
            a->rc =
                ftc_store_client_set(store, key, val, strlen(val), T(30000));
        }
        void *v = NULL;
        size_t n = 0;
        if (a->rc == 0) {
            a->rc = ftc_store_client_get(store, key, &v, &n, T(30000));
        }
        if (a->rc == 0 && (n != strlen(val) || memcmp(v, val, n) != 0)) {
            a->rc = -100; /* someone else's answer */
        }
        ftc_free(v);
    }
    return NULL;
}

static void threads_share_one_client(void **state)
{
    (void)state;
    need_agent();
    enum { N = 4 };
    struct adder a[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        a[i] = (struct adder){.id = i};
        assert_int_equal(pthread_create(&t[i], NULL, add_many, &a[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].rc, 0);
    }
    assert_int_equal(py_add("thr/n", 0), N * 200);
}

static void reply_limit_is_enforced(void **state)
{
    (void)state;
    need_agent();
    char big[2000];
    memset(big, 'b', sizeof(big));
    TK_OK(ftc_store_client_set(store, "lim/big", big, sizeof(big), T(10000)));
    sck_set_str(store, "lim/small", "s", T(10000));
    ftc_store_client *c = connect_opts(agent.addr, 1000);
    void *v = NULL;
    size_t n = 0;
    TK_EXPECT(ftc_store_client_get(c, "lim/big", &v, &n, T(10000)),
              FTC_EMSGSIZE);
    assert_null(v);
    sck_expect_str(c, "lim/small", "s", T(10000));
    ftc_store_client_close(c);
}

/* The client keeps retrying until a server that starts later listens. */
struct late_connect {
    char addr[64];
    ftc_store_client *c;
    int rc;
};

static void *connect_late(void *arg)
{
    struct late_connect *l = arg;
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.dialect = dialect;
    o.connect_timeout_ms = T(120000);
    l->rc = ftc_store_client_connect(l->addr, &o, &l->c);
    return NULL;
}

static void connect_waits_for_a_late_server(void **state)
{
    (void)state;
    need_agent();
    int lfd, port;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 1, &lfd, &port));
    close(lfd); /* free now; the late server takes it */
    char port_s[16], why[512];
    snprintf(port_s, sizeof(port_s), "%d", port);
    struct late_connect l = {.c = NULL};
    snprintf(l.addr, sizeof(l.addr), "127.0.0.1:%d", port);
    /* Connecting starts first; the interpreter then takes seconds to
     * import torch and listen, so the first attempts are refused. */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, connect_late, &l), 0);
    const char *args[] = {"--port", port_s, legacy_2x ? "--legacy" : NULL,
                          NULL};
    torch_agent late;
    int started = torch_agent_start(&late, python, agent_py, args, 120000, why,
                                    sizeof(why));
    pthread_join(t, NULL);
    if (started != 0) {
        fail_msg("%s", why);
    }
    TK_OK(l.rc);
    sck_set_str(l.c, "late/k", "v", T(10000));
    json_t *r = torch_agent_ok(&late, cmd("get", NULL, "late/k"));
    assert_string_equal(json_string_value(r), "76");
    json_decref(r);
    ftc_store_client_close(l.c);
    torch_agent_stop(&late);
}

static int setup_store(void)
{
    if (agent.pid <= 0) {
        return 0;
    }
    store = connect_opts(agent.addr, FTC_SIZE_DEFAULT);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--tk-role") != 0) {
        python = argv[1];
        agent_py = argv[2];
        flavour = argv[3];
    }
    if (flavour == NULL || (strcmp(flavour, "torch2") != 0 &&
                            strcmp(flavour, "torch2_legacy") != 0 &&
                            strcmp(flavour, "torch1") != 0)) {
        fprintf(stderr,
                "usage: %s PYTHON AGENT_PY "
                "{torch2|torch2_legacy|torch1}\n",
                argv[0]);
        return 2;
    }
    dialect = strcmp(flavour, "torch1") == 0 ? FTC_STORE_DIALECT_V1
                                             : FTC_STORE_DIALECT_V2;
    legacy_2x = strcmp(flavour, "torch2_legacy") == 0;
    const char *args[] = {legacy_2x ? "--legacy" : NULL, NULL};
    if (torch_agent_start(&agent, python, agent_py, args, 120000, agent_error,
                          sizeof(agent_error)) != 0) {
        fprintf(stderr, "%s\n", agent_error);
    } else {
        printf("PyTorch %s server (%s) on port %d\n", agent.version, flavour,
               agent.port);
    }
    setup_store();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(probe_found_a_pytorch_server),
        cmocka_unit_test(values_roundtrip),
        cmocka_unit_test(counters_and_compare_set),
        cmocka_unit_test(check_wait_delete_num_keys),
        cmocka_unit_test(multi_ops_and_append),
        cmocka_unit_test(queues),
        cmocka_unit_test(pytorch_and_ftc_clients_share_keys),
        cmocka_unit_test(barrier_with_a_pytorch_rank),
        cmocka_unit_test(timeouts_never_desynchronise),
        cmocka_unit_test(cancel_from_another_thread),
        cmocka_unit_test(threads_share_one_client),
        cmocka_unit_test(reply_limit_is_enforced),
        cmocka_unit_test(connect_waits_for_a_late_server),
    };
    int rc = tk_main(1, argv, NULL, 0, tests);
    ftc_store_client_close(store);
    torch_agent_stop(&agent);
    return rc;
}
