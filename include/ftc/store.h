/* ftc/store.h: a key-value store that speaks PyTorch's TCPStore protocol.
 *
 * The server serves PyTorch 1.13 clients and PyTorch 2.x clients on one port
 * (told apart per connection) and ftc's own client. The client works against
 * the ftc server and against PyTorch's own TCPStore server.
 *
 * Keys are NUL-terminated strings. Like PyTorch's TCPStore client, the ftc
 * client sends every key as "/" + key, so a PyTorch process and an ftc
 * process that use the same key name meet on the same server key. */
#ifndef FTC_STORE_H
#define FTC_STORE_H

#include "ftc/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- server */

typedef struct ftc_store_server ftc_store_server;

/* Limits protect the server from hostile or broken clients: every length a
 * client sends is checked against them before anything is allocated, and a
 * client that exceeds one is disconnected with one warning naming it
 * (others are unaffected). ftc_store_server_opts_init fills the defaults
 * given here ("Options structs" in ftc/base.h); a max_* field also takes
 * FTC_SIZE_DEFAULT, and 0 in one is FTC_EINVAL. docs/operations.md
 * explains how to size them. */
typedef struct ftc_store_server_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* NULL: every interface (IPv6 dual-stack) when the server has a token,
     * else loopback (127.0.0.1) only; "" or "*": every interface. */
    const char *bind_host;
    int port;    /* 0: an ephemeral port (see _port()) */
    int backlog; /* listen backlog; default: the kernel maximum; 0: 0 */
    size_t max_key_bytes;        /* default 64 KiB */
    size_t max_value_bytes;      /* default 256 MiB */
    size_t max_keys_per_request; /* CHECK/WAIT/MULTI_*; default 128 Ki */
    /* All keys, values and queued items plus the server's bookkeeping for
     * them and for pending waits and watches (about 100 B each), plus
     * every connection's requests (from the header that announces their
     * size) and queued replies; a request or reply that would pass it is
     * refused before its bytes arrive or it is built. Default 4 GiB. */
    size_t max_total_bytes;
    size_t max_connections;  /* default 100000 */
    size_t max_output_bytes; /* unsent replies per connection; 1 GiB */
    /* One whole request (a MULTI_SET counts all its pairs); default the
     * larger of 512 MiB and 2 * max_value_bytes + max_key_bytes + 64 (a
     * COMPARE_SET carries two values), which _init asks for by setting
     * FTC_SIZE_DEFAULT; at least max_value_bytes + max_key_bytes + 64
     * when set, so a largest SET fits. */
    size_t max_request_bytes;
    /* A shared secret (copied; NULL: none, "" is FTC_EINVAL). With one,
     * a connection must authenticate (docs/protocol.md "Authentication":
     * a challenge-response keyed by the token, both ways) before it may
     * touch any key outside open_prefixes; a connection that tries is
     * closed with a warning (store.auth). */
    const char *token;
    /* Key prefixes that clients which cannot authenticate (PyTorch's, any
     * 1.13 client) may read and write when the server has a token, for
     * example "torch/": a key is inside when, less one leading '/', it
     * starts with a prefix. Such clients never see a key outside them
     * (num_keys and list_keys count and list only those inside). Copied;
     * only with a token; no prefix may be empty. */
    const char *const *open_prefixes;
    size_t n_open_prefixes;
    /* With a token: how long a connection may stay without
     * authenticating or using an open prefix before it is closed
     * (slowloris, idle connections filling the table); such connections
     * are also the first closed when the table is full (oldest first), so
     * that a client with the token is still served. Default 10000 (ms);
     * FTC_TIMEOUT_INFINITE: never. */
    int64_t handshake_timeout_ms;
    /* With a token: at most this many of those connections from one
     * client address at a time; the next one from it closes its oldest
     * (a flood from one address cannot fill the table, and a client that
     * authenticates at once still gets in). Default 256. */
    size_t max_strangers_per_address;
} ftc_store_server_opts;

FTC_API void ftc_store_server_opts_init(ftc_store_server_opts *opts);

