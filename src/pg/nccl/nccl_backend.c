/* "nccl": the process-group backend over NVIDIA NCCL, built as the plugin
 * module libftc_pg_nccl.so from the public headers (ftc/plugin/backend.h)
 * and the NCCL loader (nccl_api.h). Neither NCCL nor the CUDA runtime is
 * linked: both are dlopen'd when the pg registry first asks for "nccl".
 *
 * - The entry refuses (no table) when NCCL cannot be loaded or the cuda
 *   device kind is unavailable, with the reason in ftc_pg_backend_error():
 *   the pg layer then fails ftc_pg_create with FTC_ENOTSUP carrying that
 *   text before anything is published in the store.
 * - create: member 0's ncclGetUniqueId through ftc_pg_backend_exchange,
 *   then a non-blocking ncclCommInitRankConfig on the calling thread's
 *   current CUDA device, polled until the deadline (ncclCommAbort and
 *   FTC_ETIMEDOUT after it).
 * - submit: device (or managed) memory only, enqueued on the request's
 *   stream, else the group's own; a CUDA event recorded after the call is
 *   queued to a watcher thread that polls it and ncclCommGetAsyncError
 *   and completes works in call order. An async error, a passed deadline
 *   or abort aborts the communicator and fails every pending work. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftc/plugin/backend.h"
#include "pg/nccl/nccl_api.h"

/* The CUDA runtime calls the backend makes itself (streams, events, a
 * scratch buffer for barrier). */
#define RT_SYMBOLS(X)                                                          \
    X(cudaGetErrorString)                                                      \
    X(cudaGetDevice)                                                           \
    X(cudaSetDevice)                                                           \
    X(cudaStreamCreateWithFlags)                                               \
    X(cudaStreamDestroy)                                                       \
    X(cudaEventCreateWithFlags)                                                \
    X(cudaEventRecord)                                                         \
    X(cudaEventQuery)                                                          \
    X(cudaEventDestroy)                                                        \
    X(cudaMalloc)                                                              \
    X(cudaFree)

#define RT_DECLARE(name) __typeof__(name) *name;
static struct {
    void *lib;
    RT_SYMBOLS(RT_DECLARE)
} rt;
#undef RT_DECLARE

static ftc__nccl_api api;

/* Why the entry returned no table (ftc_pg_backend_error). */
static _Thread_local char entry_error[640];

/* One queued work: its request and the event recorded after it. */
typedef struct pending {
    ftc_pg_backend_request *req;
    cudaEvent_t ev;
    int64_t deadline_ns;
    struct pending *next;
} pending;

typedef struct group {
    ncclComm_t comm;
    cudaStream_t stream; /* the group's own */
    void *scratch;       /* 4 device bytes: barrier */
    int dev, rank, size;
    pthread_mutex_t comm_mu; /* one NCCL call on comm at a time */
    pthread_mutex_t mu;      /* the queue and the failure latch */
    pthread_cond_t cv;
    pending *head, **tail;
    int failed, stop;
    char msg[512];
    pthread_t watcher;
} group;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleeps *us microseconds and doubles it up to 1 ms: polling backoff. */
static void backoff(long *us)
{
    struct timespec ts = {0, *us * 1000};
    nanosleep(&ts, NULL);
    *us = *us < 1000 ? *us * 2 : 1000;
}

