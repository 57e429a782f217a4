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

/* Operation kinds; also the `op` byte of collective messages on the wire,
 * so a rank that called a different collective is told so. */
typedef enum ftc__coll {
    FTC__ALLREDUCE = 1,
    FTC__BROADCAST = 2,
    FTC__REDUCE = 3,
    FTC__ALLGATHER = 4,
    FTC__ALLGATHERV = 5,
    FTC__REDUCE_SCATTER = 6,
    FTC__ALLTOALL = 7,
    FTC__ALLTOALLV = 8,
    FTC__GATHER = 9,
    FTC__SCATTER = 10,
    FTC__BARRIER = 11,
    FTC__SEND = 12,
    FTC__RECV = 13,
    FTC__COLL_END = 14,
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
};

/* A work with two references (caller + engine). NULL on ENOMEM. */
ftc_work *ftc__work_new(ftc_pg *pg, int coll, const ftc_pg_op_opts *o);
/* Records the result (rc 0, or an error with the formatted message) and
 * marks the work done; the caller then wakes waiters and runs the
 * callback. */
void ftc__work_finish(ftc_work *w, int rc, const char *msg);
/* Drops one reference; frees at zero. */
void ftc__work_unref(ftc_work *w);

/* True on a thread that is running a completion callback. */
bool ftc__in_callback(void);
void ftc__set_in_callback(bool on);

/* --------------------------------------------------------------- group */

#define FTC__PG_MAGIC 0x50475250U /* "PGRP" */
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
};

/* Every environment variable the pg layer reads (docs/operations.md,
 * "Environment variables"), NULL when unset. ftc__pg_env_read (pg_env.c)
 * is the layer's only getenv: it reads them when called. */
typedef struct ftc__pg_env {
    const char *host;           /* FTC_PG_HOST */
    const char *tcp_congestion; /* FTC_PG_TCP_CONGESTION */
    const char *token;          /* FTC_TOKEN */
} ftc__pg_env;
void ftc__pg_env_read(ftc__pg_env *out);

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
