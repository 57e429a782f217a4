/* Encoding and decoding of the tcp backend's message header and
 * handshake body. */
#include "pg/tcp/wire.h"

#include "base/base_int.h"

void ftc__pgw_encode(uint8_t out[FTC__PGW_HDR], const ftc__pgw_hdr *h)
{
    ftc__put_u32le(out, FTC__PGW_MAGIC);
    out[4] = FTC__PGW_VERSION;
    out[5] = h->kind;
    out[6] = h->op;
    out[7] = h->flags;
    ftc__put_u32le(out + 8, h->src);
    ftc__put_u32le(out + 12, h->tag);
    ftc__put_u64le(out + 16, h->group);
    ftc__put_u64le(out + 24, h->epoch);
    ftc__put_u64le(out + 32, h->seq);
    ftc__put_u64le(out + 40, h->len);
}

int ftc__pgw_decode(const uint8_t in[FTC__PGW_HDR], ftc__pgw_hdr *h)
{
    uint32_t magic = ftc__get_u32le(in);
    if (magic != FTC__PGW_MAGIC) {
        return ftc__seterr(FTC_EPROTO, "bad message magic 0x%08x", magic);
    }
    if (in[4] != FTC__PGW_VERSION) {
        return ftc__seterr(FTC_EPROTO, "unsupported protocol version %u",
                           in[4]);
    }
    h->kind = in[5];
    if (h->kind == 0 || h->kind >= FTC__PGW_KIND_END) {
        return ftc__seterr(FTC_EPROTO, "unknown message kind %u", h->kind);
    }
    h->op = in[6];
    h->flags = in[7];
    h->src = ftc__get_u32le(in + 8);
    h->tag = ftc__get_u32le(in + 12);
    h->group = ftc__get_u64le(in + 16);
    h->epoch = ftc__get_u64le(in + 24);
    h->seq = ftc__get_u64le(in + 32);
    h->len = ftc__get_u64le(in + 40);
    return 0;
}

void ftc__pgw_hello_encode(uint8_t out[FTC__PGW_HELLO_BODY],
                           const ftc__pgw_hello *h)
{
    ftc__put_u32le(out, h->dst);
    ftc__put_u32le(out + 4, h->size);
    ftc__put_u32le(out + 8, h->channel);
    ftc__put_u32le(out + 12, h->streams);
}

void ftc__pgw_hello_decode(const uint8_t in[FTC__PGW_HELLO_BODY],
                           ftc__pgw_hello *h)
{
    h->dst = ftc__get_u32le(in);
    h->size = ftc__get_u32le(in + 4);
    h->channel = ftc__get_u32le(in + 8);
    h->streams = ftc__get_u32le(in + 12);
}

int ftc__pgw_abort_check(const ftc__pgw_hdr *h)
{
    if ((h->op & ~FTC__PGW_ABORT_ON_PURPOSE) != 0) {
        return ftc__seterr(FTC_EPROTO, "ABORT with unknown flags 0x%02x",
                           h->op);
    }
    if (h->tag > FTC__PGW_BLAME_MAX) {
        return ftc__seterr(FTC_EPROTO,
                           "ABORT blames %u ranks, more than the %d a frame "
                           "may carry",
                           h->tag, FTC__PGW_BLAME_MAX);
    }
    uint64_t ranks = 4 * (uint64_t)h->tag;
    if (h->len < ranks || h->len - ranks > FTC__PGW_TEXT_MAX) {
        return ftc__seterr(FTC_EPROTO,
                           "ABORT of %llu bytes with %u blamed ranks: not "
                           "the %llu bytes of ranks plus at most %d of text",
                           (unsigned long long)h->len, h->tag,
                           (unsigned long long)ranks, FTC__PGW_TEXT_MAX);
    }
    return 0;
}

uint32_t ftc__pgw_blame_encode(uint8_t *out, const bool *blamed, uint32_t size)
{
    uint32_t n = 0;
    for (uint32_t r = 0; r < size && n < FTC__PGW_BLAME_MAX; r++) {
        if (blamed[r]) {
            ftc__put_u32le(out + 4 * (size_t)n++, r);
        }
    }
    return n;
}

int ftc__pgw_blame_decode(const uint8_t *in, uint32_t count, uint32_t size,
                          uint32_t src, bool *blamed)
{
    for (uint32_t i = 0; i < count; i++) {
        uint32_t r = ftc__get_u32le(in + 4 * (size_t)i);
        uint32_t prev = i > 0 ? ftc__get_u32le(in + 4 * (size_t)(i - 1)) : 0;
        if (r >= size || r == src || (i > 0 && r <= prev)) {
            return ftc__seterr(FTC_EPROTO, "blamed rank %u at %u of %u is %s",
                               r, i, count,
                               r >= size  ? "not in the group"
                               : r == src ? "the sender itself"
                                          : "not above the one before");
        }
    }
    for (uint32_t i = 0; i < count; i++) {
        blamed[ftc__get_u32le(in + 4 * (size_t)i)] = true;
    }
    return 0;
}
