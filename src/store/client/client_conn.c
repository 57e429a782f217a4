/* The store client's connection: connect with the 2.x handshake and server
 * probe, buffered reply reading, and the rules that keep it in sync. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "store/client/client_int.h"

/* Replies other than values are at most a few bytes; this is how much one
 * recv may take ahead so pipelined replies arrive in one system call. */
#define RECV_CHUNK (64 * 1024)

int ftc__store_conn_init(ftc__store_conn *c, const char *host, int port,
                         const ftc_store_client_opts *opts)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->dialect = opts->dialect;
    snprintf(c->host, sizeof(c->host), "%s", host);
    c->port = port;
    c->connect_timeout_ms = opts->connect_timeout_ms;
    c->max_value_bytes = opts->max_value_bytes;
    c->recv_chunk = RECV_CHUNK;
    c->rcvtimeo_us = -1;
    pthread_mutex_init(&c->fd_lock, NULL);
    ftc__buf_init(&c->in, 2 * RECV_CHUNK);
    ftc__store_req_init(&c->req, opts->dialect);
    c->has_token = opts->token != NULL;
    return c->has_token ? ftc__auth_key(opts->token, c->key) : 0;
}

static void drop(ftc__store_conn *c)
{
    pthread_mutex_lock(&c->fd_lock);
    if (c->fd >= 0) {
        close(c->fd);
    }
    c->fd = -1;
    pthread_mutex_unlock(&c->fd_lock);
    c->broken = 0;
    c->held_replies = 0;
    c->cancel_owed = 0;
    c->rcvtimeo_us = -1;
    c->server = FTC__STORE_SERVER_UNKNOWN;
    c->locked = 0;
    ftc__buf_reset(&c->in);
    ftc__store_req_reset(&c->req);
}

void ftc__store_conn_close(ftc__store_conn *c)
{
    drop(c);
    ftc__buf_free(&c->in);
    ftc__store_req_free(&c->req);
    ftc__auth_wipe(c->key, sizeof(c->key));
    pthread_mutex_destroy(&c->fd_lock);
}

void ftc__store_conn_enter(ftc__store_conn *c, ftc__event *ev)
{
    pthread_mutex_lock(&c->fd_lock);
    if (atomic_load(&c->cancelled)) {
        atomic_store(&c->cancelled, 0);
        ftc__event_clear(ev);
    }
    c->in_call = 1;
    pthread_mutex_unlock(&c->fd_lock);
}

void ftc__store_conn_leave(ftc__store_conn *c)
{
    pthread_mutex_lock(&c->fd_lock);
    c->in_call = 0;
    /* Shut down (or about to be, had it connected): never reuse it. */
    c->broken |= atomic_load(&c->cancelled);
    pthread_mutex_unlock(&c->fd_lock);
}

/* Under fd_lock: a cancelled call's socket is shut down, so that a recv
 * blocked on it (or the next one) returns at once. */
static void stop_if_cancelled(ftc__store_conn *c)
{
    if (c->in_call && c->fd >= 0 && atomic_load(&c->cancelled)) {
        shutdown(c->fd, SHUT_RDWR);
    }
}

void ftc__store_conn_cancel(ftc__store_conn *c, ftc__event *ev)
{
    pthread_mutex_lock(&c->fd_lock);
    atomic_store(&c->cancelled, 1);
    ftc__event_signal(ev);
    stop_if_cancelled(c);
    pthread_mutex_unlock(&c->fd_lock);
}

/* Every failure of a call passes here. One that a cancel caused (a socket
 * shut down under a read or a send) is reported as the cancel. */
static int broken(ftc__store_conn *c, int rc)
{
    c->broken = 1;
    if (rc != FTC_ECANCELED && atomic_load(&c->cancelled)) {
        return ftc__seterr(FTC_ECANCELED, "cancelled");
    }
    return rc;
}

int ftc__store_conn_send(ftc__store_conn *c, ftc__deadline dl,
                         const ftc__event *cancel)
{
    size_t seg = 0;
    struct iovec iov[64];
    int rc = 0;
    for (;;) {
        int k = ftc__store_req_iov(&c->req, &seg, iov, 64);
        if (k == 0) {
            break;
        }
        rc = ftc__sock_sendv_all(c->fd, iov, k, dl, cancel);
        if (rc != 0) {
            break;
        }
    }
    ftc__store_req_reset(&c->req);
    atomic_fetch_add_explicit(&c->writes, 1, memory_order_relaxed);
    return rc != 0 ? broken(c, rc) : 0;
}

