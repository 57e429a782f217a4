/* The job's committed high-water mark: members that are all below the
 * highest step a quorum had (or a leaving replica reported) form no quorum
 * until no replica that has the step was heard for rollback_after_ms. */
#include <stdio.h>
#include <string.h>

#include "quorum_kit.h"
#include "testkit.h"

#define WAIT_MS 60000
#define TEN_DAYS_MS ((int64_t)10 * 24 * 3600 * 1000)

static ftc__quorum_opts mark_opts(int64_t rollback_after_ms)
{
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    o.rollback_after_ms = rollback_after_ms;
    return o;
}

static ftc__quorum_tick_result tick(ftc__quorum_state *s,
                                    const ftc__quorum_opts *o, int64_t now)
{
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(s, o, now, 0, &t));
    return t;
}

/* a, b and c form a quorum at step. */
static void three_at(ftc__quorum_state *s, const ftc__quorum_opts *o,
                     int64_t step)
{
    TK_OK(ftc__quorum_state_init(s, 0));
    qf_join(s, o, "a", step, false, 0, QF_NOW);
    qf_join(s, o, "b", step, false, 0, QF_NOW);
    qf_join(s, o, "c", step, false, 0, QF_NOW);
    assert_true(tick(s, o, QF_NOW).met);
}

/* a, b and c train together to step 4; a and b go on to step 10 without
 * c (frozen: the quorum drops it), then go away (forgotten, as a goodbye
 * or a dropped connection does). */
static void ahead_then_gone(ftc__quorum_state *s, const ftc__quorum_opts *o)
{
    TK_OK(ftc__quorum_state_init(s, 0));
    qf_join(s, o, "a", 4, false, 0, QF_NOW - 10);
    qf_join(s, o, "b", 4, false, 0, QF_NOW - 10);
    qf_join(s, o, "c", 4, false, 0, QF_NOW - 10);
    assert_true(tick(s, o, QF_NOW - 10).met);
    assert_int_equal(s->n_dropped, 0);
    qf_join(s, o, "a", 10, false, 0, QF_NOW);
    qf_join(s, o, "b", 10, false, 0, QF_NOW);
    ftc__quorum_tick_result t = tick(s, o, QF_NOW);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, -1);
    assert_int_equal(s->prev.n, 2);
    assert_int_equal(s->mark.step, 10);
    assert_int_equal(s->mark.heard_ms, QF_NOW);
    assert_int_equal(s->n_dropped, 1);
    assert_string_equal(s->dropped[0].replica_id, "c");
    assert_true(ftc__quorum_was_member(s, "c"));
    TK_OK(ftc__quorum_forget(s, "a"));
    TK_OK(ftc__quorum_forget(s, "b"));
    assert_false(ftc__quorum_was_member(s, "a")); /* forgotten: left */
    assert_false(ftc__quorum_was_member(s, "new"));
}

static void laggards_wait_for_the_committed_step(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    ahead_then_gone(&s, &o);
    qf_join(&s, &o, "c", 4, false, 0, QF_NOW + 100);
    ftc__quorum_decision d;
    TK_OK(ftc__quorum_compute(QF_NOW + 100, &s, &o, &d));
    assert_false(d.met);
    assert_int_equal(d.verdict, FTC__QUORUM_BEHIND);
    assert_int_equal(d.members_step, 4);
    assert_int_equal(d.mark_step, 10);
    assert_non_null(strstr(d.reason, "reached step 4 but step 10 was "
                                     "committed"));
    /* c's heartbeat expires first; the wait ends WAIT_MS after a and b
     * were last heard. */
    assert_int_equal(d.next_ms, QF_NOW + 100 + 5000);
    ftc__quorum_decision_fini(&d);
    TK_OK(ftc__quorum_heartbeat(&s, &o, "c", QF_NOW + WAIT_MS - 1));
    TK_OK(ftc__quorum_compute(QF_NOW + WAIT_MS - 1, &s, &o, &d));
    assert_int_equal(d.next_ms, QF_NOW + WAIT_MS);
    ftc__quorum_decision_fini(&d);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + WAIT_MS - 1);
    assert_false(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_BEHIND);
    assert_false(s.hint.valid); /* the hint does not count steps */
    assert_false(ftc__quorum_cannot_form(&s, &o, QF_NOW + WAIT_MS - 1));
    assert_int_equal(s.prev.n, 2);
    /* Nobody at step 10 was heard for rollback_after_ms: the job goes on
     * from step 4, and says so. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "c", QF_NOW + WAIT_MS));
    t = tick(&s, &o, QF_NOW + WAIT_MS);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, 10);
    assert_false(t.newcomers);
    assert_int_equal(s.prev.n, 1);
    assert_string_equal(s.prev.members[0].replica_id, "c");
    assert_int_equal(s.mark.step, 4);
    assert_int_equal(s.n_dropped, 0); /* a and b left, c is back in */
    ftc__quorum_state_fini(&s);
}

