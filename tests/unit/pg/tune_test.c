/* Socket tuning of a group's connections: the congestion control chosen
 * automatically between ranks of one host, kept, or named, a name the
 * kernel refuses failing the group's creation, and socket buffers left to
 * the kernel's autotuning unless sized. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pg/tcp/tcp_int.h"
#include "pg_kit.h"

static void congestion_of(int fd, char *out, size_t cap)
{
    socklen_t len = (socklen_t)cap;
    memset(out, 0, cap);
    TK_OK(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, out, &len));
}

/* What a new TCP socket gets: the system default. */
static void system_default(char *out, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    congestion_of(fd, out, cap);
    close(fd);
}

/* Every connection of the member (collective and side channels to every
 * peer) uses the congestion control in arg. */
static int uses(ftc_pg *pg, void *arg)
{
    const char *want = arg;
    ftc__tcp *g = pg->impl;
    for (int p = 0; p < g->size; p++) {
        if (p == g->rank) {
            continue;
        }
        int fds[] = {g->coll[ftc__chan_id(g, p, 0)].fd, g->side[p].fd};
        for (int i = 0; i < 2; i++) {
            char cc[FTC__CC_NAME_MAX];
            congestion_of(fds[i], cc, sizeof(cc));
            if (strcmp(cc, want) != 0) {
                return ftc__seterr(FTC_EPROTO, "rank %d to %d: %s, not %s",
                                   g->rank, p, cc, want);
            }
        }
    }
    return 0;
}

static void automatic_is_reno_between_local_ranks(void **state)
{
    (void)state;
    unsetenv("FTC_PG_TCP_CONGESTION");
    pgt_run_threads(3, NULL, uses, "reno");
}

static void empty_keeps_the_system_default(void **state)
{
    (void)state;
    char def[FTC__CC_NAME_MAX];
    system_default(def, sizeof(def));
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.tcp_congestion = "";
    pgt_run_threads(2, &o, uses, def);
    /* The environment stands in for a NULL option, not for a set one. */
    setenv("FTC_PG_TCP_CONGESTION", "", 1);
    pgt_run_threads(2, NULL, uses, def);
    o.tcp_congestion = "reno";
    pgt_run_threads(2, &o, uses, "reno");
    unsetenv("FTC_PG_TCP_CONGESTION");
}

static int sockopt_int(int fd, int opt)
{
    int v = 0;
    socklen_t len = sizeof(v);
    TK_OK(getsockopt(fd, SOL_SOCKET, opt, &v, &len));
    return v;
}

/* The receive buffer of a fresh connected loopback socket: what the
 * kernel's autotuning starts from (net.ipv4.tcp_rmem's default). */
static int fresh_rcvbuf(void)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    TK_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
    TK_OK(listen(l, 1));
    TK_OK(getsockname(l, (struct sockaddr *)&a, &al));
    int c = socket(AF_INET, SOCK_STREAM, 0);
    TK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
    int v = sockopt_int(c, SO_RCVBUF);
    close(c);
    close(l);
    return v;
}

/* Every collective connection has SO_SNDBUF and SO_RCVBUF of *arg. */
static int buffers_are(ftc_pg *pg, void *arg)
{
    const int *want = arg;
    ftc__tcp *g = pg->impl;
    for (int p = 0; p < g->size; p++) {
        int fd = g->coll[ftc__chan_id(g, p, 0)].fd;
        if (p == g->rank) {
            continue;
        }
        int snd = sockopt_int(fd, SO_SNDBUF), rcv = sockopt_int(fd, SO_RCVBUF);
        if ((want[0] != 0 && snd != want[0]) || rcv != want[1]) {
            return ftc__seterr(FTC_EPROTO, "rank %d to %d: sndbuf %d rcvbuf %d",
                               g->rank, p, snd, rcv);
        }
    }
    return 0;
}

static void buffers_autotune_unless_sized(void **state)
{
    (void)state;
    /* Left alone, a connection starts where any other does. */
    int fresh[2] = {0, fresh_rcvbuf()};
    pgt_run_threads(2, NULL, buffers_are, fresh);
    /* A size is applied (the kernel reports twice what was asked). */
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.sndbuf_bytes = o.rcvbuf_bytes = 64 << 10;
    int sized[2] = {128 << 10, 128 << 10};
    pgt_run_threads(2, &o, buffers_are, sized);
}

static int create_alone(const char *cc)
{
    ftc__pg_listener l;
    TK_OK(ftc__pg_listen("127.0.0.1", &l));
    const char *addrs[] = {l.addr};
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.tcp_congestion = cc;
    ftc_pg *pg = NULL;
    int rc =
        ftc__pg_create_from_peers(&pg, &l, addrs, NULL, 0, 1, 0x7e57, NULL, &o);
    assert_null(pg);
    return rc;
}

static void refused_names_fail_the_creation(void **state)
{
    (void)state;
    assert_int_equal(create_alone("no-such-cc"), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "'no-such-cc'"));
    assert_int_equal(create_alone("a-name-far-too-long"), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "longer than 15 bytes"));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(automatic_is_reno_between_local_ranks),
        cmocka_unit_test(empty_keeps_the_system_default),
        cmocka_unit_test(refused_names_fail_the_creation),
        cmocka_unit_test(buffers_autotune_unless_sized),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
