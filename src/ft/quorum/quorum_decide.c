/* torchft's lighthouse decision (quorum_compute) and what forming a quorum
 * does to the state (_quorum_tick): the quorum id rule and re-queueing. */
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/quorum/quorum_int.h"

static int64_t min_ms(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Collects the healthy participants (their heartbeat is younger than the
 * timeout) into idx, in replica_id order, and counts healthy replicas. Both
 * tables are sorted, so one merge pass matches them. Also finds when the
 * first healthy heartbeat expires and the earliest healthy join. */
static void find_healthy(const ftc__quorum_state *s, const ftc__quorum_opts *o,
                         int64_t now, uint32_t *idx, ftc__quorum_decision *d,
                         int64_t *first_joined)
{
    size_t p = 0;
    *first_joined = INT64_MAX;
    for (size_t h = 0; h < s->n_heartbeats; h++) {
        const ftc__quorum_heartbeat_record *hb = &s->heartbeats[h];
        if (ftc__quorum_elapsed_ms(now, hb->last_ms) >=
            o->heartbeat_timeout_ms) {
            continue;
        }
        d->healthy_replicas++;
        d->next_ms =
            min_ms(d->next_ms,
                   ftc__quorum_add_ms(hb->last_ms, o->heartbeat_timeout_ms));
        while (p < s->n_participants &&
               strcmp(s->participants[p].member.replica_id, hb->replica_id) <
                   0) {
            p++;
        }
        if (p < s->n_participants &&
            strcmp(s->participants[p].member.replica_id, hb->replica_id) == 0) {
            const ftc__quorum_participant *part = &s->participants[p];
            idx[d->healthy_participants++] = (uint32_t)p;
            d->shrink_only = d->shrink_only || part->member.shrink_only;
            *first_joined = min_ms(*first_joined, part->joined_ms);
        }
    }
}

/* The members of the previous quorum that are not healthy participants
 * (torchft's fast quorum: none). Both lists are sorted by replica_id. */
static size_t count_missing(const ftc__quorum_state *s, const uint32_t *idx,
                            size_t n)
{
    size_t j = 0, missing = 0;
    for (size_t i = 0; i < s->prev.n; i++) {
        const char *id = s->prev.members[i].replica_id;
        while (j < n &&
               strcmp(s->participants[idx[j]].member.replica_id, id) < 0) {
            j++;
        }
        missing += j == n ||
                   strcmp(s->participants[idx[j]].member.replica_id, id) != 0;
    }
    return missing;
}

/* shrink_only: only members of the previous quorum may stay. */
static size_t keep_previous_members(const ftc__quorum_state *s, uint32_t *idx,
                                    size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (ftc__quorum_find(&s->prev,
                             s->participants[idx[i]].member.replica_id) >= 0) {
            idx[kept++] = idx[i];
        }
    }
    return kept;
}

/* Healthy replicas that are neither participants nor left out. */
static size_t stragglers(const ftc__quorum_decision *d)
{
    return d->healthy_replicas - d->healthy_participants - d->waiting_excluded;
}

/* Appends " [N left out as unreachable: a, b, ...]" when some were. */
static void say_excluded(const ftc__quorum_state *s,
                         const ftc__quorum_decision *d, char *r, size_t cap)
{
    size_t out = d->n_excluded + d->waiting_excluded;
    size_t len = strlen(r);
    if (out == 0 || len >= cap) {
        return;
    }
    len += (size_t)snprintf(r + len, cap - len, " [%zu left out as unreachable",
                            out);
    for (size_t i = 0; i < d->n_excluded && i < 2 && len < cap; i++) {
        len += (size_t)snprintf(
            r + len, cap - len, "%s%s", i == 0 ? ": " : ", ",
            s->participants[d->excluded_idx[i]].member.replica_id);
    }
    if (len < cap) {
        snprintf(r + len, cap - len, "%s]", d->n_excluded > 2 ? ", ..." : "");
    }
}

/* Sets the verdict and torchft's reason text, which ends with the metadata
 * "[hp/p participants healthy][hr heartbeating][shrink_only=b]". */
