/* The lighthouse's delta answers: after a change of membership, a client
 * that holds the roster before it (its base) gets the members that left
 * and the members that came, not the whole list again, plus the compact
 * answer's per-round part (docs/protocol.md, "Compact answers"). A change
 * of one group in a job of n then costs each member O(1) instead of O(n).
 * Pure and fuzzed, like lighthouse_json_compact.c. */
#include <inttypes.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/lighthouse/lighthouse_json.h"

/* Appends {"rank": rank, "member": m} to added (NULL: failed). */
static json_t *add(json_t *added, size_t rank, const ftc__quorum_member *m)
{
    json_t *mj = added != NULL ? ftc__lhj_member_json(m) : NULL;
    json_t *o = mj != NULL ? json_pack("{s:I, s:o}", "rank", (json_int_t)rank,
                                       "member", mj)
                           : NULL;
    if (o == NULL || json_array_append_new(added, o) != 0) {
        json_decref(added);
        return NULL;
    }
    return added;
}

static json_t *drop(json_t *removed, size_t rank)
{
    if (removed != NULL &&
        json_array_append_new(removed, json_integer((json_int_t)rank)) != 0) {
        json_decref(removed);
        return NULL;
    }
    return removed;
}

json_t *ftc__lhj_delta_json(const ftc__quorum *base, int64_t base_roster,
                            const ftc__quorum *q, int64_t roster)
{
    json_t *removed = json_array(), *added = json_array();
    /* Both lists are sorted by replica_id: one merge walk. */
    size_t i = 0, k = 0;
    while ((i < base->n || k < q->n) && removed != NULL && added != NULL) {
        int c = i == base->n ? 1
                : k == q->n  ? -1
                             : strcmp(base->members[i].replica_id,
                                      q->members[k].replica_id);
        if (c == 0 &&
            ftc__quorum_same_entry(&base->members[i], &q->members[k])) {
            i++, k++;
            continue;
        }
        if (c <= 0) {
            removed = drop(removed, i++);
        }
        if (c >= 0) {
            added = add(added, k, &q->members[k]);
            k++;
        }
    }
    json_t *obj = removed != NULL && added != NULL
                      ? ftc__lhj_compact_json(q, roster)
                      : NULL;
    if (obj == NULL ||
        json_object_set_new(obj, "base", json_integer(base_roster)) != 0 ||
        json_object_set(obj, "removed", removed) != 0 ||
        json_object_set(obj, "added", added) != 0) {
        json_decref(obj);
        obj = NULL;
    }
    json_decref(removed);
    json_decref(added);
    return obj;
}

/* A rank in [0, below) above prev (-1: none yet), from v. */
static int read_rank(const json_t *v, size_t below, int64_t prev,
                     const char *what, int64_t *out)
{
    int64_t x = json_is_integer(v) ? json_integer_value(v) : -1;
    if (x < 0 || (uint64_t)x >= below || x <= prev) {
        return ftc__seterr(FTC_EINVAL,
                           "delta quorum: %s: not a rank in [0, %zu) above "
                           "%" PRId64,
                           what, below, prev);
    }
    *out = x;
    return 0;
}

/* The rank of removed[i] (-1 past the end). */
static int removed_at(const json_t *removed, size_t i, size_t below,
                      int64_t prev, int64_t *out)
{
    *out = -1;
    return i < json_array_size(removed) ? read_rank(json_array_get(removed, i),
                                                    below, prev, "removed", out)
                                        : 0;
}

/* The rank of added[i] (-1 past the end). */
static int added_at(const json_t *added, size_t i, size_t below, int64_t prev,
                    int64_t *out)
{
    *out = -1;
    if (i >= json_array_size(added)) {
        return 0;
    }
    const json_t *o = json_array_get(added, i);
    return json_is_object(o) ? read_rank(json_object_get(o, "rank"), below,
                                         prev, "added rank", out)
                             : ftc__seterr(FTC_EINVAL, "delta quorum: added: "
                                                       "expected objects");
}

/* The new roster into out (initialised, empty): base's members less the
 * removed ranks, the added ones at their ranks; n in all, in ascending
 * replica_id order, each id once. On error out holds what was built. */
