/* Per-message tags of the tcp data plane (see protect.h). */
#include "pg/tcp/protect.h"

#include <string.h>

#include "base/auth.h"
#include "base/bytes.h"

void ftc__protect_keys(const uint8_t token_key[32], uint64_t group,
                       uint64_t epoch, int self, int peer, uint32_t channel,
                       uint64_t dialer_nonce, uint64_t listener_nonce,
                       uint8_t tx[FTC__PROTECT_KEY],
                       uint8_t rx[FTC__PROTECT_KEY])
{
    static const char label[] = "ftc pg message key v2";
    uint8_t ctx[44];
    ftc__put_u64le(ctx, group);
    ftc__put_u64le(ctx + 8, epoch);
    ftc__put_u32le(ctx + 24, channel);
    ftc__put_u64le(ctx + 28, dialer_nonce);
    ftc__put_u64le(ctx + 36, listener_nonce);
    for (int dir = 0; dir < 2; dir++) {
        /* from, to */
        ftc__put_u32le(ctx + 16, (uint32_t)(dir == 0 ? self : peer));
        ftc__put_u32le(ctx + 20, (uint32_t)(dir == 0 ? peer : self));
        ftc__auth_mac(token_key, (const uint8_t *)label, sizeof(label), ctx,
                      sizeof(ctx), dir == 0 ? tx : rx);
    }
}

/* A message's ChaCha20 nonce: its number on the connection. */
static void message_nonce(uint64_t number,
                          uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES])
{
    memset(nonce, 0, crypto_stream_chacha20_ietf_NONCEBYTES);
    ftc__put_u64le(nonce, number);
}

void ftc__protect_begin(ftc__protect_mac *m,
                        const uint8_t key[FTC__PROTECT_KEY], uint64_t number,
                        const uint8_t *hdr, size_t hdr_len)
{
    uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES];
    message_nonce(number, nonce);
    uint8_t one_time[crypto_onetimeauth_poly1305_KEYBYTES];
    crypto_stream_chacha20_ietf(one_time, sizeof(one_time), nonce, key);
    crypto_onetimeauth_poly1305_init(&m->st, one_time);
    sodium_memzero(one_time, sizeof(one_time));
    crypto_onetimeauth_poly1305_update(&m->st, hdr, hdr_len);
}

void ftc__protect_add(ftc__protect_mac *m, const void *p, size_t n)
{
    if (n > 0) {
        crypto_onetimeauth_poly1305_update(&m->st, p, n);
    }
}

void ftc__protect_finish(ftc__protect_mac *m, uint8_t tag[FTC__PROTECT_TAG])
{
    crypto_onetimeauth_poly1305_final(&m->st, tag);
}

int ftc__protect_check(ftc__protect_mac *m, const uint8_t tag[FTC__PROTECT_TAG])
{
    uint8_t want[FTC__PROTECT_TAG];
    ftc__protect_finish(m, want);
    return crypto_verify_16(want, tag) == 0;
}

void ftc__protect_tag(const uint8_t key[FTC__PROTECT_KEY], uint64_t number,
                      const uint8_t *hdr, size_t hdr_len, const void *payload,
                      size_t len, uint8_t tag[FTC__PROTECT_TAG])
{
    ftc__protect_mac m;
    ftc__protect_begin(&m, key, number, hdr, hdr_len);
    ftc__protect_add(&m, payload, len);
    ftc__protect_finish(&m, tag);
}

void ftc__protect_crypt(const uint8_t key[FTC__PROTECT_KEY], uint64_t number,
                        uint64_t at, const uint8_t *in, uint8_t *out, size_t n)
{
    uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES];
    message_nonce(number, nonce);
    if (n > 0) {
        crypto_stream_chacha20_ietf_xor_ic(
            out, in, n, nonce, (uint32_t)(1 + at / FTC__PROTECT_BLOCK), key);
    }
}
