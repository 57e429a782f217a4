/* The xccl backend: ftc's process-group table (ftc/plugin/backend.h)
 * over oneCCL's C API (ccl_api.h, loaded by dlopen at the first create).
 * Built into libftc beside tcp; a process without oneCCL fails
 * ftc_pg_create on it with FTC_ENOTSUP naming the library.
 *
 * oneCCL's calls block, so each group has one worker thread that runs its
 * requests in call order and completes them with ftc_pg_backend_complete;
 * the caller of ftc_pg_allreduce never blocks. What oneCCL lacks ftc
 * provides: AVG (SUM, then ftc's division in the dtype), allgatherv (an
 * alltoallv of this rank's block to everyone), gather and scatter
 * (blocking sends and receives to and from the root), barrier (a
 * one-element allreduce). oneCCL has no deadlines and no working abort: a
 * call past its deadline cannot be interrupted. ftc_work_wait still
 * returns FTC_ETIMEDOUT at the work's deadline and the group is latched
 * failed; abort fails every request that has not started. Subgroups get a
 * fresh communicator through create (oneCCL's split ignores the key).
 * Choices: docs/decisions.md, "pg: the xccl backend". */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pg/pg_int.h"
#include "pg/reduce.h"
#include "pg/xccl/ccl_api.h"

/* The tag range a rendezvous over the parent uses (backend.c). */
#define RV_TAG_BASE 0xfffff000u

typedef struct xccl {
    const ftc__ccl_api *api;
    ftc__ccl_comm *comm;
    ftc_pg *group;
    int rank, size;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ftc__op *head, **tail; /* not started, in call order (op->next) */
    ftc__op *running;      /* inside oneCCL now, NULL when none */
    /* head != NULL || stop, readable without mu: the worker polls it for
     * spin_ns after each request before sleeping on cv. */
    atomic_int ready;
    int sleeping;    /* the worker waits on cv (mu): submit signals it */
    int64_t spin_ns; /* ftc__pg_spin_ns: the worker's and waiter's polling */
    int stop;
    int failed; /* 0, or the latched failure (message in msg) */
    char msg[FTC__PG_MSG_MAX];
    pthread_t thread;
    uint8_t *scratch; /* worker only */
    size_t scratch_cap;
} xccl;

/* Latches the group's failure with mu held (the first one wins). */
static void latch(xccl *x, int rc, const char *msg)
{
    if (x->failed == 0) {
        x->failed = rc;
        snprintf(x->msg, sizeof(x->msg), "%s", msg);
    }
}

static uint8_t *scratch(xccl *x, size_t bytes)
{
    if (bytes + 8 > x->scratch_cap) {
        uint8_t *p = ftc__realloc(x->scratch, bytes + 8);
        if (p == NULL) {
            return NULL;
        }
        x->scratch = p;
        x->scratch_cap = bytes + 8;
    }
    return x->scratch;
}

/* Gather: the root receives every other rank's block in rank order;
 * scatter: the root sends them. Blocking calls, one peer at a time. */
static int rooted_p2p(xccl *x, const ftc_pg_request *d, int dt, size_t elem)
{
    const ftc__ccl_api *a = x->api;
    bool gather = d->coll == FTC_PG_COLL_GATHER;
    size_t count = gather ? d->send_count : d->recv_count;
    if (x->rank != d->root) {
        return gather
                   ? ftc__ccl_error(
                         a, a->send(d->send, count, dt, d->root, x->comm, NULL),
                         x->comm, "onecclSend (gather)")
                   : ftc__ccl_error(
                         a, a->recv(d->recv, count, dt, d->root, x->comm, NULL),
                         x->comm, "onecclRecv (scatter)");
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < x->size; i++) {
        size_t at = (size_t)i * count * elem;
        if (i == x->rank) {
            if (gather) {
                memmove((uint8_t *)d->recv + at, d->send, count * elem);
            } else {
                memmove(d->recv, (const uint8_t *)d->send + at, count * elem);
            }
        } else if (gather) {
            rc = ftc__ccl_error(
                a,
                a->recv((uint8_t *)d->recv + at, count, dt, i, x->comm, NULL),
                x->comm, "onecclRecv (gather)");
        } else {
            rc = ftc__ccl_error(a,
                                a->send((const uint8_t *)d->send + at, count,
                                        dt, i, x->comm, NULL),
                                x->comm, "onecclSend (scatter)");
        }
    }
    return rc;
}

