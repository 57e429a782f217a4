/* The operator's history of a job (ft/lighthouse/lighthouse_history.h):
 * samples throttled to one per period (and at membership changes) in a
 * bounded ring, the step rate over the last window, failures with the
 * survivors' and the victim's recovery, and the headline's words. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft/lighthouse/lighthouse_history.h"
#include "testkit.h"

/* A quorum of n members "replica_<i>:<incarnation tag>" at the steps given. */
static void quorum_of(ftc__quorum *q, size_t n, const char *const *ids,
                      const int64_t *steps)
{
    ftc__quorum_init(q);
    q->members = calloc(n, sizeof(*q->members));
    q->n = n;
    for (size_t i = 0; i < n; i++) {
        TK_OK(ftc__quorum_member_set(&q->members[i], ids[i], "a", "s"));
        q->members[i].step = steps[i];
    }
}

static void formed(ftc__lh_history *h, size_t n, const char *const *ids,
                   const int64_t *steps, int64_t wall)
{
    ftc__quorum q;
    quorum_of(&q, n, ids, steps);
    ftc__lh_history_formed(h, &q, wall);
    ftc__quorum_fini(&q);
}

static void samples_rate_and_ring(void **state)
{
    (void)state;
    ftc__lh_history *h = calloc(1, sizeof(*h));
    char line[512];
    ftc__lh_history_headline(h, 0, line, sizeof(line));
    assert_string_equal(line, "waiting for the first quorum");
    assert_true(ftc__lh_history_rate(h, 0) == 0);
    static const char *const ids[] = {"replica_0:aa", "replica_1:bb"};
    /* a step every 10 ms for 20 s: one sample a second */
    for (int64_t k = 0; k <= 2000; k++) {
        int64_t steps[] = {k, k};
        formed(h, 2, ids, steps, 1000000 + 10 * k);
    }
    assert_int_equal(h->n_samples, 21);
    assert_int_equal(h->last.step, 2000);
    double r = ftc__lh_history_rate(h, 1000000 + 20000);
    assert_true(r > 99.9 && r < 100.1);
    ftc__lh_history_headline(h, 1000000 + 20000, line, sizeof(line));
    assert_string_equal(line, "training: 2 replica groups, step 2000, "
                              "100.0 steps/s; no failure");
    /* nothing for a minute: no rate, and the headline says since when */
    assert_true(ftc__lh_history_rate(h, 1000000 + 80000) == 0);
    ftc__lh_history_headline(h, 1000000 + 80000, line, sizeof(line));
    assert_string_equal(line, "training: 2 replica groups, step 2000, no "
                              "step for 60 s; no failure");
    /* a membership change is sampled at once; the ring keeps the last */
    static const char *const one[] = {"replica_0:aa"};
    int64_t s1[] = {2001};
    formed(h, 1, one, s1, 1000000 + 80001);
    assert_int_equal(h->n_samples, 22);
    for (int64_t k = 0; k < 2 * FTC__LH_SAMPLES; k++) {
        int64_t s[] = {3000 + k};
        formed(h, 1, one, s, 2000000 + FTC__LH_SAMPLE_MS * k);
    }
    assert_int_equal(h->n_samples, 22 + 2 * FTC__LH_SAMPLES);
    const ftc__lh_sample *oldest =
        &h->samples[(h->n_samples - FTC__LH_SAMPLES) % FTC__LH_SAMPLES];
    assert_int_equal(oldest->step, 3000 + FTC__LH_SAMPLES);
    free(h);
}

/* replica_2 is killed at step 50: the others retry step 50 without it and
 * commit it 25 ms after the loss (a step a quorum already had when the
 * loss came is no recovery); its new incarnation heals and is at the
 * quorum's step 160 ms after. A stopped replica comes back under its old
 * id. */
