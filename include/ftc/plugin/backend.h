/* ftc/plugin/backend.h: the table a process-group backend gives the pg
 * layer, and the calls the pg layer offers a backend. The built-in tcp
 * backend fills it; other backends (xccl, nccl, a test backend) live in a
 * shared library loaded on first use:
 *
 *   - a group names its backend in ftc_pg_opts.backend (NULL: the
 *     environment variable FTC_PG_BACKEND, else "tcp"); subgroups made by
 *     split/new_subgroups/mesh_2d inherit their parent's unless their
 *     opts name another;
 *   - "tcp" is built in; any other name <n> is loaded from the path in
 *     FTC_PG_<N>_BACKEND (N: the name in upper case), else from
 *     libftc_pg_<n>.so on the loader's search path;
 *   - the library calls FTC_PG_BACKEND_ENTRY_SYMBOL once; the table it
 *     returns must stay valid until the process exits (the library is
 *     never unloaded). A missing library or symbol, a NULL table, another
 *     ABI major or a struct_size smaller than the 1.0 table fail
 *     ftc_pg_create (or the split) with FTC_ENOTSUP naming the library,
 *     the symbol and both versions, before anything is started.
 *
 *     static const ftc_pg_backend table = {
 *         .abi_version = FTC_PG_BACKEND_ABI_VERSION,
 *         .struct_size = sizeof(ftc_pg_backend),
 *         .name = "xccl",
 *         .colls = FTC_PG_BIT(FTC_PG_COLL_ALLREDUCE) | ...,
 *         .dtypes = FTC_PG_BIT(FTC_DTYPE_F32) | ...,
 *         .ops = FTC_PG_BIT(FTC_OP_SUM) | ...,
 *         .devices = FTC_PG_BIT(FTC_DEVICE_CPU) | FTC_PG_BIT(FTC_DEVICE_XPU),
 *         .create = my_create, .submit = my_submit, .abort = my_abort,
 *         .status = my_status, .destroy = my_destroy,
 *         .failed_peers = my_failed_peers, (optional, 1.2)
 *     };
 *     FTC_PLUGIN_EXPORT const ftc_pg_backend *ftc_pg_backend_entry(void)
 *     {
 *         return &table;
 *     }
 *
 * A plugin includes only the headers under include/ftc and calls only
 * FTC_API functions; it is built against libftc.so (or, in a program
 * linked statically, against the program's exported symbols).
 *
 * Every slot returns 0 or a negative FTC_E* code with ftc_last_error set
 * (a plugin sets it with ftc_pg_backend_seterr), and may be called from
 * any thread unless it says otherwise. impl is the backend's own state for
 * one group. Versioning as in ftc/plugin/abi.h: a minor release appends
 * fields, NULL (or 0 for a mask) means "not supported". */
#ifndef FTC_PLUGIN_BACKEND_H
#define FTC_PLUGIN_BACKEND_H

#include "ftc/pg.h"
#include "ftc/plugin/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of ftc_pg_backend this header describes. */
#define FTC_PG_BACKEND_ABI_VERSION FTC_PLUGIN_ABI(1, 2)

/* The name the library looks up with dlsym. */
#define FTC_PG_BACKEND_ENTRY_SYMBOL "ftc_pg_backend_entry"

/* A bit of a capability mask: FTC_PG_BIT(FTC_DTYPE_F32). */
#define FTC_PG_BIT(value) ((uint32_t)1u << (unsigned)(value))

/* Collective kinds (ftc_pg_request.coll). The numbers are stable: they
 * are also the collective byte of the tcp backend's wire format. */
typedef enum ftc_pg_coll {
    FTC_PG_COLL_ALLREDUCE = 1,
    FTC_PG_COLL_BROADCAST = 2,
    FTC_PG_COLL_REDUCE = 3,
    FTC_PG_COLL_ALLGATHER = 4,
    FTC_PG_COLL_ALLGATHERV = 5,
    FTC_PG_COLL_REDUCE_SCATTER = 6,
    FTC_PG_COLL_ALLTOALL = 7,
    FTC_PG_COLL_ALLTOALLV = 8,
    FTC_PG_COLL_GATHER = 9,
    FTC_PG_COLL_SCATTER = 10,
    FTC_PG_COLL_BARRIER = 11,
    FTC_PG_COLL_SEND = 12,
    FTC_PG_COLL_RECV = 13,
    FTC_PG_COLL_COUNT = 14,
} ftc_pg_coll;

/* "allreduce", ...; "?" when unknown. */
FTC_API const char *ftc_pg_coll_name(int coll);

/* One validated collective or send/recv, with its ftc_work. Opaque; the
 * backend owns it from submit until it passes it to
 * ftc_pg_backend_complete. */
typedef struct ftc_pg_backend_request ftc_pg_backend_request;

