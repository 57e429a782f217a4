/* Replicas left out of quorums as unreachable (ftc__quorum_opts.exclude_ms).
 *
 * After a failed step each member reports the replicas its process group
 * could not reach (suspects). Every report names a pair that cannot work
 * together: the decision leaves out the fewest participants that end every
 * pair (greedily: the one in most pairs first), so a group cut off from
 * the others is left out (it is in a pair with each of them) and of two
 * groups cut from each other one goes. A replica left out stays out of the
 * quorums formed for a while, doubled each time it is left out again:
 * otherwise the next round would admit it (the others' next reports name
 * nobody once they trained without it) and fail again, round after round.
 * Safety does not rest on this: the split-brain guard still counts it as
 * a healthy replica, so the members left must be more than half. */
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/quorum/quorum_int.h"

_Static_assert(offsetof(ftc__quorum_excluded, replica_id) == 0,
               "lower_bound reads replica_id at offset 0");

/* The longest time out: exclude_ms << 6. */
#define FTC__QUORUM_EXCLUDE_SHIFT_MAX 6u
/* Forgotten once out of trouble this many times its last time out. */
#define FTC__QUORUM_FORGIVE_FACTOR 4

static const ftc__quorum_excluded *entry(const ftc__quorum_state *s,
                                         const char *replica_id)
{
    bool found;
    size_t i = ftc__quorum_lower_bound(
        s->excluded, s->n_excluded, sizeof(*s->excluded), replica_id, &found);
    return found ? &s->excluded[i] : NULL;
}

/* Whether replica_id is out at now; *until says till when. */
static bool still_out(const ftc__quorum_state *s, const ftc__quorum_opts *o,
                      const char *replica_id, int64_t now, int64_t *until)
{
    const ftc__quorum_excluded *e = entry(s, replica_id);
    if (o->exclude_ms == 0 || e == NULL || now >= e->until_ms) {
        return false;
    }
    *until = e->until_ms;
    return true;
}

bool ftc__quorum_has_exclusion(const ftc__quorum_state *s,
                               const char *replica_id)
{
    return entry(s, replica_id) != NULL;
}

/* One reported pair, as positions in the decision's members (a < b). */
typedef struct pair {
    uint32_t a, b;
} pair;

static int cmp_pair(const void *x, const void *y)
{
    const pair *p = x, *q = y;
    if (p->a != q->a) {
        return p->a < q->a ? -1 : 1;
    }
    return p->b < q->b ? -1 : (p->b > q->b);
}

/* The pairs the reports of the members not yet out name, each once. pos
 * maps a participant index to its position among the members, or -1. */
static int collect_pairs(const ftc__quorum_state *s,
                         const ftc__quorum_decision *d, const int32_t *pos,
                         const bool *out, pair **pairs, size_t *n_pairs)
{
    size_t cap = 0;
    for (size_t i = 0; i < d->n_members; i++) {
        cap += out[i] ? 0 : s->participants[d->member_idx[i]].member.n_suspects;
    }
    *pairs = NULL;
    *n_pairs = 0;
    if (cap == 0) {
        return 0;
    }
    pair *p = ftc__malloc(cap * sizeof(*p));
    if (p == NULL) {
        return ftc__seterr(FTC_ENOMEM, "quorum: %zu reported pairs", cap);
    }
    size_t n = 0;
    for (size_t i = 0; i < d->n_members; i++) {
        const ftc__quorum_member *m = &s->participants[d->member_idx[i]].member;
        const char *id = m->suspects;
        for (uint32_t k = 0; !out[i] && k < m->n_suspects; k++) {
            bool found;
            size_t at =
                ftc__quorum_lower_bound(s->participants, s->n_participants,
                                        sizeof(*s->participants), id, &found);
            id += strlen(id) + 1;
            int32_t j = found ? pos[at] : -1;
            if (j < 0 || (size_t)j == i || out[j]) {
                continue;
            }
            p[n++] = (pair){(uint32_t)(i < (size_t)j ? i : (size_t)j),
                            (uint32_t)(i < (size_t)j ? (size_t)j : i)};
        }
    }
    qsort(p, n, sizeof(*p), cmp_pair);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u == 0 || cmp_pair(&p[u - 1], &p[i]) != 0) {
            p[u++] = p[i];
        }
    }
    *pairs = p;
    *n_pairs = u;
    return 0;
}

/* Whether member i should go before member j when both are in as many
 * pairs: the one behind (lower step) goes, then the larger replica_id. */
static bool goes_before(const ftc__quorum_state *s,
                        const ftc__quorum_decision *d, size_t i, size_t j)
{
    const ftc__quorum_member *a = &s->participants[d->member_idx[i]].member;
    const ftc__quorum_member *b = &s->participants[d->member_idx[j]].member;
    if (a->step != b->step) {
        return a->step < b->step;
    }
    return strcmp(a->replica_id, b->replica_id) > 0;
}

/* Leaves out, one at a time, the member in most remaining pairs until no
 * pair is left (a greedy vertex cover: the fewest is NP-hard, and the
 * partitions that happen, one side against the other, are covered by it
 * exactly). Each member's pairs are listed once (adjacency), so a pick
 * costs a scan of the members and its own pairs, not of every pair. */
