/* The store server with raw-socket clients: both dialects on one port,
 * every op, pipelining, split writes, waits parked and woken by every kind
 * of write, CANCEL_WAIT races, barriers (TCPStore's and ftc's
 * CONTROL_BARRIER), the ftc probe and 1.13 watches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "store_kit.h"
#include "store_server_kit.h"
#include "testkit.h"

typedef struct fixture {
    ftc_store_server *srv;
    int port;
    ftc__buf b;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->srv = ssk_start(NULL);
    f->port = ftc_store_server_port(f->srv);
    ftc__buf_init(&f->b, 64 << 20);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ssk_stop(f->srv);
    ftc__buf_free(&f->b);
    free(f);
    return 0;
}

static void both_dialects_share_one_port(void **state)
{
    fixture *f = *state;
    sr_conn v1, v2;
    sr_connect(&v1, f->port, SR_V1);
    sr_connect(&v2, f->port, SR_V2);
    /* 1.13 writes, 2.x reads, and the other way round */
    sr_set(&f->b, SR_V1, "/from1", "one");
    sr_key(&f->b, SR_V1, FTC__OP_GET, "/from1");
    sr_flush(&v1, &f->b);
    sr_expect_str(&v1, "one");
    sr_key(&f->b, SR_V2, FTC__OP_GET, "/from1");
    sr_set(&f->b, SR_V2, "/from2", "two");
    sr_flush(&v2, &f->b);
    sr_expect_str(&v2, "one");
    const char *k[] = {"/from2"};
    sr_keys(&f->b, SR_V1, FTC__OP_WAIT, k, 1);
    sr_key(&f->b, SR_V1, FTC__OP_GET, "/from2");
    sr_flush(&v1, &f->b);
    assert_int_equal(sr_read_u8(&v1), 0);
    sr_expect_str(&v1, "two");
    /* the 1.13 init/ worker counter, shared */
    sr_add(&f->b, SR_V1, "init/", 1);
    sr_flush(&v1, &f->b);
    assert_true(sr_read_i64(&v1) == 1);
    sr_add(&f->b, SR_V2, "init/", 1);
    sr_flush(&v2, &f->b);
    assert_true(sr_read_i64(&v2) == 2);
    sr_bare(&f->b, SR_V1, FTC__OP_GETNUMKEYS);
    sr_flush(&v1, &f->b);
    assert_true(sr_read_i64(&v1) == 3);
    sr_keys(&f->b, SR_V1, FTC__OP_CHECK, k, 1);
    sr_key(&f->b, SR_V1, FTC__OP_DELETE_KEY, "/from2");
    sr_keys(&f->b, SR_V1, FTC__OP_CHECK, k, 1);
    sr_flush(&v1, &f->b);
    assert_int_equal(sr_read_u8(&v1), 0);
    assert_true(sr_read_i64(&v1) == 1);
    assert_int_equal(sr_read_u8(&v1), 1);
    TK_WAIT_UNTIL(ssk_stats(f->srv).connections == 2, 5000);
    sr_close(&v1);
    sr_close(&v2);
    TK_WAIT_UNTIL(ssk_stats(f->srv).connections == 0, 5000);
}