/* Replicas the job never had (a new run of it, the restarted process of a
 * killed group) start from their own state at once; the tick reports the
 * step given up. */
static void newcomers_start_at_once(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(INT64_MAX);
    ftc__quorum_state s;
    ahead_then_gone(&s, &o);
    int64_t now = QF_NOW + 6000; /* c's heartbeat expired */
    qf_join(&s, &o, "rerun", 0, false, 0, now);
    ftc__quorum_tick_result t = tick(&s, &o, now);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, 10);
    assert_true(t.newcomers);
    assert_int_equal(s.mark.step, 0);
    /* With c, back from an earlier quorum, they wait together. */
    qf_join(&s, &o, "rerun", 1, false, 0, now + 1);
    qf_join(&s, &o, "c", 4, false, 0, now + 1);
    ftc__quorum_note_step(&s, 9, false, now + 1);
    t = tick(&s, &o, now + 1);
    assert_false(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_BEHIND);
    ftc__quorum_state_fini(&s);
}

/* The table of dropped replicas holds at most max_replicas, the oldest
 * going first; a goodbye (forget) takes a replica out. */
static void the_dropped_table_is_bounded(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    o.max_replicas = 2;
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    /* Each forms a quorum alone and vanishes without a goodbye (its
     * heartbeat dropped here): the next quorum drops it. */
    const char *ids[] = {"r1", "r2", "r3", "r4", "r5"};
    for (int i = 0; i < 5; i++) {
        qf_join(&s, &o, ids[i], i, false, 0, QF_NOW + i);
        assert_true(tick(&s, &o, QF_NOW + i).met);
        ftc__quorum_prune_heartbeats(&s, QF_NOW + i, 0);
    }
    assert_int_equal(s.n_dropped, 2);
    assert_false(ftc__quorum_was_member(&s, "r1"));
    assert_false(ftc__quorum_was_member(&s, "r2"));
    assert_true(ftc__quorum_was_member(&s, "r3"));
    assert_true(ftc__quorum_was_member(&s, "r4"));
    TK_OK(ftc__quorum_forget(&s, "r3"));
    assert_false(ftc__quorum_was_member(&s, "r3"));
    ftc__quorum_state_fini(&s);
}

static void a_member_at_the_step_lets_laggards_heal(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    ahead_then_gone(&s, &o);
    qf_join(&s, &o, "c", 4, false, 0, QF_NOW + 100);
    assert_false(tick(&s, &o, QF_NOW + 100).met);
    /* b comes back at the committed step: c heals from it. */
    qf_join(&s, &o, "b", 10, false, 0, QF_NOW + 200);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 200);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, -1);
    assert_int_equal(s.prev.n, 2);
    ftc__quorum_result r;
    TK_OK(ftc__quorum_results(&s.prev, "c", 0, false, &r));
    assert_true(r.heal);
    assert_int_equal(r.max_step, 10);
    ftc__quorum_result_fini(&r);
    /* Above the mark is never behind. */
    qf_join(&s, &o, "b", 11, false, 0, QF_NOW + 300);
    qf_join(&s, &o, "c", 11, false, 0, QF_NOW + 300);
    assert_true(tick(&s, &o, QF_NOW + 300).met);
    assert_int_equal(s.mark.step, 11);
    ftc__quorum_state_fini(&s);
}

