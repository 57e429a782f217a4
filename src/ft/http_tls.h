/* TLS for the ft layer's HTTP planes (lighthouse, healing; docs/security.md):
 * a server's certificate and key, read once from PEM files for
 * libmicrohttpd (which speaks TLS through GnuTLS); a client's trust for
 * libcurl (a CA file, or a self-signed server certificate itself: that is
 * pinning it); and the rule that a token never travels in clear text to
 * another host unless the operator said insecure. */
#ifndef FTC_FT_HTTP_TLS_H
#define FTC_FT_HTTP_TLS_H

#include <curl/curl.h>
#include <microhttpd.h>
#include <stdbool.h>

/* A server's certificate chain and key (PEM text); both NULL: plain HTTP. */
typedef struct ftc__http_tls {
    char *cert, *key;
} ftc__http_tls;

/* Reads both files (each at most 1 MiB; both given or neither). Errors:
 * FTC_EINVAL (only one given, unreadable, too large, not PEM; the message
 * names the file and the option who is, e.g. "--tls-cert"),
 * FTC_ENOTSUP (this libmicrohttpd has no TLS), FTC_ENOMEM. */
int ftc__http_tls_load(const char *cert_file, const char *key_file,
                       const char *who, ftc__http_tls *out);
/* Frees both, wiping the key. */
void ftc__http_tls_free(ftc__http_tls *t);
/* What MHD_start_daemon needs for t: returns the flags to add
 * (MHD_USE_TLS, or 0) and fills items for MHD_OPTION_ARRAY (the key and
 * the certificate, or nothing; 3 items, ended by MHD_OPTION_END). */
unsigned ftc__http_tls_mhd(const ftc__http_tls *t,
                           struct MHD_OptionItem items[3]);
/* The URL scheme a server's clients use: "https" or "http". */
const char *ftc__http_tls_scheme(const ftc__http_tls *t);

/* Makes e trust ca_file (NULL: the system's CAs), verifying the peer and
 * its name as libcurl does by default, and speak only HTTP(S). */
void ftc__http_tls_curl(CURL *e, const char *ca_file);

/* Whether a transfer failed because the peer's certificate was refused
 * (not trusted, wrong name, bad CA file): FTC_EAUTH, never retried. */
bool ftc__http_tls_refused(CURLcode res);

/* Whether a request to url may carry a token: it goes over https, or to
 * this host (loopback or one of its own addresses: the bytes never reach
 * a wire), or insecure allows clear text. 0, or FTC_EINVAL naming url and
 * the ways out. */
int ftc__http_token_may_go(const char *url, bool insecure);

#endif
