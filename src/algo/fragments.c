/* DiLoCo's fragment table: the caller's ranges of the parameter vector,
 * checked, or an even split of it. */
#include "algo/algo_int.h"

#include <stdlib.h>

typedef struct indexed_range {
    ftc_algo_range r;
    size_t index; /* position in the caller's table, for messages */
} indexed_range;

static int by_offset(const void *a, const void *b)
{
    const indexed_range *x = a;
    const indexed_range *y = b;
    if (x->r.offset != y->r.offset) {
        return x->r.offset < y->r.offset ? -1 : 1;
    }
    return x->index < y->index ? -1 : (x->index > y->index);
}

static int check_bounds(const ftc_algo_range *given, size_t nfrag, size_t n)
{
    for (size_t i = 0; i < nfrag; i++) {
        const ftc_algo_range *r = &given[i];
        if (r->count == 0) {
            return ftc__seterr(FTC_EINVAL, "fragment %zu is empty", i);
        }
        if (r->offset >= n || r->count > n - r->offset) {
            return ftc__seterr(FTC_EINVAL,
                               "fragment %zu [%zu, +%zu) is outside the "
                               "parameter vector of %zu floats",
                               i, r->offset, r->count, n);
        }
    }
    return 0;
}

/* Sorted by offset, each range must end where or before the next starts. */
static int check_disjoint(const ftc_algo_range *given, size_t nfrag)
{
    indexed_range *sorted = ftc__calloc(nfrag, sizeof(*sorted));
    if (sorted == NULL) {
        return ftc__seterr(FTC_ENOMEM, "sorting %zu fragments", nfrag);
    }
    for (size_t i = 0; i < nfrag; i++) {
        sorted[i] = (indexed_range){given[i], i};
    }
    qsort(sorted, nfrag, sizeof(*sorted), by_offset);
    int rc = 0;
    for (size_t i = 1; i < nfrag && rc == 0; i++) {
        const indexed_range *a = &sorted[i - 1];
        const indexed_range *b = &sorted[i];
        if (a->r.offset + a->r.count > b->r.offset) {
            rc = ftc__seterr(FTC_EINVAL,
                             "fragments %zu [%zu, +%zu) and %zu [%zu, +%zu) "
                             "overlap",
                             a->index, a->r.offset, a->r.count, b->index,
                             b->r.offset, b->r.count);
        }
    }
    ftc__free(sorted);
    return rc;
}

int ftc__algo_fragments(const ftc_algo_range *given, size_t nfrag, size_t n,
                        ftc_algo_range **out)
{
    *out = NULL;
    if (given == NULL && n < nfrag) {
        return ftc__seterr(FTC_EINVAL,
                           "%zu floats cannot be split into %zu non-empty "
                           "fragments",
                           n, nfrag);
    }
    if (given != NULL) {
        int rc = check_bounds(given, nfrag, n);
        if (rc == 0) {
            rc = check_disjoint(given, nfrag);
        }
        if (rc != 0) {
            return rc;
        }
    }
    ftc_algo_range *table = ftc__calloc(nfrag, sizeof(*table));
    if (table == NULL) {
        return ftc__seterr(FTC_ENOMEM, "%zu fragments", nfrag);
    }
    for (size_t i = 0; i < nfrag; i++) {
        if (given != NULL) {
            table[i] = given[i];
        } else {
            /* The first n % nfrag fragments take one extra float. */
            size_t base = n / nfrag;
            size_t extra = n % nfrag;
            table[i].offset = i * base + (i < extra ? i : extra);
            table[i].count = base + (i < extra);
        }
    }
    *out = table;
    return 0;
}