/* The member of the last quorum that has the step still heartbeats (a
 * partition between the groups, not from the lighthouse): its state is
 * alive, so the wait starts again from its last heartbeat. */
static void a_live_holder_keeps_the_mark(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 10, false, 0, QF_NOW);
    qf_join(&s, &o, "c", 4, false, 0, QF_NOW);
    qf_join(&s, &o, "d", 4, false, 0, QF_NOW);
    assert_true(tick(&s, &o, QF_NOW).met);
    /* c and d did not heal (the round failed) and join without a, which
     * still heartbeats. */
    int64_t later = QF_NOW + WAIT_MS + 5000;
    TK_OK(ftc__quorum_heartbeat(&s, &o, "a", later - 1000));
    qf_join(&s, &o, "c", 4, false, 0, later);
    qf_join(&s, &o, "d", 4, false, 0, later);
    ftc__quorum_decision d;
    TK_OK(ftc__quorum_compute(later, &s, &o, &d));
    assert_int_equal(d.verdict, FTC__QUORUM_BEHIND);
    ftc__quorum_decision_fini(&d);
    /* Just before WAIT_MS after a's last heartbeat: still waiting. */
    int64_t end = later - 1000 + WAIT_MS;
    TK_OK(ftc__quorum_heartbeat(&s, &o, "c", end - 1));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "d", end - 1));
    TK_OK(ftc__quorum_compute(end - 1, &s, &o, &d));
    assert_int_equal(d.verdict, FTC__QUORUM_BEHIND);
    assert_int_equal(d.next_ms, end);
    ftc__quorum_decision_fini(&d);
    ftc__quorum_tick_result t = tick(&s, &o, end);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, 10);
    ftc__quorum_state_fini(&s);
}

/* A replica that leaves reports the steps it committed: a laggard that
 * shared the last quorum's step did not commit the step after it. */
static void a_goodbye_raises_the_mark(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    three_at(&s, &o, 99);
    ftc__quorum_note_step(&s, 100, false, QF_NOW + 10);
    ftc__quorum_note_step(&s, -1, true, QF_NOW + 20); /* not known: no change */
    ftc__quorum_note_step(&s, 50, true, QF_NOW + 30); /* lower: no change */
    assert_int_equal(s.mark.step, 100);
    assert_int_equal(s.mark.heard_ms, QF_NOW + 10);
    TK_OK(ftc__quorum_forget(&s, "a"));
    TK_OK(ftc__quorum_forget(&s, "b"));
    qf_join(&s, &o, "c", 99, false, 0, QF_NOW + 40);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 40);
    assert_false(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_BEHIND);
    /* The wait counts from the goodbye. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "c", QF_NOW + 9 + WAIT_MS));
    assert_false(tick(&s, &o, QF_NOW + 9 + WAIT_MS).met);
    assert_true(tick(&s, &o, QF_NOW + 10 + WAIT_MS).met);
    ftc__quorum_state_fini(&s);
}

/* A member granted a commit holds the step after it: the others, whose
 * commit of that step failed, wait for it while it heartbeats and heal
 * from it when it joins; a commit of a quorum that is over, of a replica
 * not in it or gone from it, is refused and changes nothing. */
