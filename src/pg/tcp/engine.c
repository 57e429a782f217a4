/* The progress engine of a tcp group. One driver at a time pumps every
 * channel with non-blocking I/O and epoll: the group's progress thread
 * while operations are pending and nobody waits, or a user thread inside
 * ftc_work_wait (so a waiter is woken by the kernel directly, not by a
 * second thread). A waiter may poll briefly before sleeping when the host
 * has a core per local rank.
 *
 * Failure of any kind fails every pending operation, tells the peers
 * (ABORT on the side channels) and latches: later calls say the group is
 * unusable until rebuilt. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pg/tcp/tcp_int.h"

/* epoll data: the kind of fd in the top bits, its index below. */
#define EV_DOORBELL 0ull
#define EV_COLL (1ull << 32)
#define EV_SIDE (2ull << 32)

static bool work_done(const ftc_work *w)
{
    return atomic_load_explicit(&w->done, memory_order_acquire) != 0;
}

/* ------------------------------------------------------------ completion */

void ftc__tcp_op_done(ftc__tcp *g, ftc__op *op, int rc, const char *msg)
{
    if (op->work != NULL) {
        op->work->source = op->coll == FTC__RECV ? op->root : -1;
        ftc__work_finish(op->work, rc, msg);
    }
    op->next = g->done;
    g->done = op;
}

/* Settles finished ops with the other threads: pending count, callbacks
 * (run by the progress thread), references, wake-ups. */
static void settle(ftc__tcp *g)
{
    if (g->done == NULL) {
        return;
    }
    ftc__op *list = g->done;
    g->done = NULL;
    pthread_mutex_lock(&g->mu);
    for (ftc__op *op = list; op != NULL; op = op->next) {
        g->npending--;
        ftc_work *w = op->work;
        if (w != NULL && w->cb != NULL) {
            w->cb_next = NULL;
            *g->cbq_tail = w;
            g->cbq_tail = &w->cb_next;
            atomic_store(&g->cb_due, true);
        } else if (w != NULL) {
            ftc__work_unref(w);
        }
        op->work = NULL;
    }
    atomic_store(&g->npending_a, g->npending);
    if (g->nwaiting > 0) {
        pthread_cond_broadcast(&g->user_cv);
    }
    if (g->cbq != NULL && g->pt_sleeping) {
        pthread_cond_signal(&g->pt_cv);
    }
    pthread_mutex_unlock(&g->mu);
    while (list != NULL) {
        ftc__op *next = list->next;
        ftc__op_free(list);
        list = next;
    }
}

/* ---------------------------------------------------------------- failure */

/* Stops sending on side channels and queues an ABORT for every peer that
 * can still take one. A frame cut in the middle cannot be finished safely
 * (its buffer belongs to a failed op), so that channel is shut instead:
 * the peer sees the end of stream and fails too. */
static void tell_peers(ftc__tcp *g, int kind, int code, const char *text)
{
    for (int p = 0; p < g->size; p++) {
        ftc__chan *c = &g->side[p];
        if (p == g->rank || c->fd < 0) {
            continue;
        }
        if (c->oq_off > 0) {
            shutdown(c->fd, SHUT_WR);
            continue;
        }
        ftc__chan_drop_queue(c);
        if (kind == FTC__PGW_ABORT) {
            ftc__chan_queue_abort(g, c, code, text);
        } else {
            ftc__chan_queue_ctrl(g, c, kind, 0, code, text);
        }
        ftc__chan_flush(g, c);
    }
}

/* Fails the group with the blame set the caller left in g->blame. */
static void fail_v(ftc__tcp *g, int code, bool on_purpose, const char *fmt,
                   va_list ap) __attribute__((format(printf, 4, 0)));

