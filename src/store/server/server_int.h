/* Internals of the store server shared by its files: the server (one libuv
 * loop on one thread), its connections, and their output queues.
 * server.c: lifecycle, accept, per-iteration work; conn.c: reading,
 * decoding, parking; dispatch.c: one request -> state + reply; out.c:
 * batched, zero-copy replies; mem.c: what connections hold against the
 * total limit. */
#ifndef FTC_STORE_SERVER_INT_H
#define FTC_STORE_SERVER_INT_H

#include <pthread.h>
#include <stdint.h>
#include <uv.h>

#include "base/auth.h"
#include "base/base_int.h"
#include "ftc/store.h"
#include "store/server/kv.h"
#include "store/server/list.h"
#include "store/wire.h"

/* One piece of queued output: bytes of the batch's buffer at off, or a
 * shared value (ref) sent straight from the store's memory. */
typedef struct store_seg {
    size_t off;
    size_t len;
    ftc__kv_value *ref;
} store_seg;

/* Replies queued on a connection: small ones copied together into bytes,
 * large values referenced. */
typedef struct store_batch {
    ftc__buf bytes;
    store_seg *segs;
    size_t nsegs;
    size_t cap_segs;
    uint64_t total; /* bytes in the batch */
} store_batch;

/* Buckets of the table of client addresses with strangers open. */
#define FTC__STORE_HOST_BUCKETS 256
struct store_host;

typedef struct store_conn {
    uv_tcp_t tcp;
    struct ftc_store_server *srv;
    ftc__kv_client kv;
    ftc__list node;       /* in srv->conns */
    ftc__list ready_node; /* in srv->ready: input to process */
    ftc__list dirty_node; /* in srv->dirty: output to flush */
    /* In srv->strangers while it has neither authenticated nor used an
     * open prefix (server_auth.c), since born_ms. */
    ftc__list stranger_node;
    int64_t born_ms;
    /* A stranger also counts against its client address (server_hosts.c):
     * in host->strangers, oldest first. NULL: not counted. */
    struct store_host *host;
    ftc__list host_node;
    int dialect; /* -1 until the first bytes tell */
    ftc__wire_decoder dec;
    ftc__buf in; /* received bytes; head = the next request */
    size_t need; /* bytes of the current request needed before decoding */
    int read_to; /* where the last read went: READ_TO_* in conn.c */
    /* A big SET's value, received straight into its final buffer while
     * the request's head waits in `in`; sink_held is the room reserved
     * for it in the store. */
    ftc__kv_value *sink;
    size_t sink_got;
    uint64_t sink_held;
    int parked; /* a WAIT/BARRIER holds this connection's later replies */
    ftc__wire_decoder look; /* scans ahead for CANCEL_WAIT while parked */
    size_t look_off;
    int reading;
    int closing;
    store_batch pending;  /* queued, not yet handed to the kernel */
    store_batch inflight; /* owned by the write request in progress */
    uint64_t inflight_left;
    int writing;
    uv_write_t wreq;
    /* What this connection holds against max_total_bytes (server_mem.c). */
    uint64_t charged;
    /* STORE_AUTH_* (server_auth.c); a server without a token starts every
     * connection authenticated. nonces: the client's, then the server's,
     * from AUTH_HELLO until AUTH_PROOF. */
    uint8_t auth;
    uint8_t nonces[2 * FTC__AUTH_NONCE];
    char peer[64];
} store_conn;

/* A store server's authentication settings (server_auth.c). */
typedef struct store_auth {
    int has_token;
    uint8_t key[FTC__AUTH_KEY];
    char **open; /* open prefixes, owned */
    size_t *open_len;
    size_t n_open;
} store_auth;

