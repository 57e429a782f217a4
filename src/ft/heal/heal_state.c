/* The registered state (borrowed buffers, or buffers behind save/load
 * callbacks) and its snapshots: a copy taken at a safe point, or the
 * buffers lent while nobody writes them (callbacks' bytes saved),
 * checksummed per chunk and shared by the healing server's readers. */
#include <pthread.h>
#include <string.h>

#include "base/xxh.h"
#include "ft/heal/heal.h"

void ftc__heal_state_init(ftc__heal_state *s)
{
    memset(s, 0, sizeof(*s));
}

void ftc__heal_state_fini(ftc__heal_state *s)
{
    ftc__free(s->bufs);
    ftc__free(s->data);
    ftc__free(s->cb);
    memset(s, 0, sizeof(*s));
}

/* Appends b reached through data or cb (one of them NULL). */
static int add(ftc__heal_state *s, const ftc__heal_buf *b, void *data,
               const ftc_manager_state_cb *cb)
{
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->bufs[i].name, b->name) == 0) {
            return ftc__seterr(FTC_EEXIST, "buffer %s is registered already",
                               b->name);
        }
    }
    if (cb == NULL && data == NULL && b->nbytes > 0) {
        return ftc__seterr(FTC_EINVAL, "buffer %s: data is NULL", b->name);
    }
    uint64_t total;
    if (__builtin_add_overflow(s->total, b->nbytes, &total) ||
        total > SIZE_MAX) {
        return ftc__seterr(FTC_EMSGSIZE, "registered state overflows");
    }
    if (s->n == s->cap) {
        size_t cap = s->cap > 0 ? 2 * s->cap : 8;
        ftc__heal_buf *bufs = ftc__realloc(s->bufs, cap * sizeof(*bufs));
        if (bufs == NULL) {
            return ftc__seterr(FTC_ENOMEM, "healing registry");
        }
        s->bufs = bufs;
        void **d = ftc__realloc(s->data, cap * sizeof(*d));
        if (d == NULL) {
            return ftc__seterr(FTC_ENOMEM, "healing registry");
        }
        s->data = d;
        ftc_manager_state_cb *c = ftc__realloc(s->cb, cap * sizeof(*c));
        if (c == NULL) {
            return ftc__seterr(FTC_ENOMEM, "healing registry");
        }
        s->cb = c;
        s->cap = cap;
    }
    s->bufs[s->n] = *b;
    s->data[s->n] = cb == NULL ? data : NULL;
    s->cb[s->n] = cb != NULL ? *cb : (ftc_manager_state_cb){NULL, NULL, NULL};
    s->n++;
    s->total = total;
    s->cb_bytes += cb != NULL ? b->nbytes : 0;
    return 0;
}

int ftc__heal_state_add(ftc__heal_state *s, const ftc__heal_buf *b, void *data)
{
    return add(s, b, data, NULL);
}

int ftc__heal_state_add_cb(ftc__heal_state *s, const ftc__heal_buf *b,
                           const ftc_manager_state_cb *cb)
{
    if (cb == NULL || cb->save == NULL || cb->load == NULL) {
        return ftc__seterr(FTC_EINVAL,
                           "buffer %s: save and load callbacks "
                           "required",
                           b->name);
    }
    return add(s, b, NULL, cb);
}

bool ftc__heal_state_is_cb(const ftc__heal_state *s, size_t i)
{
    return s->cb[i].save != NULL;
}

/* What a snapshot is taken from: the layout, and where each buffer's
 * bytes are (a registrant's memory, saved bytes, another snapshot's). */
typedef struct view {
    const ftc__heal_buf *bufs;
    size_t n;
    uint64_t total;
    const uint8_t **src; /* n; NULL for a buffer already in the copy */
} view;

/* The snapshot's segments: the view's buffers (lent), or its copy. */
static int make_segs(ftc__heal_snapshot *snap, const view *v)
{
    snap->segs = ftc__calloc(v->n > 0 ? v->n : 1, sizeof(*snap->segs));
    if (snap->segs == NULL) {
        return ftc__seterr(FTC_ENOMEM, "snapshot segments");
    }
    if (snap->copy != NULL) {
        snap->segs[0] = (ftc__heal_seg){snap->copy, 0, v->total};
        snap->n_segs = v->total > 0;
        return 0;
    }
    uint64_t off = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (v->bufs[i].nbytes > 0) {
            snap->segs[snap->n_segs++] =
                (ftc__heal_seg){v->src[i], off, v->bufs[i].nbytes};
        }
        off += v->bufs[i].nbytes;
    }
    return 0;
}