static void every_v2_op(void **state)
{
    fixture *f = *state;
    sr_conn c;
    sr_connect(&c, f->port, SR_V2);
    ftc__buf *b = &f->b;
    sr_set(b, SR_V2, "/a", "1");
    sr_cas(b, SR_V2, "/a", "1", "2");
    sr_cas(b, SR_V2, "/a", "1", "3");
    sr_cas(b, SR_V2, "/new", "", "n");
    sr_cas(b, SR_V2, "/none", "x", "y");
    sr_key(b, SR_V2, FTC__OP_GET, "/a");
    sr_add(b, SR_V2, "/cnt", -5);
    sr_add(b, SR_V2, "/cnt", 7);
    sr_key(b, SR_V2, FTC__OP_GET, "/cnt");
    sr_kv(b, SR_V2, FTC__OP_APPEND, "/ap", "ab", 2);
    sr_kv(b, SR_V2, FTC__OP_APPEND, "/ap", "cd", 2);
    const char *mk[] = {"/m1", "/m2"}, *mv[] = {"x", "yy"};
    sr_multi_set(b, mk, mv, 2);
    const char *gk[] = {"/ap", "/m2", "/missing", "/m1"};
    sr_keys(b, SR_V2, FTC__OP_MULTI_GET, gk, 4);
    sr_keys(b, SR_V2, FTC__OP_CHECK, gk, 2);
    sr_keys(b, SR_V2, FTC__OP_CHECK, gk, 3);
    sr_keys(b, SR_V2, FTC__OP_WAIT, gk, 2);
    sr_bare(b, SR_V2, FTC__OP_GETNUMKEYS);
    sr_key(b, SR_V2, FTC__OP_DELETE_KEY, "/m1");
    sr_bare(b, SR_V2, FTC__OP_CANCEL_WAIT);
    sr_ping(b, 4242);
    sr_kv(b, SR_V2, FTC__OP_QUEUE_PUSH, "/q", "i1", 2);
    sr_kv(b, SR_V2, FTC__OP_QUEUE_PUSH, "/q", "i2", 2);
    sr_key(b, SR_V2, FTC__OP_QUEUE_LEN, "/q");
    sr_key(b, SR_V2, FTC__OP_QUEUE_POP, "/q");
    sr_key(b, SR_V2, FTC__OP_QUEUE_POP, "/q");
    sr_key(b, SR_V2, FTC__OP_QUEUE_POP, "/q");
    sr_barrier(b, "/solo", 1);
    sr_flush(&c, b);
    sr_expect_str(&c, "2"); /* cas equal */
    sr_expect_str(&c, "2"); /* cas different: current */
    sr_expect_str(&c, "n"); /* missing, expected "" */
    sr_expect_str(&c, "x"); /* missing, expected "x": expected */
    sr_expect_str(&c, "2"); /* get */
    assert_true(sr_read_i64(&c) == -5);
    assert_true(sr_read_i64(&c) == 2);
    sr_expect_str(&c, "2");
    sr_expect_str(&c, "abcd");
    sr_expect_str(&c, "yy");
    sr_expect_str(&c, "");
    sr_expect_str(&c, "x");
    assert_int_equal(sr_read_u8(&c), 0); /* check 2 present */
    assert_int_equal(sr_read_u8(&c), 1); /* check with a missing key */
    assert_int_equal(sr_read_u8(&c), 0); /* wait: present */
    assert_true(sr_read_i64(&c) == 6);   /* a new cnt ap m1 m2 */
    assert_true(sr_read_i64(&c) == 1);
    assert_int_equal(sr_read_u8(&c), 1); /* cancel with nothing pending */
    assert_int_equal(sr_read_u32(&c), 4242);
    assert_true(sr_read_i64(&c) == 2);
    assert_true(sr_read_i64(&c) == 2);
    sr_expect_str(&c, "i1");
    assert_true(sr_read_i64(&c) == 1);
    sr_expect_str(&c, "i2");
    assert_true(sr_read_i64(&c) == 0); /* empty: size only */
    assert_int_equal(sr_read_u8(&c), 0);
    /* LIST_KEYS: count then every map key */
    sr_bare(b, SR_V2, FTC__OP_LIST_KEYS);
    sr_flush(&c, b);
    int64_t n = sr_read_i64(&c);
    assert_true(n == 6); /* a new cnt ap m2 solo */
    int seen_solo = 0;
    for (int64_t i = 0; i < n; i++) {
        char *k = sr_read_str(&c, NULL);
        seen_solo += strcmp(k, "/solo") == 0;
        free(k);
    }
    assert_int_equal(seen_solo, 1);
    sr_close(&c);
}

static void get_of_missing_key_is_empty(void **state)
{
    fixture *f = *state;
    for (int d = 0; d < 2; d++) {
        sr_conn c;
        sr_connect(&c, f->port, d);
        sr_key(&f->b, d, FTC__OP_GET, "/nothing");
        sr_add(&f->b, d, "/after", 1);
        sr_flush(&c, &f->b);
        sr_expect_str(&c, "");
        assert_true(sr_read_i64(&c) == d + 1);
        sr_close(&c);
    }
}

