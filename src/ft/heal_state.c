/* The registered state and its snapshots: a copy taken at a safe point,
 * or the buffers themselves lent while nobody writes them, checksummed per
 * chunk and shared by the healing server's readers. */
#include <pthread.h>
#include <string.h>

#include "base/xxh.h"
#include "ft/heal.h"

void ftc__heal_state_init(ftc_heal_state *s)
{
    memset(s, 0, sizeof(*s));
}

void ftc__heal_state_fini(ftc_heal_state *s)
{
    ftc__free(s->bufs);
    ftc__free(s->data);
    memset(s, 0, sizeof(*s));
}

int ftc__heal_state_add(ftc_heal_state *s, const ftc_heal_buf *b, void *data)
{
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->bufs[i].name, b->name) == 0) {
            return ftc__seterr(FTC_EEXIST, "buffer %s is registered already",
                               b->name);
        }
    }
    if (data == NULL && b->nbytes > 0) {
        return ftc__seterr(FTC_EINVAL, "buffer %s: data is NULL", b->name);
    }
    uint64_t total;
    if (__builtin_add_overflow(s->total, b->nbytes, &total) ||
        total > SIZE_MAX) {
        return ftc__seterr(FTC_EMSGSIZE, "registered state overflows");
    }
    if (s->n == s->cap) {
        size_t cap = s->cap > 0 ? 2 * s->cap : 8;
        ftc_heal_buf *bufs = ftc__realloc(s->bufs, cap * sizeof(*bufs));
        if (bufs == NULL) {
            return ftc__seterr(FTC_ENOMEM, "healing registry");
        }
        s->bufs = bufs;
        void **d = ftc__realloc(s->data, cap * sizeof(*d));
        if (d == NULL) {
            return ftc__seterr(FTC_ENOMEM, "healing registry");
        }
        s->data = d;
        s->cap = cap;
    }
    s->bufs[s->n] = *b;
    s->data[s->n] = data;
    s->n++;
    s->total = total;
    return 0;
}

/* The snapshot's segments: the registered buffers (lent), or its copy. */
static int make_segs(ftc_heal_snapshot *snap, const ftc_heal_state *s)
{
    snap->segs = ftc__calloc(s->n > 0 ? s->n : 1, sizeof(*snap->segs));
    if (snap->segs == NULL) {
        return ftc__seterr(FTC_ENOMEM, "snapshot segments");
    }
    if (snap->copy != NULL) {
        snap->segs[0] = (ftc_heal_seg){snap->copy, 0, s->total};
        snap->n_segs = s->total > 0;
        return 0;
    }
    uint64_t off = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->bufs[i].nbytes > 0) {
            snap->segs[snap->n_segs++] =
                (ftc_heal_seg){s->data[i], off, s->bufs[i].nbytes};
        }
        off += s->bufs[i].nbytes;
    }
    return 0;
}

/* The index of the segment holding state offset off (segs not empty). */
static size_t seg_at(const ftc_heal_snapshot *snap, uint64_t off)
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

ftc_heal_seg ftc__heal_snapshot_piece(const ftc_heal_snapshot *snap,
                                      uint64_t off, uint64_t len)
{
    const ftc_heal_seg *g = &snap->segs[seg_at(snap, off)];
    uint64_t skip = off - g->off;
    uint64_t k = g->len - skip < len ? g->len - skip : len;
    return (ftc_heal_seg){g->p + skip, off, k};
}

/* XXH3-64 of chunk i, read through the snapshot's segments (one-shot when
 * the chunk is one piece, as it is in a copy). */
static uint64_t chunk_hash(const ftc_heal_snapshot *snap, uint32_t i,
                           XXH3_state_t *h)
{
    uint64_t off, len;
    ftc__heal_chunk_range(&snap->meta, i, &off, &len);
    ftc_heal_seg p = ftc__heal_snapshot_piece(snap, off, len);
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

/* Copies state bytes [off, off + len) into dst, crossing buffers. */
static void gather(const ftc_heal_state *s, uint64_t off, uint8_t *dst,
                   uint64_t len, size_t *cursor, uint64_t *cursor_off)
{
    size_t j = *cursor;
    uint64_t base = *cursor_off;
    while (len > 0) {
        uint64_t end = base + s->bufs[j].nbytes;
        if (off >= end) {
            base = end;
            j++;
            continue;
        }
        uint64_t n = end - off < len ? end - off : len;
        memcpy(dst, (const uint8_t *)s->data[j] + (off - base), n);
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
    const ftc_heal_state *s;
    ftc_heal_snapshot *snap;
    bool copy;
    uint32_t first, end;
    bool failed;
} share;

static void *fill_share(void *arg)
{
    share *w = arg;
    ftc_heal_meta *m = &w->snap->meta;
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
            gather(w->s, off, w->snap->copy + off, len, &cursor, &cursor_off);
        }
        m->chunk_hash[i] = chunk_hash(w->snap, i, h);
    }
    XXH3_freeState(h);
    return NULL;
}

