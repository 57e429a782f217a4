/* The lighthouse's delta answers: a client holding one roster rebuilds
 * the next from the members that left and came, over seeded random
 * changes (every member equal to the new quorum's, as a full answer would
 * give), and a delta that does not fit the roster held, or is malformed,
 * is refused with the roster held left as it was. */
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/lighthouse/lighthouse_json.h"
#include "quorum_kit.h"
#include "testkit.h"

static uint64_t rng;

static uint64_t next_random(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A roster drawn from ids g00..g39: each present with probability 1/2,
 * its address one of two, its step and failures random, sorted by id. */
static void random_roster(ftc__quorum *q, int64_t quorum_id)
{
    const char *ids[40];
    int64_t steps[40];
    char names[40][8];
    size_t n = 0;
    for (int i = 0; i < 40; i++) {
        if (next_random() % 2 == 0) {
            snprintf(names[n], sizeof(names[n]), "g%02d", i);
            ids[n] = names[n];
            steps[n] = (int64_t)(next_random() % 3) + 10;
            n++;
        }
    }
    qf_quorum(q, quorum_id, ids, steps, n);
    for (size_t i = 0; i < n; i++) {
        if (next_random() % 4 == 0) { /* a new incarnation's address */
            snprintf(q->members[i].address, FTC__QUORUM_STR_MAX,
                     "http://10.0.0.9:%zu", 29600 + i);
        }
        q->members[i].commit_failures = next_random() % 5 == 0;
    }
}

/* Encodes the delta from base to q, dumps and parses it, applies it to
 * base: the result equals q member by member. */
static void delta_round_trip(const ftc__quorum *base, const ftc__quorum *q)
{
    json_t *back = qf_through_text(ftc__lhj_delta_json(base, 7, q, 8));
    ftc__quorum got;
    TK_OK(ftc__lhj_delta_apply(back, base, 7, &got));
    json_decref(back);
    assert_int_equal(got.n, q->n);
    assert_int_equal(got.quorum_id, q->quorum_id);
    for (size_t i = 0; i < q->n; i++) {
        assert_true(ftc__quorum_same_entry(&got.members[i], &q->members[i]));
        assert_int_equal(got.members[i].step, q->members[i].step);
        assert_int_equal(got.members[i].commit_failures,
                         q->members[i].commit_failures);
    }
    ftc__quorum_fini(&got);
}

static void random_changes_round_trip(void **state)
{
    (void)state;
    rng = 20261207;
    for (int trial = 0; trial < 300; trial++) {
        ftc__quorum base, q;
        random_roster(&base, trial);
        random_roster(&q, trial + 1);
        delta_round_trip(&base, &q);
        delta_round_trip(&q, &base);
        delta_round_trip(&q, &q); /* nothing changed: an empty delta */
        ftc__quorum_fini(&base);
        ftc__quorum_fini(&q);
    }
}

/* One group leaves a job of four: the delta names one rank and no member,
 * a few dozen bytes however big the job. */
static void one_leaving_costs_one_rank(void **state)
{
    (void)state;
    static const char *const four[] = {"a", "b", "c", "d"};
    static const char *const three[] = {"a", "c", "d"};
    static const int64_t steps[] = {5, 5, 5, 5};
    ftc__quorum base, q;
    qf_quorum(&base, 1, four, steps, 4);
    qf_quorum(&q, 2, three, steps, 3);
    json_t *d = ftc__lhj_delta_json(&base, 7, &q, 8);
    assert_non_null(d);
    assert_int_equal(json_array_size(json_object_get(d, "removed")), 1);
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(d, "removed"), 0)),
        1);
    assert_int_equal(json_array_size(json_object_get(d, "added")), 0);
    json_decref(d);
    ftc__quorum_fini(&base);
    ftc__quorum_fini(&q);
}

/* Deltas that cannot be applied to the roster held ({a, b}, version 7):
 * refused with their code, the roster untouched. */