/* Starts a server on its own background thread (one libuv loop serves every
 * connection). opts may be NULL (all defaults) and is copied, bind_host
 * included. Returns once the server listens, so clients may connect at
 * once. Errors: FTC_EINVAL (a bad option), FTC_ESYS (e.g. the port is in
 * use), FTC_ENOMEM. On failure *out is NULL. */
FTC_API int ftc_store_server_create(const ftc_store_server_opts *opts,
                                    ftc_store_server **out);

/* The port the server listens on (the real one when opts->port was 0). */
FTC_API int ftc_store_server_port(const ftc_store_server *server);

typedef struct ftc_store_server_stats {
    uint64_t connections;     /* open client connections now */
    uint64_t keys;            /* keys in the map (queues not counted) */
    uint64_t bytes;           /* bytes held by keys, values and queues */
    uint64_t requests;        /* requests served since start */
    uint64_t protocol_errors; /* connections closed for bad input */
    uint64_t slow_drops;      /* connections closed for unsent output */
    /* connections refused or closed over a limit: the table's, or (never
     * authenticated) their address's max_strangers_per_address */
    uint64_t refused;
} ftc_store_server_stats;

/* A consistent snapshot of the counters, taken at the end of the server's
 * last loop iteration; safe from any thread. FTC_EMISUSE if server is
 * NULL. */
FTC_API int ftc_store_server_stats_get(ftc_store_server *server,
                                       ftc_store_server_stats *out);

/* Closes every connection (pending waits end with it), stops the thread
 * and frees the server. Blocks until the loop has closed every handle.
 * NULL is a no-op. Not safe while another thread calls into server. */
FTC_API void ftc_store_server_destroy(ftc_store_server *server);

/* ---------------------------------------------------------------- client */

typedef struct ftc_store_client ftc_store_client;

typedef enum ftc_store_dialect {
    /* PyTorch >= 2.1 numbering, VALIDATE handshake. Also what the ftc
     * server speaks natively. */
    FTC_STORE_DIALECT_V2 = 0,
    /* PyTorch 1.13 numbering, no handshake (to reach a 1.13 server). */
    FTC_STORE_DIALECT_V1 = 1,
} ftc_store_dialect;

/* ftc_store_client_opts_init fills the defaults ("Options structs" in
 * ftc/base.h). The timeouts follow the timeout rule of ftc/base.h
 * (FTC_TIMEOUT_DEFAULT: the default given here; 0: do not wait);
 * max_value_bytes also takes FTC_SIZE_DEFAULT. */
typedef struct ftc_store_client_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* Bounds connect and every transparent reconnect; default 30000. */
    int64_t connect_timeout_ms;
    int64_t timeout_ms; /* used for FTC_TIMEOUT_DEFAULT; 300000 */
    int dialect;        /* ftc_store_dialect; default V2 */
    /* A longer reply value fails with FTC_EMSGSIZE before anything is
     * allocated (and the connection is replaced); default 1 GiB; 0 is
     * FTC_EINVAL. */
    size_t max_value_bytes;
    /* A shared secret (copied; NULL: none, "" is FTC_EINVAL; at most 1023
     * bytes). With one, every connection authenticates with the server,
     * and the server with it, before any request: a server that does not
     * prove it knows the token (another token, none) is refused with
     * FTC_EAUTH, PyTorch's server (it cannot) with FTC_ENOTSUP. The library
     * never reads FTC_TOKEN here: a process may talk to PyTorch's store and
     * hold a token for ftc's. */
    const char *token;
} ftc_store_client_opts;

FTC_API void ftc_store_client_opts_init(ftc_store_client_opts *opts);

