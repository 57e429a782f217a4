/* ftc/pg.h: process groups, the data plane. A group of `size` processes
 * (ranks) runs collectives over its own TCP connections: allreduce,
 * broadcast, reduce, allgather(v), reduce_scatter, alltoall(v), gather,
 * scatter, barrier, and tagged send/recv.
 *
 * Calls are asynchronous: each starts an operation and returns an
 * ftc_work to wait on, test, or release. Collectives on one group complete
 * in call order, and every rank must call the same collectives in the same
 * order with matching arguments (as with torch.distributed). Several
 * groups run concurrently and independently.
 *
 * Failure: a peer that dies, closes its connections, breaks the protocol
 * or stops answering makes the pending and every later operation of the
 * group fail on every rank, with a message naming the peer (rank and
 * address): at once when a connection is reset or closed, and by the
 * operation's timeout when a peer hangs. Once failed, a group stays failed
 * ("unusable until rebuilt"): destroy it and create a new one on a new
 * prefix. ftc_pg_abort() does the same on purpose, from any thread.
 * ftc_pg_failed_peers() (and ftc_pg_create_failed_peers() for a failed
 * create) says which peers a rank holds responsible.
 *
 * Thread-safety: a group may be used from several threads at once (calls
 * are serialised internally, and collectives still run in call order);
 * destroy must not race with any other call on the same group. Works may
 * be waited on from any thread. */
#ifndef FTC_PG_H
#define FTC_PG_H

#include "ftc/base.h"
#include "ftc/device.h"
#include "ftc/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- data types */

typedef enum ftc_dtype {
    FTC_DTYPE_F32 = 0,
    FTC_DTYPE_F64 = 1,
    FTC_DTYPE_F16 = 2,  /* IEEE binary16, reduced in f32 */
    FTC_DTYPE_BF16 = 3, /* bfloat16, reduced in f32 */
    FTC_DTYPE_I8 = 4,
    FTC_DTYPE_U8 = 5,
    FTC_DTYPE_I32 = 6,
    FTC_DTYPE_I64 = 7,
    FTC_DTYPE_COUNT = 8,
} ftc_dtype;

/* Reduction operators. Semantics (docs/decisions.md has the why):
 * - SUM, PROD: IEEE for floating types (f16/bf16 computed in f32 and
 *   rounded to nearest-even once per step); integers wrap around (two's
 *   complement), never undefined.
 * - AVG: SUM, then one division by the group size; floating types only
 *   (FTC_EINVAL for integers).
 * - MIN, MAX: a NaN operand gives NaN (the canonical quiet NaN); -0 is
 *   below +0. Both are exactly commutative, so every rank of an allreduce
 *   ends with bitwise-identical results whatever the algorithm. */
typedef enum ftc_op {
    FTC_OP_SUM = 0,
    FTC_OP_AVG = 1,
    FTC_OP_MIN = 2,
    FTC_OP_MAX = 3,
    FTC_OP_PROD = 4,
    FTC_OP_COUNT = 5,
} ftc_op;

/* Bytes per element (0 for an unknown dtype), and static names ("f32",
 * "sum"; "?" when unknown). */
FTC_API size_t ftc_dtype_size(int dtype);
FTC_API const char *ftc_dtype_name(int dtype);
FTC_API const char *ftc_op_name(int op);

/* A buffer handed to a collective: count elements of dtype at data, on a
 * device of kind `device` (FTC_DEVICE_CPU = 0). The struct is copied by
 * the call; the memory it points to is borrowed until the work completes
 * and must not be touched by the caller meanwhile. A backend that cannot
 * reach the device kind fails the call with FTC_ENOTSUP. */
typedef struct ftc_tensor {
    void *data;
    size_t count;
    int dtype;
    int device;
} ftc_tensor;

static inline ftc_tensor ftc_tensor_cpu(void *data, size_t count, int dtype)
{
    ftc_tensor t;
    t.data = data;
    t.count = count;
    t.dtype = dtype;
    t.device = FTC_DEVICE_CPU;
    return t;
}

