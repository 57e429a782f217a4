/* The lighthouse decision and tick: every scenario of torchft's
 * src/lighthouse.rs tests (named after them), then the edge cases. */
#include <stdio.h>
#include <string.h>

#include "quorum_kit.h"
#include "testkit.h"

#define HOUR_MS ((int64_t)60 * 60 * 1000)

/* Computes the decision at now and checks its verdict, its members (ids
 * separated by commas, in order; "" when none) and that its reason contains
 * `reason`. Returns next_ms. */
static int64_t expect(int64_t now, const ftc__quorum_state *s,
                      const ftc__quorum_opts *o, ftc__quorum_verdict verdict,
                      const char *members, const char *reason)
{
    ftc__quorum_decision d;
    TK_OK(ftc__quorum_compute(now, s, o, &d));
    if (d.verdict != verdict || strstr(d.reason, reason) == NULL) {
        fail_msg("verdict %d \"%s\", expected %d with \"%s\"", d.verdict,
                 d.reason, verdict, reason);
    }
    assert_int_equal(d.met, verdict == FTC__QUORUM_FAST ||
                                verdict == FTC__QUORUM_VALID);
    char got[256] = "";
    size_t n = 0;
    for (size_t i = 0; i < d.n_members; i++) {
        n += (size_t)snprintf(
            got + n, sizeof(got) - n, "%s%s", i ? "," : "",
            s->participants[d.member_idx[i]].member.replica_id);
    }
    assert_string_equal(got, members);
    int64_t next = d.next_ms;
    ftc__quorum_decision_fini(&d);
    return next;
}

/* A join followed by the tick torchft runs on every request. */
static ftc__quorum_tick_result
join_tick(ftc__quorum_state *s, const ftc__quorum_opts *o, const char *id,
          int64_t step, bool shrink_only, int64_t commit_failures, int64_t now)
{
    qf_join(s, o, id, step, shrink_only, commit_failures, now);
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(s, o, now, 0, &t));
    return t;
}

static void test_quorum_join_timeout(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, HOUR_MS, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    int64_t now = QF_NOW;
    expect(now, &s, &o, FTC__QUORUM_NEED_MIN, "",
           "New quorum not ready, only have 0 participants, need "
           "min_replicas 1 [0/0 participants healthy]");
    qf_join(&s, &o, "a", 1, false, 0, now);
    qf_join(&s, &o, "b", 1, false, 0, now);
    /* All healthy workers participating. */
    expect(now, &s, &o, FTC__QUORUM_VALID, "a,b", "");
    /* A healthy worker that does not participate. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "c", now));
    expect(now, &s, &o, FTC__QUORUM_WAIT_STRAGGLER, "", "join timeout");
    /* The join timeout passes. */
    s.participants[qf_participant(&s, "a")].joined_ms = now - 10 * HOUR_MS;
    expect(now, &s, &o, FTC__QUORUM_VALID, "a,b", "");
    ftc__quorum_state_fini(&s);
}

static void test_quorum_heartbeats(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    int64_t now = QF_NOW;
    qf_join(&s, &o, "a", 1, false, 0, now);
    expect(now, &s, &o, FTC__QUORUM_VALID, "a",
           "[1/1 participants healthy][1 heartbeating]");
    /* Expired heartbeat. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "a", now - 10000));
    expect(now, &s, &o, FTC__QUORUM_NEED_MIN, "",
           "[0/1 participants healthy][0 heartbeating]");
    /* One healthy, one expired. */
    qf_join(&s, &o, "b", 1, false, 0, now);
    expect(now, &s, &o, FTC__QUORUM_VALID, "b", "");
    ftc__quorum_state_fini(&s);
}

