/* Store client calls against a scripted fake server: the handshake and
 * probe, one-write get, timeouts that never desynchronise, reconnects,
 * cancel from another thread, reply limits and malformed replies. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/base_int.h"
#include "store_fake_server_kit.h"
#include "store/client/client_int.h"
#include "store_client_kit.h"
#include "testkit.h"

#define V1 FTC_STORE_DIALECT_V1
#define V2 FTC_STORE_DIALECT_V2
#define FTC FTC__STORE_SERVER_FTC
#define TORCH FTC__STORE_SERVER_TORCH

static ftc_store_client *connect_to(fs_server *s, int dialect)
{
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.dialect = dialect;
    o.connect_timeout_ms = tk_ms(10000);
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(s->addr, &o, &c));
    return c;
}

static ftc__store_conn *conn_of(ftc_store_client *c)
{
    return &c->core->conn;
}

/* A request the fake server expects, encoded by the (separately
 * byte-checked) codec. */
static ftc__store_req req_v(int dialect)
{
    ftc__store_req r;
    ftc__store_req_init(&r, dialect);
    return r;
}

static void expect_get(fs_server *s, int fd, ftc__store_req *r, const char *key)
{
    TK_OK(ftc__store_enc_keys(r, FTC__OP_WAIT, NULL, &key, 1));
    TK_OK(ftc__store_enc_key(r, FTC__OP_GET, NULL, key));
    fs_expect_req(s, fd, r);
}

/* Serves a get the way a PyTorch server sees it: WAIT, its answer, and
 * only then GET. */
static void serve_get_in_two(fs_server *s, int fd, ftc__store_req *r,
                             const char *key, const char *value)
{
    TK_OK(ftc__store_enc_keys(r, FTC__OP_WAIT, NULL, &key, 1));
    fs_expect_req(s, fd, r);
    fs_send_hex(s, fd, "00");
    TK_OK(ftc__store_enc_key(r, FTC__OP_GET, NULL, key));
    fs_expect_req(s, fd, r);
    fs_send_value(s, fd, value, strlen(value));
}

/* Serves a get sent as one write (WAIT + GET), answering both. */
static void serve_get_in_one(fs_server *s, int fd, ftc__store_req *r,
                             const char *key, const char *value)
{
    expect_get(s, fd, r, key);
    fs_send_hex(s, fd, "00");
    fs_send_value(s, fd, value, strlen(value));
}

/* ---- handshake and probe */

static void script_probe(fs_server *s)
{
    int kinds[] = {FTC, TORCH};
    for (int i = 0; i < 2; i++) {
        int fd = fs_accept_v2(s, kinds[i]);
        fs_end(s, fd);
    }
    /* Not a TCPStore: answers the PING with something else. */
    int fd = fs_accept(s);
    fs_expect_hex(s, fd, "00 ce f7 85 3c 0d");
    uint8_t nonce[4];
    ftc__sock_recv_all(fd, nonce, 4, ftc__deadline_in_ms(5000), NULL);
    fs_send_hex(s, fd, "01 02 03 04");
    fs_close(fd);
}

static void probe_tells_ftc_from_pytorch(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_probe, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    assert_int_equal(conn_of(c)->server, FTC);
    ftc_store_client_close(c);
    c = connect_to(&s, V2);
    assert_int_equal(conn_of(c)->server, TORCH);
    ftc_store_client_close(c);
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.connect_timeout_ms = tk_ms(10000);
    TK_EXPECT(ftc_store_client_connect(s.addr, &o, &c), FTC_EPROTO);
    assert_null(c);
    assert_non_null(strstr(ftc_last_error(), "not a TCPStore server"));
    fs_finish(&s);
}

/* A server that drops the first connection (still starting up) is retried
 * with backoff, handshake included. */
static void script_drop_first(fs_server *s)
{
    fs_close(fs_accept(s));
    int fd = fs_accept_v2(s, FTC);
    fs_end(s, fd);
}

static void handshake_is_retried(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_drop_first, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    assert_int_equal(conn_of(c)->connects, 2);
    ftc_store_client_close(c);
    fs_finish(&s);
}

