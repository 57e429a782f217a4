/* ftc/algo.h: fault-tolerant training algorithms over plain float arrays:
 * FT-DDP, LocalSGD, DiLoCo and streaming DiLoCo, driven through a comm. */
#ifndef FTC_ALGO_H
#define FTC_ALGO_H

#include "ftc/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------
 * The communication interface.
 *
 * The algorithms never talk to the fault-tolerance manager directly: they
 * call these five functions on a table the caller hands them. The manager
 * provides one (ftc_manager_algo_comm()); the tests provide a simulated
 * in-process one. Every function gets `ctx` back as its first argument.
 *
 * The timeout_ms of ftc_ddp_*, ftc_localsgd_step and ftc_diloco_step
 * follows the timeout rule of ftc/base.h (FTC_EINVAL, nothing done, for
 * another value).
 *
 * Timeouts: each function taking `timeout_ms` receives either the time
 * left of the algorithm call's deadline (>= 0), FTC_TIMEOUT_INFINITE, or
 * FTC_TIMEOUT_DEFAULT when the caller of the algorithm passed it (the comm
 * then applies its own default for that kind of call, e.g. a longer one for
 * quorums). Every function returns 0 or a negative FTC_E* code and sets
 * ftc_last_error() on failure.
 *
 * Threads: an algorithm handle calls its comm only from the thread that
 * calls the handle; the comm need not be re-entrant for one handle.
 * --------------------------------------------------------------------- */

/* An in-flight average. The comm defines struct ftc_algo_work (or casts
 * its own type); the algorithms only pass the pointer back to wait(). */
typedef struct ftc_algo_work ftc_algo_work;

typedef struct ftc_algo_comm {
    void *ctx; /* borrowed: must outlive every handle using this table */

    /* Starts the quorum of the next step and blocks until it is decided
     * and, if this replica is behind, until it is healed: when it returns
     * 0, every buffer registered for healing holds the healed state and
     * current_step() returns the healed step. Called once per step (DDP)
     * or per synchronisation (LocalSGD, DiLoCo), always followed by exactly
     * one should_commit(), even when averages in between failed.
     * Errors: FTC_ETIMEDOUT, FTC_ECANCELED, FTC_EPEER (lighthouse or group
     * unreachable) ...; the algorithm returns the code to its caller. */
    int (*start_quorum)(void *ctx, int64_t timeout_ms);

    /* Starts averaging buf[0..n) (n >= 1) over the replicas participating
     * in the current quorum: the sum of every participant's values divided
     * by the number of participants, summed in an order that gives every
     * replica bit-identical results. A non-participating replica (healing,
     * spare) contributes zeros and still receives the average. Does not
     * block for the data; on 0, *out is a work item that must be passed to
     * wait() exactly once. buf is lent to the comm until that wait()
     * returns: the caller neither reads nor writes it meanwhile. Several
     * averages may be in flight; the algorithms wait for them in issue
     * order. On failure *out is NULL, nothing needs waiting, and the
     * failure counts as a failed average (see wait). */
    int (*allreduce_avg)(void *ctx, float *buf, size_t n, ftc_algo_work **out);

    /* Waits for an average and releases its work item, whatever it
     * returns. On 0, buf holds the average. On failure (FTC_ETIMEDOUT,
     * FTC_EPEER, FTC_ECANCELED ...) buf's contents are unspecified; the
     * algorithms then vote no in should_commit(). When wait() returns, the
     * comm no longer touches buf, even after a timeout (abort the
     * operation or work on a private copy). timeout_ms 0 means "release
     * now": the algorithms use it when destroyed with an average in
     * flight. */
    int (*wait)(void *ctx, ftc_algo_work *work, int64_t timeout_ms);

    /* Votes on the step started by start_quorum(): local_ok is 0 when this
     * rank saw a failed average. Blocks until the decision: *commit is 1
     * only if every voter agreed and the comm saw no error of its own; it
     * is the same on every rank of the replica group. When *commit is 1,
     * current_step() has advanced by one before this returns. On failure
     * *commit is 0 and the algorithm returns the code to its caller. */
    int (*should_commit)(void *ctx, int local_ok, int *commit,
                         int64_t timeout_ms);

    /* The number of committed steps of this replica (after healing, the
     * source's). Never blocks, never fails. DiLoCo picks the fragment to
     * synchronise from it, so all replicas of a quorum must agree on it. */
    int64_t (*current_step)(void *ctx);
} ftc_algo_comm;