/* Host memory that Baby groups ("baby-<inner>" backends) move without a
 * copy: it lives in one shared segment of this process that the child of
 * every Baby group maps. A cpu tensor elsewhere is copied into the
 * group's own segment at the call and its result copied back at
 * completion (docs/decisions.md, "pg: Baby process groups"); on other
 * backends this is ordinary memory. A Baby group's child can write all
 * of it, not only a call's output. bytes: any size (0 gives a unique
 * pointer); the memory is zero-filled and 64-byte aligned. FTC_EMSGSIZE
 * when the segment's 64 GiB of address space are used up. */
FTC_API int ftc_pg_mem_alloc(size_t bytes, void **out /* OUT */);
/* Frees p (NULL: nothing); its pages go back to the system at once. */
FTC_API void ftc_pg_mem_free(void *p);

/* ------------------------------------------------------------------ group */

typedef struct ftc_pg ftc_pg;
typedef struct ftc_work ftc_work;

/* Algorithms, chosen per call by size and group size unless overridden
 * (group-wide in ftc_pg_opts, per call in ftc_pg_op_opts). An override
 * that does not apply to the collective is FTC_EINVAL. */
typedef enum ftc_pg_algo {
    FTC_ALGO_AUTO = 0,
    FTC_ALGO_RING = 1,    /* allreduce, allgather(v), reduce_scatter */
    FTC_ALGO_RDOUBLE = 2, /* allreduce: recursive doubling (latency) */
    FTC_ALGO_DIRECT = 3,  /* allgather(v), reduce_scatter: all pairs */
    FTC_ALGO_TREE = 4,    /* broadcast, reduce: binomial tree */
    FTC_ALGO_CHAIN = 5,   /* broadcast, reduce: pipelined chain */
    /* allreduce, allgather(v), broadcast: within each host, then across
     * hosts (one rank per host per link). What AUTO picks for large
     * messages when the group spans two or more hosts of two or more ranks
     * each, the same number on every host; elsewhere it runs as AUTO's
     * large algorithm (ring, chain). */
    FTC_ALGO_HIER = 6,
} ftc_pg_algo;

/* spin_us value: choose by the host (ftc_pg_opts_init's default). */
#define FTC_PG_SPIN_AUTO (-2)

/* Options of a group. ftc_pg_opts_init fills the defaults; see
 * "Options structs" and "The timeout rule" in ftc/base.h. Timeout fields
 * also take FTC_TIMEOUT_DEFAULT (their default here), the size_t fields
 * FTC_SIZE_DEFAULT. */
