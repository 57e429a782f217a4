/* Growable byte buffer with a hard maximum. */
#include "base/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/err.h"

void ftc__buf_init(ftc__buf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void ftc__buf_free(ftc__buf *b)
{
    ftc__free(b->data);
    size_t max = b->max;
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void ftc__buf_reset(ftc__buf *b)
{
    b->head = 0;
    b->len = 0;
}

static int reserve(ftc__buf *b, size_t extra, int exact)
{
    size_t live = b->len - b->head;
    if (extra > b->max || live > b->max - extra) {
        return ftc__seterr(FTC_EMSGSIZE,
                           "buffer would hold %zu+%zu B > max %zu", live, extra,
                           b->max);
    }
    if (b->len + extra <= b->cap) {
        return 0;
    }
    if (b->head > 0) {
        memmove(b->data, b->data + b->head, live);
        b->len = live;
        b->head = 0;
        if (live + extra <= b->cap) {
            return 0;
        }
    }
    size_t want = live + extra;
    if (!exact) {
        want = b->cap < 256 ? 256 : b->cap;
        while (want < live + extra) {
            want = want > SIZE_MAX / 2 ? live + extra : want * 2;
        }
    }
    if (want > b->max) {
        want = b->max;
    }
    uint8_t *p = ftc__realloc(b->data, want);
    if (p == NULL) {
        return ftc__seterr(FTC_ENOMEM, "buffer of %zu B", want);
    }
    b->data = p;
    b->cap = want;
    return 0;
}

int ftc__buf_reserve(ftc__buf *b, size_t extra)
{
    return reserve(b, extra, 0);
}

int ftc__buf_reserve_exact(ftc__buf *b, size_t extra)
{
    return reserve(b, extra, 1);
}

int ftc__buf_append(ftc__buf *b, const void *p, size_t n)
{
    if (n == 0) {
        return 0;
    }
    int rc = ftc__buf_reserve(b, n);
    if (rc != 0) {
        return rc;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

int ftc__buf_append_u8(ftc__buf *b, uint8_t v)
{
    return ftc__buf_append(b, &v, 1);
}

int ftc__buf_append_u32le(ftc__buf *b, uint32_t v)
{
    uint8_t raw[4];
    ftc__put_u32le(raw, v);
    return ftc__buf_append(b, raw, sizeof(raw));
}

int ftc__buf_append_u64le(ftc__buf *b, uint64_t v)
{
    uint8_t raw[8];
    ftc__put_u64le(raw, v);
    return ftc__buf_append(b, raw, sizeof(raw));
}

int ftc__buf_append_str(ftc__buf *b, const void *p, size_t n)
{
    int rc = ftc__buf_reserve(b, 8 + n);
    if (rc != 0) {
        return rc;
    }
    ftc__buf_append_u64le(b, n);
    return ftc__buf_append(b, p, n);
}

void ftc__buf_consume(ftc__buf *b, size_t n)
{
    size_t live = b->len - b->head;
    if (n >= live) {
        b->head = 0;
        b->len = 0;
        return;
    }
    b->head += n;
}

uint8_t *ftc__buf_detach(ftc__buf *b, size_t *len)
{
    size_t live = b->len - b->head;
    if (b->head > 0) {
        memmove(b->data, b->data + b->head, live);
    }
    uint8_t *p = b->data;
    *len = live;
    b->data = NULL;
    b->head = b->len = b->cap = 0;
    return p;
}

int ftc__buf_printf(ftc__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return ftc__seterr(FTC_EINVAL, "bad format");
    }
    /* One more for the NUL vsnprintf writes; len does not count it. */
    int rc = ftc__buf_reserve(b, (size_t)n + 1);
    if (rc == 0) {
        va_start(ap, fmt);
        vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        b->len += (size_t)n;
    }
    return rc;
}