/* ---------------------------------------------------------------------
 * Common types.
 * --------------------------------------------------------------------- */

/* What a step call did. */
typedef enum ftc_algo_outcome {
    FTC_ALGO_LOCAL = 0,     /* no synchronisation finished in this call */
    FTC_ALGO_COMMITTED = 1, /* a synchronisation finished and committed */
    FTC_ALGO_DISCARDED = 2, /* one finished and was not committed */
} ftc_algo_outcome;

/* A named float buffer that a healing replica must receive from its
 * source, in place, during start_quorum(). The name and the pointer are
 * owned by the algorithm handle and valid until it is destroyed. */
typedef struct ftc_algo_buffer {
    const char *name;
    float *data;
    size_t count;
} ftc_algo_buffer;

/* A range [offset, offset + count) of a flat parameter vector. */
typedef struct ftc_algo_range {
    size_t offset;
    size_t count;
} ftc_algo_range;

/* Floats per collective unless configured: 25 MiB of float, the bucket
 * size of torch DDP (bucket_cap_mb = 25). */
#define FTC_ALGO_DEFAULT_BUCKET_ELEMS ((size_t)25 * 1024 * 1024 / 4)
/* Inner steps between synchronisations unless configured. */
#define FTC_ALGO_DEFAULT_SYNC_EVERY 100

/* ---------------------------------------------------------------------
 * FT-DDP: gradients averaged across replicas every step; the caller's
 * optimizer steps only when the step commits.
 *
 *   ftc_ddp_begin_step(d, t);               before forward: the quorum
 *   ... forward, backward into grads ...
 *   ftc_ddp_sync_grads(d, grads, n, t);     average, in buckets
 *   ftc_ddp_commit(d, &commit, t);          the group's decision
 *   if (commit) optimizer_step(params, grads);
 *
 * FT-DDP keeps no state a healing replica needs: register the trainer's
 * parameters and optimizer state with the manager. Not thread-safe: one
 * thread drives a handle.
 * --------------------------------------------------------------------- */
typedef struct ftc_ddp ftc_ddp;

typedef struct ftc_ddp_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* Floats per collective; default FTC_ALGO_DEFAULT_BUCKET_ELEMS, 0 is
     * FTC_EINVAL. Every
     * bucket of a sync_grads() call is issued before the first is waited
     * for (at most 64 in flight; more wait for the oldest first). */
    size_t bucket_elems;
} ftc_ddp_opts;

FTC_API void ftc_ddp_opts_init(ftc_ddp_opts *opts);

/* Creates a handle using *comm (the table is copied; comm->ctx is
 * borrowed). opts may be NULL. Errors: FTC_EINVAL (a NULL comm function),
 * FTC_ENOMEM. On failure *out is NULL. */
FTC_API int ftc_ddp_create(const ftc_algo_comm *comm, const ftc_ddp_opts *opts,
                           ftc_ddp **out);
/* NULL is a no-op. Must not be called while a step is open elsewhere. */
FTC_API void ftc_ddp_destroy(ftc_ddp *ddp);

/* Opens a step: start_quorum(). Blocks until the quorum is decided (and
 * this replica healed). Errors: the comm's codes (the step stays closed:
 * call begin_step again or give up), FTC_EMISUSE if a step is open. */
FTC_API int ftc_ddp_begin_step(ftc_ddp *ddp, int64_t timeout_ms);