typedef struct ftc_pg_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* Default deadline of each operation, from its call (default 300000;
     * 0: an operation not done at once fails; FTC_TIMEOUT_INFINITE
     * allowed). A hung peer is reported when it passes. */
    int64_t timeout_ms;
    /* Deadline of the rendezvous and connection set-up (default 60000;
     * 0: one attempt, FTC_TIMEOUT_INFINITE allowed). */
    int64_t connect_timeout_ms;
    /* Carried by every message; a message from another epoch is rejected
     * (for example the quorum id of a fault-tolerant job). */
    uint64_t epoch;
    /* Address to listen on and advertise to peers. NULL: the environment
     * variable FTC_PG_HOST, else the first address of this host's name,
     * else 127.0.0.1. */
    const char *host;
    /* Algorithm overrides (FTC_ALGO_AUTO: choose by size). */
    int allreduce_algo;
    int allgather_algo;
    int reduce_scatter_algo;
    int broadcast_algo;
    int reduce_algo;
    /* Messages up to this many bytes use latency-optimal algorithms
     * (default 64 KiB; 0: none does). */
    size_t small_bytes;
    /* Pipelining unit of the ring and chain algorithms (default 256 KiB;
     * 0 is FTC_EINVAL). */
    size_t segment_bytes;
    /* TCP connections per peer for collectives; large transfers are
     * striped over them (default 1, at most 8). */
    int streams;
    /* Microseconds a waiting thread polls before it sleeps (tcp: the
     * waiters and the progress thread; xccl: ftc_work_wait and the
     * group's worker on its queue): FTC_PG_SPIN_AUTO (default) chooses by
     * whether this host has a core per local rank (50 us if it has, else
     * none); 0 (or -1) never polls. */
    int spin_us;
    /* Socket buffer sizes requested from the kernel. 0 (default): left
     * to the kernel's autotuning, which grows each buffer as the
     * connection needs up to net.ipv4.tcp_wmem / tcp_rmem's maximum. A
     * size turns autotuning off for that buffer and is capped by
     * net.core.wmem_max / rmem_max. */
    int sndbuf_bytes;
    int rcvbuf_bytes;
    /* TCP congestion control of the group's connections. NULL: the
     * environment variable FTC_PG_TCP_CONGESTION if set, else automatic:
     * "reno" on connections between two ranks of one host (loopback has
     * nothing to control, and pacing algorithms such as BBR only cost CPU
     * there), the system default on the others. "": the system default
     * everywhere. A name ("cubic", "bbr", ...): that algorithm on every
     * connection; ftc_pg_create fails with FTC_EINVAL if the kernel
     * refuses it (see net.ipv4.tcp_allowed_congestion_control). Copied. */
    const char *tcp_congestion;
    /* Largest single send/recv message accepted from a peer (default
     * 1 GiB; 0 is FTC_EINVAL), and the most bytes of messages received before
     * their recv was posted that are buffered (default 64 MiB). */
    size_t max_message_bytes;
    size_t max_unexpected_bytes;
    /* Shared secret every member must know (NULL: the environment
     * variable FTC_TOKEN, if set). Each connection's handshake is then
     * authenticated both ways (HMAC-SHA256); a dialer without it, or with
     * another, is refused with FTC_EAUTH. Copied. */
    const char *token;
    /* The backend that moves this group's data, by name (copied): "tcp"
     * (built in) or a plugin loaded from libftc_pg_<name>.so or the path
     * in FTC_PG_<NAME>_BACKEND (ftc/plugin/backend.h). NULL (default):
     * the environment variable FTC_PG_BACKEND, else "tcp" for
     * ftc_pg_create and the parent's backend for a subgroup. A backend
     * that cannot be loaded fails the create with FTC_ENOTSUP. */
    const char *backend;
    /* With a token, what protects the messages after the handshake
     * (ftc_pg_protect; tcp backend; docs/protocol.md "Message
     * protection"). Every member must choose alike, else the handshake
     * fails with FTC_EPROTO. Without a token AUTO and OFF protect nothing
     * and MAC or ENCRYPT fail the create with FTC_EINVAL. */
    int protect;
    /* What carries the collectives between two ranks of one host
     * (ftc_pg_transport; tcp backend; docs/operations.md "Transports"). */
    int transport;
} ftc_pg_opts;

/* ftc_pg_opts.protect. */
typedef enum ftc_pg_protect {
    /* The environment variable FTC_PG_PROTECT ("auto", "mac", "encrypt"
     * or "off"), else AUTO. */
    FTC_PG_PROTECT_DEFAULT = 0,
    /* MAC on connections between hosts, none on connections within one
     * (loopback, or both ends on one address: only this host's kernel
     * carries those bytes). */
    FTC_PG_PROTECT_AUTO = 1,
    /* Every message carries a 16-byte tag (Poly1305 under a one-time key
     * per message): one changed, dropped, replayed or reordered on the
     * way fails the group with FTC_EAUTH naming the peer (the others hear
     * it in the same collective, or their next operation). */
    FTC_PG_PROTECT_MAC = 2,
    /* Only the handshake is authenticated (the data plane trusts the
     * network, as Gloo's and NCCL's do). */
    FTC_PG_PROTECT_OFF = 3,
    /* MAC's tags, and every message's payload encrypted (ChaCha20 under
     * the same per-message key, the tag over header and ciphertext, as
     * RFC 8439's ChaCha20-Poly1305 uses them), on every connection: an
     * on-path observer sees headers (kinds, sizes, ranks), not data. A
     * message is limited to 256 GiB (ChaCha20's block counter). */
    FTC_PG_PROTECT_ENCRYPT = 4,
} ftc_pg_protect;

