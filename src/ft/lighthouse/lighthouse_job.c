/* A lighthouse job: the registry of jobs, each job's quorum state under its
 * lock, its waiting long-polls, its event ring, and what each change sends
 * to whom. Every decision is the quorum core's (ft/quorum.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "ft/lighthouse/lighthouse.h"
#include "ft/lighthouse/lighthouse_json.h"

/* A join or watch without timeout_ms waits this long (then the cap). */
#define DEFAULT_WAIT_MS 60000

const double ftc__lighthouse_wait_bounds[FTC__LH_WAIT_BUCKETS] = {
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300};

static const char *const lost_cause_names[] = {"", "disconnect", "heartbeat",
                                               "goodbye"};

/* ------------------------------------------------------------ registry */

bool ftc__lighthouse_job_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= FTC_LIGHTHOUSE_JOB_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* The epoch of a new job, from the kernel's generator: independent of any
 * earlier lighthouse process, so a restart never repeats quorum ids. */
static uint32_t draw_epoch(void)
{
    uint64_t r;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        r = ftc__rand_u64() ^ (uint64_t)ftc__now_ns();
    }
    return ftc__quorum_epoch_from_random(r);
}

/* The epoch of a job about to be created, with lh->mu held: the next of
 * the leader's block, or a random one. */
static int take_epoch(ftc_lighthouse *lh, uint32_t *epoch)
{
    if (lh->epoch_end == 0) {
        *epoch = draw_epoch();
        return 0;
    }
    if (lh->epoch_next == lh->epoch_end) {
        return ftc__seterr(FTC_ECLOSED, "no quorum epoch left for a new job "
                                        "until etcd grants more");
    }
    *epoch = lh->epoch_next++;
    return 0;
}

static ftc__lighthouse_job *job_new(ftc_lighthouse *lh, const char *name,
                                    uint32_t epoch)
{
    ftc__lighthouse_job *job = ftc__calloc(1, sizeof(*job));
    if (job == NULL) {
        return NULL;
    }
    job->ring = ftc__calloc(lh->event_ring, sizeof(*job->ring));
    if (job->ring == NULL) {
        ftc__free(job);
        return NULL;
    }
    job->ring_cap = lh->event_ring;
    job->lh = lh;
    snprintf(job->name, sizeof(job->name), "%s", name);
    pthread_mutex_init(&job->mu, NULL);
    job->o = lh->job_defaults;
    job->epoch = epoch;
    ftc__quorum_state_init(&job->s, job->epoch);
    ftc__lh_replicas_init(&job->reps, job->o.max_replicas);
    job->next_ms = INT64_MAX;
    job->active_ms = ftc__now_ms();
    job->stored_step = -1;
    FTC_LOG_INFO("lighthouse.job", "job %s created, epoch %u", name,
                 job->epoch);
    return job;
}

void ftc__lighthouse_job_destroy(ftc__lighthouse_job *job)
{
    for (size_t i = 0; i < job->ring_cap; i++) {
        json_decref(job->ring[i]);
    }
    ftc__free(job->ring);
    ftc__free(job->lost);
    ftc__quorum_fini(&job->roster);
    ftc__quorum_fini(&job->old_roster);
    ftc__lh_replicas_fini(&job->reps);
    ftc__quorum_state_fini(&job->s);
    pthread_mutex_destroy(&job->mu);
    ftc__free(job);
}

int ftc__lighthouse_job_get(ftc_lighthouse *lh, const char *name, bool create,
                            ftc__lighthouse_job **out)
{
    if (!ftc__lighthouse_job_name_ok(name)) {
        return ftc__seterr(
            FTC_EINVAL, "job name '%.80s' is not [A-Za-z0-9._-]{1,64}", name);
    }
    pthread_mutex_lock(&lh->mu);
    ftc__lighthouse_job *job = lh->jobs;
    while (job != NULL && strcmp(job->name, name) != 0) {
        job = job->next;
    }
    int rc = 0;
    if (job == NULL && !create) {
        rc = ftc__seterr(FTC_ENOENT, "no job %s", name);
    } else if (job == NULL && lh->n_jobs >= lh->max_jobs) {
        rc = ftc__seterr(FTC_EMSGSIZE, "job %s: max_jobs %u reached", name,
                         lh->max_jobs);
    } else if (job == NULL) {
        uint32_t epoch = 0;
        rc = take_epoch(lh, &epoch);
        job = rc == 0 ? job_new(lh, name, epoch) : NULL;
        if (rc == 0 && job == NULL) {
            rc = ftc__seterr(FTC_ENOMEM, "job %s", name);
        } else if (rc == 0) {
            job->next = lh->jobs;
            lh->jobs = job;
            lh->n_jobs++;
        }
    }
    if (rc == 0) {
        pthread_mutex_lock(&job->mu);
        *out = job;
    }
    pthread_mutex_unlock(&lh->mu);
    return rc;
}

void ftc__lighthouse_job_unlock(ftc__lighthouse_job *job)
{
    pthread_mutex_unlock(&job->mu);
}