static void test_quorum_fast_prev_quorum(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, HOUR_MS, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    int64_t now = QF_NOW;
    expect(now, &s, &o, FTC__QUORUM_NEED_MIN, "", "");
    qf_join(&s, &o, "a", 1, false, 0, now);
    /* Not proceeding since one worker is alive but not participating. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "b", now));
    expect(now, &s, &o, FTC__QUORUM_NEED_HALF, "", "need at least half");
    const char *prev[] = {"a"};
    qf_set_prev(&s, 1, prev, 1);
    expect(now, &s, &o, FTC__QUORUM_FAST, "a", "");
    /* Expanding the quorum with a fast quorum. */
    qf_join(&s, &o, "b", 1, false, 0, now);
    expect(now, &s, &o, FTC__QUORUM_FAST, "a,b", "");
    ftc__quorum_state_fini(&s);
}

static void test_quorum_shrink_only(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, HOUR_MS, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    const char *prev[] = {"a", "b"};
    qf_set_prev(&s, 1, prev, 2);
    qf_join(&s, &o, "a", 1, true, 0, QF_NOW);
    /* A participant that was not in the previous quorum. */
    qf_join(&s, &o, "c", 1, true, 0, QF_NOW);
    /* Not fast (b is missing); c is dropped by shrink_only. */
    expect(QF_NOW, &s, &o, FTC__QUORUM_VALID, "a", "[shrink_only=true]");
    ftc__quorum_state_fini(&s);
}

static void test_lighthouse_e2e(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 1, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "foo", QF_NOW));
    ftc__quorum_tick_result t = join_tick(&s, &o, "foo", 10, false, 0, QF_NOW);
    assert_true(t.met);
    assert_int_equal(s.prev.n, 1);
    assert_string_equal(s.prev.members[0].replica_id, "foo");
    assert_int_equal(s.prev.members[0].step, 10);
    assert_int_equal(s.prev.quorum_id, 1);
    ftc__quorum_state_fini(&s);
}

static void test_quorum_split_brain(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, HOUR_MS, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    int64_t now = QF_NOW;
    expect(now, &s, &o, FTC__QUORUM_NEED_MIN, "", "");
    qf_join(&s, &o, "a", 1, false, 0, now);
    expect(now, &s, &o, FTC__QUORUM_VALID, "a", "");
    /* Not proceeding since one worker is alive but not participating. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "b", now));
    expect(now, &s, &o, FTC__QUORUM_NEED_HALF, "",
           "New quorum not ready, only have 1 participants, need at least "
           "half of 2 healthy workers [1/1 participants healthy][2 "
           "heartbeating][shrink_only=false]");
    ftc__quorum_state_fini(&s);
}

static void test_quorum_changed(void **state)
{
    (void)state;
    ftc__quorum_member a = qf_member("1", 1);
    ftc__quorum_member b;
    TK_OK(ftc__quorum_member_set(&b, "1", "changed", "changed"));
    b.step = 1000;
    /* Same replica_id: unchanged. */
    assert_false(ftc__quorum_members_changed(&a, 1, &b, 1));
    ftc__quorum_member c = qf_member("2", 1);
    assert_true(ftc__quorum_members_changed(&a, 1, &c, 1));
    /* Also a different length, and order (lists are compared as given). */
    ftc__quorum_member ac[] = {a, c};
    ftc__quorum_member ca[] = {c, a};
    assert_true(ftc__quorum_members_changed(&a, 1, ac, 2));
    assert_true(ftc__quorum_members_changed(ac, 2, ca, 2));
    assert_false(ftc__quorum_members_changed(NULL, 0, NULL, 0));
}

