/* A job's recent history for the operator's view (lighthouse_history.h). */
#include "ft/lighthouse/lighthouse_history.h"

#include <stdio.h>
#include <string.h>

const double ftc__lh_recovery_bounds[FTC__LH_RECOVERY_BUCKETS] = {
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

static void observe(ftc__lh_recovery *r, int64_t ms)
{
    double s = (double)ms / 1000.0;
    for (size_t i = 0; i < FTC__LH_RECOVERY_BUCKETS; i++) {
        r->buckets[i] += s <= ftc__lh_recovery_bounds[i];
    }
    r->count++;
    r->sum_s += s;
}

/* Length of the replica group's name in id: up to the ':' the manager's
 * leader appends per incarnation. */
static size_t base_len(const char *id)
{
    return strcspn(id, ":");
}

static int same_group(const char *a, const char *b)
{
    size_t n = base_len(a);
    return n == base_len(b) && memcmp(a, b, n) == 0;
}

static int64_t max_step(const ftc__quorum *q)
{
    int64_t max = 0;
    for (size_t i = 0; i < q->n; i++) {
        max = q->members[i].step > max ? q->members[i].step : max;
    }
    return max;
}

/* Whether q has f's replica group at step. */
static int group_at(const ftc__quorum *q, const ftc__lh_failure *f,
                    int64_t step)
{
    for (size_t i = 0; i < q->n; i++) {
        if (q->members[i].step == step &&
            same_group(q->members[i].replica_id, f->replica_id)) {
            return 1;
        }
    }
    return 0;
}

void ftc__lh_history_formed(ftc__lh_history *h, const ftc__quorum *q,
                            int64_t wall_ms)
{
    ftc__lh_sample now = {wall_ms, max_step(q), (uint32_t)q->n};
    const ftc__lh_sample *prev =
        h->n_samples > 0 ? &h->samples[(h->n_samples - 1) % FTC__LH_SAMPLES]
                         : NULL;
    if (prev == NULL || wall_ms - prev->wall_ms >= FTC__LH_SAMPLE_MS ||
        prev->members != now.members) {
        h->samples[h->n_samples++ % FTC__LH_SAMPLES] = now;
    }
    h->last = now;
    h->has_last = 1;
    uint64_t first =
        h->n_failures > FTC__LH_FAILURES ? h->n_failures - FTC__LH_FAILURES : 0;
    for (uint64_t k = first; k < h->n_failures; k++) {
        ftc__lh_failure *f = &h->failures[k % FTC__LH_FAILURES];
        if (wall_ms < f->wall_ms) {
            continue;
        }
        if (f->step < 0) {
            f->step = now.step;
        } else if (f->survivors_ms < 0 && now.step > f->step) {
            f->survivors_ms = wall_ms - f->wall_ms;
            observe(&h->recovery[FTC__LH_SURVIVORS], f->survivors_ms);
        }
        if (f->back_ms < 0 && group_at(q, f, now.step)) {
            f->back_ms = wall_ms - f->wall_ms;
            observe(&h->recovery[FTC__LH_BACK], f->back_ms);
        }
    }
}

/* Whether replica_id's latest kept failure is an operator's kill it has
 * not come back from: its exit is that kill taking effect. */
static int killed_not_back(const ftc__lh_history *h, const char *replica_id)
{
    uint64_t first =
        h->n_failures > FTC__LH_FAILURES ? h->n_failures - FTC__LH_FAILURES : 0;
    for (uint64_t k = h->n_failures; k > first; k--) {
        const ftc__lh_failure *f = &h->failures[(k - 1) % FTC__LH_FAILURES];
        if (strcmp(f->replica_id, replica_id) == 0) {
            return strcmp(f->cause, "kill") == 0 && f->back_ms < 0;
        }
    }
    return 0;
}

int ftc__lh_history_lost(ftc__lh_history *h, const char *replica_id,
                         const char *cause, int64_t wall_ms)
{
    if (killed_not_back(h, replica_id)) {
        return 0;
    }
    ftc__lh_failure *f = &h->failures[h->n_failures++ % FTC__LH_FAILURES];
    memset(f, 0, sizeof(*f));
    f->wall_ms = wall_ms;
    snprintf(f->replica_id, sizeof(f->replica_id), "%s", replica_id);
    f->cause = cause;
    f->step = -1;
    f->survivors_ms = -1;
    f->back_ms = -1;
    return 1;
}

double ftc__lh_history_rate(const ftc__lh_history *h, int64_t now_wall_ms)
{
    if (!h->has_last) {
        return 0;
    }
    /* The oldest sample inside the window, against the latest quorum. */
    const ftc__lh_sample *from = NULL;
    uint64_t first =
        h->n_samples > FTC__LH_SAMPLES ? h->n_samples - FTC__LH_SAMPLES : 0;
    for (uint64_t k = h->n_samples; k > first; k--) {
        const ftc__lh_sample *s = &h->samples[(k - 1) % FTC__LH_SAMPLES];
        if (now_wall_ms - s->wall_ms > FTC__LH_RATE_WINDOW_MS) {
            break;
        }
        from = s;
    }
    if (from == NULL || h->last.wall_ms <= from->wall_ms ||
        h->last.step <= from->step) {
        return 0;
    }
    return (double)(h->last.step - from->step) * 1000.0 /
           (double)(h->last.wall_ms - from->wall_ms);
}

const ftc__lh_failure *ftc__lh_history_last_failure(const ftc__lh_history *h)
{
    return h->n_failures > 0
               ? &h->failures[(h->n_failures - 1) % FTC__LH_FAILURES]
               : NULL;
}

/* "25 ms", "1.6 s", "42 s", "3 min". */
static void duration(int64_t ms, char *buf, size_t cap)
{
    if (ms < 1000) {
        snprintf(buf, cap, "%lld ms", (long long)ms);
    } else if (ms < 10000) {
        snprintf(buf, cap, "%.1f s", (double)ms / 1000.0);
    } else if (ms < 120000) {
        snprintf(buf, cap, "%lld s", (long long)(ms / 1000));
    } else {
        snprintf(buf, cap, "%lld min", (long long)(ms / 60000));
    }
}

void ftc__lh_history_headline(const ftc__lh_history *h, int64_t now_wall_ms,
                              char *buf, size_t cap)
{
    if (!h->has_last) {
        snprintf(buf, cap, "waiting for the first quorum");
        return;
    }
    char rate[64];
    double r = ftc__lh_history_rate(h, now_wall_ms);
    if (r > 0) {
        snprintf(rate, sizeof(rate), "%.*f steps/s", r < 10 ? 2 : 1, r);
    } else {
        char ago[32];
        duration(now_wall_ms - h->last.wall_ms, ago, sizeof(ago));
        snprintf(rate, sizeof(rate), "no step for %s", ago);
    }
    int n = snprintf(buf, cap, "training: %u replica group%s, step %lld, %s",
                     h->last.members, h->last.members == 1 ? "" : "s",
                     (long long)h->last.step, rate);
    const ftc__lh_failure *f = ftc__lh_history_last_failure(h);
    if (n < 0 || (size_t)n >= cap) {
        return;
    }
    if (f == NULL) {
        snprintf(buf + n, cap - (size_t)n, "; no failure");
        return;
    }
    char ago[32], others[48] = "the others have not gone on yet",
                  back[32] = "not back yet";
    duration(now_wall_ms - f->wall_ms, ago, sizeof(ago));
    if (f->survivors_ms >= 0) {
        char d[32];
        duration(f->survivors_ms, d, sizeof(d));
        snprintf(others, sizeof(others), "the others went on after %s", d);
    }
    if (f->back_ms >= 0) {
        char d[32];
        duration(f->back_ms, d, sizeof(d));
        snprintf(back, sizeof(back), "back after %s", d);
    }
    snprintf(buf + n, cap - (size_t)n,
             "; last failure: %.*s lost (%s) %s ago, %s, %s",
             (int)base_len(f->replica_id), f->replica_id, f->cause, ago, others,
             back);
}