static void connect_gives_up_at_its_deadline(void **state)
{
    (void)state;
    int lfd, port;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 1, &lfd, &port));
    close(lfd); /* nothing listens there now */
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.connect_timeout_ms = 200;
    ftc_store_client *c = NULL;
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc_store_client_connect(addr, &o, &c), FTC_ETIMEDOUT);
    assert_true(tk_now_ms() - t0 >= 190);
    assert_non_null(strstr(ftc_last_error(), "attempts"));
    assert_null(c);
}

/* ---- the get paths */

static void script_get_ftc(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    int fd = fs_accept_v2(s, FTC);
    expect_get(s, fd, &r, "k");
    /* The answers to WAIT and GET together; the client reads them in
     * one-byte pieces (recv_chunk = 1). */
    fs_send_hex(s, fd, "00");
    fs_send_value(s, fd, "abc", 3);
    serve_get_in_one(s, fd, &r, "e", "");
    fs_end(s, fd);
    ftc__store_req_free(&r);
}

static void get_is_one_write_against_ftc(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_get_ftc, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    conn_of(c)->recv_chunk = 1;
    uint64_t w0 = conn_of(c)->writes;
    sck_expect_str(c, "k", "abc", tk_ms(5000));
    assert_int_equal(conn_of(c)->writes - w0, 1);
    void *v = NULL;
    size_t n = 7;
    TK_OK(ftc_store_client_get(c, "e", &v, &n, tk_ms(5000)));
    assert_non_null(v); /* non-NULL even when empty */
    assert_int_equal(n, 0);
    ftc_free(v);
    ftc_store_client_close(c);
    fs_finish(&s);
}

static void script_get_torch(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    int fd = fs_accept_v2(s, TORCH);
    serve_get_in_two(s, fd, &r, "k", "xyz");
    fs_end(s, fd);
    ftc__store_req_free(&r);
}

static void get_waits_first_against_pytorch(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_get_torch, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    uint64_t w0 = conn_of(c)->writes;
    sck_expect_str(c, "k", "xyz", tk_ms(5000));
    assert_int_equal(conn_of(c)->writes - w0, 2);
    ftc_store_client_close(c);
    fs_finish(&s);
}

/* ---- timeouts */

/* A WAIT for key that the client cancels (CANCEL_WAIT, 0c) after its
 * timeout, answered with answer. */
static void expect_cancelled_wait(fs_server *s, int fd, ftc__store_req *r,
                                  const char *key, const char *answer)
{
    TK_OK(ftc__store_enc_keys(r, FTC__OP_WAIT, NULL, &key, 1));
    fs_expect_req(s, fd, r);
    fs_expect_hex(s, fd, "0c");
    fs_send_hex(s, fd, answer);
}

static void script_wait_cancel(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    int *kind = s->arg;
    const char *k = "k";
    int fd = fs_accept_v2(s, *kind);
    expect_cancelled_wait(s, fd, &r, k, "01");
    /* The same connection serves the next call, whose own timeout is
     * infinite: the earlier 50 ms must not apply to it. */
    TK_OK(ftc__store_enc_add(&r, NULL, "c", 1));
    fs_expect_req(s, fd, &r);
    tk_pause_ms(200);
    fs_send_i64(s, fd, 7);
    /* The keys arrive in the race: STOP_WAITING, then WAIT_CANCELED. */
    expect_cancelled_wait(s, fd, &r, k, "00 01");
    fs_end(s, fd);
    ftc__store_req_free(&r);
}

/* Against PyTorch (WAIT, then GET): the key arrives as the timed-out WAIT
 * is cancelled; the get then finishes, past its deadline, with the value. */
static void script_get_race_torch(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    const char *k = "k";
    int fd = fs_accept_v2(s, TORCH);
    expect_cancelled_wait(s, fd, &r, k, "00 01");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_GET, NULL, k));
    fs_expect_req(s, fd, &r);
    tk_pause_ms(20); /* the answer comes after the deadline passed */
    fs_send_value(s, fd, "late", 4);
    fs_end(s, fd);
    ftc__store_req_free(&r);
}

static void get_that_wins_the_cancel_race_returns_the_value(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_get_race_torch, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    sck_expect_str(c, "k", "late", 50);
    assert_int_equal(conn_of(c)->connects, 1);
    ftc_store_client_close(c);
    fs_finish(&s);
}

