/* The manager's pure parts: participation and spares, healing sources
 * striped over the up-to-date replicas, who serves a snapshot, the
 * group's vote, which pushed events abort, and the group store records. */
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/manager/manager_plan.h"
#include "quorum_kit.h"
#include "testkit.h"

static const char *const ids5[] = {"r0", "r1", "r2", "r3", "r4"};

/* The plan of member `self` (group rank g) in a quorum of these steps. */
static ftc__manager_plan plan_of(const int64_t *steps, size_t n, size_t self,
                                 int64_t g, bool init_sync, int mode,
                                 int64_t min, int sources,
                                 ftc__quorum_result *res)
{
    ftc__quorum q;
    qf_quorum(&q, 7, ids5, steps, n);
    TK_OK(ftc__quorum_results(&q, ids5[self], g, init_sync, res));
    ftc__manager_plan p;
    ftc__manager_plan_build(&q, res, g, init_sync, true, mode, min, sources,
                            &p);
    ftc__quorum_fini(&q);
    return p;
}

static void everyone_up_to_date(void **state)
{
    (void)state;
    int64_t steps[] = {5, 5, 5};
    ftc__quorum_result r;
    ftc__manager_plan p =
        plan_of(steps, 3, 1, 0, true, FTC_WORLD_DYNAMIC, 1, 2, &r);
    assert_false(p.heal);
    assert_true(p.participating);
    assert_false(p.spare);
    assert_int_equal(p.num_participants, 3);
    assert_false(p.serve); /* nobody heals: no copy */
    assert_int_equal(p.n_sources, 0);
    ftc__quorum_result_fini(&r);
}

static void behind_heals_striped(void **state)
{
    (void)state;
    /* torchft's recovery example: steps [0,1,0,1,0]. */
    int64_t steps[] = {0, 1, 0, 1, 0};
    ftc__quorum_result r;
    ftc__manager_plan p =
        plan_of(steps, 5, 0, 0, true, FTC_WORLD_DYNAMIC, 1, 2, &r);
    assert_true(p.heal);
    assert_false(p.participating);
    assert_int_equal(p.num_participants, 2);
    assert_false(p.serve);
    /* Assigned source first (replica 1 for group rank 0), then the next
     * up-to-date one. */
    assert_int_equal(r.recover_src_replica_rank, 1);
    assert_int_equal(p.n_sources, 2);
    assert_int_equal(p.sources[0], 1);
    assert_int_equal(p.sources[1], 3);
    ftc__quorum_result_fini(&r);
    /* Member 2 is assigned replica 3; its second source wraps to 1. */
    p = plan_of(steps, 5, 2, 0, true, FTC_WORLD_DYNAMIC, 1, 4, &r);
    assert_int_equal(p.n_sources, 2);
    assert_int_equal(p.sources[0], 3);
    assert_int_equal(p.sources[1], 1);
    ftc__quorum_result_fini(&r);
    /* One source only when asked for one. */
    p = plan_of(steps, 5, 4, 1, true, FTC_WORLD_DYNAMIC, 1, 1, &r);
    assert_int_equal(p.n_sources, 1);
    assert_int_equal(p.sources[0], r.recover_src_replica_rank);
    ftc__quorum_result_fini(&r);
    /* Up-to-date members serve: both when striping, only an assigned one
     * with a single source. */
    p = plan_of(steps, 5, 3, 0, true, FTC_WORLD_DYNAMIC, 1, 2, &r);
    assert_true(p.serve);
    assert_true(p.participating);
    ftc__quorum_result_fini(&r);
    int64_t one_behind[] = {4, 4, 3};
    p = plan_of(one_behind, 3, 1, 0, true, FTC_WORLD_DYNAMIC, 1, 1, &r);
    assert_int_equal(r.n_recover_dst, 0);
    assert_false(p.serve);
    ftc__quorum_result_fini(&r);
    p = plan_of(one_behind, 3, 0, 0, true, FTC_WORLD_DYNAMIC, 1, 1, &r);
    assert_int_equal(r.n_recover_dst, 1);
    assert_true(p.serve);
    ftc__quorum_result_fini(&r);
}