/* What a request asks for. Every argument has been checked by the pg
 * layer against the group and the backend's masks before submit. Valid,
 * unchanged, until the request is completed. Counts are in elements. */
typedef struct ftc_pg_request {
    uint32_t struct_size; /* sizeof(ftc_pg_request) of the library */
    int coll;             /* ftc_pg_coll */
    int dtype;            /* ftc_dtype (FTC_DTYPE_U8 for a barrier) */
    int op;               /* ftc_op: reducing collectives only */
    int root;             /* rooted collectives; send/recv: the peer (recv:
                             may be FTC_PG_ANY_SOURCE) */
    uint32_t tag;         /* send/recv */
    /* The buffers: send_count elements at send, recv_count at recv (0 and
     * a non-NULL dummy where the call has none; an in-place allreduce, a
     * broadcast, a send and a recv have send == recv, both counts set).
     * allgather: send_count, recv_count =
     * size * send_count; reduce_scatter the reverse; gather/scatter: the
     * large side only at the root. */
    const void *send;
    size_t send_count;
    void *recv;
    size_t recv_count;
    /* allgatherv: counts of every rank (send_counts, size entries);
     * alltoall(v): elements sent to and received from each rank; NULL
     * for the other collectives. */
    const size_t *send_counts;
    const size_t *recv_counts;
    /* Where the tensors are: device kind (FTC_DEVICE_*), device index,
     * and the stream the caller ordered the work on (NULL: none, the
     * buffers are ready when the call is made). */
    int device;
    int device_index;
    void *stream;
    uint64_t seq;        /* 1, 2, ...: collectives of this group in call
                            order (0 for send/recv) */
    uint64_t epoch;      /* the group's epoch (ftc_pg_opts.epoch) */
    int64_t deadline_ns; /* absolute CLOCK_MONOTONIC; INT64_MAX: never */
} ftc_pg_request;

/* Finishes request: its work gets rc (0, or a negative FTC_E* code with
 * message, which is copied; NULL: no detail), threads waiting on it
 * return, and its completion callback runs on the calling thread. The
 * request is freed: do not touch it or its descriptor afterwards. Call it
 * exactly once per submitted request, from any thread of the backend,
 * never while holding a lock the callback's thread may need (the callback
 * may start new operations on the group). Works of collectives must be
 * completed in call (seq) order. */
FTC_API void ftc_pg_backend_complete(ftc_pg_backend_request *request, int rc,
                                     const char *message);

/* Sets this thread's ftc_last_error and returns code: what a slot does
 * before it returns an error. */
