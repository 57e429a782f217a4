/* Hostile and broken clients against the store server: each bad input
 * closes only its own connection with one tagged warning naming the peer,
 * the stats count it, and every other client keeps being served. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/base_int.h"
#include "store_kit.h"
#include "store_server_kit.h"
#include "testkit.h"

/* A healthy client still gets answers. */
static void expect_served(int port)
{
    sr_conn c;
    sr_connect(&c, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_ping(&b, 31337);
    sr_flush(&c, &b);
    assert_int_equal(sr_read_u32(&c), 31337);
    ftc__buf_free(&b);
    sr_close(&c);
}

static void send_bytes_expect_close(int port, int dialect, const ftc__buf *b)
{
    sr_conn c;
    sr_connect(&c, port, dialect);
    sr_send(&c, ftc__buf_begin(b), ftc__buf_size(b));
    sr_expect_closed(&c, 5000);
    sr_close(&c);
}

static void unknown_query_type(void **state)
{
    (void)state;
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    sr_conn bystander;
    sr_connect(&bystander, port, SR_V1);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_u8(&b, 0x55);
    send_bytes_expect_close(port, SR_V2, &b);
    ftc__buf_reset(&b);
    sr_u8(&b, 0x09); /* APPEND's byte, but 1.13 has no APPEND */
    send_bytes_expect_close(port, SR_V1, &b);
    TK_WAIT_UNTIL(ssk_stats(srv).protocol_errors == 2, 5000);
    assert_int_equal(ssk_logged("store.badop", "client 127.0.0.1:"), 2);
    assert_int_equal(ssk_logged("store.badop", "0x55"), 1);
    /* the bystander, connected all along, is fine */
    ftc__buf_reset(&b);
    sr_add(&b, SR_V1, "/x", 2);
    sr_flush(&bystander, &b);
    assert_true(sr_read_i64(&bystander) == 2);
    expect_served(port);
    sr_close(&bystander);
    ftc__buf_free(&b);
    ssk_stop(srv);
}

/* Lengths over a limit close the connection as soon as the length itself
 * has arrived: the body is never sent, so the server cannot have waited
 * for (or allocated) it. */
static void oversize_from_the_header(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.max_key_bytes = 1024;
    o.max_value_bytes = 1 << 20;
    o.max_keys_per_request = 16;
    ftc_store_server *srv = ssk_start(&o);
    int port = ftc_store_server_port(srv);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_key(&b, SR_V2, FTC__OP_SET, "/k");
    sr_u64(&b, (uint64_t)1 << 30); /* a 1 GiB value announced */
    send_bytes_expect_close(port, SR_V2, &b);
    ftc__buf_reset(&b);
    sr_op(&b, SR_V1, FTC__OP_GET);
    sr_u64(&b, 1025);
    send_bytes_expect_close(port, SR_V1, &b);
    ftc__buf_reset(&b);
    sr_op(&b, SR_V2, FTC__OP_MULTI_GET);
    sr_u64(&b, 17);
    send_bytes_expect_close(port, SR_V2, &b);
    ftc__buf_reset(&b);
    /* a wrong VALIDATE magic makes the stream a 1.13 SET whose key length
     * is absurd */
    const uint8_t fake[] = {0x00, 0xCE, 0xF7, 0x85, 0x3D, 0, 0, 0, 0};
    sr_conn c;
    sr_connect_bare(&c, port);
    sr_send(&c, fake, sizeof(fake));
    sr_expect_closed(&c, 5000);
    sr_close(&c);
    TK_WAIT_UNTIL(ssk_stats(srv).protocol_errors == 4, 5000);
    assert_int_equal(ssk_logged("store.oversize", "value bytes 1073741824"), 1);
    assert_int_equal(ssk_logged("store.oversize", "key bytes 1025"), 1);
    assert_int_equal(ssk_logged("store.oversize", "keys in one request 17"), 1);
    expect_served(port);
    ftc__buf_free(&b);
    ssk_stop(srv);
}

static void bad_validate_later(void **state)
{
    (void)state;
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_op(&b, SR_V2, FTC__OP_VALIDATE);
    sr_u32(&b, 0xDEADBEEFu);
    send_bytes_expect_close(port, SR_V2, &b);
    TK_WAIT_UNTIL(ssk_logged("store.badmagic", "0xdeadbeef") == 1, 5000);
    TK_WAIT_UNTIL(ssk_stats(srv).protocol_errors == 1, 5000);
    ftc__buf_free(&b);
    ssk_stop(srv);
}

/* ADD on a value that is not a number closes the adder's connection only
 * (PyTorch's server does the same) and changes nothing. */
static void add_on_text(void **state)
{
    (void)state;
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    sr_conn owner;
    sr_connect(&owner, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_set(&b, SR_V2, "/junk", "abc");
    sr_flush(&owner, &b);
    sr_add(&b, SR_V1, "/junk", 1);
    send_bytes_expect_close(port, SR_V1, &b);
    ftc__buf_reset(&b);
    TK_WAIT_UNTIL(ssk_logged("store.badvalue", "not a number") == 1, 5000);
    sr_key(&b, SR_V2, FTC__OP_GET, "/junk");
    sr_flush(&owner, &b);
    sr_expect_str(&owner, "abc");
    sr_close(&owner);
    ftc__buf_free(&b);
    ssk_stop(srv);
}

/* A CONTROL_BARRIER whose world could never meet (over the connection
 * limit), whose rank is no seat, or whose counter is text closes only its
 * own connection. */
static void control_barrier_bad_seats(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.max_connections = 8;
    ftc_store_server *srv = ssk_start(&o);
    int port = ftc_store_server_port(srv);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_control_barrier(&b, "/cb", 9, 0);
    send_bytes_expect_close(port, SR_V2, &b);
    ftc__buf_reset(&b);
    sr_control_barrier(&b, "/cb", 4, 4);
    send_bytes_expect_close(port, SR_V2, &b);
    ftc__buf_reset(&b);
    sr_conn owner;
    sr_connect(&owner, port, SR_V2);
    sr_set(&b, SR_V2, "/t/num_members", "text");
    sr_flush(&owner, &b);
    sr_control_barrier(&b, "/t", 2, 0);
    send_bytes_expect_close(port, SR_V2, &b);
    ftc__buf_reset(&b);
    TK_WAIT_UNTIL(ssk_stats(srv).protocol_errors == 3, 5000);
    assert_int_equal(ssk_logged("store.oversize", "barrier world size 9"), 1);
    assert_int_equal(ssk_logged("store.badvalue", "rank 4 of world size 4"), 1);
    assert_int_equal(ssk_logged("store.badvalue", "not a number"), 1);
    /* nothing changed: no rank key, no counter, no last_members */
    const char *k[] = {"/cb/0"};
    sr_keys(&b, SR_V2, FTC__OP_CHECK, k, 1);
    sr_key(&b, SR_V2, FTC__OP_GET, "/t/num_members");
    sr_flush(&owner, &b);
    assert_int_equal(sr_read_u8(&owner), 1);
    sr_expect_str(&owner, "text");
    ftc_store_server_stats st = ssk_stats(srv);
    assert_int_equal(st.keys, 1);
    sr_close(&owner);
    ftc__buf_free(&b);
    ssk_stop(srv);
}

/* A client that dies in the middle of a big SET's value (received in
 * place) changes nothing: no key, no bytes, and the room held for the
 * value is given back, so a SET that needs it still fits. */
static void dies_mid_value(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.max_total_bytes = 3u << 20;
    ftc_store_server *srv = ssk_start(&o);
    int port = ftc_store_server_port(srv);
    const size_t n = 2u << 20;
    uint8_t *v = calloc(1, n);
    ftc__buf b;
    ftc__buf_init(&b, 8u << 20);
    for (int d = 0; d < 2; d++) {
        sr_conn c;
        sr_connect(&c, port, d);
        /* Accepted, so that its close is seen before the check below (a
         * connection still in the listen backlog is not counted yet). */
        TK_WAIT_UNTIL(ssk_stats(srv).connections == 1, 5000);
        sr_kv(&b, d, FTC__OP_SET, "/dead", v, n);
        sr_send(&c, ftc__buf_begin(&b), ftc__buf_size(&b) - n / 2);
        ftc__buf_reset(&b);
        sr_close(&c);
        TK_WAIT_UNTIL(ssk_stats(srv).connections == 0, 5000);
    }
    ftc_store_server_stats st = ssk_stats(srv);
    assert_int_equal(st.keys, 0);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(st.protocol_errors, 0);
    sr_conn c;
    sr_connect(&c, port, SR_V2);
    const char *k[] = {"/dead"};
    sr_keys(&b, SR_V2, FTC__OP_CHECK, k, 1);
    sr_kv(&b, SR_V2, FTC__OP_SET, "/alive", v, n);
    sr_key(&b, SR_V2, FTC__OP_GET, "/alive");
    sr_flush(&c, &b);
    assert_int_equal(sr_read_u8(&c), 1); /* NOT_READY */
    size_t len;
    free(sr_read_str(&c, &len));
    assert_true(len == n);
    sr_close(&c);
    TK_WAIT_UNTIL(ssk_stats(srv).keys == 1, 5000);
    ftc__buf_free(&b);
    free(v);
    ssk_stop(srv);
}

static void store_full(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.max_total_bytes = 1024;
    ftc_store_server *srv = ssk_start(&o);
    int port = ftc_store_server_port(srv);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 12);
    char big[2048];
    memset(big, 'x', sizeof(big));
    sr_kv(&b, SR_V2, FTC__OP_SET, "/big", big, sizeof(big));
    send_bytes_expect_close(port, SR_V2, &b);
    TK_WAIT_UNTIL(ssk_logged("store.full", "limit 1024") == 1, 5000);
    ftc_store_server_stats st = ssk_stats(srv);
    assert_int_equal(st.keys, 0);
    assert_int_equal(st.bytes, 0);
    expect_served(port);
    ftc__buf_free(&b);
    ssk_stop(srv);
}

/* A client stuck half-way through a request holds up nobody: another
 * client completes a thousand round trips meanwhile. */
static void half_sent_request_delays_nobody(void **state)
{
    (void)state;
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    sr_conn slow, fast;
    sr_connect(&slow, port, SR_V2);
    sr_connect(&fast, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    char val[5000];
    memset(val, 'v', sizeof(val));
    sr_kv(&b, SR_V2, FTC__OP_SET, "/slow", val, sizeof(val));
    sr_key(&b, SR_V2, FTC__OP_GET, "/slow");
    size_t n = ftc__buf_size(&b);
    const uint8_t *p = ftc__buf_begin(&b);
    for (size_t i = 0; i < 12; i++) {
        sr_send(&slow, p + i, 1); /* the header, a byte at a time */
    }
    sr_send(&slow, p + 12, 2000); /* and part of the value */
    ftc__buf fb;
    ftc__buf_init(&fb, 1 << 10);
    for (uint32_t i = 0; i < 1000; i++) {
        sr_ping(&fb, i);
        sr_flush(&fast, &fb);
        assert_int_equal(sr_read_u32(&fast), i);
    }
    sr_send(&slow, p + 2012, n - 2012);
    size_t len;
    char *got = sr_read_str(&slow, &len);
    assert_int_equal(len, sizeof(val));
    assert_memory_equal(got, val, len);
    free(got);
    sr_close(&slow);
    sr_close(&fast);
    ftc__buf_free(&b);
    ftc__buf_free(&fb);
    ssk_stop(srv);
}

/* A client that asks for big replies and never reads them is dropped when
 * its unsent output passes the limit. */
static void non_reading_client_dropped(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.max_output_bytes = 1 << 20;
    ftc_store_server *srv = ssk_start(&o);
    int port = ftc_store_server_port(srv);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    static char val[512 << 10];
    memset(val, 'r', sizeof(val));
    sr_conn setter, hog;
    sr_connect(&setter, port, SR_V2);
    sr_kv(&b, SR_V2, FTC__OP_SET, "/big", val, sizeof(val));
    sr_ping(&b, 1);
    sr_flush(&setter, &b);
    assert_int_equal(sr_read_u32(&setter), 1);
    sr_connect_bare(&hog, port);
    ftc__sock_set_bufsizes(hog.fd, 0, 4096);
    sr_validate(&b);
    for (int i = 0; i < 200; i++) {
        sr_key(&b, SR_V2, FTC__OP_GET, "/big");
    }
    sr_flush(&hog, &b);
    TK_WAIT_UNTIL(ssk_stats(srv).slow_drops == 1, 10000);
    assert_int_equal(ssk_logged("store.backlog", "not reading"), 1);
    sr_expect_closed(&hog, 10000);
    sr_close(&hog);
    sr_ping(&b, 2);
    sr_flush(&setter, &b);
    assert_int_equal(sr_read_u32(&setter), 2);
    sr_close(&setter);
    ftc__buf_free(&b);
    ssk_stop(srv);
}

struct sender {
    sr_conn *c;
    ftc__buf *b;
};

static void *send_all(void *arg)
{
    struct sender *s = arg;
    sr_flush(s->c, s->b);
    return NULL;
}

/* A client that pipelines more requests than its unsent replies may hold
 * (FTC__STORE_OUTPUT_PAUSE) is held back, not dropped, and served in full
 * once it reads: the server reads it again as its replies drain. */
static void held_back_then_resumed(void **state)
{
    (void)state;
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    ftc__buf b;
    ftc__buf_init(&b, SIZE_MAX);
    static char val[4096];
    memset(val, 'p', sizeof(val));
    sr_conn c;
    sr_connect(&c, port, SR_V2);
    sr_kv(&b, SR_V2, FTC__OP_SET, "/p", val, sizeof(val));
    enum { N = 8192 }; /* 32 MiB of replies: more than sockets buffer */
    for (int i = 0; i < N; i++) {
        sr_key(&b, SR_V2, FTC__OP_GET, "/p");
    }
    pthread_t t;
    struct sender s = {&c, &b};
    assert_int_equal(pthread_create(&t, NULL, send_all, &s), 0);
    for (int i = 0; i < N; i++) {
        size_t len;
        char *got = sr_read_str(&c, &len);
        assert_int_equal(len, sizeof(val));
        assert_memory_equal(got, val, len);
        free(got);
    }
    pthread_join(t, NULL);
    assert_int_equal(ssk_stats(srv).slow_drops, 0);
    sr_close(&c);
    ftc__buf_free(&b);
    ssk_stop(srv);
}

/* A parked connection that keeps sending is throttled (the server stops
 * reading it), never dropped; once released everything is served. */
static void parked_sender_is_throttled(void **state)
{
    (void)state;
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    sr_conn w, g;
    sr_connect(&w, port, SR_V2);
    sr_connect(&g, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 8 << 20);
    const char *k[] = {"/gate"};
    sr_keys(&b, SR_V2, FTC__OP_WAIT, k, 1);
    static char val[32 << 10];
    for (int i = 0; i < 128; i++) { /* 4 MiB behind the WAIT */
        memset(val, 'a' + i % 26, sizeof(val));
        sr_kv(&b, SR_V2, FTC__OP_SET, "/t", val, sizeof(val));
    }
    sr_key(&b, SR_V2, FTC__OP_GET, "/t");
    struct sender s = {&w, &b};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, send_all, &s), 0);
    sr_expect_quiet(&w, 50);
    ftc__buf gb;
    ftc__buf_init(&gb, 1 << 10);
    sr_set(&gb, SR_V2, "/gate", "open");
    sr_flush(&g, &gb);
    assert_int_equal(sr_read_u8(&w), 0);
    size_t len;
    char *got = sr_read_str(&w, &len);
    assert_int_equal(len, sizeof(val));
    assert_int_equal(got[0], 'a' + 127 % 26);
    free(got);
    pthread_join(t, NULL);
    assert_int_equal(ssk_stats(srv).protocol_errors, 0);
    sr_close(&w);
    sr_close(&g);
    ftc__buf_free(&b);
    ftc__buf_free(&gb);
    ssk_stop(srv);
}

