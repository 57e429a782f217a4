/* A job's recent history, for the operator's view (the dashboard's
 * headline and plots, `ftc status`): progress samples, at most one per
 * FTC__LH_SAMPLE_MS and the last FTC__LH_SAMPLES kept, and the last
 * FTC__LH_FAILURES failures with how long each took to recover, learned
 * from the quorums the job forms and the members it loses. Pure
 * bookkeeping: wall times are passed in; the job's lock guards it. */
#ifndef FTC_FT_LIGHTHOUSE_HISTORY_H
#define FTC_FT_LIGHTHOUSE_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "ft/quorum/quorum.h"

#define FTC__LH_SAMPLES 600    /* 10 minutes at one per second */
#define FTC__LH_SAMPLE_MS 1000 /* sampling period (membership changes too) */
#define FTC__LH_FAILURES 32
/* The step rate is measured over this much of the latest history. */
#define FTC__LH_RATE_WINDOW_MS 10000

typedef struct ftc__lh_sample {
    int64_t wall_ms;
    int64_t step;     /* the quorum's max step */
    uint32_t members; /* replica groups in it */
} ftc__lh_sample;

typedef struct ftc__lh_failure {
    int64_t wall_ms;
    char replica_id[FTC__QUORUM_STR_MAX];
    const char *cause; /* "disconnect", "heartbeat" or "kill" (static) */
    /* The step of the first quorum formed after the loss (-1 before):
     * the survivors' retry, or a step they committed just before it. */
    int64_t step;
    /* To the first quorum past that step: the survivors committed a step
     * without the lost member; -1. */
    int64_t survivors_ms;
    /* To the first quorum in which its replica group (the id before ':')
     * is at the quorum's step again: healed and training; -1. */
    int64_t back_ms;
} ftc__lh_failure;

/* Every recovery measured so far (not only the failures kept), per kind,
 * as a Prometheus histogram: bounds in seconds. */
#define FTC__LH_RECOVERY_BUCKETS 13
extern const double ftc__lh_recovery_bounds[FTC__LH_RECOVERY_BUCKETS];
enum { FTC__LH_SURVIVORS, FTC__LH_BACK, FTC__LH_RECOVERY_KINDS };
typedef struct ftc__lh_recovery {
    uint64_t buckets[FTC__LH_RECOVERY_BUCKETS]; /* cumulative, as le */
    uint64_t count;
    double sum_s;
} ftc__lh_recovery;

typedef struct ftc__lh_history {
    ftc__lh_sample samples[FTC__LH_SAMPLES]; /* k at k % FTC__LH_SAMPLES */
    uint64_t n_samples;
    ftc__lh_failure failures[FTC__LH_FAILURES];
    uint64_t n_failures;
    ftc__lh_sample last; /* the latest quorum, sampled or not */
    int has_last;
    ftc__lh_recovery recovery[FTC__LH_RECOVERY_KINDS];
} ftc__lh_history;

/* A quorum q formed at wall_ms: the latest progress, maybe a sample, and
 * the recoveries it completes. */
void ftc__lh_history_formed(ftc__lh_history *h, const ftc__quorum *q,
                            int64_t wall_ms);
/* replica_id was lost for cause ("disconnect", "heartbeat", or "kill":
 * an operator's kill request) at wall_ms. A loss of a replica killed and
 * not back yet is that kill, not another failure: returns 0 for it, 1 for
 * a failure recorded. */
int ftc__lh_history_lost(ftc__lh_history *h, const char *replica_id,
                         const char *cause, int64_t wall_ms);
/* Committed steps per second over the last FTC__LH_RATE_WINDOW_MS up to
 * now (0 when no step was taken in it). */
double ftc__lh_history_rate(const ftc__lh_history *h, int64_t now_wall_ms);
/* The latest failure, or NULL. */
const ftc__lh_failure *ftc__lh_history_last_failure(const ftc__lh_history *h);

/* The headline in plain words into buf, e.g. "training: 3 replica groups,
 * step 1200, 98.1 steps/s; last failure: replica_2 lost (disconnect) 12 s
 * ago, the others went on after 25 ms, back after 160 ms". */
void ftc__lh_history_headline(const ftc__lh_history *h, int64_t now_wall_ms,
                              char *buf, size_t cap);

#endif
