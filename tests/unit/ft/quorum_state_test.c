/* The lighthouse state's tables: validation of what joins, limits, sorted
 * order, data ownership, pruning and allocation failures. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "quorum_kit.h"
#include "testkit.h"

static void opts_are_checked(void **state)
{
    (void)state;
    ftc__quorum_opts o;
    ftc__quorum_opts_init(&o);
    assert_int_equal(o.min_replicas, 1);
    assert_int_equal(o.join_timeout_ms, 60000);
    assert_int_equal(o.heartbeat_timeout_ms, 5000);
    assert_false(o.strict_shrink_only);
    TK_OK(ftc__quorum_opts_check(&o));
    o.join_timeout_ms = -1;
    TK_EXPECT(ftc__quorum_opts_check(&o), FTC_EINVAL);
    ftc__quorum_opts_init(&o);
    o.heartbeat_timeout_ms = -5;
    TK_EXPECT(ftc__quorum_opts_check(&o), FTC_EINVAL);
    ftc__quorum_opts_init(&o);
    o.max_replicas = 0;
    TK_EXPECT(ftc__quorum_opts_check(&o), FTC_EINVAL);
    o.max_replicas = FTC__QUORUM_MAX_REPLICAS_CEIL + 1;
    TK_EXPECT(ftc__quorum_opts_check(&o), FTC_EINVAL);
    ftc__quorum_opts_init(&o);
    o.max_data_bytes = FTC__QUORUM_MAX_DATA_CEIL + 1;
    TK_EXPECT(ftc__quorum_opts_check(&o), FTC_EINVAL);
}

static void member_strings_are_bounded(void **state)
{
    (void)state;
    char longest[FTC__QUORUM_STR_MAX];
    memset(longest, 'x', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    char too_long[FTC__QUORUM_STR_MAX + 1];
    memset(too_long, 'y', sizeof(too_long) - 1);
    too_long[sizeof(too_long) - 1] = '\0';

    ftc__quorum_member m = qf_member("keep", 4);
    TK_OK(ftc__quorum_member_set(&m, longest, longest, longest));
    assert_string_equal(m.replica_id, longest);
    assert_int_equal(m.step, 0);
    m = qf_member("keep", 4);
    TK_EXPECT(ftc__quorum_member_set(&m, "a", too_long, ""), FTC_EMSGSIZE);
    TK_EXPECT(ftc__quorum_member_set(&m, too_long, "", ""), FTC_EMSGSIZE);
    TK_EXPECT(ftc__quorum_member_set(&m, "a", "", too_long), FTC_EMSGSIZE);
    TK_EXPECT(ftc__quorum_member_set(&m, "", "", ""), FTC_EINVAL);
    TK_EXPECT(ftc__quorum_member_set(&m, "a", NULL, ""), FTC_EINVAL);
    /* Nothing changed on error. */
    assert_string_equal(m.replica_id, "keep");
    assert_int_equal(m.step, 4);
}

static void bad_joins_change_nothing(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    o.max_data_bytes = 8;
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "ok", 1, false, 0, QF_NOW);

    ftc__quorum_member m = qf_member("bad", 1);
    m.step = -1;
    TK_EXPECT(ftc__quorum_join(&s, &o, &m, QF_NOW), FTC_EINVAL);
    m = qf_member("bad", 1);
    m.commit_failures = -2;
    TK_EXPECT(ftc__quorum_join(&s, &o, &m, QF_NOW), FTC_EINVAL);
    m = qf_member("bad", 1);
    m.data_len = 3;
    TK_EXPECT(ftc__quorum_join(&s, &o, &m, QF_NOW), FTC_EINVAL);
    char data[9] = "12345678";
    m.data = data;
    m.data_len = 9;
    TK_EXPECT(ftc__quorum_join(&s, &o, &m, QF_NOW), FTC_EMSGSIZE);
    assert_non_null(strstr(ftc_last_error(), "data 9 B > max 8 B"));
    m = qf_member("bad", 1);
    memset(m.replica_id, 'z', sizeof(m.replica_id));
    TK_EXPECT(ftc__quorum_join(&s, &o, &m, QF_NOW), FTC_EINVAL);
    m = qf_member("bad", 1);
    memset(m.store_address, 'z', sizeof(m.store_address));
    TK_EXPECT(ftc__quorum_join(&s, &o, &m, QF_NOW), FTC_EINVAL);
    m = qf_member("bad", 1);
    m.replica_id[0] = '\0';
    TK_EXPECT(ftc__quorum_join(&s, &o, &m, QF_NOW), FTC_EINVAL);
    TK_EXPECT(ftc__quorum_heartbeat(&s, &o, "", QF_NOW), FTC_EINVAL);
    TK_EXPECT(ftc__quorum_heartbeat(&s, &o, NULL, QF_NOW), FTC_EINVAL);

    assert_int_equal(s.n_participants, 1);
    assert_int_equal(s.n_heartbeats, 1);
    assert_string_equal(s.heartbeats[0].replica_id, "ok");
    ftc__quorum_state_fini(&s);
}