static void connection_limit(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.max_connections = 4;
    ftc_store_server *srv = ssk_start(&o);
    int port = ftc_store_server_port(srv);
    sr_conn c[5];
    for (int i = 0; i < 4; i++) {
        sr_connect(&c[i], port, SR_V2);
    }
    TK_WAIT_UNTIL(ssk_stats(srv).connections == 4, 5000);
    sr_connect(&c[4], port, SR_V2);
    sr_expect_closed(&c[4], 5000);
    TK_WAIT_UNTIL(ssk_stats(srv).refused == 1, 5000);
    assert_int_equal(ssk_logged("store.connlimit", "4 connections"), 1);
    sr_close(&c[0]);
    TK_WAIT_UNTIL(ssk_stats(srv).connections == 3, 5000);
    expect_served(port);
    for (int i = 1; i < 5; i++) {
        sr_close(&c[i]);
    }
    ssk_stop(srv);
}

/* Clients that vanish mid-request or while parked leave nothing behind
 * (ASan checks for leaks) and a later write to their key is harmless. */
static void clients_vanish_mid_request(void **state)
{
    (void)state;
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    const char *k[] = {"/v1", "/v2", "/v3"};
    for (int cut = 0; cut < 4; cut++) {
        sr_conn c;
        sr_connect(&c, port, SR_V2);
        switch (cut) {
        case 0: /* half a key */
            sr_key(&b, SR_V2, FTC__OP_SET, "/abcdefgh");
            b.len -= 4;
            break;
        case 1: /* a value announced, partly sent */
            sr_key(&b, SR_V2, FTC__OP_SET, "/k");
            sr_u64(&b, 100000);
            sr_u64(&b, 7);
            break;
        case 2: /* a count announced, some keys sent */
            sr_op(&b, SR_V2, FTC__OP_WAIT);
            sr_u64(&b, 100);
            sr_str(&b, "/a", 2);
            break;
        default: /* parked on three keys, with a request held behind */
            sr_keys(&b, SR_V2, FTC__OP_WAIT, k, 3);
            sr_key(&b, SR_V2, FTC__OP_GET, "/v1");
            break;
        }
        sr_flush(&c, &b);
        sr_close(&c);
    }
    TK_WAIT_UNTIL(ssk_stats(srv).connections == 0, 5000);
    sr_conn s;
    sr_connect(&s, port, SR_V2);
    sr_set(&b, SR_V2, "/v1", "1");
    sr_set(&b, SR_V2, "/v2", "2");
    sr_bare(&b, SR_V2, FTC__OP_GETNUMKEYS);
    sr_flush(&s, &b);
    assert_true(sr_read_i64(&s) == 2);
    assert_int_equal(ssk_stats(srv).protocol_errors, 0);
    sr_close(&s);
    ftc__buf_free(&b);
    ssk_stop(srv);
}

