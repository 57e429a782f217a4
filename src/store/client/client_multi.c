/* Store client multi-key ops: multi_get (WAIT on every key, then one
 * MULTI_GET) and multi_set, with 1.13 fallbacks to pipelined GET/SET. */
#include "store/client/client_int.h"

void ftc_store_values_free(ftc_store_value *values, size_t n)
{
    for (size_t i = 0; values != NULL && i < n; i++) {
        ftc__free(values[i].data);
        values[i].data = NULL;
        values[i].len = 0;
    }
}

/* The fetch after the wait: one MULTI_GET (2.x) or a GET per key sent in
 * one write (1.13 has no MULTI_GET; it answers pipelined GETs in order). */
static int fetch_enc(ftc__store_call *k, void *ctx)
{
    (void)ctx;
    if (k->conn->dialect == FTC_STORE_DIALECT_V2) {
        return ftc__store_enc_keys(&k->conn->req, FTC__OP_MULTI_GET, k->prefix,
                                   k->keys, k->nkeys);
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < k->nkeys; i++) {
        rc = ftc__store_enc_key(&k->conn->req, FTC__OP_GET, k->prefix,
                                k->keys[i]);
    }
    return rc;
}

static int fetch_read(ftc__store_call *k, void *ctx, ftc__deadline dl,
                      int cancelled)
{
    ftc_store_value *values = ctx;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < k->nkeys; i++) {
        rc = ftc__store_conn_recv_value(k->conn, &values[i].data,
                                        &values[i].len, dl, k->cancel);
    }
    return rc == 0 && cancelled ? FTC_ETIMEDOUT : rc;
}

int ftc_store_client_multi_get(ftc_store_client *client,
                               const char *const *keys, size_t nkeys,
                               ftc_store_value *values, int64_t timeout_ms)
{
    ftc__store_call k;
    if (values == NULL && nkeys > 0) {
        return ftc__seterr(FTC_EINVAL, "store multi_get: values is NULL");
    }
    for (size_t i = 0; i < nkeys; i++) {
        values[i] = (ftc_store_value){NULL, 0};
    }
    int rc = ftc__store_call_begin(&k, client, "multi_get", keys, nkeys,
                                   timeout_ms, 0);
    if (rc != 0 || nkeys == 0) {
        return rc != 0 ? rc : ftc__store_call_end(&k, 0);
    }
    rc = ftc__store_call_wait_fetch(&k, fetch_enc, fetch_read, values);
    if (rc != 0) {
        ftc_store_values_free(values, nkeys);
    }
    return ftc__store_call_end(&k, rc);
}

int ftc_store_client_multi_set(ftc_store_client *client,
                               const char *const *keys,
                               const ftc_store_value *values, size_t nkeys,
                               int64_t timeout_ms)
{
    ftc__store_call k;
    if (values == NULL && nkeys > 0) {
        return ftc__seterr(FTC_EINVAL, "store multi_set: values is NULL");
    }
    for (size_t i = 0; i < nkeys; i++) {
        if (values[i].data == NULL && values[i].len > 0) {
            return ftc__seterr(FTC_EINVAL, "store multi_set: value %zu is NULL",
                               i);
        }
    }
    int rc = ftc__store_call_begin(&k, client, "multi_set", keys, nkeys,
                                   timeout_ms, 0);
    if (rc != 0 || nkeys == 0) {
        return rc != 0 ? rc : ftc__store_call_end(&k, 0);
    }
    ftc__store_req *r = &k.conn->req;
    if (k.conn->dialect == FTC_STORE_DIALECT_V2) {
        rc = ftc__store_enc_multi_set(r, k.prefix, keys, values, nkeys);
    }
    for (size_t i = 0;
         k.conn->dialect == FTC_STORE_DIALECT_V1 && rc == 0 && i < nkeys; i++) {
        rc = ftc__store_enc_key_value(r, FTC__OP_SET, k.prefix, keys[i],
                                      values[i].data, values[i].len);
    }
    return ftc__store_call_end(&k, ftc__store_call_send_write(&k, rc));
}
