/* Per-member quorum results: every quorum scenario of torchft's
 * src/manager.rs tests (named after them), then the edge cases. */
#include <string.h>

#include "base/alloc.h"
#include "quorum_kit.h"
#include "testkit.h"

static ftc__quorum_result results(const ftc__quorum *q, const char *id,
                                  int64_t group_rank, bool init_sync)
{
    ftc__quorum_result r;
    TK_OK(ftc__quorum_results(q, id, group_rank, init_sync, &r));
    /* Every case again through the lighthouse's compact answer. */
    qf_check_compact(q);
    return r;
}

static void assert_dst(const ftc__quorum_result *r, const int64_t *want,
                       size_t n)
{
    assert_int_equal(r->n_recover_dst, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(r->recover_dst_replica_ranks[i], want[i]);
    }
}

/* What torchft's tests check most: heal, the replica rank, the source
 * (-1: none) and the destinations. */
static void expect_recovery(const ftc__quorum *q, const char *id,
                            int64_t group_rank, bool init_sync, bool heal,
                            int64_t rank, int64_t src, const int64_t *dst,
                            size_t n_dst)
{
    ftc__quorum_result r = results(q, id, group_rank, init_sync);
    assert_int_equal(r.heal, heal);
    assert_int_equal(r.replica_rank, rank);
    assert_int_equal(r.recover_src_replica_rank, src);
    assert_dst(&r, dst, n_dst);
    ftc__quorum_result_fini(&r);
}

/* One manager of world size 1 asks a lighthouse with min_replicas 1. */
static void test_get_quorum(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 100, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    ftc__quorum_member m;
    TK_OK(ftc__quorum_member_set(&m, "rep_id", "http://localhost:1",
                                 "store_addr"));
    m.step = 123;
    m.world_size = 1;
    m.commit_failures = 3;
    TK_OK(ftc__quorum_join(&s, &o, &m, QF_NOW));
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW, 0, &t));
    assert_true(t.met);

    ftc__quorum_result r = results(&s.prev, "rep_id", 0, true);
    assert_int_equal(r.quorum_id, 1);
    assert_string_equal(r.recover_src_manager_address, "");
    assert_string_equal(r.store_address, "store_addr");
    assert_int_equal(r.max_step, 123);
    assert_int_equal(r.max_replica_rank, 0);
    assert_int_equal(r.max_world_size, 1);
    assert_int_equal(r.replica_rank, 0);
    assert_int_equal(r.replica_world_size, 1);
    assert_false(r.heal);
    assert_int_equal(r.commit_failures, 3);
    assert_int_equal(r.recover_src_replica_rank, -1);
    assert_int_equal(r.n_recover_dst, 0);
    assert_string_equal(r.replica_ids[0], "rep_id");
    ftc__quorum_result_fini(&r);
    ftc__quorum_state_fini(&s);
}

/* Two managers at step 0 with init_sync: the second heals from the
 * first. */
static void test_get_quorum_heal_first_step(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(2, 100, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "rep_0", 0, false, 0, QF_NOW);
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW, 0, &t));
    assert_false(t.met);
    qf_join(&s, &o, "rep_1", 0, false, 0, QF_NOW + 5);
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW + 5, 0, &t));
    assert_true(t.met);

    ftc__quorum_result a = results(&s.prev, "rep_0", 0, true);
    ftc__quorum_result b = results(&s.prev, "rep_1", 0, true);
    assert_int_equal(a.quorum_id, 1);
    assert_int_equal(a.max_step, 0);
    assert_int_equal(a.replica_rank, 0);
    assert_int_equal(a.replica_world_size, 2);
    assert_false(a.heal);
    assert_int_equal(b.quorum_id, 1);
    assert_int_equal(b.max_step, 0);
    assert_int_equal(b.replica_rank, 1);
    assert_int_equal(b.replica_world_size, 2);
    assert_true(b.heal);
    assert_string_equal(b.recover_src_manager_address, "addr_rep_0");
    ftc__quorum_result_fini(&a);
    ftc__quorum_result_fini(&b);
    ftc__quorum_state_fini(&s);
}

static void test_compute_quorum_results_first_step(void **state)
{
    (void)state;
    const char *ids[] = {"replica_0", "replica_1"};
    const int64_t steps[] = {0, 0};
    ftc__quorum q;
    qf_quorum(&q, 1, ids, steps, 2);
    /* Group rank 0. */
    expect_recovery(&q, "replica_0", 0, true, false, 0, -1,
                    (const int64_t[]){1}, 1);
    expect_recovery(&q, "replica_1", 0, true, true, 1, 0, NULL, 0);
    /* Group rank 1: offset from rank 0, and so is the primary. */
    expect_recovery(&q, "replica_1", 1, true, false, 1, -1,
                    (const int64_t[]){0}, 1);
    ftc__quorum_result r = results(&q, "replica_0", 1, true);
    assert_string_equal(r.store_address, "store_replica_1");
    ftc__quorum_result_fini(&r);
    r = results(&q, "replica_0", 0, true);
    assert_string_equal(r.store_address, "store_replica_0");
    ftc__quorum_result_fini(&r);
    ftc__quorum_fini(&q);
}

