/* Raw TCPStore frames and blocking sockets for the store server's tests. */
#include "store_kit.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base_int.h"
#include "testkit.h"

/* Query bytes straight from the reference (pytorch-c10d.md section 1.2):
 * 1.13 numbering, and 2.x numbering with VALIDATE = 0; then ftc's own
 * (docs/protocol.md). */
static const struct {
    ftc__store_op op;
    int v1, v2;
} opbytes[] = {
    {FTC__OP_VALIDATE, -1, 0},
    {FTC__OP_SET, 0, 1},
    {FTC__OP_COMPARE_SET, 1, 2},
    {FTC__OP_GET, 2, 3},
    {FTC__OP_ADD, 3, 4},
    {FTC__OP_CHECK, 4, 5},
    {FTC__OP_WAIT, 5, 6},
    {FTC__OP_GETNUMKEYS, 6, 7},
    {FTC__OP_WATCH_KEY, 7, -1},
    {FTC__OP_DELETE_KEY, 8, 8},
    {FTC__OP_APPEND, -1, 9},
    {FTC__OP_MULTI_GET, -1, 10},
    {FTC__OP_MULTI_SET, -1, 11},
    {FTC__OP_CANCEL_WAIT, -1, 12},
    {FTC__OP_PING, -1, 13},
    {FTC__OP_QUEUE_PUSH, -1, 14},
    {FTC__OP_QUEUE_POP, -1, 15},
    {FTC__OP_QUEUE_LEN, -1, 16},
    {FTC__OP_LIST_KEYS, -1, 17},
    {FTC__OP_BARRIER, -1, 18},
    {FTC__OP_CONTROL_BARRIER, -1, 0xF0},
    {FTC__OP_AUTH_HELLO, -1, 0xF1},
    {FTC__OP_AUTH_PROOF, -1, 0xF2},
};

int sr_opbyte(int dialect, ftc__store_op op)
{
    for (size_t i = 0; i < sizeof(opbytes) / sizeof(opbytes[0]); i++) {
        if (opbytes[i].op == op) {
            return dialect == SR_V2 ? opbytes[i].v2 : opbytes[i].v1;
        }
    }
    return -1;
}

void sr_u8(ftc__buf *b, uint8_t v)
{
    assert_int_equal(ftc__buf_append_u8(b, v), 0);
}

void sr_u32(ftc__buf *b, uint32_t v)
{
    assert_int_equal(ftc__buf_append_u32le(b, v), 0);
}

void sr_u64(ftc__buf *b, uint64_t v)
{
    assert_int_equal(ftc__buf_append_u64le(b, v), 0);
}

void sr_str(ftc__buf *b, const void *p, size_t n)
{
    assert_int_equal(ftc__buf_append_str(b, p, n), 0);
}

void sr_op(ftc__buf *b, int dialect, ftc__store_op op)
{
    int byte = sr_opbyte(dialect, op);
    assert_true(byte >= 0);
    sr_u8(b, (uint8_t)byte);
}

void sr_validate(ftc__buf *b)
{
    sr_op(b, SR_V2, FTC__OP_VALIDATE);
    sr_u32(b, 0x3C85F7CEu);
}

void sr_key(ftc__buf *b, int dialect, ftc__store_op op, const char *key)
{
    sr_op(b, dialect, op);
    sr_str(b, key, strlen(key));
}

void sr_kv(ftc__buf *b, int dialect, ftc__store_op op, const char *key,
           const void *val, size_t len)
{
    sr_key(b, dialect, op, key);
    sr_str(b, val, len);
}

void sr_set(ftc__buf *b, int dialect, const char *key, const char *val)
{
    sr_kv(b, dialect, FTC__OP_SET, key, val, strlen(val));
}

void sr_add(ftc__buf *b, int dialect, const char *key, int64_t delta)
{
    sr_key(b, dialect, FTC__OP_ADD, key);
    sr_u64(b, (uint64_t)delta);
}

void sr_cas(ftc__buf *b, int dialect, const char *key, const char *expected,
            const char *desired)
{
    sr_key(b, dialect, FTC__OP_COMPARE_SET, key);
    sr_str(b, expected, strlen(expected));
    sr_str(b, desired, strlen(desired));
}

void sr_keys(ftc__buf *b, int dialect, ftc__store_op op,
             const char *const *keys, size_t n)
{
    sr_op(b, dialect, op);
    sr_u64(b, n);
    for (size_t i = 0; i < n; i++) {
        sr_str(b, keys[i], strlen(keys[i]));
    }
}

void sr_multi_set(ftc__buf *b, const char *const *keys, const char *const *vals,
                  size_t n)
{
    sr_op(b, SR_V2, FTC__OP_MULTI_SET);
    sr_u64(b, n);
    for (size_t i = 0; i < n; i++) {
        sr_str(b, keys[i], strlen(keys[i]));
        sr_str(b, vals[i], strlen(vals[i]));
    }
}

