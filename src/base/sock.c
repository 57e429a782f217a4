/* Socket helpers: connect with retry, listen, and deadline-bounded I/O. */
#include "base/sock.h"

#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/addr.h"
#include "base/err.h"
#include "base/log.h"
#include "base/rand.h"

int ftc__sock_set_nonblock(int fd, int on)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) {
        return ftc__seterr_errno(errno, "fcntl(F_GETFL)");
    }
    flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
    if (fcntl(fd, F_SETFL, flags) < 0) {
        return ftc__seterr_errno(errno, "fcntl(F_SETFL)");
    }
    return 0;
}

int ftc__sock_set_nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
        return ftc__seterr_errno(errno, "setsockopt(TCP_NODELAY)");
    }
    return 0;
}

bool ftc__sock_same_host(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof(me), pl = sizeof(peer);
    if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 ||
        me.ss_family != peer.ss_family) {
        return false;
    }
    if (peer.ss_family == AF_INET) {
        struct sockaddr_in a, b;
        memcpy(&a, &me, sizeof(a));
        memcpy(&b, &peer, sizeof(b));
        return a.sin_addr.s_addr == b.sin_addr.s_addr ||
               (ntohl(b.sin_addr.s_addr) >> 24) == 127;
    }
    if (peer.ss_family == AF_INET6) {
        struct sockaddr_in6 a, b;
        memcpy(&a, &me, sizeof(a));
        memcpy(&b, &peer, sizeof(b));
        /* A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d. */
        bool mapped_loopback = IN6_IS_ADDR_V4MAPPED(&b.sin6_addr) &&
                               b.sin6_addr.s6_addr[12] == 127;
        return memcmp(&a.sin6_addr, &b.sin6_addr, sizeof(a.sin6_addr)) == 0 ||
               IN6_IS_ADDR_LOOPBACK(&b.sin6_addr) || mapped_loopback;
    }
    return false;
}

int ftc__sock_reno_if_same_host(int fd)
{
    static const char reno[] = "reno";
    return ftc__sock_same_host(fd) &&
           setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, reno,
                      (socklen_t)strlen(reno)) == 0;
}

#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS                                                         \
    44 /* linux/tcp.h of 6.14; older libc headers lack it                      \
        */
#endif

void ftc__sock_cap_rto(int fd)
{
    /* The kernel's least maximum. Older kernels refuse the option
     * (ENOPROTOOPT): the default backoff stays, nothing else changes. */
    int ms = 1000;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &ms, sizeof(ms));
}

int ftc__sock_set_keepalive(int fd, int idle_s, int intvl_s, int count)
{
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s)) !=
            0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl_s, sizeof(intvl_s)) !=
            0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count)) != 0) {
        return ftc__seterr_errno(errno, "setsockopt(keepalive)");
    }
    return 0;
}

void ftc__sock_set_bufsizes(int fd, int sndbuf, int rcvbuf)
{
    /* Best effort: the kernel caps these at its own maxima. */
    if (sndbuf > 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    }
    if (rcvbuf > 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
}

int ftc__sock_wait(int fd, short events, ftc__deadline dl,
                   const ftc__event *cancel)
{
    struct pollfd p[2] = {{.fd = fd, .events = events},
                          {.fd = cancel ? cancel->fd : -1, .events = POLLIN}};
    for (;;) {
        int n = poll(p, cancel ? 2 : 1, ftc__deadline_poll_ms(dl));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return ftc__seterr_errno(errno, "poll");
        }
        if (cancel != NULL && (p[1].revents & POLLIN)) {
            return ftc__seterr(FTC_ECANCELED, "cancelled");
        }
        if (n > 0 && p[0].revents != 0) {
            return 0;
        }
        if (ftc__deadline_expired(dl)) {
            return ftc__seterr(FTC_ETIMEDOUT, "timed out");
        }
    }
}

int ftc__sleep_until(ftc__deadline dl, const ftc__event *cancel)
{
    struct pollfd p = {.fd = cancel ? cancel->fd : -1, .events = POLLIN};
    while (!ftc__deadline_expired(dl)) {
        int n = poll(&p, 1, ftc__deadline_poll_ms(dl));
        if (n > 0) {
            return ftc__seterr(FTC_ECANCELED, "cancelled");
        }
    }
    return 0;
}

/* One non-blocking connect attempt to one resolved address; returns 0 and
 * the fd, or an errno value (positive) for retryable failures, or a
 * negative ftc code for final ones. */
static int connect_once(const struct addrinfo *ai, ftc__deadline dl,
                        const ftc__event *cancel, int *fd_out)
{
    int fd =
        socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
               ai->ai_protocol);
    if (fd < 0) {
        return ftc__seterr_errno(errno, "socket");
    }
    int err = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            err = errno;
            goto fail;
        }
        int rc = ftc__sock_wait(fd, POLLOUT, dl, cancel);
        if (rc != 0) {
            close(fd);
            return rc;
        }
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
            err = errno;
        }
        if (err != 0) {
            goto fail;
        }
    }
    ftc__sock_set_nodelay(fd);
    *fd_out = fd;
    return 0;
fail:
    close(fd);
    return err;
}

static int retryable(int err)
{
    return err == ECONNREFUSED || err == ECONNRESET || err == ETIMEDOUT ||
           err == ENETUNREACH || err == EHOSTUNREACH || err == EAGAIN ||
           err == ECONNABORTED;
}