static void fail_v(ftc__tcp *g, int code, bool on_purpose, const char *fmt,
                   va_list ap)
{
    char msg[sizeof(g->fail_msg)];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    /* This rank's own ftc_pg_abort (a manager dropping a group it no
     * longer needs, or shutting down) is not a fault worth a warning. */
    if (code == FTC_ECANCELED) {
        FTC_LOG_INFO("pg.failed", "group %016llx rank %d: %s",
                     (unsigned long long)g->group_id, g->rank, msg);
    } else {
        FTC_LOG_WARN("pg.failed", "group %016llx rank %d: %s",
                     (unsigned long long)g->group_id, g->rank, msg);
    }
    g->on_purpose = on_purpose || code == FTC_ECANCELED;
    pthread_mutex_lock(&g->mu);
    g->failed = code;
    memcpy(g->fail_msg, msg, sizeof(msg));
    pthread_mutex_unlock(&g->mu);
    if (g->cur != NULL) {
        ftc__tcp_op_done(g, g->cur, code, msg);
        g->cur = NULL;
    }
    while (g->queue != NULL) {
        ftc__op *op = g->queue;
        g->queue = op->next;
        ftc__tcp_op_done(g, op, code, msg);
    }
    g->queue_tail = &g->queue;
    ftc__p2p_fail_all(g, code, msg);
    char text[sizeof(msg) + 32];
    snprintf(text, sizeof(text), "%s", msg);
    tell_peers(g, FTC__PGW_ABORT, code, text);
}

bool *ftc__tcp_blame_begin(ftc__tcp *g)
{
    /* A held ABORT came first: it is the failure reported. */
    ftc__tcp_apply_held_abort(g);
    if (g->failed) {
        return NULL;
    }
    memset(g->blame, 0, (size_t)g->size * sizeof(*g->blame));
    return g->blame;
}

void ftc__tcp_fail(ftc__tcp *g, int code, const char *fmt, ...)
{
    if (ftc__tcp_blame_begin(g) == NULL) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fail_v(g, code, false, fmt, ap);
    va_end(ap);
}

void ftc__tcp_fail_peer(ftc__tcp *g, int peer, int code, const char *fmt, ...)
{
    bool *blame = ftc__tcp_blame_begin(g);
    if (blame == NULL) {
        return;
    }
    blame[peer] = peer != g->rank;
    va_list ap;
    va_start(ap, fmt);
    fail_v(g, code, false, fmt, ap);
    va_end(ap);
}

void ftc__tcp_fail_blamed(ftc__tcp *g, int code, bool on_purpose,
                          const char *fmt, ...)
{
    if (g->failed) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fail_v(g, code, on_purpose, fmt, ap);
    va_end(ap);
}

int ftc__tcp_failed_peers(void *impl, int *ranks, int cap)
{
    ftc__tcp *g = impl;
    pthread_mutex_lock(&g->mu);
    int n = g->failed ? ftc__pg_blame_list(g->blame, g->size, ranks, cap) : 0;
    pthread_mutex_unlock(&g->mu);
    return n;
}

/* ------------------------------------------------------------------ timers */

/* The probe starts this long before an operation's deadline, so that the
 * timeout can say which peers stopped answering. */
static int64_t probe_window_ns(const ftc__op *op)
{
    int64_t w = op->timeout_ms / 4;
    w = w < 10 ? 10 : (w > 1000 ? 1000 : w);
    return w * 1000000;
}

static void start_probe(ftc__tcp *g)
{
    g->probing = true;
    g->probe_start_ns = ftc__now_ns();
    g->probe_nonce++;
    for (int p = 0; p < g->size; p++) {
        g->pong[p] = p == g->rank;
        if (p != g->rank && g->side[p].fd >= 0) {
            ftc__chan_queue_ctrl(g, &g->side[p], FTC__PGW_PING, g->probe_nonce,
                                 0, NULL);
            ftc__chan_flush(g, &g->side[p]);
        }
    }
}

/* Appends "; <label> rank a (addr), rank b (addr)" for the peers picked. */
static void list_peers(ftc__tcp *g, char *out, size_t cap, const char *label,
                       const bool *pick)
{
    size_t len = strlen(out);
    int shown = 0, more = 0;
    for (int p = 0; p < g->size; p++) {
        if (!pick[p]) {
            continue;
        }
        if (shown == 6) {
            more++;
            continue;
        }
        len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s%s",
                                shown == 0 ? label : ", ", g->side[p].name);
        shown++;
    }
    if (more > 0 && len < cap) {
        snprintf(out + len, cap - len, " and %d more", more);
    }
}

