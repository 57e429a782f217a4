/* The healing transport: a replica behind the quorum's max_step pulls the
 * registered state of an up-to-date replica over HTTP (docs/protocol.md,
 * "Healing transfer"). Three parts:
 *   - the state: the registered buffers, and snapshots of them (copies,
 *     or the buffers lent, with per-chunk XXH3 checksums, reference
 *     counted), heal_state.c;
 *   - the server: one per rank, serves its published or lent snapshot,
 *     heal_server.c (libmicrohttpd);
 *   - the client: fetches metadata (libcurl, heal_client.c) and chunks
 *     (plain HTTP/1.1 sockets received straight into place,
 *     heal_chunks.c) striped across several sources, verifies every
 *     chunk, refetches a bad or lost one from another source; then
 *     releases the sources' lent state, heal_release.c. */
#ifndef FTC_FT_HEAL_H
#define FTC_FT_HEAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base_int.h"
#include "ft/heal/heal_format.h"
#include "ftc/ft.h"

/* ----------------------------------------------------------------- state */

/* The buffers registered for healing, in registration order. Each is
 * either memory borrowed from the registrant (data[i]) or reached through
 * the registrant's callbacks (cb[i].save non-NULL, data[i] NULL). */
typedef struct ftc__heal_state {
    ftc__heal_buf *bufs;
    void **data;
    ftc_manager_state_cb *cb;
    size_t n, cap;
    uint64_t total;    /* bytes */
    uint64_t cb_bytes; /* of them, behind callbacks */
} ftc__heal_state;

void ftc__heal_state_init(ftc__heal_state *s);
void ftc__heal_state_fini(ftc__heal_state *s);
/* Appends b (copied) with its memory. FTC_EEXIST if the name is taken,
 * FTC_EINVAL if data is NULL with bytes to hold, FTC_EMSGSIZE if the total
 * overflows, FTC_ENOMEM; s is unchanged on failure. */
int ftc__heal_state_add(ftc__heal_state *s, const ftc__heal_buf *b, void *data);
/* The same for a buffer behind callbacks (copied; save and load must be
 * set). */
int ftc__heal_state_add_cb(ftc__heal_state *s, const ftc__heal_buf *b,
                           const ftc_manager_state_cb *cb);
/* Whether buffer i is behind callbacks. */
bool ftc__heal_state_is_cb(const ftc__heal_state *s, size_t i);

/* A byte range of a snapshot: state bytes [off, off + len) are at p. */
typedef struct ftc__heal_seg {
    const uint8_t *p;
    uint64_t off, len;
} ftc__heal_seg;

/* The state at one step as healing serves it, with its encoded metadata:
 * a private copy, or the registered buffers themselves, lent (readable
 * only while their owner does not write them), with the bytes of the
 * buffers behind callbacks saved into private memory. Immutable once
 * taken; shared by the server's readers through references. */
typedef struct ftc__heal_snapshot {
    atomic_int refs;
    ftc__heal_meta meta;
    ftc__heal_seg *segs; /* n_segs, by offset, covering the state */
    size_t n_segs;
    uint8_t *copy;  /* the private copy (NULL when lent), segs[0] */
    uint8_t *saved; /* lent: what the save callbacks wrote */
    bool borrows;   /* some segment is a registrant's memory */
    uint8_t *meta_bytes;
    size_t meta_len;
} ftc__heal_snapshot;

/* States of at least this many bytes are copied and checksummed on
 * several threads (at most FTC__HEAL_MAX_FILL_THREADS). */
#define FTC__HEAL_PARALLEL_BYTES ((uint64_t)16 << 20)
#define FTC__HEAL_MAX_FILL_THREADS 8

/* Copies every buffer of s and checksums each chunk of chunk_bytes (>= 1),
 * on up to `threads` threads; the buffers behind callbacks are saved
 * first, on the calling thread, in registration order, straight into the
 * copy. The caller guarantees nobody writes the buffers meanwhile. *out
 * has one reference. FTC_ENOMEM, FTC_EINVAL; FTC_ECANCELED when a save
 * callback returned non-zero (the message names the buffer). */
int ftc__heal_snapshot_take(const ftc__heal_state *s, int64_t step,
                            int64_t batches_committed, uint64_t chunk_bytes,
                            unsigned threads, ftc__heal_snapshot **out);