static void tables_stay_sorted_and_rejoin_replaces(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    const char *order[] = {"m", "c", "x", "a", "q", "b"};
    for (int i = 0; i < 6; i++) {
        qf_join(&s, &o, order[i], i, false, 0, QF_NOW + i);
    }
    TK_OK(ftc__quorum_heartbeat(&s, &o, "hb-only", QF_NOW));
    const char *sorted[] = {"a", "b", "c", "m", "q", "x"};
    assert_int_equal(s.n_participants, 6);
    for (int i = 0; i < 6; i++) {
        assert_string_equal(s.participants[i].member.replica_id, sorted[i]);
    }
    assert_int_equal(s.n_heartbeats, 7);
    for (size_t i = 1; i < s.n_heartbeats; i++) {
        assert_true(strcmp(s.heartbeats[i - 1].replica_id,
                           s.heartbeats[i].replica_id) < 0);
    }
    /* A second request of "c" replaces the first, join time included. */
    char data[] = "{\"k\":1}";
    ftc__quorum_member m = qf_member("c", 99);
    m.data = data;
    m.data_len = strlen(data);
    TK_OK(ftc__quorum_join(&s, &o, &m, QF_NOW + 50));
    data[0] = 'X'; /* the state kept its own copy */
    assert_int_equal(s.n_participants, 6);
    const ftc__quorum_participant *c = &s.participants[2];
    assert_int_equal(c->member.step, 99);
    assert_int_equal(c->joined_ms, QF_NOW + 50);
    assert_string_equal(c->member.data, "{\"k\":1}");
    assert_int_equal(c->member.data_len, 7);
    ftc__quorum_state_fini(&s);
}

static void data_travels_into_the_quorum(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    char data[] = "payload";
    ftc__quorum_member m = qf_member("a", 3);
    m.data = data;
    m.data_len = 7;
    TK_OK(ftc__quorum_join(&s, &o, &m, QF_NOW));
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(&s, &o, QF_NOW, 1234, &t));
    assert_true(t.met);
    assert_int_equal(s.prev.created_wall_ms, 1234);
    assert_string_equal(s.prev.members[0].data, "payload");

    ftc__quorum copy;
    ftc__quorum_init(&copy);
    TK_OK(ftc__quorum_copy(&copy, &s.prev));
    assert_ptr_not_equal(copy.members[0].data, s.prev.members[0].data);
    assert_string_equal(copy.members[0].data, "payload");
    assert_int_equal(copy.quorum_id, s.prev.quorum_id);
    assert_int_equal(ftc__quorum_find(&copy, "a"), 0);
    assert_int_equal(ftc__quorum_find(&copy, "b"), -1);
    ftc__quorum_fini(&copy);
    ftc__quorum_state_fini(&s);
}

static void limits_bound_both_tables(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 1000);
    o.max_replicas = 3;
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 0, false, 0, QF_NOW);
    qf_join(&s, &o, "b", 0, false, 0, QF_NOW);
    qf_join(&s, &o, "c", 0, false, 0, QF_NOW);
    ftc__quorum_member d = qf_member("d", 0);
    TK_EXPECT(ftc__quorum_join(&s, &o, &d, QF_NOW), FTC_EMSGSIZE);
    /* Re-joining an existing participant is always allowed. */
    qf_join(&s, &o, "b", 5, false, 0, QF_NOW);
    assert_int_equal(s.n_participants, 3);
    /* The heartbeat table is full of live replicas. */
    TK_EXPECT(ftc__quorum_heartbeat(&s, &o, "d", QF_NOW + 999), FTC_EMSGSIZE);
    assert_int_equal(s.n_heartbeats, 3);
    /* Once they expired, a new heartbeat evicts them. */
    TK_OK(ftc__quorum_heartbeat(&s, &o, "d", QF_NOW + 1000));
    assert_int_equal(s.n_heartbeats, 1);
    assert_string_equal(s.heartbeats[0].replica_id, "d");
    ftc__quorum_state_fini(&s);
}

static void prune_drops_only_old_heartbeats(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "old", QF_NOW - 10000));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "edge", QF_NOW - 5000));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "new", QF_NOW - 4999));
    TK_OK(ftc__quorum_heartbeat(&s, &o, "future", QF_NOW + 10));
    assert_int_equal(ftc__quorum_prune_heartbeats(&s, QF_NOW, 5000), 2);
    assert_int_equal(s.n_heartbeats, 2);
    assert_string_equal(s.heartbeats[0].replica_id, "future");
    assert_string_equal(s.heartbeats[1].replica_id, "new");
    assert_int_equal(ftc__quorum_prune_heartbeats(&s, QF_NOW, 5000), 0);
    ftc__quorum_state_fini(&s);
}