static void failures_and_recovery(void **state)
{
    (void)state;
    ftc__lh_history *h = calloc(1, sizeof(*h));
    static const char *const all[] = {"replica_0:aa", "replica_1:bb",
                                      "replica_2:cc"};
    static const char *const two[] = {"replica_0:aa", "replica_1:bb"};
    static const char *const back[] = {"replica_0:aa", "replica_1:bb",
                                       "replica_2:dd"};
    int64_t at50[] = {50, 50, 50};
    formed(h, 3, all, at50, 10000);
    ftc__lh_history_lost(h, "replica_2:cc", "disconnect", 10100);
    const ftc__lh_failure *f = ftc__lh_history_last_failure(h);
    assert_non_null(f);
    assert_int_equal(f->step, -1); /* until a quorum forms */
    char line[512];
    ftc__lh_history_headline(h, 10110, line, sizeof(line));
    assert_non_null(strstr(line, "; last failure: replica_2 lost "
                                 "(disconnect) 10 ms ago, the others have "
                                 "not gone on yet, not back yet"));
    int64_t s50[] = {50, 50};
    formed(h, 2, two, s50, 10110); /* the retry of step 50: no progress */
    assert_int_equal(f->step, 50);
    assert_int_equal(f->survivors_ms, -1);
    int64_t s51[] = {51, 51};
    formed(h, 2, two, s51, 10125);
    assert_int_equal(f->survivors_ms, 25);
    int64_t behind[] = {60, 60, 0}; /* the new incarnation joins, heals */
    formed(h, 3, back, behind, 10200);
    assert_int_equal(f->back_ms, -1);
    int64_t level[] = {61, 61, 61};
    formed(h, 3, back, level, 10260);
    assert_int_equal(f->back_ms, 160);
    ftc__lh_history_headline(h, 12100, line, sizeof(line));
    assert_non_null(strstr(line, "; last failure: replica_2 lost "
                                 "(disconnect) 2.0 s ago, the others went "
                                 "on after 25 ms, back after 160 ms"));
    /* SIGSTOP: lost by heartbeat, back under the same id */
    ftc__lh_history_lost(h, "replica_1:bb", "heartbeat", 20000);
    f = ftc__lh_history_last_failure(h);
    int64_t s62[] = {62, 62};
    static const char *const zero_two[] = {"replica_0:aa", "replica_2:dd"};
    formed(h, 2, zero_two, s62, 20500);
    int64_t again[] = {70, 65, 70}; /* 1 is behind: not back yet */
    formed(h, 3, back, again, 21000);
    assert_int_equal(f->back_ms, -1);
    int64_t level2[] = {71, 71, 71};
    formed(h, 3, back, level2, 21500);
    assert_int_equal(f->step, 62);
    assert_int_equal(f->survivors_ms, 1000);
    assert_int_equal(f->back_ms, 1500);
    /* Both recoveries of each kind in the histograms: 25 ms and 1 s for
     * the others, 160 ms and 1.5 s back. */
    const ftc__lh_recovery *others = &h->recovery[FTC__LH_SURVIVORS];
    const ftc__lh_recovery *victims = &h->recovery[FTC__LH_BACK];
    assert_int_equal(others->count, 2);
    assert_int_equal(others->buckets[0], 0); /* le 0.01 */
    assert_int_equal(others->buckets[1], 1); /* le 0.025 */
    assert_int_equal(others->buckets[6], 2); /* le 1 */
    assert_true(others->sum_s > 1.0249 && others->sum_s < 1.0251);
    assert_int_equal(victims->count, 2);
    assert_int_equal(victims->buckets[4], 1); /* le 0.25 */
    assert_int_equal(victims->buckets[7], 2); /* le 2.5 */
    /* the ring keeps the last FTC__LH_FAILURES */
    for (int i = 0; i < FTC__LH_FAILURES + 5; i++) {
        ftc__lh_history_lost(h, "replica_0:aa", "heartbeat", 30000 + i);
    }
    assert_int_equal(ftc__lh_history_last_failure(h)->wall_ms,
                     30000 + FTC__LH_FAILURES + 4);
    free(h);
}

/* An operator's kill is the failure; the victim's dropped connection that
 * follows is that kill, not a second one, until it is back. */
static void kill_then_exit_is_one_failure(void **state)
{
    (void)state;
    ftc__lh_history *h = calloc(1, sizeof(*h));
    static const char *const all[] = {"replica_0:aa", "replica_1:bb"};
    static const char *const back[] = {"replica_0:aa", "replica_1:cc"};
    int64_t at9[] = {9, 9};
    formed(h, 2, all, at9, 1000);
    ftc__lh_history_lost(h, "replica_1:bb", "kill", 1010);
    ftc__lh_history_lost(h, "replica_1:bb", "disconnect", 1030);
    assert_int_equal(h->n_failures, 1);
    assert_string_equal(ftc__lh_history_last_failure(h)->cause, "kill");
    int64_t at12[] = {12, 12};
    formed(h, 2, back, at12, 1400);
    assert_int_equal(ftc__lh_history_last_failure(h)->back_ms, 390);
    /* back, then lost again by itself: a new failure */
    ftc__lh_history_lost(h, "replica_1:bb", "disconnect", 2000);
    assert_int_equal(h->n_failures, 2);
    /* another replica's loss is never absorbed by a kill */
    ftc__lh_history_lost(h, "replica_0:aa", "kill", 3000);
    ftc__lh_history_lost(h, "replica_1:cc", "heartbeat", 3001);
    assert_int_equal(h->n_failures, 4);
    free(h);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_rate_and_ring),
        cmocka_unit_test(failures_and_recovery),
        cmocka_unit_test(kill_then_exit_is_one_failure),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