static void test_lighthouse_join_during_shrink(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(2, 1000, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    int64_t now = QF_NOW;

    /* 1. First quorum. */
    ftc__quorum_tick_result t = join_tick(&s, &o, "replica0", 1, false, 0, now);
    assert_false(t.met);
    t = join_tick(&s, &o, "replica1", 1, false, 0, now);
    assert_true(t.met);
    assert_int_equal(s.prev.n, 2);
    assert_string_equal(s.prev.members[0].replica_id, "replica0");
    assert_string_equal(s.prev.members[1].replica_id, "replica1");
    assert_int_equal(s.prev.members[1].step, 1);
    assert_string_equal(s.prev.members[1].address, "addr_replica1");

    /* 2. A quorum without the joiner, since replica0 asks shrink_only. */
    now += 10;
    t = join_tick(&s, &o, "joiner", 1, false, 0, now);
    assert_false(t.met);
    t = join_tick(&s, &o, "replica0", 2, true, 0, now);
    assert_false(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_WAIT_STRAGGLER);
    t = join_tick(&s, &o, "replica1", 2, false, 0, now);
    assert_true(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_FAST);
    assert_int_equal(s.prev.n, 2);
    assert_int_equal(ftc__quorum_find(&s.prev, "joiner"), -1);
    assert_string_equal(s.prev.members[0].replica_id, "replica0");
    assert_string_equal(s.prev.members[1].replica_id, "replica1");
    assert_int_equal(s.prev.members[1].step, 2);
    /* The joiner waits on, as torchft's waiter re-inserts itself. */
    assert_int_equal(s.n_participants, 1);
    assert_string_equal(s.participants[0].member.replica_id, "joiner");
    assert_int_equal(s.participants[0].joined_ms, now);

    /* 3. A quorum with the joiner. */
    now += 10;
    t = join_tick(&s, &o, "replica0", 3, false, 0, now);
    assert_false(t.met);
    t = join_tick(&s, &o, "replica1", 3, false, 0, now);
    assert_true(t.met);
    assert_int_equal(s.prev.n, 3);
    assert_true(ftc__quorum_find(&s.prev, "joiner") >= 0);
    assert_string_equal(s.prev.members[2].replica_id, "replica1");
    assert_int_equal(s.prev.members[2].step, 3);
    assert_int_equal(s.n_participants, 0);
    ftc__quorum_state_fini(&s);
}

static void test_lighthouse_commit_failures(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(2, 1000, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    int64_t now = QF_NOW;

    /* The first two quorums are stable. */
    for (int i = 0; i < 2; i++) {
        now += 10;
        ftc__quorum_tick_result t =
            join_tick(&s, &o, "replica0", 10, false, 0, now);
        assert_false(t.met);
        t = join_tick(&s, &o, "replica1", 10, false, 0, now);
        assert_true(t.met);
        assert_int_equal(t.change,
                         i == 0 ? FTC__QUORUM_ID_FIRST : FTC__QUORUM_ID_KEPT);
        assert_int_equal(s.prev.quorum_id, 1);
        assert_int_equal(s.prev.n, 2);
        assert_int_equal(s.prev.members[0].commit_failures, 0);
        assert_int_equal(s.prev.members[1].commit_failures, 0);
    }
    /* A commit failure bumps the quorum id. */
    now += 10;
    join_tick(&s, &o, "replica0", 10, false, 0, now);
    ftc__quorum_tick_result t =
        join_tick(&s, &o, "replica1", 10, false, 2, now);
    assert_true(t.met);
    assert_int_equal(t.change, FTC__QUORUM_ID_COMMIT_FAILURES);
    assert_int_equal(s.prev.quorum_id, 2);
    assert_int_equal(s.prev.members[0].commit_failures, 0);
    assert_int_equal(s.prev.members[1].commit_failures, 2);
    ftc__quorum_state_fini(&s);
}

/* ---- edge cases beyond torchft's tests ---- */

static void empty_state_never_forms(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(0, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    /* Even min_replicas 0 needs more than half of 0 live replicas. */
    assert_int_equal(expect(QF_NOW, &s, &o, FTC__QUORUM_NEED_HALF, "", ""),
                     INT64_MAX);
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW, 0, &t));
    assert_false(t.met);
    assert_false(s.has_prev);
    assert_int_equal(ftc__quorum_state_id(&s), 0);
    ftc__quorum_state_fini(&s);
}

static void single_replica_forms_and_stays_fast(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, HOUR_MS, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    for (int64_t step = 0; step < 5; step++) {
        int64_t now = QF_NOW + step * 100;
        ftc__quorum_tick_result t =
            join_tick(&s, &o, "only", step, false, 0, now);
        assert_true(t.met);
        assert_int_equal(t.verdict,
                         step == 0 ? FTC__QUORUM_VALID : FTC__QUORUM_FAST);
        assert_int_equal(s.prev.quorum_id, 1);
        assert_int_equal(s.prev.members[0].step, step);
        assert_int_equal(s.prev.created_wall_ms, 0);
        assert_int_equal(t.next_ms, now);
    }
    ftc__quorum_state_fini(&s);
}

static void all_unhealthy_forms_nothing(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    const char *ids[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        qf_join(&s, &o, ids[i], 1, false, 0, QF_NOW);
    }
    qf_set_prev(&s, 1, ids, 3);
    /* Exactly the timeout later every heartbeat is expired. */
    assert_int_equal(expect(QF_NOW + 5000, &s, &o, FTC__QUORUM_NEED_MIN, "",
                            "[0/3 participants healthy][0 heartbeating]"),
                     INT64_MAX);
    /* One millisecond earlier they are all healthy: a fast quorum that can
     * change when the heartbeats expire. */
    assert_int_equal(
        expect(QF_NOW + 4999, &s, &o, FTC__QUORUM_FAST, "a,b,c", ""),
        QF_NOW + 5000);
    ftc__quorum_state_fini(&s);
}

static void join_timeout_boundary_is_exclusive(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 1000, 60000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 1, false, 0, QF_NOW);
    qf_join(&s, &o, "b", 1, false, 0, QF_NOW + 300);
    TK_OK(ftc__quorum_heartbeat(&s, &o, "straggler", QF_NOW));
    /* The clock starts at the earliest join. */
    assert_int_equal(expect(QF_NOW + 999, &s, &o, FTC__QUORUM_WAIT_STRAGGLER,
                            "",
                            "Valid quorum with 2 participants, waiting for 1 "
                            "healthy but not participating stragglers"),
                     QF_NOW + 1000);
    assert_int_equal(
        expect(QF_NOW + 1000, &s, &o, FTC__QUORUM_VALID, "a,b", ""),
        QF_NOW + 60000);
    ftc__quorum_state_fini(&s);
}