void ftc__tcp_probe_blame(ftc__tcp *g, bool *blame, int except)
{
    if (g->cur == NULL || !g->probing) {
        return;
    }
    bool judged =
        ftc__now_ns() - g->probe_start_ns >= probe_window_ns(g->cur) / 2;
    for (int p = 0; p < g->size; p++) {
        if (g->pong[p]) {
            blame[p] = false;
        } else if (judged && p != except) {
            blame[p] = true;
        }
    }
}

/* Blames the peers that did not answer the probe, not those this rank
 * waits for: they may be waiting for someone else. */
static void fail_timeout(ftc__tcp *g)
{
    const ftc__op *op = g->cur;
    char msg[sizeof(g->fail_msg)];
    snprintf(msg, sizeof(msg), "%s #%llu timed out after %lld ms",
             ftc__coll_name(op->coll), (unsigned long long)op->seq,
             (long long)op->timeout_ms);
    bool *pick = ftc__calloc((size_t)g->size, sizeof(bool));
    if (pick != NULL) {
        for (int i = 0; i < g->plan.nactive; i++) {
            int ci = g->plan.active[i];
            const ftc__plan_chan *pc = &g->plan.ch[ci];
            if (pc->recvd < pc->nrecvs || pc->sent < pc->nsends) {
                pick[ci / g->streams] = true;
            }
        }
        list_peers(g, msg, sizeof(msg), "; waiting for ", pick);
        if (g->probing) {
            for (int p = 0; p < g->size; p++) {
                pick[p] = !g->pong[p];
            }
            list_peers(g, msg, sizeof(msg),
                       "; no answer to a liveness probe (stopped or hung?) "
                       "from ",
                       pick);
        }
        ftc__free(pick);
    }
    bool *blame = ftc__tcp_blame_begin(g);
    if (blame != NULL) {
        ftc__tcp_probe_blame(g, blame, -1);
    }
    ftc__tcp_fail_blamed(g, FTC_ETIMEDOUT, false, "%s", msg);
}

/* Fires due timers; returns the next time (ns) a timer is due. */
static int64_t check_timers(ftc__tcp *g)
{
    int64_t now = ftc__now_ns(), next = INT64_MAX;
    if (g->cur != NULL && !ftc__deadline_is_never(g->cur->deadline)) {
        int64_t dl = g->cur->deadline.ns;
        int64_t probe_at = dl - probe_window_ns(g->cur);
        if (!g->probing && now >= probe_at) {
            start_probe(g);
        }
        if (now >= dl) {
            fail_timeout(g);
            return now;
        }
        next = g->probing ? dl : probe_at;
    }
    ftc__op *o = ftc__p2p_next_deadline(g);
    if (o != NULL && !ftc__deadline_is_never(o->deadline)) {
        if (now >= o->deadline.ns) {
            ftc__tcp_fail(g, FTC_ETIMEDOUT,
                          "%s rank %d tag %u timed out after %lld ms",
                          o->coll == FTC__SEND ? "send to" : "recv from",
                          o->root, o->tag, (long long)o->timeout_ms);
            return now;
        }
        next = o->deadline.ns < next ? o->deadline.ns : next;
    }
    return next;
}

/* -------------------------------------------------------------------- pump */

/* Takes what other threads submitted. */
static void intake(ftc__tcp *g)
{
    pthread_mutex_lock(&g->mu);
    ftc__op *list = g->inbox;
    g->inbox = NULL;
    g->inbox_tail = &g->inbox;
    pthread_mutex_unlock(&g->mu);
    while (list != NULL) {
        ftc__op *op = list;
        list = op->next;
        op->next = NULL;
        if (g->failed) {
            ftc__tcp_op_done(g, op, g->failed, g->fail_msg);
        } else if (op->coll == FTC__SEND || op->coll == FTC__RECV) {
            ftc__p2p_take(g, op);
        } else {
            *g->queue_tail = op;
            g->queue_tail = &op->next;
        }
    }
}