static void wait_timeout_cancels_in_protocol(void **state)
{
    (void)state;
    int kinds[] = {TORCH, FTC};
    for (int i = 0; i < 2; i++) {
        fs_server s;
        fs_start(&s, script_wait_cancel, &kinds[i]);
        ftc_store_client *c = connect_to(&s, V2);
        const char *k = "k";
        int64_t t0 = tk_now_ms();
        TK_EXPECT(ftc_store_client_wait(c, &k, 1, 50), FTC_ETIMEDOUT);
        assert_true(tk_now_ms() - t0 >= 45);
        assert_string_equal(ftc_last_error(),
                            "wait timeout after 50 ms, keys: k");
        int64_t v = 0;
        TK_OK(ftc_store_client_add(c, "c", 1, &v, FTC_TIMEOUT_INFINITE));
        assert_int_equal(v, 7);
        /* The race: the wait succeeded after all. */
        TK_OK(ftc_store_client_wait(c, &k, 1, 50));
        assert_int_equal(conn_of(c)->connects, 1);
        ftc_store_client_close(c);
        fs_finish(&s);
    }
}

/* Replies are read with a blocking recv under SO_RCVTIMEO, which the
 * socket keeps between calls: each call must get its own timeout, longer
 * or shorter than the one before. */
static void script_timeouts_per_call(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    const char *k = "k";
    int fd = fs_accept_v2(s, FTC);
    expect_cancelled_wait(s, fd, &r, k, "01");
    TK_OK(ftc__store_enc_add(&r, NULL, "c", 1));
    fs_expect_req(s, fd, &r);
    tk_pause_ms(200); /* longer than the 50 ms of the call before */
    fs_send_i64(s, fd, 7);
    expect_cancelled_wait(s, fd, &r, k, "01");
    fs_end(s, fd);
    ftc__store_req_free(&r);
}

static void timeouts_are_per_call(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_timeouts_per_call, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    const char *k = "k";
    TK_EXPECT(ftc_store_client_wait(c, &k, 1, 50), FTC_ETIMEDOUT);
    int64_t v = 0;
    TK_OK(ftc_store_client_add(c, "c", 1, &v, tk_ms(10000)));
    assert_int_equal(v, 7);
    /* After a 10 s call, a 100 ms one still times out at 100 ms (the
     * bound proves the mechanism; it is not a timing assertion). */
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc_store_client_wait(c, &k, 1, 100), FTC_ETIMEDOUT);
    int64_t took = tk_now_ms() - t0;
    assert_true(took >= 95);
    assert_true(took < 5000);
    assert_int_equal(conn_of(c)->connects, 1);
    ftc_store_client_close(c);
    fs_finish(&s);
}

/* A pipelined get (WAIT + GET in one write) that times out against an ftc
 * server is cancelled in-protocol; the server answers in stream order
 * (docs/protocol.md): 01 for the WAIT, then the GET's reply; or, when the
 * key came in the race, 00, the value, then the cancel's own 01. */
static void script_pipelined_cancel(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    int fd = fs_accept_v2(s, FTC);
    expect_get(s, fd, &r, "a");
    fs_expect_hex(s, fd, "0c");
    fs_send_hex(s, fd, "01");
    fs_send_value(s, fd, "", 0); /* GET of the missing key */
    serve_get_in_one(s, fd, &r, "b", "B");
    /* The race. */
    expect_get(s, fd, &r, "c");
    fs_expect_hex(s, fd, "0c");
    fs_send_hex(s, fd, "00");
    fs_send_value(s, fd, "C", 1);
    fs_send_hex(s, fd, "01");
    /* multi_get: every value of the MULTI_GET is read past. */
    const char *ks[] = {"x", "y"};
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, NULL, ks, 2));
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_MULTI_GET, NULL, ks, 2));
    fs_expect_req(s, fd, &r);
    fs_expect_hex(s, fd, "0c");
    fs_send_hex(s, fd, "01");
    fs_send_value(s, fd, "X", 1);
    fs_send_value(s, fd, "", 0);
    /* A blocking pop whose POP took an item after all: not lost. */
    const char *q = "q";
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, NULL, &q, 1));
    TK_OK(ftc__store_enc_key(&r, FTC__OP_QUEUE_POP, NULL, q));
    fs_expect_req(s, fd, &r);
    fs_expect_hex(s, fd, "0c");
    fs_send_hex(s, fd, "01");
    fs_send_i64(s, fd, 1);
    fs_send_value(s, fd, "it", 2);
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_GETNUMKEYS));
    fs_expect_req(s, fd, &r);
    fs_send_i64(s, fd, 4);
    fs_end(s, fd);
    ftc__store_req_free(&r);
}