static int load_runtime(char *msg, size_t cap)
{
    if (rt.lib != NULL) {
        return 0;
    }
    const char *env = getenv("FTC_CUDA_RUNTIME");
    const char *names[] = {env, "libcudart.so.13", "libcudart.so.12"};
    void *lib = NULL;
    for (size_t i = env != NULL && env[0] != '\0' ? 0 : 1; lib == NULL && i < 3;
         i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    }
    if (lib == NULL) {
        snprintf(msg, cap,
                 "nccl: cannot load the CUDA runtime (libcudart.so.13 or "
                 ".12; FTC_CUDA_RUNTIME): %s",
                 dlerror());
        return FTC_ENOTSUP;
    }
#define RT_RESOLVE(name)                                                       \
    if ((*(void **)&rt.name = dlsym(lib, #name)) == NULL) {                    \
        snprintf(msg, cap, "nccl: the CUDA runtime lacks %s", #name);          \
        memset(&rt, 0, sizeof(rt));                                            \
        return FTC_ENOTSUP;                                                    \
    }
    RT_SYMBOLS(RT_RESOLVE)
#undef RT_RESOLVE
    rt.lib = lib;
    return 0;
}

static int cuda_fail(const char *call, cudaError_t err)
{
    return ftc_pg_backend_seterr(FTC_ESYS, "nccl: %s: %s (%d)", call,
                                 rt.cudaGetErrorString(err), (int)err);
}

/* NCCL's result as an FTC code with ftc_last_error set (0 or
 * FTC__NCCL_IN_PROGRESS pass through). */
static int nccl_check(ncclResult_t r, const char *call, ncclComm_t comm)
{
    char msg[512];
    int rc = ftc__nccl_result(&api, r, call, comm, msg, sizeof(msg));
    return rc < 0 ? ftc_pg_backend_seterr(rc, "nccl: %s", msg) : rc;
}

/* ----------------------------------------------------------- the latch */

/* Latches rc with msg (the first failure wins) and aborts the
 * communicator; the watcher then fails every pending work with it. */
static void fail_group(group *G, int rc, const char *msg)
{
    pthread_mutex_lock(&G->mu);
    if (G->failed == 0) {
        snprintf(G->msg, sizeof(G->msg), "%s", msg);
        __atomic_store_n(&G->failed, rc, __ATOMIC_RELEASE);
    }
    pthread_cond_broadcast(&G->cv);
    pthread_mutex_unlock(&G->mu);
    /* A submit polling a non-blocking call sees the latch and lets go. */
    pthread_mutex_lock(&G->comm_mu);
    if (G->comm != NULL) {
        api.ncclCommAbort(G->comm);
        G->comm = NULL;
    }
    pthread_mutex_unlock(&G->comm_mu);
}

/* --------------------------------------------------------- the watcher */

/* Fails every queued work with the latched failure; G->mu held, released
 * around the completions. Only the watcher takes works off the queue. */
static void drain(group *G)
{
    while (G->head != NULL) {
        pending *p = G->head;
        G->head = p->next;
        char msg[512];
        int rc = G->failed;
        snprintf(msg, sizeof(msg), "%s", G->msg);
        pthread_mutex_unlock(&G->mu);
        rt.cudaEventDestroy(p->ev); /* released once the device is done */
        ftc_pg_backend_complete(p->req, rc, msg);
        free(p);
        pthread_mutex_lock(&G->mu);
    }
    G->tail = &G->head;
    pthread_cond_broadcast(&G->cv);
}

/* One look at the oldest work p (G->mu not held): 1 if its event has
 * fired, 0 if not yet, or a failure (latched here). */
static int poll_once(group *G, pending *p)
{
    int rc = 0;
    if (p != NULL) {
        cudaError_t e = rt.cudaEventQuery(p->ev);
        if (e == cudaSuccess) {
            return 1;
        }
        if (e != cudaErrorNotReady) {
            rc = cuda_fail("cudaEventQuery", e);
        } else if (p->deadline_ns != INT64_MAX && now_ns() > p->deadline_ns) {
            rc = ftc_pg_backend_seterr(FTC_ETIMEDOUT,
                                       "nccl: %s passed its deadline on the "
                                       "device; the communicator was aborted",
                                       "a collective");
        }
    }
    if (rc == 0) {
        pthread_mutex_lock(&G->comm_mu);
        ncclResult_t async = ncclSuccess;
        if (G->comm != NULL) {
            api.ncclCommGetAsyncError(G->comm, &async);
        }
        if (async != ncclSuccess && async != ncclInProgress) {
            rc = nccl_check(async, "ncclCommGetAsyncError", G->comm);
        }
        pthread_mutex_unlock(&G->comm_mu);
    }
    if (rc != 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ftc_last_error());
        fail_group(G, rc, msg);
    }
    return rc;
}

/* Polls the oldest work's event and the communicator's async error;
 * completes works in call order. */
static void *watch(void *arg)
{
    group *G = arg;
    long us = 2;
    pthread_mutex_lock(&G->mu);
    for (;;) {
        if (G->failed != 0 && G->head != NULL) {
            drain(G);
            continue;
        }
        if (G->stop && G->head == NULL) {
            break;
        }
        pending *p = G->head;
        if (p == NULL) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 10 * 1000 * 1000; /* async errors while idle */
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&G->cv, &G->mu, &ts);
            us = 2;
            if (G->head != NULL || G->stop || G->failed != 0) {
                continue;
            }
        }
        pthread_mutex_unlock(&G->mu);
        int r = poll_once(G, p);
        if (r == 1) {
            pthread_mutex_lock(&G->mu);
            G->head = p->next;
            if (G->head == NULL) {
                G->tail = &G->head;
                pthread_cond_broadcast(&G->cv);
            }
            pthread_mutex_unlock(&G->mu);
            rt.cudaEventDestroy(p->ev);
            ftc_pg_backend_complete(p->req, 0, NULL);
            free(p);
            us = 2;
        } else if (r == 0 && p != NULL) {
            backoff(&us);
        }
        pthread_mutex_lock(&G->mu);
    }
    pthread_mutex_unlock(&G->mu);
    return NULL;
}

