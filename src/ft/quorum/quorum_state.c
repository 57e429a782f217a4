/* A job's lighthouse state: heartbeats and participants in tables sorted by
 * replica_id, bounded by the options, plus the epoch of its quorum ids. */
#include <string.h>

#include "base/base_int.h"
#include "ft/quorum/quorum_int.h"

void ftc__quorum_opts_init(ftc__quorum_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->min_replicas = 1;
    o->join_timeout_ms = 60000;
    o->heartbeat_timeout_ms = 5000;
    o->max_replicas = 4096;
    o->max_data_bytes = 65536;
    o->strict_shrink_only = false;
}

int ftc__quorum_opts_check(const ftc__quorum_opts *o)
{
    if (o->join_timeout_ms < 0 || o->heartbeat_timeout_ms < 0 ||
        o->rollback_after_ms < 0 || o->exclude_ms < 0) {
        return ftc__seterr(
            FTC_EINVAL,
            "quorum opts: join_timeout_ms %lld, "
            "heartbeat_timeout_ms %lld, rollback_after_ms "
            "%lld and exclude_ms %lld must be >= 0",
            (long long)o->join_timeout_ms, (long long)o->heartbeat_timeout_ms,
            (long long)o->rollback_after_ms, (long long)o->exclude_ms);
    }
    if (o->max_replicas == 0 ||
        o->max_replicas > FTC__QUORUM_MAX_REPLICAS_CEIL) {
        return ftc__seterr(FTC_EINVAL,
                           "quorum opts: max_replicas %u not in [1, %u]",
                           o->max_replicas, FTC__QUORUM_MAX_REPLICAS_CEIL);
    }
    if (o->max_data_bytes > FTC__QUORUM_MAX_DATA_CEIL) {
        return ftc__seterr(FTC_EINVAL, "quorum opts: max_data_bytes %u > %u",
                           o->max_data_bytes, FTC__QUORUM_MAX_DATA_CEIL);
    }
    return 0;
}

int ftc__quorum_state_init(ftc__quorum_state *s, uint32_t epoch)
{
    if (epoch > FTC__QUORUM_EPOCH_MAX) {
        return ftc__seterr(FTC_EINVAL, "quorum epoch %u > %u", epoch,
                           FTC__QUORUM_EPOCH_MAX);
    }
    memset(s, 0, sizeof(*s));
    ftc__quorum_init(&s->prev);
    s->epoch = epoch;
    return 0;
}

void ftc__quorum_state_fini(ftc__quorum_state *s)
{
    for (size_t i = 0; i < s->n_participants; i++) {
        ftc__quorum_member_fini(&s->participants[i].member);
    }
    ftc__free(s->participants);
    ftc__free(s->heartbeats);
    ftc__free(s->dropped);
    ftc__free(s->excluded);
    ftc__free(s->prev_gone);
    ftc__free(s->prev_granted);
    ftc__quorum_fini(&s->prev);
    memset(s, 0, sizeof(*s));
}

uint32_t ftc__quorum_epoch_from_random(uint64_t random_bits)
{
    return (uint32_t)(random_bits % FTC__QUORUM_EPOCH_MAX) + 1;
}

int64_t ftc__quorum_state_id(const ftc__quorum_state *s)
{
    return (int64_t)(((uint64_t)s->epoch << 32) | s->counter);
}

uint32_t ftc__quorum_id_epoch(int64_t quorum_id)
{
    return (uint32_t)((uint64_t)quorum_id >> 32);
}

uint32_t ftc__quorum_id_counter(int64_t quorum_id)
{
    return (uint32_t)((uint64_t)quorum_id & 0xffffffffu);
}

/* Makes room for one more element in a table, doubling its capacity. */
static int reserve_one(void **table, size_t *cap, size_t n, size_t elem,
                       const char *what)
{
    if (n < *cap) {
        return 0;
    }
    size_t want = *cap == 0 ? 16 : *cap * 2;
    void *p = ftc__realloc(*table, want * elem);
    if (p == NULL) {
        return ftc__seterr(FTC_ENOMEM, "quorum state: %zu %s", want, what);
    }
    *table = p;
    *cap = want;
    return 0;
}

