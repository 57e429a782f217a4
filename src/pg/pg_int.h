/* The pg layer inside: the group handle over a backend table, validated
 * operation requests, and work items. Backends (tcp now; shared memory,
 * NCCL later) fill the published table ftc_pg_backend
 * (include/ftc/plugin/backend.h). */
#ifndef FTC_PG_INT_H
#define FTC_PG_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ftc/pg.h"
#include "ftc/plugin/backend.h"

/* Operation kinds: the published ftc_pg_coll numbers; also the `op` byte
 * of collective messages on the wire, so a rank that called a different
 * collective is told so. */
typedef enum ftc__coll {
    FTC__ALLREDUCE = FTC_PG_COLL_ALLREDUCE,
    FTC__BROADCAST = FTC_PG_COLL_BROADCAST,
    FTC__REDUCE = FTC_PG_COLL_REDUCE,
    FTC__ALLGATHER = FTC_PG_COLL_ALLGATHER,
    FTC__ALLGATHERV = FTC_PG_COLL_ALLGATHERV,
    FTC__REDUCE_SCATTER = FTC_PG_COLL_REDUCE_SCATTER,
    FTC__ALLTOALL = FTC_PG_COLL_ALLTOALL,
    FTC__ALLTOALLV = FTC_PG_COLL_ALLTOALLV,
    FTC__GATHER = FTC_PG_COLL_GATHER,
    FTC__SCATTER = FTC_PG_COLL_SCATTER,
    FTC__BARRIER = FTC_PG_COLL_BARRIER,
    FTC__SEND = FTC_PG_COLL_SEND,
    FTC__RECV = FTC_PG_COLL_RECV,
    FTC__COLL_END = FTC_PG_COLL_COUNT,
} ftc__coll;

const char *ftc__coll_name(int coll);

/* A validated request; to backends it is the opaque
 * ftc_pg_backend_request. Buffers are borrowed from the caller; the count
 * arrays of the v variants are copied (owned, freed with the op). */
typedef struct ftc_pg_backend_request {
    int coll;
    int dtype;
    size_t elem; /* bytes per element */
    int op;      /* ftc_op, reducing collectives */
    int root;    /* rooted collectives; peer for send/recv */
    uint32_t tag;
    int algo;          /* FTC_ALGO_*, resolved per call or group-wide */
    const uint8_t *in; /* NULL where not used */
    uint8_t *out;
    size_t count;       /* elements: the collective's per-rank unit */
    size_t *counts;     /* allgatherv, alltoallv (send counts) */
    size_t *rcounts;    /* alltoallv receive counts */
    uint64_t seq;       /* per-group collective sequence number */
    int64_t timeout_ms; /* resolved, for messages */
    ftc__deadline deadline;
    ftc_work *work;
    struct ftc_pg_backend_request *next;
    ftc_pg_request desc; /* what a backend plugin reads */
} ftc__op;

void ftc__op_free(ftc__op *op);

/* ---------------------------------------------------------------- work */

/* Longest failure message a group or work keeps. */
#define FTC__PG_MSG_MAX 480

#define FTC__WORK_MAGIC 0x574f524bU /* "WORK" */

struct ftc_work {
    uint32_t magic;
    atomic_int refs; /* the caller's and the engine's */
    atomic_int done; /* set (release) once rc and msg are final */
    int rc;
    int source; /* recv: the sender */
    int coll;
    char msg[FTC__PG_MSG_MAX];
    ftc_work_fn cb;
    void *cb_arg;
    ftc_pg *pg; /* for waiting; valid while not done */
    struct ftc_work *cb_next;
    /* Tracing (FTC_TRACE): the submission time (0: not traced) and what
     * the event says, recorded when the work finishes. */
    int64_t trace_t0, trace_step;
    uint64_t trace_seq;
    size_t trace_bytes;
    int trace_dtype, trace_op, trace_device;
};

/* A work with two references (caller + engine). NULL on ENOMEM. */
ftc_work *ftc__work_new(ftc_pg *pg, int coll, const ftc_pg_op_opts *o);
/* Records the result (rc 0, or an error with the formatted message) and
 * marks the work done; the caller then wakes waiters and runs the
 * callback. */
