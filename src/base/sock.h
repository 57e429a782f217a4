/* Blocking-with-deadline socket helpers for clients, and listen/accept
 * helpers for servers. Every wait polls the socket and an optional cancel
 * event, so no call blocks past its deadline or after a cancel. */
#ifndef FTC_BASE_SOCK_H
#define FTC_BASE_SOCK_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "base/event.h"

/* Connects to host:port, retrying refused/unreachable/reset connections and
 * failed name lookups with backoff (10 ms doubling to 1 s) until the
 * deadline. The socket comes back non-blocking, close-on-exec, with
 * TCP_NODELAY. cancel may be NULL. Errors: FTC_ETIMEDOUT (message has the
 * last failure), FTC_ECANCELED, FTC_ESYS. */
int ftc__sock_connect(const char *host, int port, ftc__deadline dl,
                      const ftc__event *cancel, int *fd_out);

/* Listens on host:port (host NULL or "" = every interface, dual-stack IPv6
 * falling back to IPv4; port 0 = ephemeral). Returns the non-blocking fd and
 * the bound port. */
int ftc__sock_listen(const char *host, int port, int backlog, int *fd_out,
                     int *port_out);

int ftc__sock_set_nonblock(int fd, int on);
int ftc__sock_set_nodelay(int fd);
/* Sends keepalive probes after idle_s idle seconds, every intvl_s, and
 * drops the connection after count unanswered probes. */
int ftc__sock_set_keepalive(int fd, int idle_s, int intvl_s, int count);
/* Whether both ends of a connected socket are on this host: the same
 * address at both ends, or a loopback peer. */
bool ftc__sock_same_host(int fd);
/* Between two ends on one host nothing needs congestion control, and a
 * pacing algorithm (BBR, a common system default) costs hrtimers and
 * smaller bursts on every send: sets reno, which every process may choose,
 * when fd is same-host. Returns 1 if it did, 0 if not (another host, or
 * refused: the default stays). */
int ftc__sock_reno_if_same_host(int fd);
/* Caps TCP's retransmission timeout at 1 s (TCP_RTO_MAX_MS, Linux 6.14 and
 * later; nothing on older kernels): bytes sent into a network partition
 * then arrive within about a second of its end, where the exponential
 * backoff waits up to two minutes (3 s after a 3 s partition). For the
 * control plane's connections, whose messages are small and late ones
 * cost a step each. */
void ftc__sock_cap_rto(int fd);
/* Requests kernel buffer sizes (either may be 0 to leave as is). */
void ftc__sock_set_bufsizes(int fd, int sndbuf, int rcvbuf);

/* Waits until fd has any of events (POLLIN/POLLOUT), the deadline passes
 * (FTC_ETIMEDOUT), or cancel is set (FTC_ECANCELED). */
int ftc__sock_wait(int fd, short events, ftc__deadline dl,
                   const ftc__event *cancel);

/* Sends every byte of the iovecs (modified in place) or fails: FTC_EPEER on
 * reset, FTC_ETIMEDOUT, FTC_ECANCELED. These and recv_all never block in
 * the system call (MSG_DONTWAIT), so they keep their deadline on a
 * blocking socket too. */
int ftc__sock_sendv_all(int fd, struct iovec *iov, int iovcnt, ftc__deadline dl,
                        const ftc__event *cancel);
int ftc__sock_send_all(int fd, const void *p, size_t n, ftc__deadline dl,
                       const ftc__event *cancel);
/* Receives exactly n bytes: FTC_ECLOSED if the peer closed first. */
int ftc__sock_recv_all(int fd, void *p, size_t n, ftc__deadline dl,
                       const ftc__event *cancel);

/* "1.2.3.4:5" of the peer or of the local end; "?" when unknown. */
void ftc__sock_peer_name(int fd, char *out, size_t cap);
void ftc__sock_local_name(int fd, char *out, size_t cap);

/* Sleeps until the deadline or a cancel; returns 0 or FTC_ECANCELED. */
int ftc__sleep_until(ftc__deadline dl, const ftc__event *cancel);

#endif