/* The same without the copy of borrowed memory: the snapshot reads the
 * borrowed buffers of s (checksums computed now), valid only as long as
 * nobody writes them and they stay registered (ftc__heal_server_lend);
 * the buffers behind callbacks are saved into the snapshot's own memory
 * (so a state of callbacks only borrows nothing: snap->borrows false). */
int ftc__heal_snapshot_lend(const ftc__heal_state *s, int64_t step,
                            int64_t batches_committed, uint64_t chunk_bytes,
                            unsigned threads, ftc__heal_snapshot **out);
/* A private copy of snap (same step, layout and bytes; checksums computed
 * again over the copy), on up to `threads` threads: the state for healers
 * still at work once a lending must end. No callback runs. */
int ftc__heal_snapshot_copy(const ftc__heal_snapshot *snap, unsigned threads,
                            ftc__heal_snapshot **out);
/* The first piece of state bytes [off, off + len) (len >= 1, inside the
 * state): where it lies in memory and how long it is (<= len). */
ftc__heal_seg ftc__heal_snapshot_piece(const ftc__heal_snapshot *snap,
                                       uint64_t off, uint64_t len);
ftc__heal_snapshot *ftc__heal_snapshot_ref(ftc__heal_snapshot *snap);
/* Drops a reference; the last frees. NULL is a no-op. */
void ftc__heal_snapshot_unref(ftc__heal_snapshot *snap);

/* ---------------------------------------------------------------- server */

typedef struct ftc__heal_server ftc__heal_server;

typedef struct ftc__heal_server_opts {
    /* The address to bind and advertise: an explicit IP or name that the
     * other replicas reach (never guessed from the hostname: torchft
     * #329). NULL or "": 127.0.0.1. */
    const char *host;
    int port;         /* 0: ephemeral */
    unsigned threads; /* serving threads; 0: 2 */
    /* Open connections at most; a quarter of them is kept for the
     * healers vouched for (ftc__heal_server_vouch). 0: 256. */
    unsigned max_connections;
    /* Connections from one address not vouched for; 0: 16. */
    unsigned max_connections_per_address;
    int64_t idle_timeout_ms; /* a stalled reader is cut; 0: 30000 */
    const char *token;       /* NULL: none; else Bearer required */
    /* PEM files of a TLS certificate and its key (both or neither): the
     * server then speaks https and its address says so. */
    const char *tls_cert, *tls_key;
} ftc__heal_server_opts;

/* A server's address: "host:port" ("[v6]:port"), or with TLS
 * "https://host:port". */
#define FTC__HEAL_ADDR_MAX (FTC_HOST_MAX + 24)
/* An address's "host:port" (past any "https://" or "http://"); *tls says
 * whether it speaks https. */
const char *ftc__heal_source_hostport(const char *source, bool *tls);

/* Starts serving on its own threads. FTC_EINVAL, FTC_ESYS, FTC_ENOMEM. */
int ftc__heal_server_start(ftc__heal_server **out,
                           const ftc__heal_server_opts *opts);
/* The address the other replicas reach it at (FTC__HEAL_ADDR_MAX). */
const char *ftc__heal_server_address(const ftc__heal_server *s);
/* Serves snap (one reference taken) from now on, replacing the previous
 * one; readers of the previous keep it alive until they finish. NULL
 * stops serving. Never blocks on readers. Thread-safe. */
void ftc__heal_server_publish(ftc__heal_server *s, ftc__heal_snapshot *snap);
/* The healers of this round, by their healing addresses (their hosts
 * are what counts): their connections are admitted ahead of anyone
 * else's, into the slots kept for them. Replaces the previous set.
 * Thread-safe. */
void ftc__heal_server_vouch(ftc__heal_server *s, const char *const *addrs,
                            size_t n);
/* Stops serving (as publish(NULL)) and answers requests for the state of
 * step with 410 Gone from now on, until the next publish or lend: this
 * rank cannot serve it (a save callback failed), so a healer turns to
 * another source, or fails at once, instead of waiting. Thread-safe. */
void ftc__heal_server_refuse(ftc__heal_server *s, int64_t step);
/* Answers nothing more, closes every connection, frees. NULL is a no-op. */
void ftc__heal_server_stop(ftc__heal_server *s);

