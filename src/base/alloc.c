/* Allocation wrappers with optional failure injection (FTC_TESTING). */
#include "base/alloc.h"

#include "ftc/base.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifdef FTC_TESTING
static atomic_long fail_countdown = -1;
static atomic_long injected;

void ftc__alloc_fail_after(long n)
{
    atomic_store(&injected, 0);
    atomic_store(&fail_countdown, n);
}

long ftc__alloc_injected_failures(void)
{
    return atomic_load(&injected);
}

/* True when this allocation must fail: every allocation after the countdown
 * reaches zero fails, so an error path that allocates is exercised too. */
static int should_fail(void)
{
    long left = atomic_load(&fail_countdown);
    while (left >= 0) {
        if (left == 0) {
            atomic_fetch_add(&injected, 1);
            return 1;
        }
        if (atomic_compare_exchange_weak(&fail_countdown, &left, left - 1)) {
            return 0;
        }
    }
    return 0;
}
#else
static int should_fail(void)
{
    return 0;
}
#endif

void *ftc__malloc(size_t n)
{
    if (should_fail()) {
        return NULL;
    }
    return malloc(n == 0 ? 1 : n);
}

void *ftc__calloc(size_t count, size_t size)
{
    if (should_fail()) {
        return NULL;
    }
    return calloc(count == 0 ? 1 : count, size == 0 ? 1 : size);
}

void *ftc__realloc(void *p, size_t n)
{
    if (should_fail()) {
        return NULL;
    }
    return realloc(p, n == 0 ? 1 : n);
}

void ftc__free(void *p)
{
    free(p);
}

void ftc_free(void *p)
{
    free(p);
}

void *ftc__memdup(const void *p, size_t n)
{
    void *q = ftc__malloc(n);
    if (q != NULL && n > 0) {
        memcpy(q, p, n);
    }
    return q;
}

char *ftc__strdup(const char *s)
{
    return ftc__memdup(s, strlen(s) + 1);
}
