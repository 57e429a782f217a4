/* Naming the ranks that never arrived: each arriving rank writes
 * "<key>/<rank>", so after a timeout the absent ones are found by CHECKs on
 * halves of the rank range (m missing ranks cost O(m log n) round trips,
 * one when none is missing). */
#include <stdio.h>
#include <string.h>

#include "control/control_int.h"

/* Reports how many missing ranks are listed before "and N more". */
#define LIST_MAX 32

typedef struct search {
    ftc_control *g;
    const char *key;
    int exclude;
    ftc__deadline dl;
    int *missing;
    int nmissing;
} search;

/* Whether every rank in [lo, hi) except the excluded one has arrived. */
static int all_arrived(search *s, int lo, int hi, int *ready)
{
    int n = hi - lo;
    char(*names)[FTC__CONTROL_KEY_MAX] =
        ftc__malloc((size_t)n * sizeof(*names));
    const char **keys = ftc__malloc((size_t)n * sizeof(*keys));
    int rc = FTC_ENOMEM;
    if (names == NULL || keys == NULL) {
        ftc__seterr(rc, "missing-rank search");
        goto done;
    }
    int k = 0;
    for (int r = lo; r < hi; r++) {
        if (r != s->exclude) {
            ftc__control_rank_key(names[k], s->key, r);
            keys[k] = names[k];
            k++;
        }
    }
    rc = ftc_store_client_check(s->g->store, keys, (size_t)k, ready,
                                ftc__control_left_ms(s->dl));
done:
    ftc__free(keys);
    ftc__free(names);
    return rc;
}

static int find(search *s, int lo, int hi)
{
    if (hi - lo == 1 && lo == s->exclude) {
        return 0;
    }
    int ready = 0;
    int rc = all_arrived(s, lo, hi, &ready);
    if (rc != 0 || ready) {
        return rc;
    }
    if (hi - lo == 1) {
        s->missing[s->nmissing++] = lo;
        return 0;
    }
    int mid = lo + (hi - lo) / 2;
    rc = find(s, lo, mid);
    return rc != 0 ? rc : find(s, mid, hi);
}

int ftc__control_timeout_error(ftc_control *g, const char *op, const char *key,
                               int exclude, int64_t elapsed_ms)
{
    search s = {.g = g,
                .key = key,
                .exclude = exclude,
                .dl = ftc__deadline_in_ms(FTC__CONTROL_GRACE_MS),
                .missing = ftc__malloc((size_t)g->world * sizeof(int))};
    char list[512] = "unknown (could not ask the store)";
    if (s.missing != NULL && find(&s, 0, g->world) == 0) {
        size_t used = 0;
        list[0] = '\0';
        for (int i = 0; i < s.nmissing && i < LIST_MAX; i++) {
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d",
                                     i > 0 ? ", " : "", s.missing[i]);
        }
        if (s.nmissing > LIST_MAX) {
            snprintf(list + used, sizeof(list) - used, " and %d more",
                     s.nmissing - LIST_MAX);
        }
        if (s.nmissing == 0) {
            snprintf(list, sizeof(list), "none (all arrived just now)");
        }
    }
    ftc__free(s.missing);
    return ftc__seterr(FTC_ETIMEDOUT,
                       "%s '%s' timed out after %lld ms: missing ranks %s", op,
                       key, (long long)elapsed_ms, list);
}