size_t ftc__quorum_prune_heartbeats(ftc__quorum_state *s, int64_t now_ms,
                                    int64_t older_than_ms)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n_heartbeats; i++) {
        if (ftc__quorum_elapsed_ms(now_ms, s->heartbeats[i].last_ms) <
            older_than_ms) {
            s->heartbeats[kept++] = s->heartbeats[i];
        }
    }
    size_t dropped = s->n_heartbeats - kept;
    s->n_heartbeats = kept;
    if (dropped > 0) {
        s->hint.valid = false;
    }
    return dropped;
}

int ftc__quorum_heartbeat(ftc__quorum_state *s, const ftc__quorum_opts *o,
                          const char *replica_id, int64_t now_ms)
{
    int rc = ftc__quorum_check_id(replica_id, "heartbeat");
    if (rc != 0) {
        return rc;
    }
    bool found;
    size_t i =
        ftc__quorum_lower_bound(s->heartbeats, s->n_heartbeats,
                                sizeof(*s->heartbeats), replica_id, &found);
    if (found) {
        /* A replica that was healthy stays one: no count moves. */
        if (ftc__quorum_elapsed_ms(now_ms, s->heartbeats[i].last_ms) >=
            o->heartbeat_timeout_ms) {
            s->hint.valid = false;
        }
        s->heartbeats[i].last_ms = now_ms;
        return 0;
    }
    s->hint.valid = false;
    if (s->n_heartbeats >= o->max_replicas) {
        /* Expired entries decide nothing, so dropping them is invisible;
         * the table is at capacity, so no allocation follows. */
        ftc__quorum_prune_heartbeats(s, now_ms, o->heartbeat_timeout_ms);
        if (s->n_heartbeats >= o->max_replicas) {
            return ftc__seterr(FTC_EMSGSIZE,
                               "heartbeat of %s: %u live replicas already",
                               replica_id, o->max_replicas);
        }
        i = ftc__quorum_lower_bound(s->heartbeats, s->n_heartbeats,
                                    sizeof(*s->heartbeats), replica_id, &found);
    }
    rc = reserve_one((void **)&s->heartbeats, &s->cap_heartbeats,
                     s->n_heartbeats, sizeof(*s->heartbeats), "heartbeats");
    if (rc != 0) {
        return rc;
    }
    memmove(&s->heartbeats[i + 1], &s->heartbeats[i],
            (s->n_heartbeats - i) * sizeof(*s->heartbeats));
    ftc__quorum_heartbeat_record *h = &s->heartbeats[i];
    memset(h->replica_id, 0, sizeof(h->replica_id));
    memcpy(h->replica_id, replica_id, strlen(replica_id) + 1);
    h->last_ms = now_ms;
    s->n_heartbeats++;
    return 0;
}

/* The suspects buffer holds exactly n_suspects ids, each a valid one. */
static int check_suspects(const ftc__quorum_member *m)
{
    size_t at = 0;
    uint32_t n = 0;
    bool ok = m->n_suspects <= FTC__QUORUM_SUSPECTS_MAX &&
              (m->suspects != NULL || m->suspects_len == 0);
    while (ok && at < m->suspects_len) {
        size_t len = strnlen(m->suspects + at, m->suspects_len - at);
        ok = len > 0 && len < FTC__QUORUM_STR_MAX && at + len < m->suspects_len;
        at += len + 1;
        n++;
    }
    if (!ok || n != m->n_suspects) {
        return ftc__seterr(FTC_EINVAL,
                           "join of %s: %u suspects in %zu B are not that "
                           "many replica ids",
                           m->replica_id, m->n_suspects, m->suspects_len);
    }
    return 0;
}