struct ftc_store_server {
    uint32_t magic;
    ftc_store_server_opts opts;
    char bind_host[FTC_HOST_MAX];
    ftc__wire_limits limits;
    store_auth auth;
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_async_t stop_async;
    uv_check_t check;
    /* Active while connections wait in ready from outside on_check: an
     * active idle handle keeps the loop from blocking in poll before
     * on_check has served them (a write completed in the pending phase
     * can release a held-back connection). */
    uv_idle_t kick;
    pthread_t thread;
    int port;
    ftc__kv *kv;
    ftc__list conns;
    ftc__list ready;
    ftc__list dirty;
    ftc__list strangers; /* oldest first */
    uv_timer_t sweep;    /* closes strangers past the handshake timeout */
    /* Client addresses with strangers open (server_hosts.c), and the
     * strangers closed for their address's cap since the last warning. */
    ftc__list host_buckets[FTC__STORE_HOST_BUCKETS];
    uint64_t host_evicted;
    int64_t host_warned_ms;
    size_t conn_limit; /* max_connections, within the open files limit */
    uint8_t *rbuf;     /* shared read buffer for connections with no backlog */
    uv_buf_t *iov;     /* scratch for building writes */
    size_t cap_iov;
    ftc_store_server_stats live; /* loop thread only */
    pthread_mutex_t stats_lock;
    ftc_store_server_stats shared; /* published copy, under stats_lock */
};

/* Size of the shared read buffer, and of the input a parked connection may
 * hold before the server stops reading from it. */
#define FTC__STORE_RBUF 65536
#define FTC__STORE_PARKED_INPUT 65536
/* Unsent replies at which the server stops serving (and reading) a
 * connection until they drain: a client that does not read its replies
 * holds at most this plus one request's reply. */
#define FTC__STORE_OUTPUT_PAUSE (1u << 20)
/* Buffers a connection may hold even when the store is full, so that a
 * full store still answers reads; they are counted all the same. */
#define FTC__STORE_CONN_FREE 65536

/* server.c: makes this loop iteration reach on_check without waiting for
 * I/O. */
void ftc__server_kick(struct ftc_store_server *srv);

/* conn.c */
store_conn *ftc__conn_new(struct ftc_store_server *srv);
/* Starts reading an accepted connection. */
void ftc__conn_start(store_conn *c);
/* Decodes and serves the buffered input until it runs out or parks. */
void ftc__conn_process(store_conn *c);
/* Closes the connection: logs reason (if tag) at level, drops its waits,
 * frees it once libuv has closed the handle. */
void ftc__conn_close(store_conn *c, int level, const char *tag,
                     const char *reason);
/* Ends a parked WAIT/BARRIER/CONTROL_BARRIER with reply (STOP_WAITING:
 * the op's whole answer; or WAIT_CANCELED) and queues the connection to
 * serve its following input. */
void ftc__conn_unpark(store_conn *c, uint8_t reply);

/* mem.c */
/* Brings the connection's charge in the store up to date with its
 * buffers. */
void ftc__conn_account(store_conn *c);
/* Gives back everything the closed connection was charged. */
void ftc__conn_uncharge(store_conn *c);
/* A request is known to need `need` bytes in all: holds that room from
 * now on (c->need), or closes the connection (store.full) and returns 0
 * when it would pass max_total_bytes. */
int ftc__conn_hold_request(store_conn *c, size_t need);
/* n more bytes of replies are about to be queued: 1 if they fit, else
 * closes the connection (store.full) and returns 0. */
int ftc__conn_hold_output(store_conn *c, uint64_t n);
/* Whether unsent replies reached FTC__STORE_OUTPUT_PAUSE. */
int ftc__conn_output_full(const store_conn *c);
/* conn.c: the connection's replies drained; serve and read it again if it
 * had stopped for them. */
void ftc__conn_output_drained(store_conn *c);

/* dispatch.c: serves one complete request. */
void ftc__store_dispatch(store_conn *c, const ftc__wire_req *r);
/* Serves a SET whose value was received in place; takes v's reference. */
void ftc__store_set_value(store_conn *c, ftc__wire_str key, ftc__kv_value *v);
/* The answer of a WAIT, BARRIER or CONTROL_BARRIER that is done:
 * STOP_WAITING, and for CONTROL_BARRIER the arrival number and the value
 * of last_members (whose reference it releases). */
void ftc__store_reply_done(store_conn *c);

/* auth.c */
enum { STORE_AUTH_NONE, STORE_AUTH_CHALLENGED, STORE_AUTH_OK };
/* Takes the token (key only) and copies the open prefixes: FTC_EINVAL for
 * an empty token or prefix, or prefixes without a token; FTC_ENOMEM. */
