/* ftc/control.h: control-plane collectives over a store (c10d
 * StoreCollectives, done better).
 *
 * Barrier, broadcast, gather, scatter, all_gather and all_sum between the
 * ranks of a group that share a store. Each call takes a key and a timeout.
 * The keys are laid out exactly as PyTorch's StoreCollectives lays them out
 * ("<key>/<rank>", "<key>/num_members", "<key>/last_members"), so PyTorch
 * ranks and ftc ranks can take part in the same collective.
 *
 * Differences from c10d, all deliberate:
 * - A call's timeout applies to that call only; the store's timeout seen by
 *   other threads never changes.
 * - A timeout names every rank that never arrived:
 *   "barrier 'k' timed out after 500 ms: missing ranks 0, 2, 3".
 * - A rank that arrives after the others gave up gets FTC_ECANCELED at once
 *   ("barrier 'k' was abandoned: rank 1 timed out ...") instead of waiting.
 * - key == NULL picks the next key of the group's automatic key sequence
 *   (see ftc_control_opts.generation). */
#ifndef FTC_CONTROL_H
#define FTC_CONTROL_H

#include "ftc/base.h"
#include "ftc/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ftc_control ftc_control;

typedef struct ftc_control_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* Automatic keys are "<auto_prefix>/<generation>/<n>" for the n-th
     * call made with key == NULL. Default prefix "ftc/control". */
    const char *auto_prefix;
    /* The rendezvous round this group instance belongs to (a quorum id, a
     * restart count...). Negative (the default): the ranks agree on one at
     * create time through the store: the k-th time the whole group is
     * created, generation k. Either way, create fails with FTC_ESTALE when
     * this rank already joined that generation (a restarted member must
     * join a new generation), so a restart can never consume keys that
     * belong to the old instance. */
    int64_t generation;
} ftc_control_opts;

FTC_API void ftc_control_opts_init(ftc_control_opts *opts);

/* Creates the group view of rank (0 <= rank < world_size) over store. The
 * store is borrowed and must outlive the group; several groups may share
 * one store. Blocks for one store round trip (bounded by timeout_ms, which
 * follows the timeout rule of ftc/base.h).
 * Errors: FTC_EINVAL, FTC_ESTALE (see generation), store errors. */
FTC_API int ftc_control_create(ftc_store_client *store, int rank,
                               int world_size, const ftc_control_opts *opts,
                               ftc_control **out, int64_t timeout_ms);
FTC_API void ftc_control_destroy(ftc_control *group);

/* The generation in use (useful when it was agreed at create time). */
FTC_API int64_t ftc_control_generation(const ftc_control *group);

/* In every call: key names the collective instance and may be used once
 * per group (FTC_EEXIST "key 'k' has already been used" otherwise); NULL
 * takes the next automatic key. Returned buffers are released with
 * ftc_free / ftc_store_values_free. timeout_ms follows the timeout rule
 * of ftc/base.h (FTC_TIMEOUT_DEFAULT: 300000; another negative value is
 * FTC_EINVAL and claims no key). Timeouts: FTC_ETIMEDOUT naming the
 * missing ranks. A group may be used by one thread at a time. */

/* Returns when every rank has entered the barrier. On ftc's store server
 * this is one request and one reply per rank (ftc_store_client_barrier);
 * on PyTorch's, c10d's plain ops. */
FTC_API int ftc_control_barrier(ftc_control *group, const char *key,
                                int64_t timeout_ms);

/* The root sends data to every other rank. */
FTC_API int ftc_control_broadcast_send(ftc_control *group, const char *key,
                                       const void *data, size_t len,
                                       int64_t timeout_ms);
FTC_API int ftc_control_broadcast_recv(ftc_control *group, const char *key,
                                       void **data /* OUT */,
                                       size_t *len /* OUT */,
                                       int64_t timeout_ms);

/* Every other rank sends data to the root; the root receives world_size
 * values in rank order (its own data at its rank) in out[]. */
FTC_API int ftc_control_gather_send(ftc_control *group, const char *key,
                                    const void *data, size_t len,
                                    int64_t timeout_ms);
FTC_API int ftc_control_gather_recv(ftc_control *group, const char *key,
                                    const void *data, size_t len,
                                    ftc_store_value *out /* OUT [world] */,
                                    int64_t timeout_ms);

/* The root sends data[i] (world_size values) to rank i and gets its own
 * data[root] back in *mine; the others receive theirs. */
FTC_API int ftc_control_scatter_send(ftc_control *group, const char *key,
                                     const ftc_store_value *data,
                                     void **mine /* OUT */,
                                     size_t *mine_len /* OUT */,
                                     int64_t timeout_ms);
FTC_API int ftc_control_scatter_recv(ftc_control *group, const char *key,
                                     void **data /* OUT */,
                                     size_t *len /* OUT */, int64_t timeout_ms);

/* Every rank gets every rank's data, in rank order. */
FTC_API int ftc_control_all_gather(ftc_control *group, const char *key,
                                   const void *data, size_t len,
                                   ftc_store_value *out /* OUT [world] */,
                                   int64_t timeout_ms);

/* Every rank gets the sum of every rank's value. Uses key and
 * "<key>/barrier". */
FTC_API int ftc_control_all_sum(ftc_control *group, const char *key,
                                int64_t value, int64_t *sum /* OUT */,
                                int64_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
