/* The lighthouse's compact quorum answers: what of a quorum changes from
 * round to round (ids, steps, commit failures, shrink_only), for a client
 * that already holds the quorum's roster (ftc__quorum_same_roster). A
 * round's answer is then O(1) in the steady state instead of the whole
 * member list, and the same bytes for every member (docs/protocol.md,
 * "Compact answers"). Pure and fuzzed, like lighthouse_json.c. */
#include <inttypes.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/lighthouse/lighthouse_json.h"

/* The step most members share in the steady state: the largest. */
static int64_t max_step(const ftc__quorum *q)
{
    int64_t s = 0;
    for (size_t i = 0; i < q->n; i++) {
        if (q->members[i].step > s) {
            s = q->members[i].step;
        }
    }
    return s;
}

static bool usual(const ftc__quorum_member *m, int64_t step)
{
    return m->step == step && m->commit_failures == 0 && !m->shrink_only;
}

json_t *ftc__lhj_compact_json(const ftc__quorum *q, int64_t roster)
{
    int64_t step = max_step(q);
    json_t *others = json_array();
    for (size_t i = 0; others != NULL && i < q->n; i++) {
        const ftc__quorum_member *m = &q->members[i];
        if (usual(m, step)) {
            continue;
        }
        json_t *o = json_pack("{s:I, s:I, s:I, s:b}", "rank", (json_int_t)i,
                              "step", (json_int_t)m->step, "commit_failures",
                              (json_int_t)m->commit_failures, "shrink_only",
                              m->shrink_only);
        if (json_array_append_new(others, o) != 0) {
            json_decref(others);
            others = NULL;
        }
    }
    return others == NULL
               ? NULL
               : json_pack("{s:I, s:I, s:I, s:I, s:I, s:o}", "quorum_id",
                           (json_int_t)q->quorum_id, "created_wall_ms",
                           (json_int_t)q->created_wall_ms, "roster",
                           (json_int_t)roster, "n", (json_int_t)q->n, "step",
                           (json_int_t)step, "others", others);
}

/* One member that is not at the answer's step: its rank and state. */
typedef struct exception {
    size_t rank;
    int64_t step, commit_failures;
    bool shrink_only;
} exception;

static int read_exception(const json_t *o, size_t n, size_t after, exception *e)
{
    if (!json_is_object(o)) {
        return ftc__seterr(FTC_EINVAL, "compact quorum: others: expected "
                                       "objects");
    }
    int64_t rank = -1, step = 0, failures = 0;
    bool shrink = false;
    int rc = ftc__lhj_get_int(o, "rank", true, 0, (int64_t)n - 1, &rank);
    if (rc == 0) {
        rc = ftc__lhj_get_int(o, "step", true, 0, INT64_MAX, &step);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(o, "commit_failures", false, 0, INT64_MAX,
                              &failures);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_bool(o, "shrink_only", &shrink);
    }
    if (rc == 0 && after > 0 && (size_t)rank < after) {
        rc = ftc__seterr(FTC_EINVAL,
                         "compact quorum: others: rank %" PRId64
                         " out of ascending order",
                         rank);
    }
    if (rc != 0) {
        return ftc__adderr(rc, "compact quorum");
    }
    *e = (exception){(size_t)rank, step, failures, shrink};
    return 0;
}

int ftc__lhj_compact_apply(const json_t *obj, int64_t roster, ftc__quorum *q)
{
    if (!json_is_object(obj)) {
        return ftc__seterr(FTC_EINVAL, "compact quorum: expected an object");
    }
    int64_t id = 0, created = 0, version = 0, n = 0, step = 0;
    int rc = ftc__lhj_get_int(obj, "quorum_id", true, 0, INT64_MAX, &id);
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "created_wall_ms", false, INT64_MIN,
                              INT64_MAX, &created);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "roster", true, 1, INT64_MAX, &version);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "n", true, 0, INT64_MAX, &n);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "step", true, 0, INT64_MAX, &step);
    }
    const json_t *others = json_object_get(obj, "others");
    if (rc == 0 && !json_is_array(others)) {
        rc = ftc__seterr(FTC_EINVAL, "compact quorum: others: expected an "
                                     "array");
    }
    if (rc != 0) {
        return ftc__adderr(rc, "compact quorum");
    }
    if (version != roster) {
        return ftc__seterr(FTC_ESTALE,
                           "compact quorum for roster %" PRId64
                           ", but the client holds roster %" PRId64,
                           version, roster);
    }
    if ((uint64_t)n != q->n || json_array_size(others) > q->n) {
        return ftc__seterr(FTC_EINVAL,
                           "compact quorum of %" PRId64 " members (%zu "
                           "others) for a roster of %zu",
                           n, json_array_size(others), q->n);
    }
    size_t k = json_array_size(others);
    exception *ex = k > 0 ? ftc__calloc(k, sizeof(*ex)) : NULL;
    if (k > 0 && ex == NULL) {
        return ftc__seterr(FTC_ENOMEM, "compact quorum: %zu others", k);
    }
    for (size_t i = 0; i < k && rc == 0; i++) {
        rc = read_exception(json_array_get(others, i), q->n,
                            i > 0 ? ex[i - 1].rank + 1 : 0, &ex[i]);
    }
    if (rc == 0) {
        for (size_t i = 0; i < q->n; i++) {
            q->members[i].step = step;
            q->members[i].commit_failures = 0;
            q->members[i].shrink_only = false;
        }
        for (size_t i = 0; i < k; i++) {
            ftc__quorum_member *m = &q->members[ex[i].rank];
            m->step = ex[i].step;
            m->commit_failures = ex[i].commit_failures;
            m->shrink_only = ex[i].shrink_only;
        }
        q->quorum_id = id;
        q->created_wall_ms = created;
    }
    ftc__free(ex);
    return rc;
}
