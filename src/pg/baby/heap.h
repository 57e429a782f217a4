/* The process's shared heap (ftc_pg_mem_alloc): one memfd, mapped by the
 * child of every Baby group that lives at the same time, so that a
 * collective on its bytes crosses without a copy. It exists while an
 * allocation or a Baby group holds a reference, and is unmapped and
 * closed with the last one. */
#ifndef FTC_PG_BABY_HEAP_H
#define FTC_PG_BABY_HEAP_H

#include <stdbool.h>
#include <stdint.h>

#include "pg/baby/baby_shm.h"

typedef struct ftc__baby_heap ftc__baby_heap;

/* The current heap, made when there is none; one reference to it. */
int ftc__baby_heap_ref(ftc__baby_heap **out);
void ftc__baby_heap_unref(ftc__baby_heap *h);
/* Its memfd (to send to a child). */
int ftc__baby_heap_fd(const ftc__baby_heap *h);
/* Whether bytes bytes at p lie inside h: their offset into *off. */
bool ftc__baby_heap_find(const ftc__baby_heap *h, const void *p, uint64_t bytes,
                         uint64_t *off);

#endif
