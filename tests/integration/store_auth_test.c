/* The store's token (docs/protocol.md "Authentication"): ftc clients and
 * the server prove to each other that they know it; a client that cannot
 * (PyTorch's, 1.13's, one without the token) reaches only the open
 * prefixes and never sees a key outside them; every refusal closes only
 * that connection and changes nothing in the store. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/auth.h"
#include "base/base_int.h"
#include "store/client/client_int.h"
#include "store/opcodes.h"
#include "store_kit.h"
#include "store_server_kit.h"
#include "testkit.h"

#define TOKEN "store-secret"
#define T FTC_TIMEOUT_DEFAULT

/* A server with these settings (FTC_SIZE_DEFAULT, FTC_TIMEOUT_DEFAULT:
 * the default). */
static ftc_store_server *start_limited(const char *token,
                                       const char *const *open, size_t n_open,
                                       size_t max_connections,
                                       size_t max_strangers_per_address,
                                       int64_t handshake_timeout_ms)
{
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.token = token;
    o.open_prefixes = open;
    o.n_open_prefixes = n_open;
    o.max_connections = max_connections;
    o.max_strangers_per_address = max_strangers_per_address;
    o.handshake_timeout_ms = handshake_timeout_ms;
    return ssk_start(&o);
}

static ftc_store_server *start(const char *token, const char *const *open,
                               size_t n_open)
{
    return start_limited(token, open, n_open, FTC_SIZE_DEFAULT,
                         FTC_SIZE_DEFAULT, FTC_TIMEOUT_DEFAULT);
}

static int connect_client(int port, const char *token, ftc_store_client **out)
{
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.connect_timeout_ms = tk_ms(5000);
    o.timeout_ms = tk_ms(5000);
    o.token = token;
    return ftc_store_client_connect(addr, &o, out);
}

static ftc_store_client *client(int port, const char *token)
{
    ftc_store_client *c = NULL;
    TK_OK(connect_client(port, token, &c));
    return c;
}

/* The value of key as an authenticated client sees it ("" if missing). */
static void expect_stored(int port, const char *key, const char *want)
{
    ftc_store_client *c = client(port, TOKEN);
    int ready = -1;
    TK_OK(ftc_store_client_check(c, &key, 1, &ready, T));
    if (want == NULL) {
        assert_int_equal(ready, 0);
    } else {
        void *v = NULL;
        size_t n = 0;
        TK_OK(ftc_store_client_get(c, key, &v, &n, T));
        assert_int_equal(n, strlen(want));
        assert_memory_equal(v, want, n);
        ftc_free(v);
    }
    ftc_store_client_close(c);
}

/* On a raw connection (VALIDATE sent): the probe with nonce and AUTH_HELLO
 * with the client nonce cn. Returns the probe's answer; the server's
 * answer lands in nonces (cn, then its nonce) and smac. */
static uint32_t raw_hello(sr_conn *c, uint32_t nonce,
                          uint8_t nonces[2 * FTC__AUTH_NONCE],
                          uint8_t smac[FTC__AUTH_MAC])
{
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    TK_OK(ftc__auth_random(nonces, FTC__AUTH_NONCE));
    sr_ping(&b, nonce);
    sr_u8(&b, FTC__STORE_BYTE_AUTH_HELLO);
    TK_OK(ftc__buf_append(&b, nonces, FTC__AUTH_NONCE));
    sr_flush(c, &b);
    ftc__buf_free(&b);
    uint32_t probe = sr_read_u32(c);
    TK_OK(sr_read(c, nonces + FTC__AUTH_NONCE, FTC__AUTH_NONCE, 5000));
    TK_OK(sr_read(c, smac, FTC__AUTH_MAC, 5000));
    return probe;
}

static void raw_proof(sr_conn *c, const uint8_t proof[FTC__AUTH_MAC])
{
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_u8(&b, FTC__STORE_BYTE_AUTH_PROOF);
    TK_OK(ftc__buf_append(&b, proof, FTC__AUTH_MAC));
    sr_flush(c, &b);
    ftc__buf_free(&b);
}