/* Why job may not be deleted now (0: it may). With job->mu held. */
static int in_use(const ftc__lighthouse_job *job, int64_t now)
{
    if (job->pinned) {
        return ftc__seterr(FTC_EMISUSE,
                           "job %s was declared (--job): restart the "
                           "lighthouse to reset it",
                           job->name);
    }
    const ftc__quorum_state *s = &job->s;
    size_t live = 0;
    for (size_t i = 0; i < s->n_heartbeats; i++) {
        live += ftc__quorum_is_healthy(s, &job->o, s->heartbeats[i].replica_id,
                                       now);
    }
    size_t waiting = job->n_joins + job->n_watches;
    if (live > 0 || waiting > 0) {
        return ftc__seterr(FTC_EEXIST,
                           "job %s is in use: %zu live replicas, %zu "
                           "requests waiting",
                           job->name, live, waiting);
    }
    if (job->refs > 0) {
        /* Answered long-polls are freed by the clock thread a moment
         * later; until then they point here. */
        return ftc__seterr(FTC_EEXIST,
                           "job %s: %ld answered requests are closing: try "
                           "again in a moment",
                           job->name, job->refs);
    }
    return 0;
}

int ftc__lighthouse_job_delete(ftc_lighthouse *lh, const char *name,
                               int64_t now)
{
    if (!ftc__lighthouse_job_name_ok(name)) {
        return ftc__seterr(
            FTC_EINVAL, "job name '%.80s' is not [A-Za-z0-9._-]{1,64}", name);
    }
    pthread_mutex_lock(&lh->mu);
    ftc__lighthouse_job **p = &lh->jobs;
    while (*p != NULL && strcmp((*p)->name, name) != 0) {
        p = &(*p)->next;
    }
    ftc__lighthouse_job *job = *p;
    int rc = job == NULL ? ftc__seterr(FTC_ENOENT, "no job %s", name) : 0;
    if (rc == 0) {
        pthread_mutex_lock(&job->mu);
        rc = in_use(job, now);
        pthread_mutex_unlock(&job->mu);
    }
    if (rc == 0) {
        *p = job->next;
        lh->n_jobs--;
        FTC_LOG_INFO("lighthouse.job", "job %s deleted by a request", name);
        ftc__lighthouse_job_forget(lh, job);
    }
    pthread_mutex_unlock(&lh->mu);
    return rc;
}

/* ---------------------------------------------------- waiting requests */

static ftc__lighthouse_req **list_of(ftc__lighthouse_job *job,
                                     ftc__lighthouse_kind kind)
{
    return kind == FTC__LH_JOIN ? &job->joins : &job->watches;
}

static ftc__lighthouse_req **tail_of(ftc__lighthouse_job *job,
                                     ftc__lighthouse_kind kind)
{
    return kind == FTC__LH_JOIN ? &job->joins_tail : &job->watches_tail;
}

static ftc__lighthouse_req *find_waiting(ftc__lighthouse_job *job,
                                         ftc__lighthouse_kind kind,
                                         const char *replica_id)
{
    if (replica_id[0] == '\0') {
        return NULL;
    }
    for (ftc__lighthouse_req *r = *list_of(job, kind); r != NULL; r = r->next) {
        if (strcmp(r->replica_id, replica_id) == 0) {
            return r;
        }
    }
    return NULL;
}

/* Makes r a waiting request of job (not yet suspended). */
static void link_req(ftc__lighthouse_job *job, ftc__lighthouse_req *r,
                     ftc__lighthouse_kind kind, int64_t deadline_ms)
{
    if (r->job == NULL) {
        r->job = job;
        job->refs++;
        atomic_fetch_add(&job->lh->n_polls, 1);
    }
    r->kind = kind;
    r->state = FTC__LH_WAITING;
    r->deadline_ms = deadline_ms;
    /* In deadline order, searched from the tail: requests of one timeout
     * arrive in deadline order, so this is O(1) but for mixed timeouts. */
    ftc__lighthouse_req **head = list_of(job, kind);
    ftc__lighthouse_req **tail = tail_of(job, kind);
    ftc__lighthouse_req *after = *tail;
    while (after != NULL && after->deadline_ms > deadline_ms) {
        after = after->prev;
    }
    r->prev = after;
    r->next = after != NULL ? after->next : *head;
    if (r->next != NULL) {
        r->next->prev = r;
    } else {
        *tail = r;
    }
    if (after != NULL) {
        after->next = r;
    } else {
        *head = r;
    }
    if (kind == FTC__LH_JOIN) {
        job->n_joins++;
    } else {
        job->n_watches++;
    }
}

void ftc__lighthouse_job_unlink(ftc__lighthouse_job *job,
                                ftc__lighthouse_req *r)
{
    if (r->state != FTC__LH_WAITING) {
        return;
    }
    ftc__lighthouse_req **head = list_of(job, r->kind);
    if (r->prev != NULL) {
        r->prev->next = r->next;
    } else {
        *head = r->next;
    }
    if (r->next != NULL) {
        r->next->prev = r->prev;
    } else {
        *tail_of(job, r->kind) = r->prev;
    }
    r->prev = r->next = NULL;
    if (r->kind == FTC__LH_JOIN) {
        job->n_joins--;
    } else {
        job->n_watches--;
    }
    ftc__lighthouse_clock_unwatch_fd(job->lh, r);
    r->state = FTC__LH_ANSWERED;
}

