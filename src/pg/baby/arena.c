/* The arena's allocator on the parent side: first fit from offset 0 over
 * the regions of the requests in flight, so a group reuses the same low
 * pages and its memory stays at the peak of its bytes in flight. */
#include "pg/baby/parent.h"

#define ALIGN 64u

static uint64_t up(uint64_t v)
{
    return (v + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

int ftc__baby_arena_alloc(baby *b, uint64_t len, uint64_t *off)
{
    len = up(len > 0 ? len : 1);
    if (len > FTC__BABY_ARENA_BYTES) {
        return ftc__seterr(FTC_EMSGSIZE,
                           "%s: %llu bytes in one request (the arena holds "
                           "%llu)",
                           b->name, (unsigned long long)len,
                           (unsigned long long)FTC__BABY_ARENA_BYTES);
    }
    if (b->nregions == b->cap_regions) {
        size_t cap = b->cap_regions > 0 ? b->cap_regions * 2 : 16;
        baby_region *r = ftc__realloc(b->regions, cap * sizeof(*r));
        if (r == NULL) {
            return ftc__seterr(FTC_ENOMEM, "%s: out of memory", b->name);
        }
        b->regions = r;
        b->cap_regions = cap;
    }
    uint64_t at = 0;
    size_t i = 0;
    while (i < b->nregions && b->regions[i].off - at < len) {
        at = up(b->regions[i].off + b->regions[i].len);
        i++;
    }
    if (i == b->nregions && FTC__BABY_ARENA_BYTES - at < len) {
        return ftc__seterr(FTC_EMSGSIZE,
                           "%s: the arena (%llu bytes) is full with the "
                           "requests in flight",
                           b->name, (unsigned long long)FTC__BABY_ARENA_BYTES);
    }
    memmove(&b->regions[i + 1], &b->regions[i],
            (b->nregions - i) * sizeof(*b->regions));
    b->regions[i] = (baby_region){.off = at, .len = len};
    b->nregions++;
    *off = at;
    return 0;
}

void ftc__baby_arena_free(baby *b, uint64_t off)
{
    for (size_t i = 0; i < b->nregions; i++) {
        if (b->regions[i].off == off) {
            memmove(&b->regions[i], &b->regions[i + 1],
                    (b->nregions - i - 1) * sizeof(*b->regions));
            b->nregions--;
            return;
        }
    }
}
