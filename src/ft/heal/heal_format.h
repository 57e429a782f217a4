/* The healing transfer's metadata: a typed description of a snapshot
 * (named buffers with dtype and shape, chunks with XXH3 checksums) and its
 * byte encoding (docs/protocol.md, "Healing transfer"). Pure: no I/O.
 *
 * A snapshot is the concatenation of its buffers' bytes in registration
 * order, cut into chunks of chunk_bytes (the last one shorter). Metadata
 * is only ever data: names, numbers and checksums, never code. */
#ifndef FTC_FT_HEAL_FORMAT_H
#define FTC_FT_HEAL_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define FTC__HEAL_MAGIC "FTCHEAL1"
#define FTC__HEAL_MAGIC_LEN 8
/* Bytes of a buffer name (no NUL inside), and dimensions of a shape. */
#define FTC__HEAL_NAME_MAX 255
#define FTC__HEAL_NDIM_MAX 8
/* Fixed header: magic, step, batches, total, chunk_bytes, n_buffers,
 * n_chunks. */
#define FTC__HEAL_HEADER_BYTES 48

/* One registered buffer as the metadata describes it. */
typedef struct ftc__heal_buf {
    char name[FTC__HEAL_NAME_MAX + 1];
    uint8_t dtype; /* an ftc_dtype value; compared, never interpreted */
    uint8_t ndim;
    uint64_t dims[FTC__HEAL_NDIM_MAX];
    uint64_t nbytes;
} ftc__heal_buf;

typedef struct ftc__heal_meta {
    int64_t step;              /* the source's committed steps */
    int64_t batches_committed; /* the source's counter */
    uint64_t total_bytes;      /* sum of the buffers' nbytes */
    uint64_t chunk_bytes;      /* >= 1 */
    uint32_t n_buffers;
    uint32_t n_chunks;      /* ceil(total_bytes / chunk_bytes) */
    ftc__heal_buf *buffers; /* owned */
    uint64_t *chunk_hash;   /* XXH3-64 of each chunk; owned */
} ftc__heal_meta;

/* What a decoder accepts from the network; each bounds an allocation. */
typedef struct ftc__heal_limits {
    uint32_t max_buffers;
    uint32_t max_chunks;
    uint64_t max_total_bytes;
} ftc__heal_limits;

/* Fills a buffer description: FTC_EINVAL for an empty name, one longer
 * than FTC__HEAL_NAME_MAX, ndim > FTC__HEAL_NDIM_MAX or a negative
 * dimension; FTC_EMSGSIZE if the byte count overflows. elem_size is the
 * dtype's element size. */
int ftc__heal_buf_set(ftc__heal_buf *b, const char *name, int dtype,
                      const int64_t *dims, int ndim, size_t elem_size);

/* ceil(total / chunk_bytes); chunk_bytes >= 1. */
uint64_t ftc__heal_chunk_count(uint64_t total, uint64_t chunk_bytes);
/* Byte range [*off, *off + *len) of chunk i. */
void ftc__heal_chunk_range(const ftc__heal_meta *m, uint32_t i, uint64_t *off,
                           uint64_t *len);

/* Appends m's encoding to out. FTC_EINVAL if m is inconsistent (counts,
 * totals, names), FTC_EMSGSIZE/FTC_ENOMEM from the buffer. */
int ftc__heal_meta_encode(const ftc__heal_meta *m, ftc__buf *out);

/* Decodes p[0..n) into *out (initialised, empty on failure), checking
 * every count against lim before allocating and every field against the
 * others: FTC_EPROTO (malformed, inconsistent or a checksum mismatch) or
 * FTC_EMSGSIZE (over a limit), with the offending field in the message;
 * FTC_ENOMEM. Release with ftc__heal_meta_fini. */
int ftc__heal_meta_decode(const uint8_t *p, size_t n,
                          const ftc__heal_limits *lim, ftc__heal_meta *out);
void ftc__heal_meta_fini(ftc__heal_meta *m);

/* Whether a received layout equals the local one (same buffers in the
 * same order: names, dtypes, shapes, byte counts). 0 or FTC_EPROTO naming
 * the first difference. */
int ftc__heal_layout_check(const ftc__heal_meta *remote,
                           const ftc__heal_buf *local, size_t n_local);

#endif