/* Connects to "host:port" (or "[v6]:port"), retrying refused or dropped
 * connections with backoff until the connect timeout; in the V2 dialect
 * it also learns whether the server is ftc's (then get is one round trip)
 * or PyTorch's. opts may be NULL. On failure *out is NULL.
 *
 * Thread-safety: one client may be used by many threads; calls are
 * serialised on its connection. Every call taking timeout_ms accepts what
 * the timeout rule of ftc/base.h allows (FTC_EINVAL otherwise, before
 * anything is sent), and that timeout applies to that call only. A call that
 * times out or is cancelled leaves the client usable: a late reply is never
 * read as the answer to a later call (the connection is cancelled in-protocol
 * or replaced, and the next call reconnects). Keys and values passed in are
 * borrowed until the call returns.
 *
 * Errors of the calls below: FTC_EMISUSE (not a client), FTC_EINVAL (a
 * NULL argument; a timeout_ms outside the rule), FTC_ETIMEDOUT (the message
 * names the op and keys: "wait timeout after 500 ms, keys: a, b"),
 * FTC_ECANCELED, FTC_ECLOSED or FTC_EPEER (the server went away), FTC_EPROTO (a
 * malformed reply), FTC_EMSGSIZE (see max_value_bytes), FTC_ENOTSUP (append,
 * queues and ping in the V1 dialect), FTC_ENOMEM. set, append, multi_set and
 * queue_push get no reply (as in PyTorch): success means sent. */
FTC_API int ftc_store_client_connect(const char *addr,
                                     const ftc_store_client_opts *opts,
                                     ftc_store_client **out);

/* A view whose keys are "<prefix>/<key>" (PyTorch PrefixStore). Views nest
 * and share the underlying connection, which must outlive them. Closing a
 * view does not close the connection. */
FTC_API int ftc_store_client_prefix(ftc_store_client *base, const char *prefix,
                                    ftc_store_client **out);

/* Closes a connection (or releases a view). NULL is a no-op. Not safe while
 * another thread uses the client. */
FTC_API void ftc_store_client_close(ftc_store_client *client);

/* Makes the call in progress on this client's connection (if any) return
 * FTC_ECANCELED at once; a cancel with no call in progress is dropped, so
 * repeat it until the call returns if it may not have started yet. Safe
 * from any thread (not during close). */
FTC_API void ftc_store_client_cancel(ftc_store_client *client);

/* Stores value under key, replacing any previous value, and wakes waiters. */
FTC_API int ftc_store_client_set(ftc_store_client *client, const char *key,
                                 const void *value, size_t len,
                                 int64_t timeout_ms);

/* Waits until key exists, then returns its value in a buffer the caller
 * releases with ftc_free (*value is non-NULL even for an empty value).
 * FTC_ETIMEDOUT if the key did not appear in time. */
FTC_API int ftc_store_client_get(ftc_store_client *client, const char *key,
                                 void **value /* OUT */, size_t *len /* OUT */,
                                 int64_t timeout_ms);

/* Adds delta to the decimal integer stored at key (missing counts as 0)
 * and returns the new value (result may be NULL). */
FTC_API int ftc_store_client_add(ftc_store_client *client, const char *key,
                                 int64_t delta, int64_t *result /* OUT */,
                                 int64_t timeout_ms);

/* Sets key to desired if its current value equals expected (a missing key
 * equals an empty expected). Returns the value after the operation in
 * *current (ftc_free); current may be NULL. */
FTC_API int
ftc_store_client_compare_set(ftc_store_client *client, const char *key,
                             const void *expected, size_t expected_len,
                             const void *desired, size_t desired_len,
                             void **current /* OUT */,
                             size_t *current_len /* OUT */, int64_t timeout_ms);

/* *ready = 1 if every key exists now, without waiting. */
FTC_API int ftc_store_client_check(ftc_store_client *client,
                                   const char *const *keys, size_t nkeys,
                                   int *ready /* OUT */, int64_t timeout_ms);

/* Waits until every key exists. FTC_ETIMEDOUT names the keys. */
FTC_API int ftc_store_client_wait(ftc_store_client *client,
                                  const char *const *keys, size_t nkeys,
                                  int64_t timeout_ms);

/* Deletes key; *deleted (may be NULL) is 1 if it existed. */
FTC_API int ftc_store_client_delete(ftc_store_client *client, const char *key,
                                    int *deleted /* OUT */, int64_t timeout_ms);

/* The number of keys on the server (all prefixes). */
FTC_API int ftc_store_client_num_keys(ftc_store_client *client,
                                      int64_t *count /* OUT */,
                                      int64_t timeout_ms);

