/* The manager's lighthouse threads: the leader's heartbeat, and every
 * rank's watch, which turns a pushed membership change into an abort of
 * the rank's in-flight collectives (torchft waits for a collective
 * timeout instead: its issue #164). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ft/manager/manager.h"

/* A watch waits at most this long before it is asked again. */
#define FTC__MGR_WATCH_MS 30000

void ftc__manager_start_heartbeat(ftc_manager *m)
{
    pthread_mutex_lock(&m->mu);
    bool start = !m->leader_joined;
    m->leader_joined = true;
    pthread_mutex_unlock(&m->mu);
    if (start) {
        m->hb_started = ftc__thread_start(&m->hb_thr, "ftc-mgr-heartbeat",
                                          ftc__manager_heartbeat_main, m) == 0;
        if (!m->hb_started) {
            FTC_LOG_WARN("manager.heartbeat", "%s: no heartbeat thread: %s",
                         m->base_id, ftc_last_error());
        }
    }
}

/* What the leader tells the lighthouse of this replica group with each
 * heartbeat (its own rank's heals and serving: the group's ranks heal
 * alike). */
static void replica_stats(ftc_manager *m, ftc_lighthouse_replica_stats *st)
{
    memset(st, 0, sizeof(*st));
    ftc__heal_server_stats served;
    ftc__heal_server_stats_get(m->heal_srv, &served);
    pthread_mutex_lock(&m->stats_mu);
    st->heals = m->stats.heals;
    st->heal_bytes = m->stats.heal_bytes;
    st->heal_seconds = m->heal_seconds_total;
    if (m->heal_from[0] != '\0') {
        snprintf(st->healing_from, sizeof(st->healing_from), "%s",
                 m->heal_from);
        st->healing_started_wall_ms = m->heal_started_wall_ms;
        st->healing_bytes = (int64_t)atomic_load(&m->heal_progress.bytes);
        st->healing_total_bytes =
            (int64_t)atomic_load(&m->heal_progress.total_bytes);
    }
    pthread_mutex_unlock(&m->stats_mu);
    st->served_bytes = (int64_t)served.bytes_served;
}

void *ftc__manager_heartbeat_main(void *arg)
{
    ftc_manager *m = arg;
    int64_t every = m->o.heartbeat_interval_ms;
    int64_t call_ms = every * 5 > 1000 ? every * 5 : 1000;
    bool failing = false;
    ftc__deadline next = ftc__deadline_in_ms(0);
    do {
        ftc_lighthouse_replica_stats st;
        replica_stats(m, &st);
        int rc = ftc_lighthouse_client_report(m->lh, m->replica_id, &st,
                                              call_ms, NULL);
        if (rc != 0 && rc != FTC_ECANCELED && !failing) {
            FTC_LOG_WARN("manager.heartbeat", "%s: heartbeat failing: %s",
                         m->replica_id, ftc_last_error());
        } else if (rc == 0 && failing) {
            FTC_LOG_INFO("manager.heartbeat", "%s: heartbeats answered again",
                         m->replica_id);
        }
        failing = rc != 0;
        next.ns += every * 1000000;
        if (ftc__deadline_expired(next)) {
            next = ftc__deadline_in_ms(every);
        }
    } while (ftc__manager_pause(m, next));
    return NULL;
}

/* Whether a collective of this step is still running. */
static bool collective_running(ftc_manager *m)
{
    bool running = false;
    pthread_mutex_lock(&m->work_mu);
    for (ftc_manager_work *w = m->works; w != NULL && !running; w = w->next) {
        int done = 1;
        running =
            w->work != NULL && ftc_work_test(w->work, &done) == 0 && !done;
    }
    pthread_mutex_unlock(&m->work_mu);
    return running;
}

/* Aborts pg (borrowed from the slot, given back here), the group of
 * quorum qid, for the reason why. The step fails if a collective of it
 * was running (the abort fails it: the reason is latched for it), not for
 * collectives that completed before: their results are whole, and the
 * lighthouse's grant decides whether this group may still commit the
 * step (a group that lost a member just after the step's collectives
 * would otherwise fail a step that member committed, and then wait for
 * it below the job's committed step). A collective issued later fails on
 * the aborted group. */
