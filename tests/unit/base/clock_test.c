/* Deadlines: conversion of public timeouts, expiry, poll arguments. */
#include <limits.h>

#include "base/clock.h"
#include "testkit.h"

static void timeouts_convert(void **state)
{
    (void)state;
    assert_true(ftc__deadline_is_never(
        ftc__deadline_from_timeout(FTC_TIMEOUT_INFINITE, 100)));
    assert_true(ftc__deadline_is_never(ftc__deadline_from_timeout(-7, 100)));
    ftc__deadline d = ftc__deadline_from_timeout(FTC_TIMEOUT_DEFAULT, 5000);
    int64_t left = ftc__deadline_left_ms(d);
    assert_true(left > 4000 && left <= 5000);
    assert_true(ftc__deadline_is_never(
        ftc__deadline_from_timeout(FTC_TIMEOUT_DEFAULT, -1)));
    assert_int_equal(ftc__deadline_poll_ms(FTC_DEADLINE_NEVER), -1);
    assert_int_equal(ftc__deadline_left_ms(FTC_DEADLINE_NEVER), INT64_MAX);
    /* Absurdly long timeouts saturate instead of overflowing. */
    assert_true(ftc__deadline_is_never(ftc__deadline_in_ms(INT64_MAX)));
}

static void zero_timeout_is_already_expired(void **state)
{
    (void)state;
    ftc__deadline d = ftc__deadline_in_ms(0);
    assert_true(ftc__deadline_expired(d));
    assert_int_equal(ftc__deadline_left_ms(d), 0);
    assert_int_equal(ftc__deadline_poll_ms(d), 0);
}

static void expires_after_its_time(void **state)
{
    (void)state;
    ftc__deadline d = ftc__deadline_in_ms(20);
    assert_false(ftc__deadline_expired(d));
    TK_WAIT_UNTIL(ftc__deadline_expired(d), 1000);
    assert_true(ftc__now_ns() >= d.ns);
}

static void min_picks_the_earlier(void **state)
{
    (void)state;
    ftc__deadline a = ftc__deadline_in_ms(10), b = ftc__deadline_in_ms(1000);
    assert_int_equal(ftc__deadline_min(a, b).ns, a.ns);
    assert_int_equal(ftc__deadline_min(FTC_DEADLINE_NEVER, b).ns, b.ns);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(timeouts_convert),
        cmocka_unit_test(zero_timeout_is_already_expired),
        cmocka_unit_test(expires_after_its_time),
        cmocka_unit_test(min_picks_the_earlier),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
