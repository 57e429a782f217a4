/* Encoding and decoding of the healing metadata; every count and length
 * from the network is checked against the limits before allocation. */
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "base/xxh.h"
#include "ft/heal/heal_format.h"

/* Printable ASCII only, so a name from the network is safe in any log. */
static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > FTC__HEAL_NAME_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < 0x20 || s[i] > 0x7e) {
            return false;
        }
    }
    return true;
}

int ftc__heal_buf_set(ftc__heal_buf *b, const char *name, int dtype,
                      const int64_t *dims, int ndim, size_t elem_size)
{
    size_t n = name != NULL ? strlen(name) : 0;
    if (!name_ok(name, n)) {
        return ftc__seterr(FTC_EINVAL,
                           "buffer name must be 1..%d printable ASCII "
                           "characters",
                           FTC__HEAL_NAME_MAX);
    }
    if (ndim < 0 || ndim > FTC__HEAL_NDIM_MAX || (ndim > 0 && dims == NULL) ||
        dtype < 0 || dtype > 255 || elem_size == 0) {
        return ftc__seterr(FTC_EINVAL,
                           "buffer %s: ndim %d (0..%d), dtype %d or element "
                           "size %zu invalid",
                           name, ndim, FTC__HEAL_NDIM_MAX, dtype, elem_size);
    }
    memset(b, 0, sizeof(*b));
    memcpy(b->name, name, n + 1);
    b->dtype = (uint8_t)dtype;
    b->ndim = (uint8_t)ndim;
    uint64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0) {
            return ftc__seterr(FTC_EINVAL, "buffer %s: dimension %d is %lld",
                               name, i, (long long)dims[i]);
        }
        b->dims[i] = (uint64_t)dims[i];
        if (__builtin_mul_overflow(count, b->dims[i], &count)) {
            return ftc__seterr(FTC_EMSGSIZE, "buffer %s: shape overflows",
                               name);
        }
    }
    if (__builtin_mul_overflow(count, (uint64_t)elem_size, &b->nbytes)) {
        return ftc__seterr(FTC_EMSGSIZE, "buffer %s: byte count overflows",
                           name);
    }
    return 0;
}

uint64_t ftc__heal_chunk_count(uint64_t total, uint64_t chunk_bytes)
{
    return total / chunk_bytes + (total % chunk_bytes != 0);
}

void ftc__heal_chunk_range(const ftc__heal_meta *m, uint32_t i, uint64_t *off,
                           uint64_t *len)
{
    *off = (uint64_t)i * m->chunk_bytes;
    uint64_t left = m->total_bytes - *off;
    *len = left < m->chunk_bytes ? left : m->chunk_bytes;
}

/* Internal consistency shared by encode and decode. */
static int meta_consistent(const ftc__heal_meta *m)
{
    if (m->step < 0 || m->batches_committed < 0 || m->chunk_bytes == 0) {
        return ftc__seterr(FTC_EPROTO,
                           "heal metadata: step %lld, batches %lld, "
                           "chunk_bytes %llu",
                           (long long)m->step, (long long)m->batches_committed,
                           (unsigned long long)m->chunk_bytes);
    }
    if (m->n_chunks != ftc__heal_chunk_count(m->total_bytes, m->chunk_bytes)) {
        return ftc__seterr(FTC_EPROTO,
                           "heal metadata: %u chunks of %llu B cannot hold "
                           "%llu B",
                           m->n_chunks, (unsigned long long)m->chunk_bytes,
                           (unsigned long long)m->total_bytes);
    }
    uint64_t sum = 0;
    for (uint32_t i = 0; i < m->n_buffers; i++) {
        const ftc__heal_buf *b = &m->buffers[i];
        if (!name_ok(b->name, strnlen(b->name, sizeof(b->name))) ||
            b->ndim > FTC__HEAL_NDIM_MAX) {
            return ftc__seterr(FTC_EPROTO, "heal metadata: buffer %u invalid",
                               i);
        }
        if (__builtin_add_overflow(sum, b->nbytes, &sum)) {
            return ftc__seterr(FTC_EPROTO, "heal metadata: sizes overflow");
        }
    }
    if (sum != m->total_bytes) {
        return ftc__seterr(FTC_EPROTO,
                           "heal metadata: buffers hold %llu B, total says "
                           "%llu B",
                           (unsigned long long)sum,
                           (unsigned long long)m->total_bytes);
    }
    return 0;
}