static void pipelined_timeout_cancels_in_protocol(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_pipelined_cancel, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    void *v = NULL;
    size_t n = 0;
    TK_EXPECT(ftc_store_client_get(c, "a", &v, &n, 50), FTC_ETIMEDOUT);
    assert_string_equal(ftc_last_error(), "get timeout after 50 ms, keys: a");
    assert_null(v);
    sck_expect_str(c, "b", "B", tk_ms(5000));
    sck_expect_str(c, "c", "C", 50); /* the race: a success */
    const char *ks[] = {"x", "y"};
    ftc_store_value vs[2];
    TK_EXPECT(ftc_store_client_multi_get(c, ks, 2, vs, 50), FTC_ETIMEDOUT);
    assert_null(vs[0].data);
    TK_OK(ftc_store_client_queue_pop(c, "q", 1, &v, &n, 50));
    assert_int_equal(n, 2);
    assert_memory_equal(v, "it", 2);
    ftc_free(v);
    int64_t nk = 0;
    TK_OK(ftc_store_client_num_keys(c, &nk, tk_ms(5000)));
    assert_int_equal(nk, 4);
    assert_int_equal(conn_of(c)->connects, 1);
    ftc_store_client_close(c);
    fs_finish(&s);
}

/* 1.13 has no CANCEL_WAIT: a timed-out get costs the connection. Its
 * server's late answer arrives while the client is idle, before the next
 * call; that call, a get of another key, must get its own value, and the
 * client sends nothing more on the old connection. */
static atomic_int timed_out, late_sent;

static void script_late_reply(fs_server *s)
{
    ftc__store_req r = req_v(V1);
    const char *k = "a";
    int fd = fs_accept(s);
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, NULL, &k, 1));
    fs_expect_req(s, fd, &r);
    while (!atomic_load(&timed_out)) {
        tk_pause_ms(1);
    }
    fs_send_hex(s, fd, "00"); /* "a" was set after all */
    atomic_store(&late_sent, 1);
    int fd2 = fs_accept(s);
    fs_end(s, fd);
    serve_get_in_two(s, fd2, &r, "b", "B");
    fs_end(s, fd2);
    ftc__store_req_free(&r);
}

static void late_reply_is_never_the_next_answer(void **state)
{
    (void)state;
    fs_server s;
    atomic_store(&timed_out, 0);
    atomic_store(&late_sent, 0);
    fs_start(&s, script_late_reply, NULL);
    ftc_store_client *c = connect_to(&s, V1);
    void *v = NULL;
    size_t n = 0;
    TK_EXPECT(ftc_store_client_get(c, "a", &v, &n, 50), FTC_ETIMEDOUT);
    assert_string_equal(ftc_last_error(), "get timeout after 50 ms, keys: a");
    assert_null(v);
    atomic_store(&timed_out, 1);
    TK_WAIT_UNTIL(atomic_load(&late_sent), 5000);
    sck_expect_str(c, "b", "B", tk_ms(5000));
    assert_int_equal(conn_of(c)->connects, 2);
    ftc_store_client_close(c);
    fs_finish(&s);
}

/* A 1.13 server closes the connection on a GET of a missing key; after the
 * WAIT that only happens if the key was deleted in between. */
static void script_v1_get_close(fs_server *s)
{
    ftc__store_req r = req_v(V1);
    const char *k = "gone";
    int fd = fs_accept(s);
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, NULL, &k, 1));
    fs_expect_req(s, fd, &r);
    fs_send_hex(s, fd, "00");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_GET, NULL, k));
    fs_expect_req(s, fd, &r);
    fs_close(fd); /* as 1.13's tcpStore_.at() throwing */
    int fd2 = fs_accept(s);
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_GETNUMKEYS));
    fs_expect_req(s, fd2, &r);
    fs_send_i64(s, fd2, 0);
    fs_end(s, fd2);
    ftc__store_req_free(&r);
}