int ftc__sock_connect(const char *host, int port, ftc__deadline dl,
                      const ftc__event *cancel, int *fd_out)
{
    char last[256] = "no attempt";
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    ftc__backoff backoff;
    ftc__backoff_init(&backoff, 10, 1000);
    int64_t start = ftc__now_ms();
    int attempts = 0;
    *fd_out = -1;
    for (;;) {
        attempts++;
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                                 .ai_family = AF_UNSPEC};
        struct addrinfo *res = NULL;
        int gai = getaddrinfo(host, service, &hints, &res);
        if (gai != 0) {
            snprintf(last, sizeof(last), "resolve '%s': %s", host,
                     gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
        } else {
            for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
                int rc = connect_once(ai, dl, cancel, fd_out);
                if (rc == 0) {
                    freeaddrinfo(res);
                    return 0;
                }
                if (rc < 0) {
                    freeaddrinfo(res);
                    return ftc__adderr(rc, "connect to %s:%d", host, port);
                }
                if (!retryable(rc)) {
                    freeaddrinfo(res);
                    return ftc__seterr_errno(rc, "connect to %s:%d", host,
                                             port);
                }
                snprintf(last, sizeof(last), "%s", strerror(rc));
            }
            freeaddrinfo(res);
        }
        ftc__deadline pause = ftc__deadline_min(
            dl, ftc__deadline_in_ms(ftc__backoff_next_ms(&backoff)));
        if (ftc__deadline_expired(dl)) {
            break;
        }
        if (ftc__sleep_until(pause, cancel) != 0) {
            return ftc__seterr(FTC_ECANCELED, "connect to %s:%d: cancelled",
                               host, port);
        }
        if (ftc__deadline_expired(dl)) {
            break;
        }
        FTC_LOG_DEBUG("sock.retry", "connect to %s:%d: %s; retrying", host,
                      port, last);
    }
    return ftc__seterr(FTC_ETIMEDOUT,
                       "connect to %s:%d timed out after %lld ms and %d "
                       "attempts: %s",
                       host, port, (long long)(ftc__now_ms() - start), attempts,
                       last);
}

static int listen_on(const struct addrinfo *ai, int backlog, int *fd_out)
{
    int fd =
        socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
               ai->ai_protocol);
    if (fd < 0) {
        return errno;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    }
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(fd, backlog) != 0) {
        int err = errno;
        close(fd);
        return err;
    }
    *fd_out = fd;
    return 0;
}

int ftc__sock_listen(const char *host, int port, int backlog, int *fd_out,
                     int *port_out)
{
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE,
                             .ai_family = AF_UNSPEC};
    int any = host == NULL || host[0] == '\0';
    if (any) {
        hints.ai_family = AF_INET6; /* dual-stack first, IPv4 below */
    }
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(any ? NULL : host, service, &hints, &res);
    int err = EADDRNOTAVAIL;
    *fd_out = -1;
    if (gai == 0) {
        for (struct addrinfo *ai = res; ai != NULL && *fd_out < 0;
             ai = ai->ai_next) {
            err = listen_on(ai, backlog, fd_out);
        }
        freeaddrinfo(res);
    }
    if (*fd_out < 0 && any) {
        hints.ai_family = AF_INET;
        if (getaddrinfo(NULL, service, &hints, &res) == 0) {
            err = listen_on(res, backlog, fd_out);
            freeaddrinfo(res);
        }
    }
    if (*fd_out < 0) {
        if (gai != 0 && !any) {
            return ftc__seterr(FTC_EINVAL, "resolve '%s': %s", host,
                               gai_strerror(gai));
        }
        return ftc__seterr_errno(err, "listen on %s:%d", any ? "*" : host,
                                 port);
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    getsockname(*fd_out, (struct sockaddr *)&ss, &len);
    *port_out = ss.ss_family == AF_INET6
                    ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                    : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return 0;
}

int ftc__sock_sendv_all(int fd, struct iovec *iov, int iovcnt, ftc__deadline dl,
                        const ftc__event *cancel)
{
    while (iovcnt > 0) {
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
        ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                int rc = ftc__sock_wait(fd, POLLOUT, dl, cancel);
                if (rc != 0) {
                    return rc;
                }
                continue;
            }
            return ftc__seterr_errno(errno, "send");
        }
        size_t left = (size_t)n;
        while (iovcnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

int ftc__sock_send_all(int fd, const void *p, size_t n, ftc__deadline dl,
                       const ftc__event *cancel)
{
    struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
    return ftc__sock_sendv_all(fd, &iov, 1, dl, cancel);
}

int ftc__sock_recv_all(int fd, void *p, size_t n, ftc__deadline dl,
                       const ftc__event *cancel)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, (char *)p + got, n - got, MSG_DONTWAIT);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r == 0) {
            return ftc__seterr(FTC_ECLOSED, "connection closed by peer");
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = ftc__sock_wait(fd, POLLIN, dl, cancel);
            if (rc != 0) {
                return rc;
            }
            continue;
        }
        return ftc__seterr_errno(errno, "recv");
    }
    return 0;
}

void ftc__sock_peer_name(int fd, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0) {
        snprintf(out, cap, "?");
        return;
    }
    ftc__addr_format((struct sockaddr *)&ss, out, cap);
}

void ftc__sock_local_name(int fd, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        snprintf(out, cap, "?");
        return;
    }
    ftc__addr_format((struct sockaddr *)&ss, out, cap);
}
