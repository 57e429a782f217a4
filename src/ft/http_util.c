/* Bearer tokens and libmicrohttpd log lines for the ft layer's HTTP
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

bool ftc__http_bearer_ok(struct MHD_Connection *c,
                         const unsigned char hash[FTC__TOKEN_HASH_BYTES])
{
    const char *h =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h == NULL || strncmp(h, "Bearer ", 7) != 0) {
        return false;
    }
    unsigned char got[FTC__TOKEN_HASH_BYTES];
    ftc__http_token_hash(h + 7, got);
    return sodium_memcmp(got, hash, sizeof(got)) == 0;
}

void ftc__http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    FTC_LOG_INFO((const char *)cls, "%s", msg);
}