/* ftc_pg_opts.transport. Whatever carries the collectives, each pair keeps
 * its TCP connections: the side channel (send/recv, liveness, aborts) and
 * the end-of-stream that says a peer died. */
typedef enum ftc_pg_transport {
    /* The environment variable FTC_PG_TRANSPORT ("auto", "tcp" or "shm"),
     * else AUTO. */
    FTC_PG_TRANSPORT_DEFAULT = 0,
    /* Shared memory between two ranks of one host whose connection is
     * not protected (see protect), TCP between the others. A pair whose
     * shared segment cannot be opened (another host after all, another
     * user) stays on TCP and says why in the log. */
    FTC_PG_TRANSPORT_AUTO = 1,
    /* TCP between every pair. */
    FTC_PG_TRANSPORT_TCP = 2,
    /* Shared memory between every pair, else ftc_pg_create fails with
     * FTC_ENOTSUP naming the pair and why. */
    FTC_PG_TRANSPORT_SHM = 3,
} ftc_pg_transport;

FTC_API void ftc_pg_opts_init(ftc_pg_opts *opts);

/* Creates this process's member of a group: every one of the size ranks
 * calls it with the same store server, prefix and size and its own rank.
 * Each publishes its listening address under "<prefix>/..." in the store,
 * reads the others' (one multi_get), and connects to every peer with
 * retries until connect_timeout_ms. The store client is borrowed for the
 * call only. opts may be NULL and is copied.
 *
 * Use a fresh prefix for every group you build (a rebuilt group included):
 * addresses under an old prefix belong to old members. Blocks up to the
 * connect timeout; another thread's ftc_store_client_cancel on the store
 * client ends it sooner, with FTC_ECANCELED (tcp and baby: the waits for
 * peers' connections watch that cancel too; repeat the cancel until the
 * create returns, as for any store call). Errors: FTC_EINVAL (arguments),
 * FTC_ETIMEDOUT (a peer
 * never published or never connected: the message names it, and so does
 * ftc_pg_create_failed_peers), FTC_EAUTH
 * (tokens differ), FTC_EPROTO (a peer refused: foreign group, other
 * epoch, other size), FTC_EPEER, FTC_ESYS, FTC_ENOMEM. On failure *out is
 * NULL. */
FTC_API int ftc_pg_create(ftc_store_client *store, const char *prefix, int rank,
                          int size, const ftc_pg_opts *opts, ftc_pg **out);

/* Fails every pending operation with FTC_ECANCELED, tells the peers
 * (their operations fail naming this rank), closes the connections and
 * frees the group. Works remain valid until released. NULL is a no-op. */
FTC_API void ftc_pg_destroy(ftc_pg *pg);

/* Fails every pending and later operation of this group with
 * FTC_ECANCELED, from any thread, and tells the peers so their operations
 * fail at once too (with FTC_EPEER naming this rank). Returns once that is
 * done: within milliseconds (up to 1 s if another thread is inside one
 * large reduction). Threads blocked in ftc_work_wait on this group return.
 * The group must then be destroyed. */
FTC_API void ftc_pg_abort(ftc_pg *pg);

FTC_API int ftc_pg_rank(const ftc_pg *pg);
FTC_API int ftc_pg_size(const ftc_pg *pg);

/* 0 while the group is healthy; after a failure, the code of the first
 * failure, with its message in ftc_last_error(). */
FTC_API int ftc_pg_status(ftc_pg *pg);