static void v1_get_of_a_deleted_key_reconnects(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_v1_get_close, NULL);
    ftc_store_client *c = connect_to(&s, V1);
    void *v = NULL;
    size_t n = 0;
    TK_EXPECT(ftc_store_client_get(c, "gone", &v, &n, tk_ms(5000)),
              FTC_ECLOSED);
    assert_null(v);
    assert_non_null(strstr(ftc_last_error(), "store get gone"));
    assert_non_null(strstr(ftc_last_error(), "deleted after the wait?"));
    int64_t nk = -1;
    TK_OK(ftc_store_client_num_keys(c, &nk, tk_ms(5000)));
    assert_int_equal(nk, 0);
    assert_int_equal(conn_of(c)->connects, 2);
    ftc_store_client_close(c);
    fs_finish(&s);
}

/* ---- connection faults */

static atomic_int stray_sent;

static void script_faults(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    int fd = fs_accept_v2(s, FTC);
    fs_send_hex(s, fd, "00"); /* nobody asked */
    atomic_store(&stray_sent, 1);
    int fd2 = fs_accept_v2(s, FTC);
    fs_close(fd);
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_GETNUMKEYS));
    fs_expect_req(s, fd2, &r);
    fs_send_i64(s, fd2, 5);
    /* Closed half-way through a reply. */
    TK_OK(ftc__store_enc_add(&r, NULL, "c", 2));
    fs_expect_req(s, fd2, &r);
    fs_send_hex(s, fd2, "01 02 03");
    fs_close(fd2);
    int fd3 = fs_accept_v2(s, FTC);
    TK_OK(ftc__store_enc_add(&r, NULL, "c", 2));
    fs_expect_req(s, fd3, &r);
    fs_send_i64(s, fd3, 9);
    /* A CHECK answered with a byte that is neither READY nor NOT_READY. */
    const char *k = "k";
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_CHECK, NULL, &k, 1));
    fs_expect_req(s, fd3, &r);
    fs_send_hex(s, fd3, "07");
    fs_end(s, fd3);
    ftc__store_req_free(&r);
}

static void faults_force_a_clean_reconnect(void **state)
{
    (void)state;
    fs_server s;
    atomic_store(&stray_sent, 0);
    fs_start(&s, script_faults, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    TK_WAIT_UNTIL(atomic_load(&stray_sent), 5000);
    int64_t v = 0;
    TK_OK(ftc_store_client_num_keys(c, &v, tk_ms(5000)));
    assert_int_equal(v, 5);
    assert_int_equal(conn_of(c)->connects, 2);
    TK_EXPECT(ftc_store_client_add(c, "c", 2, &v, tk_ms(5000)), FTC_ECLOSED);
    assert_non_null(strstr(ftc_last_error(), "store add c"));
    TK_OK(ftc_store_client_add(c, "c", 2, &v, tk_ms(5000)));
    assert_int_equal(v, 9);
    const char *k = "k";
    int ready = 5;
    TK_EXPECT(ftc_store_client_check(c, &k, 1, &ready, tk_ms(5000)),
              FTC_EPROTO);
    assert_int_equal(ready, 5);
    ftc_store_client_close(c);
    fs_finish(&s);
}

static void script_oversize(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    int fd = fs_accept_v2(s, FTC);
    expect_get(s, fd, &r, "k");
    fs_send_hex(s, fd, "00 | 00 00 00 00 00 01 00 00"); /* 1 TiB */
    int fd2 = fs_accept_v2(s, FTC);
    fs_close(fd);
    serve_get_in_one(s, fd2, &r, "k", "0123456789abcdef");
    fs_end(s, fd2);
    ftc__store_req_free(&r);
}

static void oversized_reply_is_refused_before_allocating(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_oversize, NULL);
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.max_value_bytes = 16;
    o.connect_timeout_ms = tk_ms(10000);
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(s.addr, &o, &c));
    void *v = NULL;
    size_t n = 0;
    /* Were the length trusted, this allocation would be 1 TiB. */
    TK_EXPECT(ftc_store_client_get(c, "k", &v, &n, tk_ms(5000)), FTC_EMSGSIZE);
    assert_non_null(strstr(ftc_last_error(), "max_value_bytes 16"));
    assert_non_null(strstr(ftc_last_error(), "store get k"));
    sck_expect_str(c, "k", "0123456789abcdef", tk_ms(5000));
    ftc_store_client_close(c);
    fs_finish(&s);
}

