/* "loop": a test process-group backend written against the public
 * headers only (ftc/plugin/backend.h), built as libftc_pg_loop.so.
 * Slow but real: each collective is one round of the store: every member
 * sets its input under "<prefix>/op/<seq>/<rank>" and reads everyone's
 * (multi_get waits for the missing ones), then computes its result
 * locally. It keeps its own store connection to the address in
 * FTC_PG_LOOP_STORE (the create's store is borrowed for the call only)
 * and agrees on a token with ftc_pg_backend_exchange at create.
 *
 * Built variants test the loader's refusals: LOOP_WRONG_MAJOR (ABI 2.0),
 * LOOP_SMALL_SIZE (struct_size 8), LOOP_NO_ENTRY (no entry symbol). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc/plugin/backend.h"

typedef struct item {
    ftc_pg_backend_request *req;
    const ftc_pg_request *d;
    struct item *next;
} item;

typedef struct loop {
    ftc_store_client *conn, *view;
    int rank, size;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    item *head, **tail;
    int stop, failed;
    char msg[256];
    pthread_t thread;
} loop;

/* Reduces n elements of b into a (sum, min, max of f32, f64, i32, i64). */
#define REDUCE(T)                                                              \
    do {                                                                       \
        T *x = a;                                                              \
        const T *y = b;                                                        \
        for (size_t i = 0; i < n; i++) {                                       \
            x[i] = op == FTC_OP_SUM   ? x[i] + y[i]                            \
                   : op == FTC_OP_MIN ? (y[i] < x[i] ? y[i] : x[i])            \
                                      : (y[i] > x[i] ? y[i] : x[i]);           \
        }                                                                      \
    } while (0)

static void reduce(void *a, const void *b, size_t n, int dtype, int op)
{
    switch (dtype) {
    case FTC_DTYPE_F32:
        REDUCE(float);
        break;
    case FTC_DTYPE_F64:
        REDUCE(double);
        break;
    case FTC_DTYPE_I32:
        REDUCE(int32_t);
        break;
    default:
        REDUCE(int64_t);
        break;
    }
}

/* One collective: publish, read all, compute. */
static int run(loop *L, const ftc_pg_request *d)
{
    size_t elem = ftc_dtype_size(d->dtype);
    size_t in_bytes = d->send_count * elem;
    if (d->coll == FTC_PG_COLL_BROADCAST && L->rank != d->root) {
        in_bytes = 0;
    }
    char key[96];
    snprintf(key, sizeof(key), "op/%llu/%d", (unsigned long long)d->seq,
             L->rank);
    int64_t left = 60000;
    int rc = ftc_store_client_set(L->view, key, in_bytes ? d->send : "",
                                  in_bytes, left);
    char keys[64][96];
    const char *kp[64];
    ftc_store_value vals[64];
    for (int i = 0; i < L->size; i++) {
        snprintf(keys[i], sizeof(keys[i]), "op/%llu/%d",
                 (unsigned long long)d->seq, i);
        kp[i] = keys[i];
    }
    if (rc == 0) {
        rc = ftc_store_client_multi_get(L->view, kp, (size_t)L->size, vals,
                                        left);
    }
    if (rc != 0) {
        return rc;
    }
    size_t n = d->send_count;
    uint8_t *out = d->recv;
    if (d->coll == FTC_PG_COLL_ALLREDUCE) {
        uint8_t *acc = malloc(n * elem + 1);
        memcpy(acc, vals[0].data, n * elem);
        for (int i = 1; i < L->size; i++) {
            reduce(acc, vals[i].data, n, d->dtype, d->op);
        }
        memcpy(out, acc, n * elem);
        free(acc);
    } else if (d->coll == FTC_PG_COLL_BROADCAST) {
        memcpy(out, vals[d->root].data, n * elem);
    } else if (d->coll == FTC_PG_COLL_ALLGATHER) {
        for (int i = 0; i < L->size; i++) {
            memcpy(out + (size_t)i * n * elem, vals[i].data, n * elem);
        }
    }
    ftc_store_values_free(vals, (size_t)L->size);
    return 0;
}

static void *worker(void *arg)
{
    loop *L = arg;
    pthread_mutex_lock(&L->mu);
    for (;;) {
        while (L->head == NULL && !L->stop) {
            pthread_cond_wait(&L->cv, &L->mu);
        }
        item *it = L->head;
        if (it == NULL) {
            break;
        }
        L->head = it->next;
        if (L->head == NULL) {
            L->tail = &L->head;
        }
        int failed = L->failed;
        pthread_mutex_unlock(&L->mu);
        int rc = failed;
        char msg[256];
        snprintf(msg, sizeof(msg), "%s", L->msg);
        if (rc == 0) {
            rc = run(L, it->d);
            snprintf(msg, sizeof(msg), "loop: %s", ftc_last_error());
        }
        pthread_mutex_lock(&L->mu);
        if (rc != 0 && L->failed == 0) {
            L->failed = rc;
            snprintf(L->msg, sizeof(L->msg), "%s", msg);
        }
        pthread_mutex_unlock(&L->mu);
        ftc_pg_backend_complete(it->req, rc, rc != 0 ? msg : NULL);
        free(it);
        pthread_mutex_lock(&L->mu);
    }
    pthread_mutex_unlock(&L->mu);
    return NULL;
}

