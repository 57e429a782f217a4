/* A Baby group's watcher thread: it reads the child's completions, copies
 * results back into the caller's buffers and completes the works, and it
 * watches the child: its exit (the set-up socket hangs up), its heartbeat
 * (a counter in the control segment the child's own thread bumps every
 * FTC__BABY_BEAT_MS), and the deadline of the oldest request. Whatever
 * goes wrong fails the group at once: the child is killed and every
 * pending work completes with the reason. The child is not trusted: a
 * completion must name a pending request, collectives must complete in
 * call order, and only that request's own output is written. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "pg/baby/parent.h"

/* After a request's deadline, how long the inner backend gets to report
 * its own (better) timeout before the parent kills the child. */
#define GRACE_NS (250 * 1000000LL)
/* The longest the watcher sleeps between looks at the heartbeat. */
#define LOOK_MS 100

void ftc__baby_describe_status(int status, char *out, size_t cap)
{
    if (WIFEXITED(status)) {
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        snprintf(out, cap, "ended (wait status %#x)", status);
    }
}

void ftc__baby_pump(baby *b)
{
    for (baby_op *o = b->head; o != NULL && b->inflight < FTC__BABY_SLOTS;
         o = o->next) {
        if (o->pushed) {
            continue;
        }
        if (ftc__baby_push(&b->req_end, &o->req) != 0) {
            return;
        }
        o->pushed = true;
        b->inflight++;
    }
}

static void kill_child(baby *b)
{
    if (!b->killed && b->pid > 0) {
        kill(b->pid, SIGKILL);
        b->killed = true;
    }
}

/* The group whose works this thread is completing (their callbacks may
 * abort it: that abort must not wait for this thread). */
static _Thread_local const baby *completing_here;

