/* The embedded server's public API: options and their errors, binding
 * (every interface dual-stack, IPv4, IPv6), the port in use, stats, stop
 * with clients still connected, and allocation failure at every point of
 * start-up. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/base_int.h"
#include "store_kit.h"
#include "store_server_kit.h"
#include "testkit.h"

static void misuse_and_bad_options(void **state)
{
    (void)state;
    TK_EXPECT(ftc_store_server_create(NULL, NULL), FTC_EMISUSE);
    ftc_store_server *srv = (ftc_store_server *)1;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.port = 70000;
    TK_EXPECT(ftc_store_server_create(&o, &srv), FTC_EINVAL);
    assert_null(srv);
    assert_non_null(strstr(ftc_last_error(), "70000"));
    ftc_store_server_opts_init(&o);
    o.max_value_bytes = 1 << 20;
    o.max_request_bytes = 1 << 10;
    TK_EXPECT(ftc_store_server_create(&o, &srv), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "max_request_bytes"));
    ftc_store_server_stats st;
    TK_EXPECT(ftc_store_server_stats_get(NULL, &st), FTC_EMISUSE);
    assert_true(ftc_store_server_port(NULL) < 0);
    ftc_store_server_destroy(NULL); /* a no-op */
}

/* Zero fields mean defaults, the documented ones. */
static void defaults(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    assert_null(o.bind_host);
    assert_int_equal(o.port, 0);
    assert_int_equal(o.max_key_bytes, 64 << 10);
    assert_int_equal(o.max_value_bytes, 256 << 20);
    assert_int_equal(o.max_keys_per_request, 128 << 10);
    assert_int_equal(o.max_total_bytes, (size_t)4 << 30);
    assert_int_equal(o.max_connections, 100000);
    assert_int_equal(o.max_output_bytes, (size_t)1 << 30);
    assert_true(o.max_request_bytes >= (size_t)512 << 20);
    /* A struct the _init never saw is refused, not read as defaults. */
    ftc_store_server_opts zero;
    memset(&zero, 0, sizeof(zero));
    zero.bind_host = "127.0.0.1";
    ftc_store_server *srv;
    TK_EXPECT(ftc_store_server_create(&zero, &srv), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "ftc_store_server_opts_init"));
}

static void ping_at(const char *host, int port)
{
    int fd;
    TK_OK(ftc__sock_connect(host, port, ftc__deadline_in_ms(tk_ms(5000)), NULL,
                            &fd));
    sr_conn c = {fd, SR_V2};
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_validate(&b);
    sr_ping(&b, 7);
    sr_flush(&c, &b);
    assert_int_equal(sr_read_u32(&c), 7);
    ftc__buf_free(&b);
    sr_close(&c);
}

static void binding(void **state)
{
    (void)state;
    ftc_store_server *srv;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.bind_host = "*"; /* every interface, asked for */
    TK_OK(ftc_store_server_create(&o, &srv));
    int port = ftc_store_server_port(srv);
    ping_at("127.0.0.1", port);
    ping_at("::1", port);
    ping_at("localhost", port);
    /* the port is taken now */
    ftc_store_server_opts_init(&o);
    o.port = port;
    ftc_store_server *second = (ftc_store_server *)1;
    TK_EXPECT(ftc_store_server_create(&o, &second), FTC_ESYS);
    assert_null(second);
    assert_non_null(strstr(ftc_last_error(), "in use"));
    ssk_stop(srv);
    o.bind_host = "::1";
    o.port = 0;
    TK_OK(ftc_store_server_create(&o, &srv));
    ping_at("::1", ftc_store_server_port(srv));
    ssk_stop(srv);
}

/* The local address of the socket listening on port, as /proc/net/tcp or
 * tcp6 prints it ("0100007F" is 127.0.0.1, all zeros an any address). */
static void listening_address(int port, char *out, size_t cap)
{
    const char *tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    out[0] = '\0';
    for (int t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        assert_non_null(f);
        char line[512], local[64], state[8];
        unsigned p = 0;
        while (fgets(line, sizeof(line), f) != NULL) {
            if (sscanf(line, " %*d: %63[0-9A-F]:%x %*s %7s", local, &p,
                       state) == 3 &&
                (int)p == port && strcmp(state, "0A") == 0) {
                snprintf(out, cap, "%s", local);
            }
        }
        fclose(f);
    }
    assert_true(out[0] != '\0');
}

/* Without a token and without bind_host the store listens on loopback
 * only (anyone who can reach it could rewrite it); with a token, on every
 * interface. */
static void default_bind_follows_token(void **state)
{
    (void)state;
    char where[64];
    ftc_store_server *srv;
    TK_OK(ftc_store_server_create(NULL, &srv));
    listening_address(ftc_store_server_port(srv), where, sizeof(where));
    assert_string_equal(where, "0100007F");
    ssk_stop(srv);
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.token = "secret";
    TK_OK(ftc_store_server_create(&o, &srv));
    listening_address(ftc_store_server_port(srv), where, sizeof(where));
    /* The IPv6 any address (or IPv4's on a host without IPv6). */
    assert_int_equal(strspn(where, "0"), strlen(where));
    ssk_stop(srv);
}

/* Stop with clients connected, one parked and one mid-request: every
 * connection is closed and the loop closes cleanly. */
static void stop_with_clients(void **state)
{
    (void)state;
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    sr_conn parked, partial, idle;
    sr_connect(&parked, port, SR_V2);
    sr_connect(&partial, port, SR_V1);
    sr_connect_bare(&idle, port);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    const char *k[] = {"/never"};
    sr_keys(&b, SR_V2, FTC__OP_WAIT, k, 1);
    sr_flush(&parked, &b);
    sr_key(&b, SR_V1, FTC__OP_SET, "/half");
    sr_u64(&b, 100);
    sr_flush(&partial, &b);
    TK_WAIT_UNTIL(ssk_stats(srv).connections == 3, 5000);
    ssk_stop(srv);
    sr_expect_closed(&parked, 5000);
    sr_expect_closed(&partial, 5000);
    sr_expect_closed(&idle, 5000);
    sr_close(&parked);
    sr_close(&partial);
    sr_close(&idle);
    ftc__buf_free(&b);
}

/* With the Nth allocation failing, start either works or fails cleanly
 * (FTC_ENOMEM), leaving nothing behind (ASan's leak check). */
static void allocation_failures_at_start(void **state)
{
    (void)state;
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.bind_host = "127.0.0.1";
    int started = 0;
    for (long n = 0; n < 40; n++) {
        ftc_store_server *srv = NULL;
        ftc__alloc_fail_after(n);
        int rc = ftc_store_server_create(&o, &srv);
        ftc__alloc_fail_after(-1);
        if (rc == 0) {
            started++;
            ping_at("127.0.0.1", ftc_store_server_port(srv));
            ftc_store_server_destroy(srv);
        } else {
            assert_int_equal(rc, FTC_ENOMEM);
            assert_null(srv);
        }
    }
    assert_true(started > 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(misuse_and_bad_options),
        cmocka_unit_test(defaults),
        cmocka_unit_test(binding),
        cmocka_unit_test(default_bind_follows_token),
        cmocka_unit_test(stop_with_clients),
        cmocka_unit_test(allocation_failures_at_start),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
