/* Store client query encoding (no I/O): the byte layouts of
 * docs/protocol.md "Store client", in both TCPStore dialects. */
#include "store/client/client_codec.h"

#include <string.h>

#include "base/base_int.h"

void ftc__store_req_init(ftc__store_req *r, int dialect)
{
    memset(r, 0, sizeof(*r));
    r->dialect = dialect;
    /* Requests hold keys and small values; big values are borrowed. A
     * multi_set of many small values is the largest copied request. */
    ftc__buf_init(&r->buf, SIZE_MAX / 2);
}

void ftc__store_req_free(ftc__store_req *r)
{
    ftc__buf_free(&r->buf);
    ftc__free(r->ext);
    r->ext = NULL;
    r->next = r->ext_cap = 0;
}

void ftc__store_req_reset(ftc__store_req *r)
{
    ftc__buf_reset(&r->buf);
    r->next = 0;
}

size_t ftc__store_req_size(const ftc__store_req *r)
{
    size_t n = ftc__buf_size(&r->buf);
    for (size_t i = 0; i < r->next; i++) {
        n += r->ext[i].n;
    }
    return n;
}

int ftc__store_req_iov(const ftc__store_req *r, size_t *seg, struct iovec *iov,
                       int cap)
{
    int k = 0;
    size_t nseg = 2 * r->next + 1;
    while (k < cap && *seg < nseg) {
        size_t s = (*seg)++;
        size_t i = s / 2;
        if (s % 2 == 1) {
            iov[k++] = (struct iovec){(void *)r->ext[i].p, r->ext[i].n};
            continue;
        }
        size_t from = i == 0 ? 0 : r->ext[i - 1].at;
        size_t to = i < r->next ? r->ext[i].at : ftc__buf_size(&r->buf);
        if (to > from) {
            iov[k++] =
                (struct iovec){ftc__buf_begin(&r->buf) + from, to - from};
        }
    }
    return k;
}

static int put_op(ftc__store_req *r, ftc__store_op op)
{
    int b = ftc__store_op_encode(r->dialect, op);
    if (b < 0) {
        return ftc__seterr(
            FTC_ENOTSUP, "the %s dialect has no such query (op %d)",
            r->dialect == FTC_STORE_DIALECT_V1 ? "1.13" : "2.x", (int)op);
    }
    return ftc__buf_append_u8(&r->buf, (uint8_t)b);
}

/* u64 length, then the bytes: copied, or borrowed when long. */
static int put_bytes(ftc__store_req *r, const void *p, size_t n)
{
    int rc = ftc__buf_append_u64le(&r->buf, n);
    if (rc != 0 || n < FTC__STORE_COPY_MAX) {
        return rc != 0 ? rc : ftc__buf_append(&r->buf, p, n);
    }
    if (r->next == r->ext_cap) {
        size_t cap = r->ext_cap ? 2 * r->ext_cap : 8;
        ftc__store_ext *e = ftc__realloc(r->ext, cap * sizeof(*e));
        if (e == NULL) {
            return ftc__seterr(FTC_ENOMEM, "request of %zu values", cap);
        }
        r->ext = e;
        r->ext_cap = cap;
    }
    r->ext[r->next++] = (ftc__store_ext){ftc__buf_size(&r->buf), p, n};
    return 0;
}

static int put_key(ftc__store_req *r, const char *prefix, const char *key)
{
    size_t plen = prefix != NULL ? strlen(prefix) + 1 : 0;
    size_t klen = strlen(key);
    int rc = ftc__buf_reserve(&r->buf, 8 + 1 + plen + klen);
    if (rc != 0) {
        return rc;
    }
    ftc__buf_append_u64le(&r->buf, 1 + plen + klen);
    ftc__buf_append_u8(&r->buf, '/');
    if (prefix != NULL) {
        ftc__buf_append(&r->buf, prefix, plen - 1);
        ftc__buf_append_u8(&r->buf, '/');
    }
    return ftc__buf_append(&r->buf, key, klen);
}

int ftc__store_enc_key(ftc__store_req *r, ftc__store_op op, const char *prefix,
                       const char *key)
{
    int rc = put_op(r, op);
    return rc != 0 ? rc : put_key(r, prefix, key);
}

int ftc__store_enc_key_value(ftc__store_req *r, ftc__store_op op,
                             const char *prefix, const char *key,
                             const void *value, size_t len)
{
    int rc = ftc__store_enc_key(r, op, prefix, key);
    return rc != 0 ? rc : put_bytes(r, value, len);
}