FTC_API int ftc_pg_backend_seterr(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* --------------------------------------------------------------- create */

/* Where the members of a new group meet; valid during create only. */
typedef struct ftc_pg_backend_rendezvous ftc_pg_backend_rendezvous;

/* The usual unique-id exchange (ncclGetUniqueId, onecclGetUniqueId):
 * member 0 of the new group passes its bytes in id, every other member
 * gets member 0's bytes in id (exactly len bytes, else FTC_EPROTO). name
 * tells several exchanges of one create apart ("id"). Over the store
 * under the group's prefix for ftc_pg_create, over the parent group for a
 * subgroup. Blocks until deadline_ns (FTC_ETIMEDOUT naming the missing
 * member 0). Every member must call it with the same name and len. */
FTC_API int ftc_pg_backend_exchange(ftc_pg_backend_rendezvous *rv,
                                    const char *name, void *id, size_t len,
                                    int64_t deadline_ns);

/* Since ABI 1.2: during create, before it fails, a backend names the
 * members it holds responsible (ranks of the group being built: one that
 * never joined, could not be reached, or broke the set-up), n of them in
 * any order; several calls add up. For ftc_pg_create they become the
 * caller's ftc_pg_create_failed_peers (only if create fails); for a
 * subgroup they are dropped. A backend that never calls it blames nobody.
 * 0, or FTC_EINVAL (a rank outside the group, or this member itself) or
 * FTC_ENOMEM with ftc_last_error set; on success ftc_last_error is left
 * alone, so the backend's own message stands. */
FTC_API int ftc_pg_backend_blame(ftc_pg_backend_rendezvous *rv,
                                 const int *ranks, int n);

/* What create gets. */
typedef struct ftc_pg_backend_create_args {
    uint32_t struct_size; /* sizeof(ftc_pg_backend_create_args) */
    /* The group being built: pass it to nothing but keep it if useful for
     * messages; it is usable for operations only after create returns. */
    ftc_pg *group;
    int rank;
    int size;
    /* Member i's rank in the group this one was split from (identity for
     * ftc_pg_create); size entries. */
    const int *parent_ranks;
    /* Same on every member and fresh for every group (a rebuilt group
     * included): protects against stale traffic. */
    uint64_t group_id;
    uint64_t epoch; /* ftc_pg_opts.epoch */
    /* The store client (ftc_pg_create only; NULL for a subgroup) and the
     * group's key prefix (a fresh one for a subgroup, made from the
     * parent's). The store is borrowed for the create call only. */
    ftc_store_client *store;
    const char *prefix;
    ftc_pg_backend_rendezvous *rendezvous; /* for ftc_pg_backend_exchange */
    /* The group's options, resolved (timeouts, host, token, ...). */
    const ftc_pg_opts *opts;
    int64_t deadline_ns; /* of the whole create */
} ftc_pg_backend_create_args;

/* ---------------------------------------------------------------- table */

typedef struct ftc_pg_backend {
    uint32_t abi_version; /* FTC_PG_BACKEND_ABI_VERSION */
    uint32_t struct_size; /* sizeof(ftc_pg_backend) */
    const char *name;     /* "tcp", for messages */
    /* Capabilities: bit FTC_PG_BIT(x) set for every collective
     * (FTC_PG_COLL_*), dtype (FTC_DTYPE_*), reduction op (FTC_OP_*) and
     * device kind (FTC_DEVICE_*) the backend handles. A call outside them
     * fails at once with FTC_ENOTSUP naming the backend, the collective,
     * the dtype and the op; nothing is submitted. */
    uint32_t colls;
    uint32_t dtypes;
    uint32_t ops;
    uint32_t devices;
    /* Builds this member's state (*impl) for a new group. Blocks until
     * every member has joined or args->deadline_ns passes (FTC_ETIMEDOUT).
     * On failure nothing is left behind. Required. */
    int (*create)(const ftc_pg_backend_create_args *args, void **impl);
    /* Optional finer check of a device kind in the mask (e.g. tcp needs
     * host access): 0 or FTC_ENOTSUP naming what is missing. */
    int (*check_device)(void *impl, int device);
    /* Takes ownership of request: the backend completes it with
     * ftc_pg_backend_complete (never from inside submit's caller-visible
     * failure: a non-zero return means not taken, the request stays the
     * pg layer's (it frees it), and the call fails with that code,
     * nothing started). desc is valid until completion.
     * Returns the group's failure code when the group is unusable.
     * Required. */
    int (*submit)(void *impl, ftc_pg_backend_request *request,
                  const ftc_pg_request *desc);
    /* Optional: blocks until work is done or deadline_ns passes
     * (FTC_ETIMEDOUT), making progress meanwhile. Never called from a
     * completion callback. NULL: the pg layer waits for
     * ftc_pg_backend_complete itself. */
    int (*wait)(void *impl, ftc_work *work, int64_t deadline_ns);
    /* Fails every pending and later call of the group with FTC_ECANCELED
     * and tells the peers where the backend can, as ftc_pg_abort()
     * describes; returns once the pending works are completed. Required. */
    void (*abort)(void *impl);
    /* 0 while the group is usable, else its failure code (a failure the
     * backend learnt asynchronously included) with ftc_last_error set.
     * Required. */
    int (*status)(void *impl);
    /* Ends the group: pending works complete (FTC_ECANCELED), the
     * backend's threads stop, then impl is freed. Required. */
    void (*destroy)(void *impl);
    /* --- ABI 1.1 --- */
    /* Optional finer check of a request the masks accept, before it is
     * submitted and on the calling thread (for instance xccl refuses a
     * recv from FTC_PG_ANY_SOURCE): 0, or FTC_ENOTSUP / FTC_EINVAL with
     * ftc_last_error set, and the call fails with nothing started. No
     * group state: a wrapper backend (baby-<inner>) calls the inner
     * backend's. */
    int (*check_request)(const ftc_pg_request *desc);
    /* --- ABI 1.2 --- */
    /* Optional: after the group failed, the peers this member holds
     * responsible (ftc_pg_failed_peers describes which), ascending, at
     * most cap written to ranks (NULL when cap is 0); returns how many
     * there are, 0 while the group is usable. Never blocks; any thread.
     * NULL (also for an older table, whose struct_size ends before it):
     * the backend blames nobody. */
    int (*failed_peers)(void *impl, int *ranks, int cap);
} ftc_pg_backend;

/* The entry every backend plugin exports: its table, or NULL if its
 * library cannot be used in this process (creating a group on it then
 * fails with FTC_ENOTSUP). */
FTC_PLUGIN_EXPORT const ftc_pg_backend *ftc_pg_backend_entry(void);

/* Optional, looked up next to the entry: why the entry returned NULL, with
 * the vendor's own text ("libcudart.so.13: cudaGetDeviceCount: CUDA driver
 * version is insufficient ..."); "" or NULL if it did not say. The library
 * puts it into the FTC_ENOTSUP message of the failed create. */
#define FTC_PG_BACKEND_ERROR_SYMBOL "ftc_pg_backend_error"
FTC_PLUGIN_EXPORT const char *ftc_pg_backend_error(void);

#ifdef __cplusplus
}
#endif
#endif
