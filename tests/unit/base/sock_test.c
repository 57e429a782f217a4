/* Socket helpers: connect/listen, deadline-bounded I/O, cancellation. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/err.h"
#include "base/event.h"
#include "base/sock.h"
#include "testkit.h"

static int accept_blocking(int lfd)
{
    TK_OK(ftc__sock_wait(lfd, POLLIN, ftc__deadline_in_ms(tk_ms(5000)), NULL));
    int fd = accept(lfd, NULL, NULL);
    assert_true(fd >= 0);
    return fd;
}

/* A connection on 127.0.0.1: its listener, client end and accepted end. */
static int loopback_pair(int *lfd, int *cfd)
{
    int port;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 16, lfd, &port));
    TK_OK(ftc__sock_connect("127.0.0.1", port, ftc__deadline_in_ms(tk_ms(5000)),
                            NULL, cfd));
    return accept_blocking(*lfd);
}

static void connect_send_recv(void **state)
{
    (void)state;
    int lfd, port, cfd;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 16, &lfd, &port));
    assert_true(port > 0);
    ftc__deadline dl = ftc__deadline_in_ms(tk_ms(5000));
    TK_OK(ftc__sock_connect("127.0.0.1", port, dl, NULL, &cfd));
    int sfd = accept_blocking(lfd);
    char big[1 << 20];
    memset(big, 0x5a, sizeof(big));
    struct iovec iov[2] = {{"hdr", 3}, {big, sizeof(big)}};
    /* The peer reads concurrently only after the send, so the send must
     * cope with a full socket buffer: use a thread-free split instead. */
    ftc__sock_set_bufsizes(cfd, 4 << 20, 0);
    ftc__sock_set_bufsizes(sfd, 0, 4 << 20);
    TK_OK(ftc__sock_sendv_all(cfd, iov, 2, dl, NULL));
    char got[3];
    TK_OK(ftc__sock_recv_all(sfd, got, 3, dl, NULL));
    assert_memory_equal(got, "hdr", 3);
    static char back[1 << 20];
    TK_OK(ftc__sock_recv_all(sfd, back, sizeof(back), dl, NULL));
    assert_memory_equal(back, big, sizeof(big));
    char name[64];
    ftc__sock_peer_name(cfd, name, sizeof(name));
    assert_non_null(strstr(name, "127.0.0.1:"));
    close(sfd);
    /* The peer closed: the reader learns it, it does not hang. */
    TK_EXPECT(ftc__sock_recv_all(cfd, got, 1, dl, NULL), FTC_ECLOSED);
    close(cfd);
    close(lfd);
}

static void recv_times_out(void **state)
{
    (void)state;
    int lfd, cfd;
    int sfd = loopback_pair(&lfd, &cfd);
    char c;
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc__sock_recv_all(cfd, &c, 1, ftc__deadline_in_ms(50), NULL),
              FTC_ETIMEDOUT);
    assert_true(tk_now_ms() - t0 >= 45);
    close(sfd);
    close(cfd);
    close(lfd);
}

struct canceller {
    ftc__event *ev;
    int fd;
};

static void *cancel_later(void *arg)
{
    struct canceller *c = arg;
    /* Wait until the main thread is blocked in recv: it has nothing to
     * read, so just signal; the main thread checks it was unblocked. */
    ftc__event_signal(c->ev);
    return NULL;
}

static void cancel_unblocks_recv(void **state)
{
    (void)state;
    int lfd, port, cfd;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 16, &lfd, &port));
    TK_OK(ftc__sock_connect("127.0.0.1", port, ftc__deadline_in_ms(tk_ms(5000)),
                            NULL, &cfd));
    int sfd = accept_blocking(lfd);
    ftc__event ev;
    TK_OK(ftc__event_open(&ev));
    struct canceller c = {&ev, cfd};
    pthread_t t;
    pthread_create(&t, NULL, cancel_later, &c);
    char ch;
    TK_EXPECT(ftc__sock_recv_all(cfd, &ch, 1, FTC_DEADLINE_NEVER, &ev),
              FTC_ECANCELED);
    pthread_join(t, NULL);
    assert_true(ftc__event_is_set(&ev));
    ftc__event_clear(&ev);
    assert_false(ftc__event_is_set(&ev));
    ftc__event_close(&ev);
    close(sfd);
    close(cfd);
    close(lfd);
}

static void connect_to_nothing_times_out_with_reason(void **state)
{
    (void)state;
    int lfd, port, fd;
    /* Take a free port and release it: nothing listens there now. */
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 1, &lfd, &port));
    close(lfd);
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc__sock_connect("127.0.0.1", port, ftc__deadline_in_ms(150),
                                NULL, &fd),
              FTC_ETIMEDOUT);
    int64_t took = tk_now_ms() - t0;
    assert_true(took >= 140 && took < tk_ms(2000));
    assert_non_null(strstr(ftc_last_error(), "Connection refused"));
    assert_non_null(strstr(ftc_last_error(), "attempts"));
    assert_int_equal(fd, -1);
}

