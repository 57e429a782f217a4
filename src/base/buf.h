/* A growable byte buffer with a hard maximum fixed at init (curl's dynbuf):
 * growth past the maximum fails with FTC_EMSGSIZE instead of allocating.
 * Bytes [head, len) are live; consume() advances head without copying. */
#ifndef FTC_BASE_BUF_H
#define FTC_BASE_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct ftc__buf {
    uint8_t *data;
    size_t head; /* first live byte */
    size_t len;  /* end of live bytes */
    size_t cap;
    size_t max; /* most live bytes ever allowed */
} ftc__buf;

void ftc__buf_init(ftc__buf *b, size_t max);
void ftc__buf_free(ftc__buf *b);
/* Drops all live bytes, keeps the allocation. */
void ftc__buf_reset(ftc__buf *b);
/* Live bytes. */
static inline size_t ftc__buf_size(const ftc__buf *b)
{
    return b->len - b->head;
}
static inline uint8_t *ftc__buf_begin(const ftc__buf *b)
{
    return b->data + b->head;
}
/* Makes room for extra more bytes after len (compacting first). Returns 0,
 * FTC_EMSGSIZE (with a message) past max, or FTC_ENOMEM. */
int ftc__buf_reserve(ftc__buf *b, size_t extra);
/* Like ftc__buf_reserve, but a buffer that must grow gets exactly room for
 * extra more bytes, not double (memory the caller has accounted for). */
int ftc__buf_reserve_exact(ftc__buf *b, size_t extra);
int ftc__buf_append(ftc__buf *b, const void *p, size_t n);
int ftc__buf_append_u8(ftc__buf *b, uint8_t v);
int ftc__buf_append_u32le(ftc__buf *b, uint32_t v);
int ftc__buf_append_u64le(ftc__buf *b, uint64_t v);
/* Appends u64 length then the bytes (the TCPStore string encoding). */
int ftc__buf_append_str(ftc__buf *b, const void *p, size_t n);
/* Appends printf-formatted text (no terminating NUL counted in len). */
int ftc__buf_printf(ftc__buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Drops n live bytes from the front. */
void ftc__buf_consume(ftc__buf *b, size_t n);
/* Takes ownership of the storage: returns the live bytes as one malloc'd
 * block (released with ftc__free) and leaves b empty. */
uint8_t *ftc__buf_detach(ftc__buf *b, size_t *len);

#endif
