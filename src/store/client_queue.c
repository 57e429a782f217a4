/* Store client queue pop (PyTorch >= 2.8 servers and ftc) and ping: the
 * 2.x-only requests with replies (push and len are with the other ops). */
#include "store/client_int.h"

/* One QUEUE_POP (after a WAIT on the key when blocking): *got is 0 when
 * the queue was empty. */
static int pop_once(ftc__store_call *k, const char *key, int block,
                    void **value, size_t *len, int *got)
{
    int pipe = block && ftc__store_call_pipelines(k);
    int rc = block ? ftc__store_call_wait(k, pipe) : 0;
    if (rc == 0) {
        rc = ftc__store_enc_key(&k->conn->req, FTC__OP_QUEUE_POP, k->prefix,
                                key);
    }
    if (rc == 0) {
        rc = ftc__store_call_send_wait(k, pipe);
    }
    int64_t size = 0;
    if (rc == 0) {
        rc = ftc__store_conn_recv_i64(k->conn, &size, k->dl, k->cancel);
    }
    if (rc == 0 && size < 0) {
        k->conn->broken = 1;
        rc = ftc__seterr(FTC_EPROTO, "QUEUE_POP answered size %lld",
                         (long long)size);
    }
    *got = rc == 0 && size > 0;
    if (*got) {
        rc = ftc__store_conn_recv_value(k->conn, value, len, k->dl, k->cancel);
    }
    return rc;
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
    ftc_backoff backoff;
    ftc__backoff_init(&backoff, 1, 100);
    for (;;) {
        int got = 0;
        rc = pop_once(&k, key, block, value, len, &got);
        if (rc != 0 || got) {
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
        ftc_deadline pause = ftc__deadline_min(
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
        rc = ftc__store_conn_recv_uint(k.conn, 4, &reply, k.dl, k.cancel);
    }
    if (rc == 0 &&
        ftc__store_probe_kind(nonce, (uint32_t)reply) != k.conn->server) {
        k.conn->broken = 1;
        rc = ftc__seterr(FTC_EPROTO, "PING %08x answered with %08x", nonce,
                         (uint32_t)reply);
    }
    return ftc__store_call_end(&k, rc);
}