static void test_compute_quorum_results_recovery(void **state)
{
    (void)state;
    const char *ids[] = {"replica_0", "replica_1", "replica_2", "replica_3",
                         "replica_4"};
    const int64_t steps[] = {0, 1, 0, 1, 0};
    ftc__quorum q;
    qf_quorum(&q, 1, ids, steps, 5);
    /* Group rank 0. */
    expect_recovery(&q, "replica_0", 0, true, true, 0, 1, NULL, 0);
    expect_recovery(&q, "replica_1", 0, true, false, 1, -1,
                    (const int64_t[]){0, 4}, 2);
    expect_recovery(&q, "replica_3", 0, true, false, 3, -1,
                    (const int64_t[]){2}, 1);
    ftc__quorum_result r = results(&q, "replica_0", 0, true);
    assert_string_equal(r.recover_src_manager_address, "addr_replica_1");
    ftc__quorum_result_fini(&r);
    r = results(&q, "replica_1", 0, true);
    assert_string_equal(r.recover_src_manager_address, "");
    ftc__quorum_result_fini(&r);
    /* Group rank 1: assignments offset from rank 0 above. */
    expect_recovery(&q, "replica_1", 1, true, false, 1, -1,
                    (const int64_t[]){2}, 1);
    ftc__quorum_fini(&q);
}

static void test_compute_quorum_results_skip_init_sync(void **state)
{
    (void)state;
    const char *ids[] = {"replica_0", "replica_1"};
    const int64_t steps[] = {0, 0};
    ftc__quorum q;
    qf_quorum(&q, 1, ids, steps, 2);
    /* Baseline with init_sync. */
    expect_recovery(&q, "replica_0", 0, true, false, 0, -1,
                    (const int64_t[]){1}, 1);
    expect_recovery(&q, "replica_1", 0, true, true, 1, 0, NULL, 0);
    /* Without init_sync. */
    expect_recovery(&q, "replica_0", 0, false, false, 0, -1, NULL, 0);
    expect_recovery(&q, "replica_1", 0, false, false, 1, -1, NULL, 0);
    /* Without init_sync, behind at step 1. */
    q.members[0].step = 1;
    expect_recovery(&q, "replica_1", 0, false, true, 1, 0, NULL, 0);
    ftc__quorum_fini(&q);
}

static void test_compute_quorum_results_commit_failures(void **state)
{
    (void)state;
    const char *ids[] = {"replica_0", "replica_1"};
    const int64_t steps[] = {0, 0};
    ftc__quorum q;
    qf_quorum(&q, 1, ids, steps, 2);
    q.members[1].commit_failures = 2;
    ftc__quorum_result r = results(&q, "replica_0", 0, true);
    assert_int_equal(r.commit_failures, 2);
    ftc__quorum_result_fini(&r);
    ftc__quorum_fini(&q);
}

/* ---- edge cases beyond torchft's tests ---- */

static void unsorted_quorum_gives_sorted_ranks(void **state)
{
    (void)state;
    const char *ids[] = {"c", "a", "b"};
    const int64_t steps[] = {7, 7, 5};
    ftc__quorum q;
    qf_quorum(&q, 42, ids, steps, 3);
    ftc__quorum_result r = results(&q, "c", 0, true);
    assert_int_equal(r.quorum_id, 42);
    assert_int_equal(r.replica_rank, 2);
    assert_int_equal(r.max_step, 7);
    assert_int_equal(r.max_world_size, 2);
    assert_int_equal(r.max_replica_rank, 1);
    assert_string_equal(r.replica_ids[0], "a");
    assert_string_equal(r.replica_ids[1], "b");
    assert_string_equal(r.replica_ids[2], "c");
    /* b (rank 1) heals; with group rank 0 from a, the first up to date. */
    assert_dst(&r, NULL, 0);
    ftc__quorum_result_fini(&r);
    r = results(&q, "b", 0, true);
    assert_true(r.heal);
    assert_int_equal(r.max_replica_rank, -1);
    assert_int_equal(r.recover_src_replica_rank, 0);
    assert_string_equal(r.recover_src_manager_address, "addr_a");
    ftc__quorum_result_fini(&r);
    r = results(&q, "b", 1, true);
    assert_int_equal(r.recover_src_replica_rank, 2);
    assert_string_equal(r.store_address, "store_c");
    ftc__quorum_result_fini(&r);
    ftc__quorum_fini(&q);
}

