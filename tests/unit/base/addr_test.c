/* host:port parsing for IPv4, IPv6 and names, and bad input. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "base/addr.h"
#include "testkit.h"

static void check(const char *text, int def, const char *host, int port)
{
    char h[FTC_HOST_MAX];
    int p = -1;
    TK_OK(ftc__addr_split(text, def, h, sizeof(h), &p));
    assert_string_equal(h, host);
    assert_int_equal(p, port);
}

static void good_addresses(void **state)
{
    (void)state;
    check("127.0.0.1:29500", -1, "127.0.0.1", 29500);
    check("localhost:0", -1, "localhost", 0);
    check("example.org", 80, "example.org", 80);
    check("[::1]:8080", -1, "::1", 8080);
    check("[fe80::1%lo]", 7, "fe80::1%lo", 7);
    check("::1", 5, "::1", 5);
    check("2001:db8::2", 5, "2001:db8::2", 5);
    check("h:65535", -1, "h", 65535);
}

static void joins_what_split_reads(void **state)
{
    (void)state;
    char out[FTC_HOST_MAX + 16];
    ftc__addr_join("10.77.0.2", 29500, out, sizeof(out));
    assert_string_equal(out, "10.77.0.2:29500");
    check(out, -1, "10.77.0.2", 29500);
    ftc__addr_join("::1", 0, out, sizeof(out));
    assert_string_equal(out, "[::1]:0");
    check(out, -1, "::1", 0);
}

static void bad(const char *text, int def)
{
    char h[FTC_HOST_MAX];
    int p;
    TK_EXPECT(ftc__addr_split(text, def, h, sizeof(h), &p), FTC_EINVAL);
    assert_true(strlen(ftc_last_error()) > 0);
}

static void bad_addresses(void **state)
{
    (void)state;
    bad("host", -1);    /* port is mandatory here */
    bad(":80", -1);     /* empty host */
    bad("h:65536", -1); /* out of range */
    bad("h:-1", -1);
    bad("h:12ab", -1);
    bad("h:", -1);
    bad("[::1", -1);   /* unclosed */
    bad("[::1]x", -1); /* junk */
    bad("[]:80", -1);
    bad(NULL, 1);
    char longhost[400];
    memset(longhost, 'a', sizeof(longhost) - 1);
    longhost[sizeof(longhost) - 1] = '\0';
    bad(longhost, 1);
}

static void formats_both_families(void **state)
{
    (void)state;
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(9)};
    inet_pton(AF_INET, "10.1.2.3", &in.sin_addr);
    char out[64];
    ftc__addr_format((struct sockaddr *)&in, out, sizeof(out));
    assert_string_equal(out, "10.1.2.3:9");
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6,
                               .sin6_port = htons(443)};
    inet_pton(AF_INET6, "::1", &in6.sin6_addr);
    ftc__addr_format((struct sockaddr *)&in6, out, sizeof(out));
    assert_string_equal(out, "[::1]:443");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_addresses),
        cmocka_unit_test(joins_what_split_reads),
        cmocka_unit_test(bad_addresses),
        cmocka_unit_test(formats_both_families),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