/* ---- cancel */

static void script_cancel(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    int fd = fs_accept_v2(s, FTC);
    expect_get(s, fd, &r, "never");
    int fd2 = fs_accept_v2(s, FTC);
    fs_end(s, fd);
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_GETNUMKEYS));
    fs_expect_req(s, fd2, &r);
    fs_send_i64(s, fd2, 3);
    fs_end(s, fd2);
    ftc__store_req_free(&r);
}

static void cancel_from_another_thread(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_cancel, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    ftc_store_client *view = NULL;
    TK_OK(ftc_store_client_prefix(c, "p", &view));
    /* A cancel with no call in progress does not stop the next call. */
    ftc_store_client_cancel(view);
    sck_blocked g;
    sck_block_in_get(&g, c, "never");
    assert_int_equal(sck_cancel_and_join(&g, view), FTC_ECANCELED);
    int64_t v = 0;
    TK_OK(ftc_store_client_num_keys(c, &v, tk_ms(5000)));
    assert_int_equal(v, 3);
    ftc_store_client_close(view);
    ftc_store_client_close(c);
    fs_finish(&s);
}

/* Reads and drops bytes until the client closes fd (at most 20 s); sets
 * *got once the first bytes came. */
static void discard_until_eof(fs_server *s, int fd, atomic_int *got)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    uint8_t b[256];
    while (poll(&p, 1, 20000) == 1) {
        if (recv(fd, b, sizeof(b), 0) <= 0) {
            return;
        }
        atomic_store(got, 1);
    }
    fs_fail(s, "the client did not close its connection");
}

/* The first connection fails a call; the reconnect's handshake is never
 * answered, so the next call blocks in it until cancelled. */
static void script_cancel_in_handshake(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    int fd = fs_accept_v2(s, FTC);
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_GETNUMKEYS));
    fs_expect_req(s, fd, &r);
    fs_close(fd);
    int fd2 = fs_accept(s);
    discard_until_eof(s, fd2, s->arg);
    fs_close(fd2);
    ftc__store_req_free(&r);
}

/* A cancel reaches a call blocked in the handshake of its reconnect (a
 * blocking read on a socket the call has just opened). */
static void cancel_reaches_a_reconnect(void **state)
{
    (void)state;
    fs_server s;
    atomic_int in_handshake = 0;
    fs_start(&s, script_cancel_in_handshake, &in_handshake);
    ftc_store_client *c = connect_to(&s, V2);
    int64_t v = 0;
    TK_EXPECT(ftc_store_client_num_keys(c, &v, tk_ms(5000)), FTC_ECLOSED);
    sck_blocked g;
    sck_block_in_get(&g, c, "never");
    /* Connected again and sent the handshake: cancel only now. */
    TK_WAIT_UNTIL(atomic_load(&in_handshake), 10000);
    assert_int_equal(sck_cancel_and_join(&g, c), FTC_ECANCELED);
    assert_int_equal(conn_of(c)->connects, 2);
    ftc_store_client_close(c);
    fs_finish(&s);
}

/* ---- other ops */

static void script_views(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    int fd = fs_accept_v2(s, FTC);
    TK_OK(ftc__store_enc_key_value(&r, FTC__OP_SET, "a/b", "k", "v", 1));
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_GETNUMKEYS));
    fs_expect_req(s, fd, &r);
    fs_send_i64(s, fd, 1);
    const char *ks[] = {"x", "y"};
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, "a", ks, 2));
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_MULTI_GET, "a", ks, 2));
    fs_expect_req(s, fd, &r);
    fs_send_hex(s, fd, "00");
    fs_send_value(s, fd, "X", 1);
    fs_send_value(s, fd, "YY", 2);
    TK_OK(ftc__store_enc_key(&r, FTC__OP_DELETE_KEY, "a", "x"));
    fs_expect_req(s, fd, &r);
    fs_send_i64(s, fd, 1);
    fs_end(s, fd);
    ftc__store_req_free(&r);
}

