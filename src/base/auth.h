/* Shared-secret authentication: HMAC-SHA256 (libsodium) keyed by SHA-256 of
 * the token. Used by the pg data plane's handshake and the store's. */
#ifndef FTC_BASE_AUTH_H
#define FTC_BASE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FTC__AUTH_KEY 32
#define FTC__AUTH_MAC 32
/* Bytes of a challenge nonce. */
#define FTC__AUTH_NONCE 32

/* The key for token (a NUL-terminated secret). 0 or FTC_ESYS. */
int ftc__auth_key(const char *token, uint8_t key[FTC__AUTH_KEY]);

/* mac = HMAC(key, a || b). */
void ftc__auth_mac(const uint8_t key[FTC__AUTH_KEY], const uint8_t *a,
                   size_t alen, const uint8_t *b, size_t blen,
                   uint8_t mac[FTC__AUTH_MAC]);

/* Constant-time check of mac against HMAC(key, a || b). */
bool ftc__auth_verify(const uint8_t key[FTC__AUTH_KEY], const uint8_t *a,
                      size_t alen, const uint8_t *b, size_t blen,
                      const uint8_t mac[FTC__AUTH_MAC]);

/* n unpredictable bytes (the kernel's generator, through libsodium): for
 * challenges, never for ids. 0 or FTC_ESYS. */
int ftc__auth_random(uint8_t *p, size_t n);

/* Zeroes n bytes of secret material in a way the compiler keeps. */
void ftc__auth_wipe(void *p, size_t n);

/* Signed records: what a reader acts on, kept in a store anyone with
 * access could write (docs/protocol.md "Signed records"). A sealed record
 * is the text, '\n', then 64 lowercase hex digits of
 * HMAC-SHA256(key, label NUL context NUL text): the label names the kind
 * of record, the context binds it to where it belongs (group, rank,
 * epoch, store key), so a record moved or replayed elsewhere fails too. */
#define FTC__AUTH_SEAL_EXTRA (1 + 2 * FTC__AUTH_MAC)

/* Writes the seal (FTC__AUTH_SEAL_EXTRA bytes, no NUL) for text into
 * out. */
void ftc__auth_seal(const uint8_t key[FTC__AUTH_KEY], const char *label,
                    const char *context, const void *text, size_t len,
                    char out[FTC__AUTH_SEAL_EXTRA]);

/* Checks the seal at the end of rec (len bytes): 0 with *text_len the
 * text's length, or FTC_EAUTH (no seal, or not this key's, label's and
 * context's). */
int ftc__auth_unseal(const uint8_t key[FTC__AUTH_KEY], const char *label,
                     const char *context, const void *rec, size_t len,
                     size_t *text_len);

#endif