/* allgatherv as an alltoallv: this rank's block sent to every rank. */
static int allgatherv(xccl *x, const ftc_pg_request *d, int dt, size_t elem)
{
    size_t n = (size_t)x->size, mine = d->send_count;
    uint8_t *buf = scratch(x, n * mine * elem + n * sizeof(size_t));
    if (buf == NULL) {
        return ftc__seterr(FTC_ENOMEM, "xccl allgatherv: out of memory");
    }
    size_t *counts = (size_t *)(void *)buf;
    uint8_t *copies = buf + n * sizeof(size_t);
    for (size_t i = 0; i < n; i++) {
        counts[i] = mine;
        memcpy(copies + i * mine * elem, d->send, mine * elem);
    }
    return ftc__ccl_error(x->api,
                          x->api->all_to_all_v(copies, counts, d->recv,
                                               d->send_counts, dt, x->comm,
                                               NULL),
                          x->comm, "onecclAllToAllV (allgatherv)");
}

/* One request, on the worker. */
static int run(xccl *x, const ftc_pg_request *d)
{
    const ftc__ccl_api *a = x->api;
    ftc__ccl_comm *c = x->comm;
    int dt = ftc__ccl_dtype(d->dtype);
    int op = ftc__ccl_op(d->op == FTC_OP_AVG ? FTC_OP_SUM : d->op);
    size_t elem = ftc_dtype_size(d->dtype);
    size_t n = (size_t)x->size;
    int rc = 0;
    switch (d->coll) {
    case FTC_PG_COLL_ALLREDUCE:
        rc = ftc__ccl_error(a,
                            a->all_reduce((void *)(uintptr_t)d->send, d->recv,
                                          d->send_count, dt, op, c, NULL),
                            c, "onecclAllReduce");
        break;
    case FTC_PG_COLL_BROADCAST:
        rc = ftc__ccl_error(
            a,
            a->broadcast(d->recv, d->recv, d->recv_count, dt, d->root, c, NULL),
            c, "onecclBroadcast");
        break;
    case FTC_PG_COLL_REDUCE: {
        /* Non-roots get a scratch result: oneCCL may write there. */
        void *out = d->recv;
        if (x->rank != d->root) {
            out = scratch(x, d->send_count * elem);
            if (out == NULL) {
                return ftc__seterr(FTC_ENOMEM, "xccl reduce: out of memory");
            }
        }
        rc = ftc__ccl_error(
            a, a->reduce(d->send, out, d->send_count, dt, op, d->root, c, NULL),
            c, "onecclReduce");
        break;
    }
    case FTC_PG_COLL_ALLGATHER:
        rc = ftc__ccl_error(
            a, a->all_gather(d->send, d->recv, d->send_count, dt, c, NULL), c,
            "onecclAllGather");
        break;
    case FTC_PG_COLL_ALLGATHERV:
        rc = allgatherv(x, d, dt, elem);
        break;
    case FTC_PG_COLL_REDUCE_SCATTER:
        rc = ftc__ccl_error(
            a,
            a->reduce_scatter(d->send, d->recv, d->recv_count, dt, op, c, NULL),
            c, "onecclReduceScatter");
        break;
    case FTC_PG_COLL_ALLTOALL:
        rc = ftc__ccl_error(
            a, a->all_to_all(d->send, d->recv, d->send_count / n, dt, c, NULL),
            c, "onecclAllToAll");
        break;
    case FTC_PG_COLL_ALLTOALLV:
        rc = ftc__ccl_error(a,
                            a->all_to_all_v(d->send, d->send_counts, d->recv,
                                            d->recv_counts, dt, c, NULL),
                            c, "onecclAllToAllV");
        break;
    case FTC_PG_COLL_GATHER:
    case FTC_PG_COLL_SCATTER:
        rc = rooted_p2p(x, d, dt, elem);
        break;
    case FTC_PG_COLL_BARRIER: {
        int32_t *one = (int32_t *)(void *)scratch(x, sizeof(int32_t));
        if (one == NULL) {
            return ftc__seterr(FTC_ENOMEM, "xccl barrier: out of memory");
        }
        *one = 1;
        rc = ftc__ccl_error(
            a,
            a->all_reduce(one, one, 1, FTC__CCL_INT32, FTC__CCL_SUM, c, NULL),
            c, "onecclAllReduce (barrier)");
        break;
    }
    case FTC_PG_COLL_SEND:
        rc = ftc__ccl_error(
            a, a->send(d->send, d->send_count, dt, d->root, c, NULL), c,
            "onecclSend");
        break;
    case FTC_PG_COLL_RECV:
        rc = ftc__ccl_error(
            a, a->recv(d->recv, d->recv_count, dt, d->root, c, NULL), c,
            "onecclRecv");
        break;
    default:
        rc = ftc__seterr(FTC_ENOTSUP, "xccl: collective %d", d->coll);
        break;
    }
    if (rc == 0 && d->op == FTC_OP_AVG &&
        (d->coll != FTC_PG_COLL_REDUCE || x->rank == d->root)) {
        ftc__reduce_avg_finish(d->recv, d->recv_count, d->dtype, x->size);
    }
    return rc;
}