static int cover_pairs(const ftc__quorum_state *s,
                       const ftc__quorum_decision *d, const pair *pairs,
                       size_t n, bool *out, bool *newly)
{
    size_t m = d->n_members;
    size_t *count = ftc__calloc(m + 1, sizeof(*count));
    size_t *start = ftc__calloc(m + 1, sizeof(*start));
    uint32_t *next = ftc__malloc((2 * n + 1) * sizeof(*next));
    if (count == NULL || start == NULL || next == NULL) {
        ftc__free(count);
        ftc__free(start);
        ftc__free(next);
        return ftc__seterr(FTC_ENOMEM, "quorum: %zu reported pairs", n);
    }
    for (size_t e = 0; e < n; e++) {
        start[pairs[e].a + 1]++;
        start[pairs[e].b + 1]++;
    }
    for (size_t i = 0; i < m; i++) {
        count[i] = start[i + 1];
        start[i + 1] += start[i];
    }
    size_t *fill = ftc__memdup(start, (m + 1) * sizeof(*start));
    if (fill == NULL) {
        ftc__free(count);
        ftc__free(start);
        ftc__free(next);
        return ftc__seterr(FTC_ENOMEM, "quorum: %zu reported pairs", n);
    }
    for (size_t e = 0; e < n; e++) {
        next[fill[pairs[e].a]++] = pairs[e].b;
        next[fill[pairs[e].b]++] = pairs[e].a;
    }
    ftc__free(fill);
    for (;;) {
        size_t pick = m;
        for (size_t i = 0; i < m; i++) {
            if (!out[i] && count[i] > 0 &&
                (pick == m || count[i] > count[pick] ||
                 (count[i] == count[pick] && goes_before(s, d, i, pick)))) {
                pick = i;
            }
        }
        if (pick == m) {
            break;
        }
        out[pick] = true;
        newly[pick] = true;
        for (size_t k = start[pick]; k < start[pick + 1]; k++) {
            count[next[k]] -= count[next[k]] > 0;
        }
    }
    ftc__free(count);
    ftc__free(start);
    ftc__free(next);
    return 0;
}

/* Healthy replicas still out that are not participants: the straggler
 * rule does not wait for them. */
static void count_waiting(int64_t now, const ftc__quorum_state *s,
                          const ftc__quorum_opts *o, ftc__quorum_decision *d)
{
    for (size_t i = 0; i < s->n_excluded; i++) {
        const ftc__quorum_excluded *e = &s->excluded[i];
        bool found;
        int64_t until;
        ftc__quorum_lower_bound(s->participants, s->n_participants,
                                sizeof(*s->participants), e->replica_id,
                                &found);
        if (!found && still_out(s, o, e->replica_id, now, &until) &&
            ftc__quorum_is_healthy(s, o, e->replica_id, now)) {
            d->waiting_excluded++;
            d->next_ms = until < d->next_ms ? until : d->next_ms;
        }
    }
}

/* Moves the members marked out to d->excluded_idx (ascending, as the
 * members are), keeping the others in order. */
static void split_members(ftc__quorum_decision *d, const bool *out,
                          const bool *newly)
{
    size_t kept = 0;
    for (size_t i = 0; i < d->n_members; i++) {
        if (!out[i]) {
            d->member_idx[kept++] = d->member_idx[i];
            continue;
        }
        d->newly[d->n_excluded] = newly[i];
        d->n_newly += newly[i];
        d->excluded_idx[d->n_excluded++] = d->member_idx[i];
    }
    d->n_members = kept;
}

int ftc__quorum_exclude_pick(int64_t now, const ftc__quorum_state *s,
                             const ftc__quorum_opts *o, bool reports,
                             ftc__quorum_decision *d)
{
    if (o->exclude_ms == 0) {
        return 0;
    }
    count_waiting(now, s, o, d);
    if (d->n_members == 0) {
        return 0;
    }
    size_t n = d->n_members;
    int32_t *pos = ftc__malloc(s->n_participants * sizeof(*pos));
    bool *out = ftc__calloc(n, 2 * sizeof(bool));
    d->excluded_idx = ftc__malloc(n * sizeof(*d->excluded_idx));
    d->newly = ftc__malloc(n * sizeof(*d->newly));
    pair *pairs = NULL;
    size_t n_pairs = 0;
    int rc = 0;
    if (pos == NULL || out == NULL || d->excluded_idx == NULL ||
        d->newly == NULL) {
        rc = ftc__seterr(FTC_ENOMEM, "quorum: %zu members", n);
    }
    bool *newly = out != NULL ? out + n : NULL;
    for (size_t p = 0; rc == 0 && p < s->n_participants; p++) {
        pos[p] = -1;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *id = s->participants[d->member_idx[i]].member.replica_id;
        int64_t until;
        pos[d->member_idx[i]] = (int32_t)i;
        if (still_out(s, o, id, now, &until)) {
            out[i] = true;
            d->next_ms = until < d->next_ms ? until : d->next_ms;
        }
    }
    if (rc == 0 && reports) {
        rc = collect_pairs(s, d, pos, out, &pairs, &n_pairs);
    }
    if (rc == 0) {
        rc = cover_pairs(s, d, pairs, n_pairs, out, newly);
    }
    if (rc == 0) {
        split_members(d, out, newly);
    }
    ftc__free(pairs);
    ftc__free(out);
    ftc__free(pos);
    return rc;
}

