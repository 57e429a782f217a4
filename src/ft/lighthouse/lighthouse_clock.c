/* The lighthouse's clock thread: sleeps until the next deadline of any job
 * or a hang-up of a waiting long-poll's socket, then ticks, answers and
 * resumes; frees finished long-polls and deletes idle jobs. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ft/lighthouse/lighthouse.h"

void ftc__lighthouse_clock_poke(ftc_lighthouse *lh)
{
    ftc__event_signal(&lh->wake);
}

/* MHD stops watching a suspended socket, so the clock watches for its
 * hang-up, and only that: EPOLLIN would report (never consume) pipelined
 * bytes, which belong to MHD. */
void ftc__lighthouse_clock_watch_fd(ftc_lighthouse *lh, ftc__lighthouse_req *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci == NULL) {
        return;
    }
    struct epoll_event ev = {.events = EPOLLRDHUP, .data.ptr = r};
    if (epoll_ctl(lh->epfd, EPOLL_CTL_ADD, ci->connect_fd, &ev) != 0) {
        FTC_LOG_WARN("lighthouse.epoll",
                     "cannot watch %s's connection: %s; its drop will be "
                     "seen at its heartbeat timeout",
                     r->replica_id, strerror(errno));
        return;
    }
    r->fd = ci->connect_fd;
}

/* Before a connection is resumed: once resumed, MHD may close the fd and
 * the number be reused by another connection. */
void ftc__lighthouse_clock_unwatch_fd(ftc_lighthouse *lh,
                                      ftc__lighthouse_req *r)
{
    if (r->fd >= 0 && lh->epfd >= 0) {
        epoll_ctl(lh->epfd, EPOLL_CTL_DEL, r->fd, NULL);
    }
    r->fd = -1;
}

void ftc__lighthouse_clock_retire(ftc_lighthouse *lh, ftc__lighthouse_req *r)
{
    pthread_mutex_lock(&lh->mu);
    r->done_next = lh->done;
    lh->done = r;
    pthread_mutex_unlock(&lh->mu);
    ftc__lighthouse_clock_poke(lh);
}

void ftc__lighthouse_clock_reap(ftc_lighthouse *lh)
{
    pthread_mutex_lock(&lh->mu);
    ftc__lighthouse_req *r = lh->done;
    lh->done = NULL;
    pthread_mutex_unlock(&lh->mu);
    while (r != NULL) {
        ftc__lighthouse_req *next = r->done_next;
        ftc__lighthouse_req_free(r);
        r = next;
    }
}

static bool deletable(const ftc_lighthouse *lh, const ftc__lighthouse_job *job)
{
    return !job->pinned && job->refs == 0 && lh->job_idle_ms > 0;
}

/* The earliest time any job has something to do. */
static int64_t next_wake(ftc_lighthouse *lh)
{
    int64_t wake = INT64_MAX;
    pthread_mutex_lock(&lh->mu);
    for (ftc__lighthouse_job *job = lh->jobs; job != NULL; job = job->next) {
        pthread_mutex_lock(&job->mu);
        int64_t t = ftc__lighthouse_job_wake_ms(job);
        if (deletable(lh, job)) {
            int64_t idle = job->active_ms + lh->job_idle_ms;
            t = idle < t ? idle : t;
        }
        pthread_mutex_unlock(&job->mu);
        wake = t < wake ? t : wake;
    }
    pthread_mutex_unlock(&lh->mu);
    return wake;
}

static void service_jobs(ftc_lighthouse *lh, int64_t now,
                         ftc__lighthouse_resume *rs)
{
    pthread_mutex_lock(&lh->mu);
    for (ftc__lighthouse_job *job = lh->jobs; job != NULL; job = job->next) {
        pthread_mutex_lock(&job->mu);
        if (ftc__lighthouse_job_wake_ms(job) <= now) {
            ftc__lighthouse_job_service(job, now, rs);
        }
        pthread_mutex_unlock(&job->mu);
    }
    pthread_mutex_unlock(&lh->mu);
}

/* Deletes jobs nobody used for job_idle_ms; one that comes back gets a new
 * epoch, as after a restart. */
static void sweep(ftc_lighthouse *lh, int64_t now)
{
    pthread_mutex_lock(&lh->mu);
    ftc__lighthouse_job **p = &lh->jobs;
    while (*p != NULL) {
        ftc__lighthouse_job *job = *p;
        pthread_mutex_lock(&job->mu);
        bool idle =
            deletable(lh, job) && now - job->active_ms >= lh->job_idle_ms;
        pthread_mutex_unlock(&job->mu);
        if (idle) {
            *p = job->next;
            lh->n_jobs--;
            FTC_LOG_INFO("lighthouse.job", "job %s deleted after %lld ms idle",
                         job->name, (long long)lh->job_idle_ms);
            ftc__lighthouse_job_forget(lh, job);
        } else {
            p = &job->next;
        }
    }
    pthread_mutex_unlock(&lh->mu);
}

static void dropped(ftc__lighthouse_req *r, int64_t now,
                    ftc__lighthouse_resume *rs)
{
    /* r is alive: only this thread frees long-polls
     * (ftc__lighthouse_clock_reap, before the next epoll_wait), and r->job with
     * it. */
    ftc__lighthouse_job *job = r->job;
    pthread_mutex_lock(&job->mu);
    ftc__lighthouse_job_dropped(job, r, now, rs);
    pthread_mutex_unlock(&job->mu);
}

static void *run(void *arg)
{
    ftc_lighthouse *lh = arg;
    struct epoll_event evs[64];
    while (!atomic_load(&lh->stopping)) {
        ftc__lighthouse_clock_reap(lh);
        int64_t wake = next_wake(lh);
        int64_t left = wake == INT64_MAX ? -1 : wake - ftc__now_ms();
        int timeout = left < 0         ? (wake == INT64_MAX ? -1 : 0)
                      : left > INT_MAX ? INT_MAX
                                       : (int)left;
        int n = epoll_wait(lh->epfd, evs, 64, timeout);
        int64_t now = ftc__now_ms();
        ftc__lighthouse_resume rs = {NULL};
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                ftc__event_clear(&lh->wake);
            } else {
                dropped(evs[i].data.ptr, now, &rs);
            }
        }
        service_jobs(lh, now, &rs);
        ftc__lighthouse_resume_all(&rs);
        sweep(lh, now);
    }
    return NULL;
}

int ftc__lighthouse_clock_start(ftc_lighthouse *lh)
{
    lh->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (lh->epfd < 0) {
        return ftc__seterr_errno(errno, "lighthouse: epoll_create1");
    }
    int rc = ftc__event_open(&lh->wake);
    if (rc != 0) {
        return rc;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(lh->epfd, EPOLL_CTL_ADD, lh->wake.fd, &ev) != 0) {
        return ftc__seterr_errno(errno, "lighthouse: epoll_ctl");
    }
    rc = ftc__thread_start(&lh->clock, "ftc-lh-clock", run, lh);
    lh->clock_running = rc == 0;
    return rc;
}

void ftc__lighthouse_clock_stop(ftc_lighthouse *lh)
{
    if (lh->clock_running) {
        ftc__lighthouse_clock_poke(lh);
        pthread_join(lh->clock, NULL);
        lh->clock_running = false;
    }
}

void ftc__lighthouse_clock_close(ftc_lighthouse *lh)
{
    if (lh->epfd >= 0) {
        close(lh->epfd);
        lh->epfd = -1;
    }
    ftc__event_close(&lh->wake);
}