int ftc__store_auth_init(store_auth *a, const ftc_store_server_opts *o);
void ftc__store_auth_free(store_auth *a);
/* Whether an unauthenticated connection may touch key. */
int ftc__store_auth_key_open(const store_auth *a, ftc__wire_str key);
/* Called for an unauthenticated connection once op is known (before its
 * arguments arrive): 1 if op can never be served to it (no prefix is
 * open and the op is not part of the handshake), after closing it. */
int ftc__store_auth_refuse_op(store_conn *c, ftc__store_op op);
/* Called for an unauthenticated connection while a request is still
 * arriving (buf: its start, need: the bytes it needs so far): closes it
 * as soon as the request is sure to be refused (its op, its key) or its
 * items grow past what a stranger may send. 1 if it did. */
int ftc__store_auth_refuse_early(store_conn *c, const uint8_t *buf,
                                 size_t need);
/* Whether the unauthenticated c may be served r (the handshake's ops,
 * keys under the open prefixes); if not, closes c and returns 0. */
int ftc__store_auth_admit(store_conn *c, const ftc__wire_req *r);
/* A new connection of a server with a token starts as a stranger,
 * counted against its client address peer (NULL: unknown). */
void ftc__store_auth_greet(store_conn *c, const struct sockaddr *peer);
/* c authenticated or used an open prefix: no longer a stranger. */
void ftc__store_auth_known(store_conn *c);
/* Closes the oldest stranger to make room; 1 if there was one. */
int ftc__store_auth_evict_stranger(struct ftc_store_server *srv);
/* Strangers by client address (server_hosts.c). add counts c against
 * peer's address and returns the address's oldest stranger when c put it
 * over max_strangers_per_address (to be closed), else NULL; remove
 * uncounts c (it authenticated, or closes). */
void ftc__store_hosts_init(struct ftc_store_server *srv);
store_conn *ftc__store_hosts_add(store_conn *c, const struct sockaddr *peer);
void ftc__store_hosts_remove(store_conn *c);
/* Starts the timer that closes strangers past the handshake timeout
 * (a server with a token and a finite timeout). */
void ftc__store_auth_start_sweeps(struct ftc_store_server *srv);
/* Closes c for touching key without authenticating. */
void ftc__store_auth_refuse_key(store_conn *c, ftc__wire_str key);
/* Serve AUTH_HELLO, AUTH_PROOF, PING (the probe answer says whether the
 * server wants a token), and GETNUMKEYS / LIST_KEYS for a connection that
 * sees only the open prefixes. */
void ftc__store_auth_hello(store_conn *c, const ftc__wire_req *r);
void ftc__store_auth_proof(store_conn *c, const ftc__wire_req *r);
void ftc__store_auth_ping(store_conn *c, uint32_t nonce);
void ftc__store_auth_num_keys(store_conn *c);
void ftc__store_auth_list_keys(store_conn *c);

/* out.c */
void ftc__out_u8(store_conn *c, uint8_t v);
void ftc__out_u32(store_conn *c, uint32_t v);
void ftc__out_i64(store_conn *c, int64_t v);
void ftc__out_str(store_conn *c, const void *p, size_t n);
/* n bytes as they are (no length): AUTH_HELLO's answer. */
void ftc__out_raw(store_conn *c, const void *p, size_t n);
/* A value as a string reply (v NULL: empty); big values are sent from the
 * store's memory, not copied. */
void ftc__out_value(store_conn *c, const ftc__kv_value *v);
/* What out_value would queue for v: bytes copied (its length prefix, its
 * bytes if small) and bookkeeping, for checking a reply before building
 * it. */
uint64_t ftc__out_value_cost(const ftc__kv_value *v);
/* Checks and makes room for n more bytes of replies at once (see
 * ftc__conn_hold_output); 0 if the connection was closed instead. */
int ftc__out_prepare(store_conn *c, uint64_t n);
/* Hands queued output to the kernel (called once per loop iteration). */
void ftc__out_flush(store_conn *c);
void ftc__out_release(store_batch *b);
void ftc__out_destroy(store_batch *b);

#endif