/* Bounds the next blocking recv by dl with SO_RCVTIMEO, or fails with
 * FTC_ETIMEDOUT once dl has passed. The system call is made only when the
 * value in force would outlast dl, or would wake the recv before half of
 * what is left (a wake-up before dl only costs another loop): calls with
 * the same timeout keep the value set by the first, since it is set a
 * sixteenth short of what was left then. So a call's timeout never
 * outlives it, and the hot path makes no setsockopt. */
static int bound_recv(ftc__store_conn *c, ftc__deadline dl)
{
    int64_t want = -1;
    if (!ftc__deadline_is_never(dl)) {
        int64_t left = (dl.ns - ftc__now_ns()) / 1000;
        if (left <= 0) {
            return ftc__seterr(FTC_ETIMEDOUT, "timed out");
        }
        if (c->rcvtimeo_us > 0 && c->rcvtimeo_us <= left &&
            c->rcvtimeo_us >= left / 2) {
            return 0;
        }
        want = left - left / 16;
    } else if (c->rcvtimeo_us < 0) {
        return 0;
    }
    struct timeval tv = {0, 0}; /* zero: no timeout */
    if (want > 0) {
        tv.tv_sec = (time_t)(want / 1000000);
        tv.tv_usec = (suseconds_t)(want % 1000000);
    }
    if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
        return ftc__seterr_errno(errno, "setsockopt(SO_RCVTIMEO)");
    }
    c->rcvtimeo_us = want;
    return 0;
}

/* Receives until at least need bytes are buffered, each time with one
 * blocking recv (bounded by bound_recv; a cancel shuts the socket down
 * under it). */
static int fill(ftc__store_conn *c, size_t need, ftc__deadline dl)
{
    while (ftc__buf_size(&c->in) < need) {
        size_t want = c->recv_chunk > 0 ? c->recv_chunk : 1;
        int rc = ftc__buf_reserve(&c->in, want);
        if (rc == 0) {
            rc = bound_recv(c, dl);
        }
        if (rc != 0) {
            return rc;
        }
        ssize_t r = recv(c->fd, c->in.data + c->in.len, want, 0);
        if (r > 0) {
            c->in.len += (size_t)r;
            continue;
        }
        if (r == 0 && c->locked) {
            return ftc__seterr(FTC_ECLOSED,
                               "connection closed by %s:%d (it wants a token "
                               "for keys outside its open prefixes, and this "
                               "client has none)",
                               c->host, c->port);
        }
        if (r == 0) {
            return ftc__seterr(FTC_ECLOSED, "connection closed by %s:%d",
                               c->host, c->port);
        }
        /* EAGAIN: SO_RCVTIMEO ran out; bound_recv decides what next. */
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
            return ftc__seterr_errno(errno, "recv from %s:%d", c->host,
                                     c->port);
        }
    }
    return 0;
}

/* Fills n bytes and hands them out; the caller consumes them. */
static int take(ftc__store_conn *c, size_t n, const uint8_t **p,
                ftc__deadline dl)
{
    int rc = fill(c, n, dl);
    if (rc != 0) {
        return broken(c, rc);
    }
    *p = ftc__buf_begin(&c->in);
    ftc__buf_consume(&c->in, n);
    return 0;
}

int ftc__store_conn_recv_raw(ftc__store_conn *c, void *out, size_t n,
                             ftc__deadline dl)
{
    const uint8_t *p = NULL;
    int rc = take(c, n, &p, dl);
    if (rc == 0) {
        memcpy(out, p, n);
    }
    return rc;
}

int ftc__store_conn_recv_uint(ftc__store_conn *c, size_t size, uint64_t *v,
                              ftc__deadline dl)
{
    const uint8_t *p = NULL;
    int rc = take(c, size, &p, dl);
    if (rc == 0) {
        uint64_t x = 0;
        for (size_t i = size; i-- > 0;) {
            x = (x << 8) | p[i];
        }
        *v = x;
    }
    return rc;
}

int ftc__store_conn_recv_i64(ftc__store_conn *c, int64_t *v, ftc__deadline dl)
{
    uint64_t x = 0;
    int rc = ftc__store_conn_recv_uint(c, 8, &x, dl);
    *v = (int64_t)x;
    return rc;
}