static void views_prefix_keys_and_share_the_connection(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_views, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    ftc_store_client *a = NULL, *ab = NULL;
    TK_OK(ftc_store_client_prefix(c, "a", &a));
    TK_OK(ftc_store_client_prefix(a, "b", &ab));
    TK_OK(ftc_store_client_set(ab, "k", "v", 1, tk_ms(5000)));
    int64_t nk = 0;
    TK_OK(ftc_store_client_num_keys(ab, &nk, tk_ms(5000))); /* unprefixed */
    assert_int_equal(nk, 1);
    ftc_store_client_close(ab); /* the connection stays */
    const char *ks[] = {"x", "y"};
    ftc_store_value vs[2];
    uint64_t w0 = conn_of(c)->writes;
    TK_OK(ftc_store_client_multi_get(a, ks, 2, vs, tk_ms(5000)));
    assert_int_equal(conn_of(c)->writes - w0, 1);
    assert_int_equal(vs[0].len, 1);
    assert_memory_equal(vs[0].data, "X", 1);
    assert_int_equal(vs[1].len, 2);
    assert_memory_equal(vs[1].data, "YY", 2);
    ftc_store_values_free(vs, 2);
    assert_null(vs[0].data);
    int deleted = 0;
    TK_OK(ftc_store_client_delete(a, "x", &deleted, tk_ms(5000)));
    assert_int_equal(deleted, 1);
    ftc_store_client_close(a);
    assert_int_equal(conn_of(c)->connects, 1);
    ftc_store_client_close(c);
    fs_finish(&s);
}

/* 1.13 has neither MULTI_GET nor MULTI_SET: GETs and SETs, pipelined. */
static void script_v1_multi(fs_server *s)
{
    ftc__store_req r = req_v(V1);
    const char *ks[] = {"a", "b"};
    int fd = fs_accept(s);
    TK_OK(ftc__store_enc_key_value(&r, FTC__OP_SET, NULL, "a", "1", 1));
    TK_OK(ftc__store_enc_key_value(&r, FTC__OP_SET, NULL, "b", "22", 2));
    fs_expect_req(s, fd, &r);
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, NULL, ks, 2));
    fs_expect_req(s, fd, &r);
    fs_send_hex(s, fd, "00");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_GET, NULL, "a"));
    TK_OK(ftc__store_enc_key(&r, FTC__OP_GET, NULL, "b"));
    fs_expect_req(s, fd, &r);
    fs_send_value(s, fd, "1", 1);
    fs_send_value(s, fd, "22", 2);
    fs_end(s, fd);
    ftc__store_req_free(&r);
}

static void v1_multi_ops_fall_back_to_single_queries(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_v1_multi, NULL);
    ftc_store_client *c = connect_to(&s, V1);
    const char *ks[] = {"a", "b"};
    ftc_store_value in[] = {{"1", 1}, {"22", 2}}, out[2];
    TK_OK(ftc_store_client_multi_set(c, ks, in, 2, tk_ms(5000)));
    uint64_t w0 = conn_of(c)->writes;
    TK_OK(ftc_store_client_multi_get(c, ks, 2, out, tk_ms(5000)));
    assert_int_equal(conn_of(c)->writes - w0, 2);
    assert_memory_equal(out[1].data, "22", 2);
    ftc_store_values_free(out, 2);
    /* Ops 1.13 lacks fail before any I/O. */
    TK_EXPECT(ftc_store_client_append(c, "a", "x", 1, 100), FTC_ENOTSUP);
    TK_EXPECT(ftc_store_client_ping(c, 100), FTC_ENOTSUP);
    int64_t n;
    TK_EXPECT(ftc_store_client_queue_len(c, "q", &n, 100), FTC_ENOTSUP);
    ftc_store_client_close(c);
    fs_finish(&s);
}

