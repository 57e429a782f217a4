/* The jobs' committed marks kept in etcd by its leader (lighthouse_ha.c
 * writes and reads them; docs/decisions.md, "Lighthouse: the committed
 * step survives a failover"). Without them a newly elected lighthouse
 * knows no job's committed step: laggards left out by the old leader
 * could then form a quorum below it and commit those steps again, and a
 * finished job would train again. */
#include <stdio.h>
#include <string.h>

#include "ft/lighthouse/lighthouse.h"

/* Under lh->mu. */
static ftc__lighthouse_job *find_job(ftc_lighthouse *lh, const char *name)
{
    ftc__lighthouse_job *job = lh->jobs;
    while (job != NULL && strcmp(job->name, name) != 0) {
        job = job->next;
    }
    return job;
}

int ftc__lighthouse_inherit_marks(ftc_lighthouse *lh,
                                  const ftc__lighthouse_mark_rec *recs,
                                  size_t n)
{
    pthread_mutex_lock(&lh->mu);
    lh->keeps_marks = true;
    pthread_mutex_unlock(&lh->mu);
    int64_t now = ftc__now_ms();
    for (size_t i = 0; i < n; i++) {
        ftc__lighthouse_job *job;
        int rc = ftc__lighthouse_job_get(lh, recs[i].job, true, &job);
        if (rc != 0) {
            return ftc__adderr(rc, "job %s's stored mark", recs[i].job);
        }
        ftc__quorum_inherit_mark(&job->s, recs[i].step, recs[i].finished, now);
        job->stored_step = recs[i].step;
        job->stored_finished = recs[i].finished;
        /* Joins already waiting are decided again under the mark. */
        job->next_ms = now;
        FTC_LOG_INFO("lighthouse.inherit",
                     "job %s goes on from step %lld%s, as the last leader "
                     "stored it",
                     job->name, (long long)recs[i].step,
                     recs[i].finished ? " (finished)" : "");
        ftc__lighthouse_job_unlock(job);
    }
    ftc__lighthouse_clock_poke(lh);
    return 0;
}

size_t ftc__lighthouse_marks_to_store(ftc_lighthouse *lh,
                                      ftc__lighthouse_mark_rec *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&lh->mu);
    for (size_t i = 0; i < lh->n_forgotten && n < cap; i++) {
        /* A job created again since is written below instead (etcd takes
         * one write per key in a transaction). */
        if (find_job(lh, lh->forgotten[i]) == NULL) {
            out[n] = (ftc__lighthouse_mark_rec){.step = -1};
            memcpy(out[n++].job, lh->forgotten[i], FTC_LIGHTHOUSE_JOB_MAX);
        }
    }
    for (ftc__lighthouse_job *job = lh->jobs; job != NULL && n < cap;
         job = job->next) {
        pthread_mutex_lock(&job->mu);
        const ftc__quorum_mark *m = &job->s.mark;
        if (m->step != job->stored_step ||
            m->finished != job->stored_finished) {
            out[n] = (ftc__lighthouse_mark_rec){.step = m->step,
                                                .finished = m->finished};
            memcpy(out[n++].job, job->name, FTC_LIGHTHOUSE_JOB_MAX);
        }
        pthread_mutex_unlock(&job->mu);
    }
    pthread_mutex_unlock(&lh->mu);
    return n;
}

/* Under lh->mu: name's record is to be deleted. */
static void forget_record(ftc_lighthouse *lh, const char *name)
{
    if (lh->n_forgotten == lh->cap_forgotten) {
        size_t cap = lh->cap_forgotten > 0 ? lh->cap_forgotten * 2 : 8;
        void *p = ftc__realloc(lh->forgotten, cap * sizeof(*lh->forgotten));
        if (p != NULL) {
            lh->forgotten = p;
            lh->cap_forgotten = cap;
        }
    }
    if (lh->n_forgotten < lh->cap_forgotten) {
        snprintf(lh->forgotten[lh->n_forgotten++], FTC_LIGHTHOUSE_JOB_MAX, "%s",
                 name);
    } else {
        /* Its record stays: the next leader brings the job back, and
         * forgets it again after job_idle_ms. */
        FTC_LOG_WARN("lighthouse.marks",
                     "job %s's stored mark is not deleted: out of memory",
                     name);
    }
}

/* Under lh->mu: drops name from the forgotten list. */
static void unforget(ftc_lighthouse *lh, const char *name)
{
    for (size_t i = 0; i < lh->n_forgotten; i++) {
        if (strcmp(lh->forgotten[i], name) == 0) {
            memcpy(lh->forgotten[i], lh->forgotten[--lh->n_forgotten],
                   FTC_LIGHTHOUSE_JOB_MAX);
            return;
        }
    }
}

void ftc__lighthouse_marks_stored(ftc_lighthouse *lh,
                                  const ftc__lighthouse_mark_rec *recs,
                                  size_t n)
{
    pthread_mutex_lock(&lh->mu);
    for (size_t i = 0; i < n; i++) {
        /* Deleted, or written for a job created again since it was
         * forgotten: no delete is owed any more. */
        unforget(lh, recs[i].job);
        ftc__lighthouse_job *job = find_job(lh, recs[i].job);
        if (recs[i].step >= 0 && job == NULL) {
            /* Forgotten while its mark was written: delete it next. */
            forget_record(lh, recs[i].job);
        }
        if (recs[i].step < 0 || job == NULL) {
            continue;
        }
        pthread_mutex_lock(&job->mu);
        job->stored_step = recs[i].step;
        job->stored_finished = recs[i].finished;
        pthread_mutex_unlock(&job->mu);
    }
    pthread_mutex_unlock(&lh->mu);
}

void ftc__lighthouse_job_forget(ftc_lighthouse *lh, ftc__lighthouse_job *job)
{
    if (lh->keeps_marks && job->stored_step >= 0) {
        forget_record(lh, job->name);
    }
    ftc__lighthouse_job_destroy(job);
}