/* Appends value to key's value (creating it). */
FTC_API int ftc_store_client_append(ftc_store_client *client, const char *key,
                                    const void *value, size_t len,
                                    int64_t timeout_ms);

/* A value returned by multi_get, released with ftc_store_values_free. */
typedef struct ftc_store_value {
    void *data;
    size_t len;
} ftc_store_value;

/* Waits until every key exists, then fetches all values in one request
 * (1.13 dialect: one GET per key, sent together). values[] has nkeys
 * entries, filled in key order, each released by ftc_store_values_free;
 * on failure every entry is {NULL, 0}. */
FTC_API int ftc_store_client_multi_get(ftc_store_client *client,
                                       const char *const *keys, size_t nkeys,
                                       ftc_store_value *values /* OUT */,
                                       int64_t timeout_ms);
FTC_API void ftc_store_values_free(ftc_store_value *values, size_t n);

/* Sets every key to its value in one request (1.13: one SET per key,
 * sent together). */
FTC_API int ftc_store_client_multi_set(ftc_store_client *client,
                                       const char *const *keys,
                                       const ftc_store_value *values,
                                       size_t nkeys, int64_t timeout_ms);

/* What ftc_store_client_barrier learnt: this rank's place in the arrival
 * order (1 = first) and the value of "<key>/last_members" (released with
 * ftc_free; never NULL after success). */
typedef struct ftc_store_barrier_result {
    int64_t arrived;
    void *last_members;
    size_t last_members_len;
} ftc_store_barrier_result;

/* The barrier of PyTorch's StoreCollectives (c10d) on key, entered as
 * rank of world_size (0 <= rank < world_size): sets "<key>/<rank>" to
 * "joined" and adds 1 to "<key>/num_members"; the rank whose add reaches
 * world_size compare_sets "<key>/last_members" from missing to
 * "<val_ignored>"; every rank returns once "<key>/last_members" exists.
 * PyTorch ranks running _StoreCollectives.barrier(key) on the same server
 * take part unchanged. Against ftc's server it costs one request and one
 * reply (the server does it all, docs/protocol.md CONTROL_BARRIER);
 * against PyTorch's, SET + ADD in one write, then the compare_set or a
 * get of last_members (two round trips; three on 2.x for a waiting rank).
 *
 * out may be NULL. last_members normally holds "<val_ignored>"; whatever
 * else a rank wrote there comes back as it is (ftc's control layer writes
 * why it gave up). A rank that arrives after last_members was written
 * returns at once. Errors: FTC_EINVAL (rank, world_size, a NULL key),
 * FTC_ETIMEDOUT (last_members did not appear in time; this rank's arrival
 * stays counted, as in c10d), FTC_ESTALE (more than world_size arrivals:
 * a rank entered twice, or the ranks disagree on world_size), and the
 * errors of every call. On failure *out is zeroed. */
FTC_API int ftc_store_client_barrier(ftc_store_client *client, const char *key,
                                     int rank, int world_size,
                                     ftc_store_barrier_result *out /* OUT */,
                                     int64_t timeout_ms);

/* Queues (PyTorch >= 2.8 libuv servers and ftc; FTC_ENOTSUP in the V1
 * dialect). push appends an item; pop takes the oldest, waiting for one
 * until the timeout if block, else FTC_ENOENT when empty; its buffer is
 * released with ftc_free. */
FTC_API int ftc_store_client_queue_push(ftc_store_client *client,
                                        const char *key, const void *value,
                                        size_t len, int64_t timeout_ms);
FTC_API int ftc_store_client_queue_pop(ftc_store_client *client,
                                       const char *key, int block,
                                       void **value /* OUT */,
                                       size_t *len /* OUT */,
                                       int64_t timeout_ms);
FTC_API int ftc_store_client_queue_len(ftc_store_client *client,
                                       const char *key, int64_t *len /* OUT */,
                                       int64_t timeout_ms);

/* One round trip to the server (V2 dialect only). */
FTC_API int ftc_store_client_ping(ftc_store_client *client, int64_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
