/* Internals of the store client shared by its files: the connection (one
 * socket, its dialect and what the probe learnt) and the public handles. */
#ifndef FTC_STORE_CLIENT_INT_H
#define FTC_STORE_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/auth.h"
#include "base/base_int.h"
#include "ftc/store.h"
#include "store/client/client_codec.h"
#include "store/client/endpoint.h"

/* How long the client waits for a server to answer CANCEL_WAIT after a wait
 * timed out before it gives the connection up and reconnects. */
#define FTC__STORE_CANCEL_GRACE_MS 2000

/* One TCP connection to a store server. Not thread-safe: the owning core's
 * lock serialises every use, except what fd_lock guards for cancel. */
typedef struct ftc__store_conn {
    int fd;      /* -1 while disconnected; changed under fd_lock */
    int dialect; /* FTC_STORE_DIALECT_* */
    int server;  /* FTC__STORE_SERVER_* found by the probe */
    int broken;  /* state unknown: replace before the next request */
    /* The client has a token (key: derived from it) and authenticates
     * every connection; locked: the server wants a token this client
     * lacks, so it serves only its open prefixes (the probe said). */
    int has_token;
    int locked;
    uint8_t key[FTC__AUTH_KEY];
    /* After a pipelined WAIT was cancelled (see recv_wait): the held
     * requests' replies follow (held_replies), or they follow and then
     * the cancel's own WAIT_CANCELED (cancel_owed). Read by grace. */
    int held_replies;
    int cancel_owed;
    ftc__deadline grace;
    char host[FTC_HOST_MAX];
    int port;
    int64_t connect_timeout_ms;
    size_t max_value_bytes;
    size_t recv_chunk; /* most bytes one recv asks for (tests shrink it) */
    /* Replies are read with one blocking recv bounded by SO_RCVTIMEO
     * (see bound_recv); the value in force, in us, -1 for none. */
    int64_t rcvtimeo_us;
    /* A blocking recv does not watch the cancel event, so cancel from
     * another thread shuts the socket down (conn_cancel). fd_lock keeps
     * the fd from being closed, and its number reused, meanwhile, and
     * makes "is a call in progress" and "was it cancelled" one state. */
    pthread_mutex_t fd_lock;
    int in_call;          /* under fd_lock: between conn_enter and leave */
    atomic_int cancelled; /* set by conn_cancel, cleared by conn_enter */
    ftc__buf in;          /* received bytes not yet consumed */
    ftc__store_req req;
    /* Counters for tests and diagnostics, readable from any thread. */
    _Atomic uint64_t connects; /* successful TCP connects */
    _Atomic uint64_t writes;   /* requests (or pipelines) sent */
} ftc__store_conn;

/* 0, or FTC_ESYS when the token's key cannot be made. */
int ftc__store_conn_init(ftc__store_conn *c, const char *host, int port,
                         const ftc_store_client_opts *opts);
void ftc__store_conn_close(ftc__store_conn *c);

/* A call starts: a cancel from before it is forgotten (and ev cleared);
 * one from now on stops it. */
void ftc__store_conn_enter(ftc__store_conn *c, ftc__event *ev);
/* The call ends; if it was cancelled the connection is replaced next. */
void ftc__store_conn_leave(ftc__store_conn *c);
/* From any thread: signals ev and stops the call in progress, if any, by
 * shutting its socket down; a blocked read then fails, and the failure
 * is reported as FTC_ECANCELED. */
void ftc__store_conn_cancel(ftc__store_conn *c, ftc__event *ev);

/* Makes the connection usable for a new call: (re)connects with the
 * handshake if it is closed or broken, and replaces it if the server closed
 * it or sent bytes nobody asked for while it was idle. Connecting is
 * bounded by dl and the connect timeout. */
int ftc__store_conn_ready(ftc__store_conn *c, ftc__deadline dl,
                          const ftc__event *cancel);

/* Sends c->req and resets it. Any failure marks the connection broken. */
int ftc__store_conn_send(ftc__store_conn *c, ftc__deadline dl,
                         const ftc__event *cancel);

/* Reply readers. Any failure marks the connection broken, except that
 * recv_wait leaves it to the caller when nothing at all has arrived. */
/* A little-endian unsigned integer of size bytes (1, 4 or 8). */
int ftc__store_conn_recv_uint(ftc__store_conn *c, size_t size, uint64_t *v,
                              ftc__deadline dl);
int ftc__store_conn_recv_i64(ftc__store_conn *c, int64_t *v, ftc__deadline dl);
/* n raw bytes (no length field) copied into out. */
int ftc__store_conn_recv_raw(ftc__store_conn *c, void *out, size_t n,
                             ftc__deadline dl);

/* client_auth.c: the token handshake (docs/protocol.md "Authentication").
 * auth_hello appends AUTH_HELLO with a fresh nonce (kept in cn) to c->req,
 * behind the probe; auth_finish, once the probe said kind, checks the
 * server's proof, sends the client's and reads the server's verdict.
 * FTC_EAUTH when either side fails to prove it knows the token. */
int ftc__store_client_auth_hello(ftc__store_conn *c,
                                 uint8_t cn[FTC__AUTH_NONCE]);