int ftc__heal_meta_encode(const ftc__heal_meta *m, ftc__buf *out)
{
    int rc = meta_consistent(m);
    if (rc != 0) {
        return ftc__seterr(FTC_EINVAL, "%s", ftc_last_error());
    }
    size_t start = ftc__buf_size(out);
    rc = ftc__buf_append(out, FTC__HEAL_MAGIC, FTC__HEAL_MAGIC_LEN);
    rc = rc != 0 ? rc : ftc__buf_append_u64le(out, (uint64_t)m->step);
    rc = rc != 0 ? rc
                 : ftc__buf_append_u64le(out, (uint64_t)m->batches_committed);
    rc = rc != 0 ? rc : ftc__buf_append_u64le(out, m->total_bytes);
    rc = rc != 0 ? rc : ftc__buf_append_u64le(out, m->chunk_bytes);
    rc = rc != 0 ? rc : ftc__buf_append_u32le(out, m->n_buffers);
    rc = rc != 0 ? rc : ftc__buf_append_u32le(out, m->n_chunks);
    for (uint32_t i = 0; rc == 0 && i < m->n_buffers; i++) {
        const ftc__heal_buf *b = &m->buffers[i];
        size_t n = strlen(b->name);
        uint8_t hdr[2] = {(uint8_t)n, (uint8_t)(n >> 8)};
        rc = ftc__buf_append(out, hdr, 2);
        rc = rc != 0 ? rc : ftc__buf_append(out, b->name, n);
        rc = rc != 0 ? rc : ftc__buf_append_u8(out, b->dtype);
        rc = rc != 0 ? rc : ftc__buf_append_u8(out, b->ndim);
        for (uint8_t d = 0; rc == 0 && d < b->ndim; d++) {
            rc = ftc__buf_append_u64le(out, b->dims[d]);
        }
        rc = rc != 0 ? rc : ftc__buf_append_u64le(out, b->nbytes);
    }
    for (uint32_t i = 0; rc == 0 && i < m->n_chunks; i++) {
        rc = ftc__buf_append_u64le(out, m->chunk_hash[i]);
    }
    if (rc == 0) {
        const uint8_t *p = ftc__buf_begin(out) + start;
        rc = ftc__buf_append_u64le(out,
                                   XXH3_64bits(p, ftc__buf_size(out) - start));
    }
    return rc;
}

/* A bounded reader over the received bytes. */
typedef struct reader {
    const uint8_t *p;
    size_t left;
} reader;

static bool take(reader *r, void *dst, size_t n)
{
    if (r->left < n) {
        return false;
    }
    memcpy(dst, r->p, n);
    r->p += n;
    r->left -= n;
    return true;
}

static bool take_u64(reader *r, uint64_t *v)
{
    uint8_t b[8];
    if (!take(r, b, 8)) {
        return false;
    }
    *v = ftc__get_u64le(b);
    return true;
}

static bool take_buffer(reader *r, ftc__heal_buf *b)
{
    uint8_t hdr[2];
    if (!take(r, hdr, 2)) {
        return false;
    }
    size_t n = (size_t)hdr[0] | ((size_t)hdr[1] << 8);
    /* Printable only: a NUL inside would make the name differ from its
     * declared length. */
    if (n == 0 || n > FTC__HEAL_NAME_MAX || !take(r, b->name, n) ||
        !name_ok(b->name, n)) {
        return false;
    }
    b->name[n] = '\0';
    if (!take(r, &b->dtype, 1) || !take(r, &b->ndim, 1) ||
        b->ndim > FTC__HEAL_NDIM_MAX) {
        return false;
    }
    for (uint8_t d = 0; d < b->ndim; d++) {
        if (!take_u64(r, &b->dims[d])) {
            return false;
        }
    }
    return take_u64(r, &b->nbytes);
}

/* The header's fields, checked against the limits and the length. */
static int decode_header(reader *r, size_t n, const ftc__heal_limits *lim,
                         ftc__heal_meta *m)
{
    char magic[FTC__HEAL_MAGIC_LEN];
    uint64_t step, batches;
    uint8_t counts[8];
    if (!take(r, magic, sizeof(magic)) || !take_u64(r, &step) ||
        !take_u64(r, &batches) || !take_u64(r, &m->total_bytes) ||
        !take_u64(r, &m->chunk_bytes) || !take(r, counts, 8)) {
        return ftc__seterr(FTC_EPROTO,
                           "heal metadata: %zu B is shorter than "
                           "its header",
                           n);
    }
    if (memcmp(magic, FTC__HEAL_MAGIC, sizeof(magic)) != 0) {
        return ftc__seterr(FTC_EPROTO, "heal metadata: bad magic");
    }
    if (step > INT64_MAX || batches > INT64_MAX) {
        return ftc__seterr(FTC_EPROTO, "heal metadata: step or batches "
                                       "out of range");
    }
    m->step = (int64_t)step;
    m->batches_committed = (int64_t)batches;
    m->n_buffers = ftc__get_u32le(counts);
    m->n_chunks = ftc__get_u32le(counts + 4);
    if (m->n_buffers > lim->max_buffers || m->n_chunks > lim->max_chunks ||
        m->total_bytes > lim->max_total_bytes) {
        return ftc__seterr(FTC_EMSGSIZE,
                           "heal metadata: %u buffers (max %u), %u chunks "
                           "(max %u), %llu B (max %llu)",
                           m->n_buffers, lim->max_buffers, m->n_chunks,
                           lim->max_chunks, (unsigned long long)m->total_bytes,
                           (unsigned long long)lim->max_total_bytes);
    }
    /* Each buffer record takes at least 12 bytes, each chunk 8, the
     * trailer 8: a count the bytes cannot hold is refused unallocated. */
    uint64_t least =
        (uint64_t)m->n_buffers * 12 + (uint64_t)m->n_chunks * 8 + 8;
    if (least > r->left) {
        return ftc__seterr(FTC_EPROTO,
                           "heal metadata: %u buffers and %u chunks do not "
                           "fit in %zu B",
                           m->n_buffers, m->n_chunks, n);
    }
    return 0;
}