/* ------------------------------------------------------------- create */

static int dtype_of(int dtype)
{
    static const int map[FTC_DTYPE_COUNT] = {
        [FTC_DTYPE_F32] = ncclFloat32, [FTC_DTYPE_F64] = ncclFloat64,
        [FTC_DTYPE_F16] = ncclFloat16, [FTC_DTYPE_BF16] = ncclBfloat16,
        [FTC_DTYPE_I8] = ncclInt8,     [FTC_DTYPE_U8] = ncclUint8,
        [FTC_DTYPE_I32] = ncclInt32,   [FTC_DTYPE_I64] = ncclInt64,
    };
    return map[dtype];
}

static int op_of(int op)
{
    static const int map[FTC_OP_COUNT] = {
        [FTC_OP_SUM] = ncclSum,   [FTC_OP_AVG] = ncclAvg,
        [FTC_OP_MIN] = ncclMin,   [FTC_OP_MAX] = ncclMax,
        [FTC_OP_PROD] = ncclProd,
    };
    return map[op];
}

/* Polls comm until its last non-blocking call is done; FTC_ETIMEDOUT at
 * deadline_ns, FTC_ECANCELED once G (if any) has failed. */
static int settle(group *G, ncclComm_t comm, const char *call,
                  int64_t deadline_ns)
{
    long us = 2;
    for (;;) {
        ncclResult_t r = ncclSuccess;
        ncclResult_t q = api.ncclCommGetAsyncError(comm, &r);
        int rc = nccl_check(q != ncclSuccess ? q : r, call, comm);
        if (rc != FTC__NCCL_IN_PROGRESS) {
            return rc;
        }
        if (G != NULL && __atomic_load_n(&G->failed, __ATOMIC_ACQUIRE)) {
            return ftc_pg_backend_seterr(FTC_ECANCELED,
                                         "nccl: %s: the group failed", call);
        }
        if (deadline_ns != INT64_MAX && now_ns() > deadline_ns) {
            return ftc_pg_backend_seterr(FTC_ETIMEDOUT,
                                         "nccl: %s did not finish before "
                                         "the deadline",
                                         call);
        }
        backoff(&us);
    }
}

