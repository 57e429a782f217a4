/* Shared-secret authentication of data-plane connections: HMAC-SHA256
 * (libsodium) keyed by SHA-256 of the token, over the handshake. */
#ifndef FTC_PG_TCP_AUTH_H
#define FTC_PG_TCP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FTC__AUTH_KEY 32
#define FTC__AUTH_MAC 32

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

#endif