/* The op byte and a u64 count of the keys (or key-value pairs) after it. */
static int put_op_count(ftc__store_req *r, ftc__store_op op, size_t n)
{
    int rc = put_op(r, op);
    return rc != 0 ? rc : ftc__buf_append_u64le(&r->buf, n);
}

int ftc__store_enc_keys(ftc__store_req *r, ftc__store_op op, const char *prefix,
                        const char *const *keys, size_t n)
{
    int rc = put_op_count(r, op, n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = put_key(r, prefix, keys[i]);
    }
    return rc;
}

int ftc__store_enc_multi_set(ftc__store_req *r, const char *prefix,
                             const char *const *keys,
                             const ftc_store_value *values, size_t n)
{
    int rc = put_op_count(r, FTC__OP_MULTI_SET, n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = put_key(r, prefix, keys[i]);
        rc = rc != 0 ? rc : put_bytes(r, values[i].data, values[i].len);
    }
    return rc;
}

int ftc__store_enc_bare(ftc__store_req *r, ftc__store_op op)
{
    return put_op(r, op);
}

int ftc__store_enc_add(ftc__store_req *r, const char *prefix, const char *key,
                       int64_t delta)
{
    int rc = ftc__store_enc_key(r, FTC__OP_ADD, prefix, key);
    return rc != 0 ? rc : ftc__buf_append_u64le(&r->buf, (uint64_t)delta);
}

int ftc__store_enc_compare_set(ftc__store_req *r, const char *prefix,
                               const char *key, const void *expected,
                               size_t expected_len, const void *desired,
                               size_t desired_len)
{
    int rc = ftc__store_enc_key_value(r, FTC__OP_COMPARE_SET, prefix, key,
                                      expected, expected_len);
    return rc != 0 ? rc : put_bytes(r, desired, desired_len);
}

int ftc__store_enc_control_barrier(ftc__store_req *r, const char *prefix,
                                   const char *key, int64_t world_size,
                                   int64_t rank)
{
    int rc = ftc__store_enc_key(r, FTC__OP_CONTROL_BARRIER, prefix, key);
    rc = rc != 0 ? rc : ftc__buf_append_u64le(&r->buf, (uint64_t)world_size);
    return rc != 0 ? rc : ftc__buf_append_u64le(&r->buf, (uint64_t)rank);
}

int ftc__store_enc_ping(ftc__store_req *r, uint32_t nonce)
{
    int rc = put_op(r, FTC__OP_PING);
    return rc != 0 ? rc : ftc__buf_append_u32le(&r->buf, nonce);
}

int ftc__store_enc_handshake(ftc__store_req *r, uint32_t nonce)
{
    int rc = put_op(r, FTC__OP_VALIDATE);
    rc = rc != 0 ? rc
                 : ftc__buf_append_u32le(&r->buf, FTC__STORE_VALIDATE_MAGIC);
    return rc != 0 ? rc : ftc__store_enc_ping(r, nonce);
}

uint32_t ftc__store_probe_nonce(uint64_t random)
{
    return FTC__STORE_NONCE_TAG |
           (uint32_t)(random & ~FTC__STORE_NONCE_TAG_MASK);
}

int ftc__store_probe_kind(uint32_t nonce, uint32_t reply)
{
    if (reply == nonce) {
        return FTC__STORE_SERVER_TORCH;
    }
    if (reply == ~nonce) {
        return FTC__STORE_SERVER_FTC;
    }
    if (ftc__store_probe_locked(nonce, reply)) {
        return FTC__STORE_SERVER_FTC;
    }
    return -1;
}

int ftc__store_probe_locked(uint32_t nonce, uint32_t reply)
{
    return reply == (~nonce ^ FTC__STORE_PROBE_LOCKED);
}

int ftc__store_enc_auth(ftc__store_req *r, ftc__store_op op,
                        const uint8_t bytes[FTC__WIRE_RAW_BYTES])
{
    int rc = put_op(r, op);
    return rc != 0 ? rc : ftc__buf_append(&r->buf, bytes, FTC__WIRE_RAW_BYTES);
}

int ftc__store_check_len(uint64_t len, size_t max, const char *what)
{
    if (len > max) {
        return ftc__seterr(FTC_EMSGSIZE,
                           "%s of %llu B exceeds max_value_bytes %zu", what,
                           (unsigned long long)len, max);
    }
    return 0;
}