/* Bytes of a healer's replica id, NUL included. */
#define FTC__HEAL_ID_MAX 256

/* Serves lent (from ftc__heal_snapshot_lend; one reference taken) from now
 * on, as publish does, and expects a release from each of the n healers
 * (replica ids, copied; longer ones are cut to FTC__HEAL_ID_MAX - 1):
 * POST /v1/heal/<step>/release?replica=<id>, or ftc__heal_server_release.
 * The owner writes none of the lent buffers until ftc__heal_server_reclaim
 * returns. FTC_ENOMEM (nothing changed). */
int ftc__heal_server_lend(ftc__heal_server *s, ftc__heal_snapshot *lent,
                          const char *const *healers, size_t n);
/* Records that replica_id no longer needs the lent state (it healed, gave
 * up, or was lost). Ids not expected are ignored. Any thread. */
void ftc__heal_server_release(ftc__heal_server *s, const char *replica_id);
/* Waits until every expected healer released the lent state, at most
 * until dl: true if all did (or nothing is lent). False at once after
 * ftc__heal_server_close. */
bool ftc__heal_server_lend_wait(ftc__heal_server *s, ftc__deadline dl);
/* Ends the lending: serves next instead (a copy for the healers still at
 * work, or NULL; a reference taken), waits until dl for the answers still
 * sending from the lent buffers, and cuts those left (the daemon restarts
 * on its listening socket, closing every connection). When it returns the
 * server no longer reads the buffers, except after ftc__heal_server_close,
 * when it does not wait and ftc__heal_server_stop cuts the rest. No-op
 * when nothing is lent. */
void ftc__heal_server_reclaim(ftc__heal_server *s, ftc__heal_snapshot *next,
                              ftc__deadline dl);
/* The owner is shutting down: lending waits return at once. Any thread. */
void ftc__heal_server_close(ftc__heal_server *s);

typedef struct ftc__heal_server_stats {
    uint64_t meta_served, chunks_served, bytes_served, refused;
    uint64_t releases; /* healers that released a lent state */
    uint64_t cuts;     /* restarts that cut answers from lent buffers */
    /* Connections refused by admission, and those of addresses not
     * vouched for open now. */
    uint64_t connections_refused, stranger_connections;
} ftc__heal_server_stats;
void ftc__heal_server_stats_get(ftc__heal_server *s,
                                ftc__heal_server_stats *out);

#ifdef FTC_TESTING
/* Fault injection for the tests, applied to the next request of chunk
 * `chunk` (any step): CORRUPT serves it with one byte flipped; CUT sends
 * half of it, then closes the connection (a source dying mid-transfer);
 * CUT_ALL does CUT to every chunk request from now on. */
typedef enum ftc__heal_fault {
    FTC__HEAL_FAULT_NONE = 0,
    FTC__HEAL_FAULT_CORRUPT = 1,
    FTC__HEAL_FAULT_CUT = 2,
    FTC__HEAL_FAULT_CUT_ALL = 3,
} ftc__heal_fault;
void ftc__heal_server_inject(ftc__heal_server *s, ftc__heal_fault fault,
                             uint32_t chunk);
#endif

/* ---------------------------------------------------------------- client */

typedef struct ftc__heal_client ftc__heal_client;

/* What an adopting fetch accepts at most besides its byte bound: each
 * bounds an allocation made from a source's metadata. */
#define FTC__HEAL_ADOPT_MAX_BUFFERS ((uint32_t)1 << 20)
#define FTC__HEAL_ADOPT_MAX_CHUNKS ((uint32_t)1 << 24)

/* A fetch's progress, for other threads to read while it runs: the
 * state's size once the metadata is in, and the chunk bytes received and
 * kept so far. The fetch only adds; its owner resets it. */
typedef struct ftc__heal_progress {
    _Atomic uint64_t total_bytes, bytes;
} ftc__heal_progress;