static bool start_next(ftc__tcp *g)
{
    ftc__op *op = g->queue;
    g->queue = op->next;
    if (g->queue == NULL) {
        g->queue_tail = &g->queue;
    }
    op->next = NULL;
    g->cur = op;
    g->cur_start_ns = ftc__now_ns();
    g->probing = false;
    ftc__sched_group sg = {.rank = g->rank,
                           .size = g->size,
                           .streams = g->streams,
                           .segment_bytes = g->pg->opts.segment_bytes,
                           .small_bytes = g->pg->opts.small_bytes,
                           .scratch = &g->scratch,
                           .hosts = &g->hosts};
    int rc = ftc__sched_build(&sg, &g->plan, op);
    if (rc != 0) {
        ftc__tcp_fail(g, rc, "%s #%llu: %s", ftc__coll_name(op->coll),
                      (unsigned long long)op->seq, ftc_last_error());
    }
    return true;
}

static void pump(ftc__tcp *g)
{
    intake(g);
    if (atomic_load(&g->abort_req) && !g->failed) {
        ftc__tcp_fail(g, FTC_ECANCELED,
                      "rank %d aborted the group (ftc_pg_abort)", g->rank);
    }
    bool moved = true;
    while (moved && !g->failed) {
        moved = false;
        if (g->cur == NULL && g->queue != NULL) {
            moved = start_next(g);
        }
        for (int i = 0; g->cur != NULL && i < g->plan.nactive; i++) {
            moved |= ftc__chan_pump_coll(g, &g->coll[g->plan.active[i]]);
        }
        if (g->cur != NULL && !g->failed && g->plan.pending == 0) {
            ftc__tcp_op_done(g, g->cur, 0, NULL);
            g->cur = NULL;
            moved = true;
        }
        /* A peer's ABORT waits until the collectives stop moving. */
        if (!moved) {
            ftc__tcp_apply_held_abort(g);
        }
        for (int p = 0; p < g->size && !g->failed; p++) {
            ftc__chan *c = &g->side[p];
            if (c->fd >= 0 && (c->readable || c->oq_head != NULL)) {
                moved |= ftc__chan_pump_side(g, c);
            }
        }
        moved |= ftc__p2p_match_unexpected(g);
        if (!g->failed) {
            check_timers(g);
        }
    }
    settle(g);
}

/* Marks channels from epoll events. */
static void take_events(ftc__tcp *g, const struct epoll_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t d = ev[i].data.u64;
        if (d == EV_DOORBELL) {
            ftc__event_clear(&g->doorbell);
            continue;
        }
        uint32_t idx = (uint32_t)d;
        ftc__chan *c = (d & EV_SIDE) ? &g->side[idx] : &g->coll[idx];
        if (ev[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
            c->readable = true;
        }
        if (ev[i].events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) {
            c->writable = true;
        }
        if (ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
            c->hup = true;
        }
    }
}

/* The progress thread stops driving for a waiter, for destroy, when
 * nothing is pending, or to run due callbacks (which would otherwise wait
 * for the whole queue). Watching an idle group, it stops as soon as there
 * is work (driven as usual) or the group failed (nothing left to hear). */
static bool pt_should_leave(ftc__tcp *g)
{
    if (atomic_load(&g->want) > 0 || atomic_load(&g->stop_req) ||
        atomic_load(&g->cb_due)) {
        return true;
    }
    if (g->pt_idle) {
        return atomic_load(&g->npending_a) > 0 || g->failed;
    }
    return atomic_load(&g->npending_a) == 0;
}

/* Polling adapts to what it achieves: a poll window that ends without an
 * event is a miss, an event inside one a hit. Every 32 windows, mostly
 * misses halve the window (below 2 us: no polling), mostly hits double it
 * back up to spin_ns. Without polling, every 256th sleep tries a quarter
 * window again. So a host whose other tenants take the cores stops
 * polling, and one with idle cores keeps it. */
