/* Tokens and libmicrohttpd log lines for the ft layer's HTTP
 * servers. */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/http_util.h"

void ftc__http_token_hash(const char *token,
                          unsigned char hash[FTC__TOKEN_HASH_BYTES])
{
    crypto_generichash(hash, FTC__TOKEN_HASH_BYTES,
                       (const unsigned char *)token, strlen(token), NULL, 0);
}

/* The token a request carries (into buf for Basic), or NULL. */
static const char *sent_token(struct MHD_Connection *c, char *buf, size_t cap)
{
    const char *h =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h == NULL) {
        return NULL;
    }
    if (strncmp(h, "Bearer ", 7) == 0) {
        return h + 7;
    }
    size_t n;
    if (strncmp(h, "Basic ", 6) != 0 ||
        sodium_base642bin((unsigned char *)buf, cap - 1, h + 6, strlen(h + 6),
                          NULL, &n, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0) {
        return NULL;
    }
    buf[n] = '\0';
    const char *colon = memchr(buf, ':', n);
    /* A NUL inside the password would cut the token short: refused. */
    if (colon == NULL || strlen(colon + 1) != n - (size_t)(colon + 1 - buf)) {
        return NULL;
    }
    return colon + 1;
}

bool ftc__http_token_ok(struct MHD_Connection *c,
                        const unsigned char hash[FTC__TOKEN_HASH_BYTES])
{
    char buf[2048];
    const char *token = sent_token(c, buf, sizeof(buf));
    if (token == NULL) {
        return false;
    }
    unsigned char got[FTC__TOKEN_HASH_BYTES];
    ftc__http_token_hash(token, got);
    bool ok = sodium_memcmp(got, hash, sizeof(got)) == 0;
    sodium_memzero(buf, sizeof(buf));
    return ok;
}

void ftc__http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    FTC_LOG_INFO((const char *)cls, "%s", msg);
}