static void heartbeat_boundary_is_exclusive(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 100);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 1, false, 0, QF_NOW);
    expect(QF_NOW + 99, &s, &o, FTC__QUORUM_VALID, "a", "");
    expect(QF_NOW + 100, &s, &o, FTC__QUORUM_NEED_MIN, "", "");
    /* A heartbeat stamped after now counts as just now. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "a", QF_NOW + 500));
    assert_int_equal(expect(QF_NOW, &s, &o, FTC__QUORUM_VALID, "a", ""),
                     QF_NOW + 600);
    /* A zero timeout makes nobody healthy. */
    o.heartbeat_timeout_ms = 0;
    expect(QF_NOW, &s, &o, FTC__QUORUM_NEED_MIN, "", "[0 heartbeating]");
    ftc__quorum_state_fini(&s);
}

static void min_replicas_counts_healthy_participants(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(3, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 1, false, 0, QF_NOW);
    qf_join(&s, &o, "b", 1, false, 0, QF_NOW);
    qf_join(&s, &o, "dead", 1, false, 0, QF_NOW - 6000);
    expect(QF_NOW, &s, &o, FTC__QUORUM_NEED_MIN, "",
           "New quorum not ready, only have 2 participants, need "
           "min_replicas 3 [2/3 participants healthy][2 heartbeating]"
           "[shrink_only=false]");
    qf_join(&s, &o, "c", 1, false, 0, QF_NOW);
    expect(QF_NOW, &s, &o, FTC__QUORUM_VALID, "a,b,c",
           "Valid quorum found [3/4 participants healthy][3 heartbeating]"
           "[shrink_only=false]");
    ftc__quorum_state_fini(&s);
}