static void group_free(group *G)
{
    if (G->scratch != NULL) {
        rt.cudaFree(G->scratch);
    }
    if (G->stream != NULL) {
        rt.cudaStreamDestroy(G->stream);
    }
    pthread_mutex_destroy(&G->comm_mu);
    pthread_mutex_destroy(&G->mu);
    pthread_cond_destroy(&G->cv);
    free(G);
}

static int nccl_create(const ftc_pg_backend_create_args *a, void **impl)
{
    if (ftc_device_available(FTC_DEVICE_CUDA) != 0) {
        return ftc_pg_backend_seterr(
            FTC_ENOTSUP, "nccl needs the cuda device: %s", ftc_last_error());
    }
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    int rc = 0;
    if (a->rank == 0) {
        rc = nccl_check(api.ncclGetUniqueId(&id), "ncclGetUniqueId", NULL);
    }
    if (rc == 0) {
        rc = ftc_pg_backend_exchange(a->rendezvous, "id", &id, sizeof(id),
                                     a->deadline_ns);
    }
    if (rc != 0) {
        return rc;
    }
    group *G = calloc(1, sizeof(*G));
    if (G == NULL) {
        return ftc_pg_backend_seterr(FTC_ENOMEM, "nccl: out of memory");
    }
    G->rank = a->rank;
    G->size = a->size;
    G->tail = &G->head;
    pthread_mutex_init(&G->comm_mu, NULL);
    pthread_mutex_init(&G->mu, NULL);
    pthread_cond_init(&G->cv, NULL);
    cudaError_t e = rt.cudaGetDevice(&G->dev);
    if (e == cudaSuccess) {
        e = rt.cudaStreamCreateWithFlags(&G->stream, cudaStreamNonBlocking);
    }
    if (e == cudaSuccess) {
        e = rt.cudaMalloc(&G->scratch, 4);
    }
    if (e != cudaSuccess) {
        rc = cuda_fail("stream and scratch buffer", e);
        G->scratch = NULL;
        group_free(G);
        return rc;
    }
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    rc = nccl_check(
        api.ncclCommInitRankConfig(&G->comm, a->size, id, a->rank, &cfg),
        "ncclCommInitRankConfig", NULL);
    if (rc >= 0 && G->comm != NULL) {
        rc = settle(NULL, G->comm, "ncclCommInitRankConfig", a->deadline_ns);
    }
    if (rc != 0) {
        if (G->comm != NULL) {
            char keep[512];
            snprintf(keep, sizeof(keep), "%s", ftc_last_error());
            api.ncclCommAbort(G->comm);
            ftc_pg_backend_seterr(rc, "%s", keep);
        }
        group_free(G);
        return rc;
    }
    if (pthread_create(&G->watcher, NULL, watch, G) != 0) {
        api.ncclCommAbort(G->comm);
        group_free(G);
        return ftc_pg_backend_seterr(FTC_ESYS, "nccl: no watcher thread");
    }
    *impl = G;
    return 0;
}

/* ------------------------------------------------------------- submit */

/* 0 if n elements at p (if any) are device or managed memory. */
static int check_memory(const ftc_pg_request *d, const void *p, size_t n)
{
    int kind = FTC_MEMORY_HOST;
    if (n == 0) {
        return 0;
    }
    if (ftc_device_memory_kind(FTC_DEVICE_CUDA, p, &kind) == 0 &&
        (kind == FTC_MEMORY_DEVICE || kind == FTC_MEMORY_MANAGED)) {
        return 0;
    }
    return ftc_pg_backend_seterr(FTC_EINVAL,
                                 "nccl: %s: buffer %p is not CUDA device "
                                 "memory (nccl needs device memory)",
                                 ftc_pg_coll_name(d->coll), p);
}