static void client_proof(const uint8_t nonces[2 * FTC__AUTH_NONCE],
                         const char *token, uint8_t proof[FTC__AUTH_MAC])
{
    static const char label[] = FTC__STORE_AUTH_CLIENT_LABEL;
    uint8_t key[FTC__AUTH_KEY];
    TK_OK(ftc__auth_key(token, key));
    ftc__auth_mac(key, (const uint8_t *)label, sizeof(label), nonces,
                  2 * FTC__AUTH_NONCE, proof);
}

/* Both sides know the token: every call works, and the server proved
 * itself with a MAC over both nonces that the test can recompute. */
static void token_on_both_sides(void **state)
{
    (void)state;
    ftc_store_server *srv = start(TOKEN, NULL, 0);
    int port = ftc_store_server_port(srv);
    ftc_store_client *c = client(port, TOKEN);
    TK_OK(ftc_store_client_set(c, "k", "v", 1, T));
    int64_t n = 0;
    TK_OK(ftc_store_client_add(c, "ctr", 5, &n, T));
    assert_int_equal(n, 5);
    TK_OK(ftc_store_client_num_keys(c, &n, T));
    assert_int_equal(n, 2);
    ftc_store_client_close(c);
    expect_stored(port, "k", "v");

    sr_conn raw;
    sr_connect(&raw, port, SR_V2);
    uint8_t nonces[2 * FTC__AUTH_NONCE], smac[FTC__AUTH_MAC];
    uint32_t nonce = FTC__STORE_NONCE_TAG | 0x12345u;
    /* Not authenticated yet: the probe's low bit says "token wanted". */
    assert_int_equal(raw_hello(&raw, nonce, nonces, smac),
                     ~nonce ^ FTC__STORE_PROBE_LOCKED);
    static const char label[] = FTC__STORE_AUTH_SERVER_LABEL;
    uint8_t key[FTC__AUTH_KEY];
    TK_OK(ftc__auth_key(TOKEN, key));
    assert_true(ftc__auth_verify(key, (const uint8_t *)label, sizeof(label),
                                 nonces, sizeof(nonces), smac));
    uint8_t proof[FTC__AUTH_MAC];
    client_proof(nonces, TOKEN, proof);
    raw_proof(&raw, proof);
    assert_int_equal(sr_read_u8(&raw), 0);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_ping(&b, nonce);
    sr_key(&b, SR_V2, FTC__OP_GET, "/k");
    sr_flush(&raw, &b);
    assert_int_equal(sr_read_u32(&raw), ~nonce);
    sr_expect_str(&raw, "v");
    ftc__buf_free(&b);
    sr_close(&raw);
    assert_int_equal(ssk_stats(srv).protocol_errors, 0);
    ssk_stop(srv);
}

/* Wrong tokens fail on both sides, and neither end learns anything it
 * could reuse: a client with another token refuses the server (which
 * proves itself first); a forged or replayed proof closes the connection
 * before any request is served. */