static void pushed_abort(ftc_manager *m, ftc_pg *pg, int64_t qid,
                         const char *why)
{
    bool running = collective_running(m);
    ftc__manager_pg_abort_unlocked(pg);
    ftc__manager_pg_give_back(m);
    if (running) {
        ftc__manager_latch_for(m, qid, FTC_EPEER,
                               "%s: the step's collectives were aborted", why);
    }
    /* Between steps the error is cleared by the next start_quorum, yet the
     * group is broken: make the next quorum get a new id. */
    pthread_mutex_lock(&m->mu);
    if (m->phase == FTC__MGR_IDLE) {
        atomic_store(&m->force_new_quorum, true);
    }
    pthread_mutex_unlock(&m->mu);
    FTC_MGR_STAT(m, pushed_aborts, 1);
}

/* Under pg_mu, which it releases while it waits: cancels the process
 * group being built for the reason why (the build then fails with it)
 * and waits until the build has returned, cancelling again every 20 ms
 * (a cancel that finds no store call in progress is dropped; the tcp
 * mesh watches the store's cancel too), for at most 2 s: a backend whose
 * set-up does not watch the cancel (a vendor library's) ends at its own
 * timeout, and the loss then aborts the group it installs (the lost
 * ring), while this thread goes on with the events. Returns at once when
 * no build runs. */
static void cancel_build_locked(ftc_manager *m, const char *why)
{
    uint64_t seq = m->rdv_seq;
    if (m->rdv_store != NULL) {
        snprintf(m->rdv_why, sizeof(m->rdv_why), "%s", why);
    }
    for (int tries = 0;
         tries < 100 && m->rdv_store != NULL && m->rdv_seq == seq; tries++) {
        ftc_store_client_cancel(m->rdv_store);
        ftc__deadline dl = ftc__deadline_in_ms(20);
        struct timespec ts = {dl.ns / 1000000000, dl.ns % 1000000000};
        pthread_cond_timedwait(&m->pg_cv, &m->pg_mu, &ts);
    }
}

static const char *cause_name(const ftc_lighthouse_event *ev)
{
    static const char *const causes[] = {"?", "its connection dropped",
                                         "its heartbeat timed out"};
    return causes[ev->cause >= 1 && ev->cause <= 2 ? (int)ev->cause : 0];
}

/* Records a lost member and aborts the process group if it is one of its
 * members (an event about this quorum or a later one), or cancels the
 * group's build if one runs for such a quorum. */
static void member_lost(ftc_manager *m, const ftc_lighthouse_event *ev)
{
    /* A lost healer will not release this rank's lent state. */
    ftc__heal_server_release(m->heal_srv, ev->replica_id);
    if (ev->cause == FTC_LIGHTHOUSE_LOST_GOODBYE) {
        /* A clean exit comes after its vote; a collective it left behind
         * fails on its own (its process group tells its peers). */
        return;
    }
    pthread_mutex_lock(&m->pg_mu);
    size_t slot = m->n_lost % FTC__MGR_LOST_MAX;
    snprintf(m->lost[slot].id, sizeof(m->lost[slot].id), "%s", ev->replica_id);
    m->lost[slot].quorum_id = ev->quorum_id;
    if (m->n_lost < FTC__MGR_LOST_MAX) {
        m->n_lost++;
    }
    bool concerned = ftc__manager_event_aborts(
        ev->replica_id, ev->quorum_id, m->pg_quorum_id, m->pg_members, m->pg_n);
    int64_t qid = m->pg_quorum_id;
    char why[FTC__MGR_MSG_MAX];
    snprintf(why, sizeof(why), "replica %s of quorum %" PRId64 " was lost (%s)",
             ev->replica_id, qid, cause_name(ev));
    if (concerned && m->pg == NULL) {
        cancel_build_locked(m, why);
    }
    /* (A build the cancel came too late for installed its group.) */
    bool abort = concerned && m->pg != NULL && m->pg_quorum_id == qid;
    /* Borrowed: the abort (up to 1 s) runs after unlocking. */
    ftc_pg *pg = abort ? ftc__manager_pg_borrow_locked(m) : NULL;
    pthread_mutex_unlock(&m->pg_mu);
    if (abort) {
        pushed_abort(m, pg, qid, why);
    }
}

/* A new lighthouse (restarted, or another elected: a new epoch) forms
 * quorums with new ids only, so the installed group is done; a collective
 * on it could otherwise wait out its whole timeout for a peer that
 * already joined the new lighthouse's quorum (its answer from the old one
 * lost with it). Aborted at once: at most the step in flight fails. */