/* Completes o's work (taken off the list, counted in b->completing). */
static void finish(baby *b, ftc__op *op, int rc, const char *msg)
{
    const baby *outer = completing_here;
    completing_here = b;
    ftc_pg_backend_complete(op, rc, msg);
    completing_here = outer;
    pthread_mutex_lock(&b->mu);
    if (--b->completing == 0) {
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
}

void ftc__baby_fail(baby *b, int rc, const char *msg, int how)
{
    pthread_mutex_lock(&b->mu);
    /* The others are told of a failure of this member's own making (not
     * of one a peer reported, not of a destroy). */
    bool tell = b->failed == 0 && how == FTC__BABY_TELL;
    if (b->failed == 0) {
        b->failed = rc;
        snprintf(b->msg, sizeof(b->msg), "%s", msg);
    }
    if (how != FTC__BABY_KEEP_CHILD) {
        kill_child(b);
    }
    baby_op *q = b->head;
    for (baby_op *o = q; o != NULL; o = o->next) {
        b->completing++;
    }
    b->head = b->tail = NULL;
    b->inflight = 0;
    b->regions.n = 0; /* the child is gone: nothing of the arena is in use */
    rc = b->failed;
    char latched[FTC__PG_MSG_MAX];
    snprintf(latched, sizeof(latched), "%s", b->msg);
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (tell) {
        FTC_LOG_WARN("pg.failed", "%s rank %d: %s", b->name, b->rank, latched);
        ftc__baby_peers_tell(b, latched);
    }
    while (q != NULL) {
        baby_op *next = q->next;
        finish(b, q->op, rc, latched);
        ftc__free(q);
        q = next;
    }
    if (completing_here != b) {
        pthread_mutex_lock(&b->mu);
        while (b->completing > 0) {
            pthread_cond_wait(&b->cv, &b->mu);
        }
        pthread_mutex_unlock(&b->mu);
    }
}

static void protocol_error(baby *b, const char *what)
{
    char msg[FTC__PG_MSG_MAX];
    snprintf(msg, sizeof(msg),
             "%s: the child (pid %d) broke the protocol (%s); it was killed "
             "and the group is unusable until rebuilt",
             b->name, (int)b->pid, what);
    ftc__baby_fail(b, FTC_EPROTO, msg, FTC__BABY_TELL);
}

/* Finds and unlinks the request a completion names (mu held); NULL with
 * why set when the child may not complete it now. */
static baby_op *take(baby *b, uint64_t id, const char **why)
{
    baby_op **at = &b->head;
    bool older_coll = false;
    while (*at != NULL && (*at)->req.id != id) {
        older_coll |= (*at)->coll && (*at)->pushed;
        at = &(*at)->next;
    }
    baby_op *o = *at;
    if (o == NULL || !o->pushed) {
        *why = "a completion of a request that is not in flight";
        return NULL;
    }
    if (o->coll && older_coll) {
        *why = "a collective completed before an earlier one";
        return NULL;
    }
    *at = o->next;
    if (b->tail == o) {
        b->tail = NULL;
        for (baby_op *t = b->head; t != NULL; t = t->next) {
            b->tail = t;
        }
    }
    b->inflight--;
    return o;
}

static bool known_code(int32_t rc)
{
    return rc == 0 ||
           (rc < 0 && strcmp(ftc_strerror(rc), FTC__ERR_UNKNOWN_TEXT) != 0);
}

static void complete(baby *b, const ftc__baby_done *d)
{
    const char *why = NULL;
    pthread_mutex_lock(&b->mu);
    if (b->failed != 0 && b->head == NULL) {
        pthread_mutex_unlock(&b->mu); /* failed meanwhile: already done */
        return;
    }
    baby_op *o = take(b, d->id, &why);
    b->completing += o != NULL;
    pthread_mutex_unlock(&b->mu);
    if (o == NULL) {
        protocol_error(b, why);
        return;
    }
    const ftc_pg_request *desc = &o->op->desc;
    int rc = d->rc;
    if (!known_code(rc)) {
        why = "an unknown result code";
    } else if (rc == 0 && desc->coll == FTC_PG_COLL_RECV &&
               (d->source < 0 || d->source >= b->size ||
                (desc->root != FTC_PG_ANY_SOURCE && d->source != desc->root))) {
        why = "a receive from a rank it was not posted for";
    }
    if (why != NULL) {
        /* Not completed by the child: fail it with the group. */
        pthread_mutex_lock(&b->mu);
        o->next = b->head;
        b->head = o;
        b->inflight++;
        b->completing--;
        pthread_mutex_unlock(&b->mu);
        protocol_error(b, why);
        return;
    }
    char msg[FTC__BABY_MSG_MAX];
    memcpy(msg, d->msg, sizeof(msg));
    msg[sizeof(msg) - 1] = '\0';
    if (rc == 0 && o->recv_bytes > 0) {
        memcpy(desc->recv, b->arena + o->req.recv_off, o->recv_bytes);
        atomic_fetch_add_explicit(&b->copied, o->recv_bytes,
                                  memory_order_relaxed);
    }
    if (rc == 0 && desc->coll == FTC_PG_COLL_RECV) {
        o->op->root = d->source; /* what ftc_work_source reports */
    }
    pthread_mutex_lock(&b->mu);
    if (o->len > 0) {
        uint64_t len;
        ftc__baby_regions_free(&b->regions, o->off, &len);
    }
    if (rc != 0 && rc != FTC_EMSGSIZE && b->failed == 0) {
        /* The inner group failed (a receive of the wrong size leaves it
         * usable, as on every backend). */
        b->failed = rc;
        snprintf(b->msg, sizeof(b->msg), "%s", msg);
    }
    ftc__baby_pump(b);
    pthread_mutex_unlock(&b->mu);
    finish(b, o->op, rc, rc != 0 ? msg : NULL);
    ftc__free(o);
}

/* The child hung up: reaps it and fails the group with how it ended. */
static void child_gone(baby *b)
{
    /* The pid is forgotten before it is reaped: once reaped it may be
     * reused, and nothing may signal it then. */
    pthread_mutex_lock(&b->mu);
    pid_t pid = b->pid;
    b->pid = -1;
    pthread_mutex_unlock(&b->mu);
    int status = 0;
    pid_t r;
    do {
        r = waitpid(pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    char how[160], msg[FTC__PG_MSG_MAX];
    if (r == pid) {
        ftc__baby_describe_status(status, how, sizeof(how));
    } else {
        snprintf(how, sizeof(how), "ended (not reapable: %s)", strerror(errno));
    }
    pthread_mutex_lock(&b->mu);
    bool killed = b->killed;
    b->status = status;
    pthread_mutex_unlock(&b->mu);
    snprintf(msg, sizeof(msg),
             "%s: the child process (pid %d) %s%s; the group is unusable "
             "until rebuilt",
             b->name, (int)pid, how, killed ? " after ftc killed it" : "");
    ftc__baby_fail(b, FTC_EPEER, msg, FTC__BABY_TELL);
}

/* The earliest deadline of a request in flight, plus the grace (mu held). */
static int64_t next_deadline(baby *b, const baby_op **which)
{
    int64_t best = INT64_MAX;
    *which = NULL;
    for (const baby_op *o = b->head; o != NULL; o = o->next) {
        int64_t d = o->op->deadline.ns;
        if (d != INT64_MAX && d < INT64_MAX - GRACE_NS && d + GRACE_NS < best) {
            best = d + GRACE_NS;
            *which = o;
        }
    }
    return best;
}

static void deadline_passed(baby *b, const baby_op *o)
{
    char msg[FTC__PG_MSG_MAX];
    snprintf(msg, sizeof(msg),
             "%s %s (seq %llu) passed its deadline (%lld ms) inside the "
             "child (pid %d), which was killed; the group is unusable until "
             "rebuilt",
             b->name, ftc__coll_name(o->op->coll),
             (unsigned long long)o->op->seq, (long long)o->op->timeout_ms,
             (int)b->pid);
    ftc__baby_fail(b, FTC_ETIMEDOUT, msg, FTC__BABY_TELL);
}

static void hung(baby *b)
{
    char msg[FTC__PG_MSG_MAX];
    snprintf(msg, sizeof(msg),
             "%s: the child process (pid %d) stopped answering its heartbeat "
             "for %lld ms (stopped or hung); it was killed and the group is "
             "unusable until rebuilt",
             b->name, (int)b->pid, (long long)(b->hang_ns / 1000000));
    ftc__baby_fail(b, FTC_ETIMEDOUT, msg, FTC__BABY_TELL);
}

void *ftc__baby_watch(void *arg)
{
    baby *b = arg;
    uint64_t beat = atomic_load(&b->shm->beat);
    int64_t beat_at = ftc__now_ns(), looked = beat_at;
    bool gone = false, broken = false;
    for (;;) {
        ftc__baby_done d;
        int got = gone || broken ? 0 : ftc__baby_pop(&b->done_end, &d);
        if (got == 1) {
            complete(b, &d);
            continue;
        }
        if (got < 0) {
            broken = true; /* the ring is garbage: read nothing more */
            protocol_error(b, "an impossible completion ring index");
        }
        const baby_op *late = NULL;
        pthread_mutex_lock(&b->mu);
        bool stop = b->stop, failed = b->failed != 0;
        int64_t due = failed ? INT64_MAX : next_deadline(b, &late);
        pthread_mutex_unlock(&b->mu);
        if (stop) {
            break;
        }
        int64_t now = ftc__now_ns();
        uint64_t beat_now = atomic_load(&b->shm->beat);
        if (now - looked > b->hang_ns / 2) {
            /* This process was not running (SIGSTOP of the job's process
             * group stops the child too): the silence says nothing. */
            beat_at = now;
        }
        looked = now;
        if (beat_now != beat) {
            beat = beat_now;
            beat_at = now;
        } else if (!gone && !failed && now - beat_at > b->hang_ns) {
            hung(b);
            continue;
        }
        if (late != NULL && now >= due) {
            deadline_passed(b, late);
            continue;
        }
        if (!gone && ftc__baby_sleep_begin(&b->done_end)) {
            ftc__baby_awake(&b->done_end);
            continue;
        }
        int64_t wait_ms = (due - now) / 1000000 + 1;
        struct pollfd p[2] = {{.fd = b->efd_done, .events = POLLIN},
                              {.fd = b->sock, .events = POLLIN}};
        poll(p, gone ? 1 : 2, wait_ms < LOOK_MS ? (int)wait_ms : LOOK_MS);
        ftc__baby_awake(&b->done_end);
        if (!gone && p[1].revents != 0) {
            /* Drain what completed before the exit, then report it. */
            while (ftc__baby_pop(&b->done_end, &d) == 1) {
                complete(b, &d);
            }
            gone = true;
            child_gone(b);
        }
    }
    return NULL;
}