static void spin_learn(ftc__tcp *g, bool hit)
{
    *(hit ? &g->spin_hits : &g->spin_misses) += 1;
    if (g->spin_hits + g->spin_misses < 32) {
        return;
    }
    if (g->spin_misses > g->spin_hits) {
        g->spin_cur /= 2;
        g->spin_cur = g->spin_cur < 2000 ? 0 : g->spin_cur;
    } else if (g->spin_misses * 4 < g->spin_hits) {
        g->spin_cur =
            g->spin_cur * 2 > g->spin_ns ? g->spin_ns : g->spin_cur * 2;
    }
    g->spin_hits = g->spin_misses = 0;
}

/* Runs the engine until w is done (user driver) or the progress thread
 * should hand over, or dl passes. Polls for spin_cur after activity, then
 * sleeps in epoll_wait until a socket, the doorbell or a timer. */
static void drive(ftc__tcp *g, bool pt, ftc_work *w, ftc__deadline dl)
{
    struct epoll_event ev[64];
    /* An idle group's events are rare: sleep at once, learn nothing. */
    bool may_poll = !(pt && g->pt_idle);
    int64_t spin_end = ftc__now_ns() + (may_poll ? g->spin_cur : 0);
    bool polling = may_poll && g->spin_cur > 0;
    for (;;) {
        pump(g);
        if (w != NULL && work_done(w)) {
            return;
        }
        if (pt && pt_should_leave(g)) {
            return;
        }
        if (!pt && w == NULL) {
            return;
        }
        int64_t now = ftc__now_ns();
        if (now >= dl.ns) {
            return;
        }
        if (g->shm_moved) {
            /* Lanes move without socket events: their progress is a hit. */
            g->shm_moved = false;
            if (polling) {
                spin_learn(g, true);
            }
            spin_end = now + (may_poll ? g->spin_cur : 0);
            polling = may_poll && g->spin_cur > 0;
        }
        int timeout = 0;
        if (now >= spin_end) {
            if (polling) {
                spin_learn(g, false);
                polling = false;
            } else if (may_poll && g->spin_cur == 0 && g->spin_ns > 0 &&
                       ++g->spin_sleeps % 256 == 0) {
                g->spin_cur = g->spin_ns / 4;
            }
            int64_t until = g->failed ? dl.ns : check_timers(g);
            until = until < dl.ns ? until : dl.ns;
            timeout = until == INT64_MAX
                          ? -1
                          : (int)((until - now + 999999) / 1000000);
            if (timeout != 0 && ftc__shm_arm(g)) {
                g->shm_moved = false;
                continue;
            }
        }
        int n = epoll_wait(g->epfd, ev, 64, timeout);
        if (n > 0) {
            if (polling) {
                spin_learn(g, true);
            }
            take_events(g, ev, n);
            spin_end = ftc__now_ns() + (may_poll ? g->spin_cur : 0);
            polling = may_poll && g->spin_cur > 0;
        } else if (n < 0 && errno != EINTR) {
            ftc__tcp_fail(g, FTC_ESYS, "epoll_wait: %s", strerror(errno));
        }
    }
}

/* ------------------------------------------------------ driver hand-over */

/* Called with mu held after a driver let go: wakes whoever needs to run
 * next. */
static void released(ftc__tcp *g)
{
    g->driver = FTC__DRIVER_NONE;
    if (g->nwaiting > 0) {
        pthread_cond_broadcast(&g->user_cv);
    }
    if (g->pt_sleeping && atomic_load(&g->want) == 0 &&
        (g->npending > 0 || g->cbq != NULL)) {
        pthread_cond_signal(&g->pt_cv);
    }
}

/* With mu held: runs the engine once on this thread if nobody drives it,
 * else rings the driver's doorbell. */
static void pump_here(ftc__tcp *g)
{
    if (g->driver == FTC__DRIVER_NONE) {
        g->driver = FTC__DRIVER_USER;
        pthread_mutex_unlock(&g->mu);
        pump(g);
        pthread_mutex_lock(&g->mu);
        released(g);
    } else {
        ftc__event_signal(&g->doorbell);
    }
}