static void wrong_tokens_are_refused(void **state)
{
    (void)state;
    ftc_store_server *srv = start(TOKEN, NULL, 0);
    int port = ftc_store_server_port(srv);
    ftc_store_client *c = (ftc_store_client *)1;
    TK_EXPECT(connect_client(port, "another-secret", &c), FTC_EAUTH);
    assert_null(c);
    assert_non_null(strstr(ftc_last_error(), "did not prove it knows"));

    /* A proof made with the wrong token, with a SET behind it. */
    sr_conn raw;
    sr_connect(&raw, port, SR_V2);
    uint8_t nonces[2 * FTC__AUTH_NONCE], smac[FTC__AUTH_MAC];
    uint8_t proof[FTC__AUTH_MAC];
    raw_hello(&raw, FTC__STORE_NONCE_TAG | 1u, nonces, smac);
    client_proof(nonces, "another-secret", proof);
    raw_proof(&raw, proof);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_set(&b, SR_V2, "/forged", "x");
    sr_flush(&raw, &b);
    sr_expect_closed(&raw, 5000);
    sr_close(&raw);
    assert_int_equal(ssk_logged("store.auth", "wrong token"), 1);

    /* A right proof from one connection, replayed on another. */
    sr_conn first, second;
    sr_connect(&first, port, SR_V2);
    raw_hello(&first, FTC__STORE_NONCE_TAG | 2u, nonces, smac);
    client_proof(nonces, TOKEN, proof);
    raw_proof(&first, proof);
    assert_int_equal(sr_read_u8(&first), 0);
    sr_connect(&second, port, SR_V2);
    raw_hello(&second, FTC__STORE_NONCE_TAG | 3u, nonces, smac);
    raw_proof(&second, proof);
    sr_set(&b, SR_V2, "/replayed", "x");
    sr_flush(&second, &b);
    sr_expect_closed(&second, 5000);
    sr_close(&second);
    sr_close(&first);

    /* A proof with no challenge before it. */
    sr_connect(&raw, port, SR_V2);
    raw_proof(&raw, proof);
    sr_expect_closed(&raw, 5000);
    sr_close(&raw);
    assert_int_equal(ssk_logged("store.auth", "without AUTH_HELLO"), 1);
    ftc__buf_free(&b);
    expect_stored(port, "/forged", NULL);
    expect_stored(port, "/replayed", NULL);
    expect_stored(port, "forged", NULL);
    expect_stored(port, "replayed", NULL);
    assert_int_equal(ssk_stats(srv).protocol_errors, 3);
    ssk_stop(srv);
}

/* A client with a token refuses a server without one: it could be
 * anyone. */
static void token_client_refuses_open_server(void **state)
{
    (void)state;
    ftc_store_server *srv = start(NULL, NULL, 0);
    ftc_store_client *c = NULL;
    TK_EXPECT(connect_client(ftc_store_server_port(srv), TOKEN, &c), FTC_EAUTH);
    assert_non_null(strstr(ftc_last_error(), "has no token"));
    ssk_stop(srv);
}

/* Without the token and with no open prefix, a client connects (the probe
 * tells it the server wants a token) and its first request closes the
 * connection with a message that says so; a raw client announcing a huge
 * SET is cut off at the query byte, before the body is awaited. */
