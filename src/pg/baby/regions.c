/* First-fit region lists (regions.h). */
#include <string.h>

#include "base/base_int.h"
#include "pg/baby/regions.h"

static uint64_t up(uint64_t v)
{
    return (v + FTC__BABY_ALIGN - 1) & ~(uint64_t)(FTC__BABY_ALIGN - 1);
}

int ftc__baby_regions_alloc(ftc__baby_regions *r, uint64_t len, uint64_t limit,
                            uint64_t *off)
{
    if (len > limit) {
        return FTC_EMSGSIZE;
    }
    len = up(len > 0 ? len : 1);
    if (r->n == r->cap) {
        size_t cap = r->cap > 0 ? r->cap * 2 : 16;
        ftc__baby_region *v = ftc__realloc(r->v, cap * sizeof(*v));
        if (v == NULL) {
            return FTC_ENOMEM;
        }
        r->v = v;
        r->cap = cap;
    }
    uint64_t at = 0;
    size_t i = 0;
    while (i < r->n && r->v[i].off - at < len) {
        at = up(r->v[i].off + r->v[i].len);
        i++;
    }
    if (i == r->n && (at > limit || limit - at < len)) {
        return FTC_EMSGSIZE;
    }
    memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(*r->v));
    r->v[i] = (ftc__baby_region){.off = at, .len = len};
    r->n++;
    *off = at;
    return 0;
}

void ftc__baby_regions_free(ftc__baby_regions *r, uint64_t off, uint64_t *len)
{
    *len = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].off == off) {
            *len = r->v[i].len;
            memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(*r->v));
            r->n--;
            return;
        }
    }
}