/* Enqueues d's NCCL calls on stream. */
static ncclResult_t enqueue(group *G, const ftc_pg_request *d, cudaStream_t s)
{
    ncclDataType_t t = (ncclDataType_t)dtype_of(d->dtype);
    ncclRedOp_t op = (ncclRedOp_t)op_of(d->op);
    size_t el = ftc_dtype_size(d->dtype);
    ncclComm_t c = G->comm;
    switch (d->coll) {
    case FTC_PG_COLL_ALLREDUCE:
        return api.ncclAllReduce(d->send, d->recv, d->send_count, t, op, c, s);
    case FTC_PG_COLL_BROADCAST:
        return api.ncclBroadcast(d->send, d->recv, d->send_count, t, d->root, c,
                                 s);
    case FTC_PG_COLL_REDUCE:
        return api.ncclReduce(d->send, d->recv, d->send_count, t, op, d->root,
                              c, s);
    case FTC_PG_COLL_ALLGATHER:
        return api.ncclAllGather(d->send, d->recv, d->send_count, t, c, s);
    case FTC_PG_COLL_REDUCE_SCATTER:
        return api.ncclReduceScatter(d->send, d->recv, d->recv_count, t, op, c,
                                     s);
    case FTC_PG_COLL_ALLTOALL:
        return api.ncclAlltoAll(d->send, d->recv, d->send_count / G->size, t, c,
                                s);
    case FTC_PG_COLL_GATHER:
        return api.ncclGather(d->send, d->recv, d->send_count, t, d->root, c,
                              s);
    case FTC_PG_COLL_SCATTER:
        return api.ncclScatter(d->send, d->recv, d->recv_count, t, d->root, c,
                               s);
    case FTC_PG_COLL_BARRIER:
        return api.ncclAllReduce(G->scratch, G->scratch, 1, ncclInt32, ncclSum,
                                 c, s);
    case FTC_PG_COLL_SEND:
        return api.ncclSend(d->send, d->send_count, t, d->root, c, s);
    case FTC_PG_COLL_RECV:
        return api.ncclRecv(d->recv, d->recv_count, t, d->root, c, s);
    default:
        break;
    }
    /* The v-variants: one group of point-to-point calls or broadcasts. */
    ncclResult_t r = api.ncclGroupStart();
    size_t so = 0, ro = 0;
    for (int i = 0; r == ncclSuccess && i < G->size; i++) {
        const char *sb = (const char *)d->send + so * el;
        char *rb = (char *)d->recv + ro * el;
        if (d->coll == FTC_PG_COLL_ALLGATHERV) {
            r = api.ncclBroadcast(sb, rb, d->send_counts[i], t, i, c, s);
            ro += d->send_counts[i];
        } else {
            if (d->send_counts[i] > 0) {
                r = api.ncclSend(sb, d->send_counts[i], t, i, c, s);
            }
            if (r == ncclSuccess && d->recv_counts[i] > 0) {
                r = api.ncclRecv(rb, d->recv_counts[i], t, i, c, s);
            }
            so += d->send_counts[i];
            ro += d->recv_counts[i];
        }
    }
    ncclResult_t end = api.ncclGroupEnd();
    return r != ncclSuccess ? r : end;
}

