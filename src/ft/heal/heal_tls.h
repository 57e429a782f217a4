/* TLS on the healing client's chunk connections (GnuTLS): the chunk path
 * speaks HTTP/1.1 on its own sockets to receive each chunk straight into
 * its place, so TLS sits under it here rather than in libcurl. The bytes
 * are decrypted straight into the destination as well. */
#ifndef FTC_FT_HEAL_TLS_H
#define FTC_FT_HEAL_TLS_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/base_int.h"

/* What a fetch's TLS connections trust: loaded once per fetch. */
typedef struct ftc__heal_trust ftc__heal_trust;
/* A PEM file of CAs (or the sources' own certificate: pinning it); NULL:
 * the system's CAs. FTC_EINVAL (no certificate in the file), FTC_ENOMEM. */
int ftc__heal_trust_load(const char *ca_file, ftc__heal_trust **out);
void ftc__heal_trust_free(ftc__heal_trust *t);

typedef struct ftc__heal_tls ftc__heal_tls;
/* Runs the handshake on connected non-blocking fd (not owned) until dl or
 * cancel, and checks the certificate chains to trust and names host
 * (a name or an IP address). FTC_EAUTH (the certificate was refused: the
 * message says why), FTC_EPEER (the handshake failed), FTC_ETIMEDOUT,
 * FTC_ECANCELED, FTC_ENOMEM. */
int ftc__heal_tls_open(int fd, const char *host, const ftc__heal_trust *trust,
                       ftc__deadline dl, const ftc__event *cancel,
                       ftc__heal_tls **out);
/* As recv(2) on a non-blocking socket: bytes, 0 at the peer's close, -1
 * with errno EAGAIN (nothing yet), EINTR or EPROTO (a bad record). */
ssize_t ftc__heal_tls_recv(ftc__heal_tls *t, void *buf, size_t n);
/* Whether decrypted bytes wait in the session (poll(2) cannot see them). */
bool ftc__heal_tls_pending(ftc__heal_tls *t);
/* Sends all n bytes until dl or cancel: 0, FTC_EPEER, FTC_ETIMEDOUT,
 * FTC_ECANCELED. */
int ftc__heal_tls_send_all(ftc__heal_tls *t, const void *p, size_t n,
                           ftc__deadline dl, const ftc__event *cancel);
/* Ends the session (no close_notify: the socket is closed next). NULL is a
 * no-op. */
void ftc__heal_tls_close(ftc__heal_tls *t);

#endif
