/* A connection's replies: everything one loop iteration produces is
 * gathered into one batch and handed to the kernel with one writev; values
 * over a few KiB are sent from the store's memory instead of copied. */
#include <stdio.h>
#include <string.h>

#include "store/server/server_int.h"

/* Values up to this size are copied into the batch; bigger ones are
 * referenced (a copy is cheaper than an extra iovec for small ones). */
#define INLINE_MAX 4096

/* Admits n more bytes of output, of which `copied` are copied into the
 * batch (the rest are referenced values): 0 if the connection is closing,
 * or now closed because its unsent output would pass max_output_bytes (a
 * client that does not read its replies) or the copy max_total_bytes. */
static int admit(store_conn *c, uint64_t n, uint64_t copied)
{
    if (c->closing) {
        return 0;
    }
    uint64_t unsent = c->pending.total + c->inflight_left;
    uint64_t max = c->srv->opts.max_output_bytes;
    if (n > max || unsent > max - n) {
        char why[128];
        snprintf(why, sizeof(why),
                 "%llu B of replies unsent + %llu B > limit %llu (the client "
                 "is not reading)",
                 (unsigned long long)unsent, (unsigned long long)n,
                 (unsigned long long)max);
        c->srv->live.slow_drops++;
        ftc__conn_close(c, FTC_LOG_WARN, "store.backlog", why);
        return 0;
    }
    if (!ftc__conn_hold_output(c, copied)) {
        return 0;
    }
    if (!ftc__list_linked(&c->dirty_node)) {
        ftc__list_push_back(&c->srv->dirty, &c->dirty_node);
    }
    return 1;
}

static int push_seg(store_conn *c, size_t off, size_t len, ftc__kv_value *ref)
{
    store_batch *b = &c->pending;
    if (b->nsegs == b->cap_segs) {
        size_t cap = b->cap_segs < 8 ? 8 : b->cap_segs * 2;
        store_seg *segs = ftc__realloc(b->segs, cap * sizeof(*segs));
        if (segs == NULL) {
            ftc__conn_close(c, FTC_LOG_ERROR, "store.nomem",
                            "no memory for replies");
            return FTC_ENOMEM;
        }
        b->segs = segs;
        b->cap_segs = cap;
    }
    store_seg *s = &b->segs[b->nsegs++];
    s->off = off;
    s->len = len;
    s->ref = ref;
    b->total += len;
    return 0;
}

/* Copies bytes into the batch, growing its last segment when they follow
 * it directly. */
static void add_bytes(store_conn *c, const void *p, size_t n)
{
    store_batch *b = &c->pending;
    size_t off = b->bytes.len;
    if (n == 0 || c->closing) {
        return;
    }
    if (ftc__buf_append(&b->bytes, p, n) != 0) {
        ftc__conn_close(c, FTC_LOG_ERROR, "store.nomem",
                        "no memory for replies");
        return;
    }
    store_seg *last = b->nsegs > 0 ? &b->segs[b->nsegs - 1] : NULL;
    if (last != NULL && last->ref == NULL && last->off + last->len == off) {
        last->len += n;
        b->total += n;
        return;
    }
    push_seg(c, off, n, NULL);
}

void ftc__out_u8(store_conn *c, uint8_t v)
{
    if (admit(c, 1, 1)) {
        add_bytes(c, &v, 1);
    }
}

void ftc__out_u32(store_conn *c, uint32_t v)
{
    uint8_t raw[4];
    ftc__put_u32le(raw, v);
    if (admit(c, sizeof(raw), sizeof(raw))) {
        add_bytes(c, raw, sizeof(raw));
    }
}

void ftc__out_i64(store_conn *c, int64_t v)
{
    uint8_t raw[8];
    ftc__put_u64le(raw, (uint64_t)v);
    if (admit(c, sizeof(raw), sizeof(raw))) {
        add_bytes(c, raw, sizeof(raw));
    }
}

void ftc__out_raw(store_conn *c, const void *p, size_t n)
{
    if (admit(c, n, n)) {
        add_bytes(c, p, n);
    }
}

void ftc__out_str(store_conn *c, const void *p, size_t n)
{
    uint8_t raw[8];
    ftc__put_u64le(raw, n);
    uint64_t all = sizeof(raw) + (uint64_t)n;
    if (admit(c, all, all)) {
        add_bytes(c, raw, sizeof(raw));
        add_bytes(c, p, n);
    }
}

void ftc__out_value(store_conn *c, const ftc__kv_value *v)
{
    if (v == NULL || v->len <= INLINE_MAX) {
        ftc__out_str(c, v != NULL ? v->data : NULL, v != NULL ? v->len : 0);
        return;
    }
    uint8_t raw[8];
    ftc__put_u64le(raw, v->len);
    if (admit(c, sizeof(raw) + (uint64_t)v->len, ftc__out_value_cost(v))) {
        add_bytes(c, raw, sizeof(raw));
        ftc__kv_value *ref = ftc__kv_value_ref((ftc__kv_value *)v);
        if (c->closing || push_seg(c, 0, v->len, ref) != 0) {
            ftc__kv_value_unref(ref);
        }
    }
}

