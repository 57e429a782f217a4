/* A first-fit list of the regions in use in one address space (a Baby
 * group's arena, the process's shared heap): allocations start from
 * offset 0, so the same low pages are reused and memory stays at the
 * peak of what is in use. Not locked: its owner's lock guards it. */
#ifndef FTC_PG_BABY_REGIONS_H
#define FTC_PG_BABY_REGIONS_H

#include <stddef.h>
#include <stdint.h>

/* Every region starts on this many bytes. */
#define FTC__BABY_ALIGN 64u

typedef struct ftc__baby_region {
    uint64_t off, len;
} ftc__baby_region;

typedef struct ftc__baby_regions {
    ftc__baby_region *v; /* sorted by offset */
    size_t n, cap;
} ftc__baby_regions;

/* A region of len bytes (rounded up to FTC__BABY_ALIGN) below limit:
 * 0, FTC_ENOMEM (the list could not grow) or FTC_EMSGSIZE (no room).
 * Sets no message: the caller names its space. */
int ftc__baby_regions_alloc(ftc__baby_regions *r, uint64_t len, uint64_t limit,
                            uint64_t *off);
/* Frees the region at off; its length into *len (0: none there). */
void ftc__baby_regions_free(ftc__baby_regions *r, uint64_t off, uint64_t *len);

#endif