static void say(const ftc__quorum_state *s, ftc__quorum_decision *d,
                ftc__quorum_verdict v, size_t counted, uint64_t min_replicas)
{
    char meta[128];
    snprintf(meta, sizeof(meta),
             "[%zu/%zu participants healthy][%zu heartbeating]"
             "[shrink_only=%s]",
             d->healthy_participants, d->participants, d->healthy_replicas,
             d->shrink_only ? "true" : "false");
    d->verdict = v;
    d->met = v == FTC__QUORUM_FAST || v == FTC__QUORUM_VALID;
    char *r = d->reason;
    size_t cap = sizeof(d->reason);
    switch (v) {
    case FTC__QUORUM_FAST:
        snprintf(r, cap, "Fast quorum found! %s", meta);
        break;
    case FTC__QUORUM_NEED_MIN:
        snprintf(r, cap,
                 "New quorum not ready, only have %zu participants, need "
                 "min_replicas %llu %s",
                 counted, (unsigned long long)min_replicas, meta);
        break;
    case FTC__QUORUM_NEED_HALF:
        snprintf(r, cap,
                 "New quorum not ready, only have %zu participants, need at "
                 "least half of %zu healthy workers %s",
                 counted, d->healthy_replicas, meta);
        break;
    case FTC__QUORUM_WAIT_STRAGGLER:
        snprintf(r, cap,
                 "Valid quorum with %zu participants, waiting for %zu "
                 "healthy but not participating stragglers due to join "
                 "timeout %s",
                 d->healthy_participants, stragglers(d), meta);
        break;
    case FTC__QUORUM_VALID:
        snprintf(r, cap, "Valid quorum found %s", meta);
        break;
    case FTC__QUORUM_NONE_LEFT:
        snprintf(r, cap,
                 "New quorum not ready, shrink_only leaves no member of the "
                 "previous quorum %s",
                 meta);
        break;
    case FTC__QUORUM_BEHIND:
        snprintf(r, cap,
                 d->finished
                     ? "New quorum not ready, its members reached step %lld "
                       "but the job finished at step %lld %s"
                     : "New quorum not ready, its members reached step %lld "
                       "but step %lld was committed in this job: waiting "
                       "for a replica that has it %s",
                 (long long)d->members_step, (long long)d->mark_step, meta);
        break;
    }
    say_excluded(s, d, r, cap);
}

/* The participant entry of replica_id, or NULL. */
static const ftc__quorum_member *participant(const ftc__quorum_state *s,
                                             const char *replica_id)
{
    bool found;
    size_t i =
        ftc__quorum_lower_bound(s->participants, s->n_participants,
                                sizeof(*s->participants), replica_id, &found);
    return found ? &s->participants[i].member : NULL;
}

/* The last time a replica at the mark was heard: the mark's own stamp, or
 * a heartbeat of a member of the last quorum that had the step (or was
 * granted a commit of it) and still has it (its heartbeat is the
 * manager's, alive through a long local phase of DiLoCo; one that now
 * asks to join below the step has it no more). */
static int64_t mark_heard_ms(const ftc__quorum_state *s)
{
    int64_t heard = s->mark.heard_ms;
    for (size_t i = 0; i < s->prev.n; i++) {
        const ftc__quorum_member *m = &s->prev.members[i];
        const ftc__quorum_member *now = participant(s, m->replica_id);
        int64_t had = s->prev_granted != NULL && s->prev_granted[i] > m->step
                          ? s->prev_granted[i]
                          : m->step;
        if (had < s->mark.step || (now != NULL && now->step < s->mark.step)) {
            continue;
        }
        bool found;
        size_t h = ftc__quorum_lower_bound(s->heartbeats, s->n_heartbeats,
                                           sizeof(*s->heartbeats),
                                           m->replica_id, &found);
        if (found && s->heartbeats[h].last_ms > heard) {
            heard = s->heartbeats[h].last_ms;
        }
    }
    return heard;
}

/* A member of the last quorum that asks to join below the step it had
 * there restored an older checkpoint (ftc_manager_set_step): a rollback
 * on purpose, not a laggard. */
static bool rolled_back_on_purpose(const ftc__quorum_state *s,
                                   const ftc__quorum_member *m)
{
    long i = ftc__quorum_find(&s->prev, m->replica_id);
    return i >= 0 && s->prev.members[i].step > m->step;
}

static bool say_behind(ftc__quorum_decision *d, const ftc__quorum_state *s,
                       const ftc__quorum_opts *o, int64_t top)
{
    d->members_step = top;
    d->mark_step = s->mark.step;
    d->finished = s->mark.finished;
    say(s, d, FTC__QUORUM_BEHIND, d->n_members, o->min_replicas);
    return true;
}