/* The index of the segment holding state offset off (segs not empty). */
static size_t seg_at(const ftc__heal_snapshot *snap, uint64_t off)
{
    size_t lo = 0, hi = snap->n_segs;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (snap->segs[mid].off <= off) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

ftc__heal_seg ftc__heal_snapshot_piece(const ftc__heal_snapshot *snap,
                                       uint64_t off, uint64_t len)
{
    const ftc__heal_seg *g = &snap->segs[seg_at(snap, off)];
    uint64_t skip = off - g->off;
    uint64_t k = g->len - skip < len ? g->len - skip : len;
    return (ftc__heal_seg){g->p + skip, off, k};
}

/* XXH3-64 of chunk i, read through the snapshot's segments (one-shot when
 * the chunk is one piece, as it is in a copy). */
static uint64_t chunk_hash(const ftc__heal_snapshot *snap, uint32_t i,
                           XXH3_state_t *h)
{
    uint64_t off, len;
    ftc__heal_chunk_range(&snap->meta, i, &off, &len);
    ftc__heal_seg p = ftc__heal_snapshot_piece(snap, off, len);
    if (p.len == len) {
        return XXH3_64bits(p.p, len);
    }
    XXH3_64bits_reset(h);
    while (len > 0) {
        p = ftc__heal_snapshot_piece(snap, off, len);
        XXH3_64bits_update(h, p.p, p.len);
        off += p.len;
        len -= p.len;
    }
    return XXH3_64bits_digest(h);
}

/* Copies state bytes [off, off + len) into dst, crossing buffers; those
 * already in place (src NULL) are skipped. */
static void gather(const view *v, uint64_t off, uint8_t *dst, uint64_t len,
                   size_t *cursor, uint64_t *cursor_off)
{
    size_t j = *cursor;
    uint64_t base = *cursor_off;
    while (len > 0) {
        uint64_t end = base + v->bufs[j].nbytes;
        if (off >= end) {
            base = end;
            j++;
            continue;
        }
        uint64_t n = end - off < len ? end - off : len;
        if (v->src[j] != NULL) {
            memcpy(dst, v->src[j] + (off - base), n);
        }
        dst += n;
        off += n;
        len -= n;
    }
    *cursor = j;
    *cursor_off = base;
}

/* A thread's share of a snapshot's chunks, [first, end): copied (when
 * the snapshot is a copy) and checksummed. */
typedef struct share {
    const view *v;
    ftc__heal_snapshot *snap;
    bool copy;
    uint32_t first, end;
    bool failed;
} share;

static void *fill_share(void *arg)
{
    share *w = arg;
    ftc__heal_meta *m = &w->snap->meta;
    XXH3_state_t *h = XXH3_createState();
    w->failed = h == NULL;
    /* A copy is hashed chunk by chunk right after it is written, while
     * the chunk is still in the cache. */
    size_t cursor = 0;
    uint64_t cursor_off = 0;
    for (uint32_t i = w->first; h != NULL && i < w->end; i++) {
        if (w->copy) {
            uint64_t off, len;
            ftc__heal_chunk_range(m, i, &off, &len);
            gather(w->v, off, w->snap->copy + off, len, &cursor, &cursor_off);
        }
        m->chunk_hash[i] = chunk_hash(w->snap, i, h);
    }
    XXH3_freeState(h);
    return NULL;
}

/* Copies and checksums every chunk on up to `threads` threads (the
 * caller's included): one pass over the state runs at memory speed, and
 * several cores read memory faster than one. Small states take one. */
static int fill(const view *v, ftc__heal_snapshot *snap, bool copy,
                unsigned threads)
{
    uint32_t n = snap->meta.n_chunks;
    unsigned k = v->total >= FTC__HEAL_PARALLEL_BYTES ? threads : 1;
    k = k < FTC__HEAL_MAX_FILL_THREADS ? k : FTC__HEAL_MAX_FILL_THREADS;
    k = k < n ? k : (n > 0 ? n : 1);
    k = k > 0 ? k : 1;
    share w[FTC__HEAL_MAX_FILL_THREADS];
    pthread_t th[FTC__HEAL_MAX_FILL_THREADS];
    unsigned started = 1;
    for (unsigned t = 0; t < k; t++) {
        w[t] = (share){v,
                       snap,
                       copy,
                       (uint32_t)((uint64_t)n * t / k),
                       (uint32_t)((uint64_t)n * (t + 1) / k),
                       false};
    }
    for (; started < k; started++) {
        if (ftc__thread_start(&th[started], "ftc-heal-fill", fill_share,
                              &w[started]) != 0) {
            break;
        }
    }
    /* The caller's share, then those that got no thread. */
    for (unsigned t = 0; t < k; t = t == 0 ? started : t + 1) {
        fill_share(&w[t]);
    }
    for (unsigned t = 1; t < started; t++) {
        pthread_join(th[t], NULL);
    }
    bool failed = false;
    for (unsigned t = 0; t < k; t++) {
        failed = failed || w[t].failed;
    }
    return failed ? ftc__seterr(FTC_ENOMEM, "snapshot checksums") : 0;
}

/* Takes a snapshot of the view: a copy (copy true: the bytes of buffers
 * whose src is NULL are in it already) or the view's memory lent. snap
 * comes with its copy allocated, if any; it is freed on failure. */
static int snapshot(ftc__heal_snapshot *snap, const view *v, int64_t step,
                    int64_t batches_committed, uint64_t chunk_bytes,
                    unsigned threads, ftc__heal_snapshot **out)
{
    *out = NULL;
    bool copy = snap->copy != NULL;
    uint64_t n_chunks = ftc__heal_chunk_count(v->total, chunk_bytes);
    ftc__heal_meta *m = &snap->meta;
    m->step = step;
    m->batches_committed = batches_committed;
    m->total_bytes = v->total;
    m->chunk_bytes = chunk_bytes;
    m->n_buffers = (uint32_t)v->n;
    m->n_chunks = (uint32_t)n_chunks;
    /* An empty state has no buffer array to copy (v->bufs may be NULL);
     * it still gets one allocation, so that NULL means out of memory. */
    m->buffers = v->n > 0 ? ftc__memdup(v->bufs, v->n * sizeof(*v->bufs))
                          : ftc__calloc(1, sizeof(*v->bufs));
    m->chunk_hash = ftc__calloc(n_chunks > 0 ? n_chunks : 1, sizeof(uint64_t));
    int rc = 0;
    if (m->buffers == NULL || m->chunk_hash == NULL) {
        rc = ftc__seterr(FTC_ENOMEM, "snapshot of %llu B",
                         (unsigned long long)v->total);
    }
    rc = rc != 0 ? rc : make_segs(snap, v);
    rc = rc != 0 ? rc : fill(v, snap, copy, threads);
    if (rc == 0) {
        ftc__buf b;
        ftc__buf_init(&b, SIZE_MAX);
        rc = ftc__heal_meta_encode(m, &b);
        snap->meta_bytes = ftc__buf_detach(&b, &snap->meta_len);
        ftc__buf_free(&b);
        if (rc == 0 && snap->meta_bytes == NULL) {
            rc = ftc__seterr(FTC_ENOMEM, "snapshot metadata");
        }
    }
    if (rc != 0) {
        ftc__heal_snapshot_unref(snap);
        return rc;
    }
    *out = snap;
    return 0;
}

/* An empty snapshot of total bytes (n buffers) in chunks of chunk_bytes,
 * with a copy area (copy) and a save area of saved bytes. */
static int blank(uint64_t total, size_t n, int64_t step,
                 int64_t batches_committed, uint64_t chunk_bytes, bool copy,
                 uint64_t saved, ftc__heal_snapshot **out)
{
    *out = NULL;
    if (chunk_bytes == 0 || step < 0 || batches_committed < 0) {
        return ftc__seterr(FTC_EINVAL, "snapshot: chunk_bytes %llu, step %lld",
                           (unsigned long long)chunk_bytes, (long long)step);
    }
    uint64_t n_chunks = ftc__heal_chunk_count(total, chunk_bytes);
    if (n_chunks > UINT32_MAX || n > UINT32_MAX) {
        return ftc__seterr(FTC_EMSGSIZE, "snapshot: %llu chunks",
                           (unsigned long long)n_chunks);
    }
    ftc__heal_snapshot *snap = ftc__calloc(1, sizeof(*snap));
    if (snap != NULL) {
        atomic_init(&snap->refs, 1);
        snap->copy = copy ? ftc__malloc(total > 0 ? total : 1) : NULL;
        snap->saved = saved > 0 ? ftc__malloc(saved) : NULL;
        if ((copy && snap->copy == NULL) ||
            (saved > 0 && snap->saved == NULL)) {
            ftc__heal_snapshot_unref(snap);
            snap = NULL;
        }
    }
    if (snap == NULL) {
        return ftc__seterr(FTC_ENOMEM, "snapshot of %llu B",
                           (unsigned long long)total);
    }
    *out = snap;
    return 0;
}

/* Where each buffer of s is read from, the buffers behind callbacks
 * saved first (on this thread, in registration order): into their place
 * in snap's copy (src NULL: nothing more to copy), or into its save
 * area. */
static int save_all(const ftc__heal_state *s, ftc__heal_snapshot *snap,
                    const uint8_t **src)
{
    uint64_t off = 0, soff = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t len = s->bufs[i].nbytes;
        src[i] = s->data[i];
        if (ftc__heal_state_is_cb(s, i) && len > 0) {
            uint8_t *dst =
                snap->copy != NULL ? snap->copy + off : snap->saved + soff;
            int rc = s->cb[i].save(s->cb[i].user, dst, (size_t)len);
            if (rc != 0) {
                return ftc__seterr(FTC_ECANCELED,
                                   "save callback of buffer %s returned %d",
                                   s->bufs[i].name, rc);
            }
            src[i] = snap->copy != NULL ? NULL : dst;
            soff += len;
        }
        snap->borrows = snap->borrows || (snap->copy == NULL && len > 0 &&
                                          !ftc__heal_state_is_cb(s, i));
        off += len;
    }
    return 0;
}