static void split_brain_needs_strict_majority(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    const char *ids[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++) {
        TK_OK(ftc__quorum_heartbeat(&s, &o, ids[i], QF_NOW));
    }
    /* 2 of 5 live is not more than half, 3 of 5 is. */
    qf_join(&s, &o, "a", 1, false, 0, QF_NOW);
    qf_join(&s, &o, "b", 1, false, 0, QF_NOW);
    expect(QF_NOW, &s, &o, FTC__QUORUM_NEED_HALF, "", "");
    qf_join(&s, &o, "c", 1, false, 0, QF_NOW);
    expect(QF_NOW, &s, &o, FTC__QUORUM_VALID, "a,b,c", "");
    ftc__quorum_state_fini(&s);
}

static void fast_quorum_skips_the_majority_guard(void **state)
{
    (void)state;
    /* Two live non-members would block a new quorum (1 of 3 is no
     * majority), but the previous members all being back forms it at
     * once. */
    ftc__quorum_opts o = qf_opts(1, HOUR_MS, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    const char *prev[] = {"a"};
    qf_set_prev(&s, 7, prev, 1);
    qf_join(&s, &o, "a", 3, false, 0, QF_NOW);
    TK_OK(ftc__quorum_heartbeat(&s, &o, "x", QF_NOW));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "y", QF_NOW));
    expect(QF_NOW, &s, &o, FTC__QUORUM_FAST, "a",
           "Fast quorum found! [1/1 participants healthy][3 heartbeating]"
           "[shrink_only=false]");
    /* min_replicas raised at run time (PUT /v1/jobs/{job}) holds even when
     * the quorum would be fast: torchft's cannot change, so it never
     * checks. */
    o.min_replicas = 2;
    expect(QF_NOW, &s, &o, FTC__QUORUM_NEED_MIN, "",
           "only have 1 participants, need min_replicas 2");
    qf_join(&s, &o, "x", 0, false, 0, QF_NOW);
    expect(QF_NOW, &s, &o, FTC__QUORUM_FAST, "a,x", "");
    /* A previous member that is only heartbeating breaks the fast path. */
    const char *prev2[] = {"a", "y"};
    qf_set_prev(&s, 7, prev2, 2);
    expect(QF_NOW, &s, &o, FTC__QUORUM_WAIT_STRAGGLER, "", "waiting for 1");
    ftc__quorum_state_fini(&s);
}

static void shrink_only_new_member_waits_then_joins(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    const char *prev[] = {"a", "b"};
    qf_set_prev(&s, 1, prev, 2);
    qf_join(&s, &o, "new", 0, false, 0, QF_NOW);
    qf_join(&s, &o, "a", 5, false, 0, QF_NOW);
    qf_join(&s, &o, "b", 5, true, 0, QF_NOW);
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW + 1, 0, &t));
    assert_true(t.met);
    assert_int_equal(t.change, FTC__QUORUM_ID_KEPT);
    assert_int_equal(s.prev.quorum_id, 1);
    assert_int_equal(s.prev.n, 2);
    assert_int_equal(s.n_participants, 1);
    assert_int_equal(s.participants[0].joined_ms, QF_NOW + 1);
    /* The next round without shrink_only admits it: a new id. */
    qf_join(&s, &o, "a", 6, false, 0, QF_NOW + 2);
    qf_join(&s, &o, "b", 6, false, 0, QF_NOW + 2);
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW + 2, 0, &t));
    assert_true(t.met);
    assert_int_equal(t.change, FTC__QUORUM_ID_MEMBERSHIP);
    assert_int_equal(s.prev.quorum_id, 2);
    assert_int_equal(s.prev.n, 3);
    assert_string_equal(s.prev.members[2].replica_id, "new");
    ftc__quorum_state_fini(&s);
}

/* torchft, in a shrink_only round that is not fast, counts participants it
 * then filters out; when nobody of the previous quorum is left it would
 * return an empty quorum. ftc waits instead. */