typedef struct ftc__heal_fetch {
    /* Sources ("host:port"), each serving the same state at step. The
     * first is asked for the metadata; chunk i starts at source i % n. */
    const char *const *sources;
    size_t n_sources;
    int64_t step;
    /* Where each buffer of the local layout goes. */
    const ftc__heal_state *layout;
    void *const *dest; /* layout->n pointers */
    /* Set: the local layout is not asked for (layout and dest unused):
     * the reference metadata's layout is taken as it is, at most
     * max_adopt_bytes of state, and adopt(adopt_user, meta, &layout,
     * &dest) says where each of its buffers goes (valid until the fetch
     * returns; a non-zero return fails the fetch with it). The other
     * sources' metadata is checked against that layout. */
    int (*adopt)(void *user, const ftc__heal_meta *meta,
                 const ftc__heal_state **layout, void *const **dest);
    void *adopt_user;
    uint64_t max_adopt_bytes;
    unsigned streams;             /* transfers in flight; 0: 4 */
    unsigned threads;             /* receiving threads (<= streams); 0: 2 */
    size_t max_meta_bytes;        /* 0: 64 MiB */
    const char *token;            /* NULL: none */
    ftc__heal_progress *progress; /* NULL: not kept */
} ftc__heal_fetch;

typedef struct ftc__heal_fetch_result {
    int64_t step, batches_committed; /* from the metadata */
    uint64_t bytes;                  /* chunk bytes received and kept */
    uint32_t chunks;
    uint32_t refetched;  /* chunks fetched again after a failure */
    uint32_t bad_chunks; /* of those: checksum or length mismatches */
    uint32_t sources;    /* sources that had the step (chunks came from
                            those whose copy of a chunk matched) */
} ftc__heal_fetch_result;

int ftc__heal_client_create(ftc__heal_client **out);
void ftc__heal_client_destroy(ftc__heal_client *c);
/* Makes the fetch in progress (and every later one, until cleared) fail
 * with FTC_ECANCELED at once. Any thread. */
void ftc__heal_client_abort(ftc__heal_client *c);
void ftc__heal_client_clear_abort(ftc__heal_client *c);

/* Fetches the state into f->dest: the reference metadata from the first
 * source that has step (retrying "not yet" answers until dl), checked
 * against f->layout, and the other sources' metadata (one request each);
 * then every chunk, striped over the sources whose checksum for it equals
 * the reference's (replicas may differ in part of their state), verified
 * as it arrives, and on any failure (checksum, length, a source that
 * closed or died) fetched again from the next such live source. Returns
 * when every chunk is in place, or fails: FTC_ETIMEDOUT, FTC_ECANCELED,
 * FTC_EPROTO (bad metadata, layout mismatch, a chunk bad at every source),
 * FTC_EPEER (every source failed), FTC_EMSGSIZE, FTC_EAUTH. On failure
 * the destination holds unspecified bytes. One fetch per client at a
 * time. */
int ftc__heal_client_fetch(ftc__heal_client *c, const ftc__heal_fetch *f,
                           ftc__deadline dl, ftc__heal_fetch_result *out);
/* The "Authorization: Bearer" header list for token (*out NULL when token
 * is NULL), freed with curl_slist_free_all. FTC_EINVAL, FTC_ENOMEM. */
struct curl_slist;
int ftc__heal_auth_header(const char *token, struct curl_slist **out);
/* TLS of c's requests: https sources must chain to ca_file (NULL: the
 * system's CAs); insecure lets the token go in clear text (http://) to a
 * source on another host, which a fetch or release otherwise refuses
 * (FTC_EINVAL). FTC_ENOMEM. */
int ftc__heal_client_tls(ftc__heal_client *c, const char *ca_file,
                         bool insecure);
/* 0 when a request with the token may go to source under c's rule, else
 * FTC_EINVAL saying why. */
int ftc__heal_token_may_go(const ftc__heal_client *c, const char *source);
/* Whether c was aborted (ftc__heal_client_abort, not cleared since). */
bool ftc__heal_client_aborted(ftc__heal_client *c);

/* Tells each of the n servers ("host:port") that replica_id no longer
 * needs the state of step they lend (POST .../release), all at once, until
 * dl or an abort of c. Best effort: returns how many answered 200; the
 * others end their lending by its bound or by the lighthouse's news. */
size_t ftc__heal_client_release(ftc__heal_client *c, const char *const *servers,
                                size_t n, int64_t step, const char *replica_id,
                                const char *token, ftc__deadline dl);

#endif