/* Recovery spreads over sources by group rank; a huge group rank is taken
 * modulo without overflow. */
static void recovery_rotates_with_group_rank(void **state)
{
    (void)state;
    const char *ids[] = {"r0", "r1", "r2", "r3", "r4", "r5"};
    const int64_t steps[] = {9, 9, 9, 3, 3, 0};
    ftc__quorum q;
    qf_quorum(&q, 1, ids, steps, 6);
    /* Healing: r3, r4, r5 (k = 0, 1, 2); sources: r0, r1, r2. */
    const int64_t want_src[4][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 1, 2}};
    const int64_t ranks[4] = {0, 1, 2, 3};
    const char *primary_store[3] = {"store_r0", "store_r1", "store_r2"};
    for (int g = 0; g < 4; g++) {
        for (int k = 0; k < 3; k++) {
            ftc__quorum_result r = results(&q, ids[3 + k], ranks[g], true);
            assert_true(r.heal);
            assert_int_equal(r.recover_src_replica_rank, want_src[g][k]);
            /* The primary is up-to-date member g mod 3. */
            assert_string_equal(r.store_address, primary_store[g % 3]);
            ftc__quorum_result_fini(&r);
        }
    }
    ftc__quorum_result r = results(&q, "r5", INT64_MAX, true);
    /* INT64_MAX mod 3 == 1: k = 2 heals from up[(2 + 1) mod 3] = r0. */
    assert_int_equal(r.recover_src_replica_rank, 0);
    assert_string_equal(r.store_address, "store_r1");
    ftc__quorum_result_fini(&r);
    r = results(&q, "r0", 1, true);
    assert_dst(&r, (const int64_t[]){5}, 1);
    ftc__quorum_result_fini(&r);
    ftc__quorum_fini(&q);
}

static void bad_quorums_are_refused(void **state)
{
    (void)state;
    ftc__quorum_result r;
    ftc__quorum empty;
    ftc__quorum_init(&empty);
    TK_EXPECT(ftc__quorum_results(&empty, "a", 0, true, &r), FTC_EINVAL);
    TK_EXPECT(ftc__quorum_results(NULL, "a", 0, true, &r), FTC_EINVAL);
    const char *ids[] = {"a", "b", "a"};
    const int64_t steps[] = {1, 1, 1};
    ftc__quorum q;
    qf_quorum(&q, 3, ids, steps, 3);
    TK_EXPECT(ftc__quorum_results(&q, "a", 0, true, &r), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "lists a twice"));
    assert_null(r.replica_ids);
    q.n = 2;
    TK_EXPECT(ftc__quorum_results(&q, "zz", 0, true, &r), FTC_ENOENT);
    assert_non_null(strstr(ftc_last_error(),
                           "replica zz not participating in returned quorum"));
    TK_EXPECT(ftc__quorum_results(&q, "a", -1, true, &r), FTC_EINVAL);
    TK_EXPECT(ftc__quorum_results(&q, NULL, 0, true, &r), FTC_EINVAL);
    q.n = 3;
    ftc__quorum_fini(&q);
}

static void allocation_failures_leave_nothing(void **state)
{
    (void)state;
    const char *ids[] = {"r0", "r1", "r2", "r3"};
    const int64_t steps[] = {2, 1, 2, 0};
    ftc__quorum q;
    qf_quorum(&q, 1, ids, steps, 4);
    for (long n = 0;; n++) {
        ftc__quorum_result r;
        ftc__alloc_fail_after(n);
        int rc = ftc__quorum_results(&q, "r0", 0, true, &r);
        ftc__alloc_fail_after(-1);
        if (rc == 0) {
            assert_true(n > 0);
            assert_dst(&r, (const int64_t[]){1}, 1);
            ftc__quorum_result_fini(&r);
            break;
        }
        assert_int_equal(rc, FTC_ENOMEM);
        assert_null(r.replica_ids);
        assert_null(r.recover_dst_replica_ranks);
    }
    ftc__quorum_fini(&q);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_quorum),
        cmocka_unit_test(test_get_quorum_heal_first_step),
        cmocka_unit_test(test_compute_quorum_results_first_step),
        cmocka_unit_test(test_compute_quorum_results_recovery),
        cmocka_unit_test(test_compute_quorum_results_skip_init_sync),
        cmocka_unit_test(test_compute_quorum_results_commit_failures),
        cmocka_unit_test(unsorted_quorum_gives_sorted_ranks),
        cmocka_unit_test(recovery_rotates_with_group_rank),
        cmocka_unit_test(bad_quorums_are_refused),
        cmocka_unit_test(allocation_failures_leave_nothing),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