void sr_ping(ftc__buf *b, uint32_t nonce)
{
    sr_op(b, SR_V2, FTC__OP_PING);
    sr_u32(b, nonce);
}

void sr_barrier(ftc__buf *b, const char *key, int64_t world_size)
{
    sr_key(b, SR_V2, FTC__OP_BARRIER, key);
    sr_u64(b, (uint64_t)world_size);
}

void sr_control_barrier(ftc__buf *b, const char *key, int64_t world_size,
                        int64_t rank)
{
    sr_key(b, SR_V2, FTC__OP_CONTROL_BARRIER, key);
    sr_u64(b, (uint64_t)world_size);
    sr_u64(b, (uint64_t)rank);
}

void sr_bare(ftc__buf *b, int dialect, ftc__store_op op)
{
    sr_op(b, dialect, op);
}

void sr_connect_bare(sr_conn *c, int port)
{
    c->dialect = SR_V1;
    int rc = ftc__sock_connect("127.0.0.1", port,
                               ftc__deadline_in_ms(tk_ms(10000)), NULL, &c->fd);
    if (rc != 0) {
        fail_msg("connect to port %d: %s", port, ftc_last_error());
    }
}

void sr_connect(sr_conn *c, int port, int dialect)
{
    sr_connect_bare(c, port);
    c->dialect = dialect;
    if (dialect == SR_V2) {
        uint8_t frame[5] = {0x00, 0xCE, 0xF7, 0x85, 0x3C};
        sr_send(c, frame, sizeof(frame));
    }
}

void sr_close(sr_conn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
    }
    c->fd = -1;
}

void sr_send(sr_conn *c, const void *p, size_t n)
{
    int rc = ftc__sock_send_all(c->fd, p, n, ftc__deadline_in_ms(tk_ms(10000)),
                                NULL);
    if (rc != 0) {
        fail_msg("send %zu B: %s", n, ftc_last_error());
    }
}

void sr_flush(sr_conn *c, ftc__buf *b)
{
    sr_send(c, ftc__buf_begin(b), ftc__buf_size(b));
    ftc__buf_reset(b);
}

int sr_read(sr_conn *c, void *p, size_t n, int64_t timeout_ms)
{
    int rc = ftc__sock_recv_all(c->fd, p, n,
                                ftc__deadline_in_ms(tk_ms(timeout_ms)), NULL);
    return rc == FTC_EPEER ? FTC_ECLOSED : rc;
}

static void read_or_fail(sr_conn *c, void *p, size_t n)
{
    int rc = sr_read(c, p, n, 10000);
    if (rc != 0) {
        fail_msg("reading %zu B: %s (%s)", n, ftc_err_name(rc),
                 ftc_last_error());
    }
}

uint8_t sr_read_u8(sr_conn *c)
{
    uint8_t v;
    read_or_fail(c, &v, 1);
    return v;
}

uint32_t sr_read_u32(sr_conn *c)
{
    uint8_t raw[4];
    read_or_fail(c, raw, 4);
    return ftc__get_u32le(raw);
}

int64_t sr_read_i64(sr_conn *c)
{
    uint8_t raw[8];
    read_or_fail(c, raw, 8);
    return (int64_t)ftc__get_u64le(raw);
}

char *sr_read_str(sr_conn *c, size_t *len)
{
    uint64_t n = (uint64_t)sr_read_i64(c);
    assert_true(n < ((uint64_t)1 << 32));
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    read_or_fail(c, s, (size_t)n);
    s[n] = '\0';
    if (len != NULL) {
        *len = (size_t)n;
    }
    return s;
}

void sr_expect_str(sr_conn *c, const char *want)
{
    size_t n;
    char *got = sr_read_str(c, &n);
    if (n != strlen(want) || memcmp(got, want, n) != 0) {
        fail_msg("got '%s' (%zu B), expected '%s'", got, n, want);
    }
    free(got);
}

void sr_expect_closed(sr_conn *c, int64_t timeout_ms)
{
    uint8_t junk[4096];
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    for (;;) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int64_t left = end - tk_now_ms();
        if (left <= 0) {
            fail_msg("the server did not close the connection");
        }
        if (poll(&pfd, 1, (int)left) <= 0) {
            continue;
        }
        ssize_t n = recv(c->fd, junk, sizeof(junk), 0);
        if (n <= 0) {
            return; /* EOF or reset */
        }
    }
}

void sr_expect_quiet(sr_conn *c, int64_t ms)
{
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    int n = poll(&pfd, 1, (int)ms);
    if (n != 0) {
        uint8_t b = 0;
        ssize_t got = recv(c->fd, &b, 1, MSG_PEEK);
        fail_msg("expected no reply yet; got %zd B (first 0x%02x)", got, b);
    }
}