static void shrink_only_never_forms_an_empty_quorum(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    const char *prev[] = {"gone"};
    qf_set_prev(&s, 1, prev, 1);
    qf_join(&s, &o, "d", 0, true, 0, QF_NOW);
    qf_join(&s, &o, "e", 0, false, 0, QF_NOW);
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW, 0, &t));
    assert_false(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_NONE_LEFT);
    assert_string_equal(t.reason,
                        "New quorum not ready, shrink_only leaves no member "
                        "of the previous quorum [2/2 participants "
                        "healthy][2 heartbeating][shrink_only=true]");
    assert_int_equal(s.prev.quorum_id, 1);
    assert_int_equal(s.n_participants, 2);
    ftc__quorum_state_fini(&s);
}

static void strict_shrink_only_counts_what_it_returns(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(3, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    const char *prev[] = {"a", "b", "c"};
    qf_set_prev(&s, 1, prev, 3);
    /* c died; a asks shrink_only; d and e are new. */
    qf_join(&s, &o, "a", 5, true, 0, QF_NOW);
    qf_join(&s, &o, "b", 5, false, 0, QF_NOW);
    qf_join(&s, &o, "d", 0, false, 0, QF_NOW);
    qf_join(&s, &o, "e", 0, false, 0, QF_NOW);
    /* torchft: 4 healthy participants pass min_replicas 3, 2 are returned. */
    expect(QF_NOW, &s, &o, FTC__QUORUM_VALID, "a,b", "");
    o.strict_shrink_only = true;
    expect(QF_NOW, &s, &o, FTC__QUORUM_NEED_MIN, "",
           "only have 2 participants, need min_replicas 3");
    ftc__quorum_state_fini(&s);
}

static void quorum_id_rule(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    ftc__quorum_tick_result t = join_tick(&s, &o, "a", 0, false, 0, QF_NOW);
    assert_int_equal(t.change, FTC__QUORUM_ID_FIRST);
    assert_int_equal(s.prev.quorum_id, 1);
    /* New address and step, same id: kept (only replica_ids count). */
    ftc__quorum_member m;
    TK_OK(ftc__quorum_member_set(&m, "a", "elsewhere", "other_store"));
    m.step = 9;
    TK_OK(ftc__quorum_join(&s, &o, &m, QF_NOW + 1));
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW + 1, 0, &t));
    assert_int_equal(t.change, FTC__QUORUM_ID_KEPT);
    assert_int_equal(s.prev.quorum_id, 1);
    assert_string_equal(s.prev.members[0].address, "elsewhere");
    /* A member added: a new id; then one gone: another. */
    qf_join(&s, &o, "b", 0, false, 0, QF_NOW + 2);
    t = join_tick(&s, &o, "a", 10, false, 0, QF_NOW + 2);
    assert_int_equal(t.change, FTC__QUORUM_ID_MEMBERSHIP);
    assert_int_equal(s.prev.quorum_id, 2);
    /* b's heartbeat expires; a alone, after the fast path fails. */
    t = join_tick(&s, &o, "a", 11, false, 0, QF_NOW + 6000);
    assert_true(t.met);
    assert_int_equal(t.change, FTC__QUORUM_ID_MEMBERSHIP);
    assert_int_equal(s.prev.quorum_id, 3);
    /* A commit failure bumps even with the same members, every time. */
    t = join_tick(&s, &o, "a", 11, false, 1, QF_NOW + 6001);
    assert_int_equal(t.change, FTC__QUORUM_ID_COMMIT_FAILURES);
    assert_int_equal(s.prev.quorum_id, 4);
    t = join_tick(&s, &o, "a", 11, false, 2, QF_NOW + 6002);
    assert_int_equal(s.prev.quorum_id, 5);
    t = join_tick(&s, &o, "a", 12, false, 0, QF_NOW + 6003);
    assert_int_equal(t.change, FTC__QUORUM_ID_KEPT);
    assert_int_equal(s.prev.quorum_id, 5);
    ftc__quorum_state_fini(&s);
}

