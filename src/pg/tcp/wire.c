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
