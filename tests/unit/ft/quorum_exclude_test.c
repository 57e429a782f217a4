/* Replicas left out as unreachable: members report whom their process
 * group could not reach; the decision leaves out the fewest participants
 * that end every reported pair, and those stay out for exclude_ms, doubled
 * each time they are left out again. */
#include <stdio.h>
#include <string.h>

#include "quorum_kit.h"
#include "testkit.h"

#define OUT_MS 1000

static ftc__quorum_opts exclude_opts(int64_t exclude_ms)
{
    ftc__quorum_opts o = qf_opts(1, 60000, 5000);
    o.exclude_ms = exclude_ms;
    return o;
}

/* id joins at step, reporting the n replicas in suspects. */
static void join_reporting(ftc__quorum_state *s, const ftc__quorum_opts *o,
                           const char *id, int64_t step,
                           const char *const *suspects, size_t n, int64_t now)
{
    ftc__quorum_member m = qf_member(id, step);
    TK_OK(ftc__quorum_member_set_suspects(&m, suspects, n));
    TK_OK(ftc__quorum_join(s, o, &m, now));
    ftc__quorum_member_fini(&m);
}

static ftc__quorum_tick_result tick(ftc__quorum_state *s,
                                    const ftc__quorum_opts *o, int64_t now)
{
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(s, o, now, 0, &t));
    return t;
}

static void expect_members(const ftc__quorum_state *s, const char *joined)
{
    char got[64] = "";
    size_t len = 0;
    for (size_t i = 0; i < s->prev.n && len < sizeof(got); i++) {
        len += (size_t)snprintf(got + len, sizeof(got) - len, "%s",
                                s->prev.members[i].replica_id);
    }
    assert_string_equal(got, joined);
}

static const char *const A[] = {"a"};
static const char *const B[] = {"b"};
static const char *const BC[] = {"b", "c"};
static const char *const ABC[] = {"a", "b", "c"};

/* a, b and c trained together at step 5 (the previous quorum). */
static void three_together(ftc__quorum_state *s, const ftc__quorum_opts *o,
                           int64_t now)
{
    TK_OK(ftc__quorum_state_init(s, 0));
    qf_join(s, o, "a", 5, false, 0, now);
    qf_join(s, o, "b", 5, false, 0, now);
    qf_join(s, o, "c", 5, false, 0, now);
    assert_true(tick(s, o, now).met);
    expect_members(s, "abc");
}

/* a is cut off from b and c, all three still reach the lighthouse: a
 * reports b and c, they report a. */
static void a_cut_off_reports(ftc__quorum_state *s, const ftc__quorum_opts *o,
                              int64_t now)
{
    join_reporting(s, o, "a", 5, BC, 2, now);
    join_reporting(s, o, "b", 5, A, 1, now);
    join_reporting(s, o, "c", 5, A, 1, now);
}

static void a_group_cut_off_is_left_out(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    ftc__quorum_state s;
    three_together(&s, &o, QF_NOW);
    a_cut_off_reports(&s, &o, QF_NOW + 10);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 10);
    assert_true(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_VALID);
    assert_int_equal(t.change, FTC__QUORUM_ID_MEMBERSHIP);
    expect_members(&s, "bc");
    assert_int_equal(t.n_excluded, 1);
    assert_string_equal(t.excluded[0], "a");
    assert_int_equal(t.excluded_for_ms, OUT_MS);
    assert_non_null(strstr(t.reason, "[1 left out as unreachable: a]"));
    /* The members' reports ended with the quorum; a's still stands. */
    assert_int_equal(s.n_participants, 1);
    assert_int_equal(s.participants[0].member.n_suspects, 2);
    assert_null(s.prev.members[0].suspects);
    int64_t until = 0;
    assert_true(ftc__quorum_left_out_at(&s, "a", QF_NOW + 10, &until));
    assert_int_equal(until, QF_NOW + 10 + OUT_MS);
    assert_false(ftc__quorum_left_out_at(&s, "a", QF_NOW + 11, &until));
    assert_false(ftc__quorum_left_out_at(&s, "b", QF_NOW + 10, &until));

    /* b and c go on alone while a is out, though it waits and is
     * healthy: a fast quorum of the previous members. */
    qf_join(&s, &o, "b", 6, false, 0, QF_NOW + 20);
    qf_join(&s, &o, "c", 6, false, 0, QF_NOW + 20);
    t = tick(&s, &o, QF_NOW + 20);
    assert_true(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_FAST);
    expect_members(&s, "bc");
    assert_int_equal(t.n_excluded, 0);
    ftc__quorum_state_fini(&s);
}