static void restarted_lighthouse_never_reuses_ids(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    uint32_t e1 = ftc__quorum_epoch_from_random(0x0123456789abcdefULL);
    uint32_t e2 = ftc__quorum_epoch_from_random(0xfedcba9876543210ULL);
    assert_true(e1 >= 1 && e1 <= FTC__QUORUM_EPOCH_MAX);
    assert_true(e2 >= 1 && e2 <= FTC__QUORUM_EPOCH_MAX);
    assert_int_not_equal(e1, e2);
    assert_int_equal(ftc__quorum_epoch_from_random(0), 1);
    assert_int_equal(ftc__quorum_epoch_from_random(UINT64_MAX),
                     (uint32_t)(UINT64_MAX % FTC__QUORUM_EPOCH_MAX) + 1);

    /* Run 1 forms three quorums; the lighthouse "restarts" with a new
     * epoch and forms quorums again from counter 1. */
    int64_t ids[6];
    char prefixes[6][128];
    for (int run = 0; run < 2; run++) {
        ftc__quorum_state s;
        TK_OK(ftc__quorum_state_init(&s, run == 0 ? e1 : e2));
        /* A commit failure bumps the id with the same member. */
        for (int i = 0; i < 3; i++) {
            join_tick(&s, &o, "a", 0, false, i, QF_NOW + i);
            int64_t q = s.prev.quorum_id;
            assert_true(q > 0);
            assert_int_equal(ftc__quorum_id_epoch(q), run == 0 ? e1 : e2);
            assert_int_equal(ftc__quorum_id_counter(q), (uint32_t)(i + 1));
            ids[run * 3 + i] = q;
            TK_OK(ftc__quorum_store_prefix(prefixes[run * 3 + i], 128, "host:1",
                                           q, 0));
        }
        ftc__quorum_state_fini(&s);
    }
    for (int i = 0; i < 6; i++) {
        for (int j = i + 1; j < 6; j++) {
            assert_true(ids[i] != ids[j]);
            assert_string_not_equal(prefixes[i], prefixes[j]);
        }
    }
    /* Epoch 0 is torchft's numbering. */
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    join_tick(&s, &o, "a", 0, false, 0, QF_NOW);
    assert_int_equal(s.prev.quorum_id, 1);
    ftc__quorum_state_fini(&s);
    TK_EXPECT(ftc__quorum_state_init(&s, FTC__QUORUM_EPOCH_MAX + 1),
              FTC_EINVAL);
}

static void counter_wrap_moves_to_the_next_epoch(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, FTC__QUORUM_EPOCH_MAX));
    join_tick(&s, &o, "a", 0, false, 0, QF_NOW);
    s.counter = UINT32_MAX;
    join_tick(&s, &o, "a", 0, false, 1, QF_NOW);
    assert_int_equal(ftc__quorum_id_epoch(s.prev.quorum_id), 1);
    assert_int_equal(ftc__quorum_id_counter(s.prev.quorum_id), 1);
    assert_true(s.prev.quorum_id > 0);
    ftc__quorum_state_fini(&s);
}

static void store_prefix_is_torchfts_layout(void **state)
{
    (void)state;
    char buf[64];
    TK_OK(ftc__quorum_store_prefix(buf, sizeof(buf), "host:29500", 3, 1));
    assert_string_equal(buf, "host:29500/torchft/3/1");
    int64_t id = ((int64_t)0x7fffffff << 32) | 5;
    TK_OK(ftc__quorum_store_prefix(buf, sizeof(buf), "[::1]:7", id, 12));
    assert_string_equal(buf, "[::1]:7/torchft/9223372032559808517/12");
    char small[10];
    TK_EXPECT(
        ftc__quorum_store_prefix(small, sizeof(small), "host:29500", 3, 1),
        FTC_EMSGSIZE);
    assert_string_equal(small, "");
    TK_EXPECT(ftc__quorum_store_prefix(buf, sizeof(buf), "h:1", 3, -1),
              FTC_EINVAL);
    TK_EXPECT(ftc__quorum_store_prefix(buf, sizeof(buf), NULL, 3, 0),
              FTC_EINVAL);
    TK_EXPECT(ftc__quorum_store_prefix(NULL, 0, "h:1", 3, 0), FTC_EINVAL);
}