/* A snapshot of the registered state: a copy, or lent. */
static int of_state(const ftc__heal_state *s, int64_t step,
                    int64_t batches_committed, uint64_t chunk_bytes, bool copy,
                    unsigned threads, ftc__heal_snapshot **out)
{
    *out = NULL;
    ftc__heal_snapshot *snap;
    int rc = blank(s->total, s->n, step, batches_committed, chunk_bytes, copy,
                   copy ? 0 : s->cb_bytes, &snap);
    const uint8_t **src =
        rc == 0 ? ftc__calloc(s->n > 0 ? s->n : 1, sizeof(*src)) : NULL;
    if (rc == 0 && src == NULL) {
        rc = ftc__seterr(FTC_ENOMEM, "snapshot");
    }
    rc = rc != 0 ? rc : save_all(s, snap, src);
    if (rc != 0) {
        ftc__heal_snapshot_unref(snap);
        ftc__free(src);
        return rc;
    }
    view v = {s->bufs, s->n, s->total, src};
    rc = snapshot(snap, &v, step, batches_committed, chunk_bytes, threads, out);
    ftc__free(src);
    return rc;
}

int ftc__heal_snapshot_take(const ftc__heal_state *s, int64_t step,
                            int64_t batches_committed, uint64_t chunk_bytes,
                            unsigned threads, ftc__heal_snapshot **out)
{
    return of_state(s, step, batches_committed, chunk_bytes, true, threads,
                    out);
}