/* The ftc probe: a nonce 0xF7Cxxxxx is answered with its complement. */
static void probe_ping(void **state)
{
    fixture *f = *state;
    sr_conn c;
    sr_connect(&c, f->port, SR_V2);
    const uint32_t probes[] = {0xF7C00000u, 0xF7C12345u, 0xF7CFFFFFu};
    const uint32_t echoes[] = {0xF7BFFFFFu, 0xF7D00000u, 12345u, 0u};
    for (size_t i = 0; i < 3; i++) {
        sr_ping(&f->b, probes[i]);
        sr_flush(&c, &f->b);
        assert_int_equal(sr_read_u32(&c), ~probes[i]);
    }
    for (size_t i = 0; i < 4; i++) {
        sr_ping(&f->b, echoes[i]);
        sr_flush(&c, &f->b);
        assert_int_equal(sr_read_u32(&c), echoes[i]);
    }
    sr_close(&c);
}

/* 300 requests in one send; replies come back in order. */
static void pipelining(void **state)
{
    fixture *f = *state;
    sr_conn c;
    sr_connect(&c, f->port, SR_V2);
    for (int i = 0; i < 100; i++) {
        char key[16], val[16];
        snprintf(key, sizeof(key), "/p%d", i);
        snprintf(val, sizeof(val), "v%d", i);
        sr_set(&f->b, SR_V2, key, val);
        sr_key(&f->b, SR_V2, FTC__OP_GET, key);
        sr_add(&f->b, SR_V2, "/pc", 1);
    }
    sr_flush(&c, &f->b);
    for (int i = 0; i < 100; i++) {
        char val[16];
        snprintf(val, sizeof(val), "v%d", i);
        sr_expect_str(&c, val);
        assert_true(sr_read_i64(&c) == i + 1);
    }
    sr_close(&c);
}

/* Every request of both dialects arrives one byte per write. */
static void split_writes(void **state)
{
    fixture *f = *state;
    for (int d = 0; d < 2; d++) {
        sr_conn c;
        sr_connect_bare(&c, f->port);
        if (d == SR_V2) {
            sr_validate(&f->b);
        }
        sr_set(&f->b, d, "/split", "value-split");
        sr_add(&f->b, d, "/sc", 3);
        const char *k[] = {"/split", "/sc"};
        sr_keys(&f->b, d, FTC__OP_WAIT, k, 2);
        sr_key(&f->b, d, FTC__OP_GET, "/split");
        sr_cas(&f->b, d, "/split", "value-split", "v2");
        size_t n = ftc__buf_size(&f->b);
        const uint8_t *p = ftc__buf_begin(&f->b);
        for (size_t i = 0; i < n; i++) {
            sr_send(&c, p + i, 1);
            if (i % 8 == 0) {
                tk_pause_ms(1); /* let some bytes arrive alone */
            }
        }
        ftc__buf_reset(&f->b);
        assert_true(sr_read_i64(&c) == 3 * (d + 1));
        assert_int_equal(sr_read_u8(&c), 0);
        sr_expect_str(&c, "value-split");
        sr_expect_str(&c, "v2");
        sr_close(&c);
    }
}

/* A value of n patterned bytes (seeded, so neighbours differ). */
static uint8_t *pattern(size_t n, unsigned seed)
{
    uint8_t *v = malloc(n);
    for (size_t i = 0; i < n; i++) {
        v[i] = (uint8_t)(i * 31u + seed + (i >> 12));
    }
    return v;
}

static void expect_big(sr_conn *c, const uint8_t *want, size_t n)
{
    size_t len;
    char *got = sr_read_str(c, &len);
    assert_true(len == n);
    assert_memory_equal(got, want, n);
    free(got);
}

/* Big SETs (received in place, not through the input buffer) arrive in
 * pieces of every size, head and value split anywhere, with the next
 * request right behind the value in the same write; a WAIT parked on the
 * key is woken by the finished SET. */
