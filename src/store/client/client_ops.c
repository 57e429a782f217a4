/* Store client key-value ops: each encodes its queries, sends them in one
 * write and reads the replies; get/multi_get wait for their keys first. */
#include <string.h>

#include "store/client/client_int.h"

/* Most ops name one key. */
#define BEGIN1(k, client, op, key, timeout_ms, flags)                          \
    ftc__store_call_begin(k, client, op, &(key), 1, timeout_ms, flags)

static int one_way(ftc_store_client *client, const char *op, int flags,
                   ftc__store_op query, const char *key, const void *value,
                   size_t len, int64_t timeout_ms)
{
    ftc__store_call k;
    if (value == NULL && len > 0) {
        return ftc__seterr(FTC_EINVAL, "store %s: value is NULL", op);
    }
    int rc = BEGIN1(&k, client, op, key, timeout_ms, flags);
    if (rc != 0) {
        return rc;
    }
    rc = ftc__store_enc_key_value(&k.conn->req, query, k.prefix, key, value,
                                  len);
    return ftc__store_call_end(&k, ftc__store_call_send_write(&k, rc));
}

int ftc_store_client_set(ftc_store_client *client, const char *key,
                         const void *value, size_t len, int64_t timeout_ms)
{
    return one_way(client, "set", 0, FTC__OP_SET, key, value, len, timeout_ms);
}

int ftc_store_client_append(ftc_store_client *client, const char *key,
                            const void *value, size_t len, int64_t timeout_ms)
{
    return one_way(client, "append", FTC__CALL_V2_ONLY, FTC__OP_APPEND, key,
                   value, len, timeout_ms);
}

int ftc_store_client_queue_push(ftc_store_client *client, const char *key,
                                const void *value, size_t len,
                                int64_t timeout_ms)
{
    return one_way(client, "queue_push", FTC__CALL_V2_ONLY, FTC__OP_QUEUE_PUSH,
                   key, value, len, timeout_ms);
}

struct get_ctx {
    void **value;
    size_t *len;
};

static int get_enc(ftc__store_call *k, void *ctx)
{
    (void)ctx;
    return ftc__store_enc_key(&k->conn->req, FTC__OP_GET, k->prefix,
                              k->keys[0]);
}

static int get_read(ftc__store_call *k, void *ctx, ftc__deadline dl,
                    int cancelled)
{
    struct get_ctx *g = ctx;
    int rc =
        ftc__store_conn_recv_value(k->conn, g->value, g->len, dl, k->cancel);
    if (rc == FTC_ECLOSED && k->conn->dialect == FTC_STORE_DIALECT_V1) {
        /* A 1.13 server drops a client that GETs a missing key. */
        rc = ftc__adderr(rc, "deleted after the wait?");
    }
    if (rc == 0 && cancelled) {
        /* The GET behind a cancelled WAIT: an empty "missing" answer. */
        ftc__free(*g->value);
        *g->value = NULL;
        *g->len = 0;
        rc = FTC_ETIMEDOUT;
    }
    return rc;
}

int ftc__store_call_get(ftc__store_call *k, void **value, size_t *len)
{
    struct get_ctx g = {value, len};
    int rc = ftc__store_call_wait_fetch(k, get_enc, get_read, &g);
    if (rc != 0) {
        ftc__free(*value);
        *value = NULL;
        *len = 0;
    }
    return rc;
}

int ftc_store_client_get(ftc_store_client *client, const char *key,
                         void **value, size_t *len, int64_t timeout_ms)
{
    ftc__store_call k;
    if (value == NULL || len == NULL) {
        return ftc__seterr(FTC_EINVAL, "store get: value or len is NULL");
    }
    *value = NULL;
    *len = 0;
    int rc = BEGIN1(&k, client, "get", key, timeout_ms, 0);
    if (rc != 0) {
        return rc;
    }
    return ftc__store_call_end(&k, ftc__store_call_get(&k, value, len));
}

int ftc_store_client_add(ftc_store_client *client, const char *key,
                         int64_t delta, int64_t *result, int64_t timeout_ms)
{
    ftc__store_call k;
    int rc = BEGIN1(&k, client, "add", key, timeout_ms, 0);
    if (rc != 0) {
        return rc;
    }
    int64_t v = 0;
    rc = ftc__store_call_i64(
        &k, ftc__store_enc_add(&k.conn->req, k.prefix, key, delta), &v);
    if (rc == 0 && result != NULL) {
        *result = v;
    }
    return ftc__store_call_end(&k, rc);
}