/* Random bytes on many connections: whatever they decode to, the server
 * survives and keeps serving. */
static void random_garbage(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.max_value_bytes = 1 << 16;
    o.max_total_bytes = 1 << 24;
    ftc_store_server *srv = ssk_start(&o);
    int port = ftc_store_server_port(srv);
    uint8_t junk[2048];
    for (int i = 0; i < 64; i++) {
        for (size_t j = 0; j < sizeof(junk); j++) {
            junk[j] = (uint8_t)ftc__rand_u64();
        }
        junk[0] = (uint8_t)(i % 3 == 0 ? 0x00 : junk[0]);
        sr_conn c;
        sr_connect(&c, port, i % 2 == 0 ? SR_V2 : SR_V1);
        sr_send(&c, junk, sizeof(junk));
        sr_close(&c);
    }
    TK_WAIT_UNTIL(ssk_stats(srv).connections == 0, 10000);
    expect_served(port);
    ssk_stop(srv);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unknown_query_type),
        cmocka_unit_test(oversize_from_the_header),
        cmocka_unit_test(bad_validate_later),
        cmocka_unit_test(add_on_text),
        cmocka_unit_test(control_barrier_bad_seats),
        cmocka_unit_test(store_full),
        cmocka_unit_test(dies_mid_value),
        cmocka_unit_test(half_sent_request_delays_nobody),
        cmocka_unit_test(non_reading_client_dropped),
        cmocka_unit_test(held_back_then_resumed),
        cmocka_unit_test(parked_sender_is_throttled),
        cmocka_unit_test(connection_limit),
        cmocka_unit_test(clients_vanish_mid_request),
        cmocka_unit_test(random_garbage),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