static void big_set_in_pieces(void **state)
{
    fixture *f = *state;
    const size_t n = (1u << 20) + 17;
    const size_t pieces[] = {1, 7, 1000, 65536 + 3, 300000};
    for (int d = 0; d < 2; d++) {
        sr_conn c, w;
        sr_connect(&c, f->port, d);
        sr_connect(&w, f->port, d);
        const char *k[] = {"/bigw"};
        sr_keys(&f->b, d, FTC__OP_WAIT, k, 1);
        sr_flush(&w, &f->b);
        for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
            uint8_t *v = pattern(n, (unsigned)(p + 10 * d));
            sr_kv(&f->b, d, FTC__OP_SET, p == 0 ? "/bigw" : "/big", v, n);
            sr_key(&f->b, d, FTC__OP_GET, p == 0 ? "/bigw" : "/big");
            size_t total = ftc__buf_size(&f->b);
            const uint8_t *b = ftc__buf_begin(&f->b);
            for (size_t off = 0, len; off < total; off += len) {
                len = total - off < pieces[p] ? total - off : pieces[p];
                /* 1-byte pieces only for the head and the value's start
                 * and end: a million sends would take long */
                if (pieces[p] == 1 && off > 64 && off + 64 < total - 16) {
                    len = total - 64 - 16 - off;
                }
                sr_send(&c, b + off, len);
            }
            ftc__buf_reset(&f->b);
            expect_big(&c, v, n);
            if (p == 0) {
                assert_int_equal(sr_read_u8(&w), 0);
            }
            free(v);
        }
        sr_close(&c);
        sr_close(&w);
    }
}

/* A WAIT on a missing key holds every later reply of its connection until
 * the key appears; each kind of write releases it. */
static void wait_parks_until_each_kind_of_write(void **state)
{
    fixture *f = *state;
    sr_conn w, s;
    sr_connect(&w, f->port, SR_V2);
    sr_connect(&s, f->port, SR_V2);
    for (int kind = 0; kind < 6; kind++) {
        char key[16];
        snprintf(key, sizeof(key), "/w%d", kind);
        const char *k[] = {key};
        sr_keys(&f->b, SR_V2, FTC__OP_WAIT, k, 1);
        sr_ping(&f->b, 77);
        sr_flush(&w, &f->b);
        sr_expect_quiet(&w, 50);
        const char *mk[] = {key}, *mv[] = {"m"};
        switch (kind) {
        case 0:
            sr_set(&f->b, SR_V2, key, "s");
            break;
        case 1:
            sr_add(&f->b, SR_V2, key, 1);
            break;
        case 2:
            sr_cas(&f->b, SR_V2, key, "", "c");
            break;
        case 3:
            sr_kv(&f->b, SR_V2, FTC__OP_APPEND, key, "a", 1);
            break;
        case 4:
            sr_multi_set(&f->b, mk, mv, 1);
            break;
        default:
            sr_kv(&f->b, SR_V2, FTC__OP_QUEUE_PUSH, key, "q", 1);
            break;
        }
        sr_flush(&s, &f->b);
        assert_int_equal(sr_read_u8(&w), 0);
        assert_int_equal(sr_read_u32(&w), 77);
    }
    sr_close(&w);
    sr_close(&s);
}

/* CANCEL_WAIT is served while parked: the WAIT is answered WAIT_CANCELED
 * and the held requests then run in order. */