static int rebuild(const json_t *obj, const ftc__quorum *base, size_t n,
                   ftc__quorum *out)
{
    const json_t *removed = json_object_get(obj, "removed");
    const json_t *added = json_object_get(obj, "added");
    if (!json_is_array(removed) || !json_is_array(added)) {
        return ftc__seterr(FTC_EINVAL, "delta quorum: removed and added: "
                                       "expected arrays");
    }
    size_t nr = json_array_size(removed), na = json_array_size(added);
    if (nr > base->n || na > n || base->n - nr != n - na) {
        return ftc__seterr(FTC_EINVAL,
                           "delta quorum: %zu members less %zu plus %zu is "
                           "not %zu",
                           base->n, nr, na, n);
    }
    out->members = n > 0 ? ftc__calloc(n, sizeof(*out->members)) : NULL;
    if (n > 0 && out->members == NULL) {
        return ftc__seterr(FTC_ENOMEM, "delta quorum: %zu members", n);
    }
    size_t r = 0, a = 0, b = 0;
    int64_t gone, at;
    int rc = removed_at(removed, 0, base->n, -1, &gone);
    rc = rc != 0 ? rc : added_at(added, 0, n, -1, &at);
    for (size_t k = 0; rc == 0 && k < n; k++) {
        ftc__quorum_member *m = &out->members[k];
        if (at == (int64_t)k) {
            const json_t *o = json_array_get(added, a++);
            rc = ftc__lhj_member(json_object_get(o, "member"),
                                 FTC__QUORUM_MAX_DATA_CEIL, m);
            out->n += rc == 0; /* built: freed with out from here on */
            rc = rc != 0 ? rc : added_at(added, a, n, at, &at);
        } else {
            while (rc == 0 && gone == (int64_t)b) {
                b++;
                rc = removed_at(removed, ++r, base->n, gone, &gone);
            }
            if (rc == 0 && b == base->n) { /* added ranks out of order */
                rc = ftc__seterr(
                    FTC_EINVAL, "delta quorum: no member left for rank %zu", k);
            }
            rc = rc != 0 ? rc : ftc__quorum_member_copy(m, &base->members[b++]);
            out->n += rc == 0;
        }
        if (rc == 0 && k > 0 &&
            strcmp(out->members[k - 1].replica_id, m->replica_id) >= 0) {
            rc = ftc__seterr(FTC_EINVAL,
                             "delta quorum: members out of "
                             "replica_id order at rank %zu",
                             k);
        }
    }
    while (rc == 0 && gone == (int64_t)b) { /* the last ones left */
        b++;
        rc = removed_at(removed, ++r, base->n, gone, &gone);
    }
    if (rc == 0 && (a != na || r != nr || b != base->n)) {
        rc = ftc__seterr(FTC_EINVAL, "delta quorum: a rank out of place");
    }
    return rc;
}

int ftc__lhj_delta_apply(const json_t *obj, const ftc__quorum *base,
                         int64_t base_roster, ftc__quorum *out)
{
    ftc__quorum_init(out);
    if (!json_is_object(obj)) {
        return ftc__seterr(FTC_EINVAL, "delta quorum: expected an object");
    }
    int64_t from = 0, roster = 0, n = 0;
    int rc = ftc__lhj_get_int(obj, "base", true, 1, INT64_MAX, &from);
    rc = rc != 0 ? rc
                 : ftc__lhj_get_int(obj, "roster", true, 1, INT64_MAX, &roster);
    rc = rc != 0 ? rc
                 : ftc__lhj_get_int(obj, "n", true, 0,
                                    FTC__QUORUM_MAX_REPLICAS_CEIL, &n);
    if (rc == 0 && roster == from) {
        rc = ftc__seterr(FTC_EINVAL,
                         "delta quorum: roster %" PRId64 " is its own base",
                         roster);
    }
    if (rc == 0 && from != base_roster) {
        rc = ftc__seterr(FTC_ESTALE,
                         "delta quorum from roster %" PRId64
                         ", but the client holds roster %" PRId64,
                         from, base_roster);
    }
    rc = rc != 0 ? rc : rebuild(obj, base, (size_t)n, out);
    rc = rc != 0 ? rc : ftc__lhj_compact_apply(obj, roster, out);
    if (rc != 0) {
        ftc__quorum_fini(out);
    }
    return rc;
}
