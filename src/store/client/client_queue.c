/* Store client queue pop (PyTorch >= 2.8 servers and ftc) and ping: the
 * 2.x-only requests with replies (push and len are with the other ops). */
#include "store/client/client_int.h"

struct pop_ctx {
    const char *key;
    void **value;
    size_t *len;
    int got; /* 0 when the queue was empty */
};

static int pop_enc(ftc__store_call *k, void *ctx)
{
    struct pop_ctx *p = ctx;
    return ftc__store_enc_key(&k->conn->req, FTC__OP_QUEUE_POP, k->prefix,
                              p->key);
}

/* QUEUE_POP answers the length before the pop, then the item if any. */
static int pop_read(ftc__store_call *k, void *ctx, ftc__deadline dl,
                    int cancelled)
{
    struct pop_ctx *p = ctx;
    int64_t size = 0;
    int rc = ftc__store_conn_recv_i64(k->conn, &size, dl);
    if (rc == 0 && size < 0) {
        k->conn->broken = 1;
        rc = ftc__seterr(FTC_EPROTO, "QUEUE_POP answered size %lld",
                         (long long)size);
    }
    p->got = rc == 0 && size > 0;
    if (p->got) {
        /* Even behind a cancelled WAIT: the item is ours now. */
        return ftc__store_conn_recv_value(k->conn, p->value, p->len, dl,
                                          k->cancel);
    }
    return rc == 0 && cancelled ? FTC_ETIMEDOUT : rc;
}

/* One QUEUE_POP, after a WAIT on the key when blocking. */
static int pop_once(ftc__store_call *k, int block, struct pop_ctx *p)
{
    if (block) {
        return ftc__store_call_wait_fetch(k, pop_enc, pop_read, p);
    }
    int rc = ftc__store_call_send(k, pop_enc(k, p));
    return rc != 0 ? rc : pop_read(k, p, k->dl, 0);
}

int ftc_store_client_queue_pop(ftc_store_client *client, const char *key,
                               int block, void **value, size_t *len,
                               int64_t timeout_ms)
{
    ftc__store_call k;
    if (value == NULL || len == NULL) {
        return ftc__seterr(FTC_EINVAL, "store queue_pop: value or len is NULL");
    }
    *value = NULL;
    *len = 0;
    int rc = ftc__store_call_begin(&k, client, "queue_pop", &key, 1, timeout_ms,
                                   FTC__CALL_V2_ONLY);
    if (rc != 0) {
        return rc;
    }
    /* Another client may pop the item between our WAIT and our POP; then
     * wait again. The pause only matters if the server keeps answering
     * the WAIT while the queue stays empty. */
    ftc__backoff backoff;
    ftc__backoff_init(&backoff, 1, 100);
    struct pop_ctx p = {key, value, len, 0};
    for (;;) {
        rc = pop_once(&k, block, &p);
        if (rc != 0 || p.got) {
            break;
        }
        if (!block) {
            rc = ftc__seterr(FTC_ENOENT, "queue is empty");
            break;
        }
        if (ftc__deadline_expired(k.dl)) {
            rc = FTC_ETIMEDOUT;
            break;
        }
        ftc__deadline pause = ftc__deadline_min(
            k.dl, ftc__deadline_in_ms(ftc__backoff_next_ms(&backoff)));
        rc = ftc__sleep_until(pause, k.cancel);
        if (rc != 0) {
            break;
        }
    }
    return ftc__store_call_end(&k, rc);
}

int ftc_store_client_ping(ftc_store_client *client, int64_t timeout_ms)
{
    ftc__store_call k;
    int rc = ftc__store_call_begin(&k, client, "ping", NULL, 0, timeout_ms,
                                   FTC__CALL_V2_ONLY);
    if (rc != 0) {
        return rc;
    }
    uint32_t nonce = ftc__store_probe_nonce(ftc__rand_u64());
    uint64_t reply = 0;
    rc = ftc__store_call_send(&k, ftc__store_enc_ping(&k.conn->req, nonce));
    if (rc == 0) {
        rc = ftc__store_conn_recv_uint(k.conn, 4, &reply, k.dl);
    }
    if (rc == 0 &&
        ftc__store_probe_kind(nonce, (uint32_t)reply) != k.conn->server) {
        k.conn->broken = 1;
        rc = ftc__seterr(FTC_EPROTO, "PING %08x answered with %08x", nonce,
                         (uint32_t)reply);
    }
    return ftc__store_call_end(&k, rc);
}