/* Averages grads[0..n) in place across the quorum's participants, in
 * buckets; may be called several times per step (one call per gradient
 * array), n = 0 issues nothing. Blocks until every bucket is done. A
 * failed average is not an error of this call: it is logged
 * ("algo.average") and makes the step's commit fail, and grads then hold
 * unspecified values. grads is borrowed until return. Errors: FTC_EINVAL
 * (grads NULL with n > 0), FTC_EMISUSE (no open step). */
FTC_API int ftc_ddp_sync_grads(ftc_ddp *ddp, float *grads, size_t n,
                               int64_t timeout_ms);

/* Closes the step with should_commit() and stores the decision in
 * *commit: 1 = step the optimizer with the averaged gradients, 0 = skip
 * it (parameters stay as they are). The step is closed whatever this
 * returns. Errors: the comm's codes (then *commit is 0), FTC_EMISUSE (no
 * open step). */
FTC_API int ftc_ddp_commit(ftc_ddp *ddp, int *commit, int64_t timeout_ms);

/* ---------------------------------------------------------------------
 * LocalSGD: replicas train alone and average their parameters every
 * sync_every steps. The average is taken on a private copy and copied
 * back only when the synchronisation commits; otherwise the parameters
 * keep their local values (as torchft's LocalSGD does).
 *
 * Call ftc_localsgd_step() after each optimizer step. LocalSGD keeps no
 * state a healing replica needs beyond the trainer's parameters and
 * optimizer state.
 * --------------------------------------------------------------------- */
typedef struct ftc_localsgd ftc_localsgd;

typedef struct ftc_localsgd_opts {
    size_t struct_size;  /* set by the _init (see ftc/base.h) */
    int sync_every;      /* >= 1; default FTC_ALGO_DEFAULT_SYNC_EVERY */
    size_t bucket_elems; /* >= 1; default FTC_ALGO_DEFAULT_BUCKET_ELEMS */
} ftc_localsgd_opts;

FTC_API void ftc_localsgd_opts_init(ftc_localsgd_opts *opts);

/* params[0..n) (n >= 1) is borrowed for the handle's lifetime and written
 * only inside ftc_localsgd_step(). The handle allocates n floats. Errors:
 * FTC_EINVAL (message names the bad field), FTC_ENOMEM. */
FTC_API int ftc_localsgd_create(const ftc_algo_comm *comm, float *params,
                                size_t n, const ftc_localsgd_opts *opts,
                                ftc_localsgd **out);
FTC_API void ftc_localsgd_destroy(ftc_localsgd *sgd);

/* Counts one inner step; on every sync_every-th it runs start_quorum,
 * averages a copy of the parameters and, if should_commit agrees, copies
 * the average into params. *outcome says which happened. A failed average
 * makes the outcome FTC_ALGO_DISCARDED and returns 0. Errors from
 * start_quorum/should_commit are returned (parameters unchanged); after a
 * start_quorum error the next call tries the synchronisation again. */
FTC_API int ftc_localsgd_step(ftc_localsgd *sgd, int *outcome,
                              int64_t timeout_ms);