/* Every field of a member received from outside, before anything is kept. */
static int check_member(const ftc__quorum_opts *o, const ftc__quorum_member *m)
{
    int rc = ftc__quorum_check_id(m->replica_id, "join");
    if (rc != 0) {
        return rc;
    }
    if (memchr(m->address, '\0', sizeof(m->address)) == NULL ||
        memchr(m->store_address, '\0', sizeof(m->store_address)) == NULL) {
        return ftc__seterr(FTC_EINVAL,
                           "join of %s: address or store_address is not a "
                           "string",
                           m->replica_id);
    }
    if (m->step < 0 || m->commit_failures < 0) {
        return ftc__seterr(FTC_EINVAL,
                           "join of %s: step %lld and commit_failures %lld "
                           "must be >= 0",
                           m->replica_id, (long long)m->step,
                           (long long)m->commit_failures);
    }
    if (m->data_len > 0 && m->data == NULL) {
        return ftc__seterr(FTC_EINVAL, "join of %s: %zu B of data at NULL",
                           m->replica_id, m->data_len);
    }
    if (m->data_len > o->max_data_bytes) {
        return ftc__seterr(FTC_EMSGSIZE, "join of %s: data %zu B > max %u B",
                           m->replica_id, m->data_len, o->max_data_bytes);
    }
    return check_suspects(m);
}

/* The hint after a join of m (not a participant before unless found): one
 * more healthy participant, one more healthy replica if it was not one,
 * one fewer missing member if it was in the previous quorum. A replaced
 * request, shrink_only or other rules than it was counted under drop it. */
static void count_join(ftc__quorum_state *s, const ftc__quorum_opts *o,
                       const ftc__quorum_hint *before,
                       const ftc__quorum_member *m, bool found,
                       bool was_healthy, int64_t now_ms)
{
    ftc__quorum_hint h = *before;
    /* Reports and replicas left out as unreachable change who counts. */
    if (!h.valid || found || m->shrink_only || m->n_suspects > 0 ||
        ftc__quorum_has_exclusion(s, m->replica_id) ||
        !ftc__quorum_same_rules(&h.opts, o)) {
        s->hint.valid = false;
        return;
    }
    h.healthy_participants++;
    h.healthy_replicas += !was_healthy;
    if (h.has_prev && ftc__quorum_find(&s->prev, m->replica_id) >= 0) {
        h.missing--;
    }
    h.first_joined = now_ms < h.first_joined ? now_ms : h.first_joined;
    /* Its heartbeat now expires too, and a straggler wait may start. */
    int64_t expiry = ftc__quorum_add_ms(now_ms, h.opts.heartbeat_timeout_ms);
    int64_t wait = ftc__quorum_add_ms(h.first_joined, h.opts.join_timeout_ms);
    h.until_ms = expiry < h.until_ms ? expiry : h.until_ms;
    h.until_ms = wait < h.until_ms ? wait : h.until_ms;
    s->hint = h;
}

int ftc__quorum_join(ftc__quorum_state *s, const ftc__quorum_opts *o,
                     const ftc__quorum_member *m, int64_t now_ms)
{
    int rc = check_member(o, m);
    if (rc != 0) {
        return rc;
    }
    if (s->mark.finished && m->step < s->mark.step) {
        return ftc__seterr(FTC_EFINISHED,
                           "the job finished at step %lld (its replicas "
                           "said so as they left) and %s is at step %lld: "
                           "nothing is left for it to train; a new run "
                           "needs another job name, or the job deleted "
                           "(DELETE /v1/jobs/{job})",
                           (long long)s->mark.step, m->replica_id,
                           (long long)m->step);
    }
    bool found;
    size_t i = ftc__quorum_lower_bound(s->participants, s->n_participants,
                                       sizeof(*s->participants), m->replica_id,
                                       &found);
    if (!found && s->n_participants >= o->max_replicas) {
        return ftc__seterr(FTC_EMSGSIZE, "join of %s: %u participants already",
                           m->replica_id, o->max_replicas);
    }
    /* The hint as it was, and what the implicit heartbeat will change. */
    ftc__quorum_hint hint = s->hint;
    bool was_healthy = ftc__quorum_is_healthy(s, o, m->replica_id, now_ms);
    ftc__quorum_member copy;
    rc = ftc__quorum_member_copy(&copy, m);
    if (rc == 0 && !found) {
        rc = reserve_one((void **)&s->participants, &s->cap_participants,
                         s->n_participants, sizeof(*s->participants),
                         "participants");
    }
    /* The implicit heartbeat is the last step that can fail; a grown
     * capacity is all an earlier failure leaves behind. */
    if (rc == 0) {
        rc = ftc__quorum_heartbeat(s, o, m->replica_id, now_ms);
    }
    if (rc != 0) {
        ftc__quorum_member_fini(&copy);
        s->hint = hint;
        return rc;
    }
    count_join(s, o, &hint, m, found, was_healthy, now_ms);
    if (found) {
        ftc__quorum_member_fini(&s->participants[i].member);
    } else {
        memmove(&s->participants[i + 1], &s->participants[i],
                (s->n_participants - i) * sizeof(*s->participants));
        s->n_participants++;
    }
    s->participants[i].member = copy;
    s->participants[i].joined_ms = now_ms;
    return 0;
}

