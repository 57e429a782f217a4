/* Socket options of a group's connections: non-blocking I/O, TCP_NODELAY,
 * buffer sizes and the congestion control (docs/decisions.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pg/tcp/tcp_int.h"

/* Whether both ends of a connection are on this host: the same address
 * at both ends, or a loopback peer. */
static bool same_host(int fd)
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
        return memcmp(&a.sin6_addr, &b.sin6_addr, sizeof(a.sin6_addr)) == 0 ||
               IN6_IS_ADDR_LOOPBACK(&b.sin6_addr);
    }
    return false;
}

static int refused(const char *cc, int err)
{
    return ftc__seterr(FTC_EINVAL,
                       "tcp_congestion '%s': %s (unprivileged processes may "
                       "use what net.ipv4.tcp_allowed_congestion_control "
                       "lists)",
                       cc, strerror(err));
}

int ftc__tcp_check_congestion(const ftc_pg_opts *o)
{
    const char *cc = o->tcp_congestion;
    if (cc == NULL || cc[0] == '\0') {
        return 0;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return ftc__seterr_errno(errno, "socket");
    }
    int rc = setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc,
                        (socklen_t)strlen(cc)) == 0
                 ? 0
                 : refused(cc, errno);
    close(fd);
    return rc;
}

/* Between two ranks of one host nothing needs congestion control, and a
 * pacing algorithm (BBR, a common system default) costs hrtimers and
 * smaller bursts on every send: reno, which every process may choose, is
 * the cheapest. An explicit choice applies everywhere and must work. */
static int set_congestion(ftc__tcp *g, int fd)
{
    const char *cc = g->pg->opts.tcp_congestion;
    bool automatic = cc == NULL;
    if (automatic) {
        if (!same_host(fd)) {
            return 0;
        }
        cc = "reno";
    }
    if (cc[0] == '\0' ||
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc,
                   (socklen_t)strlen(cc)) == 0 ||
        automatic) {
        return 0;
    }
    return refused(cc, errno);
}

int ftc__chan_tune(ftc__tcp *g, ftc__chan *c)
{
    const ftc_pg_opts *o = &g->pg->opts;
    ftc__sock_set_nonblock(c->fd, 1);
    ftc__sock_set_nodelay(c->fd);
    ftc__sock_set_bufsizes(c->fd, o->sndbuf_bytes, o->rcvbuf_bytes);
    return set_congestion(g, c->fd);
}