/* The committed high-water mark: members that are all below it would
 * commit again steps another quorum committed (a group dropped, then woken
 * after the others went on). They wait for a replica that has the step,
 * or until none was heard for o->rollback_after_ms; below a finished job's
 * last step nothing forms at all. */
static bool behind(int64_t now, const ftc__quorum_state *s,
                   const ftc__quorum_opts *o, ftc__quorum_decision *d)
{
    int64_t top = 0;
    for (size_t i = 0; i < d->n_members; i++) {
        int64_t step = s->participants[d->member_idx[i]].member.step;
        top = step > top ? step : top;
    }
    if (top >= s->mark.step) {
        return false;
    }
    if (s->mark.finished) {
        return say_behind(d, s, o, top);
    }
    /* Replicas new to the job (a new run, restarted processes) start from
     * their own state, as does a deliberate rollback: only a replica back
     * from an earlier quorum at its old step is behind. */
    bool back = false;
    for (size_t i = 0; i < d->n_members; i++) {
        const ftc__quorum_member *m = &s->participants[d->member_idx[i]].member;
        if (rolled_back_on_purpose(s, m)) {
            return false;
        }
        back = back || ftc__quorum_was_member(s, m->replica_id);
    }
    if (!back) {
        return false;
    }
    int64_t heard = mark_heard_ms(s);
    if (ftc__quorum_elapsed_ms(now, heard) >= o->rollback_after_ms) {
        return false;
    }
    d->next_ms =
        min_ms(d->next_ms, ftc__quorum_add_ms(heard, o->rollback_after_ms));
    return say_behind(d, s, o, top);
}

/* The rules in torchft's order, on the healthy participants in idx less
 * those left out as unreachable (the members). */
static void decide(int64_t now, const ftc__quorum_state *s,
                   const ftc__quorum_opts *o, ftc__quorum_decision *d,
                   int64_t first_joined)
{
    size_t hp = d->healthy_participants;
    size_t hr = d->healthy_replicas;
    size_t available = d->n_members;
    bool fast = false;
    if (s->has_prev) {
        d->missing_previous = count_missing(s, d->member_idx, available);
        fast = d->missing_previous == 0;
        if (d->shrink_only) {
            d->n_members = keep_previous_members(s, d->member_idx, available);
        }
    }
    /* torchft counts every healthy participant even when shrink_only will
     * return fewer; strict_shrink_only counts what is returned. Neither
     * counts those left out as unreachable. */
    size_t counted = o->strict_shrink_only ? d->n_members : available;
    /* A fast quorum also needs min_replicas: torchft never checks it there
     * because its min_replicas cannot change, but an operator who raises it
     * (PUT /v1/jobs/{job}) means the next quorum. */
    if (fast && counted >= o->min_replicas) {
        if (!behind(now, s, o, d)) {
            say(s, d, FTC__QUORUM_FAST, hp, o->min_replicas);
        }
        return;
    }
    if (counted < o->min_replicas) {
        say(s, d, FTC__QUORUM_NEED_MIN, counted, o->min_replicas);
        return;
    }
    /* Split-brain guard: more than half of the live replicas, those left
     * out as unreachable included. */
    if (counted <= hr / 2) {
        say(s, d, FTC__QUORUM_NEED_HALF, counted, o->min_replicas);
        return;
    }
    if (stragglers(d) > 0 &&
        ftc__quorum_elapsed_ms(now, first_joined) < o->join_timeout_ms) {
        d->next_ms = min_ms(
            d->next_ms, ftc__quorum_add_ms(first_joined, o->join_timeout_ms));
        say(s, d, FTC__QUORUM_WAIT_STRAGGLER, hp, o->min_replicas);
        return;
    }
    /* torchft would return an empty quorum here, after which any single
     * joiner forms a "fast" quorum alone; ftc waits instead. */
    if (d->n_members == 0) {
        say(s, d, FTC__QUORUM_NONE_LEFT, hp, o->min_replicas);
    } else if (!behind(now, s, o, d)) {
        say(s, d, FTC__QUORUM_VALID, hp, o->min_replicas);
    }
}

/* The earliest join among the members (those left out do not start the
 * straggler wait). */
static int64_t members_first_joined(const ftc__quorum_state *s,
                                    const ftc__quorum_decision *d)
{
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < d->n_members; i++) {
        first = min_ms(first, s->participants[d->member_idx[i]].joined_ms);
    }
    return first;
}