static void cancel_wait_while_parked(void **state)
{
    fixture *f = *state;
    sr_conn c;
    sr_connect(&c, f->port, SR_V2);
    const char *k[] = {"/never"};
    /* the cancel arrives later, by itself */
    sr_keys(&f->b, SR_V2, FTC__OP_WAIT, k, 1);
    sr_flush(&c, &f->b);
    sr_expect_quiet(&c, 50);
    sr_bare(&f->b, SR_V2, FTC__OP_CANCEL_WAIT);
    sr_flush(&c, &f->b);
    assert_int_equal(sr_read_u8(&c), 1);
    /* pipelined: WAIT + GET (ftc's client) and then the cancel */
    sr_keys(&f->b, SR_V2, FTC__OP_WAIT, k, 1);
    sr_key(&f->b, SR_V2, FTC__OP_GET, "/never");
    sr_flush(&c, &f->b);
    sr_expect_quiet(&c, 50);
    sr_bare(&f->b, SR_V2, FTC__OP_CANCEL_WAIT);
    sr_ping(&f->b, 5);
    sr_flush(&c, &f->b);
    assert_int_equal(sr_read_u8(&c), 1);
    sr_expect_str(&c, "");
    assert_int_equal(sr_read_u32(&c), 5);
    /* a later set does not send a stray STOP_WAITING */
    sr_conn s;
    sr_connect(&s, f->port, SR_V2);
    sr_set(&f->b, SR_V2, "/never", "now");
    sr_ping(&f->b, 1);
    sr_flush(&s, &f->b);
    assert_int_equal(sr_read_u32(&s), 1);
    sr_ping(&f->b, 6);
    sr_flush(&c, &f->b);
    assert_int_equal(sr_read_u32(&c), 6);
    sr_close(&s);
    sr_close(&c);
}

/* The wait completes just before the cancel arrives: STOP_WAITING first,
 * then the cancel's own WAIT_CANCELED (what PyTorch's client expects). */
static void cancel_after_wait_completed(void **state)
{
    fixture *f = *state;
    sr_conn c, s;
    sr_connect(&c, f->port, SR_V2);
    sr_connect(&s, f->port, SR_V2);
    const char *k[] = {"/race"};
    sr_keys(&f->b, SR_V2, FTC__OP_WAIT, k, 1);
    sr_key(&f->b, SR_V2, FTC__OP_GET, "/race");
    sr_flush(&c, &f->b);
    sr_expect_quiet(&c, 20);
    sr_set(&f->b, SR_V2, "/race", "won");
    sr_ping(&f->b, 9);
    sr_flush(&s, &f->b);
    assert_int_equal(sr_read_u32(&s), 9); /* the set was applied */
    sr_bare(&f->b, SR_V2, FTC__OP_CANCEL_WAIT);
    sr_flush(&c, &f->b);
    assert_int_equal(sr_read_u8(&c), 0);
    sr_expect_str(&c, "won");
    assert_int_equal(sr_read_u8(&c), 1);
    sr_close(&s);
    sr_close(&c);
}

/* Many rounds of wait / set / cancel from three connections at once: every
 * wait is answered exactly once and the stream never desynchronises. */
static void cancel_races(void **state)
{
    fixture *f = *state;
    sr_conn c, s;
    sr_connect(&c, f->port, SR_V2);
    sr_connect(&s, f->port, SR_V2);
    ftc__buf sb;
    ftc__buf_init(&sb, 1 << 20);
    for (int i = 0; i < 200; i++) {
        char key[16];
        snprintf(key, sizeof(key), "/r%d", i);
        const char *k[] = {key};
        sr_keys(&f->b, SR_V2, FTC__OP_WAIT, k, 1);
        sr_flush(&c, &f->b);
        sr_set(&sb, SR_V2, key, "v");
        sr_flush(&s, &sb); /* no round trip: races with the cancel */
        sr_bare(&f->b, SR_V2, FTC__OP_CANCEL_WAIT);
        sr_ping(&f->b, (uint32_t)i);
        sr_flush(&c, &f->b);
        uint8_t first = sr_read_u8(&c);
        if (first == 0) {
            assert_int_equal(sr_read_u8(&c), 1);
        } else {
            assert_int_equal(first, 1);
        }
        assert_int_equal(sr_read_u32(&c), (uint32_t)i);
    }
    ftc__buf_free(&sb);
    sr_close(&s);
    sr_close(&c);
}