int ftc__heal_meta_decode(const uint8_t *p, size_t n,
                          const ftc__heal_limits *lim, ftc__heal_meta *out)
{
    memset(out, 0, sizeof(*out));
    reader r = {p, n};
    ftc__heal_meta m;
    memset(&m, 0, sizeof(m));
    /* The trailer first: a corrupt answer is reported as corrupt. */
    if (n >= FTC__HEAL_HEADER_BYTES + 8 &&
        XXH3_64bits(p, n - 8) != ftc__get_u64le(p + n - 8)) {
        return ftc__seterr(FTC_EPROTO, "heal metadata: checksum mismatch");
    }
    int rc = decode_header(&r, n, lim, &m);
    if (rc != 0) {
        return rc;
    }
    m.buffers =
        ftc__calloc(m.n_buffers > 0 ? m.n_buffers : 1, sizeof(*m.buffers));
    m.chunk_hash =
        ftc__calloc(m.n_chunks > 0 ? m.n_chunks : 1, sizeof(*m.chunk_hash));
    if (m.buffers == NULL || m.chunk_hash == NULL) {
        ftc__heal_meta_fini(&m);
        return ftc__seterr(FTC_ENOMEM, "heal metadata: %u buffers",
                           m.n_buffers);
    }
    for (uint32_t i = 0; rc == 0 && i < m.n_buffers; i++) {
        if (!take_buffer(&r, &m.buffers[i])) {
            rc = ftc__seterr(FTC_EPROTO, "heal metadata: buffer %u malformed",
                             i);
        }
    }
    for (uint32_t i = 0; rc == 0 && i < m.n_chunks; i++) {
        take_u64(&r, &m.chunk_hash[i]);
    }
    if (rc == 0 && r.left != 8) {
        rc = ftc__seterr(FTC_EPROTO, "heal metadata: %zu B left over",
                         r.left < 8 ? 0 : r.left - 8);
    }
    rc = rc != 0 ? rc : meta_consistent(&m);
    if (rc != 0) {
        ftc__heal_meta_fini(&m);
        return rc;
    }
    *out = m;
    return 0;
}

void ftc__heal_meta_fini(ftc__heal_meta *m)
{
    if (m != NULL) {
        ftc__free(m->buffers);
        ftc__free(m->chunk_hash);
        memset(m, 0, sizeof(*m));
    }
}

int ftc__heal_layout_check(const ftc__heal_meta *remote,
                           const ftc__heal_buf *local, size_t n_local)
{
    if (remote->n_buffers != n_local) {
        return ftc__seterr(FTC_EPROTO,
                           "state layout differs: the source has %u "
                           "buffers, this replica %zu",
                           remote->n_buffers, n_local);
    }
    for (size_t i = 0; i < n_local; i++) {
        const ftc__heal_buf *a = &remote->buffers[i], *b = &local[i];
        bool same = strcmp(a->name, b->name) == 0 && a->dtype == b->dtype &&
                    a->ndim == b->ndim && a->nbytes == b->nbytes &&
                    memcmp(a->dims, b->dims, a->ndim * sizeof(a->dims[0])) == 0;
        if (!same) {
            return ftc__seterr(FTC_EPROTO,
                               "state layout differs at buffer %zu: the "
                               "source has %s (dtype %u, %u dims, %llu B), "
                               "this replica %s (dtype %u, %u dims, %llu B)",
                               i, a->name, a->dtype, a->ndim,
                               (unsigned long long)a->nbytes, b->name, b->dtype,
                               b->ndim, (unsigned long long)b->nbytes);
        }
    }
    return 0;
}