static void init_sync_at_step_zero(void **state)
{
    (void)state;
    int64_t steps[] = {0, 0, 0};
    ftc__quorum_result r;
    /* Group rank 1: the primary is member 1; everyone else heals from it
     * alone, and all still participate (torchft). */
    ftc__manager_plan p =
        plan_of(steps, 3, 0, 1, true, FTC_WORLD_DYNAMIC, 1, 2, &r);
    assert_true(p.heal);
    assert_true(p.participating);
    assert_int_equal(p.num_participants, 3);
    assert_int_equal(p.n_sources, 1);
    assert_int_equal(p.sources[0], 1);
    ftc__quorum_result_fini(&r);
    p = plan_of(steps, 3, 1, 1, true, FTC_WORLD_DYNAMIC, 1, 2, &r);
    assert_false(p.heal);
    assert_true(p.serve);
    ftc__quorum_result_fini(&r);
    /* Without init_sync nobody heals or serves. */
    p = plan_of(steps, 3, 0, 1, false, FTC_WORLD_DYNAMIC, 1, 2, &r);
    assert_false(p.heal);
    assert_false(p.serve);
    ftc__quorum_result_fini(&r);
}

static void spares_in_fixed_mode(void **state)
{
    (void)state;
    int64_t steps[] = {3, 3, 3, 2};
    ftc__quorum_result r;
    ftc__manager_plan p =
        plan_of(steps, 4, 2, 0, true, FTC_WORLD_FIXED_WITH_SPARES, 2, 2, &r);
    assert_int_equal(r.max_replica_rank, 2);
    assert_true(p.spare);
    assert_false(p.participating);
    assert_int_equal(p.num_participants, 2);
    ftc__quorum_result_fini(&r);
    p = plan_of(steps, 4, 1, 0, true, FTC_WORLD_FIXED_WITH_SPARES, 2, 2, &r);
    assert_false(p.spare);
    assert_true(p.participating);
    assert_int_equal(p.num_participants, 2);
    ftc__quorum_result_fini(&r);
    /* Fewer up to date than min_replica_size: all participate. */
    p = plan_of(steps, 4, 0, 0, true, FTC_WORLD_FIXED_WITH_SPARES, 5, 2, &r);
    assert_int_equal(p.num_participants, 3);
    ftc__quorum_result_fini(&r);
}

static void heal_not_allowed(void **state)
{
    (void)state;
    int64_t steps[] = {5, 4};
    ftc__quorum q;
    qf_quorum(&q, 7, ids5, steps, 2);
    ftc__quorum_result r;
    TK_OK(ftc__quorum_results(&q, "r1", 0, true, &r));
    ftc__manager_plan p;
    ftc__manager_plan_build(&q, &r, 0, true, false, FTC_WORLD_DYNAMIC, 1, 2,
                            &p);
    assert_false(p.heal);
    assert_false(p.participating);
    assert_int_equal(p.n_sources, 0);
    ftc__quorum_result_fini(&r);
    ftc__quorum_fini(&q);
}

static void which_events_abort(void **state)
{
    (void)state;
    char members[3][FTC__QUORUM_STR_MAX] = {"a", "b", "c"};
    int64_t q5 = ((int64_t)9 << 32) | 5;
    int64_t q4 = ((int64_t)9 << 32) | 4, q6 = ((int64_t)9 << 32) | 6;
    int64_t other = ((int64_t)10 << 32) | 1;
    assert_true(ftc__manager_event_aborts("b", q5, q5, members, 3));
    assert_true(ftc__manager_event_aborts("c", q6, q5, members, 3));
    assert_false(ftc__manager_event_aborts("b", q4, q5, members, 3));
    assert_false(ftc__manager_event_aborts("d", q5, q5, members, 3));
    assert_false(ftc__manager_event_aborts("a", other, q5, members, 3));
    assert_false(ftc__manager_event_aborts("a", q5, q5, members, 0));
}

static void votes(void **state)
{
    (void)state;
    ftc__manager_vote v[3] = {{10, 12, true}, {10, 12, true}, {10, 12, true}};
    bool commit;
    int64_t at;
    TK_OK(ftc__manager_decide(v, 3, &commit, &at));
    assert_true(commit);
    assert_int_equal(at, 12);
    v[1].ok = false;
    v[2].at = 10; /* its heal failed */
    TK_OK(ftc__manager_decide(v, 3, &commit, &at));
    assert_false(commit);
    assert_int_equal(at, 10);
    v[2].step = 9;
    TK_EXPECT(ftc__manager_decide(v, 3, &commit, &at), FTC_EPROTO);
    assert_false(commit);
    assert_non_null(strstr(ftc_last_error(), "rank 2 on 9"));
}