static void barrier_of_three(void **state)
{
    fixture *f = *state;
    sr_conn c[3];
    for (int i = 0; i < 3; i++) {
        sr_connect(&c[i], f->port, SR_V2);
    }
    for (int i = 0; i < 2; i++) {
        sr_barrier(&f->b, "/bar", 3);
        sr_flush(&c[i], &f->b);
    }
    sr_expect_quiet(&c[0], 30);
    sr_expect_quiet(&c[1], 1);
    sr_barrier(&f->b, "/bar", 3);
    sr_flush(&c[2], &f->b);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sr_read_u8(&c[i]), 0);
    }
    /* a parked barrier is cancelled like a wait */
    sr_barrier(&f->b, "/bar2", 2);
    sr_flush(&c[0], &f->b);
    sr_expect_quiet(&c[0], 20);
    sr_bare(&f->b, SR_V2, FTC__OP_CANCEL_WAIT);
    sr_flush(&c[0], &f->b);
    assert_int_equal(sr_read_u8(&c[0]), 1);
    sr_key(&f->b, SR_V2, FTC__OP_GET, "/bar2");
    sr_flush(&c[1], &f->b);
    sr_expect_str(&c[1], "1");
    for (int i = 0; i < 3; i++) {
        sr_close(&c[i]);
    }
}

/* Reads a CONTROL_BARRIER's completed answer. */
static void expect_barrier_done(sr_conn *c, int64_t arrived, const char *last)
{
    assert_int_equal(sr_read_u8(c), 0);
    assert_true(sr_read_i64(c) == arrived);
    sr_expect_str(c, last);
}

/* CONTROL_BARRIER: two ftc ranks park; a c10d rank doing the barrier with
 * plain ops (ADD, SET its key, SET last_members) releases them. A parked
 * one holds the requests behind it and is cancelled like a WAIT. */
static void control_barrier_with_a_c10d_rank(void **state)
{
    fixture *f = *state;
    sr_conn c[3];
    for (int i = 0; i < 3; i++) {
        sr_connect(&c[i], f->port, SR_V2);
    }
    /* rank 0 arrives first (c[2] waits for its key): the server may read
     * two connections in either order */
    sr_control_barrier(&f->b, "/cb", 3, 0);
    sr_flush(&c[0], &f->b);
    const char *first[] = {"/cb/0"};
    sr_keys(&f->b, SR_V2, FTC__OP_WAIT, first, 1);
    sr_flush(&c[2], &f->b);
    assert_int_equal(sr_read_u8(&c[2]), 0);
    sr_control_barrier(&f->b, "/cb", 3, 1);
    sr_flush(&c[1], &f->b);
    const char *second[] = {"/cb/1"};
    sr_keys(&f->b, SR_V2, FTC__OP_WAIT, second, 1);
    sr_flush(&c[2], &f->b);
    assert_int_equal(sr_read_u8(&c[2]), 0);
    sr_expect_quiet(&c[0], 30);
    sr_expect_quiet(&c[1], 1);
    sr_add(&f->b, SR_V2, "/cb/num_members", 1);
    sr_set(&f->b, SR_V2, "/cb/2", "joined");
    sr_flush(&c[2], &f->b);
    assert_true(sr_read_i64(&c[2]) == 3);
    sr_expect_quiet(&c[0], 20);
    const char *ranks[] = {"/cb/0", "/cb/1", "/cb/2"};
    sr_keys(&f->b, SR_V2, FTC__OP_CHECK, ranks, 3);
    sr_set(&f->b, SR_V2, "/cb/last_members", "<val_ignored>");
    sr_flush(&c[2], &f->b);
    assert_int_equal(sr_read_u8(&c[2]), 0); /* every rank key is there */
    expect_barrier_done(&c[0], 1, "<val_ignored>");
    expect_barrier_done(&c[1], 2, "<val_ignored>");
    /* parked with a PING behind it; the cancel answers 01, then the PING */
    sr_control_barrier(&f->b, "/cb2", 2, 0);
    sr_ping(&f->b, 7);
    sr_flush(&c[0], &f->b);
    sr_expect_quiet(&c[0], 20);
    sr_bare(&f->b, SR_V2, FTC__OP_CANCEL_WAIT);
    sr_flush(&c[0], &f->b);
    assert_int_equal(sr_read_u8(&c[0]), 1);
    assert_int_equal(sr_read_u32(&c[0]), 7);
    /* the cancelled arrival still counts (as in c10d): the next one is
     * the last, done at once */
    sr_control_barrier(&f->b, "/cb2", 2, 1);
    sr_flush(&c[1], &f->b);
    expect_barrier_done(&c[1], 2, "<val_ignored>");
    /* done before the cancel: the answer, then the cancel's own 01 */
    sr_control_barrier(&f->b, "/solo", 1, 0);
    sr_bare(&f->b, SR_V2, FTC__OP_CANCEL_WAIT);
    sr_flush(&c[2], &f->b);
    expect_barrier_done(&c[2], 1, "<val_ignored>");
    assert_int_equal(sr_read_u8(&c[2]), 1);
    /* a late rank gets what last_members holds, at once */
    sr_control_barrier(&f->b, "/cb", 3, 1);
    sr_flush(&c[2], &f->b);
    expect_barrier_done(&c[2], 4, "<val_ignored>");
    for (int i = 0; i < 3; i++) {
        sr_close(&c[i]);
    }
}

