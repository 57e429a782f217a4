/* Builders shared by the quorum core's tests (see quorum_kit.h). */
#include "quorum_kit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ft/lighthouse/lighthouse_json.h"
#include "testkit.h"

ftc__quorum_member qf_member(const char *id, int64_t step)
{
    char addr[FTC__QUORUM_STR_MAX];
    char store[FTC__QUORUM_STR_MAX];
    snprintf(addr, sizeof(addr), "addr_%s", id);
    snprintf(store, sizeof(store), "store_%s", id);
    ftc__quorum_member m;
    TK_OK(ftc__quorum_member_set(&m, id, addr, store));
    m.step = step;
    m.world_size = 1;
    return m;
}

void qf_join(ftc__quorum_state *s, const ftc__quorum_opts *o, const char *id,
             int64_t step, bool shrink_only, int64_t commit_failures,
             int64_t now)
{
    ftc__quorum_member m = qf_member(id, step);
    m.shrink_only = shrink_only;
    m.commit_failures = commit_failures;
    TK_OK(ftc__quorum_join(s, o, &m, now));
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const ftc__quorum_member *)a)->replica_id,
                  ((const ftc__quorum_member *)b)->replica_id);
}

void qf_set_prev(ftc__quorum_state *s, int64_t quorum_id,
                 const char *const *ids, size_t n)
{
    int64_t steps[64];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++) {
        steps[i] = 1;
    }
    ftc__quorum_fini(&s->prev);
    ftc__free(s->prev_gone); /* as if none of the new prev left */
    s->prev_gone = NULL;
    ftc__free(s->prev_granted); /* nor was granted anything */
    s->prev_granted = NULL;
    qf_quorum(&s->prev, quorum_id, ids, steps, n);
    /* The state keeps its previous quorum sorted, as a tick makes it. */
    qsort(s->prev.members, n, sizeof(*s->prev.members), by_id);
    s->has_prev = true;
    s->epoch = ftc__quorum_id_epoch(quorum_id);
    s->counter = ftc__quorum_id_counter(quorum_id);
}

ftc__quorum_opts qf_opts(uint64_t min_replicas, int64_t join_timeout_ms,
                         int64_t heartbeat_timeout_ms)
{
    ftc__quorum_opts o;
    ftc__quorum_opts_init(&o);
    o.min_replicas = min_replicas;
    o.join_timeout_ms = join_timeout_ms;
    o.heartbeat_timeout_ms = heartbeat_timeout_ms;
    TK_OK(ftc__quorum_opts_check(&o));
    return o;
}

size_t qf_participant(const ftc__quorum_state *s, const char *id)
{
    for (size_t i = 0; i < s->n_participants; i++) {
        if (strcmp(s->participants[i].member.replica_id, id) == 0) {
            return i;
        }
    }
    fail_msg("%s is not a participant", id);
    return 0;
}

void qf_quorum(ftc__quorum *q, int64_t quorum_id, const char *const *ids,
               const int64_t *steps, size_t n)
{
    ftc__quorum_init(q);
    q->quorum_id = quorum_id;
    q->members = ftc__calloc(n, sizeof(*q->members));
    assert_non_null(q->members);
    for (size_t i = 0; i < n; i++) {
        q->members[i] = qf_member(ids[i], steps[i]);
    }
    q->n = n;
}

static void expect_same_results(const ftc__quorum_result *a,
                                const ftc__quorum_result *b)
{
    assert_int_equal(a->quorum_id, b->quorum_id);
    assert_int_equal(a->replica_rank, b->replica_rank);
    assert_int_equal(a->replica_world_size, b->replica_world_size);
    assert_string_equal(a->recover_src_manager_address,
                        b->recover_src_manager_address);
    assert_int_equal(a->recover_src_replica_rank, b->recover_src_replica_rank);
    assert_int_equal(a->n_recover_dst, b->n_recover_dst);
    for (size_t i = 0; i < a->n_recover_dst; i++) {
        assert_int_equal(a->recover_dst_replica_ranks[i],
                         b->recover_dst_replica_ranks[i]);
    }
    assert_string_equal(a->store_address, b->store_address);
    assert_int_equal(a->max_step, b->max_step);
    assert_int_equal(a->max_replica_rank, b->max_replica_rank);
    assert_int_equal(a->max_world_size, b->max_world_size);
    assert_int_equal(a->heal, b->heal);
    assert_int_equal(a->commit_failures, b->commit_failures);
    for (int64_t i = 0; i < a->replica_world_size; i++) {
        assert_string_equal(a->replica_ids[i], b->replica_ids[i]);
    }
}

json_t *qf_through_text(json_t *j)
{
    assert_non_null(j);
    char *text;
    size_t len;
    TK_OK(ftc__lhj_dump(j, &text, &len));
    json_decref(j);
    TK_OK(ftc__lhj_parse_object(text, len, &j));
    ftc__free(text);
    return j;
}

void qf_check_compact(const ftc__quorum *q)
{
    const int64_t roster = ((int64_t)7 << 32) | 3;
    json_t *j = qf_through_text(ftc__lhj_compact_json(q, roster));
    /* The roster as a client kept it from an earlier round. */
    ftc__quorum held;
    TK_OK(ftc__quorum_copy(&held, q));
    held.quorum_id = 1;
    for (size_t i = 0; i < held.n; i++) {
        held.members[i].step = 999 + (int64_t)i;
        held.members[i].commit_failures = 5;
        held.members[i].shrink_only = true;
    }
    assert_true(ftc__quorum_same_roster(&held, q));
    TK_EXPECT(ftc__lhj_compact_apply(j, roster + 1, &held), FTC_ESTALE);
    TK_OK(ftc__lhj_compact_apply(j, roster, &held));
    json_decref(j);
    assert_int_equal(held.quorum_id, q->quorum_id);
    assert_int_equal(held.created_wall_ms, q->created_wall_ms);
    for (size_t i = 0; i < q->n; i++) {
        assert_int_equal(held.members[i].step, q->members[i].step);
        assert_int_equal(held.members[i].commit_failures,
                         q->members[i].commit_failures);
        assert_int_equal(held.members[i].shrink_only,
                         q->members[i].shrink_only);
    }
    for (size_t i = 0; i < q->n; i++) {
        for (int64_t g = 0; g < 3; g++) {
            for (int sync = 0; sync < 2; sync++) {
                ftc__quorum_result a, b;
                int rc = ftc__quorum_results(q, q->members[i].replica_id, g,
                                             sync, &a);
                TK_EXPECT(ftc__quorum_results(&held, q->members[i].replica_id,
                                              g, sync, &b),
                          rc);
                if (rc == 0) {
                    expect_same_results(&a, &b);
                    ftc__quorum_result_fini(&a);
                    ftc__quorum_result_fini(&b);
                }
            }
        }
    }
    ftc__quorum_fini(&held);
}