/* --------------------------------------------------------------- records */

/* An arrival's suspects travel as a JSON array; the leader joins with the
 * union of its ranks', each once. */
static void arrival_suspects(void **state)
{
    (void)state;
    ftc__manager_arrival a[3];
    memset(a, 0, sizeof(a));
    char ids0[] = "b:01\0c:02";
    a[0].suspects = ids0;
    a[0].suspects_len = sizeof(ids0);
    a[0].n_suspects = 2;
    snprintf(a[0].heal_address, sizeof(a[0].heal_address), "h:1");
    char *text;
    size_t len;
    TK_OK(ftc__manager_arrival_encode(&a[0], &text, &len));
    assert_non_null(strstr(text, "\"suspects\":[\"b:01\",\"c:02\"]"));
    TK_OK(ftc__manager_arrival_decode(text, len, &a[1]));
    ftc__free(text);
    assert_int_equal(a[1].n_suspects, 2);
    assert_int_equal(a[1].suspects_len, sizeof(ids0));
    assert_memory_equal(a[1].suspects, ids0, sizeof(ids0));
    const char *more = "{\"step\":0,\"commit_failures\":0,\"heal\":\"h:3\","
                       "\"suspects\":[\"c:02\",\"d:03\"]}";
    TK_OK(ftc__manager_arrival_decode(more, strlen(more), &a[2]));
    const char *ids[FTC__QUORUM_SUSPECTS_MAX];
    assert_int_equal(ftc__manager_suspects_union(a, 3, ids), 3);
    assert_string_equal(ids[0], "b:01");
    assert_string_equal(ids[1], "c:02");
    assert_string_equal(ids[2], "d:03");
    ftc__manager_arrival_fini(&a[1]);
    ftc__manager_arrival_fini(&a[2]);
    assert_null(a[2].suspects);
    assert_int_equal(ftc__manager_suspects_union(a, 0, ids), 0);
}

static void arrival_and_vote_records(void **state)
{
    (void)state;
    ftc__manager_arrival a = {.step = 12,
                              .commit_failures = 3,
                              .shrink_only = true,
                              .heal_address = "10.0.0.7:4242"},
                         b;
    char *text;
    size_t len;
    TK_OK(ftc__manager_arrival_encode(&a, &text, &len));
    TK_OK(ftc__manager_arrival_decode(text, len, &b));
    assert_int_equal(b.step, 12);
    assert_int_equal(b.commit_failures, 3);
    assert_true(b.shrink_only);
    assert_string_equal(b.heal_address, "10.0.0.7:4242");
    assert_int_equal(b.n_suspects, 0);
    assert_null(strstr(text, "suspects")); /* absent when none */
    ftc__free(text);
    ftc__manager_vote v = {7, 9, true}, w;
    TK_OK(ftc__manager_vote_encode(&v, &text, &len));
    TK_OK(ftc__manager_vote_decode(text, len, &w));
    assert_int_equal(w.step, 7);
    assert_int_equal(w.at, 9);
    assert_true(w.ok);
    ftc__free(text);
    static const char *const bad_arrivals[] = {
        "",
        "[]",
        "{\"step\":1,\"commit_failures\":0,\"heal\":\"x\"",
        "{\"commit_failures\":0,\"heal\":\"x\"}",
        "{\"step\":-1,\"commit_failures\":0,\"heal\":\"x\"}",
        "{\"step\":1.5,\"commit_failures\":0,\"heal\":\"x\"}",
        "{\"step\":1,\"commit_failures\":0,\"heal\":7}",
        "{\"step\":1,\"commit_failures\":0}",
        "{\"step\":1,\"commit_failures\":0,\"heal\":\"x\",\"shrink_only\":1}",
        "{\"step\":1,\"commit_failures\":0,\"heal\":\"x\",\"suspects\":\"a\"}",
        "{\"step\":1,\"commit_failures\":0,\"heal\":\"x\",\"suspects\":[1]}",
        "{\"step\":1,\"commit_failures\":0,\"heal\":\"x\",\"suspects\":[\"\"]}",
    };
    for (size_t i = 0; i < sizeof(bad_arrivals) / sizeof(*bad_arrivals); i++) {
        TK_EXPECT(ftc__manager_arrival_decode(bad_arrivals[i],
                                              strlen(bad_arrivals[i]), &b),
                  FTC_EPROTO);
    }
    static const char *const bad_votes[] = {
        "{\"step\":1,\"at\":1}",
        "{\"step\":1,\"at\":1,\"ok\":\"yes\"}",
        "{\"at\":1,\"ok\":true}",
    };
    for (size_t i = 0; i < sizeof(bad_votes) / sizeof(*bad_votes); i++) {
        TK_EXPECT(
            ftc__manager_vote_decode(bad_votes[i], strlen(bad_votes[i]), &w),
            FTC_EPROTO);
    }
}

