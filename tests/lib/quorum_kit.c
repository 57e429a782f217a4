/* Builders shared by the quorum core's tests (see quorum_kit.h). */
#include "quorum_kit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
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
