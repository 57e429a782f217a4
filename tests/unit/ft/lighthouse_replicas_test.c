/* A job's replica groups for the operator's view
 * (ft/lighthouse/lighthouse_replicas.h): grouping incarnations by the
 * replica_id's prefix, adding up their reported counters, failures by
 * cause, and the bound on groups kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft/lighthouse/lighthouse_replicas.h"
#include "testkit.h"

/* replica_id is in a quorum at step. */
static void seen(ftc__lh_replicas *r, const char *replica_id, int64_t step,
                 int64_t wall)
{
    ftc__quorum q;
    ftc__quorum_init(&q);
    q.members = calloc(1, sizeof(*q.members));
    q.n = 1;
    TK_OK(ftc__quorum_member_set(&q.members[0], replica_id, "a", "s"));
    q.members[0].step = step;
    ftc__lh_replicas_formed(r, &q, wall);
    ftc__quorum_fini(&q);
}

static ftc_lighthouse_replica_stats stats(int64_t heals, int64_t bytes,
                                          double seconds, int64_t served)
{
    ftc_lighthouse_replica_stats st = {.heals = heals,
                                       .heal_bytes = bytes,
                                       .heal_seconds = seconds,
                                       .served_bytes = served};
    return st;
}

static ftc_lighthouse_replica_stats totals(const ftc__lh_replicas *r, size_t i)
{
    ftc_lighthouse_replica_stats st;
    ftc__lh_replica_totals(&r->v[i], &st);
    return st;
}

static void incarnations_add_up(void **state)
{
    (void)state;
    ftc__lh_replicas r;
    ftc__lh_replicas_init(&r, 8);
    seen(&r, "replica_0:a", 0, 1);
    ftc_lighthouse_replica_stats st = stats(1, 100, 0.5, 7);
    ftc__lh_replicas_report(&r, "replica_0:a", &st, 2);
    st = stats(2, 300, 1.5, 9); /* a report replaces the last one */
    ftc__lh_replicas_report(&r, "replica_0:a", &st, 3);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.v[0].group, "replica_0");
    assert_int_equal(totals(&r, 0).heals, 2);
    assert_int_equal(r.v[0].incarnations, 1);

    /* its next incarnation: the first one's counts stay in the totals */
    seen(&r, "replica_0:b", 40, 4);
    assert_int_equal(r.v[0].incarnations, 2);
    assert_int_equal(r.v[0].step, 40);
    assert_string_equal(r.v[0].replica_id, "replica_0:b");
    st = stats(1, 50, 0.25, 0);
    ftc__lh_replicas_report(&r, "replica_0:b", &st, 5);
    ftc_lighthouse_replica_stats t = totals(&r, 0);
    assert_int_equal(t.heals, 3);
    assert_int_equal(t.heal_bytes, 350);
    assert_true(t.heal_seconds == 1.75);
    assert_int_equal(t.served_bytes, 9);

    /* a late heartbeat of the one it replaced is not counted again */
    st = stats(2, 300, 1.5, 9);
    ftc__lh_replicas_report(&r, "replica_0:a", &st, 6);
    assert_int_equal(r.v[0].incarnations, 2);
    assert_string_equal(r.v[0].replica_id, "replica_0:b");
    assert_int_equal(totals(&r, 0).heals, 3);
    assert_int_equal(r.v[0].seen_wall_ms, 5);
    ftc__lh_replicas_fini(&r);
}

static void failures_by_cause(void **state)
{
    (void)state;
    ftc__lh_replicas r;
    ftc__lh_replicas_init(&r, 8);
    /* a heal in progress, cut short by a lost heartbeat */
    ftc_lighthouse_replica_stats st = stats(0, 0, 0, 0);
    snprintf(st.healing_from, sizeof(st.healing_from), "replica_1:x");
    st.healing_bytes = 10;
    st.healing_total_bytes = 100;
    ftc__lh_replicas_report(&r, "replica_0:a", &st, 1);
    assert_string_equal(totals(&r, 0).healing_from, "replica_1:x");
    ftc__lh_replicas_failed(&r, "replica_0:a", FTC__LH_CAUSE_HEARTBEAT, 2);
    assert_string_equal(totals(&r, 0).healing_from, "");
    assert_int_equal(r.v[0].failures[FTC__LH_CAUSE_HEARTBEAT], 1);

    /* the successor heals; the loss of the old one found late is counted
     * but leaves the successor's heal alone */
    ftc__lh_replicas_report(&r, "replica_0:b", &st, 3);
    ftc__lh_replicas_failed(&r, "replica_0:a", FTC__LH_CAUSE_DISCONNECT, 4);
    assert_int_equal(r.v[0].failures[FTC__LH_CAUSE_DISCONNECT], 1);
    assert_string_equal(r.v[0].replica_id, "replica_0:b");
    assert_string_equal(totals(&r, 0).healing_from, "replica_1:x");
    assert_int_equal(r.v[0].incarnations, 2);

    /* a group first known by its failure; causes out of range change
     * nothing */
    ftc__lh_replicas_failed(&r, "replica_1:c", FTC__LH_CAUSE_KILL, 5);
    ftc__lh_replicas_failed(&r, "replica_1:c", -1, 6);
    ftc__lh_replicas_failed(&r, "replica_1:c", FTC__LH_CAUSES, 7);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.v[1].failures[FTC__LH_CAUSE_KILL], 1);
    assert_int_equal(r.v[1].failures[FTC__LH_CAUSE_DISCONNECT] +
                         r.v[1].failures[FTC__LH_CAUSE_HEARTBEAT],
                     0);
    assert_int_equal(r.v[1].step, -1);
    ftc__lh_replicas_fini(&r);
}

static void groups_sorted_and_bounded(void **state)
{
    (void)state;
    ftc__lh_replicas r;
    ftc__lh_replicas_init(&r, 3);
    seen(&r, "replica_10:a", 1, 10);
    seen(&r, "replica_1:b", 2, 20);
    seen(&r, "replica_2:c", 3, 30);
    seen(&r, "replica_1:d", 4, 40); /* replica_1, not replica_10 */
    assert_int_equal(r.n, 3);
    assert_string_equal(r.v[0].group, "replica_1");
    assert_string_equal(r.v[1].group, "replica_10");
    assert_string_equal(r.v[2].group, "replica_2");
    assert_int_equal(r.v[0].incarnations, 2);
    assert_int_equal(r.v[1].incarnations, 1);

    /* full: a new group takes the place of the one seen longest ago */
    seen(&r, "solo", 5, 50); /* no ':' - the id is its group */
    assert_int_equal(r.n, 3);
    assert_string_equal(r.v[0].group, "replica_1");
    assert_string_equal(r.v[1].group, "replica_2");
    assert_string_equal(r.v[2].group, "solo");
    assert_int_equal(r.v[2].step, 5);
    ftc__lh_replicas_fini(&r);

    /* a bound of 0 keeps one */
    ftc__lh_replicas_init(&r, 0);
    seen(&r, "x:1", 1, 1);
    seen(&r, "y:1", 1, 2);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.v[0].group, "y");
    ftc__lh_replicas_fini(&r);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(incarnations_add_up),
        cmocka_unit_test(failures_by_cause),
        cmocka_unit_test(groups_sorted_and_bounded),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