int ftc__store_conn_recv_value(ftc__store_conn *c, void **out, size_t *n,
                               ftc__deadline dl, const ftc__event *cancel)
{
    int64_t raw;
    int rc = ftc__store_conn_recv_i64(c, &raw, dl);
    if (rc != 0) {
        return rc;
    }
    uint64_t len = (uint64_t)raw;
    rc = ftc__store_check_len(len, c->max_value_bytes, "reply value");
    if (rc != 0) {
        return broken(c, rc);
    }
    /* Small values are buffered (the next reply may come in the same recv);
     * big ones are received straight into their own memory. */
    if (len <= c->recv_chunk / 2) {
        rc = fill(c, len, dl);
        if (rc != 0) {
            return broken(c, rc);
        }
    }
    uint8_t *p = ftc__malloc(len > 0 ? len : 1);
    if (p == NULL) {
        return broken(c, ftc__seterr(FTC_ENOMEM, "reply value of %llu B",
                                     (unsigned long long)len));
    }
    size_t have = ftc__buf_size(&c->in);
    have = have < len ? have : len;
    memcpy(p, ftc__buf_begin(&c->in), have);
    ftc__buf_consume(&c->in, have);
    rc = ftc__sock_recv_all(c->fd, p + have, len - have, dl, cancel);
    if (rc != 0) {
        ftc__free(p);
        return broken(c, rc);
    }
    *out = p;
    *n = len;
    return 0;
}

/* After a WAIT timed out with nothing received: CANCEL_WAIT. Its answer
 * is WAIT_CANCELED, or STOP_WAITING first when the keys arrived in the
 * race. Behind a pipelined WAIT an ftc server answers in stream order
 * (docs/protocol.md, "Strict FIFO and parking"): 01 for the cancelled WAIT,
 * then the held requests' replies; or 00, the held replies, then the
 * cancel's own 01. The caller reads the held replies (c->held_replies or
 * c->cancel_owed say which case). */
static int cancel_wait(ftc__store_conn *c, int pipelined,
                       const ftc__event *cancel)
{
    c->grace = ftc__deadline_in_ms(FTC__STORE_CANCEL_GRACE_MS);
    int rc = ftc__store_enc_bare(&c->req, FTC__OP_CANCEL_WAIT);
    if (rc == 0) {
        rc = ftc__store_conn_send(c, c->grace, cancel);
    }
    uint64_t b = 0;
    if (rc == 0) {
        rc = ftc__store_conn_recv_uint(c, 1, &b, c->grace);
    }
    if (rc == 0 && b == FTC__WAIT_CANCELED) {
        c->held_replies = pipelined;
        return ftc__seterr(FTC_ETIMEDOUT, "timed out");
    }
    if (rc == 0 && b == FTC__WAIT_STOP_WAITING) {
        if (pipelined) {
            c->cancel_owed = 1;
            return 0;
        }
        return ftc__store_conn_recv_cancel_owed(c);
    }
    if (rc == 0) {
        rc = ftc__seterr(FTC_EPROTO, "CANCEL_WAIT answered with byte %u",
                         (unsigned)b);
    }
    return broken(c, rc);
}

int ftc__store_conn_recv_cancel_owed(ftc__store_conn *c)
{
    uint64_t b = 0;
    c->cancel_owed = 0;
    int rc = ftc__store_conn_recv_uint(c, 1, &b, c->grace);
    if (rc == 0 && b != FTC__WAIT_CANCELED) {
        rc = broken(c,
                    ftc__seterr(FTC_EPROTO, "CANCEL_WAIT answered with byte %u",
                                (unsigned)b));
    }
    return rc;
}

int ftc__store_conn_recv_wait(ftc__store_conn *c, int pipelined,
                              ftc__deadline dl, const ftc__event *cancel)
{
    int rc = fill(c, 1, dl);
    /* A pipelined WAIT can be cancelled in-protocol only on an ftc server,
     * whose answers behind it are known; the 1.13 dialect has no cancel. */
    if (rc == FTC_ETIMEDOUT && ftc__buf_size(&c->in) == 0 &&
        c->dialect == FTC_STORE_DIALECT_V2 &&
        (!pipelined || c->server == FTC__STORE_SERVER_FTC)) {
        return cancel_wait(c, pipelined, cancel);
    }
    if (rc != 0) {
        return broken(c, rc);
    }
    uint8_t b = *ftc__buf_begin(&c->in);
    ftc__buf_consume(&c->in, 1);
    if (b != FTC__WAIT_STOP_WAITING) {
        return broken(c, ftc__seterr(FTC_EPROTO, "WAIT answered with byte %u",
                                     (unsigned)b));
    }
    return 0;
}