int ftc__heal_snapshot_lend(const ftc__heal_state *s, int64_t step,
                            int64_t batches_committed, uint64_t chunk_bytes,
                            unsigned threads, ftc__heal_snapshot **out)
{
    return of_state(s, step, batches_committed, chunk_bytes, false, threads,
                    out);
}

int ftc__heal_snapshot_copy(const ftc__heal_snapshot *from, unsigned threads,
                            ftc__heal_snapshot **out)
{
    *out = NULL;
    const ftc__heal_meta *m = &from->meta;
    ftc__heal_snapshot *snap;
    int rc = blank(m->total_bytes, m->n_buffers, m->step, m->batches_committed,
                   m->chunk_bytes, true, 0, &snap);
    const uint8_t **src =
        rc == 0 ? ftc__calloc(m->n_buffers > 0 ? m->n_buffers : 1, sizeof(*src))
                : NULL;
    if (rc == 0 && src == NULL) {
        ftc__heal_snapshot_unref(snap);
        rc = ftc__seterr(FTC_ENOMEM, "copy of a snapshot");
    }
    if (rc != 0) {
        return rc;
    }
    /* Each buffer is one piece of from (a lent snapshot has a segment
     * per buffer, a copy one for all). */
    uint64_t off = 0;
    for (uint32_t i = 0; i < m->n_buffers; i++) {
        uint64_t len = m->buffers[i].nbytes;
        src[i] = len > 0 ? ftc__heal_snapshot_piece(from, off, len).p : NULL;
        off += len;
    }
    view v = {m->buffers, m->n_buffers, m->total_bytes, src};
    rc = snapshot(snap, &v, m->step, m->batches_committed, m->chunk_bytes,
                  threads, out);
    ftc__free(src);
    return rc;
}

ftc__heal_snapshot *ftc__heal_snapshot_ref(ftc__heal_snapshot *snap)
{
    if (snap != NULL) {
        atomic_fetch_add(&snap->refs, 1);
    }
    return snap;
}

void ftc__heal_snapshot_unref(ftc__heal_snapshot *snap)
{
    if (snap != NULL && atomic_fetch_sub(&snap->refs, 1) == 1) {
        ftc__heal_meta_fini(&snap->meta);
        ftc__free(snap->segs);
        ftc__free(snap->copy);
        ftc__free(snap->saved);
        ftc__free(snap->meta_bytes);
        ftc__free(snap);
    }
}