static void *pt_main(void *arg)
{
    ftc__tcp *g = arg;
    bool idle_watch_due = false;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        if (g->cbq != NULL) {
            ftc_work *list = g->cbq;
            g->cbq = NULL;
            g->cbq_tail = &g->cbq;
            atomic_store(&g->cb_due, false);
            pthread_mutex_unlock(&g->mu);
            ftc__set_in_callback(true);
            while (list != NULL) {
                ftc_work *w = list;
                list = w->cb_next;
                w->cb(w->cb_arg, w, w->rc);
                ftc__work_unref(w);
            }
            ftc__set_in_callback(false);
            pthread_mutex_lock(&g->mu);
            continue;
        }
        bool may_drive =
            g->driver == FTC__DRIVER_NONE && atomic_load(&g->want) == 0;
        if (may_drive && (g->npending > 0 || idle_watch_due)) {
            g->driver = FTC__DRIVER_PT;
            g->pt_idle = g->npending == 0;
            pthread_mutex_unlock(&g->mu);
            drive(g, true, NULL, FTC_DEADLINE_NEVER);
            pthread_mutex_lock(&g->mu);
            g->pt_idle = false;
            idle_watch_due = false;
            released(g);
            continue;
        }
        /* A group idle for FTC__PG_IDLE_WATCH_MS is watched by this thread
         * until its next operation, so that it answers its peers' liveness
         * probes (a slow rank is not called hung) and hears an abort or a
         * dead peer at once (ftc_pg_status says so before the next call).
         * Not at once: a rank that submits while this thread drives pays a
         * hand-over, which only an idle pause can afford. */
        g->pt_sleeping = true;
        if (g->failed) {
            pthread_cond_wait(&g->pt_cv, &g->mu);
        } else {
            ftc__deadline dl = ftc__deadline_in_ms(FTC__PG_IDLE_WATCH_MS);
            struct timespec ts = {.tv_sec = dl.ns / 1000000000,
                                  .tv_nsec = dl.ns % 1000000000};
            idle_watch_due =
                pthread_cond_timedwait(&g->pt_cv, &g->mu, &ts) == ETIMEDOUT;
        }
        g->pt_sleeping = false;
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* ------------------------------------------------------------- public-ish */

static int unusable(ftc__tcp *g)
{
    return ftc__seterr(g->failed,
                       "process group unusable after an earlier failure "
                       "(destroy it and build a new one): %s",
                       g->fail_msg);
}

int ftc__tcp_submit(void *impl, ftc__op *op)
{
    ftc__tcp *g = impl;
    pthread_mutex_lock(&g->mu);
    if (g->failed || g->stop) {
        int rc = g->failed ? unusable(g)
                           : ftc__seterr(FTC_ECLOSED, "group is closing");
        pthread_mutex_unlock(&g->mu);
        return rc; /* not taken: the pg layer frees op */
    }
    if (op->coll != FTC__SEND && op->coll != FTC__RECV) {
        op->seq = ++g->coll_seq;
    }
    op->next = NULL;
    *g->inbox_tail = op;
    g->inbox_tail = &op->next;
    g->npending++;
    atomic_store(&g->npending_a, g->npending);
    /* Start it here: its first messages leave before this returns. */
    pump_here(g);
    pthread_mutex_unlock(&g->mu);
    return 0;
}

/* With mu held: sleeps until a completion or driver change is announced
 * on user_cv, or dl passes. */
static void sleep_until(ftc__tcp *g, ftc__deadline dl)
{
    g->nwaiting++;
    if (ftc__deadline_is_never(dl)) {
        pthread_cond_wait(&g->user_cv, &g->mu);
    } else {
        struct timespec ts = {.tv_sec = dl.ns / 1000000000,
                              .tv_nsec = dl.ns % 1000000000};
        pthread_cond_timedwait(&g->user_cv, &g->mu, &ts);
    }
    g->nwaiting--;
}

int ftc__tcp_wait(void *impl, ftc_work *w, ftc__deadline dl)
{
    ftc__tcp *g = impl;
    pthread_mutex_lock(&g->mu);
    while (!work_done(w)) {
        if (g->driver == FTC__DRIVER_NONE) {
            g->driver = FTC__DRIVER_USER;
            pthread_mutex_unlock(&g->mu);
            drive(g, false, w, dl);
            pthread_mutex_lock(&g->mu);
            released(g);
        } else {
            atomic_fetch_add(&g->want, 1);
            if (g->driver == FTC__DRIVER_PT) {
                ftc__event_signal(&g->doorbell);
            }
            sleep_until(g, dl);
            atomic_fetch_sub(&g->want, 1);
        }
        if (!work_done(w) && ftc__deadline_expired(dl)) {
            pthread_mutex_unlock(&g->mu);
            return ftc__seterr(FTC_ETIMEDOUT,
                               "wait timed out; the operation goes on");
        }
    }
    pthread_mutex_unlock(&g->mu);
    return 0;
}

void ftc__tcp_abort(void *impl)
{
    ftc__tcp *g = impl;
    atomic_store(&g->abort_req, true);
    pthread_mutex_lock(&g->mu);
    if (!g->stop) {
        pump_here(g);
    }
    /* If another thread drives, wait (briefly) until it has failed the
     * works and told the peers, so both are done when abort returns. */
    ftc__deadline dl = ftc__deadline_in_ms(1000);
    while (!g->failed && !g->stop && g->driver != FTC__DRIVER_NONE &&
           !ftc__deadline_expired(dl)) {
        sleep_until(g, dl);
    }
    pthread_mutex_unlock(&g->mu);
}

int ftc__tcp_status(void *impl)
{
    ftc__tcp *g = impl;
    pthread_mutex_lock(&g->mu);
    int rc = g->failed ? ftc__seterr(g->failed, "%s", g->fail_msg) : 0;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

/* ------------------------------------------------------------ start, stop */

static int watch(ftc__tcp *g, int fd, uint64_t data, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = data};
    if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        return ftc__seterr_errno(errno, "epoll_ctl");
    }
    return 0;
}