int ftc__store_client_auth_finish(ftc__store_conn *c, int kind,
                                  const uint8_t cn[FTC__AUTH_NONCE],
                                  ftc__deadline dl, const ftc__event *cancel);

/* A u64 length (checked against max_value_bytes) and that many bytes into a
 * new buffer (never NULL, released with ftc__free). */
int ftc__store_conn_recv_value(ftc__store_conn *c, void **p, size_t *n,
                               ftc__deadline dl, const ftc__event *cancel);

/* Reads the answer to a WAIT. When it times out with nothing received, a
 * 2.x connection cancels the wait in-protocol (CANCEL_WAIT, answered
 * within FTC__STORE_CANCEL_GRACE_MS) and stays usable:
 * - not pipelined: FTC_ETIMEDOUT, or 0 if the keys arrived in the race;
 * - pipelined (other requests sent behind the WAIT; ftc servers only):
 *   FTC_ETIMEDOUT with held_replies set, or 0 with cancel_owed set, and
 *   the caller reads the held replies (then, if owed, the cancel's answer
 *   with recv_cancel_owed).
 * Every other failure marks the connection broken. */
int ftc__store_conn_recv_wait(ftc__store_conn *c, int pipelined,
                              ftc__deadline dl, const ftc__event *cancel);
int ftc__store_conn_recv_cancel_owed(ftc__store_conn *c);

#define FTC__STORE_CLIENT_MAGIC 0x53544f43u /* "STOC" */

/* What a client and all its views share. */
typedef struct ftc__store_core {
    pthread_mutex_t lock; /* held for the whole of every call */
    ftc__event cancel;    /* signalled by cancel, cleared by the next call */
    ftc_store_client_opts opts; /* opts.token points at token */
    char token[FTC__STORE_TOKEN_MAX];
    ftc__store_conn conn;
} ftc__store_core;

struct ftc_store_client {
    uint32_t magic;
    ftc__store_core *core;
    int is_view;  /* 1: core belongs to another handle */
    char *prefix; /* NULL, or the joined prefix of a view ("a/b") */
};

/* One public call in progress: it holds the core's lock from begin to end
 * and carries what error messages name (the op and its keys). */
typedef struct ftc__store_call {
    ftc__store_core *core;
    ftc__store_conn *conn;
    const ftc__event *cancel;
    const char *prefix; /* the view's prefix or NULL */
    ftc__deadline dl;
    int64_t timeout_ms; /* resolved; < 0 means never */
    const char *op;
    const char *const *keys;
    size_t nkeys;
} ftc__store_call;

/* call_begin flags: the op exists only in the 2.x dialect, so a V1
 * client fails with FTC_ENOTSUP before any I/O. */
#define FTC__CALL_V2_ONLY 1

/* Checks the handle and keys, resolves the timeout, takes the lock and
 * makes the connection ready. On failure nothing is held. */
int ftc__store_call_begin(ftc__store_call *k, ftc_store_client *client,
                          const char *op, const char *const *keys, size_t nkeys,
                          int64_t timeout_ms, int flags);
/* Releases the lock; a failure gets the op and its keys in its message:
 * "get timeout after 500 ms, keys: a" or "store add 'a': <detail>". */
int ftc__store_call_end(ftc__store_call *k, int rc);

/* Sends WAIT for the call's keys and reads its answer (a timeout is
 * cancelled in-protocol where the dialect can). */
int ftc__store_call_wait(ftc__store_call *k);

/* The fetch that follows a WAIT: enc appends its request(s) to
 * k->conn->req; read takes their replies by dl. read is called with
 * cancelled = 1 when the WAIT timed out but an ftc server answered the
 * pipelined fetch anyway: it must read past the replies and return
 * FTC_ETIMEDOUT, or 0 if what it read must not be lost (a popped item). */
typedef int (*ftc__store_fetch_enc)(ftc__store_call *k, void *ctx);
typedef int (*ftc__store_fetch_read)(ftc__store_call *k, void *ctx,
                                     ftc__deadline dl, int cancelled);
/* WAIT for the call's keys, then the fetch: one write against an ftc
 * server, WAIT first (two round trips) against PyTorch's. */
int ftc__store_call_wait_fetch(ftc__store_call *k, ftc__store_fetch_enc enc,
                               ftc__store_fetch_read read, void *ctx);
/* What a fetch that follows a WAIT may still take after the call's
 * deadline passed (the keys came just in time): the cancel's grace. */
ftc__deadline ftc__store_call_fetch_deadline(const ftc__store_call *k);
/* WAIT for k->keys[0], then its value (see ftc_store_client_get); on
 * failure *value is NULL. */
int ftc__store_call_get(ftc__store_call *k, void **value, size_t *len);
/* Sends the request(s) encoded so far, unless encoding failed (rc, the
 * encoders' result, is returned then). */
int ftc__store_call_send(ftc__store_call *k, int rc);
/* Sends a write (a query without a reply) like call_send; to a server
 * that wants a token this client lacks, confirms with a probe behind it
 * that the server took it (a refusal closes the connection). */
int ftc__store_call_send_write(ftc__store_call *k, int rc);
/* Sends like call_send, then reads the i64 answer. */
int ftc__store_call_i64(ftc__store_call *k, int rc, int64_t *v);

#endif