int ftc_store_client_delete(ftc_store_client *client, const char *key,
                            int *deleted, int64_t timeout_ms)
{
    ftc__store_call k;
    int rc = BEGIN1(&k, client, "delete", key, timeout_ms, 0);
    if (rc != 0) {
        return rc;
    }
    int64_t v = 0;
    rc = ftc__store_call_i64(
        &k, ftc__store_enc_key(&k.conn->req, FTC__OP_DELETE_KEY, k.prefix, key),
        &v);
    if (rc == 0 && deleted != NULL) {
        *deleted = v > 0;
    }
    return ftc__store_call_end(&k, rc);
}

int ftc_store_client_num_keys(ftc_store_client *client, int64_t *count,
                              int64_t timeout_ms)
{
    ftc__store_call k;
    if (count == NULL) {
        return ftc__seterr(FTC_EINVAL, "store num_keys: count is NULL");
    }
    int rc =
        ftc__store_call_begin(&k, client, "num_keys", NULL, 0, timeout_ms, 0);
    if (rc != 0) {
        return rc;
    }
    rc = ftc__store_call_i64(
        &k, ftc__store_enc_bare(&k.conn->req, FTC__OP_GETNUMKEYS), count);
    return ftc__store_call_end(&k, rc);
}

int ftc_store_client_queue_len(ftc_store_client *client, const char *key,
                               int64_t *len, int64_t timeout_ms)
{
    ftc__store_call k;
    if (len == NULL) {
        return ftc__seterr(FTC_EINVAL, "store queue_len: len is NULL");
    }
    int rc =
        BEGIN1(&k, client, "queue_len", key, timeout_ms, FTC__CALL_V2_ONLY);
    if (rc != 0) {
        return rc;
    }
    rc = ftc__store_call_i64(
        &k, ftc__store_enc_key(&k.conn->req, FTC__OP_QUEUE_LEN, k.prefix, key),
        len);
    return ftc__store_call_end(&k, rc);
}

int ftc_store_client_compare_set(ftc_store_client *client, const char *key,
                                 const void *expected, size_t expected_len,
                                 const void *desired, size_t desired_len,
                                 void **current, size_t *current_len,
                                 int64_t timeout_ms)
{
    ftc__store_call k;
    if ((expected == NULL && expected_len > 0) ||
        (desired == NULL && desired_len > 0)) {
        return ftc__seterr(FTC_EINVAL, "store compare_set: value is NULL");
    }
    if (current != NULL) {
        *current = NULL;
    }
    if (current_len != NULL) {
        *current_len = 0;
    }
    int rc = BEGIN1(&k, client, "compare_set", key, timeout_ms, 0);
    if (rc != 0) {
        return rc;
    }
    void *p = NULL;
    size_t n = 0;
    rc = ftc__store_call_send(
        &k, ftc__store_enc_compare_set(&k.conn->req, k.prefix, key, expected,
                                       expected_len, desired, desired_len));
    if (rc == 0) {
        rc = ftc__store_conn_recv_value(k.conn, &p, &n, k.dl, k.cancel);
    }
    if (rc == 0 && current != NULL) {
        *current = p;
        p = NULL;
    }
    if (rc == 0 && current_len != NULL) {
        *current_len = n;
    }
    ftc__free(p);
    return ftc__store_call_end(&k, rc);
}

int ftc_store_client_check(ftc_store_client *client, const char *const *keys,
                           size_t nkeys, int *ready, int64_t timeout_ms)
{
    ftc__store_call k;
    if (ready == NULL) {
        return ftc__seterr(FTC_EINVAL, "store check: ready is NULL");
    }
    int rc =
        ftc__store_call_begin(&k, client, "check", keys, nkeys, timeout_ms, 0);
    if (rc != 0) {
        return rc;
    }
    uint64_t b = 0;
    rc = ftc__store_call_send(&k,
                              ftc__store_enc_keys(&k.conn->req, FTC__OP_CHECK,
                                                  k.prefix, keys, nkeys));
    if (rc == 0) {
        rc = ftc__store_conn_recv_uint(k.conn, 1, &b, k.dl);
    }
    if (rc == 0 && b != FTC__CHECK_READY && b != FTC__CHECK_NOT_READY) {
        k.conn->broken = 1;
        rc =
            ftc__seterr(FTC_EPROTO, "CHECK answered with byte %u", (unsigned)b);
    }
    if (rc == 0) {
        *ready = b == FTC__CHECK_READY;
    }
    return ftc__store_call_end(&k, rc);
}

int ftc_store_client_wait(ftc_store_client *client, const char *const *keys,
                          size_t nkeys, int64_t timeout_ms)
{
    ftc__store_call k;
    int rc =
        ftc__store_call_begin(&k, client, "wait", keys, nkeys, timeout_ms, 0);
    if (rc != 0) {
        return rc;
    }
    return ftc__store_call_end(&k, ftc__store_call_wait(&k));
}
