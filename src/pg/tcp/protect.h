/* Message protection on the tcp data plane (docs/protocol.md "Message
 * protection"): with a token, every message after the handshake carries a
 * 16-byte tag, Poly1305 under a one-time key that ChaCha20 derives from
 * the connection direction's key and the message's number on it (the
 * MAC half of ChaCha20-Poly1305, libsodium). A changed, dropped, replayed
 * or reordered message fails the receiver's check. Encrypting, the
 * payload is ChaCha20's ciphertext as well (the header stays clear). */
#ifndef FTC_PG_TCP_PROTECT_H
#define FTC_PG_TCP_PROTECT_H

#include <sodium.h>
#include <stddef.h>
#include <stdint.h>

#define FTC__PROTECT_KEY 32
#define FTC__PROTECT_TAG 16

/* The keys of one connection: tx for what this rank sends, rx for what it
 * receives, each bound to the group, its epoch, both ranks, the channel
 * (stream index, or the side channel's id) and the random nonces both
 * ends sent in the handshake (the dialer's, then the listener's), under
 * the token's key: no two connections share keys. */
void ftc__protect_keys(const uint8_t token_key[32], uint64_t group,
                       uint64_t epoch, int self, int peer, uint32_t channel,
                       uint64_t dialer_nonce, uint64_t listener_nonce,
                       uint8_t tx[FTC__PROTECT_KEY],
                       uint8_t rx[FTC__PROTECT_KEY]);

/* An incremental tag: begin with the message's number and its encoded
 * header, add the payload in pieces, then finish or check. */
typedef struct ftc__protect_mac {
    crypto_onetimeauth_poly1305_state st;
} ftc__protect_mac;

void ftc__protect_begin(ftc__protect_mac *m,
                        const uint8_t key[FTC__PROTECT_KEY], uint64_t number,
                        const uint8_t *hdr, size_t hdr_len);
void ftc__protect_add(ftc__protect_mac *m, const void *p, size_t n);
void ftc__protect_finish(ftc__protect_mac *m, uint8_t tag[FTC__PROTECT_TAG]);
/* Constant time: 1 if tag is the message's. */
int ftc__protect_check(ftc__protect_mac *m,
                       const uint8_t tag[FTC__PROTECT_TAG]);

/* Encryption (FTC_PG_PROTECT_ENCRYPT): the payload is XORed with
 * ChaCha20's stream under the direction's key and the message's number
 * from block 1 on (block 0 made the one-time MAC key), as in
 * ChaCha20-Poly1305; the tag covers the ciphertext. Crypts n bytes of
 * payload at offset at (a multiple of FTC__PROTECT_BLOCK) from in to out
 * (in == out: in place). */
#define FTC__PROTECT_BLOCK 64
/* The largest payload ChaCha20's 32-bit block counter covers (256 GiB). */
#define FTC__PROTECT_CRYPT_MAX ((uint64_t)UINT32_MAX * FTC__PROTECT_BLOCK)
void ftc__protect_crypt(const uint8_t key[FTC__PROTECT_KEY], uint64_t number,
                        uint64_t at, const uint8_t *in, uint8_t *out, size_t n);

/* The whole tag of one message at once. */
void ftc__protect_tag(const uint8_t key[FTC__PROTECT_KEY], uint64_t number,
                      const uint8_t *hdr, size_t hdr_len, const void *payload,
                      size_t len, uint8_t tag[FTC__PROTECT_TAG]);

#endif