/* After the group failed: the peers this rank holds responsible for the
 * failure, as ranks of this group, ascending. At most cap are written to
 * ranks (which may be NULL when cap is 0); returns how many there are,
 * which may exceed cap. 0 while the group is healthy, and when nobody is
 * to blame: an abort on purpose (FTC_ECANCELED on any rank, and what
 * follows from it), a local error (FTC_ENOMEM, ...), or a timeout where
 * every peer answered the liveness probe (a slow peer is not a cut one).
 *
 * The tcp backend blames: on an operation's timeout, the peers that did
 * not answer this rank's liveness probe (not those it was waiting for:
 * they may be waiting for someone else); a peer whose connection broke,
 * or closed without leaving the group (BYE), or that broke the protocol
 * or failed authentication; on a peer's failure notice, what that peer
 * blamed, less the peers that answered this rank's own probe of the
 * operation in flight, plus those that have not answered it when it has
 * run for half its window (this rank's evidence outweighs the peer's
 * word: a cut between two others is not this rank's). A backend that
 * does not say (baby, xccl, nccl) blames nobody. The ranks are what a
 * manager reports as suspects: a partition shows up as peers that stop
 * answering.
 *
 * Never blocks; any thread. Errors: FTC_EMISUSE (not a group),
 * FTC_EINVAL (cap < 0, or ranks NULL with cap > 0). */
FTC_API int ftc_pg_failed_peers(ftc_pg *pg, int *ranks /* OUT */, int cap);

/* The same for the calling thread's last ftc_pg_create, when it failed:
 * the ranks (of the group being built) it holds responsible, ascending,
 * at most cap written (ranks may be NULL when cap is 0); returns how many
 * there are. 0 after a successful create, before any, and when nobody is
 * to blame (a refused handshake whose fault cannot be told, bad
 * arguments, a store that fails). Thread-local, like ftc_last_error: the
 * next ftc_pg_create on this thread replaces it. The 1024 lowest ranks
 * are kept: with more, the count is exact but at most 1024 are written.
 *
 * Blamed: ranks that never published their address in the store before
 * the timeout (rank 0, when it never published the group id), ranks that
 * could not be connected to or never connected, and a rank that broke the
 * handshake (a malformed or unauthenticated answer, a connection dropped
 * during it). Never blocks. Errors: FTC_EINVAL as above. */
FTC_API int ftc_pg_create_failed_peers(int *ranks /* OUT */, int cap);

/* The rank each member had in the group this one was split from (for a
 * group made by ftc_pg_create, the identity). ranks has size entries. */
FTC_API int ftc_pg_parent_ranks(const ftc_pg *pg, int *ranks /* OUT */);

/* -------------------------------------------------------------- subgroups */

/* color value for "no group": that rank gets *out = NULL. */
#define FTC_PG_UNDEFINED (-1)

/* MPI_Comm_split: every rank of pg calls it (a collective on pg); ranks
 * with the same color >= 0 form a new group, ordered by key, ties broken
 * by rank in pg. The new group meets through pg itself (one allgather of
 * listening addresses), so no store is needed. opts configures the new
 * group; NULL takes pg's options, epoch included. Blocks until the new
 * group is connected (connect_timeout_ms). A rank whose group cannot be
 * built gets the error; its peers in that group time out connecting. */
FTC_API int ftc_pg_split(ftc_pg *pg, int color, int key,
                         const ftc_pg_opts *opts, ftc_pg **out);

/* torch.distributed.new_subgroups: contiguous groups of group_size ranks
 * ([0..g-1], [g..2g-1], ...); size must be a multiple of group_size.
 * Returns this rank's group. */
FTC_API int ftc_pg_new_subgroups(ftc_pg *pg, int group_size,
                                 const ftc_pg_opts *opts, ftc_pg **out);