static int compute(int64_t now_ms, const ftc__quorum_state *s,
                   const ftc__quorum_opts *o, bool reports,
                   ftc__quorum_decision *out)
{
    memset(out, 0, sizeof(*out));
    out->next_ms = INT64_MAX;
    out->participants = s->n_participants;
    if (s->n_participants > 0) {
        out->member_idx =
            ftc__malloc(s->n_participants * sizeof(*out->member_idx));
        if (out->member_idx == NULL) {
            return ftc__seterr(FTC_ENOMEM, "quorum compute: %zu participants",
                               s->n_participants);
        }
    }
    find_healthy(s, o, now_ms, out->member_idx, out, &out->first_joined);
    out->n_members = out->healthy_participants;
    int rc = ftc__quorum_exclude_pick(now_ms, s, o, reports, out);
    if (rc != 0) {
        ftc__quorum_decision_fini(out);
        return rc;
    }
    if (out->n_excluded > 0) {
        out->first_joined = members_first_joined(s, out);
    }
    decide(now_ms, s, o, out, out->first_joined);
    if (!out->met) {
        ftc__free(out->member_idx);
        out->member_idx = NULL;
        out->n_members = 0;
    }
    return 0;
}

int ftc__quorum_compute(int64_t now_ms, const ftc__quorum_state *s,
                        const ftc__quorum_opts *o, ftc__quorum_decision *out)
{
    int rc = compute(now_ms, s, o, true, out);
    bool too_few = out->verdict == FTC__QUORUM_NEED_MIN ||
                   out->verdict == FTC__QUORUM_NEED_HALF ||
                   out->verdict == FTC__QUORUM_NONE_LEFT;
    if (rc != 0 || out->met || !too_few || out->n_newly == 0 ||
        stragglers(out) > 0) {
        return rc;
    }
    /* Leaving groups out only serves to let the others go on: when every
     * group expected has joined and the reports leave too few for a
     * quorum (two groups cut apart), decide without them, so that the job
     * is where it was without reports and goes on as soon as the network
     * heals. Groups still out from an earlier quorum stay out. */
    ftc__quorum_decision_fini(out);
    rc = compute(now_ms, s, o, false, out);
    out->fell_back = true;
    return rc;
}

void ftc__quorum_decision_fini(ftc__quorum_decision *d)
{
    ftc__free(d->member_idx);
    ftc__free(d->excluded_idx);
    ftc__free(d->newly);
    d->member_idx = NULL;
    d->excluded_idx = NULL;
    d->newly = NULL;
    d->n_members = 0;
    d->n_excluded = 0;
    d->n_newly = 0;
}

/* torchft's quorum_id rule for a quorum about to replace s->prev. */
static ftc__quorum_id_change id_change(const ftc__quorum_state *s,
                                       const ftc__quorum *q)
{
    if (!s->has_prev) {
        return FTC__QUORUM_ID_FIRST;
    }
    if (ftc__quorum_members_changed(q->members, q->n, s->prev.members,
                                    s->prev.n)) {
        return FTC__QUORUM_ID_MEMBERSHIP;
    }
    for (size_t i = 0; i < q->n; i++) {
        if (q->members[i].commit_failures > 0) {
            return FTC__QUORUM_ID_COMMIT_FAILURES;
        }
    }
    return FTC__QUORUM_ID_KEPT;
}

/* The next id: the counter grows; if it would wrap, the epoch moves on so
 * that no id of this state repeats. */
static void bump_id(ftc__quorum_state *s)
{
    if (s->counter == UINT32_MAX) {
        s->epoch = s->epoch % FTC__QUORUM_EPOCH_MAX + 1;
        s->counter = 1;
        return;
    }
    s->counter++;
}

/* Moves the chosen participants into q (already sized) and keeps the rest,
 * re-queued at now. d->member_idx is ascending. */
static void take_members(ftc__quorum_state *s, const ftc__quorum_decision *d,
                         ftc__quorum *q, int64_t now)
{
    size_t next = 0;
    size_t kept = 0;
    for (size_t i = 0; i < s->n_participants; i++) {
        if (next < d->n_members && d->member_idx[next] == i) {
            /* A report is about the round that failed: a quorum with the
             * reporter ends it. Those left out keep theirs (still true
             * until they report again). */
            ftc__quorum_member_clear_suspects(&s->participants[i].member);
            q->members[next++] = s->participants[i].member;
            continue;
        }
        s->participants[kept] = s->participants[i];
        s->participants[kept].joined_ms = now;
        kept++;
    }
    q->n = next;
    s->n_participants = kept;
}