struct late_listener {
    int port;
    int lfd;
    int ready;
};

static void *listen_late(void *arg)
{
    struct late_listener *l = arg;
    tk_pause_ms(100); /* the point of the test: nobody listens at first */
    int port;
    if (ftc__sock_listen("127.0.0.1", l->port, 16, &l->lfd, &port) == 0) {
        l->ready = 1;
    }
    return NULL;
}

static void connect_retries_until_listener_appears(void **state)
{
    (void)state;
    int lfd, port, fd;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 1, &lfd, &port));
    close(lfd);
    struct late_listener l = {.port = port, .lfd = -1};
    pthread_t t;
    pthread_create(&t, NULL, listen_late, &l);
    TK_OK(ftc__sock_connect("127.0.0.1", port, ftc__deadline_in_ms(tk_ms(5000)),
                            NULL, &fd));
    pthread_join(t, NULL);
    assert_true(l.ready);
    close(fd);
    close(l.lfd);
}

static void bad_host_fails_clearly(void **state)
{
    (void)state;
    int fd;
    TK_EXPECT(ftc__sock_connect("no-such-host.invalid", 1,
                                ftc__deadline_in_ms(50), NULL, &fd),
              FTC_ETIMEDOUT);
    assert_non_null(strstr(ftc_last_error(), "resolve"));
    int lfd, port;
    TK_EXPECT(ftc__sock_listen("no-such-host.invalid", 0, 1, &lfd, &port),
              FTC_EINVAL);
}

static void expect_congestion(int fd, const char *want)
{
    char cc[32] = {0};
    socklen_t len = sizeof(cc) - 1;
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &len), 0);
    assert_string_equal(cc, want);
}

/* A dual-stack listener sees an IPv4 loopback peer as ::ffff:127.x; both
 * ends must still call the connection same-host (pg's message protection
 * decides on it), also between two different loopback addresses. */
static void same_host_through_dual_stack(void **state)
{
    (void)state;
    int lfd, port, cfd, sfd;
    TK_OK(ftc__sock_listen(NULL, 0, 4, &lfd, &port));
    TK_OK(ftc__sock_connect("127.0.0.2", port, ftc__deadline_in_ms(5000), NULL,
                            &cfd));
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, (int)tk_ms(5000)), 1);
    sfd = accept(lfd, NULL, NULL);
    assert_true(sfd >= 0);
    assert_true(ftc__sock_same_host(cfd));
    assert_true(ftc__sock_same_host(sfd));
    close(sfd);
    close(cfd);
    close(lfd);
}

/* Both ends of a loopback connection are same-host and get reno; a socket
 * with no peer is not, and keeps its algorithm. */
static void same_host_gets_reno(void **state)
{
    (void)state;
    int lfd, cfd;
    int sfd = loopback_pair(&lfd, &cfd);
    assert_true(ftc__sock_same_host(cfd));
    assert_true(ftc__sock_same_host(sfd));
    assert_int_equal(ftc__sock_reno_if_same_host(sfd), 1);
    expect_congestion(sfd, "reno");
    int lone = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lone >= 0);
    char before[32] = {0};
    socklen_t len = sizeof(before) - 1;
    assert_int_equal(
        getsockopt(lone, IPPROTO_TCP, TCP_CONGESTION, before, &len), 0);
    assert_false(ftc__sock_same_host(lone));
    assert_false(ftc__sock_same_host(lfd)); /* listening: no peer */
    assert_int_equal(ftc__sock_reno_if_same_host(lone), 0);
    expect_congestion(lone, before);
    close(lone);
    close(sfd);
    close(cfd);
    close(lfd);
}

static void ipv6_loopback_when_available(void **state)
{
    (void)state;
    int lfd, port, cfd;
    if (ftc__sock_listen("::1", 0, 4, &lfd, &port) != 0) {
        /* No IPv6 on this host: the wildcard listener must still work. */
        TK_OK(ftc__sock_listen(NULL, 0, 4, &lfd, &port));
        TK_OK(ftc__sock_connect("127.0.0.1", port,
                                ftc__deadline_in_ms(tk_ms(5000)), NULL, &cfd));
    } else {
        TK_OK(ftc__sock_connect("::1", port, ftc__deadline_in_ms(tk_ms(5000)),
                                NULL, &cfd));
    }
    int sfd = accept_blocking(lfd);
    close(sfd);
    close(cfd);
    close(lfd);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(connect_send_recv),
        cmocka_unit_test(same_host_gets_reno),
        cmocka_unit_test(same_host_through_dual_stack),
        cmocka_unit_test(recv_times_out),
        cmocka_unit_test(cancel_unblocks_recv),
        cmocka_unit_test(connect_to_nothing_times_out_with_reason),
        cmocka_unit_test(connect_retries_until_listener_appears),
        cmocka_unit_test(bad_host_fails_clearly),
        cmocka_unit_test(ipv6_loopback_when_available),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