static void script_queue(fs_server *s)
{
    ftc__store_req r = req_v(V2);
    const char *q = "q";
    int fd = fs_accept_v2(s, FTC);
    TK_OK(ftc__store_enc_key(&r, FTC__OP_QUEUE_POP, NULL, q));
    fs_expect_req(s, fd, &r);
    fs_send_i64(s, fd, 0);
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, NULL, &q, 1));
    TK_OK(ftc__store_enc_key(&r, FTC__OP_QUEUE_POP, NULL, q));
    fs_expect_req(s, fd, &r);
    fs_send_hex(s, fd, "00");
    fs_send_i64(s, fd, 0); /* someone else popped it first: wait again */
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, NULL, &q, 1));
    TK_OK(ftc__store_enc_key(&r, FTC__OP_QUEUE_POP, NULL, q));
    fs_expect_req(s, fd, &r);
    fs_send_hex(s, fd, "00");
    fs_send_i64(s, fd, 2);
    fs_send_value(s, fd, "item", 4);
    TK_OK(ftc__store_enc_ping(&r, 0)); /* nonce checked below */
    uint8_t ping[5];
    ftc__store_req_reset(&r);
    ftc__sock_recv_all(fd, ping, 5, ftc__deadline_in_ms(5000), NULL);
    if (ping[0] != 0x0d) {
        fs_fail(s, "expected PING, got %02x", ping[0]);
    }
    uint8_t back[4];
    ftc__put_u32le(back, ftc__get_u32le(ping + 1) ^ 1); /* wrong answer */
    fs_send_hex(s, fd, "");
    ftc__sock_send_all(fd, back, 4, ftc__deadline_in_ms(5000), NULL);
    fs_end(s, fd);
    ftc__store_req_free(&r);
}

static void queue_pop_and_ping(void **state)
{
    (void)state;
    fs_server s;
    fs_start(&s, script_queue, NULL);
    ftc_store_client *c = connect_to(&s, V2);
    void *v = NULL;
    size_t n = 0;
    TK_EXPECT(ftc_store_client_queue_pop(c, "q", 0, &v, &n, tk_ms(5000)),
              FTC_ENOENT);
    TK_OK(ftc_store_client_queue_pop(c, "q", 1, &v, &n, tk_ms(5000)));
    assert_int_equal(n, 4);
    assert_memory_equal(v, "item", 4);
    ftc_free(v);
    TK_EXPECT(ftc_store_client_ping(c, tk_ms(5000)), FTC_EPROTO);
    ftc_store_client_close(c);
    fs_finish(&s);
}

static void misuse_is_reported_not_crashed(void **state)
{
    (void)state;
    void *v;
    size_t n;
    int64_t i;
    TK_EXPECT(ftc_store_client_get(NULL, "k", &v, &n, 0), FTC_EMISUSE);
    TK_EXPECT(ftc_store_client_add(NULL, "k", 1, &i, 0), FTC_EMISUSE);
    TK_EXPECT(ftc_store_client_connect("x:1", NULL, NULL), FTC_EMISUSE);
    ftc_store_client *c = (ftc_store_client *)1;
    TK_EXPECT(ftc_store_client_connect("no-port", NULL, &c), FTC_EINVAL);
    assert_null(c);
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.dialect = 7;
    TK_EXPECT(ftc_store_client_connect("127.0.0.1:1", &o, &c), FTC_EINVAL);
    ftc_store_client_close(NULL);
    ftc_store_client_cancel(NULL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(probe_tells_ftc_from_pytorch),
        cmocka_unit_test(handshake_is_retried),
        cmocka_unit_test(connect_gives_up_at_its_deadline),
        cmocka_unit_test(get_is_one_write_against_ftc),
        cmocka_unit_test(get_waits_first_against_pytorch),
        cmocka_unit_test(wait_timeout_cancels_in_protocol),
        cmocka_unit_test(timeouts_are_per_call),
        cmocka_unit_test(get_that_wins_the_cancel_race_returns_the_value),
        cmocka_unit_test(pipelined_timeout_cancels_in_protocol),
        cmocka_unit_test(late_reply_is_never_the_next_answer),
        cmocka_unit_test(v1_get_of_a_deleted_key_reconnects),
        cmocka_unit_test(faults_force_a_clean_reconnect),
        cmocka_unit_test(oversized_reply_is_refused_before_allocating),
        cmocka_unit_test(cancel_from_another_thread),
        cmocka_unit_test(cancel_reaches_a_reconnect),
        cmocka_unit_test(views_prefix_keys_and_share_the_connection),
        cmocka_unit_test(v1_multi_ops_fall_back_to_single_queries),
        cmocka_unit_test(queue_pop_and_ping),
        cmocka_unit_test(misuse_is_reported_not_crashed),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