static void a_granted_commit_raises_the_mark(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    three_at(&s, &o, 7);
    int64_t q = s.prev.quorum_id;
    assert_int_equal(s.mark.step, 7);

    assert_int_equal(ftc__quorum_commit(&s, "a", q + 1, 8, QF_NOW + 1),
                     FTC_ESTALE);
    assert_non_null(strstr(ftc_last_error(), "is over"));
    assert_int_equal(ftc__quorum_commit(&s, "x", q, 8, QF_NOW + 1), FTC_ESTALE);
    assert_non_null(strstr(ftc_last_error(), "x is not a member"));
    assert_int_equal(ftc__quorum_commit(&s, "a", q, 0, QF_NOW + 1), FTC_EINVAL);
    TK_OK(ftc__quorum_forget(&s, "c"));
    assert_int_equal(ftc__quorum_commit(&s, "c", q, 8, QF_NOW + 1), FTC_ESTALE);
    assert_int_equal(s.mark.step, 7); /* nothing granted so far */

    TK_OK(ftc__quorum_commit(&s, "a", q, 8, QF_NOW + 2));
    TK_OK(ftc__quorum_commit(&s, "a", q, 8, QF_NOW + 3)); /* asked again */
    assert_int_equal(s.mark.step, 8);
    assert_int_equal(s.mark.heard_ms, QF_NOW + 3);
    long a = ftc__quorum_find(&s.prev, "a");
    assert_int_equal(s.prev_granted[a], 8);
    assert_int_equal(s.prev.members[a].step, 7); /* what it joined with */

    /* b's commit failed: alone at 7, it waits for a, counted from a's
     * last heartbeat (cut off: expired, so b forms alone but for it). */
    int64_t later = QF_NOW + WAIT_MS;
    TK_OK(ftc__quorum_heartbeat(&s, &o, "a", later - 10000));
    qf_join(&s, &o, "b", 7, false, 0, later);
    ftc__quorum_decision d;
    TK_OK(ftc__quorum_compute(later, &s, &o, &d));
    assert_false(d.met);
    assert_int_equal(d.verdict, FTC__QUORUM_BEHIND);
    assert_int_equal(d.mark_step, 8);
    ftc__quorum_decision_fini(&d);
    /* a comes back and joins at the step it committed: b heals from it. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "a", later + 1));
    qf_join(&s, &o, "a", 8, false, 0, later + 1);
    ftc__quorum_tick_result t = tick(&s, &o, later + 1);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, -1);
    assert_int_equal(s.prev.n, 2);
    assert_int_equal(s.mark.step, 8);
    ftc__quorum_state_fini(&s);
}

/* A grant need not end in a commit (its answer lost, the group's vote
 * failed after it): b asks to join below its grant, with c, at step 7.
 * That is no rollback on purpose while a, granted too, has step 8 and is
 * heard: they wait for a (before the grants were kept apart from the
 * members' steps, they formed at once and committed 8 again). */
static void a_grant_without_its_commit_is_no_rollback(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    three_at(&s, &o, 7);
    int64_t q = s.prev.quorum_id;
    TK_OK(ftc__quorum_commit(&s, "a", q, 8, QF_NOW + 1));
    TK_OK(ftc__quorum_commit(&s, "b", q, 8, QF_NOW + 1));
    int64_t later = QF_NOW + WAIT_MS;
    TK_OK(ftc__quorum_heartbeat(&s, &o, "a", later - 10000)); /* cut off */
    qf_join(&s, &o, "b", 7, false, 0, later);
    qf_join(&s, &o, "c", 7, false, 0, later);
    ftc__quorum_tick_result t = tick(&s, &o, later);
    assert_false(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_BEHIND);
    /* Nobody that has step 8 heard for WAIT_MS: they roll back. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "b", later - 10000 + WAIT_MS));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "c", later - 10000 + WAIT_MS));
    t = tick(&s, &o, later - 10000 + WAIT_MS);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, 8);
    ftc__quorum_state_fini(&s);
}

/* 0 is torchft's rule (the core's default): laggards form at once, and the
 * tick still reports the step given up; INT64_MAX waits for good. */
static void the_two_ends_of_the_option(void **state)
{
    (void)state;
    ftc__quorum_opts def;
    ftc__quorum_opts_init(&def);
    assert_int_equal(def.rollback_after_ms, 0);
    ftc__quorum_opts o = mark_opts(0);
    ftc__quorum_state s;
    ahead_then_gone(&s, &o);
    qf_join(&s, &o, "c", 4, false, 0, QF_NOW + 1);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 1);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, 10);
    ftc__quorum_state_fini(&s);

    o = mark_opts(INT64_MAX);
    ahead_then_gone(&s, &o);
    qf_join(&s, &o, "c", 4, false, 0, QF_NOW + TEN_DAYS_MS);
    t = tick(&s, &o, QF_NOW + TEN_DAYS_MS);
    assert_false(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_BEHIND);
    ftc__quorum_state_fini(&s);

    o.rollback_after_ms = -1;
    TK_EXPECT(ftc__quorum_opts_check(&o), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "rollback_after_ms"));
}

/* A replica that leaves saying its run reached its end marks the job
 * finished there: a join below that step is refused at once (nothing is
 * left to train), one at the step is taken and its quorum clears it. */