static void result_records(void **state)
{
    (void)state;
    int64_t steps[] = {4, 3};
    ftc__quorum q;
    qf_quorum(&q, 77, ids5, steps, 2);
    char *text;
    size_t len;
    TK_OK(ftc__manager_result_encode_quorum(&q, "r1", &text, &len));
    ftc__quorum back;
    char id[FTC__QUORUM_STR_MAX];
    TK_OK(ftc__manager_result_decode(text, len, &back, id));
    assert_string_equal(id, "r1");
    assert_int_equal(back.quorum_id, 77);
    assert_int_equal(back.n, 2);
    assert_string_equal(back.members[1].replica_id, "r1");
    assert_int_equal(back.members[1].step, 3);
    ftc__quorum_fini(&back);
    ftc__free(text);
    /* The leader's failure comes back as its code and message. */
    TK_OK(ftc__manager_result_encode_error(FTC_ETIMEDOUT, "no quorum: why",
                                           &text, &len));
    TK_EXPECT(ftc__manager_result_decode(text, len, &back, id), FTC_ETIMEDOUT);
    assert_string_equal(ftc_last_error(), "no quorum: why");
    assert_int_equal(back.n, 0);
    ftc__free(text);
    /* Members out of order, unknown codes and missing parts: refused. */
    ftc__quorum_member t = q.members[0];
    q.members[0] = q.members[1];
    q.members[1] = t;
    TK_OK(ftc__manager_result_encode_quorum(&q, "r1", &text, &len));
    TK_EXPECT(ftc__manager_result_decode(text, len, &back, id), FTC_EPROTO);
    ftc__free(text);
    static const char *const bad[] = {
        "{\"ok\":false,\"code\":5,\"message\":\"x\"}",
        "{\"ok\":false,\"message\":\"x\"}",
        "{\"ok\":true,\"replica_id\":\"r1\"}",
        "{\"ok\":true,\"quorum\":{\"quorum_id\":1,\"members\":[]}}",
        "{\"replica_id\":\"r1\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        TK_EXPECT(ftc__manager_result_decode(bad[i], strlen(bad[i]), &back, id),
                  FTC_EPROTO);
        assert_int_equal(back.n, 0);
    }
    ftc__quorum_fini(&q);
}

static void member_data(void **state)
{
    (void)state;
    ftc__manager_arrival a[2] = {{.step = 1, .heal_address = "h:1"},
                                 {.step = 1, .heal_address = "[::1]:2"}};
    char *text;
    size_t len;
    TK_OK(ftc__manager_member_data(a, 2, &text, &len));
    assert_string_equal(text, "{\"heal\":[\"h:1\",\"[::1]:2\"]}");
    ftc__quorum_member m = qf_member("r0", 1);
    m.data = text;
    m.data_len = len;
    char addr[FTC__QUORUM_STR_MAX];
    TK_OK(ftc__manager_member_heal_address(&m, 1, addr));
    assert_string_equal(addr, "[::1]:2");
    TK_EXPECT(ftc__manager_member_heal_address(&m, 2, addr), FTC_ENOENT);
    ftc__free(text);
    m.data = (char *)"{\"heal\":[7]}";
    m.data_len = strlen(m.data);
    TK_EXPECT(ftc__manager_member_heal_address(&m, 0, addr), FTC_EPROTO);
    m.data = NULL;
    m.data_len = 0;
    TK_EXPECT(ftc__manager_member_heal_address(&m, 0, addr), FTC_EPROTO);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(everyone_up_to_date),
        cmocka_unit_test(behind_heals_striped),
        cmocka_unit_test(init_sync_at_step_zero),
        cmocka_unit_test(spares_in_fixed_mode),
        cmocka_unit_test(heal_not_allowed),
        cmocka_unit_test(which_events_abort),
        cmocka_unit_test(votes),
        cmocka_unit_test(arrival_and_vote_records),
        cmocka_unit_test(arrival_suspects),
        cmocka_unit_test(result_records),
        cmocka_unit_test(member_data),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