static void no_token_no_access(void **state)
{
    (void)state;
    ftc_store_server *srv = start(TOKEN, NULL, 0);
    int port = ftc_store_server_port(srv);
    ftc_store_client *c = client(port, NULL);
    TK_EXPECT(ftc_store_client_set(c, "k", "v", 1, T), FTC_ECLOSED);
    assert_non_null(strstr(ftc_last_error(), "wants a token"));
    int64_t n = -1;
    TK_EXPECT(ftc_store_client_add(c, "ctr", 1, &n, T), FTC_ECLOSED);
    ftc_store_client_close(c);
    expect_stored(port, "k", NULL);

    sr_conn raw;
    sr_connect(&raw, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_u8(&b, (uint8_t)sr_opbyte(SR_V2, FTC__OP_SET));
    sr_flush(&raw, &b);
    sr_expect_closed(&raw, 5000);
    sr_close(&raw);
    ftc__buf_free(&b);
    assert_true(ssk_logged("store.auth", "before authenticating") >= 2);
    ssk_stop(srv);
}

/* An open prefix: a client without the token (here ftc's, 2.x and 1.13)
 * reads and writes keys under it and never sees one outside it; a request
 * that names any key outside closes its connection and changes nothing. */
static void open_prefix_only(void **state)
{
    (void)state;
    const char *open[] = {"torch/", "init/"};
    ftc_store_server *srv = start(TOKEN, open, 2);
    int port = ftc_store_server_port(srv);
    ftc_store_client *authed = client(port, TOKEN);
    TK_OK(ftc_store_client_set(authed, "secret/addr", "10.0.0.1", 8, T));
    TK_OK(ftc_store_client_set(authed, "torch/shared", "s", 1, T));

    ftc_store_client *c = client(port, NULL);
    TK_OK(ftc_store_client_set(c, "torch/mine", "m", 1, T));
    void *v = NULL;
    size_t len = 0;
    TK_OK(ftc_store_client_get(c, "torch/shared", &v, &len, T));
    assert_int_equal(len, 1);
    ftc_free(v);
    int64_t n = 0;
    TK_OK(ftc_store_client_num_keys(c, &n, T));
    assert_int_equal(n, 2); /* torch/mine, torch/shared */
    /* One key outside among several inside: refused whole. */
    const char *mixed[] = {"torch/mine", "secret/addr"};
    ftc_store_value vals[2];
    TK_EXPECT(ftc_store_client_multi_get(c, mixed, 2, vals, T), FTC_ECLOSED);
    TK_EXPECT(ftc_store_client_set(c, "secret/addr", "evil", 4, T),
              FTC_ECLOSED);
    /* The client reconnects and its open keys still work. */
    TK_OK(ftc_store_client_num_keys(c, &n, T));
    assert_int_equal(n, 2);
    TK_OK(ftc_store_client_num_keys(authed, &n, T));
    assert_int_equal(n, 3);
    ftc_store_client_close(c);

    /* LIST_KEYS lists only the open keys. */
    sr_conn v2;
    sr_connect(&v2, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_bare(&b, SR_V2, FTC__OP_LIST_KEYS);
    sr_flush(&v2, &b);
    assert_int_equal(sr_read_i64(&v2), 2);
    for (int i = 0; i < 2; i++) {
        size_t klen = 0;
        char *k = sr_read_str(&v2, &klen);
        assert_true(strcmp(k, "/torch/mine") == 0 ||
                    strcmp(k, "/torch/shared") == 0);
        free(k);
    }
    sr_close(&v2);

    /* 1.13 dialect: the bare init/ counter and /torch/ keys only. */
    sr_conn v1;
    sr_connect(&v1, port, SR_V1);
    sr_add(&b, SR_V1, "init/", 1);
    sr_set(&b, SR_V1, "/torch/v1", "old");
    sr_key(&b, SR_V1, FTC__OP_GET, "/torch/v1");
    sr_flush(&v1, &b);
    assert_int_equal(sr_read_i64(&v1), 1);
    sr_expect_str(&v1, "old");
    sr_key(&b, SR_V1, FTC__OP_DELETE_KEY, "/secret/addr");
    sr_flush(&v1, &b);
    sr_expect_closed(&v1, 5000);
    sr_close(&v1);
    ftc__buf_free(&b);
    expect_stored(port, "secret/addr", "10.0.0.1");
    assert_true(ssk_logged("store.auth", "secret/addr") >= 3);
    ftc_store_client_close(authed);
    ssk_stop(srv);
}

/* A table full of connections that never authenticate (idle, or
 * slowloris) does not lock out a client with the token: the oldest
 * stranger is closed to make room, as many times as needed. */
static void strangers_make_room(void **state)
{
    (void)state;
    ftc_store_server *srv = start_limited(TOKEN, NULL, 0, 40, FTC_SIZE_DEFAULT,
                                          FTC_TIMEOUT_DEFAULT);
    int port = ftc_store_server_port(srv);
    enum { IDLE = 60 };
    sr_conn idle[IDLE];
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    for (int i = 0; i < IDLE; i++) {
        sr_connect(&idle[i], port, SR_V2); /* VALIDATE, then nothing */
        /* Half send the head of a request and stop (slowloris). */
        if (i % 2 == 1) {
            sr_u8(&b, FTC__STORE_BYTE_AUTH_HELLO);
            sr_u8(&b, 0);
            sr_flush(&idle[i], &b);
        }
    }
    ftc__buf_free(&b);
    TK_WAIT_UNTIL(ssk_stats(srv).connections == 40, 5000);
    for (int i = 0; i < 20; i++) {
        ftc_store_client *c = client(port, TOKEN);
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        TK_OK(ftc_store_client_set(c, key, "v", 1, T));
        ftc_store_client_close(c);
    }
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        expect_stored(port, key, "v");
    }
    /* The idle ones over the limit evicted the oldest, and the first
     * client found the table full of strangers. */
    assert_true(ssk_stats(srv).refused >= IDLE - 40 + 1);
    for (int i = 0; i < IDLE; i++) {
        sr_close(&idle[i]);
    }
    ssk_stop(srv);
}

/* A V2 connection (VALIDATE sent) to the server on 127.0.0.1:port from
 * the source address from (another loopback address: another client
 * host). */
static void connect_from(const char *from, int port, sr_conn *c)
{
    struct sockaddr_in src = {.sin_family = AF_INET};
    struct sockaddr_in dst = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)port)};
    assert_int_equal(inet_pton(AF_INET, from, &src.sin_addr), 1);
    assert_int_equal(inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr), 1);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    c->dialect = SR_V2;
    assert_true(c->fd >= 0);
    assert_int_equal(bind(c->fd, (struct sockaddr *)&src, sizeof(src)), 0);
    assert_int_equal(connect(c->fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
    uint8_t validate[5] = {0x00, 0xCE, 0xF7, 0x85, 0x3C};
    sr_send(c, validate, sizeof(validate));
}

/* Connections from one address that do not authenticate take at most
 * max_strangers_per_address places: the next from there closes its
 * oldest, and other addresses' connections (strangers too) and clients
 * with the token are untouched. */
static void strangers_capped_per_address(void **state)
{
    (void)state;
    ftc_store_server *srv = start_limited(TOKEN, NULL, 0, FTC_SIZE_DEFAULT, 8,
                                          FTC_TIMEOUT_INFINITE);
    int port = ftc_store_server_port(srv);
    enum { CAP = 8, FLOOD = 20, LOCAL = 5 };
    sr_conn flood[FLOOD], local[LOCAL];
    for (int i = 0; i < LOCAL; i++) {
        sr_connect(&local[i], port, SR_V2);
    }
    for (int i = 0; i < FLOOD; i++) {
        connect_from("127.0.0.2", port, &flood[i]);
    }
    /* The oldest FLOOD - CAP of the flood were closed, nothing else. */
    for (int i = 0; i < FLOOD - CAP; i++) {
        sr_expect_closed(&flood[i], 5000);
    }
    /* (The counters are published at the end of a loop iteration.) */
    TK_WAIT_UNTIL(ssk_stats(srv).refused == FLOOD - CAP, 5000);
    assert_int_equal(ssk_stats(srv).connections, LOCAL + CAP);
    ftc_store_client *c = client(port, TOKEN);
    TK_OK(ftc_store_client_set(c, "k", "v", 1, T));
    expect_stored(port, "k", "v");
    ftc_store_client_close(c);
    TK_WAIT_UNTIL(
        ssk_logged("store.flood", "max_strangers_per_address (8)") >= 1, 5000);
    /* The places of closed strangers are free again: the address may
     * open CAP more only by closing its own. */
    for (int i = 0; i < FLOOD - CAP; i++) {
        sr_close(&flood[i]);
        connect_from("127.0.0.2", port, &flood[i]);
    }
    TK_WAIT_UNTIL(ssk_stats(srv).refused == 2 * (FLOOD - CAP), 5000);
    assert_int_equal(ssk_stats(srv).connections, LOCAL + CAP);
    for (int i = 0; i < FLOOD; i++) {
        sr_close(&flood[i]);
    }
    for (int i = 0; i < LOCAL; i++) {
        sr_close(&local[i]);
    }
    ssk_stop(srv);
}

/* Connections that neither authenticate nor use an open prefix within the
 * handshake timeout are closed (one summary warning); one that
 * authenticated, and a tokenless one that uses the open prefix, stay. */
static void handshake_deadline(void **state)
{
    (void)state;
    const char *open[] = {"torch/"};
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.token = TOKEN;
    o.open_prefixes = open;
    o.n_open_prefixes = 1;
    o.handshake_timeout_ms = 200;
    ftc_store_server *srv = ssk_start(&o);
    int port = ftc_store_server_port(srv);
    sr_conn silent, slow;
    sr_connect(&silent, port, SR_V2);
    sr_connect(&slow, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_u8(&b, (uint8_t)sr_opbyte(SR_V2, FTC__OP_SET));
    sr_flush(&slow, &b);
    ftc__buf_free(&b);
    ftc_store_client *authed = client(port, TOKEN);
    ftc_store_client *anon = client(port, NULL);
    TK_OK(ftc_store_client_set(anon, "torch/x", "1", 1, T));
    sr_expect_closed(&silent, 5000);
    sr_expect_closed(&slow, 5000);
    sr_close(&silent);
    sr_close(&slow);
    TK_WAIT_UNTIL(ssk_logged("store.handshake", "neither authenticated") >= 1,
                  5000);
    /* The two that did something are still the same connections. */
    uint64_t before = atomic_load(&authed->core->conn.connects);
    TK_OK(ftc_store_client_set(authed, "k", "v", 1, T));
    TK_OK(ftc_store_client_set(anon, "torch/y", "2", 1, T));
    assert_int_equal(atomic_load(&authed->core->conn.connects), before);
    ftc_store_client_close(anon);
    ftc_store_client_close(authed);
    ssk_stop(srv);
}

/* With open prefixes a stranger's request is refused as soon as its key
 * shows it is outside, or its items grow past 1 MiB: the server never
 * waits for (nor buffers) a big body it will refuse. */
static void refused_before_the_body(void **state)
{
    (void)state;
    const char *open[] = {"torch/"};
    ftc_store_server *srv = start(TOKEN, open, 1);
    int port = ftc_store_server_port(srv);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_conn append, multi;
    sr_connect(&append, port, SR_V2);
    sr_u8(&b, (uint8_t)sr_opbyte(SR_V2, FTC__OP_APPEND));
    sr_str(&b, "/secret", 7);
    sr_u64(&b, 200u << 20); /* a 200 MiB value, never sent */
    sr_flush(&append, &b);
    sr_expect_closed(&append, 5000);
    sr_close(&append);
    sr_connect(&multi, port, SR_V2);
    sr_u8(&b, (uint8_t)sr_opbyte(SR_V2, FTC__OP_MULTI_SET));
    sr_u64(&b, 1);
    sr_str(&b, "/torch/a", 8);
    sr_u64(&b, 2u << 20); /* inside the prefix, but 2 MiB of items */
    sr_flush(&multi, &b);
    sr_expect_closed(&multi, 5000);
    sr_close(&multi);
    ftc__buf_free(&b);
    assert_int_equal(ssk_logged("store.auth", "'/secret'"), 1);
    assert_int_equal(ssk_logged("store.auth", "items over 1 MiB"), 1);
    ssk_stop(srv);
}

/* Options that would open more than they say are refused. */
static void bad_options(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server *srv = (ftc_store_server *)1;
    const char *empty[] = {""};
    const char *open[] = {"torch/"};
    struct {
        const char *token;
        const char *const *open;
        size_t n;
        const char *why;
    } cases[] = {
        {"", NULL, 0, "empty token"},
        {TOKEN, empty, 1, "would open every key"},
        {NULL, open, 1, "without a token"},
        {TOKEN, NULL, 1, "open_prefixes is NULL"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ftc_store_server_opts_init(&o);
        o.token = cases[i].token;
        o.open_prefixes = cases[i].open;
        o.n_open_prefixes = cases[i].n;
        TK_EXPECT(ftc_store_server_create(&o, &srv), FTC_EINVAL);
        assert_null(srv);
        assert_non_null(strstr(ftc_last_error(), cases[i].why));
    }
    ftc_store_client_opts co;
    ftc_store_client_opts_init(&co);
    co.token = "";
    ftc_store_client *c = (ftc_store_client *)1;
    TK_EXPECT(ftc_store_client_connect("127.0.0.1:1", &co, &c), FTC_EINVAL);
    assert_null(c);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(token_on_both_sides),
        cmocka_unit_test(wrong_tokens_are_refused),
        cmocka_unit_test(token_client_refuses_open_server),
        cmocka_unit_test(no_token_no_access),
        cmocka_unit_test(open_prefix_only),
        cmocka_unit_test(refused_before_the_body),
        cmocka_unit_test(strangers_make_room),
        cmocka_unit_test(strangers_capped_per_address),
        cmocka_unit_test(handshake_deadline),
        cmocka_unit_test(bad_options),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
