/* A step through the manager on the training thread: start and wait for
 * the quorum round, allreduce through the cross-replica process group
 * (errors latched, zeros from non-participants), and the group's vote. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ft/manager/manager.h"

static void flush_works(ftc_manager *m, ftc__deadline dl);

static int check(const ftc_manager *m, const char *what)
{
    ftc__clearerr();
    if (m == NULL || m->magic != FTC__MGR_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "%s: not a manager", what);
    }
    return 0;
}

int ftc_manager_start_quorum(ftc_manager *m,
                             const ftc_manager_quorum_opts *opts)
{
    int rc = check(m, "start_quorum");
    ftc_manager_quorum_opts qo;
    ftc_manager_quorum_opts_init(&qo);
    rc = rc != 0
             ? rc
             : FTC__OPTS_MERGE(&qo, opts, ftc_manager_quorum_opts, timeout_ms);
    rc = rc != 0
             ? rc
             : ftc__timeout_check(qo.timeout_ms, "ftc_manager_start_quorum");
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&m->mu);
    bool idle = m->phase == FTC__MGR_IDLE;
    bool running = m->phase == FTC__MGR_RUNNING || m->phase == FTC__MGR_DONE;
    pthread_mutex_unlock(&m->mu);
    if (!running) {
        /* Whom the last step's group blamed, for this round's report. */
        ftc__manager_note_pg_failure(m);
    }
    if (idle) {
        /* Works of an earlier step (a failed round has no vote to wait for
         * them): their errors belong to that step, cleared below. */
        flush_works(m, ftc__deadline_in_ms(m->o.timeout_ms));
    }
    pthread_mutex_lock(&m->mu);
    if (m->phase == FTC__MGR_RUNNING || m->phase == FTC__MGR_DONE) {
        rc = ftc__seterr(FTC_EMISUSE, "start_quorum: a round is in flight "
                                      "(wait_quorum first)");
    } else if (m->phase == FTC__MGR_READY && !m->voted) {
        rc = ftc__seterr(FTC_EMISUSE, "start_quorum: vote on the previous "
                                      "step first (should_commit)");
    }
    pthread_mutex_lock(&m->err_mu);
    if (rc == 0 && m->killed) {
        rc = ftc__seterr(FTC_ECANCELED, "%s", m->err_msg);
    } else if (rc == 0) {
        m->err_code = 0; /* each step starts clean */
        m->err_msg[0] = '\0';
    }
    pthread_mutex_unlock(&m->err_mu);
    if (rc == 0) {
        m->round++;
        m->qo = qo;
        m->round_dl =
            ftc__deadline_from_timeout(qo.timeout_ms, m->o.quorum_timeout_ms);
        m->round_start_ns = ftc__now_ns();
        m->step0 = atomic_load(&m->step);
        m->batches0 = atomic_load(&m->batches);
        ftc__manager_arrival_fini(&m->arrival);
        memset(&m->arrival, 0, sizeof(m->arrival));
        /* Without memory the report waits for the next round. */
        (void)ftc__manager_take_suspects(m, &m->arrival);
        m->arrival.step = m->step0;
        m->arrival.commit_failures =
            m->commit_failures +
            (atomic_exchange(&m->force_new_quorum, false) ? 1 : 0);
        m->arrival.shrink_only = qo.shrink_only;
        snprintf(m->arrival.heal_address, sizeof(m->arrival.heal_address), "%s",
                 ftc__heal_server_address(m->heal_srv));
        m->phase = FTC__MGR_RUNNING;
        m->voted = false;
        pthread_cond_broadcast(&m->cv);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Takes over a finished round (m->mu held): its failure, or its results
 * in the atomics the getters read. *copy is set when a staged heal must
 * be copied into the buffers (after the lock is released). */
static int take_over(ftc_manager *m, bool *copy)
{
    ftc__manager_outcome *o = &m->out;
    *copy = false;
    if (o->rc != 0) {
        m->phase = FTC__MGR_IDLE;
        return ftc__seterr(o->rc, "%s", o->msg);
    }
    m->phase = FTC__MGR_READY;
    atomic_store(&m->quorum_id, o->quorum_id);
    atomic_store(&m->replica_rank, o->replica_rank);
    atomic_store(&m->replica_world_size, o->replica_world_size);
    atomic_store(&m->num_participants, o->plan.num_participants);
    atomic_store(&m->participating, o->plan.participating);
    atomic_store(&m->healing, o->healed);
    if (o->healed) {
        atomic_store(&m->step, o->heal_step);
        atomic_store(&m->batches, o->heal_batches);
        *copy = o->staged;
    }
    pthread_mutex_lock(&m->stats_mu);
    m->stats.quorums++;
    m->stats.last_quorum_ms = o->ms;
    pthread_mutex_unlock(&m->stats_mu);
    return 0;
}

/* Makes a healed state this replica's, on the training thread (the caller
 * is not reading the buffers while it is in wait_quorum): applies a staged
 * one (copies, load callbacks) and counts the heal. A load that fails
 * makes the step vote no from the step the replica had, so that it heals
 * again next round. */
static void adopt(ftc_manager *m, bool staged)
{
    int rc = staged ? ftc__manager_heal_apply(m, m->qo.heal_in_place) : 0;
    ftc__manager_outcome *o = &m->out;
    if (rc != 0) {
        atomic_store(&m->step, m->step0);
        atomic_store(&m->batches, m->batches0);
        ftc__manager_latch(m, rc, "healing to step %" PRId64 " from %s: %s",
                           o->heal_step, o->heal_source, ftc_last_error());
        return;
    }
    pthread_mutex_lock(&m->stats_mu);
    m->stats.heals++;
    m->stats.heal_bytes += o->heal_bytes;
    m->stats.last_heal_ms = o->heal_ms;
    m->heal_seconds_total += o->heal_ms / 1000.0;
    m->stats.last_heal_step = o->heal_step;
    snprintf(m->stats.last_heal_source, sizeof(m->stats.last_heal_source), "%s",
             o->heal_source);
    pthread_mutex_unlock(&m->stats_mu);
    ftc__manager_report_heal(m, o->heal_step, o->heal_source, o->heal_ms);
}

int ftc_manager_wait_quorum(ftc_manager *m, int64_t timeout_ms)
{
    int rc = check(m, "wait_quorum");
    rc = rc != 0 ? rc
                 : ftc__timeout_check(timeout_ms, "ftc_manager_wait_quorum");
    if (rc != 0) {
        return rc;
    }
    ftc__deadline dl = timeout_ms == FTC_TIMEOUT_DEFAULT
                           ? FTC_DEADLINE_NEVER
                           : ftc__deadline_in_ms(timeout_ms);
    bool copy = false, healed = false;
    pthread_mutex_lock(&m->mu);
    while (m->phase == FTC__MGR_RUNNING && !ftc__deadline_expired(dl)) {
        struct timespec ts = {dl.ns / 1000000000, dl.ns % 1000000000};
        pthread_cond_timedwait(&m->cv, &m->mu, &ts);
    }
    if (m->round == 0) {
        rc = ftc__seterr(FTC_EMISUSE, "wait_quorum: no round started");
    } else if (m->phase == FTC__MGR_RUNNING) {
        rc = ftc__seterr(FTC_ETIMEDOUT, "wait_quorum: the round is still "
                                        "running");
    } else if (m->phase == FTC__MGR_DONE) {
        rc = take_over(m, &copy);
        healed = rc == 0 && m->out.healed;
    } else if (m->out.rc != 0) {
        rc = ftc__seterr(m->out.rc, "%s", m->out.msg);
    }
    pthread_mutex_unlock(&m->mu);
    if (healed) {
        adopt(m, copy);
    }
    return rc;
}

/* ------------------------------------------------------------ allreduce */

static void link_work(ftc_manager *m, ftc_manager_work *w)
{
    pthread_mutex_lock(&m->work_mu);
    w->next = m->works;
    if (m->works != NULL) {
        m->works->prev = w;
    }
    m->works = w;
    pthread_mutex_unlock(&m->work_mu);
}

static void unlink_work(ftc_manager *m, ftc_manager_work *w)
{
    pthread_mutex_lock(&m->work_mu);
    if (w->prev != NULL) {
        w->prev->next = w->next;
    } else if (m->works == w) {
        m->works = w->next;
    }
    if (w->next != NULL) {
        w->next->prev = w->prev;
    }
    w->next = w->prev = NULL;
    pthread_mutex_unlock(&m->work_mu);
}

/* Issues the collective, or decides it cannot run: with an error latched
 * a participant's data may be wrong, so the group is aborted (its peers
 * fail at once instead of waiting); a replica that contributes zeros
 * still runs it so that its peers can commit. */
static int issue(ftc_manager *m, ftc_manager_work *w, int64_t timeout_ms)
{
    char why[FTC__MGR_MSG_MAX];
    int err = ftc_manager_errored(m, why, sizeof(why));
    bool part = atomic_load(&m->participating);
    if (!part) {
        memset(w->t.data, 0, w->t.count * ftc_dtype_size(w->t.dtype));
    }
    if (err != 0 && part) {
        ftc__manager_abort_pg(m);
        return ftc__seterr(err, "%s", why);
    }
    /* Borrowed (manager.h): issued without pg_mu held. */
    pthread_mutex_lock(&m->pg_mu);
    ftc_pg *pg = ftc__manager_pg_borrow_locked(m);
    pthread_mutex_unlock(&m->pg_mu);
    if (pg == NULL) {
        return ftc__seterr(FTC_EPEER, "no process group for this step%s%s",
                           err != 0 ? ": " : "", err != 0 ? why : "");
    }
    ftc_pg_op_opts oo;
    ftc_pg_op_opts_init(&oo);
    oo.timeout_ms = timeout_ms;
    int rc = ftc_pg_allreduce(pg, &w->t, &w->t, FTC_OP_SUM, &oo, &w->work);
    ftc__manager_pg_give_back(m);
    return rc;
}

int ftc_manager_allreduce(ftc_manager *m, const ftc_tensor *buf, int op,
                          ftc_manager_work **out, int64_t timeout_ms)
{
    int rc = check(m, "allreduce");
    rc = rc != 0 ? rc : ftc__timeout_check(timeout_ms, "ftc_manager_allreduce");
    if (rc != 0 || out == NULL) {
        return rc != 0 ? rc : ftc__seterr(FTC_EMISUSE, "allreduce: out NULL");
    }
    *out = NULL;
    size_t es = buf != NULL ? ftc_dtype_size(buf->dtype) : 0;
    if (buf == NULL || es == 0 || (buf->count > 0 && buf->data == NULL) ||
        buf->device != FTC_DEVICE_CPU ||
        (op != FTC_OP_SUM && op != FTC_OP_AVG) ||
        (op == FTC_OP_AVG && buf->dtype != FTC_DTYPE_F32 &&
         buf->dtype != FTC_DTYPE_F64)) {
        return ftc__seterr(FTC_EINVAL, "allreduce: a cpu buffer of a known "
                                       "dtype, op sum or avg (avg: f32 or "
                                       "f64 only)");
    }
    rc = ftc_manager_wait_quorum(m, timeout_ms);
    if (rc == FTC_EMISUSE) {
        return rc;
    }
    ftc_manager_work *w = ftc__calloc(1, sizeof(*w));
    if (w == NULL) {
        return ftc__seterr(FTC_ENOMEM, "allreduce");
    }
    w->m = m;
    w->t = *buf;
    w->op = op;
    w->divisor = atomic_load(&m->num_participants);
    if (rc == 0) {
        rc = issue(m, w, timeout_ms);
    }
    if (rc != 0) {
        w->rc = rc;
        ftc__manager_latch(m, rc, "allreduce: %s", ftc_last_error());
    }
    link_work(m, w);
    *out = w;
    return 0;
}

static void divide(const ftc_tensor *t, int64_t n)
{
    if (t->dtype == FTC_DTYPE_F32) {
        float *p = t->data, d = (float)n;
        for (size_t i = 0; i < t->count; i++) {
            p[i] /= d;
        }
    } else {
        double *p = t->data, d = (double)n;
        for (size_t i = 0; i < t->count; i++) {
            p[i] /= d;
        }
    }
}

/* Waits for the collective; a wait that times out aborts the group, so
 * that buf is free when this returns. */
static int finish(ftc_manager_work *w, int64_t timeout_ms)
{
    ftc_manager *m = w->m;
    if (w->work == NULL) {
        return ftc__seterr(w->rc, "allreduce failed earlier in this step");
    }
    int rc = ftc_work_wait(w->work, timeout_ms == FTC_TIMEOUT_DEFAULT
                                        ? m->o.timeout_ms
                                        : timeout_ms);
    int done = 1;
    if (rc == FTC_ETIMEDOUT && ftc_work_test(w->work, &done) == 0 && !done) {
        ftc__manager_abort_pg(m);
        ftc_work_wait(w->work, FTC_TIMEOUT_INFINITE);
        rc = ftc__seterr(FTC_ETIMEDOUT, "allreduce still running after the "
                                        "wait's timeout: aborted");
    }
    if (rc != 0) {
        ftc__manager_latch(m, rc, "allreduce: %s", ftc_last_error());
        return rc;
    }
    if (w->op == FTC_OP_AVG && w->divisor > 0) {
        divide(&w->t, w->divisor);
    }
    return 0;
}

int ftc_manager_work_wait(ftc_manager_work *w, int64_t timeout_ms)
{
    ftc__clearerr();
    if (w == NULL || w->m == NULL || w->waited) {
        return ftc__seterr(FTC_EMISUSE, "work wait: not a work, or waited "
                                        "already");
    }
    if (ftc__timeout_check(timeout_ms, "ftc_manager_work_wait") != 0) {
        return FTC_EINVAL; /* the work stays unwaited */
    }
    int rc = finish(w, timeout_ms);
    char msg[FTC__MGR_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", ftc_last_error());
    w->waited = true;
    unlink_work(w->m, w);
    return rc != 0 ? ftc__seterr(rc, "%s", msg) : 0;
}

void ftc_manager_work_release(ftc_manager_work *w)
{
    if (w == NULL) {
        return;
    }
    if (!w->waited) {
        /* should_commit waits for it and frees it. */
        w->released = true;
        return;
    }
    ftc_work_release(w->work);
    ftc__free(w);
}

/* Waits for every work of the step not waited for yet (bounded by dl);
 * frees those already released. */
static void flush_works(ftc_manager *m, ftc__deadline dl)
{
    for (;;) {
        pthread_mutex_lock(&m->work_mu);
        ftc_manager_work *w = m->works;
        pthread_mutex_unlock(&m->work_mu);
        if (w == NULL) {
            return;
        }
        bool released = w->released;
        if (finish(w, ftc__manager_left_ms(dl)) != 0) {
            FTC_LOG_DEBUG("manager.work", "unwaited allreduce: %s",
                          ftc_last_error());
        }
        w->waited = true;
        unlink_work(m, w);
        if (released) {
            ftc_work_release(w->work);
            ftc__free(w);
        }
    }
}

/* ----------------------------------------------------------------- vote */

static int put_vote(ftc_manager *m, const ftc__manager_vote *v,
                    ftc__deadline dl)
{
    char key[64], *text = NULL;
    size_t len;
    ftc__manager_key(key, sizeof(key), m->round, "v", m->o.group_rank);
    int rc = ftc__manager_vote_encode(v, &text, &len);
    rc = rc != 0
             ? rc
             : ftc__manager_put(m, key, text, len, ftc__manager_left_ms(dl));
    ftc__free(text);
    return rc;
}

/* Whether the lighthouse still counts this replica group in the step's
 * quorum, so that its commit cannot repeat one of a quorum formed without
 * it: a group cut off in the middle of a step can complete the step's
 * collectives late (data retransmitted once its link is back) after the
 * others aborted on its loss and committed that step again without it. */
static bool granted(ftc_manager *m, int64_t at, ftc__deadline dl)
{
    int64_t qid = atomic_load(&m->quorum_id);
    int rc = ftc_lighthouse_client_commit(m->lh, m->replica_id, qid, at + 1,
                                          ftc__manager_left_ms(dl));
    if (rc != 0) {
        ftc__manager_latch(
            m, rc, "the lighthouse did not grant step %" PRId64 "'s commit: %s",
            at, ftc_last_error());
    }
    return rc == 0;
}

/* Writes this rank's vote and reads every rank's; decides. The leader
 * votes yes only with the lighthouse's grant, asked once every other rank
 * voted yes (so that a grant is a commit): it reads the others' votes
 * first and writes its own last. */
static int vote(ftc_manager *m, ftc__manager_vote *mine, ftc__deadline dl,
                bool *commit, int64_t *at_min)
{
    if (ftc__manager_alone(m)) {
        mine->ok = mine->ok && granted(m, mine->at, dl);
        return ftc__manager_decide(mine, 1, commit, at_min);
    }
    size_t n = (size_t)m->o.group_size;
    bool last = m->o.group_rank == 0 && mine->ok;
    ftc_store_value *vals = ftc__calloc(n, sizeof(*vals));
    ftc__manager_vote *votes = ftc__calloc(n, sizeof(*votes));
    int rc = vals == NULL || votes == NULL ? ftc__seterr(FTC_ENOMEM, "votes")
             : last                        ? 0
                                           : put_vote(m, mine, dl);
    size_t from = last ? 1 : 0;
    /* The leader writes its vote by dl (then it gave up): the others wait
     * for it a little longer, so that they never decide without a vote
     * the leader committed on. */
    ftc__deadline read_dl = last ? dl : ftc__manager_leader_grace(dl);
    rc = rc != 0 ? rc
                 : ftc__manager_gather(m, m->round, "v", from,
                                       ftc__manager_left_ms(read_dl), vals);
    for (size_t g = from; rc == 0 && g < n; g++) {
        rc = ftc__manager_vote_decode(vals[g].data, vals[g].len, &votes[g]);
    }
    if (last) {
        /* (No vote of the others read: a no, so that they need not wait.) */
        bool all = rc == 0;
        for (size_t g = 1; all && g < n; g++) {
            all = votes[g].ok && votes[g].step == mine->step;
        }
        mine->ok = all && granted(m, mine->at, dl);
        if (votes != NULL) {
            votes[0] = *mine;
        }
        /* A grant that came at dl is still written (a second more; the
         * others wait 5). */
        ftc__deadline put_dl = dl;
        put_dl.ns += ftc__deadline_is_never(dl) ? 0 : 1000000000;
        int put = put_vote(m, mine, put_dl);
        rc = rc != 0 ? rc : put;
    }
    rc = rc != 0 ? rc : ftc__manager_decide(votes, n, commit, at_min);
    if (vals != NULL) {
        ftc_store_values_free(vals, n);
    }
    ftc__free(vals);
    ftc__free(votes);
    return rc;
}

/* The step's outcome in the counters; the error for max_retries. */
static int settle(ftc_manager *m, int rc, bool commit, int64_t at_min)
{
    int64_t at = atomic_load(&m->step);
    if (rc == 0 && commit) {
        atomic_store(&m->step, at + 1);
        atomic_fetch_add(&m->batches, atomic_load(&m->num_participants));
        m->commit_failures = 0;
        FTC_MGR_STAT(m, commits, 1);
        return 0;
    }
    if (rc != 0 || at_min < at) {
        /* Not every rank reached the healed step: back to the step the
         * group had, healed again next time. */
        atomic_store(&m->step, m->step0);
        atomic_store(&m->batches, m->batches0);
    }
    m->commit_failures++;
    FTC_MGR_STAT(m, failed_commits, 1);
    int64_t max = m->o.max_retries;
    if (rc == 0 && (max == FTC_MANAGER_NO_RETRY ||
                    (max > 0 && m->commit_failures > max))) {
        rc = ftc__seterr(FTC_EPEER,
                         "%" PRId64 " commits failed in a row (max_retries "
                         "%" PRId64 ")",
                         m->commit_failures, max);
    }
    return rc;
}

int ftc_manager_should_commit(ftc_manager *m, int *commit, int64_t timeout_ms)
{
    int rc = check(m, "should_commit");
    rc = rc != 0 ? rc
                 : ftc__timeout_check(timeout_ms, "ftc_manager_should_commit");
    if (rc != 0 || commit == NULL) {
        return rc != 0 ? rc : ftc__seterr(FTC_EMISUSE, "commit is NULL");
    }
    *commit = 0;
    ftc__deadline dl = ftc__deadline_from_timeout(timeout_ms, m->o.timeout_ms);
    pthread_mutex_lock(&m->mu);
    bool done = m->phase == FTC__MGR_DONE;
    pthread_mutex_unlock(&m->mu);
    if (done) {
        ftc_manager_wait_quorum(m, 0);
    }
    pthread_mutex_lock(&m->mu);
    if (m->phase != FTC__MGR_READY || m->voted) {
        rc = ftc__seterr(FTC_EMISUSE, "should_commit: no successful quorum "
                                      "round to vote on");
    }
    m->voted = true;
    pthread_mutex_unlock(&m->mu);
    if (rc != 0) {
        return rc;
    }
    /* Every collective's result is latched when it fails; the group's
     * status alone (a peer that left after this step's collectives) does
     * not spoil the step. */
    flush_works(m, dl);
    char why[FTC__MGR_MSG_MAX];
    int err = ftc_manager_errored(m, why, sizeof(why));
    int64_t np = atomic_load(&m->num_participants);
    ftc__manager_vote mine = {m->step0, atomic_load(&m->step),
                              err == 0 && np >= m->o.min_replica_size};
    bool yes = false;
    int64_t at_min = mine.at;
    int64_t vote_t0 = ftc__trace_clock();
    int vrc = vote(m, &mine, dl, &yes, &at_min);
    char msg[FTC__MGR_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", ftc_last_error());
    rc = settle(m, vrc, yes, at_min);
    ftc__manager_trace_vote(m, vote_t0, vrc, yes);
    if (rc == 0 && !yes) {
        /* (The leader's refused grant latched since.) */
        err = ftc_manager_errored(m, why, sizeof(why));
        FTC_LOG_INFO("manager.commit",
                     "%s rank %d: step %" PRId64 " not committed%s%s",
                     m->base_id, m->o.group_rank, m->step0,
                     err != 0 ? ": " : "", err != 0 ? why : "");
    }
    pthread_mutex_lock(&m->mu);
    m->phase = FTC__MGR_IDLE;
    pthread_mutex_unlock(&m->mu);
    *commit = rc == 0 && yes;
    ftc__manager_report_step(m, *commit);
    return vrc != 0 ? ftc__seterr(vrc, "vote: %s", msg) : rc;
}
