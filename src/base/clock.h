/* Monotonic time and deadlines. A public timeout in milliseconds is turned
 * into an absolute deadline once, on entry, and passed down unchanged. */
#ifndef FTC_BASE_CLOCK_H
#define FTC_BASE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC. */
int64_t ftc__now_ns(void);
int64_t ftc__now_ms(void);
/* Unix time in ms (CLOCK_REALTIME): for people and other hosts, never
 * for deadlines. */
int64_t ftc__wall_ms(void);

typedef struct ftc__deadline {
    int64_t ns; /* absolute CLOCK_MONOTONIC time; INT64_MAX means never */
} ftc__deadline;

#define FTC_DEADLINE_NEVER ((ftc__deadline){INT64_MAX})

/* A deadline timeout_ms from now; negative means never. */
ftc__deadline ftc__deadline_in_ms(int64_t timeout_ms);
/* Resolves FTC_TIMEOUT_DEFAULT to default_ms and FTC_TIMEOUT_INFINITE (or
 * any other negative value) to never. */
ftc__deadline ftc__deadline_from_timeout(int64_t timeout_ms,
                                         int64_t default_ms);
/* The one timeout rule (include/ftc/base.h): 0 when timeout_ms is >= 0,
 * FTC_TIMEOUT_INFINITE or FTC_TIMEOUT_DEFAULT; else FTC_EINVAL with a
 * message naming call and the value. Public calls check on entry, before
 * any side effect. */
int ftc__timeout_check(int64_t timeout_ms, const char *call);
/* FTC_TIMEOUT_DEFAULT -> default_ms; every other value unchanged. */
int64_t ftc__timeout_resolve(int64_t timeout_ms, int64_t default_ms);
bool ftc__deadline_expired(ftc__deadline d);
bool ftc__deadline_is_never(ftc__deadline d);
/* Milliseconds left, rounded up, at least 0; INT64_MAX if never. */
int64_t ftc__deadline_left_ms(ftc__deadline d);
/* The timeout argument for poll(2): -1 if never, else left_ms capped. */
int ftc__deadline_poll_ms(ftc__deadline d);
ftc__deadline ftc__deadline_min(ftc__deadline a, ftc__deadline b);

#endif