static void forget_drops_both_entries_and_health(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    ftc__quorum_state s;
    TK_OK(ftc__quorum_state_init(&s, 0));
    qf_join(&s, &o, "a", 0, false, 0, QF_NOW);
    qf_join(&s, &o, "b", 0, false, 0, QF_NOW);
    TK_OK(ftc__quorum_heartbeat(&s, &o, "c", QF_NOW - 5000));
    assert_true(ftc__quorum_is_healthy(&s, &o, "a", QF_NOW + 4999));
    assert_false(ftc__quorum_is_healthy(&s, &o, "a", QF_NOW + 5000));
    assert_false(ftc__quorum_is_healthy(&s, &o, "c", QF_NOW));
    assert_false(ftc__quorum_is_healthy(&s, &o, "zz", QF_NOW));
    assert_false(ftc__quorum_is_healthy(&s, &o, NULL, QF_NOW));
    /* b vanishes: at once nothing waits for it. */
    TK_OK(ftc__quorum_forget(&s, "b"));
    assert_false(ftc__quorum_is_healthy(&s, &o, "b", QF_NOW));
    assert_int_equal(s.n_participants, 1);
    assert_string_equal(s.participants[0].member.replica_id, "a");
    assert_int_equal(s.n_heartbeats, 2);
    /* A heartbeat alone is forgotten too; then nothing is left of c. */
    TK_OK(ftc__quorum_forget(&s, "c"));
    TK_EXPECT(ftc__quorum_forget(&s, "c"), FTC_ENOENT);
    TK_EXPECT(ftc__quorum_forget(&s, NULL), FTC_ENOENT);
    assert_int_equal(s.n_heartbeats, 1);
    assert_string_equal(s.heartbeats[0].replica_id, "a");
    ftc__quorum_state_fini(&s);
}

/* A snapshot of what decides: ids, steps and times of both tables. */
static void snapshot(const ftc__quorum_state *s, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < s->n_participants && n < cap; i++) {
        const ftc__quorum_participant *p = &s->participants[i];
        n += (size_t)snprintf(out + n, cap - n, "p:%s/%lld/%lld/%s;",
                              p->member.replica_id, (long long)p->member.step,
                              (long long)p->joined_ms,
                              p->member.data ? p->member.data : "-");
    }
    for (size_t i = 0; i < s->n_heartbeats && n < cap; i++) {
        n += (size_t)snprintf(out + n, cap - n, "h:%s/%lld;",
                              s->heartbeats[i].replica_id,
                              (long long)s->heartbeats[i].last_ms);
    }
    if (n < cap) {
        snprintf(out + n, cap - n, "prev:%d/%lld/%zu", s->has_prev,
                 (long long)s->prev.quorum_id, s->prev.n);
    }
}

/* Every allocation of join, heartbeat, compute and tick fails in turn: the
 * call says FTC_ENOMEM and the state is as before. */
static void allocation_failures_change_nothing(void **state)
{
    (void)state;
    ftc__quorum_opts o = qf_opts(1, 0, 5000);
    char before[4096];
    char after[4096];
    for (int op = 0; op < 4; op++) {
        for (long n = 0;; n++) {
            ftc__quorum_state s;
            TK_OK(ftc__quorum_state_init(&s, 0));
            /* 16 entries fill the first capacity of both tables. */
            for (int i = 0; i < 16; i++) {
                char id[8];
                snprintf(id, sizeof(id), "r%02d", i);
                qf_join(&s, &o, id, i % 3, false, 0, QF_NOW);
            }
            char data[] = "d";
            ftc__quorum_member m = qf_member("new", 1);
            m.data = data;
            m.data_len = 1;
            ftc__quorum_decision d;
            ftc__quorum_tick_result t;
            snapshot(&s, before, sizeof(before));
            ftc__alloc_fail_after(n);
            int rc = op == 0   ? ftc__quorum_join(&s, &o, &m, QF_NOW)
                     : op == 1 ? ftc__quorum_heartbeat(&s, &o, "hb", QF_NOW)
                     : op == 2 ? ftc__quorum_compute(QF_NOW, &s, &o, &d)
                               : ftc__quorum_tick(&s, &o, QF_NOW, 0, &t);
            ftc__alloc_fail_after(-1);
            if (rc == 0) {
                if (op == 2) {
                    assert_true(d.met);
                    ftc__quorum_decision_fini(&d);
                }
                if (op == 3) {
                    assert_true(t.met);
                    assert_int_equal(s.prev.n, 16);
                }
                ftc__quorum_state_fini(&s);
                break;
            }
            TK_EXPECT(rc, FTC_ENOMEM);
            if (op == 2) {
                assert_null(d.member_idx);
            }
            snapshot(&s, after, sizeof(after));
            assert_string_equal(before, after);
            ftc__quorum_state_fini(&s);
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opts_are_checked),
        cmocka_unit_test(member_strings_are_bounded),
        cmocka_unit_test(bad_joins_change_nothing),
        cmocka_unit_test(tables_stay_sorted_and_rejoin_replaces),
        cmocka_unit_test(data_travels_into_the_quorum),
        cmocka_unit_test(limits_bound_both_tables),
        cmocka_unit_test(prune_drops_only_old_heartbeats),
        cmocka_unit_test(forget_drops_both_entries_and_health),
        cmocka_unit_test(allocation_failures_change_nothing),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