static void partial_reports_leave_nobody_out_early(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    ftc__quorum_state s;
    three_together(&s, &o, QF_NOW);
    /* a's report and b's arrive; c (healthy) has not joined yet. Of the
     * pair a-b one would go, but the round waits for c. */
    join_reporting(&s, &o, "a", 5, BC, 2, QF_NOW + 10);
    join_reporting(&s, &o, "b", 5, A, 1, QF_NOW + 10);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 10);
    assert_false(t.met);
    assert_int_equal(s.n_excluded, 0);
    join_reporting(&s, &o, "c", 5, A, 1, QF_NOW + 11);
    t = tick(&s, &o, QF_NOW + 11);
    assert_true(t.met);
    expect_members(&s, "bc");
    assert_int_equal(s.n_excluded, 1);
    assert_string_equal(s.excluded[0].replica_id, "a");
    ftc__quorum_state_fini(&s);
}

static void of_two_cut_apart_the_one_behind_goes(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    ftc__quorum_state s;
    /* Same steps: the larger id goes. */
    three_together(&s, &o, QF_NOW);
    join_reporting(&s, &o, "a", 5, B, 1, QF_NOW + 10);
    join_reporting(&s, &o, "b", 5, A, 1, QF_NOW + 10);
    qf_join(&s, &o, "c", 5, false, 0, QF_NOW + 10);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 10);
    assert_true(t.met);
    expect_members(&s, "ac");
    assert_string_equal(t.excluded[0], "b");
    ftc__quorum_state_fini(&s);
    /* a is behind b: a goes. One-sided reports count as well. */
    three_together(&s, &o, QF_NOW);
    qf_join(&s, &o, "a", 4, false, 0, QF_NOW + 10);
    join_reporting(&s, &o, "b", 5, A, 1, QF_NOW + 10);
    qf_join(&s, &o, "c", 5, false, 0, QF_NOW + 10);
    t = tick(&s, &o, QF_NOW + 10);
    assert_true(t.met);
    expect_members(&s, "bc");
    ftc__quorum_state_fini(&s);
}

/* Leaving one out would leave the other alone, not more than half of the
 * two: nobody is left out (the job waits for the network as it would
 * without reports, and goes on as soon as it heals). */
static void two_groups_cut_apart_stay_together(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 5, false, 0, QF_NOW);
    qf_join(&s, &o, "b", 5, false, 0, QF_NOW);
    assert_true(tick(&s, &o, QF_NOW).met);
    join_reporting(&s, &o, "a", 5, B, 1, QF_NOW + 10);
    join_reporting(&s, &o, "b", 5, A, 1, QF_NOW + 10);
    ftc__quorum_decision d;
    TK_OK(ftc__quorum_compute(QF_NOW + 10, &s, &o, &d));
    assert_true(d.met);
    assert_true(d.fell_back);
    assert_int_equal(d.n_members, 2);
    assert_int_equal(d.n_excluded, 0);
    ftc__quorum_decision_fini(&d);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 10);
    assert_true(t.met);
    expect_members(&s, "ab");
    assert_int_equal(t.n_excluded, 0);
    assert_int_equal(s.n_excluded, 0);
    ftc__quorum_state_fini(&s);
}