static int nccl_submit(void *impl, ftc_pg_backend_request *req,
                       const ftc_pg_request *d)
{
    group *G = impl;
    int rc = 0;
    if (d->coll == FTC_PG_COLL_RECV && d->root == FTC_PG_ANY_SOURCE) {
        return ftc_pg_backend_seterr(FTC_ENOTSUP,
                                     "nccl: recv from any source (NCCL "
                                     "names the peer)");
    }
    if (d->coll == FTC_PG_COLL_ALLGATHERV) {
        /* Broadcast from each rank's slot: send must be at its offset. */
        rc = check_memory(d, d->recv, d->recv_count);
    } else if (d->coll != FTC_PG_COLL_BARRIER) {
        int root = d->coll == FTC_PG_COLL_GATHER ||
                   d->coll == FTC_PG_COLL_SCATTER ||
                   d->coll == FTC_PG_COLL_REDUCE;
        int big = !root || d->root == G->rank;
        rc = check_memory(
            d, d->send,
            d->coll == FTC_PG_COLL_SCATTER && !big ? 0 : d->send_count);
        if (rc == 0) {
            rc = check_memory(d, d->recv,
                              root && !big && d->coll != FTC_PG_COLL_SCATTER
                                  ? 0
                                  : d->recv_count);
        }
    }
    if (rc != 0) {
        return rc;
    }
    pending *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return ftc_pg_backend_seterr(FTC_ENOMEM, "nccl: out of memory");
    }
    p->req = req;
    p->deadline_ns = d->deadline_ns;
    cudaStream_t s = d->stream != NULL ? (cudaStream_t)d->stream : G->stream;
    pthread_mutex_lock(&G->comm_mu);
    rc = __atomic_load_n(&G->failed, __ATOMIC_ACQUIRE);
    if (rc != 0 || G->comm == NULL) {
        pthread_mutex_lock(&G->mu);
        rc = ftc_pg_backend_seterr(G->failed ? G->failed : FTC_ECANCELED, "%s",
                                   G->msg);
        pthread_mutex_unlock(&G->mu);
    }
    cudaError_t e = cudaSuccess;
    if (rc == 0 && (e = rt.cudaSetDevice(G->dev)) == cudaSuccess) {
        e = rt.cudaEventCreateWithFlags(&p->ev, cudaEventDisableTiming);
    }
    if (rc == 0 && e != cudaSuccess) {
        rc = cuda_fail("cudaEventCreateWithFlags", e);
    }
    if (rc == 0) {
        const char *call = ftc_pg_coll_name(d->coll);
        rc = nccl_check(enqueue(G, d, s), call, G->comm);
        if (rc == FTC__NCCL_IN_PROGRESS) {
            rc = settle(G, G->comm, call, d->deadline_ns);
        }
    }
    if (rc == 0 && (e = rt.cudaEventRecord(p->ev, s)) != cudaSuccess) {
        rc = cuda_fail("cudaEventRecord", e);
    }
    if (rc == 0) {
        pthread_mutex_lock(&G->mu);
        *G->tail = p;
        G->tail = &p->next;
        pthread_cond_signal(&G->cv);
        pthread_mutex_unlock(&G->mu);
    }
    pthread_mutex_unlock(&G->comm_mu);
    if (rc != 0) {
        if (p->ev != NULL) {
            rt.cudaEventDestroy(p->ev);
        }
        free(p);
    }
    return rc;
}

/* ------------------------------------------------------ abort, destroy */

static void nccl_abort(void *impl)
{
    group *G = impl;
    fail_group(G, FTC_ECANCELED, "nccl: the group was aborted");
    /* The watcher fails the pending works; wait for it unless this is
     * the watcher itself (abort from a completion callback). */
    if (pthread_equal(pthread_self(), G->watcher)) {
        return;
    }
    pthread_mutex_lock(&G->mu);
    while (G->head != NULL) {
        pthread_cond_wait(&G->cv, &G->mu);
    }
    pthread_mutex_unlock(&G->mu);
}

static int nccl_status(void *impl)
{
    group *G = impl;
    pthread_mutex_lock(&G->mu);
    int rc = G->failed;
    if (rc != 0) {
        ftc_pg_backend_seterr(rc, "%s", G->msg);
    }
    pthread_mutex_unlock(&G->mu);
    return rc;
}