/* The two groups of FSDP HYBRID_SHARD / a 2-D DeviceMesh
 * (replicate x shard) with devices_per_node ranks on each node, nodes
 * holding contiguous ranks:
 * - shard (intra-node): ranks [n*d .. n*d+d-1] of this rank's node n;
 * - replicate (inter-node): ranks {l, l+d, l+2d, ...} with l = rank % d.
 * devices_per_node 0 asks the device layer how many devices of kind
 * device_kind this node has (FTC_ENOTSUP if that kind is unavailable).
 * size must be a multiple of devices_per_node (FTC_EINVAL). */
FTC_API int ftc_pg_mesh_2d(ftc_pg *pg, int devices_per_node, int device_kind,
                           const ftc_pg_opts *opts, ftc_pg **shard,
                           ftc_pg **replicate);

/* ------------------------------------------------------------ operations */

/* Called once when a work completes (rc = its result), on a library thread
 * or on a thread inside ftc_work_wait. It must not block, and must not
 * wait on any work (FTC_EMISUSE) or destroy the group; it may release the
 * work and start new operations. */
typedef void (*ftc_work_fn)(void *arg, ftc_work *work, int rc);

/* Per-call options; NULL means all defaults. */
typedef struct ftc_pg_op_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* Deadline of this operation from the call (the timeout rule of
     * ftc/base.h; a bad value fails the call with FTC_EINVAL);
     * FTC_TIMEOUT_DEFAULT (the default) uses the group's timeout_ms. */
    int64_t timeout_ms;
    /* FTC_ALGO_* override for this call. */
    int algo;
    ftc_work_fn done;
    void *done_arg;
} ftc_pg_op_opts;

FTC_API void ftc_pg_op_opts_init(ftc_pg_op_opts *opts);

/* Every operation below:
 * - checks its arguments at once (FTC_EINVAL: counts, dtypes, roots, op;
 *   FTC_ENOTSUP: a device kind the backend cannot reach) and then returns
 *   0 with *work set, or fails with nothing started and *work NULL;
 * - on a failed group returns that failure's code, saying the group is
 *   unusable until rebuilt;
 * - leaves the buffers borrowed until the work completes.
 * work may be NULL to start the operation detached (its failure still
 * fails the group). */

/* out = reduction of every rank's in. in may be out (in place). */
FTC_API int ftc_pg_allreduce(ftc_pg *pg, const ftc_tensor *in,
                             const ftc_tensor *out, int op,
                             const ftc_pg_op_opts *opts, ftc_work **work);

/* buf of root is copied into buf of every rank. */
FTC_API int ftc_pg_broadcast(ftc_pg *pg, const ftc_tensor *buf, int root,
                             const ftc_pg_op_opts *opts, ftc_work **work);

/* out (used at root only; may be NULL elsewhere) = reduction of every
 * rank's in. in is never modified. */
FTC_API int ftc_pg_reduce(ftc_pg *pg, const ftc_tensor *in,
                          const ftc_tensor *out, int op, int root,
                          const ftc_pg_op_opts *opts, ftc_work **work);

/* out (size * in->count elements) = every rank's in, in rank order. */
FTC_API int ftc_pg_allgather(ftc_pg *pg, const ftc_tensor *in,
                             const ftc_tensor *out, const ftc_pg_op_opts *opts,
                             ftc_work **work);

/* Like allgather with counts[r] elements from rank r (in->count ==
 * counts[rank]); out holds the sum of counts, rank r's at the sum of
 * counts before r. Every rank passes the same counts. */
FTC_API int ftc_pg_allgatherv(ftc_pg *pg, const ftc_tensor *in,
                              const ftc_tensor *out, const size_t *counts,
                              const ftc_pg_op_opts *opts, ftc_work **work);

/* in has size * out->count elements; rank r's out = reduction over ranks
 * of block r of their in. */
FTC_API int ftc_pg_reduce_scatter(ftc_pg *pg, const ftc_tensor *in,
                                  const ftc_tensor *out, int op,
                                  const ftc_pg_op_opts *opts, ftc_work **work);

