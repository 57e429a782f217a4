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

/* HMAC(key, label NUL context NUL text). */
static void seal_mac(const uint8_t key[FTC__AUTH_KEY], const char *label,
                     const char *context, const void *text, size_t len,
                     uint8_t mac[FTC__AUTH_MAC])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, FTC__AUTH_KEY);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)label,
                                  strlen(label) + 1);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)context,
                                  strlen(context) + 1);
    crypto_auth_hmacsha256_update(&st, text, len);
    crypto_auth_hmacsha256_final(&st, mac);
}

void ftc__auth_seal(const uint8_t key[FTC__AUTH_KEY], const char *label,
                    const char *context, const void *text, size_t len,
                    char out[FTC__AUTH_SEAL_EXTRA])
{
    uint8_t mac[FTC__AUTH_MAC];
    seal_mac(key, label, context, text, len, mac);
    char hex[2 * FTC__AUTH_MAC + 1];
    sodium_bin2hex(hex, sizeof(hex), mac, sizeof(mac));
    out[0] = '\n';
    memcpy(out + 1, hex, 2 * FTC__AUTH_MAC);
}

int ftc__auth_unseal(const uint8_t key[FTC__AUTH_KEY], const char *label,
                     const char *context, const void *rec, size_t len,
                     size_t *text_len)
{
    const char *p = rec;
    uint8_t got[FTC__AUTH_MAC], want[FTC__AUTH_MAC];
    size_t n = 0;
    if (len < FTC__AUTH_SEAL_EXTRA || p[len - FTC__AUTH_SEAL_EXTRA] != '\n' ||
        sodium_hex2bin(got, sizeof(got), p + len - 2 * FTC__AUTH_MAC,
                       2 * FTC__AUTH_MAC, NULL, &n, NULL) != 0 ||
        n != sizeof(got)) {
        return ftc__seterr(FTC_EAUTH, "%s: no seal", label);
    }
    *text_len = len - FTC__AUTH_SEAL_EXTRA;
    seal_mac(key, label, context, rec, *text_len, want);
    if (sodium_memcmp(got, want, sizeof(got)) != 0) {
        return ftc__seterr(FTC_EAUTH, "%s: the seal is not this token's for %s",
                           label, context);
    }
    return 0;
}