/* Two against two: the same. Three against two: the two go. */
static void only_a_majority_goes_on(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    const char *ids[] = {"a", "b", "c", "d", "e"};
    static const char *const AB[] = {"a", "b"};
    static const char *const CDE[] = {"c", "d", "e"};
    for (size_t n = 4; n <= 5; n++) {
        ftc__quorum_state s;
        TK_OK(ftc__quorum_state_init(&s, 0));
        for (size_t i = 0; i < n; i++) {
            qf_join(&s, &o, ids[i], 5, false, 0, QF_NOW);
        }
        assert_true(tick(&s, &o, QF_NOW).met);
        /* {a, b} | the rest: each reports the other side. */
        for (size_t i = 0; i < n; i++) {
            join_reporting(&s, &o, ids[i], 5, i < 2 ? CDE : AB,
                           i < 2 ? n - 2 : 2, QF_NOW + 10);
        }
        ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 10);
        assert_true(t.met);
        expect_members(&s, n == 4 ? "abcd" : "cde");
        assert_int_equal(t.n_excluded, n == 4 ? 0 : 2);
        ftc__quorum_state_fini(&s);
    }
}

static void one_reporting_everyone_is_the_one_that_goes(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    const char *ids[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        qf_join(&s, &o, ids[i], 5, false, 0, QF_NOW);
    }
    assert_true(tick(&s, &o, QF_NOW).met);
    for (int i = 0; i < 3; i++) {
        qf_join(&s, &o, ids[i], 5, false, 0, QF_NOW + 10);
    }
    join_reporting(&s, &o, "d", 5, ABC, 3, QF_NOW + 10);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 10);
    assert_true(t.met);
    expect_members(&s, "abc");
    assert_string_equal(t.excluded[0], "d");
    ftc__quorum_state_fini(&s);
}

static void reports_count_for_nothing_when_off(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(0);
    ftc__quorum_state s;
    three_together(&s, &o, QF_NOW);
    a_cut_off_reports(&s, &o, QF_NOW + 10);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 10);
    assert_true(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_FAST);
    expect_members(&s, "abc");
    assert_int_equal(t.n_excluded, 0);
    assert_int_equal(s.n_excluded, 0);
    ftc__quorum_state_fini(&s);
}

/* a is left out again each time it is let back in and reported again:
 * out for OUT_MS, then twice that, ..., at most 64 times; forgotten once
 * out of trouble for 4 times its last time out. */
static void each_time_again_doubles_up_to_a_cap(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    ftc__quorum_state s;
    three_together(&s, &o, QF_NOW);
    int64_t now = QF_NOW;
    int64_t expect = OUT_MS;
    for (int k = 0; k < 9; k++) {
        now += 10;
        a_cut_off_reports(&s, &o, now);
        ftc__quorum_tick_result t = tick(&s, &o, now);
        assert_true(t.met);
        expect_members(&s, "bc");
        assert_int_equal(t.excluded_for_ms, expect);
        /* Still out one ms before the end: b and c train alone, a waits
         * (no straggler wait for it either). */
        ftc__quorum_decision d;
        TK_OK(ftc__quorum_heartbeat(&s, &o, "a", now + expect - 1));
        qf_join(&s, &o, "b", 5, false, 0, now + expect - 1);
        qf_join(&s, &o, "c", 5, false, 0, now + expect - 1);
        TK_OK(ftc__quorum_compute(now + expect - 1, &s, &o, &d));
        assert_true(d.met);
        assert_int_equal(d.n_members, 2);
        assert_int_equal(d.n_excluded, 1);
        assert_false(d.newly[0]);
        ftc__quorum_decision_fini(&d);
        /* Back: all three form a quorum again (a new membership). */
        now += expect;
        qf_join(&s, &o, "a", 5, false, 0, now);
        t = tick(&s, &o, now);
        assert_true(t.met);
        expect_members(&s, "abc");
        expect = expect * 2 > 64 * OUT_MS ? 64 * OUT_MS : expect * 2;
    }
    /* Not yet forgiven just before 4 times its last time out (64 x)... */
    now += 4 * 64 * OUT_MS - 1;
    a_cut_off_reports(&s, &o, now);
    assert_int_equal(tick(&s, &o, now).excluded_for_ms, 64 * OUT_MS);
    /* ... but after it (once in again). */
    now += 64 * OUT_MS;
    qf_join(&s, &o, "a", 5, false, 0, now);
    qf_join(&s, &o, "b", 5, false, 0, now);
    qf_join(&s, &o, "c", 5, false, 0, now);
    assert_true(tick(&s, &o, now).met);
    now += 4 * 64 * OUT_MS;
    a_cut_off_reports(&s, &o, now);
    ftc__quorum_tick_result t = tick(&s, &o, now);
    assert_true(t.met);
    assert_int_equal(t.excluded_for_ms, OUT_MS);
    ftc__quorum_state_fini(&s);
}