static void left_out_participants_are_requeued(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    /* "late" joined long ago but its heartbeat expired: it stays a
     * participant (its request still waits), with a fresh join time. */
    qf_join(&s, &o, "late", 0, false, 0, QF_NOW - 10000);
    qf_join(&s, &o, "a", 0, false, 0, QF_NOW);
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW, 0, &t));
    assert_true(t.met);
    assert_int_equal(s.prev.n, 1);
    assert_int_equal(s.n_participants, 1);
    assert_string_equal(s.participants[0].member.replica_id, "late");
    assert_int_equal(s.participants[0].joined_ms, QF_NOW);
    /* The shell withdraws it when its request ends. */
    TK_OK(ftc__quorum_leave(&s, "late"));
    assert_int_equal(s.n_participants, 0);
    TK_EXPECT(ftc__quorum_leave(&s, "late"), FTC_ENOENT);
    TK_EXPECT(ftc__quorum_leave(&s, NULL), FTC_ENOENT);
    assert_int_equal(s.n_heartbeats, 2);
    ftc__quorum_state_fini(&s);
}

static void next_ms_tracks_the_first_possible_change(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(2, 2000, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "x", QF_NOW - 4000));
    qf_join(&s, &o, "a", 0, false, 0, QF_NOW);
    /* Too few until x's heartbeat expires at NOW + 1000. */
    assert_int_equal(expect(QF_NOW, &s, &o, FTC__QUORUM_NEED_MIN, "", ""),
                     QF_NOW + 1000);
    qf_join(&s, &o, "b", 0, false, 0, QF_NOW);
    TK_OK(ftc__quorum_heartbeat(&s, &o, "x", QF_NOW));
    /* Waiting for x: the join timeout (NOW + 2000) comes first. */
    assert_int_equal(expect(QF_NOW, &s, &o, FTC__QUORUM_WAIT_STRAGGLER, "", ""),
                     QF_NOW + 2000);
    ftc__quorum_state_fini(&s);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quorum_join_timeout),
        cmocka_unit_test(test_quorum_heartbeats),
        cmocka_unit_test(test_quorum_fast_prev_quorum),
        cmocka_unit_test(test_quorum_shrink_only),
        cmocka_unit_test(test_lighthouse_e2e),
        cmocka_unit_test(test_quorum_split_brain),
        cmocka_unit_test(test_quorum_changed),
        cmocka_unit_test(test_lighthouse_join_during_shrink),
        cmocka_unit_test(test_lighthouse_commit_failures),
        cmocka_unit_test(empty_state_never_forms),
        cmocka_unit_test(single_replica_forms_and_stays_fast),
        cmocka_unit_test(all_unhealthy_forms_nothing),
        cmocka_unit_test(join_timeout_boundary_is_exclusive),
        cmocka_unit_test(heartbeat_boundary_is_exclusive),
        cmocka_unit_test(min_replicas_counts_healthy_participants),
        cmocka_unit_test(split_brain_needs_strict_majority),
        cmocka_unit_test(fast_quorum_skips_the_majority_guard),
        cmocka_unit_test(shrink_only_new_member_waits_then_joins),
        cmocka_unit_test(shrink_only_never_forms_an_empty_quorum),
        cmocka_unit_test(strict_shrink_only_counts_what_it_returns),
        cmocka_unit_test(quorum_id_rule),
        cmocka_unit_test(restarted_lighthouse_never_reuses_ids),
        cmocka_unit_test(counter_wrap_moves_to_the_next_epoch),
        cmocka_unit_test(store_prefix_is_torchfts_layout),
        cmocka_unit_test(left_out_participants_are_requeued),
        cmocka_unit_test(next_ms_tracks_the_first_possible_change),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