static void lighthouse_changed(ftc_manager *m, uint32_t epoch)
{
    pthread_mutex_lock(&m->pg_mu);
    bool over =
        m->pg_quorum_id >= 0 && ftc__quorum_id_epoch(m->pg_quorum_id) != epoch;
    int64_t qid = m->pg_quorum_id;
    char why[FTC__MGR_MSG_MAX];
    snprintf(why, sizeof(why),
             "the lighthouse changed (epoch %u): quorum %" PRId64 " is over",
             epoch, qid);
    if (over && m->pg == NULL) {
        cancel_build_locked(m, why);
    }
    bool abort = over && m->pg != NULL && m->pg_quorum_id == qid;
    ftc_pg *pg = abort ? ftc__manager_pg_borrow_locked(m) : NULL;
    pthread_mutex_unlock(&m->pg_mu);
    if (abort) {
        pushed_abort(m, pg, qid, why);
    }
}

static void killed(ftc_manager *m, const char *self)
{
    pthread_mutex_lock(&m->err_mu);
    m->killed = true;
    pthread_mutex_unlock(&m->err_mu);
    ftc__manager_latch(m, FTC_ECANCELED,
                       "replica %s was killed by the "
                       "lighthouse's operator",
                       self);
    ftc__manager_abort_pg(m);
}

static void handle(ftc_manager *m, const ftc_lighthouse_event *ev,
                   const char *self)
{
    if (ev->kind == FTC_LIGHTHOUSE_EVENT_MEMBER_LOST) {
        member_lost(m, ev);
    } else if (ev->kind == FTC_LIGHTHOUSE_EVENT_KILL &&
               strcmp(ev->replica_id, self) == 0) {
        killed(m, self);
    }
}

void *ftc__manager_watch_main(void *arg)
{
    ftc_manager *m = arg;
    /* Nothing to abort before the first quorum; the leader's watch is
     * its presence, which must not start before its first join. */
    pthread_mutex_lock(&m->mu);
    while (!m->stop && !m->quorum_known) {
        pthread_cond_wait(&m->cv, &m->mu);
    }
    char self[FTC__QUORUM_STR_MAX];
    memcpy(self, m->replica_id, sizeof(self));
    /* From where the events stood before the first round (prime_watch):
     * a loss the lighthouse reported since is not missed. */
    uint32_t epoch = m->watch_epoch;
    uint64_t since = m->watch_since;
    pthread_mutex_unlock(&m->mu);
#ifdef FTC_TESTING
    void (*hook)(void) = atomic_load(&ftc__manager_testing_before_watch);
    if (hook != NULL) {
        hook();
    }
#endif
    ftc__backoff bo;
    ftc__backoff_init(&bo, 100, 1000);
    bool go = true;
    while (go) {
        ftc_lighthouse_watch_result w;
        int rc = ftc_lighthouse_client_watch(
            m->lh, m->o.group_rank == 0 ? self : NULL, epoch, since,
            FTC__MGR_WATCH_MS, &w);
        if (rc == 0 && w.reset) {
            if (epoch != 0 && w.epoch != epoch) {
                FTC_LOG_INFO("manager.epoch",
                             "%s: the lighthouse restarted (epoch %u -> %u)",
                             self, epoch, w.epoch);
            }
            pthread_mutex_lock(&m->pg_mu);
            m->n_lost = 0;
            pthread_mutex_unlock(&m->pg_mu);
            if (epoch != 0 && w.epoch != epoch) {
                lighthouse_changed(m, w.epoch);
            }
        }
        for (size_t i = 0; rc == 0 && i < w.n_events; i++) {
            handle(m, &w.events[i], self);
        }
        if (rc == 0) {
            epoch = w.epoch;
            since = w.event_seq;
            ftc__backoff_init(&bo, 100, 1000);
        }
        ftc_lighthouse_watch_result_fini(&w);
        /* Unreachable (restarting?): ask again after a pause. */
        go = rc == 0 ? ftc__manager_pause(m, ftc__deadline_in_ms(0))
                     : ftc__manager_pause(
                           m, ftc__deadline_in_ms(ftc__backoff_next_ms(&bo)));
    }
    return NULL;
}
