/* HMAC-SHA256 keyed by the shared token, and challenge nonces (see auth.h). */
#include "base/auth.h"

#include <sodium.h>
#include <string.h>

#include "base/base_int.h"

int ftc__auth_key(const char *token, uint8_t key[FTC__AUTH_KEY])
{
    if (sodium_init() < 0) {
        return ftc__seterr(FTC_ESYS, "libsodium failed to initialise");
    }
    crypto_hash_sha256(key, (const unsigned char *)token, strlen(token));
    return 0;
}

void ftc__auth_mac(const uint8_t key[FTC__AUTH_KEY], const uint8_t *a,
                   size_t alen, const uint8_t *b, size_t blen,
                   uint8_t mac[FTC__AUTH_MAC])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, FTC__AUTH_KEY);
    crypto_auth_hmacsha256_update(&st, a, alen);
    crypto_auth_hmacsha256_update(&st, b, blen);
    crypto_auth_hmacsha256_final(&st, mac);
}

bool ftc__auth_verify(const uint8_t key[FTC__AUTH_KEY], const uint8_t *a,
                      size_t alen, const uint8_t *b, size_t blen,
                      const uint8_t mac[FTC__AUTH_MAC])
{
    uint8_t want[FTC__AUTH_MAC];
    ftc__auth_mac(key, a, alen, b, blen, want);
    return sodium_memcmp(want, mac, FTC__AUTH_MAC) == 0;
}

int ftc__auth_random(uint8_t *p, size_t n)
{
    if (sodium_init() < 0) {
        return ftc__seterr(FTC_ESYS, "libsodium failed to initialise");
    }
    randombytes_buf(p, n);
    return 0;
}

void ftc__auth_wipe(void *p, size_t n)
{
    sodium_memzero(p, n);
}