static void a_finished_job_refuses_joins_below_it(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 5, false, 0, QF_NOW);
    assert_true(tick(&s, &o, QF_NOW).met);
    ftc__quorum_note_step(&s, 6, true, QF_NOW + 1);
    TK_OK(ftc__quorum_forget(&s, "a"));
    assert_true(s.mark.finished);
    ftc__quorum_note_step(&s, 6, false, QF_NOW + 2); /* a second leaver */
    assert_true(s.mark.finished);
    ftc__quorum_member late = qf_member("late", 0);
    TK_EXPECT(ftc__quorum_join(&s, &o, &late, QF_NOW + 3), FTC_EFINISHED);
    assert_non_null(strstr(ftc_last_error(), "the job finished at step 6"));
    assert_int_equal(s.n_participants, 0);
    assert_int_equal(s.n_heartbeats, 0); /* unchanged: no heartbeat */
    ftc__quorum_member resumed = qf_member("resumed", 6);
    TK_OK(ftc__quorum_join(&s, &o, &resumed, QF_NOW + 4));
    assert_true(tick(&s, &o, QF_NOW + 4).met);
    assert_false(s.mark.finished);
    TK_OK(ftc__quorum_join(&s, &o, &late, QF_NOW + 5));
    ftc__quorum_state_fini(&s);
}

/* Every group restored an older checkpoint (ftc_manager_set_step) and
 * asks below the step it had: a rollback on purpose, formed at once (their
 * own heartbeats must not hold them). */
static void a_rollback_on_purpose_is_not_held(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 10, false, 0, QF_NOW);
    qf_join(&s, &o, "b", 10, false, 0, QF_NOW);
    assert_true(tick(&s, &o, QF_NOW).met);
    qf_join(&s, &o, "a", 5, false, 0, QF_NOW + 1000);
    qf_join(&s, &o, "b", 5, false, 0, QF_NOW + 1000);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 1000);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, 10);
    assert_int_equal(s.mark.step, 5);
    ftc__quorum_state_fini(&s);
}

/* A newcomer already waiting when the last groups leave saying the job
 * finished does not form alone afterwards, however long it waits. */
static void a_waiting_newcomer_does_not_outrun_the_finish(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 9, false, 0, QF_NOW);
    qf_join(&s, &o, "b", 9, false, 0, QF_NOW);
    assert_true(tick(&s, &o, QF_NOW).met);
    qf_join(&s, &o, "c2", 0, false, 0, QF_NOW + 1);
    assert_false(tick(&s, &o, QF_NOW + 1).met); /* a and b live: need half */
    for (int i = 0; i < 2; i++) {
        const char *id = i == 0 ? "a" : "b";
        ftc__quorum_note_step(&s, 10, true, QF_NOW + 2);
        TK_OK(ftc__quorum_forget(&s, id));
    }
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 2);
    assert_false(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_BEHIND);
    assert_non_null(strstr(t.reason, "the job finished at step 10"));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "c2", QF_NOW + 2 * WAIT_MS));
    assert_false(tick(&s, &o, QF_NOW + 2 * WAIT_MS).met);
    assert_true(s.mark.finished);
    ftc__quorum_state_fini(&s);
}

/* Groups killed and restarted (their old ids forgotten: the connection
 * dropped) are not "dropped": they never come back, and must not push
 * the frozen group out of the bounded table. */
static void forgotten_members_do_not_crowd_out_the_dropped(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    o.max_replicas = 3;
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a0", 1, false, 0, QF_NOW);
    qf_join(&s, &o, "c", 1, false, 0, QF_NOW);
    assert_true(tick(&s, &o, QF_NOW).met);
    /* c freezes (its heartbeat expires); a0 goes on alone. */
    int64_t now = QF_NOW + 6000;
    qf_join(&s, &o, "a0", 2, false, 0, now);
    assert_true(tick(&s, &o, now).met);
    assert_true(ftc__quorum_was_member(&s, "c"));
    /* a is killed and restarted three times, each a new id. */
    char prev_id[8] = "a0", id[8];
    for (int k = 1; k <= 3; k++) {
        TK_OK(ftc__quorum_forget(&s, prev_id));
        snprintf(id, sizeof(id), "a%d", k);
        qf_join(&s, &o, id, 2, false, 0, now + k);
        assert_true(tick(&s, &o, now + k).met);
        snprintf(prev_id, sizeof(prev_id), "%s", id);
    }
    assert_int_equal(s.n_dropped, 1);
    assert_true(ftc__quorum_was_member(&s, "c"));
    assert_false(ftc__quorum_was_member(&s, "a0"));
    ftc__quorum_state_fini(&s);
}