static int handshake(ftc__store_conn *c, ftc__deadline dl,
                     const ftc__event *cancel)
{
    uint32_t nonce = ftc__store_probe_nonce(ftc__rand_u64());
    uint8_t cn[FTC__AUTH_NONCE];
    int rc = ftc__store_enc_handshake(&c->req, nonce);
    if (rc == 0 && c->has_token) {
        rc = ftc__store_client_auth_hello(c, cn);
    }
    if (rc == 0) {
        rc = ftc__store_conn_send(c, dl, cancel);
    }
    uint64_t reply = 0;
    if (rc == 0) {
        rc = ftc__store_conn_recv_uint(c, 4, &reply, dl);
    }
    if (rc != 0) {
        return rc;
    }
    int kind = ftc__store_probe_kind(nonce, (uint32_t)reply);
    if (kind < 0) {
        return ftc__seterr(FTC_EPROTO,
                           "%s:%d is not a TCPStore server: PING %08x was "
                           "answered with %08x",
                           c->host, c->port, nonce, (uint32_t)reply);
    }
    c->server = kind;
    c->locked =
        !c->has_token && ftc__store_probe_locked(nonce, (uint32_t)reply);
    return c->has_token ? ftc__store_client_auth_finish(c, kind, cn, dl, cancel)
                        : 0;
}

/* Connects and, in the 2.x dialect, validates and probes; a server that
 * accepts and then drops us (still starting, overloaded) is retried with
 * backoff until the deadline, like PyTorch's own client does. */
static int open_conn(ftc__store_conn *c, ftc__deadline dl,
                     const ftc__event *cancel)
{
    dl = ftc__deadline_min(dl, ftc__deadline_in_ms(c->connect_timeout_ms));
    ftc__backoff backoff;
    ftc__backoff_init(&backoff, 10, 1000);
    for (;;) {
        int fd = -1;
        int rc = ftc__sock_connect(c->host, c->port, dl, cancel, &fd);
        /* Blocking, for fill's recv; everything else passes
         * MSG_DONTWAIT. */
        if (rc == 0) {
            rc = ftc__sock_set_nonblock(fd, 0);
            if (rc != 0) {
                close(fd);
            }
        }
        if (rc != 0) {
            return rc;
        }
        /* A server on this host: reno, as the server does on its side
         * (docs/decisions.md); what a big SET's sender paces matters. */
        ftc__sock_reno_if_same_host(fd);
        pthread_mutex_lock(&c->fd_lock);
        c->fd = fd;
        stop_if_cancelled(c); /* a cancel that came during the connect */
        pthread_mutex_unlock(&c->fd_lock);
        atomic_fetch_add_explicit(&c->connects, 1, memory_order_relaxed);
        if (c->dialect == FTC_STORE_DIALECT_V1) {
            return 0;
        }
        rc = handshake(c, dl, cancel);
        if (rc == 0) {
            return 0;
        }
        drop(c);
        if (rc == FTC_ECANCELED || rc == FTC_EPROTO || rc == FTC_ENOMEM ||
            rc == FTC_EAUTH || rc == FTC_ENOTSUP || ftc__deadline_expired(dl)) {
            return ftc__adderr(rc, "handshake with %s:%d", c->host, c->port);
        }
        FTC_LOG_DEBUG("store.handshake", "%s:%d: %s; retrying", c->host,
                      c->port, ftc_last_error());
        ftc__deadline pause = ftc__deadline_min(
            dl, ftc__deadline_in_ms(ftc__backoff_next_ms(&backoff)));
        if (ftc__sleep_until(pause, cancel) != 0) {
            return ftc__seterr(FTC_ECANCELED, "connect to %s:%d: cancelled",
                               c->host, c->port);
        }
    }
}

/* Why an idle connection cannot take a new request, or NULL if it can:
 * the server closed it, or bytes arrived that no request asked for. */
static const char *idle_fault(ftc__store_conn *c)
{
    if (ftc__buf_size(&c->in) > 0) {
        return "stray reply bytes";
    }
    for (;;) {
        uint8_t b;
        ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return NULL;
        }
        return n == 0  ? "closed by the server"
               : n > 0 ? "stray reply bytes"
                       : "connection error";
    }
}

int ftc__store_conn_ready(ftc__store_conn *c, ftc__deadline dl,
                          const ftc__event *cancel)
{
    if (c->fd >= 0 && !c->broken) {
        const char *why = idle_fault(c);
        if (why == NULL) {
            return 0;
        }
        FTC_LOG_INFO("store.reconnect", "%s:%d: %s; reconnecting", c->host,
                     c->port, why);
    } else if (c->fd >= 0) {
        FTC_LOG_DEBUG("store.reconnect",
                      "%s:%d: connection state unknown after a failed call; "
                      "reconnecting",
                      c->host, c->port);
    }
    drop(c);
    return open_conn(c, dl, cancel);
}