/* Copies and checksums every chunk on up to `threads` threads (the
 * caller's included): one pass over the state runs at memory speed, and
 * several cores read memory faster than one. Small states take one. */
static int fill(const ftc_heal_state *s, ftc_heal_snapshot *snap, bool copy,
                unsigned threads)
{
    uint32_t n = snap->meta.n_chunks;
    unsigned k = s->total >= FTC__HEAL_PARALLEL_BYTES ? threads : 1;
    k = k < FTC__HEAL_MAX_FILL_THREADS ? k : FTC__HEAL_MAX_FILL_THREADS;
    k = k < n ? k : (n > 0 ? n : 1);
    k = k > 0 ? k : 1;
    share w[FTC__HEAL_MAX_FILL_THREADS];
    pthread_t th[FTC__HEAL_MAX_FILL_THREADS];
    unsigned started = 1;
    for (unsigned t = 0; t < k; t++) {
        w[t] = (share){s,
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

/* Takes a snapshot of s: a copy (copy true) or the buffers lent. */
static int snapshot(const ftc_heal_state *s, int64_t step,
                    int64_t batches_committed, uint64_t chunk_bytes, bool copy,
                    unsigned threads, ftc_heal_snapshot **out)
{
    *out = NULL;
    if (chunk_bytes == 0 || step < 0 || batches_committed < 0) {
        return ftc__seterr(FTC_EINVAL, "snapshot: chunk_bytes %llu, step %lld",
                           (unsigned long long)chunk_bytes, (long long)step);
    }
    uint64_t n_chunks = ftc__heal_chunk_count(s->total, chunk_bytes);
    if (n_chunks > UINT32_MAX || s->n > UINT32_MAX) {
        return ftc__seterr(FTC_EMSGSIZE, "snapshot: %llu chunks",
                           (unsigned long long)n_chunks);
    }
    ftc_heal_snapshot *snap = ftc__calloc(1, sizeof(*snap));
    if (snap == NULL) {
        return ftc__seterr(FTC_ENOMEM, "snapshot");
    }
    atomic_init(&snap->refs, 1);
    ftc_heal_meta *m = &snap->meta;
    m->step = step;
    m->batches_committed = batches_committed;
    m->total_bytes = s->total;
    m->chunk_bytes = chunk_bytes;
    m->n_buffers = (uint32_t)s->n;
    m->n_chunks = (uint32_t)n_chunks;
    m->buffers = ftc__memdup(s->bufs, (s->n > 0 ? s->n : 1) * sizeof(*s->bufs));
    m->chunk_hash = ftc__calloc(n_chunks > 0 ? n_chunks : 1, sizeof(uint64_t));
    if (copy) {
        snap->copy = ftc__malloc(s->total > 0 ? s->total : 1);
    }
    int rc = 0;
    if (m->buffers == NULL || m->chunk_hash == NULL ||
        (copy && snap->copy == NULL)) {
        rc = ftc__seterr(FTC_ENOMEM, "snapshot of %llu B",
                         (unsigned long long)s->total);
    }
    rc = rc != 0 ? rc : make_segs(snap, s);
    rc = rc != 0 ? rc : fill(s, snap, copy, threads);
    if (rc == 0) {
        ftc_buf b;
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

int ftc__heal_snapshot_take(const ftc_heal_state *s, int64_t step,
                            int64_t batches_committed, uint64_t chunk_bytes,
                            unsigned threads, ftc_heal_snapshot **out)
{
    return snapshot(s, step, batches_committed, chunk_bytes, true, threads,
                    out);
}

int ftc__heal_snapshot_lend(const ftc_heal_state *s, int64_t step,
                            int64_t batches_committed, uint64_t chunk_bytes,
                            unsigned threads, ftc_heal_snapshot **out)
{
    return snapshot(s, step, batches_committed, chunk_bytes, false, threads,
                    out);
}

ftc_heal_snapshot *ftc__heal_snapshot_ref(ftc_heal_snapshot *snap)
{
    if (snap != NULL) {
        atomic_fetch_add(&snap->refs, 1);
    }
    return snap;
}

void ftc__heal_snapshot_unref(ftc_heal_snapshot *snap)
{
    if (snap != NULL && atomic_fetch_sub(&snap->refs, 1) == 1) {
        ftc__heal_meta_fini(&snap->meta);
        ftc__free(snap->segs);
        ftc__free(snap->copy);
        ftc__free(snap->meta_bytes);
        ftc__free(snap);
    }
}
