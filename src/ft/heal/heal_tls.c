/* GnuTLS under the healing client's chunk connections (heal_tls.h). */
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <poll.h>
#include <string.h>

#include "base/sock.h"
#include "ft/heal/heal_tls.h"

struct ftc__heal_trust {
    gnutls_certificate_credentials_t cred;
};

struct ftc__heal_tls {
    gnutls_session_t s;
    int fd;
};

int ftc__heal_trust_load(const char *ca_file, ftc__heal_trust **out)
{
    *out = NULL;
    ftc__heal_trust *t = ftc__calloc(1, sizeof(*t));
    if (t == NULL || gnutls_certificate_allocate_credentials(&t->cred) < 0) {
        ftc__free(t);
        return ftc__seterr(FTC_ENOMEM, "healing TLS credentials");
    }
    int n = ca_file != NULL ? gnutls_certificate_set_x509_trust_file(
                                  t->cred, ca_file, GNUTLS_X509_FMT_PEM)
                            : gnutls_certificate_set_x509_system_trust(t->cred);
    if (n <= 0) {
        gnutls_certificate_free_credentials(t->cred);
        ftc__free(t);
        return ftc__seterr(FTC_EINVAL,
                           "healing TLS: no trusted certificate in %s%s%s",
                           ca_file != NULL ? ca_file : "the system's store",
                           n < 0 ? ": " : "", n < 0 ? gnutls_strerror(n) : "");
    }
    *out = t;
    return 0;
}

void ftc__heal_trust_free(ftc__heal_trust *t)
{
    if (t != NULL) {
        gnutls_certificate_free_credentials(t->cred);
        ftc__free(t);
    }
}

/* Waits for what the session's last call blocked on. */
static int wait_io(ftc__heal_tls *t, ftc__deadline dl, const ftc__event *cancel)
{
    short ev = gnutls_record_get_direction(t->s) ? POLLOUT : POLLIN;
    return ftc__sock_wait(t->fd, ev, dl, cancel);
}

/* Why the certificate was refused, into msg. */
static void refusal(ftc__heal_tls *t, const char *host, char *msg, size_t cap)
{
    unsigned status = gnutls_session_get_verify_cert_status(t->s);
    gnutls_datum_t why = {NULL, 0};
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509,
                                                     &why, 0) == 0) {
        snprintf(msg, cap, "the certificate of %s was refused: %s", host,
                 (const char *)why.data);
        gnutls_free(why.data);
    } else {
        snprintf(msg, cap, "the certificate of %s was refused", host);
    }
}

int ftc__heal_tls_open(int fd, const char *host, const ftc__heal_trust *trust,
                       ftc__deadline dl, const ftc__event *cancel,
                       ftc__heal_tls **out)
{
    *out = NULL;
    ftc__heal_tls *t = ftc__calloc(1, sizeof(*t));
    if (t == NULL || gnutls_init(&t->s, GNUTLS_CLIENT | GNUTLS_NONBLOCK) < 0) {
        ftc__free(t);
        return ftc__seterr(FTC_ENOMEM, "healing TLS session");
    }
    t->fd = fd;
    int r = gnutls_set_default_priority(t->s);
    r = r < 0
            ? r
            : gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, trust->cred);
    /* SNI names a host by name only; the check below takes either. */
    bool literal = strspn(host, "0123456789.") == strlen(host) ||
                   strchr(host, ':') != NULL;
    if (r >= 0 && !literal) {
        r = gnutls_server_name_set(t->s, GNUTLS_NAME_DNS, host, strlen(host));
    }
    if (r < 0) {
        ftc__heal_tls_close(t);
        return ftc__seterr(FTC_ENOMEM, "healing TLS session: %s",
                           gnutls_strerror(r));
    }
    gnutls_session_set_verify_cert(t->s, host, 0);
    gnutls_transport_set_int(t->s, fd);
    int rc = 0;
    do {
        r = gnutls_handshake(t->s);
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
            rc = wait_io(t, dl, cancel);
        }
    } while (rc == 0 && (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED));
    if (rc == 0 && r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
        char msg[512];
        refusal(t, host, msg, sizeof(msg));
        rc = ftc__seterr(FTC_EAUTH, "%s", msg);
    } else if (rc == 0 && r < 0) {
        rc = ftc__seterr(FTC_EPEER, "TLS handshake with %s: %s", host,
                         gnutls_strerror(r));
    }
    if (rc != 0) {
        ftc__heal_tls_close(t);
        return rc;
    }
    *out = t;
    return 0;
}

ssize_t ftc__heal_tls_recv(ftc__heal_tls *t, void *buf, size_t n)
{
    ssize_t k = gnutls_record_recv(t->s, buf, n);
    if (k >= 0) {
        return k;
    }
    if (k == GNUTLS_E_PREMATURE_TERMINATION) {
        return 0; /* closed without close_notify: a close, for HTTP */
    }
    errno = k == GNUTLS_E_AGAIN         ? EAGAIN
            : k == GNUTLS_E_INTERRUPTED ? EINTR
                                        : EPROTO;
    return -1;
}

bool ftc__heal_tls_pending(ftc__heal_tls *t)
{
    return gnutls_record_check_pending(t->s) > 0;
}

int ftc__heal_tls_send_all(ftc__heal_tls *t, const void *p, size_t n,
                           ftc__deadline dl, const ftc__event *cancel)
{
    const char *at = p;
    while (n > 0) {
        ssize_t k = gnutls_record_send(t->s, at, n);
        if (k == GNUTLS_E_AGAIN || k == GNUTLS_E_INTERRUPTED) {
            int rc = wait_io(t, dl, cancel);
            if (rc != 0) {
                return rc;
            }
            /* GnuTLS asks for the same data again after AGAIN. */
            continue;
        }
        if (k < 0) {
            return ftc__seterr(FTC_EPEER, "TLS send: %s",
                               gnutls_strerror((int)k));
        }
        at += k;
        n -= (size_t)k;
    }
    return 0;
}

void ftc__heal_tls_close(ftc__heal_tls *t)
{
    if (t != NULL) {
        gnutls_deinit(t->s);
        ftc__free(t);
    }
}