/* A job an earlier lighthouse ran (its mark from etcd, after a failover):
 * replicas this lighthouse never saw may be back from that one's quorums,
 * so below the mark they wait as laggards do (here until
 * rollback_after_ms from the inheritance), a replica at the mark forms at
 * once and lets them heal, and a finished mark refuses joins below it. */
static void an_inherited_mark_holds_unknown_replicas(void **state)
{
    (void)state;
    ftc__quorum_opts o = mark_opts(WAIT_MS);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    assert_false(ftc__quorum_was_member(&s, "x"));
    ftc__quorum_inherit_mark(&s, 40, false, QF_NOW);
    assert_true(ftc__quorum_was_member(&s, "x"));
    assert_int_equal(s.mark.step, 40);
    qf_join(&s, &o, "x", 12, false, 0, QF_NOW + 1);
    ftc__quorum_tick_result t = tick(&s, &o, QF_NOW + 1);
    assert_false(t.met);
    assert_int_equal(t.verdict, FTC__QUORUM_BEHIND);
    /* A holder comes: both form, the laggard heals from it. */
    qf_join(&s, &o, "holder", 40, false, 0, QF_NOW + 2);
    t = tick(&s, &o, QF_NOW + 2);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, -1);
    assert_int_equal(s.prev.n, 2);
    ftc__quorum_state_fini(&s);

    /* Nobody at the step within rollback_after_ms: the job goes on from
     * the laggard's step, as a rollback (not newcomers: they may be
     * back). */
    TK_OK(ftc__quorum_state_init(&s, 0));
    ftc__quorum_inherit_mark(&s, 40, false, QF_NOW);
    qf_join(&s, &o, "x", 12, false, 0, QF_NOW + WAIT_MS);
    t = tick(&s, &o, QF_NOW + WAIT_MS);
    assert_true(t.met);
    assert_int_equal(t.rolled_back_from, 40);
    assert_false(t.newcomers);
    ftc__quorum_state_fini(&s);

    /* Finished, as stored: a join below is refused at once; a lower
     * inherited mark changes nothing. */
    TK_OK(ftc__quorum_state_init(&s, 0));
    ftc__quorum_inherit_mark(&s, 40, true, QF_NOW);
    ftc__quorum_inherit_mark(&s, 30, false, QF_NOW);
    assert_int_equal(s.mark.step, 40);
    assert_true(s.mark.finished);
    ftc__quorum_member late = qf_member("late", 0);
    TK_EXPECT(ftc__quorum_join(&s, &o, &late, QF_NOW + 1), FTC_EFINISHED);
    ftc__quorum_state_fini(&s);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(laggards_wait_for_the_committed_step),
        cmocka_unit_test(a_member_at_the_step_lets_laggards_heal),
        cmocka_unit_test(a_live_holder_keeps_the_mark),
        cmocka_unit_test(a_goodbye_raises_the_mark),
        cmocka_unit_test(a_granted_commit_raises_the_mark),
        cmocka_unit_test(a_grant_without_its_commit_is_no_rollback),
        cmocka_unit_test(the_two_ends_of_the_option),
        cmocka_unit_test(newcomers_start_at_once),
        cmocka_unit_test(the_dropped_table_is_bounded),
        cmocka_unit_test(a_finished_job_refuses_joins_below_it),
        cmocka_unit_test(a_rollback_on_purpose_is_not_held),
        cmocka_unit_test(a_waiting_newcomer_does_not_outrun_the_finish),
        cmocka_unit_test(forgotten_members_do_not_crowd_out_the_dropped),
        cmocka_unit_test(an_inherited_mark_holds_unknown_replicas),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