static int loop_create(const ftc_pg_backend_create_args *a, void **impl)
{
    const char *addr = getenv("FTC_PG_LOOP_STORE");
    if (addr == NULL || a->size > 64) {
        return ftc_pg_backend_seterr(FTC_EINVAL,
                                     "loop: set FTC_PG_LOOP_STORE; at most "
                                     "64 ranks");
    }
    /* The unique-id exchange every vendor backend does. */
    uint64_t token = a->group_id ^ 0x6c6f6f70u;
    int rc = ftc_pg_backend_exchange(a->rendezvous, "id", &token, sizeof(token),
                                     a->deadline_ns);
    if (rc != 0) {
        return rc;
    }
    if (token != (a->group_id ^ 0x6c6f6f70u)) {
        return ftc_pg_backend_seterr(FTC_EPROTO, "loop: ids differ");
    }
    loop *L = calloc(1, sizeof(*L));
    char prefix[600];
    snprintf(prefix, sizeof(prefix), "%s/loop", a->prefix);
    rc = ftc_store_client_connect(addr, NULL, &L->conn);
    if (rc == 0) {
        rc = ftc_store_client_prefix(L->conn, prefix, &L->view);
    }
    if (rc != 0) {
        ftc_store_client_close(L->conn);
        free(L);
        return rc;
    }
    L->rank = a->rank;
    L->size = a->size;
    L->tail = &L->head;
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    pthread_create(&L->thread, NULL, worker, L);
    *impl = L;
    return 0;
}

static int loop_submit(void *impl, ftc_pg_backend_request *req,
                       const ftc_pg_request *d)
{
    loop *L = impl;
    item *it = calloc(1, sizeof(*it));
    if (it == NULL) {
        return ftc_pg_backend_seterr(FTC_ENOMEM, "loop: out of memory");
    }
    it->req = req;
    it->d = d;
    pthread_mutex_lock(&L->mu);
    int rc = L->failed;
    if (rc == 0) {
        *L->tail = it;
        L->tail = &it->next;
        pthread_cond_signal(&L->cv);
    } else {
        ftc_pg_backend_seterr(rc, "%s", L->msg);
    }
    pthread_mutex_unlock(&L->mu);
    if (rc != 0) {
        free(it);
    }
    return rc;
}

static void loop_abort(void *impl)
{
    loop *L = impl;
    pthread_mutex_lock(&L->mu);
    if (L->failed == 0) {
        L->failed = FTC_ECANCELED;
        snprintf(L->msg, sizeof(L->msg), "loop: the group was aborted");
    }
    pthread_mutex_unlock(&L->mu);
    ftc_store_client_cancel(L->conn); /* unblocks a waiting round */
}

static int loop_status(void *impl)
{
    loop *L = impl;
    pthread_mutex_lock(&L->mu);
    int rc = L->failed;
    if (rc != 0) {
        ftc_pg_backend_seterr(rc, "%s", L->msg);
    }
    pthread_mutex_unlock(&L->mu);
    return rc;
}

static void loop_destroy(void *impl)
{
    loop *L = impl;
    loop_abort(L);
    pthread_mutex_lock(&L->mu);
    L->stop = 1;
    pthread_cond_signal(&L->cv);
    pthread_mutex_unlock(&L->mu);
    pthread_join(L->thread, NULL); /* fails what is queued on its way out */
    ftc_store_client_close(L->view);
    ftc_store_client_close(L->conn);
    pthread_mutex_destroy(&L->mu);
    pthread_cond_destroy(&L->cv);
    free(L);
}

#ifdef LOOP_WRONG_MAJOR
#define LOOP_VERSION FTC_PLUGIN_ABI(2, 0)
#else
#define LOOP_VERSION FTC_PG_BACKEND_ABI_VERSION
#endif
#ifdef LOOP_SMALL_SIZE
#define LOOP_SIZE 8
#else
#define LOOP_SIZE sizeof(ftc_pg_backend)
#endif

static const ftc_pg_backend table = {
    .abi_version = LOOP_VERSION,
    .struct_size = LOOP_SIZE,
    .name = "loop",
    .colls =
        FTC_PG_BIT(FTC_PG_COLL_ALLREDUCE) | FTC_PG_BIT(FTC_PG_COLL_BROADCAST) |
        FTC_PG_BIT(FTC_PG_COLL_ALLGATHER) | FTC_PG_BIT(FTC_PG_COLL_BARRIER),
    .dtypes = FTC_PG_BIT(FTC_DTYPE_F32) | FTC_PG_BIT(FTC_DTYPE_F64) |
              FTC_PG_BIT(FTC_DTYPE_I32) | FTC_PG_BIT(FTC_DTYPE_I64),
    .ops = FTC_PG_BIT(FTC_OP_SUM) | FTC_PG_BIT(FTC_OP_MIN) |
           FTC_PG_BIT(FTC_OP_MAX),
    .devices = FTC_PG_BIT(FTC_DEVICE_CPU),
    .create = loop_create,
    .submit = loop_submit,
    .abort = loop_abort,
    .status = loop_status,
    .destroy = loop_destroy,
};

#ifndef LOOP_NO_ENTRY
FTC_PLUGIN_EXPORT const ftc_pg_backend *ftc_pg_backend_entry(void)
{
    return &table;
}
#else
FTC_PLUGIN_EXPORT const ftc_pg_backend *other_entry(void);
FTC_PLUGIN_EXPORT const ftc_pg_backend *other_entry(void)
{
    return &table;
}
#endif