/* Kept out on its own report (it never got in), a's time out does not
 * grow: only a failed return costs the others a step. */
static void kept_out_by_its_own_report_the_time_out_stays(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    o.heartbeat_timeout_ms = 600000;
    ftc__quorum_state s;
    three_together(&s, &o, QF_NOW);
    int64_t now = QF_NOW + 10;
    a_cut_off_reports(&s, &o, now);
    assert_int_equal(tick(&s, &o, now).excluded_for_ms, OUT_MS);
    for (int k = 0; k < 4; k++) {
        /* a's fresh report just before its time out ends; b and c join
         * once it ended: a is left out again, for as long. */
        now += OUT_MS;
        join_reporting(&s, &o, "a", 5, BC, 2, now - 1);
        qf_join(&s, &o, "b", 5, false, 0, now);
        qf_join(&s, &o, "c", 5, false, 0, now);
        ftc__quorum_tick_result t = tick(&s, &o, now);
        assert_true(t.met);
        expect_members(&s, "bc");
        assert_int_equal(t.n_excluded, 1);
        assert_int_equal(t.excluded_for_ms, OUT_MS);
    }
    ftc__quorum_state_fini(&s);
}

static void an_excluded_replica_is_no_straggler(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    ftc__quorum_state s;
    three_together(&s, &o, QF_NOW);
    a_cut_off_reports(&s, &o, QF_NOW + 10);
    assert_true(tick(&s, &o, QF_NOW + 10).met);
    /* a's request ends (its deadline) but it keeps heartbeating. b and
     * two new replicas d and e join (more than half of the five healthy
     * ones); c is a straggler, a is not. */
    TK_OK(ftc__quorum_leave(&s, "a"));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "a", QF_NOW + 20));
    qf_join(&s, &o, "b", 6, false, 0, QF_NOW + 20);
    qf_join(&s, &o, "d", 0, false, 0, QF_NOW + 20);
    qf_join(&s, &o, "e", 0, false, 0, QF_NOW + 20);
    ftc__quorum_decision d;
    TK_OK(ftc__quorum_compute(QF_NOW + 20, &s, &o, &d));
    assert_int_equal(d.verdict, FTC__QUORUM_WAIT_STRAGGLER);
    assert_int_equal(d.waiting_excluded, 1);
    assert_non_null(strstr(d.reason, "waiting for 1 healthy"));
    /* The wait ends when a's time out does, before the join timeout. */
    assert_int_equal(d.next_ms, QF_NOW + 10 + OUT_MS);
    ftc__quorum_decision_fini(&d);
    /* c joins: nobody is waited for, a stays out. */
    qf_join(&s, &o, "c", 6, false, 0, QF_NOW + 21);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 21);
    assert_true(t.met);
    expect_members(&s, "bcde");
    ftc__quorum_state_fini(&s);
}

/* A group still out stays out while the others join one by one, however
 * long its own join has waited (it does not start their straggler wait,
 * and the reports are not dropped while a group expected has not joined:
 * found by review, {a, b} formed without c). */
static void one_still_out_stays_out_while_the_others_trickle_in(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 10000, 600000);
    o.exclude_ms = 30000;
    const char *ids[] = {"a", "b", "c", "d", "e"};
    static const char *const BCDE[] = {"b", "c", "d", "e"};
    for (size_t n = 3; n <= 5; n += 2) {
        ftc__quorum_state s;
        TK_OK(ftc__quorum_state_init(&s, 0));
        for (size_t i = 0; i < n; i++) {
            qf_join(&s, &o, ids[i], 5, false, 0, QF_NOW);
        }
        assert_true(tick(&s, &o, QF_NOW).met);
        join_reporting(&s, &o, "a", 5, BCDE, n - 1, QF_NOW + 10);
        for (size_t i = 1; i < n; i++) {
            join_reporting(&s, &o, ids[i], 5, A, 1, QF_NOW + 10);
        }
        assert_true(tick(&s, &o, QF_NOW + 10).met);
        assert_int_equal(s.prev.n, n - 1);
        /* 12 s later (past the join timeout of a's waiting join) the
         * others come back one by one. */
        int64_t later = QF_NOW + 12000;
        for (size_t i = 1; i + 1 < n; i++) {
            qf_join(&s, &o, ids[i], 6, false, 0, later + (int64_t)i);
            ftc__quorum_tick_result t = tick(&s, &o, later + (int64_t)i);
            assert_false(t.met);
        }
        qf_join(&s, &o, ids[n - 1], 6, false, 0, later + 100);
        ftc__quorum_tick_result t = tick(&s, &o, later + 100);
        assert_true(t.met);
        expect_members(&s, n == 3 ? "bc" : "bcde");
        ftc__quorum_state_fini(&s);
    }
}