/* Records the participants the quorum leaves out as unreachable, names
 * the first few in out. */
static void record_excluded(ftc__quorum_state *s, const ftc__quorum_opts *o,
                            const ftc__quorum_decision *d, int64_t now,
                            ftc__quorum_tick_result *out)
{
    for (size_t i = 0; i < d->n_excluded; i++) {
        if (!d->newly[i]) {
            continue;
        }
        const char *id = s->participants[d->excluded_idx[i]].member.replica_id;
        out->excluded_for_ms = ftc__quorum_exclude_record(s, o, id, now);
        if (out->n_excluded < FTC__QUORUM_EXCLUDED_NAMES) {
            memcpy(out->excluded[out->n_excluded], id, strlen(id) + 1);
        }
        out->n_excluded++;
    }
}

/* The hint of a decision that formed nothing; shrink_only (which picks
 * members rather than counting them) and a formed quorum leave none. */
static void remember(ftc__quorum_state *s, const ftc__quorum_opts *o,
                     const ftc__quorum_decision *d)
{
    s->hint = (ftc__quorum_hint){
        /* Behind depends on steps, which the hint does not count. */
        .valid = !d->met && !d->shrink_only &&
                 d->verdict != FTC__QUORUM_BEHIND && d->n_excluded == 0 &&
                 d->waiting_excluded == 0 && !d->fell_back,
        .has_prev = s->has_prev,
        .healthy_replicas = d->healthy_replicas,
        .healthy_participants = d->healthy_participants,
        .missing = d->missing_previous,
        .first_joined = d->first_joined,
        .until_ms = d->next_ms,
        .opts = *o,
    };
}

bool ftc__quorum_same_rules(const ftc__quorum_opts *a,
                            const ftc__quorum_opts *b)
{
    return a->min_replicas == b->min_replicas &&
           a->join_timeout_ms == b->join_timeout_ms &&
           a->heartbeat_timeout_ms == b->heartbeat_timeout_ms &&
           a->strict_shrink_only == b->strict_shrink_only &&
           a->rollback_after_ms == b->rollback_after_ms &&
           a->exclude_ms == b->exclude_ms;
}

/* decide() on the hint's counts, for the verdicts that form nothing. */
bool ftc__quorum_cannot_form(const ftc__quorum_state *s,
                             const ftc__quorum_opts *o, int64_t now_ms)
{
    const ftc__quorum_hint *h = &s->hint;
    if (!h->valid || now_ms >= h->until_ms ||
        !ftc__quorum_same_rules(&h->opts, o)) {
        return false;
    }
    size_t hp = h->healthy_participants;
    size_t hr = h->healthy_replicas;
    bool fast = h->has_prev && h->missing == 0;
    if (fast && hp >= o->min_replicas) {
        return false;
    }
    if (hp < o->min_replicas || hp <= hr / 2) {
        return true;
    }
    return hp != hr &&
           ftc__quorum_elapsed_ms(now_ms, h->first_joined) < o->join_timeout_ms;
}

/* A formed quorum sets the mark to its highest step: higher than the mark,
 * or equal, as a rule; lower only for replicas new to the job or when the
 * mark's replicas were given up (a rollback, reported). Before q becomes
 * s->prev. */
static void raise_mark(ftc__quorum_state *s, const ftc__quorum *q, int64_t now,
                       ftc__quorum_tick_result *out)
{
    int64_t top = 0;
    for (size_t i = 0; i < q->n; i++) {
        top = q->members[i].step > top ? q->members[i].step : top;
    }
    if (top < s->mark.step) {
        out->rolled_back_from = s->mark.step;
        out->newcomers = true;
        for (size_t i = 0; i < q->n && out->newcomers; i++) {
            out->newcomers =
                !ftc__quorum_was_member(s, q->members[i].replica_id);
        }
    }
    s->mark = (ftc__quorum_mark){top, now, false};
}

void ftc__quorum_note_step(ftc__quorum_state *s, int64_t step, bool finished,
                           int64_t now_ms)
{
    if (step < 0 || step < s->mark.step) {
        return;
    }
    bool was = step == s->mark.step && s->mark.finished;
    s->mark = (ftc__quorum_mark){step, now_ms, was || finished};
}

