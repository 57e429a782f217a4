/* What the ft layer's HTTP servers (lighthouse, healing) share: token
 * checks in constant time and libmicrohttpd's log lines. */
#ifndef FTC_FT_HTTP_UTIL_H
#define FTC_FT_HTTP_UTIL_H

#include <microhttpd.h>
#include <stdarg.h>
#include <stdbool.h>

#define FTC__TOKEN_HASH_BYTES 32

/* The digest a server keeps instead of the token itself. */
void ftc__http_token_hash(const char *token,
                          unsigned char hash[FTC__TOKEN_HASH_BYTES]);

/* Whether the request carries a token whose digest is hash: as
 * "Authorization: Bearer <token>" (ftc's clients) or as the password of
 * "Authorization: Basic" with any user name (what a browser sends after
 * the prompt FTC__HTTP_CHALLENGE asks for). Digests of equal length are
 * compared in constant time, so neither the token nor its length leaks
 * through timing. */
bool ftc__http_token_ok(struct MHD_Connection *c,
                        const unsigned char hash[FTC__TOKEN_HASH_BYTES]);

/* The WWW-Authenticate header of a 401: a browser prompts for the token
 * (as a password), ftc's clients send it as a bearer token. */
#define FTC__HTTP_CHALLENGE "Basic realm=\"ftc (password: the token)\""

/* MHD_OPTION_EXTERNAL_LOGGER: one line at info level under the tag
 * passed as cls (a static string such as "lighthouse.http"). */
void ftc__http_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#endif