/* Answers r (taking one reference of b; NULL answers 500). A suspended r
 * is resumed by the caller once the job's lock is released. */
static void answer(ftc__lighthouse_job *job, ftc__lighthouse_req *r,
                   unsigned status, ftc__lighthouse_blob *b,
                   ftc__lighthouse_resume *rs)
{
    ftc__lighthouse_job_unlink(job, r);
    r->state = FTC__LH_ANSWERED;
    r->status = status;
    r->content_type = "application/json";
    r->answer = b;
    if (r->suspended) {
        r->resume_next = rs->head;
        rs->head = r;
    }
}

/* Parks a linked request until answer() resumes it. Called in MHD's
 * handler with the job's lock held, so nobody can answer r before it is
 * suspended. */
static void suspend(ftc__lighthouse_job *job, ftc__lighthouse_req *r)
{
    MHD_suspend_connection(r->conn);
    r->suspended = true;
    ftc__lighthouse_clock_watch_fd(job->lh, r);
    ftc__lighthouse_clock_poke(job->lh);
}

static ftc__lighthouse_blob *error_blob(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static ftc__lighthouse_blob *error_blob(const char *code, const char *fmt, ...)
{
    char detail[FTC__QUORUM_STR_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    return ftc__lighthouse_error_blob(code, detail);
}

static ftc__lighthouse_blob *json_blob(json_t *j)
{
    ftc__lighthouse_blob *b = j != NULL ? ftc__lighthouse_blob_json(j) : NULL;
    json_decref(j);
    return b;
}

/* -------------------------------------------------------------- events */

static void push_event(ftc__lighthouse_job *job, json_t *ev)
{
    uint64_t seq = job->seq + 1;
    if (ev == NULL ||
        json_object_set_new(ev, "seq", json_integer((json_int_t)seq)) != 0) {
        FTC_LOG_WARN("lighthouse.event",
                     "job %s: event %" PRIu64 " lost: out of memory", job->name,
                     seq);
        json_decref(ev);
        return;
    }
    size_t slot = seq % job->ring_cap;
    if (job->ring_n == job->ring_cap) {
        json_decref(job->ring[slot]);
    } else {
        job->ring_n++;
    }
    job->ring[slot] = ev;
    job->seq = seq;
}

static int64_t current_id(const ftc__lighthouse_job *job)
{
    return job->s.has_prev ? job->s.prev.quorum_id : 0;
}

static void quorum_event(ftc__lighthouse_job *job)
{
    json_t *ids = json_array();
    for (size_t i = 0; ids != NULL && i < job->s.prev.n; i++) {
        if (json_array_append_new(
                ids, json_string(job->s.prev.members[i].replica_id)) != 0) {
            json_decref(ids);
            ids = NULL;
        }
    }
    int64_t id = job->s.prev.quorum_id;
    push_event(job,
               ids == NULL
                   ? NULL
                   : json_pack("{s:s, s:I, s:I, s:I, s:o}", "kind", "quorum",
                               "quorum_id", (json_int_t)id, "epoch",
                               (json_int_t)ftc__quorum_id_epoch(id), "counter",
                               (json_int_t)ftc__quorum_id_counter(id),
                               "replica_ids", ids));
}

/* A member_lost event, once per member of the current quorum. */
static void report_lost(ftc__lighthouse_job *job, const char *replica_id,
                        ftc_lighthouse_lost_cause cause)
{
    long i = job->s.has_prev ? ftc__quorum_find(&job->s.prev, replica_id) : -1;
    if (i >= 0 && (size_t)i < job->lost_n) {
        if (job->lost[i]) {
            return;
        }
        job->lost[i] = true;
    }
    job->lost_total[cause]++;
    if (cause == FTC_LIGHTHOUSE_LOST_DISCONNECT ||
        cause == FTC_LIGHTHOUSE_LOST_HEARTBEAT) {
        /* A goodbye is a clean exit, not a failure. */
        int64_t wall = ftc__wall_ms();
        if (ftc__lh_history_lost(&job->hist, replica_id,
                                 lost_cause_names[cause], wall)) {
            ftc__lh_replicas_failed(&job->reps, replica_id,
                                    cause == FTC_LIGHTHOUSE_LOST_DISCONNECT
                                        ? FTC__LH_CAUSE_DISCONNECT
                                        : FTC__LH_CAUSE_HEARTBEAT,
                                    wall);
        }
    }
    FTC_LOG_INFO("lighthouse.lost", "job %s: %s lost (%s)%s", job->name,
                 replica_id, lost_cause_names[cause],
                 i >= 0 ? ", a quorum member" : "");
    push_event(job, json_pack("{s:s, s:s, s:s, s:I, s:b}", "kind",
                              "member_lost", "replica_id", replica_id, "cause",
                              lost_cause_names[cause], "quorum_id",
                              (json_int_t)current_id(job), "in_quorum",
                              (int)(i >= 0)));
}

/* A watch answer: the events after since, or a reset with the current
 * quorum. */
static ftc__lighthouse_blob *watch_answer(ftc__lighthouse_job *job,
                                          uint64_t since, bool reset)
{
    json_t *events = json_array();
    for (uint64_t k = since + 1; !reset && events != NULL && k <= job->seq;
         k++) {
        if (json_array_append(events, job->ring[k % job->ring_cap]) != 0) {
            json_decref(events);
            events = NULL;
        }
    }
    json_t *j = events == NULL ? NULL
                               : json_pack("{s:I, s:I, s:b, s:o}", "epoch",
                                           (json_int_t)job->epoch, "event_seq",
                                           (json_int_t)job->seq, "reset",
                                           (int)reset, "events", events);
    if (j != NULL && reset && job->s.has_prev &&
        json_object_set_new(j, "quorum", ftc__lhj_quorum_json(&job->s.prev)) !=
            0) {
        json_decref(j);
        j = NULL;
    }
    return json_blob(j);
}

/* Answers every watch that has not seen the newest event; watches at the
 * same position share one answer. */
static void flush_watches(ftc__lighthouse_job *job, ftc__lighthouse_resume *rs)
{
    ftc__lighthouse_blob *b = NULL;
    uint64_t b_since = 0;
    ftc__lighthouse_req *r = job->watches;
    while (r != NULL) {
        ftc__lighthouse_req *next = r->next;
        if (r->since < job->seq) {
            if (b == NULL || b_since != r->since) {
                ftc__lighthouse_blob_unref(b);
                b = watch_answer(job, r->since, false);
                b_since = r->since;
            }
            answer(job, r, 200, ftc__lighthouse_blob_ref(b), rs);
        }
        r = next;
    }
    ftc__lighthouse_blob_unref(b);
}

/* --------------------------------------------------------------- ticks */

static void observe_wait(ftc__lighthouse_job *job, int64_t ms)
{
    double s = (double)ms / 1000.0;
    for (size_t i = 0; i < FTC__LH_WAIT_BUCKETS; i++) {
        if (s <= ftc__lighthouse_wait_bounds[i]) {
            job->wait_buckets[i]++;
        }
    }
    job->wait_count++;
    job->wait_sum_s += s;
}

static int64_t roster_version(const ftc__lighthouse_job *job)
{
    return job->roster_kept
               ? (int64_t)((uint64_t)job->epoch << 32 | job->roster_seq)
               : 0;
}

/* The version of q's roster: the last one's if q lists the same, else a
 * new one (a copy of q is kept to compare the next quorum with; the last
 * one becomes the old roster, base of delta answers). 0 if no copy could
 * be kept: nobody can hold it, so every answer is full. The sequence
 * wraps after 2^32 - 1 rosters, far beyond any job's changes. */
static int64_t current_roster(ftc__lighthouse_job *job, const ftc__quorum *q)
{
    if (!job->roster_kept || !ftc__quorum_same_roster(&job->roster, q)) {
        ftc__quorum_fini(&job->old_roster);
        job->old_version = roster_version(job);
        job->old_roster = job->roster; /* moved */
        ftc__quorum_init(&job->roster);
        job->roster_seq =
            job->roster_seq == UINT32_MAX ? 1 : job->roster_seq + 1;
        job->roster_kept = ftc__quorum_copy(&job->roster, q) == 0;
    }
    return roster_version(job);
}

/* The shape of the answer to a join holding roster `held` (protocol.md):
 * compact when it holds q's roster, delta when it holds the one before,
 * else the whole quorum. */
static int answer_shape(const ftc__lighthouse_job *job, int64_t roster,
                        int64_t held)
{
    if (roster > 0 && held == roster) {
        return FTC__LH_COMPACT;
    }
    return roster > 0 && job->old_version > 0 && held == job->old_version
               ? FTC__LH_DELTA
               : FTC__LH_FULL;
}

/* A join's answer in its shape: the whole quorum with its roster version,
 * only what changes from round to round (compact), or that and the
 * members who left and came since the roster the join holds (delta). */
static ftc__lighthouse_blob *join_answer(const ftc__lighthouse_job *job,
                                         const ftc__quorum *q, int64_t roster,
                                         int shape, const char *reason)
{
    if (shape == FTC__LH_COMPACT) {
        return json_blob(json_pack(
            "{s:I, s:o, s:s}", "epoch", (json_int_t)job->epoch, "compact",
            ftc__lhj_compact_json(q, roster), "reason", reason));
    }
    if (shape == FTC__LH_DELTA) {
        return json_blob(json_pack(
            "{s:I, s:o, s:s}", "epoch", (json_int_t)job->epoch, "delta",
            ftc__lhj_delta_json(&job->old_roster, job->old_version, q, roster),
            "reason", reason));
    }
    return json_blob(json_pack("{s:I, s:o, s:I, s:s}", "epoch",
                               (json_int_t)job->epoch, "quorum",
                               ftc__lhj_quorum_json(q), "roster",
                               (json_int_t)roster, "reason", reason));
}

/* Replica groups the quorum just formed left out as unreachable. */
static void log_excluded(const ftc__lighthouse_job *job,
                         const ftc__quorum_tick_result *t)
{
    char names[4 * FTC__QUORUM_STR_MAX + 32] = "";
    size_t len = 0;
    for (size_t i = 0; i < t->n_excluded && i < FTC__QUORUM_EXCLUDED_NAMES &&
                       len < sizeof(names);
         i++) {
        len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
                                i == 0 ? "" : ", ", t->excluded[i]);
    }
    if (t->n_excluded > FTC__QUORUM_EXCLUDED_NAMES && len < sizeof(names)) {
        snprintf(names + len, sizeof(names) - len, " and %zu more",
                 t->n_excluded - FTC__QUORUM_EXCLUDED_NAMES);
    }
    FTC_LOG_WARN("lighthouse.exclude",
                 "job %s: %zu replica group(s) left out of the quorum for "
                 "%lld ms, the reports of the others say they cannot be "
                 "reached: %s",
                 job->name, t->n_excluded, (long long)t->excluded_for_ms,
                 names);
}

/* The answer to a join the quorum q just left out as unreachable: at
 * once, with q, so its manager can find out whom it cannot reach and
 * report them before its time out ends (docs/protocol.md). */
static ftc__lighthouse_blob *left_out_answer(const ftc__lighthouse_job *job,
                                             const ftc__quorum *q,
                                             int64_t out_for_ms)
{
    return json_blob(json_pack(
        "{s:I, s:b, s:b, s:I, s:s, s:o}", "epoch", (json_int_t)job->epoch,
        "timed_out", 1, "left_out", 1, "out_for_ms", (json_int_t)out_for_ms,
        "reason",
        "left out of the quorum: the other replica groups could not reach "
        "this one",
        "quorum", ftc__lhj_quorum_json(q)));
}

/* Answers the waiting joins of the replicas the quorum q (formed at now)
 * left out as unreachable; their requests end (they join again). */
static void answer_left_out(ftc__lighthouse_job *job, const ftc__quorum *q,
                            int64_t now, ftc__lighthouse_resume *rs)
{
    ftc__lighthouse_req *r = job->joins;
    while (r != NULL) {
        ftc__lighthouse_req *next = r->next;
        int64_t until;
        if (ftc__quorum_find(q, r->replica_id) < 0 &&
            ftc__quorum_left_out_at(&job->s, r->replica_id, now, &until)) {
            answer(job, r, 200, left_out_answer(job, q, until - now), rs);
            ftc__quorum_leave(&job->s, r->replica_id);
        }
        r = next;
    }
}

/* A quorum formed: record it, tell the watches if its id is new, and
 * answer every waiting join of its members. */
static void formed(ftc__lighthouse_job *job, const ftc__quorum_tick_result *t,
                   int64_t now, int64_t wall, ftc__lighthouse_resume *rs)
{
    const ftc__quorum *q = &job->s.prev;
    job->quorums_total++;
    ftc__lh_history_formed(&job->hist, q, wall);
    ftc__lh_replicas_formed(&job->reps, q, wall);
    ftc__free(job->lost);
    job->lost = ftc__calloc(q->n, sizeof(*job->lost));
    job->lost_n = job->lost != NULL ? q->n : 0;
    job->lapse_due_ms = INT64_MIN;
    if (t->change != FTC__QUORUM_ID_KEPT) {
        job->changes_total[t->change]++;
        job->changes[job->n_changes % FTC__LH_CHANGES] =
            (ftc__lighthouse_change){q->quorum_id, t->change, q->n, wall};
        job->n_changes++;
        quorum_event(job);
        FTC_LOG_INFO("lighthouse.quorum",
                     "job %s: quorum %u.%u with %zu members: %s", job->name,
                     ftc__quorum_id_epoch(q->quorum_id),
                     ftc__quorum_id_counter(q->quorum_id), q->n, t->reason);
    }
    int64_t roster = current_roster(job, q);
    /* Built once for every member, and only if some member needs it;
     * indexed by shape. */
    ftc__lighthouse_blob *bodies[4] = {NULL};
    ftc__lighthouse_req *r = job->joins;
    while (r != NULL) {
        ftc__lighthouse_req *next = r->next;
        if (ftc__quorum_find(q, r->replica_id) >= 0) {
            int shape = answer_shape(job, roster, r->roster);
            if (bodies[shape] == NULL) {
                bodies[shape] = join_answer(job, q, roster, shape, t->reason);
                job->bodies_total[shape] += bodies[shape] != NULL;
            }
            if (bodies[shape] == NULL && shape == FTC__LH_DELTA) {
                /* No memory for the delta: the whole list, as for a
                 * client that holds nothing. */
                shape = FTC__LH_FULL;
                if (bodies[shape] == NULL) {
                    bodies[shape] =
                        join_answer(job, q, roster, shape, t->reason);
                    job->bodies_total[shape] += bodies[shape] != NULL;
                }
            }
            job->answers_total[shape]++;
            observe_wait(job, now - r->start_ms);
            answer(job, r, 200, ftc__lighthouse_blob_ref(bodies[shape]), rs);
        }
        r = next;
    }
    for (int shape = 1; shape < 4; shape++) {
        ftc__lighthouse_blob_unref(bodies[shape]);
    }
}

/* Members of the current quorum whose heartbeat expired are lost. Skipped
 * until the earliest expiry found by the last pass: heartbeats only push
 * expiries later, and what else ends one (a new quorum, a changed timeout)
 * resets lapse_due_ms. A pass per join made a round O(n^2 log n). */
static void check_lapses(ftc__lighthouse_job *job, int64_t now)
{
    if (now < job->lapse_due_ms) {
        return;
    }
    int64_t due = INT64_MAX;
    for (size_t i = 0; job->s.has_prev && i < job->lost_n; i++) {
        const char *id = job->s.prev.members[i].replica_id;
        if (job->lost[i]) {
            continue;
        }
        int64_t until = ftc__quorum_healthy_until(&job->s, &job->o, id);
        if (now >= until) {
            report_lost(job, id, FTC_LIGHTHOUSE_LOST_HEARTBEAT);
        } else if (until < due) {
            due = until;
        }
    }
    job->lapse_due_ms = due;
}

/* Runs the core's tick until no further quorum forms (participants left
 * out of one may form the next at once), then tells the watches. Lapses
 * are checked first too: the expiry that makes a member lost is often
 * what lets the next quorum form without it, and that one must not hide
 * the loss. */
static void tick(ftc__lighthouse_job *job, int64_t now,
                 ftc__lighthouse_resume *rs)
{
    int64_t wall = ftc__wall_ms();
    check_lapses(job, now);
    /* Most joins of a round cannot complete it: skip the O(n) decision.
     * The clock then wakes no later than the skipped one's next_ms. */
    bool skip = ftc__quorum_cannot_form(&job->s, &job->o, now);
    if (skip) {
        job->next_ms = job->s.hint.until_ms;
    }
    if (!ftc__lighthouse_may_decide(job->lh)) {
        /* A leader whose lease in etcd ran out: its successor decides. */
        skip = true;
        job->next_ms = now + 100;
    }
    for (size_t guard = job->s.n_participants + 2; !skip && guard > 0;
         guard--) {
        ftc__quorum_tick_result t;
        if (ftc__quorum_tick(&job->s, &job->o, now, wall, &t) != 0) {
            FTC_LOG_WARN("lighthouse.tick", "job %s: %s", job->name,
                         ftc_last_error());
            job->next_ms = now + 100; /* try again soon */
            break;
        }
        job->next_ms = t.next_ms;
        if (!t.met) {
            break;
        }
        if (t.rolled_back_from >= 0 && t.newcomers) {
            FTC_LOG_INFO("lighthouse.restart",
                         "job %s: replicas new to the job start below its "
                         "committed step %lld (a new run of the job)",
                         job->name, (long long)t.rolled_back_from);
        } else if (t.rolled_back_from >= 0) {
            FTC_LOG_WARN("lighthouse.rollback",
                         "job %s: a quorum goes on below step %lld, which "
                         "was committed, after no replica that has it was "
                         "heard for %lld ms",
                         job->name, (long long)t.rolled_back_from,
                         (long long)job->o.rollback_after_ms);
        }
        formed(job, &t, now, wall, rs);
        if (t.n_excluded > 0) {
            log_excluded(job, &t);
            answer_left_out(job, &job->s.prev, now, rs);
        }
    }
    check_lapses(job, now);
    flush_watches(job, rs);
    /* next_ms may have moved earlier: the clock recomputes its sleep. */
    ftc__lighthouse_clock_poke(job->lh);
}

/* --------------------------------------------------------------- calls */

int ftc__lighthouse_job_heartbeat(ftc__lighthouse_job *job,
                                  const char *replica_id, int64_t now,
                                  ftc__lighthouse_resume *rs)
{
    bool was = ftc__quorum_is_healthy(&job->s, &job->o, replica_id, now);
    int rc = ftc__quorum_heartbeat(&job->s, &job->o, replica_id, now);
    if (rc != 0) {
        return rc;
    }
    job->active_ms = now;
    /* Only a replica becoming healthy can change the decision. */
    if (!was) {
        tick(job, now, rs);
    }
    return 0;
}

void ftc__lighthouse_job_report(ftc__lighthouse_job *job,
                                const char *replica_id,
                                const ftc_lighthouse_replica_stats *st)
{
    ftc__lh_replicas_report(&job->reps, replica_id, st, ftc__wall_ms());
}

static int64_t wait_ms(const ftc__lighthouse_job *job, int64_t timeout_ms)
{
    int64_t t = timeout_ms < 0 ? DEFAULT_WAIT_MS : timeout_ms;
    return t < job->lh->max_join_wait_ms ? t : job->lh->max_join_wait_ms;
}

int ftc__lighthouse_job_join(ftc__lighthouse_job *job, ftc__lighthouse_req *r,
                             const ftc__quorum_member *m, int64_t timeout_ms,
                             int64_t now, ftc__lighthouse_resume *rs)
{
    if (atomic_load(&job->lh->stopping)) {
        return ftc__seterr(FTC_ECLOSED, "the lighthouse is stopping");
    }
    ftc__lighthouse_req *old = find_waiting(job, FTC__LH_JOIN, m->replica_id);
    if (old == NULL && job->n_joins >= job->o.max_replicas) {
        return ftc__seterr(FTC_EMSGSIZE, "job %s: %zu joins waiting already",
                           job->name, job->n_joins);
    }
    int rc = ftc__quorum_join(&job->s, &job->o, m, now);
    if (rc != 0) {
        return rc;
    }
    job->active_ms = now;
    if (old != NULL) {
        answer(job, old, 409,
               error_blob("superseded", "a newer join of %s replaced this one",
                          m->replica_id),
               rs);
    }
    memcpy(r->replica_id, m->replica_id, sizeof(r->replica_id));
    link_req(job, r, FTC__LH_JOIN, now + wait_ms(job, timeout_ms));
    tick(job, now, rs);
    if (r->state == FTC__LH_WAITING) {
        suspend(job, r);
    }
    return 0;
}

int ftc__lighthouse_job_watch(ftc__lighthouse_job *job, ftc__lighthouse_req *r,
                              bool has_epoch, uint32_t epoch, bool has_since,
                              uint64_t since, int64_t timeout_ms, int64_t now,
                              ftc__lighthouse_resume *rs)
{
    if (atomic_load(&job->lh->stopping)) {
        return ftc__seterr(FTC_ECLOSED, "the lighthouse is stopping");
    }
    ftc__lighthouse_req *old = find_waiting(job, FTC__LH_WATCH, r->replica_id);
    if (old == NULL && job->n_watches >= job->o.max_replicas) {
        return ftc__seterr(FTC_EMSGSIZE, "job %s: %zu watches waiting already",
                           job->name, job->n_watches);
    }
    job->active_ms = now;
    if (old != NULL) {
        answer(job, old, 409,
               error_blob("superseded", "a newer watch of %s replaced this one",
                          r->replica_id),
               rs);
    }
    if (!has_since) {
        since = job->seq;
    }
    /* A stale epoch, a position from the future or one older than the
     * ring: the watcher must resynchronise (never an error). */
    bool reset = (has_epoch && epoch != job->epoch) || since > job->seq ||
                 job->seq - since > job->ring_n;
    if (reset || since < job->seq) {
        r->state = FTC__LH_ANSWERED;
        r->status = 200;
        r->content_type = "application/json";
        r->answer = watch_answer(job, since, reset);
        return 0;
    }
    r->since = since;
    link_req(job, r, FTC__LH_WATCH, now + wait_ms(job, timeout_ms));
    suspend(job, r);
    return 0;
}

int ftc__lighthouse_job_goodbye(ftc__lighthouse_job *job,
                                const char *replica_id, int64_t step,
                                bool finished, int64_t now,
                                ftc__lighthouse_resume *rs)
{
    int rc = ftc__quorum_forget(&job->s, replica_id);
    if (rc != 0) {
        return rc;
    }
    ftc__quorum_note_step(&job->s, step, finished, now);
    job->active_ms = now;
    report_lost(job, replica_id, FTC_LIGHTHOUSE_LOST_GOODBYE);
    tick(job, now, rs);
    return 0;
}

int ftc__lighthouse_job_commit(ftc__lighthouse_job *job, const char *replica_id,
                               int64_t quorum_id, int64_t step, int64_t now,
                               ftc__lighthouse_resume *rs)
{
    /* A lapse found now is reported (the others abort on it) before the
     * answer, which then refuses; a quorum the tick forms ends this one. */
    tick(job, now, rs);
    long i = job->s.has_prev && job->s.prev.quorum_id == quorum_id
                 ? ftc__quorum_find(&job->s.prev, replica_id)
                 : -1;
    bool lost =
        i >= 0 && (((size_t)i < job->lost_n && job->lost[i]) ||
                   !ftc__quorum_is_healthy(&job->s, &job->o, replica_id, now));
    /* A leader whose lease ran out may have a successor forming quorums
     * already (checked again here, under the job's lock). */
    int rc =
        !ftc__lighthouse_may_decide(job->lh)
            ? ftc__seterr(FTC_ESTALE, "this lighthouse's lease ended")
        : lost ? ftc__seterr(FTC_ESTALE,
                             "%s was reported lost in quorum %u.%u: the "
                             "others may commit this step without it",
                             replica_id, ftc__quorum_id_epoch(quorum_id),
                             ftc__quorum_id_counter(quorum_id))
               : ftc__quorum_commit(&job->s, replica_id, quorum_id, step, now);
    job->commits_total[rc == 0 ? 1 : 2]++;
    if (rc == FTC_ESTALE) {
        FTC_LOG_INFO("lighthouse.commit", "job %s: commit of %s refused: %s",
                     job->name, replica_id, ftc_last_error());
    }
    job->active_ms = now;
    return rc;
}

int ftc__lighthouse_job_kill(ftc__lighthouse_job *job, const char *replica_id,
                             ftc__lighthouse_resume *rs)
{
    if (!job->s.has_prev || ftc__quorum_find(&job->s.prev, replica_id) < 0) {
        return ftc__seterr(FTC_ENOENT, "%s is not in job %s's quorum",
                           replica_id, job->name);
    }
    FTC_LOG_WARN("lighthouse.kill", "job %s: kill %s requested", job->name,
                 replica_id);
    /* A failure from now: the replica goes away by a goodbye (not a
     * failure otherwise) or a dropped connection (counted once). */
    int64_t wall = ftc__wall_ms();
    if (ftc__lh_history_lost(&job->hist, replica_id, "kill", wall)) {
        ftc__lh_replicas_failed(&job->reps, replica_id, FTC__LH_CAUSE_KILL,
                                wall);
    }
    push_event(job,
               json_pack("{s:s, s:s, s:I}", "kind", "kill", "replica_id",
                         replica_id, "quorum_id", (json_int_t)current_id(job)));
    flush_watches(job, rs);
    return 0;
}

int ftc__lighthouse_job_configure(ftc__lighthouse_job *job, const json_t *obj,
                                  int64_t now, ftc__lighthouse_resume *rs)
{
    int rc = ftc__lhj_job_options(obj, &job->o);
    if (rc != 0) {
        return rc;
    }
    job->reps.max = job->o.max_replicas; /* applied as groups come */
    job->lapse_due_ms = INT64_MIN; /* the heartbeat timeout may be shorter */
    job->active_ms = now;
    tick(job, now, rs);
    return 0;
}

ftc__lighthouse_blob *ftc__lighthouse_job_ack(const ftc__lighthouse_job *job)
{
    return json_blob(json_pack("{s:I, s:I}", "epoch", (json_int_t)job->epoch,
                               "event_seq", (json_int_t)job->seq));
}

/* ----------------------------------------------------------- the clock */

int64_t ftc__lighthouse_job_wake_ms(const ftc__lighthouse_job *job)
{
    /* Both lists are in deadline order: their heads are the earliest. */
    int64_t t = job->next_ms;
    if (job->joins != NULL && job->joins->deadline_ms < t) {
        t = job->joins->deadline_ms;
    }
    if (job->watches != NULL && job->watches->deadline_ms < t) {
        t = job->watches->deadline_ms;
    }
    return t;
}

/* Joins past their deadline leave (torchft would keep them as
 * participants of a quorum they never hear of) and learn why none
 * formed. */
static bool expire_joins(ftc__lighthouse_job *job, int64_t now,
                         ftc__lighthouse_resume *rs)
{
    ftc__lighthouse_blob *b = NULL;
    bool any = false;
    ftc__lighthouse_req *r = job->joins;
    while (r != NULL) {
        ftc__lighthouse_req *next = r->next;
        if (r->deadline_ms <= now) {
            if (!any) {
                ftc__quorum_decision d;
                const char *why = "out of memory";
                int rc = ftc__quorum_compute(now, &job->s, &job->o, &d);
                if (rc == 0) {
                    why = d.reason;
                }
                b = json_blob(json_pack("{s:I, s:b, s:s}", "epoch",
                                        (json_int_t)job->epoch, "timed_out", 1,
                                        "reason", why));
                if (rc == 0) {
                    ftc__quorum_decision_fini(&d);
                }
                any = true;
            }
            ftc__quorum_leave(&job->s, r->replica_id);
            answer(job, r, 200, ftc__lighthouse_blob_ref(b), rs);
        }
        r = next;
    }
    ftc__lighthouse_blob_unref(b);
    return any;
}

void ftc__lighthouse_job_service(ftc__lighthouse_job *job, int64_t now,
                                 ftc__lighthouse_resume *rs)
{
    bool left = expire_joins(job, now, rs);
    ftc__lighthouse_req *r = job->watches;
    while (r != NULL) {
        ftc__lighthouse_req *next = r->next;
        if (r->deadline_ms <= now) {
            answer(job, r, 200, watch_answer(job, r->since, false), rs);
        }
        r = next;
    }
    if (left || now >= job->next_ms) {
        tick(job, now, rs);
    }
}

void ftc__lighthouse_job_dropped(ftc__lighthouse_job *job,
                                 ftc__lighthouse_req *r, int64_t now,
                                 ftc__lighthouse_resume *rs)
{
    if (r->state != FTC__LH_WAITING) {
        return;
    }
    /* Nobody reads this answer: resuming lets MHD see the closed socket
     * and complete the request. */
    answer(job, r, 400, error_blob("disconnected", "the connection dropped"),
           rs);
    if (r->replica_id[0] == '\0') {
        return;
    }
    if (!job->lh->keep_dropped) {
        if (ftc__quorum_forget(&job->s, r->replica_id) == 0) {
            report_lost(job, r->replica_id, FTC_LIGHTHOUSE_LOST_DISCONNECT);
            tick(job, now, rs);
        }
    } else if (r->kind == FTC__LH_JOIN &&
               ftc__quorum_leave(&job->s, r->replica_id) == 0) {
        tick(job, now, rs);
    }
}

void ftc__lighthouse_job_answer_all(ftc__lighthouse_job *job,
                                    ftc__lighthouse_resume *rs)
{
    while (job->joins != NULL || job->watches != NULL) {
        ftc__lighthouse_req *r = job->joins != NULL ? job->joins : job->watches;
        answer(job, r, 503,
               error_blob("shutting_down", "the lighthouse is stopping"), rs);
    }
}