/* Where replica_id is in a table, if it is; NULL ids are in none. */
static bool find_in(const void *table, size_t n, size_t stride,
                    const char *replica_id, size_t *at)
{
    bool found = false;
    if (replica_id != NULL) {
        *at = ftc__quorum_lower_bound(table, n, stride, replica_id, &found);
    }
    return found;
}

static void remove_participant(ftc__quorum_state *s, size_t i)
{
    ftc__quorum_member_fini(&s->participants[i].member);
    memmove(&s->participants[i], &s->participants[i + 1],
            (s->n_participants - i - 1) * sizeof(*s->participants));
    s->n_participants--;
}

int ftc__quorum_leave(ftc__quorum_state *s, const char *replica_id)
{
    size_t i;
    if (!find_in(s->participants, s->n_participants, sizeof(*s->participants),
                 replica_id, &i)) {
        return ftc__seterr(FTC_ENOENT, "leave: %s is not a participant",
                           replica_id == NULL ? "(null)" : replica_id);
    }
    remove_participant(s, i);
    s->hint.valid = false;
    return 0;
}

int ftc__quorum_forget(ftc__quorum_state *s, const char *replica_id)
{
    size_t p, h;
    bool was_participant = find_in(s->participants, s->n_participants,
                                   sizeof(*s->participants), replica_id, &p);
    bool had_heartbeat = find_in(s->heartbeats, s->n_heartbeats,
                                 sizeof(*s->heartbeats), replica_id, &h);
    bool was_dropped =
        replica_id != NULL && ftc__quorum_dropped_remove(s, replica_id);
    long in_prev = replica_id != NULL && s->prev_gone != NULL
                       ? ftc__quorum_find(&s->prev, replica_id)
                       : -1;
    if (!was_participant && !had_heartbeat && !was_dropped) {
        return ftc__seterr(FTC_ENOENT, "forget: %s is not known",
                           replica_id == NULL ? "(null)" : replica_id);
    }
    s->hint.valid = false;
    if (in_prev >= 0) {
        s->prev_gone[in_prev] = true; /* left: never dropped, never back */
    }
    if (was_participant) {
        remove_participant(s, p);
    }
    if (had_heartbeat) {
        memmove(&s->heartbeats[h], &s->heartbeats[h + 1],
                (s->n_heartbeats - h - 1) * sizeof(*s->heartbeats));
        s->n_heartbeats--;
    }
    return 0;
}

bool ftc__quorum_is_healthy(const ftc__quorum_state *s,
                            const ftc__quorum_opts *o, const char *replica_id,
                            int64_t now_ms)
{
    size_t i;
    return find_in(s->heartbeats, s->n_heartbeats, sizeof(*s->heartbeats),
                   replica_id, &i) &&
           ftc__quorum_elapsed_ms(now_ms, s->heartbeats[i].last_ms) <
               o->heartbeat_timeout_ms;
}

int64_t ftc__quorum_healthy_until(const ftc__quorum_state *s,
                                  const ftc__quorum_opts *o,
                                  const char *replica_id)
{
    size_t i;
    if (!find_in(s->heartbeats, s->n_heartbeats, sizeof(*s->heartbeats),
                 replica_id, &i)) {
        return INT64_MIN;
    }
    return ftc__quorum_add_ms(s->heartbeats[i].last_ms,
                              o->heartbeat_timeout_ms);
}