void ftc__work_finish(ftc_work *w, int rc, const char *msg);
/* Stamps w with op's submission for the trace, when tracing: the span
 * runs from here to ftc__work_finish. */
void ftc__work_trace_submit(ftc_work *w, const ftc__op *op);
/* Drops one reference; frees at zero. */
void ftc__work_unref(ftc_work *w);

/* True on a thread that is running a completion callback. */
bool ftc__in_callback(void);
void ftc__set_in_callback(bool on);

/* --------------------------------------------------------------- group */

#define FTC__PG_MAGIC 0x50475250U /* "PGRP" */
/* Longest backend name, with its NUL. */
#define FTC__PG_BACKEND_NAME_MAX 32
/* Longest TCP congestion control name, with its NUL (the kernel's
 * TCP_CA_NAME_MAX). */
#define FTC__CC_NAME_MAX 16

struct ftc_pg {
    uint32_t magic;
    int rank;
    int size;
    ftc_pg_opts opts; /* resolved defaults; host copied */
    char host[FTC_HOST_MAX];
    char *token; /* opts.token (or FTC_TOKEN), owned; NULL: none */
    /* opts.tcp_congestion (or FTC_PG_TCP_CONGESTION), which then points
     * here; opts.tcp_congestion NULL: automatic. */
    char congestion[FTC__CC_NAME_MAX];
    int *parent_ranks;         /* size entries */
    const ftc_pg_backend *ops; /* the backend's table */
    void *impl;
    char backend[FTC__PG_BACKEND_NAME_MAX]; /* opts.backend points here */
    char *prefix; /* the rendezvous prefix, owned (subgroups derive theirs) */
    /* Submission order: seq is assigned and the request submitted under
     * submit_mu, so a backend sees collectives in seq order. */
    pthread_mutex_t submit_mu;
    uint64_t seq;
    atomic_int aborted; /* ftc_pg_abort was called: refuse new calls */
    int sync_ready;     /* the mutexes below and submit_mu are initialised */
    /* Waiting for ftc_pg_backend_complete (backends without a wait slot):
     * a work's done flag is set under done_mu and done_cv broadcast. */
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;
};

/* The registry of backends (backend.c): "tcp" and "xccl" built in, any other
 * name loaded from libftc_pg_<name>.so or FTC_PG_<NAME>_BACKEND on first use.
 * *out is the checked copy of the table, valid for the process's life.
 * FTC_EINVAL for a malformed name, FTC_ENOTSUP naming the library, the
 * symbol and the versions when it cannot be loaded. */
int ftc__pg_backend_get(const char *name, const ftc_pg_backend **out);
/* The backend a group uses: opts->backend, else FTC_PG_BACKEND, else
 * fallback (the parent's for a subgroup, "tcp" for ftc_pg_create). */
const char *ftc__pg_backend_choose(const ftc_pg_opts *opts,
                                   const char *fallback);
/* The built-in backends' tables: tcp, and xccl over oneCCL (loaded by
 * dlopen at its first create, src/pg/xccl/xccl.c). */
extern const ftc_pg_backend ftc__tcp_backend;
extern const ftc_pg_backend ftc__xccl_backend;
/* Loads oneCCL (and sets its environment) for a group of size with this
 * rank, so that ftc_pg_create fails before publishing anything when it
 * is missing: FTC_ENOTSUP naming the library. */
int ftc__xccl_prepare(const ftc_pg_opts *opts, int rank, int size);

/* Where the members of a new group meet (ftc_pg_backend_exchange). */
struct ftc_pg_backend_rendezvous {
    ftc_store_client *store; /* ftc_pg_create: store and prefix */
    const char *prefix;
    ftc_pg *parent;     /* a subgroup: the parent group and this group's */
    const int *members; /* members' parent ranks (size entries) */
    int rank, size;
    uint32_t tag; /* parent p2p tag of the next exchange */
    /* size entries once a member is blamed (ftc_pg_backend_blame), owned,
     * freed by ftc__pg_rendezvous_done; NULL while nobody is. */
    bool *blamed;
};

/* Ends a rendezvous: for ftc_pg_create (rv->parent NULL), its outcome rc
 * and blame set become this thread's ftc_pg_create_failed_peers (nobody
 * when rc is 0); then rv's blame set is freed. */