/* 1.13's second connection says nothing and must be kept; WATCH_KEY on it
 * registers (03) and then pushes every change of the key. */
static void watch_on_the_idle_callback_connection(void **state)
{
    fixture *f = *state;
    sr_conn main1, cb;
    sr_connect(&main1, f->port, SR_V1);
    sr_connect_bare(&cb, f->port);
    TK_WAIT_UNTIL(ssk_stats(f->srv).connections == 2, 5000);
    sr_expect_quiet(&cb, 20);
    sr_key(&f->b, SR_V1, FTC__OP_WATCH_KEY, "/watched");
    sr_flush(&cb, &f->b);
    assert_int_equal(sr_read_u8(&cb), 3);
    sr_set(&f->b, SR_V1, "/watched", "a");
    sr_set(&f->b, SR_V1, "/watched", "b");
    sr_key(&f->b, SR_V1, FTC__OP_DELETE_KEY, "/watched");
    sr_flush(&main1, &f->b);
    assert_true(sr_read_i64(&main1) == 1);
    const struct {
        uint8_t type;
        const char *old, *now;
    } want[] = {{1, "", "a"}, {0, "a", "b"}, {2, "b", ""}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sr_read_u8(&cb), want[i].type);
        sr_expect_str(&cb, "/watched");
        sr_expect_str(&cb, want[i].old);
        sr_expect_str(&cb, want[i].now);
    }
    sr_close(&cb);
    sr_close(&main1);
}

static void stats_count_requests(void **state)
{
    fixture *f = *state;
    ftc_store_server_stats before = ssk_stats(f->srv);
    sr_conn c;
    sr_connect(&c, f->port, SR_V2);
    sr_set(&f->b, SR_V2, "/s1", "12345");
    sr_ping(&f->b, 1);
    sr_flush(&c, &f->b);
    assert_int_equal(sr_read_u32(&c), 1);
    /* VALIDATE, SET and PING */
    TK_WAIT_UNTIL(ssk_stats(f->srv).requests == before.requests + 3, 5000);
    ftc_store_server_stats st = ssk_stats(f->srv);
    assert_int_equal(st.keys, before.keys + 1);
    assert_int_equal(st.bytes, before.bytes + 3 + 5);
    assert_int_equal(st.protocol_errors, 0);
    sr_close(&c);
}

int main(int argc, char **argv)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(both_dialects_share_one_port),
        T(every_v2_op),
        T(get_of_missing_key_is_empty),
        T(probe_ping),
        T(pipelining),
        T(split_writes),
        T(big_set_in_pieces),
        T(wait_parks_until_each_kind_of_write),
        T(cancel_wait_while_parked),
        T(cancel_after_wait_completed),
        T(cancel_races),
        T(barrier_of_three),
        T(control_barrier_with_a_c10d_rank),
        T(watch_on_the_idle_callback_connection),
        T(stats_count_requests),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
