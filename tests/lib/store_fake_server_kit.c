/* Scripted fake TCPStore server for the client unit tests: expectations
 * are checked on the server thread and reported when the test joins it. */
#include "store_fake_server_kit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base_int.h"
#include "testkit.h"

#define STEP_MS 10000

size_t fs_hex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (*s != '\0') {
        if (*s == ' ' || *s == '|') {
            s++;
            continue;
        }
        unsigned v = 0;
        for (int i = 0; i < 2 && *s != '\0'; i++, s++) {
            int c = *s | 0x20;
            v = v * 16 + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
        }
        assert_true(n < cap);
        out[n++] = (uint8_t)v;
    }
    return n;
}

size_t fs_flatten(const ftc__store_req *r, uint8_t *out, size_t cap)
{
    size_t seg = 0, n = 0;
    struct iovec iov[8];
    int k;
    while ((k = ftc__store_req_iov(r, &seg, iov, 8)) > 0) {
        for (int i = 0; i < k; i++) {
            assert_true(n + iov[i].iov_len <= cap);
            memcpy(out + n, iov[i].iov_base, iov[i].iov_len);
            n += iov[i].iov_len;
        }
    }
    return n;
}

void fs_fail(fs_server *s, const char *fmt, ...)
{
    if (s->failed) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof(s->why), fmt, ap);
    va_end(ap);
    s->failed = 1;
    fprintf(stderr, "fake server: %s\n", s->why);
    /* Unblock the client under test: it sees its connections close. */
    for (int i = 0; i < s->nfds; i++) {
        shutdown(s->fds[i], SHUT_RDWR);
    }
}

static void *run(void *arg)
{
    fs_server *s = arg;
    s->script(s);
    return NULL;
}

void fs_start(fs_server *s, fs_script script, void *arg)
{
    memset(s, 0, sizeof(*s));
    s->script = script;
    s->arg = arg;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 16, &s->lfd, &s->port));
    snprintf(s->addr, sizeof(s->addr), "127.0.0.1:%d", s->port);
    assert_int_equal(pthread_create(&s->thread, NULL, run, s), 0);
}

void fs_finish(fs_server *s)
{
    pthread_join(s->thread, NULL);
    close(s->lfd);
    if (s->failed) {
        fail_msg("fake server: %s", s->why);
    }
}

static ftc__deadline step(void)
{
    return ftc__deadline_in_ms(tk_ms(STEP_MS));
}

int fs_accept(fs_server *s)
{
    if (s->failed || ftc__sock_wait(s->lfd, POLLIN, step(), NULL) != 0) {
        fs_fail(s, "no connection came");
        return -1;
    }
    int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        fs_fail(s, "accept failed");
    } else if (s->nfds < FS_MAX_FDS) {
        s->fds[s->nfds++] = fd;
    }
    return fd;
}

static void recv_exact(fs_server *s, int fd, uint8_t *p, size_t n,
                       const char *what)
{
    if (s->failed) {
        return;
    }
    int rc = ftc__sock_recv_all(fd, p, n, step(), NULL);
    if (rc != 0) {
        fs_fail(s, "reading %s (%zu B): %s", what, n, ftc_last_error());
    }
}

static void expect_bytes(fs_server *s, int fd, const uint8_t *want, size_t n,
                         const char *what)
{
    static _Thread_local uint8_t got[1 << 16];
    if (n > sizeof(got)) {
        fs_fail(s, "expectation too long");
        return;
    }
    recv_exact(s, fd, got, n, what);
    if (!s->failed && memcmp(got, want, n) != 0) {
        size_t at = 0;
        while (got[at] == want[at]) {
            at++;
        }
        fs_fail(s, "%s differs at byte %zu of %zu: got %02x, expected %02x",
                what, at, n, got[at], want[at]);
    }
}

int fs_accept_v2(fs_server *s, int kind)
{
    int fd = fs_accept(s);
    fs_expect_hex(s, fd, "00 ce f7 85 3c 0d");
    uint8_t raw[4] = {0};
    recv_exact(s, fd, raw, 4, "PING nonce");
    uint32_t nonce = ftc__get_u32le(raw);
    if (!s->failed && (nonce & FTC__STORE_NONCE_TAG_MASK) != 0xF7C00000u) {
        fs_fail(s, "PING nonce %08x lacks the F7C tag", nonce);
    }
    ftc__put_u32le(raw, kind == FTC__STORE_SERVER_FTC ? ~nonce : nonce);
    if (!s->failed) {
        ftc__sock_send_all(fd, raw, 4, step(), NULL);
    }
    return fd;
}

void fs_expect_req(fs_server *s, int fd, ftc__store_req *r)
{
    static _Thread_local uint8_t want[1 << 16];
    size_t n = fs_flatten(r, want, sizeof(want));
    ftc__store_req_reset(r);
    expect_bytes(s, fd, want, n, "request");
}

void fs_expect_hex(fs_server *s, int fd, const char *hex)
{
    uint8_t want[256];
    size_t n = fs_hex(hex, want, sizeof(want));
    expect_bytes(s, fd, want, n, hex);
}

void fs_expect_eof(fs_server *s, int fd)
{
    uint8_t b;
    if (s->failed) {
        return;
    }
    int rc = ftc__sock_recv_all(fd, &b, 1, step(), NULL);
    if (rc == 0) {
        fs_fail(s, "expected the client to close; it sent byte %02x", b);
    } else if (rc != FTC_ECLOSED && rc != FTC_EPEER) {
        fs_fail(s, "expected the client to close: %s", ftc_last_error());
    }
}

void fs_end(fs_server *s, int fd)
{
    fs_expect_eof(s, fd);
    fs_close(fd);
}

static void send_bytes(fs_server *s, int fd, const void *p, size_t n)
{
    if (!s->failed && ftc__sock_send_all(fd, p, n, step(), NULL) != 0) {
        fs_fail(s, "send: %s", ftc_last_error());
    }
}

void fs_send_hex(fs_server *s, int fd, const char *hex)
{
    uint8_t b[256];
    size_t n = fs_hex(hex, b, sizeof(b));
    send_bytes(s, fd, b, n);
}

void fs_send_i64(fs_server *s, int fd, int64_t v)
{
    uint8_t b[8];
    ftc__put_u64le(b, (uint64_t)v);
    send_bytes(s, fd, b, 8);
}

void fs_send_value(fs_server *s, int fd, const void *p, size_t n)
{
    fs_send_i64(s, fd, (int64_t)n);
    send_bytes(s, fd, p, n);
}

void fs_close(int fd)
{
    if (fd >= 0) {
        close(fd);
    }
}
