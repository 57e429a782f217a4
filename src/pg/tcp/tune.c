/* Socket options of a group's connections: non-blocking I/O, TCP_NODELAY,
 * buffer sizes and the congestion control (docs/decisions.md). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pg/tcp/tcp_int.h"

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

/* Between two ranks of one host reno (ftc__sock_reno_if_same_host says
 * why); elsewhere the system default. An explicit choice applies
 * everywhere and must work. */
static int set_congestion(ftc__tcp *g, int fd)
{
    const char *cc = g->pg->opts.tcp_congestion;
    if (cc == NULL) {
        ftc__sock_reno_if_same_host(fd);
        return 0;
    }
    if (cc[0] == '\0' || setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc,
                                    (socklen_t)strlen(cc)) == 0) {
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