static void malformed_reports_are_refused(void **state)
{
    (void)state;
    ftc__quorum_opts o = exclude_opts(OUT_MS);
    ftc__quorum_member m = qf_member("a", 1);
    const char *empty[] = {""};
    TK_EXPECT(ftc__quorum_member_set_suspects(&m, empty, 1), FTC_EINVAL);
    TK_EXPECT(ftc__quorum_member_set_suspects(&m, NULL, 1), FTC_EINVAL);
    char long_id[FTC__QUORUM_STR_MAX + 1];
    memset(long_id, 'x', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    const char *too_long[] = {long_id};
    TK_EXPECT(ftc__quorum_member_set_suspects(&m, too_long, 1), FTC_EINVAL);
    const char *many[FTC__QUORUM_SUSPECTS_MAX + 1];
    for (size_t i = 0; i <= FTC__QUORUM_SUSPECTS_MAX; i++) {
        many[i] = "b";
    }
    TK_EXPECT(
        ftc__quorum_member_set_suspects(&m, many, FTC__QUORUM_SUSPECTS_MAX + 1),
        FTC_EMSGSIZE);
    assert_null(m.suspects);
    TK_OK(ftc__quorum_member_set_suspects(&m, many, FTC__QUORUM_SUSPECTS_MAX));
    ftc__quorum_member_clear_suspects(&m);

    /* A C caller's buffer that does not hold n_suspects ids. */
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    char buf[] = "b\0c";
    m.suspects = buf;
    m.suspects_len = sizeof(buf);
    m.n_suspects = 3;
    TK_EXPECT(ftc__quorum_join(&s, &o, &m, QF_NOW), FTC_EINVAL);
    m.n_suspects = 2;
    m.suspects_len = 3; /* "b\0c" without c's NUL */
    TK_EXPECT(ftc__quorum_join(&s, &o, &m, QF_NOW), FTC_EINVAL);
    assert_int_equal(s.n_participants, 0);
    m.suspects_len = sizeof(buf);
    TK_OK(ftc__quorum_join(&s, &o, &m, QF_NOW));
    assert_int_equal(s.participants[0].member.n_suspects, 2);
    m.suspects = NULL;
    m.suspects_len = 0;
    m.n_suspects = 0;
    ftc__quorum_member_fini(&m);
    ftc__quorum_state_fini(&s);
    o.exclude_ms = -1;
    TK_EXPECT(ftc__quorum_opts_check(&o), FTC_EINVAL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_group_cut_off_is_left_out),
        cmocka_unit_test(partial_reports_leave_nobody_out_early),
        cmocka_unit_test(of_two_cut_apart_the_one_behind_goes),
        cmocka_unit_test(two_groups_cut_apart_stay_together),
        cmocka_unit_test(only_a_majority_goes_on),
        cmocka_unit_test(one_reporting_everyone_is_the_one_that_goes),
        cmocka_unit_test(reports_count_for_nothing_when_off),
        cmocka_unit_test(each_time_again_doubles_up_to_a_cap),
        cmocka_unit_test(kept_out_by_its_own_report_the_time_out_stays),
        cmocka_unit_test(an_excluded_replica_is_no_straggler),
        cmocka_unit_test(one_still_out_stays_out_while_the_others_trickle_in),
        cmocka_unit_test(malformed_reports_are_refused),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