/* ---------------------------------------------------------------------
 * DiLoCo and streaming DiLoCo (torchft's DiLoCo class).
 *
 * The parameter vector is split into n_fragments ranges. Each fragment has
 * a global copy (the parameters of its last committed outer step) and an
 * outer optimizer, SGD with Nesterov momentum exactly as
 * torch.optim.SGD(lr, momentum, nesterov=True, dampening=0): per element
 *     buf = buf * momentum + grad;  p = p - lr * (grad + momentum * buf)
 * with the two fused multiply-adds PyTorch's CPU kernel uses.
 *
 * Schedule, with period H = sync_every / n_fragments and delay
 * D = fragment_sync_delay; ftc_diloco_step() is called after each inner
 * optimizer step and counts local steps 1..H:
 *   local step H - D: start_quorum(); fragment f = current_step() %
 *       n_fragments (the committed step, so every replica picks the same
 *       one); pseudo-gradient g = global_f - params_f; its average is
 *       issued and overlaps the next D inner steps.
 *   local step H: wait for the average; local = params_f; params_f =
 *       global_f; should_commit(); if committed: outer step on global_f
 *       with grad g, params_f = lerp(global_f, local, alpha) (torch's
 *       lerp: alpha 0 takes the new global, 1 keeps the local values);
 *       the local step count restarts at 0.
 * A failed commit leaves fragment f at its last global value (the local
 * work on it is discarded), does not advance current_step, and so the
 * same fragment is synchronised next period. Plain DiLoCo is one fragment,
 * delay 0, alpha 0. Elements outside every fragment are never
 * synchronised.
 *
 * State a healing replica must receive (ftc_diloco_buffers): "diloco.global"
 * and "diloco.outer_momentum", each n floats, besides the trainer's own
 * parameters and inner optimizer state. They are written only inside
 * ftc_diloco_step(), after should_commit() returned, so they are stable
 * while the comm is inside start_quorum(). The parameters are not: the
 * caller's inner steps change them between start_quorum() and
 * should_commit() when the delay is > 0, so a healing source must send a
 * copy taken inside start_quorum().
 * --------------------------------------------------------------------- */
typedef struct ftc_diloco ftc_diloco;

typedef struct ftc_diloco_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* Inner steps in which every fragment is synchronised once; a
     * multiple of n_fragments, >= 1. Default FTC_ALGO_DEFAULT_SYNC_EVERY. */
    int sync_every;
    /* Number of fragments, >= 1; default 1. */
    size_t n_fragments;
    /* n_fragments ranges of the parameter vector, in bounds, non-empty and
     * non-overlapping (copied at create). NULL = n_fragments contiguous
     * ranges of near-equal size covering the vector. */
    const ftc_algo_range *fragments;
    /* Inner steps the average overlaps: 0 <= delay < sync_every /
     * n_fragments. */
    int fragment_sync_delay;
    /* Mixing of local progress into the new global: 0 <= alpha <= 1. */
    double fragment_update_alpha;
    double outer_lr;       /* > 0 and finite; default 0.7 */
    double outer_momentum; /* 0 < momentum < 1; default 0.9 */
    size_t bucket_elems;   /* >= 1; default FTC_ALGO_DEFAULT_BUCKET_ELEMS */
} ftc_diloco_opts;

FTC_API void ftc_diloco_opts_init(ftc_diloco_opts *opts);

/* params[0..n) (n >= 1) is borrowed for the handle's lifetime; its values
 * now become the first global copy. The handle allocates 2n floats plus
 * two more of the largest fragment's size. Errors: FTC_EINVAL with a
 * message naming the violated constraint, FTC_ENOMEM. */
FTC_API int ftc_diloco_create(const ftc_algo_comm *comm, float *params,
                              size_t n, const ftc_diloco_opts *opts,
                              ftc_diloco **out);
/* An average still in flight is released with wait(timeout 0). */
FTC_API void ftc_diloco_destroy(ftc_diloco *dl);

/* Counts one inner step and runs the schedule above; *outcome says
 * whether a synchronisation finished and committed. A failed average
 * gives FTC_ALGO_DISCARDED and returns 0. Errors from start_quorum or
 * should_commit are returned with the synchronisation abandoned as if it
 * had not committed (the fragment back at its global value, the period
 * restarted, *outcome FTC_ALGO_DISCARDED); the handle stays usable.
 * FTC_EMISUSE for a NULL or destroyed handle. */
FTC_API int ftc_diloco_step(ftc_diloco *dl, int *outcome, int64_t timeout_ms);

/* The buffers to register for healing: *bufs points to *count entries
 * owned by the handle. Never fails for a valid handle. */
FTC_API int ftc_diloco_buffers(const ftc_diloco *dl,
                               const ftc_algo_buffer **bufs, size_t *count);

#ifdef __cplusplus
}
#endif
#endif