/* Polls for the next request for up to spin_ns before the worker sleeps
 * on cv: a caller that submits again within that time is not woken
 * through the scheduler twice (the wake-up of the worker and its own).
 * Yields between looks: on a host with fewer cores than busy threads the
 * poller gives way (oneCCL's threads run with CCL_YIELD=sched_yield
 * there too). */
static void poll_ready(xccl *x)
{
    if (x->spin_ns <= 0) {
        return;
    }
    int64_t end = ftc__now_ns() + x->spin_ns;
    while (!atomic_load_explicit(&x->ready, memory_order_relaxed) &&
           ftc__now_ns() < end) {
        sched_yield();
    }
}

static void *worker(void *arg)
{
    xccl *x = arg;
    pthread_mutex_lock(&x->mu);
    for (;;) {
        while (x->head == NULL && !x->stop) {
            x->sleeping = 1;
            pthread_cond_wait(&x->cv, &x->mu);
            x->sleeping = 0;
        }
        ftc__op *op = x->head;
        if (op == NULL) {
            break;
        }
        x->head = op->next;
        if (x->head == NULL) {
            x->tail = &x->head;
            atomic_store_explicit(&x->ready, x->stop, memory_order_relaxed);
        }
        int rc = x->failed;
        char msg[FTC__PG_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", x->msg);
        x->running = rc == 0 ? op : NULL;
        pthread_mutex_unlock(&x->mu);
        if (rc == 0) {
            ftc__clearerr();
            rc = run(x, &op->desc);
            if (rc != 0) {
                snprintf(msg, sizeof(msg), "xccl %s (seq %llu): %s",
                         ftc__coll_name(op->coll), (unsigned long long)op->seq,
                         ftc_last_error());
            }
        }
        pthread_mutex_lock(&x->mu);
        x->running = NULL;
        if (rc != 0) {
            /* oneCCL's state after a failed call is unknown. */
            latch(x, rc, msg);
        }
        pthread_mutex_unlock(&x->mu);
        ftc_pg_backend_complete(op, rc, rc != 0 ? msg : NULL);
        poll_ready(x);
        pthread_mutex_lock(&x->mu);
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* -------------------------------------------------------------- create */

static bool loopback(const char *host)
{
    return host != NULL &&
           (strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
            strcmp(host, "localhost") == 0);
}

/* A subgroup's communicator: member 0's unique id over the parent, then
 * every member's arrival reported to member 0 and its "all here" passed
 * back, so that nobody enters onecclCommInitRank (which has no deadline)
 * for a member that never comes. */
static int comm_over_parent(const ftc_pg_backend_create_args *a,
                            const ftc__ccl_api *api, ftc__ccl_unique_id *id,
                            ftc__ccl_comm **comm)
{
    ftc_pg_backend_rendezvous *rv = a->rendezvous;
    int rc = 0;
    if (a->rank == 0) {
        rc = ftc__ccl_error(api, api->get_unique_id(id), NULL,
                            "onecclGetUniqueId");
    }
    if (rc == 0) {
        rc = ftc_pg_backend_exchange(rv, "ccl_uid", id, sizeof(*id),
                                     a->deadline_ns);
    }
    uint32_t tag = RV_TAG_BASE + (rv->tag++ & 0xfffu);
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.timeout_ms = ftc__deadline_left_ms((ftc__deadline){a->deadline_ns});
    o.timeout_ms = o.timeout_ms < 0 ? 0 : o.timeout_ms;
    uint8_t here = 1;
    ftc_tensor t = ftc_tensor_cpu(&here, 1, FTC_DTYPE_U8);
    for (int i = 1; rc == 0 && i < (a->rank == 0 ? a->size : 2); i++) {
        ftc_work *w = NULL;
        rc = a->rank == 0
                 ? ftc_pg_recv(rv->parent, &t, rv->members[i], tag, &o, &w)
                 : ftc_pg_send(rv->parent, &t, rv->members[0], tag, &o, &w);
        if (rc == 0) {
            rc = ftc_work_wait(w, o.timeout_ms);
            ftc_work_release(w);
        }
        if (rc != 0) {
            ftc__adderr(rc, "xccl: member %d of the new group did not arrive",
                        a->rank == 0 ? i : 0);
        }
    }
    if (rc == 0) {
        rc = ftc_pg_backend_exchange(rv, "ccl_all_here", &here, 1,
                                     a->deadline_ns);
    }
    if (rc == 0) {
        rc = ftc__ccl_error(
            api, api->comm_init_rank(comm, (size_t)a->size, *id, a->rank), NULL,
            "onecclCommInitRank");
    }
    return rc;
}

/* The process's oneCCL, its environment set from this group's shape the
 * first time (a later group changes nothing: oneCCL read it once). */
static int load(const ftc_pg_opts *opts, int rank, int size,
                const ftc__ccl_api **api)
{
    ftc__ccl_env_hint hint = {.local_rank = rank,
                              .local_size = size,
                              .loopback = loopback(opts->host)};
    int rc = ftc__ccl_load(&hint, api);
    if (rc != 0) {
        ftc__adderr(rc, "pg backend 'xccl'");
    }
    return rc;
}

int ftc__xccl_prepare(const ftc_pg_opts *opts, int rank, int size)
{
    const ftc__ccl_api *api = NULL;
    return load(opts, rank, size, &api);
}

static int xccl_create(const ftc_pg_backend_create_args *a, void **impl)
{
    *impl = NULL;
    const ftc__ccl_api *api = NULL;
    int rc = load(a->opts, a->rank, a->size, &api);
    if (rc != 0) {
        return rc;
    }
    xccl *x = ftc__calloc(1, sizeof(*x));
    ftc__ccl_unique_id *id = ftc__calloc(1, sizeof(*id));
    if (x == NULL || id == NULL) {
        ftc__free(x);
        ftc__free(id);
        return ftc__seterr(FTC_ENOMEM, "xccl: out of memory");
    }
    x->api = api;
    x->group = a->group;
    x->rank = a->rank;
    x->size = a->size;
    x->tail = &x->head;
    /* Every rank on this host, as the oneCCL environment assumes
     * (local_size = size in load). */
    x->spin_ns = ftc__pg_spin_ns(a->opts, a->size);
    atomic_init(&x->ready, 0);
    if (a->store != NULL) {
        /* ftc_pg_create: ccl_api.c's exchange, which also waits for every
         * rank's arrival key before init. */
        rc = ftc__ccl_comm_create(api, a->store, a->prefix, a->rank, a->size,
                                  (ftc__deadline){a->deadline_ns}, &x->comm);
    } else {
        rc = comm_over_parent(a, api, id, &x->comm);
    }
    ftc__free(id);
    if (rc != 0) {
        ftc__free(x);
        return rc;
    }
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    if (pthread_create(&x->thread, NULL, worker, x) != 0) {
        ftc__ccl_comm_destroy(api, x->comm);
        pthread_mutex_destroy(&x->mu);
        pthread_cond_destroy(&x->cv);
        ftc__free(x);
        return ftc__seterr(FTC_ENOMEM, "xccl: cannot start the worker");
    }
    *impl = x;
    return 0;
}

/* ------------------------------------------------------------ the rest */

static int xccl_submit(void *impl, ftc_pg_backend_request *request,
                       const ftc_pg_request *desc)
{
    xccl *x = impl;
    (void)desc;
    pthread_mutex_lock(&x->mu);
    int rc = x->failed;
    if (rc == 0) {
        request->next = NULL;
        *x->tail = request;
        x->tail = &request->next;
        atomic_store_explicit(&x->ready, 1, memory_order_relaxed);
        if (x->sleeping) {
            pthread_cond_signal(&x->cv);
        }
    } else {
        ftc__seterr(rc, "%s", x->msg);
    }
    pthread_mutex_unlock(&x->mu);
    return rc;
}

static int xccl_check_request(const ftc_pg_request *desc)
{
    if (desc->coll == FTC_PG_COLL_RECV && desc->root == FTC_PG_ANY_SOURCE) {
        return ftc__seterr(FTC_ENOTSUP,
                           "xccl backend: recv from FTC_PG_ANY_SOURCE "
                           "(oneCCL receives from a named peer only)");
    }
    return 0;
}

/* Takes the requests that have not started (mu held). */
static ftc__op *take_queue(xccl *x)
{
    ftc__op *q = x->head;
    x->head = NULL;
    x->tail = &x->head;
    atomic_store_explicit(&x->ready, x->stop, memory_order_relaxed);
    return q;
}

static void fail_all(ftc__op *q, int rc, const char *msg)
{
    while (q != NULL) {
        ftc__op *next = q->next;
        ftc_pg_backend_complete(q, rc, msg);
        q = next;
    }
}

static void xccl_abort(void *impl)
{
    xccl *x = impl;
    pthread_mutex_lock(&x->mu);
    latch(x, FTC_ECANCELED,
          "xccl: the group was aborted (a call already inside oneCCL "
          "cannot be interrupted and completes when oneCCL returns)");
    ftc__op *q = take_queue(x);
    char msg[FTC__PG_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", x->msg);
    int rc = x->failed;
    pthread_mutex_unlock(&x->mu);
    fail_all(q, rc, msg);
}

static int xccl_status(void *impl)
{
    xccl *x = impl;
    pthread_mutex_lock(&x->mu);
    int rc = x->failed;
    if (rc != 0) {
        ftc__seterr(rc, "%s", x->msg);
    }
    pthread_mutex_unlock(&x->mu);
    return rc;
}

/* Waits until the earlier of deadline_ns and the work's own deadline: a
 * call stuck in oneCCL still returns FTC_ETIMEDOUT in time, and the group
 * is latched failed (the call itself cannot be stopped). */
static int xccl_wait(void *impl, ftc_work *w, int64_t deadline_ns)
{
    xccl *x = impl;
    ftc__op *found = NULL;
    int64_t own = INT64_MAX, timeout_ms = 0;
    uint64_t seq = 0;
    int coll = 0;
    pthread_mutex_lock(&x->mu);
    for (ftc__op *o = x->running != NULL ? x->running : x->head; o != NULL;
         o = o == x->running ? x->head : o->next) {
        if (o->work == w) {
            found = o;
            own = o->deadline.ns;
            timeout_ms = o->timeout_ms;
            seq = o->seq;
            coll = o->coll;
            break;
        }
    }
    pthread_mutex_unlock(&x->mu);
    bool own_first = found != NULL && own < deadline_ns;
    int64_t until = own_first ? own : deadline_ns;
    /* Polls the work for up to spin_ns before sleeping on the group's
     * done_cv: a short call then returns without a wake-up. */
    if (x->spin_ns > 0) {
        int64_t end = ftc__now_ns() + x->spin_ns;
        end = end < until ? end : until;
        while (!atomic_load_explicit(&w->done, memory_order_acquire) &&
               ftc__now_ns() < end) {
            sched_yield();
        }
    }
    int rc = ftc__pg_wait_completion(x->group, w, until);
    if (rc == FTC_ETIMEDOUT && own_first) {
        char msg[FTC__PG_MSG_MAX];
        snprintf(msg, sizeof(msg),
                 "xccl %s (seq %llu) passed its deadline (%lld ms); oneCCL "
                 "cannot interrupt a call, so the group is unusable: abort "
                 "and rebuild it",
                 ftc__coll_name(coll), (unsigned long long)seq,
                 (long long)timeout_ms);
        pthread_mutex_lock(&x->mu);
        latch(x, FTC_ETIMEDOUT, msg);
        pthread_mutex_unlock(&x->mu);
        rc = ftc__seterr(FTC_ETIMEDOUT, "%s", msg);
    }
    return rc;
}

static void xccl_destroy(void *impl)
{
    xccl *x = impl;
    if (x == NULL) {
        return;
    }
    xccl_abort(x);
    pthread_mutex_lock(&x->mu);
    x->stop = 1;
    atomic_store_explicit(&x->ready, 1, memory_order_relaxed);
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    /* Blocks while a call is stuck inside oneCCL (a dead peer): see the
     * Baby process groups issue. */
    pthread_join(x->thread, NULL);
    ftc__ccl_comm_destroy(x->api, x->comm);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    ftc__free(x->scratch);
    ftc__free(x);
}

#define ALL_BITS(n) ((uint32_t)((1ull << (n)) - 1u))

const ftc_pg_backend ftc__xccl_backend = {
    .abi_version = FTC_PG_BACKEND_ABI_VERSION,
    .struct_size = sizeof(ftc_pg_backend),
    .name = "xccl",
    /* Every collective: allgatherv, gather, scatter and barrier composed
     * (above). */
    .colls = ALL_BITS(FTC_PG_COLL_COUNT) & ~1u,
    .dtypes = FTC_PG_BIT(FTC_DTYPE_F32) | FTC_PG_BIT(FTC_DTYPE_F64) |
              FTC_PG_BIT(FTC_DTYPE_F16) | FTC_PG_BIT(FTC_DTYPE_BF16) |
              FTC_PG_BIT(FTC_DTYPE_I8) | FTC_PG_BIT(FTC_DTYPE_U8) |
              FTC_PG_BIT(FTC_DTYPE_I32) | FTC_PG_BIT(FTC_DTYPE_I64),
    .ops = FTC_PG_BIT(FTC_OP_SUM) | FTC_PG_BIT(FTC_OP_PROD) |
           FTC_PG_BIT(FTC_OP_MIN) | FTC_PG_BIT(FTC_OP_MAX) |
           FTC_PG_BIT(FTC_OP_AVG),
    .devices = FTC_PG_BIT(FTC_DEVICE_CPU),
    .create = xccl_create,
    .submit = xccl_submit,
    .wait = xccl_wait,
    .abort = xccl_abort,
    .status = xccl_status,
    .destroy = xccl_destroy,
    .check_request = xccl_check_request,
    /* No failed_peers: oneCCL reports a failure, not who caused it, so an
     * xccl group blames nobody (ftc_pg_failed_peers returns 0). */
};