uint64_t ftc__out_value_cost(const ftc__kv_value *v)
{
    if (v == NULL || v->len <= INLINE_MAX) {
        return 8 + (v != NULL ? v->len : 0);
    }
    return 8 + sizeof(store_seg);
}

int ftc__out_prepare(store_conn *c, uint64_t n)
{
    if (c->closing || !ftc__conn_hold_output(c, n)) {
        return 0;
    }
    /* Exactly that room, not double: it was checked against the limit. */
    if (n > SIZE_MAX || ftc__buf_reserve_exact(&c->pending.bytes, n) != 0) {
        ftc__conn_close(c, FTC_LOG_ERROR, "store.nomem",
                        "no memory for replies");
        return 0;
    }
    return 1;
}

void ftc__out_release(store_batch *b)
{
    for (size_t i = 0; i < b->nsegs; i++) {
        ftc__kv_value_unref(b->segs[i].ref);
    }
    b->nsegs = 0;
    b->total = 0;
    /* Keep a small buffer for the next replies; give big ones back (what
     * stays is counted against the total limit). */
    if (b->bytes.cap > FTC__STORE_CONN_FREE / 2) {
        ftc__buf_free(&b->bytes);
    } else {
        ftc__buf_reset(&b->bytes);
    }
}

void ftc__out_destroy(store_batch *b)
{
    ftc__out_release(b);
    ftc__buf_free(&b->bytes);
    ftc__free(b->segs);
    b->segs = NULL;
    b->cap_segs = 0;
}

/* Fills the server's scratch iovecs with a batch's segments. */
static int build_iov(struct ftc_store_server *srv, const store_batch *b)
{
    if (b->nsegs > srv->cap_iov) {
        uv_buf_t *iov = ftc__realloc(srv->iov, b->nsegs * sizeof(*iov));
        if (iov == NULL) {
            return FTC_ENOMEM;
        }
        srv->iov = iov;
        srv->cap_iov = b->nsegs;
    }
    for (size_t i = 0; i < b->nsegs; i++) {
        const store_seg *s = &b->segs[i];
        const uint8_t *base =
            s->ref != NULL ? s->ref->data : b->bytes.data + s->off;
        srv->iov[i].base = (char *)base;
        srv->iov[i].len = s->len;
    }
    return 0;
}

static void on_written(uv_write_t *req, int status)
{
    store_conn *c = req->data;
    c->writing = 0;
    c->inflight_left = 0;
    ftc__out_release(&c->inflight);
    if (status < 0) {
        ftc__conn_close(c, FTC_LOG_DEBUG, "store.write", uv_strerror(status));
        return;
    }
    ftc__out_flush(c);
}

static void flush(store_conn *c);

void ftc__out_flush(store_conn *c)
{
    flush(c);
    if (!c->closing) {
        ftc__conn_account(c);
        ftc__conn_output_drained(c);
    }
}

static void flush(store_conn *c)
{
    if (c->closing || c->writing || c->pending.total == 0) {
        return;
    }
    /* The previous inflight batch is empty: swap, so its buffers serve
     * the next iteration's replies. */
    store_batch spare = c->inflight;
    c->inflight = c->pending;
    c->pending = spare;
    c->inflight_left = c->inflight.total;
    struct ftc_store_server *srv = c->srv;
    if (build_iov(srv, &c->inflight) != 0) {
        ftc__conn_close(c, FTC_LOG_ERROR, "store.nomem", "no memory to write");
        return;
    }
    uv_stream_t *stream = (uv_stream_t *)&c->tcp;
    size_t n = c->inflight.nsegs;
    int w = uv_try_write(stream, srv->iov, (unsigned int)n);
    if (w == UV_EAGAIN) {
        w = 0;
    }
    if (w < 0) {
        ftc__conn_close(c, FTC_LOG_DEBUG, "store.write", uv_strerror(w));
        return;
    }
    c->inflight_left -= (uint64_t)w;
    if (c->inflight_left == 0) {
        ftc__out_release(&c->inflight);
        return;
    }
    /* The kernel took part: queue the rest, starting mid-segment. */
    size_t i = 0, skip = (size_t)w;
    while (skip >= srv->iov[i].len) {
        skip -= srv->iov[i].len;
        i++;
    }
    srv->iov[i].base += skip;
    srv->iov[i].len -= skip;
    c->wreq.data = c;
    int rc = uv_write(&c->wreq, stream, srv->iov + i, (unsigned int)(n - i),
                      on_written);
    if (rc != 0) {
        ftc__conn_close(c, FTC_LOG_DEBUG, "store.write", uv_strerror(rc));
        return;
    }
    c->writing = 1;
}
