/* Monotonic clock and deadline arithmetic. */
#include "base/clock.h"

#include <limits.h>
#include <time.h>

#include "base/err.h"
#include "ftc/base.h"

int64_t ftc__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t ftc__now_ms(void)
{
    return ftc__now_ns() / 1000000;
}

int64_t ftc__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

ftc__deadline ftc__deadline_in_ms(int64_t timeout_ms)
{
    if (timeout_ms < 0 || timeout_ms > INT64_MAX / 2000000) {
        return FTC_DEADLINE_NEVER;
    }
    return (ftc__deadline){ftc__now_ns() + timeout_ms * 1000000};
}

int ftc__timeout_check(int64_t timeout_ms, const char *call)
{
    if (timeout_ms >= 0 || timeout_ms == FTC_TIMEOUT_INFINITE ||
        timeout_ms == FTC_TIMEOUT_DEFAULT) {
        return 0;
    }
    return ftc__seterr(FTC_EINVAL,
                       "%s: timeout_ms %lld is not >= 0, FTC_TIMEOUT_INFINITE "
                       "(-1) or FTC_TIMEOUT_DEFAULT (-2)",
                       call, (long long)timeout_ms);
}

int64_t ftc__timeout_resolve(int64_t timeout_ms, int64_t default_ms)
{
    return timeout_ms == FTC_TIMEOUT_DEFAULT ? default_ms : timeout_ms;
}

ftc__deadline ftc__deadline_from_timeout(int64_t timeout_ms, int64_t default_ms)
{
    return ftc__deadline_in_ms(ftc__timeout_resolve(timeout_ms, default_ms));
}

bool ftc__deadline_is_never(ftc__deadline d)
{
    return d.ns == INT64_MAX;
}

bool ftc__deadline_expired(ftc__deadline d)
{
    return !ftc__deadline_is_never(d) && ftc__now_ns() >= d.ns;
}

int64_t ftc__deadline_left_ms(ftc__deadline d)
{
    if (ftc__deadline_is_never(d)) {
        return INT64_MAX;
    }
    int64_t left = d.ns - ftc__now_ns();
    if (left <= 0) {
        return 0;
    }
    return (left + 999999) / 1000000;
}

int ftc__deadline_poll_ms(ftc__deadline d)
{
    int64_t left = ftc__deadline_left_ms(d);
    if (left == INT64_MAX) {
        return -1;
    }
    return left > INT_MAX ? INT_MAX : (int)left;
}

ftc__deadline ftc__deadline_min(ftc__deadline a, ftc__deadline b)
{
    return a.ns < b.ns ? a : b;
}