int ftc__tcp_engine_start(ftc__tcp *g)
{
    g->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (g->epfd < 0) {
        return ftc__seterr_errno(errno, "epoll_create1");
    }
    int rc = ftc__event_open(&g->doorbell);
    if (rc != 0) {
        return rc;
    }
    rc = watch(g, g->doorbell.fd, EV_DOORBELL, EPOLLIN);
    const uint32_t io = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    for (int i = 0; rc == 0 && i < g->size * g->streams; i++) {
        if (g->coll[i].fd >= 0) {
            rc = watch(g, g->coll[i].fd, EV_COLL | (uint32_t)i, io);
        }
    }
    for (int p = 0; rc == 0 && p < g->size; p++) {
        if (g->side[p].fd >= 0) {
            rc = watch(g, g->side[p].fd, EV_SIDE | (uint32_t)p, io);
        }
    }
    if (rc == 0) {
        rc = ftc__thread_start(&g->pt, "ftc-pg", pt_main, g);
    }
    g->pt_started = rc == 0;
    return rc;
}

void ftc__tcp_engine_stop(ftc__tcp *g)
{
    if (g->pt_started) {
        pthread_mutex_lock(&g->mu);
        g->stop = true;
        atomic_store(&g->stop_req, true);
        pthread_cond_signal(&g->pt_cv);
        ftc__event_signal(&g->doorbell);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->pt, NULL);
        g->pt_started = false;
    }
    /* Only this thread is left. Pending work fails and the peers hear why;
     * otherwise they hear that this rank leaves in good order. */
    intake(g);
    if (!g->failed && g->npending > 0) {
        ftc__tcp_fail(g, FTC_ECANCELED,
                      "rank %d destroyed the group with operations pending",
                      g->rank);
    } else if (!g->failed) {
        tell_peers(g, FTC__PGW_BYE, 0, NULL);
    }
    settle(g);
    ftc__set_in_callback(true);
    while (g->cbq != NULL) {
        ftc_work *w = g->cbq;
        g->cbq = w->cb_next;
        w->cb(w->cb_arg, w, w->rc);
        ftc__work_unref(w);
    }
    ftc__set_in_callback(false);
    g->cbq_tail = &g->cbq;
    if (g->epfd >= 0) {
        close(g->epfd);
        g->epfd = -1;
    }
    ftc__event_close(&g->doorbell);
}