static void nccl_destroy(void *impl)
{
    group *G = impl;
    /* An idle, healthy communicator is finalized and destroyed; else it
     * is aborted and the works still queued fail. */
    pthread_mutex_lock(&G->mu);
    int idle = G->head == NULL && G->failed == 0;
    pthread_mutex_unlock(&G->mu);
    if (idle) {
        pthread_mutex_lock(&G->comm_mu);
        int64_t dl = now_ns() + 10LL * 1000000000;
        if (nccl_check(api.ncclCommFinalize(G->comm), "ncclCommFinalize",
                       G->comm) >= 0 &&
            settle(NULL, G->comm, "ncclCommFinalize", dl) == 0) {
            api.ncclCommDestroy(G->comm);
            G->comm = NULL;
        }
        pthread_mutex_unlock(&G->comm_mu);
    }
    fail_group(G, FTC_ECANCELED, "nccl: the group was destroyed");
    pthread_mutex_lock(&G->mu);
    G->stop = 1;
    pthread_cond_broadcast(&G->cv);
    pthread_mutex_unlock(&G->mu);
    pthread_join(G->watcher, NULL); /* drains what is queued */
    group_free(G);
}

/* ---------------------------------------------------------------- table */

#define B FTC_PG_BIT
static const ftc_pg_backend table = {
    .abi_version = FTC_PG_BACKEND_ABI_VERSION,
    .struct_size = sizeof(ftc_pg_backend),
    .name = "nccl",
    .colls = B(FTC_PG_COLL_ALLREDUCE) | B(FTC_PG_COLL_BROADCAST) |
             B(FTC_PG_COLL_REDUCE) | B(FTC_PG_COLL_ALLGATHER) |
             B(FTC_PG_COLL_ALLGATHERV) | B(FTC_PG_COLL_REDUCE_SCATTER) |
             B(FTC_PG_COLL_ALLTOALL) | B(FTC_PG_COLL_ALLTOALLV) |
             B(FTC_PG_COLL_GATHER) | B(FTC_PG_COLL_SCATTER) |
             B(FTC_PG_COLL_BARRIER) | B(FTC_PG_COLL_SEND) | B(FTC_PG_COLL_RECV),
    .dtypes = B(FTC_DTYPE_F32) | B(FTC_DTYPE_F64) | B(FTC_DTYPE_F16) |
              B(FTC_DTYPE_BF16) | B(FTC_DTYPE_I8) | B(FTC_DTYPE_U8) |
              B(FTC_DTYPE_I32) | B(FTC_DTYPE_I64),
    .ops = B(FTC_OP_SUM) | B(FTC_OP_AVG) | B(FTC_OP_MIN) | B(FTC_OP_MAX) |
           B(FTC_OP_PROD),
    /* cpu is in the mask so a host buffer reaches submit and is refused
     * there with FTC_EINVAL naming the call, not a generic ENOTSUP. */
    .devices = B(FTC_DEVICE_CPU) | B(FTC_DEVICE_CUDA),
    .create = nccl_create,
    .submit = nccl_submit,
    .abort = nccl_abort,
    .status = nccl_status,
    .destroy = nccl_destroy,
    /* No failed_peers: NCCL reports a failure (ncclCommGetAsyncError),
     * not who caused it, so an nccl group blames nobody. */
};
#undef B

FTC_PLUGIN_EXPORT const char *ftc_pg_backend_error(void)
{
    return entry_error;
}

/* NCCL and the runtime are loaded once and kept; a failure is not
 * remembered, so a fixed FTC_NCCL_LIBRARY works on the next create. */
FTC_PLUGIN_EXPORT const ftc_pg_backend *ftc_pg_backend_entry(void)
{
    char msg[512];
    entry_error[0] = '\0';
    if (api.lib == NULL && ftc__nccl_api_load(NULL, &api, msg, sizeof(msg))) {
        snprintf(entry_error, sizeof(entry_error), "%s", msg);
        return NULL;
    }
    if (ftc_device_available(FTC_DEVICE_CUDA) != 0) {
        snprintf(entry_error, sizeof(entry_error),
                 "nccl needs the cuda device: %s", ftc_last_error());
        return NULL;
    }
    if (load_runtime(msg, sizeof(msg)) != 0) {
        snprintf(entry_error, sizeof(entry_error), "%s", msg);
        return NULL;
    }
    return &table;
}