static void malformed_deltas_are_refused(void **state)
{
    (void)state;
#define HEAD "{\"quorum_id\": 5, \"roster\": 8, \"step\": 1, \"others\": [], "
    static const struct {
        const char *text;
        int code;
    } bad[] = {
        {HEAD "\"base\": 6, \"n\": 2, \"removed\": [], \"added\": []}",
         FTC_ESTALE},
        {HEAD "\"n\": 2, \"removed\": [], \"added\": []}", FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 3, \"removed\": [], \"added\": []}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 2, \"removed\": {}, \"added\": []}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 0, \"removed\": [1, 0], \"added\": []}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 0, \"removed\": [0, 0], \"added\": []}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 1, \"removed\": [2], \"added\": []}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 1, \"removed\": [\"a\"], \"added\": []}",
         FTC_EINVAL},
        /* c added at rank 0 would sort before a. */
        {HEAD "\"base\": 7, \"n\": 3, \"removed\": [], \"added\": "
              "[{\"rank\": 0, \"member\": {\"replica_id\": \"c\"}}]}",
         FTC_EINVAL},
        /* a added again next to the a kept. */
        {HEAD "\"base\": 7, \"n\": 3, \"removed\": [], \"added\": "
              "[{\"rank\": 1, \"member\": {\"replica_id\": \"a\"}}]}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 3, \"removed\": [], \"added\": "
              "[{\"rank\": 3, \"member\": {\"replica_id\": \"c\"}}]}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 3, \"removed\": [], \"added\": "
              "[{\"rank\": 2, \"member\": {\"replica_id\": \"\"}}]}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 3, \"removed\": [], \"added\": [2]}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 4, \"removed\": [], \"added\": "
              "[{\"rank\": 3, \"member\": {\"replica_id\": \"d\"}}, "
              "{\"rank\": 2, \"member\": {\"replica_id\": \"c\"}}]}",
         FTC_EINVAL},
        {HEAD "\"base\": 7, \"n\": 2, \"removed\": [], \"added\": []}, ",
         FTC_EINVAL},
        /* Its own base. */
        {HEAD "\"base\": 8, \"n\": 2, \"removed\": [], \"added\": []}",
         FTC_EINVAL},
        /* A member with data built, then a rank out of order: nothing
         * may leak (ASan). */
        {HEAD "\"base\": 7, \"n\": 4, \"removed\": [], \"added\": "
              "[{\"rank\": 1, \"member\": {\"replica_id\": \"a5\", "
              "\"data\": {\"x\": [1, 2]}}}, "
              "{\"rank\": 0, \"member\": {\"replica_id\": \"a0\"}}]}",
         FTC_EINVAL},
    };
#undef HEAD
    ftc__quorum held;
    static const char *const ids[] = {"a", "b"};
    static const int64_t steps[] = {4, 5};
    qf_quorum(&held, 3, ids, steps, 2);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *j = NULL;
        int rc = ftc__lhj_parse_object(bad[i].text, strlen(bad[i].text), &j);
        ftc__quorum out;
        if (rc == 0) {
            rc = ftc__lhj_delta_apply(j, &held, 7, &out);
            json_decref(j);
        }
        if (rc != bad[i].code) {
            fail_msg("delta %zu: %d, expected %d (%s)", i, rc, bad[i].code,
                     ftc_last_error());
        }
        assert_int_equal(held.n, 2);
        assert_int_equal(held.quorum_id, 3);
        assert_int_equal(held.members[1].step, 5);
    }
    /* The good one: b left, c came after a. */
    const char *good = "{\"quorum_id\": 5, \"roster\": 8, \"step\": 6, "
                       "\"others\": [], \"base\": 7, \"n\": 2, \"removed\": "
                       "[1], \"added\": [{\"rank\": 1, \"member\": "
                       "{\"replica_id\": \"c\", \"world_size\": 2}}]}";
    json_t *j;
    TK_OK(ftc__lhj_parse_object(good, strlen(good), &j));
    ftc__quorum out;
    TK_OK(ftc__lhj_delta_apply(j, &held, 7, &out));
    json_decref(j);
    assert_int_equal(out.n, 2);
    assert_string_equal(out.members[0].replica_id, "a");
    assert_string_equal(out.members[1].replica_id, "c");
    assert_int_equal(out.members[1].world_size, 2);
    assert_int_equal(out.members[0].step, 6);
    assert_int_equal(out.quorum_id, 5);
    ftc__quorum_fini(&out);
    ftc__quorum_fini(&held);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_changes_round_trip),
        cmocka_unit_test(one_leaving_costs_one_rank),
        cmocka_unit_test(malformed_deltas_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
