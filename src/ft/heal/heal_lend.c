/* Lending: a source serves its registered buffers themselves, without a
 * copy, while its owner does not write them (inside the quorum round); the
 * round ends once every healer released them, or, after a bound, with a
 * copy for the healers still at work and the lent answers cut. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ft/heal/heal_server_int.h"

void ftc__heal_lend_clear(ftc__heal_server *s)
{
    ftc__free(s->healers);
    ftc__free(s->released);
    s->healers = NULL;
    s->released = NULL;
    s->n_healers = s->n_released = 0;
    s->lending = false;
}

/* Marks healer i released (s->mu held). */
static void mark_released(ftc__heal_server *s, size_t i)
{
    s->released[i] = true;
    s->n_released++;
    atomic_fetch_add(&s->releases, 1);
    pthread_cond_broadcast(&s->cv);
}

/* Counts the early releases of step, now lent, and forgets every early
 * release of it or older (s->mu held). */
static void take_early_releases(ftc__heal_server *s, int64_t step)
{
    size_t kept = 0;
    for (size_t e = 0; e < s->n_early; e++) {
        const struct ftc__heal_early *x = &s->early[e];
        for (size_t i = 0; x->step == step && i < s->n_healers; i++) {
            if (!s->released[i] && strcmp(s->healers[i], x->id) == 0) {
                mark_released(s, i);
            }
        }
        if (x->step > step) {
            s->early[kept++] = *x;
        }
    }
    s->n_early = kept;
    s->last_step = step > s->last_step ? step : s->last_step;
}

/* Remembers a release of a step not lent yet (s->mu held); false when
 * out of memory. */
static bool remember_early(ftc__heal_server *s, int64_t step, const char *id)
{
    for (size_t e = 0; e < s->n_early; e++) {
        if (s->early[e].step == step && strcmp(s->early[e].id, id) == 0) {
            return true;
        }
    }
    if (s->early == NULL) {
        s->early = ftc__calloc(FTC__HEAL_EARLY_MAX, sizeof(*s->early));
        if (s->early == NULL) {
            return false;
        }
    }
    if (s->n_early == FTC__HEAL_EARLY_MAX) {
        memmove(s->early, s->early + 1,
                (FTC__HEAL_EARLY_MAX - 1) * sizeof(*s->early));
        s->n_early--;
    }
    struct ftc__heal_early *x = &s->early[s->n_early++];
    x->step = step;
    snprintf(x->id, sizeof(x->id), "%s", id);
    return true;
}

int ftc__heal_server_lend(ftc__heal_server *s, ftc__heal_snapshot *lent,
                          const char *const *healers, size_t n)
{
    char(*ids)[FTC__HEAL_ID_MAX] = ftc__calloc(n > 0 ? n : 1, sizeof(*ids));
    bool *released = ftc__calloc(n > 0 ? n : 1, sizeof(*released));
    if (ids == NULL || released == NULL) {
        ftc__free(ids);
        ftc__free(released);
        return ftc__seterr(FTC_ENOMEM, "lending to %zu healers", n);
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[i]), "%s", healers[i]);
    }
    ftc__heal_snapshot_ref(lent);
    pthread_mutex_lock(&s->mu);
    ftc__heal_lend_clear(s);
    ftc__heal_snapshot *old = s->current;
    s->current = lent;
    s->refused_step = -1;
    s->lending = true;
    s->healers = ids;
    s->released = released;
    s->n_healers = n;
    take_early_releases(s, lent->meta.step);
    pthread_mutex_unlock(&s->mu);
    ftc__heal_snapshot_unref(old);
    return 0;
}

bool ftc__heal_lend_release(ftc__heal_server *s, int64_t step,
                            const char *replica_id)
{
    pthread_mutex_lock(&s->mu);
    bool ok = s->lending && (step < 0 || s->current->meta.step == step);
    for (size_t i = 0; ok && i < s->n_healers; i++) {
        if (!s->released[i] && strcmp(s->healers[i], replica_id) == 0) {
            mark_released(s, i);
        }
    }
    if (!ok && step > s->last_step) {
        ok = remember_early(s, step, replica_id);
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

void ftc__heal_server_release(ftc__heal_server *s, const char *replica_id)
{
    ftc__heal_lend_release(s, -1, replica_id);
}

/* Waits on s->cv (s->mu held) until dl or a signal; false once dl passed. */
static bool wait_until(ftc__heal_server *s, ftc__deadline dl)
{
    if (ftc__deadline_expired(dl)) {
        return false;
    }
    struct timespec ts = {dl.ns / 1000000000, dl.ns % 1000000000};
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    return true;
}

bool ftc__heal_server_lend_wait(ftc__heal_server *s, ftc__deadline dl)
{
    pthread_mutex_lock(&s->mu);
    while (s->lending && !s->closing && s->n_released < s->n_healers &&
           wait_until(s, dl)) {
    }
    bool all = !s->closing && s->n_released == s->n_healers;
    pthread_mutex_unlock(&s->mu);
    return all;
}

void ftc__heal_server_reclaim(ftc__heal_server *s, ftc__heal_snapshot *next,
                              ftc__deadline dl)
{
    ftc__heal_snapshot_ref(next);
    pthread_mutex_lock(&s->mu);
    if (!s->lending) {
        pthread_mutex_unlock(&s->mu);
        ftc__heal_snapshot_unref(next);
        return;
    }
    ftc__heal_snapshot *lent = s->current;
    s->current = next;
    ftc__heal_lend_clear(s);
    /* Every answer from the lent buffers holds a reference. */
    while (!s->closing && atomic_load(&lent->refs) > 1 && wait_until(s, dl)) {
    }
    bool stuck = !s->closing && atomic_load(&lent->refs) > 1;
    pthread_mutex_unlock(&s->mu);
    if (stuck) {
        /* A reader that stopped reading: stopping the daemon ends its
         * answer (and every other one; readers of next ask again). */
        FTC_LOG_WARN("heal.cut",
                     "%s: %d answers from the lent state of step %lld were "
                     "still sending; closing every connection",
                     s->address, atomic_load(&lent->refs) - 1,
                     (long long)lent->meta.step);
        ftc__heal_server_restart(s);
    }
    ftc__heal_snapshot_unref(lent);
}

void ftc__heal_server_close(ftc__heal_server *s)
{
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}