/* How long the strikes-th time out in a row lasts. */
static int64_t time_out(const ftc__quorum_opts *o, uint32_t strikes)
{
    uint32_t shift = strikes - 1;
    shift = shift < FTC__QUORUM_EXCLUDE_SHIFT_MAX
                ? shift
                : FTC__QUORUM_EXCLUDE_SHIFT_MAX;
    return o->exclude_ms > (INT64_MAX >> shift) ? INT64_MAX
                                                : o->exclude_ms << shift;
}

void ftc__quorum_exclude_forgive(ftc__quorum_state *s,
                                 const ftc__quorum_opts *o, int64_t now)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n_excluded; i++) {
        const ftc__quorum_excluded *e = &s->excluded[i];
        int64_t span = time_out(o, e->strikes);
        int64_t after = span > INT64_MAX / FTC__QUORUM_FORGIVE_FACTOR
                            ? INT64_MAX
                            : span * FTC__QUORUM_FORGIVE_FACTOR;
        if (ftc__quorum_elapsed_ms(now, e->until_ms) < after) {
            s->excluded[kept++] = *e;
        }
    }
    s->n_excluded = kept;
}

int ftc__quorum_exclude_reserve(ftc__quorum_state *s, const ftc__quorum_opts *o,
                                size_t more)
{
    size_t want = s->n_excluded + more;
    want = want < o->max_replicas ? want : o->max_replicas;
    if (want <= s->cap_excluded) {
        return 0;
    }
    ftc__quorum_excluded *p = ftc__realloc(s->excluded, want * sizeof(*p));
    if (p == NULL) {
        return ftc__seterr(FTC_ENOMEM, "quorum state: %zu excluded", want);
    }
    s->excluded = p;
    s->cap_excluded = want;
    return 0;
}

/* Makes room for one entry: the one whose time out ended first goes. */
static void evict_first(ftc__quorum_state *s)
{
    size_t first = 0;
    for (size_t i = 1; i < s->n_excluded; i++) {
        if (s->excluded[i].until_ms < s->excluded[first].until_ms) {
            first = i;
        }
    }
    memmove(&s->excluded[first], &s->excluded[first + 1],
            (s->n_excluded - first - 1) * sizeof(*s->excluded));
    s->n_excluded--;
}

int64_t ftc__quorum_exclude_record(ftc__quorum_state *s,
                                   const ftc__quorum_opts *o,
                                   const char *replica_id, int64_t now)
{
    ftc__quorum_exclude_forgive(s, o, now);
    bool found;
    size_t i = ftc__quorum_lower_bound(
        s->excluded, s->n_excluded, sizeof(*s->excluded), replica_id, &found);
    if (!found) {
        if (s->n_excluded >= o->max_replicas ||
            s->n_excluded >= s->cap_excluded) {
            evict_first(s);
            i = ftc__quorum_lower_bound(s->excluded, s->n_excluded,
                                        sizeof(*s->excluded), replica_id,
                                        &found);
        }
        memmove(&s->excluded[i + 1], &s->excluded[i],
                (s->n_excluded - i) * sizeof(*s->excluded));
        s->n_excluded++;
        memset(&s->excluded[i], 0, sizeof(s->excluded[i]));
        memcpy(s->excluded[i].replica_id, replica_id, strlen(replica_id) + 1);
    }
    ftc__quorum_excluded *e = &s->excluded[i];
    /* Longer only after a failed return: let in (its own report said it
     * reached the others) and reported again. Kept out on its own report,
     * it was never let in and cost the others nothing. */
    if ((e->strikes == 0 || e->back) && e->strikes < UINT32_MAX) {
        e->strikes++;
    }
    e->back = false;
    int64_t span = time_out(o, e->strikes);
    e->since_ms = now;
    e->until_ms = ftc__quorum_add_ms(now, span);
    return span;
}

void ftc__quorum_exclude_members_back(ftc__quorum_state *s,
                                      const ftc__quorum *q)
{
    for (size_t i = 0; s->n_excluded > 0 && i < q->n; i++) {
        bool found;
        size_t k = ftc__quorum_lower_bound(s->excluded, s->n_excluded,
                                           sizeof(*s->excluded),
                                           q->members[i].replica_id, &found);
        if (found) {
            s->excluded[k].back = true;
        }
    }
}

bool ftc__quorum_left_out_at(const ftc__quorum_state *s, const char *replica_id,
                             int64_t now_ms, int64_t *until_ms)
{
    const ftc__quorum_excluded *e = entry(s, replica_id);
    if (e == NULL || e->since_ms != now_ms) {
        return false;
    }
    *until_ms = e->until_ms;
    return true;
}
