/* TLS for the lighthouse and healing servers and their clients (see
 * http_tls.h). */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/base_int.h"
#include "ft/http_tls.h"

/* A certificate chain or a key larger than this is not one. */
#define PEM_MAX (1 << 20)

static int read_pem(const char *path, const char *who, char **out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return ftc__seterr(FTC_EINVAL, "%s %s: %s", who, path, strerror(errno));
    }
    char *buf = ftc__malloc(PEM_MAX + 1);
    size_t n = buf != NULL ? fread(buf, 1, PEM_MAX + 1, f) : 0;
    bool failed = buf != NULL && ferror(f);
    fclose(f);
    if (buf == NULL) {
        return ftc__seterr(FTC_ENOMEM, "%s %s", who, path);
    }
    int rc = 0;
    if (failed || n > PEM_MAX) {
        rc = ftc__seterr(FTC_EINVAL, "%s %s: %s", who, path,
                         failed ? "read error" : "larger than 1 MiB");
    } else {
        buf[n] = '\0';
        if (strlen(buf) != n || strstr(buf, "-----BEGIN ") == NULL) {
            rc = ftc__seterr(FTC_EINVAL, "%s %s: not a PEM file", who, path);
        }
    }
    if (rc != 0) {
        sodium_memzero(buf, PEM_MAX + 1);
        ftc__free(buf);
        return rc;
    }
    *out = buf;
    return 0;
}

int ftc__http_tls_load(const char *cert_file, const char *key_file,
                       const char *who, ftc__http_tls *out)
{
    memset(out, 0, sizeof(*out));
    if (cert_file == NULL && key_file == NULL) {
        return 0;
    }
    if (cert_file == NULL || key_file == NULL) {
        return ftc__seterr(FTC_EINVAL,
                           "%s: a TLS certificate and its key go together "
                           "(only the %s was given)",
                           who, cert_file != NULL ? "certificate" : "key");
    }
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        return ftc__seterr(FTC_ENOTSUP,
                           "%s: this libmicrohttpd was built without TLS", who);
    }
    char what[96];
    snprintf(what, sizeof(what), "%s certificate", who);
    int rc = read_pem(cert_file, what, &out->cert);
    snprintf(what, sizeof(what), "%s key", who);
    rc = rc != 0 ? rc : read_pem(key_file, what, &out->key);
    if (rc != 0) {
        ftc__http_tls_free(out);
    }
    return rc;
}

void ftc__http_tls_free(ftc__http_tls *t)
{
    if (t->key != NULL) {
        sodium_memzero(t->key, strlen(t->key));
    }
    ftc__free(t->key);
    ftc__free(t->cert);
    t->key = t->cert = NULL;
}

unsigned ftc__http_tls_mhd(const ftc__http_tls *t,
                           struct MHD_OptionItem items[3])
{
    int n = 0;
    if (t->cert != NULL) {
        items[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, t->key};
        items[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, t->cert};
    }
    items[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return t->cert != NULL ? MHD_USE_TLS : 0;
}

const char *ftc__http_tls_scheme(const ftc__http_tls *t)
{
    return t->cert != NULL ? "https" : "http";
}

void ftc__http_tls_curl(CURL *e, const char *ca_file)
{
    if (ca_file != NULL) {
        curl_easy_setopt(e, CURLOPT_CAINFO, ca_file);
    }
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
}

bool ftc__http_tls_refused(CURLcode res)
{
    return res == CURLE_PEER_FAILED_VERIFICATION ||
           res == CURLE_SSL_CACERT_BADFILE || res == CURLE_SSL_CERTPROBLEM ||
           res == CURLE_SSL_PINNEDPUBKEYNOTMATCH;
}

int ftc__http_token_may_go(const char *url, bool insecure)
{
    if (insecure || strncmp(url, "https://", 8) == 0) {
        return 0;
    }
    const char *hostport = strncmp(url, "http://", 7) == 0 ? url + 7 : url;
    char text[FTC_HOST_MAX + 16], host[FTC_HOST_MAX];
    size_t n = strcspn(hostport, "/?");
    int port;
    if (n < sizeof(text)) {
        memcpy(text, hostport, n);
        text[n] = '\0';
        if (ftc__addr_split(text, 80, host, sizeof(host), &port) == 0 &&
            ftc__addr_this_host(host)) {
            return 0;
        }
    }
    return ftc__seterr(FTC_EINVAL,
                       "refusing to send the token in clear text to %.300s: "
                       "serve it over TLS (https://, with the client trusting "
                       "its certificate: FTC_TLS_CA) or allow clear text "
                       "(insecure, FTC_INSECURE=1)",
                       url);
}