/* in and out have size * c elements; block j of rank i's in goes to block
 * i of rank j's out. */
FTC_API int ftc_pg_alltoall(ftc_pg *pg, const ftc_tensor *in,
                            const ftc_tensor *out, const ftc_pg_op_opts *opts,
                            ftc_work **work);

/* Variable alltoall: this rank sends send_counts[j] elements to rank j
 * (blocks contiguous in in, in rank order) and receives recv_counts[j]
 * from rank j into out. send_counts[j] here must equal recv_counts[i] at
 * rank j (else the operation fails with FTC_EPROTO on both). */
FTC_API int ftc_pg_alltoallv(ftc_pg *pg, const ftc_tensor *in,
                             const size_t *send_counts, const ftc_tensor *out,
                             const size_t *recv_counts,
                             const ftc_pg_op_opts *opts, ftc_work **work);

/* out at root (size * in->count elements; NULL elsewhere) = every rank's
 * in, in rank order. */
FTC_API int ftc_pg_gather(ftc_pg *pg, const ftc_tensor *in,
                          const ftc_tensor *out, int root,
                          const ftc_pg_op_opts *opts, ftc_work **work);

/* Block r of root's in (size * out->count elements; NULL elsewhere) goes
 * to rank r's out. */
FTC_API int ftc_pg_scatter(ftc_pg *pg, const ftc_tensor *in,
                           const ftc_tensor *out, int root,
                           const ftc_pg_op_opts *opts, ftc_work **work);

/* Completes on each rank once every rank has entered it. */
FTC_API int ftc_pg_barrier(ftc_pg *pg, const ftc_pg_op_opts *opts,
                           ftc_work **work);

/* Point-to-point. A send matches the first recv posted at dst for this
 * source (or FTC_PG_ANY_SOURCE) and tag; messages between two ranks with
 * the same tag arrive in send order. The byte sizes must be equal
 * (FTC_EMSGSIZE on the recv otherwise, the group stays usable). Sends and
 * receives progress independently of collectives: they are not ordered
 * with them. A send completes once its bytes are handed to the kernel. */
#define FTC_PG_ANY_SOURCE (-1)

FTC_API int ftc_pg_send(ftc_pg *pg, const ftc_tensor *buf, int dst,
                        uint32_t tag, const ftc_pg_op_opts *opts,
                        ftc_work **work);
FTC_API int ftc_pg_recv(ftc_pg *pg, const ftc_tensor *buf, int src,
                        uint32_t tag, const ftc_pg_op_opts *opts,
                        ftc_work **work);

/* ------------------------------------------------------------------- work */

/* Blocks until the work completes or timeout_ms passes (FTC_ETIMEDOUT:
 * the operation itself goes on, bounded by its own deadline). Returns the
 * operation's result: 0 or its error code, with its message in
 * ftc_last_error(). FTC_EMISUSE inside a completion callback. timeout_ms
 * follows the timeout rule of ftc/base.h; FTC_TIMEOUT_DEFAULT waits
 * without a limit. */
FTC_API int ftc_work_wait(ftc_work *work, int64_t timeout_ms);

/* Never blocks: *done = 0 while running (returns 0); once done, *done = 1
 * and the operation's result is returned. */
FTC_API int ftc_work_test(ftc_work *work, int *done /* OUT */);

/* The operation's result if it completed with an error (message in
 * ftc_last_error()), else 0. */
FTC_API int ftc_work_error(ftc_work *work);

/* For a completed recv: the sending rank (useful with ANY_SOURCE).
 * FTC_EINVAL for other operations or before completion. */
FTC_API int ftc_work_source(ftc_work *work, int *rank /* OUT */);

/* Releases the caller's reference. A running operation continues and its
 * memory is freed when it completes. NULL is a no-op. */
FTC_API void ftc_work_release(ftc_work *work);

#ifdef __cplusplus
}
#endif
#endif
