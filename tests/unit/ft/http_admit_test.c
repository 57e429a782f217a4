/* Admission of HTTP connections (src/ft/http_admit.c), at the accept
 * policy alone: a stranger's place is taken when it is accepted, so
 * accepts racing on a server's several threads cannot both take the
 * last one; vouched addresses pass a full table. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/http_admit.h"
#include "testkit.h"

static struct sockaddr_in ipv4(const char *ip)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(4000)};
    inet_pton(AF_INET, ip, &sa.sin_addr);
    return sa;
}

static enum MHD_Result accept_from(ftc__http_admit *a, const char *ip)
{
    struct sockaddr_in sa = ipv4(ip);
    return ftc__http_admit_accept(a, (const struct sockaddr *)&sa, sizeof(sa));
}

static uint64_t strangers(ftc__http_admit *a)
{
    uint64_t refused, open;
    ftc__http_admit_counts(a, &refused, &open);
    return open;
}

static void places_are_taken_at_accept(void **state)
{
    (void)state;
    ftc__http_admit a;
    /* 8 connections, 2 kept for the vouched, 2 per stranger address. */
    ftc__http_admit_init(&a, 8, 2, 2, "test.refused", "strangers");
    /* Two accepts of one address before either started: both count. */
    assert_int_equal(accept_from(&a, "10.0.0.1"), MHD_YES);
    assert_int_equal(accept_from(&a, "10.0.0.1"), MHD_YES);
    assert_int_equal(accept_from(&a, "10.0.0.1"), MHD_NO);
    assert_int_equal(strangers(&a), 2);
    /* The strangers' share (6) fills across addresses. */
    assert_int_equal(accept_from(&a, "10.0.0.2"), MHD_YES);
    assert_int_equal(accept_from(&a, "10.0.0.2"), MHD_YES);
    assert_int_equal(accept_from(&a, "10.0.0.3"), MHD_YES);
    assert_int_equal(accept_from(&a, "10.0.0.4"), MHD_YES);
    assert_int_equal(accept_from(&a, "10.0.0.5"), MHD_NO);
    assert_int_equal(strangers(&a), 6);
    /* A vouched address passes the full table and takes no place. */
    const char *healer = "10.0.0.9:7000";
    ftc__http_admit_vouch(&a, &healer, 1);
    assert_int_equal(accept_from(&a, "10.0.0.9"), MHD_YES);
    assert_int_equal(accept_from(&a, "10.0.0.9"), MHD_YES);
    assert_int_equal(accept_from(&a, "10.0.0.9"), MHD_YES);
    assert_int_equal(strangers(&a), 6);
    uint64_t refused, open;
    ftc__http_admit_counts(&a, &refused, &open);
    assert_int_equal(refused, 2);
    ftc__http_admit_fini(&a);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(places_are_taken_at_accept),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
