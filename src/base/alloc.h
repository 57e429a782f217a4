/* All library allocation goes through these, so tests can make the Nth
 * allocation fail and prove every error path frees what it took. */
#ifndef FTC_BASE_ALLOC_H
#define FTC_BASE_ALLOC_H

#include <stddef.h>

void *ftc__malloc(size_t n);
void *ftc__calloc(size_t count, size_t size);
void *ftc__realloc(void *p, size_t n);
void ftc__free(void *p);
char *ftc__strdup(const char *s);
void *ftc__memdup(const void *p, size_t n);

#ifdef FTC_TESTING
/* Makes the allocation after n more succeed fail, once armed; n < 0 disarms.
 * Counts allocations from every thread. */
void ftc__alloc_fail_after(long n);
/* How many allocations failed by injection since the last arming. */
long ftc__alloc_injected_failures(void);
#endif

#endif