void ftc__pg_rendezvous_done(ftc_pg_backend_rendezvous *rv, int rc);

/* Writes the ranks blamed[r] marks (size entries; NULL: none), ascending,
 * at most cap of them, into ranks; returns how many there are. */
int ftc__pg_blame_list(const bool *blamed, int size, int *ranks, int cap);

/* Builds a group on the named backend: allocates and initialises the
 * handle (ftc__pg_init), calls the table's create with the rendezvous
 * and returns the group. On failure nothing is left. */
int ftc__pg_build(const ftc_pg_backend *be, ftc_pg_backend_rendezvous *rv,
                  int rank, int size, const int *parent_ranks,
                  uint64_t group_id, const ftc_pg_opts *opts,
                  int64_t deadline_ns, ftc_pg **out);

/* Waits for w on a group whose backend has no wait slot. */
int ftc__pg_wait_completion(ftc_pg *pg, ftc_work *w, int64_t deadline_ns);

/* How long a waiter polls before sleeping when spin_us is automatic and
 * every local rank has a core (docs/decisions.md). */
#define FTC__SPIN_DEFAULT_US 50

/* The pg layer's polling policy, in ns (0: never poll): opts->spin_us
 * when set, else FTC__SPIN_DEFAULT_US when local_ranks (this host's
 * ranks of the group) fit this process's cores, else 0: with more ranks
 * than cores a poller steals the time of the rank it waits for. */
int64_t ftc__pg_spin_ns(const ftc_pg_opts *opts, int local_ranks);

/* Every environment variable the pg layer reads (docs/operations.md,
 * "Environment variables"), NULL when unset. ftc__pg_env_read (pg_env.c)
 * is the layer's only getenv: it reads them when called. */
typedef struct ftc__pg_env {
    const char *host;           /* FTC_PG_HOST */
    const char *tcp_congestion; /* FTC_PG_TCP_CONGESTION */
    const char *token;          /* FTC_TOKEN */
    const char *backend;        /* FTC_PG_BACKEND */
    const char *protect;        /* FTC_PG_PROTECT */
    const char *transport;      /* FTC_PG_TRANSPORT */
    const char *host_id;        /* FTC_PG_HOST_ID */
    const char *baby_helper;    /* FTC_PG_BABY_HELPER */
    const char *baby_hang_ms;   /* FTC_PG_BABY_HANG_MS */
} ftc__pg_env;
void ftc__pg_env_read(ftc__pg_env *out);

/* This host's identity as FTC_PG_HOST_ID names it (tests make several
 * "hosts" of one machine with it): at most FTC__PG_HOST_ID_MAX - 1 bytes,
 * control characters and '|' replaced by '_'; "" when unset. */
#define FTC__PG_HOST_ID_MAX 32
void ftc__pg_host_id(char out[FTC__PG_HOST_ID_MAX]);

/* This rank's host as the hierarchical collectives see it: a 64-bit hash
 * of the kernel's boot id (the host name where it cannot be read), the
 * network namespace and ftc__pg_host_id. Ranks of one machine and one
 * network namespace with equal FTC_PG_HOST_IDs share it, whatever
 * addresses they listen on. Never 0. */
uint64_t ftc__pg_host_key(void);
/* FTC_PG_<NAME>_BACKEND for backend name (upper-cased), NULL when unset. */
const char *ftc__pg_backend_path_env(const char *name);

/* Fills a new group's common fields: opts resolved (defaults, ranges),
 * parent ranks copied (NULL: identity). The backend sets ops and impl. */
/* Lays in (NULL: none) over the defaults into out and checks it. */
int ftc__pg_resolve_opts(ftc_pg_opts *out, const ftc_pg_opts *in);
int ftc__pg_init(ftc_pg *pg, int rank, int size, const int *parent_ranks,
                 const ftc_pg_opts *opts);
/* Frees what ftc__pg_init allocated and pg itself (not the backend). */
void ftc__pg_free(ftc_pg *pg);

/* 0 if algo (FTC_ALGO_*) applies to the collective, else FTC_EINVAL. */
int ftc__sched_validate(int coll, int algo);

#endif
