/* The set-up socket between a Baby group's parent and child: whole
 * messages with descriptors attached (SCM_RIGHTS), bounded by a deadline. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base_int.h"
#include "pg/baby/baby.h"

#define MAX_FDS 8

static int wait_fd(int sock, short events, ftc__deadline dl, const char *what,
                   int cancel_fd)
{
    for (;;) {
        struct pollfd p[2] = {{.fd = sock, .events = events},
                              {.fd = cancel_fd, .events = POLLIN}};
        int n = poll(p, cancel_fd >= 0 ? 2 : 1, ftc__deadline_poll_ms(dl));
        if (n > 0 && p[0].revents == 0) {
            return ftc__seterr(FTC_ECANCELED, "baby: %s cancelled", what);
        }
        if (n > 0) {
            return 0;
        }
        if (n == 0) {
            return ftc__seterr(FTC_ETIMEDOUT, "baby: %s timed out", what);
        }
        if (errno != EINTR) {
            return ftc__seterr_errno(errno, "baby: poll (%s)", what);
        }
    }
}

int ftc__baby_send(int sock, const void *msg, size_t len, const int *fds,
                   int nfds, ftc__deadline dl)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
    } c;
    memset(&c, 0, sizeof(c));
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        m.msg_control = c.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(h), fds, sizeof(int) * (size_t)nfds);
    }
    int rc = wait_fd(sock, POLLOUT, dl, "send", -1);
    if (rc != 0) {
        return rc;
    }
    ssize_t n;
    do {
        n = sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return errno == EPIPE || errno == ECONNRESET
                   ? ftc__seterr(FTC_ECLOSED, "baby: the other side is gone")
                   : ftc__seterr_errno(errno, "baby: sendmsg");
    }
    return (size_t)n == len ? 0 : ftc__seterr(FTC_EPROTO, "baby: short send");
}

static void close_received(struct msghdr *m)
{
    for (struct cmsghdr *h = CMSG_FIRSTHDR(m); h != NULL;
         h = CMSG_NXTHDR(m, h)) {
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
            size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < n; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(fd));
                close(fd);
            }
        }
    }
}

int ftc__baby_recv(int sock, void *msg, size_t len, int *fds, int nfds,
                   ftc__deadline dl, int cancel_fd)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
    } c;
    memset(&c, 0, sizeof(c));
    struct iovec iov = {.iov_base = msg, .iov_len = len};
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = c.buf,
                       .msg_controllen = sizeof(c.buf)};
    int rc = wait_fd(sock, POLLIN, dl, "receive", cancel_fd);
    if (rc != 0) {
        return rc;
    }
    ssize_t n;
    do {
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        return ftc__seterr(FTC_ECLOSED, "baby: the other side is gone");
    }
    if (n < 0) {
        return ftc__seterr_errno(errno, "baby: recvmsg");
    }
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    size_t got = 0;
    if (h != NULL && h->cmsg_level == SOL_SOCKET &&
        h->cmsg_type == SCM_RIGHTS) {
        got = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    }
    if ((size_t)n != len || got != (size_t)nfds ||
        (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
        (h != NULL && CMSG_NXTHDR(&m, h) != NULL)) {
        close_received(&m);
        return ftc__seterr(FTC_EPROTO,
                           "baby: a message of %zd bytes with %zu "
                           "descriptors (expected %zu and %d)",
                           n, got, len, nfds);
    }
    if (nfds > 0) {
        memcpy(fds, CMSG_DATA(h), sizeof(int) * (size_t)nfds);
    }
    return 0;
}