int ftc__quorum_commit(ftc__quorum_state *s, const char *replica_id,
                       int64_t quorum_id, int64_t step, int64_t now_ms)
{
    if (step < 1) {
        return ftc__seterr(FTC_EINVAL, "commit: step %lld < 1",
                           (long long)step);
    }
    if (!s->has_prev) {
        return ftc__seterr(FTC_ESTALE,
                           "quorum %u.%u is over (the job has "
                           "none now)",
                           ftc__quorum_id_epoch(quorum_id),
                           ftc__quorum_id_counter(quorum_id));
    }
    if (s->prev.quorum_id != quorum_id) {
        return ftc__seterr(
            FTC_ESTALE, "quorum %u.%u is over (the job's is %u.%u)",
            ftc__quorum_id_epoch(quorum_id), ftc__quorum_id_counter(quorum_id),
            ftc__quorum_id_epoch(s->prev.quorum_id),
            ftc__quorum_id_counter(s->prev.quorum_id));
    }
    long i = ftc__quorum_find(&s->prev, replica_id);
    if (i < 0 || (s->prev_gone != NULL && s->prev_gone[i])) {
        return ftc__seterr(FTC_ESTALE, "%s is not a member of quorum %u.%u",
                           replica_id, ftc__quorum_id_epoch(quorum_id),
                           ftc__quorum_id_counter(quorum_id));
    }
    if (s->prev_granted != NULL && step > s->prev_granted[i]) {
        s->prev_granted[i] = step;
    }
    ftc__quorum_note_step(s, step, false, now_ms);
    return 0;
}

void ftc__quorum_inherit_mark(ftc__quorum_state *s, int64_t step, bool finished,
                              int64_t now_ms)
{
    s->inherited = true;
    if (step > s->mark.step || (step == s->mark.step && finished)) {
        s->mark = (ftc__quorum_mark){step, now_ms, finished};
    }
}

int ftc__quorum_tick(ftc__quorum_state *s, const ftc__quorum_opts *o,
                     int64_t now_ms, int64_t wall_ms,
                     ftc__quorum_tick_result *out)
{
    memset(out, 0, sizeof(*out));
    out->rolled_back_from = -1;
    ftc__quorum_exclude_forgive(s, o, now_ms);
    ftc__quorum_decision d;
    int rc = ftc__quorum_compute(now_ms, s, o, &d);
    if (rc != 0) {
        return rc;
    }
    out->verdict = d.verdict;
    out->next_ms = d.next_ms;
    memcpy(out->reason, d.reason, sizeof(out->reason));
    remember(s, o, &d);
    if (!d.met) {
        ftc__quorum_decision_fini(&d);
        return 0;
    }
    rc = ftc__quorum_dropped_reserve(s, o);
    if (rc == 0) {
        rc = ftc__quorum_exclude_reserve(s, o, d.n_newly);
    }
    if (rc != 0) {
        ftc__quorum_decision_fini(&d);
        return rc;
    }
    ftc__quorum q;
    ftc__quorum_init(&q);
    q.members = ftc__calloc(d.n_members, sizeof(*q.members));
    bool *gone = ftc__calloc(d.n_members, sizeof(*gone));
    int64_t *granted = ftc__calloc(d.n_members, sizeof(*granted));
    if (q.members == NULL || gone == NULL || granted == NULL) {
        ftc__free(q.members);
        ftc__free(gone);
        ftc__free(granted);
        ftc__quorum_decision_fini(&d);
        return ftc__seterr(FTC_ENOMEM, "quorum tick: %zu members", d.n_members);
    }
    record_excluded(s, o, &d, now_ms, out);
    take_members(s, &d, &q, now_ms);
    ftc__quorum_decision_fini(&d);
    out->met = true;
    raise_mark(s, &q, now_ms, out);
    out->change = id_change(s, &q);
    if (out->change != FTC__QUORUM_ID_KEPT) {
        bump_id(s);
    }
    if (out->change == FTC__QUORUM_ID_MEMBERSHIP) {
        ftc__quorum_dropped_update(s, o, &s->prev, s->prev_gone, &q, now_ms);
    }
    ftc__quorum_exclude_members_back(s, &q);
    q.quorum_id = ftc__quorum_state_id(s);
    q.created_wall_ms = wall_ms;
    ftc__quorum_fini(&s->prev);
    ftc__free(s->prev_gone);
    ftc__free(s->prev_granted);
    s->prev = q;
    s->prev_gone = gone;
    s->prev_granted = granted;
    s->has_prev = true;
    /* The participants left out may form the next quorum at once. */
    out->next_ms = now_ms;
    return 0;
}
